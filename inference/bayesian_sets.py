"""Fast Bayesian Sets retrieval, skewness binarisation and variational relational Bayesian Sets.

Heller (2007), chapters 4-6:

- :class:`BayesianSetsIndex` / :func:`bayesian_sets`: every item scored at once. For Beta-Bernoulli
  items the log score is linear in ``x`` (4.12), so all ``N`` scores are one sparse matrix-vector
  product ``s = c + X q`` (4.15) with ``q_j = log(a~_j / a_j) - log(b~_j / b_j)`` (4.14, 4.16) and
  ``c`` of (4.13); ``q`` is also the explanation of the ranking (section 4.5, (4.16)-(4.17): a
  feature frequent in the query and rare in the data gets a large weight). Any other conjugate
  component scores ``log p(x | Q) - log p(x)`` (4.1) with its closed-form predictive (the ratio of
  normalisers (4.18)).
- :class:`RetrievalResult`: ``scores``, ``ranking``, ``top(k)`` giving ``(item, score, strongest
  features)``.
- :func:`binarize`: the preprocessing of section 5.2.2 (a feature is on in the tail given by the
  sign of its skewness, beyond a percentile).
- :func:`variational_logistic`: Jaakkola & Jordan's (2000) variational Bayesian logistic
  regression (posterior mean and covariance of the weights and the evidence lower bound);
  :func:`logistic_log_predictive` its one-point predictive bound; :func:`analogical_scores` the
  score (6.2)-(6.3) of relational Bayesian Sets and :func:`relational_bayesian_sets` Algorithm 6.1.

Nothing loops over items or features in Python: the per-query work is array operations, and the
variational iterations are matrix operations over all data points at once.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property

import numpy as np
import scipy.sparse as sp
from scipy.linalg import cho_factor, cho_solve, solve_triangular

from latentzoo.data import Features
from latentzoo.data.checks import check_entries
from latentzoo.inference.family import Family, Method, anything
from latentzoo.models._checks import check_integer, check_interval
from latentzoo.models.base import model_attrs
from latentzoo.models.bayesian_sets import (
    BayesianSets,
    RelationalBayesianSets,
    _check_logistic_inputs,
    _check_positive_definite,
    _pair_features,
    check_query,
)
from latentzoo.models.conjugate import BetaBernoulli

__all__ = [
    "BayesianSetsIndex",
    "RetrievalResult",
    "VariationalLogistic",
    "analogical_scores",
    "bayesian_sets",
    "binarize",
    "logistic_log_predictive",
    "query_weights",
    "relational_bayesian_sets",
    "skewness_thresholds",
    "top_k",
    "variational_logistic",
]

# Numbers per block when a general component densifies rows of a sparse matrix.
_BLOCK = 2**21


# ============================================================================ results
def top_k(scores, k: int) -> np.ndarray:
    """Positions of the ``k`` largest scores, best first (ties by position), in O(N + k log k).

    Examples
    --------
    >>> top_k(np.array([0.5, 2.0, -1.0, 2.0]), 2)
    array([1, 3])
    >>> top_k(np.array([0.5]), 0)
    Traceback (most recent call last):
    ...
    ValueError: k must be an integer >= 1, got 0
    """
    check_integer("k", k)
    scores = np.asarray(scores, dtype=np.float64)
    n = scores.shape[0]
    k = min(int(k), n)
    if k < n:
        # the k-th largest value; every item at least as good is a candidate (keeps ties stable)
        kth = np.partition(scores, n - k)[n - k]
        cand = np.flatnonzero(scores >= kth)
    else:
        cand = np.arange(n)
    order = np.lexsort((cand, -scores[cand]))
    return cand[order][:k]


@dataclass(frozen=True, eq=False)
class RetrievalResult:
    """The scores of one query over all items, with the ranking and its explanation.

    Attributes
    ----------
    scores : numpy.ndarray (N,)
        Natural-log scores (4.12) / (6.2) of every item.
    query : numpy.ndarray
        The query's item positions (for pairs: positions among the candidate pairs, -1 for a query
        pair that is not a candidate).
    item_names, feature_names : numpy.ndarray of str
    weights : numpy.ndarray (D,) or None
        The feature weights behind the score: ``q`` of (4.14) for Beta-Bernoulli items (the log
        score is ``constant + X q``), the shift of the posterior mean of the weights for
        relational Bayesian Sets; None when the score is not linear in the features.
    constant : float or None
        ``c`` of (4.13) when the score is linear.
    features : numpy.ndarray or scipy sparse, optional
        The ``(N, D)`` features the scores were computed from (for :meth:`top`).
    model : BayesianSets, optional
        The model that scored them (saved with the result as attributes).

    Examples
    --------
    >>> X = np.array([[1, 1, 0], [1, 1, 0], [0, 0, 1], [1, 0, 0]])
    >>> result = bayesian_sets(X, [0])
    >>> result.ranking.tolist()
    [0, 1, 3, 2]
    >>> result.top(2)  # the query item itself is left out
    [('1', 0.555, ('1', '0')), ('3', -0.138, ('0',))]
    """

    scores: np.ndarray
    query: np.ndarray
    item_names: np.ndarray
    feature_names: np.ndarray
    weights: np.ndarray | None = None
    constant: float | None = None
    features: object = field(default=None, repr=False)
    model: object = field(default=None, repr=False)

    @cached_property
    def ranking(self) -> np.ndarray:
        """All item positions by decreasing score (ties by position).

        Examples
        --------
        >>> bayesian_sets(np.array([[0, 1], [1, 0], [1, 0]]), [1]).ranking.tolist()
        [1, 2, 0]
        """
        return np.lexsort((np.arange(self.scores.size), -self.scores))

    def strongest_features(self, item: int, n_features: int = 3) -> tuple[str, ...]:
        """Names of the features that raise ``item``'s score most: the largest ``x_j q_j > 0``.

        Empty when the score has no feature weights (a non-linear component).

        Examples
        --------
        >>> bayesian_sets(np.array([[1, 0], [1, 1]]), [0]).strongest_features(1)
        ('0',)
        """
        if self.weights is None or self.features is None:
            return ()
        row = self.features[int(item)]
        if sp.issparse(row):
            row = sp.csr_matrix(row)
            cols, values = row.indices, row.data
        else:
            values = np.asarray(row, dtype=np.float64).ravel()
            cols = np.flatnonzero(values)
            values = values[cols]
        # only the item's non-zero features contribute x_j q_j
        contrib = values * self.weights[cols]
        if contrib.size == 0:
            return ()
        best = top_k(contrib, min(int(n_features), contrib.size))
        best = best[contrib[best] > 0]
        return tuple(str(self.feature_names[cols[j]]) for j in best)

    def top(self, k: int = 10, exclude_query: bool = True, n_features: int = 3) -> list:
        """The ``k`` best items as ``(name, score, strongest features)``, best first.

        Parameters
        ----------
        k : int
        exclude_query : bool
            Leave the query's own items out (they usually rank first).
        n_features : int
            At most this many features per item (:meth:`strongest_features`).

        Returns
        -------
        list of (str, float, tuple of str)
            Scores rounded to 3 decimals for display.

        Examples
        --------
        >>> X = Features([[1, 1, 0], [1, 1, 0], [0, 0, 1]], item_names=["ant", "bee", "cat"],
        ...              feature_names=["small", "legs6", "fur"])
        >>> bayesian_sets(X, ["ant"]).top(1)
        [('bee', 0.547, ('small', 'legs6'))]
        """
        check_integer("k", k)
        check_integer("n_features", n_features)
        scores = self.scores
        if exclude_query and self.query.size:
            scores = scores.copy()
            q = self.query[self.query >= 0]
            scores[q] = -np.inf
        best = top_k(scores, k)
        if exclude_query:
            best = best[np.isfinite(scores[best])]
        return [
            (
                str(self.item_names[i]),
                round(float(self.scores[i]), 3),
                self.strongest_features(i, n_features),
            )
            for i in best.tolist()
        ]

    # ------------------------------------------------ what the face asks of a fit
    def summary_lines(self, k: int = 5) -> list[str]:
        """What ``latentzoo fit`` prints: the query and the ``k`` best other items.

        Examples
        --------
        >>> bayesian_sets(np.array([[1, 1, 0], [1, 1, 0], [0, 0, 1]]), [0]).summary_lines(1)
        ['query: 0', 'best: 1 (0.547)']
        """
        query = ", ".join(str(self.item_names[i]) for i in self.query[self.query >= 0])
        best = ", ".join(f"{name} ({score:.3f})" for name, score, _ in self.top(k, n_features=1))
        return [f"query: {query}", f"best: {best}"]

    def point_estimate(self) -> dict:
        """The scores, as saved in the ``point_estimate`` group."""
        return {"score": self.scores}

    def arrays(self) -> dict:
        """Every array of the result keyed ``"result.<name>"``."""
        out = {"result.score": self.scores, "result.query": self.query}
        if self.weights is not None:
            out["result.weight"] = np.asarray(self.weights)
        return out

    def objective(self, data) -> tuple[str, float]:
        """``("largest log score", value)``: the best item's score."""
        return "largest log score", float(np.max(self.scores, initial=-np.inf))

    def to_inference_data(self, data=None):
        """The scores as the ``InferenceData`` of a point estimate (``point_estimate``: ``score``
        per item and, for a linear score, ``weight`` per feature; no ``posterior``), the query's
        items in the attributes.

        Examples
        --------
        >>> idata = bayesian_sets(np.array([[1, 0], [1, 1]]), [0]).to_inference_data()
        >>> idata.point_estimate["score"].dims, idata.point_estimate.attrs["query_items"]
        (('item',), '0')
        >>> idata.point_estimate.attrs["model"], idata.point_estimate.attrs["model_scale"]
        ('BayesianSets', 2.0)
        """
        import xarray as xr

        from latentzoo.inference.results import point_estimate_inference_data

        variables = {"score": (("item",), self.scores)}
        coords = {"item": np.asarray(self.item_names).astype(str)}
        if self.weights is not None:
            variables["weight"] = (("feature",), np.asarray(self.weights))
            coords["feature"] = np.asarray(self.feature_names).astype(str)
        query = [str(self.item_names[i]) for i in self.query[self.query >= 0]]
        attrs = {
            **(model_attrs(self.model) if self.model is not None else {}),
            "method": "bayesian_sets",
            # A numeric array; a one-item query reads back as a scalar (np.atleast_1d it).
            "query": np.asarray(self.query, dtype=np.int64),
            "query_items": ", ".join(query),  # netCDF keeps one text, not an array of texts
        }
        if self.model is not None and self.model.component is None:
            attrs["model_component"] = "None (the empirical Beta-Bernoulli prior of section 4.3)"
        if self.constant is not None:
            attrs["constant"] = float(self.constant)
        return point_estimate_inference_data(xr.Dataset(variables, coords=coords), attrs)

    def save(self, path, data=None, format: str | None = None) -> None:
        """Write the result to ``path``: ``.npz`` (:meth:`arrays`, the item and feature names
        and the score's constant; read with ``allow_pickle=False``) or netCDF
        (:meth:`to_inference_data`) for any other suffix. :meth:`load` reads either back.

        Parameters
        ----------
        path : str or Path
        data : Features, optional
            Unused: the result holds its names (kept for the signature every result shares).
        format : {"npz", "netcdf"}, optional
            Default: from the suffix of ``path``.

        Examples
        --------
        >>> import tempfile, pathlib
        >>> path = pathlib.Path(tempfile.mkdtemp()) / "ranking.npz"
        >>> bayesian_sets(np.array([[1, 0], [1, 1]]), [0]).save(path)
        >>> with np.load(path, allow_pickle=False) as saved:
        ...     saved["result.score"].round(3).tolist(), saved["item_names"].tolist()
        ([0.352, -0.341], ['0', '1'])
        """
        if format not in (None, "npz", "netcdf"):
            raise ValueError(f"format must be 'npz', 'netcdf' or None, got {format!r}")
        if (format or ("npz" if str(path).endswith(".npz") else "netcdf")) == "npz":
            extra = {
                "item_names": np.asarray(self.item_names).astype(str),
                "feature_names": np.asarray(self.feature_names).astype(str),
            }
            if self.constant is not None:
                extra["constant"] = np.float64(self.constant)
            with open(path, "wb") as handle:  # np.savez adds ".npz" to a path without it
                np.savez(handle, **self.arrays(), **extra)
            return
        self.to_inference_data(data).to_netcdf(str(path))

    @classmethod
    def load(cls, path) -> RetrievalResult:
        """The result :meth:`save` wrote to ``path`` (``.npz``, else netCDF).

        The scores, query, names, feature weights and constant come back; the model too from a
        netCDF file (its attributes), not from an ``.npz``; the features are not saved, so
        :meth:`top` of a loaded result lists no strongest features.

        Examples
        --------
        >>> import tempfile, pathlib
        >>> result = bayesian_sets(np.array([[1, 0], [1, 1], [0, 1]]), [0, 1])
        >>> for name in ("ranking.npz", "ranking.nc"):
        ...     path = pathlib.Path(tempfile.mkdtemp()) / name
        ...     result.save(path)
        ...     back = RetrievalResult.load(path)
        ...     print(back.ranking.tolist(), back.query.tolist(), back.top(1))
        [0, 1, 2] [0, 1] [('2', -0.799, ())]
        [0, 1, 2] [0, 1] [('2', -0.799, ())]
        """
        if str(path).endswith(".npz"):
            with np.load(path, allow_pickle=False) as saved:
                return cls(
                    scores=saved["result.score"],
                    query=np.atleast_1d(saved["result.query"]).astype(np.int64),
                    item_names=saved["item_names"],
                    feature_names=saved["feature_names"],
                    weights=saved["result.weight"] if "result.weight" in saved else None,
                    constant=float(saved["constant"]) if "constant" in saved else None,
                )
        import arviz as az

        from latentzoo.inference.results import model_from_attrs

        idata = az.from_netcdf(str(path))
        # The point-estimate group, or the one-draw posterior of files written before it
        group = idata["point_estimate"] if "point_estimate" in idata.groups() else idata.posterior
        attrs = dict(group.attrs)
        if str(attrs.get("model_component", "")).startswith("None"):
            del attrs["model_component"]  # the empirical prior: the model's default
        has_weights = "weight" in group
        return cls(
            scores=group["score"].to_numpy().reshape(-1),
            # netCDF gives a one-item query back as a scalar
            query=np.atleast_1d(np.asarray(attrs["query"])).astype(np.int64),
            item_names=group["item"].to_numpy(),
            feature_names=group["feature"].to_numpy() if has_weights else np.array([]),
            weights=group["weight"].to_numpy().reshape(-1) if has_weights else None,
            constant=float(attrs["constant"]) if "constant" in attrs else None,
            model=model_from_attrs(attrs) if "model" in attrs else None,
        )

    def figure(self, data=None):
        """None: ``latentzoo fit`` saves no picture of a ranking."""
        return None


# ============================================================================ Bayesian Sets
def query_weights(component: BetaBernoulli, n_features: int, query_sums, n_query: int):
    """``(c, q)`` of (4.13)-(4.14) for a Beta-Bernoulli prior and a query's column sums.

    ``a~_j = a_j + sum_i x_ij``, ``b~_j = b_j + N - sum_i x_ij`` and

    - ``q_j = log a~_j - log a_j - log b~_j + log b_j`` (4.14), i.e.
      ``log(1 + sum_i x_ij / a_j) - log(1 + (N - sum_i x_ij) / b_j)`` (4.16);
    - ``c = sum_j log(a_j + b_j) - log(a_j + b_j + N) + log b~_j - log b_j`` (4.13).

    Parameters
    ----------
    component : BetaBernoulli
    n_features : int
    query_sums : array-like (D,)
        ``sum_{i in Q} x_ij``.
    n_query : int
        ``N``, the number of query items.

    Returns
    -------
    c : float
    q : numpy.ndarray (D,)

    Examples
    --------
    >>> c, q = query_weights(BetaBernoulli(1.0, 1.0), 2, [1, 0], 1)
    >>> round(c, 4), q.round(4).tolist()  # c = 2 log(2/3) + log 2, q = (log 2, -log 2)
    (-0.1178, [0.6931, -0.6931])
    """
    h = component.hyperparameters(int(n_features))
    a, b = h["a"], h["b"]
    m = np.asarray(query_sums, dtype=np.float64)
    log_b = np.log(b)
    log_b_post = np.log(b + n_query - m)
    q = np.log1p(m / a) - (log_b_post - log_b)
    c = float(np.sum(np.log(a + b) - np.log(a + b + n_query) + log_b_post - log_b))
    return c, q


class BayesianSetsIndex:
    """A data set prepared for many Bayesian Sets queries (validated and priced once).

    Construction checks the data against the model and fixes the prior (the empirical
    Beta-Bernoulli of section 4.3 by default); each :meth:`query` then costs, for Beta-Bernoulli
    items, the query's column sums, ``O(D)`` logarithms and one sparse matrix-vector product
    (4.15) over the CSR matrix.

    Parameters
    ----------
    data : Features, array-like (N, D) or scipy sparse
    model : BayesianSets, optional
        Defaults to ``BayesianSets()`` (empirical Beta-Bernoulli prior, ``scale=2``).

    Examples
    --------
    >>> import scipy.sparse as sp
    >>> index = BayesianSetsIndex(sp.csr_matrix(np.array([[1, 1, 0], [1, 1, 0], [0, 0, 1]])))
    >>> index.query([0]).ranking.tolist()
    [0, 1, 2]
    """

    def __init__(self, data, model: BayesianSets | None = None):
        if model is None:
            model = BayesianSets()
        if not isinstance(model, BayesianSets):
            raise ValueError(f"model must be a BayesianSets, got {model!r}")
        self.model = model
        self.data = model.check_data(data)
        self.component = model.prior(self.data)
        if self.data.is_sparse:
            self._X = self.data.sparse
        else:
            self._X = np.ascontiguousarray(self.data.X)
        self.linear = self.component.linear_log_score
        if self.linear:
            h = self.component.hyperparameters(self.data.n_features)
            self._hyper = (h["a"], h["b"], float(np.sum(np.log(h["a"] + h["b"]))))
            self._bases = {}

    @property
    def n_items(self) -> int:
        """Number of items ``N``.

        Examples
        --------
        >>> BayesianSetsIndex(np.eye(3)).n_items
        3
        """
        return self.data.n_items

    def _query_rows(self, q):
        rows = self._X[q]
        return rows.toarray() if sp.issparse(rows) else np.asarray(rows)

    def weights(self, query) -> tuple[float, np.ndarray]:
        """``(c, q)`` of (4.13)-(4.14) for ``query`` (Beta-Bernoulli models only).

        Examples
        --------
        >>> index = BayesianSetsIndex(np.array([[1, 0], [0, 1], [0, 1]]))
        >>> c, q = index.weights([0])
        >>> bool(q[0] > 0 > q[1])  # the query's feature up, the other down
        True
        """
        if not self.linear:
            raise ValueError(
                "weights (c, q) exist only for the Beta-Bernoulli model, whose log score is"
                f" linear in x (4.12); this index uses {type(self.component).__name__}"
            )
        q = check_query(query, self.n_items, self.data.item_names)
        cols, sums = self._query_sums(q)
        a, b, _ = self._hyper
        n = q.size
        base_q, base_c, base_shift = self._base(n)
        # Section 4.4: a feature absent from the query has the query-independent weight
        # -log(1 + N / b_j), cached per query size, so only the query's own features are priced.
        shift = np.log1p((n - sums) / b[cols])
        weights = base_q.copy()
        weights[cols] = np.log1p(sums / a[cols]) - shift
        c = base_c + float(np.sum(shift - base_shift[cols]))
        return c, weights

    def _query_sums(self, q):
        """The query's non-zero columns and their sums ``sum_{i in Q} x_ij``."""
        rows = self._X[q]
        if sp.issparse(rows):
            rows = sp.csr_matrix(rows)
            cols, inverse = np.unique(rows.indices, return_inverse=True)
            return cols, np.bincount(inverse, weights=rows.data, minlength=cols.size)
        sums = np.asarray(rows, dtype=np.float64).sum(axis=0)
        cols = np.flatnonzero(sums)
        return cols, sums[cols]

    def _base(self, n):
        """``(q, c, shift)`` of a query of ``n`` items with no feature on: (4.14), (4.13)."""
        if n not in self._bases:
            a, b, log_ab = self._hyper
            shift = np.log1p(n / b)
            c = log_ab - float(np.sum(np.log(a + b + n))) + float(np.sum(shift))
            self._bases[n] = (-shift, c, shift)
        return self._bases[n]

    def log_scores(self, query) -> np.ndarray:
        """``(N,)`` log scores of every item for ``query``: (4.15) or the predictive ratio (4.1).

        Examples
        --------
        >>> BayesianSetsIndex(np.array([[1, 0], [0, 1]])).log_scores([0]).round(3)
        array([ 0.575, -0.811])
        """
        if self.linear:
            c, weights = self.weights(query)
            return c + self._X @ weights
        return self._general(check_query(query, self.n_items, self.data.item_names))

    def _general(self, q) -> np.ndarray:
        comp = self.component
        D = self.data.n_features
        xq = self._query_rows(q).astype(np.float64)
        stats_q = comp.stats(xq, np.zeros(q.size, dtype=np.intp), 1)
        stats = np.vstack([stats_q, comp.empty_stats(1, D)])
        out = np.empty(self.n_items)
        step = max(1, _BLOCK // max(1, 2 * D))
        for start in range(0, self.n_items, step):  # row blocks bound the densified copies
            rows = slice(start, min(start + step, self.n_items))
            block = self._X[rows]
            block = block.toarray() if sp.issparse(block) else block
            lp = comp.log_predictive(stats, block)
            out[rows] = lp[:, 0] - lp[:, 1]
        return out

    def query(self, query) -> RetrievalResult:
        """Score every item for ``query`` and return a :class:`RetrievalResult`.

        Parameters
        ----------
        query : sequence of int or str
            Item positions or item names.

        Examples
        --------
        >>> index = BayesianSetsIndex(Features([[1, 0], [1, 0], [0, 1]], item_names=list("abc")))
        >>> [name for name, _, _ in index.query(["a"]).top(2)]
        ['b', 'c']
        """
        q = check_query(query, self.n_items, self.data.item_names)
        if self.linear:
            c, weights = self.weights(q)
            scores = c + self._X @ weights
        else:
            c, weights = None, None
            scores = self._general(q)
        return RetrievalResult(
            scores=np.asarray(scores, dtype=np.float64),
            query=q,
            item_names=self.data.item_names,
            feature_names=self.data.feature_names,
            weights=weights,
            constant=c,
            features=self._X,
            model=self.model,
        )


def bayesian_sets(data, query, model: BayesianSets | None = None) -> RetrievalResult:
    """Bayesian Sets (Algorithm 4.1): score every item of ``data`` for ``query``.

    Shorthand for ``BayesianSetsIndex(data, model).query(query)``; build the index once when
    running many queries on the same data.

    Parameters
    ----------
    data : Features, array-like (N, D) or scipy sparse
    query : sequence of int or str
    model : BayesianSets, optional

    Returns
    -------
    RetrievalResult

    Examples
    --------
    >>> result = bayesian_sets(np.array([[1, 1, 0], [1, 1, 0], [0, 0, 1]]), [0])
    >>> result.weights.round(3)
    array([ 0.588,  0.588, -0.588])
    """
    return BayesianSetsIndex(data, model).query(query)


# ============================================================================ binarisation
def skewness_thresholds(X, percentile: float = 80.0) -> tuple[np.ndarray, np.ndarray]:
    """Per-feature thresholds and tails of the binarisation of section 5.2.2.

    A feature with skewness ``>= 0`` is on above its ``percentile``-th percentile (the upper tail);
    a negatively skewed one below its ``(100 - percentile)``-th percentile (the lower tail). A
    feature of zero skewness (e.g. a constant) is treated as positively skewed.

    Parameters
    ----------
    X : array-like (N, D), real
    percentile : float
        In (50, 100); the thesis uses 80.

    Returns
    -------
    thresholds : numpy.ndarray (D,)
    upper : numpy.ndarray of bool (D,)
        True where the feature is on above its threshold, False where below.

    Examples
    --------
    >>> X = np.array([[0.0, 10.0], [0.0, 10.0], [0.0, 9.0], [5.0, 0.0]])
    >>> t, upper = skewness_thresholds(X)
    >>> t.round(2).tolist(), upper.tolist()
    ([2.0, 5.4], [True, False])
    """
    percentile = check_interval("percentile", percentile, 50.0, 100.0)
    X = _real_matrix(X)
    mean = X.mean(axis=0)
    centred = X - mean
    m2 = np.mean(centred**2, axis=0)
    m3 = np.mean(centred**3, axis=0)
    with np.errstate(invalid="ignore", divide="ignore"):
        skew = np.where(m2 > 0, m3 / np.where(m2 > 0, m2, 1.0) ** 1.5, 0.0)
    upper = skew >= 0
    high = np.percentile(X, percentile, axis=0)
    low = np.percentile(X, 100.0 - percentile, axis=0)
    return np.where(upper, high, low), upper


def binarize(X, percentile: float = 80.0, thresholds=None):
    """Binarise real features by skewness and percentiles (Heller 2007, section 5.2.2).

    Feature ``j`` of item ``i`` is 1 when ``x_ij`` lies beyond the feature's threshold in the tail
    given by the sign of its skewness (above the 80th percentile for a positively skewed feature,
    below the 20th for a negatively skewed one), else 0 (:func:`skewness_thresholds`). The result
    is sparse: about ``1 - percentile / 100`` of each feature is on.

    Parameters
    ----------
    X : Features, array-like (N, D) or scipy sparse (densified)
    percentile : float
    thresholds : tuple (thresholds, upper), optional
        Precomputed by :func:`skewness_thresholds` on a reference set (e.g. to binarise new items
        as the collection was); ``percentile`` is then unused.

    Returns
    -------
    scipy.sparse.csr_matrix of float64, or Features (with the same names and labels) if ``X``
    is a Features container

    Examples
    --------
    >>> X = np.array([[0.0, 10.0], [0.0, 10.0], [0.0, 9.0], [5.0, 0.0], [0.1, 9.5]])
    >>> binarize(X).toarray()
    array([[0., 0.],
           [0., 0.],
           [0., 0.],
           [1., 1.],
           [0., 0.]])
    """
    dense = _real_matrix(Features.matrix_of(X))
    if thresholds is None:
        t, upper = skewness_thresholds(dense, percentile)
    else:
        t, upper = (np.asarray(v) for v in thresholds)
        if t.shape != (dense.shape[1],) or upper.shape != (dense.shape[1],):
            raise ValueError(
                f"thresholds must be two arrays of shape ({dense.shape[1]},) (one entry per"
                f" feature), got {t.shape} and {upper.shape}"
            )
        upper = upper.astype(bool)
    on = np.where(upper, dense > t, dense < t)
    out = sp.csr_matrix(on, dtype=np.float64)
    return Features.like(X, out, kind="binary")


def _real_matrix(X) -> np.ndarray:
    if sp.issparse(X):
        X = X.toarray()
    try:
        X = np.asarray(X, dtype=np.float64)
    except (TypeError, ValueError):
        raise ValueError("X must be a 2-D numeric array (items x features)") from None
    if X.ndim != 2 or 0 in X.shape:
        raise ValueError(f"X must be a non-empty 2-D array (items x features), got {X.shape}")
    check_entries(X, "X")
    return X


# ============================================================================ Jaakkola-Jordan
def _lambda(xi):
    """``lambda(xi) = tanh(xi / 2) / (4 xi)`` (``1/8`` at 0), Jaakkola & Jordan (2000)."""
    xi = np.abs(xi)
    small = xi < 1e-6
    safe = np.where(small, 1.0, xi)
    return np.where(small, 0.125 - xi**2 / 96.0, np.tanh(0.5 * safe) / (4.0 * safe))


def _log_sigmoid(x):
    return -np.logaddexp(0.0, -x)


@dataclass(frozen=True)
class VariationalLogistic:
    """Result of :func:`variational_logistic`: the Gaussian posterior and the evidence bound.

    Attributes
    ----------
    mean : numpy.ndarray (K,)
    cov : numpy.ndarray (K, K)
    precision : numpy.ndarray (K, K)
    elbo : float
        The Jaakkola-Jordan lower bound on ``log p(y | X)`` at the final ``xi``.
    xi : numpy.ndarray (P,)
        The variational parameters, one per data point.
    elbo_trace : numpy.ndarray
        The bound after every iteration (non-decreasing: the updates are an EM algorithm).
    n_iter : int
    converged : bool

    Examples
    --------
    >>> fit = variational_logistic(np.ones((4, 1)), None, [0.0], [[1.0]])
    >>> fit.mean.shape, fit.cov.shape, bool(fit.elbo < 0)
    ((1,), (1, 1), True)
    """

    mean: np.ndarray
    cov: np.ndarray
    precision: np.ndarray
    elbo: float
    xi: np.ndarray
    elbo_trace: np.ndarray
    n_iter: int
    converged: bool


def _prior_precision(prior_cov, prior_precision, K):
    if (prior_cov is None) == (prior_precision is None):
        raise ValueError("give exactly one of prior_cov and prior_precision")
    if prior_cov is not None:
        return None
    return _check_positive_definite("prior_precision", prior_precision, K)


def variational_logistic(
    X,
    y=None,
    prior_mean=None,
    prior_cov=None,
    *,
    prior_precision=None,
    max_iter: int = 500,
    tol: float = 1e-10,
) -> VariationalLogistic:
    """Variational Bayesian logistic regression (Jaakkola & Jordan 2000), the fast side of (6.3).

    Each likelihood term is bounded below by the local variational bound
    ``sigma(a) >= sigma(xi) exp((a - xi) / 2 - lambda(xi) (a^2 - xi^2))`` with
    ``lambda(xi) = tanh(xi / 2) / (4 xi)``, which makes the posterior Gaussian:

    - ``V^{-1} = V_0^{-1} + 2 sum_i lambda(xi_i) x_i x_i^T``,
      ``m = V (V_0^{-1} m_0 + sum_i (y_i - 1/2) x_i)``;
    - ``xi_i^2 = x_i^T (V + m m^T) x_i`` (the optimum of the bound);
    - ``log p(y) >= sum_i [log sigma(xi_i) - xi_i / 2 + lambda(xi_i) xi_i^2]
      + m^T V^{-1} m / 2 - m_0^T V_0^{-1} m_0 / 2 + log(|V| / |V_0|) / 2``.

    The two updates alternate (an EM algorithm, so the bound never decreases) until the bound
    changes by less than ``tol`` (relative). Every step is matrix operations over all points.

    Parameters
    ----------
    X : array-like (P, K)
    y : array-like of 0/1 (P,), optional
        All ones by default (the query pairs of (6.3) are linked).
    prior_mean : array-like (K,)
    prior_cov : array-like (K, K), optional
    prior_precision : array-like (K, K), optional
        Exactly one of ``prior_cov`` and ``prior_precision``.
    max_iter : int
    tol : float

    Returns
    -------
    VariationalLogistic

    Examples
    --------
    >>> X = np.array([[1.0, 2.0], [1.0, -1.0], [1.0, 0.5]])
    >>> fit = variational_logistic(X, [1, 0, 1], np.zeros(2), np.eye(2))
    >>> fit.mean.round(3), fit.converged
    (array([0.181, 0.871]), True)
    >>> bool(np.all(np.diff(fit.elbo_trace) >= -1e-12))
    True
    """
    check_integer("max_iter", max_iter)
    check_interval("tol", tol, 0.0, np.inf, closed="left")
    if prior_mean is None:
        raise ValueError("prior_mean is required (the Gaussian prior's mean, shape (K,))")
    X, y, m0, cov0 = _check_logistic_inputs(X, y, prior_mean, prior_cov)
    P0 = _prior_precision(prior_cov, prior_precision, X.shape[1])
    if P0 is None:
        P0 = np.linalg.inv(cov0)
        P0 = 0.5 * (P0 + P0.T)
    chol0 = np.linalg.cholesky(P0)
    logdet_p0 = 2.0 * np.sum(np.log(np.diag(chol0)))
    b = P0 @ m0 + X.T @ (y - 0.5)
    quad0 = float(m0 @ P0 @ m0)

    def gaussian(xi):
        # the Gaussian posterior that the bound at xi gives, and the bound itself
        lam = _lambda(xi)
        P = P0 + 2.0 * (X * lam[:, None]).T @ X
        factor = cho_factor(P, lower=True)
        m = cho_solve(factor, b)
        logdet_p = 2.0 * np.sum(np.log(np.diag(factor[0])))
        elbo = float(
            np.sum(_log_sigmoid(xi) - 0.5 * xi + lam * xi**2)
            + 0.5 * m @ P @ m
            - 0.5 * quad0
            + 0.5 * (logdet_p0 - logdet_p)
        )
        return P, factor, m, elbo

    # start from the prior: xi_i^2 = x_i^T (V_0 + m_0 m_0^T) x_i
    W0 = solve_triangular(chol0, X.T, lower=True)
    xi = np.sqrt(np.sum(W0 * W0, axis=0) + (X @ m0) ** 2)
    P, factor, m, elbo = gaussian(xi)
    trace = [elbo]
    converged = False
    n_iter = 0
    while n_iter < max_iter:
        n_iter += 1
        # xi_i^2 = x_i^T V x_i + (x_i^T m)^2, with V x_i by one triangular solve for all points
        W = solve_triangular(factor[0], X.T, lower=True)
        xi = np.sqrt(np.sum(W * W, axis=0) + (X @ m) ** 2)
        P, factor, m, elbo = gaussian(xi)
        trace.append(elbo)
        if abs(trace[-1] - trace[-2]) <= tol * max(1.0, abs(trace[-1])):
            converged = True
            break
    cov = cho_solve(factor, np.eye(P.shape[0]))
    return VariationalLogistic(
        mean=m,
        cov=0.5 * (cov + cov.T),
        precision=P,
        elbo=elbo,
        xi=xi,
        elbo_trace=np.asarray(trace),
        n_iter=n_iter,
        converged=converged,
    )


def logistic_log_predictive(
    X, mean, cov, method: str = "jj", n_iter: int = 50, n_nodes: int = 64
) -> np.ndarray:
    """``log p(C = 1 | x) = log int sigma(theta^T x) N(theta | mean, cov) dtheta`` for every row.

    Only ``a = theta^T x ~ N(mu, s)`` with ``mu = x^T mean`` and ``s = x^T cov x`` matters.

    - ``method="jj"`` (default): Jaakkola & Jordan's (2000) bound for one more observation,
      ``log sigma(xi) - xi/2 + lambda xi^2 + [mu + s/4 - 2 lambda (mu + s/2)^2 / (1 + 2 lambda s)]
      / 2 - log(1 + 2 lambda s) / 2`` with ``lambda = lambda(xi)``, maximised over ``xi`` by the
      fixed point ``xi^2 = s' + mu'^2``, ``s' = s / (1 + 2 lambda s)``,
      ``mu' = (mu + s/2) / (1 + 2 lambda s)`` (the posterior after adding the point); a lower
      bound, iterated for all rows at once.
    - ``method="quadrature"``: Gauss-Hermite quadrature in ``a`` with ``n_nodes`` nodes (exact to
      quadrature error; the reference the bound is tested against).

    Parameters
    ----------
    X : array-like (P, K)
    mean : array-like (K,)
    cov : array-like (K, K)
    method : {"jj", "quadrature"}
    n_iter, n_nodes : int

    Returns
    -------
    numpy.ndarray (P,)

    Examples
    --------
    >>> X = np.array([[1.0, 0.0], [0.0, 2.0]])
    >>> jj = logistic_log_predictive(X, np.zeros(2), np.eye(2))
    >>> exact = logistic_log_predictive(X, np.zeros(2), np.eye(2), method="quadrature")
    >>> exact.round(4).tolist(), bool(np.all(jj <= exact + 1e-12))
    ([-0.6931, -0.6931], True)
    """
    if method not in ("jj", "quadrature"):
        raise ValueError(f"method must be 'jj' or 'quadrature', got {method!r}")
    check_integer("n_iter", n_iter)
    check_integer("n_nodes", n_nodes)
    X, _, mean, cov = _check_logistic_inputs(X, None, mean, cov)
    mu = X @ mean
    s = np.maximum(np.einsum("pk,kl,pl->p", X, cov, X), 0.0)
    if method == "quadrature":
        nodes, w = np.polynomial.hermite_e.hermegauss(int(n_nodes))
        a = mu[:, None] + np.sqrt(s)[:, None] * nodes[None, :]
        logw = np.log(w / np.sqrt(2.0 * np.pi))
        return np.logaddexp.reduce(_log_sigmoid(a) + logw[None, :], axis=1)
    return _jj_predictive(mu, s, n_iter)


def _jj_predictive(mu, s, n_iter):
    """The one-point Jaakkola-Jordan bound of :func:`logistic_log_predictive`, vectorised."""
    xi = np.sqrt(s + mu**2)
    for _ in range(int(n_iter)):  # fixed-point iterations, all rows at once
        lam = _lambda(xi)
        g = 1.0 + 2.0 * lam * s
        xi = np.sqrt(s / g + ((mu + 0.5 * s) / g) ** 2)
    lam = _lambda(xi)
    g = 1.0 + 2.0 * lam * s
    return (
        _log_sigmoid(xi)
        - 0.5 * xi
        + lam * xi**2
        + 0.5 * (mu + 0.25 * s - 2.0 * lam * (mu + 0.5 * s) ** 2 / g)
        - 0.5 * np.log(g)
    )


def analogical_scores(
    candidates, query_features, prior_mean, prior_cov, method: str = "jj"
) -> tuple[np.ndarray, VariationalLogistic]:
    """The relational Bayesian Sets score (6.2) of candidate pairs given query pairs.

    ``log p(C=1 | X, S, C^S = 1) - log p(C=1 | X)``: the numerator integrates the logistic
    likelihood (6.1) over the posterior of the weights given the linked query pairs (6.3), here
    the Jaakkola-Jordan Gaussian of :func:`variational_logistic`; the denominator over the prior.
    Both integrals use :func:`logistic_log_predictive` (``method``).

    Parameters
    ----------
    candidates : array-like (P, K)
        Pair features of the pairs to score.
    query_features : array-like (N, K)
        Pair features of the query set ``S`` (all linked).
    prior_mean : array-like (K,)
    prior_cov : array-like (K, K)
    method : {"jj", "quadrature"}

    Returns
    -------
    scores : numpy.ndarray (P,)
    posterior : VariationalLogistic

    Examples
    --------
    >>> S = np.array([[1.0, 1.0], [1.0, 0.8]])
    >>> C = np.array([[1.0, 1.0], [1.0, -2.0]])
    >>> scores, _ = analogical_scores(C, S, np.zeros(2), np.eye(2))
    >>> bool(scores[0] > 0 > scores[1])
    True
    """
    posterior = variational_logistic(query_features, None, prior_mean, prior_cov)
    after = logistic_log_predictive(candidates, posterior.mean, posterior.cov, method=method)
    before = logistic_log_predictive(candidates, prior_mean, prior_cov, method=method)
    return after - before, posterior


def relational_bayesian_sets(
    A,
    B,
    links,
    query,
    model: RelationalBayesianSets | None = None,
    random_state=None,
    a_names=None,
    b_names=None,
    feature_names=None,
    method: str = "jj",
) -> RetrievalResult:
    """Analogical retrieval (Algorithm 6.1): score every linked pair against the query pairs.

    The prior is :meth:`~latentzoo.models.bayesian_sets.RelationalBayesianSets.empirical_prior`
    (section 6.3), the pair features those of section 6.4, the score (6.2) by
    :func:`analogical_scores`. The result's items are the linked pairs in row-major order, named
    ``"a:b"``; its ``weights`` are the shift of the posterior mean of ``Theta`` from the prior
    mean, which to first order is how each pair feature moves the score.

    Parameters
    ----------
    A, B : array-like (N_A, V), (N_B, V)
    links : array-like or scipy sparse (N_A, N_B) of 0/1
    query : array-like of int (N, 2)
        Linked pairs ``(i, j)`` sharing the relation of interest.
    model : RelationalBayesianSets, optional
    random_state : int or numpy Generator, optional
        Draws the unlinked pairs of the prior's fit.
    a_names, b_names : sequences of str, optional
    feature_names : sequence of str, optional
        Names of the ``V`` object features.
    method : {"jj", "quadrature"}

    Returns
    -------
    RetrievalResult

    Examples
    --------
    >>> rng = np.random.default_rng(1)
    >>> A = rng.integers(0, 2, size=(8, 3)).astype(float)
    >>> links = np.zeros((8, 8)); links[np.arange(8), (np.arange(8) + 1) % 8] = 1
    >>> result = relational_bayesian_sets(A, A, links, [[0, 1], [1, 2]], random_state=0)
    >>> result.scores.shape, str(result.item_names[0])
    ((8,), '0:1')
    """
    if model is None:
        model = RelationalBayesianSets()
    if not isinstance(model, RelationalBayesianSets):
        raise ValueError(f"model must be a RelationalBayesianSets, got {model!r}")
    A, B, links = model.check_data(A, B, links)
    pairs = model.check_query(query, links)
    mean, precision = model.empirical_prior(A, B, links, random_state)
    cov = np.linalg.inv(precision)
    cov = 0.5 * (cov + cov.T)
    candidates = model.linked_pairs(links)
    X = _pair_features(A, B, candidates)
    scores, posterior = analogical_scores(X, _pair_features(A, B, pairs), mean, cov, method=method)
    V = A.shape[1]
    a_names = _names(a_names, A.shape[0], "a_names")
    b_names = _names(b_names, B.shape[0], "b_names")
    fnames = _names(feature_names, V, "feature_names")
    names = np.char.add(np.char.add(a_names[candidates[:, 0]], ":"), b_names[candidates[:, 1]])
    all_features = np.concatenate(
        [
            np.char.add("A.", fnames),
            np.char.add("B.", fnames),
            np.char.add("Z.", fnames),
            np.array(["intercept"]),
        ]
    )
    key = candidates[:, 0] * links.shape[1] + candidates[:, 1]
    pos = np.searchsorted(key, pairs[:, 0] * links.shape[1] + pairs[:, 1])
    return RetrievalResult(
        scores=scores,
        query=pos,
        item_names=names,
        feature_names=all_features,
        weights=posterior.mean - mean,
        constant=None,
        features=X,
    )


def _names(names, n, what):
    if names is None:
        return np.arange(n).astype(str)
    arr = np.asarray(names).astype(str)
    if arr.shape != (n,):
        raise ValueError(f"{what} must have {n} entries, got shape {arr.shape}")
    return arr


# ------------------------------------------------------------------------------ the family
def retrieve(model: BayesianSets, data, query=None) -> RetrievalResult:
    """The family's method: :func:`bayesian_sets` with the model first, as every method takes it.

    Examples
    --------
    >>> X = np.array([[1, 1, 0], [1, 1, 0], [0, 0, 1]])
    >>> retrieve(BayesianSets(), X, query=[0]).weights.round(3)
    array([ 0.588,  0.588, -0.588])
    """
    if query is None:
        raise ValueError(
            "query must name at least one item of the data (indices or names): "
            "latentzoo fit takes it as --option query=a,b; or use latentzoo query --items a,b"
        )
    if isinstance(query, str):  # the command line's "a,b,3": names, or row numbers
        names = {str(name) for name in Features.coerce(data).item_names}
        parts = [part.strip() for part in query.split(",") if part.strip()]
        query = [int(p) if p not in names and p.isdigit() else p for p in parts]
    return bayesian_sets(data, query, model)


# ------------------------------------------------------------------------------ validation
def _quadrature_log_scores(component: BetaBernoulli, X: np.ndarray, query) -> np.ndarray:
    """(4.1) for Beta-Bernoulli items by numerical integration, independent of the closed form.

    Each feature's predictive ``P(x_j = 1)`` under the prior and under the posterior given the
    query is ``int theta Beta(theta) dtheta`` computed by QUADPACK's QAWS rule, which integrates
    the algebraic end-point singularities of ``theta^(a-1) (1-theta)^(b-1)`` exactly (priors with
    ``a < 1`` included).
    """
    from scipy.integrate import quad

    d = X.shape[1]
    a = np.broadcast_to(np.asarray(component.a, dtype=np.float64), (d,))
    b = np.broadcast_to(np.asarray(component.b, dtype=np.float64), (d,))
    ones, n = X[query].sum(axis=0), len(query)

    def mean(alpha, beta):
        mass = quad(lambda t: 1.0, 0.0, 1.0, weight="alg", wvar=(alpha - 1, beta - 1))[0]
        first = quad(lambda t: t, 0.0, 1.0, weight="alg", wvar=(alpha - 1, beta - 1))[0]
        return first / mass

    prior = np.array([mean(a[j], b[j]) for j in range(d)])  # d features, not items
    post = np.array([mean(a[j] + ones[j], b[j] + n - ones[j]) for j in range(d)])
    on, off = np.log(post / prior), np.log1p(-post) - np.log1p(-prior)
    return X @ on + (1 - X) @ off


def _exact_level(entry, recipe, model, data, settings, rng, progressbar=False):
    """The method's scores against (4.1) integrated numerically, on simulated binary items."""
    from latentzoo.inference.compare import Check, Comparison

    # The quadrature is written for Bernoulli features: the user's model joins when it takes the
    # default empirical Beta prior (component None).
    explicit = BayesianSets(component=BetaBernoulli(a=(0.3, 0.8, 1.0, 2.5, 0.5, 4.0), b=0.7))
    problems = [("a < 1 per feature", explicit)]
    if model.component is None:
        problems.insert(0, ("your model", model))
    checks = []
    for label, local in problems:
        small, truth = local.simulate(rng, n_items=30, n_features=6, n_sets=2)
        prior = local.prior(small)
        query = np.flatnonzero(truth["labels"] == 0)[:4]
        X = np.asarray(small.X, dtype=np.float64)
        fast = entry.methods["query"](local, small, query=query).scores
        exact = _quadrature_log_scores(prior, X, query)
        error = float(np.max(np.abs(fast - exact) / (1 + np.abs(exact))))
        checks.append(Check("exact", f"{label}: scores = (4.1) by quadrature", error < 1e-8,
                            f"max relative error {error:.1e} over {len(X)} items (need < 1e-8)",
                            {"max_relative_error": error}))  # fmt: skip
        # An index answers many queries and caches per query size (section 4.4): the same index
        # queried with 4 items, then 1, must give each query's own scores.
        index = BayesianSetsIndex(small, local)
        index.log_scores(query)
        second = index.log_scores(query[:1])
        exact = _quadrature_log_scores(prior, X, query[:1])
        error = float(np.max(np.abs(second - exact) / (1 + np.abs(exact))))
        checks.append(Check(
            "exact", f"{label}: a second query of another size on one index = (4.1)",
            error < 1e-8, f"max relative error {error:.1e} over {len(X)} items of a 1-item query "
            "after a 4-item one (need < 1e-8)", {"max_relative_error": error},
        ))  # fmt: skip
    problem = (
        "30 simulated binary items x 6 features, query of 4 items of one set (and of 1 item on "
        "the same index)"
    )
    return Comparison(checks=checks, problem=problem)


def _reference_level(entry, recipe, model, data, settings, rng, progressbar=False):
    """The method's scores against PyMC's Monte Carlo estimate of (4.1) (NUTS on the posterior
    given the query, :meth:`BayesianSets.monte_carlo_log_score`), within 5 Monte Carlo standard
    errors (delta method on ``log mean_s p(x | theta_s)`` with the ESS of each item's weights)."""
    import arviz as az
    import pymc as pm

    from latentzoo.inference.compare import Check, Comparison

    small, truth = model.simulate(rng, n_items=12, n_features=4, n_sets=2)
    query = np.flatnonzero(truth["labels"] == 0)[:3]
    draws = settings.pymc_draws
    with model.pymc_model(small, query):
        idata = pm.sample(draws=draws, tune=settings.pymc_tune, chains=2, cores=1,
                          random_seed=int(rng.integers(2**31)), progressbar=progressbar,
                          compute_convergence_checks=False)  # fmt: skip
    comp = model.prior(small)
    posterior = idata.posterior
    params = {name: posterior[name].values for name in comp.param_names}
    monte_carlo = model.monte_carlo_log_score(params, small)
    fast = entry.methods["query"](model, small, query=query).scores
    n_chains, n_draws = posterior.sizes["chain"], posterior.sizes["draw"]
    flat = {k: v.reshape((n_chains * n_draws,) + v.shape[3:]) for k, v in params.items()}
    loglik = comp.log_likelihood(flat, np.asarray(small.X, dtype=np.float64))  # (N, S)
    weights = np.exp(loglik - loglik.max(axis=1, keepdims=True))
    ess = np.array([az.ess(w.reshape(n_chains, n_draws)) for w in weights], dtype=np.float64)
    mcse = weights.std(axis=1) / np.sqrt(ess) / weights.mean(axis=1)
    z = np.abs(monte_carlo - fast) / mcse
    passed = bool(np.all(z < 5))
    check = Check("reference", "scores = PyMC Monte Carlo estimate", passed,
                  f"max |z| {z.max():.2f} over {len(z)} items (need < 5; min ESS {ess.min():.0f})",
                  {"max_z": float(z.max()), "min_ess": float(ess.min())})  # fmt: skip
    problem = (f"{small} simulated from 2 sets, query of {len(query)} items; "
               f"PyMC NUTS 2 x {draws} draws")  # fmt: skip
    return Comparison(checks=[check], problem=problem)


_CLOSED_FORM = "the scores are closed forms: there is no sampler or point estimate to check"


def validation_recipe():
    """Bayesian Sets' levels: exact (quadrature) and reference (PyMC Monte Carlo).

    Examples
    --------
    >>> sorted(validation_recipe().checks)
    ['exact', 'reference']
    """
    from latentzoo.inference.validation import ValidationRecipe

    return ValidationRecipe(
        checks={"exact": _exact_level, "reference": _reference_level},
        not_applicable={
            "density": "the PyMC declaration is a posterior given the query, checked through"
            " its Monte Carlo score at the reference level",
            **dict.fromkeys(("optimality", "mode-matched", "calibrated"), _CLOSED_FORM),
        },
    )


FAMILY = Family(
    name="bayesian_sets",
    model=BayesianSets,
    methods={
        "query": Method(
            retrieve,
            (anything("query", None, "the query set: item indices or item names", quick=[0, 2]),),
        )
    },
    recipe=validation_recipe,
    sizes=(),
    dataset="movielens",
    notebook="notebooks/bayesian_sets.ipynb",
    description="Bayesian Sets retrieval (Heller 2007, ch. 4); its face is `latentzoo query`",
)
"""Bayesian Sets' family: a retrieval model; its one method needs a query (quick runs query the
first and third items, which :meth:`BayesianSets.simulate` puts in one set)."""
