"""Simulation-based calibration (SBC) of a sampler, with the power of its test stated.

SBC (Talts, Betancourt, Simpson, Vehtari & Gelman 2018, "Validating Bayesian inference algorithms
with simulation-based calibration") draws ``(data, truth)`` from the model's own simulator, runs the
sampler on ``data`` and records the rank of each statistic at the truth among the posterior draws:
the ranks are uniform exactly when the sampler draws from the posterior.

Uniformity is tested per statistic by two tests, Bonferroni-corrected over both and over the
statistics: a chi-square over ``bins`` equal bins (the shape: over- or under-dispersed draws) and a
z-test of the mean rank (a location bias, which the chi-square detects poorly: at 100 simulations a
0.25-sd bias is found 2% of the time by the chi-square alone). :func:`detection_power` states, by
simulating the same test, how likely a bias of a given size is to be found at the problem's
numbers of simulations, draws, bins and statistics. The figure draws the rank-ECDF differences with
simultaneous bands (Säilynoja, Bürkner & Vehtari 2022, "Graphical test for discrete uniformity and
its applications in goodness-of-fit evaluation and multiple sample comparison").

A sampler returns ``InferenceData`` or a plain dict of arrays shaped ``(chains, draws, ...)``, such
as :func:`~latentzoo.inference.mcmc.run_chains` gives; :func:`production_sampler` runs a family's
Gibbs sampler that way, through its ``init``/``step``/``draw``, without building ``InferenceData``.
"""

from __future__ import annotations

import math
import textwrap
from dataclasses import dataclass, field
from functools import lru_cache

import numpy as np
import pandas as pd
from scipy import stats

from latentzoo.data.checks import as_rng
from latentzoo.inference.checks import Check
from latentzoo.inference.progress import progress_bar
from latentzoo.models._checks import check_integer

__all__ = [
    "SBCResult",
    "sbc",
    "rank_tests",
    "detection_power",
    "ecdf_band",
    "production_sampler",
    "alternating",
]

BIASES = (0.25, 0.5)
"""Location biases, in posterior sds, whose detection power every result states."""
POWER_REPLICATES = 4000
"""Simulated SBC runs per power estimate (Monte Carlo standard error at most 0.008)."""
BAND_REPLICATES = 10_000
"""Simulated uniform rank sets behind a simultaneous ECDF band."""
MAX_PANELS = 15
"""The figure shows at most this many statistics (the worst by p-value)."""
DEGENERATE_REASON = (
    "in every simulation all posterior draws equalled the true value, so its rank is pure "
    "tie-breaking noise and tests nothing"
)
"""Why a statistic is excluded from the SBC test (see :attr:`SBCResult.degenerate`)."""
_SEED = 20220101  # the power and band simulations are fixed, so a result is reproducible
_BLOCK = 4_000_000  # ranks simulated at once (memory bound of the power simulation)


# ------------------------------------------------------------------------------- the test
def rank_tests(ranks, n_draws: int, bins: int = 10) -> pd.DataFrame:
    """The two uniformity tests of SBC ranks, per column, and their Bonferroni combination.

    Parameters
    ----------
    ranks : (n_sims, n_statistics) or (n_sims,) integers in ``0..n_draws``
    n_draws : int
        Posterior draws per simulation (ranks take ``n_draws + 1`` values).
    bins : int
        Equal bins of the chi-square; ``n_draws + 1`` must be a multiple of ``bins``.

    Returns
    -------
    pandas.DataFrame, one row per column of ``ranks``
        ``chi2`` and ``p_shape`` (chi-square on ``bins`` bins, ``bins - 1`` dof); ``mean_rank``
        (fractional, 0.5 when calibrated), ``z_bias`` and ``p_bias`` (two-sided z-test of the mean
        rank, whose null variance is that of the discrete uniform); ``p``, the smaller of the two
        p-values doubled (capped at 1): Bonferroni over both tests.

    Examples
    --------
    >>> ranks = np.random.default_rng(0).integers(0, 100, size=(1000, 2))
    >>> table = rank_tests(ranks, n_draws=99)
    >>> list(table.columns)
    ['chi2', 'p_shape', 'mean_rank', 'z_bias', 'p_bias', 'p']
    >>> bool(rank_tests(np.arange(1000) % 60, n_draws=99)["p_bias"].iloc[0] < 1e-10)
    True
    """
    check_integer("n_draws", n_draws)
    check_integer("bins", bins, low=2)
    if (n_draws + 1) % bins:
        raise ValueError(f"n_draws + 1 = {n_draws + 1} must be a multiple of bins = {bins}")
    ranks = np.asarray(ranks)
    if ranks.ndim == 1:
        ranks = ranks[:, None]
    if ranks.size and (ranks.min() < 0 or ranks.max() > n_draws):
        raise ValueError(f"ranks must lie in 0..n_draws = {n_draws}")
    chi2, p_shape, mean, z, p_bias = _tests(ranks.T, n_draws, bins)
    p = np.minimum(1.0, 2.0 * np.minimum(p_shape, p_bias))
    return pd.DataFrame(
        {"chi2": chi2, "p_shape": p_shape, "mean_rank": mean, "z_bias": z, "p_bias": p_bias, "p": p}
    )


def _tests(ranks, n_draws, bins):
    """Both tests on ``ranks`` (n_tests, n_sims): one row per independent test, vectorised."""
    n_tests, n_sims = ranks.shape
    cells = ranks * bins // (n_draws + 1) + bins * np.arange(n_tests)[:, None]
    counts = np.bincount(cells.ravel(), minlength=n_tests * bins).reshape(n_tests, bins)
    expected = n_sims / bins
    chi2 = ((counts - expected) ** 2).sum(axis=1) / expected
    p_shape = stats.chi2.sf(chi2, bins - 1)
    # The discrete uniform on 0..n_draws: mean n_draws / 2, variance ((n_draws + 1)^2 - 1) / 12.
    mean = ranks.mean(axis=1)
    sd = math.sqrt(((n_draws + 1) ** 2 - 1) / 12.0 / n_sims)
    z = (mean - n_draws / 2.0) / sd
    p_bias = 2.0 * stats.norm.sf(np.abs(z))
    return chi2, p_shape, (mean + 0.5) / (n_draws + 1), z, p_bias


def detection_power(
    bias: float,
    n_sims: int,
    *,
    n_draws: int = 99,
    bins: int = 10,
    alpha: float = 1e-3,
    n_statistics: int = 1,
    replicates: int = POWER_REPLICATES,
) -> float:
    """Probability that the SBC test of :func:`sbc` finds a location bias in one statistic.

    The biased statistic is continuous with truth ``~ N(0, 1)`` and draws ``~ N(bias, 1)`` (a sampler
    whose posterior is shifted by ``bias`` posterior sds); its rank among ``n_draws`` independent
    draws is then ``Binomial(n_draws, Phi(truth - bias))``. ``replicates`` SBC runs of ``n_sims``
    simulations are simulated (vectorised, from a fixed seed, cached per setting) and the fraction
    in which :func:`rank_tests` gives ``p < alpha / n_statistics`` is returned: the test that
    :func:`sbc` applies to each of a family's ``n_statistics`` statistics.

    Returns
    -------
    float
        The rejection rate; its Monte Carlo standard error is ``sqrt(p (1 - p) / replicates)``.

    Examples
    --------
    >>> round(detection_power(0.25, 1000, n_statistics=20), 2)
    1.0
    >>> detection_power(0.25, 100, replicates=1000) < 0.2
    True
    """
    check_integer("n_sims", n_sims)
    check_integer("n_draws", n_draws)
    check_integer("bins", bins, low=2)
    check_integer("n_statistics", n_statistics)
    check_integer("replicates", replicates)
    if not 0 < alpha < 1:
        raise ValueError(f"alpha must lie in (0, 1), got {alpha!r}")
    if not np.isfinite(bias):
        raise ValueError(f"bias must be finite, got {bias!r}")
    if (n_draws + 1) % bins:
        raise ValueError(f"n_draws + 1 = {n_draws + 1} must be a multiple of bins = {bins}")
    level = alpha / n_statistics
    return _rejection_rate(float(bias), n_sims, n_draws, bins, float(level), replicates)


@lru_cache(maxsize=64)
def _rejection_rate(bias, n_sims, n_draws, bins, level, replicates):
    rng = np.random.default_rng(_SEED)
    block = max(1, _BLOCK // n_sims)
    rejected = 0
    for start in range(0, replicates, block):
        size = min(block, replicates - start)
        truth = rng.standard_normal((size, n_sims))
        ranks = rng.binomial(n_draws, stats.norm.cdf(truth - bias))
        _, p_shape, _, _, p_bias = _tests(ranks, n_draws, bins)
        rejected += int(np.sum(2.0 * np.minimum(p_shape, p_bias) < level))
    return rejected / replicates


# ---------------------------------------------------------------------------- the band
def ecdf_band(n_sims: int, n_draws: int, alpha: float = 0.01, replicates: int = BAND_REPLICATES):
    """Simultaneous ``1 - alpha`` band of the ECDF of ``n_sims`` uniform ranks in ``0..n_draws``.

    Säilynoja, Bürkner & Vehtari (2022): at the points ``z_i = i / (n_draws + 1)``, ``i = 1..n_draws``,
    the number of ranks below ``i`` is ``Binomial(n_sims, z_i)`` under uniformity; the pointwise
    level ``gamma`` is chosen by simulating uniform rank sets (vectorised, fixed seed, cached) so
    that the whole ECDF stays inside the pointwise central ``1 - gamma`` intervals with probability
    ``1 - alpha``.

    Returns
    -------
    z : (n_draws,) evaluation points (fractional ranks)
    lower, upper : (n_draws,) band of the ECDF at ``z`` (subtract ``z`` for the difference plot)

    Examples
    --------
    >>> z, lower, upper = ecdf_band(200, 19)
    >>> z.shape, bool(np.all(lower <= z)), bool(np.all(z <= upper))
    ((19,), True, True)
    """
    check_integer("n_sims", n_sims)
    check_integer("n_draws", n_draws)
    check_integer("replicates", replicates)
    if not 0 < alpha < 1:
        raise ValueError(f"alpha must lie in (0, 1), got {alpha!r}")
    gamma = _band_gamma(n_sims, n_draws, float(alpha), replicates)
    z = np.arange(1, n_draws + 1) / (n_draws + 1)
    lower = stats.binom.ppf(gamma / 2, n_sims, z) / n_sims
    upper = stats.binom.ppf(1 - gamma / 2, n_sims, z) / n_sims
    return z, lower, upper


@lru_cache(maxsize=16)
def _band_gamma(n_sims, n_draws, alpha, replicates):
    rng = np.random.default_rng(_SEED)
    levels = n_draws + 1
    z = np.arange(1, levels) / levels
    block = max(1, _BLOCK // levels)
    smallest = []
    for start in range(0, replicates, block):
        size = min(block, replicates - start)
        below = rng.multinomial(n_sims, np.full(levels, 1.0 / levels), size=size)
        below = below.cumsum(axis=1)[:, :-1]  # ranks below i, for i = 1..n_draws
        tail = np.minimum(stats.binom.cdf(below, n_sims, z), stats.binom.sf(below - 1, n_sims, z))
        smallest.append(np.minimum(2.0 * tail.min(axis=1), 1.0))
    return float(np.quantile(np.concatenate(smallest), alpha))


# ---------------------------------------------------------------------------- the result
@dataclass
class SBCResult:
    """Ranks of the true value among posterior draws, per statistic, over simulations.

    Attributes
    ----------
    ranks : pandas.DataFrame (simulation, statistic)
    n_draws : int
    p_values : dict
        Statistic -> p-value of its test (both tests of :func:`rank_tests`, Bonferroni over both).
    check : Check
        The verdict: every p-value above ``alpha`` over the number of statistics.
    bins : int
    alpha : float
    tests : pandas.DataFrame
        Per statistic, the table of :func:`rank_tests`.
    power : dict
        Bias in posterior sds -> probability that the test finds it in one statistic
        (:func:`detection_power` at this result's sizes).
    problem : str
        What the simulations were (level, data sizes, K, sampler settings), for titles.
    degenerate : list of str
        Statistics excluded from the test: in every simulation all draws equalled the truth, so
        the rank is pure tie-breaking noise (:data:`DEGENERATE_REASON`).
    """

    ranks: pd.DataFrame
    n_draws: int
    p_values: dict
    check: Check
    bins: int = 10
    alpha: float = 1e-3
    tests: pd.DataFrame | None = None
    power: dict = field(default_factory=dict)
    problem: str = ""
    degenerate: list = field(default_factory=list)

    @property
    def n_sims(self) -> int:
        """The number of simulations."""
        return len(self.ranks)

    def merge_into(self, comparison, level: str) -> None:
        """Add this calibration to a validation's :class:`~latentzoo.inference.compare.Comparison`
        (in place): its verdict, the result itself as ``comparison.sbc``, and its problem under
        ``level``; :meth:`Comparison.merge_into` is the same question asked of a comparison."""
        comparison.checks.append(self.check)
        comparison.sbc = self
        if self.problem:
            comparison.problems[level] = self.problem

    def to_markdown(self, worst: int = 10) -> str:
        """A report section: the test, its power, and the ``worst`` statistics by p-value."""
        m = len(self.p_values)
        lines = [
            "## Simulation-based calibration",
            "",
            f"{self.n_sims} simulations, {self.n_draws} posterior draws each, {m} statistics. "
            f"Per statistic: chi-square on {self.bins} rank bins (shape) and z-test of the mean "
            f"rank (bias), Bonferroni over both tests and all statistics at {self.alpha:g}.",
            "",
            f"**{'pass' if self.check.passed else 'FAIL'}**: {self.check.detail}.",
            "",
            "| bias (posterior sd) | probability of detection in one statistic |",
            "|---|---|",
        ]
        lines += [f"| {bias:g} | {value:.3f} |" for bias, value in self.power.items()]
        if self.degenerate:
            lines += [
                "",
                f"degenerate: excluded ({len(self.degenerate)} statistics, not counted in the "
                f"Bonferroni correction): {', '.join(self.degenerate)}. Reason: "
                f"{DEGENERATE_REASON}.",
            ]
        if self.tests is not None and len(self.tests):
            table = self.tests.sort_values("p").head(worst)
            lines += ["", f"Worst {len(table)} statistics by p-value:", ""]
            lines += ["| statistic | chi2 | p shape | mean rank | z bias | p bias | p |"]
            lines += ["|---|---|---|---|---|---|---|"]
            for name, row in table.iterrows():
                lines.append(
                    f"| {name} | {row.chi2:.3g} | {row.p_shape:.3g} | {row.mean_rank:.3f} "
                    f"| {row.z_bias:.2f} | {row.p_bias:.3g} | {row.p:.3g} |"
                )
        return "\n".join(lines) + "\n"

    def plot(self, band_alpha: float = 0.01, max_panels: int = MAX_PANELS, axes=None):
        """Rank-ECDF difference plots with simultaneous ``1 - band_alpha`` bands, one per statistic.

        Each panel shows ``ECDF(z) - z`` of the fractional ranks and the band of
        :func:`ecdf_band`; a calibrated statistic stays inside it, a biased one bulges up
        (draws too high: the truth ranks low) or down, an over-confident one makes an S. Panels
        sit in a grid of at most 5 columns; with more than ``max_panels`` statistics the worst
        ``max_panels`` by p-value are shown, as the figure title says. Failing statistics are red.

        Returns
        -------
        numpy.ndarray of matplotlib Axes
            The panels drawn, in order (``axes[0].figure`` is the figure).
        """
        import matplotlib.pyplot as plt

        check_integer("max_panels", max_panels)
        if not 0 < band_alpha < 1:
            raise ValueError(f"band_alpha must lie in (0, 1), got {band_alpha!r}")
        columns = list(self.ranks.columns)
        if not columns:
            raise ValueError("nothing to plot: this SBC result has no statistics")
        shown = columns
        if len(columns) > max_panels:
            order = sorted(columns, key=lambda c: self.p_values[c])
            shown = order[:max_panels]
        n_cols = min(5, len(shown))
        n_rows = math.ceil(len(shown) / n_cols)
        if axes is None:
            fig, grid = plt.subplots(
                n_rows, n_cols, figsize=(2.7 * n_cols, 2.3 * n_rows + 0.7), squeeze=False,
                sharex=True, sharey=True,
            )  # fmt: skip
            grid = grid.ravel()
            for extra in grid[len(shown) :]:
                extra.set_visible(False)
        else:
            grid = np.ravel(axes)
            if len(grid) < len(shown):
                raise ValueError(f"axes has {len(grid)} panels, {len(shown)} are needed")
            fig = grid[0].figure
        n, levels = self.n_sims, self.n_draws + 1
        z, lower, upper = ecdf_band(n, self.n_draws, band_alpha)
        z_full = np.concatenate([[0.0], z, [1.0]])
        low = np.concatenate([[0.0], lower - z, [0.0]])
        high = np.concatenate([[0.0], upper - z, [0.0]])
        threshold = self.alpha / len(columns)
        for index, (ax, column) in enumerate(zip(grid, shown, strict=False)):
            below = np.bincount(self.ranks[column].to_numpy(), minlength=levels).cumsum()
            difference = np.concatenate([[0.0], below[:-1] / n - z, [0.0]])
            ax.fill_between(z_full, low, high, step="post", color="grey", alpha=0.3, lw=0)
            failed = self.p_values[column] <= threshold
            ax.step(z_full, difference, where="post", color="C3" if failed else "C0", lw=1)
            ax.axhline(0.0, color="black", lw=0.5)
            ax.set_title(column, fontsize="small")
            ax.text(
                0.97, 0.05, f"p = {self.p_values[column]:.2g}", transform=ax.transAxes,
                ha="right", va="bottom", fontsize="x-small",
            )  # fmt: skip
            if index % n_cols == 0:
                ax.set_ylabel("ECDF difference")
            if index >= len(shown) - n_cols:
                ax.set_xlabel("fractional rank")
        title = (
            f"SBC rank ECDF - uniform: {n} simulations x {self.n_draws} draws; "
            f"grey: simultaneous {100 * (1 - band_alpha):g}% band"
        )
        if self.problem:
            # The level and its data, wrapped to the figure's width.
            width = max(60, int(18 * n_cols))
            title = "\n".join(textwrap.wrap(f"calibrated level: {self.problem}", width)) + (
                "\n" + title
            )
        if len(shown) < len(columns):
            title += f"\nworst {len(shown)} of {len(columns)} statistics by p-value"
        fig.suptitle(title, fontsize="medium")
        if axes is None:
            fig.tight_layout()
        return np.asarray(grid[: len(shown)])


# ------------------------------------------------------------------------------- SBC
def _posterior_arrays(output) -> dict:
    """The sampler's draws as a dict of arrays ``(chains, draws, ...)``."""
    import arviz as az

    if isinstance(output, az.InferenceData):
        return {name: value.to_numpy() for name, value in output.posterior.data_vars.items()}
    if isinstance(output, dict):
        return {name: np.asarray(value) for name, value in output.items()}
    raise TypeError(
        "sampler must return InferenceData or a dict of arrays (chains, draws, ...), "
        f"got {type(output).__name__}"
    )


def _invariants_per_draw(model, data, draws: dict, names) -> dict:
    """``model.invariants`` at every draw, for the statistics ``names`` the sampler did not give."""
    params = tuple(getattr(model, "param_names", ()))
    absent = [p for p in params if p not in draws]
    if not params or absent:
        raise ValueError(
            f"the sampler's draws lack the statistics {sorted(names)} and the parameters "
            f"{absent or 'param_names'} needed to compute them with model.invariants"
        )
    shape = np.shape(draws[params[0]])[:2]
    flat = {p: np.asarray(draws[p]).reshape(-1, *np.shape(draws[p])[2:]) for p in params}
    out: dict[str, list] = {name: [] for name in names}
    # A loop over draws (at most a few hundred per simulation), each vectorised over the data.
    for d in range(len(flat[params[0]])):
        values = model.invariants({p: flat[p][d] for p in params}, data)
        for name in names:
            out[name].append(np.asarray(values[name]))
    return {name: np.stack(v).reshape(shape + np.shape(v[0])) for name, v in out.items()}


def sbc(model, sampler, n_sims: int = 1000, *, random_state=None, n_draws: int = 99,
        bins: int = 10, alpha: float = 1e-3, progressbar: bool = False, statistics=None,
        **sizes) -> SBCResult:  # fmt: skip
    """Simulation-based calibration of a sampler (Talts et al. 2018) on the model's own simulator.

    For each simulation: draw ``(data, truth)`` from ``model.simulate(rng, **sizes)`` (a draw from the
    prior), run ``sampler(data, rng, n_draws)`` and record the rank of each invariant at the truth
    among the first ``n_draws`` posterior draws (thin the chain inside ``sampler`` so the draws are
    close to independent). Ties (discrete statistics such as 0/1 co-assignments or cluster counts)
    are broken uniformly at random. Ranks are uniform on ``0..n_draws`` exactly when the sampler is
    calibrated; each statistic is tested by :func:`rank_tests` (chi-square on ``bins`` bins for the
    shape, z-test of the mean rank for a bias), Bonferroni over both tests and over the statistics,
    and the result states the test's :func:`detection_power` for biases of 0.25 and 0.5 posterior sd.

    Parameters
    ----------
    model
        ``simulate(rng, **sizes) -> (data, truth)`` and ``invariants(params, data) -> dict``; with
        ``param_names`` when the sampler's draws lack some invariant.
    sampler : callable
        ``sampler(data, rng, n_draws)`` returning ``InferenceData`` or a dict of arrays shaped
        ``(chains, draws, ...)`` (as :func:`~latentzoo.inference.mcmc.run_chains` gives) holding the
        ranked invariants; an invariant it lacks is computed per draw with ``model.invariants``
        from the parameters (``model.param_names``) in the draws.
    n_sims : int
    random_state : int, Generator or None
        Everything (simulations, sampler, tie-breaks) is drawn from it: same seed, same ranks.
    n_draws, bins : int
        ``n_draws + 1`` must be a multiple of ``bins``.
    alpha : float
        Family-wise level of the test over all statistics.
    progressbar : bool
    statistics : iterable of str, optional
        Rank only these invariants (default: all), for models whose truth defines only some of
        them exactly.
    **sizes
        Keywords of ``model.simulate``.

    Returns
    -------
    SBCResult

    Examples
    --------
    >>> class NormalMean:  # mu ~ N(0, 1), y_1..y_4 | mu ~ N(mu, 1)
    ...     param_names = ("mu",)
    ...     def simulate(self, rng, n=4):
    ...         mu = rng.normal()
    ...         return rng.normal(mu, 1.0, size=n), {"mu": mu}
    ...     def invariants(self, params, data):
    ...         return {"mu": np.asarray(params["mu"])}
    >>> def exact(y, rng, n_draws):  # the conjugate posterior N(sum(y) / (n + 1), 1 / (n + 1))
    ...     sd = (1.0 / (len(y) + 1)) ** 0.5
    ...     return {"mu": rng.normal(y.sum() * sd**2, sd, size=(1, n_draws))}
    >>> result = sbc(NormalMean(), exact, 300, random_state=0)
    >>> result.check.passed, result.ranks.shape, sorted(result.power)
    (True, (300, 1), [0.25, 0.5])
    """
    check_integer("n_sims", n_sims)
    check_integer("n_draws", n_draws)
    check_integer("bins", bins, low=2)
    if (n_draws + 1) % bins:
        raise ValueError(f"n_draws + 1 = {n_draws + 1} must be a multiple of bins = {bins}")
    if not 0 < alpha < 1:
        raise ValueError(f"alpha must lie in (0, 1), got {alpha!r}")
    if statistics is not None:
        statistics = tuple(statistics)
    rng = as_rng(random_state)
    collected: dict[str, list[np.ndarray]] = {}
    tied: dict[str, list[np.ndarray]] = {}  # per simulation: every draw equals the truth
    for _ in progress_bar(range(n_sims), desc="SBC", progressbar=progressbar):
        data, truth = model.simulate(rng, **sizes)
        draws = _posterior_arrays(sampler(data, rng, n_draws))
        true_values = model.invariants(truth, data)
        if statistics is not None:
            unknown = [name for name in statistics if name not in true_values]
            if unknown:
                raise ValueError(f"statistics {unknown} are not invariants of the model")
            true_values = {name: true_values[name] for name in statistics}
        missing = [name for name in true_values if name not in draws]
        if missing:
            draws.update(_invariants_per_draw(model, data, draws, missing))
        for name, value in true_values.items():
            flat_truth = np.atleast_1d(np.asarray(value)).ravel()
            flat_draws = np.asarray(draws[name]).reshape(-1, flat_truth.size)
            if len(flat_draws) < n_draws:
                raise ValueError(
                    f"the sampler returned {len(flat_draws)} draws of {name}, n_draws = {n_draws}"
                )
            flat_draws = flat_draws[:n_draws]
            # Ties (discrete statistics such as 0/1 co-assignments) are broken uniformly at random,
            # as SBC requires; otherwise they always rank low.
            ties = (flat_draws == flat_truth).sum(axis=0)
            ranks = (flat_draws < flat_truth).sum(axis=0) + rng.integers(0, ties + 1)
            collected.setdefault(name, []).append(ranks)
            tied.setdefault(name, []).append(ties == n_draws)
    ranks = _rank_table(collected)
    if not ranks.shape[1]:
        raise ValueError("no statistic was defined in every simulation")
    always_tied = _rank_table(tied).all(axis=0)
    degenerate = [name for name in ranks.columns if always_tied[name]]
    if len(degenerate) == ranks.shape[1]:
        raise ValueError(
            f"every statistic is degenerate ({DEGENERATE_REASON}): nothing to calibrate"
        )
    ranks = ranks.drop(columns=degenerate)
    tests = rank_tests(ranks.to_numpy(), n_draws, bins)
    tests.index = pd.Index(ranks.columns, name="statistic")
    p_values = {name: float(p) for name, p in tests["p"].items()}
    m = len(p_values)
    power = {
        bias: detection_power(bias, n_sims, n_draws=n_draws, bins=bins, alpha=alpha, n_statistics=m)
        for bias in BIASES
    }
    corrected = alpha / m
    worst_name = min(p_values, key=p_values.get)
    worst = p_values[worst_name]
    check = Check(
        "calibrated",
        "SBC rank uniformity",
        worst > corrected,
        f"{n_sims} simulations, {m} statistics"
        f"{f' ({len(degenerate)} degenerate excluded)' if degenerate else ''}, "
        f"min p = {worst:.3g} ({worst_name}; need > "
        f"{corrected:.2g}: Bonferroni at {alpha:g} over the statistics, chi-square on {bins} bins "
        f"and mean-rank z each); detects a 0.25-sd bias in one statistic with probability "
        f"{power[0.25]:.2f} (0.5 sd: {power[0.5]:.2f})",
        {
            "min_p": worst,
            "n_sims": n_sims,
            "n_statistics": m,
            "power_0.25sd": power[0.25],
            "power_0.5sd": power[0.5],
        },
    )
    return SBCResult(
        ranks=ranks, n_draws=n_draws, p_values=p_values, check=check, bins=bins, alpha=alpha,
        tests=tests, power=power, degenerate=degenerate,
    )  # fmt: skip


def _rank_table(collected: dict) -> pd.DataFrame:
    """One column per component; tiny simulated data sets may have fewer non-zero dyads (or
    pairs) than others, so only the components that exist in every simulation are kept."""
    columns = {}
    for name, per_sim in collected.items():
        sizes = [len(r) for r in per_sim]
        keep = min(sizes)
        if max(sizes) == 1 and keep == 1:
            columns[name] = np.array([r[0] for r in per_sim], dtype=np.int64)
            continue
        stacked = np.stack([r[:keep] for r in per_sim]).astype(np.int64)
        for index in range(keep):
            columns[f"{name}[{index}]"] = stacked[:, index]
    n_sims = len(next(iter(collected.values()), []))
    return pd.DataFrame(columns, index=pd.RangeIndex(n_sims))


# ---------------------------------------------------------------------- production path
def production_sampler(gibbs, model, *, tune: int = 50, thin: int = 5, transform=None, **options):
    """An SBC sampler running a family's collapsed Gibbs sampler on its production path.

    ``gibbs`` is a family's entry point (made by :func:`~latentzoo.inference.mcmc.gibbs_entry`):
    one chain of its ``prepare(model, data, chains=1, draws=n_draws, **options)`` sampler is run
    through :func:`~latentzoo.inference.mcmc.run_chains` (``init``/``step``/``draw``, ``tune``
    burn-in sweeps, every ``thin``-th sweep kept) and its draws returned as a dict of arrays,
    without building ``InferenceData``. A ``gibbs`` without ``prepare`` (a wrapped or replaced
    method) is called instead and its posterior converted to the same dict; the draws are the
    same for the same generator. ``transform(model, data, draws) -> draws`` edits the dict
    (e.g. statistics of the drawn partitions).

    Returns
    -------
    callable
        ``sampler(data, rng, n_draws) -> dict`` for :func:`sbc`.

    Examples
    --------
    >>> from latentzoo.inference.one_sided import gibbs
    >>> from latentzoo.models import OneSidedClustering
    >>> model = OneSidedClustering(2)
    >>> data, _ = model.simulate(0, n_docs=4, n_words=5, doc_length=4)
    >>> draws = production_sampler(gibbs, model)(data, np.random.default_rng(0), 9)
    >>> draws["loglik"].shape, draws["coassign"].shape
    ((1, 9), (1, 9, 6))
    """
    from latentzoo.inference.mcmc import run_chains

    check_integer("tune", tune, low=0)
    check_integer("thin", thin)
    prepare = getattr(gibbs, "prepare", None)

    def sampler(data, rng, n_draws):
        if prepare is None:
            idata = gibbs(
                model, data, chains=1, draws=n_draws, tune=tune, thin=thin, random_state=rng,
                progressbar=False, **options,
            )  # fmt: skip
            draws = _posterior_arrays(idata)
        else:
            setup = prepare(model, data, chains=1, draws=n_draws, **options)
            draws, _, _ = run_chains(
                setup.sampler.init, setup.sampler.step, setup.draw, chains=1, draws=n_draws,
                tune=tune, thin=thin, random_state=rng, progressbar=False,
            )  # fmt: skip
        return draws if transform is None else transform(model, data, draws)

    return sampler


class _Alternating:
    """The ``model`` argument of :func:`sbc` for :func:`alternating`: simulation ``s`` is drawn
    from ``models[s % len(models)]``, sampled by ``samplers[s % len(models)]`` and its invariants
    computed by the same model (:func:`sbc` calls ``simulate``, the sampler, then ``invariants``
    once per simulation, in that order)."""

    def __init__(self, models, samplers):
        self.models, self.samplers = tuple(models), tuple(samplers)
        self._count, self._current = 0, 0

    @property
    def param_names(self):
        return getattr(self.models[self._current], "param_names", ())

    def simulate(self, rng, **sizes):
        self._current = self._count % len(self.models)
        self._count += 1
        return self.models[self._current].simulate(rng, **sizes)

    def sampler(self, data, rng, n_draws):
        return self.samplers[self._current](data, rng, n_draws)

    def invariants(self, params, data):
        return self.models[self._current].invariants(params, data)


def alternating(models, samplers):
    """SBC over several models (e.g. one model at several hyperparameter values) in one run.

    The ranks of a calibrated sampler are uniform given the model a simulation was drawn from,
    hence over simulations drawn from the models in turn: one :func:`sbc` of ``n_sims``
    simulations tests every model, at the cost of one. A bug visible at only one of ``k`` models
    (a dropped ``log alpha`` at ``alpha = 1``) biases ``1 / k`` of the ranks, so the stated power
    is that of ``n_sims / k`` simulations for such a bug. The models must share their invariants.

    Returns
    -------
    (model, sampler)
        The arguments of :func:`sbc`.

    Examples
    --------
    >>> class NormalMean:  # mu ~ N(0, s^2), y | mu ~ N(mu, 1)
    ...     param_names = ("mu",)
    ...     def __init__(self, s):
    ...         self.s = s
    ...     def simulate(self, rng, n=4):
    ...         mu = rng.normal(0.0, self.s)
    ...         return rng.normal(mu, 1.0, size=n), {"mu": mu}
    ...     def invariants(self, params, data):
    ...         return {"mu": np.asarray(params["mu"])}
    >>> def exact(s):  # the conjugate posterior of mu
    ...     def sampler(y, rng, n_draws):
    ...         precision = len(y) + 1.0 / s**2
    ...         mean, sd = y.sum() / precision, precision**-0.5
    ...         return {"mu": rng.normal(mean, sd, size=(1, n_draws))}
    ...     return sampler
    >>> model, sampler = alternating([NormalMean(1.0), NormalMean(3.0)], [exact(1.0), exact(3.0)])
    >>> sbc(model, sampler, 300, random_state=0).check.passed
    True
    """
    models, samplers = tuple(models), tuple(samplers)
    if not models or len(models) != len(samplers):
        raise ValueError(f"need as many samplers as models, got {len(models)} and {len(samplers)}")
    model = _Alternating(models, samplers)
    return model, model.sampler
