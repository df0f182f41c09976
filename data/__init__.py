"""Data containers and bundled datasets.

Every container implements the :class:`Dataset` protocol (number of items, ``split`` with the
held-out unit that fits it, ``subset``, ArviZ coordinates, ``observed_data``):
:class:`CoOccurrence` (counts of row x column objects), :class:`Features` (``N x D`` binary,
count or real feature vectors) and :class:`Dissimilarities` (``N x N`` dissimilarity
matrices). Input checks shared by all containers live in :mod:`latentzoo.data.checks`.

This is the bottom layer of the package and imports nothing from the model or inference
layers.

Examples
--------
>>> from latentzoo.data import load
>>> load("toy").shape
(6, 8)
"""

from .cooccurrence import CoOccurrence
from .dataset import Dataset
from .datasets import DatasetOptionError, DatasetUnavailableError, list_datasets, load, load_labels
from .dissimilarities import Dissimilarities, DissimilarityRows
from .features import Features

__all__ = [
    "CoOccurrence",
    "Dataset",
    "DatasetOptionError",
    "DatasetUnavailableError",
    "Dissimilarities",
    "DissimilarityRows",
    "Features",
    "list_datasets",
    "load",
    "load_labels",
]
