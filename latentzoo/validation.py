"""``latentzoo.validate``: run a family's validation recipe, level by level, and collect the verdicts.

The levels, the recipes' shared machinery (:class:`~latentzoo.inference.validation.Settings`,
:class:`~latentzoo.inference.validation.ValidationRecipe`, the standard checks) live in
:mod:`latentzoo.inference.validation`, and each family's recipe in its own module (its
``FAMILY.recipe``); this module only finds the family in the registry and runs its recipe. The
names of :mod:`latentzoo.inference.validation` are re-exported here.
"""

from __future__ import annotations

import time
import warnings

from latentzoo.data import load
from latentzoo.data.checks import as_rng
from latentzoo.inference.compare import Check, Comparison

# The shared machinery lives in latentzoo.inference.validation; re-exported here.
from latentzoo.inference.validation import (  # noqa: F401
    FULL,
    LEVEL_NAMES,
    QUICK,
    REAL_DATA,
    ExactProblem,
    Settings,
    ValidationRecipe,
    calibration_level,
    compare_at_modes,
    cooccurrence_checks,
    density_level,
    distinct_modes,
    exact_level,
    mode_matched_level,
    optimality_level,
    reference_level,
)

__all__ = ["validate"]


def validate(
    model,
    data=None,
    *,
    quick: bool = False,
    levels=LEVEL_NAMES,
    random_state=0,
    progressbar: bool = False,
    settings: Settings | None = None,
    data_name: str | None = None,
):
    """Validate the fast inference of ``model`` against its PyMC reference, level by level.

    The levels are those of the module docstring (exact, density, reference, optimality,
    mode-matched, calibrated); each names the problem it ran on in ``comparison.problems``. A
    check that cannot decide (mode-matched chains that hold no local posterior) is reported
    inconclusive: it does not fail the validation, but its level is not reached. A level that
    raises is reported as a failed check with the exception.

    Parameters
    ----------
    model : a registered model (e.g. ``AspectModel``, ``OneSidedClustering``)
        Its priors are used at every level (the exact level adds the defaults and two
        informative priors); the problem sizes come from ``settings``.
    data : Dataset or dataset name, optional
        Real data for the mode-matched level (default: the registry's dataset).
    quick : bool
        Small problems (two to eight minutes per family, every level); otherwise the report
        sizes.
    levels : iterable of str
        Which levels to run. A level that does not apply to the family (e.g. SBC of a model that
        only has a point estimator) is recorded as a skipped check, not silently dropped.
    random_state : int or Generator
        Seeds every level: the same seed gives the same verdicts.
    progressbar : bool
        Progress bars and one line per level.
    settings : Settings, optional
        Problem sizes (overrides ``quick``): :data:`QUICK`, :data:`FULL` or a
        ``dataclasses.replace`` of either.
    data_name : str, optional
        The name of ``data`` for the report's problem lines, when ``data`` is a loaded data set
        (a name given as ``data`` is used as it is).

    Returns
    -------
    comparison : Comparison
        All checks; ``comparison.sbc`` holds the SBC result and ``comparison.timings`` the seconds
        per level.

    Examples
    --------
    >>> import latentzoo
    >>> from latentzoo.models import AspectModel
    >>> c = latentzoo.validate(AspectModel(2), levels=["exact", "density"], quick=True)
    >>> c.levels_reached
    ['exact', 'density']
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
    rng = as_rng(random_state)
    if data is None:
        data = entry.dataset
    # Named in the problem line of the levels that run on real data.
    if data_name is None:
        data_name = data if isinstance(data, str) else None
    source = f"'{data_name}'" if data_name else "(given by the caller)"
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
            try:
                outcome = check(entry, recipe, model, data, settings, rng, progressbar)
            except Exception as error:  # noqa: BLE001 - a level that cannot run is a failed level
                # A sampler that crashes on a validation problem (e.g. a negative Dirichlet
                # concentration) is a finding, reported with the other verdicts.
                detail = f"the level raised {type(error).__name__}: {error}"
                outcome = Comparison(checks=[Check(level, f"{level} level ran", False, detail)])
            outcome.merge_into(result, level)
            if result.problems.get(level, "").startswith(REAL_DATA):
                text = result.problems[level]
                result.problems[level] = f"{REAL_DATA} {source}, {text[len(REAL_DATA) + 2 :]}"
            result.timings[level] = time.perf_counter() - start
    return result
