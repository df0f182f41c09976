"""``latentzoo.validate``: the levels that compare fast inference with the PyMC reference.

The levels (the "Adding a family" and validation sections of the README), each run on a problem
of the right kind and naming it in its result (``Comparison.problems``):

1. **exact** — several tiny data sets whose posterior over all latent assignments is enumerated
   (at the user's, the default and two informative priors; reaching every branch of the
   kernels); the family's own ``gibbs`` setup runs thousands of independent chains through
   ``init``/``step``/``draw``; their final states must match the enumerated posterior
   (chi-square) and the parameters drawn by ``draw`` their exact conditional moments;
2. **density** — at random points of the prior, PyMC's log density equals the model's
   log-likelihood plus its log prior (a wrong prior in the declaration fails here);
3. **reference** — synthetic data where PyMC's own chains agree (max R-hat under what converged
   chains exceed 0.5% of the time, :func:`~latentzoo.inference.mcmc.rhat_threshold`) and the
   posterior is genuinely uncertain (else the level is inconclusive); the Gibbs sampler must
   agree with PyMC within combined MCSE (calibrated by the disagreement of PyMC's two halves),
   a point estimator must lie inside the reference posterior;
4. **optimality** — the EM estimate at ``beta = 1`` is a stationary point of PyMC's log posterior
   (its gradient vanishes) that ``pymc.find_MAP`` cannot improve;
5. **mode-matched** — real data, where no sampler mixes between modes: PyMC and Gibbs chains are
   started at the same distinct modes, compared mode by mode after burn-in, with within-mode R-hat
   and ESS, the test calibrated by a second PyMC run; "inconclusive" when PyMC itself does not
   hold one local posterior;
6. **calibrated** — simulation-based calibration of the Gibbs sampler on data drawn from the
   prior (1000 simulations, the power to detect a 0.25-sd bias stated).

Each model family describes how it is validated in a :class:`ValidationRecipe` (registered with the
family in :mod:`latentzoo.zoo`, written in :mod:`latentzoo.recipes`): a list of checks, each a
function. The standard checks of the co-occurrence families are written once, here, and
parametrised by the recipe (sizes, simulator keywords, how to start PyMC and Gibbs at an EM
solution); a family with other data brings its own checks built from the same parts
(:func:`~latentzoo.inference.compare.exact_test`, :func:`~latentzoo.inference.compare.compare`,
:func:`~latentzoo.inference.compare.sbc`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from latentzoo.inference.compare import (
    LEVELS,
    BetaMarginal,
    Check,
    Comparison,
    compare,
    exact_test,
    moment_test,
    pit_residuals,
    point_in_posterior,
    sbc,
    select_chains,
    uncertainty_check,
)

__all__ = [
    "FULL",
    "ExactProblem",
    "LEVEL_NAMES",
    "QUICK",
    "REAL_DATA",
    "Settings",
    "ValidationRecipe",
    "calibration_level",
    "compare_at_modes",
    "cooccurrence_checks",
    "density_level",
    "distinct_modes",
    "exact_level",
    "mode_matched_level",
    "optimality_level",
    "reference_level",
]

REAL_DATA = "real data"
"""How a level's problem line starts when it ran on (a subset of) real data; :func:`validate`
adds the data set's name."""

LEVEL_NAMES = LEVELS
"""The standard levels (defined once, in :mod:`latentzoo.inference.compare`)."""


@dataclass(frozen=True)
class Settings:
    """Sizes of each level's problem; ``QUICK`` for tests, ``FULL`` for reports."""

    # Independent chains per exact problem: 10,000 detect a 0.05 change of one state's
    # probability; the report sizes use twice as many.
    exact_chains: int = 10_000
    exact_sweeps: int = 30
    # R-hat <= 1.01 is demanded of every invariant: with 4 x 300 draws the estimator's own noise
    # (max over ~80 quantities) crossed 1.01 for about one seed in three; 4 x 1000 keeps it near 1.005.
    pymc_draws: int = 1000
    pymc_tune: int = 500
    gibbs_draws: int = 1000
    gibbs_thin: int = 4
    real_subset: tuple = (20, 30)  # first rows, most frequent columns
    real_draws: int = 200
    mode_starts: int = 6
    # 1000 simulations detect a 0.25-sd bias in one statistic (100 did 2% of the time).
    sbc_sims: int = 1000
    full: bool = False


QUICK = Settings()
FULL = Settings(
    exact_chains=20_000,
    pymc_draws=1000,
    pymc_tune=500,
    gibbs_draws=2000,
    real_subset=(60, 150),
    real_draws=300,
    sbc_sims=1000,
    full=True,
)


@dataclass(frozen=True)
class ValidationRecipe:
    """How one model family is validated: its checks, and what they need.

    ``checks`` maps a level name to the function that runs it,
    ``check(family, recipe, model, data, settings, rng, progressbar) -> Comparison | SBCResult``;
    a family extends the list with checks of its own (any name) and leaves out the levels it
    cannot reach, giving the reason in ``not_applicable``. :func:`cooccurrence_checks` builds the
    standard checks from the remaining fields, which describe the problems of the
    co-occurrence families; other families use ``problems`` for their own checks' settings.

    Attributes
    ----------
    checks : dict[str, callable]
        Level name -> check function, run in the order asked for.
    not_applicable : dict[str, str]
        Level name -> why the family cannot reach it (reported as skipped, never dropped).
    small : callable
        ``small(model, sizes) -> model``: the family's model at the given cluster sizes, with the
        user's priors.
    sizes : dict
        Cluster sizes for ``"exact"``, ``"reference"``, ``"real"``, ``"sbc"`` problems.
    exact_data : Dataset or None
        The tiny data set whose posterior is enumerated (None: no exact level).
    synthetic : callable
        ``synthetic(settings) -> dict`` of simulator keywords for the separated data.
    sbc_data : dict
        Simulator keywords for SBC (draws from the prior).
    sampler : str or None
        Registry method name of the collapsed Gibbs sampler.
    sampler_class : callable or None
        ``sampler_class(model, data)``: the family's sampler, whose tables ``gibbs_start``
        reads (the mode-matched level's Gibbs starts).
    enumerate : callable or None
        ``enumerate(model, data, sampler) -> (log_probs, space)``: the unnormalised log
        posterior of every state of the latent space. ``space`` is ``n_labels`` for label vectors
        (in the order of :func:`~latentzoo.inference.compare.enumerate_assignments`), or the 2-D
        array of the enumerated states themselves, one per row, for any finite space (set
        partitions, binary matrices in left-ordered form, trees:
        :mod:`latentzoo.inference.enumeration`).
    exact_problems : callable or None
        ``exact_problems(model, rng) -> list[ExactProblem]``: the enumerable problems of the exact
        level (None: no exact level).
    exact_state : callable
        ``exact_state(sampler, state) -> labels``: a chain state as the label vector (or the row
        of ``space``) that ``enumerate`` scores.
    exact_params : callable
        ``exact_params(setup, state, rng) -> dict``: the parameters drawn by the production draw
        (``setup`` is the family's :class:`~latentzoo.inference.mcmc.GibbsSetup`).
    exact_moments : callable
        ``exact_moments(sampler, state) -> {name: law}``: the exact conditional law of each
        parameter of ``exact_params`` given the state: a
        :class:`~latentzoo.inference.compare.BetaMarginal`, or ``(mean, second)`` moments
        (``second`` may be None).
    em : str
        Registry method name of the EM used for the mode-matched starts.
    initvals : callable
        ``initvals(params) -> dict`` of PyMC starting values.
    gibbs_start : callable or None
        ``gibbs_start(params, sampler, rng) -> assignments`` for ``initial_assignments``.
    random_start : callable or None
        ``random_start(model, data, rng) -> dict``: random PyMC starting values for one chain of
        the reference level (None: PyMC's own). Discrete steps started all at PyMC's default
        point (every label 0) were measured to stay in separate modes (R-hat up to 1.97).
    pymc_draws_factor : int
        Multiplies the reference level's PyMC draws: single-site discrete Metropolis steps need
        more draws than NUTS for the same ESS (SCM: 4 x 1000 gave R-hat up to 1.04, 4 x 5000 at
        most 1.004 over four seeds).
    problems : dict
        Free-form settings of a family's own checks.
    em_fixed_point : str
        What the ``em`` method converges to: ``"map"`` (a posterior mode: the optimality level
        asks every prior >= 1 and checks the KKT conditions and PyMC's find_MAP) or
        ``"mean_field"`` (the SCM's, sec. 3.4: checked as a mean-field fixed point; only
        ``alpha >= 1`` is needed).
    optimality_instances : callable or None
        ``optimality_instances(model) -> [(model, simulate keywords), ...]``: the instances of a
        mean-field optimality level, each drawn from the prior and fitted, the level failing when
        any fails (several model shapes and instances: a wrong update that vanishes on one
        instance, e.g. at nearly equal cluster sizes, shows on others, at a stated power). None:
        one instance at the reference size (``small``, ``synthetic``).
    hard_instances : callable or None
        ``hard_instances(method, model, rng) -> [[Check, ...], ...]``: the family's ``hard``
        method (``method``) run on the family's own instances at the priors of ``model``, each
        certified from the counts (one list of checks per instance, e.g.
        :func:`latentzoo.inference.one_sided.hard_certificate`); the optimality level reports
        each check over all instances (:func:`hard_check`). None: the hard method is not run.
    method_certificates : dict
        Method name -> ``instances(method, model, rng)`` as ``hard_instances`` (which is the
        entry of ``"hard"``): further fast methods that the optimality level runs on the family's
        own instances and certifies (e.g. the HACM's ``three_stage``:
        :func:`latentzoo.inference.cluster_abstraction.three_stage_certificate`).
    exact_fast_checks : callable or None
        ``exact_fast_checks(entry, problem, settings, rng) -> [Check, ...]``: checks of a fast
        method that the enumeration cannot judge alone (an approximate sampler's exact
        properties, e.g. :func:`latentzoo.inference.ad_lda.validation_checks`), run by the exact
        level on each of its problems with a generator independent of its own (whose streams they
        leave as they were) and reported in that problem's frequency check, which fails naming any
        of them that fails. None: none.
    """

    checks: dict = field(default_factory=dict)
    not_applicable: dict = field(default_factory=dict)
    small: Callable | None = None
    sizes: dict = field(default_factory=dict)
    exact_data: object = None
    synthetic: Callable | None = None
    sbc_data: dict = field(default_factory=dict)
    sampler: str | None = None
    sampler_class: Callable | None = None
    enumerate: Callable | None = None
    exact_problems: Callable | None = None
    exact_state: Callable | None = None
    exact_params: Callable | None = None
    exact_moments: Callable | None = None
    em: str | None = None
    initvals: Callable | None = None
    gibbs_start: Callable | None = None
    random_start: Callable | None = None
    pymc_draws_factor: int = 1
    problems: dict = field(default_factory=dict)
    em_fixed_point: str = "map"
    optimality_instances: Callable | None = None
    hard_instances: Callable | None = None
    method_certificates: dict = field(default_factory=dict)
    exact_fast_checks: Callable | None = None


# -------------------------------------------------------------------------------- levels
def _log(progressbar, message):
    if progressbar:
        print(message, flush=True)


@dataclass(frozen=True)
class ExactProblem:
    """One enumerable problem of the exact level: a model, a tiny data set and sampler options.

    ``label`` names it in the report (data, priors and K); ``options`` go to the family's
    ``gibbs`` (e.g. ``split_merge``).
    """

    label: str
    model: object
    data: object
    options: dict = field(default_factory=dict)


def with_stated_power(check: Check, n_draws: int, alpha: float = 1e-3) -> Check:
    """``check`` (a :func:`~latentzoo.inference.compare.exact_test` of ``n_draws`` draws at level
    ``alpha``) with its
    stated power in its detail and values: the smallest shift in total variation it detects with
    probability :data:`~latentzoo.inference.enumeration.DETECTION_POWER`, whatever its direction
    (:func:`~latentzoo.inference.enumeration.detectable_shift`), as the calibrated level states
    the bias SBC detects."""
    from latentzoo.inference.enumeration import DETECTION_POWER, detectable_shift

    shift = detectable_shift(int(check.numbers.get("dof", 0)), n_draws, alpha)
    check.numbers["detectable_shift"] = shift
    check.detail += f"; detects any shift of {shift:.3f} in total variation with probability {DETECTION_POWER:g}"
    return check


def _advance_makes_the_step(sampler, exact_state, chains: int = 8, sweeps: int = 3) -> bool:
    """Whether ``sampler.advance`` leaves the states ``sampler.step`` leaves, chain by chain from
    the same seeds (a few short chains on a generator of their own, so the exact level's draws do
    not change)."""
    for seed in range(chains):
        ends = []
        for transition in (lambda s, g: sampler.step(s, g)[0], sampler.advance):
            rng = np.random.default_rng(seed)
            state = sampler.init(rng)
            for _ in range(sweeps):
                state = transition(state, rng)
            ends.append(np.array(exact_state(sampler, state), copy=True))
        if not np.array_equal(*ends):
            return False
    return True


def _side_stream(rng) -> np.random.Generator:
    """A generator independent of ``rng`` whose use changes neither ``rng``'s draws nor the
    generators later spawned from it (:func:`~latentzoo.inference.mcmc.chain_seeds` spawns from its
    seed sequence: spawning here would move theirs): a child key no spawn reaches."""
    sequence = rng.bit_generator.seed_seq
    key = (*sequence.spawn_key, 2**32 - 1, sequence.n_children_spawned)
    return np.random.default_rng(np.random.SeedSequence(sequence.entropy, spawn_key=key))


def _with_fast_checks(check, fast_checks, entry, problem, settings, rng) -> None:
    """Fold ``recipe.exact_fast_checks`` on ``problem`` into its frequency check ``check`` (in
    place): failed when one of them fails (or raises), each failure named in the detail. They
    draw from :func:`_side_stream`, so the level's own streams are unchanged."""
    try:
        fast = fast_checks(entry, problem, settings, _side_stream(rng))
    except Exception as error:  # noqa: BLE001 - a fast method that raises here is wrong here
        fast = [Check("exact", "the fast method runs", False, f"{type(error).__name__}: {error}")]
    failed = [c for c in fast if not c.passed]
    check.numbers.update(fast_checks=len(fast), fast_failures=len(failed))
    if failed:
        check.passed = False
        check.detail = "".join(f"FAIL {c.name}: {c.detail}; " for c in failed) + check.detail
    else:
        check.detail += f"; {len(fast)} fast-method checks pass ({'; '.join(c.name for c in fast)})"


def exact_level(
    entry, recipe: ValidationRecipe, model, data, settings: Settings, rng, progressbar=False
) -> Comparison:
    """Exact level: the production sampler against the enumerated posterior of tiny data sets.

    For every problem of ``recipe.exact_problems(model, rng)`` (several data sets that reach every
    branch of the kernels, at the user's, the default and informative priors), ``exact_chains``
    independent chains run through the family's own ``gibbs`` setup (``init``/``step``/``draw``
    through :func:`~latentzoo.inference.mcmc.run_chains`), each for ``exact_sweeps`` transitions,
    and keep one draw. Two checks per problem:

    - the frequencies of the final states against the enumerated posterior (chi-square,
      :func:`~latentzoo.inference.compare.exact_test`);
    - the parameters drawn by ``draw`` against their exact conditional law given the drawn state
      (:func:`~latentzoo.inference.compare.moment_test`): Beta (Dirichlet-coordinate) laws through
      the probability integral transform, whose values must have the moments of a uniform, other
      laws through their first two moments. A sweep and a draw that are each right give states and
      parameters from the joint posterior, and both are tested.

    A recipe's ``exact_fast_checks`` (checks of a fast method, e.g. the aspect model's AD-LDA)
    run on every problem too and fail its frequency check when one fails (:func:`_with_fast_checks`).
    """
    from latentzoo.inference.mcmc import run_chains

    gibbs = entry.methods[recipe.sampler]
    checks, labels = [], []
    for problem in recipe.exact_problems(model, rng):
        setup = gibbs.prepare(
            problem.model, problem.data, chains=settings.exact_chains, draws=1, **problem.options
        )
        sampler = setup.sampler
        log_probs, space = recipe.enumerate(problem.model, sampler.data, sampler)

        def record(state, generator, setup=setup, sampler=sampler):
            out = {"state": recipe.exact_state(sampler, state)}
            drawn = recipe.exact_params(setup, state, generator)
            for name, law in recipe.exact_moments(sampler, state).items():
                if isinstance(law, BetaMarginal):
                    # Transformed after the run, all chains in one vectorised call.
                    out[f"{name}|pit"] = np.stack([drawn[name], law.a, law.total])
                    continue
                mean, second = law
                out[f"{name}|mean"] = drawn[name] - mean
                if second is not None:
                    out[f"{name}|second"] = drawn[name] ** 2 - second
            return out

        _log(progressbar, f"exact level: {problem.label}")
        labels.append(problem.label)
        # The burn-in sweeps run through advance() (step() without its info, as the Gibbs entry
        # runs them) only where it makes step()'s transition; else all of them through step().
        advance = getattr(sampler, "advance", None)
        advance_differs = advance is not None and not _advance_makes_the_step(
            sampler, recipe.exact_state
        )
        try:
            posterior, _, _ = run_chains(
                sampler.init, sampler.step, record, chains=settings.exact_chains, draws=1,
                tune=settings.exact_sweeps, random_state=rng, progressbar=progressbar,
                desc=f"exact: {problem.label}", advance=None if advance_differs else advance,
            )  # fmt: skip
        except Exception as error:  # noqa: BLE001 - a sampler that crashes here is wrong here
            detail = f"the sampler raised {type(error).__name__}: {error}"
            checks.append(Check("exact", f"{problem.label}: the sampler runs", False, detail))
            continue
        states = posterior.pop("state")[:, 0]
        check = exact_test(
            log_probs, states, n_labels=space,
            name=f"{problem.label}: state frequencies = enumerated posterior",
        )  # fmt: skip
        if recipe.exact_fast_checks is not None:
            _with_fast_checks(check, recipe.exact_fast_checks, entry, problem, settings, rng)
        if advance_differs:
            check.passed = False
            check.detail = "advance() and step() make different transitions; " + check.detail
        checks.append(with_stated_power(check, len(states)))
        residuals = {}
        for key, values in posterior.items():
            if key.endswith("|pit"):
                # F(draw) is uniform under a right draw: test its first two moments.
                x, a, total = np.moveaxis(values[:, 0], 1, 0)
                name = key.removesuffix("|pit")
                residuals[f"{name}|F"], residuals[f"{name}|F^2"] = pit_residuals(
                    x, BetaMarginal(a, total)
                )
            else:
                residuals[key] = values[:, 0]
        checks.append(
            moment_test(residuals, name=f"{problem.label}: draws = exact conditional moments")
        )
    problem = (
        f"synthetic tiny data, {len(labels)} enumerable problems ({'; '.join(labels)}); "
        f"per problem Gibbs {settings.exact_chains} independent chains x 1 draw after "
        f"{settings.exact_sweeps} burn-in sweeps, against the enumerated posterior (no PyMC)"
    )
    return Comparison(checks=checks, problem=problem)


def reference_level(entry, recipe, model, data, settings, rng, progressbar=False) -> Comparison:
    """Reference level: synthetic data; 4 PyMC chains against Gibbs (or EM inside PyMC)."""
    from latentzoo.inference.reference import fit_pymc

    k = recipe.sizes["reference_full" if settings.full else "reference"]
    small = recipe.small(model, k)
    # The reference level simulates its own separated data; the user's data is not used.
    full, _ = small.simulate(rng, separated=True, **recipe.synthetic(settings))
    data, test = full.split(0.2, rng)
    _log(progressbar, f"reference level: PyMC on {data}")
    initvals = None
    if recipe.random_start is not None:
        initvals = [recipe.random_start(small, data, rng) for _ in range(4)]
    reference = fit_pymc(
        small, data, chains=4, draws=settings.pymc_draws * recipe.pymc_draws_factor,
        tune=settings.pymc_tune, random_state=rng, progressbar=progressbar, initvals=initvals,
        label_axes=entry.labels_to_align(small),
    )  # fmt: skip
    problem = (
        f"synthetic: {full} simulated ({_synthetic_label(recipe.synthetic(settings))}), 80% "
        f"for training ({data.total} observations), 20% held out; K={small.sizes_label()}; "
        f"{_pymc_label(4, settings.pymc_draws * recipe.pymc_draws_factor, settings.pymc_tune)}"
    )
    if recipe.sampler is not None:
        problem += f"; {_gibbs_label(4, settings.gibbs_draws, settings.gibbs_thin, 200)}"
    else:
        problem += f"; {recipe.em} at beta = 1 to a relative change of 1e-9 (point estimate)"
    if recipe.sampler is not None:
        fast = entry.methods[recipe.sampler](
            small, data, chains=4, draws=settings.gibbs_draws, tune=200,
            thin=settings.gibbs_thin, random_state=rng, progressbar=progressbar,
        )  # fmt: skip
        result = compare(small, data, fast, reference, names=("gibbs", "pymc"), test=test)
        result.checks.append(uncertainty_check(result.summary, "pymc"))
        result.problem = problem
        return result
    # A tight tolerance: mixture likelihoods have plateaus where a loose relative tolerance stops.
    estimate = entry.methods[recipe.em](
        small, data, betas=[1.0], tol=1e-9, max_iter=3000, random_state=rng
    )
    result = point_in_posterior(small, data, estimate.params, reference, name=recipe.em)
    result.checks.append(uncertainty_check(result.summary, "pymc"))
    result.problem = problem
    return result


def _pymc_label(chains: int, draws: int, tune: int, what: str = "PyMC") -> str:
    """``"PyMC 4 chains x 1000 draws after 500 tuning steps"``, for the problem lines."""
    return f"{what} {_count(chains, 'chain')} x {draws} draws after {tune} tuning steps"


def _count(n: int, noun: str) -> str:
    """``"1 chain"``, ``"4 chains"``."""
    return f"{n} {noun}{'' if n == 1 else 's'}"


def _gibbs_label(chains: int, draws: int, thin: int, burn: int, what: str = "Gibbs") -> str:
    """``"Gibbs 4 chains x 1000 draws (one kept per 4 sweeps) after 200 burn-in sweeps"``."""
    every = f" (one kept per {thin} sweeps)" if thin > 1 else ""
    return f"{what} {_count(chains, 'chain')} x {draws} draws{every} after {burn} burn-in sweeps"


def _synthetic_label(options: dict) -> str:
    """Simulator keywords as ``name=value`` pairs for the report."""
    return ", ".join(f"{name}={value}" for name, value in options.items())


def distinct_modes(candidates, scores, separation: float = 0.5, limit: int = 2) -> list:
    """At most ``limit`` candidates from different modes, best score first.

    ``scores`` are log-likelihoods (or log joints) of the candidates; two candidates whose scores
    are within ``separation`` nats are taken to be one mode (the same solution up to labels and
    convergence noise), so starts that land in one mode are not reported as two.

    Examples
    --------
    >>> distinct_modes(["a", "b", "c", "d"], [-10.0, -10.2, -12.0, -15.0])
    ['a', 'c']
    """
    order = np.argsort(-np.asarray(scores, dtype=float), kind="stable")
    kept, kept_scores = [], []
    for index in order:
        if all(abs(scores[index] - other) > separation for other in kept_scores):
            kept.append(candidates[index])
            kept_scores.append(scores[index])
        if len(kept) == limit:
            break
    return kept


def compare_at_modes(entry, local, subset, pymc_starts, gibbs_starts, settings, rng,
                     progressbar=False, chains_per_mode: int = 2, gibbs_options=None,
                     data_label: str = ""):  # fmt: skip
    """Run PyMC and the Gibbs sampler from the same modes and compare them mode by mode.

    Per mode: ``chains_per_mode`` Gibbs chains, ``chains_per_mode`` PyMC chains (the reference)
    and ``chains_per_mode`` more (the null run that calibrates the test), all with ``real_draws``
    burn-in draws (tuning for PyMC) discarded; see
    :func:`~latentzoo.inference.compare.mode_matched_checks`. ``data_label`` says which part of
    the real data ``subset`` is, for the problem line.
    """
    from latentzoo.inference.reference import fit_pymc

    n_modes, per = len(pymc_starts), chains_per_mode
    initvals = [start for start in pymc_starts for _ in range(2 * per)]
    _log(progressbar, f"mode-matched level: PyMC on {subset}, {n_modes} modes x {2 * per} chains")
    pymc_runs = fit_pymc(
        local, subset, chains=len(initvals), draws=settings.real_draws, tune=settings.real_draws,
        random_state=rng, progressbar=progressbar, initvals=initvals,
        label_axes=entry.labels_to_align(local),
    )  # fmt: skip
    layout = np.arange(len(initvals)).reshape(n_modes, 2, per)
    reference = select_chains(pymc_runs, layout[:, 0].ravel())
    null = select_chains(pymc_runs, layout[:, 1].ravel())
    fast = entry.methods["gibbs"](
        local, subset, draws=settings.real_draws * 2, tune=settings.real_draws,
        thin=settings.gibbs_thin, random_state=rng, progressbar=progressbar,
        initial_assignments=[start for start in gibbs_starts for _ in range(per)],
        **(gibbs_options or {}),
    )  # fmt: skip
    modes = np.repeat(np.arange(n_modes), per)
    result = compare(
        local, subset, fast, reference, level="mode-matched", names=("gibbs", "pymc"),
        modes=modes, null=null,
    )  # fmt: skip
    gibbs_line = _gibbs_label(
        per, settings.real_draws * 2, settings.gibbs_thin, settings.real_draws, "Gibbs"
    )
    pymc_line = _pymc_label(per, settings.real_draws, settings.real_draws, "PyMC")
    result.problem = (
        f"{REAL_DATA}: {data_label + ', ' if data_label else ''}{subset}; "
        f"K={local.sizes_label()}; {_count(n_modes, 'distinct mode')}; "
        "per mode: "
        f"{gibbs_line}; "
        f"{pymc_line} (reference) and {per} more (null run that calibrates the test)"
    )
    return result


def mode_matched_level(entry, recipe, model, data, settings, rng, progressbar=False):
    """Mode-matched level: real data; PyMC and Gibbs chains started at the same EM solutions.

    ``mode_starts`` EM runs from random starts; those whose final log-likelihoods differ by more
    than half a nat are distinct modes (at most two are used, and how many were found is
    reported).
    """
    n_rows, n_cols = settings.real_subset
    subset = data.subset(rows=np.arange(min(n_rows, data.n_rows)), cols=data.top_columns(n_cols))
    subset = subset.subset(rows=np.flatnonzero(subset.row_totals > 0))
    local = recipe.small(model, recipe.sizes["real"])
    em = entry.methods[recipe.em]
    solutions = [
        em(local, subset, betas=[1.0], max_iter=300, random_state=rng)
        for _ in range(settings.mode_starts)
    ]
    scores = [float(s.trace["log_likelihood"].iloc[-1]) for s in solutions]
    solutions = distinct_modes(solutions, scores)
    sampler = recipe.sampler_class(local, subset)
    label = f"its first {n_rows} rows (empty ones dropped) and {n_cols} most frequent columns"
    return compare_at_modes(
        entry, local, subset, [recipe.initvals(s.params) for s in solutions],
        [recipe.gibbs_start(s.params, sampler, rng) for s in solutions], settings, rng,
        progressbar, data_label=label,
    )  # fmt: skip


def calibration_level(entry, recipe, model, data, settings, rng, progressbar=False):
    """Calibrated level: SBC of the Gibbs sampler on small data sets drawn from the prior.

    The production sampler (``init``/``step``/``draw`` through the shared chain runner), without
    building ``InferenceData`` per simulation: 1000 simulations of the tiny problems take 10-30 s.
    The result states the test's power to detect a 0.25- and a 0.5-sd bias.
    """
    from latentzoo.inference.calibration import production_sampler

    small = recipe.small(model, recipe.sizes["sbc"])
    sampler = production_sampler(entry.methods[recipe.sampler], small, tune=50, thin=5)
    result = sbc(
        small, sampler, settings.sbc_sims, random_state=rng, progressbar=progressbar,
        **recipe.sbc_data,
    )  # fmt: skip
    result.problem = calibration_problem(small, settings, recipe.sbc_data, "Gibbs")
    return result


def calibration_problem(model, settings, sizes: dict, sampler: str) -> str:
    """What the calibrated level ran: simulations, their sizes, K and the chains."""
    return (
        f"synthetic: {settings.sbc_sims} data sets drawn from the prior "
        f"({_synthetic_label(sizes)}), K={model.sizes_label()}; per data set "
        f"{_gibbs_label(1, 99, 5, 50, sampler)}"
    )


OPTIMALITY_EM_TOL = 1e-10
"""Relative free-energy tolerance of the EM run whose estimate the optimality level checks."""

OPTIMALITY_EM_MAX_ITER = 50_000
"""Iteration budget of that run (the product-space EM needed up to about 3,000 on its problems)."""


def optimality_level(entry, recipe, model, data, settings, rng, progressbar=False) -> Comparison:
    """Optimality: the EM estimate at ``beta = 1`` is the MAP of the PyMC posterior.

    On data drawn from the prior at the reference level's sizes (not separated; the user's data
    are not used), the family's EM runs at ``betas=[1.0]`` to a relative free-energy change of
    :data:`OPTIMALITY_EM_TOL`; then the gradient of PyMC's log density vanishes there
    (:func:`~latentzoo.inference.optimality.kkt_check`) and ``pymc.find_MAP`` started there finds
    no better point (:func:`~latentzoo.inference.optimality.find_map_check`). Both read only the
    PyMC declaration, so a wrong M-step fails them whatever the EM code does. The two-sided model's
    EM is a mean-field fixed point, not a point of its PyMC posterior (``I``, ``J`` are discrete
    there): its free energy, written independently of the EM code, must be stationary instead
    (:func:`~latentzoo.inference.optimality.mean_field_check`). Reported skipped for a family
    without EM and for priors below 1 (EM refuses them: no interior MAP). A family whose recipe
    declares ``hard_instances`` also has its ``hard`` method certified on its own instances (its
    parameters the closed form of its partition, the partition a fixed point: deterministic
    checks recomputed from the counts), after the EM's checks; so has every method of its
    ``method_certificates`` (the HACM's ``three_stage``: a fixed point of its last stage).

    Examples
    --------
    >>> from latentzoo.models import AspectModel
    >>> c = validate(AspectModel(2), levels=["optimality"])  # doctest: +SKIP
    >>> c.levels_reached  # doctest: +SKIP
    ['optimality']
    """
    from latentzoo.inference.optimality import (
        OPTIMALITY,
        find_map_check,
        kkt_check,
        mean_field_check,
    )

    def skipped(name, reason):
        return Check(OPTIMALITY, name, True, f"not applicable: {reason}")

    if recipe.em is None or "reference" not in recipe.sizes:
        reason = "no EM (point estimator) in this family's recipe"
        return Comparison(skipped=[skipped(OPTIMALITY, reason)])
    small = recipe.small(model, recipe.sizes["reference"])
    # A mean-field EM (the SCM's) needs alpha >= 1 only; a MAP EM needs every prior >= 1.
    mean_field = recipe.em_fixed_point == "mean_field"
    names = ("alpha",) if mean_field else ("alpha", "eta")
    priors = {name: getattr(small, name) for name in names if hasattr(small, name)}
    if any(value < 1 for value in priors.values()):
        shown = ", ".join(f"{name}={value:g}" for name, value in priors.items())
        reason = f"EM computes a MAP only for priors >= 1 ({shown})"
        return Comparison(skipped=[skipped(OPTIMALITY, reason)])
    if mean_field and recipe.optimality_instances is not None:
        result = _mean_field_instances(entry, recipe, small, rng, progressbar)
        return _with_hard_checks(result, entry, recipe, small, rng, progressbar)
    simulated, _ = small.simulate(rng, **recipe.synthetic(settings))
    problem = (
        f"synthetic: {simulated} drawn from the prior, K={small.sizes_label()}; {recipe.em} at "
        f"beta = 1 to a relative change of {OPTIMALITY_EM_TOL:g} (point estimate, no sampler)"
    )
    _log(progressbar, f"optimality level: {recipe.em} at beta = 1 on {simulated}")
    estimate = entry.methods[recipe.em](
        small, simulated, betas=[1.0], tol=OPTIMALITY_EM_TOL, max_iter=OPTIMALITY_EM_MAX_ITER,
        random_state=rng,
    )  # fmt: skip
    if mean_field:
        result = mean_field_check(small, simulated, estimate.params, name=recipe.em)
        reason = MEAN_FIELD_NOT_MAP
        result.skipped.append(skipped(f"pymc find_MAP cannot improve {recipe.em}", reason))
    else:
        result = kkt_check(small, simulated, estimate.params, name=recipe.em, random_state=rng)
        if result.skipped:  # not a point of the declaration's posterior: find_MAP does not apply
            return result
        result.extend(find_map_check(small, simulated, estimate.params, name=recipe.em))
    if not getattr(estimate, "converged", True):
        for check in result.checks:
            check.detail += f" ({recipe.em} stopped at max_iter={OPTIMALITY_EM_MAX_ITER})"
    result.problem = problem
    return _with_hard_checks(result, entry, recipe, small, rng, progressbar)


def hard_check(name, violation, what, tolerance) -> Check:
    """An optimality :class:`Check` of a hard method's certificate (``recipe.hard_instances``):
    passed when ``violation`` (0 when exact) is at most ``tolerance``."""
    from latentzoo.inference.optimality import OPTIMALITY

    violation = float(violation)
    return Check(
        OPTIMALITY, name, bool(violation <= tolerance),
        f"{what}: {violation:.3g} (at most {tolerance:g}; deterministic)",
        {"violation": violation, "tolerance": tolerance},
    )  # fmt: skip


def single_move_check(name, gain, converged, objects, at, tolerance) -> Check:
    """:func:`hard_check` that the run converged and moving one of the ``objects`` to another
    cluster at the returned parameters ``at`` gains at most ``tolerance`` (``gain``: the largest,
    relative to the object's log-likelihood)."""
    return hard_check(
        name, gain if converged else np.inf,
        f"largest gain of moving one {objects} to another cluster at the returned {at}, relative "
        "to its log-likelihood" + ("" if converged else " (not converged)"),
        tolerance,
    )  # fmt: skip


def certified(certify, *args, name="hard") -> list:
    """``certify(*args)``, one instance's checks of a certified method ``name``
    (``recipe.hard_instances``, ``recipe.method_certificates``), or a failed check when it
    raises: a method that fails on valid data fails that instance."""
    try:
        return certify(*args)
    except Exception as error:  # noqa: BLE001 - reported as the instance's failure
        detail = f"{type(error).__name__}: {error}"
        runs = f"the {name} method runs"
        return [Check("optimality", runs, False, detail, {"violation": np.inf})]


def _with_hard_checks(result, entry, recipe, model, rng, progressbar=False) -> Comparison:
    """``result`` with the checks of the family's certified methods (``recipe.hard_instances``
    for ``hard``, ``recipe.method_certificates``), each check over all instances of its method:
    failed when any instance fails it, with the largest violation. Run after the EM's checks, so
    that their random stream is the one they had without it."""
    certificates = dict(recipe.method_certificates)
    if recipe.hard_instances is not None:
        certificates = {"hard": recipe.hard_instances, **certificates}
    for name, instances in certificates.items():
        if name in entry.methods:
            _log(progressbar, f"optimality level: the {name} method's certificate")
            _add_certificate(result, instances, name, entry.methods[name], model, rng)
    return result


def _add_certificate(result, instances, method_name, method, model, rng) -> None:
    """One certified method's checks (``instances(method, model, rng)``) added to ``result``."""
    try:
        per_instance = instances(method, model, rng)
    except Exception as error:  # a method that fails on valid data fails the level
        detail = f"{type(error).__name__}: {error}"
        result.checks.append(Check("optimality", f"the {method_name} method runs", False, detail))
        return
    names = dict.fromkeys(check.name for checks in per_instance for check in checks)
    for name in names:
        found = [
            (number, check)
            for number, checks in enumerate(per_instance, start=1)
            for check in checks
            if check.name == name
        ]
        number, worst = max(found, key=lambda pair: pair[1].numbers["violation"])
        failed = sum(not check.passed for _, check in found)
        result.checks.append(Check(
            worst.level, name, failed == 0,
            f"{worst.detail}, largest over {len(found)} instances (instance {number}); "
            f"{failed} fail",
            {**worst.numbers, "instances": len(found), "failures": failed},
        ))  # fmt: skip


MEAN_FIELD_NOT_MAP = "the mean field is no point of the PyMC posterior, whose I and J are discrete"
"""Why the mean-field optimality level runs no ``find_MAP``."""


def _mean_field_instances(entry, recipe, small, rng, progressbar=False) -> Comparison:
    """The mean-field optimality check on every instance of ``recipe.optimality_instances``:
    one check, failed when any instance's largest free-energy residual exceeds the tolerance."""
    from latentzoo.inference.optimality import OPTIMALITY, mean_field_check

    residuals, labels, stopped = [], [], 0
    for model, keywords in recipe.optimality_instances(small):
        simulated, _ = model.simulate(rng, **keywords)
        _log(progressbar, f"optimality level: {recipe.em} at beta = 1 on {simulated}")
        estimate = entry.methods[recipe.em](
            model, simulated, betas=[1.0], tol=OPTIMALITY_EM_TOL,
            max_iter=OPTIMALITY_EM_MAX_ITER, random_state=rng,
        )  # fmt: skip
        stopped += not getattr(estimate, "converged", True)
        check = mean_field_check(model, simulated, estimate.params, name=recipe.em).checks[0]
        residuals.append(check.numbers["max_abs_gradient"])
        labels.append(f"K={model.sizes_label()}")
        tolerance = check.numbers["tolerance"]
    worst = int(np.argmax(residuals))
    detail = (
        f"largest max |d(-F) / d logit| over {len(residuals)} instances: {residuals[worst]:.3g} "
        f"counts ({labels[worst]}; tolerance {tolerance:g}); "
        f"{sum(r > tolerance for r in residuals)} instances above it"
        + (f"; {stopped} runs stopped at max_iter={OPTIMALITY_EM_MAX_ITER}" if stopped else "")
    )
    check = Check(
        OPTIMALITY,
        f"{recipe.em} is a stationary point of the mean-field free energy",
        residuals[worst] <= tolerance,
        detail,
        {"max_abs_gradient": residuals[worst], "tolerance": tolerance,
         "residuals": [float(r) for r in residuals]},
    )  # fmt: skip
    reason = MEAN_FIELD_NOT_MAP
    shapes = ", ".join(sorted(set(labels)))
    return Comparison(
        checks=[check],
        skipped=[
            Check(
                OPTIMALITY,
                f"pymc find_MAP cannot improve {recipe.em}",
                True,
                f"not applicable: {reason}",
            )
        ],  # fmt: skip
        problem=(
            f"synthetic: {len(residuals)} data sets drawn from the prior (the last {simulated}), "
            f"K in {shapes}; "
            f"{recipe.em} at beta = 1 to a relative change of {OPTIMALITY_EM_TOL:g} on each "
            "(point estimates, no sampler)"
        ),
    )


def density_level(entry, recipe, model, data, settings, rng, progressbar=False) -> Comparison:
    """Spot check: PyMC's log density = the model's log-likelihood + log prior at random points.

    On data drawn from the prior at the reference level's sizes and model (co-occurrence families:
    ``recipe.sizes["reference"]`` and ``recipe.synthetic``; mixtures: ``recipe.small(model,
    "reference")`` and ``recipe.problems["reference"]``), at parameter draws from the prior
    (:func:`~latentzoo.inference.optimality.density_check`): a PyMC declaration with a wrong
    prior or likelihood fails it. Level ``"density"``.

    Examples
    --------
    >>> from latentzoo.zoo import ZOO
    >>> from latentzoo.models import OneSidedClustering
    >>> rng = np.random.default_rng(0)
    >>> entry = ZOO["one_sided"]
    >>> c = density_level(entry, entry.recipe(), OneSidedClustering(2), None, QUICK, rng)
    >>> c.passed
    True
    """
    from latentzoo.inference.optimality import density_check

    if "reference" in recipe.sizes:
        small = recipe.small(model, recipe.sizes["reference"])
        keywords = recipe.synthetic(settings)
    else:
        small = recipe.small(model, "reference")
        keywords = recipe.problems["reference"]
    simulated, _ = small.simulate(rng, **keywords)
    _log(progressbar, f"density spot check: PyMC declaration on {simulated}")
    points = 5
    result = density_check(small, simulated, rng, n_points=points)
    result.problem = (
        f"synthetic: {simulated} drawn from the prior, K={small.sizes_label()}; no sampler: "
        f"PyMC's log density at {points} parameter draws from the prior"
    )
    return result


def cooccurrence_checks(recipe: ValidationRecipe) -> ValidationRecipe:
    """``recipe`` with the four standard checks of a co-occurrence family filled in.

    The exact, mode-matched and calibrated levels need a collapsed sampler (and the exact level a
    tiny data set); a family without one is checked at the reference level only, and the other
    levels are recorded as not applicable.
    """
    checks = {"density": density_level, "reference": reference_level}
    reasons = {}
    if recipe.exact_problems is not None and recipe.sampler is not None:
        checks = {"exact": exact_level, **checks}
    else:
        reasons["exact"] = "no collapsed sampler whose posterior can be enumerated"
    if recipe.em is not None:
        checks["optimality"] = optimality_level
    else:
        reasons["optimality"] = "no EM (point estimator)"
    if recipe.sampler is not None:
        checks.update({"mode-matched": mode_matched_level, "calibrated": calibration_level})
    else:
        reasons["mode-matched"] = reasons["calibrated"] = (
            "no sampler to compare or calibrate (point estimator only)"
        )
    return dataclasses.replace(recipe, checks=checks, not_applicable=reasons)
