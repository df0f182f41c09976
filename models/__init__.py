"""Generative models of the zoo: PyMC reference declarations, simulators, exact likelihoods."""

from latentzoo.models.aspect import AspectModel
from latentzoo.models.base import Model
from latentzoo.models.bayesian_sets import BayesianSets, RelationalBayesianSets
from latentzoo.models.bhc import BayesianHierarchicalClustering, Tree, dendrogram_purity
from latentzoo.models.bpm import BayesianPartialMembership
from latentzoo.models.cluster_abstraction import ClusterAbstractionModel, TopicTree
from latentzoo.models.conjugate import (
    BetaBernoulli,
    DirichletMultinomial,
    NormalGamma,
    NormalInverseWishart,
)
from latentzoo.models.iomm import OverlappingMixture
from latentzoo.models.mixture import BayesianMixture, DirichletProcessMixture
from latentzoo.models.one_sided import OneSidedClustering
from latentzoo.models.pairwise import CentralClustering, PairwiseClustering
from latentzoo.models.product_space import ProductSpaceMixture
from latentzoo.models.topic_tree import TopicTreeMixture
from latentzoo.models.two_sided import TwoSidedClustering

__all__ = [
    "AspectModel",
    "BayesianHierarchicalClustering",
    "BayesianMixture",
    "BayesianPartialMembership",
    "BayesianSets",
    "BetaBernoulli",
    "CentralClustering",
    "ClusterAbstractionModel",
    "DirichletMultinomial",
    "DirichletProcessMixture",
    "Model",
    "NormalGamma",
    "NormalInverseWishart",
    "OneSidedClustering",
    "OverlappingMixture",
    "PairwiseClustering",
    "ProductSpaceMixture",
    "RelationalBayesianSets",
    "TopicTree",
    "TopicTreeMixture",
    "TwoSidedClustering",
    "Tree",
    "dendrogram_purity",
]
