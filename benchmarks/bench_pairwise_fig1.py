"""The seed's Fig. 1 experiment (Hofmann & Buhmann 1997, section 6.1): annealing against descent.

Run from the repository root (the package installed)::

    python benchmarks/bench_pairwise_fig1.py            # 10 instances x 10 seeds, ~10 min
    python benchmarks/bench_pairwise_fig1.py --quick    # 2 instances x 3 seeds

For ``N = 100`` items and ``K = 10`` clusters, on 10 random instances (``D_ik`` uniform on
``[0, 1]``, the seed's Fig. 1(b)) and 10 planted ones (``PairwiseClustering(10).simulate``: 10
Gaussian clusters in 2-D, squared distances), each annealed from 10 seeds by Algorithm I with
naive mean field, with the TAP equations (28)-(29), and (random instances) with naive mean field
cooled more slowly (``eta = 0.98``), against the best of 1000 gradient descents (``greedy``) and
Ward's linkage. The seed's claim: on random instances even the worst annealing run beats the
best descent. A run counts as "at or below the best descent" when its cost (16) is at most the
best descent's plus ``1e-9`` relative.

A full run writes the section "Fig. 1" of ``benchmarks/RESULTS_pairwise.md`` (replacing an
earlier one; the rest of that file is ``bench_pairwise.py``'s) and every run prints it.
"""

from __future__ import annotations

import subprocess
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

import numpy as np

from latentzoo.inference.pairwise import greedy, pairwise_annealing, ward
from latentzoo.models.pairwise import PairwiseClustering, uniform_dissimilarities

RESULTS = Path(__file__).resolve().parent / "RESULTS_pairwise.md"
MARKER = "## Fig. 1 of the seed: annealing against the best of 1000 descents"
N_ITEMS, N_CLUSTERS, N_DESCENTS = 100, 10, 1000
VARIANTS = {  # name -> (annealing options, kinds of instance)
    "naive mean field": ({}, ("random", "planted")),
    "TAP (28)-(29)": ({"tap": True}, ("random", "planted")),
    "naive mean field, eta = 0.98": ({"eta": 0.98}, ("random",)),
}


def instance(kind: str, index: int):
    if kind == "random":
        return uniform_dissimilarities(index, N_ITEMS)
    return PairwiseClustering(N_CLUSTERS).simulate(index, n_items=N_ITEMS)[0]


def run(n_instances: int, n_seeds: int):
    """Rows per (kind, variant) and per instance, with the measured numbers."""
    model = PairwiseClustering(N_CLUSTERS)
    per_instance, totals = [], {}
    for kind in ("random", "planted"):
        for index in range(n_instances):
            data = instance(kind, index)
            descent = greedy(model, data, n_init=N_DESCENTS, random_state=index)
            best = descent.cost
            linkage = ward(model, data).cost
            for name, (options, kinds) in VARIANTS.items():
                if kind not in kinds:
                    continue
                start = time.process_time()
                fits = [
                    pairwise_annealing(model, data, random_state=seed, **options)
                    for seed in range(n_seeds)
                ]
                seconds = (time.process_time() - start) / n_seeds
                costs = np.array([fit.cost for fit in fits])
                excess = 100 * (costs - best) / abs(best)
                at_best = int(np.sum(costs <= best + 1e-9 * abs(best)))
                per_instance.append(
                    [kind, index, name, f"{at_best}/{n_seeds}", f"{excess.max():+.2f}",
                     f"{excess.min():+.2f}", f"{100 * (linkage - best) / abs(best):+.1f}",
                     sum(fit.converged for fit in fits), f"{seconds:.2f}"]
                )  # fmt: skip
                total = totals.setdefault((kind, name), [0, 0, [], 0])
                total[0] += at_best
                total[1] += n_seeds
                total[2].extend(excess)
                total[3] += sum(fit.converged for fit in fits)
            print(per_instance[-1], flush=True)
    return per_instance, totals


def table(header, rows) -> list[str]:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    return lines + ["| " + " | ".join(str(v) for v in row) + " |" for row in rows]


def commit() -> str:
    out = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True)
    return out.stdout.strip() or "unknown"


def section(per_instance, totals, n_instances, n_seeds, argv, seconds) -> list[str]:
    summary = [
        [kind, name, f"{ok}/{runs}", f"{np.mean(ex):+.2f} +- {np.std(ex):.2f}",
         f"{np.max(ex):+.2f}", f"{conv}/{runs}"]
        for (kind, name), (ok, runs, ex, conv) in totals.items()
    ]  # fmt: skip
    load = Path("/proc/loadavg").read_text().split()[:3] if Path("/proc/loadavg").exists() else []
    return [
        MARKER,
        "",
        f"Run {datetime.now(UTC):%Y-%m-%d %H:%M} UTC, commit {commit()}, "
        f"`{' '.join(['python benchmarks/bench_pairwise_fig1.py', *argv])}`, {seconds:.0f} s (load average at the end {' '.join(load)}: CPU seconds per run"
        " are inflated by other jobs on the machine).",
        "",
        f"N = {N_ITEMS}, K = {N_CLUSTERS}; {n_instances} random instances (D uniform on [0, 1])"
        f" and {n_instances} planted ones (PairwiseClustering(10).simulate), each annealed from"
        f" {n_seeds} seeds (`random_state` 0-{n_seeds - 1}) with the default schedule (T0 = 1.5"
        " T_c, T <- 0.9 T, at most 100 sweeps per temperature until no probability changes by"
        " 1e-4, zero-temperature quench at the end) unless the variant says otherwise. Excess:"
        " (cost - best descent) / |best descent| in %, negative when annealing is better.",
        "",
        *table(
            [
                "instances",
                "annealing",
                "runs at or below the best of 1000 descents",
                "excess % (mean +- sd)",
                "worst excess %",
                "converged",
            ],
            summary,
        ),  # fmt: skip
        "",
        "Per instance (Ward: its excess over the best descent):",
        "",
        *table(
            [
                "instances",
                "#",
                "annealing",
                "at or below best descent",
                "worst %",
                "best %",
                "Ward %",
                "converged",
                "CPU s per run",
            ],
            per_instance,
        ),  # fmt: skip
        "",
    ]


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    quick = "--quick" in argv
    n_instances, n_seeds = (2, 3) if quick else (10, 10)
    start = time.perf_counter()
    per_instance, totals = run(n_instances, n_seeds)
    lines = section(per_instance, totals, n_instances, n_seeds, argv, time.perf_counter() - start)
    print("\n".join(lines))
    if not quick:
        text = RESULTS.read_text() if RESULTS.exists() else ""
        kept = text.split(MARKER)[0].rstrip() + "\n\n" if text else ""
        RESULTS.write_text(kept + "\n".join(lines))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
