"""The pairwise optimality level's start-temperature certificate (issue 25)."""

from types import SimpleNamespace

import numpy as np
import pytest

from latentzoo.inference import pairwise as pairwise_inference
from latentzoo.inference.recipes import _pairwise_optimality
from latentzoo.models import PairwiseClustering
from latentzoo.models.pairwise import critical_temperature
from latentzoo.zoo import ZOO


def test_pairwise_optimality_fails_a_schedule_started_below_the_critical_temperature():
    """Mutation ``pairwise-start-below-critical`` (T0 = 0.5 T_c): the Monte Carlo test of
    descents sees it about half the time; the first temperature against the data's T_c always."""
    entry = ZOO["pairwise"]

    def cold_start(model, data, **options):
        options["T0"] = 0.5 * critical_temperature(data)
        return pairwise_inference.pairwise_annealing(model, data, **options)

    def no_descents(model, data, **options):  # the descents are not what this test is about
        return SimpleNamespace(run_costs=np.array([np.inf]))

    mutated = SimpleNamespace(methods={**entry.methods, "annealing": cold_start})
    small = SimpleNamespace(problems={"optimality": {"n_items": 12}, "greedy": no_descents})
    result = _pairwise_optimality(mutated, small, PairwiseClustering(2), np.random.default_rng(0))
    start = result.checks[1]
    assert not start.passed and start.numbers["start_over_critical"] == pytest.approx(0.5), (
        start.detail
    )
