"""Registry of bundled co-occurrence datasets.

Each dataset is one entry of :data:`_REGISTRY`: a loader returning a :class:`CoOccurrence`
plus provenance metadata. Adding a dataset means adding one entry.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import pandas as pd

from .cooccurrence import CoOccurrence

__all__ = ["list_datasets", "load"]


@dataclass(frozen=True)
class _Dataset:
    loader: Callable[[], CoOccurrence]
    source: str
    licence: str
    description: str


def _load_toy() -> CoOccurrence:
    # Two disjoint blocks (sport documents x sport words, politics x politics) so that any
    # two-class model must recover them exactly; counts are uneven to make totals distinct.
    counts = np.array(
        [
            [4, 2, 3, 1, 0, 0, 0, 0],
            [2, 5, 1, 3, 0, 0, 0, 0],
            [3, 1, 4, 2, 0, 0, 0, 0],
            [0, 0, 0, 0, 5, 2, 1, 3],
            [0, 0, 0, 0, 1, 4, 3, 2],
            [0, 0, 0, 0, 2, 3, 4, 1],
        ],
        dtype=np.int64,
    )
    rows = ["sport1", "sport2", "sport3", "politics1", "politics2", "politics3"]
    cols = ["goal", "match", "team", "score", "vote", "party", "election", "policy"]
    return CoOccurrence(counts, row_labels=rows, col_labels=cols)


def _load_reuters() -> CoOccurrence:
    # Imported lazily: reading the lda data files takes ~0.5 s and most callers never need it.
    import lda.datasets

    return CoOccurrence(
        lda.datasets.load_reuters(),
        row_labels=lda.datasets.load_reuters_titles(),
        col_labels=lda.datasets.load_reuters_vocab(),
    )


_REGISTRY: dict[str, _Dataset] = {
    "reuters": _Dataset(
        loader=_load_reuters,
        source="the `lda` package (lda.datasets), a subset of Reuters-21578 as shipped by lda",
        licence="MPL-2.0 (lda package); Reuters-21578 is free for research use",
        description="Reuters news articles (rows, labelled by title) x vocabulary words (columns)",
    ),
    "toy": _Dataset(
        loader=_load_toy,
        source="written literally in latentzoo.data.datasets",
        licence="MIT (part of latentzoo)",
        description="6 documents x 8 words in two obvious blocks (sport, politics)",
    ),
}


@functools.cache
def _load_cached(name: str) -> CoOccurrence:
    return _REGISTRY[name].loader()


def _check_name(name) -> str:
    if not isinstance(name, str) or name not in _REGISTRY:
        known = ", ".join(sorted(_REGISTRY))
        raise ValueError(f"unknown dataset {name!r}; known datasets: {known}")
    return name


def load(name: str) -> CoOccurrence:
    """Load a bundled dataset by name.

    Parameters
    ----------
    name : str
        One of the names listed by :func:`list_datasets`.

    Returns
    -------
    CoOccurrence
        A fresh object; modifying it does not affect later calls.

    Raises
    ------
    ValueError
        If ``name`` is not a known dataset.

    Examples
    --------
    >>> from latentzoo.data import load
    >>> load("toy")
    CoOccurrence(6 x 8, 62 observations, 24 non-zeros)
    >>> load("reuters").shape
    (395, 4258)
    """
    cached = _load_cached(_check_name(name))
    # The cache holds one shared object; hand out a copy so callers cannot corrupt it.
    return CoOccurrence(cached.counts.copy(), cached.row_labels, cached.col_labels)


def list_datasets() -> pd.DataFrame:
    """Describe the bundled datasets.

    Sizes are computed from the loaded data (cached after the first call).

    Returns
    -------
    pandas.DataFrame
        One row per dataset with columns ``name``, ``n_rows``, ``n_cols``,
        ``observations``, ``source``, ``licence`` and ``description``.

    Examples
    --------
    >>> from latentzoo.data import list_datasets
    >>> table = list_datasets()
    >>> list(table["name"])
    ['reuters', 'toy']
    >>> int(table.set_index("name").loc["toy", "observations"])
    62
    """
    records = []
    for name, entry in _REGISTRY.items():
        data = _load_cached(name)
        records.append(
            {
                "name": name,
                "n_rows": data.n_rows,
                "n_cols": data.n_cols,
                "observations": data.total,
                "source": entry.source,
                "licence": entry.licence,
                "description": entry.description,
            }
        )
    return pd.DataFrame.from_records(
        records,
        columns=[
            "name",
            "n_rows",
            "n_cols",
            "observations",
            "source",
            "licence",
            "description",
        ],
    )
