"""AD-LDA (approximate distributed collapsed Gibbs) against the exact sampler, on Reuters.

Run from the repository root::

    python benchmarks/bench_ad_lda.py            # full run, about 2 minutes on 2 cores
    python benchmarks/bench_ad_lda.py --quick    # about 20 s: fewer sweeps and seeds
    python benchmarks/bench_ad_lda.py --dask     # also the shards as Dask tasks on 2 workers

Measured, for ``shards`` P = 1, 2, 4 (in this process, one shard after the other) against the
exact sampler (``AspectGibbs``): tokens/s (best of several runs, the calling thread's CPU time and
wall time), held-out perplexity on a 10% binomial split (posterior-mean point estimates of the
final state, mean and range over seeds), and the word-topic distributions of the final state
after matching the topics (Hungarian matching on the total-variation distance), set against the
same distance between two exact chains of different seeds (how far two exact runs land apart).
The tables are printed and written to ``report/benchmarks_ad_lda.md`` and, for a full run, to
``benchmarks/RESULTS_ad_lda.md``.
"""

from __future__ import annotations

import sys
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from scipy.optimize import linear_sum_assignment

from latentzoo.data import CoOccurrence, load
from latentzoo.inference.ad_lda import ADLDAGibbs
from latentzoo.inference.aspect import AspectGibbs, gibbs_sweep
from latentzoo.models.aspect import AspectModel

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_aspect import (  # noqa: E402
    ALPHA,
    ETA,
    Stopwatch,
    emit,
    heldout_perplexity,
    machine_info,
    markdown_table,
    parse_run_arguments,
    point_estimates,
    report_header,
)
from run_config import QuickConfig, sized  # noqa: E402

RESULTS = Path(__file__).resolve().parent / "RESULTS_ad_lda.md"


@dataclass
class Config(QuickConfig):
    """Problem sizes and repeats of one run (full or ``--quick``)."""

    topics: int = 20
    sweeps: int = sized(200, quick=50)
    shards: tuple = (1, 2, 4)
    repeats: int = sized(3, quick=1)
    seeds: tuple = sized((1, 2, 3, 4, 5), quick=(1, 2))
    dask: bool = False


def run_ad_lda(data: CoOccurrence, n_topics, sweeps, seed, shards=None, client=None):
    """Sampler construction, initialisation and ``sweeps`` rounds are timed; ``shards=None``
    runs the exact sampler (``AspectGibbs``). Returns the seconds, theta and phi."""
    with Stopwatch(time.process_time if client is not None else time.thread_time) as seconds:
        model = AspectModel(n_topics, alpha=ALPHA, eta=ETA)
        if shards is None:
            sampler = AspectGibbs(model, data)
        else:
            sampler = ADLDAGibbs(AspectGibbs(model, data), gibbs_sweep, shards, client=client)
        rng = np.random.default_rng(seed)
        state = sampler.init(rng)
        for _ in range(sweeps):
            state = sampler.advance(state, rng)
    theta, phi = point_estimates(state.n_doc_topic, state.n_word_topic.T, ALPHA, ETA)
    return seconds, theta, phi


def matched_topic_distance(phi_a, phi_b) -> float:
    """Mean total-variation distance between the topics of ``phi_a`` and ``phi_b`` (K x M) after
    matching them one to one (Hungarian, on the same distance)."""
    cost = 0.5 * np.abs(phi_a[:, None, :] - phi_b[None, :, :]).sum(axis=2)
    rows, cols = linear_sum_assignment(cost)
    return float(cost[rows, cols].mean())


def best_rate(data, cfg: Config, shards, client=None) -> tuple[float, float]:
    """Best (wall, CPU) tokens/s over ``cfg.repeats`` runs of seed 1 (``shards=None``: exact)."""
    best_wall = best_cpu = np.inf
    for _ in range(cfg.repeats):
        seconds = run_ad_lda(data, cfg.topics, cfg.sweeps, 1, shards, client)[0]
        best_wall, best_cpu = min(best_wall, seconds.wall), min(best_cpu, seconds.cpu)
    tokens = data.total * cfg.sweeps
    return tokens / best_wall, tokens / best_cpu


def bench_ad_lda(cfg: Config):
    """The table of tokens/s, perplexity gap and matched-topic distance; ``(lines, rows)``."""
    data = load("reuters")
    train, test = data.split(0.1, random_state=0)
    run_ad_lda(load("toy"), 2, 2, 0, 2)  # compile (or load) the numba sweep outside the timings
    exact_runs = {seed: run_ad_lda(train, cfg.topics, cfg.sweeps, seed) for seed in cfg.seeds}
    exact_ppl = [heldout_perplexity(out[1], out[2], test) for out in exact_runs.values()]
    seeds = list(cfg.seeds)
    exact_spread = [
        matched_topic_distance(exact_runs[a][2], exact_runs[b][2])
        for a, b in zip(seeds, seeds[1:], strict=False)
    ]
    exact_wall, exact_cpu = best_rate(data, cfg, None)
    rows = [
        ["exact (AspectGibbs)", "-", f"{exact_wall:.3e}", f"{exact_cpu:.3e}", 1.0,
         _spread(exact_ppl), 0.0, f"{np.mean(exact_spread):.3f} (two exact seeds)"],
    ]  # fmt: skip
    summary = {"exact": (exact_cpu, float(np.mean(exact_ppl)))}
    clients = [("in-process", None)] + ([("dask, 2 workers", _local_client())] if cfg.dask else [])
    for where, client in clients:
        for shards in cfg.shards:
            wall, cpu = best_rate(data, cfg, shards, client)
            ppl, distance = [], []
            for seed in cfg.seeds:
                out = run_ad_lda(train, cfg.topics, cfg.sweeps, seed, shards, client)
                ppl.append(heldout_perplexity(out[1], out[2], test))
                distance.append(matched_topic_distance(out[2], exact_runs[seed][2]))
            gap = (np.mean(ppl) - np.mean(exact_ppl)) / np.mean(exact_ppl)
            rows.append([f"AD-LDA, {where}", shards, f"{wall:.3e}", f"{cpu:.3e}",
                         cpu / exact_cpu, _spread(ppl), 100 * gap,
                         f"{np.mean(distance):.3f}"])  # fmt: skip
            summary[f"{where} P={shards}"] = (cpu, float(np.mean(ppl)))
        if client is not None:
            client.close()
    header = ["sampler", "shards P", "tokens/s (wall)", "tokens/s (CPU)", "CPU rate / exact",
              "held-out perplexity, mean (min-max)", "perplexity gap vs exact (%)",
              "topic distance to exact (mean TV, matched)"]  # fmt: skip
    lines = [
        f"## AD-LDA vs exact collapsed Gibbs (Reuters, K = {cfg.topics}, {cfg.sweeps} sweeps)",
        "",
        f"Reuters: {data.n_rows} documents, {data.n_cols} words, {data.total} tokens; "
        f"alpha={ALPHA}, eta={ETA}; merge after every sweep (`merge_every=1`). Tokens/s: best of "
        f"{cfg.repeats} run(s) of seed 1 on the whole corpus (construction, init and sweeps; "
        f"CPU time of the calling thread in process, of the client process with Dask). "
        f"Perplexity: `split(0.1, random_state=0)` ({train.total} train / {test.total} test "
        f"tokens), point estimates of the final state, seeds {seeds}. Topic distance: the "
        f"final phi of each AD-LDA run against the exact run of the same seed, topics matched "
        f"one to one; the exact row gives the same distance between exact runs of consecutive "
        f"seeds, the scale of chain-to-chain variation.",
        "",
        *markdown_table(header, rows),
    ]
    return lines, summary


def _spread(values) -> str:
    return f"{np.mean(values):.1f} ({min(values):.1f}-{max(values):.1f})"


def _local_client():
    """A two-worker, one-thread-per-worker ``LocalCluster`` (processes: numba's sweep holds the
    GIL)."""
    from distributed import Client, LocalCluster

    return Client(LocalCluster(n_workers=2, threads_per_worker=1, processes=True))


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    dask = "--dask" in argv
    argv = [a for a in argv if a != "--dask"]
    args, argv, results = parse_run_arguments(
        argv, __doc__.splitlines()[0], "report/benchmarks_ad_lda.md", RESULTS,
        "about 20 s: 50 sweeps, 2 seeds, 1 repeat",
    )  # fmt: skip
    cfg = Config.quick() if args.quick else Config()
    cfg.dask = dask
    start = time.perf_counter()
    header = report_header(
        f"# AD-LDA benchmark ({'quick' if args.quick else 'full'} run)", argv, machine_info()
    )
    emit(header)
    lines, _ = bench_ad_lda(cfg)
    lines += ["", f"Run time: {time.perf_counter() - start:.0f} s."]
    emit(lines)
    for target in (args.out, results):
        if target is not None:
            Path(target).parent.mkdir(parents=True, exist_ok=True)
            Path(target).write_text("\n".join(header + lines) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
