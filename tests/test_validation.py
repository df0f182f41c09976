"""``latentzoo.validate`` on every registered family, and a negative control that must fail."""

import dataclasses

import pytest

import latentzoo
from latentzoo import validation
from latentzoo.models import (
    BayesianMixture,
    DirichletProcessMixture,
    OneSidedClustering,
    ProductSpaceMixture,
    TwoSidedClustering,
)
from latentzoo.zoo import ZOO

ALL_LEVELS = ["exact", "reference", "mode-matched", "calibrated"]


def test_every_registered_family_has_a_recipe_covering_the_four_levels():
    for name, family in ZOO.items():
        recipe = family.recipe()
        covered = set(recipe.checks) | set(recipe.not_applicable)
        assert set(validation.LEVEL_NAMES) <= covered, name
        assert not set(recipe.checks) & set(recipe.not_applicable), name


@pytest.mark.parametrize(
    ("model", "reached", "skipped"),
    [
        (OneSidedClustering(2), ALL_LEVELS, []),
        (TwoSidedClustering(2, 2), ALL_LEVELS, []),
        (ProductSpaceMixture(2, 2), ["reference"], ["exact", "mode-matched", "calibrated"]),
        (DirichletProcessMixture(), ALL_LEVELS, []),
        (BayesianMixture(2), ALL_LEVELS, []),
    ],
    ids=["one_sided", "two_sided", "product_space", "dpm", "finite_mixture"],
)
def test_quick_validation_passes_every_applicable_level(model, reached, skipped):
    comparison = latentzoo.validate(model, quick=True, random_state=1)
    assert comparison.passed, comparison.verdict()
    assert comparison.levels_reached == reached
    assert [check.level for check in comparison.skipped] == skipped
    text = comparison.to_markdown()
    assert "Verdict" in text
    for level in skipped:
        assert f"| {level} | - | skipped | not applicable" in text


def _wrong_prior_family(family):
    """The aspect family with a sampler whose prior differs from the reference's (eta x 5)."""
    from latentzoo.inference.aspect import AspectGibbs, gibbs

    def wrong(model):
        return dataclasses.replace(model, eta=model.eta * 5)

    recipe = dataclasses.replace(
        family.recipe(), sampler_class=lambda model, data: AspectGibbs(wrong(model), data)
    )
    methods = {**family.methods, "gibbs": lambda model, data, **o: gibbs(wrong(model), data, **o)}
    return dataclasses.replace(family, methods=methods, recipe=lambda: recipe)


def test_validation_fails_for_a_sampler_with_the_wrong_prior(monkeypatch):
    monkeypatch.setitem(ZOO, "aspect", _wrong_prior_family(ZOO["aspect"]))
    from latentzoo.models import AspectModel

    comparison = latentzoo.validate(
        AspectModel(2, alpha=0.5, eta=0.3), levels=["exact", "calibrated"], random_state=0
    )
    assert not comparison.passed
    failed = {check.level for check in comparison.checks if not check.passed}
    assert failed == {"exact", "calibrated"}, comparison.verdict()


def test_a_family_extends_its_checks(monkeypatch):
    """A recipe may add checks of its own; validate runs them by name like the standard levels."""
    from latentzoo.inference.compare import Check, Comparison
    from latentzoo.models import AspectModel

    family = ZOO["aspect"]
    recipe = family.recipe()

    def extra(entry, recipe, model, data, settings, rng, progressbar):
        return Comparison(checks=[Check("extra", "always", True, "a family's own check")])

    extended = dataclasses.replace(recipe, checks={**recipe.checks, "extra": extra})
    monkeypatch.setitem(ZOO, "aspect", dataclasses.replace(family, recipe=lambda: extended))
    comparison = latentzoo.validate(AspectModel(2), levels=["extra"])
    assert comparison.levels_reached == ["extra"] and comparison.passed


def test_dpm_validation_fails_for_a_sampler_with_the_wrong_concentration(monkeypatch):
    """A DPM Gibbs sampler targeting alpha x 4 fails the exact level (both move sets)."""
    from latentzoo.inference.mixture import MixtureGibbs

    family = ZOO["dpm"]
    recipe = family.recipe()

    def exact(entry, recipe, model, data, settings, rng, progressbar):
        wrong = dataclasses.replace(model, alpha=model.alpha * 4)
        real = validation_module_mixture_gibbs.MixtureGibbs
        monkeypatch.setattr(
            validation_module_mixture_gibbs,
            "MixtureGibbs",
            lambda model, items, **options: real(wrong, items, **options),
        )
        return recipe_exact(entry, recipe, model, data, settings, rng, progressbar)

    import latentzoo.inference.mixture as validation_module_mixture_gibbs
    from latentzoo.recipes import _mixture_exact as recipe_exact

    assert validation_module_mixture_gibbs.MixtureGibbs is MixtureGibbs
    mutated = dataclasses.replace(recipe, checks={**recipe.checks, "exact": exact})
    monkeypatch.setitem(ZOO, "dpm", dataclasses.replace(family, recipe=lambda: mutated))
    comparison = latentzoo.validate(DirichletProcessMixture(alpha=0.5), levels=["exact"])
    assert not comparison.passed
    assert [check.passed for check in comparison.checks] == [False, False]


def test_mode_matched_level_of_a_niw_mixture_is_reported_not_applicable():
    from latentzoo.data import load
    from latentzoo.models import NormalInverseWishart

    model = DirichletProcessMixture(component=NormalInverseWishart())
    comparison = latentzoo.validate(model, load("glass"), levels=["mode-matched"])
    assert comparison.passed and comparison.levels_reached == []
    assert [check.level for check in comparison.skipped] == ["mode-matched"]
    assert "Bartlett" in comparison.skipped[0].detail
