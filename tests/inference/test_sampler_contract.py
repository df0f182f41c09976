"""The sampler contract (shared/DESIGN.md, Inference): ``step(state, rng) -> (state, info)`` through
the one chain runner, ``info`` into ``sample_stats``, latent states of varying shape, and the
enumerated finite spaces of the exact level.

The toy sampler below moves on binary matrices whose number of columns changes between draws (the
shape of an IBP's ``Z``); its exact distribution over left-ordered classes is enumerated, and the
frequencies of independent chains through :func:`run_chains` are tested against it.
"""

import math
from typing import NamedTuple

import numpy as np
import pytest
from scipy import stats
from scipy.special import logsumexp

from latentzoo.data import Features, load
from latentzoo.inference.aspect import AspectGibbs
from latentzoo.inference.cluster_abstraction import ClusterAbstractionGibbs
from latentzoo.inference.cluster_abstraction import gibbs as hacm_gibbs
from latentzoo.inference.enumeration import (
    binary_trees,
    frequency_test,
    ibp_log_prior,
    label_vectors,
    left_ordered,
    lof_matrices,
    set_partitions,
    state_index,
)
from latentzoo.inference.mcmc import GibbsInfo, run_chains, to_inference_data
from latentzoo.inference.mixture import MixtureGibbs
from latentzoo.inference.mixture import gibbs as mixture_gibbs
from latentzoo.inference.one_sided import OneSidedGibbs
from latentzoo.inference.two_sided import TwoSidedGibbs
from latentzoo.models import AspectModel
from latentzoo.models.cluster_abstraction import ClusterAbstractionModel
from latentzoo.models.mixture import BayesianMixture, DirichletProcessMixture
from latentzoo.models.one_sided import OneSidedClustering
from latentzoo.models.two_sided import TwoSidedClustering

SEEDS = [0, 1, 2]
ALPHA = 1e-3 / len(SEEDS)
"""Bonferroni: every seed's chi-square test at this level, so all pass together with 99.9%."""


# ------------------------------------------------------------------ the production samplers
def _samplers():
    toy = load("toy")
    binary = Features((np.random.default_rng(1).random((8, 4)) < 0.5).astype(float))
    return {
        "aspect": AspectGibbs(AspectModel(2), toy),
        "one_sided": OneSidedGibbs(OneSidedClustering(2), toy),
        "two_sided": TwoSidedGibbs(TwoSidedClustering(2, 2), toy),
        "dpm": MixtureGibbs(DirichletProcessMixture(1.0), binary),
        "dpm_split_merge": MixtureGibbs(DirichletProcessMixture(1.0), binary, split_merge=3),
        "finite_split_merge": MixtureGibbs(BayesianMixture(3), binary, split_merge=True),
        "hacm": ClusterAbstractionGibbs(ClusterAbstractionModel(1), toy),
    }


EXPECTED_FIELDS = {
    "aspect": ("lp",),
    "one_sided": ("lp",),
    "two_sided": ("lp",),
    "dpm": ("lp",),
    "dpm_split_merge": ("lp", "split_merge_accept"),
    "finite_split_merge": ("lp", "split_merge_accept"),
    "hacm": ("lp", "leaf_jump_accept", "leaf_jumps"),
}


@pytest.mark.parametrize("name", sorted(EXPECTED_FIELDS))
def test_every_gibbs_step_returns_its_state_and_typed_info(name):
    sampler = _samplers()[name]
    rng = np.random.default_rng(0)
    state = sampler.init(rng)
    for _ in range(3):
        state, info = sampler.step(state, rng)
        assert isinstance(info, tuple) and info._fields == EXPECTED_FIELDS[name]
        assert info.lp == sampler.log_joint(state)
        for field in info._fields:
            if field.endswith("_accept"):
                assert 0.0 <= getattr(info, field) <= 1.0


def test_split_merge_acceptance_reaches_sample_stats():
    X = np.repeat(np.eye(3), 4, axis=0)[:, [0, 1, 2, 0, 1, 2]]
    noise = np.random.default_rng(0).random(X.shape) < 0.1
    idata = mixture_gibbs(
        DirichletProcessMixture(1.0), Features(np.abs(X - noise)), chains=2, draws=40, tune=5,
        random_state=0, progressbar=False, split_merge=2,
    )  # fmt: skip
    accept = idata.sample_stats["split_merge_accept"].to_numpy()
    assert accept.shape == (2, 40)
    assert np.all((accept >= 0) & (accept <= 1)) and accept.mean() > 0
    assert np.all(np.isfinite(idata.sample_stats["lp"].to_numpy()))


def test_single_site_gibbs_records_the_log_joint_only():
    data = Features((np.random.default_rng(1).random((8, 4)) < 0.5).astype(float))
    idata = mixture_gibbs(DirichletProcessMixture(1.0), data, chains=1, draws=5, tune=1,
                          random_state=0, progressbar=False)  # fmt: skip
    assert sorted(idata.sample_stats.data_vars) == ["lp"]


def test_leaf_jump_acceptance_reaches_sample_stats():
    model = ClusterAbstractionModel(2)
    data, _ = model.simulate(0, n_docs=8, n_words=6, doc_length=4)
    idata = hacm_gibbs(model, data, chains=2, draws=30, tune=5, random_state=0, progressbar=False)
    accept = idata.sample_stats["leaf_jump_accept"].to_numpy()
    assert accept.shape == (2, 30)
    assert np.all((accept >= 0) & (accept <= 1)) and accept.mean() > 0
    assert np.all(idata.sample_stats["leaf_jumps"].to_numpy() > 0)


# ------------------------------------------------------------------ the enumerators
BELL = [1, 1, 2, 5, 15, 52, 203, 877]


@pytest.mark.parametrize("n, k", [(0, 3), (1, 4), (3, 2), (4, 3), (5, 2)])
def test_label_vectors_are_all_k_to_the_n(n, k):
    states = label_vectors(n, k)
    assert states.shape == (k**n, n)
    assert len({tuple(row) for row in states}) == k**n
    assert np.array_equal(states @ k ** np.arange(n - 1, -1, -1), np.arange(k**n))


@pytest.mark.parametrize("n", range(8))
def test_set_partitions_are_bell_numbers(n):
    states = set_partitions(n)
    assert len(states) == BELL[n]
    assert len({tuple(row) for row in states}) == BELL[n]


@pytest.mark.parametrize("n_rows, max_columns, zero_columns", [(1, 3, False), (2, 3, False),
                                                               (3, 2, False), (2, 3, True),
                                                               (3, 3, True)])  # fmt: skip
def test_lof_matrices_count_the_classes_and_their_matrices(n_rows, max_columns, zero_columns):
    space = lof_matrices(n_rows, max_columns, zero_columns)
    histories = 2**n_rows - (0 if zero_columns else 1)
    for k in range(max_columns + 1):
        width_k = space.width == k
        # multisets of k histories, and all histories**k ordered matrices among them
        assert width_k.sum() == math.comb(histories + k - 1, k)
        assert space.multiplicity[width_k].sum() == histories**k
    keys = space.keys()
    assert len({tuple(row) for row in keys}) == len(keys)
    for Z, k in zip(space.Z, space.width, strict=True):
        assert np.array_equal(left_ordered(Z[:, :k], zero_columns), Z[:, :k])
        assert not Z[:, k:].any()


def test_lof_multiplicities_match_brute_force():
    """Every 2 x K binary matrix (K <= 3, zero columns allowed) falls in the class whose
    multiplicity counts it."""
    space = lof_matrices(2, 3, zero_columns=True)
    counts = np.zeros(len(space.width), dtype=np.int64)
    for k in range(4):
        for bits in label_vectors(2 * k, 2):
            Z = bits.reshape(2, k)
            lof = np.zeros((2, 3), dtype=np.int64)
            lof[:, :k] = left_ordered(Z, zero_columns=True)
            counts[state_index(space.keys(), np.concatenate([[k], lof.ravel()])[None])[0]] += 1
    assert np.array_equal(counts, space.multiplicity)


@pytest.mark.parametrize("alpha", [0.5, 1.0, 2.0])
def test_ibp_prior_sums_over_the_lof_classes_to_the_poisson_mass_of_k(alpha):
    """Summed over the classes of at most 9 columns, the IBP prior is P(K+ <= 9) with
    K+ ~ Poisson(alpha H_3): the multiplicities are right."""
    space = lof_matrices(3, 9)
    log_prior = ibp_log_prior(space, alpha)
    rate = alpha * (1 + 1 / 2 + 1 / 3)
    for k in (0, 1, 4, 9):
        total = math.exp(logsumexp(log_prior[space.width == k]))
        assert total == pytest.approx(stats.poisson.pmf(k, rate), rel=1e-10)
    assert math.exp(logsumexp(log_prior)) == pytest.approx(stats.poisson.cdf(9, rate), rel=1e-10)


@pytest.mark.parametrize("n", range(1, 7))
def test_binary_trees_are_double_factorials(n):
    trees = binary_trees(n)
    assert len(trees) == math.prod(range(1, 2 * n - 2, 2))
    assert len({repr(t) for t in trees}) == len(trees)


def test_state_index_and_frequency_test():
    states = label_vectors(3, 2)
    assert state_index(states, states[::-1]).tolist() == list(range(7, -1, -1))
    assert not frequency_test(np.zeros(8), np.array([0, 1, -1])).passed


# ------------------------------------------------------------------ a state of varying width
class ToyInfo(NamedTuple):
    lp: float
    birth_death_accept: float
    flip_accept: float


class BinaryColumns:
    """Metropolis-Hastings on binary matrices ``Z`` (N x K) whose width ``K`` changes.

    Target over ordered matrices of at most ``max_columns`` columns:
    ``pi(Z) ∝ theta**K prod p**z (1 - p)**(1 - z)``. A step proposes a birth (a column of
    Bernoulli(p) bits inserted at a uniform position) or a death (a uniform column removed), each
    with probability 1/2: the Hastings ratio is ``theta`` for a birth (``1/theta`` for a death);
    then every entry proposes its flip, accepted with ``min(1, pi ratio)``. All randomness comes
    from the chain's ``rng``.
    """

    def __init__(self, n_rows, max_columns, theta, p):
        self.n, self.max_columns, self.theta, self.p = n_rows, max_columns, theta, p

    def log_target(self, Z):
        ones = int(Z.sum())
        return (Z.shape[1] * math.log(self.theta) + ones * math.log(self.p)
                + (Z.size - ones) * math.log(1 - self.p))  # fmt: skip

    def init(self, rng):
        return np.zeros((self.n, 0), dtype=np.int8)

    def step(self, Z, rng, birth_ratio=None):
        k = Z.shape[1]
        if rng.random() < 0.5:
            position = rng.integers(k + 1)
            column = (rng.random(self.n) < self.p).astype(np.int8)
            ratio = self.theta if birth_ratio is None else birth_ratio
            accepted = k < self.max_columns and rng.random() < ratio
            if accepted:
                Z = np.insert(Z, position, column, axis=1)
        else:
            j = rng.integers(max(k, 1))
            accepted = k > 0 and rng.random() < 1.0 / self.theta
            if accepted:
                Z = np.delete(Z, j, axis=1)
        odds = np.where(Z == 0, self.p / (1 - self.p), (1 - self.p) / self.p)
        flip = rng.random(Z.shape) < odds
        Z = np.where(flip, 1 - Z, Z).astype(np.int8)
        info = ToyInfo(self.log_target(Z), float(accepted), float(flip.mean()) if Z.size else 0.0)
        return Z, info

    def draw(self, Z, rng):
        return {"Z": Z.copy(), "K": Z.shape[1]}

    def exact(self):
        """The enumerated left-ordered classes and their exact log probabilities."""
        space = lof_matrices(self.n, self.max_columns, zero_columns=True)
        ones = space.Z.sum(axis=(1, 2))
        log_probs = (np.log(space.multiplicity) + space.width * math.log(self.theta)
                     + ones * math.log(self.p)
                     + (self.n * space.width - ones) * math.log(1 - self.p))  # fmt: skip
        return space, log_probs


def lof_keys(Z, shape, max_columns):
    """Each draw's left-ordered class as a key of :meth:`LofMatrices.keys` (one row per draw)."""
    keys = np.zeros((len(Z), 1 + Z.shape[1] * max_columns), dtype=np.int64)
    for d in range(len(Z)):  # over draws (independent chains), not observations
        k = int(shape[d, 1])
        lof = np.zeros((Z.shape[1], max_columns), dtype=np.int64)
        lof[:, :k] = left_ordered(Z[d][:, :k], zero_columns=True)
        keys[d] = np.concatenate([[k], lof.ravel()])
    return keys


def toy_chains(seed, sampler, step=None, chains=3000, tune=25):
    return run_chains(
        sampler.init, step or sampler.step, sampler.draw, chains=chains, draws=1, tune=tune,
        random_state=seed, progressbar=False,
    )  # fmt: skip


def test_varying_width_state_goes_through_the_runner_into_inference_data():
    sampler = BinaryColumns(n_rows=3, max_columns=4, theta=1.5, p=0.4)
    posterior, stats, seconds = run_chains(sampler.init, sampler.step, sampler.draw, chains=2,
                                           draws=50, tune=5, random_state=0, progressbar=False)  # fmt: skip
    widths = posterior["Z_shape"][..., 1]
    assert len(np.unique(widths)) > 1 and np.array_equal(widths, posterior["K"])
    assert posterior["Z"].shape == (2, 50, 3, widths.max())
    valid = np.arange(widths.max())[None, None, None, :] < widths[..., None, None]
    assert np.all(np.isin(posterior["Z"][np.broadcast_to(valid, posterior["Z"].shape)], [0, 1]))
    assert np.all(posterior["Z"][~np.broadcast_to(valid, posterior["Z"].shape)] == -1)
    idata = to_inference_data(posterior, sample_stats=stats, dims={"Z": ["row", "column"]},
                              seconds=seconds, method="toy")  # fmt: skip
    assert idata.posterior["Z"].dims == ("chain", "draw", "row", "column")
    assert idata.posterior["Z_shape"].shape == (2, 50, 2)
    for name in ("lp", "birth_death_accept", "flip_accept"):
        values = idata.sample_stats[name].to_numpy()
        assert values.shape == (2, 50)
    accept = idata.sample_stats["birth_death_accept"].to_numpy()
    assert 0 < accept.mean() < 1


@pytest.mark.parametrize("seed", SEEDS)
def test_toy_frequencies_match_the_enumerated_lof_distribution(seed):
    sampler = BinaryColumns(n_rows=2, max_columns=3, theta=0.8, p=0.3)
    space, log_probs = sampler.exact()
    posterior, _, _ = toy_chains(seed, sampler)
    keys = lof_keys(posterior["Z"][:, 0], posterior["Z_shape"][:, 0], sampler.max_columns)
    check = frequency_test(log_probs, state_index(space.keys(), keys), alpha=ALPHA)
    assert check.passed, check.detail


def test_toy_test_catches_a_wrong_hastings_ratio():
    sampler = BinaryColumns(n_rows=2, max_columns=3, theta=0.8, p=0.3)
    space, log_probs = sampler.exact()

    def wrong(Z, rng):  # the ratio of a birth at the first position only (off by K + 1)
        return sampler.step(Z, rng, birth_ratio=sampler.theta / (Z.shape[1] + 1))

    posterior, _, _ = toy_chains(0, sampler, step=wrong)
    keys = lof_keys(posterior["Z"][:, 0], posterior["Z_shape"][:, 0], sampler.max_columns)
    assert not frequency_test(log_probs, state_index(space.keys(), keys), alpha=ALPHA).passed


def test_gibbs_info_is_a_named_tuple_of_the_log_joint():
    assert GibbsInfo(-1.5)._asdict() == {"lp": -1.5}
