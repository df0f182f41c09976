"""The hard methods' certificates of the optimality level (issue 25): ``hard_acm`` and ``hard_scm``
results checked from the counts, not from their own updates.

The real methods pass; hand-broken results fail: a partition one move off a fixed point,
parameters off by a pseudo-count, a worse start returned, a method that moves tied objects or
sweeps with a stale ``c``.
"""

import dataclasses
import re

import numpy as np
import pytest

from latentzoo.data import CoOccurrence
from latentzoo.inference import one_sided, two_sided
from latentzoo.inference.checks import Check
from latentzoo.inference.validation import (
    Comparison,
    ValidationRecipe,
    _with_hard_checks,
    certified,
)
from latentzoo.models import OneSidedClustering, TwoSidedClustering


def _verdicts(checks):
    """Check name without its trailing reference (``(eq. ...)``, ``(ties ...)``) -> passed."""
    return {re.sub(r" \((eq\.|ties) .*\)$", "", check.name): check.passed for check in checks}


def _one_sided_instance(seed=3, eta=10.0):
    model = OneSidedClustering(2, alpha=1.1, eta=eta)
    data, _ = model.simulate(seed, n_docs=20, n_words=20, doc_length=15, separation=0.0)
    return model, data


def _with_params(result, **params):
    return dataclasses.replace(result, params={**result.params, **params})


def test_hard_acm_passes_its_certificate():
    model, data = _one_sided_instance()
    result = one_sided.hard_acm(model, data, max_iter=200, n_init=4, random_state=0)
    checks = one_sided.hard_certificate(model, data, result)
    assert len(checks) == 3 and all(check.passed for check in checks)
    assert max(check.numbers["violation"] for check in checks) <= one_sided.HARD_TOL


def test_hard_acm_certificate_fails_a_moved_row_and_a_wrong_pseudo_count():
    model, data = _one_sided_instance()
    result = one_sided.hard_acm(model, data, max_iter=200, random_state=0)
    z = np.asarray(result.params["z"])
    q, rho, scores, _ = one_sided._hard_map(model, data, z)
    # The row with the largest margin moves to its other cluster; q, rho are its MAP update.
    row = int(np.argmax(np.abs(scores[:, 0] - scores[:, 1])))
    moved = z.copy()
    moved[row] = 1 - moved[row]
    q_moved, rho_moved, _, _ = one_sided._hard_map(model, data, moved)
    broken = _with_params(result, z=moved, q=q_moved, rho=rho_moved)
    verdicts = _verdicts(one_sided.hard_certificate(model, data, broken))
    assert verdicts == {
        "hard returns the MAP q, rho of its partition": True,
        "hard ends at a single-move optimum of J(z, q)": False,
    }
    # q with the pseudo-count eta instead of eta - 1 (mutation one-sided-hard-centroid-...).
    plus_one = OneSidedClustering(2, alpha=model.alpha, eta=model.eta + 1.0)
    q_wrong = one_sided._hard_map(plus_one, data, z)[0]
    verdicts = _verdicts(one_sided.hard_certificate(model, data, _with_params(result, q=q_wrong)))
    assert not verdicts["hard returns the MAP q, rho of its partition"]
    rho_wrong = one_sided._hard_map(dataclasses.replace(model, alpha=2.1), data, z)[1]
    verdicts = _verdicts(
        one_sided.hard_certificate(model, data, _with_params(result, rho=rho_wrong))
    )
    assert not verdicts["hard returns the MAP q, rho of its partition"]


def test_hard_acm_certificate_fails_a_worse_start():
    """A result that claims 8 starts but holds the one of largest J (all J computed here)."""
    model, data = _one_sided_instance()
    rng = np.random.default_rng(0)
    runs = [
        one_sided.hard_acm(model, data, max_iter=200,
                           init={"q": one_sided.hard_acm_start(model, data, rng)})
        for _ in range(8)
    ]  # fmt: skip
    objectives = [one_sided._hard_map(model, data, run.params["z"])[3] for run in runs]
    assert max(objectives) > min(objectives) + 1e-6  # several local optima on this instance
    worst = runs[int(np.argmax(objectives))]
    claimed = dataclasses.replace(
        worst, settings={**worst.settings, "n_init": 8, "random_state": 0}
    )
    verdicts = _verdicts(one_sided.hard_certificate(model, data, claimed))
    assert verdicts["hard returns the MAP q, rho of its partition"]
    assert not verdicts["hard returns the best of its n_init starts"]


def _two_sided_instance(seed=1):
    model = TwoSidedClustering(2, 2)
    drawn, _ = model.simulate(seed, n_rows=8, n_cols=10, n_tokens=200)
    counts = np.zeros((9, 11), dtype=int)
    counts[:8, :10] = drawn.counts.toarray()
    return model, CoOccurrence(counts)  # an empty row and column: the tie rule decides there


def test_hard_scm_passes_its_certificate():
    model, data = _two_sided_instance()
    result = two_sided.hard_scm(model, data, max_iter=200, random_state=0)
    checks = two_sided.hard_certificate(
        model, data, result, two_sided.hard_scm, np.random.default_rng(0)
    )
    assert len(checks) == 4 and all(check.passed for check in checks)


def test_hard_scm_certificate_fails_broken_results_and_methods():
    model, data = _two_sided_instance()
    result = two_sided.hard_scm(model, data, max_iter=200, random_state=0)
    labels_i = np.argmax(result.params["I"], axis=1)
    labels_j = np.argmax(result.params["J"], axis=1)
    c = np.asarray(result.params["c"])
    verdicts = _verdicts(two_sided.hard_certificate(model, data, _with_params(result, c=c * 1.01)))
    assert not verdicts["hard returns the closed-form c, pi, rho of its partition"]
    # One observed row moved to the other cluster, every parameter recomputed for it.
    counts = data.counts.toarray().astype(float)
    mass = counts @ np.eye(2)[labels_j]
    gains = mass @ np.log(np.where(c > 0, c, 1e-300)).T
    row = int(np.argmax(np.abs(gains[:, 0] - gains[:, 1])))
    moved = labels_i.copy()
    moved[row] = 1 - moved[row]
    block = np.eye(2)[moved].T @ mass
    params = model.point_params(np.eye(2)[moved], np.eye(2)[labels_j], block,
                                counts.sum(1), counts.sum(0), counts.sum())  # fmt: skip
    verdicts = _verdicts(two_sided.hard_certificate(model, data, _with_params(result, **params)))
    assert verdicts["hard returns the closed-form c, pi, rho of its partition"]
    assert not verdicts["hard ends at a single-move optimum of its partition"]

    def to_label_zero(model, data, **options):
        """The hard SCM, but objects without observations end in cluster 0 (a tie moved)."""
        fitted = two_sided.hard_scm(model, data, **options)
        empty_i, empty_j = data.row_totals == 0, data.col_totals == 0
        I, J = np.array(fitted.params["I"]), np.array(fitted.params["J"])  # noqa: E741
        I[empty_i], J[empty_j] = np.eye(2)[0], np.eye(2)[0]
        return _with_params(fitted, I=I, J=J)

    def stale(model, data, **options):
        """One sweep that leaves the columns where they were."""
        fitted = two_sided.hard_scm(model, data, **options)
        if options.get("max_iter") == 1:
            return _with_params(fitted, J=np.eye(2)[options["init"]["J"]])
        return fitted

    rng = np.random.default_rng(0)
    verdicts = _verdicts(two_sided.hard_certificate(model, data, result, to_label_zero, rng))
    assert not verdicts["hard started at a fixed point returns it"]
    found = [
        _verdicts(two_sided.hard_certificate(model, data, result, stale, rng))[
            "one hard sweep moves rows, then columns, as eq. (44) asks"
        ]
        for _ in range(5)
    ]
    assert not all(found)


def test_the_level_reports_each_hard_check_over_its_instances():
    def instances(method, model, rng):
        return [
            [Check("optimality", "a", True, "x", {"violation": 0.0, "tolerance": 0.0})],
            [Check("optimality", "a", False, "y", {"violation": 2.0, "tolerance": 0.0})],
        ]

    recipe = ValidationRecipe(hard_instances=instances)
    entry = type("Entry", (), {"methods": {"hard": None}})()
    result = _with_hard_checks(Comparison(), entry, recipe, None, None)
    (check,) = result.checks
    assert not check.passed and check.numbers["failures"] == 1
    assert check.numbers["violation"] == 2.0 and "instance 2" in check.detail


@pytest.mark.parametrize("family", [one_sided, two_sided])
def test_the_families_declare_their_hard_certificate(family):
    assert family.validation_recipe().hard_instances is family.hard_instances


def test_an_instance_whose_method_raises_fails_there_only():
    def raises():
        raise ValueError("shapes")

    (check,) = certified(raises)
    assert not check.passed and "ValueError: shapes" in check.detail
    assert certified(list, [1]) == [1]
