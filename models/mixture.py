"""Finite Bayesian mixtures and Dirichlet process mixtures (DPM) of conjugate components.

Heller (2007, thesis), chapter 2 and section 3.3. Item ``i`` (a feature vector ``x_i``, one row of a
:class:`~latentzoo.data.features.Features`) belongs to one cluster ``s_i`` and is drawn from that
cluster's component density:

.. math::

    P(X \\mid \\Theta, \\pi) = \\prod_{i=1}^N \\sum_{j=1}^K \\pi_j P(x_i \\mid \\theta_j)

(eq. (2.16); the responsibilities are eq. (2.17)). The *Bayesian* mixture (section 2.2.3,
eq. (2.18)) puts a conjugate prior on every ``theta_j`` (a component of
:mod:`latentzoo.models.conjugate`) and the symmetric Dirichlet prior ``pi ~ Dir(alpha/K, ...,
alpha/K)`` (eq. (3.5)) on the weights. Integrating ``pi`` out gives the labelled prior of the
indicators (section 2.3.1.1)

.. math::

    p(s_1, \\dots, s_N \\mid \\alpha) = \\frac{\\Gamma(\\alpha)}{\\Gamma(N + \\alpha)}
    \\prod_{j=1}^K \\frac{\\Gamma(n_j + \\alpha/K)}{\\Gamma(\\alpha/K)},

and its limit ``K -> inf`` is the Chinese restaurant process of the DPM, eq. (2.19)-(2.20), whose
probability of a partition ``v`` of ``n`` items into ``m_v`` blocks of sizes ``n_l`` is the Ewens
formula eq. (3.9), ``alpha^{m_v} prod_l Gamma(n_l) Gamma(alpha) / Gamma(n + alpha)``. The marginal
likelihood of the data is a sum over partitions, eq. (3.7)-(3.8) and Lemma 3.1:

.. math::

    p(\\mathcal{D} \\mid \\alpha, \\beta) = \\sum_{v \\in \\mathcal{V}} p(v \\mid \\alpha)
    \\prod_{l=1}^{m_v} p(\\mathcal{D}_l^v),

with ``p(D_l)`` the closed-form conjugate marginal of one cluster, eq. (3.1). The sum is enumerated
exactly here for up to :data:`MAX_ENUMERATION_ITEMS` items (``Bell(10) = 115975`` partitions).

Two declarations of the same model: :meth:`~BayesianMixture.pymc_model` (the PyMC reference; the
assignments marginalised, the DPM truncated by stick-breaking) and the collapsed quantities
(:meth:`~BayesianMixture.collapsed_log_joint`, the exact partition posterior) that the collapsed
Gibbs sampler of :mod:`latentzoo.inference.mixture` targets.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numba as nb
import numpy as np
from scipy.special import gammaln, logsumexp, xlogy

from latentzoo.data import Features
from latentzoo.data.checks import as_rng
from latentzoo.models._checks import check_integer, check_nonnegative, check_positive
from latentzoo.models.base import (
    LikelihoodHeldout,
    LikelihoodModel,
    balanced_labels,
    labels_from_memberships,
)
from latentzoo.models.conjugate import (
    BetaBernoulli,
    row_logsumexp,
)
from latentzoo.models.invariants import N_PAIR_ITEMS, coassignment_pairs

__all__ = [
    "MAX_ENUMERATION_ITEMS",
    "BayesianMixture",
    "DirichletProcessMixture",
    "canonical_labels",
    "crp_log_prior",
    "default_pairs",
    "dirichlet_labels_log_prior",
    "set_partitions",
]

MAX_ENUMERATION_ITEMS = 11
"""Largest number of items whose set partitions are enumerated (``Bell(11) = 678570``)."""

_KIND_ORDER = {"binary": 0, "counts": 1, "real": 2}
"""Kinds of feature data, each a special case of the next (binary data are counts, counts are
real)."""

_COMPONENT_METHODS = (
    "data_kinds",
    "check_data",
    "stats",
    "log_marginal",
    "log_predictive",
    "sample_prior",
    "log_likelihood",
    "simulate",
    "param_names",
)


# --------------------------------------------------------------------------- partitions
def set_partitions(n: int) -> np.ndarray:
    """All set partitions of ``n`` items as canonical label arrays (restricted growth strings).

    Row ``s`` labels item 0 with 0 and every later item either with a label already used or with
    the largest label so far plus one, so each partition appears exactly once; the rows are in
    lexicographic order. There are ``Bell(n)`` rows (1, 1, 2, 5, 15, 52, ... for ``n = 0, 1, 2,
    ...``), the set ``V`` of eq. (3.8). Built position by position with ``numpy.repeat``, no loop
    over partitions.

    Parameters
    ----------
    n : int
        Number of items, ``0 <= n <= MAX_ENUMERATION_ITEMS``.

    Returns
    -------
    numpy.ndarray of shape (Bell(n), n), int64

    Examples
    --------
    >>> set_partitions(3).tolist()
    [[0, 0, 0], [0, 0, 1], [0, 1, 0], [0, 1, 1], [0, 1, 2]]
    >>> set_partitions(10).shape
    (115975, 10)
    """
    check_integer("n", n, low=0)
    if n > MAX_ENUMERATION_ITEMS:
        raise ValueError(
            f"n={n} is too large to enumerate its set partitions: at most "
            f"{MAX_ENUMERATION_ITEMS} items"
        )
    if n == 0:
        return np.zeros((1, 0), dtype=np.int64)
    labels = np.zeros((1, 1), dtype=np.int8)
    top = np.zeros(1, dtype=np.int64)  # largest label of each row so far
    for _ in range(1, n):
        children = top + 2  # labels 0..top+1 for the next item
        parent = np.repeat(np.arange(labels.shape[0]), children)
        starts = np.repeat(np.cumsum(children) - children, children)
        new = np.arange(parent.size) - starts
        labels = np.concatenate([labels[parent], new[:, None].astype(np.int8)], axis=1)
        top = np.maximum(top[parent], new)
    return labels.astype(np.int64)


def canonical_labels(z) -> np.ndarray:
    """Relabel each row of ``z`` into restricted-growth form: labels in order of first appearance.

    Two label arrays describe the same partition exactly when their canonical forms are equal, so
    this maps cluster labels of any sampler (and the labelled assignments of a finite mixture) onto
    the rows of :func:`set_partitions`. Vectorised over rows with one ``numpy.unique``.

    Parameters
    ----------
    z : int array of shape (S, N) or (N,)

    Returns
    -------
    numpy.ndarray of the same shape, int64

    Examples
    --------
    >>> canonical_labels([[3, 3, 1, 7], [0, 1, 0, 2]]).tolist()
    [[0, 0, 1, 2], [0, 1, 0, 2]]
    >>> canonical_labels([5, 2, 5]).tolist()
    [0, 1, 0]
    """
    z = np.asarray(z)
    if z.size and not np.issubdtype(z.dtype, np.integer):
        if not np.all(np.isfinite(z)) or np.any(z != np.round(z)):
            raise ValueError("labels must be integers")
        z = z.astype(np.int64)
    one_row = z.ndim == 1
    z2 = np.atleast_2d(z)
    if z2.ndim != 2:
        raise ValueError(f"labels must be a 1-D or 2-D array, got shape {z.shape}")
    n_rows, n_cols = z2.shape
    if z2.size == 0:
        out = np.zeros(z2.shape, dtype=np.int64)
        return out[0] if one_row else out
    _, compact = np.unique(z2.ravel(), return_inverse=True)
    n_labels = int(compact.max()) + 1
    key = np.repeat(np.arange(n_rows, dtype=np.int64), n_cols) * n_labels + compact.ravel()
    _, first, inverse = np.unique(key, return_index=True, return_inverse=True)
    # ``first`` is the flat position s * N + i of each (row, label)'s first appearance: sorting it
    # orders the labels by row, then by first appearance within the row.
    order = np.argsort(first, kind="stable")
    row_of = first[order] // n_cols
    row_start = np.searchsorted(row_of, row_of, side="left")
    rank = np.empty(first.size, dtype=np.int64)
    rank[order] = np.arange(first.size) - row_start
    out = rank[inverse.ravel()].reshape(n_rows, n_cols)
    return out[0] if one_row else out


def _as_label_matrix(labels, n_items: int | None = None, what: str = "labels") -> np.ndarray:
    """``labels`` as a 2-D int64 array of shape (S, n_items) with non-negative entries (any
    number of items when ``n_items`` is None)."""
    z = np.asarray(labels)
    if z.ndim == 1:
        z = z[None, :]
    if z.ndim != 2 or (n_items is not None and z.shape[1] != n_items):
        raise ValueError(
            f"{what} must have shape (S, {'N' if n_items is None else n_items}) (one column per"
            f" item), got {np.shape(labels)}"
        )
    if z.size and not np.issubdtype(z.dtype, np.integer):
        if not np.all(np.isfinite(z)) or np.any(z != np.round(z)):
            raise ValueError(f"{what} must be integers")
    z = z.astype(np.int64)
    if z.size and z.min() < 0:
        raise ValueError(f"{what} must be non-negative, got {int(z.min())}")
    return z


def _block_sizes(z: np.ndarray) -> tuple[np.ndarray, np.ndarray, int]:
    """Sizes of every label of every row: (S, L) with ``L = max label + 1``; also the flat keys."""
    n_rows, n_items = z.shape
    n_labels = int(z.max()) + 1 if z.size else 1
    key = z + n_labels * np.arange(n_rows, dtype=np.int64)[:, None]
    sizes = np.bincount(key.ravel(), minlength=n_rows * n_labels).reshape(n_rows, n_labels)
    return sizes, key, n_labels


def crp_log_prior(labels, alpha: float) -> np.ndarray:
    """Log probability of partitions under the Chinese restaurant process (Ewens formula).

    ``log p(v) = m_v log alpha + sum_l log Gamma(n_l) + log Gamma(alpha) - log Gamma(N + alpha)``,
    eq. (3.9), the product of the sequential probabilities eq. (2.19) (join a cluster of size
    ``n_l``) and eq. (2.20) (open a new one) over the items in order. Labels only name the blocks:
    any relabelling of a row gives the same value.

    Parameters
    ----------
    labels : int array of shape (S, N) or (N,), non-negative
    alpha : float
        DP concentration.

    Returns
    -------
    numpy.ndarray of shape (S,)

    Examples
    --------
    >>> # three items: all together 2/6, all apart 1/6 with alpha = 1 (Gamma(1) = 1, 3! = 6)
    >>> np.exp(crp_log_prior([[0, 0, 0], [0, 1, 2], [4, 9, 4]], 1.0)).round(6).tolist()
    [0.333333, 0.166667, 0.166667]
    >>> np.exp(crp_log_prior(set_partitions(5), 0.7)).sum().round(12)
    np.float64(1.0)
    """
    check_positive("alpha", alpha)
    z = _as_label_matrix(labels)
    n_items = z.shape[1]
    sizes, _, _ = _block_sizes(z)
    occupied = sizes > 0
    return (
        occupied.sum(axis=1) * np.log(alpha)
        + np.where(occupied, gammaln(np.maximum(sizes, 1)), 0.0).sum(axis=1)
        + gammaln(alpha)
        - gammaln(n_items + alpha)
    )


def dirichlet_labels_log_prior(labels, alpha: float, n_components: int) -> np.ndarray:
    """Log probability of *labelled* assignments with the weights ``pi ~ Dir(alpha/K)`` integrated out.

    ``log Gamma(alpha) - log Gamma(N + alpha) + sum_j [log Gamma(n_j + alpha/K) - log
    Gamma(alpha/K)]`` (thesis section 2.3.1.1, the Dirichlet integral of eq. (3.7) with the prior
    eq. (3.5); the Dirichlet-multinomial (2.12) in sequence form). The probability of the
    *partition* of a labelling with ``k`` blocks is ``K! / (K - k)!`` times this (that many
    labellings share it); as ``K -> inf`` that product tends to :func:`crp_log_prior`.

    Parameters
    ----------
    labels : int array of shape (S, N) or (N,), entries in ``0..K-1``
    alpha : float
    n_components : int
        ``K``.

    Returns
    -------
    numpy.ndarray of shape (S,)

    Examples
    --------
    >>> import itertools
    >>> every = np.array(list(itertools.product(range(3), repeat=4)))  # all 3**4 labellings
    >>> np.exp(dirichlet_labels_log_prior(every, 1.5, 3)).sum().round(12)
    np.float64(1.0)
    """
    check_positive("alpha", alpha)
    check_integer("n_components", n_components)
    z = _as_label_matrix(labels)
    n_items = z.shape[1]
    if z.size and z.max() >= n_components:
        raise ValueError(
            f"labels must lie in 0..{n_components - 1} (n_components={n_components}), "
            f"got {int(z.max())}"
        )
    sizes, _, _ = _block_sizes(z)  # labels that are never used contribute Gamma(a) / Gamma(a)
    a = alpha / n_components
    return (
        gammaln(alpha)
        - gammaln(n_items + alpha)
        + np.sum(np.where(sizes > 0, gammaln(sizes + a) - gammaln(a), 0.0), axis=1)
    )


def _log_falling_factorial(n_components: int, k) -> np.ndarray:
    """``log K! / (K - k)!``: the number of labellings of a partition with ``k`` blocks."""
    k = np.asarray(k)
    return gammaln(n_components + 1.0) - gammaln(n_components - k + 1.0)


# --------------------------------------------------------------------------- simulation kernel
@nb.njit(cache=True)
def _crp_labels(uniforms, alpha):
    """Sequential Chinese restaurant process, eq. (2.19)-(2.20), driven by given uniforms.

    Item ``i`` joins cluster ``j`` with probability ``n_j / (i + alpha)`` and opens a new one with
    ``alpha / (i + alpha)``; labels come out in order of first appearance (canonical).
    """
    n = uniforms.shape[0]
    z = np.empty(n, dtype=np.int64)
    sizes = np.zeros(n + 1, dtype=np.int64)
    n_clusters = 0
    for i in range(n):
        target = uniforms[i] * (i + alpha)
        acc = 0.0
        chosen = n_clusters
        for j in range(n_clusters):
            acc += sizes[j]
            if target < acc:
                chosen = j
                break
        z[i] = chosen
        sizes[chosen] += 1
        if chosen == n_clusters:
            n_clusters += 1
    return z


# --------------------------------------------------------------------------- default pairs
def default_pairs(data) -> np.ndarray:
    """The item pairs ``(a, b)`` whose co-assignment probabilities are compared across methods.

    Every pair ``a < b`` when there are at most 20 items; otherwise all 15 pairs among 6 items at
    evenly spaced positions ``round(linspace(0, N - 1, 6))`` (first and last item included), so the
    pairs are spread over the data set and are a deterministic function of its size only. Built
    with :func:`~latentzoo.models.invariants.coassignment_pairs` (totals that are 1 on the chosen
    items, 0 elsewhere).

    Parameters
    ----------
    data : Features or int
        The data (or just its number of items).

    Returns
    -------
    numpy.ndarray of shape (n_pairs, 2), int64, with ``pairs[:, 0] < pairs[:, 1]``

    Examples
    --------
    >>> default_pairs(4).tolist()
    [[0, 1], [0, 2], [0, 3], [1, 2], [1, 3], [2, 3]]
    >>> sorted(set(default_pairs(101).ravel().tolist()))
    [0, 20, 40, 60, 80, 100]
    """
    n = int(data) if isinstance(data, int | np.integer) else int(data.n_items)
    totals = np.ones(n)
    if n > 20:
        totals = np.zeros(n)
        totals[np.round(np.linspace(0, n - 1, N_PAIR_ITEMS)).astype(np.int64)] = 1.0
    return coassignment_pairs(totals, N_PAIR_ITEMS)


# --------------------------------------------------------------------------- shared behaviour
class _MixtureMethods(LikelihoodHeldout):
    """Methods shared by :class:`BayesianMixture` and :class:`DirichletProcessMixture`."""

    data_type = Features
    protocol = LikelihoodModel
    invariant_names = ("loglik", "coassign", "n_occupied")
    invariant_dims = {"coassign": ["pair"]}

    # the subclasses define: n_components, alpha, component, _is_dp, _check_weights_sum,
    # _labels_log_prior, _partition_log_prior, _pymc_log_weights, _draw_weights_labels

    def _validate(self):
        check_positive("alpha", self.alpha)
        check_integer("n_components", self.n_components)
        comp = self.component
        missing = [name for name in _COMPONENT_METHODS if not hasattr(comp, name)]
        if missing:
            raise ValueError(
                "component must be a conjugate component such as BetaBernoulli(), "
                f"DirichletMultinomial(), NormalGamma() or NormalInverseWishart(); got {comp!r} "
                f"(missing {', '.join(missing)})"
            )

    @property
    def param_names(self) -> tuple[str, ...]:
        """``("w",)`` followed by the component's parameter names (e.g. ``("w", "theta")``)."""
        return ("w", *self.component.param_names)

    def sizes_label(self) -> str:
        """The model's cluster numbers as reports print them (``K=...``): ``n_components``, or ``unbounded (DPM)`` for the Dirichlet process mixture (whose PyMC reference is truncated at ``n_components``).

        Examples
        --------
        >>> BayesianMixture(3).sizes_label(), DirichletProcessMixture().sizes_label()
        ('3', 'unbounded (DPM; PyMC truncated at 20 sticks)')
        """
        if self._is_dp:
            return f"unbounded (DPM; PyMC truncated at {self.n_components} sticks)"
        return str(self.n_components)

    # ------------------------------------------------------------------ checks
    def check_data(self, data) -> Features:
        """Validate ``data`` for this model's component and return it as :class:`Features`.

        Arrays are wrapped in ``Features`` (which rejects NaN, inf, wrong shapes and empty input,
        naming the entry). The data kind must fit the component: binary data are also counts and
        real, counts are also real, so e.g. binary data may feed a Normal component but real data
        may not feed a Beta-Bernoulli one; the component's own ``check_data`` then checks every
        entry (``"X[2, 7] = 0.5 is not binary"``).

        Examples
        --------
        >>> model = DirichletProcessMixture()
        >>> model.check_data([[0, 1], [1, 1]]).shape
        (2, 2)
        >>> model.check_data([[0.5, 1.0], [1.0, 1.0]])
        Traceback (most recent call last):
        ...
        ValueError: data of kind 'real' do not fit the BetaBernoulli component (it takes binary data)
        """
        data = Features.coerce(data)
        accepted = tuple(self.component.data_kinds)
        rank = _KIND_ORDER.get(data.kind, len(_KIND_ORDER))
        if not any(rank <= _KIND_ORDER.get(kind, -1) for kind in accepted):
            raise ValueError(
                f"data of kind {data.kind!r} do not fit the {type(self.component).__name__} "
                f"component (it takes {' or '.join(accepted)} data)"
            )
        self.component.check_data(data.X)
        return data

    def _check_params(self, params, n_features: int):
        """``(w (K,), {component params})`` checked for shapes and weights; raises ValueError."""
        if "w" not in params:
            raise ValueError("params must hold the cluster weights 'w'")
        w = np.asarray(params["w"], dtype=float)
        if w.ndim != 1 or w.size == 0:
            raise ValueError(f"w must be a non-empty 1-D array, got shape {w.shape}")
        check_nonnegative("w", w)
        k = w.shape[0]
        comp_params = {}
        for name in self.component.param_names:
            if name not in params:
                raise ValueError(f"params must hold the component parameter {name!r}")
            value = np.asarray(params[name], dtype=float)
            if value.ndim < 2 or value.shape[0] != k or value.shape[1] != n_features:
                raise ValueError(
                    f"{name} has shape {value.shape}, expected ({k}, {n_features}, ...) "
                    f"(one row per cluster of w, one column per feature)"
                )
            comp_params[name] = value
        self._check_weights_sum(w)
        return w, comp_params

    # ------------------------------------------------------------------ coordinates
    def coords(self, data) -> dict:
        """Coordinates for ArviZ / PyMC: cluster, feature, item, pair (+ stick, feature2).

        ``"stick"`` (the ``n_components - 1`` stick-breaking fractions) for the DPM and
        ``"feature2"`` (the second axis of a covariance) and ``"offdiag"`` for a
        Normal-inverse-Wishart component.

        Examples
        --------
        >>> sorted(BayesianMixture(2).coords(np.eye(3)))
        ['cluster', 'feature', 'item', 'pair']
        """
        data = self.check_data(data)
        out = {
            "cluster": np.arange(self.n_components),
            "feature": list(data.feature_names),
            "item": list(data.item_names),
            "pair": np.arange(len(default_pairs(data))),
        }
        if self._is_dp:
            out["stick"] = np.arange(self.n_components - 1)
        out.update(self.component.pymc_coords(list(data.feature_names)))
        return out

    @property
    def dims(self) -> dict[str, list[str]]:
        """Dimensions of every variable: parameters, ``z``, the invariants and the data ``x``.

        Examples
        --------
        >>> DirichletProcessMixture().dims["theta"]
        ['cluster', 'feature']
        """
        out = {
            "w": ["cluster"],
            "z": ["item"],
            "coassign": ["pair"],
            "x": ["item", "feature"],
        }
        if self._is_dp:
            out["v"] = ["stick"]
        out.update(self.component.pymc_dims())
        return out

    # ------------------------------------------------------------------ reference
    def pymc_model(self, data, temperature: float = 1.0):
        """The PyMC reference declaration, cluster assignments marginalised.

        The weights ``w`` (dims ``cluster``; for the DPM a deterministic of the sticks ``v``), the
        component parameters under the component's names (dims ``(cluster, feature)``) and one
        ``pm.Potential`` named ``"marginal_loglik"``:
        ``(1/T) sum_i logsumexp_k(log w_k + log f(x_i | params_k))`` (eq. (2.16)), with
        ``temperature = T`` tempering the likelihood (a power posterior; ``T = 1`` is the model).
        So the model's log density (without the Jacobians of the transforms) is exactly
        ``log prior + log_likelihood(params, data).sum() / T``. Being a potential, the likelihood
        produces no ``log_likelihood`` group.

        Component priors: Beta-Bernoulli ``theta ~ Beta(a, b)``; Dirichlet-multinomial
        ``theta[k] ~ Dir(eta)`` (sequence form: no multinomial coefficient, as the component);
        Normal-Gamma ``tau ~ Gamma(a0, b0)`` (rate ``b0``) and ``mu ~ N(mu0, 1/(kappa0 tau))``;
        Normal-inverse-Wishart by the Bartlett decomposition of the precision (free variables
        ``bartlett_c``, ``bartlett_z``, ``mu_std``; ``mu`` and ``cov`` are deterministics).

        Parameters
        ----------
        data : Features or array
            The items to cluster, in the component's data kind.
        temperature : float

        Returns
        -------
        pymc.Model
            The weights and the components' parameters; the memberships are marginalised.

        Examples
        --------
        >>> m = BayesianMixture(2).pymc_model(np.eye(3))
        >>> sorted(m.named_vars)
        ['marginal_loglik', 'theta', 'w']
        """
        import pymc as pm

        data = self.check_data(data)
        check_positive("temperature", temperature)
        k, d = self.n_components, data.n_features
        x = np.asarray(data.X, dtype=float)
        with pm.Model(coords=self.coords(data)) as model:
            log_w = self._pymc_log_weights(k)
            variables = self.component.pymc_parameters(k, d)
            per_cluster = self.component.pymc_log_likelihood(variables, x) + log_w[None, :]
            loglik = pm.math.logsumexp(per_cluster, axis=1).sum()
            pm.Potential("marginal_loglik", loglik / temperature)
        return model

    def pymc_values(self, params) -> dict[str, np.ndarray]:
        """``params`` with the free variables of :meth:`pymc_model` that are not parameters added.

        The DPM's stick fractions ``v`` (``n_components - 1``) from the ``n_components`` weights
        ``w``, ``v_k = w_k / (1 - sum_{j<k} w_j)``; a Normal-inverse-Wishart component's Bartlett
        variables from ``(mu, cov)``: ``B_k = chol(cov_k^{-1})`` (lower, positive diagonal),
        ``A_k = chol(Psi0^{-1})^{-1} B_k``, ``bartlett_c = diag(A_k)^2``, ``bartlett_z`` its
        entries below the diagonal (``numpy.tril_indices`` order) and ``mu_std = sqrt(kappa0)
        B_k^T (mu_k - mu0)``. Values already in ``params`` are kept. The inverse of the maps in
        :meth:`pymc_model`.

        Examples
        --------
        >>> model = DirichletProcessMixture(n_components=3)
        >>> values = model.pymc_values({"w": [0.5, 0.25, 0.25], "theta": np.full((3, 2), 0.5)})
        >>> values["v"].tolist()
        [0.5, 0.5]
        """
        out = {name: np.asarray(value) for name, value in params.items()}
        if self._is_dp and "v" not in out and self.n_components > 1:
            w = np.asarray(params["w"], dtype=float)
            if w.shape != (self.n_components,) or abs(float(w.sum()) - 1.0) > 1e-6:
                raise ValueError(
                    f"the stick fractions v need all n_components={self.n_components} weights w "
                    f"summing to one, got shape {w.shape} and sum {float(w.sum())!r}"
                )
            remaining = 1.0 - np.concatenate([[0.0], np.cumsum(w)[:-2]])
            out["v"] = w[:-1] / remaining
        return self.component.pymc_values(out)

    def log_prior(self, params) -> float:
        """Log density of the prior at ``params``, in the free variables of :meth:`pymc_model`.

        Weights: finite mixture ``log Dir(w | alpha/K)`` (no term for ``K = 1``); DPM
        ``sum_k log Beta(v_k | 1, alpha)`` over the stick fractions of the truncation (from ``w``
        by :meth:`pymc_values` unless ``v`` is given). Components: Beta-Bernoulli
        ``log Beta(theta | a, b)``; Dirichlet-multinomial ``log Dir(theta[k] | eta)``;
        Normal-Gamma ``log Gamma(tau | a0, rate b0) + log N(mu | mu0, 1/(kappa0 tau))``;
        Normal-inverse-Wishart the density of its Bartlett variables (``chi2(nu0 - j)`` for
        ``bartlett_c[:, j]``, standard normal ``bartlett_z`` and ``mu_std``), which is the density
        of ``(mu, cov)`` times the Jacobian of the map. The stick and Bartlett densities are
        densities of PyMC's variables, not of ``w`` or ``(mu, cov)``. Normalising constants are
        included; written with ``gammaln`` independently of the PyMC declaration.

        Parameters
        ----------
        params : dict with ``w`` (or ``v``) and the component's parameters (leading axis K)

        Returns
        -------
        float

        Examples
        --------
        >>> model = BayesianMixture(2, alpha=2.0)  # Dir(1, 1) weights, Beta(1, 1) components
        >>> model.log_prior({"w": [0.3, 0.7], "theta": [[0.2, 0.9], [0.5, 0.5]]})
        0.0
        """
        values = self.pymc_values(params)
        total = 0.0
        k = self.n_components
        if self._is_dp:
            if k > 1:
                v = np.asarray(values["v"], dtype=float)
                total += float(np.sum(np.log(self.alpha) + xlogy(self.alpha - 1.0, 1.0 - v)))
        elif k > 1:
            w = np.asarray(values["w"], dtype=float)
            c = self.alpha / k
            total += float(gammaln(self.alpha) - k * gammaln(c) + np.sum(xlogy(c - 1.0, w)))
        return total + self.component.log_prior(values)

    # ------------------------------------------------------------------ likelihoods
    def _joint(self, params, data):
        """``log w_k + log f(x_i | params_k)`` (N, K), plus the DPM's remainder column or None."""
        x = np.asarray(data.X, dtype=float)
        w, comp_params = self._check_params(params, data.n_features)
        with np.errstate(divide="ignore"):
            joint = np.log(w)[None, :] + self.component.log_likelihood(comp_params, x)
        rest = 1.0 - float(w.sum())
        if self._is_dp and rest > 1e-12:
            empty = self.component.stats(x[:0], np.zeros(0, dtype=np.int64), 1)
            prior_predictive = self.component.log_predictive(empty, x)[:, 0]
            return joint, np.log(rest) + prior_predictive
        return joint, None

    def log_likelihood(self, params, data) -> np.ndarray:
        """Exact log-likelihood per item, ``log sum_k w_k f(x_i | params_k)`` (eq. (2.16)).

        For the DPM, weights ``w`` that sum to less than one (the occupied clusters of a draw from
        the DP, e.g. :meth:`DirichletProcessMixture.simulate`'s truth) leave the remainder
        ``1 - sum_k w_k`` to the unseen clusters, whose parameters are integrated over the base
        measure: the term ``(1 - sum_k w_k) p(x_i)`` with the prior predictive ``p(x_i)`` of the
        component is added. A remainder below 1e-12 (rounding) is ignored.

        Parameters
        ----------
        params : dict with ``w`` (K,) and the component's parameters (leading axis K)
        data : Features or array

        Returns
        -------
        numpy.ndarray of shape (N,)

        Examples
        --------
        >>> model = BayesianMixture(2)
        >>> params = {"w": [0.5, 0.5], "theta": [[0.9, 0.9], [0.1, 0.1]]}
        >>> model.log_likelihood(params, [[1, 1], [0, 0]]).round(4).tolist()
        [-0.8916, -0.8916]
        """
        return self._log_likelihood(params, data, "data")

    def _log_likelihood(self, params, data, name: str) -> np.ndarray:
        """:meth:`log_likelihood`; held-out items (``name="test"``) with other features are named
        in the error, otherwise the parameter that does not fit ``data`` is."""
        data = self.check_data(data)
        first = self.component.param_names[0]
        if name == "test" and first in params and np.ndim(params[first]) >= 2:
            fit = np.shape(params[first])[1]
            if data.n_features != fit:
                raise ValueError(
                    f"test has {data.n_features} features, the fit has {fit}; held-out items "
                    "must have the features of the training data"
                )
        joint, rest = self._joint(params, data)
        if rest is not None:
            joint = np.concatenate([joint, rest[:, None]], axis=1)
        return row_logsumexp(joint)

    def reference_log_likelihood(self, params, data) -> np.ndarray:
        """The log-likelihood per item as :meth:`pymc_model` declares it (its potential
        ``marginal_loglik``): :meth:`log_likelihood`."""
        return self.log_likelihood(params, data)

    def heldout_log_likelihood(self, params, test) -> np.ndarray:
        """Log predictive density of held-out items, ``log sum_k w_k f(x_i | params_k)`` per item.

        Held-out units are whole items (``Features.split``): a test item's cluster is unknown, so
        its density is the mixture density eq. (2.16) at the drawn parameters; averaged over
        posterior draws (``logsumexp - log S``) it is the held-out log predictive density. Same
        as :meth:`log_likelihood` on ``test``.

        Examples
        --------
        >>> model = DirichletProcessMixture()
        >>> params = {"w": [1.0], "theta": [[0.5, 0.5]]}
        >>> model.heldout_log_likelihood(params, [[1, 0]]).round(4).tolist()
        [-1.3863]
        """
        return self._log_likelihood(params, test, "test")

    def prior_draw(self, data, rng) -> dict:
        """Parameters drawn from the prior at the sizes of ``data``.

        Finite mixture: the truth of :meth:`simulate` with ``n_items`` and ``n_features`` of
        ``data``. DPM, whose PyMC declaration is truncated: the ``n_components - 1`` stick
        fractions ``v ~ Beta(1, alpha)``, the weights they give and ``n_components`` component
        draws.

        Examples
        --------
        >>> draw = DirichletProcessMixture(n_components=4).prior_draw(np.eye(3), 0)
        >>> draw["v"].shape, draw["w"].shape, bool(np.isclose(draw["w"].sum(), 1.0))
        ((3,), (4,), True)
        """
        rng = np.random.default_rng(rng)
        data = self.check_data(data)
        if not self._is_dp:
            _, truth = self.simulate(rng, n_items=data.n_items, n_features=data.n_features)
            return truth
        k = self.n_components
        v = rng.beta(1.0, self.alpha, size=k - 1)
        rest = np.concatenate([[1.0], np.cumprod(1.0 - v)])
        w = rest * np.concatenate([v, [1.0]])
        params = self.component.sample_prior(rng, k, data.n_features)
        return {"w": w, "v": v, **{name: np.asarray(x) for name, x in params.items()}}

    def pymc_initvals(self, data, z) -> dict:
        """PyMC starting values at a partition ``z`` of the items: the clusters' starting values
        from the component (:meth:`~latentzoo.models.conjugate.BetaBernoulli.pymc_initvals`: the
        posterior means), largest cluster first; the weights are the cluster sizes plus 1/2 each
        (a little mass on empty clusters), normalised, as sticks ``v`` for the DPM (clipped to
        ``[1e-6, 1 - 1e-6]``). Needs ``component.has_pymc_initvals``.

        Examples
        --------
        >>> start = BayesianMixture(2).pymc_initvals(np.eye(2)[[0, 0, 1]], np.array([1, 1, 0]))
        >>> start["theta"].round(2).tolist(), start["w"].round(2).tolist()
        ([[0.75, 0.25], [0.33, 0.67]], [0.62, 0.38])
        """
        data = self.check_data(data)
        z = np.asarray(z).astype(np.int64)
        k = self.n_components
        sizes = np.bincount(z, minlength=k).astype(float)
        order = np.argsort(-sizes, kind="stable")
        relabel = np.empty_like(order)
        relabel[order] = np.arange(k)
        params = self.component.pymc_initvals(self.component.stats(data.X, relabel[z], k))
        w = sizes[order] + 0.5
        w = w / w.sum(axis=-1, keepdims=True)
        if self._is_dp:
            remaining = 1.0 - np.concatenate([[0.0], np.cumsum(w)[:-1]])
            params["v"] = np.clip(w[:-1] / remaining[:-1], 1e-6, 1 - 1e-6)
        else:
            params["w"] = w
        return params

    def partition_predictive_log_density(self, z, train, test, alpha=None) -> np.ndarray:
        """``log p(x | z, X)`` of each test item: the predictive given a partition ``z`` of the
        training items ``train`` (the parameters integrated out), eq. (2.19)-(2.20).

        DPM: ``log[sum_k n_k/(n + alpha) p(x | D_k) + alpha/(n + alpha) p(x)]``; finite:
        ``log sum_k (n_k + alpha/K)/(n + alpha) p(x | D_k)``, with the component's closed-form
        predictive ``p(x | D_k)`` of cluster ``k``'s items. ``alpha`` defaults to the model's (pass
        a draw's when the concentration was sampled).

        Examples
        --------
        >>> model = DirichletProcessMixture(alpha=1.0)
        >>> model.partition_predictive_log_density([0, 0], [[1, 0], [1, 0]], [[1, 0]]).round(4)
        array([-0.7802])
        """
        train, test = self.check_data(train), self.check_data(test)
        x = np.asarray(train.X, dtype=np.float64)
        z = np.asarray(z).astype(np.int64)
        alpha = self.alpha if alpha is None else float(alpha)
        comp = self.component
        if self._is_dp:
            stats = comp.stats(x, z, int(z.max()) + 1 if z.size else 0)
            occupied = np.flatnonzero(stats[:, 0])
            rows = np.concatenate([stats[occupied], comp.empty_stats(1, train.n_features)])
            weights = np.append(stats[occupied, 0], alpha)
        else:
            rows = comp.stats(x, z, self.n_components)
            weights = rows[:, 0] + alpha / self.n_components
        log_pred = comp.log_predictive(rows, np.asarray(test.X, dtype=np.float64))
        return logsumexp(log_pred + np.log(weights)[None, :], axis=1) - math.log(x.shape[0] + alpha)

    def heldout_posterior_predictive(self, draws, test, train=None) -> np.ndarray:
        """``log mean_s p_s(x_i)`` per held-out item over ``draws`` (parameter dicts): each draw's
        mixture density (:meth:`heldout_log_likelihood`) when it holds the weights ``w``, else the
        predictive given its partition ``z`` (and concentration ``alpha``, if sampled) and the
        training items (:meth:`partition_predictive_log_density`).

        Examples
        --------
        >>> model = BayesianMixture(1)
        >>> draw = {"w": [1.0], "theta": [[0.5, 0.5]]}
        >>> model.heldout_posterior_predictive([draw, draw], [[1, 0]]).round(4).tolist()
        [-1.3863]
        """
        draws = list(draws)
        logs = np.empty((len(draws), self.check_data(test).n_items))
        for s, params in enumerate(draws):
            if "w" in params:
                logs[s] = self.heldout_log_likelihood(params, test)
            else:
                alpha = params.get("alpha")
                logs[s] = self.partition_predictive_log_density(params["z"], train, test, alpha)
        return logsumexp(logs, axis=0) - np.log(len(draws))

    def replicate_names(self, names) -> bool:
        """Whether a draw holding the variables ``names`` can make a replicate: the assignments
        ``z`` (a collapsed sampler's; the cluster parameters are drawn given them), or the
        weights and the component's parameters (the PyMC reference's draws)."""
        names = set(names)
        return "z" in names or {"w", *self.component.param_names} <= names

    def predictive_summaries(self, x) -> dict:
        """The summary a posterior predictive check compares, of the observed ``Features`` or of
        a replicate (an ``(N, D)`` array): ``feature_mean``, the mean of each feature over the
        items (label-invariant).

        Examples
        --------
        >>> from latentzoo.models import BayesianMixture
        >>> BayesianMixture(2).predictive_summaries(np.array([[0.0, 1.0], [1.0, 1.0]]))
        {'feature_mean': (('feature',), array([0.5, 1. ]))}
        """
        values = x.X if hasattr(x, "X") else np.asarray(x, dtype=float)
        return {"feature_mean": (("feature",), values.mean(axis=0))}

    def replicate(self, params, data, rng) -> dict:
        """One replicate of ``data`` given one draw's assignments ``z``: each occupied cluster's
        parameters drawn from their conjugate posterior given its items
        (``component.sample_posterior``), then every item drawn again from its cluster
        (``component.replicate``), so ``E[feature_mean] = mean_i E[mean of x | cluster z_i]``.

        Returns
        -------
        dict
            ``{name: (dims, array)}``: ``x``, the replicated items (under the name of the
            ``observed_data`` variable), and :meth:`predictive_summaries` of it.

        Examples
        --------
        >>> from latentzoo.data import Features
        >>> from latentzoo.models import BayesianMixture
        >>> data = Features([[0, 1], [1, 1], [0, 0]])
        >>> out = BayesianMixture(2).replicate({"z": [1, 1, 0]}, data, np.random.default_rng(0))
        >>> out["x"][1].shape, out["feature_mean"][0]
        ((3, 2), ('feature',))
        """
        x = data.X
        if "z" in params:
            # Occupied clusters renumbered 0..K-1: a DPM's labels may skip numbers.
            _, labels = np.unique(np.asarray(params["z"], dtype=np.int64), return_inverse=True)
            n_clusters = int(labels.max(initial=0)) + 1
            stats = self.component.stats(x, labels, n_clusters)
            drawn = self.component.sample_posterior(rng, stats)
        else:
            labels, drawn = self._replicate_clusters(params, data, rng)
        replicated = self.component.replicate(rng, drawn, labels, x)
        return {"x": (("item", "feature"), replicated), **self.predictive_summaries(replicated)}

    def _replicate_clusters(self, params, data, rng):
        """``(labels, cluster parameters)`` of a draw of the weights and the component's
        parameters (no ``z``): each item's cluster drawn from its posterior
        :meth:`responsibilities`, as a draw of ``z`` would be; a DPM draw whose weights leave a
        remainder gives the items drawn into it a new cluster from the prior."""
        resp = self.responsibilities(params, data)
        cumulative = np.cumsum(resp, axis=1)
        uniforms = rng.random((resp.shape[0], 1)) * cumulative[:, -1:]
        labels = np.minimum((cumulative < uniforms).sum(axis=1), resp.shape[1] - 1)
        drawn = {name: np.asarray(params[name], dtype=float) for name in self.component.param_names}
        n_weighted = len(next(iter(drawn.values())))
        if resp.shape[1] > n_weighted:
            new = self.component.sample_prior(rng, 1, data.X.shape[1])
            drawn = {name: np.concatenate([drawn[name], new[name]]) for name in drawn}
        return labels, drawn

    def heldout_draws_usable(self, names, train=None) -> bool:
        """Whether draws holding the variables ``names`` can be scored on held-out items: the
        weights ``w`` (mixture density), or the partitions ``z`` with the training items.

        Examples
        --------
        >>> DirichletProcessMixture().heldout_draws_usable(["z"]), DirichletProcessMixture().heldout_draws_usable(["z"], train=[[1]])
        (False, True)
        """
        return "w" in names or ("z" in names and train is not None)

    heldout_draws_advice = (
        "pass train=, the training items, or pass test= to gibbs, whose log_likelihood "
        "group then scores the test items"
    )

    def fit_shape(self, params) -> tuple[None, int | None]:
        """``(None, features)`` of a point estimate: held-out items are new, only the features
        must match.

        Examples
        --------
        >>> BayesianMixture(2).fit_shape({"w": [0.5, 0.5], "theta": np.ones((2, 4))})
        (None, 4)
        """
        first = self.component.param_names[0]
        return None, np.shape(params[first])[1] if first in params else None

    def labels(self, params, train=None) -> np.ndarray:
        """Hard cluster label of each item: the draw's ``z``, else ``argmax resp``, else the most
        probable cluster under the parameters (needs ``train``).

        Examples
        --------
        >>> BayesianMixture(2).labels({"z": [1, 1, 0]}).tolist()
        [1, 1, 0]
        """
        return labels_from_memberships(self, params, train)

    def responsibilities(self, params, data) -> np.ndarray:
        """``P(s_i = k | x_i, params)`` (eq. (2.17)), shape (N, K); for the DPM with weights summing
        below one a last column holds the remainder's share (an unseen cluster).

        Examples
        --------
        >>> params = {"w": [0.5, 0.5], "theta": [[0.9], [0.1]]}
        >>> BayesianMixture(2).responsibilities(params, [[1], [0]]).round(2).tolist()
        [[0.9, 0.1], [0.1, 0.9]]
        """
        data = self.check_data(data)
        joint, rest = self._joint(params, data)
        if rest is not None:
            joint = np.concatenate([joint, rest[:, None]], axis=1)
        return np.exp(joint - row_logsumexp(joint)[:, None])

    def invariants(self, params, data, pairs=None) -> dict[str, np.ndarray]:
        """Label-invariant quantities through which every method is compared.

        ``loglik``: ``log_likelihood(params, data).sum()``. If ``params`` holds assignments
        ``"z"`` (N,) (draws of a collapsed Gibbs sampler) the rest is *hard*: ``coassign =
        1[z_a == z_b]`` on the pairs and ``n_occupied`` the number of distinct labels. Otherwise it
        is *soft*, from the responsibilities ``r`` of eq. (2.17) (exact conditional posteriors,
        independent across items): ``coassign = sum_k r_ak r_bk`` and ``n_occupied = sum_k [1 -
        prod_i (1 - r_ik)]``, the expected number of occupied clusters (the DPM's remainder column,
        when present, counts as one new cluster per item and never co-assigns). Either way the
        posterior mean of ``coassign`` is ``P(s_a = s_b | data)``. ``pairs`` defaults to
        :func:`default_pairs`.

        Returns
        -------
        dict with ``loglik`` (scalar), ``coassign`` (n_pairs,), ``n_occupied`` (scalar)

        Examples
        --------
        >>> model = BayesianMixture(2)
        >>> params = {"w": [0.5, 0.5], "theta": [[0.9], [0.1]]}
        >>> inv = model.invariants(params, [[1], [1], [0]])
        >>> inv["coassign"].round(2).tolist(), float(inv["n_occupied"].round(3))
        ([0.82, 0.18, 0.18], 1.91)
        >>> model.invariants({**params, "z": [0, 0, 1]}, [[1], [1], [0]])["coassign"].tolist()
        [1.0, 0.0, 0.0]
        """
        data = self.check_data(data)
        n = data.n_items
        pairs = default_pairs(data) if pairs is None else np.asarray(pairs, dtype=np.int64)
        if pairs.ndim != 2 or pairs.shape[1] != 2:
            raise ValueError(f"pairs must have shape (n_pairs, 2), got {pairs.shape}")
        if pairs.size and (pairs.min() < 0 or pairs.max() >= n):
            raise ValueError(f"pairs must index items 0..{n - 1}")
        return self.checked_summaries(params, data, pairs)[1]

    def checked_summaries(self, params, data: Features, pairs: np.ndarray):
        """``(log_likelihood per item, invariants)`` from one evaluation of the joint, for callers
        whose ``data`` (a checked :class:`Features`) and ``pairs`` are already validated: the
        collapsed sampler's draw, which would otherwise check the data twice per kept draw.

        The same numbers as :meth:`log_likelihood` and :meth:`invariants`.

        Examples
        --------
        >>> model = BayesianMixture(2)
        >>> params = {"w": [0.5, 0.5], "theta": [[0.9], [0.1]]}
        >>> data = model.check_data([[1], [1], [0]])
        >>> per_item, inv = model.checked_summaries(params, data, default_pairs(data))
        >>> bool(np.allclose(per_item, model.log_likelihood(params, data)))
        True
        """
        n = data.n_items
        joint, rest = self._joint(params, data)
        if rest is not None:
            joint = np.concatenate([joint, rest[:, None]], axis=1)
        norm = row_logsumexp(joint)
        out = {"loglik": np.asarray(norm.sum())}
        if "z" in params:
            z = _as_label_matrix(params["z"], n, "z")[0]
            out["coassign"] = (z[pairs[:, 0]] == z[pairs[:, 1]]).astype(float)
            out["n_occupied"] = np.asarray(float(np.unique(z).size))
            return norm, out
        resp = np.exp(joint - norm[:, None])
        k = joint.shape[1] - (rest is not None)
        out["coassign"] = np.einsum("pk,pk->p", resp[pairs[:, 0], :k], resp[pairs[:, 1], :k])
        with np.errstate(divide="ignore"):
            log_empty = np.log1p(-np.minimum(resp[:, :k], 1.0)).sum(axis=0)
        occupied = float(np.sum(-np.expm1(log_empty)))
        if rest is not None:
            occupied += float(resp[:, k].sum())
        out["n_occupied"] = np.asarray(occupied)
        return norm, out

    # ------------------------------------------------------------------ collapsed
    def _blocks_log_marginal(self, z: np.ndarray, x: np.ndarray) -> np.ndarray:
        """``sum_l log p(D_l)`` over the blocks of each row of ``z`` (S, N), eq. (3.1).

        Up to 52 items every block is coded as a bit mask of its items (one ``bincount`` with
        weights ``2**i``, i.e. the product of the block-indicator matrix with the powers of two,
        exact in float64), the distinct blocks are found with ``numpy.unique`` (at most ``2**N -
        1`` of them, 1023 for ``N = 10`` against ``N * Bell(N)`` blocks of all partitions), and the
        component computes their statistics in one call and their log marginals vectorised over
        blocks. Above 52 items the blocks of a chunk of rows are stacked instead.
        """
        comp = self.component
        n_rows, n_items = z.shape
        sizes, key, n_labels = _block_sizes(z)
        if n_items <= 52:
            weights = np.tile(2.0 ** np.arange(n_items), n_rows)
            masks = np.bincount(key.ravel(), weights=weights, minlength=n_rows * n_labels)
            masks = masks.astype(np.int64)
            unique, inverse = np.unique(masks, return_inverse=True)
            bits = (unique[:, None] >> np.arange(n_items, dtype=np.int64)[None, :]) & 1
            block, item = np.nonzero(bits)
            stats = comp.stats(x[item], block, unique.size)
            log_marginal = np.asarray(comp.log_marginal(stats), dtype=float).copy()
            log_marginal[unique == 0] = 0.0  # empty label: p(no data) = 1
            return log_marginal[inverse.ravel()].reshape(n_rows, n_labels).sum(axis=1)
        out = np.empty(n_rows)
        chunk = max(1, int(4_000_000 // max(1, n_items * x.shape[1])))
        for start in range(0, n_rows, chunk):
            stop = min(n_rows, start + chunk)
            local = (key[start:stop] - start * n_labels).ravel()
            stats = comp.stats(np.tile(x, (stop - start, 1)), local, (stop - start) * n_labels)
            log_marginal = np.asarray(comp.log_marginal(stats), dtype=float).copy()
            log_marginal[sizes[start:stop].ravel() == 0] = 0.0
            out[start:stop] = log_marginal.reshape(stop - start, n_labels).sum(axis=1)
        return out

    def collapsed_log_joint(self, labels, data) -> np.ndarray:
        """Exact ``log p(z, X)`` with the weights and all component parameters integrated out.

        ``log p(z) + sum_l log p(D_l)``, the terms of eq. (3.7)/(3.8) for many label arrays at
        once: ``p(D_l)`` the conjugate marginal of the items of block ``l`` (eq. (3.1)), ``p(z)``
        the CRP/Ewens probability of the partition (eq. (3.9), from (2.19)-(2.20)) for the DPM and
        the symmetric Dirichlet-multinomial probability of the labelled assignment (section
        2.3.1.1) for the finite mixture. This is the target of the collapsed Gibbs samplers.

        Parameters
        ----------
        labels : int array of shape (S, N) or (N,)
            Cluster labels (finite mixture: in ``0..K-1``; DPM: any non-negative labels, only the
            partition matters).
        data : Features or array

        Returns
        -------
        numpy.ndarray of shape (S,)

        Examples
        --------
        >>> model = DirichletProcessMixture(alpha=1.0)
        >>> x = [[1, 0], [1, 0], [0, 1]]
        >>> lp = model.collapsed_log_joint([[0, 0, 1], [5, 5, 2]], x)
        >>> bool(lp[0] == lp[1])
        True
        """
        data = self.check_data(data)
        z = _as_label_matrix(labels, data.n_items)
        prior = self._labels_log_prior(z)
        return prior + self._blocks_log_marginal(z, np.asarray(data.X, dtype=float))

    def _enumerate(self, data):
        """All partitions the model supports, with their log prior + log likelihood."""
        data = self.check_data(data)
        n = data.n_items
        if n > MAX_ENUMERATION_ITEMS:
            raise ValueError(
                f"exact enumeration of set partitions is limited to "
                f"{MAX_ENUMERATION_ITEMS} items, the data have n_items={n}"
            )
        partitions = set_partitions(n)
        if not self._is_dp:
            partitions = partitions[partitions.max(axis=1) < self.n_components]
        log_joint = self._partition_log_prior(partitions) + self._blocks_log_marginal(
            partitions, np.asarray(data.X, dtype=float)
        )
        return partitions, log_joint

    def log_marginal_likelihood(self, data) -> float:
        """``log p(X | alpha, beta)`` exactly, summing over all set partitions (Lemma 3.1, (3.8)).

        ``logsumexp_v [log p(v) + sum_l log p(D_l^v)]`` over the ``Bell(N)`` partitions of
        :func:`set_partitions` (DPM: ``p(v)`` the Ewens formula (3.9)); for the finite mixture the
        partitions with at most ``K`` blocks, ``p(v) = K!/(K-k)! p(s)`` (every labelling of the
        partition), so the result equals the sum over all ``K**N`` labelled assignments, eq. (2.18)
        and (3.7). Vectorised over partitions; feasible up to about 10 items.

        Examples
        --------
        >>> model = DirichletProcessMixture(alpha=1.0)
        >>> # together: CRP 1/2 times int theta^2 = 1/3; apart: 1/2 times (1/2)^2
        >>> bool(np.isclose(model.log_marginal_likelihood([[1], [1]]), np.log(1 / 6 + 1 / 8)))
        True
        """
        _, log_joint = self._enumerate(data)
        return float(logsumexp(log_joint))

    def partition_posterior(self, data) -> tuple[np.ndarray, np.ndarray]:
        """Exact posterior over the partitions of the items, ``p(v | X)``, by enumeration.

        Returns
        -------
        partitions : numpy.ndarray (S, N) int64
            Canonical labels (:func:`set_partitions`; for the finite mixture only those with at
            most ``K`` blocks, the others having probability zero).
        log_probs : numpy.ndarray (S,)
            Normalised log posterior probabilities (``logsumexp(log_probs) == 0``).

        Examples
        --------
        >>> parts, lp = DirichletProcessMixture().partition_posterior([[1, 1], [1, 1], [0, 0]])
        >>> parts.shape, round(float(np.exp(lp).sum()), 12)
        ((5, 3), 1.0)
        >>> parts[np.argmax(lp)].tolist()
        [0, 0, 1]
        """
        partitions, log_joint = self._enumerate(data)
        return partitions, log_joint - logsumexp(log_joint)

    # ------------------------------------------------------------------ simulator
    def simulate(
        self,
        random_state=None,
        n_items: int = 50,
        n_features: int = 8,
        separated: bool = False,
        n_clusters: int | None = None,
    ):
        """Draw ``(data, truth)`` from the generative process.

        Default: weights and labels from the model's prior (see the subclass), component
        parameters from the component's prior (``sample_prior``) and the items from
        ``component.simulate``. ``separated=True`` instead gives well-separated, balanced clusters
        (``n_clusters`` of them: default ``n_components`` for the finite mixture, 3 for the DPM):
        uniform weights, items dealt to the clusters in turn and shuffled, and parameters far
        apart -- Beta-Bernoulli ``theta = 0.9`` on the features ``d % K == k`` and 0.1 elsewhere;
        Dirichlet-multinomial mass 0.9 spread on the same features, 0.1 on all; Normal-Gamma and
        Normal-inverse-Wishart means ``5 (k - (K - 1) / 2)`` in every dimension, unit precision
        (identity covariance). Separated data are not a draw from the prior (not for SBC); they
        are where PyMC's chains agree (the reference level).

        Returns
        -------
        data : Features (kind of the component's first data kind)
        truth : dict with ``z`` (N,) int64, ``w`` (K,) and the component parameters (leading axis
            K). DPM: canonical labels (order of first appearance) and the weights of the occupied
            clusters only (they sum to less than one, see :meth:`log_likelihood`); finite mixture:
            all ``n_components`` weights and parameters, occupied or not, labels in ``0..K-1``.

        Examples
        --------
        >>> data, truth = BayesianMixture(3).simulate(0, n_items=10, n_features=4)
        >>> data.shape, truth["z"].shape, truth["w"].shape, truth["theta"].shape
        ((10, 4), (10,), (3,), (3, 4))
        """
        check_integer("n_items", n_items)
        check_integer("n_features", n_features)
        rng = as_rng(random_state)
        comp = self.component
        if separated:
            k = self._default_separated_clusters() if n_clusters is None else n_clusters
            check_integer("n_clusters", k)
            w = np.full(k, 1.0 / k)
            z = balanced_labels(rng, n_items, k)
            if self._is_dp:
                z = canonical_labels(z)
            params = comp.separated_params(k, n_features)
        else:
            if n_clusters is not None:
                raise ValueError("n_clusters is only used with separated=True")
            w, z = self._draw_weights_labels(rng, n_items)
            params = comp.sample_prior(rng, w.shape[0], n_features)
        x = comp.simulate(rng, params, z)
        kind = comp.data_kinds[0]
        data = Features(np.asarray(x), kind=kind)
        truth = {"z": z, "w": w, **{name: np.asarray(v) for name, v in params.items()}}
        return data, truth


# --------------------------------------------------------------------------- the two models
@dataclass(frozen=True)
class BayesianMixture(_MixtureMethods):
    """Finite Bayesian mixture with ``K`` components (thesis section 2.2.3, eq. (2.16)-(2.18)).

    ``pi ~ Dir(alpha/K, ..., alpha/K)`` (eq. (3.5)), ``theta_k ~`` the component's conjugate
    prior, ``s_i ~ Cat(pi)``, ``x_i ~ f(. | theta_{s_i})``. As ``K -> inf`` it becomes the
    :class:`DirichletProcessMixture` with concentration ``alpha`` (section 2.3.1.1).

    Parameters
    ----------
    n_components : int
        ``K``, the number of mixture components.
    alpha : float
        Total concentration of the symmetric Dirichlet prior on the weights (each entry
        ``alpha / K``).
    component : conjugate component
        ``BetaBernoulli()`` (binary data, the default), ``DirichletMultinomial()`` (counts),
        ``NormalGamma()`` or ``NormalInverseWishart()`` (real) from
        :mod:`latentzoo.models.conjugate`.

    Examples
    --------
    >>> model = BayesianMixture(n_components=2, alpha=1.0)
    >>> data, truth = model.simulate(0, n_items=6, n_features=3)
    >>> model.log_likelihood(truth, data).shape
    (6,)
    >>> _, lp = model.partition_posterior(data)
    >>> lp.shape  # the 32 partitions of 6 items into at most 2 blocks
    (32,)
    """

    n_components: int
    alpha: float = 1.0
    component: object = field(default_factory=BetaBernoulli)

    name = "bayesian_mixture"
    _is_dp = False

    def __post_init__(self):
        self._validate()

    def _check_weights_sum(self, w):
        if w.shape[0] != self.n_components:
            raise ValueError(f"w has shape {w.shape}, expected ({self.n_components},)")
        if abs(float(w.sum()) - 1.0) > 1e-6:
            raise ValueError(f"w must sum to one, got {float(w.sum())!r}")

    def _labels_log_prior(self, z):
        return dirichlet_labels_log_prior(z, self.alpha, self.n_components)

    def _partition_log_prior(self, partitions):
        blocks = partitions.max(axis=1) + 1 if partitions.size else np.zeros(len(partitions))
        return _log_falling_factorial(self.n_components, blocks) + dirichlet_labels_log_prior(
            partitions, self.alpha, self.n_components
        )

    def _pymc_log_weights(self, k):
        import pymc as pm
        import pytensor.tensor as pt

        if k == 1:
            w = pm.Deterministic("w", pt.ones(1), dims="cluster")
        else:
            w = pm.Dirichlet("w", a=np.full(k, self.alpha / k), dims="cluster")
        return pt.log(w)

    def _default_separated_clusters(self):
        return self.n_components

    def _draw_weights_labels(self, rng, n_items):
        k = self.n_components
        w = rng.dirichlet(np.full(k, self.alpha / k)) if k > 1 else np.ones(1)
        z = rng.choice(k, size=n_items, p=w / w.sum()).astype(np.int64)
        return w, z


@dataclass(frozen=True)
class DirichletProcessMixture(_MixtureMethods):
    """Dirichlet process mixture (thesis section 2.3.1, eq. (2.19)-(2.20); section 3.3).

    ``G ~ DP(alpha, H)`` with ``H`` the component's conjugate prior, ``theta_i ~ G``, ``x_i ~
    f(. | theta_i)``: the infinite limit of :class:`BayesianMixture`. Its partitions follow the
    Chinese restaurant process, ``p(v)`` of eq. (3.9), and the marginal likelihood is the sum over
    partitions of Lemma 3.1, computed exactly by :meth:`log_marginal_likelihood` for small data.

    Parameters
    ----------
    alpha : float
        DP concentration (the expected number of clusters grows as ``alpha log N``).
    component : conjugate component
        See :class:`BayesianMixture`.
    n_components : int
        Truncation level of the PyMC stick-breaking reference only: ``v_k ~ Beta(1, alpha)`` for
        ``k < T``, ``w_k = v_k prod_{j<k} (1 - v_j)``, the last stick takes the rest. The collapsed
        quantities and the simulator are untruncated. Printed as ``pymc_truncation`` (the
        ``repr``), because ``n_components=10`` reads as ten clusters: the DP's number of clusters
        is unbounded.

    Examples
    --------
    >>> DirichletProcessMixture(alpha=2.0, n_components=10)
    DirichletProcessMixture(alpha=2.0, component=BetaBernoulli(a=1.0, b=1.0), pymc_truncation=10)
    >>> model = DirichletProcessMixture(alpha=1.0)
    >>> data, truth = model.simulate(0, n_items=8, n_features=5)
    >>> truth["z"][0], truth["w"].shape == (truth["z"].max() + 1,)
    (np.int64(0), True)
    >>> bool(np.isfinite(model.log_marginal_likelihood(data)))
    True
    """

    alpha: float = 1.0
    component: object = field(default_factory=BetaBernoulli)
    n_components: int = 20

    name = "dpm"
    _is_dp = True

    def __post_init__(self):
        self._validate()

    def __repr__(self) -> str:
        # n_components only truncates the PyMC reference; named so, it is not read as a number
        # of clusters (the constructor keeps the name the zoo gives every family's main size).
        return (
            f"DirichletProcessMixture(alpha={self.alpha!r}, component={self.component!r}, "
            f"pymc_truncation={self.n_components!r})"
        )

    def _check_weights_sum(self, w):
        if float(w.sum()) > 1.0 + 1e-6:
            raise ValueError(f"w must sum to at most one, got {float(w.sum())!r}")

    def _labels_log_prior(self, z):
        return crp_log_prior(z, self.alpha)

    def _partition_log_prior(self, partitions):
        return crp_log_prior(partitions, self.alpha)

    def _pymc_log_weights(self, k):
        import pymc as pm
        import pytensor.tensor as pt

        if k == 1:
            pm.Deterministic("w", pt.ones(1), dims="cluster")
            return pt.zeros(1)
        v = pm.Beta("v", alpha=1.0, beta=self.alpha, dims="stick")
        log_rest = pt.concatenate([pt.zeros(1), pt.cumsum(pt.log1p(-v))])  # log prod_{j<k}(1-v_j)
        log_w = log_rest + pt.concatenate([pt.log(v), pt.zeros(1)])
        pm.Deterministic("w", pt.exp(log_w), dims="cluster")
        return log_w

    def _default_separated_clusters(self):
        return 3

    def _draw_weights_labels(self, rng, n_items):
        z = _crp_labels(rng.random(n_items), float(self.alpha))
        sizes = np.bincount(z).astype(float)
        # (w_1..w_K, rest) | z ~ Dir(n_1, ..., n_K, alpha): the DP's weights given the partition
        w = rng.dirichlet(np.append(sizes, self.alpha))[:-1]
        return w, z
