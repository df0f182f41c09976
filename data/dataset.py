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

__all__ = ["Dataset", "holdout_items"]


@runtime_checkable
class Dataset(Protocol):
    """What every data container provides.

    Attributes
    ----------
    item_dim : str
        ArviZ dimension name of the items: ``"doc"`` for the rows of a co-occurrence matrix,
        ``"item"`` for feature vectors and dissimilarities.

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
