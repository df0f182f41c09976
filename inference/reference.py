"""The PyMC reference of a model: NUTS (or PyMC's discrete steps) on ``model.pymc_model(data)``.

:func:`fit_pymc` is the reference side of every comparison: ``latentzoo.fit(..., method="pymc")``
calls it, and so do the validation levels (:mod:`latentzoo.inference.validation`), below the face.
PyMC is imported when a reference is fitted, not with this module.
"""

from __future__ import annotations

from latentzoo.data.checks import as_rng, check_random_state
from latentzoo.models._checks import check_integer, check_interval, check_positive

__all__ = ["fit_pymc"]


def _add_model_log_likelihood(idata, model, data) -> None:
    """The ``log_likelihood`` group from the model's own per-row function, when PyMC has no
    observed variable to score (a likelihood declared as ``pm.Potential``).

    Named and shaped as the Gibbs output of the family: ``counts`` (co-occurrence families) or
    ``x`` (mixtures) over the first dimension of ``model.dims[name]``, ``model.log_likelihood``
    of each draw's parameters plus the multinomial coefficient where the model defines one (as
    the Gibbs draws add it); for a mixture, each item's likelihood under the drawn mixing
    measure, as the mixture Gibbs sampler scores its draws. Left out when the model defines no
    likelihood of the PyMC draws (the two-sided reference samples the assignments ``I``, ``J``
    alone, with the parameters integrated out).
    """
    import numpy as np
    import xarray as xr

    posterior = idata.posterior
    dims = getattr(model, "dims", {})
    observed = next((name for name in ("counts", "x") if name in dims), None)
    skip = {observed, *getattr(model, "invariant_names", ())}
    names = [name for name in getattr(model, "param_names", dims) if name in posterior]
    names = [name for name in names if name not in skip]
    if observed is None or not names:
        return
    row_dims = dims[observed]
    stacked = {name: posterior[name].to_numpy() for name in names}
    n_chains, n_draws = posterior.sizes["chain"], posterior.sizes["draw"]
    offset = model.log_multinomial_coefficient(data) if hasattr(
        model, "log_multinomial_coefficient"
    ) else 0.0  # fmt: skip
    try:
        values = np.stack([
            model.log_likelihood({n: stacked[n][c, d] for n in names}, data) + offset
            for c in range(n_chains) for d in range(n_draws)
        ])  # fmt: skip
    except ValueError:  # the model has no likelihood of these variables alone
        return
    values = values.reshape(n_chains, n_draws, -1)
    row = row_dims[0]
    coords = {"chain": posterior["chain"], "draw": posterior["draw"]}
    labels = model.coords(data).get(row) if hasattr(model, "coords") else None
    if labels is not None and len(labels) == values.shape[-1]:
        coords[row] = list(labels)
    group = xr.Dataset({observed: (("chain", "draw", row), values)}, coords=coords)
    idata.add_groups({"log_likelihood": group})


def _int_seed(random_state) -> int | None:
    random_state = check_random_state(random_state)
    if random_state is None or isinstance(random_state, int):
        return random_state
    return int(as_rng(random_state).integers(2**31 - 1))


def fit_pymc(
    model,
    data,
    chains: int = 4,
    draws: int = 500,
    tune: int = 500,
    random_state=None,
    progressbar: bool = True,
    initvals=None,
    target_accept: float = 0.9,
    cores: int | None = None,
    temperature: float = 1.0,
    align_labels: bool = True,
    label_axes=(),
):
    """The reference: NUTS through ``pm.sample`` on ``model.pymc_model(data)``.

    ``initvals`` (one dict per chain) starts chains at chosen points, e.g. fast solutions for a
    mode-matched comparison. The model's invariants are added to the posterior, and the
    ``log_likelihood`` group holds PyMC's pointwise log-likelihood of the observed variable
    (``pm.compute_log_likelihood``: for the aspect model ``counts`` over ``doc``, the
    multinomial log-pmf of each row) or, where the likelihood is declared as a ``pm.Potential``,
    the model's own per-row log-likelihood of each draw, under the name and dims of the Gibbs
    output, so ``az.loo`` and ``az.compare`` take both (the mixtures: ``x``, each item under the
    drawn mixing measure). It is absent where the draws define no per-row likelihood comparable
    to the Gibbs one (the two-sided reference samples only the assignments).

    With ``align_labels`` (the default) and several chains, each chain's labels (topics,
    clusters) are matched to chain 0's as the Gibbs samplers do
    (:func:`latentzoo.inference.mcmc.align_chain_labels`; a warning says when the chains still
    disagree), and the attribute ``labels_aligned`` records it: NUTS chains started at random
    points settle on different labellings of the same posterior, so per-label summaries of
    unaligned chains mix topics. Families whose labels carry meaning (the stick-breaking order
    of the DPM) are left as sampled.

    Examples
    --------
    >>> from latentzoo.data import load
    >>> from latentzoo.models import AspectModel
    >>> idata = fit_pymc(AspectModel(2), load("toy"), chains=1, draws=20, tune=20,
    ...                  random_state=0, progressbar=False)  # doctest: +SKIP
    """
    import logging

    import pymc as pm

    from latentzoo.inference.mcmc import add_invariants, align_chain_labels, model_attrs

    # Checked here, before PyMC compiles anything: its own errors come late and name nothing.
    check_integer("chains", chains)
    check_integer("draws", draws)
    check_integer("tune", tune, low=0)
    check_interval("target_accept", target_accept, 0, 1)
    check_positive("temperature", temperature)
    if cores is not None:
        check_integer("cores", cores)
    seed = _int_seed(random_state)
    if initvals is not None:
        if isinstance(initvals, dict):
            initvals = [initvals] * chains
        if len(initvals) != chains:
            raise ValueError(
                f"initvals must hold one dict per chain ({chains}), got {len(initvals)}"
            )

    logging.getLogger("pymc").setLevel(logging.ERROR if not progressbar else logging.WARNING)
    with model.pymc_model(data, temperature=temperature) as declared:
        # target_accept tunes NUTS; a model with only discrete variables has no NUTS step.
        continuous = any(rv.type.dtype.startswith("float") for rv in declared.free_RVs)
        nuts = {"target_accept": target_accept} if continuous else {}
        idata = pm.sample(
            draws=draws,
            tune=tune,
            chains=chains,
            cores=cores if cores is not None else min(chains, 2),
            random_seed=seed,
            progressbar=progressbar,
            initvals=initvals,
            compute_convergence_checks=False,
            **nuts,
        )
        if declared.observed_RVs:
            pm.compute_log_likelihood(idata, progressbar=False)
    if "log_likelihood" not in idata.groups():
        # Likelihood declared as a pm.Potential: no observed variable for PyMC to score.
        _add_model_log_likelihood(idata, model, data)
    idata.posterior.attrs["method"] = "pymc"
    # The model and its hyperparameters, so latentzoo.perplexity can rebuild it from a saved file.
    idata.posterior.attrs.update({k: v for k, v in model_attrs(model).items() if "model" in k})
    idata = add_invariants(idata, model, data)
    axes = tuple(label_axes) if align_labels else ()
    idata.posterior.attrs["labels_aligned"] = align_chain_labels(idata, axes)
    return idata
