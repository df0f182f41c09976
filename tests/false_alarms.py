"""False alarms of the exact, reference and calibrated levels on correct code, over many seeds.

One table, :data:`LEVELS`, lists every registered family (plus texture segmentation, which is not
registered) with the levels whose false alarms are counted; the model each is validated with is
the mutation suite's (``tests/mutation/catalog.py: FAMILIES``), so that a false alarm here is a
false alarm there. A correct level must pass at least 95 of 100 seeds (each check holds its
false-alarm rate near 1e-3); the heavy tests in ``tests/test_false_alarms.py`` assert it. The
study shares a CPU budget fairly between rows (the row that has used the least CPU runs its next
seed), logs one JSON line per run and resumes from its log::

    python -m tests.false_alarms --rows aspect:calibrated --rows bpm:reference:11 \\
        --seeds 100 --budget 3600 --log study.jsonl
    python -m tests.false_alarms --rows all --seeds 1 --log costs.jsonl   # every row, one seed
    python -m tests.false_alarms --summary study.jsonl costs.jsonl      # the note's table

A study pinned to a commit runs in an export, whose ``latentzoo`` must import its own library
(:func:`check_library_tree` refuses otherwise)::

    git archive REV | tar -x -C EXPORT && cd EXPORT
    for d in inference models data; do ln -s ../$d latentzoo/$d; done
    LATENTZOO_COMMIT=REV nice -n 19 python -m tests.false_alarms --rows ... --log study.jsonl

``--newer`` (the families of issue 25, :data:`NEWER`) and the older ``--family`` / ``--level``
(the samplers' exact and calibrated levels, family by family) still work.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import time
import warnings
from pathlib import Path

import numpy as np

LEVELS = {
    "aspect": ("exact", "reference", "calibrated"),
    "one_sided": ("exact", "reference", "calibrated"),
    "two_sided": ("exact", "reference", "calibrated"),
    "product_space": ("reference",),
    "dpm": ("exact", "reference", "calibrated"),
    "finite_mixture": ("exact", "reference", "calibrated"),
    "bhc": ("exact", "reference"),
    "bayesian_sets": ("exact", "reference"),
    "pairwise": ("exact", "reference"),
    "central": ("exact", "reference"),
    "cluster_abstraction": ("exact", "reference", "calibrated"),
    "topic_tree": ("reference",),
    "iomm": ("exact", "calibrated"),
    "bpm": ("exact", "reference", "calibrated"),
    "texture": ("exact", "optimality"),
}
"""Family -> the levels whose false alarms are counted: exact, reference and calibrated where the
recipe has them (texture segmentation has no sampler: its exact and Monte Carlo optimality
levels)."""

ROWS = [(family, level) for family, levels in LEVELS.items() for level in levels]
"""Every (family, level) row of :data:`LEVELS`."""

FAMILIES = ("aspect", "one_sided", "two_sided", "dpm", "finite_mixture")
"""The older families with a sampler, whose exact and calibrated levels :func:`pass_counts` runs."""

NEWER = ("iomm", "cluster_abstraction", "topic_tree", "bpm", "texture")
"""The families added last (issue 25): the rows ``--newer`` runs without ``--rows``."""


def _family(name: str) -> str:
    """The table's spelling of a family (the registry's ``cluster-abstraction`` is accepted)."""
    family = name.replace("-", "_")
    if family not in LEVELS:
        raise ValueError(f"unknown family {name!r}; known: {sorted(LEVELS)}")
    return family


def _model(family: str):
    """The model ``family`` is validated with (the mutation suite's)."""
    import latentzoo.models as models
    from tests.mutation.catalog import FAMILIES as MODELS

    return eval(MODELS[family], vars(models))


def level_passes(family: str, level: str, seed: int) -> tuple[bool, list]:
    """Whether ``family``'s ``level`` passes at ``seed`` (``latentzoo.validate(..., quick=True)``),
    and the names of the checks that did not pass (an inconclusive check, which does not fail the
    level, is named with `` (inconclusive)``). Texture segmentation is not a registered family: its
    recipe's levels are called directly."""
    import latentzoo
    from latentzoo.inference.validation import QUICK

    family = _family(family)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if family == "texture":
            from latentzoo.inference.texture_segmentation import validation_recipe

            recipe = validation_recipe()
            rng = np.random.default_rng(seed)
            comparison = recipe.checks[level](None, recipe, None, None, QUICK, rng)
        else:
            comparison = latentzoo.validate(
                _model(family), quick=True, levels=[level], random_state=seed
            )
    return comparison.passed, [
        c.name + (" (inconclusive)" if getattr(c, "inconclusive", False) else "")
        for c in comparison.checks
        if not c.passed
    ]


def pass_counts(family: str, seeds, levels=("exact", "calibrated"), progress: bool = False) -> dict:
    """``{level: passes}`` and ``failures`` (seed, check) over ``seeds`` for one family; with
    ``progress`` one line per seed and level as it finishes."""
    counts = {level: 0 for level in levels}
    failures = []
    start = time.perf_counter()
    for seed in seeds:
        for level in levels:
            passed, failed = level_passes(family, level, seed)
            counts[level] += passed
            failures += [(seed, name) for name in failed if not passed]
            if progress:
                print(
                    f"  {family} seed {seed} {level}: {'passed' if passed else failed}", flush=True
                )
    counts["failures"] = failures
    counts["seconds"] = time.perf_counter() - start
    return counts


def _cpu() -> float:
    """CPU seconds of this process and its finished children (PyMC's chain processes)."""
    t = os.times()
    return t.user + t.system + t.children_user + t.children_system


def _commit() -> str:
    """The short commit of the working tree, with ``+`` when the library (not the tests: other
    work in progress) has uncommitted changes; ``LATENTZOO_COMMIT`` names the commit of a tree
    exported with ``git archive`` (a study pinned to a commit while others edit the tree)."""
    if os.environ.get("LATENTZOO_COMMIT"):
        return os.environ["LATENTZOO_COMMIT"]
    root = Path(__file__).resolve().parents[1]
    try:
        head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=root,
                              capture_output=True, text=True, check=True).stdout.strip()  # fmt: skip
        library = ["inference", "models", "latentzoo", "data"]
        dirty = subprocess.run(["git", "status", "--porcelain", "--", *library], cwd=root,
                               capture_output=True, text=True).stdout.strip()  # fmt: skip
    except (OSError, subprocess.CalledProcessError):
        return "unknown"
    return head + ("+" if dirty else "")


def check_library_tree() -> Path:
    """The tree the study runs: refuse a library imported from another tree than these tests'.

    A study pinned to a commit runs in a ``git archive`` export, but the editable install maps
    ``latentzoo.inference``, ``.models`` and ``.data`` to the working tree it was installed from:
    without the export's own links (``latentzoo/inference -> ../inference`` and the like) the
    export's tests would run the working tree's library, uncommitted edits included, under the
    export's commit. Stops 29 and 39 ran so (see tests/FALSE_ALARMS.md, stop 40).

    Raises
    ------
    RuntimeError
        Naming the tree the library came from and the links that fix it.
    """
    import latentzoo
    import latentzoo.data
    import latentzoo.inference
    import latentzoo.models

    # The mutation runner's subprocess makes the same check of its copy (tests/mutation/run.py,
    # DRIVER): there inline in the child's script, here in the study's own process.
    root = Path(__file__).resolve().parents[1]
    for package in (latentzoo, latentzoo.inference, latentzoo.models, latentzoo.data):
        where = Path(package.__file__).resolve().parent
        if root not in where.parents:
            raise RuntimeError(
                f"{package.__name__} is imported from {where}, not from this tree ({root}): "
                "in an export run `for d in inference models data; do ln -s ../$d latentzoo/$d; "
                "done` first"
            )
    return root


def read_log(*paths) -> list[dict]:
    """The runs of the JSON-lines logs ``paths`` (missing files are empty)."""
    runs = []
    for path in paths:
        if path is not None and Path(path).exists():
            runs += [json.loads(line) for line in Path(path).read_text().splitlines() if line]
    for run in runs:
        run["family"] = _family(run["family"])
    return runs


def parse_row(text: str, first: int = 0) -> tuple[str, str, int]:
    """``FAMILY:LEVEL[:FIRST]`` as ``(family, level, first seed)``."""
    parts = text.split(":")
    if len(parts) not in (2, 3):
        raise ValueError(f"--rows takes FAMILY:LEVEL[:FIRST], got {text!r}")
    family = _family(parts[0])
    if parts[1] not in LEVELS[family]:
        raise ValueError(f"--rows {text!r}: {family} has the levels {LEVELS[family]}")
    return family, parts[1], int(parts[2]) if len(parts) == 3 else first


def study(rows, n_seeds: int, budget: float = float("inf"), log=None) -> dict:
    """False-alarm counts of ``rows`` (``(family, level, first seed)``) at ``n_seeds`` seeds each,
    sharing ``budget`` CPU seconds fairly: the row that has used the least CPU time runs its
    next seed, so cheap levels reach many seeds and PyMC references a few. One JSON line per run
    is appended to ``log``; the runs already in ``log`` are not repeated (a stopped study
    resumes) and their CPU counts for the sharing, not for ``budget``.

    Returns
    -------
    dict
        ``(family, level) -> {"runs", "failures": [(seed, checks)], "cpu"}``.
    """
    check_library_tree()
    commit = _commit()
    done = {(f, lv): {"runs": 0, "failures": [], "cpu": 0.0, "seeds": set()} for f, lv, _ in rows}
    for run in read_log(log):
        entry = done.get((run["family"], run["level"]))
        if entry is not None and run["seed"] not in entry["seeds"]:
            entry["seeds"].add(run["seed"])
            entry["cpu"] += run["cpu"]
    todo = {
        (f, lv): [s for s in range(first, first + n_seeds) if s not in done[f, lv]["seeds"]]
        for f, lv, first in rows
    }
    spent = 0.0
    while spent < budget:
        open_rows = [row for row in todo if todo[row]]
        if not open_rows:
            break
        row = min(open_rows, key=lambda r: done[r]["cpu"])
        seed = todo[row].pop(0)
        start, wall = _cpu(), time.time()
        passed, failed = level_passes(*row, seed)
        cpu = _cpu() - start
        spent += cpu
        entry = done[row]
        entry["cpu"] += cpu
        entry["runs"] += 1
        if not passed:
            entry["failures"].append((seed, failed))
        if log is not None:
            with open(log, "a") as out:
                out.write(json.dumps({"family": row[0], "level": row[1], "seed": seed,
                                      "passed": passed, "failed": failed, "cpu": cpu,
                                      "wall": time.time() - wall, "commit": commit,
                                      "end": time.strftime("%H:%M:%S", time.gmtime())}) + "\n")  # fmt: skip
    return done


def newer_study(seeds, pairs=None, budget: float = float("inf"), log=None) -> dict:
    """:func:`study` of ``pairs`` (default: the rows of :data:`NEWER`) over the range ``seeds``."""
    seeds = range(seeds.start, seeds.stop) if isinstance(seeds, range) else list(seeds)
    pairs = pairs or [(f, lv) for f, lv in ROWS if f in NEWER]
    rows = [(_family(f), lv, seeds[0]) for f, lv in pairs]
    return study(rows, len(seeds), budget=budget, log=log)


def upper_bound(failed: int, runs: int, confidence: float = 0.95) -> float:
    """The one-sided Clopper-Pearson upper bound of a failure rate (``failed`` of ``runs``)."""
    from scipy import stats

    return 1.0 if failed >= runs else float(stats.beta.ppf(confidence, failed + 1, runs - failed))


def runs_by_row(runs) -> dict:
    """``{(family, level): {seed: run}}`` of ``runs`` (:func:`read_log`); the last run of a seed
    counts, so a re-run on a later commit replaces the earlier one."""
    rows = {}
    for run in runs:
        rows.setdefault((run["family"], run["level"]), {})[run["seed"]] = run
    return rows


def summary(runs) -> str:
    """The note's markdown table of ``runs`` (:func:`read_log`; the last run of a seed counts),
    then one line per failed or inconclusive seed."""
    rows = runs_by_row(runs)
    lines = ["| family | level | seeds | failed | inconclusive | 95% upper bound | CPU s per seed "
             "| commits |", "|---|---|---|---|---|---|---|---|"]  # fmt: skip
    notes = []
    for (family, level), by_seed in sorted(rows.items(), key=lambda kv: ROWS.index(kv[0])):
        seeds = sorted(by_seed)
        failed = [s for s in seeds if not by_seed[s]["passed"]]
        unsure = [s for s in seeds if by_seed[s]["passed"] and by_seed[s]["failed"]]
        cpu = np.mean([by_seed[s]["cpu"] for s in seeds])
        spans = (
            f"{seeds[0]}-{seeds[-1]}" if seeds == list(range(seeds[0], seeds[-1] + 1)) else "gaps"
        )
        commits = ", ".join(sorted({by_seed[s].get("commit", "?") for s in seeds}))
        lines.append(f"| {family} | {level} | {len(seeds)} ({spans}) | {len(failed)} | {len(unsure)} "
                     f"| {upper_bound(len(failed), len(seeds)):.1%} | {cpu:.1f} | {commits} |")  # fmt: skip
        for kind, which in (("failed", failed), ("inconclusive", unsure)):
            notes += [f"- {family} {level}, seed {s}: {kind} {'; '.join(by_seed[s]['failed'])}"
                      for s in which]  # fmt: skip
    missing = [f"{family}:{level}" for family, level in ROWS if (family, level) not in rows]
    notes += [f"- not run: {', '.join(missing)}"] if missing else []
    return "\n".join(lines + [""] + notes)


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=100, help="seeds per row")
    parser.add_argument(
        "--first", type=int, default=0, help="first seed (of a row without its own)"
    )
    parser.add_argument("--family", action="append", choices=FAMILIES)
    parser.add_argument("--level", action="append", choices=["exact", "calibrated"])
    parser.add_argument("--rows", action="append", metavar="FAMILY:LEVEL[:FIRST]",
                        help="rows of LEVELS, CPU shared fairly (repeatable; 'all': every row)")  # fmt: skip
    parser.add_argument("--newer", action="store_true", help="the rows of NEWER (without --rows)")
    parser.add_argument("--budget", type=float, default=float("inf"), help="CPU seconds (--rows)")
    parser.add_argument("--log", help="JSON lines of every run (--rows), resumed if it exists")
    parser.add_argument("--summary", nargs="+", metavar="LOG", help="print the logs' table")
    args = parser.parse_args(argv)
    if args.summary:
        print(summary(read_log(*args.summary)))
        return
    if args.rows or args.newer:
        texts = [f"{f}:{lv}" for f, lv in ROWS if args.rows or f in NEWER]
        texts = texts if not args.rows or "all" in args.rows else args.rows
        rows = [parse_row(text, args.first) for text in texts]
        done = study(rows, args.seeds, budget=args.budget, log=args.log)
        print("| family | level | seeds run | failed | CPU seconds |\n|---|---|---|---|---|")
        for (family, level), entry in done.items():
            print(f"| {family} | {level} | {entry['runs']} | {len(entry['failures'])} | "
                  f"{entry['cpu']:.0f} |")  # fmt: skip
            for seed, names in entry["failures"]:
                print(f"  failed at seed {seed}: {', '.join(names)}")
        return
    levels = tuple(args.level or ("exact", "calibrated"))
    seeds = range(args.first, args.first + args.seeds)
    print("| family | seeds | " + " | ".join(f"{lv} passed" for lv in levels) + " | seconds |")
    print("|---|---|" + "---|" * len(levels) + "---|")
    for family in args.family or FAMILIES:
        counts = pass_counts(family, seeds, levels, progress=True)
        cells = " | ".join(str(counts[level]) for level in levels)
        print(f"| {family} | {len(seeds)} | {cells} | {counts['seconds']:.0f} |", flush=True)
        for seed, name in counts["failures"]:
            print(f"  failed at seed {seed}: {name}", flush=True)


def ar1_chains(rng, runs, n_quantities, chains, draws, ess):
    """Converged chains: ``runs x n_quantities`` independent stationary AR(1) processes of unit
    variance, ``chains`` chains of ``draws`` draws each, whose autocorrelation gives a bulk ESS of
    ``ess`` over all chains; shape (chains, draws, runs, n_quantities), as
    :func:`latentzoo.inference.mcmc.rank_rhat` takes them."""
    ratio = ess / (chains * draws)
    phi = (1 - ratio) / (1 + ratio)
    noise = rng.standard_normal((chains, draws, runs, n_quantities))
    chain = np.empty_like(noise)
    chain[:, 0] = noise[:, 0]
    scale = np.sqrt(1 - phi**2)
    for t in range(1, draws):
        chain[:, t] = phi * chain[:, t - 1] + scale * noise[:, t]
    return chain


def max_rhat_quantile(draws, ess, n_quantities, q=0.99, n_runs=1000, chains=4, seed=0):
    """The ``q`` quantile of the max R-hat over ``n_quantities`` independent quantities of
    converged chains with effective sample size ``ess`` (AR(1) chains of ``draws`` draws each):
    the convergence threshold a level of that size can use at false-alarm rate ``1 - q``
    (:func:`latentzoo.inference.mcmc.rhat_threshold` is its closed form).

    Returns
    -------
    quantile : float
    exceed_1_01 : float
        Share of runs whose max R-hat exceeds the customary 1.01.
    """
    maxima = simulated_max_rhat(draws, ess, n_quantities, n_runs, chains, seed)
    return float(np.quantile(maxima, q)), float(np.mean(maxima > 1.01))


def simulated_max_rhat(draws, ess, n_quantities, n_runs=1000, chains=4, seed=0):
    """The max rank R-hat over ``n_quantities`` of each of ``n_runs`` converged runs
    (:func:`ar1_chains`), in batches of 50 runs."""
    from latentzoo.inference.mcmc import rank_rhat

    rng = np.random.default_rng(seed)
    maxima = []
    for start in range(0, n_runs, 50):
        batch = ar1_chains(rng, min(50, n_runs - start), n_quantities, chains, draws, ess)
        maxima.append(rank_rhat(batch).max(axis=-1))
    return np.concatenate(maxima)


if __name__ == "__main__":
    main()
