"""Tests of the aspect model's declaration: checks, simulator, exact likelihoods, PyMC reference.

Every likelihood is compared with an independent computation (dense numpy, scipy densities, the
Dirichlet-multinomial closed form written out with loops, or a Monte Carlo integral over the prior
with its standard error), never with itself.
"""

import itertools
import math

import numpy as np
import pytest
from scipy import stats
from scipy.special import logsumexp

from latentzoo.data import CoOccurrence, load
from latentzoo.models import AspectModel
from latentzoo.models.aspect import default_dyads, top_words
from tests import helpers

SEEDS = [0, 1, 2]


def random_params(rng, n_rows, n_cols, k):
    return {
        "theta": rng.dirichlet(np.ones(k), size=n_rows),
        "phi": rng.dirichlet(np.ones(n_cols), size=k),
    }


def brute_loglik(counts, params):
    """sum_j n_ij log (theta phi)_ij per row with explicit loops."""
    n_rows, n_cols = counts.shape
    expected = np.zeros(n_rows)
    p = params["theta"] @ params["phi"]
    for i in range(n_rows):
        for j in range(n_cols):
            if counts[i, j]:
                expected[i] += counts[i, j] * math.log(p[i, j])
    return expected


def relabel_topics(params, perm):
    return {"theta": params["theta"][:, perm], "phi": params["phi"][perm]}


# ----------------------------------------------------------------------------- construction
@pytest.mark.parametrize("kwargs, match", helpers.bad_constructor_arguments())
def test_constructor_rejects_invalid_arguments(kwargs, match):
    with pytest.raises(ValueError, match=match):
        AspectModel(**kwargs)


def test_constructor_accepts_numpy_integers_and_small_priors():
    model = AspectModel(np.int64(3), alpha=1e-3, eta=5.0)
    assert model.n_components == 3


# ----------------------------------------------------------------------------- check_data
def test_check_data_converts_arrays():
    data = AspectModel(2).check_data([[1, 2, 0], [0, 0, 3]])
    assert isinstance(data, CoOccurrence)
    assert data.shape == (2, 3)
    assert data.total == 6


@pytest.mark.parametrize(
    "k, counts, what",
    [
        (4, [[5, 5, 5]], "3 columns"),
        (3, [[1, 0, 0, 0], [0, 1, 0, 0]], "2 observations"),
    ],
)
def test_check_data_rejects_too_many_components(k, counts, what):
    with pytest.raises(ValueError, match="larger than the data supports") as info:
        AspectModel(k).check_data(counts)
    assert what in str(info.value)


def test_check_data_accepts_the_boundary():
    # K == n_cols == total is still identifiable enough to be allowed.
    assert AspectModel(3).check_data([[1, 1, 1]]).total == 3


def test_check_data_passes_on_data_errors():
    with pytest.raises(ValueError, match="is negative"):
        AspectModel(1).check_data([[1, -1]])


# ----------------------------------------------------------------------------- likelihood
@pytest.mark.parametrize("seed", SEEDS)
def test_log_likelihood_matches_dense_brute_force(seed):
    helpers.assert_log_likelihood_is(
        AspectModel(3), seed, lambda rng: random_params(rng, 7, 9, 3), brute_loglik, atol=1e-12
    )


def test_log_likelihood_ignores_zero_probability_of_unobserved_cells():
    data = CoOccurrence([[2, 0], [1, 1]])
    params = {
        "theta": np.array([[1.0, 0.0], [0.5, 0.5]]),
        "phi": np.array([[1.0, 0.0], [0.0, 1.0]]),
    }
    ll = AspectModel(2).log_likelihood(params, data)
    np.testing.assert_allclose(ll, [0.0, 2 * math.log(0.5)], rtol=1e-14)
    # ...but a zero-probability observed cell gives -inf, not NaN.
    ll = AspectModel(2).log_likelihood(params, CoOccurrence([[1, 1], [0, 0]]))
    assert ll[0] == -np.inf and ll[1] == 0.0


@pytest.mark.parametrize("k", [1, 2, 7, 50])
def test_fused_log_likelihood_matches_a_dense_reference(k):
    rng = np.random.default_rng(k)
    n_rows, n_cols = 40, 60
    counts = rng.poisson(0.7, size=(n_rows, n_cols)) * rng.integers(1, 1000, size=(n_rows, 1))
    counts[5] = 0
    params = random_params(rng, n_rows, n_cols, k)
    p = params["theta"] @ params["phi"]
    expected = np.where(counts > 0, counts * np.log(np.where(counts > 0, p, 1.0)), 0.0).sum(1)
    got = AspectModel(k).log_likelihood(params, CoOccurrence(counts))
    np.testing.assert_allclose(got, expected, rtol=1e-12)
    assert got[5] == 0.0
    params["theta"][3] = np.nan
    got = AspectModel(k).log_likelihood(params, CoOccurrence(counts))
    assert np.isnan(got[3]) == (counts[3].sum() > 0) and np.isfinite(np.delete(got, 3)).all()


def test_pymc_reference_refuses_dense_arrays_beyond_memory(monkeypatch):
    import scipy.sparse as sp

    from latentzoo.data import checks

    monkeypatch.setattr(checks, "physical_memory", lambda: 2**30)  # limit 512 MiB
    wide = CoOccurrence(sp.identity(5_000, dtype=np.int64, format="csr"))
    with pytest.raises(ValueError, match=r"^the PyMC reference declaration of the aspect model "):
        AspectModel(2).pymc_model(wide)


def test_log_likelihood_forms_no_nnz_by_k_array():

    rng = np.random.default_rng(0)
    n_rows, n_cols, k = 3000, 60, 40
    data = CoOccurrence(rng.poisson(1.0, size=(n_rows, n_cols)))
    params = random_params(rng, n_rows, n_cols, k)
    model = AspectModel(k)
    peak = helpers.peak_bytes(lambda: model.log_likelihood(params, data))
    # An nnz x K float64 array would take 8 * data.nnz * k = 30 MB; phi.T and the result ~0.05 MB.
    assert data.nnz * k * 8 > 25e6
    assert peak < 1e6


@pytest.mark.parametrize(
    "theta_shape, phi_shape, match",
    [
        ((3, 2), (2, 4), r"theta has shape \(3, 2\), expected \(2, 2\)"),
        ((2, 2), (3, 4), r"phi has shape \(3, 4\), expected \(2, 4\)"),
        ((2, 2), (2, 5), r"phi has shape \(2, 5\), expected \(2, 4\)"),
    ],
)
def test_log_likelihood_rejects_parameters_of_the_wrong_shape(theta_shape, phi_shape, match):
    params = {"theta": np.full(theta_shape, 0.5), "phi": np.full(phi_shape, 0.25)}
    with pytest.raises(ValueError, match=match):
        AspectModel(2).log_likelihood(params, CoOccurrence([[1, 0, 2, 0], [0, 3, 0, 1]]))


def test_log_multinomial_coefficient_matches_scipy():
    rng = np.random.default_rng(5)
    counts = helpers.random_counts(rng, 5, 6, zero_rows=[2])
    data = CoOccurrence(counts)
    params = random_params(rng, 5, 6, 2)
    model = AspectModel(2)
    p = params["theta"] @ params["phi"]
    want = [stats.multinomial.logpmf(row, row.sum(), pi) for row, pi in zip(counts, p, strict=True)]
    got = model.log_likelihood(params, data) + model.log_multinomial_coefficient(data)
    np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("seed", SEEDS)
def test_invariants_are_unchanged_by_permuting_topics(seed):
    model = AspectModel(4)
    data, truth, a = helpers.assert_invariants_label_free(
        model, seed, 4, relabel_topics, rtol=1e-12, n_docs=6, n_words=10, doc_length=15
    )
    # and they are what they claim to be
    assert float(a["loglik"]) == pytest.approx(model.log_likelihood(truth, data).sum(), rel=1e-14)
    dyads = default_dyads(data)
    p = truth["theta"] @ truth["phi"]
    np.testing.assert_allclose(a["p_dyad"], p[dyads[:, 0], dyads[:, 1]], rtol=1e-12)


def test_default_dyads_are_the_largest_cells():
    counts = np.array([[5, 0, 1], [2, 9, 0], [0, 5, 3]])
    dyads = default_dyads(CoOccurrence(counts), 3)
    # 9 first, then the tie at 5 broken by position (row 0 before row 2)
    assert dyads.tolist() == [[1, 1], [0, 0], [2, 1]]
    assert len(default_dyads(CoOccurrence(counts))) == 6  # only 6 non-zeros exist


# ----------------------------------------------------------------------------- simulator
@pytest.mark.parametrize("seed", SEEDS)
def test_simulate_is_reproducible_and_has_fixed_lengths(seed):
    a, ta = helpers.assert_simulate_is_reproducible(
        AspectModel(3), seed, ("theta", "phi"), "theta", n_docs=8, n_words=11, doc_length=17
    )
    assert a.shape == (8, 11)
    assert np.all(a.row_totals == 17)
    assert ta["theta"].shape == (8, 3) and ta["phi"].shape == (3, 11)
    np.testing.assert_allclose(ta["theta"].sum(1), 1.0, rtol=1e-12)
    np.testing.assert_allclose(ta["phi"].sum(1), 1.0, rtol=1e-12)


def test_simulate_rejects_fewer_words_than_topics():
    with pytest.raises(ValueError, match="n_words"):
        AspectModel(5).simulate(0, n_words=4)


@pytest.mark.parametrize("seed", SEEDS)
def test_simulate_draws_from_the_generative_process(seed):
    """Prior moments of theta and the multinomial counts given the truth, within 5 sigma."""
    k, alpha, n_docs, n_words, length = 3, 0.8, 4000, 6, 30
    model = AspectModel(k, alpha=alpha, eta=1.0)
    data, truth = model.simulate(seed, n_docs=n_docs, n_words=n_words, doc_length=length)
    theta = truth["theta"]
    # Dirichlet(alpha) marginal: mean 1/K, variance (1/K)(1 - 1/K) / (K alpha + 1)
    var = (1 / k) * (1 - 1 / k) / (k * alpha + 1)
    z = (theta.mean(0) - 1 / k) / math.sqrt(var / n_docs)
    assert np.all(np.abs(z) < 5), z
    # sample variance: its standard error from the empirical fourth central moment
    centred = theta - theta.mean(0)
    se = np.sqrt(((centred**4).mean(0) - theta.var(0) ** 2) / n_docs)
    z = (theta.var(0, ddof=1) - var) / se
    assert np.all(np.abs(z) < 5), z
    # counts | truth ~ Multinomial(length, theta @ phi): column totals
    p = theta @ truth["phi"]
    expected = length * p.sum(0)
    sd = np.sqrt((length * p * (1 - p)).sum(0))
    z = (data.col_totals - expected) / sd
    assert np.all(np.abs(z) < 5), z


def test_simulate_separated_topics():
    k, n_words, sep = 3, 12, 0.9
    data, truth = AspectModel(k).simulate(
        1, n_docs=4, n_words=n_words, separated=True, separation=sep
    )
    phi = truth["phi"]
    np.testing.assert_allclose(phi.sum(1), 1.0, rtol=1e-12)
    block = n_words // k
    for topic in range(k):
        own = phi[topic, topic * block : (topic + 1) * block].sum()
        assert own == pytest.approx(sep + (1 - sep) * block / n_words, rel=1e-12)


# ----------------------------------------------------------------------------- PyMC reference
@pytest.fixture(scope="module")
def reference_setup():
    pytest.importorskip("pymc")
    model = AspectModel(3, alpha=0.7, eta=1.3)
    data, pm_model, fn, tempered, potential = helpers.pymc_reference(
        model, ["theta", "phi", "counts"]
    )
    return model, data, helpers.REFERENCE_COUNTS, pm_model, fn, tempered, potential


def test_pymc_model_declares_named_variables_with_dims(reference_setup):
    model, data, _, pm_model, *_ = reference_setup
    assert set(pm_model.named_vars) == {"theta", "phi", "counts"}
    dims = pm_model.named_vars_to_dims
    assert dims["theta"] == ("doc", "topic")
    assert dims["phi"] == ("topic", "word")
    assert dims["counts"] == ("doc", "word")
    assert [v.name for v in pm_model.observed_RVs] == ["counts"]
    assert list(pm_model.coords["word"]) == list("abcde")
    assert len(pm_model.coords["topic"]) == 3 and len(pm_model.coords["doc"]) == 4


@pytest.mark.parametrize("seed", SEEDS)
def test_pymc_logp_equals_exact_likelihood_and_prior(reference_setup, seed):
    model, data, counts, _, fn, *_ = reference_setup
    params = random_params(np.random.default_rng(seed), 4, 5, 3)
    theta_lp, phi_lp, counts_lp = fn(params)
    want_theta = [stats.dirichlet.logpdf(r, np.full(3, 0.7)) for r in params["theta"]]
    want_phi = [stats.dirichlet.logpdf(r, np.full(5, 1.3)) for r in params["phi"]]
    np.testing.assert_allclose(theta_lp, want_theta, rtol=1e-9)
    np.testing.assert_allclose(phi_lp, want_phi, rtol=1e-9)
    per_row = model.log_likelihood(params, data) + model.log_multinomial_coefficient(data)
    np.testing.assert_allclose(counts_lp, per_row, rtol=1e-9, atol=1e-9)
    total = float(np.sum(theta_lp) + np.sum(phi_lp) + np.sum(counts_lp))
    want = per_row.sum() + model.log_prior(params)
    assert total == pytest.approx(want, rel=1e-9)


def test_tempered_model_has_half_the_likelihood_as_potential(reference_setup):
    model, data, _, _, _, tempered, potential = reference_setup
    assert "counts" not in tempered.named_vars
    assert [p.name for p in tempered.potentials] == ["tempered_loglik"]
    for seed in SEEDS:
        params = random_params(np.random.default_rng(seed), 4, 5, 3)
        loglik = model.log_likelihood(params, data) + model.log_multinomial_coefficient(data)
        assert float(potential(params)) == pytest.approx(loglik.sum() / 2, rel=1e-9)


def test_pymc_model_rejects_bad_temperature():
    with pytest.raises(ValueError, match="temperature"):
        AspectModel(2).pymc_model(load("toy"), temperature=0.0)


# ----------------------------------------------------------------------------- collapsed model
def closed_form_log_joint(docs, words, z, k, n_words, alpha, eta):
    """log p(z, w) of the collapsed model, written out with explicit loops."""
    total = 0.0
    for d in sorted(set(docs)):
        n_d = [
            sum(1 for t in range(len(z)) if docs[t] == d and z[t] == topic) for topic in range(k)
        ]
        total += math.lgamma(k * alpha) - math.lgamma(sum(n_d) + k * alpha)
        total += sum(math.lgamma(n + alpha) - math.lgamma(alpha) for n in n_d)
    for topic in range(k):
        n_w = [
            sum(1 for t in range(len(z)) if z[t] == topic and words[t] == w) for w in range(n_words)
        ]
        total += math.lgamma(n_words * eta) - math.lgamma(sum(n_w) + n_words * eta)
        total += sum(math.lgamma(n + eta) - math.lgamma(eta) for n in n_w)
    return total


@pytest.mark.parametrize("alpha, eta", [(1.1, 1.01), (0.3, 0.5), (2.0, 0.1)])
def test_collapsed_log_joint_matches_closed_form(alpha, eta):
    docs = np.array([0, 0, 0, 1, 1])
    words = np.array([0, 2, 1, 1, 2])
    k = 2
    model = AspectModel(k, alpha=alpha, eta=eta)
    states = np.array(list(itertools.product(range(k), repeat=5)))
    got = model.collapsed_log_joint(docs, words, states)
    want = [closed_form_log_joint(docs, words, z, k, 3, alpha, eta) for z in states]
    assert got.shape == (len(states),)
    np.testing.assert_allclose(got, want, rtol=1e-12)


def test_collapsed_evidence_matches_monte_carlo_over_the_prior():
    """sum_z exp(log p(z, w)) = E_prior[prod_t (theta phi)[d_t, w_t]], within 5 MC standard errors."""
    docs = np.array([0, 0, 0, 1, 1])
    words = np.array([0, 2, 1, 1, 2])
    k, n_words, alpha, eta = 2, 3, 0.8, 1.5
    model = AspectModel(k, alpha=alpha, eta=eta)
    states = np.array(list(itertools.product(range(k), repeat=5)))

    def likelihoods(rng, n):
        theta = rng.dirichlet(np.full(k, alpha), size=(n, 2))
        phi = rng.dirichlet(np.full(n_words, eta), size=(n, k))
        p = np.einsum("sdk,skw->sdw", theta, phi)
        return np.prod(p[:, docs, words], axis=1)

    helpers.assert_evidence_is_the_prior_average(
        model.collapsed_log_joint(docs, words, states), likelihoods
    )


def test_collapsed_log_joint_uses_the_full_vocabulary():
    data = CoOccurrence([[2, 1, 0, 0], [0, 1, 2, 0]])  # word 3 is in the vocabulary, never seen
    docs, words = data.to_tokens()
    model = AspectModel(2, alpha=0.5, eta=0.3)
    states = np.array(list(itertools.product(range(2), repeat=len(words))))
    got = model.collapsed_log_joint(docs, words, states, n_words=data.n_cols)
    want = np.array(
        [closed_form_log_joint(docs, words, z, 2, data.n_cols, 0.5, 0.3) for z in states]
    )
    # Compare the normalised posteriors over z (what the exact test uses).
    np.testing.assert_allclose(got - logsumexp(got), want - logsumexp(want), atol=1e-10)


def test_likelihoods_follow_replaced_counts():
    import scipy.sparse as sp

    model = AspectModel(2)
    params = {
        "theta": np.array([[0.5, 0.5], [0.2, 0.8]]),
        "phi": np.array([[0.3, 0.7], [0.6, 0.4]]),
    }
    data = CoOccurrence([[1, 2], [3, 0]])
    model.log_likelihood(params, data)
    data.counts = sp.csr_matrix(np.array([[5, 1], [1, 0]], dtype=np.int64))
    fresh = CoOccurrence([[5, 1], [1, 0]])
    np.testing.assert_allclose(
        model.log_likelihood(params, data), model.log_likelihood(params, fresh)
    )
    np.testing.assert_allclose(
        model.log_multinomial_coefficient(data), model.log_multinomial_coefficient(fresh)
    )


# ------------------------------------------------------------------------- top words
def test_top_words_are_each_topics_largest_probabilities_in_order():
    rng = np.random.default_rng(7)
    phi = rng.dirichlet(np.ones(12), size=4)
    vocabulary = [f"w{j}" for j in range(12)]
    frame = top_words(phi, vocabulary, n=5)
    assert list(frame.columns) == ["word", "probability"]
    assert frame.index.names == ["topic", "rank"] and len(frame) == 20
    for k in range(4):
        # Independently of the ranking: a Python sort of (probability, word) pairs.
        expected = sorted(zip(phi[k], vocabulary, strict=True), reverse=True)[:5]
        topic = frame.loc[k]
        assert list(topic["word"]) == [word for _, word in expected]
        assert np.array_equal(topic["probability"].to_numpy(), [p for p, _ in expected])


def test_top_words_rank_ties_in_column_order_and_stop_at_the_vocabulary():
    phi = np.array([[0.25, 0.25, 0.25, 0.25], [0.1, 0.4, 0.1, 0.4]])
    frame = top_words(phi, n=10)  # no vocabulary: column indices; 10 > 4 words
    assert frame.loc[0, "word"].tolist() == [0, 1, 2, 3]
    assert frame.loc[1, "word"].tolist() == [1, 3, 0, 2]


@pytest.mark.parametrize(
    "phi, vocabulary, n, message",
    [
        (np.ones(3) / 3, None, 2, "phi must be a non-empty"),
        ([[0.5, np.nan]], None, 2, r"phi\[0, 1\] = nan is not a probability"),
        ([[1.5, -0.5]], None, 2, r"phi\[0, 1\] = -0.5 is not a probability"),
        ([[0.5, 0.5]], ["a"], 2, "vocabulary has 1 words, phi has 2 columns"),
        ([[0.5, 0.5]], None, 0, "n must be an integer >= 1"),
    ],
)
def test_top_words_refuse_bad_input(phi, vocabulary, n, message):
    with pytest.raises(ValueError, match=message):
        top_words(phi, vocabulary, n)


def test_model_top_words_of_a_fit_name_the_datas_words():
    import latentzoo

    data = load("toy")
    result = latentzoo.fit(AspectModel(2), data, method="annealed_em", betas=[1.0], random_state=0)
    frame = result.model.top_words(result.params, data, n=3)
    phi = result.params["phi"]
    for k in range(2):
        best = np.argsort(-phi[k], kind="stable")[:3]
        assert frame.loc[k, "word"].tolist() == [data.col_labels[j] for j in best]
    with pytest.raises(ValueError, match="phi has shape"):
        AspectModel(3).top_words(result.params, data)
    with pytest.raises(ValueError, match="data has 3 columns"):
        result.model.top_words(result.params, CoOccurrence(np.ones((2, 3), dtype=int)))
    with pytest.raises(ValueError, match="keep_params=True"):
        result.model.top_words({"theta": result.params["theta"]})
