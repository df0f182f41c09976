"""Branching of :func:`pairwise_annealing` near the critical temperature (issue 23, Fig. 1)."""

import numpy as np
import pytest

from latentzoo.inference.pairwise import pairwise_annealing
from latentzoo.models import PairwiseClustering
from latentzoo.models.pairwise import uniform_dissimilarities

# Small random instances with a fast schedule: a few seconds in all.
MODEL = PairwiseClustering(4)
OPTIONS = {"eta": 0.9}


@pytest.mark.parametrize(
    ("options", "name"),
    [
        ({"branches": 0}, "branches"),
        ({"branches": 2.5}, "branches"),
        ({"branch_below": 0.0}, "branch_below"),
        ({"branch_until": 0.0}, "branch_until"),
        ({"branch_below": 0.5, "branch_until": 0.7}, "branch_until"),
    ],
)
def test_branch_options_are_validated_by_name(options, name):
    with pytest.raises(ValueError, match=name):
        pairwise_annealing(MODEL, uniform_dissimilarities(0, 12), **options)


def test_one_branch_is_the_default_run_exactly():
    data = uniform_dissimilarities(1, 30)
    default = pairwise_annealing(MODEL, data, random_state=3, **OPTIONS)
    single = pairwise_annealing(MODEL, data, branches=1, random_state=3, **OPTIONS)
    assert single.cost == default.cost
    np.testing.assert_array_equal(single.labels, default.labels)
    np.testing.assert_array_equal(single.resp, default.resp)
    assert single.settings == default.settings


@pytest.mark.parametrize("index", [0, 1, 2])
def test_the_branch_with_the_lowest_free_energy_goes_on(index):
    data = uniform_dissimilarities(index, 30)
    unbranched = pairwise_annealing(MODEL, data, random_state=index, **OPTIONS)
    fit = pairwise_annealing(MODEL, data, branches=4, random_state=index, **OPTIONS)
    energies = fit.settings["branch_free_energies"]
    assert len(energies) == 4
    assert fit.settings["branch"] == int(np.argmin(energies))
    # The chosen branch's trace passes through its free energy at the comparison temperature.
    T_pick = fit.settings["branch_until"] * fit.settings["T_c"]
    last = fit.trace[fit.trace["temperature"] >= T_pick * (1 - 1e-12)].iloc[-1]
    assert last["free_energy"] == pytest.approx(min(energies), rel=1e-12)
    # Branch 0 is the unbranched run: chosen, it gives that run's result exactly.
    if fit.settings["branch"] == 0:
        assert fit.cost == unbranched.cost
        np.testing.assert_array_equal(fit.labels, unbranched.labels)
    assert len(fit.trace) >= 1


def test_without_a_temperature_between_the_bounds_the_run_does_not_branch():
    data = uniform_dissimilarities(0, 20)
    default = pairwise_annealing(MODEL, data, random_state=0, **OPTIONS)
    fit = pairwise_annealing(
        MODEL, data, branches=3, branch_below=0.7001, branch_until=0.7, random_state=0, **OPTIONS
    )
    assert "branch_free_energies" not in fit.settings
    assert fit.cost == default.cost
