"""What the face asks of any fit, whether a result object or a sampler's ``InferenceData``.

A fast method returns either a result object of its family (an
:class:`~latentzoo.inference.EMResult`, a :class:`~latentzoo.inference.ClusteringResult`, a BHC
:class:`~latentzoo.models.bhc.Tree`, ...) or, for a sampler and the PyMC reference, an
``arviz.InferenceData``. Every result object answers the same questions through its own methods:

* ``to_inference_data(data=None)`` -- the fit as ``InferenceData`` (a point estimate as one chain
  of one draw);
* ``summary_lines()`` -- what ``latentzoo fit`` prints after the fit;
* ``save(path, data=None)`` -- netCDF (or ``.npz`` where the result has one), never a pickle;
* ``figure(data=None)`` -- the family's picture of the fit (a matplotlib ``Figure``) or None;
* ``arrays()`` -- every array of the fit keyed ``"group.name"`` (timings left out);
* ``objective(data)`` -- ``(name, value)`` of the number the fit optimised on ``data``.

The functions of this module ask those questions of any fit: an ``InferenceData`` (which cannot
carry methods of its own) is answered here, once for every sampler, with
:func:`~latentzoo.inference.mcmc.diagnostic_line` as its summary. Nothing here tests which family
a result belongs to.

Examples
--------
>>> import arviz as az
>>> sample = az.from_dict(posterior={"loglik": np.zeros((2, 5))}, attrs={"method": "gibbs"})
>>> as_inference_data(sample) is sample, figure(sample) is None
(True, True)
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from latentzoo.inference._docstrings import TOY_POINT_FIT, with_example_setup
from latentzoo.inference.mcmc import diagnostic_line

__all__ = [
    "append_posterior_predictive",
    "as_inference_data",
    "figure",
    "is_sample",
    "objective",
    "point_estimate",
    "result_arrays",
    "save",
    "summary_lines",
    "with_posterior_predictive",
]


def is_sample(fit) -> bool:
    """Whether ``fit`` is a sampler's ``InferenceData`` rather than a result object.

    Examples
    --------
    >>> import arviz as az
    >>> is_sample(az.from_dict(posterior={"x": np.zeros((1, 2))}))
    True
    """
    import arviz as az  # imported when a fit is asked about, not with the family modules

    return isinstance(fit, az.InferenceData)


def as_inference_data(fit, data=None):
    """``fit`` as ``InferenceData``: a sample unchanged, a result through its
    ``to_inference_data(data)``.

    Examples
    --------
    >>> import arviz as az
    >>> idata = az.from_dict(posterior={"x": np.zeros((1, 2))})
    >>> as_inference_data(idata) is idata
    True
    """
    if is_sample(fit):
        return fit
    return fit.to_inference_data() if data is None else fit.to_inference_data(data)


def summary_lines(fit) -> list[str]:
    """What ``latentzoo fit`` prints about ``fit``: a sample's convergence diagnostics
    (:func:`~latentzoo.inference.mcmc.diagnostic_line`), a result's ``summary_lines()``.

    Examples
    --------
    >>> import arviz as az
    >>> x = np.random.default_rng(0).normal(size=(2, 50))
    >>> summary_lines(az.from_dict(posterior={"loglik": x}))  # doctest: +ELLIPSIS
    ['sampler: 2 chains x 50 draws, max R-hat ... (loglik), min bulk ESS ... (loglik)']
    """
    if is_sample(fit):
        return [diagnostic_line(fit)]
    return list(fit.summary_lines())


def save(fit, path, data=None, *, predictive_seed=0, model=None, **options) -> str | None:
    """Write ``fit`` to ``path``: a sample as netCDF, a result through its ``save`` (which may
    take ``options``, e.g. a tree's ``n_clusters``). Nothing is pickled.

    With ``data``, a netCDF file also gets the posterior predictive check of the fit
    (:func:`append_posterior_predictive`, replicates seeded by ``predictive_seed``; ``model`` is
    used where neither the fit nor its attributes name one): ``az.plot_ppc`` works on it.

    Returns
    -------
    str or None
        Why the file has no ``posterior_predictive`` group when ``data`` was given and it has
        none (a cost model's, say), else None.

    Examples
    --------
    >>> import tempfile, pathlib, arviz as az
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "fit.nc"
    >>> save(az.from_dict(posterior={"x": np.zeros((1, 2))}), path)
    >>> az.from_netcdf(path).posterior["x"].shape
    (1, 2)
    """
    if is_sample(fit):
        fit.to_netcdf(str(path))
    else:
        fit.save(path, data, **options)
    netcdf = (options.get("format") or Path(path).suffix.lstrip(".")) not in ("npz",)
    if data is None or not netcdf:
        return None
    return append_posterior_predictive(fit, path, data, random_state=predictive_seed, model=model)


@with_example_setup(TOY_POINT_FIT)
def append_posterior_predictive(fit, path, data, *, random_state=0, model=None) -> str | None:
    """Add the posterior predictive check of ``fit`` on ``data`` to the netCDF file ``path`` that
    holds it: the ``posterior_predictive`` group and the observed summaries in ``observed_data``
    (:func:`~latentzoo.inference.results.posterior_predictive`, drawn by the model's own
    ``replicate`` from a stream of its own, so the fit in the file is unchanged).

    Returns
    -------
    str or None
        None when the groups were written, else why the fit has none (a cost model or a
        retrieval model defines no replicate of the data; a sample kept no parameter draws).

    Examples
    --------
    >>> import tempfile, pathlib, arviz as az
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "fit.nc"
    >>> save(fit, path, load("toy"))
    >>> az.from_netcdf(path).posterior_predictive["word_counts"].dims
    ('chain', 'draw', 'word')
    """
    from latentzoo.inference import results

    idata = as_inference_data(fit, data)
    # The model that ran: a result's own, else the one the file's attributes name, else the
    # caller's (a family registered outside latentzoo.models).
    ran = getattr(fit, "model", None)
    if ran is None:
        try:
            ran = results.model_from_attrs(results.parameter_dataset(idata).attrs)
        except ValueError:
            ran = model
    try:
        groups = results.posterior_predictive(idata, data, random_state=random_state, model=ran)
    except results.NoPosteriorPredictive as reason:
        return str(reason)
    import h5netcdf

    with h5netcdf.File(str(path), "r") as stored:
        written = {name: set(group.variables) for name, group in stored.groups.items()}
    for group, dataset in groups.items():
        # What a group of the file holds already (observed_data's data and coordinates) stays as
        # it is: only the new variables join it.
        dataset = dataset.drop_vars([name for name in dataset.variables
                                     if name in written.get(group, ())])  # fmt: skip
        encoding = {name: {"zlib": True} for name, var in dataset.data_vars.items()
                    if var.dtype.kind in "biuf"}  # fmt: skip
        dataset.to_netcdf(str(path), mode="a", group=group, engine="h5netcdf", encoding=encoding)
    return None


@with_example_setup(TOY_POINT_FIT)
def with_posterior_predictive(fit, data, *, random_state=0, max_draws=None):
    """``fit`` as ``InferenceData`` with its posterior predictive check: the groups that
    :func:`save` writes into a file, for a fit kept in memory.

    Raises
    ------
    latentzoo.inference.results.NoPosteriorPredictive
        When the fit has none (the message says why).

    Examples
    --------
    >>> idata = with_posterior_predictive(fit, load("toy"), max_draws=10)
    >>> sorted(idata.observed_data.data_vars), idata.posterior_predictive.sizes["draw"]
    (['distinct_words', 'word_counts'], 10)
    """
    import arviz as az

    from latentzoo.inference.results import PREDICTIVE_DRAWS, posterior_predictive

    idata = as_inference_data(fit, data)
    groups = posterior_predictive(
        idata, data, random_state=random_state, max_draws=max_draws or PREDICTIVE_DRAWS
    )
    merged = {name: idata[name] for name in idata.groups()}
    if "observed_data" in merged:
        groups["observed_data"] = merged["observed_data"].merge(groups["observed_data"])
    merged.update(groups)
    return az.InferenceData(**merged)


def figure(fit, data=None):
    """The family's picture of ``fit`` (a matplotlib ``Figure``), or None (a sample has none).

    Examples
    --------
    >>> import arviz as az
    >>> figure(az.from_dict(posterior={"x": np.zeros((1, 2))})) is None
    True
    """
    if is_sample(fit):
        return None
    return fit.figure(data)


def result_arrays(fit) -> dict[str, np.ndarray]:
    """Every array of ``fit`` keyed ``"group.name"``: a result's ``arrays()``, the groups of a
    sample but its ``observed_data``.

    Examples
    --------
    >>> import arviz as az
    >>> sorted(result_arrays(az.from_dict(posterior={"x": np.zeros((1, 2))})))
    ['posterior.x']
    """
    if not is_sample(fit):
        return fit.arrays()
    out = {}
    for group in fit.groups():
        if group == "observed_data":
            continue
        for name, variable in fit[group].data_vars.items():
            out[f"{group}.{name}"] = variable.to_numpy()
    return out


def point_estimate(fit) -> dict[str, np.ndarray]:
    """The parameters a point estimate saves as its one posterior draw (``{}`` for a sample).

    Examples
    --------
    >>> import arviz as az
    >>> point_estimate(az.from_dict(posterior={"x": np.zeros((1, 2))}))
    {}
    """
    return {} if is_sample(fit) else dict(fit.point_estimate())


def objective(fit, data) -> tuple[str, float] | None:
    """``(name, value)`` of what ``fit`` optimised, evaluated on ``data`` (None for a sample).

    Examples
    --------
    >>> import arviz as az
    >>> objective(az.from_dict(posterior={"x": np.zeros((1, 2))}), None) is None
    True
    """
    return None if is_sample(fit) else fit.objective(data)
