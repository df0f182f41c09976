"""What every model of the zoo provides: the :class:`Model` protocol.

The face (``latentzoo.fit``, ``validate``, the CLI), the annealing driver, the chain runner and the
comparison talk to models only through these members, so a new family that provides them works with
all of them. A model is a frozen dataclass of hyperparameters; its main size argument is called
``n_components`` where it has one size (the two-sided families name both of theirs).
"""

from __future__ import annotations

import dataclasses
import numbers
from typing import Any, Protocol, runtime_checkable

import numpy as np

__all__ = ["Model", "model_attrs", "netcdf_attr"]


@runtime_checkable
class Model(Protocol):
    """The contract of a latentzoo model (the README's "Adding a family" checklist, step 2).

    Attributes
    ----------
    data_type : type
        The data container the model takes (a :class:`latentzoo.data.Dataset`).
    param_names : tuple of str
        The parameters of a posterior draw or point estimate, named as in :meth:`pymc_model`.
    invariant_names : tuple of str
        The label-invariant quantities returned by :meth:`invariants`.

    Examples
    --------
    >>> from latentzoo.models import AspectModel, DirichletProcessMixture, OneSidedClustering
    >>> all(isinstance(m, Model) for m in (AspectModel(2), OneSidedClustering(2),
    ...                                      DirichletProcessMixture()))
    True
    """

    data_type: type
    param_names: tuple
    invariant_names: tuple

    def check_data(self, data) -> Any:
        """Validate ``data`` (or an array the container accepts) and return the container."""

    def simulate(self, random_state, **sizes) -> tuple[Any, dict]:
        """Draw ``(data, truth)`` from the generative process of the paper."""

    def log_likelihood(self, params: dict, data) -> np.ndarray:
        """Exact log-likelihood per observation unit (row, item), in log space."""

    def heldout_log_likelihood(self, params: dict, test) -> np.ndarray:
        """The held-out score that tempered schedules and perplexities use."""

    def invariants(self, params: dict, data) -> dict:
        """Label-invariant quantities through which every method is compared."""

    def pymc_model(self, data, temperature: float = 1.0):
        """The PyMC reference declaration (likelihood tempered by ``temperature``)."""


def netcdf_attr(value):
    """``value`` as a netCDF attribute: numbers and strings as they are, numeric vectors as arrays,
    classes and dtypes by name, anything else as its text (None: leave the attribute out).

    Examples
    --------
    >>> netcdf_attr(True), netcdf_attr(np.float32), netcdf_attr([1.0, 0.5]).tolist()
    (1, 'float32', [1.0, 0.5])
    """
    if value is None:
        return None
    if isinstance(value, bool | np.bool_):
        return int(value)
    if isinstance(value, numbers.Number | str):
        return value
    if isinstance(value, type):
        return value.__name__
    if isinstance(value, np.dtype):
        return value.name
    if isinstance(value, list | tuple | np.ndarray):
        array = np.asarray(value)
        if array.dtype.kind in "iuf" and array.ndim == 1:
            return array
    return str(value)


def model_attrs(model) -> dict:
    """The attributes that identify a fit's model in a saved file: the library and its version,
    the model class and each hyperparameter as ``model_<name>`` (components by their text).

    Examples
    --------
    >>> from latentzoo.models import AspectModel
    >>> attrs = model_attrs(AspectModel(3))
    >>> attrs["model"], attrs["model_n_components"], attrs["model_alpha"]
    ('AspectModel', 3, 1.1)
    """
    from importlib.metadata import PackageNotFoundError, version

    try:
        library_version = version("latentzoo")
    except PackageNotFoundError:  # pragma: no cover - running from a bare checkout
        library_version = "unknown"
    attrs = {
        "inference_library": "latentzoo",
        "inference_library_version": library_version,
        "model": type(model).__name__,
    }
    if dataclasses.is_dataclass(model):
        for item in dataclasses.fields(model):
            value = netcdf_attr(getattr(model, item.name))
            if value is not None:
                attrs[f"model_{item.name}"] = value
    return attrs
