"""Accepted input never yields NaN or inf silently (issue 24): extreme reals and counts, through the
public API (``latentzoo.fit``, ``Features``, ``BayesianSetsIndex``).

The grid: the feature-vector families that score items with a conjugate component (the DPM and
the finite mixture by Gibbs, BHC, Bayesian Sets) on reals scaled by 1e300 (squares overflow), by
1e8 (finite, but 1e16 prior scales from ``mu0``: float64 loses ``psi0``/``b0`` beside the scatter)
and by 1e-300 (squares underflow, which is harmless), and counts of ``2**63``. Each cell either
gives finite numbers or a ``ValueError`` that names the offending entry and the limit.
"""

import warnings

import numpy as np
import pytest

import latentzoo
from latentzoo.data import Features
from latentzoo.inference.bayesian_sets import BayesianSetsIndex
from latentzoo.models import (
    BayesianHierarchicalClustering,
    BayesianMixture,
    BayesianSets,
    DirichletMultinomial,
    DirichletProcessMixture,
    NormalGamma,
    NormalInverseWishart,
)

BASE = np.random.default_rng(24).normal(size=(12, 3))
"""Standard normal reals; the cells scale them."""

SAMPLER = {"draws": 3, "tune": 1, "chains": 1, "progressbar": False, "random_state": 0}

COMPONENTS = {"normal_gamma": NormalGamma, "normal_inverse_wishart": NormalInverseWishart}

# Every family that scores feature vectors with a conjugate component, as a user calls it: a
# function of (component, data) returning the numbers a user would read.
FITS = {
    "dpm": lambda comp, X: np.asarray(
        latentzoo.fit(
            DirichletProcessMixture(component=comp), X, method="gibbs", **SAMPLER
        ).sample_stats["lp"]
    ),
    "mixture": lambda comp, X: np.asarray(
        latentzoo.fit(
            BayesianMixture(2, component=comp), X, method="gibbs", **SAMPLER
        ).sample_stats["lp"]
    ),
    "bhc": lambda comp, X: np.array(
        [
            latentzoo.fit(
                BayesianHierarchicalClustering(component=comp), X, method="bhc"
            ).log_marginal
        ]
    ),  # fmt: skip
    "bayesian_sets": lambda comp, X: (
        latentzoo.fit(BayesianSets(component=comp), X, method="query", query=[0, 1]).scores
    ),
    "bayesian_sets_index": lambda comp, X: BayesianSetsIndex(
        X, BayesianSets(component=comp)
    ).log_scores([0, 1]),
}


def _fit(family, component, X):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return FITS[family](COMPONENTS[component](), X)


@pytest.mark.parametrize("component", COMPONENTS)
@pytest.mark.parametrize("family", FITS)
def test_reals_whose_squares_overflow_are_refused_naming_the_entry_and_the_limit(family, component):
    """1e300 gave NaN log-likelihoods, NaN merge scores (arbitrary BHC trees), NaN Bayesian Sets
    scores and, with the Normal-inverse-Wishart, ``stats_update: ... (was the item in the
    cluster?)``."""
    with pytest.raises(ValueError, match=r"X\[\d+, \d+\] = .*e\+\d+ is too far from mu0 .*1e\+100"):
        _fit(family, component, BASE * 1e300)


@pytest.mark.parametrize("component", COMPONENTS)
@pytest.mark.parametrize("family", ["dpm", "bhc", "bayesian_sets"])
def test_reals_beyond_float64_resolution_of_the_prior_scale_are_refused(family, component):
    """At 1e8 the squares are finite but 1e16 times the prior scale: the Normal-inverse-Wishart
    DPM said ``stats_update: ... (was the item in the cluster?)``, BHC returned a log marginal of
    +57,866 (about -1,900 is right) and Bayesian Sets ``Matrix is not positive definite``."""
    with pytest.raises(ValueError, match=r"too far from mu0 for the prior scale.*exceeds 1e\+12"):
        _fit(family, component, BASE * 1e8)


@pytest.mark.parametrize("scale", [1e4, 1e-300])
@pytest.mark.parametrize("component", COMPONENTS)
@pytest.mark.parametrize("family", FITS)
def test_reals_within_the_limits_give_finite_numbers(family, component, scale):
    """Large but resolvable reals, and reals whose squares underflow, are scored finitely."""
    values = _fit(family, component, BASE * scale)
    assert np.all(np.isfinite(values)), values


def test_the_limits_keep_the_kernels_accurate():
    """Within the spread limit, adding and removing 50 far items (Welford downdates) returns a
    Normal-Gamma cluster's log marginal to 0.01 nats of the one computed afresh; at 1e16 prior scales
    it was off by 3.9 nats, which is why such data are refused."""
    from latentzoo.models.conjugate import SPREAD_LIMIT, log_marginal_one, stats_update

    comp = NormalGamma()
    hyper = comp.hyper(1)
    far = np.random.default_rng(0).normal(size=(50, 1)) * np.sqrt(SPREAD_LIMIT) / 3
    comp.check_data(far)  # accepted
    row = comp.empty_stats(1, 1)[0].copy()
    stats_update(comp.kind_code, hyper, row, np.array([0.3]), 1)
    for x in far:
        stats_update(comp.kind_code, hyper, row, x, 1)
    for x in far:
        stats_update(comp.kind_code, hyper, row, x, -1)
    fresh = comp.stats(np.array([[0.3]]), np.array([0]), 1)[0]
    drift = log_marginal_one(comp.kind_code, hyper, row) - log_marginal_one(
        comp.kind_code, hyper, fresh
    )
    assert abs(drift) < 1e-2


HUGE_COUNTS = np.array([[3, 0, 1], [1, 2, 0], [0, 2**63, 3], [2, 1, 1]], dtype=np.uint64)


@pytest.mark.parametrize(
    "fit",
    [
        lambda: latentzoo.fit(
            DirichletProcessMixture(component=DirichletMultinomial()),
            HUGE_COUNTS,
            method="gibbs",
            **SAMPLER,
        ),
        lambda: latentzoo.fit(
            BayesianSets(component=DirichletMultinomial()), HUGE_COUNTS, method="query", query=[0]
        ),
        lambda: BayesianSetsIndex(HUGE_COUNTS, BayesianSets(component=DirichletMultinomial())),
        lambda: Features(HUGE_COUNTS),
    ],
    ids=["dpm", "bayesian_sets", "bayesian_sets_index", "features"],
)
def test_counts_beyond_int64_are_refused_as_cooccurrence_refuses_them(fit):
    """uint64 ``2**63`` was accepted as a count: the DPM returned ``lp = inf`` and Bayesian Sets'
    closed form and its reference disagreed (8.776 vs 5.193)."""
    with pytest.raises(
        ValueError, match=r"^X\[2, 1\] = 9223372036854775808 exceeds the int64 range$"
    ):
        fit()


# --------------------------------------------------------------------------- pairwise and central clustering
# The cost models are invariant to the scale of their data up to the temperature's: at extreme
# scales they cluster the data divided by a power of two and report costs, temperatures and
# coordinates in the data's units; central clustering refuses squared distances beyond float64.
def _pairwise_dissimilarities():
    from latentzoo.models import PairwiseClustering

    return PairwiseClustering(3), PairwiseClustering(3).simulate(0, n_items=30)[0].D


@pytest.mark.parametrize("scale", [1e300, 1e-300])
def test_mds_embeds_dissimilarities_of_any_scale_finitely(scale):
    """``mds`` on D x 1e300 returned NaN embeddings."""
    model, D = _pairwise_dissimilarities()
    unit = latentzoo.fit(model, D, method="mds", random_state=0)
    result = latentzoo.fit(model, D * scale, method="mds", random_state=0)
    assert np.all(np.isfinite(result.embedding)) and np.isfinite(result.cost)
    np.testing.assert_array_equal(result.labels_, unit.labels_)


@pytest.mark.parametrize("scale", [1e154, 1e-300])
def test_ward_partitions_dissimilarities_of_any_scale_as_at_unit_scale(scale):
    """``ward`` put every item in one cluster on D x 1e-300 and raised scipy's "Linkage 'Z'
    contains excessive observations in a cluster" on D x 1e154."""
    model, D = _pairwise_dissimilarities()
    unit = latentzoo.fit(model, D, method="ward")
    np.testing.assert_array_equal(
        latentzoo.fit(model, D * scale, method="ward").labels_, unit.labels_
    )


@pytest.mark.parametrize("scale", [1e154, 1e-160, 1e-200])
def test_central_clustering_refuses_squared_distances_beyond_float64_naming_the_limit(scale):
    """1e154 raised numpy's ``LinAlgError``, 1e-160 said ``beta_start must be a positive finite
    number`` (an option the user never passed), 1e-200 claimed "zero variance" for distinct
    items."""
    from latentzoo.models import CentralClustering

    X = BASE * scale
    with pytest.raises(
        ValueError, match=r"^X deviates from its mean by up to .*\[1e-150, 1e\+150\]"
    ):
        latentzoo.fit(CentralClustering(2), X, method="annealing")
