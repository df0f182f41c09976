"""The HACM on the face of the package: ``latentzoo fit cluster-abstraction`` and
``latentzoo validate cluster-abstraction``, whose exact level fails on a wrong sampler (the whole
quick validation is the HACM's row of ``tests/test_validation.py``)."""

import dataclasses

import arviz as az
import numpy as np
import pytest

import latentzoo
from latentzoo.cli import main
from latentzoo.inference import cluster_abstraction as hacm
from latentzoo.models import ClusterAbstractionModel


def test_fit_from_the_command_line_saves_the_tree_fit(capsys, tmp_path):
    out = tmp_path / "hacm.nc"
    code = main(["fit", "cluster-abstraction", "--data", "toy", "--k", "1", "--betas", "1",
                 "--out", str(out), "--quiet"])  # fmt: skip
    assert code == 0, capsys.readouterr().err
    idata = az.from_netcdf(str(out))
    assert {"rho", "q", "tau"} <= set(idata.point_estimate.data_vars)
    assert idata.point_estimate.attrs["model"] == "ClusterAbstractionModel"
    assert out.with_suffix(".png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"  # the tree


def test_plot_tree_labels_every_drawn_node_with_its_documents_and_words():
    import matplotlib

    matplotlib.use("Agg")
    from latentzoo.data import load

    data = load("toy")
    result = hacm.annealed_em(ClusterAbstractionModel(2), data, betas=[1.0], random_state=0)
    ax = hacm.plot_tree(result.model, result, data, max_depth=1, n_words=2)
    heads = [text.get_text().splitlines() for text in ax.texts]
    assert len(heads) == 3 and all(len(lines) == 3 for lines in heads)  # root and its children
    docs = [float(lines[0].split("(")[1].split()[0]) for lines in heads]
    assert docs[0] == pytest.approx(data.n_rows) and docs[1] + docs[2] == pytest.approx(docs[0])


def test_exact_level_passes_and_catches_a_sampler_of_another_prior(monkeypatch):
    model = ClusterAbstractionModel(1, alpha=0.8, eta=1.3, gamma=0.9)
    honest = latentzoo.validate(model, "toy", levels=["exact"], quick=True, random_state=0)
    assert honest.levels_reached == ["exact"], honest.verdict()

    original = hacm.ClusterAbstractionGibbs.__init__

    def wrong_eta(self, model, data):  # a sampler that adds the wrong word pseudo-count
        original(self, dataclasses.replace(model, eta=0.3), data)

    monkeypatch.setattr(hacm.ClusterAbstractionGibbs, "__init__", wrong_eta)
    mutant = latentzoo.validate(model, "toy", levels=["exact"], quick=True, random_state=0)
    assert not mutant.passed, mutant.verdict()


@pytest.mark.slow
def test_reference_level_gibbs_agrees_with_pymc():
    result = latentzoo.validate(
        ClusterAbstractionModel(1), "reuters", levels=["reference"], quick=True, random_state=0
    )
    assert result.levels_reached == ["reference"], result.verdict()


def test_density_level_catches_a_reference_with_the_wrong_prior(monkeypatch):
    model = ClusterAbstractionModel(1)
    honest = latentzoo.validate(model, "toy", levels=["density"], quick=True, random_state=0)
    assert honest.levels_reached == ["density"], honest.verdict()
    original = ClusterAbstractionModel.pymc_model

    def wrong_eta(self, data, temperature=1.0):  # the declaration's word prior off by one
        return original(dataclasses.replace(self, eta=self.eta + 1.0), data, temperature)

    monkeypatch.setattr(ClusterAbstractionModel, "pymc_model", wrong_eta)
    mutant = latentzoo.validate(model, "toy", levels=["density"], quick=True, random_state=0)
    assert not mutant.passed, mutant.verdict()


def test_optimality_level_passes_and_catches_an_m_step_without_the_level_prior(monkeypatch):
    model = ClusterAbstractionModel(1, gamma=3.0)
    honest = latentzoo.validate(model, levels=["optimality"], quick=True, random_state=0)
    assert honest.levels_reached == ["optimality"], honest.verdict()
    original = hacm._normalise_tau

    def without_prior(counts, pseudo, valid):  # the M-step of tau forgets gamma - 1
        return original(counts, 0.0, valid)

    monkeypatch.setattr(hacm, "_normalise_tau", without_prior)
    mutant = latentzoo.validate(model, levels=["optimality"], quick=True, random_state=0)
    assert not mutant.passed, mutant.verdict()


def test_optimality_level_is_skipped_where_em_has_no_map():
    model = ClusterAbstractionModel(1, gamma=0.5)
    result = latentzoo.validate(model, levels=["optimality"], quick=True, random_state=0)
    assert result.passed and [check.level for check in result.skipped] == ["optimality"]
    assert "gamma=0.5" in result.skipped[0].detail


def test_gibbs_start_refuses_levels_off_the_path():
    from latentzoo.data import load

    sampler = hacm.ClusterAbstractionGibbs(ClusterAbstractionModel(1), load("toy"))
    leaves = [0] * 6
    with pytest.raises(ValueError, match="one per observation"):
        sampler.init(np.random.default_rng(0), z=(leaves, np.full(len(sampler.words), 2)))
