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

import numpy as np

__all__ = ["Check", "estimator_near_posterior_mean"]


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


def estimator_near_posterior_mean(
    estimate, estimator_sd, posterior_mean, mcse, alpha: float = 1e-3, name: str = "estimator"
) -> Check:
    """A consistent point estimator against the posterior mean, at a stated false-alarm rate.

    For an unbiased estimator ``r~`` and an asymptotically efficient posterior mean ``E r``
    (a regular model, a long document), ``Var(r~ - E r) = Var(r~) - Var(E r) <= Var(r~)``
    (Hausman 1978): so ``|r~_j - E r_j| / sqrt(Var(r~_j) + MCSE_j^2)`` exceeds the normal
    ``1 - alpha / (2 k)`` quantile in any of the ``k`` components with probability at most
    ``alpha`` (Bonferroni; the MCSE covers the posterior mean's Monte Carlo error). A point
    estimator is not a posterior draw, so quantiles of the posterior state no rate for it: near
    the boundary of the parameter space an unbiased estimator leaves the posterior's support.

    Parameters
    ----------
    estimate, estimator_sd, posterior_mean, mcse : array-like of shape (k,)
        The estimator, its sampling standard deviation, the posterior mean and its Monte Carlo
        standard error.
    alpha : float
        Family-wise false-alarm rate over the ``k`` components.
    name : str

    Returns
    -------
    Check
        Level ``"reference"``, with ``z`` (the largest standardised gap) and ``critical``.

    Examples
    --------
    >>> estimator_near_posterior_mean([0.31, 0.69], [0.01, 0.01], [0.3, 0.7], [1e-3, 1e-3]).passed
    True
    >>> estimator_near_posterior_mean([0.4, 0.6], [0.01, 0.01], [0.3, 0.7], [1e-3, 1e-3]).passed
    False
    """
    from scipy import stats

    estimate, posterior_mean = np.asarray(estimate, float), np.asarray(posterior_mean, float)
    scale = np.sqrt(np.asarray(estimator_sd, float) ** 2 + np.asarray(mcse, float) ** 2)
    z = float(np.max(np.abs(estimate - posterior_mean) / scale))
    critical = float(stats.norm.isf(alpha / (2 * estimate.size)))
    return Check(
        "reference",
        name,
        z <= critical,
        f"max |r~ - E r| / sqrt(Var r~ + MCSE^2) = {z:.2f} over {estimate.size} components "
        f"(need <= {critical:.2f}: family-wise false-alarm rate {alpha:g})",
        {"z": z, "critical": critical},
    )
