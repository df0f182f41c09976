"""The Normal-Gamma prior of axis-aligned Gaussian clusters, declared in PyMC.

Shared by the PyMC references of the families whose Gaussian clusters have independent
features with a conjugate prior per cluster and feature (the BPM, the IOMM):
``tau ~ Gamma(gamma_a, gamma_b)`` (shape, rate) and ``mu | tau ~ N(mu0, 1 / (kappa0 tau))``.
"""

from __future__ import annotations

__all__ = ["normal_gamma_clusters"]


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
