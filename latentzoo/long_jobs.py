"""How long a fit whose time grows faster than its data will take, said before it starts.

Greedy BHC (Algorithm 3.2) scores every pair of items: its time grows as ``N^2`` (about two
hours extrapolated for 200,000 items), while its memory stays ``O(N)`` (the run refuses up front
what would exceed its ``memory_limit``, naming it). A fit of such a method is timed here on an
evenly spaced subsample of the data, after a warm-up that compiles its kernels, and the time
extrapolated by the method's order (its declared ``Method.time_order``, with ``Method.faster``
named as the alternative); ``latentzoo fit`` prints the estimate before it starts when
it exceeds :data:`SAY_ABOVE_SECONDS`.

Examples
--------
>>> from latentzoo.data import Features
>>> items = Features(np.eye(8)[np.arange(40) % 8])
>>> ticks = iter([0.0, 2.0])  # the 20-item run takes 2 s (the warm-up is not timed)
>>> estimate = expected_seconds(lambda data: None, items, calibration_items=20,
...                             clock=lambda: next(ticks))
>>> estimate.seconds, estimate.calibration_items, estimate.calibration_seconds
(8.0, 20, 2.0)
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import NamedTuple

import numpy as np

__all__ = [
    "CALIBRATE_FROM_ITEMS",
    "SAY_ABOVE_SECONDS",
    "Estimate",
    "expected_seconds",
]

SAY_ABOVE_SECONDS = 60.0
"""An expected time above this is said before the fit starts."""

CALIBRATE_FROM_ITEMS = 2000
"""Below this many items a quadratic fit is fast (greedy BHC on 2,000 binary items: about 2 s
here) and is not timed first."""

CALIBRATION_ITEMS = 400
"""Items of the timed subsample (0.1 s of greedy BHC on 64 binary features)."""

WARM_UP_ITEMS = 8
"""Items of the first, untimed run that compiles the kernels (about 3 s the first time)."""


class Estimate(NamedTuple):
    """An extrapolated run time and what it was measured on."""

    seconds: float
    n_items: int
    calibration_items: int
    calibration_seconds: float

    def line(self, what: str, alternative: str = "") -> str:
        """The sentence ``latentzoo fit`` prints before starting.

        Examples
        --------
        >>> Estimate(7200.0, 200000, 400, 0.03).line("bhc", "--method rbhc")
        'latentzoo: bhc on 200,000 items: about 2.0 hours expected (O(N^2): 0.03 s on 400 of them here, times (N / 400)^2); faster: --method rbhc'
        """
        faster = f"; faster: {alternative}" if alternative else ""
        return (
            f"latentzoo: {what} on {self.n_items:,} items: about {_duration(self.seconds)} "
            f"expected (O(N^2): {self.calibration_seconds:.2g} s on {self.calibration_items} of "
            f"them here, times (N / {self.calibration_items})^2){faster}"
        )


def _duration(seconds: float) -> str:
    """``seconds`` in the unit a person reads it in.

    Examples
    --------
    >>> _duration(90), _duration(5400), _duration(3 * 86400)
    ('1.5 minutes', '1.5 hours', '3.0 days')
    """
    for unit, size, least in (("days", 86400.0, 1.5), ("hours", 3600.0, 1.5), ("minutes", 60, 1)):
        if seconds >= least * size:
            return f"{seconds / size:.1f} {unit}"
    return f"{seconds:.0f} seconds"


def expected_seconds(
    run: Callable,
    data,
    calibration_items: int = CALIBRATION_ITEMS,
    order: int = 2,
    clock: Callable[[], float] = time.perf_counter,
) -> Estimate:
    """The time of ``run(data)`` extrapolated from ``run`` on a subsample of ``data``.

    Parameters
    ----------
    run : callable
        ``run(data)`` fits (its result is discarded).
    data
        A container with ``n_items`` (or ``n_rows``) and ``subset(items)``.
    calibration_items : int
        Items of the timed subsample (evenly spaced, so that every part of the data is in it).
    order : int
        The time grows as ``N ** order``.
    clock : callable
        Seconds (injected by tests).

    Returns
    -------
    Estimate
    """
    n_items = int(getattr(data, "n_items", None) or data.n_rows)
    size = max(2, min(int(calibration_items), n_items))
    # The first run compiles the kernels: timing it would add seconds that the real run, which
    # reuses the compiled code, never spends.
    run(data.subset(np.linspace(0, n_items - 1, min(WARM_UP_ITEMS, n_items)).astype(np.int64)))
    sample = data.subset(np.linspace(0, n_items - 1, size).astype(np.int64))
    start = clock()
    run(sample)
    taken = clock() - start
    return Estimate(taken * (n_items / size) ** order, n_items, size, taken)
