"""Finite Bayesian mixtures and Dirichlet process mixtures: partitions, exact marginals, PyMC, simulator."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from scipy import integrate, stats
from scipy.special import betaln, logsumexp

from latentzoo.data import Features
from latentzoo.models.conjugate import (
    BetaBernoulli,
    DirichletMultinomial,
    NormalGamma,
    NormalInverseWishart,
)
from latentzoo.models.mixture import (
    BayesianMixture,
    DirichletProcessMixture,
    canonical_labels,
    crp_log_prior,
    default_pairs,
    dirichlet_labels_log_prior,
    set_partitions,
)

BELL = [1, 1, 2, 5, 15, 52, 203, 877, 4140]

X4 = np.array([[1, 0, 1], [1, 0, 0], [0, 1, 1], [1, 1, 1]], dtype=float)


# --------------------------------------------------------------------------- brute force helpers
def python_partitions(items):
    """All set partitions of ``items`` as lists of blocks (an independent recursive generator)."""
    if not items:
        yield []
        return
    first, rest = items[0], items[1:]
    for smaller in python_partitions(rest):
        for j in range(len(smaller)):
            yield smaller[:j] + [[first] + smaller[j]] + smaller[j + 1 :]
        yield [[first]] + smaller


def beta_bernoulli_marginal(x_block, a, b):
    """``prod_d B(a + m_d, b + n - m_d) / B(a, b)`` for the rows of one block (thesis section 2.1.1)."""
    n = x_block.shape[0]
    m = x_block.sum(axis=0)
    return float(np.exp(np.sum(betaln(a + m, b + n - m) - betaln(a, b))))


def ewens(block_sizes, alpha):
    """Eq. (3.9): ``alpha^m prod Gamma(n_l) / [Gamma(n + alpha) / Gamma(alpha)]``."""
    n = sum(block_sizes)
    value = alpha ** len(block_sizes) * math.prod(math.gamma(s) for s in block_sizes)
    return value * math.gamma(alpha) / math.gamma(n + alpha)


# --------------------------------------------------------------------------- partitions
def test_set_partitions_count_bell_numbers_and_are_canonical():
    for n in range(1, 9):
        parts = set_partitions(n)
        assert parts.shape == (BELL[n], n)
        assert parts.dtype == np.int64
        assert np.all(parts[:, 0] == 0)
        running_max = np.maximum.accumulate(parts, axis=1)
        assert np.all(parts[:, 1:] <= running_max[:, :-1] + 1)  # restricted growth
        assert len({tuple(row) for row in parts}) == BELL[n]  # each partition once
        np.testing.assert_array_equal(canonical_labels(parts), parts)
    assert set_partitions(0).shape == (1, 0)


def test_set_partitions_match_an_independent_generator():
    expected = set()
    for blocks in python_partitions(list(range(6))):
        z = np.empty(6, dtype=int)
        for label, block in enumerate(blocks):
            z[block] = label
        expected.add(tuple(canonical_labels(z)))
    assert expected == {tuple(row) for row in set_partitions(6)}


def test_canonical_labels_against_a_loop():
    rng = np.random.default_rng(0)
    z = rng.integers(-3, 6, size=(500, 9)) * 7

    def canon(row):
        seen = {}
        return [seen.setdefault(v, len(seen)) for v in row]

    np.testing.assert_array_equal(canonical_labels(z), [canon(row) for row in z])
    assert canonical_labels(np.array([4, 4, 2])).tolist() == [0, 0, 1]
    assert canonical_labels(np.zeros((3, 0), dtype=int)).shape == (3, 0)


def test_crp_prior_is_a_distribution_and_matches_the_sequential_urn():
    for alpha in (0.3, 1.0, 2.5):
        assert np.isclose(np.exp(crp_log_prior(set_partitions(6), alpha)).sum(), 1.0, atol=1e-12)
    # (0 1)(2)(3 4 5) sequentially by eq. (2.19)-(2.20): 1 * 1/(1+a) * a/(2+a) * a/(3+a) * 1/(4+a) * 2/(5+a)
    a = 0.7
    urn = 1 * 1 / (1 + a) * a / (2 + a) * a / (3 + a) * 1 / (4 + a) * 2 / (5 + a)
    assert np.isclose(np.exp(crp_log_prior([0, 0, 1, 2, 2, 2], a)[0]), urn, rtol=1e-12)


def test_finite_labelled_prior_sums_to_one_and_tends_to_the_crp():
    every = np.array(list(itertools.product(range(3), repeat=5)))
    assert np.isclose(np.exp(dirichlet_labels_log_prior(every, 0.8, 3)).sum(), 1.0, atol=1e-12)
    big = BayesianMixture(10**6, alpha=1.2)
    parts = set_partitions(5)
    np.testing.assert_allclose(
        big._partition_log_prior(parts), crp_log_prior(parts, 1.2), atol=1e-4
    )


# --------------------------------------------------------------------------- exact marginal
@pytest.mark.parametrize("alpha, a, b", [(1.0, 1.0, 1.0), (0.6, 0.7, 1.9)])
def test_dpm_marginal_likelihood_matches_brute_force_on_four_items(alpha, a, b):
    """Acceptance point of issue 6: Lemma 3.1 enumerated against a direct sum, to 1e-10."""
    model = DirichletProcessMixture(alpha=alpha, component=BetaBernoulli(a=a, b=b))
    total = 0.0
    for blocks in python_partitions(list(range(4))):
        likelihood = math.prod(beta_bernoulli_marginal(X4[block], a, b) for block in blocks)
        total += ewens([len(block) for block in blocks], alpha) * likelihood
    assert abs(model.log_marginal_likelihood(X4) - math.log(total)) < 1e-10


def test_partition_posterior_is_normalised_and_consistent():
    model = DirichletProcessMixture(alpha=1.0)
    parts, log_probs = model.partition_posterior(X4)
    assert parts.shape == (15, 4)
    assert np.isclose(np.exp(log_probs).sum(), 1.0, atol=1e-12)
    np.testing.assert_allclose(
        log_probs, model.collapsed_log_joint(parts, X4) - model.log_marginal_likelihood(X4)
    )


def test_finite_collapsed_joint_against_numerical_integration():
    """K = 2, N = 3: p(z, X) = int w^n1 (1-w)^n2 Dir(w) dw * prod_kd int Bernoulli * Beta dtheta."""
    alpha, a, b = 3.0, 1.5, 0.8
    model = BayesianMixture(2, alpha=alpha, component=BetaBernoulli(a=a, b=b))
    x = np.array([[1, 0], [1, 1], [0, 0]], dtype=float)
    labelled = np.array(list(itertools.product(range(2), repeat=3)))
    brute = []
    for z in labelled:
        n1 = int(np.sum(z == 0))
        weights, _ = integrate.quad(
            lambda w, n1=n1: w**n1 * (1 - w) ** (3 - n1) * stats.beta.pdf(w, alpha / 2, alpha / 2),
            0,
            1,
            epsabs=1e-14,
        )
        value = weights
        for k in range(2):
            for d in range(2):
                column = x[z == k, d]
                integral, _ = integrate.quad(
                    lambda t, col=column: (
                        np.prod(t**col * (1 - t) ** (1 - col)) * stats.beta.pdf(t, a, b)
                    ),
                    0,
                    1,
                    epsabs=1e-14,
                )
                value *= integral
        brute.append(np.log(value))
    np.testing.assert_allclose(model.collapsed_log_joint(labelled, x), brute, rtol=1e-7)
    assert np.isclose(model.log_marginal_likelihood(x), logsumexp(brute), rtol=1e-7)


def test_finite_partition_posterior_counts_every_labelling():
    """Aggregating the K**N labelled posterior by canonical labels gives partition_posterior."""
    model = BayesianMixture(3, alpha=0.9)
    labelled = np.array(list(itertools.product(range(3), repeat=4)))
    log_joint = model.collapsed_log_joint(labelled, X4)
    keys = [tuple(row) for row in canonical_labels(labelled)]
    aggregated = {}
    for key, value in zip(keys, np.exp(log_joint - logsumexp(log_joint)), strict=True):
        aggregated[key] = aggregated.get(key, 0.0) + value
    parts, log_probs = model.partition_posterior(X4)
    assert len(parts) == 14  # the 15 partitions of 4 items minus the one with 4 blocks
    np.testing.assert_allclose(
        np.exp(log_probs), [aggregated[tuple(row)] for row in parts], rtol=1e-10
    )
    assert np.isclose(model.log_marginal_likelihood(X4), logsumexp(log_joint), rtol=1e-12)


def test_collapsed_joint_of_many_items_uses_the_stacked_path():
    model = DirichletProcessMixture(alpha=0.8, component=BetaBernoulli(a=0.5, b=2.0))
    rng = np.random.default_rng(1)
    x = (rng.random((60, 4)) < 0.4).astype(float)
    labels = rng.integers(0, 4, size=(5, 60))
    expected = []
    for z in labels:
        sizes = [int(np.sum(z == k)) for k in np.unique(z)]
        log_lik = sum(np.log(beta_bernoulli_marginal(x[z == k], 0.5, 2.0)) for k in np.unique(z))
        expected.append(np.log(ewens(sizes, 0.8)) + log_lik)
    np.testing.assert_allclose(model.collapsed_log_joint(labels, x), expected, rtol=1e-10)


def test_dpm_labels_are_relabelling_invariant_and_finite_labels_bounded():
    model = DirichletProcessMixture()
    lp = model.collapsed_log_joint([[0, 0, 1, 2], [7, 7, 3, 0]], X4)
    assert lp[0] == lp[1]
    with pytest.raises(ValueError, match=r"labels must lie in 0\.\.1"):
        BayesianMixture(2).collapsed_log_joint([0, 1, 2, 0], X4)
    with pytest.raises(ValueError, match=r"shape \(S, 4\)"):
        model.collapsed_log_joint([0, 1, 2], X4)


# --------------------------------------------------------------------------- PyMC reference
def _random_point(model, seed):
    rng = np.random.default_rng(seed)
    point = {name: rng.normal(size=np.shape(v)) for name, v in model.initial_point().items()}
    names = [v.name for v in model.unobserved_value_vars]
    fn = model.compile_fn(
        model.unobserved_value_vars, inputs=model.value_vars, on_unused_input="ignore"
    )
    return point, dict(zip(names, fn(point), strict=True))


@pytest.mark.parametrize("temperature", [1.0, 2.0])
def test_pymc_dpm_logp_is_log_prior_plus_tempered_loglik(temperature):
    alpha = 1.7
    model = DirichletProcessMixture(
        alpha=alpha, component=BetaBernoulli(a=0.8, b=1.4), n_components=3
    )
    pm_model = model.pymc_model(X4, temperature=temperature)
    point, values = _random_point(pm_model, 0)
    v, theta, w = values["v"], values["theta"], values["w"]
    assert np.isclose(w.sum(), 1.0)
    np.testing.assert_allclose(w, [v[0], (1 - v[0]) * v[1], (1 - v[0]) * (1 - v[1])])
    log_prior = stats.beta.logpdf(v, 1.0, alpha).sum() + stats.beta.logpdf(theta, 0.8, 1.4).sum()
    log_lik = logsumexp(
        np.log(w) + X4 @ np.log(theta).T + (1 - X4) @ np.log1p(-theta).T, axis=1
    ).sum()
    logp = pm_model.compile_logp(jacobian=False)(point)
    assert np.isclose(logp, log_prior + log_lik / temperature, rtol=1e-10)
    assert np.isclose(model.log_likelihood(values, X4).sum(), log_lik)


def test_pymc_finite_logp_is_log_prior_plus_loglik():
    model = BayesianMixture(3, alpha=2.0, component=DirichletMultinomial(eta=0.7))
    x = np.array([[2, 0, 1], [0, 3, 0], [1, 1, 1]], dtype=float)
    pm_model = model.pymc_model(x)
    point, values = _random_point(pm_model, 1)
    w, phi = values["w"], values["theta"]
    log_prior = stats.dirichlet.logpdf(w, np.full(3, 2.0 / 3)) + sum(
        stats.dirichlet.logpdf(row, np.full(3, 0.7)) for row in phi
    )
    log_lik = logsumexp(np.log(w) + x @ np.log(phi).T, axis=1).sum()
    assert np.isclose(pm_model.compile_logp(jacobian=False)(point), log_prior + log_lik)
    assert np.isclose(model.log_likelihood(values, x).sum(), log_lik)


@pytest.mark.parametrize(
    "model",
    [
        BayesianMixture(2, component=NormalGamma(mu0=0.5, kappa0=2.0, a0=2.0, b0=3.0)),
        DirichletProcessMixture(component=NormalInverseWishart(), n_components=2),
        BayesianMixture(1, component=NormalInverseWishart(kappa0=0.5, psi0=2.0)),
    ],
)
def test_pymc_potential_equals_log_likelihood_of_the_drawn_parameters(model):
    import pytensor

    x = np.array([[0.3, -1.2, 0.5], [2.0, 0.1, -0.4], [-0.7, 0.9, 1.5], [0.0, 0.2, 0.1]])
    pm_model = model.pymc_model(x, temperature=1.5)
    point, values = _random_point(pm_model, 2)
    potential = pm_model.replace_rvs_by_values([pm_model["marginal_loglik"]])[0]
    fn = pytensor.function(pm_model.value_vars, potential, on_unused_input="ignore")
    got = fn(**{v.name: point[v.name] for v in pm_model.value_vars})
    assert np.isclose(got, model.log_likelihood(values, x).sum() / 1.5, rtol=1e-9)


def test_pymc_normal_gamma_prior_terms():
    comp = NormalGamma(mu0=0.5, kappa0=2.0, a0=2.0, b0=3.0)
    model = BayesianMixture(2, component=comp)
    x = np.array([[0.3, -1.2], [2.0, 0.1]])
    pm_model = model.pymc_model(x)
    point, values = _random_point(pm_model, 3)
    tau, mu, w = values["tau"], values["mu"], values["w"]
    log_prior = (
        stats.dirichlet.logpdf(w, [0.5, 0.5])
        + stats.gamma.logpdf(tau, 2.0, scale=1 / 3.0).sum()
        + stats.norm.logpdf(mu, 0.5, 1 / np.sqrt(2.0 * tau)).sum()
    )
    log_lik = model.log_likelihood(values, x).sum()
    assert np.isclose(pm_model.compile_logp(jacobian=False)(point), log_prior + log_lik)


def test_pymc_niw_bartlett_prior_moments():
    """Bartlett declaration: E[Sigma^-1] = nu0 Psi0^-1 and kappa0 (mu-mu0)' Sigma^-1 (mu-mu0) ~ chi2(D)."""
    import pymc as pm

    psi0 = np.array([[2.0, 0.5], [0.5, 1.0]])
    comp = NormalInverseWishart(mu0=1.0, kappa0=0.5, nu0=5.0, psi0=psi0)
    pm_model = BayesianMixture(1, component=comp).pymc_model(np.zeros((2, 2)) + [[0.1], [0.2]])
    mu, cov = pm.draw([pm_model["mu"], pm_model["cov"]], draws=4000, random_seed=0)
    precision = np.linalg.inv(cov[:, 0])
    expected = 5.0 * np.linalg.inv(psi0)
    se = precision.std(axis=0) / np.sqrt(4000)
    assert np.all(np.abs(precision.mean(axis=0) - expected) < 5 * se)
    diff = mu[:, 0] - 1.0
    quad = 0.5 * np.einsum("si,sij,sj->s", diff, precision, diff)
    assert abs(quad.mean() - 2.0) < 5 * np.sqrt(4.0 / 4000)


def test_pymc_model_names_and_dims():
    data = Features(X4)
    dpm = DirichletProcessMixture(n_components=4)
    m = dpm.pymc_model(data)
    assert {"v", "w", "theta", "marginal_loglik"} <= set(m.named_vars)
    assert m.named_vars_to_dims["theta"] == ("cluster", "feature")
    assert m.named_vars_to_dims["w"] == ("cluster",)
    assert m.named_vars_to_dims["v"] == ("stick",)
    coords = dpm.coords(data)
    assert len(coords["cluster"]) == 4 and len(coords["stick"]) == 3
    assert len(coords["pair"]) == 6 and len(coords["item"]) == 4
    assert dpm.dims["coassign"] == ["pair"]
    one = BayesianMixture(1).pymc_model(data)
    assert "w" in one.named_vars
    niw = DirichletProcessMixture(component=NormalInverseWishart(), n_components=2)
    assert niw.dims["cov"] == ["cluster", "feature", "feature2"]
    assert set(niw.pymc_model(np.array([[0.5, 1.5], [1.0, -2.0]])).named_vars) >= {"mu", "cov"}


# --------------------------------------------------------------------------- simulator
@pytest.mark.parametrize(
    "model",
    [
        BayesianMixture(3, component=BetaBernoulli()),
        DirichletProcessMixture(alpha=2.0, component=BetaBernoulli()),
        DirichletProcessMixture(component=DirichletMultinomial()),
        BayesianMixture(2, component=NormalGamma()),
        DirichletProcessMixture(component=NormalInverseWishart()),
    ],
)
def test_simulate_shapes_and_reproducibility(model):
    data, truth = model.simulate(5, n_items=40, n_features=3)
    again, truth2 = model.simulate(5, n_items=40, n_features=3)
    assert isinstance(data, Features) and data.shape == (40, 3)
    np.testing.assert_array_equal(data.X, again.X)
    assert set(truth) == {"z", "w", *model.component.param_names}
    for key in truth:
        np.testing.assert_array_equal(truth[key], truth2[key])
    assert truth["z"].shape == (40,) and truth["z"].dtype == np.int64
    k = truth["w"].shape[0]
    assert truth["z"].max() < k
    for name in model.component.param_names:
        assert truth[name].shape[:2] == (k, 3)
    assert np.all(np.isfinite(model.log_likelihood(truth, data)))
    if isinstance(model, DirichletProcessMixture):
        np.testing.assert_array_equal(truth["z"], canonical_labels(truth["z"]))
        assert k == truth["z"].max() + 1 and truth["w"].sum() < 1.0
    else:
        assert k == model.n_components and np.isclose(truth["w"].sum(), 1.0)
    assert not np.array_equal(data.X, model.simulate(6, n_items=40, n_features=3)[0].X)


def test_simulate_dpm_number_of_clusters_follows_the_crp():
    model = DirichletProcessMixture(alpha=2.0)
    counts = [model.simulate(s, n_items=30, n_features=1)[1]["w"].size for s in range(300)]
    expected = sum(2.0 / (2.0 + i) for i in range(30))  # E[K_n] = sum_i alpha / (alpha + i)
    assert abs(np.mean(counts) - expected) < 4 * np.std(counts) / np.sqrt(300)


def test_simulate_separated():
    model = DirichletProcessMixture()
    data, truth = model.simulate(0, n_items=30, n_features=6, separated=True)
    assert truth["w"].tolist() == [1 / 3] * 3
    assert np.bincount(truth["z"]).tolist() == [10, 10, 10]
    assert set(np.unique(truth["theta"])) == {0.1, 0.9}
    # the truth explains the data far better than a single cluster
    inv = model.invariants(truth, data)
    one = {"w": [1.0], "theta": data.X.mean(axis=0, keepdims=True).clip(0.05, 0.95)}
    assert inv["loglik"] > model.log_likelihood(one, data).sum()
    _, gauss = BayesianMixture(2, component=NormalGamma()).simulate(
        0, n_items=10, n_features=2, separated=True
    )
    assert gauss["mu"].tolist() == [[-2.5, -2.5], [2.5, 2.5]]
    with pytest.raises(ValueError, match="n_features=2 >= n_clusters=3"):
        model.simulate(0, n_items=5, n_features=2, separated=True)


# --------------------------------------------------------------------------- likelihood, invariants
def test_log_likelihood_of_the_dpm_remainder_uses_the_prior_predictive():
    model = DirichletProcessMixture(component=BetaBernoulli(a=1.0, b=3.0))
    params = {"w": np.array([0.6]), "theta": np.array([[0.9, 0.2, 0.5]])}
    own = X4 @ np.log([0.9, 0.2, 0.5]) + (1 - X4) @ np.log([0.1, 0.8, 0.5])
    prior_predictive = X4.sum(axis=1) * np.log(0.25) + (3 - X4.sum(axis=1)) * np.log(0.75)
    expected = np.logaddexp(np.log(0.6) + own, np.log(0.4) + prior_predictive)
    np.testing.assert_allclose(model.log_likelihood(params, X4), expected)
    np.testing.assert_allclose(model.heldout_log_likelihood(params, X4[:2]), expected[:2])
    resp = model.responsibilities(params, X4)
    assert resp.shape == (4, 2) and np.allclose(resp.sum(axis=1), 1.0)


def test_invariants_hard_and_soft():
    model = BayesianMixture(2)
    params = {"w": np.array([0.5, 0.5]), "theta": np.array([[0.999] * 3, [0.001] * 3])}
    x = np.array([[1, 1, 1], [1, 1, 1], [0, 0, 0], [0, 0, 0]], dtype=float)
    soft = model.invariants(params, x)
    hard = model.invariants({**params, "z": np.array([0, 0, 1, 1])}, x)
    assert set(soft) == set(hard) == set(model.invariant_names)
    assert hard["coassign"].tolist() == [1.0, 0.0, 0.0, 0.0, 0.0, 1.0]
    assert float(hard["n_occupied"]) == 2.0
    np.testing.assert_allclose(soft["coassign"], hard["coassign"], atol=1e-6)
    assert np.isclose(soft["n_occupied"], 2.0, atol=1e-6)
    assert soft["loglik"] == hard["loglik"] == model.log_likelihood(params, x).sum()
    # a flat mixture: every pair co-assigned with probability sum_k w_k^2
    flat = {"w": np.array([0.25, 0.75]), "theta": np.full((2, 3), 0.5)}
    inv = model.invariants(flat, x, pairs=np.array([[0, 3]]))
    assert np.isclose(inv["coassign"][0], 0.25**2 + 0.75**2)
    assert np.isclose(inv["n_occupied"], (1 - 0.75**4) + (1 - 0.25**4))


def test_default_pairs():
    assert default_pairs(Features(X4)).shape == (6, 2)
    assert default_pairs(20).shape == (190, 2)
    pairs = default_pairs(1000)
    assert pairs.shape == (15, 2)
    assert sorted(set(pairs.ravel().tolist())) == [0, 200, 400, 599, 799, 999]


# --------------------------------------------------------------------------- bad input
@pytest.mark.parametrize("alpha", [0.0, -1.0, np.nan, np.inf])
def test_bad_alpha(alpha):
    with pytest.raises(ValueError, match="alpha must be a positive finite number"):
        DirichletProcessMixture(alpha=alpha)
    with pytest.raises(ValueError, match="alpha must be a positive finite number"):
        BayesianMixture(2, alpha=alpha)


@pytest.mark.parametrize("k", [0, -2, 2.0, True])
def test_bad_n_components(k):
    with pytest.raises(ValueError, match="n_components must be an integer >= 1"):
        BayesianMixture(k)
    with pytest.raises(ValueError, match="n_components must be an integer >= 1"):
        DirichletProcessMixture(n_components=k)


def test_bad_component():
    with pytest.raises(ValueError, match="component must be a conjugate component"):
        DirichletProcessMixture(component="normal")


def test_bad_data():
    model = DirichletProcessMixture()
    with pytest.raises(ValueError, match="do not fit the BetaBernoulli component"):
        model.check_data(np.array([[0.5, 1.0], [1.0, 0.0]]))
    with pytest.raises(ValueError, match="do not fit the BetaBernoulli component"):
        model.log_marginal_likelihood(np.array([[2.0, 1.0], [1.0, 0.0]]))
    with pytest.raises(ValueError, match="do not fit the DirichletMultinomial component"):
        DirichletProcessMixture(component=DirichletMultinomial()).check_data([[0.5], [1.5]])
    with pytest.raises(ValueError, match=r"(?i)nan"):
        model.check_data(np.array([[0.0, np.nan], [1.0, 0.0]]))
    with pytest.raises(ValueError, match=r"(?i)nan"):
        model.log_likelihood({"w": [1.0], "theta": [[0.5, 0.5]]}, [[0.0, np.nan]])
    # binary data are counts and real data too
    assert DirichletProcessMixture(component=NormalGamma()).check_data(X4).kind == "binary"


def test_bad_params_and_sizes():
    model = BayesianMixture(2)
    with pytest.raises(ValueError, match="w must sum to one"):
        model.log_likelihood({"w": [0.5, 0.4], "theta": np.full((2, 3), 0.5)}, X4)
    with pytest.raises(ValueError, match=r"w has shape \(3,\), expected \(2,\)"):
        model.log_likelihood({"w": [0.5, 0.25, 0.25], "theta": np.full((3, 3), 0.5)}, X4)
    with pytest.raises(ValueError, match=r"theta has shape \(2, 2\), expected \(2, 3"):
        model.log_likelihood({"w": [0.5, 0.5], "theta": np.full((2, 2), 0.5)}, X4)
    with pytest.raises(ValueError, match="w must be finite and non-negative"):
        model.log_likelihood({"w": [1.5, -0.5], "theta": np.full((2, 3), 0.5)}, X4)
    with pytest.raises(ValueError, match="w must sum to at most one"):
        DirichletProcessMixture().log_likelihood(
            {"w": [0.9, 0.3], "theta": np.full((2, 3), 0.5)}, X4
        )
    with pytest.raises(ValueError, match="limited to 11 items, the data have n_items=12"):
        DirichletProcessMixture().log_marginal_likelihood(np.zeros((12, 2)))
    with pytest.raises(ValueError, match="n=12 is too large"):
        set_partitions(12)
    with pytest.raises(ValueError, match="temperature must be a positive finite number"):
        model.pymc_model(X4, temperature=0.0)
    with pytest.raises(ValueError, match="n_items must be an integer >= 1"):
        model.simulate(0, n_items=0)
    with pytest.raises(ValueError, match=r"pairs must index items 0\.\.3"):
        model.invariants({"w": [0.5, 0.5], "theta": np.full((2, 3), 0.5)}, X4, pairs=[[0, 4]])
