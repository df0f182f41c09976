"""scikit-learn estimators for the families a user reaches for: topics, clusters, mixtures.

Each estimator wraps :func:`latentzoo.fit` behind the scikit-learn API, so it works after a
``CountVectorizer`` in a :class:`~sklearn.pipeline.Pipeline` and inside
:class:`~sklearn.model_selection.GridSearchCV` (over ``n_components``, by :meth:`score`):

- :class:`AspectEstimator`: the aspect model (PLSA, :class:`~latentzoo.models.AspectModel`) by
  ``annealed_em`` or ``gibbs``; ``transform`` gives the topic proportions of new documents,
  folded in with the topics fixed; ``top_words`` the most probable words of each topic.
- :class:`OneSidedClusterer`: one-sided clustering (ACM,
  :class:`~latentzoo.models.OneSidedClustering`) by ``annealed_em`` or ``hard``; ``predict``,
  ``predict_proba`` / ``transform`` (cluster posteriors) of new rows.
- :class:`TwoSidedClusterer`: two-sided clustering / co-clustering (SCM,
  :class:`~latentzoo.models.TwoSidedClustering`) by ``mean_field`` or ``hard``; row and column
  partitions, and the row clusters of new rows.
- :class:`MixtureClusterer`: a finite Bayesian mixture or a Dirichlet process mixture of a
  conjugate component (:class:`~latentzoo.models.BayesianMixture`,
  :class:`~latentzoo.models.DirichletProcessMixture`) by collapsed ``gibbs``.

Constructor arguments are stored as given (scikit-learn's rule, so ``get_params``,
``set_params`` and ``clone`` work); they are checked in ``fit``, where a bad value raises
``ValueError`` naming it. ``None`` for a prior or a schedule option means the library's default
for the chosen method (see :func:`latentzoo.fit`).

**Labels.** The clusterers' ``labels_`` are ``predict`` of the training rows, as scikit-learn's
mixtures give them (a last E-step at the fitted parameters); the fit's own assignments are
``latentzoo.labels(result_)`` (``partition_`` of :class:`MixtureClusterer`).

**Input.** The three co-occurrence estimators take a documents x words count matrix (scipy
sparse or dense, e.g. the output of ``CountVectorizer``), converted through
:class:`~latentzoo.data.CoOccurrence`: entries must be non-negative integers (a fractional entry
such as a tf-idf weight raises ``ValueError`` naming it). :class:`MixtureClusterer` takes an
items x features matrix (:class:`~latentzoo.data.Features`) of the kind its component models.

**score(X): held-out log-likelihood per token, by document completion** (Wallach et al. 2009,
"Evaluation methods for topic models"). A new document's own proportions (or cluster posterior)
are unknown; estimating them on the very tokens that are then scored rewards every extra topic
(each document's ``K - 1`` free proportions are fitted to itself), so a grid search would pick
the largest ``n_components``. Instead each row of ``X`` is split in two (:func:`completion_split`):
its tokens, ordered by column (word) index, alternate between a *fold-in* half (even positions)
and a *scored* half (odd positions). The fold-in half gives the row's ``theta`` (or cluster
posterior) with the fitted topics (cluster profiles) fixed; the score is
``sum log P(scored token | fold-in half) / number of scored tokens`` over all rows, the
definition of :meth:`EMResult.perplexity <latentzoo.inference.EMResult.perplexity>` applied to
the scored half. The split is deterministic (no random state: every candidate of a grid search
is scored on the same tokens) and row by row (a row's score does not depend on the other rows);
a row of one token has nothing to score. ``perplexity(X) = exp(-score(X))``.
:class:`MixtureClusterer` holds out whole items, the mixtures' held-out unit: its ``score`` is the
mean log predictive density per item (as :meth:`sklearn.mixture.GaussianMixture.score`).

**scikit-learn's checks.** ``sklearn.utils.estimator_checks.check_estimator`` passes on the four
estimators, default-constructed and with each method (``tests/test_sklearn.py``), except for the
checks in :data:`EXPECTED_FAILED_CHECKS`:

- ``check_clustering`` (the count clusterers): it fits standardised Gaussian blobs, real and
  negative, which are no counts.
- ``check_estimator_sparse_array`` / ``check_estimator_sparse_matrix`` (the clusterers): the
  check takes any estimator with ``predict_proba`` for a classifier and reads its
  ``classifier_tags``, which a clusterer does not have (``AttributeError``); sparse input is
  supported and tested in ``tests/test_sklearn.py``.
- ``check_array_api_input`` is skipped by scikit-learn unless ``SCIPY_ARRAY_API`` is set (the
  estimators compute in numpy).

The count estimators set the ``positive_only`` tag and also the ``categorical`` tag: it is the
only tag with which the checks feed non-negative *integer* data (they round their random data),
the input these estimators take; the estimators do not treat columns as categories, and nothing
in scikit-learn outside the checks reads the tag.

Examples
--------
>>> from sklearn.feature_extraction.text import CountVectorizer
>>> from sklearn.pipeline import Pipeline
>>> docs = ["apples and pears", "pears and plums", "goals and cups", "cups and goals"] * 3
>>> pipe = Pipeline([("counts", CountVectorizer()),
...                  ("topics", AspectEstimator(2, betas=[1.0], random_state=0))])
>>> theta = pipe.fit(docs).transform(["plums and pears"])
>>> theta.shape, bool(abs(theta.sum() - 1) < 1e-9)
((1, 2), True)
"""

from __future__ import annotations

import inspect
import warnings

import numpy as np
import pandas as pd
import scipy.sparse as sp
from scipy.special import logsumexp
from sklearn.base import (
    BaseEstimator,
    ClassNamePrefixFeaturesOutMixin,
    ClusterMixin,
    TransformerMixin,
)
from sklearn.utils.validation import check_is_fitted, validate_data

from latentzoo.api import fit as _fit
from latentzoo.data import CoOccurrence, Features
from latentzoo.inference.aspect import fold_in_rows
from latentzoo.inference.results import labels as result_labels
from latentzoo.models import (
    AspectModel,
    BayesianMixture,
    DirichletProcessMixture,
    OneSidedClustering,
    TwoSidedClustering,
)
from latentzoo.models._checks import check_integer, check_interval
from latentzoo.models._kernels import NO_ROW_NORM, row_log_likelihoods
from latentzoo.models.aspect import top_words
from latentzoo.models.conjugate import component_named

__all__ = [
    "AspectEstimator",
    "OneSidedClusterer",
    "TwoSidedClusterer",
    "MixtureClusterer",
    "completion_split",
    "EXPECTED_FAILED_CHECKS",
]


# --------------------------------------------------------------------------------- input
def _renamed(message: str) -> str:
    """A :class:`CoOccurrence` message about its ``counts`` argument, about ``X`` instead."""
    if message.startswith("counts"):
        message = "X" + message[len("counts") :]
    if "is negative" in message:
        # scikit-learn's convention (check_positive_only_tag_during_fit) for counts-only input.
        message = f"Negative values in data: {message}"
    return message


def _cooccurrence(X, allow_empty: bool = False) -> CoOccurrence | None:
    """``X`` (already through ``validate_data``) as a :class:`CoOccurrence`, errors about ``X``.

    Fitting needs observations; transforming and predicting accept rows (or a whole ``X``)
    without any, e.g. new documents whose words are all outside the fitted vocabulary: an ``X``
    without observations then gives None.
    """
    try:
        return CoOccurrence(X)
    except ValueError as exc:
        message = str(exc)
        if allow_empty and message.startswith("counts has no observations"):
            return None
        raise ValueError(_renamed(message)) from None


def completion_split(counts) -> tuple[sp.csr_matrix, sp.csr_matrix]:
    """Split every row's tokens into a fold-in half and a scored half (document completion).

    The tokens of a row, ordered by column, go alternately to the fold-in half (positions 0, 2,
    4, ...) and to the scored half (positions 1, 3, ...): a cell of ``n`` tokens starting at
    position ``o`` of its row sends ``(o + n) // 2 - o // 2`` tokens to the scored half.
    Deterministic and row by row, so a row's split does not depend on the other rows.

    Parameters
    ----------
    counts : scipy.sparse matrix or array_like of non-negative integer counts (N x M)

    Returns
    -------
    fold_in, scored : scipy.sparse.csr_matrix (N x M), int64, summing to ``counts``

    Examples
    --------
    >>> fold_in, scored = completion_split([[3, 0, 1], [1, 1, 0]])
    >>> fold_in.toarray().tolist(), scored.toarray().tolist()
    ([[2, 0, 0], [1, 0, 0]], [[1, 0, 1], [0, 1, 0]])
    """
    csr = sp.csr_matrix(counts, dtype=np.int64)
    csr.sum_duplicates()
    csr.sort_indices()
    data = csr.data
    cumulative = np.concatenate([[0], np.cumsum(data)])
    rows = np.repeat(np.arange(csr.shape[0]), np.diff(csr.indptr))
    start = cumulative[:-1] - cumulative[csr.indptr[rows]]
    scored = (start + data) // 2 - start // 2
    parts = []
    for values in (data - scored, scored):
        # Each part owns its index arrays: eliminate_zeros compacts them in place.
        part = sp.csr_matrix((values, csr.indices.copy(), csr.indptr.copy()), shape=csr.shape)
        part.eliminate_zeros()
        parts.append(part)
    return parts[0], parts[1]


def _options(**values) -> dict:
    """The options that are set (``None`` leaves the library's default)."""
    return {name: value for name, value in values.items() if value is not None}


def _clipped_to_data(name: str, value, data: CoOccurrence, axis: str, warn: bool = True) -> int:
    """``value`` components, at most the ``axis`` ("columns" or "rows") and observations of
    ``data``: the number the model can fit.

    The models refuse more components than the data can identify; the estimators accept any
    ``n_components`` (as scikit-learn's ``LatentDirichletAllocation`` does, so a default
    constructor or a grid search fits small data) and fit that many, with a ``UserWarning``
    when ``warn`` and the value was reduced.
    """
    check_integer(name, value)
    available = data.n_cols if axis == "columns" else data.n_rows
    fitted = int(min(value, available, data.total))
    if fitted < value and warn:
        warnings.warn(
            f"{name}={value} is larger than the data supports (only {available} {axis}, "
            f"{data.total} observations): fitting {fitted}",
            UserWarning,
            stacklevel=5,  # the caller of fit
        )
    return fitted


def _extra_options(fit_options) -> dict:
    if fit_options is None:
        return {}
    if not isinstance(fit_options, dict):
        raise ValueError(f"fit_options must be a dict or None, got {fit_options!r}")
    return dict(fit_options)


def _cluster_posteriors(counts, log_weights, log_profiles) -> np.ndarray:
    """``P(cluster | row) ∝ weight_k prod_j profile[k, j]**n_ij`` for every row (N x K).

    One sparse-dense product. A row without observations gets the weights; a row that no
    cluster can produce (probability 0 everywhere) gets the weights too rather than NaN.
    """
    with np.errstate(invalid="ignore"):
        joint = np.asarray(counts @ log_profiles.T) + log_weights[None, :]
    joint = np.where(np.isnan(joint), -np.inf, joint)
    top = joint.max(axis=1, keepdims=True)
    stuck = ~np.isfinite(top[:, 0])
    joint[stuck] = log_weights
    top[stuck, 0] = np.max(log_weights)
    out = np.exp(joint - top)
    return out / out.sum(axis=1, keepdims=True)


def _log(x) -> np.ndarray:
    with np.errstate(divide="ignore"):
        return np.log(np.asarray(x, dtype=np.float64))


def _completion_score(counts, posterior_of, predictive_right) -> tuple[float, int]:
    """``(sum log P(scored tokens), number of scored tokens)`` by document completion.

    ``posterior_of(fold_in) -> (N, K)`` gives each row's proportions (or cluster posterior) from
    its fold-in half; a scored token ``(i, j)`` then has probability
    ``sum_k posterior[i, k] predictive_right[j, k]``, summed in one fused pass over the non-zeros.
    """
    fold_in, scored = completion_split(counts)
    total = int(scored.sum())
    if total == 0:
        raise ValueError(
            "X has no row of two or more tokens: score holds out half of each row's tokens "
            "(document completion), so it needs rows with at least two observations"
        )
    left = np.ascontiguousarray(posterior_of(fold_in), dtype=np.float64)
    loglik = row_log_likelihoods(
        scored.indptr, scored.indices, scored.data, left, predictive_right, NO_ROW_NORM
    )
    return float(loglik.sum()), total


def _init_storing(n_components: int, **keyword_only):
    """An ``__init__(self, n_components=<n_components>, *, <keyword_only>)`` that stores every
    argument unchanged under its own name (scikit-learn's rule: validated in ``fit``).

    scikit-learn reads an estimator's parameters from the signature of its ``__init__``
    (``get_params``, ``clone``), so the signature is built from the defaults given, in their
    order, and set as ``__signature__``: the estimators that share options (the annealing
    schedule, :data:`_SCHEDULE`) declare them once.
    """
    parameter = inspect.Parameter
    signature = inspect.Signature(
        [
            parameter("self", parameter.POSITIONAL_OR_KEYWORD),
            parameter("n_components", parameter.POSITIONAL_OR_KEYWORD, default=n_components),
            *(
                parameter(name, parameter.KEYWORD_ONLY, default=default)
                for name, default in keyword_only.items()
            ),
        ]
    )

    def __init__(self, *args, **kwargs):
        try:
            arguments = signature.bind(self, *args, **kwargs)
        except TypeError as error:
            raise TypeError(f"{type(self).__name__}.__init__() {error}") from None
        arguments.apply_defaults()
        for name, value in arguments.arguments.items():
            if name != "self":
                setattr(self, name, value)

    __init__.__signature__ = signature
    return __init__


_SCHEDULE = {"betas": None, "max_iter": None, "tol": None, "fit_options": None}
"""The annealed-EM options of the co-occurrence estimators (``None``: the library's default)."""


class _LatentEstimator(ClassNamePrefixFeaturesOutMixin, TransformerMixin):
    """What the four estimators share: input validation, tags, :meth:`fit` (the family's part in
    ``_fit_validated``) and :meth:`transform` (the family's soft encoding, ``_soft_encoding``)."""

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = True
        tags.target_tags.required = False
        return tags

    def _validate(self, X, reset: bool):
        if not reset:
            check_is_fitted(self)
        return validate_data(
            self, X, reset=reset, accept_sparse=("csr", "csc", "coo"), dtype="numeric"
        )

    def fit(self, X, y=None):
        """Fit the estimator's model to ``X``.

        Parameters
        ----------
        X : array_like or sparse matrix (n_rows, n_features)
            A documents x words count matrix for the co-occurrence estimators (non-negative
            integers, e.g. the output of ``CountVectorizer``); data of its component's kind
            (binary, counts or real) for :class:`MixtureClusterer`.
        y : ignored

        Returns
        -------
        self : object
            The fitted estimator.

        Examples
        --------
        >>> X = np.array([[4, 2, 0, 0], [3, 3, 0, 1], [0, 1, 4, 3], [0, 0, 3, 5]])
        >>> AspectEstimator(2, betas=[1.0], random_state=0).fit(X).n_features_in_
        4
        """
        return self._fit_validated(self._validate(X, reset=True))

    def transform(self, X):
        """The soft encoding of the rows of ``X`` given the fitted parameters.

        :class:`AspectEstimator`: the topic proportions of each row, folded in with the topics
        fixed (see its class docstring); the clusterers: the cluster posteriors of
        :meth:`~_Clusterer.predict_proba`.

        Parameters
        ----------
        X : array_like or sparse matrix (n_rows, n_features_in_)

        Returns
        -------
        ndarray of shape (n_rows, n_encoded); rows sum to one
            ``n_encoded`` is ``n_components``, or ``len(weights_)`` for
            :class:`MixtureClusterer`.

        Examples
        --------
        >>> X = np.array([[4, 2, 0, 0], [3, 3, 0, 1], [0, 1, 4, 3], [0, 0, 3, 5]])
        >>> est = AspectEstimator(2, betas=[1.0], random_state=0).fit(X)
        >>> est.transform(X).shape
        (4, 2)
        """
        return self._soft_encoding(X)


class _CountsMixin:
    """Input handling, tags, the annealed-EM fit and the completion score shared by the
    co-occurrence estimators."""

    def _fit_schedule(self, model, data):
        """``latentzoo.fit`` with ``method``, the schedule options that are set, ``fit_options``
        and ``random_state``."""
        options = _options(betas=self.betas, max_iter=self.max_iter, tol=self.tol)
        options.update(_extra_options(self.fit_options))
        options["random_state"] = self.random_state
        return _fit(model, data, method=self.method, **options)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.positive_only = True
        # The only tag with which scikit-learn's checks feed non-negative integer data, the
        # input these estimators take (see the module docstring); nothing else reads it.
        tags.input_tags.categorical = True
        return tags

    def _fit_validated(self, X):
        return self._fit_counts(_cooccurrence(X))

    @property
    def _n_features_out(self):
        return self.components_.shape[0]

    def _check_transform_options(self):
        """Nothing to check but in :class:`AspectEstimator` (its fold-in options)."""

    def _soft_encoding(self, X) -> np.ndarray:
        self._check_transform_options()
        return self._posterior_counts(self._new_counts(X))

    def _predictive_right(self) -> np.ndarray:
        return np.ascontiguousarray(self.components_.T)

    def _new_counts(self, X) -> sp.csr_matrix:
        """New rows as canonical int64 CSR counts (all zero allowed)."""
        X = self._validate(X, reset=False)
        data = _cooccurrence(X, allow_empty=True)
        return sp.csr_matrix(X.shape, dtype=np.int64) if data is None else data.counts

    def score(self, X, y=None):
        """Held-out log-likelihood per token of ``X`` by document completion (higher is better).

        Each row's tokens alternate between a fold-in half, which estimates the row's
        proportions (or cluster posterior) with the fitted parameters fixed, and a scored half
        (see :func:`completion_split` and the module docstring).

        Parameters
        ----------
        X : sparse or dense count matrix (n_rows, n_features_in_)
        y : ignored

        Returns
        -------
        float
            ``sum log P(scored token | fold-in half) / number of scored tokens``.

        Examples
        --------
        >>> X = np.array([[4, 2, 0, 0], [3, 3, 0, 1], [0, 1, 4, 3], [0, 0, 3, 5]])
        >>> est = AspectEstimator(2, betas=[1.0], random_state=0).fit(X)
        >>> bool(est.score(X) > np.log(1 / 4))  # better than a uniform guess over the 4 words
        True
        """
        counts = self._new_counts(X)
        total, n_tokens = _completion_score(
            counts, self._posterior_counts, self._predictive_right()
        )
        return total / n_tokens

    def perplexity(self, X) -> float:
        """Held-out perplexity of ``X``, ``exp(-score(X))`` (lower is better).

        Parameters
        ----------
        X : sparse or dense count matrix (n_rows, n_features_in_)

        Returns
        -------
        float

        Examples
        --------
        >>> X = np.array([[4, 2, 0, 0], [3, 3, 0, 1], [0, 1, 4, 3], [0, 0, 3, 5]])
        >>> est = AspectEstimator(2, betas=[1.0], random_state=0).fit(X)
        >>> bool(1.0 < est.perplexity(X) < 4.0)
        True
        """
        return float(np.exp(-self.score(X)))


# ------------------------------------------------------------------------- aspect model
class AspectEstimator(_CountsMixin, _LatentEstimator, BaseEstimator):
    """The aspect model (PLSA with Dirichlet priors) as a scikit-learn topic transformer.

    Fits :class:`~latentzoo.models.AspectModel` by :func:`latentzoo.fit`; ``transform`` folds
    new documents in: their topic proportions are fitted by EM with the topics ``phi`` held
    fixed (:func:`~latentzoo.inference.aspect.fold_in_rows`), iterating
    ``theta_k ∝ max(N_k + a, 0)`` with ``N_k = sum_j n_j P(k | j)`` the expected counts:
    ``a = alpha - 1`` after ``annealed_em`` (the MAP estimate under ``Dir(alpha)``, so a
    training document gets back its fitted ``theta``), ``a = alpha`` after ``gibbs`` (the
    posterior mean of ``theta`` given the expected counts, which exists for the sparse sampling
    priors ``alpha < 1``). A document without observations gets uniform proportions.

    Parameters
    ----------
    n_components : int, default=10
        Number of topics ``K``. More topics than the data have columns (or observations) is
        accepted, as by ``LatentDirichletAllocation``: that many are fitted, with a
        ``UserWarning`` (``n_components_``).
    alpha, eta : float or None, default=None
        Dirichlet concentrations of the document-topic and topic-word distributions; ``None``
        takes :class:`~latentzoo.models.AspectModel`'s default for ``method`` (MAP priors for
        ``annealed_em``, sparse priors for ``gibbs``; ``model_`` holds the values used).
        ``alpha`` is also the prior of the proportions of new documents in :meth:`transform`.
    method : {"annealed_em", "gibbs"}, default="annealed_em"
        ``"annealed_em"``: the MAP estimate; ``"gibbs"``: collapsed Gibbs, ``components_`` the
        posterior mean of ``phi`` over the draws of the chain with the highest mean
        log-likelihood (chains are not averaged: their topics are labelled differently).
    betas : "auto", "early_stopping", list of float or None, default=None
        Annealing schedule of ``annealed_em`` (``None``: the library's default).
    max_iter : int or None, default=None
        EM iterations per temperature (``annealed_em``).
    tol : float or None, default=None
        Relative free-energy tolerance (``annealed_em``).
    fit_options : dict or None, default=None
        Further options of the method, passed to :func:`latentzoo.fit` (e.g. ``patience``,
        ``n_threads``; for ``gibbs``: ``chains``, ``draws``, ``tune``, which default here to 1,
        200 and 200).
    transform_max_iter : int, default=200
        EM iterations of the fold-in per document.
    transform_tol : float, default=1e-6
        The fold-in of a document stops when no proportion moves by more than this.
    random_state : int, numpy Generator, RandomState or None, default=None

    Attributes
    ----------
    components_ : ndarray of shape (n_components_, n_features_in_)
        The topics ``phi``: row ``k`` is ``P(word | topic k)`` and sums to one.
    n_components_ : int
        Topics fitted: ``n_components``, or fewer when the data have fewer columns or
        observations.
    n_features_in_ : int
    feature_names_in_ : ndarray of str
        When ``X`` was a DataFrame with string column names (the words of :meth:`top_words`).
    model_ : AspectModel
        The model fitted, with the priors used.
    result_ : EMResult or arviz.InferenceData
        What :func:`latentzoo.fit` returned.
    n_iter_ : int
        EM iterations run (``annealed_em``) or draws per chain (``gibbs``).

    Examples
    --------
    >>> X = np.array([[4, 2, 0, 0], [3, 3, 0, 1], [0, 1, 4, 3], [0, 0, 3, 5]])
    >>> est = AspectEstimator(n_components=2, betas=[1.0], random_state=0).fit(X)
    >>> est.components_.shape, bool(np.allclose(est.components_.sum(axis=1), 1))
    ((2, 4), True)
    >>> est.transform([[5, 0, 0, 0]]).round(2).max() > 0.9
    np.True_
    """

    __init__ = _init_storing(
        10, alpha=None, eta=None, method="annealed_em", **_SCHEDULE,
        transform_max_iter=200, transform_tol=1e-6, random_state=None,
    )  # fmt: skip

    def _fit_counts(self, data: CoOccurrence):
        self._check_transform_options()
        self.n_components_ = _clipped_to_data("n_components", self.n_components, data, "columns")
        model = AspectModel(self.n_components_, **_options(alpha=self.alpha, eta=self.eta))
        # The priors left unset take the method's defaults, as in latentzoo.fit; resolved here
        # so that model_ and the fold-in use the priors actually fitted.
        model = model.for_method(self.method)
        if self.method == "gibbs":
            if self.betas is not None or self.max_iter is not None or self.tol is not None:
                raise ValueError(
                    "betas, max_iter and tol are options of method='annealed_em', not of 'gibbs' "
                    "(give chains, draws, tune in fit_options)"
                )
            options = {"chains": 1, "draws": 200, "tune": 200, "progressbar": False}
            options.update(_extra_options(self.fit_options))
            options.update(keep_params=True, random_state=self.random_state)
            result = _fit(model, data, method="gibbs", **options)
            phi = _best_chain_mean(result, "phi")
            self.n_iter_ = int(result.posterior.sizes["draw"])
            # Fold-in at the posterior mean of theta given the expected counts (the mean of the
            # Dirichlet that the sampler draws theta from): sparse sampling priors alpha < 1
            # have no interior mode.
            self._pseudo = float(model.alpha)
        else:
            result = self._fit_schedule(model, data)
            phi = np.asarray(result.params["phi"], dtype=np.float64)
            self.n_iter_ = len(result.trace)
            # The MAP fold-in: at an EM fixed point it returns the fitted theta of a training
            # document.
            self._pseudo = float(model.alpha) - 1.0
        self.model_ = model
        self.result_ = result
        self.components_ = phi
        return self

    def top_words(self, n: int = 10, vocabulary=None) -> pd.DataFrame:
        """The ``n`` most probable words of every fitted topic with their probabilities.

        Parameters
        ----------
        n : int, default=10
            Words per topic (all of them when the vocabulary is smaller).
        vocabulary : sequence of str of length n_features_in_, optional
            The words, in column order. Default: ``feature_names_in_`` (a DataFrame was
            fitted), else the column indices. After a ``CountVectorizer`` in a pipeline, pass
            ``pipe["counts"].get_feature_names_out()``.

        Returns
        -------
        pandas.DataFrame
            Index ``(topic, rank)``, columns ``word`` and ``probability`` (``components_[k,
            j]``), in topic order and then by decreasing probability
            (:func:`latentzoo.models.aspect.top_words`).

        Examples
        --------
        >>> import pandas as pd
        >>> X = pd.DataFrame([[4, 2, 0, 0], [3, 3, 0, 1], [0, 1, 4, 3], [0, 0, 3, 5]],
        ...                  columns=["apple", "pear", "goal", "cup"])
        >>> est = AspectEstimator(2, betas=[1.0], random_state=0).fit(X)
        >>> words = est.top_words(n=2)["word"]
        >>> sorted(tuple(words.loc[k]) for k in range(2))
        [('apple', 'pear'), ('cup', 'goal')]
        """
        check_is_fitted(self)
        if vocabulary is None:
            vocabulary = getattr(self, "feature_names_in_", None)
        return top_words(self.components_, vocabulary, n)

    def _check_transform_options(self):
        check_integer("transform_max_iter", self.transform_max_iter)
        check_interval("transform_tol", self.transform_tol, 0, np.inf, closed="left")

    def _posterior_counts(self, counts) -> np.ndarray:
        """Fold-in proportions ``theta`` (N x K) of the rows of CSR ``counts``."""
        k = self.components_.shape[0]
        theta = np.full((counts.shape[0], k), 1.0 / k)
        phi_t = np.ascontiguousarray(self.components_.T)
        pseudo = self._pseudo
        fold_in_rows(
            counts.indptr.astype(np.int64), counts.indices.astype(np.int64),
            counts.data.astype(np.float64), phi_t, pseudo, int(self.transform_max_iter),
            float(self.transform_tol), theta,
        )  # fmt: skip
        return theta


def _best_chain_mean(idata, name: str) -> np.ndarray:
    """Posterior mean of ``name`` over the draws of the chain with the highest mean loglik."""
    posterior = idata.posterior
    chain = int(np.argmax(posterior["loglik"].mean("draw").values))
    return np.asarray(posterior[name].isel(chain=chain).mean("draw").values, dtype=np.float64)


# ---------------------------------------------------------------------------- clusterers
class _Clusterer(_LatentEstimator, ClusterMixin):
    """What the clusterers share: ``predict_proba`` (their soft encoding) and ``predict`` (the
    arg max of ``_predict_scores``)."""

    def predict_proba(self, X):
        """Posterior cluster probabilities of the rows of ``X`` given the fitted parameters: the
        soft encoding of :meth:`transform` (same parameters and return) under scikit-learn's name.

        The co-occurrence clusterers by Bayes' rule, ``P(k | row) ∝ weights_[k] prod_j
        components_[k, j] ** n_j`` (seed eq. (29)-(30)), in log space, a row without
        observations getting ``weights_``; :class:`MixtureClusterer` by the posterior predictive
        given its partition, the last column of the DPM being a new cluster.

        Examples
        --------
        >>> X = np.array([[4, 2, 0, 0], [3, 3, 0, 1], [0, 1, 4, 3], [0, 0, 3, 5]])
        >>> est = OneSidedClusterer(2, betas=[1.0], random_state=0).fit(X)
        >>> bool(np.allclose(est.predict_proba(X).sum(axis=1), 1))
        True
        """
        return self._soft_encoding(X)

    def predict(self, X):
        """The most probable cluster of each row of ``X`` (the arg max of :meth:`predict_proba`;
        for the DPM of :class:`MixtureClusterer`, ``n_clusters_`` means a new cluster).

        Parameters
        ----------
        X : array_like or sparse matrix (n_rows, n_features_in_)

        Returns
        -------
        ndarray of shape (n_rows,), int64

        Examples
        --------
        >>> X = np.array([[4, 2, 0, 0], [3, 3, 0, 1], [0, 1, 4, 3], [0, 0, 3, 5]])
        >>> labels = OneSidedClusterer(2, betas=[1.0], random_state=0).fit(X).predict(X)
        >>> bool(labels[0] == labels[1] != labels[2] == labels[3])
        True
        """
        return self._predict_scores(X).argmax(axis=1).astype(np.int64)


class _CountsClusterer(_CountsMixin, _Clusterer, BaseEstimator):
    """New rows of the co-occurrence clusterers: everything follows from the fitted cluster
    weights ``weights_`` and profiles ``components_`` (``P(word | cluster)``)."""

    def _finish(self, result, model, weights, profiles, data: CoOccurrence):
        """Store the fitted parameters and label the training rows by a last E-step at them.

        An annealed fit's own assignments are those of its last temperature (and a mean-field
        fit's are coupled to the column posteriors); the last E-step at ``beta = 1`` with the
        fitted parameters, as scikit-learn's mixtures run it, makes ``labels_`` equal to
        ``predict`` of the training rows.
        """
        self.model_ = model
        self.result_ = result
        self.weights_ = np.asarray(weights, dtype=np.float64)
        self.components_ = np.asarray(profiles, dtype=np.float64)
        self.labels_ = self._posterior_counts(data.counts).argmax(axis=1).astype(np.int64)
        self.n_iter_ = len(result.trace)
        return self

    def _posterior_counts(self, counts) -> np.ndarray:
        return _cluster_posteriors(counts, _log(self.weights_), _log(self.components_))

    def _predict_scores(self, X) -> np.ndarray:
        return self._soft_encoding(X)


class OneSidedClusterer(_CountsClusterer):
    """One-sided clustering of documents (the asymmetric clustering model, a Dirichlet-
    multinomial mixture; Hofmann & Puzicha 1998, sec. 3.1-3.2) as a scikit-learn clusterer.

    Each document belongs to one cluster and all its words are drawn from that cluster's word
    distribution; fitted by :func:`latentzoo.fit` on
    :class:`~latentzoo.models.OneSidedClustering`.

    Parameters
    ----------
    n_components : int, default=8
        Number of clusters ``K``.
    alpha, eta : float or None, default=None
        Dirichlet concentrations of the cluster weights and of each cluster's word
        distribution (``None``: the model's defaults).
    method : {"annealed_em", "hard"}, default="annealed_em"
        Soft (annealed) EM or hard clustering (ACM, eq. (23)).
    betas, max_iter, tol : default=None
        Schedule options of ``annealed_em`` (``None``: the library's defaults).
    fit_options : dict or None, default=None
        Further options passed to :func:`latentzoo.fit`.
    random_state : int, numpy Generator, RandomState or None, default=None

    Attributes
    ----------
    labels_ : ndarray of shape (n_rows,)
        Cluster of each training row, ``predict`` of the training rows: the arg max of its
        posterior at the fitted parameters (a last E-step at ``beta = 1``). The fit's own
        assignments, at its last temperature, are ``latentzoo.labels(result_)``.
    components_ : ndarray of shape (n_components, n_features_in_)
        Cluster profiles ``q``: row ``k`` is ``P(word | cluster k)`` and sums to one.
    weights_ : ndarray of shape (n_components,)
        Cluster weights ``rho``.
    n_features_in_ : int
    model_ : OneSidedClustering
    result_ : EMResult
    n_iter_ : int

    Examples
    --------
    >>> X = np.array([[4, 2, 0, 0], [3, 3, 0, 1], [0, 1, 4, 3], [0, 0, 3, 5]])
    >>> est = OneSidedClusterer(n_components=2, betas=[1.0], random_state=0)
    >>> labels = est.fit_predict(X)
    >>> bool(labels[0] == labels[1] != labels[2] == labels[3])
    True
    """

    __init__ = _init_storing(
        8, alpha=None, eta=None, method="annealed_em", **_SCHEDULE, random_state=None
    )

    def _fit_counts(self, data: CoOccurrence):
        model = OneSidedClustering(self.n_components, **_options(alpha=self.alpha, eta=self.eta))
        result = self._fit_schedule(model, data)
        params = result.params
        return self._finish(result, model, params["rho"], params["q"], data)


class TwoSidedClusterer(_CountsClusterer):
    """Two-sided clustering (co-clustering) of documents and words (the symmetric clustering
    model; Hofmann & Puzicha 1998, sec. 3.3-3.4) as a scikit-learn clusterer of the rows.

    Rows and columns are clustered jointly; ``labels_`` (also ``row_labels_``) and
    ``column_labels_`` hold both partitions. New rows are assigned with the column clusters and
    the cluster association held fixed: the profile of row cluster ``nu`` is the held-out
    predictive of the fitted model, ``P(word j | nu) = q_j sum_mu <J_j mu> c_nu mu`` with the
    pseudo-count ``eta - 1`` smoothing ``q`` and ``c`` (seed eq. (47);
    :meth:`~latentzoo.models.TwoSidedClustering.heldout_log_likelihood`).

    Parameters
    ----------
    n_components : int, default=8
        Number of row clusters ``Kx``.
    n_column_clusters : int or None, default=None
        Number of column clusters ``Ky`` (``None``: ``n_components``, or the number of columns
        when that is smaller). More than the data have columns is accepted: that many are
        fitted, with a ``UserWarning`` (``n_column_clusters_``).
    alpha, eta : float or None, default=None
        Dirichlet concentrations (``None``: the model's defaults).
    method : {"mean_field", "hard"}, default="mean_field"
        Mean-field annealed EM (eq. (44)-(49)) or the hard SCM.
    betas, max_iter, tol, fit_options, random_state
        As for :class:`OneSidedClusterer` (the schedule options are those of ``mean_field``).

    Attributes
    ----------
    labels_, row_labels_ : ndarray of shape (n_rows,)
        Row cluster of each training row, ``predict`` of the training rows: the arg max of its
        posterior given the fitted profiles and column clusters (a last E-step of the rows at
        ``beta = 1``). The fit's own joint partition is ``latentzoo.labels(result_)``.
    column_labels_ : ndarray of shape (n_features_in_,)
        Column cluster of each column (the fit's column partition).
    n_column_clusters_ : int
        Column clusters fitted.
    components_ : ndarray of shape (n_components, n_features_in_)
        Row-cluster profiles ``P(word | row cluster)``; the rows of occupied clusters sum to one.
    weights_ : ndarray of shape (n_components,)
        Row-cluster weights ``rho_x``.
    n_features_in_, model_, result_, n_iter_
        As for :class:`OneSidedClusterer` (``model_`` is a :class:`TwoSidedClustering`).

    Examples
    --------
    >>> X = np.array([[4, 2, 0, 0], [3, 3, 0, 1], [0, 1, 4, 3], [0, 0, 3, 5]])
    >>> est = TwoSidedClusterer(2, betas=[1.0], random_state=0).fit(X)
    >>> est.column_labels_.shape, est.components_.shape
    ((4,), (2, 4))
    """

    __init__ = _init_storing(
        8, n_column_clusters=None, alpha=None, eta=None, method="mean_field", **_SCHEDULE,
        random_state=None,
    )  # fmt: skip

    def _fit_counts(self, data: CoOccurrence):
        # The default (None: as many column clusters as row clusters) is reduced silently.
        unset = self.n_column_clusters is None
        self.n_column_clusters_ = _clipped_to_data(
            "n_column_clusters", self.n_components if unset else self.n_column_clusters, data,
            "columns", warn=not unset,
        )  # fmt: skip
        model = TwoSidedClustering(
            self.n_components, self.n_column_clusters_, **_options(alpha=self.alpha, eta=self.eta)
        )
        result = self._fit_schedule(model, data)
        params = result.params
        # The smoothed point tables of the model's held-out predictive (one definition).
        soft_i, soft_j, c, q = model._point_tables(
            params, data.n_rows, data.n_cols, smoothing=max(model.eta - 1.0, 0.0)
        )
        profiles = q[None, :] * (soft_j @ c.T).T
        self.column_labels_ = np.asarray(result_labels(result).cols, dtype=np.int64)
        self._finish(result, model, params["rho_x"], profiles, data)
        self.row_labels_ = self.labels_
        return self


# ------------------------------------------------------------------------------ mixtures
class MixtureClusterer(_Clusterer, BaseEstimator):
    """A finite Bayesian mixture or a Dirichlet process mixture of conjugate components
    (Heller 2007, ch. 2), fitted by collapsed Gibbs sampling, as a scikit-learn clusterer.

    The point summary is the partition of the kept draw with the highest collapsed log joint
    (``sample_stats.lp``, the posterior of the partition up to a constant) over all chains and
    draws (``partition_``), and items are assigned by the posterior predictive given that
    partition, ``P(k | x) ∝ (n_k + alpha/K) p(x | D_k)`` (finite) or ``∝ n_k p(x |
    D_k)`` with a last option ``∝ alpha p(x)`` for a new cluster (DPM; eq. (2.19)-(2.20)).
    ``labels_`` are the training items assigned so, as scikit-learn's mixtures label them by a
    last E-step: ``labels_ == predict(X)``.

    Parameters
    ----------
    n_components : int, default=5
        Number of components ``K`` of the finite mixture (unused by the DPM's sampler).
    alpha : float, default=1.0
        Concentration of the weights (finite: ``Dir(alpha/K, ...)``) or of the DP.
    component : str or conjugate component, default="normal_gamma"
        ``"beta_bernoulli"`` (binary data), ``"dirichlet_multinomial"`` (counts),
        ``"normal_gamma"`` or ``"normal_inverse_wishart"`` (real data), with default priors, or a
        component instance from :mod:`latentzoo.models.conjugate`.
    dirichlet_process : bool, default=False
        Fit a :class:`~latentzoo.models.DirichletProcessMixture` instead of a finite mixture.
    chains, draws, tune : int, default=2, 100, 100
        Collapsed Gibbs settings.
    split_merge : bool or int, default=True
        Jain-Neal split-merge moves per sweep.
    fit_options : dict or None, default=None
        Further options passed to :func:`latentzoo.fit` (e.g. ``sample_alpha``).
    random_state : int, numpy Generator, RandomState or None, default=None

    Attributes
    ----------
    labels_ : ndarray of shape (n_items,)
        Cluster of each training item, ``predict`` of the training items (the arg max of the
        posterior predictive given ``partition_``; for the DPM ``n_clusters_`` would mean a new
        cluster). It differs from ``partition_`` where an item fits another cluster better
        than its sampled one.
    partition_ : ndarray of shape (n_items,)
        Clusters of the selected partition (canonical order, ``0 .. n_clusters_ - 1``).
    n_clusters_ : int
        Occupied clusters of the selected partition.
    components_ : ndarray of shape (n_clusters_, n_features_in_)
        Posterior mean of each occupied cluster's first component parameter (``theta`` of a
        Bernoulli or multinomial component, ``mu`` of a normal one) given the partition.
    weights_ : ndarray
        Predictive weights of the clusters (finite: all ``K``; DPM: the occupied clusters and a
        last entry for a new cluster); they sum to one.
    n_features_in_ : int
    model_ : BayesianMixture or DirichletProcessMixture
    result_ : arviz.InferenceData

    Examples
    --------
    >>> X = np.array([[0.0, 0.1], [0.2, -0.1], [5.0, 5.2], [5.1, 4.9]])
    >>> est = MixtureClusterer(2, draws=20, tune=20, random_state=0).fit(X)
    >>> bool(est.labels_[0] == est.labels_[1] != est.labels_[2] == est.labels_[3])
    True
    >>> est.predict([[0.1, 0.0], [5.0, 5.0]]).tolist() == [est.labels_[0], est.labels_[2]]
    True
    """

    __init__ = _init_storing(
        5, alpha=1.0, component="normal_gamma", dirichlet_process=False, chains=2, draws=100,
        tune=100, split_merge=True, fit_options=None, random_state=None,
    )  # fmt: skip

    def _model(self):
        component = self.component
        if isinstance(component, str):
            component = component_named(component)
        if not isinstance(self.dirichlet_process, bool | np.bool_):
            raise ValueError(
                f"dirichlet_process must be True or False, got {self.dirichlet_process!r}"
            )
        if self.dirichlet_process:
            return DirichletProcessMixture(alpha=self.alpha, component=component)
        return BayesianMixture(self.n_components, alpha=self.alpha, component=component)

    def _fit_validated(self, X):
        """Sample the partition posterior of the items ``X`` and keep its best partition."""
        model = self._model()
        data = model.check_data(Features(X))
        dense = np.ascontiguousarray(data.X, dtype=np.float64)
        options = {"split_merge": self.split_merge, "progressbar": False}
        options.update(_extra_options(self.fit_options))
        options.update(chains=self.chains, draws=self.draws, tune=self.tune,
                       random_state=self.random_state)  # fmt: skip
        idata = _fit(model, data, method="gibbs", **options)
        # The draw with the highest collapsed log joint, as latentzoo.labels chooses it.
        labels = np.asarray(result_labels(idata), dtype=np.int64)
        n_clusters = int(labels.max()) + 1
        comp = model.component
        n_items = dense.shape[0]
        if self.dirichlet_process:
            stats = comp.stats(dense, labels, n_clusters)
            stats = np.concatenate([stats, comp.empty_stats(1, dense.shape[1])])
            weights = np.append(np.bincount(labels, minlength=n_clusters), model.alpha)
        else:
            k = int(model.n_components)
            stats = comp.stats(dense, labels, k)
            weights = np.bincount(labels, minlength=k) + model.alpha / k
        self.model_ = model
        self.result_ = idata
        self.partition_ = labels
        self.n_clusters_ = n_clusters
        self.weights_ = weights / (n_items + model.alpha)
        self._stats = stats
        moments = comp.posterior_moments(stats[:n_clusters])
        self.components_ = np.asarray(moments[comp.param_names[0]][0], dtype=np.float64)
        self.labels_ = self._log_joint_of(dense).argmax(axis=1).astype(np.int64)
        return self

    @property
    def _n_features_out(self):
        return self.weights_.shape[0]

    def _log_joint(self, X) -> np.ndarray:
        X = self._validate(X, reset=False)
        return self._log_joint_of(np.ascontiguousarray(self.model_.check_data(Features(X)).X))

    def _log_joint_of(self, dense: np.ndarray) -> np.ndarray:
        """``log P(k, x)`` (items x clusters) of checked dense items given ``partition_``."""
        log_pred = self.model_.component.log_predictive(self._stats, dense)
        return log_pred + _log(self.weights_)[None, :]

    def _soft_encoding(self, X) -> np.ndarray:
        joint = self._log_joint(X)
        return np.exp(joint - logsumexp(joint, axis=1, keepdims=True))

    def _predict_scores(self, X) -> np.ndarray:
        return self._log_joint(X)

    def score_samples(self, X):
        """Log posterior predictive density of each item, ``log p(x | partition, data)``.

        Parameters
        ----------
        X : array_like or sparse (n_items, n_features_in_)

        Returns
        -------
        ndarray of shape (n_items,)

        Examples
        --------
        >>> X = np.array([[0.0, 0.1], [0.2, -0.1], [5.0, 5.2], [5.1, 4.9]])
        >>> MixtureClusterer(2, draws=10, tune=10, random_state=0).fit(X).score_samples(X).shape
        (4,)
        """
        return logsumexp(self._log_joint(X), axis=1)

    def score(self, X, y=None):
        """Mean log predictive density per item of ``X`` (higher is better).

        Parameters
        ----------
        X : array_like or sparse (n_items, n_features_in_)
        y : ignored

        Returns
        -------
        float

        Examples
        --------
        >>> X = np.array([[0.0, 0.1], [0.2, -0.1], [5.0, 5.2], [5.1, 4.9]])
        >>> est = MixtureClusterer(2, draws=10, tune=10, random_state=0).fit(X)
        >>> bool(np.isfinite(est.score(X)))
        True
        """
        return float(np.mean(self.score_samples(X)))


_CLUSTERING = (
    "fits standardised Gaussian blobs (real, negative values): no counts for a model of counts"
)
_PROBA_SPARSE = (
    "the check takes an estimator with predict_proba for a classifier and reads its "
    "classifier_tags (None for a clusterer): AttributeError; sparse input is supported and "
    "tested in tests/test_sklearn.py"
)
EXPECTED_FAILED_CHECKS: dict[str, dict[str, str]] = {
    "AspectEstimator": {},
    "OneSidedClusterer": {
        "check_clustering": _CLUSTERING,
        "check_estimator_sparse_array": _PROBA_SPARSE,
        "check_estimator_sparse_matrix": _PROBA_SPARSE,
    },
    "TwoSidedClusterer": {
        "check_clustering": _CLUSTERING,
        "check_estimator_sparse_array": _PROBA_SPARSE,
        "check_estimator_sparse_matrix": _PROBA_SPARSE,
    },
    "MixtureClusterer": {
        "check_estimator_sparse_array": _PROBA_SPARSE,
        "check_estimator_sparse_matrix": _PROBA_SPARSE,
    },
}
"""scikit-learn checks that do not apply, per estimator class: check name -> the reason (the
``expected_failed_checks`` of ``tests/test_sklearn.py``; see the module docstring)."""
