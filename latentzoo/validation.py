"""``latentzoo.validate``: the four-level comparison of fast inference with the PyMC reference.

The levels (DESIGN.md section 5), each run on data of the right kind:

1. **exact** — a data set of a few items whose posterior over all latent assignments is enumerated;
   the collapsed Gibbs sampler's state frequencies (independent chains) are tested by chi-square;
2. **reference** — synthetic data with well-separated structure, where PyMC's own chains agree
   (R-hat <= 1.01 over 4 chains); the Gibbs sampler must agree with PyMC within combined MCSE, and a
   point estimator (EM) must lie inside the reference posterior;
3. **mode-matched** — real data, where no sampler mixes between modes: PyMC and Gibbs chains are
   started at the same annealed-EM solutions and compared chain by chain; the spread of modes is
   reported rather than averaged away;
4. **calibrated** — simulation-based calibration of the Gibbs sampler on data drawn from the prior.

Each model family describes how to build these problems in a :class:`Protocol` (the sizes, its
simulator's keywords, how to start PyMC and Gibbs at an EM solution); the levels themselves are
written once, here.
"""

from __future__ import annotations

import dataclasses
import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from latentzoo.data import CoOccurrence, load
from latentzoo.inference.compare import (
    Check,
    Comparison,
    compare,
    enumerate_assignments,
    exact_test,
    point_in_posterior,
    sbc,
)
from latentzoo.zoo import entry_for

__all__ = ["validate", "Settings", "Protocol", "PROTOCOLS", "QUICK", "FULL"]

LEVEL_NAMES = ("exact", "reference", "mode-matched", "calibrated")


@dataclass(frozen=True)
class Settings:
    """Sizes of each level's problem; ``QUICK`` for tests, ``FULL`` for reports."""

    exact_chains: int = 20_000
    exact_sweeps: int = 30
    # R-hat <= 1.01 is demanded of every invariant: with 4 x 300 draws the estimator's own noise
    # (max over ~80 quantities) crossed 1.01 for about one seed in three; 4 x 1000 keeps it near 1.005.
    pymc_draws: int = 1000
    pymc_tune: int = 500
    gibbs_draws: int = 1000
    gibbs_thin: int = 4
    real_subset: tuple = (20, 30)  # first rows, most frequent columns
    real_draws: int = 200
    sbc_sims: int = 100
    full: bool = False


QUICK = Settings()
FULL = Settings(
    pymc_draws=1000,
    pymc_tune=500,
    gibbs_draws=2000,
    real_subset=(60, 150),
    real_draws=300,
    sbc_sims=200,
    full=True,
)


def _smooth(matrix, floor):
    """Move a distribution (rows) off the simplex boundary, where NUTS cannot start."""
    matrix = np.asarray(matrix, dtype=float) + floor
    return matrix / matrix.sum(axis=-1, keepdims=True)


@dataclass(frozen=True)
class Protocol:
    """How one model family builds the problems of the four levels.

    Attributes
    ----------
    small : callable
        ``small(model, sizes) -> model``: the family's model at the given cluster sizes, with the
        user's priors.
    sizes : dict
        Cluster sizes for ``"exact"``, ``"reference"``, ``"real"``, ``"sbc"`` problems.
    exact_data : CoOccurrence or None
        The tiny data set whose posterior is enumerated (None: no exact level).
    synthetic : callable
        ``synthetic(settings) -> dict`` of simulator keywords for the separated data.
    sbc_data : dict
        Simulator keywords for SBC (draws from the prior).
    sampler : str or None
        Registry method name of the collapsed Gibbs sampler.
    sampler_class : callable or None
        ``sampler_class(model, data)``: an object with ``exact_draws``.
    enumerate : callable or None
        ``enumerate(model, data, sampler) -> (states, log_probs)``.
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
    """

    small: Callable
    sizes: dict
    exact_data: CoOccurrence | None
    synthetic: Callable
    sbc_data: dict
    sampler: str | None
    sampler_class: Callable | None
    enumerate: Callable | None
    em: str
    initvals: Callable
    gibbs_start: Callable | None
    random_start: Callable | None = None
    pymc_draws_factor: int = 1


# ---------------------------------------------------------------------------- families
def _aspect_protocol() -> Protocol:
    from latentzoo.inference.aspect import AspectGibbs
    from latentzoo.models import AspectModel

    def enumerate_states(model, data, sampler):
        states = enumerate_assignments(len(sampler.words), model.n_components)
        log_probs = model.collapsed_log_joint(
            sampler.docs, sampler.words, states, data.n_rows, data.n_cols
        )
        return states, log_probs

    def gibbs_start(params, sampler, rng):
        """Token assignments drawn from the E-step posterior of the EM solution."""
        theta, phi = params["theta"], params["phi"]
        weights = theta[sampler.docs] * phi[:, sampler.words].T
        weights /= weights.sum(axis=1, keepdims=True)
        u = rng.random(len(weights))[:, None]
        return np.minimum((weights.cumsum(axis=1) < u).sum(axis=1), theta.shape[1] - 1)

    def synthetic(settings):
        n_docs, n_words, length = (30, 60, 200) if settings.full else (10, 12, 60)
        return {"n_docs": n_docs, "n_words": n_words, "doc_length": length}

    return Protocol(
        small=lambda m, k: AspectModel(k, alpha=m.alpha, eta=m.eta),
        sizes={"exact": 2, "reference": 2, "reference_full": 3, "real": 3, "sbc": 2},
        exact_data=CoOccurrence([[2, 1, 0], [0, 1, 2]]),
        synthetic=synthetic,
        sbc_data={"n_docs": 4, "n_words": 5, "doc_length": 6},
        sampler="gibbs",
        sampler_class=AspectGibbs,
        enumerate=enumerate_states,
        em="annealed_em",
        initvals=lambda p: {"theta": _smooth(p["theta"], 1e-3), "phi": _smooth(p["phi"], 1e-4)},
        gibbs_start=gibbs_start,
    )


def _one_sided_protocol() -> Protocol:
    from latentzoo.inference.one_sided import OneSidedGibbs
    from latentzoo.models import OneSidedClustering

    def enumerate_states(model, data, sampler):
        states = enumerate_assignments(data.n_rows, model.n_clusters)
        return states, model.collapsed_log_joint(states, data)

    def gibbs_start(params, sampler, rng):
        resp = params["resp"]
        u = rng.random(len(resp))[:, None]
        return np.minimum((resp.cumsum(axis=1) < u).sum(axis=1), resp.shape[1] - 1)

    def synthetic(settings):
        n_docs, n_words, length = (24, 30, 60) if settings.full else (12, 12, 30)
        return {"n_docs": n_docs, "n_words": n_words, "doc_length": length}

    return Protocol(
        small=lambda m, k: OneSidedClustering(k, alpha=m.alpha, eta=m.eta),
        sizes={"exact": 2, "reference": 2, "reference_full": 3, "real": 3, "sbc": 2},
        exact_data=CoOccurrence([[3, 1, 0], [2, 2, 0], [0, 1, 3], [0, 0, 2]]),
        synthetic=synthetic,
        sbc_data={"n_docs": 5, "n_words": 5, "doc_length": 4},
        sampler="gibbs",
        sampler_class=OneSidedGibbs,
        enumerate=enumerate_states,
        em="annealed_em",
        initvals=lambda p: {"rho": _smooth(p["rho"], 1e-3), "q": _smooth(p["q"], 1e-4)},
        gibbs_start=gibbs_start,
    )


def _product_space_protocol() -> Protocol:
    from latentzoo.models import ProductSpaceMixture

    def synthetic(settings):
        n_docs, n_words, tokens = (20, 24, 4000) if settings.full else (8, 10, 800)
        return {"n_docs": n_docs, "n_words": n_words, "n_tokens": tokens}

    def initvals(p):
        return {
            "pi_flat": _smooth(np.ravel(p["pi"]), 1e-3),
            "p_row": _smooth(p["p_row"], 1e-4),
            "q_col": _smooth(p["q_col"], 1e-4),
        }

    return Protocol(
        small=lambda m, k: ProductSpaceMixture(k, k, alpha=m.alpha, eta=m.eta),
        sizes={"reference": 2, "reference_full": 2, "real": 2},
        exact_data=None,
        synthetic=synthetic,
        sbc_data={},
        sampler=None,
        sampler_class=None,
        enumerate=None,
        em="annealed_em",
        initvals=initvals,
        gibbs_start=None,
    )


def _two_sided_protocol() -> Protocol:
    from latentzoo.inference.two_sided import TwoSidedGibbs
    from latentzoo.models import TwoSidedClustering

    def enumerate_states(model, data, sampler):
        states = enumerate_assignments(data.n_rows + data.n_cols, model.n_row_clusters)
        log_probs = model.collapsed_log_joint(
            states[:, : data.n_rows], states[:, data.n_rows :], data
        )
        return states, log_probs

    def synthetic(settings):
        # PyMC's discrete steps mix slowly: keep the problem tiny and the posterior wide enough
        # (30 tokens) that single-site moves travel; 60 tokens left chains on separate states.
        return {"n_rows": 8, "n_cols": 10, "n_tokens": 30, "separation": 0.9}

    def labels(params):
        return {"I": np.asarray(params["I"]).argmax(1), "J": np.asarray(params["J"]).argmax(1)}

    return Protocol(
        small=lambda m, k: TwoSidedClustering(k, k, alpha=m.alpha, eta=m.eta),
        sizes={"exact": 2, "reference": 2, "reference_full": 2, "real": 2, "sbc": 2},
        exact_data=CoOccurrence([[3, 0, 1], [0, 2, 1], [1, 0, 2]]),
        synthetic=synthetic,
        sbc_data={"n_rows": 4, "n_cols": 5, "n_tokens": 20},
        sampler="gibbs",
        sampler_class=TwoSidedGibbs,
        enumerate=enumerate_states,
        em="annealed_em",
        initvals=labels,
        gibbs_start=lambda params, sampler, rng: tuple(labels(params).values()),
        random_start=lambda model, data, rng: {
            "I": rng.integers(0, model.n_row_clusters, data.n_rows),
            "J": rng.integers(0, model.n_col_clusters, data.n_cols),
        },
        pymc_draws_factor=5,
    )


PROTOCOLS: dict[str, Callable[[], Protocol]] = {
    "aspect": _aspect_protocol,
    "one_sided": _one_sided_protocol,
    "two_sided": _two_sided_protocol,
    "product_space": _product_space_protocol,
}


def register_protocol(name: str, factory: Callable[[], Protocol]) -> None:
    """Add a family's validation protocol (``factory`` is called lazily)."""
    PROTOCOLS[name] = factory


# -------------------------------------------------------------------------------- levels
def _log(progressbar, message):
    if progressbar:
        print(message, flush=True)


def _method(entry, name):
    from latentzoo.api import _resolve

    return _resolve(entry.methods[name])


def exact_level(entry, protocol: Protocol, model, settings: Settings, rng) -> Comparison:
    """Level 1: enumerate every assignment of a tiny data set."""
    tiny = protocol.small(model, protocol.sizes["exact"])
    data = protocol.exact_data
    sampler = protocol.sampler_class(tiny, data)
    states, log_probs = protocol.enumerate(tiny, data, sampler)
    draws = sampler.exact_draws(settings.exact_chains, settings.exact_sweeps, rng)
    name = "Gibbs state frequencies = enumerated posterior"
    check = exact_test(log_probs, draws, n_labels=int(states.max()) + 1, name=name)
    return Comparison(checks=[check])


def reference_level(entry, protocol, model, settings, rng, progressbar=False) -> Comparison:
    """Level 2: separated synthetic data; 4 PyMC chains against Gibbs (or EM inside PyMC)."""
    from latentzoo.api import fit_pymc

    k = protocol.sizes["reference_full" if settings.full else "reference"]
    small = protocol.small(model, k)
    full, _ = small.simulate(rng, separated=True, **protocol.synthetic(settings))
    data, test = full.split(0.2, rng)
    _log(progressbar, f"reference level: PyMC on {data}")
    initvals = None
    if protocol.random_start is not None:
        initvals = [protocol.random_start(small, data, rng) for _ in range(4)]
    reference = fit_pymc(
        small, data, chains=4, draws=settings.pymc_draws * protocol.pymc_draws_factor,
        tune=settings.pymc_tune, random_state=rng, progressbar=progressbar, initvals=initvals,
    )  # fmt: skip
    if protocol.sampler is not None:
        fast = _method(entry, protocol.sampler)(
            small, data, chains=4, draws=settings.gibbs_draws, tune=200,
            thin=settings.gibbs_thin, random_state=rng, progressbar=progressbar,
        )  # fmt: skip
        return compare(small, data, fast, reference, names=("gibbs", "pymc"), test=test)
    # A tight tolerance: mixture likelihoods have plateaus where a loose relative tolerance stops.
    estimate = _method(entry, protocol.em)(
        small, data, betas=[1.0], tol=1e-9, max_iter=3000, random_state=rng
    )
    return point_in_posterior(small, data, estimate.params, reference, name=protocol.em)


def mode_matched_level(entry, protocol, model, data, settings, rng, progressbar=False):
    """Level 3: real data; PyMC and Gibbs chains started at the same annealed-EM solutions."""
    from latentzoo.api import fit_pymc

    n_rows, n_cols = settings.real_subset
    subset = data.subset(rows=np.arange(min(n_rows, data.n_rows)), cols=data.top_columns(n_cols))
    subset = subset.subset(rows=np.flatnonzero(subset.row_totals > 0))
    local = protocol.small(model, protocol.sizes["real"])
    em = _method(entry, protocol.em)
    solutions = [em(local, subset, betas=[1.0], max_iter=300, random_state=rng) for _ in range(2)]
    initvals = [protocol.initvals(s.params) for s in solutions]
    _log(progressbar, f"mode-matched level: PyMC on {subset}, started at EM solutions")
    reference = fit_pymc(
        local, subset, chains=2, draws=settings.real_draws, tune=settings.real_draws,
        random_state=rng, progressbar=progressbar, initvals=initvals,
    )  # fmt: skip
    sampler = protocol.sampler_class(local, subset)
    starts = [protocol.gibbs_start(s.params, sampler, rng) for s in solutions]
    fast = _method(entry, protocol.sampler)(
        local, subset, draws=settings.real_draws * 2, tune=0, thin=settings.gibbs_thin,
        random_state=rng, progressbar=progressbar, initial_assignments=starts,
    )  # fmt: skip
    return compare(local, subset, fast, reference, level="mode-matched", names=("gibbs", "pymc"))


def calibration_level(entry, protocol, model, settings, rng, progressbar=False):
    """Level 4: SBC of the Gibbs sampler on small data sets drawn from the prior."""
    small = protocol.small(model, protocol.sizes["sbc"])
    gibbs = _method(entry, protocol.sampler)

    def sampler(data, generator, n_draws):
        return gibbs(
            small, data, chains=1, draws=n_draws, tune=50, thin=5, random_state=generator,
            progressbar=False,
        )  # fmt: skip

    return sbc(
        small, sampler, settings.sbc_sims, random_state=rng, progressbar=progressbar,
        **protocol.sbc_data,
    )  # fmt: skip


def _applicable(protocol: Protocol, level: str) -> str | None:
    """Why a level cannot run for this family (None when it can)."""
    if level == "exact" and (protocol.exact_data is None or protocol.sampler is None):
        return "no collapsed sampler whose posterior can be enumerated"
    if level in ("mode-matched", "calibrated") and protocol.sampler is None:
        return "no sampler to compare or calibrate (point estimator only)"
    return None


def validate(
    model,
    data=None,
    *,
    quick: bool = False,
    levels=LEVEL_NAMES,
    random_state=0,
    progressbar: bool = False,
    settings: Settings | None = None,
):
    """Validate the fast inference of ``model`` against its PyMC reference on four levels.

    Parameters
    ----------
    model : a registered model (e.g. ``AspectModel``, ``OneSidedClustering``)
        Its priors are used at every level; the problem sizes come from ``settings``.
    data : CoOccurrence or dataset name, optional
        Real data for the mode-matched level (default: the registry's dataset).
    quick : bool
        Small problems (well under a minute per family); otherwise the report sizes.
    levels : iterable of str
        Which levels to run. A level that does not apply to the family (e.g. SBC of a model that
        only has a point estimator) is recorded as a skipped check, not silently dropped.

    Returns
    -------
    comparison : Comparison
        All checks; ``comparison.sbc`` holds the SBC result and ``comparison.timings`` the seconds
        per level.

    Examples
    --------
    >>> import latentzoo
    >>> from latentzoo.models import AspectModel
    >>> c = latentzoo.validate(AspectModel(2), levels=["exact"])
    >>> c.levels_reached
    ['exact']
    """
    entry = entry_for(model)
    unknown = set(levels) - set(LEVEL_NAMES)
    if unknown:
        raise ValueError(f"unknown validation levels: {sorted(unknown)}")
    if entry.name not in PROTOCOLS:
        raise ValueError(f"no validation protocol for {entry.name}; known: {', '.join(PROTOCOLS)}")
    protocol = PROTOCOLS[entry.name]()
    settings = settings or (QUICK if quick else FULL)
    rng = np.random.default_rng(random_state)
    if data is None:
        data = entry.dataset
    if isinstance(data, str):
        data = load(data)
    result = Comparison()
    result.timings = {}
    result.sbc = None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for level in levels:
            reason = _applicable(protocol, level)
            if reason is not None:
                result.skipped.append(Check(level, level, True, f"not applicable: {reason}"))
                continue
            start = time.perf_counter()
            if level == "exact":
                result.extend(exact_level(entry, protocol, model, settings, rng), level)
            elif level == "reference":
                outcome = reference_level(entry, protocol, model, settings, rng, progressbar)
                result.extend(outcome, level)
            elif level == "mode-matched":
                outcome = mode_matched_level(
                    entry, protocol, model, data, settings, rng, progressbar
                )
                result.extend(outcome, level)
            else:
                outcome = calibration_level(entry, protocol, model, settings, rng, progressbar)
                result.checks.append(outcome.check)
                result.sbc = outcome
            result.timings[level] = time.perf_counter() - start
    return result


def with_settings(settings: Settings, **changes) -> Settings:
    """A copy of ``settings`` with some sizes changed."""
    return dataclasses.replace(settings, **changes)
