"""Validated feature vectors: ``N`` items described by ``D`` binary, count or real features.

:class:`Features` is the container of the mixture-model families (finite Bayesian mixtures and
Dirichlet process mixtures, thesis chapter 2; Bayesian hierarchical clustering and Bayesian Sets
later). It implements the :class:`~latentzoo.data.Dataset` protocol: ``split`` holds out whole
items, ``observed_data`` is the matrix ``x`` with dims ``("item", "feature")``.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import scipy.sparse as sp

from .checks import as_matrix, check_entries, check_vector, normalise_index, normalise_names
from .dataset import RealMatrix, holdout_items

__all__ = ["COUNT_LIMIT", "KINDS", "Features"]

#: The kinds of feature data, each with the conjugate component that models it
#: (Beta-Bernoulli, Dirichlet-multinomial, Normal-Gamma / Normal-Inverse-Wishart).
KINDS = ("binary", "counts", "real")


#: Counts must stay below ``2**63``, the int64 limit that :class:`~latentzoo.data.CoOccurrence`
#: also enforces: beyond it a count is no longer an exact integer in float64 and the count
#: components' closed forms disagree with their references.
COUNT_LIMIT = 2**63


def _infer_kind(values: np.ndarray) -> str:
    """``"binary"`` if every value is 0 or 1, ``"counts"`` if all are non-negative integers below
    :data:`COUNT_LIMIT` (a float such as ``1e300`` is a measurement, not a count)."""
    if values.dtype.kind == "b" or np.all((values == 0) | (values == 1)):
        return "binary"
    if (
        np.all(values >= 0)
        and np.all(values == np.floor(values))
        and (values.dtype.kind in "iu" or np.all(values < COUNT_LIMIT))
    ):
        return "counts"
    return "real"


def _check_kind(kind) -> None:
    if kind is not None and kind not in KINDS:
        raise ValueError(f"kind must be one of 'binary', 'counts', 'real' or None, got {kind!r}")


def _check_values(values, kind, shape, rows=None, cols=None, dtype=None) -> str:
    """Validate the entries for ``kind`` (``None``: finite only) and return the kind.

    Counts (``kind="counts"``, or integer input whose kind is inferred) must lie in the int64
    range, as :class:`~latentzoo.data.CoOccurrence` requires; ``dtype`` is that of the user's
    input when ``values`` were already converted (sparse input).
    """
    dtype = np.asarray(values).dtype if dtype is None else np.dtype(dtype)
    counts = kind == "counts" or (kind is None and dtype.kind in "iu")
    check_entries(
        values,
        "X",
        shape,
        rows,
        cols,
        binary=kind == "binary",
        nonnegative=kind == "counts",
        integer=kind == "counts",
        int64=counts,
        compact=dtype.kind in "iu",
    )
    return _infer_kind(np.asarray(values)) if kind is None else kind


class Features(RealMatrix):
    """Feature vectors of ``N`` items: an ``N x D`` matrix of binary, count or real values.

    Parameters
    ----------
    X : array_like, scipy.sparse matrix/array, pandas.DataFrame or Features
        ``(N, D)`` numeric data, finite. Sparse input is kept sparse (as float64 CSR with
        sorted indices and no explicit zeros) and densified only when :attr:`X` is read.
        A DataFrame gives default item names (index) and feature names (columns).
    labels : array_like, optional
        Class label of each item (length ``N``), e.g. for the adjusted Rand index.
    feature_names, item_names : sequence of str, optional
        Default to ``"0", "1", ...``.
    kind : {"binary", "counts", "real"}, optional
        Inferred when ``None``: all values in {0, 1} gives ``"binary"``, non-negative integers
        ``"counts"`` (float input: only below ``2**63``, :data:`COUNT_LIMIT`), anything else
        ``"real"``. When given, the values are checked against it.
    allow_missing : bool, default False
        Accept NaN in dense ``X`` as a *missing* entry (a vote not cast), for the models that
        integrate missing entries out (the Bayesian Partial Membership model). The observed
        entries are checked as usual; inf is still refused. Every other model refuses such data
        through :meth:`coerce` with a message saying so (:attr:`n_missing`).

    Raises
    ------
    ValueError
        If ``X`` is not 2-D, is empty, is not numeric, holds NaN or inf, breaks the given
        ``kind`` (``"binary"``: a value other than 0 or 1; ``"counts"``: a negative or
        non-integer value, or one of ``2**63`` or more, beyond the int64 range as for
        :class:`~latentzoo.data.CoOccurrence`; integer input is held to that range too), if
        ``kind`` is unknown or if ``labels``/names have the wrong length. The message names the
        offending entry, e.g. ``X[3, 5] is nan``.

    Examples
    --------
    >>> from latentzoo.data import Features
    >>> data = Features([[0, 1, 1], [1, 0, 1]], labels=["a", "b"])
    >>> data
    Features(2 x 3, binary, dense, 2 classes)
    >>> data.X
    array([[0., 1., 1.],
           [1., 0., 1.]])
    >>> Features([[0.0, 0.5]], kind="binary")
    Traceback (most recent call last):
    ...
    ValueError: X[0, 1] = 0.5 is not binary (0 or 1)
    >>> Features([[0.0, float("nan")], [1.0, 1.0]], allow_missing=True).n_missing
    1
    """

    #: ArviZ dimension of the items; the columns are ``"feature"``.
    item_dim = "item"
    #: File formats ``latentzoo fit --data`` reads into this container.
    file_formats = ("csv",)
    #: Whether entry ``[i, j]`` and ``[j, i]`` are one value (False: items x features).
    symmetric = False
    #: What :meth:`table_sizes` counts as the observations: the non-zero entries.
    _observations = "nnz"
    #: What :attr:`n_heldout_units` counts: whole items (``split`` holds out items).
    _heldout_unit = "n_items"

    def __init__(
        self, X, labels=None, feature_names=None, item_names=None, kind=None, allow_missing=False
    ):
        _check_kind(kind)
        if not isinstance(allow_missing, bool):
            raise ValueError(f"allow_missing must be True or False, got {allow_missing!r}")
        if isinstance(X, Features):
            labels = X.labels if labels is None else labels
            feature_names = X.feature_names if feature_names is None else feature_names
            item_names = X.item_names if item_names is None else item_names
            kind = X.kind if kind is None else kind
            allow_missing = allow_missing or X.n_missing > 0
            X = X.sparse if X.sparse is not None else X.X
        elif isinstance(X, pd.DataFrame):
            if item_names is None:
                item_names = np.asarray(X.index).astype(str)
            if feature_names is None:
                feature_names = np.asarray(X.columns).astype(str)
        X = as_matrix(X, "X")
        shape = tuple(int(s) for s in X.shape)
        if sp.issparse(X):
            if X.dtype.kind not in "biuf":
                raise ValueError(f"X must be numeric (bool, integer or float), got dtype {X.dtype}")
            csr = sp.csr_matrix(X, dtype=np.float64)
            csr.sum_duplicates()
            csr.sort_indices()
            rows = np.repeat(np.arange(shape[0], dtype=np.int64), np.diff(csr.indptr))
            kind = _check_values(
                csr.data, kind, shape, rows, csr.indices.astype(np.int64), dtype=X.dtype
            )
            csr.eliminate_zeros()
            dense = None
        else:
            dense = np.array(X, dtype=np.float64) if X.dtype.kind in "biuf" else None
            missing = np.isnan(dense) if allow_missing and dense is not None else np.zeros(0, bool)
            if missing.any():
                # Missing entries are checked as a 0, which every kind accepts: only the
                # observed entries decide the kind and can break it.
                kind = _check_values(np.where(missing, 0.0, dense), kind, shape, dtype=X.dtype)
            else:
                kind = _check_values(X, kind, shape)
                dense = np.array(X, dtype=np.float64)
            dense.setflags(write=False)
            csr = None
        self._dense = dense
        self._sparse = csr
        self._kind = kind
        n_items, n_features = shape
        self._labels = (
            None if labels is None else check_vector(labels, n_items, "labels", "X", "items")
        )
        self._feature_names = normalise_names(
            feature_names, n_features, "feature_names", "X", "features"
        )
        self._item_names = normalise_names(item_names, n_items, "item_names", "X", "items")

    @classmethod
    def _trusted(cls, dense, sparse, kind, labels, feature_names, item_names) -> Features:
        """Wrap already validated parts without re-validation (subsets, splits, copies)."""
        obj = cls.__new__(cls)
        if dense is not None:
            dense.setflags(write=False)
        obj._dense, obj._sparse, obj._kind = dense, sparse, kind
        for array in (labels, feature_names, item_names):
            if array is not None:
                array.setflags(write=False)
        obj._labels, obj._feature_names, obj._item_names = labels, feature_names, item_names
        return obj

    # ------------------------------------------------------------------ properties
    @property
    def X(self) -> np.ndarray:
        """The data as a read-only dense float64 ``(N, D)`` array (sparse input densified once).

        Examples
        --------
        >>> import scipy.sparse as sp
        >>> from latentzoo.data import Features
        >>> Features(sp.csr_matrix([[0, 2], [1, 0]])).X
        array([[0., 2.],
               [1., 0.]])
        """
        if self._dense is None:
            dense = self._sparse.toarray()
            dense.setflags(write=False)
            self._dense = dense
        return self._dense

    @property
    def n_missing(self) -> int:
        """Number of missing (NaN) entries; only ``allow_missing=True`` data have any (the
        class's examples count one)."""
        if self._sparse is not None:
            return 0
        return int(np.count_nonzero(np.isnan(self._dense)))

    @classmethod
    def coerce(cls, data, allow_missing: bool = False, **options) -> Features:
        """``data`` itself when it is already :class:`Features`, else ``Features(data)``; data
        with missing entries only when the caller integrates them out (``allow_missing``).

        Raises
        ------
        ValueError
            If ``data`` has missing entries and ``allow_missing`` is False, naming how many.

        Examples
        --------
        >>> from latentzoo.data import Features
        >>> votes = Features([[1.0, float("nan")]], allow_missing=True)
        >>> Features.coerce(votes) # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        ValueError: X has 1 missing (NaN) entries, which this model does not integrate out; ...
        """
        if isinstance(data, cls):
            if data.n_missing and not allow_missing:
                raise ValueError(
                    f"X has {data.n_missing} missing (NaN) entries, which this model does not "
                    "integrate out; fill them first, or fit a model that handles them (the "
                    "Bayesian Partial Membership model, 'bpm')"
                )
            return data
        return cls(data, allow_missing=allow_missing, **options)

    @property
    def sparse(self) -> sp.csr_matrix | None:
        """The data as float64 CSR if it was given sparse, else ``None``.

        Examples
        --------
        >>> import scipy.sparse as sp
        >>> from latentzoo.data import Features
        >>> Features(sp.csr_matrix([[0, 2], [1, 0]])).sparse.nnz, Features([[0, 1]]).sparse
        (2, None)
        """
        return self._sparse

    @property
    def is_sparse(self) -> bool:
        """Whether the data are stored sparse."""
        return self._sparse is not None

    @property
    def shape(self) -> tuple[int, int]:
        """``(N, D)``.

        Examples
        --------
        >>> from latentzoo.data import Features
        >>> Features([[0.5, 1.0, 2.0]]).shape
        (1, 3)
        """
        source = self._sparse if self._sparse is not None else self._dense
        return (int(source.shape[0]), int(source.shape[1]))

    @property
    def n_features(self) -> int:
        """Number of features ``D`` (columns)."""
        return self.shape[1]

    @property
    def kind(self) -> str:
        """``"binary"``, ``"counts"`` or ``"real"``.

        Examples
        --------
        >>> from latentzoo.data import Features
        >>> Features([[0, 1]]).kind, Features([[0, 3]]).kind, Features([[0, -1.5]]).kind
        ('binary', 'counts', 'real')
        """
        return self._kind

    @property
    def feature_names(self) -> np.ndarray:
        """Read-only unicode names of the features."""
        return self._feature_names

    @property
    def nnz(self) -> int:
        """Number of non-zero entries.

        Examples
        --------
        >>> from latentzoo.data import Features
        >>> Features([[0, 1], [1, 1]]).nnz
        3
        """
        if self._sparse is not None:
            return int(self._sparse.nnz)
        return int(np.count_nonzero(self._dense))

    # ------------------------------------------------------------------ Dataset protocol
    def coords(self) -> dict[str, list]:
        """ArviZ coordinates: ``{"item": item names, "feature": feature names}``.

        Examples
        --------
        >>> from latentzoo.data import Features
        >>> Features([[0, 1]], feature_names=["a", "b"]).coords()
        {'item': ['0'], 'feature': ['a', 'b']}
        """
        return {"item": self._item_names.tolist(), "feature": self._feature_names.tolist()}

    def observed_data(self) -> dict[str, tuple[tuple[str, ...], np.ndarray]]:
        """Content of the ``observed_data`` group: ``{"x": (("item", "feature"), X)}``.

        Examples
        --------
        >>> from latentzoo.data import Features
        >>> dims, x = Features([[0, 1]]).observed_data()["x"]
        >>> dims, x.shape
        (('item', 'feature'), (1, 2))
        """
        return {"x": (("item", "feature"), self.X)}

    def check_fit_shape(self, rows, cols, name: str = "test") -> None:
        """``ValueError`` unless the items have the ``cols`` features of a fit (None: any); the
        number of items is free, held-out items being new ones.

        Examples
        --------
        >>> from latentzoo.data import Features
        >>> Features([[0, 1]]).check_fit_shape(None, 3)
        Traceback (most recent call last):
        ...
        ValueError: test has 2 features, the fit has 3; held-out items must have the same features as the training data
        """
        if cols is not None and self.n_features != cols:
            raise ValueError(
                f"{name} has {self.n_features} features, the fit has {cols}; held-out items "
                "must have the same features as the training data"
            )

    @classmethod
    def from_observed_data(cls, group) -> Features | None:
        """The items stored by :meth:`observed_data` in an ``observed_data`` group, or None when
        the group holds no ``x``.

        Examples
        --------
        >>> import xarray as xr
        >>> from latentzoo.data import Features
        >>> group = xr.Dataset({k: v for k, v in Features([[0, 1]]).observed_data().items()})
        >>> Features.from_observed_data(group).shape
        (1, 2)
        """
        if "x" not in group.data_vars:
            return None
        return cls(group["x"].to_numpy(), allow_missing=True)

    def subset(self, items) -> Features:
        """The items at ``items`` (positions, negative from the end, or a boolean mask).

        Labels and names are carried along; sparse data stay sparse; the kind is kept.

        Raises
        ------
        ValueError
            If an index is out of range, a mask has the wrong length or nothing is selected.

        Examples
        --------
        >>> from latentzoo.data import Features
        >>> data = Features([[0, 1], [1, 1], [1, 0]], labels=[0, 1, 1], item_names=list("abc"))
        >>> part = data.subset([2, 0])
        >>> part.item_names.tolist(), part.labels.tolist(), part.X.tolist()
        (['c', 'a'], [1, 0], [[1.0, 0.0], [0.0, 1.0]])
        """
        index = normalise_index(items, self.n_items, "items")
        if index.size == 0:
            raise ValueError("subset is empty (selects 0 items)")
        if self._sparse is not None:
            sparse = sp.csr_matrix(self._sparse[index])
            sparse.sort_indices()
            dense = None
        else:
            sparse = None
            dense = self._dense[index]
        labels = None if self._labels is None else self._labels[index]
        return Features._trusted(
            dense, sparse, self._kind, labels, self._feature_names, self._item_names[index]
        )

    def split(self, test_fraction, random_state=None) -> tuple[Features, Features]:
        """Hold out whole items: ``(train, test)``.

        ``round(test_fraction * N)`` items (at least one, at most ``N - 1``) are drawn uniformly
        without replacement as the test part; both parts keep the original item order.

        Parameters
        ----------
        test_fraction : float
            In the open interval ``(0, 1)``.
        random_state : None, int or numpy.random.Generator, optional
            Equal seeds give equal splits.

        Raises
        ------
        ValueError
            If ``test_fraction`` is not in ``(0, 1)`` or there is only one item.

        Examples
        --------
        >>> import numpy as np
        >>> from latentzoo.data import Features
        >>> data = Features(np.eye(10))
        >>> train, test = data.split(0.2, random_state=1)
        >>> train.n_items, test.n_items
        (8, 2)
        """
        train, test = holdout_items(self.n_items, test_fraction, random_state)
        return self.subset(train), self.subset(test)

    # ------------------------------------------------------------------ helpers
    def binarize(self, threshold=0.0, inclusive: bool = False) -> Features:
        """Binary features ``1[x > threshold]`` (``1[x >= threshold]`` with ``inclusive``).

        Sparse data stay sparse when zeros map to 0. Labels and names are kept.

        Examples
        --------
        >>> from latentzoo.data import Features
        >>> pixels = Features([[0, 7, 8, 16]])
        >>> pixels.binarize(8, inclusive=True).X
        array([[0., 0., 1., 1.]])
        >>> pixels.binarize().kind
        'binary'
        """
        threshold = float(threshold)
        if not np.isfinite(threshold):
            raise ValueError(f"threshold must be a finite number, got {threshold!r}")

        def above(values):
            return values >= threshold if inclusive else values > threshold

        zero_maps_to_one = bool(above(np.zeros(1))[0])
        if self._sparse is not None and not zero_maps_to_one:
            sparse = self._sparse.copy()
            sparse.data = above(sparse.data).astype(np.float64)
            sparse.eliminate_zeros()
            dense = None
        else:
            sparse = None
            # A missing entry stays missing.
            dense = np.where(np.isnan(self.X), np.nan, above(self.X).astype(np.float64))
        return Features._trusted(
            dense, sparse, "binary", self._labels, self._feature_names, self._item_names
        )

    def toarray(self) -> np.ndarray:
        """The features as a dense float64 array (:attr:`X`).

        Examples
        --------
        >>> Features([[0, 2]]).toarray()
        array([[0., 2.]])
        """
        return np.asarray(self.X)

    def with_names(self, item_names, column_names=None) -> Features:
        """The same features with items named ``item_names`` and features ``column_names``.

        Examples
        --------
        >>> Features([[0, 1]]).with_names(["a"], ["x", "y"]).feature_names.tolist()
        ['x', 'y']
        """
        return Features(self.sparse if self.is_sparse else self.X, labels=self._labels,
                        feature_names=column_names, item_names=item_names, kind=self.kind,
                        allow_missing=self.n_missing > 0)  # fmt: skip

    @classmethod
    def matrix_of(cls, X):
        """The matrix of ``X``: ``X.X`` for :class:`Features`, ``X`` itself (unchecked) otherwise.

        Examples
        --------
        >>> Features.matrix_of(Features([[0, 1]])).tolist(), Features.matrix_of([[2]])
        ([[0.0, 1.0]], [[2]])
        """
        return X.X if isinstance(X, cls) else X

    @classmethod
    def like(cls, source, X, **options):
        """``X`` as :class:`Features` with the labels and names of ``source`` when ``source`` is
        one; ``X`` itself otherwise (a transform returns what it was given).

        Examples
        --------
        >>> items = Features([[0, 2]], feature_names=["a", "b"])
        >>> Features.like(items, [[0, 1]], kind="binary").feature_names.tolist()
        ['a', 'b']
        >>> Features.like([[0, 2]], [[0, 1]])
        [[0, 1]]
        """
        if not isinstance(source, cls):
            return X
        return cls(
            X,
            labels=source.labels,
            feature_names=source.feature_names,
            item_names=source.item_names,
            **options,
        )

    def top_centred_eigenvalue(self) -> float:
        """``lambda_max(-J D J) / N`` for ``D`` the squared Euclidean distances between the items
        (``J`` the centring matrix), computed without ``D`` as ``2 lambda_max`` of the covariance.

        Examples
        --------
        >>> Features([[-1.0, 0.0], [1.0, 0.0]]).top_centred_eigenvalue()
        2.0
        """
        X = self.X - self.X.mean(axis=0)
        cov = X.T @ X / X.shape[0]
        return float(2.0 * np.linalg.eigvalsh(np.atleast_2d(cov))[-1])

    def copy(self) -> Features:
        """An independent copy (``load`` hands these out)."""
        dense = None if self._dense is None else self._dense.copy()
        sparse = None if self._sparse is None else self._sparse.copy()
        labels = None if self._labels is None else self._labels.copy()
        return Features._trusted(
            dense,
            sparse,
            self._kind,
            labels,
            self._feature_names.copy(),
            self._item_names.copy(),
        )

    # ------------------------------------------------------------------ dunder
    def __repr__(self) -> str:
        n_items, n_features = self.shape
        storage = "sparse" if self._sparse is not None else "dense"
        return f"Features({n_items} x {n_features}, {self._kind}, {storage}{self._classes_note()})"

    def __eq__(self, other):
        if not isinstance(other, Features):
            return NotImplemented
        if (
            not self._same_items(other)
            or self._kind != other._kind
            or not np.array_equal(self._feature_names, other._feature_names)
        ):
            return False
        if self._sparse is None and other._sparse is None:
            return bool(np.array_equal(self._dense, other._dense))
        left = self._sparse if self._sparse is not None else sp.csr_matrix(self._dense)
        right = other._sparse if other._sparse is not None else sp.csr_matrix(other._dense)
        return (left != right).nnz == 0

    # Equality is value-based, so instances must not be hashable.
    __hash__ = None
