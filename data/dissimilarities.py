"""Validated dissimilarity matrices: ``N x N``, finite, non-negative, zero diagonal, symmetric.

:class:`Dissimilarities` is the container of the pairwise-clustering families. It implements the
:class:`~latentzoo.data.Dataset` protocol; ``split`` holds out items together with their rows
and columns, and the held-out part is a :class:`DissimilarityRows`: the held-out items compared
with every training item, which is what a held-out score of a pairwise model needs.

Dissimilarities are either **dense** (every pair observed, the matrix :attr:`Dissimilarities.D`)
or **sparse neighbourhoods** (only some pairs observed, Hofmann & Buhmann 1997, sec. 6.3: "only
a small fraction (<1%) of dissimilarities ... was actually processed, including all pairs of
adjoined blocks and a small random neighborhood"). Sparse data come from
:meth:`Dissimilarities.from_sparse` (the stored entries of a scipy sparse matrix are the observed
pairs) or :meth:`Dissimilarities.neighbourhood` (nearest and random partners of each item of dense
data), and are stored as a symmetric CSR matrix without diagonal, :attr:`Dissimilarities.pairs`:
``pairs.indptr``/``pairs.indices``/``pairs.data`` are the partners and dissimilarities of each
item, :attr:`Dissimilarities.degree` their number.
"""

from __future__ import annotations

import numbers
from dataclasses import dataclass

import numpy as np
import pandas as pd
import scipy.sparse as sp
from scipy.spatial.distance import pdist, squareform

from .checks import (
    as_matrix,
    as_rng,
    check_entries,
    check_random_state,
    check_square,
    check_vector,
    check_zero_diagonal,
    format_value,
    normalise_index,
    normalise_names,
)
from .dataset import RealMatrix, holdout_items

__all__ = ["DissimilarityRows", "Dissimilarities"]


class Dissimilarities(RealMatrix):
    """Dissimilarities ``D_ij`` between ``N`` items.

    Parameters
    ----------
    D : array_like, scipy.sparse matrix or pandas.DataFrame
        ``(N, N)`` finite, non-negative numbers with a zero diagonal. Asymmetric input is
        symmetrised as ``(D + D^T) / 2`` (the data contract of this package); :attr:`asymmetry` records
        ``max |D_ij - D_ji|`` of the input. A DataFrame's index gives default item names.
    labels : array_like, optional
        Class label of each item (length ``N``).
    item_names : sequence of str, optional
        Default to ``"0", "1", ...``.

    Raises
    ------
    ValueError
        If ``D`` is not 2-D, not square, empty, not numeric, holds NaN, inf or a negative
        value, has a non-zero diagonal entry, or if ``labels``/``item_names`` have the wrong
        length. The message names the offending entry, e.g. ``D[0, 2] = -1.0 is negative``.

    Notes
    -----
    A scipy sparse ``D`` is densified: its missing entries are dissimilarities **0**. To say
    that only the stored pairs are observed, use :meth:`from_sparse` instead (sparse
    neighbourhoods, Hofmann & Buhmann 1997, sec. 6.3), or :meth:`neighbourhood` to thin dense
    data. Sparse data have no :attr:`D`; they have :attr:`pairs` (symmetric CSR without diagonal)
    and :attr:`degree`; :attr:`is_sparse` tells the two apart.

    Examples
    --------
    >>> from latentzoo.data import Dissimilarities
    >>> D = Dissimilarities([[0, 1, 4], [3, 0, 2], [4, 2, 0]])
    >>> D
    Dissimilarities(3 items, symmetrised)
    >>> D.D
    array([[0., 2., 4.],
           [2., 0., 2.],
           [4., 2., 0.]])
    >>> Dissimilarities([[0.0, -1.0], [-1.0, 0.0]])
    Traceback (most recent call last):
    ...
    ValueError: D[0, 1] = -1.0 is negative
    """

    #: ArviZ dimension of the items; the second axis of ``D`` is ``"other_item"``.
    item_dim = "item"
    #: File formats ``latentzoo fit --data`` reads into this container.
    file_formats = ("csv",)
    #: Whether entry ``[i, j]`` and ``[j, i]`` are one value: input is symmetrised as
    #: ``(D + D^T) / 2``, so a corrupted entry must be corrupted on both sides.
    symmetric = True
    #: What :meth:`table_sizes` counts as the observations: the observed pairs.
    _observations = "n_pairs"

    def __init__(self, D, labels=None, item_names=None):
        if isinstance(D, pd.DataFrame) and item_names is None:
            item_names = np.asarray(D.index).astype(str)
        D = as_matrix(D, "D")
        if sp.issparse(D):
            if D.dtype.kind not in "biuf":
                raise ValueError(f"D must be numeric (bool, integer or float), got dtype {D.dtype}")
            D = D.toarray()
        check_square(D.shape, "D")
        check_entries(D, "D", nonnegative=True)
        check_zero_diagonal(D, "D")
        D = np.asarray(D, dtype=np.float64)
        asymmetry = float(np.max(np.abs(D - D.T)))
        # (a + a) / 2 == a exactly, so symmetric input is stored unchanged.
        matrix = (D + D.T) / 2 if asymmetry > 0 else D.copy()
        n = matrix.shape[0]
        self._D = matrix
        self._D.setflags(write=False)
        self._asymmetry = asymmetry
        self._labels = None if labels is None else check_vector(labels, n, "labels", "D", "items")
        self._item_names = normalise_names(item_names, n, "item_names", "D", "items")
        self._pairs = None

    @classmethod
    def _trusted(cls, matrix, labels, item_names, asymmetry=0.0, pairs=None) -> Dissimilarities:
        # Exactly one of ``matrix`` (dense) and ``pairs`` (canonical symmetric CSR) is given.
        obj = cls.__new__(cls)
        if matrix is not None:
            matrix.setflags(write=False)
        if pairs is not None:
            _freeze(pairs)
        if labels is not None:
            labels.setflags(write=False)
        item_names.setflags(write=False)
        obj._D, obj._labels, obj._item_names, obj._asymmetry = matrix, labels, item_names, asymmetry
        obj._pairs = pairs
        return obj

    @classmethod
    def from_sparse(cls, pairs, labels=None, item_names=None, *, allow_isolated: bool = False):
        """Sparse neighbourhoods: only the stored entries of ``pairs`` are observed.

        The normalised pairwise-clustering cost (Hofmann & Buhmann 1997, eq. (16)) can be
        evaluated on a subset of the pairs; sec. 6.3 processes "only a small fraction (<1%)" of
        the dissimilarities of a texture image. A stored entry ``pairs[i, k]`` says that the
        pair ``{i, k}`` is observed with dissimilarity ``pairs[i, k]``, **also when it is an
        explicit zero**; a missing entry says that the pair is unknown (not that it is 0, as
        in ``Dissimilarities(sparse_matrix)``).

        Parameters
        ----------
        pairs : scipy.sparse matrix or array
            ``(N, N)`` with finite, non-negative stored values. A pair may be given once, as
            ``(i, k)`` or ``(k, i)``, or twice; given twice it is symmetrised as
            ``(D_ik + D_ki) / 2`` like dense input (:attr:`asymmetry` records the largest
            ``|D_ik - D_ki|``). Stored diagonal entries must be 0 and are dropped.
        labels : array_like, optional
            Class label of each item (length ``N``).
        item_names : sequence of str, optional
            Default to ``"0", "1", ...``.
        allow_isolated : bool, default False
            Accept items without any observed pair. They carry no information about the
            clustering, so by default one is reported as a likely mistake.

        Returns
        -------
        Dissimilarities
            Sparse (:attr:`is_sparse`): :attr:`pairs` is a canonical symmetric CSR matrix
            (sorted indices, no duplicates, no diagonal, explicit zeros kept) and
            :attr:`degree` the number of partners of each item.

        Raises
        ------
        ValueError
            If ``pairs`` is not a scipy sparse matrix, not square, empty or not numeric; if a
            stored value is NaN, inf or negative, a diagonal value is not 0, an entry is stored
            twice, no pair is observed, an item has no observed pair (unless
            ``allow_isolated``), or ``labels``/``item_names`` have the wrong length. The
            message names the entry, e.g. ``pairs[0, 2] = -1.0 is negative``.

        Examples
        --------
        >>> import scipy.sparse as sp
        >>> from latentzoo.data import Dissimilarities
        >>> known = sp.coo_matrix(([2.0, 0.0, 5.0], ([0, 1, 3], [1, 2, 2])), shape=(4, 4))
        >>> data = Dissimilarities.from_sparse(known, item_names=list("abcd"))
        >>> data
        Dissimilarities(4 items, sparse: 3 of 6 pairs)
        >>> data.degree.tolist(), data.pairs.toarray().tolist()[2]
        ([1, 2, 2, 1], [0.0, 0.0, 0.0, 5.0])
        >>> lonely = sp.coo_matrix(([1.0], ([0], [1])), shape=(3, 3))
        >>> Dissimilarities.from_sparse(lonely)  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        ValueError: item 2 ('2') has no observed pair: row and column 2 of pairs are empty ...
        """
        if not sp.issparse(pairs):
            raise ValueError(
                "pairs must be a scipy.sparse matrix whose stored entries are the observed pairs, "
                f"got {type(pairs).__name__}; use Dissimilarities(D) for a dense matrix"
            )
        pairs = as_matrix(pairs, "pairs")
        check_square(pairs.shape, "pairs")
        if pairs.dtype.kind not in "biuf":
            raise ValueError(
                f"pairs must be numeric (bool, integer or float), got dtype {pairs.dtype}"
            )
        n = int(pairs.shape[0])
        labels = None if labels is None else check_vector(labels, n, "labels", "pairs", "items")
        item_names = normalise_names(item_names, n, "item_names", "pairs", "items")
        # COO keeps duplicates and explicit zeros as given: both matter here.
        coo = sp.coo_matrix(pairs)
        rows, cols = coo.row.astype(np.int64), coo.col.astype(np.int64)
        values = np.asarray(coo.data)
        check_entries(values, "pairs", (n, n), rows, cols, nonnegative=True)
        values = values.astype(np.float64)
        key = rows * n + cols
        order = np.argsort(key, kind="stable")
        repeated = np.flatnonzero(key[order][1:] == key[order][:-1])
        if repeated.size:
            k = order[repeated[0]]
            raise ValueError(
                f"pairs[{rows[k]}, {cols[k]}] is stored more than once (each pair once, or "
                "once in each direction)"
            )
        diagonal = rows == cols
        bad = diagonal & (values != 0)
        if bad.any():
            k = order[np.argmax(bad[order])]
            raise ValueError(
                f"pairs[{rows[k]}, {rows[k]}] = {format_value(values[k])} is not zero "
                "(the diagonal must be zero)"
            )
        keep = ~diagonal
        rows, cols, values = rows[keep], cols[keep], values[keep]
        if rows.size == 0:
            raise ValueError("pairs has no off-diagonal entry: no pair is observed")
        pair_key = np.minimum(rows, cols) * n + np.maximum(rows, cols)
        unique, inverse, count = np.unique(pair_key, return_inverse=True, return_counts=True)
        # Summed then halved exactly as (D + D^T) / 2 of dense input (a + b == b + a in IEEE).
        total = np.bincount(inverse, weights=values, minlength=unique.size)
        mean = np.where(count == 2, total / 2, total)
        # A pair given in both directions sits in two adjacent places once sorted.
        order = np.argsort(pair_key, kind="stable")
        sorted_keys, sorted_values = pair_key[order], values[order]
        twice = sorted_keys[1:] == sorted_keys[:-1]
        asymmetry = float(
            np.max(np.abs(sorted_values[1:][twice] - sorted_values[:-1][twice]), initial=0.0)
        )
        matrix = _symmetric_csr(n, unique // n, unique % n, mean)
        if not allow_isolated:
            _check_connected(matrix, item_names)
        return cls._trusted(None, labels, item_names, asymmetry, pairs=matrix)

    def neighbourhood(self, n_nearest: int, n_random: int = 0, random_state=None):
        """Sparse neighbourhoods of dense data: nearest and random partners of every item.

        Hofmann & Buhmann (1997, sec. 6.3) keep, for each image block, "all pairs of adjoined
        blocks and a small random neighborhood". Here each item keeps its ``n_nearest``
        smallest dissimilarities (ties: lower index first) and ``n_random`` further partners
        drawn uniformly without replacement; a pair is observed when either of its items
        chose it, so degrees are at least ``n_nearest + n_random``.

        Parameters
        ----------
        n_nearest : int
            Nearest partners kept per item, ``0 <= n_nearest <= N - 1``.
        n_random : int, default 0
            Random further partners per item; ``n_nearest + n_random`` must lie in
            ``[1, N - 1]``.
        random_state : None, int or numpy.random.Generator, optional
            Seeds the random partners (unused when ``n_random == 0``).

        Returns
        -------
        Dissimilarities
            Sparse (:meth:`from_sparse` semantics) with the same item names and labels; the
            observed values are those of :attr:`D`, bit for bit.

        Raises
        ------
        ValueError
            If ``n_nearest``/``n_random`` are not non-negative integers in range, if
            ``random_state`` is invalid, or if the data are already sparse.

        Examples
        --------
        >>> import numpy as np
        >>> from latentzoo.data import Dissimilarities
        >>> points = np.array([0.0, 1.0, 3.0, 7.0])
        >>> data = Dissimilarities(np.abs(points[:, None] - points[None, :]))
        >>> near = data.neighbourhood(1)
        >>> near
        Dissimilarities(4 items, sparse: 3 of 6 pairs)
        >>> near.pairs.toarray()
        array([[0., 1., 0., 0.],
               [1., 0., 2., 0.],
               [0., 2., 0., 4.],
               [0., 0., 4., 0.]])
        """
        if self.is_sparse:
            raise ValueError(
                "neighbourhood needs dense dissimilarities; these are already sparse "
                f"({self.n_pairs} of {self._all_pairs()} pairs observed)"
            )
        n = self.n_items
        n_nearest = _check_count(n_nearest, "n_nearest", n - 1)
        n_random = _check_count(n_random, "n_random", n - 1)
        if not 1 <= n_nearest + n_random <= n - 1:
            raise ValueError(
                f"n_nearest + n_random must lie in [1, {n - 1}] (the other items), got "
                f"{n_nearest} + {n_random}"
            )
        # Checked even when unused, so that a typo is not silently accepted.
        random_state = check_random_state(random_state)
        rng = as_rng(random_state) if n_random else None
        items = np.arange(n)
        chosen = np.zeros((n, n), dtype=bool)
        if n_nearest:
            masked = self._D.copy()
            masked[items, items] = np.inf
            nearest = np.argsort(masked, axis=1, kind="stable")[:, :n_nearest]
            chosen[items[:, None], nearest] = True
        if n_random:
            # Uniform random keys; the n_random smallest among the items not yet chosen.
            keys = rng.random((n, n))
            keys[chosen] = np.inf
            keys[items, items] = np.inf
            extra = np.argpartition(keys, n_random - 1, axis=1)[:, :n_random]
            chosen[items[:, None], extra] = True
        chosen |= chosen.T
        first, second = np.nonzero(np.triu(chosen, k=1))
        matrix = _symmetric_csr(n, first, second, self._D[first, second])
        labels = None if self._labels is None else self._labels.copy()
        return Dissimilarities._trusted(
            None, labels, self._item_names.copy(), self._asymmetry, pairs=matrix
        )

    @classmethod
    def from_features(cls, X, metric: str = "euclidean", labels=None, item_names=None):
        """Pairwise dissimilarities of the rows of ``X`` (:func:`scipy.spatial.distance.pdist`).

        Parameters
        ----------
        X : array_like or Features
            ``(N, D)`` data; a :class:`~latentzoo.data.Features` also gives labels and names.
        metric : str, default "euclidean"
            Any metric of :func:`~scipy.spatial.distance.pdist` (``"sqeuclidean"``,
            ``"cityblock"``, ``"hamming"``, ``"jaccard"``, ...).

        Examples
        --------
        >>> from latentzoo.data import Dissimilarities
        >>> Dissimilarities.from_features([[0, 0], [3, 4]]).D
        array([[0., 5.],
               [5., 0.]])
        """
        from .features import Features

        features = Features.coerce(X)
        labels = features.labels if labels is None else labels
        item_names = features.item_names if item_names is None else item_names
        return cls(
            squareform(pdist(features.X, metric=metric)), labels=labels, item_names=item_names
        )

    # ------------------------------------------------------------------ properties
    @property
    def D(self) -> np.ndarray:
        """The symmetric ``(N, N)`` float64 matrix (read-only); dense data only.

        Raises
        ------
        ValueError
            For sparse neighbourhoods (:attr:`is_sparse`), whose unobserved pairs have no
            value: use :attr:`pairs`.
        """
        if self._D is None:
            raise ValueError(
                "D is not available for sparse dissimilarities "
                f"({self.n_pairs} of {self._all_pairs()} pairs observed): use .pairs"
            )
        return self._D

    @property
    def shape(self) -> tuple[int, int]:
        """``(N, N)``."""
        if self._D is None:
            n = int(self._item_names.shape[0])
            return (n, n)
        return (int(self._D.shape[0]), int(self._D.shape[1]))

    @property
    def is_sparse(self) -> bool:
        """Whether only some pairs are observed (:meth:`from_sparse`, :meth:`neighbourhood`)."""
        return self._pairs is not None

    @property
    def pairs(self) -> sp.csr_matrix:
        """The observed pairs as a symmetric ``(N, N)`` CSR matrix without diagonal.

        Canonical (sorted indices, no duplicates) with explicit zeros kept: the stored entries
        of row ``i`` (``indices[indptr[i]:indptr[i + 1]]``, values in ``data``) are exactly the
        observed partners of item ``i``. Its arrays are read-only. For dense data every
        off-diagonal pair is observed and the matrix is built on each call (``O(N^2)``).

        Examples
        --------
        >>> from latentzoo.data import Dissimilarities
        >>> pairs = Dissimilarities([[0, 1, 0], [1, 0, 3], [0, 3, 0]]).pairs
        >>> pairs.indptr.tolist(), pairs.indices.tolist(), pairs.data.tolist()
        ([0, 2, 4, 6], [1, 2, 0, 2, 0, 1], [1.0, 0.0, 1.0, 3.0, 0.0, 3.0])
        """
        if self._pairs is not None:
            return self._pairs
        n = self.n_items
        first, second = np.triu_indices(n, k=1)
        return _freeze(_symmetric_csr(n, first, second, self._D[first, second]))

    @property
    def degree(self) -> np.ndarray:
        """Number of observed partners of each item (int64; ``N - 1`` each for dense data).

        A pairwise-clustering kernel normalising by the observed pairs of an item must guard
        items of degree 0, which :meth:`from_sparse` accepts with ``allow_isolated=True`` and
        :meth:`subset`/:meth:`split` may leave behind.

        Examples
        --------
        >>> import numpy as np
        >>> from latentzoo.data import Dissimilarities
        >>> Dissimilarities(1 - np.eye(3)).degree
        array([2, 2, 2])
        """
        if self._pairs is None:
            return np.full(self.n_items, self.n_items - 1, dtype=np.int64)
        return np.diff(self._pairs.indptr).astype(np.int64)

    @property
    def n_pairs(self) -> int:
        """Number of observed unordered pairs ``{i, k}``, ``i != k`` (``N (N - 1) / 2`` if dense).

        Examples
        --------
        >>> import numpy as np
        >>> from latentzoo.data import Dissimilarities
        >>> Dissimilarities(1 - np.eye(4)).n_pairs
        6
        """
        if self._pairs is None:
            return self._all_pairs()
        return int(self._pairs.nnz // 2)

    def _all_pairs(self) -> int:
        return self.n_items * (self.n_items - 1) // 2

    @property
    def asymmetry(self) -> float:
        """``max |D_ij - D_ji|`` of the input before symmetrisation (0 for symmetric input)."""
        return self._asymmetry

    def condensed(self) -> np.ndarray:
        """The upper triangle as a condensed vector (the input of ``scipy`` linkage).

        Examples
        --------
        >>> from latentzoo.data import Dissimilarities
        >>> Dissimilarities([[0, 1, 2], [1, 0, 3], [2, 3, 0]]).condensed()
        array([1., 2., 3.])
        """
        return squareform(self.D, checks=False)

    # ------------------------------------------------------------------ Dataset protocol
    def coords(self) -> dict[str, list]:
        """ArviZ coordinates: ``{"item": names, "other_item": names}``.

        Sparse data have ``{"item": names, "pair": [0, 1, ...]}`` instead (see
        :meth:`observed_data`).

        Examples
        --------
        >>> from latentzoo.data import Dissimilarities
        >>> Dissimilarities([[0, 1], [1, 0]], item_names=["a", "b"]).coords()
        {'item': ['a', 'b'], 'other_item': ['a', 'b']}
        """
        names = self._item_names.tolist()
        if self._pairs is not None:
            return {"item": names, "pair": list(range(self.n_pairs))}
        return {"item": names, "other_item": list(names)}

    def observed_data(self) -> dict[str, tuple[tuple[str, ...], np.ndarray]]:
        """Content of the ``observed_data`` group: ``{"D": (("item", "other_item"), D)}``.

        Sparse data give the observed pairs ``i < k`` in row-major order instead:
        ``{"D": (("pair",), values), "pair_item": (("pair",), i),
        "pair_other_item": (("pair",), k)}``.

        Examples
        --------
        >>> from latentzoo.data import Dissimilarities
        >>> dims, D = Dissimilarities([[0, 1], [1, 0]]).observed_data()["D"]
        >>> dims, D.shape
        (('item', 'other_item'), (2, 2))
        """
        if self._pairs is not None:
            first, second, values = _upper_pairs(self._pairs)
            return {
                "D": (("pair",), values),
                "pair_item": (("pair",), first),
                "pair_other_item": (("pair",), second),
            }
        return {"D": (("item", "other_item"), self._D)}

    def subset(self, items) -> Dissimilarities:
        """The sub-matrix of the items at ``items`` (rows and columns), labels kept.

        Examples
        --------
        >>> from latentzoo.data import Dissimilarities
        >>> D = Dissimilarities([[0, 1, 2], [1, 0, 3], [2, 3, 0]], item_names=list("abc"))
        >>> part = D.subset([2, 0])
        >>> part.item_names.tolist(), part.D.tolist()
        (['c', 'a'], [[0.0, 2.0], [2.0, 0.0]])
        """
        index = normalise_index(items, self.n_items, "items")
        if index.size == 0:
            raise ValueError("subset is empty (selects 0 items)")
        labels = None if self._labels is None else self._labels[index]
        if self._pairs is not None:
            # Items may be left without partners here (see degree); no diagonal can appear,
            # since a repeated item's pair with itself is not stored.
            pairs = self._pairs[index][:, index].sorted_indices()
            return Dissimilarities._trusted(
                None, labels, self._item_names[index], pairs=sp.csr_matrix(pairs)
            )
        return Dissimilarities._trusted(
            self._D[np.ix_(index, index)], labels, self._item_names[index]
        )

    def split(self, test_fraction, random_state=None) -> tuple[Dissimilarities, DissimilarityRows]:
        """Hold out items with their rows and columns: ``(train, test)``.

        ``round(test_fraction * N)`` items (at least one, at most ``N - 1``) are drawn uniformly
        without replacement. ``train`` is the :class:`Dissimilarities` of the kept items among
        themselves; ``test`` is a :class:`DissimilarityRows` holding the held-out items'
        dissimilarities to **all training items** (``D[test][:, train]``, shape
        ``(n_test, n_train)``): the information a model fitted on ``train`` can use to place
        a new item. The dissimilarities among held-out items are not part of either.

        For sparse data both parts are sparse: ``test.D`` is a CSR matrix of the observed pairs
        between held-out and training items, and training items whose partners were all held
        out are kept with degree 0.

        Examples
        --------
        >>> import numpy as np
        >>> from latentzoo.data import Dissimilarities
        >>> points = np.arange(5.0)
        >>> D = Dissimilarities(np.abs(points[:, None] - points[None, :]))
        >>> train, test = D.split(0.4, random_state=0)
        >>> train.n_items, test.D.shape, test.reference_names.tolist() == train.item_names.tolist()
        (3, (2, 3), True)
        """
        train, test = holdout_items(self.n_items, test_fraction, random_state)
        labels = None if self._labels is None else self._labels[test]
        if self._pairs is not None:
            held_out = self._pairs[test][:, train].sorted_indices()
        else:
            held_out = self._D[np.ix_(test, train)]
        rows = DissimilarityRows(
            D=held_out,
            item_names=self._item_names[test],
            reference_names=self._item_names[train],
            labels=labels,
        )
        return self.subset(train), rows

    def toarray(self) -> np.ndarray:
        """The dissimilarities as a dense array (:attr:`D`; dense data only).

        Examples
        --------
        >>> Dissimilarities([[0, 1], [1, 0]]).toarray()
        array([[0., 1.],
               [1., 0.]])
        """
        return np.asarray(self.D)

    def with_names(self, item_names, column_names=None) -> Dissimilarities:
        """The same dissimilarities with items named ``item_names`` (the columns are the items:
        ``column_names`` is ignored).

        Examples
        --------
        >>> Dissimilarities([[0, 1], [1, 0]]).with_names(["a", "b"]).item_names.tolist()
        ['a', 'b']
        """
        return Dissimilarities(self.D, labels=self.labels, item_names=item_names)

    def top_centred_eigenvalue(self) -> float:
        """``lambda_max(-J D J) / N`` (``J`` the centring matrix; 0 if negative): classical
        scaling's leading eigenvalue per item (Torgerson 1952). Dense below 300 items, else
        Lanczos on ``-J D J v`` computed in two ``O(N^2)`` products, ``J D J`` never formed.

        Examples
        --------
        >>> from latentzoo.data import Dissimilarities
        >>> Dissimilarities.from_features([[-1.0, 0.0], [1.0, 0.0]], "sqeuclidean").top_centred_eigenvalue()
        2.0
        """
        D = self.D
        n = D.shape[0]
        means = D.mean(axis=0)
        grand = means.mean()
        if n <= 300:
            B = D - means[None, :] - means[:, None] + grand
            return float(max(np.linalg.eigvalsh(-B)[-1], 0.0) / n)
        from scipy.sparse.linalg import LinearOperator, eigsh

        def centred(v):
            # -J D J v without forming J D J: two O(N^2) products at most.
            v = np.ravel(v)
            w = v - v.mean()
            dw = D @ w
            return -(dw - dw.mean())

        operator = LinearOperator((n, n), matvec=centred, dtype=np.float64)
        top = eigsh(operator, k=1, which="LA", v0=np.ones(n) / np.sqrt(n) + np.arange(n) / n**2,
                    return_eigenvectors=False)  # fmt: skip
        return float(max(top[0], 0.0) / n)

    def copy(self) -> Dissimilarities:
        """An independent copy."""
        labels = None if self._labels is None else self._labels.copy()
        if self._pairs is not None:
            return Dissimilarities._trusted(
                None, labels, self._item_names.copy(), self._asymmetry, pairs=self._pairs.copy()
            )
        return Dissimilarities._trusted(
            self._D.copy(), labels, self._item_names.copy(), self._asymmetry
        )

    # ------------------------------------------------------------------ dunder
    def __repr__(self) -> str:
        sparse = ""
        if self._pairs is not None:
            sparse = f", sparse: {self.n_pairs} of {self._all_pairs()} pairs"
        note = ", symmetrised" if self._asymmetry > 0 else ""
        return f"Dissimilarities({self.n_items} items{sparse}{note}{self._classes_note()})"

    def __eq__(self, other):
        if not isinstance(other, Dissimilarities):
            return NotImplemented
        if self.is_sparse != other.is_sparse or not self._same_items(other):
            return False
        if self._pairs is not None:
            return all(
                np.array_equal(getattr(self._pairs, part), getattr(other._pairs, part))
                for part in ("indptr", "indices", "data")
            )
        return bool(np.array_equal(self._D, other._D))

    __hash__ = None


@dataclass(frozen=True, eq=False, repr=False)
class DissimilarityRows:
    """Held-out items compared with reference (training) items: the test part of a split.

    Attributes
    ----------
    D : numpy.ndarray or scipy.sparse.csr_matrix
        ``(n_items, n_reference)`` dissimilarities of each held-out item to each reference item;
        for sparse data (a split of :meth:`Dissimilarities.from_sparse` data), a CSR matrix
        whose stored entries are the observed pairs.
    item_names : numpy.ndarray
        Names of the held-out items (rows).
    reference_names : numpy.ndarray
        Names of the reference items (columns): the items of the training part, in its order.
    labels : numpy.ndarray or None
        Class labels of the held-out items.

    Examples
    --------
    >>> import numpy as np
    >>> from latentzoo.data import Dissimilarities
    >>> _, test = Dissimilarities(np.ones((4, 4)) - np.eye(4)).split(0.25, random_state=0)
    >>> test
    DissimilarityRows(1 held-out items x 3 reference items)
    >>> test.observed_data()["D"][0]
    ('item', 'reference')
    """

    D: np.ndarray
    item_names: np.ndarray
    reference_names: np.ndarray
    labels: np.ndarray | None = None

    def __post_init__(self):
        # Own read-only copies, so that neither side can change the other's arrays.
        for field in ("D", "item_names", "reference_names", "labels"):
            value = getattr(self, field)
            if value is not None:
                if sp.issparse(value):
                    value = _freeze(sp.csr_matrix(value, copy=True))
                else:
                    value = np.array(value)
                    value.setflags(write=False)
                object.__setattr__(self, field, value)

    #: ArviZ dimension of the held-out items; the columns are ``"reference"``.
    item_dim = "item"

    @property
    def n_items(self) -> int:
        """Number of held-out items."""
        return int(self.D.shape[0])

    @property
    def n_reference(self) -> int:
        """Number of reference (training) items."""
        return int(self.D.shape[1])

    @property
    def is_sparse(self) -> bool:
        """Whether :attr:`D` holds only the observed pairs (CSR)."""
        return sp.issparse(self.D)

    def coords(self) -> dict[str, list]:
        """``{"item": held-out names, "reference": reference names}`` (and ``"pair"`` if sparse)."""
        coords = {"item": self.item_names.tolist(), "reference": self.reference_names.tolist()}
        if self.is_sparse:
            coords["pair"] = list(range(int(self.D.nnz)))
        return coords

    def observed_data(self) -> dict[str, tuple[tuple[str, ...], np.ndarray]]:
        """``{"D": (("item", "reference"), D)}``; sparse: ``D``, ``pair_item``,
        ``pair_reference`` along ``"pair"`` (the stored entries in row-major order)."""
        if self.is_sparse:
            coo = self.D.tocoo()
            return {
                "D": (("pair",), np.asarray(coo.data)),
                "pair_item": (("pair",), coo.row.astype(np.int64)),
                "pair_reference": (("pair",), coo.col.astype(np.int64)),
            }
        return {"D": (("item", "reference"), self.D)}

    def subset(self, items) -> DissimilarityRows:
        """The held-out items at ``items`` (rows), against the same reference items."""
        index = normalise_index(items, self.n_items, "items")
        if index.size == 0:
            raise ValueError("subset is empty (selects 0 items)")
        return DissimilarityRows(
            D=self.D[index],
            item_names=self.item_names[index],
            reference_names=self.reference_names,
            labels=None if self.labels is None else self.labels[index],
        )

    def __repr__(self) -> str:
        return (
            f"DissimilarityRows({self.n_items} held-out items x {self.n_reference} reference items)"
        )


# ---------------------------------------------------------------- sparse helpers


def _freeze(matrix):
    """Make the arrays of a CSR matrix read-only (returns it)."""
    for part in (matrix.data, matrix.indices, matrix.indptr):
        part.setflags(write=False)
    return matrix


def _symmetric_csr(n: int, first, second, values) -> sp.csr_matrix:
    """Canonical symmetric CSR from the distinct pairs ``first < second`` and their values."""
    rows = np.concatenate([first, second]).astype(np.int64)
    cols = np.concatenate([second, first]).astype(np.int64)
    data = np.concatenate([values, values]).astype(np.float64)
    order = np.lexsort((cols, rows))
    indptr = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(np.bincount(rows, minlength=n), out=indptr[1:])
    # Built from its arrays: scipy's own conversions would drop explicit zeros (observed 0s).
    matrix = sp.csr_matrix((data[order], cols[order], indptr), shape=(n, n))
    matrix.has_sorted_indices = True
    return matrix


def _upper_pairs(matrix) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(i, k, D_ik)`` of the stored pairs ``i < k`` of a symmetric CSR, row-major."""
    rows = np.repeat(np.arange(matrix.shape[0], dtype=np.int64), np.diff(matrix.indptr))
    cols = np.asarray(matrix.indices, dtype=np.int64)
    upper = rows < cols
    return rows[upper], cols[upper], np.asarray(matrix.data)[upper]


def _check_connected(matrix, item_names) -> None:
    isolated = np.flatnonzero(np.diff(matrix.indptr) == 0)
    if isolated.size:
        i = int(isolated[0])
        raise ValueError(
            f"item {i} ({str(item_names[i])!r}) has no observed pair: row and column {i} of pairs "
            "are empty (pass allow_isolated=True to accept it)"
        )


def _check_count(value, name: str, largest: int) -> int:
    if (
        isinstance(value, bool)
        or not isinstance(value, numbers.Integral)
        or not 0 <= value <= largest
    ):
        raise ValueError(f"{name} must be an integer in [0, {largest}], got {value!r}")
    return int(value)
