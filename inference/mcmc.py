"""The chain runner shared by every sampler of the zoo.

A sampler is a triple of pure-ish functions in the style of blackjax: ``init(rng) -> state``,
``step(state) -> state`` (one sweep) and ``draw(state, rng) -> dict`` (the posterior variables of one
kept draw, named as in the PyMC declaration). :func:`run_chains` owns the one driver loop: per-chain
seeds spawned from one ``random_state``, tuning (burn-in) sweeps, thinning, a progress bar, and the
conversion to :class:`arviz.InferenceData` with ``posterior``, ``sample_stats``, ``log_likelihood`` and
``observed_data`` groups.
"""

from __future__ import annotations

import time
from collections.abc import Callable

import arviz as az
import numpy as np
import xarray as xr
from tqdm.auto import tqdm

__all__ = ["run_chains", "chain_seeds", "add_invariants", "invariant_draws"]


def chain_seeds(random_state, chains: int) -> list[np.random.Generator]:
    """Independent generators for ``chains`` chains, spawned from one seed.

    Examples
    --------
    >>> a = chain_seeds(1, 2); b = chain_seeds(1, 2)
    >>> float(a[1].random()) == float(b[1].random())
    True
    """
    if isinstance(random_state, np.random.Generator):
        sequence = random_state.bit_generator.seed_seq.spawn(1)[0]
    else:
        sequence = np.random.SeedSequence(random_state)
    return [np.random.default_rng(child) for child in sequence.spawn(chains)]


def _check_counts(chains, draws, tune, thin):
    for name, value, low in (("chains", chains, 1), ("draws", draws, 1), ("tune", tune, 0)):
        if isinstance(value, bool) or not isinstance(value, int | np.integer) or value < low:
            raise ValueError(f"{name} must be an integer >= {low}, got {value!r}")
    if isinstance(thin, bool) or not isinstance(thin, int | np.integer) or thin < 1:
        raise ValueError(f"thin must be an integer >= 1, got {thin!r}")


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
    stats: Callable | None = None,
    desc: str = "sampling",
):
    """Run ``chains`` chains and stack their draws.

    Parameters
    ----------
    init : callable
        ``init(rng) -> state``.
    step : callable
        ``step(state) -> state``: one transition (a sweep).
    draw : callable
        ``draw(state, rng) -> dict[str, array]``: the posterior variables of a kept draw.
    chains, draws, tune, thin : int
        ``tune`` transitions are discarded; then ``draws * thin`` are run and every ``thin``-th kept.
    random_state : int, Generator or None
    progressbar : bool
    stats : callable, optional
        ``stats(state) -> dict[str, float]`` recorded per kept draw into ``sample_stats``.

    Returns
    -------
    posterior : dict[str, array (chains, draws, ...)]
    sample_stats : dict[str, array (chains, draws)]
    seconds : float
        Wall time spent sampling (all chains, tuning included).
    """
    _check_counts(chains, draws, tune, thin)
    generators = chain_seeds(random_state, chains)
    posterior: dict[str, list] = {}
    sample_stats: dict[str, list] = {}
    total = chains * (tune + draws * thin)
    start = time.perf_counter()
    with tqdm(total=total, desc=desc, disable=not progressbar, leave=False) as bar:
        for rng in generators:
            state = init(rng)
            for _ in range(tune):
                state = step(state)
                bar.update(1)
            kept: dict[str, list] = {}
            kept_stats: dict[str, list] = {}
            for _ in range(draws):
                for _ in range(thin):
                    state = step(state)
                bar.update(thin)
                for name, value in draw(state, rng).items():
                    kept.setdefault(name, []).append(np.asarray(value))
                if stats is not None:
                    for name, value in stats(state).items():
                        kept_stats.setdefault(name, []).append(value)
            for name, values in kept.items():
                posterior.setdefault(name, []).append(np.stack(values))
            for name, values in kept_stats.items():
                sample_stats.setdefault(name, []).append(np.asarray(values))
    seconds = time.perf_counter() - start
    return (
        {name: np.stack(values) for name, values in posterior.items()},
        {name: np.stack(values) for name, values in sample_stats.items()},
        seconds,
    )


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
            values = model.invariants({n: stacked[n][c, d] for n in names}, data, dyads=dyads)
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
