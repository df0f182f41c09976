"""EM throughput of the Dask backend (issue 29): in memory against Dask with 1 and 2 workers.

Run from the repository root (the package installed with its ``dask`` extra, ``make install-test``)::

    python benchmarks/bench_dask.py            # 20 Newsgroups stacked 8 times, K = 20
    python benchmarks/bench_dask.py --quick    # stacked twice, fewer iterations
    python benchmarks/bench_dask.py --out other.md

The aspect model's annealed EM at ``beta = 1`` runs a fixed number of iterations in memory
(``latentzoo.fit``, one thread) and with ``backend="dask"`` on a local cluster of 1 and of 2 worker
processes of one thread each, each with its default blocks (one per worker); one more Dask fit,
on 1 worker in the 2 blocks of the 2-worker fit, checks that 1 and 2 workers give bit-identical
results (and shows what a second block costs on one worker). What is counted:

- ``s / iteration``: the steady state, the median of a fit's iterations after the first (the
  first holds numba's cache loading). No scatter, no start, no gather in it.
- ``fit s``: the whole fit as ``result.seconds`` has it: the start and every iteration, and for
  Dask also the data's one scatter and the final gather. The cluster's start-up and a warm-up fit on 200 rows (imports and numba's cached kernels
  in the workers) are off the clock, as a user's cluster is up before the fit.

Throughput is in G non-zero-topic updates per second (``nnz K / seconds per iteration / 1e9``).
The overhead of the Dask path is its time per iteration at 1 worker over the in-memory one, minus
1 (the issue's target: under 15%).

enstop's ``DistributedPLSA`` is the issue's peer; whether it could be installed beside the
project's dependencies is said in ``RESULTS_dask.md`` (not measured here when it could not).

The table is printed and, for a full run, written to ``benchmarks/RESULTS_dask.md`` with the date,
the machine, the commit, the command and the load average.
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
    """Median seconds of an EM fit's iterations after the first (the warm-up)."""
    return float(np.median(np.diff(result.trace["seconds"].to_numpy())))


def timed_fits(data, topics: int, iterations: int, blocks: int | None) -> list[dict]:
    """The in-memory fit and the Dask fits with 1 and 2 workers, one row each, and one more Dask
    fit on 1 worker in the 2-worker fit's blocks (the bit-identity check)."""
    import distributed

    schedule = {"betas": [1.0], "max_iter": iterations, "tol": 0.0, "random_state": 0,
                "progressbar": False}  # fmt: skip
    model = AspectModel(topics)
    warm_up = data.subset(rows=np.arange(200))
    memory = latentzoo.fit(model, data, n_threads=1, **schedule)
    rows = [{"backend": "memory", "workers": 1, "blocks": "", "result": memory}]
    two_worker_blocks = 2 if blocks is None else blocks
    runs = [(1, blocks), (1, two_worker_blocks), (2, blocks)]
    if blocks is not None:
        runs = runs[1:]  # the same blocks on 1 and 2 workers: no separate check needed
    for workers in (1, 2):
        with local_cluster(workers) as cluster, distributed.Client(cluster) as client:
            # Warm the workers: imports and numba's cached kernels, off the clock.
            latentzoo.fit(model, warm_up, backend="dask", client=client, blocks=workers,
                          **{**schedule, "max_iter": 1})  # fmt: skip
            for count in [b for w, b in runs if w == workers]:
                result = latentzoo.fit(model, data, backend="dask", client=client, blocks=count,
                                       **schedule)  # fmt: skip
                rows.append({"backend": "dask", "workers": workers,
                             "blocks": result.settings["blocks"], "result": result})  # fmt: skip
    same_blocks = [row["result"] for row in rows[1:] if row["blocks"] == two_worker_blocks]
    identical = (
        all(
            np.array_equal(same_blocks[0].params[name], same_blocks[-1].params[name])
            for name in memory.params
        )
        and len(same_blocks) == 2
    )
    difference = max(
        float(np.max(np.abs(row["result"].params[name] - memory.params[name])))
        for row in rows[1:]
        for name in memory.params
    )
    updates = data.nnz * topics / 1e9
    for row in rows:
        row["seconds"] = per_iteration(row["result"])
        row["fit seconds"] = row.pop("result").seconds
        row["G updates/s"] = updates / row["seconds"]
        row["vs memory"] = row["seconds"] / rows[0]["seconds"]
    return rows, identical, difference, memory


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


def header(command: str) -> list[str]:
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True,
                            text=True, check=False).stdout.strip()  # fmt: skip
    return [
        f"Date: {datetime.datetime.now(datetime.UTC):%Y-%m-%d %H:%M} UTC; machine: "
        f"{platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}; "
        f"commit {commit}; load average before the run {os.getloadavg()[0]:.1f}.",
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
    parser.add_argument("--quick", action="store_true", help="stacked twice, 3 iterations")
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
    copies, iterations = (2, 3) if args.quick else (8, 4)
    # Every fit sees the same 90% of the tokens; the other 10% score them (held-out perplexity).
    data, test = stacked_newsgroups(copies).split(0.1, random_state=0)
    started = time.perf_counter()
    rows, identical, difference, memory = timed_fits(data, args.topics, iterations, args.blocks)
    # The overhead at 1 worker: its fastest blocking (the default one block, or --blocks).
    overhead = rows[1]["vs memory"] - 1.0
    our_fit = (memory.params["theta"], memory.params["phi"])
    if Path(args.enstop_python).exists():
        peers = enstop_rows(args.enstop_python, data, test, args.topics, iterations, our_fit)
        # Against each worker count's first Dask row (its default blocks, or --blocks).
        ours = {}
        for row in rows[1:]:
            ours.setdefault(row["workers"], row["seconds"])
        peer_lines = enstop_table(peers, ours)
    else:
        peer_lines = [f"enstop not measured: no {args.enstop_python} (see the notes below)."]
    command = shlex.join(["python", "benchmarks/bench_dask.py", *(argv or sys.argv[1:])])
    blocking = (
        "one row block per worker (the default) and 2 blocks on 1 worker"
        if args.blocks is None
        else f"{args.blocks} row blocks"
    )
    lines = [
        "# Annealed EM on Dask: throughput in memory and with 1 and 2 workers",
        "",
        *header(command),
        "",
        f"20 Newsgroups stacked {copies} times ({data.n_rows:,} x {data.n_cols:,}, "
        f"{data.nnz:,} non-zeros), aspect model K = {args.topics}, beta = 1, {iterations} "
        f"iterations; Dask in {blocking}; worker processes of 1 thread. `s / iteration`: the "
        "steady state (median after the first iteration); `fit s`: the whole fit, the data's "
        "scatter, the start and the final gather included (cluster start-up and a warm-up fit "
        "not).",
        "",
        *table(rows),
        "",
        f"Overhead of the Dask path at 1 worker: {100 * overhead:+.1f}% (target: under "
        f"{100 * OVERHEAD_TARGET:.0f}%). 1 and 2 workers in the same blocks bit-identical: "
        f"{identical}; largest "
        f"difference from the in-memory parameters: {difference:.1e}. Run time "
        f"{time.perf_counter() - started:.0f} s.",
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
