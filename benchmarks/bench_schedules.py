"""Benchmark of the annealing schedules against the seed's Table 2: held-out perplexity of the
SMM, the HACM and the ACM at equal numbers of topics, leaves and clusters.

Run from the repository root (the package installed, e.g. ``make install-test``)::

    python benchmarks/bench_schedules.py            # full run, about 40 minutes on 2 busy cores
    python benchmarks/bench_schedules.py --quick    # under a minute: Reuters, one seed
    python benchmarks/bench_schedules.py --out other.md

The tables are printed and written as markdown to ``report/benchmarks_schedules.md`` (not tracked)
and, for a full run, to ``benchmarks/RESULTS_schedules.md`` (tracked), headed with the date, the
machine, the commit and the exact command.

The seed's Table 2 (Hofmann & Puzicha, 000, sec. 6.1) reports, on CRAN and PENN, held-out
perplexity ordered SMM < HACM < ACM at every K = 8 ... 128, each model at the temperature chosen
on a validation set. Here, for every corpus and seed ``s``, the tokens are split by binomial
thinning, ``data.split(0.1, random_state=s)``; the aspect model (SMM, ``AspectModel(K)``), the
asymmetric clustering model (ACM, ``OneSidedClustering(K)``) and the cluster-abstraction model
(HACM, ``ClusterAbstractionModel(depth)``, ``2**depth`` leaves) are fitted on the training part,
K = 4, 8, 16 against depths 2, 3, 4, by ``latentzoo.fit(..., random_state=s, n_threads=1)`` under
each schedule: ``betas="auto"`` (tempered EM, the temperature selected on a validation split of
the training tokens, as in the seed), ``betas=[1.0]`` (plain EM) and ``GeometricCooling()``
(deterministic annealing to beta = 1). Each fit is scored by ``latentzoo.perplexity`` on the
held-out tokens; the report gives mean +- sd over the seeds, the final inverse temperature, and
states for every corpus, schedule and K whether the ordering SMM < HACM < ACM holds (of the means,
and on how many seeds).

The corpora: ``reuters`` (395 documents) and the whole ``20newsgroups`` training set (11,293
documents, 73,712 words, 3.0 M tokens; its 81 fits take about half an hour on two busy cores).
``--quick`` runs Reuters with one seed.
"""

from __future__ import annotations

import sys
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
# The shared helpers of the aspect-model benchmark: run and machine headers, markdown tables.
from bench_aspect import (  # noqa: E402
    emit,
    finish_fit_report,
    markdown_table,
    one_thread_machine_rows,
    parse_run_arguments,
    report_header,
)
from run_config import QuickConfig, sized  # noqa: E402

import latentzoo  # noqa: E402
from latentzoo.data import load  # noqa: E402
from latentzoo.inference.annealing import GeometricCooling  # noqa: E402
from latentzoo.models import AspectModel, ClusterAbstractionModel, OneSidedClustering  # noqa: E402

RESULTS = Path(__file__).resolve().parent / "RESULTS_schedules.md"  # tracked copy (full run)
TITLE = "# latentzoo benchmarks: annealing schedules and the seed's Table 2 (SMM < HACM < ACM)"
QUICK_HELP = "under a minute: Reuters, one seed"
SCHEDULES = {"auto": lambda: "auto", "[1.0]": lambda: [1.0], "GeometricCooling()": GeometricCooling}
# Table 2's order, best (lowest perplexity) first.
MODELS = ("SMM", "HACM", "ACM")


def make_model(name: str, depth: int):
    """The model ``name`` with ``2**depth`` topics, leaves or clusters."""
    if name == "SMM":
        return AspectModel(2**depth)
    if name == "ACM":
        return OneSidedClustering(2**depth)
    return ClusterAbstractionModel(depth)


@dataclass
class Config(QuickConfig):
    """Corpora (name -> documents kept, None for all), seeds and HACM depths (K = 2**depth)."""

    corpora: dict = sized({"reuters": None, "20newsgroups": None}, quick={"reuters": None})
    seeds: tuple = sized((0, 1, 2), quick=(0,))
    depths: tuple = (2, 3, 4)


def corpus(name: str, n_documents: int | None):
    """A corpus of the registry, or its random subset of ``n_documents`` documents (seed 0)."""
    data = load(name)
    if n_documents is None or n_documents >= data.n_rows:
        return data
    rows = np.sort(np.random.default_rng(0).choice(data.n_rows, n_documents, replace=False))
    return data.subset(rows=rows)


@dataclass
class Fit:
    corpus: str
    schedule: str
    model: str
    depth: int
    seed: int
    perplexity: float
    final_beta: float
    converged: bool
    seconds: float


def run(cfg: Config) -> tuple[list[Fit], dict]:
    fits, corpora = [], {}
    for name, n_documents in cfg.corpora.items():
        data = corpus(name, n_documents)
        corpora[name] = data
        for seed in cfg.seeds:
            train, test = data.split(0.1, random_state=seed)
            for depth in cfg.depths:
                for model_name in MODELS:
                    for schedule, betas in SCHEDULES.items():
                        start = time.perf_counter()
                        result = latentzoo.fit(make_model(model_name, depth), train, betas=betas(),
                                               random_state=seed, n_threads=1)  # fmt: skip
                        fit = Fit(name, schedule, model_name, depth, seed,
                                  float(latentzoo.perplexity(result, test)),
                                  float(result.betas[-1]), bool(result.converged),
                                  time.perf_counter() - start)  # fmt: skip
                        fits.append(fit)
                        print(f"  {name} seed {seed} K={2**depth} {model_name} {schedule}: "
                              f"{fit.perplexity:.1f} (beta {fit.final_beta:.3g}, "
                              f"{fit.seconds:.1f} s)", flush=True)  # fmt: skip
    return fits, corpora


def select(fits, **keys) -> list[Fit]:
    return [f for f in fits if all(getattr(f, k) == v for k, v in keys.items())]


def ordering(fits, name, schedule, depth, seeds) -> tuple[bool, int]:
    """Whether SMM < HACM < ACM holds for the mean perplexities, and on how many seeds."""

    def perplexities(seed=None):
        values = []
        for model in MODELS:
            group = select(fits, corpus=name, schedule=schedule, depth=depth, model=model)
            if seed is not None:
                group = [f for f in group if f.seed == seed]
            values.append(np.mean([f.perplexity for f in group]))
        return values

    def ordered(values):
        return bool(values[0] < values[1] < values[2])

    return ordered(perplexities()), sum(ordered(perplexities(s)) for s in seeds)


def report_intro(cfg: Config, fits: list[Fit], corpora: dict) -> list[str]:
    described = ", ".join(
        f"`{name}`" + (f" ({n} random documents, seed 0)" if n else " (all documents)")
        for name, n in cfg.corpora.items()
    )
    return [
        f"Corpora: {described}. Test = `data.split(0.1, random_state=seed)`, seeds "
        f"{list(cfg.seeds)}; each fit `latentzoo.fit(model, train, betas=..., random_state=seed, "
        "n_threads=1)` with the schedule's other options at their defaults, scored by "
        "`latentzoo.perplexity(result, test)`. SMM = `AspectModel(K)`, ACM = "
        "`OneSidedClustering(K)`, HACM = `ClusterAbstractionModel(depth)` with K = 2**depth "
        "leaves. Perplexity: mean +- sd over the seeds; beta: mean final inverse temperature.",
        "",
        "## The seed's Table 2 ordering",
        "",
        "Table 2 of the seed (000, CRAN and PENN, temperature chosen on validation data) has "
        "SMM < HACM < ACM in perplexity at every K. Here:",
        "",
        *verdicts(cfg, fits, corpora),
    ]


def summary_table(cfg, fits, corpora) -> list[str]:
    rows = []
    for name, data in corpora.items():
        for schedule in SCHEDULES:
            for depth in cfg.depths:
                cells = []
                for model in MODELS:
                    group = select(fits, corpus=name, schedule=schedule, depth=depth, model=model)
                    values = [f.perplexity for f in group]
                    betas = [f.final_beta for f in group]
                    sd = np.std(values, ddof=1) if len(values) > 1 else float("nan")
                    cells += [f"{np.mean(values):.0f} +- {sd:.0f}", f"{np.mean(betas):.3g}"]
                holds, n_seeds = ordering(fits, name, schedule, depth, cfg.seeds)
                rows.append([f"{name} ({data.n_rows} docs)", f"`{schedule}`", 2**depth, depth,
                             *cells, "yes" if holds else "no",
                             f"{n_seeds}/{len(cfg.seeds)}"])  # fmt: skip
    header = ["corpus", "betas", "K", "HACM depth", "SMM perplexity", "SMM beta",
              "HACM perplexity", "HACM beta", "ACM perplexity", "ACM beta",
              "SMM < HACM < ACM (means)", "seeds ordered"]  # fmt: skip
    return markdown_table(header, rows)


def verdicts(cfg, fits, corpora) -> list[str]:
    """One line per corpus and schedule: is Table 2's ordering reproduced at every K?"""
    lines = []
    for name in corpora:
        for schedule in SCHEDULES:
            held = [2**d for d in cfg.depths if ordering(fits, name, schedule, d, cfg.seeds)[0]]
            failed = [2**d for d in cfg.depths if 2**d not in held]
            if not failed:
                state = "**reproduced** at every K"
            elif not held:
                state = "**not reproduced** at any K"
            else:
                state = f"**partly reproduced**: holds at K = {held}, fails at K = {failed}"
            broken = []
            for depth in cfg.depths:
                means = {
                    m: np.mean(
                        [
                            f.perplexity
                            for f in select(
                                fits, corpus=name, schedule=schedule, depth=depth, model=m
                            )
                        ]
                    )
                    for m in MODELS
                }
                order = " < ".join(sorted(MODELS, key=means.get))
                if order != " < ".join(MODELS):
                    broken.append(f"K = {2**depth}: {order}")
            detail = f" (measured order: {'; '.join(broken)})" if broken else ""
            lines.append(f"- {name}, `{schedule}`: SMM < HACM < ACM {state}{detail}.")
    return lines


def seed_table(fits: list[Fit]) -> list[str]:
    rows = [[f.corpus, f"`{f.schedule}`", 2**f.depth, f.model, f.seed, f"{f.perplexity:.1f}",
             f"{f.final_beta:.3g}", f.converged, f"{f.seconds:.1f}"] for f in fits]  # fmt: skip
    header = ["corpus", "betas", "K", "model", "seed", "test perplexity", "final beta",
              "converged", "seconds"]  # fmt: skip
    return markdown_table(header, rows)


def one_thread_fit_report(
    argv, *, description, out, results, quick_help, title, config, body, extra_machine_rows=(),
    busy_note=", and the seconds columns with them",
) -> int:  # fmt: skip
    """The driver of the per-fit benchmarks whose fits run on one thread (this one,
    ``bench_schedule_defaults`` and ``bench_gibbs_end_to_end``).

    Parses the command line (``description``, ``out``, ``results``, ``quick_help``: see
    ``bench_aspect.parse_run_arguments``), prints the header (``title`` gets the run kind; the
    machine table is ``one_thread_machine_rows()`` then ``extra_machine_rows``), runs
    ``body(cfg) -> lines`` on ``config()`` or ``config.quick()``, then prints and writes the
    report with its run time.
    """
    args, argv, results = parse_run_arguments(argv, description, out, results, quick_help)
    cfg = config.quick() if args.quick else config()
    start = time.perf_counter()
    header = report_header(
        f"{title} ({'quick' if args.quick else 'full'} run)", argv,
        one_thread_machine_rows() + list(extra_machine_rows), busy_note,
    )  # fmt: skip
    emit(header)
    finish_fit_report(header, body(cfg), start, (args.out, results))
    return 0


def run_fit_report(argv, script) -> int:
    """The driver of the per-fit schedule benchmarks (this one and ``bench_schedule_defaults``).

    ``script`` is the benchmark's module: its first docstring line, ``TITLE`` (without the run
    kind), ``QUICK_HELP``, ``RESULTS``, ``Config``, ``run(cfg) -> (fits, context)``,
    ``report_intro(cfg, fits, context)`` (what was run and the verdicts), ``summary_table(cfg,
    fits, context)`` and ``seed_table(fits)``. Parses the command line, prints the header, runs,
    then prints and writes the report: the introduction, the summary and the per-fit table.
    """

    def report_body(cfg) -> list[str]:
        fits, context = script.run(cfg)
        return [
            *script.report_intro(cfg, fits, context),
            "",
            "## Summary",
            "",
            *script.summary_table(cfg, fits, context),
            "",
            "## Every fit",
            "",
            *script.seed_table(fits),
            "",
        ]

    # Each script its own untracked report, named after its tracked RESULTS file, so that
    # running one benchmark never overwrites the other's report.
    out = "report/benchmarks_" + script.RESULTS.stem.removeprefix("RESULTS_") + ".md"
    return one_thread_fit_report(
        argv, description=script.__doc__.splitlines()[0], out=out,
        results=script.RESULTS, quick_help=script.QUICK_HELP, title=script.TITLE,
        config=script.Config, body=report_body,
    )  # fmt: skip


def main(argv=None) -> int:
    return run_fit_report(argv, sys.modules[__name__])


if __name__ == "__main__":
    raise SystemExit(main())
