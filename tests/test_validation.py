"""``latentzoo.validate`` on every registered family, and a negative control that must fail."""

import dataclasses

import pytest

import latentzoo
from latentzoo import validation
from latentzoo.models import OneSidedClustering, ProductSpaceMixture, TwoSidedClustering
from latentzoo.zoo import ZOO

ALL_LEVELS = ["exact", "reference", "mode-matched", "calibrated"]


def test_every_registered_family_has_a_protocol():
    assert set(ZOO) <= set(validation.PROTOCOLS)


@pytest.mark.parametrize(
    ("model", "reached", "skipped"),
    [
        (OneSidedClustering(2), ALL_LEVELS, []),
        (TwoSidedClustering(2, 2), ALL_LEVELS, []),
        (ProductSpaceMixture(2, 2), ["reference"], ["exact", "mode-matched", "calibrated"]),
    ],
    ids=["one_sided", "two_sided", "product_space"],
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


def _wrong_prior_protocol(factory):
    """The aspect protocol with a sampler whose prior differs from the reference's (eta x 5)."""
    from latentzoo.inference.aspect import AspectGibbs, gibbs

    protocol = factory()

    def wrong(model):
        return dataclasses.replace(model, eta=model.eta * 5)

    return dataclasses.replace(
        protocol,
        sampler_class=lambda model, data: AspectGibbs(wrong(model), data),
        enumerate=lambda model, data, sampler: protocol.enumerate(model, data, sampler),
    ), lambda model, data, **options: gibbs(wrong(model), data, **options)


def test_validation_fails_for_a_sampler_with_the_wrong_prior(monkeypatch):
    protocol, wrong_gibbs = _wrong_prior_protocol(validation.PROTOCOLS["aspect"])
    monkeypatch.setitem(validation.PROTOCOLS, "aspect", lambda: protocol)
    real_method = validation._method
    monkeypatch.setattr(
        validation,
        "_method",
        lambda entry, name: wrong_gibbs if name == "gibbs" else real_method(entry, name),
    )
    from latentzoo.models import AspectModel

    comparison = latentzoo.validate(
        AspectModel(2, alpha=0.5, eta=0.3), levels=["exact", "calibrated"], random_state=0
    )
    assert not comparison.passed
    failed = {check.level for check in comparison.checks if not check.passed}
    assert failed == {"exact", "calibrated"}, comparison.verdict()
