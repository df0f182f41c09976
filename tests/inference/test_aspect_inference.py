"""Tests of the aspect model's fast inference: the fused EM kernel and the collapsed Gibbs sampler.

The EM kernel is compared with a dense numpy E/M step; the Gibbs sampler with the exact posterior
over topic assignments (enumerated), with exact posterior expectations (within Monte Carlo standard
errors), and by simulation-based calibration, each with a negative control showing the test's power.
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
from latentzoo.inference.aspect import AspectEM, AspectGibbs, annealed_em, em_pass, gibbs
from latentzoo.inference.compare import enumerate_assignments, sbc
from latentzoo.models import AspectModel
from latentzoo.models.aspect import default_dyads
from tests import helpers
from tests.helpers import assert_cooccurrence_idata, exact_draws_check, random_counts, sbc_gibbs

SEEDS = [0, 1, 2]


def mcse(values):
    """Monte Carlo standard error of the mean of a (chain, draw) array."""
    return float(np.asarray(az.mcse(values, method="mean")).reshape(-1)[0])


def random_problem(seed, n_rows=9, n_cols=13, k=3):
    rng = np.random.default_rng(seed)
    counts = random_counts(rng, n_rows, n_cols, zero_rows=[2], zero_cols=[5], rate=1.2)
    theta = rng.dirichlet(np.ones(k), n_rows)
    phi = rng.dirichlet(np.ones(n_cols), k)
    return CoOccurrence(counts), counts, theta, phi


def dense_em(counts, theta, phi, beta):
    """The tempered E-step and the M-step sums, with the N x M x K posterior held in memory."""
    joint = (theta[:, :, None] * phi[None, :, :]) ** beta  # (N, K, M)
    s = joint.sum(axis=1)
    post = joint / s[:, None, :]
    weighted = counts[:, None, :] * post
    n_theta = weighted.sum(axis=2)
    n_phi = weighted.sum(axis=0).T  # (M, K)
    mask = counts > 0
    energy = (counts[mask] * np.log(s[mask])).sum()
    loglik = (counts[mask] * np.log((theta @ phi)[mask])).sum()
    return n_theta, n_phi, energy, loglik


# ----------------------------------------------------------------------------- EM kernel
@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("beta", [1.0, 0.6])
def test_em_pass_matches_dense_reference(seed, beta):
    data, counts, theta, phi = random_problem(seed)
    phi_t = np.ascontiguousarray(phi.T)
    want = dense_em(counts, theta, phi, beta)
    serial = em_pass(data, theta, phi_t, beta)
    threads_before = nb.get_num_threads()
    threaded = em_pass(data, theta, phi_t, beta, n_threads=2)
    assert nb.get_num_threads() == threads_before  # the caller's setting is restored
    for got in (serial, threaded):
        np.testing.assert_allclose(got[0], want[0], rtol=1e-10, atol=1e-12)
        np.testing.assert_allclose(got[1], want[1], rtol=1e-10, atol=1e-12)
        assert got[2] == pytest.approx(want[2], rel=1e-10)
        assert got[3] == pytest.approx(want[3], rel=1e-10)
        assert got[0].sum() == pytest.approx(data.total, rel=1e-12)
        assert got[1].sum() == pytest.approx(data.total, rel=1e-12)
    assert np.all(serial[0][2] == 0) and np.all(serial[1][5] == 0)


@pytest.mark.parametrize("beta", [1.0, 0.6])
def test_float32_em_pass_matches_dense_reference(beta):
    data, counts, theta, phi = random_problem(7)
    want = dense_em(counts, theta, phi, beta)
    for n_threads in (1, 2):
        got = em_pass(data, theta, np.ascontiguousarray(phi.T), beta, n_threads=n_threads,
                      dtype=np.float32)  # fmt: skip
        assert all(np.asarray(g).dtype == np.float64 for g in got[:2])
        np.testing.assert_allclose(got[0], want[0], rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(got[1], want[1], rtol=1e-5, atol=1e-6)
        assert got[2] == pytest.approx(want[2], rel=1e-6)
    with pytest.raises(ValueError, match="dtype"):
        em_pass(data, theta, np.ascontiguousarray(phi.T), beta, dtype=np.int64)


@pytest.mark.parametrize("seed", SEEDS)
def test_float32_annealed_em_tracks_float64(seed):
    """Documented: float32 keeps the free energy monotone up to ~1e-7 relative rounding."""
    model = AspectModel(3)
    data, _ = model.simulate(seed, n_docs=20, n_words=30, doc_length=50)
    runs = [
        annealed_em(model, data, betas=[0.8], max_iter=40, tol=0, random_state=seed, dtype=dtype)
        for dtype in (np.float32, np.float64)
    ]
    fe = runs[0].trace["free_energy"].to_numpy()
    assert np.all(np.diff(fe) <= 1e-6 * np.abs(fe[1:]))
    np.testing.assert_allclose(fe, runs[1].trace["free_energy"], rtol=1e-5)


def test_em_pass_energy_with_tiny_cell_probabilities():
    data = CoOccurrence([[1, 1, 0]])
    theta = np.array([[1.0, 0.0]])
    phi = np.array([[1e-190, 1e-150, 1.0 - 1e-150 - 1e-190], [0.3, 0.3, 0.4]])
    _, _, energy, _ = em_pass(data, theta, np.ascontiguousarray(phi.T), 1.0)
    assert energy == pytest.approx(math.log(1e-190) + math.log(1e-150), rel=1e-12)


def log_space_em(counts, theta, phi, beta):
    """The tempered E-step sums and energy in log space: right where float tables underflow."""
    log_joint = beta * (np.log(theta)[:, :, None] + np.log(phi)[None, :, :])  # (N, K, M)
    log_s = logsumexp(log_joint, axis=1)
    weighted = counts[:, None, :] * np.exp(log_joint - log_s[:, None, :])
    energy = float((counts * np.where(counts > 0, log_s, 0.0)).sum())
    return weighted.sum(axis=2), weighted.sum(axis=0).T, energy


def test_energy_of_many_unit_counts_above_one_does_not_overflow():
    # At beta < 1, s = sum_k (theta phi)**beta exceeds 1; the batched product of unit counts
    # used to overflow to inf after a few hundred of them.
    rng = np.random.default_rng(0)
    n_cols, k = 1000, 64
    counts = np.ones((1, n_cols), dtype=np.int64)
    theta, phi = rng.dirichlet(np.ones(k), 1), rng.dirichlet(np.ones(n_cols), k)
    want = log_space_em(counts, theta, phi, 0.1)[2]
    assert want > 700  # the product of the s values is far beyond float64's range
    for dtype in (np.float64, np.float32):
        got = em_pass(CoOccurrence(counts), theta, np.ascontiguousarray(phi.T), 0.1, dtype=dtype)
        assert got[2] == pytest.approx(want, rel=1e-12)


@pytest.mark.parametrize("beta", [1.0, 0.3, 5.0, 50.0])
def test_float32_em_pass_keeps_float64_accuracy(beta):
    """Large counts, tiny probabilities and high beta: float32 agrees with a log-space reference
    to ~1e-7 in the expected counts and to 1e-12 in the energy."""
    for seed in range(6):
        rng = np.random.default_rng(seed)
        n_rows, n_cols, k = 8, 12, 1 + seed % 4
        counts = rng.poisson(2.0, size=(n_rows, n_cols)) * rng.integers(1, 10**6, size=(n_rows, 1))
        counts[0, 0] = 10**7
        theta = rng.dirichlet(np.full(k, 0.3), n_rows)
        phi = rng.dirichlet(np.full(n_cols, 0.3), k)
        theta, phi = np.maximum(theta, 1e-200), np.maximum(phi, 1e-200)
        want = log_space_em(counts, theta, phi, beta)
        data = CoOccurrence(counts)
        for n_threads in (1, 2):
            got = em_pass(data, theta, np.ascontiguousarray(phi.T), beta, n_threads=n_threads,
                          dtype=np.float32)  # fmt: skip
            np.testing.assert_allclose(got[0], want[0], rtol=1e-6, atol=1e-6 * counts.sum())
            np.testing.assert_allclose(got[1], want[1], rtol=1e-6, atol=1e-6 * counts.sum())
            assert got[2] == pytest.approx(want[2], rel=1e-12, abs=1e-9)


@pytest.mark.parametrize(
    "dtype, beta", [(np.float32, 50.0), (np.float64, 50.0), (np.float64, 500.0)]
)
def test_em_pass_redoes_underflowing_cells_in_log_space(dtype, beta):
    # Row 0's best aspect is 0 and column 0's is 1, so both terms of s are 0.0099**beta: below
    # float32's range at beta = 50 even after the tables are scaled to a maximum of 1 per row,
    # and 0 in float64 at beta = 500 (which divided by zero).
    counts = np.array([[3, 0], [0, 2]])
    theta = np.array([[0.99, 0.01], [0.5, 0.5]])
    phi = np.array([[0.01, 0.99], [0.99, 0.01]])
    want = log_space_em(counts, theta, phi, beta)
    data = CoOccurrence(counts)
    for n_threads in (1, 2):
        got = em_pass(data, theta, np.ascontiguousarray(phi.T), beta, n_threads=n_threads,
                      dtype=dtype)  # fmt: skip
        # (A posterior 1e-100 below its row's best, as in cell (1, 1), is 0 in float32.)
        np.testing.assert_allclose(got[0], want[0], rtol=1e-12, atol=1e-90)
        np.testing.assert_allclose(got[1], want[1], rtol=1e-12, atol=1e-90)
        assert got[2] == pytest.approx(want[2], rel=1e-12)
        np.testing.assert_allclose(got[0][0], [1.5, 1.5], rtol=1e-12)


def test_annealed_em_at_high_beta_on_real_data_agrees_across_dtypes():
    """beta = 50 on Reuters: float64 raised ZeroDivisionError, float32 now matches it."""
    data = load("reuters").subset(rows=np.arange(200))
    data = data.subset(rows=np.flatnonzero(data.row_totals > 0))
    fits = [
        annealed_em(AspectModel(4), data, betas=[50.0], max_iter=3, random_state=0, dtype=dtype)
        for dtype in (np.float64, np.float32)
    ]
    fe = [fit.trace["free_energy"].to_numpy() for fit in fits]
    assert np.isfinite(fe[0]).all()
    np.testing.assert_allclose(fe[1], fe[0], rtol=1e-8)


def test_float32_free_energy_of_a_large_count_matches_float64():
    """A count of 1e7: float32 made the free energy rise 16.97 -> 17.31 (2%)."""
    data = CoOccurrence(np.array([[10_000_000, 1]]))
    runs = {
        dtype: annealed_em(
            AspectModel(1, alpha=1, eta=1),
            data,
            betas=[1],
            dtype=dtype,
            tol=0,
            max_iter=20,
            random_state=0,
        )  # fmt: skip
        for dtype in (np.float32, np.float64)
    }
    fe32 = runs[np.float32].trace["free_energy"].to_numpy()
    fe64 = runs[np.float64].trace["free_energy"].to_numpy()
    np.testing.assert_allclose(fe32, fe64, rtol=1e-9)
    assert np.all(np.diff(fe32) <= 1e-9 * np.abs(fe32[1:]))
    np.testing.assert_allclose(runs[np.float32].params["phi"], runs[np.float64].params["phi"],
                               rtol=1e-6)  # fmt: skip


def test_float32_at_high_beta_does_not_underflow():
    """beta = 50 on [[7, 1]]: float32 gave phi = [[1, 0]]; the answer is [[7/8, 1/8]]."""
    data = CoOccurrence(np.array([[7, 1]]))
    fits = [
        annealed_em(AspectModel(1, alpha=1, eta=1), data, betas=[50], dtype=dtype, random_state=0)
        for dtype in (np.float32, np.float64)
    ]
    np.testing.assert_allclose(fits[0].params["phi"], [[0.875, 0.125]], rtol=1e-6)
    np.testing.assert_allclose(fits[0].params["phi"], fits[1].params["phi"], rtol=1e-6)
    np.testing.assert_allclose(
        fits[0].trace["free_energy"], fits[1].trace["free_energy"], rtol=1e-9
    )


# ----------------------------------------------------------------------------- memory guards
@pytest.fixture
def sixteen_gib(monkeypatch):
    from latentzoo.data import checks

    monkeypatch.setattr(checks, "physical_memory", lambda: 16 * 2**30)


def test_gibbs_refuses_a_corpus_whose_tokens_do_not_fit(sixteen_gib):
    data = CoOccurrence(np.full((4, 5), 10**9))
    with pytest.raises(ValueError) as info:
        gibbs(AspectModel(2), data, chains=1, draws=1, tune=0, progressbar=False)
    message = str(info.value)
    assert message.startswith(
        "collapsed Gibbs for the aspect model would allocate 596.0 GiB for 20,000,000,000 tokens "
        "(limit 8.0 GiB, half of this machine's memory)"
    )
    assert "annealed EM" in message
    with pytest.raises(ValueError, match="would allocate"):
        AspectGibbs(AspectModel(2), data)


def test_exact_draws_are_guarded(sixteen_gib):
    sampler = AspectGibbs(AspectModel(2), CoOccurrence(np.full((2, 2), 10**5)))
    with pytest.raises(ValueError, match=r"for 100000 chains x 400,000 tokens"):
        sampler.exact_draws(100_000, sweeps=1)


def test_annealed_em_refuses_too_many_aspects_for_memory(sixteen_gib):
    import scipy.sparse as sp

    data = CoOccurrence(sp.identity(200_000, dtype=np.int64, format="csr"))
    with pytest.raises(ValueError) as info:
        annealed_em(AspectModel(20_000), data, betas=[1.0], max_iter=1)
    # The driver's coarse guard (parameters x 4 copies) refuses first ...
    assert str(info.value).startswith("annealed_em of AspectModel would allocate 238.4 GiB")
    # ... and the aspect EM's own count of its tables refuses what passes the coarse guard.
    with pytest.raises(ValueError) as info:
        annealed_em(AspectModel(400), data, betas=[1.0], max_iter=1)
    assert str(info.value).startswith(
        "annealed EM for the aspect model would allocate 9.5 GiB for 400 aspects x "
        "(200,000 rows + 200,000 columns) (limit 8.0 GiB"
    )


def test_memory_estimates_count_what_is_allocated():
    from latentzoo.inference.aspect import em_bytes, gibbs_bytes

    data = CoOccurrence(np.full((4, 5), 20_000))  # 400,000 tokens: the token arrays dominate
    peak = helpers.peak_bytes(
        lambda: gibbs(AspectModel(2), data, chains=2, draws=2, tune=1, progressbar=False,
                      random_state=0),
        warm_up=lambda: gibbs(AspectModel(2), data, chains=1, draws=1, tune=0, progressbar=False),
    )  # fmt: skip
    assert 0.8 * gibbs_bytes(data, 2) < peak < 1.1 * gibbs_bytes(data, 2)
    reuters = load("reuters")
    for n_threads, overrelax in ((1, 1.0), (2, 1.5)):
        # the lambdas run inside peak_bytes, within this iteration: late binding is harmless
        peak = helpers.peak_bytes(
            lambda: annealed_em(AspectModel(10), reuters, betas=[0.9, 1.0], max_iter=3,  # noqa: B023
                                n_threads=n_threads, overrelax=overrelax, random_state=0),  # noqa: B023
            warm_up=lambda: annealed_em(AspectModel(10), reuters, betas=[1.0], max_iter=1,
                                        n_threads=n_threads),  # noqa: B023
        )  # fmt: skip
        assert (
            0.5 * em_bytes(reuters, 10, n_threads) < peak < 1.1 * em_bytes(reuters, 10, n_threads)
        )


@pytest.mark.parametrize("beta", [1.0, 0.6])
def test_aspect_em_step_is_the_map_m_step(beta):
    model = AspectModel(3, alpha=1.5, eta=1.2)
    new, stats_, (theta, phi), (n_theta, n_phi, energy, loglik) = helpers.em_step_beside_dense(
        AspectEM, model, ("theta", "phi"), random_problem(3), dense_em, beta
    )
    want_theta = (n_theta + 0.5) / (n_theta + 0.5).sum(1, keepdims=True)
    want_phi = (n_phi.T + 0.2) / (n_phi.T + 0.2).sum(1, keepdims=True)
    np.testing.assert_allclose(new["theta"], want_theta, rtol=1e-10)
    np.testing.assert_allclose(new["phi"], want_phi, rtol=1e-10)
    prior = 0.5 * np.log(theta).sum() + 0.2 * np.log(phi).sum()
    assert stats_.free_energy == pytest.approx(-energy / beta - prior, rel=1e-10)
    assert stats_.log_likelihood == pytest.approx(loglik, rel=1e-10)


def test_maximum_likelihood_m_step_keeps_empty_rows_uniform():
    data, counts, theta, phi = random_problem(4)
    new, _ = AspectEM(AspectModel(3, 1.0, 1.0), data).step({"theta": theta, "phi": phi}, 1.0)
    np.testing.assert_allclose(new["theta"][2], 1 / 3)
    assert np.all(new["phi"][:, 5] == 0)  # an unseen word gets no mass without a prior
    np.testing.assert_allclose(new["phi"].sum(1), 1.0, rtol=1e-12)


@pytest.mark.parametrize("alpha, eta", [(0.5, 1.0), (1.0, 0.9)])
def test_aspect_em_rejects_sparse_priors(alpha, eta):
    with pytest.raises(ValueError, match="gibbs"):
        AspectEM(AspectModel(2, alpha=alpha, eta=eta), load("toy"))
    with pytest.raises(ValueError, match="gibbs"):
        annealed_em(AspectModel(2, alpha=alpha, eta=eta), load("toy"), betas=[1.0])


@pytest.mark.parametrize("seed", SEEDS)
def test_predictive_em_runs_and_predicts(seed):
    model = AspectModel(3)
    data, _ = model.simulate(seed, n_docs=20, n_words=30, doc_length=60)
    train, test = data.split(0.2, random_state=seed)
    result = annealed_em(
        model, train, betas=[1.0], max_iter=30, tol=0, predictive=True, random_state=seed
    )
    assert len(result.trace) == 30
    for name in ("theta", "phi"):
        assert np.all(np.isfinite(result.params[name]))
        assert np.all(result.params[name] > 0)  # alpha, eta > 1 keep every entry positive
        np.testing.assert_allclose(result.params[name].sum(1), 1.0, rtol=1e-12)
    assert np.all(np.isfinite(result.trace[["free_energy", "log_likelihood"]].to_numpy()))
    held_out = perplexity(model, result.params, test)
    assert math.isfinite(held_out) and held_out > 1
    # the predictive E-step is really used: the iterates differ from plain EM's
    plain = annealed_em(model, train, betas=[1.0], max_iter=30, tol=0, random_state=seed)
    assert np.abs(plain.params["theta"] - result.params["theta"]).max() > 1e-6


# Issue 8 (predictive E-step): over-relaxed steps that zero an observed word's probability made
# the previous posterior 0/0 (a ZeroDivisionError inside numba), as did tables underflowed at
# beta = 1000; an observation the other tokens cannot predict (all predictive terms 0) was
# dropped from the M-step, giving its word probability 0 and the fit a log-likelihood of -inf.
@pytest.mark.parametrize(
    "counts, k, options",
    [
        ([[7, 0, 0], [0, 1, 0]], 1, {"max_iter": 5, "overrelax": 1.5}),
        ([[7, 0, 0], [0, 1, 0]], 2, {"max_iter": 5, "overrelax": 1.9}),
        ([[7, 0, 0], [0, 1, 0]], 2, {"max_iter": 2, "overrelax": 1.5}),
        ([[1, 0, 0]], 1, {"max_iter": 5, "overrelax": 1.9}),
        # tables underflowed at beta = 1000 (cooling there: a heating list is refused, issue 24)
        ([[1, 0, 0, 0]], 1, {"betas": [1.0, 1000.0]}),
        ([[50, 1]], 1, {}),
        ([[50, 1]], 2, {}),
    ],
)
@pytest.mark.parametrize("seed", SEEDS)
def test_predictive_em_stays_finite_on_tiny_counts(counts, k, options, seed):
    data = CoOccurrence(np.array(counts))
    model = AspectModel(k, alpha=1.0, eta=1.0)
    options = {"betas": [1.0], "tol": 0.0, **options}
    result = annealed_em(model, data, predictive=True, random_state=seed, **options)
    assert np.all(np.isfinite(result.trace[["free_energy", "log_likelihood"]].to_numpy()))
    assert np.isfinite(model.log_likelihood(result.params, data).sum())
    for name in ("theta", "phi"):
        np.testing.assert_allclose(result.params[name].sum(1), 1.0, rtol=1e-12)


def test_predictive_em_keeps_an_unpredictable_token():
    # The only token of word 1: without a prior no other token predicts it, so it keeps the
    # plain E-step posterior and phi its maximum-likelihood value 1/51.
    result = annealed_em(
        AspectModel(1, alpha=1.0, eta=1.0), CoOccurrence(np.array([[50, 1]])), betas=[1.0],
        predictive=True, random_state=0,
    )  # fmt: skip
    np.testing.assert_allclose(result.params["phi"], [[50 / 51, 1 / 51]], rtol=1e-12)


# ----------------------------------------------------------------------------- exact test
CORPORA = {
    "6 tokens, K=2": ([[2, 1, 0], [0, 1, 2]], 2),
    "5 tokens, K=3": ([[2, 1], [0, 2]], 3),
}


def enumerated(model, data):
    sampler = AspectGibbs(model, data)
    states = enumerate_assignments(len(sampler.words), model.n_components)
    return (
        sampler,
        states,
        model.collapsed_log_joint(sampler.docs, sampler.words, states, data.n_rows, data.n_cols),
    )


@pytest.mark.parametrize("corpus", list(CORPORA))
@pytest.mark.parametrize("seed", SEEDS)
def test_gibbs_state_frequencies_match_the_enumerated_posterior(corpus, seed):
    counts, k = CORPORA[corpus]
    model = AspectModel(k, alpha=0.7, eta=1.3)
    sampler, states, log_probs = enumerated(model, CoOccurrence(counts))
    # level 1e-5: three seeds x two corpora stay below 1e-4 false alarms per run of the suite,
    # while the negative controls below reach p ~ 1e-150
    check, draws = exact_draws_check(log_probs, sampler, k, seed)
    assert draws.shape == (20_000, states.shape[1])
    assert check.passed, check.detail


@pytest.mark.parametrize("wrong", [{"alpha": 2.1}, {"eta": 3.0}])
def test_exact_test_rejects_a_sampler_of_the_wrong_posterior(wrong):
    """Negative control: chains of a model with other priors fail the test (measured p ~ 1e-150)."""
    counts, k = CORPORA["6 tokens, K=2"]
    data = CoOccurrence(counts)
    model = AspectModel(k, alpha=0.7, eta=1.3)
    _, _, log_probs = enumerated(model, data)
    other = AspectGibbs(AspectModel(k, **{"alpha": 0.7, "eta": 1.3, **wrong}), data)
    check, _ = exact_draws_check(log_probs, other, k)
    assert not check.passed, check.detail


def test_exact_test_with_an_unobserved_trailing_word():
    model = AspectModel(2, alpha=0.5, eta=0.3)
    sampler, _, log_probs = enumerated(model, CoOccurrence([[2, 1, 0, 0], [0, 1, 2, 0]]))
    check, _ = exact_draws_check(log_probs, sampler, 2)
    assert check.passed, check.detail


def exact_p_dyad_mean(model, data, dyads):
    """E[P(y_j|x_i) | w] = sum_z p(z|w) sum_k E[theta_ik | z] E[phi_kj | z], enumerated."""
    sampler, states, log_probs = enumerated(model, data)
    weights = np.exp(log_probs - logsumexp(log_probs))
    k, alpha, eta, m = model.n_components, model.alpha, model.eta, data.n_cols
    out = np.zeros(len(dyads))
    for z, w in zip(states, weights, strict=True):
        ndk = np.zeros((data.n_rows, k))
        nkw = np.zeros((k, m))
        np.add.at(ndk, (sampler.docs, z), 1)
        np.add.at(nkw, (z, sampler.words), 1)
        theta = (ndk + alpha) / (ndk.sum(1, keepdims=True) + k * alpha)
        phi = (nkw + eta) / (nkw.sum(1, keepdims=True) + m * eta)
        out += w * (theta @ phi)[dyads[:, 0], dyads[:, 1]]
    return out


@pytest.mark.parametrize("seed", SEEDS)
def test_gibbs_posterior_means_match_exact_expectations(seed):
    """The theta/phi draws given z: posterior means of p_dyad within Bonferroni z * MCSE."""
    counts, k = CORPORA["6 tokens, K=2"]
    data = CoOccurrence(counts)
    model = AspectModel(k, alpha=0.7, eta=1.3)
    dyads = default_dyads(data)
    want = exact_p_dyad_mean(model, data, dyads)
    idata = gibbs(model, data, chains=4, draws=1500, tune=50, random_state=seed, progressbar=False)
    values = idata.posterior["p_dyad"].to_numpy()
    z_max = stats.norm.ppf(1 - 1e-5 / (2 * len(dyads)))  # family-wise level 1e-5
    for index in range(len(dyads)):
        x = values[:, :, index]
        se = mcse(x)
        assert abs(x.mean() - want[index]) < z_max * se, (index, x.mean(), want[index], se)
    # negative control: the expectation under other priors is caught (measured ~14 MCSEs away)
    other = exact_p_dyad_mean(AspectModel(k, alpha=3.0, eta=1.3), data, dyads)
    mcses = [mcse(values[:, :, i]) for i in range(len(dyads))]
    assert np.max(np.abs(values.mean((0, 1)) - other) / mcses) > z_max


# ----------------------------------------------------------------------------- gibbs output
@pytest.fixture(scope="module")
def toy_idata():
    return helpers.toy_gibbs(gibbs, AspectModel(2))


def test_gibbs_inference_data_layout(toy_idata):
    dims = {"theta": ("doc", "topic"), "phi": ("topic", "word"), "loglik": (), "p_dyad": ("dyad",)}
    assert_cooccurrence_idata(toy_idata, load("toy"), {"theta": "topic", "phi": "word"}, dims)
    post = toy_idata.posterior
    assert post["theta"].shape == (2, 40, 6, 2) and post["phi"].shape == (2, 40, 2, 8)


def test_gibbs_derived_quantities_are_consistent(toy_idata):
    data = load("toy")
    model = AspectModel(2)
    post = toy_idata.posterior
    coefficient = model.log_multinomial_coefficient(data)
    dyads = default_dyads(data)
    for c, d in [(0, 0), (1, 17), (1, 39)]:
        params = {name: post[name].values[c, d] for name in ("theta", "phi")}
        per_doc = model.log_likelihood(params, data)
        np.testing.assert_allclose(
            toy_idata.log_likelihood["counts"].values[c, d], per_doc + coefficient, rtol=1e-12
        )
        assert post["loglik"].values[c, d] == pytest.approx(per_doc.sum(), rel=1e-12)
        p = params["theta"] @ params["phi"]
        np.testing.assert_allclose(post["p_dyad"].values[c, d], p[dyads[:, 0], dyads[:, 1]])
    assert np.all(np.isfinite(toy_idata.sample_stats["lp"].values))


def test_gibbs_is_reproducible():
    model, data = AspectModel(2), load("toy")

    def run(seed):
        return gibbs(model, data, chains=2, draws=15, tune=5, random_state=seed, progressbar=False)

    a, b, c = run(11), run(11), run(12)
    for name in ("theta", "phi", "loglik", "p_dyad"):
        assert np.array_equal(a.posterior[name].values, b.posterior[name].values)
        assert not np.array_equal(a.posterior[name].values, c.posterior[name].values)
    assert np.array_equal(a.sample_stats["lp"].values, b.sample_stats["lp"].values)
    # chains are not copies of each other
    assert not np.array_equal(a.posterior["theta"].values[0], a.posterior["theta"].values[1])


def test_gibbs_initial_assignments():
    model, data = AspectModel(2), load("toy")
    starts = [np.zeros(data.total, dtype=int), np.ones(data.total, dtype=int), np.zeros(data.total)]

    def run(seed):
        return gibbs(model, data, draws=5, tune=0, random_state=seed, progressbar=False,
                     initial_assignments=starts)  # fmt: skip

    a, b, c = run(1), run(1), run(2)
    assert a.posterior.sizes["chain"] == 3
    assert np.array_equal(a.sample_stats["lp"].values, b.sample_stats["lp"].values)
    # the seed still drives the sweeps from a given start
    assert not np.array_equal(a.sample_stats["lp"].values, c.sample_stats["lp"].values)


def test_gibbs_scores_held_out_counts():
    def expected(params, test, train):
        return AspectModel(2).log_likelihood(params, test)

    helpers.assert_gibbs_scores_held_out_counts(gibbs, AspectModel(2), ("theta", "phi"), expected)


def test_gibbs_can_drop_the_parameters():
    helpers.assert_gibbs_can_drop_the_parameters(
        gibbs, AspectModel(2), ("theta", "phi"), ("loglik", "p_dyad")
    )


# ----------------------------------------------------------------------------- calibration
SBC_SIZES = {"n_docs": 4, "n_words": 5, "doc_length": 6}


def gibbs_sampler(model):
    return sbc_gibbs(gibbs, model, tune=50, thin=5)


@pytest.mark.parametrize("seed", [0])
def test_sbc_of_gibbs_is_uniform(seed):
    model = AspectModel(2, alpha=0.5, eta=0.8)
    result = sbc(model, gibbs_sampler(model), 100, random_state=seed, alpha=1e-4, **SBC_SIZES)
    assert result.check.passed, result.check.detail
    assert len(result.ranks) == 100
    assert result.ranks.to_numpy().min() >= 0 and result.ranks.to_numpy().max() <= 99


@pytest.mark.slow
@pytest.mark.parametrize("seed", [1, 2, 3])
def test_sbc_of_gibbs_is_uniform_more_seeds(seed):
    model = AspectModel(2, alpha=1.1, eta=1.01)
    result = sbc(model, gibbs_sampler(model), 200, random_state=seed, alpha=1e-4, **SBC_SIZES)
    assert result.check.passed, result.check.detail


def test_sbc_detects_a_sampler_with_the_wrong_prior():
    """Negative control: data from eta = 1.01, sampler assuming eta = 5.05 (measured min p ~ 1e-40;
    a sampler with alpha * 5 instead is caught only about half the time at 100 simulations)."""
    true = AspectModel(2, alpha=1.1, eta=1.01)
    wrong = AspectModel(2, alpha=1.1, eta=5.05)
    result = sbc(true, gibbs_sampler(wrong), 100, random_state=0, alpha=1e-4, **SBC_SIZES)
    assert not result.check.passed, result.check.detail
