"""Fast inference for the hierarchical Cluster-Abstraction Model: annealed EM, tree growth, Gibbs.

**Annealed EM** (Hofmann & Puzicha 1998, eq. (52)-(58), tempered as eq. (60)). The E-step at
inverse temperature ``beta`` is

    <I_ia> ∝ rho_a P(S_i | a)**beta,          P(S_i | a) = prod_j mix_i[a, j]**n_ij,     (55)
    <V_{r nu|a}> = tau_{nu|a,i} q_{j(r)|nu} / mix_i[a, j(r)],                             (53)

with ``mix_i[a, j] = sum_{nu ↑ a} tau_{nu|a,i} q_{j|nu}``; only the likelihood of the horizontal
choice is tempered (as for the ACM, eq. (60)), the vertical posteriors are the exact conditionals.
The MAP M-step, ``rho_a ∝ sum_i <I_ia> + alpha - 1`` (56), ``q_{j|nu} ∝ sum_i n_ij sum_a <I_ia>
<V_{nu|a}> + eta - 1`` (57), ``tau_{nu|a(,i)} ∝ sum <I_ia> n_ij <V_{nu|a}> + gamma - 1`` (58), is
the exact maximiser of the bound

    F_beta = -(1/beta) [sum_i log sum_a rho_a P(S_i|a)**beta + (alpha - 1) sum_a log rho_a]
             - (eta - 1) sum log q - (gamma - 1) sum log tau,

whose value at the E-step optimum is reported as the free energy; each E/M pass is a
minorise-maximise step of ``-F_beta``, so ``F_beta`` never increases at fixed ``beta``. At
``beta = 1`` it is the negative log posterior up to a constant; with ``tau`` the delta on the leaf
it is the ACM's free energy, and the passes are the ACM's.

**Shared tau** (``"leaf"`` and ``"constant"``): the vertical posteriors depend on the word and the
leaf only, not on the observation (section 4.2), so the E-step needs them per ``(word, leaf)``:
the leaf mixtures ``mix[a, j] = sum_l tau[a, l] q[path(a, l), j]``, then the ACM's fused numba pass
over the non-zeros with ``log mix`` in place of ``log q``
(:func:`~latentzoo.inference.em.multinomial_mixture_pass`: no ``nnz x K`` array), which returns the
expected counts ``c[a, j] = sum_i n_ij <I_ia>``; the node counts ``n_q[nu, j] = sum_a c[a, j]
tau[a, l(nu)] q[nu, j] / mix[a, j]`` and the level counts (their sums over ``j``) follow. Both
dense loops cost ``K x L x M`` whatever the number of observations, so an iteration costs little
more than the ACM's with ``K`` clusters (measured on Reuters with a depth-4 binary tree: 1.2-1.6x
an ACM iteration with 16 clusters).

**Object-specific tau**: one fused numba pass over the non-zeros computes ``mix_i`` per cell and
leaf on the fly (twice, so nothing of size ``nnz x K`` is stored).

**Three-stage strategy** (section 4.2): :func:`three_stage_em` fits ``tau`` constant, then shared
per leaf, then (if asked) per object, each stage starting from the previous one.

**Tree growth by phase transitions** (section 5.1): :func:`grow_tree` anneals the horizontal
clusters from one cluster, duplicating every cluster with a small perturbation at each temperature;
a pair of copies that separates (L1 distance of their word distributions above a threshold, each
holding documents) is a split and is recorded as two children of the cluster's node, a pair that
does not is merged back. The phase diagram is the topology; the HACM is then fitted on it.

**Collapsed Gibbs** over the leaf of every document and the level of every observation, with
``rho``, ``q`` and ``tau`` integrated out (Dirichlet-multinomial predictives); each document's leaf
is drawn given the levels of its observations (a level is a depth, so it keeps its meaning when
the leaf changes), then each observation's level given everything else, then a Metropolis-Hastings
jump of the document to a random leaf with levels drawn afresh (so documents also move between
leaves of different depths, which the first update cannot do). Runs through the shared
chain runner (:mod:`latentzoo.inference.mcmc`); the posterior holds the variables of
:meth:`ClusterAbstractionModel.pymc_model`.
"""

from __future__ import annotations

import dataclasses
import itertools
import math
import time
from typing import NamedTuple

import numba as nb
import numpy as np
import pandas as pd

from latentzoo.data import CoOccurrence
from latentzoo.data.checks import as_rng
from latentzoo.inference.annealing import (
    EMResult,
    EMStats,
    GeometricCooling,
    check_map_priors,
    em_entry,
    normalise_rows,
    run_schedule,
)
from latentzoo.inference.collapsed_gibbs import CollapsedGibbs
from latentzoo.inference.em import (
    FASTMATH,
    kl_kmeans_plus_plus,
    multinomial_mixture_pass,
    row_e_step,
)
from latentzoo.inference.family import (
    GIBBS_METHOD_OPTIONS,
    SCHEDULE_OPTIONS,
    THREADS,
    Family,
    Method,
    anything,
    integer,
    with_defaults,
)
from latentzoo.inference.mcmc import (
    dirichlet_rows,
    draw_log_weights,
    gibbs_data,
    gibbs_entry,
    keep_params_auto,
    next_uniform,
    splitmix_seeds,
)
from latentzoo.inference.one_sided import (
    OneSidedEM,
    RowMixtureBlocks,
    check_row_mixture_em,
    final_responsibilities,
    row_mixture_gibbs_setup,
    row_mixture_m_step,
)
from latentzoo.inference.progress import progress_bar
from latentzoo.inference.results import PointEstimate
from latentzoo.models._checks import check_integer, check_interval
from latentzoo.models.cluster_abstraction import ClusterAbstractionModel, TopicTree
from latentzoo.models.conjugate import dirichlet_multinomial_log
from latentzoo.models.one_sided import OneSidedClustering

__all__ = [
    "ClusterAbstractionEM",
    "ClusterAbstractionGibbs",
    "GrowthResult",
    "LeafJumpInfo",
    "enumerated_posterior",
    "annealed_em",
    "gibbs",
    "grow_tree",
    "hacm_em_pass",
    "plot_tree",
    "three_stage_certificate",
    "three_stage_em",
    "top_words",
    "word_node_distribution",
]

_FORM_CODE = {"constant": 0, "leaf": 1, "object": 2}


# ---------------------------------------------------------------------------- EM kernels
@nb.njit(cache=True, nogil=True, fastmath=FASTMATH)
def _object_pass(indptr, indices, counts, q_t, paths, lengths, tau, log_rho, beta, resp, acc_q,
                 n_tau, mix):  # fmt: skip
    """Fused E/M over all rows for the object-specific ``tau``.

    ``q_t`` is ``M x n_nodes``. Writes the tempered ``<I_ia>`` into ``resp``, adds
    ``n_ij <I_ia> <V_{nu|a}>`` into ``acc_q[j, nu]`` and into ``n_tau[i, a, l]``; returns
    ``(sum_i log sum_a rho_a P(S_i|a)**beta, sum_i log P(S_i))``. ``mix`` is a buffer of one
    row's mixtures (longest row's non-zeros x K), reused by the M-step half of the row.
    """
    n_rows = indptr.shape[0] - 1
    n_leaves = paths.shape[0]
    s = np.empty(n_leaves)
    energy = 0.0
    loglik = 0.0
    for i in range(n_rows):
        for k in range(n_leaves):
            s[k] = 0.0
        start, stop = indptr[i], indptr[i + 1]
        for p in range(start, stop):
            j = indices[p]
            n = counts[p]
            for k in range(n_leaves):
                m = 0.0
                for level in range(lengths[k]):
                    m += tau[i, k, level] * q_t[j, paths[k, level]]
                mix[p - start, k] = m
                s[k] += n * np.log(m)
        energy, loglik, possible = row_e_step(s, log_rho, beta, resp[i], energy, loglik)
        if not possible:
            continue
        posterior = resp[i]
        for p in range(start, stop):
            j = indices[p]
            n = counts[p]
            for k in range(n_leaves):
                m = mix[p - start, k]
                if posterior[k] == 0.0 or m <= 0.0:
                    continue
                scale = n * posterior[k] / m
                for level in range(lengths[k]):
                    node = paths[k, level]
                    share = scale * tau[i, k, level] * q_t[j, node]
                    acc_q[j, node] += share
                    n_tau[i, k, level] += share
    return energy, loglik


@nb.njit(cache=True, nogil=True, fastmath=FASTMATH)
def _leaf_mixtures(q, tau, paths, lengths):
    """``mix[a, j] = sum_l tau[a, l] q[path(a, l), j]`` (K x M): the bracket of eq. (55).

    A loop over the (leaf, level) pairs with the words innermost (contiguous rows of ``q``); the
    same sums as ``D.T @ q`` without a BLAS call, whose threads cost more than the product on
    these small matrices and whose rounding would depend on the thread count.
    """
    n_leaves = paths.shape[0]
    n_cols = q.shape[1]
    mix = np.zeros((n_leaves, n_cols))
    for a in range(n_leaves):
        for level in range(lengths[a]):
            weight = tau[a, level]
            node = paths[a, level]
            for j in range(n_cols):
                mix[a, j] += weight * q[node, j]
    return mix


@nb.njit(cache=True, nogil=True, fastmath=FASTMATH)
def _shared_counts(q, tau, paths, lengths, mix, c_leaf):
    """Node and level counts from the per-(leaf, word) expected counts ``c_leaf`` (K x M).

    ``n_q[nu, j] = sum_{a below nu} c[a, j] tau[a, l(nu)] q[nu, j] / mix[a, j]`` (eq. (53) summed
    over the leaf's documents, (57)) and ``n_tau[a, l] = sum_j`` of the same terms (58).
    """
    n_leaves = paths.shape[0]
    n_cols = q.shape[1]
    n_q = np.zeros(q.shape)
    n_tau = np.zeros(tau.shape)
    ratio = np.empty(n_cols)
    for a in range(n_leaves):
        for j in range(n_cols):
            ratio[j] = c_leaf[a, j] / mix[a, j] if mix[a, j] > 0.0 else 0.0
        for level in range(lengths[a]):
            weight = tau[a, level]
            node = paths[a, level]
            total = 0.0
            for j in range(n_cols):
                share = weight * q[node, j] * ratio[j]
                n_q[node, j] += share
                total += share
            n_tau[a, level] = total
    return n_q, n_tau


def _normalise_tau(counts, pseudo, valid):
    """MAP update of ``tau`` over each path: ``(counts + pseudo) / sum``; uniform where empty."""
    numer = np.where(valid, counts + pseudo, 0.0)
    totals = numer.sum(axis=-1, keepdims=True)
    uniform = valid / valid.sum(axis=-1, keepdims=True)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(totals > 0, numer / totals, uniform)


def hacm_em_pass(model: ClusterAbstractionModel, data: CoOccurrence, params, beta=1.0,
                 n_threads=1, counts=None):  # fmt: skip
    """One fused E/M pass of the HACM; the computational core, exposed for benchmarks.

    Parameters
    ----------
    model : ClusterAbstractionModel
    data : CoOccurrence
    params : dict with ``rho``, ``q`` and ``tau``
    beta : float
        Inverse temperature of the horizontal E-step, eq. (60).
    n_threads : int
        Threads of the fused pass over the non-zeros (shared ``tau`` only).
    counts : float64 array, optional
        ``data.counts.data`` as float (saves a copy per pass).

    Returns
    -------
    resp : (N, K) tempered ``<I_ia>``
    n_q : (n_nodes, M) expected counts of every node's words, eq. (57)
    n_tau : expected level counts (shape of ``tau``; zeros for ``"constant"``), eq. (58)
    energy : float
        ``sum_i log sum_a rho_a P(S_i|a)**beta``.
    loglik : float
        ``sum_i log P(S_i)``.

    Examples
    --------
    >>> from latentzoo.data import load
    >>> model = ClusterAbstractionModel(1)
    >>> params = {"rho": np.full(2, 0.5), "q": np.random.default_rng(0).dirichlet(np.ones(8), 3),
    ...           "tau": model.default_tau()}
    >>> resp, n_q, n_tau, energy, ll = hacm_em_pass(model, load("toy"), params)
    >>> bool(np.isclose(n_q.sum(), load("toy").total)), bool(np.isclose(n_tau.sum(), n_q.sum()))
    (True, True)
    """
    tree = model.tree
    rho = np.asarray(params["rho"], dtype=np.float64)
    q = np.asarray(params["q"], dtype=np.float64)
    tau = np.asarray(params["tau"], dtype=np.float64)
    if counts is None:
        counts = data.counts.data.astype(np.float64)
    with np.errstate(divide="ignore"):
        log_rho = np.log(rho)
    if model.tau == "object":
        csr = data.counts
        resp = np.empty((data.n_rows, tree.n_leaves))
        acc_q = np.zeros((data.n_cols, tree.n_nodes))
        n_tau = np.zeros_like(tau)
        energy, loglik = _object_pass(
            csr.indptr, csr.indices, counts, np.ascontiguousarray(q.T),
            np.ascontiguousarray(tree.paths), tree.path_lengths.astype(np.int64),
            np.ascontiguousarray(tau), log_rho, float(beta), resp, acc_q, n_tau,
            np.empty((int(np.diff(csr.indptr).max(initial=0)), tree.n_leaves)),
        )  # fmt: skip
        return resp, acc_q.T.copy(), n_tau, float(energy), float(loglik)
    paths = np.ascontiguousarray(np.where(tree.paths >= 0, tree.paths, 0))
    lengths = tree.path_lengths.astype(np.int64)
    mix = _leaf_mixtures(q, tau, paths, lengths)  # (K, M)
    with np.errstate(divide="ignore"):
        log_mix_t = np.ascontiguousarray(np.log(mix).T)
    resp, c_leaf, energy, loglik = multinomial_mixture_pass(
        data, log_rho, log_mix_t, beta, n_threads, counts
    )
    n_q, n_tau = _shared_counts(q, tau, paths, lengths, mix, c_leaf)
    if model.tau == "constant":
        n_tau[:] = 0.0
    return resp, n_q, n_tau, float(energy), float(loglik)


def _check_fixed_tau(model, tau):
    """Validate the fixed level weights of the ``"constant"`` form (shape, simplex, padding)."""
    tree = model.tree
    tau = np.asarray(tau, dtype=float)
    shape = (tree.n_leaves, tree.n_levels)
    if tau.shape != shape:
        raise ValueError(f"tau has shape {tau.shape}, expected {shape} (leaves x levels)")
    valid = tree.paths >= 0
    if not np.all(np.isfinite(tau)) or np.any(tau < 0) or np.any(tau[~valid] != 0):
        raise ValueError("tau must be finite, non-negative and zero at levels below a leaf's depth")
    if not np.allclose(tau.sum(axis=1), 1.0, atol=1e-6):
        raise ValueError("every row of tau must sum to one (a distribution over the path)")
    return tau


def initial_params(model: ClusterAbstractionModel, data: CoOccurrence, rng, tau=None) -> dict:
    """The EM's start: leaves seeded as the ACM's (k-means++ in KL divergence), inner nodes the
    mean of the leaves below them, uniform ``rho``, and ``tau`` uniform over each path (or the
    given fixed ``tau``).

    With the same generator the leaves' ``q`` are exactly the ACM's start
    (:class:`~latentzoo.inference.one_sided.OneSidedEM`), so with ``tau`` the delta on the leaf
    both EMs run the same iterates.

    Examples
    --------
    >>> from latentzoo.data import load
    >>> params = initial_params(ClusterAbstractionModel(1), load("toy"), np.random.default_rng(0))
    >>> params["q"].shape, params["tau"].shape
    ((3, 8), (2, 2))
    """
    tree = model.tree
    leaf_q = kl_kmeans_plus_plus(data, tree.n_leaves, rng)["q"]
    below = tree.path_matrix().astype(float)  # (n_nodes, K)
    q = (below @ leaf_q) / below.sum(axis=1, keepdims=True)
    q[tree.leaves] = leaf_q
    if tau is None:
        tau = model.default_tau(data.n_rows)
    return {
        "rho": np.full(tree.n_leaves, 1.0 / tree.n_leaves),
        "q": q,
        "tau": np.array(tau, dtype=float),
    }


class ClusterAbstractionEM:
    """The HACM's :class:`~latentzoo.inference.annealing.EMProblem` on one data set.

    MAP estimation under the model's Dirichlet priors; ``free_energy`` is the ``F_beta`` of the
    module docstring (Dirichlet normalising constants left out), which a pass never increases at
    fixed ``beta``. The parameters carry ``resp``, the E-step posteriors of the pass that produced
    them (the predictive (59) of held-out data uses them).

    Parameters
    ----------
    model : ClusterAbstractionModel
    data : CoOccurrence
    n_threads : int
        Threads of the pass over the non-zeros (shared ``tau``).
    tau : (K, L) array, optional
        Fixed level weights for the ``"constant"`` form (default: uniform over each path). The
        delta on the leaf turns the HACM into the ACM.
    init : dict, optional
        Start from these parameters (``rho``, ``q``, ``tau``) instead of the random seeding.

    Examples
    --------
    >>> from latentzoo.data import load
    >>> problem = ClusterAbstractionEM(ClusterAbstractionModel(1), load("toy"))
    >>> params = problem.init(np.random.default_rng(0))
    >>> new, stats = problem.step(params, 0.5)
    >>> sorted(new), new["tau"].sum(axis=1).tolist(), bool(stats.free_energy > 0)
    (['q', 'resp', 'rho', 'tau'], [1.0, 1.0], True)
    """

    monotone = True

    def __init__(self, model: ClusterAbstractionModel, data: CoOccurrence, n_threads: int = 1,
                 tau=None, init=None):  # fmt: skip
        check_map_priors(model, method="EM")
        self.model = model
        self.data = data
        self.n_threads = n_threads
        self.counts = data.counts.data.astype(np.float64)
        self.valid = model.tree.paths >= 0
        if tau is not None:
            if model.tau != "constant":
                raise ValueError(
                    f"tau fixes the level weights of the 'constant' form; this model estimates "
                    f"them (tau={model.tau!r})"
                )
            tau = _check_fixed_tau(model, tau)
        self.fixed_tau = tau
        if init is not None:
            if not isinstance(init, dict) or not {"rho", "q", "tau"} <= set(init):
                raise ValueError(f"init must be a dict with rho, q and tau, got {init!r}")
            rho, q, tau0 = model.check_params(init, data)
            if self.fixed_tau is not None:
                tau0 = self.fixed_tau
            init = {"rho": rho.copy(), "q": q.copy(), "tau": np.array(tau0, dtype=float)}
        self.start = init

    def init(self, rng: np.random.Generator) -> dict:
        """Starting parameters (:func:`initial_params`, or ``init``) and their posteriors.

        Examples
        --------
        >>> from latentzoo.data import load
        >>> problem = ClusterAbstractionEM(ClusterAbstractionModel(1), load("toy"))
        >>> problem.init(np.random.default_rng(0))["resp"].shape
        (6, 2)
        """
        if self.start is not None:
            params = {name: value.copy() for name, value in self.start.items()}
        else:
            params = initial_params(self.model, self.data, rng, self.fixed_tau)
        params["resp"] = self.model.responsibilities(params, self.data)
        return params

    def step(self, params, beta):
        """One fused E/M pass: the M-step estimate and the ``EMStats`` of ``params``."""
        model = self.model
        rho = np.asarray(params["rho"], dtype=float)
        q = np.asarray(params["q"], dtype=float)
        tau = np.asarray(params["tau"], dtype=float)
        resp, n_q, n_tau, energy, loglik = hacm_em_pass(
            model, self.data, {"rho": rho, "q": q, "tau": tau}, beta, self.n_threads, self.counts
        )
        with np.errstate(divide="ignore"):
            new_rho, new_q, free = row_mixture_m_step(
                model, np.log(rho), np.log(q), resp.sum(axis=0), n_q, energy, beta,
                _tau_log_prior(model, tau),
            )  # fmt: skip
        new = {"rho": new_rho, "q": new_q, "tau": _tau_m_step(model, tau, n_tau), "resp": resp}
        return new, EMStats(float(free), float(loglik))

    def order_parameter(self, params, tol: float = 1e-3) -> int:
        """The number of distinct leaf mixtures ``mix[a] = sum_l tau_{l|a} q_{path(a, l)}``.

        Distinct in L1 distance above ``tol`` (the object form's ``tau`` averaged over rows). The
        leaves' own ``q`` may differ while their mixtures coincide (the root absorbs what they
        share), so the mixtures, the documents' word distributions, are what splits at a phase
        transition.

        Examples
        --------
        >>> from latentzoo.data import load
        >>> model = ClusterAbstractionModel(1)
        >>> problem = ClusterAbstractionEM(model, load("toy"))
        >>> problem.order_parameter({"q": np.full((3, 8), 1 / 8), "tau": model.default_tau()})
        1
        """
        tree = self.model.tree
        tau = np.asarray(params["tau"], dtype=float)
        if tau.ndim == 3:
            tau = tau.mean(axis=0)
        paths = np.ascontiguousarray(np.where(tree.paths >= 0, tree.paths, 0))
        mix = _leaf_mixtures(np.asarray(params["q"], dtype=float), tau, paths,
                             tree.path_lengths.astype(np.int64))  # fmt: skip
        return OneSidedEM.order_parameter({"q": mix}, tol)


def _tau_log_prior(model: ClusterAbstractionModel, tau) -> float:
    """``(gamma - 1) sum log tau`` over the levels of each path (0 for the fixed ``"constant"``
    form): the level weights' side of ``F_beta``; ``tau`` of one row block for the object form."""
    if model.tau == "constant" or model.gamma == 1.0:
        return 0.0
    with np.errstate(divide="ignore"):
        return (model.gamma - 1.0) * np.log(tau[..., model.tree.paths >= 0]).sum()


def _tau_m_step(model: ClusterAbstractionModel, tau, n_tau):
    """The MAP level weights from their expected counts (kept as they are for ``"constant"``)."""
    if model.tau == "constant":
        return tau
    return _normalise_tau(n_tau, model.gamma - 1.0, model.tree.paths >= 0)


@dataclasses.dataclass(frozen=True)
class ClusterAbstractionBlocks(RowMixtureBlocks):
    """The HACM's :class:`~latentzoo.inference.one_sided.RowMixtureBlocks`: each block's pass is
    :func:`hacm_em_pass` on the block, the M-step that of :class:`ClusterAbstractionEM`. The
    object form's ``tau`` (one per row) stays with its block, updated there; the shared forms'
    ``tau`` is on the word side, its expected counts summed over the blocks. ``tau`` and
    ``init`` as for :func:`annealed_em`."""

    tau: object = dataclasses.field(default=None, compare=False)
    init: object = dataclasses.field(default=None, compare=False)

    def __post_init__(self):
        _check_gamma(self.model)
        if self.model.tau == "object":
            object.__setattr__(self, "row_names", ("resp", "tau"))

    def problem(self, data):
        return ClusterAbstractionEM(self.model, data, tau=self.tau, init=self.init)

    def globals_of(self, params):
        return {name: params[name] for name in ("rho", "q", "tau") if name in params}

    @staticmethod
    def finish_result(result):
        """The tree's plot, as :func:`annealed_em`'s result draws it."""
        result.plot = plot_tree
        return result

    def pass_of(self, block, rows, shared, beta):
        per_row = self.model.tau == "object"
        tau = rows["tau"] if per_row else shared["tau"]
        params = {"rho": shared["rho"], "q": shared["q"], "tau": tau}
        resp, n_q, n_tau, energy, loglik = hacm_em_pass(
            self.model, block, params, beta, self.n_threads
        )
        if per_row:
            new_rows = {"tau": _tau_m_step(self.model, tau, n_tau)}
            return (
                resp,
                n_q,
                energy,
                loglik,
                new_rows,
                {"tau_prior": _tau_log_prior(self.model, tau)},
            )
        return resp, n_q, energy, loglik, {}, {"n_tau": n_tau}

    def word_side(self, params, stats, beta):
        rho, q = params["rho"], params["q"]
        if self.model.tau == "object":
            prior, word_side = stats["tau_prior"], {}
        else:
            tau = params["tau"]
            prior = _tau_log_prior(self.model, tau)
            word_side = {"tau": _tau_m_step(self.model, tau, stats["n_tau"])}
        with np.errstate(divide="ignore"):
            return np.log(rho), np.log(q), stats["n_q"], prior, word_side


def _check_gamma(model: ClusterAbstractionModel) -> None:
    if model.tau != "constant" and model.gamma < 1:
        raise ValueError(
            f"EM computes the MAP estimate, which needs gamma >= 1 (got gamma={model.gamma}); "
            "use method='gibbs' for sparse priors"
        )


def _check_em_options(model, data, schedule, problem_options):
    if not isinstance(model, ClusterAbstractionModel):
        raise ValueError(f"model must be a ClusterAbstractionModel, got {type(model).__name__}")
    check_row_mixture_em(model, data, schedule, problem_options)
    _check_gamma(model)


def _final_responsibilities(model, data, result):
    """:func:`~latentzoo.inference.one_sided.final_responsibilities`, and the tree's plot."""
    result = final_responsibilities(model, data, result)
    # What the fit's figure() draws: the top levels of the tree (Fig. 9).
    return ClusterAbstractionBlocks.finish_result(result)


annealed_em = em_entry(
    ClusterAbstractionEM,
    """Fit the HACM on a fixed tree by annealed EM (Hofmann & Puzicha 1998, eq. (52)-(58), (60)).

    Parameters
    ----------
    model : ClusterAbstractionModel
    data : CoOccurrence
    n_threads : int
        Threads of the fused pass (shared ``tau``; 1: serial).
    tau : (K, L) array, optional
        Fixed level weights of the ``"constant"`` form (default uniform over each path).
    init : dict, optional
        Starting ``rho``, ``q``, ``tau`` (e.g. a previous fit's ``params``).
    **schedule
        ``betas`` (default ``"auto"``), ``max_iter``, ``tol``, ``overrelax``, ``random_state``,
        ``validation_fraction``, ``beta_decay``, ``min_beta``, ``min_iter``, ``patience``,
        ``score_tol``, ``beta_patience``, ``progressbar``: the annealing schedule, documented once
        in :func:`~latentzoo.inference.annealing.annealed_fit`, except that ``"auto"`` restarts
        EM from one start at each candidate inverse temperature ``1, beta_decay, beta_decay**2,
        ...`` down to ``min_beta`` (the early-stopping rule, ``min_iter`` included, at each;
        ``restart`` of :func:`~latentzoo.inference.annealing.tempered_schedule`), keeps the
        candidate of lowest validation perplexity and replays it from that start on all of
        ``data``. Family defaults as for the ACM (``beta_decay=0.5``, ``min_beta=0.002``,
        ``beta_patience=6``): a document's posterior stays hard until ``beta * n_i`` is of order
        one, so the candidates must reach far below 1.

    Returns
    -------
    EMResult
        ``params``: ``rho`` (K,), ``q`` (n_nodes x M), ``tau`` and ``resp`` (N x K), the
        posteriors of the final parameters at the final ``beta``. With ``"auto"``: ``betas`` is
        the chosen inverse temperature, ``selection_trace`` every candidate's steps on the
        training part, ``stages`` says how the chosen candidate's selection ended, and the
        settings record ``selection="restarted"``.

    Notes
    -----
    Why ``"auto"`` restarts rather than running Hofmann's tempered EM, which fits at
    ``beta = 1`` and then heats, continuing from that fit: the HACM generalises best just below
    its first critical temperature (seed 000, sec. 6.1: the clustering models need "a much
    higher temperature" than the SMM), and heating keeps the local optimum that EM found at
    ``beta = 1``. Measured on Reuters (depth 3, 10% of the tokens held out, 10 seeds): EM from
    the start at a fixed ``beta`` gives held-out perplexity 2118 +- 113 at 1, 1957 +- 81 at
    1/16, 1787 +- 31 at 1/64 and 2488 +- 51 at 1/96, where every leaf has the same mixture;
    continued from the ``beta = 1`` fit, EM at 1/64 ends at a validation perplexity of 2240
    against 1891 from the start (seed 0). The tempered schedule therefore kept only the first
    one or two steps after each halving (posteriors already softened, parameters not yet
    drifted), always ended at 1/64, the last temperature before the collapse, and reached
    1939 +- 137 (restarted: 1798 +- 36).

    Examples
    --------
    >>> from latentzoo.data import load
    >>> result = annealed_em(ClusterAbstractionModel(1), load("toy"), betas=[0.8, 1.0],
    ...                      random_state=0)
    >>> z = result.params["resp"].argmax(axis=1)  # sport rows together, politics rows together
    >>> bool(len(set(z[:3])) == len(set(z[3:])) == 1 and z[0] != z[3])
    True
    """,
    defaults={"beta_decay": 0.5, "min_beta": 0.002, "beta_patience": 6},
    check=_check_em_options,
    finish=_final_responsibilities,
    restart=True,
)


def three_stage_em(model: ClusterAbstractionModel, data, **options) -> EMResult:
    """The seed's three-stage strategy: ``tau`` constant, then per leaf, then per object.

    Section 4.2: the hierarchical organisation does not depend critically on ``tau``, so the
    degrees of freedom are increased stage by stage. Stage 1 fits the ``"constant"`` form with the
    given schedule (``betas``, ``random_state`` ...); stage 2 (if ``model.tau`` is ``"leaf"`` or
    ``"object"``) the shared ``tau_{nu|alpha}`` from stage 1's fit at its final temperature;
    stage 3 (if ``"object"``) the object-specific ``tau`` from stage 2's, copied to every row.

    Parameters
    ----------
    model : ClusterAbstractionModel
        Its ``tau`` is the last stage's form.
    data : CoOccurrence
    **options
        As for :func:`annealed_em`; the later stages use ``max_iter``, ``tol``, ``overrelax``
        and ``n_threads`` at the final inverse temperature of stage 1.

    Returns
    -------
    EMResult
        The last stage's fit; ``trace`` and ``stages`` hold every stage, labelled by the
        ``tau_form`` column, ``method="three_stage_em"``.

    Examples
    --------
    >>> from latentzoo.data import load
    >>> result = three_stage_em(ClusterAbstractionModel(1, tau="object"), load("toy"),
    ...                         betas=[1.0], random_state=0)
    >>> result.trace["tau_form"].unique().tolist(), result.params["tau"].shape
    (['constant', 'leaf', 'object'], (6, 2, 2))
    """
    if not isinstance(model, ClusterAbstractionModel):
        raise ValueError(f"model must be a ClusterAbstractionModel, got {type(model).__name__}")
    data = model.check_data(data)
    forms = ("constant", "leaf", "object")[: ("constant", "leaf", "object").index(model.tau) + 1]
    later = {name: options[name] for name in ("max_iter", "tol", "overrelax", "n_threads",
                                              "progressbar") if name in options}  # fmt: skip
    traces, stages, seconds, betas = [], [], 0.0, []
    result = None
    for form in forms:
        stage_model = dataclasses.replace(model, tau=form)
        if result is None:
            result = annealed_em(stage_model, data, **options)
        else:
            tau = result.params["tau"]
            if form == "object":
                tau = np.broadcast_to(tau, (data.n_rows, *tau.shape)).copy()
            start = {"rho": result.params["rho"], "q": result.params["q"], "tau": tau}
            result = annealed_em(stage_model, data, init=start, betas=[result.betas[-1]], **later)
        traces.append(result.trace.assign(tau_form=form))
        if result.stages is not None:
            stages.append(result.stages.assign(tau_form=form))
        seconds += result.seconds
        betas.extend(result.betas)
    result.trace = pd.concat(traces, ignore_index=True)
    result.stages = pd.concat(stages, ignore_index=True) if stages else None
    result.seconds = seconds
    result.betas = betas
    result.method = "three_stage_em"
    result.model = model
    return result


# ------------------------------------------------- certificate of the three-stage strategy
THREE_STAGE_INSTANCES = 8
"""Instances of the optimality level's ``three_stage`` check (:func:`three_stage_instances`),
alternately ``tau="leaf"`` (two stages) and ``"object"`` (three)."""

THREE_STAGE_DATA = {"n_docs": 8, "n_words": 10, "doc_length": 8}
"""Each instance's data, drawn from the prior (not separated). Short documents keep the
posteriors ``<I_ia>`` soft at :data:`THREE_STAGE_BETA` (on separated data of 20 tokens a row they
are hard at ``beta = 1/2`` and at 1 alike, and a later stage run at ``beta = 1`` ends at a fixed
point of the ``beta = 1/2`` map as well). Measured over the level's 160 instances at seeds 0-19:
2 collapsed to one leaf mixture; later stages run at ``beta = 1`` failed the fixed-point check on
159 (the temperature check on all), later stages stopped at the default ``tol`` on all 160 (by at
least 1.07 times its tolerance; the stopping-rule check by at least 2.2 times ``tol``)."""

THREE_STAGE_BETA = 0.5
"""Stage 1's schedule ``betas=[0.5]``: its final inverse temperature, at which the later stages
must run; below 1, so that a later stage run at ``beta = 1`` ends elsewhere."""

THREE_STAGE_TOL = 1e-8
"""The ``tol`` the check passes (every stage's relative free-energy change at its stop), far
below the default ``1e-5`` that a stage ignoring it would stop at; ``max_iter`` is
:data:`THREE_STAGE_MAX_ITER` (the stages needed at most about 1,300 iterations)."""

THREE_STAGE_MAX_ITER = 20_000

THREE_STAGE_FIXED_POINT = 2.0
"""Tolerance of the fixed-point check in units of ``tol``: the stopping rule bounds the last
measured relative change by ``tol``, the returned iterate is one EM step past it and EM's
decrements shrink near a fixed point (linear convergence), so one more step lowers ``F_beta`` by
less than ``tol``; measured at most 0.997 ``tol`` over 220 instances (the rate is close to 1 on
these small problems), hence the factor 2."""

MONOTONE_TOL = 1e-12
"""Largest relative rise of the free energy between two iterations of a stage counted as rounding
(``F_beta`` is about 100-200 on the instances; rounding of a pass is about 1e-14 of it)."""


def _stage_groups(trace):
    """The trace's rows of each temperature of each stage, in order: ``(form, beta, F)``."""
    groups = trace.groupby(["tau_form", "beta"], sort=False)["free_energy"]
    return [(form, beta, values.to_numpy()) for (form, beta), values in groups]


def three_stage_certificate(model: ClusterAbstractionModel, data, result, betas, tol) -> list:
    """Checks of a :func:`three_stage_em` result run with ``betas`` and ``tol``, from its
    parameters through the family's own E/M step (eq. (53)-(58), tempered as eq. (60)), and from
    its trace (section 4.2's three-stage strategy).

    - *stages*: the trace holds the stages ``"constant"``, ``"leaf"`` (, ``"object"``) in this
      order, up to the form of ``model.tau``;
    - *temperature*: every later stage ran at ``betas[-1]``, stage 1's final inverse temperature
      (read from the schedule the caller passed, not from the result's ``betas``);
    - *tolerance*: every temperature of every stage ended by the stopping rule at ``tol``: its
      last relative change of ``F_beta`` in the trace is below ``tol``;
    - *monotone*: ``F_beta`` never rises within a temperature of a stage (EM is a
      minorise-maximise step of ``-F_beta``), nor at the hand-over from the constant to the
      per-leaf ``tau`` by more than the prior ``-(gamma - 1) sum log tau`` the leaf stage adds at
      the uniform ``tau`` (a later hand-over adds that prior at a ``tau`` the result does not
      return: not checked);
    - *fixed point*: the returned parameters have the shapes of ``model.tau``'s form, and one
      more E/M pass of :class:`ClusterAbstractionEM` at ``betas[-1]`` lowers ``F_beta`` by at
      most :data:`THREE_STAGE_FIXED_POINT` ``tol`` (relative). Parameters fitted at another
      ``beta``, with a stage left out or stopped at a looser ``tol`` are no such point.

    Each :class:`~latentzoo.inference.checks.Check` holds its ``violation`` and ``tolerance``.
    """
    from latentzoo.inference.validation import hard_check

    final = float(betas[-1])
    forms = ["constant", "leaf", "object"][: ["constant", "leaf", "object"].index(model.tau) + 1]
    run = list(dict.fromkeys(result.trace["tau_form"]))
    missing = sum(a != b for a, b in itertools.zip_longest(run, forms))
    later = result.trace.loc[result.trace["tau_form"] != "constant", "beta"].to_numpy()
    groups = _stage_groups(result.trace)
    stops = [
        abs(f[-2] - f[-1]) / max(abs(f[-1]), 1e-300) if len(f) > 1 else np.inf for _, _, f in groups
    ]
    rises = [np.max(np.diff(f) / np.abs(f[:-1]), initial=0.0) for _, _, f in groups]
    ends = {form: f for form, beta, f in groups if beta == final}
    if "constant" in ends and "leaf" in ends:
        uniform = dataclasses.replace(model, tau="leaf")
        added = -_tau_log_prior(uniform, uniform.default_tau())
        last = ends["constant"][-1]
        rises.append((ends["leaf"][0] - last - added) / abs(last))
    checks = [
        hard_check("three_stage fits tau constant, then per leaf, then per object (sec. 4.2)",
                   missing, f"stages missing or out of order ({', '.join(run)} run)", 0.0),
        hard_check("three_stage's later stages run at stage 1's final beta",
                   np.max(np.abs(later - final), initial=0.0),
                   f"largest |beta - {final:g}| of the later stages' iterations", 0.0),
        hard_check("every stage of three_stage stops at the tol passed",
                   max(stops), "largest last relative change of F_beta of a stage", tol),
        hard_check("three_stage's free energy never rises within a stage",
                   max(rises), "largest relative rise of F_beta", MONOTONE_TOL),
    ]  # fmt: skip
    checks.append(_fixed_point_check(model, data, result.params, final, tol))
    return checks


def _fixed_point_check(model, data, params, beta, tol):
    """:func:`three_stage_certificate`'s fixed-point check: the relative decrease of ``F_beta``
    by one more :class:`ClusterAbstractionEM` pass at ``beta`` from ``params``."""
    from latentzoo.inference.validation import hard_check

    name = "three_stage returns a fixed point of its last stage's EM at stage 1's final beta"
    shape = np.shape(params["tau"])
    if shape != model.tau_shape(data.n_rows):
        what = f"tau of shape {shape}, not {model.tau}'s {model.tau_shape(data.n_rows)}"
        return hard_check(name + " (eq. (53)-(58))", np.inf, what, THREE_STAGE_FIXED_POINT * tol)
    problem = ClusterAbstractionEM(model, data)
    start = {key: np.asarray(params[key], dtype=float) for key in ("rho", "q", "tau")}
    following, before = problem.step(start, beta)
    _, after = problem.step(following, beta)
    decrease = (before.free_energy - after.free_energy) / abs(before.free_energy)
    return hard_check(
        name + " (eq. (53)-(58))", max(decrease, 0.0),
        f"relative decrease of F_beta at beta = {beta:g} by one more E/M pass",
        THREE_STAGE_FIXED_POINT * tol,
    )  # fmt: skip


def three_stage_instances(method, model, rng) -> list:
    """The ``three_stage`` optimality instances, each certified: one list of checks per instance.

    :data:`THREE_STAGE_INSTANCES` data sets of :data:`THREE_STAGE_DATA` drawn from the prior of
    ``model`` (the level's depth-1 tree and priors; ``gamma`` at least 1, which EM needs), with
    ``tau="leaf"`` and ``"object"`` in turn; ``method`` runs with ``betas=[THREE_STAGE_BETA]``
    and ``tol=THREE_STAGE_TOL`` from an integer seed (:func:`three_stage_certificate`).
    """
    from latentzoo.inference.validation import certified

    checks = []
    for number in range(THREE_STAGE_INSTANCES):
        form = ("leaf", "object")[number % 2]
        instance = dataclasses.replace(model, tau=form, gamma=max(model.gamma, 1.0))
        data, _ = instance.simulate(rng, **THREE_STAGE_DATA)
        checks.append(certified(_three_stage_fit_and_certify, method, instance, data, rng,
                                name="three_stage"))  # fmt: skip
    return checks


def _three_stage_fit_and_certify(method, model, data, rng) -> list:
    betas = [THREE_STAGE_BETA]
    result = method(model, data, betas=betas, tol=THREE_STAGE_TOL, max_iter=THREE_STAGE_MAX_ITER,
                    random_state=int(rng.integers(2**31)))  # fmt: skip
    return three_stage_certificate(model, data, result, betas, THREE_STAGE_TOL)


# ------------------------------------------------------------------------------ tree growth
@dataclasses.dataclass
class GrowthResult:
    """A tree grown by phase transitions and the HACM fitted on it.

    Attributes
    ----------
    tree : TopicTree
        The phase diagram as a topology: each real split made two children of a cluster's node.
    model : ClusterAbstractionModel
        The template model on the grown tree.
    fit : EMResult
        Annealed EM of ``model`` on the tree, started from the grown clusters.
    splits : pandas.DataFrame
        One row per split: ``beta``, ``parent`` (node), ``left``, ``right`` (the new nodes) and
        ``separation`` (L1 distance of the copies' word distributions).
    stages : pandas.DataFrame
        One row per temperature of the growth: ``beta``, ``n_clusters`` after it, ``iterations``.
    """

    tree: TopicTree
    model: ClusterAbstractionModel
    fit: EMResult
    splits: pd.DataFrame
    stages: pd.DataFrame

    @property
    def labels_(self) -> np.ndarray:
        """Each document's most probable leaf (position in ``tree.leaves``).

        Examples
        --------
        >>> from latentzoo.data import load
        >>> grown = grow_tree(ClusterAbstractionModel(0), load("toy"), max_leaves=2, random_state=0)
        >>> grown.labels_.shape
        (6,)
        """
        return np.asarray(self.fit.params["resp"]).argmax(axis=1)


def _perturbed_pair(q, scale, rng):
    """Two copies of the distribution ``q``, moved apart by a relative perturbation ``scale``."""
    noise = scale * rng.uniform(-1.0, 1.0, size=q.shape)
    first, second = q * (1.0 + noise), q * (1.0 - noise)
    return first / first.sum(), second / second.sum()


def grow_tree(
    model: ClusterAbstractionModel,
    data,
    max_leaves: int = 8,
    schedule: GeometricCooling | None = None,
    *,
    split_threshold: float = 0.1,
    perturbation: float = 0.01,
    min_docs: float = 1.0,
    max_iter: int = 200,
    tol: float = 1e-7,
    final_max_iter: int = 200,
    random_state=None,
    n_threads: int = 1,
    progressbar: bool = False,
) -> GrowthResult:
    """Grow the HACM's tree by the phase transitions of annealed EM (seed 000, section 5.1).

    Start with one cluster (every document) at the first temperature of ``schedule``. At each
    temperature, duplicate every cluster (the heaviest ones while fewer than ``max_leaves``
    would result) into two copies moved apart by a relative perturbation of size
    ``perturbation``, and run annealed EM of the horizontal clusters (the ACM's E/M pass, eq.
    (60)) to convergence. Below the critical temperature of a cluster its copies fall back
    together; past it they separate. A pair whose word distributions end more than
    ``split_threshold`` apart in L1 distance, each copy holding at least ``min_docs`` expected
    documents, is a real split: the cluster's node gets the two copies as children. Other pairs
    are merged back (their weighted mean). Growth stops at ``max_leaves`` clusters or at the last
    temperature; the HACM (``model``'s priors and ``tau`` form, on the grown tree) is then fitted
    by annealed EM over the remaining temperatures, starting from the grown clusters (leaves) and
    their rho-weighted means (inner nodes).

    Parameters
    ----------
    model : ClusterAbstractionModel
        Template: its priors and ``tau`` form are used, its tree is replaced.
    data : CoOccurrence
    max_leaves : int
    schedule : GeometricCooling, optional
        Default ``GeometricCooling(beta_start=1e-3, beta_end=1.0, decay=0.8)``.
    split_threshold : float
        L1 distance (in (0, 2)) beyond which two copies count as separated.
    perturbation : float
        Relative size of the duplication noise (in (0, 1)).
    min_docs : float
        Expected documents each copy of a real split must hold.
    max_iter, tol : int, float
        EM iterations and relative free-energy tolerance per temperature.
    final_max_iter : int
        Iterations per temperature of the final HACM fit.
    random_state : int, Generator or None
    n_threads : int
    progressbar : bool

    Returns
    -------
    GrowthResult
        The grown tree, its splits and the HACM fitted on it.

    Examples
    --------
    >>> from latentzoo.data import load
    >>> grown = grow_tree(ClusterAbstractionModel(0), load("toy"), max_leaves=2, random_state=0)
    >>> grown.tree.n_leaves, grown.labels_.tolist()[:3] == [grown.labels_[0]] * 3
    (2, True)
    """
    if not isinstance(model, ClusterAbstractionModel):
        raise ValueError(f"model must be a ClusterAbstractionModel, got {type(model).__name__}")
    data = model.check_data(data)
    check_map_priors(model, method="tree growth")
    check_integer("max_leaves", max_leaves)
    if max_leaves > data.n_rows:
        raise ValueError(
            f"max_leaves={max_leaves} is larger than the data supports: only {data.n_rows} rows"
        )
    if schedule is None:
        schedule = GeometricCooling(beta_start=1e-3, beta_end=1.0, decay=0.8)
    if not isinstance(schedule, GeometricCooling):
        raise ValueError(f"schedule must be a GeometricCooling, got {schedule!r}")
    split_threshold = check_interval("split_threshold", split_threshold, 0, 2)
    perturbation = check_interval("perturbation", perturbation, 0, 1)
    min_docs = check_interval("min_docs", min_docs, 0, np.inf, closed="left")
    check_integer("max_iter", max_iter)
    check_integer("final_max_iter", final_max_iter)
    tol = check_interval("tol", tol, 0, np.inf, closed="left")
    check_integer("n_threads", n_threads)
    rng = as_rng(random_state)
    start = time.perf_counter()
    eta1 = model.eta - 1.0
    parents = [-1]
    node_of = [0]  # the tree node of every current cluster
    rho = np.ones(1)
    q = normalise_rows(data.col_totals[None, :].astype(float), eta1, data.n_cols)
    betas = schedule.betas()
    split_rows, stage_rows = [], []
    last = 0
    acm = OneSidedClustering(1, alpha=model.alpha, eta=model.eta)
    for position, beta in enumerate(
        progress_bar(betas, desc="growing the tree", progressbar=progressbar)
    ):
        last = position
        k = len(node_of)
        if k >= max_leaves:
            break
        # Heaviest clusters first (stable on ties), so the budget of leaves goes where the mass is.
        chosen = np.argsort(-rho, kind="stable")[: max_leaves - k]
        new_q, new_rho, pairs = [q[c] for c in range(k)], list(rho), []
        for c in chosen:
            first, second = _perturbed_pair(q[c], perturbation, rng)
            new_q[c] = first
            new_q.append(second)
            new_rho[c] = rho[c] / 2
            new_rho.append(rho[c] / 2)
            pairs.append((int(c), len(new_q) - 1))
        params = {"rho": np.asarray(new_rho), "q": np.asarray(new_q)}
        problem = OneSidedEM(dataclasses.replace(acm, n_components=len(new_q)), data, n_threads)
        run = run_schedule(problem, params, [beta], max_iter, tol)
        rho, q = run.params["rho"], run.params["q"]
        mass = np.asarray(run.params["resp"]).sum(axis=0)
        drop = []
        for c, copy in pairs:
            separation = float(np.abs(q[c] - q[copy]).sum())
            if separation > split_threshold and min(mass[c], mass[copy]) >= min_docs:
                left, right = len(parents), len(parents) + 1
                parents.extend([node_of[c], node_of[c]])
                split_rows.append({"beta": beta, "parent": node_of[c], "left": left,
                                   "right": right, "separation": separation})  # fmt: skip
                node_of[c] = left
                node_of.append(right)
            else:
                weight = rho[c] + rho[copy]
                if weight > 0:
                    q[c] = (rho[c] * q[c] + rho[copy] * q[copy]) / weight
                rho[c] = weight
                drop.append(copy)
                node_of.append(-1)
        keep = np.setdiff1d(np.arange(len(q)), drop)
        q, rho = q[keep], rho[keep]
        node_of = [node_of[c] for c in keep]
        stage_rows.append({"beta": beta, "n_clusters": len(node_of),
                           "iterations": int(run.stages["iterations"].iloc[0])})  # fmt: skip
    tree = TopicTree(parents)
    grown = dataclasses.replace(model, tree=tree)
    # Cluster c sits at leaf position searchsorted(leaves, node_of[c]).
    order = np.searchsorted(tree.leaves, np.asarray(node_of))
    leaf_q = np.empty((tree.n_leaves, data.n_cols))
    leaf_rho = np.empty(tree.n_leaves)
    leaf_q[order], leaf_rho[order] = q, rho
    leaf_rho /= leaf_rho.sum()
    below = tree.path_matrix() * leaf_rho[None, :]
    node_q = (below @ leaf_q) / below.sum(axis=1, keepdims=True)
    node_q[tree.leaves] = leaf_q
    start_params = {"rho": leaf_rho, "q": node_q, "tau": grown.default_tau(data.n_rows)}
    remaining = betas[last:] if betas[last:] else betas[-1:]
    fit = annealed_em(grown, data, init=start_params, betas=remaining, max_iter=final_max_iter,
                      tol=tol, n_threads=n_threads)  # fmt: skip
    fit.seconds = time.perf_counter() - start
    fit.method = "grow_tree"
    splits = pd.DataFrame(split_rows, columns=["beta", "parent", "left", "right", "separation"])
    return GrowthResult(tree, grown, fit, splits, pd.DataFrame(stage_rows))


# ------------------------------------------------------------------------------ summaries
def top_words(model: ClusterAbstractionModel, params, data=None, n_words: int = 5):
    """The most probable words of every node (the seed's Fig. 9).

    Parameters
    ----------
    model : ClusterAbstractionModel
    params : dict with ``q`` (or an EMResult)
    data : CoOccurrence, optional
        For the word labels (column indices otherwise).
    n_words : int

    Returns
    -------
    pandas.DataFrame
        One row per node: ``node``, ``depth``, ``parent``, ``words`` (list of labels, most
        probable first) and ``probabilities`` (their ``q_{j|nu}``).

    Examples
    --------
    >>> from latentzoo.data import load
    >>> result = annealed_em(ClusterAbstractionModel(1), load("toy"), betas=[1.0], random_state=0)
    >>> table = top_words(result.model, result, load("toy"), n_words=2)
    >>> table.columns.tolist(), len(table)
    (['node', 'depth', 'parent', 'words', 'probabilities'], 3)
    """
    params = params.params if isinstance(params, PointEstimate) else params
    check_integer("n_words", n_words)
    q = np.asarray(params["q"], dtype=float)
    tree = model.tree
    if q.shape[0] != tree.n_nodes:
        raise ValueError(f"q has {q.shape[0]} rows, the tree has {tree.n_nodes} nodes")
    labels = np.asarray(data.col_labels) if data is not None else np.arange(q.shape[1])
    if labels.size != q.shape[1]:
        raise ValueError(f"data has {labels.size} columns, q has {q.shape[1]}")
    order = np.argsort(-q, axis=1, kind="stable")[:, : min(n_words, q.shape[1])]
    return pd.DataFrame(
        {
            "node": np.arange(tree.n_nodes),
            "depth": tree.depth,
            "parent": tree.parents,
            "words": [labels[row].tolist() for row in order],
            "probabilities": [q[node, row].tolist() for node, row in enumerate(order)],
        }
    )


def word_node_distribution(model: ClusterAbstractionModel, params, data, word) -> pd.Series:
    """How the occurrences of one word are distributed over the nodes of the tree (Fig. 10).

    ``sum_i n_iw sum_a <I_ia> <V_{nu|a}> / n_w`` per node ``nu``
    (:meth:`ClusterAbstractionModel.node_responsibility`): a generic word sits near the root, a
    specific one at the leaves.

    Parameters
    ----------
    model : ClusterAbstractionModel
    params : dict or EMResult
    data : CoOccurrence
    word : int or str
        Column index or label.

    Returns
    -------
    pandas.Series indexed by node, summing to one (if the word occurs)

    Examples
    --------
    >>> from latentzoo.data import load
    >>> result = annealed_em(ClusterAbstractionModel(1), load("toy"), betas=[1.0], random_state=0)
    >>> share = word_node_distribution(result.model, result, load("toy"), 0)
    >>> len(share), round(float(share.sum()), 6)
    (3, 1.0)
    """
    params = params.params if isinstance(params, PointEstimate) else params
    data = model.check_data(data)
    if isinstance(word, str):
        matches = np.flatnonzero(np.asarray(data.col_labels).astype(str) == word)
        if matches.size == 0:
            raise ValueError(f"word {word!r} is not a column label of the data")
        index = int(matches[0])
    elif isinstance(word, int | np.integer) and not isinstance(word, bool):
        index = int(word)
        if not 0 <= index < data.n_cols:
            raise ValueError(f"word={index} is not a column index in 0..{data.n_cols - 1}")
    else:
        raise ValueError(f"word must be a column index or label, got {word!r}")
    resp = params.get("resp")
    share = model.node_responsibility(params, data, [index], resp=resp)[0]
    return pd.Series(share, index=pd.RangeIndex(model.tree.n_nodes, name="node"),
                     name=str(np.asarray(data.col_labels)[index]))  # fmt: skip


# --------------------------------------------------------------------------- Gibbs kernels
@nb.njit(cache=True)
def gibbs_sweep(doc_ptr, words, z, v, sizes, c_qt, c_node, c_lev, c_lev_tot, paths, lengths,
                log_tau, form, alpha, eta, gamma, state):  # fmt: skip
    """One collapsed Gibbs sweep: every document's leaf, then the levels of its observations.

    Leaf ``z_i`` given the levels ``v`` of its observations (doc removed from the tables):
    ``(m_a + alpha)`` times the sequential Pólya predictive of its observations at the nodes
    ``path(a, v_r)`` (``(c_{nu j} + eta) / (c_nu + M eta)``, counts updated as they are added)
    times that of their levels (``"leaf"``: ``(c_{a l} + gamma) / (c_a + L_a gamma)``;
    ``"object"``: the row's Dirichlet-multinomial; ``"constant"``: ``tau_{l|a}``); zero when a
    level lies past the leaf's depth. Then each level ``v_r`` given everything else, then a
    Metropolis-Hastings jump of the document to a random leaf with fresh levels
    (:func:`_jump_leaf`; it lets documents move between leaves of different depths). ``form``:
    0 constant, 1 leaf, 2 object. ``c_qt`` is ``M x n_nodes``; ``c_lev`` is per leaf (forms 0, 1)
    or per row (form 2). ``state`` is the chain's splitmix64 generator state. Returns the number
    of leaf jumps proposed to another leaf and the number accepted.

    Examples
    --------
    >>> from latentzoo.data import load
    >>> sampler = ClusterAbstractionGibbs(ClusterAbstractionModel(1), load("toy"))
    >>> s = sampler.init(rng := np.random.default_rng(0))
    >>> sampler.step(s, rng)[0] is s, int(s.c_node.sum()) == load("toy").total
    (True, True)
    """
    n_rows = doc_ptr.shape[0] - 1
    n_leaves, n_levels = paths.shape
    m_eta = eta * c_qt.shape[0]
    logp = np.empty(max(n_leaves, n_levels))
    proposed = 0
    accepted = 0
    for i in range(n_rows):
        first, last = doc_ptr[i], doc_ptr[i + 1]
        old = z[i]
        sizes[old] -= 1.0
        deepest = 0
        for t in range(first, last):
            level = v[t]
            node = paths[old, level]
            c_qt[words[t], node] -= 1.0
            c_node[node] -= 1.0
            if form != 2:
                c_lev[old, level] -= 1.0
                c_lev_tot[old] -= 1.0
            deepest = max(deepest, level)
        for a in range(n_leaves):
            if lengths[a] <= deepest:
                logp[a] = -np.inf
                continue
            lp = math.log(sizes[a] + alpha)
            for t in range(first, last):
                level = v[t]
                node = paths[a, level]
                j = words[t]
                lp += math.log(c_qt[j, node] + eta) - math.log(c_node[node] + m_eta)
                c_qt[j, node] += 1.0
                c_node[node] += 1.0
                if form == 1:
                    lp += math.log(c_lev[a, level] + gamma)
                    lp -= math.log(c_lev_tot[a] + lengths[a] * gamma)
                    c_lev[a, level] += 1.0
                    c_lev_tot[a] += 1.0
                elif form == 0:
                    lp += log_tau[a, level]
            if form == 2 and last > first:
                lp += math.lgamma(lengths[a] * gamma) - math.lgamma(
                    last - first + lengths[a] * gamma
                )
                for level in range(lengths[a]):
                    lp += math.lgamma(c_lev[i, level] + gamma) - math.lgamma(gamma)
            for t in range(first, last):
                level = v[t]
                node = paths[a, level]
                c_qt[words[t], node] -= 1.0
                c_node[node] -= 1.0
                if form == 1:
                    c_lev[a, level] -= 1.0
                    c_lev_tot[a] -= 1.0
            logp[a] = lp
        new = draw_log_weights(logp, n_leaves, state)
        z[i] = new
        sizes[new] += 1.0
        for t in range(first, last):
            level = v[t]
            node = paths[new, level]
            c_qt[words[t], node] += 1.0
            c_node[node] += 1.0
            if form != 2:
                c_lev[new, level] += 1.0
                c_lev_tot[new] += 1.0
        depth = lengths[new]
        for t in range(first, last):
            j = words[t]
            level = v[t]
            node = paths[new, level]
            c_qt[j, node] -= 1.0
            c_node[node] -= 1.0
            owner = i if form == 2 else new
            c_lev[owner, level] -= 1.0
            if form != 2:
                c_lev_tot[new] -= 1.0
            for level in range(depth):
                node = paths[new, level]
                lp = math.log(c_qt[j, node] + eta) - math.log(c_node[node] + m_eta)
                if form == 0:
                    lp += log_tau[new, level]
                else:
                    lp += math.log(c_lev[owner, level] + gamma)
                logp[level] = lp
            level = draw_log_weights(logp, depth, state)
            v[t] = level
            node = paths[new, level]
            c_qt[j, node] += 1.0
            c_node[node] += 1.0
            c_lev[owner, level] += 1.0
            if form != 2:
                c_lev_tot[new] += 1.0
        if n_leaves > 1 and last > first:
            jumped = _jump_leaf(i, first, last, words, z, v, sizes, c_qt, c_node, c_lev, c_lev_tot,
                                paths, lengths, log_tau, form, alpha, eta, gamma, state,
                                logp)  # fmt: skip
            if jumped >= 0:
                proposed += 1
                accepted += jumped
    return proposed, accepted


@nb.njit(cache=True)
def _remove_doc(i, leaf, first, last, words, v, c_qt, c_node, c_lev, c_lev_tot, paths, form):
    """Take the observations of row ``i`` (at leaf ``leaf``, levels ``v``) out of the tables."""
    for t in range(first, last):
        _count_token(i, leaf, words[t], v[t], -1.0, c_qt, c_node, c_lev, c_lev_tot, paths, form)


@nb.njit(cache=True)
def _count_token(i, leaf, j, level, delta, c_qt, c_node, c_lev, c_lev_tot, paths, form):
    """Add ``delta`` (+1 or -1) for word ``j`` of row ``i`` at ``level`` of ``leaf`` to the tables.

    The object form (2) counts levels per row, the others per leaf (with the leaf's total).
    """
    node = paths[leaf, level]
    c_qt[j, node] += delta
    c_node[node] += delta
    if form == 2:
        c_lev[i, level] += delta
    else:
        c_lev[leaf, level] += delta
        c_lev_tot[leaf] += delta


@nb.njit(cache=True)
def _replay(i, leaf, first, last, words, v, c_qt, c_node, c_lev, c_lev_tot, paths, lengths,
            log_tau, form, eta, gamma, state, logp, draw):  # fmt: skip
    """Add row ``i``'s observations back at ``leaf`` one by one; return ``sum_t log S_t``.

    ``S_t`` is the sum over levels of the collapsed predictive of observation ``t`` given the
    tables so far (word at the level's node, times its level weight). With ``draw`` each level is
    drawn from that conditional (the proposal of :func:`_jump_leaf`), otherwise the levels in
    ``v`` are replayed.
    """
    m_eta = eta * c_qt.shape[0]
    depth = lengths[leaf]
    total = 0.0
    added = 0.0
    for t in range(first, last):
        j = words[t]
        top = -np.inf
        for level in range(depth):
            node = paths[leaf, level]
            lp = math.log(c_qt[j, node] + eta) - math.log(c_node[node] + m_eta)
            if form == 0:
                lp += log_tau[leaf, level]
            elif form == 1:
                lp += math.log(c_lev[leaf, level] + gamma)
                lp -= math.log(c_lev_tot[leaf] + depth * gamma)
            else:
                lp += math.log(c_lev[i, level] + gamma) - math.log(added + depth * gamma)
            logp[level] = lp
            top = max(top, lp)
        norm = 0.0
        for level in range(depth):
            norm += math.exp(logp[level] - top)
        total += top + math.log(norm)
        if draw:
            v[t] = draw_log_weights(logp, depth, state)
        _count_token(i, leaf, j, v[t], 1.0, c_qt, c_node, c_lev, c_lev_tot, paths, form)
        added += 1.0
    return total


@nb.njit(cache=True)
def _jump_leaf(i, first, last, words, z, v, sizes, c_qt, c_node, c_lev, c_lev_tot, paths, lengths,
               log_tau, form, alpha, eta, gamma, state, logp):  # fmt: skip
    """Metropolis-Hastings move of row ``i`` to a uniformly proposed leaf with fresh levels.

    The leaf update of :func:`gibbs_sweep` keeps the levels, so a document whose observations sit
    deeper than another leaf's depth can never reach it; this move proposes a leaf uniformly and
    draws the levels sequentially from their collapsed conditionals at it. The proposal's density
    cancels the joint's level factors, leaving the acceptance ratio
    ``(m_b + alpha) prod_t S'_t / ((m_a + alpha) prod_t S_t)`` with the ``S_t`` of
    :func:`_replay` along the current and the proposed sequence. Returns 1 when the jump was
    accepted, 0 when rejected, -1 when the proposed leaf was the current one (no move).
    """
    n_leaves = sizes.shape[0]
    current = z[i]
    proposal = min(int(next_uniform(state) * n_leaves), n_leaves - 1)
    if proposal == current:
        return -1
    saved = v[first:last].copy()
    sizes[current] -= 1.0
    _remove_doc(i, current, first, last, words, v, c_qt, c_node, c_lev, c_lev_tot, paths, form)
    # The current sequence's normalisers, replayed and taken out again.
    log_old = _replay(i, current, first, last, words, v, c_qt, c_node, c_lev, c_lev_tot, paths,
                      lengths, log_tau, form, eta, gamma, state, logp, False)  # fmt: skip
    _remove_doc(i, current, first, last, words, v, c_qt, c_node, c_lev, c_lev_tot, paths, form)
    log_new = _replay(i, proposal, first, last, words, v, c_qt, c_node, c_lev, c_lev_tot, paths,
                      lengths, log_tau, form, eta, gamma, state, logp, True)  # fmt: skip
    log_ratio = math.log(sizes[proposal] + alpha) - math.log(sizes[current] + alpha)
    log_ratio += log_new - log_old
    if log_ratio >= 0.0 or next_uniform(state) < math.exp(log_ratio):
        z[i] = proposal
        sizes[proposal] += 1.0
        return 1
    _remove_doc(i, proposal, first, last, words, v, c_qt, c_node, c_lev, c_lev_tot, paths, form)
    v[first:last] = saved
    _replay(i, current, first, last, words, v, c_qt, c_node, c_lev, c_lev_tot, paths, lengths,
            log_tau, form, eta, gamma, state, logp, False)  # fmt: skip
    sizes[current] += 1.0
    return 0


@nb.njit(cache=True)
def _count_tables(doc_ptr, words, z, v, paths, n_cols, n_nodes, form):
    n_rows = doc_ptr.shape[0] - 1
    n_leaves, n_levels = paths.shape
    sizes = np.zeros(n_leaves)
    c_qt = np.zeros((n_cols, n_nodes))
    c_node = np.zeros(n_nodes)
    c_lev = np.zeros((n_rows if form == 2 else n_leaves, n_levels))
    c_lev_tot = np.zeros(n_leaves)
    for i in range(n_rows):
        a = z[i]
        sizes[a] += 1.0
        for t in range(doc_ptr[i], doc_ptr[i + 1]):
            _count_token(i, a, words[t], v[t], 1.0, c_qt, c_node, c_lev, c_lev_tot, paths, form)
    return sizes, c_qt, c_node, c_lev, c_lev_tot


@nb.njit(cache=True)
def _random_state(doc_ptr, lengths, state):
    """Uniform leaves and, given them, uniform levels on each leaf's path."""
    n_rows = doc_ptr.shape[0] - 1
    n_leaves = lengths.shape[0]
    z = np.empty(n_rows, dtype=np.int64)
    v = np.empty(doc_ptr[n_rows], dtype=np.int64)
    for i in range(n_rows):
        z[i] = min(int(next_uniform(state) * n_leaves), n_leaves - 1)
        for t in range(doc_ptr[i], doc_ptr[i + 1]):
            v[t] = min(int(next_uniform(state) * lengths[z[i]]), lengths[z[i]] - 1)
    return z, v


@nb.njit(cache=True)
def _many_chains_last_state(doc_ptr, words, paths, lengths, log_tau, form, n_cols, n_nodes,
                            alpha, eta, gamma, seeds, sweeps):  # fmt: skip
    """Independent chains, one per seed, of ``sweeps`` sweeps; their final ``(z, v)``."""
    n_rows = doc_ptr.shape[0] - 1
    out_z = np.empty((seeds.shape[0], n_rows), dtype=np.int64)
    out_v = np.empty((seeds.shape[0], doc_ptr[n_rows]), dtype=np.int64)
    state = np.empty(1, dtype=np.uint64)
    for c in range(seeds.shape[0]):
        state[0] = seeds[c]
        z, v = _random_state(doc_ptr, lengths, state)
        sizes, c_qt, c_node, c_lev, c_lev_tot = _count_tables(doc_ptr, words, z, v, paths, n_cols,
                                                              n_nodes, form)  # fmt: skip
        for _ in range(sweeps):
            gibbs_sweep(doc_ptr, words, z, v, sizes, c_qt, c_node, c_lev, c_lev_tot, paths,
                        lengths, log_tau, form, alpha, eta, gamma, state)  # fmt: skip
        out_z[c] = z
        out_v[c] = v
    return out_z, out_v


class LeafJumpInfo(NamedTuple):
    """What a sweep of :class:`ClusterAbstractionGibbs` reports: ``lp``, the collapsed log joint
    at the new state; ``leaf_jumps``, how many Metropolis-Hastings leaf jumps (:func:`_jump_leaf`)
    proposed another leaf; ``leaf_jump_accept``, the fraction of those accepted (0 when none)."""

    lp: float
    leaf_jump_accept: float
    leaf_jumps: int


class ClusterAbstractionGibbsState(NamedTuple):
    """State of one collapsed Gibbs chain of the HACM (arrays updated in place)."""

    z: np.ndarray
    v: np.ndarray
    sizes: np.ndarray
    c_qt: np.ndarray
    c_node: np.ndarray
    c_lev: np.ndarray
    c_lev_tot: np.ndarray
    rng_state: np.ndarray


class ClusterAbstractionGibbs(CollapsedGibbs):
    """Collapsed Gibbs sampler of the Bayesian HACM on a fixed tree, as ``init``/``step``/``draw``.

    A :class:`~latentzoo.inference.collapsed_gibbs.CollapsedGibbs` whose ``info`` is a
    :class:`LeafJumpInfo` (the log joint and the acceptance of the leaf jumps).

    Parameters
    ----------
    model : ClusterAbstractionModel
    data : CoOccurrence

    Examples
    --------
    >>> from latentzoo.data import load
    >>> sampler = ClusterAbstractionGibbs(ClusterAbstractionModel(1), load("toy"))
    >>> state = sampler.step(sampler.init(rng := np.random.default_rng(0)), rng)[0]
    >>> int(state.sizes.sum()), state.v.shape == (load("toy").total,)
    (6, True)
    """

    state_type = ClusterAbstractionGibbsState
    info_type = LeafJumpInfo

    def __init__(self, model: ClusterAbstractionModel, data: CoOccurrence):
        self.model = model
        self.data = data
        tree = model.tree
        rows, cols = data.to_tokens()
        self.words = cols
        self.doc_ptr = np.searchsorted(rows, np.arange(data.n_rows + 1)).astype(np.int64)
        self.paths = np.ascontiguousarray(np.where(tree.paths >= 0, tree.paths, 0))
        self.lengths = tree.path_lengths.astype(np.int64)
        self.valid = tree.paths >= 0
        # The fixed weights of the constant form (0 past a leaf's depth, never read there).
        self.log_tau = np.zeros((tree.n_leaves, tree.n_levels))
        if model.tau == "constant":
            self.log_tau[self.valid] = np.log(model.default_tau()[self.valid])
        self.form = _FORM_CODE[model.tau]

    def init(self, rng: np.random.Generator, z=None) -> ClusterAbstractionGibbsState:
        """A random start (uniform leaves, uniform levels on their paths), the leaves ``z``
        (levels uniform on their paths), or ``z = (leaves, levels)`` with one level (depth) per
        observation in the order of ``self.words``, each on its document's path.

        Examples
        --------
        >>> from latentzoo.data import load
        >>> sampler = ClusterAbstractionGibbs(ClusterAbstractionModel(1), load("toy"))
        >>> sampler.init(np.random.default_rng(0), z=[0, 0, 0, 1, 1, 1]).z.tolist()
        [0, 0, 0, 1, 1, 1]
        >>> leaves, levels = np.zeros(6, dtype=int), np.ones(len(sampler.words), dtype=int)
        >>> bool(np.all(sampler.init(np.random.default_rng(0), z=(leaves, levels)).v == 1))
        True
        """
        seed = splitmix_seeds(rng, 1)
        start, levels = _random_state(self.doc_ptr, self.lengths, seed)
        k = self.model.tree.n_leaves
        given_levels = None
        if isinstance(z, tuple):
            z, given_levels = z
        if z is not None:
            z = np.asarray(z)
            if (
                z.shape != (self.data.n_rows,)
                or z.dtype.kind not in "iu"
                or (z.size and (z.min() < 0 or z.max() >= k))
            ):
                raise ValueError(
                    f"initial assignments must be {self.data.n_rows} leaf labels in 0..{k - 1}"
                )
            start = z.astype(np.int64).copy()
            # Levels drawn for another leaf may lie past this one's depth: clip to its path.
            token_leaf = np.repeat(start, np.diff(self.doc_ptr))
            levels = np.minimum(levels, self.lengths[token_leaf] - 1)
        if given_levels is not None:
            given = np.asarray(given_levels)
            depth = self.lengths[np.repeat(start, np.diff(self.doc_ptr))]
            if (
                given.shape != levels.shape
                or given.dtype.kind not in "iu"
                or (given.size and (given.min() < 0 or np.any(given >= depth)))
            ):
                raise ValueError(
                    f"initial levels must be {levels.size} levels, one per observation, each "
                    "on its document's path"
                )
            levels = given.astype(np.int64).copy()
        tables = _count_tables(self.doc_ptr, self.words, start, levels, self.paths,
                               self.data.n_cols, self.model.tree.n_nodes, self.form)  # fmt: skip
        return ClusterAbstractionGibbsState(start, levels, *tables, seed)

    def _sweep(self, state: ClusterAbstractionGibbsState) -> tuple[float, int]:
        """One sweep over all documents and observations (:func:`gibbs_sweep`); reports the
        acceptance rate and the number of the leaf jumps proposed.

        Examples
        --------
        >>> from latentzoo.data import load
        >>> sampler = ClusterAbstractionGibbs(ClusterAbstractionModel(1), load("toy"))
        >>> state, info = sampler.step(sampler.init(rng := np.random.default_rng(0)), rng)
        >>> int(state.c_node.sum()) == load("toy").total, 0.0 <= info.leaf_jump_accept <= 1.0
        (True, True)
        """
        m = self.model
        proposed, accepted = gibbs_sweep(
            self.doc_ptr, self.words, state.z, state.v, state.sizes, state.c_qt, state.c_node,
            state.c_lev, state.c_lev_tot, self.paths, self.lengths, self.log_tau, self.form,
            float(m.alpha), float(m.eta), float(m.gamma), state.rng_state,
        )  # fmt: skip
        rate = accepted / proposed if proposed else 0.0
        return rate, int(proposed)

    def draw(self, state: ClusterAbstractionGibbsState, rng: np.random.Generator) -> dict:
        """``rho``, ``q``, ``tau`` from their exact conditionals given the assignments, and ``z``.

        ``rho ~ Dir(m + alpha)``, ``q_nu ~ Dir(c_nu + eta)``, ``tau`` over each path
        ``Dir(c + gamma)`` (rows of the object form: their counts under their own leaf, the prior
        under the others); the constant form's ``tau`` is fixed.

        Examples
        --------
        >>> from latentzoo.data import load
        >>> sampler = ClusterAbstractionGibbs(ClusterAbstractionModel(1), load("toy"))
        >>> rng = np.random.default_rng(0)
        >>> sorted(sampler.draw(sampler.init(rng), rng))
        ['q', 'rho', 'tau', 'z']
        """
        model = self.model
        rho = dirichlet_rows(rng, (state.sizes + model.alpha)[None, :])[0]
        q = dirichlet_rows(rng, state.c_qt.T + model.eta)
        if model.tau == "constant":
            tau = model.default_tau()
        elif model.tau == "leaf":
            # Concentration 0 past a leaf's depth: its Gamma variate is exactly 0.
            tau = dirichlet_rows(rng, np.where(self.valid, state.c_lev + model.gamma, 0.0))
        else:
            n_rows = self.data.n_rows
            concentration = np.where(self.valid, model.gamma, 0.0)
            concentration = np.broadcast_to(concentration, (n_rows, *self.valid.shape)).copy()
            own = np.arange(n_rows), state.z
            concentration[own] += np.where(self.valid[state.z], state.c_lev, 0.0)
            tau = dirichlet_rows(rng, concentration)
        return {"rho": rho, "q": q, "tau": tau, "z": state.z.copy()}

    def log_joint(self, state: ClusterAbstractionGibbsState) -> float:
        """Collapsed ``log p(z, v, S)`` from the count tables (as ``collapsed_log_joint``).

        Examples
        --------
        >>> from latentzoo.data import load
        >>> model, data = ClusterAbstractionModel(1), load("toy")
        >>> sampler = ClusterAbstractionGibbs(model, data)
        >>> s = sampler.init(np.random.default_rng(0))
        >>> bool(np.isclose(sampler.log_joint(s), model.collapsed_log_joint(s.z, s.v, data)[0]))
        True
        """
        model = self.model
        total = dirichlet_multinomial_log(state.sizes[None, :], model.alpha)
        total += dirichlet_multinomial_log(state.c_qt.T, model.eta)
        if model.tau == "constant":
            total += float(np.sum(state.c_lev * self.log_tau))
            return float(total)
        lengths = self.lengths if model.tau == "leaf" else self.lengths[state.z]
        for length in np.unique(lengths):
            block = state.c_lev[lengths == length, : int(length)]
            total += dirichlet_multinomial_log(block, model.gamma)
        return float(total)

    def _last_states(self, seeds, sweeps):
        """The final ``(z, v)`` of the chains: ``(n_chains, N)`` and ``(n_chains, T)``.

        Examples
        --------
        >>> from latentzoo.data import load
        >>> sampler = ClusterAbstractionGibbs(ClusterAbstractionModel(1), load("toy"))
        >>> z, v = sampler.exact_draws(3, 5, 0)
        >>> z.shape, v.shape == (3, load("toy").total)
        ((3, 6), True)
        """
        m = self.model
        return _many_chains_last_state(
            self.doc_ptr, self.words, self.paths, self.lengths, self.log_tau, self.form,
            self.data.n_cols, m.tree.n_nodes, float(m.alpha), float(m.eta), float(m.gamma),
            seeds, sweeps,
        )  # fmt: skip


def enumerated_posterior(model: ClusterAbstractionModel, data) -> tuple[int, np.ndarray]:
    """The collapsed posterior of every (leaf per document, level per token) state, for the exact
    tests of the Gibbs sampler.

    States are label vectors ``[z (N), v (T)]`` in the order of
    :func:`~latentzoo.inference.compare.enumerate_assignments` with ``n_labels =
    max(leaves, levels)`` labels; those outside the tree get ``-inf``; the others
    ``collapsed_log_joint`` (unnormalised).

    Returns
    -------
    n_labels : int
    log_probs : numpy.ndarray (n_labels ** (N + T),)

    Examples
    --------
    >>> from latentzoo.data import CoOccurrence
    >>> n_labels, log_probs = enumerated_posterior(ClusterAbstractionModel(1), CoOccurrence([[1, 1]]))
    >>> n_labels, log_probs.shape, int(np.isfinite(log_probs).sum())  # 2 leaves x 2 x 2 levels
    (2, (8,), 8)
    """
    from latentzoo.inference.compare import enumerate_assignments

    # Not check_data: a tiny exact problem may have fewer documents than leaves.
    data = CoOccurrence.coerce(data)
    n_rows, n_tokens = data.n_rows, data.total
    n_labels = max(model.tree.n_leaves, model.tree.n_levels)
    states = enumerate_assignments(n_rows + n_tokens, n_labels)
    z, v = states[:, :n_rows], states[:, n_rows:]
    log_probs = np.full(len(states), -np.inf)
    ok = (z < model.tree.n_leaves).all(axis=1) & (v < model.tree.n_levels).all(axis=1)
    log_probs[ok] = model.collapsed_log_joint(z[ok], v[ok], data)
    return n_labels, log_probs


def _prepare_gibbs(model, data, *, chains, draws, test=None, keep_params="auto"):
    """The family side of :func:`gibbs`: checks, sampler, draw, coordinates."""
    if not isinstance(model, ClusterAbstractionModel):
        raise ValueError(f"model must be a ClusterAbstractionModel, got {type(model).__name__}")
    data, test = gibbs_data(model, data, test, CoOccurrence.coerce)
    tree = model.tree
    tau_size = int(np.prod(model.tau_shape(data.n_rows)))
    size = tree.n_leaves + tree.n_nodes * data.n_cols + tau_size + data.n_rows
    keep_params = keep_params_auto(keep_params, chains, draws, size)
    # The tree fixes the leaves up to swaps of sibling subtrees: no labels to align.
    return row_mixture_gibbs_setup(
        model, ClusterAbstractionGibbs(model, data), data, test, keep_params, label_axes=()
    )


gibbs = gibbs_entry(
    _prepare_gibbs,
    """Collapsed Gibbs sampling of the Bayesian HACM on a fixed tree, as ``InferenceData``.

    The posterior holds ``rho`` (leaf), ``q`` (node, word) and ``tau`` (leaf, level; doc, leaf,
    level for the object form), named and shaped as in
    :meth:`ClusterAbstractionModel.pymc_model`, the leaves ``z`` (doc), and the invariants
    ``loglik``, ``p_dyad``, ``coassign`` and ``level_share`` of
    :meth:`ClusterAbstractionModel.invariants` (parameters kept when ``keep_params`` is True, or
    "auto" and they are small). ``log_likelihood`` holds ``counts`` (doc): the multinomial log-pmf
    of each row given the draw with both latent variables summed out, or with ``test`` the
    predictive density of its held-out counts. ``sample_stats`` holds ``lp``, the collapsed log
    joint of leaves and levels. The tree fixes the labels up to swaps of sibling subtrees, which
    the invariants do not see: chains are not relabelled.
    """,
    toy_example=("ClusterAbstractionModel(1)", "level_share", "(2, 20, 4, 2)"),
)


def plot_tree(
    model: ClusterAbstractionModel,
    params,
    data=None,
    max_depth: int = 3,
    n_words: int = 4,
    ax=None,
    title: str | None = None,
):
    """Draw the top levels of the tree with the most probable words of every node (Fig. 9).

    Nodes down to ``max_depth`` are boxes holding their ``n_words`` most probable words
    (:func:`top_words`) and, when the fit has responsibilities, the expected number of documents
    under them; leaves of the drawn tree sit in depth-first order, parents centred above their
    children.

    Parameters
    ----------
    model : ClusterAbstractionModel
    params : dict with ``q`` (and optionally ``resp``), or an EMResult
    data : CoOccurrence, optional
        Word labels.
    max_depth : int
        Deepest level drawn (the root is level 0).
    n_words : int
    ax : matplotlib Axes, optional
    title : str, optional

    Returns
    -------
    matplotlib.axes.Axes

    Examples
    --------
    >>> from latentzoo.data import load
    >>> result = annealed_em(ClusterAbstractionModel(1), load("toy"), betas=[1.0], random_state=0)
    >>> ax = plot_tree(result.model, result, load("toy"), n_words=2)
    >>> len(ax.texts)  # the root and its two leaves
    3
    """
    import matplotlib.pyplot as plt

    params = params.params if isinstance(params, PointEstimate) else params
    check_integer("max_depth", max_depth, low=0)
    words = top_words(model, params, data, n_words=n_words)
    tree = model.tree
    depth = np.asarray(tree.depth)
    shown = depth <= max_depth
    docs = None
    if "resp" in params:
        # Expected documents per leaf column of resp, summed up the tree to every node.
        per_leaf = np.asarray(params["resp"], dtype=float).sum(axis=0)
        docs = np.array([per_leaf[tree.leaves_below(v)].sum() for v in range(tree.n_nodes)])
    # x positions: drawn leaves in depth-first order (a tree of at most 2^(max_depth+1) nodes).
    x = np.zeros(tree.n_nodes)
    order: list = []

    def place(node):
        kids = [int(c) for c in tree.children(node)] if depth[node] < max_depth else []
        if not kids:
            x[node] = float(len(order))
            order.append(node)
            return
        for child in kids:
            place(child)
        x[node] = float(np.mean(x[kids]))

    place(tree.root)
    if ax is None:
        _, ax = plt.subplots(figsize=(max(6.0, 2.2 * len(order)), 2.4 * (max_depth + 1)))
    nodes = np.flatnonzero(shown)
    for node in nodes:
        parent = tree.parents[node]
        if parent >= 0:
            ax.plot([x[parent], x[node]], [-depth[parent], -depth[node]], color="0.6", lw=1,
                    zorder=1)  # fmt: skip
    for node in nodes:
        head = f"node {node}" + ("" if docs is None else f" ({docs[node]:.0f} docs)")
        text = head + "\n" + "\n".join(map(str, words.loc[node, "words"]))
        ax.text(x[node], -depth[node], text, ha="center", va="center", fontsize=7.5, zorder=2,
                bbox={"boxstyle": "round,pad=0.3", "fc": "lightyellow", "ec": "0.4"})  # fmt: skip
    ax.set_xlim(-0.7, len(order) - 0.3)
    ax.set_ylim(-min(max_depth, int(depth.max())) - 0.6, 0.6)
    ax.axis("off")
    ax.set_title(
        title
        if title is not None
        else f"HACM: top {min(max_depth, int(depth.max())) + 1} levels of a tree with "
        f"{tree.n_leaves} leaves, {n_words} most probable words per node"
    )
    return ax


# ------------------------------------------------------------------------------ the family
def validation_recipe():
    """How :func:`latentzoo.validate` checks the HACM's methods (a ``ValidationRecipe``)."""
    from latentzoo.inference.recipes import cluster_abstraction

    # The optimality level also certifies the three-stage strategy on this family's instances.
    return dataclasses.replace(
        cluster_abstraction(ClusterAbstractionGibbs, enumerated_posterior),
        method_certificates={"three_stage": three_stage_instances},
    )


_EM_OPTIONS = (
    *SCHEDULE_OPTIONS,
    THREADS,
    anything("tau", None, "fixed level weights (None: estimated)"),
    anything("init", None, "starting parameters (dict; None: random)"),
)
FAMILY = Family(
    name="cluster-abstraction",
    model=ClusterAbstractionModel,
    methods={
        "annealed_em": Method(
            annealed_em,
            with_defaults(_EM_OPTIONS, annealed_em.defaults),
            blocks=ClusterAbstractionBlocks,
        ),
        "three_stage": Method(three_stage_em, with_defaults(_EM_OPTIONS, annealed_em.defaults)),
        "gibbs": Method(gibbs, GIBBS_METHOD_OPTIONS),
    },
    recipe=validation_recipe,
    sizes=("tree",),
    dataset="reuters",
    notebook="notebooks/cluster_abstraction.ipynb",
    description="hierarchical cluster-abstraction model, HACM (Hofmann 1999, sec. 4); --k is"
    " the depth of a complete binary tree",
    options=(integer("k", 3, "depth of the complete binary tree --k builds"),),
)
"""The cluster-abstraction model's family (listed in :mod:`latentzoo.zoo`)."""
