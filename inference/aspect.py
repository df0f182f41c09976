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

import os
from typing import NamedTuple

import numba as nb
import numpy as np

from latentzoo.data import CoOccurrence
from latentzoo.inference.annealing import (
    EMStats,
    balanced_row_chunks,
    check_map_priors,
    em_entry,
    normalise_rows,
    numba_threads,
)
from latentzoo.inference.mcmc import (
    GibbsSetup,
    dirichlet_rows,
    gibbs_entry,
    keep_params_auto,
    next_uniform,
    splitmix_seeds,
    uniform_labels,
)
from latentzoo.models.aspect import AspectModel
from latentzoo.models.conjugate import dirichlet_multinomial_log
from latentzoo.models.invariants import default_dyads

__all__ = ["AspectEM", "AspectGibbs", "em_pass", "gibbs_sweep"]


# ---------------------------------------------------------------------------- EM kernels
@nb.njit(cache=True, inline="always")
def _accumulate_log(energy, product, n, s):
    """Add ``n log s`` to ``energy``; unit counts are batched into the float64 ``product``.

    The logarithm is taken once per run of ``s`` values multiplied into ``product``, which is
    flushed before it can underflow (it stays above 1e-200 before each multiplication by
    ``s > 1e-100``, so above 1e-300 after).
    """
    if n == 1 and s > 1e-100:
        product *= s
        if product < 1e-200:
            energy += np.log(product)
            product = 1.0
    else:
        energy += n * np.log(np.float64(s))
    return energy, product


@nb.njit(cache=True, fastmath=True)
def _em_rows(
    first, last, indptr, indices, counts, t_theta, t_phi, theta, phi_t, n_theta, acc_phi, floor
):  # fmt: skip
    """Fused E/M over rows ``first:last``; returns (sum n log s_beta, sum n log p).

    The tables may be float32 or float64 (numba compiles one version each; ``floor`` has the
    tables' dtype and keeps ``s`` above the smallest normal number in float32). The energy is
    accumulated in float64, and for unit counts (most of them in text) the logarithm is taken once
    per run of ``s`` values multiplied into a float64 product, flushed before it can underflow.
    """
    n_topics = t_theta.shape[1]
    acc = np.empty(n_topics, dtype=t_theta.dtype)
    zero = floor - floor
    energy = 0.0
    product = 1.0
    loglik = 0.0
    track = theta.shape[0] > 0
    for i in range(first, last):
        for k in range(n_topics):
            acc[k] = zero
        for p in range(indptr[i], indptr[i + 1]):
            j = indices[p]
            s = zero
            for k in range(n_topics):
                s += t_theta[i, k] * t_phi[j, k]
            s = max(s, floor)
            n = counts[p]
            energy, product = _accumulate_log(energy, product, n, s)
            if track:
                plain = 0.0
                for k in range(n_topics):
                    plain += theta[i, k] * phi_t[j, k]
                loglik += n * np.log(plain)
            r = n / s
            for k in range(n_topics):
                acc[k] += r * t_phi[j, k]
                acc_phi[j, k] += r * t_theta[i, k]
        for k in range(n_topics):
            n_theta[i, k] = t_theta[i, k] * acc[k]
    return energy + np.log(product), loglik


@nb.njit(cache=True, parallel=True)
def _em_parallel(
    bounds, indptr, indices, counts, t_theta, t_phi, theta, phi_t, n_theta, buffers, floor
):  # fmt: skip
    n_chunks = bounds.shape[0] - 1
    energies = np.zeros(n_chunks)
    logliks = np.zeros(n_chunks)
    for c in nb.prange(n_chunks):
        buffers[c, :, :] = 0
        e, ll = _em_rows(
            bounds[c], bounds[c + 1], indptr, indices, counts, t_theta, t_phi, theta, phi_t,
            n_theta, buffers[c], floor,
        )  # fmt: skip
        energies[c] = e
        logliks[c] = ll
    return energies.sum(), logliks.sum()


@nb.njit(cache=True, fastmath=True)
def _predictive_rows(
    indptr, indices, counts, old_t_theta, old_t_phi, c_theta, c_phi, c_topic, a1, e1, m_e1, beta,
    n_theta, acc_phi,
):  # fmt: skip
    """Predictive E-step (seed section 5.2, eq. (61) without the diagonal term, appendix B).

    For observation ``(i, j)`` the expected counts of the previous pass are reduced by that
    observation's own previous posterior before predicting its aspect; the indirect effects are
    ignored, as in the seed's experiments. Returns ``sum n log`` of the predictive normaliser.
    """
    n_rows = indptr.shape[0] - 1
    n_topics = c_theta.shape[1]
    old = np.empty(n_topics)
    new = np.empty(n_topics)
    energy = 0.0
    for i in range(n_rows):
        for p in range(indptr[i], indptr[i + 1]):
            j = indices[p]
            total_old = 0.0
            for k in range(n_topics):
                old[k] = old_t_theta[i, k] * old_t_phi[j, k]
                total_old += old[k]
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
            if s <= 0.0:
                continue
            energy += n * np.log(s)
            r = n / s
            for k in range(n_topics):
                w = r * new[k]
                n_theta[i, k] += w
                acc_phi[j, k] += w
    return energy


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
        ``float64`` (default, exact monotonicity) or ``float32`` (about twice the throughput: half
        the bytes per ``phi`` row and twice the SIMD lanes; the free energy is still accumulated in
        float64, but rounding can make it wiggle by ~1e-7 relative near convergence).
    counts : array, optional
        ``data.counts.data`` already converted to ``dtype`` (saves a copy per pass).

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
    dtype = _kernel_dtype(dtype)
    csr = data.counts
    if counts is None:
        counts = csr.data.astype(dtype)
    if beta == 1.0:
        t_theta, t_phi = theta.astype(dtype, copy=False), phi_t.astype(dtype, copy=False)
        track_loglik = False
    else:
        t_theta = theta.astype(dtype) ** dtype(beta)
        t_phi = phi_t.astype(dtype) ** dtype(beta)
    floor = _kernel_floor(dtype)
    dummy = np.empty((0, theta.shape[1]))
    plain_theta = np.ascontiguousarray(theta, dtype=np.float64) if track_loglik else dummy
    plain_phi = np.ascontiguousarray(phi_t, dtype=np.float64) if track_loglik else dummy
    n_theta = np.empty_like(t_theta)
    if n_threads <= 1:
        acc_phi = np.zeros_like(t_phi)
        energy, loglik = _em_rows(
            0, data.n_rows, csr.indptr, csr.indices, counts, t_theta, t_phi,
            plain_theta, plain_phi, n_theta, acc_phi, floor,
        )  # fmt: skip
    else:
        with numba_threads(n_threads):
            bounds = balanced_row_chunks(csr.indptr, n_threads)
            buffers = np.empty((len(bounds) - 1, *t_phi.shape), dtype=dtype)
            energy, loglik = _em_parallel(
                bounds, csr.indptr, csr.indices, counts, t_theta, t_phi,
                plain_theta, plain_phi, n_theta, buffers, floor,
            )  # fmt: skip
        acc_phi = buffers.sum(axis=0)
    n_phi = t_phi * acc_phi
    if not track_loglik:
        loglik = energy if beta == 1.0 else np.nan
    return n_theta.astype(np.float64), n_phi.astype(np.float64), float(energy), float(loglik)


def _kernel_dtype(dtype):
    """The numpy scalar type of the EM kernels' tables: float32 or float64, else ValueError."""
    dtype = np.dtype(dtype).type
    if dtype not in (np.float32, np.float64):
        raise ValueError(f"dtype must be float32 or float64, got {dtype.__name__}")
    return dtype


def _kernel_floor(dtype):
    """The smallest normaliser ``s`` the EM kernels use, in the tables' ``dtype``.

    float32 keeps ``s`` above the smallest normal number (subnormals are slow and lose precision);
    float64 needs no floor.
    """
    return dtype(1e-30) if dtype is np.float32 else dtype(0.0)


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
        self.model = model
        self.data = data
        self.predictive = predictive
        self.monotone = not predictive
        self.n_threads = n_threads
        self.dtype = np.dtype(dtype).type
        self.counts = data.counts.data.astype(self.dtype)
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
        if self.predictive and self._previous is not None:
            n_theta, n_phi, energy = self._predictive_pass(theta, phi_t, beta)
            loglik = float(self.model.log_likelihood(params, self.data).sum())
        else:
            n_theta, n_phi, energy, loglik = em_pass(
                self.data, theta, phi_t, beta, n_threads=self.n_threads, dtype=self.dtype,
                counts=self.counts,
            )  # fmt: skip
        if self.predictive:
            self._previous = (theta**beta, phi_t**beta, n_theta, n_phi, beta)
        free = -energy / beta - self._log_prior_terms(theta, params["phi"])
        new_theta = normalise_rows(n_theta, self.model.alpha - 1.0, theta.shape[1])
        new_phi = normalise_rows(n_phi.T, self.model.eta - 1.0, phi_t.shape[0])
        return {"theta": new_theta, "phi": new_phi}, EMStats(float(free), float(loglik))

    def _predictive_pass(self, theta, phi_t, beta):
        old_t_theta, old_t_phi, c_theta, c_phi, _ = self._previous
        csr = self.data.counts
        n_theta = np.zeros_like(theta)
        acc_phi = np.zeros_like(phi_t)
        a1, e1 = self.model.alpha - 1.0, self.model.eta - 1.0
        energy = _predictive_rows(
            csr.indptr, csr.indices, csr.data.astype(np.float64), old_t_theta, old_t_phi,
            c_theta, c_phi, c_phi.sum(axis=0), a1, e1, e1 * phi_t.shape[0], beta,
            n_theta, acc_phi,
        )  # fmt: skip
        return n_theta, acc_phi, energy


# --------------------------------------------------------------------------- Gibbs kernels
@nb.njit(cache=True, fastmath=True)
def gibbs_sweep(doc_ptr, words, z, n_doc_topic, n_word_topic, n_topic, alpha, eta, state):
    """One collapsed Gibbs sweep over all tokens (LDA with symmetric priors).

    ``P(z_t = k | rest) ∝ (n_dk + alpha) (n_wk + eta) / (n_k + M eta)`` with token ``t`` removed.
    Counts are float arrays holding integers so the inner loop needs no conversions; the reciprocal
    of the topic totals is kept up to date instead of dividing per (token, topic).
    """
    n_topics = n_topic.shape[0]
    m_eta = eta * n_word_topic.shape[0]
    inv_total = np.empty(n_topics)
    for k in range(n_topics):
        inv_total[k] = 1.0 / (n_topic[k] + m_eta)
    cumulative = np.empty(n_topics)
    for d in range(doc_ptr.shape[0] - 1):
        for t in range(doc_ptr[d], doc_ptr[d + 1]):
            w = words[t]
            old = z[t]
            n_doc_topic[d, old] -= 1.0
            n_word_topic[w, old] -= 1.0
            n_topic[old] -= 1.0
            inv_total[old] = 1.0 / (n_topic[old] + m_eta)
            total = 0.0
            for k in range(n_topics):
                total += (n_doc_topic[d, k] + alpha) * (n_word_topic[w, k] + eta) * inv_total[k]
                cumulative[k] = total
            u = next_uniform(state) * total
            new = 0
            while new < n_topics - 1 and cumulative[new] <= u:
                new += 1
            z[t] = new
            n_doc_topic[d, new] += 1.0
            n_word_topic[w, new] += 1.0
            n_topic[new] += 1.0
            inv_total[new] = 1.0 / (n_topic[new] + m_eta)


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


class GibbsState(NamedTuple):
    """State of one collapsed Gibbs chain: assignments, count tables, generator state.
    (a NamedTuple of arrays updated in place, see :mod:`latentzoo.inference.mcmc`)."""

    z: np.ndarray
    n_doc_topic: np.ndarray
    n_word_topic: np.ndarray
    n_topic: np.ndarray
    rng_state: np.ndarray


class AspectGibbs:
    """Collapsed Gibbs sampler of the Bayesian aspect model, as pure ``init``/``step``/``draw``.

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
    >>> state = sampler.step(state)
    >>> int(state.n_topic.sum()) == load("toy").total
    True
    """

    def __init__(self, model: AspectModel, data: CoOccurrence):
        self.model = model
        self.data = data
        self.docs, self.words = data.to_tokens()
        self.doc_ptr = np.concatenate([[0], np.cumsum(data.row_totals)]).astype(np.int64)

    def init(self, rng: np.random.Generator, z=None) -> GibbsState:
        k = self.model.n_components
        if z is None:
            z = rng.integers(0, k, size=self.words.shape[0])
        z = np.asarray(z, dtype=np.int64).copy()
        tables = _count_tables(self.docs, self.words, z, self.data.n_rows, self.data.n_cols, k)
        seed = splitmix_seeds(rng, 1)
        return GibbsState(z, *tables, seed)

    def step(self, state: GibbsState) -> GibbsState:
        gibbs_sweep(
            self.doc_ptr, self.words, state.z, state.n_doc_topic, state.n_word_topic,
            state.n_topic, float(self.model.alpha), float(self.model.eta), state.rng_state,
        )  # fmt: skip
        return state

    def draw(self, state: GibbsState, rng: np.random.Generator) -> dict:
        """``theta | z ~ Dir(n_d + alpha)`` and ``phi | z ~ Dir(n_k + eta)``: exact joint draws."""
        theta = dirichlet_rows(rng, state.n_doc_topic + self.model.alpha)
        phi = dirichlet_rows(rng, state.n_word_topic.T + self.model.eta)
        return {"theta": theta, "phi": phi}

    def log_joint(self, state: GibbsState) -> float:
        """Collapsed ``log p(z, w)`` (the sampler's target up to a constant), for sample_stats."""
        return float(
            dirichlet_multinomial_log(state.n_doc_topic, self.model.alpha)
            + dirichlet_multinomial_log(state.n_word_topic.T, self.model.eta)
        )

    def exact_draws(self, n_chains: int, sweeps: int, random_state=None) -> np.ndarray:
        """Final assignments of ``n_chains`` independent chains of ``sweeps`` sweeps each.

        Independent draws (not one autocorrelated chain), so a chi-square test against the exact
        posterior is valid.
        """
        rng = np.random.default_rng(random_state)
        seeds = splitmix_seeds(rng, n_chains)
        return _many_chains_last_state(
            self.doc_ptr, self.docs, self.words, self.data.n_rows, self.data.n_cols,
            self.model.n_components, float(self.model.alpha), float(self.model.eta), seeds, sweeps,
        )  # fmt: skip


def default_threads() -> int:
    """Threads for the parallel EM kernel: all cores numba sees, unless LATENTZOO_THREADS says."""
    return int(os.environ.get("LATENTZOO_THREADS", nb.config.NUMBA_NUM_THREADS))


# ------------------------------------------------------------------------------ entry points
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
        ``float32`` doubles the kernel's throughput at the cost of exact monotonicity.
    **schedule
        ``betas`` (default ``"auto"``), ``max_iter``, ``tol``, ``overrelax``, ``random_state``,
        ``validation_fraction``, ``beta_decay``, ``min_beta``, ``patience``, ``beta_patience``,
        ``progressbar``: the annealing schedule, documented once in
        :func:`~latentzoo.inference.annealing.annealed_fit`.

    Returns
    -------
    EMResult

    Examples
    --------
    >>> from latentzoo.data import load
    >>> result = annealed_em(AspectModel(2), load("toy"), betas=[0.8, 1.0], random_state=0)
    >>> result.params["theta"].shape
    (6, 2)
    """,
)


def _prepare_gibbs(model, data, *, chains, draws, test=None, keep_params="auto"):
    """The family side of :func:`gibbs`: checks, sampler, draw, coordinates."""
    data = model.check_data(data)
    if test is not None:
        test = model.check_data(test)
        if test.shape != data.shape:
            raise ValueError(f"test has shape {test.shape}, expected {data.shape}")
    sampler = AspectGibbs(model, data)
    dyads = default_dyads(data)
    k = model.n_components
    keep_params = keep_params_auto(keep_params, chains, draws, k * (data.n_rows + data.n_cols))
    scored = test if test is not None else data
    coefficient = model.log_multinomial_coefficient(scored)

    def draw(state, rng):
        params = sampler.draw(state, rng)
        per_row = model.log_likelihood(params, data)
        # The invariants of AspectModel.invariants, reusing the per-row log-likelihood.
        out = {"loglik": per_row.sum(), "p_dyad": model.predictive(params, dyads)}
        if test is not None:
            per_row = model.log_likelihood(params, test)
        out["counts"] = per_row + coefficient
        if keep_params:
            out.update(params)
        return out

    coords, dims = model.coords(data), model.dims
    return GibbsSetup(sampler, draw, coords, dims, scored, observed_dims=("doc", "word"))


gibbs = gibbs_entry(
    _prepare_gibbs,
    """Collapsed Gibbs sampling of the Bayesian aspect model, returned as ``InferenceData``.

    The posterior group holds ``theta`` (doc, topic) and ``phi`` (topic, word), named and shaped as in
    :meth:`AspectModel.pymc_model` (kept when ``keep_params`` is True, or "auto" and they are small),
    and the invariants ``loglik`` and ``p_dyad`` (dyad). ``log_likelihood`` holds ``counts`` (doc):
    the multinomial log-pmf of ``test`` (held-out, if given) or of ``data``, per document, as PyMC
    reports it; ``sample_stats`` holds ``lp``, the collapsed log joint.

    Examples
    --------
    >>> from latentzoo.data import load
    >>> idata = gibbs(AspectModel(2), load("toy"), chains=2, draws=20, tune=10, random_state=0,
    ...               progressbar=False)
    >>> idata.posterior["loglik"].shape
    (2, 20)
    """,
)
