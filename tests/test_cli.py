"""The command line: useful output, one-line errors with exit code 2, results that load back."""

import os
import subprocess
import sys
from pathlib import Path

import arviz as az
import numpy as np
import pytest

from latentzoo.cli import main
from latentzoo.inference.results import parameter_dataset


def _run(capsys, *argv):
    code = main(list(argv))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_list_shows_models_and_datasets(capsys):
    code, out, _ = _run(capsys, "list")
    assert code == 0
    assert "aspect" in out and "annealed_em" in out and "reuters" in out
    assert "bayesian_sets" in out and "Bayesian Sets retrieval" in out


def test_fit_bayesian_sets_takes_its_query_as_an_option(capsys, tmp_path):
    """A retrieval family fits like any other once given its query; without one the command says
    so in one line (its validation: tests/test_bayesian_sets_face.py)."""
    data = tmp_path / "items.csv"
    np.savetxt(data, np.array([[1, 1, 0], [1, 1, 0], [0, 0, 1], [1, 0, 0]]), delimiter=",")
    out = tmp_path / "ranking.npz"
    code, _, err = _run(capsys, "fit", "bayesian_sets", "--data", str(data), "--out", str(out))
    assert code == 2 and "--option query=" in err and len(err.strip().splitlines()) == 1
    code, printed, _ = _run(capsys, "fit", "bayesian_sets", "--data", str(data), "--option",
                            "query=0", "--out", str(out))  # fmt: skip
    assert code == 0 and "best: 1 (" in printed
    with np.load(out, allow_pickle=False) as saved:
        assert saved["result.score"].shape == (4,) and saved["result.query"].tolist() == [0]


def test_list_options_shows_the_declared_options(capsys):
    code, out, _ = _run(capsys, "list", "--options", "bhc")
    assert code == 0
    assert "bhc rbhc:" in out and "  m (default 100; an integer >= 2)" in out
    code, _, err = _run(capsys, "list", "--options", "nope")
    assert code == 2 and err.startswith("latentzoo: error: unknown model 'nope'")


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
        (
            ["fit", "aspect", "--data", "toy", "--k", "0"],
            "--k (n_components) must be a positive integer",
        ),
        (["fit", "aspect", "--data", "toy", "--k", "9"], "larger than the data supports"),
        (["fit", "aspect", "--data", "nowhere"], "unknown data 'nowhere'"),
        (["fit", "aspect", "--data", "missing.npz"], "does not exist"),
        (["fit", "nomodel", "--data", "toy"], "unknown model 'nomodel'"),
        (["fit", "aspect", "--data", "toy", "--k", "2", "--method", "magic"], "unknown method"),
        (["fit", "aspect", "--data", "toy", "--k", "2", "--betas", "x,1"], "--betas"),
        (
            ["fit", "aspect", "--data", "toy", "--k", "2", "--betas", "-1"],
            "betas[0] = -1.0 must be",
        ),
        (["fit", "aspect", "--data", "toy", "--k", "2", "--draws", "5"], "does not take --draws"),
        (
            ["fit", "one_sided", "--data", "toy", "--k", "2", "--method", "hard", "--betas", "1"],
            "one_sided hard does not take --betas",
        ),
        (["fit", "aspect", "--data", "toy", "--k-cols", "2"], "takes at most one size"),
        (["fit", "aspect", "--data", "toy", "--param", "gamma=2"], "--param takes NAME=VALUE"),
        (["fit", "aspect", "--data", "toy", "--k", "2", "--param", "alpha=-1"], "alpha"),
        (["fit", "aspect", "--data", "toy", "--k", "2", "--overrelax", "nan"], "overrelax must"),
        (["fit", "aspect", "--data", "toy", "--k", "2", "--seed", "-1"], "--seed must be"),
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
    theta = parameter_dataset(idata)["theta"].to_numpy()
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
        "latentzoo: error: --k (n_components) must be a positive integer, got 0"
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


_HEAVY = ("pymc", "arviz", "pytensor")


def test_help_and_list_import_neither_pymc_nor_arviz():
    # Before: `latentzoo --help` imported ArviZ through the registry (2-5 s idle, 38 s busy).
    script = (
        "import contextlib, io, sys\n"
        "from latentzoo.cli import main\n"
        "with contextlib.redirect_stdout(io.StringIO()):\n"
        "    try:\n"
        "        main(['--help'])\n"
        "    except SystemExit:\n"
        "        pass\n"
        "    after_help = sorted(set(sys.modules) & {'pymc', 'arviz', 'pytensor', 'numba', 'scipy'})\n"
        "    main(['list'])\n"
        "after_list = sorted(set(sys.modules) & {'pymc', 'arviz', 'pytensor'})\n"
        "print(after_help, after_list)\n"
    )  # fmt: skip
    result = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=True
    )
    assert result.stdout.strip() == "[] []"


def test_console_help_imports_neither_pymc_nor_arviz():
    # The real entry point: `python -m latentzoo` runs latentzoo/__init__.py first.
    result = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "latentzoo", "--help"],
        capture_output=True, text=True, check=True,
    )  # fmt: skip
    imported = {
        line.rsplit("|", 1)[-1].strip()
        for line in result.stderr.splitlines()
        if line.startswith("import time:")
    }
    assert "latentzoo.cli" in imported
    assert not imported & {*_HEAVY, "numba", "scipy"}
    assert "usage: latentzoo" in result.stdout


def test_lazy_package_attributes_still_work():
    import latentzoo

    assert callable(latentzoo.fit) and callable(latentzoo.validate)
    assert callable(latentzoo.perplexity) and callable(latentzoo.heldout_score)
    assert callable(latentzoo.labels) and "aspect" in latentzoo.zoo.ZOO
    with pytest.raises(AttributeError, match="no attribute 'nothing'"):
        latentzoo.nothing  # noqa: B018


def _unwritable_cases(tmp_path):
    a_file = tmp_path / "a_file"
    a_file.write_text("")
    cases = {
        "under a file": a_file / "x.nc",
        "under a file, deeper": a_file / "sub" / "x.nc",
        "a folder": tmp_path,
    }
    read_only = tmp_path / "read_only"
    read_only.mkdir()
    read_only.chmod(0o555)
    if not os.access(read_only, os.W_OK):  # root may write anywhere: the case proves nothing
        cases["read-only folder"] = read_only / "x.nc"
    if Path("/proc/self").is_dir():  # read-only even for root
        cases["read-only file system"] = Path("/proc/latentzoo-test/x.nc")
    return cases


def test_unwritable_out_is_one_line_before_fitting(capsys, tmp_path, monkeypatch):
    # Before: the fit ran, then h5py failed with a raw message (or `[Errno 17] File exists`).
    import latentzoo

    def no_fit(*args, **kwargs):
        pytest.fail("the fit ran although --out cannot be written")

    monkeypatch.setattr(latentzoo, "fit", no_fit)
    for case, out in _unwritable_cases(tmp_path).items():
        code, _, err = _run(capsys, "fit", "aspect", "--data", "toy", "--k", "2",
                            "--out", str(out), "--quiet")  # fmt: skip
        assert code == 2, case
        assert err.startswith(f"latentzoo: error: --out {out}: cannot write"), (case, err)
        assert err.count("\n") == 1, case
    assert not Path("/proc/latentzoo-test").exists()
    (tmp_path / "read_only").chmod(0o755)


def test_validate_out_that_is_a_file_is_one_line(capsys, tmp_path):
    out = tmp_path / "report"
    out.write_text("")
    code, _, err = _run(capsys, "validate", "aspect", "--data", "toy", "--out", str(out), "--quick",
                        "--quiet")  # fmt: skip
    assert code == 2
    assert err == f"latentzoo: error: --out {out}: cannot write the report there: it is a file\n"


def test_out_in_a_missing_folder_is_created(capsys, tmp_path):
    out = tmp_path / "new" / "deeper" / "fit.nc"
    code, _, _ = _run(capsys, "fit", "aspect", "--data", "toy", "--k", "2", "--out", str(out),
                      "--quiet")  # fmt: skip
    assert code == 0 and out.exists()
    assert sorted(p.name for p in out.parent.iterdir()) == ["fit.nc"]


_COUNTS = [[1, 0, 2, 1], [0, 3, 1, 0], [2, 2, 0, 1], [1, 0, 0, 3]]


@pytest.mark.parametrize(
    ("header", "labels"), [(True, True), (True, False), (False, True), (False, False)]
)
def test_csv_with_header_row_and_row_labels(capsys, tmp_path, header, labels):
    # Before: "cannot read numbers from counts.csv: could not convert string to float: 'doc'".
    words, docs = ["cat", "dog", "fish", "bird"], ["d1", "d2", "d3", "d4"]
    rows = [[doc, *row] if labels else row for doc, row in zip(docs, _COUNTS, strict=True)]
    if header:
        rows = [["doc", *words] if labels else words, *rows]
    path = _write_csv(tmp_path / "counts.csv", rows)
    out = tmp_path / "fit.nc"
    code, _, err = _run(capsys, "fit", "aspect", "--data", path, "--k", "2", "--method", "gibbs",
                        "--chains", "2", "--draws", "4", "--tune", "2", "--out", str(out),
                        "--quiet")  # fmt: skip
    assert code == 0, err
    idata = az.from_netcdf(out)
    np.testing.assert_array_equal(idata.observed_data["counts"].to_numpy(), _COUNTS)
    expected_words = words if header else ["0", "1", "2", "3"]
    expected_docs = docs if labels else ["0", "1", "2", "3"]
    assert idata.posterior["word"].to_numpy().tolist() == expected_words
    assert idata.posterior["doc"].to_numpy().tolist() == expected_docs


def test_features_csv_with_header_keeps_feature_names(capsys, tmp_path):
    rows = [["a", "b", "c"], [1, 0, 1], [0, 1, 1], [1, 1, 0], [0, 0, 1]]
    path = _write_csv(tmp_path / "x.csv", rows)
    out = tmp_path / "dpm.nc"
    code, _, err = _run(capsys, "fit", "dpm", "--data", path, "--draws", "4", "--tune", "2",
                        "--chains", "2", "--out", str(out), "--quiet")  # fmt: skip
    assert code == 0, err
    assert az.from_netcdf(out).observed_data["feature"].to_numpy().tolist() == ["a", "b", "c"]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("1,0,2\n0,x,1\n", "row 2, column 2 is 'x', not a number"),
        ("w1,w2,w3\n1,0,2\n0,1,\n", "row 3, column 3 is '', not a number"),
        ("doc,w1,w2\nd1,1,0\nd2,1,oops\n", "row 3, column 3 is 'oops', not a number"),
        ("1,0,2\n0,1\n", "row 2, column 3 is '', not a number"),
        ("1,0\n0,1,2\n", "line 2 has 3 fields, expected 2"),
        ("", "the file is empty"),
        ("w1,w2\n", "row 1, column 2 is 'w2', not a number"),
        ("1,2\n3,\xff\n", "not a UTF-8 text file (it holds byte 0xff)"),
    ],
)
def test_unreadable_csv_names_file_row_and_column(capsys, tmp_path, text, message):
    path = tmp_path / "counts.csv"
    path.write_bytes(text.encode("latin-1"))
    code, _, err = _run(capsys, "fit", "aspect", "--data", str(path), "--k", "2",
                        "--out", str(tmp_path / "x.nc"), "--quiet")  # fmt: skip
    assert code == 2
    assert err == f"latentzoo: error: cannot read {path}: {message}\n"


@pytest.mark.parametrize("chains", [1, 2])
def test_one_chain_warns_that_rhat_needs_two(capsys, tmp_path, chains):
    # Before: a single chain was silent, though no R-hat (convergence check) is possible.
    code, _, err = _run(capsys, "fit", "aspect", "--data", "toy", "--k", "2", "--method", "gibbs",
                        "--chains", str(chains), "--draws", "5", "--tune", "2",
                        "--out", str(tmp_path / "x.nc"), "--quiet")  # fmt: skip
    assert code == 0
    if chains == 1:
        # One line: 5 draws of one chain also fail the ESS bar, and the line says both.
        assert err.count("\n") == 1
        assert err.startswith("latentzoo: NOT CONVERGED: ")
        assert "--chains 1: R-hat needs at least 2 chains" in err
    else:
        assert "R-hat needs" not in err


@pytest.mark.parametrize("strict", [False, True])
def test_unconverged_fit_says_not_converged_with_a_documented_exit_status(capsys, tmp_path,
                                                                          strict):  # fmt: skip
    # Before: `latentzoo fit aspect ... --method gibbs` exited 0 with max R-hat 3.07, unsaid.
    out = tmp_path / "x.nc"
    flags = ["--require-converged"] if strict else []
    code, _, err = _run(capsys, "fit", "aspect", "--data", "toy", "--k", "2", "--method", "gibbs",
                        "--chains", "2", "--draws", "10", "--tune", "2", "--out", str(out),
                        "--quiet", *flags)  # fmt: skip
    assert code == (3 if strict else 0)
    [line] = err.splitlines()
    assert line.startswith("latentzoo: NOT CONVERGED: ") and "R-hat <= 1.01" in line
    assert line.endswith(f"exit status {code}" + ("" if strict else " (--require-converged "
                                                                      "makes it 3)"))  # fmt: skip
    back = az.from_netcdf(out)  # saved either way, with the verdict
    assert back.posterior.attrs["convergence"] == "not converged"
    assert back.posterior.attrs["converged"] == 0 and back.posterior.attrs["max_r_hat"] > 1.01


def test_fit_help_documents_the_exit_status(capsys):
    with pytest.raises(SystemExit):
        main(["fit", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "--require-converged" in text and "Exit status: 0" in text and "then 3" in text


# ------------------------------------------------------------------- issue 24: small frictions
def _parse_error(capsys, *argv):
    with pytest.raises(SystemExit) as stop:
        main(list(argv))
    return stop.value.code, capsys.readouterr().err


@pytest.mark.parametrize(
    ("argv", "command", "message"),
    [
        ([], "latentzoo", "the following arguments are required: command"),
        (["bogus"], "latentzoo", "invalid choice: 'bogus'"),
        (["fit"], "latentzoo fit", "the following arguments are required: model, --out"),
        (["fit", "aspect", "--k", "abc", "--out", "x.nc"], "latentzoo fit", "invalid int value"),
        (["fit", "aspect", "--out", "x.nc", "--draws"], "latentzoo fit", "expected one argument"),
        (["fit", "aspect", "--out", "x.nc", "--bogus", "3"], "latentzoo fit",
         "unrecognized arguments: --bogus 3"),
        (["validate"], "latentzoo validate", "the following arguments are required: model"),
        (["validate", "aspect", "--k", "1.5"], "latentzoo validate", "invalid int value: '1.5'"),
        (["query", "--data", "toy", "--binarize", "zz"], "latentzoo query", "invalid choice: 'zz'"),
        (["query", "--items", "a"], "latentzoo query", "required: --data"),
        (["list", "--nope"], "latentzoo list", "unrecognized arguments: --nope"),
        (["demo", "--quick", "--fast"], "latentzoo demo", "unrecognized arguments: --fast"),
    ],
)  # fmt: skip
def test_argparse_errors_are_one_line(capsys, argv, command, message):
    """Before: a 2-9 line usage block came first, against the README's one-line error."""
    code, err = _parse_error(capsys, *argv)
    assert code == 2
    assert err.count("\n") == 1, err
    assert err.startswith(f"{command}: error: ") and message in err
    assert err.rstrip().endswith(f"(see {command} --help)")


@pytest.mark.parametrize("out", ["tree.txt", "tree", "tree.nc.bak"])
def test_fit_out_with_a_suffix_it_would_not_match_is_refused(capsys, tmp_path, out):
    """Before: `fit bhc --out x.txt` wrote netCDF under .txt without a word."""
    code, _, err = _run(capsys, "fit", "bhc", "--data", "toy", "--out", str(tmp_path / out))
    assert code == 2 and err.count("\n") == 1
    assert err.startswith(f"latentzoo: error: --out {tmp_path / out}: name the file .nc")
    assert list(tmp_path.iterdir()) == []


def test_fit_out_npz_holds_numpy_arrays_for_every_kind_of_result(capsys, tmp_path):
    """An estimate and a sample, whose results write netCDF, give a .npz of their arrays
    (a tree and a ranking keep their own .npz: tests/test_bhc_face.py, above)."""
    import zipfile

    estimate, sample = tmp_path / "em.npz", tmp_path / "gibbs.npz"
    code, _, _ = _run(capsys, "fit", "aspect", "--data", "toy", "--k", "2", "--out",
                      str(estimate), "--quiet")  # fmt: skip
    assert code == 0 and zipfile.is_zipfile(estimate)
    with np.load(estimate, allow_pickle=False) as saved:
        assert saved["params.theta"].shape == (6, 2)
    code, _, _ = _run(capsys, "fit", "aspect", "--data", "toy", "--k", "2", "--method", "gibbs",
                      "--chains", "2", "--draws", "6", "--tune", "2", "--out", str(sample),
                      "--quiet")  # fmt: skip
    assert code == 0
    with np.load(sample, allow_pickle=False) as saved:
        assert saved["posterior.theta"].shape == (2, 6, 6, 2)


@pytest.mark.parametrize("columns", [100, 80])
def test_list_fits_the_terminal_and_keeps_the_rest_reachable(capsys, monkeypatch, columns):
    """Before: the dataset table was about 450 characters wide (522 with the models')."""
    monkeypatch.setenv("COLUMNS", str(columns))
    code, out, _ = _run(capsys, "list")
    assert code == 0
    assert max(map(len, out.splitlines())) <= columns
    assert "two_sided" in out and "hard, mean_field, annealed_em, gibbs" in out
    assert "movielens" in out and "--dataset NAME" in out
    code, out, _ = _run(capsys, "list", "--dataset", "glass")
    assert code == 0 and max(map(len, out.splitlines())) <= columns
    flat = " ".join(out.split())
    assert "the fgl data frame of the R package MASS" in flat and "CC BY 4.0" in flat
    code, out, _ = _run(capsys, "list", "--options")
    assert code == 0 and max(map(len, out.splitlines())) <= columns
    assert "  m (default 100; an integer >= 2)" in out
    code, out, _ = _run(capsys, "list", "--wide")
    assert code == 0 and "notebooks/aspect_model.ipynb" in out and "licence" in out
    code, _, err = _run(capsys, "list", "--dataset", "nope")
    assert code == 2 and err.startswith("latentzoo: error: unknown dataset 'nope'")


def test_no_progress_bar_when_stderr_is_not_a_terminal(capsys, tmp_path):
    """Before: in a log every refresh of a bar stayed as a line (30 KB for one fit)."""
    code, _, err = _run(capsys, "fit", "aspect", "--data", "toy", "--k", "2", "--method", "gibbs",
                        "--chains", "2", "--draws", "30", "--tune", "10", "--out",
                        str(tmp_path / "g.nc"))  # fmt: skip
    assert code == 0
    assert "\r" not in err and "it/s" not in err and "%|" not in err


# ------------------------------------------------------------------------------ --backend dask
def test_fit_with_backend_dask_reads_shards_on_a_given_scheduler(capsys, tmp_path):
    pytest.importorskip("distributed")
    from latentzoo.data import load
    from latentzoo.inference.dask_backend import local_cluster, write_shards

    write_shards(load("reuters"), tmp_path / "shards", 100)
    out = tmp_path / "fit.nc"
    with local_cluster(1, processes=False) as cluster:
        code, printed, err = _run(
            capsys, "fit", "aspect", "--k", "3", "--data", str(tmp_path / "shards"), "--backend",
            "dask", "--scheduler", cluster.scheduler_address, "--betas", "1", "--max-iter", "2",
            "--out", str(out),
        )  # fmt: skip
    assert code == 0, err
    assert f"on the shards in {tmp_path / 'shards'}" in printed
    assert parameter_dataset(az.from_netcdf(out))["theta"].shape == (395, 3)


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--scheduler", "tcp://127.0.0.1:1"], "--scheduler needs --backend dask"),
        (["--backend", "dask", "--method", "gibbs"], "aspect's method 'gibbs' has no Dask"),
        (["--backend", "dask", "--betas", "auto"], "backend='dask' runs an explicit schedule"),
    ],
)
def test_backend_errors_are_one_line(capsys, tmp_path, argv, message):
    code, _, err = _run(capsys, "fit", "aspect", "--data", "toy", *argv, "--out",
                        str(tmp_path / "x.nc"))  # fmt: skip
    assert code == 2 and message in err and len(err.strip().splitlines()) == 1
