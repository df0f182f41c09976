"""The scikit-learn estimators of :mod:`latentzoo.sklearn`.

scikit-learn's own estimator checks run on every estimator, default-constructed and with each
method, through ``parametrize_with_checks``; the checks that do not apply are the module's
``EXPECTED_FAILED_CHECKS`` (each with its reason, printed by pytest as an xfail):

- ``check_clustering`` (OneSidedClusterer, TwoSidedClusterer): Gaussian blobs with negative
  values, no counts;
- ``check_estimator_sparse_array`` / ``check_estimator_sparse_matrix`` (the clusterers): the check
  treats any estimator with ``predict_proba`` as a classifier and reads its ``classifier_tags``
  (None for a clusterer); sparse input is tested below instead;
- ``check_array_api_input`` is skipped by scikit-learn itself unless ``SCIPY_ARRAY_API`` is set.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.base import clone
from sklearn.feature_extraction.text import CountVectorizer
from sklearn.model_selection import GridSearchCV
from sklearn.pipeline import Pipeline
from sklearn.utils.estimator_checks import parametrize_with_checks

from latentzoo.data import CoOccurrence
from latentzoo.inference.aspect import fold_in_rows
from latentzoo.models import AspectModel, OneSidedClustering
from latentzoo.sklearn import (
    EXPECTED_FAILED_CHECKS,
    AspectEstimator,
    MixtureClusterer,
    OneSidedClusterer,
    TwoSidedClusterer,
    completion_split,
)

DEFAULTS = [AspectEstimator(), OneSidedClusterer(), TwoSidedClusterer()]
"""Default-constructed estimators, as a user first meets them: e.g. ten topics on the checks'
data of two to five columns, which the estimators accept as LatentDirichletAllocation does."""

SLOW_DEFAULTS = [MixtureClusterer()]
"""Default-constructed estimators whose every check runs a full-length sampler (4 chains of the
DPM's default draws, about 20 s a check here): the slow tier's; the default tier checks the same
class at short chains in ``CHECKED``."""

CHECKED = [
    *DEFAULTS,
    AspectEstimator(2, betas=[1.0], max_iter=30, random_state=0),
    AspectEstimator(2, max_iter=30, random_state=0),  # the default schedule, betas="auto"
    AspectEstimator(2, method="gibbs", fit_options={"draws": 10, "tune": 10}, random_state=0),
    OneSidedClusterer(2, betas=[1.0], max_iter=30, random_state=0),
    OneSidedClusterer(2, method="hard", random_state=0),
    TwoSidedClusterer(2, betas=[1.0], max_iter=30, random_state=0),
    TwoSidedClusterer(2, method="hard", random_state=0),
    MixtureClusterer(2, chains=1, draws=10, tune=10, random_state=0),
    MixtureClusterer(dirichlet_process=True, chains=1, draws=10, tune=10, random_state=0),
]


def _expected_failures(estimator):
    return EXPECTED_FAILED_CHECKS[type(estimator).__name__]


@parametrize_with_checks(CHECKED, expected_failed_checks=_expected_failures)
def test_sklearn_estimator_checks(estimator, check):
    check(estimator)


@pytest.mark.slow
@parametrize_with_checks(SLOW_DEFAULTS, expected_failed_checks=_expected_failures)
def test_sklearn_estimator_checks_at_default_sampler_lengths(estimator, check):
    check(estimator)


def test_every_estimator_class_is_checked():
    assert {type(e).__name__ for e in CHECKED} == set(EXPECTED_FAILED_CHECKS)


# ---------------------------------------------------------------------------- data
TOPIC_WORDS = [
    "apple pear plum fruit juice orchard harvest cherry",
    "goal match team league player coach score cup",
    "rain cloud storm wind forecast sunny weather snow",
]


def _corpus(rng, n_docs, length=30):
    """Documents drawn from three well-separated topics, each mostly one topic."""
    vocab = [w.split() for w in TOPIC_WORDS]
    docs, topics = [], []
    for _ in range(n_docs):
        main = int(rng.integers(3))
        words = [
            vocab[main if rng.random() < 0.9 else int(rng.integers(3))][int(rng.integers(8))]
            for _ in range(length)
        ]
        docs.append(" ".join(words))
        topics.append(main)
    return docs, np.array(topics)


def _separated_counts(seed, n_docs=40):
    data, _ = AspectModel(3).simulate(seed, n_docs=n_docs, n_words=24, doc_length=80,
                                      separated=True)  # fmt: skip
    return data.counts


# ---------------------------------------------------------------------- pipelines
def test_pipeline_after_count_vectorizer():
    rng = np.random.default_rng(0)
    docs, _ = _corpus(rng, 30)
    pipe = Pipeline([("counts", CountVectorizer()), ("topics", AspectEstimator(3, random_state=1))])
    theta = pipe.fit_transform(docs)
    assert theta.shape == (30, 3)
    assert np.allclose(theta.sum(axis=1), 1.0)
    new = pipe.transform(["apple pear juice cherry", "unknown words only"])
    assert np.allclose(new.sum(axis=1), 1.0)
    assert np.allclose(new[1], 1 / 3)  # nothing in the vocabulary: the uniform start
    assert np.isfinite(pipe.score(docs))
    names = pipe.get_feature_names_out()
    assert list(names) == ["aspectestimator0", "aspectestimator1", "aspectestimator2"]


def test_grid_search_over_n_components_by_heldout_score():
    rng = np.random.default_rng(1)
    docs, _ = _corpus(rng, 36)
    pipe = Pipeline(
        [("counts", CountVectorizer()), ("topics", AspectEstimator(betas=[1.0], random_state=0))]
    )
    search = GridSearchCV(pipe, {"topics__n_components": [1, 3]}, cv=3).fit(docs)
    scores = search.cv_results_["mean_test_score"]
    # Three separated topics: one topic predicts held-out tokens clearly worse.
    assert scores[1] > scores[0] + 0.1
    assert search.best_params_ == {"topics__n_components": 3}


def test_clusterers_in_a_pipeline_recover_the_topics():
    rng = np.random.default_rng(2)
    docs, topics = _corpus(rng, 30)
    for estimator in (
        OneSidedClusterer(3, random_state=0),
        TwoSidedClusterer(3, n_column_clusters=3, random_state=0),
    ):
        pipe = Pipeline([("counts", CountVectorizer()), ("clusters", estimator)])
        labels = pipe.fit_predict(docs)
        fitted = pipe[-1]
        assert np.array_equal(labels, fitted.labels_)
        # The same partition as the topics up to a relabelling (10% of the words are noise).
        table = np.zeros((3, 3), dtype=int)
        np.add.at(table, (topics, labels), 1)
        assert table.max(axis=1).sum() >= 27
        assert np.array_equal(pipe.predict(docs), labels)


# ---------------------------------------------------------------------- fold-in
def _fold_in_reference(counts, phi_t, pseudo, n_iter):
    """Plain numpy EM on theta with phi fixed, ``n_iter`` iterations from uniform."""
    dense = counts.toarray().astype(float)
    theta = np.full((dense.shape[0], phi_t.shape[1]), 1.0 / phi_t.shape[1])
    for _ in range(n_iter):
        s = theta @ phi_t.T
        ratio = np.divide(dense, s, out=np.zeros_like(dense), where=dense > 0)
        new = np.maximum(theta * (ratio @ phi_t) + pseudo, 0.0)
        theta = new / new.sum(axis=1, keepdims=True)
    return theta


@pytest.mark.parametrize("pseudo", [0.0, 0.5, -0.3])
def test_fold_in_kernel_is_the_em_of_theta(pseudo):
    rng = np.random.default_rng(3)
    counts = sp.random(12, 9, density=0.4, random_state=4, data_rvs=lambda n: rng.integers(1, 5, n))
    counts = sp.csr_matrix(counts, dtype=np.int64)
    phi_t = rng.dirichlet(np.ones(9), size=4).T.copy()
    theta = np.full((12, 4), 0.25)
    iters = fold_in_rows(
        counts.indptr, counts.indices, counts.data.astype(float), phi_t, pseudo, 7, 0.0, theta
    )
    empty = np.diff(counts.indptr) == 0
    # tol = 0 stops a row only at an exact fixed point (a vertex, reachable when pseudo < 0).
    assert np.all(iters[~empty] <= 7) and np.all(iters[empty] == 0)
    assert np.all(iters[~empty] == 7) or pseudo < 0
    assert np.allclose(theta, _fold_in_reference(counts, phi_t, pseudo, 7), atol=1e-12)


def test_transform_of_training_documents_is_the_fitted_theta():
    # At an EM fixed point theta is the MAP of each document given phi: folding the training
    # documents back in must return it.
    counts = _separated_counts(5)
    est = AspectEstimator(3, betas=[1.0], max_iter=5000, tol=1e-13, random_state=0)
    est.fit(counts)
    est.set_params(transform_tol=1e-12, transform_max_iter=20000)
    assert np.allclose(est.transform(counts), est.result_.params["theta"], atol=1e-5)


def test_transform_rows_are_independent_of_each_other():
    counts = _separated_counts(6)
    est = AspectEstimator(3, betas=[1.0], random_state=0).fit(counts)
    whole = est.transform(counts)
    assert np.allclose(est.transform(counts[5:9]), whole[5:9], rtol=0, atol=0)


# ------------------------------------------------------------------------- score
def test_completion_split_alternates_tokens_within_rows():
    counts = sp.csr_matrix(np.array([[3, 0, 2, 1], [0, 0, 0, 0], [1, 1, 1, 0], [0, 5, 0, 0]]))
    fold_in, scored = completion_split(counts)
    assert np.array_equal((fold_in + scored).toarray(), counts.toarray())
    totals = counts.sum(axis=1).A1
    assert np.array_equal(scored.sum(axis=1).A1, totals // 2)
    assert np.array_equal(fold_in.sum(axis=1).A1, totals - totals // 2)
    # Row by row: a row split alone is the same as within the matrix.
    alone = completion_split(counts[2:3])
    assert np.array_equal(alone[1].toarray(), scored[2:3].toarray())


def test_score_is_the_completion_log_likelihood_per_token():
    counts = _separated_counts(7)
    est = AspectEstimator(3, betas=[1.0], random_state=0).fit(counts)
    fold_in, scored = completion_split(counts)
    theta = est.transform(fold_in)
    model = est.model_
    expected = (
        model.log_likelihood({"theta": theta, "phi": est.components_}, CoOccurrence(scored)).sum()
        / scored.sum()
    )
    assert est.score(counts) == pytest.approx(expected, rel=1e-12)
    assert est.perplexity(counts) == pytest.approx(np.exp(-expected), rel=1e-12)


def test_score_prefers_the_true_number_of_topics_to_one():
    train = _separated_counts(8)
    test = _separated_counts(9, n_docs=20)
    one = AspectEstimator(1, betas=[1.0], random_state=0).fit(train)
    three = AspectEstimator(3, betas=[1.0], random_state=0).fit(train)
    assert three.score(test) > one.score(test) + 0.1


def test_score_needs_two_tokens_in_some_row():
    est = AspectEstimator(2, betas=[1.0], random_state=0).fit(_separated_counts(10))
    X = np.zeros((2, 24), dtype=int)
    X[0, 3] = 1
    with pytest.raises(ValueError, match="X has no row of two or more tokens"):
        est.score(X)


def test_clusterer_score_uses_the_cluster_posterior_of_the_fold_in_half():
    counts = _separated_counts(11)
    est = OneSidedClusterer(3, betas=[1.0], random_state=0).fit(counts)
    fold_in, scored = completion_split(counts)
    params = {"rho": est.weights_, "q": est.components_, "resp": est.predict_proba(fold_in)}
    expected = OneSidedClustering(3).heldout_log_likelihood(params, CoOccurrence(scored))
    assert est.score(counts) == pytest.approx(expected.sum() / scored.sum(), rel=1e-12)


# -------------------------------------------------------------------- clusterers
def test_one_sided_posteriors_are_the_models_responsibilities():
    counts = _separated_counts(12)
    est = OneSidedClusterer(3, betas=[1.0], random_state=0).fit(counts)
    expected = est.model_.responsibilities(est.result_.params, CoOccurrence(counts))
    assert np.allclose(est.predict_proba(counts), expected, atol=1e-12)
    assert np.array_equal(est.labels_, est.result_.params["resp"].argmax(axis=1))


def test_two_sided_profiles_are_the_heldout_predictive():
    counts = _separated_counts(13)
    est = TwoSidedClusterer(3, n_column_clusters=2, betas=[1.0], random_state=0).fit(counts)
    assert est.column_labels_.shape == (24,) and est.labels_.shape == (40,)
    occupied = est.weights_ > 0
    assert np.allclose(est.components_[occupied].sum(axis=1), 1.0)
    # P(y_j | x_i) of the model's held-out predictive, from the training rows' posteriors.
    rows, cols = counts.nonzero()
    probs = est.result_.params["I"] @ est.components_
    data = CoOccurrence(counts)
    expected = est.model_.heldout_log_likelihood(est.result_.params, data)
    got = np.bincount(rows, weights=counts.data * np.log(probs[rows, cols]), minlength=40)
    assert np.allclose(got, expected)


def test_rows_without_observations_get_the_cluster_weights():
    est = OneSidedClusterer(3, betas=[1.0], random_state=0).fit(_separated_counts(14))
    proba = est.predict_proba(sp.csr_matrix((2, 24), dtype=np.int64))
    assert np.allclose(proba, est.weights_[None, :])


def test_mixture_predicts_its_own_partition_and_new_clusters():
    rng = np.random.default_rng(15)
    X = np.concatenate([rng.normal(0, 0.3, (15, 2)), rng.normal(6, 0.3, (15, 2))])
    est = MixtureClusterer(dirichlet_process=True, draws=30, tune=30, random_state=0).fit(X)
    assert est.n_clusters_ == 2
    assert len(set(est.labels_[:15])) == 1 and len(set(est.labels_[15:])) == 1
    assert np.array_equal(est.predict(X), est.labels_)
    assert est.predict([[40.0, -40.0]])[0] == est.n_clusters_  # far away: a new cluster
    assert np.isclose(est.weights_.sum(), 1.0)
    assert est.components_.shape == (2, 2)


def test_mixture_with_counts_component_takes_sparse_counts():
    rng = np.random.default_rng(16)
    X = sp.csr_matrix(rng.poisson(2.0, (20, 5)))
    est = MixtureClusterer(2, component="dirichlet_multinomial", draws=10, tune=10,
                           random_state=0).fit(X)  # fmt: skip
    assert est.predict(X).shape == (20,)
    assert np.allclose(est.components_.sum(axis=1), 1.0)


# ---------------------------------------------------------------------- params
@pytest.mark.parametrize("estimator", CHECKED, ids=lambda e: type(e).__name__)
def test_clone_keeps_the_parameters(estimator):
    copy = clone(estimator)
    assert copy.get_params() == estimator.get_params()
    before = estimator.get_params()["random_state"]
    copy.set_params(random_state=3)
    assert estimator.get_params()["random_state"] == before


# ------------------------------------------------------------------ bad input
@pytest.mark.parametrize(
    "X, message",
    [
        ([[1, -2], [3, 1]], r"Negative values in data: X\[0, 1\] = -2 is negative"),
        ([[1, 0.5], [3, 1]], r"X\[0, 1\] = 0.5"),
        ([[1, np.nan], [3, 1]], "Input X contains NaN"),
        ([[0, 0], [0, 0]], "X has no observations"),
    ],
)
def test_bad_counts_name_the_entry(X, message):
    with pytest.raises(ValueError, match=message):
        AspectEstimator(1, betas=[1.0]).fit(np.asarray(X, dtype=float))


def test_bad_parameters_are_named():
    X = _separated_counts(17)
    cases = [
        (AspectEstimator(0), "n_components"),
        (AspectEstimator(2, transform_max_iter=0), "transform_max_iter"),
        (AspectEstimator(2, transform_tol=-1.0), "transform_tol"),
        (AspectEstimator(2, method="gibbs", betas=[1.0]), "betas, max_iter and tol"),
        (AspectEstimator(2, fit_options=[1]), "fit_options"),
        (AspectEstimator(2, method="nope"), "unknown method 'nope'"),
        (AspectEstimator(2.5), "n_components must be an integer"),
        (OneSidedClusterer(2, alpha=-1.0), "alpha"),
        (TwoSidedClusterer(2, n_column_clusters=0), "n_column_clusters must be an integer"),
        (MixtureClusterer(2, component="gauss"), "unknown component 'gauss'"),
        (MixtureClusterer(2, dirichlet_process="yes"), "dirichlet_process"),
        (AspectEstimator(2, random_state="abc"), "random_state"),
    ]
    for estimator, message in cases:
        with pytest.raises(ValueError, match=message):
            estimator.fit(X if not isinstance(estimator, MixtureClusterer) else X.toarray())


def test_new_rows_must_have_the_fitted_columns():
    est = AspectEstimator(2, betas=[1.0], random_state=0).fit(_separated_counts(18))
    with pytest.raises(ValueError, match="X has 5 features, but AspectEstimator is expecting 24"):
        est.transform(np.ones((2, 5), dtype=int))


# ------------------------------------------------------------ priors and labels
def _expected_counts(counts, theta, phi):
    dense = counts.toarray().astype(float)
    s = theta @ phi
    return theta * ((dense / np.where(s > 0, s, 1.0)) @ phi.T)


def test_fold_in_rule_follows_the_method_and_its_priors():
    counts = _separated_counts(19)
    em = AspectEstimator(3, betas=[1.0], random_state=0).fit(counts)
    gibbs = AspectEstimator(
        3, method="gibbs", fit_options={"draws": 20, "tune": 20}, random_state=0
    ).fit(counts)
    # The priors actually fitted: the method's defaults for priors left unset.
    assert em.model_ == AspectModel(3).for_method("annealed_em")
    assert gibbs.model_ == AspectModel(3).for_method("gibbs")
    for est, pseudo in ((em, em.model_.alpha - 1.0), (gibbs, gibbs.model_.alpha)):
        est.set_params(transform_tol=1e-13, transform_max_iter=20000)
        theta = est.transform(counts[:5])
        # A fixed point of theta_k ∝ max(N_k + pseudo, 0), N_k the expected counts.
        target = np.maximum(_expected_counts(counts[:5], theta, est.components_) + pseudo, 0.0)
        assert np.allclose(theta, target / target.sum(axis=1, keepdims=True), atol=1e-8)


def test_fitted_partitions_are_latentzoos_labels_of_the_result():
    import latentzoo

    counts = _separated_counts(20)
    two = TwoSidedClusterer(3, betas=[1.0], random_state=0).fit(counts)
    assert np.array_equal(two.column_labels_, latentzoo.labels(two.result_).cols)
    mixture = MixtureClusterer(2, draws=10, tune=10, random_state=0).fit(counts.toarray())
    assert np.array_equal(mixture.partition_, latentzoo.labels(mixture.result_))


def _reuters_rows(n_rows=100):
    from latentzoo.data import load

    return load("reuters").counts[:n_rows]


def _standardised_glass():
    from latentzoo.data import load

    X = np.asarray(load("glass").X, dtype=np.float64)
    return (X - X.mean(axis=0)) / X.std(axis=0)


LABELLED = {
    # The fits' own assignments (at the last annealing temperature, or coupled to the
    # column posteriors, or the sampled partition) differ from predict on these data:
    # 5, 15, 2 and 2 rows (the hard fits agree already).
    "one_sided": (OneSidedClusterer(8, random_state=0), _reuters_rows),
    "one_sided_hard": (OneSidedClusterer(8, method="hard", random_state=0), _reuters_rows),
    "two_sided": (TwoSidedClusterer(8, random_state=0), _reuters_rows),
    "two_sided_hard": (TwoSidedClusterer(8, method="hard", random_state=0), _reuters_rows),
    "mixture": (
        MixtureClusterer(6, chains=1, draws=20, tune=20, random_state=0),
        _standardised_glass,
    ),
    "dpm": (
        MixtureClusterer(dirichlet_process=True, chains=1, draws=20, tune=20, random_state=1),
        _standardised_glass,
    ),
}


@pytest.mark.parametrize("estimator, data", LABELLED.values(), ids=LABELLED.keys())
def test_labels_are_predict_of_the_training_rows(estimator, data):
    # scikit-learn's mixtures label the training rows by a last E-step: labels_ and predict(X)
    # agree, and so do fit_predict and fit().predict.
    X = data()
    fitted = clone(estimator).fit(X)
    assert np.array_equal(fitted.labels_, fitted.predict(X))
    assert np.array_equal(clone(estimator).fit_predict(X), fitted.labels_)


def test_every_clusterer_class_is_checked_for_its_labels():
    clusterers = {type(e).__name__ for e in CHECKED if hasattr(e, "predict")}
    assert {type(estimator).__name__ for estimator, _ in LABELLED.values()} == clusterers


def test_components_beyond_what_the_data_support_are_fitted_with_a_warning():
    counts = _separated_counts(21)  # 24 columns
    with pytest.warns(UserWarning, match="n_components=30 is larger than the data supports"):
        est = AspectEstimator(30, betas=[1.0], random_state=0).fit(counts)
    assert est.n_components_ == 24 and est.components_.shape == (24, 24)
    assert est.transform(counts).shape == (40, 24)
    with pytest.warns(UserWarning, match="n_column_clusters=30 is larger"):
        two = TwoSidedClusterer(3, n_column_clusters=30, betas=[1.0], random_state=0).fit(counts)
    assert two.n_column_clusters_ == 24
    # The default number of column clusters (n_components) is reduced without a word.
    tiny = np.array([[3, 1, 0], [0, 2, 4], [1, 0, 5], [4, 4, 0], [0, 1, 1], [2, 0, 2]] * 2)
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)
        assert TwoSidedClusterer(8, betas=[1.0], random_state=0).fit(tiny).n_column_clusters_ == 3


# ---------------------------------------------------------------------- top words
def test_top_words_of_the_topics_in_a_pipeline():
    rng = np.random.default_rng(22)
    docs, _ = _corpus(rng, 30)
    pipe = Pipeline([("counts", CountVectorizer()), ("topics", AspectEstimator(3, random_state=0))])
    pipe.fit(docs)
    frame = pipe["topics"].top_words(n=8, vocabulary=pipe["counts"].get_feature_names_out())
    assert frame.index.names == ["topic", "rank"] and len(frame) == 24
    # Three separated topics: each fitted topic's top words are one topic's eight words.
    found = {frozenset(frame.loc[k, "word"]) for k in range(3)}
    assert found == {frozenset(words.split()) for words in TOPIC_WORDS}
    components = pipe["topics"].components_
    assert np.array_equal(frame.loc[0, "probability"], np.sort(components[0])[::-1][:8])


def test_top_words_name_a_dataframes_columns_by_default():
    import pandas as pd

    counts = _separated_counts(23)
    words = [f"word{j}" for j in range(counts.shape[1])]
    est = AspectEstimator(3, betas=[1.0], random_state=0).fit(
        pd.DataFrame(counts.toarray(), columns=words)
    )
    frame = est.top_words(n=2)
    best = est.components_.argmax(axis=1)
    assert [frame.loc[(k, 0), "word"] for k in range(3)] == [words[j] for j in best]
    unnamed = AspectEstimator(3, betas=[1.0], random_state=0).fit(counts).top_words(n=1)
    assert unnamed["word"].tolist() == best.tolist()


def test_top_words_need_a_fitted_estimator():
    from sklearn.exceptions import NotFittedError

    with pytest.raises(NotFittedError):
        AspectEstimator(2).top_words()
