"""Issue 24: what the command prints is what ran; results that save; defaults that respect the
data's scale; long jobs that say their time up front."""

import numpy as np
import pytest

from latentzoo.cli import main
from latentzoo.models import AspectModel


def _binary_csv(path):
    rows = np.array([[1, 1, 0, 0], [1, 1, 0, 1], [0, 0, 1, 1], [0, 1, 1, 1], [1, 0, 0, 0]])
    np.savetxt(path, rows, delimiter=",", fmt="%d")
    return str(path)


def _run(capsys, *argv):
    code = main(list(argv))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


# ------------------------------------------------------------ unset priors print as unset
def test_an_unset_prior_prints_as_unset_and_a_resolved_one_as_its_value():
    # Found: repr(AspectModel(5)) showed alpha=1.1 although a Gibbs fit uses 0.1.
    assert repr(AspectModel(5)) == "AspectModel(n_components=5, alpha=None, eta=None)"
    assert repr(AspectModel(5, eta=0.5)) == "AspectModel(n_components=5, alpha=None, eta=0.5)"
    assert repr(AspectModel(5).for_method("gibbs")) == (
        "AspectModel(n_components=5, alpha=0.1, eta=0.01)"
    )
    assert repr(AspectModel(5).for_method("annealed_em")) == (
        "AspectModel(n_components=5, alpha=1.1, eta=1.01)"
    )


def test_fit_prints_the_priors_the_method_used(capsys, tmp_path):
    # Found: `latentzoo fit aspect --method gibbs` printed alpha=1.1, eta=1.01 for a fit at
    # 0.1 and 0.01.
    out = tmp_path / "fit.nc"
    code, printed, _ = _run(capsys, "fit", "aspect", "--data", "toy", "--k", "2", "--method",
                            "gibbs", "--chains", "1", "--draws", "5", "--tune", "5", "--out",
                            str(out))  # fmt: skip
    assert code == 0
    assert "AspectModel(n_components=2, alpha=0.1, eta=0.01) with gibbs" in printed
    code, printed, _ = _run(capsys, "fit", "aspect", "--data", "toy", "--k", "2", "--method",
                            "annealed_em", "--betas", "1", "--out", str(out))  # fmt: skip
    assert code == 0
    assert "AspectModel(n_components=2, alpha=1.1, eta=1.01) with annealed_em" in printed


# ------------------------------------------------- the DPM's truncation is not a cluster count
def test_a_dpm_prints_its_truncation_as_the_pymc_references(capsys, tmp_path):
    # Found: a DPM printed n_components=10 (the PyMC truncation), which reads as ten clusters.
    from latentzoo.models import DirichletProcessMixture

    model = DirichletProcessMixture(alpha=2.0, n_components=10)
    assert "pymc_truncation=10" in repr(model) and "n_components" not in repr(model)
    assert model == DirichletProcessMixture(2.0, n_components=10)  # the keyword is kept
    data = _binary_csv(tmp_path / "items.csv")
    out = tmp_path / "dpm.nc"
    code, printed, _ = _run(capsys, "fit", "dpm", "--data", data, "--draws", "4",
                            "--tune", "2", "--chains", "1", "--out", str(out))  # fmt: skip
    assert code == 0 and "pymc_truncation=10" in printed and "n_components" not in printed


# --------------------------------------------------------- Bayesian Sets results that save
@pytest.mark.parametrize("suffix", [".nc", ".npz"])
def test_query_saves_every_items_score_with_out(capsys, tmp_path, suffix):
    # Found: Bayesian Sets results could not be saved from `latentzoo query`.
    from latentzoo.inference.bayesian_sets import RetrievalResult

    data = _binary_csv(tmp_path / "items.csv")
    out = tmp_path / f"query{suffix}"
    code, printed, _ = _run(capsys, "query", "--data", data, "--items", "0,1", "--out", str(out))
    assert code == 0 and f"saved the scores of all 5 items to {out}" in printed
    saved = RetrievalResult.load(out)
    assert saved.scores.shape == (5,) and saved.query.tolist() == [0, 1]
    code, _, err = _run(capsys, "query", "--data", data, "--items", "0", "--out", "x.txt")
    assert code == 2 and "--out x.txt: name the file .nc" in err


# ----------------------------------------------------------------- an .npz written once
def test_fit_writes_an_npz_once_without_a_netcdf_first(capsys, tmp_path, monkeypatch):
    # Found: `fit --out x.npz` of a result without an .npz of its own wrote netCDF there, then
    # overwrote it with the arrays.
    from latentzoo.inference import annealing

    def no_netcdf(self, path, data=None):
        raise AssertionError(f"netCDF written to {path}")

    monkeypatch.setattr(annealing.PointEstimateMethods, "save", no_netcdf)
    out = tmp_path / "fit.npz"
    code, _, err = _run(capsys, "fit", "aspect", "--data", "toy", "--k", "2", "--betas", "1",
                        "--out", str(out))  # fmt: skip
    assert code == 0, err
    with np.load(out, allow_pickle=False) as saved:
        assert saved["params.theta"].shape == (6, 2)


# ----------------------------------------------- priors that respect the data's scale
def test_fit_dpm_and_fit_bhc_start_from_the_same_empirical_prior(capsys, tmp_path):
    # Found: `fit dpm` on digits kept Beta(1, 1) while `fit bhc` set it from the data.
    import argparse

    from latentzoo.cli import _model
    from latentzoo.data import Features
    from latentzoo.zoo import ZOO

    data = Features(np.loadtxt(_binary_csv(tmp_path / "items.csv"), delimiter=","))
    args = argparse.Namespace(k=None, param=None, component=None, prior_scale=None)
    dpm = _model(ZOO["dpm"], args, default_k=10, data=data, fitting=True)
    bhc = _model(ZOO["bhc"], args, default_k=10, data=data, fitting=True)
    assert dpm.component == bhc.component and dpm.component != type(dpm.component)()
    # validate keeps the DPM's own prior: its levels draw data of other sizes
    validated = _model(ZOO["dpm"], args, default_k=2, data=data)
    assert validated.component == type(dpm.component)()
    out = tmp_path / "dpm.nc"
    code, printed, _ = _run(capsys, "fit", "dpm", "--data", str(tmp_path / "items.csv"),
                            "--draws", "4", "--tune", "2", "--chains", "1", "--out", str(out))  # fmt: skip
    assert code == 0 and "prior: BetaBernoulli from the data's feature means m, a = 2 m" in printed


def _glass_like_csv(path):
    rng = np.random.default_rng(0)
    table = np.column_stack([rng.normal(72.65, 0.77, 12), rng.normal(0.0, 1.0, 12)])
    np.savetxt(path, table, delimiter=",", header="Si,Z", comments="")
    return str(path)


def test_fit_says_real_features_are_off_the_priors_scale_and_standardize_fixes_it(capsys, tmp_path):
    # Found: `fit dpm --data glass --component normal_gamma` ran on raw features (Si: mean 72.65,
    # sd 0.77) under a prior centred at 0, and the command offered no --standardize.
    import arviz as az

    data = _glass_like_csv(tmp_path / "glass.csv")
    out = tmp_path / "dpm.nc"
    common = ["--component", "normal_gamma", "--draws", "4", "--tune", "2", "--chains", "1",
              "--out", str(out)]  # fmt: skip
    code, printed, _ = _run(capsys, "fit", "dpm", "--data", data, *common)
    assert code == 0
    assert "prior: NormalGamma(mu0=0.0, kappa0=1.0, a0=1.0, b0=1.0)" in printed
    assert "note: feature Si has mean 72." in printed and "--standardize" in printed
    code, printed, _ = _run(capsys, "fit", "dpm", "--data", data, "--standardize", *common)
    assert code == 0 and "features standardised" in printed and "note:" not in printed
    observed = az.from_netcdf(out).observed_data
    values = next(iter(observed.data_vars.values())).to_numpy()
    np.testing.assert_allclose(values.mean(axis=0), 0.0, atol=1e-12)
    np.testing.assert_allclose(values.std(axis=0), 1.0)


def test_standardize_is_refused_for_data_that_are_not_features(capsys, tmp_path):
    code, _, err = _run(capsys, "fit", "aspect", "--data", "toy", "--standardize", "--out",
                        str(tmp_path / "x.nc"))  # fmt: skip
    assert code == 2 and "--standardize applies to feature data, not CoOccurrence" in err


# ------------------------------------------------------ a long job says its time up front
def test_fit_bhc_on_many_items_says_its_expected_time_before_starting(
    capsys, tmp_path, monkeypatch
):
    # Found: BHC on 200,000 items started without a word about its O(N^2) time (about 2 hours).
    from latentzoo import long_jobs

    monkeypatch.setattr(long_jobs, "CALIBRATE_FROM_ITEMS", 30)
    monkeypatch.setattr(long_jobs, "CALIBRATION_ITEMS", 10)
    monkeypatch.setattr(long_jobs, "SAY_ABOVE_SECONDS", 0.0)
    rows = np.random.default_rng(0).integers(0, 2, size=(60, 5))
    path = tmp_path / "items.csv"
    np.savetxt(path, rows, delimiter=",", fmt="%d")
    out = tmp_path / "tree.nc"
    code, printed, err = _run(capsys, "fit", "bhc", "--data", str(path), "--out", str(out))
    assert code == 0 and "saved to" in printed
    assert "latentzoo: bhc bhc on 60 items: about " in err and "expected (O(N^2): " in err
    assert "faster: --method rbhc" in err
    # rbhc is O(N m): not timed, nothing said
    _, _, err = _run(capsys, "fit", "bhc", "--data", str(path), "--method", "rbhc", "--out",
                     str(out))  # fmt: skip
    assert "expected" not in err


def test_the_estimate_extrapolates_by_the_square_of_the_items():
    from latentzoo.data import Features
    from latentzoo.long_jobs import expected_seconds

    ticks = iter([10.0, 10.5])
    sizes = []
    estimate = expected_seconds(lambda data: sizes.append(data.n_items),
                                Features(np.eye(4)[np.arange(1000) % 4]),
                                calibration_items=100, clock=lambda: next(ticks))  # fmt: skip
    assert sizes == [8, 100]  # a warm-up that compiles, then the timed subsample
    assert estimate.seconds == 0.5 * 10**2 and estimate.n_items == 1000
