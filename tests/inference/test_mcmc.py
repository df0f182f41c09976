"""Tests of the shared chain runner: seeding, validation, shapes, thinning, starting states."""

from typing import NamedTuple

import arviz as az
import numpy as np
import pytest
from scipy import stats

from latentzoo.data import load
from latentzoo.inference.aspect import gibbs
from latentzoo.inference.mcmc import add_invariants, chain_seeds, run_chains
from latentzoo.models import AspectModel


class CounterInfo(NamedTuple):
    lp: float


class Counter:
    """A 'sampler' whose state counts the transitions made; draws record it plus a random number.

    Its info reports ``lp = -steps``."""

    def __init__(self):
        self.inits = 0

    def init(self, rng):
        self.inits += 1
        return {"steps": 0}

    @staticmethod
    def step(state, rng):
        steps = state["steps"] + 1
        return {"steps": steps}, CounterInfo(-float(steps))

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
    assert list(sample_stats) == ["lp"]
    assert np.array_equal(sample_stats["lp"], -posterior["steps"])
    assert seconds >= 0


def test_info_is_recorded_per_kept_draw():
    counter = Counter()
    _, sample_stats, _ = run(counter)
    assert sample_stats["lp"].shape == (3, 7)
    assert np.array_equal(sample_stats["lp"][0], -(4 + 2 * (np.arange(7) + 1)))


def test_advance_runs_the_transitions_whose_info_is_discarded():
    """``advance`` makes the tuning and thinned-out transitions; ``step`` only the kept ones."""
    calls = {"step": 0, "advance": 0}

    def step(state, rng):
        calls["step"] += 1
        return state + 1, CounterInfo(-float(state + 1))

    def advance(state, rng):
        calls["advance"] += 1
        return state + 1

    posterior, stats, _ = run_chains(
        lambda rng: 0, step, lambda state, rng: {"s": state}, chains=2, draws=3, tune=4, thin=2,
        advance=advance, progressbar=False,
    )  # fmt: skip
    assert calls == {"step": 2 * 3, "advance": 2 * (4 + 3 * (2 - 1))}
    assert (
        posterior["s"].tolist() == [[6, 8, 10]] * 2 and stats["lp"].tolist() == [[-6, -8, -10]] * 2
    )


def test_gibbs_skips_the_log_joint_of_the_tuning_sweeps(monkeypatch):
    """A collapsed sampler computes its log joint for the kept draws only, with the same result."""
    from latentzoo.inference.aspect import AspectGibbs

    options = {
        "chains": 1,
        "draws": 3,
        "tune": 5,
        "thin": 2,
        "random_state": 0,
        "progressbar": False,
    }
    reference = gibbs(AspectModel(2), load("toy"), **options)
    counted = []
    log_joint = AspectGibbs.log_joint
    monkeypatch.setattr(
        AspectGibbs, "log_joint", lambda self, s: counted.append(1) or log_joint(self, s)
    )
    again = gibbs(AspectModel(2), load("toy"), **options)
    assert len(counted) == 3
    assert again.posterior.equals(reference.posterior)
    assert again.sample_stats["lp"].equals(reference.sample_stats["lp"])


def test_info_none_records_nothing():
    posterior, sample_stats, _ = run_chains(
        lambda rng: 0, lambda state, rng: (state + 1, None), lambda state, rng: {"s": state},
        chains=2, draws=3, tune=1, progressbar=False,
    )  # fmt: skip
    assert sample_stats == {} and posterior["s"].tolist() == [[2, 3, 4], [2, 3, 4]]


def test_step_gets_the_chains_generator():
    seen = []

    def step(state, rng):
        seen.append(rng)
        return state, None

    run_chains(lambda rng: 0, step, lambda state, rng: {"g": id(rng)}, chains=2, draws=2, tune=1,
               random_state=0, progressbar=False)  # fmt: skip
    assert len({id(g) for g in seen}) == 2 and all(isinstance(g, np.random.Generator) for g in seen)


def test_ragged_draws_are_padded_with_their_shapes():
    """A variable whose shape changes between draws is padded; ``{name}_shape`` masks it."""

    def draw(state, rng):
        width = state % 3
        return {"Z": np.ones((2, width), dtype=np.int8), "x": np.full(width, 1.5), "k": width}

    posterior, _, _ = run_chains(
        lambda rng: 0, lambda state, rng: (state + 1, None), draw, chains=2, draws=4, tune=0,
        progressbar=False,
    )  # fmt: skip
    widths = np.array([[1, 2, 0, 1], [1, 2, 0, 1]])
    assert posterior["Z"].shape == (2, 4, 2, 2) and posterior["Z"].dtype == np.int8
    assert np.array_equal(posterior["Z_shape"][..., 1], widths)
    assert np.array_equal(posterior["Z_shape"][..., 0], np.full((2, 4), 2))
    padding = np.arange(2)[None, None, None, :] >= widths[..., None, None]
    assert np.array_equal(posterior["Z"] == -1, np.broadcast_to(padding, (2, 4, 2, 2)))
    assert np.array_equal(np.where(padding, 0, posterior["Z"]).sum(axis=(2, 3)), 2 * widths)
    assert np.array_equal(np.isnan(posterior["x"]).sum(axis=2), 2 - widths)
    assert "k_shape" not in posterior and posterior["k"].tolist() == widths.tolist()


def test_draws_of_different_numbers_of_axes_are_refused():
    with pytest.raises(ValueError, match="number of axes"):
        run_chains(
            lambda rng: 0, lambda state, rng: (state + 1, None),
            lambda state, rng: {"a": np.zeros((1,) * (state % 2 + 1))}, chains=1, draws=2, tune=0,
            progressbar=False,
        )  # fmt: skip


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


# ----------------------------------------------------------------------- convergence (issue 24)
def _sample(shift, chains=4, draws=400, seed=0):
    """Draws of ``x`` whose chain ``c`` is shifted by ``shift * c``: mixed at 0, stuck above."""
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(chains, draws)) + shift * np.arange(chains)[:, None]
    return az.from_dict(posterior={"x": x, "y": rng.normal(size=(chains, draws, 3))})


def test_convergence_verdict_is_arviz_rhat_and_ess_against_the_arviz_thresholds():
    from latentzoo.inference.mcmc import ESS_PER_CHAIN_MIN, RHAT_MAX, convergence

    assert (RHAT_MAX, ESS_PER_CHAIN_MIN) == (1.01, 100)
    for shift, status in ((0.0, "converged"), (2.0, "not converged")):
        idata = _sample(shift)
        verdict = convergence(idata)
        assert verdict.status == status
        rhat, bulk = az.rhat(idata), az.ess(idata, method="bulk")
        tail = az.ess(idata, method="tail")
        assert verdict.max_r_hat == pytest.approx(max(float(rhat[n].max()) for n in "xy"))
        assert verdict.min_ess_bulk == pytest.approx(min(float(bulk[n].min()) for n in "xy"))
        assert verdict.min_ess_tail == pytest.approx(min(float(tail[n].min()) for n in "xy"))
    # The ESS bar is per chain: 4 chains of 60 independent draws (ESS about 240) fail 400.
    short = convergence(_sample(0.0, draws=60))
    assert short.status == "not converged" and short.min_ess_bulk < 400 <= 4 * 100
    assert "< 400" in short.headline()


def test_one_chain_is_not_checked_unless_its_ess_fails():
    from latentzoo.inference.mcmc import convergence

    assert convergence(_sample(0.0, chains=1, draws=2000)).status == "not checked"
    assert convergence(_sample(0.0, chains=1, draws=50)).status == "not converged"


def test_gibbs_records_its_verdict_in_the_attributes_and_the_file(tmp_path):
    # Before: nothing in the sample or its file said whether it converged.
    from latentzoo.inference import mixture
    from latentzoo.inference.mcmc import convergence
    from latentzoo.models import DirichletProcessMixture

    data = load("digits").subset(np.arange(60))
    idata = mixture.gibbs(DirichletProcessMixture(alpha=2.0), data, chains=2, draws=12, tune=2,
                          random_state=0, progressbar=False)  # fmt: skip
    attrs = idata.posterior.attrs
    assert attrs["convergence"] == "not converged" and attrs["converged"] == 0
    assert attrs["min_ess_bulk"] < 200 and attrs["max_r_hat_var"]
    assert "R-hat <= 1.01" in attrs["convergence_rule"]
    # The DPM's suggestion names the split-merge moves it was run without.
    assert "split_merge=True" in attrs["convergence_advice"]
    path = tmp_path / "dpm.nc"
    idata.to_netcdf(path)
    back = az.from_netcdf(path)
    assert convergence(back) == convergence(idata)
    assert back.posterior.attrs["max_r_hat"] == pytest.approx(attrs["max_r_hat"])


def test_warnings_point_at_the_callers_line(monkeypatch):
    # Before: the keep_params warning named latentzoo/api.py, a line the user never wrote.
    import latentzoo
    from latentzoo.inference import mcmc

    monkeypatch.setattr(mcmc, "MAX_KEPT_VALUES", 10)
    with pytest.warns(UserWarning, match="keep_params='auto' drops") as caught:
        latentzoo.fit(AspectModel(2), load("toy"), method="gibbs", chains=2, draws=5, tune=0,
                      random_state=0, progressbar=False)  # fmt: skip
    assert {w.filename for w in caught} == {__file__}


def test_the_verdict_judges_the_label_invariant_quantities():
    # theta and phi carry the topic labels, which switch within a chain however well it mixes;
    # the verdict is on loglik and p_dyad, as the validation and the demo report judge.
    idata = gibbs(AspectModel(2, alpha=0.5, eta=0.5), load("toy"), chains=2, draws=30, tune=5,
                  random_state=0, progressbar=False, keep_params=True)  # fmt: skip
    attrs = idata.posterior.attrs
    assert {"theta", "phi"} <= set(idata.posterior.data_vars)
    assert attrs["convergence_vars"] == "loglik, p_dyad"
    assert attrs["max_r_hat_var"] in ("loglik", "p_dyad")
    assert attrs["min_ess_bulk_var"] in ("loglik", "p_dyad")
