"""One verdict of a validation: :class:`Check`, shared by the comparison and the calibration.

:mod:`latentzoo.inference.compare` (agreement, exact tests, the :class:`Comparison` report) and
:mod:`latentzoo.inference.calibration` (simulation-based calibration) both return checks; the
class lives here, below both, so neither imports the other for it.

Examples
--------
>>> Check("exact", "chi2", True, "p = 0.4").outcome
'pass'
>>> Check("reference", "R-hat", False, "chains apart", inconclusive=True).outcome
'inconclusive'
"""

from __future__ import annotations

from dataclasses import dataclass, field

__all__ = ["Check"]


@dataclass
class Check:
    """One verdict: its level, whether it passed, a one-line reason and the numbers behind it.

    An ``inconclusive`` check (``passed`` False) could not decide, e.g. chains that did not stay
    in the mode they were started in: it is no evidence of a bug, but its level is not reached.
    """

    level: str
    name: str
    passed: bool
    detail: str
    numbers: dict = field(default_factory=dict)
    inconclusive: bool = False

    @property
    def outcome(self) -> str:
        """``"pass"``, ``"FAIL"`` or ``"inconclusive"``."""
        if self.inconclusive:
            return "inconclusive"
        return "pass" if self.passed else "FAIL"
