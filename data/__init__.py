"""Co-occurrence data: the :class:`CoOccurrence` container and bundled datasets.

This is the bottom layer of the package and imports nothing from the model or inference
layers.

Examples
--------
>>> from latentzoo.data import load
>>> load("toy").shape
(6, 8)
"""

from .cooccurrence import CoOccurrence
from .datasets import DatasetUnavailableError, list_datasets, load, load_labels

__all__ = ["CoOccurrence", "DatasetUnavailableError", "list_datasets", "load", "load_labels"]
