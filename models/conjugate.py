"""Closed-form (marginal) likelihoods of conjugate exponential-family components.

Every family of the zoo draws its categorical observations from multinomials with symmetric Dirichlet
priors, so the same few closed forms serve all of them: the Dirichlet log density (the priors of the
point estimators), the Dirichlet-multinomial marginal (the collapsed models that the Gibbs samplers
target and that the tiny problems enumerate) and the multinomial coefficient (the factor that turns a
token-sequence likelihood into the multinomial log-pmf that PyMC reports).

The feature-vector families (finite and Dirichlet process mixtures, Bayesian hierarchical
clustering, Bayesian Sets) score whole clusters of items ``x_i in R^D`` through four conjugate
*components*, frozen dataclasses of prior hyperparameters, each with its row of sufficient
statistics per cluster (the same layout in the numpy methods and in the numba kernels):

- :class:`BetaBernoulli` (``kind_code`` 0): ``[n, m_1..m_D]``, ``m = sum_i x_i``, ``S = D + 1``;
- :class:`DirichletMultinomial` (1): ``[n, m_1..m_D]`` (summed counts), ``S = D + 1``;
- :class:`NormalGamma` (2): ``[n, xbar_1..xbar_D, M2_1..M2_D]``, ``S = 2 D + 1``;
- :class:`NormalInverseWishart` (3): ``[n, mu_n (D), L_n (D*D, row-major)]``, ``S = 1 + D + D^2``.

``n`` is the number of items of the cluster, ``M2_d = sum_i (x_id - xbar_d)^2`` (Welford form,
stable under adding and removing items). For the Normal-inverse-Wishart the row holds the posterior
mean ``mu_n`` and the lower Cholesky factor ``L_n`` of the posterior scale matrix
``Psi_n = L_n L_n^T``, so an *empty* cluster's row is the prior's ``[0, mu0, chol(psi0)]``, not
zeros; for the other three an empty row is all zeros. Every component has the same methods
(``stats``, ``log_marginal``, ``log_predictive``, ``sample_prior``, ``sample_posterior``,
``log_likelihood``, ``simulate``, ...), vectorised over many clusters at once, and four module-level
numba kernels (:func:`stats_size`, :func:`stats_update`, :func:`log_predictive_one`,
:func:`log_marginal_one`) act on one row in place, dispatching on ``kind_code`` with the float64
vector ``comp.hyper(D)``:

- kind 0: ``hyper = [a (D), b (D)]``;
- kind 1: ``hyper = [eta (D)]``;
- kind 2: ``hyper = [mu0 (D), kappa0 (D), a0 (D), b0 (D)]``;
- kind 3: ``hyper = [kappa0, nu0, log|psi0|, mu0 (D), chol(psi0) (D*D, row-major)]``.

Adding or removing one item costs O(D) (O(D^2) for the Normal-inverse-Wishart: a rank-one Cholesky
update or downdate, never a refactorisation); removing the last item of a cluster resets its row to
the empty row exactly. The closed forms are those of the source thesis (Heller 2007, section 2.1.1:
the Beta-Bernoulli marginal after (2.9), also (4.9); the Dirichlet-multinomial (2.12); the
Normal-inverse-Wishart marginal after (2.14)) and of Murphy (2007), *Conjugate Bayesian analysis of
the Gaussian distribution* (Normal-Gamma marginal eq. (95) and Student-t predictive eq. (100);
Normal-inverse-Wishart posterior eqs. (250)-(254), predictive (258) and marginal (266)).

For the PyMC references every component declares its parameters in the current model
(``pymc_parameters(n_clusters, n_features)``, dims ``(cluster, feature)`` plus its
``pymc_coords``) and the ``(N, K)`` tensor of ``log f(x_i | params_k)`` under them
(``pymc_log_likelihood(variables, x)``):

>>> import pymc as pm
>>> for name, component in COMPONENTS.items():
...     comp = component()
...     with pm.Model(coords={"cluster": [0, 1], "feature": [0, 1], **comp.pymc_coords([0, 1])}):
...         variables = comp.pymc_parameters(2, 2)
...         loglik = comp.pymc_log_likelihood(variables, np.ones((3, 2)))
...     print(name, sorted(variables), loglik.ndim)
beta_bernoulli ['theta'] 2
dirichlet_multinomial ['theta'] 2
normal_gamma ['mu', 'tau'] 2
normal_inverse_wishart ['bartlett_c', 'bartlett_z', 'cov', 'mu', 'mu_std', 'precision_chol'] 2
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import ClassVar

import numba as nb
import numpy as np
import scipy.sparse as sp
from scipy.linalg import solve_triangular
from scipy.special import betaln, gammaln, xlogy

from latentzoo.data.checks import as_rng, check_entries
from latentzoo.models._checks import check_integer, check_positive

__all__ = [
    "BETA_BERNOULLI",
    "DIRICHLET_MULTINOMIAL",
    "NORMAL_GAMMA",
    "NORMAL_INVERSE_WISHART",
    "COMPONENTS",
    "BetaBernoulli",
    "DirichletMultinomial",
    "NormalGamma",
    "NormalInverseWishart",
    "component_named",
    "dirichlet_logpdf",
    "dirichlet_multinomial_log",
    "log_marginal_one",
    "log_multinomial_coefficient",
    "log_predictive_one",
    "row_logsumexp",
    "stats_size",
    "stats_update",
]

#: ``kind_code`` of :class:`BetaBernoulli`.
BETA_BERNOULLI = 0
#: ``kind_code`` of :class:`DirichletMultinomial`.
DIRICHLET_MULTINOMIAL = 1
#: ``kind_code`` of :class:`NormalGamma`.
NORMAL_GAMMA = 2
#: ``kind_code`` of :class:`NormalInverseWishart`.
NORMAL_INVERSE_WISHART = 3

_LOG_PI = math.log(math.pi)
_LOG_2PI = math.log(2.0 * math.pi)
# Items per block when a method builds an (items, clusters, features) array: about 16 MB of float64.
_BLOCK = 2**21

#: Largest ``|x - mu0|`` a Normal component scores: squared and summed over items, larger
#: deviations come near float64's largest number (1.8e308) and the closed forms turn NaN.
DEVIATION_LIMIT = 1e100
#: Largest squared distance of an item from ``mu0`` in units of the prior scale,
#: ``(x - mu0)^T psi0^-1 (x - mu0)`` (``(x - mu0)^2 / (2 b0)`` per Normal-Gamma feature). Beyond
#: it float64 (16 digits) cannot resolve ``psi0`` (``b0``) beside the data's scatter: the
#: downdates of the Gibbs samplers and the Cholesky factors of small clusters lose it, so the log
#: marginals come out wrong or the scale matrix stops being positive definite. A cluster's log
#: marginal after 100 additions and removals of items spread as far as they lie drifts by up to
#: 4 nats at 1e16 and 1e-3 at this limit (6e-6 at 1e10); items close together drift far less
#: (``tests/models/test_conjugate.py``: 2000 moves at 2e10 stay within 1e-7).
SPREAD_LIMIT = 1e12


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
    """``log(n_i! / prod_j n_ij!)`` per row of the co-occurrence counts ``data`` (a
    :class:`~latentzoo.data.CoOccurrence` of N rows), an array of shape (N,).

    Added to a family's token-sequence log-likelihood per row it gives the multinomial log-pmf of
    the row's counts given its total (what PyMC's ``counts`` variable reports). Rows without
    observations get 0.

    Examples
    --------
    >>> from latentzoo.data import CoOccurrence
    >>> log_multinomial_coefficient(CoOccurrence([[1, 1], [2, 0]]))
    array([0.69314718, 0.        ])
    """
    rows, _, counts = data.cells()
    per_cell = np.bincount(rows, weights=gammaln(counts + 1.0), minlength=data.n_rows)
    return gammaln(data.row_totals + 1.0) - per_cell


# ------------------------------------------------------------------------------ numba kernels
def row_logsumexp(a: np.ndarray) -> np.ndarray:
    """``log sum_k exp(a[i, k])`` per row, stable, with ``-inf`` for rows that are all ``-inf``.

    Examples
    --------
    >>> a = np.array([[0.0, 0.0], [-np.inf, -np.inf], [-1000.0, -1000.0]])
    >>> row_logsumexp(a).round(4).tolist()
    [0.6931, -inf, -999.3069]
    """
    top = np.max(a, axis=1)
    safe = np.where(np.isfinite(top), top, 0.0)
    with np.errstate(divide="ignore"):
        return np.log(np.exp(a - safe[:, None]).sum(axis=1)) + safe


@nb.njit(cache=True)
def stats_size(kind_code, D):
    """Length ``S`` of one cluster's row of sufficient statistics for ``D`` features.

    Examples
    --------
    >>> stats_size(BETA_BERNOULLI, 4), stats_size(NORMAL_GAMMA, 4), stats_size(3, 4)
    (5, 9, 21)
    """
    if kind_code == 0 or kind_code == 1:
        return D + 1
    if kind_code == 2:
        return 2 * D + 1
    if kind_code == 3:
        return 1 + D + D * D
    raise ValueError("kind_code must be 0, 1, 2 or 3")


@nb.njit(cache=True)
def _row_dim(kind_code, size):
    """The number of features ``D`` of a stats row of length ``size`` (inverse of stats_size)."""
    if kind_code == 0 or kind_code == 1:
        return size - 1
    if kind_code == 2:
        return (size - 1) // 2
    if size < 3:
        return 0
    return int((math.sqrt(4.0 * size - 3.0) - 1.0) / 2.0 + 0.5)


@nb.njit(cache=True)
def _reset_row(kind_code, hyper, row, D):
    """Set ``row`` to the empty cluster's row: zeros, or ``[0, mu0, chol(psi0)]`` for kind 3."""
    if kind_code == 3:
        row[0] = 0.0
        for j in range(D + D * D):
            row[1 + j] = hyper[3 + j]
    else:
        for j in range(row.shape[0]):
            row[j] = 0.0


@nb.njit(cache=True)
def _beta_feature(hyper, stats_row, D, d):
    """``(a, b, m)`` of feature ``d`` of a Beta-Bernoulli row: its prior and its count of ones."""
    return hyper[d], hyper[D + d], stats_row[1 + d]


@nb.njit(cache=True)
def _normal_gamma_feature(hyper, stats_row, D, d, n):
    """``(mu0, kappa0, a0, b0, kappa_n, a_n, b_n)`` of feature ``d`` of a Normal-Gamma row of
    ``n`` items: the prior and the posterior's precision terms, shared by the marginal and the
    predictive so that both read the row's layout the same way."""
    mu0 = hyper[d]
    k0 = hyper[D + d]
    a0 = hyper[2 * D + d]
    b0 = hyper[3 * D + d]
    kn = k0 + n
    an = a0 + 0.5 * n
    dev = stats_row[1 + d] - mu0
    bn = b0 + 0.5 * stats_row[1 + D + d] + 0.5 * k0 * n * dev * dev / kn
    return mu0, k0, a0, b0, kn, an, bn


@nb.njit(cache=True)
def _chol_update(row, off, D, v):
    """``L <- chol(L L^T + v v^T)`` in place (Givens rotations, O(D^2)); ``v`` is overwritten.

    ``L[i, j]`` is ``row[off + i * D + j]``.
    """
    for k in range(D):
        kk = off + k * D + k
        lkk = row[kk]
        r = math.hypot(lkk, v[k])
        c = r / lkk
        s = v[k] / lkk
        row[kk] = r
        for i in range(k + 1, D):
            ik = off + i * D + k
            row[ik] = (row[ik] + s * v[i]) / c
            v[i] = c * v[i] - s * row[ik]


@nb.njit(cache=True)
def _chol_downdate(row, off, D, v):
    """``L <- chol(L L^T - v v^T)`` in place, O(D^2), by LINPACK's ``dchdd`` algorithm.

    Solves ``L a = v``; the downdated matrix is positive definite iff ``|a| < 1``, which is checked
    (Stewart 1979, *The effects of rounding error on an algorithm for downdating a Cholesky
    factorization*: the orthogonal-rotation form used here is the stable one). Columns are
    re-signed so the diagonal stays positive.
    """
    a = np.empty(D)
    norm2 = 0.0
    for j in range(D):
        s = v[j]
        for k in range(j):
            s -= row[off + j * D + k] * a[k]
        a[j] = s / row[off + j * D + j]
        norm2 += a[j] * a[j]
    if not norm2 < 1.0:
        raise ValueError(
            "stats_update: removing this item leaves a scale matrix that is not positive definite:"
            " either the item was not in the cluster, or the data's scatter dwarfs psi0 beyond what"
            " float64 resolves (standardise the features or set psi0 to the data's scale)"
        )
    alpha = math.sqrt(1.0 - norm2)
    c = np.empty(D)
    for ii in range(D):
        i = D - 1 - ii
        scale = alpha + abs(a[i])
        aa = alpha / scale
        bb = a[i] / scale
        nrm = math.sqrt(aa * aa + bb * bb)
        c[i] = aa / nrm
        a[i] = bb / nrm
        alpha = scale * nrm
    for j in range(D):
        xx = 0.0
        for ii in range(j + 1):
            i = j - ii
            ji = off + j * D + i
            t = c[i] * xx + a[i] * row[ji]
            row[ji] = c[i] * row[ji] - a[i] * xx
            xx = t
    for j in range(D):
        if row[off + j * D + j] < 0.0:
            for i in range(j, D):
                row[off + i * D + j] = -row[off + i * D + j]


@nb.njit(cache=True)
def stats_update(kind_code, hyper, stats_row, x_row, sign):
    """Add (``sign`` > 0) or remove (``sign`` < 0) the item ``x_row`` to/from one cluster, in place.

    O(D) for kinds 0-2 (counts, or Welford's running mean and sum of squared deviations); O(D^2) for
    the Normal-inverse-Wishart (kind 3): with ``kappa_n = kappa0 + n``, adding ``x`` is the rank-one
    update ``Psi_{n+1} = Psi_n + kappa_n / (kappa_n + 1) (x - mu_n)(x - mu_n)^T`` of the Cholesky
    factor and ``mu_{n+1} = mu_n + (x - mu_n) / (kappa_n + 1)`` (the sequential form of Murphy 2007,
    eqs. (250)-(254)); removing is the matching downdate. Removing the last item resets the row to the
    empty row exactly (zeros; ``[0, mu0, chol(psi0)]`` for kind 3).

    Parameters
    ----------
    kind_code : int
    hyper : numpy.ndarray of float64
        ``comp.hyper(D)``.
    stats_row : numpy.ndarray of float64, shape (S,)
        One row of ``comp.stats(...)``, updated in place.
    x_row : numpy.ndarray of float64, shape (D,)
    sign : int
        +1 to add, -1 to remove.

    Examples
    --------
    >>> comp = NormalInverseWishart()
    >>> x = np.array([[0.5, -1.0], [2.0, 0.25]])
    >>> row = comp.stats(x[:1], np.array([0]), 1)[0]
    >>> stats_update(comp.kind_code, comp.hyper(2), row, x[1], 1)
    >>> bool(np.allclose(row, comp.stats(x, np.array([0, 0]), 1)[0]))
    True
    >>> stats_update(comp.kind_code, comp.hyper(2), row, x[1], -1)
    >>> stats_update(comp.kind_code, comp.hyper(2), row, x[0], -1)
    >>> bool(np.array_equal(row, comp.stats(x[:0], np.array([], dtype=int), 1)[0]))  # the prior's row
    True
    """
    n = stats_row[0]
    D = _row_dim(kind_code, stats_row.shape[0])
    if sign < 0:
        if n < 0.5:
            raise ValueError("stats_update: cannot remove an item from an empty cluster")
        if n < 1.5:
            _reset_row(kind_code, hyper, stats_row, D)
            return
    if kind_code == 0 or kind_code == 1:
        s = 1.0 if sign > 0 else -1.0
        stats_row[0] = n + s
        for d in range(D):
            stats_row[1 + d] += s * x_row[d]
    elif kind_code == 2:
        if sign > 0:
            n1 = n + 1.0
            for d in range(D):
                delta = x_row[d] - stats_row[1 + d]
                stats_row[1 + d] += delta / n1
                stats_row[1 + D + d] += delta * (x_row[d] - stats_row[1 + d])
        else:
            n1 = n - 1.0
            for d in range(D):
                mean = stats_row[1 + d]
                old = mean - (x_row[d] - mean) / n1
                m2 = stats_row[1 + D + d] - (x_row[d] - old) * (x_row[d] - mean)
                stats_row[1 + D + d] = m2 if m2 > 0.0 else 0.0
                stats_row[1 + d] = old
        stats_row[0] = n1
    elif kind_code == 3:
        kn = hyper[0] + n
        v = np.empty(D)
        if sign > 0:
            scale = math.sqrt(kn / (kn + 1.0))
            for d in range(D):
                v[d] = scale * (x_row[d] - stats_row[1 + d])
            _chol_update(stats_row, 1 + D, D, v)
            for d in range(D):
                stats_row[1 + d] += (x_row[d] - stats_row[1 + d]) / (kn + 1.0)
            stats_row[0] = n + 1.0
        else:
            km = kn - 1.0
            scale = math.sqrt(kn / km)
            for d in range(D):
                v[d] = scale * (x_row[d] - stats_row[1 + d])
            _chol_downdate(stats_row, 1 + D, D, v)
            for d in range(D):
                stats_row[1 + d] -= (x_row[d] - stats_row[1 + d]) / km
            stats_row[0] = n - 1.0
    else:
        raise ValueError("kind_code must be 0, 1, 2 or 3")


@nb.njit(cache=True)
def log_predictive_one(kind_code, hyper, stats_row, x_row):
    """``log p(x | D_k)``, the posterior predictive of one item given one cluster's row.

    O(D) for kinds 0-2, O(D^2) for kind 3 (one triangular solve with the stored Cholesky factor).
    Same closed forms as the components' ``log_predictive``.

    Examples
    --------
    >>> comp = BetaBernoulli()
    >>> row = comp.stats(np.array([[1.0, 0.0]]), np.array([0]), 1)[0]
    >>> x = np.array([1.0, 1.0])
    >>> p = log_predictive_one(comp.kind_code, comp.hyper(2), row, x)
    >>> bool(np.isclose(p, np.log(2 / 3 * 1 / 3)))  # Laplace's rule of succession per feature
    True
    """
    D = _row_dim(kind_code, stats_row.shape[0])
    n = stats_row[0]
    out = 0.0
    if kind_code == 0:
        for d in range(D):
            a, b, m = _beta_feature(hyper, stats_row, D, d)
            x = x_row[d]
            if x == 1.0:
                out += math.log(a + m)
            elif x == 0.0:
                out += math.log(b + n - m)
            else:
                out += x * math.log(a + m) + (1.0 - x) * math.log(b + n - m)
            out -= math.log(a + b + n)
        return out
    if kind_code == 1:
        total_eta = 0.0
        total_m = 0.0
        total_x = 0.0
        for d in range(D):
            c = hyper[d] + stats_row[1 + d]
            total_eta += hyper[d]
            total_m += stats_row[1 + d]
            x = x_row[d]
            if x != 0.0:
                out += math.lgamma(c + x) - math.lgamma(c)
                total_x += x
        am = total_eta + total_m
        return out + math.lgamma(am) - math.lgamma(am + total_x)
    if kind_code == 2:
        for d in range(D):
            mu0, k0, _, _, kn, an, bn = _normal_gamma_feature(hyper, stats_row, D, d, n)
            mun = (k0 * mu0 + n * stats_row[1 + d]) / kn
            nu = 2.0 * an
            s2 = bn * (kn + 1.0) / (an * kn)
            z = x_row[d] - mun
            out += (
                math.lgamma(0.5 * (nu + 1.0))
                - math.lgamma(0.5 * nu)
                - 0.5 * math.log(nu * math.pi * s2)
                - 0.5 * (nu + 1.0) * math.log1p(z * z / (nu * s2))
            )
        return out
    if kind_code == 3:
        kn = hyper[0] + n
        nu = hyper[1] + n - D + 1.0
        off = 1 + D
        w = np.empty(D)
        q = 0.0
        logdiag = 0.0
        for j in range(D):
            s = x_row[j] - stats_row[1 + j]
            for k in range(j):
                s -= stats_row[off + j * D + k] * w[k]
            ljj = stats_row[off + j * D + j]
            w[j] = s / ljj
            q += w[j] * w[j]
            logdiag += math.log(abs(ljj))
        return (
            math.lgamma(0.5 * (nu + D))
            - math.lgamma(0.5 * nu)
            - 0.5 * D * math.log(math.pi * (kn + 1.0) / kn)
            - logdiag
            - 0.5 * (nu + D) * math.log1p(q * kn / (kn + 1.0))
        )
    raise ValueError("kind_code must be 0, 1, 2 or 3")


@nb.njit(cache=True)
def log_marginal_one(kind_code, hyper, stats_row):
    """``log p(D_k)``, the closed-form log marginal likelihood of one cluster's row (0 if empty).

    Examples
    --------
    >>> comp = DirichletMultinomial(eta=1.0)
    >>> row = comp.stats(np.array([[2.0, 0.0]]), np.array([0]), 1)[0]
    >>> bool(np.isclose(log_marginal_one(comp.kind_code, comp.hyper(2), row), np.log(1 / 3)))
    True
    """
    D = _row_dim(kind_code, stats_row.shape[0])
    n = stats_row[0]
    if n == 0.0:
        return 0.0
    out = 0.0
    if kind_code == 0:
        for d in range(D):
            a, b, m = _beta_feature(hyper, stats_row, D, d)
            out += (
                math.lgamma(a + m)
                + math.lgamma(b + n - m)
                - math.lgamma(a + b + n)
                - math.lgamma(a)
                - math.lgamma(b)
                + math.lgamma(a + b)
            )
        return out
    if kind_code == 1:
        total_eta = 0.0
        total_m = 0.0
        for d in range(D):
            eta = hyper[d]
            m = stats_row[1 + d]
            total_eta += eta
            total_m += m
            out += math.lgamma(eta + m) - math.lgamma(eta)
        return out + math.lgamma(total_eta) - math.lgamma(total_eta + total_m)
    if kind_code == 2:
        for d in range(D):
            _, k0, a0, b0, kn, an, bn = _normal_gamma_feature(hyper, stats_row, D, d, n)
            out += (
                math.lgamma(an)
                - math.lgamma(a0)
                + a0 * math.log(b0)
                - an * math.log(bn)
                + 0.5 * (math.log(k0) - math.log(kn))
            )
        return out - 0.5 * n * D * _LOG_2PI
    if kind_code == 3:
        k0 = hyper[0]
        nu0 = hyper[1]
        kn = k0 + n
        nun = nu0 + n
        off = 1 + D
        logdet = 0.0
        for j in range(D):
            logdet += 2.0 * math.log(abs(stats_row[off + j * D + j]))
            out += math.lgamma(0.5 * (nun - j)) - math.lgamma(0.5 * (nu0 - j))
        return (
            out
            - 0.5 * n * D * _LOG_PI
            + 0.5 * nu0 * hyper[2]
            - 0.5 * nun * logdet
            + 0.5 * D * (math.log(k0) - math.log(kn))
        )
    raise ValueError("kind_code must be 0, 1, 2 or 3")


# ------------------------------------------------------------------------ shared numpy helpers
def _as_float(name, value, what):
    """``value`` as a float64 array, or a ValueError naming ``name``."""
    if value is None or isinstance(value, str | bytes):
        raise ValueError(f"{name} must be {what}, got {value!r}")
    try:
        return np.asarray(value, dtype=np.float64)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be {what}, got {value!r}") from None


def _positive_hyper(name, value):
    """A positive scalar as a float, or a non-empty 1-D array of them as a tuple of floats."""
    arr = _as_float(name, value, "a positive finite number")
    if arr.ndim == 0:
        check_positive(name, float(arr))
        return float(arr)
    if arr.ndim == 1 and arr.size > 0:
        for j, v in enumerate(arr.tolist()):
            check_positive(f"{name}[{j}]", v)
        return tuple(arr.tolist())
    raise ValueError(
        f"{name} must be a positive finite number or a 1-D array of them, got shape {arr.shape}"
    )


def _finite_hyper(name, value):
    """A finite scalar as a float, or a non-empty 1-D array of them as a tuple of floats."""
    arr = _as_float(name, value, "a finite number")
    if arr.ndim == 0:
        if not np.isfinite(arr):
            raise ValueError(f"{name} must be a finite number, got {float(arr)!r}")
        return float(arr)
    if arr.ndim == 1 and arr.size > 0:
        for j, v in enumerate(arr.tolist()):
            if not np.isfinite(v):
                raise ValueError(f"{name}[{j}] must be a finite number, got {v!r}")
        return tuple(arr.tolist())
    raise ValueError(
        f"{name} must be a finite number or a 1-D array of them, got shape {arr.shape}"
    )


def _vector(name, value, D):
    """A float or tuple hyperparameter broadcast to a float64 vector of ``D`` features."""
    if isinstance(value, tuple):
        if len(value) != D:
            raise ValueError(f"{name} has {len(value)} entries but the data have {D} features")
        return np.array(value, dtype=np.float64)
    return np.full(D, float(value))


def _check_dim(D):
    if isinstance(D, bool) or not isinstance(D, int | np.integer) or D < 1:
        raise ValueError(f"D must be an integer >= 1, got {D!r}")
    return int(D)


def _as_matrix(X, name="X"):
    """``X`` (array-like or scipy sparse) as a 2-D float64 array."""
    if sp.issparse(X):
        X = X.toarray()
    X = _as_float(name, X, "a 2-D numeric array")
    if X.ndim != 2:
        raise ValueError(f"{name} must be a 2-D array (items x features), got shape {X.shape}")
    return X


def _first(mask):
    """Index tuple of the first True entry of ``mask`` (row-major)."""
    return np.unravel_index(int(np.argmax(mask)), mask.shape)


def _reject_first(X, bad, requirement: str) -> None:
    """``ValueError`` naming the first entry of ``X`` where ``bad`` holds: it is not
    ``requirement``."""
    if bad.any():
        i, j = _first(bad)
        raise ValueError(f"X[{i}, {j}] = {X[i, j]} is not {requirement}")


def _may_exceed_limits(X, mu0, prior_scale: float) -> bool:
    """Whether an item of ``X`` may lie beyond :data:`DEVIATION_LIMIT` or :data:`SPREAD_LIMIT`
    (squared distance over ``prior_scale``, the prior's smallest variance scale) from ``mu0``.

    A bound from the extremes of ``X`` and ``mu0``, two reductions without temporaries, so
    ordinary data pay almost nothing; the exact checks run only when it fails. NaN passes (the
    data checks name it).
    """
    with np.errstate(over="ignore", invalid="ignore"):
        top = max(X.max(initial=0.0), -X.min(initial=0.0)) + float(np.abs(mu0).max())
        return bool(top > DEVIATION_LIMIT or top * top / prior_scale > SPREAD_LIMIT)


def _check_deviations(X, mu0, component: str) -> np.ndarray:
    """``X - mu0``, or ``ValueError`` naming the first entry farther than :data:`DEVIATION_LIMIT`
    from ``mu0`` (its square would come near float64's largest number)."""
    with np.errstate(over="ignore", invalid="ignore"):
        dev = X - mu0
        far = np.abs(dev) > DEVIATION_LIMIT
    if far.any():
        i, j = _first(far)
        raise ValueError(
            f"X[{i}, {j}] = {float(X[i, j])!r} is too far from mu0 = {float(mu0[j])!r} for the "
            f"{component} component: |x - mu0| must be at most {DEVIATION_LIMIT:g}, beyond which "
            "sums of squared deviations overflow float64; rescale the features (e.g. standardise "
            "them)"
        )
    return dev


def _spread_error(where: str, component: str, measure: str, value: float, prior: str) -> ValueError:
    """The message of an item beyond :data:`SPREAD_LIMIT` prior scales from ``mu0``."""
    return ValueError(
        f"{where} is too far from mu0 for the prior scale of the {component} component: "
        f"{measure} = {value:.3g} exceeds {SPREAD_LIMIT:g}, beyond which float64 cannot resolve "
        f"{prior} beside the data's scatter (the marginal likelihoods come out wrong); standardise "
        f"the features or set {prior} to the data's scale"
    )


def _check_labels(labels, n_items, n_clusters):
    check_integer("n_clusters", n_clusters)
    labels = np.asarray(labels)
    if labels.shape != (n_items,):
        raise ValueError(
            f"labels must have one entry per item, shape ({n_items},), got shape {labels.shape}"
        )
    if n_items == 0:
        return labels.astype(np.intp)
    if not np.issubdtype(labels.dtype, np.integer):
        raise ValueError(f"labels must be integers, got dtype {labels.dtype}")
    bad = (labels < 0) | (labels >= n_clusters)
    if bad.any():
        i = int(np.argmax(bad))
        raise ValueError(f"labels[{i}] = {labels[i]} is outside 0..{n_clusters - 1}")
    return labels.astype(np.intp)


def _sim_labels(labels, n_clusters):
    labels = np.asarray(labels)
    if labels.ndim != 1:
        raise ValueError(f"labels must be a 1-D array, got shape {labels.shape}")
    return _check_labels(labels, labels.shape[0], n_clusters)


def _one_hot(labels, n_clusters):
    """The (K, N) sparse indicator matrix of ``labels``: ``Z @ X`` sums the items of each cluster."""
    n = labels.shape[0]
    return sp.csr_matrix((np.ones(n), (labels, np.arange(n))), shape=(n_clusters, n))


def _blocks(n_items, per_item):
    """Slices of items such that a block times ``per_item`` stays near ``_BLOCK`` numbers."""
    step = max(1, _BLOCK // max(1, per_item))
    return [slice(s, min(s + step, n_items)) for s in range(0, n_items, step)]


def _rng(random_state):
    return as_rng(random_state)


def _param(params, name, ndim):
    if name not in params:
        raise ValueError(f"params lacks {name!r} (has {sorted(params)})")
    value = np.asarray(params[name], dtype=np.float64)
    if value.ndim != ndim:
        raise ValueError(f"params[{name!r}] must have {ndim} dimensions, got shape {value.shape}")
    return value


def _log_dirichlet_rows(rng, concentration):
    """Dirichlet draws, one per row of ``concentration`` (K, D), computed in log space.

    ``G ~ Gamma(c)`` is drawn as ``Gamma(c + 1) U^(1/c)`` and normalised by a log-sum-exp, so tiny
    concentrations never underflow a whole row to zero.
    """
    logg = np.log(rng.gamma(concentration + 1.0)) + np.log1p(-rng.random(concentration.shape)) / (
        concentration
    )
    logg -= logg.max(axis=-1, keepdims=True)
    theta = np.exp(logg)
    return theta / theta.sum(axis=-1, keepdims=True)


def _categorical_loglik(X, theta, with_complement):
    """``sum_d x_d log theta_d (+ (1 - x_d) log(1 - theta_d))`` as matrix products, (N, K).

    Entries of ``theta`` equal to 0 (or 1) give ``-inf`` exactly where the data put mass on them and
    contribute nothing elsewhere (no ``0 * log 0``).
    """
    with np.errstate(divide="ignore"):
        log_t = np.log(theta)
    # The masks are cast to float so the products take the BLAS path (boolean ones do not), and
    # skipped altogether when no parameter sits on the boundary (the usual case).
    zero = theta <= 0.0
    out = X @ np.where(zero, 0.0, log_t).T
    impossible = X @ zero.T.astype(float) if zero.any() else None
    if with_complement:
        with np.errstate(divide="ignore"):
            log_c = np.log1p(-theta)
        one = theta >= 1.0
        out += (1.0 - X) @ np.where(one, 0.0, log_c).T
        if one.any():
            beyond = (1.0 - X) @ one.T.astype(float)
            impossible = beyond if impossible is None else impossible + beyond
    if impossible is not None:
        out[impossible > 0] = -np.inf
    return out


NIW_EXTRA_DIM = "feature2"
"""Name of the second feature axis of a covariance matrix (xarray forbids a repeated dimension)."""


def _own_features(comp, n_clusters: int, n_features: int) -> np.ndarray:
    """``(K, D)`` mask of each cluster's own features ``d % K == k`` (separated simulations)."""
    if n_features < n_clusters:
        raise ValueError(
            f"separated clusters need n_features={n_features} >= n_clusters={n_clusters} for "
            f"{type(comp).__name__}"
        )
    return (np.arange(n_features)[None, :] % n_clusters) == np.arange(n_clusters)[:, None]


def _separated_means(n_clusters: int, n_features: int) -> np.ndarray:
    """``(K, D)`` means ``5 (k - (K - 1) / 2)``, the same on every feature."""
    centres = 5.0 * (np.arange(n_clusters) - (n_clusters - 1) / 2.0)
    return np.repeat(centres[:, None], n_features, axis=1)


class _Component:
    """Methods shared by the four conjugate components (not part of the public API)."""

    kind_code: ClassVar[int]
    data_kinds: ClassVar[tuple[str, ...]]
    param_names: ClassVar[tuple[str, ...]]

    # -- data
    def check_data(self, X) -> np.ndarray:
        """``X`` as a 2-D float64 array, or ``ValueError`` naming the first entry it cannot score."""
        X = _as_matrix(X)
        if X.shape[1] == 0:
            raise ValueError(f"X has no features (shape {X.shape})")
        check_entries(X, "X")  # the data contract's check: names the first NaN or inf
        self._check_values(X)
        self.hyper(X.shape[1])  # hyperparameter arrays must match the number of features
        return X

    def _check_values(self, X):
        pass

    def stats_size(self, D) -> int:
        """Length of one cluster's stats row: ``stats_size(kind_code, D)``."""
        return int(stats_size(self.kind_code, _check_dim(D)))

    def empty_stats(self, n_clusters, D) -> np.ndarray:
        """``(n_clusters, S)`` empty rows: what :meth:`stats` gives a cluster without items."""
        return self.stats(np.zeros((0, _check_dim(D))), np.zeros(0, dtype=np.intp), n_clusters)

    def _stats_dim(self, stats):
        """``stats`` as float64 and its number of features ``D`` (checked against the layout)."""
        stats = np.asarray(stats, dtype=np.float64)
        if stats.ndim < 1:
            raise ValueError("stats must have a last axis of sufficient statistics")
        size = stats.shape[-1]
        D = int(_row_dim(self.kind_code, size))
        if D < 1 or stats_size(self.kind_code, D) != size:
            raise ValueError(f"stats rows of length {size} match no number of features")
        return stats, D

    def _stats_for(self, stats, X):
        """Check that ``stats`` is (K, S) and fits the ``D`` columns of ``X``."""
        stats = np.asarray(stats, dtype=np.float64)
        D = X.shape[1]
        size = stats_size(self.kind_code, D)
        if stats.ndim != 2 or stats.shape[1] != size:
            raise ValueError(
                f"stats must have shape (n_clusters, {size}) for {D} features, got {stats.shape}"
            )
        return stats

    def _counts_sums(self, X, labels, n_clusters):
        X = _as_matrix(X)
        labels = _check_labels(labels, X.shape[0], n_clusters)
        counts = np.bincount(labels, minlength=n_clusters).astype(np.float64)
        return X, labels, counts, np.asarray(_one_hot(labels, n_clusters) @ X)

    # -- the PyMC reference and the prior (what a mixture's declaration asks its component)
    has_pymc_initvals: ClassVar[bool] = True
    """Whether :meth:`pymc_initvals` has a rule for starting PyMC at a partition."""

    takes_prior_from_data: ClassVar[bool] = False
    """Whether the class has ``from_data(X, scale)``, an empirical prior (the CLI's
    ``--prior-scale``)."""

    linear_log_score: ClassVar[bool] = False
    """Whether the Bayesian Sets log score of an item is linear in ``x`` (Heller 2007, eq. (4.12)),
    so one sparse matrix-vector product scores every item."""

    data_description: ClassVar[str] = "real numbers"
    searchable_hyperparameters: ClassVar[tuple[str, ...]] = ()
    """Hyperparameters that an empirical-Bayes search may tune (BHC's ``optimise_hyperparameters``)."""
    """The data the component takes, as error messages name them."""

    kind_advice: ClassVar[str] = ""
    """What to do with data of a kind the component does not take (appended to the message)."""

    def replicate(self, rng, params, labels, X) -> np.ndarray:
        """``(N, D)`` replicate of the data ``X``, item ``i`` drawn from cluster ``labels[i]``
        (:meth:`simulate`); a component whose items have a size of their own keeps each item's.
        """
        return self.simulate(rng, params, labels)

    def check_data_kind(self, kind: str, user: str = "this component") -> None:
        """``ValueError`` unless data of ``kind`` (``"binary"``, ``"counts"``, ``"real"``) fit the
        component, i.e. ``kind`` is one of :attr:`data_kinds`; ``user`` names who asks.

        Examples
        --------
        >>> NormalGamma().check_data_kind("real")
        >>> DirichletMultinomial().check_data_kind("real", "Bayesian Sets")
        Traceback (most recent call last):
        ...
        ValueError: X must be non-negative integer counts for Bayesian Sets with a DirichletMultinomial component, got real data, a kind it does not take
        """
        if kind not in self.data_kinds:
            raise ValueError(
                f"X must be {self.data_description} for {user} with a "
                f"{type(self).__name__} component, got {kind} data, a kind it does not take{self.kind_advice}"
            )

    def pymc_coords(self, feature_names) -> dict:
        """Coordinates the component's PyMC variables need besides ``cluster`` and ``feature``.

        Examples
        --------
        >>> BetaBernoulli().pymc_coords(["f0", "f1"])
        {}
        """
        return {}

    def pymc_dims(self) -> dict[str, list[str]]:
        """Dimensions of the component's variables in the PyMC declaration and ``InferenceData``.

        Examples
        --------
        >>> NormalGamma().pymc_dims()
        {'mu': ['cluster', 'feature'], 'tau': ['cluster', 'feature']}
        """
        return {name: ["cluster", "feature"] for name in self.param_names}

    def pymc_values(self, values) -> dict:
        """``values`` (parameters by name) with the component's free PyMC variables that are not
        parameters added (none here; a Normal-inverse-Wishart adds its Bartlett variables).

        Examples
        --------
        >>> BetaBernoulli().pymc_values({"theta": [[0.5]]})
        {'theta': [[0.5]]}
        """
        return dict(values)


class _CountSumComponent(_Component):
    """A component whose stats row is the item count and the summed features (Beta-Bernoulli,
    Dirichlet-multinomial): ``[n_k, m_k1..m_kD]``."""

    def stats(self, X, labels, n_clusters) -> np.ndarray:
        """``(n_clusters, D + 1)`` rows ``[n_k, sum_{i in k} x_i]``."""
        _, _, counts, sums = self._counts_sums(X, labels, n_clusters)
        return np.column_stack([counts, sums])


# ------------------------------------------------------------------------------ components
@dataclass(frozen=True)
class BetaBernoulli(_CountSumComponent):
    """Independent Bernoulli features with conjugate ``Beta(a_d, b_d)`` priors (thesis (2.8)-(2.9)).

    The cluster marginal (thesis section 2.1.1, after (2.9); chapter 4, (4.9)), with
    ``m_d = sum_i x_id`` over the ``n`` items of the cluster:

    .. math::

        p(\\mathcal{D}) = \\prod_d \\frac{B(a_d + m_d, b_d + n - m_d)}{B(a_d, b_d)},

    and the predictive of a new item (the per-feature ratio behind the Bayesian Sets score (4.11)):
    ``p(x | D) = prod_d p_d^x_d (1 - p_d)^(1 - x_d)`` with ``p_d = (a_d + m_d) / (a_d + b_d + n)``.

    Parameters
    ----------
    a, b : float or array-like of shape (D,)
        Positive Beta hyperparameters (``a`` counts ones, ``b`` zeros); scalars are shared by all
        features.

    Notes
    -----
    Stats row ``[n, m_1..m_D]`` (``S = D + 1``; all zeros for an empty cluster), ``kind_code`` 0,
    ``hyper(D) = [a (D), b (D)]``; parameters ``{"theta": (K, D)}`` (probabilities of a one).

    Examples
    --------
    >>> comp = BetaBernoulli(a=1.0, b=1.0)
    >>> X = np.array([[1.0, 0.0], [1.0, 1.0], [0.0, 0.0]])
    >>> stats = comp.stats(X, np.array([0, 0, 1]), 2)
    >>> stats
    array([[2., 2., 1.],
           [1., 0., 0.]])
    >>> bool(np.isclose(comp.log_marginal(stats)[0], np.log(1 / 3 * 1 / 6)))
    True
    >>> comp.log_predictive(stats, X).shape
    (3, 2)
    >>> BetaBernoulli(a=-1.0)
    Traceback (most recent call last):
    ...
    ValueError: a must be a positive finite number, got -1.0
    """

    a: float | tuple = 1.0
    b: float | tuple = 1.0

    kind_code: ClassVar[int] = BETA_BERNOULLI
    data_kinds: ClassVar[tuple[str, ...]] = ("binary",)
    param_names: ClassVar[tuple[str, ...]] = ("theta",)

    def __post_init__(self):
        object.__setattr__(self, "a", _positive_hyper("a", self.a))
        object.__setattr__(self, "b", _positive_hyper("b", self.b))

    @classmethod
    def from_data(cls, X, scale: float = 2.0) -> BetaBernoulli:
        """The empirical prior of Heller (2007), sections 3.5 and 4.4: ``a_d = scale m_d``,
        ``b_d = scale (1 - m_d)`` with ``m_d`` the mean of feature ``d``.

        The mean is smoothed as ``(sum_i x_id + 1/2) / (n + 1)`` so that a feature that is always
        0 (or 1) still gets positive ``a_d`` and ``b_d``. On sparse binary data this prior is far
        better than ``Beta(1, 1)`` on every feature, which expects half the features on: BHC's
        dendrogram purity on the ten digits is 0.17 with ``Beta(1, 1)`` and about 0.6 with
        ``scale=2`` (``notebooks/bhc.ipynb``).

        Parameters
        ----------
        X : array_like (n, D) or scipy sparse matrix, binary
        scale : float
            Positive: ``a_d + b_d``, the prior's weight in pseudo-items (``kappa`` of the thesis).

        Examples
        --------
        >>> comp = BetaBernoulli.from_data([[1, 0], [1, 0], [0, 0]], scale=2.0)
        >>> np.round(comp.a, 3).tolist(), np.round(comp.b, 3).tolist()
        ([1.25, 0.25], [0.75, 1.75])
        >>> BetaBernoulli.from_data([[1, 0]], scale=0)
        Traceback (most recent call last):
        ...
        ValueError: scale must be a positive finite number, got 0
        """
        check_positive("scale", scale)
        X = X.tocsr() if sp.issparse(X) else _as_matrix(X)
        if X.shape[0] == 0:
            raise ValueError("X has no items: the empirical prior needs at least one")
        sums = np.asarray(X.sum(axis=0), dtype=np.float64).ravel()
        mean = (sums + 0.5) / (X.shape[0] + 1.0)
        return cls(a=tuple(scale * mean), b=tuple(scale * (1.0 - mean)))

    def hyperparameters(self, D) -> dict:
        """``{"a": (D,), "b": (D,)}``, the hyperparameters broadcast to ``D`` features."""
        D = _check_dim(D)
        return {"a": _vector("a", self.a, D), "b": _vector("b", self.b, D)}

    def hyper(self, D) -> np.ndarray:
        """``[a (D), b (D)]`` for the kernels."""
        h = self.hyperparameters(D)
        return np.concatenate([h["a"], h["b"]])

    def _check_values(self, X):
        _reject_first(X, (X != 0.0) & (X != 1.0), "binary")

    def _posterior(self, stats, D):
        h = self.hyperparameters(D)
        n = stats[..., :1]
        m = stats[..., 1:]
        return h["a"] + m, h["b"] + n - m

    def log_marginal(self, stats) -> np.ndarray:
        """Closed-form ``log p(D_k)`` over the leading axes of ``stats``."""
        stats, D = self._stats_dim(stats)
        h = self.hyperparameters(D)
        a, b = h["a"], h["b"]
        a_n, b_n = self._posterior(stats, D)
        out = np.sum(
            gammaln(a_n)
            + gammaln(b_n)
            - gammaln(a_n + b_n)
            - gammaln(a)
            - gammaln(b)
            + gammaln(a + b),
            axis=-1,
        )
        return np.where(stats[..., 0] == 0.0, 0.0, out)

    def log_predictive(self, stats, X) -> np.ndarray:
        """``(N, K)`` posterior predictive ``log p(x_i | D_k)``: two matrix products."""
        X = _as_matrix(X)
        stats = self._stats_for(stats, X)
        a_n, b_n = self._posterior(stats, X.shape[1])
        log_total = np.log(a_n + b_n)
        log_one = np.log(a_n) - log_total
        log_zero = np.log(b_n) - log_total
        return X @ (log_one - log_zero).T + log_zero.sum(axis=1)

    def sample_prior(self, rng, n_clusters, D) -> dict:
        """``{"theta": (n_clusters, D)}`` drawn from the Beta prior."""
        rng = _rng(rng)
        check_integer("n_clusters", n_clusters)
        h = self.hyperparameters(D)
        return {"theta": rng.beta(h["a"], h["b"], size=(n_clusters, h["a"].size))}

    def sample_posterior(self, rng, stats) -> dict:
        """``{"theta": (K, D)}``, one draw from each cluster's ``Beta(a + m, b + n - m)``."""
        rng = _rng(rng)
        stats, D = self._stats_dim(stats)
        a_n, b_n = self._posterior(stats, D)
        return {"theta": rng.beta(a_n, b_n)}

    def posterior_moments(self, stats) -> dict:
        """Exact ``{"theta": (E theta, E theta^2)}`` of each cluster's ``Beta(a + m, b + n - m)``
        (what :meth:`sample_posterior` draws), each ``(K, D)``.

        Examples
        --------
        >>> mean, second = BetaBernoulli(1.0, 1.0).posterior_moments(np.array([[2.0, 1.0]]))["theta"]
        >>> mean.tolist(), second.tolist()
        ([[0.5]], [[0.3]])
        """
        stats, D = self._stats_dim(stats)
        a_n, b_n = self._posterior(stats, D)
        total = a_n + b_n
        return {"theta": (a_n / total, a_n * (a_n + 1.0) / (total * (total + 1.0)))}

    def log_likelihood(self, params, X) -> np.ndarray:
        """``(N, K)`` Bernoulli log-likelihoods ``log f(x_i | theta_k)``."""
        X = _as_matrix(X)
        theta = _param(params, "theta", 2)
        return _categorical_loglik(X, theta, with_complement=True)

    def simulate(self, rng, params, labels) -> np.ndarray:
        """``(N, D)`` binary draws, item ``i`` from ``theta[labels[i]]``."""
        rng = _rng(rng)
        theta = _param(params, "theta", 2)
        labels = _sim_labels(labels, len(theta))
        return (rng.random((labels.size, theta.shape[1])) < theta[labels]).astype(np.float64)

    takes_prior_from_data: ClassVar[bool] = True
    linear_log_score: ClassVar[bool] = True
    searchable_hyperparameters: ClassVar[tuple[str, ...]] = ("a", "b")
    data_description: ClassVar[str] = "binary (0 or 1)"
    kind_advice: ClassVar[str] = (
        "; binarise it first (e.g. X > 0, or "
        "latentzoo.inference.bayesian_sets.binarize for real features)"
    )

    def pymc_parameters(self, n_clusters: int, n_features: int) -> dict:
        """Declare ``theta ~ Beta(a, b)`` (dims ``(cluster, feature)``) in the current PyMC model.

        Must be called inside a ``pymc.Model`` context; returns ``{"theta": tensor}``.

        The module docstring has an example with every component.
        """
        import pymc as pm

        h = self.hyperparameters(n_features)
        tile = (n_clusters, 1)
        theta = pm.Beta(
            "theta", alpha=np.tile(h["a"], tile), beta=np.tile(h["b"], tile),
            dims=("cluster", "feature"),
        )  # fmt: skip
        return {"theta": theta}

    def pymc_log_likelihood(self, variables: dict, x):
        """``(N, K)`` tensor ``log f(x_i | theta_k) = x log theta + (1 - x) log(1 - theta)``.

        The module docstring has an example with every component.
        """
        import pytensor.tensor as pt

        theta = variables["theta"]
        return pt.dot(x, pt.log(theta).T) + pt.dot(1.0 - x, pt.log1p(-theta).T)

    def log_prior(self, values) -> float:
        """``sum_{k,d} log Beta(theta_kd | a_d, b_d)`` (normalised), the prior of :meth:`pymc_parameters`.

        Examples
        --------
        >>> BetaBernoulli(1.0, 1.0).log_prior({"theta": [[0.2, 0.9]]})
        0.0
        """
        theta = np.asarray(values["theta"], dtype=float)
        h = self.hyperparameters(theta.shape[1])
        a, b = h["a"][None], h["b"][None]
        body = xlogy(a - 1.0, theta) + xlogy(b - 1.0, 1.0 - theta) - betaln(a, b)
        return float(np.sum(body))

    def pymc_initvals(self, stats) -> dict:
        """PyMC starting values of clusters with stats rows ``stats``: the posterior mean
        ``theta = (m + a) / (n + a + b)``.

        Examples
        --------
        >>> BetaBernoulli(1.0, 1.0).pymc_initvals(np.array([[2.0, 1.0]]))["theta"].tolist()
        [[0.5]]
        """
        stats, D = self._stats_dim(stats)
        h = self.hyperparameters(D)
        return {"theta": (stats[:, 1 : 1 + D] + h["a"]) / (stats[:, :1] + h["a"] + h["b"])}

    def separated_params(self, n_clusters: int, n_features: int) -> dict:
        """Well-separated ``theta`` for ``n_clusters`` clusters: 0.9 on the cluster's own
        features (``d % K == k``), 0.1 elsewhere; needs ``n_features >= n_clusters``.

        Examples
        --------
        >>> BetaBernoulli().separated_params(2, 2)["theta"].tolist()
        [[0.9, 0.1], [0.1, 0.9]]
        """
        return {"theta": np.where(_own_features(self, n_clusters, n_features), 0.9, 0.1)}


@dataclass(frozen=True)
class DirichletMultinomial(_CountSumComponent):
    """Count vectors, one multinomial draw each, ``Dirichlet(eta)`` prior (thesis (2.10)-(2.12)).

    An item ``x_i in N^D`` is a sequence of ``T_i = sum_d x_id`` categorical tokens; its likelihood is
    ``prod_d theta_d^x_id`` in *sequence form*, without the multinomial coefficient (the convention of
    :func:`dirichlet_multinomial_log`). With ``m_d = sum_i x_id``, ``M = sum_d m_d`` and
    ``A = sum_d eta_d`` the cluster marginal is (2.12)

    .. math::

        p(\\mathcal{D}) = \\frac{\\Gamma(A)}{\\Gamma(A + M)}
        \\prod_d \\frac{\\Gamma(\\eta_d + m_d)}{\\Gamma(\\eta_d)},

    and the predictive of a new item is the ratio ``p(D + x) / p(D)``.

    Parameters
    ----------
    eta : float or array-like of shape (D,)
        Positive Dirichlet concentrations; a scalar is the symmetric prior.

    Notes
    -----
    Stats row ``[n, m_1..m_D]`` (``n`` items, ``m`` summed counts; ``S = D + 1``; zeros when empty),
    ``kind_code`` 1, ``hyper(D) = [eta (D)]``; parameters ``{"theta": (K, D)}`` (rows on the simplex).
    Binary data are counts too, so ``data_kinds = ("counts", "binary")``.

    Examples
    --------
    >>> comp = DirichletMultinomial(eta=1.0)
    >>> X = np.array([[2.0, 0.0], [0.0, 1.0]])
    >>> stats = comp.stats(X, np.array([0, 0]), 1)
    >>> stats
    array([[2., 2., 1.]])
    >>> bool(np.isclose(comp.log_marginal(stats)[0], np.log(1 / 2 * 2 / 3 * 1 / 4)))
    True
    >>> DirichletMultinomial(eta=[1.0, 0.0])
    Traceback (most recent call last):
    ...
    ValueError: eta[1] must be a positive finite number, got 0.0
    """

    eta: float | tuple = 1.0

    kind_code: ClassVar[int] = DIRICHLET_MULTINOMIAL
    data_kinds: ClassVar[tuple[str, ...]] = ("counts", "binary")
    data_description: ClassVar[str] = "non-negative integer counts"
    searchable_hyperparameters: ClassVar[tuple[str, ...]] = ("eta",)
    param_names: ClassVar[tuple[str, ...]] = ("theta",)

    def __post_init__(self):
        object.__setattr__(self, "eta", _positive_hyper("eta", self.eta))

    def hyperparameters(self, D) -> dict:
        """``{"eta": (D,)}``."""
        return {"eta": _vector("eta", self.eta, _check_dim(D))}

    def hyper(self, D) -> np.ndarray:
        """``[eta (D)]`` for the kernels."""
        return self.hyperparameters(D)["eta"]

    def _check_values(self, X):
        _reject_first(X, (X < 0.0) | (X != np.floor(X)), "a non-negative integer count")

    def log_marginal(self, stats) -> np.ndarray:
        """Closed-form ``log p(D_k)`` (2.12), sequence form, over the leading axes of ``stats``."""
        stats, D = self._stats_dim(stats)
        eta = self.hyper(D)
        m = stats[..., 1:]
        total = eta.sum()
        out = (
            gammaln(total)
            - gammaln(total + m.sum(axis=-1))
            + np.sum(gammaln(eta + m) - gammaln(eta), axis=-1)
        )
        return np.where(stats[..., 0] == 0.0, 0.0, out)

    def log_predictive(self, stats, X) -> np.ndarray:
        """``(N, K)`` posterior predictive ``log p(x_i | D_k)``, summed over the non-zeros of ``X``."""
        X = _as_matrix(X)
        stats = self._stats_for(stats, X)
        n_items, n_clusters = X.shape[0], stats.shape[0]
        eta = self.hyper(X.shape[1])
        m = stats[:, 1:]
        conc = eta + m
        am = eta.sum() + m.sum(axis=1)
        out = gammaln(am) - gammaln(am + X.sum(axis=1)[:, None])
        rows, cols = np.nonzero(X)
        vals = X[rows, cols]
        for block in _blocks(rows.size, n_clusters):
            r, c = rows[block], cols[block]
            cc = conc[:, c].T
            contrib = gammaln(cc + vals[block][:, None]) - gammaln(cc)
            gather = sp.csr_matrix((np.ones(r.size), (r, np.arange(r.size))), (n_items, r.size))
            out += gather @ contrib
        return out

    def sample_prior(self, rng, n_clusters, D) -> dict:
        """``{"theta": (n_clusters, D)}`` drawn from the Dirichlet prior."""
        rng = _rng(rng)
        check_integer("n_clusters", n_clusters)
        eta = self.hyper(D)
        return {"theta": _log_dirichlet_rows(rng, np.broadcast_to(eta, (n_clusters, eta.size)))}

    def sample_posterior(self, rng, stats) -> dict:
        """``{"theta": (K, D)}``, one draw from each cluster's ``Dirichlet(eta + m)``."""
        rng = _rng(rng)
        stats, D = self._stats_dim(stats)
        return {"theta": _log_dirichlet_rows(rng, self.hyper(D) + stats[..., 1:])}

    def posterior_moments(self, stats) -> dict:
        """Exact ``{"theta": (E theta, E theta^2)}`` of each cluster's ``Dirichlet(eta + m)``,
        each ``(K, D)``.

        Examples
        --------
        >>> comp = DirichletMultinomial(1.0)
        >>> mean, second = comp.posterior_moments(np.array([[1.0, 2.0, 0.0]]))["theta"]
        >>> mean.tolist(), second.tolist()
        ([[0.75, 0.25]], [[0.6, 0.1]])
        """
        stats, D = self._stats_dim(stats)
        a = self.hyper(D) + stats[..., 1:]
        total = a.sum(axis=-1, keepdims=True)
        return {"theta": (a / total, a * (a + 1.0) / (total * (total + 1.0)))}

    def log_likelihood(self, params, X) -> np.ndarray:
        """``(N, K)`` sequence-form log-likelihoods ``sum_d x_id log theta_kd``."""
        X = _as_matrix(X)
        theta = _param(params, "theta", 2)
        return _categorical_loglik(X, theta, with_complement=False)

    def replicate(self, rng, params, labels, X) -> np.ndarray:
        """``(N, D)`` replicate of the count vectors ``X``: item ``i`` keeps its total
        ``sum_d x_id`` and draws its counts from cluster ``labels[i]`` (:meth:`simulate`)."""
        totals = np.rint(np.asarray(X).sum(axis=1)).astype(np.int64)
        return self.simulate(rng, params, labels, n_trials=totals)

    def simulate(self, rng, params, labels, n_trials=20) -> np.ndarray:
        """``(N, D)`` multinomial count vectors with ``n_trials`` tokens each (int or (N,) array)."""
        rng = _rng(rng)
        theta = _param(params, "theta", 2)
        labels = _sim_labels(labels, len(theta))
        trials = np.asarray(n_trials)
        if (
            not np.issubdtype(trials.dtype, np.integer)
            or trials.shape not in ((), labels.shape)
            or (trials < 0).any()
        ):
            raise ValueError(
                f"n_trials must be a non-negative integer or one per item, got {n_trials!r}"
            )
        return rng.multinomial(trials, theta[labels]).astype(np.float64)

    def pymc_parameters(self, n_clusters: int, n_features: int) -> dict:
        """Declare ``theta[k] ~ Dir(eta)`` (dims ``(cluster, feature)``) in the current PyMC model.

        The module docstring has an example with every component.
        """
        import pymc as pm

        eta = self.hyperparameters(n_features)["eta"]
        theta = pm.Dirichlet("theta", a=np.tile(eta, (n_clusters, 1)), dims=("cluster", "feature"))
        return {"theta": theta}

    def pymc_log_likelihood(self, variables: dict, x):
        """``(N, K)`` tensor ``sum_d x_id log theta_kd`` (sequence form, no multinomial coefficient).

        The module docstring has an example with every component.
        """
        import pytensor.tensor as pt

        return pt.dot(x, pt.log(variables["theta"]).T)

    def log_prior(self, values) -> float:
        """``sum_k log Dir(theta_k | eta)`` (normalised), the prior of :meth:`pymc_parameters`.

        Examples
        --------
        >>> DirichletMultinomial(1.0).log_prior({"theta": [[0.5, 0.5]]})  # Dir(1, 1): log 1! = 0
        0.0
        """
        theta = np.asarray(values["theta"], dtype=float)
        eta = self.hyperparameters(theta.shape[1])["eta"]
        norm = gammaln(eta.sum()) - np.sum(gammaln(eta))
        return float(theta.shape[0] * norm + np.sum(xlogy(eta[None] - 1.0, theta)))

    def pymc_initvals(self, stats) -> dict:
        """PyMC starting values of clusters with stats rows ``stats``: ``theta`` proportional to
        ``m + eta + 1e-6`` (kept off the simplex boundary, where NUTS cannot start).

        Examples
        --------
        >>> DirichletMultinomial(1.0).pymc_initvals(np.array([[1.0, 2.0, 0.0]]))["theta"].round(3)
        array([[0.75, 0.25]])
        """
        stats, D = self._stats_dim(stats)
        theta = stats[:, 1 : 1 + D] + self.hyperparameters(D)["eta"] + 1e-6
        return {"theta": theta / theta.sum(axis=-1, keepdims=True)}

    def separated_params(self, n_clusters: int, n_features: int) -> dict:
        """Well-separated ``theta``: mass 0.9 spread over the cluster's own features
        (``d % K == k``), 0.1 uniformly over all; needs ``n_features >= n_clusters``.

        Examples
        --------
        >>> DirichletMultinomial().separated_params(2, 2)["theta"].round(3).tolist()
        [[0.95, 0.05], [0.05, 0.95]]
        """
        own = _own_features(self, n_clusters, n_features)
        theta = 0.1 / n_features + 0.9 * own / own.sum(axis=1, keepdims=True)
        return {"theta": theta / theta.sum(axis=1, keepdims=True)}


@dataclass(frozen=True)
class NormalGamma(_Component):
    """Independent Normal features, unknown mean and precision, Normal-Gamma prior (diagonal model).

    Per feature ``x_d ~ N(mu_d, 1 / tau_d)`` with ``tau_d ~ Gamma(a0, rate b0)`` and
    ``mu_d | tau_d ~ N(mu0, 1 / (kappa0 tau_d))``. With ``n`` items, mean ``xbar`` and
    ``M2 = sum_i (x_i - xbar)^2`` the posterior is ``kappa_n = kappa0 + n``,
    ``mu_n = (kappa0 mu0 + n xbar) / kappa_n``, ``a_n = a0 + n / 2`` and
    ``b_n = b0 + M2 / 2 + kappa0 n (xbar - mu0)^2 / (2 kappa_n)``; the marginal is Murphy (2007),
    eq. (95), per feature

    .. math::

        p(\\mathcal{D}) = \\frac{\\Gamma(a_n)}{\\Gamma(a_0)} \\frac{b_0^{a_0}}{b_n^{a_n}}
        \\Big(\\frac{\\kappa_0}{\\kappa_n}\\Big)^{1/2} (2\\pi)^{-n/2},

    and the predictive is Student-t, eq. (100):
    ``t_{2 a_n}(mu_n, b_n (kappa_n + 1) / (a_n kappa_n))``.

    Parameters
    ----------
    mu0 : float or array-like of shape (D,)
        Prior mean of the means (finite).
    kappa0, a0, b0 : float or array-like of shape (D,)
        Positive: prior precision scale of the mean, Gamma shape and Gamma rate of the precision.

    Notes
    -----
    Stats row ``[n, xbar (D), M2 (D)]`` (``S = 2 D + 1``; zeros when empty; Welford's updates),
    ``kind_code`` 2, ``hyper(D) = [mu0 (D), kappa0 (D), a0 (D), b0 (D)]``; parameters
    ``{"mu": (K, D), "tau": (K, D)}`` (means and precisions).

    Examples
    --------
    >>> comp = NormalGamma(mu0=0.0, kappa0=1.0, a0=2.0, b0=2.0)
    >>> X = np.array([[0.5, 1.0], [1.5, -1.0], [3.0, 0.0]])
    >>> stats = comp.stats(X, np.array([0, 0, 1]), 2)
    >>> stats[0]
    array([2. , 1. , 0. , 0.5, 2. ])
    >>> comp.log_marginal(stats).shape, comp.log_predictive(stats, X).shape
    ((2,), (3, 2))
    >>> NormalGamma(b0=float("inf"))
    Traceback (most recent call last):
    ...
    ValueError: b0 must be a positive finite number, got inf
    """

    mu0: float | tuple = 0.0
    kappa0: float | tuple = 1.0
    a0: float | tuple = 1.0
    b0: float | tuple = 1.0

    kind_code: ClassVar[int] = NORMAL_GAMMA
    data_kinds: ClassVar[tuple[str, ...]] = ("real", "counts", "binary")
    param_names: ClassVar[tuple[str, ...]] = ("mu", "tau")
    searchable_hyperparameters: ClassVar[tuple[str, ...]] = ("kappa0", "a0", "b0")

    def __post_init__(self):
        object.__setattr__(self, "mu0", _finite_hyper("mu0", self.mu0))
        for name in ("kappa0", "a0", "b0"):
            object.__setattr__(self, name, _positive_hyper(name, getattr(self, name)))

    def hyperparameters(self, D) -> dict:
        """``{"mu0", "kappa0", "a0", "b0"}``, each broadcast to shape (D,)."""
        D = _check_dim(D)
        return {
            name: _vector(name, getattr(self, name), D) for name in ("mu0", "kappa0", "a0", "b0")
        }

    def hyper(self, D) -> np.ndarray:
        """``[mu0 (D), kappa0 (D), a0 (D), b0 (D)]`` for the kernels."""
        return np.concatenate(list(self.hyperparameters(D).values()))

    def _check_values(self, X):
        """``ValueError`` naming the first entry too far from ``mu0`` to be scored in float64:
        ``|x - mu0|`` above :data:`DEVIATION_LIMIT`, or ``(x - mu0)^2 / (2 b0)`` above
        :data:`SPREAD_LIMIT` (Welford's downdates then leave rounding errors larger than ``b0``).

        Examples
        --------
        >>> NormalGamma().check_data([[0.5, 1e300]])
        Traceback (most recent call last):
        ...
        ValueError: X[0, 1] = 1e+300 is too far from mu0 = 0.0 for the NormalGamma component: |x - mu0| must be at most 1e+100, beyond which sums of squared deviations overflow float64; rescale the features (e.g. standardise them)
        """
        h = self.hyperparameters(X.shape[1])
        scale = 2.0 * h["b0"]
        if not _may_exceed_limits(X, h["mu0"], float(scale.min())):
            return
        dev = _check_deviations(X, h["mu0"], "NormalGamma")
        with np.errstate(over="ignore"):
            far = dev * dev / scale > SPREAD_LIMIT
        if far.any():
            i, j = _first(far)
            spread = dev[i, j] ** 2 / scale[j]
            raise _spread_error(
                f"X[{i}, {j}] = {float(X[i, j])!r}",
                "NormalGamma",
                "(x - mu0)^2 / (2 b0)",
                spread,
                "b0",
            )

    def stats(self, X, labels, n_clusters) -> np.ndarray:
        """``(n_clusters, 2 D + 1)`` rows ``[n_k, mean_k, M2_k]`` (means first, then deviations)."""
        X, labels, counts, sums = self._counts_sums(X, labels, n_clusters)
        self._check_values(X)
        means = sums / np.maximum(counts, 1.0)[:, None]
        m2 = np.asarray(_one_hot(labels, n_clusters) @ (X - means[labels]) ** 2)
        return np.column_stack([counts, means, m2])

    def _posterior(self, stats, D):
        """``(kappa_n, mu_n, a_n, b_n)``, each of shape ``stats.shape[:-1] + (D,)``."""
        h = self.hyperparameters(D)
        n = stats[..., :1]
        mean = stats[..., 1 : 1 + D]
        m2 = stats[..., 1 + D :]
        kappa_n = h["kappa0"] + n
        dev = mean - h["mu0"]
        mu_n = (h["kappa0"] * h["mu0"] + n * mean) / kappa_n
        a_n = h["a0"] + 0.5 * n
        b_n = h["b0"] + 0.5 * m2 + 0.5 * h["kappa0"] * n * dev * dev / kappa_n
        return kappa_n, mu_n, a_n, b_n

    def log_marginal(self, stats) -> np.ndarray:
        """Closed-form ``log p(D_k)`` (Murphy 2007, eq. (95)) over the leading axes of ``stats``."""
        stats, D = self._stats_dim(stats)
        h = self.hyperparameters(D)
        kappa_n, _, a_n, b_n = self._posterior(stats, D)
        per_feature = (
            gammaln(a_n)
            - gammaln(h["a0"])
            + h["a0"] * np.log(h["b0"])
            - a_n * np.log(b_n)
            + 0.5 * (np.log(h["kappa0"]) - np.log(kappa_n))
        )
        out = per_feature.sum(axis=-1) - 0.5 * stats[..., 0] * D * _LOG_2PI
        return np.where(stats[..., 0] == 0.0, 0.0, out)

    def log_predictive(self, stats, X) -> np.ndarray:
        """``(N, K)`` Student-t posterior predictive (Murphy 2007, eq. (100)), over features."""
        X = _as_matrix(X)
        stats = self._stats_for(stats, X)
        self._check_values(X)
        D = X.shape[1]
        kappa_n, mu_n, a_n, b_n = self._posterior(stats, D)
        nu = 2.0 * a_n
        scale2 = b_n * (kappa_n + 1.0) / (a_n * kappa_n)
        const = (
            gammaln(0.5 * (nu + 1.0)) - gammaln(0.5 * nu) - 0.5 * np.log(nu * np.pi * scale2)
        ).sum(axis=1)
        out = np.empty((X.shape[0], stats.shape[0]))
        for block in _blocks(X.shape[0], stats.shape[0] * D):
            z2 = (X[block, None, :] - mu_n) ** 2 / (nu * scale2)
            out[block] = const - np.sum(0.5 * (nu + 1.0) * np.log1p(z2), axis=-1)
        return out

    def _draw(self, rng, mu, kappa, a, b):
        tau = rng.gamma(a, 1.0 / b)
        return {"mu": mu + rng.standard_normal(tau.shape) / np.sqrt(kappa * tau), "tau": tau}

    def sample_prior(self, rng, n_clusters, D) -> dict:
        """``{"mu": (n_clusters, D), "tau": (n_clusters, D)}`` from the Normal-Gamma prior."""
        rng = _rng(rng)
        check_integer("n_clusters", n_clusters)
        h = self.hyperparameters(D)
        shape = (n_clusters, h["mu0"].size)
        return self._draw(
            rng, *(np.broadcast_to(h[k], shape) for k in ("mu0", "kappa0", "a0", "b0"))
        )

    def sample_posterior(self, rng, stats) -> dict:
        """``{"mu": (K, D), "tau": (K, D)}``, one draw from each cluster's Normal-Gamma posterior."""
        rng = _rng(rng)
        stats, D = self._stats_dim(stats)
        kappa_n, mu_n, a_n, b_n = self._posterior(stats, D)
        return self._draw(rng, mu_n, kappa_n, a_n, b_n)

    def posterior_moments(self, stats) -> dict:
        """Exact posterior moments of each cluster's ``(mu, tau)``, each ``(K, D)``.

        ``tau ~ Gamma(a_n, rate b_n)``: ``E tau = a_n / b_n``, ``E tau^2 = a_n (a_n + 1) / b_n^2``;
        ``E mu = mu_n`` (the second moment of ``mu`` is left out (None): its sampling variance is
        infinite unless ``a_n > 2``).

        Examples
        --------
        >>> moments = NormalGamma(0.0, 1.0, 2.0, 2.0).posterior_moments(np.array([[1.0, 2.0, 0.0]]))
        >>> moments["mu"][0].tolist(), moments["tau"][0].round(4).tolist()
        ([[1.0]], [[0.8333]])
        """
        stats, D = self._stats_dim(stats)
        _, mu_n, a_n, b_n = self._posterior(stats, D)
        return {"mu": (mu_n, None), "tau": (a_n / b_n, a_n * (a_n + 1.0) / b_n**2)}

    def log_likelihood(self, params, X) -> np.ndarray:
        """``(N, K)`` ``sum_d log N(x_id | mu_kd, 1 / tau_kd)``."""
        X = _as_matrix(X)
        mu = _param(params, "mu", 2)
        tau = _param(params, "tau", 2)
        const = 0.5 * np.sum(np.log(tau) - _LOG_2PI, axis=1)
        out = np.empty((X.shape[0], mu.shape[0]))
        for block in _blocks(X.shape[0], mu.size):
            out[block] = const - 0.5 * np.sum(tau * (X[block, None, :] - mu) ** 2, axis=-1)
        return out

    def simulate(self, rng, params, labels) -> np.ndarray:
        """``(N, D)`` draws ``x_i ~ N(mu_k, diag(1 / tau_k))`` with ``k = labels[i]``."""
        rng = _rng(rng)
        mu = _param(params, "mu", 2)
        tau = _param(params, "tau", 2)
        labels = _sim_labels(labels, len(mu))
        return mu[labels] + rng.standard_normal((labels.size, mu.shape[1])) / np.sqrt(tau[labels])

    def pymc_parameters(self, n_clusters: int, n_features: int) -> dict:
        """Declare ``tau ~ Gamma(a0, rate b0)`` and ``mu ~ N(mu0, 1 / (kappa0 tau))`` (dims
        ``(cluster, feature)``) in the current PyMC model.

        The module docstring has an example with every component.
        """
        import pymc as pm
        import pytensor.tensor as pt

        h = self.hyperparameters(n_features)
        tile, dims = (n_clusters, 1), ("cluster", "feature")
        tau = pm.Gamma("tau", alpha=np.tile(h["a0"], tile), beta=np.tile(h["b0"], tile), dims=dims)
        sigma = 1.0 / pt.sqrt(h["kappa0"] * tau)
        mu = pm.Normal("mu", mu=np.tile(h["mu0"], tile), sigma=sigma, dims=dims)
        return {"tau": tau, "mu": mu}

    def pymc_log_likelihood(self, variables: dict, x):
        """``(N, K)`` tensor ``sum_d [log tau - log 2 pi - tau (x - mu)^2] / 2`` by three matrix
        products.

        The module docstring has an example with every component.
        """
        import pytensor.tensor as pt

        tau, mu = variables["tau"], variables["mu"]
        d = x.shape[1]
        quad = (
            pt.dot(x**2, tau.T) - 2.0 * pt.dot(x, (tau * mu).T) + pt.sum(tau * mu**2, axis=1)[None]
        )
        const = 0.5 * pt.sum(pt.log(tau), axis=1)[None] - 0.5 * d * np.log(2.0 * np.pi)
        return const - 0.5 * quad

    def log_prior(self, values) -> float:
        """``sum_{k,d} [log Gamma(tau | a0, rate b0) + log N(mu | mu0, 1 / (kappa0 tau))]``.

        Examples
        --------
        >>> round(NormalGamma().log_prior({"mu": [[0.0]], "tau": [[1.0]]}), 4)  # -1 - log(2 pi)/2
        -1.9189
        """
        mu = np.asarray(values["mu"], dtype=float)
        tau = np.asarray(values["tau"], dtype=float)
        h = self.hyperparameters(mu.shape[1])
        mu0, kappa0, a0, b0 = (h[name][None] for name in ("mu0", "kappa0", "a0", "b0"))
        gamma = a0 * np.log(b0) - gammaln(a0) + xlogy(a0 - 1.0, tau) - b0 * tau
        precision = kappa0 * tau
        normal = 0.5 * np.log(precision / (2.0 * np.pi)) - 0.5 * precision * (mu - mu0) ** 2
        return float(np.sum(gamma + normal))

    def pymc_initvals(self, stats) -> dict:
        """PyMC starting values of clusters with stats rows ``stats``: ``mu`` the cluster mean
        (``mu0`` for an empty cluster), ``tau = 1``.

        Examples
        --------
        >>> NormalGamma().pymc_initvals(np.array([[2.0, 3.0, 0.5], [0.0, 0.0, 0.0]]))["mu"].tolist()
        [[3.0], [0.0]]
        """
        stats, D = self._stats_dim(stats)
        n = stats[:, :1]
        mean = np.where(n > 0, stats[:, 1 : 1 + D], np.asarray(self.mu0))
        return {"mu": mean, "tau": np.ones_like(mean)}

    def separated_params(self, n_clusters: int, n_features: int) -> dict:
        """Well-separated Normals: means ``5 (k - (K - 1) / 2)`` on every feature, unit precision.

        Examples
        --------
        >>> NormalGamma().separated_params(2, 1)["mu"].tolist()
        [[-2.5], [2.5]]
        """
        return {
            "mu": _separated_means(n_clusters, n_features),
            "tau": np.ones((n_clusters, n_features)),
        }


def _cholesky_rows(L):
    """``(..., D, D)`` lower Cholesky factors from the rows ``L`` of stats (the last D*D entries)."""
    D = int(round(math.sqrt(L.shape[-1])))
    return L.reshape(L.shape[:-1] + (D, D))


def _bartlett_factor(rng, chol_psi, nu):
    """``F`` with ``F F^T ~ inverse-Wishart(nu, Psi)`` for ``Psi = chol_psi chol_psi^T``, batched.

    Bartlett: ``A`` lower triangular with ``A_jj^2 ~ chi2(nu - j)`` and standard normals below the
    diagonal gives ``W = L^-T A A^T L^-1 ~ Wishart(nu, Psi^-1)``, so ``W^-1 = (L A^-T)(L A^-T)^T``.
    """
    K, D = chol_psi.shape[0], chol_psi.shape[-1]
    A = np.tril(rng.standard_normal((K, D, D)), k=-1)
    idx = np.arange(D)
    A[:, idx, idx] = np.sqrt(rng.chisquare(np.asarray(nu, dtype=np.float64)[:, None] - idx))
    A_inv = np.linalg.solve(A, np.broadcast_to(np.eye(D), A.shape))
    return chol_psi @ np.swapaxes(A_inv, -1, -2)


@dataclass(frozen=True)
class NormalInverseWishart(_Component):
    """Multivariate Normal items, unknown mean and full covariance, Normal-inverse-Wishart prior.

    ``Sigma ~ IW(nu0, psi0)`` and ``mu | Sigma ~ N(mu0, Sigma / kappa0)`` (thesis (2.13)-(2.14)). The
    posterior (Murphy 2007, eqs. (250)-(254)) has ``kappa_n = kappa0 + n``, ``nu_n = nu0 + n``,
    ``mu_n = (kappa0 mu0 + n xbar) / kappa_n`` and
    ``Psi_n = psi0 + S + kappa0 n / kappa_n (xbar - mu0)(xbar - mu0)^T`` with ``S`` the scatter matrix
    about ``xbar``; the marginal is Murphy's eq. (266) (the thesis' formula after (2.14)),

    .. math::

        p(\\mathcal{D}) = \\pi^{-nD/2} \\frac{\\Gamma_D(\\nu_n / 2)}{\\Gamma_D(\\nu_0 / 2)}
        \\frac{|\\Psi_0|^{\\nu_0 / 2}}{|\\Psi_n|^{\\nu_n / 2}}
        \\Big(\\frac{\\kappa_0}{\\kappa_n}\\Big)^{D/2},

    and the predictive is the multivariate Student-t of eq. (258),
    ``t_{nu_n - D + 1}(mu_n, Psi_n (kappa_n + 1) / (kappa_n (nu_n - D + 1)))``.

    Parameters
    ----------
    mu0 : float or array-like of shape (D,)
        Prior mean (finite).
    kappa0 : float
        Positive prior precision scale of the mean.
    nu0 : float or None
        Degrees of freedom, greater than ``D - 1``; ``None`` means ``D + 2`` (then
        ``E[Sigma] = psi0``).
    psi0 : float, array-like of shape (D,) or (D, D)
        Scale matrix: a scalar means ``psi0 * I``, a vector a diagonal; a matrix must be symmetric
        positive definite.

    Notes
    -----
    Stats row ``[n, mu_n (D), L_n (D*D)]`` with ``Psi_n = L_n L_n^T`` (row-major lower Cholesky
    factor; ``S = 1 + D + D^2``); an empty cluster's row is the prior's ``[0, mu0, chol(psi0)]``.
    Adding or removing an item is a rank-one Cholesky update or downdate (:func:`stats_update`).
    ``kind_code`` 3, ``hyper(D) = [kappa0, nu0, log|psi0|, mu0 (D), chol(psi0) (D*D)]``; parameters
    ``{"mu": (K, D), "cov": (K, D, D)}``.

    Examples
    --------
    >>> comp = NormalInverseWishart(kappa0=1.0, psi0=1.0)
    >>> X = np.array([[0.5, 1.0], [1.5, -1.0], [3.0, 0.0]])
    >>> stats = comp.stats(X, np.array([0, 0, 1]), 3)
    >>> stats.shape
    (3, 7)
    >>> stats[2]  # empty cluster: the prior's mean and chol(psi0)
    array([0., 0., 0., 1., 0., 0., 1.])
    >>> comp.log_marginal(stats)[2], comp.log_predictive(stats, X).shape
    (np.float64(0.0), (3, 3))
    >>> NormalInverseWishart(psi0=[[1.0, 2.0], [2.0, 1.0]])
    Traceback (most recent call last):
    ...
    ValueError: psi0 must be positive definite
    """

    mu0: float | tuple = 0.0
    kappa0: float = 1.0
    nu0: float | None = None
    psi0: float | tuple = 1.0

    kind_code: ClassVar[int] = NORMAL_INVERSE_WISHART
    data_kinds: ClassVar[tuple[str, ...]] = ("real", "counts", "binary")
    param_names: ClassVar[tuple[str, ...]] = ("mu", "cov")
    searchable_hyperparameters: ClassVar[tuple[str, ...]] = ("kappa0", "psi0")

    def __post_init__(self):
        object.__setattr__(self, "mu0", _finite_hyper("mu0", self.mu0))
        kappa0 = _as_float("kappa0", self.kappa0, "a positive finite number")
        if kappa0.ndim != 0:
            raise ValueError(f"kappa0 must be a positive finite number, got shape {kappa0.shape}")
        check_positive("kappa0", float(kappa0))
        object.__setattr__(self, "kappa0", float(kappa0))
        if self.nu0 is not None:
            nu0 = _as_float("nu0", self.nu0, "a positive finite number or None")
            if nu0.ndim != 0:
                raise ValueError(
                    f"nu0 must be a positive finite number or None, got shape {nu0.shape}"
                )
            check_positive("nu0", float(nu0))
            object.__setattr__(self, "nu0", float(nu0))
        psi0 = _as_float("psi0", self.psi0, "a positive number or a positive definite matrix")
        if psi0.ndim <= 1:
            psi0 = _positive_hyper("psi0", psi0)
        elif psi0.ndim == 2 and psi0.shape[0] == psi0.shape[1] and psi0.shape[0] > 0:
            if not np.all(np.isfinite(psi0)):
                i, j = _first(~np.isfinite(psi0))
                raise ValueError(f"psi0[{i}, {j}] is {psi0[i, j]}")
            asym = psi0 != psi0.T
            if asym.any():
                i, j = _first(asym)
                raise ValueError(
                    f"psi0 must be symmetric, got psi0[{i}, {j}] = {psi0[i, j]}"
                    f" != psi0[{j}, {i}] = {psi0[j, i]}"
                )
            try:
                np.linalg.cholesky(psi0)
            except np.linalg.LinAlgError:
                raise ValueError("psi0 must be positive definite") from None
            psi0 = tuple(tuple(row) for row in psi0.tolist())
        else:
            raise ValueError(
                f"psi0 must be a scalar, a (D,) diagonal or a (D, D) matrix, got shape {psi0.shape}"
            )
        object.__setattr__(self, "psi0", psi0)
        dims = {len(v) for v in (self.mu0, self.psi0) if isinstance(v, tuple)}
        if len(dims) > 1:
            raise ValueError(
                f"mu0 has {len(self.mu0)} entries but psi0 is for {len(self.psi0)} features"
            )

    def hyperparameters(self, D) -> dict:
        """``{"mu0": (D,), "kappa0": float, "nu0": float, "psi0": (D, D)}``, checked for ``D``."""
        D = _check_dim(D)
        mu0 = _vector("mu0", self.mu0, D)
        if isinstance(self.psi0, tuple) and isinstance(self.psi0[0], tuple):
            if len(self.psi0) != D:
                raise ValueError(
                    f"psi0 is {len(self.psi0)} x {len(self.psi0)} but the data have {D} features"
                )
            psi0 = np.array(self.psi0, dtype=np.float64)
        else:
            psi0 = np.diag(_vector("psi0", self.psi0, D))
        nu0 = float(D + 2) if self.nu0 is None else self.nu0
        if not nu0 > D - 1:
            raise ValueError(
                f"nu0 must be greater than D - 1 = {D - 1} for {D} features, got {nu0!r}"
            )
        return {"mu0": mu0, "kappa0": self.kappa0, "nu0": nu0, "psi0": psi0}

    def hyper(self, D) -> np.ndarray:
        """``[kappa0, nu0, log|psi0|, mu0 (D), chol(psi0) (D*D)]`` for the kernels."""
        h = self.hyperparameters(D)
        chol = np.linalg.cholesky(h["psi0"])
        logdet = 2.0 * np.sum(np.log(np.diag(chol)))
        return np.concatenate([[h["kappa0"], h["nu0"], logdet], h["mu0"], chol.ravel()])

    def _check_values(self, X):
        """``ValueError`` naming the first item too far from ``mu0`` to be scored in float64: an
        entry with ``|x - mu0|`` above :data:`DEVIATION_LIMIT`, or an item with
        ``(x - mu0)^T psi0^-1 (x - mu0)`` above :data:`SPREAD_LIMIT` (small clusters' scale
        matrices then lose ``psi0`` to rounding and stop being positive definite).

        Examples
        --------
        >>> NormalInverseWishart().check_data([[0.5, 1.0], [2e8, -1e8]])
        Traceback (most recent call last):
        ...
        ValueError: X[1, :] (item 1) is too far from mu0 for the prior scale of the NormalInverseWishart component: (x - mu0)^T psi0^-1 (x - mu0) = 5e+16 exceeds 1e+12, beyond which float64 cannot resolve psi0 beside the data's scatter (the marginal likelihoods come out wrong); standardise the features or set psi0 to the data's scale
        """
        h = self.hyperparameters(X.shape[1])
        # D max|x - mu0|^2 / lambda_min(psi0) bounds every whitened distance: ordinary data pass
        # on it without a triangular solve over the items.
        floor = float(np.linalg.eigvalsh(h["psi0"])[0]) / X.shape[1]
        if not _may_exceed_limits(X, h["mu0"], floor):
            return
        dev = _check_deviations(X, h["mu0"], "NormalInverseWishart")
        chol = np.linalg.cholesky(h["psi0"])
        white = solve_triangular(chol, dev.T, lower=True)
        spread = np.einsum("ij,ij->j", white, white)
        far = spread > SPREAD_LIMIT
        if far.any():
            i = int(np.argmax(far))
            raise _spread_error(
                f"X[{i}, :] (item {i})",
                "NormalInverseWishart",
                "(x - mu0)^T psi0^-1 (x - mu0)",
                spread[i],
                "psi0",
            )

    def stats(self, X, labels, n_clusters) -> np.ndarray:
        """``(n_clusters, 1 + D + D^2)`` rows ``[n_k, mu_n, chol(Psi_n)]`` (eqs. (250)-(254)).

        The scatter matrices are summed from deviations about each cluster's mean (blocks of items,
        no loop over single items) and factorised in one batched Cholesky.
        """
        X, labels, counts, sums = self._counts_sums(X, labels, n_clusters)
        self._check_values(X)
        D = X.shape[1]
        h = self.hyperparameters(D)
        means = sums / np.maximum(counts, 1.0)[:, None]
        centred = X - means[labels]
        scatter = np.zeros((n_clusters, D * D))
        for block in _blocks(X.shape[0], D * D):
            c = centred[block]
            outer = (c[:, :, None] * c[:, None, :]).reshape(c.shape[0], D * D)
            scatter += _one_hot(labels[block], n_clusters) @ outer
        dev = means - h["mu0"]
        shrink = h["kappa0"] * counts / (h["kappa0"] + counts)
        psi_n = (
            h["psi0"]
            + scatter.reshape(n_clusters, D, D)
            + shrink[:, None, None] * dev[:, :, None] * dev[:, None, :]
        )
        empty = counts == 0
        chol = np.empty_like(psi_n)
        chol[~empty] = np.linalg.cholesky(psi_n[~empty])
        chol[empty] = np.linalg.cholesky(h["psi0"])
        mu_n = (h["kappa0"] * h["mu0"] + sums) / (h["kappa0"] + counts)[:, None]
        mu_n[empty] = h["mu0"]
        return np.column_stack([counts, mu_n, chol.reshape(n_clusters, D * D)])

    def _unpack(self, stats, D):
        n = stats[..., 0]
        return n, stats[..., 1 : 1 + D], _cholesky_rows(stats[..., 1 + D :])

    def log_marginal(self, stats) -> np.ndarray:
        """Closed-form ``log p(D_k)`` (Murphy 2007, eq. (266)) over the leading axes of ``stats``."""
        stats, D = self._stats_dim(stats)
        h = self.hyperparameters(D)
        n, _, chol = self._unpack(stats, D)
        logdet0 = 2.0 * np.sum(np.log(np.diag(np.linalg.cholesky(h["psi0"]))))
        logdet_n = 2.0 * np.sum(np.log(np.abs(np.diagonal(chol, axis1=-2, axis2=-1))), axis=-1)
        nu0, kappa0 = h["nu0"], h["kappa0"]
        nu_n = nu0 + n
        j = np.arange(D)
        log_gamma_ratio = np.sum(
            gammaln(0.5 * (nu_n[..., None] - j)) - gammaln(0.5 * (nu0 - j)), axis=-1
        )
        out = (
            log_gamma_ratio
            - 0.5 * n * D * _LOG_PI
            + 0.5 * nu0 * logdet0
            - 0.5 * nu_n * logdet_n
            + 0.5 * D * (np.log(kappa0) - np.log(kappa0 + n))
        )
        return np.where(n == 0.0, 0.0, out)

    def log_predictive(self, stats, X) -> np.ndarray:
        """``(N, K)`` multivariate Student-t posterior predictive (Murphy 2007, eq. (258))."""
        X = _as_matrix(X)
        stats = self._stats_for(stats, X)
        self._check_values(X)
        D = X.shape[1]
        h = self.hyperparameters(D)
        n, mu_n, chol = self._unpack(stats, D)
        kappa_n = h["kappa0"] + n
        nu = h["nu0"] + n - D + 1.0
        logdiag = np.sum(np.log(np.abs(np.diagonal(chol, axis1=-2, axis2=-1))), axis=-1)
        const = (
            gammaln(0.5 * (nu + D))
            - gammaln(0.5 * nu)
            - 0.5 * D * np.log(np.pi * (kappa_n + 1.0) / kappa_n)
            - logdiag
        )
        q = _mahalanobis(chol, mu_n, X)
        return const - 0.5 * (nu + D) * np.log1p(q * kappa_n / (kappa_n + 1.0))

    def sample_prior(self, rng, n_clusters, D) -> dict:
        """``{"mu": (n_clusters, D), "cov": (n_clusters, D, D)}`` from the prior (Bartlett)."""
        rng = _rng(rng)
        check_integer("n_clusters", n_clusters)
        h = self.hyperparameters(D)
        chol = np.broadcast_to(np.linalg.cholesky(h["psi0"]), (n_clusters, D, D))
        return self._draw(
            rng, chol, np.full(n_clusters, h["nu0"]), np.full(n_clusters, h["kappa0"]), h["mu0"]
        )

    def sample_posterior(self, rng, stats) -> dict:
        """``{"mu": (K, D), "cov": (K, D, D)}``, one draw from each cluster's posterior."""
        rng = _rng(rng)
        stats, D = self._stats_dim(stats)
        if stats.ndim != 2:
            raise ValueError(f"stats must have shape (n_clusters, S), got {stats.shape}")
        h = self.hyperparameters(D)
        n, mu_n, chol = self._unpack(stats, D)
        return self._draw(rng, chol, h["nu0"] + n, h["kappa0"] + n, mu_n)

    def posterior_moments(self, stats) -> dict:
        """Exact posterior means of each cluster's ``mu`` ``(K, D)`` and ``cov`` ``(K, D, D)``.

        ``E mu = mu_n`` and ``E cov = Psi_n / (nu_n - D - 1)`` (finite for ``nu_n > D + 1``, else
        infinite); second moments are left out (None).

        Examples
        --------
        >>> comp = NormalInverseWishart(nu0=4.0)
        >>> stats = comp.stats(np.array([[0.0, 1.0]]), np.array([0]), 1)
        >>> moments = comp.posterior_moments(stats)
        >>> moments["mu"][0].shape, moments["cov"][0].shape
        ((1, 2), (1, 2, 2))
        """
        stats, D = self._stats_dim(stats)
        h = self.hyperparameters(D)
        n, mu_n, chol = self._unpack(stats, D)
        excess = (h["nu0"] + n - D - 1.0)[..., None, None]
        with np.errstate(divide="ignore"):
            cov = np.where(excess > 0, chol @ np.swapaxes(chol, -1, -2) / excess, np.inf)
        return {"mu": (mu_n, None), "cov": (cov, None)}

    def _draw(self, rng, chol_psi, nu, kappa, mean):
        factor = _bartlett_factor(rng, chol_psi, nu)
        cov = factor @ np.swapaxes(factor, -1, -2)
        cov = 0.5 * (cov + np.swapaxes(cov, -1, -2))
        z = rng.standard_normal(factor.shape[:-1])
        mu = mean + np.einsum("kde,ke->kd", factor, z) / np.sqrt(kappa)[:, None]
        return {"mu": mu, "cov": cov}

    def log_likelihood(self, params, X) -> np.ndarray:
        """``(N, K)`` multivariate Normal log densities ``log N(x_i | mu_k, cov_k)``."""
        X = _as_matrix(X)
        mu = _param(params, "mu", 2)
        cov = _param(params, "cov", 3)
        chol = np.linalg.cholesky(cov)
        logdiag = np.sum(np.log(np.diagonal(chol, axis1=-2, axis2=-1)), axis=-1)
        return -0.5 * X.shape[1] * _LOG_2PI - logdiag - 0.5 * _mahalanobis(chol, mu, X)

    def simulate(self, rng, params, labels) -> np.ndarray:
        """``(N, D)`` draws ``x_i ~ N(mu_k, cov_k)`` with ``k = labels[i]``."""
        rng = _rng(rng)
        mu = _param(params, "mu", 2)
        chol = np.linalg.cholesky(_param(params, "cov", 3))
        labels = _sim_labels(labels, len(mu))
        z = rng.standard_normal((labels.size, mu.shape[1]))
        return mu[labels] + np.einsum("nde,ne->nd", chol[labels], z)

    has_pymc_initvals: ClassVar[bool] = False

    def pymc_coords(self, feature_names) -> dict:
        """``feature2`` (a covariance's second axis: xarray forbids a repeated dimension) and
        ``offdiag`` (the ``D (D - 1) / 2`` entries below the diagonal of a Bartlett factor).

        Examples
        --------
        >>> sorted(NormalInverseWishart().pymc_coords(["a", "b"]).items())
        [('feature2', ['a', 'b']), ('offdiag', array([0]))]
        """
        d = len(feature_names)
        return {NIW_EXTRA_DIM: list(feature_names), "offdiag": np.arange(d * (d - 1) // 2)}

    def pymc_dims(self) -> dict[str, list[str]]:
        """``mu``, ``cov`` and the free Bartlett variables ``bartlett_c``, ``bartlett_z``, ``mu_std``.

        Examples
        --------
        >>> NormalInverseWishart().pymc_dims()["cov"]
        ['cluster', 'feature', 'feature2']
        """
        return {
            "mu": ["cluster", "feature"],
            "cov": ["cluster", "feature", NIW_EXTRA_DIM],
            "bartlett_c": ["cluster", "feature"],
            "bartlett_z": ["cluster", "offdiag"],
            "mu_std": ["cluster", "feature"],
        }

    def pymc_parameters(self, n_clusters: int, n_features: int) -> dict:
        """Declare the component by the Bartlett decomposition of the precision matrix.

        ``Sigma_k ~ IW(nu0, Psi0)`` is ``Lambda_k = Sigma_k^{-1} ~ Wishart(nu0, Psi0^{-1})``,
        written as ``Lambda_k = B_k B_k^T`` with ``B_k = L A_k``, ``L = chol(Psi0^{-1})`` and
        ``A_k`` lower triangular with ``A_jj = sqrt(c_j)``, ``c_j ~ chi2(nu0 - j)`` (``j =
        0..D-1``) and standard normal entries below the diagonal (Bartlett 1933). Then ``mu_k = mu0
        + B_k^{-T} e_k / sqrt(kappa0)`` with ``e_k ~ N(0, I)`` is ``N(mu0, Sigma_k / kappa0)``. The
        free variables are ``bartlett_c`` (K, D), ``bartlett_z`` (K, D(D-1)/2) and ``mu_std``
        (K, D), all unconstrained or positive, so NUTS can run; ``mu`` (K, D) and ``cov`` (K, D, D)
        are deterministics, so the posterior is reported under the component's parameter names.
        Returns them and ``precision_chol`` (the factors ``B``, not a PyMC variable).

        Examples
        --------
        >>> import pymc as pm
        >>> comp = NormalInverseWishart()
        >>> with pm.Model(coords={"cluster": [0], "feature": [0, 1], **comp.pymc_coords([0, 1])}):
        ...     variables = comp.pymc_parameters(1, 2)
        >>> sorted(variables)
        ['bartlett_c', 'bartlett_z', 'cov', 'mu', 'mu_std', 'precision_chol']
        """
        import pymc as pm
        import pytensor.tensor as pt

        k, d = n_clusters, n_features
        h = self.hyperparameters(d)
        mu0, kappa0 = h["mu0"], h["kappa0"]
        chol_prec = np.linalg.cholesky(np.linalg.inv(h["psi0"]))
        dof = h["nu0"] - np.arange(d, dtype=float)
        c = pm.ChiSquared("bartlett_c", nu=np.tile(dof, (k, 1)), dims=("cluster", "feature"))
        out = {"bartlett_c": c}
        rows, cols = np.tril_indices(d, k=-1)
        a = pt.zeros((k, d, d))
        a = pt.set_subtensor(a[:, np.arange(d), np.arange(d)], pt.sqrt(c))
        if rows.size:
            off = pm.Normal("bartlett_z", 0.0, 1.0, dims=("cluster", "offdiag"))
            a = pt.set_subtensor(a[:, rows, cols], off)
            out["bartlett_z"] = off
        b = pt.matmul(chol_prec[None], a)  # (K, D, D) lower triangular, precision = b b^T
        e = pm.Normal("mu_std", 0.0, 1.0, dims=("cluster", "feature"))
        b_t = pt.swapaxes(b, 1, 2)
        shift = pt.linalg.solve_triangular(b_t, e[:, :, None], lower=False, b_ndim=2)[:, :, 0]
        mu = pm.Deterministic(
            "mu", mu0[None] + shift / np.sqrt(kappa0), dims=("cluster", "feature")
        )
        b_inv = pt.linalg.solve_triangular(
            b, pt.eye(d)[None] + pt.zeros((k, 1, 1)), lower=True, b_ndim=2
        )
        cov = pm.Deterministic(
            "cov",
            pt.matmul(pt.swapaxes(b_inv, 1, 2), b_inv),
            dims=("cluster", "feature", NIW_EXTRA_DIM),
        )
        return {**out, "mu_std": e, "mu": mu, "cov": cov, "precision_chol": b}

    def pymc_log_likelihood(self, variables: dict, x):
        """``(N, K)`` tensor ``log N(x_i | mu_k, (B_k B_k^T)^{-1})`` from the Bartlett factors.

        Examples
        --------
        >>> import pymc as pm
        >>> comp = NormalInverseWishart()
        >>> with pm.Model(coords={"cluster": [0], "feature": [0], **comp.pymc_coords([0])}):
        ...     loglik = comp.pymc_log_likelihood(comp.pymc_parameters(1, 1), np.zeros((2, 1)))
        >>> loglik.ndim
        2
        """
        import pytensor.tensor as pt

        b, mu = variables["precision_chol"], variables["mu"]
        d = x.shape[1]
        diff = x[:, None, :] - mu[None]  # (N, K, D)
        whitened = pt.sum(diff[:, :, :, None] * b[None], axis=2)  # B_k^T (x_i - mu_k)
        log_det = pt.sum(pt.log(b[:, np.arange(d), np.arange(d)]), axis=1)  # log |Lambda_k|^(1/2)
        return log_det[None] - 0.5 * d * np.log(2.0 * np.pi) - 0.5 * pt.sum(whitened**2, axis=2)

    def pymc_values(self, values) -> dict:
        """``values`` with the Bartlett variables of :meth:`pymc_parameters` added from ``(mu, cov)``.

        ``B_k = chol(cov_k^{-1})`` (lower, positive diagonal), ``A_k = chol(Psi0^{-1})^{-1} B_k``,
        ``bartlett_c = diag(A_k)^2``, ``bartlett_z`` its entries below the diagonal
        (``numpy.tril_indices`` order) and ``mu_std = sqrt(kappa0) B_k^T (mu_k - mu0)``: the inverse
        of the maps of :meth:`pymc_parameters`. Values already given are kept.

        Examples
        --------
        >>> out = NormalInverseWishart().pymc_values({"mu": [[0.0]], "cov": [[[0.5]]]})
        >>> out["bartlett_c"].round(6).tolist(), out["mu_std"].tolist()
        ([[2.0]], [[0.0]])
        """
        out = dict(values)
        if "bartlett_c" in out:
            return out
        mu = np.asarray(values["mu"], dtype=float)
        cov = np.asarray(values["cov"], dtype=float)
        d = mu.shape[-1]
        h = self.hyperparameters(d)
        chol_prec = np.linalg.cholesky(np.linalg.inv(h["psi0"]))
        b = np.linalg.cholesky(np.linalg.inv(cov))  # (K, D, D): precision = b b^T
        a = np.linalg.solve(chol_prec[None], b)
        rows, cols = np.tril_indices(d, k=-1)
        out["bartlett_c"] = np.diagonal(a, axis1=1, axis2=2) ** 2
        if rows.size:
            out["bartlett_z"] = a[:, rows, cols]
        out["mu_std"] = np.sqrt(h["kappa0"]) * np.einsum("kde,kd->ke", b, mu - h["mu0"][None])
        return out

    def log_prior(self, values) -> float:
        """Log density of the Bartlett variables: ``chi2(nu0 - j)`` for ``bartlett_c[:, j]``,
        standard normal ``bartlett_z`` and ``mu_std`` (the density of ``(mu, cov)`` times the
        Jacobian of the map; from ``(mu, cov)`` by :meth:`pymc_values` when not given).

        Examples
        --------
        >>> round(NormalInverseWishart().log_prior({"mu": [[0.0]], "cov": [[[1.0]]]}), 4)
        -2.3379
        """
        values = self.pymc_values(values)
        c = np.asarray(values["bartlett_c"], dtype=float)
        d = c.shape[1]
        nu0 = self.hyperparameters(d)["nu0"]
        half = 0.5 * (nu0 - np.arange(d, dtype=float))[None]  # chi2(nu0 - j): Gamma(k/2, 1/2)
        chi2 = xlogy(half - 1.0, c) - 0.5 * c - half * np.log(2.0) - gammaln(half)
        normals = [np.asarray(values["mu_std"], dtype=float)]
        if "bartlett_z" in values:
            normals.append(np.asarray(values["bartlett_z"], dtype=float))
        squares = sum(float(np.sum(z**2)) for z in normals)
        count = sum(z.size for z in normals)
        return float(float(np.sum(chi2)) - 0.5 * squares - 0.5 * count * np.log(2.0 * np.pi))

    def separated_params(self, n_clusters: int, n_features: int) -> dict:
        """Well-separated Normals: means ``5 (k - (K - 1) / 2)`` on every feature, identity
        covariances.

        Examples
        --------
        >>> NormalInverseWishart().separated_params(2, 1)["cov"].tolist()
        [[[1.0]], [[1.0]]]
        """
        cov = np.repeat(np.eye(n_features)[None], n_clusters, axis=0)
        return {"mu": _separated_means(n_clusters, n_features), "cov": cov}


def _mahalanobis(chol, centres, X):
    """``(N, K)`` squared norms ``|L_k^{-1} (x_i - c_k)|^2`` for lower triangular ``L_k``."""
    D = X.shape[1]
    inverse = np.linalg.solve(chol, np.broadcast_to(np.eye(D), chol.shape))
    inverse = np.tril(inverse)
    out = np.empty((X.shape[0], chol.shape[0]))
    for block in _blocks(X.shape[0], chol.shape[0] * D):
        w = np.einsum("kde,nke->nkd", inverse, X[block, None, :] - centres)
        out[block] = np.sum(w * w, axis=-1)
    return out


COMPONENTS = {
    "beta_bernoulli": BetaBernoulli,
    "dirichlet_multinomial": DirichletMultinomial,
    "normal_gamma": NormalGamma,
    "normal_inverse_wishart": NormalInverseWishart,
}
"""The components by the names the command line uses (``--component``)."""


def component_named(name: str, **hyperparameters):
    """The conjugate component called ``name`` (a key of :data:`COMPONENTS`), default priors.

    Examples
    --------
    >>> component_named("normal_gamma")
    NormalGamma(mu0=0.0, kappa0=1.0, a0=1.0, b0=1.0)
    >>> component_named("gauss")
    Traceback (most recent call last):
    ...
    ValueError: unknown component 'gauss'; known: beta_bernoulli, dirichlet_multinomial, normal_gamma, normal_inverse_wishart
    """
    if name not in COMPONENTS:
        raise ValueError(f"unknown component {name!r}; known: {', '.join(COMPONENTS)}")
    return COMPONENTS[name](**hyperparameters)
