"""Saved results that ArviZ users can use directly (issue 10).

Gibbs, PyMC and EM fits of the aspect model are saved with ``to_netcdf``, read back with
``az.from_netcdf`` and put through ``az.summary``, ``az.plot_trace``, ``az.plot_rank`` and
``az.compare`` with every warning turned into an error, except the ones listed in
``ALLOWED`` with their reason.
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
