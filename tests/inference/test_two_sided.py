"""Tests of the symmetric clustering model's fast inference: hard SCM, mean-field annealed EM and the
collapsed Gibbs sampler.

EM: monotonicity every iteration, the mean-field step against a dense implementation of the free
energy (with the Lagrange term kept, not assumed constant), the hard limit. Gibbs: the exact posterior
over all 64 states of a 3 x 3 problem (chi-square of independent chains, posterior means), SBC, and
agreement with PyMC's CategoricalGibbsMetropolis on co-assignments; each with a negative control.
"""

import logging

import arviz as az
import numpy as np
import pytest
from scipy import stats
from scipy.special import logsumexp, xlogy

from latentzoo.data import CoOccurrence, load
from latentzoo.inference.annealing import perplexity
from latentzoo.inference.compare import (
    agreement,
    enumerate_assignments,
    exact_test,
    heldout_lppd,
    sbc,
)
from latentzoo.inference.mcmc import add_invariants
from latentzoo.inference.two_sided import (
    MeanFieldSCM,
    TwoSidedGibbs,
    gibbs,
    hard_scm,
    initial_partition,
    mean_field,
)
from latentzoo.models.two_sided import TwoSidedClustering
from tests.helpers import random_counts, sbc_gibbs

SEEDS = [0, 1, 2]


def random_data(seed, n_rows=12, n_cols=15):
    rng = np.random.default_rng(seed)
    counts = random_counts(rng, n_rows, n_cols, zero_rows=[3], zero_cols=[6], rate=1.0)
    return CoOccurrence(counts), counts


# ------------------------------------------------------------------------------ hard SCM
@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("init", ["random", "kmeans", "acm"])
def test_hard_scm_never_lowers_the_likelihood(seed, init):
    data, _ = random_data(seed, 30, 40)
    model = TwoSidedClustering(4, 3)
    result = hard_scm(model, data, max_iter=50, random_state=seed, init=init)
    loglik = result.trace["log_likelihood"].to_numpy()
    assert len(loglik) >= 2
    assert np.all(np.diff(loglik) >= -1e-9 * np.abs(loglik[:-1])), np.diff(loglik)
    np.testing.assert_allclose(result.trace["free_energy"], -loglik)
    assert result.converged
    # the final estimate is the point estimate of its partition: L MI + offset
    labels_i, labels_j = result.params["I"].argmax(1), result.params["J"].argmax(1)
    final = model.log_likelihood(result.params, data).sum()
    mi = model.mutual_information(labels_i, labels_j, data)
    assert final == pytest.approx(data.total * mi + model.log_likelihood_offset(data), rel=1e-12)
    assert final >= loglik[-1] - 1e-9 * abs(final)
    assert result.method == "hard_scm"


def test_hard_scm_recovers_separated_partitions():
    model = TwoSidedClustering(3, 3)
    data, truth = model.simulate(0, n_rows=15, n_cols=15, n_tokens=3000, separated=True)
    result = hard_scm(model, data, random_state=0)
    got_i, got_j = result.params["I"].argmax(1), result.params["J"].argmax(1)
    assert stats.contingency.crosstab(got_i, truth["I"]).count.astype(bool).sum() == 3
    assert stats.contingency.crosstab(got_j, truth["J"]).count.astype(bool).sum() == 3


# ----------------------------------------------------------------------------- mean field
@pytest.mark.parametrize("seed", SEEDS + [3, 4])
@pytest.mark.parametrize("beta", [1.0, 0.5])
@pytest.mark.parametrize("init", ["random", "kmeans"])
def test_mean_field_free_energy_never_increases(seed, beta, init):
    data, _ = random_data(seed)
    model = TwoSidedClustering(3, 4, alpha=1.2)
    result = mean_field(model, data, betas=[beta], max_iter=60, tol=0, random_state=seed, init=init)
    free = result.trace["free_energy"].to_numpy()
    assert len(free) == 60
    assert np.all(np.diff(free) <= 1e-10 * np.abs(free[:-1])), np.diff(free).max()
    assert np.all(np.isfinite(result.trace["log_likelihood"]))
    for name in ("I", "J"):
        np.testing.assert_allclose(result.params[name].sum(axis=1), 1.0, rtol=1e-12)


def test_mean_field_free_energy_never_increases_through_a_schedule():
    data, _ = random_data(7, 20, 25)
    model = TwoSidedClustering(3, 3, alpha=1.0)
    result = mean_field(model, data, betas=[0.3, 0.6, 1.0, 3.0], max_iter=25, tol=0,
                        random_state=0, init="random")  # fmt: skip
    for _, stage in result.trace.groupby("beta"):
        free = stage["free_energy"].to_numpy()
        assert np.all(np.diff(free) <= 1e-10 * np.abs(free[:-1]))


def dense_free_energy(counts, soft_i, soft_j, c, rho_x, rho_y, beta, alpha):
    """F of the module docstring with the Lagrange (Poisson) term computed, not assumed to vanish."""
    n_i, m_j = counts.sum(1), counts.sum(0)
    total = counts.sum()
    p, q = n_i / total, m_j / total
    with np.errstate(divide="ignore"):
        log_c = np.where(c > 0, np.log(np.where(c > 0, c, 1)), -np.inf)
    expected_log_c = soft_i @ np.where(np.isfinite(log_c), log_c, 0.0) @ soft_j.T
    mask = counts > 0
    energy = -np.sum(counts[mask] * (np.log(np.outer(p, q)[mask]) + expected_log_c[mask]))
    rate = total * np.sum(np.outer(p, q) * (soft_i @ c @ soft_j.T))
    energy += rate - total
    kl = np.sum(xlogy(soft_i, soft_i)) - np.sum(xlogy(soft_i.sum(0), rho_x))
    kl += np.sum(xlogy(soft_j, soft_j)) - np.sum(xlogy(soft_j.sum(0), rho_y))
    prior = (alpha - 1) * (np.log(rho_x).sum() + np.log(rho_y).sum())
    return energy + (kl - prior) / beta


def dense_update(counts, own, other, c, rho, beta, weights_own, weights_other):
    """Exact minimiser of the dense F over one side's posteriors (penalty term kept explicitly)."""
    total = counts.sum()
    log_c = np.log(np.where(c > 0, c, 1e-300))
    gain = counts @ other @ log_c.T  # sum_j n_ij sum_mu <J> log c
    penalty = total * np.outer(weights_own, (weights_other @ other) @ c.T)
    logits = np.log(rho)[None, :] + beta * (gain - penalty)
    return np.exp(logits - logsumexp(logits, axis=1, keepdims=True))


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("beta", [1.0, 0.4])
def test_mean_field_step_matches_a_dense_reference(seed, beta):
    data, counts = random_data(seed)
    rng = np.random.default_rng(seed)
    model = TwoSidedClustering(3, 2, alpha=1.3)
    problem = MeanFieldSCM(model, data, track_loglik=True)
    soft_i = rng.dirichlet(np.ones(3), data.n_rows)
    soft_j = rng.dirichlet(np.ones(2), data.n_cols)
    params = model.estimate(soft_i, soft_j, data)
    new, stats_ = problem.step(params, beta)
    n_i, m_j, total = counts.sum(1), counts.sum(0), counts.sum()
    p, q = n_i / total, m_j / total
    c0 = model.estimate(soft_i, soft_j, data)["c"]
    want_f = dense_free_energy(counts, soft_i, soft_j, c0, params["rho_x"], params["rho_y"],
                               beta, model.alpha)  # fmt: skip
    assert stats_.free_energy == pytest.approx(want_f, rel=1e-12)
    want_ll = model.log_likelihood(params, data).sum()
    assert stats_.log_likelihood == pytest.approx(want_ll, rel=1e-12)
    # <I>, (c, rho_x), <J>, (c, rho_y) with the dense penalty
    new_i = dense_update(counts, soft_i, soft_j, c0, params["rho_x"], beta, p, q)
    np.testing.assert_allclose(new["I"], new_i, rtol=1e-9, atol=1e-12)
    mid = model.estimate(new_i, soft_j, data)
    new_j = dense_update(counts.T, soft_j, new_i, mid["c"].T, params["rho_y"], beta, q, p)
    np.testing.assert_allclose(new["J"], new_j, rtol=1e-9, atol=1e-12)
    final = model.estimate(new_i, new_j, data)
    for name in ("c", "pi", "rho_y"):
        np.testing.assert_allclose(new[name], final[name], rtol=1e-9, atol=1e-14)
    np.testing.assert_allclose(new["rho_x"], mid["rho_x"], rtol=1e-12)
    # each block update is the exact minimiser: random perturbations of <I> raise F
    base = dense_free_energy(counts, new_i, soft_j, c0, mid["rho_x"] * 0 + params["rho_x"],
                             params["rho_y"], beta, model.alpha)  # fmt: skip
    for _ in range(5):
        other = 0.9 * new_i + 0.1 * rng.dirichlet(np.ones(3), data.n_rows)
        moved = dense_free_energy(counts, other, soft_j, c0, params["rho_x"], params["rho_y"],
                                  beta, model.alpha)  # fmt: skip
        assert moved > base


def test_mean_field_at_large_beta_reproduces_hard_scm_from_the_same_start():
    model = TwoSidedClustering(3, 3, alpha=1.0)
    data, _ = model.simulate(2, n_rows=18, n_cols=21, n_tokens=1500, separated=True,
                             separation=0.6)  # fmt: skip
    # a deliberately poor start: the truth with a third of the labels scrambled
    rng = np.random.default_rng(0)
    soft_i, soft_j = initial_partition(model, data, rng, init="random")
    start = {"I": soft_i.argmax(1), "J": soft_j.argmax(1)}
    hard = hard_scm(model, data, max_iter=100, random_state=0, init=start)
    soft = mean_field(model, data, betas=[200.0], max_iter=100, tol=1e-12, random_state=0,
                      init=start)  # fmt: skip
    assert hard.converged and soft.converged
    assert np.array_equal(soft.params["I"].argmax(1), hard.params["I"].argmax(1))
    assert np.array_equal(soft.params["J"].argmax(1), hard.params["J"].argmax(1))
    assert soft.params["I"].max(1).min() > 1 - 1e-8  # posteriors in the hard limit
    np.testing.assert_allclose(soft.params["c"], hard.params["c"], rtol=1e-8)
    assert len(hard.trace) > 2  # the start was not already a fixed point


def test_mean_field_tempered_schedule_and_result_methods():
    model = TwoSidedClustering(2, 3)
    data, _ = model.simulate(1, n_rows=20, n_cols=30, n_tokens=2000, separated=True)
    train, test = data.split(0.2, random_state=0)
    result = mean_field(model, train, betas="auto", max_iter=30, random_state=0)
    assert result.betas[0] == 1.0 and result.selection_trace is not None
    assert "validation_perplexity" in result.selection_trace
    held = result.perplexity(test)
    assert np.isfinite(held) and 1 < held < train.n_cols
    assert held == pytest.approx(perplexity(model, result.params, test))
    idata = result.to_inference_data()
    assert idata.point_estimate["I"].shape == (20, 2)
    early = mean_field(model, train, betas="early_stopping", max_iter=30, random_state=0)
    assert early.betas == [1.0]


def test_mean_field_and_hard_scm_are_reproducible():
    data, _ = random_data(3, 25, 30)
    model = TwoSidedClustering(3, 3)
    for fit in (
        lambda seed: mean_field(model, data, betas=[1.0], max_iter=20, random_state=seed),
        lambda seed: hard_scm(model, data, max_iter=20, random_state=seed, init="kmeans"),
    ):
        a, b = fit(5), fit(5)
        for name in a.params:
            assert np.array_equal(a.params[name], b.params[name]), name
        assert np.array_equal(a.trace["free_energy"], b.trace["free_energy"])


def test_initial_partitions():
    model = TwoSidedClustering(2, 3)
    data = load("toy")
    rng = np.random.default_rng(0)
    for init in ("acm", "kmeans", "random"):
        soft_i, soft_j = initial_partition(model, data, rng, init)
        assert soft_i.shape == (6, 2) and soft_j.shape == (8, 3)
        np.testing.assert_allclose(soft_i.sum(1), 1.0)
    labels_i, _ = initial_partition(model, data, rng, "acm", hard=True)
    assert set(np.unique(labels_i)) <= {0.0, 1.0}
    # the toy corpus: sport rows and politics rows
    labels = initial_partition(model, data, rng, "kmeans")[0].argmax(1)
    assert len(set(labels[:3])) == len(set(labels[3:])) == 1 and labels[0] != labels[3]
    given = initial_partition(
        model, data, rng, {"I": [0, 0, 0, 1, 1, 1], "J": [0, 1, 2] * 2 + [0, 1]}
    )
    assert given[1].argmax(1).tolist() == [0, 1, 2, 0, 1, 2, 0, 1]


@pytest.mark.parametrize(
    "call, match",
    [
        (lambda m, d: mean_field(m, d, betas="hot"), "betas must be 'auto', 'early_stopping'"),
        (lambda m, d: mean_field(m, d, betas=[1.0, -1.0]), r"betas\[1\] = -1.0 must be a positive"),
        (lambda m, d: mean_field(m, d, max_iter=0), "max_iter must be an integer >= 1"),
        (lambda m, d: mean_field(m, d, tol=-1.0), r"tol must be a number in \[0, inf\)"),
        (lambda m, d: mean_field(m, d, init="spectral"), "init must be one of"),
        (lambda m, d: mean_field(m, d, init={"J": [0] * 8}), "needs the row assignments 'I'"),
        (lambda m, d: mean_field(m, d, overrelax=1.5), "supports plain EM only"),
        (lambda m, d: mean_field(m, d, predictive=True), "supports plain EM only"),
        (lambda m, d: hard_scm(m, d, max_iter=-2), "max_iter must be an integer >= 1"),
        (lambda m, d: hard_scm(m, d, init={"I": [0] * 5}), r"init\['I'\] has shape \(5,\)"),
        (lambda m, d: gibbs(m, d, chains=0, progressbar=False), "chains must be an integer >= 1"),
        (
            lambda m, d: gibbs(m, d, test=CoOccurrence([[1, 2]]), progressbar=False),
            "test has shape",
        ),
    ],
)
def test_bad_arguments_raise_with_a_message(call, match):
    with pytest.raises(ValueError, match=match):
        call(TwoSidedClustering(2, 2), load("toy"))


@pytest.mark.parametrize("fit", [mean_field, hard_scm, gibbs])
def test_bad_data_and_sizes_raise_with_a_message(fit):
    with pytest.raises(ValueError, match="larger than the data supports: only 6 rows"):
        fit(TwoSidedClustering(7, 2), load("toy"))
    with pytest.raises(ValueError, match="larger than the data supports: only 8 columns"):
        fit(TwoSidedClustering(2, 9), load("toy"))
    with pytest.raises(ValueError, match="NaN"):
        fit(TwoSidedClustering(1, 1), np.array([[1.0, np.nan]]))
    with pytest.raises(ValueError, match="negative"):
        fit(TwoSidedClustering(1, 1), np.array([[1, -3]]))


def test_mean_field_rejects_sparse_cluster_priors():
    with pytest.raises(ValueError, match="needs alpha >= 1"):
        mean_field(TwoSidedClustering(2, 2, alpha=0.5), load("toy"))


# ------------------------------------------------------------------------ exact enumeration
TINY = [[3, 0, 1], [0, 2, 1], [1, 0, 2]]
TINY_MODEL = {"alpha": 0.8, "eta": 0.7}


def enumerated(model, data):
    states = enumerate_assignments(data.n_rows + data.n_cols, 2)
    log_probs = model.collapsed_log_joint(states[:, : data.n_rows], states[:, data.n_rows :], data)
    return states, log_probs


@pytest.mark.parametrize("seed", SEEDS)
def test_gibbs_state_frequencies_match_the_enumerated_posterior(seed):
    """All 2^3 * 2^3 = 64 states of (I, J); chi-square at level 1e-5 (measured p ~ 0.1-0.9)."""
    model = TwoSidedClustering(2, 2, **TINY_MODEL)
    data = CoOccurrence(TINY)
    _, log_probs = enumerated(model, data)
    draws = TwoSidedGibbs(model, data).exact_draws(20_000, 30, seed)
    assert draws.shape == (20_000, 6)
    check = exact_test(log_probs, draws, n_labels=2, alpha=1e-5)
    assert check.passed, check.detail


@pytest.mark.parametrize("wrong", [{"eta": 2.0}, {"alpha": 3.0}])
def test_exact_test_rejects_a_sampler_of_the_wrong_posterior(wrong):
    """Negative control: chains of a model with other priors fail (measured p ~ 1e-279, 0)."""
    model = TwoSidedClustering(2, 2, **TINY_MODEL)
    data = CoOccurrence(TINY)
    _, log_probs = enumerated(model, data)
    other = TwoSidedGibbs(TwoSidedClustering(2, 2, **{**TINY_MODEL, **wrong}), data)
    check = exact_test(log_probs, other.exact_draws(20_000, 30, 0), n_labels=2, alpha=1e-5)
    assert not check.passed, check.detail


def exact_invariant_means(model, data):
    states, log_probs = enumerated(model, data)
    weights = np.exp(log_probs - logsumexp(log_probs))
    values = [model.invariants({"I": s[:3], "J": s[3:]}, data) for s in states]
    return {
        name: sum(w * v[name] for w, v in zip(weights, values, strict=True)) for name in values[0]
    }


def z_scores(idata, means):
    """|posterior mean - exact value| / MCSE for every component of the invariants."""
    out = []
    for name, value in means.items():
        draws = idata.posterior[name].to_numpy()
        draws = draws.reshape(draws.shape[:2] + (-1,))
        for index, target in enumerate(np.atleast_1d(value)):
            x = draws[:, :, index]
            se = float(np.asarray(az.mcse(x, method="mean")).reshape(-1)[0])
            out.append(abs(x.mean() - target) / se)
    return np.array(out)


@pytest.mark.parametrize("seed", SEEDS)
def test_gibbs_posterior_means_match_exact_expectations(seed):
    """Co-assignments, p_dyad and loglik (drawn parameters) within Bonferroni z * MCSE of the exact
    posterior expectations (Rao-Blackwellised invariants averaged over all 64 states)."""
    model = TwoSidedClustering(2, 2, **TINY_MODEL)
    data = CoOccurrence(TINY)
    want = exact_invariant_means(model, data)
    idata = gibbs(model, data, chains=4, draws=1500, tune=50, random_state=seed, progressbar=False)
    z = z_scores(idata, want)
    z_max = stats.norm.ppf(1 - 1e-5 / (2 * len(z)))  # family-wise level 1e-5
    assert z.max() < z_max, z
    # negative control: the expectations under another eta are caught
    other = exact_invariant_means(TwoSidedClustering(2, 2, alpha=0.8, eta=3.0), data)
    assert z_scores(idata, other).max() > z_max


# ------------------------------------------------------------------------------- Gibbs output
@pytest.fixture(scope="module")
def toy_idata():
    return gibbs(TwoSidedClustering(2, 3), load("toy"), chains=2, draws=30, tune=10,
                 random_state=3, progressbar=False)  # fmt: skip


def test_gibbs_inference_data_layout(toy_idata):
    data = load("toy")
    post = toy_idata.posterior
    assert post["I"].dims == ("chain", "draw", "row") and post["J"].dims == ("chain", "draw", "col")
    assert post["pi"].dims == ("chain", "draw", "row_cluster", "col_cluster")
    assert post["coassign_rows"].shape == (2, 30, 15)
    assert post["coassign_cols"].shape == (2, 30, 28)
    assert post["p_dyad"].dims == ("chain", "draw", "dyad")
    assert toy_idata.log_likelihood["counts"].dims == ("chain", "draw", "row")
    assert toy_idata.sample_stats["lp"].dims == ("chain", "draw")
    assert np.array_equal(toy_idata.observed_data["counts"].values, data.toarray())
    assert post.attrs["method"] == "gibbs"
    np.testing.assert_allclose(post["pi"].sum(("row_cluster", "col_cluster")), 1.0)


def test_gibbs_derived_quantities_are_consistent(toy_idata):
    data = load("toy")
    model = TwoSidedClustering(2, 3)
    post = toy_idata.posterior
    names = ("I", "J", "pi", "psi_x", "psi_y")
    for c, d in [(0, 0), (1, 17), (1, 29)]:
        params = {name: post[name].values[c, d] for name in names}
        inv = model.invariants(params, data)
        for name in model.invariant_names:
            np.testing.assert_allclose(post[name].values[c, d], inv[name], rtol=1e-12)
        np.testing.assert_allclose(
            toy_idata.log_likelihood["counts"].values[c, d], model.log_likelihood(params, data)
        )
        lp = model.collapsed_log_joint(params["I"], params["J"], data)[0]
        assert toy_idata.sample_stats["lp"].values[c, d] == pytest.approx(lp, rel=1e-12)


def test_gibbs_is_reproducible_and_takes_starts():
    model, data = TwoSidedClustering(2, 2), load("toy")

    def run(seed, **kwargs):
        options = {"chains": 2, "draws": 10, "tune": 5, **kwargs}
        return gibbs(model, data, random_state=seed, progressbar=False, **options)

    a, b, c = run(11), run(11), run(12)
    for name in ("I", "J", "pi", "loglik", "coassign_cols"):
        assert np.array_equal(a.posterior[name].values, b.posterior[name].values)
    assert not np.array_equal(a.posterior["pi"].values, c.posterior["pi"].values)
    starts = [([0] * 6, [0] * 8), ([0, 0, 0, 1, 1, 1], [0, 1] * 4), ([1] * 6, [1] * 8)]
    d = run(1, initial_assignments=starts, tune=0)
    assert d.posterior.sizes["chain"] == 3
    assert not run(1, keep_params=False).posterior.get("pi")


def test_gibbs_scores_held_out_counts():
    model = TwoSidedClustering(2, 2)
    train, test = load("toy").split(0.3, random_state=0)
    idata = gibbs(model, train, chains=1, draws=5, tune=5, random_state=0, progressbar=False,
                  test=test)  # fmt: skip
    params = {n: idata.posterior[n].values[0, 3] for n in ("I", "J", "pi", "psi_x", "psi_y")}
    np.testing.assert_allclose(
        idata.log_likelihood["counts"].values[0, 3], model.log_likelihood(params, test)
    )


# ------------------------------------------------------------------------------ calibration
class ContinuousInvariants:
    """The model with only its continuous invariants: co-assignments are 0/1 per draw, and the
    shared ``sbc`` ranks ties downward, so discrete statistics are not uniform even when calibrated."""

    def __init__(self, model):
        self.model = model
        self.param_names = model.param_names
        self.invariant_names = ("loglik", "p_dyad")

    def simulate(self, rng, **sizes):
        return self.model.simulate(rng, **sizes)

    def invariants(self, params, data, dyads=None):
        values = self.model.invariants(params, data, dyads)
        return {name: values[name] for name in self.invariant_names}


SBC_SIZES = {"n_rows": 4, "n_cols": 5, "n_tokens": 20}


def gibbs_sampler(model):
    return sbc_gibbs(gibbs, model, tune=50, thin=5)


@pytest.mark.parametrize("seed", [0])
def test_sbc_of_gibbs_is_uniform(seed):
    """Measured min p 0.06-0.34 over seeds 0-2 (need > 2.5e-5)."""
    model = TwoSidedClustering(2, 2, alpha=1.0, eta=1.0)
    result = sbc(ContinuousInvariants(model), gibbs_sampler(model), 100, random_state=seed,
                 alpha=1e-4, **SBC_SIZES)  # fmt: skip
    assert result.check.passed, result.check.detail
    assert len(result.ranks) == 100


@pytest.mark.slow
@pytest.mark.parametrize("seed", [1, 2, 3])
def test_sbc_of_gibbs_is_uniform_more_seeds(seed):
    model = TwoSidedClustering(2, 3, alpha=1.1, eta=1.01)
    result = sbc(ContinuousInvariants(model), gibbs_sampler(model), 200, random_state=seed,
                 alpha=1e-4, **SBC_SIZES)  # fmt: skip
    assert result.check.passed, result.check.detail


def test_sbc_detects_a_sampler_with_the_wrong_prior():
    """Negative control: data from eta = 1, sampler assuming eta = 3 (measured min p ~ 1e-17)."""
    true = TwoSidedClustering(2, 2, alpha=1.0, eta=1.0)
    wrong = TwoSidedClustering(2, 2, alpha=1.0, eta=3.0)
    result = sbc(ContinuousInvariants(true), gibbs_sampler(wrong), 100, random_state=0,
                 alpha=1e-4, **SBC_SIZES)  # fmt: skip
    assert not result.check.passed, result.check.detail


# ---------------------------------------------------------------------------- PyMC reference
def pymc_reference(model, data, draws, seed):
    import pymc as pm

    logging.getLogger("pymc").setLevel(logging.ERROR)
    with model.pymc_model(data):
        idata = pm.sample(draws=draws, tune=100, chains=2, cores=1, random_seed=seed,
                          progressbar=False, compute_convergence_checks=False)  # fmt: skip
    return add_invariants(idata, model, data)


def test_pymc_discrete_sampler_agrees_with_gibbs_on_co_assignments():
    """2 chains x 300 draws of CategoricalGibbsMetropolis on the 3 x 3 problem (~5 s): the
    co-assignment matrix agrees with the Gibbs sampler within combined MCSE (family-wise 1e-3)."""
    model = TwoSidedClustering(2, 2, **TINY_MODEL)
    data = CoOccurrence(TINY)
    reference = pymc_reference(model, data, 300, seed=4)
    assert set(reference.posterior["I"].values.ravel()) <= {0, 1}
    fast = gibbs(model, data, chains=4, draws=1000, tune=50, random_state=4, progressbar=False)
    names = ["coassign_rows", "coassign_cols"]
    table = agreement(fast, reference, names)
    assert table["agree"].all(), table
    # held-out predictive density of both sides against the enumerated p(test_i | train)
    test = CoOccurrence([[1, 0, 0], [0, 1, 1], [0, 0, 1]])
    states, log_probs = enumerated(model, data)
    weights = log_probs - logsumexp(log_probs)
    per_state = np.array(
        [model.predictive_log_density({"I": s[:3], "J": s[3:]}, test, data) for s in states]
    )
    exact = logsumexp(weights[:, None] + per_state, axis=0)
    for idata in (fast, reference):  # measured within 0.012 nats per row
        assert np.abs(heldout_lppd(model, idata, test, data) - exact).max() < 0.06
    # negative control: a Gibbs sampler of another eta is caught
    wrong = gibbs(TwoSidedClustering(2, 2, alpha=0.8, eta=5.0), data, chains=4, draws=1000,
                  tune=50, random_state=4, progressbar=False)  # fmt: skip
    assert not agreement(wrong, reference, names)["agree"].all()


@pytest.mark.slow
@pytest.mark.parametrize("seed", [1, 2])
def test_pymc_agrees_with_gibbs_on_every_invariant(seed):
    """Longer PyMC runs: co-assignments, p_dyad and loglik (Rao-Blackwellised on the PyMC side)."""
    model = TwoSidedClustering(2, 2, **TINY_MODEL)
    data = CoOccurrence(TINY)
    reference = pymc_reference(model, data, 1500, seed=seed)
    fast = gibbs(model, data, chains=4, draws=2000, tune=50, random_state=seed, progressbar=False)
    table = agreement(fast, reference, list(model.invariant_names))
    assert table["agree"].all(), table
