"""The Infinite Overlapping Mixture Model (IOMM) with multivariate Bernoulli or Gaussian clusters.

Heller (2007), chapter 7. An item may belong to several clusters at once, and its density is the
normalised product of the densities of every cluster it belongs to, (7.2):

.. math::

    p(\\mathbf{x}_i | \\mathbf{z}_i, \\Theta) = \\frac{1}{c} \\prod_k p_k(\\mathbf{x}_i |
    \\boldsymbol{\\theta}_k)^{z_{ik}}.

For exponential-family clusters (7.3) the product is in the same family with the summed natural
parameters ``sum_k z_ik phi(theta_k)`` (7.4). With multivariate Bernoulli clusters (7.6) the natural
parameter of feature ``d`` is ``logit(theta_kd)``, so item ``i``'s features are independent
Bernoulli variables with the product probability (7.7)

.. math::

    \\tilde\\theta_{id} = \\frac{\\prod_k \\theta_{kd}^{z_{ik}}}{\\prod_k (1 - \\theta_{kd})^{z_{ik}}
    + \\prod_k \\theta_{kd}^{z_{ik}}} = \\sigma\\Big(\\sum_k z_{ik} \\operatorname{logit}
    \\theta_{kd}\\Big),

logit-additive: the summed natural parameters ``eta_id = sum_k z_ik logit(theta_kd)`` are all a
sampler needs to keep per item (one flip of ``z_ik`` adds or subtracts one row of logits, O(D)).
An item in no cluster has ``eta_i = 0``, every feature a fair coin (the empty product).

The assignments ``Z`` (items x clusters) have the Indian Buffet Process prior of section 7.3
(:class:`latentzoo.models.ibp.IndianBuffetProcess`) and each cluster's parameters ``theta_kd ~
Beta(a, b)`` independently. The label-free invariant the thesis reports is ``U = Z Z^T``, the number
of clusters each pair of items shares (its diagonal the number of clusters of each item).

Gaussian clusters (7.5) (``distribution="gaussian"``) multiply the same way: precisions add and the
product's mean is the precision-weighted mean of the clusters' means. The model's clusters have
axis-aligned covariances, ``x_id ~ N(mu_kd, 1 / tau_kd)`` with the Normal-Gamma prior ``tau_kd ~
Gamma(gamma_a, gamma_b)``, ``mu_kd | tau_kd ~ N(mu0, 1 / (kappa0 tau_kd))`` of the BPM's Gaussian
clusters, so item ``i``'s features are independent with precision ``B_id = lambda0 + sum_k z_ik
tau_kd`` and mean ``A_id / B_id``, ``A_id = lambda0 mu0 + sum_k z_ik tau_kd mu_kd``
(:func:`gaussian_natural_parameters`). The thesis gives no density to an item in no Gaussian
cluster (the empty product is not normalisable) while the IBP gives such rows positive
probability; the model therefore multiplies every item's product by a broad base density
``N(mu0, 1 / lambda0)`` (``base_precision = lambda0``), the Gaussian stand-in for the improper
uniform the thesis uses in its product-of-experts comparison (section 7.4). Full covariances
(7.5) have their product parameters and likelihood here (:func:`gaussian_product_parameters`,
:func:`gaussian_log_likelihood`) but no sampler.

Examples
--------
>>> model = OverlappingMixture(alpha=1.5)
>>> data, truth = model.simulate(0, n_items=6, n_features=4)
>>> data.shape, truth["Z"].shape[0], truth["theta"].shape[1]
((6, 4), 6, 4)
>>> model.log_likelihood(truth, data).shape
(6,)
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.special import betaln, expit, gammaln, logit

from latentzoo.data import Features
from latentzoo.data.checks import as_rng, check_entries
from latentzoo.models._checks import check_integer, check_positive
from latentzoo.models._pymc_normal_gamma import (
    DEFAULT_NORMAL_GAMMA,
    NORMAL_GAMMA_FIELDS,
    check_normal_gamma_prior,
)
from latentzoo.models.base import LikelihoodHeldout, LikelihoodModel
from latentzoo.models.ibp import IndianBuffetProcess

__all__ = [
    "DISTRIBUTIONS",
    "OverlappingMixture",
    "bernoulli_log_likelihood",
    "diagonal_gaussian_log_likelihood",
    "gaussian_log_likelihood",
    "gaussian_natural_parameters",
    "gaussian_product_parameters",
    "log1pexp",
    "product_probabilities",
]


DISTRIBUTIONS = ("bernoulli", "gaussian")
"""The clusters' exponential families: binary or real features."""

_LOG_2PI = float(np.log(2 * np.pi))


def log1pexp(x):
    """``log(1 + exp(x))`` elementwise without overflow: the Bernoulli log normaliser.

    Examples
    --------
    >>> bool(np.isclose(log1pexp(0.0), np.log(2.0))), float(log1pexp(1000.0))
    (True, 1000.0)
    """
    return np.logaddexp(0.0, x)


def _binary_matrix(values, name: str) -> np.ndarray:
    """``values`` as a 2-D float array of zeros and ones, or a ``ValueError`` naming the entry."""
    values = np.asarray(values)
    if values.ndim != 2:
        raise ValueError(f"{name} must be a 2-D binary array, got shape {values.shape}")
    check_entries(values, name, binary=True)
    return values.astype(np.float64)


def _real_matrix(X) -> np.ndarray:
    """``X`` as a 2-D float array of finite entries, or a ``ValueError`` naming the entry."""
    X = np.asarray(X)
    if X.ndim != 2:
        raise ValueError(f"X must be a 2-D array (items x features), got shape {X.shape}")
    check_entries(X, "X")
    return X.astype(np.float64)


def _check_theta(theta, n_columns: int, n_features: int) -> np.ndarray:
    """``theta`` as a ``(K, D)`` float array with every entry in the open interval (0, 1)."""
    theta = np.asarray(theta, dtype=np.float64)
    if theta.shape != (n_columns, n_features):
        raise ValueError(
            f"theta must have shape (K, D) = ({n_columns}, {n_features}) to match Z and X, "
            f"got {theta.shape}"
        )
    bad = np.argwhere(~((theta > 0) & (theta < 1)))
    if bad.size:
        k, d = bad[0]
        raise ValueError(
            f"theta[{k}, {d}] = {float(theta[k, d])!r} is not in the open interval (0, 1)"
        )
    return theta


def product_probabilities(Z, theta) -> np.ndarray:
    """The product-of-Bernoullis probabilities (7.7) of every item and feature.

    Parameters
    ----------
    Z : array-like of shape (N, K)
        Binary cluster assignments.
    theta : array-like of shape (K, D)
        Each cluster's Bernoulli probabilities, in (0, 1).

    Returns
    -------
    numpy.ndarray of shape (N, D)
        ``sigmoid(Z @ logit(theta))``: ``P(x_id = 1 | z_i, Theta)``.

    Examples
    --------
    Two clusters that both favour a one agree more strongly than either:

    >>> product_probabilities([[1, 1]], [[0.8], [0.8]]).round(4)
    array([[0.9412]])
    """
    Z = _binary_matrix(Z, "Z")
    theta = np.asarray(theta, dtype=np.float64)
    theta = _check_theta(theta, Z.shape[1], theta.shape[-1] if theta.ndim == 2 else -1)
    return expit(Z @ logit(theta))


def bernoulli_log_likelihood(Z, theta, X) -> np.ndarray:
    """Per-item log-likelihood ``log p(x_i | z_i, Theta)`` of the Bernoulli IOMM, (7.6)-(7.7).

    With the summed natural parameters ``eta = Z @ logit(theta)`` (7.4), ``log p(x_i) = sum_d
    [x_id eta_id - log(1 + exp(eta_id))]``: the normalised product of the item's clusters'
    Bernoulli densities, computed in log space without forming the product.

    Parameters
    ----------
    Z : array-like of shape (N, K)
        Binary cluster assignments (``K`` may be 0).
    theta : array-like of shape (K, D)
        Cluster parameters in (0, 1).
    X : array-like of shape (N, D)
        Binary data.

    Returns
    -------
    numpy.ndarray of shape (N,)
        ``log p(x_i | z_i, Theta)`` of each item.

    Raises
    ------
    ValueError
        A non-binary entry of ``X`` or ``Z`` named (``"X[0, 1] = 2 is not binary (0 or 1)"``),
        mismatched shapes, or a ``theta`` outside (0, 1).

    Examples
    --------
    One cluster: the product is the cluster's own Bernoulli density.

    >>> float(np.exp(bernoulli_log_likelihood([[1]], [[0.3, 0.6]], [[1, 0]]))[0].round(6))
    0.12
    """
    X = _binary_matrix(X, "X")
    Z = _binary_matrix(Z, "Z")
    if Z.shape[0] != X.shape[0]:
        raise ValueError(f"Z has {Z.shape[0]} rows (items) but X has {X.shape[0]}")
    theta = _check_theta(theta, Z.shape[1], X.shape[1])
    eta = Z @ logit(theta)
    return np.sum(X * eta - log1pexp(eta), axis=1)


def gaussian_product_parameters(Z, mu, cov) -> tuple[np.ndarray, np.ndarray]:
    """Mean and covariance of each item's normalised product of Gaussian clusters, (7.5).

    With the clusters' precisions ``P_k = Sigma_k^{-1}``, item ``i``'s product has precision
    ``S_i^{-1} = sum_k z_ik P_k`` and mean ``S_i sum_k z_ik P_k mu_k`` (the thesis's ``Sigma~ =
    S``, ``mu~ = S m``): a Gaussian again, since the natural parameters add (7.4).

    Parameters
    ----------
    Z : array-like of shape (N, K)
        Binary assignments; every item must belong to at least one cluster (the product of no
        Gaussian density is not a density: the thesis gives no base measure for such an item).
    mu : array-like of shape (K, D)
    cov : array-like of shape (K, D, D)
        Symmetric positive definite covariances.

    Returns
    -------
    mean : numpy.ndarray of shape (N, D)
    covariance : numpy.ndarray of shape (N, D, D)

    Raises
    ------
    ValueError
        ``"Z[2] is all zeros: an item in no Gaussian cluster has no density"``, a covariance that
        is not positive definite (named), or mismatched shapes.

    Examples
    --------
    Figure 7.1's two clusters, ``N(-1, 0.2)`` and ``N(1, 0.6)``: the product is ``N(-0.5, 0.15)``.

    >>> mean, covariance = gaussian_product_parameters([[1, 1]], [[-1.0], [1.0]], [[[0.2]], [[0.6]]])
    >>> round(float(mean[0, 0]), 12), round(float(covariance[0, 0, 0]), 12)
    (-0.5, 0.15)
    """
    Z = _binary_matrix(Z, "Z")
    mu = np.asarray(mu, dtype=np.float64)
    cov = np.asarray(cov, dtype=np.float64)
    n_columns = Z.shape[1]
    if mu.ndim != 2 or mu.shape[0] != n_columns:
        raise ValueError(f"mu must have shape (K, D) with K = {n_columns}, got {mu.shape}")
    n_features = mu.shape[1]
    if cov.shape != (n_columns, n_features, n_features):
        raise ValueError(
            f"cov must have shape (K, D, D) = ({n_columns}, {n_features}, {n_features}), "
            f"got {cov.shape}"
        )
    empty = np.flatnonzero(~Z.any(axis=1))
    if empty.size:
        raise ValueError(
            f"Z[{int(empty[0])}] is all zeros: an item in no Gaussian cluster has no density"
        )
    for k in range(n_columns):
        if not np.allclose(cov[k], cov[k].T) or np.any(np.linalg.eigvalsh(cov[k]) <= 0):
            raise ValueError(f"cov[{k}] is not symmetric positive definite")
    precisions = np.linalg.inv(cov)
    item_precision = np.einsum("ik,kab->iab", Z, precisions)
    item_shift = Z @ np.einsum("kab,kb->ka", precisions, mu)
    covariance = np.linalg.inv(item_precision)
    mean = np.einsum("iab,ib->ia", covariance, item_shift)
    return mean, covariance


def gaussian_log_likelihood(Z, mu, cov, X) -> np.ndarray:
    """Per-item log density of real data under the Gaussian IOMM, (7.5).

    ``log N(x_i; mean_i, covariance_i)`` with the product parameters of
    :func:`gaussian_product_parameters`, computed through a Cholesky factor of each item's
    precision.

    Parameters
    ----------
    Z : array-like of shape (N, K)
    mu : array-like of shape (K, D)
    cov : array-like of shape (K, D, D)
    X : array-like of shape (N, D)
        Finite real data (a NaN or infinite entry is refused by name).

    Returns
    -------
    numpy.ndarray of shape (N,)

    Examples
    --------
    One cluster: its own Gaussian density.

    >>> value = gaussian_log_likelihood([[1]], [[0.0]], [[[1.0]]], [[0.0]])
    >>> bool(np.isclose(value[0], -0.5 * np.log(2 * np.pi)))
    True
    """
    X = _real_matrix(X)
    mean, covariance = gaussian_product_parameters(Z, mu, cov)
    if X.shape != mean.shape:
        raise ValueError(f"X has shape {X.shape} but Z and mu give {mean.shape}")
    precision_factor = np.linalg.cholesky(np.linalg.inv(covariance))  # L L^T = precision
    whitened = np.einsum("iab,ia->ib", precision_factor, X - mean)  # L^T (x - m)
    log_det_precision = 2 * np.sum(np.log(np.diagonal(precision_factor, axis1=1, axis2=2)), axis=1)
    n_features = X.shape[1]
    return (
        0.5 * log_det_precision
        - 0.5 * n_features * np.log(2 * np.pi)
        - 0.5 * np.sum(whitened**2, axis=1)
    )


def _check_gaussian_parameters(mu, tau, n_columns: int, n_features: int):
    """``mu`` and ``tau`` as ``(K, D)`` float arrays, ``tau`` positive and both finite."""
    mu = np.asarray(mu, dtype=np.float64)
    tau = np.asarray(tau, dtype=np.float64)
    for name, values in (("mu", mu), ("tau", tau)):
        if values.shape != (n_columns, n_features):
            raise ValueError(
                f"{name} must have shape (K, D) = ({n_columns}, {n_features}) to match Z and X, "
                f"got {values.shape}"
            )
    bad = np.argwhere(~np.isfinite(mu))
    if bad.size:
        k, d = bad[0]
        raise ValueError(f"mu[{k}, {d}] = {float(mu[k, d])!r} is not finite")
    bad = np.argwhere(~(np.isfinite(tau) & (tau > 0)))
    if bad.size:
        k, d = bad[0]
        raise ValueError(f"tau[{k}, {d}] = {float(tau[k, d])!r} is not a positive finite precision")
    return mu, tau


def gaussian_natural_parameters(
    Z, mu, tau, base_precision: float, base_mean: float
) -> tuple[np.ndarray, np.ndarray]:
    """Each item's summed natural parameters under axis-aligned Gaussian clusters, (7.4)-(7.5).

    Parameters
    ----------
    Z : array-like of shape (N, K)
        Binary assignments (``K`` may be 0).
    mu, tau : array-like of shape (K, D)
        The clusters' means and precisions (``tau > 0``).
    base_precision, base_mean : float
        The base density ``N(base_mean, 1 / base_precision)`` every item's product includes.

    Returns
    -------
    shift : numpy.ndarray of shape (N, D)
        ``A = base_precision base_mean + Z @ (tau mu)``.
    precision : numpy.ndarray of shape (N, D)
        ``B = base_precision + Z @ tau``; the product's mean is ``A / B``.

    Examples
    --------
    Figure 7.1's clusters ``N(-1, 0.2)`` and ``N(1, 0.6)`` with a negligible base density: the
    product is ``N(-0.5, 0.15)``.

    >>> A, B = gaussian_natural_parameters([[1, 1]], [[-1.0], [1.0]], [[5.0], [1 / 0.6]], 1e-12, 0)
    >>> round(float(A[0, 0] / B[0, 0]), 9), round(float(1 / B[0, 0]), 9)
    (-0.5, 0.15)
    """
    Z = _binary_matrix(Z, "Z")
    mu = np.asarray(mu, dtype=np.float64)
    n_features = mu.shape[1] if mu.ndim == 2 else -1
    mu, tau = _check_gaussian_parameters(mu, tau, Z.shape[1], n_features)
    precision = base_precision + Z @ tau
    shift = base_precision * base_mean + Z @ (tau * mu)
    return shift, precision


def diagonal_gaussian_log_likelihood(
    Z, mu, tau, X, base_precision: float, base_mean: float
) -> np.ndarray:
    """Per-item log density of real data under the IOMM with axis-aligned Gaussian clusters.

    ``sum_d log N(x_id; A_id / B_id, 1 / B_id) = sum_d [log(B_id) / 2 - log(2 pi) / 2 - B_id
    x_id^2 / 2 + A_id x_id - A_id^2 / (2 B_id)]`` with the natural parameters of
    :func:`gaussian_natural_parameters`: the normalised product (7.5) of the item's clusters and
    the base density.

    Parameters
    ----------
    Z : array-like of shape (N, K)
    mu, tau : array-like of shape (K, D)
    X : array-like of shape (N, D)
        Finite real data (a NaN or infinite entry is refused by name).
    base_precision, base_mean : float

    Returns
    -------
    numpy.ndarray of shape (N,)

    Examples
    --------
    An item in no cluster has the base density:

    >>> value = diagonal_gaussian_log_likelihood([[0]], [[3.0]], [[2.0]], [[0.0]], 1.0, 0.0)
    >>> bool(np.isclose(value[0], -0.5 * np.log(2 * np.pi)))
    True
    """
    X = _real_matrix(X)
    shift, precision = gaussian_natural_parameters(Z, mu, tau, base_precision, base_mean)
    if X.shape != shift.shape:
        raise ValueError(f"X has shape {X.shape} but Z and mu give {shift.shape}")
    terms = 0.5 * (np.log(precision) - _LOG_2PI - precision * X**2) + shift * (
        X - 0.5 * shift / precision
    )
    return terms.sum(axis=1)


@dataclass(frozen=True)
class OverlappingMixture(LikelihoodHeldout):
    """The Infinite Overlapping Mixture Model (Heller 2007, chapter 7).

    ``Z ~ IBP(alpha)`` (section 7.3). Bernoulli clusters (the default): ``theta_kd ~ Beta(a, b)``
    for every cluster ``k`` and feature ``d``, and ``x_id | z_i, Theta ~ Bernoulli(sigmoid(sum_k
    z_ik logit theta_kd))`` independently, the normalised product (7.6)-(7.7) of the item's
    clusters' densities. Gaussian clusters (``distribution="gaussian"``, (7.5) with axis-aligned
    covariances): ``tau_kd ~ Gamma(gamma_a, gamma_b)``, ``mu_kd | tau_kd ~ N(mu0, 1 / (kappa0
    tau_kd))`` and ``x_id | z_i ~ N(A_id / B_id, 1 / B_id)``, ``B_id = lambda0 + sum_k z_ik
    tau_kd``, ``A_id = lambda0 mu0 + sum_k z_ik tau_kd mu_kd``: the product of the item's clusters
    and a broad base density ``N(mu0, 1 / lambda0)`` that gives an item in no cluster a density
    (see the module notes).

    Parameters
    ----------
    alpha : float, default 1.0
        IBP concentration: each item belongs to ``Poisson(alpha)`` clusters a priori.
    a, b : float, default 1.0
        Beta prior of every cluster parameter ``theta_kd``.
    truncation : int, default 10
        ``K``, the number of columns of the PyMC reference's finite Beta-Bernoulli model
        (7.8)-(7.9) only; the fast sampler's IBP is unbounded.
    distribution : {"bernoulli", "gaussian"}, default "bernoulli"
        The clusters' family: binary or real features.
    mu0, kappa0, gamma_a, gamma_b : float, default 0, 0.1, 2, 1
        Gaussian clusters' Normal-Gamma prior (those of the BPM's Gaussian clusters).
    base_precision : float, default 0.01
        ``lambda0``, the precision of the base density every Gaussian item's product includes.

    Raises
    ------
    ValueError
        ``"alpha must be a positive finite number, got 0.0"`` (likewise ``a``, ``b``,
        ``kappa0``, ``gamma_a``, ``gamma_b`` and ``base_precision``), ``"truncation must be an
        integer >= 1, got 0"``, an unknown ``distribution``, a non-finite ``mu0``.

    Examples
    --------
    >>> OverlappingMixture(alpha=2.0).prior.expected_dishes_per_item
    2.0
    >>> OverlappingMixture(alpha=-1.0)
    Traceback (most recent call last):
    ...
    ValueError: alpha must be a positive finite number, got -1.0
    >>> OverlappingMixture(distribution="gaussian").param_names
    ('Z', 'mu', 'tau')
    """

    alpha: float = 1.0
    a: float = 1.0
    b: float = 1.0
    truncation: int = 10
    distribution: str = "bernoulli"
    mu0: float = DEFAULT_NORMAL_GAMMA.mu0
    kappa0: float = DEFAULT_NORMAL_GAMMA.kappa0
    gamma_a: float = DEFAULT_NORMAL_GAMMA.gamma_a
    gamma_b: float = DEFAULT_NORMAL_GAMMA.gamma_b
    base_precision: float = 0.01

    name = "iomm"
    data_type = Features
    protocol = LikelihoodModel
    invariant_names = ("loglik", "U", "n_clusters")
    heldout_draws_advice = (
        "a held-out item's memberships are unknown and its density sums over all of them: "
        "score held-out entries of the training items instead"
    )

    def __post_init__(self):
        for name in ("alpha", "a", "b", "base_precision"):
            check_positive(name, getattr(self, name))
        check_normal_gamma_prior(self)
        check_integer("truncation", self.truncation)
        if self.distribution not in DISTRIBUTIONS:
            raise ValueError(
                f"distribution must be one of 'bernoulli', 'gaussian', got {self.distribution!r}"
            )
        # Plain Python numbers from here on (the kernels and the repr see floats and an int).
        for name in ("alpha", "a", "b", "base_precision", *NORMAL_GAMMA_FIELDS):
            object.__setattr__(self, name, float(getattr(self, name)))
        object.__setattr__(self, "truncation", int(self.truncation))

    @property
    def gaussian(self) -> bool:
        """Whether the clusters are Gaussian (real features) rather than Bernoulli."""
        return self.distribution == "gaussian"

    @property
    def cluster_names(self) -> tuple[str, ...]:
        """The clusters' parameters: ``("theta",)`` (Bernoulli) or ``("mu", "tau")``."""
        return ("mu", "tau") if self.gaussian else ("theta",)

    @property
    def param_names(self) -> tuple[str, ...]:
        """The fast sampler's variables: ``Z`` and the clusters' parameters."""
        return ("Z", *self.cluster_names)

    @property
    def prior(self) -> IndianBuffetProcess:
        """The IBP prior over the assignments ``Z``."""
        return IndianBuffetProcess(self.alpha)

    def sizes_label(self) -> str:
        """The number of clusters as reports print it.

        Examples
        --------
        >>> OverlappingMixture().sizes_label()
        'unbounded (IBP; PyMC truncated at 10 columns)'
        """
        return f"unbounded (IBP; PyMC truncated at {self.truncation} columns)"

    # ------------------------------------------------------------------------- data
    def check_data(self, data) -> Features:
        """The data as binary (Bernoulli clusters) or real (Gaussian) :class:`Features`.

        Accepts a :class:`~latentzoo.data.Features` or an array (dense or scipy sparse); a
        non-binary entry is refused by name (``"X[1, 0] = 2 is not binary (0 or 1)"``), as are
        NaN and infinite entries and data with no item or no feature. Gaussian clusters refuse
        binary data (Features of kind ``binary``, or an array of zeros and ones): they take the
        Bernoulli model.

        Examples
        --------
        >>> OverlappingMixture().check_data([[0, 2]])
        Traceback (most recent call last):
        ...
        ValueError: X[0, 1] = 2 is not binary (0 or 1)
        >>> OverlappingMixture(distribution="gaussian").check_data([[0.5, float("nan")]])
        Traceback (most recent call last):
        ...
        ValueError: X[0, 1] is nan
        """
        if self.gaussian:
            return self._check_real_data(data)
        kind = getattr(data, "kind", None)
        if kind is not None and hasattr(data, "item_names"):
            if kind != "binary":
                raise ValueError(
                    f"data of kind {kind!r} do not fit the Bernoulli IOMM (it takes binary data)"
                )
            return data
        values = np.asarray(data) if not hasattr(data, "toarray") else data
        if getattr(values, "ndim", 2) != 2:
            raise ValueError(f"X must be a 2-D binary array, got shape {values.shape}")
        return Features(values, kind="binary")

    def _check_real_data(self, data) -> Features:
        """The Gaussian clusters' data: real :class:`Features`, binary data refused."""
        if hasattr(data, "kind") and hasattr(data, "item_names"):
            values, kind = data.toarray(), data.kind
        else:
            values = data.toarray() if hasattr(data, "toarray") else np.asarray(data)
            if values.ndim != 2:
                raise ValueError(f"X must be a 2-D real array, got shape {values.shape}")
            check_entries(values, "X")
            kind = "binary" if np.all((values == 0) | (values == 1)) else "real"
        if kind == "binary":
            raise ValueError(
                "binary data (every entry 0 or 1) do not fit Gaussian clusters: use the "
                "Bernoulli IOMM (distribution='bernoulli')"
            )
        if kind != "real":
            raise ValueError(f"data of kind {kind!r} do not fit the Gaussian IOMM (real data)")
        return data if hasattr(data, "item_names") else Features(values, kind="real")

    def data_matrix(self, data) -> np.ndarray:
        """The checked data as a dense float ``(N, D)`` array."""
        return np.asarray(self.check_data(data).toarray(), dtype=np.float64)

    def coords(self, data) -> dict:
        """Coordinates of ``item``, ``feature`` and the PyMC reference's ``cluster`` axis."""
        data = self.check_data(data)
        return {
            "item": list(data.item_names),
            "feature": list(data.feature_names),
            "cluster": np.arange(self.truncation),
        }

    @property
    def dims(self) -> dict[str, list[str]]:
        """Dimensions of the variables of a fit and of the PyMC reference."""
        return {
            "Z": ["item", "cluster"],
            "theta": ["cluster", "feature"],
            "mu": ["cluster", "feature"],
            "tau": ["cluster", "feature"],
            "pi": ["cluster"],
            "U": ["item", "item_2"],
            "n_memberships": ["item"],
            "x": ["item", "feature"],
        }

    # ---------------------------------------------------------------------- likelihood
    def log_likelihood(self, params, data) -> np.ndarray:
        """Per-item log-likelihood at ``params = {"Z": ..., "theta": ...}`` (7.6)-(7.7), or
        ``{"Z", "mu", "tau"}`` for Gaussian clusters (7.5).

        See :func:`bernoulli_log_likelihood` and :func:`diagonal_gaussian_log_likelihood`.

        Returns
        -------
        numpy.ndarray of shape (N,)
        """
        X = self.data_matrix(data)
        if self.gaussian:
            return diagonal_gaussian_log_likelihood(
                params["Z"], params["mu"], params["tau"], X, self.base_precision, self.mu0
            )
        return bernoulli_log_likelihood(params["Z"], params["theta"], X)

    def reference_log_likelihood(self, params, data) -> np.ndarray:
        """The log-likelihood per item as :meth:`pymc_model` declares it (its potential
        ``loglik``): :meth:`log_likelihood`."""
        return self.log_likelihood(params, data)

    def heldout_log_likelihood(self, params, test) -> np.ndarray:
        """Refused: a new item's density sums over its unknown memberships (``2^K`` of them).

        Raises
        ------
        ValueError
            Always, saying why (:attr:`heldout_draws_advice`).
        """
        raise ValueError(f"the IOMM has no held-out item likelihood: {self.heldout_draws_advice}")

    def heldout_posterior_predictive(self, draws, test, train=None) -> np.ndarray:
        """Refused, as :meth:`heldout_log_likelihood`."""
        return self.heldout_log_likelihood(draws, test)

    def heldout_draws_usable(self, names, train=None) -> bool:
        """False: no held-out item score exists (see :meth:`heldout_log_likelihood`)."""
        return False

    def fit_shape(self, params) -> tuple:
        """``(items, features)`` a draw was fitted to (``Z`` rows, cluster parameter columns)."""
        first = self.cluster_names[0]
        rows = np.shape(params["Z"])[0] if "Z" in params else None
        cols = np.shape(params[first])[-1] if first in params else None
        return rows, cols

    def labels(self, params, train=None) -> np.ndarray:
        """Each item's main cluster: its largest cluster among those it belongs to, -1 if none.

        An overlapping model has no partition; this is the hard label the shared summaries
        print. The memberships themselves are ``params["Z"]``.

        Examples
        --------
        >>> OverlappingMixture().labels({"Z": [[1, 1], [0, 1], [0, 0]]}).tolist()
        [1, 1, -1]
        """
        Z = _binary_matrix(params["Z"], "Z")
        if Z.shape[1] == 0:
            return np.full(Z.shape[0], -1, dtype=np.int64)
        size_rank = Z * (1.0 + Z.sum(axis=0))[None, :]
        return np.where(Z.any(axis=1), np.argmax(size_rank, axis=1), -1).astype(np.int64)

    def ibp_log_prior(self, params) -> float:
        """``log P(Z) + sum log Beta(theta_kd; a, b)`` for labelled nonzero columns of ``Z``: the
        fast sampler's prior.

        ``P(Z)`` is :meth:`IndianBuffetProcess.log_prob_matrix` (the target of a sampler over
        labelled columns, whose Gibbs conditionals are (7.12)); all-zero columns of ``Z`` and their
        parameters are ignored.

        Examples
        --------
        >>> model = OverlappingMixture(alpha=1.0)
        >>> bool(np.isclose(model.ibp_log_prior({"Z": [[1]], "theta": [[0.5]]}), -1.0))
        True
        """
        Z = _binary_matrix(params["Z"], "Z")
        self._check_cluster_rows(params, Z.shape[1])
        return self.prior.log_prob_matrix(Z) + self.log_cluster_prior(params, Z.any(axis=0))

    def _check_cluster_rows(self, params, n_columns: int) -> None:
        """The clusters' first parameter as a ``(K, D)`` array with one row per column of Z."""
        first = np.asarray(params[self.cluster_names[0]])
        if first.ndim != 2 or first.shape[0] != n_columns:
            raise ValueError(
                f"{self.cluster_names[0]} must have shape (K, D) with K = {n_columns} to match "
                f"Z, got {first.shape}"
            )

    def log_cluster_prior(self, params, columns=slice(None)) -> float:
        """``log p`` of the clusters' parameters in ``params`` (rows ``columns``): ``sum log
        Beta(theta_kd; a, b)``, or for Gaussian clusters ``sum log Gamma(tau_kd; gamma_a,
        gamma_b) + log N(mu_kd; mu0, 1 / (kappa0 tau_kd))``.

        Examples
        --------
        >>> model = OverlappingMixture(distribution="gaussian", gamma_a=1.0, gamma_b=1.0)
        >>> value = model.log_cluster_prior({"mu": [[0.0]], "tau": [[1.0]]})
        >>> bool(np.isclose(value, -1.0 + 0.5 * np.log(0.1 / (2 * np.pi))))
        True
        """
        if not self.gaussian:
            theta = np.asarray(params["theta"], dtype=np.float64)
            n_features = theta.shape[1] if theta.ndim == 2 else -1
            theta = _check_theta(theta, theta.shape[0] if theta.ndim == 2 else -1, n_features)
            return self._log_beta_prior(theta[columns])
        mu = np.asarray(params["mu"], dtype=np.float64)
        shape = mu.shape if mu.ndim == 2 else (-1, -1)
        mu, tau = _check_gaussian_parameters(mu, params["tau"], *shape)
        mu, tau = mu[columns], tau[columns]
        log_tau = np.log(tau)
        log_gamma = (
            self.gamma_a * np.log(self.gamma_b) - gammaln(self.gamma_a)
            + (self.gamma_a - 1) * log_tau - self.gamma_b * tau
        )  # fmt: skip
        mean_precision = self.kappa0 * tau
        log_normal = 0.5 * (
            np.log(mean_precision) - _LOG_2PI - mean_precision * (mu - self.mu0) ** 2
        )
        return float(np.sum(log_gamma + log_normal))

    def _log_beta_prior(self, theta: np.ndarray) -> float:
        """``sum log Beta(theta_kd; a, b)``."""
        return float(
            np.sum(
                (self.a - 1) * np.log(theta)
                + (self.b - 1) * np.log1p(-theta)
                - betaln(self.a, self.b)
            )
        )

    def log_prior(self, params) -> float:
        """Log prior of the PyMC reference's free variables: the finite model (7.8)-(7.9).

        ``sum_k log Beta(pi_k; alpha/K, 1) + sum_{i,k} log Bernoulli(z_ik; pi_k) + sum log
        Beta(theta_kd; a, b)`` with ``K`` the truncation (the number of columns of ``Z``);
        ``params`` holds ``pi`` (K,), ``Z`` (N, K) and ``theta`` (K, D) (Gaussian clusters:
        ``mu`` and ``tau`` (K, D) with :meth:`log_cluster_prior`). Its ``K -> infinity`` limit,
        ``pi`` integrated out, is the IBP prior of :meth:`ibp_log_prior`.

        Examples
        --------
        >>> model = OverlappingMixture(alpha=2.0, truncation=1)
        >>> bool(np.isclose(model.log_prior({"pi": [0.5], "Z": [[1]], "theta": [[0.5]]}),
        ...                 np.log(2 * 0.5 * 0.5)))
        True
        """
        Z = _binary_matrix(params["Z"], "Z")
        pi = np.asarray(params["pi"], dtype=np.float64)
        self._check_cluster_rows(params, Z.shape[1])
        if pi.shape != (Z.shape[1],):
            raise ValueError(f"pi must have shape ({Z.shape[1]},), one per column of Z")
        rate = self.alpha / Z.shape[1]
        log_pi = np.sum((rate - 1) * np.log(pi) - betaln(rate, 1.0))
        log_z = np.sum(Z * np.log(pi) + (1 - Z) * np.log1p(-pi))
        return float(log_pi + log_z) + self.log_cluster_prior(params)

    def prior_draw(self, data, rng) -> dict:
        """The PyMC reference's free variables drawn from its prior at the sizes of ``data``:
        ``pi`` (K,), ``Z`` (N, K) and ``theta`` (K, D) (or ``mu``, ``tau``), ``K`` the
        truncation."""
        n_items, n_features = self.check_data(data).shape
        rng = as_rng(rng)
        tiny = np.finfo(np.float64).tiny
        pi = np.clip(rng.beta(self.alpha / self.truncation, 1.0, size=self.truncation), tiny, 1)
        Z = (rng.random((n_items, self.truncation)) < pi[None, :]).astype(np.int8)
        return {"pi": pi, "Z": Z, **self.draw_cluster_parameters(rng, self.truncation, n_features)}

    def draw_cluster_parameters(self, rng, n_columns: int, n_features: int) -> dict:
        """``n_columns`` clusters' parameters from their prior: ``theta`` (kept inside (0, 1):
        a draw that rounds to 0 or 1 has an infinite logit) or ``mu`` and ``tau``.

        Examples
        --------
        >>> draw = OverlappingMixture(distribution="gaussian").draw_cluster_parameters(0, 2, 3)
        >>> sorted(draw), draw["tau"].shape
        (['mu', 'tau'], (2, 3))
        """
        rng = as_rng(rng)
        shape = (n_columns, n_features)
        if not self.gaussian:
            edge = np.finfo(np.float64).eps
            return {"theta": np.clip(rng.beta(self.a, self.b, size=shape), edge, 1 - edge)}
        tau = np.maximum(rng.gamma(self.gamma_a, 1.0 / self.gamma_b, size=shape), 1e-300)
        mu = self.mu0 + rng.standard_normal(shape) / np.sqrt(self.kappa0 * tau)
        return {"mu": mu, "tau": tau}

    def pymc_values(self, params) -> dict:
        """``params`` as the free variables of :meth:`pymc_model` (``pi``, ``Z`` and the
        clusters' parameters)."""
        names = ("pi", "Z", *self.cluster_names)
        return {name: params[name] for name in names if name in params}

    def invariants(self, params, data=None) -> dict[str, np.ndarray]:
        """Label-free summaries of one state: ``U = Z Z^T``, the number of clusters, and with
        ``data`` the log-likelihood.

        ``U[i, j]`` is the number of clusters items ``i`` and ``j`` share, ``U[i, i]`` the number of
        clusters of item ``i`` (the quantity of Table 7.1); invariant under relabelling and
        reordering of the columns, and all-zero columns do not count.

        Returns
        -------
        dict
            ``U`` (N, N) int64, ``n_clusters`` (the number of nonzero columns) and, when ``data``
            is given (``params`` holding ``theta`` too), ``loglik``, the summed
            :meth:`log_likelihood`.

        Examples
        --------
        >>> OverlappingMixture().invariants({"Z": [[1, 0, 0], [1, 1, 0]]})["U"]
        array([[1, 1],
               [1, 2]])
        """
        Z = _binary_matrix(params["Z"], "Z").astype(np.int64)
        out = {"U": Z @ Z.T, "n_clusters": np.int64(Z.any(axis=0).sum())}
        if data is not None:
            out["loglik"] = float(np.sum(self.log_likelihood(params, data)))
        return out

    # ------------------------------------------------------------- posterior predictive
    def replicate_names(self, names) -> bool:
        """Whether a draw holding the variables ``names`` can make a replicate: ``Z`` and the
        clusters' parameters."""
        return set(self.param_names) <= set(names)

    def predictive_summaries(self, x) -> dict:
        """The summary a posterior predictive check compares, of the observed ``Features`` or of
        a replicate (an ``(N, D)`` array): ``feature_counts``, each feature's number of ones
        (Gaussian clusters: ``feature_means``).

        Integer counts, so ArviZ's ``plot_ppc`` draws them as histograms (a kernel density of
        the few values of tiny data can degenerate to one value).

        Examples
        --------
        >>> OverlappingMixture().predictive_summaries(np.array([[0.0, 1.0], [1.0, 1.0]]))
        {'feature_counts': (('feature',), array([1, 2]))}
        """
        values = x.toarray() if hasattr(x, "toarray") else np.asarray(x, dtype=float)
        if self.gaussian:
            return {"feature_means": (("feature",), np.asarray(values, dtype=float).mean(axis=0))}
        counts = np.rint(np.asarray(values, dtype=float).sum(axis=0)).astype(np.int64)
        return {"feature_counts": (("feature",), counts)}

    def replicate(self, params, data, rng) -> dict:
        """One replicate of ``data`` given one draw: ``x_id ~ Bernoulli`` of the draw's product
        probabilities (7.7). Columns of ``Z`` and rows of ``theta`` padded with -1 (beyond a
        draw's width in a saved sample) are dropped.

        Returns
        -------
        dict
            ``{name: (dims, array)}``: ``x`` (item, feature) and :meth:`predictive_summaries`.

        Examples
        --------
        >>> params = {"Z": [[1, -1], [0, -1]], "theta": [[0.5, 0.5], [-1.0, -1.0]]}
        >>> out = OverlappingMixture().replicate(params, [[0, 1], [1, 1]], np.random.default_rng(0))
        >>> out["x"][1].shape
        (2, 2)
        """
        n_items, n_features = self.check_data(data).shape
        Z = np.asarray(params["Z"])
        width = Z.shape[1] if Z.ndim == 2 else 0
        used = np.flatnonzero(np.all(Z >= 0, axis=0)) if width else np.arange(0)
        Z = Z[:, used]
        if self.gaussian:
            mu, tau = (np.asarray(params[name], dtype=float)[used] for name in ("mu", "tau"))
            shift, precision = gaussian_natural_parameters(
                Z, mu.reshape(-1, n_features), tau.reshape(-1, n_features), self.base_precision,
                self.mu0,
            )  # fmt: skip
            noise = rng.standard_normal((n_items, n_features))
            replicated = shift / precision + noise / np.sqrt(precision)
        else:
            theta = np.asarray(params["theta"], dtype=float)[used]
            probabilities = (
                product_probabilities(Z, theta)
                if used.size
                else np.full((n_items, n_features), 0.5)
            )
            replicated = (rng.random(probabilities.shape) < probabilities).astype(np.int8)
        return {"x": (("item", "feature"), replicated), **self.predictive_summaries(replicated)}

    # ------------------------------------------------------------------- PyMC reference
    def pymc_model(self, data, temperature: float = 1.0, truncation: int | None = None):
        """The PyMC reference: the finite Beta-Bernoulli truncation (7.8)-(7.9) with ``K`` columns.

        ``pi_k ~ Beta(alpha / K, 1)``, ``Z[i, k] ~ Bernoulli(pi_k)`` (dims ``(item, cluster)``),
        ``theta[k, d] ~ Beta(a, b)`` and the product likelihood (7.6)-(7.7) as one
        ``pm.Potential`` named ``"loglik"``: ``(1/T) sum_{i,d} [x_id eta_id - log(1 + exp(eta_id))]``
        with ``eta = Z @ logit(theta)`` and ``temperature = T`` (a power posterior). Gaussian
        clusters: ``tau ~ Gamma(gamma_a, gamma_b)``, ``mu ~ N(mu0, 1 / (kappa0 tau))`` and the
        potential of :func:`diagonal_gaussian_log_likelihood` (7.5). As ``K ->
        infinity`` the prior of ``Z`` becomes the IBP of the fast sampler (section 7.3); ``K``
        columns must comfortably exceed the clusters the data use. The binary ``Z`` cannot be
        marginalised at any useful ``K`` (``2^(N K)`` states), so ``pm.sample`` assigns it PyMC's
        ``BinaryGibbsMetropolis`` step and NUTS to ``pi`` and ``theta``.

        Parameters
        ----------
        data : Features or array of shape (N, D)
            Binary data.
        temperature : float, default 1.0
        truncation : int, optional
            ``K``, the number of columns (default: the model's ``truncation``).

        Returns
        -------
        pymc.Model

        Examples
        --------
        >>> m = OverlappingMixture().pymc_model([[0, 1], [1, 1]], truncation=3)
        >>> sorted(m.named_vars)
        ['Z', 'loglik', 'pi', 'theta']
        >>> m = OverlappingMixture(distribution="gaussian").pymc_model([[0.2, 1.5]], truncation=2)
        >>> sorted(m.named_vars)
        ['Z', 'loglik', 'mu', 'pi', 'tau']
        """
        import pymc as pm
        import pytensor.tensor as pt

        X = self.data_matrix(data)
        check_positive("temperature", temperature)
        truncation = self.truncation if truncation is None else truncation
        check_integer("truncation", truncation)
        n_items, n_features = X.shape
        coords = {
            "item": np.arange(n_items),
            "feature": np.arange(n_features),
            "cluster": np.arange(truncation),
        }
        with pm.Model(coords=coords) as model:
            pi = pm.Beta("pi", alpha=self.alpha / truncation, beta=1.0, dims="cluster")
            Z = pm.Bernoulli("Z", p=pi[None, :], dims=("item", "cluster"))
            if self.gaussian:
                tau = pm.Gamma(
                    "tau", alpha=self.gamma_a, beta=self.gamma_b, dims=("cluster", "feature")
                )
                mu = pm.Normal(
                    "mu", mu=self.mu0, sigma=1.0 / pt.sqrt(self.kappa0 * tau),
                    dims=("cluster", "feature"),
                )  # fmt: skip
                precision = self.base_precision + pt.dot(Z, tau)
                shift = self.base_precision * self.mu0 + pt.dot(Z, tau * mu)
                loglik = pt.sum(
                    0.5 * (pt.log(precision) - _LOG_2PI - precision * X**2)
                    + shift * (X - 0.5 * shift / precision)
                )
            else:
                theta = pm.Beta("theta", alpha=self.a, beta=self.b, dims=("cluster", "feature"))
                eta = pt.dot(Z, pt.log(theta) - pt.log1p(-theta))
                loglik = pt.sum(X * eta - pt.softplus(eta))
            pm.Potential("loglik", loglik / temperature)
        return model

    def finite_log_joint(self, params, data) -> float:
        """``log p(pi, Z, Theta, X)`` of :meth:`pymc_model` (no Jacobians): :meth:`log_prior`
        plus the summed :meth:`log_likelihood`.

        ``params`` holds ``pi`` (K,), ``Z`` (N, K) and ``theta`` (K, D) (or ``mu``, ``tau``),
        ``K`` the truncation.

        Examples
        --------
        >>> model = OverlappingMixture(alpha=2.0)
        >>> params = {"pi": [0.5], "Z": [[1]], "theta": [[0.5]]}
        >>> bool(np.isclose(model.finite_log_joint(params, [[1]]), np.log(0.5 * 0.5)))
        True
        """
        return self.log_prior(params) + float(np.sum(self.log_likelihood(params, data)))

    # ---------------------------------------------------------------------- simulation
    def simulate(self, random_state=None, n_items: int = 100, n_features: int = 32):
        """Draw ``(data, truth)`` from the generative process.

        ``Z`` from the culinary process (:meth:`IndianBuffetProcess.draw`), ``theta_kd ~ Beta(a,
        b)``, then every ``x_id ~ Bernoulli(sigmoid(sum_k z_ik logit theta_kd))`` (7.7); Gaussian
        clusters: ``(mu_kd, tau_kd)`` from the Normal-Gamma prior and ``x_id ~ N(A_id / B_id, 1 /
        B_id)`` (:func:`gaussian_natural_parameters`).

        Parameters
        ----------
        random_state : None, int or numpy.random.Generator
        n_items, n_features : int
            ``N`` and ``D``, each at least 1.

        Returns
        -------
        data : Features
            ``(N, D)`` binary (Gaussian clusters: real).
        truth : dict
            ``Z`` (N, K_+) int8, ``theta`` (K_+, D) (or ``mu``, ``tau``) and ``U`` (N, N) =
            ``Z Z^T``.

        Examples
        --------
        >>> data, truth = OverlappingMixture(alpha=2.0).simulate(1, n_items=5, n_features=3)
        >>> data.kind, truth["U"].shape
        ('binary', (5, 5))
        """
        check_integer("n_items", n_items)
        check_integer("n_features", n_features)
        rng = as_rng(random_state)
        Z = self.prior.draw(n_items, random_state=rng)
        U = Z.astype(np.int64) @ Z.T.astype(np.int64)
        if self.gaussian:
            truth = {"Z": Z, **self.draw_cluster_parameters(rng, Z.shape[1], n_features), "U": U}
            shift, precision = gaussian_natural_parameters(
                Z, truth["mu"], truth["tau"], self.base_precision, self.mu0
            )
            noise = rng.standard_normal((n_items, n_features))
            return Features(shift / precision + noise / np.sqrt(precision), kind="real"), truth
        # Parameters at exactly 0 or 1 (possible in floating point for tiny a, b) have infinite
        # logits; clipping keeps every product well defined.
        tiny = np.finfo(np.float64).eps
        theta = np.clip(rng.beta(self.a, self.b, size=(Z.shape[1], n_features)), tiny, 1 - tiny)
        probabilities = expit(Z.astype(np.float64) @ logit(theta))
        X = (rng.random((n_items, n_features)) < probabilities).astype(np.int8)
        data = Features(X, kind="binary")
        truth = {"Z": Z, "theta": theta, "U": U}
        return data, truth
