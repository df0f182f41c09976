"""The annealed-EM driver shared by every EM of the zoo.

Hofmann & Puzicha (1998), section 5 and appendix A. At inverse computational temperature
``beta = 1/T`` the annealed E-step raises the likelihood contribution to the power ``beta`` (eq. (60),
(65)); the pair (E-step, M-step) then performs coordinate descent on the generalised free energy
(eq. (64)), which is therefore a Lyapunov function: it never increases at a fixed ``beta``. The driver
owns that loop; a model family supplies an :class:`EMProblem` that does one fused E/M pass.

:func:`annealed_fit` is the entry point every family's ``annealed_em`` (and the mean-field and hard
variants) runs on: argument checks, the start, the schedule (explicit, or chosen on a validation split)
and the :class:`EMResult`. The helpers of the families' fused E/M passes live here too: the MAP M-step
:func:`normalise_rows`, and :func:`balanced_row_chunks` with :func:`numba_threads` for the parallel
kernels.

Also here: the over-relaxed M-step ``EM(eta)`` of eq. (63) (keyword ``overrelax`` so it does not clash
with the Dirichlet prior ``eta``), with projection back onto the simplex and a safeguard that falls back
to the plain M-step whenever an over-relaxed step would raise the free energy; and Hofmann's tempered
EM schedule (``betas="auto"``): early stopping at ``beta = 1`` on a validation split, then lowering
``beta`` while the held-out perplexity improves.
"""

from __future__ import annotations

import numbers
import time
from collections.abc import Callable, Iterable
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import NamedTuple, Protocol, runtime_checkable

import numba as nb
import numpy as np
import pandas as pd

from latentzoo.data.checks import as_rng, check_fraction
from latentzoo.inference._docstrings import with_example_setup
from latentzoo.inference.family import SCHEDULE_OPTIONS, check_cooling
from latentzoo.inference.mcmc import (
    check_parameter_memory,
    model_attrs,
    netcdf_attr,
    warn_at_caller,
)
from latentzoo.inference.progress import progress_bar
from latentzoo.inference.results import (
    SavedEstimate,
    list_attr,
    parameter_dataset,
    point_estimate_inference_data,
)
from latentzoo.models._checks import check_integer, check_interval

__all__ = [
    "EMProblem",
    "EMStats",
    "AnnealingResult",
    "PointEstimateMethods",
    "GeometricCooling",
    "ComponentSymmetry",
    "distinct_groups",
    "annealed_fit",
    "balanced_row_chunks",
    "normalise_rows",
    "numba_threads",
    "project_simplex",
    "run_schedule",
    "tempered_schedule",
    "check_schedule",
    "check_map_priors",
    "cool",
    "em_entry",
    "table_from_netcdf",
    "table_to_netcdf",
    "SCHEDULE_DEFAULTS",
]


class EMStats(NamedTuple):
    """What one E/M pass reports about the parameters it started from."""

    free_energy: float
    """Generalised free energy (eq. (64)) at the E-step optimum, minus the log prior: the quantity
    that the pass can only lower at fixed ``beta``."""
    log_likelihood: float
    """Training log-likelihood ``sum n log P`` (NaN when not tracked)."""


@runtime_checkable
class EMProblem(Protocol):
    """One model family's E and M steps on one data set.

    ``step(params, beta)`` runs the (fused) E-step at ``params`` and returns the M-step estimate
    together with the :class:`EMStats` of ``params``. ``monotone`` says whether the free energy is
    guaranteed not to increase (False for predictive EM, whose E-step is a heuristic, appendix B).
    Optionally ``project(params) -> params`` maps an over-relaxed point back onto the admissible
    set (default: every parameter row-wise onto the simplex).
    """

    monotone: bool

    def init(self, rng: np.random.Generator) -> dict[str, np.ndarray]: ...

    def step(self, params: dict, beta: float) -> tuple[dict, EMStats]: ...


@dataclass
class AnnealingResult:
    """Parameters, trace, per-temperature table and convergence of one run of
    :func:`run_schedule` (``converged``: the last temperature ended by its tolerance or by the
    early-stopping rule, not by exhausting its budget; ``stages``: one row per temperature;
    ``transition_measure``: after :func:`cool`, its order parameter in words)."""

    params: dict
    trace: pd.DataFrame
    converged: bool
    betas: list = field(default_factory=list)
    stages: pd.DataFrame | None = None
    transition_measure: str | None = None


def project_simplex(x: np.ndarray) -> np.ndarray:
    """Euclidean projection of every row (last axis) of ``x`` onto the probability simplex.

    Duchi et al. (2008), vectorised over rows. Used after an over-relaxed M-step (seed section 5.3),
    which may leave the admissible parameter space.

    Examples
    --------
    >>> project_simplex(np.array([[1.2, -0.2], [0.5, 0.5]]))
    array([[1. , 0. ],
           [0.5, 0.5]])
    """
    x = np.asarray(x, dtype=float)
    shape = x.shape
    flat = x.reshape(-1, shape[-1])
    sorted_desc = -np.sort(-flat, axis=1)
    cumulative = np.cumsum(sorted_desc, axis=1) - 1.0
    index = np.arange(1, shape[-1] + 1)
    support = sorted_desc - cumulative / index > 0
    rho = shape[-1] - 1 - np.argmax(support[:, ::-1], axis=1)
    tau = cumulative[np.arange(flat.shape[0]), rho] / (rho + 1)
    return np.maximum(flat - tau[:, None], 0.0).reshape(shape)


def normalise_rows(counts, pseudo, fallback_width):
    """The MAP M-step of Dirichlet-multinomial parameters: ``(counts + pseudo) / row sum``.

    ``pseudo`` is the prior's pseudo-count ``concentration - 1`` (0 gives maximum likelihood). Rows
    without mass become uniform over ``fallback_width`` entries.

    Parameters
    ----------
    counts : numpy.ndarray of shape (R, K)
        Expected counts from the E-step.
    pseudo : float
    fallback_width : int
        The number of entries of a row (``K``), for the uniform fallback.

    Returns
    -------
    numpy.ndarray of shape (R, K); rows sum to one

    Examples
    --------
    >>> normalise_rows(np.array([[3.0, 1.0], [0.0, 0.0]]), 0.0, 2)
    array([[0.75, 0.25],
           [0.5 , 0.5 ]])
    >>> normalise_rows(np.array([[3.0, 1.0]]), 1.0, 2)
    array([[0.66666667, 0.33333333]])
    """
    numer = counts + pseudo if pseudo else counts
    totals = numer.sum(axis=1, keepdims=True)
    with np.errstate(invalid="ignore", divide="ignore"):
        out = np.where(totals > 0, numer / totals, 1.0 / fallback_width)
    return out


def balanced_row_chunks(indptr, n_chunks):
    """Row boundaries that split the non-zeros of a CSR matrix into ``n_chunks`` nearly equal parts.

    Chunk ``c`` holds rows ``bounds[c]:bounds[c + 1]``; the parallel E/M kernels give one chunk to
    each thread. Empty chunks are dropped, so there may be fewer than ``n_chunks``.

    Parameters
    ----------
    indptr : int array of shape (N + 1,)
        The CSR row pointer.
    n_chunks : int

    Returns
    -------
    numpy.ndarray of int64, increasing from 0 to N

    Examples
    --------
    >>> balanced_row_chunks(np.array([0, 2, 4, 6, 8]), 2).tolist()  # 4 rows of 2 non-zeros
    [0, 2, 4]
    >>> balanced_row_chunks(np.array([0, 1, 2, 3, 10]), 2).tolist()  # row 3 holds 7 of 10
    [0, 4]
    """
    targets = np.linspace(0, indptr[-1], n_chunks + 1)
    bounds = np.searchsorted(indptr, targets, side="left")
    bounds[0], bounds[-1] = 0, len(indptr) - 1
    return np.unique(bounds).astype(np.int64)


@contextmanager
def numba_threads(n_threads: int):
    """Run the enclosed numba ``prange`` kernels on ``n_threads`` threads (at most numba's pool).

    The previous thread count is restored on exit, also after an error.

    Examples
    --------
    >>> with numba_threads(1):
    ...     nb.get_num_threads()
    1
    """
    previous = nb.get_num_threads()
    nb.set_num_threads(min(n_threads, nb.config.NUMBA_NUM_THREADS))
    try:
        yield
    finally:
        nb.set_num_threads(previous)


def _overrelaxed(old: dict, new: dict, omega: float, project=None) -> dict:
    """EM(eta) step (63), projected back onto the admissible set.

    By default every parameter is taken to be a distribution along its last axis (rows on the
    simplex); a problem whose parameters are constrained otherwise (a matrix summing to one as a
    whole, posteriors stored with the parameters) supplies ``project(params) -> params``.
    """
    if omega == 1.0:
        return new
    moved = {name: (1.0 - omega) * old[name] + omega * new[name] for name in new}
    if project is not None:
        return project(moved)
    return {
        name: project_simplex(value) if value.ndim >= 1 else value for name, value in moved.items()
    }


def _all_finite(params: dict) -> bool:
    return all(np.isfinite(np.asarray(value)).all() for value in params.values())


def check_map_priors(model, method: str = "annealed EM", hint: bool = True) -> None:
    """Refuse Dirichlet priors that a MAP M-step cannot use (``alpha < 1`` or ``eta < 1``).

    The MAP estimate adds ``alpha - 1`` and ``eta - 1`` as pseudo-counts; below 1 they are negative
    and the mode may sit on the boundary of the simplex, so EM is undefined there.

    Examples
    --------
    >>> from latentzoo.models import AspectModel
    >>> check_map_priors(AspectModel(2, alpha=0.5))
    Traceback (most recent call last):
    ...
    ValueError: annealed EM computes the MAP estimate, which needs alpha >= 1 and eta >= 1 (got alpha=0.5, eta=1.01); use method='gibbs' for sparse priors
    """
    if model.alpha < 1 or model.eta < 1:
        advice = "; use method='gibbs' for sparse priors" if hint else ""
        raise ValueError(
            f"{method} computes the MAP estimate, which needs alpha >= 1 and eta >= 1 "
            f"(got alpha={model.alpha}, eta={model.eta}){advice}"
        )


def check_schedule(betas) -> list[float]:
    """Validate an explicit inverse-temperature schedule.

    Examples
    --------
    >>> check_schedule([0.5, 0.8, 1.0])
    [0.5, 0.8, 1.0]
    """
    if isinstance(betas, numbers.Real) and not isinstance(betas, bool):
        betas = [betas]
    if isinstance(betas, str | bytes) or not isinstance(betas, Iterable):
        raise ValueError(
            "betas must be 'auto', 'early_stopping', a GeometricCooling or a non-empty list of "
            f"inverse temperatures, got {betas!r}"
        )
    betas = list(betas)
    if not betas:
        raise ValueError("betas must be 'auto' or a non-empty list of inverse temperatures")
    for position, beta in enumerate(betas):
        number = isinstance(beta, numbers.Real) and not isinstance(beta, bool)
        if not number or not beta > 0 or not np.isfinite(beta):
            raise ValueError(f"betas[{position}] = {beta!r} must be a positive finite number")
    return [float(b) for b in betas]


STOP_REASONS = ("tolerance", "early_stopping", "max_iter")
"""How a temperature stage can end, as recorded in the ``stopped`` column of the stage tables: the
relative free-energy change fell below ``tol``, the early-stopping rule on the validation score
fired, or the stage used its whole ``max_iter`` budget."""

STAGE_COLUMNS = ["beta", "iterations", "stopped", "log_likelihood", "free_energy"]


def run_schedule(
    problem: EMProblem,
    params: dict,
    betas,
    max_iter=100,
    tol: float = 1e-5,
    overrelax: float = 1.0,
    monitor: Callable[[dict], dict] | None = None,
    patience: int | None = None,
    progress=None,
    min_iter: int = 0,
    score_tol: float = 0.0,
    unsettled: Callable[[dict], bool] | None = None,
) -> AnnealingResult:
    """Run annealed EM through a schedule of inverse temperatures.

    Parameters
    ----------
    problem : EMProblem
    params : dict
        Starting parameters.
    betas : list of float
        Inverse temperatures, visited in order.
    max_iter : int or list of int
        Iterations per temperature (a list gives one budget per entry of ``betas``).
    tol : float
        Stop a temperature when the relative free-energy change falls below ``tol`` (or the
        problem's own ``change(old, new, stats)`` of a step, when it has one); 0 disables.
    overrelax : float
        ``eta`` of EM(eta), eq. (63); 1 is plain EM, values in (1, 2) accelerate.
    monitor : callable, optional
        ``monitor(params) -> dict`` of extra trace columns (e.g. validation perplexity). With
        ``patience``, the stage is early-stopped on the monitor's ``"score"`` (lower is better)
        and the best-scoring parameters of the stage are kept (see ``min_iter``).
    patience : int, optional
        Early stopping: the stage stops once ``patience`` iterations have passed without a
        significant improvement of the score, counted from the last significant improvement (and
        from ``min_iter`` at the earliest). An improvement is significant when the score is below
        ``(1 - score_tol)`` times the best score at the previous significant improvement, so slow
        steady progress still counts while noise of relative size ``score_tol`` does not.
    progress : tqdm-like, optional
        Updated once per iteration.
    min_iter : int
        With early stopping: the iterates of fewer than ``min_iter`` steps are neither kept nor
        compared, so the early-stopping rule cannot end the stage before ``min_iter + patience``
        steps and the stage keeps an iterate of at least ``min_iter`` steps (if the budget or
        ``tol`` ends it sooner, its last iterate). From a random start the validation score often
        dips, bumps up and then improves for a long time: that first dip is no place to stop.
    score_tol : float
        Relative improvement of the score that resets the patience.
    unsettled : callable, optional
        ``unsettled(params) -> bool``, called with the iterate of every step: True keeps the
        stage from ending by ``tol`` after that step (the budget still ends it). Deterministic annealing
        uses it while duplicated components drift apart (:class:`ComponentSymmetry`): near a
        symmetric saddle the free energy barely changes although the solution is leaving it.

    Returns
    -------
    AnnealingResult
        With ``stages``: one row per temperature (``beta``, ``iterations``, ``stopped``: one of
        :data:`STOP_REASONS`, final ``log_likelihood`` and ``free_energy``; with a monitor also
        ``validation_perplexity``, the best score of the stage, and ``best_iteration``, the
        number of steps that produced it). ``converged`` is whether the last stage ended by
        the tolerance or the early-stopping rule.

    Examples
    --------
    >>> from latentzoo.data import load
    >>> from latentzoo.inference.aspect import AspectEM
    >>> from latentzoo.models import AspectModel
    >>> problem = AspectEM(AspectModel(2), load("toy"))
    >>> run = run_schedule(problem, problem.init(np.random.default_rng(0)), [0.5, 1.0],
    ...                    max_iter=[2, 500], tol=1e-8)
    >>> run.stages["stopped"].tolist(), run.converged
    (['max_iter', 'tolerance'], True)
    """
    betas = check_schedule(betas)
    budgets = list(max_iter) if np.ndim(max_iter) else [int(max_iter)] * len(betas)
    if len(budgets) != len(betas):
        raise ValueError("max_iter as a list needs one entry per beta")
    overrelax = check_interval("overrelax", overrelax, 0, 2)
    early = monitor is not None and patience is not None
    # A problem whose free energy is no measure of progress (or not computed) says how far a
    # step moved: ``change(old, new, stats)``, compared with ``tol`` as it stands.
    measure = getattr(problem, "change", None)
    rows, stage_rows = [], []
    start = time.perf_counter()
    for beta, budget in zip(betas, budgets, strict=True):
        omega = overrelax
        previous_free = np.inf
        plain = params
        stopped = "max_iter"
        best_score, best_params, best_iteration = np.inf, params, 0
        # The score against which a significant improvement is judged, and when it was reached.
        reference, improved_at = np.inf, 0
        iteration = 0
        last_stats = None
        # A budget below min_iter keeps its last iterate: every one of them is early.
        floor = min(min_iter, budget)
        while iteration < budget:
            new_params, stats = problem.step(params, beta)
            free = stats.free_energy
            overshot = not np.isfinite(free) or (problem.monotone and not free <= previous_free)
            if omega != 1.0 and overshot:
                # The over-relaxed step overshot (or left the domain, e.g. a zero probability on
                # an observed cell): go back to the plain M-step, which EM guarantees.
                params, omega = plain, 1.0
                continue
            plain = new_params
            following = _overrelaxed(params, new_params, omega, getattr(problem, "project", None))
            if measure is not None:
                change = measure(params, following, stats)
            row = {
                "beta": beta,
                "iteration": iteration,
                "log_likelihood": stats.log_likelihood,
                "free_energy": free,
                "seconds": time.perf_counter() - start,
            }
            if monitor is not None:
                # Scored after the step: row t describes the iterate that t + 1 steps produce.
                row.update(monitor(following))
            rows.append(row)
            last_stats = stats
            if progress is not None:
                progress.update(1)
            iteration += 1
            if measure is None:
                change = abs(previous_free - free) / max(abs(free), 1e-300)
            previous_free = free
            params = following
            if early:
                score = row["score"]
                usable = iteration >= floor and np.isfinite(score) and _all_finite(following)
                if usable and score < best_score:
                    best_score, best_params, best_iteration = score, following, iteration
                if usable and score < reference * (1 - score_tol):
                    reference, improved_at = score, iteration
                if iteration - max(improved_at, floor) >= patience:
                    stopped = "early_stopping"
                    break
            held = unsettled is not None and unsettled(following)
            if tol > 0 and change < tol and not held:
                stopped = "tolerance"
                break
        if early and np.isfinite(best_score):
            params = best_params
        elif omega != 1.0 and iteration > 0:
            # The last over-relaxed extrapolation was never scored: end the stage on the plain
            # M-step it started from, which EM guarantees (an unchecked step can leave NaN).
            params = plain
        stage = {
            "beta": beta,
            "iterations": iteration,
            "stopped": stopped,
            "log_likelihood": np.nan if last_stats is None else float(last_stats.log_likelihood),
            "free_energy": np.nan if last_stats is None else float(last_stats.free_energy),
        }
        if early and not np.isfinite(best_score) and iteration > 0:
            # No iterate could be kept (EM met tol before min_iter, or no score was finite): the
            # stage ended on its last iterate, which the replay must then reach.
            best_score, best_iteration = rows[-1]["score"], iteration
        if early:
            stage.update(validation_perplexity=float(best_score), best_iteration=best_iteration)
        stage_rows.append(stage)
    trace = pd.DataFrame(
        rows, columns=None if rows else ["beta", "iteration", "log_likelihood", "free_energy"]
    )
    stages = pd.DataFrame(stage_rows, columns=None if stage_rows else STAGE_COLUMNS)
    converged = bool(stage_rows) and stage_rows[-1]["stopped"] != "max_iter"
    return AnnealingResult(
        params=params, trace=trace, converged=converged, betas=betas, stages=stages
    )


@dataclass(frozen=True)
class GeometricCooling:
    """Deterministic annealing's schedule: ``T <- decay T`` (``beta <- beta / decay``), with the
    symmetric solution broken and the phase transitions detected.

    Passed as ``betas=GeometricCooling(...)`` to any ``annealed_em``. The inverse temperatures run
    from ``beta_start`` up to ``beta_end`` (both included). At high temperature every component
    sits on the same solution; a phase transition is a temperature at which components split
    (Hofmann & Puzicha 1998, sec. 5.1; Hofmann & Buhmann 1997, sec. 3; Rose et al.). EM cannot
    leave an exactly symmetric solution, so at every temperature the driver perturbs the
    components that coincide (:class:`ComponentSymmetry`): below the critical temperature of a
    group the perturbation grows and the copies split. The *order parameter* is the number of
    distinct components: the problem's ``order_parameter(params)`` when it has one, otherwise
    the component rows (by default the rows of every parameter indexed first by components)
    at L1 distance above ``distinct_tol`` from every earlier row. A transition is reported only
    where it increases; without an order parameter, where the log-likelihood jumps
    (``jump_factor`` times the median stage-to-stage change).

    Parameters
    ----------
    beta_start, beta_end : float
        First and last inverse temperature, ``0 < beta_start <= beta_end``.
    decay : float
        Cooling factor ``eta`` in (0, 1): each stage's temperature is ``eta`` times the previous.
    jump_factor : float
        How many times the median stage-to-stage change of the log-likelihood counts as a jump
        (only for problems without an order parameter).
    perturbation : float
        Scale of the multiplicative noise ``exp(perturbation g)``, ``g`` standard normal, given
        to every coinciding component row at the start of a temperature (0 disables symmetry
        breaking). Two perturbed copies end about ``1.1 perturbation`` apart in L1 distance,
        well inside ``distinct_tol`` so that noise is never counted as a split.
    distinct_tol : float
        Two component rows are the same component when their L1 distance is at most this.

    Examples
    --------
    >>> [round(b, 3) for b in GeometricCooling(0.25, 1.0, decay=0.5).betas()]
    [0.25, 0.5, 1.0]
    """

    beta_start: float = 0.05
    beta_end: float = 1.0
    decay: float = 0.8
    jump_factor: float = 5.0
    perturbation: float = 1e-4
    distinct_tol: float = 1e-3

    def __post_init__(self):
        for name in ("beta_start", "beta_end", "jump_factor", "distinct_tol"):
            value = getattr(self, name)
            if not np.isfinite(value) or value <= 0:
                raise ValueError(f"{name} must be a positive finite number, got {value!r}")
        if self.beta_start > self.beta_end:
            raise ValueError(
                f"beta_start={self.beta_start} must not exceed beta_end={self.beta_end}"
            )
        if not 0 < self.decay < 1:
            raise ValueError(f"decay must lie in (0, 1), got {self.decay!r}")
        if not 0 <= self.perturbation < self.distinct_tol:
            raise ValueError(
                f"perturbation must lie in [0, distinct_tol={self.distinct_tol}), "
                f"got {self.perturbation!r}"
            )

    def betas(self) -> list[float]:
        """The inverse temperatures, geometric from ``beta_start`` and ending at ``beta_end``."""
        n = int(np.floor(np.log(self.beta_end / self.beta_start) / -np.log(self.decay) + 1e-9))
        values = [self.beta_start / self.decay**i for i in range(n + 1)]
        if values[-1] < self.beta_end * (1 - 1e-12):
            values.append(self.beta_end)
        return [float(v) for v in values]

    def transitions(self, stages: pd.DataFrame) -> list[float]:
        """The inverse temperatures at which a phase transition happened.

        ``stages`` has one row per temperature with ``beta``, ``log_likelihood`` and, when the
        problem has one, ``order_parameter`` (its value at the end of the stage). With an order
        parameter, a transition is a stage that ends with more distinct components than the
        previous one ended with.

        Examples
        --------
        >>> stages = pd.DataFrame({"beta": [0.1, 0.2, 0.4, 0.8],
        ...                        "log_likelihood": [-100.0, -99.0, -60.0, -59.5]})
        >>> GeometricCooling().transitions(stages)
        [0.4]
        >>> stages["order_parameter"] = [1, 1, 3, 3]
        >>> GeometricCooling().transitions(stages)
        [0.4]
        """
        if len(stages) < 2:
            return []
        betas = stages["beta"].to_numpy()[1:]
        if "order_parameter" in stages:
            grew = np.diff(stages["order_parameter"].to_numpy(dtype=float)) > 0.5
            return [float(b) for b in betas[grew]]
        jumps = np.abs(np.diff(stages["log_likelihood"].to_numpy()))
        typical = np.median(jumps)
        if typical == 0:
            return [float(b) for b in betas[jumps > 0]]
        return [float(b) for b in betas[jumps > self.jump_factor * typical]]


def distinct_groups(rows: np.ndarray, tol: float) -> np.ndarray:
    """Group labels of component rows: a row joins the group of the first earlier row within
    L1 distance ``tol``, or starts a new group.

    The loop runs over components (a handful), each step vectorised over the row's entries.

    Examples
    --------
    >>> distinct_groups(np.array([[0.5, 0.5], [0.9, 0.1], [0.5, 0.5]]), 1e-3).tolist()
    [0, 1, 0]
    """
    rows = np.asarray(rows, dtype=float).reshape(len(rows), -1)
    labels = np.full(len(rows), -1, dtype=np.int64)
    n_groups = 0
    for k in range(len(rows)):
        if labels[k] >= 0:
            continue
        close = np.abs(rows[k:] - rows[k]).sum(axis=1) <= tol
        close &= labels[k:] < 0
        labels[k:][close] = n_groups
        n_groups += 1
    return labels


@dataclass
class ComponentSymmetry:
    """Rose's symmetry breaking for deterministic annealing, on any family's parameters.

    ``kinds`` lists, per kind of component, the parameters whose first axis indexes them (the
    aspect model's ``[["phi"]]``; the product-space mixture's row and column clusters are two
    kinds): a component's rows are its slices of them. Components of one kind whose rows all
    lie within L1 distance ``tol`` of each other coincide; :meth:`perturb` multiplies their rows
    by ``exp(scale g)`` with ``g`` standard normal from ``rng`` (rescaled to keep each row's
    sum, so rows on the simplex stay there), and :meth:`probe` watches the perturbed groups:
    above the group's critical temperature the copies fall back together, below it they drift
    apart, slowly at first, while the free energy hardly changes.

    Examples
    --------
    >>> symmetry = ComponentSymmetry([["phi"]], np.random.default_rng(0), 1e-4, 1e-3)
    >>> params = {"phi": np.full((3, 4), 0.25)}
    >>> symmetry.count(params), [g.tolist() for _, g in symmetry.groups(params)]
    (1, [[0, 1, 2]])
    >>> symmetry.count(symmetry.perturb(params, symmetry.groups(params)))
    1
    """

    kinds: list
    rng: np.random.Generator
    scale: float
    tol: float
    probe_steps: int = 10
    """Steps after a perturbation during which a stage may not end by its tolerance: the
    stable directions of the perturbation decay first, the unstable one shows after them."""
    growth: float = 1e-3
    """Relative growth per step of the groups' spread that counts as drifting apart."""

    @staticmethod
    def _rows(params, names, members=None) -> np.ndarray:
        """The components' rows: their slices of every parameter in ``names``, side by side."""
        parts = [np.asarray(params[name]) for name in names]
        if members is not None:
            parts = [part[members] for part in parts]
        return np.hstack([part.reshape(len(part), -1) for part in parts])

    def count(self, params) -> int:
        """The number of distinct components (summed over the kinds)."""
        return sum(
            int(distinct_groups(self._rows(params, names), self.tol).max(initial=-1) + 1)
            for names in self.kinds
        )

    def groups(self, params) -> list[tuple[int, np.ndarray]]:
        """``(kind, indices)`` of every group of two or more coinciding components."""
        out = []
        for kind, names in enumerate(self.kinds):
            labels = distinct_groups(self._rows(params, names), self.tol)
            sizes = np.bincount(labels)
            out += [(kind, np.flatnonzero(labels == g)) for g in np.flatnonzero(sizes > 1)]
        return out

    def perturb(self, params, groups) -> dict:
        """``params`` with the rows of the components in ``groups`` perturbed."""
        out = dict(params)
        if self.scale == 0:
            return out
        for kind, members in groups:
            for name in self.kinds[kind]:
                value = np.array(out[name])
                rows = value[members].astype(float)
                moved = rows * np.exp(self.scale * self.rng.standard_normal(rows.shape))
                axes = tuple(range(1, rows.ndim))
                with np.errstate(invalid="ignore", divide="ignore"):
                    ratio = rows.sum(axis=axes, keepdims=True) / moved.sum(axis=axes, keepdims=True)
                value[members] = np.where(np.isfinite(ratio), moved * ratio, rows)
                out[name] = value
        return out

    def spread(self, params, groups) -> float:
        """The largest L1 distance between two members of one of ``groups``."""
        widest = 0.0
        for kind, members in groups:
            rows = self._rows(params, self.kinds[kind], members)
            for k in range(len(rows) - 1):
                widest = max(widest, float(np.abs(rows[k + 1 :] - rows[k]).sum(axis=1).max()))
        return widest

    def probe(self, params, groups) -> Callable[[dict], bool]:
        """``unsettled(params)`` for :func:`run_schedule`: True for the first ``probe_steps``
        steps and then while the groups' spread grows by more than ``growth`` per step."""
        state = {"steps": 0, "spread": self.spread(params, groups)}

        def unsettled(current) -> bool:
            state["steps"] += 1
            spread = self.spread(current, groups)
            growing = spread > state["spread"] * (1.0 + self.growth)
            state["spread"] = spread
            return state["steps"] < self.probe_steps or growing

        return unsettled

    def measure(self) -> str:
        """The order parameter in words."""
        rows = " and ".join("rows of " + ", ".join(names) for names in self.kinds)
        return (
            f"distinct components: {rows} more than {self.tol:g} apart in L1 distance "
            "(a row joins the first earlier row within it)"
        )


def cool(problem: EMProblem, params: dict, schedule: GeometricCooling, max_iter=100, tol=1e-5,
         overrelax: float = 1.0, progress=None, *, components=None, rng=None):  # fmt: skip
    """Run a :class:`GeometricCooling` schedule, breaking symmetry, and find its transitions.

    Each temperature is one :func:`run_schedule` stage. A problem may shape the cooling with
    optional hooks, each called once per temperature:

    - ``begin_stage(params, beta) -> params`` before the stage (e.g. give every cluster a twin,
      so that clusters can split at a phase transition);
    - ``end_stage(params, beta) -> params`` after it (e.g. merge the twins that stayed together);
    - ``stage_summary(params, beta) -> dict``: columns of the stage's row, which take precedence
      over the driver's (e.g. the expected cost and entropy of the final assignments);
    - ``frozen(params) -> bool``: nothing is left to anneal, the schedule stops here.

    A problem without ``begin_stage`` gets the driver's symmetry breaking when ``components``
    (per kind of component, the names of the parameters indexed first by it) and ``rng`` are
    given: at the
    start of every temperature the coinciding components are perturbed
    (:class:`ComponentSymmetry`, with the schedule's ``perturbation`` and ``distinct_tol``), and
    the stage cannot end by ``tol`` until their spread has stopped growing. The order parameter
    is then the problem's ``order_parameter`` or else the number of distinct components.

    Returns
    -------
    run : AnnealingResult
        ``converged``: the last temperature met its tolerance; ``transition_measure``: the order
        parameter in words, or the log-likelihood rule when the problem has none).
    stages : pandas.DataFrame
        One row per temperature: ``beta``, ``iterations``, ``stopped`` (``"tolerance"`` or
        ``"max_iter"``), the final ``log_likelihood`` and ``free_energy``, with an order
        parameter its final value (``order_parameter``), and with symmetry breaking the number
        of components perturbed at its start (``perturbed``).
    transitions : list of float
        The inverse temperatures at which the order parameter increased.

    Examples
    --------
    >>> from latentzoo.data import load
    >>> from latentzoo.inference.one_sided import OneSidedClustering, OneSidedEM
    >>> problem = OneSidedEM(OneSidedClustering(2), load("toy"))
    >>> run, stages, _ = cool(problem, problem.init(np.random.default_rng(0)),
    ...                       GeometricCooling(0.5, 1.0, decay=0.5))
    >>> stages["beta"].tolist(), "order_parameter" in stages
    ([0.5, 1.0], True)
    """
    rows, traces = [], []
    order = getattr(problem, "order_parameter", None)
    begin = getattr(problem, "begin_stage", None)
    end = getattr(problem, "end_stage", None)
    summary = getattr(problem, "stage_summary", None)
    frozen = getattr(problem, "frozen", None)
    symmetry = None
    if begin is None and components and rng is not None:
        symmetry = ComponentSymmetry(list(components), rng, schedule.perturbation,
                                     schedule.distinct_tol)  # fmt: skip
        if order is None:
            order = symmetry.count
    measure = None
    if symmetry is not None and order == symmetry.count:
        measure = symmetry.measure()
    elif order is not None:
        measure = (order.__doc__ or "the problem's order_parameter").strip().splitlines()[0]
    else:
        measure = (
            "no order parameter: a log-likelihood change between temperatures above "
            f"{schedule.jump_factor:g} times the median change"
        )
    run = None
    for beta in schedule.betas():
        unsettled, perturbed = None, 0
        if begin is not None:
            params = begin(params, beta)
        elif symmetry is not None and schedule.perturbation > 0:
            groups = symmetry.groups(params)
            if groups:
                params = symmetry.perturb(params, groups)
                unsettled = symmetry.probe(params, groups)
                perturbed = int(sum(len(members) for _, members in groups))
        run = run_schedule(problem, params, [beta], max_iter, tol, overrelax, progress=progress,
                           unsettled=unsettled)  # fmt: skip
        params = run.params if end is None else end(run.params, beta)
        row = run.stages.iloc[0].to_dict()
        if order is not None:
            row["order_parameter"] = float(order(params))
        if symmetry is not None:
            row["perturbed"] = perturbed
        if summary is not None:
            row.update(summary(params, beta))
        rows.append(row)
        traces.append(run.trace)
        if frozen is not None and frozen(params):
            break
    stages = pd.DataFrame(rows)
    trace = pd.concat(traces, ignore_index=True)
    if order is None and "order_parameter" in stages:
        measure = "the problem's order parameter (its stage_summary)"
    result = AnnealingResult(params=params, trace=trace, converged=run.converged,
                             betas=schedule.betas(), stages=stages,
                             transition_measure=measure)  # fmt: skip
    return result, stages, schedule.transitions(stages)


def tempered_schedule(
    problem_on: Callable,
    train_part,
    validation_part,
    score: Callable[[dict, object], float],
    params: dict,
    *,
    max_iter: int,
    beta_decay: float,
    min_beta: float,
    patience: int,
    min_iter: int,
    score_tol: float,
    tol: float = 0.0,
    overrelax: float = 1.0,
    early_stopping_only: bool = False,
    progress=None,
    beta_patience: int = 1,
    restart: bool = False,
):
    """Hofmann's tempered EM: choose the schedule on a validation split.

    The schedule options have no defaults here: :func:`annealed_fit` holds them (and the families
    their own).

    1. At ``beta = 1`` run EM from the start with early stopping on the validation score (the
       rule of :func:`run_schedule`: only iterates of at least ``min_iter`` steps count, and the
       stage stops after ``patience`` iterations without an improvement by more than the relative
       ``score_tol``, or once EM itself has converged there, the relative free-energy change
       below ``tol``; it keeps its best-scoring iterate).
    2. Multiply ``beta`` by ``beta_decay`` and continue EM from the best iterate, with the same
       rule but no ``min_iter`` (there is no start-up transient to wait out), while the best
       validation score improves by more than ``score_tol`` relative.
    3. Stop lowering once ``beta_patience`` consecutive temperatures have not improved the best
       validation score (1: Hofmann's rule; clustering models, whose posteriors stay hard until
       ``beta * n_i`` is of order one, need a few more and a faster decay).

    With ``restart``, every temperature instead runs EM from ``params`` (the first stage's rule,
    ``min_iter`` included, at each), and the schedule is the best-scoring temperature alone: a
    choice of one inverse temperature, for models whose heated ``beta = 1`` fit keeps the local
    optimum EM found there (the HACM's ``"auto"``, whose documentation has the measurements).

    Parameters
    ----------
    problem_on : callable
        ``problem_on(data) -> EMProblem``.
    train_part, validation_part
        The split of the training data.
    score : callable
        ``score(params, validation_part)``: lower is better (the validation perplexity).
    params : dict
        The start.
    restart : bool
        Start every temperature from ``params`` and keep only the best one (see above).

    Returns
    -------
    schedule : list of (beta, iterations)
        The temperatures visited up to the best one (with ``restart``: the best one alone) and the
        iterations spent at each up to its best-scoring iterate; replaying it from ``params`` on
        the full training data reproduces the selection without a validation split.
    trace : pandas.DataFrame
        The trace on the training part, with a ``validation_perplexity`` column (row ``t`` of a
        stage scores the parameters after ``t + 1`` steps).
    stages : pandas.DataFrame
        One row per temperature tried: ``beta``, ``iterations`` run, ``stopped``
        (``"early_stopping"``, ``"tolerance"`` or ``"max_iter"``), final ``log_likelihood`` and ``free_energy`` on
        the training part, the stage's best ``validation_perplexity``, ``best_iteration`` (the
        steps that produced it, the replay budget) and ``selected`` (whether the temperature is
        in ``schedule``).

    Examples
    --------
    >>> from latentzoo.data import load
    >>> from latentzoo.inference.aspect import AspectEM
    >>> from latentzoo.models import AspectModel
    >>> model, data = AspectModel(2), load("reuters").subset(rows=range(40))
    >>> train, validation = data.split(0.2, random_state=0)
    >>> start = AspectEM(model, train).init(np.random.default_rng(0))
    >>> schedule, trace, stages = tempered_schedule(
    ...     lambda part: AspectEM(model, part), train, validation,
    ...     lambda p, held: perplexity(model, p, held), start, max_iter=200, beta_decay=0.9,
    ...     min_beta=0.05, patience=10, min_iter=20, score_tol=1e-4, early_stopping_only=True)
    >>> stages["stopped"].tolist(), schedule[0][0], bool(stages["iterations"].iloc[0] >= 30)
    (['early_stopping'], 1.0, True)
    """

    def monitor(current):
        value = score(current, validation_part)
        return {"validation_perplexity": value, "score": value}

    problem = problem_on(train_part)
    start = params
    beta = 1.0
    schedule, traces, stage_rows = [], [], []
    best_overall = np.inf
    pending = []
    while beta >= min_beta:
        result = run_schedule(
            problem,
            start if restart else params,
            [beta],
            max_iter=max_iter,
            tol=tol,
            overrelax=overrelax,
            monitor=monitor,
            patience=patience,
            progress=progress,
            # Continued from a fit, a stage has no start-up transient to wait out.
            min_iter=min_iter if restart or not stage_rows else 0,
            score_tol=score_tol,
        )
        trace = result.trace
        stage = result.stages.iloc[0].to_dict()
        stage["selected"] = False
        stage_rows.append(stage)
        best_here = stage["validation_perplexity"]
        iterations = max(int(stage["best_iteration"]), 1)
        traces.append(trace)
        params = result.params
        if not best_here < best_overall * (1 - score_tol) and schedule:
            # Not better: keep going through up to beta_patience such temperatures; they enter
            # the schedule only if a later temperature improves on the best.
            pending.append((beta, iterations, stage))
            if len(pending) >= beta_patience:
                break
            beta *= beta_decay
            continue
        best_overall = best_here
        if restart:
            # This temperature started afresh: none of the earlier ones led to it.
            for earlier in stage_rows:
                earlier["selected"] = False
            schedule, pending = [], []
        for pending_beta, pending_iterations, pending_stage in pending:
            schedule.append((pending_beta, pending_iterations))
            pending_stage["selected"] = True
        pending = []
        schedule.append((beta, iterations))
        stage["selected"] = True
        if early_stopping_only:
            break
        beta *= beta_decay
    trace = pd.concat(traces, ignore_index=True).drop(columns="score")
    return schedule, trace, pd.DataFrame(stage_rows)


def estimate_arrays(params: dict, trace: pd.DataFrame) -> dict[str, np.ndarray]:
    """The arrays of a point estimate keyed ``"params.<name>"`` and ``"trace.<column>"``, the
    timings (``seconds``) left out: what two runs with the same seed must share bit for bit.

    Examples
    --------
    >>> trace = pd.DataFrame({"beta": [1.0], "seconds": [0.25]})
    >>> sorted(estimate_arrays({"theta": np.ones((2, 1))}, trace))
    ['params.theta', 'trace.beta']
    """
    out = {f"params.{name}": np.asarray(value) for name, value in params.items()}
    for column in trace.columns:
        if column != "seconds":
            out[f"trace.{column}"] = trace[column].to_numpy()
    return out


def table_from_netcdf(dataset) -> pd.DataFrame:
    """The table :func:`table_to_netcdf` saved, as a ``DataFrame`` with a plain ``RangeIndex``
    (the columns in their saved order, text as ``str``).

    Examples
    --------
    >>> table = pd.DataFrame({"beta": [0.5, 1.0], "stopped": ["tolerance", "max_iter"]})
    >>> table_from_netcdf(table_to_netcdf(table, "stage")).equals(table)
    True
    """
    frame = dataset.to_dataframe().reset_index(drop=True)
    text = {name: frame[name].astype(object) for name in frame if frame[name].dtype.kind == "U"}
    return frame.assign(**text)


def table_to_netcdf(table: pd.DataFrame, index: str):
    """A per-step table as an ``xarray.Dataset`` that netCDF saves and reads back unchanged.

    The index becomes the dimension ``index``; text columns become fixed-width strings, since
    netCDF reads an object column back with another dtype.

    Examples
    --------
    >>> table = pd.DataFrame({"beta": [0.5, 1.0], "stopped": ["tolerance", "max_iter"]})
    >>> saved = table_to_netcdf(table, "stage")
    >>> saved["stopped"].dims, saved["stopped"].dtype.kind
    (('stage',), 'U')
    """
    dataset = table.rename_axis(index).to_xarray()
    return dataset.assign(
        {name: var.astype(str) for name, var in dataset.data_vars.items() if var.dtype == object}
    )


class PointEstimateMethods:
    """The methods every point estimate with ``params``, a per-step ``trace`` and
    ``to_inference_data(data)`` shares: saving, the estimate, its arrays.

    Mixed into the dataclasses of point estimates (:class:`EMResult`, the clustering result of
    :mod:`latentzoo.inference.pairwise`), so that each is written once.
    """

    def save(self, path, data=None) -> None:
        """Write the fit to ``path`` as netCDF (:meth:`to_inference_data`)."""
        self.to_inference_data(data).to_netcdf(str(path))

    def point_estimate(self) -> dict:
        """The estimate (:attr:`params`), as saved in the ``point_estimate`` group."""
        return self.params

    def arrays(self) -> dict:
        """Every array of the fit keyed ``"params.<name>"`` and ``"trace.<column>"``
        (:func:`estimate_arrays`), to compare two fits bit for bit."""
        return estimate_arrays(self.params, self.trace)


_FIT_EXAMPLE_SETUP = """
>>> import latentzoo
>>> from latentzoo.data import load
>>> from latentzoo.models import AspectModel
>>> result = latentzoo.fit(AspectModel(2), load("toy"), betas=[1.0], random_state=0)
"""
"""The start of the Examples of :class:`EMResult`'s methods: the aspect model fitted to the toy
corpus at ``beta = 1``."""


@dataclass
class EMResult(PointEstimateMethods):
    """A point estimate from annealed EM, with its trace and convergence flag.

    Attributes
    ----------
    model : the model dataclass
    params : dict of parameter arrays (for the aspect model ``theta`` N x K and ``phi`` K x M)
    trace : pandas.DataFrame with columns beta, iteration, log_likelihood, free_energy, seconds
        (and validation_perplexity when the schedule was chosen on a validation split)
    converged : bool
        Whether the returned fit converged **at its last temperature**: that stage ended by
        its stopping rule, not by running out of ``max_iter`` iterations. The rule is the
        relative free-energy tolerance ``tol`` for an explicit list of ``betas`` and for a
        :class:`GeometricCooling`; for ``betas="auto"`` / ``"early_stopping"`` it is the
        early-stopping rule on the validation split, or ``tol`` there, at the selected (last)
        temperature, since the replay on all of the data runs the selected number of iterations
        (``stages["stopped"]`` says which). Earlier temperatures
        are only the path there: one that used its whole budget does not make the fit
        unconverged, and ``stages`` says how each one ended. ``False`` means: more iterations
        (a larger ``max_iter``) could still change the estimate.
    betas : list of float
        The inverse temperatures of the returned fit, in the order visited.
    seconds : float
    stages : pandas.DataFrame or None
        One row per temperature of the fit (every schedule of :func:`annealed_fit`): ``beta``,
        ``iterations``, ``stopped`` (how the stage ended: ``"tolerance"``, ``"early_stopping"``
        or ``"max_iter"``), the final ``log_likelihood`` and ``free_energy`` (of the iterate the
        last step started from, as in ``trace``); for the tempered schedules also the stage's
        best ``validation_perplexity`` and ``selection_iterations`` (iterations the selection
        ran on the training part, patience included; ``iterations`` is the replay on all of the
        data, up to the best iterate); for :class:`GeometricCooling` the ``order_parameter``.
        Temperatures the tempered selection tried and rejected are in ``selection_trace``
        only. Saved by :meth:`to_inference_data` as the ``em_stages`` group. None for fits that
        do not run the driver (e.g. hard clustering).
    transitions : list of float or None
        With a :class:`GeometricCooling` schedule: the inverse temperatures of the detected
        phase transitions, the stages that ended with more distinct components than the
        previous one (``stages["order_parameter"]``); None otherwise.
    transition_measure : str or None
        With a :class:`GeometricCooling` schedule: how distinct components are counted, e.g.
        ``"distinct components: rows of phi more than 0.001 apart in L1 distance ..."``.

    Examples
    --------
    >>> import latentzoo
    >>> from latentzoo.data import load
    >>> from latentzoo.models import AspectModel
    >>> result = latentzoo.fit(AspectModel(2), load("toy"), method="annealed_em", random_state=0)
    >>> result.perplexity(load("toy")) < 8
    True
    """

    model: object
    params: dict
    trace: pd.DataFrame
    converged: bool
    betas: list
    seconds: float = 0.0
    method: str = "annealed_em"
    selection_trace: pd.DataFrame | None = None
    stages: pd.DataFrame | None = None
    transitions: list | None = None
    transition_measure: str | None = None
    coords: dict | None = None
    settings: dict = field(default_factory=dict)
    plot: Callable | None = field(default=None, repr=False, compare=False)

    def log_likelihood(self, data) -> np.ndarray:
        """Per-row log-likelihood of ``data`` under the estimate (the model's exact function).

        The training fit; for held-out data use :meth:`heldout_log_likelihood` (the clustering
        models predict held-out tokens from the training posteriors).
        """
        return self.model.log_likelihood(self.params, data)

    def heldout_log_likelihood(self, test) -> np.ndarray:
        """Per-row (per-item) log predictive probability of ``test``:
        :func:`latentzoo.inference.results.heldout_log_likelihood`."""
        from latentzoo.inference.results import heldout_log_likelihood

        return heldout_log_likelihood(self, test)

    def perplexity(self, test) -> float:
        """Held-out perplexity ``exp(-sum_test n_ij log P(y_j|x_i) / sum_test n_ij)``, the same
        definition as for samples: :func:`latentzoo.perplexity`.

        ``test`` must have the rows and columns of the training data (``ValueError`` otherwise).
        """
        from latentzoo.inference.results import perplexity as result_perplexity

        return result_perplexity(self, test)

    def score(self, test) -> float:
        """Held-out log-likelihood per token (higher is better): :func:`latentzoo.heldout_score`."""
        from latentzoo.inference.results import heldout_score

        return heldout_score(self, test)

    @property
    def labels_(self):
        """Hard cluster labels (:func:`latentzoo.labels`): an array of row labels, for two-sided
        families a ``TwoSidedLabels(rows, cols)``, for the aspect model each document's dominant
        topic."""
        from latentzoo.inference.results import labels

        return labels(self)

    def invariants(self, data) -> dict:
        return self.model.invariants(self.params, data)

    @with_example_setup(_FIT_EXAMPLE_SETUP)
    def summary_lines(self) -> list[str]:
        """What ``latentzoo fit`` prints: the final inverse temperature, the log-likelihood there
        and whether the last temperature converged.

        Examples
        --------
        >>> result.summary_lines()  # doctest: +ELLIPSIS
        ['final beta 1, log-likelihood ..., converged: True']
        """
        last = self.trace.iloc[-1]
        lines = [
            f"final beta {last['beta']:.3g}, log-likelihood {last['log_likelihood']:.1f}, "
            f"converged: {self.converged}"
        ]
        if self.transitions is not None:
            at = ", ".join(f"{beta:.3g}" for beta in self.transitions) or "none"
            lines.append(f"phase transitions at beta: {at}")
            if self.stages is not None and "order_parameter" in self.stages:
                lines[-1] += (
                    f" (order parameter at the end: {self.stages['order_parameter'].iloc[-1]:g})"
                )
            if self.transition_measure:
                lines.append(f"order parameter: {self.transition_measure}")
        return lines

    def figure(self, data=None):
        """The family's picture of the estimate (``plot(model, result, data) -> Axes``, set by
        the family's method, e.g. the HACM's tree), as a matplotlib ``Figure``; None without."""
        if self.plot is None:
            return None
        return self.plot(self.model, self, data).figure

    def objective(self, data) -> tuple[str, float]:
        """``("log-likelihood of the data", value)``: the estimate's log-likelihood of ``data``."""
        with np.errstate(all="ignore"):
            loglik = np.asarray(self.model.log_likelihood(self.params, self.model.check_data(data)))
        return "log-likelihood of the data", float(loglik.sum())

    @with_example_setup(_FIT_EXAMPLE_SETUP)
    def to_inference_data(self, data=None):
        """The estimate as an ``InferenceData`` whose ``point_estimate`` group holds the parameters
        (:func:`~latentzoo.inference.results.point_estimate_inference_data`); ``to_netcdf`` works
        and :func:`latentzoo.load_result` reads the file back as an :class:`EMResult`.

        The parameters carry the model's named dimensions and the data's labels as coordinates
        (documents, words, clusters; from the fitted data, or from ``data`` when given), with no
        ``chain`` or ``draw``; the attributes of every group record the model and its
        hyperparameters, the method, the schedule settings, the inverse temperatures visited
        (``betas``, a numeric array even of length 1), convergence and ``point_estimate=1``; the
        annealing trace is the ``em_trace`` group and the per-temperature table :attr:`stages`
        (how each temperature ended) the ``em_stages`` group.

        Notes
        -----
        An EM result is a point estimate, not a sample, so the file has no ``posterior``: a
        one-draw posterior made ArviZ compute spreads and convergence statistics that do not exist
        (NaN with warnings). Read the parameters with
        :func:`~latentzoo.inference.results.parameter_dataset`, which takes a sample or an
        estimate; :func:`latentzoo.perplexity`, :func:`latentzoo.heldout_score` and
        :func:`latentzoo.labels` take this ``InferenceData`` as they take the result. Compare EM
        with samplers through held-out scores rather than ``az.compare``, which needs draws.

        Examples
        --------
        >>> idata = result.to_inference_data()
        >>> idata.point_estimate["theta"].dims, idata.point_estimate.attrs["model"]
        (('doc', 'topic'), 'AspectModel')
        >>> "posterior" in idata.groups()
        False
        """
        import xarray as xr

        coords = self.coords
        if data is not None:
            coords = self.model.coords(self.model.check_data(data))
        coords = coords or {}
        dims = self._param_dims(coords)
        # A parameter without declared dimensions still gets names of its own, not dim_0.
        variables = {
            name: (dims.get(name) or [f"{name}_dim_{i}" for i in range(np.ndim(value))], value)
            for name, value in self.params.items()
        }
        used = {dim for names, _ in variables.values() for dim in names}
        estimate = xr.Dataset(
            variables, coords={dim: values for dim, values in coords.items() if dim in used}
        )
        trace = self.trace.drop(columns=[c for c in ("score",) if c in self.trace])
        tables = {"em_trace": table_to_netcdf(trace, "step")}
        if self.stages is not None:
            tables["em_stages"] = table_to_netcdf(self.stages, "stage")
        return point_estimate_inference_data(estimate, self._attrs(), tables)

    @classmethod
    @with_example_setup(_FIT_EXAMPLE_SETUP)
    def from_inference_data(cls, idata) -> EMResult:
        """The result that :meth:`to_inference_data` wrote, e.g. read back with
        ``az.from_netcdf`` (:func:`latentzoo.load_result` calls this).

        The model is rebuilt from the attributes; the parameters, the trace (without its
        ``score`` column), :attr:`stages`, ``betas``, ``transitions``, the settings and the
        coordinates come back as saved. Not saved, so None: :attr:`selection_trace` and the
        family's :attr:`plot`. Files of the older one-draw-``posterior`` layout are read too.

        Examples
        --------
        >>> back = EMResult.from_inference_data(result.to_inference_data())
        >>> back.betas, bool(np.array_equal(back.params["phi"], result.params["phi"]))
        ([1.0], True)
        """
        estimate = SavedEstimate.from_inference_data(idata)
        attrs = estimate.attrs
        groups = idata.groups()
        names = str(attrs.get("settings", ""))
        settings = {
            name: attrs[name].item() if isinstance(attrs[name], np.generic) else attrs[name]
            for name in names.split(",")
            if name in attrs
        }
        stages = table_from_netcdf(idata["em_stages"]) if "em_stages" in groups else None
        dataset = parameter_dataset(idata)
        coords = {
            dim: dataset[dim].to_numpy()
            for dim in dataset.dims
            if dim in dataset.coords and not dim.startswith(tuple(f"{n}_dim_" for n in dataset))
        }
        return cls(
            model=estimate.model,
            params=estimate.params,
            trace=table_from_netcdf(idata["em_trace"]),
            converged=bool(int(attrs.get("converged", 0))),
            betas=list_attr(attrs, "betas") or [],
            seconds=float(attrs.get("sampling_time", 0.0)),
            method=str(attrs.get("method", "annealed_em")),
            stages=stages,
            transitions=list_attr(attrs, "transitions"),
            transition_measure=attrs.get("transition_measure"),
            coords=coords,
            settings=settings,
        )

    def _param_dims(self, coords: dict) -> dict:
        """Named dims of each parameter whose shape matches the model's declared dims."""
        declared = {**getattr(self.model, "dims", {}), **getattr(self.model, "estimate_dims", {})}
        dims = {}
        for name, value in self.params.items():
            names = declared.get(name)
            shape = np.shape(value)
            if names is None or len(names) != len(shape):
                continue
            if all(
                dim in coords and len(coords[dim]) == n for dim, n in zip(names, shape, strict=True)
            ):
                dims[name] = list(names)
        return dims

    def _attrs(self) -> dict:
        """netCDF-safe attributes: the model, its hyperparameters, the method and its settings."""
        attrs = {
            **model_attrs(self.model),
            "method": self.method,
            "converged": int(self.converged),
            "sampling_time": float(self.seconds),
            "betas": np.asarray(self.betas, dtype=float),
        }
        for name, value in self.settings.items():
            attrs[name] = netcdf_attr(value)
        # Which attributes are settings, so that a loader gives them back as settings.
        attrs["settings"] = ",".join(name for name in self.settings if attrs[name] is not None)
        # What latentzoo.load_result rebuilds from the file.
        attrs["result_type"] = "EMResult"
        if self.transitions is not None:
            attrs["transitions"] = np.asarray(self.transitions, dtype=float)
            attrs["transition_measure"] = self.transition_measure
        return {name: value for name, value in attrs.items() if value is not None}


def perplexity(model, params, test) -> float:
    """Held-out perplexity ``exp(-sum n log P / sum n)`` of parameters, under the model's
    ``heldout_log_likelihood`` (what the tempered schedules score the validation split with).

    For a fitted result (an :class:`EMResult`, or the ``InferenceData`` of a sampler) use
    :func:`latentzoo.perplexity`, which applies this rule to point estimates and averages the
    predictive probabilities over the draws of a sample. ``test`` must have the rows and columns
    of the training data (``ValueError`` naming ``test`` otherwise).

    Examples
    --------
    >>> import numpy as np
    >>> from latentzoo.data import load
    >>> from latentzoo.models import AspectModel
    >>> data = load("toy"); m = data.n_cols
    >>> uniform = {"theta": np.full((6, 1), 1.0), "phi": np.full((1, m), 1.0 / m)}
    >>> round(perplexity(AspectModel(1), uniform, data), 6) == m
    True
    """
    total = test.total
    if total == 0:
        raise ValueError("the test data holds no observations")
    # Clustering models predict held-out tokens from the training posteriors (seed eq. (32), (47));
    # for the aspect model the held-out and the plain log-likelihood coincide.
    return float(np.exp(-model.heldout_log_likelihood(params, test).sum() / total))


def annealed_fit(
    model,
    data,
    problem_on: Callable,
    *,
    betas="auto",
    max_iter: int = 200,
    tol: float = 1e-5,
    overrelax: float = 1.0,
    random_state=None,
    validation_fraction: float = 0.1,
    beta_decay: float = 0.9,
    min_beta: float = 0.05,
    patience: int = 10,
    beta_patience: int = 1,
    min_iter: int = 30,
    score_tol: float = 1e-3,
    progressbar: bool = False,
    method: str = "annealed_em",
    desc: str = "annealed EM",
    restart: bool = False,
) -> EMResult:
    """Annealed EM of any family on the shared driver: the body of every ``annealed_em``.

    Checks the arguments, builds the problem on all of ``data`` and draws its start from
    ``random_state``, then runs the schedule:

    * ``betas="auto"`` / ``"early_stopping"``: Hofmann's tempered EM, the schedule chosen on a
      ``validation_fraction`` split of ``data`` (:func:`tempered_schedule`, scored by
      :func:`perplexity`) and replayed on all of ``data`` with the chosen iterations per
      temperature (every temperature of the selection stops by the early-stopping rule, by
      ``tol``, or at ``max_iter``); the result is converged if the selection's last (chosen)
      temperature was ended by the early-stopping rule or by ``tol``;
    * a list: those inverse temperatures in order (:func:`run_schedule`), each until the relative
      free-energy change is below ``tol`` or ``max_iter`` iterations; converged if the last one
      met ``tol``;
    * a :class:`GeometricCooling`: deterministic annealing, ``beta`` multiplied by ``1 / decay``
      per stage, with the phase transitions detected (:func:`cool`); converged if the last
      temperature met ``tol``.

    Every schedule fills :attr:`EMResult.stages`, one row per temperature with how it ended.

    Parameters
    ----------
    model
        The model dataclass: ``check_data``, ``log_likelihood`` (and ``heldout_log_likelihood``
        where the family predicts held-out tokens from training posteriors).
    data : CoOccurrence
    problem_on : callable
        ``problem_on(data) -> EMProblem``, called on all of ``data`` and on the training part.
    betas : "auto", "early_stopping", list of float or GeometricCooling
        ``"auto"``: Hofmann's tempered EM, the schedule chosen on a ``validation_fraction`` split of
        ``data`` (early stopping at ``beta=1``, then ``beta *= beta_decay`` while the validation
        perplexity improves, down to ``min_beta``, until ``beta_patience`` temperatures in a row
        fail to improve it) and replayed on all of ``data``. ``"early_stopping"``: only the first
        phase (``beta=1`` stopped on the validation split). A list: those inverse temperatures in
        order, each run until the relative free-energy change is below ``tol``. A
        :class:`GeometricCooling`: deterministic annealing with phase-transition detection.
    max_iter : int
        Iterations per temperature.
    tol : float
        Relative free-energy tolerance; 0 runs ``max_iter`` iterations per temperature (for the
        tempered schedules: unless early stopping ends a temperature first).
    overrelax : float
        ``eta`` of EM(eta), eq. (63), in (0, 2).
    random_state : int, Generator or None
    validation_fraction, beta_decay, min_beta, patience, beta_patience
        The tempered schedule: size of the validation split, factor by which ``beta`` is lowered,
        its floor, iterations without improvement of the validation perplexity before a stage
        stops, and temperatures without improvement before the schedule stops (see
        :func:`tempered_schedule`).
    min_iter : int
        Tempered schedules: the first temperature (``beta = 1``, from the random start) keeps an
        iterate of at least ``min_iter`` steps, and early stopping cannot end it before
        ``min_iter + patience`` steps (``max_iter`` or ``tol`` may, and then its last iterate is
        kept). From a random start the validation perplexity typically dips within a few steps,
        rises, and then improves for dozens of iterations; stopping at that first dip (as with
        ``min_iter=0``) kept 6-7 EM steps on 300 Reuters documents, about 6% worse in test
        perplexity than plain EM (``benchmarks/RESULTS_schedule_defaults.md`` measures the defaults).
    score_tol : float
        Tempered schedules: a validation perplexity counts as an improvement (resetting
        ``patience``, or making a lower temperature worth keeping) only when it is below
        ``1 - score_tol`` times the best so far; the best iterate is kept either way.
    progressbar : bool
    method : str
        Recorded in the :class:`EMResult`.
    desc : str
        Label of the progress bar.
    restart : bool
        ``"auto"`` restarts EM from the start at every candidate temperature and replays the best
        one alone (``restart`` of :func:`tempered_schedule`; recorded as the setting
        ``selection="restarted"``): a family's choice, passed by its :func:`em_entry`.

    Returns
    -------
    EMResult
        The parameters, the trace of every iteration, one row per temperature (``stages``) and
        whether the last temperature converged.

    Examples
    --------
    >>> from latentzoo.data import load
    >>> from latentzoo.inference.aspect import AspectEM
    >>> from latentzoo.models import AspectModel
    >>> model = AspectModel(2)
    >>> result = annealed_fit(model, load("toy"), lambda part: AspectEM(model, part),
    ...                       betas=[0.8, 1.0], random_state=0)
    >>> result.betas, result.method
    ([0.8, 1.0], 'annealed_em')
    """
    data = model.check_data(data)
    check_parameter_memory(model, data, f"{method} of {type(model).__name__}")
    if isinstance(betas, str):
        if betas not in ("auto", "early_stopping"):
            raise ValueError(
                f"betas must be 'auto', 'early_stopping' or a list (or a GeometricCooling), "
                f"got {betas!r}"
            )
    elif not isinstance(betas, GeometricCooling):
        betas = check_schedule(betas)
        check_cooling(betas)
    check_integer("max_iter", max_iter)
    tol = check_interval("tol", tol, 0, np.inf, closed="left")
    overrelax = check_interval("overrelax", overrelax, 0, 2)
    check_fraction(validation_fraction, "validation_fraction")
    check_interval("beta_decay", beta_decay, 0, 1)
    check_interval("min_beta", min_beta, 0, 1, closed="right")
    check_integer("patience", patience)
    check_integer("beta_patience", beta_patience)
    check_integer("min_iter", min_iter, low=0)
    score_tol = check_interval("score_tol", score_tol, 0, 1, closed="left")
    rng = as_rng(random_state)
    start = time.perf_counter()
    problem = problem_on(data)
    selection = transitions = None
    with progress_bar(desc=desc, progressbar=progressbar) as bar:
        if isinstance(betas, str):
            train, validation = data.split(validation_fraction, rng)
            too_small = train.total == 0 or validation.total == 0
        if isinstance(betas, GeometricCooling):
            params = problem.init(rng)
            run, _, transitions = cool(
                problem, params, betas, max_iter, tol, overrelax, bar, rng=rng,
                components=component_params(model, data, params),
            )  # fmt: skip
        elif isinstance(betas, str) and too_small:
            # A random split of a few tokens can leave one side empty: no temperature can be
            # chosen, and plain EM at beta = 1 is what the schedule would start from.
            warn_at_caller(
                f"the data ({data.total:g} observations) are too small for a validation split of "
                f"{validation_fraction:g}: betas={betas!r} fits plain EM at beta = 1 (pass betas "
                "to choose a schedule)"
            )
            params = problem.init(rng)
            run = run_schedule(problem, params, [1.0], max_iter, tol, overrelax, progress=bar)
        elif isinstance(betas, str):
            # The start must not have seen the validation tokens: clustering models seed from
            # whole rows (ACM) or from a fitted ACM (SCM), which would leak them into the choice
            # of beta. The same start is then replayed on all of the data.
            params = problem_on(train).init(rng)
            schedule, selection, tried = tempered_schedule(
                problem_on,
                train,
                validation,
                score=lambda current, held: perplexity(model, current, held),
                params=params,
                max_iter=max_iter,
                beta_decay=beta_decay,
                min_beta=min_beta,
                patience=patience,
                min_iter=min_iter,
                score_tol=score_tol,
                tol=tol,
                overrelax=overrelax,
                early_stopping_only=betas == "early_stopping",
                progress=bar,
                beta_patience=beta_patience,
                restart=restart,
            )
            beta_list = [beta for beta, _ in schedule]
            budgets = [iterations for _, iterations in schedule]
            run = run_schedule(problem, params, beta_list, budgets, 0.0, overrelax, progress=bar)
            run.stages, run.converged = _replayed_stages(run.stages, tried)
        else:
            params = problem.init(rng)
            run = run_schedule(problem, params, betas, max_iter, tol, overrelax, progress=bar)
    final_free = run.trace["free_energy"].iloc[-1] if len(run.trace) else 0.0
    if not _all_finite(run.params) or not np.isfinite(final_free):
        # Every step is guarded, so these are settings the kernels cannot represent: refusing
        # them is better than returning NaN parameters that look like a fit.
        cause = "a zero probability on an observed cell"
        if max(run.betas) > 1:
            cause += f" (the inverse temperature {max(run.betas):g} underflows the tempered tables)"
        raise ValueError(
            f"{method} of {type(model).__name__} did not stay finite: {cause}; use inverse "
            "temperatures (betas) of at most about 1, priors above 1 (alpha, eta) or float64"
        )
    settings = {
        "schedule": betas if isinstance(betas, str) else repr(betas),
        "max_iter": max_iter,
        "tol": tol,
        "overrelax": overrelax,
        "random_state": random_state if isinstance(random_state, int) else None,
    }
    if isinstance(betas, str):
        settings.update(validation_fraction=validation_fraction, beta_decay=beta_decay,
                        min_beta=min_beta, patience=patience, beta_patience=beta_patience,
                        min_iter=min_iter, score_tol=score_tol)  # fmt: skip
    if restart and betas == "auto":
        settings["selection"] = "restarted"
    return EMResult(
        coords=model.coords(data),
        settings=settings,
        model=model,
        params=run.params,
        trace=run.trace,
        converged=run.converged,
        betas=run.betas,
        seconds=time.perf_counter() - start,
        method=method,
        selection_trace=selection,
        stages=run.stages,
        transitions=transitions,
        transition_measure=run.transition_measure if transitions is not None else None,
    )


def component_params(model, data, params: dict) -> list[list[str]]:
    """The parameters whose first axis indexes components, grouped by that axis (one list per
    kind of component), from the model's declared dims.

    A parameter qualifies when it has at least two axes, its declared dims match its shape, its
    first dim is not one of the data's and all its other dims are (the data's dims: those whose
    coordinates are the data's row or column labels): a component's own distribution over the
    data. The aspect model's ``phi`` (topic x word) does; its ``theta`` (doc x topic), a
    two-sided model's ``pi`` (row cluster x column cluster) and the HACM's ``tau`` (leaf x level,
    mixing weights, fixed in some forms) do not. A family without such a parameter gets no
    symmetry breaking from the driver.

    Examples
    --------
    >>> from latentzoo.data import load
    >>> from latentzoo.models import AspectModel
    >>> data = load("toy")
    >>> params = {"theta": np.full((data.n_rows, 2), 0.5), "phi": np.full((2, data.n_cols), 0.1)}
    >>> component_params(AspectModel(2), data, params)
    [['phi']]
    """
    dims = {**getattr(model, "dims", {}), **getattr(model, "estimate_dims", {})}
    coords = model.coords(data)
    labels = [list(getattr(data, name, [])) for name in ("row_labels", "col_labels")]
    data_dims = {name for name, values in coords.items() if list(values) in labels}
    kinds: dict[str, list[str]] = {}
    for name, value in params.items():
        declared = dims.get(name)
        shape = np.shape(value)
        if declared is None or len(declared) != len(shape) or len(shape) < 2:
            continue
        sized = all(
            dim in coords and len(coords[dim]) == n for dim, n in zip(declared, shape, strict=True)
        )
        own = declared[0] not in data_dims and all(dim in data_dims for dim in declared[1:])
        if sized and own:
            kinds.setdefault(declared[0], []).append(name)
    return list(kinds.values())


def _replayed_stages(replay: pd.DataFrame, tried: pd.DataFrame) -> tuple[pd.DataFrame, bool]:
    """The stage table of a tempered fit, and whether it converged.

    The replay on all of the data runs a fixed budget per temperature, so how each stage ended is
    the selection's: ``stopped`` and ``validation_perplexity`` come from the selected rows of
    ``tried`` (``selection_iterations``: what the selection ran there, patience included), the
    iterations, free energy and log-likelihood from the replay. Converged: the last temperature
    was stopped by the early-stopping rule or the tolerance rather than by ``max_iter``.
    """
    chosen = tried[tried["selected"]].reset_index(drop=True)
    stages = replay.assign(
        stopped=chosen["stopped"].to_numpy(),
        validation_perplexity=chosen["validation_perplexity"].to_numpy(),
        selection_iterations=chosen["iterations"].to_numpy(),
    )
    return stages, bool(stages["stopped"].iloc[-1] != "max_iter")


def _keyword_names(problem_on: Callable) -> set[str] | None:
    """The keyword options ``problem_on(model, data, **options)`` takes (None: any)."""
    import inspect

    parameters = list(inspect.signature(problem_on).parameters.values())[2:]
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in parameters):
        return None
    return {p.name for p in parameters}


def _check_problem_options(options: dict) -> None:
    """The kernel options several families share: ``n_threads`` and ``dtype``."""
    if "n_threads" in options:
        check_integer("n_threads", options["n_threads"])
    if "dtype" in options:
        try:
            name = np.dtype(options["dtype"]).name
        except TypeError:
            name = None
        # Compared by name: numpy takes None for float64, so `None == np.dtype(float)` is True.
        if options["dtype"] is None or name not in ("float32", "float64"):
            raise ValueError(f"dtype must be float32 or float64, got {options['dtype']!r}")


SCHEDULE_DEFAULTS = {option.name: option.default for option in SCHEDULE_OPTIONS}
"""The options of :func:`annealed_fit` that every family's annealed EM takes, and their defaults."""


def em_entry(
    problem_on: Callable,
    doc: str,
    *,
    defaults: dict | None = None,
    check: Callable | None = None,
    finish: Callable | None = None,
    method: str = "annealed_em",
    desc: str = "annealed EM",
    restart: bool = False,
) -> Callable:
    """The one annealed-EM entry point, specialised to a family: its ``annealed_em`` function.

    The returned ``annealed_em(model, data, **options)`` splits ``options`` into the schedule
    options of :func:`annealed_fit` (:data:`SCHEDULE_DEFAULTS`, with the family's own
    ``defaults``) and the options of the family's problem,
    ``problem_on(model, part, **problem_options)`` (e.g. ``n_threads``, ``dtype``; the family's
    defaults for them are in ``defaults`` too); ``check(model, data, schedule, problem_options)``
    may refuse combinations (it may also drop problem options the problem does not take) and
    ``finish(model, data, result)`` may complete the :class:`EMResult`. An option neither side
    takes raises ``TypeError`` naming it. ``doc`` is the docstring; the function reports the
    module of ``problem_on`` as its own. ``restart``: the family's ``"auto"`` restarts EM at
    every candidate temperature (``restart`` of :func:`annealed_fit`).

    Examples
    --------
    >>> from latentzoo.inference.aspect import annealed_em
    >>> annealed_em.__module__, annealed_em.__name__
    ('latentzoo.inference.aspect', 'annealed_em')
    """
    family = dict(defaults or {})
    schedule_defaults = {
        **SCHEDULE_DEFAULTS,
        **{k: v for k, v in family.items() if k in SCHEDULE_DEFAULTS},
    }
    problem_defaults = {k: v for k, v in family.items() if k not in SCHEDULE_DEFAULTS}

    accepted = _keyword_names(problem_on)

    def annealed_em(model, data, **options):
        schedule, problem_options = dict(schedule_defaults), dict(problem_defaults)
        for name, value in options.items():
            (schedule if name in schedule else problem_options)[name] = value
        if check is not None:
            check(model, data, schedule, problem_options)
        unknown = sorted(set(problem_options) - accepted) if accepted is not None else []
        if unknown:
            known = ", ".join(sorted({*schedule, *accepted}))
            raise TypeError(
                f"{method}() got an unexpected keyword argument {unknown[0]!r}; "
                f"its options are {known}"
            )
        _check_problem_options(problem_options)
        result = annealed_fit(
            model, data, lambda part: problem_on(model, part, **problem_options), method=method,
            desc=desc, restart=restart, **schedule,
        )  # fmt: skip
        return result if finish is None else finish(model, data, result)

    annealed_em.__doc__ = doc
    annealed_em.__module__ = problem_on.__module__
    # The defaults this family gives its options (declared in its FAMILY, inference/family.py).
    annealed_em.defaults = {**schedule_defaults, **problem_defaults}
    return annealed_em
