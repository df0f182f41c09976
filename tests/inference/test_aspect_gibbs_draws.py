"""The aspect Gibbs sampler's per-draw work in numba agrees with the plain numpy computation.

Given the same Gamma variates, ``theta`` and ``phi`` equal those of
:func:`~latentzoo.inference.mcmc.dirichlet_rows`; the numba Gamma sampler that draws the variates
from the chain's own generator has the Gamma law; the per-row log-likelihood, ``p_dyad`` and the
collapsed log joint are checked against the model's own numpy functions, and the sweep's count
tables against a recount of its assignments.
"""

import numpy as np
import pytest
from scipy import stats

from latentzoo.data import CoOccurrence, load
from latentzoo.inference.aspect import (
    AspectGibbs,
    _dirichlet_concentrations,
    _draw_and_score,
    _prepare_gibbs,
    _row_log_likelihoods,
    _standard_gammas,
    gibbs_sweep,
)
from latentzoo.inference.mcmc import dirichlet_rows
from latentzoo.models import AspectModel
from latentzoo.models._kernels import NO_ROW_NORM, row_log_likelihoods
from latentzoo.models.conjugate import dirichlet_multinomial_log
from latentzoo.models.invariants import default_dyads

SEEDS = [0, 1, 2]


def mixed_state(model, data, seed, sweeps=5):
    sampler = AspectGibbs(model, data)
    rng = np.random.default_rng(seed)
    state = sampler.init(rng)
    for _ in range(sweeps):
        state, _ = sampler.step(state, rng)
    return sampler, state


def numba_draw_from(gammas, state, model, data):
    """theta and phi of the production kernel, fed the given Gamma variates."""
    concentrations = _dirichlet_concentrations(
        state.n_doc_topic, state.n_word_topic, model.alpha, model.eta
    )
    csr = data.counts
    theta, phi_t, _, _ = _draw_and_score(
        gammas, concentrations, data.n_rows, data.n_cols, model.n_components, csr.indptr,
        csr.indices, csr.data, np.empty((0, 2), dtype=np.int64),
    )  # fmt: skip
    return theta, phi_t.T


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("priors", [(1.1, 1.01), (0.1, 0.01)])
def test_same_gamma_variates_give_the_numpy_dirichlet_draw(seed, priors):
    """numpy's variates, drawn as dirichlet_rows draws them, normalised by the numba kernel."""
    alpha, eta = priors
    model = AspectModel(12, alpha=alpha, eta=eta)  # K > 8: numpy sums rows pairwise
    data = model.simulate(seed, n_docs=20, n_words=30)[0]
    _, state = mixed_state(model, data, seed)
    rng = np.random.default_rng(seed + 100)
    gammas = np.concatenate(
        [
            rng.standard_gamma(state.n_doc_topic + alpha).ravel(),
            rng.standard_gamma(state.n_word_topic.T + eta).ravel(),
        ]
    )
    theta, phi = numba_draw_from(gammas, state, model, data)
    rng = np.random.default_rng(seed + 100)
    np.testing.assert_allclose(theta, dirichlet_rows(rng, state.n_doc_topic + alpha), rtol=1e-12)
    np.testing.assert_allclose(phi, dirichlet_rows(rng, state.n_word_topic.T + eta), rtol=1e-12)


def test_a_row_whose_gamma_variates_underflow_falls_back_to_its_mean():
    model = AspectModel(3, alpha=1e-300, eta=1e-300)
    data = CoOccurrence([[0, 0, 0], [2, 1, 0]])
    _, state = mixed_state(model, data, 0, sweeps=1)
    rng = np.random.default_rng(0)
    gammas = np.concatenate(
        [
            rng.standard_gamma(state.n_doc_topic + model.alpha).ravel(),
            rng.standard_gamma(state.n_word_topic.T + model.eta).ravel(),
        ]
    )
    theta, phi = numba_draw_from(gammas, state, model, data)
    rng = np.random.default_rng(0)
    # The empty document's variates are all 0: both give the prior mean 1/3.
    np.testing.assert_allclose(theta[0], 1 / 3)
    np.testing.assert_allclose(theta, dirichlet_rows(rng, state.n_doc_topic + model.alpha))
    np.testing.assert_allclose(phi, dirichlet_rows(rng, state.n_word_topic.T + model.eta))
    # and the production draw (its own variates) stays on the simplex
    got = AspectGibbs(model, data).draw(state, rng)
    assert np.allclose(got["theta"].sum(1), 1.0) and np.allclose(got["phi"].sum(1), 1.0)


@pytest.mark.parametrize("shape", [0.01, 0.1, 0.5, 1.0, 1.1, 3.7, 250.0])
def test_numba_gamma_variates_have_the_gamma_law(shape):
    seed = np.random.default_rng().integers(2**63)
    draws = _standard_gammas(np.full(20_000, shape), np.array([seed], dtype=np.uint64))
    # Shape 0.01 (eta on an unseen word) puts 0.1% of its mass below 1e-300: clipped there.
    test = stats.kstest(np.maximum(draws, 1e-300), stats.gamma(shape).cdf)
    assert test.pvalue > 1e-6, (seed, test)


def test_production_draw_has_the_dirichlet_moments_and_is_reproducible():
    model = AspectModel(3, alpha=0.4, eta=0.2)
    data = load("toy")
    sampler, state = mixed_state(model, data, 0)
    draws = [sampler.draw(state, None) for _ in range(4000)]
    theta = np.stack([d["theta"] for d in draws])
    phi = np.stack([d["phi"] for d in draws])
    for table, conc in ((theta, state.n_doc_topic + 0.4), (phi, state.n_word_topic.T + 0.2)):
        mean = conc / conc.sum(1, keepdims=True)
        var = mean * (1 - mean) / (conc.sum(1, keepdims=True) + 1)
        z = (table.mean(0) - mean) / np.sqrt(var / len(draws))
        assert np.abs(z).max() < 5.5, np.abs(z).max()  # ~ family-wise 1e-6 over < 100 entries
        squares = (table - mean) ** 2  # second central moments, tested the same way
        z = (squares.mean(0) - var) / (squares.std(0) / np.sqrt(len(draws)))
        assert np.abs(z).max() < 5.5, np.abs(z).max()
    again = mixed_state(model, data, 0)[1]
    assert np.array_equal(sampler.draw(again, None)["theta"], draws[0]["theta"])


@pytest.mark.parametrize("seed", SEEDS)
def test_kept_draw_scores_match_the_model_functions(seed):
    model = AspectModel(4)
    data, _ = model.simulate(seed, n_docs=15, n_words=25, doc_length=40)
    train, test = data.split(0.3, random_state=seed)
    setup = _prepare_gibbs(model, train, chains=1, draws=1, test=test, keep_params=True)
    sampler, state = mixed_state(model, train, seed)
    out = setup.draw(state, np.random.default_rng(seed))
    params = {"theta": out["theta"], "phi": out["phi"]}
    np.testing.assert_allclose(out["loglik"], model.log_likelihood(params, train).sum(), rtol=1e-12)
    np.testing.assert_allclose(
        out["p_dyad"], model.predictive(params, default_dyads(train)), rtol=1e-12
    )
    want = model.log_likelihood(params, test) + model.log_multinomial_coefficient(test)
    np.testing.assert_allclose(out["counts"], want, rtol=1e-12)


@pytest.mark.parametrize("seed", SEEDS)
def test_log_joint_equals_the_dirichlet_multinomial_marginals(seed):
    model = AspectModel(5, alpha=0.3, eta=0.05)
    data, _ = model.simulate(seed, n_docs=12, n_words=40, doc_length=30)
    sampler, state = mixed_state(model, data, seed)
    want = dirichlet_multinomial_log(state.n_doc_topic, model.alpha) + dirichlet_multinomial_log(
        state.n_word_topic.T, model.eta
    )
    assert sampler.log_joint(state) == pytest.approx(float(want), rel=1e-12, abs=1e-9)


def test_log_joint_with_counts_beyond_its_log_gamma_table():
    model = AspectModel(2, alpha=0.5, eta=0.2)
    sampler, state = mixed_state(model, CoOccurrence([[5000, 3], [1, 4500]]), 0)
    assert state.n_doc_topic.max() > 4096
    want = dirichlet_multinomial_log(state.n_doc_topic, model.alpha) + dirichlet_multinomial_log(
        state.n_word_topic.T, model.eta
    )
    assert sampler.log_joint(state) == pytest.approx(float(want), rel=1e-12)


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("k", [1, 2, 7, 33])
def test_sweep_keeps_its_count_tables_equal_to_a_recount(seed, k):
    """Both paths of the sweep (a token keeps its topic; a token moves) update the tables."""
    data = load("toy") if k < 7 else AspectModel(k).simulate(seed, n_docs=30, n_words=50)[0]
    model = AspectModel(k, alpha=0.2, eta=0.05)
    sampler, state = mixed_state(model, data, seed, sweeps=0)
    moved = 0
    for _ in range(20):
        before = state.z.copy()
        gibbs_sweep(
            sampler.doc_ptr, sampler.words, state.z, state.n_doc_topic, state.n_word_topic,
            state.n_topic, model.alpha, model.eta, state.rng_state,
        )  # fmt: skip
        moved += int((before != state.z).sum())
    assert state.z.min() >= 0 and state.z.max() < k
    ndk = np.zeros((data.n_rows, k))
    nwk = np.zeros((data.n_cols, k))
    np.add.at(ndk, (sampler.docs, state.z), 1.0)
    np.add.at(nwk, (sampler.words, state.z), 1.0)
    np.testing.assert_array_equal(state.n_doc_topic, ndk)
    np.testing.assert_array_equal(state.n_word_topic, nwk)
    np.testing.assert_array_equal(state.n_topic, nwk.sum(0))
    assert (moved > 0) == (k > 1)


def test_sweep_survives_priors_so_small_that_counts_plus_prior_round_to_counts():
    """``n - 1 + eta`` must not become 0 when the token is alone in its topic (it raised
    ZeroDivisionError under fastmath's reassociation before)."""
    model = AspectModel(3, alpha=1e-300, eta=1e-300)
    sampler, state = mixed_state(model, CoOccurrence([[0, 0, 0], [2, 1, 0]]), 0, sweeps=30)
    assert state.n_topic.sum() == 3 and np.all(state.n_topic >= 0)


@pytest.mark.parametrize("seed", SEEDS)
def test_blocked_row_log_likelihoods_are_the_model_kernels_bit_for_bit(seed):
    """Rows of every length modulo the block of 8, large and fractional counts, zero
    probabilities (-inf) included."""
    rng = np.random.default_rng(seed)
    counts = rng.poisson(0.6, size=(40, 37)).astype(float)
    counts[:, :5] *= rng.integers(1, 40, size=(40, 5))  # counts above 16 take their own log
    counts[3, 7] = 2.5
    csr = CoOccurrence(np.ceil(counts)).counts.copy()
    csr.data = csr.data - (csr.data == 3) * 0.5  # fractional counts
    theta = rng.dirichlet(np.full(6, 0.3), size=40)
    phi_t = rng.dirichlet(np.full(37, 0.05), size=6).T.copy()
    phi_t[11] = 0.0
    want = row_log_likelihoods(csr.indptr, csr.indices, csr.data, theta, phi_t, NO_ROW_NORM)
    got = _row_log_likelihoods(csr.indptr, csr.indices, csr.data, theta, phi_t)
    np.testing.assert_array_equal(got, want)
