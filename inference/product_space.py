"""Fast inference for the product-space mixture model: fused annealed EM on the shared driver.

Hofmann & Puzicha (1998), section 2.4, eq. (15)-(19); the model is
:class:`latentzoo.models.product_space.ProductSpaceMixture`.
"""

from __future__ import annotations

from dataclasses import dataclass

import numba as nb
import numpy as np

from latentzoo.data import CoOccurrence
from latentzoo.inference._log_space_fallback import redo_pairs_in_log_space
from latentzoo.inference.annealing import (
    EMProblem,
    EMStats,
    balanced_row_chunks,
    check_map_priors,
    em_entry,
    normalise_rows,
    numba_threads,
)
from latentzoo.inference.em import accumulate_log, kernel_dtype, kernel_floor
from latentzoo.inference.family import (
    DTYPE,
    SCHEDULE_OPTIONS,
    THREADS,
    Family,
    Method,
    with_defaults,
)
from latentzoo.models.product_space import ProductSpaceMixture

__all__ = ["ProductSpaceBlocks", "ProductSpaceEM", "product_space_em", "product_space_pass"]


# =================================================================== product-space mixture model
# Hofmann & Puzicha (1998), section 2.4, eq. (15)-(19). The E-step posterior of observation (i, j)
# over the Kx*Ky class pairs is proportional to (pi[nu,mu] a[i,nu] b[j,mu])**beta, which factorises
# as pi**beta * a**beta * b**beta: the power is applied once per iteration to the three tables
# (``P``, ``A`` = p_row.T**beta, ``B`` = q_col.T**beta). With ``u_i = A[i] @ P`` (Ky values per row),
# ``s_ij = u_i . B[j]`` and ``r_ij = n_ij / s_ij``, every M-step sum factors through per-row and
# per-column accumulators, so no Kx*Ky posterior is ever formed:
#
#     acc_i = sum_j r_ij B[j]                  (Ky)
#     N_a[i, nu]     = A[i, nu] (P @ acc_i)[nu]            eq. (18)
#     N_b[j, mu]     = B[j, mu] sum_i r_ij u_i[mu]         eq. (19)
#     N_pi[nu, mu]   = P[nu, mu] sum_i A[i, nu] acc_i[mu]
#
# Cost per pass: 3 Ky multiply-adds per non-zero plus 3 Kx Ky per row, i.e. O(nnz Ky + N Kx Ky).
@nb.njit(cache=True, nogil=True, fastmath=True, error_model="numpy")
def _pmm_rows(
    first, last, indptr, indices, counts, t_pi, t_a, t_b, pi, a, b, n_a, acc_b, acc_pi, floor,
    grad_a, fallback, tiny,
):  # fmt: skip
    """Fused PMM E/M over rows ``first:last``; returns (sum n log s_beta, sum n log p_ij).

    ``t_pi`` (Kx x Ky), ``t_a`` (N x Kx) and ``t_b`` (M x Ky) are the tempered tables; ``pi``, ``a``,
    ``b`` the plain ones (empty ``a`` when the untempered log-likelihood is not tracked). Fills
    ``n_a`` for these rows and adds into ``acc_b`` (M x Ky) and ``acc_pi`` (Kx x Ky). ``s`` is
    summed in float64 whatever the tables' dtype; with a non-empty ``grad_a`` (N x Kx, float32
    tables) it also stores ``d energy / d t_a``, for the first-order rounding correction.
    Non-zeros with ``s < tiny`` (their terms underflowed) are flagged in ``fallback`` and left
    out of the energy and the sums, for the log-space redo below.
    """
    kx, ky = t_pi.shape
    u = np.empty(ky)
    acc = np.empty(ky, dtype=t_pi.dtype)
    plain_u = np.empty(ky)
    zero = 0.0
    gradient = grad_a.shape[0] > 0
    energy = 0.0
    product = 1.0
    loglik = 0.0
    track = a.shape[0] > 0
    for i in range(first, last):
        for mu in range(ky):
            u[mu] = zero
            acc[mu] = floor - floor
            plain_u[mu] = 0.0
        for nu in range(kx):
            w = t_a[i, nu]
            for mu in range(ky):
                u[mu] += w * t_pi[nu, mu]
        if track:
            for nu in range(kx):
                w = a[i, nu]
                for mu in range(ky):
                    plain_u[mu] += w * pi[nu, mu]
        for p in range(indptr[i], indptr[i + 1]):
            j = indices[p]
            s = zero
            for mu in range(ky):
                s += u[mu] * t_b[j, mu]
            n = counts[p]
            if track:
                plain = 0.0
                for mu in range(ky):
                    plain += plain_u[mu] * b[j, mu]
                loglik += n * np.log(plain)
            if s < tiny:
                fallback[p] = True
                continue
            fallback[p] = False
            s = max(s, floor)
            energy, product = accumulate_log(energy, product, n, s)
            r = n / s
            for mu in range(ky):
                acc[mu] += r * t_b[j, mu]
                acc_b[j, mu] += r * u[mu]
        for nu in range(kx):
            w = t_a[i, nu]
            total = floor - floor
            for mu in range(ky):
                total += t_pi[nu, mu] * acc[mu]
                acc_pi[nu, mu] += w * acc[mu]
            n_a[i, nu] = w * total
            if gradient:
                grad_a[i, nu] = total
    return energy + np.log(product), loglik


@nb.njit(cache=True, nogil=True, parallel=True)
def _pmm_parallel(
    bounds, indptr, indices, counts, t_pi, t_a, t_b, pi, a, b, n_a, buffers_b, buffers_pi, floor,
    grad_a, fallback, tiny,
):  # fmt: skip
    n_chunks = bounds.shape[0] - 1
    energies = np.zeros(n_chunks)
    logliks = np.zeros(n_chunks)
    for c in nb.prange(n_chunks):
        buffers_b[c, :, :] = 0
        buffers_pi[c, :, :] = 0
        e, ll = _pmm_rows(
            bounds[c], bounds[c + 1], indptr, indices, counts, t_pi, t_a, t_b, pi, a, b, n_a,
            buffers_b[c], buffers_pi[c], floor, grad_a, fallback, tiny,
        )  # fmt: skip
        energies[c] = e
        logliks[c] = ll
    return energies.sum(), logliks.sum()


def product_space_pass(
    data: CoOccurrence,
    pi,
    a,
    b,
    beta=1.0,
    track_loglik=True,
    n_threads=1,
    dtype=np.float64,
    counts=None,
):
    """One fused E/M pass of the product-space mixture model (seed eq. (16), (18), (19)).

    Parameters
    ----------
    data : CoOccurrence
    pi : (Kx, Ky) array
    a : (N, Kx) array, ``p_row`` transposed (``a[i, nu] = p_{i|nu}``)
    b : (M, Ky) array, ``q_col`` transposed (``b[j, mu] = q_{j|mu}``)
    beta : float
        Inverse temperature.
    track_loglik : bool
        Also accumulate the untempered joint log-likelihood (free when ``beta == 1``).
    n_threads, dtype, counts
        As for :func:`em_pass`.

    Returns
    -------
    n_pi : (Kx, Ky), n_a : (N, Kx), n_b : (M, Ky) expected counts; energy, loglik
        ``energy = sum_ij n_ij log sum_{nu,mu} (pi a b)**beta`` and
        ``loglik = sum_ij n_ij log p_ij`` (the joint, eq. (2); NaN when not tracked).

    Examples
    --------
    >>> from latentzoo.data import load
    >>> data = load("toy")
    >>> rng = np.random.default_rng(0)
    >>> pi = rng.dirichlet(np.ones(6)).reshape(2, 3)
    >>> a = rng.dirichlet(np.ones(6), 2).T.copy(); b = rng.dirichlet(np.ones(8), 3).T.copy()
    >>> n_pi, n_a, n_b, energy, ll = product_space_pass(data, pi, a, b)
    >>> [bool(np.isclose(x.sum(), data.total)) for x in (n_pi, n_a, n_b)]
    [True, True, True]
    """
    dtype = kernel_dtype(dtype)
    csr = data.counts
    if counts is None:
        # float64 whatever the tables: float32 would round counts above 2**24.
        counts = csr.data.astype(np.float64)
    log_scale = 0.0
    if beta == 1.0:
        exact = [np.ascontiguousarray(x, dtype=np.float64) for x in (pi, a, b)]
        tables = [np.ascontiguousarray(x, dtype=dtype) for x in exact]
        tops = [1.0, 1.0, 1.0]
        track_loglik = False
    else:
        # Each table is divided by its largest entry (per row of a and b) before the power: far
        # from beta = 1 the raw powers underflow (0.1**1000), the scaled ones keep their best
        # entry at 1. The posteriors do not change; the energy gets the scales back below.
        exact, tables, scales, tops = [], [], [], []
        for table, per_row in ((pi, False), (a, True), (b, True)):
            table = np.asarray(table, dtype=np.float64)
            top = table.max(axis=1, keepdims=True) if per_row else np.array([[table.max()]])
            top = np.where(top > 0, top, 1.0)
            exact.append(np.ascontiguousarray((table / top) ** beta))
            tables.append(np.ascontiguousarray(exact[-1], dtype=dtype))
            scales.append(beta * np.log(top[:, 0]))
            tops.append(top)
        log_scale = (
            scales[0][0] * data.total + data.row_totals @ scales[1] + data.col_totals @ scales[2]
        )
    t_pi, t_a, t_b = tables
    floor = kernel_floor(dtype)
    if track_loglik:
        plain = [np.ascontiguousarray(x, dtype=np.float64) for x in (pi, a, b)]
    else:
        plain = [np.empty((0, x.shape[1])) for x in (pi, a, b)]
    n_a = np.empty_like(t_a)
    rounded = dtype is not np.float64
    grad_a = np.empty(t_a.shape if rounded else (0, t_a.shape[1]))
    fallback = np.empty(csr.nnz, dtype=np.bool_)
    # float32 tables lose terms below their range (set to 0), so their s is trusted higher up.
    tiny = 2.0**-40 if rounded else 1e-250
    if n_threads <= 1:
        acc_b = np.zeros_like(t_b)
        acc_pi = np.zeros_like(t_pi)
        energy, loglik = _pmm_rows(
            0, data.n_rows, csr.indptr, csr.indices, counts, t_pi, t_a, t_b, *plain, n_a,
            acc_b, acc_pi, floor, grad_a, fallback, tiny,
        )  # fmt: skip
    else:
        with numba_threads(n_threads):
            bounds = balanced_row_chunks(csr.indptr, n_threads)
            buffers_b = np.empty((len(bounds) - 1, *t_b.shape), dtype=dtype)
            buffers_pi = np.empty((len(bounds) - 1, *t_pi.shape), dtype=dtype)
            energy, loglik = _pmm_parallel(
                bounds, csr.indptr, csr.indices, counts, t_pi, t_a, t_b, *plain, n_a,
                buffers_b, buffers_pi, floor, grad_a, fallback, tiny,
            )  # fmt: skip
        acc_b, acc_pi = buffers_b.sum(axis=0), buffers_pi.sum(axis=0)
    if rounded:
        # float32 tables: expected counts from the exact (float64) tables, so a probability
        # below float32's range is not zeroed, and the energy corrected to first order for the
        # tables' rounding (its derivative by each table entry is that entry's accumulator): the
        # free energy of the exact parameters, which EM cannot increase, not of their rounding.
        grads = (acc_pi.astype(np.float64), grad_a, acc_b.astype(np.float64))
        energy += sum(
            float(np.sum((e - t) * g)) for e, t, g in zip(exact, tables, grads, strict=True)
        )
        n_pi, n_a, n_b = (e * g for e, g in zip(exact, grads, strict=True))
    else:
        n_b = t_b * acc_b
        n_pi = t_pi * acc_pi
    positions = np.flatnonzero(fallback)
    if positions.size:
        n_pi, n_a, n_b = (np.array(x, dtype=np.float64) for x in (n_pi, n_a, n_b))
        with np.errstate(divide="ignore"):
            logs = [
                beta * (np.log(np.asarray(x, dtype=np.float64)) - np.log(top))
                for x, top in zip((pi, a, b), tops, strict=True)
            ]
        rows = np.searchsorted(csr.indptr, positions, side="right") - 1
        # Every row cluster pairs with every column cluster, pair nu * Ky + mu weighted by pi.
        log_pi, log_a, log_b = logs
        pair_row, pair_col = (x.ravel() for x in np.indices(log_pi.shape))
        energy += redo_pairs_in_log_space(
            positions, rows, csr.indices, counts, pair_row, pair_col, log_pi.ravel(),
            log_a, log_b, n_pi.reshape(-1), n_a, n_b,
        )  # fmt: skip
    energy = energy + log_scale
    if not track_loglik:
        loglik = energy if beta == 1.0 else np.nan
    return (
        n_pi.astype(np.float64),
        n_a.astype(np.float64),
        n_b.astype(np.float64),
        float(energy),
        float(loglik),
    )


class ProductSpaceEM(EMProblem):
    """The product-space mixture model's :class:`~latentzoo.inference.annealing.EMProblem`.

    MAP estimation under the model's Dirichlet priors (pseudo-counts ``alpha - 1`` on ``pi``,
    ``eta - 1`` on ``p_row`` and ``q_col``; 1 gives maximum likelihood of the joint eq. (2) with
    (16)). ``free_energy`` is ``-(1/beta) sum n log sum_{nu,mu} (pi a b)**beta - log prior``, which
    EM cannot increase at fixed ``beta``; the trace's ``log_likelihood`` is the model's
    (conditional) :meth:`~latentzoo.models.aspect.ProductSpaceMixture.log_likelihood`.

    The parameters it passes around hold ``pi`` flattened to ``(Kx*Ky,)``: the driver's
    over-relaxed step projects every row of a parameter onto the simplex, and ``pi`` is one
    distribution over all pairs. :func:`product_space_em` returns it as ``Kx x Ky``.

    Parameters
    ----------
    model : ProductSpaceMixture
    data : CoOccurrence
    n_threads : int
    dtype : numpy float type
        Precision of the kernel's tables (see :func:`em_pass`).

    Examples
    --------
    >>> from latentzoo.data import load
    >>> from latentzoo.models.product_space import ProductSpaceMixture
    >>> problem = ProductSpaceEM(ProductSpaceMixture(2, 2), load("toy"))
    >>> params = problem.init(np.random.default_rng(0))
    >>> new, stats = problem.step(params, 1.0)
    >>> bool(problem.step(new, 1.0)[1].free_energy <= stats.free_energy)
    True
    """

    monotone = True

    def __init__(
        self, model: ProductSpaceMixture, data: CoOccurrence, n_threads=1, dtype=np.float64
    ):
        check_map_priors(model, hint=False)  # no sampler for this family
        self.model = model
        self.data = data
        self.n_threads = n_threads
        self.dtype = kernel_dtype(dtype)
        self.counts = data.counts.data.astype(np.float64)
        self.observed_rows = np.flatnonzero(data.row_totals > 0)

    def init(self, rng):
        """A random start that is far from the symmetric saddle point of EM.

        ``pi ~ Dir(1)`` over the pairs (far from rank one, so ``P(y|x)`` differs between rows from
        the first step on) and ``p_row``, ``q_col`` as the M-step of random soft memberships
        ``r_i ~ Dir(1)`` over the row clusters and ``c_j ~ Dir(1)`` over the column clusters:
        ``p_{i|nu} ∝ (n_i + 1) r_i[nu]``, ``q_{j|mu} ∝ (n_j + 1) c_j[mu]`` (no observed row or
        column starts at zero). Measured: with ``pi`` near uniform and the marginals perturbed by
        +-50% instead, EM sat on a plateau at the unigram likelihood for ~20 iterations, long
        enough for the tempered schedule's early stopping to give up on small data.
        """
        kx, ky = self.model.n_row_clusters, self.model.n_col_clusters
        data = self.data
        pi = rng.dirichlet(np.ones(kx * ky))
        tables = []
        for totals, k in ((data.row_totals, kx), (data.col_totals, ky)):
            memberships = rng.dirichlet(np.ones(k), size=totals.shape[0])
            table = (memberships * (totals + 1.0)[:, None]).T
            tables.append(table / table.sum(axis=1, keepdims=True))
        return {"pi": pi, "p_row": tables[0], "q_col": tables[1]}

    def step(self, params, beta):
        kx, ky = self.model.n_row_clusters, self.model.n_col_clusters
        pi = np.asarray(params["pi"]).reshape(kx, ky)
        p_row, q_col = params["p_row"], params["q_col"]
        n_pi, n_a, n_b, energy, joint = product_space_pass(
            self.data, pi, p_row.T, q_col.T, beta, n_threads=self.n_threads, dtype=self.dtype,
            counts=self.counts,
        )  # fmt: skip
        marginal = _row_marginal(self.data, self.observed_rows, p_row, pi)
        with np.errstate(divide="ignore"):
            p_row_logs = np.log(p_row).sum() if self.model.eta != 1.0 else 0.0
        new, stats = _m_step(self.model, pi, q_col, n_pi, n_b, energy, joint, marginal,
                             p_row_logs, beta)  # fmt: skip
        new["p_row"] = normalise_rows(n_a.T, self.model.eta - 1.0, self.data.n_rows)
        return new, stats


def _row_marginal(data: CoOccurrence, observed, p_row, pi) -> float:
    """``sum_i n_i log p_i`` over the ``observed`` rows (with ``eta = 1`` an empty row's ``p_i``
    is 0): what the joint log-likelihood loses to the trace's conditional one."""
    with np.errstate(divide="ignore"):
        p_i = p_row[:, observed].T @ pi.sum(axis=1)
        return data.row_totals[observed] @ np.log(p_i)


def _m_step(model, pi, q_col, n_pi, n_b, energy, joint, marginal, p_row_logs, beta):
    """The M-step of the word side (``pi``, ``q_col``) and the :class:`EMStats` of the
    parameters the E-step used; ``p_row_logs`` is ``sum log p_row`` (its prior's share)."""
    kx, ky = pi.shape
    prior = 0.0
    with np.errstate(divide="ignore"):
        if model.alpha != 1.0:
            prior += (model.alpha - 1.0) * np.log(pi).sum()
        if model.eta != 1.0:
            prior += (model.eta - 1.0) * (p_row_logs + np.log(q_col).sum())
    free = -energy / beta - prior
    new = {
        "pi": normalise_rows(n_pi.reshape(1, -1), model.alpha - 1.0, kx * ky)[0],
        "q_col": normalise_rows(n_b.T, model.eta - 1.0, q_col.shape[1]),
    }
    with np.errstate(invalid="ignore"):  # -inf - -inf on an overshooting step the driver drops
        return new, EMStats(float(free), float(joint - marginal))


@dataclass(frozen=True)
class ProductSpaceBlocks:
    """The product-space mixture's :class:`~latentzoo.inference.dask_backend.BlockEM`: each
    block holds its rows of ``p_row`` (as ``p_row_numer``, the M-step's numerators ``n_a + eta -
    1``: ``p_row`` is normalised over all rows, so the word side carries the column sums,
    ``p_row_total``, and a pass divides); ``pi`` and ``q_col`` are shared. The block pass is
    :func:`product_space_pass`, the M-step that of :class:`ProductSpaceEM`. The start is the
    in-memory one (no shards)."""

    model: object
    n_threads: int = 1
    dtype: str = "float64"
    row_names: tuple[str, ...] = ("p_row_numer",)

    start_block = None

    def start(self, data, rng):
        params = ProductSpaceEM(self.model, data).init(rng)
        p_row = params.pop("p_row")
        # Divided by ones: the first pass sees p_row bit for bit.
        return {**params, "p_row_numer": p_row.T, "p_row_total": np.ones(len(p_row)),
                "n_rows": data.n_rows}  # fmt: skip

    def globals_of(self, params):
        kx, ky = self.model.n_row_clusters, self.model.n_col_clusters
        return {
            "pi": np.asarray(params["pi"]).reshape(kx, ky),
            "b": np.ascontiguousarray(params["q_col"].T),
            "p_row_total": params["p_row_total"],
            "n_rows": params["n_rows"],
        }

    def block_pass(self, block, rows, shared, beta):
        a = _p_row_t(rows["p_row_numer"], shared["p_row_total"], shared["n_rows"])
        n_pi, n_a, n_b, energy, joint = product_space_pass(
            block, shared["pi"], a, shared["b"], beta, n_threads=self.n_threads, dtype=self.dtype
        )
        with np.errstate(divide="ignore"):
            p_row_logs = np.log(a).sum() if self.model.eta != 1.0 else 0.0
        pseudo = self.model.eta - 1.0
        numer = n_a + pseudo if pseudo else n_a
        observed = np.flatnonzero(block.row_totals > 0)
        stats = {"n_pi": n_pi, "n_b": n_b, "energy": energy, "p_row_logs": p_row_logs,
                 "joint": joint, "marginal": _row_marginal(block, observed, a.T, shared["pi"]),
                 "numer_sum": numer.sum(axis=0)}  # fmt: skip
        return {"p_row_numer": numer}, stats

    def m_step(self, params, stats, beta):
        shared = self.globals_of(params)
        new, em_stats = _m_step(
            self.model, shared["pi"], params["q_col"], stats["n_pi"], stats["n_b"],
            stats["energy"], stats["joint"], stats["marginal"], stats["p_row_logs"], beta,
        )  # fmt: skip
        return {**new, "p_row_total": stats["numer_sum"], "n_rows": params["n_rows"]}, em_stats

    def finish(self, params):
        """``p_row`` (``Kx x N``) from its numerators and ``pi`` as ``Kx x Ky``, as in memory."""
        p_row = _p_row_t(params.pop("p_row_numer"), params.pop("p_row_total"), params.pop("n_rows"))
        shape = (self.model.n_row_clusters, self.model.n_col_clusters)
        return {**params, "pi": np.reshape(params["pi"], shape), "p_row": p_row.T}


def _p_row_t(numer, total, n_rows):
    """``p_row.T`` of a block from its numerators and the column sums over all rows (uniform
    where a column has no mass, as :func:`normalise_rows`)."""
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(total > 0, numer / total, 1.0 / n_rows)


def _reshape_pi(model, data, result):
    """``pi`` as the ``Kx x Ky`` matrix (the kernels hold it flat)."""
    shape = (model.n_row_clusters, model.n_col_clusters)
    result.params = {**result.params, "pi": np.reshape(result.params["pi"], shape)}
    return result


product_space_em = em_entry(
    ProductSpaceEM,
    """Fit the product-space mixture model by annealed EM (Hofmann & Puzicha 1998, sections 2.4, 5).

    The same driver and options as :func:`annealed_em` (without the predictive E-step): ``betas``
    ``"auto"`` (tempered EM, the schedule chosen on a validation split by the held-out conditional
    perplexity), ``"early_stopping"`` or an explicit list; ``max_iter`` per temperature; ``tol`` on
    the relative free-energy change; ``overrelax`` (EM(eta), eq. (63)); ``n_threads`` and ``dtype``
    of the fused kernel (:func:`product_space_pass`).

    The default ``tol`` is tighter than the aspect model's: started near the symmetric point the
    PMM crosses a plateau at the unigram likelihood (measured on separated data: relative changes
    below 1e-5 for ~20 iterations) that a looser tolerance mistakes for convergence.

    Returns
    -------
    EMResult
        ``params``: ``pi`` (Kx x Ky), ``p_row`` (Kx x N), ``q_col`` (Ky x M). The trace's
        ``log_likelihood`` is the conditional one; ``free_energy`` is that of the joint model.

    Examples
    --------
    >>> from latentzoo.data import load
    >>> from latentzoo.models.product_space import ProductSpaceMixture
    >>> result = product_space_em(ProductSpaceMixture(2, 2), load("toy"), betas=[0.8, 1.0],
    ...                           random_state=0)
    >>> result.params["pi"].shape, result.params["p_row"].shape
    ((2, 2), (2, 6))
    """,
    defaults={"tol": 1e-8},
    finish=_reshape_pi,
)


# ------------------------------------------------------------------------------ the family
def validation_recipe():
    """How :func:`latentzoo.validate` checks the PMM's EM (a ``ValidationRecipe``)."""
    from latentzoo.inference.recipes import product_space

    return product_space()


FAMILY = Family(
    name="product_space",
    model=ProductSpaceMixture,
    methods={
        "annealed_em": Method(
            product_space_em,
            with_defaults((*SCHEDULE_OPTIONS, THREADS, DTYPE), product_space_em.defaults),
            blocks=ProductSpaceBlocks,
        ),
    },
    recipe=validation_recipe,
    sizes=("n_row_clusters", "n_col_clusters"),
    dataset="reuters",
    notebook="notebooks/clustering_models.ipynb",
    description="product-space mixture / PMM (Hofmann & Puzicha 1998, sec. 2.4)",
)
"""The product-space mixture's family (listed in :mod:`latentzoo.zoo`)."""
