"""The command line: useful output, one-line errors with exit code 2, results that load back."""

import subprocess
import sys

import arviz as az
import numpy as np
import pytest

from latentzoo.cli import main


def _run(capsys, *argv):
    code = main(list(argv))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_list_shows_models_and_datasets(capsys):
    code, out, _ = _run(capsys, "list")
    assert code == 0
    assert "aspect" in out and "annealed_em" in out and "reuters" in out


def _write_csv(path, rows):
    path.write_text("\n".join(",".join(str(v) for v in row) for row in rows))
    return str(path)


@pytest.mark.parametrize(
    ("rows", "message"),
    [
        ([[1, "nan", 2], [0, 1, 1]], "NaN"),
        ([[1, "inf", 2], [0, 1, 1]], "inf"),
        ([[1, -1, 2], [0, 1, 1]], "negative"),
        ([[1, 1.5, 2], [0, 1, 1]], "not an integer"),
        ([[0, 0, 0], [0, 0, 0]], "no observations"),
    ],
)
def test_bad_counts_file_is_a_one_line_error(capsys, tmp_path, rows, message):
    path = _write_csv(tmp_path / "counts.csv", rows)
    code, _, err = _run(capsys, "fit", "aspect", "--data", path, "--k", "2", "--out",
                        str(tmp_path / "x.nc"), "--quiet")  # fmt: skip
    assert code == 2
    assert err.startswith("latentzoo: error:") and message in err
    assert err.count("\n") == 1


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["fit", "aspect", "--data", "toy", "--k", "0"], "n_components must be an integer >= 1"),
        (["fit", "aspect", "--data", "toy", "--k", "9"], "larger than the data supports"),
        (["fit", "aspect", "--data", "nowhere"], "unknown data 'nowhere'"),
        (["fit", "aspect", "--data", "missing.npz"], "does not exist"),
        (["fit", "nomodel", "--data", "toy"], "unknown model 'nomodel'"),
        (["fit", "aspect", "--data", "toy", "--k", "2", "--method", "magic"], "unknown method"),
        (["fit", "aspect", "--data", "toy", "--k", "2", "--betas", "x,1"], "--betas"),
        (["fit", "aspect", "--data", "toy", "--k", "2", "--betas", "-1"], "betas[0]"),
        (["fit", "aspect", "--data", "toy", "--k", "2", "--draws", "5"], "does not take --draws"),
        (
            ["fit", "one_sided", "--data", "toy", "--k", "2", "--method", "hard", "--betas", "1"],
            "one_sided hard does not take --betas",
        ),
        (["fit", "aspect", "--data", "toy", "--k-cols", "2"], "takes one size"),
        (["fit", "aspect", "--data", "toy", "--param", "gamma=2"], "--param takes NAME=VALUE"),
        (["fit", "aspect", "--data", "toy", "--k", "2", "--param", "alpha=-1"], "alpha"),
        (["fit", "aspect", "--data", "toy", "--k", "2", "--overrelax", "nan"], "overrelax must"),
        (["fit", "aspect", "--data", "toy", "--k", "2", "--seed", "-1"], "random_state must"),
        (
            ["fit", "one_sided", "--data", "toy", "--k", "2", "--option", "init=bogus"],
            "init must be a dict with the centroids",
        ),
        (
            [
                "fit",
                "one_sided",
                "--data",
                "toy",
                "--k",
                "2",
                "--method",
                "annealed_em",
                "--option",
                "init=bogus",
            ],
            "one_sided annealed_em does not take --init",
        ),
    ],
)
def test_bad_arguments_are_one_line_errors(capsys, tmp_path, argv, message):
    code, _, err = _run(capsys, *argv, "--out", str(tmp_path / "x.nc"), "--quiet")
    assert code == 2
    assert err.startswith("latentzoo: error:")
    assert message in err
    assert err.count("\n") == 1


@pytest.mark.parametrize("method", ["annealed_em", "gibbs"])
def test_fit_writes_netcdf_that_loads(capsys, tmp_path, method):
    out = tmp_path / f"{method}.nc"
    sampler = ["--draws", "20", "--tune", "10", "--chains", "2"] if method == "gibbs" else []
    code, text, _ = _run(capsys, "fit", "aspect", "--data", "toy", "--k", "2", "--method", method,
                         *sampler, "--out", str(out))  # fmt: skip
    assert code == 0 and "saved to" in text
    idata = az.from_netcdf(out)
    theta = idata.posterior["theta"].to_numpy()
    assert theta.shape[-2:] == (6, 2)
    np.testing.assert_allclose(theta.sum(axis=-1), 1.0)


def test_console_entry_point_runs_in_a_subprocess(tmp_path):
    result = subprocess.run(
        [sys.executable, "-m", "latentzoo", "fit", "aspect", "--data", "toy", "--k", "0",
         "--out", str(tmp_path / "x.nc")],
        capture_output=True, text=True, cwd=tmp_path, check=False,
    )  # fmt: skip
    assert result.returncode == 2
    assert result.stderr.strip().splitlines() == [
        "latentzoo: error: n_components must be an integer >= 1, got 0"
    ]


def test_fit_dpm_on_digits_writes_netcdf(capsys, tmp_path):
    out = tmp_path / "dpm.nc"
    code, text, _ = _run(capsys, "fit", "dpm", "--data", "digits", "--draws", "4", "--tune", "2",
                         "--chains", "1", "--option", "split_merge=true", "--out", str(out),
                         "--quiet")  # fmt: skip
    assert code == 0
    idata = az.from_netcdf(out)
    assert idata.posterior["z"].shape == (1, 4, 1797)
    assert idata.observed_data["x"].shape == (1797, 64)


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["fit", "dpm", "--data", "reuters"], "holds CoOccurrence data, but dpm takes Features"),
        (["fit", "dpm", "--data", "glass"], "do not fit the BetaBernoulli component"),
        (["fit", "dpm", "--data", "digits", "--param", "alpha=0"], "alpha must be a positive"),
        (["fit", "dpm", "--data", "digits", "--component", "gauss"], "unknown component 'gauss'"),
        (["fit", "dpm", "--data", "digits", "--betas", "1"], "dpm gibbs does not take --betas"),
        (["fit", "dpm", "--data", "digits", "--option", "x"], "--option takes NAME=VALUE"),
        (
            ["fit", "aspect", "--data", "digits"],
            "holds Features data, but aspect takes CoOccurrence",
        ),
    ],
)
def test_bad_dpm_arguments_are_one_line_errors(capsys, tmp_path, argv, message):
    code, _, err = _run(capsys, *argv, "--out", str(tmp_path / "x.nc"), "--quiet")
    assert code == 2
    assert err.startswith("latentzoo: error:") and message in err
    assert err.count("\n") == 1


@pytest.mark.parametrize(
    ("rows", "message"),
    [
        ([[1, "nan", 0], [0, 1, 1]], "is nan"),
        ([[1, 0.5, 0], [0, 1, 1]], "kind 'real' do not fit the BetaBernoulli component"),
        ([[1, 2]], "kind 'counts' do not fit the BetaBernoulli component"),
    ],
)
def test_bad_features_file_for_dpm_is_a_one_line_error(capsys, tmp_path, rows, message):
    path = _write_csv(tmp_path / "x.csv", rows)
    code, _, err = _run(capsys, "fit", "dpm", "--data", path, "--out", str(tmp_path / "x.nc"),
                        "--quiet")  # fmt: skip
    assert code == 2
    assert err.startswith("latentzoo: error:")
    assert err.count("\n") == 1 and message in err


def test_ctrl_c_is_one_line_and_leaves_no_partial_result(capsys, tmp_path, monkeypatch):
    # Before: a KeyboardInterrupt traceback, and a truncated netCDF that opened as an empty object.
    out = tmp_path / "fit.nc"

    def interrupted_write(self, path, *args, **kwargs):
        with open(path, "wb") as handle:
            handle.write(b"\x89HDF\r\n")  # the first bytes of a netCDF-4 file, then Ctrl-C
        raise KeyboardInterrupt

    monkeypatch.setattr(az.InferenceData, "to_netcdf", interrupted_write)
    code, _, err = _run(capsys, "fit", "aspect", "--data", "toy", "--k", "2", "--out", str(out),
                        "--quiet")  # fmt: skip
    assert code == 130
    assert err == "latentzoo: interrupted\n"
    assert list(tmp_path.iterdir()) == []


def test_a_failed_write_keeps_the_previous_result(capsys, tmp_path, monkeypatch):
    out = tmp_path / "fit.nc"
    assert _run(capsys, "fit", "aspect", "--data", "toy", "--k", "2", "--out", str(out))[0] == 0
    before = out.read_bytes()

    def failing_write(self, path, *args, **kwargs):
        open(path, "wb").close()
        raise OSError("disk full")

    monkeypatch.setattr(az.InferenceData, "to_netcdf", failing_write)
    code, _, err = _run(capsys, "fit", "aspect", "--data", "toy", "--k", "2", "--out", str(out),
                        "--quiet")  # fmt: skip
    assert code == 2 and err == "latentzoo: error: disk full\n"
    assert out.read_bytes() == before and sorted(p.name for p in tmp_path.iterdir()) == ["fit.nc"]
