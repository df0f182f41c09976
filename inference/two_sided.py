"""Fast inference for the symmetric clustering model: hard SCM, mean-field annealed EM, collapsed Gibbs.

**Hard SCM** (Hofmann & Puzicha 1998, eq. (44)-(45)): alternating maximisation of the log-likelihood
``L * MI(I; J) + const`` over the two partitions in the order ``(I, c, J, c)``. With ``c`` J-consistent
(eq. (42) from the current ``J``), the penalty of eq. (44) is the constant ``n_i`` (eq. (45)) and row
``i`` goes to ``argmax_nu h_{i nu}``, ``h = (n J) log(c)^T`` (an ``N x Ky`` sparse product times a
``Ky x Kx`` matrix). Every half-step cannot lower the likelihood, which is therefore monotone.

**Mean-field annealed EM** (eq. (48)-(49), appendix A). The factorised distribution
``Q(I, J) = prod_i <I_i> prod_j <J_j>`` minimises, at inverse temperature ``beta``, the free energy

.. math::

    F_\\beta(Q, c, \\rho) = \\mathbf{E}_Q[\\mathcal{H}]
        + \\tfrac{1}{\\beta}\\big[\\mathrm{KL}(Q_I \\,\\|\\, \\rho^x) + \\mathrm{KL}(Q_J \\,\\|\\, \\rho^y)
        - \\log p(\\rho^x) - \\log p(\\rho^y)\\big],

``H(I, J; c) = -sum_ij n_ij log(p_i q_j c_{I_i J_j}) + L (sum_ij p_i q_j c_{I_i J_j} - 1)`` (the
log-likelihood with the seed's Lagrange term, eq. (36), ``lambda = -L``: a Poisson form whose minimum over
the scale of ``c`` is the normalised likelihood), ``p(rho) = Dir(alpha)``. This is eq. (64) (in units of
``1/beta``, with the prior of the indicators untempered as in eq. (65)). Each update of the sequence
``(<I>, (c, rho^x), <J>, (c, rho^y))`` minimises ``F`` exactly over its block:

- ``<I_{i nu}> ∝ rho^x_nu exp(beta h_{i nu})``, ``h_{i nu} = sum_j n_ij sum_mu <J_{j mu}> log c_{nu mu}``
  (eq. (49); the seed's minus sign in the exponent is a typo, compare seed 001 eq. (10)). The Lagrange
  term contributes ``n_i sum_mu pi^y_mu c_{nu mu} = n_i`` for every ``nu`` because ``c`` is
  J-consistent (eq. (45)), so it drops out.
- ``c = pi / (pi^x pi^y)`` with ``pi = <I>^T n <J> / L`` (eq. (42)-(43), posteriors replacing Booleans),
  and ``rho ∝ sum_i <I_i> + alpha - 1`` (eq. (48), MAP).

So ``F`` never increases at fixed ``beta`` (tested every iteration). At the fixed point
``E_Q[H] = -(L MI(Q) + const)``. Each iteration costs two sparse-dense products
(``n @ <J>``: ``nnz Ky``; ``n^T @ <I>``: ``nnz Kx``) and ``O((N + M) Kx Ky)`` dense work; no ``N x M`` or
``nnz x K`` array is formed. Footnote 7: started at random, all posteriors drift to uniform, so the row
posteriors start from an asymmetric clustering (ACM) solution, and the column partition from a
distributional k-means of the columns' profiles over those row clusters.

**Collapsed Gibbs.** Every ``I_i`` is resampled from its exact conditional in the collapsed Bayesian
model of :mod:`latentzoo.models.two_sided` (``rho``, ``pi``, ``psi`` integrated out):

.. math::

    P(I_i = \\nu \\mid \\ldots) \\propto (s_\\nu + \\alpha)
      \\prod_\\mu \\frac{\\Gamma(W_{\\nu\\mu} + r_\\mu + \\eta)}{\\Gamma(W_{\\nu\\mu} + \\eta)}
      \\frac{\\Gamma((s_\\nu + 1)\\eta)\\, \\Gamma(N_\\nu + s_\\nu\\eta)}
           {\\Gamma(N_\\nu + n_i + (s_\\nu + 1)\\eta)\\, \\Gamma(s_\\nu\\eta)}
      \\frac{\\Gamma(B_\\nu \\eta)}{\\Gamma(L + B_\\nu \\eta)}

(all counts without row ``i``; ``r_mu = sum_j n_ij [J_j = mu]``; the ratio of ``Gamma(s eta)`` terms is
absent for an empty cluster; ``B_nu`` the number of occupied blocks if ``i`` joins ``nu``): rising
factorials of the Dirichlet-multinomial, evaluated with ``lgamma`` in log space. Then every ``J_j``
likewise. The kept draws add ``pi``, ``psi`` and ``rho`` from their exact conditional Dirichlet
posteriors, so the posterior holds a draw-kind parameter dictionary.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, field
from typing import NamedTuple

import numba as nb
import numpy as np
import scipy.sparse as sp
from scipy.special import xlogy

from latentzoo.data import CoOccurrence
from latentzoo.inference.annealing import EMStats, annealed_fit, em_entry
from latentzoo.inference.collapsed_gibbs import CollapsedGibbs
from latentzoo.inference.family import (
    GIBBS_METHOD_OPTIONS,
    SCHEDULE_OPTIONS,
    Family,
    Method,
    anything,
    flag,
    hard_options,
    with_defaults,
)
from latentzoo.inference.mcmc import (
    GibbsSetup,
    LabelAxis,
    dirichlet_rows,
    gibbs_data,
    gibbs_entry,
    keep_params_auto,
    next_uniform,
    uniform_labels,
)
from latentzoo.models._kernels import cell_dots, one_hot
from latentzoo.models.invariants import default_dyads
from latentzoo.models.two_sided import (
    TwoSidedClustering,
    association,
    collapsed_from_tables,
    default_pairs,
    soft_assignments,
    within_cluster,
)

__all__ = [
    "HardSCM",
    "MeanFieldSCM",
    "TwoSidedGibbs",
    "hard_scm",
    "mean_field",
    "gibbs",
    "initial_partition",
]

INITS = ("acm", "kmeans", "random")


# --------------------------------------------------------------------------- shared pieces
class _Counts:
    """The count matrix prepared once for the EM family: float CSR of ``n`` and of ``n^T``."""

    def __init__(self, model: TwoSidedClustering, data: CoOccurrence):
        self.model = model
        self.data = data
        self.csr = data.counts.astype(np.float64)
        self.csr_t = self.csr.T.tocsr()
        self.n_i = data.row_totals.astype(float)
        self.m_j = data.col_totals.astype(float)
        self.total = float(data.total)
        self.p = self.n_i / self.total
        self.q = self.m_j / self.total
        self.rows = data.cells()[0]
        # sum_i n_i log p_i + sum_j m_j log q_j: the partition-independent part of the likelihood
        self.offset = model.log_likelihood_offset(data)

    def params(self, soft_i, soft_j, block):
        """The point-estimate dictionary (eq. (42)-(43), (48)) of the given posteriors."""
        return self.model.point_params(soft_i, soft_j, block, self.n_i, self.m_j, self.total)

    def soft_log_likelihood(self, soft_i, soft_j, c) -> float:
        """``sum_ij n_ij log(p_i q_j sum <I><J> c)`` over the non-zeros (eq. (47) plug-in)."""
        return _plug_in_log_likelihood(self.csr, self.rows, self.p, self.q, soft_i, soft_j, c)


def _plug_in_log_likelihood(csr, rows, p, q, soft_i, soft_j, c) -> float:
    """``sum_ij n_ij log(p_i q_j sum <I><J> c)`` over the non-zeros of the float ``csr`` (eq.
    (47) plug-in), ``rows`` the row of each non-zero; of a row block with its rows' ``p``."""
    dots = cell_dots(csr.indptr, csr.indices, np.ascontiguousarray(soft_i @ c), soft_j)
    with np.errstate(divide="ignore"):
        return float(np.sum(csr.data * np.log(p[rows] * q[csr.indices] * dots)))


def _scores(mass, c):
    """``h[a, nu] = sum_mu mass[a, mu] log c[nu, mu]``, ``-inf`` where positive mass meets ``c = 0``.

    ``0 log 0 = 0``: a block without observations only excludes objects that would put mass on it.
    """
    positive = c > 0
    log_c = np.log(np.where(positive, c, 1.0))
    h = mass @ log_c.T
    if not positive.all():
        blocked = ((mass > 0).astype(float) @ (~positive).T.astype(float)) > 0
        h[blocked] = -np.inf
    return h


FLUSH = 1e-100
"""Posteriors below this are set to 0: subnormal numbers (and products of two small posteriors that
underflow into them) slow every later sparse product down about fivefold; the change of the free
energy, at most ``K FLUSH |h|``, lies far below its floating-point resolution."""


def _softmax_rows(logits):
    top = np.max(logits, axis=1, keepdims=True)
    out = np.exp(logits - top)
    out /= out.sum(axis=1, keepdims=True)
    out[out < FLUSH] = 0.0
    return out


def _indicator(labels, k):
    """Sparse (n x k) indicator matrix of hard labels."""
    n = labels.shape[0]
    return sp.csr_matrix((np.ones(n), (np.arange(n), labels)), shape=(n, k))


# ------------------------------------------------------------------------------ initialisation
def _kmeans_profiles(x, k, rng, n_iter=20):
    """Distributional k-means (KL divergence of profiles, token-weighted) with k-means++ seeding.

    ``x`` (items x features, sparse or dense, non-negative). Cost of item ``a`` under a centroid
    ``mu`` is ``t_a KL(x_a / t_a || mu)``; centroids are the pooled profiles smoothed by one pseudo-token
    spread as the global profile (no ``log 0``). Seeds: the first with probability ``∝ t_a``, the next
    ``∝`` the current minimal cost (k-means++). Then Lloyd iterations; empty clusters are reseeded with
    the costliest item. Returns int64 labels.
    """
    is_sparse = sp.issparse(x)
    n_items = x.shape[0]
    totals = np.asarray(x.sum(axis=1)).ravel()
    grand = totals.sum()
    background = np.asarray(x.sum(axis=0)).ravel() / grand
    if is_sparse:
        rows = np.repeat(np.arange(n_items), np.diff(x.indptr))
        self_term = np.bincount(
            rows, weights=xlogy(x.data, x.data / totals[rows]), minlength=n_items
        )
    else:
        with np.errstate(divide="ignore", invalid="ignore"):
            self_term = xlogy(x, x / np.where(totals > 0, totals, 1.0)[:, None]).sum(axis=1)

    def row_of(a):
        return np.asarray(x[a].toarray()).ravel() if is_sparse else np.asarray(x[a], dtype=float)

    live = background > 0  # features without any mass never enter a cost

    def log_profile(pooled, mass):
        with np.errstate(divide="ignore"):
            return np.where(live, np.log((pooled + background) / (mass + 1.0)), 0.0)

    def cost_to(log_centroids):  # (n_items, n_centroids)
        return self_term[:, None] - np.asarray(x @ log_centroids.T)

    weights = totals / grand
    seed = int(rng.choice(n_items, p=weights))
    log_centroids = log_profile(row_of(seed), totals[seed])[None, :]
    best = cost_to(log_centroids)[:, 0]
    for _ in range(1, k):
        gain = np.maximum(best, 0.0)
        probs = gain / gain.sum() if gain.sum() > 0 else weights
        seed = int(rng.choice(n_items, p=probs))
        new = log_profile(row_of(seed), totals[seed])[None, :]
        log_centroids = np.concatenate([log_centroids, new])
        best = np.minimum(best, cost_to(new)[:, 0])
    labels = np.full(n_items, -1, dtype=np.int64)
    for _ in range(n_iter):
        cost = cost_to(log_centroids)
        new = np.argmin(cost, axis=1).astype(np.int64)
        sizes = np.bincount(new, minlength=k)
        for empty in np.flatnonzero(sizes == 0):
            worst = int(np.argmax(cost[np.arange(n_items), new]))
            new[worst] = empty
            sizes = np.bincount(new, minlength=k)
        if np.array_equal(new, labels):
            break
        labels = new
        pooled = np.asarray(x.T @ one_hot(labels, k)).T  # (k, features)
        mass = np.bincount(labels, weights=totals, minlength=k)
        log_centroids = log_profile(pooled, mass[:, None])
    return labels


def _row_partition_from_acm(model, data, rng, hard):
    """Row posteriors (or labels) of the asymmetric clustering model, seed footnote 7."""
    try:
        from latentzoo.models.one_sided import OneSidedClustering

        if hard:
            from latentzoo.inference.one_sided import hard_acm
        else:
            from latentzoo.inference.one_sided import annealed_em
    except ImportError as error:
        raise ValueError(
            "init='acm' needs latentzoo.inference.one_sided (the one-sided clustering model); "
            "use init='kmeans'"
        ) from error
    acm = OneSidedClustering(
        model.n_row_clusters, alpha=max(model.alpha, 1.0), eta=max(model.eta, 1.0)
    )
    if hard:
        result = hard_acm(acm, data, max_iter=100, random_state=rng, n_init=1)
    else:
        result = annealed_em(acm, data, betas=[1.0], max_iter=100, random_state=rng)
    resp = np.asarray(result.params["resp"], dtype=float)
    return np.argmax(resp, axis=1).astype(np.int64) if hard else resp


def initial_partition(model, data, rng, init="acm", hard=False):
    """Starting assignments ``(I, J)`` for the hard SCM and mean field (seed footnote 7).

    ``init``:

    - ``"acm"``: ``I`` from the asymmetric clustering model (one-sided annealed EM, or hard ACM when
      ``hard``) of :mod:`latentzoo.inference.one_sided`;
    - ``"kmeans"``: ``I`` from distributional k-means++ of the rows' profiles ``n_{i.} / n_i``;
    - ``"random"``: uniformly random labels for both (footnote 7 warns that mean field then tends to
      uniform posteriors);
    - a dict with ``"I"`` (labels or N x Kx posteriors) and optionally ``"J"``.

    Unless given, ``J`` is the distributional k-means++ partition of the columns' profiles over the
    row clusters, ``n^T <I>`` (the J-step of eq. (44) iterated for fixed ``I``).

    Returns
    -------
    I : (N, Kx) float, J : (M, Ky) float (one-hot unless soft posteriors were given or ACM was used)
    """
    kx, ky = model.shape
    n_rows, n_cols = data.shape
    if isinstance(init, dict):
        if "I" not in init:
            raise ValueError("an init dict needs the row assignments 'I'")
        soft_i = soft_assignments(init["I"], n_rows, kx, "init['I']")
        soft_j = soft_assignments(init["J"], n_cols, ky, "init['J']") if "J" in init else None
    elif init == "random":
        soft_i = one_hot(rng.integers(0, kx, n_rows), kx)
        soft_j = one_hot(rng.integers(0, ky, n_cols), ky)
    elif init == "kmeans":
        soft_i = one_hot(_kmeans_profiles(data.counts.astype(np.float64), kx, rng), kx)
        soft_j = None
    elif init == "acm":
        rows = _row_partition_from_acm(model, data, rng, hard)
        soft_i = one_hot(rows, kx) if rows.ndim == 1 else rows
        soft_j = None
    else:
        raise ValueError(f"init must be one of {INITS} or a dict with 'I' (and 'J'), got {init!r}")
    if soft_j is None:
        profiles = np.asarray(data.counts.T @ soft_i)
        soft_j = one_hot(_kmeans_profiles(profiles, ky, rng), ky)
    return soft_i, soft_j


# ------------------------------------------------------------------------------- hard SCM
class HardSCM:
    """The hard SCM (eq. (44)-(45)) as an :class:`~latentzoo.inference.annealing.EMProblem`.

    ``step(params, beta)`` ignores ``beta`` (the ``T -> 0`` limit); ``free_energy`` is minus the
    log-likelihood ``-(L MI + offset)``, which every step lowers or keeps (ties keep the current
    cluster, so an unchanged value means an unchanged partition).
    """

    monotone = True

    def __init__(self, model: TwoSidedClustering, data: CoOccurrence, init="acm"):
        self.model = model
        self.counts = _Counts(model, data)
        self.init_method = init

    def init(self, rng):
        soft_i, soft_j = initial_partition(
            self.model, self.counts.data, rng, self.init_method, hard=True
        )
        labels_i, labels_j = soft_i.argmax(axis=1), soft_j.argmax(axis=1)
        return self._params(labels_i, labels_j, self._block(labels_i, labels_j)[0])

    def _block(self, labels_i, labels_j):
        kx, ky = self.model.shape
        row_mass = (self.counts.csr @ _indicator(labels_j, ky)).toarray()
        return _indicator(labels_i, kx).T @ row_mass, row_mass

    def _params(self, labels_i, labels_j, block):
        kx, ky = self.model.shape
        return self.counts.params(one_hot(labels_i, kx), one_hot(labels_j, ky), block)

    @staticmethod
    def _assign(h, current):
        best = h.max(axis=1)
        keep = h[np.arange(h.shape[0]), current] >= best
        return np.where(keep, current, np.argmax(h, axis=1)).astype(np.int64)

    def step(self, params, beta=1.0):
        kx, ky = self.model.shape
        counts = self.counts
        labels_i = np.argmax(params["I"], axis=1)
        labels_j = np.argmax(params["J"], axis=1)
        block, row_mass = self._block(labels_i, labels_j)
        c = association(
            block, counts.n_i @ one_hot(labels_i, kx), counts.m_j @ one_hot(labels_j, ky)
        )
        loglik = counts.offset + float(xlogy(block, c).sum())
        # I-step (eq. (44)) with J-consistent c, then c
        labels_i = self._assign(_scores(row_mass, c), labels_i)
        block = _indicator(labels_i, kx).T @ row_mass
        col_mass = (counts.csr_t @ _indicator(labels_i, kx)).toarray()
        c = association(
            block, counts.n_i @ one_hot(labels_i, kx), counts.m_j @ one_hot(labels_j, ky)
        )
        # J-step with I-consistent c, then c
        labels_j = self._assign(_scores(col_mass, c.T), labels_j)
        block = (_indicator(labels_j, ky).T @ col_mass).T
        new = self._params(labels_i, labels_j, block)
        return new, EMStats(-loglik, loglik)


# ----------------------------------------------------------------------------- mean field
class MeanFieldSCM:
    """Mean-field annealed EM of the SCM (eq. (48)-(49)) as an ``EMProblem``; see module docstring.

    Parameters
    ----------
    model : TwoSidedClustering
        ``alpha >= 1`` (the MAP cluster weights need non-negative pseudo-counts).
    data : CoOccurrence
    init : str or dict
        See :func:`initial_partition`.
    track_loglik : bool
        Also report the plug-in log-likelihood of eq. (47) (``O(nnz Ky)`` per iteration).
    """

    monotone = True

    def __init__(self, model, data, init="acm", track_loglik=True):
        if model.alpha < 1:
            raise ValueError(
                "mean-field EM estimates the MAP cluster weights, which needs alpha >= 1 "
                f"(got alpha={model.alpha}); use method='gibbs' for sparse priors"
            )
        self.model = model
        self.counts = _Counts(model, data)
        self.init_method = init
        self.track_loglik = track_loglik

    def init(self, rng):
        soft_i, soft_j = initial_partition(self.model, self.counts.data, rng, self.init_method)
        block = soft_i.T @ np.asarray(self.counts.csr @ soft_j)
        return self.counts.params(soft_i, soft_j, block)

    def free_energy(self, soft_i, soft_j, block, c, rho_x, rho_y, beta) -> float:
        """``F_beta`` of the module docstring at consistent ``c`` (``E_Q[H] = -(L MI + offset)``)."""
        return _free_energy(
            self.model, self.counts.offset, block, c, xlogy(soft_i, soft_i).sum(),
            soft_i.sum(axis=0), soft_j, rho_x, rho_y, beta,
        )  # fmt: skip

    def step(self, params, beta):
        counts = self.counts
        soft_i = np.asarray(params["I"], dtype=float)
        soft_j = np.asarray(params["J"], dtype=float)
        rho_x = np.asarray(params["rho_x"], dtype=float)
        rho_y = np.asarray(params["rho_y"], dtype=float)
        row_mass = np.asarray(counts.csr @ soft_j)  # (N, Ky): sum_j n_ij <J_j>
        block = soft_i.T @ row_mass
        c = association(block, counts.n_i @ soft_i, counts.m_j @ soft_j)
        free = self.free_energy(soft_i, soft_j, block, c, rho_x, rho_y, beta)
        loglik = counts.soft_log_likelihood(soft_i, soft_j, c) if self.track_loglik else np.nan
        with np.errstate(divide="ignore"):
            # <I> (eq. (49)), then (c, rho^x)
            soft_i = _softmax_rows(np.log(rho_x)[None, :] + beta * _scores(row_mass, c))
            block = soft_i.T @ row_mass
            c = association(block, counts.n_i @ soft_i, counts.m_j @ soft_j)
            rho_x = self.model.map_weights(soft_i.sum(axis=0))
            # <J>, then (c, rho^y)
            col_mass = np.asarray(counts.csr_t @ soft_i)  # (M, Kx)
            soft_j = _column_posteriors(rho_y, col_mass, c, beta)
        block = col_mass.T @ soft_j
        new = counts.params(soft_i, soft_j, block)  # rho_x as above, rho_y from <J>
        return new, EMStats(float(free), float(loglik))


def _free_energy(model, offset, block, c, i_entropy, i_sums, soft_j, rho_x, rho_y, beta):
    """:meth:`MeanFieldSCM.free_energy` from what the row side contributes (``i_entropy`` =
    ``sum <I> log <I>``, ``i_sums`` = ``sum_i <I_i>``), which a row block computes for its rows."""
    energy = -(offset + float(xlogy(block, c).sum()))
    kl = float(
        i_entropy
        - xlogy(i_sums, rho_x).sum()
        + xlogy(soft_j, soft_j).sum()
        - xlogy(soft_j.sum(axis=0), rho_y).sum()
    )
    prior = 0.0
    if model.alpha != 1.0:
        prior = (model.alpha - 1.0) * float(np.log(rho_x).sum() + np.log(rho_y).sum())
    return energy + (kl - prior) / beta


def _column_posteriors(rho_y, col_mass, c, beta):
    """``<J>`` of eq. (49) from ``col_mass = n^T <I>`` (M x Kx)."""
    with np.errstate(divide="ignore"):
        return _softmax_rows(np.log(rho_y)[None, :] + beta * _scores(col_mass, c.T))


@dataclass(frozen=True)
class TwoSidedBlocks:
    """The mean-field SCM's :class:`~latentzoo.inference.dask_backend.BlockEM`: each block keeps
    its rows' ``<I>`` (and ``p``); ``<J>``, ``c`` and the weights are the shared side.

    One pass per iteration: a block's pass takes ``<J>`` and ``c`` and returns its new ``<I>``
    with its shares of the statistics the column side needs (``n^T <I>``, M x Kx, the block
    counts, the row masses); the client then updates ``<J>`` as :meth:`MeanFieldSCM.step` does.
    The block counts ``<I>^T n <J>`` of the next iteration are ``(n^T <I>)^T <J>``, so no second
    pass is needed: the word side carries them (and the row side's entropy and sizes) to the next
    free energy. Same iterates as in memory up to the order of the sums; the start is the
    in-memory one (no shards). ``init`` and ``track_loglik`` as for :func:`mean_field`."""

    model: object
    init: object = field(default="acm", compare=False)
    track_loglik: bool = True
    row_names: tuple[str, ...] = ("I", "p")

    start_block = None
    carried = ("block", "i_entropy", "i_sums", "i_mass", "offset", "m_j")
    """Word-side entries the iteration carries that are not the fit's parameters."""

    def start(self, data, rng):
        problem = MeanFieldSCM(self.model, data, self.init, self.track_loglik)
        params = problem.init(rng)
        counts, soft_i = problem.counts, params["I"]
        return {**params, "block": soft_i.T @ np.asarray(counts.csr @ params["J"]),
                "i_entropy": xlogy(soft_i, soft_i).sum(), "i_sums": soft_i.sum(axis=0),
                "i_mass": counts.n_i @ soft_i, "offset": counts.offset,
                "m_j": counts.m_j}  # fmt: skip

    def globals_of(self, params):
        return {name: params[name] for name in ("J", "c", "rho_x", "q")}

    def block_pass(self, block, rows, shared, beta):
        csr = block.counts.astype(np.float64)
        soft_i, soft_j, c = rows["I"], shared["J"], shared["c"]
        row_mass = np.asarray(csr @ soft_j)  # (rows, Ky)
        loglik = np.nan
        if self.track_loglik:
            nonzero_rows = np.repeat(np.arange(block.n_rows), np.diff(csr.indptr))
            loglik = _plug_in_log_likelihood(
                csr, nonzero_rows, rows["p"], shared["q"], soft_i, soft_j, c
            )
        with np.errstate(divide="ignore"):
            new_i = _softmax_rows(np.log(shared["rho_x"])[None, :] + beta * _scores(row_mass, c))
        stats = {"block": new_i.T @ row_mass, "i_mass": block.row_totals.astype(float) @ new_i,
                 "i_sums": new_i.sum(axis=0), "i_entropy": xlogy(new_i, new_i).sum(),
                 "col_mass": np.asarray(csr.T @ new_i), "loglik": loglik}  # fmt: skip
        return {"I": new_i, "p": rows["p"]}, stats

    def m_step(self, params, stats, beta):
        model, soft_j, m_j = self.model, params["J"], params["m_j"]
        free = _free_energy(
            model, params["offset"], params["block"], params["c"], params["i_entropy"],
            params["i_sums"], soft_j, params["rho_x"], params["rho_y"], beta,
        )  # fmt: skip
        c = association(stats["block"], stats["i_mass"], m_j @ soft_j)
        soft_j = _column_posteriors(params["rho_y"], stats["col_mass"], c, beta)
        block = stats["col_mass"].T @ soft_j
        total = float(params["n_obs"])
        new = {
            "J": soft_j,
            "c": association(block, stats["i_mass"], m_j @ soft_j),
            "pi": block / total,
            "q": params["q"],
            "rho_x": model.map_weights(stats["i_sums"]),
            "rho_y": model.map_weights(soft_j.sum(axis=0)),
            "n_obs": params["n_obs"],
            "block": block,
            "offset": params["offset"],
            "m_j": m_j,
            **{name: stats[name] for name in ("i_entropy", "i_sums", "i_mass")},
        }
        return new, EMStats(float(free), float(stats["loglik"]))

    def finish(self, params):
        """The fit's parameters, as in memory (the carried statistics dropped)."""
        return {name: value for name, value in params.items() if name not in self.carried}


# ------------------------------------------------------------------------------ entry points
def hard_scm(
    model: TwoSidedClustering,
    data: CoOccurrence,
    max_iter: int = 100,
    random_state=None,
    init="acm",
    progressbar: bool = False,
):
    """Fit the hard SCM by alternating maximisation of the mutual information (eq. (44)-(45)).

    Runs on the shared driver (:func:`~latentzoo.inference.annealing.run_schedule`) until the
    partition stops changing or ``max_iter`` steps. The trace's ``log_likelihood`` is
    ``L MI + offset`` and never decreases.

    Parameters
    ----------
    model : TwoSidedClustering
    data : CoOccurrence
    max_iter : int
        ``(I, c, J, c)`` sweeps.
    random_state : int, Generator or None
    init : str or dict
        See :func:`initial_partition`; ``"acm"`` starts the rows at the hard ACM
        (:func:`latentzoo.inference.one_sided.hard_acm`, seed footnote 7).
    progressbar : bool

    Returns
    -------
    EMResult
        ``params``: the point estimate (one-hot ``I``, ``J``; ``c``, ``pi``, ``p``, ``q``, ``rho``).

    Examples
    --------
    >>> model = TwoSidedClustering(2, 2)
    >>> data, truth = model.simulate(0, n_rows=8, n_cols=8, n_tokens=400, separated=True)
    >>> result = hard_scm(model, data, random_state=0)
    >>> bool(result.converged), result.params["I"].shape
    (True, (8, 2))
    """
    return annealed_fit(
        model,
        data,
        lambda part: HardSCM(model, part, init=init),
        betas=[1.0],
        max_iter=max_iter,
        tol=1e-15,
        random_state=random_state,
        progressbar=progressbar,
        method="hard_scm",
        desc="hard SCM",
    )


def _check_mean_field_options(model, data, schedule, problem_options):
    overrelax, predictive = schedule["overrelax"], problem_options.pop("predictive", False)
    if overrelax != 1.0 or predictive:
        raise ValueError(
            "the mean-field SCM supports plain EM only (overrelax=1.0, predictive=False), got "
            f"overrelax={overrelax!r}, predictive={predictive!r}"
        )


mean_field = em_entry(
    MeanFieldSCM,
    """Fit the probabilistic SCM by mean-field annealed EM (eq. (48)-(49), appendix A).

    Parameters
    ----------
    model : TwoSidedClustering
    data : CoOccurrence
    init : str or dict
        See :func:`initial_partition` (``"acm"``: seed footnote 7).
    track_loglik : bool
        Record the plug-in log-likelihood (eq. (47)) in the trace.
    **schedule
        ``betas`` (default ``"auto"``), ``max_iter``, ``tol``, ``overrelax``, ``random_state``,
        ``validation_fraction``, ``beta_decay``, ``min_beta``, ``min_iter``, ``patience``,
        ``score_tol``, ``beta_patience``, ``progressbar``: the annealing schedule, documented once in
        :func:`~latentzoo.inference.annealing.annealed_fit`.
        Family defaults: as for the ACM, the posteriors stay nearly hard until ``beta`` times the
        number of observations of an object is of order one, hence ``beta_decay=0.5``,
        ``beta_patience=6`` and ``min_beta=0.002``; ``tol=1e-7`` because ``F`` includes the
        partition-independent ``-L (H(X) + H(Y))``. Only plain EM is supported (``overrelax=1``,
        no ``predictive``): ``c`` is no distribution to over-relax on the simplex, and the
        predictive E-step of section 5.2 is not defined for the mean-field posteriors.

    Returns
    -------
    EMResult
        ``params``: ``I`` (N x Kx) and ``J`` (M x Ky) posteriors, ``c``, ``pi``, ``p``, ``q``,
        ``rho_x``, ``rho_y``, ``n_obs``; ``trace``: beta, iteration, log_likelihood, free_energy.

    Examples
    --------
    >>> model = TwoSidedClustering(2, 2)
    >>> data, truth = model.simulate(0, n_rows=8, n_cols=8, n_tokens=400, separated=True)
    >>> result = mean_field(model, data, betas=[1.0], random_state=0)
    >>> result.params["J"].shape, bool(np.isfinite(result.perplexity(data)))
    ((8, 2), True)
    """,
    defaults={"tol": 1e-7, "beta_decay": 0.5, "min_beta": 0.002, "beta_patience": 6},
    check=_check_mean_field_options,
    method="mean_field",
    desc="mean-field SCM",
)


@nb.njit(cache=True)
def _tables(row_ptr, row_idx, row_val, labels_i, labels_j, n_i, m_j, kx, ky):
    block = np.zeros((kx, ky))
    for i in range(row_ptr.shape[0] - 1):
        for p in range(row_ptr[i], row_ptr[i + 1]):
            block[labels_i[i], labels_j[row_idx[p]]] += row_val[p]
    sizes_x = np.zeros(kx)
    mass_x = np.zeros(kx)
    for i in range(labels_i.shape[0]):
        sizes_x[labels_i[i]] += 1.0
        mass_x[labels_i[i]] += n_i[i]
    sizes_y = np.zeros(ky)
    mass_y = np.zeros(ky)
    for j in range(labels_j.shape[0]):
        sizes_y[labels_j[j]] += 1.0
        mass_y[labels_j[j]] += m_j[j]
    return block, sizes_x, mass_x, sizes_y, mass_y


@nb.njit(cache=True)
def _half_sweep(
    ptr, idx, val, totals, labels, other, block, swap, sizes, mass, sizes_other, alpha, eta, grand,
    state,
):  # fmt: skip
    """Resample every label of one side from its exact collapsed conditional (module docstring).

    ``ptr, idx, val``: the CSR of this side (rows of ``n`` for ``I``, of ``n^T`` for ``J``);
    ``block[a, b]`` is indexed (this side, other side) unless ``swap``.
    """
    k = sizes.shape[0]
    k_other = sizes_other.shape[0]
    occupied_other = 0
    for b in range(k_other):
        if sizes_other[b] > 0:
            occupied_other += 1
    occupied = 0
    for a in range(k):
        if sizes[a] > 0:
            occupied += 1
    r = np.zeros(k_other)
    weights = np.empty(k)
    for i in range(ptr.shape[0] - 1):
        for b in range(k_other):
            r[b] = 0.0
        for p in range(ptr[i], ptr[i + 1]):
            r[other[idx[p]]] += val[p]
        old = labels[i]
        n = totals[i]
        for b in range(k_other):
            if swap:
                block[b, old] -= r[b]
            else:
                block[old, b] -= r[b]
        sizes[old] -= 1.0
        mass[old] -= n
        if sizes[old] == 0:
            occupied -= 1
        top = -np.inf
        for a in range(k):
            s = sizes[a]
            lw = math.log(s + alpha)
            for b in range(k_other):
                if r[b] > 0:
                    w = block[b, a] if swap else block[a, b]
                    lw += math.lgamma(w + r[b] + eta) - math.lgamma(w + eta)
            lw += math.lgamma((s + 1.0) * eta) - math.lgamma(mass[a] + n + (s + 1.0) * eta)
            if s > 0:
                lw -= math.lgamma(s * eta) - math.lgamma(mass[a] + s * eta)
                n_blocks = occupied * occupied_other
            else:
                n_blocks = (occupied + 1) * occupied_other
            lw += math.lgamma(n_blocks * eta) - math.lgamma(grand + n_blocks * eta)
            weights[a] = lw
            if lw > top:
                top = lw
        cumulative = 0.0
        for a in range(k):
            cumulative += math.exp(weights[a] - top)
            weights[a] = cumulative
        u = next_uniform(state) * cumulative
        new = 0
        while new < k - 1 and weights[new] <= u:
            new += 1
        labels[i] = new
        for b in range(k_other):
            if swap:
                block[b, new] += r[b]
            else:
                block[new, b] += r[b]
        if sizes[new] == 0:
            occupied += 1
        sizes[new] += 1.0
        mass[new] += n


@nb.njit(cache=True)
def _sweep(
    row_ptr, row_idx, row_val, col_ptr, col_idx, col_val, n_i, m_j, labels_i, labels_j, block,
    sizes_x, mass_x, sizes_y, mass_y, alpha, eta, grand, state,
):  # fmt: skip
    _half_sweep(row_ptr, row_idx, row_val, n_i, labels_i, labels_j, block, False, sizes_x, mass_x,
                sizes_y, alpha, eta, grand, state)  # fmt: skip
    _half_sweep(col_ptr, col_idx, col_val, m_j, labels_j, labels_i, block, True, sizes_y, mass_y,
                sizes_x, alpha, eta, grand, state)  # fmt: skip


@nb.njit(cache=True)
def _many_chains_last_state(
    row_ptr, row_idx, row_val, col_ptr, col_idx, col_val, n_i, m_j, kx, ky, alpha, eta, seeds,
    sweeps,
):  # fmt: skip
    n_rows = n_i.shape[0]
    n_cols = m_j.shape[0]
    grand = n_i.sum()
    out = np.empty((seeds.shape[0], n_rows + n_cols), dtype=np.int64)
    state = np.empty(1, dtype=np.uint64)
    for c in range(seeds.shape[0]):
        state[0] = seeds[c]
        labels_i = uniform_labels(state, n_rows, kx)
        labels_j = uniform_labels(state, n_cols, ky)
        block, sizes_x, mass_x, sizes_y, mass_y = _tables(
            row_ptr, row_idx, row_val, labels_i, labels_j, n_i, m_j, kx, ky
        )
        for _ in range(sweeps):
            _sweep(row_ptr, row_idx, row_val, col_ptr, col_idx, col_val, n_i, m_j, labels_i,
                   labels_j, block, sizes_x, mass_x, sizes_y, mass_y, alpha, eta, grand,
                   state)  # fmt: skip
        out[c, :n_rows] = labels_i
        out[c, n_rows:] = labels_j
    return out


class TwoSidedState(NamedTuple):
    """State of one collapsed Gibbs chain: both partitions, count tables, generator state.
    (a NamedTuple of arrays updated in place, see :mod:`latentzoo.inference.mcmc`)."""

    I: np.ndarray  # noqa: E741
    J: np.ndarray
    block: np.ndarray
    sizes_x: np.ndarray
    mass_x: np.ndarray
    sizes_y: np.ndarray
    mass_y: np.ndarray
    rng_state: np.ndarray


class TwoSidedGibbs(CollapsedGibbs):
    """Collapsed Gibbs sampler of the Bayesian SCM, as ``init``/``step``/``draw``.

    A :class:`~latentzoo.inference.collapsed_gibbs.CollapsedGibbs` whose sweep visits the rows, then
    the columns.

    Examples
    --------
    >>> from latentzoo.data import load
    >>> sampler = TwoSidedGibbs(TwoSidedClustering(2, 2), load("toy"))
    >>> state = sampler.step(sampler.init(rng := np.random.default_rng(0)), rng)[0]
    >>> int(state.block.sum()) == load("toy").total
    True
    """

    state_type = TwoSidedState

    def __init__(self, model: TwoSidedClustering, data: CoOccurrence):
        self.model = model
        self.data = data
        csr = data.counts.astype(np.float64)
        csr_t = csr.T.tocsr()
        self.rows = (csr.indptr.astype(np.int64), csr.indices.astype(np.int64), csr.data)
        self.cols = (csr_t.indptr.astype(np.int64), csr_t.indices.astype(np.int64), csr_t.data)
        self.n_i = data.row_totals.astype(float)
        self.m_j = data.col_totals.astype(float)
        self.total = float(data.total)

    def init(self, rng: np.random.Generator, I=None, J=None) -> TwoSidedState:  # noqa: E741
        kx, ky = self.model.shape
        labels_i = rng.integers(0, kx, self.data.n_rows) if I is None else I
        labels_j = rng.integers(0, ky, self.data.n_cols) if J is None else J
        labels_i = np.array(labels_i, dtype=np.int64)
        labels_j = np.array(labels_j, dtype=np.int64)
        return self._start(rng, labels_i, labels_j)

    def _tables_of(self, labels_i, labels_j):
        kx, ky = self.model.shape
        return _tables(*self.rows, labels_i, labels_j, self.n_i, self.m_j, kx, ky)

    def _sweep(self, state: TwoSidedState) -> tuple:
        """One sweep over rows and columns (the module's ``_sweep``); reports the log joint only."""
        _sweep(
            *self.rows, *self.cols, self.n_i, self.m_j, state.I, state.J, state.block,
            state.sizes_x, state.mass_x, state.sizes_y, state.mass_y, float(self.model.alpha),
            float(self.model.eta), self.total, state.rng_state,
        )  # fmt: skip
        return ()

    def draw(self, state: TwoSidedState, rng: np.random.Generator) -> dict:
        """A draw-kind parameter dictionary: the labels and exact conditional Dirichlet draws.

        ``pi | I, J, S ~ Dir(W + eta)`` on the occupied blocks, ``psi^x_nu ~ Dir(n_i + eta, i in nu)``,
        ``psi^y`` likewise, ``rho^x ~ Dir(s + alpha)``, ``rho^y ~ Dir(t + alpha)``.
        """
        model = self.model
        kx, ky = model.shape
        occupied = np.outer(state.sizes_x > 0, state.sizes_y > 0)
        pi = np.zeros((kx, ky))
        pi[occupied] = dirichlet_rows(rng, state.block[occupied] + model.eta)
        psi_x = within_cluster(rng.standard_gamma(self.n_i + model.eta), state.I, kx)
        psi_y = within_cluster(rng.standard_gamma(self.m_j + model.eta), state.J, ky)
        return {
            "I": state.I.copy(),
            "J": state.J.copy(),
            "pi": pi,
            "psi_x": psi_x,
            "psi_y": psi_y,
            "rho_x": dirichlet_rows(rng, state.sizes_x + model.alpha),
            "rho_y": dirichlet_rows(rng, state.sizes_y + model.alpha),
        }

    def log_joint(self, state: TwoSidedState) -> float:
        """Collapsed ``log p(I, J, S)`` of the state (the sampler's target), for ``sample_stats``."""
        return float(
            collapsed_from_tables(
                state.sizes_x,
                state.sizes_y,
                state.mass_x,
                state.mass_y,
                state.block,
                self.n_i,
                self.m_j,
                self.model.alpha,
                self.model.eta,
            )  # fmt: skip
        )

    def _last_states(self, seeds, sweeps) -> np.ndarray:
        """The final states ``[I, J]``, concatenated (for
        :func:`~latentzoo.inference.compare.exact_test`)."""
        kx, ky = self.model.shape
        return _many_chains_last_state(
            *self.rows, *self.cols, self.n_i, self.m_j, kx, ky, float(self.model.alpha),
            float(self.model.eta), seeds, sweeps,
        )  # fmt: skip


def _prepare_gibbs(model, data, *, chains, draws, test=None, keep_params="auto"):
    """The family side of :func:`gibbs`: checks, sampler, draw, coordinates."""
    data, test = gibbs_data(model, data, test, CoOccurrence.coerce)
    sampler = TwoSidedGibbs(model, data)
    dyads = default_dyads(data)
    row_pairs = default_pairs(data.row_totals)
    col_pairs = default_pairs(data.col_totals)
    kx, ky = model.shape
    keep_params = keep_params_auto(keep_params, chains, draws, data.n_rows + data.n_cols + kx * ky)

    def draw(state, rng):
        params = sampler.draw(state, rng)
        out = model.invariants(params, data, dyads, row_pairs, col_pairs)
        out["counts"] = model.log_likelihood(params, test if test is not None else data)
        out["I"], out["J"] = params["I"], params["J"]
        if keep_params:
            out.update({k: params[k] for k in ("pi", "psi_x", "psi_y", "rho_x", "rho_y")})
        return out

    coords, dims = model.coords(data), model.dims
    return GibbsSetup(
        sampler, draw, coords, dims, test if test is not None else data, observed_dims=("row", "col"),
        start=lambda rng, labels: sampler.init(rng, *labels), desc="collapsed Gibbs (SCM)",
        label_axes=label_axes(model),
    )  # fmt: skip


def label_axes(model: TwoSidedClustering) -> tuple[LabelAxis, ...]:
    """The labels that switch between chains of a Gibbs or PyMC posterior of the two-sided
    model: row and column clusters, matched on how often each row (column) takes each label;
    ``pi``, ``rho_x`` and ``rho_y`` follow.

    Examples
    --------
    >>> [axis.dim for axis in label_axes(TwoSidedClustering(2, 3))]
    ['row_cluster', 'col_cluster']
    """
    kx, ky = model.shape
    return (LabelAxis("row_cluster", match=("I",), values=("I",), size=kx),
            LabelAxis("col_cluster", match=("J",), values=("J",), size=ky))  # fmt: skip


gibbs = gibbs_entry(
    _prepare_gibbs,
    """Collapsed Gibbs sampling of the Bayesian SCM, returned as ``InferenceData``.

    The posterior holds the partitions ``I`` (row) and ``J`` (col), named as in
    :meth:`TwoSidedClustering.pymc_model`; the conditional draws ``pi``, ``psi_x``, ``psi_y``,
    ``rho_x``, ``rho_y`` (when ``keep_params`` is True, or "auto" and they are small); and the
    invariants ``loglik``, ``p_dyad`` (dyad), ``coassign_rows`` (row_pair), ``coassign_cols``
    (col_pair) of the drawn parameters. ``log_likelihood`` holds ``counts`` (row): the per-row
    ``sum_j n_ij log p_ij`` of ``test`` (held-out, if given) or of ``data`` (token-sequence form);
    ``sample_stats`` holds ``lp``, the collapsed log joint.

    Parameters
    ----------
    initial_assignments : list of (I, J) label pairs, optional
        One start per chain (overrides ``chains``).
    """,
    toy_example=("TwoSidedClustering(2, 2)", "coassign_rows", "(2, 20, 15)"),
)


# ------------------------------------------------------------- certificate of the hard SCM
HARD_TOL = 1e-9
"""Tolerance of the hard SCM's certificate, relative to the magnitude of what is compared:
floating-point rounding only (every check is exact in exact arithmetic)."""

HARD_INSTANCES = 24
"""Instances of the hard SCM's optimality check (:func:`hard_instances`)."""

HARD_SHAPES = ((2, 2), (3, 3), (2, 3), (3, 2))
"""``(Kx, Ky)`` of the hard SCM's instances in turn: square ones, where a transposed table keeps
its shape, and unequal ones."""


def _hard_closed_form(model, data, labels_i, labels_j):
    """``(c, pi, rho_x, rho_y)`` of a hard partition recomputed from the counts: the block counts
    ``W = I^T n J``, ``c = W L / (W_nu. W_.mu)`` (eq. (42); 0 on empty blocks), ``pi = W / L``
    (eq. (43)) and the MAP weights ``max(s + alpha - 1, 0)`` normalised (eq. (48))."""
    kx, ky = model.shape
    counts = data.counts.astype(np.float64)
    block = one_hot(labels_i, kx).T @ np.asarray(counts @ one_hot(labels_j, ky))
    total = block.sum()
    margins = np.outer(block.sum(axis=1), block.sum(axis=0))
    c = np.where(block > 0, block * total / np.where(block > 0, margins, 1.0), 0.0)

    def weights(labels, k):
        sizes = np.maximum(np.bincount(labels, minlength=k) + model.alpha - 1.0, 0.0)
        return sizes / sizes.sum() if sizes.sum() > 0 else np.full(k, 1.0 / k)

    return c, block / total, weights(labels_i, kx), weights(labels_j, ky)


def _single_move_gain(mass, c, labels) -> float:
    """Largest gain ``max_nu h_{a nu} - h_{a, z_a}`` of moving one object, ``h = mass log c^T``
    (eq. (44); ``-inf`` where positive mass meets ``c = 0``), relative to ``1 + |h_{a, z_a}|``."""
    with np.errstate(divide="ignore", invalid="ignore"):
        log_c = np.log(c)
        h = np.where(mass[:, None, :] > 0, mass[:, None, :] * log_c[None, :, :], 0.0).sum(axis=2)
    own = h[np.arange(len(labels)), labels]
    excess = (h.max(axis=1) - own) / (1.0 + np.abs(own))
    return float(np.max(np.where(np.isfinite(excess), excess, np.inf), initial=0.0))


def _assign_violations(mass, c, before, after) -> int:
    """Objects whose new label ``after`` breaks the assignment rule of eq. (44) from ``before`` at
    ``c``: a label that does not maximise ``h = mass log c^T`` (to :data:`HARD_TOL`), or a move
    away from a current label that does (ties keep the current cluster)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        log_c = np.log(c)
        h = np.where(mass[:, None, :] > 0, mass[:, None, :] * log_c[None, :, :], 0.0).sum(axis=2)
    best = h.max(axis=1)
    items = np.arange(len(before))

    def maximal(labels):
        value = h[items, labels]
        return (value == best) | (value >= best - HARD_TOL * (1.0 + np.abs(best)))

    return int(np.count_nonzero(~maximal(after) | (maximal(before) & (after != before))))


def _sweep_violations(model, data, method, rng) -> int:
    """Objects that one ``(I, c, J, c)`` sweep of ``method`` (``max_iter = 1``) from random labels
    moves against eq. (44)-(45): the rows at ``c`` of the start, then the columns at ``c`` of the
    new rows and the old columns, each ``c`` recomputed from the counts (eq. (42))."""
    (kx, ky), counts = model.shape, data.counts.astype(np.float64)
    start_i, start_j = rng.integers(0, kx, data.n_rows), rng.integers(0, ky, data.n_cols)
    swept = method(model, data, max_iter=1, init={"I": start_i, "J": start_j})
    new_i, new_j = np.argmax(swept.params["I"], axis=1), np.argmax(swept.params["J"], axis=1)
    c = _hard_closed_form(model, data, start_i, start_j)[0]
    rows = _assign_violations(np.asarray(counts @ one_hot(start_j, ky)), c, start_i, new_i)
    c = _hard_closed_form(model, data, new_i, start_j)[0]
    mass = np.asarray(counts.T @ one_hot(new_i, kx))
    return rows + _assign_violations(mass, c.T, start_j, new_j)


def hard_certificate(model, data, result, method=None, rng=None) -> list:
    """Checks of a :func:`hard_scm` result, recomputed from the counts (not its own updates).

    - *parameters*: ``c``, ``pi``, ``rho_x``, ``rho_y`` are the closed form (eq. (42), (43),
      (48)) of the returned partition;
    - *local optimum*: the run converged, and no single row (column) raises the likelihood by
      joining another cluster at that ``c`` (eq. (44)-(45): ``h_{i nu} = sum_j n_ij log c_{nu
      J_j}``, the Lagrange term ``n_i`` being the same for every ``nu``; the ``N x Kx`` and
      ``M x Ky`` tables from the cluster sums). Both: a fixed point of the alternation;
    - *fixed point kept* (with ``method``): started at the returned partition with every object
      without observations moved to the last cluster (which changes neither ``c`` nor any
      ``h``, so the start is a fixed point as well), ``method`` returns that start unchanged:
      ties keep the current cluster;
    - *one sweep* (with ``method`` and ``rng``): from random labels, one sweep of ``method``
      moves every row, then every column, as eq. (44) asks at ``c`` recomputed from the counts
      after the previous half-step (a stale or transposed ``c`` only shows along the way: the
      fixed point it ends at may still be one).

    Each :class:`~latentzoo.inference.checks.Check` holds its ``violation`` (0 when exact) and
    ``tolerance`` (:data:`HARD_TOL`).
    """
    from latentzoo.inference.validation import hard_check, single_move_check

    labels_i = np.argmax(result.params["I"], axis=1)
    labels_j = np.argmax(result.params["J"], axis=1)
    expected = _hard_closed_form(model, data, labels_i, labels_j)
    names = ("c", "pi", "rho_x", "rho_y")
    params = max(
        float(np.max(np.abs(np.asarray(result.params[name]) - value) / (1.0 + np.abs(value))))
        for name, value in zip(names, expected, strict=True)
    )
    counts = data.counts.astype(np.float64)
    c = expected[0]
    moved = max(
        _single_move_gain(np.asarray(counts @ one_hot(labels_j, model.shape[1])), c, labels_i),
        _single_move_gain(np.asarray(counts.T @ one_hot(labels_i, model.shape[0])), c.T, labels_j),
    )
    checks = [
        hard_check("hard returns the closed-form c, pi, rho of its partition (eq. (42)-(48))",
                   params, "largest relative difference of c, pi, rho_x, rho_y from the closed "
                   "form recomputed from the counts", HARD_TOL),
        single_move_check("hard ends at a single-move optimum of its partition (eq. (44)-(45))",
                          moved, result.converged, "row or column", "c", HARD_TOL),
    ]  # fmt: skip
    if method is not None:
        start_i = np.where(data.row_totals > 0, labels_i, model.shape[0] - 1)
        start_j = np.where(data.col_totals > 0, labels_j, model.shape[1] - 1)
        again = method(model, data, init={"I": start_i, "J": start_j})
        changed = np.count_nonzero(np.argmax(again.params["I"], axis=1) != start_i)
        changed += np.count_nonzero(np.argmax(again.params["J"], axis=1) != start_j)
        checks.append(hard_check(
            "hard started at a fixed point returns it (ties keep the current cluster)", changed,
            "objects moved from a start at the returned partition with its objects without "
            "observations in the last cluster", 0.0,
        ))  # fmt: skip
    if method is not None and rng is not None:
        checks.append(hard_check(
            "one hard sweep moves rows, then columns, as eq. (44) asks",
            _sweep_violations(model, data, method, rng),
            "objects moved against the rule at c recomputed after each half-step, in one sweep "
            "from random labels", 0.0,
        ))  # fmt: skip
    return checks


def hard_instances(method, model, rng) -> list:
    """The hard SCM's optimality instances, each certified: one list of checks per instance.

    Data from the prior at the model's priors, shapes :data:`HARD_SHAPES` in turn, 8 rows x 10
    columns x 200 tokens (the mean-field level's sizes) plus a row and a column without
    observations (where the tie rule decides); ``method`` at its defaults (the hard ACM start).
    """
    from latentzoo.inference.validation import certified

    checks = []
    for number in range(HARD_INSTANCES):
        kx, ky = HARD_SHAPES[number % len(HARD_SHAPES)]
        instance = TwoSidedClustering(kx, ky, alpha=model.alpha, eta=model.eta)
        drawn, _ = instance.simulate(rng, n_rows=8, n_cols=10, n_tokens=200)
        data = CoOccurrence(sp.block_diag([drawn.counts, sp.csr_matrix((1, 1))], format="csr"))
        checks.append(certified(_hard_fit_and_certify, method, instance, data, rng))
    return checks


def _hard_fit_and_certify(method, model, data, rng) -> list:
    result = method(model, data, max_iter=200, random_state=int(rng.integers(2**31)))
    return hard_certificate(model, data, result, method, rng)


# ------------------------------------------------------------------------------ the family
def validation_recipe():
    """How :func:`latentzoo.validate` checks the SCM's methods (a ``ValidationRecipe``)."""
    from latentzoo.inference.recipes import two_sided

    # The optimality level also certifies the hard method on this family's instances.
    return dataclasses.replace(two_sided(TwoSidedGibbs), hard_instances=hard_instances)


_MEAN_FIELD = Method(
    mean_field,
    with_defaults(
        (
            *SCHEDULE_OPTIONS,
            anything("init", "acm", f"starting partition: one of {INITS}, or a dict with 'I'"),
            flag("track_loglik", True, "record the log-likelihood of each iterate"),
        ),
        mean_field.defaults,
    ),
    blocks=TwoSidedBlocks,
)
FAMILY = Family(
    name="two_sided",
    model=TwoSidedClustering,
    methods={
        "hard": Method(
            hard_scm,
            hard_options(
                anything("init", "acm", f"starting partition: one of {INITS}, or a dict with 'I'")
            ),
        ),
        "mean_field": _MEAN_FIELD,
        "annealed_em": _MEAN_FIELD,
        "gibbs": Method(gibbs, GIBBS_METHOD_OPTIONS),
    },
    recipe=validation_recipe,
    sizes=("n_row_clusters", "n_col_clusters"),
    dataset="reuters",
    notebook="notebooks/clustering_models.ipynb",
    description="two-sided clustering / symmetric clustering model, SCM (sec. 3.3-3.4)",
)
"""The two-sided clustering model's family (listed in :mod:`latentzoo.zoo`)."""
