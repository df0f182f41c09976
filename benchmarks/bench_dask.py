"""EM throughput of the Dask backend (issue 29): in memory against Dask with 1 and 2 workers.

Run from the repository root (the package installed with its ``dask`` extra, ``make install-test``)::

    python benchmarks/bench_dask.py            # 20 Newsgroups stacked 8 times, K = 20
    python benchmarks/bench_dask.py --quick    # stacked twice, 2 repeats, 4 iterations
    python benchmarks/bench_dask.py --out other.md

The aspect model's annealed EM at ``beta = 1`` runs a fixed number of iterations in memory
(``latentzoo.fit``, one thread) and with ``backend="dask"`` on a local cluster of worker processes
of one thread each. What is counted:

- ``s / iteration``: the steady state, the mean of a fit's iterations after the first (the
  first holds numba's cache loading): from the end of the first to the end of the last, over
  their number. Not the median of the single iterations: a step that runs ahead of the driver
  (the Dask path submits the next step before it waits) can make the client read two steps'
  statistics back to back, one iteration long and the next near zero, which a median would
  count as the speed. No cluster start-up, scatter, start or gather in it.
- **The overhead at 1 worker**: in-memory fits and Dask fits on 1 worker in one block,
  interleaved (memory, Dask, memory, Dask, ...) on one running cluster, 5 of each; the min and
  the median over the repeats of each, and their ratios. A single pair of fits is too noisy for
  a 15% bound (the in-memory yardstick moved by a third between two quiet runs).
- Once each, not in the overhead: the cluster's start-up, a warm-up fit on 200 rows (imports
  and numba's cached kernels in the workers) and a Dask fit's time outside its iterations (the
  data's scatter, the start, the final gather).
- One fit each in 2 blocks on 1 and on 2 workers: the 2-worker throughput and the check that
  they are bit-identical. ``fit s``: the whole fit as ``result.seconds`` has it.

Throughput is in G non-zero-topic updates per second (``nnz K / seconds per iteration / 1e9``).
The overhead of the Dask path is its time per iteration at 1 worker over the in-memory one, minus
1 (the issue's target: under 15%).

enstop's ``DistributedPLSA`` is the issue's peer; whether it could be installed beside the
project's dependencies is said in ``RESULTS_dask.md`` (not measured here when it could not).

The tables are printed and, for a full run, written to ``benchmarks/RESULTS_dask.md`` with the
date, the machine, the commit, the command, the load average and a reading written from the
numbers (the whole file is rewritten: add nothing to it by hand).
"""

from __future__ import annotations

import argparse
import datetime
import os
import platform
import shlex
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import scipy.sparse as sp

import latentzoo
from latentzoo.data import CoOccurrence, load
from latentzoo.inference.dask_backend import local_cluster
from latentzoo.models import AspectModel

RESULTS = Path(__file__).resolve().parent / "RESULTS_dask.md"
OVERHEAD_TARGET = 0.15
"""The issue's bound on the Dask path's overhead at 1 worker, relative to in memory."""


def stacked_newsgroups(copies: int) -> CoOccurrence:
    """The 20 Newsgroups document x word matrix stacked ``copies`` times (rows repeated)."""
    counts = load("20newsgroups").counts
    return CoOccurrence(sp.vstack([counts] * copies, format="csr"))


def per_iteration(result) -> float:
    """Mean seconds of an EM fit's iterations after the first (the warm-up): the end of the last
    minus the end of the first, over their number (see the module docstring: not a median)."""
    seconds = result.trace["seconds"].to_numpy()
    return float((seconds[-1] - seconds[0]) / (len(seconds) - 1))


def outside_iterations(result) -> float:
    """Seconds of a fit spent outside its iterations: the start and, for Dask, the data's
    scatter and the final gather."""
    return float(result.seconds - result.trace["seconds"].to_numpy()[-1])


def overhead_repeats(client, model, data, schedule, repeats: int) -> dict:
    """The in-memory fit and the Dask fit on the 1 worker of ``client`` (one block), alternated
    ``repeats`` times (memory, dask, memory, dask, ...): whatever else loads the machine loads
    both alike. Each fit gives its steady-state seconds per iteration (:func:`per_iteration`)."""
    memory, dask = [], []
    for _ in range(repeats):
        memory.append(latentzoo.fit(model, data, n_threads=1, **schedule))
        dask.append(latentzoo.fit(model, data, backend="dask", client=client, blocks=1,
                                  **schedule))  # fmt: skip
    return {"memory": memory, "dask": dask}


def timed_fits(data, topics: int, iterations: int, repeats: int, blocks: int | None) -> dict:
    """Every measurement of the Dask fits: the overhead at 1 worker (:func:`overhead_repeats`),
    the cluster's start-up and a Dask fit's time outside its iterations (once each), and one fit
    each with 2 blocks on 1 worker and on 2 workers (or ``blocks`` blocks), which must be
    bit-identical."""
    import distributed

    schedule = {"betas": [1.0], "max_iter": iterations, "tol": 0.0, "random_state": 0,
                "progressbar": False}  # fmt: skip
    model = AspectModel(topics)
    warm_up = data.subset(rows=np.arange(200))
    # numba's cached kernels and the data's first touch in this process, off the clock.
    latentzoo.fit(model, warm_up, n_threads=1, **{**schedule, "max_iter": 1})
    pair_blocks = 2 if blocks is None else blocks
    pair, once = [], {}
    for workers in (1, 2):
        started = time.perf_counter()
        with local_cluster(workers) as cluster, distributed.Client(cluster) as client:
            client.wait_for_workers(workers)
            once[f"cluster start-up with {workers} worker{'s' * (workers > 1)}"] = (
                time.perf_counter() - started
            )
            # The workers' imports and numba's cached kernels, off the clock.
            started = time.perf_counter()
            latentzoo.fit(model, warm_up, backend="dask", client=client, blocks=workers,
                          **{**schedule, "max_iter": 1})  # fmt: skip
            once[f"warm-up fit on 200 rows with {workers} worker{'s' * (workers > 1)}"] = (
                time.perf_counter() - started
            )
            if workers == 1:
                repeated = overhead_repeats(client, model, data, schedule, repeats)
                once["Dask fit outside its iterations (scatter, start, gather), 1 worker"] = (
                    outside_iterations(repeated["dask"][0])
                )
                once["in-memory fit outside its iterations (start)"] = outside_iterations(
                    repeated["memory"][0]
                )
            result = latentzoo.fit(model, data, backend="dask", client=client,
                                   blocks=pair_blocks, **schedule)  # fmt: skip
            pair.append({"backend": "dask", "workers": workers, "blocks": pair_blocks,
                         "result": result})  # fmt: skip
    memory = repeated["memory"][0]
    identical = all(
        np.array_equal(pair[0]["result"].params[name], pair[1]["result"].params[name])
        for name in memory.params
    )
    fits = [*repeated["dask"], *(row["result"] for row in pair)]
    difference = max(
        float(np.max(np.abs(fit.params[name] - memory.params[name])))
        for fit in fits
        for name in memory.params
    )
    times = {
        name: np.array([per_iteration(fit) for fit in fits]) for name, fits in repeated.items()
    }
    rows = [
        {"backend": "memory", "workers": 1, "blocks": "", "result": repeated["memory"],
         "seconds": times["memory"].min()},
        {"backend": "dask", "workers": 1, "blocks": 1, "result": repeated["dask"],
         "seconds": times["dask"].min()},
        *({**row, "result": [row["result"]], "seconds": per_iteration(row["result"])}
          for row in pair),
    ]  # fmt: skip
    updates = data.nnz * topics / 1e9
    for row in rows:
        row["fit seconds"] = min(fit.seconds for fit in row.pop("result"))
        row["G updates/s"] = updates / row["seconds"]
        row["vs memory"] = row["seconds"] / rows[0]["seconds"]
    return {"rows": rows, "identical": identical, "difference": difference, "memory": memory,
            "times": times, "once": once}  # fmt: skip


def dask_per_workers(rows) -> dict:
    """Seconds per iteration of each worker count's first Dask row (1 worker: its one block, the
    min of the repeats; 2 workers: their blocks)."""
    ours = {}
    for row in rows[1:]:
        ours.setdefault(row["workers"], row["seconds"])
    return ours


def overhead_table(times: dict) -> list[str]:
    """Min and median over the repeats of each backend's seconds per iteration, and their ratio."""
    memory, dask = times["memory"], times["dask"]
    lines = ["| over the repeats | memory s / iteration | Dask 1 worker s / iteration | "
             "Dask / memory |", "|---|---|---|---|"]  # fmt: skip
    for name, reduce in (("min", np.min), ("median", np.median)):
        m, d = reduce(memory), reduce(dask)
        lines.append(f"| {name} | {m:.3f} | {d:.3f} | {d / m:.3f} |")
    each = ", ".join(f"{m:.3f}/{d:.3f}" for m, d in zip(memory, dask, strict=True))
    lines += ["", f"Each repeat in order (memory/Dask s / iteration): {each}."]
    return lines


def reading(results: dict, peers: list[dict], load_before: float) -> list[str]:
    """What the numbers say, written from them (the file is rewritten by every full run)."""
    times, rows = results["times"], results["rows"]
    by_min = times["dask"].min() / times["memory"].min() - 1
    by_median = np.median(times["dask"]) / np.median(times["memory"]) - 1
    verdict = "met" if max(by_min, by_median) < OVERHEAD_TARGET else "NOT met"
    spread = times["memory"].max() / times["memory"].min() - 1
    two = next(row for row in rows if row["workers"] == 2)
    lines = [
        f"- **Overhead of the Dask path at 1 worker: {100 * by_min:+.1f}% by the min of the "
        f"repeats, {100 * by_median:+.1f}% by their median (target under "
        f"{100 * OVERHEAD_TARGET:.0f}%: {verdict}).** Load average {load_before:.1f} before the "
        f"run, {os.getloadavg()[0]:.1f} after it; the in-memory repeats spread by {100 * spread:.0f}% (max over min), the noise "
        "that a single pair of fits would carry into the ratio.",
        f"- 2 workers ({two['blocks']} blocks): {two['seconds']:.3f} s per iteration, "
        f"{rows[0]['seconds'] / two['seconds']:.2f}x the in-memory speed.",
    ]
    done = [peer for peer in peers if "failed" not in peer]
    if done:
        ours = dask_per_workers(rows)
        ratios = ", ".join(
            f"{peer['seconds'] / ours[peer['workers']]:.1f}x ({peer['workers']} worker{'s' * (peer['workers'] > 1)})"
            for peer in done
        )
        lines.append(f"- enstop's `DistributedPLSA` took {ratios} as long per iteration.")
    lines.append(
        f"- 1 and 2 workers in the same blocks bit-identical: {results['identical']}; largest "
        f"difference of a Dask fit from the in-memory parameters: {results['difference']:.1e}."
    )
    return lines


ENSTOP_RUN = """
import json, sys, time
import numpy as np, scipy.sparse as sp
from distributed import Client, LocalCluster
from enstop import DistributedPLSA

if __name__ == "__main__":
    folder, topics, iterations, workers = sys.argv[1], *map(int, sys.argv[2:5])
    train = sp.load_npz(f"{folder}/train.npz")
    with LocalCluster(n_workers=workers, threads_per_worker=1, dashboard_address=":0") as cluster, \\
            Client(cluster):
        # Warm-up: enstop's numba kernels compile in each worker (no cache), off the clock.
        DistributedPLSA(n_components=topics, n_iter=1, n_iter_per_test=1000,
                        random_state=0).fit(train[:200])
        times = []
        for n_iter in (1, 1 + iterations):
            started = time.perf_counter()
            model = DistributedPLSA(n_components=topics, n_iter=n_iter, n_iter_per_test=1000,
                                    random_state=0).fit(train)
            times.append(time.perf_counter() - started)
    np.save(f"{folder}/theta.npy", model.embedding_)
    np.save(f"{folder}/phi.npy", model.components_)
    print(json.dumps({"seconds": (times[1] - times[0]) / iterations}))
"""
"""enstop's ``DistributedPLSA`` on the training part, in its own virtual environment: seconds
per iteration (a fit of ``1 + iterations`` minus a fit of 1, so the start is not counted)."""


def held_out_perplexity(theta, phi, test: CoOccurrence, scored=None) -> tuple[float, np.ndarray]:
    """``exp(-sum n log sum_k theta phi / N)`` over the held-out tokens of the training rows
    (only the non-zeros ``scored``, if given), and which non-zeros got a positive probability."""
    rows, cols, counts = test.cells()
    probability = np.einsum("ik,ki->i", theta[rows], phi[:, cols])
    positive = probability > 0
    keep = positive if scored is None else scored
    log_p = np.log(np.where(keep, probability, 1.0))
    return float(np.exp(-(counts * log_p)[keep].sum() / counts[keep].sum())), positive


def enstop_rows(python: str, train, test, topics, iterations, our_fit) -> list[dict]:
    """enstop with 1 and 2 workers, one row each, or a row saying why it did not run."""
    import json
    import tempfile

    rows = []
    with tempfile.TemporaryDirectory() as folder:
        sp.save_npz(f"{folder}/train.npz", train.counts.astype(np.float64), compressed=False)
        script = Path(folder) / "run_enstop.py"
        script.write_text(ENSTOP_RUN)
        for workers in (1, 2):
            done = subprocess.run(
                [python, str(script), folder, str(topics), str(iterations), str(workers)],
                capture_output=True, text=True, check=False,
            )  # fmt: skip
            if done.returncode:
                why = (done.stderr.strip().splitlines() or ["no output"])[-1]
                rows.append({"backend": "enstop DistributedPLSA", "workers": workers,
                             "failed": why})  # fmt: skip
                continue
            seconds = json.loads(done.stdout.strip().splitlines()[-1])["seconds"]
            # enstop leaves probability 0 on some held-out tokens (words it zeroed): both are
            # scored on the tokens it gives a positive probability, and the others counted.
            perplexity, positive = held_out_perplexity(
                np.load(f"{folder}/theta.npy", allow_pickle=False),
                np.load(f"{folder}/phi.npy", allow_pickle=False),
                test,
            )
            ours, _ = held_out_perplexity(*our_fit, test, scored=positive)
            zero = test.cells()[2][~positive].sum() / test.total
            rows.append({"backend": "enstop DistributedPLSA", "workers": workers,
                         "seconds": seconds, "perplexity": perplexity, "ours": ours,
                         "zero": zero})  # fmt: skip
    return rows


def table(rows) -> list[str]:
    lines = ["| backend | workers | blocks | s / iteration | G updates/s | time vs memory | fit s |",
             "|---|---|---|---|---|---|---|"]  # fmt: skip
    for row in rows:
        lines.append(
            f"| {row['backend']} | {row['workers']} | {row['blocks']} | {row['seconds']:.3f} | "
            f"{row['G updates/s']:.2f} | {row['vs memory']:.2f} | {row['fit seconds']:.2f} |"
        )
    return lines


def header(command: str, load_before: float) -> list[str]:
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True,
                            text=True, check=False).stdout.strip()  # fmt: skip
    return [
        f"Date: {datetime.datetime.now(datetime.UTC):%Y-%m-%d %H:%M} UTC; machine: "
        f"{platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}; "
        f"commit {commit}; load average before the run {load_before:.1f}.",
        "",
        f"Command: `{command}`",
    ]


def enstop_table(rows, ours) -> list[str]:
    lines = ["| workers | enstop s / iteration | latentzoo dask s / iteration | enstop / latentzoo "
             "| held-out perplexity enstop | latentzoo | held-out tokens enstop gives p = 0 |",
             "|---|---|---|---|---|---|---|"]  # fmt: skip
    for row in rows:
        if "failed" in row:
            lines.append(f"| {row['workers']} | failed: {row['failed']} | | | | | |")
            continue
        mine = ours[row["workers"]]
        lines.append(
            f"| {row['workers']} | {row['seconds']:.3f} | {mine:.3f} | {row['seconds'] / mine:.2f} "
            f"| {row['perplexity']:.1f} | {row['ours']:.1f} | {100 * row['zero']:.2f}% |"
        )
    return lines


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="stacked twice, 2 repeats")
    parser.add_argument("--topics", type=int, default=20)
    parser.add_argument(
        "--blocks", type=int, help="row blocks of every Dask fit (default: one per worker)"
    )
    parser.add_argument("--out", type=Path, help="also write the markdown here")
    parser.add_argument(
        "--enstop-python", default="/tmp/enstop_venv/bin/python", help="the Python of a "
        "virtual environment with enstop and distributed installed (skipped if absent)",
    )  # fmt: skip
    args = parser.parse_args(argv)
    copies, iterations, repeats = (2, 4, 2) if args.quick else (8, 6, 5)
    load_before = os.getloadavg()[0]
    # Every fit sees the same 90% of the tokens; the other 10% score them (held-out perplexity).
    data, test = stacked_newsgroups(copies).split(0.1, random_state=0)
    started = time.perf_counter()
    results = timed_fits(data, args.topics, iterations, repeats, args.blocks)
    rows, memory = results["rows"], results["memory"]
    our_fit = (memory.params["theta"], memory.params["phi"])
    peers = []
    if Path(args.enstop_python).exists():
        peers = enstop_rows(args.enstop_python, data, test, args.topics, iterations, our_fit)
        peer_lines = enstop_table(peers, dask_per_workers(rows))
    else:
        peer_lines = [f"enstop not measured: no {args.enstop_python} (see the notes below)."]
    command = shlex.join(["python", "benchmarks/bench_dask.py", *(argv or sys.argv[1:])])
    pair_blocks = 2 if args.blocks is None else args.blocks
    lines = [
        "# Annealed EM on Dask: throughput in memory and with 1 and 2 workers",
        "",
        *header(command, load_before),
        "",
        f"20 Newsgroups stacked {copies} times ({data.n_rows:,} x {data.n_cols:,}, "
        f"{data.nnz:,} non-zeros), aspect model K = {args.topics}, beta = 1, {iterations} "
        "iterations per fit; worker processes of 1 thread. `s / iteration`: the steady state, "
        "the mean of a fit's iterations after the first; no start-up, scatter, start or "
        "gather in it (those are below, once).",
        "",
        "## The overhead of the Dask path at 1 worker",
        "",
        f"{repeats} in-memory fits and {repeats} Dask fits on 1 worker in one block, interleaved "
        "(memory, Dask, memory, Dask, ...) on one running cluster, so that a change of the "
        "machine's load hits both; each fit's steady-state seconds per iteration:",
        "",
        *overhead_table(results["times"]),
        "",
        "Counted once, not in the overhead: "
        + "; ".join(f"{name} {seconds:.2f} s" for name, seconds in results["once"].items())
        + ".",
        "",
        "## Throughput",
        "",
        f"Memory and Dask on 1 worker in 1 block: the min over the repeats above; Dask in "
        f"{pair_blocks} blocks on 1 and on 2 workers: one fit each (they must be bit-identical). "
        "`fit s`: the whole fit (for the repeated rows the shortest), the Dask data's scatter, "
        "the start and the final gather included.",
        "",
        *table(rows),
        "",
        f"Run time {time.perf_counter() - started:.0f} s (data loading not counted).",
        "",
        "## Against enstop's DistributedPLSA",
        "",
        f"Same training matrix, K, iterations and number of worker processes (1 thread each); "
        f"held-out perplexity on the other 10% of the tokens after {iterations} iterations from "
        "each one's random start (latentzoo: its in-memory fit, the same parameters as its Dask "
        "fits), both on the held-out tokens to which enstop gives a positive probability.",
        "",
        *peer_lines,
        "",
        ENSTOP_NOTES,
        "## Reading (written by the script from the numbers above)",
        "",
        *reading(results, peers, load_before),
    ]
    text = "\n".join(lines)
    print(text)
    for path in [args.out] if args.out else [] if args.quick else [RESULTS]:
        path.write_text(text)
    return 0


ENSTOP_NOTES = """enstop 0.2.6 installs from PyPI beside the project's dependencies (numpy 2.4, scipy
1.17, scikit-learn 1.9, dask 2026.8; pip chose numba 0.68 in its own venv, and `pip install
--dry-run enstop numba==0.65.1` resolves with the project's pin too), in a separate virtual
environment (`python -m venv /tmp/enstop_venv &&
/tmp/enstop_venv/bin/pip install enstop distributed`) so that it cannot change the project's.
Its `DistributedPLSA` sends both parameter tables back to the client every iteration; its numba
kernels are compiled in every worker on first use (no cache): the warm-up fit takes that off the
clock.
"""


if __name__ == "__main__":
    raise SystemExit(main())
