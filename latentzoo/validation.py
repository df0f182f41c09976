"""``latentzoo.validate``: the four-level comparison of fast inference with the PyMC reference.

The levels (the "Adding a family" and validation sections of the README), each run on data of the
right kind:

1. **exact** — a data set of a few items whose posterior over all latent assignments is enumerated;
   the collapsed Gibbs sampler's state frequencies (independent chains) are tested by chi-square;
2. **reference** — synthetic data with well-separated structure, where PyMC's own chains agree
   (R-hat <= 1.01 over 4 chains); the Gibbs sampler must agree with PyMC within combined MCSE, and a
   point estimator (EM) must lie inside the reference posterior;
3. **mode-matched** — real data, where no sampler mixes between modes: PyMC and Gibbs chains are
   started at the same annealed-EM solutions and compared chain by chain; the spread of modes is
   reported rather than averaged away;
4. **calibrated** — simulation-based calibration of the Gibbs sampler on data drawn from the prior.

Each model family describes how it is validated in a :class:`ValidationRecipe` (registered with the
family in :mod:`latentzoo.zoo`, written in :mod:`latentzoo.recipes`): a list of checks, each a
function. The four standard checks of the co-occurrence families are written once, here, and
parametrised by the recipe (sizes, simulator keywords, how to start PyMC and Gibbs at an EM
solution); a family with other data brings its own checks built from the same parts
(:func:`~latentzoo.inference.compare.exact_test`, :func:`~latentzoo.inference.compare.compare`,
:func:`~latentzoo.inference.compare.sbc`).
"""

from __future__ import annotations

import dataclasses
import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from latentzoo.data import load
from latentzoo.inference.compare import (
    LEVELS,
    Check,
    Comparison,
    SBCResult,
    compare,
    exact_test,
    point_in_posterior,
    sbc,
)

__all__ = [
    "FULL",
    "LEVEL_NAMES",
    "QUICK",
    "Settings",
    "ValidationRecipe",
    "cooccurrence_checks",
    "validate",
]

LEVEL_NAMES = LEVELS
"""The four standard levels (defined once, in :mod:`latentzoo.inference.compare`)."""


@dataclass(frozen=True)
class Settings:
    """Sizes of each level's problem; ``QUICK`` for tests, ``FULL`` for reports."""

    exact_chains: int = 20_000
    exact_sweeps: int = 30
    # R-hat <= 1.01 is demanded of every invariant: with 4 x 300 draws the estimator's own noise
    # (max over ~80 quantities) crossed 1.01 for about one seed in three; 4 x 1000 keeps it near 1.005.
    pymc_draws: int = 1000
    pymc_tune: int = 500
    gibbs_draws: int = 1000
    gibbs_thin: int = 4
    real_subset: tuple = (20, 30)  # first rows, most frequent columns
    real_draws: int = 200
    sbc_sims: int = 100
    full: bool = False


QUICK = Settings()
FULL = Settings(
    pymc_draws=1000,
    pymc_tune=500,
    gibbs_draws=2000,
    real_subset=(60, 150),
    real_draws=300,
    sbc_sims=200,
    full=True,
)


@dataclass(frozen=True)
class ValidationRecipe:
    """How one model family is validated: its checks, and what they need.

    ``checks`` maps a level name to the function that runs it,
    ``check(family, recipe, model, data, settings, rng, progressbar) -> Comparison | SBCResult``;
    a family extends the list with checks of its own (any name) and leaves out the levels it
    cannot reach, giving the reason in ``not_applicable``. :func:`cooccurrence_checks` builds the
    four standard checks from the remaining fields, which describe the problems of the
    co-occurrence families; other families use ``problems`` for their own checks' settings.

    Attributes
    ----------
    checks : dict[str, callable]
        Level name -> check function, run in the order asked for.
    not_applicable : dict[str, str]
        Level name -> why the family cannot reach it (reported as skipped, never dropped).
    small : callable
        ``small(model, sizes) -> model``: the family's model at the given cluster sizes, with the
        user's priors.
    sizes : dict
        Cluster sizes for ``"exact"``, ``"reference"``, ``"real"``, ``"sbc"`` problems.
    exact_data : Dataset or None
        The tiny data set whose posterior is enumerated (None: no exact level).
    synthetic : callable
        ``synthetic(settings) -> dict`` of simulator keywords for the separated data.
    sbc_data : dict
        Simulator keywords for SBC (draws from the prior).
    sampler : str or None
        Registry method name of the collapsed Gibbs sampler.
    sampler_class : callable or None
        ``sampler_class(model, data)``: an object with ``exact_draws``.
    enumerate : callable or None
        ``enumerate(model, data, sampler) -> (states, log_probs)``.
    em : str
        Registry method name of the EM used for the mode-matched starts.
    initvals : callable
        ``initvals(params) -> dict`` of PyMC starting values.
    gibbs_start : callable or None
        ``gibbs_start(params, sampler, rng) -> assignments`` for ``initial_assignments``.
    random_start : callable or None
        ``random_start(model, data, rng) -> dict``: random PyMC starting values for one chain of
        the reference level (None: PyMC's own). Discrete steps started all at PyMC's default
        point (every label 0) were measured to stay in separate modes (R-hat up to 1.97).
    pymc_draws_factor : int
        Multiplies the reference level's PyMC draws: single-site discrete Metropolis steps need
        more draws than NUTS for the same ESS (SCM: 4 x 1000 gave R-hat up to 1.04, 4 x 5000 at
        most 1.004 over four seeds).
    problems : dict
        Free-form settings of a family's own checks.
    """

    checks: dict = field(default_factory=dict)
    not_applicable: dict = field(default_factory=dict)
    small: Callable | None = None
    sizes: dict = field(default_factory=dict)
    exact_data: object = None
    synthetic: Callable | None = None
    sbc_data: dict = field(default_factory=dict)
    sampler: str | None = None
    sampler_class: Callable | None = None
    enumerate: Callable | None = None
    em: str | None = None
    initvals: Callable | None = None
    gibbs_start: Callable | None = None
    random_start: Callable | None = None
    pymc_draws_factor: int = 1
    problems: dict = field(default_factory=dict)


# -------------------------------------------------------------------------------- levels
def _log(progressbar, message):
    if progressbar:
        print(message, flush=True)


def exact_level(
    entry, recipe: ValidationRecipe, model, data, settings: Settings, rng, progressbar=False
) -> Comparison:
    """Level 1: enumerate every assignment of a tiny data set."""
    tiny = recipe.small(model, recipe.sizes["exact"])
    data = recipe.exact_data  # the enumerable problem, not the user's data
    sampler = recipe.sampler_class(tiny, data)
    states, log_probs = recipe.enumerate(tiny, data, sampler)
    draws = sampler.exact_draws(settings.exact_chains, settings.exact_sweeps, rng)
    name = "Gibbs state frequencies = enumerated posterior"
    check = exact_test(log_probs, draws, n_labels=int(states.max()) + 1, name=name)
    return Comparison(checks=[check])


def reference_level(entry, recipe, model, data, settings, rng, progressbar=False) -> Comparison:
    """Level 2: separated synthetic data; 4 PyMC chains against Gibbs (or EM inside PyMC)."""
    from latentzoo.api import fit_pymc

    k = recipe.sizes["reference_full" if settings.full else "reference"]
    small = recipe.small(model, k)
    # The reference level simulates its own separated data; the user's data is not used.
    full, _ = small.simulate(rng, separated=True, **recipe.synthetic(settings))
    data, test = full.split(0.2, rng)
    _log(progressbar, f"reference level: PyMC on {data}")
    initvals = None
    if recipe.random_start is not None:
        initvals = [recipe.random_start(small, data, rng) for _ in range(4)]
    reference = fit_pymc(
        small, data, chains=4, draws=settings.pymc_draws * recipe.pymc_draws_factor,
        tune=settings.pymc_tune, random_state=rng, progressbar=progressbar, initvals=initvals,
    )  # fmt: skip
    if recipe.sampler is not None:
        fast = entry.methods[recipe.sampler](
            small, data, chains=4, draws=settings.gibbs_draws, tune=200,
            thin=settings.gibbs_thin, random_state=rng, progressbar=progressbar,
        )  # fmt: skip
        return compare(small, data, fast, reference, names=("gibbs", "pymc"), test=test)
    # A tight tolerance: mixture likelihoods have plateaus where a loose relative tolerance stops.
    estimate = entry.methods[recipe.em](
        small, data, betas=[1.0], tol=1e-9, max_iter=3000, random_state=rng
    )
    return point_in_posterior(small, data, estimate.params, reference, name=recipe.em)


def mode_matched_level(entry, recipe, model, data, settings, rng, progressbar=False):
    """Level 3: real data; PyMC and Gibbs chains started at the same annealed-EM solutions."""
    from latentzoo.api import fit_pymc

    n_rows, n_cols = settings.real_subset
    subset = data.subset(rows=np.arange(min(n_rows, data.n_rows)), cols=data.top_columns(n_cols))
    subset = subset.subset(rows=np.flatnonzero(subset.row_totals > 0))
    local = recipe.small(model, recipe.sizes["real"])
    em = entry.methods[recipe.em]
    solutions = [em(local, subset, betas=[1.0], max_iter=300, random_state=rng) for _ in range(2)]
    initvals = [recipe.initvals(s.params) for s in solutions]
    _log(progressbar, f"mode-matched level: PyMC on {subset}, started at EM solutions")
    reference = fit_pymc(
        local, subset, chains=2, draws=settings.real_draws, tune=settings.real_draws,
        random_state=rng, progressbar=progressbar, initvals=initvals,
    )  # fmt: skip
    sampler = recipe.sampler_class(local, subset)
    starts = [recipe.gibbs_start(s.params, sampler, rng) for s in solutions]
    fast = entry.methods[recipe.sampler](
        local, subset, draws=settings.real_draws * 2, tune=0, thin=settings.gibbs_thin,
        random_state=rng, progressbar=progressbar, initial_assignments=starts,
    )  # fmt: skip
    return compare(local, subset, fast, reference, level="mode-matched", names=("gibbs", "pymc"))


def calibration_level(entry, recipe, model, data, settings, rng, progressbar=False):
    """Level 4: SBC of the Gibbs sampler on small data sets drawn from the prior."""
    small = recipe.small(model, recipe.sizes["sbc"])
    gibbs = entry.methods[recipe.sampler]

    def sampler(data, generator, n_draws):
        return gibbs(
            small, data, chains=1, draws=n_draws, tune=50, thin=5, random_state=generator,
            progressbar=False,
        )  # fmt: skip

    return sbc(
        small, sampler, settings.sbc_sims, random_state=rng, progressbar=progressbar,
        **recipe.sbc_data,
    )  # fmt: skip


def cooccurrence_checks(recipe: ValidationRecipe) -> ValidationRecipe:
    """``recipe`` with the four standard checks of a co-occurrence family filled in.

    The exact, mode-matched and calibrated levels need a collapsed sampler (and the exact level a
    tiny data set); a family without one is checked at the reference level only, and the other
    levels are recorded as not applicable.
    """
    checks = {"reference": reference_level}
    reasons = {}
    if recipe.exact_data is not None and recipe.sampler is not None:
        checks = {"exact": exact_level, **checks}
    else:
        reasons["exact"] = "no collapsed sampler whose posterior can be enumerated"
    if recipe.sampler is not None:
        checks.update({"mode-matched": mode_matched_level, "calibrated": calibration_level})
    else:
        reasons["mode-matched"] = reasons["calibrated"] = (
            "no sampler to compare or calibrate (point estimator only)"
        )
    return dataclasses.replace(recipe, checks=checks, not_applicable=reasons)


def validate(
    model,
    data=None,
    *,
    quick: bool = False,
    levels=LEVEL_NAMES,
    random_state=0,
    progressbar: bool = False,
    settings: Settings | None = None,
):
    """Validate the fast inference of ``model`` against its PyMC reference on four levels.

    Parameters
    ----------
    model : a registered model (e.g. ``AspectModel``, ``OneSidedClustering``)
        Its priors are used at every level; the problem sizes come from ``settings``.
    data : CoOccurrence or dataset name, optional
        Real data for the mode-matched level (default: the registry's dataset).
    quick : bool
        Small problems (well under a minute per family); otherwise the report sizes.
    levels : iterable of str
        Which levels to run. A level that does not apply to the family (e.g. SBC of a model that
        only has a point estimator) is recorded as a skipped check, not silently dropped.

    Returns
    -------
    comparison : Comparison
        All checks; ``comparison.sbc`` holds the SBC result and ``comparison.timings`` the seconds
        per level.

    Examples
    --------
    >>> import latentzoo
    >>> from latentzoo.models import AspectModel
    >>> c = latentzoo.validate(AspectModel(2), levels=["exact"])
    >>> c.levels_reached
    ['exact']
    """
    from latentzoo.zoo import entry_for

    entry = entry_for(model)
    if entry.recipe is None:
        raise ValueError(f"no validation recipe for {entry.name}")
    recipe = entry.recipe()
    known = set(LEVEL_NAMES) | set(recipe.checks)
    unknown = set(levels) - known
    if unknown:
        raise ValueError(f"unknown validation levels: {sorted(unknown)}; known: {sorted(known)}")
    settings = settings or (QUICK if quick else FULL)
    rng = np.random.default_rng(random_state)
    if data is None:
        data = entry.dataset
    if isinstance(data, str):
        data = load(data)
    result = Comparison()
    result.timings = {}
    result.sbc = None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for level in levels:
            check = recipe.checks.get(level)
            if check is None:
                reason = recipe.not_applicable.get(level, "not part of this family's recipe")
                result.skipped.append(Check(level, level, True, f"not applicable: {reason}"))
                continue
            start = time.perf_counter()
            outcome = check(entry, recipe, model, data, settings, rng, progressbar)
            if isinstance(outcome, SBCResult):
                result.checks.append(outcome.check)
                result.sbc = outcome
            else:
                result.extend(outcome, level)
            result.timings[level] = time.perf_counter() - start
    return result
