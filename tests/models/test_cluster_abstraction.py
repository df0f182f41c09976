"""Tests of the hierarchical Cluster-Abstraction Model's declaration: tree, checks, simulator,
likelihoods, collapsed joint, PyMC.

Every likelihood is compared with an independent computation (explicit loops over leaves, levels
and words with ``math.log``, the ACM's own likelihood in the special case ``tau = delta``, scipy's
Dirichlet density, the Dirichlet-multinomial written with ``math.lgamma``, or a Monte Carlo
integral over the prior with its standard error), never with itself.
"""

import itertools
import math

import numpy as np
import pytest
from scipy import stats
from scipy.special import logsumexp

from latentzoo.data import CoOccurrence, load
from latentzoo.models.cluster_abstraction import (
    ClusterAbstractionModel,
    TopicTree,
    default_tracked_words,
)
from latentzoo.models.invariants import default_dyads
from latentzoo.models.one_sided import OneSidedClustering
from tests.helpers import random_counts, random_hacm_params

SEEDS = [0, 1, 2]
FORMS = ["constant", "leaf", "object"]
UNBALANCED = TopicTree([-1, 0, 0, 1, 1])  # leaves 2 (depth 1), 3 and 4 (depth 2)


def brute_per_leaf(model, params, counts):
    """sum_j n_ij log sum_l tau q with explicit loops (N x K)."""
    tree = model.tree
    n_rows, n_cols = counts.shape
    out = np.zeros((n_rows, tree.n_leaves))
    for i in range(n_rows):
        for a in range(tree.n_leaves):
            tau = params["tau"][i, a] if model.tau == "object" else params["tau"][a]
            for j in range(n_cols):
                if counts[i, j]:
                    mix = sum(
                        tau[level] * params["q"][tree.paths[a, level], j]
                        for level in range(tree.path_lengths[a])
                    )
                    out[i, a] += counts[i, j] * math.log(mix)
    return out


# ----------------------------------------------------------------------------- the tree
def test_complete_binary_tree():
    tree = TopicTree.complete_binary(2)
    assert tree.n_nodes == 7 and tree.n_leaves == 4 and tree.n_levels == 3
    assert tree.parents.tolist() == [-1, 0, 0, 1, 1, 2, 2]
    assert tree.leaves.tolist() == [3, 4, 5, 6]
    assert tree.paths.tolist() == [[0, 1, 3], [0, 1, 4], [0, 2, 5], [0, 2, 6]]
    assert tree.depth.tolist() == [0, 1, 1, 2, 2, 2, 2]
    assert tree.children(1).tolist() == [3, 4] and tree.root == 0
    assert tree.leaves_below(2).tolist() == [2, 3] and tree.leaves_below(0).tolist() == [0, 1, 2, 3]
    assert TopicTree.complete_binary(0).n_leaves == 1
    assert TopicTree.complete_binary(4).n_leaves == 16


def test_arbitrary_tree_paths_and_matrix():
    tree = TopicTree([2, 2, -1, 0])  # root 2; node 0 has child 3
    assert tree.root == 2 and tree.leaves.tolist() == [1, 3]
    assert tree.paths.tolist() == [[2, 1, -1], [2, 0, 3]]
    assert tree.path_lengths.tolist() == [2, 3]
    matrix = tree.path_matrix()
    for a, path in enumerate(tree.paths):
        assert set(np.flatnonzero(matrix[:, a])) == {v for v in path if v >= 0}
    assert tree.leaf_partition([1, 0]).tolist() == [3, 1]


def test_tree_equality_hash_repr_and_immutability():
    a, b = TopicTree([-1, 0, 0]), TopicTree.from_parents(np.array([-1, 0, 0]))
    assert a == b and hash(a) == hash(b) and a != TopicTree([-1, 0, 1])
    assert repr(a) == "TopicTree(parents=[-1, 0, 0])"
    with pytest.raises(ValueError):
        a.parents[0] = 3


@pytest.mark.parametrize(
    "parents, match",
    [
        ([], "non-empty"),
        ([[-1, 0]], "1-D"),
        ([0, 0], "exactly one root"),
        ([-1, -1], "exactly one root"),
        ([-1, 5], r"parents\[1\] = 5"),
        ([-1, 1], r"parents\[1\] = 1"),
        ([-1, -3], "exactly one root|parents"),
        ([-1, 2, 1], "cycle"),
        ([-1, 0.5], "integers"),
        (["a", "b"], "integers"),
    ],
)
def test_tree_rejects_bad_parents(parents, match):
    with pytest.raises(ValueError, match=match):
        TopicTree(parents)


@pytest.mark.parametrize("depth", [-1, 1.5, True, "2", 21])
def test_complete_binary_rejects_bad_depth(depth):
    with pytest.raises(ValueError, match="depth"):
        TopicTree.complete_binary(depth)


# ----------------------------------------------------------------------------- construction
@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"tree": "abc"}, "tree must be"),
        ({"tree": None}, "tree must be"),
        ({"tree": [0, 0]}, "root"),
        ({"tree": 1, "alpha": 0.0}, "alpha"),
        ({"tree": 1, "eta": float("nan")}, "eta"),
        ({"tree": 1, "gamma": -1.0}, "gamma"),
        ({"tree": 1, "tau": "leaves"}, "tau must be one of"),
        ({"tree": 1, "tau": None}, "tau must be one of"),
    ],
)
def test_constructor_rejects_invalid_arguments(kwargs, match):
    with pytest.raises(ValueError, match=match):
        ClusterAbstractionModel(**kwargs)


def test_model_accepts_depth_parents_or_tree():
    assert ClusterAbstractionModel(2).tree == TopicTree.complete_binary(2)
    assert ClusterAbstractionModel([-1, 0, 0]).tree == TopicTree.complete_binary(1)
    model = ClusterAbstractionModel(UNBALANCED, tau="object")
    assert model.n_components == model.n_clusters == 3
    assert model.dims["tau"] == ["doc", "leaf", "level"]
    assert ClusterAbstractionModel(1).dims["tau"] == ["leaf", "level"]
    assert hash(ClusterAbstractionModel(1)) == hash(ClusterAbstractionModel(1))


def test_check_data():
    assert ClusterAbstractionModel(1).check_data(np.array([[1, 0], [0, 2]])).shape == (2, 2)
    with pytest.raises(ValueError, match="tree has 4 leaves.*only 3 rows"):
        ClusterAbstractionModel(2).check_data(np.ones((3, 4), dtype=int))
    with pytest.raises(ValueError, match="tree has 2 leaves.*only 1 observations"):
        ClusterAbstractionModel(1).check_data(np.array([[1, 0], [0, 0]]))
    with pytest.raises(ValueError, match="negative"):
        ClusterAbstractionModel(1).check_data(np.array([[1, -1], [0, 2]]))
    with pytest.raises(ValueError, match="NaN"):
        ClusterAbstractionModel(1).check_data(np.array([[1, np.nan], [0, 2]]))


def test_check_params():
    data = load("toy")
    model = ClusterAbstractionModel(UNBALANCED)
    good = random_hacm_params(np.random.default_rng(0), model, data.n_rows, data.n_cols)
    assert model.check_params(good, data)[2].shape == (3, 3)
    with pytest.raises(ValueError, match="q has shape"):
        model.check_params({**good, "q": good["q"][:3]}, data)
    with pytest.raises(ValueError, match="rho must sum"):
        model.check_params({**good, "rho": good["rho"] * 2}, data)
    bad_tau = good["tau"].copy()
    bad_tau[0] = [0.5, 0.25, 0.25]  # leaf 2 has depth 1: level 2 must be 0
    with pytest.raises(ValueError, match="zero at levels below"):
        model.check_params({**good, "tau": bad_tau}, data)
    with pytest.raises(ValueError, match="tau has shape"):
        ClusterAbstractionModel(UNBALANCED, tau="object").check_params(good, data)


# ----------------------------------------------------------------------------- likelihoods
@pytest.mark.parametrize("form", FORMS)
@pytest.mark.parametrize(
    "tree", [TopicTree.complete_binary(2), UNBALANCED], ids=["binary", "ragged"]
)
def test_log_likelihood_matches_brute_force(form, tree):
    rng = np.random.default_rng(7)
    counts = random_counts(rng, 6, 9, zero_rows=[3], rate=1.3)
    data = CoOccurrence(counts)
    model = ClusterAbstractionModel(tree, tau=form)
    params = random_hacm_params(rng, model, 6, 9)
    per_leaf = brute_per_leaf(model, params, counts)
    want = logsumexp(np.log(params["rho"]) + per_leaf, axis=1)
    want[3] = 0.0
    np.testing.assert_allclose(model.log_likelihood(params, data), want, rtol=1e-12)
    # the tempered posterior of eq. (60)
    for beta in (1.0, 0.3):
        tempered = np.log(params["rho"]) + beta * per_leaf
        expected = np.exp(tempered - logsumexp(tempered, axis=1, keepdims=True))
        np.testing.assert_allclose(model.responsibilities(params, data, beta), expected, atol=1e-12)


def test_delta_tau_is_the_acm():
    """tau_{nu|alpha} = delta_{nu alpha} (section 4.1): the HACM's likelihood is the ACM's."""
    rng = np.random.default_rng(3)
    data = CoOccurrence(random_counts(rng, 7, 10, rate=1.3))
    model = ClusterAbstractionModel(2, tau="leaf")
    params = random_hacm_params(rng, model, 7, 10)
    params["tau"] = np.zeros((4, 3))
    params["tau"][:, 2] = 1.0
    acm = {"rho": params["rho"], "q": params["q"][model.tree.leaves]}
    np.testing.assert_allclose(
        model.log_likelihood(params, data), OneSidedClustering(4).log_likelihood(acm, data)
    )


def test_log_likelihood_does_not_underflow_for_long_documents():
    model = ClusterAbstractionModel(1)
    counts = np.array([[4000, 3000, 0], [0, 0, 5000]])
    params = {"rho": [0.5, 0.5], "q": np.full((3, 3), 1 / 3), "tau": model.default_tau()}
    ll = model.log_likelihood(params, CoOccurrence(counts))
    np.testing.assert_allclose(ll, counts.sum(axis=1) * np.log(1 / 3))


def test_level_posteriors_and_node_responsibility():
    rng = np.random.default_rng(5)
    counts = random_counts(rng, 5, 6, rate=1.3)
    data = CoOccurrence(counts)
    model = ClusterAbstractionModel(UNBALANCED, tau="object")
    params = random_hacm_params(rng, model, 5, 6)
    tree = model.tree
    post = model.level_posteriors(params, [1, 4], [2, 0])
    for c, (i, j) in enumerate([(1, 2), (4, 0)]):
        for a in range(3):
            w = [params["tau"][i, a, lv] * params["q"][tree.paths[a, lv], j]
                 for lv in range(tree.path_lengths[a])]  # fmt: skip
            np.testing.assert_allclose(post[c, a, : len(w)], np.array(w) / sum(w))
            assert np.all(post[c, a, len(w) :] == 0)
    resp = model.responsibilities(params, data)
    share = model.node_responsibility(params, data, [0, 3])
    for row, j in enumerate([0, 3]):
        want = np.zeros(tree.n_nodes)
        for i in range(5):
            for a in range(3):
                for lv in range(tree.path_lengths[a]):
                    p = model.level_posteriors(params, [i], [j])[0, a, lv]
                    want[tree.paths[a, lv]] += counts[i, j] * resp[i, a] * p
        np.testing.assert_allclose(share[row], want / counts[:, j].sum())
    with pytest.raises(ValueError, match="words must be column indices"):
        model.node_responsibility(params, data, [6])


@pytest.mark.parametrize("form", FORMS)
def test_predictive_is_eq_59(form):
    rng = np.random.default_rng(11)
    data = CoOccurrence(random_counts(rng, 6, 7, rate=1.3))
    model = ClusterAbstractionModel(UNBALANCED, tau=form)
    params = random_hacm_params(rng, model, 6, 7)
    tree = model.tree
    resp = model.responsibilities(params, data)
    dyads = default_dyads(data)
    got = model.predictive(params, data, dyads)
    for (i, j), value in zip(dyads, got, strict=True):
        # p_{nu|i} = sum_a <I_ia> tau_{nu|a,i}, then sum_nu p_{nu|i} q_{j|nu}
        p_node = np.zeros(tree.n_nodes)
        for a in range(3):
            tau = params["tau"][i, a] if form == "object" else params["tau"][a]
            for lv in range(tree.path_lengths[a]):
                p_node[tree.paths[a, lv]] += resp[i, a] * tau[lv]
        assert value == pytest.approx(float(p_node @ params["q"][:, j]), rel=1e-12)


def test_heldout_log_likelihood_uses_training_posteriors():
    rng = np.random.default_rng(2)
    data = CoOccurrence(random_counts(rng, 6, 7, rate=1.3))
    train, test = data.split(0.4, random_state=0)
    model = ClusterAbstractionModel(1)
    params = random_hacm_params(rng, model, 6, 7)
    resp = model.responsibilities(params, train)
    got = model.heldout_log_likelihood({**params, "resp": resp}, test)
    dense = test.toarray()
    want = np.zeros(6)
    for i, j in zip(*np.nonzero(dense), strict=True):
        want[i] += dense[i, j] * math.log(model.predictive(params, train, [[i, j]], resp=resp)[0])
    np.testing.assert_allclose(got, want)
    with pytest.raises(ValueError, match="test has 3 rows"):
        model.heldout_log_likelihood({**params, "resp": resp}, test.subset(rows=range(3)))


def test_log_prior_matches_scipy_dirichlet():
    rng = np.random.default_rng(4)
    model = ClusterAbstractionModel(UNBALANCED, alpha=1.3, eta=0.8, gamma=2.5, tau="leaf")
    params = random_hacm_params(rng, model, 3, 5)
    want = stats.dirichlet(np.full(3, 1.3)).logpdf(params["rho"])
    want += sum(stats.dirichlet(np.full(5, 0.8)).logpdf(row) for row in params["q"])
    want += stats.dirichlet(np.full(2, 2.5)).logpdf(params["tau"][0, :2])
    want += sum(stats.dirichlet(np.full(3, 2.5)).logpdf(row) for row in params["tau"][1:])
    assert model.log_prior(params) == pytest.approx(want, rel=1e-10)
    constant = ClusterAbstractionModel(UNBALANCED, alpha=1.3, eta=0.8, tau="constant")
    assert constant.log_prior({**params, "tau": constant.default_tau()}) == pytest.approx(
        want - stats.dirichlet(np.full(2, 2.5)).logpdf(params["tau"][0, :2])
        - sum(stats.dirichlet(np.full(3, 2.5)).logpdf(row) for row in params["tau"][1:])
    )  # fmt: skip


@pytest.mark.parametrize("seed", SEEDS)
def test_invariants_are_unchanged_by_swapping_siblings(seed):
    rng = np.random.default_rng(seed)
    data = CoOccurrence(random_counts(rng, 8, 9, rate=1.3))
    model = ClusterAbstractionModel(1, tau="object")
    params = random_hacm_params(rng, model, 8, 9)
    swapped = {
        "rho": params["rho"][::-1],
        "q": params["q"][[0, 2, 1]],
        "tau": params["tau"][:, ::-1],
    }
    a, b = model.invariants(params, data), model.invariants(swapped, data)
    for name in model.invariant_names:
        np.testing.assert_allclose(a[name], b[name], rtol=1e-10, err_msg=name)
    np.testing.assert_allclose(a["level_share"].sum(axis=1), 1.0)
    assert a["level_share"].shape == (len(default_tracked_words(data)), 2)
    assert a["loglik"] == pytest.approx(model.log_likelihood(params, data).sum())


# ----------------------------------------------------------------------------- simulator
@pytest.mark.parametrize("form", FORMS)
def test_simulate_is_reproducible_and_consistent(form):
    model = ClusterAbstractionModel(UNBALANCED, tau=form)
    (d1, t1), (d2, t2) = (model.simulate(5, n_docs=9, n_words=8, doc_length=12) for _ in range(2))
    assert d1 == d2 and all(np.array_equal(t1[k], t2[k]) for k in t1)
    assert d1.shape == (9, 8) and d1.total == 9 * 12
    assert t1["tau"].shape == model.tau_shape(9)
    # levels past a leaf's depth never occur
    depth_ok = model.tree.paths[t1["z"]] >= 0
    assert np.all(t1["level_counts"][~depth_ok] == 0)
    np.testing.assert_array_equal(t1["level_counts"].sum(axis=1), 12)


def test_simulate_draws_from_the_generative_process():
    """Pooled word frequencies of each leaf's documents match its mixture (eq. (55))."""
    model = ClusterAbstractionModel(1)
    data, truth = model.simulate(3, n_docs=60, n_words=6, doc_length=400)
    params = truth
    mix = model.leaf_mixtures(params)
    dense = data.toarray()
    for a in range(2):
        rows = truth["z"] == a
        if rows.sum() == 0:
            continue
        pooled = dense[rows].sum(axis=0)
        n = pooled.sum()
        # Documents share their leaf but not their levels: the multinomial variance is a lower
        # bound; 8 standard errors of the pooled multinomial still catch a wrong mixture.
        se = np.sqrt(mix[a] * (1 - mix[a]) / n)
        assert np.all(np.abs(pooled / n - mix[a]) < 8 * se + 0.02), (pooled / n, mix[a])
    # level counts follow tau of the leaf
    share = truth["level_counts"].sum(axis=0) / truth["level_counts"].sum()
    expected = (truth["tau"][truth["z"]]).mean(axis=0)
    np.testing.assert_allclose(share, expected, atol=0.03)


def test_simulate_separated_and_bad_sizes():
    model = ClusterAbstractionModel(2)
    data, truth = model.simulate(0, n_docs=8, n_words=14, doc_length=30, separated=True)
    assert np.bincount(truth["z"]).tolist() == [2, 2, 2, 2]
    assert np.all(truth["q"][:, :2].argmax(axis=0) == 0)  # node 0 owns words 0-1
    with pytest.raises(ValueError, match="n_words=5 >= n_nodes=7"):
        model.simulate(0, n_words=5, separated=True)
    with pytest.raises(ValueError, match="n_docs must be an integer >= 1"):
        model.simulate(0, n_docs=0)
    with pytest.raises(ValueError, match="doc_length must be"):
        model.simulate(0, doc_length=-1)
    with pytest.raises(ValueError, match="no observations"):
        model.simulate(0, doc_length=0)
    with pytest.raises(ValueError, match="random_state"):
        model.simulate("abc")


# ----------------------------------------------------------------------------- collapsed joint
def brute_collapsed(model, z, v, data):
    """log p(z, v, S) written out with math.lgamma (sequence form)."""
    tree = model.tree
    rows, cols = data.to_tokens()

    def dm(counts, c):
        counts = list(counts)
        k, n = len(counts), sum(counts)
        out = math.lgamma(k * c) - math.lgamma(n + k * c)
        return out + sum(math.lgamma(x + c) - math.lgamma(c) for x in counts)

    total = dm(np.bincount(z, minlength=tree.n_leaves), model.alpha)
    words = np.zeros((tree.n_nodes, data.n_cols))
    levels = {}
    for t, (i, j) in enumerate(zip(rows, cols, strict=True)):
        node = tree.paths[z[i], v[t]]
        if node < 0:
            return -np.inf
        words[node, j] += 1
        owner = z[i] if model.tau == "leaf" else i
        levels.setdefault(owner, np.zeros(tree.path_lengths[z[i]]))[v[t]] += 1
        if model.tau == "constant":
            total += math.log(1.0 / tree.path_lengths[z[i]])
    total += sum(dm(row, model.eta) for row in words)
    if model.tau != "constant":
        total += sum(dm(row, model.gamma) for row in levels.values())
    return total


@pytest.mark.parametrize("form", FORMS)
def test_collapsed_log_joint_matches_closed_form(form):
    data = CoOccurrence([[1, 1, 0], [0, 0, 2]])
    model = ClusterAbstractionModel(UNBALANCED, alpha=0.7, eta=1.3, gamma=0.9, tau=form)
    states = [(z, v) for z in itertools.product(range(3), repeat=2)
              for v in itertools.product(range(3), repeat=4)]  # fmt: skip
    z = np.array([s[0] for s in states])
    v = np.array([s[1] for s in states])
    got = model.collapsed_log_joint(z, v, data)
    want = np.array([brute_collapsed(model, zz, vv, data) for zz, vv in zip(z, v, strict=True)])
    assert np.isneginf(want).any() and np.isfinite(want).any()
    np.testing.assert_allclose(got, want, rtol=1e-12)


@pytest.mark.parametrize("form", ["leaf", "object"])
def test_collapsed_evidence_matches_monte_carlo_over_the_prior(form):
    """sum over (z, v) of p(z, v, S) = E_prior[p(S | rho, q, tau)]: the enumerated collapsed joint
    against the exact likelihood averaged over prior draws, within 5 standard errors."""
    data = CoOccurrence([[2, 0, 1], [0, 1, 0]])
    model = ClusterAbstractionModel(1, alpha=1.5, eta=2.0, gamma=1.2, tau=form)
    n_tokens = data.total
    states = [(z, v) for z in itertools.product(range(2), repeat=2)
              for v in itertools.product(range(2), repeat=n_tokens)]  # fmt: skip
    log_joint = model.collapsed_log_joint(
        np.array([s[0] for s in states]), np.array([s[1] for s in states]), data
    )
    exact = np.exp(logsumexp(log_joint))
    rng = np.random.default_rng(0)
    draws = 20_000
    rho = rng.dirichlet([1.5, 1.5], size=draws)
    q = rng.dirichlet([2.0] * 3, size=(draws, 3))
    shape = (draws, 2, 2, 2) if form == "object" else (draws, 2, 2)
    tau = rng.dirichlet([1.2, 1.2], size=shape[:-1])
    values = np.array([
        np.exp(model.log_likelihood({"rho": rho[d], "q": q[d], "tau": tau[d]}, data).sum())
        for d in range(draws)
    ])  # fmt: skip
    se = values.std(ddof=1) / np.sqrt(draws)
    assert abs(values.mean() - exact) < 5 * se, (values.mean(), exact, se)


def test_collapsed_log_joint_rejects_bad_states():
    data = CoOccurrence([[1, 1], [0, 1]])
    model = ClusterAbstractionModel(1)
    with pytest.raises(ValueError, match="leaves must be"):
        model.collapsed_log_joint([0, 1, 0], [0, 0, 0], data)
    with pytest.raises(ValueError, match="leaves must lie"):
        model.collapsed_log_joint([0, 2], [0, 0, 0], data)
    with pytest.raises(ValueError, match="levels must lie"):
        model.collapsed_log_joint([0, 1], [0, 2, 0], data)


# ----------------------------------------------------------------------------- PyMC
def _compiled(model, data, temperature=1.0, potentials=False):
    from pymc.model.transform.conditioning import remove_value_transforms

    plain = remove_value_transforms(model.pymc_model(data, temperature=temperature))
    terms = (
        plain.logp(vars=plain.potentials, jacobian=False)
        if potentials
        else plain.logp(jacobian=False)
    )
    return plain, plain.compile_fn(terms, inputs=plain.value_vars)


def _values(pm_model, params, model):
    """The free variables' values from params (tau split by path length when paths differ)."""
    out = {}
    lengths = model.tree.path_lengths
    for var in pm_model.value_vars:
        name = var.name
        if name.startswith("tau_length"):
            length = int(name.removeprefix("tau_length"))
            out[name] = params["tau"][..., lengths == length, :length]
        else:
            out[name] = params[name]
    return out


@pytest.mark.parametrize("form", FORMS)
@pytest.mark.parametrize(
    "tree", [TopicTree.complete_binary(1), UNBALANCED], ids=["binary", "ragged"]
)
def test_pymc_logp_equals_exact_likelihood_and_prior(form, tree):
    pytest.importorskip("pymc")
    data = CoOccurrence(np.array([[3, 0, 1, 2], [0, 0, 0, 0], [1, 4, 0, 2], [0, 1, 1, 1]]),
                        col_labels=list("abcd"))  # fmt: skip
    model = ClusterAbstractionModel(tree, alpha=0.7, eta=1.3, gamma=1.7, tau=form)
    pm_model, fn = _compiled(model, data)
    assert "tau" in pm_model.named_vars and "marginal_loglik" in pm_model.named_vars
    assert tuple(pm_model.named_vars_to_dims["q"]) == ("node", "word")
    assert tuple(pm_model.named_vars_to_dims["tau"]) == tuple(model.dims["tau"])
    for seed in SEEDS:
        params = random_hacm_params(np.random.default_rng(seed), model, 4, 4)
        want = model.log_likelihood(params, data).sum() + model.log_prior(params)
        assert float(fn(_values(pm_model, params, model))) == pytest.approx(want, rel=1e-9)
    tempered, potential = _compiled(model, data, temperature=2.0, potentials=True)
    params = random_hacm_params(np.random.default_rng(9), model, 4, 4)
    assert float(potential(_values(tempered, params, model))) == pytest.approx(
        model.log_likelihood(params, data).sum() / 2, rel=1e-9
    )


def test_pymc_model_rejects_bad_input():
    pytest.importorskip("pymc")
    with pytest.raises(ValueError, match="temperature"):
        ClusterAbstractionModel(1).pymc_model(load("toy"), temperature=0.0)
    with pytest.raises(ValueError, match="larger than the data supports"):
        ClusterAbstractionModel(3).pymc_model(load("toy"))
