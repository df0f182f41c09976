"""Benchmark of one Bayesian Sets query over the 20 Newsgroups documents, reported as ratios.

Run from the repository root (the package installed, e.g. ``make install-test``)::

    python benchmarks/bench_bayesian_sets.py            # full run, under a minute on 2 cores
    python benchmarks/bench_bayesian_sets.py --quick    # a few seconds: fewer repeats
    python benchmarks/bench_bayesian_sets.py --out other.md

The tables are printed and written as markdown to ``report/benchmarks_bayesian_sets.md`` (not
tracked) and, for a full run, to ``benchmarks/RESULTS_bayesian_sets.md`` (tracked), headed with the
date, the machine, the commit and the exact command (issue 13's benchmark acceptance point).

The data: the ``20newsgroups`` corpus binarised (word present in the document), 11,293 documents x
73,712 words, 1.57 M non-zeros, CSR float64. The query: 3 documents of one newsgroup (seeded). Each
method answers the same query, timed over many repeats (rounds interleaved across the methods so
that load from other processes hits them alike); min and median milliseconds:

- ``BayesianSetsIndex.log_scores`` (latentzoo): the query's column sums, ``q`` and ``c`` of
  (4.13)-(4.14) on the query's own words only, and one sparse matrix-vector product (4.15);
- ``BayesianSetsIndex.query``: the same plus the :class:`RetrievalResult` (ranking is lazy);
- ``bayessets.BernoulliBayesianSet.query`` (PyPI ``bayessets``, installed with ``pip install
  bayessets`` if wanted; skipped with a note otherwise) with latentzoo's hyperparameters, so both
  compute the same scores (checked);
- the floor: the bare scipy CSR product ``X @ q`` with ``q`` precomputed, which every method must
  do once per query.

The target of issue 13 is one query in under 5 ms (the thesis: 2 M non-zeros in about 1 s in
2007).
"""

from __future__ import annotations

import sys
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import scipy
import scipy.sparse as sp

sys.path.insert(0, str(Path(__file__).resolve().parent))
# The shared helpers of the aspect-model benchmark: run header, markdown tables, the summary row
# and the report writer.
from bench_aspect import Ratio, machine_rows, markdown_table, run_suite  # noqa: E402
from bench_aspect import interleaved_rounds as interleaved_seconds  # noqa: E402
from run_config import QuickConfig, sized  # noqa: E402

from latentzoo.data import load, load_labels  # noqa: E402
from latentzoo.inference.bayesian_sets import BayesianSetsIndex  # noqa: E402
from latentzoo.models.bayesian_sets import BayesianSets  # noqa: E402

RESULTS = Path(__file__).resolve().parent / "RESULTS_bayesian_sets.md"  # tracked copy (full run)
TARGET_MS = 5.0  # one query over the binarised 20 Newsgroups matrix (issue 13)


@dataclass
class Config(QuickConfig):
    """Repeats of one run (full or ``--quick``)."""

    repeats: int = sized(300, quick=30)
    query_size: int = 3
    seed: int = 0


def machine_info() -> list[tuple[str, str]]:
    try:
        from importlib.metadata import version

        peer = f"bayessets {version('bayessets')}"
    except Exception:  # noqa: BLE001 - any failure means "not installed"
        peer = "bayessets not installed"
    return machine_rows(f"scipy {scipy.__version__}, {peer}")


def bench_query(cfg: Config):
    lines = ["## One query over the binarised 20 Newsgroups matrix", ""]
    start = time.perf_counter()
    counts = load("20newsgroups").counts
    X = sp.csr_matrix(counts, dtype=np.float64, copy=True)
    X.data[:] = 1.0  # word present in the document
    labels = load_labels("20newsgroups")
    load_s = time.perf_counter() - start

    start = time.perf_counter()
    index = BayesianSetsIndex(X, BayesianSets(scale=2.0))
    index_s = time.perf_counter() - start

    rng = np.random.default_rng(cfg.seed)
    group = rng.choice(np.unique(labels))
    query = np.sort(rng.choice(np.flatnonzero(labels == group), cfg.query_size, replace=False))
    c, q = index.weights(query)
    ours = index.log_scores(query)
    floor_q = q.copy()

    cases = {
        "latentzoo BayesianSetsIndex.log_scores": lambda: index.log_scores(query),
        "latentzoo BayesianSetsIndex.query": lambda: index.query(query),
        "scipy CSR X @ q (floor, q precomputed)": lambda: X @ floor_q,
    }
    peer_note = ""
    peer_max_diff = np.nan
    try:
        from bayessets import BernoulliBayesianSet

        h = index.component.hyperparameters(X.shape[1])
        peer = BernoulliBayesianSet(X, alpha=h["a"].copy(), beta=h["b"].copy())
        peer_scores = np.asarray(peer.query(list(query)), dtype=np.float64).ravel()
        peer_max_diff = float(np.max(np.abs(peer_scores - ours)))
        cases["bayessets BernoulliBayesianSet.query"] = lambda: peer.query(list(query))
    except ImportError as exc:
        peer_note = (
            f"The `bayessets` package is not importable ({exc}); install it with `pip install "
            "bayessets` to add it."
        )

    wall, cpu = interleaved_seconds(cases, cfg.repeats)
    times = {name: 1e3 * value for name, value in wall.items()}  # milliseconds
    cpu = {name: 1e3 * value for name, value in cpu.items()}
    floor_name = "scipy CSR X @ q (floor, q precomputed)"
    rows = [
        [
            name,
            float(t.min()),
            float(np.median(t)),
            float(cpu[name].min()),
            float(np.median(cpu[name])),
            float(np.median(t) / np.median(times[floor_name])),
        ]
        for name, t in times.items()
    ]
    ours_name = "latentzoo BayesianSetsIndex.log_scores"
    best_ms = float(times[ours_name].min())
    median_ms = float(np.median(times[ours_name]))
    floor = times[floor_name]
    floor_min, floor_median = float(floor.min()), float(np.median(floor))
    peer_times = times.get("bayessets BernoulliBayesianSet.query")
    if peer_times is not None:
        peer_min, peer_median = float(peer_times.min()), float(np.median(peer_times))
    lines += [
        f"Data: {X.shape[0]:,} documents x {X.shape[1]:,} words, {X.nnz:,} non-zeros "
        f"(loaded and binarised in {load_s:.2f} s). Index (validation and the empirical Beta "
        f"prior of section 4.3, kappa = 2, built once): {1e3 * index_s:.0f} ms. Query: "
        f"{cfg.query_size} documents of `{group}` (positions {', '.join(map(str, query))}), "
        f"with {int(np.count_nonzero(X[query].sum(axis=0)))} distinct words. "
        f"{cfg.repeats} timed repeats per method after one warm-up call, interleaved.",
        "",
        *markdown_table(
            ["method", "min ms", "median ms", "min CPU ms", "median CPU ms", "median / floor"],
            rows,
        ),
        "",
    ]
    if np.isfinite(peer_max_diff):
        lines += [
            "Same scores: the largest absolute difference between latentzoo's and bayessets' log "
            f"scores of all {X.shape[0]:,} documents is {peer_max_diff:.2e} (bayessets given "
            "latentzoo's hyperparameters; its own default, `meanfactor * mean`, is the unsmoothed "
            "data mean, which gives `log 0` for a word absent from every document).",
            "",
            "Above the floor (the product itself), in min / median ms: latentzoo "
            f"{best_ms - floor_min:+.2f} / {median_ms - floor_median:+.2f}, bayessets "
            f"{peer_min - floor_min:+.2f} / {peer_median - floor_median:+.2f}. Both spend nearly "
            "all of a query in the one CSR product; bayessets also prices `q` and `c` over all "
            f"{X.shape[1]:,} words on every query (`np.matrix` arithmetic), latentzoo caches the "
            "part that depends only on the query size (words absent from the query, section 4.4) "
            "and prices the query's own words. The minimum wall time is the figure for the "
            "target: the median also counts the rounds in which other processes took the cores "
            "(the CPU-time columns, of the calling thread, show how much).",
            "",
        ]
    if peer_note:
        lines += [peer_note, ""]
    ratios = [
        Ratio(
            "one query (log_scores), min ms vs target",
            f"{best_ms:.2f} ms",
            f"{TARGET_MS:g} ms",
            best_ms / TARGET_MS,
            "<= 1",
            "met" if best_ms <= TARGET_MS else "MISSED",
        ),
        Ratio(
            "one query (log_scores), median ms vs target (busy machine)",
            f"{median_ms:.2f} ms",
            f"{TARGET_MS:g} ms",
            median_ms / TARGET_MS,
        ),
        Ratio(
            "log_scores vs bare CSR matvec (floor), min",
            f"{best_ms:.2f} ms",
            f"{floor_min:.2f} ms",
            best_ms / floor_min,
        ),
        Ratio(
            "log_scores vs bare CSR matvec (floor), median",
            f"{median_ms:.2f} ms",
            f"{floor_median:.2f} ms",
            median_ms / floor_median,
        ),
    ]
    if peer_times is not None:
        ratios += [
            Ratio("log_scores vs bayessets query, min", f"{best_ms:.2f} ms",
                  f"{peer_min:.2f} ms", best_ms / peer_min),
            Ratio("log_scores vs bayessets query, median", f"{median_ms:.2f} ms",
                  f"{peer_median:.2f} ms", median_ms / peer_median),
        ]  # fmt: skip
    return lines, ratios


def main(argv=None) -> int:
    return run_suite(
        argv, description=__doc__.splitlines()[0], out="report/benchmarks_bayesian_sets.md",
        results=RESULTS, quick_help="a few seconds, fewer repeats",
        title="# latentzoo Bayesian Sets benchmark: one query over 20 Newsgroups",
        benches=(bench_query,), config=Config, machine_rows=machine_info(),
    )  # fmt: skip


if __name__ == "__main__":
    raise SystemExit(main())
