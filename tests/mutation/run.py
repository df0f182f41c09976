"""Run the mutation suite: each bug of the catalog applied alone to a copy of the package, then
``latentzoo.validate`` on it in a subprocess; a table of which levels caught which bug.

Usage (from the repository root)::

    python -m tests.mutation.run [--only ID ...] [--family F ...] [--levels L ...] [--jobs 1]
                                 [--seed 0] [--out tests/mutation/RESULTS.md] [--control]

For every case the package directories are copied into a fresh temporary directory laid out as
the installed package (``tmp/latentzoo/`` = ``latentzoo/*.py``, ``tmp/latentzoo/models`` =
``models/``, ``tmp/latentzoo/inference`` = ``inference/``, ``tmp/latentzoo/data`` = ``data/`` with
its ``.npz`` files), the mutation is applied there, and ``python -P -c ...`` runs with
``PYTHONPATH=tmp``, ``NUMBA_CACHE_DIR=tmp/numba_cache`` and the temporary directory as working
directory. The subprocess first asserts that ``latentzoo`` and its three subpackages were imported
from the copy (the repository is also installed in editable mode; the copy must win), then runs
``latentzoo.validate(model, quick=True, random_state=seed, levels=...)`` and prints one JSON line
with every check and every skipped level.

The numba cache is fresh per case on purpose: numba's on-disk cache does not track calls across
files, so a kernel cached with an unmutated callee (say ``_dpm_sweep`` calling
``log_predictive_one``) would hide a mutation of that callee.

Verdicts: ``caught`` (validate returned a failed comparison), ``crashed`` (validate raised; the
exception and the level it was raised in are recorded; counts as caught), ``MISSED`` (validate
passed), ``timeout`` (not counted as caught). Exit status 1 when a control fails or a mutation is
missed or timed out.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path

from tests.mutation.catalog import (
    FAMILIES,
    KNOWN_REACH,
    LEVELS_KEPT,
    MUTATIONS,
    UNREACHED_METHODS,
    Mutation,
    fast_method,
    model_for,
    relevant_levels,
)

__all__ = [
    "Outcome",
    "apply_mutation",
    "build_copy",
    "main",
    "render_report",
    "run_case",
    "run_control",
    "run_mutation",
]

ROOT = Path(__file__).resolve().parents[2]
"""The repository root (``tests/mutation/run.py`` lies two levels below it)."""

STANDARD_LEVELS = ("exact", "reference", "mode-matched", "calibrated")
MARKER = "MUTATION-RESULT "
# Where each repository directory goes inside the copy (``latentzoo/`` takes only its *.py files).
LAYOUT = {
    "latentzoo": "latentzoo",
    "models": "latentzoo/models",
    "inference": "latentzoo/inference",
    "data": "latentzoo/data",
}
# Keep each subprocess on one thread: the machine's cores are shared and --jobs sets parallelism.
SINGLE_THREAD = {
    "NUMBA_NUM_THREADS": "1",
    "OMP_NUM_THREADS": "1",
    "OPENBLAS_NUM_THREADS": "1",
    "MKL_NUM_THREADS": "1",
    "LATENTZOO_THREADS": "1",
}

# The subprocess: argv[1] is a JSON dict {tmp, model, seed, levels, each_level}.
DRIVER = r"""
import json, os, sys, time, traceback
args = json.loads(sys.argv[1])
tmp = os.path.realpath(args["tmp"])
record = {"checks": [], "skipped": [], "error": None, "error_level": None, "timings": {}}
import latentzoo, latentzoo.data, latentzoo.inference, latentzoo.models
where = {m.__name__: os.path.realpath(m.__file__)
         for m in (latentzoo, latentzoo.data, latentzoo.inference, latentzoo.models)}
outside = {name: path for name, path in where.items() if not path.startswith(tmp + os.sep)}
if outside:
    print("MUTATION-RESULT " + json.dumps({"harness_error": f"imported outside the copy {tmp}: {outside}"}))
    sys.exit(3)
record["imported_from"] = where
import latentzoo.models as models
model = eval(args["model"], {name: getattr(models, name) for name in models.__all__})

def crash_level(error):
    # The level validate was running: the local ``level`` of its frame in latentzoo/validation.py.
    level = None
    tb = error.__traceback__
    while tb is not None:
        frame = tb.tb_frame
        if frame.f_code.co_name == "validate" and frame.f_code.co_filename.endswith("validation.py"):
            level = frame.f_locals.get("level", level)
        tb = tb.tb_next
    return level

def run(levels):
    options = {} if levels is None else {"levels": levels}
    try:
        result = latentzoo.validate(model, quick=True, random_state=args["seed"], **options)
    except Exception as error:
        lines = traceback.format_exception(error)
        return {"error": f"{type(error).__name__}: {error}", "error_level": crash_level(error),
                "traceback": "".join(lines[-12:])}
    return {
        # An inconclusive check (mode-matched, PyMC holding no local posterior) is no failure.
        "checks": [{"level": c.level, "name": c.name,
                    "passed": bool(c.passed or getattr(c, "inconclusive", False)),
                    "inconclusive": bool(getattr(c, "inconclusive", False)), "detail": str(c.detail)}
                   for c in result.checks],
        "skipped": [{"level": c.level, "name": c.name, "detail": str(c.detail)} for c in result.skipped],
        "timings": {k: float(v) for k, v in (getattr(result, "timings", None) or {}).items()},
    }

start = time.perf_counter()
if args["each_level"]:
    errors = []
    for level in args["levels"]:
        part = run([level])
        if "error" in part:
            errors.append(part)
            continue
        record["checks"] += part["checks"]
        record["skipped"] += part["skipped"]
        record["timings"].update(part["timings"])
    if errors:
        record["error"] = "; ".join(f"[{e['error_level']}] {e['error']}" for e in errors)
        record["error_level"] = ", ".join(str(e["error_level"]) for e in errors)
        record["traceback"] = errors[0]["traceback"]
else:
    record.update(run(args["levels"]))
record["seconds_validate"] = time.perf_counter() - start
print("MUTATION-RESULT " + json.dumps(record))
"""


@dataclass
class Outcome:
    """What one case (a mutation, or a family's unmutated control) did under ``validate``.

    ``checks`` and ``skipped`` are dicts with ``level``, ``name``, ``detail`` (and ``passed``).
    ``error`` holds the exception validate raised (``error_level``: the level it was running);
    ``timed_out`` a run stopped after ``timeout`` seconds.
    """

    id: str
    family: str
    kind: str
    description: str
    model: str
    seed: int
    levels: list | None
    checks: list = field(default_factory=list)
    skipped: list = field(default_factory=list)
    timings: dict = field(default_factory=dict)
    error: str | None = None
    error_level: str | None = None
    traceback: str | None = None
    timed_out: bool = False
    seconds: float = 0.0
    returncode: int | None = None
    stderr_tail: str = ""
    imported_from: dict = field(default_factory=dict)

    @property
    def failed_levels(self) -> list[str]:
        """Levels with at least one failed check, standard levels first."""
        failed = {c["level"] for c in self.checks if not c["passed"]}
        own = [
            x for x in dict.fromkeys(c["level"] for c in self.checks) if x not in STANDARD_LEVELS
        ]
        order = [*STANDARD_LEVELS, *own]
        return [level for level in order if level in failed]

    @property
    def passed(self) -> bool:
        """validate ran to the end and every check passed."""
        return not self.timed_out and self.error is None and all(c["passed"] for c in self.checks)

    @property
    def caught(self) -> bool:
        """validate failed: a failed check, or an exception whose message is recorded."""
        if self.timed_out:
            return False
        return bool(self.failed_levels) or bool(self.error)

    @property
    def verdict(self) -> str:
        """``caught``, ``crashed``, ``MISSED``, ``timeout`` (mutations) or ``pass``/``FAIL``."""
        if self.timed_out:
            return "timeout"
        if self.kind == "control":
            return "pass" if self.passed else ("crashed" if self.error else "FAIL")
        if self.failed_levels:
            return "caught"
        return "crashed" if self.error else "MISSED"


def apply_mutation(text: str, mutation: Mutation) -> str:
    """``text`` with ``mutation.old`` replaced by ``mutation.new``; ``old`` must occur exactly once.

    Examples
    --------
    >>> m = Mutation("x", "aspect", "f.py", "a + 1", "a - 1", "sign", "gibbs")
    >>> apply_mutation("y = a + 1\\n", m)
    'y = a - 1\\n'
    >>> apply_mutation("a + 1; a + 1", m)
    Traceback (most recent call last):
    ...
    ValueError: mutation x: the snippet occurs 2 times in f.py, expected exactly once
    """
    count = text.count(mutation.old)
    if count != 1:
        raise ValueError(
            f"mutation {mutation.id}: the snippet occurs {count} times in {mutation.path}, "
            "expected exactly once"
        )
    return text.replace(mutation.old, mutation.new)


def _copy_tree(source: Path, target: Path, top_level_only: bool = False) -> None:
    if top_level_only:
        target.mkdir(parents=True, exist_ok=True)
        for file in sorted(source.glob("*.py")):
            shutil.copy2(file, target / file.name)
        return
    shutil.copytree(source, target, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))


def _export_ref(ref: str, staging: Path) -> Path:
    """The package directories of git commit ``ref`` extracted into ``staging`` (read-only git)."""
    archive = subprocess.run(
        ["git", "-C", str(ROOT), "archive", "--format=tar", ref, *LAYOUT],
        check=True,
        capture_output=True,
    ).stdout
    staging.mkdir(parents=True, exist_ok=True)
    subprocess.run(["tar", "-x", "-C", str(staging)], input=archive, check=True)
    return staging


def build_copy(tmp: Path, mutation: Mutation | None = None, ref: str | None = None) -> Path:
    """Lay the package out under ``tmp`` as ``tmp/latentzoo/...`` and apply ``mutation``.

    ``ref`` copies a git commit (e.g. ``"HEAD"``) instead of the working tree. Returns ``tmp``.

    Examples
    --------
    >>> import tempfile
    >>> with tempfile.TemporaryDirectory() as tmp:
    ...     root = build_copy(Path(tmp))
    ...     sorted(p.name for p in (root / "latentzoo").iterdir() if p.is_dir())
    ['data', 'inference', 'models']
    """
    tmp = Path(tmp)
    source = ROOT if ref is None else _export_ref(ref, tmp / "_source")
    for directory, target in LAYOUT.items():
        _copy_tree(source / directory, tmp / target, top_level_only=directory == "latentzoo")
    if ref is not None:
        shutil.rmtree(tmp / "_source")
    if mutation is not None:
        relative = Path(mutation.path)
        target = tmp / LAYOUT[relative.parts[0]] / Path(*relative.parts[1:])
        target.write_text(apply_mutation(target.read_text(), mutation))
    return tmp


def _parse(stdout: str) -> dict | None:
    for line in reversed(stdout.splitlines()):
        if line.startswith(MARKER):
            return json.loads(line[len(MARKER) :])
    return None


def run_case(
    case_id: str,
    family: str,
    model: str,
    mutation: Mutation | None = None,
    *,
    seed: int = 0,
    levels=None,
    each_level: bool = False,
    timeout: float | None = None,
    ref: str | None = None,
    keep: bool = False,
) -> Outcome:
    """Copy the package, apply ``mutation`` (None: the control), run ``validate`` in a subprocess.

    Parameters
    ----------
    case_id, family, model : str
        Names for the report, and the constructor expression ``validate`` is run with.
    mutation : Mutation or None
    seed : int
        ``random_state`` of ``validate``.
    levels : list of str, optional
        Passed to ``validate`` (default: its own default, every level).
    each_level : bool
        One ``validate`` call per level (in the same subprocess), so that an exception in one level
        does not hide the verdicts of the others.
    timeout : float, optional
        Seconds before the subprocess is stopped (verdict ``timeout``).
    ref : str, optional
        Copy this git commit instead of the working tree.
    keep : bool
        Leave the temporary directory in place (its path is printed).

    Returns
    -------
    Outcome

    Raises
    ------
    RuntimeError
        The subprocess imported latentzoo from outside the copy, or printed no result.

    Examples
    --------
    >>> outcome = run_control("aspect", levels=["exact"])  # doctest: +SKIP
    >>> outcome.verdict  # doctest: +SKIP
    'pass'
    """
    if each_level and not levels:
        levels = list(STANDARD_LEVELS)
    safe = "".join(ch if ch.isalnum() or ch in "-_" else "_" for ch in case_id)
    tmp = Path(tempfile.mkdtemp(prefix=f"mutation-{safe}-"))
    try:
        build_copy(tmp, mutation, ref)
        env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
        env.update(SINGLE_THREAD)
        env["PYTHONPATH"] = str(tmp)
        env["NUMBA_CACHE_DIR"] = str(tmp / "numba_cache")
        env["MPLBACKEND"] = "Agg"
        arguments = {
            "tmp": str(tmp),
            "model": model,
            "seed": int(seed),
            "levels": list(levels) if levels else None,
            "each_level": bool(each_level),
        }
        outcome = Outcome(
            id=case_id,
            family=family,
            kind=mutation.kind if mutation is not None else "control",
            description=mutation.description if mutation is not None else "unmutated copy",
            model=model,
            seed=int(seed),
            levels=arguments["levels"],
        )
        start = time.perf_counter()
        command = [sys.executable, "-P", "-c", DRIVER, json.dumps(arguments)]
        try:
            done = subprocess.run(
                command, cwd=tmp, env=env, capture_output=True, text=True, timeout=timeout
            )
        except subprocess.TimeoutExpired:
            outcome.timed_out = True
            outcome.seconds = time.perf_counter() - start
            return outcome
        outcome.seconds = time.perf_counter() - start
        outcome.returncode = done.returncode
        outcome.stderr_tail = done.stderr[-3000:]
        record = _parse(done.stdout)
        if record is None:
            raise RuntimeError(
                f"{case_id}: the subprocess printed no result (exit {done.returncode}); "
                f"stderr:\n{done.stderr[-3000:]}"
            )
        if "harness_error" in record:
            raise RuntimeError(f"{case_id}: {record['harness_error']}")
        for name in ("checks", "skipped", "timings", "error", "error_level", "traceback"):
            if record.get(name) is not None:
                setattr(outcome, name, record[name])
        outcome.imported_from = record.get("imported_from", {})
        return outcome
    finally:
        if keep:
            print(f"kept {tmp}", file=sys.stderr)
        else:
            shutil.rmtree(tmp, ignore_errors=True)


def run_mutation(mutation: Mutation, **options) -> Outcome:
    """:func:`run_case` for one catalog entry, at its family's model (or its own).

    Examples
    --------
    >>> from tests.mutation.catalog import by_id
    >>> outcome = run_mutation(by_id("aspect-step-noop"), levels=["exact"])  # doctest: +SKIP
    >>> outcome.caught  # doctest: +SKIP
    True
    """
    return run_case(mutation.id, mutation.family, model_for(mutation), mutation, **options)


def run_control(family: str, model: str | None = None, **options) -> Outcome:
    """:func:`run_case` on the unmutated copy, at the family's model (or ``model``).

    Examples
    --------
    >>> run_control("dpm", levels=["exact"]).passed  # doctest: +SKIP
    True
    """
    model = model or FAMILIES[family]
    suffix = "" if model == FAMILIES[family] else f" [{model}]"
    return run_case(f"control {family}{suffix}", family, model, None, **options)


# ----------------------------------------------------------------------------------- report
def _cell(text: str) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def _caught_by(outcome: Outcome) -> str:
    parts = list(outcome.failed_levels)
    if outcome.error:
        parts.append(f"crashed in {outcome.error_level or '?'}: {outcome.error[:160]}")
    if outcome.timed_out:
        parts.append("timed out")
    return ", ".join(parts) or "-"


def _levels_of(outcomes) -> list[str]:
    seen = []
    for outcome in outcomes:
        seen += [c["level"] for c in outcome.checks]
        if outcome.error_level:
            seen += [level.strip() for level in str(outcome.error_level).split(",")]
    own = [x for x in dict.fromkeys(seen) if x not in STANDARD_LEVELS and x != "None"]
    return [*STANDARD_LEVELS, *own]


def _catching_levels(outcome: Outcome) -> set[str]:
    levels = set(outcome.failed_levels)
    if outcome.error and outcome.error_level:
        levels |= {level.strip() for level in str(outcome.error_level).split(",")}
    return levels


def _table(title: str, columns: list[str], rows) -> list[str]:
    """The lines of a report section ``## title`` holding a markdown table with the ``columns``
    and one line for each of the ``rows`` (each a sequence of cells, already escaped)."""
    lines = ["", f"## {title}", "", f"| {' | '.join(columns)} |", "|" + "---|" * len(columns)]
    return lines + [f"| {' | '.join(str(cell) for cell in row)} |" for row in rows]


def _control_failures(control: Outcome) -> str:
    failed = "; ".join(f"{x['level']}: {x['name']}" for x in control.checks if not x["passed"])
    if control.error:
        failed = f"crashed in {control.error_level}: {control.error[:160]}"
    return failed


def _mutation_failures(outcome: Outcome) -> str:
    failed = "; ".join(
        f"{c['level']}: {c['name']} ({c['detail']})" for c in outcome.checks if not c["passed"]
    )
    if outcome.error:
        failed = (failed + "; " if failed else "") + f"exception: {outcome.error}"
    return failed


def _level_row(level: str, outcomes: list[Outcome]) -> tuple:
    """The cells of ``level`` in the per-level table: mutations whose run reached it, caught by
    it, caught by it alone, and of those caught by it the ones that crashed in it."""
    ran = sum(
        any(c["level"] == level for c in o.checks)
        or level in _catching_levels(o)
        or any(s["level"] == level for s in o.skipped)
        for o in outcomes
    )
    by_level = [o for o in outcomes if level in _catching_levels(o)]
    alone = [o for o in by_level if _catching_levels(o) == {level}]
    crashed = [o for o in by_level if o.error and level in str(o.error_level)]
    return (level, ran, len(by_level), len(alone), len(crashed))


def render_report(
    outcomes: list[Outcome], controls: list[Outcome], settings: dict, not_run: bool = False
) -> str:
    """The markdown report: controls, the mutation table, a per-level summary and the details.

    With ``not_run`` (a merged report of a whole round) it also lists the catalog entries no run
    holds, with their verdicts in a previous report (``settings["previous"]``) where known.

    Examples
    --------
    >>> o = Outcome("m", "aspect", "gibbs", "bug", "AspectModel(2)", 0, ["exact"],
    ...             checks=[{"level": "exact", "name": "chi2", "passed": False, "detail": "p=0"}])
    >>> "| m | aspect | gibbs | bug | exact | caught |" in render_report([o], [], {"seed": 0})
    True
    """
    lines = ["# Mutation suite results", ""]
    lines += [f"- {key}: {value}" for key, value in settings.items() if key != "previous"]
    if controls:
        lines += _table(
            "Controls (unmutated copies; must pass)",
            ["control", "model", "verdict", "failed checks", "seconds"],
            [
                (_cell(c.id), f"`{c.model}`", c.verdict, _cell(_control_failures(c) or "-"),
                 f"{c.seconds:.0f}")
                for c in controls
            ],
        )  # fmt: skip
    if outcomes:
        lines += _table(
            "Mutations",
            ["mutation", "family", "kind", "description", "caught by levels", "verdict"],
            [
                (o.id, o.family, o.kind, _cell(o.description), _cell(_caught_by(o)), o.verdict)
                for o in outcomes
            ],
        )
        caught = sum(o.caught for o in outcomes)
        lines += [
            "",
            f"Caught {caught} of {len(outcomes)} (crashes with a recorded message count).",
        ]
        missed = [o for o in outcomes if not o.caught]
        if missed:
            lines.append(f"Not caught: {', '.join(o.id for o in missed)}.")
            lines += ["", "## Not caught, and why", ""]
            lines += [
                f"- `{o.id}` ({o.verdict}): {KNOWN_REACH.get(o.id, 'no reason recorded')}"
                for o in missed
            ]
        level_rows = [_level_row(level, outcomes) for level in _levels_of(outcomes)]
        lines += _table(
            "Per level",
            ["level", "ran in", "caught", "caught alone", "of which crashed"],
            level_rows,
        )
        lines += [
            "",
            "'ran in': mutations whose run reached the level (or skipped it as not applicable); "
            "'caught alone': no other level caught that mutation.",
        ]
        never_alone = [row[0] for row in level_rows if row[1] and row[3] == 0]
        if never_alone:
            lines += ["", "Levels that catch no mutation alone, and why each is kept:", ""]
            lines += [
                f"- {level}: {LEVELS_KEPT.get(level, 'no reason recorded')}"
                for level in never_alone
            ]
        lines += ["", "## Fast methods no level runs", ""]
        lines += [
            f"- {family} `{method}`: {why}" for (family, method), why in UNREACHED_METHODS.items()
        ] or ["- none: a level runs every registered fast method"]
        if not_run:
            lines += _not_run_section(outcomes, settings.get("previous", {}))
        lines += _table(
            "Details",
            ["mutation", "model", "seconds", "failed checks"],
            [
                (o.id, f"`{o.model}`", f"{o.seconds:.0f}", _cell(_mutation_failures(o) or "-"))
                for o in outcomes
            ],
        )
    return "\n".join(lines) + "\n"


def _not_run_section(outcomes: list[Outcome], previous: dict) -> list[str]:
    """The section listing the catalog entries that no merged run holds: why, and their verdict
    in the previous report that listed them (``previous``: ``id -> (levels, verdict)``)."""
    ran = {o.id for o in outcomes}
    missing = [m for m in MUTATIONS if m.id not in ran]
    if not missing:
        return []
    rows = []
    for m in missing:
        method = fast_method(m)
        why = (
            "its method is run by no level (above)"
            if (m.family, method) in UNREACHED_METHODS
            else "not reached on this round's commits"
        )
        levels, verdict = previous.get(m.id, ("-", "-"))
        rows.append(
            (m.id, m.family, m.kind, f"`{method}`" if method else "-", why, levels, verdict)
        )
    lines = _table(
        "Not run this round",
        ["mutation", "family", "kind", "method", "why", "previous levels", "previous verdict"],
        rows,
    )
    return [
        *lines,
        "",
        f"{len(missing)} of {len(MUTATIONS)} catalog entries; a previous verdict is not evidence "
        "about this round's code ('-': the entry is new).",
    ]


def _outcome_from(record: dict) -> Outcome:
    """The :class:`Outcome` a run's JSON record (:func:`_record`) was written from."""
    names = {f.name for f in fields(Outcome)}
    return Outcome(**{name: value for name, value in record.items() if name in names})


def load_run(path) -> tuple[dict, list[Outcome], list[Outcome]]:
    """``(settings, controls, mutations)`` of one run: its ``.json``, or the ``.partial.jsonl``
    of a run that is still going or was stopped (settings ``{}`` when it has none), or a
    previous markdown report (:func:`load_report`)."""
    path = Path(path)
    if path.suffix == ".md":
        return load_report(path)
    if path.suffix == ".jsonl":
        records = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
        settings = next((r["settings"] for r in records if r["what"] == "settings"), {})
        cases = [r for r in records if r["what"] != "settings"]
        controls = [_outcome_from(r) for r in cases if r["what"] == "control"]
        mutations = [_outcome_from(r) for r in cases if r["what"] == "mutation"]
        return settings, controls, mutations
    run = json.loads(path.read_text())
    return (
        run["settings"],
        [_outcome_from(r) for r in run["controls"]],
        [_outcome_from(r) for r in run["mutations"]],
    )


# ------------------------------------------------------------------------ a previous report
_LEVEL_NAMES = ("exact", "reference", "mode-matched", "calibrated", "optimality", "density")


def _uncell(text: str) -> str:
    """A report cell's text (:func:`_cell` undone, but for the newlines it dropped)."""
    return text.strip().replace("\\|", "|")


def _section_rows(text: str, title: str) -> list[list[str]]:
    """The cells of each row of the markdown table under ``## title`` in a report."""
    lines = text.split(f"\n## {title}\n", 1)[1].split("\n## ", 1)[0].splitlines()
    rows = [line for line in lines if line.startswith("| ")][1:]  # the header row dropped
    return [[_uncell(cell) for cell in re.split(r"(?<!\\)\|", row)[1:-1]] for row in rows]


def _split_failures(text: str) -> list[str]:
    """``_mutation_failures`` joined its failed checks with ``"; "``: split before each level."""
    starts = "|".join(re.escape(name) for name in (*_LEVEL_NAMES, "exception"))
    return [part for part in re.split(rf"; (?=(?:{starts}): )", text) if part]


def _check_from(part: str) -> dict:
    """A failed check ``level: name (detail)``, the detail in the last balanced parentheses."""
    level, rest = part.split(": ", 1)
    depth = 0
    for position in range(len(rest) - 1, -1, -1):
        depth += {")": 1, "(": -1}.get(rest[position], 0)
        if depth == 0 and rest.endswith(")"):
            name, detail = rest[: position - 1], rest[position + 1 : -1]
            return {"level": level, "name": name, "passed": False, "detail": detail}
    return {"level": level, "name": rest, "passed": False, "detail": ""}


def load_report(path) -> tuple[dict, list[Outcome], list[Outcome]]:
    """``(settings, controls, mutations)`` of a previous markdown report (its ``.json`` gone).

    A report keeps each case's failed checks, not its passed ones: a mutation is rebuilt with
    its failed checks, its exception and, as levels it ran at, its relevant levels
    (:func:`~tests.mutation.catalog.relevant_levels`, which ``--relevant`` ran it at; a level
    its family lacks counts as skipped, as a run records it). ``settings["runs"]`` holds the
    report's own run lines and ``settings["previous"]`` the verdicts of its section "Not
    re-run this round" or "Not run this round" (``id -> (levels, verdict)``).
    """
    text = Path(path).read_text()
    runs = re.findall(r"^- (run \d+: .*)$", text, flags=re.M)
    details = {row[0]: row for row in _section_rows(text, "Details")}
    catalog = {m.id: m for m in MUTATIONS}
    mutations = []
    for mutation_id, family, kind, description, caught_by, verdict in _section_rows(
        text, "Mutations"
    ):
        _, model, seconds, failures = details[mutation_id]
        parts = _split_failures("" if failures == "-" else failures)
        checks = [_check_from(part) for part in parts if not part.startswith("exception: ")]
        errors = [
            part.removeprefix("exception: ") for part in parts if part.startswith("exception: ")
        ]
        crashed = re.search(r"crashed in ([^:]+): ", caught_by)
        known = catalog.get(mutation_id)
        levels = list(relevant_levels(known) or _LEVEL_NAMES) if known else []
        failed = {check["level"] for check in checks}
        outcome = Outcome(
            mutation_id, family, kind, description, model.strip("`"), 0, levels,
            checks=checks,
            skipped=[{"level": level, "reason": "ran (a previous report keeps failed checks only)"}
                     for level in levels if level not in failed],
            error=errors[0] if errors else None,
            error_level=crashed.group(1) if crashed else None,
            timed_out=verdict == "timeout",
            seconds=float(seconds),
        )  # fmt: skip
        mutations.append(outcome)
    controls = []
    for control_id, model, _verdict, failures, seconds in _section_rows(
        text, "Controls (unmutated copies; must pass)"
    ):
        checks = [
            {"level": part.split(": ", 1)[0], "name": part.split(": ", 1)[1], "passed": False,
             "detail": ""}
            for part in ([] if failures == "-" else failures.split("; "))
        ]  # fmt: skip
        family = control_id.split()[1]
        controls.append(
            Outcome(
                control_id,
                family,
                "control",
                "",
                model.strip("`"),
                0,
                None,
                checks=checks,
                seconds=float(seconds),
            )  # fmt: skip
        )
    previous = {}
    # The hand-written section of the 18:47 report, then the one render_report writes.
    if "\n## Not re-run this round\n" in text:
        previous = {
            row[0]: (row[3], row[4]) for row in _section_rows(text, "Not re-run this round")
        }
    if "\n## Not run this round\n" in text:
        previous = {row[0]: (row[5], row[6]) for row in _section_rows(text, "Not run this round")}
    levels = re.search(r"^- levels: (.*)$", text, flags=re.M)
    settings = {"source": "a previous report", "runs": runs, "previous": previous}
    if levels:
        settings["levels"] = levels.group(1)
    return settings, controls, mutations


def _short(source: str) -> str:
    """A run's source with a full commit hash cut to 7 characters."""
    is_hash = len(source) == 40 and all(ch in "0123456789abcdef" for ch in source)
    return source[:7] if is_hash else source


def _other_levels(earlier: Outcome, later: Outcome) -> bool:
    """Both runs named their levels and share none."""
    return bool(earlier.levels and later.levels) and not set(earlier.levels) & set(later.levels)


def _joined(earlier: Outcome, later: Outcome) -> Outcome:
    """One outcome holding the checks of two runs of a case at disjoint levels."""
    joined = Outcome(**{f.name: getattr(earlier, f.name) for f in fields(Outcome)})
    joined.levels = [*earlier.levels, *later.levels]
    joined.checks = [*earlier.checks, *later.checks]
    joined.skipped = [*earlier.skipped, *later.skipped]
    joined.seconds = earlier.seconds + later.seconds
    joined.timed_out = earlier.timed_out or later.timed_out
    if later.error:
        joined.error = "; ".join(filter(None, [earlier.error, later.error]))
        joined.error_level = ", ".join(filter(None, [earlier.error_level, later.error_level]))
    return joined


def merge_runs(paths) -> tuple[dict, list[Outcome], list[Outcome]]:
    """One report's ``(settings, controls, mutations)`` from several runs' JSON files.

    A case (a mutation id, or a control's id) that several runs hold is taken from the last of
    ``paths``, except that runs of a mutation at disjoint levels join their checks; mutations
    come in catalog order, controls in family order. ``settings`` names
    each run's source and the cases it contributed.
    """
    order = {m.id: i for i, m in enumerate(MUTATIONS)}
    family_order = {f: i for i, f in enumerate(FAMILIES)}
    controls, mutations, origin = {}, {}, {}
    runs = [(Path(path), *load_run(path)) for path in paths]
    for number, (_, _, run_controls, run_mutations) in enumerate(runs, start=1):
        for outcome in run_controls:
            controls[outcome.id] = outcome
            origin[("control", outcome.id)] = number
        for outcome in run_mutations:
            earlier = mutations.get(outcome.id)
            if earlier is not None and _other_levels(earlier, outcome):
                # A run at other levels of the same case adds its checks (e.g. a level the
                # family's recipe gained after the case's first run).
                outcome = _joined(earlier, outcome)
            mutations[outcome.id] = outcome
            origin[("mutation", outcome.id)] = number
    # A merged report's levels are already "; "-joined: each kind of selection once.
    levels = {
        part
        for _, run_settings, _, _ in runs
        for part in run_settings.get("levels", "").split("; ")
    } - {""}
    settings = {"levels": "; ".join(sorted(levels)) or "?"}
    for number, (path, run_settings, _, _) in enumerate(runs, start=1):
        kept = [key for key, run in origin.items() if run == number]
        families = sorted(
            {mutations[i].family for what, i in kept if what == "mutation"}
            | {controls[i].family for what, i in kept if what == "control"},
            key=family_order.get,
        )
        n_mutations = sum(what == "mutation" for what, _ in kept)
        contributed = (
            f"{n_mutations} mutations and {len(kept) - n_mutations} controls of "
            f"{', '.join(families) or 'no family'}"
        )
        if "runs" in run_settings:
            # A previous report: its cases keep the runs they came from.
            settings[f"run {number}"] = (
                f"{path.name}, a previous report: {contributed}, from its "
                + "; ".join(run_settings["runs"])
            )
        else:
            settings[f"run {number}"] = (
                f"{path.name}: source {_short(run_settings.get('source', 'unknown'))}, started "
                f"{run_settings.get('started', '?')}, seed {run_settings.get('seed', '?')}; "
                + contributed
            )
    previous = {}
    for _, run_settings, _, _ in runs:
        previous |= run_settings.get("previous", {})
    if previous:
        settings["previous"] = previous
    ordered_mutations = sorted(mutations.values(), key=lambda o: order.get(o.id, len(order)))
    ordered_controls = sorted(controls.values(), key=lambda o: (family_order[o.family], o.id))
    return settings, ordered_controls, ordered_mutations


# --------------------------------------------------------------------------------- command line
def _select(only, families) -> list[Mutation]:
    known = {m.id for m in MUTATIONS}
    unknown = sorted(set(only or ()) - known)
    if unknown:
        raise SystemExit(f"unknown mutation ids: {', '.join(unknown)}")
    bad = sorted(set(families or ()) - set(FAMILIES))
    if bad:
        raise SystemExit(f"unknown families: {', '.join(bad)}; known: {', '.join(FAMILIES)}")
    chosen = [m for m in MUTATIONS if (not only or m.id in only)]
    return [m for m in chosen if (not families or m.family in families)]


def _git_description() -> str:
    try:
        head = subprocess.run(
            ["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "-C", str(ROOT), "status", "--porcelain", "--", *LAYOUT],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"
    return f"{head}{' + uncommitted changes' if dirty else ''}"


def _resolve_ref(ref: str) -> str:
    """The full commit hash ``ref`` names now."""
    return subprocess.run(
        ["git", "-C", str(ROOT), "rev-parse", "--verify", f"{ref}^{{commit}}"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()


def _record(outcome: Outcome) -> dict:
    """``outcome`` as a JSON-ready dict, with its verdict and failed levels."""
    return asdict(outcome) | {"verdict": outcome.verdict, "failed_levels": outcome.failed_levels}


def _write_json(path: Path, settings: dict, controls: list[Outcome], outcomes: list[Outcome]):
    """A run's (or a merged report's) every check, as :func:`load_run` reads it back."""
    records = {
        "settings": settings,
        "controls": [_record(o) for o in controls],
        "mutations": [_record(o) for o in outcomes],
    }
    path.write_text(json.dumps(records, indent=1))


def main(argv=None) -> int:
    """Command line of the mutation suite (see the module docstring); returns the exit status.

    Examples
    --------
    >>> main(["--only", "aspect-step-noop", "--list"])
    aspect-step-noop  aspect  gibbs  AspectModel(2)
    0
    """
    parser = argparse.ArgumentParser(prog="python -m tests.mutation.run", description=__doc__)
    parser.add_argument("--only", nargs="+", metavar="ID", help="mutation ids to run")
    parser.add_argument("--family", nargs="+", metavar="F", help=f"families: {', '.join(FAMILIES)}")
    parser.add_argument("--levels", nargs="+", metavar="L", help="levels passed to validate")
    parser.add_argument(
        "--relevant", action="store_true",
        help="run each mutation only at the levels that execute its code (catalog.RELEVANT_LEVELS)",
    )  # fmt: skip
    parser.add_argument("--jobs", type=int, default=1, help="subprocesses at a time (default 1)")
    parser.add_argument("--seed", type=int, default=0, help="random_state of validate")
    parser.add_argument("--out", default=str(Path(__file__).with_name("RESULTS.md")))
    parser.add_argument("--control", action="store_true", help="also run the unmutated copies")
    parser.add_argument(
        "--no-mutations", action="store_true", help="run only the controls (with --control)"
    )
    parser.add_argument("--each-level", action="store_true", help="one validate call per level")
    parser.add_argument("--timeout", type=float, default=None, help="seconds per case")
    parser.add_argument("--ref", default=None, help="copy this git commit, not the working tree")
    parser.add_argument("--keep", action="store_true", help="keep the temporary copies")
    parser.add_argument(
        "--merge", nargs="+", metavar="JSON",
        help="write one report (--out) from these runs' .json or .partial.jsonl files and exit",
    )  # fmt: skip
    parser.add_argument(
        "--by-family", action="store_true",
        help="run family by family in the order of --family, each control first",
    )  # fmt: skip
    parser.add_argument(
        "--first", nargs="+", metavar="ID", default=(),
        help="start these mutations first, in this order (the long ones, so --jobs packs well)",
    )  # fmt: skip
    parser.add_argument("--list", action="store_true", help="list the selected mutations and exit")
    args = parser.parse_args(argv)
    if args.jobs < 1:
        parser.error(f"--jobs must be at least 1, got {args.jobs}")
    if args.timeout is not None and args.timeout <= 0:
        parser.error(f"--timeout must be positive, got {args.timeout}")
    if args.no_mutations and not args.control:
        parser.error("--no-mutations needs --control")
    if args.merge:
        settings, controls, outcomes = merge_runs(args.merge)
        out = Path(args.out)
        out.write_text(render_report(outcomes, controls, settings, not_run=True))
        # Every check of every case, so that a later round can merge this report losslessly.
        _write_json(out.with_suffix(".json"), settings, controls, outcomes)
        return 0
    mutations = _select(args.only, args.family)
    by_id = {m.id: m for m in mutations}
    first = [by_id[i] for i in dict.fromkeys(args.first) if i in by_id]
    mutations = first + [m for m in mutations if m.id not in args.first]
    if args.ref is not None:
        # Pin the commit once: other people's commits move HEAD while the cases run.
        args.ref = _resolve_ref(args.ref)
    if args.list:
        for m in mutations:
            print(f"{m.id}  {m.family}  {m.kind}  {model_for(m)}")
        return 0
    control_keys = list(dict.fromkeys((m.family, model_for(m)) for m in mutations))
    if args.no_mutations:
        defaults = [(f, FAMILIES[f]) for f in (args.family or FAMILIES) if not args.only]
        control_keys = list(dict.fromkeys([*defaults, *control_keys]))
        mutations = []
    options = dict(
        seed=args.seed, levels=args.levels, each_level=args.each_level, timeout=args.timeout,
        ref=args.ref, keep=args.keep,
    )  # fmt: skip
    jobs = [("mutation", m) for m in first]
    rest = [("mutation", m) for m in mutations[len(first) :]]
    controls = [("control", key) for key in control_keys] if args.control else []
    if args.by_family:
        # Family by family in the order of --family (its control first), so that a run stopped
        # early has whole families.
        order = list(dict.fromkeys([*(args.family or ()), *FAMILIES]))
        jobs += sorted(
            [*controls, *rest],
            key=lambda job: (
                order.index(job[1][0] if job[0] == "control" else job[1].family),
                job[0] != "control",
            ),
        )
    else:
        jobs += controls + rest
    # Each finished case is appended here at once, so a stopped run keeps what it has done.
    partial = Path(args.out).with_suffix(".partial.jsonl")
    partial_lock = threading.Lock()

    def work(job):
        what, item = job
        if what == "control":
            outcome = run_control(item[0], item[1], **options)
        elif args.relevant and not args.levels:
            outcome = run_mutation(item, **{**options, "levels": relevant_levels(item)})
        else:
            outcome = run_mutation(item, **options)
        failed = ", ".join(outcome.failed_levels) or "-"
        error = f" error in {outcome.error_level}: {outcome.error[:120]}" if outcome.error else ""
        print(
            f"[{outcome.verdict:>7}] {outcome.id} ({outcome.seconds:.0f} s) failed levels: "
            f"{failed}{error}",
            file=sys.stderr,
            flush=True,
        )
        with partial_lock, partial.open("a") as stream:
            stream.write(json.dumps({"what": what, **_record(outcome)}) + "\n")
        return what, outcome

    settings = {
        "started": time.strftime("%Y-%m-%d %H:%M"),
        "source": args.ref or f"working tree ({_git_description()})",
        "seed": args.seed,
        "levels": ", ".join(args.levels)
        if args.levels
        else "those that run the mutated code (see catalog.RELEVANT_LEVELS)"
        if args.relevant
        else "validate's default (all)",
        "validate calls": "one per level" if args.each_level else "one per case",
        "quick": True,
    }
    partial.write_text(json.dumps({"what": "settings", "settings": settings}) + "\n")
    with ThreadPoolExecutor(max_workers=args.jobs) as pool:
        results = list(pool.map(work, jobs))
    controls = [o for what, o in results if what == "control"]
    outcomes = [o for what, o in results if what == "mutation"]
    report = render_report(outcomes, controls, settings)
    out = Path(args.out)
    out.write_text(report)
    _write_json(out.with_suffix(".json"), settings, controls, outcomes)
    print(report)
    bad = [c for c in controls if not c.passed] + [o for o in outcomes if not o.caught]
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
