"""Certificates of pairwise clustering's ``ward`` and ``mds`` methods in the optimality level
(issue 25): each passes the real method and fails a hand-broken one."""

import numpy as np
import pytest
from scipy.cluster import hierarchy
from scipy.special import softmax

from latentzoo.inference import pairwise as pairwise_inference
from latentzoo.inference.recipes import (
    MDS_TOL,
    WARD_CLUSTERS,
    _canonical,
    _classical_scaling_check,
    _mds_checks,
    _mds_stationarity,
    _naive_ward,
    _ward_checks,
)
from latentzoo.models import PairwiseClustering
from latentzoo.models.pairwise import critical_temperature


def test_naive_ward_is_scipys_ward_on_euclidean_points():
    """The written-out agglomeration against scipy on points (Ward's own setting)."""
    points = np.random.default_rng(1).normal(size=(12, 3))
    distances = np.sqrt(((points[:, None] - points[None]) ** 2).sum(-1))
    raw = hierarchy.fcluster(hierarchy.ward(points), t=4, criterion="maxclust")
    assert np.array_equal(_canonical(raw), _naive_ward(distances, 4))


def test_ward_certificate_passes_ward_and_fails_a_wrong_cut():
    model = PairwiseClustering(2)
    same, sized = _ward_checks(pairwise_inference.ward, model, np.random.default_rng(0))
    assert same.passed and sized.passed, (same.detail, sized.detail)

    def short(model, data):  # the tree cut at K - 1 clusters
        result = pairwise_inference.ward(model, data)
        tree = hierarchy.linkage(data.condensed(), method="ward")
        raw = hierarchy.fcluster(tree, t=model.n_components - 1, criterion="maxclust")
        result.labels = np.unique(raw, return_inverse=True)[1]
        return result

    same, sized = _ward_checks(short, model, np.random.default_rng(0))
    assert not same.passed and not sized.passed
    assert sized.numbers["most_clusters"] == WARD_CLUSTERS - 1


def test_ward_certificate_fails_another_linkage():
    """Average linkage on the same dissimilarities: a different tree on some instance."""

    def average(model, data):
        return pairwise_inference.ward(model, data, linkage="average")

    same, sized = _ward_checks(average, PairwiseClustering(2), np.random.default_rng(0))
    assert not same.passed and sized.passed, same.detail


def test_classical_scaling_check_passes_classical_mds_and_fails_the_wrong_sign():
    rng = np.random.default_rng(3)
    good = _classical_scaling_check(pairwise_inference.classical_mds, rng)
    assert good.passed, good.detail

    def wrong_sign(D, n_dims):  # B = +1/2 J D J: the spectrum of -B
        return pairwise_inference.classical_mds(-D, n_dims)

    bad = _classical_scaling_check(wrong_sign, np.random.default_rng(3))
    assert not bad.passed and bad.numbers["relative_error"] > 0.5, bad.detail


@pytest.fixture(scope="module")
def mds_fit():
    rng = np.random.default_rng(5)
    model = PairwiseClustering(2)
    data, _ = model.simulate(rng, n_items=10)
    T_c = critical_temperature(data)
    fitted = pairwise_inference.structure_preserving_mds(
        model, data, T0=1.1 * T_c, T_final=0.4 * T_c, eta=0.7, tol=1e-8, max_iter=1000,
        random_state=rng,
    )  # fmt: skip
    return data, fitted, float(fitted.trace["temperature"].iloc[-1])


def test_mds_stationarity_holds_at_the_methods_end(mds_fit):
    data, fitted, T = mds_fit
    residuals = _mds_stationarity(data.D, fitted.embedding, fitted.centroids, fitted.resp, T)
    assert max(v for k, v in residuals.items() if k != "drift") <= MDS_TOL, residuals


def test_mds_stationarity_fails_an_embedding_off_eq_34(mds_fit):
    """One item moved along ``y_2 - y_1``, with (15) and (32) recomputed so that only (34) is
    off: the item's potentials no longer match the mean-field ones."""
    data, fitted, T = mds_fit
    x, y = fitted.embedding.copy(), fitted.centroids
    x[0] += 0.2 * (y[1] - y[0])

    def assignments(y):  # eq. (15)
        return softmax(-((x[:, None] - y[None]) ** 2).sum(-1) / T, axis=1)

    resp = assignments(y)
    y = (resp.T @ x) / resp.sum(0)[:, None]  # eq. (32)
    resp = assignments(y)
    residuals = _mds_stationarity(data.D, x, y, resp, T)
    assert residuals["embedding (34)"] > 100 * MDS_TOL, residuals


def test_mds_stationarity_fails_eq_34_without_its_half(mds_fit):
    """An embedding solving (34) with twice its right-hand side, on the same assignments and
    centroids: the residual is the right-hand side itself."""
    data, fitted, T = mds_fit
    x, y, resp = fitted.embedding, fitted.centroids, fitted.resp
    doubled = pairwise_inference._embedding_update(
        x, y, np.log(resp), 2.0 * pairwise_inference._potentials(data.D, resp) - (y**2).sum(1)
    )
    residuals = _mds_stationarity(data.D, doubled, y, resp, T)
    assert residuals["embedding (34)"] > 100 * MDS_TOL, residuals


def test_mds_checks_fail_an_mds_that_returns_its_start():
    """A broken ``mds`` whose embedding stays at the classical start."""

    def stuck(model, data, **options):
        fitted = pairwise_inference.structure_preserving_mds(model, data, **options)
        fitted.embedding = pairwise_inference.classical_mds(data.D, 2)
        return fitted

    model = PairwiseClustering(2)
    checks = _mds_checks(stuck, None, model, np.random.default_rng(0))
    assert len(checks) == 1 and not checks[0].passed, checks[0].detail
