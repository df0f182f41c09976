"""Fast inference for the asymmetric clustering model: hard ACM, annealed EM and collapsed Gibbs.

**Hard ACM** (Hofmann & Puzicha 1998, eq. (22)-(24)): alternate the nearest-centroid rule in
Kullback-Leibler divergence, ``z_i = argmin_k D[n_{.|i} || q_k] = argmax_k sum_j n_ij log q_kj``
(eq. (23)), with the centroid update ``q_k ∝ sum_{i: z_i = k} n_i.`` (eq. (24), plus the MAP
pseudo-counts ``eta - 1``). The ``N x K`` matrix of cross-entropies is one sparse-dense product
``counts @ log(q).T``.

**Annealed EM** (eq. (29)-(31) tempered as in eq. (60)): the E-step at inverse temperature ``beta``
is

    <I_ik> = rho_k L_ik**beta / sum_l rho_l L_il**beta,        log L_ik = sum_j n_ij log q_kj,

only the likelihood being tempered (eq. (60), (65)), and the MAP M-step is
``q_kj ∝ sum_i <I_ik> n_ij + eta - 1``, ``rho_k ∝ sum_i <I_ik> + alpha - 1``. The free energy

    F_beta = -(1/beta) [sum_i log sum_k rho_k L_ik**beta + (alpha - 1) sum_k log rho_k]
             - (eta - 1) sum_kj log q_kj

is the minimum over the E-step distribution of the generalised free energy (64), with the Dirichlet
prior of ``rho`` counted on the prior side of (64) together with ``P(I | rho)`` (both scaled by
``T = 1/beta``). The E-step and both M-step updates are then exact coordinate minimisations, so
``F_beta`` never increases at fixed ``beta``; at ``beta = 1`` it is the negative log posterior up to
a constant, and as ``beta -> inf`` it tends to the hard-ACM objective, whose fixed points annealed
EM therefore reaches at low temperature.

One fused numba pass per iteration, the mixture-of-multinomials pass of
:mod:`~latentzoo.inference.em` (which the cluster-abstraction model shares): for each row,
``s_k = sum_j n_ij log q_kj`` over its non-zeros, a row softmax, then ``n_ij <I_ik>`` added into
the ``M x K`` table over the same non-zeros (still in cache); no ``nnz x K`` array exists.
``log q`` is held as ``M x K`` so each word's row is contiguous.

**Collapsed Gibbs** for the Dirichlet-multinomial mixture: ``rho`` and ``q`` integrated out, each
``z_i`` is resampled from

    p(z_i = k | z_-i) ∝ (m_k^-i + alpha) prod_j prod_{t < n_ij} (c_kj^-i + eta + t)
                       / prod_{t < n_i} (c_k^-i + M eta + t),

the exact Pólya predictive of all of the row's tokens (rising factorials, in log space), and at each
kept draw ``rho ~ Dir(m + alpha)``, ``q_k ~ Dir(c_k + eta)`` are drawn from their exact conditionals
so the posterior holds the PyMC declaration's variables.
"""

from __future__ import annotations

import dataclasses
import math
import time
from dataclasses import dataclass
from typing import NamedTuple

import numba as nb
import numpy as np
import pandas as pd
import scipy.sparse as sp
from scipy.special import gammaln

from latentzoo.data import CoOccurrence
from latentzoo.data.checks import as_rng
from latentzoo.inference.annealing import (
    EMResult,
    EMStats,
    check_map_priors,
    em_entry,
    normalise_rows,
)
from latentzoo.inference.collapsed_gibbs import CollapsedGibbs
from latentzoo.inference.em import kl_kmeans_plus_plus, multinomial_mixture_pass
from latentzoo.inference.family import (
    GIBBS_METHOD_OPTIONS,
    SCHEDULE_OPTIONS,
    THREADS,
    Family,
    Method,
    anything,
    hard_options,
    integer,
    with_defaults,
)
from latentzoo.inference.mcmc import (
    GibbsSetup,
    LabelAxis,
    check_parameter_memory,
    dirichlet_rows,
    draw_log_weights,
    evaluated_draw,
    gibbs_data,
    gibbs_entry,
    keep_params_auto,
    uniform_labels,
)
from latentzoo.inference.progress import progress_bar
from latentzoo.models._checks import check_integer
from latentzoo.models._kernels import one_hot
from latentzoo.models.conjugate import dirichlet_multinomial_log
from latentzoo.models.invariants import default_dyads
from latentzoo.models.one_sided import OneSidedClustering, default_pairs, row_logsumexp

__all__ = [
    "OneSidedEM",
    "OneSidedGibbs",
    "acm_em_pass",
    "annealed_em",
    "check_row_mixture_em",
    "final_responsibilities",
    "gibbs",
    "gibbs_sweep",
    "hard_acm",
    "row_mixture_gibbs_setup",
    "row_mixture_m_step",
]


# ---------------------------------------------------------------------------- EM kernels
def acm_em_pass(data: CoOccurrence, rho, q, beta=1.0, n_threads=1, counts=None):
    """One fused E/M pass of the ACM; the computational core, exposed for benchmarks.

    :func:`~latentzoo.inference.em.multinomial_mixture_pass` (whose parameters and returned
    posteriors, expected counts, energy and log-likelihood these are) on ``log rho`` and
    ``log q``, with ``rho`` (K,) and ``q`` (K x M) the cluster weights and word distributions.

    Examples
    --------
    >>> from latentzoo.data import load
    >>> data = load("toy")
    >>> rng = np.random.default_rng(0)
    >>> resp, n_q, energy, ll = acm_em_pass(data, np.full(2, 0.5), rng.dirichlet(np.ones(8), 2))
    >>> bool(np.isclose(n_q.sum(), data.total)), bool(np.isclose(energy, ll))
    (True, True)
    """
    with np.errstate(divide="ignore"):
        log_q_t = np.ascontiguousarray(np.log(np.asarray(q, dtype=np.float64)).T)
        log_rho = np.log(np.asarray(rho, dtype=np.float64))
    return multinomial_mixture_pass(data, log_rho, log_q_t, beta, n_threads, counts)


class OneSidedEM:
    """The ACM's :class:`~latentzoo.inference.annealing.EMProblem` on one data set.

    MAP estimation under the model's Dirichlet priors (pseudo-counts ``alpha - 1``, ``eta - 1``;
    ``alpha = eta = 1`` is maximum likelihood, eq. (24), (31)). ``free_energy`` is the ``F_beta`` of
    the module docstring (Dirichlet normalising constants left out), which this E/M pass never
    increases at fixed ``beta``. The parameters carry ``resp``, the E-step posteriors of the pass
    that produced them, so that :func:`~latentzoo.inference.annealing.perplexity` can use the
    predictive of eq. (32).

    Parameters
    ----------
    model : OneSidedClustering
    data : CoOccurrence
    n_threads : int
        Threads of the fused E/M pass (1: serial kernel).

    Examples
    --------
    >>> from latentzoo.data import load
    >>> problem = OneSidedEM(OneSidedClustering(2), load("toy"))
    >>> params = problem.init(np.random.default_rng(0))
    >>> new, stats = problem.step(params, 1.0)
    >>> sorted(new), bool(np.isfinite(stats.free_energy))
    (['q', 'resp', 'rho'], True)
    """

    monotone = True

    def __init__(self, model: OneSidedClustering, data: CoOccurrence, n_threads: int = 1):
        check_map_priors(model, method="EM")
        self.model = model
        self.data = data
        self.n_threads = n_threads
        self.counts = data.counts.data.astype(np.float64)

    def init(self, rng: np.random.Generator) -> dict:
        """Starting parameters (k-means++ seeding in KL divergence) and their posteriors."""
        params = kl_kmeans_plus_plus(self.data, self.model.n_clusters, rng)
        params["resp"] = self.model.responsibilities(params, self.data)
        return params

    def step(self, params, beta):
        """One fused E/M pass: the M-step estimate and the ``EMStats`` of ``params``."""
        rho = np.asarray(params["rho"], dtype=float)
        q = np.asarray(params["q"], dtype=float)
        with np.errstate(divide="ignore"):
            log_q_t = np.ascontiguousarray(np.log(q).T)
            log_rho = np.log(rho)
        resp, n_q, energy, loglik = multinomial_mixture_pass(
            self.data, log_rho, log_q_t, beta, self.n_threads, self.counts
        )
        new_rho, new_q, free = row_mixture_m_step(
            self.model, log_rho, log_q_t, resp.sum(axis=0), n_q, energy, beta
        )
        return {"rho": new_rho, "q": new_q, "resp": resp}, EMStats(float(free), float(loglik))

    @staticmethod
    def order_parameter(params, tol: float = 1e-3) -> int:
        """The number of distinct cluster centroids ``q_k`` (L1 distance above ``tol``).

        At high temperature every cluster sits on the same centroid; each phase transition of
        deterministic annealing splits one (seed section 5.1), so this count jumps there.

        Examples
        --------
        >>> OneSidedEM.order_parameter({"q": np.array([[0.5, 0.5], [0.5, 0.5], [0.9, 0.1]])})
        2
        """
        q = np.asarray(params["q"], dtype=float)
        distance = np.abs(q[:, None, :] - q[None, :, :]).sum(axis=-1)
        close = distance <= tol
        # Greedy grouping: a centroid starts a new group unless it is close to an earlier one.
        return int(sum(not close[k, :k].any() for k in range(len(q))))


def row_mixture_m_step(model, log_rho, log_q, resp_sum, n_q, energy, beta, prior=0.0):
    """The MAP M-step of a mixture over whole rows (the ACM, the cluster abstraction model) and
    the free energy ``F_beta`` of the parameters the E-step used.

    Parameters
    ----------
    model : a model with the Dirichlet concentrations ``alpha`` (weights) and ``eta`` (words)
    log_rho, log_q : arrays
        The logarithms of the weights and of the word distributions the E-step used (any layout:
        only their sums enter the prior side of ``F_beta``).
    resp_sum : (K,) array
        The E-step posteriors summed over the rows.
    n_q : (K', M) array
        Expected word counts of each distribution.
    energy : float
        ``sum_i log sum_k rho_k L_ik**beta``.
    beta : float
    prior : float
        Further log-prior terms of the family (added after the weights' and words').

    Returns
    -------
    new_rho : (K,) array
    new_q : (K', M) array
    free : float

    Examples
    --------
    >>> model = OneSidedClustering(2, alpha=1.0, eta=1.0)
    >>> rho, q, free = row_mixture_m_step(model, np.log([0.5, 0.5]), np.zeros((2, 2)),
    ...                                   np.array([3.0, 1.0]), np.ones((2, 2)), -2.0, 1.0)
    >>> rho.tolist(), q.tolist(), free
    ([0.75, 0.25], [[0.5, 0.5], [0.5, 0.5]], 2.0)
    """
    # The prior side of F_beta: (1/beta)(alpha - 1) sum log rho + (eta - 1) sum log q + prior.
    prior_side = 0.0
    with np.errstate(divide="ignore"):
        if model.alpha != 1.0:
            prior_side += (model.alpha - 1.0) * log_rho.sum() / beta
        if model.eta != 1.0:
            prior_side += (model.eta - 1.0) * log_q.sum()
    if prior:
        prior_side += prior
    free = -energy / beta - prior_side
    new_rho = normalise_rows(resp_sum[None, :], model.alpha - 1.0, len(resp_sum))[0]
    new_q = normalise_rows(n_q, model.eta - 1.0, n_q.shape[1])
    return new_rho, new_q, free


@dataclass(frozen=True)
class RowMixtureBlocks:
    """The :class:`~latentzoo.inference.dask_backend.BlockEM` of a mixture over whole rows:
    ``resp`` (and any per-row parameter a subclass adds) per block, the weights and word side
    shared. Its start is the in-memory one (k-means++ in KL divergence reads the whole data), so
    shards are not supported. Subclasses declare :meth:`problem`, :meth:`pass_of` and
    :meth:`word_side`."""

    model: object
    n_threads: int = 1
    row_names: tuple[str, ...] = ("resp",)

    start_block = None
    final_e_step = ("resp",)
    """The posteriors returned are those of the final parameters (as in memory)."""

    def start(self, data, rng):
        return self.problem(data).init(rng)

    def block_pass(self, block, rows, shared, beta):
        resp, n_q, energy, loglik, new_rows, stats = self.pass_of(block, rows, shared, beta)
        stats = {"n_q": n_q, "resp_sum": resp.sum(axis=0), "energy": energy, "loglik": loglik,
                 **stats}  # fmt: skip
        return {"resp": resp, **new_rows}, stats

    def m_step(self, params, stats, beta):
        log_rho, log_q, n_q, prior, word_side = self.word_side(params, stats, beta)
        new_rho, new_q, free = row_mixture_m_step(
            self.model, log_rho, log_q, stats["resp_sum"], n_q, stats["energy"], beta, prior
        )
        new = {"rho": new_rho, "q": new_q, **word_side}
        return new, EMStats(float(free), float(stats["loglik"]))


@dataclass(frozen=True)
class OneSidedBlocks(RowMixtureBlocks):
    """The ACM's :class:`RowMixtureBlocks`: the block pass is
    :func:`~latentzoo.inference.em.multinomial_mixture_pass`, the M-step that of
    :class:`OneSidedEM`."""

    def problem(self, data):
        return OneSidedEM(self.model, data)

    def globals_of(self, params):
        with np.errstate(divide="ignore"):
            log_q_t = np.ascontiguousarray(np.log(np.asarray(params["q"], dtype=float)).T)
            log_rho = np.log(np.asarray(params["rho"], dtype=float))
        return {"log_q_t": log_q_t, "log_rho": log_rho}

    def pass_of(self, block, rows, shared, beta):
        resp, n_q, energy, loglik = multinomial_mixture_pass(
            block, shared["log_rho"], shared["log_q_t"], beta, self.n_threads
        )
        return resp, n_q, energy, loglik, {}, {}

    def word_side(self, params, stats, beta):
        shared = self.globals_of(params)
        return shared["log_rho"], shared["log_q_t"], stats["n_q"], 0.0, {}


# ------------------------------------------------------------------------------ entry points
def check_row_mixture_em(model, data, schedule, problem_options):
    """The ``check`` of :func:`~latentzoo.inference.annealing.em_entry` for a mixture over whole
    rows (the ACM, the cluster abstraction model): the data fit the model, the priors have a MAP
    estimate, and no predictive E-step, which section 5.2 derives for the aspect model only.

    Examples
    --------
    >>> from latentzoo.data import load
    >>> check_row_mixture_em(OneSidedClustering(2), load("toy"), {}, {"predictive": True})
    Traceback (most recent call last):
    ...
    ValueError: predictive EM (section 5.2) is implemented for the aspect model only; use predictive=False for OneSidedClustering
    """
    model.check_data(data)
    check_map_priors(model, method="EM")
    if problem_options.pop("predictive", False):
        raise ValueError(
            "predictive EM (section 5.2) is implemented for the aspect model only; "
            f"use predictive=False for {type(model).__name__}"
        )


def final_responsibilities(model, data, result):
    """The ``finish`` of :func:`~latentzoo.inference.annealing.em_entry` for a mixture over whole
    rows: ``resp``, the posteriors of the final parameters at the final ``beta`` (those of the
    last E-step belong to the previous iterate), added to ``result.params``."""
    data = model.check_data(data)
    final = model.responsibilities(result.params, data, result.betas[-1])
    result.params = {**result.params, "resp": final}
    return result


annealed_em = em_entry(
    OneSidedEM,
    """Fit the ACM by annealed (tempered) EM (Hofmann & Puzicha 1998, sections 3.2 and 5.1).

    Parameters
    ----------
    model : OneSidedClustering
    data : CoOccurrence
    predictive : bool
        The predictive E-step of section 5.2 is derived for the aspect model only: ``True`` raises
        ``ValueError``.
    n_threads : int
        Threads of the fused kernel (1: serial kernel).
    **schedule
        ``betas`` (default ``"auto"``), ``max_iter``, ``tol``, ``overrelax``, ``random_state``,
        ``validation_fraction``, ``beta_decay``, ``min_beta``, ``min_iter``, ``patience``,
        ``score_tol``, ``beta_patience``, ``progressbar``: the annealing schedule, documented once in
        :func:`~latentzoo.inference.annealing.annealed_fit`.
        Family defaults: the posteriors of a row of ``n_i`` observations stay nearly one-hot until
        ``beta * n_i`` is of order one (eq. (60)), so ``"auto"`` lowers ``beta`` faster than for
        the aspect model (``beta_decay=0.5``, ``min_beta=0.002``) and stops after
        ``beta_patience=6`` temperatures in a row fail to improve the validation perplexity (of
        eq. (32)). A large final ``beta`` (e.g. ``[1, 10, 100, 1000]``) anneals towards the hard
        clustering of :func:`hard_acm`; the same ``random_state`` gives the same start as it.

    Returns
    -------
    EMResult
        ``params`` holds ``rho`` (K,), ``q`` (K x M) and ``resp`` (N x K): the posteriors of the
        final parameters on ``data`` at the final ``beta`` (eq. (60)), used by ``perplexity``.

    Examples
    --------
    >>> from latentzoo.data import load
    >>> result = annealed_em(OneSidedClustering(2), load("toy"), betas=[0.8, 1.0], random_state=0)
    >>> z = result.params["resp"].argmax(axis=1)  # sport rows together, politics rows together
    >>> bool(len(set(z[:3])) == len(set(z[3:])) == 1 and z[0] != z[3]), bool(result.converged)
    (True, True)
    """,
    defaults={"beta_decay": 0.5, "min_beta": 0.002, "beta_patience": 6},
    check=check_row_mixture_em,
    finish=final_responsibilities,
)


def hard_acm(
    model: OneSidedClustering,
    data: CoOccurrence,
    max_iter: int = 100,
    random_state=None,
    n_init: int = 1,
    init: dict | None = None,
    progressbar: bool = False,
):
    """Hard asymmetric clustering: nearest centroid in KL divergence, eq. (22)-(24).

    Alternates ``z_i = argmax_k sum_j n_ij log q_kj`` (eq. (23); ties go to the smaller label, so a
    row without observations joins cluster 0) with the MAP centroid update
    ``q_k ∝ sum_{i: z_i = k} n_i. + eta - 1`` (eq. (24)). The objective

        J(z, q) = -sum_i sum_j n_ij log q_{z_i j} - (eta - 1) sum_kj log q_kj

    (eq. (26) up to a constant, i.e. the ``beta -> inf`` limit of annealed EM's free energy) cannot
    increase: each half-step minimises it over ``z`` or over ``q``. Stops when no row changes
    cluster. ``rho`` is reported as the MAP mixing weights of the final partition,
    ``(m_k + alpha - 1) / (N + K (alpha - 1))``.

    Parameters
    ----------
    model : OneSidedClustering
    data : CoOccurrence
    max_iter : int
        Assignment/centroid alternations per start.
    random_state : int, Generator or None
        The first start is the one :func:`annealed_em` uses with the same seed.
    n_init : int
        Independent starts; the one with the lowest final objective is returned.
    init : dict, optional
        Start from these parameters (``q``; with ``n_init = 1``).
    progressbar : bool
        Show a progress bar over the starts.

    Returns
    -------
    EMResult
        ``method="hard_acm"``; ``params``: ``rho``, ``q`` and ``resp`` (one-hot ``N x K``) plus
        ``z``; ``trace``: per iteration the objective (also as ``free_energy``), the log-likelihood
        ``sum_i log sum_k rho_k L_ik`` at the iteration's parameters, and the number of rows that
        changed cluster.

    Examples
    --------
    >>> from latentzoo.data import load
    >>> result = hard_acm(OneSidedClustering(2), load("toy"), random_state=0)
    >>> z = result.params["z"]
    >>> bool(len(set(z[:3])) == len(set(z[3:])) == 1 and z[0] != z[3]), bool(result.converged)
    (True, True)
    """
    data = model.check_data(data)
    check_map_priors(model, method="EM")
    check_integer("max_iter", max_iter)
    check_integer("n_init", n_init)
    check_parameter_memory(model, data, "hard ACM")
    if init is not None and n_init != 1:
        raise ValueError("init gives a single start: use n_init=1")
    if init is not None:
        if not isinstance(init, dict) or "q" not in init:
            raise ValueError(f"init must be a dict with the centroids 'q', got {init!r}")
        model.check_params({"rho": np.full(model.n_clusters, 1.0 / model.n_clusters),
                            "q": init["q"]}, data)  # fmt: skip
    rng = as_rng(random_state)
    start = time.perf_counter()
    best = None
    for _ in progress_bar(range(n_init), desc="hard ACM starts", progressbar=progressbar):
        q0 = init["q"] if init is not None else hard_acm_start(model, data, rng)
        run = _hard_run(model, data, np.asarray(q0, dtype=float), max_iter)
        if best is None or run[2]["objective"].iloc[-1] < best[2]["objective"].iloc[-1]:
            best = run
    params, converged, trace = best
    return EMResult(
        model=model,
        params=params,
        trace=trace,
        converged=converged,
        betas=[np.inf],
        seconds=time.perf_counter() - start,
        method="hard_acm",
        coords=model.coords(data),
        settings={"max_iter": max_iter, "n_init": n_init,
                  "random_state": random_state if isinstance(random_state, int) else None},
    )  # fmt: skip


def hard_acm_start(model, data, rng) -> np.ndarray:
    """One random start of :func:`hard_acm`: the centroids ``q`` of KL k-means++ seeding."""
    return kl_kmeans_plus_plus(data, model.n_clusters, rng)["q"]


def _hard_run(model, data, q, max_iter):
    k, n_rows = model.n_clusters, data.n_rows
    eta1, alpha1 = model.eta - 1.0, model.alpha - 1.0
    counts = data.counts
    rows = np.arange(n_rows)
    z = np.full(n_rows, -1, dtype=np.int64)
    rho = np.full(k, 1.0 / k)
    trace = []
    converged = False
    start = time.perf_counter()
    for iteration in range(max_iter):
        with np.errstate(divide="ignore"):
            log_q = np.log(q)
        scores = np.asarray(counts @ log_q.T)  # (N, K): sum_j n_ij log q_kj
        new_z = np.argmax(scores, axis=1)
        changed = int(np.count_nonzero(new_z != z))
        penalty = eta1 * log_q.sum() if eta1 else 0.0
        with np.errstate(divide="ignore"):
            loglik = row_logsumexp(np.log(rho)[None, :] + scores).sum()
        trace.append(
            {
                "beta": np.inf,
                "iteration": iteration,
                "objective": float(-scores[rows, new_z].sum() - penalty),
                "log_likelihood": float(loglik),
                "changed": changed,
                "seconds": time.perf_counter() - start,
            }
        )
        if changed == 0:
            converged = True
            break
        z = new_z
        # Centroids, eq. (24): the summed counts of each cluster's rows, O(nnz).
        indicator = sp.csr_matrix((np.ones(n_rows), (z, rows)), shape=(k, n_rows))
        q = normalise_rows((indicator @ counts).toarray().astype(float), eta1, data.n_cols)
        rho = normalise_rows(np.bincount(z, minlength=k)[None, :].astype(float), alpha1, k)[0]
    trace = pd.DataFrame(trace)
    trace["free_energy"] = trace["objective"]
    resp = np.zeros((n_rows, k))
    resp[rows, z] = 1.0
    return {"rho": rho, "q": q, "resp": resp, "z": z}, converged, trace


# --------------------------------------------------------------------------- Gibbs kernels
@nb.njit(cache=True, inline="always")
def _log_rising(x, n):
    """``log(x (x+1) ... (x+n-1))``: a loop of logarithms for small ``n``, lgamma beyond."""
    if n == 1.0:
        return math.log(x)
    if n <= 8.0:
        total = 0.0
        for t in range(int(n)):
            total += math.log(x + t)
        return total
    return math.lgamma(x + n) - math.lgamma(x)


@nb.njit(cache=True)
def gibbs_sweep(indptr, indices, counts, row_totals, z, sizes, c_t, c_tot, alpha, eta, state):
    """One collapsed Gibbs sweep over the rows of the Dirichlet-multinomial mixture.

    ``p(z_i = k | z_-i) ∝ (m_k + alpha) prod_j rising(c_kj + eta, n_ij) / rising(c_k + M eta, n_i)``
    with row ``i`` removed from the tables (``sizes``: rows per cluster; ``c_t``: ``M x K`` counts;
    ``c_tot``: tokens per cluster), evaluated in log space. ``state`` is the chain's splitmix64
    generator state (a one-element uint64 array), advanced in place.

    Examples
    --------
    >>> from latentzoo.data import load
    >>> sampler = OneSidedGibbs(OneSidedClustering(2), load("toy"))
    >>> s = sampler.init(np.random.default_rng(0))
    >>> gibbs_sweep(sampler.indptr, sampler.indices, sampler.counts, sampler.row_totals, s.z,
    ...             s.sizes, s.c_t, s.c_tot, 1.1, 1.01, s.rng_state)
    >>> int(s.sizes.sum()), int(s.c_t.sum()) == load("toy").total
    (6, True)
    """
    n_rows = indptr.shape[0] - 1
    n_clusters = sizes.shape[0]
    m_eta = eta * c_t.shape[0]
    logp = np.empty(n_clusters)
    for i in range(n_rows):
        old = z[i]
        n_i = row_totals[i]
        sizes[old] -= 1.0
        c_tot[old] -= n_i
        for p in range(indptr[i], indptr[i + 1]):
            c_t[indices[p], old] -= counts[p]
        for k in range(n_clusters):
            logp[k] = math.log(sizes[k] + alpha)
            if n_i > 0:
                logp[k] -= _log_rising(c_tot[k] + m_eta, n_i)
        for p in range(indptr[i], indptr[i + 1]):
            j = indices[p]
            n = counts[p]
            for k in range(n_clusters):
                logp[k] += _log_rising(c_t[j, k] + eta, n)
        new = draw_log_weights(logp, n_clusters, state)
        z[i] = new
        sizes[new] += 1.0
        c_tot[new] += n_i
        for p in range(indptr[i], indptr[i + 1]):
            c_t[indices[p], new] += counts[p]


# Largest column total for which the collapsed log joint keeps a gammaln table (8 MB).
_LGAMMA_TABLE_LIMIT = 1 << 20


@nb.njit(cache=True)
def _count_tables(indptr, indices, counts, z, n_cols, n_clusters):
    sizes = np.zeros(n_clusters)
    c_t = np.zeros((n_cols, n_clusters))
    c_tot = np.zeros(n_clusters)
    for i in range(indptr.shape[0] - 1):
        k = z[i]
        sizes[k] += 1.0
        for p in range(indptr[i], indptr[i + 1]):
            c_t[indices[p], k] += counts[p]
            c_tot[k] += counts[p]
    return sizes, c_t, c_tot


@nb.njit(cache=True)
def _many_chains_last_state(indptr, indices, counts, row_totals, n_cols, n_clusters, alpha, eta,
                            seeds, sweeps):  # fmt: skip
    """Run one independent chain per seed for ``sweeps`` sweeps; return the final assignments."""
    n_rows = indptr.shape[0] - 1
    out = np.empty((seeds.shape[0], n_rows), dtype=np.int64)
    state = np.empty(1, dtype=np.uint64)
    for c in range(seeds.shape[0]):
        state[0] = seeds[c]
        z = uniform_labels(state, n_rows, n_clusters)
        sizes, c_t, c_tot = _count_tables(indptr, indices, counts, z, n_cols, n_clusters)
        for _ in range(sweeps):
            gibbs_sweep(indptr, indices, counts, row_totals, z, sizes, c_t, c_tot, alpha, eta,
                        state)  # fmt: skip
        out[c] = z
    return out


class OneSidedGibbsState(NamedTuple):
    """State of one collapsed Gibbs chain: memberships, count tables, generator state.
    (a NamedTuple of arrays updated in place, see :mod:`latentzoo.inference.mcmc`)."""

    z: np.ndarray
    sizes: np.ndarray
    c_t: np.ndarray
    c_tot: np.ndarray
    rng_state: np.ndarray


class OneSidedGibbs(CollapsedGibbs):
    """Collapsed Gibbs sampler of the Bayesian ACM, as ``init``/``step``/``draw``.

    A :class:`~latentzoo.inference.collapsed_gibbs.CollapsedGibbs` whose sweep visits the rows.

    Parameters
    ----------
    model : OneSidedClustering
    data : CoOccurrence

    Examples
    --------
    >>> from latentzoo.data import load
    >>> sampler = OneSidedGibbs(OneSidedClustering(2), load("toy"))
    >>> state = sampler.step(sampler.init(rng := np.random.default_rng(0)), rng)[0]
    >>> int(state.sizes.sum()), int(state.c_tot.sum()) == load("toy").total
    (6, True)
    """

    state_type = OneSidedGibbsState

    def __init__(self, model: OneSidedClustering, data: CoOccurrence):
        self.model = model
        self.data = data
        csr = data.counts
        self.indptr = csr.indptr.astype(np.int64)
        self.indices = csr.indices.astype(np.int64)
        self.counts = csr.data.astype(np.float64)
        self.row_totals = data.row_totals.astype(np.float64)
        self._lgamma_eta = None

    def init(self, rng: np.random.Generator, z=None) -> OneSidedGibbsState:
        k = self.model.n_clusters
        if z is None:
            z = rng.integers(0, k, size=self.data.n_rows)
        z = np.asarray(z, dtype=np.int64).copy()
        if z.shape != (self.data.n_rows,) or z.min() < 0 or z.max() >= k:
            raise ValueError(f"initial assignments must be {self.data.n_rows} labels in 0..{k - 1}")
        return self._start(rng, z)

    def _tables_of(self, z):
        return _count_tables(
            self.indptr, self.indices, self.counts, z, self.data.n_cols, self.model.n_clusters
        )

    def _sweep(self, state: OneSidedGibbsState) -> tuple:
        """One sweep over the rows (:func:`gibbs_sweep`); reports the log joint only."""
        gibbs_sweep(
            self.indptr, self.indices, self.counts, self.row_totals, state.z, state.sizes,
            state.c_t, state.c_tot, float(self.model.alpha), float(self.model.eta),
            state.rng_state,
        )  # fmt: skip
        return ()

    def draw(self, state: OneSidedGibbsState, rng: np.random.Generator) -> dict:
        """``rho | z ~ Dir(m + alpha)``, ``q_k | z ~ Dir(c_k + eta)``: exact joint draws with ``z``.

        Examples
        --------
        >>> from latentzoo.data import load
        >>> sampler = OneSidedGibbs(OneSidedClustering(2), load("toy"))
        >>> rng = np.random.default_rng(0)
        >>> sorted(sampler.draw(sampler.init(rng), rng))
        ['q', 'rho', 'z']
        """
        rho = dirichlet_rows(rng, (state.sizes + self.model.alpha)[None, :])[0]
        q = dirichlet_rows(rng, state.c_t.T + self.model.eta)
        return {"rho": rho, "q": q, "z": state.z.copy()}

    def log_joint(self, state: OneSidedGibbsState) -> float:
        """Collapsed ``log p(z, S)`` (the sampler's target), as ``collapsed_log_joint``.

        Examples
        --------
        >>> from latentzoo.data import load
        >>> model, data = OneSidedClustering(2), load("toy")
        >>> sampler = OneSidedGibbs(model, data)
        >>> state = sampler.init(np.random.default_rng(0))
        >>> bool(np.isclose(sampler.log_joint(state), model.collapsed_log_joint(state.z, data)[0]))
        True
        """
        eta = self.model.eta
        if self._lgamma_eta is None:
            # gammaln(c + eta) of every count a cell can hold: looked up, not recomputed, so a
            # step's info costs little; the same numbers as dirichlet_multinomial_log's, summed
            # in the same order (bit for bit). The column totals are summed once, not per step
            # (a sparse sum per step cost two thirds of the exact level's time).
            largest = int(self.data.col_totals.max(initial=0))
            if largest < _LGAMMA_TABLE_LIMIT:
                counts = np.arange(largest + 1, dtype=np.float64)
                self._lgamma_eta = gammaln(counts + eta)
        c_t = state.c_t.T
        m = c_t.shape[-1]
        # Counts too large for a table (it would exceed memory) are computed directly: the
        # same element-wise gammaln, so the same numbers.
        lgamma_cells = (
            self._lgamma_eta[c_t.astype(np.intp)]
            if self._lgamma_eta is not None
            else gammaln(c_t + eta)
        )
        per_row = (
            gammaln(m * eta)
            - gammaln(c_t.sum(axis=-1) + m * eta)
            + np.sum(lgamma_cells - gammaln(eta), axis=-1)
        )
        return float(
            dirichlet_multinomial_log(state.sizes[None, :], self.model.alpha) + per_row.sum(axis=-1)
        )

    def _last_states(self, seeds, sweeps) -> np.ndarray:
        """The final memberships ``(n_chains, N)``."""
        return _many_chains_last_state(
            self.indptr, self.indices, self.counts, self.row_totals, self.data.n_cols,
            self.model.n_clusters, float(self.model.alpha), float(self.model.eta), seeds, sweeps,
        )  # fmt: skip


def row_mixture_gibbs_setup(model, sampler, data, test, keep_params, label_axes=()):
    """The :class:`~latentzoo.inference.mcmc.GibbsSetup` of a mixture over whole rows (the ACM,
    the cluster abstraction model) from its checked ``data`` and ``test``, its ``sampler`` and the
    resolved ``keep_params``: each draw scored by
    :func:`~latentzoo.inference.mcmc.evaluated_draw` on the default dyads and row pairs
    (:func:`~latentzoo.models.one_sided.default_pairs`), the observed data ``test`` or ``data``.

    Examples
    --------
    >>> from latentzoo.data import load
    >>> model, data = OneSidedClustering(2), load("toy")
    >>> setup = row_mixture_gibbs_setup(model, OneSidedGibbs(model, data), data, None, False)
    >>> sorted(setup.draw(setup.sampler.init(rng := np.random.default_rng(0)), rng))
    ['coassign', 'counts', 'loglik', 'p_dyad']
    """
    draw = evaluated_draw(
        model, sampler, data, test, default_dyads(data), default_pairs(data), keep_params
    )
    scored = test if test is not None else data
    return GibbsSetup(sampler, draw, model.coords(data), model.dims, scored,
                      observed_dims=("doc", "word"), label_axes=label_axes)  # fmt: skip


def _prepare_gibbs(model, data, *, chains, draws, test=None, keep_params="auto"):
    """The family side of :func:`gibbs`: checks, sampler, draw, coordinates."""
    data, test = gibbs_data(model, data, test, CoOccurrence.coerce)
    k = model.n_clusters
    keep_params = keep_params_auto(keep_params, chains, draws, k * (data.n_cols + 1) + data.n_rows)
    sampler = OneSidedGibbs(model, data)
    return row_mixture_gibbs_setup(model, sampler, data, test, keep_params, label_axes(model))


def label_axes(model: OneSidedClustering) -> tuple[LabelAxis, ...]:
    """The labels that switch between chains of a Gibbs or PyMC posterior of the one-sided
    model: clusters, matched on their word distributions ``q`` (on the memberships ``z`` when
    ``q`` is absent); ``z`` is relabelled.

    Examples
    --------
    >>> label_axes(OneSidedClustering(3))[0].match
    ('q', 'z')
    """
    return (LabelAxis("cluster", match=("q", "z"), values=("z",), size=model.n_clusters),)


gibbs = gibbs_entry(
    _prepare_gibbs,
    """Collapsed Gibbs sampling of the Bayesian ACM, returned as ``InferenceData``.

    The posterior group holds ``rho`` (cluster) and ``q`` (cluster, word), named and shaped as in
    :meth:`OneSidedClustering.pymc_model`, the memberships ``z`` (doc, int), and the invariants
    ``loglik``, ``p_dyad`` (dyad) and ``coassign`` (pair) of :meth:`OneSidedClustering.invariants`
    (``rho``, ``q`` and ``z`` are kept when ``keep_params`` is True, or "auto" and they are small).
    ``log_likelihood`` holds ``counts`` (doc): the multinomial log-pmf of each row of ``data`` given
    the draw's ``(rho, q)`` with ``z_i`` marginalised, or, with ``test``, the exact predictive
    density of each row's held-out counts given the draw and that row's training observations,
    ``log sum_k <I_ik> prod_j q_kj^{test_ij}`` plus the multinomial coefficient (averaged over draws
    it is ``p(test_i | data)``). ``sample_stats`` holds ``lp``, the collapsed log joint.
    """,
    toy_example=("OneSidedClustering(2)", "coassign", "(2, 20, 15)"),
)


# ------------------------------------------------------------- certificate of the hard ACM
HARD_TOL = 1e-9
"""Tolerance of the hard-method certificates, relative to the magnitude of what is compared:
floating-point rounding only (every check is exact in exact arithmetic)."""

HARD_INSTANCES = 64
"""Instances of the hard ACM's optimality check (:func:`hard_instances`)."""

HARD_ETA = 10.0
"""``eta`` of three instances in four: the prior term ``(eta - 1) sum log q`` of the objective,
on which the choice among ``n_init`` starts depends, is negligible at the default ``eta = 1.01``:
a selection that drops it (mutation one-sided-hard-objective-drops-prior) returned a start of
larger ``J`` on 0 of 90 instances at ``eta = 1.01`` (``K = 2, 3``, three data shapes) and on 36
of 336 at ``eta = 10``, ``K = 2``, 20 rows x 20 words x 15 tokens (:func:`hard_instances` at seeds
0-3 with 32 instances, 0-4 with 64), so that its 48 such instances miss it with probability about
0.004 (caught at each of those 9 seeds)."""


def _hard_map(model, data, z):
    """``(q, rho, J)`` recomputed from the counts for the partition ``z``: the MAP centroids of
    eq. (24) ``q_kj = (C_kj + eta - 1) / (C_k + M (eta - 1))`` from the cluster sums ``C``
    (uniform for a cluster without mass), the weights ``(m_k + alpha - 1) / (N + K (alpha - 1))``
    and the objective ``J(z, q) = -sum_i sum_j n_ij log q_{z_i j} - (eta - 1) sum_kj log q_kj``
    (eq. (26) up to a constant), with ``s = n log q^T``, the ``N x K`` objective changes' table."""
    k, m = model.n_clusters, data.n_cols
    eta1, alpha1 = model.eta - 1.0, model.alpha - 1.0
    counts = data.counts.astype(np.float64)
    sums = np.asarray((sp.csr_matrix(one_hot(z, k)).T @ counts).todense()) + eta1
    totals = sums.sum(axis=1, keepdims=True)
    q = np.where(totals > 0, sums / np.where(totals > 0, totals, 1.0), 1.0 / m)
    sizes = np.bincount(z, minlength=k) + alpha1
    rho = sizes / sizes.sum()
    with np.errstate(divide="ignore"):
        log_q = np.log(q)
    scores = np.asarray(counts @ log_q.T)
    prior = eta1 * log_q.sum() if eta1 else 0.0
    return q, rho, scores, float(-scores[np.arange(len(z)), z].sum() - prior)


def _relative_excess(value, bound):
    """``(value - bound) / (1 + |bound|)``, clipped at 0; ``inf`` for a non-finite value."""
    excess = (np.asarray(value, float) - bound) / (1.0 + np.abs(bound))
    return float(np.max(np.where(np.isfinite(excess), np.maximum(excess, 0.0), np.inf), initial=0))


def hard_certificate(model, data, result, method=hard_acm) -> list:
    """Checks of a :func:`hard_acm` result, recomputed from the counts (not its own updates).

    - *parameters*: ``q`` and ``rho`` are the MAP update of the returned partition (eq. (24) and
      the weights ``(m_k + alpha - 1) / (N + K (alpha - 1))``);
    - *local optimum*: the run converged and no single row lowers ``J(z, q)`` by joining another
      cluster at those ``q`` (eq. (23): ``z_i = argmax_k sum_j n_ij log q_kj``). Together: a fixed
      point of the alternation, whose half-steps each minimise ``J`` exactly (not a local optimum
      of ``min_q J(z, q)``, which Lloyd-type alternation does not promise);
    - *best start*: with ``n_init > 1`` and an integer seed, each start (drawn as :func:`hard_acm`
      draws them) is rerun alone by ``method`` with ``init``; the returned objective ``J``
      (prior term included) is the least of theirs.

    Each :class:`~latentzoo.inference.checks.Check` holds its ``violation`` (0 when exact) and
    ``tolerance`` (:data:`HARD_TOL`).
    """
    from latentzoo.inference.validation import hard_check, single_move_check

    z = np.asarray(result.params["z"], dtype=np.int64)
    q, rho, scores, objective = _hard_map(model, data, z)
    params = np.abs(np.asarray(result.params["q"]) - q).max(initial=0.0)
    params = max(params, np.abs(np.asarray(result.params["rho"]) - rho).max(initial=0.0))
    own = scores[np.arange(len(z)), z]
    moved = _relative_excess(scores.max(axis=1), own)
    checks = [
        hard_check("hard returns the MAP q, rho of its partition (eq. (24))", params,
                    "largest |difference| of q, rho from the update recomputed from the counts",
                    HARD_TOL),
        single_move_check("hard ends at a single-move optimum of J(z, q) (eq. (23))", moved,
                          result.converged, "row", "q", HARD_TOL),
    ]  # fmt: skip
    n_init, seed = result.settings.get("n_init", 1), result.settings.get("random_state")
    if n_init > 1 and seed is not None:
        rng = as_rng(seed)
        starts = [hard_acm_start(model, data, rng) for _ in range(n_init)]
        runs = [method(model, data, max_iter=result.settings["max_iter"], init={"q": start})
                for start in starts]  # fmt: skip
        least = min(_hard_map(model, data, run.params["z"])[3] for run in runs)
        checks.append(hard_check(
            "hard returns the best of its n_init starts", _relative_excess(objective, least),
            f"excess of the returned J over the least J of its {n_init} starts rerun alone",
            HARD_TOL,
        ))  # fmt: skip
    return checks


def hard_instances(method, model, rng) -> list:
    """The hard ACM's optimality instances, each certified: one list of checks per instance.

    Data from the prior; one instance in four at the model's priors, ``K = 3``, 12 rows of 30
    tokens over 12 words (separation 0.5), the others at ``eta = max(eta, HARD_ETA)``, ``K = 2``,
    20 rows of 15 tokens over 20 words (not separated: several local optima). ``method`` runs
    ``n_init = 8`` starts from an integer seed (:func:`hard_certificate`).
    """
    from latentzoo.inference.validation import certified

    checks = []
    for number in range(HARD_INSTANCES):
        if number % 4 == 0:
            instance = OneSidedClustering(3, alpha=model.alpha, eta=model.eta)
            sizes = {"n_docs": 12, "n_words": 12, "doc_length": 30, "separation": 0.5}
        else:
            instance = OneSidedClustering(2, alpha=model.alpha, eta=max(model.eta, HARD_ETA))
            sizes = {"n_docs": 20, "n_words": 20, "doc_length": 15, "separation": 0.0}
        data, _ = instance.simulate(rng, **sizes)
        checks.append(certified(_hard_fit_and_certify, method, instance, data, rng))
    return checks


def _hard_fit_and_certify(method, model, data, rng) -> list:
    result = method(model, data, max_iter=200, n_init=8, random_state=int(rng.integers(2**31)))
    return hard_certificate(model, data, result, method)


# ------------------------------------------------------------------------------ the family
def validation_recipe():
    """How :func:`latentzoo.validate` checks the ACM's methods (a ``ValidationRecipe``)."""
    from latentzoo.inference.recipes import one_sided

    # The optimality level also certifies the hard method on this family's instances.
    return dataclasses.replace(one_sided(OneSidedGibbs), hard_instances=hard_instances)


FAMILY = Family(
    name="one_sided",
    model=OneSidedClustering,
    methods={
        "hard": Method(
            hard_acm,
            hard_options(
                integer("n_init", 1, "random starts; the best is kept"),
                anything("init", None, "starting parameters (dict), instead of random starts"),
            ),
        ),
        "annealed_em": Method(
            annealed_em,
            with_defaults((*SCHEDULE_OPTIONS, THREADS), annealed_em.defaults),
            blocks=OneSidedBlocks,
        ),
        "gibbs": Method(gibbs, GIBBS_METHOD_OPTIONS),
    },
    recipe=validation_recipe,
    sizes=("n_components",),
    dataset="reuters",
    notebook="notebooks/clustering_models.ipynb",
    description="one-sided clustering / ACM, a Dirichlet-multinomial mixture (sec. 3.1-3.2)",
)
"""The one-sided clustering model's family (listed in :mod:`latentzoo.zoo`)."""
