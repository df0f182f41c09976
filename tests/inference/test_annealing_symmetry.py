"""Deterministic annealing breaks the symmetric solution and reports honest phase transitions
(issue 23, first point; Rose et al., seed 000 section 5.1, seed 002 section 4).

At high temperature every component of a mixture sits on one solution; EM cannot leave an
exactly symmetric solution, so the driver perturbs coinciding components at every temperature and
they split below the critical one. A transition is a temperature at which the number of distinct
components (the stated measure, :class:`ComponentSymmetry`) grew.
"""

import numpy as np
import pytest

import latentzoo
from latentzoo.data import load
from latentzoo.inference.annealing import (
    ComponentSymmetry,
    GeometricCooling,
    distinct_groups,
)
from latentzoo.models import AspectModel


def distinct_topics(phi: np.ndarray, tol: float = 1e-3) -> int:
    """Distinct rows of ``phi`` (L1 distance above ``tol``), counted independently of the driver."""
    distance = np.abs(phi[:, None, :] - phi[None, :, :]).sum(axis=-1)
    return int(sum(not (distance[k, :k] <= tol).any() for k in range(len(phi))))


def assert_transitions_are_splits(result) -> None:
    """Every reported transition is a stage that ended with more distinct components than the
    one before, and every such stage is reported."""
    order = result.stages["order_parameter"].to_numpy()
    betas = result.stages["beta"].to_numpy()
    grew = betas[1:][np.diff(order) > 0]
    assert result.transitions == [float(b) for b in grew]


# ------------------------------------------------------------------------------- the measure
def test_distinct_groups_join_the_first_close_row():
    rows = np.array([[0.5, 0.5], [0.9, 0.1], [0.5004, 0.4996], [0.9, 0.1]])
    assert distinct_groups(rows, 1e-3).tolist() == [0, 1, 0, 1]
    assert distinct_groups(rows, 1e-4).tolist() == [0, 1, 2, 1]


def test_perturbation_moves_only_coinciding_components_and_keeps_the_simplex():
    phi = np.array([[0.25, 0.25, 0.5], [0.25, 0.25, 0.5], [0.7, 0.2, 0.1]])
    symmetry = ComponentSymmetry([["phi"]], np.random.default_rng(0), 1e-4, 1e-3)
    groups = symmetry.groups({"phi": phi})
    assert [(kind, members.tolist()) for kind, members in groups] == [(0, [0, 1])]
    moved = symmetry.perturb({"phi": phi}, groups)["phi"]
    np.testing.assert_array_equal(moved[2], phi[2])
    np.testing.assert_allclose(moved.sum(axis=1), 1.0)
    assert 0 < symmetry.spread({"phi": moved}, groups) < 1e-3
    # Perturbed copies are still one component by the measure: noise is never a split.
    assert symmetry.count({"phi": moved}) == 2


def test_a_transition_is_reported_only_where_the_count_grows():
    import pandas as pd

    stages = pd.DataFrame(
        {"beta": [0.1, 0.2, 0.4, 0.8], "log_likelihood": [-9.0, -8.0, -7.0, -6.0],
         "order_parameter": [1, 2, 1, 3]}
    )  # fmt: skip
    assert GeometricCooling().transitions(stages) == [0.2, 0.8]


@pytest.mark.parametrize("perturbation", [-1e-4, 1e-3, 0.5])
def test_the_perturbation_stays_inside_the_distinct_tolerance(perturbation):
    with pytest.raises(ValueError, match="perturbation must lie in"):
        GeometricCooling(perturbation=perturbation)


# ------------------------------------------------------------------------ simulated corpus
@pytest.fixture(scope="module")
def separated_corpus():
    model = AspectModel(3)
    data, _ = model.simulate(0, n_docs=40, n_words=60, doc_length=200, separated=True)
    return model, data


def test_annealing_splits_the_topics_of_a_simulated_corpus(separated_corpus):
    model, data = separated_corpus
    plain = latentzoo.fit(model, data, "annealed_em", betas=[1.0], random_state=0)
    cooled = latentzoo.fit(model, data, "annealed_em", betas=GeometricCooling(), random_state=0)
    assert cooled.perplexity(data) <= 1.05 * plain.perplexity(data)
    assert distinct_topics(cooled.params["phi"]) == 3
    order = cooled.stages["order_parameter"].to_numpy()
    assert order[1] == 1 and order[-1] == 3
    assert len(cooled.transitions) >= 1
    assert_transitions_are_splits(cooled)
    # The measure is stated in the result, its summary and its saved file.
    assert cooled.transition_measure.startswith("distinct components: rows of phi")
    lines = cooled.summary_lines()
    assert any(line.startswith("phase transitions at beta: ") for line in lines)
    assert any(cooled.transition_measure in line for line in lines)
    attrs = cooled.to_inference_data().point_estimate.attrs
    assert attrs["transition_measure"] == cooled.transition_measure


def test_without_the_perturbation_annealing_stays_symmetric(separated_corpus):
    """The failure of the issue: EM alone never leaves the symmetric solution, and then no
    transition is reported."""
    model, data = separated_corpus
    stuck = latentzoo.fit(
        model, data, "annealed_em", betas=GeometricCooling(perturbation=0.0), random_state=0
    )
    assert distinct_topics(stuck.params["phi"]) == 1
    assert stuck.transitions == []


def test_same_random_state_same_annealed_fit(separated_corpus):
    model, data = separated_corpus
    a, b = (
        latentzoo.fit(model, data, "annealed_em", betas=GeometricCooling(0.3, 1.0), random_state=5)
        for _ in range(2)
    )
    for name in ("theta", "phi"):
        np.testing.assert_array_equal(a.params[name], b.params[name])
    assert a.transitions == b.transitions


def test_schedules_that_start_at_beta_one_are_untouched(separated_corpus):
    """A list of betas does not go through the symmetry breaking: no extra columns, no measure."""
    model, data = separated_corpus
    plain = latentzoo.fit(model, data, "annealed_em", betas=[1.0], random_state=0)
    assert plain.transitions is None and plain.transition_measure is None
    assert "perturbed" not in plain.stages


# ------------------------------------------------------------------------------ Reuters
def test_annealing_the_aspect_model_on_reuters_reaches_plain_em():
    """Issue 23: on Reuters (10% held out), K = 8 and ``GeometricCooling()``, annealing used to
    return 8 identical topics (training perplexity 2392, the unigram model's) with 4 reported
    transitions; now it is within 5% of plain EM's training perplexity with 8 distinct topics,
    and each reported transition is a split. About 5 s, so it runs in the default tier."""
    train, _ = load("reuters").split(0.1, random_state=0)
    model = AspectModel(8)
    plain = latentzoo.fit(model, train, "annealed_em", betas=[1.0], random_state=0)
    cooled = latentzoo.fit(model, train, "annealed_em", betas=GeometricCooling(), random_state=0)
    assert cooled.perplexity(train) <= 1.05 * plain.perplexity(train)
    phi = cooled.params["phi"]
    assert distinct_topics(phi) == 8
    # Distinct topics, not near-copies: every pair differs by a sizeable L1 distance.
    distance = np.abs(phi[:, None, :] - phi[None, :, :]).sum(axis=-1)
    assert distance[np.triu_indices(8, 1)].min() > 0.1
    assert cooled.transitions
    assert_transitions_are_splits(cooled)
