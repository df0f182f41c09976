"""``param_draws`` of the aspect model's collapsed Gibbs sampler: ``"sample"`` (the default, exact
Dirichlet draws given z) and ``"conditional_mean"`` (E[theta | z], E[phi | z])."""

import warnings

import numpy as np
import pytest

import latentzoo
from latentzoo.data import load
from latentzoo.inference.aspect import AspectGibbs, _prepare_gibbs, gibbs
from latentzoo.models import AspectModel
from latentzoo.models.invariants import default_dyads

RUN = {"chains": 1, "draws": 6, "tune": 4, "random_state": 3, "progressbar": False}


def fit(**options):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # one short chain: not converged
        return latentzoo.fit(
            AspectModel(2, alpha=0.5, eta=0.2), load("toy"), method="gibbs", keep_params=True,
            **RUN, **options,
        )  # fmt: skip


@pytest.mark.parametrize("bad", ["mean", "no-such-choice", None, 1])
def test_a_bad_param_draws_is_refused_naming_it(bad):
    message = "param_draws must be one of 'sample', 'conditional_mean'"
    with pytest.raises(ValueError, match=message):
        fit(param_draws=bad)
    with pytest.raises(ValueError, match=message):  # the family function itself checks it too
        gibbs(AspectModel(2), load("toy"), param_draws=bad, **RUN)


def test_the_option_is_declared_once_on_the_aspect_gibbs_method_only():
    from latentzoo.zoo import ZOO

    declared = ZOO["aspect"].methods["gibbs"].options["param_draws"]
    assert declared.default == "sample"
    assert "param_draws" not in ZOO["one_sided"].methods["gibbs"].options


def test_default_is_sample_and_unchanged():
    default, explicit = fit(), fit(param_draws="sample")
    for name in ("theta", "phi", "loglik", "p_dyad"):
        np.testing.assert_array_equal(default.posterior[name], explicit.posterior[name])
    np.testing.assert_array_equal(
        default.log_likelihood["counts"], explicit.log_likelihood["counts"]
    )
    assert default.posterior.attrs.get("param_draws", "sample") == "sample"


def test_conditional_means_are_counts_plus_prior_over_their_normaliser():
    model = AspectModel(3, alpha=0.4, eta=0.05)
    data = load("toy")
    sampler = AspectGibbs(model, data)
    rng = np.random.default_rng(0)
    state = sampler.init(rng)
    for _ in range(3):
        state, _ = sampler.step(state, rng)
    setup = _prepare_gibbs(
        model, data, chains=1, draws=1, keep_params=True, param_draws="conditional_mean"
    )
    before = state.rng_state.copy()
    out = setup.draw(state, rng)
    n_dk, n_wk = state.n_doc_topic, state.n_word_topic
    want_theta = (n_dk + 0.4) / (n_dk.sum(1, keepdims=True) + 3 * 0.4)
    want_phi = (n_wk.T + 0.05) / (n_wk.sum(0)[:, None] + data.n_cols * 0.05)
    np.testing.assert_allclose(out["theta"], want_theta, rtol=1e-14)
    np.testing.assert_allclose(out["phi"], want_phi, rtol=1e-14)
    assert state.rng_state[0] == before[0]  # no random numbers drawn
    params = {"theta": out["theta"], "phi": out["phi"]}
    np.testing.assert_allclose(out["loglik"], model.log_likelihood(params, data).sum(), rtol=1e-12)
    np.testing.assert_allclose(
        out["p_dyad"], model.predictive(params, default_dyads(data)), rtol=1e-12
    )


def test_conditional_mean_run_records_its_mode_and_stays_on_the_simplex():
    idata = fit(param_draws="conditional_mean")
    assert idata.posterior.attrs["param_draws"] == "conditional_mean"
    np.testing.assert_allclose(idata.posterior["theta"].sum("topic"), 1.0, rtol=1e-12)
    np.testing.assert_allclose(idata.posterior["phi"].sum("word"), 1.0, rtol=1e-12)
    assert np.all(np.isfinite(idata.log_likelihood["counts"]))
    assert not np.array_equal(idata.posterior["theta"], fit().posterior["theta"])
