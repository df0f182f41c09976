"""Tests of the product-space mixture model's annealed EM (Hofmann & Puzicha 1998, eq. (16)-(19)).

The fused kernel is compared with a dense numpy E/M step that materialises the posterior over all
``Kx*Ky`` class pairs of every cell, and one EM step with identity column clusters with the aspect
model's (independently tested) EM step, through the identity documented on the model.
"""

import numba as nb
import numpy as np
import pytest

from latentzoo.data import CoOccurrence, load
from latentzoo.inference.annealing import EMProblem, EMResult, perplexity
from latentzoo.inference.aspect import AspectEM
from latentzoo.inference.product_space import (
    ProductSpaceEM,
    product_space_em,
    product_space_pass,
)
from latentzoo.models import AspectModel
from latentzoo.models.product_space import ProductSpaceMixture
from tests.helpers import assert_free_energy_falls, increases

SEEDS = [0, 1, 2]


def random_problem(seed, n_rows=9, n_cols=13, kx=3, ky=4, empty=True):
    rng = np.random.default_rng(seed)
    counts = rng.poisson(1.2, size=(n_rows, n_cols))
    if empty:
        counts[2] = 0  # an empty row
        counts[:, 5] = 0  # an empty column
    else:
        counts += 1
    counts[0, 0] += 1
    pi = rng.dirichlet(np.ones(kx * ky)).reshape(kx, ky)
    a = rng.dirichlet(np.ones(n_rows), kx).T.copy()  # (N, Kx)
    b = rng.dirichlet(np.ones(n_cols), ky).T.copy()  # (M, Ky)
    return CoOccurrence(counts), counts, pi, a, b


def dense_em(counts, pi, a, b, beta):
    """Tempered E-step over all class pairs (an N x M x Kx x Ky array) and the M-step sums."""
    weights = (pi[None, None] * a[:, None, :, None] * b[None, :, None, :]) ** beta
    s = weights.sum(axis=(2, 3))
    posterior = weights / np.where(s > 0, s, 1.0)[:, :, None, None]
    np.testing.assert_allclose(posterior.sum(axis=(2, 3))[counts > 0], 1.0)
    expected = counts[:, :, None, None] * posterior
    n_pi = expected.sum(axis=(0, 1))
    n_a = expected.sum(axis=(1, 3))  # eq. (18): sum over j and over mu
    n_b = expected.sum(axis=(0, 2))  # eq. (19): sum over i and over nu
    mask = counts > 0
    energy = (counts[mask] * np.log(s[mask])).sum()
    loglik = (counts[mask] * np.log((a @ pi @ b.T)[mask])).sum()
    return n_pi, n_a, n_b, energy, loglik


def separated(seed, kx=3, ky=4, n_docs=40, n_words=50, n_tokens=3000):
    model = ProductSpaceMixture(kx, ky)
    data, truth = model.simulate(seed, n_docs=n_docs, n_words=n_words, n_tokens=n_tokens,
                                 separated=True)  # fmt: skip
    return model, data, truth


# ----------------------------------------------------------------------------- kernel
@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("beta", [1.0, 0.7])
def test_kernel_matches_dense_reference(seed, beta):
    data, counts, pi, a, b = random_problem(seed)
    want = dense_em(counts, pi, a, b, beta)
    threads_before = nb.get_num_threads()
    for n_threads in (1, 2):
        got = product_space_pass(data, pi, a, b, beta, n_threads=n_threads)
        for g, w in zip(got[:3], want[:3], strict=True):
            np.testing.assert_allclose(g, w, rtol=1e-10, atol=1e-12)
            assert g.sum() == pytest.approx(data.total, rel=1e-12)
        assert got[3] == pytest.approx(want[3], rel=1e-10)
        assert got[4] == pytest.approx(want[4], rel=1e-10)
        assert np.all(got[1][2] == 0) and np.all(got[2][5] == 0)
    assert nb.get_num_threads() == threads_before


@pytest.mark.parametrize("beta", [1.0, 0.7])
def test_float32_kernel_matches_dense_reference(beta):
    data, counts, pi, a, b = random_problem(5)
    want = dense_em(counts, pi, a, b, beta)
    for n_threads in (1, 2):
        got = product_space_pass(data, pi, a, b, beta, n_threads=n_threads, dtype=np.float32)
        assert all(g.dtype == np.float64 for g in got[:3])
        for g, w in zip(got[:3], want[:3], strict=True):
            np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-5)
        assert got[3] == pytest.approx(want[3], rel=1e-6)
    with pytest.raises(ValueError, match="dtype must be float32 or float64"):
        product_space_pass(data, pi, a, b, beta, dtype=np.int64)


def test_kernel_without_tracking_reports_nan_when_tempered():
    data, counts, pi, a, b = random_problem(0)
    assert np.isnan(product_space_pass(data, pi, a, b, 0.5, track_loglik=False)[4])
    at_one = product_space_pass(data, pi, a, b, 1.0, track_loglik=False)
    assert at_one[4] == at_one[3]  # at beta = 1 the energy is the joint log-likelihood


@pytest.mark.parametrize("beta", [1.0, 0.6])
def test_step_is_the_map_m_step(beta):
    data, counts, pi, a, b = random_problem(3)
    model = ProductSpaceMixture(3, 4, alpha=1.5, eta=1.2)
    params = {"pi": pi.ravel(), "p_row": a.T.copy(), "q_col": b.T.copy()}
    problem = ProductSpaceEM(model, data)
    assert EMProblem in ProductSpaceEM.__mro__ and problem.monotone
    new, stats_ = problem.step(params, beta)
    n_pi, n_a, n_b, energy, _ = dense_em(counts, pi, a, b, beta)
    want_pi = (n_pi + 0.5) / (n_pi + 0.5).sum()
    np.testing.assert_allclose(new["pi"], want_pi.ravel(), rtol=1e-10)
    want_row = (n_a.T + 0.2) / (n_a.T + 0.2).sum(axis=1, keepdims=True)
    np.testing.assert_allclose(new["p_row"], want_row, rtol=1e-10)
    want_col = (n_b.T + 0.2) / (n_b.T + 0.2).sum(axis=1, keepdims=True)
    np.testing.assert_allclose(new["q_col"], want_col, rtol=1e-10)
    log_prior = 0.5 * np.log(pi).sum() + 0.2 * (np.log(a).sum() + np.log(b).sum())
    assert stats_.free_energy == pytest.approx(-energy / beta - log_prior, rel=1e-10)
    want_ll = model.log_likelihood({"pi": pi, "p_row": a.T, "q_col": b.T}, data).sum()
    assert stats_.log_likelihood == pytest.approx(want_ll, rel=1e-10)


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("beta", [1.0, 0.6])
def test_step_with_identity_column_clusters_is_the_aspect_em_step(seed, beta):
    """Ky = M, q_col = I: the PMM is the SMM with Kx aspects, and so is its EM step."""
    data, counts, pi, a, _ = random_problem(seed, n_rows=7, n_cols=6, kx=3, ky=6, empty=False)
    m = data.n_cols
    pmm = ProductSpaceMixture(3, m, alpha=1.0, eta=1.0)
    new, _ = ProductSpaceEM(pmm, data).step(
        {"pi": pi.ravel(), "p_row": a.T.copy(), "q_col": np.eye(m)}, beta
    )
    np.testing.assert_allclose(new["q_col"], np.eye(m), atol=1e-15)
    mass = pi.sum(axis=1)
    theta = mass[None, :] * a
    theta /= theta.sum(axis=1, keepdims=True)
    aspect_new, _ = AspectEM(AspectModel(3, alpha=1.0, eta=1.0), data).step(
        {"theta": theta, "phi": pi / mass[:, None]}, beta
    )
    new["pi"] = new["pi"].reshape(3, m)
    np.testing.assert_allclose(
        pmm.conditional(new), aspect_new["theta"] @ aspect_new["phi"], rtol=1e-10
    )


def test_maximum_likelihood_with_an_empty_row():
    """alpha = eta = 1: an empty row gets p_i = 0 and the trace's likelihood stays finite."""
    data, counts, pi, a, b = random_problem(4)  # row 2 is empty
    model = ProductSpaceMixture(3, 4, alpha=1.0, eta=1.0)
    problem = ProductSpaceEM(model, data)
    params = {"pi": pi.ravel(), "p_row": a.T.copy(), "q_col": b.T.copy()}
    for _ in range(3):
        new, stats_ = problem.step(params, 1.0)
        want = model.log_likelihood(params, data).sum()
        assert stats_.log_likelihood == pytest.approx(want, rel=1e-10)
        params = new
    assert np.all(params["p_row"][:, 2] == 0) and np.all(params["q_col"][:, 5] == 0)


def test_problem_rejects_sparse_priors():
    for alpha, eta in [(0.5, 1.0), (1.0, 0.9)]:
        with pytest.raises(ValueError, match="needs alpha >= 1 and eta >= 1"):
            ProductSpaceEM(ProductSpaceMixture(2, alpha=alpha, eta=eta), load("toy"))


def test_init_is_on_the_simplex_and_positive():
    data = CoOccurrence([[0, 0, 0, 0], [3, 0, 1, 0], [0, 2, 0, 0]])  # empty row and columns
    params = ProductSpaceEM(ProductSpaceMixture(2, 3), data).init(np.random.default_rng(0))
    assert params["pi"].shape == (6,) and params["pi"].sum() == pytest.approx(1.0)
    for name in ("p_row", "q_col"):
        np.testing.assert_allclose(params[name].sum(axis=1), 1.0)
        assert np.all(params[name] > 0)


# ----------------------------------------------------------------------------- annealed EM
@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("beta", [1.0, 0.6, 0.3])
def test_free_energy_never_increases(seed, beta):
    model = ProductSpaceMixture(3, 2)
    data, _ = model.simulate(seed, n_docs=25, n_words=30, n_tokens=1500)
    result = product_space_em(model, data, betas=[beta], max_iter=60, tol=0, random_state=seed)
    assert_free_energy_falls(result, 60)


@pytest.mark.parametrize("seed", SEEDS)
def test_overrelaxed_em_stays_monotone_and_on_the_simplex(seed):
    """``pi`` is one distribution over all pairs: the driver's projection must keep it so."""
    model = ProductSpaceMixture(3, 2)
    data, _ = model.simulate(seed, n_docs=25, n_words=30, n_tokens=1500)
    result = product_space_em(
        model, data, betas=[0.8, 1.0], max_iter=40, tol=0, overrelax=1.8, random_state=seed
    )
    for _, stage in result.trace.groupby("beta"):
        assert increases(stage["free_energy"]).size == 0
    model.check_params(result.params, data)  # shapes and simplex constraints
    assert result.params["pi"].shape == (3, 2)


@pytest.mark.parametrize("seed", SEEDS)
def test_em_beats_the_unigram_baseline_on_held_out_data(seed):
    model, data, truth = separated(seed)
    train, test = data.split(0.2, random_state=seed)
    # EM finds local optima; as a user would, keep the best of three starts by training fit.
    fits = [
        product_space_em(model, train, random_state=seed * 10 + start)  # tempered schedule
        for start in range(3)
    ]
    result = max(fits, key=lambda fit: fit.log_likelihood(train).sum())
    assert isinstance(result, EMResult)
    held_out = result.perplexity(test)
    assert np.isfinite(held_out)
    assert held_out == pytest.approx(perplexity(model, result.params, test))
    unigram = (train.col_totals + 1.0) / (train.total + train.n_cols)
    baseline = np.exp(-(test.counts.data * np.log(unigram[test.counts.indices])).sum() / test.total)
    truth_perplexity = perplexity(model, truth, test)
    assert held_out < 0.8 * baseline
    assert held_out < 1.15 * truth_perplexity
    assert result.trace["log_likelihood"].iloc[-1] == pytest.approx(
        model.log_likelihood(result.params, train).sum(), rel=1e-2
    )


def test_explicit_schedule_trace_and_inference_data():
    model, data, _ = separated(0, n_docs=20, n_words=24, n_tokens=800)
    result = product_space_em(model, data, betas=[0.5, 0.8, 1.0], max_iter=30, random_state=0)
    assert result.betas == [0.5, 0.8, 1.0]
    assert list(result.trace["beta"].unique()) == [0.5, 0.8, 1.0]
    assert result.params["p_row"].shape == (3, 20) and result.params["q_col"].shape == (4, 24)
    idata = result.to_inference_data()
    assert idata.point_estimate["pi"].shape == (3, 4)
    # the trace's log-likelihood at beta = 1 is the model's conditional one of the iterate
    assert np.isfinite(result.trace["log_likelihood"]).all()


def test_early_stopping_schedule_converges_at_beta_one():
    model, data, _ = separated(1, n_docs=20, n_words=24, n_tokens=800)
    result = product_space_em(model, data, betas="early_stopping", random_state=1)
    assert result.betas == [1.0] and result.converged
    assert "validation_perplexity" in result.selection_trace


@pytest.mark.parametrize("betas", ["auto", [0.7, 1.0]])
def test_same_random_state_gives_identical_results(betas):
    model, data, _ = separated(2, n_docs=20, n_words=24, n_tokens=800)
    runs = [
        product_space_em(model, data, betas=betas, max_iter=40, random_state=7) for _ in range(2)
    ]
    for name in model.param_names:
        np.testing.assert_array_equal(runs[0].params[name], runs[1].params[name])
    columns = ["beta", "iteration", "log_likelihood", "free_energy"]
    assert runs[0].trace[columns].equals(runs[1].trace[columns])
    generator = product_space_em(
        model, data, betas=betas, max_iter=40, random_state=np.random.default_rng(7)
    )
    np.testing.assert_array_equal(generator.params["pi"], runs[0].params["pi"])
    other = product_space_em(model, data, betas=betas, max_iter=40, random_state=8)
    assert not np.array_equal(other.params["pi"], runs[0].params["pi"])


def test_threads_and_float32_agree_with_the_serial_run():
    model, data, _ = separated(0, n_docs=20, n_words=24, n_tokens=800)
    kwargs = {"betas": [0.8], "max_iter": 30, "tol": 0, "random_state": 3}
    serial = product_space_em(model, data, **kwargs)
    threaded = product_space_em(model, data, n_threads=2, **kwargs)
    single = product_space_em(model, data, dtype=np.float32, **kwargs)
    fe = serial.trace["free_energy"].to_numpy()
    np.testing.assert_allclose(threaded.trace["free_energy"], fe, rtol=1e-10)
    np.testing.assert_allclose(single.trace["free_energy"], fe, rtol=1e-5)


# ----------------------------------------------------------------------------- bad input
@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"betas": "fast"}, "betas must be 'auto', 'early_stopping' or a list"),
        ({"betas": []}, "non-empty list"),
        ({"betas": [1.0, -0.5]}, r"betas\[1\] = -0.5 must be a positive finite number"),
        ({"max_iter": 0}, "max_iter must be an integer >= 1"),
        ({"tol": -1.0}, r"tol must be a number in \[0, inf\)"),
        ({"overrelax": 2.0, "betas": [1.0]}, r"overrelax must be a number in \(0, 2\)"),
        ({"dtype": np.int32}, "dtype must be float32 or float64"),
    ],
)
def test_product_space_em_rejects_bad_options(kwargs, match):
    with pytest.raises(ValueError, match=match):
        product_space_em(ProductSpaceMixture(2), load("toy"), random_state=0, **kwargs)


@pytest.mark.parametrize(
    "model, counts, match",
    [
        (ProductSpaceMixture(2), [[1.0, np.nan], [1.0, 2.0]], r"counts\[0, 1\] is NaN"),
        (ProductSpaceMixture(2), [[1, 2], [-1, 2]], r"counts\[1, 0\] = -1 is negative"),
        (ProductSpaceMixture(2), [[0, 0], [0, 0]], "no observations"),
        (ProductSpaceMixture(2), [1, 2, 3], "2-D"),
        (ProductSpaceMixture(3, 2), [[5, 5], [5, 5]], "n_row_clusters=3 is larger than the data"),
        (ProductSpaceMixture(1, 3), [[5, 5], [5, 5]], "n_col_clusters=3 is larger than the data"),
        (ProductSpaceMixture(2, 2), [[1, 0], [0, 1]], "4 classes is larger than the data"),
        (ProductSpaceMixture(1, alpha=0.5), [[1, 2]], "needs alpha >= 1"),
    ],
)
def test_product_space_em_rejects_bad_data(model, counts, match):
    with pytest.raises(ValueError, match=match):
        product_space_em(model, counts, betas=[1.0], random_state=0)


# ------------------------------------------------------------------ float32 and extremes
def _pmm_fit(matrix, kx, ky, dtype, betas, max_iter=20, seed=0):
    data = CoOccurrence(np.array(matrix))
    model = ProductSpaceMixture(kx, ky, alpha=1.0, eta=1.0)
    return product_space_em(model, data, betas=betas, max_iter=max_iter, tol=0,
                            random_state=seed, dtype=dtype)  # fmt: skip


def test_float32_free_energy_never_rises_on_large_counts():
    # Before: float32 tables let the free energy rise by 0.0056 relative at beta = 1 (the
    # energy inherited the tables' rounding: 1e7 counts x 6e-8).
    f32 = _pmm_fit([[10_000_000, 1]], 1, 1, np.float32, [1.0])
    f64 = _pmm_fit([[10_000_000, 1]], 1, 1, np.float64, [1.0])
    fe = f32.trace["free_energy"].to_numpy()
    assert np.all(np.diff(fe) <= 1e-9 * np.abs(fe[1:]))
    np.testing.assert_allclose(fe, f64.trace["free_energy"], rtol=1e-9)


@pytest.mark.parametrize("beta", [100.0, 1000.0])
def test_float32_keeps_small_probabilities_far_from_beta_one(beta):
    # Before: probabilities below float32's range were zeroed, so the fit gave an observed cell
    # probability 0 (log-likelihood -inf).
    for seed in range(3):
        f32 = _pmm_fit([[50, 1], [1, 1]], 1, 2, np.float32, [beta], max_iter=2, seed=seed)
        f64 = _pmm_fit([[50, 1], [1, 1]], 1, 2, np.float64, [beta], max_iter=2, seed=seed)
        assert np.isfinite(f32.trace["log_likelihood"]).all()
        np.testing.assert_allclose(f32.params["q_col"], f64.params["q_col"], rtol=1e-4, atol=1e-12)


def test_a_cold_start_has_a_finite_free_energy():
    # Before: at beta = 1000 a random start's terms underflowed and its free energy was inf.
    rng = np.random.default_rng(0)
    matrix = rng.integers(0, 5, size=(6, 8)) + np.eye(6, 8, dtype=int)
    for dtype in (np.float64, np.float32):
        result = _pmm_fit(matrix, 2, 2, dtype, [1000.0], max_iter=10)
        fe = result.trace["free_energy"].to_numpy()
        assert np.isfinite(fe).all()
        assert np.all(np.diff(fe) <= 1e-9 * np.abs(fe[1:]))
