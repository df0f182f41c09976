"""MCMC for the Infinite Overlapping Mixture Model: Algorithm 7.1 of Heller (2007).

One transition (:func:`step`) is one iteration of Algorithm 7.1:

1. for every item ``i``: Gibbs over its memberships of the *existing* clusters (those another item
   uses, ``m_-i,k > 0``) with the IBP prior odds (7.12) ``m_-i,k / (N - m_-i,k)`` times the
   likelihood ratio of the product model (7.6)-(7.7); then a Metropolis-Hastings proposal of new
   clusters (Meeds et al. 2007): item ``i``'s singleton clusters are replaced by ``Poisson(alpha /
   N)`` new ones with parameters from their prior. The proposal is the prior conditional of those
   clusters given the other items, so the acceptance probability is the likelihood ratio of item
   ``i`` alone;
2. Metropolis-Hastings on every ``theta_kd`` with the Beta proposal (7.13) ``theta' ~ Beta(omega
   theta, omega (1 - theta))``, accepted with the ratio of likelihood x ``Beta(a, b)`` prior x
   reverse/forward proposal densities.

The state keeps each item's summed natural parameters ``eta_i = sum_k z_ik logit(theta_k)`` (7.4)
and each cluster's size ``m_k``, updated on every accepted flip, so one flip of ``z_ik`` costs O(D)
and one sweep over ``Z`` O(N K D). The numba kernels draw their uniforms from the chain's splitmix64
stream (:func:`latentzoo.inference.mcmc.next_uniform`); the Poisson counts, the new clusters' prior
parameters and the Beta proposals are drawn with the chain's numpy generator before the kernel
runs (none of them depends on the state the kernel changes). Columns that become empty are removed
at the end of the sweep, so the width of ``Z`` varies between draws; the chain runner pads it
(``Z_shape``).

Gaussian clusters (``OverlappingMixture(distribution="gaussian")``, (7.5) with axis-aligned
covariances) run the same algorithm on their own state (:class:`GaussianIOMMState`): a flip adds
or removes ``(tau_k mu_k, tau_k)`` from the item's summed natural parameters, still O(D); step 2
draws every ``mu_kd`` from its Gaussian conditional (the item log density is quadratic in it) and
moves ``tau_kd`` by Metropolis-Hastings with a log-normal random walk of variance ``1 / omega``.

``fixed_theta`` conditions on known parameters shared by every cluster (new clusters included):
then the parameter move is skipped and the chain's target is ``P(Z | X, theta)`` under the IBP,
which the tests enumerate exactly on tiny problems.

Examples
--------
>>> from latentzoo.models.iomm import OverlappingMixture
>>> model = OverlappingMixture(alpha=1.0)
>>> data, truth = model.simulate(0, n_items=8, n_features=5)
>>> posterior, stats, _ = sample(model, data, chains=1, draws=5, tune=5, random_state=0,
...                              progressbar=False)
>>> posterior["Z"].shape[:3], sorted(stats)
((1, 5, 8), ['lp', 'n_clusters', 'new_cluster_accept', 'theta_accept'])
"""

from __future__ import annotations

import dataclasses
import math
from typing import NamedTuple

import numba as nb
import numpy as np
from scipy.special import betaln, logit

from latentzoo.inference.family import (
    GIBBS_OPTIONS,
    Family,
    Method,
    anything,
    choice,
    integer,
    real,
)
from latentzoo.inference.mcmc import next_uniform, run_chains, splitmix_seeds
from latentzoo.models._checks import check_integer, check_positive
from latentzoo.models.iomm import (
    OverlappingMixture,
    bernoulli_log_likelihood,
    diagonal_gaussian_log_likelihood,
)

__all__ = [
    "FAMILY",
    "IOMMInfo",
    "IOMMState",
    "draw",
    "init",
    "item_log_likelihoods",
    "kmeans_start",
    "mcmc",
    "sample",
    "shared_clusters",
    "step",
]

START_CHOICES = ("kmeans", "prior")
"""How a chain starts (:func:`init`): data-driven k-means clusters, or a draw from the prior."""

# Parameters are kept this far inside (0, 1): a Beta draw that rounds to 0 or 1 has an infinite
# logit, which would make the product density undefined.
_EDGE = 1e-12


class IOMMState(NamedTuple):
    """The state of one chain; the arrays have spare columns (capacity) beyond ``n_columns``.

    Attributes
    ----------
    Z : numpy.ndarray of int8, shape (N, capacity)
        Assignments; columns ``n_columns`` and beyond are zero.
    theta : numpy.ndarray, shape (capacity, D)
        Cluster parameters in (0, 1).
    logits : numpy.ndarray, shape (capacity, D)
        ``logit(theta)``, the clusters' natural parameters.
    eta : numpy.ndarray, shape (N, D)
        Each item's summed natural parameters ``Z @ logits`` (7.4).
    counts : numpy.ndarray of int64, shape (capacity,)
        Cluster sizes ``m_k``.
    n_columns : numpy.ndarray of int64, shape (1,)
        Number of columns in use (some may be empty until the end of the sweep).
    rng_state : numpy.ndarray of uint64, shape (1,)
        The kernels' splitmix64 stream.
    """

    Z: np.ndarray
    theta: np.ndarray
    logits: np.ndarray
    eta: np.ndarray
    counts: np.ndarray
    n_columns: np.ndarray
    rng_state: np.ndarray

    parameter_names = ("theta",)
    column_blanks = (("theta", 0.5), ("logits", 0.0))
    """The per-column arrays and the value of their unused rows."""

    def refresh(self, width: int) -> None:
        """Recompute ``eta`` exactly from the first ``width`` columns."""
        _summed_logits(self.Z, self.logits, width, self.eta)

    def log_likelihoods(self, X) -> np.ndarray:
        """Each item's ``log p(x_i | z_i, Theta)`` (:func:`item_log_likelihoods`)."""
        return item_log_likelihoods(X, self.eta)


class GaussianIOMMState(NamedTuple):
    """The state of one chain with Gaussian clusters (capacity as for :class:`IOMMState`).

    Attributes
    ----------
    Z : numpy.ndarray of int8, shape (N, capacity)
    mu, tau : numpy.ndarray, shape (capacity, D)
        The clusters' means and precisions.
    shift, precision : numpy.ndarray, shape (N, D)
        Each item's summed natural parameters (7.4): ``A = lambda0 mu0 + Z @ (tau mu)`` and
        ``B = lambda0 + Z @ tau``, base density included.
    counts, n_columns, rng_state : as for :class:`IOMMState`
    base : numpy.ndarray, shape (2,)
        ``(lambda0 mu0, lambda0)``, the base density's natural parameters.
    """

    Z: np.ndarray
    mu: np.ndarray
    tau: np.ndarray
    shift: np.ndarray
    precision: np.ndarray
    counts: np.ndarray
    n_columns: np.ndarray
    rng_state: np.ndarray
    base: np.ndarray

    parameter_names = ("mu", "tau")
    column_blanks = (("mu", 0.0), ("tau", 1.0))

    def refresh(self, width: int) -> None:
        """Recompute ``shift`` and ``precision`` exactly from the first ``width`` columns."""
        _summed_logits(self.Z, self.tau * self.mu, width, self.shift)
        _summed_logits(self.Z, self.tau, width, self.precision)
        np.add(self.shift, self.base[0], out=self.shift)
        np.add(self.precision, self.base[1], out=self.precision)

    def log_likelihoods(self, X) -> np.ndarray:
        """Each item's ``log p(x_i | z_i, mu, tau)`` from ``shift`` and ``precision``."""
        out = np.empty(X.shape[0])
        _gaussian_rows_log_likelihood(X, self.shift, self.precision, out)
        return out


class IOMMInfo(NamedTuple):
    """What one transition reports (``sample_stats``).

    Attributes
    ----------
    lp : float
        Log joint ``log P(Z) + log p(Theta) + log p(X | Z, Theta)`` at the new state (``P(Z)`` the
        IBP probability of the labelled matrix; without the parameter prior when ``fixed_theta``).
    new_cluster_accept : float
        Fraction of the sweep's new-cluster proposals accepted: those of the items that had a
        singleton cluster or drew new clusters (0 when there were none).
    theta_accept : float
        Fraction of the parameter proposals accepted (0 when there were none: no cluster, or
        ``fixed_theta``); Gaussian clusters: of the precision proposals (the means are drawn
        from their conditional, always accepted).
    n_clusters : int
        Number of nonzero columns of ``Z``.
    """

    lp: float
    new_cluster_accept: float
    theta_accept: float
    n_clusters: int


# ----------------------------------------------------------------------------- kernels
# The kernels multiply bounded factors of the log normaliser and take one logarithm of their
# running product only when it leaves [floor, ceiling] (a logarithm costs some twenty
# multiplications): factors in [1e-200, 1] (|logit theta| < 460) or in [1, 2] then keep the
# product a normal number.
_PRODUCT_FLOOR = 1e-100
_PRODUCT_CEILING = 1e100


@nb.njit(cache=True)
def _item_log_likelihood(x, eta):
    """``sum_d x_d eta_d - log(1 + exp(eta_d))``: one item's Bernoulli product log density.

    ``log(1 + e^t) = max(t, 0) + log(1 + e^-|t|)``; the factors ``1 + e^-|t|`` (in [1, 2]) are
    multiplied and their logarithm taken only when the product nears overflow, so a feature
    costs one exponential and no logarithm.
    """
    linear = 0.0
    product = 1.0
    log_products = 0.0
    for d in range(x.shape[0]):
        linear += x[d] * eta[d] - max(eta[d], 0.0)
        product *= 1.0 + math.exp(-abs(eta[d]))
        if product > _PRODUCT_CEILING:
            log_products += math.log(product)
            product = 1.0
    return linear - log_products - math.log(product)


@nb.njit(cache=True)
def _rows_log_likelihood(X, eta, out):
    for i in range(X.shape[0]):
        out[i] = _item_log_likelihood(X[i], eta[i])


def item_log_likelihoods(X, eta) -> np.ndarray:
    """Each item's ``log p(x_i | z_i, Theta)`` from its summed natural parameters ``eta_i``
    (7.4): ``sum_d x_id eta_id - log(1 + exp(eta_id))``, one compiled pass over ``X``.

    Examples
    --------
    >>> item_log_likelihoods(np.array([[1.0, 0.0]]), np.zeros((1, 2))).round(4).tolist()
    [-1.3863]
    """
    out = np.empty(X.shape[0])
    _rows_log_likelihood(X, eta, out)
    return out


@nb.njit(cache=True)
def _set_probabilities(eta, p, q):
    """``p = sigmoid(eta)`` and ``q = 1 - p``, each computed without cancellation."""
    for d in range(eta.shape[0]):
        e = math.exp(-abs(eta[d]))
        if eta[d] >= 0.0:
            p[d] = 1.0 / (1.0 + e)
            q[d] = e / (1.0 + e)
        else:
            p[d] = e / (1.0 + e)
            q[d] = 1.0 / (1.0 + e)


@nb.njit(cache=True)
def _flip_log_ratio(x, p, q, logits_k, shrink_k, sign):
    """``log p(x | eta + sign logits_k) - log p(x | eta)`` in O(D), without a logarithm per feature.

    With ``p = sigmoid(eta)``, ``q = 1 - p`` and a step ``delta``, the change of the log
    normaliser ``log(1 + e^(eta + delta)) - log(1 + e^eta)`` is ``log(q + p e^delta)``, written
    as ``delta + log(p + q e^-delta)`` for ``delta > 0`` so that the exponential is always
    ``shrink_k = exp(-|logits_k|)`` <= 1: every factor lies in ``[shrink_k, 1]``, no overflow, no
    cancellation. The factors are multiplied and their product's logarithm taken only when it
    nears underflow (:data:`_PRODUCT_FLOOR`): this ratio is the sampler's inner loop.
    """
    linear = 0.0
    product = 1.0
    log_products = 0.0
    for d in range(x.shape[0]):
        delta = sign * logits_k[d]
        if delta > 0.0:
            linear += (x[d] - 1.0) * delta
            product *= p[d] + q[d] * shrink_k[d]
        else:
            linear += x[d] * delta
            product *= q[d] + p[d] * shrink_k[d]
        if product < _PRODUCT_FLOOR:
            log_products += math.log(product)
            product = 1.0
    return linear - log_products - math.log(product)


@nb.njit(cache=True, inline="always")
def _metropolis_accepts(log_ratio, rng_state):
    """Metropolis-Hastings' test: a uniform is drawn only when ``log_ratio < 0``."""
    return log_ratio >= 0.0 or next_uniform(rng_state) < math.exp(log_ratio)


@nb.njit(cache=True, inline="always")
def _ibp_flip_log_odds(z, others, n_items):
    """The IBP prior odds (7.12) of flipping ``z_ik`` with ``m_-i,k = others``, in log space."""
    if z == 1:
        return math.log(n_items - others) - math.log(others)
    return math.log(others) - math.log(n_items - others)


@nb.njit(cache=True, inline="always")
def _gibbs_flip(Z, counts, i, k, z, log_odds_flip, rng_state):
    """Flip ``z_ik`` (currently ``z``) with probability ``sigmoid(log_odds_flip)``, one uniform;
    returns whether it flipped (the caller then updates the item's natural parameters)."""
    if next_uniform(rng_state) * (1.0 + math.exp(-log_odds_flip)) < 1.0:
        Z[i, k] = 1 - z
        counts[k] += 1 - 2 * z
        return True
    return False


@nb.njit(cache=True, inline="always")
def _remove_singletons(Z, counts, n_columns, i, cluster_rows, proposed):
    """Subtract from ``proposed`` the rows of ``cluster_rows`` of the clusters item ``i`` alone
    belongs to (the new-cluster move's proposal drops them); returns their number."""
    singletons = 0
    for k in range(n_columns[0]):
        if Z[i, k] == 1 and counts[k] == 1:
            singletons += 1
            for d in range(proposed.shape[0]):
                proposed[d] -= cluster_rows[k, d]
    return singletons


@nb.njit(cache=True, inline="always")
def _swap_singletons(Z, counts, n_columns, i, n_new):
    """The accepted new-cluster move's memberships: item ``i`` leaves the clusters it alone
    belongs to (compaction then removes them) and alone joins ``n_new`` new clusters in the next
    free columns; returns the first of them (their parameters are the caller's)."""
    for k in range(n_columns[0]):
        if Z[i, k] == 1 and counts[k] == 1:
            Z[i, k] = 0
            counts[k] = 0
    first = n_columns[0]
    for k in range(first, first + n_new):
        Z[i, k] = 1
        counts[k] = 1
    n_columns[0] += n_new
    return first


@nb.njit(cache=True, inline="always")
def _list_members(Z, k, members):
    """The items of cluster ``k`` into the front of ``members``; returns their number."""
    size = 0
    for i in range(Z.shape[0]):
        if Z[i, k] == 1:
            members[size] = i
            size += 1
    return size


@nb.njit(cache=True)
def _sweep_assignments(
    X, Z, logits, theta, eta, counts, n_columns, new_counts, new_theta, rng_state, proposed, free
):
    """Steps 1 of Algorithm 7.1 for every free item, in place; returns the new-cluster moves
    accepted and made (a proposal that removes no singleton and adds no cluster is the current
    state: it is neither made nor counted).

    ``new_counts[i]`` and the rows of ``new_theta`` (consumed in item order) are item ``i``'s
    proposal, drawn beforehand from the prior; the arrays have room for every proposed column.
    ``proposed`` is scratch of length D. Items with ``free[i] == 0`` keep their row of ``Z``
    (clamped, e.g. known labels; their ``new_counts`` must be 0).
    """
    n_items, n_features = X.shape
    next_new = 0
    accepted = made = 0
    # exp(-|logit theta_kd|): the clusters' parameters do not change during this sweep.
    shrink = np.empty_like(logits)
    for k in range(n_columns[0]):
        for d in range(n_features):
            shrink[k, d] = math.exp(-abs(logits[k, d]))
    p = np.empty(n_features)
    q = np.empty(n_features)
    for i in range(n_items):
        if free[i] == 0:
            continue
        x = X[i]
        eta_i = eta[i]
        _set_probabilities(eta_i, p, q)
        # Gibbs over the clusters another item uses, with the IBP odds (7.12).
        for k in range(n_columns[0]):
            z = Z[i, k]
            others = counts[k] - z
            if others == 0:
                continue  # empty, or item i's own singleton: the new-cluster move's business
            sign = 1.0 - 2.0 * z  # the flip adds the cluster's logits when z = 0
            log_odds_flip = _flip_log_ratio(x, p, q, logits[k], shrink[k], sign)
            log_odds_flip += _ibp_flip_log_odds(z, others, n_items)
            if _gibbs_flip(Z, counts, i, k, z, log_odds_flip, rng_state):
                for d in range(n_features):
                    eta_i[d] += sign * logits[k, d]
                _set_probabilities(eta_i, p, q)
        # MH: replace item i's singletons by new_counts[i] new clusters from the prior.
        proposed[:] = eta_i
        singletons = _remove_singletons(Z, counts, n_columns, i, logits, proposed)
        if singletons == 0 and new_counts[i] == 0:
            continue  # the proposal is the current state: nothing to decide or count
        made += 1
        first_new = next_new
        for _ in range(new_counts[i]):
            for d in range(n_features):
                proposed[d] += math.log(new_theta[next_new, d]) - math.log1p(
                    -new_theta[next_new, d]
                )
            next_new += 1
        log_ratio = _item_log_likelihood(x, proposed) - _item_log_likelihood(x, eta_i)
        if _metropolis_accepts(log_ratio, rng_state):
            accepted += 1
            first_column = _swap_singletons(Z, counts, n_columns, i, next_new - first_new)
            last_column = first_column + next_new - first_new
            theta[first_column:last_column] = new_theta[first_new:next_new]
            for k in range(first_column, last_column):
                for d in range(n_features):
                    logits[k, d] = math.log(theta[k, d]) - math.log1p(-theta[k, d])
                    shrink[k, d] = math.exp(-abs(logits[k, d]))
            eta_i[:] = proposed
    return accepted, made


@nb.njit(cache=True)
def _sweep_parameters(X, Z, logits, theta, eta, n_columns, proposals, omega, a, b, rng_state):
    """Step 2 of Algorithm 7.1: MH on every ``theta_kd`` with the Beta proposal (7.13), in place.

    ``proposals[k, d] ~ Beta(omega theta_kd, omega (1 - theta_kd))`` drawn beforehand (each
    depends only on its own current value, which no other update changes). Returns the number
    accepted. O(N K D).

    ``theta_kd`` reaches only column ``d`` of its members' ``eta``, so the D proposals of a
    cluster are independent: their likelihood ratios are accumulated together in one pass over
    the members' rows (contiguous memory), then decided in feature order. A member's change of
    log normaliser ``log(1 + e^(t + s)) - log(1 + e^t)`` is ``max(s, 0)`` plus the logarithm of a
    factor in ``[exp(-|s|) / 2, 1]`` (:func:`_normaliser_factor`); the factors are multiplied
    and their logarithm taken only near underflow, one exponential per member and feature.
    """
    n_items, n_features = X.shape
    accepted = 0
    members = np.empty(n_items, dtype=np.int64)
    step_logit = np.empty(n_features)
    scale = np.empty(n_features)
    log_ratio = np.empty(n_features)
    product = np.empty(n_features)
    accept = np.zeros(n_features, dtype=np.bool_)
    for k in range(n_columns[0]):
        # Only the cluster's members see theta_kd: list them once for all D features.
        size = _list_members(Z, k, members)
        for d in range(n_features):
            new = proposals[k, d]
            step = 0.0
            if _EDGE <= new <= 1.0 - _EDGE:
                step = (math.log(new) - math.log1p(-new)) - logits[k, d]
            step_logit[d] = step
            scale[d] = math.exp(-abs(step))
            log_ratio[d] = -size * max(step, 0.0)
            product[d] = 1.0
        for j in range(size):
            x_i, eta_i = X[members[j]], eta[members[j]]
            for d in range(n_features):
                log_ratio[d] += x_i[d] * step_logit[d]
                product[d] *= _normaliser_factor(eta_i[d], step_logit[d], scale[d])
                if product[d] < _PRODUCT_FLOOR:
                    log_ratio[d] -= math.log(product[d])
                    product[d] = 1.0
        for d in range(n_features):
            accept[d] = False
            old = theta[k, d]
            new = proposals[k, d]
            if not (_EDGE <= new <= 1.0 - _EDGE):
                continue  # rounded to the edge: an infinite logit, treated as zero density
            ratio = log_ratio[d] - math.log(product[d])
            # Beta(a, b) prior ratio
            ratio += (a - 1.0) * (math.log(new) - math.log(old))
            ratio += (b - 1.0) * (math.log1p(-new) - math.log1p(-old))
            # T(old | new) / T(new | old), T(y | x) = Beta(y; omega x, omega (1 - x))
            ratio += _log_beta_density(old, omega * new, omega * (1.0 - new))
            ratio -= _log_beta_density(new, omega * old, omega * (1.0 - old))
            if _metropolis_accepts(ratio, rng_state):
                accepted += 1
                accept[d] = True
                theta[k, d] = new
                logits[k, d] += step_logit[d]
        for j in range(size):
            eta_i = eta[members[j]]
            for d in range(n_features):
                if accept[d]:
                    eta_i[d] += step_logit[d]
    return accepted


@nb.njit(cache=True, inline="always")
def _normaliser_factor(t, s, scale):
    """``exp(log(1 + e^(t + s)) - log(1 + e^t) - max(s, 0))``, in ``[scale / 2, 1]``, with
    ``scale = exp(-|s|)``: one exponential, no overflow."""
    e = math.exp(-abs(t))
    if s > 0.0:
        numerator = e * scale + 1.0 if t > 0.0 else scale + e
    else:
        numerator = e + scale if t > 0.0 else 1.0 + e * scale
    return numerator / (1.0 + e)


@nb.njit(cache=True)
def _log_beta_density(y, p, q):
    return (
        (p - 1.0) * math.log(y)
        + (q - 1.0) * math.log1p(-y)
        - (math.lgamma(p) + math.lgamma(q) - math.lgamma(p + q))
    )


# -------------------------------------------------------------- Gaussian clusters' kernels
_LOG_2PI = math.log(2.0 * math.pi)


@nb.njit(cache=True)
def _gaussian_item_log_likelihood(x, shift, precision):
    """``sum_d log N(x_d; A_d / B_d, 1 / B_d)`` from the summed natural parameters ``A, B``."""
    total = 0.0
    for d in range(x.shape[0]):
        b = precision[d]
        total += 0.5 * (math.log(b) - _LOG_2PI - b * x[d] * x[d]) + shift[d] * (
            x[d] - 0.5 * shift[d] / b
        )
    return total


@nb.njit(cache=True)
def _gaussian_rows_log_likelihood(X, shift, precision, out):
    for i in range(X.shape[0]):
        out[i] = _gaussian_item_log_likelihood(X[i], shift[i], precision[i])


@nb.njit(cache=True)
def _gaussian_flip_log_ratio(x, shift, precision, tau_k, weighted_k, sign):
    """``log p(x | A + sign tau_k mu_k, B + sign tau_k) - log p(x | A, B)`` in O(D).

    The log-determinant's ratios ``B'_d / B_d`` are multiplied and their logarithm taken only
    when the product leaves ``[floor, ceiling]``, as for the Bernoulli flip.
    """
    linear = 0.0
    product = 1.0
    log_products = 0.0
    for d in range(x.shape[0]):
        step_shift = sign * weighted_k[d]
        step_precision = sign * tau_k[d]
        moved_shift = shift[d] + step_shift
        moved_precision = precision[d] + step_precision
        linear += x[d] * (step_shift - 0.5 * step_precision * x[d]) - 0.5 * (
            moved_shift * moved_shift / moved_precision - shift[d] * shift[d] / precision[d]
        )
        product *= moved_precision / precision[d]
        if product < _PRODUCT_FLOOR or product > _PRODUCT_CEILING:
            log_products += math.log(product)
            product = 1.0
    return linear + 0.5 * (log_products + math.log(product))


@nb.njit(cache=True)
def _sweep_assignments_gaussian(
    X, Z, mu, tau, shift, precision, counts, n_columns, new_counts, new_mu, new_tau, rng_state,
    proposed_shift, proposed_precision, free,
):  # fmt: skip
    """Step 1 of Algorithm 7.1 with Gaussian clusters, in place: as
    :func:`_sweep_assignments`, a flip of ``z_ik`` adding or removing ``tau_k mu_k`` and
    ``tau_k`` from the item's natural parameters (7.5); new clusters' ``(mu, tau)`` are the rows
    of ``new_mu`` and ``new_tau`` (drawn from the prior). Returns the new-cluster moves accepted
    and made."""
    n_items, n_features = X.shape
    next_new = 0
    accepted = made = 0
    weighted = np.empty_like(mu)  # tau_k mu_k, fixed during the sweep
    for k in range(n_columns[0]):
        for d in range(n_features):
            weighted[k, d] = tau[k, d] * mu[k, d]
    for i in range(n_items):
        if free[i] == 0:
            continue
        x, shift_i, precision_i = X[i], shift[i], precision[i]
        for k in range(n_columns[0]):
            z = Z[i, k]
            others = counts[k] - z
            if others == 0:
                continue  # empty, or item i's own singleton: the new-cluster move's business
            sign = 1.0 - 2.0 * z
            log_odds_flip = _gaussian_flip_log_ratio(
                x, shift_i, precision_i, tau[k], weighted[k], sign
            )
            log_odds_flip += _ibp_flip_log_odds(z, others, n_items)
            if _gibbs_flip(Z, counts, i, k, z, log_odds_flip, rng_state):
                for d in range(n_features):
                    shift_i[d] += sign * weighted[k, d]
                    precision_i[d] += sign * tau[k, d]
        # MH: replace item i's singletons by new_counts[i] new clusters from the prior.
        proposed_shift[:] = shift_i
        proposed_precision[:] = precision_i
        singletons = _remove_singletons(Z, counts, n_columns, i, weighted, proposed_shift)
        _remove_singletons(Z, counts, n_columns, i, tau, proposed_precision)
        if singletons == 0 and new_counts[i] == 0:
            continue
        made += 1
        first_new = next_new
        for _ in range(new_counts[i]):
            for d in range(n_features):
                proposed_shift[d] += new_tau[next_new, d] * new_mu[next_new, d]
                proposed_precision[d] += new_tau[next_new, d]
            next_new += 1
        log_ratio = _gaussian_item_log_likelihood(
            x, proposed_shift, proposed_precision
        ) - _gaussian_item_log_likelihood(x, shift_i, precision_i)
        if _metropolis_accepts(log_ratio, rng_state):
            accepted += 1
            first_column = _swap_singletons(Z, counts, n_columns, i, next_new - first_new)
            last_column = first_column + next_new - first_new
            mu[first_column:last_column] = new_mu[first_new:next_new]
            tau[first_column:last_column] = new_tau[first_new:next_new]
            for k in range(first_column, last_column):
                for d in range(n_features):
                    weighted[k, d] = tau[k, d] * mu[k, d]
            shift_i[:] = proposed_shift
            precision_i[:] = proposed_precision
    return accepted, made


@nb.njit(cache=True)
def _sweep_parameters_gaussian(
    X, Z, mu, tau, shift, precision, n_columns, mean_normals, log_steps, mu0, kappa0, gamma_a,
    gamma_b, rng_state,
):  # fmt: skip
    """Step 2 of Algorithm 7.1 with Gaussian clusters, in place; returns the precision
    proposals accepted.

    ``mu_kd`` is drawn from its conditional: with ``tau`` fixed a member's log density is
    quadratic in ``mu_kd`` (its natural parameter ``A_id = A_-k + tau_kd mu_kd``), so with the
    prior ``N(mu0, 1 / (kappa0 tau_kd))`` the conditional is Gaussian with precision ``kappa0
    tau + sum_i tau^2 / B_id`` and precision-weighted mean ``kappa0 tau mu0 + sum_i tau (x_id -
    A_-k,id / B_id)`` (``mean_normals`` its standard normal draws). ``tau_kd`` has no conjugate
    conditional (the members' log-determinants): Metropolis-Hastings with the log-normal random
    walk ``tau' = tau exp(log_steps[k, d])``, accepted with the ratio of likelihoods, Gamma and
    Normal prior densities and the walk's Jacobian ``tau' / tau``.
    """
    n_items, n_features = X.shape
    accepted = 0
    members = np.empty(n_items, dtype=np.int64)
    for k in range(n_columns[0]):
        size = _list_members(Z, k, members)
        for d in range(n_features):
            t, m = tau[k, d], mu[k, d]
            mean_precision = kappa0 * t
            mean_shift = kappa0 * t * mu0
            for j in range(size):
                i = members[j]
                mean_precision += t * t / precision[i, d]
                mean_shift += t * (X[i, d] - (shift[i, d] - t * m) / precision[i, d])
            new_m = mean_shift / mean_precision + mean_normals[k, d] / math.sqrt(mean_precision)
            for j in range(size):
                shift[members[j], d] += t * (new_m - m)
            mu[k, d] = new_m
            m = new_m
            log_step = log_steps[k, d]
            change = t * math.exp(log_step) - t
            log_ratio = 0.0
            for j in range(size):
                i = members[j]
                a, b, x = shift[i, d], precision[i, d], X[i, d]
                moved_a, moved_b = a + change * m, b + change
                log_ratio += 0.5 * math.log(moved_b / b) + change * x * (m - 0.5 * x)
                log_ratio -= 0.5 * (moved_a * moved_a / moved_b - a * a / b)
            # Gamma(gamma_a, gamma_b) and N(mu; mu0, 1 / (kappa0 tau)) priors, then the Jacobian
            log_ratio += (gamma_a - 1.0) * log_step - gamma_b * change
            log_ratio += 0.5 * log_step - 0.5 * kappa0 * change * (m - mu0) ** 2
            log_ratio += log_step
            if _metropolis_accepts(log_ratio, rng_state):
                accepted += 1
                tau[k, d] = t + change
                for j in range(size):
                    shift[members[j], d] += change * m
                    precision[members[j], d] += change
    return accepted


# ----------------------------------------------------------------------- pure functions
def _draw_prior_theta(rng, model, n_columns, n_features, fixed_theta):
    if fixed_theta is not None:
        return np.tile(fixed_theta, (n_columns, 1))
    return np.clip(rng.beta(model.a, model.b, size=(n_columns, n_features)), _EDGE, 1 - _EDGE)


def _with_capacity(state, needed: int):
    """``state`` with at least ``needed`` columns of room (arrays replaced only to grow)."""
    capacity = state.Z.shape[1]
    if needed <= capacity:
        return state
    grown = max(needed, 2 * capacity)
    Z = np.zeros((state.Z.shape[0], grown), dtype=np.int8)
    Z[:, :capacity] = state.Z
    counts = np.zeros(grown, dtype=np.int64)
    counts[:capacity] = state.counts
    columns = {}
    for name, blank in state.column_blanks:
        columns[name] = np.full((grown, getattr(state, name).shape[1]), blank)
        columns[name][:capacity] = getattr(state, name)
    return state._replace(Z=Z, counts=counts, **columns)


@nb.njit(cache=True)
def _summed_logits(Z, logits, width, eta):
    """``eta = Z[:, :width] @ logits[:width]`` in place, summing only the members' rows."""
    for i in range(Z.shape[0]):
        eta_i = eta[i]
        eta_i[:] = 0.0
        for k in range(width):
            if Z[i, k] == 1:
                for d in range(eta_i.shape[0]):
                    eta_i[d] += logits[k, d]


def _compact(state) -> None:
    """Move the nonempty columns to the front in their order, zero the rest, refresh ``eta``
    (Gaussian clusters: ``shift`` and ``precision``).

    The natural parameters are recomputed exactly from ``Z`` and the clusters' so rounding does
    not accumulate over sweeps of incremental updates.
    """
    n = int(state.n_columns[0])
    keep = np.flatnonzero(state.counts[:n] > 0)
    width = keep.size
    for array in (state.Z,):
        array[:, :width] = array[:, keep]
        array[:, width:n] = 0
    for name, blank in state.column_blanks:
        array = getattr(state, name)
        array[:width] = array[keep]
        array[width:n] = blank
    state.counts[:width] = state.counts[keep]
    state.counts[width:n] = 0
    state.n_columns[0] = width
    state.refresh(width)


def kmeans_start(
    model: OverlappingMixture, X: np.ndarray, rng, n_clusters: int | None = None,
    n_iter: int = 10, fixed_theta=None,
) -> dict[str, np.ndarray]:  # fmt: skip
    """A data-driven first state: hard k-means clusters, each item in exactly one.

    Why: from a random start in many dimensions Algorithm 7.1 loses every cluster (a cluster
    with parameters from the prior fits no item better than the empty product's fair coins) and
    its new-cluster move, whose parameters also come from the prior, almost never brings one
    back (measured: every cluster gone within 20 sweeps at ``D = 32``). Starting from clusters
    that already fit groups of items, the Gibbs flips only have to add the overlaps.

    The start: k-means++ seeds, then ``n_iter`` Lloyd iterations on the binary rows (squared
    Euclidean distance = Hamming distance), vectorised over items; empty clusters are dropped.
    Each cluster's parameters are its posterior mean under the ``Beta(a, b)`` prior, ``(a +
    s_kd) / (a + b + n_k)`` (never 0 or 1), or ``fixed_theta``.

    Parameters
    ----------
    model : OverlappingMixture
    X : numpy.ndarray of shape (N, D)
        Binary data.
    rng : numpy.random.Generator
    n_clusters : int, optional
        Clusters to seed (default ``ceil(sqrt(N))``, at most ``N``): generous, since the sampler
        empties surplus clusters easily but rarely creates a useful one.
    n_iter : int, default 10
    fixed_theta : numpy.ndarray of shape (D,), optional

    Gaussian clusters: the same Lloyd iterations on the real rows, each cluster's ``(mu,
    tau)`` from :func:`_gaussian_cluster_start`.

    Returns
    -------
    dict
        ``Z`` (N, K) int8, one 1 per row, and ``theta`` (K, D) (or ``mu`` and ``tau``).

    Examples
    --------
    >>> X = np.repeat(np.eye(3), 4, axis=0)
    >>> start = kmeans_start(OverlappingMixture(), X, np.random.default_rng(0), n_clusters=3)
    >>> start["Z"].sum(axis=0).tolist(), sorted(start["theta"].max(axis=1).round(2).tolist())
    ([4, 4, 4], [0.83, 0.83, 0.83])
    """
    n_items, n_features = X.shape
    if n_clusters is None:
        n_clusters = math.ceil(math.sqrt(n_items))
    n_clusters = min(int(n_clusters), n_items)
    squared_norms = np.einsum("ij,ij->i", X, X)
    # k-means++ seeds: each next centre drawn proportionally to the squared distance to the
    # nearest centre chosen so far (a loop over clusters, not items).
    centres = np.empty((n_clusters, n_features))
    centres[0] = X[rng.integers(n_items)]
    nearest = squared_norms - 2 * X @ centres[0] + centres[0] @ centres[0]
    for k in range(1, n_clusters):
        weights = np.maximum(nearest, 0.0)
        total = weights.sum()
        pick = rng.choice(n_items, p=weights / total) if total > 0 else rng.integers(n_items)
        centres[k] = X[pick]
        distance = squared_norms - 2 * X @ centres[k] + centres[k] @ centres[k]
        nearest = np.minimum(nearest, distance)
    for _ in range(n_iter):
        distances = (centres**2).sum(axis=1)[None, :] - 2 * X @ centres.T
        labels = np.argmin(distances, axis=1)
        one_hot = np.zeros((n_items, n_clusters))
        one_hot[np.arange(n_items), labels] = 1.0
        sizes = one_hot.sum(axis=0)
        occupied = sizes > 0
        centres[occupied] = (one_hot.T @ X)[occupied] / sizes[occupied, None]
    used = np.flatnonzero(np.bincount(labels, minlength=n_clusters) > 0)
    Z = (labels[:, None] == used[None, :]).astype(np.int8)
    if model.gaussian:
        return {"Z": Z, **_gaussian_cluster_start(model, X, Z, fixed_theta)}
    if fixed_theta is not None:
        theta = np.tile(fixed_theta, (used.size, 1))
    else:
        ones = Z.T.astype(np.float64) @ X
        theta = (model.a + ones) / (model.a + model.b + Z.sum(axis=0)[:, None])
    return {"Z": Z, "theta": theta}


def _gaussian_cluster_start(model: OverlappingMixture, X, Z, fixed=None) -> dict:
    """Each k-means cluster's ``(mu, tau)``: the posterior means of the Normal-Gamma prior
    given its items (as if they belonged to it alone), or the ``fixed`` ones."""
    if fixed is not None:
        return {name: np.tile(fixed[name], (Z.shape[1], 1)) for name in ("mu", "tau")}
    members = Z.T.astype(np.float64)
    sizes = members.sum(axis=1)[:, None]
    means = members @ X / sizes
    spread = members @ X**2 - sizes * means**2
    kappa = model.kappa0 + sizes
    mu = (model.kappa0 * model.mu0 + sizes * means) / kappa
    rate = (
        model.gamma_b + 0.5 * spread + 0.5 * model.kappa0 * sizes * (means - model.mu0) ** 2 / kappa
    )
    return {"mu": mu, "tau": (model.gamma_a + 0.5 * sizes) / rate}


def _draw_prior_clusters(rng, model, n_columns, n_features, fixed=None) -> dict:
    """``n_columns`` clusters' parameters from the prior (or all at ``fixed``)."""
    if not model.gaussian:
        return {"theta": _draw_prior_theta(rng, model, n_columns, n_features, fixed)}
    if fixed is not None:
        return {name: np.tile(fixed[name], (n_columns, 1)) for name in ("mu", "tau")}
    return model.draw_cluster_parameters(rng, n_columns, n_features)


def _init_gaussian(model, X, rng, fixed=None, initial=None) -> GaussianIOMMState:
    """A Gaussian chain's first state (``initial`` or a prior draw; see :func:`init`)."""
    n_items, n_features = X.shape
    if initial is None:
        start_Z = model.prior.draw(n_items, random_state=rng)
        initial = {
            "Z": start_Z,
            **_draw_prior_clusters(rng, model, start_Z.shape[1], n_features, fixed),
        }
    start_Z = np.asarray(initial["Z"], dtype=np.int8)
    diagonal_gaussian_log_likelihood(
        start_Z, initial["mu"], initial["tau"], X, model.base_precision, model.mu0
    )  # checks shapes, binary Z, finite mu, tau > 0
    width = start_Z.shape[1]
    capacity = max(8, 2 * width)
    Z = np.zeros((n_items, capacity), dtype=np.int8)
    Z[:, :width] = start_Z
    columns = {}
    for name, blank in GaussianIOMMState.column_blanks:
        columns[name] = np.full((capacity, n_features), blank)
        columns[name][:width] = initial[name]
    counts = np.zeros(capacity, dtype=np.int64)
    counts[:width] = start_Z.sum(axis=0)
    state = GaussianIOMMState(
        Z=Z,
        shift=np.zeros((n_items, n_features)),
        precision=np.zeros((n_items, n_features)),
        counts=counts,
        n_columns=np.array([width], dtype=np.int64),
        rng_state=splitmix_seeds(rng, 1),
        base=np.array([model.base_precision * model.mu0, model.base_precision]),
        **columns,
    )
    _compact(state)
    return state


def init(
    model: OverlappingMixture, X: np.ndarray, rng, fixed_theta=None, initial=None,
    start: str = "prior", start_clusters: int | None = None,
) -> IOMMState:  # fmt: skip
    """A chain's first state.

    Parameters
    ----------
    model : OverlappingMixture
    X : numpy.ndarray of shape (N, D)
        Checked binary data as floats.
    rng : numpy.random.Generator
    fixed_theta : numpy.ndarray of shape (D,), optional
        Parameters shared by every cluster; the parameter move is then skipped. Gaussian
        clusters: ``{"mu": (D,), "tau": (D,)}``.
    initial : dict, optional
        ``{"Z": (N, K), "theta": (K, D)}`` (Gaussian: ``mu`` and ``tau``): start there instead
        (e.g. a previous fit or, for a benchmark, the truth).
    start : {"prior", "kmeans"}, default "prior"
        Without ``initial``: ``Z`` from the IBP prior and parameters from theirs (what the
        exactness tests need: a start independent of the data), or :func:`kmeans_start`, the
        data-driven start real fits need.
    start_clusters : int, optional
        ``n_clusters`` of :func:`kmeans_start`.

    Returns
    -------
    IOMMState or GaussianIOMMState
    """
    n_items, n_features = X.shape
    if initial is None and start == "kmeans":
        initial = kmeans_start(model, X, rng, start_clusters, fixed_theta=fixed_theta)
    if model.gaussian:
        return _init_gaussian(model, X, rng, fixed_theta, initial)
    if initial is None:
        start_Z = model.prior.draw(n_items, random_state=rng)
        start_theta = _draw_prior_theta(rng, model, start_Z.shape[1], n_features, fixed_theta)
    else:
        start_Z = np.asarray(initial["Z"], dtype=np.int8)
        start_theta = np.asarray(initial["theta"], dtype=np.float64)
        bernoulli_log_likelihood(
            start_Z, start_theta, X
        )  # checks shapes, binary Z, theta in (0, 1)
    width = start_Z.shape[1]
    capacity = max(8, 2 * width)
    Z = np.zeros((n_items, capacity), dtype=np.int8)
    Z[:, :width] = start_Z
    theta = np.full((capacity, n_features), 0.5)
    theta[:width] = start_theta
    logits = np.zeros((capacity, n_features))
    logits[:width] = logit(theta[:width])
    counts = np.zeros(capacity, dtype=np.int64)
    counts[:width] = start_Z.sum(axis=0)
    state = IOMMState(
        Z=Z,
        theta=theta,
        logits=logits,
        eta=np.zeros((n_items, n_features)),
        counts=counts,
        n_columns=np.array([width], dtype=np.int64),
        rng_state=splitmix_seeds(rng, 1),
    )
    _compact(state)
    return state


def advance(
    state: IOMMState, rng, model: OverlappingMixture, X, omega: float = 20.0, fixed_theta=None,
    free=None,
) -> tuple[IOMMState, int, int, int]:  # fmt: skip
    """One iteration of Algorithm 7.1 without its info; returns the state and the MH counts.

    ``free`` (int8, one per item; None: all 1) marks the items whose memberships are sampled;
    the others keep theirs (the clamped rows of a semi-supervised fit).

    Returns
    -------
    (IOMMState, new-cluster acceptances, new-cluster proposals, parameter acceptances,
    parameter proposals)
    """
    n_items, n_features = X.shape
    new_counts = rng.poisson(model.prior.new_columns_rate(n_items), size=n_items)
    if free is None:
        free = np.ones(n_items, dtype=np.int8)
    else:
        new_counts[free == 0] = 0
    n_new = int(new_counts.sum())
    if model.gaussian:
        return _advance_gaussian(state, rng, model, X, omega, fixed_theta, free, new_counts)
    new_theta = _draw_prior_theta(rng, model, n_new, n_features, fixed_theta)
    state = _with_capacity(state, int(state.n_columns[0]) + n_new)
    new_accepted, new_proposed = _sweep_assignments(
        X,
        state.Z,
        state.logits,
        state.theta,
        state.eta,
        state.counts,
        state.n_columns,
        new_counts,
        new_theta.reshape(n_new, n_features),
        state.rng_state,
        np.empty(n_features),
        free,
    )
    _compact(state)
    theta_accepted = theta_proposed = 0
    if fixed_theta is None:
        width = int(state.n_columns[0])
        current = state.theta[:width]
        proposals = rng.beta(omega * current, omega * (1.0 - current))
        theta_proposed = proposals.size
        theta_accepted = _sweep_parameters(
            X,
            state.Z,
            state.logits,
            state.theta,
            state.eta,
            state.n_columns,
            proposals,
            float(omega),
            model.a,
            model.b,
            state.rng_state,
        )
    return state, new_accepted, new_proposed, theta_accepted, theta_proposed


def _advance_gaussian(state, rng, model, X, omega, fixed, free, new_counts):
    """:func:`advance` with Gaussian clusters; ``log tau`` proposals have variance
    ``1 / omega``."""
    n_new, n_features = int(new_counts.sum()), X.shape[1]
    new = _draw_prior_clusters(rng, model, n_new, n_features, fixed)
    state = _with_capacity(state, int(state.n_columns[0]) + n_new)
    new_accepted, new_proposed = _sweep_assignments_gaussian(
        X, state.Z, state.mu, state.tau, state.shift, state.precision, state.counts,
        state.n_columns, new_counts, new["mu"].reshape(n_new, n_features),
        new["tau"].reshape(n_new, n_features), state.rng_state, np.empty(n_features),
        np.empty(n_features), free,
    )  # fmt: skip
    _compact(state)
    tau_accepted = tau_proposed = 0
    if fixed is None:
        shape = (int(state.n_columns[0]), n_features)
        mean_normals = rng.standard_normal(shape)
        log_steps = rng.standard_normal(shape) / math.sqrt(omega)
        tau_proposed = log_steps.size
        tau_accepted = _sweep_parameters_gaussian(
            X, state.Z, state.mu, state.tau, state.shift, state.precision, state.n_columns,
            mean_normals, log_steps, model.mu0, model.kappa0, model.gamma_a, model.gamma_b,
            state.rng_state,
        )  # fmt: skip
    return state, new_accepted, new_proposed, tau_accepted, tau_proposed


def log_joint(state: IOMMState, model: OverlappingMixture, X, fixed_theta=None) -> float:
    """``log P(Z) + log p(Theta) + log p(X | Z, Theta)`` of a compacted state (see
    :class:`IOMMInfo`)."""
    width = int(state.n_columns[0])
    if model.gaussian:
        Z = state.Z[:, :width]
        loglik = float(np.sum(state.log_likelihoods(X)))
        if fixed_theta is not None:
            return model.prior.log_prob_matrix(Z) + loglik
        return model.ibp_log_prior(draw(state)) + loglik
    Z, theta = state.Z[:, :width], state.theta[:width]
    loglik = float(np.sum(item_log_likelihoods(X, state.eta)))
    if fixed_theta is not None:
        return model.prior.log_prob_matrix(Z) + loglik
    prior_theta = (model.a - 1) * np.log(theta) + (model.b - 1) * np.log1p(-theta)
    return (
        model.prior.log_prob_matrix(Z)
        + float(np.sum(prior_theta))
        - theta.size * float(betaln(model.a, model.b))
        + loglik
    )


def step(
    state: IOMMState, rng, model: OverlappingMixture, X, omega: float = 20.0, fixed_theta=None,
    free=None,
) -> tuple[IOMMState, IOMMInfo]:  # fmt: skip
    """One iteration of Algorithm 7.1 and its :class:`IOMMInfo` (``free`` as for
    :func:`advance`)."""
    state, new_accepted, new_proposed, theta_accepted, theta_proposed = advance(
        state, rng, model, X, omega, fixed_theta, free
    )
    info = IOMMInfo(
        lp=log_joint(state, model, X, fixed_theta),
        new_cluster_accept=new_accepted / new_proposed if new_proposed else 0.0,
        theta_accept=theta_accepted / theta_proposed if theta_proposed else 0.0,
        n_clusters=int(state.n_columns[0]),
    )
    return state, info


def draw(state, rng=None) -> dict[str, np.ndarray]:
    """The posterior variables of a kept draw: ``Z`` (N, K_+) and ``theta`` (K_+, D) (Gaussian
    clusters: ``mu`` and ``tau``)."""
    width = int(state.n_columns[0])
    out = {"Z": state.Z[:, :width].copy()}
    for name in state.parameter_names:
        out[name] = getattr(state, name)[:width].copy()
    return out


def _draw_with_likelihood(X):
    """:func:`draw` plus each item's log-likelihood ``x`` from the kept ``eta`` (O(N D))."""

    def draw_scored(state, rng=None):
        out = draw(state, rng)
        out["x"] = state.log_likelihoods(X)
        return out

    return draw_scored


def _check_fixed_gaussian(fixed, n_features: int) -> dict:
    """``{"mu": (D,), "tau": (D,)}`` as float arrays, ``mu`` finite and ``tau`` positive."""
    message = (
        f'fixed_theta of Gaussian clusters must be {{"mu": ..., "tau": ...}}, each {n_features} '
        f"finite numbers (tau > 0), got {fixed!r}"
    )
    if not hasattr(fixed, "keys") or set(fixed.keys()) != {"mu", "tau"}:
        raise ValueError(message)
    out = {name: np.asarray(fixed[name], dtype=np.float64) for name in ("mu", "tau")}
    if any(
        value.shape != (n_features,) or not np.all(np.isfinite(value)) for value in out.values()
    ):
        raise ValueError(message)
    if not np.all(out["tau"] > 0):
        raise ValueError(message)
    return out


def sample(
    model: OverlappingMixture,
    data,
    *,
    omega: float = 20.0,
    fixed_theta=None,
    start: str = "kmeans",
    start_clusters: int | None = None,
    initial=None,
    clamped=None,
    log_likelihood: bool = False,
    **chain_options,
):
    """Run Algorithm 7.1 on binary data through the chain runner.

    Parameters
    ----------
    model : OverlappingMixture
    data : Features or array-like of shape (N, D)
        Binary data (a non-binary entry is refused by name); real data for Gaussian clusters.
    omega : float, default 20.0
        Concentration of the Beta proposal (7.13): larger is a narrower random walk (Gaussian
        clusters: ``log tau`` steps of variance ``1 / omega``).
    fixed_theta : array-like of shape (D,), optional
        Known parameters shared by every cluster: sample ``Z | X, theta`` only (Gaussian
        clusters: ``{"mu": (D,), "tau": (D,)}``).
    start : {"kmeans", "prior"}, default "kmeans"
        Each chain's first state: :func:`kmeans_start` (data-driven clusters, what real data
        need) or a draw from the prior (see :func:`init`).
    start_clusters : int, optional
        Clusters of the k-means start (default ``ceil(sqrt(N))``).
    initial : dict, optional
        ``{"Z": (N, K), "theta": (K, D)}``: every chain starts there (overrides ``start``).
    clamped : array-like of bool, shape (N,), optional
        Items whose rows of ``initial["Z"]`` stay fixed (semi-supervised fits: known labels,
        thesis section 7.6); the other items' memberships are sampled given them.
    log_likelihood : bool, default False
        Also keep each item's log-likelihood ``x`` (chains, draws, N), read from the state's
        summed natural parameters at no extra sweep.
    **chain_options
        ``chains``, ``draws``, ``tune``, ``thin``, ``random_state`` and ``progressbar``, with
        the defaults of :func:`latentzoo.inference.mcmc.run_chains`.

    Returns
    -------
    posterior : dict
        ``Z`` (chains, draws, N, K_max) and ``theta`` (chains, draws, K_max, D), padded with -1 and
        NaN beyond each draw's own width (``Z_shape``, ``theta_shape``); ``x`` with
        ``log_likelihood``.
    sample_stats : dict
        The :class:`IOMMInfo` fields, (chains, draws).
    seconds : float
    """
    X = model.data_matrix(data)
    check_positive("omega", omega)
    if start not in START_CHOICES:
        raise ValueError(f"start must be one of {START_CHOICES}, got {start!r}")
    if start_clusters is not None:
        check_integer("start_clusters", start_clusters)
    if fixed_theta is not None and model.gaussian:
        fixed_theta = _check_fixed_gaussian(fixed_theta, X.shape[1])
    elif fixed_theta is not None:
        fixed_theta = np.asarray(fixed_theta, dtype=np.float64)
        if fixed_theta.shape != (X.shape[1],) or not np.all((fixed_theta > 0) & (fixed_theta < 1)):
            raise ValueError(
                f"fixed_theta must be {X.shape[1]} numbers in (0, 1), one per feature, "
                f"got {fixed_theta!r}"
            )

    free = None
    if clamped is not None:
        clamped = np.asarray(clamped)
        if clamped.shape != (X.shape[0],) or clamped.dtype != bool:
            raise ValueError(
                f"clamped must be {X.shape[0]} booleans, one per item, got {clamped.dtype} "
                f"of shape {clamped.shape}"
            )
        if initial is None:
            raise ValueError("clamped needs initial: the fixed rows of Z and their clusters' theta")
        free = (~clamped).astype(np.int8)

    def _advance(state, rng):
        return advance(state, rng, model, X, omega, fixed_theta, free)[0]

    return run_chains(
        lambda rng: init(model, X, rng, fixed_theta, initial, start, start_clusters),
        lambda state, rng: step(state, rng, model, X, omega, fixed_theta, free),
        _draw_with_likelihood(X) if log_likelihood else draw,
        desc="IOMM",
        advance=_advance,
        **chain_options,
    )


def mcmc(model: OverlappingMixture, data, *, omega: float = 20.0, **chain_options):
    """Algorithm 7.1 as ``arviz.InferenceData``.

    Parameters
    ----------
    model : OverlappingMixture
    data : Features or array-like of shape (N, D)
        Binary data.
    omega : float, default 20.0
        As for :func:`sample`.
    **chain_options
        As for :func:`sample` (``start``, ``start_clusters``, ``initial`` and the chain
        runner's options), but ``draws`` is 500 and ``tune`` 200 by default.

    Returns
    -------
    arviz.InferenceData
        ``posterior``: ``Z`` (item, cluster) and ``theta`` (cluster, feature), padded beyond each
        draw's width with -1 (no cluster; ``Z_shape`` and ``theta_shape`` hold every draw's own
        shape), ``n_memberships`` (item), the diagonal of ``U = Z Z^T``, and ``loglik``, the
        log-likelihood of the data at each draw.
        ``sample_stats``: the :class:`IOMMInfo` fields. ``log_likelihood``: ``x`` (item).
        ``observed_data``: ``x`` (item, feature). The labels of the clusters are arbitrary and
        change along a chain; summarise through ``U`` (:func:`shared_clusters`).

    Examples
    --------
    >>> from latentzoo.models.iomm import OverlappingMixture
    >>> model = OverlappingMixture(alpha=1.0)
    >>> data, _ = model.simulate(0, n_items=6, n_features=4)
    >>> idata = mcmc(model, data, chains=2, draws=5, tune=2, random_state=0, progressbar=False)
    >>> idata.log_likelihood["x"].shape, shared_clusters(idata).shape
    ((2, 5, 6), (6, 6))
    """
    import xarray as xr

    from latentzoo.inference.mcmc import record_convergence, to_inference_data
    from latentzoo.models.base import model_attrs

    data = model.check_data(data)
    X = model.data_matrix(data)
    chain_options = {"draws": 500, "tune": 200, **chain_options}
    posterior, stats, seconds = sample(model, X, omega=omega, log_likelihood=True, **chain_options)
    log_likelihood = {"x": posterior.pop("x")}
    Z = posterior["Z"]
    posterior["n_memberships"] = np.where(Z < 0, 0, Z).sum(axis=-1).astype(np.int64)
    posterior["loglik"] = log_likelihood["x"].sum(axis=-1)
    # -1 marks the padding beyond a draw's width, as for Z: a finite value no theta or tau
    # takes (any mean can, so the padding of mu stays NaN).
    for name in {"theta", "tau"} & set(posterior):
        posterior[name] = np.where(np.isnan(posterior[name]), -1.0, posterior[name])
    items, features = list(data.item_names), list(data.feature_names)
    coords = {"item": items, "feature": features}
    idata = to_inference_data(
        posterior,
        sample_stats=stats,
        log_likelihood=log_likelihood,
        coords=coords,
        dims={
            "Z": ["item", "cluster"],
            "Z_shape": ["Z_axis"],
            **{f"{name}_shape": [f"{name}_axis"] for name in model.cluster_names},
            **{name: ["cluster", "feature"] for name in model.cluster_names},
            "n_memberships": ["item"],
            "x": ["item"],
        },
        seconds=seconds,
        method="mcmc",
    )
    observed_x = X if model.gaussian else X.astype(np.int8)
    observed = xr.Dataset({"x": (("item", "feature"), observed_x)}, coords=coords)
    idata.add_groups({"observed_data": observed})
    attrs = {**model_attrs(model), "method": "mcmc", "omega": float(omega)}
    for group in idata.groups():
        idata[group].attrs.update(attrs)
    # Cluster labels switch along a chain and between chains: judge the label-free loglik.
    record_convergence(idata, label_dims=("cluster",), invariants=("loglik",))
    return idata


def shared_clusters(idata) -> np.ndarray:
    """The posterior mean of ``U = Z Z^T`` (clusters shared by each pair of items) of a fit.

    Parameters
    ----------
    idata : arviz.InferenceData
        From :func:`mcmc`.

    Returns
    -------
    numpy.ndarray of shape (N, N)
        Averaged over all chains and draws; the padding of narrower draws counts as zeros.
    """
    Z = np.asarray(idata.posterior["Z"].values)
    Z = np.where(Z < 0, 0, Z).astype(np.float64)
    Z = Z.reshape(-1, *Z.shape[2:])
    return np.einsum("sik,sjk->ij", Z, Z) / Z.shape[0]


# ------------------------------------------------------------------------ exact validation
EXACT_MAX_COLUMNS = 12
"""Widest left-ordered class enumerated for three items: ``P(K_+ > 12)`` under ``IBP(alpha <=
1.2)`` with three items is below 1e-6."""


def lof_key(Z, max_columns: int = EXACT_MAX_COLUMNS) -> np.ndarray:
    """A binary matrix as the row of :meth:`LofMatrices.keys
    <latentzoo.inference.enumeration.LofMatrices.keys>` of its left-ordered class: its width,
    then its left-ordered form padded to ``max_columns``.

    Examples
    --------
    >>> lof_key([[0, 1], [1, 1]], max_columns=3).tolist()
    [2, 1, 0, 0, 1, 1, 0]
    """
    from latentzoo.inference.enumeration import left_ordered

    lof = left_ordered(np.asarray(Z))
    n_items, width = lof.shape
    if width > max_columns:
        raise ValueError(f"Z has {width} nonzero columns, more than max_columns={max_columns}")
    key = np.zeros(1 + n_items * max_columns, dtype=np.int64)
    key[0] = width
    padded = np.zeros((n_items, max_columns), dtype=np.int64)
    padded[:, :width] = lof
    key[1:] = padded.ravel()
    return key


def exact_class_log_posterior(space, alpha: float, theta0, X, model=None) -> np.ndarray:
    """``log P([Z]) + log p(X | Z, theta0)`` of every left-ordered class, all clusters at
    ``theta0``: the unnormalised target of the sampler run with ``fixed_theta=theta0``.

    With every cluster at ``theta0`` an item's natural parameters are its number of clusters
    times ``logit(theta0)`` (7.4), so the likelihood depends on the row sums of ``Z`` only. With
    Gaussian clusters (``model`` Gaussian, ``theta0 = {"mu": (D,), "tau": (D,)}``) they are the
    base density's plus the number of clusters times ``(tau0 mu0, tau0)`` (7.5).

    Parameters
    ----------
    space : LofMatrices
        :func:`~latentzoo.inference.enumeration.lof_matrices` of the items.
    alpha : float
    theta0 : array of shape (D,), or dict
    X : array of shape (N, D)
    model : OverlappingMixture, optional
        Needed for Gaussian clusters (their base density); default Bernoulli.

    Returns
    -------
    numpy.ndarray of shape (S,)
    """
    from latentzoo.inference.enumeration import ibp_log_prior

    row_sums = space.Z.sum(axis=2).astype(float)  # (S, N): the item's number of clusters
    if model is not None and model.gaussian:
        X = np.asarray(X, dtype=float)[None]
        tau0, mu0 = (np.asarray(theta0[name], dtype=float) for name in ("tau", "mu"))
        precision = model.base_precision + row_sums[:, :, None] * tau0
        shift = model.base_precision * model.mu0 + row_sums[:, :, None] * (tau0 * mu0)
        log_density = (
            0.5 * np.log(precision / (2 * np.pi)) - 0.5 * precision * (X - shift / precision) ** 2
        )
        return ibp_log_prior(space, alpha) + log_density.sum(axis=(1, 2))
    eta = row_sums[:, :, None] * logit(np.asarray(theta0, dtype=float))[None, None, :]
    loglik = np.sum(np.asarray(X)[None] * eta - np.logaddexp(0.0, eta), axis=(1, 2))
    return ibp_log_prior(space, alpha) + loglik


# Declared once, where the Monte Carlo chi-square is (tests read iomm.NULL_DRAWS).
from latentzoo.inference.enumeration import NULL_DRAWS  # noqa: E402

EXACT_PROBLEMS = (
    # (label, X, theta0): three items, every membership pattern reachable; one problem with
    # extreme parameters (near-certain features), where a wrong likelihood ratio shows most.
    ("3 x 2, theta0 = (0.85, 0.3)", [[1, 1], [1, 0], [0, 0]], [0.85, 0.3]),
    ("3 x 3, theta0 = (0.7, 0.4, 0.9)", [[1, 0, 1], [1, 1, 1], [0, 0, 1]], [0.7, 0.4, 0.9]),
    ("3 x 2, theta0 = (0.97, 0.05)", [[1, 0], [1, 1], [0, 0]], [0.97, 0.05]),
)
"""The exact level's enumerable problems (data, fixed cluster parameters)."""

GAUSSIAN_EXACT_PROBLEMS = (
    # Gaussian clusters: real data, every cluster at (mu0, tau0); one with sharp clusters.
    (
        "3 x 2 real, mu0 = (1, -0.5), tau0 = (2, 1.5)",
        [[0.9, -1.2], [1.1, 0.3], [-0.4, 0.2]],
        {"mu": [1.0, -0.5], "tau": [2.0, 1.5]},
    ),
    (
        "3 x 1 real, mu0 = 2, tau0 = 8",
        [[2.1], [0.2], [1.8]],
        {"mu": [2.0], "tau": [8.0]},
    ),
)
"""The exact level's problems for Gaussian clusters."""


def exact_sampler_check(model, X, theta0, n_chains: int, n_sweeps: int, rng, name: str):
    """Algorithm 7.1 (its production kernels) against the enumerated class posterior.

    ``n_chains`` independent chains, each started from the prior (:func:`init`) and run
    ``n_sweeps`` sweeps of :func:`advance` with every cluster at ``theta0``; the left-ordered
    classes of their final ``Z`` against ``P([Z] | X, theta0)`` of all classes of up to
    :data:`EXACT_MAX_COLUMNS` columns (chi-square, pooled cells, Monte Carlo p-value:
    :func:`~latentzoo.inference.enumeration.frequency_test`).

    Returns
    -------
    Check
    """
    from latentzoo.inference.enumeration import frequency_test, lof_matrices, state_index

    X = np.asarray(X, dtype=np.float64)
    if model.gaussian:
        theta0 = {name: np.asarray(theta0[name], dtype=np.float64) for name in ("mu", "tau")}
    else:
        theta0 = np.asarray(theta0, dtype=np.float64)
    space = lof_matrices(X.shape[0], EXACT_MAX_COLUMNS)
    log_post = exact_class_log_posterior(space, model.alpha, theta0, X, model)
    keys = np.empty((n_chains, space.keys().shape[1]), dtype=np.int64)
    for chain in range(n_chains):
        state = init(model, X, rng, theta0)
        for _ in range(n_sweeps):
            state = advance(state, rng, model, X, 20.0, theta0)[0]
        keys[chain] = lof_key(draw(state)["Z"])
    return frequency_test(
        log_post, state_index(space.keys(), keys), name=name,
        null_draws=NULL_DRAWS, random_state=rng,
    )  # fmt: skip


def culinary_check(alpha: float, n_items: int, n_draws: int, rng):
    """The IBP's exchangeable class probability against culinary-process frequencies.

    ``n_draws`` matrices of the culinary process
    (:meth:`~latentzoo.models.ibp.IndianBuffetProcess.draw`), their left-ordered classes against
    ``P([Z])`` (Griffiths & Ghahramani 2005, eq. (14); thesis section 2.3.2) of every class of up
    to :data:`EXACT_MAX_COLUMNS` columns.

    Returns
    -------
    Check
    """
    from latentzoo.inference.enumeration import (
        frequency_test,
        ibp_log_prior,
        lof_matrices,
        state_index,
    )
    from latentzoo.models.ibp import IndianBuffetProcess

    prior = IndianBuffetProcess(alpha)
    space = lof_matrices(n_items, EXACT_MAX_COLUMNS)
    keys = np.stack([lof_key(prior.draw(n_items, random_state=rng)) for _ in range(n_draws)])
    name = f"IBP(alpha={alpha:g}), {n_items} items: culinary frequencies = P([Z])"
    return frequency_test(
        ibp_log_prior(space, alpha), state_index(space.keys(), keys), name=name,
        null_draws=NULL_DRAWS, random_state=rng,
    )  # fmt: skip


def _exact_level(entry, recipe, model, data, settings, rng, progressbar=False):
    """Exact level: the IBP's class probability and Algorithm 7.1's sweeps against enumeration.

    ``model.alpha`` is used when it is at most 1.2 (the enumeration's width covers it), else 1.
    """
    from latentzoo.inference.compare import Comparison

    alpha = model.alpha if model.alpha <= 1.2 else 1.0
    tiny = dataclasses.replace(model, alpha=alpha)
    problems = GAUSSIAN_EXACT_PROBLEMS if model.gaussian else EXACT_PROBLEMS
    n_chains, n_sweeps = settings.exact_chains // 2, 15
    checks = [culinary_check(alpha, 3, settings.exact_chains, rng)]
    for label, X, theta0 in problems:
        if progressbar:
            print(f"exact level: {label}", flush=True)
        name = f"{label}: Algorithm 7.1 final states = P([Z] | X, theta0)"
        checks.append(exact_sampler_check(tiny, X, theta0, n_chains, n_sweeps, rng, name))
    problem = (
        f"synthetic tiny data, IBP(alpha={alpha:g}): {settings.exact_chains} culinary draws of 3 "
        f"items; {len(problems)} problems with every cluster at a fixed theta0, per problem "
        f"{n_chains} independent chains x {n_sweeps} sweeps against all left-ordered classes of "
        f"up to {EXACT_MAX_COLUMNS} columns (no PyMC)"
    )
    return Comparison(checks=checks, problem=problem)


# ------------------------------------------------------------------ calibrated: Geweke
def geweke_states(model, n_items: int, n_features: int, n_runs: int, n_sweeps: int, rng):
    """Geweke's (2004) successive-conditional simulator with Algorithm 7.1.

    Each run draws ``(Z, Theta)`` from the prior and ``X`` from the likelihood, then alternates
    one sweep of every move of Algorithm 7.1 (Gibbs with (7.12), new clusters, the Beta proposal
    (7.13); Gaussian clusters: the conjugate means and the precisions' MH) with a fresh ``X ~
    p(X | Z, Theta)``: a right sampler leaves the prior invariant.

    Returns
    -------
    keys : numpy.ndarray of shape (n_runs, 1 + N * EXACT_MAX_COLUMNS)
        The left-ordered class of each run's final ``Z`` (:func:`lof_key`).
    first_theta : numpy.ndarray
        ``theta[k, 0]`` (Gaussian clusters: ``tau[k, 0]``) of each final state with a cluster,
        ``k`` a column drawn uniformly. Not column 0: the order of the columns is their history
        (empty ones removed, new ones appended), which depends on past data and hence on the
        parameters, so the oldest column's parameter is not prior-distributed (Kolmogorov-Smirnov
        p = 5e-3 over 16815 runs of correct code, against 0.99 for a uniform column).
    """
    last = model.cluster_names[-1]
    keys, first_theta = [], []
    for _ in range(n_runs):
        Z0 = model.prior.draw(n_items, random_state=rng)
        params = {"Z": Z0, **_draw_prior_clusters(rng, model, Z0.shape[1], n_features)}
        X = _fresh_data(model, params, rng)
        state = init(model, X, rng, initial=params)  # the joint's draw: (Z, Theta) made X
        for _ in range(n_sweeps):
            state = advance(state, rng, model, X, 5.0)[0]
            params = draw(state)
            X[:] = _fresh_data(model, params, rng)
        keys.append(lof_key(params["Z"]))
        if params[last].shape[0]:
            first_theta.append(params[last][rng.integers(params[last].shape[0]), 0])
    return np.array(keys), np.array(first_theta)


def _fresh_data(model, params, rng) -> np.ndarray:
    """``X ~ p(X | Z, Theta)`` as floats: Bernoulli with the product probabilities (7.7), or
    Gaussian with the product's natural parameters (7.5)."""
    from latentzoo.models.iomm import gaussian_natural_parameters, product_probabilities

    if not model.gaussian:
        probabilities = product_probabilities(params["Z"], params["theta"])
        return (rng.random(probabilities.shape) < probabilities).astype(float)
    shift, precision = gaussian_natural_parameters(
        params["Z"], params["mu"], params["tau"], model.base_precision, model.mu0
    )
    return shift / precision + rng.standard_normal(shift.shape) / np.sqrt(precision)


def geweke_checks(model, n_runs: int, n_sweeps: int, rng) -> list:
    """Geweke's joint-distribution test on three items and two features: the final classes
    against the IBP's class probabilities (chi-square, Monte Carlo p-value of
    :data:`NULL_DRAWS` samples), a parameter of a uniformly drawn column against ``Beta(a, b)``
    (Kolmogorov-Smirnov); each at level 1e-3.

    Returns
    -------
    list of Check
    """
    from scipy import stats

    from latentzoo.inference.checks import Check
    from latentzoo.inference.enumeration import (
        frequency_test,
        ibp_log_prior,
        lof_matrices,
        state_index,
    )

    n_items = 3
    space = lof_matrices(n_items, EXACT_MAX_COLUMNS)
    keys, first_theta = geweke_states(model, n_items, 2, n_runs, n_sweeps, rng)
    label = f"Geweke, {n_runs} runs x {n_sweeps} sweeps"
    classes = frequency_test(
        ibp_log_prior(space, model.alpha), state_index(space.keys(), keys),
        name=f"{label}: final classes = IBP prior", null_draws=NULL_DRAWS, random_state=rng,
    )  # fmt: skip
    classes = Check("calibrated", classes.name, classes.passed, classes.detail, classes.numbers)
    if model.gaussian:
        prior, what = stats.gamma(model.gamma_a, scale=1 / model.gamma_b), "tau = Gamma prior"
    else:
        prior, what = stats.beta(model.a, model.b), "theta = Beta(a, b) prior"
    result = stats.kstest(first_theta, prior.cdf)
    theta = Check(
        "calibrated", f"{label}: {what}", bool(result.pvalue > 1e-3),
        f"Kolmogorov-Smirnov p = {result.pvalue:.3g} (need > 0.001) over {first_theta.size} draws",
        {"p_value": float(result.pvalue)},
    )  # fmt: skip
    return [classes, theta]


def _calibrated_level(entry, recipe, model, data, settings, rng, progressbar=False):
    """Calibrated level: Geweke's joint-distribution test of every move of Algorithm 7.1."""
    from latentzoo.inference.compare import Comparison

    alpha = model.alpha if model.alpha <= 1.2 else 1.0
    tiny = dataclasses.replace(model, alpha=alpha)
    n_runs = settings.sbc_sims * 2
    if progressbar:
        print(f"calibrated level: Geweke test, {n_runs} runs", flush=True)
    clusters = (
        f"Normal-Gamma({model.mu0:g}, {model.kappa0:g}, {model.gamma_a:g}, {model.gamma_b:g})"
        if model.gaussian
        else f"Beta({model.a:g}, {model.b:g})"
    )
    problem = (
        f"synthetic: {n_runs} draws of (Z, Theta, X) from the prior, 3 items x 2 features, "
        f"IBP(alpha={alpha:g}), {clusters}; 12 sweeps of Algorithm 7.1 "
        "alternating with fresh X (Geweke 2004)"
    )
    return Comparison(checks=geweke_checks(tiny, n_runs, 12, rng), problem=problem)


def validation_recipe():
    """How :func:`latentzoo.validate` checks the IOMM (a ``ValidationRecipe``).

    exact: the IBP's exchangeable class probability against culinary frequencies, and the
    production sweeps against the enumerated class posterior with fixed parameters (the
    model's clusters: Bernoulli or Gaussian problems); density:
    the PyMC finite truncation against :meth:`OverlappingMixture.log_prior` and the likelihood;
    calibrated: Geweke's joint-distribution test of every move.
    """
    from latentzoo.inference.validation import ValidationRecipe, density_level

    return ValidationRecipe(
        checks={
            "exact": _exact_level,
            "density": density_level,
            "calibrated": _calibrated_level,
        },
        not_applicable={
            "reference": "PyMC's BinaryGibbsMetropolis on the finite truncation is another prior "
            "(K columns) and does not mix over Z at useful sizes; the exact level checks the "
            "sampler's own target",
            "optimality": "no EM (point estimator)",
            "mode-matched": "no EM modes to start PyMC and the sampler from",
        },
        small=lambda model, sizes: model,
        problems={"reference": {"n_items": 6, "n_features": 4}},
    )


# ------------------------------------------------------------------------------ the family
_OPTIONS = (
    # chains, draws, tune, thin, random_state, progressbar: those of every sampler
    *GIBBS_OPTIONS[:6],
    real("omega", 20.0, "concentration of the Beta proposal (7.13) of theta", 0, None, True),
    choice("start", "kmeans", "first state: k-means clusters or a prior draw", START_CHOICES),
    integer("start_clusters", None, "clusters of the k-means start (None: ceil(sqrt N))",
            none=True),
    anything("initial", None, "{'Z', 'theta'} every chain starts from (overrides start)"),
    anything("clamped", None, "booleans, one per item: rows of initial Z kept fixed"),
)  # fmt: skip

FAMILY = Family(
    name="iomm",
    model=OverlappingMixture,
    methods={"mcmc": Method(mcmc, _OPTIONS)},
    recipe=validation_recipe,
    sizes=("truncation",),
    dataset="movielens",
    notebook="notebooks/overlapping_partial.ipynb",
    description="infinite overlapping mixture, IBP memberships (Heller 2007, ch. 7)",
    options=(integer("k", 10, "columns of the PyMC reference's finite truncation (--k)"),),
    skipped_checks={
        "data:k_too_large": "truncation only truncates the PyMC reference's finite "
        "Beta-Bernoulli model; the IBP sampler is unbounded, so no size can exceed the data",
        "hyperparameter[mu0]": "mu0 is the Gaussian clusters' prior mean, a location: any "
        "finite number (negative, zero) is valid; NaN, inf and text are refused",
    },
)
"""The IOMM's family (listed in :mod:`latentzoo.zoo`)."""
