"""Regression tests of the faults found by trying the EM driver as a fuzzer would (issue 8).

Each test failed on the code before its fix: over-relaxed EM returning its last unchecked step,
a kernel raising ZeroDivisionError from inside numba, options that passed their checks or failed
with a message naming nothing, and saved fits that lost their labels and settings.
"""

import arviz as az
import numpy as np
import pytest

import latentzoo
from latentzoo.data import CoOccurrence, load
from latentzoo.inference.annealing import GeometricCooling
from latentzoo.models import (
    AspectModel,
    OneSidedClustering,
    ProductSpaceMixture,
    TwoSidedClustering,
)


def _finite(params):
    return all(np.isfinite(np.asarray(v, dtype=float)).all() for v in params.values())


def test_over_relaxed_em_does_not_return_its_last_unchecked_step():
    # Before: resp was NaN (the extrapolated last step was returned without being scored).
    data = CoOccurrence(np.array([[7, 0, 0], [0, 1, 0]]))
    model = OneSidedClustering(1, alpha=1.0, eta=1.0)
    result = latentzoo.fit(model, data, betas=[1.0], max_iter=1, overrelax=1.5, random_state=0)
    assert _finite(result.params)
    assert np.allclose(result.params["resp"].sum(axis=1), 1.0)


@pytest.mark.parametrize("max_iter", [1, 2, 3])
def test_product_space_kernel_reports_a_zero_probability_instead_of_raising(max_iter):
    # Before: ZeroDivisionError from inside the numba kernel.
    data = CoOccurrence(np.array([[10000], [1], [1], [1]]))
    result = latentzoo.fit(
        ProductSpaceMixture(2, 1), data, betas=[1.0], max_iter=max_iter, overrelax=1.5,
        random_state=0,
    )  # fmt: skip
    assert _finite(result.params)
    assert np.isfinite(result.trace["free_energy"]).all()


def test_predictive_over_relaxed_aspect_em_keeps_a_finite_log_likelihood():
    data = CoOccurrence(np.array([[1, 0, 0]]))
    for seed in range(5):
        result = latentzoo.fit(
            AspectModel(1), data, betas=[1.0], overrelax=1.5, predictive=True, random_state=seed
        )
        assert np.isfinite(result.log_likelihood(data)).all()
        assert np.isfinite(result.trace["log_likelihood"]).all()


TOY = np.array([[3, 1, 0, 2], [0, 2, 4, 1], [1, 0, 3, 3], [2, 2, 0, 1]])


@pytest.mark.parametrize(
    "options, message",
    [
        ({"overrelax": float("nan")}, "overrelax must be a number >= 1.0 and < 2.0, got nan"),
        ({"overrelax": "fast"}, "overrelax must be a number"),
        ({"tol": "a"}, "tol must be a number >= 0"),
        ({"tol": float("nan")}, "tol must be a number"),
        ({"betas": ["a"]}, r"betas\[0\] = 'a' must be a positive finite number"),
        ({"betas": None}, "betas must be 'auto', 'early_stopping', a GeometricCooling"),
        ({"betas": [float("inf")]}, r"betas\[0\] = inf"),
        ({"beta_decay": float("nan")}, "beta_decay must be a number > 0 and < 1"),
        ({"beta_decay": -1}, "beta_decay must be"),
        ({"beta_decay": 1.5}, "beta_decay must be"),
        ({"min_beta": 0}, "min_beta must be a number > 0 and <= 1"),
        ({"patience": -1}, "patience must be an integer >= 1"),
        ({"beta_patience": 0}, "beta_patience must be an integer >= 1"),
        ({"validation_fraction": 1.5}, "validation_fraction must be a number > 0 and < 1"),
        ({"n_threads": 0}, "n_threads must be an integer >= 1"),
        ({"n_threads": -1}, "n_threads must be an integer >= 1"),
        ({"dtype": "int8"}, "dtype must be float32 or float64"),
        ({"random_state": "abc"}, "random_state must be None, an integer >= 0"),
        ({"random_state": 1.5}, "random_state must be"),
        ({"random_state": -1}, "random_state must be"),
    ],
)
def test_em_options_are_refused_naming_them(options, message):
    with pytest.raises(ValueError, match=message):
        latentzoo.fit(AspectModel(2), CoOccurrence(TOY), **{"betas": [1.0], **options})


@pytest.mark.parametrize("family", ["one_sided", "product_space"])
def test_an_option_the_em_does_not_take_is_named(family):
    model = OneSidedClustering(2) if family == "one_sided" else ProductSpaceMixture(2, 2)
    with pytest.raises(ValueError, match="annealed_em takes no option 'init'; its options are"):
        latentzoo.fit(model, CoOccurrence(TOY), betas=[1.0], init="bogus")


def test_hard_acm_refuses_a_start_that_is_not_centroids():
    with pytest.raises(ValueError, match="init must be a dict with the centroids 'q'"):
        latentzoo.fit(OneSidedClustering(2), CoOccurrence(TOY), method="hard", init="bogus")


@pytest.mark.parametrize("value", ["a", float("nan"), -1.0, 0.0])
@pytest.mark.parametrize("name", ["alpha", "eta"])
def test_hyperparameters_are_refused_naming_them(name, value):
    with pytest.raises(ValueError, match=f"{name} must be a positive finite number"):
        AspectModel(2, **{name: value})


@pytest.mark.parametrize("name", ["alpha", "eta"])
def test_an_unset_prior_is_the_map_default_until_a_method_chooses(name):
    # None means "unset": the model as constructed holds the MAP default (what validate and the
    # inference functions use) and latentzoo.fit swaps in the method's own default.
    model = AspectModel(2, **{name: None})
    assert getattr(model, name) == {"alpha": 1.1, "eta": 1.01}[name]
    assert getattr(model.for_method("gibbs"), name) == {"alpha": 0.1, "eta": 0.01}[name]


@pytest.mark.parametrize("method", ["annealed_em", "gibbs"])
def test_a_legacy_random_state_works_and_is_deterministic(method):
    options = {"betas": [1.0]} if method == "annealed_em" else {
        "chains": 1, "draws": 3, "tune": 1, "progressbar": False}  # fmt: skip
    fits = [
        latentzoo.fit(
            AspectModel(2),
            CoOccurrence(TOY),
            method=method,
            random_state=np.random.RandomState(3),
            **options,
        )  # fmt: skip
        for _ in range(2)
    ]
    if method == "annealed_em":
        assert np.array_equal(fits[0].params["theta"], fits[1].params["theta"])
    else:
        assert np.array_equal(fits[0].posterior["theta"], fits[1].posterior["theta"])


@pytest.mark.parametrize(
    "options, message",
    [
        ({"draws": 0}, "draws must be an integer >= 1"),
        ({"chains": 0}, "chains must be an integer >= 1"),
        ({"tune": -1}, "tune must be an integer >= 0"),
        ({"target_accept": 2}, r"target_accept must be a number in \(0, 1\)"),
        ({"random_state": "abc"}, "random_state must be"),
        ({"initvals": [{}, {}, {}]}, r"initvals must hold one dict per chain \(1\), got 3"),
    ],
)
def test_pymc_options_are_refused_before_pymc_runs(options, message):
    with pytest.raises(ValueError, match=message):
        latentzoo.fit(AspectModel(2), CoOccurrence(TOY), method="pymc", progressbar=False,
                      **{"chains": 1, "draws": 5, "tune": 5, **options})  # fmt: skip


@pytest.mark.parametrize(
    "options, message",
    [
        ({"draws": 0}, "draws must be an integer >= 1"),
        ({"thin": 1.5}, "thin must be an integer >= 1"),
        ({"random_state": -1}, "random_state must be"),
    ],
)
def test_gibbs_options_are_refused_before_the_sampler_is_built(options, message):
    with pytest.raises(ValueError, match=message):
        latentzoo.fit(AspectModel(2), CoOccurrence(TOY), method="gibbs", progressbar=False,
                      **options)  # fmt: skip


@pytest.mark.parametrize(
    "model, options, dims",
    [
        (AspectModel(2), {}, {"theta": ("doc", "topic"), "phi": ("topic", "word")}),
        (OneSidedClustering(2), {}, {"q": ("cluster", "word"), "resp": ("doc", "cluster")}),
        (TwoSidedClustering(2, 2), {}, {"I": ("row", "row_cluster"), "J": ("col", "col_cluster")}),
        (ProductSpaceMixture(2, 2), {}, {"p_row": ("row_cluster", "row"), "pi": ("row_cluster", "col_cluster")}),
        (AspectModel(2), {"betas": GeometricCooling(0.5, 1.0, decay=0.5)}, {"theta": ("doc", "topic")}),
    ],
)  # fmt: skip
def test_a_saved_em_fit_carries_its_labels_and_settings(tmp_path, model, options, dims):
    data = load("toy")
    result = latentzoo.fit(model, data, random_state=0, **{"betas": [0.5, 1.0], **options})
    path = tmp_path / "fit.nc"
    result.to_inference_data().to_netcdf(str(path))
    loaded = az.from_netcdf(str(path))
    for name, expected in dims.items():
        assert loaded.point_estimate[name].dims == expected
        np.testing.assert_array_equal(loaded.point_estimate[name].values, result.params[name])
    rows = "doc" if isinstance(model, AspectModel | OneSidedClustering) else "row"
    assert list(loaded.point_estimate[rows].values) == list(data.row_labels)
    attrs = loaded.point_estimate.attrs
    assert attrs["model"] == type(model).__name__
    assert attrs["method"] == result.method
    assert attrs["model_alpha"] == model.alpha
    np.testing.assert_allclose(np.atleast_1d(attrs["betas"]), result.betas)
    assert (
        attrs["random_state"] == 0 and "schedule" in attrs and "inference_library_version" in attrs
    )
    assert "em_trace" in loaded.groups()
    if result.stages is not None:
        assert "em_stages" in loaded.groups()
