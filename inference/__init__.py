"""Fast inference for the zoo's models and the comparison of fast methods with PyMC references."""

from latentzoo.inference.annealing import EMResult, perplexity, project_simplex
from latentzoo.inference.bayesian_sets import (
    BayesianSetsIndex,
    RetrievalResult,
    bayesian_sets,
    binarize,
    relational_bayesian_sets,
    variational_logistic,
)
from latentzoo.inference.cluster_abstraction import GrowthResult, grow_tree, three_stage_em
from latentzoo.inference.mcmc import add_invariants, chain_seeds, run_chains
from latentzoo.inference.pairwise import (
    ClusteringResult,
    central_annealing,
    greedy,
    pairwise_annealing,
    structure_preserving_mds,
    ward,
)

__all__ = [
    "EMResult",
    "perplexity",
    "project_simplex",
    "BayesianSetsIndex",
    "RetrievalResult",
    "bayesian_sets",
    "binarize",
    "relational_bayesian_sets",
    "variational_logistic",
    "GrowthResult",
    "grow_tree",
    "three_stage_em",
    "add_invariants",
    "chain_seeds",
    "run_chains",
    "ClusteringResult",
    "central_annealing",
    "greedy",
    "pairwise_annealing",
    "structure_preserving_mds",
    "ward",
]
