"""Fast inference for the aspect model: fused annealed EM and collapsed Gibbs sampling.

The fused annealed EM of the product-space mixture model is in
:mod:`latentzoo.inference.product_space`.

EM (Hofmann & Puzicha 1998, eq. (6)-(9) in the asymmetric parameterisation of eq. (11), tempered as in
eq. (60)/(65)): the posterior of the aspect of observation ``(i, j)`` at inverse temperature ``beta`` is

    P(k | i, j) = (theta[i,k] phi[k,j])**beta / s_ij,      s_ij = sum_k (theta[i,k] phi[k,j])**beta,

and the M-step sums ``n_ij P(k|i,j)`` over columns (for ``theta``) and rows (for ``phi``). Writing
``t = theta**beta`` and ``f = phi**beta`` both sums factor through ``r_ij = n_ij / s_ij``:

    N_theta[i,k] = t[i,k] * sum_j r_ij f[j,k],        N_phi[j,k] = f[j,k] * sum_i r_ij t[i,k],

so one pass over the non-zeros does three fused multiply-adds per (non-zero, aspect) and no
``nnz x K`` array ever exists. ``phi`` is held as ``M x K`` inside the kernels so each row is contiguous;
the power ``beta`` is applied once per iteration to the ``N x K`` and ``M x K`` tables, never per
(non-zero, aspect).

Gibbs: the collapsed sampler of the Bayesian aspect model (symmetric Dirichlet priors, i.e. LDA), with
``theta`` and ``phi`` drawn from their exact conditional Dirichlet posteriors at each kept draw so that
the posterior group holds the same variables as the PyMC declaration.
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass
from typing import NamedTuple

import numba as nb
import numpy as np
import scipy.sparse as sp
from scipy.special import gammaln

from latentzoo.data import CoOccurrence
from latentzoo.data.checks import check_memory
from latentzoo.inference._log_space_fallback import redo_pairs_in_log_space
from latentzoo.inference.ad_lda import AD_LDA_OPTIONS, ad_lda_entry
from latentzoo.inference.annealing import (
    EMStats,
    balanced_row_chunks,
    check_map_priors,
    em_entry,
    normalise_rows,
    numba_threads,
)
from latentzoo.inference.collapsed_gibbs import CollapsedGibbs
from latentzoo.inference.em import (
    FINITE_FASTMATH,
    kernel_dtype,
    kernel_floor,
    log_posterior,
)
from latentzoo.inference.family import (
    DTYPE,
    GIBBS_METHOD_OPTIONS,
    SCHEDULE_OPTIONS,
    THREADS,
    Family,
    Method,
    choice,
    flag,
    with_defaults,
)
from latentzoo.inference.mcmc import (
    GibbsSetup,
    LabelAxis,
    gibbs_data,
    gibbs_entry,
    keep_params_auto,
    next_uniform,
    uniform_labels,
)
from latentzoo.models._kernels import add_log_term
from latentzoo.models.aspect import AspectModel
from latentzoo.models.invariants import default_dyads

__all__ = [
    "AspectEM", "AspectGibbs", "ad_lda", "em_bytes", "em_pass", "gibbs_bytes", "gibbs_sweep",
]  # fmt: skip

#: Below this normaliser ``s`` the float64 kernel hands a non-zero to the log-space fallback:
#: ``n / s`` stays far from overflow, and ``s = 0`` (powers underflowed at high ``beta``) is exact.
_F64_TINY = 1e-250
_LOG2 = math.log(2.0)


# ---------------------------------------------------------------------------- EM kernels
@nb.njit(cache=True, inline="always")
def _log_factor(product, n, s):
    """Account for ``n log s`` without a logarithm: returns ``(product, value, weight)``, the
    caller queueing ``weight log value`` when ``weight`` is not 0.

    Counts 1 to 4 with ``1e-25 < s < 1e25`` multiply ``s**n`` into the float64 ``product``;
    when the product leaves [1e-200, 1e200] it is returned as the value to queue (weight 1) and
    restarted, so it stays within [1e-300, 1e300]. Anything else is returned as
    ``(s, n)``. The caller adds ``sum weights log values`` (:func:`_drain_logs`) outside its
    loop over the non-zeros.

    Why: a logarithm is a call into libm, and a call anywhere in the loop (NRT reference counts
    of arrays passed to a helper too) made LLVM keep the running product on the stack and spill
    the loop's vector registers; a branch on the count (1 for 79% of Reuters' non-zeros, 2 to 4
    for 19%) was mispredicted often enough to cost more than taking every logarithm. So the
    factor is chosen by selects and the loop holds no call. Each multiplication adds at most one
    rounding (~1e-16 relative) to the sum.
    """
    if (1e-25 < s) & (s < 1e25) & (n >= 1.0) & (n <= 4.0) & (n == np.floor(n)):
        square = s * s
        low = s if n == 1.0 else square
        high = square * s if n == 3.0 else square * square
        product *= low if n <= 2.0 else high
        if (product < 1e-200) | (product > 1e200):
            return 1.0, product, 1.0
        return product, 1.0, 0.0
    return product, np.float64(s), np.float64(n)


@nb.njit(cache=True, inline="always")
def _drain_logs(total, m, values, weights):
    """``total + sum_q weights[q] log values[q]`` over the ``m`` entries queued by
    :func:`_log_factor`."""
    for q in range(m):
        total += weights[q] * np.log(values[q])
    return total


@nb.njit(cache=True, nogil=True)
def _longest_row(indptr, first, last):
    """The most non-zeros of a row in ``first:last`` (the capacity of the logarithm queues)."""
    longest = 0
    for i in range(first, last):
        longest = max(longest, indptr[i + 1] - indptr[i])
    return longest


@nb.njit(cache=True, inline="always")
def _log_queues(indptr, first, last, track):
    """The logarithm queues of an EM kernel over rows ``first:last``: ``(values, weights)`` of
    the energy and of the untempered log-likelihood (empty unless ``track``), each as long as the
    longest row, as :func:`_queue_log_factor` fills them within a row."""
    longest = _longest_row(indptr, first, last)
    plain_length = longest if track else 0
    return (
        np.empty(longest), np.empty(longest), np.empty(plain_length), np.empty(plain_length),
    )  # fmt: skip


@nb.njit(cache=True, inline="always")
def _queue_log_factor(product, n, s, values, weights, queued):
    """:func:`_log_factor` of ``n log s``, its logarithm (if any) queued at ``queued`` in
    ``values``/``weights``; returns ``(product, queued)``. Inlined, so the kernel's loop still
    holds no call (see :func:`_log_factor`)."""
    product, value, weight = _log_factor(product, n, s)
    values[queued] = value
    weights[queued] = weight
    return product, queued + (weight != 0.0)


@nb.njit(cache=True, inline="always")
def _queue_plain_log(i, j, n, theta, phi_t, product, values, weights, queued):
    """The untempered ``n log sum_k theta[i, k] phi_t[j, k]`` of the tracked log-likelihood,
    by :func:`_queue_log_factor`; returns ``(product, queued)``."""
    plain = 0.0
    for k in range(theta.shape[1]):
        plain += theta[i, k] * phi_t[j, k]
    return _queue_log_factor(product, n, plain, values, weights, queued)


@nb.njit(cache=True, nogil=True, fastmath=True, error_model="numpy")
def _em_rows(
    first, last, indptr, indices, counts, t_theta, t_phi, theta, phi_t, n_theta, acc_phi, floor,
    fallback,
):  # fmt: skip
    """Fused E/M over rows ``first:last``; returns (sum n log s_beta, sum n log p).

    Non-zeros with ``s < _F64_TINY`` (far from ``beta = 1`` the powers underflow, and ``n / s``
    would divide by zero) are flagged in ``fallback`` and left out of the energy and the M-step
    sums, for :func:`_redo_in_log_space`; their ``log p`` is still tracked.

    :func:`em_pass` runs it on float64 tables; float32 tables go through :func:`_em_rows32`,
    which keeps float64 accuracy (the generic dtype and ``floor`` remain for direct callers). The
    energy (and the log-likelihood) is accumulated in float64 without a logarithm in the loop
    over the non-zeros (:func:`_log_factor`); the logarithms queued there are taken at the end
    of each row.
    """
    n_topics = t_theta.shape[1]
    acc = np.empty(n_topics, dtype=t_theta.dtype)
    zero = floor - floor
    energy = 0.0
    product = 1.0
    loglik = 0.0
    plain_product = 1.0
    track = theta.shape[0] > 0
    values, weights, plain_values, plain_weights = _log_queues(indptr, first, last, track)
    for i in range(first, last):
        for k in range(n_topics):
            acc[k] = zero
        queued = 0
        plain_queued = 0
        for p in range(indptr[i], indptr[i + 1]):
            j = indices[p]
            s = zero
            for k in range(n_topics):
                s += t_theta[i, k] * t_phi[j, k]
            s = max(s, floor)
            n = counts[p]
            if track:
                plain_product, plain_queued = _queue_plain_log(
                    i, j, n, theta, phi_t, plain_product, plain_values, plain_weights,
                    plain_queued,
                )  # fmt: skip
            if s < _F64_TINY:
                fallback[p] = True
                continue
            fallback[p] = False
            product, queued = _queue_log_factor(product, n, s, values, weights, queued)
            r = n / s
            # Two loops, not one: each has one store stream, so LLVM vectorises it with one
            # runtime alias check (the fused loop cost 18% more at K = 20; same sums, same order).
            for k in range(n_topics):
                acc[k] += r * t_phi[j, k]
            for k in range(n_topics):
                acc_phi[j, k] += r * t_theta[i, k]
        for k in range(n_topics):
            n_theta[i, k] = t_theta[i, k] * acc[k]
        energy = _drain_logs(energy, queued, values, weights)
        loglik = _drain_logs(loglik, plain_queued, plain_values, plain_weights)
    return energy + np.log(product), loglik + np.log(plain_product)


@nb.njit(cache=True, nogil=True, parallel=True)
def _em_parallel(
    bounds, indptr, indices, counts, t_theta, t_phi, theta, phi_t, n_theta, buffers, fallback,
    floor, rounding,
):  # fmt: skip
    """The EM row kernel over the row chunks ``bounds`` with ``prange``, chunk ``c`` summing its
    ``acc_phi`` into ``buffers[c]``; returns the chunks' summed ``(energy, loglik)``.

    ``rounding`` picks the kernel, a branch numba prunes when it compiles: None for
    :func:`_em_rows` (``floor`` of the tables' dtype), ``(exact_theta, shift_theta)`` for
    :func:`_em_rows32` on float32 tables (``floor`` unused).
    """
    n_chunks = bounds.shape[0] - 1
    energies = np.zeros(n_chunks)
    logliks = np.zeros(n_chunks)
    for c in nb.prange(n_chunks):
        buffers[c, :, :] = 0
        if rounding is None:
            e, ll = _em_rows(
                bounds[c], bounds[c + 1], indptr, indices, counts, t_theta, t_phi, theta, phi_t,
                n_theta, buffers[c], floor, fallback,
            )  # fmt: skip
        else:
            e, ll = _em_rows32(
                bounds[c], bounds[c + 1], indptr, indices, counts, t_theta, t_phi, rounding[0],
                rounding[1], theta, phi_t, n_theta, buffers[c], fallback,
            )  # fmt: skip
        energies[c] = e
        logliks[c] = ll
    return energies.sum(), logliks.sum()


@nb.njit(cache=True, nogil=True, fastmath=FINITE_FASTMATH, error_model="numpy")
def _table_terms(i, j, t_theta, t_phi, theta, phi_t, beta, weights, out):
    """The terms ``out[k] = t_theta[i, k] t_phi[j, k]`` of the tempered tables of ``theta`` and
    ``phi_t`` and their sum, ``P(k | i, j) = out[k] / sum``; returns ``(sum, log sum)``.

    Below _F64_TINY (far from ``beta = 1`` the powers underflow) the pair is redone in log space
    from the plain tables: ``out`` is then the normalised posterior and the sum returned is 1
    (``log sum`` still the true one), and for a pair of probability 0, ``out`` is all 0 and
    ``log sum`` is -inf.
    """
    total = 0.0
    for k in range(out.shape[0]):
        out[k] = t_theta[i, k] * t_phi[j, k]
        total += out[k]
    if total >= _F64_TINY:
        return total, np.log(total)
    for k in range(out.shape[0]):
        weights[k] = beta * (np.log(theta[i, k]) + np.log(phi_t[j, k]))
    return 1.0, log_posterior(weights, out)


@nb.njit(cache=True, nogil=True, fastmath=FINITE_FASTMATH, error_model="numpy")
def _predictive_fallback(
    i, j, n, old, total_old, c_theta, c_phi, c_topic, a1, e1, m_e1, beta, t_theta, t_phi, theta,
    phi_t, weights, new, n_theta, acc_phi,
):  # fmt: skip
    """One observation of :func:`_predictive_rows` whose predictive normaliser left
    [_F64_TINY, 1e300]: redone in log space, else (no predictive evidence at all) with the plain
    posterior of the current tables. Adds the expected counts; returns ``n log`` normaliser."""
    for k in range(old.shape[0]):
        own = old[k] / total_old
        num = max(c_theta[i, k] - own, 0.0) + a1
        num *= max(c_phi[j, k] - own, 0.0) + e1
        den = max(c_topic[k] - own, 0.0) + m_e1
        weights[k] = beta * np.log(num / den) if den > 0 and num > 0 else -np.inf
    log_s = log_posterior(weights, new)
    r = n
    if log_s == -np.inf:
        total, log_s = _table_terms(i, j, t_theta, t_phi, theta, phi_t, beta, weights, new)
        r = n / total
    for k in range(old.shape[0]):
        w = r * new[k]
        n_theta[i, k] += w
        acc_phi[j, k] += w
    return n * log_s


@nb.njit(cache=True, nogil=True, fastmath=FINITE_FASTMATH, error_model="numpy")
def _predictive_rows(
    indptr, indices, counts, old_t_theta, old_t_phi, old_theta, old_phi_t, t_theta, t_phi,
    theta, phi_t, c_theta, c_phi, c_topic, a1, e1, m_e1, beta, n_theta, acc_phi,
):  # fmt: skip
    """Predictive E-step (seed section 5.2, eq. (61) without the diagonal term, appendix B).

    For observation ``(i, j)`` the expected counts of the previous pass are reduced by that
    observation's own previous posterior (from the previous iterate's tempered tables
    ``old_t_theta``, ``old_t_phi``) before predicting its aspect; the indirect effects are
    ignored, as in the seed's experiments. Returns ``sum n log`` of the predictive normaliser.

    Far from ``beta = 1`` the powers underflow or overflow: a previous posterior whose normaliser
    is below _F64_TINY is redone in log space from the plain ``old_theta``, ``old_phi_t``, and a
    predictive normaliser outside [_F64_TINY, 1e300] in log space too. An observation that the
    others cannot predict at all (every predictive term 0, e.g. the only token of a word without
    a prior, ``eta = 1``) keeps the plain E-step posterior of the current tables ``t_theta``,
    ``t_phi`` and adds ``n log sum_k t_theta t_phi`` (dropping it, as before, gave its word
    probability 0 and the fit a log-likelihood of -inf). A pair of probability 0 under the
    current tables adds -inf (the driver then refuses the step) and no expected counts.
    """
    n_rows = indptr.shape[0] - 1
    n_topics = c_theta.shape[1]
    old = np.empty(n_topics)
    new = np.empty(n_topics)
    weights = np.empty(n_topics)
    energy = 0.0
    for i in range(n_rows):
        for p in range(indptr[i], indptr[i + 1]):
            j = indices[p]
            total_old = 0.0
            for k in range(n_topics):
                old[k] = old_t_theta[i, k] * old_t_phi[j, k]
                total_old += old[k]
            if total_old < _F64_TINY:
                total_old, _ = _table_terms(
                    i, j, old_t_theta, old_t_phi, old_theta, old_phi_t, beta, weights, old
                )
            s = 0.0
            for k in range(n_topics):
                own = old[k] / total_old
                num = max(c_theta[i, k] - own, 0.0) + a1
                num *= max(c_phi[j, k] - own, 0.0) + e1
                den = max(c_topic[k] - own, 0.0) + m_e1
                value = (num / den) ** beta if den > 0 else 0.0
                new[k] = value
                s += value
            n = counts[p]
            if not _F64_TINY <= s <= 1e300:
                energy += _predictive_fallback(
                    i, j, n, old, total_old, c_theta, c_phi, c_topic, a1, e1, m_e1, beta,
                    t_theta, t_phi, theta, phi_t, weights, new, n_theta, acc_phi,
                )  # fmt: skip
                continue
            energy += n * np.log(s)
            r = n / s
            for k in range(n_topics):
                w = r * new[k]
                n_theta[i, k] += w
                acc_phi[j, k] += w
    return energy


# ----------------------------------------------------------------------- float32 EM kernels
# float32 tables fail in two ways that float64 hides: ``(theta phi)**beta`` underflows (at
# beta = 50 a probability of 0.125 is 7e-46, below float32's range), and ``n log s`` of a large
# count inherits the tables' rounding (1e7 * 6e-8 = 0.6 nats). So the float32 kernel
# - sums ``s`` in float64 (the product of two float32 numbers is exact there);
# - corrects the energy to first order for the rounding of the tables: the derivative of
#   ``sum n log s`` by ``t_theta[i, k]`` is ``acc[i, k] = sum_j n_ij t_phi[j, k] / s_ij``, the
#   M-step accumulator itself, so the correction is ``sum acc * (exact - stored)`` over both
#   tables, computed at the end of each row and in _finish_phi32 (the second-order error is
#   ~n * 1e-15);
# - above beta = 1, divides each row of both tables by its largest entry before the power
#   (``P(k | i, j)`` is unchanged; ``log s`` shifts by per-row and per-column constants, added
#   back), so the best terms stay near 1;
# - hands a non-zero whose ``s`` is below _F32_TINY (its terms may have underflowed) to
#   _redo_in_log_space, which redoes it in float64 log space.
_F32_MIN = float(np.finfo(np.float32).tiny)
_F32_TINY = 2.0**-40
_NO_SHIFT = np.zeros(0)


@nb.njit(cache=True, nogil=True, fastmath=True)
def _to_float32(exact, out):
    """``out = float32(exact)``, with 0 for the values below float32's smallest normal number
    (subnormal operands are slow, and the correction of the energy covers them to first order)."""
    for r in range(exact.shape[0]):
        for k in range(exact.shape[1]):
            value = exact[r, k]
            out[r, k] = np.float32(value) if value >= _F32_MIN else np.float32(0.0)


def _tempered_log_table(x, beta, scale):
    """``beta * log x`` (float64), each row shifted by its maximum when ``scale``; returns the
    table and the shifts ``beta * log max x[r]`` (0 for an all-zero row; ``None`` unscaled)."""
    with np.errstate(divide="ignore"):
        out = np.log(x)
    shift = None
    if scale:
        top = out.max(axis=1)
        top = np.where(np.isfinite(top), top, 0.0)
        out -= top[:, None]
        shift = beta * top
    out *= beta
    return out, shift


def _f32_table(x, beta):
    """The float32 table of ``x**beta`` (R x K) for :func:`_em_rows32`.

    Returns ``(table, exact, shift)``: ``exact`` the float64 values that ``table`` rounds and
    ``shift`` (above ``beta = 1`` only, else ``None``) the per-row ``beta * log max x[r]`` taken
    out of them, so that ``log x[r, k]**beta = log exact[r, k] + shift[r]``.
    """
    if beta == 1.0:
        exact, shift = x, None
    else:
        # numpy's vectorised log and exp: the power is the costliest part of the table.
        exact, shift = _tempered_log_table(x, beta, scale=beta > 1.0)
        np.exp(exact, out=exact)
    table = np.empty(x.shape, dtype=np.float32)
    _to_float32(exact, table)
    return table, exact, shift


@nb.njit(cache=True, nogil=True, fastmath=True, error_model="numpy")
def _em_rows32(
    first, last, indptr, indices, counts, t_theta, t_phi, exact_theta, shift_theta, theta,
    phi_t, n_theta, acc_phi, fallback,
):  # fmt: skip
    """Fused E/M over rows ``first:last`` on float32 tables (see the note above).

    Returns ``(sum n log s, sum n log p)`` over the non-zeros it handles, corrected for the
    rounding of the ``theta`` table (the ``phi`` side is added by :func:`_finish_phi32`) and, if
    ``shift_theta`` is not empty, with the row shifts added back (the column shifts are added by
    the caller from the column totals, sparing a random read per non-zero). ``s`` and the energy
    are float64; the M-step sums are float32, whose rounding moves the parameters by ~1e-7
    relative and the free energy only to second order. Non-zeros with ``s < _F32_TINY`` are
    flagged in ``fallback`` and left out.
    """
    n_topics = t_theta.shape[1]
    acc = np.empty(n_topics, dtype=np.float32)
    energy = 0.0
    product = 1.0
    correction = 0.0
    loglik = 0.0
    plain_product = 1.0
    track = theta.shape[0] > 0
    shifted = shift_theta.shape[0] > 0
    values, weights, plain_values, plain_weights = _log_queues(indptr, first, last, track)
    for i in range(first, last):
        for k in range(n_topics):
            acc[k] = 0.0
        row_count = 0.0
        queued = 0
        plain_queued = 0
        for p in range(indptr[i], indptr[i + 1]):
            j = indices[p]
            n = np.float64(counts[p])
            if track:
                plain_product, plain_queued = _queue_plain_log(
                    i, j, n, theta, phi_t, plain_product, plain_values, plain_weights,
                    plain_queued,
                )  # fmt: skip
            s = 0.0
            for k in range(n_topics):
                s += np.float64(t_theta[i, k]) * np.float64(t_phi[j, k])
            if s < _F32_TINY:
                fallback[p] = True
                continue
            fallback[p] = False
            product, queued = _queue_log_factor(product, n, s, values, weights, queued)
            row_count += n
            r = np.float32(n / s)
            # One loop here: with float32 tables two loops (as in _em_rows) cost 18% at K = 20.
            for k in range(n_topics):
                acc[k] += r * t_phi[j, k]
                acc_phi[j, k] += r * t_theta[i, k]
        if shifted:
            correction += row_count * shift_theta[i]
        for k in range(n_topics):
            stored = np.float64(t_theta[i, k])
            a = np.float64(acc[k])
            n_theta[i, k] = stored * a
            correction += (exact_theta[i, k] - stored) * a
        energy = _drain_logs(energy, queued, values, weights)
        loglik = _drain_logs(loglik, plain_queued, plain_values, plain_weights)
    return energy + np.log(product) + correction, loglik + np.log(plain_product)


@nb.njit(cache=True, nogil=True)
def _finish_phi32(t_phi, acc_phi, exact_phi):
    """``n_phi = t_phi * acc_phi`` in float64 and the first-order energy correction for the
    rounding of ``t_phi``, ``sum acc_phi * (exact_phi - t_phi)``."""
    n_phi = np.empty(t_phi.shape)
    correction = 0.0
    for j in range(t_phi.shape[0]):
        for k in range(t_phi.shape[1]):
            stored = np.float64(t_phi[j, k])
            a = np.float64(acc_phi[j, k])
            n_phi[j, k] = stored * a
            correction += (exact_phi[j, k] - stored) * a
    return n_phi, correction


def _redo_in_log_space(csr, fallback, theta, phi_t, beta, n_theta, n_phi):
    """Energy of the non-zeros flagged in ``fallback``, their expected counts added to
    ``n_theta`` and ``n_phi``; 0 when none is flagged.

    The aspect model is the pair family in which aspect ``k`` pairs with itself, so the redo is
    :func:`~latentzoo.inference._log_space_fallback.redo_pairs_in_log_space` on the diagonal
    pairs with no pair weight of their own.
    """
    positions = np.flatnonzero(fallback)
    if not positions.size:
        return 0.0
    rows = np.searchsorted(csr.indptr, positions, side="right") - 1
    aspects = np.arange(theta.shape[1])
    return redo_pairs_in_log_space(
        positions, rows, csr.indices, csr.data, aspects, aspects, np.zeros(aspects.size),
        _tempered_log_table(theta, beta, False)[0], _tempered_log_table(phi_t, beta, False)[0],
        np.empty(aspects.size), n_theta, n_phi,
    )  # fmt: skip


def _em_pass_float32(data, theta, phi_t, beta, track_loglik, n_threads):
    """:func:`em_pass` with float32 tables (see the note above); float64 results."""
    csr = data.counts
    beta = float(beta)
    theta = np.ascontiguousarray(theta, dtype=np.float64)
    phi_t = np.ascontiguousarray(phi_t, dtype=np.float64)
    t_theta, exact_theta, shift_theta = _f32_table(theta, beta)
    t_phi, exact_phi, shift_phi = _f32_table(phi_t, beta)
    track_loglik = track_loglik and beta != 1.0
    dummy = np.empty((0, theta.shape[1]))
    plain_theta, plain_phi = (theta, phi_t) if track_loglik else (dummy, dummy)
    row_shift = _NO_SHIFT if shift_theta is None else shift_theta
    n_theta = np.empty(theta.shape)
    fallback = np.empty(csr.nnz, dtype=np.bool_)
    if n_threads <= 1:
        acc_phi = np.zeros(phi_t.shape, dtype=np.float32)
        energy, loglik = _em_rows32(
            0, data.n_rows, csr.indptr, csr.indices, csr.data, t_theta, t_phi, exact_theta,
            row_shift, plain_theta, plain_phi, n_theta, acc_phi, fallback,
        )  # fmt: skip
    else:
        with numba_threads(n_threads):
            bounds = balanced_row_chunks(csr.indptr, n_threads)
            buffers = np.empty((len(bounds) - 1, *phi_t.shape), dtype=np.float32)
            energy, loglik = _em_parallel(
                bounds, csr.indptr, csr.indices, csr.data, t_theta, t_phi, plain_theta,
                plain_phi, n_theta, buffers, fallback, 0.0, (exact_theta, row_shift),
            )  # fmt: skip
        acc_phi = buffers.sum(axis=0)
    n_phi, correction = _finish_phi32(t_phi, acc_phi, exact_phi)
    energy += correction
    if shift_phi is not None:
        # The column shifts of every non-zero the kernel handled (the fallback's are unscaled).
        col_totals = np.asarray(csr.sum(axis=0, dtype=np.float64)).ravel()
        energy += col_totals @ shift_phi
        flagged = np.flatnonzero(fallback)
        energy -= csr.data[flagged] @ shift_phi[csr.indices[flagged]]
    energy += _redo_in_log_space(csr, fallback, theta, phi_t, beta, n_theta, n_phi)
    if not track_loglik:
        loglik = energy if beta == 1.0 else np.nan
    return n_theta, n_phi, float(energy), float(loglik)


def em_pass(
    data: CoOccurrence,
    theta,
    phi_t,
    beta=1.0,
    track_loglik=True,
    n_threads=1,
    dtype=np.float64,
    counts=None,
):
    """One fused E/M pass of the aspect model; the computational core, exposed for benchmarks.

    Parameters
    ----------
    data : CoOccurrence
    theta : (N, K) array
    phi_t : (M, K) array, ``phi`` transposed
    beta : float
        Inverse temperature.
    track_loglik : bool
        Also accumulate the untempered log-likelihood (free when ``beta == 1``).
    n_threads : int
        1 runs the serial kernel; more splits the rows into that many chunks run with ``prange``.
    dtype : numpy float type
        ``float64`` (default, exact monotonicity) or ``float32`` (about 1.5 times the throughput:
        half the bytes per ``phi`` row and twice the SIMD lanes). float32 keeps the results of
        float64 to about 1e-7 relative at any ``beta`` and any count: each row of both tables is
        scaled to a maximum of 1 before tempering, so ``(theta phi)**beta`` does not underflow
        (non-zeros whose scaled normaliser is below 2**-40 are redone in float64 log space);
        the normaliser ``s`` and the energy are summed in float64 and the energy is corrected to
        first order for the tables' float32 rounding (without it a count of 1e7 was off by 0.6
        nats). Only the M-step sums are float32: they move the parameters by ~1e-7 relative,
        which changes the free energy only to second order, so near convergence it can still
        rise by that much.
    counts : array, optional
        ``data.counts.data`` already converted to ``dtype`` (saves a copy per pass); float64
        kernel only (the float32 kernel reads the int64 counts, which float32 would round above
        2**24).

    Returns
    -------
    n_theta : (N, K) expected counts, n_phi : (M, K) expected counts, energy, loglik
        ``energy = sum_ij n_ij log sum_k (theta phi)**beta`` and ``loglik = sum_ij n_ij log P``.

    Examples
    --------
    >>> from latentzoo.data import load
    >>> data = load("toy")
    >>> rng = np.random.default_rng(0)
    >>> theta = rng.dirichlet(np.ones(2), 6); phi_t = rng.dirichlet(np.ones(8), 2).T.copy()
    >>> n_theta, n_phi, energy, ll = em_pass(data, theta, phi_t)
    >>> bool(np.isclose(n_theta.sum(), data.total))
    True
    """
    dtype = kernel_dtype(dtype)
    if dtype is np.float32:
        return _em_pass_float32(data, theta, phi_t, beta, track_loglik, n_threads)
    csr = data.counts
    if counts is None:
        counts = csr.data.astype(dtype)
    if beta == 1.0:
        t_theta, t_phi = theta.astype(dtype, copy=False), phi_t.astype(dtype, copy=False)
        track_loglik = False
    else:
        t_theta = theta.astype(dtype) ** dtype(beta)
        t_phi = phi_t.astype(dtype) ** dtype(beta)
    floor = kernel_floor(dtype)
    dummy = np.empty((0, theta.shape[1]))
    plain_theta = np.ascontiguousarray(theta, dtype=np.float64) if track_loglik else dummy
    plain_phi = np.ascontiguousarray(phi_t, dtype=np.float64) if track_loglik else dummy
    n_theta = np.empty_like(t_theta)
    fallback = np.empty(csr.nnz, dtype=np.bool_)
    if n_threads <= 1:
        acc_phi = np.zeros_like(t_phi)
        energy, loglik = _em_rows(
            0, data.n_rows, csr.indptr, csr.indices, counts, t_theta, t_phi,
            plain_theta, plain_phi, n_theta, acc_phi, floor, fallback,
        )  # fmt: skip
    else:
        with numba_threads(n_threads):
            bounds = balanced_row_chunks(csr.indptr, n_threads)
            buffers = np.empty((len(bounds) - 1, *t_phi.shape), dtype=dtype)
            energy, loglik = _em_parallel(
                bounds, csr.indptr, csr.indices, counts, t_theta, t_phi,
                plain_theta, plain_phi, n_theta, buffers, fallback, floor, None,
            )  # fmt: skip
        acc_phi = buffers.sum(axis=0)
    n_phi = np.multiply(acc_phi, t_phi, out=acc_phi)
    energy += _redo_in_log_space(
        csr, fallback, np.asarray(theta, dtype=np.float64), np.asarray(phi_t, dtype=np.float64),
        beta, n_theta, n_phi,
    )  # fmt: skip
    if not track_loglik:
        loglik = energy if beta == 1.0 else np.nan
    return (
        n_theta.astype(np.float64, copy=False), n_phi.astype(np.float64, copy=False),
        float(energy), float(loglik),
    )  # fmt: skip


class AspectEM:
    """The aspect model's :class:`~latentzoo.inference.annealing.EMProblem` on one data set.

    MAP estimation under the model's Dirichlet priors (``alpha``, ``eta`` >= 1 act as pseudo-counts
    ``alpha - 1``, ``eta - 1``; 1 gives maximum likelihood, eq. (7)-(9)). ``free_energy`` is
    ``-(1/beta) sum n log sum_k (theta phi)**beta - log prior``: the minimum over the E-step
    distribution of the free energy (64), which EM cannot increase at fixed ``beta``.

    Parameters
    ----------
    model : AspectModel
    data : CoOccurrence
    predictive : bool
        Use the predictive E-step of section 5.2 (not guaranteed monotone).
    n_threads : int
    dtype : numpy float type
        Precision of the kernel's tables (see :func:`em_pass`).
    """

    def __init__(
        self, model: AspectModel, data: CoOccurrence, predictive=False, n_threads=1,
        dtype=np.float64,
    ):  # fmt: skip
        check_map_priors(model)
        check_memory(
            em_bytes(data, model.n_components, n_threads, predictive),
            "annealed EM for the aspect model",
            detail=f"for {model.n_components} aspects x ({data.n_rows:,} rows + "
            f"{data.n_cols:,} columns)",
            hint="use fewer aspects (n_components) or threads (n_threads)",
        )
        self.model = model
        self.data = data
        self.predictive = predictive
        self.monotone = not predictive
        self.n_threads = n_threads
        self.dtype = kernel_dtype(dtype)
        # The float32 kernel reads the int64 counts (exact beyond 2**24) and needs no copy.
        self.counts = data.counts.data.astype(np.float64) if self.dtype is np.float64 else None
        self._previous = None

    def init(self, rng):
        k = self.model.n_components
        theta = rng.dirichlet(np.ones(k), size=self.data.n_rows)
        # Start phi near the empirical column distribution so that no observed word starts at ~0.
        background = (self.data.col_totals + 1.0) / (self.data.total + self.data.n_cols)
        phi = background[None, :] * rng.uniform(0.5, 1.5, size=(k, self.data.n_cols))
        phi /= phi.sum(axis=1, keepdims=True)
        return {"theta": theta, "phi": phi}

    def _log_prior_terms(self, theta, phi):
        total = 0.0
        with np.errstate(divide="ignore"):
            if self.model.alpha != 1.0:
                total += (self.model.alpha - 1.0) * np.log(theta).sum()
            if self.model.eta != 1.0:
                total += (self.model.eta - 1.0) * np.log(phi).sum()
        return total

    def step(self, params, beta):
        theta = np.ascontiguousarray(params["theta"])
        phi_t = np.ascontiguousarray(params["phi"].T)
        if self.predictive:
            tables = (theta**beta, phi_t**beta, theta, phi_t)
        if self.predictive and self._previous is not None:
            n_theta, n_phi, energy = self._predictive_pass(tables, beta)
            loglik = float(self.model.log_likelihood(params, self.data).sum())
        else:
            n_theta, n_phi, energy, loglik = em_pass(
                self.data, theta, phi_t, beta, n_threads=self.n_threads, dtype=self.dtype,
                counts=self.counts,
            )  # fmt: skip
        free = -energy / beta - self._log_prior_terms(theta, params["phi"])
        if self.predictive and np.isfinite(free):
            # A step with a non-finite free energy is dropped by the driver (which retries the
            # plain M-step from the same previous pass) or ends the fit: it must not become the
            # previous pass.
            self._previous = (*tables, n_theta, n_phi)
        new_theta = normalise_rows(n_theta, self.model.alpha - 1.0, theta.shape[1])
        new_phi = normalise_rows(n_phi.T, self.model.eta - 1.0, phi_t.shape[0])
        return {"theta": new_theta, "phi": new_phi}, EMStats(float(free), float(loglik))

    def _predictive_pass(self, tables, beta):
        """The predictive E-step (:func:`_predictive_rows`) from the previous pass's tables and
        expected counts; ``tables`` are the current ``(theta**beta, phi_t**beta, theta, phi_t)``."""
        old_t_theta, old_t_phi, old_theta, old_phi_t, c_theta, c_phi = self._previous
        csr = self.data.counts
        n_theta = np.zeros_like(c_theta)
        acc_phi = np.zeros_like(c_phi)
        a1, e1 = self.model.alpha - 1.0, self.model.eta - 1.0
        energy = _predictive_rows(
            csr.indptr, csr.indices, csr.data.astype(np.float64), old_t_theta, old_t_phi,
            old_theta, old_phi_t, *tables, c_theta, c_phi, c_phi.sum(axis=0), a1, e1,
            e1 * c_phi.shape[0], float(beta), n_theta, acc_phi,
        )  # fmt: skip
        return n_theta, acc_phi, energy


# --------------------------------------------------------------------------- Gibbs kernels
@nb.njit(cache=True, fastmath=True)
def gibbs_sweep(doc_ptr, words, z, n_doc_topic, n_word_topic, n_topic, alpha, eta, state):
    """One collapsed Gibbs sweep over all tokens (LDA with symmetric priors).

    ``P(z_t = k | rest) ∝ (n_dk + alpha) (n_wk + eta) / (n_k + M eta)`` with token ``t`` removed.
    Counts are float arrays holding integers so the inner loop needs no conversions; the reciprocal
    of the topic totals is kept up to date instead of dividing per (token, topic).

    The token is not taken out of the tables before its weights are computed: only its current
    topic's weight changes (to the counts minus one), and that weight is corrected after one
    vectorised pass over the topics. The uniform is tested against the current topic's interval
    first (the categorical's intervals in the order current topic, then the others), so a token
    that keeps its topic -- most tokens once the chain has mixed in -- needs neither a cumulative
    sum nor a table update; only a move pays for the scan and the two updates. One uniform per
    token, and the draw is exact (up to the rounding of the weights).

    Examples
    --------
    >>> from latentzoo.data import load
    >>> sampler = AspectGibbs(AspectModel(2), load("toy"))
    >>> s = sampler.init(np.random.default_rng(0))
    >>> gibbs_sweep(sampler.doc_ptr, sampler.words, s.z, s.n_doc_topic, s.n_word_topic,
    ...             s.n_topic, 1.1, 1.01, s.rng_state)
    >>> bool(np.array_equal(s.n_topic, np.bincount(s.z, minlength=2)))
    True
    """
    n_topics = n_topic.shape[0]
    m_eta = eta * n_word_topic.shape[0]
    inv_total = np.empty(n_topics)
    for k in range(n_topics):
        inv_total[k] = 1.0 / (n_topic[k] + m_eta)
    weights = np.empty(n_topics)
    for d in range(doc_ptr.shape[0] - 1):
        for t in range(doc_ptr[d], doc_ptr[d + 1]):
            w = words[t]
            old = z[t]
            total = 0.0
            for k in range(n_topics):
                p = (n_doc_topic[d, k] + alpha) * (n_word_topic[w, k] + eta) * inv_total[k]
                weights[k] = p
                total += p
            # The token counts 1 in each table; fastmath may evaluate ``n - 1 + c`` as
            # ``(n + c) - 1``, which is 0 for n = 1 and a tiny ``c``: the max restores ``c``.
            p_old = max(n_doc_topic[d, old] - 1.0 + alpha, alpha)
            p_old *= max(n_word_topic[w, old] - 1.0 + eta, eta)
            p_old /= max(n_topic[old] - 1.0 + m_eta, m_eta)
            total += p_old - weights[old]
            weights[old] = p_old
            u = next_uniform(state) * total - p_old
            if u < 0.0:
                continue
            new = old
            for k in range(n_topics):
                if k != old:
                    new = k
                    u -= weights[k]
                    if u < 0.0:
                        break
            # (Running off the end by rounding leaves ``new`` at the last topic other than ``old``.)
            z[t] = new
            n_doc_topic[d, old] -= 1.0
            n_word_topic[w, old] -= 1.0
            n_topic[old] -= 1.0
            inv_total[old] = 1.0 / max(n_topic[old] + m_eta, m_eta)
            n_doc_topic[d, new] += 1.0
            n_word_topic[w, new] += 1.0
            n_topic[new] += 1.0
            inv_total[new] = 1.0 / max(n_topic[new] + m_eta, m_eta)


@nb.njit(cache=True)
def _count_tables(docs, words, z, n_docs, n_words, n_topics):
    n_doc_topic = np.zeros((n_docs, n_topics))
    n_word_topic = np.zeros((n_words, n_topics))
    n_topic = np.zeros(n_topics)
    for t in range(z.shape[0]):
        n_doc_topic[docs[t], z[t]] += 1.0
        n_word_topic[words[t], z[t]] += 1.0
        n_topic[z[t]] += 1.0
    return n_doc_topic, n_word_topic, n_topic


@nb.njit(cache=True)
def _many_chains_last_state(
    doc_ptr, docs, words, n_docs, n_words, n_topics, alpha, eta, seeds, sweeps
):
    """Run one independent chain per seed for ``sweeps`` sweeps; return the final assignments."""
    n_tokens = words.shape[0]
    out = np.empty((seeds.shape[0], n_tokens), dtype=np.int64)
    state = np.empty(1, dtype=np.uint64)
    for c in range(seeds.shape[0]):
        state[0] = seeds[c]
        z = uniform_labels(state, n_tokens, n_topics)
        ndk, nwk, nk = _count_tables(docs, words, z, n_docs, n_words, n_topics)
        for _ in range(sweeps):
            gibbs_sweep(doc_ptr, words, z, ndk, nwk, nk, alpha, eta, state)
        out[c] = z
    return out


@nb.njit(cache=True)
def _dirichlet_concentrations(n_doc_topic, n_word_topic, alpha, eta):
    """``n_doc_topic + alpha`` then ``n_word_topic.T + eta``, flattened in C order: the shapes of
    the Gamma variates of one kept draw, in the order :func:`dirichlet_rows` on each table would
    draw them."""
    n_docs, n_topics = n_doc_topic.shape
    n_words = n_word_topic.shape[0]
    out = np.empty(n_docs * n_topics + n_topics * n_words)
    for i in range(n_docs):
        for k in range(n_topics):
            out[i * n_topics + k] = n_doc_topic[i, k] + alpha
    base = n_docs * n_topics
    for k in range(n_topics):
        for j in range(n_words):
            out[base + k * n_words + j] = n_word_topic[j, k] + eta
    return out


@nb.njit(cache=True)
def _standard_gammas(shapes, state):
    """One standard Gamma variate per entry of ``shapes``, from the chain's generator ``state``.

    Marsaglia & Tsang (2000) for shapes of at least 1 (the squeeze accepts most proposals without
    a logarithm), with normals from the polar method (both of each pair used); a shape ``a < 1``
    is boosted, ``Gamma(a) = Gamma(a + 1) U**(1/a)``. Exact, and reproducible from ``state``
    (the one-element ``uint64`` array of :func:`~latentzoo.inference.mcmc.next_uniform`,
    advanced in place). A boosted variate of a tiny shape can underflow to 0, as numpy's does.

    Examples
    --------
    >>> state = np.array([1], dtype=np.uint64)
    >>> draws = _standard_gammas(np.full(20000, 2.5), state)
    >>> bool(abs(draws.mean() - 2.5) < 0.1 and abs(draws.var() - 2.5) < 0.3)
    True
    """
    out = np.empty(shapes.shape[0])
    spare = 0.0
    has_spare = False
    for i in range(shapes.shape[0]):
        a = shapes[i]
        boost = 1.0
        if a < 1.0:
            boost = math.exp(math.log(next_uniform(state)) / a)
            a += 1.0
        d = a - 1.0 / 3.0
        c = 1.0 / math.sqrt(9.0 * d)
        while True:
            if has_spare:
                x = spare
                has_spare = False
            else:
                while True:
                    u1 = 2.0 * next_uniform(state) - 1.0
                    u2 = 2.0 * next_uniform(state) - 1.0
                    r = u1 * u1 + u2 * u2
                    if 0.0 < r < 1.0:
                        break
                f = math.sqrt(-2.0 * math.log(r) / r)
                x = u1 * f
                spare = u2 * f
                has_spare = True
            v = 1.0 + c * x
            if v <= 0.0:
                continue
            v = v * v * v
            u = next_uniform(state)
            x2 = x * x
            if u < 1.0 - 0.0331 * x2 * x2:
                break
            if math.log(u) < 0.5 * x2 + d * (1.0 - v + math.log(v)):
                break
        out[i] = d * v * boost
    return out


@nb.njit(cache=True)
def _normalised_gammas(gammas, base, concentrations, out, transpose):
    """Rows of Gamma variates divided by their sums: one Dirichlet draw per row of ``out``.

    Row ``r`` (``out.shape[1]`` variates from ``gammas[base:]``, row after row) goes to ``out[r]``,
    or to ``out[:, r]`` when ``transpose``. A row whose variates all underflowed (tiny
    concentrations) falls back to its mean, as :func:`dirichlet_rows` does.
    """
    n_rows, width = (out.shape[1], out.shape[0]) if transpose else out.shape
    for r in range(n_rows):
        start = base + r * width
        total = 0.0
        for c in range(width):
            total += gammas[start + c]
        values = gammas
        if not total > 0.0:
            values = concentrations
            for c in range(width):
                total += concentrations[start + c]
        for c in range(width):
            if transpose:
                out[c, r] = values[start + c] / total
            else:
                out[r, c] = values[start + c] / total


@nb.njit(cache=True)
def _row_log_likelihoods(indptr, indices, counts, theta, phi_t):
    """:func:`~latentzoo.models._kernels.row_log_likelihoods` (no row norm) bit for bit (tested),
    about 1.5 times faster.

    Each probability is still summed over ``k = 0..K-1`` in order without ``fastmath``, but eight
    non-zeros of a row are summed side by side: their eight sums are independent, so the CPU
    overlaps them instead of waiting on one chain of ``K`` additions at a time.
    """
    n_rows = indptr.shape[0] - 1
    n_topics = theta.shape[1]
    out = np.zeros(n_rows)
    for i in range(n_rows):
        direct = 0.0
        mantissa = 1.0
        exponent = 0
        p = indptr[i]
        end = indptr[i + 1]
        while p + 8 <= end:
            j0, j1, j2, j3 = indices[p], indices[p + 1], indices[p + 2], indices[p + 3]
            j4, j5, j6, j7 = indices[p + 4], indices[p + 5], indices[p + 6], indices[p + 7]
            s0 = s1 = s2 = s3 = s4 = s5 = s6 = s7 = 0.0
            for k in range(n_topics):
                t = theta[i, k]
                s0 += t * phi_t[j0, k]
                s1 += t * phi_t[j1, k]
                s2 += t * phi_t[j2, k]
                s3 += t * phi_t[j3, k]
                s4 += t * phi_t[j4, k]
                s5 += t * phi_t[j5, k]
                s6 += t * phi_t[j6, k]
                s7 += t * phi_t[j7, k]
            for q, s in enumerate((s0, s1, s2, s3, s4, s5, s6, s7)):
                direct, mantissa, exponent = add_log_term(
                    s, counts[p + q], direct, mantissa, exponent
                )
            p += 8
        while p < end:
            j = indices[p]
            s = 0.0
            for k in range(n_topics):
                s += theta[i, k] * phi_t[j, k]
            direct, mantissa, exponent = add_log_term(s, counts[p], direct, mantissa, exponent)
            p += 1
        out[i] = direct + (np.log(mantissa) + exponent * _LOG2)
    return out


@nb.njit(cache=True)
def _score(theta, phi_t, indptr, indices, counts, dyads):
    """The per-row log-likelihood of the CSR counts (:func:`_row_log_likelihoods`) and
    ``P(y_j | x_i)`` on the dyads."""
    per_row = _row_log_likelihoods(indptr, indices, counts, theta, phi_t)
    p_dyad = np.empty(dyads.shape[0])
    for q in range(dyads.shape[0]):
        s = 0.0
        for k in range(theta.shape[1]):
            s += theta[dyads[q, 0], k] * phi_t[dyads[q, 1], k]
        p_dyad[q] = s
    return per_row, p_dyad


@nb.njit(cache=True)
def _draw_and_score(gammas, concentrations, n_docs, n_words, n_topics, indptr, indices, counts,
                    dyads):  # fmt: skip
    """``theta``, ``phi`` (held as ``M x K``) from the Gamma variates of
    :func:`_dirichlet_concentrations`, then :func:`_score`, in one call."""
    theta = np.empty((n_docs, n_topics))
    phi_t = np.empty((n_words, n_topics))
    _normalised_gammas(gammas, 0, concentrations, theta, False)
    _normalised_gammas(gammas, n_docs * n_topics, concentrations, phi_t, True)
    per_row, p_dyad = _score(theta, phi_t, indptr, indices, counts, dyads)
    return theta, phi_t, per_row, p_dyad


@nb.njit(cache=True)
def _scored_draw(n_doc_topic, n_word_topic, alpha, eta, state, indptr, indices, counts, dyads):
    """The whole per-draw work of :func:`gibbs` in one call: Gamma variates of the posterior
    Dirichlets from the chain's generator, then :func:`_draw_and_score`."""
    concentrations = _dirichlet_concentrations(n_doc_topic, n_word_topic, alpha, eta)
    gammas = _standard_gammas(concentrations, state)
    n_docs, n_topics = n_doc_topic.shape
    return _draw_and_score(gammas, concentrations, n_docs, n_word_topic.shape[0], n_topics,
                           indptr, indices, counts, dyads)  # fmt: skip


@nb.njit(cache=True)
def _conditional_means(n_doc_topic, n_word_topic, n_topic, alpha, eta, theta, phi_t):
    """``E[theta | z] = (n_dk + alpha) / (n_d + K alpha)`` into ``theta`` and
    ``E[phi | z] = (n_wk + eta) / (n_k + M eta)`` into ``phi_t`` (``M x K``): the means of the
    Dirichlet posteriors that :func:`_scored_draw` draws from; no random numbers."""
    n_docs, n_topics = n_doc_topic.shape
    n_words = n_word_topic.shape[0]
    for i in range(n_docs):
        length = 0.0
        for k in range(n_topics):
            length += n_doc_topic[i, k]
        scale = 1.0 / (length + n_topics * alpha)
        for k in range(n_topics):
            theta[i, k] = (n_doc_topic[i, k] + alpha) * scale
    scales = np.empty(n_topics)
    for k in range(n_topics):
        scales[k] = 1.0 / (n_topic[k] + n_words * eta)
    for j in range(n_words):
        for k in range(n_topics):
            phi_t[j, k] = (n_word_topic[j, k] + eta) * scales[k]


@nb.njit(cache=True)
def _scored_conditional_means(n_doc_topic, n_word_topic, n_topic, alpha, eta, indptr, indices,
                              counts, dyads):  # fmt: skip
    """:func:`_scored_draw` with the conditional means (:func:`_conditional_means`) in place of
    the Dirichlet draws, scored by :func:`_score`."""
    theta = np.empty(n_doc_topic.shape)
    phi_t = np.empty(n_word_topic.shape)
    _conditional_means(n_doc_topic, n_word_topic, n_topic, alpha, eta, theta, phi_t)
    per_row, p_dyad = _score(theta, phi_t, indptr, indices, counts, dyads)
    return theta, phi_t, per_row, p_dyad


@nb.njit(cache=True)
def _table_lgamma(table, n, concentration, offset):
    """``lgamma(n + concentration) - offset`` from ``table`` for small counts, else computed."""
    if n < table.shape[0]:
        return table[int(n)]
    return math.lgamma(n + concentration) - offset


@nb.njit(cache=True)
def _collapsed_log_joint(n_doc_topic, n_word_topic, n_topic, lg_alpha, lg_eta, alpha, eta, m_eta,
                         constant):  # fmt: skip
    """``log p(z, w)`` from the count tables: ``lg_alpha[n] = lgamma(n + alpha) - lgamma(alpha)``
    and ``lg_eta[n]`` likewise are tabulated once per sampler for the counts below their length;
    ``constant`` holds the terms of the document totals, which the sampler never changes."""
    out = constant
    offset = math.lgamma(alpha)
    for i in range(n_doc_topic.shape[0]):
        for k in range(n_doc_topic.shape[1]):
            out += _table_lgamma(lg_alpha, n_doc_topic[i, k], alpha, offset)
    offset = math.lgamma(eta)
    for j in range(n_word_topic.shape[0]):
        for k in range(n_word_topic.shape[1]):
            out += _table_lgamma(lg_eta, n_word_topic[j, k], eta, offset)
    for k in range(n_topic.shape[0]):
        out -= math.lgamma(n_topic[k] + m_eta)
    return out


#: Counts up to this get their log-Gamma from a table in :meth:`AspectGibbs.log_joint`.
_LGAMMA_TABLE = 4096


def gibbs_bytes(data: CoOccurrence, n_topics: int) -> int:
    """Peak bytes of collapsed Gibbs on ``data`` (:class:`AspectGibbs` through :func:`gibbs`).

    Per token: the int64 row and column of every token and the assignments ``z`` of two chains
    (the next chain starts while the last one's state is alive), 32 bytes. Per (row or column,
    topic): the count tables of those two chains and a kept draw's Dirichlet concentrations,
    Gamma variates, ``theta`` and ``phi``, six float64 tables. Per non-zero: the scored cells,
    32 bytes.

    Examples
    --------
    >>> from latentzoo.data import load
    >>> gibbs_bytes(load("toy"), 2) > 32 * load("toy").total
    True
    """
    tables = (data.n_rows + data.n_cols + 1) * int(n_topics)
    return 32 * int(data.total) + 6 * 8 * tables + 32 * data.nnz


def em_bytes(data: CoOccurrence, n_topics: int, n_threads: int = 1, predictive=False) -> int:
    """Peak bytes of annealed EM of the aspect model on ``data`` (:class:`AspectEM`).

    Measured with ``tracemalloc`` on 20 Newsgroups (K = 50): 6 (serial) to 10 (two threads,
    over-relaxation) float64 tables of ``(N + M) x K`` (the parameters, their copies across
    over-relaxation and early stopping, the tempered tables and the expected counts), plus one
    ``M x K`` buffer per thread, plus 16 bytes per non-zero (counts and flags). Counted as
    8 tables, the buffers and the non-zeros; the predictive E-step keeps 6 more tables (the
    previous pass's parameters, plain and tempered, and expected counts).

    Examples
    --------
    >>> from latentzoo.data import load
    >>> em_bytes(load("toy"), 2) >= 8 * 8 * (6 + 8) * 2
    True
    """
    tables = (data.n_rows + data.n_cols) * int(n_topics)
    buffers = int(n_threads) * data.n_cols * int(n_topics) if n_threads > 1 else 0
    return 8 * ((14 if predictive else 8) * tables + buffers) + 16 * data.nnz


#: What :meth:`AspectGibbs.draw` scores: no dyads and no rows.
_NO_DYADS = np.empty((0, 2), dtype=np.int64)
_NO_CSR = sp.csr_matrix((0, 0))


class GibbsState(NamedTuple):
    """State of one collapsed Gibbs chain: assignments, count tables, generator state.
    (a NamedTuple of arrays updated in place, see :mod:`latentzoo.inference.mcmc`)."""

    z: np.ndarray
    n_doc_topic: np.ndarray
    n_word_topic: np.ndarray
    n_topic: np.ndarray
    rng_state: np.ndarray


class AspectGibbs(CollapsedGibbs):
    """Collapsed Gibbs sampler of the Bayesian aspect model, as ``init``/``step``/``draw``.

    A :class:`~latentzoo.inference.collapsed_gibbs.CollapsedGibbs` whose sweep visits every token.

    Parameters
    ----------
    model : AspectModel
    data : CoOccurrence
        Training counts; expanded once into token arrays sorted by row.

    Examples
    --------
    >>> from latentzoo.data import load
    >>> sampler = AspectGibbs(AspectModel(2), load("toy"))
    >>> state = sampler.init(np.random.default_rng(0))
    >>> state, info = sampler.step(state, np.random.default_rng(1))
    >>> int(state.n_topic.sum()) == load("toy").total, info.lp < 0
    (True, True)
    """

    state_type = GibbsState

    def __init__(self, model: AspectModel, data: CoOccurrence):
        check_memory(
            gibbs_bytes(data, model.n_components),
            "collapsed Gibbs for the aspect model",
            detail=f"for {data.total:,} tokens",
            hint="it stores every token; annealed EM (method='annealed_em') needs memory "
            "for the non-zeros only",
        )
        self.model = model
        self.data = data
        self.docs, self.words = data.to_tokens()
        self.doc_ptr = np.concatenate([[0], np.cumsum(data.row_totals)]).astype(np.int64)
        self._log_joint_tables = None

    def init(self, rng: np.random.Generator, z=None) -> GibbsState:
        k = self.model.n_components
        if z is None:
            z = rng.integers(0, k, size=self.words.shape[0])
        else:
            z = np.asarray(z, dtype=np.int64).copy()
        return self._start(rng, z)

    def _tables_of(self, z):
        data = self.data
        return _count_tables(
            self.docs, self.words, z, data.n_rows, data.n_cols, self.model.n_components
        )

    def _sweep(self, state: GibbsState) -> tuple:
        """One sweep over every token (:func:`gibbs_sweep`); reports the log joint only."""
        gibbs_sweep(
            self.doc_ptr, self.words, state.z, state.n_doc_topic, state.n_word_topic,
            state.n_topic, float(self.model.alpha), float(self.model.eta), state.rng_state,
        )  # fmt: skip
        return ()

    def draw(self, state: GibbsState, rng: np.random.Generator) -> dict:
        """``theta | z ~ Dir(n_d + alpha)`` and ``phi | z ~ Dir(n_k + eta)``: exact joint draws.

        Normalised Gamma variates (:func:`_standard_gammas`) drawn in a numba kernel from the
        chain's own generator ``state.rng_state``, which the sweeps also use and which was seeded
        from the chain's ``rng`` (so one seed gives one result); ``rng`` itself is not used. With
        the same variates the result is that of :func:`~latentzoo.inference.mcmc.dirichlet_rows`
        on each table (tested). ``phi`` is returned as a transposed view.

        Examples
        --------
        >>> from latentzoo.data import load
        >>> sampler = AspectGibbs(AspectModel(2), load("toy"))
        >>> state = sampler.step(sampler.init(rng := np.random.default_rng(0)), rng)[0]
        >>> params = sampler.draw(state, np.random.default_rng(1))
        >>> params["theta"].shape, params["phi"].shape, bool(np.allclose(params["phi"].sum(1), 1))
        ((6, 2), (2, 8), True)
        """
        theta, phi_t, _, _ = self.scored_draw(state, rng, _NO_DYADS, _NO_CSR)
        return {"theta": theta, "phi": phi_t.T}

    def scored_draw(self, state: GibbsState, rng: np.random.Generator, dyads, csr=None):
        """:meth:`draw` with what the kept draws of :func:`gibbs` need, computed in the same call.

        Returns ``theta`` (N x K), ``phi`` transposed (M x K), the per-row log-likelihood of
        ``csr`` (default: the training counts; the multinomial coefficient left out, as in
        :meth:`AspectModel.log_likelihood`) and ``P(y_j | x_i)`` on ``dyads``: the per-draw work
        of :func:`gibbs`, in one numba call (randomness as in :meth:`draw`).

        Examples
        --------
        >>> from latentzoo.data import load
        >>> data = load("toy")
        >>> sampler = AspectGibbs(AspectModel(2), data)
        >>> state = sampler.step(sampler.init(rng := np.random.default_rng(0)), rng)[0]
        >>> theta, phi_t, per_row, p_dyad = sampler.scored_draw(
        ...     state, np.random.default_rng(1), np.array([[0, 0], [1, 2]]))
        >>> ll = AspectModel(2).log_likelihood({"theta": theta, "phi": phi_t.T}, data)
        >>> bool(np.allclose(per_row, ll)), p_dyad.shape
        (True, (2,))
        """
        csr = self.data.counts if csr is None else csr
        model = self.model
        return _scored_draw(
            state.n_doc_topic, state.n_word_topic, float(model.alpha), float(model.eta),
            state.rng_state, csr.indptr, csr.indices, csr.data, dyads,
        )  # fmt: skip

    def scored_conditional_means(self, state: GibbsState, dyads, csr=None):
        """:meth:`scored_draw` at ``E[theta | z]`` and ``E[phi | z]`` instead of Dirichlet draws.

        ``theta[d, k] = (n_dk + alpha) / (n_d + K alpha)`` and ``phi[k, w] = (n_wk + eta) /
        (n_k + M eta)``, scored as :meth:`scored_draw` scores its draws; no random numbers are
        drawn (``param_draws="conditional_mean"`` of :func:`gibbs`).

        Examples
        --------
        >>> from latentzoo.data import load
        >>> sampler = AspectGibbs(AspectModel(2, alpha=0.5, eta=0.1), load("toy"))
        >>> state = sampler.step(sampler.init(rng := np.random.default_rng(0)), rng)[0]
        >>> theta, phi_t, per_row, p_dyad = sampler.scored_conditional_means(state, _NO_DYADS)
        >>> want = (state.n_doc_topic + 0.5) / (state.n_doc_topic.sum(1, keepdims=True) + 1.0)
        >>> bool(np.allclose(theta, want, rtol=1e-14)), bool(np.allclose(phi_t.sum(0), 1.0))
        (True, True)
        """
        csr = self.data.counts if csr is None else csr
        model = self.model
        return _scored_conditional_means(
            state.n_doc_topic, state.n_word_topic, state.n_topic, float(model.alpha),
            float(model.eta), csr.indptr, csr.indices, csr.data, dyads,
        )  # fmt: skip

    def log_joint(self, state: GibbsState) -> float:
        """Collapsed ``log p(z, w)`` (the sampler's target up to a constant), for sample_stats.

        Equal to ``dirichlet_multinomial_log`` of both count tables; the log-Gamma of the counts
        up to 4096 is tabulated on the first call, so a draw costs table look-ups (larger counts
        call ``lgamma``).

        Examples
        --------
        >>> from latentzoo.data import load
        >>> from latentzoo.models.conjugate import dirichlet_multinomial_log
        >>> sampler = AspectGibbs(AspectModel(2), load("toy"))
        >>> s = sampler.step(sampler.init(rng := np.random.default_rng(0)), rng)[0]
        >>> want = dirichlet_multinomial_log(s.n_doc_topic, 1.1) + dirichlet_multinomial_log(
        ...     s.n_word_topic.T, 1.01)
        >>> bool(np.isclose(sampler.log_joint(s), want))
        True
        """
        if self._log_joint_tables is None:
            self._log_joint_tables = self._tabulate_log_joint()
        return float(
            _collapsed_log_joint(
                state.n_doc_topic, state.n_word_topic, state.n_topic, *self._log_joint_tables
            )
        )

    def _tabulate_log_joint(self):
        alpha, eta = float(self.model.alpha), float(self.model.eta)
        k, m = self.model.n_components, self.data.n_cols
        rows, cols = self.data.row_totals, self.data.col_totals
        # Bounded tables (most counts are small); larger counts call lgamma.
        counts = np.arange(
            min(int(max(rows.max(initial=0), cols.max(initial=0))), _LGAMMA_TABLE) + 1
        )
        lg_alpha = gammaln(counts + alpha) - gammaln(alpha)
        lg_eta = gammaln(counts + eta) - gammaln(eta)
        constant = float(
            np.sum(gammaln(k * alpha) - gammaln(rows + k * alpha)) + k * gammaln(m * eta)
        )
        return lg_alpha, lg_eta, alpha, eta, m * eta, constant

    def _last_states(self, seeds, sweeps) -> np.ndarray:
        """The final assignments ``(n_chains, T)`` of the tokens."""
        n_chains, n_tokens = seeds.shape[0], self.words.shape[0]
        check_memory(
            8 * n_tokens * (n_chains + 1),
            "exact_draws of the aspect model's collapsed Gibbs sampler",
            detail=f"for {n_chains} chains x {n_tokens:,} tokens",
        )
        return _many_chains_last_state(
            self.doc_ptr, self.docs, self.words, self.data.n_rows, self.data.n_cols,
            self.model.n_components, float(self.model.alpha), float(self.model.eta), seeds, sweeps,
        )  # fmt: skip


def default_threads() -> int:
    """Threads for the parallel EM kernel: all cores numba sees, unless LATENTZOO_THREADS says."""
    return int(os.environ.get("LATENTZOO_THREADS", nb.config.NUMBA_NUM_THREADS))


# ------------------------------------------------------------------------------ entry points
@dataclass(frozen=True)
class AspectBlocks:
    """The aspect model's :class:`~latentzoo.inference.dask_backend.BlockEM`: ``theta`` per block, ``phi`` shared.

    The block pass is :func:`em_pass` on the block; the free energy
    and M-step are those of :class:`AspectEM`.
    """

    model: object
    n_threads: int = 1
    dtype: str = "float64"
    row_names: tuple[str, ...] = ("theta",)

    def start(self, data, rng):
        return AspectEM(self.model, data).init(rng)

    def start_block(self, n_rows: int, state: dict) -> dict:
        """``theta`` of a block from the generator state at its first row: the rows that
        :meth:`AspectEM.init` draws there, as one call over all rows would."""
        rng = np.random.Generator(np.random.PCG64())
        rng.bit_generator.state = state
        return {"theta": rng.dirichlet(np.ones(self.model.n_components), size=n_rows)}

    def advance(self, n_rows: int, state: dict) -> dict:
        """The generator state after :meth:`start_block`'s draws for ``n_rows`` rows (replayed
        on the client and dropped: the client only advances the generator)."""
        rng = np.random.Generator(np.random.PCG64())
        rng.bit_generator.state = state
        rng.dirichlet(np.ones(self.model.n_components), size=n_rows)
        return rng.bit_generator.state

    def start_globals(self, rng, col_totals) -> dict:
        """``phi`` as :meth:`AspectEM.init` draws it after ``theta``, from the column totals."""
        k, n_cols = self.model.n_components, col_totals.shape[0]
        background = (col_totals + 1.0) / (col_totals.sum() + n_cols)
        phi = background[None, :] * rng.uniform(0.5, 1.5, size=(k, n_cols))
        return {"phi": phi / phi.sum(axis=1, keepdims=True)}

    def globals_of(self, params):
        return {"phi_t": np.ascontiguousarray(params["phi"].T)}

    def prepare(self, block):
        """The block and its counts in float64, converted once (as :class:`AspectEM` keeps
        them), not at every pass; the float32 kernel reads the integer counts."""
        float64 = kernel_dtype(self.dtype) is np.float64
        return block, (block.counts.data.astype(np.float64) if float64 else None)

    def block_pass(self, prepared, rows, shared, beta):
        block, counts = prepared
        theta = np.ascontiguousarray(rows["theta"])
        n_theta, n_phi, energy, loglik = em_pass(
            block, theta, shared["phi_t"], beta, n_threads=self.n_threads, dtype=self.dtype,
            counts=counts,
        )  # fmt: skip
        prior = 0.0
        if self.model.alpha != 1.0:
            with np.errstate(divide="ignore"):
                prior = (self.model.alpha - 1.0) * float(np.log(theta).sum())
        new_theta = normalise_rows(n_theta, self.model.alpha - 1.0, theta.shape[1])
        stats = {"n_phi": n_phi, "energy": energy, "loglik": loglik, "prior": prior}
        return {"theta": new_theta}, stats

    def m_step(self, params, stats, beta):
        phi = params["phi"]
        prior = stats["prior"]
        if self.model.eta != 1.0:
            with np.errstate(divide="ignore"):
                prior += (self.model.eta - 1.0) * np.log(phi).sum()
        free = -stats["energy"] / beta - prior
        new_phi = normalise_rows(stats["n_phi"].T, self.model.eta - 1.0, phi.shape[1])
        return {"phi": new_phi}, EMStats(float(free), float(stats["loglik"]))


annealed_em = em_entry(
    AspectEM,
    """Fit the aspect model by annealed (tempered) EM (Hofmann & Puzicha 1998, section 5).

    Parameters
    ----------
    model : AspectModel
    data : CoOccurrence
    predictive : bool
        Predictive E-step of section 5.2 / appendix B.
    n_threads : int
        Threads of the fused kernel (1: serial kernel).
    dtype : numpy float type
        ``float32`` speeds the kernel up about 1.5 times; results and free energies agree with
        ``float64`` to about 1e-7 relative, at any temperature (see :func:`em_pass`).
    **schedule
        ``betas`` (default ``"auto"``), ``max_iter``, ``tol``, ``overrelax``, ``random_state``,
        ``validation_fraction``, ``beta_decay``, ``min_beta``, ``min_iter``, ``patience``,
        ``score_tol``, ``beta_patience``, ``progressbar``: the annealing schedule, documented once in
        :func:`~latentzoo.inference.annealing.annealed_fit`.

    Returns
    -------
    EMResult
        ``params`` holds ``theta`` (N x K) and ``phi`` (K x M).

    Examples
    --------
    >>> from latentzoo.data import load
    >>> result = annealed_em(AspectModel(2), load("toy"), betas=[0.8, 1.0], random_state=0)
    >>> result.params["theta"].shape
    (6, 2)
    """,
)


PARAM_DRAWS = choice(
    "param_draws",
    "sample",
    "what each kept draw records of theta and phi: 'sample' (exact Dirichlet draws given z) or "
    "'conditional_mean' (E[theta | z], E[phi | z]: lower variance, no sd of their own, faster)",
    ("sample", "conditional_mean"),
)
"""``param_draws`` of the aspect model's :func:`gibbs` (documented there)."""


def _prepare_gibbs(
    model, data, *, chains, draws, test=None, keep_params="auto", param_draws="sample"
):
    """The family side of :func:`gibbs`: checks, sampler, draw, coordinates."""
    PARAM_DRAWS.validate(param_draws)
    data, test = gibbs_data(model, data, test)
    sampler = AspectGibbs(model, data)
    dyads = default_dyads(data)
    k = model.n_components
    keep_params = keep_params_auto(keep_params, chains, draws, k * (data.n_rows + data.n_cols))
    scored = test if test is not None else data
    coefficient = model.log_multinomial_coefficient(scored)

    def draw(state, rng):
        # One numba call: theta and phi, the per-row log-likelihood and the invariants of
        # AspectModel.invariants (loglik reuses the per-row log-likelihood).
        if param_draws == "sample":
            theta, phi_t, per_row, p_dyad = sampler.scored_draw(state, rng, dyads)
        else:
            theta, phi_t, per_row, p_dyad = sampler.scored_conditional_means(state, dyads)
        out = {"loglik": per_row.sum(), "p_dyad": p_dyad}
        if test is not None:
            per_row = _row_log_likelihoods(
                test.counts.indptr, test.counts.indices, test.counts.data, theta, phi_t
            )
        out["counts"] = per_row + coefficient
        if keep_params:
            out.update(theta=theta, phi=phi_t.T)
        return out

    coords, dims = model.coords(data), model.dims
    return GibbsSetup(
        sampler, draw, coords, dims, scored, observed_dims=("doc", "word"),
        label_axes=label_axes(model),
    )  # fmt: skip


def label_axes(model: AspectModel) -> tuple[LabelAxis, ...]:
    """The labels that switch between chains of a Gibbs or PyMC posterior of the aspect model:
    topics, matched across chains on their word distributions (``theta`` if ``phi`` is absent).

    Examples
    --------
    >>> label_axes(AspectModel(3))[0].dim
    'topic'
    """
    return (LabelAxis("topic", match=("phi", "theta"), size=model.n_components),)


gibbs = gibbs_entry(
    _prepare_gibbs,
    """Collapsed Gibbs sampling of the Bayesian aspect model, returned as ``InferenceData``.

    The posterior group holds ``theta`` (doc, topic) and ``phi`` (topic, word), named and shaped as in
    :meth:`AspectModel.pymc_model` (kept when ``keep_params`` is True, or "auto" and they are small),
    and the invariants ``loglik`` and ``p_dyad`` (dyad). ``log_likelihood`` holds ``counts`` (doc):
    the multinomial log-pmf of ``test`` (held-out, if given) or of ``data``, per document, as PyMC
    reports it; ``sample_stats`` holds ``lp``, the collapsed log joint.

    Parameter draws (``param_draws``): with ``"sample"`` (the default) each kept draw holds exact
    joint draws ``theta | z ~ Dir(n_d + alpha)`` and ``phi | z ~ Dir(n_k + eta)`` (``K (N + M)``
    Gamma variates from the chain's own generator), so ``theta`` and ``phi`` are draws from their
    posterior. With ``"conditional_mean"`` each kept draw holds the conditional posterior means
    ``E[theta_dk | z] = (n_dk + alpha) / (n_d + K alpha)`` and ``E[phi_kw | z] = (n_wk + eta) /
    (n_k + M eta)`` (what tomotopy and the ``lda`` package report), and ``loglik``, ``p_dyad`` and
    ``log_likelihood`` are evaluated at them. Their average over the draws is a Rao-Blackwellised
    estimate of the posterior means: unbiased (as the chain's draws are, once it has mixed), with
    lower variance than the average of the Dirichlet draws. But the spread of these draws reflects only the uncertainty of ``z``, not
    that of ``theta`` and ``phi`` given ``z``: posterior sds and intervals of ``theta``/``phi``
    come out too narrow, and ``loglik``, ``p_dyad`` and ``log_likelihood`` are those of the means
    (Jensen: not draws of the posterior log-likelihood). Simulation-based calibration, PSIS-LOO
    and any sd-based check need ``"sample"``. No random numbers are drawn for them, so the sweeps
    use a different stretch of the chain's stream and the assignments differ from a ``"sample"``
    run with the same seed (same law).

    Cost: with ``"sample"`` a kept draw's Gamma variates and the scoring of every row cost about
    two and a half sweeps' work (Reuters, K = 20), whether or not the parameters are kept;
    ``"conditional_mean"`` skips the variates (under half a sweep per draw), and ``thin`` keeps
    fewer draws for the same number of sweeps (``benchmarks/RESULTS_gibbs_end_to_end.md``).
    """,
    toy_example=("AspectModel(2)", "loglik", "(2, 20)"),
)


#: Approximate distributed collapsed Gibbs (AD-LDA): the sweep above run per document shard
#: against merged counts (:mod:`latentzoo.inference.ad_lda`; approximate, documented there).
ad_lda = ad_lda_entry(_prepare_gibbs, gibbs_sweep)


# ---- new rows (scikit-learn transform/predict)
@nb.njit(cache=True, parallel=True)
def fold_in_rows(indptr, indices, counts, phi_t, pseudo, max_iter, tol, theta):
    """MAP EM of every row's ``theta`` with ``phi`` held fixed ("folding in" new documents).

    The E/M steps of :class:`AspectEM` at ``beta = 1`` restricted to ``theta`` (Hofmann 1999,
    section 3.3: the aspects ``phi`` are fixed and only the mixing proportions of the new
    documents are fitted): per row ``i``

        theta[i, k] <- max(theta[i, k] sum_j n_ij phi_t[j, k] / s_ij + pseudo, 0), normalised,

    with ``s_ij = sum_k theta[i, k] phi_t[j, k]`` and ``pseudo = alpha - 1`` the Dirichlet prior's
    pseudo-count (clipped at 0, so ``alpha < 1`` gives a sparse estimate on a face of the simplex).
    The objective is concave in ``theta[i]`` for ``alpha >= 1``, so the start only sets the speed.
    One pass over a row's non-zeros per iteration and no ``nnz x K`` array; rows are independent
    (``prange``), so the result does not depend on the other rows or the number of threads. A row
    stops when no entry moved by more than ``tol`` or after ``max_iter`` iterations; a row
    without observations keeps its start.

    Parameters
    ----------
    indptr, indices, counts : CSR arrays of the new rows (counts float64)
    phi_t : (M, K) float64, the fixed ``phi`` transposed
    pseudo : float
    max_iter : int
    tol : float
    theta : (N, K) float64, the start (rows on the simplex), overwritten with the estimate

    Returns
    -------
    numpy.ndarray of shape (N,), int64: the iterations run per row

    Examples
    --------
    >>> import scipy.sparse as sp
    >>> csr = sp.csr_matrix(np.array([[3.0, 0.0, 1.0]]))
    >>> phi_t = np.array([[0.5, 0.0], [0.5, 0.5], [0.0, 0.5]])
    >>> theta = np.full((1, 2), 0.5)
    >>> iters = fold_in_rows(csr.indptr, csr.indices, csr.data, phi_t, 0.0, 500, 1e-10, theta)
    >>> theta.round(6).tolist()
    [[0.75, 0.25]]
    """
    n_rows = indptr.shape[0] - 1
    n_topics = phi_t.shape[1]
    iterations = np.zeros(n_rows, dtype=np.int64)
    for i in nb.prange(n_rows):
        acc = np.empty(n_topics)
        for it in range(max_iter if indptr[i + 1] > indptr[i] else 0):
            for k in range(n_topics):
                acc[k] = 0.0
            for p in range(indptr[i], indptr[i + 1]):
                j = indices[p]
                s = 0.0
                for k in range(n_topics):
                    s += theta[i, k] * phi_t[j, k]
                if s > 0.0:
                    r = counts[p] / s
                    for k in range(n_topics):
                        acc[k] += r * phi_t[j, k]
            total = 0.0
            for k in range(n_topics):
                acc[k] = max(theta[i, k] * acc[k] + pseudo, 0.0)
                total += acc[k]
            iterations[i] = it + 1
            if not total > 0.0:
                break
            change = 0.0
            for k in range(n_topics):
                value = acc[k] / total
                change = max(change, abs(value - theta[i, k]))
                theta[i, k] = value
            if change <= tol:
                break
    return iterations


# ------------------------------------------------------------------------------ the family
def validation_recipe():
    """How :func:`latentzoo.validate` checks the aspect model's methods (a ``ValidationRecipe``)."""
    from latentzoo.inference.recipes import aspect

    return aspect(AspectGibbs)


FAMILY = Family(
    name="aspect",
    model=AspectModel,
    methods={
        "annealed_em": Method(
            annealed_em,
            with_defaults(
                (
                    *SCHEDULE_OPTIONS,
                    flag("predictive", False, "predictive E-step (section 5.2, appendix B)"),
                    THREADS,
                    DTYPE,
                ),
                annealed_em.defaults,
            ),
            blocks=AspectBlocks,
        ),
        "gibbs": Method(gibbs, (*GIBBS_METHOD_OPTIONS, PARAM_DRAWS)),
        "ad_lda": Method(ad_lda, (*GIBBS_METHOD_OPTIONS, PARAM_DRAWS, *AD_LDA_OPTIONS)),
    },
    recipe=validation_recipe,
    sizes=("n_components",),
    dataset="reuters",
    notebook="notebooks/aspect_model.ipynb",
    description="aspect model / PLSA / SMM (Hofmann & Puzicha 1998, sec. 2)",
)
"""The aspect model's family (listed in :mod:`latentzoo.zoo`)."""
