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

import itertools
from dataclasses import dataclass, field
from typing import NamedTuple

import arviz as az
import numpy as np
import pandas as pd
from scipy import stats

from latentzoo.inference.calibration import SBCResult, sbc

__all__ = [
    "Check",
    "Comparison",
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


@dataclass
class Check:
    """One verdict: its level, whether it passed, a one-line reason and the numbers behind it.

    An ``inconclusive`` check (``passed`` False) could not decide, e.g. chains that did not stay
    in the mode they were started in: it is no evidence of a bug, but its level is not reached.
    """

    level: str
    name: str
    passed: bool
    detail: str
    numbers: dict = field(default_factory=dict)
    inconclusive: bool = False

    @property
    def outcome(self) -> str:
        """``"pass"``, ``"FAIL"`` or ``"inconclusive"``."""
        if self.inconclusive:
            return "inconclusive"
        return "pass" if self.passed else "FAIL"


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

    def extend(self, other: Comparison, label: str | None = None) -> Comparison:
        """Merge another comparison's checks and tables into this one (in place).

        ``label`` (e.g. the validation level) is added as a ``level`` column to the tables and to
        the keys of ``ess_per_second`` so results of different problems stay apart.
        """
        self.checks.extend(other.checks)
        self.skipped.extend(other.skipped)
        self.problems.update(other.problems)
        if other.problem:
            self.problems[label or other.problem] = other.problem
        for name in ("summary", "agreement", "mode_spread"):
            mine, theirs = getattr(self, name), getattr(other, name)
            if theirs is not None:
                if label is not None:
                    theirs = theirs.reset_index() if name == "summary" else theirs.copy()
                    theirs.insert(0, "level", label)
                setattr(self, name, theirs if mine is None else pd.concat([mine, theirs]))
        suffix = f" ({label})" if label else ""
        self.ess_per_second.update({k + suffix: v for k, v in other.ess_per_second.items()})
        self.heldout.update({k + suffix: v for k, v in other.heldout.items()})
        self.draws.update(other.draws)
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

    def to_markdown(self) -> str:
        """A report section: verdicts with numbers, agreement and summary tables."""
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
        if self.ess_per_second:
            lines += ["", "## ESS per second (minimum bulk ESS over invariants)", ""]
            lines += ["| method | ESS/s |", "|---|---|"]
            lines += [f"| {k} | {v:.3g} |" for k, v in self.ess_per_second.items()]
            values = list(self.ess_per_second.items())
            for (fast, a), (ref, b) in zip(values[::2], values[1::2], strict=False):
                if b and np.isfinite(a) and np.isfinite(b):
                    lines.append(f"\nESS/s ratio {fast} / {ref}: {a / b:.3g}")
        if self.heldout:
            lines += ["", "## Held-out log predictive density", ""]
            lines += ["| quantity | value |", "|---|---|"]
            lines += [f"| {k} | {v:.4g} |" for k, v in self.heldout.items()]
        for title, table in (
            ("Agreement of posterior means (units of combined MCSE)", self.agreement),
            ("Posterior summaries of the invariants", self.summary),
            ("Spread of modes: per-chain means", self.mode_spread),
        ):
            if table is not None and len(table):
                lines += ["", f"## {title}", "", _table_markdown(table)]
        return "\n".join(lines) + "\n"

    def plot(self, ax=None):
        """Forest plot of the invariants, one colour per method (posterior mean +- 2 sd)."""
        import matplotlib.pyplot as plt

        if self.summary is None or not len(self.summary):
            raise ValueError("nothing to plot: this comparison has no posterior summaries")
        table = self.summary.reset_index()
        if "level" in table:
            # Different levels fit different data sets: show the first problem's dyads only.
            first = table["level"].iloc[0]
            table = table[table["level"] == first]
        table = table[table["quantity"].str.startswith("p_dyad")]
        if ax is None:
            _, ax = plt.subplots(figsize=(6, 0.35 * max(len(table), 4) + 1))
        labels = {q: i for i, q in enumerate(dict.fromkeys(table["quantity"]))}
        methods = list(dict.fromkeys(table["method"]))
        for offset, method in enumerate(methods):
            part = table[table["method"] == method]
            y = np.array([labels[q] for q in part["quantity"]]) + 0.15 * (offset - len(methods) / 2)
            ax.errorbar(part["mean"], y, xerr=2 * part["sd"], fmt="o", ms=3, label=method)
        ax.set_yticks(list(labels.values()), list(labels))
        ax.set_xlabel("P(y|x) (mean ± 2 sd)")
        ax.legend(fontsize="small")
        ax.set_title("Label-invariant predictive probabilities")
        return ax


def _table_markdown(table: pd.DataFrame) -> str:
    table = (
        table.reset_index() if table.index.name or isinstance(table.index, pd.MultiIndex) else table
    )
    header = "| " + " | ".join(map(str, table.columns)) + " |"
    rule = "|" + "---|" * len(table.columns)

    def cell(value):
        if isinstance(value, float | np.floating):
            return f"{value:.4g}"
        return str(value)

    body = ["| " + " | ".join(cell(v) for v in row) + " |" for row in table.itertuples(index=False)]
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


def summarize(idata, var_names, method: str) -> pd.DataFrame:
    """Mean, sd, MCSE, bulk ESS and R-hat of each invariant component.

    Examples
    --------
    >>> import arviz as az
    >>> idata = az.from_dict(posterior={"loglik": np.random.default_rng(0).normal(size=(4, 100))})
    >>> bool(summarize(idata, ["loglik"], "demo").loc[("demo", "loglik"), "ess_bulk"] > 100)
    True
    """
    rows = []
    for quantity, values in _components(idata, var_names).items():
        rows.append(
            {
                "method": method,
                "quantity": quantity,
                "mean": float(values.mean()),
                "sd": float(values.std(ddof=1)),
                "mcse": _mcse(values),
                "ess_bulk": float(az.ess(values, method="bulk")),
                "r_hat": _rhat(values),
            }
        )
    return pd.DataFrame(rows).set_index(["method", "quantity"])


def _z_threshold(alpha: float, n_tests: int) -> float:
    return float(stats.norm.ppf(1 - alpha / (2 * max(n_tests, 1))))


def agreement(fast, reference, var_names, alpha: float = 0.001) -> pd.DataFrame:
    """Posterior means of two samplers in units of their combined Monte Carlo standard error.

    ``z = |mean_fast - mean_ref| / sqrt(mcse_fast**2 + mcse_ref**2)``, compared with the two-sided
    normal quantile at level ``alpha`` Bonferroni-corrected over the components, so the check fails
    with probability about ``alpha`` when both samplers target the same posterior.
    """
    a, b = _components(fast, var_names), _components(reference, var_names)
    threshold = _z_threshold(alpha, len(a))
    rows = []
    for quantity in a:
        x, y = a[quantity], b[quantity]
        se = float(np.hypot(_mcse(x), _mcse(y)))
        diff = float(x.mean() - y.mean())
        if abs(diff) <= 1e-9 * max(1.0, abs(float(y.mean()))):
            # Equal up to rounding (e.g. co-assignment probabilities pinned at 1 on both sides).
            diff = 0.0
        z = abs(diff) / se if se > 0 else (0.0 if diff == 0 else np.inf)
        rows.append(
            {
                "quantity": quantity,
                "mean_fast": float(x.mean()),
                "mean_reference": float(y.mean()),
                "combined_mcse": se,
                "z": z,
                "threshold": threshold,
                "agree": bool(z <= threshold),
            }
        )
    return pd.DataFrame(rows)


def _ess_per_second(idata, var_names) -> float:
    seconds = idata.posterior.attrs.get("sampling_time")
    if not seconds:
        return np.nan
    ess = min(float(az.ess(v, method="bulk")) for v in _components(idata, var_names).values())
    return ess / float(seconds)


def heldout_lppd(model, idata, test, train=None) -> np.ndarray:
    """Per-row held-out log pointwise predictive density ``log mean_s p(test_i | params_s)``."""
    from scipy.special import logsumexp

    names = model.param_names
    arrays = {n: idata.posterior[n].to_numpy() for n in names}
    n_chains, n_draws = arrays[names[0]].shape[:2]
    # Clustering models predict a row's held-out tokens from its training tokens (seed eq. (32)).
    if hasattr(model, "predictive_log_density") and train is not None:

        def score(params):
            return model.predictive_log_density(params, test, train)
    else:

        def score(params):
            return model.log_likelihood(params, test)

    per_draw = np.stack(
        [
            score({n: arrays[n][c, d] for n in names})
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
    rhat_max: float = 1.01,
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
        invariant, over at least 4 chains) before agreement counts; ``"mode-matched"`` compares
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
    summary = pd.concat(
        [summarize(fast, var_names, fast_name), summarize(reference, var_names, ref_name)]
    )
    result = Comparison(summary=summary)
    result.ess_per_second = {
        fast_name: _ess_per_second(fast, var_names),
        ref_name: _ess_per_second(reference, var_names),
    }
    result.draws = {fast_name: fast, ref_name: reference}
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


def _reference_checks(result, fast, reference, var_names, alpha, rhat_max, names) -> None:
    """Reference level: the reference converged, the fast side converged, and they agree."""
    fast_name, ref_name = names
    summary = result.summary
    ref_rows = summary.loc[ref_name]
    n_chains = reference.posterior.sizes["chain"]
    worst = float(ref_rows["r_hat"].max())
    ok = n_chains >= 4 and worst <= rhat_max
    result.checks.append(
        Check(
            "reference",
            f"{ref_name} converged",
            ok,
            f"max R-hat {worst:.3f} over {n_chains} chains (need <= {rhat_max}, >= 4 chains)",
            {"max_rhat": worst, "chains": n_chains},
        )
    )
    fast_worst = float(summary.loc[fast_name]["r_hat"].max())
    result.checks.append(
        Check(
            "reference",
            f"{fast_name} converged",
            fast_worst <= rhat_max,
            f"max R-hat {fast_worst:.3f} (need <= {rhat_max})",
            {"max_rhat": fast_worst},
        )
    )
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
    table["agree"] = table["z_calibrated"] <= table["threshold"]
    result.agreement = table
    worst_z = float(table["z_calibrated"].max())
    result.checks.append(
        Check(
            "reference",
            f"{fast_name} agrees with {ref_name}",
            bool(table["agree"].all()),
            f"max |z| {worst_z:.2f} over {len(table)} quantities after calibration by "
            f"{ref_name}'s two halves (factor {inflation:.2f}; threshold "
            f"{table['threshold'].iloc[0]:.2f}, family-wise alpha {alpha})",
            {"max_z": worst_z, "inflation": inflation},
        )
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
                   "min_ess_bulk": ess}  # fmt: skip
            for quantity, values in _components(obj, ["loglik"]).items():
                row[f"{quantity} mean"] = float(values.mean())
                row[f"{quantity} sd"] = float(values.std(ddof=1))
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
    inflation = 1.0
    if null_z:
        finite = np.asarray(null_z)[np.isfinite(null_z)]
        inflation = max(1.0, float(np.sqrt(np.mean(finite**2)))) if len(finite) else np.inf
    table["z_calibrated"] = table["z"] / inflation
    table["agree"] = table["z_calibrated"] <= table["threshold"]
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
    worst_z = float(table["z_calibrated"].max())
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
        f"{len(labels)} modes x {len(chains)} chains per side; max |z| {worst_z:.2f} after "
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

    Examples
    --------
    >>> import pandas as pd
    >>> rows = pd.DataFrame({"method": ["pymc"] * 2, "quantity": ["coassign[0]", "coassign[1]"],
    ...                      "mean": [0.5, 1.0], "sd": [0.3, 0.0]}).set_index(["method", "quantity"])
    >>> uncertainty_check(rows, "pymc").passed
    True
    """
    rows = summary.loc[method]
    names = pd.Series(rows.index, index=rows.index)
    probability = names.str.startswith("p_dyad") | names.str.startswith("coassign")
    rows = rows[probability.to_numpy()]
    uncertain = (rows["mean"] > floor) & (rows["mean"] < 1 - floor) & (rows["sd"] > floor)
    needed = max(1, int(np.ceil(fraction * len(rows))))
    count = int(uncertain.sum())
    return Check(
        "reference",
        "the reference posterior is uncertain",
        count >= needed,
        f"{count} of {len(rows)} probability invariants have mean in ({floor}, {1 - floor}) and "
        f"sd > {floor} (need >= {needed})",
        {"uncertain": count, "of": len(rows)},
    )


def point_in_posterior(
    model, data, params, reference, *, name="estimate", alpha: float = 0.001, rhat_max=1.01
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
    threshold = _z_threshold(alpha, len(flat))
    rows = []
    for quantity, value in flat.items():
        mean, sd = summary.loc[("pymc", quantity), ["mean", "sd"]]
        gap = max(mean - value, 0.0) if quantity == "loglik" else abs(value - mean)
        z = gap / sd if sd > 0 else (0.0 if gap == 0 else np.inf)
        rows.append(
            {"quantity": quantity, "estimate": value, "posterior_mean": mean, "posterior_sd": sd,
             "z": z, "threshold": threshold, "agree": bool(z <= threshold)}
        )  # fmt: skip
    table = pd.DataFrame(rows)
    worst_rhat = float(summary["r_hat"].max())
    chains = reference.posterior.sizes["chain"]
    result = Comparison(summary=summary, agreement=table)
    result.ess_per_second = {"pymc": _ess_per_second(reference, var_names)}
    result.checks.append(
        Check(
            "reference",
            "pymc converged",
            chains >= 4 and worst_rhat <= rhat_max,
            f"max R-hat {worst_rhat:.3f} over {chains} chains (need <= {rhat_max}, >= 4 chains)",
            {"max_rhat": worst_rhat},
        )
    )
    worst = float(table["z"].max())
    result.checks.append(
        Check(
            "reference",
            f"{name} inside the pymc posterior",
            bool(table["agree"].all()),
            f"max |estimate - mean| / sd = {worst:.2f} over {len(table)} quantities "
            f"(threshold {threshold:.2f})",
            {"max_z": worst},
        )
    )
    return result


# ------------------------------------------------------------------------ exact enumeration
def enumerate_assignments(n_items: int, n_labels: int) -> np.ndarray:
    """All ``n_labels ** n_items`` label vectors, one per row (lexicographic order).

    Examples
    --------
    >>> enumerate_assignments(2, 2).tolist()
    [[0, 0], [0, 1], [1, 0], [1, 1]]
    """
    if n_labels**n_items > 2_000_000:
        raise ValueError(f"{n_labels}**{n_items} states are too many to enumerate")
    return np.array(list(itertools.product(range(n_labels), repeat=n_items)), dtype=np.int64)


def exact_test(log_probs, sample_states, n_labels=None, alpha: float = 1e-3, name="exact") -> Check:
    """Chi-square test of independent sampled states against an enumerated posterior.

    Parameters
    ----------
    log_probs : (S,) unnormalised log posterior of every state, in the order of
        :func:`enumerate_assignments`.
    sample_states : (D, n_items) sampled label vectors (independent draws).
    n_labels : int
        Needed to index the states; inferred from ``log_probs`` when omitted.
    alpha : float
        Level of the test. Cells with expected count below 5 are pooled.

    Returns
    -------
    Check
    """
    log_probs = np.asarray(log_probs, dtype=float)
    sample_states = np.asarray(sample_states)
    n_items = sample_states.shape[1]
    if n_labels is None:
        n_labels = int(round(len(log_probs) ** (1.0 / n_items)))
    weights = n_labels ** np.arange(n_items - 1, -1, -1)
    index = sample_states @ weights
    observed = np.bincount(index, minlength=len(log_probs)).astype(float)
    probs = np.exp(log_probs - log_probs.max())
    probs /= probs.sum()
    expected = probs * len(sample_states)
    impossible = (expected == 0) & (observed > 0)
    if impossible.any():
        state = int(np.flatnonzero(impossible)[0])
        return Check(
            "exact", name, False,
            f"sampled state {state} has posterior probability 0 ({int(observed[state])} draws)",
            {"chi2": np.inf, "dof": 0, "p_value": 0.0, "total_variation": 1.0},
        )  # fmt: skip
    # States of probability zero that were never drawn carry no information.
    keep = expected > 0
    observed, expected = observed[keep], expected[keep]
    order = np.argsort(expected)
    small = expected[order] < 5
    pooled_obs = list(observed[order][~small])
    pooled_exp = list(expected[order][~small])
    if small.any():
        pooled_obs.append(observed[order][small].sum())
        pooled_exp.append(expected[order][small].sum())
    chi2 = float(np.sum((np.array(pooled_obs) - np.array(pooled_exp)) ** 2 / np.array(pooled_exp)))
    dof = len(pooled_obs) - 1
    p_value = float(stats.chi2.sf(chi2, dof))
    tv = 0.5 * float(np.abs(observed / len(sample_states) - probs[keep]).sum())
    return Check(
        "exact",
        name,
        p_value > alpha,
        f"chi-square {chi2:.1f} on {dof} dof, p = {p_value:.3g} (need > {alpha}); "
        f"total variation {tv:.4f} over {len(log_probs)} states, {len(sample_states)} draws",
        {"chi2": chi2, "dof": dof, "p_value": p_value, "total_variation": tv},
    )


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
    if hasattr(reference, "posterior"):
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
