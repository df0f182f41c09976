"""BHC on the face of the package: ``latentzoo fit bhc``, ``latentzoo validate bhc``, the saved
tree, and validation levels that fail on realistic mutants."""

import dataclasses

import arviz as az
import numpy as np
import pytest
from scipy.cluster.hierarchy import is_valid_linkage

import latentzoo
from latentzoo.cli import main
from latentzoo.data import Features, load
from latentzoo.inference.bhc import bhc, plot_dendrogram
from latentzoo.models import BayesianHierarchicalClustering
from latentzoo.models.conjugate import BetaBernoulli
from latentzoo.zoo import ZOO


def _run(capsys, *argv):
    code = main(list(argv))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


@pytest.fixture(scope="module")
def digits_file(tmp_path_factory):
    """90 digits of three classes as a CSV with item names (keeps the CLI runs short)."""
    digits = load("digits")
    keep = np.flatnonzero(np.isin(digits.labels, [0, 1, 2]))[:90]
    path = tmp_path_factory.mktemp("data") / "digits90.csv"
    rows = [",".join(["item", *digits.feature_names])]
    rows += [",".join([f"d{i}", *map(str, digits.X[i].astype(int))]) for i in keep]
    path.write_text("\n".join(rows))
    return path


def test_fit_bhc_writes_a_netcdf_tree_and_a_dendrogram(capsys, tmp_path):
    """The issue's command on all 1797 digits: the tree as netCDF, the dendrogram as PNG."""
    out = tmp_path / "tree.nc"
    code, stdout, stderr = _run(capsys, "fit", "bhc", "--data", "digits", "--k", "10",
                                "--out", str(out))  # fmt: skip
    assert code == 0, stderr
    assert "DPM lower bound" in stdout and "clusters where r_k < 0.5" in stdout
    idata = az.from_netcdf(str(out))
    assert {"point_estimate", "bhc_tree", "observed_data"} <= set(idata.groups())
    assert "posterior" not in idata.groups()
    attrs = idata.point_estimate.attrs
    assert attrs["model"] == "BayesianHierarchicalClustering" and attrs["method"] == "bhc"
    assert attrs["lower_bound"] <= attrs["log_marginal"]
    clusters = idata.point_estimate["cluster"].to_numpy()
    assert clusters.shape == (1797,) and attrs["n_clusters"] == clusters.max() + 1
    assert len(np.unique(idata.point_estimate["cluster_k"])) == 10
    # --prior-scale 2 is bhc's default: the empirical Beta prior, a_d + b_d = 2 on every pixel
    hyper = idata.bhc_tree["hyper_a"].to_numpy() + idata.bhc_tree["hyper_b"].to_numpy()
    np.testing.assert_allclose(hyper, 2.0)
    assert is_valid_linkage(idata.bhc_tree["linkage"].to_numpy())
    names = list(idata.point_estimate["item"].to_numpy())
    assert names == list(load("digits").item_names)
    assert out.with_suffix(".png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_fit_bhc_npz_loads_without_pickles(capsys, tmp_path, digits_file):
    out = tmp_path / "tree.npz"
    code, _, stderr = _run(capsys, "fit", "bhc", "--data", str(digits_file), "--method",
                           "embhc", "--option", "m=20", "--out", str(out), "--quiet")  # fmt: skip
    assert code == 0, stderr
    with np.load(out, allow_pickle=False) as saved:
        assert str(saved["component"]) == "beta_bernoulli"
        assert saved["leaf_of"].shape == (90,) and saved["leaf_of"].max() < 20
        assert is_valid_linkage(saved["linkage"])
        assert saved["cluster"].shape == (90,) and saved["item"][0] == "d0"
    assert out.with_suffix(".png").exists()


@pytest.mark.parametrize(
    ("flags", "words"),
    [
        (["--k", "0"], "--k must be a positive"),
        (["--k", "500"], "--k 500: n_clusters must be an integer in [1, 90]"),
        (["--prior-scale", "-1"], "--prior-scale: scale must be a positive"),
        (["--prior-scale", "2", "--component", "normal_gamma"], "--prior-scale sets a Beta"),
        (["--method", "pymc"], "bhc has no PyMC reference of its own"),
        (["--method", "nope"], "unknown method 'nope' for bhc; known methods: bhc, rbhc, embhc"),
        (["--seed", "-1"], "--seed must be a non-negative integer"),
    ],
)
def test_fit_bhc_bad_options_are_one_line(capsys, tmp_path, digits_file, flags, words):
    out = tmp_path / "tree.nc"
    code, _, stderr = _run(capsys, "fit", "bhc", "--data", str(digits_file), "--out", str(out),
                           "--quiet", *flags)  # fmt: skip
    lines = stderr.strip().splitlines()
    assert code == 2 and len(lines) == 1 and words in lines[0], stderr
    assert not out.exists() and not out.with_suffix(".png").exists()


def test_validate_bhc_reports_bound_evidence_and_coassignments(capsys, tmp_path):
    """The command of the issue, at its quick sizes: both levels pass on digits with the
    empirical prior (the CLI's default for bhc)."""
    code, stdout, stderr = _run(capsys, "validate", "bhc", "--quick", "--out", str(tmp_path),
                                "--quiet")  # fmt: skip
    assert code == 0, stdout + stderr
    assert "PASSED: levels reached: exact, reference" in stdout
    report = next(tmp_path.glob("*.md")).read_text()
    for words in (
        "Corollary 3.1: lower bound <= exact DPM marginal",
        "Theorem 3.1: bound = DPM mass of the tree-consistent partitions",
        "BHC against the exact DPM (enumeration of all partitions)",
        "BHC co-assignments against the DPM Gibbs sampler",
        "real data 'digits'",
        "not applicable: BHC has no PyMC declaration",
    ):
        assert words in report, words


def _with_method(bhc_method):
    """A copy of the registry's BHC family whose ``bhc`` method is ``bhc_method``."""
    entry = ZOO["bhc"]
    methods = {"bhc": bhc_method, "rbhc": entry.methods["rbhc"], "embhc": entry.methods["embhc"]}
    return dataclasses.replace(entry, methods=methods)


def _validate_mutant(monkeypatch, mutant, model, data, levels):
    monkeypatch.setitem(ZOO, "bhc", _with_method(mutant))
    return latentzoo.validate(model, data, quick=True, levels=levels, random_state=0)


def test_exact_level_catches_a_tree_built_for_another_alpha(monkeypatch):
    """A wrapper that drops the user's concentration (a realistic slip) builds trees whose bound is
    not the DPM mass of their tree-consistent partitions under the user's alpha."""

    def alpha_ignored(model, data, **options):
        return bhc(dataclasses.replace(model, alpha=1.0), data)

    model = BayesianHierarchicalClustering(alpha=0.3)
    honest = latentzoo.validate(model, "digits", quick=True, levels=["exact"], random_state=0)
    assert honest.passed, honest.verdict()
    result = _validate_mutant(monkeypatch, alpha_ignored, model, "digits", ["exact"])
    failed = {check.name for check in result.checks if not check.passed}
    assert "Theorem 3.1: bound = DPM mass of the tree-consistent partitions" in failed


def test_reference_level_catches_a_tree_built_with_the_default_prior(monkeypatch):
    """A wrapper that drops the user's component for its default Beta(1, 1) (another slip):
    on digits its co-assignments no longer follow the DPM posterior of the user's model."""
    digits = load("digits")
    model = BayesianHierarchicalClustering(component=BetaBernoulli.from_data(digits.X, 2.0))

    def prior_ignored(model, data, **options):
        return bhc(BayesianHierarchicalClustering(alpha=model.alpha), data)

    result = _validate_mutant(monkeypatch, prior_ignored, model, digits, ["reference"])
    real = next(c for c in result.checks if "real data" in c.name)
    assert not real.passed and not real.inconclusive, real.detail


def test_tree_inference_data_cut_into_and_truncated_plot():
    import matplotlib

    matplotlib.use("Agg")
    X = np.repeat(np.eye(4), 30, axis=0)
    data = Features(X, labels=np.repeat(np.arange(4), 30), kind="binary")
    tree = bhc(BayesianHierarchicalClustering(), data)
    assert [len(np.unique(tree.cut_into(k))) for k in (1, 4, 120)] == [1, 4, 120]
    idata = tree.to_inference_data(data)
    assert idata.point_estimate["cluster"].dims == ("item",)
    assert idata.observed_data["x"].shape == (120, 4)
    with pytest.raises(ValueError, match="data has 3 items, but the tree has 120"):
        tree.to_inference_data(X[:3])
    ax = plot_dendrogram(tree, labels=data.labels, max_leaves=10)
    assert len(ax.collections[0].get_segments()) == 9
    assert "last 9 of 119 merges" in ax.get_title() and "purity 1.000" in ax.get_title()
    with pytest.raises(ValueError, match="max_leaves"):
        plot_dendrogram(tree, max_leaves=1)


def test_fit_refuses_pymc_for_bhc():
    with pytest.raises(ValueError, match="approximates the dpm family"):
        latentzoo.fit(BayesianHierarchicalClustering(), [[1, 0], [0, 1]], method="pymc")
