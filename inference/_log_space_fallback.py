"""The float64 log-space redo of the non-zeros an EM kernel flagged, shared by the co-occurrence
families whose joint is a sum over pairs of a row component and a column component.

The aspect model pairs aspect ``k`` with itself; the product-space mixture pairs every row
cluster ``nu`` with every column cluster ``mu``. Both redo the non-zeros whose tempered terms
underflowed in the fast kernels with this one loop.
"""

from __future__ import annotations

import numba as nb
import numpy as np

from latentzoo.inference.em import log_posterior


@nb.njit(cache=True, nogil=True, error_model="numpy")
def redo_pairs_in_log_space(
    positions,
    rows,
    indices,
    counts,
    pair_row,
    pair_col,
    log_pair,
    log_row,
    log_col,
    n_pair,
    n_row,
    n_col,
):
    """Redo the non-zeros at ``positions`` in float64 log space (max-shifted).

    Pair ``t`` joins row component ``pair_row[t]`` and column component ``pair_col[t]``; the
    log weight of non-zero ``(i, j)`` on it is
    ``log_row[i, pair_row[t]] + log_pair[t] + log_col[j, pair_col[t]]``. Adds each non-zero's
    expected counts into ``n_pair`` (P), ``n_row`` (N x Kx) and ``n_col`` (M x Ky) and returns
    its ``sum n log s``; a non-zero whose every term is 0 has probability 0: it adds ``-inf``
    and no expected counts.

    Parameters
    ----------
    positions : int array
        Indices of the flagged non-zeros in ``indices`` and ``counts``.
    rows : int array
        The row of each flagged non-zero.
    indices, counts : arrays
        The CSR column indices and counts.
    pair_row, pair_col : int arrays of shape (P,)
    log_pair : float array of shape (P,)
        Log weight of each pair (0 where the pair has no weight of its own).
    log_row : (N, Kx) array, log_col : (M, Ky) array
        Logs of the tempered tables.
    n_pair, n_row, n_col : float64 arrays, updated in place

    Returns
    -------
    float

    Examples
    --------
    >>> positions = rows = indices = np.array([0])
    >>> pairs = np.array([0, 1])
    >>> n_pair, n_row, n_col = np.zeros(2), np.zeros((1, 2)), np.zeros((1, 2))
    >>> energy = redo_pairs_in_log_space(
    ...     positions, rows, indices, np.array([2.0]), pairs, pairs, np.zeros(2),
    ...     np.log([[0.5, 0.5]]), np.log([[0.2, 0.6]]), n_pair, n_row, n_col)
    >>> bool(np.isclose(energy, 2 * np.log(0.4))), n_pair.round(6).tolist()
    (True, [0.5, 1.5])
    """
    n_pairs = pair_row.shape[0]
    weights = np.empty(n_pairs)
    posterior = np.empty(n_pairs)
    energy = 0.0
    for q in range(positions.shape[0]):
        p = positions[q]
        i = rows[q]
        j = indices[p]
        n = np.float64(counts[p])
        for t in range(n_pairs):
            weights[t] = log_row[i, pair_row[t]] + log_pair[t] + log_col[j, pair_col[t]]
        log_s = log_posterior(weights, posterior)
        energy += n * log_s if log_s > -np.inf else -np.inf
        for t in range(n_pairs):
            value = n * posterior[t]
            n_pair[t] += value
            n_row[i, pair_row[t]] += value
            n_col[j, pair_col[t]] += value
    return energy
