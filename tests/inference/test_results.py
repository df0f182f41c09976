"""One definition of held-out scores and labels for every result kind (inference/results.py)."""

from __future__ import annotations

import warnings

import arviz as az
import numpy as np
import pytest
from scipy.special import logsumexp

import latentzoo
from latentzoo.data import CoOccurrence, Features
from latentzoo.inference import mcmc
from latentzoo.inference.results import (
    TwoSidedLabels,
    _draw_positions,
    heldout_log_likelihood,
    heldout_score,
    labels,
    model_from_attrs,
    perplexity,
)
from latentzoo.models import AspectModel, BayesianMixture, OneSidedClustering
from latentzoo.models._kernels import one_hot
from latentzoo.models.base import model_attrs
from tests.helpers import EM_FAMILIES, SMALL_MODELS

EM_MODELS = [SMALL_MODELS[name] for name in EM_FAMILIES]
GIBBS_MODELS = EM_MODELS[:3]
MIXTURES = [SMALL_MODELS["dpm"], SMALL_MODELS["finite_mixture"]]


def _name(model):
    return type(model).__name__


def _simulated():
    """A small corpus with two clear groups of rows, and the group of each row."""
    return OneSidedClustering(2).simulate(3, n_docs=12, n_words=10, doc_length=30, separated=True)


@pytest.fixture(scope="module")
def corpus():
    """The corpus split into training and held-out tokens."""
    return _simulated()[0].split(0.3, random_state=1)


@pytest.fixture(scope="module")
def items():
    x = np.array([[1, 1, 0, 0], [1, 1, 1, 0], [0, 0, 1, 1], [0, 1, 1, 1], [1, 1, 0, 1],
                  [0, 0, 1, 1], [1, 1, 0, 0], [0, 0, 0, 1]])  # fmt: skip
    return Features(x).split(0.25, random_state=0)


def _gibbs(model, data, **options):
    settings = {"chains": 2, "draws": 15, "tune": 10, "random_state": 0, "progressbar": False}
    return latentzoo.fit(model, data, method="gibbs", **{**settings, **options})


def _round_trip(idata, tmp_path):
    path = tmp_path / "result.nc"
    idata.to_netcdf(str(path))
    return az.from_netcdf(str(path))


def _one_draw_params(model, idata):
    """The EM-style parameters of the only draw of a one-draw sample."""
    post = idata.posterior.isel(chain=0, draw=0)
    if isinstance(model, AspectModel):
        return {"theta": post["theta"].to_numpy(), "phi": post["phi"].to_numpy()}
    if isinstance(model, OneSidedClustering):
        q = post["q"].to_numpy()
        resp = one_hot(post["z"].to_numpy().astype(np.int64), q.shape[0])
        return {"rho": post["rho"].to_numpy(), "q": q, "resp": resp}
    names = ("I", "J", "pi", "psi_x", "psi_y")
    return {name: post[name].to_numpy() for name in names}


# ---------------------------------------------------------------------- point estimates
@pytest.mark.parametrize("model", EM_MODELS, ids=_name)
def test_em_perplexity_is_the_models_heldout_rule(model, corpus, tmp_path):
    train, test = corpus
    fit = latentzoo.fit(model, train, betas=[1.0], random_state=0)
    expected = np.exp(-model.heldout_log_likelihood(fit.params, test).sum() / test.total)
    assert perplexity(fit, test) == pytest.approx(expected, rel=1e-12)
    assert fit.perplexity(test) == pytest.approx(expected, rel=1e-12)
    assert fit.score(test) == pytest.approx(-np.log(expected), rel=1e-12)
    assert heldout_score(fit, test) == pytest.approx(-np.log(expected), rel=1e-12)
    # The saved estimate (its point_estimate group) is scored by the same rule.
    back = _round_trip(fit.to_inference_data(), tmp_path)
    assert "posterior" not in back.groups()
    assert perplexity(back, test) == pytest.approx(expected, rel=1e-9)
    # The saved file carries every hyperparameter: the model rebuilds from its attributes.
    assert model_from_attrs(back.point_estimate.attrs) == fit.model
    for a, b in zip(*(x if isinstance(x, tuple) else (x,) for x in (fit.labels_, labels(back))),
                    strict=True):  # fmt: skip
        np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("model", EM_MODELS, ids=_name)
def test_em_perplexity_refuses_a_test_set_of_the_wrong_shape(model, corpus):
    # Regression: 10 rows against a 300-row fit returned a number, or died with an IndexError.
    train, test = corpus
    fit = latentzoo.fit(model, train, betas=[1.0], random_state=0)
    fewer_rows = test.subset(np.arange(5))
    with pytest.raises(ValueError, match=r"test has 5 rows, the fit has 12 \(documents\)"):
        fit.perplexity(fewer_rows)
    fewer_cols = CoOccurrence(test.toarray()[:, :7])
    with pytest.raises(ValueError, match="test has 7 columns, the fit has 10"):
        fit.perplexity(fewer_cols)
    more_cols = CoOccurrence(np.hstack([test.toarray(), np.ones((12, 2), dtype=int)]))
    with pytest.raises(ValueError, match="test has 12 columns, the fit has 10"):
        perplexity(fit, more_cols)


@pytest.mark.parametrize("model", EM_MODELS, ids=_name)
def test_models_heldout_log_likelihood_names_test_in_shape_errors(model, corpus):
    train, test = corpus
    fit = latentzoo.fit(model, train, betas=[1.0], random_state=0)
    with pytest.raises(ValueError, match="test has 7 columns"):
        model.heldout_log_likelihood(fit.params, CoOccurrence(test.toarray()[:, :7]))
    # Training-data likelihoods name the parameter that does not fit (or the data, where the
    # parameters do not fix the rows): never a bare numpy/scipy error.
    with pytest.raises(ValueError, match=r"data has 7 columns|has shape \("):
        model.log_likelihood(fit.params, CoOccurrence(train.toarray()[:, :7]))


@pytest.mark.parametrize("model", MIXTURES, ids=_name)
def test_mixture_heldout_refuses_items_with_other_features(model):
    params = {"w": [0.5, 0.5], "theta": [[0.9, 0.9, 0.5], [0.1, 0.1, 0.5]]}
    with pytest.raises(ValueError, match="test has 2 features, the fit has 3"):
        model.heldout_log_likelihood(params, [[1, 0], [0, 1]])
    with pytest.raises(ValueError, match=r"theta has shape \(2, 3\), expected \(2, 2"):
        model.log_likelihood(params, [[1, 0], [0, 1]])


def test_em_labels(corpus):
    train, _ = corpus
    one = latentzoo.fit(OneSidedClustering(2), train, betas=[1.0], random_state=0)
    np.testing.assert_array_equal(one.labels_, one.params["resp"].argmax(axis=1))
    assert labels(one).dtype == np.int64
    aspect = latentzoo.fit(AspectModel(2), train, betas=[1.0], random_state=0)
    np.testing.assert_array_equal(labels(aspect), aspect.params["theta"].argmax(axis=1))
    two = latentzoo.fit(SMALL_MODELS["two_sided"], train, betas=[1.0], random_state=0)
    both = two.labels_
    assert isinstance(both, TwoSidedLabels)
    np.testing.assert_array_equal(both.rows, two.params["I"].argmax(axis=1))
    np.testing.assert_array_equal(both.cols, two.params["J"].argmax(axis=1))
    product = latentzoo.fit(SMALL_MODELS["product_space"], train, betas=[1.0], random_state=0)
    rows, cols = labels(product)
    assert rows.shape == (12,) and cols.shape == (10,)
    # The simulated rows form two groups of six: every method recovers them.
    truth = _simulated()[1]["z"]
    for found in (one.labels_, both.rows, rows):
        assert len(set(found[truth == 0])) == len(set(found[truth == 1])) == 1


# ----------------------------------------------------------------------------- samples
@pytest.mark.parametrize("model", GIBBS_MODELS, ids=_name)
def test_one_draw_sample_equals_the_point_rule_at_its_parameters(model, corpus):
    train, test = corpus
    idata = _gibbs(model, train, chains=1, draws=1)
    params = _one_draw_params(model, idata)
    expected = np.exp(-model.heldout_log_likelihood(params, test).sum() / test.total)
    assert perplexity(idata, test) == pytest.approx(expected, rel=1e-10)


def test_gibbs_perplexity_leaves_out_the_multinomial_coefficient(corpus):
    # Regression: the log_likelihood group (as PyMC reports it) includes the log multinomial
    # coefficient, so exp(-sum / total) of it is not the perplexity.
    train, _ = corpus
    model = AspectModel(2)
    idata = _gibbs(model, train, chains=1, draws=1)
    group = idata.log_likelihood["counts"].to_numpy()[0, 0]
    coefficient = model.log_multinomial_coefficient(train)
    right = np.exp(-(group - coefficient).sum() / train.total)
    assert perplexity(idata, train) == pytest.approx(right, rel=1e-10)
    assert np.exp(-group.sum() / train.total) < 0.9 * right  # the trap: much too low


def _dense_predictive(model, params):
    """``P(y_j | x_i)`` of one draw as a dense matrix, written independently of results.py."""
    if isinstance(model, AspectModel):
        return params["theta"] @ params["phi"]
    if isinstance(model, OneSidedClustering):
        return params["q"][params["z"]]
    pi = params["pi"]
    block = pi[params["I"]][:, params["J"]] / pi.sum(axis=1)[params["I"]][:, None]
    return block * params["psi_y"][None, :]


@pytest.mark.parametrize("model", GIBBS_MODELS, ids=_name)
def test_sample_averages_probabilities_over_draws(model, corpus):
    train, test = corpus
    idata = _gibbs(model, train)
    post = idata.posterior
    names = [name for name in ("theta", "phi", "q", "z", "I", "J", "pi", "psi_y") if name in post]
    mean = np.mean([
        _dense_predictive(model, {n: post[n].to_numpy()[c, d] for n in names})
        for c in range(2) for d in range(15)
    ], axis=0)  # fmt: skip
    dense = test.toarray()
    with np.errstate(divide="ignore", invalid="ignore"):
        expected = np.where(dense > 0, dense * np.log(mean), 0.0).sum(axis=1)
    found = heldout_log_likelihood(idata, test)
    np.testing.assert_allclose(found, expected, rtol=1e-10)
    # Label switching between chains leaves the posterior predictive unchanged.
    assert np.isfinite(found).all()


@pytest.mark.parametrize("model", GIBBS_MODELS, ids=_name)
def test_gibbs_netcdf_round_trip(model, corpus, tmp_path):
    train, test = corpus
    idata = _gibbs(model, train)
    back = _round_trip(idata, tmp_path)
    fitted = model.for_method("gibbs") if hasattr(model, "for_method") else model
    assert model_from_attrs(back.posterior.attrs) == fitted
    assert perplexity(back, test) == pytest.approx(perplexity(idata, test), rel=1e-12)
    assert heldout_score(back, test) == pytest.approx(heldout_score(idata, test), rel=1e-12)
    first, second = labels(idata), labels(back)
    for a, b in zip(*(x if isinstance(x, tuple) else (x,) for x in (first, second)), strict=True):
        np.testing.assert_array_equal(a, b)
    # What a reader needs: the model, its hyperparameters, the settings and the data's labels.
    attrs = back.posterior.attrs
    assert attrs["model"] == _name(model) and attrs["method"] == "gibbs"
    assert {"chains", "draws", "tune", "thin", "kept_params", "log_likelihood_data"} <= set(attrs)
    row_dim = "doc" if "doc" in back.posterior.coords else "row"
    assert list(back.posterior[row_dim].to_numpy()) == list(train.row_labels)


def test_sample_labels_are_those_of_the_draw_with_the_highest_lp(corpus):
    train, _ = corpus
    idata = _gibbs(OneSidedClustering(2), train)
    lp = idata.sample_stats["lp"].to_numpy()
    chain, draw = np.unravel_index(lp.argmax(), lp.shape)
    z = idata.posterior["z"].to_numpy()[chain, draw]
    np.testing.assert_array_equal(labels(idata), z)
    two = _gibbs(SMALL_MODELS["two_sided"], train)
    lp = two.sample_stats["lp"].to_numpy()
    chain, draw = np.unravel_index(lp.argmax(), lp.shape)
    found = labels(two)
    np.testing.assert_array_equal(found.rows, two.posterior["I"].to_numpy()[chain, draw])
    np.testing.assert_array_equal(found.cols, two.posterior["J"].to_numpy()[chain, draw])
    aspect = _gibbs(AspectModel(2), train)
    lp = aspect.sample_stats["lp"].to_numpy()
    chain, draw = np.unravel_index(lp.argmax(), lp.shape)
    theta = aspect.posterior["theta"].to_numpy()[chain, draw]
    np.testing.assert_array_equal(labels(aspect), theta.argmax(axis=1))


@pytest.mark.parametrize("model", GIBBS_MODELS, ids=_name)
def test_sample_refuses_a_test_set_of_the_wrong_shape(model, corpus):
    train, test = corpus
    idata = _gibbs(model, train, chains=1, draws=2)
    with pytest.raises(ValueError, match="test has 5 rows, the fit has 12"):
        perplexity(idata, test.subset(np.arange(5)))
    with pytest.raises(ValueError, match="test has 7 columns, the fit has 10"):
        perplexity(idata, CoOccurrence(test.toarray()[:, :7]))


def test_two_sided_sample_without_parameters_uses_the_partitions(corpus):
    train, test = corpus
    idata = _gibbs(SMALL_MODELS["two_sided"], train, keep_params=False)
    assert "pi" not in idata.posterior and idata.posterior.attrs["kept_params"] == 0
    value = perplexity(idata, test)  # the training data come from observed_data
    assert np.isfinite(value) and value == pytest.approx(perplexity(idata, test, train=train))


def test_thinning_keeps_evenly_spaced_draws(corpus):
    train, test = corpus
    idata = _gibbs(AspectModel(2), train)
    positions = _draw_positions(idata.posterior, 4)
    assert positions == [(0, 0), (0, 10), (1, 4), (1, 14)]  # of 0, 9.7, 19.3, 29
    assert len(_draw_positions(idata.posterior, None)) == 30
    thinned = perplexity(idata, test, max_draws=4)
    assert thinned != perplexity(idata, test, max_draws=None)
    with pytest.raises(ValueError, match="max_draws"):
        perplexity(idata, test, max_draws=0)


# ---------------------------------------------------------------------- keep_params
def test_keep_params_auto_warns_when_it_drops_the_parameters():
    # Regression: keep_params="auto" dropped theta and phi above 2e7 values without a word.
    with pytest.warns(UserWarning, match=r"keep_params='auto' drops.*keep_params=True"):
        assert mcmc.keep_params_auto("auto", 4, 500, 10**5) is False
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert mcmc.keep_params_auto("auto", 4, 500, 100) is True
        assert mcmc.keep_params_auto(False, 4, 500, 10**5) is False


@pytest.mark.parametrize("model", [AspectModel(2), OneSidedClustering(2)], ids=_name)
def test_dropped_parameters_are_recorded_and_explained(model, corpus, monkeypatch, tmp_path):
    train, test = corpus
    monkeypatch.setattr(mcmc, "MAX_KEPT_VALUES", 10)
    with pytest.warns(UserWarning, match="keep_params"):
        idata = _gibbs(model, train)
    back = _round_trip(idata, tmp_path)
    assert back.posterior.attrs["kept_params"] == 0
    with pytest.raises(ValueError, match=r"keep_params dropped them.*keep_params=True.*test="):
        perplexity(back, test)
    # The way out the message names: gibbs(test=...) scores the test set in log_likelihood.
    scored = _gibbs(model, train, test=test, keep_params=False)
    assert scored.posterior.attrs["log_likelihood_data"] == "test"
    # Its rows are joint densities, not the per-token score: the message does not send the user
    # back to test= (issue 24) but to the kept parameters.
    with pytest.raises(ValueError, match="made with test=.*keep_params=True") as refused:
        perplexity(scored, test)
    assert "pass test= to gibbs" not in str(refused.value)


def test_kept_params_attribute_when_kept(corpus):
    train, _ = corpus
    idata = _gibbs(AspectModel(2), train, keep_params=True)
    assert idata.posterior.attrs["kept_params"] == 1
    assert idata.posterior.attrs["log_likelihood_data"] == "train"


# ---------------------------------------------------------------------------- mixtures
@pytest.mark.parametrize("model", MIXTURES, ids=_name)
def test_mixture_sample_score_is_the_predictive_given_the_partitions(model, items, tmp_path):
    train, test = items
    plain = _gibbs(model, train)
    scored = _gibbs(model, train, test=test)
    # Same seed, same chains: gibbs(test=) scores each draw's partition on the test items.
    np.testing.assert_array_equal(plain.posterior["z"], scored.posterior["z"])
    x = scored.log_likelihood["x"].to_numpy().reshape(-1, test.n_items)
    expected = logsumexp(x, axis=0) - np.log(x.shape[0])
    np.testing.assert_allclose(heldout_log_likelihood(plain, test), expected, rtol=1e-10)
    back = _round_trip(plain, tmp_path)
    assert model_from_attrs(back.posterior.attrs) == model  # the component too
    score = heldout_score(back, test)
    assert score == pytest.approx(expected.sum() / test.n_items, rel=1e-10)
    assert perplexity(back, test) == pytest.approx(np.exp(-score), rel=1e-12)
    # Issue 24: the run with test= scores that test set from its log_likelihood group (before,
    # it was refused with the advice to pass test= to gibbs, which had been done), the same
    # number as the partitions with the training items give, also read back from netCDF.
    (tmp_path / "scored").mkdir()
    for sample in (scored, _round_trip(scored, tmp_path / "scored")):
        assert heldout_score(sample, test) == pytest.approx(score, rel=1e-10)
    assert perplexity(scored, test, train=train) == pytest.approx(np.exp(-score), rel=1e-10)
    assert perplexity(scored, test) == pytest.approx(np.exp(-score), rel=1e-10)
    # Another test set than the one scored still needs the training items, and says so.
    with pytest.raises(ValueError, match="scored another test set.*pass train="):
        perplexity(scored, train)


@pytest.mark.parametrize("model", MIXTURES, ids=_name)
def test_mixture_labels_and_shape_errors(model, items):
    train, test = items
    idata = _gibbs(model, train)
    lp = idata.sample_stats["lp"].to_numpy()
    chain, draw = np.unravel_index(lp.argmax(), lp.shape)
    np.testing.assert_array_equal(labels(idata), idata.posterior["z"].to_numpy()[chain, draw])
    with pytest.raises(ValueError, match="test has 3 features, the fit has 4"):
        perplexity(idata, Features(test.X[:, :3]))


def test_mixture_parameters_one_draw(items):
    train, test = items
    model = BayesianMixture(2)
    params = {"w": np.array([0.5, 0.5]), "theta": np.array([[0.8, 0.8, 0.2, 0.2],
                                                           [0.2, 0.2, 0.8, 0.8]])}  # fmt: skip
    idata = az.from_dict(posterior={k: v[None, None] for k, v in params.items()},
                         attrs=mcmc.model_attrs(model))  # fmt: skip
    idata.posterior.attrs.update(mcmc.model_attrs(model))
    expected = model.heldout_log_likelihood(params, test)
    np.testing.assert_allclose(heldout_log_likelihood(idata, test), expected, rtol=1e-12)
    assert heldout_score(idata, test) == pytest.approx(expected.mean())


# ------------------------------------------------------------------------ bad results
def test_a_result_whose_model_cannot_be_rebuilt(corpus):
    train, test = corpus
    idata = _gibbs(AspectModel(2), train, chains=1, draws=2)
    model = model_from_attrs(idata.posterior.attrs)
    del idata.posterior.attrs["model"]
    with pytest.raises(ValueError, match="pass model="):
        perplexity(idata, test)
    assert np.isfinite(perplexity(idata, test, model=model))
    with pytest.raises(ValueError, match="cannot rebuild"):
        model_from_attrs({"model": "AspectModel", "model_n_components": -1})
    with pytest.raises(ValueError, match="cannot rebuild the mixture component"):
        model_from_attrs({"model": "BayesianMixture", "model_component": "__import__('os')"})
    with pytest.raises(ValueError, match="EMResult or an arviz.InferenceData"):
        perplexity(object(), test)


def test_an_old_file_with_a_one_draw_posterior_is_still_read(corpus):
    # Files written before issue 24 hold the estimate as a one-draw posterior marked
    # point_estimate=1: the readers and the loader take them as the new layout.
    from latentzoo.inference.annealing import EMResult

    train, test = corpus
    fit = latentzoo.fit(AspectModel(2), train, betas=[1.0], random_state=0)
    new = fit.to_inference_data()
    attrs = dict(new.point_estimate.attrs)
    old = az.from_dict(
        posterior={name: value[None, None] for name, value in fit.params.items()},
        dims={"theta": ["doc", "topic"], "phi": ["topic", "word"]},
        attrs=attrs,
    )
    old.posterior.attrs.update(attrs)
    old.add_groups({"em_trace": new.em_trace}, warn_on_custom_groups=False)
    assert perplexity(old, test) == perplexity(new, test) == fit.perplexity(test)
    np.testing.assert_array_equal(labels(old), fit.labels_)
    back = EMResult.from_inference_data(old)
    np.testing.assert_array_equal(back.params["phi"], fit.params["phi"])
    assert back.betas == [1.0]


def test_rebuilds_the_topic_tree_of_a_saved_hacm_fit():
    # Regression (issue 24): the HACM's tree is saved as its text, which did not rebuild, so no
    # reader could take a saved HACM fit without model=.
    from latentzoo.models import ClusterAbstractionModel, TopicTree

    model = ClusterAbstractionModel(TopicTree([-1, 0, 0, 1, 1]))
    rebuilt = model_from_attrs(model_attrs(model))
    assert rebuilt == model
    with pytest.raises(ValueError, match="cannot rebuild the topic tree"):
        model_from_attrs({**model_attrs(model), "model_tree": "TopicTree(parents=open('x'))"})


def test_rebuilds_mixture_components():
    for component in ("BetaBernoulli(a=1.0, b=2.0)", "NormalGamma(mu0=(1.0, 2.0), kappa0=1.0, "
                      "a0=1.0, b0=1.0)"):  # fmt: skip
        model = model_from_attrs({"model": "BayesianMixture", "model_n_components": 2,
                                  "model_component": component})  # fmt: skip
        assert repr(model.component) == component


@pytest.mark.slow
def test_pymc_aspect_sample_is_scored_like_the_others(corpus, tmp_path):
    train, test = corpus
    model = AspectModel(2)
    idata = latentzoo.fit(model, train, method="pymc", chains=1, draws=20, tune=20,
                          random_state=0, progressbar=False)  # fmt: skip
    back = _round_trip(idata, tmp_path)
    value = perplexity(back, test)
    post = idata.posterior
    probs = np.mean([
        np.einsum("nk,km->nm", post["theta"][0, d].to_numpy(), post["phi"][0, d].to_numpy())
        for d in range(20)
    ], axis=0)  # fmt: skip
    dense = test.toarray()
    assert value == pytest.approx(np.exp(-(dense * np.log(probs)).sum() / test.total), rel=1e-9)
    assert labels(back).shape == (12,)
