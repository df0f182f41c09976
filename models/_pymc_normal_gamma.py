"""The Normal-Gamma prior of axis-aligned Gaussian clusters: its hyperparameters' checks and its
PyMC declaration.

Shared by the families whose Gaussian clusters have independent features with a conjugate prior
per cluster and feature (the BPM, the IOMM): ``tau ~ Gamma(gamma_a, gamma_b)`` (shape, rate) and
``mu | tau ~ N(mu0, 1 / (kappa0 tau))``. Each model keeps ``mu0``, ``kappa0``, ``gamma_a`` and
``gamma_b`` as constructor arguments of its own (their order and repr are part of its API).
"""

from __future__ import annotations

import numbers
from dataclasses import dataclass, fields

import numpy as np

from latentzoo.models._checks import check_positive

__all__ = [
    "DEFAULT_NORMAL_GAMMA",
    "NORMAL_GAMMA_FIELDS",
    "NormalGammaPrior",
    "check_normal_gamma_prior",
    "normal_gamma_clusters",
]


@dataclass(frozen=True)
class NormalGammaPrior:
    """The prior's hyperparameters, their defaults and their checks, declared once.

    The models copy the defaults into fields of their own (``mu0: float = DEFAULT.mu0``) and
    check them with :func:`check_normal_gamma_prior`.

    Examples
    --------
    >>> NormalGammaPrior()
    NormalGammaPrior(mu0=0.0, kappa0=0.1, gamma_a=2.0, gamma_b=1.0)
    >>> NormalGammaPrior(kappa0=0.0)
    Traceback (most recent call last):
    ...
    ValueError: kappa0 must be a positive finite number, got 0.0
    """

    mu0: float = 0.0
    kappa0: float = 0.1
    gamma_a: float = 2.0
    gamma_b: float = 1.0

    def __post_init__(self):
        for name in NORMAL_GAMMA_FIELDS[1:]:
            check_positive(name, getattr(self, name))
        mu0 = self.mu0
        if isinstance(mu0, bool) or not isinstance(mu0, numbers.Real) or not np.isfinite(mu0):
            raise ValueError(f"mu0 must be a finite number, got {mu0!r}")


#: The model fields that hold the prior's hyperparameters.
NORMAL_GAMMA_FIELDS = tuple(field.name for field in fields(NormalGammaPrior))

#: The default prior of the BPM's and the IOMM's Gaussian clusters.
DEFAULT_NORMAL_GAMMA = NormalGammaPrior()


def check_normal_gamma_prior(model) -> None:
    """Raise ``ValueError`` unless ``model``'s ``kappa0``, ``gamma_a`` and ``gamma_b`` are positive
    finite numbers and its ``mu0`` a finite real number (not a bool).

    Examples
    --------
    >>> from types import SimpleNamespace
    >>> check_normal_gamma_prior(SimpleNamespace(mu0=0, kappa0=0.1, gamma_a=2.0, gamma_b=1.0))
    >>> check_normal_gamma_prior(SimpleNamespace(mu0=True, kappa0=0.1, gamma_a=2.0, gamma_b=1.0))
    Traceback (most recent call last):
    ...
    ValueError: mu0 must be a finite number, got True
    """
    NormalGammaPrior(*(getattr(model, name) for name in NORMAL_GAMMA_FIELDS))


def normal_gamma_clusters(model, dims: tuple[str, str]):
    """``(tau, mu)`` declared in the current ``pm.Model`` with ``model``'s ``gamma_a``,
    ``gamma_b``, ``mu0`` and ``kappa0``, over ``dims`` (clusters, features).

    Examples
    --------
    >>> import pymc as pm
    >>> from types import SimpleNamespace
    >>> prior = SimpleNamespace(gamma_a=2.0, gamma_b=1.0, mu0=0.0, kappa0=0.1)
    >>> with pm.Model(coords={"k": [0, 1], "d": [0]}) as m:
    ...     tau, mu = normal_gamma_clusters(prior, ("k", "d"))
    >>> sorted(m.named_vars)
    ['mu', 'tau']
    """
    import pymc as pm
    import pytensor.tensor as pt

    tau = pm.Gamma("tau", alpha=model.gamma_a, beta=model.gamma_b, dims=dims)
    mu = pm.Normal("mu", mu=model.mu0, sigma=1.0 / pt.sqrt(model.kappa0 * tau), dims=dims)
    return tau, mu
