"""IOMM sampler (Algorithm 7.1): sweeps per second, and Table 7.1 at the thesis's settings.

Run from the repository root::

    python benchmarks/bench_iomm_sweeps.py            # a few minutes on 2 busy cores
    python benchmarks/bench_iomm_sweeps.py --quick    # under a minute, no file written

Two measurements (issue 26):

- sweeps/s of one chain on N = 500, D = 426 binary data (the size of the thesis's MovieLens
  matrix) simulated from the IOMM with alpha = 3, a = b = 0.5, from the k-means start that real
  fits use and from the truth; wall-clock and CPU seconds. The warm-up sweep compiles or loads
  the kernels. No peer: no public IBP or IOMM sampler exists (issue 26);
- Table 7.1: N = 100, D = 32 synthetic data with K = 11 true clusters (alpha = 2, a = b = 0.5;
  the simulator's seeds that give 11 clusters), one chain of 4000 sweeps with the first 1000
  discarded, as in the thesis; the posterior mean of U = Z Z^T rounded and compared with the
  truth's U over the pairs i <= j (the thesis reports 69.96 / 99.12 / 100 %).

A full run writes ``benchmarks/RESULTS_iomm.md`` and every run prints it.
"""

from __future__ import annotations

import argparse
import os
import platform
import subprocess
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

import numpy as np

from latentzoo.inference import iomm
from latentzoo.models.iomm import OverlappingMixture

RESULTS = Path(__file__).resolve().parent / "RESULTS_iomm.md"
THESIS_TABLE_7_1 = (69.96, 99.12, 100.0)


def sweeps_per_second(n_sweeps: int, start: str) -> dict:
    """One chain's sweeps/s on N = 500, D = 426 from ``start`` ("kmeans" or "truth")."""
    model = OverlappingMixture(alpha=3.0, a=0.5, b=0.5)
    data, truth = model.simulate(0, n_items=500, n_features=426)
    X = model.data_matrix(data)
    rng = np.random.default_rng(0)
    initial = truth if start == "truth" else None
    state = iomm.init(model, X, rng, initial=initial, start="kmeans")
    state = iomm.advance(state, rng, model, X)[0]  # kernels compiled or loaded from the cache
    wall, cpu = time.perf_counter(), time.process_time()
    for _ in range(n_sweeps):
        state = iomm.advance(state, rng, model, X)[0]
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    return {
        "start": start,
        "true K": truth["Z"].shape[1],
        "K at the end": int(state.n_columns[0]),
        "sweeps": n_sweeps,
        "sweeps/s": n_sweeps / wall,
        "CPU sweeps/s": n_sweeps / cpu,
    }


def eleven_cluster_seeds(model, count: int) -> list[int]:
    """The first ``count`` simulator seeds whose N = 100 truth has K = 11 clusters."""
    seeds, seed = [], 0
    while len(seeds) < count:
        if model.simulate(seed, n_items=100, n_features=32)[1]["Z"].shape[1] == 11:
            seeds.append(seed)
        seed += 1
    return seeds


def table_7_1(seed: int, draws: int, tune: int) -> dict:
    """Table 7.1's shares for the K = 11 data of simulator seed ``seed``."""
    model = OverlappingMixture(alpha=2.0, a=0.5, b=0.5)
    data, truth = model.simulate(seed, n_items=100, n_features=32)
    start = time.perf_counter()
    idata = iomm.mcmc(
        model, data, chains=1, draws=draws, tune=tune, random_state=seed, progressbar=False
    )
    seconds = time.perf_counter() - start
    gap = np.abs(np.rint(iomm.shared_clusters(idata)) - truth["U"])[np.triu_indices(100)]
    stats = idata.sample_stats
    return {
        "seed": seed,
        "mean K": float(stats["n_clusters"].mean()),
        "shares": [100 * float(np.mean(gap <= g)) for g in (0, 1, 2)],
        "theta accept": float(stats["theta_accept"].mean()),
        "new-cluster accept": float(stats["new_cluster_accept"].mean()),
        "seconds": seconds,
    }


def _commit() -> str:
    try:
        out = subprocess.run(
            ["git", "describe", "--always", "--dirty"], capture_output=True, text=True, check=True
        )
        return out.stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def report(speeds, tables, argv, seconds, draws, tune) -> list[str]:
    load = os.getloadavg()
    lines = [
        "# IOMM benchmarks: Algorithm 7.1 sweeps/s and Table 7.1 (issue 26)",
        "",
        "| run |  |",
        "|---|---|",
        f"| date | {datetime.now(UTC):%Y-%m-%d %H:%M} UTC |",
        f"| command | `python benchmarks/bench_iomm_sweeps.py {' '.join(argv)}`".rstrip() + " |",
        f"| commit | {_commit()} |",
        f"| machine | {platform.machine()}, {os.cpu_count()} logical CPUs, load average "
        f"{load[0]:.2f} {load[1]:.2f} {load[2]:.2f} at the end |",
        f"| total | {seconds:.0f} s |",
        "",
        "## Sweeps per second, N = 500, D = 426 (one chain, one core)",
        "",
        "No peer: no public IBP or IOMM sampler exists. One sweep is Gibbs over every existing",
        "membership (O(D) per flip through the kept natural parameters), a new-cluster proposal",
        "per item, and MH on every theta_kd; wall-clock on a shared machine, CPU time beside it.",
        "",
        "| start | true K | K at the end | sweeps | sweeps/s | CPU sweeps/s |",
        "|---|---|---|---|---|---|",
    ]
    for row in speeds:
        lines.append(
            f"| {row['start']} | {row['true K']} | {row['K at the end']} | {row['sweeps']} | "
            f"{row['sweeps/s']:.1f} | {row['CPU sweeps/s']:.1f} |"
        )
    lines += [
        "",
        f"## Table 7.1: N = 100, D = 32, K = 11; {tune + draws} sweeps, first {tune} discarded",
        "",
        "Share of item pairs (i <= j) whose rounded posterior mean of U = Z Z^T equals the",
        "truth's, or is within 1 or 2; k-means start, alpha = 2, a = b = 0.5.",
        "",
        "| data seed | = truth % | within 1 % | within 2 % | mean K | theta accept | "
        "new-cluster accept | seconds |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for row in tables:
        equal, one, two = row["shares"]
        lines.append(
            f"| {row['seed']} | {equal:.2f} | {one:.2f} | {two:.2f} | {row['mean K']:.2f} | "
            f"{row['theta accept']:.3f} | {row['new-cluster accept']:.4f} | "
            f"{row['seconds']:.1f} |"
        )
    mean = np.mean([row["shares"] for row in tables], axis=0)
    thesis = " / ".join(f"{value:.2f}" for value in THESIS_TABLE_7_1)
    lines += [
        f"| mean | {mean[0]:.2f} | {mean[1]:.2f} | {mean[2]:.2f} | | | | |",
        f"| thesis | {thesis.replace(' / ', ' | ')} | 11 (true) | | | |",
        "",
    ]
    return lines


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="short runs, no file written")
    parser.add_argument("--sweeps", type=int, default=None, help="timed sweeps (default 30)")
    parser.add_argument("--seeds", type=int, default=3, help="K = 11 data sets of Table 7.1")
    args = parser.parse_args(argv)
    sweeps = args.sweeps if args.sweeps is not None else (5 if args.quick else 30)
    if sweeps < 1 or args.seeds < 1:
        parser.error("--sweeps and --seeds must be at least 1")
    draws, tune = (200, 100) if args.quick else (3000, 1000)
    start = time.perf_counter()
    speeds = [sweeps_per_second(sweeps, begin) for begin in ("kmeans", "truth")]
    model = OverlappingMixture(alpha=2.0, a=0.5, b=0.5)
    tables = [table_7_1(seed, draws, tune) for seed in eleven_cluster_seeds(model, args.seeds)]
    lines = report(speeds, tables, argv, time.perf_counter() - start, draws, tune)
    print("\n".join(lines))
    if not args.quick:
        RESULTS.write_text("\n".join(lines))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
