"""The aspect model's fused EM kernel: the logarithm-free energy and the invariant dyads."""

import math

import numpy as np
import pytest
import scipy.sparse as sp

from latentzoo.data import CoOccurrence, load
from latentzoo.inference.aspect import _drain_logs, _log_factor, em_pass
from latentzoo.models.invariants import default_dyads


def _energy(counts, s):
    """``sum n log s`` through _log_factor and _drain_logs, as the kernels accumulate it."""
    product, values, weights = 1.0, [], []
    for n, value in zip(counts, s, strict=True):
        product, queued, weight = _log_factor.py_func(product, float(n), float(value))
        if weight != 0.0:
            values.append(queued)
            weights.append(weight)
    total = _drain_logs.py_func(0.0, len(values), np.array(values), np.array(weights))
    return total + math.log(product)


@pytest.mark.parametrize(
    "counts, s",
    [
        # counts 1 to 4 batched, others (0.5, 7, 1e6) logged; tiny and huge normalisers
        ([1, 2, 3, 4, 7, 0.5, 1e6, 1, 2], [0.3, 1e-3, 2e-4, 0.9, 1e-5, 0.1, 0.7, 1e-30, 1e30]),
        # the product crosses 1e-200 and 1e200 (flushes) without underflow or overflow
        ([4] * 60 + [1] * 40, [1e-24] * 60 + [1e24] * 40),
        ([3] * 100, np.geomspace(1e-24, 1e24, 100)),
    ],
)
def test_log_factor_accumulates_n_log_s(counts, s):
    exact = math.fsum(n * math.log(v) for n, v in zip(counts, s, strict=True))
    assert _energy(counts, s) == pytest.approx(exact, rel=1e-14, abs=1e-12)


def test_log_factor_keeps_log_of_zero():
    """A normaliser of 0 (a pair of probability 0) still gives an energy of -inf."""
    with np.errstate(divide="ignore"):
        assert _energy([1, 2], [0.5, 0.0]) == -np.inf


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("beta", [1.0, 0.7])
def test_em_pass_energy_matches_a_compensated_sum(dtype, beta):
    """Random counts 1 to 9 (some batched, some logged): energy and log-likelihood agree with
    ``math.fsum`` of the per-cell terms (float32 tables: to their rounding)."""
    rng = np.random.default_rng(4)
    counts = sp.random(40, 50, density=0.3, random_state=rng, format="csr")
    counts.data = rng.integers(1, 10, counts.nnz).astype(np.float64)
    data = CoOccurrence(counts)
    theta = rng.dirichlet(np.ones(5), 40)
    phi_t = np.ascontiguousarray(rng.dirichlet(np.ones(50), 5).T)
    _, _, energy, loglik = em_pass(data, theta, phi_t, beta, dtype=dtype)
    coo = counts.tocoo()
    cells = zip(coo.data, coo.row, coo.col, strict=True)
    terms = [(n, (theta[i] ** beta) @ (phi_t[j] ** beta), theta[i] @ phi_t[j]) for n, i, j in cells]
    rtol = 1e-13 if dtype is np.float64 else 1e-6
    assert energy == pytest.approx(math.fsum(n * math.log(s) for n, s, _ in terms), rel=rtol)
    assert loglik == pytest.approx(math.fsum(n * math.log(p) for n, _, p in terms), rel=1e-13)


def _all_sorted_dyads(data, n_dyads):
    coo = data.counts.tocoo()
    order = np.lexsort((coo.col, coo.row, -coo.data))[:n_dyads]
    return np.stack([coo.row[order], coo.col[order]], axis=1).astype(np.int64)


@pytest.mark.parametrize("n_dyads", [0, 1, 3, 8, 500])
def test_default_dyads_equal_the_full_sort_with_ties(n_dyads):
    """Only the cells tied with or above the n-th largest count are sorted now: same dyads."""
    rng = np.random.default_rng(n_dyads)
    cases = [load("toy"), load("reuters")]
    for _ in range(20):
        shape = rng.integers(1, 30, 2)
        dense = rng.integers(0, 4, shape) * (rng.random(shape) < 0.4)
        if dense.any():
            cases.append(CoOccurrence(sp.csr_matrix(dense)))
    for data in cases:
        np.testing.assert_array_equal(
            default_dyads(data, n_dyads), _all_sorted_dyads(data, n_dyads)
        )
