"""Fast inference against its reference: agreement, exact enumeration, calibration.

Everything is compared through label-invariant quantities (the model's ``invariants``: the
log-likelihood, predictive probabilities of chosen dyads, ...), as TFP's inference_gym compares through
"sample transformations". Tolerances are Monte Carlo standard errors, never fixed numbers: two posterior
means agree when their difference is within ``z`` combined MCSEs, with ``z`` the Bonferroni-corrected
normal quantile for the number of quantities compared.

A :class:`Comparison` records which of the four validation levels (exact, reference, mode-matched, calibrated) were reached:
``exact`` (enumeration), ``reference`` (agreement with converged PyMC chains on synthetic data),
``mode-matched`` (real data, chains started at the fast solutions, spread of modes reported) and
``calibrated`` (simulation-based calibration).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import NamedTuple

import arviz as az
import numpy as np
import pandas as pd
from scipy import stats

from latentzoo.inference.calibration import SBCResult, sbc
from latentzoo.inference.checks import Check
from latentzoo.inference.enumeration import (
    frequency_test,
    label_vectors,
    null_draws_for,
    sequential_stop,
    state_index,
)

__all__ = [
    "Check",
    "Comparison",
    "CONVERGED_Q",
    "converged_check",
    "DEFINITIONS",
    "DEGENERATE_TOL",
    "ESS_CREDIBLE",
    "divergences",
    "is_degenerate",
    "quantity_definitions",
    "compare",
    "agreement",
    "summarize",
    "exact_test",
    "enumerate_assignments",
    "sbc",
    "SBCResult",
    "heldout_lppd",
    "align_labels",
    "point_in_posterior",
    "mode_matched_checks",
    "select_chains",
    "uncertainty_check",
    "beta_moments",
    "beta_marginal",
    "BetaMarginal",
    "moment_test",
    "pit_residuals",
]

LEVELS = ("exact", "density", "reference", "optimality", "mode-matched", "calibrated")
"""The standard validation levels, in the order they are run and reported."""


P_DYAD = (
    "`p_dyad[n]` = P(y_j | x_i) at one posterior draw, for the n-th tracked dyad (i, j): the 8 "
    "non-zero cells of the level's training counts with the largest counts (ties broken by row, "
    "then column; `latentzoo.models.invariants.default_dyads`), in that order. Its posterior mean "
    "is the posterior predictive probability that a new observation of row i falls in column j"
)
"""The definition of ``p_dyad`` common to the co-occurrence families (each adds its formula)."""
"""Model class name -> the formula of ``p_dyad`` at one draw."""

DEFINITIONS = {
    "loglik": (
        "total log-likelihood of the level's training data at one posterior draw, "
        "`model.log_likelihood(params, data).sum()` (two-sided model, draws of labels only: its "
        "conditional expectation given the labels); label-invariant"
    ),
    "p_dyad": P_DYAD + ".",
    "coassign": (
        "`coassign[n]`: at one posterior draw, the probability that the two objects (rows, or "
        "items) of the n-th tracked pair share a cluster, sum_k r_ak r_bk with r the membership "
        "probabilities given the draw's parameters, or 1[z_a = z_b] for a draw of hard labels; "
        "its posterior mean is P(z_a = z_b | data). Pairs: every pair a < b up to 20 objects, "
        "otherwise all pairs among the 6 with the largest totals"
    ),
    "coassign_rows": "`coassign` for pairs of rows (row clusters) of the two-sided model",
    "coassign_cols": "`coassign` for pairs of columns (column clusters) of the two-sided model",
    "n_occupied": (
        "number of occupied clusters at one draw (soft memberships: the expected number, "
        "sum_k [1 - prod_i (1 - r_ik)])"
    ),
    "level": "the validation level (its data and runs: the table 'validated on' above)",
    "method": "the sampler or estimator: `pymc` is the PyMC reference (NUTS, or discrete steps)",
    "mode": "index of the start (a distinct EM solution or settled partition) the chains began at",
    "chains": "chains of one side started at that mode",
    "mean": "posterior mean over all draws of all chains",
    "sd": "posterior standard deviation over all draws of all chains",
    "mcse": (
        "Monte Carlo standard error of the posterior mean (ArviZ `mcse(method='mean')`, based on "
        "the bulk ESS; sd / sqrt(draws) where ArviZ gives NaN for constant draws)"
    ),
    "ess_bulk": (
        "bulk effective sample size (rank-normalised, Vehtari et al. 2021) of the draws of all "
        "chains: how many independent draws the chains are worth for the mean"
    ),
    "r_hat": (
        "rank-normalised split R-hat (Vehtari et al. 2021) over the chains: 1 when they agree, "
        "above 1.01 when they do not; 1 for a quantity constant in every chain"
    ),
    "max_rhat": "largest within-mode R-hat over the invariants",
    "min_ess_bulk": "smallest within-mode bulk ESS over the invariants",
    "divergences": (
        "divergent transitions of NUTS over all chains after tuning (`sample_stats.diverging`); "
        "'-' for samplers without the notion (Gibbs, discrete Metropolis steps)"
    ),
    "quantity": "the invariant component compared (see its own definition)",
    "mean_fast": "posterior mean of the fast method (Gibbs) over all its draws",
    "mean_reference": "posterior mean of the reference (PyMC) over all its draws",
    "combined_mcse": "sqrt(mcse_fast^2 + mcse_reference^2)",
    "z": (
        "|mean_fast - mean_reference| / combined_mcse (point estimate: |estimate - "
        "posterior_mean| / posterior_sd, one-sided for `loglik`)"
    ),
    "z_null": (
        "the same z between two runs of the reference: its first and second halves of chains "
        "(reference level), or a second PyMC run from the same starts (mode-matched level); "
        "what z looks like when both sides target one posterior"
    ),
    "z_calibrated": (
        "z / max(1, sqrt(mean z_null^2)): z corrected by how much MCSEs understate the "
        "disagreement of two runs of one sampler"
    ),
    "threshold": (
        "Phi^-1(1 - alpha / (2 m)): the two-sided normal quantile at family-wise alpha (0.001 "
        "unless stated), Bonferroni over the m non-degenerate quantities (of all modes)"
    ),
    "agree": "z_calibrated (or z) <= threshold, or the quantity is degenerate",
    "estimate": "the point estimator's value of the invariant (EM at beta = 1)",
    "posterior_mean": "the reference posterior mean of the invariant",
    "posterior_sd": "the reference posterior standard deviation of the invariant",
    "ESS/s": (
        "minimum bulk ESS over the invariants divided by the sampler's wall-clock sampling "
        "seconds (`posterior.attrs['sampling_time']`); within-mode ESS at the mode-matched level"
    ),
    "lppd": (
        "held-out log pointwise predictive density, sum_i log( mean_s p(test_i | draw s) ), "
        "for each side; `difference` = fast - reference, `se` its standard error over rows"
    ),
    "-": "not defined: e.g. divergences of a sampler without the notion, z of a degenerate quantity",
}
"""Definitions of the quantities and columns a :meth:`Comparison.to_markdown` report shows."""


def quantity_definitions(model) -> dict:
    """Definitions that depend on the model: ``p_dyad`` with the formula the model declares
    (``model.p_dyad_formula``) when ``p_dyad`` is one of its invariants.

    Examples
    --------
    >>> from latentzoo.models import AspectModel
    >>> "theta[i, k] phi[k, j]" in quantity_definitions(AspectModel(2))["p_dyad"]
    True
    """
    if "p_dyad" not in model.invariant_names:
        return {}
    return {"p_dyad": f"{P_DYAD} ({type(model).__name__}: {model.p_dyad_formula})."}


@dataclass
class Comparison:
    """The outcome of validating a fast method against its reference.

    Attributes
    ----------
    checks : list of Check
    summary : pandas.DataFrame
        Per method and invariant component: mean, sd, MCSE, ESS (bulk), R-hat.
    agreement : pandas.DataFrame
        Per invariant component: both means, combined MCSE, z score, threshold, pass.
    ess_per_second : dict
        Minimum bulk ESS over the invariants divided by sampling seconds, per method.
    mode_spread : pandas.DataFrame or None
        Per-chain means of the invariants (real data: chains sit in different modes).
    problem : str
        What this comparison ran on (data, sizes, K), for the report.
    problems : dict
        Level -> its ``problem``, gathered by :meth:`extend`.
    ess : dict
        The minimum bulk ESS behind each entry of ``ess_per_second`` (same keys); ratios of
        ESS/s are reported only where both are at least :data:`ESS_CREDIBLE`.
    summary_note : str
        How to read this comparison's ``summary`` (the mode-matched level's within-mode
        diagnostics); ``notes`` holds them per level after :meth:`extend`.
    definitions : dict
        Model-specific definitions (``p_dyad``'s formula) added to :data:`DEFINITIONS`.
    posteriors : dict
        ``"level/method"`` -> InferenceData of every level merged by :meth:`extend` (``draws``
        keeps only the last level's).
    tables : dict
        Title -> a family's own table (e.g. BHC against the exact DPM), rendered under its
        title by :meth:`to_markdown`; :meth:`extend` adds the level to the title.
    """

    checks: list = field(default_factory=list)
    summary: pd.DataFrame | None = None
    agreement: pd.DataFrame | None = None
    ess_per_second: dict = field(default_factory=dict)
    mode_spread: pd.DataFrame | None = None
    heldout: dict = field(default_factory=dict)
    draws: dict = field(default_factory=dict, repr=False)
    skipped: list = field(default_factory=list)
    problem: str = ""
    problems: dict = field(default_factory=dict)
    ess: dict = field(default_factory=dict)
    summary_note: str = ""
    notes: dict = field(default_factory=dict)
    definitions: dict = field(default_factory=dict)
    posteriors: dict = field(default_factory=dict, repr=False)
    tables: dict = field(default_factory=dict)

    @property
    def passed(self) -> bool:
        """No check failed (inconclusive checks do not fail, but reach no level)."""
        return all(check.passed or check.inconclusive for check in self.checks)

    @property
    def inconclusive(self) -> list[Check]:
        """The checks that could not decide."""
        return [check for check in self.checks if check.inconclusive]

    @property
    def levels_reached(self) -> list[str]:
        """Levels with at least one check, all of whose checks passed.

        The four standard levels first, in their order, then a family's own checks as they came.
        """
        own = [c.level for c in self.checks if c.level not in LEVELS]
        out = []
        for level in [*LEVELS, *dict.fromkeys(own)]:
            mine = [c for c in self.checks if c.level == level]
            if mine and all(c.passed for c in mine):
                out.append(level)
        return out

    def merge_into(self, comparison: Comparison, level: str) -> None:
        """Add this level's outcome to a validation's comparison (in place), as
        :meth:`extend` does with ``label=level``; an SBC result answers the same call."""
        comparison.extend(self, level)

    def extend(self, other: Comparison, label: str | None = None) -> Comparison:
        """Merge another comparison's checks and tables into this one (in place).

        ``label`` (e.g. the validation level) is added as a ``level`` column to the tables and to
        the keys of ``ess_per_second`` and ``ess`` so results of different problems stay apart;
        ``other.draws`` are kept in ``posteriors`` under ``"label/method"``.
        """
        self.checks.extend(other.checks)
        self.skipped.extend(other.skipped)
        self.problems.update(other.problems)
        self.notes.update(other.notes)
        self.definitions.update(other.definitions)
        self.posteriors.update(other.posteriors)
        if other.problem:
            self.problems[label or other.problem] = other.problem
        if other.summary_note:
            self.notes[label or ""] = other.summary_note
        for name in ("summary", "agreement", "mode_spread"):
            mine, theirs = getattr(self, name), getattr(other, name)
            if theirs is not None:
                if label is not None:
                    theirs = theirs.reset_index() if name == "summary" else theirs.copy()
                    theirs.insert(0, "level", label)
                setattr(self, name, theirs if mine is None else pd.concat([mine, theirs]))
        suffix = f" ({label})" if label else ""
        self.ess_per_second.update({k + suffix: v for k, v in other.ess_per_second.items()})
        self.ess.update({k + suffix: v for k, v in other.ess.items()})
        self.heldout.update({k + suffix: v for k, v in other.heldout.items()})
        self.tables.update({k + suffix: v for k, v in other.tables.items()})
        self.draws.update(other.draws)
        if label:
            self.posteriors.update({f"{label}/{k}": v for k, v in other.draws.items()})
        return self

    def verdict(self) -> str:
        """One line: passed or failed, and the levels reached."""
        word = "PASSED" if self.passed else "FAILED"
        reached = ", ".join(self.levels_reached) or "none"
        failed = [c.name for c in self.checks if not c.passed and not c.inconclusive]
        tail = f"; failed: {', '.join(failed)}" if failed else ""
        if self.inconclusive:
            tail += f"; inconclusive: {', '.join(c.name for c in self.inconclusive)}"
        return f"{word}: levels reached: {reached}{tail}"

    def warnings(self) -> list[str]:
        """One line per sampler run with divergent transitions (NUTS), naming level and method.

        Examples
        --------
        >>> rows = pd.DataFrame({"method": ["pymc"], "quantity": ["loglik"], "divergences": [3.0]})
        >>> Comparison(summary=rows.set_index(["method", "quantity"])).warnings()
        ['pymc: 3 divergent transitions after tuning: NUTS could not follow the posterior everywhere; its summaries may be biased']
        """
        if self.summary is None or "divergences" not in self.summary:
            return []
        table = self.summary.reset_index()
        keys = ["level", "method"] if "level" in table else ["method"]
        out = []
        for key, part in table.groupby(keys, sort=False):
            count = float(part["divergences"].max())
            if np.isfinite(count) and count > 0:
                where = " / ".join(np.atleast_1d(key).astype(str))
                out.append(
                    f"{where}: {count:.0f} divergent transitions after tuning: NUTS could not "
                    "follow the posterior everywhere; its summaries may be biased"
                )
        return out

    def to_markdown(self) -> str:
        """A report section: verdicts with numbers, diagnostics, tables and the definitions.

        Per level the problem it ran on; every sampler table with R-hat, bulk ESS, MCSE and
        divergences (a warning line under the verdict where a run diverged); degenerate quantities
        listed as excluded from the tests; ESS/s ratios only where both ESS are at least
        :data:`ESS_CREDIBLE`; a "Definitions" section for every quantity and column shown.

        Examples
        --------
        >>> c = Comparison(checks=[Check("exact", "demo", True, "ok")])
        >>> c.problems["exact"] = "a tiny problem"
        >>> text = c.to_markdown()
        >>> "## Verdict" in text and "## Definitions" in text
        True
        """
        lines = ["## Verdict", "", self.verdict(), ""]
        if self.problems:
            lines += ["| level | validated on |", "|---|---|"]
            lines += [f"| {level} | {problem} |" for level, problem in self.problems.items()]
            lines.append("")
        lines += ["| level | check | result | detail |", "|---|---|---|---|"]
        for c in self.checks:
            lines.append(f"| {c.level} | {c.name} | {c.outcome} | {c.detail} |")
        for c in self.skipped:
            lines.append(f"| {c.level} | - | skipped | {c.detail} |")
        for warning in self.warnings():
            lines += ["", f"**Warning**: {warning}."]
        if self.ess_per_second:
            lines += _ess_markdown(self.ess_per_second, self.ess)
        if self.heldout:
            lines += ["", "## Held-out log predictive density", ""]
            lines += ["| quantity | value |", "|---|---|"]
            lines += [f"| {k} | {v:.4g} |" for k, v in self.heldout.items()]
        if self.agreement is not None and len(self.agreement):
            lines += ["", "## Agreement of posterior means (units of combined MCSE)"]
            lines += _agreement_markdown(self.agreement)
        if self.summary is not None and len(self.summary):
            lines += ["", "## Posterior summaries of the invariants"]
            excluded = self._degenerate_everywhere()
            for level, table in _by_level(_flat(self.summary)):
                if level is not None:
                    lines += ["", f"### {level}"]
                    if level in self.problems:
                        lines += ["", f"Data: {self.problems[level]}."]
                note = self.notes.get(level if level is not None else "", self.summary_note)
                if note:
                    lines += ["", note]
                omit = excluded.get(level, set())
                if omit:
                    table = table[~table["quantity"].isin(omit)]
                    lines += [
                        "",
                        f"{len(omit)} degenerate {'quantity' if len(omit) == 1 else 'quantities'}"
                        " omitted (listed under the agreement "
                        "table: constant at one value on both sides, nothing to diagnose).",
                    ]
                lines += ["", _table_markdown(table)]
        for title, table in self.tables.items():
            lines += ["", f"## {title}", "", _table_markdown(table)]
        if self.mode_spread is not None and len(self.mode_spread):
            lines += [
                "", "## Spread of modes: per-mode diagnostics and means", "",
                "One row per mode and side; `max_rhat` and `min_ess_bulk` are within-mode (the "
                "chains started at that mode), over all invariants.", "",
                _table_markdown(self.mode_spread),
            ]  # fmt: skip
        lines += ["", "## Definitions", ""]
        lines += [f"- **{name}**: {text}" for name, text in self._definitions().items()]
        return "\n".join(lines) + "\n"

    def _degenerate_everywhere(self) -> dict:
        """Level (None without levels) -> quantities degenerate in every agreement row."""
        table = self.agreement
        if table is None or "degenerate" not in table:
            return {}
        out = {}
        for level, part in _by_level(table.reset_index(drop=True)):
            flags = part.groupby("quantity")["degenerate"].all()
            out[level] = set(flags.index[flags.to_numpy().astype(bool)])
        return out

    def _definitions(self) -> dict:
        """Definitions of the quantities and columns that appear in this report, in order."""
        names = []
        if self.summary is not None:
            quantities = self.summary.reset_index()["quantity"]
            names += [q.split("[")[0] for q in quantities]
            names += list(self.summary.columns)
        for table in (self.agreement, self.mode_spread):
            if table is not None:
                if "quantity" in table:
                    names += [q.split("[")[0] for q in table["quantity"]]
                names += [c.split(" ")[0] for c in table.columns]
                if "degenerate" in table and table["degenerate"].any():
                    names.append("degenerate")
        if self.ess_per_second:
            names += ["ESS/s", "ess_bulk"]
        if self.heldout:
            names.append("lppd")
        known = {**DEFINITIONS, **self.definitions}
        out = {}
        for name in dict.fromkeys(names):
            if name in known:
                out[name] = known[name]
        if "-" not in out and any(
            t is not None and len(t) and t.isna().to_numpy().any()
            for t in (self.summary, self.agreement, self.mode_spread)
        ):
            out["-"] = known["-"]
        return out

    def plot(self, ax=None):
        """Forest plot of the invariants, one colour per method (posterior mean +- 2 sd).

        The predictive probabilities ``p_dyad`` (else the co-assignment probabilities, at most
        :data:`MAX_ROWS` of them) of the first level that has them: different levels fit
        different data; the title names that level and its data.

        Examples
        --------
        >>> import arviz as az
        >>> rng = np.random.default_rng(0)
        >>> idata = az.from_dict(posterior={"p_dyad": rng.random((2, 50, 3))})
        >>> c = Comparison(summary=summarize(idata, ["p_dyad"], "gibbs"), problem="toy data")
        >>> c.plot().get_title().splitlines()[-1]
        'toy data'
        """
        import textwrap

        import matplotlib.pyplot as plt

        if self.summary is None or not len(self.summary):
            raise ValueError("nothing to plot: this comparison has no posterior summaries")
        table = _flat(self.summary)
        # Probabilities share one axis: the predictive ones where the model has them, else the
        # co-assignment probabilities (mixtures), else whatever was summarised.
        xlabel, probability = "value (posterior mean ± 2 sd)", False
        for prefix, label in (
            ("p_dyad", "P(y_j | x_i) on the tracked dyads"),
            ("coassign", "co-assignment probability of the tracked pairs"),
        ):
            chosen = table["quantity"].str.startswith(prefix)
            if chosen.any():
                table, probability = table[chosen], True
                xlabel = f"{label} (posterior mean ± 2 sd, clipped to [0, 1])"
                break
        level = None
        if "level" in table:
            # Different levels fit different data sets: show the first problem's only.
            level = table["level"].iloc[0]
            table = table[table["level"] == level]
        table = table[table["quantity"].isin(list(dict.fromkeys(table["quantity"]))[:MAX_ROWS])]
        if ax is None:
            _, ax = plt.subplots(figsize=(7, 0.35 * max(len(table), 4) + 1.6))
        labels = {q: i for i, q in enumerate(dict.fromkeys(table["quantity"]))}
        methods = list(dict.fromkeys(table["method"]))
        for offset, method in enumerate(methods):
            part = table[table["method"] == method]
            y = np.array([labels[q] for q in part["quantity"]]) + 0.15 * (offset - len(methods) / 2)
            mean, spread = part["mean"].to_numpy(), 2 * part["sd"].to_numpy()
            if probability:  # a probability's interval stays inside [0, 1]
                xerr = np.stack([np.minimum(spread, mean), np.minimum(spread, 1 - mean)])
            else:
                xerr = spread
            ax.errorbar(mean, y, xerr=np.maximum(xerr, 0), fmt="o", ms=3, label=method)
        ax.set_yticks(list(labels.values()), list(labels))
        ax.set_xlabel(xlabel)
        ax.set_ylabel("invariant")
        ax.legend(fontsize="small")
        problem = self.problems.get(level, "") if level is not None else self.problem
        title = "Label-invariant quantities"
        if level is not None:
            title += f", {level} level"
        if problem:
            data = problem.split(";")[0]
            title += "\n" + "\n".join(textwrap.wrap(data, 70))
        ax.set_title(title, fontsize="medium")
        return ax


ESS_CREDIBLE = 100.0
"""Smallest bulk ESS of both sides for which an ESS/s ratio is printed: below it the ESS estimate
itself is too noisy (and the chains too short) to rate a sampler's efficiency."""


def _split_key(key: str) -> tuple[str, str]:
    """``"gibbs (reference)"`` -> ``("gibbs", "reference")``; no level -> ``(key, "")``."""
    if key.endswith(")") and " (" in key:
        method, level = key[:-1].rsplit(" (", 1)
        return method, level
    return key, ""


def _ess_markdown(per_second: dict, ess: dict) -> list[str]:
    """The ESS/s table and, per level with two methods, their ratio when both ESS are credible."""
    lines = ["", "## ESS per second (minimum bulk ESS over invariants)", ""]
    lines += ["| method | min bulk ESS | ESS/s |", "|---|---|---|"]
    for key, value in per_second.items():
        shown = ess.get(key, np.nan)
        lines.append(f"| {key} | {_cell(shown)} | {_cell(value)} |")
    levels: dict = {}
    for key in per_second:
        levels.setdefault(_split_key(key)[1], []).append(key)
    for level, keys in levels.items():
        if len(keys) != 2:
            continue
        (fast, ref), where = keys, f" ({level})" if level else ""
        a, b = per_second[fast], per_second[ref]
        names = f"{_split_key(fast)[0]} / {_split_key(ref)[0]}{where}"
        low = [k for k in keys if not ess.get(k, np.nan) >= ESS_CREDIBLE]
        if low:
            which = ", ".join(f"{k} {_cell(ess.get(k, np.nan))}" for k in low)
            lines.append(
                f"\nESS/s ratio {names} not shown: bulk ESS below {ESS_CREDIBLE:.0f} ({which}); "
                "so few effective draws estimate ESS itself too poorly to rate a sampler."
            )
        elif b and np.isfinite(a) and np.isfinite(b):
            lines.append(f"\nESS/s ratio {names}: {a / b:.3g}")
    return lines


def _flat(table: pd.DataFrame) -> pd.DataFrame:
    """``table`` with a (method, quantity) index as columns; a plain row index dropped."""
    if table.index.name or isinstance(table.index, pd.MultiIndex):
        return table.reset_index()
    return table.reset_index(drop=True)


def _by_level(table: pd.DataFrame):
    """``(level, rows without the level column)`` per level, in order; ``(None, table)`` if none.

    Columns empty at a level (another level's, such as ``mode``) are dropped, and ``mode`` comes
    first where it is present.
    """
    if "level" not in table:
        return [(None, table)]
    out = []
    for level in dict.fromkeys(table["level"]):
        part = table[table["level"] == level].drop(columns="level").dropna(axis=1, how="all")
        if "mode" in part:
            part = part[["mode", *[c for c in part.columns if c != "mode"]]]
            part = part.astype({"mode": int})
        out.append((level, part))
    return out


def _agreement_markdown(table: pd.DataFrame) -> list[str]:
    """The agreement tables per level, degenerate rows listed as excluded instead of shown."""
    lines = []
    for level, part in _by_level(table.reset_index(drop=True)):
        if level is not None:
            lines += ["", f"### {level}"]
        degenerate = part["degenerate"].astype(bool) if "degenerate" in part else None
        shown = part if degenerate is None else part[~degenerate].drop(columns="degenerate")
        lines += ["", _table_markdown(shown)]
        if degenerate is not None and degenerate.any():
            rows = part[degenerate]
            mean = "mean_reference" if "mean_reference" in rows else "posterior_mean"
            names = [
                (f"mode {int(r['mode'])} " if "mode" in rows else "")
                + f"{r['quantity']} = {r[mean]:.4g}"
                for _, r in rows.iterrows()
            ]
            if len(names) > MAX_LISTED:
                names = [*names[:MAX_LISTED], f"and {len(names) - MAX_LISTED} more"]
            lines += [
                "",
                f"degenerate: excluded ({len(rows)} of {len(part)}, not counted in the "
                f"Bonferroni threshold): {', '.join(names)}. Reason: {DEGENERATE_REASON}.",
            ]
    return lines


MAX_ROWS = 30
"""Most invariants the forest plot shows."""

MAX_LISTED = 20
"""Degenerate quantities named one by one in a report (the rest are counted)."""


def _cell(value) -> str:
    if isinstance(value, bool | np.bool_):
        return str(value)
    if isinstance(value, float | np.floating):
        if np.isnan(value):
            return "-"
        return f"{value:.4g}"
    return str(value)


def _table_markdown(table: pd.DataFrame) -> str:
    table = (
        table.reset_index() if table.index.name or isinstance(table.index, pd.MultiIndex) else table
    )
    header = "| " + " | ".join(map(str, table.columns)) + " |"
    rule = "|" + "---|" * len(table.columns)

    body = [
        "| " + " | ".join(_cell(v) for v in row) + " |" for row in table.itertuples(index=False)
    ]
    return "\n".join([header, rule, *body])


def _components(idata, var_names) -> dict[str, np.ndarray]:
    """Flatten every invariant into scalar components: name -> (chain, draw) array."""
    out = {}
    for name in var_names:
        values = idata.posterior[name].to_numpy()
        flat = values.reshape(values.shape[:2] + (-1,))
        if flat.shape[2] == 1 and values.ndim == 2:
            out[name] = flat[:, :, 0]
        else:
            for index in range(flat.shape[2]):
                out[f"{name}[{index}]"] = flat[:, :, index]
    return out


def _mcse(values) -> float:
    """Monte Carlo standard error of the mean of a (chain, draw) array.

    ArviZ returns NaN for (nearly) constant draws, e.g. a co-assignment probability pinned at 1;
    the iid formula ``sd / sqrt(n)`` (0 for constant draws) is the honest value there.
    """
    value = float(np.asarray(az.mcse(values, method="mean")).reshape(-1)[0])
    if not np.isfinite(value):
        value = float(np.std(values, ddof=1) / np.sqrt(np.size(values)))
    return value


def _rhat(values) -> float:
    """Rank-normalised R-hat; 1 for a component that is constant across all chains (nothing to
    disagree about), NaN for a single chain."""
    if values.shape[0] < 2:
        return np.nan
    if np.ptp(values) == 0:
        return 1.0
    return float(az.rhat(values))


def divergences(idata) -> float:
    """Divergent transitions over all chains: the sum of ``sample_stats.diverging``.

    NaN when the run records no ``diverging`` statistic: the notion belongs to Hamiltonian
    samplers (NUTS), not to Gibbs or discrete Metropolis steps.

    Examples
    --------
    >>> import arviz as az
    >>> rng = np.random.default_rng(0)
    >>> idata = az.from_dict(posterior={"x": rng.normal(size=(2, 5))},
    ...                      sample_stats={"diverging": np.eye(2, 5, dtype=bool)})
    >>> divergences(idata)
    2.0
    >>> divergences(az.from_dict(posterior={"x": rng.normal(size=(2, 5))}))
    nan
    """
    stats_group = getattr(idata, "sample_stats", None)
    if stats_group is None or "diverging" not in stats_group:
        return np.nan
    return float(np.asarray(stats_group["diverging"]).sum())


def summarize(idata, var_names, method: str, modes=None) -> pd.DataFrame:
    """Mean, sd, MCSE, bulk ESS, R-hat and divergences of each invariant component.

    ``divergences`` is the run's count of divergent transitions (:func:`divergences`; NaN for a
    sampler without the notion), the same on every row of a method.

    With ``modes`` (the mode each chain was started in, mode-matched level) the diagnostics are
    *within-mode*: ``r_hat`` is the largest R-hat among the chains of one mode, ``ess_bulk`` the
    smallest bulk ESS of one mode, ``mcse`` that of the mean over modes (modes as fixed strata of
    equal weight). The R-hat of all chains together would only measure how far apart the modes
    are, which is the design of that level, not a failure to converge. ``mean`` and ``sd`` stay
    over all draws.

    Examples
    --------
    >>> import arviz as az
    >>> idata = az.from_dict(posterior={"loglik": np.random.default_rng(0).normal(size=(4, 100))})
    >>> table = summarize(idata, ["loglik"], "demo")
    >>> bool(table.loc[("demo", "loglik"), "ess_bulk"] > 100), list(table.columns)
    (True, ['mean', 'sd', 'mcse', 'ess_bulk', 'r_hat', 'divergences'])
    """
    n_div = divergences(idata)
    labels = None if modes is None else np.asarray(modes)
    rows = []
    for quantity, values in _components(idata, var_names).items():
        if labels is None:
            mcse = _mcse(values)
            ess = float(az.ess(values, method="bulk"))
            rhat = _rhat(values)
        else:
            parts = [values[labels[: len(values)] == mode] for mode in np.unique(labels)]
            mcse = float(np.sqrt(sum(_mcse(p) ** 2 for p in parts)) / len(parts))
            ess = min(float(az.ess(p, method="bulk")) for p in parts)
            rhats = np.array([_rhat(p) for p in parts])
            rhat = float(np.nanmax(rhats)) if np.isfinite(rhats).any() else np.nan
        rows.append(
            {
                "method": method,
                "quantity": quantity,
                "mean": float(values.mean()),
                "sd": float(values.std(ddof=1)),
                "mcse": mcse,
                "ess_bulk": ess,
                "r_hat": rhat,
                "divergences": n_div,
            }
        )
    return pd.DataFrame(rows).set_index(["method", "quantity"])


def _z_threshold(alpha: float, n_tests: int) -> float:
    return float(stats.norm.ppf(1 - alpha / (2 * max(n_tests, 1))))


DEGENERATE_TOL = 1e-9
"""A quantity is *degenerate* when both sides' posterior sd and the difference of their means are
at most ``DEGENERATE_TOL * max(1, |reference mean|)``: both are constant (up to rounding) at the
same value, e.g. a co-assignment probability pinned at 0 or 1 (MCSE about 1e-17). It carries no
test (``z`` would be 0 / 0) and is excluded from the Bonferroni count; two constant sides at
*different* values are not degenerate and fail."""

DEGENERATE_REASON = (
    f"both methods' posterior sd and the difference of their means <= {DEGENERATE_TOL:g} x "
    "max(1, |mean|): constant at the same value, nothing to test"
)

DEFINITIONS["degenerate"] = (
    f"{DEGENERATE_REASON}; such a quantity is listed, not tested, and not counted in the "
    "Bonferroni threshold"
)


def is_degenerate(sd_a, sd_b, mean_a, mean_b, tol: float = DEGENERATE_TOL):
    """Whether a quantity is degenerate (see :data:`DEGENERATE_TOL`); broadcasts over arrays.

    Examples
    --------
    >>> bool(is_degenerate(1e-17, 0.0, 1.0, 1.0 - 1e-16))
    True
    >>> bool(is_degenerate(0.0, 0.0, 0.0, 1.0))  # constant, but at different values
    False
    >>> bool(is_degenerate(0.1, 0.0, 0.5, 0.5))
    False
    """
    scale = tol * np.maximum(1.0, np.abs(mean_b))
    return (
        (np.asarray(sd_a) <= scale)
        & (np.asarray(sd_b) <= scale)
        & (np.abs(np.asarray(mean_a) - np.asarray(mean_b)) <= scale)
    )


def agreement(fast, reference, var_names, alpha: float = 0.001) -> pd.DataFrame:
    """Posterior means of two samplers in units of their combined Monte Carlo standard error.

    ``z = |mean_fast - mean_ref| / sqrt(mcse_fast**2 + mcse_ref**2)``, compared with the two-sided
    normal quantile at level ``alpha`` Bonferroni-corrected over the non-degenerate components, so
    the check fails with probability about ``alpha`` when both samplers target the same posterior.
    Degenerate components (:data:`DEGENERATE_TOL`: both sides constant at one value) get
    ``degenerate`` True, ``z`` NaN and ``agree`` True, and do not raise the threshold.

    Examples
    --------
    >>> import arviz as az
    >>> rng = np.random.default_rng(0)
    >>> x = {"p": np.concatenate([rng.random((4, 500, 2)), np.ones((4, 500, 3))], axis=2)}
    >>> y = {"p": np.concatenate([rng.random((4, 500, 2)), np.ones((4, 500, 3))], axis=2)}
    >>> table = agreement(az.from_dict(posterior=x), az.from_dict(posterior=y), ["p"])
    >>> table["degenerate"].tolist(), bool(table["agree"].all())
    ([False, False, True, True, True], True)
    """
    a, b = _components(fast, var_names), _components(reference, var_names)
    rows = []
    for quantity in a:
        x, y = a[quantity], b[quantity]
        se = float(np.hypot(_mcse(x), _mcse(y)))
        diff = float(x.mean() - y.mean())
        degenerate = bool(
            is_degenerate(x.std(ddof=1), y.std(ddof=1), float(x.mean()), float(y.mean()))
        )
        if abs(diff) <= DEGENERATE_TOL * max(1.0, abs(float(y.mean()))):
            # Equal up to rounding (e.g. co-assignment probabilities pinned at 1 on both sides).
            diff = 0.0
        z = abs(diff) / se if se > 0 else (0.0 if diff == 0 else np.inf)
        rows.append(
            {
                "quantity": quantity,
                "mean_fast": float(x.mean()),
                "mean_reference": float(y.mean()),
                "combined_mcse": se,
                "z": np.nan if degenerate else z,
                "degenerate": degenerate,
            }
        )
    table = pd.DataFrame(rows)
    n_tests = int((~table["degenerate"]).sum()) if len(table) else 0
    table["threshold"] = _z_threshold(alpha, n_tests)
    table["agree"] = table["degenerate"] | (table["z"] <= table["threshold"])
    return table[
        ["quantity", "mean_fast", "mean_reference", "combined_mcse", "z", "threshold", "agree",
         "degenerate"]
    ]  # fmt: skip


def _ess_per_second(idata, var_names) -> float:
    ess = min(float(az.ess(v, method="bulk")) for v in _components(idata, var_names).values())
    return _per_second(ess, idata)


def _per_second(ess: float, idata) -> float:
    seconds = idata.posterior.attrs.get("sampling_time")
    if not seconds:
        return np.nan
    return ess / float(seconds)


MODE_MATCHED_NOTE = (
    "Mode-matched level: chains were deliberately started in different modes, so the R-hat of "
    "all chains together measures how far apart the modes are, not convergence, and is not "
    "shown. Here `r_hat` is the largest R-hat among the chains started at one mode, `ess_bulk` "
    "the smallest bulk ESS of one mode, `mcse` that of the mean over modes (equal weights); "
    "`mean` and `sd` are over all draws. The verdict uses these within-mode diagnostics."
)


def heldout_lppd(model, idata, test, train=None) -> np.ndarray:
    """Per-row held-out log pointwise predictive density ``log mean_s p(test_i | params_s)``."""
    from scipy.special import logsumexp

    names = model.param_names
    arrays = {n: idata.posterior[n].to_numpy() for n in names}
    n_chains, n_draws = arrays[names[0]].shape[:2]
    # Clustering models predict a row's held-out tokens from its training tokens (seed eq. (32)).
    per_draw = np.stack(
        [
            model.heldout_log_density({n: arrays[n][c, d] for n in names}, test, train)
            for c in range(n_chains)
            for d in range(n_draws)
        ]
    )
    return logsumexp(per_draw, axis=0) - np.log(per_draw.shape[0])


def compare(
    model,
    data,
    fast,
    reference,
    *,
    level: str = "reference",
    var_names=None,
    test=None,
    alpha: float = 0.001,
    rhat_max: float | None = None,
    names=("fast", "reference"),
    modes=None,
    null=None,
) -> Comparison:
    """Compare a fast sampler with its reference through the model's invariants.

    Parameters
    ----------
    model : a latentzoo model
    data : the training data both were fitted to
    fast, reference : arviz.InferenceData
        Posteriors holding the model's parameters (invariants are added if missing).
    level : "reference" or "mode-matched"
        ``"reference"`` requires the reference to have converged (R-hat <= ``rhat_max`` on every
        invariant, over at least 4 chains) before agreement counts, and the fast side too; ``"mode-matched"`` compares
        mode by mode (see :func:`mode_matched_checks`) and reports the spread.
    modes : array of int, optional
        Mode-matched level: the mode (start) of each chain, the same for ``fast``, ``reference``
        and ``null`` (default: one mode per chain).
    null : arviz.InferenceData, optional
        Mode-matched level: a second reference run from the same starts, which calibrates the
        test (reference against reference).
    test : held-out data, optional
        Adds the held-out log predictive density of both sides and its difference.
    alpha : float
        Family-wise error rate of the agreement test.
    rhat_max : float, optional
        Largest max R-hat with which a side counts as converged. Default: for each side, the
        threshold that converged chains exceed with probability ``1 - CONVERGED_Q``
        (:func:`~latentzoo.inference.mcmc.rhat_threshold` at that side's smallest bulk ESS, draws,
        chains and number of quantities), at most ``RHAT_DISAGREE``.

    Returns
    -------
    Comparison
    """
    from latentzoo.inference.mcmc import add_invariants

    if level not in ("reference", "mode-matched"):
        raise ValueError(f"level must be 'reference' or 'mode-matched', got {level!r}")
    var_names = list(var_names or model.invariant_names)
    fast_name, ref_name = names
    add_invariants(fast, model, data)
    add_invariants(reference, model, data)
    chain_modes = None
    if level == "mode-matched":
        n_chains = min(fast.posterior.sizes["chain"], reference.posterior.sizes["chain"])
        chain_modes = np.arange(n_chains) if modes is None else np.asarray(modes)[:n_chains]
    summary = pd.concat(
        [
            summarize(fast, var_names, fast_name, modes=chain_modes),
            summarize(reference, var_names, ref_name, modes=chain_modes),
        ]
    )
    result = Comparison(summary=summary)
    for name, idata in ((fast_name, fast), (ref_name, reference)):
        # ESS from the summary: within-mode at the mode-matched level, where the ESS of all
        # chains together (about 3 when the modes differ) rates nothing.
        result.ess[name] = float(summary.loc[name]["ess_bulk"].min())
        result.ess_per_second[name] = _per_second(result.ess[name], idata)
    if chain_modes is not None:
        result.summary_note = MODE_MATCHED_NOTE
    result.draws = {fast_name: fast, ref_name: reference}
    result.definitions = quantity_definitions(model)
    if level == "reference":
        _reference_checks(result, fast, reference, var_names, alpha, rhat_max, names)
    else:
        if null is not None:
            add_invariants(null, model, data)
        mode_matched_checks(result, fast, reference, var_names, alpha, names, modes, null)
    if test is not None:
        a = heldout_lppd(model, fast, test, data)
        b = heldout_lppd(model, reference, test, data)
        diff = a - b
        se = float(np.sqrt(len(diff)) * diff.std(ddof=1)) if len(diff) > 1 else np.nan
        result.heldout = {
            f"{fast_name} lppd": float(a.sum()),
            f"{ref_name} lppd": float(b.sum()),
            "difference": float(diff.sum()),
            "se": se,
        }
    return result


CONVERGED_Q = 0.995
"""Probability with which one side of a converged pair passes its convergence check at the default
threshold (:func:`converged_check`): the two sides of a reference level together fail correct
code at most 1 % of the time."""


def converged_check(name, rows, idata, rhat_max=None, *, min_chains=1) -> Check:
    """The "``name`` converged" check of a reference level: the largest R-hat over the compared
    quantities ``rows`` (a :func:`summarize` table of one side) at most the threshold.

    The threshold is ``rhat_max`` when given, otherwise the ``CONVERGED_Q`` quantile of the max
    R-hat of converged chains at this side's smallest bulk ESS (:func:`~latentzoo.inference.mcmc.
    rhat_threshold`), capped at ``RHAT_DISAGREE`` so that a sampler stuck between modes (whose low
    ESS would loosen the threshold) still fails. A fixed 1.01 fails correct samplers whose ESS is
    below about 1500 in a large share of runs (issue 25: the HACM's seed 0 at 1.021).

    Examples
    --------
    >>> import arviz as az
    >>> idata = az.from_dict(posterior={"loglik": np.random.default_rng(0).normal(size=(4, 500))})
    >>> check = converged_check("demo", summarize(idata, ["loglik"], "demo").loc["demo"], idata)
    >>> check.passed, check.name
    (True, 'demo converged')
    """
    from latentzoo.inference.mcmc import RHAT_DISAGREE, rhat_threshold

    rhat = rows["r_hat"].to_numpy(dtype=float)
    finite = rhat[np.isfinite(rhat)]
    worst = float(finite.max()) if len(finite) else float("nan")
    chains, draws = idata.posterior.sizes["chain"], idata.posterior.sizes["draw"]
    if rhat_max is None:
        ess = rows["ess_bulk"].to_numpy(dtype=float)
        ess = float(np.nanmin(ess)) if np.isfinite(ess).any() else 1.0
        threshold = min(
            rhat_threshold(max(ess, 1.0), draws, chains, max(len(finite), 1), CONVERGED_Q),
            RHAT_DISAGREE,
        )
        why = (
            f"{CONVERGED_Q:.1%} quantile of converged chains at min bulk ESS {ess:.0f} over "
            f"{len(finite)} quantities"
        )
    else:
        threshold, why = float(rhat_max), "given"
    chain_rule = f", >= {min_chains} chains" if min_chains > 1 else ""
    return Check(
        "reference",
        f"{name} converged",
        chains >= min_chains and worst <= threshold,
        f"max R-hat {worst:.3f} over {chains} chains (need <= {threshold:.3f}{chain_rule}; {why})",
        {"max_rhat": worst, "threshold": threshold, "chains": chains},
    )


def _reference_checks(result, fast, reference, var_names, alpha, rhat_max, names) -> None:
    """Reference level: the reference converged, the fast side converged, and they agree."""
    fast_name, ref_name = names
    summary = result.summary
    n_chains = reference.posterior.sizes["chain"]
    result.checks.append(
        converged_check(ref_name, summary.loc[ref_name], reference, rhat_max, min_chains=4)
    )
    result.checks.append(converged_check(fast_name, summary.loc[fast_name], fast, rhat_max))
    table = agreement(fast, reference, var_names, alpha)
    # MCSEs understate the disagreement of two runs of one sampler a little (mean z^2 about 1.2
    # was measured between runs targeting one posterior), which would raise the false-alarm rate
    # several-fold at the Bonferroni threshold: the reference's two halves calibrate z.
    inflation = 1.0
    if n_chains >= 4:
        half = n_chains // 2
        null = agreement(
            select_chains(reference, range(half)), select_chains(reference, range(half, n_chains)),
            var_names, alpha,
        )  # fmt: skip
        finite = null["z"].to_numpy()[np.isfinite(null["z"].to_numpy())]
        if len(finite):
            inflation = max(1.0, float(np.sqrt(np.mean(finite**2))))
        table["z_null"] = null["z"].to_numpy()
    table["z_calibrated"] = table["z"] / inflation
    table["agree"] = table["degenerate"] | (table["z_calibrated"] <= table["threshold"])
    result.agreement = table
    result.checks.append(
        _agreement_check(
            f"{fast_name} agrees with {ref_name}",
            table,
            "z_calibrated",
            "max |z|",
            f"after calibration by {ref_name}'s two halves (factor {inflation:.2f}; threshold "
            f"{table['threshold'].iloc[0]:.2f}, family-wise alpha {alpha})",
            inflation=inflation,
        )
    )


def _worst(z) -> float:
    """The largest finite-or-infinite z of a column (degenerate rows are NaN); 0 if none."""
    values = np.asarray(z, dtype=float)
    values = values[~np.isnan(values)]
    return float(values.max()) if len(values) else 0.0


def _tested(table) -> str:
    """``"N quantities"``, with the degenerate ones excluded named by count."""
    degenerate = int(table["degenerate"].sum()) if "degenerate" in table else 0
    text = f"{len(table) - degenerate} quantities"
    if degenerate:
        text += f" ({degenerate} degenerate excluded)"
    return text


def _agreement_check(name: str, table, column: str, statistic: str, terms: str, **numbers) -> Check:
    """The reference-level check that every quantity of an agreement ``table`` agrees.

    Its detail reads ``"<statistic> <largest z of column> over <N quantities> <terms>"``; its
    numbers are that largest z (``max_z``) followed by ``numbers``.
    """
    worst = _worst(table[column])
    return Check(
        "reference",
        name,
        bool(table["agree"].all()),
        f"{statistic} {worst:.2f} over {_tested(table)} {terms}",
        {"max_z": worst, **numbers},
    )


MODE_RHAT_MAX = 1.05
"""Mode-matched level: largest R-hat between the chains of one side started at one mode; above it
the chains did not share a local posterior and the comparison is inconclusive."""
MODE_ESS_MIN = 50.0
"""Mode-matched level: smallest bulk ESS per side and mode for a conclusive comparison."""
MODE_NULL_INFLATION_MAX = 2.0
"""Mode-matched level: largest calibration factor (reference against itself, see
:func:`mode_matched_checks`) for a conclusive comparison."""


def select_chains(idata, chains):
    """The given chains of ``idata`` (every group with a chain dimension), renumbered from 0.

    Examples
    --------
    >>> import arviz as az
    >>> idata = az.from_dict(posterior={"x": np.arange(12.0).reshape(4, 3)})
    >>> select_chains(idata, [1, 3]).posterior["x"].values.tolist()
    [[3.0, 4.0, 5.0], [9.0, 10.0, 11.0]]
    """
    out = idata.isel(chain=list(chains))
    return out.assign_coords(chain=np.arange(len(chains)), groups="posterior")


def mode_matched_checks(result, fast, reference, var_names, alpha, names, modes=None, null=None):
    """Mode-matched level: both samplers started at the same modes, compared mode by mode.

    On real data no sampler crosses between modes, so a global posterior cannot be compared; each
    side's chains started at one mode sample its local posterior instead. Per mode:

    - **diagnostics**: R-hat between the chains of each side started there (at most
      :data:`MODE_RHAT_MAX`) and the smallest bulk ESS per side (at least :data:`MODE_ESS_MIN`);
    - **agreement**: ``z = |mean_fast - mean_ref| / combined MCSE`` per invariant, Bonferroni over
      all invariants and modes at family-wise ``alpha``;
    - **calibration** (when ``null`` is given: a second reference run from the same starts): the
      same ``z`` between the two reference runs measures how far MCSEs understate the real
      disagreement of chains near a mode; the fast side's ``z`` are divided by
      ``sqrt(mean z_null^2)`` (at least 1) before the threshold applies.

    The verdict is "pass" when every mode agrees, "FAIL" when one does not while its diagnostics
    are good, and "inconclusive" when the diagnostics or the calibration (factor above
    :data:`MODE_NULL_INFLATION_MAX`) show that the chains did not sample one local posterior.
    """
    fast_name, ref_name = names
    n_chains = min(fast.posterior.sizes["chain"], reference.posterior.sizes["chain"])
    modes = np.arange(n_chains) if modes is None else np.asarray(modes)[:n_chains]
    tables, spread, diagnostics, null_z = [], [], [], []
    labels = np.unique(modes)
    for mode in labels:
        chains = np.flatnonzero(modes == mode)
        sides = {fast_name: select_chains(fast, chains), ref_name: select_chains(reference, chains)}
        if null is not None:
            sides["null"] = select_chains(null, chains)
        for side, obj in sides.items():
            components = _components(obj, var_names)
            rhat = max((_rhat(v) for v in components.values()), default=np.nan)
            ess = min(float(az.ess(v, method="bulk")) for v in components.values())
            row = {"mode": int(mode), "method": side, "chains": len(chains), "max_rhat": rhat,
                   "min_ess_bulk": ess, "divergences": divergences(obj)}  # fmt: skip
            for quantity, values in _components(obj, ["loglik"]).items():
                row[f"{quantity} mean"] = float(values.mean())
                row[f"{quantity} sd"] = float(values.std(ddof=1))
                row[f"{quantity} mcse"] = _mcse(values)
            spread.append(row)
            diagnostics.append(row)
        table = agreement(sides[fast_name], sides[ref_name], var_names, alpha / len(labels))
        table.insert(0, "mode", int(mode))
        if null is not None:
            null_table = agreement(sides["null"], sides[ref_name], var_names, alpha)
            null_z.extend(null_table["z"].to_numpy())
            table["z_null"] = null_table["z"].to_numpy()
        tables.append(table)
    table = pd.concat(tables, ignore_index=True)
    # One Bonferroni count over the non-degenerate quantities of all modes together.
    table["threshold"] = _z_threshold(alpha, int((~table["degenerate"]).sum()))
    inflation = 1.0
    if null_z:
        finite = np.asarray(null_z)[np.isfinite(null_z)]
        inflation = max(1.0, float(np.sqrt(np.mean(finite**2)))) if len(finite) else np.inf
    table["z_calibrated"] = table["z"] / inflation
    table["agree"] = table["degenerate"] | (table["z_calibrated"] <= table["threshold"])
    result.agreement = table
    result.mode_spread = pd.DataFrame(spread)
    diag = pd.DataFrame(diagnostics)
    is_fast = diag["method"] == fast_name
    ref_rhat = float(diag.loc[~is_fast, "max_rhat"].max())
    fast_rhat = float(diag.loc[is_fast, "max_rhat"].max())
    ref_ess = float(diag.loc[~is_fast, "min_ess_bulk"].min())
    fast_ess = float(diag.loc[is_fast, "min_ess_bulk"].min())
    worst_ess = min(ref_ess, fast_ess)
    means = result.mode_spread[result.mode_spread["method"] == ref_name]["loglik mean"]
    span = float(means.max() - means.min())
    worst_z = _worst(table["z_calibrated"])
    # Only the reference side decides whether a local posterior exists; a fast sampler whose
    # chains from one start disagree while the reference's agree is wrong, not inconclusive.
    problems = []
    if not ref_rhat <= MODE_RHAT_MAX:
        problems.append(f"{ref_name} within-mode R-hat {ref_rhat:.3f} > {MODE_RHAT_MAX}")
    if not ref_ess >= MODE_ESS_MIN:
        problems.append(f"{ref_name} bulk ESS {ref_ess:.0f} < {MODE_ESS_MIN:.0f}")
    fast_split = not fast_rhat <= MODE_RHAT_MAX
    if not fast_split and not fast_ess >= MODE_ESS_MIN:
        problems.append(f"{fast_name} bulk ESS {fast_ess:.0f} < {MODE_ESS_MIN:.0f}")
    if not inflation <= MODE_NULL_INFLATION_MAX:
        problems.append(
            f"{ref_name} disagrees with itself (calibration factor {inflation:.2f} > "
            f"{MODE_NULL_INFLATION_MAX})"
        )
    agree = bool(table["agree"].all()) and not fast_split
    detail = (
        f"{len(labels)} modes x {len(chains)} chains per side; max |z| {worst_z:.2f} over "
        f"{_tested(table)} after "
        f"calibration by {ref_name} against itself (factor {inflation:.2f}; threshold "
        f"{float(table['threshold'].iloc[0]):.2f}); within-mode max R-hat {fast_name} "
        f"{fast_rhat:.3f}, {ref_name} {ref_rhat:.3f} (need <= {MODE_RHAT_MAX}); min bulk ESS "
        f"{worst_ess:.0f}; {ref_name} per-mode mean log-likelihoods span {span:.1f} nats"
    )
    if problems:
        detail = "inconclusive: " + "; ".join(problems) + ". " + detail
    result.checks.append(
        Check(
            "mode-matched",
            f"{fast_name} agrees with {ref_name} mode by mode",
            agree and not problems,
            detail if not fast_split else f"{fast_name} chains split within a mode. {detail}",
            {
                "max_z": worst_z,
                "inflation": inflation,
                "max_rhat": max(fast_rhat, ref_rhat),
                "min_ess": worst_ess,
                "mode_span": span,
                "n_modes": len(labels),
            },  # fmt: skip
            # Chains of the fast sampler that split from one start fail it whatever the rest.
            inconclusive=bool(problems) and not fast_split,
        )
    )


def uncertainty_check(summary, method: str, floor: float = 0.02, fraction: float = 0.1) -> Check:
    """The reference level's data leave the posterior genuinely uncertain.

    On data so well separated that every co-assignment is 0 or 1, a sampler that ignores part of
    the prior gives bit-identical output: agreement there proves little. At least ``fraction`` of
    the probability-valued invariants (``p_dyad``, ``coassign*``) of ``method`` must have a
    posterior mean strictly inside ``(floor, 1 - floor)`` and a posterior sd above ``floor``.

    When too few do, the check is *inconclusive*, not failed: the simulated problem could not
    test the sampler, which is no evidence of a bug in it. As a failure it was the only false
    alarm of the finite mixture's reference level on correct code (4 of 100 seeds, each with
    the two samplers converged and agreeing; ``tests/FALSE_ALARMS.md``, stops 44-45).

    Examples
    --------
    >>> import pandas as pd
    >>> rows = pd.DataFrame({"method": ["pymc"] * 2, "quantity": ["coassign[0]", "coassign[1]"],
    ...                      "mean": [0.5, 1.0], "sd": [0.3, 0.0]}).set_index(["method", "quantity"])
    >>> uncertainty_check(rows, "pymc").passed
    True
    >>> uncertainty_check(rows.assign(mean=[1.0, 1.0], sd=[0.0, 0.0]), "pymc").outcome
    'inconclusive'
    """
    rows = summary.loc[method]
    names = pd.Series(rows.index, index=rows.index)
    probability = names.str.startswith("p_dyad") | names.str.startswith("coassign")
    rows = rows[probability.to_numpy()]
    uncertain = (rows["mean"] > floor) & (rows["mean"] < 1 - floor) & (rows["sd"] > floor)
    needed = max(1, int(np.ceil(fraction * len(rows))))
    count = int(uncertain.sum())
    informative = count >= needed
    detail = (
        f"{count} of {len(rows)} probability invariants have mean in ({floor}, {1 - floor}) and "
        f"sd > {floor} (need >= {needed})"
    )
    if not informative:
        detail = f"inconclusive: the data leave the posterior certain, nothing to test. {detail}"
    return Check(
        "reference",
        "the reference posterior is uncertain",
        informative,
        detail,
        {"uncertain": count, "of": len(rows)},
        inconclusive=not informative,
    )


def point_in_posterior(
    model, data, params, reference, *, name="estimate", alpha: float = 0.001, rhat_max=None
) -> Comparison:
    """Check a point estimate (EM's MAP) against a converged reference posterior.

    Each invariant of the estimate must lie within ``z`` posterior standard deviations of the
    reference posterior mean, ``z`` the Bonferroni-corrected normal quantile. On the reference
    level's data the posterior is close to normal and the MAP sits well inside it, so a failure
    means the estimator does not maximise the model that the reference declares. The
    log-likelihood is checked one-sided: at the mode it exceeds the posterior draws' by about half
    the number of parameters (the typical set is a shell around the mode), so only an estimate
    *worse* than the posterior mean by ``z`` sd fails (a local optimum, a premature stop).
    """
    from latentzoo.inference.mcmc import add_invariants

    add_invariants(reference, model, data)
    var_names = list(model.invariant_names)
    summary = summarize(reference, var_names, "pymc")
    flat = {}
    for key, value in model.invariants(params, data).items():
        values = np.atleast_1d(value).ravel()
        for index, v in enumerate(values):
            flat[key if np.ndim(value) == 0 else f"{key}[{index}]"] = float(v)
    rows = []
    for quantity, value in flat.items():
        mean, sd = summary.loc[("pymc", quantity), ["mean", "sd"]]
        gap = max(mean - value, 0.0) if quantity == "loglik" else abs(value - mean)
        z = gap / sd if sd > 0 else (0.0 if gap == 0 else np.inf)
        # A point estimate has sd 0: degenerate when the posterior is constant at its value.
        degenerate = bool(is_degenerate(0.0, sd, value, mean))
        rows.append(
            {"quantity": quantity, "estimate": value, "posterior_mean": mean, "posterior_sd": sd,
             "z": np.nan if degenerate else z, "degenerate": degenerate}
        )  # fmt: skip
    table = pd.DataFrame(rows)
    threshold = _z_threshold(alpha, int((~table["degenerate"]).sum()))
    table["threshold"] = threshold
    table["agree"] = table["degenerate"] | (table["z"] <= threshold)
    result = Comparison(summary=summary, agreement=table, definitions=quantity_definitions(model))
    result.ess = {"pymc": float(summary["ess_bulk"].min())}
    result.ess_per_second = {"pymc": _per_second(result.ess["pymc"], reference)}
    result.draws = {"pymc": reference}
    result.checks.append(
        converged_check("pymc", summary.loc["pymc"], reference, rhat_max, min_chains=4)
    )
    result.checks.append(
        _agreement_check(
            f"{name} inside the pymc posterior",
            table,
            "z",
            "max |estimate - mean| / sd =",
            f"(threshold {threshold:.2f})",
        )
    )
    return result


# ------------------------------------------------------------------------ exact enumeration
def enumerate_assignments(n_items: int, n_labels: int) -> np.ndarray:
    """All ``n_labels ** n_items`` label vectors, one per row (lexicographic order): the exact
    level's label space (:func:`~latentzoo.inference.enumeration.label_vectors`).

    Examples
    --------
    >>> enumerate_assignments(2, 2).tolist()
    [[0, 0], [0, 1], [1, 0], [1, 1]]
    """
    return label_vectors(n_items, n_labels)


def exact_test(
    log_probs,
    sample_states,
    n_labels=None,
    alpha: float = 1e-3,
    name="exact",
    null_draws: int | None = None,
    random_state=None,
) -> Check:
    """Chi-square test of independent sampled states against an enumerated posterior, with a
    Monte Carlo p-value.

    Parameters
    ----------
    log_probs : (S,) unnormalised log posterior of every state, in the order of
        :func:`enumerate_assignments`, or of the rows of ``n_labels`` when it is an array.
    sample_states : (D, n_items) sampled label vectors (independent draws), or any sampled states
        one per row when ``n_labels`` is the array of the enumerated states.
    n_labels : int or array
        Needed to index label vectors (inferred from ``log_probs`` when omitted); a 2-D array is
        the enumerated states themselves, one per row (any finite space:
        :mod:`latentzoo.inference.enumeration`), and the draws are looked up among them.
    alpha : float
        Level of the test. Cells with expected count below 5 are pooled
        (:func:`~latentzoo.inference.enumeration.frequency_test`).
    null_draws : int, optional
        Multinomial samples of Pearson's statistic under the enumerated posterior behind the
        Monte Carlo p-value; 0 takes the asymptotic chi-square tail, which is anti-conservative
        when many cells expect only 5-10 draws. Default
        :func:`~latentzoo.inference.enumeration.null_draws_for` of ``alpha``: 20000 at the exact
        levels' ``1e-3`` (the asymptotic tail below ``1e-4``, where only unit tests go). The
        test is sequential (Besag & Clifford): it stops once
        :func:`~latentzoo.inference.enumeration.sequential_stop` null statistics reach the
        observed one, which changes no verdict of the full test and makes a typical pass cost a
        few hundred samples.
    random_state : None, int or numpy.random.Generator
        Generator of the null samples. None seeds it from the inputs (the posterior and the
        sampled states): the same draws give the same verdict, and the caller's stream is left
        as it was, so the checks after this one draw the numbers they drew before.

    Returns
    -------
    Check
        Its detail says "Monte Carlo" when the p-value is one.

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> draws = rng.choice(2, size=(4000, 1), p=[0.25, 0.75])
    >>> check = exact_test(np.log([1.0, 3.0]), draws, n_labels=2)
    >>> check.passed, "Monte Carlo" in check.detail
    (True, True)
    """
    if null_draws is None:
        null_draws = null_draws_for(alpha)
    sample_states = np.asarray(sample_states)
    if np.ndim(n_labels) == 2:
        index = state_index(n_labels, sample_states)
    else:
        n_items = sample_states.shape[1]
        if n_labels is None:
            n_labels = int(round(len(log_probs) ** (1.0 / n_items)))
        index = sample_states @ n_labels ** np.arange(n_items - 1, -1, -1)
    return frequency_test(
        log_probs, index, alpha=alpha, name=name, null_draws=null_draws, random_state=random_state,
        stop_after=sequential_stop(alpha, null_draws),
    )  # fmt: skip


def beta_moments(a, total):
    """First and second moments of a coordinate of ``Dirichlet(a)`` whose concentrations sum to
    ``total``: the coordinate is ``Beta(a, total - a)``, so ``E x = a / total`` and
    ``E x^2 = a (a + 1) / (total (total + 1))``. A zero concentration gives a point mass at 0.

    Examples
    --------
    >>> mean, second = beta_moments(np.array([1.0, 3.0]), 4.0)
    >>> mean.tolist(), second.tolist()
    ([0.25, 0.75], [0.1, 0.6])
    """
    a = np.asarray(a, dtype=float)
    total = np.asarray(total, dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        mean = np.where(a > 0, a / total, 0.0)
        second = np.where(a > 0, a * (a + 1.0) / (total * (total + 1.0)), 0.0)
    return mean, second


class BetaMarginal(NamedTuple):
    """The exact conditional law of a drawn quantity: each coordinate is ``Beta(a, total - a)``
    (a coordinate of ``Dirichlet(a)`` whose concentrations sum to ``total``); ``a = 0`` is a point
    mass at 0 and ``a = total`` one at 1."""

    a: np.ndarray
    total: np.ndarray


def beta_marginal(a, total) -> BetaMarginal:
    """:class:`BetaMarginal` of the coordinates of ``Dirichlet`` draws with concentrations ``a``
    summing to ``total`` (broadcast against each other).

    Examples
    --------
    >>> law = beta_marginal(np.array([1.0, 3.0]), 4.0)
    >>> law.a.tolist(), law.total.tolist()
    ([1.0, 3.0], [4.0, 4.0])
    """
    a = np.asarray(a, dtype=float)
    total = np.broadcast_to(np.asarray(total, dtype=float), a.shape)
    return BetaMarginal(a, total)


def pit_residuals(x, law: BetaMarginal) -> tuple[np.ndarray, np.ndarray]:
    """``(u - 1/2, u^2 - 1/3)`` with ``u = F(x)`` under ``law``: both have mean zero when ``x`` is
    drawn from it (``u`` is then uniform).

    Unlike raw moments, whose sample means are far from normal for the skewed Beta laws of small
    concentrations (a false alarm at z 4.66 was traced to one), transformed draws are bounded and
    symmetric, so their means are normal to the far tail. Where the law is a point mass
    (``a = 0`` or ``a = total``) both residuals are 0 if ``x`` sits on it and 1 otherwise.

    Examples
    --------
    >>> law = beta_marginal(np.array([1.0, 0.0, 0.0]), 2.0)
    >>> first, second = pit_residuals(np.array([0.75, 0.0, 0.1]), law)
    >>> first.tolist(), second.round(4).tolist()
    ([0.25, 0.0, 1.0], [0.2292, 0.0, 1.0])
    """
    from scipy.special import betainc

    x = np.asarray(x, dtype=float)
    a, total = law
    b = total - a
    inner = (a > 0) & (b > 0)
    with np.errstate(invalid="ignore", divide="ignore"):
        u = betainc(np.where(inner, a, 1.0), np.where(inner, b, 1.0), np.clip(x, 0.0, 1.0))
    point = np.where(a > 0, 1.0, 0.0)  # where the mass sits when there is no spread
    off = ~inner & ~np.isclose(x, point, rtol=0.0, atol=1e-12)
    first = np.where(inner, u - 0.5, np.where(off, 1.0, 0.0))
    second = np.where(inner, u * u - 1.0 / 3.0, np.where(off, 1.0, 0.0))
    return first, second


def moment_test(residuals: dict, alpha: float = 1e-3, name: str = "conditional moments") -> Check:
    """z-tests that independent residuals have mean zero, Bonferroni-corrected over components.

    ``residuals`` maps a name to a ``(draws, ...)`` array of ``f(draw) - E[f | state]``: a drawn
    quantity minus its exact conditional expectation given the chain's state. Under a correct
    ``draw`` each component has mean zero, so ``z = mean / (sd / sqrt(draws))`` is standard normal.
    A component whose residuals are all exactly zero passes (nothing is random there); a non-zero
    constant fails.

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> moment_test({"x": rng.normal(size=(4000, 3))}).passed
    True
    >>> moment_test({"x": rng.normal(0.2, 1.0, size=(4000, 3))}).passed
    False
    """
    zs = {}
    for key, values in residuals.items():
        values = np.asarray(values, dtype=float)
        flat = values.reshape(len(values), -1)
        mean = flat.mean(axis=0)
        sd = flat.std(axis=0, ddof=1)
        with np.errstate(divide="ignore", invalid="ignore"):
            z = np.where(sd > 0, np.abs(mean) / (sd / np.sqrt(len(flat))), 0.0)
        z = np.where((sd == 0) & (np.abs(mean) > 1e-12), np.inf, z)
        for index, value in enumerate(z):
            zs[key if flat.shape[1] == 1 else f"{key}[{index}]"] = float(value)
    threshold = _z_threshold(alpha, len(zs))
    worst = max(zs, key=zs.get)
    return Check(
        "exact",
        name,
        zs[worst] <= threshold,
        f"max |z| {zs[worst]:.2f} at {worst} over {len(zs)} components (need <= {threshold:.2f})",
        {"max_z": zs[worst], "n_components": len(zs)},
    )


# ---------------------------------------------------------------------------- calibration
# sbc and SBCResult live in latentzoo.inference.calibration (imported above, re-exported here).


# -------------------------------------------------------------------------- label switching
def align_labels(idata, reference, var_name: str = "phi", label_dim: str = "topic"):
    """Permute the labels of every chain of ``idata`` to match ``reference`` (label switching).

    For each chain, the posterior mean of ``var_name`` is matched to the reference's posterior mean
    (an InferenceData, or an array with ``label_dim`` first) by the Hungarian algorithm on squared
    Euclidean distance; every posterior variable carrying ``label_dim`` is then reordered with that
    chain's permutation. Use it only where per-label summaries are wanted: comparisons go through
    the label-invariant quantities, which need no alignment.

    Returns
    -------
    aligned : arviz.InferenceData
        A copy of ``idata`` with aligned labels.
    permutations : numpy.ndarray (chain, K)
        ``permutations[c, k]``: the label of chain ``c`` that became label ``k``.

    Examples
    --------
    >>> import arviz as az
    >>> phi = np.array([[[0.9, 0.1], [0.2, 0.8]], [[0.2, 0.8], [0.9, 0.1]]])[:, None]
    >>> idata = az.from_dict(posterior={"phi": phi}, dims={"phi": ["topic", "word"]})
    >>> aligned, perm = align_labels(idata, phi[0, 0])
    >>> perm.tolist()
    [[0, 1], [1, 0]]
    """
    from scipy.optimize import linear_sum_assignment

    posterior = idata.posterior
    if isinstance(reference, az.InferenceData):
        target = reference.posterior[var_name].mean(("chain", "draw"))
        target = target.transpose(label_dim, ...).to_numpy()
    else:
        target = np.asarray(reference)
    target = target.reshape(target.shape[0], -1)
    chain_means = posterior[var_name].mean("draw").transpose("chain", label_dim, ...).to_numpy()
    n_chains, n_labels = chain_means.shape[:2]
    permutations = np.empty((n_chains, n_labels), dtype=np.int64)
    for chain in range(n_chains):
        mean = chain_means[chain].reshape(n_labels, -1)
        cost = ((target[:, None, :] - mean[None, :, :]) ** 2).sum(axis=-1)
        _, columns = linear_sum_assignment(cost)
        permutations[chain] = columns
    aligned = idata.copy()
    new = {}
    for name, variable in posterior.data_vars.items():
        if label_dim not in variable.dims:
            continue
        values = variable.transpose("chain", "draw", label_dim, ...).to_numpy()
        reordered = np.stack([values[c][:, permutations[c]] for c in range(n_chains)])
        order = ("chain", "draw", label_dim) + tuple(
            d for d in variable.dims if d not in ("chain", "draw", label_dim)
        )
        new[name] = variable.transpose(*order).copy(data=reordered).transpose(*variable.dims)
    aligned.posterior = posterior.assign(new)
    return aligned, permutations
