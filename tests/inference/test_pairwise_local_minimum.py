"""The pairwise optimality level's deterministic checks of the local search (issue 25): every end of
``greedy`` (and of the annealing's quench) is a single-move local minimum of the exact cost (16),
and ``greedy`` returns the best of its starts."""

from types import SimpleNamespace

import numpy as np

from latentzoo.inference.pairwise import greedy
from latentzoo.inference.recipes import (
    LOCAL_MINIMUM_TOL,
    _pairwise_descent_checks,
    _single_move_changes,
)
from latentzoo.models import PairwiseClustering
from latentzoo.models.pairwise import pairwise_cost, uniform_dissimilarities


def test_single_move_changes_equal_costs_recomputed_from_scratch():
    """Against eq. (16) evaluated for every moved labelling, on a D that is asymmetric, has a
    diagonal and negative entries, with an empty cluster and a singleton."""
    rng = np.random.default_rng(0)
    n, k = 7, 4
    D = rng.normal(size=(n, n))
    labels = np.array([0, 0, 0, 1, 1, 1, 2])  # cluster 3 empty, cluster 2 a singleton
    moved = np.repeat(labels[None], n * k, axis=0).reshape(n, k, n)
    moved[np.arange(n), :, np.arange(n)] = np.arange(k)
    brute = pairwise_cost(D, moved.reshape(-1, n), k).reshape(n, k) - pairwise_cost(D, labels, k)
    np.testing.assert_allclose(_single_move_changes(D, labels, k), brute, atol=1e-12)


def _descent(labels, run_costs=None):
    return SimpleNamespace(labels=labels, run_costs=run_costs)


def test_checks_pass_on_greedy_and_fail_one_move_away_from_its_minimum():
    model = PairwiseClustering(3)
    data = uniform_dissimilarities(np.random.default_rng(1), 30)
    result = greedy(model, data, n_init=5, random_state=2)
    no_quench = SimpleNamespace(labels=result.labels, settings={})
    minimum, best = _pairwise_descent_checks([data], [result], [no_quench], 3)
    assert minimum.passed and best.passed, (minimum.detail, best.detail)
    # One item moved off the local minimum: moving it back lowers (16) strictly.
    changes = _single_move_changes(data.D, result.labels, 3)
    item, cluster = np.unravel_index(np.argmax(changes), changes.shape)
    off = result.labels.copy()
    off[item] = cluster
    scale = np.abs(data.D).sum() / (2 * 30)
    quenched = SimpleNamespace(labels=off, settings={"quench_sweeps": 3})
    minimum, _ = _pairwise_descent_checks([data], [result], [quenched], 3)
    assert not minimum.passed
    assert minimum.numbers["largest_single_move_gain"] * scale > 0.99 * changes.max()
    assert "annealing's quench on instance 1" in minimum.detail
    minimum, _ = _pairwise_descent_checks([data], [_descent(off)], [no_quench], 3)
    assert not minimum.passed and "greedy on instance 1" in minimum.detail


def test_best_start_check_fails_when_greedy_returns_a_worse_start():
    model = PairwiseClustering(3)
    data = uniform_dissimilarities(np.random.default_rng(3), 30)
    result = greedy(model, data, n_init=5, random_state=4)
    no_quench = SimpleNamespace(labels=result.labels, settings={})
    cost = float(pairwise_cost(data.D, result.labels, 3))
    # The same labels, but run_costs say a start ended lower: greedy kept a worse one.
    worse = _descent(result.labels, np.array([cost, cost - 0.05, cost + 0.1]))
    _, best = _pairwise_descent_checks([data], [worse], [no_quench], 3)
    assert not best.passed and best.numbers["best_start_gap"] > LOCAL_MINIMUM_TOL
    # Without run_costs (a single start) there is nothing to compare.
    _, best = _pairwise_descent_checks([data], [_descent(result.labels)], [no_quench], 3)
    assert best.passed
