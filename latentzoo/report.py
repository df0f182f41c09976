"""Reports: the markdown summary and PNG figures written by ``latentzoo validate`` and ``demo``."""

from __future__ import annotations

import dataclasses
import datetime
import os
import platform
import re
import subprocess
import textwrap
import time
import warnings
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from scipy.special import logsumexp

from latentzoo.data import load
from latentzoo.inference import mcmc
from latentzoo.inference.compare import Comparison
from latentzoo.models import AspectModel
from latentzoo.validation import FULL, QUICK, Settings

__all__ = [
    "DEMO_SIZES",
    "DemoSize",
    "RHAT_MAX",
    "ESS_MIN",
    "environment",
    "environment_markdown",
    "plot_annealing_trace",
    "plot_perplexity_vs_beta",
    "plot_diagnostics",
    "run_demo",
    "write_validation_report",
]

RHAT_MAX = mcmc.RHAT_MAX
"""Largest R-hat of a run the report calls converged: the one rule of
:func:`latentzoo.inference.mcmc.convergence`, which ``latentzoo fit`` and the saved files use too."""

ESS_MIN = 100
"""Smallest bulk ESS at which the report shows an ESS/s rate (below it the ESS is itself noise)."""

PACKAGES = ("latentzoo", "numpy", "scipy", "pymc", "pytensor", "arviz", "numba")
"""The packages whose versions the report records."""


def _pyplot():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def plot_annealing_trace(trace, ax=None):
    """Free energy per iteration, one colour per inverse temperature (Fig. 7-like view).

    Examples
    --------
    >>> from latentzoo.inference.aspect import annealed_em
    >>> result = annealed_em(AspectModel(2), load("toy"), betas=[0.8, 1.0], random_state=0)
    >>> plot_annealing_trace(result.trace).get_xlabel()
    'EM iteration (all temperatures)'
    """
    plt = _pyplot()
    if ax is None:
        _, ax = plt.subplots(figsize=(6, 3.5))
    step = np.arange(len(trace))
    for beta, part in trace.groupby("beta", sort=False):
        ax.plot(step[part.index], part["free_energy"], ".-", ms=2, label=f"beta={beta:.3g}")
    ax.set_xlabel("EM iteration (all temperatures)")
    ax.set_ylabel("free energy")
    ax.set_title("Annealed EM trace")
    ax.legend(fontsize="x-small", ncol=2)
    return ax


def plot_perplexity_vs_beta(selection_trace, ax=None):
    """Best validation perplexity reached at each inverse temperature of the tempered schedule.

    Examples
    --------
    >>> from latentzoo.inference.aspect import annealed_em
    >>> result = annealed_em(AspectModel(2), load("toy"), betas="auto", random_state=0)
    >>> plot_perplexity_vs_beta(result.selection_trace).get_xlabel()
    'inverse temperature beta'
    """
    plt = _pyplot()
    if ax is None:
        _, ax = plt.subplots(figsize=(5, 3.5))
    best = selection_trace.groupby("beta")["validation_perplexity"].min()
    ax.plot(best.index, best.to_numpy(), "o-")
    ax.set_xlabel("inverse temperature beta")
    ax.set_ylabel("validation perplexity (best at beta)")
    ax.set_title("Tempered EM: perplexity vs beta")
    ax.invert_xaxis()
    return ax


def plot_diagnostics(idata, var_names, title: str, out, stem: str) -> list[str]:
    """ArviZ trace and rank plots of ``var_names`` of a sampler run, saved as two PNG files.

    ``az.plot_trace`` (marginal density per chain, and each chain's draws in order: chains that
    overlap without trends have mixed) and ``az.plot_rank`` (histogram of each chain's ranks among
    all draws: uniform when the chains sample one distribution), with ``title`` (which run, which
    level, which data) above each figure and every axis labelled.

    Parameters
    ----------
    idata : arviz.InferenceData
        A sampler run with at least 2 draws per chain.
    var_names : list of str
        Posterior variables to plot (the label-invariant quantities).
    title : str
        Figure title: name the run, the validation level and the data.
    out : str or Path
        Folder the figures are written to.
    stem : str
        File name stem: ``{stem}_trace.png`` and ``{stem}_rank.png``.

    Returns
    -------
    list of str
        The two file names (relative to ``out``).

    Examples
    --------
    >>> import tempfile
    >>> import arviz as az
    >>> idata = az.from_dict(posterior={"loglik": np.random.default_rng(0).normal(size=(4, 50))})
    >>> plot_diagnostics(idata, ["loglik"], "demo", tempfile.mkdtemp(), "demo")
    ['demo_trace.png', 'demo_rank.png']
    """
    import arviz as az

    plt = _pyplot()
    out = Path(out)
    names = [name for name in var_names if name in idata.posterior]
    files = []
    with warnings.catch_warnings():
        # arviz 0.23 calls a matplotlib helper deprecated in matplotlib 3.11: a notice between
        # the two libraries (tests/test_arviz_files.py ALLOWED), not about these draws.
        warnings.filterwarnings("ignore", category=DeprecationWarning)
        axes = np.atleast_2d(az.plot_trace(idata, var_names=names, figsize=(11, 2.4 * len(names))))
        for row in axes:
            row[0].set_xlabel("value", fontsize="small")
            row[0].set_ylabel("density per chain", fontsize="small")
            row[1].set_xlabel("draw (after tuning)", fontsize="small")
            row[1].set_ylabel("value", fontsize="small")
        figure = axes.flat[0].figure
        figure.suptitle(textwrap.fill(f"Trace: {title}", 110), fontsize="medium")
        figure.tight_layout()
        figure.savefig(out / f"{stem}_trace.png", dpi=90)
        plt.close(figure)
        files.append(f"{stem}_trace.png")

        n_panels = sum(int(np.prod(idata.posterior[n].shape[2:])) for n in names)
        n_cols = min(n_panels, 3)
        n_rows = -(-n_panels // n_cols)
        figure, grid = plt.subplots(
            n_rows, n_cols, figsize=(3.7 * n_cols, 2.2 * n_rows + 0.8), squeeze=False
        )
        az.plot_rank(idata, var_names=names, ax=grid.ravel()[:n_panels])
        for ax in grid.ravel()[n_panels:]:
            ax.set_visible(False)
        for ax in grid.ravel()[:n_panels]:
            ax.set_title(ax.get_title().replace("\n", " "), fontsize="small")
            ax.set_xlabel("rank among all draws", fontsize="small")
            ax.set_ylabel("chain", fontsize="small")
            ax.tick_params(labelsize="x-small")
        figure.suptitle(textwrap.fill(f"Rank: {title}", 110), fontsize="medium")
        figure.tight_layout()
        figure.savefig(out / f"{stem}_rank.png", dpi=90)
        plt.close(figure)
        files.append(f"{stem}_rank.png")
    return files


def _git_commit(root: Path) -> str:
    """The commit of the checkout holding ``root`` (``+ local changes`` when dirty), or
    ``"unknown"`` (an installed copy, or no git)."""
    if not (root / ".git").exists():
        return "unknown"
    try:
        head = subprocess.run(
            ["git", "-C", str(root), "rev-parse", "HEAD"],
            capture_output=True, text=True, timeout=20, check=True,
        ).stdout.strip()  # fmt: skip
        dirty = subprocess.run(
            ["git", "-C", str(root), "status", "--porcelain", "--untracked-files=no"],
            capture_output=True, text=True, timeout=20, check=True,
        ).stdout.strip()  # fmt: skip
    except (OSError, subprocess.SubprocessError):
        return "unknown"
    return f"{head} + local changes" if dirty else head or "unknown"


def environment() -> dict:
    """Versions, commit, date and machine of this run, for the report.

    Returns
    -------
    dict
        Package name -> version (``"not installed"``) for :data:`PACKAGES` and Python, then
        ``commit`` (the git commit of the source checkout, or ``"unknown"``), ``date`` (UTC),
        ``machine`` (platform) and ``cpus`` (``os.cpu_count()``).

    Examples
    --------
    >>> info = environment()
    >>> sorted(set(PACKAGES) - set(info)), {"commit", "date", "machine", "cpus"} <= set(info)
    ([], True)
    """
    from importlib import metadata

    import latentzoo

    info = {}
    for name in PACKAGES:
        try:
            info[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            info[name] = "not installed"
    info["python"] = platform.python_version()
    info["commit"] = _git_commit(Path(latentzoo.__file__).resolve().parent.parent)
    info["date"] = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC")
    info["machine"] = f"{platform.platform()} ({platform.machine()})"
    info["cpus"] = os.cpu_count()
    return info


def environment_markdown(info: dict | None = None) -> str:
    """The report's "Environment" section: versions, commit, date and machine.

    Examples
    --------
    >>> "| numpy |" in environment_markdown()
    True
    """
    info = environment() if info is None else info
    lines = ["## Environment", "", "| item | value |", "|---|---|"]
    lines += [f"| {name} | {info[name]} |" for name in (*PACKAGES, "python")]
    lines += [
        f"| git commit | {info['commit']} |",
        f"| date | {info['date']} |",
        f"| machine | {info['machine']}, {info['cpus']} CPUs |",
    ]
    return "\n".join(lines) + "\n"


def _validation_markdown(comparison: Comparison, out: Path) -> str:
    """The validation section (``Comparison.to_markdown``) with its forest and SBC figures."""
    plt = _pyplot()
    body = comparison.to_markdown()
    if comparison.summary is not None and len(comparison.summary):
        ax = comparison.plot()
        ax.figure.tight_layout()
        ax.figure.savefig(out / "forest.png", dpi=110)
        plt.close(ax.figure)
        body += "\n![forest plot of the predictive probabilities p_dyad](forest.png)\n"
    sbc_result = getattr(comparison, "sbc", None)
    if sbc_result is not None:
        axes = np.ravel(sbc_result.plot())
        axes[0].figure.savefig(out / "sbc.png", dpi=110, bbox_inches="tight")
        plt.close(axes[0].figure)
        body += "\n" + sbc_result.to_markdown()
        body += "\n![SBC rank-ECDF differences with simultaneous 99% bands](sbc.png)\n"
    return body


def write_validation_report(comparison: Comparison, out, title="Validation") -> Path:
    """Write ``summary.md``, ``forest.png`` and (if SBC ran) ``sbc.png`` into folder ``out``.

    The summary ends with the environment (versions, commit, date, machine).

    Examples
    --------
    >>> import tempfile
    >>> write_validation_report(Comparison(), tempfile.mkdtemp()).name
    'summary.md'
    """
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    lines = [f"# {title}", ""]
    timings = getattr(comparison, "timings", {})
    if timings:
        lines += ["Seconds per level: " + ", ".join(f"{k} {v:.1f}" for k, v in timings.items()), ""]
    body = _validation_markdown(comparison, out)
    path = out / "summary.md"
    path.write_text("\n".join(lines) + body + "\n" + environment_markdown())
    return path


def _gibbs_perplexity(idata, test) -> float:
    """Held-out perplexity of the posterior predictive: ``exp(-sum_i lppd_i / n_test)``."""
    per_draw = idata.log_likelihood["counts"].to_numpy()
    per_draw = per_draw.reshape(-1, per_draw.shape[-1])
    model_free = AspectModel(1).log_multinomial_coefficient(test)
    lppd = logsumexp(per_draw - model_free, axis=0) - np.log(per_draw.shape[0])
    return float(np.exp(-lppd.sum() / test.total))


@dataclass(frozen=True)
class DemoSize:
    """The sizes of one demo: the headline fits on Reuters and the validation problems.

    Attributes
    ----------
    name : str
        ``"full"`` (``make demo``), ``"quick"`` (``--quick``) or ``"smoke"`` (the tests).
    rows, cols : int or None
        The first ``rows`` documents and the ``cols`` most frequent words of Reuters (None: all).
    n_components : int
        K of the headline fits.
    chains, draws, tune : int
        The headline collapsed Gibbs run.
    validation : Settings
        The validation levels' problem sizes (:data:`latentzoo.validation.FULL` or ``QUICK``).

    Examples
    --------
    >>> DEMO_SIZES["full"].n_components, DEMO_SIZES["full"].chains
    (20, 4)
    """

    name: str
    rows: int | None
    cols: int | None
    n_components: int
    chains: int
    draws: int
    tune: int
    validation: Settings


_SMOKE_VALIDATION = dataclasses.replace(
    QUICK, exact_chains=2000, gibbs_draws=300,
    real_subset=(15, 25), real_draws=100, mode_starts=4, sbc_sims=200,
)  # fmt: skip

DEMO_SIZES = {
    # 4 chains x 1000 draws after 1000 tuning sweeps of all of Reuters: about 80 s on one busy
    # core. Longer runs do not help: the chains settle in modes hundreds of nats of log-likelihood
    # apart and stay there (measured: R-hat 1.2-2.3 at tune 1000, as at tune 200), so the report
    # flags the run rather than hiding it; the validation's mode-matched level is the local check.
    "full": DemoSize("full", None, None, 20, 4, 1000, 1000, FULL),
    "quick": DemoSize("quick", 120, 800, 8, 4, 500, 500, QUICK),
    # The tests' run: every part of the report at the smallest sizes that still exercise it.
    "smoke": DemoSize("smoke", 60, 300, 4, 4, 200, 200, _SMOKE_VALIDATION),
}
"""The demo's sizes by name; ``run_demo(quick=...)`` picks ``"full"`` or ``"quick"``."""


def _cell(value, digits=3) -> str:
    """A table cell: ``-`` for a missing value, large numbers without exponent."""
    if value is None or not np.isfinite(value):
        return "-"
    return f"{value:.1f}" if abs(value) >= 10**digits else f"{value:.{digits}g}"


def _count_cell(value) -> str:
    return "-" if value is None or not np.isfinite(value) else f"{value:.0f}"


def _rhat_cell(value) -> str:
    return "-" if value is None or not np.isfinite(value) else f"{value:.3f}"


def _gibbs_diagnostics(idata) -> dict:
    """ArviZ diagnostics of the invariants of a Gibbs run: the summary table and its verdict."""
    import arviz as az

    names = [name for name in ("loglik", "p_dyad") if name in idata.posterior]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # constant components: NaN, shown "-"
        table = az.summary(idata, var_names=names, kind="all", round_to="none")
    loglik = table.loc["loglik"]
    chains = idata.posterior.sizes["chain"]
    max_rhat = float(table["r_hat"].max()) if chains > 1 else np.nan
    min_ess = float(table["ess_bulk"].min())
    seconds = float(idata.posterior.attrs.get("sampling_time", np.nan))
    chain_means = idata.posterior["loglik"].mean("draw").to_numpy()
    within_sd = float(idata.posterior["loglik"].std("draw").mean())
    verdict = mcmc.convergence(idata)
    converged = verdict.converged
    if converged:
        warning = ""
    elif verdict.status != "not converged":
        warning = verdict.headline()
    else:
        warning = (
            f"{verdict.headline()} on the label-invariant quantities over {chains} chains; "
            + (
                f"the chains' mean log-likelihoods span {np.ptp(chain_means):.0f} nats "
                f"({np.ptp(chain_means) / within_sd:.0f} within-chain sd): they sit in "
                "different modes, and its perplexity is that of those modes, not of the posterior"
                if np.ptp(chain_means) > 2 * within_sd
                else "the chains have not mixed yet: run longer chains before trusting its "
                "perplexity"
            )
        )
    return {
        "table": table, "loglik": loglik, "max_rhat": max_rhat, "min_ess": min_ess,
        "seconds": seconds, "chain_means": chain_means, "converged": converged,
        "warning": warning, "ess_per_second": min_ess / seconds if min_ess >= ESS_MIN else None,
    }  # fmt: skip


def _save(idata, path: Path) -> str:
    idata.to_netcdf(path)
    return path.name


def _reference_posteriors(comparison) -> dict:
    """``"level/method"`` -> InferenceData of the validation runs to save and plot.

    ``comparison.posteriors`` (every level's runs) when present, otherwise ``comparison.draws``
    (the last level's runs, named by method only).
    """
    posteriors = getattr(comparison, "posteriors", None) or {}
    wanted = {k: v for k, v in posteriors.items() if k in ("reference/pymc", "reference/gibbs")}
    if wanted:
        return wanted
    draws = getattr(comparison, "draws", None) or {}
    return {f"last level/{k}": v for k, v in draws.items() if k in ("pymc", "gibbs")}


HOW_TO_READ = """\
## How to read this report

- **Headline fits** (next section): three fits of the aspect model to 90% of the Reuters tokens,
  scored on the held-out 10% (held-out perplexity: lower is better). EM gives a point estimate
  (no R-hat or ESS: one draw); collapsed Gibbs gives draws, and its row shows R-hat (<= {rhat}
  over 4 chains means the chains agree), bulk and tail ESS and the MCSE of the log-likelihood. A
  run that fails is flagged in **bold**: then its perplexity is not the posterior's. ESS/s is
  shown only when the bulk ESS reaches {ess} (below that the ESS is itself noise).
- **What ran, on what data**: every fit and every validation level with its data, sizes, K,
  chains, draws and tuning. The validation does not refit K = {k} on all of Reuters (PyMC would
  take hours): each level checks the fast methods against the PyMC reference on its own small
  problem.
- **Validation against the PyMC reference**: the verdict and one row per check (pass, FAIL or
  inconclusive, with its numbers), then the tables behind them; definitions of every quantity
  are at the end of that section.
- **Figures**: trace plots (the chains' densities should overlap; their draws should look like
  noise around one level) and rank plots (each chain's histogram of ranks should be flat) of the
  label-invariant quantities (`loglik`, `p_dyad`), whose values do not depend on how topics are
  numbered.
- **Saved posteriors**: the runs as netCDF files next to this report, to open with ArviZ.
- **Environment**: versions, commit, date and machine of this run.
"""


def run_demo(
    out="report", quick=False, progressbar=True, n_components=None, random_state=0, size=None
):
    """The README's main job: fast methods on Reuters, the PyMC reference on small problems.

    Fits annealed EM (tempered schedule), plain EM and collapsed Gibbs (4 chains) to 90% of the
    Reuters tokens and reports held-out perplexity with the Gibbs run's ArviZ diagnostics (R-hat,
    bulk and tail ESS, MCSE of the invariants; a bold warning where it did not converge), runs
    :func:`latentzoo.validate` (exact, density, reference, optimality, mode-matched, calibrated)
    and writes into ``out``: ``summary.md``, PNG figures (annealing, ArviZ trace and rank plots,
    forest, SBC) and the posteriors as netCDF (``gibbs_reuters.nc``, ``annealed_em_reuters.nc``,
    ``plain_em_reuters.nc``, ``reference_pymc.nc``, ``reference_gibbs.nc``).

    Parameters
    ----------
    out : str or Path
        The report folder (created).
    quick : bool
        The ``"quick"`` sizes of :data:`DEMO_SIZES` (a Reuters subset, small validation
        problems); otherwise ``"full"``.
    progressbar : bool
        Progress bars and one line per step.
    n_components : int, optional
        K of the headline fits (default: the size's).
    random_state : int
        Seeds every fit.
    size : str or DemoSize, optional
        Overrides ``quick``: a name of :data:`DEMO_SIZES` (``"smoke"`` is the tests' run) or a
        :class:`DemoSize`.

    Returns
    -------
    comparison : Comparison
        The validation; ``comparison.headline_converged`` says whether the headline Gibbs run
        converged and ``comparison.headline_warning`` is the warning (empty when converged),
        ``comparison.report_files`` lists the files written.

    Examples
    --------
    >>> comparison = run_demo("report", quick=True)  # doctest: +SKIP
    """
    import latentzoo
    from latentzoo.inference.aspect import annealed_em, gibbs

    if size is None:
        size = "quick" if quick else "full"
    if isinstance(size, str):
        if size not in DEMO_SIZES:
            raise ValueError(f"size must be one of {sorted(DEMO_SIZES)}, got {size!r}")
        size = DEMO_SIZES[size]
    n_components = size.n_components if n_components is None else n_components
    plt = _pyplot()
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    start = time.perf_counter()
    seconds = {}
    corpus = load("reuters")
    data = corpus
    if size.rows is not None or size.cols is not None:
        rows = np.arange(min(size.rows or corpus.n_rows, corpus.n_rows))
        data = corpus.subset(rows=rows, cols=corpus.top_columns(size.cols or corpus.n_cols))
    data_label = (
        f"Reuters, all {data.n_rows} documents x {data.n_cols} words"
        if data is corpus
        else f"Reuters subset: first {data.n_rows} documents x {data.n_cols} most frequent words"
    )
    train, test = data.split(0.1, random_state=random_state)
    model = AspectModel(n_components)
    say = print if progressbar else (lambda *a, **k: None)

    say(f"annealed EM on {train} (K={n_components}, tempered schedule)")
    clock = time.perf_counter()
    em = annealed_em(model, train, betas="auto", random_state=random_state, progressbar=progressbar)
    em_plain = annealed_em(model, train, betas=[1.0], tol=1e-6, max_iter=300, random_state=0)
    seconds["EM fits"] = time.perf_counter() - clock

    say(f"collapsed Gibbs on the same data ({size.chains} chains x {size.draws}, tune {size.tune})")
    clock = time.perf_counter()
    # The parameter draws (theta, phi) are not kept: at K = 20 they are 4 x 1000 x 93,000 numbers;
    # the diagnostics use the label-invariant quantities and the held-out log_likelihood group.
    # Each method at its own default priors, as latentzoo.fit uses them: the MAP priors suit EM,
    # the sparse ones the sampler (AspectModel.for_method).
    idata = gibbs(
        model.for_method("gibbs"), train, chains=size.chains, draws=size.draws, tune=size.tune,
        random_state=random_state, progressbar=progressbar, test=test, keep_params=False,
    )  # fmt: skip
    seconds["Gibbs run"] = time.perf_counter() - clock
    diag = _gibbs_diagnostics(idata)
    gibbs_title = (
        f"headline collapsed Gibbs, {data_label} (90% train), K={n_components}, "
        f"{size.chains} chains x {size.draws} draws after {size.tune} tuning"
    )

    clock = time.perf_counter()
    fig, axes = plt.subplots(1, 2, figsize=(11, 3.8))
    plot_annealing_trace(em.trace, axes[0])
    plot_perplexity_vs_beta(em.selection_trace, axes[1])
    fig.suptitle(f"Annealed EM on {data_label} (90% train), K={n_components}", fontsize="medium")
    fig.tight_layout()
    fig.savefig(out / "annealing_trace.png", dpi=110)
    plt.close(fig)
    gibbs_figures = plot_diagnostics(idata, ["loglik", "p_dyad"], gibbs_title, out, "gibbs_reuters")
    seconds["figures"] = time.perf_counter() - clock

    say("validation against the PyMC reference")
    clock = time.perf_counter()
    comparison = latentzoo.validate(
        # By name, so that the mode-matched level names its data ('reuters').
        model, data="reuters", random_state=random_state, progressbar=progressbar,
        settings=size.validation,
    )  # fmt: skip
    seconds["validation"] = time.perf_counter() - clock

    # The posteriors beside the report, and the reference runs' own diagnostics figures.
    saved = {
        _save(idata, out / "gibbs_reuters.nc"): (
            f"headline collapsed Gibbs ({size.chains} x {size.draws}): `loglik`, `p_dyad`; "
            "`log_likelihood` of the held-out tokens per document"
        ),
        _save(em.to_inference_data(), out / "annealed_em_reuters.nc"): (
            "annealed EM point estimate (`theta`, `phi` in the group `point_estimate`)"
        ),
        _save(em_plain.to_inference_data(), out / "plain_em_reuters.nc"): (
            "plain EM point estimate (`theta`, `phi` in the group `point_estimate`)"
        ),
    }
    reference_figures = []
    problems = dict(getattr(comparison, "problems", {}) or {})
    for key, run in _reference_posteriors(comparison).items():
        level, method = key.split("/", 1)
        stem = f"{level.replace(' ', '_').replace('-', '_')}_{method}"
        where = problems.get(level, "the validation's last level").split(";")[0]
        saved[_save(run, out / f"{stem}.nc")] = (
            f"{method} posterior of the validation's {level} level, with `log_likelihood` "
            "(data and settings: 'What ran, on what data'); the two reference files fit the "
            "same data, so `az.compare` takes them"
            if level == "reference"
            else f"{method} posterior of the validation's {level} level"
        )
        title = f"{method}, {level} level, on {where}"
        reference_figures.append(
            (key, plot_diagnostics(run, ["loglik", "p_dyad"], title, out, stem))
        )  # fmt: skip
    comparison.headline_converged = diag["converged"]
    comparison.headline_warning = diag["warning"]

    total = time.perf_counter() - start
    seconds["total"] = total
    lines = [
        f"# latentzoo demo: the aspect model on Reuters, K = {n_components}",
        "",
        HOW_TO_READ.format(rhat=RHAT_MAX, ess=ESS_MIN, k=n_components),
        *_headline_markdown(size, data_label, train, test, model, em, em_plain, idata, diag),
        *_problems_markdown(size, data_label, train, model, em, em_plain, problems),
        "## Figures of the headline Gibbs run",
        "",
        f"![trace plot: {gibbs_title}]({gibbs_figures[0]})",
        "",
        f"![rank plot: {gibbs_title}]({gibbs_figures[1]})",
        "",
        *_saved_markdown(saved),
        environment_markdown(),
        "Seconds: " + ", ".join(f"{k} {v:.0f}" for k, v in seconds.items()) + " (validation: "
        + ", ".join(f"{k} {v:.0f}" for k, v in getattr(comparison, "timings", {}).items()) + ").",
        "",
        "## Validation against the PyMC reference",
        "",
    ]  # fmt: skip
    body = _validation_markdown(comparison, out)
    # One level down: the validation is a section of this report.
    body = re.sub(r"(?m)^(#{1,5}) ", r"#\1 ", body)
    if reference_figures:
        body += "\n### Trace and rank plots of the validation runs\n"
        for key, files in reference_figures:
            body += f"\n{key}:\n\n![trace plot of {key}]({files[0]})\n\n"
            body += f"![rank plot of {key}]({files[1]})\n"
    path = out / "summary.md"
    path.write_text("\n".join(lines) + body)
    comparison.report_files = sorted(
        [path.name, "annealing_trace.png", *gibbs_figures, *saved]
        + [f for _, files in reference_figures for f in files]
    )
    verdict = comparison.verdict()
    if diag["warning"]:
        verdict += f"; WARNING: headline Gibbs run {diag['warning']}"
    say(f"report written to {path}: {verdict}")
    return comparison


def _headline_markdown(size, data_label, train, test, model, em, em_plain, idata, diag):
    """The headline table (three fits on Reuters) and the Gibbs run's diagnostics."""
    loglik = diag["loglik"]
    flag = f"**{diag['warning']}**" if diag["warning"] else f"converged (R-hat <= {RHAT_MAX})"
    if diag["ess_per_second"] is None:
        rate = f"- (bulk ESS {diag['min_ess']:.0f} < {ESS_MIN}: no meaningful rate)"
    else:
        rate = f"{diag['ess_per_second']:.3g}"
    point = "- (point estimate)"
    lines = [
        "## Headline fits",
        "",
        f"Data: {data_label}, {train.total + test.total} tokens; 10% of the tokens held out by "
        f"binomial thinning ({train.total} train, {test.total} test). K = {model.n_components}, "
        f"priors: alpha = {model.alpha}, eta = {model.eta} for the EM fits (the MAP defaults), "
        f"alpha = {model.for_method('gibbs').alpha}, eta = {model.for_method('gibbs').eta} for "
        "Gibbs (the sampling defaults, as `latentzoo.fit` chooses them); the validation below "
        "runs at the MAP priors.",
        "",
        "| method | held-out perplexity | seconds | R-hat (loglik) | bulk ESS (loglik) | "
        "tail ESS (loglik) | MCSE (loglik) | ESS/s (min bulk ESS over invariants) | notes |",
        "|---|---|---|---|---|---|---|---|---|",
        f"| annealed EM (tempered, beta* = {em.betas[-1]:.3g}) | {em.perplexity(test):.1f} | "
        f"{em.seconds:.2f} | {point} | - | - | - | - | {len(em.trace)} iterations over "
        f"{len(set(em.trace['beta']))} temperatures |",
        f"| plain EM (beta = 1, to convergence) | {em_plain.perplexity(test):.1f} | "
        f"{em_plain.seconds:.2f} | {point} | - | - | - | - | converged: {em_plain.converged} "
        f"after {len(em_plain.trace)} iterations |",
        f"| collapsed Gibbs ({size.chains} x {size.draws}, tune {size.tune}) | "
        f"{_gibbs_perplexity(idata, test):.1f} | {diag['seconds']:.2f} | "
        f"{_rhat_cell(loglik['r_hat'])} | {_count_cell(loglik['ess_bulk'])} | "
        f"{_count_cell(loglik['ess_tail'])} | {_cell(loglik['mcse_mean'])} | {rate} | {flag} |",
        "",
        "![annealing trace and perplexity vs beta](annealing_trace.png)",
        "",
        "### Diagnostics of the collapsed Gibbs run",
        "",
        f"{size.chains} chains from random starts, {size.tune} tuning sweeps discarded, then "
        f"{size.draws} draws each; max R-hat {_rhat_cell(diag['max_rhat'])} and min bulk ESS "
        f"{diag['min_ess']:.0f} over the label-invariant quantities; "
        + (f"**{diag['warning']}**." if diag["warning"] else "converged.")
        + " Per-chain mean log-likelihood: "
        + ", ".join(f"{m:.1f}" for m in diag["chain_means"])
        + f" (spread {np.ptp(diag['chain_means']):.1f} nats). Sampling seconds exclude "
        "compilation. EM free energy never increases at a fixed temperature (checked by the "
        "tests).",
        "",
        "| quantity | mean | sd | MCSE (mean) | bulk ESS | tail ESS | R-hat |",
        "|---|---|---|---|---|---|---|",
    ]  # fmt: skip
    for name, row in diag["table"].iterrows():
        lines.append(
            f"| {name} | {_cell(row['mean'], 4)} | {_cell(row['sd'])} | "
            f"{_cell(row['mcse_mean'], 2)} | {_count_cell(row['ess_bulk'])} | "
            f"{_count_cell(row['ess_tail'])} | "
            f"{_rhat_cell(row['r_hat'])} |"
        )
    lines.append("")
    return lines


def _problems_markdown(size, data_label, train, model, em, em_plain, problems):
    """One row per fit and per validation level: data, sizes, K, chains, draws, tuning."""
    k = model.n_components
    on = f"{data_label}, 90% of the tokens ({train.total})"
    lines = [
        "## What ran, on what data",
        "",
        "| run | data, sizes, K and settings |",
        "|---|---|",
        f"| headline annealed EM | {on}; K={k}; tempered schedule, {len(em.trace)} iterations, "
        f"final beta {em.betas[-1]:.3g} |",
        f"| headline plain EM | {on}; K={k}; beta = 1, tol 1e-6, at most 300 iterations |",
        f"| headline collapsed Gibbs | {on}; K={k}; {size.chains} chains x {size.draws} draws "
        f"after {size.tune} tuning sweeps, thin 1 |",
    ]
    lines += [f"| validation: {level} | {problem} |" for level, problem in problems.items()]
    lines.append("")
    return lines


def _saved_markdown(saved: dict) -> list[str]:
    """The saved netCDF files and how to open them."""
    lines = ["## Saved posteriors (netCDF, next to this report)", "", "| file | content |"]
    lines += ["|---|---|", *(f"| `{name}` | {what} |" for name, what in saved.items())]
    lines += [
        "",
        "How to open (from this folder; EM files hold an estimate, not draws: "
        "`latentzoo.load_result(path)`, or `idata.point_estimate` after `az.from_netcdf`):",
        "",
        "```python",
        'import arviz as az; idata = az.from_netcdf("gibbs_reuters.nc")',
        'print(az.summary(idata, var_names=["loglik", "p_dyad"]))',
        "```",
        "",
        "`az.compare` takes `reference_gibbs.nc` and `reference_pymc.nc` (the same data). Its "
        "PSIS-LOO leaves out one whole document, whose `theta` is then informed by nothing but "
        "the prior, so ArviZ warns of Pareto k > 0.7 for most documents: compare the methods by "
        "the held-out log predictive density of the validation section instead.",
        "",
    ]
    return lines
