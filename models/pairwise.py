"""Central and pairwise clustering as Gibbs distributions over hard assignments.

Hofmann & Buhmann (1997), "Pairwise data clustering by deterministic annealing", sections 2-4.
An assignment of ``N`` items to ``K`` clusters is a Boolean matrix ``M`` with one 1 per row
(eq. (6)-(7)); here it is stored as the vector of labels ``z`` (``M_iv = [z_i = v]``).

**Central clustering** (section 3.1) on vectors ``x_i``: the cost of ``M`` given reference vectors
``y_v`` is ``H^cc(M) = sum_i sum_v M_iv ||x_i - y_v||^2`` (eq. (8)); for fixed ``y`` its Gibbs
distribution at temperature ``T`` factorises over the items (eq. (9)-(12)), with the expected
assignments ``<M_iv>`` of eq. (15), and the maximum-entropy reference vectors are the centroids of
eq. (14). Without given reference vectors the cost of ``M`` is the K-means cost, ``y_v`` the
centroids of the assigned items (eq. (32)), which by eq. (31) equals the pairwise cost (16) of the
squared Euclidean distances up to its constant.

**Pairwise clustering** (section 3.2) on dissimilarities ``D_ik``: the normalised cost

    H^pc(M) = 1/2 sum_ik D_ik / N (sum_v M_iv M_kv / p_v - 1),     p_v = sum_i M_iv / N,   (16)

whose Gibbs distribution ``P(M) ∝ exp(-H^pc(M) / T)`` (eq. (18)) does not factorise. An empty
cluster contributes nothing (its ``0/0`` term is taken as 0). The cost is unchanged by replacing
``D`` with ``(D + D^T)/2`` and, when every entry including the diagonal is shifted by ``D_0``,
by the shift (eq. (17)); for a shift of the off-diagonal entries only (a diagonal that stays zero,
as :class:`~latentzoo.data.Dissimilarities` requires) the cost changes by the constant
``-D_0 (K_occ - 1) / 2``, ``K_occ`` the number of occupied clusters (the diagonal's own share of
eq. (17)'s identity).

Both models give: ``cost`` (vectorised over a batch of label vectors), ``simulate``, the PyMC
reference ``pymc_model`` (the labels as ``pm.Categorical``, the Gibbs weight ``-H/T`` as a
``pm.Potential``, sampled by PyMC's ``CategoricalGibbsMetropolis``: the Monte Carlo reference of the
seed's sections 2.1 and 4.2), exact ``gibbs_expectations`` by enumeration of all ``K^N``
assignments for tiny ``N``, and the label-invariant quantities (co-assignment probabilities
``P(z_i = z_j)`` and the expected cost) through which every method is compared.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.special import logsumexp

from latentzoo.data import Dataset, Dissimilarities, Features
from latentzoo.data.checks import as_rng
from latentzoo.models._checks import check_fits_data, check_integer, check_positive
from latentzoo.models.base import CostModel, balanced_labels

__all__ = [
    "MAX_STATES",
    "CentralClustering",
    "PairwiseClustering",
    "coassignment_matrix",
    "critical_temperature",
    "pairwise_cost",
    "uniform_dissimilarities",
]

MAX_STATES = 2**22
"""The largest number of assignments ``K^N`` that :meth:`gibbs_expectations` enumerates."""

_CHUNK = 2**14
"""Assignments per block of the enumeration (bounds the memory to a few MB)."""


# ----------------------------------------------------------------------------- helpers
def _check_labels(assignments, n_items: int, n_components: int) -> np.ndarray:
    """``assignments`` as an int64 array of shape ``(N,)`` or ``(B, N)``, checked."""
    z = np.asarray(assignments)
    if z.ndim not in (1, 2) or z.shape[-1] != n_items:
        raise ValueError(
            f"assignments must have shape (N,) or (n_assignments, N) with N = {n_items}, got "
            f"shape {z.shape}"
        )
    if z.size and (z.dtype.kind not in "iu" and not np.all(np.equal(np.mod(z, 1), 0))):
        raise ValueError("assignments must hold integer cluster labels")
    z = z.astype(np.int64)
    if z.size and (z.min() < 0 or z.max() >= n_components):
        bad = int(z[(z < 0) | (z >= n_components)].flat[0])
        raise ValueError(
            f"assignments must be labels in 0..{n_components - 1} (n_components={n_components}),"
            f" got {bad}"
        )
    return z


def _one_hot(z: np.ndarray, n_components: int) -> np.ndarray:
    return (z[..., None] == np.arange(n_components)).astype(np.float64)


def _within_sums(D: np.ndarray, z: np.ndarray, n_components: int):
    """``W_v = sum_{i,k: z_i = z_k = v} D_ik`` and ``n_v`` for a batch ``z`` of shape (B, N)."""
    M = _one_hot(z, n_components)
    DM = np.matmul(D, M)  # (B, N, K): one product per assignment
    W = np.einsum("biv,biv->bv", M, DM)
    return W, M.sum(axis=1)


def _normalised_within(W: np.ndarray, n: np.ndarray) -> np.ndarray:
    """``sum_v W_v / n_v`` with empty clusters contributing 0."""
    return np.sum(np.divide(W, n, out=np.zeros_like(W), where=n > 0), axis=-1)


def pairwise_cost(D, assignments, n_components: int | None = None) -> np.ndarray | float:
    """The normalised pairwise clustering cost ``H^pc`` of eq. (16), for any real square ``D``.

    ``H^pc = 1/2 sum_v W_v / n_v - sum_ik D_ik / (2N)`` with ``W_v`` the sum of the
    dissimilarities within cluster ``v`` (both orders, diagonal included) and ``n_v`` its size.
    Unlike :class:`~latentzoo.data.Dissimilarities`, ``D`` may be negative, asymmetric or have a
    non-zero diagonal (the seed allows all three, section 1), so eq. (17)'s invariances can be
    checked on the raw matrix.

    Parameters
    ----------
    D : array_like of shape (N, N)
        Finite real numbers.
    assignments : array_like of int, shape (N,) or (B, N)
        Cluster labels ``z_i`` in ``0..K-1`` (one row per assignment of a batch).
    n_components : int, optional
        ``K``; default ``max(assignments) + 1``.

    Returns
    -------
    float, or numpy.ndarray of shape (B,) for a batch

    Examples
    --------
    >>> D = np.array([[0., 1, 4], [1, 0, 4], [4, 4, 0]])
    >>> float(pairwise_cost(D, [0, 0, 1]))
    -2.5
    >>> pairwise_cost(D + 7.0, [[0, 0, 1], [0, 1, 1]]).round(6)  # eq. (17): shift invariant
    array([-2.5, -1. ])
    """
    D = np.asarray(D, dtype=np.float64)
    if D.ndim != 2 or D.shape[0] != D.shape[1] or D.shape[0] == 0:
        raise ValueError(f"D must be a non-empty square matrix, got shape {D.shape}")
    if not np.all(np.isfinite(D)):
        raise ValueError("D must hold finite numbers only")
    largest = float(np.max(np.abs(D)))
    if largest > 1e100 or 0 < largest < 1e-100:
        # The sums of D overflow (or lose the subnormal digits): (16) is linear in D, so sum
        # D / 2**e, exactly rescaled, and scale the cost back.
        exponent = int(np.frexp(largest)[1])
        cost = pairwise_cost(np.ldexp(D, -exponent), assignments, n_components)
        return np.ldexp(cost, exponent) if np.ndim(cost) else float(np.ldexp(cost, exponent))
    n = D.shape[0]
    if n_components is None:
        n_components = int(np.max(assignments)) + 1 if np.size(assignments) else 1
    check_integer("n_components", n_components)
    z = _check_labels(assignments, n, n_components)
    offset = D.sum() / (2 * n)
    if z.ndim == 1:
        # One assignment: sum each cluster's block of D (K slices, O(N^2) in all), not D @ M.
        order = np.argsort(z, kind="stable")
        bounds = np.searchsorted(z[order], np.arange(n_components + 1))
        total = 0.0
        for v in range(n_components):
            members = order[bounds[v] : bounds[v + 1]]
            if members.size:
                total += D[np.ix_(members, members)].sum() / members.size
        return float(0.5 * total - offset)
    # sum_ik M_iv D_ik M_kv is the same for D and (D + D^T)/2 (eq. (17)'s second invariance).
    costs = np.empty(z.shape[0])
    for start in range(0, z.shape[0], _CHUNK):
        W, sizes = _within_sums(D, z[start : start + _CHUNK], n_components)
        costs[start : start + _CHUNK] = 0.5 * _normalised_within(W, sizes) - offset
    return costs


def coassignment_matrix(resp) -> np.ndarray:
    """``P(z_i = z_j) = sum_v <M_iv> <M_jv>`` of a factorised assignment distribution, diagonal 1.

    The label-invariant summary of mean-field and Gibbs (eq. (12)) assignment probabilities.

    Examples
    --------
    >>> coassignment_matrix(np.array([[1.0, 0.0], [0.5, 0.5]]))
    array([[1. , 0.5],
           [0.5, 1. ]])
    """
    resp = np.asarray(resp, dtype=np.float64)
    P = resp @ resp.T
    np.fill_diagonal(P, 1.0)
    return P


def critical_temperature(data) -> float:
    """The first critical temperature of deterministic annealing.

    For vectors (a :class:`~latentzoo.data.Features` or an ``(N, d)`` array) it is
    ``T_c = 2 lambda_max`` of the data covariance (Rose, Gurewitz & Fox 1990; the temperature at
    which the single centroid of central clustering, eq. (14)-(15), splits). For dissimilarities
    the same linear stability analysis of the uniform mean-field solution of eq. (25)-(26) gives
    ``T_c = lambda_max(-J D J) / N`` (``J`` the centring matrix), which reduces to
    ``2 lambda_max`` of the covariance when ``D_ik = ||x_i - x_k||^2``.

    Examples
    --------
    >>> x = np.array([[-1.0, 0.0], [1.0, 0.0]])
    >>> critical_temperature(x)
    2.0
    >>> round(critical_temperature(Dissimilarities.from_features(x, "sqeuclidean")), 6)
    2.0
    """
    container = data if isinstance(data, Dataset) else Features(data, kind="real")
    return container.top_centred_eigenvalue()


def uniform_dissimilarities(random_state=None, n_items: int = 100, high: float = 1.0):
    """A random instance: ``D_ik`` i.i.d. uniform on ``[0, high]`` (the seed's Fig. 1(b)).

    Examples
    --------
    >>> uniform_dissimilarities(0, n_items=5)
    Dissimilarities(5 items)
    """
    check_integer("n_items", n_items, low=2)
    check_positive("high", high)
    rng = as_rng(random_state)
    upper = np.triu(rng.uniform(0.0, high, size=(n_items, n_items)), k=1)
    return Dissimilarities(upper + upper.T)


def _enumeration_size(n_items: int, n_components: int, max_states: int) -> int:
    states = float(n_components) ** n_items
    if states > max_states:
        seconds = states / 2e6
        raise ValueError(
            f"gibbs_expectations enumerates all K^N = {n_components}^{n_items} = {states:.3g} "
            f"assignments, more than max_states={max_states} (about {seconds:.3g} s and "
            f"{states * n_items * 8 / 1e9:.3g} GB of labels); use N <= "
            f"{int(np.log(max_states) / np.log(max(n_components, 2)))} items or a sampler"
        )
    return int(states)


def _labels_of_states(states: np.ndarray, n_items: int, n_components: int) -> np.ndarray:
    """The label vectors of the assignments numbered ``states`` (base-``K`` digits)."""
    powers = n_components ** np.arange(n_items - 1, -1, -1, dtype=np.int64)
    return (states[:, None] // powers[None, :]) % n_components


def _enumerate(cost_of, n_items: int, n_components: int, temperature: float, max_states: int):
    """Exact Gibbs expectations of ``exp(-cost/T)`` over all ``K^N`` label vectors."""
    total = _enumeration_size(n_items, n_components, max_states)
    costs = np.empty(total)
    for start in range(0, total, _CHUNK):
        states = np.arange(start, min(start + _CHUNK, total), dtype=np.int64)
        costs[start : start + states.size] = cost_of(
            _labels_of_states(states, n_items, n_components)
        )
    log_w = -costs / temperature
    log_z = float(logsumexp(log_w))
    weights = np.exp(log_w - log_z)
    resp = np.zeros((n_items, n_components))
    coassign = np.zeros((n_items, n_items))
    for start in range(0, total, _CHUNK):
        states = np.arange(start, min(start + _CHUNK, total), dtype=np.int64)
        z = _labels_of_states(states, n_items, n_components)
        w = weights[start : start + states.size]
        M = _one_hot(z, n_components)
        resp += np.einsum("b,biv->iv", w, M)
        coassign += np.einsum("b,biv,bjv->ij", w, M, M)
    expected = float(weights @ costs)
    return {
        "resp": resp,
        "coassign": coassign,
        "expected_cost": expected,
        "log_partition": log_z,
        "free_energy": -temperature * log_z,
        "entropy": (expected + temperature * log_z) / temperature,
        "n_states": total,
    }


def _pytensor_cost(X_or_D, z, n_components: int, kind: str, centroids=None):
    """The cost of a label vector ``z`` as a pytensor expression (for the PyMC potential)."""
    import pytensor.tensor as pt

    M = pt.eq(z[:, None], pt.arange(n_components)[None, :]).astype("float64")
    sizes = M.sum(axis=0)
    if kind == "pairwise":
        D = X_or_D
        W = (M * pt.dot(D, M)).sum(axis=0)
        within = pt.switch(sizes > 0, W / pt.maximum(sizes, 1.0), 0.0).sum()
        return 0.5 * within - D.sum() / (2 * D.shape[0])
    X = X_or_D
    if centroids is not None:
        y = pt.as_tensor_variable(np.asarray(centroids, dtype=np.float64))
    else:
        y = pt.dot(M.T, X) / pt.maximum(sizes, 1.0)[:, None]
    return ((X - y[z]) ** 2).sum()


def _sample_note() -> str:
    return "sample with pm.sample(step=pm.CategoricalGibbsMetropolis([model['z']]))"


# ----------------------------------------------------------------------------- pairwise
class _AssignmentCost:
    """What pairwise and central clustering share: a :class:`~latentzoo.models.base.CostModel`, a
    Gibbs distribution over one label vector ``z`` of ``n_components`` clusters, compared through
    the co-assignment probabilities and the cost."""

    protocol = CostModel
    param_names = ("z",)
    no_replicate_reason = (
        "a cost model has no sampling distribution of the data: its Gibbs distribution is over "
        "the assignments given the data (Hofmann & Buhmann 1997, eq. (18)), so no replicate "
        "of the data, and no posterior predictive check, is defined"
    )
    invariant_names = ("coassign", "cost")
    invariant_dims = {"coassign": ["pair"]}

    @property
    def n_clusters(self) -> int:
        """``K``: ``n_components``."""
        return self.n_components

    def labels(self, params: dict, train=None) -> np.ndarray:
        """Hard cluster labels of a point estimate: its assignments ``z``."""
        return np.asarray(params["z"], dtype=np.int64)

    def sizes_label(self) -> str:
        """The model's cluster numbers as reports print them (``K=...``): ``n_components``.

        Examples
        --------
        >>> PairwiseClustering(3).sizes_label(), CentralClustering(2).sizes_label()
        ('3', '2')
        """
        return str(self.n_components)

    def _check_simulation_sizes(self, n_items: int, n_features: int) -> None:
        """``ValueError`` unless the simulator's sizes are positive integers with at least one
        item per cluster."""
        check_integer("n_items", n_items)
        check_integer("n_features", n_features)
        check_fits_data("n_components", self.n_components, n_items, "items (n_items)")


def _clustered_points(rng, centers: np.ndarray, n_items: int, noise_sd=None):
    """Balanced labels and Gaussian points around ``centers``, the simulators' last two draws.

    ``z``: the ``n_items`` items dealt to the clusters in turn, then shuffled
    (:func:`~latentzoo.models.base.balanced_labels`); then ``x_i = centers[z_i] + noise_sd[z_i] *
    eps_i`` with ``eps_i ~ N(0, I_d)`` (``noise_sd`` (K, d), unit when None).

    Returns
    -------
    z : numpy.ndarray of shape (n_items,), int64
    points : numpy.ndarray of shape (n_items, d)
    """
    z = balanced_labels(rng, n_items, len(centers))
    noise = rng.normal(size=(n_items, centers.shape[1]))
    return z, centers[z] + (noise if noise_sd is None else noise * noise_sd[z])


@dataclass(frozen=True)
class PairwiseClustering(_AssignmentCost):
    """Pairwise clustering: the normalised cost (16) and its Gibbs distribution (18).

    Hofmann & Buhmann (1997), section 3.2 and section 4. ``P(M) = exp(-(H^pc(M) - F) / T)``
    over hard assignments of ``N`` items to ``n_components`` clusters.

    Parameters
    ----------
    n_components : int
        Number of clusters ``K`` (at least 1).

    Examples
    --------
    >>> model = PairwiseClustering(2)
    >>> data, truth = model.simulate(0, n_items=6)
    >>> round(model.cost(data, truth["z"]), 6) <= round(model.cost(data, [0] * 6), 6)
    True
    """

    n_components: int

    name = "pairwise"
    data_type = Dissimilarities

    def __post_init__(self):
        check_integer("n_components", self.n_components)

    def check_data(self, data) -> Dissimilarities:
        """Validate ``data`` and return it as a :class:`~latentzoo.data.Dissimilarities`.

        Raises ``ValueError`` (from the container) for a non-square, negative, non-finite matrix
        or one with a non-zero diagonal, and when ``n_components`` exceeds the number of items.

        Examples
        --------
        >>> PairwiseClustering(2).check_data([[0, 1], [1, 0]])
        Dissimilarities(2 items)
        >>> PairwiseClustering(3).check_data([[0, 1], [1, 0]])
        Traceback (most recent call last):
        ...
        ValueError: n_components=3 is larger than the data supports: only 2 items
        """
        data = Dissimilarities.coerce(data)
        check_fits_data("n_components", self.n_components, data.n_items, "items")
        return data

    def cost(self, data, assignments):
        """``H^pc`` of eq. (16) for one label vector (a float) or a batch ``(B, N)`` (an array).

        Examples
        --------
        >>> D = Dissimilarities([[0, 1, 4], [1, 0, 4], [4, 4, 0]])
        >>> PairwiseClustering(2).cost(D, [[0, 0, 1], [1, 1, 0]]).tolist()
        [-2.5, -2.5]
        """
        data = self.check_data(data)
        return pairwise_cost(data.D, assignments, self.n_components)

    def simulate(
        self,
        random_state=None,
        n_items: int = 60,
        n_features: int = 2,
        separation: float = 4.0,
        metric: str = "sqeuclidean",
    ):
        """Clustered dissimilarities with their truth.

        Draws ``K`` centres ``c_v ~ N(0, separation^2 I_d)``, balanced labels (``n_items`` dealt
        to the clusters in turn, then shuffled), points ``x_i ~ N(c_{z_i}, I_d)`` and
        ``D_ik = ||x_i - x_k||^2`` (the Euclidean case of eq. (31), where pairwise and central
        clustering agree) or another ``scipy`` metric.

        Returns
        -------
        data : Dissimilarities (with the true labels)
        truth : dict with ``z`` (N,), ``points`` (N, d), ``centers`` (K, d)

        Examples
        --------
        >>> data, truth = PairwiseClustering(3).simulate(1, n_items=9)
        >>> data.n_items, np.bincount(truth["z"]).tolist()
        (9, [3, 3, 3])
        """
        check_positive("separation", separation)
        self._check_simulation_sizes(n_items, n_features)
        rng = as_rng(random_state)
        centers = rng.normal(0.0, separation, size=(self.n_components, n_features))
        z, points = _clustered_points(rng, centers, n_items)
        data = Dissimilarities.from_features(points, metric=metric, labels=z)
        return data, {"z": z, "points": points, "centers": centers}

    def gibbs_expectations(
        self, data, temperature: float, field=None, max_states: int = MAX_STATES
    ):
        """Exact expectations of the Gibbs distribution (18) by enumeration of all ``K^N``.

        Vectorised over blocks of assignments. Because (16) is invariant to relabelling the
        clusters, ``<M_iv> = 1/K`` for every item; the co-assignment probabilities and the
        expected cost carry the information. A symmetry-breaking ``field`` (the seed's footnote
        2, generalised) makes ``<M_iv>`` informative, e.g. to measure the residuals of the
        mean-field and TAP equations at exact expectations (section 4.2).

        Parameters
        ----------
        data : Dissimilarities
        temperature : float
        field : array_like of shape (N, K) or (K,), optional
            External costs ``f_iv``: the distribution is ``∝ exp(-(H^pc + sum_iv f_iv M_iv)/T)``
            and ``expected_cost`` includes them.
        max_states : int
            Refuse (``ValueError`` with the estimated time and memory) above this many states.

        Returns
        -------
        dict
            ``resp`` ``<M_iv>`` (N, K), ``coassign`` ``P(z_i = z_j)`` (N, N), ``expected_cost``
            ``<H>`` (eq. (3)), ``log_partition`` ``log Z``, ``free_energy`` ``-T log Z``
            (eq. (10)), ``entropy`` (eq. (4)) and ``n_states``.

        Examples
        --------
        >>> data, _ = PairwiseClustering(2).simulate(0, n_items=4)
        >>> out = PairwiseClustering(2).gibbs_expectations(data, 1.0)
        >>> out["n_states"], out["resp"].round(6).tolist()[0]
        (16, [0.5, 0.5])
        """
        data = self.check_data(data)
        check_positive("temperature", temperature)
        D = data.D
        n, k = data.n_items, self.n_components
        if field is None:
            return _enumerate(
                lambda z: pairwise_cost(D, z, k), n, k, float(temperature), max_states
            )
        field = (
            np.broadcast_to(np.asarray(field, dtype=np.float64), (n, k))
            if np.shape(field) in ((k,), (n, k))
            else None
        )
        if field is None or not np.all(np.isfinite(field)):
            raise ValueError(f"field must be finite of shape ({n}, {k}) or ({k},)")
        items = np.arange(n)[None, :]
        return _enumerate(
            lambda z: pairwise_cost(D, z, k) + field[items, z].sum(axis=1),
            n,
            k,
            float(temperature),
            max_states,
        )

    def coords(self, data) -> dict:
        """ArviZ coordinates: the items and the clusters.

        Examples
        --------
        >>> sorted(PairwiseClustering(2).coords(Dissimilarities([[0, 1], [1, 0]])))
        ['cluster', 'item']
        """
        return {"item": list(data.item_names), "cluster": np.arange(self.n_components)}

    def pymc_model(self, data, temperature: float = 1.0):
        """The PyMC reference: labels ``z`` as ``pm.Categorical``, Gibbs weight as a potential.

        ``z_i ~ Categorical(1/K)`` (a constant prior) and ``pm.Potential("gibbs_weight",
        -H^pc(z) / T)`` with ``H^pc`` of eq. (16) written in pytensor, so the model's density is
        the Gibbs distribution (18). No gradient exists: sample it with PyMC's discrete
        ``CategoricalGibbsMetropolis`` step (``pm.sample(step=pm.CategoricalGibbsMetropolis(
        [model["z"]]))``), the Monte Carlo reference of the seed's sections 2.1 and 4.2.

        Examples
        --------
        >>> m = PairwiseClustering(2).pymc_model(Dissimilarities([[0, 1], [1, 0]]), 0.5)
        >>> sorted(m.named_vars)
        ['gibbs_weight', 'z']
        """
        import pymc as pm

        data = self.check_data(data)
        check_positive("temperature", temperature)
        k = self.n_components
        with pm.Model(coords=self.coords(data)) as model:
            z = pm.Categorical("z", p=np.full(k, 1.0 / k), dims="item")
            cost = _pytensor_cost(data.D, z, k, "pairwise")
            pm.Potential("gibbs_weight", -cost / temperature)
        return model

    def invariants(self, params, data) -> dict:
        """Label-invariant quantities: ``coassign`` ``P(z_i = z_j)`` (i < j) and ``cost``.

        ``params`` holds hard labels ``z`` (N,) — for one draw or a point estimate — or soft
        assignments ``resp`` (N, K). For ``z`` the co-assignments are indicators and ``cost`` is
        ``H^pc(z)``; for ``resp`` they are ``sum_v <M_iv><M_jv>`` and ``cost`` is the mean-field
        estimate of ``<H^pc>`` with ``<1/n_v> ≈ 1/<n_v>`` (the large-``N`` approximation behind
        eq. (26)).

        Examples
        --------
        >>> D = Dissimilarities([[0, 1, 4], [1, 0, 4], [4, 4, 0]])
        >>> inv = PairwiseClustering(2).invariants({"z": [0, 0, 1]}, D)
        >>> inv["coassign"].tolist(), inv["cost"]
        ([1.0, 0.0, 0.0], -2.5)
        """
        data = self.check_data(data)
        return _invariants(params, data.n_items, self.n_components, data.D, "pairwise")


def _soft_cost(D: np.ndarray, resp: np.ndarray) -> float:
    """Mean-field estimate of ``<H^pc>``: eq. (16) with ``<M>`` in place of ``M``."""
    a = D @ resp
    W = np.einsum("iv,iv->v", resp, a)
    n = resp.sum(axis=0)
    return float(0.5 * _normalised_within(W, n) - D.sum() / (2 * D.shape[0]))


def _invariants(params, n_items, n_components, matrix, kind, centroids=None) -> dict:
    first, second = np.triu_indices(n_items, k=1)
    if "z" in params:
        z = _check_labels(params["z"], n_items, n_components)
        if z.ndim != 1:
            raise ValueError("invariants takes one label vector z of shape (N,)")
        coassign = (z[first] == z[second]).astype(np.float64)
        if kind == "pairwise":
            cost = pairwise_cost(matrix, z, n_components)
        else:
            cost = float(_central_costs(matrix, z[None], n_components, centroids)[0])
        return {"coassign": coassign, "cost": float(cost)}
    if "resp" not in params:
        raise ValueError("params must hold labels 'z' (N,) or soft assignments 'resp' (N, K)")
    resp = np.asarray(params["resp"], dtype=np.float64)
    if resp.shape != (n_items, n_components):
        raise ValueError(f"resp has shape {resp.shape}, expected {(n_items, n_components)}")
    coassign = coassignment_matrix(resp)[first, second]
    if kind == "pairwise":
        cost = _soft_cost(matrix, resp)
    else:
        X = matrix
        sizes = resp.sum(axis=0)
        y = centroids
        if y is None:
            y = (resp.T @ X) / np.maximum(sizes, 1e-300)[:, None]
        d = ((X[:, None, :] - np.asarray(y)[None]) ** 2).sum(axis=-1)
        cost = float(np.sum(resp * d))
    return {"coassign": coassign, "cost": float(cost)}


# ----------------------------------------------------------------------------- central
def _central_costs(X: np.ndarray, z: np.ndarray, n_components: int, centroids=None):
    """``H^cc`` (eq. (8)) of a batch of label vectors ``z`` (B, N)."""
    if centroids is not None:
        y = np.asarray(centroids, dtype=np.float64)
        d = ((X[:, None, :] - y[None]) ** 2).sum(axis=-1)  # (N, K)
        return np.take_along_axis(d[None].repeat(z.shape[0], 0), z[..., None], axis=2)[..., 0].sum(
            axis=1
        )
    # With the centroids of the assignment (eq. (32)), eq. (31): the within-cluster sum of
    # squares is 1/2 sum_v W_v / n_v of the squared distances.
    sq = (X**2).sum(axis=1)
    D = np.maximum(sq[:, None] + sq[None, :] - 2 * X @ X.T, 0.0)
    costs = np.empty(z.shape[0])
    for start in range(0, z.shape[0], _CHUNK):
        W, sizes = _within_sums(D, z[start : start + _CHUNK], n_components)
        costs[start : start + _CHUNK] = 0.5 * _normalised_within(W, sizes)
    return costs


@dataclass(frozen=True)
class CentralClustering(_AssignmentCost):
    """Central clustering (K-means) and its maximum-entropy Gibbs distribution, eq. (8)-(15).

    Hofmann & Buhmann (1997), section 3.1, after Rose, Gurewitz & Fox (1990). For reference
    vectors ``y`` the assignments follow the factorised Gibbs distribution (12) with
    ``<M_iv> ∝ exp(-||x_i - y_v||^2 / T)`` (eq. (15)); without them the cost of an assignment is
    the K-means cost with the centroids (32) of the assigned items.

    Parameters
    ----------
    n_components : int
        Number of clusters (reference vectors) ``K``.
    temperature : float
        Default computational temperature ``T`` of :meth:`gibbs_expectations` and
        :meth:`pymc_model`.

    Examples
    --------
    >>> model = CentralClustering(2)
    >>> data, truth = model.simulate(0, n_items=8)
    >>> model.cost(data, truth["z"]) <= model.cost(data, np.zeros(8, dtype=int))
    True
    """

    n_components: int
    temperature: float = 1.0

    name = "central"
    data_type = Features

    def __post_init__(self):
        check_integer("n_components", self.n_components)
        check_positive("temperature", self.temperature)

    def check_data(self, data) -> Features:
        """Validate ``data`` and return it as dense real :class:`~latentzoo.data.Features`.

        Examples
        --------
        >>> CentralClustering(2).check_data([[0.0, 1.5], [2.0, -1.0]]).shape
        (2, 2)
        >>> CentralClustering(3).check_data([[0.0], [1.0]])
        Traceback (most recent call last):
        ...
        ValueError: n_components=3 is larger than the data supports: only 2 items
        """
        data = Features.coerce(data, kind="real")
        check_fits_data("n_components", self.n_components, data.n_items, "items")
        return data

    def _centroids(self, centroids, data: Features):
        if centroids is None:
            return None
        y = np.asarray(centroids, dtype=np.float64)
        if y.shape != (self.n_components, data.n_features):
            raise ValueError(
                f"centroids has shape {y.shape}, expected {(self.n_components, data.n_features)}"
            )
        if not np.all(np.isfinite(y)):
            raise ValueError("centroids must be finite")
        return y

    def _temperature(self, temperature):
        if temperature is None:
            return self.temperature
        check_positive("temperature", temperature)
        return float(temperature)

    def cost(self, data, assignments, centroids=None):
        """``H^cc`` of eq. (8) for one label vector (a float) or a batch ``(B, N)``.

        With ``centroids`` (K, d) the distortions are to those reference vectors; without, to
        the centroids (32) of each assignment's clusters (the K-means cost).

        Examples
        --------
        >>> X = np.array([[0.0], [1.0], [5.0]])
        >>> CentralClustering(2).cost(X, [0, 0, 1])
        0.5
        >>> CentralClustering(2).cost(X, [0, 0, 1], centroids=[[0.0], [5.0]])
        1.0
        """
        data = self.check_data(data)
        z = _check_labels(assignments, data.n_items, self.n_components)
        costs = _central_costs(
            np.asarray(data.X, dtype=np.float64),
            np.atleast_2d(z),
            self.n_components,
            self._centroids(centroids, data),
        )
        return float(costs[0]) if z.ndim == 1 else costs

    def simulate(
        self,
        random_state=None,
        n_items: int = 200,
        n_features: int = 2,
        radius: float = 4.0,
        variances=(1.0,),
    ):
        """Points from ``K`` Gaussian clusters, with their truth.

        Centres uniform on the sphere of ``radius`` in ``R^d``; each cluster's covariance is
        diagonal with entries drawn from ``variances``; balanced labels. The seed's Fig. 2 is
        ``K = 20``, ``d = 20``, ``radius = 1``, ``variances = (0.1, 0.2, 0.4)`` (section 6.2).

        Returns
        -------
        data : Features (real, with the true labels)
        truth : dict with ``z`` (N,), ``centers`` (K, d), ``variances`` (K, d)

        Examples
        --------
        >>> data, truth = CentralClustering(3).simulate(0, n_items=12, n_features=4)
        >>> data.shape, truth["centers"].shape
        ((12, 4), (3, 4))
        """
        check_positive("radius", radius)
        variances = np.asarray(variances, dtype=np.float64).ravel()
        if variances.size == 0 or not np.all(np.isfinite(variances)) or np.any(variances <= 0):
            raise ValueError(f"variances must be positive finite numbers, got {variances!r}")
        self._check_simulation_sizes(n_items, n_features)
        rng = as_rng(random_state)
        k = self.n_components
        directions = rng.normal(size=(k, n_features))
        centers = radius * directions / np.linalg.norm(directions, axis=1, keepdims=True)
        cluster_var = rng.choice(variances, size=(k, n_features))
        z, points = _clustered_points(rng, centers, n_items, noise_sd=np.sqrt(cluster_var))
        data = Features(points, labels=z, kind="real")
        return data, {"z": z, "centers": centers, "variances": cluster_var}

    def gibbs_expectations(
        self, data, temperature=None, centroids=None, max_states: int = MAX_STATES
    ):
        """Exact Gibbs expectations at temperature ``T``.

        With ``centroids`` the distribution factorises (eq. (11)-(12)): ``resp`` is eq. (15)
        and ``log Z = sum_i log sum_v exp(-||x_i - y_v||^2 / T)`` in closed form for any ``N``.
        Without, the K-means cost couples the items and all ``K^N`` assignments are enumerated
        (vectorised; refused with an estimate above ``max_states``).

        Returns
        -------
        dict
            As :meth:`PairwiseClustering.gibbs_expectations`.

        Examples
        --------
        >>> X = np.array([[0.0], [0.1], [3.0]])
        >>> out = CentralClustering(2).gibbs_expectations(X, 0.5, centroids=[[0.0], [3.0]])
        >>> out["resp"].round(3)[:, 0].tolist()
        [1.0, 1.0, 0.0]
        """
        data = self.check_data(data)
        T = self._temperature(temperature)
        X = np.asarray(data.X, dtype=np.float64)
        y = self._centroids(centroids, data)
        k = self.n_components
        if y is None:
            return _enumerate(lambda z: _central_costs(X, z, k), data.n_items, k, T, max_states)
        d = ((X[:, None, :] - y[None]) ** 2).sum(axis=-1)
        log_norm = logsumexp(-d / T, axis=1)
        resp = np.exp(-d / T - log_norm[:, None])
        log_z = float(log_norm.sum())
        expected = float(np.sum(resp * d))
        return {
            "resp": resp,
            "coassign": coassignment_matrix(resp),
            "expected_cost": expected,
            "log_partition": log_z,
            "free_energy": -T * log_z,
            "entropy": (expected + T * log_z) / T,
            "n_states": float(k) ** data.n_items,
        }

    def coords(self, data) -> dict:
        """ArviZ coordinates: the items and the clusters."""
        return {"item": list(data.item_names), "cluster": np.arange(self.n_components)}

    def pymc_model(self, data, temperature=None, centroids=None):
        """The PyMC reference: labels ``z`` as ``pm.Categorical``, weight ``-H^cc/T`` a potential.

        ``H^cc`` is eq. (8) with the given ``centroids``, or the K-means cost with the centroids
        (32) of ``z``. Sampled by PyMC's ``CategoricalGibbsMetropolis`` step (no gradient
        exists): ``pm.sample(step=pm.CategoricalGibbsMetropolis([model["z"]]))``.

        Examples
        --------
        >>> m = CentralClustering(2).pymc_model([[0.0], [1.0], [4.0]])
        >>> sorted(m.named_vars)
        ['gibbs_weight', 'z']
        """
        import pymc as pm

        data = self.check_data(data)
        T = self._temperature(temperature)
        y = self._centroids(centroids, data)
        k = self.n_components
        with pm.Model(coords=self.coords(data)) as model:
            z = pm.Categorical("z", p=np.full(k, 1.0 / k), dims="item")
            cost = _pytensor_cost(np.asarray(data.X, dtype=np.float64), z, k, "central", y)
            pm.Potential("gibbs_weight", -cost / T)
        return model

    def invariants(self, params, data, centroids=None) -> dict:
        """Label-invariant quantities: ``coassign`` (i < j) and ``cost``, as for
        :meth:`PairwiseClustering.invariants` (``resp``: the expected cost under eq. (12) with
        the soft centroids or the given ``centroids``).

        Examples
        --------
        >>> inv = CentralClustering(2).invariants({"z": [0, 0, 1]}, [[0.0], [1.0], [5.0]])
        >>> inv["coassign"].tolist(), inv["cost"]
        ([1.0, 0.0, 0.0], 0.5)
        """
        data = self.check_data(data)
        return _invariants(
            params,
            data.n_items,
            self.n_components,
            np.asarray(data.X, dtype=np.float64),
            "central",
            self._centroids(centroids, data),
        )
