"""Argument checks shared by the models and the fast inference: one message per kind of mistake.

Every check raises ``ValueError`` with a message that names the offending argument and its value, as
the project's input contract asks; the messages are part of the tested behaviour.
"""

from __future__ import annotations

import numbers

import numpy as np

__all__ = [
    "check_data_shape",
    "check_fits_data",
    "check_integer",
    "check_interval",
    "check_label_range",
    "check_nonnegative",
    "check_positive",
    "check_simplex_rows",
]


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


def check_data_shape(name: str, shape, fit_shape, what=("documents", "words"), detail=None) -> None:
    """Raise ``ValueError`` when data of ``shape`` do not fit parameters fitted to ``fit_shape``.

    ``shape`` and ``fit_shape`` are ``(rows, columns)``; an entry ``None`` in ``fit_shape`` is not
    checked (parameters that do not depend on that axis). ``name`` is ``"test"`` for held-out
    data (which must be the same rows and columns as the training data) or ``"data"``. ``what``
    names the rows and the columns in the message; ``detail`` (e.g. the parameter's shape) is added
    to it.

    Examples
    --------
    >>> check_data_shape("test", (10, 8), (300, 8))
    Traceback (most recent call last):
    ...
    ValueError: test has 10 rows, the fit has 300 (documents); held-out data must be the same rows and columns as the training data
    >>> check_data_shape("data", (5, 7), (None, 8), ("rows", "columns"))
    Traceback (most recent call last):
    ...
    ValueError: data has 7 columns, the parameters have 8 (columns); data must have the rows and columns the parameters describe
    """
    for axis, have, want, noun in zip(("rows", "columns"), shape, fit_shape, what, strict=True):
        if want is None or int(have) == int(want):
            continue
        if detail:
            noun = f"{noun}; {detail}"
        if name == "test":
            raise ValueError(
                f"test has {have} {axis}, the fit has {want} ({noun}); held-out data must be the "
                "same rows and columns as the training data"
            )
        raise ValueError(
            f"{name} has {have} {axis}, the parameters have {want} ({noun}); {name} must have the "
            "rows and columns the parameters describe"
        )


def check_table(name: str, table, shape) -> np.ndarray:
    """``table`` as a C-contiguous float64 array of ``shape`` (ValueError naming it otherwise).

    The fused kernels index without bounds checks, so shapes are checked before they run.

    Examples
    --------
    >>> check_table("theta", [[0.5, 0.5]], (1, 2)).flags.c_contiguous
    True
    >>> check_table("theta", [[0.5, 0.5]], (2, 2))
    Traceback (most recent call last):
    ...
    ValueError: theta has shape (1, 2), expected (2, 2)
    """
    array = np.ascontiguousarray(table, dtype=np.float64)
    if array.shape != tuple(shape):
        raise ValueError(f"{name} has shape {array.shape}, expected {tuple(shape)}")
    return array


def check_nonnegative(name: str, array) -> None:
    """Raise ``ValueError`` unless every entry of ``array`` is finite and non-negative.

    Examples
    --------
    >>> check_nonnegative("w", np.array([0.5, 0.5]))
    >>> check_nonnegative("w", np.array([0.5, np.nan]))
    Traceback (most recent call last):
    ...
    ValueError: w must be finite and non-negative
    """
    if not np.all(np.isfinite(array)) or np.any(array < 0):
        raise ValueError(f"{name} must be finite and non-negative")


def check_label_range(name: str, labels: np.ndarray, n_labels: int) -> None:
    """Raise ``ValueError`` unless every entry of the integer array ``labels`` lies in
    ``0..n_labels - 1`` (an empty array passes): cluster labels, leaves or levels of enumerated
    states.

    Examples
    --------
    >>> check_label_range("leaves", np.array([[0, 1], [1, 1]]), 2)
    >>> check_label_range("assignments", np.array([0, 2]), 2)
    Traceback (most recent call last):
    ...
    ValueError: assignments must lie in 0..1
    """
    if labels.size and (labels.min() < 0 or labels.max() >= n_labels):
        raise ValueError(f"{name} must lie in 0..{n_labels - 1}")


def check_simplex_rows(name: str, array) -> None:
    """Raise ``ValueError`` unless ``array`` (2-D) is finite and non-negative with rows that sum to
    one (to 1e-6): a table of distributions such as ``theta``, ``q`` or soft assignments.

    Examples
    --------
    >>> check_simplex_rows("q", np.array([[0.25, 0.75]]))
    >>> check_simplex_rows("q", np.array([[0.25, 0.5]]))
    Traceback (most recent call last):
    ...
    ValueError: rows of q must sum to one
    """
    check_nonnegative(name, array)
    if not np.allclose(array.sum(axis=1), 1.0, atol=1e-6):
        raise ValueError(f"rows of {name} must sum to one")
