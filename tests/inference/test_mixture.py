"""Tests of the collapsed Gibbs sampler of Bayesian and Dirichlet process mixtures.

Correctness by statistics against exact answers: the sampler's partition frequencies against the
posterior over all set partitions (enumerated by the model, Lemma 3.1) for Gibbs sweeps, for
split-merge moves alone (their Metropolis-Hastings ratio) and for both, for the DPM and the finite
mixture, with Beta-Bernoulli, Normal-Gamma and Normal-inverse-Wishart components, each with a
negative control showing the test's power; the Escobar-West concentration updates against the exact
marginal posterior of ``alpha``. Then the bookkeeping (incremental statistics against statistics
recomputed from ``z``), the log joint, reproducibility, the ``InferenceData`` and bad options.
"""

import math
import types

import arviz as az
import numpy as np
import pytest
import scipy.sparse as sp
from scipy import stats
from scipy.special import logsumexp

from latentzoo.data import Features
from latentzoo.inference.compare import exact_test
from latentzoo.inference.mixture import (
    MixtureGibbs,
    _bernoulli_coefficients,
    _check_dense_size,
    _log_tables,
    escobar_west,
    gibbs,
)
from latentzoo.models.conjugate import (
    BetaBernoulli,
    NormalGamma,
    NormalInverseWishart,
    log_predictive_one,
)
from latentzoo.models.mixture import (
    BayesianMixture,
    DirichletProcessMixture,
    crp_log_prior,
    default_pairs,
)


def binary_data(n=6, d=4, seed=1):
    rng = np.random.default_rng(seed)
    return Features((rng.random((n, d)) < 0.5).astype(float))


def real_data(n=5, d=2, seed=2):
    rng = np.random.default_rng(seed)
    centres = np.array([[-1.5] * d, [1.5] * d])
    return Features(centres[np.arange(n) % 2] + rng.normal(size=(n, d)))


def all_labelings(partitions, log_probs, n):
    """``exact_test``'s indexing: one entry per label vector in base ``n``; -inf off the partitions."""
    full = np.full(n**n, -np.inf)
    full[partitions @ (n ** np.arange(n - 1, -1, -1))] = log_probs
    return full


def check_exact(model, data, n_chains=20000, sweeps=20, seed=0, **options):
    partitions, log_probs = model.partition_posterior(data)
    draws = MixtureGibbs(model, data, **options).exact_draws(n_chains, sweeps, random_state=seed)
    n = data.n_items
    return exact_test(all_labelings(partitions, log_probs, n), draws, n_labels=n)


# ------------------------------------------------------------------------- exact tests
BB = BetaBernoulli(a=0.5, b=0.5)
NG = NormalGamma(mu0=0.0, kappa0=0.2, a0=2.0, b0=1.0)
NIW = NormalInverseWishart(mu0=0.0, kappa0=0.2, psi0=1.0)

EXACT_CASES = {
    "dpm-bb-gibbs": (DirichletProcessMixture(1.5, BB), binary_data(), {}),
    "dpm-bb-split-merge": (DirichletProcessMixture(1.5, BB), binary_data(), {"split_merge": True}),
    "dpm-bb-moves-only": (
        DirichletProcessMixture(1.5, BB),
        binary_data(),
        {"split_merge": 2, "gibbs_sweep": False, "intermediate_scans": 3},
    ),
    "finite-bb-gibbs": (BayesianMixture(3, 2.0, BB), binary_data(), {}),
    "finite-bb-split-merge": (BayesianMixture(3, 2.0, BB), binary_data(), {"split_merge": True}),
    "finite-bb-moves-only": (
        BayesianMixture(3, 2.0, BB),
        binary_data(),
        {"split_merge": 2, "gibbs_sweep": False},
    ),
    "dpm-bb-feature-hyper-split-merge": (
        DirichletProcessMixture(1.0, BetaBernoulli(a=[0.5, 1.0, 2.0, 0.3], b=[1.0, 0.5, 2.0, 3.0])),
        binary_data(),
        {"split_merge": True},
    ),
    "dpm-ng-gibbs": (DirichletProcessMixture(1.0, NG), real_data(), {}),
    "dpm-ng-moves-only": (
        DirichletProcessMixture(1.0, NG),
        real_data(),
        {"split_merge": 2, "gibbs_sweep": False},
    ),
    "finite-ng-split-merge": (BayesianMixture(3, 1.0, NG), real_data(), {"split_merge": True}),
    "dpm-niw-split-merge": (DirichletProcessMixture(1.0, NIW), real_data(), {"split_merge": True}),
    "finite-niw-moves-only": (
        BayesianMixture(3, 1.0, NIW),
        real_data(),
        {"split_merge": 2, "gibbs_sweep": False},
    ),
}


def sizes_for(options):
    """Chains and transitions per exact test: moves alone need more transitions, so fewer chains."""
    return (10000, 30) if options.get("gibbs_sweep", True) is False else (20000, 20)


@pytest.mark.parametrize("case", list(EXACT_CASES))
def test_partition_frequencies_match_the_enumerated_posterior(case):
    model, data, options = EXACT_CASES[case]
    n_chains, sweeps = sizes_for(options)
    check = check_exact(model, data, n_chains=n_chains, sweeps=sweeps, **options)
    assert check.passed, check.detail


@pytest.mark.parametrize("case", ["dpm-bb-moves-only", "finite-bb-gibbs"])
def test_exact_test_has_power(case):
    """Negative control: the same draws against the posterior of a different alpha fail."""
    model, data, options = EXACT_CASES[case]
    n_chains, sweeps = sizes_for(options)
    draws = MixtureGibbs(model, data, **options).exact_draws(n_chains, sweeps, random_state=0)
    wrong = type(model)(**{**model.__dict__, "alpha": model.alpha * 3})
    partitions, log_probs = wrong.partition_posterior(data)
    n = data.n_items
    check = exact_test(all_labelings(partitions, log_probs, n), draws, n_labels=n)
    assert not check.passed, check.detail


@pytest.mark.parametrize("scalar", [True, False])
def test_cached_bernoulli_predictive_is_the_kernels(scalar):
    rng = np.random.default_rng(0)
    n, d = 12, 5
    comp = BB if scalar else BetaBernoulli(a=rng.uniform(0.2, 2, d), b=rng.uniform(0.2, 2, d))
    X = (rng.random((n, d)) < 0.4).astype(float)
    hyper = comp.hyper(d)
    tables = _log_tables(comp.kind_code, hyper, n, d)
    assert tables.shape == ((3, n + 1) if scalar else (3, 0))
    stats_rows = comp.stats(X, rng.integers(0, 3, n), 4)  # the last cluster is empty
    coef = np.empty(d)
    for row in stats_rows:
        base = _bernoulli_coefficients(hyper, tables, row, coef)
        for x in X:
            expected = log_predictive_one(comp.kind_code, hyper, row, x)
            assert math.isclose(base + x @ coef, expected, rel_tol=1e-12, abs_tol=1e-12)


# ------------------------------------------------------------------------ Escobar-West
def test_escobar_west_with_one_item_draws_the_prior():
    data = binary_data(n=1)
    for a0, b0 in [(2.0, 1.0), (0.5, 2.0)]:
        sampler = MixtureGibbs(
            DirichletProcessMixture(1.0, BB), data, sample_alpha=True, alpha_prior=(a0, b0)
        )
        _, alphas = sampler.exact_draws(5000, 5, random_state=0, return_alpha=True)
        assert stats.kstest(alphas, stats.gamma(a0, scale=1 / b0).cdf).pvalue > 1e-3


@pytest.mark.parametrize("split_merge", [False, True])
def test_sampled_alpha_and_partition_match_their_exact_marginals(split_merge):
    """``p(alpha | X)`` and ``p(z | X)`` with alpha integrated out, on a grid over alpha."""
    data = binary_data(n=5, d=6)
    n, a0, b0 = 5, 2.0, 1.0
    model = DirichletProcessMixture(1.0, BB)
    partitions, _ = model.partition_posterior(data)
    log_lik = model.collapsed_log_joint(partitions, data) - crp_log_prior(partitions, 1.0)
    grid = np.linspace(1e-4, 30.0, 3000)
    log_prior = np.stack([crp_log_prior(partitions, a) for a in grid])  # (G, S)
    log_joint = stats.gamma.logpdf(grid, a0, scale=1 / b0)[:, None] + log_prior + log_lik
    density = np.exp(logsumexp(log_joint, axis=1) - logsumexp(log_joint))
    cdf = np.cumsum(density) / density.sum()
    sampler = MixtureGibbs(
        model, data, sample_alpha=True, alpha_prior=(a0, b0), split_merge=split_merge
    )
    labels, alphas = sampler.exact_draws(10000, 30, random_state=1, return_alpha=True)
    assert stats.kstest(alphas, lambda x: np.interp(x, grid, cdf)).pvalue > 1e-3
    marginal = logsumexp(log_joint, axis=0)
    check = exact_test(all_labelings(partitions, marginal, n), labels, n_labels=n)
    assert check.passed, check.detail
    # Power: the same alphas against the prior (the data do move alpha here).
    assert stats.kstest(alphas, stats.gamma(a0, scale=1 / b0).cdf).pvalue < 1e-3


def test_escobar_west_kernel_is_reproducible():
    a, b = np.array([5], dtype=np.uint64), np.array([5], dtype=np.uint64)
    assert escobar_west(1.0, 3, 10, 1.0, 1.0, a) == escobar_west(1.0, 3, 10, 1.0, 1.0, b)


# ------------------------------------------------------------------------- bookkeeping
@pytest.mark.parametrize(
    "model, data",
    [
        (DirichletProcessMixture(3.0, BB), binary_data(n=60, d=5)),
        (DirichletProcessMixture(3.0, NG), real_data(n=60, d=3)),
        (DirichletProcessMixture(3.0, NIW), real_data(n=60, d=3)),
        (BayesianMixture(4, 2.0, NIW), real_data(n=60, d=3)),
    ],
    ids=["dpm-bb", "dpm-ng", "dpm-niw", "finite-niw"],
)
def test_incremental_statistics_equal_statistics_recomputed_from_z(model, data):
    is_dp = isinstance(model, DirichletProcessMixture)
    sampler = MixtureGibbs(model, data, split_merge=3, sample_alpha=is_dp)
    # One cluster to start: a DPM has to grow its table (capacity 4) as clusters appear.
    state = sampler.init(np.random.default_rng(0), z=np.zeros(data.n_items, dtype=np.int64))
    capacities = {state.sizes.shape[0]}
    for _ in range(60):
        state, _ = sampler.step(state, None)
        capacities.add(state.sizes.shape[0])
    comp = model.component
    capacity = state.sizes.shape[0]
    recomputed = comp.stats(data.X, state.z, capacity)
    np.testing.assert_array_equal(state.sizes, np.bincount(state.z, minlength=capacity))
    occupied = state.sizes > 0
    np.testing.assert_allclose(state.stats[occupied], recomputed[occupied], rtol=1e-9, atol=1e-9)
    empty = comp.empty_stats(1, data.n_features)[0]
    assert all(np.array_equal(row, empty) for row in state.stats[~occupied])
    assert state.n_clusters == int(occupied.sum())
    if is_dp:
        assert max(capacities) > 4  # the table grew
        assert np.isfinite(state.alpha) and state.alpha > 0


@pytest.mark.parametrize(
    "model",
    [DirichletProcessMixture(0.7, BB), BayesianMixture(3, 1.3, BB)],
    ids=["dpm", "finite"],
)
def test_log_joint_is_the_models_collapsed_log_joint(model):
    data = binary_data(n=30, d=6)
    sampler = MixtureGibbs(model, data, split_merge=True)
    state = sampler.init(np.random.default_rng(3))
    for _ in range(5):
        state, info = sampler.step(state, None)
        expected = model.collapsed_log_joint(state.z[None, :], data)[0]
        assert math.isclose(sampler.log_joint(state), expected, rel_tol=1e-10, abs_tol=1e-9)
        assert info.lp == sampler.log_joint(state)


def test_draw_params_and_heldout_predictive():
    data = binary_data(n=12, d=3)
    # Every binary vector of length 3: the held-out predictive is a distribution over them.
    every = Features(((np.arange(8)[:, None] >> np.arange(3)) & 1).astype(float))
    for model in [DirichletProcessMixture(1.2, BB), BayesianMixture(3, 1.2, BB)]:
        sampler = MixtureGibbs(model, data, test=every)
        rng = np.random.default_rng(0)
        state, _ = sampler.step(sampler.init(rng), rng)
        params = sampler.draw_params(state, rng)
        n_weights = len(params["w"])
        if isinstance(model, DirichletProcessMixture):
            # The occupied clusters, then the stick-breaking atoms of the rest of the measure.
            assert n_weights > state.n_clusters
            assert params["w"][-1] <= 1e-8 or n_weights == 200
        else:
            assert n_weights == 3
        assert math.isclose(params["w"].sum(), 1.0, rel_tol=1e-12)
        assert params["theta"].shape == (n_weights, 3)
        np.testing.assert_array_equal(np.unique(params["z"]), np.arange(state.n_clusters))
        heldout = sampler.heldout_log_density(state)
        assert math.isclose(np.exp(heldout).sum(), 1.0, rel_tol=1e-12)
        # Brute force: p(x | z, X) = p(x, X_k) / p(X_k) averaged with the CRP weights.
        out = sampler.draw(state, rng)
        np.testing.assert_array_equal(out["x"], heldout)


# ---------------------------------------------------------------------- InferenceData
def test_gibbs_returns_inference_data_usable_by_arviz():
    model = DirichletProcessMixture(1.0, BB)
    data, truth = model.simulate(0, n_items=40, n_features=8, separated=True)
    idata = gibbs(model, data, chains=2, draws=30, tune=10, random_state=0, progressbar=False,
                  split_merge=True, sample_alpha=True)  # fmt: skip
    for group in ("posterior", "sample_stats", "log_likelihood", "observed_data"):
        assert group in idata.groups()
    posterior = idata.posterior
    assert posterior["z"].shape == (2, 30, 40)
    assert set(posterior.data_vars) == {"z", "loglik", "coassign", "n_occupied", "alpha"}
    assert posterior["coassign"].dims == ("chain", "draw", "pair")
    assert idata.sample_stats["lp"].shape == (2, 30)
    assert idata.log_likelihood["x"].dims == ("chain", "draw", "item")
    assert idata.observed_data["x"].shape == (40, 8)
    summary = az.summary(idata, var_names=["loglik", "n_occupied", "alpha"])
    assert np.isfinite(summary["mean"]).all()
    loo = az.loo(idata)
    assert np.isfinite(loo.elpd_loo)
    # Separated clusters: the truth's co-assignments are found.
    pairs = default_pairs(data)
    together = (truth["z"][pairs[:, 0]] == truth["z"][pairs[:, 1]]).astype(float)
    found = posterior["coassign"].mean(("chain", "draw")).values
    assert np.abs(found - together).max() < 0.2, (found, together)


def test_gibbs_with_test_scores_held_out_items():
    model = BayesianMixture(3, 1.0, BB)
    data, _ = model.simulate(1, n_items=30, n_features=6, separated=True)
    train, test = data.split(0.2, random_state=0)
    idata = gibbs(model, train, test=test, chains=1, draws=5, tune=2, random_state=0,
                  progressbar=False)  # fmt: skip
    assert idata.log_likelihood["x"].dims == ("chain", "draw", "test_item")
    assert idata.log_likelihood["x"].shape == (1, 5, test.n_items)
    assert idata.observed_data["x"].shape == test.shape
    assert "alpha" not in idata.posterior


def test_same_random_state_gives_identical_inference_data():
    model = DirichletProcessMixture(1.0, NG)
    data = real_data(n=25, d=2)
    kwargs = dict(chains=2, draws=15, tune=5, progressbar=False, split_merge=True,
                  sample_alpha=True)  # fmt: skip
    a = gibbs(model, data, random_state=7, **kwargs)
    b = gibbs(model, data, random_state=7, **kwargs)
    c = gibbs(model, data, random_state=8, **kwargs)
    for group in ("posterior", "sample_stats", "log_likelihood"):
        assert a[group].equals(b[group]), group
    assert not a.posterior["alpha"].equals(c.posterior["alpha"])


def test_initial_assignments_start_each_chain():
    model = BayesianMixture(2, 1.0, BB)
    data = binary_data(n=8, d=3)
    starts = [np.zeros(8, dtype=int), np.arange(8) % 2]
    idata = gibbs(model, data, draws=3, tune=0, random_state=0, progressbar=False,
                  initial_assignments=starts)  # fmt: skip
    assert idata.posterior.sizes["chain"] == 2


# ---------------------------------------------------------------------------- bad input
@pytest.mark.parametrize(
    "options, message",
    [
        ({"split_merge": -1}, "split_merge"),
        ({"split_merge": 1.5}, "split_merge"),
        ({"split_merge": "yes"}, "split_merge"),
        ({"intermediate_scans": -1}, "intermediate_scans"),
        ({"sample_alpha": "yes"}, "sample_alpha"),
        ({"alpha_prior": (0.0, 1.0)}, "alpha_prior shape"),
        ({"alpha_prior": (1.0, -1.0)}, "alpha_prior rate"),
        ({"alpha_prior": (1.0, 2.0, 3.0)}, "alpha_prior"),
        ({"alpha_prior": None}, "alpha_prior"),
        ({"gibbs_sweep": False}, "gibbs_sweep"),
        ({"test": np.ones((2, 5))}, "test has 5 features"),
    ],
)
def test_bad_options_raise_value_errors_naming_them(options, message):
    with pytest.raises(ValueError, match=message):
        MixtureGibbs(DirichletProcessMixture(), binary_data(), **options)


def test_bad_models_data_and_starts_raise_value_errors():
    with pytest.raises(ValueError, match="sample_alpha"):
        MixtureGibbs(BayesianMixture(2), binary_data(), sample_alpha=True)
    with pytest.raises(ValueError, match="model must be"):
        MixtureGibbs("dpm", binary_data())
    with pytest.raises(ValueError, match="not binary|do not fit"):
        MixtureGibbs(DirichletProcessMixture(), [[0.5, 1.0]])
    sampler = MixtureGibbs(BayesianMixture(2), binary_data())
    rng = np.random.default_rng(0)
    with pytest.raises(ValueError, match="initial assignments"):
        sampler.init(rng, z=[0, 1])
    with pytest.raises(ValueError, match="initial assignments"):
        sampler.init(rng, z=[0, 1, 2, 0, 1, 0])
    with pytest.raises(ValueError, match="chains"):
        gibbs(DirichletProcessMixture(), binary_data(), chains=0, progressbar=False)
    with pytest.raises(ValueError, match="n_chains"):
        sampler.exact_draws(0, 5)
    huge = types.SimpleNamespace(n_items=10**6, n_features=10**3)
    with pytest.raises(ValueError, match=r"data is too large .* 7\.5 GiB"):
        _check_dense_size(huge, "data")
    # A sparse Features is refused before anything densifies it.
    big = Features(sp.csr_matrix(([1.5, -2.0], ([0, 7], [3, 9])), shape=(400_000, 1000)))
    with pytest.raises(ValueError, match=r"data is too large .* 3\.0 GiB"):
        MixtureGibbs(DirichletProcessMixture(1.0, NG), big)
    assert big._dense is None
