"""The greedy BHC search (Algorithm 3.2), RBHC and EMBHC (Algorithms 3.4-3.6), the line search."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.cluster.hierarchy import is_valid_linkage

from latentzoo.data import Features
from latentzoo.inference.bhc import bhc, embhc, learn_hyperparameters, rbhc
from latentzoo.models import BetaBernoulli, DirichletMultinomial, NormalGamma, NormalInverseWishart
from latentzoo.models.bhc import BayesianHierarchicalClustering

COMPONENTS = {
    "beta-bernoulli": BetaBernoulli(a=0.7, b=1.3),
    "beta-bernoulli-vector": BetaBernoulli(a=[0.5, 1.0, 2.0, 0.8], b=[1.5, 1.0, 0.3, 0.8]),
    "dirichlet-multinomial": DirichletMultinomial(eta=0.8),
    "normal-gamma": NormalGamma(mu0=0.5, kappa0=0.5, a0=2.0, b0=1.5),
    "normal-inverse-wishart": NormalInverseWishart(kappa0=0.7, psi0=[[1.0, 0.3], [0.3, 2.0]]),
}


def make_data(kind: str, n: int, rng) -> np.ndarray:
    groups = rng.integers(3, size=n)
    if kind.startswith("beta-bernoulli"):
        return (rng.random((n, 4)) < rng.random((3, 4))[groups]).astype(float)
    if kind == "dirichlet-multinomial":
        return rng.poisson(2.0 * rng.random((3, 3))[groups] + 0.2).astype(float)
    dims = 2 if kind == "normal-inverse-wishart" else 3
    return 3.0 * rng.standard_normal((3, dims))[groups] + rng.standard_normal((n, dims))


def pair_log_r(model, X, items_a, items_b, log_d_a, log_d_b, ev_a, ev_b):
    """eq. (3.3) from the component's numpy marginal (an independent scoring of one pair)."""
    comp = model.component
    items = np.concatenate([items_a, items_b])
    h1 = float(comp.log_marginal(comp.stats(X[items], np.zeros(items.size, dtype=np.intp), 1))[0])
    a = math.log(model.alpha) + math.lgamma(items.size)
    b = log_d_a + log_d_b
    return a + h1 - np.logaddexp(a + h1, b + ev_a + ev_b)


@pytest.mark.parametrize("kind", sorted(COMPONENTS))
def test_greedy_merges_a_best_pair_at_every_step(kind):
    """Replay the tree: each merge has the highest r_k among all live pairs (up to rounding)."""
    rng = np.random.default_rng(7)
    n = 14
    X = make_data(kind, n, rng)
    model = BayesianHierarchicalClustering(alpha=1.5, component=COMPONENTS[kind])
    tree = bhc(model, X)
    members = {i: np.array([i]) for i in range(n)}
    log_d = dict(enumerate(tree.leaf_log_d))
    log_ev = dict(enumerate(tree.leaf_log_evidence))
    for m, (i, j) in enumerate(tree.children):
        live = sorted(members)
        scores = [
            pair_log_r(model, X, members[a], members[b], log_d[a], log_d[b], log_ev[a], log_ev[b])
            for ai, a in enumerate(live)
            for b in live[ai + 1 :]
        ]
        assert tree.log_r[m] >= max(scores) - 1e-10
        assert tree.log_r[m] == pytest.approx(
            pair_log_r(model, X, members[i], members[j], log_d[i], log_d[j], log_ev[i], log_ev[j]),
            abs=1e-10,
        )
        k = n + m
        members[k] = np.concatenate([members.pop(i), members.pop(j)])
        log_d[k], log_ev[k] = tree.log_d[m], tree.log_evidence[m]


@pytest.mark.parametrize("seed", range(4))
def test_greedy_is_optimal_at_every_step_on_larger_additive_data(seed):
    """Replay with all live pairs scored at once (additive Beta-Bernoulli / Dirichlet stats):
    duplicate-heavy data make partners die often, so the heap's rescans are exercised."""
    rng = np.random.default_rng(seed)
    n = 90
    kind = "beta-bernoulli" if seed % 2 == 0 else "dirichlet-multinomial"
    X = make_data(kind, n, rng)[:, :3]
    comp = COMPONENTS[kind]
    model = BayesianHierarchicalClustering(alpha=float(rng.uniform(0.2, 5.0)), component=comp)
    tree = bhc(model, X)
    stats = {i: comp.stats(X[[i]], np.zeros(1, dtype=np.intp), 1)[0] for i in range(n)}
    log_d = dict(enumerate(tree.leaf_log_d))
    log_ev = dict(enumerate(tree.leaf_log_evidence))
    for m, (i, j) in enumerate(tree.children):
        live = np.array(sorted(stats))
        a, b = np.triu_indices(live.size, 1)
        table = np.array([stats[x] for x in live])
        merged = table[a] + table[b]
        h1 = comp.log_marginal(merged)
        first = math.log(model.alpha) + np.array([math.lgamma(t) for t in merged[:, 0]]) + h1
        ld = np.array([log_d[x] for x in live])
        le = np.array([log_ev[x] for x in live])
        second = ld[a] + ld[b] + le[a] + le[b]
        log_r = first - np.logaddexp(first, second)
        assert tree.log_r[m] >= log_r.max() - 1e-10, m
        k = n + m
        stats[k] = stats.pop(i) + stats.pop(j)
        log_d[k], log_ev[k] = tree.log_d[m], tree.log_evidence[m]


@pytest.mark.parametrize("kind", sorted(COMPONENTS))
def test_greedy_tree_quantities_equal_the_recursion_on_that_tree(kind):
    rng = np.random.default_rng(3)
    X = make_data(kind, 40, rng)
    model = BayesianHierarchicalClustering(alpha=0.6, component=COMPONENTS[kind])
    tree = bhc(model, X)
    again = model.evaluate(tree.children, X)
    for name in ("log_r", "log_evidence", "log_d", "log_pi", "log_h1"):
        np.testing.assert_allclose(getattr(tree, name), getattr(again, name), rtol=0, atol=1e-9)
    assert is_valid_linkage(tree.to_linkage())


def test_same_input_same_tree_and_exact_ties_broken_by_smallest_pair():
    rng = np.random.default_rng(1)
    X = make_data("beta-bernoulli", 60, rng)
    model = BayesianHierarchicalClustering()
    first, second = bhc(model, X), bhc(model, Features(X))
    np.testing.assert_array_equal(first.children, second.children)
    np.testing.assert_array_equal(first.log_r, second.log_r)
    # identical items: every leaf pair ties exactly, the smallest pair (0, 1) goes first
    same = bhc(model, np.ones((6, 3)))
    assert same.children[0].tolist() == [0, 1]
    np.testing.assert_array_equal(same.children, bhc(model, np.ones((6, 3))).children)


def test_ten_thousand_binary_items_stay_finite():
    """No underflow or overflow of d_k (Gamma(10000) overflows float64) or of the evidence."""
    rng = np.random.default_rng(0)
    n = 10_000
    z = rng.integers(5, size=n)
    X = (rng.random((n, 3)) < rng.random((5, 3))[z]).astype(float)
    tree = bhc(BayesianHierarchicalClustering(alpha=1.0), X)
    for name in ("log_r", "log_1mr", "log_evidence", "log_d", "log_pi", "log_h1"):
        values = getattr(tree, name)
        assert np.all(np.isfinite(values) | (name in ("log_1mr", "log_r"))), name
        assert not np.any(np.isnan(values)), name
    assert np.all(tree.log_r <= 1e-12)
    assert tree.log_d[-1] > 700  # beyond float64 when exponentiated: kept in log space
    assert np.isfinite(tree.lower_bound()) and np.isfinite(tree.log_marginal)
    weights, new = tree.predictive_weights()
    assert weights.sum() + new == pytest.approx(1.0, abs=1e-9)
    assert np.all(np.isfinite(tree.log_predictive(X[:5])))
    assert 0 < tree.purity(z) <= 1
    assert tree.sizes[-1] == n


def test_single_item_and_bad_input():
    model = BayesianHierarchicalClustering(alpha=2.0)
    one = bhc(model, [[1.0, 0.0]])
    assert one.children.shape == (0, 2)
    assert one.log_marginal == pytest.approx(math.log(0.5 * 0.5))
    assert one.lower_bound() == pytest.approx(one.log_marginal)
    assert one.cut().tolist() == [0]
    with pytest.raises(ValueError, match="model"):
        bhc("bhc", [[1.0]])
    with pytest.raises(ValueError, match=r"X\[0, 1\]"):
        bhc(model, [[1.0, np.inf]])
    with pytest.raises(ValueError, match="memory_limit"):
        bhc(model, np.ones((50, 3)), memory_limit=1000)
    with pytest.raises(ValueError, match="memory_limit"):
        bhc(model, np.ones((5, 3)), memory_limit=-1)
    with pytest.raises(ValueError, match=r"\d+\.\d MiB"):
        bhc(model, np.ones((50, 3)), memory_limit=1000)
    with pytest.raises(ValueError, match="m must"):
        rbhc(model, np.ones((5, 3)), m=1)
    with pytest.raises(ValueError, match="m must"):
        embhc(model, np.ones((5, 3)), m=6)
    with pytest.raises(ValueError, match="n_em_steps"):
        embhc(model, np.ones((5, 3)), m=2, n_em_steps=-1)
    with pytest.raises(ValueError, match="filter_prior"):
        rbhc(model, np.ones((5, 3)), m=2, filter_prior="none")
    with pytest.raises(ValueError, match="min_fraction"):
        rbhc(model, np.ones((5, 3)), m=2, min_fraction=0.7)


# --------------------------------------------------------------------------- randomised versions
def clustered(n, rng, k=4, d=12):
    z = rng.integers(k, size=n)
    probs = rng.beta(0.3, 0.3, size=(k, d))
    return (rng.random((n, d)) < probs[z]).astype(float), z


@pytest.mark.parametrize(
    ("filter_prior", "min_fraction"), [("pi", 0.0), ("size", 0.0), ("size", 0.2)]
)
def test_rbhc_is_a_valid_tree_reproducible_and_equal_to_bhc_when_m_covers_the_data(
    filter_prior, min_fraction
):
    rng = np.random.default_rng(5)
    X, z = clustered(300, rng)
    model = BayesianHierarchicalClustering()
    options = {"filter_prior": filter_prior, "min_fraction": min_fraction}
    tree = rbhc(model, X, m=40, random_state=3, **options)
    again = rbhc(model, X, m=40, random_state=3, **options)
    np.testing.assert_array_equal(tree.children, again.children)
    assert is_valid_linkage(tree.to_linkage())
    assert tree.sizes[-1] == 300 and np.isfinite(tree.lower_bound())
    assert tree.purity(z) > 0.5
    small = X[:30]
    np.testing.assert_array_equal(rbhc(model, small, m=30).children, bhc(model, small).children)


def test_embhc_clusters_of_clusters():
    rng = np.random.default_rng(6)
    X, z = clustered(400, rng)
    model = BayesianHierarchicalClustering()
    tree = embhc(model, X, m=25, n_em_steps=2, random_state=0)
    again = embhc(model, X, m=25, n_em_steps=2, random_state=0)
    np.testing.assert_array_equal(tree.leaf_of, again.leaf_of)
    np.testing.assert_array_equal(tree.children, again.children)
    assert tree.n_items == 400 and tree.n_leaves <= 25
    assert tree.leaf_sizes.sum() == 400
    np.testing.assert_array_equal(np.bincount(tree.leaf_of), tree.leaf_sizes)
    # leaves are clusters with pi = 1: d = alpha Gamma(n_c)
    np.testing.assert_allclose(
        tree.leaf_log_d, np.log(model.alpha) + np.array([math.lgamma(s) for s in tree.leaf_sizes])
    )
    Z = tree.to_linkage()
    assert is_valid_linkage(Z) and Z[-1, 3] == tree.n_leaves
    labels = tree.cut()
    assert labels.shape == (400,)
    weights, new = tree.predictive_weights()
    assert weights.sum() + new == pytest.approx(1.0, abs=1e-12)
    assert tree.coassignment(np.array([[0, 0], [0, 1]]))[0] == 1.0
    # with every item its own seed cluster EMBHC without EM is plain BHC
    small = X[:20]
    plain = embhc(model, small, m=20, n_em_steps=0, random_state=1)
    np.testing.assert_allclose(plain.log_marginal, bhc(model, small).log_marginal, atol=1e-9)


def test_embhc_bound_holds_against_exact_dpm():
    rng = np.random.default_rng(2)
    X, _ = clustered(8, rng, d=4)
    model = BayesianHierarchicalClustering(alpha=0.7)
    exact = model.dpm.log_marginal_likelihood(X)
    for seed in range(3):
        tree = embhc(model, X, m=4, n_em_steps=1, random_state=seed)
        assert tree.lower_bound() <= exact + 1e-9


# --------------------------------------------------------------------------- hyperparameters
def test_line_search_reports_the_evidence_per_step_and_never_gets_worse():
    rng = np.random.default_rng(4)
    X, _ = clustered(60, rng, d=8)
    model = BayesianHierarchicalClustering(alpha=1.0, component=BetaBernoulli(1.0, 1.0))
    result = learn_hyperparameters(model, X, parameters=("alpha", "a", "b"), n_rounds=2)
    history = result.history
    assert len(history) >= 3
    assert all(np.isfinite(step["log_evidence"]) for step in history)
    best = [step["best_log_evidence"] for step in history]
    assert all(b2 >= b1 for b1, b2 in zip(best, best[1:], strict=False))
    start = bhc(model, X).log_marginal
    assert result.tree.log_marginal >= start - 1e-9
    assert result.model.alpha > 0 and isinstance(result.model.component, BetaBernoulli)
    with pytest.raises(ValueError, match="parameters"):
        learn_hyperparameters(model, X, parameters=("kappa0",))


@pytest.mark.parametrize("psi0", [1.0, (1.0, 2.0), ((2.0, 0.5), (0.5, 1.0))])
def test_line_search_scales_the_niw_scale_matrix_as_a_whole(psi0):
    """psi0 (a scalar, a diagonal or a full matrix) is scaled by one factor and keeps its form;
    the evidence never falls below the start."""
    from latentzoo.models.conjugate import NormalInverseWishart

    rng = np.random.default_rng(7)
    y = np.repeat(np.arange(3), 15)
    X = rng.normal(0.0, 3.0, (3, 2))[y] + rng.standard_normal((45, 2))
    model = BayesianHierarchicalClustering(
        component=NormalInverseWishart(mu0=tuple(X.mean(axis=0)), kappa0=0.1, psi0=psi0)
    )
    result = learn_hyperparameters(model, X, parameters=("psi0",), n_rounds=1)
    assert result.tree.log_marginal >= bhc(model, X).log_marginal - 1e-9
    found = np.asarray(result.model.component.psi0, dtype=float)
    start = np.asarray(psi0, dtype=float)
    assert found.shape == start.shape
    ratio = found / start
    np.testing.assert_allclose(ratio, ratio.flat[0])
