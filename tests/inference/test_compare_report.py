"""The comparison as an analyst reads it: divergences, degenerate quantities, within-mode
diagnostics, definitions, credible ESS/s ratios and figure titles (issue 10)."""

import re

import arviz as az
import matplotlib
import numpy as np
import pandas as pd
import pytest
from scipy import stats

from latentzoo.inference.calibration import sbc
from latentzoo.inference.compare import (
    DEFINITIONS,
    ESS_CREDIBLE,
    Comparison,
    agreement,
    compare,
    divergences,
    mode_matched_checks,
    point_in_posterior,
    quantity_definitions,
    summarize,
)
from latentzoo.models import AspectModel, OneSidedClustering, ProductSpaceMixture
from latentzoo.models.invariants import default_dyads

matplotlib.use("Agg")

SEEDS = [0, 1, 2]


def posterior(rng, chains=4, draws=500, n_free=4, n_pinned=0, shift=0.0, diverging=None):
    """iid normal ``loglik`` and ``p_dyad`` components, plus ``n_pinned`` co-assignment
    probabilities pinned at 1 up to rounding (sd about 1e-17, as on real data)."""
    p_dyad = rng.normal(size=(chains, draws, n_free))
    p_dyad[:, :, 0] += shift
    pinned = 1.0 - np.abs(rng.normal(size=(chains, draws, n_pinned))) * 1e-17
    groups = {
        "posterior": {
            "loglik": rng.normal(size=(chains, draws)),
            "p_dyad": p_dyad,
            "coassign": pinned,
        },
        "dims": {"p_dyad": ["dyad"], "coassign": ["pair"]},
    }
    if diverging is not None:
        groups["sample_stats"] = {"diverging": diverging}
    return az.from_dict(**groups)


NAMES = ["loglik", "p_dyad", "coassign"]


# --------------------------------------------------------------------------------- divergences
def test_summarize_counts_divergences_and_marks_samplers_without_them():
    rng = np.random.default_rng(0)
    flags = np.zeros((4, 500), dtype=bool)
    flags[1, [3, 9, 400]] = True
    nuts = posterior(rng, diverging=flags)
    gibbs = posterior(rng)
    table = pd.concat([summarize(nuts, NAMES, "pymc"), summarize(gibbs, NAMES, "gibbs")])
    assert {"mcse", "ess_bulk", "r_hat", "divergences"} <= set(table.columns)
    assert (table.loc["pymc", "divergences"] == 3).all()
    assert table.loc["gibbs", "divergences"].isna().all()
    assert divergences(gibbs) != divergences(gibbs)  # NaN

    text = Comparison(summary=table).to_markdown()
    header = next(line for line in text.splitlines() if line.startswith("| method"))
    for column in ("mcse", "ess_bulk", "r_hat", "divergences"):
        assert column in header
    gibbs_rows = [line for line in text.splitlines() if line.startswith("| gibbs |")]
    assert gibbs_rows and all(line.rstrip().endswith("| - |") for line in gibbs_rows)
    warnings = [line for line in text.splitlines() if line.startswith("**Warning**")]
    assert len(warnings) == 1 and "pymc" in warnings[0] and "3 divergent" in warnings[0]


def test_no_divergence_warning_without_divergences():
    rng = np.random.default_rng(1)
    run = posterior(rng, diverging=np.zeros((4, 500), dtype=bool))
    text = Comparison(summary=summarize(run, NAMES, "pymc")).to_markdown()
    assert "**Warning**" not in text


# ------------------------------------------------------------------------------ degenerate
@pytest.mark.parametrize("seed", SEEDS)
def test_degenerate_quantities_do_not_raise_the_bonferroni_threshold(seed):
    rng = np.random.default_rng(seed)
    alpha = 1e-3
    few = agreement(posterior(rng), posterior(rng), NAMES, alpha)
    many = agreement(posterior(rng, n_pinned=60), posterior(rng, n_pinned=60), NAMES, alpha)
    n_tested = 1 + 4  # loglik and the four free p_dyad
    expected = stats.norm.ppf(1 - alpha / (2 * n_tested))
    # Before: the 60 pinned co-assignments counted, the threshold grew to about 4.3.
    assert many["threshold"].iloc[0] == pytest.approx(expected)
    assert many["threshold"].iloc[0] == pytest.approx(few["threshold"].iloc[0])
    assert many["degenerate"].sum() == 60
    assert many.loc[many["degenerate"], "z"].isna().all()
    assert many["agree"].all()


@pytest.mark.parametrize("seed", SEEDS)
def test_a_real_disagreement_among_non_degenerate_quantities_still_fails(seed):
    rng = np.random.default_rng(seed)
    se = np.sqrt(2.0 / 2000)
    fast = posterior(rng, n_pinned=60, shift=6 * se)
    table = agreement(fast, posterior(rng, n_pinned=60), NAMES, 1e-3)
    # 6 combined MCSEs: below the threshold of 66 quantities (4.33 + noise) would often pass,
    # above that of the 5 tested ones (3.9) it fails.
    assert not table.loc[table["quantity"] == "p_dyad[0]", "agree"].item()
    assert table.loc[table["quantity"] != "p_dyad[0]", "agree"].all()


def test_constant_sides_at_different_values_are_not_degenerate():
    rng = np.random.default_rng(0)
    a, b = posterior(rng, n_pinned=2), posterior(rng, n_pinned=2)
    b.posterior["coassign"][...] = 0.0
    table = agreement(a, b, NAMES)
    assert not table["degenerate"].any()
    assert not table.loc[table["quantity"].str.startswith("coassign"), "agree"].any()


def test_reference_and_mode_matched_checks_exclude_degenerate_quantities():
    rng = np.random.default_rng(3)
    model = AspectModel(2)
    fast, ref = posterior(rng, n_pinned=40), posterior(rng, n_pinned=40)
    result = compare(model, None, fast, ref, var_names=NAMES, names=("gibbs", "pymc"))
    agree = next(c for c in result.checks if c.name == "gibbs agrees with pymc")
    assert "over 5 quantities (40 degenerate excluded)" in agree.detail
    assert result.agreement["threshold"].iloc[0] == pytest.approx(stats.norm.ppf(1 - 1e-3 / 10))
    text = result.to_markdown()
    line = next(x for x in text.splitlines() if x.startswith("degenerate: excluded"))
    assert "40 of 45" in line and "coassign[0] = 1" in line and "sd" in line
    assert "| coassign[0] |" not in text  # neither in the agreement nor the summary table

    modes = np.repeat([0, 1], 2)
    null = posterior(rng, n_pinned=40)
    mm = Comparison()
    mode_matched_checks(mm, fast, ref, NAMES, 1e-3, ("gibbs", "pymc"), modes, null)
    assert mm.agreement["threshold"].iloc[0] == pytest.approx(
        stats.norm.ppf(1 - 1e-3 / (2 * 2 * 5))
    )
    assert "over 10 quantities (80 degenerate excluded)" in mm.checks[0].detail


def test_point_in_posterior_excludes_a_posterior_pinned_at_the_estimate():
    rng = np.random.default_rng(4)

    class Pinned:
        invariant_names = ("loglik", "p_dyad", "coassign")
        p_dyad_formula = "0 at every draw"  # a model with p_dyad says what it is

        def invariants(self, params, data):
            return {"loglik": 0.0, "p_dyad": np.zeros(4), "coassign": np.ones(30)}

    reference = posterior(rng, n_pinned=30)
    result = point_in_posterior(Pinned(), None, {}, reference)
    table = result.agreement
    assert table["degenerate"].sum() == 30
    assert table["threshold"].iloc[0] == pytest.approx(stats.norm.ppf(1 - 1e-3 / 10))


# ------------------------------------------------------------------------- mode-matched view
def two_modes(rng, gap=20.0):
    """4 chains, the last two in a mode ``gap`` sds away: whole-run R-hat far above 1."""
    idata = posterior(rng)
    idata.posterior["loglik"][2:] += gap
    idata.posterior["p_dyad"][2:] += gap
    return idata


def test_mode_matched_summary_shows_within_mode_diagnostics_and_explains_them():
    rng = np.random.default_rng(5)
    fast, ref, null = two_modes(rng), two_modes(rng), two_modes(rng)
    modes = np.repeat([0, 1], 2)
    assert summarize(ref, NAMES[:2], "pymc")["r_hat"].max() > 1.5  # across modes
    result = compare(
        AspectModel(2), None, fast, ref, level="mode-matched", names=("gibbs", "pymc"),
        modes=modes, null=null,
    )  # fmt: skip
    assert result.summary["r_hat"].max() < 1.05
    assert result.summary["ess_bulk"].min() > 200
    # ESS/s and its ratio rate the within-mode ESS, not the pooled one (about 3).
    assert min(result.ess.values()) > 200
    report = Comparison().extend(result, "mode-matched")
    text = report.to_markdown()
    section = text.split("## Posterior summaries")[1].split("## Spread")[0]
    assert "deliberately started in different modes" in section
    assert "within-mode" in section
    rows = [line.strip("|").split("|") for line in section.splitlines() if line.startswith("|")]
    column = [c.strip() for c in rows[0]].index("r_hat")
    rhats = [float(row[column]) for row in rows[2:]]
    assert len(rhats) == 2 * 5 and max(rhats) < 1.05  # not the 1.5+ of all chains together
    spread = text.split("## Spread of modes")[1].split("## Definitions")[0]
    assert "max_rhat" in spread and "divergences" in spread and "loglik mcse" in spread


# ------------------------------------------------------------------------------ definitions
def test_definitions_cover_every_quantity_and_column_shown():
    rng = np.random.default_rng(6)
    fast, ref = posterior(rng, n_pinned=2), posterior(rng, n_pinned=2)
    ref.posterior.attrs["sampling_time"] = 2.0
    fast.posterior.attrs["sampling_time"] = 1.0
    result = compare(AspectModel(2), None, fast, ref, var_names=NAMES)
    report = Comparison().extend(result, "reference")
    text = report.to_markdown()
    definitions = text.split("## Definitions")[1]
    defined = set(re.findall(r"^- \*\*(.+?)\*\*:", definitions, flags=re.M))
    expected = {"p_dyad", "loglik", "coassign", "z", "z_null", "z_calibrated", "threshold",
                "mcse", "ess_bulk", "r_hat", "divergences", "ESS/s", "degenerate"}  # fmt: skip
    assert expected <= defined, expected - defined
    for line in text.split("## Definitions")[0].splitlines():
        if line.startswith("| level | method | quantity") or line.startswith("| quantity"):
            columns = [c.strip() for c in line.strip("|").split("|")]
            assert set(columns) - {"level"} <= defined, set(columns) - defined
    assert "n_occupied" not in defined  # only what is shown
    assert "theta[i, k] phi[k, j]" in definitions  # the model's own formula


@pytest.mark.parametrize(
    "model", [AspectModel(2), OneSidedClustering(2)], ids=["aspect", "one_sided"]
)
def test_p_dyad_is_what_its_definition_says(model):
    data, truth = model.simulate(0, n_docs=6, n_words=8, doc_length=20)
    dyads = default_dyads(data)
    values = model.invariants(truth, data)["p_dyad"]
    if isinstance(model, OneSidedClustering):  # sum_k <I_ik> q[k, j]
        resp = model.responsibilities(truth, data)
        expected = [resp[i] @ np.asarray(truth["q"])[:, j] for i, j in dyads]
    else:  # sum_k theta[i, k] phi[k, j]
        expected = [
            np.asarray(truth["theta"])[i] @ np.asarray(truth["phi"])[:, j] for i, j in dyads
        ]
    np.testing.assert_allclose(values, expected)
    # default_dyads: the 8 non-zero cells with the largest counts, as the definition says.
    counts = data.toarray()
    assert len(dyads) == 8 and (counts[dyads[:, 0], dyads[:, 1]] > 0).all()
    assert counts[dyads[:, 0], dyads[:, 1]].min() >= np.sort(counts.ravel())[-8]
    assert "8 non-zero cells" in DEFINITIONS["p_dyad"]
    assert type(model).__name__ in quantity_definitions(model)["p_dyad"]


def test_p_dyad_of_the_product_space_mixture_matches_its_definition():
    model = ProductSpaceMixture(2, 2)
    data, truth = model.simulate(0, n_docs=6, n_words=8, n_tokens=200)
    dyads = default_dyads(data)
    pi, p_row, q_col = (np.asarray(truth[k]) for k in ("pi", "p_row", "q_col"))
    w = p_row[:, dyads[:, 0]].T @ pi
    expected = (w * q_col[:, dyads[:, 1]].T).sum(1) / w.sum(1)
    np.testing.assert_allclose(model.invariants(truth, data)["p_dyad"], expected)
    assert "sum_b w_b q_col[b, j] / sum_b w_b" in quantity_definitions(model)["p_dyad"]


# ---------------------------------------------------------------------------------- ESS/s
def test_ess_ratio_only_where_both_ess_are_credible():
    report = Comparison(
        ess_per_second={"gibbs (reference)": 900.0, "pymc (reference)": 30.0,
                        "gibbs (mode-matched)": 800.0, "pymc (mode-matched)": 0.1},
        ess={"gibbs (reference)": 4000.0, "pymc (reference)": 1200.0,
             "gibbs (mode-matched)": 600.0, "pymc (mode-matched)": 2.9},
    )  # fmt: skip
    text = report.to_markdown()
    assert "ESS/s ratio gibbs / pymc (reference): 30" in text
    # Before: "ESS/s ratio ... (mode-matched): 8e+03" from a pooled ESS of 2.9.
    line = next(x for x in text.splitlines() if "(mode-matched)" in x and "ratio" in x)
    assert "not shown" in line and f"below {ESS_CREDIBLE:.0f}" in line and "2.9" in line
    assert "| pymc (mode-matched) | 2.9 | 0.1 |" in text


def test_ess_ratio_pairs_methods_of_one_level_only():
    # A level with one method (a point estimator inside the PyMC posterior) pairs with nothing.
    report = Comparison(
        ess_per_second={"pymc (reference)": 30.0, "gibbs (mode-matched)": 800.0,
                        "pymc (mode-matched)": 20.0},
        ess={"pymc (reference)": 1200.0, "gibbs (mode-matched)": 600.0,
             "pymc (mode-matched)": 400.0},
    )  # fmt: skip
    ratios = [x for x in report.to_markdown().splitlines() if "ratio" in x]
    assert ratios == ["ESS/s ratio gibbs / pymc (mode-matched): 40"]


# --------------------------------------------------------------------------------- figures
def test_forest_plot_title_names_level_and_data():
    rng = np.random.default_rng(7)
    result = compare(AspectModel(2), None, posterior(rng), posterior(rng), names=("gibbs", "pymc"))
    result.problem = "synthetic: CoOccurrence(10 x 12, 600 observations) simulated; K=2; PyMC"
    report = Comparison().extend(result, "reference")
    ax = report.plot()
    title = ax.get_title()
    assert "reference level" in title and "CoOccurrence(10 x 12" in title
    assert ax.get_xlabel() and ax.get_ylabel()
    matplotlib.pyplot.close("all")


class _Normal:
    """mu ~ N(0, 1), y | mu ~ N(mu, 1); ``one`` is a statistic equal to 1 always."""

    param_names = ("mu",)

    def simulate(self, rng, n=4):
        mu = rng.normal()
        return rng.normal(mu, 1.0, size=n), {"mu": mu}

    def invariants(self, params, data):
        return {"mu": np.asarray(params["mu"]), "one": np.asarray(1.0)}


def _exact(y, rng, n_draws):
    sd = (1.0 / (len(y) + 1)) ** 0.5
    return {"mu": rng.normal(y.sum() * sd**2, sd, size=(1, n_draws)), "one": np.ones((1, n_draws))}


def test_sbc_excludes_a_degenerate_statistic_and_its_figure_names_the_level():
    result = sbc(_Normal(), _exact, 100, random_state=0)
    assert result.degenerate == ["one"]
    assert list(result.ranks.columns) == ["mu"]
    assert result.check.numbers["n_statistics"] == 1
    assert "degenerate excluded" in result.check.detail
    assert "degenerate: excluded" in result.to_markdown()
    result.problem = "synthetic: 100 data sets drawn from the prior (n=4); one exact draw"
    axes = result.plot()
    title = axes[0].figure._suptitle.get_text()
    assert title.startswith("calibrated level: synthetic: 100 data sets")
    assert axes[0].get_xlabel() == "fractional rank" and axes[0].get_ylabel()
    matplotlib.pyplot.close("all")
