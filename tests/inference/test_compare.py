"""Tests of the comparison layer: MCSE agreement, the reference/mode-matched verdicts, the exact
enumeration test and simulation-based calibration, each checked for its error rate and its power."""

import math

import arviz as az
import matplotlib.axes
import numpy as np
import pytest
from scipy import stats

from latentzoo.data import load
from latentzoo.inference.compare import (
    Check,
    Comparison,
    agreement,
    align_labels,
    compare,
    enumerate_assignments,
    exact_test,
    summarize,
)
from latentzoo.models import AspectModel

SEEDS = [0, 1, 2]


def iid_posterior(rng, chains=4, draws=1000, shift=0.0, n_dyads=8, scale=1.0):
    """A posterior of iid normal 'invariants' (loglik, p_dyad); ``shift`` moves p_dyad[2] only."""
    p_dyad = rng.normal(size=(chains, draws, n_dyads)) * scale
    p_dyad[:, :, 2] += shift
    return az.from_dict(
        posterior={"loglik": rng.normal(size=(chains, draws)), "p_dyad": p_dyad},
        dims={"p_dyad": ["dyad"]},
    )


def combined_se(chains, draws):
    return math.sqrt(2.0 / (chains * draws))  # unit variance, iid draws on both sides


# ----------------------------------------------------------------------------- agreement
@pytest.mark.parametrize("seed", SEEDS)
def test_agreement_passes_for_draws_of_one_distribution(seed):
    rng = np.random.default_rng(seed)
    a, b = iid_posterior(rng), iid_posterior(rng)
    table = agreement(a, b, ["loglik", "p_dyad"], alpha=1e-4)
    assert len(table) == 9
    assert table["quantity"].tolist() == ["loglik"] + [f"p_dyad[{i}]" for i in range(8)]
    assert table["agree"].all(), table
    # Bonferroni-corrected threshold over the 9 quantities
    assert table["threshold"].iloc[0] == pytest.approx(stats.norm.ppf(1 - 1e-4 / 18))
    np.testing.assert_allclose(table["combined_mcse"], combined_se(4, 1000), rtol=0.2)


@pytest.mark.parametrize("seed", SEEDS)
def test_agreement_fails_when_means_differ_by_ten_combined_mcse(seed):
    rng = np.random.default_rng(seed)
    a = iid_posterior(rng, shift=10 * combined_se(4, 1000))
    b = iid_posterior(rng)
    table = agreement(a, b, ["loglik", "p_dyad"], alpha=1e-4).set_index("quantity")
    assert not table.loc["p_dyad[2]", "agree"]
    assert abs(table.loc["p_dyad[2]", "z"] - 10) < 5  # z ~ N(10, 1) up to the MCSE estimate
    assert table.drop(index="p_dyad[2]")["agree"].all()


def test_agreement_rejects_at_its_nominal_rate():
    """Under the null the per-quantity rejection rate is alpha: 200 replications at alpha = 0.2
    give Binomial(200, 0.2) = 40 +- 5.7 rejections; accept 5 sigma either side."""
    rng = np.random.default_rng(12345)
    rejections = 0
    for _ in range(200):
        a = az.from_dict(posterior={"loglik": rng.normal(size=(4, 250))})
        b = az.from_dict(posterior={"loglik": rng.normal(size=(4, 250))})
        rejections += not agreement(a, b, ["loglik"], alpha=0.2)["agree"].iloc[0]
    sd = math.sqrt(200 * 0.2 * 0.8)
    assert abs(rejections - 40) < 5 * sd, rejections


def test_summarize_reports_mcse_and_ess():
    rng = np.random.default_rng(0)
    table = summarize(iid_posterior(rng), ["loglik", "p_dyad"], "demo")
    assert table.index.names == ["method", "quantity"]
    row = table.loc[("demo", "loglik")]
    assert abs(row["mean"]) < 5 / math.sqrt(4000)
    assert row["sd"] == pytest.approx(1.0, abs=5 * math.sqrt(0.5 / 4000))
    assert row["mcse"] == pytest.approx(1 / math.sqrt(4000), rel=0.2)
    assert row["ess_bulk"] > 2000 and row["r_hat"] < 1.01


# ----------------------------------------------------------------------------- compare
@pytest.fixture
def toy():
    return AspectModel(2), load("toy")


def test_compare_reference_level_passes_for_one_distribution(toy):
    model, data = toy
    rng = np.random.default_rng(0)
    fast, reference = iid_posterior(rng), iid_posterior(rng)
    result = compare(model, data, fast, reference, alpha=1e-4, names=("gibbs", "pymc"))
    assert [c.name for c in result.checks] == [
        "pymc converged",
        "gibbs converged",
        "gibbs agrees with pymc",
    ]
    assert result.passed, result.verdict()
    assert result.levels_reached == ["reference"]
    assert result.verdict().startswith("PASSED")
    assert set(result.summary.index.get_level_values("method")) == {"gibbs", "pymc"}
    assert len(result.agreement) == 9


def test_compare_reference_level_fails_on_disagreement_and_too_few_chains(toy):
    model, data = toy
    rng = np.random.default_rng(1)
    fast = iid_posterior(rng, shift=10 * combined_se(4, 1000))
    reference = iid_posterior(rng, chains=2, draws=2000)
    result = compare(model, data, fast, reference, alpha=1e-4)
    outcome = {c.name: c.passed for c in result.checks}
    assert outcome == {
        "reference converged": False,  # only two chains
        "fast converged": True,
        "fast agrees with reference": False,
    }
    assert not result.passed and result.levels_reached == []
    assert "FAILED" in result.verdict() and "fast agrees with reference" in result.verdict()


def test_converged_check_threshold_follows_the_ess_and_fails_chains_stuck_apart():
    """The default convergence threshold (issue 25) is the 99.5% quantile of converged chains at
    the side's ESS: looser than 1.01 for correlated chains, tighter for independent ones, and never
    above RHAT_DISAGREE, so that chains stuck apart (whose ESS is tiny) still fail."""
    import arviz as az

    from latentzoo.inference.compare import converged_check
    from latentzoo.inference.mcmc import RHAT_DISAGREE
    from tests.false_alarms import ar1_chains

    def check(values):
        idata = az.from_dict(posterior={"loglik": values})
        return converged_check("demo", summarize(idata, ["loglik"], "demo").loc["demo"], idata)

    rng = np.random.default_rng(3)
    correlated = check(ar1_chains(rng, 1, 1, 4, 1000, ess=150)[..., 0, 0])
    independent = check(rng.standard_normal((4, 1000)))
    stuck = check(rng.standard_normal((4, 1000)) * 0.3 + np.arange(4)[:, None])
    assert 1.01 < correlated.numbers["threshold"] <= RHAT_DISAGREE
    assert independent.numbers["threshold"] < 1.01
    assert stuck.numbers["threshold"] <= RHAT_DISAGREE and not stuck.passed
    assert "quantile of converged chains at min bulk ESS" in correlated.detail


def _shifted(idata, chains, amount):
    """``idata`` with ``amount`` added to every invariant of the given chains."""
    posterior = {name: idata.posterior[name].values.copy() for name in ("loglik", "p_dyad")}
    for values in posterior.values():
        values[list(chains)] += amount
    return az.from_dict(posterior=posterior, dims={"p_dyad": ["dyad"]})


def test_compare_mode_matched_level(toy):
    model, data = toy
    rng = np.random.default_rng(2)
    modes = [0, 0, 1, 1]
    fast, reference, null = (iid_posterior(rng, chains=4) for _ in range(3))
    options = dict(level="mode-matched", alpha=1e-4, modes=modes, null=null)
    result = compare(model, data, fast, reference, **options)
    assert result.levels_reached == ["mode-matched"], result.verdict()
    assert sorted(result.agreement["mode"].unique()) == [0, 1]
    assert len(result.mode_spread) == 6  # 2 modes x (fast, reference, null)
    # the fast method's chains of one mode elsewhere: a failure, not an inconclusive verdict
    moved = _shifted(fast, [2, 3], 10 * combined_se(2, 1000))
    result = compare(model, data, moved, reference, **options)
    assert not result.passed and not result.inconclusive
    # one fast chain away from its sibling: its within-mode R-hat fails it
    split = _shifted(fast, [1], 1.0)
    assert not compare(model, data, split, reference, **options).passed
    with pytest.raises(ValueError, match="level"):
        compare(model, data, fast, reference, level="exact")


def test_mode_matched_level_is_inconclusive_when_the_reference_disagrees_with_itself(toy):
    """A reference whose chains from one start disagree defines no local posterior: whatever the
    fast side does, the verdict is inconclusive (not a pass, and no level reached)."""
    model, data = toy
    rng = np.random.default_rng(5)
    modes = [0, 0, 1, 1]
    fast, reference, null = (iid_posterior(rng, chains=4) for _ in range(3))
    drifting = _shifted(reference, [1], 1.0)
    result = compare(
        model, data, fast, drifting, level="mode-matched", alpha=1e-4, modes=modes, null=null
    )
    assert result.passed and result.levels_reached == []
    assert [c.outcome for c in result.checks] == ["inconclusive"]
    assert "inconclusive" in result.verdict() and "| inconclusive |" in result.to_markdown()


def test_reference_level_is_calibrated_by_the_reference_halves(toy):
    """The agreement z are divided by the disagreement of the reference's two halves (at least 1)."""
    model, data = toy
    rng = np.random.default_rng(6)
    fast, reference = iid_posterior(rng), iid_posterior(rng)
    table = compare(model, data, fast, reference, alpha=1e-4).agreement
    assert {"z_null", "z_calibrated"} <= set(table)
    assert (table["z_calibrated"] <= table["z"] + 1e-12).all()


def test_comparison_report_and_plot(toy):
    model, data = toy
    rng = np.random.default_rng(3)
    result = compare(model, data, iid_posterior(rng), iid_posterior(rng), alpha=1e-4)
    text = result.to_markdown()
    assert "Verdict" in text and result.verdict() in text
    assert "| reference | fast agrees with reference | pass |" in text
    assert "Agreement of posterior means" in text
    ax = result.plot()
    assert isinstance(ax, matplotlib.axes.Axes)
    assert len(ax.get_yticks()) == 8  # one row per dyad
    with pytest.raises(ValueError, match="nothing to plot"):
        Comparison().plot()


def test_levels_reached_and_extend():
    c = Comparison(checks=[Check("exact", "a", True, ""), Check("reference", "b", False, "")])
    assert c.levels_reached == ["exact"] and not c.passed
    c.extend(Comparison(checks=[Check("calibrated", "c", True, "")]))
    assert c.levels_reached == ["exact", "calibrated"]
    c.extend(Comparison(checks=[Check("exact", "d", False, "")]))
    assert c.levels_reached == ["calibrated"]
    assert Comparison().levels_reached == [] and Comparison().passed


# ----------------------------------------------------------------------------- exact test
def test_enumerate_assignments_order_matches_exact_test_indexing():
    states = enumerate_assignments(3, 3)
    assert states.shape == (27, 3)
    assert states[:4].tolist() == [[0, 0, 0], [0, 0, 1], [0, 0, 2], [0, 1, 0]]
    assert len({tuple(s) for s in states}) == 27
    with pytest.raises(ValueError, match="too many"):
        enumerate_assignments(30, 2)
    # exact_test indexes a state by its base-K digits: 99% of the mass on state 11 ([1, 0, 2],
    # not a palindrome, so reading the digits backwards would put the draws on state 19)
    log_probs = np.full(27, np.log(0.01 / 26))
    log_probs[11] = np.log(0.99)
    check = exact_test(log_probs, np.repeat(states[11:12], 50, axis=0), n_labels=3)
    assert check.passed, check.detail
    assert not exact_test(log_probs, np.repeat(states[19:20], 50, axis=0), n_labels=3).passed


def test_exact_test_handles_states_of_zero_probability():
    states = enumerate_assignments(2, 2)
    log_probs = np.array([0.0, np.log(3.0), -np.inf, -np.inf])  # P = 1/4, 3/4, 0, 0
    rng = np.random.default_rng(0)
    draws = states[rng.choice(2, size=2000, p=[0.25, 0.75])]
    check = exact_test(log_probs, draws, n_labels=2)
    assert check.passed, check.detail


@pytest.mark.parametrize("seed", SEEDS)
def test_exact_test_accepts_exact_draws_and_rejects_perturbed_ones(seed):
    rng = np.random.default_rng(seed)
    states = enumerate_assignments(4, 2)
    log_probs = rng.normal(size=16)
    probs = np.exp(log_probs - log_probs.max())
    probs /= probs.sum()
    good = states[rng.choice(16, size=20_000, p=probs)]
    assert exact_test(log_probs, good, alpha=1e-5).passed
    # tilt the distribution by 10% on half of the states
    tilted = probs * np.where(np.arange(16) % 2, 1.1, 0.9)
    bad = states[rng.choice(16, size=20_000, p=tilted / tilted.sum())]
    check = exact_test(log_probs, bad, alpha=1e-5)
    assert not check.passed


def test_exact_test_rejects_at_its_nominal_rate():
    """Binomial(200, 0.1) = 20 +- 4.2 rejections at alpha = 0.1 under the null; 5 sigma band."""
    rng = np.random.default_rng(7)
    states = enumerate_assignments(3, 2)
    log_probs = rng.normal(size=8)
    probs = np.exp(log_probs) / np.exp(log_probs).sum()
    # 2000 null samples put 200 in the rejection region: plenty at this level, and fast.
    rejections = sum(
        not exact_test(
            log_probs, states[rng.choice(8, size=500, p=probs)], alpha=0.1, null_draws=2000
        ).passed
        for _ in range(200)
    )
    assert abs(rejections - 20) < 5 * math.sqrt(200 * 0.1 * 0.9), rejections


def _exact_draws(seed, n_draws=2000):
    rng = np.random.default_rng(seed)
    states = enumerate_assignments(3, 2)
    log_probs = rng.normal(size=8)
    probs = np.exp(log_probs - log_probs.max())
    return log_probs, states[rng.choice(8, size=n_draws, p=probs / probs.sum())]


def test_exact_test_takes_a_monte_carlo_p_value_that_repeats():
    """The exact levels' state-frequency test is a Monte Carlo chi-square (issue 25: the
    asymptotic tail is anti-conservative where cells expect 5-10 draws); with the same
    random_state, or none (seeded from the inputs), verdict and p-value repeat."""
    log_probs, draws = _exact_draws(3)
    check = exact_test(log_probs, draws, n_labels=2, random_state=5)
    assert "Monte Carlo" in check.detail and "of at most 20000 null samples" in check.detail
    again = exact_test(log_probs, draws, n_labels=2, random_state=5)
    assert (again.passed, again.numbers["p_value"]) == (check.passed, check.numbers["p_value"])
    own = [exact_test(log_probs, draws, n_labels=2).numbers["p_value"] for _ in range(2)]
    assert own[0] == own[1]
    assert "Monte Carlo" not in exact_test(log_probs, draws, null_draws=0).detail


def test_sequential_p_value_gives_the_full_tests_verdicts_at_a_fraction_of_its_samples():
    """Besag & Clifford's sequential p-value stops after 100 null statistics reach T: 100 / L
    has a relative standard error of about 10% (8 cells expecting 50-600 draws each, where the
    asymptotic tail is accurate: within 4 of them), and the full test's verdict is kept."""
    from latentzoo.inference.enumeration import frequency_test, state_index

    states = enumerate_assignments(3, 2)
    for seed in range(3):
        log_probs, draws = _exact_draws(seed)
        check = exact_test(log_probs, draws, n_labels=2, random_state=seed)
        drawn = int(check.detail.split("Monte Carlo, ")[1].split(" of")[0])
        index = state_index(states, draws)
        full = frequency_test(log_probs, index, null_draws=20_000, random_state=seed)
        p_full = full.numbers["p_value"]
        assert check.passed == full.passed
        assert drawn < 20_000 or p_full < 0.005
        assert abs(check.numbers["p_value"] - p_full) < 0.4 * p_full + 4 / 20_000
        p_asym = exact_test(log_probs, draws, n_labels=2, null_draws=0).numbers["p_value"]
        assert abs(check.numbers["p_value"] - p_asym) < 0.4 * p_asym + 1e-3


def test_exact_test_monte_carlo_rejects_a_shifted_sampler_and_validates_null_draws():
    log_probs, draws = _exact_draws(4)
    shifted = draws.copy()
    shifted[:300] = 0  # 15% of the draws moved onto one state
    check = exact_test(log_probs, shifted, random_state=1)
    # No null statistic reaches T: all 20000 are drawn, p = 1 / 20001.
    assert not check.passed and check.numbers["p_value"] == pytest.approx(1 / 20_001)
    assert "Monte Carlo, 20000 of at most 20000" in check.detail
    with pytest.raises(ValueError, match="null_draws"):
        exact_test(log_probs, draws, null_draws=-1)
    with pytest.raises(ValueError, match="null_draws"):
        exact_test(log_probs, draws, null_draws=2.5)


def test_null_draws_reach_the_level_and_the_asymptotic_tail_below_1e4():
    from latentzoo.inference.enumeration import NULL_DRAWS, null_draws_for

    assert null_draws_for(1e-3) == NULL_DRAWS == 20_000
    # Bonferroni levels get more samples, so that 20 still fall in the rejection region.
    assert null_draws_for(1e-3 / 6) == 120_000
    assert null_draws_for(1e-5) == 0
    log_probs, draws = _exact_draws(5, n_draws=400)
    assert "Monte Carlo" not in exact_test(log_probs, draws, alpha=1e-5).detail
    with pytest.raises(ValueError, match="alpha"):
        null_draws_for(0.0)


# ----------------------------------------------------------------------------- label switching
@pytest.mark.parametrize("seed", SEEDS)
def test_align_labels_undoes_per_chain_permutations(seed):
    rng = np.random.default_rng(seed)
    k, n_docs, n_words, chains, draws = 3, 4, 6, 4, 50
    phi = rng.dirichlet(np.full(n_words, 0.3), k)
    theta = rng.dirichlet(np.ones(k), n_docs)
    perms = [rng.permutation(k) for _ in range(chains)]
    noise = 0.01
    phi_draws = np.stack([phi[p] + noise * rng.normal(size=(draws, k, n_words)) for p in perms])
    theta_draws = np.stack([np.broadcast_to(theta[:, p], (draws, n_docs, k)) for p in perms])
    idata = az.from_dict(
        posterior={
            "phi": phi_draws,
            "theta": theta_draws,
            "loglik": rng.normal(size=(chains, draws)),
        },
        dims={"phi": ["topic", "word"], "theta": ["doc", "topic"]},
    )
    aligned, found = align_labels(idata, phi)
    for c, p in enumerate(perms):
        assert np.array_equal(p[found[c]], np.arange(k))  # chain label found[c][k] held topic k
    np.testing.assert_allclose(
        aligned.posterior["phi"].mean("draw"),
        np.broadcast_to(phi, (chains, k, n_words)),
        atol=5 * noise / np.sqrt(draws),
    )
    np.testing.assert_allclose(
        aligned.posterior["theta"].values, np.broadcast_to(theta, (chains, draws, n_docs, k))
    )
    assert aligned.posterior["loglik"].equals(idata.posterior["loglik"])
    assert aligned.posterior["phi"].dims == idata.posterior["phi"].dims
