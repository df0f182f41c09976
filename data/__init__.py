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
from .datasets import list_datasets, load

__all__ = ["CoOccurrence", "list_datasets", "load"]
