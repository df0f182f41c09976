"""``python -m benchmarks`` (benchmarks/__main__.py): its command line, the 1.5x verdict and exit
code on fabricated timings, the record's round trip, and one quick case run for real (no
assertion on how long anything took)."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _load_runner():
    spec = importlib.util.spec_from_file_location(
        "benchmarks_runner_main", ROOT / "benchmarks" / "__main__.py"
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


runner = _load_runner()


def fabricated(ours: float) -> dict:
    return {"ours": ours, "peers": {"peer": 2 * ours}, "missing": {}}


def test_arguments():
    args = runner.parse_arguments(["--quick", "--only", "ad_lda", "--record"])
    assert (args.quick, args.only, args.record, args.limit) == (True, ["ad_lda"], True, 1.5)
    assert runner.parse_arguments([]).only is None


@pytest.mark.parametrize("bad", [["--repeats", "0"], ["--limit", "1.0"], ["--no-such"]])
def test_bad_arguments_exit_with_usage(bad, capsys):
    with pytest.raises(SystemExit) as stop:
        runner.parse_arguments(bad)
    assert stop.value.code == 2
    assert "usage: python -m benchmarks" in capsys.readouterr().err


def test_help_does_not_start_a_run():
    done = subprocess.run(
        [sys.executable, "-m", "benchmarks", "--help"],
        cwd=ROOT, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert done.returncode == 0
    assert "--quick" in done.stdout and "case(s)" not in done.stdout


def test_unknown_case_is_named(capsys):
    assert runner.main(["--only", "no_such_case", "--record-file", "/nonexistent.json"]) == 2
    assert "no_such_case" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("now", "verdict", "code"),
    [(1.49, "ok", 0), (1.51, "SLOWER", 1), (0.5, "ok", 0)],
)
def test_slowdown_verdict_and_exit_code(now, verdict, code):
    results = {"case": fabricated(now), "new": fabricated(9.0)}
    judged = runner.verdicts(results, {"case": {"ours": 1.0}})
    assert judged["case"] == (pytest.approx(now), verdict)
    assert judged["new"] == (None, "no record")
    assert runner.exit_code(judged) == code


def test_limit_is_an_argument():
    judged = runner.verdicts({"case": fabricated(1.9)}, {"case": {"ours": 1.0}}, limit=2.0)
    assert runner.exit_code(judged) == 0


def test_record_round_trip_keeps_the_other_mode_and_cases(tmp_path):
    path = tmp_path / "recorded.json"
    runner.save_record(path, {}, "full", {"a": fabricated(3.0)}, ["--record"])
    record = runner.load_record(path)
    runner.save_record(path, record, "quick", {"a": fabricated(1.0)}, ["--quick", "--record"])
    runner.save_record(path, runner.load_record(path), "quick", {"b": fabricated(2.0)}, [])
    record = json.loads(path.read_text())
    assert record["full"]["cases"]["a"]["ours"] == 3.0
    assert {name: case["ours"] for name, case in record["quick"]["cases"].items()} == {
        "a": 1.0,
        "b": 2.0,
    }
    assert record["quick"]["cases"]["a"]["peers"] == {"peer": 2.0}
    provenance = record["quick"]["provenance"]
    assert {"commit", "date", "machine", "python", "command"} <= set(provenance)
    judged = runner.verdicts({"a": fabricated(1.6)}, record["quick"]["cases"])
    assert runner.exit_code(judged) == 1
    assert runner.load_record(tmp_path / "absent.json") == {}


def test_the_committed_record_has_provenance():
    record = runner.load_record(runner.RECORD)
    assert record, "benchmarks/recorded.json is missing: run python -m benchmarks --quick --record"
    for section in record.values():
        assert section["provenance"]["commit"] and section["provenance"]["machine"]
        assert all(case["ours"] > 0 for case in section["cases"].values())


def test_quick_run_of_one_case(tmp_path, capsys):
    """A real ``--quick --only ad_lda`` run (the cheapest case) against a fabricated record a
    million times faster, far beyond timing noise: the run fails and names the case."""
    path = tmp_path / "recorded.json"
    fast = {"ours": 1e-9, "peers": {}, "missing": {}}
    runner.save_record(path, {}, "quick", {"ad_lda": fast}, [])
    argv = ["--quick", "--only", "ad_lda", "--repeats", "1", "--record-file", str(path)]
    assert runner.main(argv) == 1
    out = capsys.readouterr().out
    assert "| ad_lda |" in out and "SLOWER" in out and "exact AspectGibbs" in out
