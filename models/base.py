"""What every model of the zoo provides: the :class:`Model` protocol.

The face (``latentzoo.fit``, ``validate``, the CLI), the annealing driver, the chain runner and the
comparison talk to models only through these members, so a new family that provides them works with
all of them. A model is a frozen dataclass of hyperparameters; its main size argument is called
``n_components`` where it has one size (the two-sided families name both of theirs).
"""

from __future__ import annotations

from typing import Any, Protocol, runtime_checkable

import numpy as np

__all__ = ["Model"]


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
