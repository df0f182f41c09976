"""Argument checks shared by the models and the fast inference: one message per kind of mistake.

Every check raises ``ValueError`` with a message that names the offending argument and its value, as
the project's input contract asks; the messages are part of the tested behaviour.
"""

from __future__ import annotations

import numbers

import numpy as np

__all__ = ["check_fits_data", "check_integer", "check_interval", "check_positive"]


def check_positive(name: str, value) -> None:
    """Raise ``ValueError`` unless ``value`` is a positive finite number.

    Examples
    --------
    >>> check_positive("alpha", 1.5)
    >>> check_positive("alpha", 0.0)
    Traceback (most recent call last):
    ...
    ValueError: alpha must be a positive finite number, got 0.0
    """
    if not _is_real(value) or not np.isfinite(value) or value <= 0:
        raise ValueError(f"{name} must be a positive finite number, got {value!r}")


def _is_real(value) -> bool:
    return isinstance(value, numbers.Real) and not isinstance(value, bool)


def check_interval(name: str, value, low: float, high: float, closed: str = "neither") -> float:
    """Return ``value`` as a float after checking that it is a number in an interval.

    ``closed`` is ``"neither"`` (``(low, high)``), ``"left"`` (``[low, high)``), ``"right"``
    (``(low, high]``) or ``"both"`` (``[low, high]``); an infinite bound is always open. NaN,
    strings, ``None`` and booleans are refused with a message naming ``name``.

    Examples
    --------
    >>> check_interval("overrelax", 1.5, 0, 2)
    1.5
    >>> check_interval("tol", 0, 0, np.inf, closed="left")
    0.0
    >>> check_interval("overrelax", float("nan"), 0, 2)
    Traceback (most recent call last):
    ...
    ValueError: overrelax must be a number in (0, 2), got nan
    """
    left = closed in ("left", "both")
    right = closed in ("right", "both")
    bounds = f"{'[' if left else '('}{_bound(low)}, {_bound(high)}{']' if right else ')'}"
    ok = _is_real(value) and not np.isnan(value)
    if ok:
        ok = (low <= value if left else low < value) and (value <= high if right else value < high)
    if not ok:
        raise ValueError(f"{name} must be a number in {bounds}, got {value!r}")
    return float(value)


def _bound(value: float) -> str:
    if np.isinf(value):
        return "inf" if value > 0 else "-inf"
    return f"{value:g}"


def check_integer(name: str, value, low: int = 1) -> None:
    """Raise ``ValueError`` unless ``value`` is an integer (not a bool) of at least ``low``.

    Examples
    --------
    >>> check_integer("chains", 4)
    >>> check_integer("tune", 0, low=0)
    >>> check_integer("draws", 2.0)
    Traceback (most recent call last):
    ...
    ValueError: draws must be an integer >= 1, got 2.0
    """
    if isinstance(value, bool) or not isinstance(value, int | np.integer) or value < low:
        raise ValueError(f"{name} must be an integer >= {low}, got {value!r}")


def check_fits_data(name: str, value: int, available: int, what: str) -> None:
    """Raise ``ValueError`` when ``value`` (a number of components) exceeds ``available`` ``what``.

    Examples
    --------
    >>> check_fits_data("n_clusters", 7, 6, "rows")
    Traceback (most recent call last):
    ...
    ValueError: n_clusters=7 is larger than the data supports: only 6 rows
    """
    if value > available:
        raise ValueError(
            f"{name}={value} is larger than the data supports: only {available} {what}"
        )
