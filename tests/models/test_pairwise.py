"""Central and pairwise clustering models (Hofmann & Buhmann 1997, eq. (8)-(18)): costs, their
invariances (17), exact Gibbs expectations by enumeration, the PyMC reference, input checks."""

import itertools

import numpy as np
import pytest
from scipy.special import logsumexp

from latentzoo.data import Dissimilarities, Features
from latentzoo.models import CentralClustering, PairwiseClustering
from latentzoo.models.pairwise import (
    coassignment_matrix,
    critical_temperature,
    pairwise_cost,
    uniform_dissimilarities,
)


def random_matrix(rng, n, symmetric=False, nonnegative=False):
    D = rng.normal(size=(n, n))
    if nonnegative:
        D = np.abs(D)
    if symmetric:
        D = (D + D.T) / 2
    return D


# ------------------------------------------------------------------------------ cost (16)
def test_cost_matches_definition_of_eq16():
    rng = np.random.default_rng()
    n, k = 7, 3
    D = random_matrix(rng, n)
    z = rng.integers(0, k, size=n)
    M = np.eye(k)[z]
    p = M.sum(axis=0) / n
    # Written out as in (16); empty clusters contribute nothing.
    inner = np.zeros((n, n))
    for v in range(k):
        if p[v] > 0:
            inner += np.outer(M[:, v], M[:, v]) / p[v]
    expected = 0.5 * np.sum(D / n * (inner - 1.0))
    assert pairwise_cost(D, z, k) == pytest.approx(expected, rel=1e-12, abs=1e-12)


def test_cost_invariant_to_a_constant_shift_of_every_entry_eq17():
    rng = np.random.default_rng()
    n, k = 9, 3
    D = random_matrix(rng, n)
    z = rng.integers(0, k, size=(20, n))
    shift = rng.normal() * 10
    np.testing.assert_allclose(pairwise_cost(D - shift, z, k), pairwise_cost(D, z, k), atol=1e-9)


def test_off_diagonal_shift_changes_cost_by_the_diagonal_share():
    # Dissimilarities keep a zero diagonal: shifting only the off-diagonal entries by D0 changes
    # the cost by -D0 (K_occupied - 1) / 2, the same for every assignment with the same number
    # of occupied clusters.
    rng = np.random.default_rng()
    n, k = 8, 3
    data = uniform_dissimilarities(rng, n)
    shift = float(rng.uniform(0.5, 3.0))
    shifted = Dissimilarities(data.D + shift * (1 - np.eye(n)))
    z = rng.integers(0, k, size=(30, n))
    occupied = np.array([np.unique(row).size for row in z])
    model = PairwiseClustering(k)
    np.testing.assert_allclose(
        model.cost(shifted, z), model.cost(data, z) - shift * (occupied - 1) / 2, atol=1e-9
    )


def test_cost_invariant_to_symmetrisation():
    rng = np.random.default_rng()
    n, k = 8, 3
    D = random_matrix(rng, n, nonnegative=True)
    np.fill_diagonal(D, 0.0)
    z = rng.integers(0, k, size=(10, n))
    symmetric = (D + D.T) / 2
    np.testing.assert_allclose(pairwise_cost(D, z, k), pairwise_cost(symmetric, z, k), atol=1e-12)
    # The container symmetrises, and the model's cost is that of the raw matrix.
    np.testing.assert_allclose(PairwiseClustering(k).cost(D, z), pairwise_cost(D, z, k), atol=1e-12)


def test_batch_cost_equals_single_costs_and_is_permutation_invariant():
    rng = np.random.default_rng()
    n, k = 10, 4
    data = uniform_dissimilarities(rng, n)
    model = PairwiseClustering(k)
    z = rng.integers(0, k, size=(12, n))
    batch = model.cost(data, z)
    assert batch.shape == (12,)
    np.testing.assert_allclose(batch, [model.cost(data, row) for row in z], atol=1e-12)
    relabelled = rng.permutation(k)[z]
    np.testing.assert_allclose(model.cost(data, relabelled), batch, atol=1e-12)


def test_central_cost_is_pairwise_cost_of_squared_distances_eq31():
    rng = np.random.default_rng()
    X = rng.normal(size=(9, 3))
    z = rng.integers(0, 3, size=(5, 9))
    D = ((X[:, None] - X[None]) ** 2).sum(-1)
    kmeans = CentralClustering(3).cost(X, z)
    np.testing.assert_allclose(kmeans, pairwise_cost(D, z, 3) + D.sum() / (2 * 9), atol=1e-9)
    # With the centroids of each assignment, eq. (8) is the same number.
    for row, value in zip(z, kmeans, strict=True):
        centroids = np.array([X[row == v].mean(0) if np.any(row == v) else X[0] for v in range(3)])
        assert CentralClustering(3).cost(X, row, centroids=centroids) == pytest.approx(value)


# ------------------------------------------------------------------------- enumeration
def brute_force(cost, n, k, temperature):
    states = np.array(list(itertools.product(range(k), repeat=n)))
    costs = np.array([cost(s) for s in states])
    log_z = logsumexp(-costs / temperature)
    w = np.exp(-costs / temperature - log_z)
    resp = np.einsum("b,biv->iv", w, np.eye(k)[states])
    same = (states[:, :, None] == states[:, None, :]).astype(float)
    return log_z, resp, np.einsum("b,bij->ij", w, same), w @ costs


def test_pairwise_gibbs_expectations_match_brute_force():
    rng = np.random.default_rng()
    data = uniform_dissimilarities(rng, 5)
    model = PairwiseClustering(3)
    T = float(rng.uniform(0.05, 1.0))
    out = model.gibbs_expectations(data, T)
    log_z, resp, coassign, expected = brute_force(lambda s: model.cost(data, s), 5, 3, T)
    assert out["n_states"] == 3**5
    assert out["log_partition"] == pytest.approx(log_z, rel=1e-10)
    np.testing.assert_allclose(out["resp"], resp, atol=1e-12)
    np.testing.assert_allclose(out["resp"], 1 / 3, atol=1e-12)  # relabelling symmetry
    np.testing.assert_allclose(out["coassign"], coassign, atol=1e-12)
    assert out["expected_cost"] == pytest.approx(expected, rel=1e-10, abs=1e-12)
    # eq. (4): T S = <H> - F
    assert T * out["entropy"] == pytest.approx(out["expected_cost"] - out["free_energy"])


def test_field_breaks_the_symmetry():
    rng = np.random.default_rng()
    data = uniform_dissimilarities(rng, 5)
    field = np.zeros((5, 2))
    field[0, 1] = 100.0
    out = PairwiseClustering(2).gibbs_expectations(data, 0.3, field=field)
    assert out["resp"][0, 0] == pytest.approx(1.0)
    # Clamping item 0 to cluster 0: <M_i0> is then P(z_i = z_0).
    np.testing.assert_allclose(out["resp"][:, 0], out["coassign"][0], atol=1e-12)


def test_central_gibbs_with_centroids_factorises_eq12():
    rng = np.random.default_rng()
    X = rng.normal(size=(4, 2))
    y = rng.normal(size=(3, 2))
    model = CentralClustering(3, temperature=0.7)
    out = model.gibbs_expectations(X, centroids=y)
    log_z, resp, coassign, expected = brute_force(
        lambda s: model.cost(X, s, centroids=y), 4, 3, 0.7
    )
    assert out["log_partition"] == pytest.approx(log_z)
    np.testing.assert_allclose(out["resp"], resp, atol=1e-12)
    np.testing.assert_allclose(out["coassign"], coassign, atol=1e-12)
    assert out["expected_cost"] == pytest.approx(expected)
    # Without centroids: the K-means cost, enumerated.
    free = model.gibbs_expectations(X)
    log_z, _, coassign, _ = brute_force(lambda s: model.cost(X, s), 4, 3, 0.7)
    assert free["log_partition"] == pytest.approx(log_z)
    np.testing.assert_allclose(free["coassign"], coassign, atol=1e-12)


def test_enumeration_refuses_large_problems_with_an_estimate():
    data = uniform_dissimilarities(0, 30)
    with pytest.raises(ValueError, match=r"K\^N = 2\^30 .*max_states"):
        PairwiseClustering(2).gibbs_expectations(data, 1.0)


def test_invariants_of_labels_and_of_soft_assignments():
    rng = np.random.default_rng()
    data = uniform_dissimilarities(rng, 6)
    model = PairwiseClustering(2)
    z = rng.integers(0, 2, size=6)
    inv = model.invariants({"z": z}, data)
    first, second = np.triu_indices(6, 1)
    np.testing.assert_array_equal(inv["coassign"], (z[first] == z[second]).astype(float))
    assert inv["cost"] == pytest.approx(model.cost(data, z))
    # A one-hot soft assignment gives the same numbers.
    soft = model.invariants({"resp": np.eye(2)[z]}, data)
    np.testing.assert_allclose(soft["coassign"], inv["coassign"])
    assert soft["cost"] == pytest.approx(inv["cost"])
    np.testing.assert_allclose(coassignment_matrix(np.eye(2)[z])[first, second], inv["coassign"])


# ------------------------------------------------------------------------------ PyMC
def test_pymc_potential_is_minus_cost_over_temperature():
    rng = np.random.default_rng()
    data = uniform_dissimilarities(rng, 5)
    model = PairwiseClustering(2)
    T = 0.37
    pm_model = model.pymc_model(data, T)
    logp = pm_model.compile_logp()
    a, b = rng.integers(0, 2, size=(2, 5))
    difference = logp({"z": a}) - logp({"z": b})
    assert difference == pytest.approx(-(model.cost(data, a) - model.cost(data, b)) / T)
    central = CentralClustering(2, temperature=0.5)
    X = rng.normal(size=(5, 2))
    logp = central.pymc_model(X).compile_logp()
    assert logp({"z": a}) - logp({"z": b}) == pytest.approx(
        -(central.cost(X, a) - central.cost(X, b)) / 0.5
    )


def test_pymc_reference_matches_exact_enumeration_on_n6_k2():
    import arviz as az
    import pymc as pm

    rng = np.random.default_rng()
    data = uniform_dissimilarities(rng, 6)
    model = PairwiseClustering(2)
    T = critical_temperature(data)
    exact = model.gibbs_expectations(data, T)
    with model.pymc_model(data, T) as pm_model:
        idata = pm.sample(
            draws=1500,
            tune=200,
            chains=2,
            cores=1,
            step=pm.CategoricalGibbsMetropolis([pm_model["z"]]),
            random_seed=int(rng.integers(2**31)),
            progressbar=False,
            compute_convergence_checks=False,
        )
    z = idata.posterior["z"].values
    first, second = np.triu_indices(6, 1)
    same = (z[..., first] == z[..., second]).astype(float)
    estimate = same.mean(axis=(0, 1))
    truth = exact["coassign"][first, second]
    ess = np.array([az.ess(same[..., j]) for j in range(same.shape[-1])])
    se = np.sqrt(np.maximum(truth * (1 - truth), 1e-3) / ess)
    # 15 pairs at 5 Monte Carlo standard errors each.
    assert np.all(np.abs(estimate - truth) < 5 * se + 1e-3), (estimate, truth, se)
    costs = model.cost(data, z.reshape(-1, 6))
    cost_se = costs.std() / np.sqrt(float(az.ess(costs.reshape(2, -1))))
    assert abs(costs.mean() - exact["expected_cost"]) < 5 * cost_se


# -------------------------------------------------------------------------- simulate
def test_simulate_shapes_and_determinism():
    model = PairwiseClustering(3)
    a, ta = model.simulate(5, n_items=12)
    b, tb = model.simulate(5, n_items=12)
    assert a == b and np.array_equal(ta["z"], tb["z"])
    assert np.array_equal(a.labels, ta["z"]) and np.bincount(ta["z"]).tolist() == [4, 4, 4]
    data, truth = CentralClustering(2).simulate(1, n_items=10, n_features=3)
    assert isinstance(data, Features) and data.kind == "real" and truth["centers"].shape == (2, 3)
    assert np.allclose(np.linalg.norm(truth["centers"], axis=1), 4.0)


def test_critical_temperature_of_vectors_and_dissimilarities():
    rng = np.random.default_rng()
    X = rng.normal(size=(400, 3)) * [3.0, 1.0, 0.5]
    cov = np.cov(X.T, bias=True)
    assert critical_temperature(X) == pytest.approx(2 * np.linalg.eigvalsh(cov)[-1])
    D = Dissimilarities.from_features(X, "sqeuclidean")
    assert critical_temperature(D) == pytest.approx(critical_temperature(X), rel=1e-6)


# -------------------------------------------------------------------------- bad input
@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda: PairwiseClustering(0), "n_components"),
        (lambda: PairwiseClustering("2"), "n_components"),
        (lambda: CentralClustering(2, temperature=-1.0), "temperature"),
        (lambda: PairwiseClustering(3).check_data([[0, 1], [1, 0]]), "n_components=3"),
        (lambda: PairwiseClustering(2).check_data([[0, -1], [-1, 0]]), r"D\[0, 1\]"),
        (lambda: PairwiseClustering(2).cost([[0, 1], [1, 0]], [0, 2]), "assignments"),
        (lambda: PairwiseClustering(2).cost([[0, 1], [1, 0]], [0, 1, 1]), "assignments"),
        (lambda: PairwiseClustering(2).cost([[0, 1], [1, 0]], [0.5, 1]), "assignments"),
        (lambda: PairwiseClustering(2).gibbs_expectations([[0, 1], [1, 0]], 0.0), "temperature"),
        (
            lambda: PairwiseClustering(2).gibbs_expectations([[0, 1], [1, 0]], 1.0, field=[1.0]),
            "field",
        ),
        (lambda: PairwiseClustering(2).simulate(0, n_items=1), "n_components"),
        (lambda: PairwiseClustering(2).simulate(0, separation=-1.0), "separation"),
        (lambda: PairwiseClustering(2).simulate("abc"), "random_state"),
        (lambda: CentralClustering(2).cost([[0.0], [1.0]], [0, 1], centroids=[[0.0]]), "centroids"),
        (lambda: CentralClustering(2).simulate(0, variances=(0.0,)), "variances"),
        (lambda: CentralClustering(2).check_data([[np.nan], [1.0]]), "X"),
        (lambda: pairwise_cost(np.ones((2, 3)), [0, 1]), "square"),
        (lambda: PairwiseClustering(2).invariants({"q": 1}, [[0, 1], [1, 0]]), "params"),
    ],
)
def test_bad_input_raises_value_error_naming_it(call, message):
    with pytest.raises(ValueError, match=message):
        call()
