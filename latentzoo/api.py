"""``latentzoo.fit``: one entry point for every model and method."""

from __future__ import annotations

from latentzoo.inference import fitted
from latentzoo.inference import reference as _reference
from latentzoo.zoo import entry_for

__all__ = ["fit", "fit_pymc", "load_result", "posterior_predictive"]

PYMC_ADVICE = (
    "run longer chains (draws=, tune=), raise target_accept, or start them elsewhere (another "
    "random_state, initvals=); a multimodal posterior (a topic model on real data) may need "
    "the family's Gibbs sampler instead"
)
"""What an unconverged PyMC sample suggests (recorded in its ``convergence_advice``)."""


BACKENDS = ("memory", "dask")
"""Where ``fit`` runs: ``"memory"`` (this process) or ``"dask"`` (row blocks on a Dask cluster,
:mod:`latentzoo.inference.dask_backend`)."""


def fit(
    model, data, method: str = "annealed_em", *, backend: str = "memory", client=None,
    blocks: int | None = None, **options,
):  # fmt: skip
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
        schedules), ``overrelax``, ``predictive``, ``random_state``, ``n_threads``; for
        ``gibbs`` ``chains``, ``draws``, ``tune``, ``thin``, ``random_state``, ``progressbar``,
        ``test``, ``align_labels``; for ``pymc`` the same plus ``initvals`` and
        ``target_accept``.
    backend : {"memory", "dask"}
        ``"dask"`` runs the annealed EM of the co-occurrence families that declare a block pass
        (aspect, one-sided, two-sided mean field, product-space, cluster-abstraction) over row
        blocks on a Dask cluster, with an explicit schedule (``betas=[...]``, default
        ``[1.0]``): same parameters as in memory to about 1e-15 relative (posteriors to ~1e-13),
        identical whatever the number of workers. ``data`` may then also be a folder
        of ``.npz`` shards (:func:`latentzoo.inference.dask_backend.write_shards`), streamed
        from disk (more data than memory).
    client : distributed.Client, optional
        With ``backend="dask"``: the cluster to use; None starts a local one (2 worker
        processes) for this fit and closes it after.
    blocks : int, optional
        With ``backend="dask"`` and data in memory: the number of row blocks (default one per
        worker).

    Returns
    -------
    EMResult or arviz.InferenceData
        After a sampler run (``gibbs``, ``pymc``) with ``progressbar`` on, one line of
        diagnostics goes to stderr (:func:`latentzoo.inference.mcmc.diagnostic_line`): chains and
        draws, the largest R-hat (with at least 2 chains) and the smallest bulk and tail ESS,
        with the variable reaching each, NUTS divergences, and the convergence verdict.

    Warns
    -----
    ConvergenceWarning
        ``latentzoo.ConvergenceWarning``, whatever ``progressbar``, when a sample is not converged
        by the rule of :func:`latentzoo.inference.mcmc.convergence`: rank-normalised split R-hat
        <= 1.01 and bulk and tail ESS >= 100 per chain (ArviZ's guidance, Vehtari et al. 2021).
        The message names what failed and suggests a remedy (more draws, other starts,
        split-merge moves for the mixtures). The warning points at the caller's line. The verdict
        is also in the sample's attributes (``convergence``, ``converged``, ``max_r_hat``,
        ``min_ess_bulk``, ``min_ess_tail``), so a saved file keeps it. To make it an error:
        ``warnings.simplefilter("error", latentzoo.ConvergenceWarning)``.

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
    if backend not in BACKENDS:
        raise ValueError(f"unknown backend {backend!r}; backends: {', '.join(BACKENDS)}")
    if backend == "memory" and (client is not None or blocks is not None):
        raise ValueError("client and blocks need backend='dask'")
    entry = entry_for(model)
    if method == "pymc" and entry.reference != "pymc":
        raise ValueError(
            f"{entry.name} has no PyMC reference of its own: it approximates the "
            f"{entry.reference} family (fit that model with method='pymc')"
        )
    if method != "pymc" and method not in entry.methods:
        known = ", ".join([*entry.methods, "pymc"])
        raise ValueError(f"unknown method {method!r} for {entry.name}; known methods: {known}")
    if hasattr(model, "for_method"):
        # Priors the user left unset take the defaults that serve this method.
        model = model.for_method(method)
    if backend == "dask":
        from latentzoo.inference import dask_backend

        block_em = dask_backend.block_em_for(entry, method)  # refuses before any cluster starts
        declared = entry.methods[method]
        declared.validate(options)
        options.setdefault("betas", [1.0])
        for name in ("tol", "max_iter"):
            # The method's own defaults (the product-space EM's tighter tol), as in memory.
            if name in declared.options:
                options.setdefault(name, declared.options[name].default)
        return dask_backend.annealed_em(
            model, data, block_em=block_em, client=client, blocks=blocks, **options
        )
    data = model.check_data(data)
    if method == "pymc":
        result = fit_pymc(model, data, **options)
    else:
        result = entry.methods[method](model, data, **options)
    if fitted.is_sample(result):
        _say_convergence(result, method, options.get("progressbar", True))
    return result


def _say_convergence(idata, method: str, progressbar: bool) -> None:
    """The sample's convergence verdict (recorded by the sampler,
    :func:`~latentzoo.inference.mcmc.convergence`): one line of diagnostics on stderr in the
    progress bar's place (quiet runs, ``progressbar=False``, print nothing), and a
    :class:`~latentzoo.inference.mcmc.ConvergenceWarning` at the caller's line when it failed."""
    import sys

    from latentzoo.inference import mcmc

    if progressbar:
        print(mcmc.diagnostic_line(idata, method), file=sys.stderr)
    verdict = mcmc.convergence(idata)
    if verdict.status == "not converged":
        mcmc.warn_at_caller(f"{method}: {verdict.message()}", mcmc.ConvergenceWarning)


_RESULT_TYPES = {
    "EMResult": ("latentzoo.inference.annealing", "EMResult"),
    "ClusteringResult": ("latentzoo.inference.pairwise", "ClusteringResult"),
}
"""The ``result_type`` attribute of a saved point estimate -> the result class that rebuilds
itself from the file (``from_inference_data``). Named, not imported, so that loading a file
imports only the family that wrote it."""


def load_result(path):
    """Read a fit saved with ``save`` or ``latentzoo fit --out x.nc`` back as a result.

    Parameters
    ----------
    path : str or path-like
        A netCDF file written by latentzoo.

    Returns
    -------
    EMResult, ClusteringResult, SavedEstimate or arviz.InferenceData
        A sample (Gibbs, PyMC) comes back as its ``InferenceData``. A point estimate comes back as
        the result that wrote it (an :class:`~latentzoo.inference.EMResult`, ...) where that
        result's class rebuilds itself from a file, otherwise as a
        :class:`~latentzoo.inference.results.SavedEstimate` (model, parameters, attributes).
        :func:`latentzoo.perplexity`, :func:`latentzoo.heldout_score`, :func:`latentzoo.labels`
        and :func:`latentzoo.inference.fitted.point_estimate` take each of them.

    Raises
    ------
    ValueError
        If the file holds neither a sample nor a point estimate, or names no latentzoo model, or
        is an ``.npz`` archive (arrays only: read it with ``numpy.load(path,
        allow_pickle=False)``).

    Examples
    --------
    >>> import pathlib, tempfile
    >>> import latentzoo
    >>> from latentzoo.data import load
    >>> from latentzoo.models import AspectModel
    >>> result = latentzoo.fit(AspectModel(2), load("toy"), betas=[1.0], random_state=0)
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "fit.nc"
    >>> result.save(path)
    >>> back = load_result(path)
    >>> type(back).__name__, back.betas, back.perplexity(load("toy")) == result.perplexity(load("toy"))
    ('EMResult', [1.0], True)
    """
    import importlib

    import arviz as az

    from latentzoo.inference import results

    if str(path).endswith(".npz"):
        raise ValueError(
            f"{path} is an .npz archive of arrays, not a result: read it with "
            "numpy.load(path, allow_pickle=False), or save the fit as .nc to load it back"
        )
    idata = az.from_netcdf(str(path))
    if not results.is_point_estimate(idata):
        results.parameter_dataset(idata)  # a file without parameters says so here
        return idata
    attrs = results.parameter_dataset(idata).attrs
    module, name = _RESULT_TYPES.get(str(attrs.get("result_type")), (None, None))
    if module is not None:
        result_class = getattr(importlib.import_module(module), name)
        if hasattr(result_class, "from_inference_data"):
            return result_class.from_inference_data(idata)
    return results.SavedEstimate.from_inference_data(idata)


def fit_pymc(model, data, **options):
    """The PyMC reference of ``model`` on ``data``, its labels aligned across chains as the family's
    Gibbs sampler aligns them (:func:`latentzoo.inference.reference.fit_pymc`, which takes the
    same ``options``; ``label_axes`` defaults to the registered family's).

    Examples
    --------
    >>> from latentzoo.models import AspectModel
    >>> [axis.dim for axis in entry_for(AspectModel(2)).labels_to_align(AspectModel(2))]
    ['topic']
    """
    from latentzoo.inference.mcmc import record_convergence

    options.setdefault("label_axes", entry_for(model).labels_to_align(model))
    idata = _reference.fit_pymc(model, data, **options)
    # The verdict every sample carries (the Gibbs samplers record theirs as they finish), on
    # the same label-invariant quantities.
    label_dims = [axis.dim for axis in options["label_axes"] or ()]
    record_convergence(
        idata,
        advice=PYMC_ADVICE,
        label_dims=label_dims,
        invariants=getattr(model, "invariant_names", ()),
    )
    return idata


def posterior_predictive(fit, data, *, random_state=0, max_draws: int = 100):
    """``fit`` as ``InferenceData`` with its posterior predictive check, the groups ``latentzoo
    fit --out`` writes into a file: ``posterior_predictive`` (at most ``max_draws`` replicates
    of the data, one chain; a sample's draws thinned evenly, or replicates of a point
    estimate) and the observed summaries beside the data in ``observed_data``, so that
    ``az.plot_ppc`` runs on it (:func:`latentzoo.inference.fitted.with_posterior_predictive`).

    The replicates are drawn by the model's own ``replicate`` from a random stream of their own
    (:func:`latentzoo.inference.results.predictive_rng`, seeded by ``random_state``): the fit is
    not redrawn and stays as it was.

    Raises
    ------
    latentzoo.inference.results.NoPosteriorPredictive
        For a family that defines no replicate of its data (pairwise and central clustering,
        Bayesian Sets: the message says why), or a sample that kept no parameter draws.

    Examples
    --------
    >>> import arviz as az
    >>> from latentzoo.data import load
    >>> from latentzoo.models import OneSidedClustering
    >>> result = fit(OneSidedClustering(2), load("toy"), betas=[1.0], random_state=0)
    >>> idata = posterior_predictive(result, load("toy"), max_draws=50)
    >>> idata.posterior_predictive["word_counts"].shape, sorted(idata.observed_data.data_vars)
    ((1, 50, 8), ['distinct_words', 'word_counts'])
    """
    return fitted.with_posterior_predictive(
        fit, data, random_state=random_state, max_draws=max_draws
    )
