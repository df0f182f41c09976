"""One definition of held-out scores and cluster labels for every kind of result.

A fit of the zoo comes back as one of three kinds: an :class:`~latentzoo.inference.EMResult`
(annealed EM and its hard and mean-field variants), the ``InferenceData`` of a collapsed Gibbs
sampler, or the ``InferenceData`` of the PyMC reference; the last two may also have been saved
with ``to_netcdf`` and read back. The functions here score and label all of them the same way:

* :func:`heldout_log_likelihood` -- the log predictive probability of held-out data, per row of a
  :class:`~latentzoo.data.CoOccurrence` (``sum_j n_ij log P(y_j | x_i)`` over the held-out counts)
  or per item of :class:`~latentzoo.data.Features`;
* :func:`perplexity` -- ``exp(-sum heldout_log_likelihood / units)``;
* :func:`heldout_score` -- ``sum heldout_log_likelihood / units``, the held-out log-likelihood per
  unit (higher is better; ``perplexity = exp(-heldout_score)``);
* :func:`labels` -- hard cluster labels of the rows (and of the columns for the two-sided
  families), or the dominant topic of each document for the aspect model.

The *unit* is a held-out token (``test.total``) for co-occurrence data and a held-out item
(``test.n_items``, one whole feature vector) for the mixtures' :class:`~latentzoo.data.Features`,
whose ``split`` holds out whole items.

Point estimates are scored with the model's own ``heldout_log_likelihood`` (the clustering models
predict a held-out token of row ``i`` from the training posterior of that row's cluster, Hofmann &
Puzicha 1998, eq. (32), (47)). A posterior sample is scored by its *posterior predictive*: the
probability of each held-out cell (token of row ``i`` and column ``j``; or held-out item) is the
average over draws of the draw's probability, the same held-out rule applied to each draw. Averaging
probabilities, not parameters, makes the score invariant to label switching. A sample of one draw
therefore gives exactly the point-estimate value at that draw's parameters.

A point estimate saved to a file (``to_inference_data``, ``save``, ``latentzoo fit --out``) holds
its parameters in the group ``point_estimate`` (:data:`POINT_ESTIMATE_GROUP`, no ``chain`` or
``draw`` dimension), never in a one-draw ``posterior``; :func:`parameter_dataset` is the one reader
of either layout, and the functions here score and label such an ``InferenceData`` exactly as the
result object it was written from.

The ``log_likelihood`` group of a sampler's ``InferenceData`` is not this score: it holds what
PyMC's would (for counts the multinomial log-pmf of each row of the *training* data, which includes
the log multinomial coefficient ``log(n_i! / prod_j n_ij!)``), so ``exp(-sum / total)`` of it is
not a perplexity.
"""

from __future__ import annotations

import ast
import dataclasses
from typing import Protocol, runtime_checkable

import numpy as np
from scipy.special import logsumexp

from latentzoo import models as _models
from latentzoo.inference._docstrings import TOY_POINT_FIT, with_example_setup
from latentzoo.inference._lazy import lazy_import
from latentzoo.models._checks import check_integer
from latentzoo.models.base import REFIT_ADVICE, TwoSidedLabels, missing_draws_error
from latentzoo.models.conjugate import COMPONENTS

# Imported at first use: listing the zoo imports this module and needs none of them.
az = lazy_import("arviz")

__all__ = [
    "LIST_ATTRS",
    "MAX_DRAWS",
    "NoPosteriorPredictive",
    "POINT_ESTIMATE_GROUP",
    "PREDICTIVE_DRAWS",
    "PointEstimate",
    "SavedEstimate",
    "TwoSidedLabels",
    "heldout_log_likelihood",
    "heldout_score",
    "is_point_estimate",
    "labels",
    "list_attr",
    "model_from_attrs",
    "parameter_dataset",
    "perplexity",
    "point_estimate_inference_data",
    "posterior_predictive",
    "predictive_rng",
]

MAX_DRAWS = 200
"""Posterior draws a sample is thinned to (evenly spaced over chains and draws) by default."""

_ROW_DIMS = ("doc", "row", "item")
_COL_DIMS = ("word", "col", "feature")


@runtime_checkable
class PointEstimate(Protocol):
    """What a point-estimate result declares itself to be: it carries the fitted ``model`` and
    its ``params`` (an :class:`~latentzoo.inference.EMResult`). A posterior sample is an
    ``arviz.InferenceData`` instead; the functions here accept either."""

    model: object
    params: dict


POINT_ESTIMATE_GROUP = "point_estimate"
"""The group that holds a saved point estimate: its parameters with named dimensions and no
``chain`` or ``draw``.

Not a ``posterior``: a one-draw posterior made ``az.summary`` warn "Shape validation failed" and
report NaN spreads (issue 24). ArviZ 0.23 writes and reads a group outside its schema silently
(``InferenceData`` warns about one only with ``warn_on_custom_groups=True``; ``from_netcdf``
never does), and none of the schema's groups says "estimate" (``constant_data`` is data the model
was given, not a fitted value)."""

LIST_ATTRS = ("betas", "transitions")
"""Attributes of a saved point estimate that hold a list of numbers. netCDF cannot tell a length-1
attribute from a scalar (``[1.0]`` reads back as ``1.0``), so they are written as numeric arrays,
which every netCDF tool reads as numbers (a JSON string would not be), and read back as lists by
:func:`list_attr`."""


def list_attr(attrs, name: str) -> list[float] | None:
    """The list-valued attribute ``name`` (one of :data:`LIST_ATTRS`) as a list, whatever netCDF
    made of a length-1 one; None when absent.

    Examples
    --------
    >>> list_attr({"betas": np.float64(1.0)}, "betas"), list_attr({}, "transitions")
    ([1.0], None)
    """
    value = attrs.get(name)
    if value is None:
        return None
    return [float(item) for item in np.atleast_1d(value).tolist()]


def point_estimate_inference_data(estimate, attrs: dict, tables: dict | None = None):
    """The ``InferenceData`` of a point estimate: the one layout every point estimate is saved in.

    Parameters
    ----------
    estimate : xarray.Dataset
        The parameters with named dimensions and their coordinates (no ``chain``, no ``draw``):
        the group :data:`POINT_ESTIMATE_GROUP`.
    attrs : dict
        netCDF-safe attributes (model, method, settings); ``point_estimate=1`` is added. Every group
        carries them.
    tables : dict of str to xarray.Dataset, optional
        Further groups, e.g. the per-step trace of an annealing schedule.

    Examples
    --------
    >>> import xarray as xr
    >>> estimate = xr.Dataset({"z": ("item", np.array([0, 1, 1]))}, coords={"item": ["a", "b", "c"]})
    >>> idata = point_estimate_inference_data(estimate, {"method": "greedy"})
    >>> idata.groups(), idata.point_estimate.attrs["point_estimate"]
    (['point_estimate'], 1)
    """
    groups = {POINT_ESTIMATE_GROUP: estimate, **(tables or {})}
    attrs = {**attrs, "point_estimate": 1}
    for group in groups.values():
        group.attrs.update(attrs)
    return az.InferenceData(**groups, warn_on_custom_groups=False)


def is_point_estimate(idata) -> bool:
    """Whether ``idata`` holds a point estimate rather than a posterior sample: it has the group
    :data:`POINT_ESTIMATE_GROUP`, or (files written before issue 24) a one-draw ``posterior`` with
    the attribute ``point_estimate=1``.

    Examples
    --------
    >>> is_point_estimate(az.from_dict(posterior={"x": np.zeros((2, 5))}))
    False
    """
    groups = idata.groups()
    if POINT_ESTIMATE_GROUP in groups:
        return True
    return "posterior" in groups and bool(int(idata.posterior.attrs.get("point_estimate", 0)))


def parameter_dataset(idata):
    """The parameters an ``InferenceData`` holds, whether a sample or a point estimate: the one
    reader of both layouts.

    Returns
    -------
    xarray.Dataset
        For a point estimate the estimate, with its attributes and without ``chain`` or ``draw``
        (an old file's one-draw ``posterior`` reduced to its draw); for a sample the ``posterior``
        group itself (``chain``, ``draw``, ...).

    Raises
    ------
    ValueError
        If ``idata`` has neither group.

    Examples
    --------
    >>> sample = az.from_dict(posterior={"x": np.zeros((2, 5))})
    >>> parameter_dataset(sample)["x"].dims
    ('chain', 'draw')
    """
    groups = idata.groups()
    if POINT_ESTIMATE_GROUP in groups:
        return idata[POINT_ESTIMATE_GROUP]
    if "posterior" not in groups:
        raise ValueError(
            f"the InferenceData holds no parameters: neither a posterior nor a "
            f"{POINT_ESTIMATE_GROUP} group (groups: {', '.join(groups) or 'none'})"
        )
    if is_point_estimate(idata):
        return idata.posterior.isel(chain=0, draw=0, drop=True)
    return idata.posterior


@with_example_setup(TOY_POINT_FIT)
@dataclasses.dataclass
class SavedEstimate:
    """A point estimate read back from an ``InferenceData`` (:class:`PointEstimate`): the model
    rebuilt from the attributes, the parameters and the attributes.

    What :func:`latentzoo.load_result` returns for a point estimate whose result class cannot
    rebuild itself from a file; the functions of this module take it as they take the result it
    was written from.

    Examples
    --------
    >>> saved = SavedEstimate.from_inference_data(fit.to_inference_data())
    >>> bool(np.isclose(perplexity(saved, load("toy")), fit.perplexity(load("toy"))))
    True
    """

    model: object
    params: dict
    attrs: dict = dataclasses.field(default_factory=dict)

    @classmethod
    def from_inference_data(cls, idata, model=None) -> SavedEstimate:
        """The point estimate of ``idata`` (``ValueError`` for a sample)."""
        if not is_point_estimate(idata):
            raise ValueError("the InferenceData holds a posterior sample, not a point estimate")
        estimate = parameter_dataset(idata)
        attrs = dict(estimate.attrs)
        model = model if model is not None else model_from_attrs(attrs)
        params = {name: variable.to_numpy() for name, variable in estimate.data_vars.items()}
        return cls(model, params, attrs)

    def point_estimate(self) -> dict:
        """The estimate (:attr:`params`)."""
        return self.params


_HELD_OUT_SETUP = """    >>> import latentzoo
    >>> from latentzoo.data import load
    >>> from latentzoo.models import AspectModel
    >>> train, test = load("toy").split(0.3, random_state=0)
"""


def _held_out_example(score):
    """Open the Examples of a held-out score with the setup the three share: the toy corpus split
    into ``train`` and ``test`` (each token held out with probability 0.3), and the aspect model."""
    marker = "    Examples\n    --------\n"
    head, tail = score.__doc__.split(marker, 1)
    score.__doc__ = f"{head}{marker}{_HELD_OUT_SETUP}{tail}"
    return score


# ------------------------------------------------------------------------------ the model
def _hyperparameter_from_text(text: str, field: str):
    """A hyperparameter object from the text ``model_attrs`` writes for it, e.g.
    ``BetaBernoulli(a=1.0)`` (a mixture's component) or ``TopicTree(parents=[-1, 0, 0])`` (the
    HACM's tree).

    Only a call of one of those classes (the components of
    ``latentzoo.models.conjugate.COMPONENTS``, :class:`~latentzoo.models.TopicTree`) with literal
    keyword arguments is accepted (``ast.literal_eval`` on each value): nothing read from a file is
    executed.
    """
    try:
        node = ast.parse(text, mode="eval").body
        if not isinstance(node, ast.Call) or not isinstance(node.func, ast.Name) or node.args:
            raise ValueError
        known = {cls.__name__: cls for cls in (*COMPONENTS.values(), _models.TopicTree)}
        cls = known.get(node.func.id)
        if cls is None:
            raise ValueError
        kwargs = {kw.arg: ast.literal_eval(kw.value) for kw in node.keywords}
        return cls(**kwargs)
    except (SyntaxError, ValueError, TypeError) as error:
        what = {"component": "the mixture component", "tree": "the topic tree"}[field]
        raise ValueError(f"cannot rebuild {what} from {text!r}") from error


def model_from_attrs(attrs) -> object:
    """Rebuild the model of a saved fit from its attributes (those of ``mcmc.model_attrs``).

    ``attrs["model"]`` names a model class of :mod:`latentzoo.models` and ``attrs["model_<name>"]``
    gives each hyperparameter (a mixture's component as its text).

    Raises
    ------
    ValueError
        If the attributes do not name a latentzoo model or its hyperparameters do not rebuild it
        (e.g. a PyMC ``InferenceData`` not made by ``latentzoo.fit``): pass ``model=`` instead.

    Examples
    --------
    >>> model_from_attrs({"model": "AspectModel", "model_n_components": 3, "model_alpha": 0.5,
    ...                   "model_eta": 0.01})
    AspectModel(n_components=3, alpha=0.5, eta=0.01)
    """
    name = attrs.get("model")
    cls = getattr(_models, str(name), None) if name is not None else None
    if cls is None or not dataclasses.is_dataclass(cls):
        raise ValueError(
            f"the result's attributes name no latentzoo model (model={name!r}), so the model cannot "
            "be rebuilt from them; pass model=, the model that was fitted"
        )
    kwargs = {}
    for item in dataclasses.fields(cls):
        key = f"model_{item.name}"
        if key not in attrs:
            continue
        value = attrs[key]
        if item.name in ("component", "tree") and isinstance(value, str):
            # An unset hyperparameter is written "None", maybe with a note of what stands in.
            unset = value.split(" ", 1)[0] == "None"
            value = None if unset else _hyperparameter_from_text(value, item.name)
        elif isinstance(value, np.ndarray):
            value = tuple(value.tolist()) if value.ndim else value.item()
        elif isinstance(value, np.generic):
            value = value.item()
        kwargs[item.name] = value
    try:
        return cls(**kwargs)
    except (TypeError, ValueError) as error:
        raise ValueError(
            f"cannot rebuild {name} from the result's attributes ({error}); pass model=, the "
            "model that was fitted"
        ) from error


def _is_idata(result) -> bool:
    return isinstance(result, az.InferenceData)


def _is_sample(result) -> bool:
    """Whether ``result`` is a posterior sample (an ``InferenceData`` that is no point estimate)."""
    return _is_idata(result) and not is_point_estimate(result)


def _estimate_of(result, model) -> PointEstimate:
    """``result`` as a point estimate: an ``InferenceData`` of one read back, a result as it is."""
    if _is_idata(result):
        return SavedEstimate.from_inference_data(result, model)
    return result


def _model_of(result, model):
    if model is not None:
        return model
    if _is_idata(result):
        return model_from_attrs(parameter_dataset(result).attrs)
    if isinstance(result, PointEstimate):
        return result.model
    raise ValueError(
        "result must be an EMResult or an arviz.InferenceData from latentzoo.fit, got "
        f"{type(result).__name__}"
    )


def _as_data(model, data, name: str):
    """``data`` as the model's container (converted, not re-checked against the model's sizes:
    a small test set may hold fewer tokens than the model has clusters)."""
    try:
        return model.data_type.coerce(data)
    except ValueError as error:
        raise ValueError(f"{name}: {error}") from error


def _units(test) -> float:
    """Held-out units: tokens of a co-occurrence matrix, items of a feature matrix."""
    units = test.n_heldout_units
    if units == 0:
        raise ValueError("test holds no observations: a held-out score needs at least one")
    return float(units)


# ---------------------------------------------------------------------- posterior draws
def _draw_positions(posterior, max_draws) -> list[tuple[int, int]]:
    """(chain, draw) of the kept draws, thinned evenly to at most ``max_draws``."""
    n_chains, n_draws = posterior.sizes["chain"], posterior.sizes["draw"]
    total = n_chains * n_draws
    if max_draws is not None:
        check_integer("max_draws", max_draws)
    if max_draws is None or total <= max_draws:
        flat = np.arange(total)
    else:
        flat = np.unique(np.round(np.linspace(0, total - 1, max_draws)).astype(np.int64))
    return [(int(f // n_draws), int(f % n_draws)) for f in flat]


def _draw_params(posterior, names, chain: int, draw: int) -> dict:
    return {name: posterior[name].isel(chain=chain, draw=draw).to_numpy() for name in names}


def _kept(posterior, names) -> list[str]:
    return [name for name in names if name in posterior.data_vars]


def _posterior_shape(posterior) -> tuple[int | None, int | None]:
    """(rows or items, columns or features) of the data a posterior was fitted to, from its dims."""
    rows = next((posterior.sizes[d] for d in _ROW_DIMS if d in posterior.sizes), None)
    cols = next((posterior.sizes[d] for d in _COL_DIMS if d in posterior.sizes), None)
    return rows, cols


def _check_test_shape(test, rows, cols, name="test") -> None:
    """The one message for held-out data of the wrong shape (the container's rule)."""
    test.check_fit_shape(rows, cols, name)


def _observed_train(result, model):
    """The training data stored in ``observed_data``, or None (absent, or a scored test set)."""
    if "observed_data" not in result.groups():
        return None
    attrs = result.posterior.attrs
    if attrs.get("method") == "gibbs" and attrs.get("log_likelihood_data", "") != "train":
        return None  # a Gibbs run with test= stores the test set there; old files do not say
    return model.data_type.from_observed_data(result.observed_data)


def _training_data(result, model, train):
    if train is not None:
        return _as_data(model, train, "train")
    return _observed_train(result, model)


_SCORED_ADVICE = {
    True: (
        "its log_likelihood group scored another test set than this one (or did not store it "
        "in observed_data): pass train=, the training data, or score the test set gibbs was given"
    ),
    False: (
        "it was made with test=, whose log_likelihood group holds each draw's joint log density "
        "of a test row, not this per-token score: refit with keep_params=True, or keep fewer "
        "draws (draws= with thin=, as latentzoo.perplexity averages at most 200) so that "
        "keep_params='auto' keeps them"
    ),
}
"""What to do with a sample made with ``test=`` that cannot score ``test``, by whether its
``log_likelihood`` group holds the model's held-out rule (``log_likelihood_heldout_rule``)."""


def _heldout_rule_scored(result) -> bool:
    """Whether the sample's ``log_likelihood`` group scored a test set by the model's held-out
    rule (the attribute ``log_likelihood_heldout_rule`` that
    :func:`~latentzoo.inference.mcmc.gibbs_entry` records)."""
    return bool(int(result.posterior.attrs.get("log_likelihood_heldout_rule", 0)))


def _scored_heldout(result, model, test, positions) -> np.ndarray | None:
    """The posterior predictive of ``test`` read from the ``log_likelihood`` group, or None.

    Available when the sampler ran with ``test=`` and declared that each draw's entry there is
    that draw's held-out log density under the model's own held-out rule (the attribute
    ``log_likelihood_heldout_rule``; the mixtures' ``log p(x_i | z, X)``), and ``test`` is the test
    set it scored (stored in ``observed_data``): then ``log mean_s exp(entry_s)`` over the same
    thinned draws is exactly what the draws and the training data would give.
    """
    groups = result.groups()
    if not _heldout_rule_scored(result) or not {"log_likelihood", "observed_data"} <= set(groups):
        return None
    stored = model.data_type.from_observed_data(result.observed_data)
    if stored is None or stored.shape != test.shape:
        return None
    if not np.array_equal(stored.toarray(), test.toarray()):
        return None
    [name] = list(result.log_likelihood.data_vars)
    values = result.log_likelihood[name].transpose("chain", "draw", ...).to_numpy()
    picked = np.stack([values[c, d] for c, d in positions])
    return logsumexp(picked, axis=0) - np.log(len(positions))


# ------------------------------------------------------------------ per-draw scores
_EXTRA = ("z", "resp", "I", "J", "c", "p", "q", "n_obs", "pi", "psi_x", "psi_y", "alpha")
"""Variables besides ``model.param_names`` that a draw's held-out rule or labels read."""


def _draw_names(posterior, model) -> list[str]:
    return list(dict.fromkeys(_kept(posterior, model.param_names) + _kept(posterior, _EXTRA)))


def _sample_heldout(result, model, test, train, max_draws) -> np.ndarray:
    """The posterior predictive of ``test`` over the kept draws: the model's own rule
    (``model.heldout_posterior_predictive``) on the draws' parameters."""
    posterior = result.posterior
    names = _draw_names(posterior, model)
    rows, cols = _posterior_shape(posterior)
    _check_test_shape(test, rows, cols)
    if train is not None:
        _check_test_shape(train, rows, cols, name="train")
        _check_test_shape(test, *train.shape)
    positions = _draw_positions(posterior, max_draws)
    if not model.heldout_draws_usable(names, train):
        scored = _scored_heldout(result, model, test, positions)
        if scored is not None:
            return scored
        kept = posterior.attrs.get("kept_params")
        refit = model.heldout_draws_advice is REFIT_ADVICE  # draws that keep_params can drop
        why = " (keep_params dropped them)" if refit and kept is not None and not int(kept) else ""
        advice = model.heldout_draws_advice
        if posterior.attrs.get("log_likelihood_data") == "test":
            # test= was passed already: repeating that advice would send the user in a circle.
            advice = _SCORED_ADVICE[_heldout_rule_scored(result)]
        raise missing_draws_error(model, why, advice)
    draws = (_draw_params(posterior, names, c, d) for c, d in positions)
    return model.heldout_posterior_predictive(draws, test, train)


# ------------------------------------------------------------------------------ the face
@_held_out_example
def heldout_log_likelihood(
    result, test, *, train=None, max_draws: int | None = MAX_DRAWS, model=None
) -> np.ndarray:
    """Log predictive probability of held-out data, per row (co-occurrence) or per item (features).

    For a point estimate (:class:`~latentzoo.inference.EMResult`, or its ``to_inference_data``,
    also read back from netCDF) this is the model's
    ``heldout_log_likelihood``: ``sum_j n_ij log P(y_j | x_i)`` over the held-out counts of row
    ``i`` (the clustering models take ``P`` from the training posterior of the row's cluster, Hofmann
    & Puzicha 1998, eq. (32), (47)); for the mixtures the mixture density of each held-out item.

    For a posterior sample (``InferenceData`` of ``method="gibbs"`` or of the PyMC reference; also
    read back from netCDF) the probability of each
    held-out cell is the average of the draws' probabilities (the posterior predictive, invariant
    to label switching): ``sum_j n_ij log mean_s P_s(y_j | x_i)``; for the mixtures
    ``log mean_s p_s(x_i)``. Each draw is evaluated on the non-zero cells only (no
    ``nnz x K`` array); the loop runs over draws.

    Parameters
    ----------
    result : EMResult or arviz.InferenceData
    test : CoOccurrence, Features or array
        Held-out data. Co-occurrence: the same rows and columns as the training data (held-out
        tokens of the training documents, e.g. from ``data.split``). Features: new items with the
        same features.
    train : CoOccurrence, Features or array, optional
        The training data, needed only by samples that hold no per-row memberships or no
        parameters: PyMC's one-sided clustering (``rho``, ``q``), two-sided clustering (``I``,
        ``J``), and the mixtures' collapsed Gibbs (partitions ``z``). By default taken from the
        ``observed_data`` group when it holds the training data. A mixture sample made with
        ``gibbs(..., test=test)`` needs none for that same ``test``: its ``log_likelihood``
        group holds each draw's ``log p(x_i | z, X)``, averaged over the draws as here.
    max_draws : int or None
        A sample is thinned evenly to at most this many draws (None: all draws).
    model : optional
        The fitted model, for an ``InferenceData`` whose attributes do not name one (a PyMC result
        not made by ``latentzoo.fit``).

    Returns
    -------
    numpy.ndarray of shape (N,) (rows of ``test``) or (n_items,) for features

    Raises
    ------
    ValueError
        If ``test`` has the wrong shape (naming ``test`` and both shapes), if the sample holds no
        parameters (``keep_params`` dropped them; refit with ``keep_params=True`` or use the
        ``test=`` option of ``gibbs``), or if the model cannot be rebuilt from the attributes.

    Examples
    --------
    >>> fit = latentzoo.fit(AspectModel(2), train, betas=[1.0], random_state=0)
    >>> heldout_log_likelihood(fit, test).shape
    (6,)
    """
    model = _model_of(result, model)
    test = _as_data(model, test, "test")
    if _is_sample(result):
        return _sample_heldout(result, model, test, _training_data(result, model, train),
                               max_draws)  # fmt: skip
    params = _estimate_of(result, model).params
    rows, cols = model.fit_shape(params)
    _check_test_shape(test, rows, cols)
    return np.asarray(model.heldout_log_likelihood(params, test), dtype=float)


@_held_out_example
def heldout_score(
    result, test, *, train=None, max_draws: int | None = MAX_DRAWS, model=None
) -> float:
    """Held-out log-likelihood per unit: ``sum(heldout_log_likelihood) / units`` (higher is better).

    The unit is a held-out token (``test.total``) for co-occurrence data and a held-out item
    (``test.n_items``: one whole feature vector, a log density for continuous components) for the
    mixtures' :class:`~latentzoo.data.Features`. ``perplexity = exp(-heldout_score)``. The options
    ``train``, ``max_draws`` and ``model`` are those of :func:`heldout_log_likelihood`.

    Examples
    --------
    >>> fit = latentzoo.fit(AspectModel(2), train, betas=[1.0], random_state=0)
    >>> bool(np.isclose(np.exp(-heldout_score(fit, test)), perplexity(fit, test)))
    True
    """
    model = _model_of(result, model)
    test = _as_data(model, test, "test")
    units = _units(test)
    scores = heldout_log_likelihood(result, test, train=train, max_draws=max_draws, model=model)
    return float(scores.sum() / units)


@_held_out_example
def perplexity(result, test, *, train=None, max_draws: int | None = MAX_DRAWS, model=None) -> float:
    """Held-out perplexity ``exp(-sum heldout_log_likelihood / units)`` of any result.

    The same definition for an :class:`~latentzoo.inference.EMResult`, a collapsed Gibbs or PyMC
    ``InferenceData`` (posterior predictive, see :func:`heldout_log_likelihood`) and either read
    back from netCDF; units as in :func:`heldout_score`; the options as for
    :func:`heldout_log_likelihood`. Use this, not the ``log_likelihood``
    group of a sample: that group holds PyMC's quantity (the multinomial log-pmf of the training
    rows, log multinomial coefficient included).

    Examples
    --------
    >>> idata = latentzoo.fit(AspectModel(2), train, method="gibbs", chains=1, draws=20, tune=20,
    ...                       random_state=0, progressbar=False)
    >>> perplexity(idata, test) < 8  # below the uniform distribution over the 8 words
    True
    """
    score = heldout_score(result, test, train=train, max_draws=max_draws, model=model)
    return float(np.exp(-score))


# ---------------------------------------------------------------------------- labels
def _best_draw(result) -> tuple[int, int]:
    """The draw with the highest ``sample_stats.lp``; without one, the last draw of chain 0."""
    posterior = result.posterior
    if "sample_stats" in result.groups() and "lp" in result.sample_stats.data_vars:
        lp = result.sample_stats["lp"].to_numpy()
        if lp.ndim == 2 and np.isfinite(lp).any():
            c, d = np.unravel_index(np.nanargmax(np.where(np.isfinite(lp), lp, -np.inf)), lp.shape)
            return int(c), int(d)
    return 0, posterior.sizes["draw"] - 1


def labels(result, *, train=None, model=None):
    """Hard cluster labels of a result: the one way for every family and result kind.

    * one-sided clustering, finite and Dirichlet process mixtures: an int64 array, one label per
      row (document, item);
    * two-sided clustering and the product-space mixture: a :class:`TwoSidedLabels` named tuple
      ``(rows, cols)``, the row clusters and the column clusters (product space: the most probable
      cluster ``argmax_nu P(nu | x_i)``, ``P(nu | x_i) ∝ p_{i|nu} sum_mu pi[nu, mu]``, likewise for
      the columns);
    * the aspect model: the dominant topic ``argmax_k theta[i, k]`` of each document.

    An :class:`~latentzoo.inference.EMResult` gives the argmax of its posteriors (``resp``, ``I``,
    ``J``). A posterior sample gives the labels of one draw, the one with the highest log joint
    ``sample_stats.lp`` (for the collapsed samplers the collapsed ``log p(z, data)``; without
    ``lp`` the last draw of the first chain): the labels of one draw are consistent with each
    other, whereas a per-row vote across draws would mix clusters that label switching renames.
    Labels are cluster indices, not comparable across results (compare partitions with a
    label-invariant index such as the adjusted Rand index).

    Parameters
    ----------
    result : EMResult or arviz.InferenceData
    train : optional
        The training data, needed only by a sample of the one-sided model without memberships
        (PyMC's ``rho``, ``q``).
    model : optional
        As for :func:`heldout_log_likelihood`.

    Examples
    --------
    >>> import latentzoo
    >>> from latentzoo.data import load
    >>> from latentzoo.models import OneSidedClustering, TwoSidedClustering
    >>> fit = latentzoo.fit(OneSidedClustering(2), load("toy"), betas=[1.0], random_state=0)
    >>> z = labels(fit); z.shape, bool(len(set(z[:3])) == 1 and z[0] != z[3])
    ((6,), True)
    >>> both = labels(latentzoo.fit(TwoSidedClustering(2, 2), load("toy"), betas=[1.0],
    ...                             random_state=0))
    >>> both.rows.shape, both.cols.shape
    ((6,), (8,))
    """
    model = _model_of(result, model)
    if not _is_sample(result):
        return model.labels(_estimate_of(result, model).params, None)
    posterior = result.posterior
    c, d = _best_draw(result)
    params = _draw_params(posterior, _draw_names(posterior, model), c, d)
    return model.labels(params, _training_data(result, model, train))


# ---------------------------------------------------------------- posterior predictive
PREDICTIVE_DRAWS = 100
"""Replicates a posterior predictive holds at most: draws of a sample thinned evenly to this many,
or this many replicates of a point estimate."""

PREDICTIVE_VALUES = 20_000_000
"""Replicated data values (replicates x cells) one posterior predictive draws at most: a larger
data set gets fewer replicates (at least one), said in the group's attributes."""

PREDICTIVE_STREAM = 24
"""Tag of the posterior predictive's random stream: its generator is seeded with
``SeedSequence([seed, PREDICTIVE_STREAM])``, a stream that no sampler or EM draws from, so the fit
itself is the same bit for bit with or without its replicates."""


class NoPosteriorPredictive(ValueError):
    """A fit of which no posterior predictive can be drawn; the message says why."""


def predictive_rng(random_state=0) -> np.random.Generator:
    """The posterior predictive's own generator (:data:`PREDICTIVE_STREAM`): a ``Generator`` as
    given, an integer seed (None: 0) through ``SeedSequence([seed, PREDICTIVE_STREAM])``.

    Examples
    --------
    >>> a, b = predictive_rng(3).random(), predictive_rng(3).random()
    >>> a == b, a == np.random.default_rng(3).random()
    (True, False)
    """
    if isinstance(random_state, np.random.Generator):
        return random_state
    seed = 0 if random_state is None else random_state
    check_integer("random_state", seed, low=0)
    return np.random.default_rng(np.random.SeedSequence([seed, PREDICTIVE_STREAM]))


def _replicate_sources(idata, model, n_replicates: int):
    """``(draws, attrs)``: the parameter dicts the replicates are drawn from (a sample's draws
    thinned evenly, or the point estimate repeated) and how they were chosen."""
    if is_point_estimate(idata):
        params = SavedEstimate.from_inference_data(idata, model).params
        if not model.replicate_names(params):
            raise NoPosteriorPredictive(
                f"the estimate holds none of the variables a replicate of {type(model).__name__} "
                f"needs (it holds {', '.join(params) or 'nothing'})"
            )
        return [params] * n_replicates, {"replicates_of": "the point estimate"}
    posterior = idata.posterior
    if posterior.attrs.get("log_likelihood_data") == "test":
        raise NoPosteriorPredictive(
            "the sample was made with test=, so its observed_data holds the test set, which a "
            "replicate of the training data would be compared with"
        )
    names = _draw_names(posterior, model)
    if not model.replicate_names(names):
        raise NoPosteriorPredictive(
            f"the sample holds no draws of the variables a replicate of {type(model).__name__} "
            "needs (keep_params may have dropped them: refit with keep_params=True)"
        )
    positions = _draw_positions(posterior, n_replicates)
    draws = [_draw_params(posterior, names, c, d) for c, d in positions]
    total = posterior.sizes["chain"] * posterior.sizes["draw"]
    how = f"posterior draws, {len(draws)} of {total} (chains x draws) thinned evenly"
    return draws, {"replicates_of": how}


def _coords_for(dims, data, model) -> dict:
    """Coordinates of ``dims``: the model's own (e.g. a two-sided model's ``row``, ``col``), else
    the data's."""
    coords = dict(data.coords())
    model_coords = getattr(model, "coords", None)
    if callable(model_coords):
        coords.update(model_coords(data))
    return {dim: np.asarray(coords[dim]) for dim in dims if dim in coords}


@with_example_setup(TOY_POINT_FIT)
def posterior_predictive(
    idata, data, *, random_state=0, max_draws: int = PREDICTIVE_DRAWS, model=None
) -> dict:
    """The ``posterior_predictive`` and ``observed_data`` groups of a posterior predictive check
    of ``idata``, drawn by the model's own ``replicate`` (one replicate per draw).

    A sample's draws are thinned evenly to ``max_draws``; a point estimate gives ``max_draws``
    replicates of itself. Either way the replicates are one chain of ``n`` draws, fewer when the
    data are large (:data:`PREDICTIVE_VALUES`), none (:class:`NoPosteriorPredictive`) when one
    replicate alone would exceed it. The variables are the model's
    ``predictive_summaries`` (label-invariant, e.g. term frequencies, or feature means) and,
    where ``idata``'s ``observed_data`` holds the data themselves, the replicated data under the
    same name, so that ``az.plot_ppc`` pairs every observed variable with its replicates.

    Parameters
    ----------
    idata : arviz.InferenceData
        A sample, or a point estimate's ``InferenceData`` (``to_inference_data``).
    data :
        The data that were fitted.
    random_state : int or numpy.random.Generator
        Seed of the replicates' own stream (:func:`predictive_rng`); the fit is not redrawn.
    max_draws : int
        At most this many replicates (:data:`PREDICTIVE_DRAWS`).
    model : optional
        The fitted model (default: rebuilt from the attributes).

    Returns
    -------
    dict
        ``{"posterior_predictive": Dataset, "observed_data": Dataset}``; the second holds the
        observed summaries only (the data are already in ``idata`` where they are stored).

    Raises
    ------
    NoPosteriorPredictive
        When the model defines no replicate (a cost model, a retrieval model: its reason), or
        ``idata`` holds no draws a replicate can be made from.

    Examples
    --------
    >>> groups = posterior_predictive(fit.to_inference_data(), load("toy"), max_draws=20)
    >>> groups["posterior_predictive"]["word_counts"].dims
    ('chain', 'draw', 'word')
    >>> groups["posterior_predictive"]["word_counts"].shape
    (1, 20, 8)
    """
    import xarray as xr

    try:
        model = _model_of(idata, model)
    except ValueError as error:  # a model outside latentzoo.models (a test's toy family)
        raise NoPosteriorPredictive(str(error)) from None
    if not callable(getattr(model, "replicate", None)):
        reason = getattr(model, "no_replicate_reason", "the model defines no replicate of its data")
        raise NoPosteriorPredictive(f"{type(model).__name__}: {reason}")
    data = model.check_data(data)
    check_integer("max_draws", max_draws)
    cells = int(np.prod(data.shape))
    budget = PREDICTIVE_VALUES // max(cells, 1)
    if budget < 1:
        # One replicate is a dense copy of the data (and its probabilities): refused before it
        # is allocated, not left to exhaust the memory.
        raise NoPosteriorPredictive(
            f"{type(model).__name__}: one replicate of data of shape {data.shape} would hold "
            f"{cells} values, above the {PREDICTIVE_VALUES} a posterior predictive draws at most "
            "(PREDICTIVE_VALUES); check a subset of the rows (data.subset)"
        )
    n_replicates = min(max_draws, budget)
    draws, attrs = _replicate_sources(idata, model, n_replicates)
    rng = predictive_rng(random_state)
    observed = model.predictive_summaries(data)
    stored = set(idata.observed_data.data_vars) if "observed_data" in idata.groups() else set()
    kept = set(observed) | stored
    # Each replicate's variables that the groups keep, the rest dropped as it is drawn: the
    # replicated data of a large corpus are not held 100 times over.
    collected: dict[str, tuple] = {}
    for params in draws:
        for name, (var_dims, values) in model.replicate(params, data, rng).items():
            if name in kept:
                collected.setdefault(name, (var_dims, []))[1].append(values)
    variables = {
        name: (("chain", "draw", *var_dims), np.stack(values)[None])
        for name, (var_dims, values) in collected.items()
    }
    dims = {dim for names, _ in [*variables.values(), *observed.values()] for dim in names}
    coords = _coords_for(dims, data, model)
    n_drawn = len(draws)
    coords.update(chain=np.arange(1), draw=np.arange(n_drawn))
    attrs.update(
        replicates=n_drawn,
        random_seed=-1 if isinstance(random_state, np.random.Generator) else int(random_state or 0),
        random_stream=f"numpy SeedSequence([random_seed, {PREDICTIVE_STREAM}])",
    )
    if budget < max_draws:
        attrs["thinned_by"] = f"at most {PREDICTIVE_VALUES} replicated values"
    predictive = xr.Dataset(variables, coords=coords, attrs=attrs)
    observed_group = xr.Dataset(
        dict(observed), coords={dim: v for dim, v in coords.items() if dim in dims}
    )
    return {"posterior_predictive": predictive, "observed_data": observed_group}
