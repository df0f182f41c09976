"""Time of the minimax pseudo-inverse of a topic tree's path (seed 003, Algorithms 2.1 / 3.1).

Run from the repository root::

    python benchmarks/bench_topic_tree_pseudoinverse.py          # about half a minute on 2 cores
    python benchmarks/bench_topic_tree_pseudoinverse.py --quick  # a few seconds

For a path of ``depth + 1`` topics of a simulated tree (``TopicTreeMixture.simulate``, Dirichlet(1)
baseline, sign mutations with ``delta = 0.8``) over vocabularies of growing size, the three ways of
solving program (1) (``"dual"``: the k-variable dual of each row by constraint generation,
``"rows"``: one primal LP per row, ``"full"``: one LP over all of ``V``) are timed (best of the
repeats), their optima compared and the speed ratios to ``"dual"`` printed as a markdown table. The
issue's target is a 6-topic path over 20k words under 0.5 s. ``"rows"`` and ``"full"`` are
timed once and skipped above ``--primal-max-words`` (HiGHS took 29 s and 390 s on them at 5000
words; the full LP has ``k n + 1`` unknowns and ``2 k n`` rows).
"""

from __future__ import annotations

import argparse
import os
import time

import numpy as np

from latentzoo.inference.topic_tree import minimax_pseudoinverse, svd_pseudoinverse
from latentzoo.models.topic_tree import TopicTreeMixture


def _path_topics(n_words: int, depth: int, seed: int) -> np.ndarray:
    _, truth = TopicTreeMixture().simulate(
        seed, branching=2, depth=depth, n_words=n_words, n_docs=1, root_concentration=1.0
    )
    return truth["topics"][:, truth["path"][0]]


def _best_time(function, repeats: int):
    best, value = np.inf, None
    for _ in range(repeats):
        start = time.perf_counter()
        value = function()
        best = min(best, time.perf_counter() - start)
    return best, value


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small vocabularies, one repeat")
    parser.add_argument(
        "--depth", type=int, default=5, help="levels below the root (path of depth + 1 topics)"
    )
    parser.add_argument("--primal-max-words", type=int, default=2000)
    args = parser.parse_args(argv)
    sizes = (500, 2000) if args.quick else (1000, 2000, 5000, 20000)
    repeats = 1 if args.quick else 3
    print(
        f"load average {os.getloadavg()[0]:.2f}; path of {args.depth + 1} topics; best of {repeats}\n"
    )
    print(
        "| words | dual s | rows s | full s | rows/dual | full/dual | LPs (dual) | c minimax | max pinv |"
    )
    print("|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for n_words in sizes:
        topics = _path_topics(n_words, args.depth, seed=0)
        dual_time, dual = _best_time(
            lambda topics=topics: minimax_pseudoinverse(topics, "dual"), repeats
        )
        if n_words <= args.primal_max_words:
            rows_time, rows = _best_time(
                lambda topics=topics: minimax_pseudoinverse(topics, "rows"), 1
            )
            full_time, full = _best_time(
                lambda topics=topics: minimax_pseudoinverse(topics, "full"), 1
            )
            assert abs(rows.bound - dual.bound) < 1e-8 and abs(full.bound - dual.bound) < 1e-8
            primal_cells = f"{rows_time:.3f} | {full_time:.3f} | {rows_time / dual_time:.0f}x | {full_time / dual_time:.0f}x"
        else:
            primal_cells = "- | - | - | -"
        svd_bound = svd_pseudoinverse(topics).bound
        print(
            f"| {n_words} | {dual_time:.3f} | {primal_cells} | {dual.n_programs} | {dual.bound:.3f} | {svd_bound:.3f} |"
        )


if __name__ == "__main__":
    main()
