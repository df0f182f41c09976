"""Algorithm 7.1 for the IOMM (Heller 2007, chapter 7) against exact answers on tiny problems."""

import dataclasses

import numpy as np
import pytest
from scipy import stats
from scipy.special import logit

from latentzoo.inference import iomm
from latentzoo.inference.enumeration import (
    frequency_test,
    lof_matrices,
    state_index,
)
from latentzoo.inference.mcmc import splitmix_seeds
from latentzoo.models.iomm import (
    OverlappingMixture,
    bernoulli_log_likelihood,
)

MAX_COLUMNS = iomm.EXACT_MAX_COLUMNS  # P(K+ > 12) under IBP(1) with 3 items is below 1e-6


@pytest.mark.parametrize("seed", [0, pytest.param(1, marks=pytest.mark.slow)])
def test_sampler_matches_exact_enumeration_of_left_ordered_Z(seed):
    """The decisive check: Gibbs with the IBP odds (7.12) and the new-cluster MH move together
    leave P(Z | X, theta) invariant. Three items, two features, every cluster at a fixed theta0;
    the frequencies of the left-ordered Z of independent chains against the exact class posterior
    (classes up to 12 columns), chi-square with pooled cells."""
    model = OverlappingMixture(alpha=1.0)
    X = np.array([[1.0, 1.0], [1.0, 0.0], [0.0, 0.0]])
    theta0 = np.array([0.85, 0.3])
    rng = np.random.default_rng(seed)
    check = iomm.exact_sampler_check(model, X, theta0, 3000, 15, rng, "exact")
    assert check.passed, check.detail


@pytest.mark.slow  # the default tier has the unthinned exact-enumeration test above
def test_sampler_U_frequencies_match_exact_with_thinned_chain_draws():
    """The invariant the thesis reports, U = Z Z^T, from the chain runner's kept draws (thinned
    so that they are close to independent) against its exact posterior."""
    model = OverlappingMixture(alpha=0.8)
    X = np.array([[1.0, 0.0, 1.0], [1.0, 1.0, 1.0], [0.0, 0.0, 1.0]])
    theta0 = np.array([0.7, 0.4, 0.9])
    space = lof_matrices(3, MAX_COLUMNS)
    log_post = iomm.exact_class_log_posterior(space, model.alpha, theta0, X)
    u_of_class = np.einsum("sik,sjk->sij", space.Z.astype(np.int64), space.Z.astype(np.int64))
    u_keys, u_index = np.unique(
        u_of_class.reshape(len(space.width), -1), axis=0, return_inverse=True
    )
    log_post_u = np.full(len(u_keys), -np.inf)
    np.logaddexp.at(log_post_u, u_index.ravel(), log_post)
    posterior, stats_, _ = iomm.sample(
        model, X, chains=2, draws=1500, tune=50, thin=8, fixed_theta=theta0, random_state=3,
        progressbar=False,
    )  # fmt: skip
    Z, widths = posterior["Z"], posterior["Z_shape"][..., 1]
    U = []
    for c in range(Z.shape[0]):
        for d in range(Z.shape[1]):
            z = Z[c, d, :, : widths[c, d]].astype(np.int64)
            U.append((z @ z.T).ravel())
    check = frequency_test(log_post_u, state_index(u_keys, np.array(U)))
    assert check.passed, check.detail
    assert np.all(stats_["theta_accept"] == 0.0)
    assert np.all((stats_["new_cluster_accept"] >= 0) & (stats_["new_cluster_accept"] <= 1))


def test_parameter_move_samples_the_beta_posterior():
    """MH with the Beta proposal (7.13) alone: one cluster that every item belongs to makes each
    x_id ~ Bernoulli(theta_d), so theta_d | X is Beta(a + s_d, b + N - s_d) exactly; the final
    states of independent chains pass a Kolmogorov-Smirnov test against it."""
    a, b, n_items = 2.0, 1.5, 12
    X = np.zeros((n_items, 3))
    X[:9, 0] = 1  # s = 9, 3, 0
    X[:3, 1] = 1
    Z = np.ones((n_items, 1), dtype=np.int8)
    rng = np.random.default_rng(7)
    finals = []
    for _ in range(1500):
        theta = rng.beta(a, b, size=(1, 3))
        logits = logit(theta)
        eta = Z.astype(float) @ logits
        stream = splitmix_seeds(rng, 1)
        for _ in range(40):
            proposals = rng.beta(10.0 * theta, 10.0 * (1 - theta))
            iomm._sweep_parameters(
                X, Z, logits, theta, eta, np.array([1]), proposals, 10.0, a, b, stream
            )
        finals.append(theta[0].copy())
        np.testing.assert_allclose(eta, Z @ logits, atol=1e-9)
    finals = np.array(finals)
    s = X.sum(axis=0)
    for d in range(3):
        result = stats.kstest(finals[:, d], stats.beta(a + s[d], b + n_items - s[d]).cdf)
        assert result.pvalue > 1e-3, (d, result)


def test_incremental_statistics_stay_exact_through_a_sweep():
    """After the assignment kernel (before compaction refreshes them) the summed natural
    parameters equal Z @ logits and the sizes equal the column sums: each flip updated them."""
    model = OverlappingMixture(alpha=2.0, a=0.7, b=0.7)
    data, _ = model.simulate(11, n_items=40, n_features=6)
    X = model.data_matrix(data)
    rng = np.random.default_rng(2)
    state = iomm.init(model, X, rng)
    for _ in range(5):
        state = iomm.advance(state, rng, model, X)[0]
        new_counts = rng.poisson(model.alpha / 40, size=40)
        new_theta = rng.beta(model.a, model.b, size=(int(new_counts.sum()), 6))
        state = iomm._with_capacity(state, int(state.n_columns[0]) + len(new_theta))
        iomm._sweep_assignments(
            X, state.Z, state.logits, state.theta, state.eta, state.counts, state.n_columns,
            new_counts, new_theta, state.rng_state, np.empty(6), np.ones(40, dtype=np.int8),
        )  # fmt: skip
        width = int(state.n_columns[0])
        np.testing.assert_allclose(state.eta, state.Z[:, :width] @ state.logits[:width], atol=1e-9)
        np.testing.assert_array_equal(state.counts[:width], state.Z[:, :width].sum(axis=0))
        assert not state.Z[:, width:].any()
        iomm._compact(state)


def test_sample_contract_and_reproducibility():
    model = OverlappingMixture(alpha=1.5)
    data, _ = model.simulate(0, n_items=15, n_features=5)
    run = lambda: iomm.sample(  # noqa: E731
        model, data, chains=2, draws=20, tune=10, random_state=5, progressbar=False
    )
    posterior, stats_, _ = run()
    again, _, _ = run()
    np.testing.assert_array_equal(posterior["Z"], again["Z"])
    assert set(stats_) == {"lp", "new_cluster_accept", "theta_accept", "n_clusters"}
    assert stats_["lp"].shape == (2, 20)
    widths = posterior["Z_shape"][..., 1]
    np.testing.assert_array_equal(widths, stats_["n_clusters"])
    # lp is the log joint of the kept state
    c, d = 1, 19
    Z = posterior["Z"][c, d, :, : widths[c, d]]
    theta = posterior["theta"][c, d, : widths[c, d]]
    expected = (
        model.ibp_log_prior({"Z": Z, "theta": theta})
        + bernoulli_log_likelihood(Z, theta, data.X).sum()
    )
    assert np.isclose(stats_["lp"][c, d], expected)
    finite = stats_["theta_accept"][np.isfinite(stats_["theta_accept"])]
    assert np.all((finite >= 0) & (finite <= 1))


def test_bad_input_refused():
    model = OverlappingMixture()
    with pytest.raises(ValueError, match=r"X\[1, 0\] = 2 is not binary"):
        iomm.sample(model, [[0, 1], [2, 0]], draws=1, tune=0, progressbar=False)
    with pytest.raises(ValueError, match="omega must be a positive"):
        iomm.sample(model, [[0, 1]], omega=0.0, draws=1, tune=0, progressbar=False)
    with pytest.raises(ValueError, match="fixed_theta must be 2 numbers in"):
        iomm.sample(model, [[0, 1]], fixed_theta=[0.5, 1.0], draws=1, tune=0, progressbar=False)


def test_mcmc_inference_data_groups_and_scores(tmp_path):
    import arviz as az

    model = OverlappingMixture(alpha=1.5)
    data, _ = model.simulate(2, n_items=10, n_features=6)
    idata = iomm.mcmc(model, data, chains=2, draws=8, tune=5, random_state=1, progressbar=False)
    assert {"posterior", "sample_stats", "log_likelihood", "observed_data"} <= set(idata.groups())
    assert idata.observed_data["x"].dims == ("item", "feature")
    Z = idata.posterior["Z"].values
    widths = idata.posterior["Z_shape"].values[..., 1]
    theta = idata.posterior["theta"].values
    c, d = 1, 7
    z, t = Z[c, d, :, : widths[c, d]], theta[c, d, : widths[c, d]]
    np.testing.assert_allclose(
        idata.log_likelihood["x"].values[c, d], bernoulli_log_likelihood(z, t, data.X), atol=1e-9
    )
    np.testing.assert_array_equal(idata.posterior["n_memberships"].values[c, d], z.sum(axis=1))
    U = iomm.shared_clusters(idata)
    assert U.shape == (10, 10) and np.allclose(U, U.T)
    np.testing.assert_allclose(
        np.diag(U), idata.posterior["n_memberships"].values.mean(axis=(0, 1))
    )
    path = tmp_path / "iomm.nc"
    idata.to_netcdf(path)
    again = az.from_netcdf(path)
    np.testing.assert_array_equal(again.posterior["Z"].values, Z)
    assert again.posterior.attrs["model"] == "OverlappingMixture"


# Slow tier: the default tier runs the sampler against exact enumeration of Z instead.
@pytest.mark.slow
@pytest.mark.parametrize("seed", [0, 1])
@pytest.mark.parametrize("distribution", ["bernoulli", "gaussian"])
def test_full_sampler_passes_gewekes_joint_distribution_test(seed, distribution):
    """Every move together (Gibbs with (7.12), new clusters with prior parameters, the Beta
    proposal (7.13) on theta; Gaussian clusters: the conjugate means and the precisions' MH):
    alternating one sweep of Algorithm 7.1 with a fresh X ~ p(X | Z, Theta), from a draw of the
    joint, leaves the prior invariant (Geweke 2004), so the left-ordered Z of independent chains
    follow the exact IBP class probabilities and a parameter follows its prior."""
    model = OverlappingMixture(alpha=1.2, a=1.5, b=0.8, distribution=distribution)
    for check in iomm.geweke_checks(model, 2000, 12, np.random.default_rng(seed)):
        assert check.passed, check.detail


def test_culinary_check_and_exact_level_of_the_recipe():
    from latentzoo.inference.validation import QUICK

    rng = np.random.default_rng(0)
    assert iomm.culinary_check(1.0, 3, 3000, rng).passed
    recipe = iomm.validation_recipe()
    assert set(recipe.checks) == {"exact", "density", "calibrated"}
    assert "reference" in recipe.not_applicable
    settings = dataclasses.replace(QUICK, exact_chains=600)
    result = recipe.checks["exact"](None, recipe, OverlappingMixture(), None, settings, rng)
    assert result.passed and len(result.checks) == 1 + len(iomm.EXACT_PROBLEMS)


def test_lof_key_refuses_a_matrix_wider_than_the_enumeration():
    with pytest.raises(ValueError, match="more than max_columns=1"):
        iomm.lof_key([[1, 1]], max_columns=1)


def test_flip_log_ratio_is_accurate_at_extreme_natural_parameters():
    """The one-logarithm form of the flip's likelihood ratio against logaddexp, where the
    probabilities round to 0 or 1 (|eta| up to 60, logits up to the 1e-12 edge's 27.6)."""
    eta = np.array([-60.0, -30.0, -3.0, 0.0, 2.5, 35.0, 60.0])
    logits_k = np.array([27.6, -27.6, 1.0, -0.5, 27.6, -27.6, -27.6])
    x = np.array([1.0, 0.0, 1.0, 0.0, 1.0, 1.0, 0.0])
    p, q = np.empty(7), np.empty(7)
    iomm._set_probabilities(eta, p, q)
    for sign in (1.0, -1.0):
        moved = eta + sign * logits_k
        expected = np.sum(x * moved - np.logaddexp(0, moved) - (x * eta - np.logaddexp(0, eta)))
        got = iomm._flip_log_ratio(x, p, q, logits_k, np.exp(-np.abs(logits_k)), sign)
        assert np.isclose(got, expected, rtol=1e-12, atol=1e-9)


def test_product_form_kernels_match_logaddexp_at_extreme_natural_parameters():
    """The item log density and the parameter move's per-member factor, which multiply bounded
    factors and take few logarithms, against logaddexp where probabilities round to 0 or 1 and
    over a long row (the running product is folded into logarithms before it leaves range)."""
    rng = np.random.default_rng(0)
    eta = np.concatenate([[-700.0, -60.0, -30.0, 0.0, 35.0, 60.0, 700.0], rng.normal(0, 30, 3000)])
    x = (rng.random(eta.size) < 0.5).astype(float)
    expected = np.sum(x * eta - np.logaddexp(0, eta))
    assert np.isclose(iomm._item_log_likelihood(x, eta), expected, rtol=1e-12)
    for step in (-55.0, -3.0, 0.0, 0.7, 55.0):
        got = [iomm._normaliser_factor(t, step, np.exp(-abs(step))) for t in eta[:7]]
        want = np.logaddexp(0, eta[:7] + step) - np.logaddexp(0, eta[:7]) - max(step, 0.0)
        np.testing.assert_allclose(np.log(got), want, rtol=1e-12, atol=1e-12)


def test_init_from_a_given_state():
    model = OverlappingMixture(alpha=2.0)
    data, truth = model.simulate(3, n_items=12, n_features=4)
    X = model.data_matrix(data)
    state = iomm.init(model, X, np.random.default_rng(0), initial=truth)
    start = iomm.draw(state)
    used = truth["Z"].any(axis=0)
    np.testing.assert_array_equal(start["Z"], truth["Z"][:, used])
    np.testing.assert_array_equal(start["theta"], truth["theta"][used])
    np.testing.assert_allclose(state.eta, truth["Z"] @ logit(truth["theta"]), atol=1e-12)
    with pytest.raises(ValueError, match="theta must have shape"):
        iomm.init(model, X, np.random.default_rng(0), initial={"Z": truth["Z"], "theta": [[0.5]]})


def test_kmeans_start_keeps_clusters_where_a_prior_start_loses_them():
    """High D: from the prior every cluster is lost; the data-driven start keeps the structure."""
    model = OverlappingMixture(alpha=2.0, a=0.5, b=0.5)
    data, truth = model.simulate(4, n_items=60, n_features=32)
    kept = {}
    for start in ("prior", "kmeans"):
        _, stats_, _ = iomm.sample(
            model, data, start=start, chains=1, draws=5, tune=15, random_state=0,
            progressbar=False,
        )  # fmt: skip
        kept[start] = stats_["n_clusters"][0, -1]
    assert kept["kmeans"] >= 2 and kept["kmeans"] > kept["prior"], kept
    X = model.data_matrix(data)
    start = iomm.kmeans_start(model, X, np.random.default_rng(0), n_clusters=5)
    assert np.all(start["Z"].sum(axis=1) == 1)
    assert np.all((start["theta"] > 0) & (start["theta"] < 1))


def test_bad_start_options_refused():
    model = OverlappingMixture()
    with pytest.raises(ValueError, match="start must be one of"):
        iomm.sample(model, [[0, 1]], start="random", draws=1, tune=0, progressbar=False)
    with pytest.raises(ValueError, match="start_clusters must be an integer >= 1"):
        iomm.sample(model, [[0, 1]], start_clusters=0, draws=1, tune=0, progressbar=False)


def test_clamped_rows_stay_fixed_and_the_others_are_sampled():
    model = OverlappingMixture(alpha=1.5, a=0.5, b=0.5)
    data, truth = model.simulate(5, n_items=30, n_features=12)
    clamped = np.zeros(30, dtype=bool)
    clamped[:10] = True
    initial = {"Z": truth["Z"].copy(), "theta": truth["theta"]}
    initial["Z"][10:] = 0
    posterior, stats_, _ = iomm.sample(
        model, data, initial=initial, clamped=clamped, chains=1, draws=30, tune=5,
        random_state=0, progressbar=False,
    )  # fmt: skip
    kept = truth["Z"][:10][:, truth["Z"][:10].any(axis=0)]  # columns of the clamped items
    width = kept.shape[1]
    Z = posterior["Z"][0]
    assert np.all(Z[:, :10, :width] == kept[None])
    assert np.all(Z[:, :10, width:] <= 0)  # no new cluster for a clamped item
    assert Z[:, 10:].max() == 1  # the free items joined clusters
    with pytest.raises(ValueError, match="clamped must be 30 booleans"):
        iomm.sample(model, data, initial=initial, clamped=[True], draws=1, progressbar=False)
    with pytest.raises(ValueError, match="clamped needs initial"):
        iomm.sample(model, data, clamped=clamped, draws=1, progressbar=False)


# --------------------------------------------------------------------- Gaussian clusters (7.5)
GAUSSIAN = OverlappingMixture(alpha=1.0, distribution="gaussian", base_precision=0.5, mu0=0.3)
GAUSSIAN_X = np.array([[0.9, -1.2], [1.1, 0.3], [-0.4, 0.2]])
GAUSSIAN_THETA0 = {"mu": np.array([1.0, -0.5]), "tau": np.array([2.0, 1.5])}


def test_gaussian_sampler_matches_exact_enumeration_of_left_ordered_Z():
    """Gibbs with the IBP odds and the new-cluster move over Gaussian clusters (their natural
    parameters added and removed by each flip) leave P(Z | X, mu0, tau0) invariant: three items
    of real data, every cluster at fixed (mu0, tau0), against the enumerated class posterior."""
    rng = np.random.default_rng(0)
    check = iomm.exact_sampler_check(GAUSSIAN, GAUSSIAN_X, GAUSSIAN_THETA0, 1000, 12, rng, "exact")
    assert check.passed, check.detail


def _one_cluster_log_posterior(model, x, mu_grid, tau_grid):
    """log p(mu, tau | x) up to a constant on a grid for one cluster every item belongs to."""
    from scipy import stats as st

    mu, tau = np.meshgrid(mu_grid, tau_grid, indexing="ij")
    precision = model.base_precision + tau
    mean = (model.base_precision * model.mu0 + tau * mu) / precision
    out = st.gamma(model.gamma_a, scale=1 / model.gamma_b).logpdf(tau)
    out += st.norm(model.mu0, 1 / np.sqrt(model.kappa0 * tau)).logpdf(mu)
    for value in x:
        out += st.norm(mean, 1 / np.sqrt(precision)).logpdf(value)
    return out


def test_gaussian_parameter_moves_sample_the_one_cluster_posterior():
    """The conjugate draw of mu and the log-normal MH on tau alone: one cluster every item
    belongs to; the final (mu, tau) of independent chains against the posterior's marginals
    computed on a grid (Kolmogorov-Smirnov)."""
    model = GAUSSIAN
    X = np.array([[0.8], [1.4], [0.3], [1.9], [1.1], [0.6]])
    n_items = X.shape[0]
    Z = np.ones((n_items, 1), dtype=np.int8)
    rng = np.random.default_rng(3)
    finals = []
    for _ in range(600):
        start = model.draw_cluster_parameters(rng, 1, 1)
        mu, tau = start["mu"], start["tau"]
        shift = model.base_precision * model.mu0 + Z @ (tau * mu)
        precision = model.base_precision + Z @ tau
        stream = splitmix_seeds(rng, 1)
        for _ in range(40):
            iomm._sweep_parameters_gaussian(
                X, Z, mu, tau, shift, precision, np.array([1]), rng.standard_normal((1, 1)),
                rng.standard_normal((1, 1)) / 2.0, model.mu0, model.kappa0, model.gamma_a,
                model.gamma_b, stream,
            )  # fmt: skip
        np.testing.assert_allclose(precision, model.base_precision + Z @ tau, atol=1e-9)
        np.testing.assert_allclose(shift, model.base_precision * model.mu0 + Z @ (tau * mu))
        finals.append((mu[0, 0], tau[0, 0]))
    finals = np.array(finals)
    mu_grid, tau_grid = np.linspace(-4, 5, 700), np.linspace(1e-3, 25, 900)
    log_post = _one_cluster_log_posterior(model, X[:, 0], mu_grid, tau_grid)
    weights = np.exp(log_post - log_post.max())
    for column, grid, marginal in ((0, mu_grid, weights.sum(1)), (1, tau_grid, weights.sum(0))):
        cdf = np.cumsum(marginal) / marginal.sum()
        result = stats.kstest(finals[:, column], lambda v, g=grid, c=cdf: np.interp(v, g, c))
        assert result.pvalue > 1e-3, (column, result)


def test_gaussian_sample_contract_lp_and_inference_data():
    data, _ = GAUSSIAN.simulate(1, n_items=12, n_features=2)
    posterior, stats_, _ = iomm.sample(
        GAUSSIAN, data, chains=2, draws=15, tune=5, random_state=2, progressbar=False
    )
    assert {"Z", "mu", "tau"} <= set(posterior) and "theta" not in posterior
    c, d = 1, 14
    width = posterior["Z_shape"][c, d, 1]
    params = {
        "Z": posterior["Z"][c, d, :, :width],
        "mu": posterior["mu"][c, d, :width],
        "tau": posterior["tau"][c, d, :width],
    }
    expected = GAUSSIAN.ibp_log_prior(params) + GAUSSIAN.log_likelihood(params, data).sum()
    assert np.isclose(stats_["lp"][c, d], expected)
    idata = iomm.mcmc(GAUSSIAN, data, chains=1, draws=4, tune=2, random_state=0, progressbar=False)
    assert idata.observed_data["x"].dtype == np.float64
    assert float(idata.posterior["tau"].min()) == -1.0 or bool((idata.posterior["tau"] > 0).all())
    with pytest.raises(ValueError, match="fixed_theta of Gaussian clusters must be"):
        iomm.sample(GAUSSIAN, data, fixed_theta=[0.5, 0.5], draws=1, progressbar=False)


@pytest.mark.slow
def test_gaussian_sampler_agrees_with_pymc_nuts_given_Z():
    """The parameter moves against the PyMC reference: Z fixed at the truth (every row clamped
    in the sampler, observed in PyMC's finite model), posterior means of mu and tau within
    five combined Monte Carlo standard errors."""
    import arviz as az
    import pymc as pm

    model = OverlappingMixture(alpha=1.5, distribution="gaussian", base_precision=0.2)
    data, truth = model.simulate(4, n_items=25, n_features=2)
    Z = truth["Z"]
    initial = {"Z": Z, "mu": truth["mu"], "tau": truth["tau"]}
    posterior, _, _ = iomm.sample(
        model, data, initial=initial, clamped=np.ones(25, dtype=bool), chains=2, draws=1500,
        tune=200, random_state=0, progressbar=False,
    )  # fmt: skip
    fast = {name: posterior[name][:, :, : Z.shape[1]] for name in ("mu", "tau")}
    with pm.observe(model.pymc_model(data, truncation=Z.shape[1]), {"Z": Z}):
        reference = pm.sample(
            1000,
            tune=500,
            chains=2,
            random_seed=1,
            progressbar=False,
            compute_convergence_checks=False,
        )
    for name in ("mu", "tau"):
        ours = az.convert_to_dataset({name: fast[name]})
        theirs = reference.posterior[name]
        gap = np.abs(
            ours[name].mean(("chain", "draw")).values - theirs.mean(("chain", "draw")).values
        )
        mcse = np.hypot(az.mcse(ours)[name].values, az.mcse(theirs.to_dataset())[name].values)
        assert np.all(gap < 5 * mcse + 1e-6), (name, gap, mcse)


def test_monte_carlo_p_value_holds_the_nominal_rate_on_the_ibp_classes():
    """The levels' chi-square on the IBP's classes of three items (many cells expect 5-10 of 2000
    draws) takes its p-value from multinomial samples of its null: exact draws from the IBP
    prior pass, a fifth of the mass moved onto the likeliest class fails, and the Monte
    Carlo p-value agrees with the asymptotic one where the latter is accurate (p near 0.5)."""
    from latentzoo.inference.enumeration import ibp_log_prior

    space = lof_matrices(3, MAX_COLUMNS)
    log_prior = ibp_log_prior(space, 1.0)
    probs = np.exp(log_prior - log_prior.max())
    probs /= probs.sum()
    rng = np.random.default_rng(0)
    exact = rng.choice(probs.size, 2000, p=probs)
    monte_carlo = frequency_test(log_prior, exact, null_draws=iomm.NULL_DRAWS, random_state=1)
    asymptotic = frequency_test(log_prior, exact)
    assert monte_carlo.passed, monte_carlo.detail
    assert abs(monte_carlo.numbers["p_value"] - asymptotic.numbers["p_value"]) < 0.05
    shifted = 0.8 * probs
    shifted[np.argmax(probs)] += 0.2
    moved = rng.choice(probs.size, 2000, p=shifted)
    assert not frequency_test(log_prior, moved, null_draws=2000, random_state=1).passed
