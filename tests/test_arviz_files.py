"""Saved results that ArviZ users can use directly (issue 10).

Gibbs, PyMC and EM fits of the aspect model are saved with ``to_netcdf``, read back with
``az.from_netcdf`` and put through ``az.summary``, ``az.plot_trace``, ``az.plot_rank`` and
``az.compare`` with every warning turned into an error, except the ones listed in
``ALLOWED`` with their reason. Every family's file, as ``latentzoo fit --out`` writes it, goes
through ``az.summary``, ``az.plot_trace``, ``az.loo`` and ``az.compare`` (samples) and
``az.plot_ppc`` (every family with a replicate of its data; issue 24), and each family's replicates
are checked against the model's expectation.
"""

import contextlib
import re
import warnings

import arviz as az
import matplotlib
import numpy as np
import pytest
import xarray as xr

import latentzoo
from latentzoo.data import load
from latentzoo.inference import aspect, mcmc, one_sided, two_sided
from latentzoo.models import AspectModel, OneSidedClustering, TwoSidedClustering

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

ALLOWED = [
    # arviz 0.23 calls matplotlib.cbook.normalize_kwargs(kw, None), deprecated in matplotlib
    # 3.11: a warning between the two libraries, whatever the data.
    ("Passing a dict or None as alias_mapping", DeprecationWarning),
    # arviz 0.23's compare sorts with DataFrame.sort_values(inplace=True), deprecated in pandas
    # 3.1 (Pandas4Warning): between the two libraries, whatever the data.
    ("The inplace keyword in DataFrame", Warning),
    # PyTensor (PyMC's backend) warns once per process when pip installed it without a BLAS.
    ("PyTensor could not link to a BLAS", UserWarning),
]


@contextlib.contextmanager
def no_warnings():
    """Every warning an error, except the library warnings of ``ALLOWED``."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for message, category in ALLOWED:
            warnings.filterwarnings("ignore", message=message, category=category)
        yield


def _round_trip(idata, tmp_path, name):
    path = tmp_path / f"{name}.nc"
    idata.to_netcdf(path)
    return az.from_netcdf(path)


def _swap_chains(idata, dims_perm):
    """A copy with the labels of chain 1 permuted: the label switching of a real run."""
    posterior = idata.posterior.copy()
    for name, var in posterior.data_vars.items():
        for dim, perm in dims_perm.items():
            if dim in var.dims:
                moved = var.transpose("chain", dim, ...).to_numpy().copy()
                moved[1] = moved[1][perm]
                var = var.transpose("chain", dim, ...).copy(data=moved).transpose(*var.dims)
        posterior[name] = var
    return posterior


@pytest.fixture(scope="module")
def corpus():
    return load("toy")


@pytest.fixture(scope="module")
def gibbs_idata(corpus):
    with no_warnings():
        return aspect.gibbs(AspectModel(2, alpha=0.5, eta=0.5), corpus, chains=4, draws=200,
                            tune=100, random_state=1, progressbar=False)  # fmt: skip


@pytest.fixture(scope="module")
def pymc_idata(corpus):
    pytest.importorskip("pymc")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # compilation and tiny-run sampler notices
        return latentzoo.fit(AspectModel(2, alpha=0.5, eta=0.5), corpus, method="pymc", chains=2,
                             draws=30, tune=30, random_state=0, progressbar=False)  # fmt: skip


# ------------------------------------------------------------------------- label switching
def test_gibbs_chains_are_aligned_to_chain_0(corpus):
    # Regression: 4 chains found the topics under different labels; az.summary gave R-hat ~1.5.
    model = AspectModel(2, alpha=0.5, eta=0.5)
    options = dict(chains=4, draws=200, tune=50, random_state=1, progressbar=False)
    raw = aspect.gibbs(model, corpus, align_labels=False, **options)
    with no_warnings():
        aligned = aspect.gibbs(model, corpus, **options)
    assert raw.posterior.attrs["labels_aligned"] == 0
    assert aligned.posterior.attrs["labels_aligned"] == 1
    with no_warnings():
        summary = az.summary(aligned, var_names=["theta", "phi"], kind="diagnostics")
    assert summary["r_hat"].max() < 1.05
    # Invariants and the log-likelihood are label-free: untouched.
    for name in ("loglik", "p_dyad"):
        assert aligned.posterior[name].equals(raw.posterior[name])
    assert aligned.log_likelihood["counts"].equals(raw.log_likelihood["counts"])
    # Each chain's topics are a permutation of the raw ones.
    for chain in range(4):
        a = aligned.posterior["phi"].isel(chain=chain).to_numpy()
        r = raw.posterior["phi"].isel(chain=chain).to_numpy()
        assert np.array_equal(a, r) or np.array_equal(a, r[:, ::-1])


def test_align_chains_undoes_a_known_permutation(gibbs_idata):
    swapped = _swap_chains(gibbs_idata, {"topic": [1, 0]})
    axis = mcmc.LabelAxis("topic", ("phi",))
    aligned, perms = mcmc.align_chains(swapped, [axis])
    assert perms["topic"][1].tolist() == [1, 0] and perms["topic"][0].tolist() == [0, 1]
    for name in ("theta", "phi"):
        np.testing.assert_array_equal(aligned[name], gibbs_idata.posterior[name])


def test_memberships_are_relabelled_with_their_clusters():
    rng = np.random.default_rng(0)
    z = rng.integers(0, 3, size=(1, 20, 7))
    z = np.concatenate([z, np.array([2, 0, 1])[z]])  # chain 1: label l of chain 0 is perm[l]
    q = rng.dirichlet(np.ones(4), size=3)[None, None].repeat(20, axis=1)
    q = np.concatenate([q, q[:, :, [1, 2, 0]]])  # chain 1's cluster k is chain 0's [1, 2, 0][k]
    posterior = xr.Dataset({
        "z": (("chain", "draw", "doc"), z),
        "q": (("chain", "draw", "cluster", "word"), q),
    })  # fmt: skip
    for match in (("q",), ("z",)):
        axis = mcmc.LabelAxis("cluster", match, values=("z",), size=3)
        aligned, perms = mcmc.align_chains(posterior, [axis])
        np.testing.assert_array_equal(aligned["z"][1], aligned["z"][0])
        np.testing.assert_array_equal(aligned["q"][1], aligned["q"][0])


@pytest.mark.parametrize(
    "fit, model",
    [(one_sided.gibbs, OneSidedClustering(2)), (two_sided.gibbs, TwoSidedClustering(2, 2))],
    ids=["one_sided", "two_sided"],
)
def test_clustering_families_align_their_labels(fit, model, corpus):
    options = dict(chains=4, draws=150, tune=50, random_state=1, progressbar=False)
    raw = fit(model, corpus, align_labels=False, **options)
    aligned = fit(model, corpus, **options)
    assert aligned.posterior.attrs["labels_aligned"] == 1
    names = [n for n in ("q", "pi") if n in aligned.posterior]
    assert max(mcmc.rank_rhat(aligned.posterior[n].to_numpy()).max() for n in names) < 1.1
    for name in aligned.posterior.data_vars:
        if name.startswith(("coassign", "p_dyad", "loglik")):
            assert aligned.posterior[name].equals(raw.posterior[name])


def _is_chainwise_permutation(aligned, raw, name, dim):
    """Each chain of ``aligned[name]`` is chain ``c`` of ``raw`` with its ``dim`` reordered."""
    for chain in range(raw.sizes["chain"]):
        a = aligned[name].isel(chain=chain).transpose(dim, ...).to_numpy()
        r = raw[name].isel(chain=chain).transpose(dim, ...).to_numpy()
        rows = [next((j for j in range(len(r)) if np.array_equal(a[k], r[j])), None)
                for k in range(len(a))]  # fmt: skip
        if None in rows or sorted(rows) != list(range(len(r))):
            return False
    return True


def test_pymc_chains_are_aligned_like_gibbs(corpus):
    # Regression: fit_pymc returned NUTS chains in the labellings they happened to settle on.
    pytest.importorskip("pymc")
    model = AspectModel(2, alpha=0.5, eta=0.5)
    options = dict(chains=3, draws=40, tune=40, random_state=2, progressbar=False)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # tiny-run sampler notices, chains that still disagree
        raw = latentzoo.fit_pymc(model, corpus, align_labels=False, **options)
        aligned = latentzoo.fit_pymc(model, corpus, **options)
    assert raw.posterior.attrs["labels_aligned"] == 0
    assert aligned.posterior.attrs["labels_aligned"] == 1
    assert _is_chainwise_permutation(aligned.posterior, raw.posterior, "phi", "topic")
    # theta follows phi's permutation, and the invariants are untouched.
    perm = mcmc.align_chains(raw.posterior, aspect.label_axes(model))[1]["topic"]
    for chain in range(3):
        np.testing.assert_array_equal(
            aligned.posterior["theta"][chain], raw.posterior["theta"][chain][..., perm[chain]]
        )
    for name in ("loglik", "p_dyad"):
        assert aligned.posterior[name].equals(raw.posterior[name])

    # Chain 0 keeps its labels; every other chain is no farther from it than before.
    def distance(posterior, chain):
        means = posterior["phi"].mean("draw").to_numpy()
        return float(((means[chain] - means[0]) ** 2).sum())

    np.testing.assert_array_equal(aligned.posterior["phi"][0], raw.posterior["phi"][0])
    for chain in (1, 2):
        assert distance(aligned.posterior, chain) <= distance(raw.posterior, chain) + 1e-12


def test_finite_mixture_aligns_labels_dpm_keeps_them():
    from latentzoo.inference import mixture
    from latentzoo.models import BayesianMixture, DirichletProcessMixture

    data = load("digits").subset(np.arange(30))
    options = dict(chains=3, draws=60, tune=20, random_state=0, progressbar=False)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        raw = mixture.gibbs(BayesianMixture(3), data, align_labels=False, **options)
        aligned = mixture.gibbs(BayesianMixture(3), data, **options)
        dpm = mixture.gibbs(DirichletProcessMixture(), data, **options)
    assert aligned.posterior.attrs["labels_aligned"] == 1
    assert dpm.posterior.attrs["labels_aligned"] == 0
    perm = mcmc.align_chains(raw.posterior, mixture.label_axes(BayesianMixture(3)))[1]["cluster"]
    inverse = np.argsort(perm, axis=1)
    for chain in range(3):
        z = raw.posterior["z"][chain].to_numpy()
        np.testing.assert_array_equal(aligned.posterior["z"][chain], inverse[chain][z])
    assert aligned.posterior["coassign"].equals(raw.posterior["coassign"])


def test_disagreeing_chains_warn(corpus, monkeypatch):
    # Chains far too short to agree: the warning says so instead of a silent R-hat.
    monkeypatch.setattr(mcmc, "RHAT_DISAGREE", 1.0)
    with pytest.warns(UserWarning, match="chains still disagree after aligning"):
        aspect.gibbs(AspectModel(2, alpha=0.5, eta=0.5), corpus, chains=2, draws=10, tune=0,
                     random_state=0, progressbar=False)  # fmt: skip


def test_rank_rhat_is_arviz_rhat():
    x = np.random.default_rng(3).normal(size=(3, 41, 5))
    x[1] += 0.5
    np.testing.assert_allclose(mcmc.rank_rhat(x), [az.rhat(x[..., i]) for i in range(5)])


# ------------------------------------------------------------------------- diagnostics
@pytest.mark.filterwarnings("ignore:the chains still disagree")  # 20 draws: they do
def test_fit_prints_one_diagnostic_line_only_with_progressbar(corpus, capsys):
    model = AspectModel(2, alpha=0.5, eta=0.5)
    latentzoo.fit(model, corpus, method="gibbs", chains=2, draws=20, tune=5, random_state=0,
                  progressbar=False)  # fmt: skip
    assert capsys.readouterr().err == ""
    latentzoo.fit(model, corpus, method="gibbs", chains=2, draws=20, tune=5, random_state=0)
    lines = [line for line in capsys.readouterr().err.splitlines() if line.startswith("gibbs:")]
    assert len(lines) == 1
    assert "2 chains x 20 draws" in lines[0] and "max R-hat" in lines[0]
    assert "min bulk ESS" in lines[0]


def test_diagnostic_line_has_no_rhat_for_one_chain():
    idata = az.from_dict(posterior={"loglik": np.random.default_rng(0).normal(size=(1, 30))})
    line = mcmc.diagnostic_line(idata, "gibbs")
    assert line.startswith("gibbs: 1 chains x 30 draws") and "R-hat" not in line


# ------------------------------------------------------------------------- the saved files
def test_saved_gibbs_file_works_in_arviz(gibbs_idata, tmp_path):
    back = _round_trip(gibbs_idata, tmp_path, "gibbs")
    assert back.posterior.attrs["labels_aligned"] == 1
    with no_warnings():
        summary = az.summary(back, var_names=["theta", "phi", "loglik"])
        az.plot_trace(back, var_names=["phi", "loglik"])
        az.plot_rank(back, var_names=["phi", "loglik"])
        plt.close("all")
    assert summary["r_hat"].max() < 1.05


def test_saved_pymc_file_has_log_likelihood_and_compares(gibbs_idata, pymc_idata, corpus, tmp_path):
    # Regression: the PyMC file had no log_likelihood group, so az.compare failed.
    back = _round_trip(pymc_idata, tmp_path, "pymc")
    gibbs_back = _round_trip(gibbs_idata, tmp_path, "gibbs")
    assert back.log_likelihood["counts"].dims == ("chain", "draw", "doc")
    assert list(back.log_likelihood["doc"].values) == list(corpus.row_labels)
    with no_warnings():
        az.summary(back, var_names=["theta", "phi", "loglik"], kind="stats")
        az.plot_trace(back, var_names=["loglik"])
        az.plot_rank(back, var_names=["loglik"])
        plt.close("all")
        # PSIS-LOO's own diagnostic: on 6 documents and 30 draws some Pareto k are high. It
        # judges the LOO estimate of these tiny runs, not the files; any other warning fails.
        warnings.filterwarnings(
            "ignore", message="Estimated shape parameter of Pareto", category=UserWarning
        )
        table = az.compare({"gibbs": gibbs_back, "pymc": back})
    assert set(table.index) == {"gibbs", "pymc"}
    assert np.isfinite(table["elpd_loo"]).all()


def test_pymc_log_likelihood_of_a_potential_model(corpus):
    # The one-sided reference declares its likelihood as pm.Potential: the model's own rows.
    pytest.importorskip("pymc")
    model = OneSidedClustering(2)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        idata = latentzoo.fit(model, corpus, method="pymc", chains=1, draws=5, tune=5,
                              random_state=0, progressbar=False)  # fmt: skip
    counts = idata.log_likelihood["counts"]
    assert counts.dims == ("chain", "draw", "doc") and counts.shape == (1, 5, corpus.n_rows)
    params = {n: idata.posterior[n].to_numpy()[0, 2] for n in model.param_names}
    expected = model.log_likelihood(params, corpus) + model.log_multinomial_coefficient(corpus)
    np.testing.assert_allclose(counts.to_numpy()[0, 2], expected)


def test_saved_em_file_is_a_named_point_estimate(corpus, tmp_path):
    # Regression (issues 10, 24): the EM file held a one-draw posterior, on which az.summary gave
    # NaN with warnings; it now holds a point_estimate group with named dims and no posterior.
    result = latentzoo.fit(AspectModel(2), corpus, method="annealed_em", betas=[1.0],
                           random_state=0)  # fmt: skip
    back = _round_trip(result.to_inference_data(), tmp_path, "em")
    assert "posterior" not in back.groups()
    assert back.point_estimate.attrs["point_estimate"] == 1
    assert back.point_estimate["theta"].dims == ("doc", "topic")
    np.testing.assert_array_equal(back.point_estimate["phi"], result.params["phi"])
    # The readers take the file as they take the result.
    assert latentzoo.perplexity(back, corpus) == result.perplexity(corpus)
    np.testing.assert_array_equal(latentzoo.labels(back), result.labels_)


def test_mixture_pymc_file_has_the_gibbs_log_likelihood(tmp_path):
    # Regression: a mixture's PyMC result had no log_likelihood group, so az.compare with the
    # Gibbs result failed; both now score each item under the drawn mixing measure.
    pytest.importorskip("pymc")
    from latentzoo.models import BayesianMixture

    data = load("digits").subset(np.arange(30))
    model = BayesianMixture(3)
    options = dict(chains=2, draws=30, random_state=0, progressbar=False)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # tiny-run sampler notices
        reference = latentzoo.fit(model, data, method="pymc", tune=30, **options)
        sample = latentzoo.fit(model, data, method="gibbs", **options)
    back = _round_trip(reference, tmp_path, "mixture_pymc")
    assert back.log_likelihood["x"].dims == sample.log_likelihood["x"].dims
    assert np.isfinite(back.log_likelihood["x"]).all()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # PSIS Pareto-k notices on 30 short draws
        table = az.compare({"pymc": back, "gibbs": sample})
    assert set(table.index) == {"pymc", "gibbs"}


# ------------------------------------------------------------- every family's saved file
def _registry_fits(samplers: bool) -> list[tuple[str, str]]:
    """(family, method) of every fast method of the registry that samples (or does not)."""
    from latentzoo.testing import method_kind
    from latentzoo.zoo import ZOO

    return [
        (name, method)
        for name, entry in ZOO.items()
        for method in entry.methods
        if (method_kind(entry, method) == "sampler") == samplers
    ]


SAMPLER_WARNINGS = [
    # A short chain of a tiny problem: PSIS-LOO's own diagnostic of its estimate (Pareto k above
    # 0.7 for some rows), about the run's length, not about the file.
    ("Estimated shape parameter of Pareto", UserWarning),
    # az.summary takes the R-hat of every variable, and one constant within every chain (a
    # membership z, a co-assignment that 40 draws of a tiny problem never change) gives 0 / 0.
    # Moving the label-dependent z out of the sampler's posterior is the sampler files' change.
    ("invalid value encountered in scalar divide", RuntimeWarning),
]
"""Warnings a sampler file's ArviZ calls may raise on the tiny runs here, with their reasons."""


def _saved_fit(family, method, tmp_path):
    """Fit the family's small problem as ``latentzoo.fit`` would, save it as ``latentzoo fit
    --out`` does, and read it back with warnings as errors."""
    from latentzoo.inference import fitted
    from latentzoo.testing import method_kind, run_method, small_problem
    from latentzoo.zoo import ZOO

    entry = ZOO[family]
    model, data, _ = small_problem(entry)
    sampler = method_kind(entry, method) == "sampler"
    options = dict(chains=2, draws=40, tune=20) if sampler else {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # tiny runs: convergence notices are not under test
        result = run_method(entry, method, model, data, **options)
    path = tmp_path / f"{family}_{method}.nc"
    fitted.save(result, path, data)
    with no_warnings():
        back = az.from_netcdf(str(path))
    return result, data, back, path


@pytest.mark.parametrize("family, method", _registry_fits(samplers=False))
def test_every_saved_point_estimate_has_its_own_group(family, method, tmp_path):
    # Regression (issue 24): point estimates were saved as one-draw posteriors.
    from latentzoo.inference import fitted, results

    result, data, back, path = _saved_fit(family, method, tmp_path)
    assert "posterior" not in back.groups()
    estimate = back[results.POINT_ESTIMATE_GROUP]
    assert not [dim for dim in estimate.dims if re.search(r"dim_\d+$", dim)]
    assert {"chain", "draw"}.isdisjoint(estimate.dims)
    with no_warnings():
        loaded = latentzoo.load_result(path)
    for name, value in fitted.point_estimate(result).items():
        np.testing.assert_array_equal(fitted.point_estimate(loaded)[name], value)
    if hasattr(loaded.model, "labels"):
        np.testing.assert_equal(latentzoo.labels(loaded), latentzoo.labels(back))
    if hasattr(result, "perplexity"):
        assert latentzoo.perplexity(back, data) == result.perplexity(data)


@pytest.mark.parametrize("family, method", _registry_fits(samplers=True))
def test_every_saved_sample_works_in_arviz(family, method, tmp_path):
    _, _, back, path = _saved_fit(family, method, tmp_path)
    with no_warnings():
        for message, category in SAMPLER_WARNINGS:
            warnings.filterwarnings("ignore", message=message, category=category)
        az.summary(back)
        az.plot_trace(back, var_names=["loglik"])
        plt.close("all")
        if "log_likelihood" in back.groups():
            az.loo(back)
            table = az.compare({"a": back, "b": latentzoo.load_result(path)})
            assert set(table.index) == {"a", "b"}


# ----------------------------------------------------- posterior predictive checks (issue 24)
def _registry_fits_all() -> list[tuple[str, str]]:
    return _registry_fits(samplers=True) + _registry_fits(samplers=False)


def _replicates(model) -> bool:
    """Whether the family defines a replicate of its data (a cost or retrieval model does not,
    and says why in ``no_replicate_reason``)."""
    return callable(getattr(model, "replicate", None))


@pytest.mark.parametrize("family, method", _registry_fits_all())
def test_every_saved_file_has_a_posterior_predictive_check(family, method, tmp_path):
    # Regression (issue 24): no file had posterior_predictive, so az.plot_ppc could not run.
    from latentzoo.inference import results

    result, data, back, path = _saved_fit(family, method, tmp_path)
    model = getattr(result, "model", None)  # a tree and a sample: from the file's attributes
    model = model or results.model_from_attrs(results.parameter_dataset(back).attrs)
    if not _replicates(model):
        # Pairwise and central clustering (cost models: a Gibbs distribution over assignments,
        # no distribution of the data) and Bayesian Sets (a ranking under a fixed prior, no
        # parameters fitted): no replicate of the data is defined, and the file says nothing
        # it cannot back.
        assert "posterior_predictive" not in back.groups()
        assert "no sampling distribution" in model.no_replicate_reason or (
            "no model of the data set" in model.no_replicate_reason
        )
        return
    predictive = back.posterior_predictive
    assert predictive.sizes["chain"] == 1
    assert 1 <= predictive.sizes["draw"] <= results.PREDICTIVE_DRAWS
    assert set(back.observed_data.data_vars) <= set(predictive.data_vars)
    assert not [dim for dim in predictive.dims if re.search(r"dim_\d+$", dim)]
    with no_warnings():
        # Empirical CDFs: a replicate of the toy data's few features can be constant by chance
        # (the BPM's four Bernoulli feature means on a 0.1 grid), and ArviZ's default KDE fails on
        # a constant array (it warns, then cannot stack the curves).
        az.plot_ppc(back, kind="cumulative")
        plt.close("all")
        latentzoo.load_result(path)  # still reads back


def test_replicates_leave_the_fit_alone_and_repeat_with_the_seed(corpus, tmp_path):
    # The replicates' stream is their own: the sample in the file is the one in memory, and the
    # same seed gives the same replicates.
    from latentzoo.inference import fitted

    sample = aspect.gibbs(AspectModel(2, alpha=0.5, eta=0.5), corpus, chains=2, draws=60, tune=10,
                          random_state=4, progressbar=False)  # fmt: skip
    before = {name: sample.posterior[name].to_numpy().copy() for name in sample.posterior}
    paths = [tmp_path / f"fit{i}.nc" for i in range(3)]
    for path, seed in zip(paths, (5, 5, 6), strict=True):
        fitted.save(sample, path, corpus, predictive_seed=seed)
    first, again, other = (az.from_netcdf(path) for path in paths)
    for name, values in before.items():
        np.testing.assert_array_equal(sample.posterior[name], values)
        np.testing.assert_array_equal(first.posterior[name], values)
    np.testing.assert_array_equal(first.posterior_predictive["counts"],
                                  again.posterior_predictive["counts"])  # fmt: skip
    assert not np.array_equal(first.posterior_predictive["counts"],
                              other.posterior_predictive["counts"])  # fmt: skip
    # 120 draws thinned evenly to 100, each replicating its own draw's rows with their totals.
    assert first.posterior_predictive.sizes["draw"] == 100
    np.testing.assert_array_equal(
        first.posterior_predictive["counts"].sum("word").isel(chain=0, draw=0),
        corpus.row_totals,
    )


def test_large_data_get_fewer_replicates_and_say_so(corpus, monkeypatch):
    from latentzoo.inference import results

    monkeypatch.setattr(results, "PREDICTIVE_VALUES", 10 * corpus.n_rows * corpus.n_cols)
    fit = latentzoo.fit(AspectModel(2), corpus, betas=[1.0], random_state=0)
    groups = results.posterior_predictive(fit.to_inference_data(), corpus)
    assert groups["posterior_predictive"].sizes["draw"] == 10
    assert "replicated values" in groups["posterior_predictive"].attrs["thinned_by"]


def test_data_too_large_for_one_replicate_are_refused_up_front(corpus, monkeypatch, tmp_path):
    # 20 Newsgroups (11,293 x 73,712 cells) would need a dense replicate of 832 M values: refused
    # by name before anything is allocated, and a saved file says why it has no check.
    from latentzoo.inference import fitted, results

    monkeypatch.setattr(results, "PREDICTIVE_VALUES", corpus.n_rows * corpus.n_cols - 1)
    fit = latentzoo.fit(AspectModel(2), corpus, betas=[1.0], random_state=0)
    with pytest.raises(results.NoPosteriorPredictive, match="PREDICTIVE_VALUES"):
        results.posterior_predictive(fit.to_inference_data(), corpus)
    path = tmp_path / "fit.nc"
    fitted.save(fit, path)
    reason = fitted.append_posterior_predictive(fit, path, corpus)
    assert reason is not None and "PREDICTIVE_VALUES" in reason
    assert "posterior_predictive" not in az.from_netcdf(path).groups()


def test_the_readme_command_line_file_plots_its_ppc(tmp_path, monkeypatch):
    # The README's "Command line" says az.plot_ppc(az.from_netcdf("fit.nc")) works on what
    # latentzoo fit writes: here on the toy corpus.
    from latentzoo.cli import main

    monkeypatch.chdir(tmp_path)
    assert main(["fit", "aspect", "--data", "toy", "--k", "2", "--method", "annealed_em",
                 "--out", "fit.nc", "--quiet"]) == 0  # fmt: skip
    with no_warnings():
        az.plot_ppc(az.from_netcdf("fit.nc"))
        plt.close("all")


# Every family with a replicate, and the parameters its mean is checked at: a point estimate of
# the family's small problem (the co-occurrence families, BHC's cut) or a draw's assignments.
_REPLICATING = ["aspect", "one_sided", "two_sided", "product_space", "cluster-abstraction",
                "dpm", "mixture", "bhc"]  # fmt: skip


def _checked_params(family):
    from latentzoo.inference import fitted
    from latentzoo.testing import method_kind, run_method, small_problem
    from latentzoo.zoo import ZOO

    entry = ZOO[family]
    model, data, truth = small_problem(entry)
    point = [m for m in entry.methods if method_kind(entry, m) != "sampler"]
    if not point:  # the mixtures: the simulated assignments, as a draw of z would give them
        return model, data, {"z": np.asarray(truth["z"])}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = run_method(entry, point[0], model, data)
    return model, data, fitted.point_estimate(result)


def _expected_summary(model, data, params):
    """``(name, expectation)`` of the family's first summary under ``params``, computed from the
    model's own probabilities, not from its replicates."""
    if hasattr(data, "counts"):
        # E[word_counts_j] = sum_i n_i P(y_j | x_i), memberships averaged as the estimate has them
        soft = {name: value for name, value in params.items() if name != "z"}
        probabilities = model.replicate_probabilities(soft, data)
        return "word_counts", data.row_totals @ probabilities
    # E[feature_mean] = mean_i E[theta_{z_i}]: each cluster's Beta posterior mean
    labels = np.asarray(params["z"] if "z" in params else params["cluster"])
    _, labels = np.unique(labels, return_inverse=True)
    component = model.component
    stats = component.stats(data.X, labels, labels.max() + 1)
    means = component.posterior_moments(stats)["theta"][0]
    return "feature_mean", means[labels].mean(axis=0)


@pytest.mark.parametrize("family", _REPLICATING)
def test_replicates_have_the_model_expectation(family):
    # The mean of many replicates' summary is its expectation under the parameters, within
    # Monte Carlo error: 5 standard errors of the mean, from the replicates' own spread.
    from latentzoo.inference.results import predictive_rng

    model, data, params = _checked_params(family)
    name, expected = _expected_summary(model, data, params)
    rng = predictive_rng(0)
    draws = np.stack([model.replicate(params, data, rng)[name][1] for _ in range(2000)])
    error = draws.std(axis=0) / np.sqrt(len(draws))
    assert np.all(np.abs(draws.mean(axis=0) - expected) <= 5 * error + 1e-9)
    assert draws.std(axis=0).max() > 0  # a replicate that varies, not the data copied back


@pytest.mark.parametrize("component", ["normal_gamma", "dirichlet_multinomial"])
def test_mixture_replicates_keep_their_components_expectation(component):
    # Real features: E[feature_mean] = mean_i mu_n[z_i]; counts: each item keeps its total, so
    # E[feature_mean] = mean_i n_i theta_n[z_i].
    from latentzoo.data import Features
    from latentzoo.inference.results import predictive_rng
    from latentzoo.models import DirichletProcessMixture
    from latentzoo.models.conjugate import DirichletMultinomial, NormalGamma

    rng = np.random.default_rng(1)
    labels = np.repeat([0, 1], 6)
    if component == "normal_gamma":
        model = DirichletProcessMixture(component=NormalGamma())
        data = Features(rng.normal(size=(12, 3)) + 2.0 * labels[:, None])
        moment = "mu"
    else:
        model = DirichletProcessMixture(component=DirichletMultinomial())
        data = Features(rng.integers(0, 6, size=(12, 3)))
        moment = "theta"
    stats = model.component.stats(data.X, labels, 2)
    means = model.component.posterior_moments(stats)[moment][0][labels]
    if component == "dirichlet_multinomial":
        means = means * data.X.sum(axis=1, keepdims=True)
    expected = means.mean(axis=0)
    stream = predictive_rng(0)
    reps = [model.replicate({"z": labels}, data, stream) for _ in range(4000)]
    draws = np.stack([rep["feature_mean"][1] for rep in reps])
    if component == "dirichlet_multinomial":
        for rep in reps[:5]:
            np.testing.assert_array_equal(rep["x"][1].sum(axis=1), data.X.sum(axis=1))
    error = draws.std(axis=0) / np.sqrt(len(draws))
    assert np.all(np.abs(draws.mean(axis=0) - expected) <= 5 * error)


def test_posterior_predictive_of_a_fit_in_memory(corpus):
    from latentzoo.api import posterior_predictive
    from latentzoo.inference.results import NoPosteriorPredictive
    from latentzoo.models import PairwiseClustering

    options = dict(chains=2, draws=30, tune=5, random_state=0, progressbar=False)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # 30 draws: convergence notices are not under test
        sample = aspect.gibbs(AspectModel(2, alpha=0.5, eta=0.5), corpus, **options)
        bare = aspect.gibbs(AspectModel(2, alpha=0.5, eta=0.5), corpus, keep_params=False,
                            **options)  # fmt: skip
    idata = posterior_predictive(sample, corpus, max_draws=20)
    assert idata.posterior_predictive.sizes["draw"] == 20
    assert {"counts", "word_counts", "distinct_words"} == set(idata.observed_data.data_vars)
    assert "posterior_predictive" not in sample.groups()  # the sample itself is left alone
    with no_warnings():
        az.plot_ppc(idata, var_names=["word_counts"])
        plt.close("all")
    # Said, not silent: a sample without parameter draws, and a cost model.
    with pytest.raises(NoPosteriorPredictive, match="keep_params"):
        posterior_predictive(bare, corpus)
    model = PairwiseClustering(2)
    data, _ = model.simulate(0, n_items=8)
    result = latentzoo.fit(model, data, method="greedy", random_state=0)
    with pytest.raises(NoPosteriorPredictive, match="cost model"):
        posterior_predictive(result, data)


def test_mixture_replicates_from_a_reference_draw_of_weights_and_parameters():
    # The PyMC reference keeps w and theta, no z: each item's cluster is drawn from its
    # posterior responsibilities, so E[feature_mean] = mean_i sum_k r_ik theta_k.
    from latentzoo.inference.results import predictive_rng
    from latentzoo.models import BayesianMixture

    data = load("digits").subset(np.arange(40))
    model = BayesianMixture(2)
    rng = np.random.default_rng(2)
    params = {"w": np.array([0.3, 0.7]), "theta": rng.uniform(0.1, 0.9, size=(2, data.shape[1]))}
    assert model.replicate_names(params) and not model.replicate_names(["theta"])
    expected = (model.responsibilities(params, data) @ params["theta"]).mean(axis=0)
    stream = predictive_rng(0)
    draws = np.stack(
        [model.replicate(params, data, stream)["feature_mean"][1] for _ in range(3000)]
    )
    error = draws.std(axis=0) / np.sqrt(len(draws))
    assert np.all(np.abs(draws.mean(axis=0) - expected) <= 5 * error + 1e-12)


def test_clustering_replicates_from_a_reference_draw_of_rho_and_q():
    # A PyMC draw of one-sided clustering holds rho and q only: each row's cluster is drawn
    # from its posterior given its counts, as the sampler's z would be.
    from latentzoo.inference.results import predictive_rng

    model, data, estimate = _checked_params("one_sided")
    params = {name: estimate[name] for name in ("rho", "q")}
    name, expected = _expected_summary(model, data, params)
    stream = predictive_rng(1)
    draws = np.stack([model.replicate(params, data, stream)[name][1] for _ in range(2000)])
    error = draws.std(axis=0) / np.sqrt(len(draws))
    assert np.all(np.abs(draws.mean(axis=0) - expected) <= 5 * error + 1e-9)
