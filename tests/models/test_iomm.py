"""The IOMM (Heller 2007, chapter 7): likelihood (7.3)-(7.7) and Gaussian (7.5), prior, simulation,
checks."""

import itertools

import numpy as np
import pytest
from scipy.special import logit

from latentzoo.models.ibp import IndianBuffetProcess
from latentzoo.models.iomm import (
    OverlappingMixture,
    bernoulli_log_likelihood,
    diagonal_gaussian_log_likelihood,
    gaussian_log_likelihood,
    product_probabilities,
)


def brute_force_log_likelihood(Z, theta, X):
    """(7.2) literally: the product of the item's clusters' Bernoulli densities, normalised by
    summing that product over all 2^D binary vectors."""
    Z, theta, X = np.asarray(Z), np.asarray(theta), np.asarray(X)
    n_features = theta.shape[1]
    out = []
    for z, x in zip(Z, X, strict=True):

        def unnormalised(vector, z=z):
            density = 1.0
            for k in np.flatnonzero(z):
                density *= np.prod(theta[k] ** vector * (1 - theta[k]) ** (1 - vector))
            return density

        c = sum(unnormalised(np.array(v)) for v in itertools.product((0, 1), repeat=n_features))
        out.append(np.log(unnormalised(x) / c))
    return np.array(out)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_likelihood_equals_brute_force_normalised_product(seed):
    rng = np.random.default_rng(seed)
    n_items, n_columns, n_features = 6, 3, 3
    Z = rng.integers(0, 2, size=(n_items, n_columns))
    Z[0] = 0  # an item in no cluster: every feature a fair coin
    theta = rng.uniform(0.05, 0.95, size=(n_columns, n_features))
    X = rng.integers(0, 2, size=(n_items, n_features))
    expected = brute_force_log_likelihood(Z, theta, X)
    np.testing.assert_allclose(bernoulli_log_likelihood(Z, theta, X), expected, rtol=1e-12)
    assert np.isclose(expected[0], n_features * np.log(0.5))


def test_product_probabilities_are_equation_7_7():
    rng = np.random.default_rng(3)
    Z = rng.integers(0, 2, size=(5, 4))
    theta = rng.uniform(0.05, 0.95, size=(4, 2))
    on = np.prod(np.where(Z[:, :, None] == 1, theta[None], 1.0), axis=1)
    off = np.prod(np.where(Z[:, :, None] == 1, 1 - theta[None], 1.0), axis=1)
    np.testing.assert_allclose(product_probabilities(Z, theta), on / (on + off), rtol=1e-12)


def test_ibp_log_prior_is_ibp_matrix_probability_plus_beta():
    model = OverlappingMixture(alpha=1.3, a=2.0, b=3.0)
    Z = np.array([[1, 0, 0], [1, 1, 0]])
    theta = np.array([[0.2, 0.4], [0.5, 0.6], [0.9, 0.9]])  # the empty column is ignored
    from scipy.stats import beta

    expected = IndianBuffetProcess(1.3).log_prob_matrix(Z) + beta(2.0, 3.0).logpdf(theta[:2]).sum()
    assert np.isclose(model.ibp_log_prior({"Z": Z, "theta": theta}), expected)


def test_invariants_are_label_free():
    model = OverlappingMixture()
    Z = np.array([[1, 0, 1], [0, 1, 1], [1, 1, 0]])
    permuted = Z[:, [2, 0, 1]]
    padded = np.hstack([permuted, np.zeros((3, 2), dtype=int)])
    for other in (permuted, padded):
        np.testing.assert_array_equal(
            model.invariants({"Z": other})["U"], model.invariants({"Z": Z})["U"]
        )
    assert model.invariants({"Z": padded})["n_clusters"] == 3


def test_simulate_shapes_and_truth_consistency():
    model = OverlappingMixture(alpha=2.0, a=0.5, b=0.5)
    data, truth = model.simulate(4, n_items=30, n_features=7)
    assert data.shape == (30, 7) and data.kind == "binary"
    assert truth["Z"].shape == (30, truth["theta"].shape[0])
    assert np.all((truth["theta"] > 0) & (truth["theta"] < 1))
    np.testing.assert_array_equal(truth["U"], truth["Z"].astype(int) @ truth["Z"].T)
    assert np.all(np.isfinite(model.log_likelihood(truth, data)))
    again, _ = model.simulate(4, n_items=30, n_features=7)
    np.testing.assert_array_equal(again.X, data.X)


def test_simulated_features_follow_the_product_probabilities():
    """Many items of one fixed assignment: feature frequencies within 4 standard errors of (7.7)."""
    rng = np.random.default_rng(5)
    Z = np.tile([[1, 1]], (4000, 1))
    theta = np.array([[0.7, 0.2], [0.6, 0.3]])
    p = product_probabilities(Z[:1], theta)[0]
    X = rng.random((4000, 2)) < p
    se = np.sqrt(p * (1 - p) / 4000)
    assert np.all(np.abs(X.mean(axis=0) - p) < 4 * se)


@pytest.mark.parametrize(
    "X, message",
    [
        ([[0, 2], [1, 0]], r"X\[0, 1\] = 2 is not binary"),
        ([[0, 1], [0.5, 0]], r"X\[1, 0\] = 0.5 is not binary"),
        ([[0, np.nan]], r"X\[0, 1\] is nan"),
        ([1, 0], "2-D binary array"),
    ],
)
def test_non_binary_data_refused_by_entry(X, message):
    with pytest.raises(ValueError, match=message):
        OverlappingMixture().check_data(X)


@pytest.mark.parametrize("name", ["alpha", "a", "b"])
@pytest.mark.parametrize("value", [0.0, -1.0, np.inf, float("nan"), "1"])
def test_hyperparameters_must_be_positive(name, value):
    with pytest.raises(ValueError, match=f"{name} must be a positive finite number"):
        OverlappingMixture(**{name: value})


def test_bad_parameters_refused():
    with pytest.raises(ValueError, match=r"theta\[0, 1\] = 1.0 is not in the open interval"):
        bernoulli_log_likelihood([[1]], [[0.5, 1.0]], [[0, 1]])
    with pytest.raises(ValueError, match="theta must have shape"):
        bernoulli_log_likelihood([[1, 0]], [[0.5, 0.5]], [[0, 1]])
    with pytest.raises(ValueError, match="Z has 2 rows"):
        bernoulli_log_likelihood([[1], [0]], [[0.5, 0.5]], [[0, 1]])
    with pytest.raises(ValueError, match=r"Z\[0, 0\] = 3 is not binary"):
        bernoulli_log_likelihood([[3]], [[0.5, 0.5]], [[0, 1]])


@pytest.mark.slow  # the registry's pymc:density check runs the same comparison by default
def test_pymc_reference_density_is_the_finite_model():
    """The PyMC declaration's log density (no Jacobians) equals finite_log_joint at random points,
    and tempering divides the likelihood only."""
    model = OverlappingMixture(alpha=1.7, a=0.8, b=1.2)
    rng = np.random.default_rng(0)
    X = rng.integers(0, 2, size=(4, 3))
    pymc_model = model.pymc_model(X, truncation=3)
    logp = pymc_model.compile_logp(jacobian=False)
    hot = model.pymc_model(X, truncation=3, temperature=2.0).compile_logp(jacobian=False)
    for _ in range(3):
        params = {
            "pi": rng.uniform(0.05, 0.95, 3),
            "Z": rng.integers(0, 2, size=(4, 3)),
            "theta": rng.uniform(0.05, 0.95, size=(3, 3)),
        }
        point = {
            "pi_logodds__": logit(params["pi"]),
            "Z": params["Z"],
            "theta_logodds__": logit(params["theta"]),
        }
        expected = model.finite_log_joint(params, X)
        assert np.isclose(logp(point), expected)
        loglik = bernoulli_log_likelihood(params["Z"], params["theta"], X).sum()
        assert np.isclose(hot(point), expected - loglik / 2)


def test_pymc_reference_assigns_binary_gibbs_to_Z():
    from pymc.sampling.mcmc import assign_step_methods

    pymc_model = OverlappingMixture().pymc_model([[0, 1], [1, 1]], truncation=2)
    with pymc_model:
        _, steps = assign_step_methods(pymc_model)
    assert {type_.__name__: [v.name for v in variables] for type_, variables in steps.items()} == {
        "NUTS": ["pi_logodds__", "theta_logodds__"],
        "BinaryGibbsMetropolis": ["Z"],
    }


def test_gaussian_product_equals_brute_force_normalised_product_in_1d():
    """(7.5) against the literal (7.2) on a grid: the product of the item's clusters' Gaussian
    densities, normalised by its numerical integral."""
    from scipy.stats import norm

    from latentzoo.models.iomm import gaussian_log_likelihood

    mu = np.array([[-1.0], [1.0], [0.3]])
    cov = np.array([[[0.2]], [[0.6]], [[1.5]]])
    Z = np.array([[1, 0, 0], [1, 1, 0], [1, 1, 1], [0, 1, 1]])
    X = np.array([[0.1], [-0.4], [0.7], [1.2]])
    grid = np.linspace(-12, 12, 200001)
    for z, x in zip(Z, X, strict=True):
        members = np.flatnonzero(z)

        def product(t, members=members):
            return np.prod([norm(mu[k, 0], np.sqrt(cov[k, 0, 0])).pdf(t) for k in members], axis=0)

        c = np.trapezoid(product(grid), grid)
        expected = np.log(product(x[0]) / c)
        got = gaussian_log_likelihood(z[None], mu, cov, x[None])[0]
        assert np.isclose(got, expected, rtol=1e-8)


def test_gaussian_likelihood_matches_multivariate_normal_of_product_parameters():
    from scipy.stats import multivariate_normal

    from latentzoo.models.iomm import gaussian_log_likelihood, gaussian_product_parameters

    rng = np.random.default_rng(4)
    K, D = 3, 3
    mu = rng.normal(size=(K, D))
    A = rng.normal(size=(K, D, D))
    cov = A @ A.transpose(0, 2, 1) + np.eye(D)
    Z = np.array([[1, 0, 0], [1, 1, 0], [0, 1, 1], [1, 1, 1]])
    X = rng.normal(size=(4, D))
    mean, covariance = gaussian_product_parameters(Z, mu, cov)
    precisions = np.linalg.inv(cov)
    for i in range(4):
        precision = sum(precisions[k] for k in np.flatnonzero(Z[i]))
        np.testing.assert_allclose(np.linalg.inv(covariance[i]), precision, rtol=1e-10)
        expected = multivariate_normal(mean[i], covariance[i]).logpdf(X[i])
        assert np.isclose(gaussian_log_likelihood(Z[i : i + 1], mu, cov, X[i : i + 1])[0], expected)
    with pytest.raises(ValueError, match=r"Z\[1\] is all zeros"):
        gaussian_log_likelihood([[1], [0]], mu[:1], cov[:1], X[:2])
    with pytest.raises(ValueError, match=r"cov\[0\] is not symmetric positive definite"):
        gaussian_log_likelihood([[1]], [[0.0]], [[[-1.0]]], [[0.0]])
    with pytest.raises(ValueError, match=r"X\[0, 0\] is nan"):
        gaussian_log_likelihood([[1]], [[0.0]], [[[1.0]]], [[np.nan]])


@pytest.mark.parametrize("value", [0, -2, 1.5, "3"])
def test_truncation_must_be_a_positive_integer(value):
    with pytest.raises(ValueError, match="truncation must be an integer >= 1"):
        OverlappingMixture(truncation=value)


def test_real_valued_features_refused_naming_the_kind():
    from latentzoo.data import Features

    with pytest.raises(ValueError, match="data of kind 'real' do not fit the Bernoulli IOMM"):
        OverlappingMixture().check_data(Features([[0.5, 1.0]]))


def test_log_prior_is_the_pymc_finite_prior():
    """The prior of the PyMC reference's free variables (pi, Z, theta) at the truncation."""
    from scipy import stats

    model = OverlappingMixture(alpha=1.5, a=2.0, b=0.7, truncation=3)
    data, _ = model.simulate(0, n_items=5, n_features=2)
    params = model.prior_draw(data, np.random.default_rng(1))
    assert params["Z"].shape == (5, 3) and params["theta"].shape == (3, 2)
    pi, Z, theta = params["pi"], params["Z"], params["theta"]
    expected = (
        stats.beta(0.5, 1.0).logpdf(pi).sum()
        + stats.bernoulli(pi[None, :]).logpmf(Z).sum()
        + stats.beta(2.0, 0.7).logpdf(theta).sum()
    )
    assert np.isclose(model.log_prior(params), expected)


def test_replicate_drops_padding_and_has_the_model_expectation():
    """Padded columns (-1) are ignored; the mean of many replicates' feature counts is
    sum_i sigmoid(eta_i) within Monte Carlo error."""
    model = OverlappingMixture()
    Z = np.array([[1, 0, -1], [1, 1, -1], [0, 1, -1]])
    theta = np.array([[0.9, 0.2], [0.3, 0.6], [-1.0, -1.0]])
    X = np.zeros((3, 2))
    rng = np.random.default_rng(0)
    counts = np.stack(
        [
            model.replicate({"Z": Z, "theta": theta}, X, rng)["feature_counts"][1]
            for _ in range(4000)
        ]
    )
    expected = product_probabilities(Z[:, :2], theta[:2]).sum(axis=0)
    error = counts.std(axis=0) / np.sqrt(len(counts))
    assert np.all(np.abs(counts.mean(axis=0) - expected) <= 5 * error)
    assert model.replicate_names(["Z", "theta"]) and not model.replicate_names(["Z"])


# --------------------------------------------------------------------- Gaussian clusters (7.5)
GAUSSIAN = OverlappingMixture(alpha=1.5, distribution="gaussian", base_precision=0.3, mu0=0.5)


def test_diagonal_gaussian_likelihood_is_the_full_product_with_the_base_density():
    """The model's per-feature natural parameters against (7.5) with full (here diagonal)
    covariances, the base density N(mu0, 1 / lambda0) an extra cluster every item belongs to;
    an item in no cluster gets the base density."""
    rng = np.random.default_rng(4)
    Z = np.array([[1, 0, 1], [0, 0, 0], [1, 1, 1], [0, 1, 0]])
    mu = rng.normal(size=(3, 2))
    tau = rng.gamma(2.0, size=(3, 2))
    X = rng.normal(size=(4, 2))
    got = diagonal_gaussian_log_likelihood(Z, mu, tau, X, 0.3, 0.5)
    with_base = np.hstack([Z, np.ones((4, 1), dtype=int)])
    mu_all = np.vstack([mu, np.full((1, 2), 0.5)])
    cov_all = np.stack([np.diag(1 / t) for t in np.vstack([tau, np.full((1, 2), 0.3)])])
    np.testing.assert_allclose(got, gaussian_log_likelihood(with_base, mu_all, cov_all, X))
    params = {"Z": Z, "mu": mu, "tau": tau}
    np.testing.assert_allclose(GAUSSIAN.log_likelihood(params, X), got)


def test_gaussian_cluster_prior_is_normal_gamma():
    from scipy import stats

    mu, tau = np.array([[0.2, -1.0]]), np.array([[1.5, 0.4]])
    expected = stats.gamma(2.0, scale=1.0).logpdf(tau) + stats.norm(
        0.5, 1 / np.sqrt(0.1 * tau)
    ).logpdf(mu)
    assert np.isclose(GAUSSIAN.log_cluster_prior({"mu": mu, "tau": tau}), expected.sum())
    Z = np.array([[1, 0], [1, 0]])  # the empty second column's parameters are ignored
    both = {"Z": Z, "mu": np.vstack([mu, mu]), "tau": np.vstack([tau, tau])}
    prior_Z = IndianBuffetProcess(1.5).log_prob_matrix(Z)
    assert np.isclose(GAUSSIAN.ibp_log_prior(both), prior_Z + expected.sum())


def test_gaussian_simulate_replicate_and_invariants():
    data, truth = GAUSSIAN.simulate(2, n_items=30, n_features=3)
    assert data.kind == "real" and sorted(truth) == ["U", "Z", "mu", "tau"]
    assert truth["mu"].shape == truth["tau"].shape == (truth["Z"].shape[1], 3)
    assert GAUSSIAN.log_likelihood(truth, data).shape == (30,)
    assert GAUSSIAN.param_names == ("Z", "mu", "tau") and GAUSSIAN.replicate_names(truth)
    out = GAUSSIAN.replicate(truth, data, np.random.default_rng(0))
    assert out["x"][1].shape == (30, 3) and out["feature_means"][1].shape == (3,)
    invariants = GAUSSIAN.invariants(truth, data)
    np.testing.assert_array_equal(invariants["U"], truth["U"])
    assert np.isfinite(invariants["loglik"])


@pytest.mark.parametrize(
    ("X", "message"),
    [
        ([[0.5, float("nan")]], r"X\[0, 1\] is nan"),
        ([[0.5, float("inf")]], r"X\[0, 1\] is inf"),
        ([[0, 1], [1, 1]], "binary data .* use the Bernoulli IOMM"),
    ],
)
def test_gaussian_clusters_refuse_non_finite_and_binary_data(X, message):
    with pytest.raises(ValueError, match=message):
        GAUSSIAN.check_data(X)


def test_gaussian_options_are_checked():
    with pytest.raises(ValueError, match="distribution must be one of"):
        OverlappingMixture(distribution="poisson")
    with pytest.raises(ValueError, match="mu0 must be a finite number"):
        OverlappingMixture(mu0=float("nan"))
    with pytest.raises(ValueError, match="base_precision must be a positive"):
        OverlappingMixture(base_precision=0.0)
    with pytest.raises(ValueError, match=r"mu must have shape \(K, D\) with K = 2"):
        GAUSSIAN.ibp_log_prior({"Z": [[1, 1]], "mu": [[0.0]], "tau": [[1.0]]})
    with pytest.raises(ValueError, match=r"tau\[0, 1\] = -1.0 is not a positive"):
        diagonal_gaussian_log_likelihood([[1]], [[0.0, 0.0]], [[1.0, -1.0]], [[0.0, 0.0]], 1, 0)


@pytest.mark.slow  # compiling the PyMC graph takes seconds
def test_gaussian_pymc_reference_density_is_the_finite_model():
    """The Gaussian clusters' PyMC declaration's log density (no Jacobians) equals
    finite_log_joint at random points."""
    rng = np.random.default_rng(1)
    X = rng.normal(size=(4, 2))
    logp = GAUSSIAN.pymc_model(X, truncation=3).compile_logp(jacobian=False)
    for _ in range(3):
        params = {
            "pi": rng.uniform(0.05, 0.95, 3),
            "Z": rng.integers(0, 2, size=(4, 3)),
            "mu": rng.normal(size=(3, 2)),
            "tau": rng.gamma(2.0, size=(3, 2)),
        }
        point = {
            "pi_logodds__": logit(params["pi"]),
            "Z": params["Z"],
            "mu": params["mu"],
            "tau_log__": np.log(params["tau"]),
        }
        assert np.isclose(logp(point), GAUSSIAN.finite_log_joint(params, X))
