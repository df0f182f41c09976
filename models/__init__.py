"""Generative models of the zoo: PyMC reference declarations, simulators, exact likelihoods."""

from latentzoo.models.aspect import AspectModel, ProductSpaceMixture
from latentzoo.models.one_sided import OneSidedClustering

__all__ = ["AspectModel", "OneSidedClustering", "ProductSpaceMixture"]
