"""Tests of the product-space mixture model's declaration (Hofmann & Puzicha 1998, section 2.4).

Every likelihood is compared with an independent computation (explicit sums over the class pairs of
eq. (16), scipy densities, or the aspect model through the exact identities documented on the class),
never with itself.
"""

import numpy as np
import pytest
from scipy import stats
from scipy.special import gammaln

from latentzoo.data import CoOccurrence, load
from latentzoo.models import AspectModel
from latentzoo.models.invariants import default_dyads
from latentzoo.models.product_space import ProductSpaceMixture
from tests.helpers import (
    REFERENCE_COUNTS,
    bad_constructor_arguments,
    peak_bytes,
    pymc_reference,
    random_counts,
)

SEEDS = [0, 1, 2]


def random_params(rng, n_rows, n_cols, kx, ky):
    return {
        "pi": rng.dirichlet(np.ones(kx * ky)).reshape(kx, ky),
        "p_row": rng.dirichlet(np.ones(n_rows), size=kx),
        "q_col": rng.dirichlet(np.ones(n_cols), size=ky),
    }


def brute_force_joint(params):
    """``p_ij`` of eq. (16) as the explicit double sum over the class pairs."""
    pi, p_row, q_col = params["pi"], params["p_row"], params["q_col"]
    kx, ky = pi.shape
    joint = np.zeros((p_row.shape[1], q_col.shape[1]))
    for nu in range(kx):
        for mu in range(ky):
            joint += pi[nu, mu] * np.outer(p_row[nu], q_col[mu])
    return joint


# ----------------------------------------------------------------------------- construction
@pytest.mark.parametrize(
    "kwargs, match",
    [
        *bad_constructor_arguments("n_row_clusters"),
        ({"n_row_clusters": 2, "n_col_clusters": 0}, "n_col_clusters"),
        ({"n_row_clusters": 2, "n_col_clusters": 1.5}, "n_col_clusters"),
        ({"n_row_clusters": 2, "n_col_clusters": False}, "n_col_clusters"),
    ],
)
def test_constructor_rejects_invalid_arguments(kwargs, match):
    with pytest.raises(ValueError, match=match):
        ProductSpaceMixture(**kwargs)


def test_constructor_defaults():
    model = ProductSpaceMixture(np.int64(3))
    assert model.n_col_clusters == 3 and model.n_classes == 9
    assert (model.alpha, model.eta) == (1.1, 1.01)
    assert ProductSpaceMixture(2, 5).n_classes == 10
    assert model.name == "product_space"
    assert model.param_names == ("pi", "p_row", "q_col")
    assert model.invariant_names == ("loglik", "p_dyad")
    with pytest.raises(AttributeError):
        model.alpha = 2.0  # frozen


# ----------------------------------------------------------------------------- check_data
def test_check_data_converts_arrays():
    data = ProductSpaceMixture(2, 2).check_data([[1, 2, 0], [0, 0, 3]])
    assert isinstance(data, CoOccurrence) and data.shape == (2, 3)


@pytest.mark.parametrize(
    "kx, ky, counts, what",
    [
        (
            3,
            1,
            [[5, 5, 5], [1, 0, 0]],
            "n_row_clusters=3 is larger than the data supports: only 2 rows",
        ),
        (1, 4, [[5, 5, 5]], "n_col_clusters=4 is larger than the data supports: only 3 columns"),
        (2, 2, [[1, 0], [0, 2]], "4 classes is larger than the data supports: only 3 observations"),
    ],
)
def test_check_data_rejects_too_many_clusters(kx, ky, counts, what):
    with pytest.raises(ValueError, match=what):
        ProductSpaceMixture(kx, ky).check_data(counts)


def test_check_data_accepts_the_boundary():
    data = ProductSpaceMixture(2, 3).check_data([[1, 1, 1], [1, 1, 1]])
    assert data.total == 6


@pytest.mark.parametrize(
    "counts, match",
    [
        ([[1.0, np.nan]], r"counts\[0, 1\] is NaN"),
        ([[1, -2]], r"counts\[0, 1\] = -2 is negative"),
        ([[1.0, np.inf]], r"counts\[0, 1\] is inf"),
        ([[0, 0]], "no observations"),
        ([1, 2, 3], "2-D"),
        (np.zeros((0, 3)), "empty"),
    ],
)
def test_check_data_passes_on_data_errors(counts, match):
    with pytest.raises(ValueError, match=match):
        ProductSpaceMixture(1, 1).check_data(counts)


def test_check_params():
    model = ProductSpaceMixture(2, 3)
    data = CoOccurrence(np.ones((4, 5), dtype=int))
    params = random_params(np.random.default_rng(0), 4, 5, 2, 3)
    pi, p_row, q_col = model.check_params(params, data)
    assert pi.shape == (2, 3)
    flat = {**params, "pi": params["pi"].ravel()}
    np.testing.assert_array_equal(model.check_params(flat, data)[0], params["pi"])
    bad = [
        ({"pi": params["pi"].T}, "pi has shape"),
        ({"p_row": params["p_row"][:, :3]}, "p_row has shape"),
        ({"q_col": params["q_col"].T}, "q_col has shape"),
        ({"pi": params["pi"] * 2}, "pi must sum to one"),
        ({"p_row": params["p_row"] * 2}, "rows of p_row"),
        ({"q_col": np.where(params["q_col"] > 0, np.nan, 0)}, "q_col must be finite"),
    ]
    for change, match in bad:
        with pytest.raises(ValueError, match=match):
            model.check_params({**params, **change}, data)


# ----------------------------------------------------------------------------- likelihoods
@pytest.mark.parametrize("seed", SEEDS)
def test_log_likelihoods_match_dense_brute_force(seed):
    rng = np.random.default_rng(seed)
    n, m, kx, ky = 7, 9, 2, 3
    counts = random_counts(rng, n, m, zero_rows=[3], zero_cols=[4])
    data = CoOccurrence(counts)
    params = random_params(rng, n, m, kx, ky)
    model = ProductSpaceMixture(kx, ky)
    joint = brute_force_joint(params)
    assert joint.sum() == pytest.approx(1.0, rel=1e-12)
    conditional = joint / joint.sum(axis=1, keepdims=True)
    want = np.array(
        [
            sum(counts[i, j] * np.log(conditional[i, j]) for j in range(m) if counts[i, j])
            for i in range(n)
        ]
    )
    np.testing.assert_allclose(model.log_likelihood(params, data), want, rtol=1e-12)
    want_joint = np.array(
        [
            sum(counts[i, j] * np.log(joint[i, j]) for j in range(m) if counts[i, j])
            for i in range(n)
        ]
    )
    np.testing.assert_allclose(model.joint_log_likelihood(params, data), want_joint, rtol=1e-12)
    assert model.log_likelihood(params, data)[3] == 0.0
    # the gap is the row-marginal term sum_i n_i log p_i
    gap = model.joint_log_likelihood(params, data) - model.log_likelihood(params, data)
    np.testing.assert_allclose(gap, counts.sum(axis=1) * np.log(joint.sum(axis=1)), rtol=1e-10)
    # the flattened pi (as EM carries it) gives the same numbers
    flat = {**params, "pi": params["pi"].ravel()}
    np.testing.assert_array_equal(
        model.log_likelihood(flat, data), model.log_likelihood(params, data)
    )


@pytest.mark.parametrize("seed", SEEDS)
def test_conditional_rows_sum_to_one_and_predictive_agrees(seed):
    rng = np.random.default_rng(seed)
    model = ProductSpaceMixture(3, 2)
    params = random_params(rng, 6, 8, 3, 2)
    conditional = model.conditional(params)
    np.testing.assert_allclose(conditional.sum(axis=1), 1.0, rtol=1e-12)
    joint = brute_force_joint(params)
    np.testing.assert_allclose(conditional, joint / joint.sum(axis=1, keepdims=True), rtol=1e-12)
    dyads = np.array([[0, 0], [5, 7], [2, 3], [2, 3]])
    np.testing.assert_allclose(
        model.predictive(params, dyads), conditional[dyads[:, 0], dyads[:, 1]], rtol=1e-12
    )


def test_likelihood_of_a_row_with_zero_probability():
    model = ProductSpaceMixture(2, 1)
    data = CoOccurrence([[1, 2], [0, 0], [3, 0]])
    params = {
        "pi": np.array([[0.5], [0.5]]),
        "p_row": np.array([[1.0, 0.0, 0.0], [0.5, 0.5, 0.0]]),  # row 2 has p_i = 0
        "q_col": np.array([[0.25, 0.75]]),
    }
    ll = model.log_likelihood(params, data)
    assert ll[0] == pytest.approx(np.log(0.25) + 2 * np.log(0.75))
    assert ll[1] == 0.0  # no observations: unaffected by p_i
    assert ll[2] == -np.inf
    assert model.predictive(params, [[2, 0]])[0] == 0.0


def test_an_observed_cell_with_zero_probability_gives_minus_infinity():
    model = ProductSpaceMixture(1, 2)
    data = CoOccurrence([[1, 2, 0], [0, 1, 4]])
    params = {
        "pi": np.array([[0.5, 0.5]]),
        "p_row": np.array([[0.5, 0.5]]),
        "q_col": np.array([[1.0, 0.0, 0.0], [0.0, 0.5, 0.5]]),
    }
    for scores in (model.log_likelihood(params, data), model.joint_log_likelihood(params, data)):
        assert np.isfinite(scores).all()
    q_col = np.array([[1.0, 0.0, 0.0], [0.0, 1.0, 0.0]])  # column 2 is observed, has p = 0
    for scores in (
        model.log_likelihood({**params, "q_col": q_col}, data),
        model.joint_log_likelihood({**params, "q_col": q_col}, data),
    ):
        assert np.isfinite(scores[0]) and scores[1] == -np.inf


def test_likelihoods_form_no_nnz_by_ky_array():

    rng = np.random.default_rng(0)
    n, m, kx, ky = 3000, 60, 3, 40
    data = CoOccurrence(rng.poisson(1.0, size=(n, m)))
    params = random_params(rng, n, m, kx, ky)
    model = ProductSpaceMixture(kx, ky)
    for score in (model.log_likelihood, model.joint_log_likelihood):
        peak = peak_bytes(lambda score=score: score(params, data))
        # nnz x Ky float64 would be 30 MB; the N x Ky weights are 1 MB.
        assert data.nnz * ky * 8 > 25e6
        assert peak < 3e6


@pytest.mark.parametrize(
    "change, match",
    [
        ({"p_row": np.full((2, 4), 0.25)}, r"p_row has shape \(2, 4\), expected \(2, 3\)"),
        ({"q_col": np.full((3, 2), 0.5)}, r"q_col has shape \(3, 2\), expected \(3, 4\)"),
        ({"pi": np.full(5, 0.2)}, r"pi has shape \(5,\), expected \(2, 3\)"),
    ],
)
def test_likelihoods_reject_parameters_of_the_wrong_shape(change, match):
    rng = np.random.default_rng(0)
    params = {**random_params(rng, 3, 4, 2, 3), **change}
    data = CoOccurrence([[1, 0, 2, 0], [0, 3, 0, 1], [1, 1, 1, 1]])
    for score in (
        ProductSpaceMixture(2, 3).log_likelihood,
        ProductSpaceMixture(2, 3).joint_log_likelihood,
    ):
        with pytest.raises(ValueError, match=match):
            score(params, data)


def test_dense_conditional_is_guarded(monkeypatch):
    from latentzoo.data import checks

    monkeypatch.setattr(checks, "physical_memory", lambda: 2**30)
    rng = np.random.default_rng(0)
    params = random_params(rng, 20_000, 5_000, 2, 2)
    with pytest.raises(
        ValueError, match=r"ProductSpaceMixture\.conditional would allocate 2\.2 GiB "
    ):
        ProductSpaceMixture(2, 2).conditional(params)


# ----------------------------------------------------------------------------- aspect identities
@pytest.mark.parametrize("seed", SEEDS)
def test_conditional_is_an_aspect_model_with_ky_aspects(seed):
    rng = np.random.default_rng(seed)
    counts = random_counts(rng, 6, 9, zero_rows=[1])
    data = CoOccurrence(counts)
    model = ProductSpaceMixture(3, 4)
    params = random_params(rng, 6, 9, 3, 4)
    aspect = model.aspect_params(params)
    np.testing.assert_allclose(aspect["theta"].sum(axis=1), 1.0)
    np.testing.assert_allclose(
        AspectModel(4).log_likelihood(aspect, data), model.log_likelihood(params, data), rtol=1e-12
    )


@pytest.mark.parametrize("seed", SEEDS)
def test_identity_column_clusters_give_the_smm_with_kx_aspects(seed):
    """Ky = M and q_{j|mu} = [j == mu]: p_ij = sum_nu pi_nu p_{i|nu} q_{j|nu}, eq. (1)."""
    rng = np.random.default_rng(seed)
    n, m, kx = 6, 5, 3
    data = CoOccurrence(random_counts(rng, n, m, zero_rows=[2]))
    pi = rng.dirichlet(np.ones(kx * m)).reshape(kx, m)
    p_row = rng.dirichlet(np.ones(n), size=kx)
    params = {"pi": pi, "p_row": p_row, "q_col": np.eye(m)}
    mass = pi.sum(axis=1)  # pi_nu of the SMM
    smm_q = pi / mass[:, None]  # q_{j|nu}
    theta = mass[None, :] * p_row.T  # pi_nu p_{i|nu}, normalised below: p_{nu|i}, eq. (11)
    theta /= theta.sum(axis=1, keepdims=True)
    want = AspectModel(kx).log_likelihood({"theta": theta, "phi": smm_q}, data)
    got = ProductSpaceMixture(kx, m).log_likelihood(params, data)
    np.testing.assert_allclose(got, want, rtol=1e-12)


@pytest.mark.parametrize("seed", SEEDS)
def test_every_aspect_model_is_a_pmm_with_identity_row_clusters(seed):
    """Kx = N, p_{i|nu} = [i == nu], pi[i, k] = p_i theta[i, k] for any row distribution p_i."""
    rng = np.random.default_rng(seed)
    n, m, k = 5, 7, 3
    data = CoOccurrence(random_counts(rng, n, m))
    theta = rng.dirichlet(np.ones(k), size=n)
    phi = rng.dirichlet(np.ones(m), size=k)
    p_i = rng.dirichlet(np.ones(n))
    params = {"pi": p_i[:, None] * theta, "p_row": np.eye(n), "q_col": phi}
    want = AspectModel(k).log_likelihood({"theta": theta, "phi": phi}, data)
    np.testing.assert_allclose(
        ProductSpaceMixture(n, k).log_likelihood(params, data), want, rtol=1e-12
    )


# ----------------------------------------------------------------------------- prior, invariants
@pytest.mark.parametrize("alpha, eta", [(1.1, 1.01), (0.7, 2.5), (1.0, 1.0)])
def test_log_prior_matches_scipy_dirichlet(alpha, eta):
    rng = np.random.default_rng(0)
    params = random_params(rng, 4, 6, 2, 3)
    want = stats.dirichlet.logpdf(params["pi"].ravel(), np.full(6, alpha))
    want += sum(stats.dirichlet.logpdf(r, np.full(4, eta)) for r in params["p_row"])
    want += sum(stats.dirichlet.logpdf(r, np.full(6, eta)) for r in params["q_col"])
    got = ProductSpaceMixture(2, 3, alpha=alpha, eta=eta).log_prior(params)
    assert got == pytest.approx(want, rel=1e-10)


@pytest.mark.parametrize("seed", SEEDS)
def test_invariants_are_unchanged_by_permuting_clusters(seed):
    rng = np.random.default_rng(seed)
    model = ProductSpaceMixture(3, 4)
    data = CoOccurrence(random_counts(rng, 6, 9))
    params = random_params(rng, 6, 9, 3, 4)
    rows, cols = rng.permutation(3), rng.permutation(4)
    permuted = {
        "pi": params["pi"][np.ix_(rows, cols)],
        "p_row": params["p_row"][rows],
        "q_col": params["q_col"][cols],
    }
    before, after = model.invariants(params, data), model.invariants(permuted, data)
    assert sorted(before) == ["loglik", "p_dyad"]
    assert before["loglik"].shape == () and before["p_dyad"].shape == (8,)
    for key in before:
        np.testing.assert_allclose(after[key], before[key], rtol=1e-12)
    dyads = default_dyads(data)
    want = model.conditional(params)[dyads[:, 0], dyads[:, 1]]
    np.testing.assert_allclose(before["p_dyad"], want, rtol=1e-12)
    assert float(before["loglik"]) == pytest.approx(model.log_likelihood(params, data).sum())


# ----------------------------------------------------------------------------- simulator
@pytest.mark.parametrize("seed", SEEDS)
def test_simulate_is_reproducible(seed):
    model = ProductSpaceMixture(2, 3)
    a_data, a_truth = model.simulate(seed, n_docs=7, n_words=11, n_tokens=150)
    b_data, b_truth = model.simulate(
        np.random.default_rng(seed), n_docs=7, n_words=11, n_tokens=150
    )
    assert a_data == b_data
    for key in a_truth:
        np.testing.assert_array_equal(a_truth[key], b_truth[key])
    assert a_data.shape == (7, 11) and a_data.total == 150
    model.check_params(a_truth, a_data)
    assert model.simulate(seed + 10, n_docs=7, n_words=11, n_tokens=150)[0] != a_data
    assert model.simulate(0, n_docs=5, n_words=6)[0].total == 1000  # default 200 per row


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"n_docs": 2}, "n_docs=2 must be at least n_row_clusters=3"),
        ({"n_words": 1}, "n_words=1 must be at least n_col_clusters=2"),
        ({"n_tokens": 0}, "n_tokens"),
        ({"n_tokens": 2.5}, "n_tokens"),
        ({"separated": True, "separation": 1.0}, "separation"),
    ],
)
def test_simulate_rejects_bad_sizes(kwargs, match):
    with pytest.raises(ValueError, match=match):
        ProductSpaceMixture(3, 2).simulate(0, **{"n_docs": 6, "n_words": 8, **kwargs})


def test_simulated_counts_follow_the_joint_distribution():
    """Chi-square goodness of fit of the counts to p_ij (separated truth is deterministic)."""
    model = ProductSpaceMixture(2, 3)
    data, truth = model.simulate(4, n_docs=6, n_words=9, n_tokens=20_000, separated=True)
    expected = brute_force_joint(truth).ravel() * data.total
    observed = data.toarray().ravel()
    assert stats.chisquare(observed, expected).pvalue > 1e-3
    # negative control: the counts do not fit the independence (unigram) model
    independent = np.outer(data.row_totals, data.col_totals).ravel() / data.total
    assert stats.chisquare(observed, independent, ddof=6 + 9 - 2).pvalue < 1e-6


def test_simulated_prior_draws_have_the_prior_mean():
    model = ProductSpaceMixture(2, 2, alpha=0.5, eta=2.0)
    draws = [model.simulate(seed, n_docs=3, n_words=4, n_tokens=5)[1] for seed in range(400)]
    pi = np.stack([d["pi"] for d in draws])
    # Dir(alpha) over 4 pairs: mean 1/4, variance (1/4)(3/4) / (4 alpha + 1)
    sd = np.sqrt(0.25 * 0.75 / 3.0 / len(draws))
    assert np.all(np.abs(pi.mean(axis=0) - 0.25) < 4 * sd)
    q = np.stack([d["q_col"] for d in draws])
    sd = np.sqrt(0.25 * 0.75 / 9.0 / len(draws))
    assert np.all(np.abs(q.mean(axis=0) - 0.25) < 4 * sd)


@pytest.mark.parametrize("kx, ky", [(2, 2), (2, 3), (3, 2), (4, 6)])
def test_separated_truth_uses_every_cluster(kx, ky):
    model = ProductSpaceMixture(kx, ky)
    data, truth = model.simulate(0, n_docs=12, n_words=18, n_tokens=50, separated=True)
    pi = truth["pi"]
    assert pi.sum() == pytest.approx(1.0)
    heavy = pi > pi.min() + 1e-12
    assert heavy.any(axis=1).all() and heavy.any(axis=0).all()
    if kx == ky:
        np.testing.assert_array_equal(heavy, np.eye(kx, dtype=bool))
    block = 12 // kx
    for nu in range(kx):
        assert truth["p_row"][nu, nu * block : (nu + 1) * block].sum() > 0.9


# ----------------------------------------------------------------------------- PyMC reference
@pytest.fixture(scope="module")
def reference_setup():
    pytest.importorskip("pymc")
    model = ProductSpaceMixture(2, 3, alpha=0.8, eta=1.3)
    names = ["pi_flat", "p_row", "q_col", "counts", "potentials"]
    data, pm_model, fn, tempered, potential = pymc_reference(model, names)
    return model, data, REFERENCE_COUNTS, pm_model, fn, tempered, potential


def point(params):
    return {"pi_flat": params["pi"].ravel(), "p_row": params["p_row"], "q_col": params["q_col"]}


def test_pymc_model_declares_named_variables_with_dims(reference_setup):
    model, data, _, pm_model, *_ = reference_setup
    assert set(pm_model.named_vars) == {"pi_flat", "pi", "p_row", "q_col", "counts", "row_marginal"}
    dims = pm_model.named_vars_to_dims
    assert dims["pi"] == ("row_cluster", "col_cluster")
    assert dims["pi_flat"] == ("cluster_pair",)
    assert dims["p_row"] == ("row_cluster", "doc")
    assert dims["q_col"] == ("col_cluster", "word")
    assert dims["counts"] == ("doc", "word")
    assert [v.name for v in pm_model.observed_RVs] == ["counts"]
    assert [v.name for v in pm_model.deterministics] == ["pi"]
    assert list(pm_model.coords["word"]) == list("abcde")


@pytest.mark.parametrize("seed", SEEDS)
def test_pymc_logp_equals_exact_likelihood_and_prior(reference_setup, seed):
    model, data, counts, _, fn, *_ = reference_setup
    params = random_params(np.random.default_rng(seed), 4, 5, 2, 3)
    pi_lp, p_row_lp, q_col_lp, counts_lp, marginal_lp = fn(point(params))
    assert float(pi_lp) == pytest.approx(
        stats.dirichlet.logpdf(params["pi"].ravel(), np.full(6, 0.8)), rel=1e-9
    )
    np.testing.assert_allclose(
        p_row_lp, [stats.dirichlet.logpdf(r, np.full(4, 1.3)) for r in params["p_row"]], rtol=1e-9
    )
    np.testing.assert_allclose(
        q_col_lp, [stats.dirichlet.logpdf(r, np.full(5, 1.3)) for r in params["q_col"]], rtol=1e-9
    )
    # observed counts: the conditional model, row by row
    per_row = model.log_likelihood(params, data) + model.log_multinomial_coefficient(data)
    np.testing.assert_allclose(counts_lp, per_row, rtol=1e-9, atol=1e-9)
    # row marginal: Multinomial(L, p_i) of the row totals
    p_i = brute_force_joint(params).sum(axis=1)
    want_marginal = stats.multinomial.logpmf(data.row_totals, data.total, p_i)
    assert float(marginal_lp) == pytest.approx(want_marginal, rel=1e-9)
    # together: the joint multinomial over all cells (eq. (2) with (16)) plus the log prior
    total = sum(float(np.sum(t)) for t in (pi_lp, p_row_lp, q_col_lp, counts_lp, marginal_lp))
    coefficient = gammaln(data.total + 1.0) - gammaln(counts + 1.0).sum()
    want = model.joint_log_likelihood(params, data).sum() + coefficient + model.log_prior(params)
    assert total == pytest.approx(want, rel=1e-9)


def test_tempered_model_has_half_the_likelihood_as_potential(reference_setup):
    model, data, counts, _, _, tempered, potential = reference_setup
    assert "counts" not in tempered.named_vars
    assert [p.name for p in tempered.potentials] == ["tempered_loglik"]
    coefficient = gammaln(data.total + 1.0) - gammaln(counts + 1.0).sum()
    for seed in SEEDS:
        params = random_params(np.random.default_rng(seed), 4, 5, 2, 3)
        loglik = model.joint_log_likelihood(params, data).sum() + coefficient
        assert float(potential(point(params))) == pytest.approx(loglik / 2, rel=1e-9)


def test_pymc_model_rejects_bad_input():
    with pytest.raises(ValueError, match="temperature"):
        ProductSpaceMixture(2).pymc_model(load("toy"), temperature=-1.0)
    with pytest.raises(ValueError, match="larger than the data supports"):
        ProductSpaceMixture(7, 2).pymc_model(load("toy"))
