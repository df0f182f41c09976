"""The aspect model (separable mixture model, PLSA) in its asymmetric form.

Hofmann & Puzicha (1998), section 2.3, eq. (11); Hofmann, Puzicha & Jordan (1999), section 2.1:

.. math::

    P(y_j \\mid x_i) = \\sum_{k=1}^{K} \\theta_{ik} \\, \\phi_{kj},

where ``theta[i]`` is the object-specific distribution over aspects (``p_{alpha|i}`` in the seed) and
``phi[k]`` the aspect-specific distribution over the column objects (``q_{j|alpha}``). The Bayesian form
puts symmetric Dirichlet priors on both: ``theta[i] ~ Dir(alpha)`` and ``phi[k] ~ Dir(eta)`` (``beta``
is reserved for the inverse computational temperature of annealed EM, seed section 5.1). With
``alpha = eta = 1`` the MAP estimate is the maximum-likelihood PLSA estimate of eq. (2); integrating
``theta`` and ``phi`` out gives the collapsed Dirichlet-multinomial model (LDA with symmetric priors).

The product-space mixture model of section 2.4, the aspect model constrained to pairs of a row
cluster and a column cluster, is in :mod:`latentzoo.models.product_space`.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from latentzoo.data import CoOccurrence
from latentzoo.data.checks import check_memory
from latentzoo.models._checks import (
    check_data_shape,
    check_fits_data,
    check_integer,
    check_positive,
    check_simplex_rows,
    check_table,
)
from latentzoo.models._kernels import NO_ROW_NORM, cell_dots, row_log_likelihoods
from latentzoo.models.base import CorpusFamily, LikelihoodHeldout, LikelihoodModel
from latentzoo.models.conjugate import (
    dirichlet_logpdf,
    dirichlet_multinomial_log,
)
from latentzoo.models.cooccurrence import (
    CorpusSimulator,
    DyadPredictive,
    draw_counts,
    draw_profiles,
)
from latentzoo.models.invariants import default_dyads

__all__ = [
    "AspectModel",
    "PRIOR_DEFAULTS",
    "default_dyads",
    "top_words",
]


PRIOR_DEFAULTS = {
    "map": {"alpha": 1.1, "eta": 1.01},
    "sampling": {"alpha": 0.1, "eta": 0.01},
}
"""The priors an :class:`AspectModel` takes when they are left unset, by kind of inference: MAP
estimation by annealed EM needs concentrations of at least 1 (``alpha - 1`` and ``eta - 1`` are its
pseudo-counts); posterior sampling is best served by the sparse priors usual for LDA."""

SAMPLING_METHODS = ("gibbs", "pymc")
"""The methods that sample the posterior and so take the ``"sampling"`` defaults."""


@dataclass(frozen=True)
class AspectModel(DyadPredictive, CorpusFamily, LikelihoodHeldout, CorpusSimulator):
    """Aspect model / PLSA with Dirichlet priors (Hofmann & Puzicha 1998, eq. (1), (11)).

    Parameters
    ----------
    n_components : int
        Number of aspects ``K``.
    alpha : float, optional
        Symmetric Dirichlet concentration of each row's aspect distribution ``theta[i]``.
    eta : float, optional
        Symmetric Dirichlet concentration of each aspect's column distribution ``phi[k]``.

    Notes
    -----
    A prior left unset takes the default of the method that uses it, because the two kinds of
    inference want different priors (:data:`PRIOR_DEFAULTS`):

    * ``"map"`` (annealed EM, and the model as constructed): ``alpha = 1.1``, ``eta = 1.01``. The
      MAP estimate is then a lightly smoothed maximum likelihood (``alpha - 1`` and ``eta - 1``
      act as pseudo-counts, so a word unseen in training keeps a non-zero probability and
      held-out perplexity stays finite); ``alpha = eta = 1`` is plain PLSA. MAP EM needs priors
      of at least 1.
    * ``"sampling"`` (collapsed Gibbs and the PyMC reference through :func:`latentzoo.fit`): the
      sparse LDA priors ``alpha = 0.1``, ``eta = 0.01`` of the ``lda`` package and tomotopy. With
      the MAP priors the sampler's topics are much blurrier: measured on Reuters, held-out
      perplexity 698 instead of 502 at K=20 and 820 instead of 455 at K=50.

    :func:`latentzoo.fit` applies the method's defaults (:meth:`for_method`) and the result
    records the priors actually used (``result.model``, or the ``model_alpha`` / ``model_eta``
    attributes of an ``InferenceData``). The functions of :mod:`latentzoo.inference` and
    :func:`latentzoo.validate` use the model exactly as constructed, i.e. the ``"map"`` values
    for unset priors. Priors you pass are never changed.

    An unset prior prints as unset (``alpha=None``), because which value it takes depends on the
    method; ``for_method(method)`` prints the values that method uses.

    Examples
    --------
    >>> from latentzoo.models import AspectModel
    >>> model = AspectModel(n_components=3)
    >>> data, truth = model.simulate(0, n_docs=5, n_words=12, doc_length=20)
    >>> ll = model.log_likelihood(truth, data)
    >>> ll.shape
    (5,)
    >>> model, model.for_method("gibbs")
    (AspectModel(n_components=3, alpha=None, eta=None), AspectModel(n_components=3, alpha=0.1, eta=0.01))
    """

    n_components: int
    alpha: float | None = None
    eta: float | None = None

    name = "aspect"
    data_type = CoOccurrence
    protocol = LikelihoodModel
    p_dyad_formula = "sum_k theta[i, k] phi[k, j]"
    """``p_dyad`` (the predictive ``P(y_j | x_i)`` of a tracked dyad) at one draw, in words."""
    param_names = ("theta", "phi")
    invariant_names = ("loglik", "p_dyad")

    def __post_init__(self):
        check_integer("n_components", self.n_components)
        unset = tuple(name for name in ("alpha", "eta") if getattr(self, name) is None)
        for name in unset:
            object.__setattr__(self, name, PRIOR_DEFAULTS["map"][name])
        # Not a field: equality and the saved attributes see only the priors in use.
        object.__setattr__(self, "unset_priors", unset)
        check_positive("alpha", self.alpha)
        check_positive("eta", self.eta)

    def __repr__(self) -> str:
        # An unset prior shows as None: its value is the method's (for_method), and printing the
        # MAP default here would misstate what a Gibbs fit uses.
        alpha, eta = (
            None if name in self.unset_priors else getattr(self, name) for name in ("alpha", "eta")
        )
        return f"AspectModel(n_components={self.n_components!r}, alpha={alpha!r}, eta={eta!r})"

    def for_method(self, method: str) -> AspectModel:
        """This model with the priors left unset at the defaults of ``method``, all set.

        ``"gibbs"`` and ``"pymc"`` sample the posterior and take the sparse ``"sampling"``
        priors of :data:`PRIOR_DEFAULTS`; every other method (annealed EM) keeps the ``"map"``
        values. Priors set by the user are kept. :func:`latentzoo.fit` calls this, so the
        result's model (and its ``repr``) holds the priors the method used.

        Examples
        --------
        >>> model = AspectModel(20)
        >>> model.alpha, model.for_method("gibbs").alpha, model.for_method("annealed_em").alpha
        (1.1, 0.1, 1.1)
        >>> AspectModel(20, alpha=0.5).for_method("gibbs")
        AspectModel(n_components=20, alpha=0.5, eta=0.01)
        >>> AspectModel(20).for_method("annealed_em")
        AspectModel(n_components=20, alpha=1.1, eta=1.01)
        """
        kind = "sampling" if method in SAMPLING_METHODS else "map"
        values = {name: PRIOR_DEFAULTS[kind][name] for name in self.unset_priors}
        if not values:
            return self
        return AspectModel(self.n_components, **{"alpha": self.alpha, "eta": self.eta, **values})

    # ------------------------------------------------------------------ checks
    def check_data(self, data) -> CoOccurrence:
        """Validate ``data`` for this model and return it as a :class:`CoOccurrence`.

        Raises ``ValueError`` when ``K`` exceeds what the data can identify (more aspects than
        columns or than observations).

        Examples
        --------
        >>> from latentzoo.data import load
        >>> AspectModel(2).check_data(load("toy")).shape
        (6, 8)
        """
        data = CoOccurrence.coerce(data)
        check_fits_data("n_components", self.n_components, data.n_cols, "columns")
        check_fits_data("n_components", self.n_components, data.total, "observations")
        return data

    def check_params(self, params, data: CoOccurrence):
        """Check shapes and simplex constraints of ``params = {"theta", "phi"}``."""
        theta = np.asarray(params["theta"], dtype=float)
        phi = np.asarray(params["phi"], dtype=float)
        k = self.n_components
        if theta.shape != (data.n_rows, k):
            raise ValueError(f"theta has shape {theta.shape}, expected {(data.n_rows, k)}")
        if phi.shape != (k, data.n_cols):
            raise ValueError(f"phi has shape {phi.shape}, expected {(k, data.n_cols)}")
        check_simplex_rows("theta", theta)
        check_simplex_rows("phi", phi)
        return theta, phi

    # --------------------------------------------------------------- reference
    dims = {
        "theta": ["doc", "topic"],
        "phi": ["topic", "word"],
        "p_dyad": ["dyad"],
        "counts": ["doc"],
    }
    """Dimensions of the variables, shared by the PyMC declaration and the fast samplers."""

    def coords(self, data) -> dict:
        """ArviZ/PyMC coordinates: documents, words, topics and the compared dyads.

        Examples
        --------
        >>> from latentzoo.data import load
        >>> sorted(AspectModel(2).coords(load("toy")))
        ['doc', 'dyad', 'topic', 'word']
        """
        return {
            "doc": list(data.row_labels),
            "word": list(data.col_labels),
            "topic": np.arange(self.n_components),
            "dyad": np.arange(len(default_dyads(data))),
        }

    def pymc_model(self, data, temperature: float = 1.0):
        """The PyMC reference declaration, latent aspects marginalised.

        ``counts[i] ~ Multinomial(n_i, theta[i] @ phi)``: the dense form was measured 1.4x cheaper per
        gradient than a potential gathered over the non-zeros. ``temperature = T`` tempers the
        likelihood to the power ``1/T`` (the power posterior of seed eq. (65)); then the likelihood
        enters as a ``pm.Potential`` and no ``log_likelihood`` group is produced.

        Parameters
        ----------
        data : CoOccurrence
            The counts ``n_ij`` of documents and words.
        temperature : float

        Returns
        -------
        pymc.Model
            Free variables ``theta`` (doc, topic) and ``phi`` (topic, word).

        Examples
        --------
        >>> from latentzoo.data import load
        >>> m = AspectModel(2).pymc_model(load("toy"))
        >>> sorted(m.named_vars)[:2]
        ['counts', 'phi']
        """
        import pymc as pm

        data = self.check_data(data)
        check_positive("temperature", temperature)
        n, m, k = data.n_rows, data.n_cols, self.n_components
        check_memory(
            4 * 8 * n * m,
            "the PyMC reference declaration of the aspect model",
            detail=f"at least, for dense {n} x {m} arrays (counts, theta @ phi, its log and "
            "gradient)",
            hint="PyMC references are for small data; use annealed_em or gibbs on large data",
        )
        counts = data.toarray()
        with pm.Model(coords=self.coords(data)) as model:
            theta = pm.Dirichlet("theta", a=np.full((n, k), self.alpha), dims=("doc", "topic"))
            phi = pm.Dirichlet("phi", a=np.full((k, m), self.eta), dims=("topic", "word"))
            p = theta @ phi
            if temperature == 1.0:
                pm.Multinomial(
                    "counts", n=data.row_totals, p=p, observed=counts, dims=("doc", "word")
                )
            else:
                dist = pm.Multinomial.dist(n=data.row_totals, p=p)
                pm.Potential("tempered_loglik", pm.logp(dist, counts).sum() / temperature)
        return model

    # --------------------------------------------------------------- simulator
    simulation_sizes = {"n_docs": 30, "n_words": 60, "doc_length": 200}

    def _draw(self, rng, separated, separation, n_docs, n_words, doc_length):
        """Draw a corpus from the generative process (seed 000, section 2.3, steps 1-3).

        ``theta[i] ~ Dir(alpha)``, ``phi[k] ~ Dir(eta)`` and ``n_i = doc_length`` tokens per document.
        With ``separated=True`` the topics are instead made well separated: topic ``k`` puts mass
        ``separation`` uniformly on its own block of ``n_words // K`` words and the rest uniformly on
        all words.

        Returns
        -------
        data : CoOccurrence
        truth : dict with ``theta`` (N x K) and ``phi`` (K x M)

        Examples
        --------
        >>> data, truth = AspectModel(2).simulate(1, n_docs=4, n_words=6, doc_length=10)
        >>> data.total
        40
        """
        k = self.n_components
        if n_words < k:
            raise ValueError(f"n_words={n_words} must be at least n_components={k}")
        theta = rng.dirichlet(np.full(k, self.alpha), size=n_docs)
        phi = draw_profiles(rng, k, n_words, self.eta, separated, separation)
        counts = draw_counts(rng, doc_length, theta @ phi)
        return CoOccurrence(counts), {"theta": theta, "phi": phi}

    # ---------------------------------------------------------- likelihoods
    def log_likelihood(self, params, data, dyads_only: bool = False) -> np.ndarray:
        """Exact log-likelihood per row: ``sum_j n_ij log P(y_j | x_i)`` (seed eq. (2), (11)).

        The multinomial coefficient is left out (it does not depend on the parameters), so
        ``exp(-sum(ll) / data.total)`` is the perplexity. Rows without observations contribute 0;
        an observed cell whose probability ``P(y_j | x_i)`` is 0 makes its row ``-inf``, and NaN
        parameters give NaN. Computed by :func:`~latentzoo.models._kernels.row_log_likelihoods` in one pass over the
        non-zeros, with no ``nnz x K`` array (``theta`` and ``phi`` may have any number ``K`` of
        aspects, not only ``n_components``).

        Parameters
        ----------
        params : dict with ``theta`` (N x K) and ``phi`` (K x M)
        data : CoOccurrence

        Returns
        -------
        numpy.ndarray of shape (N,)

        Raises
        ------
        ValueError
            If ``theta`` is not ``N x K`` or ``phi`` not ``K x M`` for the shape of ``data``.

        Examples
        --------
        >>> data, truth = AspectModel(2).simulate(0, n_docs=3, n_words=5, doc_length=8)
        >>> AspectModel(2).log_likelihood(truth, data).shape
        (3,)
        """
        return self._log_likelihood(params, data, "data")

    def _log_likelihood(self, params, data, name: str) -> np.ndarray:
        """:meth:`log_likelihood`; held-out data (``name="test"``) of the wrong shape are named in
        the error, otherwise the parameter that does not fit ``data`` is."""
        theta = np.asarray(params["theta"], dtype=np.float64)
        phi = np.asarray(params["phi"])
        if name == "test" and theta.ndim == 2 and phi.ndim == 2:
            check_data_shape(name, data.shape, (theta.shape[0], phi.shape[1]))
        width = theta.shape[1] if theta.ndim == 2 else self.n_components
        theta = check_table("theta", theta, (data.n_rows, width))
        phi = check_table("phi", params["phi"], (width, data.n_cols))
        csr = data.counts
        return row_log_likelihoods(
            csr.indptr, csr.indices, csr.data, theta, np.ascontiguousarray(phi.T), NO_ROW_NORM
        )

    def heldout_cell_probabilities(self, params, test, train=None) -> np.ndarray:
        """``P(y_j | x_i) = sum_k theta_ik phi_kj`` of one draw on the non-zero cells of ``test``
        (CSR order, no ``nnz x K`` array; Hofmann 1999, eq. (2)). ``train`` is not needed.

        Examples
        --------
        >>> from latentzoo.data import CoOccurrence
        >>> params = {"theta": [[1.0], [1.0]], "phi": [[0.25, 0.75]]}
        >>> AspectModel(1).heldout_cell_probabilities(params, CoOccurrence([[1, 1], [0, 2]])).tolist()
        [0.25, 0.75, 0.75]
        """
        csr = test.counts
        indptr, indices = csr.indptr.astype(np.int64), csr.indices.astype(np.int64)
        theta = np.ascontiguousarray(params["theta"], dtype=float)
        phi_t = np.ascontiguousarray(np.asarray(params["phi"], dtype=float).T)
        return cell_dots(indptr, indices, theta, phi_t)

    def fit_shape(self, params) -> tuple[int | None, int | None]:
        """``(documents, words)`` a point estimate was fitted to, from ``theta`` and ``phi``.

        Examples
        --------
        >>> AspectModel(2).fit_shape({"theta": np.ones((5, 2)), "phi": np.ones((2, 7))})
        (5, 7)
        """
        return np.shape(params["theta"])[0], np.shape(params["phi"])[-1]

    def labels(self, params, train=None) -> np.ndarray:
        """The dominant topic ``argmax_k theta[i, k]`` of each document (int64).

        Examples
        --------
        >>> AspectModel(2).labels({"theta": [[0.9, 0.1], [0.3, 0.7]]}).tolist()
        [0, 1]
        """
        if "theta" not in params:
            raise ValueError(
                "the sample holds no theta draws (keep_params dropped them); refit with "
                "keep_params=True to label documents by their dominant topic"
            )
        return np.asarray(params["theta"]).argmax(axis=1).astype(np.int64)

    def top_words(self, params, data=None, n: int = 10) -> pd.DataFrame:
        """The ``n`` most probable words of every topic with their probabilities ``phi[k, j]``.

        The topics of a fit at a glance (tomotopy's ``get_topic_words``, gensim's
        ``show_topics``): :func:`top_words` applied to ``params["phi"]`` with the words of
        ``data``.

        Parameters
        ----------
        params : mapping with ``"phi"`` of shape (n_components, n_words)
            A point estimate, e.g. ``result.params`` of an annealed-EM fit. For a sample, pass
            the posterior mean of ``phi`` over the draws of one chain (chains label their
            topics differently, so averaging across them blurs the topics).
        data : CoOccurrence, optional
            The data fitted; its column labels name the words (default: the column indices).
        n : int, default=10
            Words per topic (all of them when the vocabulary is smaller).

        Returns
        -------
        pandas.DataFrame
            As :func:`top_words`: index ``(topic, rank)``, columns ``word`` and ``probability``.

        Examples
        --------
        >>> from latentzoo.data import CoOccurrence
        >>> data = CoOccurrence([[3, 1, 0], [0, 1, 4]], col_labels=["apple", "pear", "goal"])
        >>> phi = np.array([[0.7, 0.25, 0.05], [0.05, 0.15, 0.8]])
        >>> AspectModel(2).top_words({"phi": phi}, data, n=2)  # doctest: +NORMALIZE_WHITESPACE
                     word  probability
        topic rank
        0     0     apple         0.70
              1      pear         0.25
        1     0      goal         0.80
              1      pear         0.15
        """
        if "phi" not in params:
            raise ValueError(
                "params hold no phi (keep_params dropped the sample's draws); refit with "
                "keep_params=True, or pass a point estimate such as result.params"
            )
        phi = np.asarray(params["phi"], dtype=np.float64)
        if phi.ndim != 2 or phi.shape[0] != self.n_components:
            raise ValueError(
                f"phi has shape {phi.shape}, expected ({self.n_components}, n_words); for a "
                "sample pass the posterior mean of one chain, e.g. "
                'idata.posterior["phi"].isel(chain=0).mean("draw")'
            )
        vocabulary = None
        if data is not None:
            data = CoOccurrence.coerce(data)
            check_data_shape("data", data.shape, (None, phi.shape[1]), ("documents", "words"))
            vocabulary = data.col_labels
        return top_words(phi, vocabulary, n)

    def predictive(self, params, dyads) -> np.ndarray:
        """``P(y_j | x_i)`` for the given dyads (rows of ``(i, j)``)."""
        dyads = np.asarray(dyads, dtype=np.int64)
        theta = np.asarray(params["theta"], dtype=float)
        phi = np.asarray(params["phi"], dtype=float)
        return np.einsum("nk,kn->n", theta[dyads[:, 0]], phi[:, dyads[:, 1]])

    def log_prior(self, params) -> float:
        """Log density of the Dirichlet priors (with normalising constants).

        ``sum_i log Dir(theta[i] | alpha) + sum_k log Dir(phi[k] | eta)``: the prior of the PyMC
        declaration (:meth:`pymc_model`), written with ``gammaln`` independently of it.

        Examples
        --------
        >>> params = {"theta": np.full((3, 2), 0.5), "phi": np.full((2, 4), 0.25)}
        >>> round(AspectModel(2, alpha=1.0, eta=1.0).log_prior(params), 6)  # 2 log 3!
        3.583519
        """
        theta = np.asarray(params["theta"], dtype=float)
        phi = np.asarray(params["phi"], dtype=float)
        return dirichlet_logpdf(theta, self.alpha) + dirichlet_logpdf(phi, self.eta)

    # ---------------------------------------------------------- collapsed
    def collapsed_log_joint(
        self, docs, words, assignments, n_docs=None, n_words=None
    ) -> np.ndarray:
        """Exact ``log p(z, w)`` of the collapsed model for many assignment vectors at once.

        ``theta`` and ``phi`` integrated out: a product of Dirichlet-multinomial marginals,
        ``prod_i DM(n_i. | alpha) prod_k DM(n_k. | eta)``. Used to enumerate the exact posterior over
        topic assignments on tiny corpora.

        Parameters
        ----------
        docs, words : int arrays of length T (one entry per token)
        assignments : int array (S, T) of topic labels
        n_docs, n_words : int, optional
            Sizes of the corpus (default: the largest index seen plus one). Give ``n_words`` when
            some columns have no tokens: it sets the Dirichlet-multinomial normaliser.

        Returns
        -------
        numpy.ndarray of shape (S,)
        """
        docs = np.asarray(docs)
        words = np.asarray(words)
        z = np.atleast_2d(np.asarray(assignments))
        n_states, _ = z.shape
        k = self.n_components
        # The vocabulary size enters the eta-normaliser: pass data.n_cols when trailing columns
        # may be unobserved.
        n_docs = int(docs.max()) + 1 if n_docs is None else int(n_docs)
        n_words = int(words.max()) + 1 if n_words is None else int(n_words)
        states = np.arange(n_states)[:, None]
        ndk = np.zeros((n_states, n_docs, k))
        nkw = np.zeros((n_states, k, n_words))
        np.add.at(ndk, (states, docs[None, :], z), 1.0)
        np.add.at(nkw, (states, z, words[None, :]), 1.0)
        return dirichlet_multinomial_log(ndk, self.alpha) + dirichlet_multinomial_log(nkw, self.eta)


def top_words(phi, vocabulary=None, n: int = 10) -> pd.DataFrame:
    """The ``n`` most probable words of every topic of ``phi`` with their probabilities.

    Parameters
    ----------
    phi : array_like of shape (n_topics, n_words)
        Topic-word distributions ``P(word | topic)`` (rows sum to one; any non-negative weights
        are ranked as given).
    vocabulary : sequence of str of length n_words, optional
        The words, in column order (default: the column indices).
    n : int, default=10
        Words per topic (all of them when ``n_words < n``).

    Returns
    -------
    pandas.DataFrame
        One row per topic and rank, in topic order and then by decreasing probability (ties in
        column order): index ``(topic, rank)``, columns ``word`` and ``probability``.
        ``frame.loc[k]`` is topic ``k``; ``frame["word"].unstack("topic")`` puts the topics
        side by side.

    Examples
    --------
    >>> phi = np.array([[0.5, 0.3, 0.2], [0.1, 0.1, 0.8]])
    >>> frame = top_words(phi, ["apple", "pear", "goal"], n=2)
    >>> frame.loc[1]  # doctest: +NORMALIZE_WHITESPACE
           word  probability
    rank
    0      goal          0.8
    1     apple          0.1
    >>> frame["word"].unstack("topic")  # doctest: +NORMALIZE_WHITESPACE
    topic      0      1
    rank
    0      apple   goal
    1       pear  apple
    """
    phi = np.asarray(phi, dtype=np.float64)
    if phi.ndim != 2 or phi.shape[0] == 0 or phi.shape[1] == 0:
        raise ValueError(
            f"phi must be a non-empty (n_topics, n_words) matrix, got shape {phi.shape}"
        )
    bad = ~np.isfinite(phi) | (phi < 0)
    if bad.any():
        k, j = np.argwhere(bad)[0]
        raise ValueError(f"phi[{k}, {j}] = {float(phi[k, j])!r} is not a probability")
    check_integer("n", n)
    n_topics, n_words = phi.shape
    if vocabulary is None:
        vocabulary = np.arange(n_words)
    vocabulary = np.asarray(vocabulary)
    if vocabulary.shape != (n_words,):
        raise ValueError(f"vocabulary has {vocabulary.size} words, phi has {n_words} columns")
    n = min(int(n), n_words)
    # A stable sort of -phi ranks ties in column order.
    order = np.argsort(-phi, axis=1, kind="stable")[:, :n]
    index = pd.MultiIndex.from_product([range(n_topics), range(n)], names=["topic", "rank"])
    return pd.DataFrame(
        {
            "word": vocabulary[order].ravel(),
            "probability": np.take_along_axis(phi, order, axis=1).ravel(),
        },
        index=index,
    )
