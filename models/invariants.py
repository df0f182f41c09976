"""Where the label-invariant quantities of every family are evaluated.

Methods are compared through quantities that permuting the labels leaves unchanged: predictive
probabilities of chosen dyads ``(i, j)`` and co-assignment probabilities of chosen pairs of objects.
The choices are deterministic functions of the data, the same for every method, so the draws of a
fast sampler, of PyMC and the point estimates line up entry by entry.
"""

from __future__ import annotations

import numpy as np

from latentzoo.data import CoOccurrence

__all__ = ["MAX_ALL_PAIRS", "N_DYADS", "N_PAIR_ITEMS", "coassignment_pairs", "default_dyads"]

N_DYADS = 8
"""Dyads tracked by :func:`default_dyads`."""
N_PAIR_ITEMS = 6
"""Above ``MAX_ALL_PAIRS`` objects, co-assignment is tracked among this many (the largest totals)."""
MAX_ALL_PAIRS = 20
"""Up to this many objects every pair ``a < b`` is tracked."""


def default_dyads(data: CoOccurrence, n_dyads: int = N_DYADS) -> np.ndarray:
    """The dyads ``(i, j)`` whose predictive probabilities are compared across methods.

    The ``n_dyads`` non-zero cells with the largest counts (ties broken by position), so the choice is a
    deterministic function of the data and the same for every method.

    Parameters
    ----------
    data : CoOccurrence
    n_dyads : int

    Returns
    -------
    numpy.ndarray of shape (n, 2), int64

    Examples
    --------
    >>> from latentzoo.data import load
    >>> default_dyads(load("toy"), 3).shape
    (3, 2)
    """
    csr = data.counts
    values, positions = csr.data, np.arange(csr.nnz)
    if 0 < n_dyads < values.size:
        # Only cells tied with or above the n-th largest count can be chosen. Sorting every
        # non-zero cost 0.1 s per fit on Reuters x16 (more than an EM iteration), and so did
        # np.partition on the many ties of count data; at most n_dyads maxima are cheap.
        nth = values.max()
        while np.count_nonzero(values >= nth) < n_dyads:
            nth = values[values < nth].max()
        positions = np.flatnonzero(values >= nth)
    rows = np.searchsorted(csr.indptr, positions, side="right") - 1
    cols = csr.indices[positions]
    order = np.lexsort((cols, rows, -values[positions]))[:n_dyads]
    return np.stack([rows[order], cols[order]], axis=1).astype(np.int64)


def coassignment_pairs(totals, n_items: int = N_PAIR_ITEMS) -> np.ndarray:
    """The object pairs ``(a, b)`` whose co-assignment probabilities are compared across methods.

    Every pair ``a < b`` (the upper triangle) when there are at most ``MAX_ALL_PAIRS`` (20) objects;
    otherwise all pairs among the ``n_items`` objects with the largest ``totals`` (ties broken by
    position). Applied to ``data.row_totals`` for pairs of rows and to ``data.col_totals`` for pairs
    of columns.

    Parameters
    ----------
    totals : array of shape (n,)
        Observations per object.
    n_items : int
        Objects used when there are more than 20.

    Returns
    -------
    numpy.ndarray of shape (n_pairs, 2), int64, with ``pairs[:, 0] < pairs[:, 1]``

    Examples
    --------
    >>> coassignment_pairs(np.array([5, 1, 3])).tolist()
    [[0, 1], [0, 2], [1, 2]]
    >>> coassignment_pairs(np.arange(30), n_items=3).tolist()
    [[27, 28], [27, 29], [28, 29]]
    """
    totals = np.asarray(totals)
    n = totals.shape[0]
    if n <= MAX_ALL_PAIRS:
        items = np.arange(n)
    else:
        order = np.lexsort((np.arange(n), -totals))
        items = np.sort(order[:n_items])
    first, second = np.triu_indices(len(items), k=1)
    return np.stack([items[first], items[second]], axis=1).astype(np.int64)
