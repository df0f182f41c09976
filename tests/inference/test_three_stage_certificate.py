"""The HACM's ``three_stage`` certificate of the optimality level (issue 25): a ``three_stage_em``
result checked through the family's own E/M pass and its trace, not through the method's code.

The real method passes; results of the three catalogued bugs fail, each by a named check: later
stages run at ``beta = 1`` (the wrapped ``annealed_em`` of the later stages gets ``betas=[1.0]``),
later stages stopped at the default ``tol``, the last stage left out; and a trace whose free
energy rises.
"""

import dataclasses

import numpy as np
import pytest

from latentzoo.inference import cluster_abstraction as ca
from latentzoo.inference.checks import Check
from latentzoo.inference.validation import Comparison, _with_hard_checks
from latentzoo.models import ClusterAbstractionModel

BETAS, TOL = [ca.THREE_STAGE_BETA], ca.THREE_STAGE_TOL

STAGES = "three_stage fits tau constant, then per leaf, then per object (sec. 4.2)"
BETA = "three_stage's later stages run at stage 1's final beta"
STOPS = "every stage of three_stage stops at the tol passed"
MONOTONE = "three_stage's free energy never rises within a stage"
FIXED = "three_stage returns a fixed point of its last stage's EM at stage 1's final beta"


def _instance(form, seed=0):
    model = ClusterAbstractionModel(1, tau=form)
    data, _ = model.simulate(seed, **ca.THREE_STAGE_DATA)
    return model, data


def _fit(model, data, **options):
    options = {"betas": BETAS, "tol": TOL, "max_iter": ca.THREE_STAGE_MAX_ITER, **options}
    return ca.three_stage_em(model, data, random_state=1, **options)


def _verdicts(checks):
    """Check name without its trailing equation reference -> passed."""
    return {check.name.removesuffix(" (eq. (53)-(58))"): check.passed for check in checks}


@pytest.mark.parametrize("form", ["leaf", "object"])
def test_three_stage_passes_its_certificate(form):
    model, data = _instance(form)
    checks = ca.three_stage_certificate(model, data, _fit(model, data), BETAS, TOL)
    assert _verdicts(checks) == dict.fromkeys([STAGES, BETA, STOPS, MONOTONE, FIXED], True)
    assert all(check.numbers["violation"] <= check.numbers["tolerance"] for check in checks)


def _later_stages(monkeypatch, **changes):
    """``three_stage_em``'s later stages (the calls of ``annealed_em`` with ``init``) run with
    ``changes`` applied to their options (``None`` drops an option)."""
    real = ca.annealed_em

    def wrapped(model, data, **options):
        if "init" in options:
            options.update(changes)
            options = {name: value for name, value in options.items() if value is not None}
        return real(model, data, **options)

    monkeypatch.setattr(ca, "annealed_em", wrapped)


@pytest.mark.parametrize("form", ["leaf", "object"])
def test_later_stages_at_beta_one_fail_the_temperature_and_the_fixed_point(monkeypatch, form):
    model, data = _instance(form)
    _later_stages(monkeypatch, betas=[1.0])
    verdicts = _verdicts(ca.three_stage_certificate(model, data, _fit(model, data), BETAS, TOL))
    assert not verdicts[BETA] and not verdicts[FIXED]
    assert verdicts[STAGES] and verdicts[STOPS] and verdicts[MONOTONE]


def test_later_stages_at_the_default_tol_fail_the_stopping_rule_and_the_fixed_point(monkeypatch):
    model, data = _instance("leaf")
    _later_stages(monkeypatch, tol=None)
    checks = ca.three_stage_certificate(model, data, _fit(model, data), BETAS, TOL)
    verdicts = _verdicts(checks)
    assert not verdicts[STOPS] and not verdicts[FIXED]
    assert verdicts[STAGES] and verdicts[BETA] and verdicts[MONOTONE]


@pytest.mark.parametrize(("form", "fitted"), [("leaf", "constant"), ("object", "leaf")])
def test_a_missing_last_stage_fails_the_stages_and_the_fixed_point(form, fitted):
    """The stages stop one early: the fit of the previous form, returned for ``form``."""
    model, data = _instance(form)
    result = _fit(dataclasses.replace(model, tau=fitted), data)
    verdicts = _verdicts(ca.three_stage_certificate(model, data, result, BETAS, TOL))
    assert not verdicts[STAGES] and not verdicts[FIXED]


def test_a_rising_free_energy_and_a_worse_hand_over_fail_the_monotone_check():
    model, data = _instance("leaf")
    result = _fit(model, data)
    trace = result.trace.copy()
    leaf = np.flatnonzero(trace["tau_form"] == "leaf")
    # One iteration of the leaf stage rises (by 1e-6, about 1e-8 of F_beta).
    trace.loc[leaf[2], "free_energy"] = trace.loc[leaf[1], "free_energy"] + 1e-6
    checks = ca.three_stage_certificate(
        model, data, dataclasses.replace(result, trace=trace), BETAS, TOL
    )
    assert _verdicts(checks)[MONOTONE] is False
    trace = result.trace.copy()
    trace.loc[leaf[0] :, "free_energy"] += 1.0  # the leaf stage starts above the hand-over
    checks = ca.three_stage_certificate(
        model, data, dataclasses.replace(result, trace=trace), BETAS, TOL
    )
    assert _verdicts(checks)[MONOTONE] is False


def test_the_family_declares_the_certificate_and_the_level_runs_it():
    recipe = ca.validation_recipe()
    assert recipe.method_certificates == {"three_stage": ca.three_stage_instances}

    def instances(method, model, rng):
        return [[method(model)], [Check("optimality", "a", True, "", {"violation": 0.0})]]

    def raises(method, model, rng):
        raise ValueError("shapes")

    def fails(model):
        return Check("optimality", "a", False, "", {"violation": 3.0})

    entry = type("Entry", (), {"methods": {"three_stage": fails, "other": None}})()
    for certificates, detail in [({"three_stage": instances}, "instance 1"),
                                 ({"three_stage": raises, "absent": raises}, "ValueError")]:  # fmt: skip
        recipe = type("Recipe", (), {"hard_instances": None, "method_certificates": certificates})
        (check,) = _with_hard_checks(Comparison(), entry, recipe, None, None).checks
        assert not check.passed and detail in check.detail
    assert check.name == "the three_stage method runs"
