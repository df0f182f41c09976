"""Closed-form (marginal) likelihoods of the conjugate Dirichlet-multinomial components.

Every family of the zoo draws its categorical observations from multinomials with symmetric Dirichlet
priors, so the same few closed forms serve all of them: the Dirichlet log density (the priors of the
point estimators), the Dirichlet-multinomial marginal (the collapsed models that the Gibbs samplers
target and that the tiny problems enumerate) and the multinomial coefficient (the factor that turns a
token-sequence likelihood into the multinomial log-pmf that PyMC reports).
"""

from __future__ import annotations

import numpy as np
from scipy.special import gammaln

__all__ = ["dirichlet_logpdf", "dirichlet_multinomial_log", "log_multinomial_coefficient"]


def dirichlet_logpdf(x, concentration) -> float:
    """Summed log density of the rows of ``x`` under a symmetric ``Dirichlet(concentration)``.

    ``sum_r [log Gamma(K c) - K log Gamma(c) + (c - 1) sum_k log x[r, k]]`` with ``K = x.shape[-1]``,
    normalising constants included. With ``c = 1`` (the uniform density) a zero entry of ``x``
    contributes nothing rather than ``0 * log 0``.

    Parameters
    ----------
    x : numpy.ndarray of shape (R, K)
        Points of the simplex, one per row.
    concentration : float
        The symmetric concentration ``c``.

    Returns
    -------
    float

    Examples
    --------
    >>> round(dirichlet_logpdf(np.array([[0.5, 0.5]]), 2.0), 6)  # Dir(2, 2) at (1/2, 1/2): 6/4
    0.405465
    >>> dirichlet_logpdf(np.array([[1.0, 0.0]]), 1.0)  # uniform on the segment
    0.0
    """
    k = x.shape[-1]
    norm = gammaln(k * concentration) - k * gammaln(concentration)
    with np.errstate(divide="ignore"):
        body = (concentration - 1.0) * np.log(x) if concentration != 1.0 else 0.0 * x
    return float(np.sum(body) + x.shape[0] * norm)


def dirichlet_multinomial_log(counts, concentration):
    """Log Dirichlet-multinomial marginal in sequence form, summed over the rows of ``counts``.

    For each row ``n`` (last axis, ``K`` categories, ``N = sum_k n_k``) the probability of one
    labelled sequence with those counts, the multinomial parameter integrated out of a symmetric
    ``Dirichlet(c)`` prior (no multinomial coefficient):

    .. math::

        \\frac{\\Gamma(Kc)}{\\Gamma(N + Kc)} \\prod_k \\frac{\\Gamma(n_k + c)}{\\Gamma(c)};

    the logarithms are summed over the last-but-one axis, so leading axes (e.g. many states at
    once) are kept.

    Parameters
    ----------
    counts : numpy.ndarray of shape (..., R, K)
    concentration : float

    Returns
    -------
    numpy.ndarray of shape (...) (a scalar for 2-D ``counts``)

    Examples
    --------
    >>> # two tokens of category 0 under Dir(1, 1): 1/2 * 2/3
    >>> bool(np.isclose(dirichlet_multinomial_log(np.array([[2.0, 0.0]]), 1.0), np.log(1 / 3)))
    True
    >>> dirichlet_multinomial_log(np.zeros((3, 2, 4)), 0.5).shape  # three states
    (3,)
    """
    k = counts.shape[-1]
    totals = counts.sum(axis=-1)
    per_row = (
        gammaln(k * concentration)
        - gammaln(totals + k * concentration)
        + np.sum(gammaln(counts + concentration) - gammaln(concentration), axis=-1)
    )
    return per_row.sum(axis=-1)


def log_multinomial_coefficient(data) -> np.ndarray:
    """``log(n_i! / prod_j n_ij!)`` per row of co-occurrence counts.

    Added to a family's token-sequence log-likelihood per row it gives the multinomial log-pmf of
    the row's counts given its total (what PyMC's ``counts`` variable reports). Rows without
    observations get 0.

    Parameters
    ----------
    data : CoOccurrence

    Returns
    -------
    numpy.ndarray of shape (N,)

    Examples
    --------
    >>> from latentzoo.data import CoOccurrence
    >>> log_multinomial_coefficient(CoOccurrence([[1, 1], [2, 0]]))
    array([0.69314718, 0.        ])
    """
    rows, _, counts = data.cells()
    per_cell = np.bincount(rows, weights=gammaln(counts + 1.0), minlength=data.n_rows)
    return gammaln(data.row_totals + 1.0) - per_cell
