"""The chain runner shared by every sampler of the zoo.

A sampler is a triple of functions in the style of blackjax: ``init(rng) -> state``,
``step(state, rng) -> (state, info)`` (one sweep; ``info`` a NamedTuple the family declares, such as
:class:`GibbsInfo`) and ``draw(state, rng) -> dict`` (the posterior variables of one kept draw, named
as in the PyMC declaration). A state is a NamedTuple of arrays that the numba sweep updates in place
(the tuple itself is replaced only when a table must grow), with the splitmix64 stream the kernels
draw from, seeded from the chain's generator, so a chain is reproducible from its seed.
:func:`run_chains` owns the one driver loop: per-chain generators spawned from one ``random_state``
and passed to every call, tuning (burn-in) sweeps, thinning, a progress bar, the ``info`` of the
kept draws as ``sample_stats``, and latent states whose shape varies between draws (padded, with
their shapes); :func:`sample_to_inference_data` runs a collapsed sampler's chains through it and
assembles the ``posterior``, ``sample_stats``, ``log_likelihood`` and ``observed_data`` groups of
:class:`arviz.InferenceData` the same way for every family.

Also here, the pieces every sampler uses inside its numba kernels and its draws: the chain-owned
splitmix64 generator :func:`next_uniform` (a numba function, callable from ``@njit`` kernels in any
module), :func:`draw_log_weights` for the categorical step, :func:`uniform_labels` for random
starting assignments, and :func:`dirichlet_rows` for the exact conditional Dirichlet draws of the
parameters; and :func:`gibbs_entry`, the one ``gibbs`` entry point that every family specialises.
"""

from __future__ import annotations

import math
import sys
import time
import warnings
from collections.abc import Callable
from typing import Any, NamedTuple

import numba as nb
import numpy as np

from latentzoo.data.checks import check_memory, check_random_state
from latentzoo.inference._lazy import lazy_import
from latentzoo.inference.family import GIBBS_OPTIONS
from latentzoo.inference.progress import progress_bar
from latentzoo.models._checks import check_integer
from latentzoo.models.base import model_attrs, netcdf_attr  # noqa: F401 - re-exported

# Imported at first use: listing the zoo imports this module and needs none of them.
az = lazy_import("arviz")
xr = lazy_import("xarray")

__all__ = [
    "CONVERGENCE_RULE",
    "ESS_PER_CHAIN_MIN",
    "RHAT_MAX",
    "Convergence",
    "ConvergenceWarning",
    "GibbsInfo",
    "GibbsSetup",
    "LabelAxis",
    "align_chains",
    "align_chain_labels",
    "diagnostic_line",
    "gibbs_entry",
    "run_chains",
    "chain_seeds",
    "add_invariants",
    "convergence",
    "invariant_draws",
    "dirichlet_rows",
    "draw_log_weights",
    "keep_params_auto",
    "next_uniform",
    "judged_variables",
    "rank_rhat",
    "rhat_threshold",
    "record_convergence",
    "sample_to_inference_data",
    "splitmix_seeds",
    "uniform_labels",
    "warn_at_caller",
]

MAX_KEPT_VALUES = 20_000_000
"""``keep_params="auto"`` keeps the parameter draws when all chains hold at most this many numbers."""
MAX_OBSERVED_CELLS = 5_000_000
"""The ``observed_data`` group holds the dense counts when they have at most this many cells."""
RHAT_DISAGREE = 1.1
"""After label alignment, chains whose aligned parameters reach this R-hat are said to disagree."""
MAX_ESS_VALUES = 200
""":func:`convergence` computes the bulk and tail ESS of the judged variables of at most this many
values per draw (R-hat covers them all)."""
RHAT_MAX = 1.01
"""Largest rank-normalised split R-hat of a converged sample: the threshold of Vehtari et al. (2021)
that ArviZ 0.2x's ``rhat`` cites and PyMC's sampler checks apply."""
ESS_PER_CHAIN_MIN = 100
"""Smallest bulk and tail ESS *per chain* of a converged sample (Vehtari et al. 2021: 100 per chain,
the 400 of ArviZ's ``plot_ess`` for its four default chains; PyMC warns below it)."""


class ConvergenceWarning(UserWarning):
    """A sampler's chains have not converged by the rule of :func:`convergence` (R-hat above
    ``RHAT_MAX`` or bulk/tail ESS below ``ESS_PER_CHAIN_MIN`` per chain): the sample's summaries
    are not yet the posterior's. Exported as ``latentzoo.ConvergenceWarning``; raised by
    :func:`latentzoo.fit` with a suggestion, and recorded in the sample's attributes."""


def warn_at_caller(message: str, category: type[Warning] = UserWarning) -> None:
    """``warnings.warn`` attributed to the first frame outside latentzoo: the user's own line.

    A fixed ``stacklevel`` names a latentzoo file whenever the call comes through another layer
    (``latentzoo.fit`` -> the family's ``gibbs`` -> its ``prepare``); the user needs the line of
    their script, and filters by module then work on their module.

    Examples
    --------
    >>> import warnings
    >>> with warnings.catch_warnings(record=True) as caught:
    ...     warnings.simplefilter("always")
    ...     warn_at_caller("careful")
    >>> "mcmc.py" in caught[0].filename
    False
    """
    frame, level = sys._getframe(1), 2
    while frame.f_back is not None and _in_package(frame):
        frame, level = frame.f_back, level + 1
    warnings.warn(message, category, stacklevel=level)


def _in_package(frame) -> bool:
    name = frame.f_globals.get("__name__", "")
    # The doctests of latentzoo's modules run in their module's namespace, but are callers.
    inside = name == "latentzoo" or name.startswith("latentzoo.")
    return inside and not frame.f_code.co_filename.startswith("<doctest")


def chain_seeds(random_state, chains: int) -> list[np.random.Generator]:
    """Independent generators for ``chains`` chains, spawned from one seed.

    Examples
    --------
    >>> a = chain_seeds(1, 2); b = chain_seeds(1, 2)
    >>> float(a[1].random()) == float(b[1].random())
    True
    """
    random_state = check_random_state(random_state)
    if isinstance(random_state, np.random.Generator):
        sequence = random_state.bit_generator.seed_seq.spawn(1)[0]
    else:
        sequence = np.random.SeedSequence(random_state)
    return [np.random.default_rng(child) for child in sequence.spawn(chains)]


def _check_counts(chains, draws, tune, thin):
    check_integer("chains", chains)
    check_integer("draws", draws)
    check_integer("tune", tune, low=0)
    check_integer("thin", thin)


# ------------------------------------------------------------------- inside the kernels
@nb.njit(cache=True, inline="always")
def next_uniform(state):
    """A uniform number in ``[0, 1)`` from the chain's splitmix64 generator, advanced in place.

    ``state`` is a one-element ``uint64`` array owned by the chain (not numba's global generator), so
    a chain is reproducible from its seed whichever kernel draws from it. 53 random bits.

    Examples
    --------
    >>> a, b = np.array([7], dtype=np.uint64), np.array([7], dtype=np.uint64)
    >>> u = next_uniform(a)
    >>> 0.0 <= u < 1.0, u == next_uniform(b), int(a[0]) == int(b[0]) != 7
    (True, True, True)
    """
    state[0] += np.uint64(0x9E3779B97F4A7C15)
    z = state[0]
    z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    z = z ^ (z >> np.uint64(31))
    return (z >> np.uint64(11)) * (1.0 / 9007199254740992.0)


@nb.njit(cache=True, inline="always")
def draw_log_weights(log_weights, n, state):
    """An index in ``0..n-1`` drawn with probabilities ``∝ exp(log_weights[:n])``.

    One uniform from the chain's :func:`next_uniform` against the cumulative sum (computed after
    subtracting the maximum, so no weight overflows); ``log_weights[:n]`` is overwritten with the
    cumulative sum. Every collapsed sampler's categorical step.

    Examples
    --------
    >>> state = np.array([3], dtype=np.uint64)
    >>> draw_log_weights(np.log(np.array([0.0, 1.0, 0.0])), 3, state)
    1
    """
    top = log_weights[0]
    for a in range(1, n):
        top = max(top, log_weights[a])
    total = 0.0
    for a in range(n):
        total += math.exp(log_weights[a] - top)
        log_weights[a] = total  # now the cumulative sum
    u = next_uniform(state) * total
    a = 0
    while a < n - 1 and log_weights[a] <= u:
        a += 1
    return a


def splitmix_seeds(rng: np.random.Generator, n: int) -> np.ndarray:
    """``n`` seeds of :func:`next_uniform` generators drawn from ``rng``: uint64 below ``2**63``.

    A chain's generator state is ``splitmix_seeds(rng, 1)``, a one-element array that the kernels
    advance in place.

    Examples
    --------
    >>> state = splitmix_seeds(np.random.default_rng(0), 1)
    >>> state.shape, state.dtype
    ((1,), dtype('uint64'))
    """
    return rng.integers(0, 2**63 - 1, size=n).astype(np.uint64)


@nb.njit(cache=True)
def uniform_labels(state, n, k):
    """``n`` labels drawn uniformly from ``0..k-1`` with :func:`next_uniform`: a random start.

    Examples
    --------
    >>> labels = uniform_labels(np.array([1], dtype=np.uint64), 50, 3)
    >>> labels.dtype, sorted(set(labels.tolist()))
    (dtype('int64'), [0, 1, 2])
    """
    labels = np.empty(n, dtype=np.int64)
    for i in range(n):
        labels[i] = min(int(next_uniform(state) * k), k - 1)
    return labels


def dirichlet_rows(rng: np.random.Generator, concentration) -> np.ndarray:
    """One Dirichlet draw per row (last axis) of ``concentration``; a 1-D array gives one draw.

    Normalised Gamma variates. Tiny concentrations can underflow every Gamma variate of a row; that
    row falls back to its mean ``concentration / sum``.

    Examples
    --------
    >>> draws = dirichlet_rows(np.random.default_rng(0), np.array([[1.0, 2.0, 3.0], [5.0, 5.0, 5.0]]))
    >>> draws.shape, draws.sum(axis=1).round(12).tolist()
    ((2, 3), [1.0, 1.0])
    >>> dirichlet_rows(np.random.default_rng(0), np.array([1.0, 1.0])).shape
    (2,)
    """
    concentration = np.asarray(concentration, dtype=float)
    rows = concentration.reshape(-1, concentration.shape[-1])
    gammas = rng.standard_gamma(rows)
    totals = gammas.sum(axis=1, keepdims=True)
    safe = np.where(totals > 0, gammas / np.where(totals > 0, totals, 1.0), 0.0)
    empty = totals[:, 0] <= 0
    if empty.any():
        safe[empty] = rows[empty] / rows[empty].sum(axis=1, keepdims=True)
    return safe.reshape(concentration.shape)


class GibbsInfo(NamedTuple):
    """What a Gibbs transition without Metropolis-Hastings moves reports (see :func:`run_chains`).

    Attributes
    ----------
    lp : float
        The sampler's target, the collapsed log joint, at the new state.
    """

    lp: float


def _fill_value(dtype: np.dtype):
    """The padding of a variable whose shape varies between draws: NaN (floats), -1 (signed
    integers), 0 (unsigned integers), False (booleans)."""
    if dtype.kind in "fc":
        return np.nan
    if dtype.kind == "i":
        return -1
    return False if dtype.kind == "b" else 0


def _stack_draws(name: str, values: list, shape: tuple[int, int]) -> dict[str, np.ndarray]:
    """Stack the kept draws of one variable into ``shape + value shape``; pad a ragged one.

    Draws of one shape are stacked as they are. Draws whose shapes differ (same number of axes) are
    padded to the largest length of each axis with :func:`_fill_value`, and ``{name}_shape``
    (``shape + (ndim,)``, int64) records each draw's own shape, the mask of its valid part.
    """
    first = values[0].shape
    if all(value.shape == first for value in values):
        return {name: np.stack(values).reshape(shape + first)}
    if any(value.ndim != len(first) for value in values):
        raise ValueError(f"the draws of {name!r} differ in their number of axes")
    sizes = np.array([value.shape for value in values], dtype=np.int64)
    dtype = np.result_type(*values)
    padded = np.full((len(values), *sizes.max(axis=0)), _fill_value(dtype), dtype=dtype)
    for index, value in enumerate(values):
        padded[(index, *(slice(0, n) for n in value.shape))] = value
    return {
        name: padded.reshape(shape + padded.shape[1:]),
        f"{name}_shape": sizes.reshape(shape + sizes.shape[1:]),
    }


def run_chains(
    init: Callable,
    step: Callable,
    draw: Callable,
    *,
    chains: int = 4,
    draws: int = 1000,
    tune: int = 500,
    thin: int = 1,
    random_state=None,
    progressbar: bool = True,
    desc: str = "sampling",
    advance: Callable | None = None,
):
    """Run ``chains`` chains of a sampler and collect their kept draws and transition info.

    The sampler contract (blackjax style): ``init(rng) -> state``, ``step(state, rng) ->
    (state, info)`` and ``draw(state, rng) -> dict``. Chain ``c`` gets its own generator ``rng``
    (:func:`chain_seeds` of ``random_state``), which the runner passes to every call of that
    chain: the chain's randomness is explicit, never a global generator. ``info`` is a NamedTuple
    the sampler family declares (:class:`GibbsInfo`: ``lp``; the mixtures add
    ``split_merge_accept``, the HACM ``leaf_jump_accept``, an HMC would add ``diverging``); its
    fields at every kept draw go to ``sample_stats`` under their own names. An acceptance field
    is the fraction of that step's proposals of that kind that were accepted (the info of the
    last of ``thin`` transitions is kept).

    Randomness of the collapsed Gibbs samplers: their numba kernels cannot take a numpy
    ``Generator``, so they draw from a splitmix64 stream (:func:`next_uniform`) seeded from
    ``rng`` by ``init`` and advanced in place. That stream stays in the state (``rng_state``):
    each family's ``init`` seeds it at its own point of ``rng``'s sequence (after the random
    labels for the topic models, before the CRP start for the mixtures), so taking it out into
    the runner would reorder the draws and change every result, whereas kept in the state every
    result stays bit for bit what it was (``tests/test_fingerprints.py``). ``rng`` is still
    passed to ``step``: the moves that draw with numpy (a Python-level sampler, an HMC's
    momenta) draw from it.

    Latent states whose shape varies between draws (an IBP's ``Z`` gaining columns) pass
    through: such a variable is padded to the largest length of each axis over all chains and
    draws (NaN for floats, -1 for signed integers, 0 unsigned, False booleans) and
    ``{name}_shape`` ``(chains, draws, ndim)`` records every draw's own shape, so
    ``Z[c, d, :, :Z_shape[c, d, 1]]`` is draw ``d`` of chain ``c``. A rectangular array keeps
    ``InferenceData``, netCDF and the vectorised summaries; a ragged (object) layout would lose
    all three. Variables of a fixed shape are stacked as they are.

    Parameters
    ----------
    init : callable
        ``init(rng) -> state``.
    step : callable
        ``step(state, rng) -> (state, info)``: one transition (a sweep); ``info`` a NamedTuple of
        scalars (or ``None``: nothing to record).
    draw : callable
        ``draw(state, rng) -> dict[str, array]``: the posterior variables of a kept draw.
    chains, draws, tune, thin : int
        ``tune`` transitions are discarded; then ``draws * thin`` are run and every ``thin``-th kept.
    random_state : int, Generator or None
    progressbar : bool
    desc : str
        Progress-bar label.
    advance : callable, optional
        ``advance(state, rng) -> state``: the transition of ``step`` without its ``info``, run for
        the transitions whose info is not kept (the ``tune`` ones and all but the last of each
        ``thin``), so that a sampler whose info costs a pass over its tables (the collapsed log
        joint) pays it only for the kept draws. It must leave the state and every generator
        exactly as ``step`` would. Default: ``step``.

    Returns
    -------
    posterior : dict[str, array (chains, draws, ...)]
        With ``{name}_shape`` beside each variable whose shape varies.
    sample_stats : dict[str, array (chains, draws)]
        The ``info`` fields of the kept draws.
    seconds : float
        Wall time spent sampling (all chains, tuning included).

    Examples
    --------
    A random walk on the width of a row of ones, with its acceptance in ``info``:

    >>> from typing import NamedTuple
    >>> class WalkInfo(NamedTuple):
    ...     lp: float
    ...     accept: float
    >>> def step(width, rng):
    ...     proposal = width + (1 if rng.random() < 0.5 else -1)
    ...     accepted = 0 <= proposal <= 3
    ...     width = proposal if accepted else width
    ...     return width, WalkInfo(lp=0.0, accept=float(accepted))
    >>> posterior, stats, _ = run_chains(lambda rng: 0, step, lambda w, rng: {"row": np.ones(w)},
    ...                                  chains=2, draws=5, tune=3, random_state=0, progressbar=False)
    >>> posterior["row"].shape[:2], posterior["row_shape"].shape, sorted(stats)
    ((2, 5), (2, 5, 1), ['accept', 'lp'])
    >>> bool(np.all(np.isnan(posterior["row"][0, 0, posterior["row_shape"][0, 0, 0]:])))
    True
    """
    _check_counts(chains, draws, tune, thin)
    if advance is None:

        def advance(state, rng):
            return step(state, rng)[0]

    generators = chain_seeds(random_state, chains)
    kept: dict[str, list] = {}
    kept_stats: dict[str, list] = {}
    total = chains * (tune + draws * thin)
    start = time.perf_counter()
    with progress_bar(total=total, desc=desc, progressbar=progressbar) as bar:
        for rng in generators:
            state = init(rng)
            for _ in range(tune):
                state = advance(state, rng)
                bar.update(1)
            for _ in range(draws):
                for _ in range(thin - 1):
                    state = advance(state, rng)
                state, info = step(state, rng)
                bar.update(thin)
                for name, value in draw(state, rng).items():
                    kept.setdefault(name, []).append(np.asarray(value))
                if info is not None:
                    for name, value in zip(info._fields, info, strict=True):
                        kept_stats.setdefault(name, []).append(value)
    seconds = time.perf_counter() - start
    posterior: dict[str, np.ndarray] = {}
    for name, values in kept.items():
        posterior.update(_stack_draws(name, values, (chains, draws)))
    sample_stats = {
        name: np.asarray(values).reshape(chains, draws) for name, values in kept_stats.items()
    }
    return posterior, sample_stats, seconds


def to_inference_data(
    posterior: dict,
    *,
    sample_stats: dict | None = None,
    log_likelihood: dict | None = None,
    observed_data: dict | None = None,
    coords: dict | None = None,
    dims: dict | None = None,
    seconds: float | None = None,
    method: str = "",
):
    """Wrap arrays as :class:`arviz.InferenceData`, recording the sampling time like PyMC does."""
    attrs = {"inference_library": "latentzoo", "method": method}
    if seconds is not None:
        attrs["sampling_time"] = float(seconds)
    idata = az.from_dict(
        posterior=posterior,
        sample_stats=sample_stats,
        log_likelihood=log_likelihood,
        observed_data=observed_data,
        coords=coords,
        dims=dims,
        attrs=attrs,
    )
    idata.posterior.attrs.update(attrs)
    return idata


def invariant_draws(model, data, posterior: xr.Dataset, dyads=None) -> dict[str, np.ndarray]:
    """Evaluate ``model.invariants`` on every posterior draw.

    Returns arrays of shape ``(chain, draw, ...)``; the loop is over draws (a few thousand at most),
    each one vectorised over the data.
    """
    names = model.param_names
    stacked = {name: posterior[name].to_numpy() for name in names}
    n_chains, n_draws = stacked[names[0]].shape[:2]
    out: dict[str, list] = {}
    for c in range(n_chains):
        for d in range(n_draws):
            params = {n: stacked[n][c, d] for n in names}
            # Only the co-occurrence families have dyads; the others take their defaults.
            extra = {} if dyads is None else {"dyads": dyads}
            values = model.invariants(params, data, **extra)
            for key, value in values.items():
                out.setdefault(key, []).append(np.asarray(value))
    return {
        key: np.stack(values).reshape((n_chains, n_draws) + np.shape(values[0]))
        for key, values in out.items()
    }


def add_invariants(idata, model, data, dyads=None):
    """Add the model's label-invariant quantities to ``idata.posterior`` (in place) and return it.

    Works for any InferenceData whose posterior holds the model's parameters under their declared
    names, from PyMC or from a fast sampler, so both sides are summarised identically.
    """
    posterior = idata.posterior
    if all(name in posterior for name in model.invariant_names):
        return idata
    values = invariant_draws(model, data, posterior, dyads=dyads)
    declared = {"p_dyad": ["dyad"], **getattr(model, "invariant_dims", {})}
    new = {}
    for key, value in values.items():
        extra = declared.get(key, [f"{key}_dim_{axis}" for axis in range(value.ndim - 2)])
        new[key] = (("chain", "draw", *extra), value)
    idata.posterior = posterior.assign(new)
    return idata


def keep_params_auto(keep_params, chains: int, draws: int, values_per_draw: int):
    """Resolve ``keep_params="auto"``: keep the parameter draws when they are small.

    ``True`` when ``chains * draws * values_per_draw`` is at most ``MAX_KEPT_VALUES``; any other
    value of ``keep_params`` is returned unchanged. When ``"auto"`` drops the draws a
    ``UserWarning`` says so, with their size and how to keep them: without them held-out data
    cannot be scored from the sample (:func:`latentzoo.perplexity`), and the saved result records
    ``kept_params=0``.

    Examples
    --------
    >>> import warnings
    >>> keep_params_auto("auto", 4, 500, 100)
    True
    >>> with warnings.catch_warnings(record=True) as caught:
    ...     warnings.simplefilter("always")
    ...     keep_params_auto("auto", 4, 500, 10**6), "keep_params" in str(caught[0].message)
    (False, True)
    """
    if keep_params == "auto":
        total = chains * draws * values_per_draw
        if total <= MAX_KEPT_VALUES:
            return True
        warn_at_caller(
            f"keep_params='auto' drops the parameter draws: {chains} chains x {draws} draws x "
            f"{values_per_draw} values = {total:.2e} numbers ({8 * total / 2**30:.1f} GiB in "
            f"float64), above {MAX_KEPT_VALUES:.0e}; held-out data then cannot be scored from the "
            "sample (latentzoo.perplexity). Pass keep_params=True to keep them, or keep fewer "
            "draws (draws=, with thin= to run as many sweeps; latentzoo.perplexity averages at "
            "most 200 draws), or test= to score a test set in the log_likelihood group",
            UserWarning,
        )
        return False
    return keep_params


def gibbs_data(model, data, test=None, coerce=None):
    """Check a Gibbs sampler's training ``data`` and held-out ``test`` (which must have its shape).

    Parameters
    ----------
    model : a registered model
        Its ``check_data`` checks ``data``.
    data : the training data
    test : the held-out data, optional
    coerce : callable, optional
        Converts ``test`` (default ``model.check_data``).

    Returns
    -------
    tuple
        ``(data, test)``, checked; ``test`` stays ``None`` when not given.

    Raises
    ------
    ValueError
        If ``test`` has another shape than ``data``.

    Examples
    --------
    >>> from latentzoo.data import load
    >>> from latentzoo.models import OneSidedClustering
    >>> data, test = gibbs_data(OneSidedClustering(2), load("toy"), load("toy"))
    >>> test.shape == data.shape
    True
    """
    data = model.check_data(data)
    if test is not None:
        test = (model.check_data if coerce is None else coerce)(test)
        if test.shape != data.shape:
            raise ValueError(f"test has shape {test.shape}, expected {data.shape}")
    return data, test


def evaluated_draw(model, sampler, data, test, dyads, pairs, keep_params) -> Callable:
    """The ``draw(state, rng)`` of a :class:`GibbsSetup` for counts scored by ``model.evaluate``.

    Each draw holds the invariants of ``model.evaluate(params, data, dyads, pairs)`` and
    ``counts``: the per-row log-likelihood of ``data`` or, with ``test``, the predictive log
    density of each held-out row (``model.predictive_log_density``), plus the multinomial
    coefficient; the parameters of ``sampler.draw`` too when ``keep_params`` is True.

    Parameters
    ----------
    model : a co-occurrence model with ``evaluate`` and ``predictive_log_density``
    sampler : its Gibbs sampler
    data, test : the training counts and the held-out ones (or None)
    dyads, pairs : what ``model.evaluate`` scores
    keep_params : bool

    Returns
    -------
    callable
        ``draw(state, rng) -> dict``.

    Examples
    --------
    >>> from latentzoo.data import load
    >>> from latentzoo.inference.one_sided import OneSidedGibbs
    >>> from latentzoo.models import OneSidedClustering
    >>> from latentzoo.models.invariants import default_dyads
    >>> from latentzoo.models.one_sided import default_pairs
    >>> model, data = OneSidedClustering(2), load("toy")
    >>> sampler = OneSidedGibbs(model, data)
    >>> draw = evaluated_draw(model, sampler, data, None, default_dyads(data), default_pairs(data),
    ...                       keep_params=False)
    >>> rng = np.random.default_rng(0)
    >>> draw(sampler.init(rng), rng)["counts"].shape
    (6,)
    """
    coefficient = model.log_multinomial_coefficient(test if test is not None else data)

    def draw(state, rng):
        params = sampler.draw(state, rng)
        per_row, out = model.evaluate(params, data, dyads, pairs)
        if test is not None:
            per_row = model.predictive_log_density(params, test, data)
        out["counts"] = per_row + coefficient
        if keep_params:
            out.update(params)
        return out

    return draw


def sample_to_inference_data(
    sampler,
    draw: Callable,
    *,
    chains: int,
    draws: int,
    tune: int,
    thin: int,
    random_state,
    progressbar: bool,
    coords: dict,
    dims: dict,
    observed,
    observed_dims: tuple[str, str] | None = None,
    initial_states=None,
    start: Callable | None = None,
    desc: str = "collapsed Gibbs",
    method: str = "gibbs",
    log_likelihood_name: str = "counts",
):
    """Run a collapsed sampler's chains (:func:`run_chains`) and return them as ``InferenceData``.

    Parameters
    ----------
    sampler
        ``init(rng)`` and ``step(state, rng) -> (state, info)``, whose ``info`` fields (``lp``,
        acceptance rates) become ``sample_stats`` (:func:`run_chains`).
    draw : callable
        ``draw(state, rng) -> dict``: the posterior variables of a kept draw and, under
        ``log_likelihood_name``, the per-row log-likelihood, which goes to the ``log_likelihood``
        group.
    chains, draws, tune, thin, random_state, progressbar
        As for :func:`run_chains`.
    coords, dims : dict
        Coordinates and dimensions of the variables (``observed_dims`` must be in ``coords``).
    observed : CoOccurrence or Dataset
        The data the log-likelihood scores. A ``CoOccurrence`` with ``observed_dims`` is stored
        densely in ``observed_data`` (dims ``observed_dims``, variable ``log_likelihood_name``) when
        it has at most ``MAX_OBSERVED_CELLS`` cells. With ``observed_dims=None``, ``observed`` is any
        dataset with ``observed_data()`` (``{name: (dims, array)}``) and ``coords()``: its arrays of
        at most ``MAX_OBSERVED_CELLS`` cells are stored under their own names and dims.
    initial_states : sequence, optional
        One start per chain (overrides ``chains``): chain ``c`` starts from
        ``start(rng, initial_states[c])``, by default ``sampler.init(rng, initial_states[c])``.
        Chains run in order; each chain's generator still comes from ``random_state``, so
        different seeds give different chains from the same start.
    desc, method : str
        Progress-bar label, and the method recorded in the attributes.
    log_likelihood_name : str

    Returns
    -------
    arviz.InferenceData
        ``posterior``, ``sample_stats``, ``log_likelihood`` and (small data) ``observed_data``.

    Examples
    --------
    >>> from latentzoo.data import load
    >>> from latentzoo.inference.aspect import AspectGibbs
    >>> from latentzoo.models import AspectModel
    >>> model, data = AspectModel(2), load("toy")
    >>> sampler = AspectGibbs(model, data)
    >>> def draw(state, rng):
    ...     params = sampler.draw(state, rng)
    ...     return {"theta": params["theta"], "counts": model.log_likelihood(params, data)}
    >>> idata = sample_to_inference_data(
    ...     sampler, draw, chains=2, draws=5, tune=2, thin=1, random_state=0, progressbar=False,
    ...     coords={"doc": list(data.row_labels), "word": list(data.col_labels)},
    ...     dims={"theta": ["doc", "topic"], "counts": ["doc"]},
    ...     observed=data, observed_dims=("doc", "word"))
    >>> idata.log_likelihood["counts"].shape, idata.observed_data["counts"].shape
    ((2, 5, 6), (6, 8))
    """
    init = sampler.init
    if initial_states is not None:
        start = sampler.init if start is None else start
        starts = iter(list(initial_states))
        chains = len(initial_states)

        def init(rng):
            return start(rng, next(starts))

    posterior, stats, seconds = run_chains(
        init,
        sampler.step,
        draw,
        chains=chains,
        draws=draws,
        tune=tune,
        thin=thin,
        random_state=random_state,
        progressbar=progressbar,
        desc=desc,
        # The tuning sweeps' info is discarded: a sampler that can skip computing it says so.
        advance=getattr(sampler, "advance", None),
    )
    log_likelihood = {log_likelihood_name: posterior.pop(log_likelihood_name)}
    idata = to_inference_data(
        posterior,
        sample_stats=stats,
        log_likelihood=log_likelihood,
        coords=coords,
        dims=dims,
        seconds=seconds,
        method=method,
    )
    if observed_dims is None:
        group = _observed_group(observed)
        if group is not None:
            idata.add_groups({"observed_data": group})
    elif observed.n_rows * observed.n_cols <= MAX_OBSERVED_CELLS:
        row_dim, col_dim = observed_dims
        counts = xr.Dataset(
            {log_likelihood_name: ((row_dim, col_dim), observed.toarray())},
            coords={row_dim: coords[row_dim], col_dim: coords[col_dim]},
        )
        idata.add_groups({"observed_data": counts})
    return idata


def _observed_group(observed) -> xr.Dataset | None:
    """The ``observed_data`` group of a ``Dataset``: its ``observed_data()`` arrays that are small.

    ``observed_data()`` gives ``{name: (dims, array)}`` and ``coords()`` the coordinates; arrays of
    more than ``MAX_OBSERVED_CELLS`` cells are left out (``None`` when nothing is left).
    """
    shape = getattr(observed, "shape", None)
    if shape is not None and int(np.prod(shape)) > MAX_OBSERVED_CELLS:
        return None
    coords = observed.coords()
    variables = {
        name: (tuple(dims), np.asarray(array))
        for name, (dims, array) in observed.observed_data().items()
        if np.size(array) <= MAX_OBSERVED_CELLS
    }
    if not variables:
        return None
    used = {dim for dims, _ in variables.values() for dim in dims}
    return xr.Dataset(variables, coords={dim: coords[dim] for dim in used if dim in coords})


_DATA_AXES = {"rows": ("doc", "row", "item"), "cols": ("word", "col", "feature")}


def _dim_sizes(model, data) -> dict[str, int]:
    """Lengths of the data and cluster dims of ``model.dims``, as Python integers (no arrays)."""
    n_rows = getattr(data, "n_rows", getattr(data, "n_items", 0))
    n_cols = getattr(data, "n_cols", getattr(data, "n_features", 0))
    sizes = {name: int(n_rows) for name in _DATA_AXES["rows"]}
    sizes.update({name: int(n_cols) for name in _DATA_AXES["cols"]})
    k = getattr(model, "n_components", None) or getattr(model, "n_clusters", None)
    for name, value in (("topic", k), ("cluster", k),
                        ("row_cluster", getattr(model, "n_row_clusters", None)),
                        ("col_cluster", getattr(model, "n_col_clusters", None))):  # fmt: skip
        if value is not None:
            sizes[name] = int(value)
    return sizes


def check_parameter_memory(model, data, what: str, copies: int = 4) -> None:
    """Refuse up front a fit whose parameter tables would not fit in memory.

    Counts the float64 values of every variable of ``model.dims`` (and ``estimate_dims``) that
    spans data and cluster axes (e.g. ``theta`` N x K, ``q`` K x M), times ``copies`` (an
    iteration holds the parameters, their update, the tempered tables and the accumulators), and
    passes the estimate to :func:`~latentzoo.data.checks.check_memory`.

    Examples
    --------
    >>> from latentzoo.data import CoOccurrence
    >>> from latentzoo.models import AspectModel
    >>> import scipy.sparse as sp
    >>> huge = CoOccurrence(sp.identity(200_000, dtype=np.int64, format="csr"))
    >>> check_parameter_memory(AspectModel(200_000), huge, "annealed EM")
    Traceback (most recent call last):
    ...
    ValueError: annealed EM would allocate ... GiB for 8.0e+10 parameter values ...
    """
    sizes = _dim_sizes(model, data)
    declared = {**getattr(model, "dims", {}), **getattr(model, "estimate_dims", {})}
    values = 0
    for dims in declared.values():
        if dims and all(dim in sizes for dim in dims):
            values += math.prod(sizes[dim] for dim in dims)
    check_memory(
        8.0 * values * copies, what, detail=f"for {float(values):.1e} parameter values",
        hint="use fewer clusters or a subset of the data",
    )  # fmt: skip


# ------------------------------------------------------------------- label switching
class LabelAxis(NamedTuple):
    """A label dimension of a family's posterior that label switching permutes between chains.

    ``dim`` names the labels (``"topic"``, ``"cluster"``, ``"row_cluster"``); ``match`` lists the
    variables whose per-chain posterior means are matched to chain 0's (the first one present in
    the posterior is used); ``values`` lists the variables whose *values* are labels of ``dim``
    (memberships such as ``z``), which are renamed rather than reordered and, when one of them is
    the match, matched through how often each item takes each label. ``size`` is the number of
    labels (needed when no posterior variable carries ``dim``).

    Examples
    --------
    >>> LabelAxis("cluster", match=("q", "z"), values=("z",), size=3).match
    ('q', 'z')
    """

    dim: str
    match: tuple
    values: tuple = ()
    size: int | None = None


def _label_profiles(posterior: xr.Dataset, axis: LabelAxis, name: str, size: int) -> np.ndarray:
    """Per chain, one row per label: the posterior mean of ``name`` with ``axis.dim`` first, or,
    for a label-valued variable, the frequency with which each item takes each label."""
    variable = posterior[name]
    if name in axis.values:
        labels = variable.transpose("chain", "draw", ...).to_numpy()
        flat = labels.reshape(labels.shape[0], labels.shape[1], -1)
        return np.stack([(flat == k).mean(axis=1) for k in range(size)], axis=1)
    mean = variable.mean("draw").transpose("chain", axis.dim, ...).to_numpy()
    return mean.reshape(mean.shape[0], mean.shape[1], -1)


def align_chains(posterior: xr.Dataset, label_axes) -> tuple[xr.Dataset, dict]:
    """Undo label switching *between* chains: relabel every chain to match chain 0.

    For each :class:`LabelAxis`, chain ``c``'s label profiles (posterior means of the matched
    variable, e.g. ``phi`` for topics) are matched to chain 0's by the Hungarian algorithm
    (:func:`scipy.optimize.linear_sum_assignment` on squared Euclidean distance); every variable
    carrying the label dimension is reordered along it with that chain's permutation, and the
    label-valued variables (memberships) are renamed. Label-invariant quantities (``loglik``,
    ``p_dyad``, co-assignments) carry no label and are left as they are.

    Switching *within* a chain (a chain that visits several labellings) is not undone: one
    permutation per chain cannot do that; summarise such chains through the invariants.

    Parameters
    ----------
    posterior : xarray.Dataset
        With ``chain`` and ``draw`` dimensions.
    label_axes : sequence of LabelAxis

    Returns
    -------
    aligned : xarray.Dataset
    permutations : dict[str, numpy.ndarray (chain, K)]
        Per aligned label dimension, ``permutations[dim][c, k]``: the label of chain ``c`` that
        became label ``k`` (chain 0 keeps its labels). Axes with no matched variable in the
        posterior are left out.

    Examples
    --------
    >>> phi = np.array([[[0.9, 0.1], [0.2, 0.8]], [[0.2, 0.8], [0.9, 0.1]]])[:, None]
    >>> posterior = xr.Dataset({"phi": (("chain", "draw", "topic", "word"), phi)})
    >>> aligned, perm = align_chains(posterior, [LabelAxis("topic", ("phi",))])
    >>> perm["topic"].tolist(), aligned["phi"].to_numpy()[1, 0, 0].tolist()
    ([[0, 1], [1, 0]], [0.9, 0.1])
    """
    from scipy.optimize import linear_sum_assignment

    permutations = {}
    for axis in label_axes:
        name = next((n for n in axis.match if n in posterior.data_vars), None)
        if name is None:
            continue
        size = axis.size if axis.size is not None else posterior.sizes[axis.dim]
        profiles = _label_profiles(posterior, axis, name, int(size))
        perm = np.empty(profiles.shape[:2], dtype=np.int64)
        for chain in range(profiles.shape[0]):  # one small K x K assignment per chain
            cost = ((profiles[0][:, None, :] - profiles[chain][None, :, :]) ** 2).sum(axis=-1)
            perm[chain] = linear_sum_assignment(cost)[1]
        permutations[axis.dim] = perm
        new = {}
        for var_name, variable in posterior.data_vars.items():
            if axis.dim in variable.dims:
                values = variable.transpose("chain", "draw", axis.dim, ...)
                array = values.to_numpy()
                reordered = np.stack([array[c][:, perm[c]] for c in range(perm.shape[0])])
                new[var_name] = values.copy(data=reordered).transpose(*variable.dims)
            elif var_name in axis.values:
                inverse = np.argsort(perm, axis=1)  # old label -> new label, per chain
                array = variable.transpose("chain", ...).to_numpy()
                renamed = np.stack([inverse[c][array[c]] for c in range(perm.shape[0])])
                new[var_name] = variable.transpose("chain", ...).copy(data=renamed)
                new[var_name] = new[var_name].transpose(*variable.dims)
        posterior = posterior.assign(new)
    return posterior, permutations


def _rhat(x: np.ndarray) -> np.ndarray:
    """Basic R-hat (Gelman et al. 2013) of ``x`` (chain, draw, m), vectorised over ``m``."""
    n = x.shape[1]
    between = n * np.var(x.mean(axis=1), axis=0, ddof=1)
    within = np.mean(np.var(x, axis=1, ddof=1), axis=0)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.sqrt((between / within + n - 1) / n)


def _z_scale(x: np.ndarray) -> np.ndarray:
    """Rank-normalise ``x`` (chain, draw, m) over chains and draws, per column, as ArviZ does
    (Blom's back-transformation of the average ranks)."""
    from scipy.special import ndtri
    from scipy.stats import rankdata

    flat = x.reshape(-1, x.shape[-1])
    ranks = rankdata(flat, axis=0, method="average")
    return ndtri((ranks - 0.375) / (flat.shape[0] + 0.25)).reshape(x.shape)


def rank_rhat(values) -> np.ndarray:
    """Rank-normalised split R-hat (Vehtari et al. 2021; ArviZ's default ``method="rank"``) of
    every element of ``values`` (chain, draw, ...), vectorised: usable on a whole ``theta``.

    The maximum of the bulk and the folded (tail) R-hat of the split chains; NaN for a quantity
    constant across all draws, and everywhere with fewer than 4 draws.

    Examples
    --------
    >>> import arviz as az
    >>> x = np.random.default_rng(0).normal(size=(4, 100, 3))
    >>> rank_rhat(x).shape, bool(np.isclose(rank_rhat(x)[0], az.rhat(x[..., 0])))
    ((3,), True)
    """
    array = np.asarray(values, dtype=float)
    shape = array.shape[2:]
    x = array.reshape(array.shape[0], array.shape[1], -1)
    if x.shape[1] < 4:
        return np.full(shape, np.nan)
    half = x.shape[1] // 2
    split = np.concatenate([x[:, :half], x[:, x.shape[1] - half :]], axis=0)
    bulk = _rhat(_z_scale(split))
    folded = np.abs(split - np.median(split.reshape(-1, split.shape[-1]), axis=0))
    tail = _rhat(_z_scale(folded))
    with np.errstate(invalid="ignore"):
        out = np.fmax(bulk, tail)
    out[np.ptp(split.reshape(-1, split.shape[-1]), axis=0) == 0] = np.nan
    return out.reshape(shape)


def rhat_threshold(
    ess: float, draws: int, chains: int, n_quantities: int, q: float = 0.995
) -> float:
    """The ``q`` quantile of the largest rank-normalised split R-hat over ``n_quantities``
    quantities of *converged* chains whose smallest bulk ESS is ``ess``: the R-hat threshold that
    correct code exceeds with probability ``1 - q``.

    The ``chains`` chains of ``draws`` draws are split into ``M = 2 chains`` halves of ``n`` draws.
    With integrated autocorrelation time ``tau = M n / ess``, a half's mean has variance
    ``sigma^2 tau / n``, so the between-half variance over the within-half variance is
    ``(tau / n) X / (1 - tau / n)`` with ``X ~ chi2(M - 1) / (M - 1)`` (the within-half variance
    of an autocorrelated chain is ``sigma^2 (1 - tau / n)``), and
    ``R^2 = (n - 1) / n + (M / ess) X / (1 - M / ess)``. The quantities are taken as independent
    (the least favourable case), so the maximum is below the threshold with probability ``q`` when
    each is below its ``q^(1 / n_quantities)`` quantile. Against 1000 simulated runs of AR(1)
    chains (``tests/false_alarms.py: max_rhat_quantile``) it gives 1.0151 where the simulation
    gives 1.0144 (4 x 2000 draws, ESS 950, 19 quantities, ``q = 0.99``).

    An ``ess`` above ``chains * draws`` is taken as ``chains * draws``.

    The customary fixed 1.01 (:data:`RHAT_MAX`) needs an ESS of about 1500 per quantity for a
    1 % false-alarm rate over 20 quantities: below that, a validation level that demands it fails
    correct samplers (issue 25).

    Examples
    --------
    >>> round(rhat_threshold(ess=950, draws=2000, chains=4, n_quantities=19, q=0.99), 4)
    1.0151
    >>> round(rhat_threshold(ess=400, draws=1000, chains=4, n_quantities=20), 3)
    1.039
    """
    from scipy import stats

    if not (ess > 0 and draws >= 4 and chains >= 1 and n_quantities >= 1 and 0 < q < 1):
        raise ValueError(
            f"rhat_threshold needs ess > 0, draws >= 4, chains >= 1, n_quantities >= 1 and "
            f"0 < q < 1; got ess={ess}, draws={draws}, chains={chains}, "
            f"n_quantities={n_quantities}, q={q}"
        )
    halves, n = 2 * chains, draws // 2
    # An ESS above the number of draws (antithetic NUTS draws) speaks for the bulk only: the folded
    # draws of the tail R-hat are about independent, so the threshold is never below theirs. An
    # ESS below two per half is the bound of a useless sample.
    ratio = min(halves / min(ess, chains * draws), 0.5)
    x = stats.chi2.ppf(q ** (1.0 / n_quantities), halves - 1) / (halves - 1)
    return float(math.sqrt((n - 1) / n + ratio * x / (1 - ratio)))


def _max_rhat(posterior: xr.Dataset, names) -> tuple[float, str]:
    """Largest rank R-hat over the float variables ``names`` and the variable reaching it."""
    worst, where = np.nan, ""
    for name in names:
        variable = posterior[name]
        if variable.dtype.kind != "f" or variable.size == 0:
            continue
        rhat = rank_rhat(variable.transpose("chain", "draw", ...).to_numpy())
        top = float(np.nanmax(rhat)) if np.isfinite(rhat).any() else np.nan
        if np.isfinite(top) and not top <= worst:
            worst, where = top, name
    return worst, where


CONVERGENCE_RULE = (
    f"rank-normalised split R-hat <= {RHAT_MAX} and bulk and tail ESS >= {ESS_PER_CHAIN_MIN} per "
    "chain (Vehtari et al. 2021, as ArviZ and PyMC apply them) on the label-invariant quantities"
)
"""The rule of :func:`convergence`, as recorded in a sample's ``convergence_rule`` attribute."""

_ADVICE = (
    "run longer chains (draws=, tune=) or start them elsewhere (another random_state, "
    "initial_assignments=)"
)


class Convergence(NamedTuple):
    """The one convergence verdict of a sample (:func:`convergence`), read by :func:`latentzoo.fit`
    (its :class:`ConvergenceWarning`), ``latentzoo fit`` (its **NOT CONVERGED** line and exit
    status) and the saved file (the attributes of :meth:`attrs`).

    ``status`` is ``"converged"`` (R-hat and both ESS meet :data:`CONVERGENCE_RULE`),
    ``"not converged"`` (one of them fails) or ``"not checked"`` (one chain, whose ESS passes: R-hat
    needs two; or fewer than 4 draws). A quantity that could not be computed is NaN with an empty
    variable name; R-hat is taken over the label-invariant float variables
    (:func:`judged_variables`), the ESS over those of them of at most ``MAX_ESS_VALUES`` values
    per draw.

    Examples
    --------
    >>> verdict = Convergence("not converged", 2, 200, 1.412, "coassign", 9.0, "coassign", 30.0,
    ...                       "loglik", "run longer chains")
    >>> verdict.converged, verdict.headline()
    (False, 'NOT CONVERGED: max R-hat 1.412 > 1.01 (coassign), min bulk ESS 9 < 200 (coassign), min tail ESS 30 < 200 (loglik)')
    """

    status: str
    chains: int
    draws: int
    max_r_hat: float
    r_hat_var: str
    min_ess_bulk: float
    ess_bulk_var: str
    min_ess_tail: float
    ess_tail_var: str
    advice: str = _ADVICE

    @property
    def converged(self) -> bool:
        """Whether the sample passed the rule (False when it failed or was not checked)."""
        return self.status == "converged"

    def _failures(self) -> list[str]:
        least = ESS_PER_CHAIN_MIN * self.chains
        out = []
        if self.max_r_hat > RHAT_MAX:
            out.append(f"max R-hat {self.max_r_hat:.3f} > {RHAT_MAX} ({self.r_hat_var})")
        for kind, value, name in (("bulk", self.min_ess_bulk, self.ess_bulk_var),
                                  ("tail", self.min_ess_tail, self.ess_tail_var)):  # fmt: skip
            if value < least:
                out.append(f"min {kind} ESS {value:.0f} < {least} ({name})")
        return out

    def headline(self) -> str:
        """``"NOT CONVERGED: <what failed>"``, ``"converged"`` or ``"convergence not checked: ..."``."""
        if self.status == "not converged":
            return "NOT CONVERGED: " + ", ".join(self._failures())
        if self.status == "converged":
            return f"converged ({CONVERGENCE_RULE})"
        why = "one chain, nothing to compare it with" if self.chains < 2 else "too few draws"
        return f"convergence not checked: {why}"

    def message(self) -> str:
        """The full sentence of a :class:`ConvergenceWarning`: what failed, the rule, what to do."""
        return (
            f"{self.headline()}; the rule is {CONVERGENCE_RULE}. The summaries of this sample "
            f"(means, perplexities, labels) are not yet the posterior's: {self.advice}"
        )

    def attrs(self) -> dict:
        """The verdict as netCDF attributes: ``convergence`` (the status), ``converged`` (1 or 0),
        ``max_r_hat``, ``min_ess_bulk``, ``min_ess_tail`` (NaN when not computed), the variables
        reaching them, ``convergence_rule`` and ``convergence_advice``."""
        return {
            "convergence": self.status, "converged": int(self.converged),
            "max_r_hat": float(self.max_r_hat), "max_r_hat_var": self.r_hat_var,
            "min_ess_bulk": float(self.min_ess_bulk), "min_ess_bulk_var": self.ess_bulk_var,
            "min_ess_tail": float(self.min_ess_tail), "min_ess_tail_var": self.ess_tail_var,
            "convergence_rule": CONVERGENCE_RULE, "convergence_advice": self.advice,
        }  # fmt: skip

    @classmethod
    def from_attrs(cls, attrs, chains: int, draws: int):
        """The verdict recorded in ``attrs`` (see :meth:`attrs`), or None when none is."""
        if "convergence" not in attrs:
            return None
        return cls(
            str(attrs["convergence"]), int(chains), int(draws),
            float(attrs.get("max_r_hat", np.nan)), str(attrs.get("max_r_hat_var", "")),
            float(attrs.get("min_ess_bulk", np.nan)), str(attrs.get("min_ess_bulk_var", "")),
            float(attrs.get("min_ess_tail", np.nan)), str(attrs.get("min_ess_tail_var", "")),
            str(attrs.get("convergence_advice", _ADVICE)),
        )  # fmt: skip


def _min_ess(posterior, names, method: str) -> tuple[float, str]:
    """Smallest ESS (``method`` "bulk" or "tail") over ``names`` and the variable reaching it."""
    least, where = np.inf, ""
    if not names:
        return np.nan, ""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # constant quantities give NaN, skipped below
        ess = az.ess(posterior[names], method=method)
    for name in names:
        values = ess[name].to_numpy()
        if np.isfinite(values).any() and float(np.nanmin(values)) < least:
            least, where = float(np.nanmin(values)), name
    return (least, where) if np.isfinite(least) else (np.nan, "")


def judged_variables(posterior, label_dims=(), invariants=()) -> list[str]:
    """The posterior variables the verdict judges: the model's ``invariants`` that the posterior
    holds, when it holds any; otherwise the float ones that carry no label dimension
    (``label_dims``, the dims of the family's :class:`LabelAxis`), i.e. the label-invariant
    quantities; every float variable when none is left.

    A PyMC reference's posterior also holds per-component parameters under dims of its own
    (a DPM's sticks ``v`` and atoms ``mu``), which no aligned label axis names: the model's
    declared invariants (``model.invariant_names``) are what its verdict judges.

    Labels that switch within a chain (the chains of a topic or mixture model visiting the
    same modes under permuted labels) raise the R-hat of ``theta`` however well the chains mix;
    the invariants (``loglik``, ``p_dyad``, ``coassign``) are what a converged sample must agree
    on (the project's rule, shared/DESIGN.md).

    Examples
    --------
    >>> import xarray as xr
    >>> posterior = xr.Dataset({"theta": (("chain", "draw", "doc", "topic"), np.zeros((1, 2, 3, 2))),
    ...                         "loglik": (("chain", "draw"), np.zeros((1, 2)))})
    >>> judged_variables(posterior, ("topic",)), judged_variables(posterior)
    (['loglik'], ['theta', 'loglik'])
    >>> judged_variables(posterior, invariants=("loglik", "coassign"))
    ['loglik']
    """
    declared = [name for name in invariants if name in posterior.data_vars]
    if declared:
        return declared
    floats = [name for name, var in posterior.data_vars.items() if var.dtype.kind == "f"]
    free = [name for name in floats if not set(posterior[name].dims) & set(label_dims)]
    return free or floats


def _compute_convergence(idata, advice: str, label_dims=(), invariants=()) -> Convergence:
    posterior = idata.posterior
    chains, draws = int(posterior.sizes["chain"]), int(posterior.sizes["draw"])
    names = judged_variables(posterior, label_dims, invariants)
    worst, where = _max_rhat(posterior, names) if chains >= 2 else (np.nan, "")
    small = [n for n in names if posterior[n].size <= MAX_ESS_VALUES * chains * draws]
    bulk, bulk_var = _min_ess(posterior, small, "bulk") if draws >= 4 else (np.nan, "")
    tail, tail_var = _min_ess(posterior, small, "tail") if draws >= 4 else (np.nan, "")
    least = ESS_PER_CHAIN_MIN * chains
    failed = worst > RHAT_MAX or bulk < least or tail < least  # NaN compares False: not failed
    if failed:
        status = "not converged"
    elif np.isfinite(worst) and (np.isfinite(bulk) or np.isfinite(tail) or not small):
        status = "converged"
    else:
        status = "not checked"
    return Convergence(status, chains, draws, worst, where, bulk, bulk_var, tail, tail_var, advice)


def convergence(idata, advice: str | None = None, label_dims=()) -> Convergence:
    """The convergence verdict of a sample: the one recorded by :func:`record_convergence` (a
    Gibbs sample, a PyMC sample from :func:`latentzoo.fit`, or either read back from netCDF), or
    else computed now by the same rule without changing ``idata``.

    The rule (:data:`CONVERGENCE_RULE`), as ArviZ 0.2x documents it after Vehtari et al. (2021)
    and PyMC applies it after sampling: every rank-normalised split R-hat at most ``RHAT_MAX`` =
    1.01 (ArviZ's ``rhat`` default method; with at least 2 chains), and the bulk and the tail ESS at least ``ESS_PER_CHAIN_MIN`` = 100 per chain (400
    for four chains, ArviZ's ``plot_ess`` line), over the variables of at most
    ``MAX_ESS_VALUES`` values per draw. Both are taken on the label-invariant quantities: the
    variables without a label dimension (:func:`judged_variables`), as the validation and the demo
    report judge them. One chain is "not converged" when its ESS fails, else "not checked"
    (R-hat needs two chains).

    Parameters
    ----------
    idata : arviz.InferenceData
        A sample with a ``posterior`` group (``chain`` and ``draw`` dims).
    advice : str, optional
        What to suggest when it failed (the default: longer chains or other starts).
    label_dims : sequence of str
        The label dimensions of the family (``"topic"``, ``"cluster"``, ...), whose variables are
        left out (:func:`judged_variables`).

    Returns
    -------
    Convergence

    Examples
    --------
    >>> import arviz as az
    >>> rng = np.random.default_rng(0)
    >>> mixed = az.from_dict(posterior={"x": rng.normal(size=(2, 500))})
    >>> stuck = az.from_dict(posterior={"x": rng.normal(size=(2, 500)) + [[0.0], [3.0]]})
    >>> convergence(mixed).status, convergence(stuck).status
    ('converged', 'not converged')
    """
    posterior = idata.posterior
    recorded = Convergence.from_attrs(
        posterior.attrs, posterior.sizes["chain"], posterior.sizes["draw"]
    )
    if recorded is not None:
        return recorded
    return _compute_convergence(idata, _ADVICE if advice is None else advice, label_dims)


def record_convergence(
    idata, advice: str | None = None, label_dims=(), invariants=()
) -> Convergence:
    """Compute the verdict of :func:`convergence` and write it into the attributes of every group
    of ``idata`` (:meth:`Convergence.attrs`: ``convergence``, ``converged``, ``max_r_hat``,
    ``min_ess_bulk``, ``min_ess_tail``, ...), so the saved file carries it; returns it.

    Examples
    --------
    >>> import arviz as az
    >>> idata = az.from_dict(posterior={"x": np.random.default_rng(0).normal(size=(2, 50))})
    >>> verdict = record_convergence(idata)
    >>> idata.posterior.attrs["convergence"] == verdict.status, idata.posterior.attrs["converged"]
    (True, 0)
    """
    verdict = _compute_convergence(
        idata, _ADVICE if advice is None else advice, label_dims, invariants
    )
    attrs = {
        **verdict.attrs(),
        "convergence_vars": ", ".join(judged_variables(idata.posterior, label_dims, invariants)),
    }
    for group in idata.groups():
        idata[group].attrs.update(attrs)
    return verdict


def diagnostic_line(idata, method: str | None = None) -> str:
    """One line of convergence diagnostics of a sample, as printed after a sampler run.

    ``"<method>: C chains x D draws, max R-hat R (var), min bulk ESS E (var), min tail ESS T
    (var)[, N divergences]: <verdict>"``, the numbers and the verdict of :func:`convergence` (the
    recorded one when the sample carries it): R-hat only with at least 2 chains; the divergences
    when ``sample_stats`` records them (NUTS), absent for Gibbs.

    Examples
    --------
    >>> import arviz as az
    >>> x = np.random.default_rng(0).normal(size=(2, 50))
    >>> diagnostic_line(az.from_dict(posterior={"loglik": x}), "gibbs")  # doctest: +ELLIPSIS
    'gibbs: 2 chains x 50 draws, max R-hat ... (loglik), min bulk ESS ... (loglik), min tail ESS ... (loglik): NOT CONVERGED: ...'
    """
    posterior = idata.posterior
    method = method or posterior.attrs.get("method", "sampler")
    verdict = convergence(idata)
    parts = [f"{method}: {verdict.chains} chains x {verdict.draws} draws"]
    if np.isfinite(verdict.max_r_hat):
        parts.append(f"max R-hat {verdict.max_r_hat:.3f} ({verdict.r_hat_var})")
    if np.isfinite(verdict.min_ess_bulk):
        parts.append(f"min bulk ESS {verdict.min_ess_bulk:.0f} ({verdict.ess_bulk_var})")
    if np.isfinite(verdict.min_ess_tail):
        parts.append(f"min tail ESS {verdict.min_ess_tail:.0f} ({verdict.ess_tail_var})")
    stats = getattr(idata, "sample_stats", None)
    if stats is not None and "diverging" in stats:
        parts.append(f"{int(stats['diverging'].sum())} divergences")
    return f"{', '.join(parts)}: {verdict.headline()}"


def align_chain_labels(idata, label_axes) -> int:
    """Align the labels of ``idata``'s chains in place (:func:`align_chains`); warn when the
    aligned parameters still disagree. Returns 1 when some labels were aligned, else 0."""
    posterior = idata.posterior
    if posterior.sizes["chain"] < 2 or not label_axes:
        return 0
    aligned, permutations = align_chains(posterior, label_axes)
    if not permutations:
        return 0
    idata.posterior = aligned
    # The classic R-hat of one float variable per label axis (the matched one, else the smallest
    # carrying the labels): ranking every theta component (the rank R-hat of diagnostic_line)
    # took most of a kept-parameter run's time, and a disagreement shows on any of them.
    checked = set()
    for axis in label_axes:
        floats = [n for n in axis.match if n in aligned and aligned[n].dtype.kind == "f"]
        floats = floats or sorted(
            (n for n, v in aligned.data_vars.items() if axis.dim in v.dims and v.dtype.kind == "f"),
            key=lambda n: aligned[n].size,
        )
        checked.update(floats[:1])
    worst, where = np.nan, ""
    for name in sorted(checked):
        values = aligned[name].transpose("chain", "draw", ...).to_numpy()
        with np.errstate(invalid="ignore"):
            rhat = _rhat(values.reshape(values.shape[0], values.shape[1], -1))
        top = float(np.nanmax(rhat)) if np.isfinite(rhat).any() else np.nan
        if np.isfinite(top) and not top <= worst:
            worst, where = top, name
    if np.isfinite(worst) and worst > RHAT_DISAGREE:
        warn_at_caller(
            f"the chains still disagree after aligning their labels to chain 0: max R-hat "
            f"{worst:.2f} on {where} (> {RHAT_DISAGREE}). They may sit in different modes, switch "
            "labels within a chain, or be too short: run longer chains (draws, tune) and judge "
            "convergence on the label-invariant quantities (loglik, p_dyad)",
            UserWarning,
        )
    return 1


class GibbsSetup(NamedTuple):
    """What a family's collapsed sampler hands to the one Gibbs entry point (:func:`gibbs_entry`).

    ``sampler`` (``init``/``step``) and ``draw`` as for
    :func:`sample_to_inference_data`, with the coordinates, dimensions and observed data of the
    family's ``InferenceData``; ``label_axes`` (:class:`LabelAxis`) says which labels
    :func:`align_chains` aligns across chains (empty: the family's labels need no alignment).
    ``heldout_rule_scored`` declares that with ``test=`` each draw's ``log_likelihood`` entry is
    that draw's held-out log density of the test unit under the model's own held-out rule (the
    mixtures' ``log p(x_i | z, X)`` of each test item), so that
    :func:`latentzoo.heldout_score` can average it over the draws when the draws alone cannot be
    scored; the co-occurrence families' per-row joint is not their per-token rule, and is not
    declared.
    """

    sampler: Any
    draw: Callable
    coords: dict
    dims: dict
    observed: Any
    observed_dims: tuple | None = None
    start: Callable | None = None
    desc: str = "collapsed Gibbs"
    log_likelihood_name: str = "counts"
    label_axes: tuple = ()
    heldout_rule_scored: bool = False


_GIBBS_NOTES = """Notes
    -----
    The ``log_likelihood`` group holds what PyMC's would, so ``az.loo`` and ``az.compare`` put both
    side by side: for count data the multinomial log-pmf of each row, which *includes* the log
    multinomial coefficient ``log(n_i! / prod_j n_ij!)``. ``exp(-sum / total)`` of it is therefore
    not a perplexity: score held-out data with :func:`latentzoo.perplexity` or
    :func:`latentzoo.heldout_score`, which need the parameter draws (``keep_params``; the
    mixtures score their partitions given the training items). The attributes record
    ``kept_params`` (1 when the parameter draws are in the posterior) and ``log_likelihood_data``
    (``"train"``, or ``"test"`` when ``test=`` was scored).

    Convergence: the attributes also carry the verdict of
    :func:`latentzoo.inference.mcmc.convergence` (rank R-hat <= 1.01 and bulk and tail ESS >= 100
    per chain, as ArviZ recommends after Vehtari et al. 2021, on the label-invariant quantities):
    ``convergence`` ("converged", "not converged" or "not checked"), ``converged`` (1 or 0),
    ``max_r_hat``, ``min_ess_bulk``, ``min_ess_tail``, the variables reaching them, the variables
    judged (``convergence_vars``), the rule and a suggestion.
    :func:`latentzoo.fit` raises a ``latentzoo.ConvergenceWarning`` from them.

    Label switching: chains of a mixture-like model find the same components under different
    labels. With ``align_labels=True`` (the default) and several chains, each chain's labels are
    permuted to match chain 0's (Hungarian matching of the per-chain posterior means), so
    ``az.summary`` of the labelled parameters compares like with like; the attribute
    ``labels_aligned`` is 1 when that was done. A ``UserWarning`` says when the chains still
    disagree after alignment (max R-hat of the aligned parameters above 1.1). Switching *within*
    a chain is not undone: judge such chains on the label-invariant quantities (``loglik``,
    ``p_dyad``, co-assignments), which alignment leaves untouched. ``align_labels=False`` keeps
    the labels as sampled. Families whose draws carry canonical labels (the mixtures' ``z`` in
    order of first appearance) have nothing to align.
"""


def _with_notes(doc: str, notes: str) -> str:
    """``doc`` with a Notes section before its Examples (numpydoc order), or at its end."""
    marker = "    Examples\n    --------"
    if marker in doc:
        head, tail = doc.split(marker, 1)
        return f"{head}    {notes.rstrip()}\n\n{marker}{tail}"
    return f"{doc.rstrip()}\n\n    {notes}"


def _holds_parameters(model, posterior, setup) -> bool:
    """The posterior holds every declared non-invariant variable of the model (its parameter
    draws and assignments), i.e. ``keep_params`` kept them."""
    invariants = set(getattr(model, "invariant_names", ()))
    declared = [
        name for name in getattr(model, "dims", {})
        if name not in invariants and name != setup.log_likelihood_name
    ]  # fmt: skip
    return bool(declared) and all(name in posterior.data_vars for name in declared)


def _convergence_advice(prepare: Callable, options: dict) -> str:
    """What to suggest for an unconverged Gibbs run: longer chains, other starts, and the
    split-merge moves when the family declares them (a ``split_merge`` option) and they were off.

    Examples
    --------
    >>> def prepare(model, data, *, chains, draws, split_merge=False): ...
    >>> "split_merge=True" in _convergence_advice(prepare, {})
    True
    >>> "split_merge" in _convergence_advice(prepare, {"split_merge": True})
    False
    """
    import inspect

    advice = _ADVICE
    if "split_merge" in inspect.signature(prepare).parameters and not options.get("split_merge"):
        # Single-item Gibbs moves cannot merge or split whole clusters; Jain-Neal moves can.
        advice += (
            ", or add split-merge moves (split_merge=True; on the command line --option "
            "split_merge=true)"
        )
    return advice


_TOY_EXAMPLE = """Examples
    --------
    >>> from latentzoo.data import load
    >>> idata = gibbs({model}, load("toy"), chains=2, draws=20, tune=10,
    ...               random_state=0, progressbar=False)
    >>> idata.posterior["{variable}"].shape
    {shape}
    """


def gibbs_entry(prepare: Callable, doc: str, toy_example: tuple | None = None) -> Callable:
    """The one collapsed-Gibbs entry point, specialised to a family: its ``gibbs`` function.

    ``prepare(model, data, chains=..., draws=..., **options) -> GibbsSetup`` checks the data and
    the family's own options and builds the sampler and its draw; the returned
    ``gibbs(model, data, **options)``, whose chain settings (``chains``, ``draws``, ``tune``,
    ``thin``, ``random_state``, ``progressbar``, ``initial_assignments``, ``align_labels``) take
    the defaults :data:`~latentzoo.inference.family.GIBBS_OPTIONS` declares, runs the chains
    through :func:`sample_to_inference_data`, the same way for every family, and then, with
    ``align_labels`` and at least 2 chains, relabels each chain to match chain 0
    (:func:`align_chains` on the family's ``GibbsSetup.label_axes``), warning (``UserWarning``)
    when the aligned parameters still disagree (max R-hat above ``RHAT_DISAGREE``). ``doc`` is
    its docstring; the function reports the module of ``prepare`` as its own and keeps
    ``prepare`` as its ``prepare`` attribute, so validation can run the production sampler and draw through
    :func:`run_chains` directly. ``toy_example``, ``(model, variable, shape)``, ends ``doc`` with the
    Examples section the co-occurrence families share: two chains of 20 draws on ``toy`` with
    ``model`` (its constructor call, as text), and the ``shape`` of the posterior's ``variable``.

    Examples
    --------
    >>> from latentzoo.inference.one_sided import gibbs
    >>> gibbs.__module__, gibbs.__name__
    ('latentzoo.inference.one_sided', 'gibbs')
    """

    def gibbs(model, data, **options):
        # The chain settings' defaults are those GIBBS_OPTIONS declares for every family's
        # method; what is left in ``options`` is the family's own (``prepare``'s).
        settings = {
            option.name: options.pop(option.name, option.default) for option in GIBBS_OPTIONS
        }
        chains, draws, tune, thin = (settings[name] for name in ("chains", "draws", "tune", "thin"))
        random_state = settings["random_state"]
        # Refused before the sampler is built: a bad option must not wait for a costly setup.
        _check_counts(chains, draws, tune, thin)
        check_random_state(random_state)
        data = model.check_data(data)
        check_parameter_memory(model, data, f"collapsed Gibbs for {type(model).__name__}")
        setup = prepare(model, data, chains=chains, draws=draws, **options)
        idata = sample_to_inference_data(
            setup.sampler, setup.draw, chains=chains, draws=draws, tune=tune, thin=thin,
            random_state=random_state, progressbar=settings["progressbar"], coords=setup.coords,
            dims=setup.dims, observed=setup.observed, observed_dims=setup.observed_dims,
            initial_states=settings["initial_assignments"], start=setup.start, desc=setup.desc,
            log_likelihood_name=setup.log_likelihood_name,
        )  # fmt: skip
        # Topics/clusters swapped between chains would make every per-label R-hat meaningless.
        aligned = align_chain_labels(idata, setup.label_axes) if settings["align_labels"] else 0
        # What a reader of the saved file needs to know what it is: model, settings, seed.
        settings = {"chains": chains, "draws": draws, "tune": tune, "thin": thin,
                    "random_state": random_state if isinstance(random_state, int) else None,
                    **{name: netcdf_attr(value) for name, value in options.items()
                       if name != "test"}}  # fmt: skip
        attrs = {**model_attrs(model), "method": "gibbs"}
        attrs.update({name: netcdf_attr(v) for name, v in settings.items() if v is not None})
        # What later scoring needs to know: are the parameter draws there (keep_params), and
        # does observed_data/log_likelihood hold the training data or the test set?
        attrs["kept_params"] = int(_holds_parameters(model, idata.posterior, setup))
        attrs["log_likelihood_data"] = "train" if options.get("test") is None else "test"
        attrs["log_likelihood_heldout_rule"] = int(
            options.get("test") is not None and setup.heldout_rule_scored
        )
        attrs["labels_aligned"] = aligned
        for group in idata.groups():
            idata[group].attrs.update(attrs)
        # The one convergence verdict, in the attributes: latentzoo.fit warns from them, the
        # command line prints and exits from them, and the saved file keeps them.
        record_convergence(
            idata, advice=_convergence_advice(prepare, options),
            label_dims=[axis.dim for axis in setup.label_axes],
        )  # fmt: skip
        return idata

    if toy_example is not None:
        model, variable, shape = toy_example
        example = _TOY_EXAMPLE.format(model=model, variable=variable, shape=shape)
        doc = f"{doc.rstrip()}\n\n    {example}"
    gibbs.__doc__ = _with_notes(doc, _GIBBS_NOTES)
    gibbs.__module__ = prepare.__module__
    # The validation levels drive the same sampler and draw without building InferenceData.
    gibbs.prepare = prepare
    return gibbs
