"""Tests of the asymmetric clustering model's declaration: checks, simulator, likelihoods, PyMC.

Every likelihood is compared with an independent computation (explicit loops with ``math.log``,
``scipy.special.logsumexp``, scipy's multinomial and Dirichlet densities, the Dirichlet-multinomial
closed form written out with ``math.lgamma``, or a Monte Carlo integral over the prior with its
standard error), never with itself.
"""

import itertools
import math

import numpy as np
import pytest
from scipy import stats
from scipy.special import logsumexp

from latentzoo.data import CoOccurrence, load
from latentzoo.models.aspect import default_dyads
from latentzoo.models.one_sided import OneSidedClustering, default_pairs, row_logsumexp
from tests import helpers

SEEDS = [0, 1, 2]


def random_params(rng, n_cols, k):
    return {"rho": rng.dirichlet(np.ones(k)), "q": rng.dirichlet(np.ones(n_cols), size=k)}


def relabel_clusters(params, perm):
    return {"rho": params["rho"][perm], "q": params["q"][perm]}


def brute_cluster_loglik(counts, q):
    """sum_j n_ij log q_kj with explicit loops (N x K)."""
    n_rows, n_cols = counts.shape
    out = np.zeros((n_rows, q.shape[0]))
    for i in range(n_rows):
        for k in range(q.shape[0]):
            for j in range(n_cols):
                if counts[i, j]:
                    out[i, k] += counts[i, j] * math.log(q[k, j])
    return out


# ----------------------------------------------------------------------------- construction
@pytest.mark.parametrize("kwargs, match", helpers.bad_constructor_arguments())
def test_constructor_rejects_invalid_arguments(kwargs, match):
    with pytest.raises(ValueError, match=match):
        OneSidedClustering(**kwargs)


def test_model_metadata():
    model = OneSidedClustering(np.int64(3), alpha=0.5, eta=2.0)
    assert model.n_clusters == 3
    assert model.name == "one_sided"
    assert model.param_names == ("rho", "q")
    assert model.invariant_names == ("loglik", "p_dyad", "coassign")


# ----------------------------------------------------------------------------- check_data
def test_check_data_converts_arrays():
    data = OneSidedClustering(2).check_data([[1, 2, 0], [0, 0, 3]])
    assert isinstance(data, CoOccurrence) and data.shape == (2, 3)


@pytest.mark.parametrize(
    "k, counts, what",
    [
        (3, [[5, 5, 5], [1, 0, 0]], "only 2 rows"),
        (3, [[1, 0], [0, 0], [0, 1]], "only 2 observations"),
    ],
)
def test_check_data_rejects_too_many_clusters(k, counts, what):
    with pytest.raises(ValueError, match="larger than the data supports") as info:
        OneSidedClustering(k).check_data(counts)
    assert what in str(info.value)


def test_check_data_accepts_more_clusters_than_columns():
    # Clusters group rows: K may exceed the number of columns.
    assert OneSidedClustering(3).check_data([[1], [2], [3]]).shape == (3, 1)


@pytest.mark.parametrize(
    "counts, match",
    [
        ([[1.0, float("nan")]], r"counts\[0, 1\] is NaN"),
        ([[1.0, float("inf")]], r"counts\[0, 1\] is inf"),
        ([[1, -1]], r"counts\[0, 1\] = -1 is negative"),
        ([[0, 0]], "no observations"),
        ([1, 2, 3], "2-D"),
    ],
)
def test_check_data_rejects_bad_counts(counts, match):
    with pytest.raises(ValueError, match=match):
        OneSidedClustering(1).check_data(counts)


def test_check_params():
    model, data = OneSidedClustering(2), load("toy")
    good = {"rho": [0.5, 0.5], "q": np.full((2, 8), 1 / 8)}
    assert model.check_params(good, data)[1].shape == (2, 8)
    for bad, match in [
        ({"rho": [1.0], "q": good["q"]}, "rho has shape"),
        ({"rho": good["rho"], "q": np.full((2, 7), 1 / 7)}, "q has shape"),
        ({"rho": [0.7, 0.7], "q": good["q"]}, "sum to one"),
        ({"rho": [np.nan, 0.5], "q": good["q"]}, "finite"),
    ]:
        with pytest.raises(ValueError, match=match):
            model.check_params(bad, data)


# ----------------------------------------------------------------------------- likelihood
@pytest.mark.parametrize("seed", SEEDS)
def test_log_likelihood_matches_brute_force(seed):
    def brute_loglik(counts, params):
        per_cluster = brute_cluster_loglik(counts, params["q"])
        return [logsumexp(np.log(params["rho"]) + row) for row in per_cluster]

    helpers.assert_log_likelihood_is(
        OneSidedClustering(3), seed, lambda rng: random_params(rng, 9, 3), brute_loglik, atol=1e-14
    )


def test_log_likelihood_plus_coefficient_is_the_mixture_of_multinomials():
    rng = np.random.default_rng(5)
    counts = helpers.random_counts(rng, 5, 6, zero_rows=[2])
    data = CoOccurrence(counts)
    params = random_params(rng, 6, 3)
    model = OneSidedClustering(3)
    want = [
        logsumexp(
            [
                math.log(params["rho"][k])
                + stats.multinomial.logpmf(row, row.sum(), params["q"][k])
                for k in range(3)
            ]
        )
        for row in counts
    ]
    got = model.log_likelihood(params, data) + model.log_multinomial_coefficient(data)
    np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-12)


def test_log_likelihood_does_not_underflow_for_long_rows():
    rng = np.random.default_rng(11)
    n_cols, k = 50, 3
    params = random_params(rng, n_cols, k)
    counts = np.stack([rng.multinomial(5000, params["q"][c]) for c in (0, 2)])
    # the naive product is exactly zero in double precision...
    assert np.prod(params["q"][0] ** counts[0]) == 0.0
    got = OneSidedClustering(k).log_likelihood(params, CoOccurrence(counts))
    per_cluster = brute_cluster_loglik(counts, params["q"])
    want = [logsumexp(np.log(params["rho"]) + per_cluster[i]) for i in range(2)]
    # ...while the log-likelihood is finite (about -1.9e4) and exact
    assert np.all(np.isfinite(got)) and np.all(got < -1000)
    np.testing.assert_allclose(got, want, rtol=1e-12)
    resp = OneSidedClustering(k).responsibilities(params, CoOccurrence(counts))
    assert np.all(np.isfinite(resp))
    assert resp[0, 0] == pytest.approx(1.0) and resp[1, 2] == pytest.approx(1.0)


def test_log_likelihood_with_zero_probabilities():
    data = CoOccurrence([[2, 0], [0, 1], [0, 0]])
    params = {"rho": np.array([1.0, 0.0]), "q": np.array([[1.0, 0.0], [0.0, 1.0]])}
    ll = OneSidedClustering(2).log_likelihood(params, data)
    assert ll[0] == 0.0 and ll[1] == -np.inf and ll[2] == 0.0  # -inf, never NaN


def test_row_logsumexp_is_stable():
    a = np.array([[-1e4, -1e4 - 1], [np.inf * -1, 0.0], [700.0, 710.0]])
    np.testing.assert_allclose(row_logsumexp(a), logsumexp(a, axis=1), rtol=1e-14)


@pytest.mark.parametrize("beta", [1.0, 0.5, 3.0])
def test_responsibilities_are_the_tempered_posterior(beta):
    """eq. (60): <I_ik> ∝ rho_k (prod_j q_kj^n_ij)**beta, brute force in log space."""
    rng = np.random.default_rng(4)
    counts = helpers.random_counts(rng, 6, 7, zero_rows=[1])
    params = random_params(rng, 7, 3)
    per_cluster = brute_cluster_loglik(counts, params["q"])
    log_w = np.log(params["rho"]) + beta * per_cluster
    want = np.exp(log_w - logsumexp(log_w, axis=1, keepdims=True))
    got = OneSidedClustering(3).responsibilities(params, CoOccurrence(counts), beta)
    np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-15)
    np.testing.assert_allclose(got[1], params["rho"], rtol=1e-12)  # empty row: the prior
    with pytest.raises(ValueError, match="beta"):
        OneSidedClustering(3).responsibilities(params, CoOccurrence(counts), 0.0)


def test_heldout_log_likelihood_uses_training_posteriors():
    """eq. (32): sum_j n_ij log sum_k q_kj <I_ik>, brute force."""
    rng = np.random.default_rng(8)
    counts = helpers.random_counts(rng, 5, 6)
    test = CoOccurrence(counts)
    params = random_params(rng, 6, 3)
    resp = rng.dirichlet(np.ones(3), size=5)
    model = OneSidedClustering(3)
    want = np.zeros(5)
    for i in range(5):
        for j in range(6):
            if counts[i, j]:
                want[i] += counts[i, j] * math.log(
                    sum(params["q"][k, j] * resp[i, k] for k in range(3))
                )
    np.testing.assert_allclose(
        model.heldout_log_likelihood({**params, "resp": resp}, test), want, rtol=1e-12
    )
    # without posteriors every row is predicted from the prior rho
    prior = np.tile(params["rho"], (5, 1))
    np.testing.assert_allclose(
        model.heldout_log_likelihood(params, test),
        model.heldout_log_likelihood({**params, "resp": prior}, test),
        rtol=1e-14,
    )
    with pytest.raises(ValueError, match="resp has shape"):
        model.heldout_log_likelihood({**params, "resp": resp[:4]}, test)


def test_predictive_log_density_conditions_on_the_training_row():
    rng = np.random.default_rng(9)
    model = OneSidedClustering(2)
    train_counts = helpers.random_counts(rng, 4, 5)
    test_counts = helpers.random_counts(rng, 4, 5, zero_rows=[2])
    params = random_params(rng, 5, 2)
    a = np.log(params["rho"]) + brute_cluster_loglik(train_counts, params["q"])
    b = brute_cluster_loglik(test_counts, params["q"])
    # p(test_i | train_i) = p(train_i, test_i) / p(train_i)
    want = logsumexp(a + b, axis=1) - logsumexp(a, axis=1)
    got = model.predictive_log_density(
        params, CoOccurrence(test_counts), CoOccurrence(train_counts)
    )
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-13)
    assert got[2] == pytest.approx(0.0, abs=1e-14)
    with pytest.raises(ValueError, match="shape"):
        model.predictive_log_density(params, CoOccurrence([[1]]), CoOccurrence(train_counts))


# ----------------------------------------------------------------------------- invariants
@pytest.mark.parametrize("seed", SEEDS)
def test_invariants_are_label_free_and_what_they_claim(seed):
    model = OneSidedClustering(4)
    data, truth, a = helpers.assert_invariants_label_free(
        model, seed, 4, relabel_clusters, rtol=1e-10, atol=1e-15, n_docs=7, n_words=10, doc_length=6
    )
    counts = data.toarray()
    log_w = np.log(truth["rho"]) + brute_cluster_loglik(counts, truth["q"])
    resp = np.exp(log_w - logsumexp(log_w, axis=1, keepdims=True))
    assert float(a["loglik"]) == pytest.approx(logsumexp(log_w, axis=1).sum(), rel=1e-12)
    dyads = default_dyads(data)
    want = [sum(resp[i, k] * truth["q"][k, j] for k in range(4)) for i, j in dyads]
    np.testing.assert_allclose(a["p_dyad"], want, rtol=1e-10)
    pairs = default_pairs(data)
    assert len(pairs) == 21
    want = [sum(resp[i, k] * resp[h, k] for k in range(4)) for i, h in pairs]
    np.testing.assert_allclose(a["coassign"], want, rtol=1e-10, atol=1e-300)
    assert np.all((a["coassign"] >= 0) & (a["coassign"] <= 1 + 1e-12))


def test_default_pairs():
    small = CoOccurrence(np.ones((4, 2), dtype=int))
    assert default_pairs(small).tolist() == [[0, 1], [0, 2], [0, 3], [1, 2], [1, 3], [2, 3]]
    totals = np.arange(25) % 7 + 1  # largest totals: rows 6, 13, 20 (7), then 5, 12, 19 (6)
    big = CoOccurrence(np.diag(totals))
    pairs = default_pairs(big)
    assert len(pairs) == 15
    assert sorted(set(pairs.ravel().tolist())) == [5, 6, 12, 13, 19, 20]
    assert np.all(pairs[:, 0] < pairs[:, 1])
    assert np.array_equal(default_pairs(big), pairs)


# ----------------------------------------------------------------------------- simulator
@pytest.mark.parametrize("seed", SEEDS)
def test_simulate_is_reproducible(seed):
    a, ta = helpers.assert_simulate_is_reproducible(
        OneSidedClustering(3), seed, ("rho", "q", "z"), "q", n_docs=8, n_words=11, doc_length=17
    )
    assert a.shape == (8, 11) and np.all(a.row_totals == 17)
    assert ta["rho"].shape == (3,) and ta["q"].shape == (3, 11) and ta["z"].shape == (8,)
    np.testing.assert_allclose(ta["q"].sum(1), 1.0, rtol=1e-12)


@pytest.mark.parametrize("seed", SEEDS)
def test_simulate_draws_from_the_generative_process(seed):
    """Cluster sizes ~ Multinomial(N, rho) and each cluster's column totals ~ its multinomial."""
    k, n_docs, n_words, length = 3, 3000, 6, 20
    model = OneSidedClustering(k, alpha=2.0, eta=1.0)
    data, truth = model.simulate(seed, n_docs=n_docs, n_words=n_words, doc_length=length)
    rho, q, z = truth["rho"], truth["q"], truth["z"]
    sizes = np.bincount(z, minlength=k)
    zscore = (sizes - n_docs * rho) / np.sqrt(n_docs * rho * (1 - rho))
    assert np.all(np.abs(zscore) < 5), zscore
    counts = data.toarray()
    for cluster in range(k):
        members = counts[z == cluster]
        if len(members) < 20:
            continue
        total = length * len(members)
        expected = total * q[cluster]
        sd = np.sqrt(total * q[cluster] * (1 - q[cluster]))
        zscore = (members.sum(0) - expected) / np.maximum(sd, 1e-12)
        assert np.all(np.abs(zscore) < 5), zscore
    # rows within a cluster share one distribution: under the truth, each row's own cluster
    # explains it best far more often than chance
    resp = model.responsibilities(truth, data)
    assert np.mean(resp.argmax(1) == z) > 0.8


def test_simulate_separated_clusters():
    k, n_words, sep = 3, 12, 0.9
    data, truth = OneSidedClustering(k).simulate(
        1, n_docs=10, n_words=n_words, separated=True, separation=sep
    )
    np.testing.assert_allclose(truth["rho"], 1 / 3)
    assert sorted(np.bincount(truth["z"]).tolist()) == [3, 3, 4]
    block = n_words // k
    for cluster in range(k):
        own = truth["q"][cluster, cluster * block : (cluster + 1) * block].sum()
        assert own == pytest.approx(sep + (1 - sep) * block / n_words, rel=1e-12)
    with pytest.raises(ValueError, match="n_words"):
        OneSidedClustering(5).simulate(0, n_words=4, separated=True)
    with pytest.raises(ValueError, match="n_docs"):
        OneSidedClustering(2).simulate(0, n_docs=0)


# ----------------------------------------------------------------------------- collapsed model
def closed_form_log_joint(counts, z, k, alpha, eta):
    """log p(z, S) of the collapsed mixture written out with loops and math.lgamma."""
    n_rows, n_cols = counts.shape
    total = math.lgamma(k * alpha) - math.lgamma(n_rows + k * alpha)
    for cluster in range(k):
        m = sum(1 for i in range(n_rows) if z[i] == cluster)
        total += math.lgamma(m + alpha) - math.lgamma(alpha)
        c = [sum(counts[i, j] for i in range(n_rows) if z[i] == cluster) for j in range(n_cols)]
        total += math.lgamma(n_cols * eta) - math.lgamma(sum(c) + n_cols * eta)
        total += sum(math.lgamma(x + eta) - math.lgamma(eta) for x in c)
    return total


@pytest.mark.parametrize("alpha, eta", [(1.1, 1.01), (0.3, 0.5), (2.0, 0.1)])
def test_collapsed_log_joint_matches_closed_form(alpha, eta):
    # the last column is never observed: the eta-normaliser still counts it
    counts = np.array([[2, 1, 0, 0], [0, 1, 3, 0], [1, 0, 0, 0], [0, 0, 0, 0]])
    data = CoOccurrence(counts)
    k = 3
    model = OneSidedClustering(k, alpha=alpha, eta=eta)
    states = np.array(list(itertools.product(range(k), repeat=4)))
    got = model.collapsed_log_joint(states, data)
    want = [closed_form_log_joint(counts, z, k, alpha, eta) for z in states]
    assert got.shape == (len(states),)
    np.testing.assert_allclose(got, want, rtol=1e-12)
    assert model.collapsed_log_joint(states[5], data) == pytest.approx(want[5], rel=1e-12)


def test_collapsed_log_joint_rejects_bad_assignments():
    model, data = OneSidedClustering(2), CoOccurrence([[1, 0], [0, 1]])
    with pytest.raises(ValueError, match="expected 2"):
        model.collapsed_log_joint(np.zeros((1, 3), dtype=int), data)
    with pytest.raises(ValueError, match="0..1"):
        model.collapsed_log_joint(np.array([[0, 2]]), data)


def test_collapsed_evidence_matches_monte_carlo_over_the_prior():
    """sum_z exp(log p(z, S)) = E_prior[prod_i sum_k rho_k prod_j q_kj^n_ij], within 5 MC errors."""
    counts = np.array([[2, 1, 0], [0, 1, 1], [1, 0, 1]])
    k, alpha, eta = 2, 0.8, 1.5
    model = OneSidedClustering(k, alpha=alpha, eta=eta)
    states = np.array(list(itertools.product(range(k), repeat=3)))

    def likelihoods(rng, n):
        rho = rng.dirichlet(np.full(k, alpha), size=n)  # (n, K)
        q = rng.dirichlet(np.full(3, eta), size=(n, k))  # (n, K, M)
        per_cluster = np.prod(q[:, None, :, :] ** counts[None, :, None, :], axis=-1)  # (n, N, K)
        return np.prod((rho[:, None, :] * per_cluster).sum(-1), axis=1)

    log_joints = model.collapsed_log_joint(states, CoOccurrence(counts))
    helpers.assert_evidence_is_the_prior_average(log_joints, likelihoods)


# ----------------------------------------------------------------------------- PyMC reference
@pytest.fixture(scope="module")
def reference_setup():
    pytest.importorskip("pymc")
    model = OneSidedClustering(3, alpha=0.7, eta=1.3)
    data, pm_model, fn, _, potential = helpers.pymc_reference(model)
    return model, data, pm_model, fn, potential


def test_pymc_model_declares_named_variables_with_dims(reference_setup):
    _, _, pm_model, *_ = reference_setup
    assert set(pm_model.named_vars) == {"rho", "q", "marginal_loglik"}
    dims = pm_model.named_vars_to_dims
    assert dims["rho"] == ("cluster",) and dims["q"] == ("cluster", "word")
    assert [p.name for p in pm_model.potentials] == ["marginal_loglik"]
    assert list(pm_model.coords["word"]) == list("abcde")
    assert len(pm_model.coords["cluster"]) == 3 and len(pm_model.coords["doc"]) == 4


@pytest.mark.parametrize("seed", SEEDS)
def test_pymc_logp_equals_exact_likelihood_and_prior(reference_setup, seed):
    model, data, _, fn, _ = reference_setup
    params = random_params(np.random.default_rng(seed), 5, 3)
    want = model.log_likelihood(params, data).sum() + model.log_prior(params)
    assert float(fn(params)) == pytest.approx(want, rel=1e-9)


def test_tempered_model_has_half_the_likelihood(reference_setup):
    model, data, _, _, potential = reference_setup
    for seed in SEEDS:
        params = random_params(np.random.default_rng(seed), 5, 3)
        loglik = model.log_likelihood(params, data).sum()
        assert float(potential(params)) == pytest.approx(loglik / 2, rel=1e-9)


def test_pymc_model_rejects_bad_input():
    with pytest.raises(ValueError, match="temperature"):
        OneSidedClustering(2).pymc_model(load("toy"), temperature=-1.0)
    with pytest.raises(ValueError, match="larger than the data supports"):
        OneSidedClustering(9).pymc_model(load("toy"))
