"""Deterministic annealing for central and pairwise clustering, baselines, structure-preserving MDS.

Hofmann & Buhmann (1997), "Pairwise data clustering by deterministic annealing", sections 3-6.

**Central clustering** (:func:`central_annealing`; Rose, Gurewitz & Fox 1990, seed section 3.1):
at temperature ``T`` alternate ``<M_iv> ∝ exp(-||x_i - y_v||^2 / T)`` (eq. (15)) with the centroid
equation (14), ``y_v = sum_i <M_iv> x_i / sum_i <M_iv>``. This is EM on the free energy
``F = -T sum_i log sum_v exp(-||x_i - y_v||^2 / T)`` (eq. (10)-(11)), which never increases at a
fixed ``T``. Above ``T_c = 2 lambda_max`` of the data covariance the only solution is one centroid
at the mean. Clusters split at phase transitions as in Rose et al.: each cluster's critical
temperature is ``2 lambda_max`` of its posterior-weighted covariance; the schedule starts at
``T_c``, jumps between transitions to just below the next critical temperature, splits the most
unstable cluster along its principal axis, and ends with Lloyd's and Hartigan's hard K-means
from the annealed centroids. The number of distinct clusters is the order parameter whose
increases are the reported transitions.

**Pairwise clustering, Algorithm I** (:func:`pairwise_annealing`, section 4.1): the mean-field
potentials of eq. (26),

    E_iv = 1/(n_v^-i + 1) [sum_k <M_kv> D_ik - W_v^-i / (2 n_v^-i)],
    n_v^-i = sum_{k != i} <M_kv>,   W_v^-i = sum_{j,k != i} <M_jv> <M_kv> D_jk,

(the averages of the exact cost increments (24) with ``<1/n> ≈ 1/<n>``; the self-terms ``k = i``
are excluded as in (24), which the seed's simplified (26) keeps only to O(1/N)), and the
assignments ``<M_iv> ∝ exp(-E_iv / T)`` of eq. (25), updated **sequentially**, one datum at a time
in a random order (the seed's choice: the parallel update oscillates, its footnote 3), with the
running sums ``sum_k <M_kv> D_ik``, ``n_v`` and ``W_v`` updated in ``O(N K)`` per datum, so that a
sweep costs ``O(N^2 K)`` in one numba kernel. Cooling is exponential, ``T <- eta T``, and clusters
split at the phase transitions by the same twin scheme (a twin column takes half of a cluster's
assignment probabilities; duplicating every cluster leaves the mean-field equations unchanged up
to O(1/N), so a pair drifts apart only below its cluster's critical temperature). With
``tap=True`` the cavity fields ``h_iv`` of eq. (29) enter as ``<M_iv> ∝ exp(-(E_iv - h_iv)/T)``
(eq. (28)). Eq. (29) is ``h_ia = T (J_aa(i) / 2 - sum_b J_ab(i) <M_ib>)`` with ``J(i)`` the
covariance of item ``i``'s potential fluctuations over ``T^2`` (:func:`tap_couplings`,
recomputed once per sweep in one ``O(N^2 K^2)`` numba pass); the second term is the Onsager
reaction of the item on itself, so in the sequential sweep each item solves its own equation
``r_i = softmax(-E_i/T + diag J(i)/2 - J(i) r_i)`` (convex, one solution) rather than taking
``r_i`` from the previous sweep, which made the items flip back and forth. ``J_aa(i)`` is the
parameter of the expansion behind (29); an item's couplings are scaled so that it does not
exceed 1. Following the seed's appendix B, ``J`` is computed from the dissimilarities centred to
zero mean (the cost (16) does not see the shift, eq. (17)), and twins get the couplings of
their summed column.
The annealing stops early once ``K`` clusters exist and every assignment is frozen
(``max_v <M_iv> > 1 - 1e-6``); by default a zero-temperature quench (:func:`greedy`'s local
search, the ``T -> 0`` limit of the same sequential update) then ends the run at a local minimum
of (16).

**Baselines** for the seed's section 6.1 benchmark: :func:`greedy` (gradient descent: sequential
zero-temperature moves of single items to the cluster of lowest exact cost increment (24), from
random starts) and :func:`ward` (scipy's Ward / average linkage cut at ``K`` clusters).

**Algorithm II, structure-preserving MDS** (:func:`structure_preserving_mds`, section 5): embed
the items as ``x_i in R^d`` so that the factorised Gibbs distribution of central clustering
(eq. (12)) on the embedding matches the pairwise one: alternate ``<M_iv>`` from the embedding
(eq. (15)), the mean-field potentials ``E*_iv`` (eq. (26)) of those assignments, the coordinates
from eq. (34)-(35),

    K_i x_i = 1/2 sum_v <M_iv> (||y_v||^2 - E*_iv) (y_v - sum_mu <M_imu> y_mu),

and the centroids (32); clusters split by twin centroids as above. Eq. (34) is the normal
equation of the weighted least-squares fit of ``||x_i - y_v||^2`` to ``E*_iv`` (up to a constant
per item, weights ``<M_iv>``). It is singular as ``T -> 0`` (``K_i -> 0`` when ``<M_i.>`` becomes
hard): both sides are divided by ``1 - max_v <M_iv>``, computed in log space, which is the
l'Hospital limit the seed asks for — the limit equation fixes the components of ``x_i`` along
``y_v - y_u`` (``u`` the item's cluster) weighted by the conditional assignment probabilities of
the other clusters. A ridge of relative size ``1e-6`` towards the previous ``x_i`` keeps the
directions the equation leaves free (e.g. all centroids coincident at high ``T``).

**Scale.** Every method is invariant to the scale of its data up to the temperature's (costs
and temperatures of pairwise clustering are linear in ``D``, those of central clustering
quadratic in ``X``). Data at an ordinary scale (:data:`_ORDINARY_SCALE`) run as given; outside
it, where squares and sums overflow or underflow, they run divided by a power of two near their
scale (exact in float64) and the results come back in the data's units. Central clustering
refuses vectors whose squared distances leave float64 (:data:`_SPREAD_LIMITS`), naming the limit.

All randomness comes from ``random_state``; the same seed gives the same result bit for bit.
"""

from __future__ import annotations

import copy
import time
from dataclasses import dataclass, field, replace

import numba as nb
import numpy as np
import pandas as pd
from scipy.special import logsumexp

from latentzoo.data import Dissimilarities, Features
from latentzoo.data.checks import as_rng
from latentzoo.inference.annealing import (
    EMStats,
    GeometricCooling,
    PointEstimateMethods,
    cool,
    table_from_netcdf,
    table_to_netcdf,
)
from latentzoo.inference.family import Family, Method, Option, choice, flag, integer, real, seed
from latentzoo.inference.results import (
    SavedEstimate,
    list_attr,
    parameter_dataset,
    point_estimate_inference_data,
)
from latentzoo.models._checks import check_integer, check_interval, check_positive
from latentzoo.models.pairwise import (
    CentralClustering,
    PairwiseClustering,
    critical_temperature,
    pairwise_cost,
)

__all__ = [
    "ClusteringResult",
    "central_annealing",
    "central_heat_bath",
    "greedy",
    "lloyd_restarts",
    "mean_field",
    "mean_field_residual",
    "pairwise_annealing",
    "pairwise_heat_bath",
    "sparse_pairwise_annealing",
    "sparse_pairwise_cost",
    "structure_preserving_mds",
    "tap_couplings",
    "tap_fields",
    "ward",
]

_FROZEN = 1e-6
"""A run is frozen when every item's largest assignment probability exceeds ``1 - _FROZEN``."""


# ----------------------------------------------------------------------------- result
@dataclass
class ClusteringResult(PointEstimateMethods):
    """The outcome of a clustering method of this module.

    Attributes
    ----------
    model : CentralClustering or PairwiseClustering
    labels : numpy.ndarray of int64, shape (N,)
        Hard assignments (``argmax_v <M_iv>`` after annealing).
    resp : numpy.ndarray, shape (N, K)
        Soft assignments ``<M_iv>`` at the last temperature (one-hot for hard methods).
    cost : float
        The cost of ``labels``: eq. (16) for pairwise clustering, the K-means cost (eq. (8) with
        the centroids (32)) for central clustering.
    trace : pandas.DataFrame
        One row per temperature: ``temperature``, ``beta``, ``iterations`` (EM iterations or
        sweeps), ``stopped``, ``expected_cost`` (the mean-field estimate of ``<H>``),
        ``free_energy`` (``<H> - T S``, eq. (5), of the factorised distribution; eq. (10) for
        central clustering), ``entropy``, ``cost`` (of the hard labels) and ``order_parameter``
        (number of distinct clusters). Empty for the baselines.
    transitions : list of float
        Temperatures at which the number of distinct clusters changed (phase transitions).
    method : str
    seconds : float
    converged : bool
        Whether the last temperature (or the local search) ended by its stopping rule.
    centroids : numpy.ndarray or None
        ``y_v`` (K, d) for central clustering and structure-preserving MDS.
    embedding : numpy.ndarray or None
        ``x_i`` (N, d) of structure-preserving MDS.
    run_costs : numpy.ndarray or None
        The final cost of every random start (:func:`greedy` with ``n_init > 1``).
    settings : dict
        The options the method ran with.
    item_names : numpy.ndarray of str or None
        The names of the clustered items (coordinates of :meth:`to_inference_data`).

    Examples
    --------
    >>> from latentzoo.models import PairwiseClustering
    >>> model = PairwiseClustering(2)
    >>> data, truth = model.simulate(0, n_items=20)
    >>> result = greedy(model, data, random_state=0)
    >>> result.labels_.shape, result.method
    ((20,), 'greedy')
    """

    model: object
    labels: np.ndarray
    resp: np.ndarray
    cost: float
    trace: pd.DataFrame
    transitions: list
    method: str
    seconds: float = 0.0
    converged: bool = True
    centroids: np.ndarray | None = None
    embedding: np.ndarray | None = None
    run_costs: np.ndarray | None = None
    settings: dict = field(default_factory=dict)
    item_names: np.ndarray | None = None

    @property
    def labels_(self) -> np.ndarray:
        """Hard cluster labels (scikit-learn's name)."""
        return self.labels

    @property
    def assignments(self) -> np.ndarray:
        """Hard cluster labels (the seed's ``M`` as a label vector)."""
        return self.labels

    def invariants(self, data) -> dict:
        """The model's label-invariant quantities of the hard labels (co-assignments, cost)."""
        return self.model.invariants({"z": self.labels}, data)

    @property
    def params(self) -> dict:
        """The estimate: hard labels ``z``, soft assignments ``resp`` and, where the method has
        them, ``centroids`` and the ``embedding``."""
        out = {"z": self.labels, "resp": self.resp}
        if self.centroids is not None:
            out["centroids"] = self.centroids
        if self.embedding is not None:
            out["embedding"] = self.embedding
        return out

    def summary_lines(self) -> list[str]:
        """What ``latentzoo fit`` prints: the cost, the number of clusters and the temperatures
        of the phase transitions.

        Examples
        --------
        >>> from latentzoo.models import PairwiseClustering
        >>> model = PairwiseClustering(2)
        >>> data, _ = model.simulate(0, n_items=10)
        >>> greedy(model, data, random_state=0).summary_lines()  # doctest: +ELLIPSIS
        ['cost ..., 2 clusters, phase transitions at T = -']
        """
        temperatures = ", ".join(f"{t:.3g}" for t in self.transitions) or "-"
        return [
            f"cost {self.cost:.6g}, {len(np.unique(self.labels))} clusters, phase "
            f"transitions at T = {temperatures}"
        ]

    def figure(self, data=None):
        """None: ``latentzoo fit`` saves no picture of a clustering."""
        return None

    def objective(self, data) -> tuple[str, float]:
        """``("cost", value)``: the cost of the hard labels (a cost model has no likelihood)."""
        return "cost", float(self.cost)

    def to_inference_data(self, data=None):
        """The estimate as an ``InferenceData`` of a point estimate (the package's one layout,
        :func:`~latentzoo.inference.results.point_estimate_inference_data`; no ``posterior``).

        ``point_estimate``: ``z`` (item), ``resp`` (item, cluster), ``cost``, and ``centroids``
        (cluster, dimension) / ``embedding`` (item, dimension) where the method has them;
        ``clustering_trace``: the per-temperature trace. The attributes of every group record the
        model and its hyperparameters, the method and its settings, the cost, convergence, the
        phase-transition temperatures and ``point_estimate=1``. Item names come from ``data``
        when given (default ``"0", "1", ...``).

        Examples
        --------
        >>> from latentzoo.models import PairwiseClustering
        >>> model = PairwiseClustering(2)
        >>> data, _ = model.simulate(0, n_items=10)
        >>> idata = greedy(model, data, random_state=0).to_inference_data(data)
        >>> idata.point_estimate["resp"].dims, idata.point_estimate.attrs["method"]
        (('item', 'cluster'), 'greedy')
        """
        import xarray as xr

        from latentzoo.models.base import model_attrs, netcdf_attr

        n, k = self.resp.shape
        items = np.arange(n).astype(str) if self.item_names is None else self.item_names
        if data is not None:
            data = self.model.check_data(data)
            if data.n_items != n:
                raise ValueError(f"data has {data.n_items} items, but the fit has {n}")
            items = np.asarray(data.item_names).astype(str)
        variables = {
            "z": (("item",), self.labels),
            "resp": (("item", "cluster"), self.resp),
            "cost": ((), np.asarray(self.cost)),
        }
        if self.centroids is not None:
            rows = "cluster" if self.centroids.shape[0] == k else "centroid"
            variables["centroids"] = ((rows, "dimension"), self.centroids)
        if self.embedding is not None:
            variables["embedding"] = (("item", "embedding_dim"), self.embedding)
        attrs = {
            **model_attrs(self.model),
            "method": self.method,
            "result_type": "ClusteringResult",  # what latentzoo.load_result rebuilds
            "cost": float(self.cost),
            "converged": int(self.converged),
            "sampling_time": float(self.seconds),
            "transitions": np.asarray(self.transitions, dtype=float),
        }
        for name, value in self.settings.items():
            value = netcdf_attr(value)
            if value is not None:
                attrs[name] = value
        attrs["settings"] = ",".join(name for name in self.settings if name in attrs)
        estimate = xr.Dataset(variables, coords={"item": items, "cluster": np.arange(k)})
        tables = {}
        if len(self.trace):
            tables["clustering_trace"] = table_to_netcdf(self.trace, "step")
        return point_estimate_inference_data(estimate, attrs, tables)

    @classmethod
    def from_inference_data(cls, idata) -> ClusteringResult:
        """The result that :meth:`to_inference_data` wrote, e.g. read back with ``az.from_netcdf``
        (:func:`latentzoo.load_result` calls this). ``run_costs`` is not saved (None).

        Examples
        --------
        >>> from latentzoo.models import PairwiseClustering
        >>> model = PairwiseClustering(2)
        >>> data, _ = model.simulate(0, n_items=10)
        >>> result = greedy(model, data, random_state=0)
        >>> back = ClusteringResult.from_inference_data(result.to_inference_data(data))
        >>> bool((back.labels == result.labels).all()), back.transitions == result.transitions
        (True, True)
        """
        estimate = SavedEstimate.from_inference_data(idata)
        attrs, params = estimate.attrs, estimate.params
        names = str(attrs.get("settings", ""))
        settings = {
            name: attrs[name].item() if isinstance(attrs[name], np.generic) else attrs[name]
            for name in names.split(",")
            if name in attrs
        }
        groups = idata.groups()
        trace = (
            table_from_netcdf(idata["clustering_trace"])
            if "clustering_trace" in groups
            else pd.DataFrame()
        )
        return cls(
            model=estimate.model,
            labels=np.asarray(params["z"], dtype=np.int64),
            resp=params["resp"],
            cost=float(params["cost"]),
            trace=trace,
            transitions=list_attr(attrs, "transitions") or [],
            method=str(attrs["method"]),
            seconds=float(attrs.get("sampling_time", 0.0)),
            converged=bool(int(attrs.get("converged", 1))),
            centroids=params.get("centroids"),
            embedding=params.get("embedding"),
            settings=settings,
            item_names=np.asarray(parameter_dataset(idata)["item"].to_numpy()).astype(str),
        )


# ----------------------------------------------------------------------------- checks
def _check_model(model, kind):
    if not isinstance(model, kind):
        raise ValueError(f"model must be a {kind.__name__}, got {type(model).__name__}")


def _check_options(T0, T_final, eta, max_iter, tol, perturbation):
    if T0 is not None:
        check_positive("T0", T0)
    if T_final is not None:
        check_positive("T_final", T_final)
    if T0 is not None and T_final is not None and T_final > T0:
        raise ValueError(f"T_final={T_final} must not exceed T0={T0}")
    check_interval("eta", eta, 0, 1)
    check_integer("max_iter", max_iter)
    check_interval("tol", tol, 0, np.inf, closed="left")
    check_interval("perturbation", perturbation, 0, np.inf, closed="left")


def _schedule(T0: float, T_final: float, eta: float) -> GeometricCooling:
    return GeometricCooling(beta_start=1.0 / T0, beta_end=1.0 / T_final, decay=eta)


def _entropy(resp: np.ndarray) -> float:
    with np.errstate(divide="ignore", invalid="ignore"):
        terms = np.where(resp > 0, resp * np.log(resp), 0.0)
    return float(-terms.sum())


def _groups(points: np.ndarray, tol: float) -> np.ndarray:
    """Group labels ``0..G-1`` of the rows of ``points``: rows closer than ``tol`` (max-norm),
    directly or through a chain of such rows, share a group (K is small: O(K^2 d))."""
    k = points.shape[0]
    close = np.max(np.abs(points[:, None, :] - points[None, :, :]), axis=-1) < tol
    label = np.arange(k)
    for _ in range(k):
        new = np.min(np.where(close, label[None, :], k), axis=1)
        if np.array_equal(new, label):
            break
        label = new
    return np.unique(label, return_inverse=True)[1]


def _merge_centroids(y: np.ndarray, tol: float) -> np.ndarray:
    """Coincident centroids (closer than ``tol``) replaced by their mean: one cluster each."""
    groups = _groups(y, tol)
    counts = np.bincount(groups)
    merged = np.zeros((counts.size, y.shape[1]))
    np.add.at(merged, groups, y)
    return merged / counts[:, None]


def _resolve_centroid_twins(y: np.ndarray, room: int, scale: float, perturbation: float):
    """After a stage with twinned centroids (``y`` = originals then twins, when ``room > 0``):
    keep at most ``room`` pairs whose twins separated by more than ``10 perturbation scale``
    (a split, Rose's phase transition), average the others back into one centroid; then
    centroids that fell together are one cluster (and free a twin for a later split)."""
    if room > 0:
        half = y.shape[0] // 2
        first, second = y[:half], y[half:]
        separation = np.max(np.abs(first - second), axis=1) / scale
        split = _keep_splits(separation, room, 10 * perturbation)
        y = np.vstack([np.where(split[:, None], first, (first + second) / 2), second[split]])
    return _merge_centroids(y, 10 * perturbation * scale)


def _merge_columns(resp: np.ndarray, tol: float = 0.05) -> np.ndarray:
    """Columns of ``resp`` that are the same cluster (max-norm difference below ``tol`` of the
    larger column's maximum) summed into one."""
    scale = np.maximum(resp.max(axis=0), 1e-300)
    groups = _groups(resp.T / scale[:, None], tol)
    merged = np.zeros((resp.shape[0], groups.max() + 1))
    np.add.at(merged.T, groups, resp.T)
    return merged


def _perturb_resp(resp: np.ndarray, rng: np.random.Generator, size: float) -> np.ndarray:
    if size == 0:
        return resp
    noisy = resp * np.exp(size * rng.standard_normal(resp.shape))
    return noisy / noisy.sum(axis=1, keepdims=True)


def _duplicate_resp(resp: np.ndarray, rng: np.random.Generator, size: float) -> np.ndarray:
    """Every cluster ``v`` becomes two copies ``v`` and ``v + L``, each with half of its
    assignment probability, perturbed in opposite directions by ``size``."""
    noise = np.clip(size * rng.standard_normal(resp.shape), -0.5, 0.5)
    return np.hstack([resp * (0.5 + noise), resp * (0.5 - noise)])


def _keep_splits(separation: np.ndarray, room: int, tol: float) -> np.ndarray:
    """Which copy pairs count as split: separated by more than ``tol``, at most ``room`` of them
    (the most separated first; ties by index)."""
    split = separation > tol
    if split.sum() > room:
        order = np.lexsort((np.arange(separation.size), -separation))
        split = np.zeros_like(split)
        split[order[:room]] = True
    return split


def _resolve_resp(resp: np.ndarray, n_clusters: int, room: int, tol: float = 0.1):
    """Merge the copy pairs of :func:`_duplicate_resp` that stayed together; keep the others.

    A pair has split when its two columns differ by more than ``tol`` relative to the pair's
    largest total assignment probability.
    """
    first, second = resp[:, :n_clusters], resp[:, n_clusters:]
    scale = np.maximum(np.max(first + second, axis=0), 1e-300)
    separation = np.max(np.abs(first - second), axis=0) / scale
    split = _keep_splits(separation, room, tol)
    merged = np.where(split[None, :], first, first + second)
    return np.hstack([merged, second[:, split]])


def _pad(resp: np.ndarray, k: int) -> np.ndarray:
    return np.hstack([resp, np.zeros((resp.shape[0], k - resp.shape[1]))])


def _one_hot(labels: np.ndarray, k: int) -> np.ndarray:
    resp = np.zeros((labels.size, k))
    resp[np.arange(labels.size), labels] = 1.0
    return resp


def _fill_centroids(y: np.ndarray, resp: np.ndarray, k: int):
    """Fewer distinct clusters than asked for even at the last temperature: the spare centroids
    coincide with the first one (they hold no items of their own)."""
    if y.shape[0] < k:
        y = np.vstack([y, np.repeat(y[:1], k - y.shape[0], axis=0)])
        resp = _pad(resp, k)
    return y, resp


def _squared_distances(x: np.ndarray, y: np.ndarray, x_sq: np.ndarray | None = None):
    """``||x_i - y_v||^2`` (N, K), clipped at zero; ``x_sq`` the cached row norms of ``x``."""
    x_sq = (x**2).sum(axis=1) if x_sq is None else x_sq
    return np.maximum(x_sq[:, None] - 2.0 * x @ y.T + (y**2).sum(axis=1)[None, :], 0.0)


def _expected_cost(within, sizes, offset: float) -> float:
    """The plug-in estimate of ``<H^pc>``: eq. (16) with ``<M>`` in place of ``M``."""
    ratio = np.divide(within, sizes, out=np.zeros_like(within), where=sizes > 1e-12)
    return 0.5 * float(ratio.sum()) - offset


def _pairwise_temperatures(data, D, T0, T_final):
    """``T_c`` and the default schedule ends of pairwise clustering: ``T0 = 1.5 T_c`` (the
    largest dissimilarity when ``T_c = 0``), ``T_final = 1e-3 T0``."""
    T_c = critical_temperature(data)
    if T0 is None:
        T0 = 1.5 * T_c if T_c > 0 else max(float(D.max()), 1e-12)
    T0 = float(T0)
    T_final = 1e-3 * T0 if T_final is None else float(T_final)
    return T_c, T0, T_final


_ORDINARY_SCALE = (1e-100, 1e100)
"""Data whose scale (the mean off-diagonal dissimilarity; the largest deviation from the mean
for vectors, squared) lies in this range are clustered as given, bit for bit. Outside it they are
clustered divided by a power of two near their scale (exact in float64), and the costs,
temperatures and coordinates multiplied back: the methods are invariant to the scale up to the
temperature's, and at 1e300 or 1e-300 their squares and sums overflow or underflow."""

_SPREAD_LIMITS = (1e-150, 1e150)
"""Central clustering's costs and temperatures are squared distances: a largest deviation from
the mean outside this range makes them overflow or vanish in float64, so the data are refused."""


def _binary_exponent(scale: float, even: bool = False) -> int:
    """0 when ``scale`` is 0 or ordinary (:data:`_ORDINARY_SCALE`), else the exponent ``e`` with
    ``scale / 2**e`` in [0.5, 2); ``even`` rounds it up to even, so that ``2**(e/2)`` is exact."""
    low, high = _ORDINARY_SCALE
    if scale == 0 or low <= scale <= high:
        return 0
    exponent = int(np.frexp(scale)[1])
    return exponent + exponent % 2 if even else exponent


def _unit_dissimilarities(data: Dissimilarities, even: bool = False):
    """``data`` and ``e = 0`` at an ordinary scale, else ``D / 2**e`` (same names and labels) and
    ``e``, with ``2**e`` near the mean off-diagonal dissimilarity (computed without overflow)."""
    D = data.D
    n = data.n_items
    top = float(D.max()) if n > 1 else 0.0
    scale = top * (float(np.mean(D / top)) * n / (n - 1)) if top > 0 else 0.0
    exponent = _binary_exponent(scale, even)
    if exponent == 0:
        return data, 0
    scaled = Dissimilarities(np.ldexp(D, -exponent), labels=data.labels, item_names=data.item_names)
    return scaled, exponent


def _unit_features(X: np.ndarray):
    """``X``, no shift and ``e = 0`` at an ordinary scale, else ``(X - mean) / 2**e``, the mean
    and ``e``, with ``2**e`` near the largest deviation from the mean; refused (``ValueError``)
    where the squared distances leave float64 (:data:`_SPREAD_LIMITS`)."""
    largest = float(np.max(np.abs(X)))
    # Divided by the largest entry first, so that the sum behind the mean cannot overflow.
    mean = (X / largest).mean(axis=0) * largest if largest > 0 else np.zeros(X.shape[1])
    spread = float(np.max(np.abs(X - mean)))
    low, high = _SPREAD_LIMITS
    if spread > 0 and not low <= spread <= high:
        verb = "overflow" if spread > high else "underflow"
        raise ValueError(
            f"X deviates from its mean by up to {spread:.3g}, outside [{low:.0e}, {high:.0e}]: "
            f"central clustering's costs and temperatures are squared distances, which {verb} in "
            "float64; multiply X by a constant (the clustering does not change)"
        )
    ordinary_low, ordinary_high = _ORDINARY_SCALE
    # The squares, of X itself and of its deviations, must be ordinary, not X.
    if largest <= np.sqrt(ordinary_high) and (spread == 0 or spread >= np.sqrt(ordinary_low)):
        return X, None, 0
    exponent = int(np.frexp(spread)[1])
    return np.ldexp(X - mean, -exponent), mean, exponent


def _in_data_units(
    result: ClusteringResult, cost_exponent: int, length_exponent: int = 0, shift=None
) -> ClusteringResult:
    """``result`` of a run on data divided by a power of two, in the data's own units: costs and
    temperatures times ``2**cost_exponent``, inverse temperatures divided by it, centroids and
    the embedding times ``2**length_exponent`` (the centroids moved back by ``shift``)."""
    if cost_exponent == 0 and length_exponent == 0 and shift is None:
        return result

    def up(values):
        return np.ldexp(np.asarray(values, dtype=np.float64), cost_exponent)

    trace = result.trace.copy()
    for column in ("temperature", "expected_cost", "free_energy", "cost"):
        if column in trace:
            trace[column] = up(trace[column].to_numpy())
    if "beta" in trace:
        trace["beta"] = np.ldexp(trace["beta"].to_numpy(dtype=np.float64), -cost_exponent)
    settings = {
        name: float(up(value)) if name in ("T0", "T_final", "T_c") else value
        for name, value in result.settings.items()
    }
    centroids = result.centroids
    if centroids is not None:
        centroids = np.ldexp(centroids, length_exponent) + (0.0 if shift is None else shift)
    embedding = result.embedding
    if embedding is not None:
        embedding = np.ldexp(embedding, length_exponent)
    return replace(
        result,
        cost=float(up(result.cost)),
        trace=trace,
        transitions=[float(up(t)) for t in result.transitions],
        settings=settings,
        centroids=centroids,
        embedding=embedding,
        run_costs=None if result.run_costs is None else up(result.run_costs),
    )


def _result(model, data, labels, resp, cost, method, start, **fields) -> ClusteringResult:
    return ClusteringResult(
        item_names=np.asarray(data.item_names).astype(str),
        model=model,
        labels=labels,
        resp=resp,
        cost=cost,
        method=method,
        seconds=time.perf_counter() - start,
        **fields,
    )


def _annealed_result(
    model, data, labels, resp, method, start, stages, transitions, **fields
) -> ClusteringResult:
    """The result of an annealing run from what :func:`~latentzoo.inference.annealing.cool`
    returned: its per-temperature ``stages`` as the trace, and its phase ``transitions``
    (inverse temperatures) as temperatures; the cost is the model's cost of ``labels``."""
    return _result(
        model,
        data,
        labels,
        resp,
        float(model.cost(data, labels)),
        method,
        start,
        trace=stages[_TRACE_COLUMNS],
        transitions=[1.0 / beta for beta in transitions],
        **fields,
    )


# ----------------------------------------------------------------------------- cooling hooks
_TRACE_COLUMNS = [
    "temperature",
    "beta",
    "iterations",
    "stopped",
    "expected_cost",
    "free_energy",
    "entropy",
    "cost",
    "order_parameter",
]
"""The columns of :attr:`ClusteringResult.trace`, one row per temperature."""


class _ClusterCooling:
    """Rose's cluster splitting and the frozen stop, as hooks of the shared annealing driver
    (:func:`~latentzoo.inference.annealing.cool`) for the three annealing loops of this module.

    While fewer than ``n_clusters`` clusters are distinct, ``begin_stage`` gives every cluster a
    twin (``room`` says how many may split); ``end_stage`` keeps the pairs that drifted apart
    and merges the others back. Subclasses say what a twin is (a displaced centroid, half of an
    assignment column). The schedule stops once ``n_clusters`` clusters exist and every
    assignment is frozen. A step's change is the largest change of an assignment probability,
    kept by the subclass's ``step`` in ``last_change``.
    """

    def __init__(self, n_clusters: int, rng, perturbation: float):
        self.n_clusters = n_clusters
        self.rng = rng
        self.perturbation = perturbation
        self.room = 0
        self.last_change = np.inf

    def change(self, old, new, stats) -> float:
        return self.last_change

    def frozen(self, params) -> bool:
        resp = params["resp"]
        return resp.shape[1] == self.n_clusters and bool(np.all(resp.max(axis=1) > 1 - _FROZEN))


class _TwinCentroids(_ClusterCooling):
    """Twins of centroids (central annealing, Algorithm II): displaced by ``perturbation scale``
    in opposite directions, kept apart by :func:`_resolve_centroid_twins`."""

    def __init__(self, n_clusters: int, rng, perturbation: float, scale: float):
        super().__init__(n_clusters, rng, perturbation)
        self.scale = scale

    def begin_stage(self, params, beta):
        y = params["centroids"]
        self.room = self.n_clusters - y.shape[0]
        if self.room > 0:
            # The twins drift apart only below that cluster's critical temperature.
            shift = self.perturbation * self.scale * self.rng.standard_normal(y.shape)
            params = {**params, "centroids": np.vstack([y + shift, y - shift])}
        return params

    def resolve(self, y):
        return _resolve_centroid_twins(y, self.room, self.scale, self.perturbation)


def _assignment_summary(D, resp, beta, expected, n_clusters) -> dict:
    """A stage's row of pairwise clustering from its final assignments ``<M_iv>``."""
    T = 1.0 / beta
    entropy = _entropy(resp)
    return {
        "temperature": T,
        "expected_cost": expected,
        "free_energy": expected - T * entropy,
        "entropy": entropy,
        "cost": pairwise_cost(D, np.argmax(resp, axis=1), n_clusters),
        "order_parameter": resp.shape[1],
    }


# ----------------------------------------------------------------------------- central DA
_UNSTABLE_MARGIN = 1e-9
"""A cluster is unstable at ``T`` when its critical temperature exceeds ``T (1 + margin)``: at
``T = T_v`` exactly the split is marginal (the free energy's curvature along it is zero)."""

_COINCIDENT = 1e-2
"""Centroids closer than ``_COINCIDENT sqrt(T)`` (max-norm) after a temperature are one cluster.
Without the mixing weights of Rose's mass-constrained variant, eq. (15) lets a split twin fall
onto a neighbouring centroid; the pair then acts as one cluster of double weight."""

_NEGLIGIBLE_LOG = float(np.log(np.finfo(np.float64).eps))
"""Assignment terms ``exp(a)`` with ``a`` below this (relative to an item's largest) are below
float64's resolution of the item's normaliser and skipped (no ``exp`` is evaluated for them)."""

_OVERRELAX_GROWTH, _OVERRELAX_MAX = 1.5, 10.0
"""Adaptive over-relaxed EM (Salakhutdinov & Roweis 2003): the step factor grows by this much
after every step that lowered the free energy (10), up to the maximum, and falls back to a plain
EM step at the first one that did not."""


@nb.njit(cache=True)
def _central_em_kernel(X, y, beta, sums, sizes):
    """Eq. (15) for every item and the sums of eq. (14) in one pass (``sums`` (K, d) and
    ``sizes`` (K,) are overwritten); returns ``sum_i log Z_i`` of the centroids ``y``.

    Distances are computed as ``sum_j (x_ij - y_vj)^2``, which cannot cancel as the norm
    expansion does for nearby points."""
    n_items, n_dims = X.shape
    k = y.shape[0]
    sums[:] = 0.0
    sizes[:] = 0.0
    weights = np.empty(k)
    log_partition = 0.0
    for i in range(n_items):
        largest = -np.inf
        for v in range(k):
            distance = 0.0
            for j in range(n_dims):
                delta = X[i, j] - y[v, j]
                distance += delta * delta
            weights[v] = -beta * distance
            largest = max(largest, weights[v])
        total = 0.0
        for v in range(k):
            shifted = weights[v] - largest
            weights[v] = np.exp(shifted) if shifted > _NEGLIGIBLE_LOG else 0.0
            total += weights[v]
        log_partition += np.log(total) + largest
        for v in range(k):
            if weights[v] > 0.0:
                share = weights[v] / total
                sizes[v] += share
                for j in range(n_dims):
                    sums[v, j] += share * X[i, j]
    return log_partition


def _central_em_step(X: np.ndarray, y: np.ndarray, beta: float):
    """One EM step at ``T = 1/beta``: the centroids (14) of the assignments (15) of ``y`` and the
    free energy (10) of ``y``. A centroid without mass keeps its place."""
    sums, sizes = np.empty_like(y), np.empty(y.shape[0])
    free_energy = -_central_em_kernel(X, y, beta, sums, sizes) / beta
    held = sizes > 1e-300
    new = y.copy()
    new[held] = sums[held] / sizes[held, None]
    return new, free_energy


def _central_em(X, y, beta, tol, max_iter):
    """EM at ``T = 1/beta`` from ``y`` until no centroid moves by ``tol`` in a plain EM step.

    The steps are over-relaxed adaptively (:data:`_OVERRELAX_GROWTH`): near a phase transition
    EM's rate tends to 1 (critical slowing down), and extrapolating along the EM step, checked
    against the free energy (10), which plain EM never increases, recovers most of it. The fixed
    points are EM's. Returns the centroids, the number of EM steps and the stop reason.
    """
    step_factor, previous_free, plain = 1.0, np.inf, y
    for iteration in range(1, max_iter + 1):
        em_step, free = _central_em_step(X, y, beta)
        if step_factor > 1.0 and free > previous_free:
            # The extrapolation overshot: continue from the plain EM step it started from.
            y, step_factor, previous_free = plain, 1.0, np.inf
            continue
        if np.max(np.abs(em_step - y)) < tol:
            return em_step, iteration, "tolerance"
        previous_free, plain = free, em_step
        y = y + step_factor * (em_step - y)
        step_factor = min(step_factor * _OVERRELAX_GROWTH, _OVERRELAX_MAX)
    return plain, max_iter, "max_iter"


def _central_state(X, sq, y, beta):
    """Distortions ``||x_i - y_v||^2``, assignments (15) and ``log Z_i`` of centroids ``y``."""
    distortions = _squared_distances(X, y, sq)
    logits = -beta * distortions
    largest = logits.max(axis=1, keepdims=True)
    weights = np.exp(logits - largest)
    totals = weights.sum(axis=1, keepdims=True)
    return distortions, weights / totals, np.log(totals[:, 0]) + largest[:, 0]


def _cluster_critical_temperatures(X, y, resp):
    """Each cluster's critical temperature ``T_v = 2 lambda_max(C_v)``, its principal axis and
    ``sqrt(lambda_max)``; ``C_v = sum_i <M_iv> (x_i - y_v)(x_i - y_v)^T / sum_i <M_iv>``.

    Splitting centroid ``v`` into ``y_v +- psi`` changes the free energy (10) by
    ``n_v psi^T (I - 2 C_v / T) psi`` to second order (the first order cancels between the
    twins), so the cluster is unstable exactly below ``T_v`` and splits along the principal axis
    (Rose, Gurewitz & Fox 1990; seed section 3.1, where ``C_v`` of the one cluster at the mean is
    the data covariance and ``T_v = T_c``). A loop over the K clusters, each a BLAS product."""
    k, n_dims = y.shape
    temperatures, axes, spreads = np.zeros(k), np.zeros((k, n_dims)), np.zeros(k)
    sizes = resp.sum(axis=0)
    for v in range(k):
        if sizes[v] <= 1e-300:
            continue
        centred = X - y[v]
        covariance = (centred * (resp[:, v] / sizes[v])[:, None]).T @ centred
        values, vectors = np.linalg.eigh(covariance)
        top = max(float(values[-1]), 0.0)
        temperatures[v], axes[v], spreads[v] = 2.0 * top, vectors[:, -1], np.sqrt(top)
    return temperatures, axes, spreads


def _merge_stable_pairs(X, sq, y, T):
    """Merge centroids that are one cluster at ``T``: a pair ``u, v`` whose union (posterior
    weights ``<M_iu> + <M_iv>``) has its critical temperature ``2 lambda_max`` at or below ``T``
    is stable as one centroid, so two centroids there are the slow remains of a split that fell
    back (or a twin that fell onto a neighbour), however far EM's tolerance left them apart. The
    closest such pair is replaced by the union's weighted mean, until none is left. Only pairs
    closer than ``sqrt(2 T)`` can qualify when the union is balanced (its covariance holds the
    pair's half-distance squared), and only those are checked. Returns the centroids and whether
    any merged."""
    merged = False
    while y.shape[0] > 1:
        resp = _central_state(X, sq, y, 1.0 / T)[1]
        gaps = ((y[:, None, :] - y[None, :, :]) ** 2).sum(axis=-1)
        first, second = np.nonzero(np.triu(gaps < 2.0 * T, k=1))
        pair = None
        for index in np.argsort(gaps[first, second], kind="stable"):
            u, v = int(first[index]), int(second[index])
            weights = resp[:, u] + resp[:, v]
            size = weights.sum()
            if size <= 1e-300:
                pair = (u, v, (y[u] + y[v]) / 2)
                break
            mean = weights @ X / size
            centred = X - mean
            covariance = (centred * (weights / size)[:, None]).T @ centred
            if 2.0 * np.linalg.eigvalsh(covariance)[-1] <= T:
                pair = (u, v, mean)
                break
        if pair is None:
            break
        u, v, mean = pair
        y = np.delete(y, v, axis=0)
        y[u] = mean
        merged = True
    return y, merged


def _label_sums(X: np.ndarray, labels: np.ndarray, k: int):
    """Sizes (K,) and coordinate sums (K, d) of the clusters of ``labels`` (one BLAS product of
    the one-hot labels; ``np.add.at`` is an order of magnitude slower)."""
    one_hot = np.zeros((labels.size, k))
    one_hot[np.arange(labels.size), labels] = 1.0
    return one_hot.sum(axis=0), one_hot.T @ X


def _kmeans_cost(X: np.ndarray, labels: np.ndarray, k: int) -> float:
    """``H^cc`` (eq. (8)) of ``labels`` with the centroids (32) of their clusters, in O(N d)
    (:meth:`CentralClustering.cost` is the O(N^2 d) form of eq. (31))."""
    sizes, sums = _label_sums(X, labels, k)
    centroids = sums / np.maximum(sizes, 1)[:, None]
    return float(np.sum((X - centroids[labels]) ** 2))


def _lloyd(X, sq, y, max_iter):
    """Lloyd's K-means from centroids ``y`` (the ``T -> 0`` limit of eq. (14)-(15)) until the
    labels repeat; an emptied cluster keeps its centroid. Returns labels, centroids, steps."""
    k = y.shape[0]
    labels = None
    for iteration in range(1, max_iter + 1):
        new_labels = np.argmin(_squared_distances(X, y, sq), axis=1)
        if labels is not None and np.array_equal(new_labels, labels):
            return labels, y, iteration
        labels = new_labels
        sizes, sums = _label_sums(X, labels, k)
        held = sizes > 0
        y = y.copy()
        y[held] = sums[held] / sizes[held, None]
    return labels, y, max_iter


@nb.njit(cache=True)
def _squared_distance(X, i, centroids, v):
    """``||x_i - y_v||^2`` as ``sum_j (x_ij - y_vj)^2`` (no cancellation for nearby points)."""
    total = 0.0
    for j in range(X.shape[1]):
        delta = X[i, j] - centroids[v, j]
        total += delta * delta
    return total


@nb.njit(cache=True)
def _leave_cost(X, i, centroids, sizes, a):
    """K-means cost that item ``i`` adds to its own cluster ``a``: ``n_a/(n_a-1) ||x_i - y_a||^2``
    (the exact change with the centroid updated; 0 for a singleton, whose cost is 0)."""
    if sizes[a] <= 1.0:
        return 0.0
    return _squared_distance(X, i, centroids, a) * sizes[a] / (sizes[a] - 1.0)


@nb.njit(cache=True)
def _join_cost(X, i, centroids, sizes, b):
    """K-means cost that item ``i`` adds by joining cluster ``b`` (``i`` not in it):
    ``n_b/(n_b+1) ||x_i - y_b||^2`` (0 for an empty cluster)."""
    return _squared_distance(X, i, centroids, b) * sizes[b] / (sizes[b] + 1.0)


@nb.njit(cache=True)
def _move_point(X, i, a, b, sizes, sums, centroids):
    """Move item ``i`` from cluster ``a`` to ``b`` and keep sizes, sums and centroids current; an
    emptied cluster keeps its centroid (its costs are 0 whatever it is)."""
    sizes[a] -= 1.0
    sizes[b] += 1.0
    for j in range(X.shape[1]):
        sums[a, j] -= X[i, j]
        sums[b, j] += X[i, j]
        if sizes[a] > 0.0:
            centroids[a, j] = sums[a, j] / sizes[a]
        centroids[b, j] = sums[b, j] / sizes[b]


@nb.njit(cache=True)
def _label_statistics(X, labels, k):
    """Sizes (K,), sums (K, d) and centroids (K, d; 0 for an empty cluster) of ``labels``."""
    n_items, n_dims = X.shape
    sizes = np.zeros(k)
    sums = np.zeros((k, n_dims))
    centroids = np.zeros((k, n_dims))
    for i in range(n_items):
        sizes[labels[i]] += 1.0
        for j in range(n_dims):
            sums[labels[i], j] += X[i, j]
    for v in range(k):
        if sizes[v] > 0:
            for j in range(n_dims):
                centroids[v, j] = sums[v, j] / sizes[v]
    return sizes, sums, centroids


@nb.njit(cache=True)
def _hartigan_kernel(X, labels, centroids, max_sweeps):
    """Hartigan's single-item moves: item ``i`` leaves cluster ``a`` for ``b`` when that lowers
    the K-means cost, by ``n_b/(n_b+1) ||x_i - y_b||^2 - n_a/(n_a-1) ||x_i - y_a||^2`` (the exact
    change with both centroids updated), sweeping the items in order until none moves.
    ``labels`` and ``centroids`` are updated in place; returns the number of sweeps."""
    n_items = X.shape[0]
    k = centroids.shape[0]
    sizes, sums, held = _label_statistics(X, labels, k)
    for v in range(k):
        if sizes[v] > 0:
            centroids[v] = held[v]
    sweeps = 0
    for _ in range(max_sweeps):
        sweeps += 1
        moved = 0
        for i in range(n_items):
            a = labels[i]
            if sizes[a] <= 1.0:
                continue
            removal = _leave_cost(X, i, centroids, sizes, a)
            best, best_gain = -1, 1e-12 * removal
            for b in range(k):
                if b == a:
                    continue
                gain = removal - _join_cost(X, i, centroids, sizes, b)
                if gain > best_gain:
                    best, best_gain = b, gain
            if best >= 0:
                _move_point(X, i, a, best, sizes, sums, centroids)
                labels[i] = best
                moved += 1
        if moved == 0:
            break
    return sweeps


@nb.njit(cache=True)
def _central_heat_bath(X, labels, k, temperature, uniforms):
    """Heat-bath sweeps of independent chains of the Gibbs distribution of the K-means cost,
    ``P(M) ∝ exp(-H^cc(M) / T)`` (eq. (8) with the centroids (32) of the clusters).

    Item ``i``'s conditional given the others is ``∝ exp(-c_v / T)`` with ``c_v`` the cost it adds
    to cluster ``v`` with itself left out: Hartigan's leave cost for its own cluster (equal to
    ``n/(n+1) ||x_i - y^-i||^2`` of the cluster without it), the join cost for the others, the
    increments :func:`_hartigan_kernel` moves by. ``labels`` (chains, N) are updated in place;
    ``uniforms`` (chains, sweeps, N) drive the draws, items in order within a sweep.
    """
    n_chains, n_sweeps, n_items = uniforms.shape
    costs = np.empty(k)
    for chain in range(n_chains):
        z = labels[chain]
        sizes, sums, centroids = _label_statistics(X, z, k)
        for sweep in range(n_sweeps):
            for i in range(n_items):
                a = z[i]
                for v in range(k):
                    if v == a:
                        costs[v] = _leave_cost(X, i, centroids, sizes, a)
                    else:
                        costs[v] = _join_cost(X, i, centroids, sizes, v)
                b = _draw_from_costs(costs, temperature, uniforms[chain, sweep, i])
                if b != a:
                    _move_point(X, i, a, b, sizes, sums, centroids)
                    z[i] = b


@nb.njit(cache=True)
def _draw_from_costs(costs, temperature, uniform):
    """The index drawn from ``softmax(-costs / T)`` by inverting one uniform, in log space (shift
    by the smallest cost so that no weight overflows)."""
    k = costs.size
    low = np.inf
    for v in range(k):
        if costs[v] < low:
            low = costs[v]
    total = 0.0
    for v in range(k):
        total += np.exp(-(costs[v] - low) / temperature)
    threshold = uniform * total
    running = 0.0
    for v in range(k):
        running += np.exp(-(costs[v] - low) / temperature)
        if threshold < running:
            return v
    return k - 1


def lloyd_restarts(model: CentralClustering, data, n_init: int = 100, random_state=None):
    """K-means costs ``H^cc`` of Lloyd's algorithm from ``n_init`` random starts (``K`` distinct
    items as the first centroids, as scikit-learn's ``init="random"``): the baseline that the
    optimality level ranks :func:`central_annealing` against.

    Parameters
    ----------
    model : CentralClustering
    data : Features
    n_init : int
    random_state : int or numpy.random.Generator, optional

    Returns
    -------
    numpy.ndarray of shape (n_init,)

    Examples
    --------
    >>> X = np.array([[0.0], [0.1], [3.0], [3.2]])
    >>> lloyd_restarts(CentralClustering(2), X, n_init=3, random_state=0).round(3).tolist()
    [0.025, 0.025, 0.025]
    """
    _check_model(model, CentralClustering)
    check_integer("n_init", n_init, low=1)
    data = model.check_data(data)
    X = np.asarray(data.X, dtype=np.float64)
    rng = as_rng(random_state)
    sq = (X**2).sum(axis=1)
    k = model.n_components
    costs = np.empty(n_init)
    for run in range(n_init):
        start = X[rng.choice(X.shape[0], size=k, replace=False)]
        labels, _, _ = _lloyd(X, sq, start, 1000)
        costs[run] = _kmeans_cost(X, labels, k)
    return costs


def _hard_refinement(X, sq, y, max_iter):
    """The zero-temperature end of the annealing: Lloyd's K-means from the annealed centroids,
    then Hartigan's moves, whose local minima are a subset of Lloyd's. Returns labels,
    centroids and the number of Lloyd steps and Hartigan sweeps."""
    labels, y, lloyd_steps = _lloyd(X, sq, y, max_iter)
    labels = labels.astype(np.int64)
    y = np.ascontiguousarray(y, dtype=np.float64).copy()
    sweeps = _hartigan_kernel(X, labels, y, max_iter)
    return labels, y, lloyd_steps, sweeps


def _central_stage(X, sq, y, T, iterations, stopped) -> dict:
    """A temperature's row of the trace from its final centroids ``y``, and its assignments."""
    distortions, resp, log_partition = _central_state(X, sq, y, 1.0 / T)
    row = {
        "temperature": T,
        "beta": 1.0 / T,
        "iterations": iterations,
        "stopped": stopped,
        "expected_cost": float(np.sum(resp * distortions)),
        "free_energy": -T * float(log_partition.sum()),
        "entropy": _entropy(resp),
        "cost": _kmeans_cost(X, np.argmax(resp, axis=1), y.shape[0]),
        "order_parameter": y.shape[0],
    }
    return row, resp


def _anneal_central(X, k, T0, T_final, eta, max_iter, tol, perturbation):
    """Rose's annealing by cluster critical temperatures; returns the centroids, the trace rows
    and whether every stage met its tolerance (see :func:`central_annealing`)."""
    sq = (X**2).sum(axis=1)
    scale = np.sqrt(critical_temperature(X) / 2.0)
    y = X.mean(axis=0)[None, :]
    T = T0
    row, resp = _central_stage(X, sq, y, T, 0, "tolerance")
    rows, converged, merged_at, y_row = [row], True, None, y
    while y.shape[0] < k:
        temperatures, axes, spreads = _cluster_critical_temperatures(X, y, resp)
        order = np.argsort(-temperatures, kind="stable")
        unstable = order[temperatures[order] > T * (1 + _UNSTABLE_MARGIN)][:1]
        before = y.shape[0]
        if unstable.size:
            # The most unstable cluster gets a twin along its principal axis, the direction in
            # which the free energy curves down: one transition at a time, as in Rose's
            # algorithm (several twins at once competed for the same items and fell together).
            shift = perturbation * spreads[unstable, None] * axes[unstable]
            y = np.vstack([y, y[unstable] + shift])
            y[unstable] -= shift
        else:
            # Nothing changes until the next cluster's critical temperature: jump to just below.
            T = eta * min(T, float(temperatures.max()))
            if T < T_final:
                break
        y, iterations, stopped = _central_em(X, y, 1.0 / T, tol * scale, max_iter)
        y = _merge_centroids(y, _COINCIDENT * np.sqrt(T))
        if unstable.size and y.shape[0] <= before:
            # The twins fell together again or onto other centroids: cool, so the run advances.
            T *= eta
            if T < T_final:
                break
            y, more, stopped = _central_em(X, y, 1.0 / T, tol * scale, max_iter)
            y = _merge_centroids(y, _COINCIDENT * np.sqrt(T))
            iterations += more
        if y.shape[0] == k:
            # K clusters may have been reached early, with two centroids in what is still one
            # cluster at T (they fall together only slowly near its critical temperature);
            # merged, the freed centroid splits the cluster that needs it. Once per temperature:
            # a second merge there cools first, so that the run cannot cycle.
            y, merged = _merge_stable_pairs(X, sq, y, T)
            if merged:
                if T == merged_at:
                    T *= eta
                    if T < T_final:
                        break
                merged_at = T
                y, more, stopped = _central_em(X, y, 1.0 / T, tol * scale, max_iter)
                iterations += more
        row, stage_resp = _central_stage(X, sq, y, T, iterations, stopped)
        last = rows[-1]
        rise = row["free_energy"] - last["free_energy"]
        if row["temperature"] == last["temperature"] and rise > 1e-9 * abs(last["free_energy"]):
            # A split or merge whose EM stopped short (max_iter) left this temperature's free
            # energy above its last stage's: keep that stage's centroids and cool, so that the
            # free energy never rises at a fixed temperature (what EM promises).
            y = y_row
            T *= eta
            if T < T_final:
                break
            continue
        converged = converged and stopped == "tolerance"
        rows.append(row)
        y_row, resp = y, stage_resp
    return y, rows, converged


def central_annealing(
    model: CentralClustering,
    data,
    T0: float | None = None,
    T_final: float | None = None,
    eta: float = 0.9,
    max_iter: int = 1000,
    tol: float = 1e-3,
    perturbation: float = 0.5,
) -> ClusteringResult:
    """Deterministic annealing for central clustering (Rose et al.; seed eq. (9)-(15)).

    The schedule follows the phase transitions instead of a fixed cooling rate. It starts at the
    first critical temperature ``T_c = 2 lambda_max`` of the data covariance (seed section 3.1),
    where the one centroid at the mean, the only solution above ``T_c``, becomes unstable. At
    every temperature EM (eq. (14)-(15), over-relaxed) runs to a tolerance in the data's units,
    and then each cluster's own critical temperature ``T_v = 2 lambda_max(C_v)`` is computed from
    its posterior-weighted covariance ``C_v`` (:func:`_cluster_critical_temperatures`). The
    cluster with the largest ``T_v > T`` splits: a twin is placed along its principal axis and
    EM drives the pair apart. When none is unstable, nothing changes until the largest ``T_v``,
    so the temperature jumps straight to ``eta max_v T_v``, just below the next transition
    (Rose's algorithm; no EM is spent between transitions). Twins that fall together (or onto
    another centroid, which eq. (15) without mixing weights allows) are merged and the
    temperature drops by ``eta``. When ``K`` clusters exist, pairs of centroids whose union is
    still below its own critical temperature are merged (:func:`_merge_stable_pairs`) and the
    freed centroid splits again. Then the ``T -> 0`` limit is taken directly: Lloyd's K-means
    from the annealed centroids, then Hartigan's single-item moves, so the result is a local
    minimum of the K-means cost (8) that no single item's move improves.

    Parameters
    ----------
    model : CentralClustering
    data : Features or array_like (N, d)
    T0 : float, optional
        Start temperature; default the first critical temperature ``T_c = 2 lambda_max`` of the
        covariance (above it nothing happens).
    T_final : float, optional
        Lowest temperature; default ``1e-3 T_c``. The annealing stops there even with fewer than
        ``K`` clusters (data with fewer than ``K`` distinct points never reach ``K``).
    eta : float
        In (0, 1): the temperature jumps to ``eta`` times the next critical temperature, and
        drops by ``eta`` when a split falls back.
    max_iter : int
        EM iterations per temperature at most (and Lloyd steps, Hartigan sweeps at most).
    tol : float
        A temperature ends when no centroid moves by more than ``tol sqrt(lambda_max)`` in an EM
        iteration.
    perturbation : float
        Half the distance between a split pair's twins, in standard deviations of the cluster
        along its principal axis.

    Returns
    -------
    ClusteringResult
        With ``centroids``; ``trace`` has one row per temperature (``order_parameter`` the number
        of distinct centroids) and ``transitions`` the temperatures at which it grew, the first
        at ``eta T_c``. ``settings["lloyd_steps"]`` and ``settings["hartigan_sweeps"]`` count the
        zero-temperature end; ``cost`` is the K-means cost of ``labels``.

    Raises
    ------
    ValueError
        When every item is the same point, and when ``X`` deviates from its mean by more than
        ``1e150`` or by less than ``1e-150`` (but not 0): the costs and temperatures, squared
        distances, would overflow or underflow. Between those and the ordinary range the data
        are clustered centred and divided by a power of two, and the results scaled back.

    Examples
    --------
    >>> from latentzoo.models import CentralClustering
    >>> model = CentralClustering(2)
    >>> data, truth = model.simulate(0, n_items=40)
    >>> result = central_annealing(model, data)
    >>> len(result.transitions) >= 1, result.centroids.shape
    (True, (2, 2))
    """
    start = time.perf_counter()
    _check_model(model, CentralClustering)
    data = model.check_data(data)
    _check_options(T0, T_final, eta, max_iter, tol, perturbation)
    X, shift, exponent = _unit_features(np.asarray(data.X, dtype=np.float64))
    if exponent:
        # Squared distances scale by 4**exponent: so do the temperatures the user gave.
        T0 = None if T0 is None else float(np.ldexp(T0, -2 * exponent))
        T_final = None if T_final is None else float(np.ldexp(T_final, -2 * exponent))
        data = Features(X, labels=data.labels, item_names=data.item_names, kind="real")
    X = np.ascontiguousarray(X)
    T_c = critical_temperature(X)
    T0 = T_c if T0 is None else float(T0)
    T_final = min(1e-3 * T_c, T0) if T_final is None else float(T_final)
    if T0 <= 0:
        raise ValueError("the data have zero variance: every item is the same point")
    k = model.n_components
    y, rows, converged = _anneal_central(X, k, T0, T_final, eta, max_iter, tol, perturbation)
    sq = (X**2).sum(axis=1)
    labels, y, lloyd_steps, sweeps = _hard_refinement(X, sq, y, max_iter)
    resp = _central_state(X, sq, y, 1.0 / rows[-1]["temperature"])[1]
    y, resp = _fill_centroids(y, resp, k)
    trace = pd.DataFrame(rows, columns=_TRACE_COLUMNS)
    grew = trace["order_parameter"].diff().to_numpy() > 0
    result = _result(
        model,
        data,
        labels,
        resp,
        _kmeans_cost(X, labels, k),
        "central_annealing",
        start,
        trace=trace,
        transitions=sorted(set(trace["temperature"][grew].tolist()), reverse=True),
        converged=converged and lloyd_steps < max_iter and sweeps < max_iter,
        centroids=y,
        settings={
            "T0": T0,
            "T_final": T_final,
            "eta": eta,
            "T_c": T_c,
            "lloyd_steps": lloyd_steps,
            "hartigan_sweeps": sweeps,
        },
    )
    return _in_data_units(result, 2 * exponent, exponent, shift)


# ----------------------------------------------------------------------------- kernels
@nb.njit(cache=True)
def _potential(D_row_sums, resp, sizes, within, i, v):
    """Item ``i``'s mean-field potential of cluster ``v`` with ``i`` left out of it (eq. (26)).

    ``D_row_sums`` is ``a_t`` (``(D @ resp).T``); ``i``'s own share ``resp[i, v]`` is removed from
    the cluster's size and within-cluster sum before the centre term is taken.
    """
    r = resp[i, v]
    n_rest = sizes[v] - r
    w_rest = within[v] - 2.0 * r * D_row_sums[v, i]
    centre = w_rest / (2.0 * n_rest) if n_rest > 1e-12 else 0.0
    return (D_row_sums[v, i] - centre) / (n_rest + 1.0)


@nb.njit(cache=True)
def _move_item(D, resp, a_t, sizes, within, i, new, delta, skip):
    """Set item ``i``'s assignments to ``new`` and keep ``a_t``, ``sizes`` and ``within`` current
    (O(N K)), unless they change by at most ``skip``; returns the largest change."""
    n, k = resp.shape
    change = 0.0
    for v in range(k):
        delta[v] = new[v] - resp[i, v]
        if abs(delta[v]) > change:
            change = abs(delta[v])
    if change <= skip:
        return change
    for v in range(k):
        within[v] += 2.0 * delta[v] * a_t[v, i]
        sizes[v] += delta[v]
        resp[i, v] = new[v]
    row = D[i]
    for v in range(k):
        step = delta[v]
        if step != 0.0:
            target = a_t[v]
            for m in range(n):
                target[m] += row[m] * step
    return change


@nb.njit(cache=True)
def _softmax(bias, out):
    """``out = softmax(bias)``, shifted by the largest entry."""
    top = bias.max()
    total = 0.0
    for v in range(bias.size):
        out[v] = np.exp(bias[v] - top)
        total += out[v]
    for v in range(bias.size):
        out[v] /= total


@nb.njit(cache=True)
def _mf_sweep(D, resp, a_t, sizes, within, fields, temperature, order, skip):
    """One sequential sweep of Algorithm I over the items in ``order``; returns max |change|.

    ``a_t = (D @ resp).T`` (K x N, so that the O(N) update of one cluster's row is contiguous),
    ``sizes = resp.sum(0)`` and ``within[v] = resp[:, v] @ a_t[v]`` are kept current after every
    item's update (O(N K) each). ``fields`` are the TAP cavity fields ``h`` (zeros for naive
    mean field). ``D`` has a zero diagonal, so ``a_t[:, i]`` does not depend on item ``i``.
    An item whose probabilities would change by at most ``skip`` is left as it is (its O(N K)
    update is what a sweep costs; frozen items are most of them at low temperature).
    """
    k = resp.shape[1]
    logits = np.empty(k)
    new = np.empty(k)
    delta = np.empty(k)
    biggest = 0.0
    for i in order:
        for v in range(k):
            potential = _potential(a_t, resp, sizes, within, i, v)
            logits[v] = -(potential - fields[i, v]) / temperature
        _softmax(logits, new)
        change = _move_item(D, resp, a_t, sizes, within, i, new, delta, skip)
        if change > biggest:
            biggest = change
    return biggest


@nb.njit(cache=True)
def _solve_item(bias, coupling, start, out):
    """``r = softmax(bias - coupling @ r)`` for one item, written into ``out``; returns the steps.

    The solution is unique: it minimises the convex ``sum r log r - bias.r + r.J.r / 2`` over the
    simplex (``J`` positive semi-definite). Damped fixed-point steps ``r <- (1 - d) r + d g(r)``
    converge for ``d = 2 / (2 + L)``, ``L`` a bound on the Jacobian of ``g`` (half the largest
    eigenvalue of ``J``, bounded by the largest absolute row sum).
    """
    k = bias.size
    bound = 0.0
    for a in range(k):
        row = 0.0
        for b in range(k):
            row += abs(coupling[a, b])
        if row > bound:
            bound = row
    step = 2.0 / (2.0 + 0.5 * bound)
    logits = np.empty(k)
    for a in range(k):
        out[a] = start[a]
    for it in range(1000):
        top = -np.inf
        for a in range(k):
            x = bias[a]
            for b in range(k):
                x -= coupling[a, b] * out[b]
            logits[a] = x
            if x > top:
                top = x
        total = 0.0
        for a in range(k):
            logits[a] = np.exp(logits[a] - top)
            total += logits[a]
        change = 0.0
        for a in range(k):
            moved = step * (logits[a] / total - out[a])
            out[a] += moved
            if abs(moved) > change:
                change = abs(moved)
        if change < 1e-10:
            return it + 1
    return 1000


@nb.njit(cache=True)
def _tap_sweep(D, resp, a_t, sizes, within, couplings, temperature, order, skip):
    """One sequential sweep of the TAP equations (28)-(29) over the items in ``order``.

    As :func:`_mf_sweep`, but item ``i``'s assignments solve its own TAP equation
    ``r_i = softmax(-E_i / T + diag(J(i)) / 2 - J(i) r_i)`` (``J = couplings[i]``, eq. (29) as
    :func:`tap_couplings` writes it) with its *new* ``r_i`` in the Onsager reaction term, not the
    one of the previous sweep. Returns max |change|.
    """
    k = resp.shape[1]
    bias = np.empty(k)
    new = np.empty(k)
    delta = np.empty(k)
    biggest = 0.0
    for i in order:
        coupling = couplings[i]
        for v in range(k):
            potential = _potential(a_t, resp, sizes, within, i, v)
            bias[v] = -potential / temperature + 0.5 * coupling[v, v]
        _solve_item(bias, coupling, resp[i], new)
        change = _move_item(D, resp, a_t, sizes, within, i, new, delta, skip)
        if change > biggest:
            biggest = change
    return biggest


@nb.njit(cache=True)
def _cluster_sums(D, resp):
    """``(D @ resp).T``, ``resp.sum(0)`` and ``within[v] = resp[:, v] @ D @ resp[:, v]``."""
    n, k = resp.shape
    a_t = np.zeros((k, n))
    sizes = np.zeros(k)
    for i in range(n):
        row = D[i]
        for v in range(k):
            weight = resp[i, v]
            sizes[v] += weight
            if weight != 0.0:
                target = a_t[v]
                for m in range(n):
                    target[m] += row[m] * weight
    within = np.zeros(k)
    for v in range(k):
        total = 0.0
        for i in range(n):
            total += resp[i, v] * a_t[v, i]
        within[v] = total
    return a_t, sizes, within


@nb.njit(cache=True)
def _greedy_sweeps(D, labels, a_t, sizes, within, order, max_sweeps):
    """Zero-temperature local search: move each item to the cluster of least exact increment (24).

    ``a_t``, ``sizes`` and ``within`` are as in :func:`_mf_sweep` for one-hot assignments.
    Returns (sweeps, converged). Every move strictly lowers the cost (16), so the search ends.
    """
    k, n = a_t.shape
    potential = np.empty(k)
    for sweep in range(max_sweeps):
        moved = 0
        for i in order:
            u = labels[i]
            best = u
            for v in range(k):
                n_rest = sizes[v] - (1.0 if v == u else 0.0)
                w_rest = within[v] - (2.0 * a_t[v, i] if v == u else 0.0)
                centre = w_rest / (2.0 * n_rest) if n_rest > 0.5 else 0.0
                potential[v] = (a_t[v, i] - centre) / (n_rest + 1.0)
            # A move must win by more than rounding, or two clusters could trade an item forever.
            margin = 1e-12 * (abs(potential[u]) + 1e-300)
            for v in range(k):
                if potential[v] < potential[best] - margin:
                    best = v
            if best == u:
                continue
            moved += 1
            within[u] -= 2.0 * a_t[u, i]
            sizes[u] -= 1.0
            within[best] += 2.0 * a_t[best, i]
            sizes[best] += 1.0
            labels[i] = best
            row = D[i]
            source = a_t[u]
            target = a_t[best]
            for m in range(n):
                source[m] -= row[m]
                target[m] += row[m]
        if moved == 0:
            return sweep + 1, True
    return max_sweeps, False


@nb.njit(cache=True)
def _pairwise_heat_bath(D, labels, k, temperature, uniforms):
    """Heat-bath sweeps of independent chains of the Gibbs distribution (18) of the pairwise
    cost, ``P(M) ∝ exp(-H^pc(M) / T)``.

    With one-hot assignments the mean-field potential (26) is exact: :func:`_potential` is the
    cost increment (24) of putting item ``i`` into cluster ``v`` with ``i`` left out, so item
    ``i``'s conditional given the others is ``∝ exp(-E_iv / T)``, the annealing's update (25)
    at hard assignments; :func:`_move_item` keeps ``(D @ M).T``, the sizes and the within-cluster
    sums current, as in the annealing. ``labels`` (chains, N) are updated in place; ``uniforms``
    (chains, sweeps, N) drive the draws, items in order within a sweep.
    """
    n_chains, n_sweeps, n_items = uniforms.shape
    costs = np.empty(k)
    new = np.zeros(k)
    delta = np.empty(k)
    for chain in range(n_chains):
        z = labels[chain]
        resp = np.zeros((n_items, k))
        for i in range(n_items):
            resp[i, z[i]] = 1.0
        a_t, sizes, within = _cluster_sums(D, resp)
        for sweep in range(n_sweeps):
            for i in range(n_items):
                for v in range(k):
                    costs[v] = _potential(a_t, resp, sizes, within, i, v)
                b = _draw_from_costs(costs, temperature, uniforms[chain, sweep, i])
                if b != z[i]:
                    new[:] = 0.0
                    new[b] = 1.0
                    _move_item(D, resp, a_t, sizes, within, i, new, delta, 0.0)
                    z[i] = b


def _heat_bath(model, kind, kernel, matrix_of, data, temperature, n_chains, n_sweeps, rng):
    """Check the arguments and run ``kernel``'s chains from uniform random labels on
    ``matrix_of(data)``, in blocks of chains so that the uniforms stay small; returns the final
    labels (n_chains, N)."""
    _check_model(model, kind)
    data = model.check_data(data)
    check_positive("temperature", temperature)
    check_integer("n_chains", n_chains, low=1)
    check_integer("n_sweeps", n_sweeps, low=1)
    matrix = np.ascontiguousarray(matrix_of(data), dtype=np.float64)
    rng = as_rng(rng)
    n_items, k = matrix.shape[0], model.n_components
    labels = rng.integers(k, size=(n_chains, n_items)).astype(np.int64)
    block = max(1, 2_000_000 // (n_sweeps * n_items))
    for start in range(0, n_chains, block):
        part = labels[start : start + block]
        uniforms = rng.random((part.shape[0], n_sweeps, n_items))
        kernel(matrix, part, k, float(temperature), uniforms)
    return labels


def pairwise_heat_bath(
    model: PairwiseClustering, data, temperature: float, n_chains: int = 1000,
    n_sweeps: int = 30, random_state=None,
) -> np.ndarray:  # fmt: skip
    """Sample the Gibbs distribution of pairwise clustering at a fixed temperature.

    The heat-bath (Gibbs) form of Algorithm I: at temperature ``T`` each item in turn draws its
    cluster from ``<M_iv> ∝ exp(-E_iv / T)`` (eq. (25)) with the potentials (26) of the *hard*
    assignments of the others, for which (26) is the exact cost increment (24). The chain's
    stationary law is the Gibbs distribution ``P(M) ∝ exp(-H^pc(M) / T)`` (eq. (18)) that the
    annealing's mean-field equations approximate; it runs the annealing's own kernels, so that
    its final states can be compared with :meth:`PairwiseClustering.gibbs_expectations` on a
    tiny problem (the exact level of :func:`latentzoo.validate`).

    Parameters
    ----------
    model : PairwiseClustering
    data : Dissimilarities
    temperature : float
    n_chains : int
        Independent chains, each from uniform random labels.
    n_sweeps : int
        Sweeps over the items per chain.
    random_state : int or numpy.random.Generator, optional

    Returns
    -------
    numpy.ndarray of shape (n_chains, N)
        Each chain's final labels.

    Examples
    --------
    >>> data, _ = PairwiseClustering(2).simulate(0, n_items=5)
    >>> pairwise_heat_bath(PairwiseClustering(2), data, 1.0, n_chains=3, random_state=0).shape
    (3, 5)
    """
    return _heat_bath(
        model, PairwiseClustering, _pairwise_heat_bath, lambda checked: checked.D, data,
        temperature, n_chains, n_sweeps, random_state,
    )  # fmt: skip


def central_heat_bath(
    model: CentralClustering, data, temperature: float, n_chains: int = 1000,
    n_sweeps: int = 30, random_state=None,
) -> np.ndarray:  # fmt: skip
    """Sample the Gibbs distribution of the K-means cost at a fixed temperature.

    Each item in turn draws its cluster from ``∝ exp(-c_v / T)``, ``c_v`` the exact cost change
    (with the centroids (32) moving) that the hard end of :func:`central_annealing` (Hartigan's
    moves) uses. The stationary law is ``P(M) ∝ exp(-H^cc(M) / T)``, which
    :meth:`CentralClustering.gibbs_expectations` enumerates without centroids.

    Parameters
    ----------
    model : CentralClustering
    data : Features
    temperature : float
    n_chains, n_sweeps, random_state
        As :func:`pairwise_heat_bath`.

    Returns
    -------
    labels : numpy.ndarray
        As :func:`pairwise_heat_bath`'s.

    Examples
    --------
    >>> X = np.array([[0.0], [0.1], [3.0], [3.2]])
    >>> labels = central_heat_bath(CentralClustering(2), X, 0.01, n_chains=4, random_state=0)
    >>> bool(np.all((labels[:, 0] == labels[:, 1]) & (labels[:, 0] != labels[:, 2])))
    True
    """
    return _heat_bath(
        model, CentralClustering, _central_heat_bath, lambda checked: checked.X, data,
        temperature, n_chains, n_sweeps, random_state,
    )  # fmt: skip


def _sums(D, resp):
    a = D @ resp
    sizes = resp.sum(axis=0)
    within = np.einsum("iv,iv->v", resp, a)
    return a, sizes, within


def _potentials(D, resp):
    """Mean-field potentials ``E*_iv`` of eq. (26) (self-terms excluded as in (24)), blockwise."""
    a_t, sizes, within = _cluster_sums(
        np.ascontiguousarray(D, dtype=np.float64), np.ascontiguousarray(resp, dtype=np.float64)
    )
    a = a_t.T
    n_rest = sizes[None, :] - resp
    w_rest = within[None, :] - 2.0 * resp * a
    centre = np.divide(w_rest, 2.0 * n_rest, out=np.zeros_like(a), where=n_rest > 1e-12)
    return (a - centre) / (n_rest + 1.0)


@nb.njit(cache=True, fastmath={"reassoc", "contract", "nsz", "arcp"})
def _tap_kernel(D, mean, resp, inv_p, temperature):
    """Eq. (29) in one pass over the pairs: O(N^2 K), no N x N temporaries."""
    n, k = resp.shape
    fields = np.zeros((n, k))
    a = np.empty(k)
    b = np.empty(k)
    c = np.empty(k)
    w = np.empty(k)
    scale = 1.0 / (2.0 * temperature * n * n)
    for i in range(n):
        for v in range(k):
            a[v] = 0.0
            b[v] = 0.0
            c[v] = 0.0
            w[v] = resp[i, v] * inv_p[v]
        for m in range(n):
            if m == i:
                continue
            s = D[i, m] - mean
            s = s * s
            pair = 0.0
            for v in range(k):
                pair += w[v] * resp[m, v]
            for v in range(k):
                x = s * resp[m, v]
                a[v] += x
                b[v] += x * resp[m, v]
                c[v] += x * pair
        for v in range(k):
            if inv_p[v] > 0.0:
                first = ((1.0 - 2.0 * resp[i, v]) * a[v] - b[v]) * inv_p[v] * inv_p[v]
                fields[i, v] = scale * (first + 2.0 * c[v] * inv_p[v])
    return fields


def tap_fields(D, resp, temperature: float) -> np.ndarray:
    """The TAP cavity fields ``h_iv`` of eq. (29), one ``O(N^2 K)`` pass (numba).

    Expanding the sum over ``mu`` of (29), with ``S = D^2`` (entry-wise) and ``p_v = n_v / N``:

        h_iv = 1/(2 T N^2 p_v^2) [(1 - 2 r_iv) (S r)_iv - (S r^2)_iv]
               + 1/(T N^2 p_v) ((S ∘ (r diag(1/p) r^T)) r)_iv.

    ``D`` is centred to zero off-diagonal mean first (the seed's assumption ``<D_ik> = 0``).
    The expansion assumes ``p_v = O(1)``: a cluster with ``n p_v < 1/2`` gets ``h_iv = 0``.

    Examples
    --------
    >>> D = np.array([[0.0, 1.0, 3.0], [1.0, 0.0, 2.0], [3.0, 2.0, 0.0]])
    >>> tap_fields(D, np.full((3, 2), 0.5), 1.0).shape
    (3, 2)
    """
    D = np.ascontiguousarray(D, dtype=np.float64)
    n = D.shape[0]
    mean = float((D.sum() - np.trace(D)) / (n * (n - 1))) if n > 1 else 0.0
    r = np.ascontiguousarray(resp, dtype=np.float64)
    p = r.sum(axis=0) / n
    # The expansion assumes p_v = O(1); a cluster holding less than half an item's worth of
    # probability gets no cavity field (its 1/p^2 terms would otherwise dominate).
    inv_p = np.where(p >= 0.5 / n, 1.0 / np.maximum(p, 1e-300), 0.0)
    return _tap_kernel(D, mean, r, inv_p, float(temperature))


@nb.njit(cache=True)
def _coupling_kernel(D, mean, resp, scale):
    """``J(i)`` of :func:`tap_couplings`: ``scale = 1 / (n_v T)`` (0 for a vanishing cluster)."""
    n, k = resp.shape
    out = np.zeros((n, k, k))
    for i in range(n):
        acc = out[i]
        for m in range(n):
            if m == i:
                continue
            s = D[i, m] - mean
            s = s * s
            for a in range(k):
                x = s * resp[m, a]
                if x == 0.0:
                    continue
                acc[a, a] += x
                for b in range(k):
                    acc[a, b] -= x * resp[m, b]
        for a in range(k):
            for b in range(k):
                acc[a, b] *= scale[a] * scale[b]
    return out


def tap_couplings(D, resp, temperature: float) -> np.ndarray:
    """The fluctuation covariances behind the cavity fields, scaled to logits: ``C(i) / T^2``.

    ``C_ab(i) = sum_{k != i} S_ik r_ka (delta_ab - r_kb) / (n_a n_b)`` (``S`` the squared
    dissimilarities centred to zero off-diagonal mean, ``n_v = N p_v``) is the covariance of the
    fluctuations of item ``i``'s potentials (appendix B, eq. (54) with assumption (51)); eq. (29)
    is ``h_ia = C_aa(i) / (2 T) - sum_b r_ib C_ab(i) / T``, so the TAP logits of item ``i`` are
    ``-E_ia / T + J_aa / 2 - (J r_i)_a`` with ``J = C(i) / T^2`` (the last term is the Onsager
    reaction of item ``i`` on itself). One ``O(N^2 K^2)`` numba pass, no ``N x N`` temporaries
    (BLAS on small blocks thrashes its threads on a shared machine). A cluster with ``n_v < 1/2`` gets no coupling (as :func:`tap_fields`).

    Returns
    -------
    numpy.ndarray of shape (N, K, K): ``J(i)``, symmetric positive semi-definite per item.

    Examples
    --------
    >>> D = np.array([[0.0, 1.0, 3.0], [1.0, 0.0, 2.0], [3.0, 2.0, 0.0]])
    >>> r = np.full((3, 2), 0.5)
    >>> J = tap_couplings(D, r, 1.0)
    >>> h = 0.5 * np.einsum("iaa->ia", J) - np.einsum("iab,ib->ia", J, r)  # eq. (29) with T = 1
    >>> bool(np.allclose(h, tap_fields(D, r, 1.0)))
    True
    """
    D = np.ascontiguousarray(D, dtype=np.float64)
    n = D.shape[0]
    r = np.ascontiguousarray(resp, dtype=np.float64)
    mean = float((D.sum() - np.trace(D)) / (n * (n - 1))) if n > 1 else 0.0
    sizes = r.sum(axis=0)
    inv_n = np.where(sizes >= 0.5, 1.0 / np.maximum(sizes, 1e-300), 0.0)
    return _coupling_kernel(D, mean, r, inv_n / float(temperature))


def mean_field_residual(data, resp, temperature: float, tap: bool = False, field=None) -> float:
    """Residual of the mean-field equations at given assignment probabilities (seed sec. 4.2).

    Inserts ``resp`` (e.g. Monte Carlo or exact Gibbs estimates of ``<M_iv>``) into the right
    side of eq. (25) with potentials (26) — or of the TAP equations (28)-(29) with ``tap=True``
    — and returns the root mean square of right side minus ``resp``. ``field`` (N, K) adds
    external costs to the potentials, as in
    :meth:`~latentzoo.models.PairwiseClustering.gibbs_expectations` (without one, the exact
    ``<M_iv> = 1/K`` are a fixed point of both equations and the residuals say nothing).

    Examples
    --------
    >>> from latentzoo.models import PairwiseClustering
    >>> data, _ = PairwiseClustering(2).simulate(0, n_items=6)
    >>> float(mean_field_residual(data, np.full((6, 2), 0.5), 10.0))  # uniform is a fixed point
    0.0
    """
    check_positive("temperature", temperature)
    D = Dissimilarities.coerce(data).D
    resp = np.asarray(resp, dtype=np.float64)
    if resp.ndim != 2 or resp.shape[0] != D.shape[0]:
        raise ValueError(f"resp must have shape (N, K) with N = {D.shape[0]}, got {resp.shape}")
    E = _potentials(D, resp)
    if field is not None:
        field = np.asarray(field, dtype=np.float64)
        if field.shape not in ((resp.shape[1],), resp.shape) or not np.all(np.isfinite(field)):
            raise ValueError(f"field must be finite of shape {resp.shape}, got {field.shape}")
        E = E + field
    if tap:
        E = E - tap_fields(D, resp, temperature)
    logits = -E / temperature
    rhs = np.exp(logits - logsumexp(logits, axis=1)[:, None])
    return float(np.sqrt(np.mean((rhs - resp) ** 2)))


# ----------------------------------------------------------------------------- Algorithm I
class _MeanFieldProblem(_ClusterCooling):
    """Sequential mean-field sweeps (Algorithm I) at ``T = 1/beta``, as an annealing problem,
    with the cooling hooks whose twins are halves of assignment columns.

    The running sums of the last sweep are kept with the assignments it returned, so a sweep
    costs one pass over ``D`` (they are rebuilt when the driver hands in other assignments, e.g.
    the perturbed ones at the start of a temperature).
    """

    monotone = False  # the plug-in free energy is monitored, not guaranteed to decrease

    def __init__(self, D, rng, tap: bool, n_clusters: int = 1, perturbation: float = 0.0):
        super().__init__(n_clusters, rng, perturbation)
        self.D = np.ascontiguousarray(D, dtype=np.float64)
        self.tap = tap
        self.offset = float(self.D.sum()) / (2 * self.D.shape[0])
        self.items = np.arange(self.D.shape[0], dtype=np.int64)
        self.state = None
        self.groups = None
        self.skip = 0.0
        self.damping = 1.0
        self.couplings, self.couplings_T = None, None

    def expected_cost(self, within, sizes) -> float:
        return _expected_cost(within, sizes, self.offset)

    def sums(self, resp):
        if self.state is not None and self.state[0] is resp:
            return self.state[1:]
        return _cluster_sums(self.D, resp)

    def step(self, params, beta):
        current = params["resp"]
        a_t, sizes, within = self.sums(current)
        T = 1.0 / beta
        expected = self.expected_cost(within, sizes)
        free = expected - T * _entropy(current)
        resp = current.copy()
        order = self.rng.permutation(self.items)
        shift = 0.0
        if self.tap:
            if self.groups is not None and self.groups.size == resp.shape[1]:
                # Twins are one cluster: their couplings are those of the pair's summed column
                # (eq. (29) is not invariant to splitting a cluster into copies).
                merged = np.zeros((resp.shape[0], self.groups.max() + 1))
                np.add.at(merged.T, self.groups, resp.T)
                couplings = tap_couplings(self.D, merged, T)[:, self.groups][:, :, self.groups]
            else:
                couplings = tap_couplings(self.D, resp, T)
            previous = self.couplings
            if previous is not None and previous.shape == couplings.shape and self.couplings_T == T:
                couplings = (1.0 - self.damping) * previous + self.damping * couplings
                # A change of the couplings moves the logits by up to this much.
                shift = float(np.max(np.abs(couplings - previous)))
            self.couplings, self.couplings_T = couplings, T
            # J_aa(i) is the variance of item i's potential fluctuations in units of T^2, the
            # parameter of the expansion (49) behind eq. (29); beyond 1 the second-order term is
            # no correction (measured on uniform D, N=100, K=10, below T_c: median 1.1-1.5,
            # largest 4-10), and the reaction term then holds the items near uniform or makes
            # them oscillate. Such an item's couplings are scaled down to that edge.
            size = np.max(np.einsum("iaa->ia", couplings), axis=1)
            couplings = couplings / np.maximum(1.0, size)[:, None, None]
            change = _tap_sweep(self.D, resp, a_t, sizes, within, couplings, T, order, self.skip)
        else:
            fields = np.zeros_like(resp)
            change = _mf_sweep(self.D, resp, a_t, sizes, within, fields, T, order, self.skip)
        self.last_change = max(change, shift)
        self.state = (resp, a_t, sizes, within)
        return {"resp": resp}, EMStats(free_energy=free, log_likelihood=-expected)

    def begin_stage(self, params, beta):
        resp = params["resp"]
        self.room = self.n_clusters - resp.shape[1]
        if self.room <= 0:
            self.groups = None
            return params
        # Every cluster gets a twin (half of its probabilities each, perturbed in opposite
        # directions); a pair drifts apart only below that cluster's critical temperature.
        self.groups = np.tile(np.arange(resp.shape[1]), 2)
        return {"resp": _duplicate_resp(resp, self.rng, self.perturbation)}

    def end_stage(self, params, beta):
        resp = params["resp"]
        if self.room > 0:
            resp = _resolve_resp(resp, resp.shape[1] // 2, self.room, 10 * self.perturbation)
        return {"resp": _merge_columns(resp, 10 * self.perturbation)}

    def stage_summary(self, params, beta):
        resp = params["resp"]
        _, sizes, within = self.sums(resp)
        expected = self.expected_cost(within, sizes)
        return _assignment_summary(self.D, resp, beta, expected, self.n_clusters)


def _initial_resp(rng, n, k, perturbation):
    resp = np.full((n, k), 1.0 / k)
    return _perturb_resp(resp, rng, max(perturbation, 1e-6))


def _quench(D, labels, k, rng, max_sweeps=1000):
    labels = labels.astype(np.int64).copy()
    a_t, sizes, within = _cluster_sums(D, _one_hot(labels, k))
    order = rng.permutation(labels.size).astype(np.int64)
    sweeps, done = _greedy_sweeps(D, labels, a_t, sizes, within, order, max_sweeps)
    return labels, int(sweeps), bool(done)


class _Segment:
    """A stretch of a cooling schedule: its inverse temperatures exactly, its rules otherwise."""

    def __init__(self, schedule: GeometricCooling, betas: list[float]):
        self.schedule, self.stretch = schedule, list(betas)

    def betas(self) -> list[float]:
        return list(self.stretch)

    def __getattr__(self, name):
        return getattr(self.schedule, name)


def _branched_cooling(problem, resp, schedule, max_iter, tol, n_branches, temperatures):
    """Cool ``problem`` from ``resp`` along ``schedule``, in ``n_branches`` branches between the
    two ``temperatures`` (see :func:`pairwise_annealing`'s ``branches``).

    Returns what :func:`~latentzoo.inference.annealing.cool` returns for the whole schedule (the
    chosen branch's stages), the problem that went on (with its random stream), and every
    branch's free energy at the end of the branching (None when the run did not branch).
    """
    T_split, T_pick = temperatures
    betas = np.array(schedule.betas())
    trunk_end = int(np.sum(1.0 / betas >= T_split))
    window_end = int(np.sum(1.0 / betas >= T_pick))
    parts, params, free_energies = [], {"resp": resp}, None

    def cool_part(part_problem, part_params, stretch):
        run, stages, _ = cool(part_problem, part_params, _Segment(schedule, stretch), max_iter, tol)
        return run, stages, len(stages) < len(stretch)

    pieces = [betas[:trunk_end], betas[trunk_end:window_end], betas[window_end:]]
    frozen = False
    run = None
    for index, stretch in enumerate(pieces):
        if frozen or stretch.size == 0:
            continue
        if index == 1:
            # Branch 0 is the unbranched run; the others are independent streams and twins.
            copies = [problem]
            for stream in problem.rng.spawn(n_branches - 1):
                twin = copy.deepcopy(problem)
                twin.rng = stream
                copies.append(twin)
            outcomes = []
            for branch, branch_problem in enumerate(copies):
                start = params
                if branch > 0:
                    start = {
                        "resp": _perturb_resp(
                            params["resp"], branch_problem.rng, branch_problem.perturbation
                        )
                    }
                outcomes.append(cool_part(branch_problem, start, stretch))
            free_energies = [float(stages["free_energy"].iloc[-1]) for _, stages, _ in outcomes]
            chosen = int(np.argmin(free_energies))
            problem = copies[chosen]
            run, stages, frozen = outcomes[chosen]
        else:
            run, stages, frozen = cool_part(problem, params, stretch)
        params = run.params
        parts.append(stages)
    stages = pd.concat(parts, ignore_index=True)
    run = replace(run, stages=stages, betas=schedule.betas())
    return run, stages, schedule.transitions(stages), problem, free_energies


def pairwise_annealing(
    model: PairwiseClustering,
    data,
    tap: bool = False,
    tap_damping: float = 1.0,
    T0: float | None = None,
    T_final: float | None = None,
    eta: float = 0.9,
    max_iter: int = 100,
    tol: float = 1e-4,
    perturbation: float = 1e-3,
    quench: bool = True,
    branches: int = 1,
    branch_below: float = 0.85,
    branch_until: float = 0.7,
    random_state=None,
) -> ClusteringResult:
    """Algorithm I: deterministic annealing for pairwise clustering by mean-field sweeps.

    See the module docstring: potentials (26), assignments (25) (with ``tap=True`` the TAP
    equations (28)-(29)), sequential updates in a random order, ``T <- eta T``.

    Parameters
    ----------
    model : PairwiseClustering
    data : Dissimilarities or array_like (N, N)
    tap : bool
        Add the cavity fields of eq. (29) (refined mean field, eq. (28)). Each item solves its
        own TAP equation with its new assignments in the Onsager reaction term (see
        :func:`tap_couplings`); the couplings of an item whose fluctuation variance exceeds
        ``T^2`` are scaled down to it, where the expansion behind (29) ends. With the reaction
        term taken from the previous sweep instead (as before issue 23), the items flip back
        and forth: on uniform D, N = 100, K = 10, every temperature below T_c ran out of sweeps
        and 17 of 100 runs reached the best of 1000 greedy descents (naive mean field: 66);
        solved per item, 78 of 100 (naive: 65; benchmarks/RESULTS_pairwise.md, Fig. 1). Per
        run it costs 7-15 times a naive run there (the couplings are ``O(N^2 K^2)``).
    tap_damping : float
        In (0, 1]: each sweep uses ``(1 - tap_damping) J_old + tap_damping J_new`` as the
        couplings of a temperature (1: none; with the reaction solved per item, the measured
        runs converge without it).
    T0 : float, optional
        Start temperature; default ``1.5 T_c`` with ``T_c = lambda_max(-J D J) / N``
        (:func:`~latentzoo.models.pairwise.critical_temperature`), above which the uniform
        assignment is the only solution.
    T_final : float, optional
        Lowest temperature; default ``1e-3 T0``. The schedule stops earlier once ``K``
        clusters exist and every assignment is frozen (``max_v <M_iv> > 1 - 1e-6``).
    eta : float
        Cooling factor in (0, 1). On hard instances, where the clusters form all at once and a
        run settles in one of many basins of similar cost (random dissimilarities), prefer
        ``tap=True, eta=0.98``: on uniform D, N = 100, K = 10, it put 96 of 100 runs at or
        below the best of 1000 greedy descents, at about 3 CPU seconds per run (naive mean field
        at ``eta=0.9``: 65, at 0.1 s; ``eta=0.98``: 89; benchmarks/RESULTS_pairwise.md, Fig. 1).
        A lost run chooses its basin within two temperatures after its K-th cluster appears; no
        setting tried (cooling to ``eta=0.995``, ``tol=1e-6``) won all 100, and
        ``tap=True, eta=0.98, branches=4`` did: 100 of 100, at about 4 CPU seconds per run
        (``eta=0.98, branches=8``: 99, at 0.5 s).
    max_iter : int
        Sweeps per temperature at most.
    tol : float
        A temperature ends when no assignment probability changes by more than ``tol`` in a
        sweep.
    perturbation : float
        While fewer than ``K`` clusters are distinct, every cluster gets a twin at each
        temperature (half of its assignment probabilities each, perturbed in opposite
        directions by this relative amount); a pair that the sweeps drive more than
        ``10 perturbation`` apart (relative to its largest probability) is kept as two clusters,
        otherwise merged back — Rose et al.'s cluster splitting at phase transitions, with the
        most separated pairs first when more would split than ``K`` allows. Columns that fall
        together later are merged as well.
    quench : bool
        End with the zero-temperature local search of :func:`greedy` from the annealed labels.
    branches : int
        With ``B > 1``, the run splits into ``B`` branches at the first temperature below
        ``branch_below T_c``; they cool on through the temperatures down to ``branch_until T_c``
        and the one with the lowest free energy there goes on alone. Branch 0 continues the
        run's own random stream (it is the run with ``branches=1``); the others draw their sweep
        orders from streams spawned from the run's generator (which consumes none of its draws)
        and start from its assignments perturbed by ``perturbation``. On random dissimilarities
        a run chooses its basin between about 0.85 and 0.82 ``T_c``, and the free energy at 0.7
        ``T_c`` ranks the branches' final costs (benchmarks/RESULTS_pairwise.md, Fig. 1). The
        settings record every branch's free energy (``branch_free_energies``) and the chosen
        one (``branch``). 1: no branching, today's run exactly.
    branch_below, branch_until : float
        Where the branches start and where they are compared, as fractions of ``T_c``
        (``branch_until < branch_below``). Without a temperature of the schedule in between (or
        once the run is frozen before), the run does not branch.
    random_state : int or numpy.random.Generator, optional

    Returns
    -------
    ClusteringResult
        With the per-temperature ``trace`` (of the chosen branch) and the phase
        ``transitions``.

    Examples
    --------
    >>> from latentzoo.models import PairwiseClustering
    >>> model = PairwiseClustering(3)
    >>> data, truth = model.simulate(0, n_items=30)
    >>> result = pairwise_annealing(model, data, random_state=0)
    >>> result.cost <= model.cost(data, truth["z"]) + 1e-9
    True
    """
    start = time.perf_counter()
    _check_model(model, PairwiseClustering)
    data = model.check_data(data)
    _check_options(T0, T_final, eta, max_iter, tol, perturbation)
    tap_damping = check_interval("tap_damping", tap_damping, 0, 1, closed="right")
    check_integer("branches", branches)
    check_positive("branch_below", branch_below)
    check_interval("branch_until", branch_until, 0, branch_below)
    data, exponent = _unit_dissimilarities(data)
    if exponent:
        T0 = None if T0 is None else float(np.ldexp(T0, -exponent))
        T_final = None if T_final is None else float(np.ldexp(T_final, -exponent))
    rng = as_rng(random_state)
    D = np.ascontiguousarray(data.D)
    n, k = data.n_items, model.n_components
    T_c, T0, T_final = _pairwise_temperatures(data, D, T0, T_final)
    problem = _MeanFieldProblem(D, rng, bool(tap), k, perturbation)
    problem.damping = tap_damping
    # Updates a thousand times below the stage's tolerance cannot decide it: skip them.
    problem.skip = 1e-3 * tol
    schedule = _schedule(T0, T_final, eta)
    branch_free_energies = None
    if branches == 1:
        run, stages, transitions = cool(problem, {"resp": np.ones((n, 1))}, schedule, max_iter, tol)
    else:
        run, stages, transitions, problem, branch_free_energies = _branched_cooling(
            problem,
            np.ones((n, 1)),
            schedule,
            max_iter,
            tol,
            branches,
            (branch_below * T_c, branch_until * T_c),
        )
        rng = problem.rng
    converged = run.converged
    labels = np.argmax(run.params["resp"], axis=1).astype(np.int64)
    resp = _pad(run.params["resp"], k)
    settings = {
        "tap": bool(tap),
        "tap_damping": tap_damping,
        "T0": T0,
        "T_final": T_final,
        "eta": eta,
        "T_c": T_c,
    }
    if branches > 1:
        settings.update(branches=branches, branch_below=branch_below, branch_until=branch_until)
        if branch_free_energies is not None:
            # In the data's units, as every other free energy of the result.
            settings["branch_free_energies"] = [
                float(np.ldexp(value, exponent)) for value in branch_free_energies
            ]
            settings["branch"] = int(np.argmin(branch_free_energies))
    if quench:
        labels, sweeps, done = _quench(D, labels, k, rng)
        settings["quench_sweeps"] = sweeps
        converged = converged and done
    result = _annealed_result(
        model,
        data,
        labels,
        resp,
        "pairwise_annealing_tap" if tap else "pairwise_annealing",
        start,
        stages,
        transitions,
        converged=converged,
        settings=settings,
    )
    return _in_data_units(result, exponent)


# -------------------------------------------------------------- sparse neighbourhoods (sec. 6.3)
@nb.njit(cache=True)
def _solve_capped(bias, coupling, start, out):
    """One item's TAP equation (:func:`_solve_item`) with its couplings scaled so that no
    variance exceeds 1: beyond it the expansion behind (29) ends (as pairwise_annealing)."""
    k = bias.size
    size = 0.0
    for x in range(k):
        size = max(size, coupling[x, x])
    if size > 1.0:
        for x in range(k):
            for y in range(k):
                coupling[x, y] /= size
    for x in range(k):
        bias[x] += 0.5 * coupling[x, x]
    _solve_item(bias, coupling, start, out)


@nb.njit(cache=True)
def _spread(indptr, indices, values, a, b, i, v, delta):
    """Item ``i``'s probability of cluster ``v`` moved by ``delta``: its partners' sums follow."""
    for e in range(indptr[i], indptr[i + 1]):
        j = indices[e]
        a[j, v] += delta * values[e]
        b[j, v] += delta


@nb.njit(cache=True)
def _partner_couplings(indptr, indices, values, resp, i, slope, centre, temperature, gap, coupling):
    """TAP couplings of item ``i`` (eq. (29)) over its observed partners, written into
    ``coupling``: ``J_xy = Cov(E_ix, E_iy) / T^2`` over independent partners' assignments, with
    ``d E_ix / d <M_jx> = slope[x] (D_ij - centre[x])``."""
    k = coupling.shape[0]
    for x in range(k):
        for y in range(k):
            coupling[x, y] = 0.0
    for e in range(indptr[i], indptr[i + 1]):
        j = indices[e]
        for x in range(k):
            gap[x] = slope[x] * (values[e] - centre[x]) / temperature
        for x in range(k):
            coupling[x, x] += gap[x] * gap[x] * resp[j, x]
            for y in range(k):
                coupling[x, y] -= gap[x] * gap[y] * resp[j, x] * resp[j, y]


@nb.njit(cache=True)
def _set_item(indptr, indices, values, resp, a, b, sizes, within, inner, i, new, shift):
    """Set item ``i``'s assignments to ``new`` and keep the sparse sums current: ``a``, ``b``
    (:func:`_spread`), the sizes, the within sums of ``D - shift`` and the inner pair counts.
    Returns the largest change of a probability."""
    biggest = 0.0
    for v in range(resp.shape[1]):
        delta = new[v] - resp[i, v]
        if abs(delta) > biggest:
            biggest = abs(delta)
        if delta != 0.0:
            within[v] += delta * (a[i, v] - shift * b[i, v])
            inner[v] += delta * b[i, v]
            sizes[v] += delta
            _spread(indptr, indices, values, a, b, i, v, delta)
            resp[i, v] = new[v]
    return biggest


@nb.njit(cache=True, inline="always")
def _normalised_potentials(resp, a, b, sizes, within, inner, i, temperature, bias, slope, centre):
    """Item ``i``'s potentials under the normalised cost, into ``bias`` (as ``-E_iv / T``), with
    the slopes and centres of its TAP couplings (see :func:`_sparse_sweep`)."""
    for v in range(resp.shape[1]):
        others = sizes[v] - resp[i, v]
        sum_without = within[v] - resp[i, v] * a[i, v]
        pairs_without = inner[v] - resp[i, v] * b[i, v]
        mean_without = sum_without / pairs_without if pairs_without > 1e-12 else 0.0
        pairs_with = pairs_without + b[i, v]
        mean_with = (sum_without + a[i, v]) / pairs_with if pairs_with > 1e-12 else 0.0
        bias[v] = -((others + 1.0) * mean_with - others * mean_without) / temperature
        slope[v] = (others + 1.0) / pairs_with if pairs_with > 1e-12 else 0.0
        centre[v] = mean_with


@nb.njit(cache=True)
def _sparse_sweep(indptr, indices, values, resp, a, b, sizes, within, inner, temperature, order,
                  tap, shift, normalised):  # fmt: skip
    """One sequential mean-field sweep of the sparse pairwise cost over the items in ``order``.

    ``a[i, v] = sum_{j ~ i} <M_jv> D_ij`` and ``b[i, v] = sum_{j ~ i} <M_jv>`` over item ``i``'s
    observed partners, ``sizes``, the within sums ``within`` (``W_v``) and the inner pair counts
    ``inner`` (``P_v``) are kept current after every item (O(degree K)). With ``normalised`` the
    cost of cluster ``v`` is ``n_v W_v / P_v`` (:func:`sparse_pairwise_cost`), ``W_v`` the within
    sum of ``D``, and item ``i``'s potential of cluster ``v`` is the exact change of that cost
    when ``i`` joins ``v``, its own share first taken out; its TAP couplings are the covariance
    of the potentials over the partners' fluctuations, ``d E_iv / d <M_jv> = (n_v + 1) (D_ij -
    mean_v) / P_v``. Otherwise ``W_v`` sums ``D - shift`` and the potential is the increment
    ``a[i, v] - shift b[i, v]``. With ``tap`` each item solves its TAP equation
    (:func:`_solve_item`). Returns the largest change of a probability.
    """
    n, k = resp.shape
    bias = np.empty(k)
    new = np.empty(k)
    # Centred cost: d E_iv / d <M_jv> = D_ij - shift for every cluster v (the normalised cost
    # sets both per item).
    slope = np.ones(k)
    centre = np.full(k, shift)
    within_shift = 0.0 if normalised else shift
    gap = np.empty(k)
    coupling = np.zeros((k, k))
    biggest = 0.0
    for i in order:
        if normalised:
            _normalised_potentials(resp, a, b, sizes, within, inner, i, temperature, bias, slope,
                                   centre)  # fmt: skip
        else:
            for v in range(k):
                bias[v] = -(a[i, v] - shift * b[i, v]) / temperature
        if tap:
            _partner_couplings(indptr, indices, values, resp, i, slope, centre, temperature, gap,
                               coupling)  # fmt: skip
            _solve_capped(bias, coupling, resp[i], new)
        else:
            _softmax(bias, new)
        change = _set_item(indptr, indices, values, resp, a, b, sizes, within, inner, i, new,
                           within_shift)  # fmt: skip
        biggest = max(biggest, change)
    return biggest


def _sparse_sums(pairs, resp, shift):
    """``a = D resp``, ``b = A resp`` (A the graph's pattern, explicit zeros included: every
    stored entry is an observed pair), the sizes and the centred within sums (pairs once)."""
    a = pairs @ resp
    pattern = pairs.copy()
    pattern.data = np.ones_like(pattern.data)
    b = pattern @ resp
    within = 0.5 * np.einsum("iv,iv->v", resp, a - shift * b)
    return np.ascontiguousarray(a), np.ascontiguousarray(b), resp.sum(axis=0), within


def _sparse_shift(pairs, shift) -> float:
    return float(pairs.data.mean()) if shift is None else float(shift)


def sparse_pairwise_cost(
    data: Dissimilarities, labels, shift: float | None = None, normalised: bool = True
) -> float:
    """The pairwise clustering cost on the observed pairs of a sparse graph.

    Normalised (default; Hofmann, Puzicha and Buhmann's sparse form of eq. (16)):
    ``sum_v n_v W_v / P_v`` with ``W_v = sum_{observed i < j in v} D_ij`` and ``P_v`` the number
    of observed pairs inside cluster ``v``: each cluster's size times its mean dissimilarity over
    its neighbour pairs, as eq. (16) is each cluster's size times its mean over all its pairs. A
    cluster without an inner pair costs 0. ``shift`` is ignored (the mean is shift-invariant up
    to ``N shift``).

    Centred (``normalised=False``): ``sum_v W_v`` with ``W_v = sum_{observed i < j in v} (D_ij -
    shift)``. Eq. (16) normalises each cluster's within sum by its size because on a dense matrix the sum
    grows as ``n_v^2``; it is then invariant to a shift of ``D`` (eq. (17)). On a sparse
    neighbourhood graph an item has a bounded number of partners, so ``W_v`` grows as ``n_v``:
    the same normalisation makes every cluster's share independent of its size and rewards
    splitting a good cluster in two (measured on 5-texture mosaics: costs below the truth's at
    35-50% pixel error), and the per-cluster mean over the observed pairs lets a scattered
    cluster whose few inner pairs are close reach a mean near 0 (cost 7 against 257 for the
    truth). Without the normalisation the shift decides: unshifted (``D >= 0``) every cut pair is
    free and singletons win; centred at the mean observed dissimilarity (default), a close pair
    lowers the cost when kept inside a cluster and a far pair raises it. Measured on 5-texture
    mosaics (64-pixel blocks, 20 random partners per block), the normalised cost segments with
    less error than the centred one.

    Parameters
    ----------
    data : Dissimilarities
    labels : array_like of int
    shift : float, optional
        Centred cost only: default the mean of the observed dissimilarities.
    normalised : bool, default True
        The normalised cost; False the centred one.

    Examples
    --------
    >>> import scipy.sparse as sp
    >>> pairs = sp.coo_matrix(([1.0, 0.1, 0.2], ([0, 0, 2], [1, 2, 3])), shape=(4, 4))
    >>> data = Dissimilarities.from_sparse(pairs)
    >>> round(sparse_pairwise_cost(data, [0, 1, 0, 0], shift=0.5, normalised=False), 6)
    -0.7
    >>> round(sparse_pairwise_cost(data, [0, 1, 0, 0]), 6)  # 3 (0.1 + 0.2) / 2 + 1 * 0
    0.45
    """
    pairs = data.pairs
    labels = np.asarray(labels, dtype=np.int64)
    resp = _one_hot(labels, int(labels.max()) + 1)
    if normalised:
        _, b, sizes, within = _sparse_sums(pairs, resp, 0.0)
        inner = 0.5 * np.einsum("iv,iv->v", resp, b)
        means = np.divide(within, inner, out=np.zeros_like(within), where=inner > 0)
        return float(sizes @ means)
    _, _, sizes, within = _sparse_sums(pairs, resp, _sparse_shift(pairs, shift))
    return float(within.sum())


@dataclass
class SparsePairwiseFit:
    """The outcome of :func:`sparse_pairwise_annealing`.

    Attributes
    ----------
    labels : numpy.ndarray
        ``int64 (N,)`` hard labels (the largest assignment probability).
    resp : numpy.ndarray
        ``(N, K)`` final assignment probabilities.
    cost : float
        :func:`sparse_pairwise_cost` of ``labels``.
    trace : pandas.DataFrame
        One row per temperature: ``T``, ``sweeps``, ``change`` (the last sweep's largest).
    converged : bool
        The last temperature ended by ``tol``.
    settings : dict
    """

    labels: np.ndarray
    resp: np.ndarray
    cost: float
    trace: pd.DataFrame
    converged: bool
    settings: dict = field(default_factory=dict)


def sparse_pairwise_annealing(
    model: PairwiseClustering,
    data: Dissimilarities,
    tap: bool = False,
    T0: float | None = None,
    T_final: float | None = None,
    eta: float = 0.9,
    max_iter: int = 100,
    tol: float = 1e-4,
    perturbation: float = 1e-3,
    shift: float | None = None,
    random_state=None,
    progress=None,
    normalised: bool = True,
) -> SparsePairwiseFit:
    """Mean-field annealing of pairwise clustering on a sparse neighbourhood graph (sec. 6.3).

    Only the observed pairs of ``data`` (:meth:`Dissimilarities.from_sparse`) enter: the cost
    is :func:`sparse_pairwise_cost`. As Algorithm I (:func:`pairwise_annealing`), items update
    sequentially in a random order, ``<M_iv> ∝ exp(-E_iv / T)`` with ``E_iv`` the exact cost
    increment of adding item ``i`` to cluster ``v`` under the current assignments (the analogue
    of eq. (24)-(26)): for the normalised cost (default) the change of ``n_v W_v / P_v``
    (:func:`_sparse_sweep`), for the centred one ``E_iv = sum_{j ~ i} <M_jv> (D_ij -
    shift)``; both kept current in O(degree K) per item, so a sweep costs O(pairs K). With ``tap=True`` each item solves the TAP equation
    (28)-(29) with ``J(i)`` the covariance, over ``T^2``, of its potentials under independent
    fluctuations of its partners' assignments, scaled so that no variance exceeds 1 (as
    :func:`pairwise_annealing`).

    Parameters
    ----------
    model : PairwiseClustering
    data : Dissimilarities
        Sparse or dense (dense: every pair observed; O(N^2) memory).
    tap : bool
        The cavity (TAP) correction.
    T0 : float, optional
        Start temperature; default the scale of the increments: normalised, four times the
        largest centred dissimilarity (a cluster's increment is its mean plus about twice an
        item's centred mean over its partners); centred, the largest centred dissimilarity
        times the mean degree.
    T_final : float, optional
        Lowest temperature; default ``1e-3 T0``. The schedule stops earlier once every
        assignment is frozen (``max_v <M_iv> > 1 - 1e-6``).
    eta : float
        Cooling factor ``T <- eta T`` in (0, 1).
    max_iter : int
        Sweeps per temperature at most.
    tol : float
        A temperature ends when no probability changes by more than ``tol`` in a sweep.
    perturbation : float
        Relative noise on the uniform start (breaks the symmetry of the clusters).
    shift : float, optional
        Centre of the dissimilarities (:func:`sparse_pairwise_cost`); default their mean.
    random_state : None, int or numpy.random.Generator
    progress : tqdm-like, optional
        Updated once per sweep.
    normalised : bool, default True
        The normalised cost of :func:`sparse_pairwise_cost`; False the centred one.

    Returns
    -------
    SparsePairwiseFit
        The hard labels, the final assignment probabilities, the cost and a row per temperature.

    Examples
    --------
    >>> import scipy.sparse as sp
    >>> near, far = [(0, 1), (1, 2), (3, 4), (4, 5)], [(0, 3), (2, 5), (1, 4)]
    >>> first, second = np.array(near + far).T
    >>> values = [0.1] * len(near) + [0.9] * len(far)
    >>> data = Dissimilarities.from_sparse(sp.coo_matrix((values, (first, second)), shape=(6, 6)))
    >>> labels = sparse_pairwise_annealing(PairwiseClustering(2), data, random_state=0).labels
    >>> bool(len(set(labels[:3])) == len(set(labels[3:])) == 1 and labels[0] != labels[3])
    True
    """
    _check_model(model, PairwiseClustering)
    data = model.check_data(data)
    _check_options(T0, T_final, eta, max_iter, tol, perturbation)
    rng = as_rng(random_state)
    pairs = data.pairs
    n, k = data.n_items, model.n_components
    shift = _sparse_shift(pairs, shift)
    if T0 is None:
        # The scale of the increments: a degree's worth of centred dissimilarities.
        spread = float(np.max(np.abs(pairs.data - shift)))
        spread = spread if spread > 0 else 1.0
        T0 = 4.0 * spread if normalised else spread * pairs.nnz / n
    T_final = 1e-3 * T0 if T_final is None else float(T_final)
    resp = _initial_resp(rng, n, k, perturbation)
    a, b, sizes, within = _sparse_sums(pairs, resp, 0.0 if normalised else shift)
    inner = 0.5 * np.einsum("iv,iv->v", resp, b)
    indptr = pairs.indptr.astype(np.int64)
    indices = pairs.indices.astype(np.int64)
    values = pairs.data.astype(np.float64)
    items = np.arange(n, dtype=np.int64)
    rows = []
    temperature, converged = T0, False
    while True:
        sweeps = 0
        while sweeps < max_iter:
            sweeps += 1
            order = rng.permutation(items)
            change = _sparse_sweep(indptr, indices, values, resp, a, b, sizes, within, inner,
                                   temperature, order, bool(tap), shift, bool(normalised))  # fmt: skip
            if progress is not None:
                progress.update(1)
            if change <= tol:
                break
        converged = change <= tol
        rows.append({"T": temperature, "sweeps": sweeps, "change": change})
        frozen = bool(np.all(resp.max(axis=1) > 1.0 - _FROZEN))
        if frozen or temperature * eta < T_final:
            break
        temperature *= eta
    labels = np.argmax(resp, axis=1).astype(np.int64)
    settings = {"tap": bool(tap), "T0": T0, "T_final": T_final, "eta": eta, "tol": tol,
                "shift": shift, "normalised": bool(normalised)}  # fmt: skip
    return SparsePairwiseFit(
        labels=labels,
        resp=resp,
        cost=sparse_pairwise_cost(data, labels, shift, normalised),
        trace=pd.DataFrame(rows),
        converged=bool(converged),
        settings=settings,
    )


def mean_field(
    model: PairwiseClustering,
    data,
    temperature: float,
    tap: bool = False,
    resp=None,
    tap_damping: float = 1.0,
    max_iter: int = 1000,
    tol: float = 1e-10,
    random_state=None,
) -> np.ndarray:
    """Solve the mean-field equations (25)-(26) (or TAP, (28)-(29)) at one temperature.

    Sequential sweeps from ``resp`` (default: uniform plus a small random perturbation) until the
    largest change of an assignment probability falls below ``tol`` (with ``tap=True``, and the
    couplings damped as in :func:`pairwise_annealing`, until the couplings settle too).

    Returns
    -------
    numpy.ndarray of shape (N, K): ``<M_iv>``

    Examples
    --------
    >>> from latentzoo.models import PairwiseClustering
    >>> data, _ = PairwiseClustering(2).simulate(0, n_items=8)
    >>> mean_field(PairwiseClustering(2), data, 1e6, random_state=0).round(3)[0].tolist()
    [0.5, 0.5]
    """
    _check_model(model, PairwiseClustering)
    data = model.check_data(data)
    check_positive("temperature", temperature)
    check_integer("max_iter", max_iter)
    check_interval("tol", tol, 0, np.inf, closed="left")
    rng = as_rng(random_state)
    n, k = data.n_items, model.n_components
    if resp is None:
        resp = _initial_resp(rng, n, k, 1e-2)
    else:
        resp = np.array(resp, dtype=np.float64)
        if resp.shape != (n, k) or not np.all(np.isfinite(resp)) or np.any(resp < 0):
            raise ValueError(f"resp must be non-negative of shape {(n, k)}, got {resp.shape}")
        resp = resp / resp.sum(axis=1, keepdims=True)
    tap_damping = check_interval("tap_damping", tap_damping, 0, 1, closed="right")
    # The assignments depend on D / T only.
    data, exponent = _unit_dissimilarities(data)
    temperature = np.ldexp(float(temperature), -exponent) if exponent else temperature
    problem = _MeanFieldProblem(np.ascontiguousarray(data.D), rng, bool(tap))
    problem.damping = tap_damping
    params = {"resp": resp}
    beta = 1.0 / float(temperature)
    for _ in range(max_iter):
        params, _ = problem.step(params, beta)
        if problem.last_change < tol:
            break
    return params["resp"]


# ----------------------------------------------------------------------------- baselines
def greedy(
    model: PairwiseClustering,
    data,
    n_init: int = 1,
    max_sweeps: int = 1000,
    random_state=None,
) -> ClusteringResult:
    """Gradient-descent baseline: zero-temperature local search from random assignments.

    Each start draws uniform random labels, then moves single items, sequentially in a random
    order, to the cluster with the smallest exact cost increment (24) until no move lowers the
    cost (16) (seed section 6.1's "gradient descent"). The best of ``n_init`` starts is
    returned, and every start's final cost is in ``run_costs``.

    Examples
    --------
    >>> from latentzoo.models import PairwiseClustering
    >>> model = PairwiseClustering(2)
    >>> data, _ = model.simulate(0, n_items=20)
    >>> greedy(model, data, n_init=5, random_state=0).run_costs.shape
    (5,)
    """
    start = time.perf_counter()
    _check_model(model, PairwiseClustering)
    data = model.check_data(data)
    check_integer("n_init", n_init)
    check_integer("max_sweeps", max_sweeps)
    data, exponent = _unit_dissimilarities(data)
    rng = as_rng(random_state)
    D = np.ascontiguousarray(data.D)
    n, k = data.n_items, model.n_components
    best, best_cost, costs, all_done = None, np.inf, np.empty(n_init), True
    for run in range(n_init):
        labels, _, done = _quench(D, rng.integers(0, k, size=n), k, rng, max_sweeps)
        all_done = all_done and done
        costs[run] = pairwise_cost(D, labels, k)
        if costs[run] < best_cost:
            best, best_cost = labels, costs[run]
    result = _result(
        model,
        data,
        best,
        _one_hot(best, k),
        float(best_cost),
        "greedy",
        start,
        trace=pd.DataFrame(),
        transitions=[],
        converged=all_done,
        run_costs=costs,
        settings={"n_init": n_init, "max_sweeps": max_sweeps},
    )
    return _in_data_units(result, exponent)


def ward(model: PairwiseClustering, data, linkage: str = "ward") -> ClusteringResult:
    """Linkage baseline: scipy's agglomerative clustering of ``D`` cut at ``K`` clusters.

    ``linkage="ward"`` is the seed's "Mean Average Dissimilarity Linkage / Ward's method"
    (section 6.1); ``"average"``, ``"complete"``, ``"single"`` and ``"weighted"`` are accepted
    too. Ward's criterion presumes Euclidean distances; on other dissimilarities it is the usual
    heuristic. Deterministic. Every criterion is invariant to the scale of ``D``, so ``D`` whose
    mean off-diagonal entry lies outside ``[1e-100, 1e100]`` (where scipy's squared distances
    underflow to 0 or overflow) is clustered divided by a power of two near that mean.

    The option is ``linkage``, not scipy's ``method``: ``latentzoo.fit(model, D, method="ward",
    linkage="average")`` must reach it, and ``method`` there names the fitting method.

    Examples
    --------
    >>> from latentzoo.models import PairwiseClustering
    >>> model = PairwiseClustering(3)
    >>> data, truth = model.simulate(0, n_items=30)
    >>> int(ward(model, data).labels_.max())
    2
    """
    from scipy.cluster import hierarchy

    start = time.perf_counter()
    _check_model(model, PairwiseClustering)
    data = model.check_data(data)
    criteria = ("ward", "average", "complete", "single", "weighted")
    if linkage not in criteria:
        raise ValueError(f"linkage must be one of {criteria}, got {linkage!r}")
    data, exponent = _unit_dissimilarities(data)
    k = model.n_components
    n = data.n_items
    if n == 1:
        labels = np.zeros(1, dtype=np.int64)
    else:
        tree = hierarchy.linkage(data.condensed(), method=linkage)
        raw = hierarchy.fcluster(tree, t=k, criterion="maxclust")
        labels = (np.unique(raw, return_inverse=True)[1]).astype(np.int64)
    result = _result(
        model,
        data,
        labels,
        _one_hot(labels, k),
        pairwise_cost(data.D, labels, k),
        linkage,
        start,
        trace=pd.DataFrame(),
        transitions=[],
        settings={"linkage": linkage},
    )
    return _in_data_units(result, exponent)


# ----------------------------------------------------------------------------- Algorithm II
def classical_mds(D: np.ndarray, n_dims: int) -> np.ndarray:
    """Classical (Torgerson) scaling: coordinates whose squared distances best match ``D``."""
    n = D.shape[0]
    B = -0.5 * (D - D.mean(axis=0)[None, :] - D.mean(axis=1)[:, None] + D.mean())
    values, vectors = np.linalg.eigh(B)
    top = np.argsort(values)[::-1][:n_dims]
    x = vectors[:, top] * np.sqrt(np.maximum(values[top], 0.0))[None, :]
    if x.shape[1] < n_dims:
        x = np.hstack([x, np.zeros((n, n_dims - x.shape[1]))])
    return x


def _embedding_update(x, y, log_resp, potentials, ridge=1e-6):
    """Solve eq. (34)-(35) for every ``x_i``, divided by ``1 - max_v <M_iv>`` (singular limit)."""
    n, k = log_resp.shape
    d = x.shape[1]
    rows = np.arange(n)
    u = np.argmax(log_resp, axis=1)
    others = log_resp.copy()
    others[rows, u] = -np.inf
    log_rest = logsumexp(others, axis=1)  # log(1 - <M_iu>)
    q = np.exp(others - log_rest[:, None])  # conditional probabilities of the other clusters
    rest = np.exp(log_rest)
    diffs = y[None, :, :] - y[u][:, None, :]  # (N, K, d): y_v - y_u
    mean_diff = np.einsum("iv,ivp->ip", q, diffs)
    A = np.einsum("iv,ivp,ivq->ipq", q, diffs, diffs)
    A -= rest[:, None, None] * mean_diff[:, :, None] * mean_diff[:, None, :]
    g = (y**2).sum(axis=1)[None, :] - potentials
    g = g - g[rows, u][:, None]
    b = 0.5 * np.einsum("iv,iv,ivp->ip", q, g, diffs - rest[:, None, None] * mean_diff[:, None, :])
    scale = np.trace(A, axis1=1, axis2=2) + 1e-12 * (1.0 + np.sum(y**2) / k)
    lam = ridge * scale
    system = A + lam[:, None, None] * np.eye(d)[None]
    return np.linalg.solve(system, (b + lam[:, None] * x)[..., None])[..., 0]


class _EmbeddingProblem(_TwinCentroids):
    """Algorithm II at ``T = 1/beta``: one step computes ``<M_iv>`` from the embedding
    (eq. (15)), moves the coordinates ``relax`` of the way to the solution of eq. (34)-(35) and
    the centroids to eq. (32); twin centroids split the clusters as in central annealing."""

    monotone = False  # no free energy is tracked: the change of <M_iv> decides a stage

    def __init__(self, D, relax, n_clusters, rng, perturbation, scale):
        super().__init__(n_clusters, rng, perturbation, scale)
        self.D = D
        self.relax = relax
        self.offset = float(D.sum()) / (2 * D.shape[0])

    @staticmethod
    def log_assignments(x, y, T):
        logits = -_squared_distances(x, y) / T
        return logits - logsumexp(logits, axis=1)[:, None]

    def step(self, params, beta):
        x, y, resp = params["embedding"], params["centroids"], params["resp"]
        log_resp = self.log_assignments(x, y, 1.0 / beta)
        new = np.exp(log_resp)
        self.last_change = float(np.max(np.abs(new - resp))) if new.shape == resp.shape else np.inf
        target = _embedding_update(x, y, log_resp, _potentials(self.D, new))
        x = x + self.relax * (target - x)
        sizes = new.sum(axis=0)
        moved = (new.T @ x) / np.maximum(sizes, 1e-300)[:, None]
        y = np.where(sizes[:, None] > 1e-300, moved, y)
        stats = EMStats(free_energy=np.nan, log_likelihood=np.nan)
        return {"embedding": x, "centroids": y, "resp": new}, stats

    def end_stage(self, params, beta):
        x, y = params["embedding"], self.resolve(params["centroids"])
        return {
            "embedding": x,
            "centroids": y,
            "resp": np.exp(self.log_assignments(x, y, 1.0 / beta)),
        }

    def stage_summary(self, params, beta):
        resp = params["resp"]
        _, sizes, within = _sums(self.D, resp)
        expected = _expected_cost(within, sizes, self.offset)
        return _assignment_summary(self.D, resp, beta, expected, self.n_clusters)


def structure_preserving_mds(
    model: PairwiseClustering,
    data,
    n_dims: int = 2,
    T0: float | None = None,
    T_final: float | None = None,
    eta: float = 0.9,
    max_iter: int = 100,
    tol: float = 1e-5,
    perturbation: float = 1e-3,
    init: str = "classical",
    relax: float = 0.3,
    random_state=None,
) -> ClusteringResult:
    """Algorithm II: simultaneous pairwise clustering and Euclidean embedding, eq. (34)-(35).

    See the module docstring for the iteration and the handling of its ``T -> 0`` singularity.

    Parameters
    ----------
    model : PairwiseClustering
        ``n_components >= 2``.
    data : Dissimilarities
    n_dims : int
        Dimension ``d`` of the embedding.
    T0, T_final, eta, max_iter, tol, perturbation
        As for :func:`pairwise_annealing` (``tol`` on the largest change of ``<M_iv>``;
        ``perturbation`` relative to the embedding's scale, applied to the centroids).
    init : {"classical", "random"}
        Start from classical scaling of ``D`` (its squared distances match ``D``, so the
        embedding's critical temperature matches the data's) or from random coordinates of the
        same scale.
    relax : float
        In (0, 1]: each iteration moves the coordinates by ``relax`` times the step to the
        solution of eq. (34). The undamped parallel update oscillates like the parallel
        mean-field update of the seed's footnote 3 (measured on 226 items, K = 9: 36 of 60
        temperatures ran out of iterations and the final cost was 13-21 % above Algorithm I's;
        with 0.3, 20 of 60 and 0.5-1.7 %).
    random_state : int or numpy.random.Generator, optional

    Returns
    -------
    ClusteringResult
        With ``embedding`` (N, d) and ``centroids`` (K, d); ``cost`` is (16) of the labels.

    Examples
    --------
    >>> from latentzoo.models import PairwiseClustering
    >>> model = PairwiseClustering(3)
    >>> data, truth = model.simulate(0, n_items=30)
    >>> result = structure_preserving_mds(model, data, random_state=0)
    >>> result.embedding.shape
    (30, 2)
    """
    start = time.perf_counter()
    _check_model(model, PairwiseClustering)
    data = model.check_data(data)
    check_integer("n_dims", n_dims)
    _check_options(T0, T_final, eta, max_iter, tol, perturbation)
    if init not in ("classical", "random"):
        raise ValueError(f"init must be 'classical' or 'random', got {init!r}")
    relax = check_interval("relax", relax, 0, 1, closed="right")
    k = model.n_components
    if k < 2:
        raise ValueError(f"structure_preserving_mds needs n_components >= 2, got {k}")
    # The embedding's squared distances match D, so its coordinates scale by 2**(exponent / 2).
    data, exponent = _unit_dissimilarities(data, even=True)
    if exponent:
        T0 = None if T0 is None else float(np.ldexp(T0, -exponent))
        T_final = None if T_final is None else float(np.ldexp(T_final, -exponent))
    rng = as_rng(random_state)
    D = np.ascontiguousarray(data.D)
    n = data.n_items
    x = classical_mds(D, n_dims)
    spread = float(np.sqrt(np.mean(np.sum((x - x.mean(axis=0)) ** 2, axis=1)))) or 1.0
    if init == "random":
        x = rng.normal(scale=spread / np.sqrt(n_dims), size=(n, n_dims))
    T_c, T0, T_final = _pairwise_temperatures(data, D, T0, T_final)
    problem = _EmbeddingProblem(D, relax, k, rng, perturbation, spread)
    start_params = {"embedding": x, "centroids": x.mean(axis=0)[None, :], "resp": np.ones((n, 1))}
    run, stages, transitions = cool(
        problem, start_params, _schedule(T0, T_final, eta), max_iter, tol
    )
    labels = np.argmax(run.params["resp"], axis=1).astype(np.int64)
    y, resp = _fill_centroids(run.params["centroids"], run.params["resp"], k)
    result = _annealed_result(
        model,
        data,
        labels,
        resp,
        "structure_preserving_mds",
        start,
        stages,
        transitions,
        converged=run.converged,
        centroids=y,
        embedding=run.params["embedding"],
        settings={
            "n_dims": n_dims,
            "T0": T0,
            "T_final": T_final,
            "eta": eta,
            "init": init,
            "relax": relax,
        },
    )
    return _in_data_units(result, exponent, exponent // 2)


# ------------------------------------------------------------------------------ the families
def validation_recipe():
    """How :func:`latentzoo.validate` checks pairwise clustering (a ``ValidationRecipe``)."""
    from latentzoo.inference.recipes import pairwise

    return pairwise(greedy, mean_field_residual, pairwise_heat_bath, classical_mds)


def central_validation_recipe():
    """How :func:`latentzoo.validate` checks central clustering (a ``ValidationRecipe``)."""
    from latentzoo.inference.recipes import central

    return central(central_heat_bath, lloyd_restarts)


def _cooling(max_iter: int, tol: float) -> tuple[Option, ...]:
    """The options of a deterministic-annealing schedule, with the method's own budget."""
    return (
        real(
            "T0",
            None,
            "starting temperature (None: above the first critical one)",
            0,
            None,
            True,
            none=True,
        ),  # fmt: skip
        real(
            "T_final",
            None,
            "last temperature (None: well below the last transition)",
            0,
            None,
            True,
            none=True,
        ),  # fmt: skip
        real("eta", 0.9, "cooling factor T <- eta T", 0, 1, True, True),
        integer("max_iter", max_iter, "sweeps at most per temperature"),
        real("tol", tol, "change of the assignments that ends a temperature (0: never)", 0),
        real("perturbation", 1e-3, "noise that lets clusters split at a transition", 0),
    )


def _central_options() -> tuple[Option, ...]:
    """The options of :func:`central_annealing`, whose schedule follows the clusters' critical
    temperatures rather than a fixed cooling rate."""
    return (
        real("T0", None, "starting temperature (None: the first critical one, 2 lambda_max)", 0,
             None, True, none=True),
        real("T_final", None, "lowest temperature (None: 1e-3 T_c)", 0, None, True, none=True),
        real("eta", 0.9, "jump to eta times the next critical temperature", 0, 1, True, True),
        integer("max_iter", 1000, "EM iterations at most per temperature"),
        real("tol", 1e-3, "largest centroid move, in sqrt(lambda_max), that ends a temperature",
             0),
        real("perturbation", 0.5, "half the distance of split twins, in the cluster's sd", 0),
    )  # fmt: skip


# A cost model has no parameter prior and no likelihood: the PyMC density check and the simulate
# round trip do not apply (latentzoo.testing.CHECK_NEEDS). Its PyMC potential is checked to equal
# -(H(z') - H(z)) / T in tests/models/test_pairwise.py, recovery of simulated clusters in
# tests/inference/test_pairwise.py.
_COST_CHECKS = {
    "data:sparse_formats": "a sparse matrix of dissimilarities means the observed pairs"
    " (Dissimilarities.from_sparse, section 6.3), not the dense matrix without its zeros",
    "memory:huge_counts": "the models take dissimilarities or real vectors, not counts; the"
    " memory of large inputs is checked by memory:huge_k",
}
_REAL_VALUED = "the model takes real values: negative and fractional entries are valid data"
# Pairwise and central clustering are shown side by side in one notebook.
_NOTEBOOK = "notebooks/pairwise_clustering.ipynb"
FAMILIES = (
    Family(
        name="pairwise",
        model=PairwiseClustering,
        methods={
            "annealing": Method(
                pairwise_annealing,
                (
                    flag("tap", False, "TAP equations (28)-(29) instead of naive mean field"),
                    real(
                        "tap_damping", 1.0, "weight of the new TAP couplings per sweep", 0, 1, True
                    ),
                    *_cooling(100, 1e-4),
                    flag("quench", True, "finish with a zero-temperature quench"),
                    integer("branches", 1, "branches near T_c; the lowest free energy goes on"),
                    real("branch_below", 0.85, "where the branches start, in T_c", 0, None, True),
                    real(
                        "branch_until",
                        0.7,
                        "where the branches are compared, in T_c",
                        0,
                        None,
                        True,
                    ),  # fmt: skip
                    seed(),
                ),
            ),
            "greedy": Method(
                greedy,
                (
                    integer("n_init", 1, "random starts; the best is kept"),
                    integer("max_sweeps", 1000, "sweeps at most per start"),
                    seed(),
                ),
            ),
            "ward": Method(
                ward,
                (
                    choice(
                        "linkage",
                        "ward",
                        "scipy linkage criterion",
                        ("ward", "average", "complete", "single", "weighted"),
                    ),  # fmt: skip
                ),
            ),
            "mds": Method(
                structure_preserving_mds,
                (
                    integer("n_dims", 2, "dimension of the embedding"),
                    *_cooling(100, 1e-5),
                    choice("init", "classical", "starting embedding", ("classical", "random")),
                    real("relax", 0.3, "step of the embedding update", 0, 1, True),
                    seed(),
                ),
            ),
        },
        recipe=validation_recipe,
        sizes=("n_components",),
        dataset="globins",
        notebook=_NOTEBOOK,
        description="pairwise clustering by deterministic annealing (Hofmann & Buhmann 1997)",
        skipped_checks={
            **_COST_CHECKS,
            "data:fractional": "dissimilarities are real numbers: fractional entries are valid",
        },
    ),
    Family(
        name="central",
        model=CentralClustering,
        # Deterministic (splits along principal axes): no seed, as for Ward.
        methods={"annealing": Method(central_annealing, _central_options())},
        recipe=central_validation_recipe,
        sizes=("n_components",),
        dataset="glass",
        notebook=_NOTEBOOK,
        description="central clustering (K-means) by deterministic annealing (Rose et al.; H&B"
        " 1997)",
        skipped_checks={
            **{key: value for key, value in _COST_CHECKS.items() if key != "data:sparse_formats"},
            "data:negative": _REAL_VALUED,
            "data:fractional": _REAL_VALUED,
        },
    ),
)
"""Pairwise and central clustering's families (listed in :mod:`latentzoo.zoo`)."""
