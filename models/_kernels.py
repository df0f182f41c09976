"""Numba kernels shared by the co-occurrence families (aspect, one-sided, two-sided and
product-space): scores of the stored cells of a CSR pattern, summed without forming an
``nnz x K`` array. They live here, below every family, so that no family imports another's
module for them.
"""

from __future__ import annotations

import math

import numba as nb
import numpy as np

__all__ = ["NO_ROW_NORM", "add_log_term", "cell_dots", "one_hot", "row_log_likelihoods"]

NO_ROW_NORM = np.empty(0)
"""The ``row_norm`` of :func:`row_log_likelihoods` that divides by nothing."""
_LOG2 = math.log(2.0)


@nb.njit(cache=True, inline="always")
def add_log_term(s, n, direct, mantissa, exponent):
    """``n log s`` added to a row's log-likelihood kept as ``direct + log(mantissa * 2**exponent)``.

    Few logarithms: small integer powers (``n <= 16``, ``s >= 1e-15``) multiply into the running
    product, whose binary exponent is moved aside by ``frexp`` before it can underflow, so a row
    takes one logarithm for them; the rest are added to ``direct``. Shared by
    :func:`row_log_likelihoods` and the Gibbs sampler's scoring of its kept draws, which must agree
    bit for bit.

    Examples
    --------
    >>> direct, mantissa, exponent = add_log_term(0.5, 2.0, 0.0, 1.0, 0)
    >>> bool(np.isclose(direct + np.log(mantissa) + exponent * np.log(2), 2 * np.log(0.5)))
    True
    """
    if s >= 1e-15 and n <= 16 and n == int(n):
        mantissa *= s ** int(n)
        if mantissa < 1e-60:
            mantissa, shift = math.frexp(mantissa)
            exponent += shift
    else:
        direct += n * np.log(s)
    return direct, mantissa, exponent


@nb.njit(cache=True)
def row_log_likelihoods(indptr, indices, counts, left, right, row_norm):
    """``sum_j n_ij log(sum_k left[i, k] right[j, k] / row_norm[i])`` per row, over CSR non-zeros.

    The fused kernel behind :meth:`AspectModel.log_likelihood` (``left = theta``,
    ``right = phi.T``) and the product-space likelihoods: one pass over the non-zeros, each
    probability summed over ``k = 0..K-1`` in order and its ``n_ij log`` added to its row in CSR
    order, so no ``nnz x K`` array is formed. Small integer counts (at most 16, probabilities of at
    least 1e-15) multiply into a per-row product kept in range by ``frexp``, so a row takes one
    logarithm for them; the rest take their own. Agrees with the plain sum to about 1e-15. An
    empty ``row_norm`` divides by nothing; otherwise a row with ``row_norm[i] <= 0`` (or NaN)
    gives probability 0. A count whose probability is 0 contributes ``-inf``, NaN parameters give
    NaN, and rows without non-zeros give 0. Indices are not bounds-checked: the callers check the
    shapes.

    Examples
    --------
    >>> import scipy.sparse as sp
    >>> csr = sp.csr_matrix(np.array([[2, 0], [0, 1]]))
    >>> left, right = np.array([[1.0, 0.0], [0.5, 0.5]]), np.array([[0.25, 0.5], [0.75, 0.5]])
    >>> out = row_log_likelihoods(csr.indptr, csr.indices, csr.data, left, right, np.empty(0))
    >>> bool(np.allclose(out, [2 * np.log(0.25), np.log(0.625)]))
    True
    """
    n_rows = indptr.shape[0] - 1
    width = left.shape[1]
    divide = row_norm.shape[0] > 0
    out = np.zeros(n_rows)
    for i in range(n_rows):
        direct = 0.0
        mantissa = 1.0
        exponent = 0
        for p in range(indptr[i], indptr[i + 1]):
            j = indices[p]
            s = 0.0
            for k in range(width):
                s += left[i, k] * right[j, k]
            if divide:
                s = s / row_norm[i] if row_norm[i] > 0 else 0.0
            direct, mantissa, exponent = add_log_term(s, counts[p], direct, mantissa, exponent)
        out[i] = direct + (np.log(mantissa) + exponent * _LOG2)
    return out


@nb.njit(cache=True)
def cell_dots(indptr, indices, left, right):
    """``sum_k left[i, k] right[j, k]`` for every stored cell ``(i, j)`` of a CSR pattern.

    The mixing term of eq. (47) on the non-zeros only (``left = <I> c``, ``right = <J>``), in CSR
    order; no ``N x M`` array is formed.

    Examples
    --------
    >>> import scipy.sparse as sp
    >>> csr = sp.csr_matrix(np.array([[1, 0], [0, 2]]))
    >>> cell_dots(csr.indptr, csr.indices, np.array([[1.0, 2.0], [3.0, 4.0]]), np.eye(2)).tolist()
    [1.0, 4.0]
    """
    out = np.empty(indices.shape[0])
    width = left.shape[1]
    for i in range(indptr.shape[0] - 1):
        for p in range(indptr[i], indptr[i + 1]):
            j = indices[p]
            s = 0.0
            for k in range(width):
                s += left[i, k] * right[j, k]
            out[p] = s
    return out


def one_hot(labels, k) -> np.ndarray:
    """Integer labels ``(n,)`` as an ``(n, k)`` float matrix of indicator rows.

    Examples
    --------
    >>> one_hot(np.array([1, 0]), 3).tolist()
    [[0.0, 1.0, 0.0], [1.0, 0.0, 0.0]]
    """
    out = np.zeros((labels.shape[0], k))
    out[np.arange(labels.shape[0]), labels] = 1.0
    return out
