"""Tests of the asymmetric clustering model's fast inference: hard ACM, annealed EM, Gibbs.

The fused EM pass is compared with a dense numpy E/M step; EM with its Lyapunov property (free
energy never increases at fixed temperature) and, for maximum likelihood, the log-likelihood never
decreasing; hard ACM with its monotone objective and as the low-temperature limit of annealed EM;
the Gibbs sampler with the exact posterior over all K**N assignments (enumerated), with
simulation-based calibration and with PyMC's NUTS, each statistical test with a negative control
showing its power.
"""

import math

import arviz as az
import numba as nb
import numpy as np
import pytest
from scipy import stats
from scipy.special import logsumexp

from latentzoo.data import CoOccurrence, load
from latentzoo.inference.annealing import perplexity
from latentzoo.inference.compare import agreement, enumerate_assignments, sbc
from latentzoo.inference.mcmc import add_invariants
from latentzoo.inference.one_sided import (
    OneSidedEM,
    OneSidedGibbs,
    acm_em_pass,
    annealed_em,
    gibbs,
    hard_acm,
)
from latentzoo.models.aspect import default_dyads
from latentzoo.models.one_sided import OneSidedClustering, default_pairs
from tests import helpers
from tests.helpers import assert_cooccurrence_idata, exact_draws_check, random_counts, sbc_gibbs

SEEDS = [0, 1, 2]


def random_problem(seed, n_rows=9, n_cols=13, k=3):
    rng = np.random.default_rng(seed)
    counts = random_counts(rng, n_rows, n_cols, zero_rows=[2], zero_cols=[5], rate=1.2)
    rho = rng.dirichlet(np.ones(k))
    q = rng.dirichlet(np.ones(n_cols), k)
    return CoOccurrence(counts), counts, rho, q


def dense_em(counts, rho, q, beta):
    """Tempered E-step (eq. (60)) and M-step sums with dense numpy and scipy's logsumexp."""
    per_cluster = counts @ np.log(q).T  # (N, K)
    tempered = np.log(rho) + beta * per_cluster
    norm = logsumexp(tempered, axis=1)
    resp = np.exp(tempered - norm[:, None])
    n_q = resp.T @ counts  # (K, M)
    loglik = logsumexp(np.log(rho) + per_cluster, axis=1).sum()
    return resp, n_q, norm.sum(), loglik


def simulated(seed, k=3, **sizes):
    sizes = {"n_docs": 25, "n_words": 30, "doc_length": 40, **sizes}
    return OneSidedClustering(k).simulate(seed, **sizes)[0]


def same_partition(a, b):
    """Two label vectors describe the same partition (labels may be permuted)."""
    return np.array_equal(a[:, None] == a[None, :], b[:, None] == b[None, :])


# ----------------------------------------------------------------------------- EM kernel
@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("beta", [1.0, 0.6, 4.0])
def test_em_pass_matches_dense_reference(seed, beta):
    data, counts, rho, q = random_problem(seed)
    want = dense_em(counts, rho, q, beta)
    threads_before = nb.get_num_threads()
    for n_threads in (1, 2):
        got = acm_em_pass(data, rho, q, beta, n_threads=n_threads)
        np.testing.assert_allclose(got[0], want[0], rtol=1e-10, atol=1e-14)
        np.testing.assert_allclose(got[1], want[1], rtol=1e-10, atol=1e-12)
        assert got[2] == pytest.approx(want[2], rel=1e-12)
        assert got[3] == pytest.approx(want[3], rel=1e-12)
        assert got[1].sum() == pytest.approx(data.total, rel=1e-12)
        assert np.all(got[1][:, 5] == 0)
    assert nb.get_num_threads() == threads_before  # the caller's setting is restored


def test_em_pass_handles_zero_probabilities():
    """Maximum likelihood leaves q_kj = 0: log q = -inf must give zero posterior, never NaN."""
    data = CoOccurrence([[2, 0, 1], [0, 3, 0]])
    q = np.array([[0.5, 0.0, 0.5], [0.0, 1.0, 0.0]])
    resp, n_q, energy, loglik = acm_em_pass(data, np.array([0.5, 0.5]), q)
    np.testing.assert_array_equal(resp, [[1.0, 0.0], [0.0, 1.0]])
    assert energy == pytest.approx(3 * math.log(0.5) + 2 * math.log(0.5), rel=1e-12)
    assert np.all(np.isfinite(n_q))
    # a row no cluster can produce (only after an over-relaxed step): energy -inf, no NaN
    impossible = np.array([[0.5, 0.0, 0.5], [0.5, 0.0, 0.5]])
    resp, n_q, energy, loglik = acm_em_pass(data, np.array([0.5, 0.5]), impossible)
    assert energy == -np.inf and loglik == -np.inf
    assert np.all(np.isfinite(resp)) and np.all(np.isfinite(n_q))
    new, stats_ = OneSidedEM(OneSidedClustering(2), data).step(
        {"rho": [0.5, 0.5], "q": impossible}, 1
    )
    assert stats_.free_energy == np.inf


@pytest.mark.parametrize("beta", [1.0, 0.5])
def test_step_is_the_map_m_step_and_reports_the_free_energy(beta):
    model = OneSidedClustering(3, alpha=1.5, eta=1.2)
    new, stats_, (rho, q), (resp, n_q, energy, loglik) = helpers.em_step_beside_dense(
        OneSidedEM, model, ("rho", "q"), random_problem(3), dense_em, beta
    )
    want_rho = (resp.sum(0) + 0.5) / (resp.sum() + 3 * 0.5)
    want_q = (n_q + 0.2) / (n_q + 0.2).sum(1, keepdims=True)
    np.testing.assert_allclose(new["rho"], want_rho, rtol=1e-10)
    np.testing.assert_allclose(new["q"], want_q, rtol=1e-10)
    np.testing.assert_allclose(new["resp"], resp, rtol=1e-10, atol=1e-14)
    want_free = -(energy + 0.5 * np.log(rho).sum()) / beta - 0.2 * np.log(q).sum()
    assert stats_.free_energy == pytest.approx(want_free, rel=1e-10)
    assert stats_.log_likelihood == pytest.approx(loglik, rel=1e-10)


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("beta", [1.0, 0.5, 0.2])
def test_free_energy_never_increases_at_fixed_beta(seed, beta):
    data = simulated(seed)
    for model in (OneSidedClustering(3), OneSidedClustering(4, alpha=2.0, eta=1.5)):
        result = annealed_em(model, data, betas=[beta], max_iter=60, tol=0, random_state=seed)
        helpers.assert_free_energy_falls(result, 60)


@pytest.mark.parametrize("seed", SEEDS)
def test_overrelaxed_em_keeps_the_free_energy_monotone(seed):
    data = simulated(seed)
    result = annealed_em(
        OneSidedClustering(3), data, betas=[0.7], max_iter=40, tol=0, overrelax=1.8,
        random_state=seed,
    )  # fmt: skip
    fe = result.trace["free_energy"].to_numpy()
    assert helpers.increases(fe).size == 0, np.diff(fe).max()
    np.testing.assert_allclose(result.params["rho"].sum(), 1.0, rtol=1e-12)


@pytest.mark.parametrize("seed", SEEDS)
def test_maximum_likelihood_em_never_decreases_the_log_likelihood(seed):
    data = simulated(seed, k=3)
    model = OneSidedClustering(3, alpha=1.0, eta=1.0)
    result = annealed_em(model, data, betas=[1.0], max_iter=60, tol=0, random_state=seed)
    ll = result.trace["log_likelihood"].to_numpy()
    assert np.all(np.diff(ll) >= -1e-12 * np.abs(ll[1:])), np.diff(ll).min()
    # at beta = 1 and flat priors the free energy is minus the log-likelihood
    np.testing.assert_allclose(result.trace["free_energy"], -ll, rtol=1e-12)
    final = model.log_likelihood(result.params, data).sum()
    assert final >= ll[-1] - 1e-9 * abs(final)


# ----------------------------------------------------------------------------- hard ACM
@pytest.mark.parametrize("seed", SEEDS)
def test_hard_acm_objective_is_monotone_and_correct(seed):
    data = simulated(seed, k=4, n_docs=40)
    model = OneSidedClustering(4)
    result = hard_acm(model, data, random_state=seed)
    objective = result.trace["objective"].to_numpy()
    assert helpers.increases(objective).size == 0, np.diff(objective).max()
    assert result.converged and result.trace["changed"].iloc[-1] == 0
    z, q = result.params["z"], result.params["q"]
    # the last recorded objective is J(z, q) of the returned parameters, recomputed with loops
    counts = data.toarray()
    j = -sum(
        counts[i, c] * math.log(q[z[i], c]) for i in range(40) for c in range(30) if counts[i, c]
    )
    j -= (model.eta - 1) * np.log(q).sum()
    assert objective[-1] == pytest.approx(j, rel=1e-12)
    # fixed point: every row is at its nearest centroid (eq. (23)) and q is the centroid (eq. (24))
    scores = counts @ np.log(q).T
    assert np.array_equal(z, scores.argmax(1))
    for cluster in range(4):
        summed = counts[z == cluster].sum(0) + model.eta - 1
        np.testing.assert_allclose(q[cluster], summed / summed.sum(), rtol=1e-12)
    sizes = np.bincount(z, minlength=4)
    np.testing.assert_allclose(
        result.params["rho"], (sizes + model.alpha - 1) / (40 + 4 * (model.alpha - 1)), rtol=1e-12
    )
    np.testing.assert_array_equal(result.params["resp"], np.eye(4)[z])


def test_hard_acm_restarts_keep_the_best_objective():
    data = simulated(5, k=4, n_docs=40)
    model = OneSidedClustering(4)
    single = [hard_acm(model, data, random_state=np.random.default_rng(s)) for s in range(6)]
    best = hard_acm(model, data, random_state=7, n_init=6)
    assert best.trace["objective"].iloc[-1] <= max(r.trace["objective"].iloc[-1] for r in single)
    again = hard_acm(model, data, random_state=7, n_init=6)
    assert np.array_equal(best.params["q"], again.params["q"])


@pytest.mark.parametrize("seed", SEEDS)
def test_hard_acm_is_the_zero_temperature_limit_of_annealed_em(seed):
    """From the same start, annealed EM at beta = 1000 is hard ACM: same partition, one-hot
    posteriors, same centroids, same objective up to O(1/beta). Annealing 1 -> 1000 ends at a fixed
    point of hard ACM (measured on 150 seeds each)."""
    model = OneSidedClustering(3)
    data = simulated(seed, n_docs=20, n_words=15, doc_length=30)  # no empty rows
    hard = hard_acm(model, data, random_state=seed)
    cold = annealed_em(model, data, betas=[1e3], max_iter=100, tol=1e-12, random_state=seed)
    resp = cold.params["resp"]
    assert np.all(np.abs(resp - np.round(resp)) < 1e-9)
    assert np.array_equal(resp.argmax(1), hard.params["z"])
    np.testing.assert_allclose(cold.params["q"], hard.params["q"], rtol=1e-6)
    assert cold.trace["free_energy"].iloc[-1] == pytest.approx(
        hard.trace["objective"].iloc[-1], rel=1e-3
    )
    separated, _ = model.simulate(seed, n_docs=18, n_words=15, doc_length=40, separated=True)
    annealed = annealed_em(model, separated, betas=[1, 10, 100, 1000], random_state=seed)
    resp = annealed.params["resp"]
    assert np.all(np.abs(resp - np.round(resp)) < 1e-9)
    fixed = hard_acm(model, separated, init={"q": annealed.params["q"]})
    assert len(fixed.trace) == 2 and fixed.trace["changed"].iloc[-1] == 0  # nothing moves
    assert np.array_equal(resp.argmax(1), fixed.params["z"])
    np.testing.assert_allclose(fixed.params["q"], annealed.params["q"], rtol=1e-6)


def test_hard_acm_recovers_separated_clusters():
    model = OneSidedClustering(3)
    for seed in SEEDS:
        data, truth = model.simulate(seed, n_docs=30, n_words=15, doc_length=40, separated=True)
        result = hard_acm(model, data, random_state=seed, n_init=5)
        assert same_partition(result.params["z"], truth["z"])


# ----------------------------------------------------------------------------- annealed EM API
def test_annealed_em_result():
    model = OneSidedClustering(2)
    data = load("toy")
    result = annealed_em(model, data, betas=[0.5, 1.0], random_state=0)
    assert result.converged and result.betas == [0.5, 1.0]
    assert set(result.params) == {"rho", "q", "resp"}
    # the stored posteriors are those of the final parameters at the final temperature
    np.testing.assert_allclose(
        result.params["resp"], model.responsibilities(result.params, data, 1.0), rtol=1e-14
    )
    assert set(result.trace.columns) >= {"beta", "iteration", "log_likelihood", "free_energy"}
    # perplexity of eq. (32): from the stored posteriors, not the prior rho
    held = result.perplexity(data)
    assert held == pytest.approx(
        math.exp(-model.heldout_log_likelihood(result.params, data).sum() / data.total)
    )
    without = {k: v for k, v in result.params.items() if k != "resp"}
    assert held < perplexity(model, without, data)
    idata = result.to_inference_data()
    assert idata.point_estimate["q"].shape == (2, 8)


@pytest.mark.parametrize("betas", ["auto", "early_stopping"])
def test_tempered_schedules_run_and_predict(betas):
    model = OneSidedClustering(3)
    data = simulated(4, n_docs=30, n_words=40, doc_length=60)
    train, test = data.split(0.2, random_state=4)
    result = annealed_em(model, train, betas=betas, max_iter=50, random_state=4, patience=3)
    assert isinstance(result.converged, bool | np.bool_)
    assert "validation_perplexity" in result.selection_trace
    assert result.betas[0] == 1.0 and all(b <= 1.0 for b in result.betas)
    held = result.perplexity(test)
    assert math.isfinite(held) and 1 < held < data.n_cols


def test_annealed_em_is_reproducible():
    data = simulated(1)
    model = OneSidedClustering(3)
    runs = [annealed_em(model, data, betas=[0.8, 1.0], random_state=s) for s in (5, 5, 6)]
    for name in ("rho", "q", "resp"):
        assert np.array_equal(runs[0].params[name], runs[1].params[name])
    assert not np.array_equal(runs[0].params["q"], runs[2].params["q"])
    np.testing.assert_array_equal(runs[0].trace["free_energy"], runs[1].trace["free_energy"])
    hard = [hard_acm(model, data, random_state=s) for s in (5, 5)]
    assert np.array_equal(hard[0].params["q"], hard[1].params["q"])


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"betas": "hot"}, "betas"),
        ({"betas": [1.0, -1.0]}, r"betas\[1\]"),
        ({"max_iter": 0}, "max_iter"),
        ({"tol": -1.0}, "tol"),
        ({"overrelax": 2.5}, "overrelax"),
        ({"predictive": True}, "aspect model only"),
    ],
)
def test_annealed_em_rejects_bad_arguments(kwargs, match):
    with pytest.raises(ValueError, match=match):
        annealed_em(OneSidedClustering(2), load("toy"), **{"betas": [1.0], **kwargs})


def test_bad_models_and_data_are_rejected():
    for method in (annealed_em, hard_acm):
        with pytest.raises(ValueError, match="larger than the data supports"):
            method(OneSidedClustering(7), load("toy"))
        with pytest.raises(ValueError, match="is NaN"):
            method(OneSidedClustering(1), [[1.0, np.nan]])
        with pytest.raises(ValueError, match="gibbs"):
            method(OneSidedClustering(2, alpha=0.5), load("toy"))
    with pytest.raises(ValueError, match="gibbs"):
        OneSidedEM(OneSidedClustering(2, eta=0.9), load("toy"))
    with pytest.raises(ValueError, match="n_init"):
        hard_acm(OneSidedClustering(2), load("toy"), n_init=0)
    with pytest.raises(ValueError, match="max_iter"):
        hard_acm(OneSidedClustering(2), load("toy"), max_iter=0)
    with pytest.raises(ValueError, match="larger than the data supports"):
        gibbs(OneSidedClustering(7), load("toy"), progressbar=False)
    with pytest.raises(ValueError, match="chains"):
        gibbs(OneSidedClustering(2), load("toy"), chains=0, progressbar=False)


# ----------------------------------------------------------------------------- exact test
CORPORA = {
    # 4 rows, K = 2: 16 assignments
    "4 rows, K=2": ([[2, 1, 0], [0, 1, 2], [1, 0, 1], [0, 2, 1]], 2),
    # 5 rows, K = 3: 243 assignments; an empty row and an unobserved trailing column
    "5 rows, K=3": ([[1, 1, 0, 0], [0, 1, 1, 0], [2, 0, 0, 0], [0, 0, 0, 0], [1, 0, 1, 0]], 3),
}


def enumerated(model, data):
    states = enumerate_assignments(data.n_rows, model.n_clusters)
    return states, model.collapsed_log_joint(states, data)


@pytest.mark.parametrize("corpus", list(CORPORA))
@pytest.mark.parametrize("seed", SEEDS)
def test_gibbs_state_frequencies_match_the_enumerated_posterior(corpus, seed):
    counts, k = CORPORA[corpus]
    data = CoOccurrence(counts)
    model = OneSidedClustering(k, alpha=0.7, eta=1.3)
    states, log_probs = enumerated(model, data)
    # level 1e-5 per test: six tests stay below 1e-4 false alarms per run of the suite
    check, draws = exact_draws_check(log_probs, OneSidedGibbs(model, data), k, seed)
    assert draws.shape == (20_000, data.n_rows)
    assert check.passed, check.detail


@pytest.mark.parametrize("wrong", [{"alpha": 3.0}, {"eta": 0.3}])
def test_exact_test_rejects_a_sampler_of_the_wrong_posterior(wrong):
    """Negative control: chains of a model with other priors fail the test."""
    counts, k = CORPORA["4 rows, K=2"]
    data = CoOccurrence(counts)
    _, log_probs = enumerated(OneSidedClustering(k, alpha=0.7, eta=1.3), data)
    other = OneSidedGibbs(OneSidedClustering(k, **{"alpha": 0.7, "eta": 1.3, **wrong}), data)
    check, _ = exact_draws_check(log_probs, other, k)
    assert not check.passed, check.detail


@pytest.mark.parametrize("seed", [1])  # measured on seeds 0-11
def test_gibbs_chain_marginals_match_the_enumerated_posterior(seed):
    """The run_chains path (long chains): P(z_i = z_i') within MCSE of the enumerated value."""
    counts, k = CORPORA["5 rows, K=3"]
    data = CoOccurrence(counts)
    model = OneSidedClustering(k, alpha=0.7, eta=1.3)
    states, log_probs = enumerated(model, data)
    weights = np.exp(log_probs - logsumexp(log_probs))
    pairs = default_pairs(data)
    exact = np.array([weights[states[:, a] == states[:, b]].sum() for a, b in pairs])
    idata = gibbs(model, data, chains=4, draws=2000, tune=20, random_state=seed, progressbar=False)
    z = idata.posterior["z"].to_numpy()
    together = np.stack([z[:, :, a] == z[:, :, b] for a, b in pairs], axis=-1).astype(float)
    z_max = stats.norm.ppf(1 - 1e-5 / (2 * len(pairs)))
    for index in range(len(pairs)):
        values = together[:, :, index]
        se = float(np.asarray(az.mcse(values, method="mean")).reshape(-1)[0])
        assert abs(values.mean() - exact[index]) < z_max * se, (index, values.mean(), exact[index])
    # Rao-Blackwellised co-assignment (from rho, q draws) has the same expectation
    rb = idata.posterior["coassign"].to_numpy()
    for index in range(len(pairs)):
        se = float(np.asarray(az.mcse(rb[:, :, index], method="mean")).reshape(-1)[0])
        assert abs(rb[:, :, index].mean() - exact[index]) < z_max * se


# ----------------------------------------------------------------------------- gibbs output
@pytest.fixture(scope="module")
def toy_idata():
    return helpers.toy_gibbs(gibbs, OneSidedClustering(2))


def test_gibbs_inference_data_layout(toy_idata):
    dims = {"rho": ("cluster",), "q": ("cluster", "word"), "z": ("doc",), "loglik": (),
            "p_dyad": ("dyad",), "coassign": ("pair",)}  # fmt: skip
    assert_cooccurrence_idata(toy_idata, load("toy"), {"rho": "cluster", "q": "word"}, dims)
    post = toy_idata.posterior
    assert post["z"].dtype.kind == "i"
    assert post["coassign"].shape == (2, 40, 15)


def test_gibbs_derived_quantities_are_consistent(toy_idata):
    data = load("toy")
    model = OneSidedClustering(2)
    post = toy_idata.posterior
    coefficient = model.log_multinomial_coefficient(data)
    for c, d in [(0, 0), (1, 17), (1, 39)]:
        params = {name: post[name].values[c, d] for name in ("rho", "q")}
        per_row = model.log_likelihood(params, data)
        np.testing.assert_allclose(
            toy_idata.log_likelihood["counts"].values[c, d], per_row + coefficient, rtol=1e-12
        )
        inv = model.invariants(params, data)
        for name in model.invariant_names:
            np.testing.assert_allclose(post[name].values[c, d], inv[name], rtol=1e-12)
        z = post["z"].values[c, d]
        lp = model.collapsed_log_joint(z, data)[0]
        assert toy_idata.sample_stats["lp"].values[c, d] == pytest.approx(lp, rel=1e-12)
    # add_invariants leaves a posterior that already has them alone
    assert add_invariants(toy_idata, model, data) is toy_idata


def test_gibbs_is_reproducible():
    model, data = OneSidedClustering(2), load("toy")

    def run(seed):
        return gibbs(model, data, chains=2, draws=15, tune=5, random_state=seed, progressbar=False)

    a, b, c = run(11), run(11), run(12)
    for name in ("rho", "q", "z", "loglik", "coassign"):
        assert np.array_equal(a.posterior[name].values, b.posterior[name].values)
    assert not np.array_equal(a.posterior["q"].values, c.posterior["q"].values)
    assert not np.array_equal(a.posterior["q"].values[0], a.posterior["q"].values[1])
    draws = [OneSidedGibbs(model, data).exact_draws(50, 3, s) for s in (4, 4, 5)]
    assert np.array_equal(draws[0], draws[1]) and not np.array_equal(draws[0], draws[2])


def test_gibbs_initial_assignments():
    model, data = OneSidedClustering(2), load("toy")
    starts = [np.zeros(6, dtype=int), np.ones(6, dtype=int), np.array([0, 1, 0, 1, 0, 1])]
    idata = gibbs(model, data, draws=4, tune=0, random_state=1, progressbar=False,
                  initial_assignments=starts)  # fmt: skip
    assert idata.posterior.sizes["chain"] == 3
    with pytest.raises(ValueError, match="initial assignments"):
        gibbs(model, data, draws=1, progressbar=False, initial_assignments=[np.full(6, 2)])


def test_gibbs_scores_held_out_counts():
    model = OneSidedClustering(2)
    names = ("rho", "q")
    helpers.assert_gibbs_scores_held_out_counts(gibbs, model, names, model.predictive_log_density)


def test_gibbs_can_drop_the_parameters():
    names, invariants = ("rho", "q", "z"), ("loglik", "p_dyad", "coassign")
    helpers.assert_gibbs_can_drop_the_parameters(gibbs, OneSidedClustering(2), names, invariants)


def test_gibbs_handles_long_rows():
    """Rows of thousands of tokens: the rising factorials go through lgamma and stay finite."""
    model = OneSidedClustering(2)
    data, truth = model.simulate(3, n_docs=6, n_words=20, doc_length=5000, separated=True)
    idata = gibbs(model, data, chains=1, draws=20, tune=5, random_state=0, progressbar=False)
    assert np.all(np.isfinite(idata.sample_stats["lp"].values))
    z = idata.posterior["z"].values[0]
    assert all(same_partition(row, truth["z"]) for row in z)


# ----------------------------------------------------------------------------- calibration
SBC_SIZES = {"n_docs": 5, "n_words": 5, "doc_length": 6}


def gibbs_sampler(model):
    return sbc_gibbs(gibbs, model, tune=20, thin=3)


def test_sbc_of_gibbs_is_uniform():
    model = OneSidedClustering(2, alpha=0.8, eta=0.7)
    result = sbc(model, gibbs_sampler(model), 100, random_state=0, alpha=1e-4, **SBC_SIZES)
    assert result.check.passed, result.check.detail
    assert len(result.ranks) == 100
    assert {"loglik", "coassign[0]", "p_dyad[0]"} <= set(result.ranks.columns)


def test_sbc_detects_a_sampler_with_the_wrong_prior():
    """Negative control: data from eta = 0.7, a sampler assuming eta = 5."""
    true = OneSidedClustering(2, alpha=0.8, eta=0.7)
    wrong = OneSidedClustering(2, alpha=0.8, eta=5.0)
    result = sbc(true, gibbs_sampler(wrong), 100, random_state=0, alpha=1e-4, **SBC_SIZES)
    assert not result.check.passed, result.check.detail


# ----------------------------------------------------------------------------- PyMC reference
def test_gibbs_agrees_with_pymc_nuts():
    """Reference level, small: NUTS on the marginalised declaration vs collapsed Gibbs on 6 rows of
    separated clusters, through the invariants, within combined MCSE (agreement only: 2 chains)."""
    pm = pytest.importorskip("pymc")
    model = OneSidedClustering(2)
    data, _ = model.simulate(0, n_docs=6, n_words=8, doc_length=15, separated=True)
    with model.pymc_model(data):
        reference = pm.sample(
            draws=200, tune=200, chains=2, cores=1, random_seed=1, progressbar=False,
            compute_convergence_checks=False,
        )  # fmt: skip
    add_invariants(reference, model, data)
    fast = gibbs(model, data, chains=2, draws=1000, tune=50, random_state=1, progressbar=False)
    table = agreement(fast, reference, ["loglik", "p_dyad"], alpha=1e-3)
    assert table["agree"].all(), table
    # power: a model with other priors is a different posterior
    other = gibbs(OneSidedClustering(2, eta=6.0), data, chains=2, draws=1000, tune=50,
                  random_state=1, progressbar=False)  # fmt: skip
    add_invariants(other, model, data)
    assert not agreement(other, reference, ["loglik", "p_dyad"], alpha=1e-3)["agree"].all()
    assert len(default_dyads(data)) == 8
