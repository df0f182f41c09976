"""Bayesian Sets and relational Bayesian Sets, the models (Heller 2007, chapters 4 and 6).

The definition (4.2) from marginal likelihoods against brute-force enumeration of the Bernoulli
integral, the PyMC reference score against the closed form within Monte Carlo error, the
relational model's pair features, empirical prior and NUTS reference, and readable errors.
"""

from __future__ import annotations

import arviz as az
import numpy as np
import pytest
import scipy.sparse as sp
from scipy import integrate
from scipy.special import gammaln

from latentzoo.data import Features
from latentzoo.models import BayesianSets, RelationalBayesianSets, conjugate
from latentzoo.models.bayesian_sets import check_query, logistic_map, pair_features

SEEDS = [0, 1, 2]


def binary_data(rng, n=12, d=5):
    probs = rng.uniform(0.1, 0.9, size=(2, d))
    groups = rng.integers(2, size=n)
    return (rng.random((n, d)) < probs[groups]).astype(float)


# ------------------------------------------------------------------ the definition (4.2)
@pytest.mark.parametrize("seed", SEEDS)
def test_log_score_is_the_bernoulli_integral(seed):
    """(4.1) by numerical integration over each theta_j of the Beta prior, feature by feature."""
    rng = np.random.default_rng(seed)
    X = binary_data(rng, n=6, d=3)
    comp = conjugate.BetaBernoulli(
        a=tuple(rng.uniform(0.3, 2.0, 3)), b=tuple(rng.uniform(0.3, 2.0, 3))
    )
    query = rng.choice(6, size=2, replace=False)
    got = BayesianSets(component=comp).log_score(X, query)
    a, b = np.array(comp.a), np.array(comp.b)
    xq = X[query]
    for i in range(X.shape[0]):
        total = 0.0
        for j in range(3):

            def lik(t, rows, j=j):
                return np.prod(t ** rows[:, j] * (1 - t) ** (1 - rows[:, j]))

            def beta(t, j=j):
                return np.exp(
                    (a[j] - 1) * np.log(t)
                    + (b[j] - 1) * np.log1p(-t)
                    - (gammaln(a[j]) + gammaln(b[j]) - gammaln(a[j] + b[j]))
                )

            both = np.vstack([xq, X[i : i + 1]])
            p_joint = integrate.quad(lambda t, r=both: lik(t, r) * beta(t), 0, 1)[0]
            p_x = integrate.quad(lambda t, r=X[i : i + 1]: lik(t, r) * beta(t), 0, 1)[0]
            p_q = integrate.quad(lambda t, r=xq: lik(t, r) * beta(t), 0, 1)[0]
            total += np.log(p_joint) - np.log(p_x) - np.log(p_q)
        assert got[i] == pytest.approx(total, abs=1e-6)


def test_log_score_uses_the_empirical_prior_by_default():
    rng = np.random.default_rng(3)
    X = binary_data(rng)
    model = BayesianSets(scale=3.0)
    prior = conjugate.BetaBernoulli.from_data(X, 3.0)
    np.testing.assert_allclose(
        model.log_score(X, [1, 4]), BayesianSets(component=prior).log_score(X, [1, 4])
    )
    assert model.prior(X) == prior


def test_log_score_same_on_sparse_and_dense():
    rng = np.random.default_rng(4)
    X = binary_data(rng, n=30, d=8)
    model = BayesianSets()
    np.testing.assert_allclose(
        model.log_score(sp.csr_matrix(X), [0, 5, 7]), model.log_score(X, [0, 5, 7]), rtol=1e-12
    )


def test_query_by_item_names():
    X = Features([[1, 0], [1, 0], [0, 1]], item_names=["x", "y", "z"])
    model = BayesianSets()
    np.testing.assert_array_equal(model.log_score(X, ["y"]), model.log_score(X, [1]))
    np.testing.assert_array_equal(check_query(["z", 0, "y"], 3, X.item_names), [2, 0, 1])
    with pytest.raises(ValueError, match=r"query\[1\] = 'w' is not the name of an item"):
        check_query(["z", "w"], 3, X.item_names)
    with pytest.raises(ValueError, match=r"query\[2\] = 'z' repeats query\[0\]"):
        check_query(["z", 0, "z"], 3, X.item_names)
    with pytest.raises(ValueError, match=r"query\[1\] = 2 repeats query\[0\]"):
        check_query(["z", 2], 3, X.item_names)


# ------------------------------------------------------------------ PyMC reference
def _mc_agrees(model, data, query, seed, draws=1000):
    import pymc as pm

    with model.pymc_model(data, query):
        idata = pm.sample(
            draws=draws,
            tune=500,
            chains=2,
            cores=1,
            random_seed=seed,
            progressbar=False,
            compute_convergence_checks=False,
        )
    post = idata.posterior
    comp = model.prior(data)
    params = {name: post[name].values for name in comp.param_names}
    mc = model.monte_carlo_log_score(params, data)
    exact = model.log_score(data, query)
    # Monte Carlo error of log(mean_s w_s) by the delta method with the chains' ESS
    n_chain, n_draw = post.sizes["chain"], post.sizes["draw"]
    flat = {k: v.reshape((n_chain * n_draw,) + v.shape[3:]) for k, v in params.items()}
    X = np.asarray(Features(data).X) if not isinstance(data, Features) else data.X
    ll = comp.log_likelihood(flat, X)  # (N, S)
    w = np.exp(ll - ll.max(axis=1, keepdims=True))
    for i in range(X.shape[0]):
        wi = w[i].reshape(n_chain, n_draw)
        ess = az.ess(wi)
        se = wi.std() / (wi.mean() * np.sqrt(ess))
        assert abs(mc[i] - exact[i]) < 5.0 * se + 1e-3, (i, mc[i], exact[i], se)


@pytest.mark.parametrize("seed", [0])
def test_pymc_reference_agrees_with_closed_form_beta_bernoulli(seed):
    rng = np.random.default_rng(seed)
    X = binary_data(rng, n=10, d=4)
    _mc_agrees(BayesianSets(), X, [0, 1, 2], seed, draws=2000)


def _normal_gamma_case(seed):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(8, 3)) + rng.integers(2, size=(8, 1))
    model = BayesianSets(component=conjugate.NormalGamma(mu0=0.0, kappa0=0.5, a0=2.0, b0=2.0))
    _mc_agrees(model, X, [0, 1, 2], seed, draws=2000)


def test_pymc_reference_agrees_with_closed_form_normal_gamma():
    _normal_gamma_case(1)


@pytest.mark.slow
@pytest.mark.parametrize("seed", [2, 3])
def test_pymc_reference_agrees_more_seeds_and_dirichlet_multinomial(seed):
    _normal_gamma_case(seed)
    rng = np.random.default_rng(seed)
    X = rng.poisson(1.5, size=(8, 3)).astype(float)
    _mc_agrees(
        BayesianSets(component=conjugate.DirichletMultinomial(eta=0.7)), X, [0, 1], seed, 2000
    )


def test_pymc_model_names_and_tempering():
    X = np.eye(3)
    model = BayesianSets().pymc_model(X, [0, 1])
    assert {"theta", "query_loglik"} <= set(model.named_vars)
    assert model.named_vars["theta"].eval().shape == (1, 3)
    niw = BayesianSets(component=conjugate.NormalInverseWishart()).pymc_model(np.eye(3) + 0.5, [0])
    assert {"mu", "cov"} <= set(niw.named_vars)
    with pytest.raises(ValueError, match="temperature"):
        BayesianSets().pymc_model(X, [0], temperature=0.0)


def test_monte_carlo_log_score_at_a_point_mass():
    """With every draw at theta, the estimate is log p(x | theta) - log p(x) exactly."""
    X = np.array([[1.0, 0.0, 1.0], [0.0, 0.0, 1.0]])
    comp = conjugate.BetaBernoulli(a=1.0, b=2.0)
    theta = np.array([0.2, 0.5, 0.9])
    got = BayesianSets(component=comp).monte_carlo_log_score({"theta": np.tile(theta, (5, 1))}, X)
    loglik = (X * np.log(theta) + (1 - X) * np.log1p(-theta)).sum(axis=1)
    log_px = (X * np.log(1 / 3) + (1 - X) * np.log(2 / 3)).sum(axis=1)
    np.testing.assert_allclose(got, loglik - log_px)
    with pytest.raises(ValueError, match="params lacks 'theta'"):
        BayesianSets(component=comp).monte_carlo_log_score({"mu": theta[None]}, X)


# ------------------------------------------------------------------ errors
@pytest.mark.parametrize(
    ("query", "message"),
    [
        ([], "query is empty"),
        ([0, 9], r"query\[1\] = 9 is out of range: the data have 4 items"),
        ([-1], r"query\[0\] = -1 is out of range"),
        ([2, 1, 2], r"query\[2\] = 2 repeats query\[0\]"),
        ([0.5], r"query\[0\] = 0.5 is not an item position"),
        ([True], r"query\[0\] = True is not an item position"),
        (["nope"], r"query\[0\] = 'nope' is not the name of an item"),
        ([[0, 1]], "query must be a flat sequence"),
        (np.array([1, 7]), r"query\[1\] = 7 is out of range"),
        (np.array([3, 3]), r"query\[1\] = 3 repeats query\[0\]"),
        (["a", "b"], r"query\[0\] = 'a' is not the name of an item"),
    ],
)
def test_bad_queries_name_the_entry(query, message):
    with pytest.raises(ValueError, match=message):
        BayesianSets().log_score(np.eye(4), query)


def test_check_query_accepts_integer_floats_and_scalars():
    np.testing.assert_array_equal(check_query([2.0, 0], 3), [2, 0])
    np.testing.assert_array_equal(check_query(1, 3), [1])


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"scale": 0.0}, "scale must be a positive finite number"),
        ({"scale": "2"}, "scale must be a positive finite number"),
        ({"component": 3}, "component must be None"),
        ({"component": "gauss"}, "unknown component 'gauss'"),
    ],
)
def test_bad_hyperparameters(kwargs, message):
    with pytest.raises(ValueError, match=message):
        BayesianSets(**kwargs)


def test_bad_data_named():
    with pytest.raises(ValueError, match=r"X must be binary \(0 or 1\).*got counts"):
        BayesianSets().log_score([[0, 2], [1, 0]], [0])
    with pytest.raises(ValueError, match=r"X\[0, 1\] is nan"):
        BayesianSets().log_score([[0, np.nan]], [0])
    with pytest.raises(ValueError, match="non-negative integer counts"):
        BayesianSets(component=conjugate.DirichletMultinomial()).log_score([[0.5, 1.0]], [0])
    with pytest.raises(ValueError, match="a has 3 entries but the data have 2 features"):
        BayesianSets(component=conjugate.BetaBernoulli(a=(1.0, 1.0, 1.0))).log_score([[0, 1]], [0])
    assert BayesianSets(component="normal_gamma").component == conjugate.NormalGamma()


# ------------------------------------------------------------------ relational model
def test_pair_features_layout():
    A = np.array([[3.0, 4.0], [0.0, 0.0]])
    B = np.array([[1.0, 0.0], [0.6, 0.8]])
    X = pair_features(A, B, [[0, 1], [1, 0]])
    assert X.shape == (2, 7)
    np.testing.assert_allclose(X[0], [3, 4, 0.6, 0.8, 3 * 0.6 / 5, 4 * 0.8 / 5, 1])
    # a zero object has no direction: its cosine terms are 0, not NaN
    np.testing.assert_allclose(X[1], [0, 0, 1, 0, 0, 0, 1])
    # the cosine of the two objects is the sum of the Z terms
    assert X[0, 4:6].sum() == pytest.approx(A[0] @ B[1] / 5.0)


def test_empirical_prior_follows_section_6_3():
    rng = np.random.default_rng(0)
    A = rng.integers(0, 2, size=(10, 3)).astype(float)
    links = (rng.random((10, 10)) < 0.2).astype(float)
    model = RelationalBayesianSets()
    mean, precision = model.empirical_prior(A, A, links, random_state=1)
    pairs = model.linked_pairs(sp.csr_matrix(links))
    X_l = pair_features(A, A, pairs)
    T = X_l.T @ X_l / len(pairs)
    c = 2.0 * len(pairs)  # the thesis: twice the number of relations
    np.testing.assert_allclose(precision, c * T, rtol=1e-6, atol=1e-6 * c)
    np.testing.assert_allclose(
        RelationalBayesianSets(smoothing=3.0).empirical_prior(A, A, links, 1)[1],
        3.0 * T,
        rtol=1e-6,
        atol=1e-5,
    )
    # the mean is the (ridged) logistic fit on all links and as many random non-links
    again, _ = model.empirical_prior(A, A, links, random_state=1)
    np.testing.assert_array_equal(mean, again)


def test_logistic_map_solves_the_penalised_score_equation():
    rng = np.random.default_rng(2)
    X = np.column_stack([np.ones(200), rng.normal(size=(200, 2))])
    y = (rng.random(200) < 1 / (1 + np.exp(-X @ [0.5, -1.0, 2.0]))).astype(float)
    w = logistic_map(X, y, ridge=0.1)
    p = 1 / (1 + np.exp(-X @ w))
    np.testing.assert_allclose(X.T @ (y - p) - 0.1 * w, 0.0, atol=1e-8)
    # separable data keep a finite estimate thanks to the ridge
    w_sep = logistic_map(np.array([[1.0, -1.0], [1.0, 1.0]]), np.array([0.0, 1.0]), 1e-2)
    assert np.all(np.isfinite(w_sep))


def test_relational_pymc_model():
    model = RelationalBayesianSets().pymc_model(
        np.ones((3, 2)), np.zeros(2), np.eye(2), labels=[1, 0, 1]
    )
    assert {"theta", "link_loglik"} <= set(model.named_vars)
    logp = model.compile_logp()
    point = {"theta": np.array([0.5, -0.25])}
    a = 0.25
    expected = (
        -np.log(2 * np.pi)
        - 0.5 * (0.5**2 + 0.25**2)
        + 2 * -np.log1p(np.exp(-a))
        + -np.log1p(np.exp(a))
    )
    assert logp(point) == pytest.approx(expected)


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda m: m.check_data(np.eye(2), np.ones((2, 3)), np.eye(2)), "B has 3 features"),
        (lambda m: m.check_data(np.eye(2), np.eye(2), np.eye(3)), r"links must have shape"),
        (lambda m: m.check_data(np.eye(2), np.eye(2), np.zeros((2, 2))), "no linked pair"),
        (lambda m: m.check_data([[np.inf, 0]], np.eye(2), [[1, 0]]), r"A\[0, 0\] is inf"),
        (
            lambda m: m.check_query([[0, 5]], sp.csr_matrix(np.eye(2))),
            r"query\[0\] = \(0, 5\): B has 2 objects",
        ),
        (
            lambda m: m.check_query([[0, 0], [0, 0]], sp.csr_matrix(np.eye(2))),
            r"query\[1\] = \(0, 0\) repeats query\[0\]",
        ),
        (lambda m: m.check_query([], sp.csr_matrix(np.eye(2))), "must have shape"),
        (lambda m: m.pymc_model(np.ones((2, 2)), np.zeros(3), np.eye(2)), "prior_mean"),
        (
            lambda m: m.pymc_model(np.ones((2, 2)), np.zeros(2), -np.eye(2)),
            "prior_cov must be positive definite",
        ),
        (
            lambda m: m.pymc_model(np.ones((2, 2)), np.zeros(2), np.eye(2), labels=[1, 2]),
            r"labels\[1\] = 2.0 is not 0 or 1",
        ),
    ],
)
def test_relational_bad_input(call, message):
    with pytest.raises(ValueError, match=message):
        call(RelationalBayesianSets())


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"smoothing": -1.0}, "smoothing must be a positive finite number"),
        ({"n_unlinked": 0}, "n_unlinked must be an integer >= 1"),
        ({"ridge": 0.0}, "ridge must be a positive finite number"),
    ],
)
def test_relational_bad_hyperparameters(kwargs, message):
    with pytest.raises(ValueError, match=message):
        RelationalBayesianSets(**kwargs)
