"""Tests of the symmetric clustering model's declaration: likelihood identities, the Bayesian model's
simulator and collapsed marginal, the PyMC reference and the label-invariant summaries."""

import itertools
import math

import numpy as np
import pytest
from scipy import stats
from scipy.special import gammaln, logsumexp

from latentzoo.data import CoOccurrence, load
from latentzoo.inference.compare import enumerate_assignments
from latentzoo.models.two_sided import TwoSidedClustering, default_pairs, within_cluster
from tests.helpers import random_counts

SEEDS = [0, 1, 2]


def random_data(seed, n_rows=9, n_cols=11):
    rng = np.random.default_rng(seed)
    counts = random_counts(rng, n_rows, n_cols, zero_rows=[2], zero_cols=[4], rate=1.3)
    return CoOccurrence(counts), counts


def relabel(params, perm_x, perm_y):
    """The same parameters with cluster nu renamed perm_x[nu] (and mu -> perm_y[mu])."""
    out = dict(params)
    inv_x, inv_y = np.argsort(perm_x), np.argsort(perm_y)
    for name, perm, inv in (("I", perm_x, inv_x), ("J", perm_y, inv_y)):
        value = np.asarray(params[name])
        out[name] = perm[value] if value.ndim == 1 else value[:, inv]
    for name in ("c", "pi"):
        if name in params:
            out[name] = np.asarray(params[name])[inv_x][:, inv_y]
    for name, inv in (("rho_x", inv_x), ("rho_y", inv_y)):
        if name in params:
            out[name] = np.asarray(params[name])[inv]
    return out


# ----------------------------------------------------------------------------- construction
@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"n_row_clusters": 0, "n_col_clusters": 2}, "n_row_clusters must be an integer >= 1"),
        ({"n_row_clusters": 2, "n_col_clusters": 1.5}, "n_col_clusters must be an integer >= 1"),
        ({"n_row_clusters": True, "n_col_clusters": 2}, "n_row_clusters must be an integer"),
        ({"n_row_clusters": 2, "n_col_clusters": 2, "alpha": 0.0}, "alpha must be a positive"),
        ({"n_row_clusters": 2, "n_col_clusters": 2, "eta": np.nan}, "eta must be a positive"),
        ({"n_row_clusters": 2, "n_col_clusters": 2, "eta": np.inf}, "eta must be a positive"),
    ],
)
def test_constructor_rejects_invalid_arguments(kwargs, match):
    with pytest.raises(ValueError, match=match):
        TwoSidedClustering(**kwargs)


def test_constructor_accepts_numpy_integers():
    model = TwoSidedClustering(np.int64(2), np.int32(3), alpha=0.5, eta=0.3)
    assert model.shape == (2, 3) and model.name == "two_sided"


@pytest.mark.parametrize(
    "kx, ky, match",
    [
        (7, 2, "n_row_clusters=7 is larger than the data supports: only 6 rows"),
        (2, 9, "n_col_clusters=9 is larger than the data supports: only 8 columns"),
    ],
)
def test_check_data_rejects_too_many_clusters(kx, ky, match):
    with pytest.raises(ValueError, match=match):
        TwoSidedClustering(kx, ky).check_data(load("toy"))


def test_check_data_rejects_more_clusters_than_observations():
    data = CoOccurrence([[1, 0, 0], [0, 0, 1], [0, 0, 0]])
    with pytest.raises(ValueError, match="larger than the data supports: only 2 observations"):
        TwoSidedClustering(3, 1).check_data(data)


@pytest.mark.parametrize(
    "counts, match",
    [
        ([[1, np.nan], [0, 2]], "NaN"),
        ([[1, np.inf], [0, 2]], "inf"),
        ([[1, -1], [0, 2]], "negative"),
        ([[0, 0], [0, 0]], "no observations"),
    ],
)
def test_check_data_rejects_bad_counts(counts, match):
    model = TwoSidedClustering(1, 1)
    with pytest.raises(ValueError, match=match):
        model.check_data(np.array(counts))
    if match != "no observations":
        with pytest.raises(ValueError, match=match):
            model.collapsed_log_joint([0, 0], [0, 0], np.array(counts))


def test_check_data_accepts_the_boundary_and_arrays():
    data = TwoSidedClustering(6, 8).check_data(load("toy").toarray())
    assert isinstance(data, CoOccurrence) and data.shape == (6, 8)


def test_bad_assignments_raise_with_a_message():
    model, data = TwoSidedClustering(2, 2), load("toy")
    with pytest.raises(ValueError, match=r"I has shape \(5,\), expected \(6,\)"):
        model.estimate(np.zeros(5, dtype=int), np.zeros(8, dtype=int), data)
    with pytest.raises(ValueError, match="labels must lie in 0..1"):
        model.estimate(np.full(6, 2), np.zeros(8, dtype=int), data)
    with pytest.raises(ValueError, match="rows of J must sum to one"):
        model.estimate(np.zeros(6, dtype=int), np.full((8, 2), 0.7), data)
    with pytest.raises(ValueError, match="J labels must lie in 0..1"):
        model.collapsed_log_joint(np.zeros(6, dtype=int), np.full(8, 3), data)
    with pytest.raises(ValueError, match="I has 5 columns, expected 6"):
        model.collapsed_log_joint(np.zeros(5, dtype=int), np.zeros(8, dtype=int), data)
    with pytest.raises(ValueError, match="alone define no likelihood"):
        model.log_likelihood({"I": np.zeros(6, dtype=int), "J": np.zeros(8, dtype=int)}, data)


# ------------------------------------------------------------------ the SCM criterion (36)+(42)
@pytest.mark.parametrize("seed", SEEDS)
def test_log_likelihood_is_L_times_mutual_information_plus_a_constant(seed):
    """Eq. (36) with (42): sum n log p_ij = L MI(I; J) - L (H(X) + H(Y)) for every partition."""
    data, counts = random_data(seed)
    rng = np.random.default_rng(seed)
    n_i, m_j, total = counts.sum(1), counts.sum(0), counts.sum()
    entropy = -sum(np.sum(v[v > 0] / total * np.log(v[v > 0] / total)) for v in (n_i, m_j))
    for kx, ky in [(1, 1), (2, 3), (3, 2), (4, 4)]:
        model = TwoSidedClustering(kx, ky)
        assert model.log_likelihood_offset(data) == pytest.approx(-total * entropy, rel=1e-12)
        for _ in range(5):
            labels_i = rng.integers(0, kx, data.n_rows)
            labels_j = rng.integers(0, ky, data.n_cols)
            params = model.estimate(labels_i, labels_j, data)
            mi = model.mutual_information(labels_i, labels_j, data)
            loglik = model.log_likelihood(params, data).sum()
            assert loglik == pytest.approx(total * mi - total * entropy, rel=1e-12, abs=1e-9)
            assert mi >= -1e-12
            # brute force: eq. (34) on the dense grid, eq. (42)-(43) from the counts
            onehot_i, onehot_j = np.eye(kx)[labels_i], np.eye(ky)[labels_j]
            pi = onehot_i.T @ counts @ onehot_j / total
            with np.errstate(divide="ignore", invalid="ignore"):
                c = np.where(pi > 0, pi / np.outer(pi.sum(1), pi.sum(0)), 0.0)
            p = np.outer(n_i / total, m_j / total) * c[labels_i][:, labels_j]
            assert p.sum() == pytest.approx(1.0, rel=1e-12)  # eq. (35) holds automatically
            with np.errstate(divide="ignore", invalid="ignore"):
                want = np.where(counts > 0, counts * np.log(p), 0.0).sum(axis=1)
            np.testing.assert_allclose(model.log_likelihood(params, data), want, rtol=1e-12)
    # one cluster on either side carries no information
    assert TwoSidedClustering(1, 3).mutual_information(
        np.zeros(data.n_rows, dtype=int), rng.integers(0, 3, data.n_cols), data
    ) == pytest.approx(0.0, abs=1e-12)


def test_mutual_information_of_a_perfect_block_diagonal():
    data = CoOccurrence([[3, 0, 0], [0, 2, 2]])
    model = TwoSidedClustering(2, 2)
    assert model.mutual_information([0, 1], [0, 1, 1], data) == pytest.approx(
        stats.entropy([3 / 7, 4 / 7])
    )


# ---------------------------------------------------------------- predictive and J-consistency
def all_dyads(data):
    return np.array(list(itertools.product(range(data.n_rows), range(data.n_cols))))


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("eta", [1.0, 1.5])
def test_conditional_normalises_over_columns(seed, eta):
    """J-consistency: q_j sum <I><J> c sums to one over j for any <I> (eq. (45), (47))."""
    data, _ = random_data(seed)
    rng = np.random.default_rng(seed)
    model = TwoSidedClustering(3, 2, eta=eta)
    soft_i = rng.dirichlet(np.ones(3), data.n_rows)
    soft_j = rng.dirichlet(np.ones(2), data.n_cols)
    for labels in (False, True):
        params = (
            model.estimate(soft_i.argmax(1), soft_j.argmax(1), data)
            if labels
            else model.estimate(soft_i, soft_j, data)
        )
        # other row posteriors than the ones c was estimated with (on the clusters that have
        # observations; c is 0 on an empty one): still normalised
        other = rng.dirichlet(np.ones(3), data.n_rows) * (params["pi"].sum(axis=1) > 0)
        params["I"] = other / other.sum(axis=1, keepdims=True)
        grid = model.conditional(params, all_dyads(data)).reshape(data.shape)
        np.testing.assert_allclose(grid.sum(axis=1), 1.0, rtol=1e-12)
        assert np.all(grid >= 0)
    # labels only (posterior predictive given the partitions) and a Bayesian draw
    truth = model.simulate(seed, n_rows=5, n_cols=7, n_tokens=40)[1]
    small = model.simulate(seed, n_rows=5, n_cols=7, n_tokens=40)[0]
    for params in (truth, {"I": truth["I"], "J": truth["J"]}):
        grid = model.conditional(params, all_dyads(small), small).reshape(small.shape)
        rows = np.flatnonzero(np.isin(truth["I"], np.flatnonzero(truth["pi"].sum(1) > 0)))
        np.testing.assert_allclose(grid[rows].sum(axis=1), 1.0, rtol=1e-12)


def test_heldout_log_likelihood_is_eq_47_and_finite_on_unseen_columns():
    data, counts = random_data(4)
    model = TwoSidedClustering(2, 3, eta=1.0)
    params = model.estimate(np.arange(data.n_rows) % 2, np.arange(data.n_cols) % 3, data)
    test_counts = np.zeros_like(counts)
    test_counts[1, 3] = 2
    test_counts[5, 0] = 1
    test = CoOccurrence(test_counts)
    q, c = params["q"], params["c"]
    want = np.log(q[3] * c[1, 0]) * 2
    assert model.heldout_log_likelihood(params, test)[1] == pytest.approx(want, rel=1e-12)
    # column 4 is never observed in training: probability 0 with eta = 1 (eq. (47) exactly),
    # positive with the default pseudo-count eta - 1
    test_counts[1, 4] = 1
    test = CoOccurrence(test_counts)
    assert model.heldout_log_likelihood(params, test)[1] == -np.inf
    smoothed = TwoSidedClustering(2, 3).heldout_log_likelihood(params, test)
    assert np.all(np.isfinite(smoothed))


def test_point_log_likelihood_with_soft_assignments_is_the_plug_in_of_eq_47():
    data, counts = random_data(5)
    rng = np.random.default_rng(5)
    model = TwoSidedClustering(2, 2)
    params = model.estimate(rng.dirichlet([1, 1], 9), rng.dirichlet([1, 1], 11), data)
    p = np.outer(params["p"], params["q"]) * (params["I"] @ params["c"] @ params["J"].T)
    assert p.sum() == pytest.approx(1.0, rel=1e-12)
    with np.errstate(divide="ignore", invalid="ignore"):
        want = np.where(counts > 0, counts * np.log(p), 0.0).sum(axis=1)
    np.testing.assert_allclose(model.log_likelihood(params, data), want, rtol=1e-12)


# ------------------------------------------------------------------------ the Bayesian model
@pytest.mark.parametrize("seed", SEEDS)
def test_bayesian_parameterisation_is_eq_34(seed):
    """p_ij = pi[I,J] psi_x psi_y equals p_i q_j c[I,J] with c = pi / (pi^x pi^y) and the scale
    constraints sum_i p_i I_i = pi^x (the derivation in the module docstring)."""
    model = TwoSidedClustering(3, 2, alpha=0.7, eta=0.9)
    data, truth = model.simulate(seed, n_rows=8, n_cols=9, n_tokens=50)
    pi, labels_i, labels_j = truth["pi"], truth["I"], truth["J"]
    joint = pi[labels_i][:, labels_j] * np.outer(truth["psi_x"], truth["psi_y"])
    assert joint.sum() == pytest.approx(1.0, rel=1e-12)
    p, q = joint.sum(1), joint.sum(0)
    pi_x, pi_y = pi.sum(1), pi.sum(0)
    np.testing.assert_allclose(p, pi_x[labels_i] * truth["psi_x"], rtol=1e-12)
    np.testing.assert_allclose(np.bincount(labels_i, weights=p, minlength=3), pi_x, atol=1e-12)
    with np.errstate(divide="ignore", invalid="ignore"):
        c = np.where(pi > 0, pi / np.outer(pi_x, pi_y), 0.0)
    np.testing.assert_allclose(joint, np.outer(p, q) * c[labels_i][:, labels_j], rtol=1e-10)
    # the log-likelihood of the draw is that of eq. (34) with these p, q, c
    params = {"I": labels_i, "J": labels_j, "c": c, "p": p, "q": q}
    np.testing.assert_allclose(
        model.log_likelihood(params, data), model.log_likelihood(truth, data), rtol=1e-10
    )


def test_maximum_likelihood_of_the_bayesian_model_is_the_seed_estimate():
    data, counts = random_data(6)
    model = TwoSidedClustering(2, 3)
    labels_i, labels_j = np.arange(9) % 2, np.arange(11) % 3
    point = model.estimate(labels_i, labels_j, data)
    n_i, m_j = counts.sum(1), counts.sum(0)
    draw = {
        "I": labels_i,
        "J": labels_j,
        "pi": point["pi"],
        "psi_x": within_cluster(n_i.astype(float), labels_i, 2),
        "psi_y": within_cluster(m_j.astype(float), labels_j, 3),
    }
    np.testing.assert_allclose(
        model.log_likelihood(draw, data), model.log_likelihood(point, data), rtol=1e-12
    )


def exact_marginal(model, shape, n_tokens):
    """p(S) of every count matrix with n_tokens observations, by enumerating (I, J)."""
    n_rows, n_cols = shape
    kx, ky = model.shape
    states = enumerate_assignments(n_rows + n_cols, max(kx, ky))
    states = states[(states[:, :n_rows] < kx).all(1) & (states[:, n_rows:] < ky).all(1)]
    out = {}
    for cells in itertools.combinations_with_replacement(range(n_rows * n_cols), n_tokens):
        counts = np.bincount(cells, minlength=n_rows * n_cols).reshape(shape)
        data = CoOccurrence(counts)
        log_joint = model.collapsed_log_joint(states[:, :n_rows], states[:, n_rows:], data)
        coefficient = gammaln(n_tokens + 1) - gammaln(counts + 1).sum()
        out[tuple(counts.ravel())] = float(np.exp(logsumexp(log_joint) + coefficient))
    return out


@pytest.mark.parametrize("kx, ky", [(2, 2), (2, 1)])
def test_collapsed_marginal_sums_to_one_over_all_data_sets(kx, ky):
    """sum_S sum_{I,J} p(I, J, S) = 1: the collapsed joint is a proper distribution (sequence
    form times the multinomial coefficient), including the occupied-blocks prior of pi."""
    model = TwoSidedClustering(kx, ky, alpha=0.6, eta=1.7)
    marginal = exact_marginal(model, (2, 3), 3)
    assert len(marginal) == math.comb(3 + 6 - 1, 3)
    assert sum(marginal.values()) == pytest.approx(1.0, rel=1e-10)


def test_simulator_draws_data_from_the_collapsed_marginal():
    """Chi-square of simulated count matrices against the exact marginal p(S): the simulator and
    collapsed_log_joint implement the same generative model (measured p ~ 0.5)."""
    model = TwoSidedClustering(2, 2, alpha=0.8, eta=0.6)
    marginal = exact_marginal(model, (2, 2), 3)
    keys = list(marginal)
    rng = np.random.default_rng(0)
    n_sims = 6000
    index = {key: k for k, key in enumerate(keys)}
    observed = np.zeros(len(keys))
    for _ in range(n_sims):
        data, _ = model.simulate(rng, n_rows=2, n_cols=2, n_tokens=3)
        observed[index[tuple(data.toarray().ravel())]] += 1
    expected = np.array([marginal[key] for key in keys]) * n_sims
    chi2 = ((observed - expected) ** 2 / expected).sum()
    p_value = stats.chi2.sf(chi2, len(keys) - 1)
    assert p_value > 1e-4, (chi2, p_value)
    # negative control: the marginal of another eta is rejected
    other = exact_marginal(TwoSidedClustering(2, 2, alpha=0.8, eta=3.0), (2, 2), 3)
    wrong = np.array([other[key] for key in keys]) * n_sims
    assert stats.chi2.sf(((observed - wrong) ** 2 / wrong).sum(), len(keys) - 1) < 1e-6


@pytest.mark.parametrize("seed", SEEDS)
def test_collapsed_log_joint_matches_a_direct_formula(seed):
    rng = np.random.default_rng(seed)
    data, counts = random_data(seed, 5, 6)
    model = TwoSidedClustering(3, 2, alpha=0.9, eta=1.3)
    labels_i = rng.integers(0, 3, (4, 5))
    labels_j = rng.integers(0, 2, (4, 6))
    labels_i[0] = 0  # one occupied row cluster
    got = model.collapsed_log_joint(labels_i, labels_j, data)
    a, e, total = model.alpha, model.eta, counts.sum()
    for s in range(4):
        li, lj = labels_i[s], labels_j[s]
        want = 0.0
        for labels, k in ((li, 3), (lj, 2)):
            sizes = np.bincount(labels, minlength=k)
            want += gammaln(k * a) - gammaln(len(labels) + k * a)
            want += sum(gammaln(sz + a) - gammaln(a) for sz in sizes)
        block = np.zeros((3, 2))
        np.add.at(block, (li[:, None].repeat(6, 1), lj[None, :].repeat(5, 0)), counts)
        occupied = [nu for nu in range(3) if (li == nu).any()]
        occupied_y = [mu for mu in range(2) if (lj == mu).any()]
        b = len(occupied) * len(occupied_y)
        want += gammaln(b * e) - gammaln(total + b * e)
        want += sum(gammaln(block[nu, mu] + e) - gammaln(e) for nu in occupied for mu in occupied_y)
        for labels, totals, k in ((li, counts.sum(1), 3), (lj, counts.sum(0), 2)):
            for cluster in range(k):
                members = totals[labels == cluster]
                if len(members):
                    want += gammaln(len(members) * e) - gammaln(members.sum() + len(members) * e)
                    want += sum(gammaln(n + e) - gammaln(e) for n in members)
        assert got[s] == pytest.approx(want, rel=1e-12)
    # broadcasting one I over many J
    np.testing.assert_allclose(
        model.collapsed_log_joint(labels_i[1], labels_j, data),
        model.collapsed_log_joint(np.repeat(labels_i[1:2], 4, 0), labels_j, data),
    )


# ------------------------------------------------------------------------------ PyMC reference
def test_pymc_model_declares_named_variables():
    model = TwoSidedClustering(2, 3)
    data = load("toy")
    m = model.pymc_model(data)
    assert sorted(m.named_vars) == ["I", "J", "assignment_prior", "marginal_loglik"]
    assert m.named_vars_to_dims["I"] == ("row",) and m.named_vars_to_dims["J"] == ("col",)
    assert list(m.coords["row"]) == list(data.row_labels)


@pytest.mark.parametrize("seed", SEEDS)
def test_pymc_logp_equals_collapsed_log_joint(seed):
    rng = np.random.default_rng(seed)
    data, _ = random_data(seed, 5, 6)
    model = TwoSidedClustering(3, 2, alpha=0.8, eta=1.4)
    logp = model.pymc_model(data).compile_logp()
    tempered = model.pymc_model(data, temperature=2.0).compile_logp()
    for _ in range(4):
        point = {"I": rng.integers(0, 3, 5), "J": rng.integers(0, 2, 6)}
        want = model.collapsed_log_joint(point["I"], point["J"], data)[0]
        assert float(logp(point)) == pytest.approx(want, rel=1e-10)
        # tempering halves exactly the likelihood part log p(S | I, J)
        prior = _collapsed_prior(model, point["I"], point["J"])
        assert float(tempered(point)) == pytest.approx(prior + (want - prior) / 2, rel=1e-10)


def _collapsed_prior(model, labels_i, labels_j):
    out = 0.0
    for labels, k in ((labels_i, model.n_row_clusters), (labels_j, model.n_col_clusters)):
        sizes = np.bincount(labels, minlength=k)
        out += gammaln(k * model.alpha) - gammaln(len(labels) + k * model.alpha)
        out += np.sum(gammaln(sizes + model.alpha) - gammaln(model.alpha))
    return out


def test_pymc_model_rejects_bad_temperature():
    with pytest.raises(ValueError, match="temperature must be a positive"):
        TwoSidedClustering(2, 2).pymc_model(load("toy"), temperature=0.0)


# --------------------------------------------------------------------------------- invariants
@pytest.mark.parametrize("seed", SEEDS)
def test_invariants_are_unchanged_by_relabelling_either_side(seed):
    model = TwoSidedClustering(3, 2)
    data, truth = model.simulate(seed, n_rows=7, n_cols=8, n_tokens=60)
    rng = np.random.default_rng(seed)
    point = model.estimate(rng.dirichlet(np.ones(3), 7), rng.dirichlet(np.ones(2), 8), data)
    labels = {"I": truth["I"], "J": truth["J"]}
    perm_x, perm_y = np.array([2, 0, 1]), np.array([1, 0])
    for params in (truth, point, labels):
        a = model.invariants(params, data)
        b = model.invariants(relabel(params, perm_x, perm_y), data)
        assert sorted(a) == sorted(model.invariant_names)
        for name in a:
            np.testing.assert_allclose(a[name], b[name], rtol=1e-12, err_msg=name)


def test_coassignment_values():
    model = TwoSidedClustering(2, 2)
    data = load("toy")
    params = {"I": np.array([0, 0, 1, 1, 0, 1]), "J": np.array([0] * 4 + [1] * 4)}
    inv = model.invariants(params, data)
    pairs = default_pairs(data.row_totals)
    np.testing.assert_array_equal(
        inv["coassign_rows"], params["I"][pairs[:, 0]] == params["I"][pairs[:, 1]]
    )
    assert inv["coassign_cols"].shape == (28,)


def test_default_pairs_use_the_largest_objects_beyond_twenty():
    totals = np.zeros(25)
    totals[[3, 7, 20]] = [5, 9, 9]
    pairs = default_pairs(totals, n_items=3)
    assert pairs.tolist() == [[3, 7], [3, 20], [7, 20]]
    assert default_pairs(np.ones(4)).shape == (6, 2)


def test_labels_only_invariants_are_rao_blackwellised():
    """E[draw invariant | I, J, S] equals the labels-only invariant (Monte Carlo, 6 SE)."""
    model = TwoSidedClustering(2, 2, alpha=0.8, eta=0.7)
    data = CoOccurrence([[3, 0, 1], [0, 2, 1], [1, 0, 2]])
    labels_i, labels_j = np.array([0, 1, 1]), np.array([1, 0, 1])
    want = model.invariants({"I": labels_i, "J": labels_j}, data)
    rng = np.random.default_rng(0)
    onehot_i, onehot_j = np.eye(2)[labels_i], np.eye(2)[labels_j]
    block = onehot_i.T @ data.toarray() @ onehot_j
    draws = []
    for _ in range(4000):
        params = {
            "I": labels_i,
            "J": labels_j,
            "pi": rng.dirichlet(block.ravel() + model.eta).reshape(2, 2),
            "psi_x": within_cluster(rng.standard_gamma(data.row_totals + model.eta), labels_i, 2),
            "psi_y": within_cluster(rng.standard_gamma(data.col_totals + model.eta), labels_j, 2),
        }
        inv = model.invariants(params, data)
        draws.append(np.concatenate([[inv["loglik"]], inv["p_dyad"]]))
    draws = np.array(draws)
    se = draws.std(0) / np.sqrt(len(draws))
    target = np.concatenate([[want["loglik"]], want["p_dyad"]])
    assert np.all(np.abs(draws.mean(0) - target) < 6 * se), (draws.mean(0), target, se)


@pytest.mark.parametrize("seed", SEEDS)
def test_predictive_log_density_is_the_collapsed_ratio(seed):
    """Labels only: log p(train + test_i | I, J) - log p(train | I, J), row by row; draws and
    point estimates: the log-likelihood of the held-out pairs."""
    model = TwoSidedClustering(3, 2, alpha=0.9, eta=0.8)
    data, truth = model.simulate(seed, n_rows=6, n_cols=7, n_tokens=60)
    train, test = data.split(0.3, random_state=seed)
    labels = {"I": truth["I"], "J": truth["J"]}
    got = model.predictive_log_density(labels, test, train)
    base = model.collapsed_log_joint(truth["I"], truth["J"], train)[0]
    for i in range(data.n_rows):
        one_row = np.zeros(data.shape, dtype=np.int64)
        one_row[i] = test.toarray()[i]
        joined = CoOccurrence(train.toarray() + one_row)
        want = model.collapsed_log_joint(truth["I"], truth["J"], joined)[0] - base
        assert got[i] == pytest.approx(want, rel=1e-10, abs=1e-10)
    np.testing.assert_allclose(
        model.predictive_log_density(truth, test, train), model.log_likelihood(truth, test)
    )
    with pytest.raises(ValueError, match="test has shape"):
        model.predictive_log_density(labels, CoOccurrence([[1]]), train)


# --------------------------------------------------------------------------------- simulator
def test_simulate_is_reproducible_and_validates_sizes():
    model = TwoSidedClustering(2, 3)
    a, ta = model.simulate(5, n_rows=6, n_cols=7, n_tokens=30)
    b, tb = model.simulate(5, n_rows=6, n_cols=7, n_tokens=30)
    assert a == b and all(np.array_equal(ta[k], tb[k]) for k in ta)
    assert a.total == 30 and ta["pi"].sum() == pytest.approx(1.0)
    with pytest.raises(ValueError, match="n_tokens must be an integer >= 1"):
        model.simulate(0, n_tokens=0)
    with pytest.raises(ValueError, match="separated clusters need n_rows >= 2"):
        model.simulate(0, n_rows=1, separated=True)


def test_simulate_separated_blocks():
    model = TwoSidedClustering(3, 3)
    data, truth = model.simulate(0, n_rows=12, n_cols=12, n_tokens=3000, separated=True)
    assert np.bincount(truth["I"]).tolist() == [4, 4, 4]
    onehot_i, onehot_j = np.eye(3)[truth["I"]], np.eye(3)[truth["J"]]
    block = onehot_i.T @ data.toarray() @ onehot_j / data.total
    assert np.trace(block) > 0.85
    assert model.mutual_information(truth["I"], truth["J"], data) > 0.6
