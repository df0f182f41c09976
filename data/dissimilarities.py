"""Validated dissimilarity matrices: ``N x N``, finite, non-negative, zero diagonal, symmetric.

:class:`Dissimilarities` is the container of the pairwise-clustering families. It implements the
:class:`~latentzoo.data.Dataset` protocol; ``split`` holds out items together with their rows
and columns, and the held-out part is a :class:`DissimilarityRows`: the held-out items compared
with every training item, which is what a held-out score of a pairwise model needs.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd
import scipy.sparse as sp
from scipy.spatial.distance import pdist, squareform

from .checks import (
    as_matrix,
    check_entries,
    check_square,
    check_vector,
    check_zero_diagonal,
    normalise_index,
    normalise_names,
)
from .dataset import holdout_items

__all__ = ["DissimilarityRows", "Dissimilarities"]


class Dissimilarities:
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

    @classmethod
    def _trusted(cls, matrix, labels, item_names, asymmetry=0.0) -> Dissimilarities:
        obj = cls.__new__(cls)
        matrix.setflags(write=False)
        if labels is not None:
            labels.setflags(write=False)
        item_names.setflags(write=False)
        obj._D, obj._labels, obj._item_names, obj._asymmetry = matrix, labels, item_names, asymmetry
        return obj

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

        if isinstance(X, Features):
            labels = X.labels if labels is None else labels
            item_names = X.item_names if item_names is None else item_names
            X = X.X
        else:
            X = Features(X).X
        return cls(squareform(pdist(X, metric=metric)), labels=labels, item_names=item_names)

    # ------------------------------------------------------------------ properties
    @property
    def D(self) -> np.ndarray:
        """The symmetric ``(N, N)`` float64 matrix (read-only)."""
        return self._D

    @property
    def shape(self) -> tuple[int, int]:
        """``(N, N)``."""
        return (int(self._D.shape[0]), int(self._D.shape[1]))

    @property
    def n_items(self) -> int:
        """Number of items ``N``."""
        return self.shape[0]

    @property
    def asymmetry(self) -> float:
        """``max |D_ij - D_ji|`` of the input before symmetrisation (0 for symmetric input)."""
        return self._asymmetry

    @property
    def labels(self) -> np.ndarray | None:
        """Read-only class labels of the items, or ``None``."""
        return self._labels

    @property
    def item_names(self) -> np.ndarray:
        """Read-only unicode names of the items."""
        return self._item_names

    def condensed(self) -> np.ndarray:
        """The upper triangle as a condensed vector (the input of ``scipy`` linkage).

        Examples
        --------
        >>> from latentzoo.data import Dissimilarities
        >>> Dissimilarities([[0, 1, 2], [1, 0, 3], [2, 3, 0]]).condensed()
        array([1., 2., 3.])
        """
        return squareform(self._D, checks=False)

    # ------------------------------------------------------------------ Dataset protocol
    def coords(self) -> dict[str, list]:
        """ArviZ coordinates: ``{"item": names, "other_item": names}``.

        Examples
        --------
        >>> from latentzoo.data import Dissimilarities
        >>> Dissimilarities([[0, 1], [1, 0]], item_names=["a", "b"]).coords()
        {'item': ['a', 'b'], 'other_item': ['a', 'b']}
        """
        names = self._item_names.tolist()
        return {"item": names, "other_item": list(names)}

    def observed_data(self) -> dict[str, tuple[tuple[str, ...], np.ndarray]]:
        """Content of the ``observed_data`` group: ``{"D": (("item", "other_item"), D)}``.

        Examples
        --------
        >>> from latentzoo.data import Dissimilarities
        >>> dims, D = Dissimilarities([[0, 1], [1, 0]]).observed_data()["D"]
        >>> dims, D.shape
        (('item', 'other_item'), (2, 2))
        """
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
        rows = DissimilarityRows(
            D=self._D[np.ix_(test, train)],
            item_names=self._item_names[test],
            reference_names=self._item_names[train],
            labels=labels,
        )
        return self.subset(train), rows

    def copy(self) -> Dissimilarities:
        """An independent copy."""
        labels = None if self._labels is None else self._labels.copy()
        return Dissimilarities._trusted(
            self._D.copy(), labels, self._item_names.copy(), self._asymmetry
        )

    # ------------------------------------------------------------------ dunder
    def __repr__(self) -> str:
        note = ", symmetrised" if self._asymmetry > 0 else ""
        classes = ""
        if self._labels is not None:
            classes = f", {len(np.unique(self._labels.astype(str)))} classes"
        return f"Dissimilarities({self.n_items} items{note}{classes})"

    def __eq__(self, other):
        if not isinstance(other, Dissimilarities):
            return NotImplemented
        same_labels = (self._labels is None and other._labels is None) or (
            self._labels is not None
            and other._labels is not None
            and np.array_equal(self._labels, other._labels)
        )
        return bool(
            same_labels
            and self.shape == other.shape
            and np.array_equal(self._item_names, other._item_names)
            and np.array_equal(self._D, other._D)
        )

    __hash__ = None


@dataclass(frozen=True, eq=False, repr=False)
class DissimilarityRows:
    """Held-out items compared with reference (training) items: the test part of a split.

    Attributes
    ----------
    D : numpy.ndarray
        ``(n_items, n_reference)`` dissimilarities of each held-out item to each reference item.
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

    def coords(self) -> dict[str, list]:
        """``{"item": held-out names, "reference": reference names}``."""
        return {"item": self.item_names.tolist(), "reference": self.reference_names.tolist()}

    def observed_data(self) -> dict[str, tuple[tuple[str, ...], np.ndarray]]:
        """``{"D": (("item", "reference"), D)}``."""
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
