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

Also here: :class:`ProductSpaceMixture`, the product-space mixture model of section 2.4 (eq. (15)-(19)),
the aspect model whose aspects are constrained to pairs of a row cluster and a column cluster.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from latentzoo.data import CoOccurrence
from latentzoo.models._checks import check_fits_data, check_integer, check_positive
from latentzoo.models.conjugate import (
    dirichlet_logpdf,
    dirichlet_multinomial_log,
    log_multinomial_coefficient,
)
from latentzoo.models.invariants import default_dyads

__all__ = ["AspectModel", "ProductSpaceMixture", "default_dyads"]


@dataclass(frozen=True)
class AspectModel:
    """Aspect model / PLSA with Dirichlet priors (Hofmann & Puzicha 1998, eq. (1), (11)).

    Parameters
    ----------
    n_components : int
        Number of aspects ``K``.
    alpha : float
        Symmetric Dirichlet concentration of each row's aspect distribution ``theta[i]``.
    eta : float
        Symmetric Dirichlet concentration of each aspect's column distribution ``phi[k]``.
        The defaults (1.1, 1.01) make the MAP estimate of annealed EM a lightly smoothed maximum
        likelihood (``alpha - 1`` and ``eta - 1`` act as pseudo-counts, so a word unseen in training
        keeps a non-zero probability and held-out perplexity stays finite) while keeping the
        posterior well behaved for NUTS. ``alpha = eta = 1`` is plain maximum likelihood (PLSA).

    Examples
    --------
    >>> from latentzoo.models import AspectModel
    >>> model = AspectModel(n_components=3)
    >>> data, truth = model.simulate(0, n_docs=5, n_words=12, doc_length=20)
    >>> ll = model.log_likelihood(truth, data)
    >>> ll.shape
    (5,)
    """

    n_components: int
    alpha: float = 1.1
    eta: float = 1.01

    name = "aspect"
    param_names = ("theta", "phi")
    invariant_names = ("loglik", "p_dyad")

    def __post_init__(self):
        check_integer("n_components", self.n_components)
        check_positive("alpha", self.alpha)
        check_positive("eta", self.eta)

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
        if not isinstance(data, CoOccurrence):
            data = CoOccurrence(data)
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
        for name, arr in (("theta", theta), ("phi", phi)):
            if not np.all(np.isfinite(arr)) or np.any(arr < 0):
                raise ValueError(f"{name} must be finite and non-negative")
            if not np.allclose(arr.sum(axis=1), 1.0, atol=1e-6):
                raise ValueError(f"rows of {name} must sum to one")
        return theta, phi

    # --------------------------------------------------------------- reference
    def pymc_model(self, data, temperature: float = 1.0):
        """The PyMC reference declaration, latent aspects marginalised.

        ``counts[i] ~ Multinomial(n_i, theta[i] @ phi)``: the dense form was measured 1.4x cheaper per
        gradient than a potential gathered over the non-zeros. ``temperature = T`` tempers the
        likelihood to the power ``1/T`` (the power posterior of seed eq. (65)); then the likelihood
        enters as a ``pm.Potential`` and no ``log_likelihood`` group is produced.

        Parameters
        ----------
        data : CoOccurrence
        temperature : float

        Returns
        -------
        pymc.Model

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
        coords = {
            "doc": list(data.row_labels),
            "word": list(data.col_labels),
            "topic": np.arange(k),
        }
        counts = data.toarray()
        with pm.Model(coords=coords) as model:
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
    def simulate(
        self,
        random_state=None,
        n_docs: int = 30,
        n_words: int = 60,
        doc_length: int = 200,
        separated: bool = False,
        separation: float = 0.9,
    ):
        """Draw a corpus from the generative process (seed 000, section 2.3, steps 1-3).

        ``theta[i] ~ Dir(alpha)``, ``phi[k] ~ Dir(eta)`` and ``n_i = doc_length`` tokens per document.
        With ``separated=True`` the topics are instead made well separated: topic ``k`` puts mass
        ``separation`` uniformly on its own block of ``n_words // K`` words and the rest uniformly on
        all words (used where PyMC's chains must agree; not a draw from the prior, so not for SBC).

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
        rng = np.random.default_rng(random_state)
        k = self.n_components
        if n_words < k:
            raise ValueError(f"n_words={n_words} must be at least n_components={k}")
        theta = rng.dirichlet(np.full(k, self.alpha), size=n_docs)
        if separated:
            block = n_words // k
            phi = np.full((k, n_words), (1.0 - separation) / n_words)
            for topic in range(k):
                phi[topic, topic * block : (topic + 1) * block] += separation / block
            phi /= phi.sum(axis=1, keepdims=True)
        else:
            phi = rng.dirichlet(np.full(n_words, self.eta), size=k)
        p = np.clip(theta @ phi, 0.0, None)
        p /= p.sum(axis=1, keepdims=True)
        counts = rng.multinomial(doc_length, p)
        data = CoOccurrence(counts)
        return data, {"theta": theta, "phi": phi}

    # ---------------------------------------------------------- likelihoods
    def log_likelihood(self, params, data, dyads_only: bool = False) -> np.ndarray:
        """Exact log-likelihood per row: ``sum_j n_ij log P(y_j | x_i)`` (seed eq. (2), (11)).

        The multinomial coefficient is left out (it does not depend on the parameters), so
        ``exp(-sum(ll) / data.total)`` is the perplexity. Rows without observations contribute 0.

        Parameters
        ----------
        params : dict with ``theta`` (N x K) and ``phi`` (K x M)
        data : CoOccurrence

        Returns
        -------
        numpy.ndarray of shape (N,)

        Examples
        --------
        >>> data, truth = AspectModel(2).simulate(0, n_docs=3, n_words=5, doc_length=8)
        >>> AspectModel(2).log_likelihood(truth, data).shape
        (3,)
        """
        theta = np.asarray(params["theta"], dtype=float)
        phi = np.asarray(params["phi"], dtype=float)
        rows, cols, counts = data.cells()
        p = np.einsum("nk,kn->n", theta[rows], phi[:, cols])
        with np.errstate(divide="ignore"):
            terms = counts * np.log(p)
        return np.bincount(rows, weights=terms, minlength=data.n_rows)

    def log_multinomial_coefficient(self, data) -> np.ndarray:
        """``log(n_i! / prod_j n_ij!)`` per row: added to :meth:`log_likelihood` it gives the
        multinomial log-pmf that PyMC's ``counts`` variable reports.

        See :func:`~latentzoo.models.conjugate.log_multinomial_coefficient`.
        """
        return log_multinomial_coefficient(data)

    def predictive(self, params, dyads) -> np.ndarray:
        """``P(y_j | x_i)`` for the given dyads (rows of ``(i, j)``)."""
        dyads = np.asarray(dyads, dtype=np.int64)
        theta = np.asarray(params["theta"], dtype=float)
        phi = np.asarray(params["phi"], dtype=float)
        return np.einsum("nk,kn->n", theta[dyads[:, 0]], phi[:, dyads[:, 1]])

    def invariants(self, params, data, dyads=None) -> dict[str, np.ndarray]:
        """Label-invariant quantities through which every method is compared.

        ``loglik``: total log-likelihood of ``data`` (scalar); ``p_dyad``: ``P(y_j|x_i)`` on the
        dyads of :func:`default_dyads` (or the given ones). Both are unchanged by permuting aspects.

        Examples
        --------
        >>> data, truth = AspectModel(2).simulate(0, n_docs=3, n_words=5, doc_length=8)
        >>> inv = AspectModel(2).invariants(truth, data)
        >>> sorted(inv)
        ['loglik', 'p_dyad']
        """
        if dyads is None:
            dyads = default_dyads(data)
        return {
            "loglik": np.asarray(self.log_likelihood(params, data).sum()),
            "p_dyad": self.predictive(params, dyads),
        }

    def log_prior(self, params) -> float:
        """Log density of the Dirichlet priors (with normalising constants)."""
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


# ----------------------------------------------------------------------- product-space mixture
@dataclass(frozen=True)
class ProductSpaceMixture:
    """Product-space mixture model, PMM (Hofmann & Puzicha 1998, section 2.4, eq. (15)-(19)).

    The aspects of the separable mixture model (eq. (1)) are constrained to pairs ``(nu, mu)`` of a row
    cluster and a column cluster (eq. (15)), with the joint distribution of eq. (16)

    .. math::

        p_{ij} = \\sum_{\\nu=1}^{K_X} \\sum_{\\mu=1}^{K_Y} \\pi_{\\nu\\mu} \\, p_{i|\\nu} \\, q_{j|\\mu}.

    Parameters are stored with every distribution along the last axis (as ``phi`` of
    :class:`AspectModel`): ``pi`` (``Kx x Ky``) sums to one as a whole (it may also be given flattened
    in C order, shape ``(Kx*Ky,)``, which is how annealed EM carries it); ``p_row`` (``Kx x N``) has
    ``p_row[nu, i] = p_{i|nu}``, each row on the simplex over the row objects; ``q_col``
    (``Ky x M``) has ``q_col[mu, j] = q_{j|mu}``. Priors: ``pi ~ Dir(alpha)`` over the ``Kx*Ky``
    pairs, ``p_row[nu] ~ Dir(eta)`` and ``q_col[mu] ~ Dir(eta)``. The number of free parameters is
    eq. (17).

    The generative model is the joint one: ``L`` i.i.d. pairs drawn from ``p_ij``
    (:meth:`joint_log_likelihood`, eq. (2) with (16)); annealed EM maximises its posterior.
    :meth:`log_likelihood` scores the conditional ``P(y_j | x_i) = p_ij / p_i``,
    ``p_i = sum_j p_ij = sum_nu p_{i|nu} sum_mu pi[nu, mu]``, so perplexities predict columns given
    rows, as for the aspect model and the seed's Table 2. The two differ by ``sum_i n_i log p_i``.

    Relations to the aspect model (all exact, see :meth:`aspect_params`):

    * the conditional of any PMM is an aspect model with ``Ky`` aspects,
      ``theta[i] ∝ p_row[:, i] @ pi`` and ``phi = q_col``;
    * ``Kx = N`` with ``p_row`` the identity is the aspect model (11) with ``theta[i] = pi[i] / pi_i``,
      and every aspect model with ``K = Ky`` is of this form (``pi[i, k] = p_i theta[i, k]``);
    * ``Ky = M`` with ``q_col`` the identity is the separable mixture model (1) with ``Kx`` aspects,
      ``pi_nu = sum_j pi[nu, j]`` and ``q_{j|nu} = pi[nu, j] / pi_nu``.

    Parameters
    ----------
    n_row_clusters : int
        ``Kx``, number of clusters of the row objects.
    n_col_clusters : int, optional
        ``Ky``, number of clusters of the column objects (default: ``n_row_clusters``).
    alpha : float
        Symmetric Dirichlet concentration of ``pi``.
    eta : float
        Symmetric Dirichlet concentration of every ``p_{.|nu}`` and ``q_{.|mu}``. As for the aspect
        model, ``alpha - 1`` and ``eta - 1`` act as pseudo-counts of the MAP estimate.

    Examples
    --------
    >>> from latentzoo.models.aspect import ProductSpaceMixture
    >>> model = ProductSpaceMixture(2, 3)
    >>> data, truth = model.simulate(0, n_docs=5, n_words=12, n_tokens=100)
    >>> truth["pi"].shape, truth["p_row"].shape, truth["q_col"].shape
    ((2, 3), (2, 5), (3, 12))
    >>> model.log_likelihood(truth, data).shape
    (5,)
    """

    n_row_clusters: int
    n_col_clusters: int | None = None
    alpha: float = 1.1
    eta: float = 1.01

    name = "product_space"
    param_names = ("pi", "p_row", "q_col")
    invariant_names = ("loglik", "p_dyad")

    def __post_init__(self):
        check_integer("n_row_clusters", self.n_row_clusters)
        if self.n_col_clusters is None:
            object.__setattr__(self, "n_col_clusters", self.n_row_clusters)
        check_integer("n_col_clusters", self.n_col_clusters)
        check_positive("alpha", self.alpha)
        check_positive("eta", self.eta)

    @property
    def n_classes(self) -> int:
        """``K = Kx * Ky``, the number of aspects of the constrained SMM (eq. (15))."""
        return int(self.n_row_clusters) * int(self.n_col_clusters)

    # ------------------------------------------------------------------ checks
    def check_data(self, data) -> CoOccurrence:
        """Validate ``data`` for this model and return it as a :class:`CoOccurrence`.

        Raises ``ValueError`` when a number of clusters exceeds what the data can identify: more
        row clusters than rows, more column clusters than columns, or more classes ``Kx*Ky`` than
        observations.

        Examples
        --------
        >>> from latentzoo.data import load
        >>> ProductSpaceMixture(2, 3).check_data(load("toy")).shape
        (6, 8)
        >>> ProductSpaceMixture(7, 2).check_data(load("toy"))
        Traceback (most recent call last):
        ...
        ValueError: n_row_clusters=7 is larger than the data supports: only 6 rows
        """
        if not isinstance(data, CoOccurrence):
            data = CoOccurrence(data)
        check_fits_data("n_row_clusters", self.n_row_clusters, data.n_rows, "rows")
        check_fits_data("n_col_clusters", self.n_col_clusters, data.n_cols, "columns")
        if self.n_classes > data.total:
            raise ValueError(
                f"n_row_clusters * n_col_clusters = {self.n_classes} classes is larger than the "
                f"data supports: only {data.total} observations"
            )
        return data

    def _unpack(self, params):
        kx, ky = self.n_row_clusters, self.n_col_clusters
        pi = np.asarray(params["pi"], dtype=float)
        if pi.shape == (kx * ky,):
            pi = pi.reshape(kx, ky)
        return (
            pi,
            np.asarray(params["p_row"], dtype=float),
            np.asarray(params["q_col"], dtype=float),
        )

    def check_params(self, params, data: CoOccurrence):
        """Check shapes and simplex constraints of ``params = {"pi", "p_row", "q_col"}``.

        Returns ``(pi, p_row, q_col)`` as float arrays, ``pi`` of shape ``(Kx, Ky)``.
        """
        pi, p_row, q_col = self._unpack(params)
        kx, ky = self.n_row_clusters, self.n_col_clusters
        expected = {
            "pi": (pi, (kx, ky)),
            "p_row": (p_row, (kx, data.n_rows)),
            "q_col": (q_col, (ky, data.n_cols)),
        }
        for name, (arr, shape) in expected.items():
            if arr.shape != shape:
                raise ValueError(f"{name} has shape {arr.shape}, expected {shape}")
            if not np.all(np.isfinite(arr)) or np.any(arr < 0):
                raise ValueError(f"{name} must be finite and non-negative")
        if not np.isclose(pi.sum(), 1.0, atol=1e-6):
            raise ValueError("pi must sum to one")
        for name, arr in (("p_row", p_row), ("q_col", q_col)):
            if not np.allclose(arr.sum(axis=1), 1.0, atol=1e-6):
                raise ValueError(f"rows of {name} must sum to one")
        return pi, p_row, q_col

    # --------------------------------------------------------------- reference
    def pymc_model(self, data, temperature: float = 1.0):
        """The PyMC reference declaration of the joint model (eq. (16)), classes marginalised.

        The multinomial over all ``N*M`` cells factorises exactly into the row totals and the rows
        given their totals, and the model is declared that way:

        * ``counts[i] ~ Multinomial(n_i, P(y | x_i))``, observed, dims ``(doc, word)``: its
          log-density per row is :meth:`log_likelihood` plus :meth:`log_multinomial_coefficient`
          (the same variable as the aspect model's, so ``az.compare`` can set the two side by side);
        * ``row_marginal``, a ``pm.Potential`` holding ``log Multinomial(n_. | L, p_.)`` of the row
          totals, which turns the conditional model into the joint one that EM fits.

        ``pi`` is declared as ``pi_flat ~ Dir(alpha)`` over the ``Kx*Ky`` pairs (dims
        ``cluster_pair``, C order) with the deterministic ``pi`` (``row_cluster``, ``col_cluster``)
        its ``Kx x Ky`` view; ``p_row`` (``row_cluster``, ``doc``) and ``q_col`` (``col_cluster``,
        ``word``) are Dirichlet along their last axis. ``temperature = T`` tempers the whole
        likelihood by ``1/T``, which then enters as the single ``pm.Potential``
        ``tempered_loglik`` (no observed variable), as for :meth:`AspectModel.pymc_model`.
        Start values (``initvals``) name ``pi_flat``: ``{"pi_flat": pi.ravel(), ...}``.

        Parameters
        ----------
        data : CoOccurrence
        temperature : float

        Returns
        -------
        pymc.Model

        Examples
        --------
        >>> from latentzoo.data import load
        >>> m = ProductSpaceMixture(2, 2).pymc_model(load("toy"))
        >>> sorted(m.named_vars)
        ['counts', 'p_row', 'pi', 'pi_flat', 'q_col', 'row_marginal']
        """
        import pymc as pm

        data = self.check_data(data)
        check_positive("temperature", temperature)
        n, m = data.n_rows, data.n_cols
        kx, ky = self.n_row_clusters, self.n_col_clusters
        coords = {
            "doc": list(data.row_labels),
            "word": list(data.col_labels),
            "row_cluster": np.arange(kx),
            "col_cluster": np.arange(ky),
            "cluster_pair": np.arange(kx * ky),
        }
        counts = data.toarray()
        row_totals = data.row_totals
        with pm.Model(coords=coords) as model:
            pi_flat = pm.Dirichlet("pi_flat", a=np.full(kx * ky, self.alpha), dims="cluster_pair")
            pi = pm.Deterministic(
                "pi", pi_flat.reshape((kx, ky)), dims=("row_cluster", "col_cluster")
            )
            p_row = pm.Dirichlet("p_row", a=np.full((kx, n), self.eta), dims=("row_cluster", "doc"))
            q_col = pm.Dirichlet(
                "q_col", a=np.full((ky, m), self.eta), dims=("col_cluster", "word")
            )
            joint = p_row.T @ pi @ q_col  # eq. (16), N x M
            p_i = joint.sum(axis=1)
            conditional = joint / p_i[:, None]
            # int64, not a Python int: pytensor would make it int8 and its log-factorial float32.
            marginal = pm.Multinomial.dist(n=np.int64(data.total), p=p_i)
            if temperature == 1.0:
                pm.Multinomial(
                    "counts", n=row_totals, p=conditional, observed=counts, dims=("doc", "word")
                )
                pm.Potential("row_marginal", pm.logp(marginal, row_totals))
            else:
                rows = pm.Multinomial.dist(n=row_totals, p=conditional)
                loglik = pm.logp(rows, counts).sum() + pm.logp(marginal, row_totals)
                pm.Potential("tempered_loglik", loglik / temperature)
        return model

    # --------------------------------------------------------------- simulator
    def simulate(
        self,
        random_state=None,
        n_docs: int = 30,
        n_words: int = 60,
        n_tokens: int | None = None,
        separated: bool = False,
        separation: float = 0.9,
    ):
        """Draw co-occurrence data from the generative process of eq. (16) (seed section 2.4).

        ``pi ~ Dir(alpha)`` over the ``Kx*Ky`` pairs, ``p_row[nu] ~ Dir(eta)``,
        ``q_col[mu] ~ Dir(eta)``, then ``n_tokens`` pairs i.i.d. from ``p_ij``: draw a class pair
        ``(nu, mu)`` from ``pi``, a row from ``p_{.|nu}`` and a column from ``q_{.|mu}``, i.e.
        ``counts ~ Multinomial(n_tokens, p)``. Row totals are random (a row may get no pair).

        With ``separated=True`` the clusters are instead well separated: row cluster ``nu`` puts
        mass ``separation`` uniformly on its block of ``n_docs // Kx`` rows and the rest uniformly
        on all rows, column clusters likewise on blocks of ``n_words // Ky`` columns, and ``pi``
        puts mass ``separation`` uniformly on the pairs with ``nu mod Ky == mu mod Kx`` (the
        diagonal when ``Kx == Ky``; every cluster takes part) and the rest uniformly. Not a draw
        from the prior, so not for SBC.

        Parameters
        ----------
        random_state : int, Generator or None
        n_docs, n_words : int
            ``N`` and ``M``; at least ``Kx`` and ``Ky``.
        n_tokens : int, optional
            ``L``, the number of pairs (default ``200 * n_docs``).
        separated : bool
        separation : float in (0, 1)

        Returns
        -------
        data : CoOccurrence
        truth : dict with ``pi`` (Kx x Ky), ``p_row`` (Kx x N) and ``q_col`` (Ky x M)

        Examples
        --------
        >>> data, truth = ProductSpaceMixture(2).simulate(1, n_docs=4, n_words=6, n_tokens=40)
        >>> data.total
        40
        """
        rng = np.random.default_rng(random_state)
        kx, ky = self.n_row_clusters, self.n_col_clusters
        if n_docs < kx:
            raise ValueError(f"n_docs={n_docs} must be at least n_row_clusters={kx}")
        if n_words < ky:
            raise ValueError(f"n_words={n_words} must be at least n_col_clusters={ky}")
        n_tokens = 200 * n_docs if n_tokens is None else n_tokens
        check_integer("n_tokens", n_tokens)
        if separated:
            if not 0 < separation < 1:
                raise ValueError(f"separation must lie in (0, 1), got {separation!r}")
            nu, mu = np.arange(kx)[:, None], np.arange(ky)[None, :]
            pattern = (nu % ky == mu % kx).astype(float)
            pi = (1.0 - separation) / (kx * ky) + separation * pattern / pattern.sum()
            p_row = _block_conditionals(kx, n_docs, separation)
            q_col = _block_conditionals(ky, n_words, separation)
        else:
            pi = rng.dirichlet(np.full(kx * ky, self.alpha)).reshape(kx, ky)
            p_row = rng.dirichlet(np.full(n_docs, self.eta), size=kx)
            q_col = rng.dirichlet(np.full(n_words, self.eta), size=ky)
        joint = np.clip(p_row.T @ pi @ q_col, 0.0, None).ravel()
        counts = rng.multinomial(n_tokens, joint / joint.sum()).reshape(n_docs, n_words)
        return CoOccurrence(counts), {"pi": pi, "p_row": p_row, "q_col": q_col}

    # ---------------------------------------------------------- likelihoods
    def _cell_probabilities(self, params, data):
        """``(rows, counts, p_ij, p_i)`` on the non-zero cells of ``data``."""
        pi, p_row, q_col = self._unpack(params)
        weights = p_row.T @ pi  # (N, Ky): sum_nu p_{i|nu} pi[nu, mu]
        p_i = weights @ q_col.sum(axis=1)
        rows, cols, counts = data.cells()
        joint = np.einsum("nk,kn->n", weights[rows], q_col[:, cols])
        return rows, counts, joint, p_i

    def log_likelihood(self, params, data) -> np.ndarray:
        """Conditional log-likelihood per row, ``sum_j n_ij log P(y_j | x_i)``, eq. (16).

        ``P(y_j | x_i) = p_ij / p_i``: the probability of the column given the row, as for
        :meth:`AspectModel.log_likelihood` (whose perplexities it is comparable with; the
        multinomial coefficient is left out). Rows without observations contribute 0; an observed
        row with ``p_i = 0`` gets ``-inf``.

        Parameters
        ----------
        params : dict with ``pi`` (Kx x Ky), ``p_row`` (Kx x N) and ``q_col`` (Ky x M)
        data : CoOccurrence

        Returns
        -------
        numpy.ndarray of shape (N,)

        Examples
        --------
        >>> data, truth = ProductSpaceMixture(2).simulate(0, n_docs=3, n_words=5, n_tokens=20)
        >>> ll = ProductSpaceMixture(2).log_likelihood(truth, data)
        >>> ll.shape, bool(np.all(ll <= 0))
        ((3,), True)
        """
        rows, counts, joint, p_i = self._cell_probabilities(params, data)
        denominator = p_i[rows]
        with np.errstate(divide="ignore", invalid="ignore"):
            conditional = np.where(denominator > 0, joint / denominator, 0.0)
            terms = counts * np.log(conditional)
        return np.bincount(rows, weights=terms, minlength=data.n_rows)

    def joint_log_likelihood(self, params, data) -> np.ndarray:
        """Joint log-likelihood per row, ``sum_j n_ij log p_ij`` (eq. (2) with (16)).

        The objective of EM; equal to :meth:`log_likelihood` plus ``n_i log p_i``.

        Examples
        --------
        >>> model = ProductSpaceMixture(2)
        >>> data, truth = model.simulate(0, n_docs=3, n_words=5, n_tokens=20)
        >>> gap = model.joint_log_likelihood(truth, data) - model.log_likelihood(truth, data)
        >>> p_i = (truth["p_row"].T @ truth["pi"]).sum(axis=1)
        >>> bool(np.allclose(gap, data.row_totals * np.log(p_i)))
        True
        """
        rows, counts, joint, _ = self._cell_probabilities(params, data)
        with np.errstate(divide="ignore"):
            terms = counts * np.log(joint)
        return np.bincount(rows, weights=terms, minlength=data.n_rows)

    log_multinomial_coefficient = AspectModel.log_multinomial_coefficient

    def aspect_params(self, params) -> dict[str, np.ndarray]:
        """The conditional model as aspect-model parameters with ``K = Ky`` aspects.

        ``P(y_j | x_i) = sum_mu theta[i, mu] q_{j|mu}`` with ``theta[i] ∝ p_row[:, i] @ pi`` and
        ``phi = q_col``; rows with ``p_i = 0`` get a uniform ``theta[i]``.

        Examples
        --------
        >>> model = ProductSpaceMixture(2, 3)
        >>> data, truth = model.simulate(0, n_docs=4, n_words=6, n_tokens=30)
        >>> aspect = model.aspect_params(truth)
        >>> ll = AspectModel(3).log_likelihood(aspect, data)
        >>> bool(np.allclose(ll, model.log_likelihood(truth, data)))
        True
        """
        pi, p_row, q_col = self._unpack(params)
        weights = p_row.T @ pi
        totals = weights.sum(axis=1, keepdims=True)
        with np.errstate(invalid="ignore", divide="ignore"):
            theta = np.where(totals > 0, weights / totals, 1.0 / weights.shape[1])
        return {"theta": theta, "phi": q_col.copy()}

    def predictive(self, params, dyads) -> np.ndarray:
        """``P(y_j | x_i)`` for the given dyads (rows of ``(i, j)``)."""
        dyads = np.asarray(dyads, dtype=np.int64)
        pi, p_row, q_col = self._unpack(params)
        weights = p_row[:, dyads[:, 0]].T @ pi  # (n, Ky)
        p_i = weights @ q_col.sum(axis=1)
        joint = np.einsum("nk,kn->n", weights, q_col[:, dyads[:, 1]])
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.where(p_i > 0, joint / p_i, 0.0)

    def conditional(self, params) -> np.ndarray:
        """The dense ``N x M`` matrix ``P(y_j | x_i)`` (small data only)."""
        pi, p_row, q_col = self._unpack(params)
        joint = p_row.T @ pi @ q_col
        totals = joint.sum(axis=1, keepdims=True)
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.where(totals > 0, joint / totals, 1.0 / joint.shape[1])

    def invariants(self, params, data, dyads=None) -> dict[str, np.ndarray]:
        """Label-invariant quantities through which every method is compared.

        ``loglik``: total conditional log-likelihood of ``data`` (scalar); ``p_dyad``:
        ``P(y_j | x_i)`` on the dyads of :func:`default_dyads` (or the given ones). Both are
        unchanged by permuting the row clusters or the column clusters.

        Examples
        --------
        >>> model = ProductSpaceMixture(2, 2)
        >>> data, truth = model.simulate(0, n_docs=4, n_words=6, n_tokens=30)
        >>> sorted(model.invariants(truth, data))
        ['loglik', 'p_dyad']
        """
        if dyads is None:
            dyads = default_dyads(data)
        return {
            "loglik": np.asarray(self.log_likelihood(params, data).sum()),
            "p_dyad": self.predictive(params, dyads),
        }

    def log_prior(self, params) -> float:
        """Log density of the Dirichlet priors (with normalising constants)."""
        pi, p_row, q_col = self._unpack(params)
        return (
            dirichlet_logpdf(pi.reshape(1, -1), self.alpha)
            + dirichlet_logpdf(p_row, self.eta)
            + dirichlet_logpdf(q_col, self.eta)
        )


def _block_conditionals(n_clusters, size, separation):
    """Rows of a ``n_clusters x size`` table: mass ``separation`` on the cluster's own block."""
    block = size // n_clusters
    table = np.full((n_clusters, size), (1.0 - separation) / size)
    for cluster in range(n_clusters):
        table[cluster, cluster * block : (cluster + 1) * block] += separation / block
    return table / table.sum(axis=1, keepdims=True)
