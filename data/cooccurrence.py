"""Validated co-occurrence count matrices.

The :class:`CoOccurrence` container holds counts ``n_ij`` of how often row object ``x_i``
(a document, an adjective) was observed together with column object ``y_j`` (a word, a noun).
It is the common input of every model in the package, so it validates once at construction
and afterwards guarantees a canonical sparse representation.
"""

from __future__ import annotations

import numbers
import os
from itertools import chain

import numpy as np
import pandas as pd
import scipy.sparse as sp

from .checks import (
    as_matrix,
    as_rng,
    check_entries,
    check_fraction,
    check_memory,
    normalise_index,
    normalise_names,
)
from .dataset import Coercible

__all__ = ["CoOccurrence"]

_NPZ_FORMAT = "latentzoo.CoOccurrence/1"
_NPZ_KEYS = ("format", "data", "indices", "indptr", "shape", "row_labels", "col_labels")


def _check_values(values, rows, cols, shape, name):
    """Raise ``ValueError`` naming the first entry that is not a non-negative integer."""
    check_entries(
        values,
        name,
        shape,
        rows,
        cols,
        nonnegative=True,
        integer=True,
        int64=True,
        compact=True,
        nan_word="NaN",
    )


_INT64_MAX = int(np.iinfo(np.int64).max)


def _exact_sum(values: np.ndarray) -> int:
    """Exact sum of non-negative int64 ``values`` as a Python int, whatever its size.

    Each value is split into its high and low 32 bits, whose sums fit int64 and uint64 for up to
    2**31 values; longer arrays are summed in chunks of that length.
    """
    total = 0
    step = 2**31
    for start in range(0, values.size, step):
        chunk = values[start : start + step]
        high = int((chunk >> 32).sum(dtype=np.int64))
        low = int((chunk & 0xFFFFFFFF).sum(dtype=np.uint64))
        total += high * 2**32 + low
    return total


def _check_sums(values, rows, cols, shape) -> None:
    """Raise ``ValueError`` if a row, column or the total of the counts exceeds the int64 range.

    The totals, splits and likelihoods all sum counts in int64, where an overflow wraps around
    silently (``total == 0`` for four cells of ``2**62``). Checked on the validated entries
    before any int64 sum is taken: ``max * size`` bounds every sum, so typical data pays for one
    ``max``; only when the bound fails are the sums computed exactly.
    """
    if values.dtype.kind == "b" or values.size == 0:
        return
    if int(values.max()) * values.size <= _INT64_MAX:
        return
    ints = values.astype(np.int64)
    if rows is None:
        rows, cols = np.divmod(np.arange(values.size, dtype=np.int64), shape[1])
    for axis, index, size in (("row", rows, shape[0]), ("column", cols, shape[1])):
        # Float sums locate the candidates; the exact sum decides, so rounding near 2**63
        # cannot give a false alarm.
        approx = np.bincount(index, weights=ints.astype(np.float64), minlength=size)
        for position in np.flatnonzero(approx >= 2.0**63 * (1 - 1e-9)):
            exact = _exact_sum(ints[index == position])
            if exact > _INT64_MAX:
                raise ValueError(
                    f"counts {axis} {position} sums to {exact} observations, which exceeds the "
                    f"int64 range (at most {_INT64_MAX})"
                )
    total = _exact_sum(ints)
    if total > _INT64_MAX:
        raise ValueError(
            f"counts sum to {total} observations in total, which exceeds the int64 range "
            f"(at most {_INT64_MAX})"
        )


def _to_csr(counts) -> sp.csr_matrix:
    """Validate ``counts`` and return it as a canonical int64 CSR matrix."""
    counts = as_matrix(counts, "counts")
    shape = tuple(int(s) for s in counts.shape)
    if sp.issparse(counts):
        coo = counts.tocoo()
        rows, cols, values = np.asarray(coo.row), np.asarray(coo.col), np.asarray(coo.data)
    else:
        values = counts
        rows = cols = None
    flat = values if rows is not None else values.ravel()
    _check_values(flat, rows, cols, shape, "counts")
    _check_sums(flat, rows, cols, shape)
    if rows is None:
        csr = sp.csr_matrix(values.astype(np.int64, copy=False))
    else:
        csr = sp.csr_matrix((values.astype(np.int64), (rows, cols)), shape=shape, dtype=np.int64)
    csr.sum_duplicates()
    csr.eliminate_zeros()
    csr.sort_indices()
    if csr.nnz == 0:
        raise ValueError("counts has no observations (all entries are zero)")
    return csr


def _normalise_labels(labels, n: int, name: str, axis: str) -> np.ndarray:
    """Return labels as a read-only 1-D unicode array of length ``n``."""
    return normalise_names(labels, n, name, "counts", axis)


_normalise_index = normalise_index
_as_rng = as_rng


def _encode_axis(values: np.ndarray, labels, size, name: str, axis: str):
    """Map one coordinate array of :meth:`CoOccurrence.from_pairs` to integer positions.

    Returns ``(positions, labels, size)``; integer input is used as positions directly,
    anything else is treated as labels.
    """
    if values.dtype.kind in "iu" or values.size == 0:
        positions = values.astype(np.int64)
        if positions.size and positions.min() < 0:
            k = int(np.argmax(positions < 0))
            raise ValueError(f"{name} contains negative index {positions[k]} (at position {k})")
        if size is None:
            size = len(labels) if labels is not None else int(positions.max(initial=-1)) + 1
        if positions.size and positions.max() >= size:
            k = int(np.argmax(positions >= size))
            raise ValueError(
                f"{name} contains index {positions[k]} (at position {k}) "
                f"but shape has {size} {axis}"
            )
        return positions, labels, size
    if values.dtype.kind not in "USO":
        raise ValueError(
            f"{name} must hold integer indices or labels (strings), got dtype {values.dtype}"
        )
    values = values.astype(str)
    if labels is None:
        labels, positions = np.unique(values, return_inverse=True)
    else:
        positions, found = _lookup(values, np.asarray(labels).astype(str))
        if not found.all():
            k = int(np.argmax(~found))
            raise ValueError(
                f"{name} contains {str(values[k])!r} (at position {k}) "
                "which is not among the given labels"
            )
    if size is None:
        size = len(labels)
    return positions.astype(np.int64), labels, size


def _lookup(values: np.ndarray, universe: np.ndarray):
    """Positions of ``values`` in ``universe`` (vectorised via sorting) and a found-mask."""
    if universe.size == 0:
        return np.zeros(values.shape, dtype=np.int64), np.zeros(values.shape, dtype=bool)
    order = np.argsort(universe, kind="stable")
    sorted_universe = universe[order]
    # Clipping keeps misses in bounds; they are filtered out by the equality test.
    pos = np.minimum(np.searchsorted(sorted_universe, values), universe.size - 1)
    found = sorted_universe[pos] == values
    return order[pos].astype(np.int64), found


def _read_npz(name: str) -> dict[str, np.ndarray]:
    """The arrays of a :meth:`CoOccurrence.to_npz` file, read without unpickling.

    Anything numpy or zipfile cannot read becomes a ``ValueError`` naming the file; their own
    messages are dropped because numpy's suggests loading the file with pickles, which a data file
    of this package never needs (and which could run code from an untrusted file).
    """
    try:
        loaded = np.load(name, allow_pickle=False)
    except (FileNotFoundError, IsADirectoryError, PermissionError):
        raise
    except Exception:  # noqa: BLE001 - a damaged file fails in numpy, zipfile or zlib alike
        raise ValueError(
            f"{name} is not a readable .npz archive (damaged, truncated or of another format)"
        ) from None
    if not hasattr(loaded, "files"):
        raise ValueError(f"{name} holds a single array (.npy), not a CoOccurrence .npz archive")
    with loaded as archive:
        missing = [key for key in _NPZ_KEYS if key not in archive.files]
        if missing:
            raise ValueError(f"{name} is not a CoOccurrence file; missing {missing}")
        arrays = {}
        for key in _NPZ_KEYS:
            try:
                arrays[key] = archive[key]
            except Exception:  # noqa: BLE001 - as above: damaged member, or Python objects
                raise ValueError(
                    f"{name}: the array {key!r} cannot be read (the file is damaged, or the array "
                    "holds Python objects, which are never loaded)"
                ) from None
    return arrays


def _npz_matrix(arrays: dict[str, np.ndarray], name: str) -> sp.csr_matrix:
    """The CSR matrix stored in ``arrays``, after checking its structure in plain words.

    scipy's own checks would otherwise surface as raw messages ("column index exceeds matrix
    dimensions"), without the file's name.
    """
    fmt = arrays["format"]
    if fmt.shape != () or fmt.dtype.kind != "U" or str(fmt) != _NPZ_FORMAT:
        raise ValueError(f"{name}: unsupported CoOccurrence file format {fmt.tolist()!r}")
    shape, data = arrays["shape"], arrays["data"]
    indices, indptr = arrays["indices"], arrays["indptr"]
    if shape.shape != (2,) or shape.dtype.kind not in "iu" or np.any(shape < 0):
        raise ValueError(f"{name}: shape must hold two non-negative integers, got {shape.tolist()}")
    n_rows, n_cols = (int(s) for s in shape)
    for key, array in (("data", data), ("indices", indices), ("indptr", indptr)):
        if array.ndim != 1:
            raise ValueError(f"{name}: {key} must be 1-D, got shape {array.shape}")
    if data.dtype.kind not in "biuf":
        raise ValueError(f"{name}: data must hold numbers, got dtype {data.dtype}")
    for key, array in (("indices", indices), ("indptr", indptr)):
        if array.dtype.kind not in "iu":
            raise ValueError(f"{name}: {key} must hold integers, got dtype {array.dtype}")
    if indices.shape[0] != data.shape[0]:
        raise ValueError(
            f"{name}: indices has {indices.shape[0]} entries but data has {data.shape[0]}"
        )
    if indptr.shape[0] != n_rows + 1:
        raise ValueError(
            f"{name}: indptr has {indptr.shape[0]} entries, expected {n_rows + 1} "
            f"(rows + 1 for shape {(n_rows, n_cols)})"
        )
    if np.any(np.diff(indptr) < 0):
        k = int(np.argmax(np.diff(indptr) < 0))
        raise ValueError(f"{name}: indptr decreases at row {k} ({indptr[k]} -> {indptr[k + 1]})")
    if indptr[0] != 0 or indptr[-1] != data.shape[0]:
        raise ValueError(
            f"{name}: indptr must run from 0 to the {data.shape[0]} stored entries, got "
            f"{indptr[0]} to {indptr[-1]}"
        )
    bad = (indices < 0) | (indices >= n_cols)
    if bad.any():
        k = int(np.argmax(bad))
        row = int(np.searchsorted(indptr, k, side="right")) - 1
        raise ValueError(
            f"{name}: stored entry {k} (row {row}) has column index {indices[k]}, outside the "
            f"{n_cols} columns of shape {(n_rows, n_cols)}"
        )
    return sp.csr_matrix((data, indices, indptr), shape=(n_rows, n_cols))


class CoOccurrence(Coercible):
    """Co-occurrence counts of ``N`` row objects with ``M`` column objects.

    Entry ``n_ij`` counts how often row object ``x_i`` (a document, an adjective) was observed
    together with column object ``y_j`` (a word, a noun). Counts are validated once and stored
    as a canonical sparse matrix.

    Parameters
    ----------
    counts : array_like or sparse matrix or pandas.DataFrame
        2-D non-negative integer counts. Lists of lists, numpy arrays, scipy sparse
        matrices/arrays and DataFrames are accepted. Float entries must hold integral values
        and bools count as 0/1. At least one entry must be positive; all-zero rows or
        columns are allowed.
    row_labels, col_labels : sequence of str, optional
        Names of the rows/columns. Default to the DataFrame index/columns for DataFrame
        input and to ``"0", "1", ...`` otherwise.

    Raises
    ------
    ValueError
        If ``counts`` is not 2-D, is empty, holds no observations, is non-numeric or holds
        an entry that is NaN, infinite, negative or non-integral, if a row, a column or the
        whole matrix sums to more observations than int64 holds (``2**63 - 1``; every total is
        kept in int64), or if a label array has the wrong length. The message names the
        offending entry, row or column.

    Attributes
    ----------
    counts : scipy.sparse.csr_matrix
        The counts as int64 CSR with sorted indices, no duplicates and no explicit zeros.

    Examples
    --------
    >>> from latentzoo.data import CoOccurrence
    >>> X = CoOccurrence([[2, 0, 1], [0, 3, 0]], col_labels=["a", "b", "c"])
    >>> X
    CoOccurrence(2 x 3, 6 observations, 3 non-zeros)
    >>> X.shape, X.n_rows, X.n_cols, X.nnz, X.total
    ((2, 3), 2, 3, 3, 6)
    >>> X.row_totals, X.col_totals
    (array([3, 3]), array([2, 3, 1]))
    >>> X.row_labels, X.col_labels
    (array(['0', '1'], dtype='<U21'), array(['a', 'b', 'c'], dtype='<U1'))
    >>> CoOccurrence([[1, -2]])
    Traceback (most recent call last):
    ...
    ValueError: counts[0, 1] = -2 is negative
    """

    def __init__(self, counts, row_labels=None, col_labels=None):
        if isinstance(counts, pd.DataFrame):
            if row_labels is None:
                row_labels = np.asarray(counts.index).astype(str)
            if col_labels is None:
                col_labels = np.asarray(counts.columns).astype(str)
        csr = _to_csr(counts)
        n_rows, n_cols = csr.shape
        self.counts = csr
        self._row_labels = _normalise_labels(row_labels, n_rows, "row_labels", "rows")
        self._col_labels = _normalise_labels(col_labels, n_cols, "col_labels", "columns")

    @classmethod
    def _trusted(cls, csr, row_labels, col_labels) -> CoOccurrence:
        """Wrap an already canonical CSR without re-validation.

        Derived objects (splits, folds, subsets) may legitimately hold no observations,
        which the public constructor would reject.
        """
        obj = cls.__new__(cls)
        csr.eliminate_zeros()
        obj.counts = csr
        obj._row_labels = row_labels
        obj._col_labels = col_labels
        return obj

    # ------------------------------------------------------------------ properties
    @property
    def counts(self) -> sp.csr_matrix:
        """The counts ``n_ij`` as an int64 CSR matrix (canonical: sorted, summed, no zeros)."""
        return self._counts

    @counts.setter
    def counts(self, value) -> None:
        # Cached views of the counts belong to the old matrix.
        self._counts = value
        self._cells = None

    def cells(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Row indices, column indices and counts of the non-zero cells (CSR order), cached.

        Likelihoods evaluated once per posterior draw use this instead of rebuilding a COO
        matrix each time.

        Examples
        --------
        >>> from latentzoo.data import CoOccurrence
        >>> [a.tolist() for a in CoOccurrence([[1, 0, 2]]).cells()]
        [[0, 0], [0, 2], [1, 2]]
        """
        cached = getattr(self, "_cells", None)
        if cached is None:
            csr = self.counts
            rows = np.repeat(np.arange(csr.shape[0], dtype=np.int64), np.diff(csr.indptr))
            cached = (rows, csr.indices.astype(np.int64), csr.data.astype(np.int64))
            for array in cached:
                array.flags.writeable = False
            self._cells = cached
        return cached

    @property
    def shape(self) -> tuple[int, int]:
        """Shape ``(N, M)`` of the count matrix."""
        return (int(self.counts.shape[0]), int(self.counts.shape[1]))

    @property
    def n_rows(self) -> int:
        """Number of row objects ``N``."""
        return self.shape[0]

    @property
    def n_cols(self) -> int:
        """Number of column objects ``M``."""
        return self.shape[1]

    @property
    def nnz(self) -> int:
        """Number of non-zero cells."""
        return int(self.counts.nnz)

    @property
    def total(self) -> int:
        """Total number of observations ``sum_ij n_ij``."""
        return int(self.counts.data.sum(dtype=np.int64))

    @property
    def row_totals(self) -> np.ndarray:
        """Per-row totals ``n_i.`` as an int64 array of length ``N``."""
        return np.asarray(self.counts.sum(axis=1, dtype=np.int64)).ravel()

    @property
    def col_totals(self) -> np.ndarray:
        """Per-column totals ``n_.j`` as an int64 array of length ``M``."""
        return np.asarray(self.counts.sum(axis=0, dtype=np.int64)).ravel()

    @property
    def row_labels(self) -> np.ndarray:
        """Row names as a read-only unicode array."""
        return self._row_labels

    @property
    def col_labels(self) -> np.ndarray:
        """Column names as a read-only unicode array.

        Examples
        --------
        >>> from latentzoo.data import CoOccurrence
        >>> CoOccurrence([[1, 2]], col_labels=["cat", "dog"]).col_labels
        array(['cat', 'dog'], dtype='<U3')
        """
        return self._col_labels

    # ------------------------------------------------------------------ Dataset protocol
    #: ArviZ dimension of the items (rows); the columns are ``"word"``.
    item_dim = "doc"
    #: File formats ``latentzoo fit --data`` reads into this container (:meth:`from_npz`).
    file_formats = ("npz", "csv")
    #: Whether entry ``[i, j]`` and ``[j, i]`` are one value (False: rows and columns differ).
    symmetric = False
    #: What :meth:`table_sizes` counts as the observations: the total count.
    _observations = "total"
    #: What :attr:`n_heldout_units` counts: the tokens (held-out counts are thinned, not items).
    _heldout_unit = "total"

    def with_names(self, item_names, column_names=None) -> CoOccurrence:
        """The same counts with rows named ``item_names`` and columns ``column_names``.

        Examples
        --------
        >>> CoOccurrence([[1, 2]]).with_names(["d"], ["cat", "dog"]).col_labels.tolist()
        ['cat', 'dog']
        """
        return CoOccurrence(self.counts, row_labels=item_names, col_labels=column_names)

    @classmethod
    def edge_cases(cls) -> dict[str, list[np.ndarray]]:
        """Valid but awkward count matrices, by name, that every method must fit (finitely) or
        refuse: ``"empty_rows_and_columns"`` and ``"single_item"`` (a single row, column or
        cell).

        Examples
        --------
        >>> [len(cases) for cases in CoOccurrence.edge_cases().values()]
        [1, 3]
        """
        return {
            "empty_rows_and_columns": [np.array([[2, 0, 1, 0], [0, 0, 0, 0], [1, 0, 3, 0]])],
            "single_item": [np.array([[3, 1, 2]]), np.array([[3], [1], [2]]), np.array([[5]])],
        }

    @classmethod
    def supporting(cls, n_components: int) -> CoOccurrence | None:
        """Small-memory counts on which ``n_components`` components are not too many for the
        data: ``n_components`` rows and columns with 1e6 observations on the diagonal (enough for
        every size, the product-space mixture's ``Kx * Ky`` included). The common checks give
        it a huge ``n_components`` to test the methods' memory guards.

        Examples
        --------
        >>> CoOccurrence.supporting(3)
        CoOccurrence(3 x 3, 3000000 observations, 3 non-zeros)
        """
        return cls(sp.identity(n_components, dtype=np.int64, format="csr") * 10**6)

    @property
    def n_items(self) -> int:
        """Number of items of the :class:`~latentzoo.data.Dataset` protocol: the rows ``N``.

        Examples
        --------
        >>> from latentzoo.data import CoOccurrence
        >>> CoOccurrence([[1, 0, 2], [0, 1, 0]]).n_items
        2
        """
        return self.n_rows

    def coords(self) -> dict[str, list]:
        """ArviZ coordinates: ``{"doc": row labels, "word": column labels}``.

        Examples
        --------
        >>> from latentzoo.data import CoOccurrence
        >>> CoOccurrence([[1, 2]], row_labels=["d"], col_labels=["a", "b"]).coords()
        {'doc': ['d'], 'word': ['a', 'b']}
        """
        return {"doc": self._row_labels.tolist(), "word": self._col_labels.tolist()}

    def observed_data(self) -> dict[str, tuple[tuple[str, ...], np.ndarray]]:
        """Content of the ``observed_data`` group: ``{"counts": (("doc", "word"), dense counts)}``.

        Examples
        --------
        >>> from latentzoo.data import CoOccurrence
        >>> dims, counts = CoOccurrence([[1, 0], [0, 2]]).observed_data()["counts"]
        >>> dims, counts.tolist()
        (('doc', 'word'), [[1, 0], [0, 2]])
        """
        return {"counts": (("doc", "word"), self.toarray())}

    def check_fit_shape(self, rows, cols, name: str = "test") -> None:
        """``ValueError`` unless the matrix has the ``rows`` and ``cols`` of a fit (None: any):
        held-out tokens belong to the training documents and words.

        Examples
        --------
        >>> from latentzoo.data import CoOccurrence
        >>> CoOccurrence([[1, 2]]).check_fit_shape(2, 2)
        Traceback (most recent call last):
        ...
        ValueError: test has 1 rows, the fit has 2 (documents); held-out data must be the same rows and columns as the training data
        """
        for axis, have, want, what in (("rows", self.n_rows, rows, "documents"),
                                        ("columns", self.n_cols, cols, "words")):  # fmt: skip
            if want is not None and have != want:
                rule = (
                    "held-out data must be"
                    if name == "test"
                    else "train must be the data of the fit:"
                )
                raise ValueError(
                    f"{name} has {have} {axis}, the fit has {want} ({what}); {rule} the same rows "
                    "and columns as the training data"
                )

    @classmethod
    def from_observed_data(cls, group) -> CoOccurrence | None:
        """The matrix stored by :meth:`observed_data` in an ``observed_data`` group (labels from
        its coordinates), or None when the group holds no ``counts``.

        Examples
        --------
        >>> import xarray as xr
        >>> from latentzoo.data import CoOccurrence
        >>> data = CoOccurrence([[1, 0], [0, 2]], row_labels=["a", "b"])
        >>> group = xr.Dataset({k: v for k, v in data.observed_data().items()}, coords=data.coords())
        >>> CoOccurrence.from_observed_data(group) == data
        True
        """
        if "counts" not in group.data_vars:
            return None
        row_dim, col_dim = group["counts"].dims
        return cls(
            group["counts"].to_numpy(),
            row_labels=group[row_dim].to_numpy(),
            col_labels=group[col_dim].to_numpy(),
        )

    def copy(self) -> CoOccurrence:
        """An independent copy (counts and labels).

        Examples
        --------
        >>> from latentzoo.data import CoOccurrence
        >>> data = CoOccurrence([[1, 2]])
        >>> data.copy() == data, data.copy() is data
        (True, False)
        """
        return CoOccurrence(self.counts.copy(), self.row_labels, self.col_labels)

    # ------------------------------------------------------------------ dunder
    def __repr__(self) -> str:
        n_rows, n_cols = self.shape
        return f"CoOccurrence({n_rows} x {n_cols}, {self.total} observations, {self.nnz} non-zeros)"

    def __eq__(self, other):
        if not isinstance(other, CoOccurrence):
            return NotImplemented
        return (
            self.shape == other.shape
            and np.array_equal(self._row_labels, other._row_labels)
            and np.array_equal(self._col_labels, other._col_labels)
            and (self.counts != other.counts).nnz == 0
        )

    # Equality is value-based and ``counts`` is mutable, so instances must not be hashable.
    __hash__ = None

    # ------------------------------------------------------------------ conversions
    def toarray(self) -> np.ndarray:
        """Return the counts as a dense int64 array.

        Returns
        -------
        numpy.ndarray
            Array of shape ``(N, M)``.

        Raises
        ------
        ValueError
            If the dense array would take more than half of this machine's memory
            (:func:`~latentzoo.data.checks.check_memory`).

        Examples
        --------
        >>> from latentzoo.data import CoOccurrence
        >>> CoOccurrence([[1, 0], [0, 2]]).toarray()
        array([[1, 0],
               [0, 2]])
        """
        n_rows, n_cols = self.shape
        check_memory(
            8 * n_rows * n_cols,
            "CoOccurrence.toarray",
            detail=f"for a dense {n_rows} x {n_cols} matrix",
            hint="work with the sparse .counts instead",
        )
        return self.counts.toarray().astype(np.int64, copy=False)

    def to_tokens(self) -> tuple[np.ndarray, np.ndarray]:
        """Expand the counts into one ``(row, col)`` pair per observation.

        Returns
        -------
        rows, cols : numpy.ndarray
            int64 arrays of length :attr:`total`; ``rows`` is sorted ascending.

        Raises
        ------
        ValueError
            If the two arrays would take more memory than :meth:`toarray` allows.

        Examples
        --------
        >>> from latentzoo.data import CoOccurrence
        >>> rows, cols = CoOccurrence([[2, 0, 1], [0, 1, 0]]).to_tokens()
        >>> rows
        array([0, 0, 0, 1])
        >>> cols
        array([0, 0, 2, 1])
        """
        csr = self.counts
        # Two int64 arrays of one entry per observation, plus the rows of the non-zeros.
        check_memory(
            16 * self.total + 8 * csr.nnz,
            "CoOccurrence.to_tokens",
            detail=f"for {self.total:,} tokens",
        )
        reps = csr.data.astype(np.int64, copy=False)
        nz_rows = np.repeat(np.arange(csr.shape[0], dtype=np.int64), np.diff(csr.indptr))
        rows = np.repeat(nz_rows, reps)
        cols = np.repeat(csr.indices.astype(np.int64), reps)
        return rows, cols

    # ------------------------------------------------------------------ resampling
    def _with_data(self, data: np.ndarray) -> CoOccurrence:
        """Same sparsity structure and labels, new cell values (zeros are dropped)."""
        csr = sp.csr_matrix(
            (
                data.astype(np.int64, copy=False),
                self.counts.indices.copy(),
                self.counts.indptr.copy(),
            ),
            shape=self.counts.shape,
        )
        return CoOccurrence._trusted(csr, self._row_labels, self._col_labels)

    def split(self, test_fraction, random_state=None) -> tuple[CoOccurrence, CoOccurrence]:
        """Split observations into train and test by binomial thinning.

        Every count is split independently: ``test_ij ~ Binomial(n_ij, test_fraction)`` and
        ``train_ij = n_ij - test_ij``. Thinning individual observations (rather than whole
        rows) lets a document seen in training be scored on its own held-out tokens, which
        is what held-out likelihood of latent-class models needs.

        Parameters
        ----------
        test_fraction : float
            Probability that an observation goes to the test part, in ``(0, 1)``.
        random_state : None, int or numpy.random.Generator, optional
            Seed or generator; equal seeds give identical splits.

        Returns
        -------
        train, test : CoOccurrence
            Same shape and labels as ``self``; ``train.counts + test.counts == self.counts``.
            Either part may hold no observations when ``self`` is tiny.

        Raises
        ------
        ValueError
            If ``test_fraction`` is not in the open interval ``(0, 1)``.

        Examples
        --------
        >>> from latentzoo.data import CoOccurrence
        >>> X = CoOccurrence([[20, 0, 10], [0, 30, 5]])
        >>> train, test = X.split(0.2, random_state=0)
        >>> train.total + test.total == X.total
        True
        """
        test_fraction = check_fraction(test_fraction)
        rng = _as_rng(random_state)
        data = self.counts.data.astype(np.int64, copy=False)
        test = rng.binomial(data, test_fraction)
        return self._with_data(data - test), self._with_data(test)

    def kfold(self, k, random_state=None) -> list[tuple[CoOccurrence, CoOccurrence]]:
        """Partition observations into ``k`` folds by multinomial thinning.

        Every count is distributed over the folds with equal probabilities,
        ``(f_ij1, ..., f_ijk) ~ Multinomial(n_ij, 1/k, ..., 1/k)``. Fold ``f`` is the test part
        of the ``f``-th pair and the remaining folds form its train part.

        Parameters
        ----------
        k : int
            Number of folds, at least 2.
        random_state : None, int or numpy.random.Generator, optional
            Seed or generator; equal seeds give identical folds.

        Returns
        -------
        list of (CoOccurrence, CoOccurrence)
            ``k`` pairs ``(train, test)``. The test parts sum exactly to ``self``.

        Raises
        ------
        ValueError
            If ``k`` is not an integer ``>= 2``.

        Examples
        --------
        >>> from latentzoo.data import CoOccurrence
        >>> X = CoOccurrence([[20, 0, 10], [0, 30, 5]])
        >>> folds = X.kfold(3, random_state=0)
        >>> sum(test.total for _, test in folds) == X.total
        True
        """
        if isinstance(k, bool) or not isinstance(k, numbers.Integral) or k < 2:
            raise ValueError(f"k must be an integer >= 2, got {k!r}")
        k = int(k)
        rng = _as_rng(random_state)
        data = self.counts.data.astype(np.int64, copy=False)
        draws = rng.multinomial(data, np.full(k, 1.0 / k))
        # Looping over the k folds (not the observations) is the intended granularity.
        return [
            (self._with_data(data - draws[:, f]), self._with_data(draws[:, f])) for f in range(k)
        ]

    # ------------------------------------------------------------------ selection
    def subset(self, rows=None, cols=None) -> CoOccurrence:
        """Restrict to some rows and/or columns, carrying labels along.

        Parameters
        ----------
        rows, cols : array_like of int or bool, optional
            Integer positions (negative values count from the end, order is kept) or a
            boolean mask of the full length. ``None`` keeps everything.

        Returns
        -------
        CoOccurrence
            The selected sub-matrix; it may hold no observations.

        Raises
        ------
        ValueError
            If an index is out of range, a mask has the wrong length, or the selection is
            empty.

        Examples
        --------
        >>> from latentzoo.data import CoOccurrence
        >>> X = CoOccurrence([[1, 2, 3], [4, 5, 6]], col_labels=["a", "b", "c"])
        >>> Y = X.subset(cols=[2, 0])
        >>> Y.col_labels
        array(['c', 'a'], dtype='<U1')
        >>> Y.toarray()
        array([[3, 1],
               [6, 4]])
        """
        row_idx = (
            np.arange(self.n_rows) if rows is None else _normalise_index(rows, self.n_rows, "rows")
        )
        col_idx = (
            np.arange(self.n_cols) if cols is None else _normalise_index(cols, self.n_cols, "cols")
        )
        if row_idx.size == 0 or col_idx.size == 0:
            raise ValueError(
                f"subset is empty (selects {row_idx.size} rows and {col_idx.size} columns)"
            )
        csr = sp.csr_matrix(self.counts[row_idx][:, col_idx], dtype=np.int64)
        csr.sum_duplicates()
        csr.sort_indices()
        row_labels = self._row_labels[row_idx]
        col_labels = self._col_labels[col_idx]
        row_labels.setflags(write=False)
        col_labels.setflags(write=False)
        return CoOccurrence._trusted(csr, row_labels, col_labels)

    def top_columns(self, n) -> np.ndarray:
        """Indices of the ``n`` columns with the largest totals.

        Ties are broken by column index (stable sort), so the result is deterministic.

        Parameters
        ----------
        n : int
            Number of columns to return (at most :attr:`n_cols` are returned).

        Returns
        -------
        numpy.ndarray
            int64 column indices, largest total first.

        Examples
        --------
        >>> from latentzoo.data import CoOccurrence
        >>> CoOccurrence([[1, 5, 2, 5]]).top_columns(3)
        array([1, 3, 2])
        """
        if isinstance(n, bool) or not isinstance(n, numbers.Integral) or n < 0:
            raise ValueError(f"n must be a non-negative integer, got {n!r}")
        return np.argsort(-self.col_totals, kind="stable")[: int(n)].astype(np.int64)

    # ------------------------------------------------------------------ constructors
    @classmethod
    def from_pairs(
        cls, x, y, shape=None, row_labels=None, col_labels=None, counts=None
    ) -> CoOccurrence:
        """Build counts from observed pairs ``(x_k, y_k)``; repeated pairs are summed.

        Parameters
        ----------
        x, y : array_like
            Equal-length 1-D arrays. Integer arrays are row/column positions. Any other
            array (e.g. strings) is treated as labels: the labels become the sorted unique
            values, or, if ``row_labels``/``col_labels`` is given, values are looked up in it.
            Each axis is handled independently.
        shape : tuple of int, optional
            ``(N, M)``. Defaults to the number of labels, or ``max index + 1``.
        row_labels, col_labels : sequence of str, optional
            Names of the rows/columns.
        counts : array_like, optional
            Weight of each pair (non-negative integers); defaults to 1 per pair.

        Returns
        -------
        CoOccurrence
            Entry ``[i, j]`` the summed weight of the pairs ``(i, j)``.

        Raises
        ------
        ValueError
            If lengths differ, an index is negative or outside ``shape``, a label is not
            among the given labels, or the resulting counts are invalid.

        Examples
        --------
        >>> from latentzoo.data import CoOccurrence
        >>> X = CoOccurrence.from_pairs([0, 1, 0], [2, 0, 2])
        >>> X.toarray()
        array([[0, 0, 2],
               [1, 0, 0]])
        >>> Y = CoOccurrence.from_pairs(["red", "big", "red"], ["car", "car", "house"])
        >>> Y.row_labels, Y.col_labels
        (array(['big', 'red'], dtype='<U3'), array(['car', 'house'], dtype='<U5'))
        """
        x = np.asarray(x)
        y = np.asarray(y)
        if x.ndim != 1 or y.ndim != 1:
            raise ValueError(f"x and y must be 1-D, got shapes {x.shape} and {y.shape}")
        if x.shape[0] != y.shape[0]:
            raise ValueError(
                f"x and y must have the same length, got {x.shape[0]} and {y.shape[0]}"
            )
        if shape is None:
            n_rows = n_cols = None
        else:
            if len(shape) != 2:
                raise ValueError(f"shape must have two entries, got {shape!r}")
            n_rows, n_cols = int(shape[0]), int(shape[1])
        rows, row_labels, n_rows = _encode_axis(x, row_labels, n_rows, "x", "rows")
        cols, col_labels, n_cols = _encode_axis(y, col_labels, n_cols, "y", "columns")
        if counts is None:
            weights = np.ones(x.shape[0], dtype=np.int64)
        else:
            weights = np.asarray(counts)
            if weights.shape != x.shape:
                raise ValueError(
                    f"counts has shape {weights.shape} but x and y have {x.shape[0]} entries"
                )
            if weights.dtype.kind not in "biuf":
                raise ValueError(f"counts must be numeric, got dtype {weights.dtype}")
        matrix = sp.coo_matrix((weights, (rows, cols)), shape=(n_rows, n_cols))
        return cls(matrix, row_labels=row_labels, col_labels=col_labels)

    @classmethod
    def from_documents(cls, documents, vocabulary=None) -> CoOccurrence:
        """Build a document-term count matrix from tokenised documents.

        Parameters
        ----------
        documents : sequence of sequence of str, or dict of str to sequence of str
            One token list per document. With a dict, its keys become the row labels;
            otherwise rows are labelled ``"doc0", "doc1", ...``.
        vocabulary : sequence of str, optional
            Column labels in the given order; tokens outside it are dropped. Defaults to the
            sorted unique tokens.

        Returns
        -------
        CoOccurrence
            Entry ``[d, w]`` the number of times word ``w`` occurs in document ``d``.

        Raises
        ------
        ValueError
            If a document is a bare string, the vocabulary has duplicates, or no token is
            left.

        Examples
        --------
        >>> from latentzoo.data import CoOccurrence
        >>> X = CoOccurrence.from_documents([["a", "b", "a"], ["c"]])
        >>> X.col_labels
        array(['a', 'b', 'c'], dtype='<U1')
        >>> X.toarray()
        array([[2, 1, 0],
               [0, 0, 1]])
        """
        if isinstance(documents, dict):
            names = np.asarray(list(documents.keys())).astype(str)
            docs = list(documents.values())
        else:
            docs = list(documents)
            names = np.char.add("doc", np.arange(len(docs)).astype(str))
        n_docs = len(docs)
        if n_docs == 0:
            raise ValueError("documents is empty")
        # A bare string would silently be split into characters; catch that per document.
        bare = [isinstance(d, str | bytes) for d in docs]
        if any(bare):
            k = bare.index(True)
            raise ValueError(f"documents[{k}] is a string; expected a sequence of tokens")
        lengths = np.fromiter((len(d) for d in docs), dtype=np.int64, count=n_docs)
        tokens = np.array(list(chain.from_iterable(docs)), dtype=str)
        doc_index = np.repeat(np.arange(n_docs, dtype=np.int64), lengths)
        if vocabulary is None:
            vocab, word_index = np.unique(tokens, return_inverse=True)
        else:
            vocab = np.asarray(vocabulary).astype(str)
            if vocab.ndim != 1:
                raise ValueError(f"vocabulary must be 1-D, got shape {vocab.shape}")
            if np.unique(vocab).size != vocab.size:
                raise ValueError("vocabulary contains duplicate entries")
            word_index, found = _lookup(tokens, vocab)
            doc_index, word_index = doc_index[found], word_index[found]
        matrix = sp.coo_matrix(
            (np.ones(word_index.shape[0], dtype=np.int64), (doc_index, word_index)),
            shape=(n_docs, vocab.shape[0]),
        )
        return cls(matrix, row_labels=names, col_labels=vocab)

    # ------------------------------------------------------------------ persistence
    def to_npz(self, path) -> None:
        """Save to a ``.npz`` file without pickling.

        Parameters
        ----------
        path : str or os.PathLike
            Target file; :func:`numpy.savez` appends ``.npz`` if missing.

        Examples
        --------
        >>> import os, tempfile
        >>> from latentzoo.data import CoOccurrence
        >>> X = CoOccurrence([[1, 0], [2, 3]])
        >>> path = os.path.join(tempfile.mkdtemp(), "x.npz")
        >>> X.to_npz(path)
        >>> CoOccurrence.from_npz(path) == X
        True
        """
        csr = self.counts
        np.savez(
            os.fspath(path),
            allow_pickle=False,
            format=np.array(_NPZ_FORMAT),
            data=csr.data.astype(np.int64, copy=False),
            indices=csr.indices.astype(np.int64, copy=False),
            indptr=csr.indptr.astype(np.int64, copy=False),
            shape=np.array(self.shape, dtype=np.int64),
            row_labels=np.asarray(self._row_labels, dtype=str),
            col_labels=np.asarray(self._col_labels, dtype=str),
        )

    @classmethod
    def from_npz(cls, path) -> CoOccurrence:
        """Load an object written by :meth:`to_npz` (validated like the constructor).

        Parameters
        ----------
        path : str or os.PathLike
            File written by :meth:`to_npz`.

        Returns
        -------
        CoOccurrence
            The counts and labels that were written.

        Raises
        ------
        ValueError
            If the file is not a readable ``.npz`` archive (damaged, truncated, of another format,
            or holding Python objects, which are never unpickled), lacks the expected arrays,
            has an inconsistent sparse structure (e.g. a column index outside the stored shape)
            or holds invalid counts. The message names the file.
        FileNotFoundError
            If there is no such file.

        Examples
        --------
        >>> import os, tempfile
        >>> from latentzoo.data import CoOccurrence
        >>> path = os.path.join(tempfile.mkdtemp(), "x.npz")
        >>> CoOccurrence([[4, 1]]).to_npz(path)
        >>> CoOccurrence.from_npz(path)
        CoOccurrence(1 x 2, 5 observations, 2 non-zeros)
        """
        name = os.fspath(path)
        arrays = _read_npz(name)
        matrix = _npz_matrix(arrays, name)
        try:
            return cls(matrix, row_labels=arrays["row_labels"], col_labels=arrays["col_labels"])
        except ValueError as exc:
            raise ValueError(f"{name}: {exc}") from None
