"""Bayesian Sets as a registered family: ``latentzoo validate bayesian_sets`` and levels that fail
on realistic mutants of the scoring method."""

import dataclasses

import numpy as np
import pytest

import latentzoo
from latentzoo.cli import main
from latentzoo.inference.bayesian_sets import retrieve
from latentzoo.inference.family import Method
from latentzoo.models import BayesianSets
from latentzoo.models.conjugate import BetaBernoulli
from latentzoo.zoo import ZOO


def _validate_mutant(monkeypatch, mutant, model, levels, seed=0):
    entry = ZOO["bayesian_sets"]
    method = Method(mutant, tuple(entry.methods["query"].options.values()))
    monkeypatch.setitem(ZOO, "bayesian_sets", dataclasses.replace(entry, methods={"query": method}))
    return latentzoo.validate(model, quick=True, levels=levels, random_state=seed)


def _failed(result):
    return [check.name for check in result.checks if not check.passed]


@pytest.mark.parametrize("seed", [0, 1])
def test_validate_passes_on_the_method(seed):
    result = latentzoo.validate(
        BayesianSets(), quick=True, levels=["exact", "reference"], random_state=seed
    )
    assert result.passed, result.verdict()
    assert {check.level for check in result.checks} == {"exact", "reference"}


def test_exact_level_catches_a_query_that_loses_an_item(monkeypatch):
    """Off by one in the query (the last item dropped): the posterior counts are wrong."""

    def drops_last(model, data, query=None):
        return retrieve(model, data, query=list(query)[:-1])

    result = _validate_mutant(monkeypatch, drops_last, BayesianSets(), ["exact"])
    assert any("quadrature" in name for name in _failed(result)), result.verdict()


def test_reference_level_catches_a_score_under_the_default_prior(monkeypatch):
    """Scores computed under Beta(1, 1) instead of the user's prior: PyMC, which samples the
    user's posterior, disagrees by many Monte Carlo standard errors."""

    def default_prior(model, data, query=None):
        return retrieve(dataclasses.replace(model, component=BetaBernoulli(1.0, 1.0)), data, query)

    model = BayesianSets(component=BetaBernoulli(a=0.3, b=3.0))
    result = _validate_mutant(monkeypatch, default_prior, model, ["reference"])
    assert "scores = PyMC Monte Carlo estimate" in _failed(result), result.verdict()


def test_cli_validate_writes_the_report(tmp_path, capsys):
    code = main(["validate", "bayesian_sets", "--quick", "--quiet", "--out", str(tmp_path)])
    out = capsys.readouterr().out
    assert code == 0, out
    report = (tmp_path / "summary.md").read_text()
    assert "scores = (4.1) by quadrature" in report
    assert "not applicable: the scores are closed forms" in report
    assert np.isfinite(float(report.split("max |z| ")[1].split()[0]))
