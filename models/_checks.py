"""Argument checks shared by the models and the fast inference: one message per kind of mistake.

Every check raises ``ValueError`` with a message that names the offending argument and its value, as
the project's input contract asks; the messages are part of the tested behaviour.
"""

from __future__ import annotations

import numpy as np

__all__ = ["check_fits_data", "check_integer", "check_positive"]


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
    if not np.isfinite(value) or value <= 0:
        raise ValueError(f"{name} must be a positive finite number, got {value!r}")


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
