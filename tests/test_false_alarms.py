"""The exact, reference and calibrated levels raise no more false alarms than their nominal rate."""

import math
import os
import time
from pathlib import Path

import pytest

from tests.false_alarms import ROWS, level_passes, read_log, runs_by_row

RECORD = Path(__file__).resolve().parent / "FALSE_ALARMS.jsonl"


# Heavy (``make test-heavy``, not in .ci/run): 100 seeds of every row (family, level) of
# ``tests.false_alarms.LEVELS``; the PyMC references and the mixtures' SBC take minutes per seed,
# hours in all. One seed of every level runs in the slow tier (tests/test_validation.py) and the
# exact checks themselves in the default run. The counts measured so far, and the command, are
# in tests/FALSE_ALARMS.md.
@pytest.mark.slow
@pytest.mark.heavy
@pytest.mark.parametrize(("family", "level"), ROWS)
def test_every_level_passes_at_least_95_of_100_seeds(family, level):
    n_seeds = int(os.environ.get("LATENTZOO_FALSE_ALARM_SEEDS", "100"))
    failures = [seed for seed in range(n_seeds) if not level_passes(family, level, seed)[0]]
    assert len(failures) <= n_seeds - math.ceil(0.95 * n_seeds), failures


def test_the_record_holds_every_row_at_100_seeds_within_the_heavy_tests_criterion():
    """``tests/FALSE_ALARMS.jsonl``, the runs behind ``tests/FALSE_ALARMS.md``, holds seeds 0-99 of
    every row of ``ROWS`` with at most 5 failures (the last run of a seed counts), as the heavy
    test above demands: a level added to ``LEVELS`` fails here until its 100 seeds are measured."""
    by_row = runs_by_row(read_log(RECORD))
    missing = {
        f"{family}:{level}": 100 - len(set(range(100)) & set(by_row.get((family, level), {})))
        for family, level in ROWS
    }
    missing = {row: n for row, n in missing.items() if n}
    assert not missing, f"seeds of 0-99 missing from the record, by row: {missing}"
    failed = {row: sum(not run["passed"] for run in by_row[row].values()) for row in ROWS}
    assert max(failed.values()) <= 5, failed


def test_study_shares_cpu_resumes_from_its_log_and_summarises(tmp_path, monkeypatch):
    """The fair-share study on stand-in levels (no validation runs): the cheaper row runs more
    seeds, a second call with the same log repeats no seed, and the summary counts a failure and
    an inconclusive seed with their Clopper-Pearson bound."""
    from tests import false_alarms

    cost = {"exact": 0.01, "calibrated": 0.03}

    def fake(family, level, seed):
        end = time.process_time() + cost[level]
        while time.process_time() < end:
            pass
        if seed == 3:
            return False, ["chi-square"]
        return True, ["R-hat (inconclusive)"] if seed == 4 else []

    monkeypatch.setattr(false_alarms, "level_passes", fake)
    log = tmp_path / "log.jsonl"
    rows = [false_alarms.parse_row("dpm:exact"), false_alarms.parse_row("iomm:calibrated:2")]
    done = false_alarms.study(rows, 6, budget=0.15, log=log)
    assert done["dpm", "exact"]["runs"] > done["iomm", "calibrated"]["runs"] >= 1
    false_alarms.study(rows, 6, log=log)
    runs = false_alarms.read_log(log)
    seeds = [(r["family"], r["level"], r["seed"]) for r in runs]
    assert len(seeds) == len(set(seeds)) == 12
    assert {s for f, _, s in seeds if f == "iomm"} == set(range(2, 8))
    table = false_alarms.summary(runs)
    assert "| dpm | exact | 6 (0-5) | 1 | 1 | 58.2% |" in table
    assert "- iomm calibrated, seed 3: failed chi-square" in table
    with pytest.raises(ValueError, match="FAMILY:LEVEL"):
        false_alarms.parse_row("dpm")
    with pytest.raises(ValueError, match="has the levels"):
        false_alarms.parse_row("topic-tree:exact")


def test_study_refuses_a_library_from_another_tree(monkeypatch, tmp_path):
    """An export whose ``latentzoo.models`` resolves to another working tree (the editable
    install's mapping) is refused, naming that tree; this tree's own library passes."""
    import latentzoo.models
    from tests import false_alarms

    assert false_alarms.check_library_tree() in Path(latentzoo.models.__file__).resolve().parents
    monkeypatch.setattr(latentzoo.models, "__file__", str(tmp_path / "models" / "__init__.py"))
    with pytest.raises(RuntimeError, match=r"latentzoo.models is imported from .*ln -s"):
        false_alarms.study([false_alarms.parse_row("dpm:exact")], 1, log=tmp_path / "log.jsonl")
    assert not (tmp_path / "log.jsonl").exists()


@pytest.mark.slow
def test_texture_levels_fail_correct_code_at_their_nominal_rate():
    """Texture segmentation's exact level (deterministic: round-off tolerance) never fails, its
    Monte Carlo optimality level (nominal 1%) at most 4 of 100 seeds (5 or more: probability
    0.0034; measured at seeds 0-199: none of either). About 20 CPU seconds."""
    failed = {
        level: [seed for seed in range(100) if not level_passes("texture", level, seed)[0]]
        for level in ("exact", "optimality")
    }
    assert not failed["exact"] and len(failed["optimality"]) <= 4, failed


@pytest.mark.parametrize(
    "draws, ess, n_quantities, chains, runs", [(200, 100, 3, 2, 2000), (300, 200, 8, 4, 1000)]
)
def test_rhat_threshold_is_the_quantile_of_simulated_converged_runs(
    draws, ess, n_quantities, chains, runs
):
    """The closed form of the convergence threshold (:func:`rhat_threshold`, the default of every
    reference level, issue 25) against the max rank R-hat of simulated converged runs: the share of
    runs above its 99% threshold is binomial(runs, 0.01) when the form is right; the bounds leave
    out less than 1e-4 of it. The customary 1.01 fails most of these correct runs."""
    import numpy as np

    from latentzoo.inference.mcmc import rhat_threshold
    from tests.false_alarms import simulated_max_rhat

    maxima = simulated_max_rhat(draws, ess, n_quantities, runs, chains, seed=ess)
    exceed = int((maxima > rhat_threshold(ess, draws, chains, n_quantities, q=0.99)).sum())
    low, high = {2000: (5, 40), 1000: (1, 25)}[runs]
    assert low <= exceed <= high, (exceed, runs)
    assert np.mean(maxima > 1.01) > 0.5


@pytest.mark.slow
def test_hacm_reference_rhat_threshold_is_the_99th_percentile_at_its_measured_ess():
    """The HACM reference level's convergence threshold (issue 25): the max R-hat over 19
    quantities (it compares 17) at the slowest measured ESS (950) stays below it in 99% of
    converged runs."""
    from latentzoo.inference.recipes import HACM_RHAT_MAX
    from tests.false_alarms import max_rhat_quantile

    quantile, exceed = max_rhat_quantile(draws=2000, ess=950, n_quantities=19, n_runs=400)
    assert quantile <= HACM_RHAT_MAX
    assert exceed > 0.1  # the former 1.01 was a false alarm in a good share of correct runs


@pytest.mark.slow
@pytest.mark.parametrize("family", ["pairwise", "central"])
def test_heat_bath_exact_checks_fail_correct_code_at_their_nominal_rate(family):
    """The six heat-bath checks of the pairwise and central exact levels (issue 25) at 50 seeds:
    nominal 1e-3 each, so 3 or more failures of 300 has probability 0.004 (measured at seeds
    0-99: 2 of 600 for pairwise, 1 of 600 for central)."""
    import numpy as np

    from latentzoo.inference.pairwise import central_heat_bath, pairwise_heat_bath
    from latentzoo.inference.recipes import HEAT_BATH_FACTORS, _heat_bath_exact
    from latentzoo.models import CentralClustering, PairwiseClustering
    from latentzoo.models.pairwise import critical_temperature

    model, heat_bath = {
        "pairwise": (PairwiseClustering(2), pairwise_heat_bath),
        "central": (CentralClustering(2), central_heat_bath),
    }[family]
    failed = 0
    for seed in range(50):
        rng = np.random.default_rng(seed)
        for _ in range(3):
            data, _ = model.simulate(rng, n_items=6)
            T = critical_temperature(data)
            for factor in HEAT_BATH_FACTORS:
                check = _heat_bath_exact(model, heat_bath, data, factor * T, "heat bath")
                failed += not check.passed
    assert failed <= 2


@pytest.mark.slow
@pytest.mark.parametrize("family", ["pairwise", "central"])
def test_optimality_fails_correct_code_at_its_nominal_rate(family):
    """The optimality levels' Monte Carlo tests (nominal 1%; when their thresholds were set, 0 of
    200 seeds failed for central, 1 of 200 for pairwise) at 30 seeds: 3 or more
    failures have probability 0.003."""
    import latentzoo
    from latentzoo.models import CentralClustering, PairwiseClustering

    model = {"pairwise": PairwiseClustering(2), "central": CentralClustering(2)}[family]
    failures = [
        seed
        for seed in range(30)
        if not latentzoo.validate(
            model, quick=True, levels=["optimality"], random_state=seed
        ).passed
    ]
    assert len(failures) <= 2, failures


@pytest.mark.slow
def test_two_sided_mean_field_optimality_never_fails_correct_code():
    """The two-sided optimality level's residual tolerance (0.05 counts) is 750 times the largest
    residual of a converged correct fit (6.7e-5 over 90 instances): only an EM stopped before
    convergence could fail it. 20 seeds x 6 instances, about 20 CPU seconds."""
    import latentzoo
    from latentzoo.models import TwoSidedClustering

    failures = [
        seed
        for seed in range(20)
        if not latentzoo.validate(
            TwoSidedClustering(2, 2), quick=True, levels=["optimality"], random_state=seed
        ).passed
    ]
    assert not failures, failures
