"""Tests of the shared chain runner: seeding, validation, shapes, thinning, starting states."""

import arviz as az
import numpy as np
import pytest
from scipy import stats

from latentzoo.data import load
from latentzoo.inference.aspect import gibbs
from latentzoo.inference.mcmc import add_invariants, chain_seeds, run_chains
from latentzoo.models import AspectModel


class Counter:
    """A 'sampler' whose state counts the transitions made; draws record it plus a random number."""

    def __init__(self):
        self.inits = 0

    def init(self, rng):
        self.inits += 1
        return {"steps": 0}

    @staticmethod
    def step(state):
        return {"steps": state["steps"] + 1}

    @staticmethod
    def draw(state, rng):
        return {"steps": state["steps"], "u": rng.random(), "vec": np.full(3, state["steps"])}


def run(counter=None, **options):
    counter = counter or Counter()
    options = {"chains": 3, "draws": 7, "tune": 4, "thin": 2, "progressbar": False, **options}
    return run_chains(counter.init, counter.step, counter.draw, **options)


# ----------------------------------------------------------------------------- seeds
def test_chain_seeds_are_reproducible():
    a = [g.random(5) for g in chain_seeds(42, 3)]
    b = [g.random(5) for g in chain_seeds(42, 3)]
    c = [g.random(5) for g in chain_seeds(43, 3)]
    assert all(np.array_equal(x, y) for x, y in zip(a, b, strict=True))
    assert not any(np.array_equal(x, y) for x, y in zip(a, c, strict=True))
    # a Generator seeded alike gives the same chain seeds
    d = [g.random(5) for g in chain_seeds(np.random.default_rng(7), 3)]
    e = [g.random(5) for g in chain_seeds(np.random.default_rng(7), 3)]
    assert all(np.array_equal(x, y) for x, y in zip(d, e, strict=True))


def test_chain_seeds_from_one_generator_differ_between_calls():
    rng = np.random.default_rng(7)
    first = chain_seeds(rng, 2)[0].random(5)
    second = chain_seeds(rng, 2)[0].random(5)
    assert not np.array_equal(first, second)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_chain_streams_are_uncorrelated(seed):
    """Pairwise correlations of 4 streams of 20000 normals are N(0, 1/n): all within 5 sigma,
    and their sum of squares is chi-square(6)-distributed."""
    n = 20_000
    streams = np.array([g.standard_normal(n) for g in chain_seeds(seed, 4)])
    r = np.corrcoef(streams)[np.triu_indices(4, 1)]
    assert np.all(np.abs(r) < 5 / np.sqrt(n)), r
    assert n * np.sum(r**2) < stats.chi2.ppf(1 - 1e-4, 6)
    means = streams.mean(axis=1)
    assert np.all(np.abs(means) < 5 / np.sqrt(n))


# ----------------------------------------------------------------------------- validation
@pytest.mark.parametrize(
    "options, match",
    [
        ({"chains": 0}, "chains"),
        ({"chains": 1.5}, "chains"),
        ({"draws": 0}, "draws"),
        ({"draws": -3}, "draws"),
        ({"tune": -1}, "tune"),
        ({"thin": 0}, "thin"),
        ({"thin": True}, "thin"),
    ],
)
def test_run_chains_rejects_bad_counts(options, match):
    with pytest.raises(ValueError, match=match):
        run(**options)


# ----------------------------------------------------------------------------- mechanics
@pytest.mark.parametrize("tune, thin", [(0, 1), (4, 2), (3, 5)])
def test_shapes_tuning_and_thinning(tune, thin):
    counter = Counter()
    posterior, sample_stats, seconds = run(counter, tune=tune, thin=thin)
    assert counter.inits == 3
    assert posterior["steps"].shape == (3, 7)
    assert posterior["vec"].shape == (3, 7, 3)
    # draw d of every chain comes after tune + (d + 1) * thin transitions
    want = tune + (np.arange(7) + 1) * thin
    assert np.array_equal(posterior["steps"], np.broadcast_to(want, (3, 7)))
    assert sample_stats == {}
    assert seconds >= 0


def test_stats_are_recorded_per_kept_draw():
    counter = Counter()
    _, sample_stats, _ = run(counter, stats=lambda state: {"lp": -float(state["steps"])})
    assert sample_stats["lp"].shape == (3, 7)
    assert np.array_equal(sample_stats["lp"][0], -(4 + 2 * (np.arange(7) + 1)))


def test_each_chain_starts_from_init_with_its_own_generator():
    """Starting states come from ``init(rng)``; the same generator then feeds that chain's draws."""
    seen = []

    def init(rng):
        seen.append(rng)
        return {"steps": 100 * len(seen)}

    def draw(state, rng):
        return {"steps": state["steps"], "chain": seen.index(rng)}

    posterior, _, _ = run_chains(init, Counter.step, draw, chains=3, draws=2, tune=0,
                                 random_state=0, progressbar=False)  # fmt: skip
    assert len(seen) == 3 and len({id(g) for g in seen}) == 3
    assert np.array_equal(posterior["steps"][:, 0], [101, 201, 301])
    assert np.array_equal(posterior["chain"], [[0, 0], [1, 1], [2, 2]])


def test_run_chains_reproducible_and_chain_rngs_independent():
    a, _, _ = run(random_state=5)
    b, _, _ = run(random_state=5)
    c, _, _ = run(random_state=6)
    assert np.array_equal(a["u"], b["u"])
    assert not np.array_equal(a["u"], c["u"])
    assert len(np.unique(a["u"])) == a["u"].size  # no two chains share a stream


# ----------------------------------------------------------------------------- invariants
def test_add_invariants_recomputes_what_the_sampler_reported():
    model, data = AspectModel(2), load("toy")
    idata = gibbs(model, data, chains=2, draws=6, tune=2, random_state=0, progressbar=False)
    stripped = az.from_dict(
        posterior={n: idata.posterior[n].values for n in ("theta", "phi")},
        dims={"theta": ["doc", "topic"], "phi": ["topic", "word"]},
    )
    add_invariants(stripped, model, data)
    np.testing.assert_allclose(stripped.posterior["loglik"], idata.posterior["loglik"], rtol=1e-12)
    np.testing.assert_allclose(stripped.posterior["p_dyad"], idata.posterior["p_dyad"], rtol=1e-12)
    assert stripped.posterior["p_dyad"].dims == ("chain", "draw", "dyad")
