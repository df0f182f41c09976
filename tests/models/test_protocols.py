"""Every model meets the protocol of its kind in full (models/base.py): no member missing, no skip."""

import dataclasses

import pytest

from latentzoo.models import BayesianSets
from latentzoo.models.base import (
    CostModel,
    LikelihoodModel,
    Model,
    RetrievalModel,
    TreeModel,
)
from latentzoo.models.topic_tree import TopicTreeModel
from latentzoo.zoo import ZOO

KINDS = (LikelihoodModel, CostModel, TreeModel, RetrievalModel, TopicTreeModel)


def _instance(family):
    return family.model(**{name: 2 for name in family.sizes})


@pytest.mark.parametrize("name", sorted(ZOO))
def test_every_registered_model_meets_its_declared_protocol(name):
    family = ZOO[name]
    model = _instance(family)
    assert family.model.protocol in KINDS, f"{name} declares no kind: {family.model.protocol!r}"
    assert isinstance(model, Model)
    assert isinstance(model, family.model.protocol), (
        f"{family.model.__name__} lacks "
        f"{[m for m in _members(family.model.protocol) if not hasattr(model, m)]}"
    )


def test_bayesian_sets_is_a_retrieval_model():
    model = BayesianSets()
    assert model.protocol is RetrievalModel
    assert isinstance(model, RetrievalModel) and isinstance(model, Model)


@pytest.mark.parametrize("name", sorted(ZOO))
def test_a_model_meets_no_other_kind(name):
    """The kinds are distinct: a model of one kind is not mistaken for another (a cost model has
    no likelihood, a likelihood model no cost)."""
    model = _instance(ZOO[name])
    others = [
        kind.__name__ for kind in KINDS if kind is not model.protocol and isinstance(model, kind)
    ]
    assert not others, others


def test_a_member_missing_fails_the_check():
    @dataclasses.dataclass(frozen=True)
    class Partial:
        name = "partial"
        data_type = object
        protocol = CostModel

        def check_data(self, data):
            return data

    assert isinstance(Partial(), Model) and not isinstance(Partial(), CostModel)


def _members(protocol) -> list[str]:
    return sorted(
        name
        for cls in protocol.__mro__
        if cls not in (object,) and getattr(cls, "_is_protocol", False)
        for name in vars(cls)
        if not name.startswith("_")
    ) + sorted(
        name
        for cls in protocol.__mro__
        if getattr(cls, "_is_protocol", False)
        for name in getattr(cls, "__annotations__", {})
    )
