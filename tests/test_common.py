"""The common checks of :mod:`latentzoo.testing`, one test per (family, check) and per
(family, method, check) of the registry: a new family is checked just by being registered.

A check that does not apply to a family is skipped with the reason recorded in the registry
(``Family.skipped_checks``); ``tests/conftest.py`` prints the passed/skipped/failed counts per
family at the end of the run.
"""

import re

import pytest

from latentzoo.testing import method_checks, model_checks, skip_reason
from latentzoo.zoo import ZOO

MODEL_CHECKS = {
    (family, name): check for family, entry in ZOO.items() for name, check in model_checks(entry)
}
METHOD_CHECKS = {
    (family, method, name): check
    for family, entry in ZOO.items()
    for method in entry.methods
    for name, check in method_checks(entry, method)
}


@pytest.mark.parametrize(("family", "check"), list(MODEL_CHECKS), ids=lambda value: str(value))
def test_model_check(family, check, record_property):
    record_property("common_family", family)
    reason = skip_reason(ZOO[family], check)
    if reason is not None:
        pytest.skip(reason)
    MODEL_CHECKS[family, check]()


@pytest.mark.parametrize(
    ("family", "method", "check"), list(METHOD_CHECKS), ids=lambda value: str(value)
)
def test_method_check(family, method, check, record_property):
    record_property("common_family", family)
    reason = skip_reason(ZOO[family], check, method)
    if reason is not None:
        pytest.skip(reason)
    METHOD_CHECKS[family, method, check]()


def test_every_family_and_method_has_checks():
    """The suite is generated from the registry: every family and method appears in it."""
    for family, entry in ZOO.items():
        assert any(key[0] == family for key in MODEL_CHECKS)
        for method in entry.methods:
            assert any(key[:2] == (family, method) for key in METHOD_CHECKS)


def test_skipped_checks_name_existing_checks_and_give_reasons():
    """A skip in the registry names a real check (of the family or one of its methods) and says
    why, so a renamed check cannot silently keep a family out of it."""
    for family, entry in ZOO.items():
        names = {name for key_family, name in MODEL_CHECKS if key_family == family}
        for method in entry.methods:
            method_names = {c for f, m, c in METHOD_CHECKS if (f, m) == (family, method)}
            names |= method_names | {f"{method}:{c}" for c in method_names}
        for name, reason in entry.skipped_checks.items():
            base = re.sub(r"=0$", "", name)
            assert base in names, f"{family}: skipped check {name!r} does not exist"
            assert isinstance(reason, str) and len(reason) > 10, f"{family}: {name!r} has no reason"


def test_a_method_that_breaks_a_promise_fails_the_named_check():
    """The suite has teeth: a copy of a registered family whose EM ignores ``random_state`` (a
    realistic slip in a wrapper) fails exactly the checks about it, by name."""
    import dataclasses

    from latentzoo.inference.one_sided import annealed_em

    def ignores_the_seed(model, data, **options):
        options.pop("random_state", None)
        return annealed_em(model, data, **options)

    from latentzoo.inference.family import Method

    declared = ZOO["one_sided"].methods["annealed_em"].options.values()
    broken = Method(ignores_the_seed, tuple(declared))  # declares random_state, ignores it
    entry = dataclasses.replace(
        ZOO["one_sided"], name="one_sided_broken", methods={"annealed_em": broken}
    )
    checks = dict(method_checks(entry, "annealed_em"))
    # Bad seeds are refused by the declared option before the method runs, so the random_state
    # check still passes; the determinism check finds the seed ignored.
    checks["random_state"]()
    with pytest.raises(AssertionError, match=r"random_state|seed|same"):
        checks["determinism"]()
    checks["option[unknown]"]()  # the other promises still hold
