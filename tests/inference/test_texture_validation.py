"""The validation recipe of texture segmentation (issue 25): its exact and optimality levels pass
on the segmenters' code and fail on broken copies of the code they check."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from latentzoo.data import Dissimilarities
from latentzoo.inference.pairwise import sparse_pairwise_annealing, sparse_pairwise_cost
from latentzoo.inference.texture_segmentation import tied_counts, tied_sites, validation_recipe
from latentzoo.inference.validation import QUICK


def _run(recipe, level, seed=0):
    outcome = recipe.checks[level](None, recipe, None, None, QUICK, np.random.default_rng(seed))
    return {check.name: check for check in outcome.checks}


def _with(recipe, **problems):
    return dataclasses.replace(recipe, problems={**recipe.problems, **problems})


def test_levels_pass_on_the_segmenters_code():
    recipe = validation_recipe()
    for level in ("exact", "optimality"):
        checks = _run(recipe, level)
        assert all(check.passed for check in checks.values()), checks
    assert set(recipe.not_applicable) == {"density", "reference", "mode-matched", "calibrated"}


def _last_site_untied(counts, parent):
    parent = np.array(parent)
    parent[-1] = 0  # the last site summed into the first group
    return tied_counts(counts, parent)


def _coarse_off_by_one(grid_shape, level):
    parent, _ = tied_sites(grid_shape, level)
    return np.roll(parent, 1)


def _cost_without_zero_pairs(data, labels):
    pairs = data.pairs.copy()
    pairs.eliminate_zeros()  # an observed pair at dissimilarity 0 counted as unobserved
    return sparse_pairwise_cost(Dissimilarities.from_sparse(pairs, allow_isolated=True), labels)


@pytest.mark.parametrize(
    "broken, failing",
    [
        ({"tied_counts": _last_site_untied}, "tied E-step = enumerated posterior of the tied groups"),
        ({"coarse_groups": _coarse_off_by_one}, "prolongation sends each group to the coarse group of its sites"),
        ({"sparse_cost": _cost_without_zero_pairs}, "sparse pairwise cost = its definition on every labelling"),
    ],
)  # fmt: skip
def test_exact_level_catches_broken_code(broken, failing):
    checks = _run(_with(validation_recipe(), **broken), "exact")
    assert not checks[failing].passed, checks[failing].detail
    assert all(check.passed for name, check in checks.items() if name != failing)


def test_optimality_level_catches_an_annealing_of_the_wrong_cost():
    def centred(model, data, random_state=None):
        fit = sparse_pairwise_annealing(model, data, random_state=random_state, normalised=False)
        return dataclasses.replace(fit, cost=sparse_pairwise_cost(data, fit.labels))

    checks = _run(_with(validation_recipe(), sparse_annealing=centred), "optimality")
    (check,) = checks.values()
    assert not check.passed and check.numbers["share_below"] > 0.006, check.detail
