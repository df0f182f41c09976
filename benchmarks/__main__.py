"""``python -m benchmarks``: time every fast method against its peers and its recorded time.

Run from the repository root::

    python -m benchmarks                    # every case, full sizes (a few minutes)
    python -m benchmarks --quick            # smaller problems, fewer repeats: under 2 minutes
    python -m benchmarks --only ad_lda      # one case (repeat --only for more)
    python -m benchmarks --quick --record   # rewrite the quick record of benchmarks/recorded.json
    python -m benchmarks --list             # the cases, without running them

Each case (:mod:`runner_cases`) times one call of ours and of each peer as the best of N CPU
times of the process (``time.process_time``: a call that waits on a busy machine is not charged
for it, and the best of N discards the rounds that other processes disturbed anyway). The table
gives ours, each peer and ``peer / ours`` (above 1: ours is faster), and ours against the
recorded time of the same case and mode (``benchmarks/recorded.json``, written by ``--record``
with its provenance: commit, date, machine). The run exits with status 1 when a case is more
than ``--limit`` (1.5) times slower than its record, 0 otherwise; a case without a record, or a
record from another machine, is reported and does not fail the run.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
RECORD = HERE / "recorded.json"
SLOWDOWN_LIMIT = 1.5
REPEATS = {"quick": 5, "full": 7}

sys.path.insert(0, str(HERE))


def parse_arguments(argv=None) -> argparse.Namespace:
    """The command line (``--help`` prints it and exits before anything is timed).

    Examples
    --------
    >>> args = parse_arguments(["--quick", "--only", "ad_lda", "--only", "bhc_digits"])
    >>> args.quick, args.only, args.record, args.limit
    (True, ['ad_lda', 'bhc_digits'], False, 1.5)
    """
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks",
        description="Time every fast method against its peers and its recorded time; exit 1 "
        f"on a slowdown of more than {SLOWDOWN_LIMIT}x against the record.",
    )
    parser.add_argument("--quick", action="store_true", help="small problems, 5 repeats (<2 min)")
    parser.add_argument(
        "--only", action="append", metavar="NAME", help="run only this case (repeatable)"
    )
    parser.add_argument(
        "--record", action="store_true", help="rewrite the record of the cases run (this mode)"
    )
    parser.add_argument("--list", action="store_true", help="list the cases and exit")
    parser.add_argument(
        "--repeats", type=int, default=None, help="timed calls per method (default: 7; quick 5)"
    )
    parser.add_argument(
        "--limit", type=float, default=SLOWDOWN_LIMIT, help="slowdown that fails (%(default)s)"
    )
    parser.add_argument(
        "--record-file", type=Path, default=RECORD, help="the record (default: %(default)s)"
    )
    args = parser.parse_args(argv)
    if args.repeats is not None and args.repeats < 1:
        parser.error(f"--repeats must be >= 1, got {args.repeats}")
    if not args.limit > 1.0:
        parser.error(f"--limit must be > 1, got {args.limit}")
    return args


def time_call(call, repeats: int) -> float:
    """Best CPU seconds (``time.process_time``) of ``repeats`` calls after one warm-up call
    (numba compiles or loads its cache on the first); a call with a ``scale`` attribute counts
    ``scale`` times."""
    call()
    best = float("inf")
    for _ in range(repeats):
        start = time.process_time()
        call()
        best = min(best, time.process_time() - start)
    return best * getattr(call, "scale", 1)


def run_case(case, quick: bool, repeats: int) -> dict:
    """``{"ours": seconds, "peers": {name: seconds}, "missing": {name: reason}}`` of one case."""
    ours, peers = case.setup(quick)
    out = {"ours": time_call(ours, repeats), "peers": {}, "missing": {}}
    for name, peer in peers.items():
        if isinstance(peer, str):
            out["missing"][name] = peer
        else:
            out["peers"][name] = time_call(peer, repeats)
    return out


def machine() -> str:
    """This machine in one line: CPU model, cores, system."""
    cpu = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return f"{cpu}, {os.cpu_count()} cores, {platform.system()} {platform.release()}"


def provenance(argv) -> dict:
    """What a record says of itself: commit, date, machine, Python, command."""
    try:
        commit = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, cwd=HERE
        ).stdout.strip()
    except OSError:
        commit = ""
    return {
        "commit": commit or "unknown",
        "date": datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "machine": machine(),
        "python": platform.python_version(),
        "command": " ".join(["python -m benchmarks", *argv]),
    }


def load_record(path: Path) -> dict:
    """The record at ``path`` (``{"quick": {...}, "full": {...}}``), empty if there is none."""
    if not path.exists():
        return {}
    return json.loads(path.read_text())


def save_record(path: Path, record: dict, mode: str, results: dict, argv) -> dict:
    """``record`` with the cases of ``results`` rewritten in ``mode`` (the other cases and the
    other mode kept) and this run's provenance; written to ``path`` and returned."""
    section = record.setdefault(mode, {"provenance": {}, "cases": {}})
    section["provenance"] = provenance(argv)
    for name, result in results.items():
        section["cases"][name] = {"ours": result["ours"], "peers": result["peers"]}
    path.write_text(json.dumps(record, indent=2, sort_keys=True) + "\n")
    return record


def verdicts(results: dict, recorded: dict, limit: float = SLOWDOWN_LIMIT) -> dict:
    """Per case, ``(now / recorded, verdict)``: "SLOWER" above ``limit``, "ok" otherwise, and
    "no record" (ratio None) for a case the record lacks.

    Examples
    --------
    >>> now = {"a": {"ours": 1.6}, "b": {"ours": 1.4}, "c": {"ours": 1.0}}
    >>> verdicts(now, {"a": {"ours": 1.0}, "b": {"ours": 1.0}})
    {'a': (1.6, 'SLOWER'), 'b': (1.4, 'ok'), 'c': (None, 'no record')}
    """
    out = {}
    for name, result in results.items():
        if name not in recorded:
            out[name] = (None, "no record")
            continue
        ratio = result["ours"] / recorded[name]["ours"]
        out[name] = (ratio, "SLOWER" if ratio > limit else "ok")
    return out


def exit_code(judged: dict) -> int:
    """1 if any case is slower than its record beyond the limit, else 0.

    Examples
    --------
    >>> exit_code({"a": (1.2, "ok"), "b": (None, "no record")}), exit_code({"a": (2.0, "SLOWER")})
    (0, 1)
    """
    return int(any(verdict == "SLOWER" for _, verdict in judged.values()))


def table(results: dict, judged: dict, recorded: dict) -> list[str]:
    """The markdown table of a run: one row per (case, peer)."""
    lines = [
        "| case | ours s | peer | peer s | peer / ours | recorded s | now / recorded | verdict |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for name, result in results.items():
        ratio, verdict = judged[name]
        record = f"{recorded[name]['ours']:.4g}" if name in recorded else "-"
        now = f"{ratio:.2f}" if ratio is not None else "-"
        peers = [
            (peer, f"{s:.4g}", f"{s / result['ours']:.2f}") for peer, s in result["peers"].items()
        ]
        peers += [(peer, reason, "-") for peer, reason in result["missing"].items()]
        lead = [name, f"{result['ours']:.4g}"]
        tail = [record, now, verdict]
        for peer, seconds, speed in peers or [("-", "-", "-")]:
            lines.append("| " + " | ".join([*lead, peer, seconds, speed, *tail]) + " |")
            # The case's own columns once, on its first row.
            lead, tail = ["", ""], ["", "", ""]
    return lines


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    args = parse_arguments(argv)
    from runner_cases import CASES

    if args.list:
        for case in CASES.values():
            print(f"{case.name}: {case.ours}")
        return 0
    unknown = [name for name in args.only or () if name not in CASES]
    if unknown:
        print(f"unknown case(s) {', '.join(unknown)}; the cases are {', '.join(CASES)}")
        return 2
    mode = "quick" if args.quick else "full"
    repeats = args.repeats or REPEATS[mode]
    cases = [CASES[name] for name in args.only] if args.only else list(CASES.values())
    record = load_record(args.record_file)
    section = record.get(mode, {})
    recorded = section.get("cases", {})
    print(f"python -m benchmarks: {mode} run, {len(cases)} case(s), best of {repeats} CPU times")
    here = machine()
    source = section.get("provenance", {})
    if source:
        print(f"record: commit {source['commit']}, {source['date']}, {source['machine']}")
        if source["machine"] != here:
            print(f"note: recorded on another machine (this one: {here}); ratios are indicative")
    results = {}
    start = time.perf_counter()
    for case in cases:
        results[case.name] = run_case(case, args.quick, repeats)
        print(f"  {case.name}: {results[case.name]['ours']:.4g} s", flush=True)
    judged = verdicts(results, recorded, args.limit)
    print()
    print("\n".join(table(results, judged, recorded)))
    print(f"\n{time.perf_counter() - start:.0f} s")
    if args.record:
        save_record(args.record_file, record, mode, results, argv)
        print(f"recorded {len(results)} case(s) in {args.record_file} ({mode})")
        return 0
    code = exit_code(judged)
    if code:
        slower = [name for name, (_, verdict) in judged.items() if verdict == "SLOWER"]
        print(f"FAILED: {', '.join(slower)} more than {args.limit}x slower than recorded")
    return code


if __name__ == "__main__":
    raise SystemExit(main())
