"""The ``simulate`` the co-occurrence families declare once (:class:`CorpusSimulator`): each family's
signature and docstring show its own sizes and defaults, and arguments bind as a written-out
signature would bind them."""

import inspect

import numpy as np
import pytest

from latentzoo.models import (
    AspectModel,
    ClusterAbstractionModel,
    OneSidedClustering,
    ProductSpaceMixture,
    TwoSidedClustering,
)

FAMILIES = [
    (AspectModel(2), {"n_docs": 30, "n_words": 60, "doc_length": 200}),
    (OneSidedClustering(2), {"n_docs": 30, "n_words": 60, "doc_length": 200}),
    (ClusterAbstractionModel(1), {"n_docs": 40, "n_words": 60, "doc_length": 100}),
    (TwoSidedClustering(2, 2), {"n_rows": 12, "n_cols": 15, "n_tokens": 200}),
    (ProductSpaceMixture(2), {"n_docs": 30, "n_words": 60, "n_tokens": None}),
]


@pytest.mark.parametrize("model, sizes", FAMILIES, ids=lambda x: type(x).__name__)
def test_signature_and_docstring_show_the_family_defaults(model, sizes):
    parameters = inspect.signature(model.simulate).parameters
    expected = {"random_state": None, **sizes, "separated": False, "separation": 0.9}
    assert {name: p.default for name, p in parameters.items()} == expected
    doc = model.simulate.__doc__
    assert doc.index("Parameters\n----------") < doc.index("Returns\n-------")
    for name, default in sizes.items():
        assert f"{name} : " in doc and f"default {default}" in doc


def test_arguments_bind_by_position_and_by_name():
    model = OneSidedClustering(2)
    by_name = model.simulate(3, n_docs=5, n_words=7, doc_length=9, separated=True)
    by_position = model.simulate(3, 5, 7, 9, True)
    assert by_name[0] == by_position[0]
    np.testing.assert_array_equal(by_name[1]["z"], by_position[1]["z"])
    with pytest.raises(TypeError, match="n_items"):
        model.simulate(0, n_items=5)
