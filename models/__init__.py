"""Generative models of the zoo: PyMC reference declarations, simulators, exact likelihoods."""

from latentzoo.models.aspect import AspectModel, ProductSpaceMixture
from latentzoo.models.one_sided import OneSidedClustering
from latentzoo.models.two_sided import TwoSidedClustering

__all__ = ["AspectModel", "OneSidedClustering", "ProductSpaceMixture", "TwoSidedClustering"]
