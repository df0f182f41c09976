"""Optimality of the point estimators and the PyMC declarations' densities (issue 7).

``log_prior`` of every model against scipy; the density spot check on every registered family and
against mutated PyMC declarations; the KKT and ``find_MAP`` checks at converged EM estimates and
at the fixed point of an M-step with one extra pseudo-count (``alpha`` instead of ``alpha - 1``).
"""

import dataclasses
import warnings

import numpy as np
import pytest
from scipy import stats

from latentzoo.data import CoOccurrence
from latentzoo.inference.optimality import (
    KKT_TOL,
    density_check,
    find_map_check,
    kkt_check,
    mean_field_check,
    prior_draw,
)
from latentzoo.models import (
    AspectModel,
    BayesianMixture,
    BetaBernoulli,
    DirichletMultinomial,
    DirichletProcessMixture,
    NormalGamma,
    NormalInverseWishart,
    OneSidedClustering,
    ProductSpaceMixture,
    TwoSidedClustering,
)
from latentzoo.validation import QUICK, density_level, optimality_level
from latentzoo.zoo import ZOO


@pytest.fixture(autouse=True)
def _quiet():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        yield


def _dirichlet_rows(x, concentration):
    x = np.atleast_2d(x)
    return sum(stats.dirichlet.logpdf(row, np.full(x.shape[1], concentration)) for row in x)


# ----------------------------------------------------------------------------- log_prior
def test_log_prior_of_the_cooccurrence_models_matches_scipy():
    rng = np.random.default_rng(0)
    aspect = AspectModel(3, alpha=0.7, eta=1.6)
    params = {"theta": rng.dirichlet(np.ones(3), 4), "phi": rng.dirichlet(np.ones(5), 3)}
    want = _dirichlet_rows(params["theta"], 0.7) + _dirichlet_rows(params["phi"], 1.6)
    assert aspect.log_prior(params) == pytest.approx(want, rel=1e-12)

    one_sided = OneSidedClustering(3, alpha=2.5, eta=0.4)
    params = {"rho": rng.dirichlet(np.ones(3)), "q": rng.dirichlet(np.ones(5), 3)}
    want = _dirichlet_rows(params["rho"], 2.5) + _dirichlet_rows(params["q"], 0.4)
    assert one_sided.log_prior(params) == pytest.approx(want, rel=1e-12)

    pmm = ProductSpaceMixture(2, 3, alpha=1.3, eta=0.8)
    params = {
        "pi": rng.dirichlet(np.ones(6)).reshape(2, 3),
        "p_row": rng.dirichlet(np.ones(4), 2),
        "q_col": rng.dirichlet(np.ones(5), 3),
    }
    want = (
        _dirichlet_rows(params["pi"].ravel(), 1.3)
        + _dirichlet_rows(params["p_row"], 0.8)
        + _dirichlet_rows(params["q_col"], 0.8)
    )
    assert pmm.log_prior(params) == pytest.approx(want, rel=1e-12)


def _polya_urn(labels, k, alpha):
    """Sequential predictive probabilities of the labels under Cat(rho), rho ~ Dir(alpha)."""
    counts, total = np.zeros(k), 0.0
    for i, label in enumerate(labels):
        total += np.log((counts[label] + alpha) / (i + k * alpha))
        counts[label] += 1
    return total


def test_log_prior_of_the_two_sided_model_is_the_polya_urn_mass():
    model = TwoSidedClustering(3, 2, alpha=0.6)
    labels_i, labels_j = np.array([0, 2, 2, 1, 2]), np.array([1, 1, 0, 1])
    want = _polya_urn(labels_i, 3, 0.6) + _polya_urn(labels_j, 2, 0.6)
    assert model.log_prior({"I": labels_i, "J": labels_j}) == pytest.approx(want, rel=1e-12)
    with pytest.raises(ValueError, match="I has shape"):
        model.log_prior({"I": np.eye(3)[labels_i], "J": labels_j})


def test_log_prior_of_the_mixtures_matches_scipy():
    rng = np.random.default_rng(1)
    theta = rng.beta(1.0, 1.0, (3, 2))
    w = rng.dirichlet(np.ones(3))
    model = BayesianMixture(3, alpha=1.5, component=BetaBernoulli(a=0.7, b=(2.0, 1.2)))
    want = stats.dirichlet.logpdf(w, np.full(3, 0.5))
    want += stats.beta.logpdf(theta, [0.7, 0.7], [2.0, 1.2]).sum()
    assert model.log_prior({"w": w, "theta": theta}) == pytest.approx(want, rel=1e-12)

    comp = NormalGamma(mu0=0.5, kappa0=2.0, a0=3.0, b0=1.5)
    mu, tau = rng.normal(size=(3, 2)), rng.gamma(2.0, size=(3, 2))
    dpm = DirichletProcessMixture(alpha=0.8, component=comp, n_components=3)
    v = np.array([0.3, 0.6])
    w = np.array([0.3, 0.7 * 0.6, 0.7 * 0.4])
    want = stats.beta.logpdf(v, 1.0, 0.8).sum()
    want += stats.gamma.logpdf(tau, 3.0, scale=1 / 1.5).sum()
    want += stats.norm.logpdf(mu, 0.5, 1 / np.sqrt(2.0 * tau)).sum()
    assert dpm.log_prior({"w": w, "mu": mu, "tau": tau}) == pytest.approx(want, rel=1e-12)
    np.testing.assert_allclose(dpm.pymc_values({"w": w, "mu": mu, "tau": tau})["v"], v)

    eta = np.array([0.5, 1.0, 2.0])
    theta = rng.dirichlet(np.ones(3), 2)
    model = BayesianMixture(2, alpha=1.0, component=DirichletMultinomial(eta=tuple(eta)))
    w = np.array([0.25, 0.75])
    want = stats.dirichlet.logpdf(w, [0.5, 0.5]) + sum(
        stats.dirichlet.logpdf(t, eta) for t in theta
    )
    assert model.log_prior({"w": w, "theta": theta}) == pytest.approx(want, rel=1e-12)
    with pytest.raises(ValueError, match="stick fractions v need all n_components=3"):
        dpm.log_prior({"w": w, "mu": mu[:2], "tau": tau[:2]})


def test_niw_log_prior_is_the_density_of_the_bartlett_variables():
    """Bartlett variables from (mu, cov) rebuild (mu, cov) by the PyMC declaration's formulas;
    the prior is their chi-square and normal densities."""
    comp = NormalInverseWishart(mu0=(0.5, -1.0, 0.0), kappa0=2.0, nu0=5.0, psi0=(1.0, 2.0, 0.5))
    model = BayesianMixture(2, alpha=2.0, component=comp)
    params = comp.sample_prior(np.random.default_rng(2), 2, 3)
    params["w"] = np.array([0.4, 0.6])
    values = model.pymc_values(params)
    c, z, e = values["bartlett_c"], values["bartlett_z"], values["mu_std"]
    chol_prec = np.linalg.cholesky(np.linalg.inv(np.diag([1.0, 2.0, 0.5])))
    a = np.zeros((2, 3, 3))
    a[:, np.arange(3), np.arange(3)] = np.sqrt(c)
    rows, cols = np.tril_indices(3, -1)
    a[:, rows, cols] = z
    b = chol_prec @ a
    np.testing.assert_allclose(np.linalg.inv(b @ np.swapaxes(b, 1, 2)), params["cov"], rtol=1e-9)
    shift = np.linalg.solve(np.swapaxes(b, 1, 2), e[..., None])[..., 0]
    mu = np.array([0.5, -1.0, 0.0]) + shift / np.sqrt(2.0)
    np.testing.assert_allclose(mu, params["mu"], rtol=1e-9, atol=1e-12)
    want = stats.chi2.logpdf(c, [5.0, 4.0, 3.0]).sum() + stats.norm.logpdf(z).sum()
    want += stats.norm.logpdf(e).sum() + stats.dirichlet.logpdf(params["w"], [1.0, 1.0])
    assert model.log_prior(params) == pytest.approx(want, rel=1e-10)


# ----------------------------------------------------------------------------- density
@pytest.mark.parametrize("name", sorted(ZOO))
def test_density_spot_check_passes_for_every_registered_family(name):
    family = ZOO[name]
    if "density" not in family.recipe().checks:
        pytest.skip(f"{name}: {family.recipe().not_applicable['density']}")
    model = family.model(**{size: 2 for size in family.sizes})
    result = density_level(family, family.recipe(), model, None, QUICK, np.random.default_rng(3))
    assert result.passed, result.checks[0].detail
    assert result.checks[0].level == "density"


@pytest.mark.parametrize(
    "component",
    [NormalGamma(), NormalInverseWishart(), DirichletMultinomial()],
    ids=lambda c: type(c).__name__,
)
def test_density_spot_check_passes_for_the_other_components(component):
    model = DirichletProcessMixture(alpha=0.8, component=component, n_components=4)
    data, _ = model.simulate(0, n_items=10, n_features=2)
    assert density_check(model, data, 4, n_points=3).passed


def test_density_spot_check_fails_for_a_prior_bug_in_the_pymc_declaration(monkeypatch):
    """theta's Dirichlet declared with eta instead of alpha."""
    model = AspectModel(2)
    data, _ = model.simulate(5, n_docs=6, n_words=8, doc_length=20)
    original = AspectModel.pymc_model

    def wrong(self, data, temperature=1.0):
        return original(dataclasses.replace(self, alpha=self.eta), data, temperature)

    monkeypatch.setattr(AspectModel, "pymc_model", wrong)
    check = density_check(model, data, 6).checks[0]
    assert not check.passed
    assert "prior" in check.detail and check.numbers["prior_max_abs_diff"] > 0.01


def test_density_spot_check_fails_for_a_likelihood_bug_in_the_pymc_declaration(monkeypatch):
    """The likelihood potential of the one-sided model counted twice (tempered at T = 1/2)."""
    model = OneSidedClustering(2)
    data, _ = model.simulate(5, n_docs=6, n_words=8, doc_length=20)
    original = OneSidedClustering.pymc_model
    monkeypatch.setattr(
        OneSidedClustering, "pymc_model", lambda self, data, temperature=1.0: original(
            self, data, 0.5 * temperature)
    )  # fmt: skip
    check = density_check(model, data, 7).checks[0]
    assert not check.passed
    assert check.numbers["prior_max_abs_diff"] < 1e-9
    assert check.numbers["likelihood_max_abs_diff"] > 1.0


def test_density_check_validates_its_options():
    model = AspectModel(2)
    data, _ = model.simulate(0, n_docs=3, n_words=4, doc_length=5)
    with pytest.raises(ValueError, match="n_points"):
        density_check(model, data, 0, n_points=1)
    with pytest.raises(ValueError, match="rtol"):
        density_check(model, data, 0, rtol=0.0)


# ----------------------------------------------------------------------------- optimality
EM_FAMILIES = {
    "aspect": (AspectModel(2), {"n_docs": 10, "n_words": 12, "doc_length": 60}),
    "one_sided": (OneSidedClustering(2), {"n_docs": 12, "n_words": 12, "doc_length": 30}),
    "product_space": (ProductSpaceMixture(2, 2), {"n_docs": 8, "n_words": 10, "n_tokens": 800}),
}


def _em(name, model, data, seed):
    return ZOO[name].methods["annealed_em"](
        model, data, betas=[1.0], tol=1e-10, max_iter=50_000, random_state=seed
    )


def _right_and_wrong(name):
    """EM at the model's priors, and EM at alpha + 1, eta + 1: the fixed point of an M-step that
    adds alpha and eta instead of alpha - 1 and eta - 1 (the issue's mutation)."""
    model, sizes = EM_FAMILIES[name]
    data, _ = model.simulate(8, **sizes)
    shifted = dataclasses.replace(model, alpha=model.alpha + 1, eta=model.eta + 1)
    return model, data, _em(name, model, data, 9), _em(name, shifted, data, 9)


@pytest.mark.parametrize("name", sorted(EM_FAMILIES))
def test_kkt_passes_at_em_and_fails_for_an_extra_pseudo_count(name):
    model, data, right, wrong = _right_and_wrong(name)
    good = kkt_check(model, data, right.params).checks[0]
    bad = kkt_check(model, data, wrong.params).checks[0]
    assert good.passed and good.level == "optimality", good.detail
    assert not bad.passed, bad.detail
    # a pseudo-count error of one shows as residuals of order one count
    assert bad.numbers["max_abs_gradient"] > 10 * KKT_TOL


def _find_map_separates(name):
    model, data, right, wrong = _right_and_wrong(name)
    good = find_map_check(model, data, right.params).checks[0]
    # 300 evaluations already gain nats from the wrong estimate (L-BFGS needs ~900 to converge)
    bad = find_map_check(model, data, wrong.params, maxeval=300).checks[0]
    assert good.passed and good.level == "optimality", good.detail
    assert not bad.passed and bad.numbers["log_posterior_gain"] > 0.1, bad.detail


def test_find_map_cannot_improve_em_but_improves_the_wrong_m_step():
    """The product-space mixture, whose old "EM inside the posterior" check preferred the wrong
    M-step."""
    _find_map_separates("product_space")


@pytest.mark.slow
@pytest.mark.parametrize("name", ["aspect", "one_sided"])
def test_find_map_separates_right_and_wrong_em_of_the_other_families(name):
    _find_map_separates(name)


def test_kkt_checks_the_sign_condition_on_the_boundary():
    """With alpha = eta = 1 the MAP may sit on the boundary, where the residual in PyMC's
    coordinates vanishes whatever the gradient: a document's topic weight pushed to 1e-12 at an
    interior optimum passes the residual test but fails the sign condition."""
    model = AspectModel(2, alpha=1.0, eta=1.0)
    data = CoOccurrence([[6, 0, 0, 5], [0, 7, 6, 0], [3, 3, 3, 3]])
    fit = _em("aspect", model, data, 0)
    good = kkt_check(model, data, fit.params).checks[0]
    assert good.passed, good.detail
    theta = fit.params["theta"].copy()
    theta[2] = [1.0 - 1e-12, 1e-12] if theta[2, 0] > 0.5 else [1e-12, 1.0 - 1e-12]
    bad = kkt_check(model, data, {**fit.params, "theta": theta}).checks[0]
    assert not bad.passed and bad.numbers["boundary_gain"] > KKT_TOL, bad.detail


def test_optimality_level_runs_em_or_the_mean_field_check():
    family = ZOO["one_sided"]
    result = optimality_level(
        family, family.recipe(), OneSidedClustering(2), None, QUICK, np.random.default_rng(10)
    )
    em_checks = [c for c in result.checks if "hard" not in c.name.split()]
    assert result.passed and [c.level for c in result.checks] == ["optimality"] * len(result.checks)
    assert len(em_checks) == 2 and len(result.checks) > 2  # the hard ACM's certificate follows
    family = ZOO["two_sided"]
    result = optimality_level(
        family, family.recipe(), TwoSidedClustering(2, 2), None, QUICK, np.random.default_rng(10)
    )
    em_checks = [c for c in result.checks if "hard" not in c.name.split()]
    assert result.passed and len(em_checks) == 1, result.verdict()
    assert "mean-field free energy" in em_checks[0].name
    assert "discrete" in result.skipped[0].detail
    result = optimality_level(
        ZOO["aspect"], ZOO["aspect"].recipe(), AspectModel(2, alpha=0.5), None, QUICK, 0
    )
    assert not result.checks and "priors >= 1" in result.skipped[0].detail


def test_mean_field_check_passes_at_the_fixed_point_and_fails_for_an_extra_pseudo_count():
    """Unbalanced clusters (4 + 2 rows, 3 + 2 columns): with balanced ones the MAP weights are
    uniform whatever the pseudo-count, and the mutation changes nothing."""
    counts = np.array(
        [
            [5, 4, 6, 0, 1],
            [4, 6, 5, 1, 0],
            [6, 5, 4, 0, 0],
            [5, 5, 5, 0, 1],
            [0, 1, 0, 7, 6],
            [1, 0, 0, 6, 7],
        ]
    )
    data = CoOccurrence(counts)
    model = TwoSidedClustering(2, 2)
    mean_field = ZOO["two_sided"].methods["mean_field"]
    options = {"betas": [1.0], "tol": 1e-10, "max_iter": 50_000, "random_state": 0}
    right = mean_field(model, data, **options)
    wrong = mean_field(dataclasses.replace(model, alpha=model.alpha + 1), data, **options)
    good = mean_field_check(model, data, right.params).checks[0]
    bad = mean_field_check(model, data, wrong.params).checks[0]
    assert good.passed and good.level == "optimality", good.detail
    assert not bad.passed and bad.numbers["max_abs_gradient"] > 2 * KKT_TOL, bad.detail


def test_mean_field_level_checks_several_shapes_and_catches_a_weight_pseudo_count():
    """Issue 25: one instance of nearly equal cluster masses hid a wrong weight pseudo-count; the
    level fits every instance of ``MEAN_FIELD_SHAPES`` (unequal Kx, Ky among them)."""
    from types import SimpleNamespace

    from latentzoo.inference.recipes import MEAN_FIELD_SHAPES

    family = ZOO["two_sided"]
    recipe = family.recipe()
    model = TwoSidedClustering(2, 2)
    result = optimality_level(family, recipe, model, None, QUICK, np.random.default_rng(3))
    assert result.passed, result.verdict()
    assert len(result.checks[0].numbers["residuals"]) == len(MEAN_FIELD_SHAPES)
    assert "K=2x3" in result.problem and "K=3x2" in result.problem

    def extra_pseudo_count(model, data, **options):
        wrong = dataclasses.replace(model, alpha=model.alpha + 1)
        return family.methods["annealed_em"](wrong, data, **options)

    mutated = SimpleNamespace(methods={**family.methods, "annealed_em": extra_pseudo_count})
    result = optimality_level(mutated, recipe, model, None, QUICK, np.random.default_rng(3))
    assert not result.passed, result.verdict()


def test_prior_draw_gives_the_truncated_sticks_of_the_dpm():
    model = DirichletProcessMixture(alpha=1.5, n_components=5)
    data, _ = model.simulate(0, n_items=6, n_features=3)
    draw = prior_draw(model, data, np.random.default_rng(0))
    assert draw["v"].shape == (4,) and draw["theta"].shape == (5, 3)
    assert draw["w"].sum() == pytest.approx(1.0)
