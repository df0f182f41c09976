"""Tests of the face: ``latentzoo.fit`` and ``latentzoo.validate``."""

import warnings
from pathlib import Path

import arviz as az
import numpy as np
import pandas as pd
import pytest

import latentzoo
from latentzoo.data import CoOccurrence, load
from latentzoo.inference import EMResult
from latentzoo.models import AspectModel

LEVELS = ["exact", "density", "reference", "optimality", "mode-matched", "calibrated"]


# ----------------------------------------------------------------------------- fit
def test_fit_rejects_unknown_methods_and_lists_the_known_ones():
    with pytest.raises(ValueError, match="unknown method 'nuts'") as info:
        latentzoo.fit(AspectModel(2), load("toy"), method="nuts")
    for name in ("annealed_em", "gibbs", "pymc"):
        assert name in str(info.value)


def test_fit_rejects_unregistered_models():
    class Other:
        def check_data(self, data):
            return data

    with pytest.raises(ValueError, match="not registered"):
        latentzoo.fit(Other(), load("toy"))


BAD_DATA = {
    "nan": np.array([[1.0, np.nan], [2.0, 3.0]]),
    "inf": np.array([[1.0, 2.0], [np.inf, 3.0]]),
    "negative": np.array([[1, 2], [-1, 3]]),
    "non-integer": np.array([[1.0, 2.5], [2.0, 3.0]]),
    "empty": np.zeros((0, 3)),
    "1-D": np.array([1, 2, 3]),
    "3-D": np.ones((2, 2, 2)),
    "all zero": np.zeros((2, 3)),
    "strings": np.array([["a", "b"], ["c", "d"]]),
}


@pytest.mark.parametrize("case", list(BAD_DATA))
def test_fit_reports_the_data_layers_message(case):
    array = BAD_DATA[case]
    with pytest.raises(ValueError) as from_data:
        CoOccurrence(array)
    with pytest.raises(ValueError) as from_fit:
        latentzoo.fit(AspectModel(2), array, method="annealed_em")
    assert str(from_fit.value) == str(from_data.value)


def test_fit_rejects_more_components_than_the_data_supports():
    with pytest.raises(ValueError, match="larger than the data supports"):
        latentzoo.fit(AspectModel(4), [[1, 2, 3]], method="annealed_em")


def test_fit_accepts_plain_arrays():
    counts = load("toy").toarray()
    a = latentzoo.fit(AspectModel(2), counts, betas=[1.0], random_state=1)
    b = latentzoo.fit(AspectModel(2), CoOccurrence(counts), betas=[1.0], random_state=1)
    assert isinstance(a, EMResult)
    for name in ("theta", "phi"):
        assert np.array_equal(a.params[name], b.params[name])


@pytest.mark.parametrize("betas", ["auto", [0.5, 1.0]])
def test_fit_is_reproducible(betas):
    model = AspectModel(3)
    data, _ = model.simulate(0, n_docs=15, n_words=20, doc_length=40)

    def run(seed):
        return latentzoo.fit(model, data, method="annealed_em", betas=betas, random_state=seed)

    a, b, c = run(5), run(5), run(6)
    for name in ("theta", "phi"):
        assert np.array_equal(a.params[name], b.params[name])
        assert not np.array_equal(a.params[name], c.params[name])
    assert a.betas == b.betas


def test_threaded_fit_matches_serial_fit():
    model = AspectModel(3)
    data, _ = model.simulate(1, n_docs=30, n_words=25, doc_length=40)
    kwargs = {"betas": [0.8, 1.0], "max_iter": 20, "tol": 0, "random_state": 0}
    serial = latentzoo.fit(model, data, **kwargs)
    threaded = latentzoo.fit(model, data, n_threads=2, **kwargs)
    for name in ("theta", "phi"):
        np.testing.assert_allclose(
            threaded.params[name], serial.params[name], rtol=1e-8, atol=1e-12
        )


def test_em_result_netcdf_round_trip(tmp_path):
    result = latentzoo.fit(AspectModel(2), load("toy"), random_state=0)
    idata = result.to_inference_data()
    assert "posterior" not in idata.groups()  # a point estimate is not a one-draw sample
    assert idata.point_estimate["theta"].shape == (6, 2)
    assert idata.point_estimate["phi"].shape == (2, 8)
    assert idata.point_estimate.attrs["method"] == "annealed_em"
    path = tmp_path / "em.nc"
    idata.to_netcdf(str(path))
    back = az.from_netcdf(str(path))
    assert back.point_estimate.equals(idata.point_estimate)
    np.testing.assert_array_equal(back.point_estimate["theta"].values, result.params["theta"])
    assert back.em_trace.equals(idata.em_trace)
    assert len(back.em_trace["free_energy"]) == len(result.trace)


@pytest.mark.parametrize("betas", [[1.0], [0.5, 1.0]], ids=["one_beta", "two_betas"])
def test_load_result_gives_back_the_em_result(tmp_path, betas):
    # Regression (issue 24): a saved fit had no loader back to a result, and a length-1 betas
    # attribute came back from netCDF as a scalar.
    data = load("toy")
    result = latentzoo.fit(AspectModel(2), data, betas=betas, random_state=0)
    path = tmp_path / "em.nc"
    result.save(path)
    back = latentzoo.load_result(path)
    assert type(back) is type(result)
    assert back.model == result.model and back.betas == betas and back.method == result.method
    assert back.converged == result.converged and back.settings == result.settings
    for name, value in result.params.items():
        np.testing.assert_array_equal(back.params[name], value)
    pd.testing.assert_frame_equal(back.trace, result.trace, check_dtype=False)
    pd.testing.assert_frame_equal(back.stages, result.stages, check_dtype=False)
    assert latentzoo.perplexity(back, data) == result.perplexity(data)
    np.testing.assert_array_equal(latentzoo.labels(back), result.labels_)
    assert back.point_estimate().keys() == result.point_estimate().keys()


@pytest.mark.filterwarnings("ignore::latentzoo.ConvergenceWarning")  # five draws: it is not
def test_load_result_gives_back_a_sample_as_inference_data(tmp_path):
    idata = latentzoo.fit(AspectModel(2), load("toy"), method="gibbs", chains=1, draws=5,
                          tune=5, random_state=0, progressbar=False)  # fmt: skip
    path = tmp_path / "gibbs.nc"
    idata.to_netcdf(str(path))
    back = latentzoo.load_result(path)
    assert isinstance(back, az.InferenceData) and back.posterior.equals(idata.posterior)


def test_load_result_refuses_a_file_without_parameters(tmp_path):
    path = tmp_path / "empty.nc"
    az.from_dict(observed_data={"x": np.zeros(3)}).to_netcdf(str(path))
    with pytest.raises(ValueError, match="holds no parameters"):
        latentzoo.load_result(path)
    with pytest.raises(ValueError, match="numpy.load"):
        latentzoo.load_result(tmp_path / "arrays.npz")


def test_gibbs_netcdf_round_trip(tmp_path):
    idata = latentzoo.fit(AspectModel(2), load("toy"), method="gibbs", chains=2, draws=20,
                          tune=5, random_state=0, progressbar=False)  # fmt: skip
    assert isinstance(idata, az.InferenceData)
    path = tmp_path / "gibbs.nc"
    idata.to_netcdf(str(path))
    back = az.from_netcdf(str(path))
    for group in ("posterior", "log_likelihood", "sample_stats", "observed_data"):
        assert getattr(back, group).equals(getattr(idata, group)), group


# ----------------------------------------------------------------------------- validate
@pytest.fixture(scope="module")
def quick_validation():
    # Every level on the QUICK sizes (about 2 minutes): slow, like the other families' QUICK
    # runs (tests/test_validation.py); the default run validates AspectModel(2) at the cheap
    # levels on the SMALL sizes there.
    return latentzoo.validate(AspectModel(2), quick=True)


@pytest.mark.slow
def test_validate_quick_reaches_every_level(quick_validation):
    c = quick_validation
    assert c.passed, c.to_markdown()
    assert c.levels_reached == LEVELS
    assert {check.level for check in c.checks} == set(LEVELS)
    assert c.sbc is not None and c.sbc.check.passed
    assert set(c.timings) == set(LEVELS)


@pytest.mark.slow
def test_validate_report(quick_validation):
    text = quick_validation.to_markdown()
    assert "Verdict" in text and "PASSED" in text
    for level in LEVELS:
        assert level in text
    # Each level names the problem it validated (data, K, chains).
    assert set(quick_validation.problems) == set(LEVELS)
    assert "| reference | synthetic: CoOccurrence(10 x 12" in text and "distinct mode" in text


def test_validate_rejects_unknown_levels():
    with pytest.raises(ValueError, match="unknown validation levels"):
        latentzoo.validate(AspectModel(2), levels=["exact", "vibes"])


def test_validate_exact_level_only():
    c = latentzoo.validate(AspectModel(2, alpha=0.5, eta=0.8), levels=["exact"], random_state=3)
    assert c.levels_reached == ["exact"] and c.passed


# ------------------------------------------------------------------- method defaults
def test_unset_priors_take_the_defaults_of_the_method_and_set_ones_are_kept():
    toy = load("toy")
    model = AspectModel(2)
    em = latentzoo.fit(model, toy, method="annealed_em", betas=[1.0], random_state=0)
    assert (em.model.alpha, em.model.eta) == (1.1, 1.01)
    idata = latentzoo.fit(model, toy, method="gibbs", chains=1, draws=5, tune=5,
                          random_state=0, progressbar=False)  # fmt: skip
    assert (idata.posterior.attrs["model_alpha"], idata.posterior.attrs["model_eta"]) == (0.1, 0.01)
    chosen = latentzoo.fit(AspectModel(2, eta=0.5), toy, method="gibbs", chains=1, draws=5,
                           tune=5, random_state=0, progressbar=False)  # fmt: skip
    assert (chosen.posterior.attrs["model_alpha"], chosen.posterior.attrs["model_eta"]) == (
        0.1,
        0.5,
    )
    # The model as constructed (what validate and the inference functions use) is the MAP one.
    assert (model.alpha, model.eta) == (1.1, 1.01) and model == AspectModel(2, 1.1, 1.01)


def _posterior_mean_perplexity(idata, model, test):
    # One chain, so the posterior mean of theta and phi is not blurred by label switching.
    theta = idata.posterior["theta"].values[0].mean(axis=0)
    phi = idata.posterior["phi"].values[0].mean(axis=0)
    return float(np.exp(-model.heldout_log_likelihood({"theta": theta, "phi": phi}, test).sum()
                        / test.total))  # fmt: skip


def test_the_samplers_default_priors_predict_held_out_words_better_than_the_map_ones():
    # Found: AspectModel()'s MAP priors (1.1, 1.01) made Gibbs predict much worse than the sparse
    # LDA priors (perplexity 698 vs 502 on Reuters at K=20). With priors unset, fit now gives
    # Gibbs the sparse ones.
    data = load("reuters")
    # Measured at these settings: 1330 vs 1701 and 1355 vs 1758 on two splits (ratio 0.78).
    train, test = data.split(0.1, random_state=1)
    options = dict(chains=1, draws=100, tune=400, thin=2, progressbar=False, random_state=3)
    default = latentzoo.fit(AspectModel(20), train, method="gibbs", **options)
    blurred = latentzoo.fit(AspectModel(20, 1.1, 1.01), train, method="gibbs", **options)
    model = AspectModel(20)
    assert _posterior_mean_perplexity(default, model, test) < 0.9 * _posterior_mean_perplexity(
        blurred, model, test
    )


# ----------------------------------------------------------------------- convergence (issue 24)
def test_unconverged_sample_raises_convergence_warning_at_the_callers_line():
    # Before: the DPM came back with max R-hat 1.4 and min bulk ESS 9 and no warning at all.
    from latentzoo.models import DirichletProcessMixture

    data = load("digits").subset(np.arange(60))
    with pytest.warns(latentzoo.ConvergenceWarning) as caught:
        idata = latentzoo.fit(DirichletProcessMixture(alpha=2.0), data, method="gibbs", chains=2,
                              draws=12, tune=2, random_state=0, progressbar=False)  # fmt: skip
    warning = next(w for w in caught if w.category is latentzoo.ConvergenceWarning)
    assert warning.filename == __file__
    message = str(warning.message)
    assert message.startswith("gibbs: NOT CONVERGED: ") and "R-hat <= 1.01" in message
    assert "split_merge=True" in message  # the suggestion of a DPM run without the moves
    assert issubclass(latentzoo.ConvergenceWarning, UserWarning)
    assert idata.posterior.attrs["converged"] == 0


def test_converged_sample_is_silent_and_says_so():
    import warnings

    from latentzoo.data import Features
    from latentzoo.models import BayesianMixture

    # One cluster of identical items: every chain sits in the one partition at once.
    data = Features(np.ones((8, 3), dtype=np.int64))
    with warnings.catch_warnings():
        warnings.simplefilter("error", latentzoo.ConvergenceWarning)
        idata = latentzoo.fit(BayesianMixture(1), data, method="gibbs", chains=2, draws=300,
                              tune=20, random_state=0, progressbar=False)  # fmt: skip
    assert idata.posterior.attrs["convergence"] == "converged"
    assert idata.posterior.attrs["max_r_hat"] <= 1.01


# ------------------------------------------------------------------ the README (issue 24)
README = Path(__file__).resolve().parents[1] / "README.md"

SMALL_TEN_LINES = {
    'AspectModel(n_components=20)': "AspectModel(n_components=3)",
    "latentzoo.validate(AspectModel(2), quick=True)":
        'latentzoo.validate(AspectModel(2), quick=True, levels=["exact"])',
}  # fmt: skip
"""What the test shrinks in the README's "Ten lines" (each must be there as written); the data are
the first 40 Reuters documents on their 60 most frequent words."""


def _python_block(section: str) -> str:
    """The first Python block of the README section titled ``section``."""
    text = README.read_text().split(f"\n## {section}\n", 1)[1]
    return text.split("```python\n", 1)[1].split("```", 1)[0]


def test_readme_ten_lines_run_as_written(monkeypatch, capsys):
    # Before: keep_params="auto" dropped the Gibbs draws (2 chains x 300 draws x 93,060 values is
    # above 2e7) and latentzoo.perplexity(idata, test) raised at line 11. Run at small sizes with
    # the limit scaled to the same number of kept draws, so the decision is the full-size one.
    from latentzoo import data as data_module
    from latentzoo.inference import mcmc

    block = _python_block("Ten lines")
    for written, small in SMALL_TEN_LINES.items():
        assert written in block, f"the README's Ten lines no longer say {written!r}"
        block = block.replace(written, small)
    reuters = load("reuters")
    full_values = 20 * (reuters.n_rows + reuters.n_cols)  # theta and phi at K = 20
    small = reuters.subset(rows=np.arange(40), cols=reuters.top_columns(60))
    small = small.subset(rows=np.flatnonzero(small.row_totals > 0))
    small_values = 3 * (small.n_rows + small.n_cols)
    monkeypatch.setattr(mcmc, "MAX_KEPT_VALUES", mcmc.MAX_KEPT_VALUES * small_values // full_values)
    monkeypatch.setattr(
        data_module, "load", lambda name: small if name == "reuters" else load(name)
    )
    namespace = {"__name__": "readme"}
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        exec(compile(block, str(README), "exec"), namespace)  # noqa: S102 - the README's own code
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 3
    assert namespace["idata"].posterior.attrs["kept_params"] == 1
    assert 1 < float(lines[1]) < 60  # the Gibbs perplexity, below the uniform one over 60 words
    assert not [w for w in caught if "keep_params" in str(w.message)]
    # The README says the Gibbs run's verdict is warned about and recorded; it is.
    verdict = namespace["idata"].posterior.attrs["convergence"]
    warned = [w for w in caught if w.category is latentzoo.ConvergenceWarning]
    assert bool(warned) == (verdict == "not converged")


def test_pymc_sample_carries_the_same_verdict():
    pytest.importorskip("pymc")
    from latentzoo.inference import mcmc
    from latentzoo.models import OneSidedClustering

    with pytest.warns(latentzoo.ConvergenceWarning, match=r"^pymc: NOT CONVERGED: .*target_accept"):
        idata = latentzoo.fit(OneSidedClustering(2), load("toy"), method="pymc", chains=2,
                              draws=10, tune=10, random_state=0, progressbar=False)  # fmt: skip
    attrs = idata.posterior.attrs
    assert attrs["convergence"] == "not converged" and attrs["converged"] == 0
    # Judged on the label-invariant quantities, as the Gibbs samples are.
    assert attrs["convergence_vars"] == "loglik, p_dyad, coassign"
    fresh = az.from_dict(posterior=dict(idata.posterior.data_vars))
    recomputed = mcmc.convergence(fresh, label_dims=["cluster"])
    assert attrs["max_r_hat"] == pytest.approx(recomputed.max_r_hat)
