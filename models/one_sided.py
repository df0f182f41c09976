"""The asymmetric clustering model (ACM, one-sided clustering): a Dirichlet-multinomial mixture.

Hofmann & Puzicha (1998), sections 3.1-3.2, eq. (20)-(32); Hofmann, Puzicha & Jordan (1999), section
2.2, eq. (5)-(7). Every row object ``x_i`` (a document) belongs to exactly one cluster ``z_i``, and
all of its observations are drawn from that cluster's column distribution:

.. math::

    z_i \\sim \\mathrm{Cat}(\\rho), \\qquad
    n_{i\\cdot} \\mid z_i = k \\sim \\mathrm{Mult}(n_i, q_k), \\qquad
    P(\\mathcal{S}_i) = \\sum_{k=1}^{K} \\rho_k \\prod_{j=1}^{M} q_{kj}^{n_{ij}},

(eq. (27)-(29); ``rho`` is the seed's mixing prior of the hidden memberships ``I_{i alpha}``,
``q[k]`` its class-conditional ``q_{j|alpha}``). Unlike the aspect model, the observations of one
row are coupled through the shared ``z_i``: the likelihood of a row is a *product* over its tokens
inside the sum over clusters, so everything is computed in log space (a row of a few thousand tokens
has a probability far below the smallest double).

The Bayesian form puts symmetric Dirichlet priors ``rho ~ Dir(alpha)`` and ``q[k] ~ Dir(eta)`` on
the parameters (``beta`` is reserved for the inverse computational temperature of annealed EM, seed
section 5.1). The row marginals ``p_i`` of eq. (20)-(22) are estimated independently as ``n_i / L``
and are conditioned on throughout (left out of every likelihood), as for the aspect model.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from latentzoo.data import CoOccurrence
from latentzoo.models._checks import (
    check_data_shape,
    check_fits_data,
    check_integer,
    check_label_range,
    check_positive,
    check_simplex_rows,
)
from latentzoo.models._kernels import cell_dots, one_hot
from latentzoo.models.base import LikelihoodModel, RowClustering
from latentzoo.models.conjugate import (
    dirichlet_multinomial_log,
    row_logsumexp,
)
from latentzoo.models.cooccurrence import (
    CorpusSimulator,
    RowMixture,
    draw_row_mixture,
    simulated_corpus,
)
from latentzoo.models.invariants import N_PAIR_ITEMS, coassignment_pairs, default_dyads

__all__ = [
    "OneSidedClustering",
    "default_pairs",
    "row_logsumexp",
]


def default_pairs(data: CoOccurrence, n_rows: int = N_PAIR_ITEMS) -> np.ndarray:
    """The row pairs ``(i, i')`` whose co-assignment probabilities are compared across methods.

    :func:`~latentzoo.models.invariants.coassignment_pairs` of the row totals: every pair ``i < i'``
    when the data have at most 20 rows, otherwise all pairs among the ``n_rows`` rows with the most
    observations (ties broken by position).

    Parameters
    ----------
    data : CoOccurrence
    n_rows : int
        Rows used when the data have more than 20 rows.

    Returns
    -------
    numpy.ndarray of shape (n, 2), int64, with ``pairs[:, 0] < pairs[:, 1]``

    Examples
    --------
    >>> from latentzoo.data import load
    >>> default_pairs(load("toy")).shape  # 6 rows: all 15 pairs
    (15, 2)
    """
    return coassignment_pairs(data.row_totals, n_rows)


@dataclass(frozen=True)
class OneSidedClustering(RowMixture, RowClustering, CorpusSimulator):
    """Asymmetric clustering model with Dirichlet priors (Hofmann & Puzicha 1998, eq. (27)-(29)).

    Parameters
    ----------
    n_components : int
        Number of clusters ``K`` of the row objects (also readable as ``n_clusters``; the zoo
        calls the main size of every single-size family ``n_components``).
    alpha : float
        Symmetric Dirichlet concentration of the mixing weights ``rho``.
    eta : float
        Symmetric Dirichlet concentration of each cluster's column distribution ``q[k]``. The
        defaults (1.1, 1.01) make the MAP estimate of annealed EM a lightly smoothed maximum
        likelihood (``alpha - 1``, ``eta - 1`` act as pseudo-counts, so a word unseen in a cluster
        keeps a non-zero probability); ``alpha = eta = 1`` is plain maximum likelihood, eq. (24),
        (31).

    Examples
    --------
    >>> from latentzoo.models.one_sided import OneSidedClustering
    >>> model = OneSidedClustering(n_components=2)
    >>> data, truth = model.simulate(0, n_docs=5, n_words=12, doc_length=20)
    >>> model.log_likelihood(truth, data).shape
    (5,)
    """

    n_components: int
    alpha: float = 1.1
    eta: float = 1.01

    name = "one_sided"
    data_type = CoOccurrence
    protocol = LikelihoodModel
    p_dyad_formula = (
        "sum_k <I_ik> q[k, j], with <I_ik> the probability that row i is in cluster k given the "
        "draw's (rho, q) and all of row i's training counts (eq. (32) without p_i)"
    )
    """``p_dyad`` (the predictive ``P(y_j | x_i)`` of a tracked dyad) at one draw, in words."""
    param_names = ("rho", "q")
    invariant_names = ("loglik", "p_dyad", "coassign")
    invariant_dims = {"p_dyad": ["dyad"], "coassign": ["pair"]}

    @property
    def n_clusters(self) -> int:
        """The number of clusters ``K``: ``n_components``, the zoo's name for the main size."""
        return self.n_components

    def __post_init__(self):
        check_integer("n_components", self.n_components)
        check_positive("alpha", self.alpha)
        check_positive("eta", self.eta)

    # ------------------------------------------------------------------ checks
    def check_data(self, data) -> CoOccurrence:
        """Validate ``data`` for this model and return it as a :class:`CoOccurrence`.

        Raises ``ValueError`` (from :class:`CoOccurrence`) for NaN, infinite, negative or fractional
        counts, and when ``K`` exceeds what the data can identify: more clusters than rows or than
        observations.

        Examples
        --------
        >>> from latentzoo.data import load
        >>> OneSidedClustering(2).check_data(load("toy")).shape
        (6, 8)
        >>> OneSidedClustering(7).check_data(load("toy"))
        Traceback (most recent call last):
        ...
        ValueError: n_components=7 is larger than the data supports: only 6 rows
        """
        data = CoOccurrence.coerce(data)
        check_fits_data("n_components", self.n_components, data.n_rows, "rows")
        check_fits_data("n_components", self.n_components, data.total, "observations")
        return data

    def check_params(self, params, data: CoOccurrence):
        """Check shapes and simplex constraints of ``params = {"rho", "q"}``; return them.

        Examples
        --------
        >>> from latentzoo.data import load
        >>> rho, q = OneSidedClustering(1).check_params(
        ...     {"rho": [1.0], "q": np.full((1, 8), 1 / 8)}, load("toy"))
        >>> q.shape
        (1, 8)
        """
        rho = np.asarray(params["rho"], dtype=float)
        q = np.asarray(params["q"], dtype=float)
        k = self.n_clusters
        if rho.shape != (k,):
            raise ValueError(f"rho has shape {rho.shape}, expected {(k,)}")
        if q.shape != (k, data.n_cols):
            raise ValueError(f"q has shape {q.shape}, expected {(k, data.n_cols)}")
        check_simplex_rows("rho", rho[None])
        check_simplex_rows("q", q)
        return rho, q

    # --------------------------------------------------------------- reference
    dims = {
        "rho": ["cluster"],
        "q": ["cluster", "word"],
        "z": ["doc"],
        "p_dyad": ["dyad"],
        "coassign": ["pair"],
        "counts": ["doc"],
    }
    """Dimensions of the variables, shared by the PyMC declaration and the fast samplers."""

    estimate_dims = {"resp": ["doc", "cluster"]}
    """Dimensions of the point estimates' parameters that are not in ``dims`` (the EM's
    responsibilities), used when an :class:`~latentzoo.inference.EMResult` is saved."""

    def coords(self, data) -> dict:
        """ArviZ/PyMC coordinates: documents, words, clusters, the compared dyads and row pairs.

        Examples
        --------
        >>> from latentzoo.data import load
        >>> sorted(OneSidedClustering(2).coords(load("toy")))
        ['cluster', 'doc', 'dyad', 'pair', 'word']
        """
        return {
            "doc": list(data.row_labels),
            "word": list(data.col_labels),
            "cluster": np.arange(self.n_components),
            "dyad": np.arange(len(default_dyads(data))),
            "pair": np.arange(len(default_pairs(data))),
        }

    def pymc_model(self, data, temperature: float = 1.0):
        """The PyMC reference declaration, cluster indicators marginalised.

        The likelihood enters as one ``pm.Potential`` named ``"marginal_loglik"``,
        ``(1/T) sum_i logsumexp_k (log rho_k + sum_j n_ij log q_kj)`` (eq. (29)), measured 5.5x
        cheaper per gradient than ``pm.Mixture`` of multinomials. The multinomial coefficients
        ``log(n_i! / prod_j n_ij!)`` are **left out** (a constant; see
        :meth:`log_multinomial_coefficient`), so the model's log density is exactly
        ``log_likelihood(params, data).sum() / T + log_prior(params)``. ``temperature = T``
        tempers the likelihood to the power ``1/T`` (the power posterior of seed eq. (65)). Being a
        potential, the likelihood produces no ``log_likelihood`` group; the fast samplers add one.

        Parameters
        ----------
        data : CoOccurrence
            The documents to cluster, as counts of their words.
        temperature : float

        Returns
        -------
        pymc.Model
            Free variables ``rho`` (cluster) and ``q`` (cluster, word); the memberships are
            marginalised.

        Examples
        --------
        >>> from latentzoo.data import load
        >>> m = OneSidedClustering(2).pymc_model(load("toy"))
        >>> sorted(m.named_vars)
        ['marginal_loglik', 'q', 'rho']
        """
        import pymc as pm
        import pytensor.tensor as pt

        data = self.check_data(data)
        check_positive("temperature", temperature)
        m, k = data.n_cols, self.n_clusters
        counts = data.toarray().astype(float)
        with pm.Model(coords=self.coords(data)) as model:
            rho = pm.Dirichlet("rho", a=np.full(k, self.alpha), dims="cluster")
            q = pm.Dirichlet("q", a=np.full((k, m), self.eta), dims=("cluster", "word"))
            # Dense product: q is strictly inside the simplex under PyMC's transform, so 0 * log q
            # never meets log(0).
            per_cluster = pt.dot(counts, pt.log(q).T) + pt.log(rho)[None, :]
            loglik = pm.math.logsumexp(per_cluster, axis=1).sum()
            pm.Potential("marginal_loglik", loglik / temperature)
        return model

    # --------------------------------------------------------------- simulator
    simulation_sizes = {"n_docs": 30, "n_words": 60, "doc_length": 200}

    def _draw(self, rng, separated, separation, n_docs, n_words, doc_length):
        """Draw data from the generative process (seed 000, eq. (27)-(28); seed 001, eq. (5)).

        ``rho ~ Dir(alpha)``, ``q[k] ~ Dir(eta)``, ``z_i ~ Cat(rho)`` and the ``doc_length`` tokens
        of row ``i`` from ``Mult(doc_length, q[z_i])``. With ``separated=True`` the clusters are
        instead well separated and balanced: cluster ``k`` puts mass ``separation`` uniformly on its
        own block of ``n_words // K`` words and the rest uniformly on all words, ``rho`` is uniform
        and the rows are dealt to the clusters in turn, then shuffled.

        Returns
        -------
        data : CoOccurrence
        truth : dict with ``rho`` (K,), ``q`` (K x M) and ``z`` (N,) int64

        Examples
        --------
        >>> data, truth = OneSidedClustering(2).simulate(1, n_docs=4, n_words=6, doc_length=10)
        >>> data.total, truth["z"].shape
        (40, (4,))
        """
        k = self.n_clusters
        rho, q, z = draw_row_mixture(
            rng, k, k, n_docs, n_words, doc_length, self.alpha, self.eta, separated, separation
        )
        counts = rng.multinomial(doc_length, q[z])
        return simulated_corpus(counts), {"rho": rho, "q": q, "z": z}

    # ---------------------------------------------------------- likelihoods
    def _per_cluster(self, params, data) -> np.ndarray:
        """``sum_j n_ij log q_kj`` for every row and cluster (N x K): one sparse-dense product."""
        with np.errstate(divide="ignore"):
            log_q = np.log(np.asarray(params["q"], dtype=float))
        # The sparse product touches only n_ij > 0, so log q_kj = -inf at unobserved cells is
        # harmless.
        return np.asarray(data.counts @ log_q.T)

    def _check_fit_shape(self, params, data, name="data"):
        check_data_shape(name, data.shape, (None, np.shape(params["q"])[-1]))

    def heldout_cell_probabilities(self, params, test, train=None) -> np.ndarray:
        """``P(y_j | x_i) = sum_nu <I_i nu> q_{j|nu}`` of one draw on the non-zero cells of
        ``test`` (CSR order; Hofmann & Puzicha 1998, eq. (32)).

        The memberships are the draw's (or estimate's) ``resp``, else its assignments ``z`` (one
        hot: averaged over draws, ``E[q_{z_i j} | data]``), else the cluster posterior of each
        training row computed from ``rho``, ``q`` and ``train``.

        Examples
        --------
        >>> from latentzoo.data import CoOccurrence
        >>> params = {"q": [[0.5, 0.5], [0.9, 0.1]], "z": [1]}
        >>> OneSidedClustering(2).heldout_cell_probabilities(params, CoOccurrence([[1, 1]])).tolist()
        [0.9, 0.1]
        """
        csr = test.counts
        indptr, indices = csr.indptr.astype(np.int64), csr.indices.astype(np.int64)
        q = np.asarray(params["q"], dtype=float)
        if "resp" in params:
            resp = np.asarray(params["resp"], dtype=float)
        elif "z" in params:
            # The draw's own memberships: averaged over draws, E[q_{z_i j} | data].
            resp = one_hot(np.asarray(params["z"], dtype=np.int64), q.shape[0])
        elif train is not None:
            resp = self.responsibilities(params, train)
        else:
            raise ValueError(
                "the sample holds rho and q but no memberships z: pass train=, the training data, "
                "so each row's cluster posterior can be computed"
            )
        return cell_dots(indptr, indices, np.ascontiguousarray(resp), np.ascontiguousarray(q.T))

    def _dyad_predictive(self, params, resp_rows, rows, cols) -> np.ndarray:
        """``sum_k <I_ik> q_kj`` for cells ``(rows, cols)`` given the memberships of their rows
        (eq. (32) without ``p_i``): the family's part of :meth:`predictive` and
        :meth:`heldout_log_likelihood`."""
        q = np.asarray(params["q"], dtype=float)
        return np.einsum("nk,kn->n", resp_rows, q[:, cols])

    def invariants(self, params, data, dyads=None, pairs=None) -> dict[str, np.ndarray]:
        """Label-invariant quantities through which every method is compared.

        ``loglik``: total log-likelihood of ``data`` (scalar); ``p_dyad``: the predictive
        ``P(y_j | x_i, S_i)`` of eq. (32) on the dyads of
        :func:`~latentzoo.models.aspect.default_dyads`; ``coassign``: the probability that rows
        ``i`` and ``i'`` share a cluster, ``sum_k <I_ik> <I_i'k>``, on the pairs of
        :func:`default_pairs`. The memberships are the exact conditional posteriors given
        ``(rho, q)`` and ``data`` (independent across rows), so the posterior mean of ``coassign``
        is ``P(z_i = z_i' | data)``. All three are unchanged by permuting the clusters.

        Examples
        --------
        >>> model = OneSidedClustering(2)
        >>> data, truth = model.simulate(0, n_docs=3, n_words=5, doc_length=8)
        >>> inv = model.invariants(truth, data)
        >>> sorted(inv), inv["coassign"].shape
        (['coassign', 'loglik', 'p_dyad'], (3,))
        """
        return self.evaluate(params, data, dyads, pairs)[1]

    # ---------------------------------------------------------- collapsed
    def collapsed_log_joint(self, assignments, data) -> np.ndarray:
        """Exact ``log p(z, S)`` with ``rho`` and ``q`` integrated out, for many ``z`` at once.

        ``DM(cluster sizes | alpha) * prod_k DM(word counts of cluster k | eta)``, both in sequence
        form (the probability of the labelled sequence, no multinomial coefficients):

        .. math::

            \\frac{\\Gamma(K\\alpha)}{\\Gamma(N + K\\alpha)} \\prod_k
            \\frac{\\Gamma(m_k + \\alpha)}{\\Gamma(\\alpha)} \\;
            \\prod_k \\frac{\\Gamma(M\\eta)}{\\Gamma(c_k + M\\eta)} \\prod_j
            \\frac{\\Gamma(c_{kj} + \\eta)}{\\Gamma(\\eta)},

        with ``m_k`` the number of rows in cluster ``k`` and ``c_kj`` their summed counts. Used to
        enumerate the exact posterior over all ``K**N`` assignments of tiny data sets. The
        vocabulary size ``M`` is ``data.n_cols`` (unobserved columns included).

        Parameters
        ----------
        assignments : int array (S, N) (or (N,)) of cluster labels, one column per row of ``data``
        data : CoOccurrence

        Returns
        -------
        numpy.ndarray of shape (S,)

        Examples
        --------
        >>> import itertools
        >>> states = np.array(list(itertools.product(range(2), repeat=3)))  # all 2**3 labellings
        >>> data = CoOccurrence([[2, 0], [0, 1], [1, 1]])
        >>> lp = OneSidedClustering(2).collapsed_log_joint(states, data)
        >>> lp.shape, bool(lp[0] == lp[-1])  # relabelling all rows leaves it unchanged
        ((8,), True)
        """
        z = np.atleast_2d(np.asarray(assignments))
        k = self.n_clusters
        n_states, n_rows = z.shape
        if n_rows != data.n_rows:
            raise ValueError(f"assignments have {n_rows} columns, expected {data.n_rows} (rows)")
        check_label_range("assignments", z, k)
        onehot = np.zeros((n_rows, n_states, k))
        onehot[np.arange(n_rows)[None, :], np.arange(n_states)[:, None], z] = 1.0
        sizes = onehot.sum(axis=0)  # (S, K)
        # c[s, k, j] = sum_i [z_si = k] n_ij, one sparse-dense product for all states.
        words = np.asarray(data.counts.T @ onehot.reshape(n_rows, n_states * k))
        words = words.reshape(data.n_cols, n_states, k).transpose(1, 2, 0)
        return dirichlet_multinomial_log(sizes[:, None, :], self.alpha) + (
            dirichlet_multinomial_log(words, self.eta)
        )
