"""``latentzoo.validate``: the four-level comparison of a fast sampler with its PyMC reference.

The levels (DESIGN.md section 5), each run here on data of the right kind:

1. **exact** — a corpus of a few tokens whose posterior over topic assignments is enumerated; the
   Gibbs sampler's state frequencies (independent chains) are tested by chi-square;
2. **reference** — synthetic data with well-separated topics, where PyMC's own chains agree
   (R-hat <= 1.01 over 4 chains); Gibbs must agree with PyMC within combined MCSE;
3. **mode-matched** — real data, where no sampler mixes between modes: PyMC and Gibbs chains are
   started at the same annealed-EM solutions and compared chain by chain; the spread of modes is
   reported rather than averaged away;
4. **calibrated** — simulation-based calibration of the Gibbs sampler on corpora drawn from the prior.
"""

from __future__ import annotations

import time
import warnings
from dataclasses import dataclass

import numpy as np

from latentzoo.data import CoOccurrence, load
from latentzoo.inference.aspect import AspectGibbs, annealed_em, gibbs
from latentzoo.inference.compare import (
    Comparison,
    compare,
    enumerate_assignments,
    exact_test,
    sbc,
)
from latentzoo.models import AspectModel
from latentzoo.zoo import entry_for

__all__ = ["validate", "Settings", "QUICK", "FULL"]


@dataclass(frozen=True)
class Settings:
    """Sizes of each level's problem; ``QUICK`` for tests, ``FULL`` for reports."""

    exact_chains: int = 20_000
    exact_sweeps: int = 30
    synthetic: tuple = (10, 12, 60)  # documents, words, tokens per document
    synthetic_k: int = 2
    pymc_draws: int = 300
    pymc_tune: int = 300
    gibbs_draws: int = 1000
    gibbs_thin: int = 4
    real_subset: tuple = (20, 30)  # first documents, most frequent words
    real_k: int = 2
    real_draws: int = 200
    sbc_sims: int = 100
    sbc_sizes: tuple = (4, 5, 6)


QUICK = Settings()
FULL = Settings(
    synthetic=(30, 60, 200),
    synthetic_k=3,
    pymc_draws=400,
    pymc_tune=400,
    gibbs_draws=2000,
    real_subset=(60, 150),
    real_k=3,
    real_draws=300,
    sbc_sims=200,
)


def _log(progressbar, message):
    if progressbar:
        print(message, flush=True)


def exact_level(model: AspectModel, settings: Settings, rng) -> Comparison:
    """Level 1: enumerate every topic assignment of a 6-token corpus."""
    tiny = AspectModel(2, alpha=model.alpha, eta=model.eta)
    data = CoOccurrence([[2, 1, 0], [0, 1, 2]])
    sampler = AspectGibbs(tiny, data)
    states = enumerate_assignments(len(sampler.words), tiny.n_components)
    log_probs = tiny.collapsed_log_joint(
        sampler.docs, sampler.words, states, data.n_rows, data.n_cols
    )
    draws = sampler.exact_draws(settings.exact_chains, settings.exact_sweeps, rng)
    check = exact_test(log_probs, draws, name="Gibbs state frequencies = enumerated posterior")
    return Comparison(checks=[check])


def reference_level(model, settings: Settings, rng, progressbar=False) -> Comparison:
    """Level 2: separated synthetic topics, 4 PyMC chains vs 4 Gibbs chains."""
    from latentzoo.api import fit_pymc

    n_docs, n_words, length = settings.synthetic
    synthetic_model = AspectModel(settings.synthetic_k, alpha=model.alpha, eta=model.eta)
    full, _ = synthetic_model.simulate(
        rng, n_docs=n_docs, n_words=n_words, doc_length=length, separated=True
    )
    data, test = full.split(0.2, rng)
    _log(progressbar, f"reference level: PyMC NUTS on {data}")
    reference = fit_pymc(
        synthetic_model, data, chains=4, draws=settings.pymc_draws, tune=settings.pymc_tune,
        random_state=rng, progressbar=progressbar,
    )  # fmt: skip
    fast = gibbs(
        synthetic_model, data, chains=4, draws=settings.gibbs_draws, tune=200,
        thin=settings.gibbs_thin, random_state=rng, progressbar=progressbar,
    )  # fmt: skip
    return compare(synthetic_model, data, fast, reference, names=("gibbs", "pymc"), test=test)


def _assignments_from(params, sampler: AspectGibbs, rng):
    """Token assignments drawn from the E-step posterior of an EM solution (a Gibbs start)."""
    theta, phi = params["theta"], params["phi"]
    weights = theta[sampler.docs] * phi[:, sampler.words].T
    weights /= weights.sum(axis=1, keepdims=True)
    cumulative = weights.cumsum(axis=1)
    u = rng.random(len(weights))[:, None]
    return np.minimum((cumulative < u).sum(axis=1), theta.shape[1] - 1)


def mode_matched_level(model, data, settings: Settings, rng, progressbar=False) -> Comparison:
    """Level 3: real data; PyMC and Gibbs chains started at the same annealed-EM solutions."""
    from latentzoo.api import fit_pymc

    n_docs, n_words = settings.real_subset
    subset = data.subset(rows=np.arange(min(n_docs, data.n_rows)), cols=data.top_columns(n_words))
    keep = subset.row_totals > 0
    subset = subset.subset(rows=np.flatnonzero(keep))
    local = AspectModel(settings.real_k, alpha=model.alpha, eta=model.eta)
    solutions = [
        annealed_em(local, subset, betas=[1.0], max_iter=300, random_state=rng).params
        for _ in range(2)
    ]
    initvals = [
        {
            "theta": (s["theta"] + 1e-3) / (s["theta"] + 1e-3).sum(1, keepdims=True),
            "phi": (s["phi"] + 1e-4) / (s["phi"] + 1e-4).sum(1, keepdims=True),
        }
        for s in solutions
    ]
    _log(progressbar, f"mode-matched level: PyMC NUTS on {subset}, started at EM solutions")
    reference = fit_pymc(
        local, subset, chains=2, draws=settings.real_draws, tune=settings.real_draws,
        random_state=rng, progressbar=progressbar, initvals=initvals,
    )  # fmt: skip
    sampler = AspectGibbs(local, subset)
    starts = [_assignments_from(s, sampler, rng) for s in solutions]
    fast = gibbs(
        local, subset, draws=settings.real_draws * 2, tune=0, thin=settings.gibbs_thin,
        random_state=rng, progressbar=progressbar, initial_assignments=starts,
    )  # fmt: skip
    return compare(local, subset, fast, reference, level="mode-matched", names=("gibbs", "pymc"))


def calibration_level(model, settings: Settings, rng, progressbar=False):
    """Level 4: SBC of the Gibbs sampler on tiny corpora drawn from the prior."""
    small = AspectModel(2, alpha=model.alpha, eta=model.eta)
    n_docs, n_words, length = settings.sbc_sizes

    def sampler(data, generator, n_draws):
        return gibbs(
            small, data, chains=1, draws=n_draws, tune=50, thin=5, random_state=generator,
            progressbar=False,
        )  # fmt: skip

    result = sbc(
        small, sampler, settings.sbc_sims, random_state=rng, n_docs=n_docs, n_words=n_words,
        doc_length=length, progressbar=progressbar,
    )  # fmt: skip
    return result


def validate(
    model,
    data=None,
    *,
    quick: bool = False,
    levels=("exact", "reference", "mode-matched", "calibrated"),
    random_state=0,
    progressbar: bool = False,
    settings: Settings | None = None,
):
    """Validate the fast sampler of ``model`` against its PyMC reference on four levels.

    Parameters
    ----------
    model : AspectModel
        Its priors are used at every level; sizes come from ``settings``.
    data : CoOccurrence or dataset name, optional
        Real data for the mode-matched level (default: the registry's dataset).
    quick : bool
        Small problems (about a minute); otherwise the report sizes.
    levels : iterable of str
        Which levels to run.

    Returns
    -------
    comparison : Comparison
        All checks; ``comparison.sbc`` holds the SBC result when that level ran.

    Examples
    --------
    >>> import latentzoo
    >>> from latentzoo.models import AspectModel
    >>> c = latentzoo.validate(AspectModel(2), levels=["exact"])
    >>> c.levels_reached
    ['exact']
    """
    entry = entry_for(model)
    unknown = set(levels) - {"exact", "reference", "mode-matched", "calibrated"}
    if unknown:
        raise ValueError(f"unknown validation levels: {sorted(unknown)}")
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
            start = time.perf_counter()
            if level == "exact":
                result.extend(exact_level(model, settings, rng), level)
            elif level == "reference":
                result.extend(reference_level(model, settings, rng, progressbar), level)
            elif level == "mode-matched":
                result.extend(mode_matched_level(model, data, settings, rng, progressbar), level)
            else:
                outcome = calibration_level(model, settings, rng, progressbar)
                result.checks.append(outcome.check)
                result.sbc = outcome
            result.timings[level] = time.perf_counter() - start
    return result
