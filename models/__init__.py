"""Generative models of the zoo: PyMC reference declarations, simulators, exact likelihoods."""

from latentzoo.models.aspect import AspectModel, ProductSpaceMixture

__all__ = ["AspectModel", "ProductSpaceMixture"]
