"""Benchmark of the tempered-EM schedules, with their defaults, on real corpora of 300 to 11,000 documents.

Run from the repository root (the package installed, e.g. ``make install-test``)::

    python benchmarks/bench_schedule_defaults.py            # full run, about 10 minutes on 2 cores
    python benchmarks/bench_schedule_defaults.py --quick    # about 1 minute: the two small corpora
    python benchmarks/bench_schedule_defaults.py --out other.md

The tables are printed and written as markdown to ``report/benchmarks_schedule_defaults.md`` (not tracked)
and, for a full run, to ``benchmarks/RESULTS_schedule_defaults.md`` (tracked), headed with the date, the
machine, the commit and the exact command.

For every corpus and seed ``s`` the documents' tokens are split by binomial thinning,
``data.split(0.1, random_state=s)``; the aspect model with K = 20 and its default priors is fitted
on the training part by ``annealed_em(..., random_state=s, n_threads=1)`` with each schedule left
at its defaults -- ``betas="auto"`` (Hofmann's tempered EM), ``betas="early_stopping"`` and plain
EM ``betas=[1.0]`` (to the free-energy tolerance) -- and scored by its perplexity on the held-out
tokens. Reported per corpus and schedule: the mean test perplexity and its ratio to plain EM (the
mean and the worst of the per-seed ratios), the iterations on all training tokens (the replay, for
the tempered schedules) and on the selection split, the temperatures, how many fits report
``converged`` and how their last temperature ended (``EMResult.stages``), and the wall time. A
unigram model (add-0.01 smoothing) gives the baseline perplexity. The spread of plain EM over its
random starts is the noise against which the schedules are compared.

The corpora: a 300-document random subset of ``reuters`` and the whole of it (395 documents),
``reuters-r8`` (5,485) and ``20newsgroups`` (11,293). The full run uses 3 seeds, except on
``20newsgroups`` (1 seed: its three fits take about 3-6 minutes on one thread);
``--quick`` runs the two Reuters corpora with 2 seeds.
"""

from __future__ import annotations

import sys
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_aspect import markdown_table  # noqa: E402

# The driver this benchmark shares with the Table 2 one: header, run, report with a per-fit table.
from bench_schedules import run_fit_report  # noqa: E402
from run_config import QuickConfig, sized  # noqa: E402

from latentzoo.data import load  # noqa: E402
from latentzoo.inference.annealing import SCHEDULE_DEFAULTS, perplexity  # noqa: E402
from latentzoo.inference.aspect import annealed_em  # noqa: E402
from latentzoo.models import AspectModel  # noqa: E402

RESULTS = (
    Path(__file__).resolve().parent / "RESULTS_schedule_defaults.md"
)  # tracked copy (full run)
TITLE = "# latentzoo benchmarks: tempered-EM schedules with their defaults"
QUICK_HELP = "about one minute: the two Reuters corpora, 2 seeds"
SCHEDULES = {"auto": "auto", "early_stopping": "early_stopping", "[1.0]": [1.0]}
N_COMPONENTS = 20


@dataclass
class Config(QuickConfig):
    """Corpora, seeds, and the corpora that run only their first few seeds."""

    corpora: tuple = sized(
        ("reuters-300", "reuters", "reuters-r8", "20newsgroups"), quick=("reuters-300", "reuters")
    )
    seeds: tuple = sized((0, 1, 2), quick=(0, 1))
    fewer_seeds: dict = sized({"20newsgroups": 1}, quick={})


def corpus(name: str):
    """A corpus of the registry, or ``reuters-300``: 300 documents of Reuters drawn with seed 0."""
    if name == "reuters-300":
        data = load("reuters")
        rows = np.sort(np.random.default_rng(0).choice(data.n_rows, 300, replace=False))
        return data.subset(rows=rows)
    return load(name)


def unigram_perplexity(train, test) -> float:
    """Held-out perplexity of the add-0.01 smoothed unigram model of the training tokens."""
    counts = np.asarray(train.counts.sum(axis=0)).ravel() + 0.01
    params = {"theta": np.ones((test.n_rows, 1)), "phi": (counts / counts.sum())[None, :]}
    return perplexity(AspectModel(1), params, test)


@dataclass
class Fit:
    corpus: str
    schedule: str
    seed: int
    perplexity: float
    iterations: int
    selection_iterations: int
    temperatures: int
    final_beta: float
    converged: bool
    last_stopped: str
    first_stage: int
    seconds: float


def fit_one(name, schedule, seed, train, test) -> Fit:
    start = time.perf_counter()
    result = annealed_em(AspectModel(N_COMPONENTS), train, betas=SCHEDULES[schedule],
                         random_state=seed, n_threads=1)  # fmt: skip
    seconds = time.perf_counter() - start
    selection = result.selection_trace
    stages = result.stages
    return Fit(
        corpus=name,
        schedule=schedule,
        seed=seed,
        perplexity=result.perplexity(test),
        iterations=len(result.trace),
        selection_iterations=0 if selection is None else len(selection),
        temperatures=len(result.betas),
        final_beta=result.betas[-1],
        converged=bool(result.converged),
        last_stopped=str(stages["stopped"].iloc[-1]),
        first_stage=int(stages["iterations"].iloc[0]),
        seconds=seconds,
    )


def run(cfg: Config) -> tuple[list[Fit], dict]:
    fits, baselines = [], {}
    for name in cfg.corpora:
        data = corpus(name)
        for seed in cfg.seeds[: cfg.fewer_seeds.get(name, len(cfg.seeds))]:
            train, test = data.split(0.1, random_state=seed)
            baselines.setdefault(name, []).append(unigram_perplexity(train, test))
            for schedule in SCHEDULES:
                fit = fit_one(name, schedule, seed, train, test)
                fits.append(fit)
                print(f"  {name} seed {seed} {schedule}: perplexity {fit.perplexity:.1f}, "
                      f"{fit.iterations} iterations, {fit.seconds:.1f} s", flush=True)  # fmt: skip
        baselines[name] = (data, float(np.mean(baselines[name])))
    return fits, baselines


def report_intro(cfg: Config, fits: list[Fit], baselines: dict) -> list[str]:
    defaults = {k: v for k, v in SCHEDULE_DEFAULTS.items() if k not in ("betas", "progressbar")}
    return [
        f"AspectModel(K={N_COMPONENTS}, default priors), `annealed_em` with every schedule option "
        f"at its default ({', '.join(f'`{k}={v}`' for k, v in defaults.items())}); test = "
        "`data.split(0.1, random_state=seed)`, the fit's `random_state` = the seed. "
        "`ratio to [1.0]` compares each fit with plain EM on the same split and seed.",
        "",
        *verdict(fits),
    ]


def summary_table(cfg: Config, fits: list[Fit], baselines: dict) -> list[str]:
    plain = {(f.corpus, f.seed): f.perplexity for f in fits if f.schedule == "[1.0]"}
    rows = []
    for name in cfg.corpora:
        data, unigram = baselines[name]
        for schedule in SCHEDULES:
            group = [f for f in fits if f.corpus == name and f.schedule == schedule]
            ratios = [f.perplexity / plain[name, f.seed] for f in group]
            stopped = sorted({f.last_stopped for f in group})
            rows.append([
                f"{name} ({data.n_rows} docs, {data.total:,} tokens)", f"`{schedule}`",
                len(group), f"{np.mean([f.perplexity for f in group]):.1f}",
                f"{np.mean(ratios):.3f} / {np.max(ratios):.3f}",
                f"{min(f.iterations for f in group)}-{max(f.iterations for f in group)}",
                f"{min(f.first_stage for f in group)}",
                f"{np.mean([f.selection_iterations for f in group]):.0f}",
                f"{np.mean([f.temperatures for f in group]):.1f}",
                f"{np.mean([f.final_beta for f in group]):.3g}",
                f"{sum(f.converged for f in group)}/{len(group)}", ", ".join(stopped),
                f"{np.mean([f.seconds for f in group]):.1f}", f"{unigram:.0f}",
            ])  # fmt: skip
    header = ["corpus", "betas", "seeds", "test perplexity (mean)",
              "ratio to [1.0]: mean / worst", "iterations (all training tokens)",
              "fewest iterations at beta=1", "selection iterations (mean)", "temperatures (mean)",
              "final beta (mean)", "converged", "last temperature ended by", "seconds (mean)",
              "unigram perplexity"]  # fmt: skip
    return markdown_table(header, rows)


def seed_table(fits: list[Fit]) -> list[str]:
    rows = [[f.corpus, f"`{f.schedule}`", f.seed, f"{f.perplexity:.1f}", f.iterations,
             f.selection_iterations, f.temperatures, f"{f.final_beta:.3g}", f.converged,
             f.last_stopped, f"{f.seconds:.1f}"] for f in fits]  # fmt: skip
    header = [
        "corpus",
        "betas",
        "seed",
        "test perplexity",
        "iterations",
        "selection iterations",
        "temperatures",
        "final beta",
        "converged",
        "last temperature ended by",
        "seconds",
    ]
    return markdown_table(header, rows)


def verdict(fits: list[Fit]) -> list[str]:
    """The checks the defaults must pass (issue 9): early stopping never ends in the first few
    iterations and is not worse than plain EM by more than the noise of plain EM's random start."""
    plain = {(f.corpus, f.seed): f.perplexity for f in fits if f.schedule == "[1.0]"}
    early = [f for f in fits if f.schedule == "early_stopping"]
    worst = max(f.perplexity / plain[f.corpus, f.seed] for f in early)
    fewest = min(f.first_stage for f in early)
    auto = [f for f in fits if f.schedule == "auto"]
    auto_worst = max(f.perplexity / plain[f.corpus, f.seed] for f in auto)
    return [
        f"- `early_stopping`: fewest iterations kept at beta = 1: {fewest} (the rule keeps at "
        f"least `min_iter` = {SCHEDULE_DEFAULTS['min_iter']}); worst ratio of its test perplexity "
        f"to plain EM's on the same split and start: {worst:.3f}.",
        f"- `auto`: worst ratio to plain EM {auto_worst:.3f}; converged "
        f"{sum(f.converged for f in auto)}/{len(auto)} (converged = the last, selected temperature "
        "ended by the early-stopping rule or by `tol`, not at `max_iter`).",
    ]


def main(argv=None) -> int:
    return run_fit_report(argv, sys.modules[__name__])


if __name__ == "__main__":
    raise SystemExit(main())
