"""The :class:`Dataset` protocol: what every data container of :mod:`latentzoo.data` provides.

Models declare which container they take (:class:`~latentzoo.data.CoOccurrence`,
:class:`~latentzoo.data.Features`, :class:`~latentzoo.data.Dissimilarities`); the machinery
above the data layer (held-out splits, ArviZ conversion) only uses the members below, so it
never assumes one kind of data.

=====================  ==============  ====================================================
container              ``item_dim``    held-out unit of ``split``
=====================  ==============  ====================================================
``CoOccurrence``       ``"doc"``       observations (binomial thinning of every count)
``Features``           ``"item"``      whole items (rows)
``Dissimilarities``    ``"item"``      items with their rows and columns
=====================  ==============  ====================================================

Examples
--------
>>> from latentzoo.data import CoOccurrence, Dataset, Features
>>> isinstance(CoOccurrence([[1, 2]]), Dataset), isinstance(Features([[0, 1]]), Dataset)
(True, True)
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable

import numpy as np

from .checks import as_rng, check_fraction

__all__ = ["Coercible", "Dataset", "RealMatrix", "holdout_items", "matrix_edge_cases"]


class Coercible:
    """What every container offers the layers above, written once: taking data that may already
    be one of its kind without testing its class there (``data/<container>.py`` owns that
    test), and its sizes for ``list_datasets``."""

    #: Name of the property :meth:`table_sizes` reports as the observations (set by each
    #: container: total count, non-zero entries, observed pairs).
    _observations: str

    def table_sizes(self) -> tuple[int, int, int]:
        """``(rows, columns, observations)``, the sizes ``list_datasets`` shows: the total count
        of co-occurrence counts, the non-zero entries of feature vectors, the observed pairs of
        dissimilarities.

        Examples
        --------
        >>> from latentzoo.data import CoOccurrence, Dissimilarities, Features
        >>> CoOccurrence([[1, 2], [0, 3]]).table_sizes(), Features([[0, 1], [1, 1]]).table_sizes()
        ((2, 2, 6), (2, 2, 3))
        >>> Dissimilarities([[0, 1], [1, 0]]).table_sizes()
        (2, 2, 1)
        """
        n_rows, n_cols = self.shape
        return n_rows, n_cols, getattr(self, self._observations)

    #: Name of the property :attr:`n_heldout_units` reports (set by the containers that score
    #: held-out data: the total count of co-occurrence counts, the items of feature vectors).
    _heldout_unit: str

    @property
    def n_heldout_units(self) -> int:
        """Units a held-out score is counted in, as in the papers' perplexity
        (``exp(-sum log p / units)``): the tokens (``total``) of co-occurrence counts, whose
        ``split`` thins every count; whole items (``n_items``) of feature vectors, whose
        ``split`` holds out items.

        Examples
        --------
        >>> from latentzoo.data import CoOccurrence, Features
        >>> CoOccurrence([[1, 2], [0, 3]]).n_heldout_units, Features([[0, 1], [1, 1]]).n_heldout_units
        (6, 2)
        """
        return getattr(self, self._heldout_unit)

    @classmethod
    def coerce(cls, data, **options):
        """``data`` itself when it is already this container, else ``cls(data, **options)``
        (validated on construction).

        Examples
        --------
        >>> from latentzoo.data import Features
        >>> items = Features([[0, 1]])
        >>> Features.coerce(items) is items, Features.coerce([[0, 1]]).shape
        (True, (1, 2))
        """
        return data if isinstance(data, cls) else cls(data, **options)


class RealMatrix(Coercible):
    """What the containers of a real matrix over items (feature vectors, dissimilarities) share:
    their items' names and labels, their awkward cases and no bound of their own on the number
    of components."""

    @property
    def n_items(self) -> int:
        """Number of items ``N`` (the rows)."""
        return self.shape[0]

    @property
    def labels(self) -> np.ndarray | None:
        """Read-only class labels of the items, or ``None``."""
        return self._labels

    @property
    def item_names(self) -> np.ndarray:
        """Read-only unicode names of the items."""
        return self._item_names

    def _classes_note(self) -> str:
        """``", K classes"`` (the distinct labels) for a repr, ``""`` without labels."""
        if self._labels is None:
            return ""
        return f", {len(np.unique(self._labels.astype(str)))} classes"

    def _same_items(self, other) -> bool:
        """Whether ``other`` has the same shape, item names and labels: what equality of these
        containers asks first."""
        if (self._labels is None) != (other._labels is None):
            return False
        return bool(
            self.shape == other.shape
            and np.array_equal(self._item_names, other._item_names)
            and (self._labels is None or np.array_equal(self._labels, other._labels))
        )

    @classmethod
    def edge_cases(cls) -> dict[str, list[np.ndarray]]:
        """Valid but awkward matrices, by name, that every method must fit (finitely) or
        refuse (:func:`~latentzoo.data.dataset.matrix_edge_cases`).

        Examples
        --------
        >>> from latentzoo.data import Dissimilarities, Features
        >>> sorted(Features.edge_cases()) == sorted(Dissimilarities.edge_cases())
        True
        >>> sorted(Features.edge_cases())
        ['empty_rows_and_columns', 'single_item']
        """
        return matrix_edge_cases()

    @classmethod
    def supporting(cls, n_components: int) -> None:
        """None: feature vectors and dissimilarities put no bound on the number of components
        or clusters (the model may)."""
        return None


@runtime_checkable
class Dataset(Protocol):
    """What every data container provides.

    Attributes
    ----------
    item_dim : str
        ArviZ dimension name of the items: ``"doc"`` for the rows of a co-occurrence matrix,
        ``"item"`` for feature vectors and dissimilarities.
    file_formats : tuple of str
        File formats (suffixes without the dot) that ``latentzoo fit --data FILE`` reads into the
        container: ``"csv"`` for every container, ``"npz"`` where it has ``from_npz``.
    symmetric : bool
        Whether entries ``[i, j]`` and ``[j, i]`` are one value (dissimilarities, whose input is
        symmetrised): a corrupted entry must then be corrupted on both sides.

    Notes
    -----
    ``isinstance(obj, Dataset)`` checks that the members exist (``typing.runtime_checkable``),
    not their signatures; the tests of each container check the behaviour.

    Examples
    --------
    >>> from latentzoo.data import Dataset, Features
    >>> data = Features([[0, 1], [1, 1], [0, 0]], labels=["a", "b", "a"])
    >>> isinstance(data, Dataset), data.n_items, data.item_dim
    (True, 3, 'item')
    >>> train, test = data.split(0.3, random_state=0)
    >>> train.n_items + test.n_items
    3
    """

    item_dim: str
    file_formats: tuple[str, ...]
    symmetric: bool

    @property
    def n_items(self) -> int:
        """Number of items (rows of a co-occurrence or feature matrix, objects compared)."""
        ...

    def split(self, test_fraction: float, random_state=None) -> tuple:
        """``(train, test)``, holding out the unit that fits the container; reproducible."""
        ...

    def subset(self, items):
        """The same kind of container restricted to ``items`` (positions or boolean mask)."""
        ...

    def coords(self) -> dict[str, list]:
        """ArviZ coordinates: one list of names per dimension of :meth:`observed_data`."""
        ...

    def observed_data(self) -> dict[str, tuple[tuple[str, ...], np.ndarray]]:
        """``{variable: (dims, array)}``: what goes into the InferenceData ``observed_data``."""
        ...

    def toarray(self) -> np.ndarray:
        """The values as a dense numpy array (counts, features or dissimilarities)."""
        ...

    def with_names(self, item_names, column_names=None):
        """The same data with its items (and, where the columns are not the items, its columns)
        renamed."""
        ...

    @classmethod
    def edge_cases(cls) -> dict[str, list[np.ndarray]]:
        """Valid but awkward matrices of this kind, by name (``"empty_rows_and_columns"``,
        ``"single_item"``): a method fits them finitely or refuses them."""
        ...

    @classmethod
    def supporting(cls, n_components: int):
        """Small-memory data on which ``n_components`` components are not too many for the
        container, or None when the container sets no bound (the model may)."""
        ...


def holdout_items(n_items: int, test_fraction, random_state=None) -> tuple[np.ndarray, np.ndarray]:
    """Positions of training and held-out items for a split of whole items.

    ``round(test_fraction * n_items)`` items, at least one and at most ``n_items - 1``, are drawn
    uniformly without replacement; both parts are returned sorted, so the items keep their order.

    Parameters
    ----------
    n_items : int
        Number of items, at least 2.
    test_fraction : float
        In the open interval ``(0, 1)``.
    random_state : None, int or numpy.random.Generator, optional
        Equal seeds give equal splits.

    Returns
    -------
    train, test : numpy.ndarray
        Sorted int64 positions; disjoint, both non-empty, together ``0 .. n_items - 1``.

    Raises
    ------
    ValueError
        If ``test_fraction`` is not in ``(0, 1)`` or there are fewer than 2 items.

    Examples
    --------
    >>> train, test = holdout_items(5, 0.4, random_state=0)
    >>> len(train), len(test), sorted(train.tolist() + test.tolist())
    (3, 2, [0, 1, 2, 3, 4])
    >>> holdout_items(1, 0.5)
    Traceback (most recent call last):
    ...
    ValueError: cannot split 1 item into two non-empty parts
    """
    test_fraction = check_fraction(test_fraction)
    if n_items < 2:
        raise ValueError(f"cannot split {n_items} item into two non-empty parts")
    n_test = int(np.clip(round(test_fraction * n_items), 1, n_items - 1))
    order = as_rng(random_state).permutation(n_items)
    return np.sort(order[n_test:]).astype(np.int64), np.sort(order[:n_test]).astype(np.int64)


def matrix_edge_cases() -> dict[str, list[np.ndarray]]:
    """Valid but awkward real matrices (the :meth:`Dataset.edge_cases` of feature vectors and
    dissimilarities): an empty row and column, a single row, a single column.

    Examples
    --------
    >>> [case.shape for case in matrix_edge_cases()["single_item"]]
    [(1, 3), (3, 1)]
    """
    return {
        "empty_rows_and_columns": [np.array([[1, 0, 1], [0, 0, 0], [1, 0, 0]], dtype=float)],
        "single_item": [np.array([[1.0, 0.0, 1.0]]), np.array([[1.0], [0.0], [1.0]])],
    }
