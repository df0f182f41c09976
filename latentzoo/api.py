"""``latentzoo.fit``: one entry point for every model and method."""

from __future__ import annotations

from latentzoo.data.checks import as_rng, check_random_state
from latentzoo.models._checks import check_integer, check_interval, check_positive
from latentzoo.zoo import entry_for

__all__ = ["fit", "fit_pymc"]


def fit(model, data, method: str = "annealed_em", **options):
    """Fit ``model`` to ``data`` with a fast method or the PyMC reference.

    Parameters
    ----------
    model : a registered latentzoo model, e.g. ``AspectModel(n_components=20)``
    data : the model's data container or an array it accepts
        Each model validates and converts its own data (``model.check_data``): a
        :class:`~latentzoo.data.CoOccurrence` for the co-occurrence families, a
        :class:`~latentzoo.data.Features` for the mixtures.
    method : str
        ``"annealed_em"`` (returns :class:`~latentzoo.inference.EMResult`), ``"gibbs"`` or ``"pymc"``
        (return :class:`arviz.InferenceData`).
    **options
        Passed to the method: for ``annealed_em`` ``betas`` ("auto" or a list), ``max_iter`` (per
        beta), ``tol`` (relative free-energy change that ends a temperature; 0 runs ``max_iter``),
        ``min_iter``, ``patience``, ``score_tol`` (the early-stopping rule of the tempered
        schedules), ``overrelax``, ``predictive``, ``random_state``, ``n_threads``; for ``gibbs`` ``chains``, ``draws``, ``tune``, ``thin``, ``random_state``,
        ``progressbar``, ``test``; for ``pymc`` the same plus ``initvals`` and ``target_accept``.

    Notes
    -----
    Priors a model leaves unset take the defaults of ``method`` (``model.for_method(method)``): the
    aspect model uses ``alpha=1.1, eta=1.01`` for MAP EM and the sparse ``alpha=0.1, eta=0.01`` for
    Gibbs and PyMC (see :class:`~latentzoo.models.AspectModel`). The result records the model
    actually fitted: ``result.model`` for EM, the ``model_*`` attributes of an ``InferenceData``.

    Examples
    --------
    >>> import latentzoo
    >>> from latentzoo.data import load
    >>> from latentzoo.models import AspectModel
    >>> result = latentzoo.fit(AspectModel(2), load("toy"), method="annealed_em", betas=[1.0],
    ...                        random_state=0)
    >>> bool(result.converged)
    True
    >>> result.model.alpha   # the MAP default, as AspectModel(2) left alpha unset
    1.1
    """
    entry = entry_for(model)
    if method != "pymc" and method not in entry.methods:
        known = ", ".join([*entry.methods, "pymc"])
        raise ValueError(f"unknown method {method!r} for {entry.name}; known methods: {known}")
    if hasattr(model, "for_method"):
        # Priors the user left unset take the defaults that serve this method.
        model = model.for_method(method)
    data = model.check_data(data)
    if method == "pymc":
        return fit_pymc(model, data, **options)
    return entry.methods[method](model, data, **options)


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
):
    """The reference: NUTS through ``pm.sample`` on ``model.pymc_model(data)``.

    ``initvals`` (one dict per chain) starts chains at chosen points, e.g. fast solutions for a
    mode-matched comparison. The model's invariants are added to the posterior.

    Examples
    --------
    >>> from latentzoo.data import load
    >>> from latentzoo.models import AspectModel
    >>> idata = fit_pymc(AspectModel(2), load("toy"), chains=1, draws=20, tune=20,
    ...                  random_state=0, progressbar=False)  # doctest: +SKIP
    """
    import logging

    import pymc as pm

    from latentzoo.inference.mcmc import add_invariants, model_attrs

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
    idata.posterior.attrs["method"] = "pymc"
    # The model and its hyperparameters, so latentzoo.perplexity can rebuild it from a saved file.
    idata.posterior.attrs.update({k: v for k, v in model_attrs(model).items() if "model" in k})
    return add_invariants(idata, model, data)
