"""Fast Bayesian Sets (Heller 2007, chapters 4-6): the one-product closed form (4.11)-(4.15)
against marginal likelihoods of the conjugate module, the ranking and its explanation, the
skewness binarisation of section 5.2.2, and Jaakkola-Jordan variational logistic regression against
PyMC NUTS and the true evidence."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp
from scipy.special import logsumexp
from scipy.stats import rankdata

from latentzoo.data import Features
from latentzoo.inference.bayesian_sets import (
    BayesianSetsIndex,
    analogical_scores,
    bayesian_sets,
    binarize,
    logistic_log_predictive,
    query_weights,
    relational_bayesian_sets,
    skewness_thresholds,
    top_k,
    variational_logistic,
)
from latentzoo.models import BayesianSets, RelationalBayesianSets, conjugate

SEEDS = [0, 1, 2]


def sparse_binary(rng, n=40, d=30, density=0.15):
    X = (rng.random((n, d)) < density * rng.uniform(0.2, 2.0, size=d)).astype(float)
    return X


def marginal_ratio(comp, X, query):
    """``log p(x, Q) - log p(x) - log p(Q)`` per item straight from the conjugate module."""
    X = np.asarray(X.toarray() if sp.issparse(X) else X, dtype=float)
    q = np.asarray(query)
    n = X.shape[0]
    xq = X[q]
    log_pq = comp.log_marginal(comp.stats(xq, np.zeros(q.size, dtype=int), 1))[0]
    log_px = comp.log_marginal(comp.stats(X, np.arange(n), n))
    stacked = np.vstack([X, np.tile(xq, (n, 1))])
    labels = np.concatenate([np.arange(n), np.repeat(np.arange(n), q.size)])
    log_pxq = comp.log_marginal(comp.stats(stacked, labels, n))
    return log_pxq - log_px - log_pq


# ------------------------------------------------------------------ (4.11)-(4.15)
@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("sparse", [False, True])
def test_one_product_equals_marginal_likelihood_ratio(seed, sparse):
    rng = np.random.default_rng(seed)
    X = sparse_binary(rng)
    query = rng.choice(X.shape[0], size=int(rng.integers(1, 6)), replace=False)
    data = sp.csr_matrix(X) if sparse else X
    scale = float(rng.uniform(0.5, 5.0))
    result = bayesian_sets(data, query, BayesianSets(scale=scale))
    comp = conjugate.BetaBernoulli.from_data(X, scale)
    np.testing.assert_allclose(result.scores, marginal_ratio(comp, X, query), atol=1e-10)


@pytest.mark.parametrize("scale", [0.7, 2.0, 9.0])
def test_empirical_prior_scale_kappa(scale):
    rng = np.random.default_rng(5)
    X = sparse_binary(rng)
    got = bayesian_sets(sp.csr_matrix(X), [3, 8], BayesianSets(scale=scale)).scores
    comp = conjugate.BetaBernoulli.from_data(X, scale)
    np.testing.assert_allclose(got, marginal_ratio(comp, X, [3, 8]), atol=1e-10)


def test_explicit_beta_prior_and_product_form_4_11():
    rng = np.random.default_rng(7)
    X = sparse_binary(rng, n=15, d=6)
    a = rng.uniform(0.2, 3.0, 6)
    b = rng.uniform(0.2, 3.0, 6)
    comp = conjugate.BetaBernoulli(a=tuple(a), b=tuple(b))
    query = [0, 4, 9]
    got = bayesian_sets(X, query, BayesianSets(component=comp)).scores
    n = len(query)
    a_t = a + X[query].sum(axis=0)
    b_t = b + n - X[query].sum(axis=0)
    # (4.11): prod_j (a+b)/(a+b+N) (a~/a)^x (b~/b)^(1-x)
    product = np.prod((a + b) / (a + b + n) * (a_t / a) ** X * (b_t / b) ** (1 - X), axis=1)
    np.testing.assert_allclose(got, np.log(product), rtol=1e-12)
    np.testing.assert_allclose(got, marginal_ratio(comp, X, query), atol=1e-10)


def test_query_weights_are_4_13_and_4_14():
    a = np.array([0.5, 2.0, 1.0])
    b = np.array([1.5, 0.5, 3.0])
    sums = np.array([2.0, 0.0, 1.0])
    c, q = query_weights(conjugate.BetaBernoulli(a=tuple(a), b=tuple(b)), 3, sums, 2)
    a_t, b_t = a + sums, b + 2 - sums
    np.testing.assert_allclose(q, np.log(a_t) - np.log(a) - np.log(b_t) + np.log(b))
    expected_c = np.sum(np.log(a + b) - np.log(a + b + 2) + np.log(b_t) - np.log(b))
    assert c == pytest.approx(expected_c)


def test_implicit_feature_selection_4_17():
    """A feature frequent in the query and rare in the data gets the largest weight."""
    rng = np.random.default_rng(11)
    X = (rng.random((200, 4)) < [0.02, 0.5, 0.5, 0.02]).astype(float)
    X[:5, 0] = 1.0  # the query's shared, rare feature
    X[:5, 1] = 1.0  # shared but common
    X[:5, 3] = 0.0  # rare and absent from the query
    index = BayesianSetsIndex(sp.csr_matrix(X))
    _, q = index.weights(list(range(5)))
    assert q[0] > q[1] > 0 > q[3]
    result = index.query(list(range(5)))
    assert result.strongest_features(0, 2) == ("0", "1")


@pytest.mark.parametrize(
    "comp",
    [
        conjugate.NormalGamma(mu0=0.3, kappa0=0.5, a0=2.0, b0=1.5),
        conjugate.NormalInverseWishart(mu0=0.2, kappa0=0.7, psi0=[[1.0, 0.3], [0.3, 2.0]]),
    ],
    ids=["normal-gamma", "normal-inverse-wishart"],
)
def test_exponential_family_4_18_real(comp):
    rng = np.random.default_rng(13)
    X = rng.normal(size=(25, 2)) + 2.0 * rng.integers(2, size=(25, 1))
    result = bayesian_sets(X, [1, 2, 3], BayesianSets(component=comp))
    np.testing.assert_allclose(result.scores, marginal_ratio(comp, X, [1, 2, 3]), atol=1e-9)
    assert result.weights is None and result.top(3)[0][2] == ()


@pytest.mark.parametrize("sparse", [False, True])
def test_exponential_family_4_18_counts(sparse):
    rng = np.random.default_rng(17)
    X = rng.poisson(0.4, size=(30, 12)).astype(float)
    comp = conjugate.DirichletMultinomial(eta=0.6)
    data = sp.csr_matrix(X) if sparse else X
    got = bayesian_sets(data, [0, 7], BayesianSets(component=comp)).scores
    np.testing.assert_allclose(got, marginal_ratio(comp, X, [0, 7]), atol=1e-9)


def test_model_reference_and_fast_side_agree():
    rng = np.random.default_rng(19)
    X = sparse_binary(rng)
    model = BayesianSets(scale=1.5)
    np.testing.assert_allclose(
        bayesian_sets(sp.csr_matrix(X), [2, 3], model).scores,
        model.log_score(X, [2, 3]),
        atol=1e-10,
    )


# ------------------------------------------------------------------ results
def test_ranking_top_and_names():
    X = Features(
        [[1, 1, 0], [1, 1, 0], [0, 0, 1], [1, 0, 0], [1, 1, 0]],
        item_names=["a", "b", "c", "d", "e"],
        feature_names=["red", "round", "blue"],
    )
    result = bayesian_sets(X, ["a"])
    assert result.ranking.tolist() == [0, 1, 4, 3, 2]  # ties kept in item order
    top = result.top(3)
    assert [name for name, _, _ in top] == ["b", "e", "d"]
    assert top[0][2] == ("round", "red") or top[0][2] == ("red", "round")
    assert "blue" not in top[0][2]
    assert [name for name, _, _ in result.top(2, exclude_query=False)] == ["a", "b"]
    assert len(result.top(10)) == 4


def test_top_k_matches_full_sort():
    rng = np.random.default_rng(3)
    scores = rng.integers(0, 5, size=200).astype(float)
    order = np.lexsort((np.arange(200), -scores))
    for k in (1, 7, 200, 500):
        np.testing.assert_array_equal(top_k(scores, k), order[: min(k, 200)])


def test_deterministic_and_index_reusable():
    rng = np.random.default_rng(23)
    X = sp.csr_matrix(sparse_binary(rng, n=100, d=50))
    index = BayesianSetsIndex(X)
    first = index.query([1, 2]).scores
    index.query([5, 6, 7])
    np.testing.assert_array_equal(index.query([1, 2]).scores, first)
    np.testing.assert_array_equal(bayesian_sets(X, [1, 2]).scores, first)
    np.testing.assert_array_equal(index.query([2, 1]).scores, first)


def test_index_bad_input_named():
    with pytest.raises(ValueError, match="model must be a BayesianSets"):
        BayesianSetsIndex(np.eye(3), model="bayes")
    with pytest.raises(ValueError, match=r"query\[0\] = 3 is out of range"):
        bayesian_sets(np.eye(3), [3])
    with pytest.raises(ValueError, match="query is empty"):
        bayesian_sets(sp.csr_matrix(np.eye(3)), [])
    with pytest.raises(ValueError, match="weights .* exist only for the Beta-Bernoulli"):
        BayesianSetsIndex(np.eye(3), BayesianSets(component=conjugate.NormalGamma())).weights([0])
    with pytest.raises(ValueError, match="k must be an integer >= 1"):
        bayesian_sets(np.eye(3), [0]).top(0)
    with pytest.raises(ValueError, match="X must be binary"):
        bayesian_sets(np.array([[0.5, 1.0]]), [0])


# ------------------------------------------------------------------ binarisation (5.2.2)
@pytest.mark.parametrize("seed", SEEDS)
def test_binarize_uses_the_tail_of_the_skew(seed):
    rng = np.random.default_rng(seed)
    n = 500
    right = rng.exponential(size=n)  # positive skew: the top 20% are on
    left = -rng.exponential(size=n)  # negative skew: the bottom 20% are on
    X = np.column_stack([right, left, 3.0 * right + 1.0])
    B = binarize(X)
    assert sp.issparse(B)
    B = B.toarray()
    np.testing.assert_array_equal(B[:, 0], right > np.percentile(right, 80))
    np.testing.assert_array_equal(B[:, 1], left < np.percentile(left, 20))
    np.testing.assert_array_equal(B[:, 2], B[:, 0])  # invariant to an increasing affine map
    assert B[:, :2].mean(axis=0) == pytest.approx([0.2, 0.2], abs=0.01)
    t, upper = skewness_thresholds(X, 90.0)
    assert upper.tolist() == [True, False, True]
    assert t[1] == pytest.approx(np.percentile(left, 10))


def test_binarize_constant_and_new_items_and_features():
    X = np.column_stack([np.zeros(10), np.arange(10.0) ** 2])
    B = binarize(X).toarray()
    assert B[:, 0].sum() == 0  # a constant feature is never beyond its own percentile
    assert B[:, 1].tolist() == [0] * 8 + [1, 1]
    thresholds = skewness_thresholds(X)
    new = binarize(np.array([[1.0, 100.0], [0.0, 0.0]]), thresholds=thresholds).toarray()
    assert new.tolist() == [[1.0, 1.0], [0.0, 0.0]]
    F = binarize(Features(X, item_names=list("abcdefghij"), feature_names=["c", "sq"]))
    assert isinstance(F, Features) and F.kind == "binary" and F.item_names[9] == "j"


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"X": [[1.0, np.nan]]}, r"X\[0, 1\] is nan"),
        ({"X": [1.0, 2.0]}, "X must be a non-empty 2-D array"),
        ({"X": [[1.0]], "percentile": 40}, r"percentile must be a number in \(50, 100\)"),
        ({"X": [[1.0]], "thresholds": ([0.0, 1.0], [True])}, "thresholds must be two arrays"),
    ],
)
def test_binarize_bad_input(kwargs, message):
    with pytest.raises(ValueError, match=message):
        binarize(**kwargs)


# ------------------------------------------------------------------ Jaakkola-Jordan
def logistic_problem(seed, n, weights=(0.3, 1.0)):
    rng = np.random.default_rng(seed)
    X = np.column_stack([np.ones(n), rng.normal(size=n)])
    y = (rng.random(n) < 1.0 / (1.0 + np.exp(-X @ np.asarray(weights)))).astype(float)
    return X, y


def grid_posterior(X, y, m0, V0, centre, half_width, n_grid=401):
    """Exact log evidence, posterior mean and sd of a 2-weight logistic regression on a grid."""
    axes = [np.linspace(c - h, c + h, n_grid) for c, h in zip(centre, half_width, strict=True)]
    T = np.stack([g.ravel() for g in np.meshgrid(*axes, indexing="ij")], axis=1)
    sign = 2.0 * y - 1.0
    loglik = -np.logaddexp(0.0, -sign[:, None] * (X @ T.T)).sum(axis=0)
    P0 = np.linalg.inv(V0)
    d = T - m0
    logprior = -0.5 * np.einsum("nk,kl,nl->n", d, P0, d) - 0.5 * np.log(
        np.linalg.det(2 * np.pi * V0)
    )
    lj = loglik + logprior
    log_cell = sum(np.log(g[1] - g[0]) for g in axes)
    w = np.exp(lj - logsumexp(lj))
    mean = w @ T
    return logsumexp(lj) + log_cell, mean, np.sqrt(w @ T**2 - mean**2)


@pytest.mark.parametrize("seed", SEEDS)
def test_variational_bound_is_below_the_true_evidence(seed):
    X, y = logistic_problem(seed, 60)
    m0, V0 = np.array([0.5, -0.5]), np.array([[2.0, 0.3], [0.3, 1.0]])
    fit = variational_logistic(X, y, m0, V0)
    assert fit.converged
    assert np.all(np.diff(fit.elbo_trace) >= -1e-9 * np.abs(fit.elbo_trace[1:]))
    sd = np.sqrt(np.diag(fit.cov))
    log_z, mean, exact_sd = grid_posterior(X, y, m0, V0, fit.mean, 10 * sd)
    assert fit.elbo <= log_z
    assert log_z - fit.elbo < 2.0  # a bound, but not a vacuous one
    assert np.all(np.abs(fit.mean - mean) < 0.5 * exact_sd)


def test_variational_one_weight_matches_one_dimensional_quadrature():
    rng = np.random.default_rng(4)
    x = rng.normal(size=(15, 1))
    fit = variational_logistic(x, None, [0.0], [[3.0]])  # all linked, as the query of (6.3)
    grid = np.linspace(-15, 15, 20001)
    lj = -np.logaddexp(0.0, -x @ grid[None]).sum(axis=0) - grid**2 / 6 - 0.5 * np.log(6 * np.pi)
    log_z = logsumexp(lj) + np.log(grid[1] - grid[0])
    assert fit.elbo <= log_z < fit.elbo + 1.0


def test_variational_matches_nuts_within_a_tenth_of_the_posterior_sd():
    """The JJ mean against PyMC NUTS (RelationalBayesianSets.pymc_model) on 1000 points."""
    import arviz as az
    import pymc as pm

    X, y = logistic_problem(0, 1000)
    m0, V0 = np.zeros(2), 4.0 * np.eye(2)
    fit = variational_logistic(X, y, m0, V0)
    with RelationalBayesianSets().pymc_model(X, m0, V0, labels=y):
        idata = pm.sample(
            draws=3000,
            tune=1000,
            chains=2,
            cores=1,
            random_seed=0,
            progressbar=False,
            compute_convergence_checks=False,
        )
    theta = idata.posterior["theta"].values.reshape(-1, 2)
    ess = az.ess(idata, var_names=["theta"])["theta"].values
    assert np.all(ess > 1000)
    sd = theta.std(axis=0)
    assert np.all(np.abs(fit.mean - theta.mean(axis=0)) < 0.1 * sd)
    # JJ is known to under-state the spread, never by much on this much data
    np.testing.assert_allclose(np.sqrt(np.diag(fit.cov)), sd, rtol=0.15)


def test_variational_prior_precision_equals_prior_cov():
    X, y = logistic_problem(1, 40)
    V0 = np.array([[2.0, 0.5], [0.5, 1.0]])
    a = variational_logistic(X, y, np.zeros(2), V0)
    b = variational_logistic(X, y, np.zeros(2), prior_precision=np.linalg.inv(V0))
    np.testing.assert_allclose(a.mean, b.mean, rtol=1e-10)
    np.testing.assert_allclose(a.elbo, b.elbo, rtol=1e-10)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"prior_cov": None}, "give exactly one of prior_cov and prior_precision"),
        ({"prior_precision": np.eye(2)}, "give exactly one"),
        ({"prior_cov": np.ones((2, 2))}, "prior_cov must be positive definite"),
        ({"prior_mean": np.zeros(3)}, r"prior_mean must have shape \(2,\)"),
        ({"y": [1, 0]}, r"labels must have one entry per pair"),
        ({"max_iter": 0}, "max_iter must be an integer >= 1"),
        ({"X": [[1.0, np.nan], [1.0, 0.0], [1.0, 1.0]]}, r"features\[0, 1\] is nan"),
    ],
)
def test_variational_bad_input(kwargs, message):
    args = {"X": np.ones((3, 2)), "y": None, "prior_mean": np.zeros(2), "prior_cov": np.eye(2)}
    args.update(kwargs)
    with pytest.raises(ValueError, match=message):
        variational_logistic(**args)


@pytest.mark.parametrize("seed", SEEDS)
def test_predictive_bound_below_quadrature(seed):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(50, 3)) * rng.uniform(0.1, 3.0, size=(50, 1))
    L = rng.normal(size=(3, 3))
    cov = L @ L.T + 0.1 * np.eye(3)
    mean = rng.normal(size=3)
    jj = logistic_log_predictive(X, mean, cov)
    exact = logistic_log_predictive(X, mean, cov, method="quadrature", n_nodes=200)
    assert np.all(jj <= exact + 1e-10)
    # the bound is tight where the weights are well determined along x (small variance s)
    s = np.einsum("pk,kl,pl->p", X, cov, X)
    assert np.all((exact - jj)[s < 1.0] < 0.05)
    # with no uncertainty the integral is the logistic itself and the bound is tight
    point = logistic_log_predictive(X, mean, 1e-12 * np.eye(3))
    np.testing.assert_allclose(point, -np.logaddexp(0.0, -(X @ mean)), atol=1e-6)
    with pytest.raises(ValueError, match="method must be 'jj' or 'quadrature'"):
        logistic_log_predictive(X, mean, cov, method="probit")


def test_analogical_score_is_a_bayes_factor():
    rng = np.random.default_rng(2)
    S = rng.normal(size=(8, 3)) + [1.0, 0.0, 0.0]
    C = rng.normal(size=(20, 3))
    m0, V0 = np.zeros(3), np.eye(3)
    scores, posterior = analogical_scores(C, S, m0, V0, method="quadrature")
    after = logistic_log_predictive(C, posterior.mean, posterior.cov, method="quadrature")
    before = logistic_log_predictive(C, m0, V0, method="quadrature")
    np.testing.assert_allclose(scores, after - before)
    jj_scores, _ = analogical_scores(C, S, m0, V0)
    assert np.corrcoef(scores, jj_scores)[0, 1] > 0.99


# ------------------------------------------------------------------ relational retrieval
def planted_relations(seed, n=60, V=6):
    """Two mechanisms of linking: A has feature 0 and B feature 1 (relation 1), or A feature 2
    and B feature 3 (relation 2); half of the eligible pairs are linked."""
    rng = np.random.default_rng(seed)
    A = (rng.random((n, V)) < 0.3).astype(float)
    one = np.outer(A[:, 0], A[:, 1]) > 0
    two = (np.outer(A[:, 2], A[:, 3]) > 0) & ~one
    links = ((one | two) & (rng.random((n, n)) < 0.5)).astype(float)
    return A, links, np.where(one, 1, np.where(two, 2, 0))


@pytest.mark.parametrize("seed", SEEDS)
def test_relational_retrieval_finds_the_query_relation(seed):
    A, links, relation = planted_relations(seed)
    pairs = np.argwhere(links > 0)
    rel = relation[pairs[:, 0], pairs[:, 1]]
    rng = np.random.default_rng(100 + seed)
    q = rng.choice(np.flatnonzero(rel == 1), size=5, replace=False)
    result = relational_bayesian_sets(A, A, links, pairs[q], random_state=seed)
    assert result.scores.shape == (len(pairs),)
    np.testing.assert_array_equal(np.sort(result.query), np.sort(q))
    rest = np.setdiff1d(np.arange(len(pairs)), q)
    s, hit = result.scores[rest], rel[rest] == 1
    ranks = rankdata(s)
    auc = (ranks[hit].sum() - hit.sum() * (hit.sum() + 1) / 2) / (hit.sum() * (~hit).sum())
    assert auc > 0.55
    names = {name for name, _, _ in result.top(5)}
    assert not names & {f"{i}:{j}" for i, j in pairs[q]}
    again = relational_bayesian_sets(A, A, links, pairs[q], random_state=seed)
    np.testing.assert_array_equal(again.scores, result.scores)


def test_relational_bad_input():
    A = np.eye(3)
    links = np.eye(3)
    with pytest.raises(ValueError, match=r"query\[0\] = \(0, 1\) is not a linked pair"):
        relational_bayesian_sets(A, A, links, [[0, 1]])
    with pytest.raises(ValueError, match="model must be a RelationalBayesianSets"):
        relational_bayesian_sets(A, A, links, [[0, 0]], model=BayesianSets())
    with pytest.raises(ValueError, match="a_names must have 3 entries"):
        relational_bayesian_sets(A, A, links, [[0, 0]], a_names=["x"])
    with pytest.raises(ValueError, match="random_state must be"):
        relational_bayesian_sets(A, A, links, [[0, 0]], random_state="seed")
