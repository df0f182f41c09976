"""EM machinery that several families share: the tempered posterior of one row over mixture
components, and the fused E/M pass of a mixture of multinomials over the rows of a count matrix
with its k-means++ start; the pieces of the fused per-non-zero kernels of the aspect and
product-space models (their table dtypes, the log-space posterior of one non-zero's terms and the
batched ``n log s`` of the energy).

The asymmetric clustering model (:mod:`~latentzoo.inference.one_sided`) is such a mixture, with one
word distribution ``q_k`` per cluster; the hierarchical cluster-abstraction model
(:mod:`~latentzoo.inference.cluster_abstraction`) is one over the leaves of its tree, whose word
distributions are the mixtures along each leaf's path (Hofmann & Puzicha 1998, eq. (29)-(31) and
(55), tempered as in eq. (60)). Both run the pass of this module on ``log`` of those distributions,
and the HACM's object-specific form, whose mixtures depend on the row, reuses its row E-step
(:func:`row_e_step`).

The pass is one numba loop over the rows: for each row, ``s_k = sum_j n_ij log q_kj`` over its
non-zeros, the tempered softmax of :func:`tempered_row_posterior`, then ``n_ij <I_ik>`` added into
the ``M x K`` table over the same non-zeros (still in cache); no ``nnz x K`` array exists.
"""

from __future__ import annotations

import math

import numba as nb
import numpy as np

from latentzoo.data import CoOccurrence
from latentzoo.inference.annealing import balanced_row_chunks, numba_threads

__all__ = [
    "FASTMATH",
    "FINITE_FASTMATH",
    "accumulate_log",
    "kernel_dtype",
    "kernel_floor",
    "kl_kmeans_plus_plus",
    "log_posterior",
    "multinomial_mixture_pass",
    "row_e_step",
    "tempered_row_posterior",
]

FASTMATH = {"reassoc", "contract", "nsz", "arcp"}
"""The fastmath flags of the EM kernels. Reassociation lets the loops over components vectorise;
no-NaN/no-inf assumptions are left out because ``log q = -inf`` is legitimate under maximum
likelihood (``eta = 1``)."""


@nb.njit(cache=True, fastmath=FASTMATH, inline="always")
def tempered_row_posterior(s, log_rho, beta, a):
    """The posterior of one row over ``K`` components at inverse temperature ``beta``, in place.

    ``a[k] ∝ rho_k exp(beta s_k)`` with ``s_k`` the row's log-likelihood under component ``k``
    (eq. (60): only the likelihood is tempered). Returns ``(energy, loglik)``, the row's
    ``log sum_k rho_k exp(beta s_k)`` and untempered ``log sum_k rho_k exp(s_k)``. When no
    component can produce the row (possible only after an over-relaxed step) both are ``-inf``
    and ``a`` is uniform: the free energy is then ``+inf`` and the driver rejects the step.

    Examples
    --------
    >>> a = np.empty(2)
    >>> energy, loglik = tempered_row_posterior(np.log([0.2, 0.6]), np.log([0.5, 0.5]), 1.0, a)
    >>> a.round(3).tolist(), bool(np.isclose(energy, np.log(0.4))), energy == loglik
    ([0.25, 0.75], True, True)
    """
    n_components = s.shape[0]
    top = -np.inf
    for k in range(n_components):
        a[k] = log_rho[k] + beta * s[k]
        top = max(top, a[k])
    if top == -np.inf:
        for k in range(n_components):
            a[k] = 1.0 / n_components
        return -np.inf, -np.inf
    total = 0.0
    for k in range(n_components):
        a[k] = math.exp(a[k] - top)
        total += a[k]
    energy = top + math.log(total)
    if beta == 1.0:
        loglik = energy
    else:
        plain_top = -np.inf
        for k in range(n_components):
            plain_top = max(plain_top, log_rho[k] + s[k])
        plain = 0.0
        for k in range(n_components):
            plain += math.exp(log_rho[k] + s[k] - plain_top)
        loglik = plain_top + math.log(plain)
    inverse = 1.0 / total
    for k in range(n_components):
        a[k] *= inverse
    return energy, loglik


@nb.njit(cache=True, fastmath=FASTMATH, inline="always")
def row_e_step(s, log_rho, beta, resp_row, energy, loglik):
    """The E-step of one row in a row loop: its posterior written, its terms added to the totals.

    ``resp_row`` gets :func:`tempered_row_posterior` of the row's per-component log-likelihoods
    ``s``; the row's energy and log-likelihood are added to the running ``energy`` and ``loglik``.
    Returns ``(energy, loglik, possible)``: ``possible`` is False when no component can produce the
    row, whose expected counts the M-step half of the loop then skips.

    Examples
    --------
    >>> resp_row = np.empty(2)
    >>> energy, loglik, possible = row_e_step(np.log([0.2, 0.6]), np.log([0.5, 0.5]), 1.0,
    ...                                       resp_row, 0.0, 0.0)
    >>> resp_row.round(3).tolist(), bool(np.isclose(energy, np.log(0.4))), possible
    ([0.25, 0.75], True, True)
    """
    row_energy, row_loglik = tempered_row_posterior(s, log_rho, beta, resp_row)
    return energy + row_energy, loglik + row_loglik, row_energy != -np.inf


@nb.njit(cache=True, nogil=True, fastmath=FASTMATH)
def _mixture_rows(first, last, indptr, indices, counts, log_q_t, log_rho, beta, resp, acc):
    """Fused E/M over rows ``first:last``; returns (sum_i log sum_k rho L**beta, sum_i log P(S_i)).

    Writes the tempered posteriors into ``resp[first:last]`` and adds ``n_ij resp[i]`` into
    ``acc[j]`` (``M x K``).
    """
    n_components = log_q_t.shape[1]
    s = np.empty(n_components)
    energy = 0.0
    loglik = 0.0
    for i in range(first, last):
        for k in range(n_components):
            s[k] = 0.0
        for p in range(indptr[i], indptr[i + 1]):
            j = indices[p]
            n = counts[p]
            for k in range(n_components):
                s[k] += n * log_q_t[j, k]
        energy, loglik, possible = row_e_step(s, log_rho, beta, resp[i], energy, loglik)
        if not possible:
            continue
        for p in range(indptr[i], indptr[i + 1]):
            j = indices[p]
            n = counts[p]
            for k in range(n_components):
                acc[j, k] += n * resp[i, k]
    return energy, loglik


@nb.njit(cache=True, nogil=True, parallel=True)
def _mixture_parallel(bounds, indptr, indices, counts, log_q_t, log_rho, beta, resp, buffers):
    n_chunks = bounds.shape[0] - 1
    energies = np.zeros(n_chunks)
    logliks = np.zeros(n_chunks)
    for c in nb.prange(n_chunks):
        buffers[c, :, :] = 0.0
        e, ll = _mixture_rows(
            bounds[c], bounds[c + 1], indptr, indices, counts, log_q_t, log_rho, beta, resp,
            buffers[c],
        )  # fmt: skip
        energies[c] = e
        logliks[c] = ll
    return energies.sum(), logliks.sum()


def multinomial_mixture_pass(data: CoOccurrence, log_rho, log_q_t, beta=1.0, n_threads=1,
                             counts=None):  # fmt: skip
    """One fused E/M pass of a mixture of multinomials over the rows of ``data``.

    Parameters
    ----------
    data : CoOccurrence
    log_rho : (K,) array
        Log mixing weights.
    log_q_t : (M, K) array, C-contiguous
        Log word distributions of the components, one word per row (contiguous in the kernel).
    beta : float
        Inverse temperature of the E-step, eq. (60).
    n_threads : int
        1 runs the serial kernel; more splits the rows into that many chunks run with ``prange``.
    counts : float64 array, optional
        ``data.counts.data`` already converted to float (saves a copy per pass).

    Returns
    -------
    resp : (N, K) tempered posteriors ``<I_ik>``
    n_q : (K, M) expected counts ``sum_i <I_ik> n_ij``
    energy : float
        ``sum_i log sum_k rho_k L_ik**beta``.
    loglik : float
        ``sum_i log sum_k rho_k L_ik`` (the untempered log-likelihood).

    Examples
    --------
    >>> from latentzoo.data import load
    >>> data = load("toy")
    >>> log_q_t = np.log(np.random.default_rng(0).dirichlet(np.ones(8), 2)).T.copy()
    >>> resp, n_q, energy, ll = multinomial_mixture_pass(data, np.log([0.5, 0.5]), log_q_t)
    >>> bool(np.isclose(n_q.sum(), data.total)), bool(np.isclose(energy, ll))
    (True, True)
    """
    csr = data.counts
    if counts is None:
        counts = csr.data.astype(np.float64)
    n_rows, n_components = data.n_rows, log_q_t.shape[1]
    resp = np.empty((n_rows, n_components))
    beta = float(beta)
    if n_threads <= 1:
        acc = np.zeros_like(log_q_t)
        energy, loglik = _mixture_rows(
            0, n_rows, csr.indptr, csr.indices, counts, log_q_t, log_rho, beta, resp, acc
        )
    else:
        with numba_threads(n_threads):
            bounds = balanced_row_chunks(csr.indptr, n_threads)
            buffers = np.empty((len(bounds) - 1, *log_q_t.shape))
            energy, loglik = _mixture_parallel(
                bounds, csr.indptr, csr.indices, counts, log_q_t, log_rho, beta, resp, buffers
            )
        acc = buffers.sum(axis=0)
    return resp, acc.T.copy(), float(energy), float(loglik)


def kl_kmeans_plus_plus(data: CoOccurrence, n_components: int, rng: np.random.Generator) -> dict:
    """Seed a mixture of multinomials on ``K`` rows chosen by k-means++ in Kullback-Leibler
    divergence.

    The first seed row is uniform among the rows with observations; each next one is drawn with
    probability proportional to ``n_i D[n_{.|i} || q_nearest]``, the divergence (eq. (23)) of row
    ``i`` from its nearest seed so far (the analogue of k-means++'s squared distance for a Bregman
    divergence), so seeds tend to come from different clusters. Each seed's centroid is
    ``q_k ∝ n_{r_k .} + nbar * background``, with ``background`` the add-one column distribution and
    ``nbar`` the mean row length (no observed word starts at probability ~0); ``rho`` is uniform.

    Examples
    --------
    >>> from latentzoo.data import load
    >>> start = kl_kmeans_plus_plus(load("toy"), 2, np.random.default_rng(0))
    >>> start["q"].shape, bool(np.allclose(start["q"].sum(axis=1), 1.0)), start["rho"].tolist()
    ((2, 8), True, [0.5, 0.5])
    """
    totals = data.row_totals
    observed = totals > 0
    background = (data.col_totals + 1.0) / (data.total + data.n_cols)
    mean_length = data.total / max(int(observed.sum()), 1)
    counts = data.counts
    rows, _, cell_counts = data.cells()
    # sum_j n_ij log(n_ij / n_i): the entropy part of n_i D[n_{.|i} || q], constant in q.
    self_term = np.bincount(
        rows, weights=cell_counts * np.log(cell_counts / totals[rows]), minlength=data.n_rows
    )
    chosen = []
    cost = np.where(observed, 1.0, 0.0)
    q = np.empty((n_components, data.n_cols))
    for k in range(n_components):
        weights = cost.copy()
        weights[chosen] = 0.0
        if weights.sum() <= 0:
            weights = np.ones(data.n_rows)
            weights[chosen] = 0.0
        seed = int(rng.choice(data.n_rows, p=weights / weights.sum()))
        chosen.append(seed)
        centroid = counts[seed].toarray()[0] + mean_length * background
        q[k] = centroid / centroid.sum()
        divergence = np.maximum(self_term - counts @ np.log(q[k]), 0.0)
        cost = divergence if k == 0 else np.minimum(cost, divergence)
    return {"rho": np.full(n_components, 1.0 / n_components), "q": q}


# --------------------------------------------------------------- per-non-zero kernels' pieces
#: fastmath without ``nnan``/``ninf`` for the kernels that must see the inf and 0 that their
#: powers reach far from ``beta = 1`` (and the -inf of a log of 0) to route them to log space.
FINITE_FASTMATH = {"nsz", "arcp", "contract", "afn", "reassoc"}


@nb.njit(cache=True, inline="always")
def accumulate_log(energy, product, n, s):
    """Add ``n log s`` to ``energy``; unit counts are batched into the float64 ``product``.

    The logarithm is taken once per run of ``s`` values multiplied into ``product``, which is
    flushed before it can underflow or overflow: it stays within [1e-200, 1e200] before each
    multiplication by ``1e-100 < s < 1e100``, so within [1e-300, 1e300] after. (``s`` exceeds 1
    at ``beta < 1``, e.g. ``K (theta phi)**beta``; flushing only on underflow let the product
    overflow to inf there.) The aspect model's own kernels queue their logarithms instead.

    Examples
    --------
    >>> energy, product = accumulate_log(0.0, 1.0, 1, 0.5)
    >>> energy, product = accumulate_log(energy, product, 3, 0.25)
    >>> bool(np.isclose(energy + np.log(product), np.log(0.5) + 3 * np.log(0.25)))
    True
    """
    if n == 1 and 1e-100 < s < 1e100:
        product *= s
        if product < 1e-200 or product > 1e200:
            energy += np.log(product)
            product = 1.0
    else:
        energy += n * np.log(np.float64(s))
    return energy, product


@nb.njit(cache=True, nogil=True, fastmath=FINITE_FASTMATH, error_model="numpy")
def log_posterior(weights, out):
    """Normalise the log weights ``weights`` (K) into ``out`` (max-shifted); returns the log of
    their sum, -inf (and ``out`` all 0) when every weight is -inf.

    Examples
    --------
    >>> out = np.empty(2)
    >>> bool(np.isclose(log_posterior(np.log([1.0, 3.0]), out), np.log(4.0))), out.tolist()
    (True, [0.25, 0.75])
    """
    top = -np.inf
    for k in range(weights.shape[0]):
        top = max(top, weights[k])
    if top == -np.inf:
        out[:] = 0.0
        return -np.inf
    total = 0.0
    for k in range(weights.shape[0]):
        out[k] = np.exp(weights[k] - top)
        total += out[k]
    for k in range(weights.shape[0]):
        out[k] /= total
    return top + np.log(total)


def kernel_dtype(dtype):
    """The numpy scalar type of the EM kernels' tables: float32 or float64, else ValueError.

    Examples
    --------
    >>> kernel_dtype("float32").__name__
    'float32'
    """
    dtype = np.dtype(dtype).type
    if dtype not in (np.float32, np.float64):
        raise ValueError(f"dtype must be float32 or float64, got {dtype.__name__}")
    return dtype


def kernel_floor(dtype):
    """The smallest normaliser ``s`` the EM kernels use, in the tables' ``dtype``.

    float32 keeps ``s`` above the smallest normal number (subnormals are slow and lose precision);
    float64 needs no floor.

    Examples
    --------
    >>> kernel_floor(np.float32).dtype.name, float(kernel_floor(np.float64))
    ('float32', 0.0)
    """
    return dtype(1e-30) if dtype is np.float32 else dtype(0.0)
