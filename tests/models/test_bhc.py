"""Bayesian hierarchical clustering: the recursion against brute force (Theorem 3.1, Lemma 3.1,
Corollary 3.1), the predictive (3.10)-(3.11), the cut, the linkage export and dendrogram purity."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.cluster.hierarchy import is_valid_linkage, linkage
from scipy.special import gammaln, logsumexp

from latentzoo.models import BetaBernoulli, DirichletMultinomial, NormalGamma, NormalInverseWishart
from latentzoo.models.bhc import BayesianHierarchicalClustering, Tree, dendrogram_purity
from latentzoo.models.mixture import crp_log_prior

COMPONENTS = {
    "beta-bernoulli": BetaBernoulli(a=0.7, b=1.3),
    "dirichlet-multinomial": DirichletMultinomial(eta=0.8),
    "normal-gamma": NormalGamma(mu0=0.5, kappa0=0.5, a0=2.0, b0=1.5),
    "normal-inverse-wishart": NormalInverseWishart(
        mu0=0.2, kappa0=0.7, psi0=[[1.0, 0.3], [0.3, 2.0]]
    ),
}


def make_data(kind: str, n: int, rng) -> np.ndarray:
    """Small clustered data that fit component ``kind`` (two or three groups)."""
    groups = rng.integers(3, size=n)
    if kind == "beta-bernoulli":
        probs = rng.random((3, 4))
        return (rng.random((n, 4)) < probs[groups]).astype(float)
    if kind == "dirichlet-multinomial":
        return rng.poisson(2.0 * rng.random((3, 3))[groups] + 0.2).astype(float)
    dims = 2 if kind == "normal-inverse-wishart" else 3
    centres = 3.0 * rng.standard_normal((3, dims))
    return centres[groups] + rng.standard_normal((n, dims))


def random_children(n: int, rng) -> np.ndarray:
    """A uniformly random merge sequence (any binary tree) over ``n`` leaves."""
    live = list(range(n))
    children = []
    for m in range(n - 1):
        a, b = rng.choice(len(live), size=2, replace=False)
        i, j = live[a], live[b]
        live = [x for x in live if x not in (i, j)] + [n + m]
        children.append((i, j))
    return np.array(children, dtype=np.int64).reshape(n - 1, 2)


def subtree_partitions(children: np.ndarray, node: int, n: int):
    """All tree-consistent partitions of the leaves under ``node``, as lists of leaf lists."""
    if node < n:
        return [[[node]]]
    i, j = children[node - n]
    left = subtree_partitions(children, i, n)
    right = subtree_partitions(children, j, n)
    whole = sorted(sum(left[0], []) + sum(right[0], []))
    return [[whole]] + [a + b for a in left for b in right]


def leaves_under(children, node, n):
    return sorted(sum(subtree_partitions(children, node, n)[0], []))


def brute_force_terms(model, X, children, node, n):
    """Per tree-consistent partition: ``log(alpha^m prod Gamma(n_l))``, ``log p(D^v)`` and labels."""
    comp = model.component
    weights, logliks, labels = [], [], []
    for partition in subtree_partitions(children, node, n):
        weights.append(
            len(partition) * math.log(model.alpha) + sum(math.lgamma(len(b)) for b in partition)
        )
        loglik = 0.0
        z = np.empty(n, dtype=np.int64)
        for label, block in enumerate(partition):
            stats = comp.stats(X[block], np.zeros(len(block), dtype=np.intp), 1)
            loglik += float(comp.log_marginal(stats)[0])
            z[block] = label
        logliks.append(loglik)
        labels.append(z)
    return np.array(weights), np.array(logliks), np.array(labels)


# --------------------------------------------------------------------------- Theorem 3.1, Lemma 3.1
@pytest.mark.parametrize("kind", sorted(COMPONENTS))
def test_theorem_3_1_recursion_equals_sum_over_tree_consistent_partitions(kind):
    """Every node: p(D_k|T_k) d_k = sum_v alpha^m prod Gamma(n_l) p(D^v), and d_k = sum_v weights."""
    comp = COMPONENTS[kind]
    checked = 0
    for seed in range(8):
        rng = np.random.default_rng(seed)
        n = 3 + seed % 4  # 3..6 items
        X = make_data(kind, n, rng)
        model = BayesianHierarchicalClustering(alpha=float(rng.uniform(0.3, 4.0)), component=comp)
        children = random_children(n, rng)
        tree = model.evaluate(children, X)
        for m in range(n - 1):
            node = n + m
            items = leaves_under(children, node, n)
            log_w, log_lik, _ = brute_force_terms(model, X, children, node, n)
            # Algorithm 3.3's d_k is the total weight of the tree-consistent partitions
            assert tree.log_d[m] == pytest.approx(logsumexp(log_w), abs=1e-10)
            expected = logsumexp(log_w + log_lik) - logsumexp(log_w)
            assert tree.log_evidence[m] == pytest.approx(expected, abs=1e-10)
            assert tree.sizes[m] == len(items)
            # r_k: the posterior mass of the one-block partition among the tree-consistent ones
            assert tree.log_r[m] == pytest.approx(
                log_w[0] + log_lik[0] - logsumexp(log_w + log_lik), abs=1e-10
            )
            assert np.logaddexp(tree.log_r[m], tree.log_1mr[m]) == pytest.approx(0.0, abs=1e-12)
            checked += 1
    assert checked == sum(2 + s % 4 for s in range(8))


@pytest.mark.parametrize("alpha", [0.2, 1.0, 3.5])
def test_lemma_3_1_weights_are_the_dpm_partition_prior(alpha):
    """alpha^m prod Gamma(n_l) Gamma(alpha) / Gamma(n + alpha) is the Ewens / CRP prior (3.9)."""
    rng = np.random.default_rng(11)
    n = 6
    X = make_data("beta-bernoulli", n, rng)
    model = BayesianHierarchicalClustering(alpha=alpha, component=COMPONENTS["beta-bernoulli"])
    children = random_children(n, rng)
    log_w, log_lik, labels = brute_force_terms(model, X, children, 2 * n - 2, n)
    crp = crp_log_prior(labels, alpha)
    np.testing.assert_allclose(log_w + gammaln(alpha) - gammaln(n + alpha), crp, atol=1e-12)
    # and the bound of Corollary 3.1 is the DPM joint summed over the tree-consistent partitions
    tree = model.evaluate(children, X)
    assert tree.lower_bound() == pytest.approx(logsumexp(crp + log_lik), abs=1e-10)


def test_two_items_bound_is_exact_and_leaf_recursion():
    """With two items every partition is tree-consistent: the bound equals the DPM marginal."""
    for kind, comp in COMPONENTS.items():
        X = make_data(kind, 2, np.random.default_rng(3))
        model = BayesianHierarchicalClustering(alpha=1.7, component=comp)
        tree = model.evaluate([[0, 1]], X)
        exact = model.dpm.log_marginal_likelihood(X)
        assert tree.lower_bound() == pytest.approx(exact, abs=1e-10), kind
        assert tree.leaf_log_d.tolist() == pytest.approx([math.log(1.7)] * 2)


# --------------------------------------------------------------------------- Corollary 3.1
@pytest.mark.parametrize("kind", sorted(COMPONENTS))
def test_corollary_3_1_bound_never_exceeds_exact_dpm_marginal(kind):
    """Greedy and random trees, n <= 9, several data sets, alphas and seeds."""
    from latentzoo.inference.bhc import bhc

    comp = COMPONENTS[kind]
    for seed in range(6):
        rng = np.random.default_rng(100 + seed)
        n = int(rng.integers(3, 10 if kind == "beta-bernoulli" else 8))
        X = make_data(kind, n, rng)
        alpha = float(rng.choice([0.1, 0.5, 1.0, 2.0, 10.0]))
        model = BayesianHierarchicalClustering(alpha=alpha, component=comp)
        exact = model.dpm.log_marginal_likelihood(X)
        for tree in (bhc(model, X), model.evaluate(random_children(n, rng), X)):
            assert np.isfinite(tree.lower_bound())
            assert tree.lower_bound() <= exact + 1e-9
            # the BHC evidence is p(D|T), a different normalisation: finite, not a bound
            assert np.isfinite(tree.log_marginal)


def test_bound_on_all_zero_and_all_one_data_is_close():
    """Identical items: the greedy tree keeps most of the DPM mass (Fig. 3.6's easy case)."""
    from latentzoo.inference.bhc import bhc

    model = BayesianHierarchicalClustering(alpha=1.0)
    for value in (0.0, 1.0):
        X = np.full((7, 5), value)
        tree = bhc(model, X)
        exact = model.dpm.log_marginal_likelihood(X)
        assert exact - 1.0 < tree.lower_bound() <= exact + 1e-10


@pytest.mark.parametrize("kind", sorted(COMPONENTS))
def test_alpha_gradient_matches_finite_differences(kind):
    rng = np.random.default_rng(21)
    n = 12
    X = make_data(kind, n, rng)
    children = random_children(n, rng)
    for alpha in (0.3, 2.0):
        comp = COMPONENTS[kind]
        tree = BayesianHierarchicalClustering(alpha=alpha, component=comp).evaluate(children, X)
        step = 1e-5 * alpha
        up, down = (
            BayesianHierarchicalClustering(alpha=alpha + s, component=comp).evaluate(children, X)
            for s in (step, -step)
        )
        numeric = (up.log_marginal - down.log_marginal) / (2 * step)
        assert tree.alpha_gradient() == pytest.approx(numeric, rel=1e-5, abs=1e-7)


# --------------------------------------------------------------------------- node statistics
@pytest.mark.parametrize("kind", sorted(COMPONENTS))
def test_node_statistics_match_the_component(kind):
    """Merged statistics (sums / pairwise moment updates) equal the component's stats of the node."""
    comp = COMPONENTS[kind]
    rng = np.random.default_rng(5)
    n = 9
    X = make_data(kind, n, rng)
    children = random_children(n, rng)
    tree = BayesianHierarchicalClustering(component=comp).evaluate(children, X)
    for node in range(2 * n - 1):
        items = leaves_under(children, node, n) if node >= n else [node]
        expected = comp.stats(X[items], np.zeros(len(items), dtype=np.intp), 1)[0]
        np.testing.assert_allclose(tree.node_stats[node], expected, rtol=1e-10, atol=1e-10)
        h1 = float(comp.log_marginal(expected[None])[0])
        got = tree.leaf_log_evidence[node] if node < n else tree.log_h1[node - n]
        assert got == pytest.approx(h1, abs=1e-9)


# --------------------------------------------------------------------------- predictive (3.10)-(3.11)
@pytest.mark.parametrize("seed", range(4))
def test_predictive_weights_sum_to_one(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(2, 30))
    X = make_data("beta-bernoulli", n, rng)
    model = BayesianHierarchicalClustering(alpha=float(rng.uniform(0.1, 5.0)))
    tree = model.evaluate(random_children(n, rng), X)
    weights, new = tree.predictive_weights()
    assert weights.shape == (2 * n - 1,)
    assert np.all(weights >= 0)
    assert weights.sum() + new == pytest.approx(1.0, abs=1e-12)
    assert new == pytest.approx(model.alpha / (n + model.alpha))


def test_predictive_density_normalised_and_exact_for_two_items():
    """Sums to one over all binary vectors; for two items (3.10) is the exact DPM predictive."""
    rng = np.random.default_rng(8)
    X = make_data("beta-bernoulli", 2, rng)
    model = BayesianHierarchicalClustering(alpha=0.8, component=COMPONENTS["beta-bernoulli"])
    tree = model.evaluate([[0, 1]], X)
    grid = ((np.arange(16)[:, None] >> np.arange(4)) & 1).astype(float)
    log_p = tree.log_predictive(grid)
    assert np.exp(log_p).sum() == pytest.approx(1.0, abs=1e-12)
    base = model.dpm.log_marginal_likelihood(X)
    exact = [model.dpm.log_marginal_likelihood(np.vstack([X, x])) - base for x in grid]
    np.testing.assert_allclose(log_p, exact, atol=1e-10)


def test_predictive_real_components_run_and_prefer_the_data():
    for kind in ("normal-gamma", "normal-inverse-wishart"):
        rng = np.random.default_rng(2)
        X = make_data(kind, 12, rng)
        tree = BayesianHierarchicalClustering(component=COMPONENTS[kind]).evaluate(
            random_children(12, rng), X
        )
        near, far = tree.log_predictive(np.vstack([X[0], X[0] + 50.0]))
        assert np.isfinite(near) and near > far


# --------------------------------------------------------------------------- cut, linkage, co-assignment
def test_cut_follows_r_half_top_down():
    rng = np.random.default_rng(4)
    n = 15
    X = make_data("beta-bernoulli", n, rng)
    tree = BayesianHierarchicalClustering(alpha=0.5).evaluate(random_children(n, rng), X)
    labels = tree.cut()
    children = tree.children
    # reference: recursive top-down cut
    expected = np.full(n, -1)
    clusters = []

    def visit(node):
        if node < n or tree.log_r[node - n] >= math.log(0.5):
            clusters.append(leaves_under(children, node, n) if node >= n else [node])
            return
        for child in children[node - n]:
            visit(child)

    visit(2 * n - 2)
    for c, items in enumerate(clusters):
        expected[items] = c
    same = labels[:, None] == labels[None, :]
    np.testing.assert_array_equal(same, expected[:, None] == expected[None, :])
    assert labels[0] == 0 and set(labels) == set(range(labels.max() + 1))


def test_linkage_is_valid_and_monotone():
    rng = np.random.default_rng(9)
    n = 20
    X = make_data("beta-bernoulli", n, rng)
    tree = BayesianHierarchicalClustering().evaluate(random_children(n, rng), X)
    for height in ("order", "neglog_r"):
        Z = tree.to_linkage(height)
        assert is_valid_linkage(Z)
        assert np.all(np.diff(Z[:, 2]) >= 0)
        assert Z[-1, 3] == n
    with pytest.raises(ValueError, match="height"):
        tree.to_linkage("distance")


def test_coassignment_is_the_tree_posterior_of_sharing_a_block():
    rng = np.random.default_rng(12)
    n = 6
    X = make_data("beta-bernoulli", n, rng)
    model = BayesianHierarchicalClustering(alpha=1.3, component=COMPONENTS["beta-bernoulli"])
    children = random_children(n, rng)
    tree = model.evaluate(children, X)
    log_w, log_lik, labels = brute_force_terms(model, X, children, 2 * n - 2, n)
    post = np.exp(log_w + log_lik - logsumexp(log_w + log_lik))
    pairs = np.array([(i, j) for i in range(n) for j in range(i + 1, n)])
    expected = [(post * (labels[:, i] == labels[:, j])).sum() for i, j in pairs]
    np.testing.assert_allclose(tree.coassignment(pairs), expected, atol=1e-12)


@pytest.mark.parametrize("kind", sorted(COMPONENTS))
def test_to_arrays_round_trip_without_pickles(kind, tmp_path):
    from latentzoo.models.conjugate import component_named

    rng = np.random.default_rng(13)
    X = make_data(kind, 7, rng)
    children = random_children(7, rng)
    tree = BayesianHierarchicalClustering(alpha=0.9, component=COMPONENTS[kind]).evaluate(
        children, X
    )
    np.savez(tmp_path / "tree.npz", **tree.to_arrays())
    saved = np.load(tmp_path / "tree.npz", allow_pickle=False)
    hyper = {k[6:]: saved[k] for k in saved.files if k.startswith("hyper_")}
    comp = component_named(str(saved["component"]), **hyper)
    again = BayesianHierarchicalClustering(alpha=float(saved["alpha"]), component=comp).evaluate(
        saved["children"], X
    )
    np.testing.assert_allclose(again.log_evidence, saved["log_evidence"], atol=1e-12)
    assert is_valid_linkage(saved["linkage"])


# --------------------------------------------------------------------------- purity
def brute_force_purity(children, labels, weighting):
    """Footnote 3 by enumerating ordered pairs of distinct same-class leaves."""
    n = len(labels)
    members = {node: set(leaves_under(children, node, n)) for node in range(n, 2 * n - 1)}
    total, weight_sum = 0.0, 0.0
    for i in range(n):
        same = [j for j in range(n) if j != i and labels[j] == labels[i]]
        for j in same:
            lca = min(node for node, leaves in members.items() if i in leaves and j in leaves)
            leaves = members[lca]
            pur = np.mean([labels[x] == labels[i] for x in leaves])
            w = 1.0 if weighting == "pairs" else 1.0 / len(same)
            total += w * pur
            weight_sum += w
    return total / weight_sum


@pytest.mark.parametrize("seed", range(3))
def test_purity_matches_brute_force_on_random_trees(seed):
    rng = np.random.default_rng(seed)
    n = 25
    labels = rng.integers(4, size=n)
    children = random_children(n, rng)
    Z = np.column_stack([children, np.arange(1.0, n), np.ones(n - 1)])
    for weighting in ("pairs", "leaves"):
        got = dendrogram_purity(Z, labels, weighting=weighting)
        assert got == pytest.approx(brute_force_purity(children, labels, weighting), abs=1e-12)


def test_purity_of_a_perfect_tree_is_one_and_accepts_scipy_linkage():
    rng = np.random.default_rng(0)
    labels = np.repeat([2, 0, 1], [5, 7, 4])
    X = np.eye(3)[labels] * 10.0 + 0.01 * rng.standard_normal((16, 3))
    Z = linkage(X, "average")
    assert dendrogram_purity(Z, labels) == 1.0
    assert dendrogram_purity(Z, labels, weighting="leaves") == 1.0
    assert dendrogram_purity(Z, ["a"] * 8 + ["b"] * 8) < 1.0
    with pytest.raises(ValueError, match="labels"):
        dendrogram_purity(Z, labels[:-1])
    with pytest.raises(ValueError, match="weighting"):
        dendrogram_purity(Z, labels, weighting="items")


# --------------------------------------------------------------------------- input checks
def test_bad_input_raises_naming_the_entry():
    with pytest.raises(ValueError, match="alpha"):
        BayesianHierarchicalClustering(alpha=-1.0)
    with pytest.raises(ValueError, match="alpha"):
        BayesianHierarchicalClustering(alpha="one")
    with pytest.raises(ValueError, match="component"):
        BayesianHierarchicalClustering(component="gauss")
    model = BayesianHierarchicalClustering()
    with pytest.raises(ValueError, match=r"X\[1, 0\]"):
        model.evaluate([[0, 1]], [[0.0, 1.0], [np.nan, 1.0]])
    with pytest.raises(ValueError, match="BetaBernoulli"):
        model.evaluate([[0, 1]], [[0.0, 1.0], [0.5, 1.0]])
    with pytest.raises(ValueError, match="children"):
        model.evaluate([[0, 1], [0, 2]], np.ones((3, 2)))
    with pytest.raises(ValueError, match="children"):
        model.evaluate([[0, 1]], np.ones((3, 2)))
    tree = model.evaluate([[0, 1]], np.ones((2, 2)))
    with pytest.raises(ValueError, match="features"):
        tree.log_predictive(np.ones((1, 3)))
    with pytest.raises(ValueError, match="pairs"):
        tree.coassignment([[0, 2]])
    with pytest.raises(ValueError, match="threshold"):
        tree.cut(threshold=0.0)
    assert isinstance(tree, Tree)
