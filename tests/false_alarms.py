"""False alarms of the exact and calibrated levels on correct code: pass counts over many seeds.

Each registered family with a sampler runs ``latentzoo.validate(..., quick=True,
levels=["exact", "calibrated"])`` at seeds ``0..n-1``; a correct sampler must pass at least 95 of
100 seeds (each level holds its family-wise false-alarm rate near 1e-3 per check). The slow test
``tests/test_false_alarms.py`` asserts it; run the study and print the table with::

    python -m tests.false_alarms --seeds 100 [--family one_sided ...] [--level exact ...]

It is long (minutes per seed for the mixtures); ``--seeds`` trades time for resolution.
"""

from __future__ import annotations

import argparse
import time
import warnings

import numpy as np

FAMILIES = {
    "aspect": "AspectModel(2)",
    "one_sided": "OneSidedClustering(2)",
    "two_sided": "TwoSidedClustering(2, 2)",
    "dpm": "DirichletProcessMixture()",
    "finite_mixture": "BayesianMixture(2)",
}
"""The families with a sampler (the product-space mixture has none), as their validation model."""


def pass_counts(family: str, seeds, levels=("exact", "calibrated"), progress: bool = False) -> dict:
    """``{level: passes}`` and ``failures`` (seed, check) over ``seeds`` for one family; with
    ``progress`` one line per seed and level as it finishes."""
    import latentzoo
    import latentzoo.models as models

    model = eval(FAMILIES[family], vars(models))
    counts = {level: 0 for level in levels}
    failures = []
    start = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for seed in seeds:
            for level in levels:
                comparison = latentzoo.validate(
                    model, quick=True, levels=[level], random_state=seed
                )
                if comparison.passed:
                    counts[level] += 1
                else:
                    failures += [(seed, c.name) for c in comparison.checks if not c.passed]
                if progress:
                    print(f"  {family} seed {seed} {level}: {comparison.verdict()}", flush=True)
    counts["failures"] = failures
    counts["seconds"] = time.perf_counter() - start
    return counts


NEWER = {
    "iomm": ("OverlappingMixture()", ("exact", "calibrated")),
    "cluster-abstraction": ("ClusterAbstractionModel(1)", ("exact", "reference", "calibrated")),
    "topic-tree": ("TopicTreeMixture()", ("reference",)),
    "bpm": ("BayesianPartialMembership(2)", ("exact", "reference", "calibrated")),
    "texture": (None, ("exact", "optimality")),
}
"""The families added last (issue 25), as their validation model, and the levels of each whose
false alarms are counted: exact, reference and calibrated where they apply (texture segmentation
has no sampler: its exact and Monte Carlo optimality levels)."""


def level_passes(family: str, level: str, seed: int) -> tuple[bool, list]:
    """Whether ``family``'s ``level`` passes at ``seed`` (``latentzoo.validate(..., quick=True)``),
    and the names of the checks that failed (an inconclusive check, which does not fail the
    level, is named with `` (inconclusive)``). Texture segmentation is not a registered family: its
    recipe's levels are called directly, as is the BPM's calibrated level while its recipe does not
    list it yet."""
    import latentzoo
    import latentzoo.models as models
    from latentzoo.inference.validation import QUICK

    expression, _ = NEWER[family]
    rng = np.random.default_rng(seed)
    if family == "texture":
        from latentzoo.inference.texture_segmentation import validation_recipe

        recipe = validation_recipe()
        comparison = recipe.checks[level](None, recipe, None, None, QUICK, rng)
        return comparison.passed, [c.name for c in comparison.checks if not c.passed]
    model = eval(expression, vars(models))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        comparison = latentzoo.validate(model, quick=True, levels=[level], random_state=seed)
    return comparison.passed, [
        c.name + (" (inconclusive)" if c.inconclusive else "")
        for c in comparison.checks
        if not c.passed
    ]


def newer_study(seeds, pairs=None, budget: float = float("inf"), log=None) -> dict:
    """False-alarm counts of the newer families' levels (:data:`NEWER`) over ``seeds``, sharing
    ``budget`` CPU seconds fairly: the (family, level) pair that has used the least CPU time
    runs its next seed, so cheap levels reach many seeds and PyMC references a few. One JSON
    line per run is appended to ``log``.

    Returns
    -------
    dict
        ``(family, level) -> {"runs", "failures": [(seed, checks)], "cpu"}``.
    """
    import json

    pairs = pairs or [(family, level) for family, (_, levels) in NEWER.items() for level in levels]
    seeds = list(seeds)
    done = {pair: {"runs": 0, "failures": [], "cpu": 0.0} for pair in pairs}
    while sum(entry["cpu"] for entry in done.values()) < budget:
        open_pairs = [pair for pair in pairs if done[pair]["runs"] < len(seeds)]
        if not open_pairs:
            break
        pair = min(open_pairs, key=lambda p: done[p]["cpu"])
        seed = seeds[done[pair]["runs"]]
        start = time.process_time()
        passed, failed = level_passes(*pair, seed)
        entry = done[pair]
        entry["cpu"] += time.process_time() - start
        entry["runs"] += 1
        if not passed:
            entry["failures"].append((seed, failed))
        if log is not None:
            with open(log, "a") as out:
                out.write(json.dumps({"family": pair[0], "level": pair[1], "seed": seed,
                                      "passed": passed, "failed": failed,
                                      "cpu": time.process_time() - start}) + "\n")  # fmt: skip
    return done


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=100)
    parser.add_argument("--first", type=int, default=0, help="first seed")
    parser.add_argument("--family", action="append", choices=sorted(FAMILIES))
    parser.add_argument("--level", action="append", choices=["exact", "calibrated"])
    parser.add_argument("--newer", action="store_true",
                        help="the newer families (NEWER), CPU shared fairly between levels")  # fmt: skip
    parser.add_argument("--budget", type=float, default=float("inf"), help="CPU seconds (--newer)")
    parser.add_argument("--log", help="JSON lines of every run (--newer)")
    parser.add_argument("--rows", action="append", metavar="FAMILY:LEVEL",
                        help="only these rows of --newer (repeatable), e.g. iomm:calibrated")  # fmt: skip
    args = parser.parse_args(argv)
    if args.newer:
        seeds = range(args.first, args.first + args.seeds)
        pairs = [tuple(row.split(":", 1)) for row in args.rows] if args.rows else None
        done = newer_study(seeds, pairs, budget=args.budget, log=args.log)
        print("| family | level | seeds | failed | CPU seconds |")
        print("|---|---|---|---|---|")
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


if __name__ == "__main__":
    main()


def _basic_rhat(x):
    """Gelman-Rubin R-hat of chains ``x`` (..., chains, draws)."""
    n = x.shape[-1]
    within = x.var(axis=-1, ddof=1).mean(axis=-1)
    between = x.mean(axis=-1).var(axis=-1, ddof=1)
    return np.sqrt(((n - 1) / n * within + between) / within)


def _rank_normal(x):
    """Draws (..., chains, draws) replaced by normal scores of their pooled ranks."""
    from scipy import stats

    pooled = x.reshape(x.shape[:-2] + (-1,))
    ranks = stats.rankdata(pooled, axis=-1)
    return stats.norm.ppf((ranks - 0.375) / (pooled.shape[-1] + 0.25)).reshape(x.shape)


def split_rank_rhat(x):
    """ArviZ's rank-normalised split R-hat (``az.rhat(method="rank")``), vectorised over the
    leading axes of ``x`` (..., chains, draws): the larger of the bulk and the folded (tail)
    R-hat of the half-chains (an even number of draws)."""
    half = x.shape[-1] // 2
    halves = np.concatenate([x[..., :half], x[..., half : 2 * half]], axis=-2)
    median = np.median(halves.reshape(halves.shape[:-2] + (-1,)), axis=-1)[..., None, None]
    bulk = _basic_rhat(_rank_normal(halves))
    tail = _basic_rhat(_rank_normal(np.abs(halves - median)))
    return np.maximum(bulk, tail)


def max_rhat_quantile(draws, ess, n_quantities, q=0.99, n_runs=1000, chains=4, seed=0):
    """The ``q`` quantile of the max R-hat over ``n_quantities`` independent quantities of
    converged chains with effective sample size ``ess`` (AR(1) chains of ``draws`` draws each):
    the convergence threshold a level of that size can use at false-alarm rate ``1 - q``.

    Returns
    -------
    quantile : float
    exceed_1_01 : float
        Share of runs whose max R-hat exceeds the customary 1.01.
    """
    rng = np.random.default_rng(seed)
    ratio = ess / (chains * draws)
    phi = (1 - ratio) / (1 + ratio)
    scale = np.sqrt(1 - phi**2)
    maxima = []
    for _ in range(max(1, n_runs // 50)):
        noise = rng.standard_normal((50, n_quantities, chains, draws))
        chain = np.empty_like(noise)
        chain[..., 0] = noise[..., 0]
        for t in range(1, draws):
            chain[..., t] = phi * chain[..., t - 1] + scale * noise[..., t]
        maxima.append(split_rank_rhat(chain).max(axis=-1))
    maxima = np.concatenate(maxima)
    return float(np.quantile(maxima, q)), float(np.mean(maxima > 1.01))
