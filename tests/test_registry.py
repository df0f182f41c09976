"""The one registry: every family keeps the model and data contracts and is reachable by name."""

import dataclasses

import numpy as np
import pytest

import latentzoo
from latentzoo.data import Dataset, Features
from latentzoo.models import Model
from latentzoo.zoo import ZOO, as_table, entry_for


def _instance(family):
    sizes = {name: 2 for name in family.sizes}
    return family.model(**sizes)


@pytest.mark.parametrize("name", sorted(ZOO))
def test_every_family_keeps_the_contracts(name):
    family = ZOO[name]
    model = _instance(family)
    if family.reference != "pymc":  # an approximation of another family's model (BHC of the DPM)
        reference = getattr(model, family.reference)
        assert isinstance(reference, Model) and entry_for(reference).name == family.reference
    else:  # its declared protocol: a likelihood, cost or retrieval model
        assert isinstance(model, Model) and isinstance(model, family.protocol)
    assert model.data_type is family.data
    assert family.methods and all(callable(method) for method in family.methods.values())
    assert entry_for(model) is family and entry_for(name) is family
    assert {field.name for field in dataclasses.fields(family.model)} >= set(family.sizes)
    data, _ = model.simulate(0)
    assert isinstance(data, Dataset) and isinstance(data, family.data)


def test_list_shows_every_family_with_its_container():
    table = as_table()
    assert list(table["model"]) == list(ZOO)
    assert set(table["data"]) == {"CoOccurrence", "Features", "Dissimilarities"}


def test_fit_takes_each_familys_own_container():
    X = np.array([[1, 0, 1], [1, 0, 1], [0, 1, 0], [0, 1, 1]])
    from latentzoo.models import DirichletProcessMixture

    idata = latentzoo.fit(DirichletProcessMixture(), X, method="gibbs", chains=1, draws=5,
                          tune=2, random_state=0, progressbar=False)  # fmt: skip
    assert idata.posterior["z"].shape == (1, 5, 4)
    with pytest.raises(ValueError, match="do not fit the BetaBernoulli component"):
        latentzoo.fit(DirichletProcessMixture(), X * 0.5, method="gibbs")
    with pytest.raises(ValueError, match="unknown method 'annealed_em' for dpm"):
        latentzoo.fit(DirichletProcessMixture(), Features(X), method="annealed_em")


def test_the_options_doc_is_generated_from_the_declarations():
    """docs/options.md is what the families declare (regenerate it after changing an Option)."""
    from pathlib import Path

    from latentzoo.zoo import options_markdown

    path = Path(__file__).resolve().parents[1] / "docs" / "options.md"
    assert path.read_text() == options_markdown(), (
        "docs/options.md is out of date: run `python -m latentzoo.zoo > docs/options.md`"
    )


@pytest.mark.parametrize(
    "name, method", [(name, method) for name in sorted(ZOO) for method in ZOO[name].methods]
)
def test_an_option_a_method_does_not_declare_is_refused_naming_it(name, method):
    # Before: Python's TypeError ("ward() got an unexpected keyword argument ..."), from deep in a
    # sampler's set-up for Gibbs, naming no option list and not saying why a deterministic method
    # takes no seed.
    family = ZOO[name]
    model = _instance(family)
    data, _ = model.simulate(0)
    with pytest.raises(ValueError, match=r"takes no option 'colour'; its options are \w"):
        latentzoo.fit(model, data, method=method, colour=1)
    if not family.methods[method].takes_random_state:
        with pytest.raises(ValueError, match="takes no option 'random_state': it is deterministic"):
            latentzoo.fit(model, data, method=method, random_state=0)
