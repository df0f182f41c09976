"""The product-space mixture model (PMM) of Hofmann & Puzicha (1998), section 2.4, eq. (15)-(19).

The aspect model whose aspects are constrained to pairs of a row cluster and a column cluster:
``P(x_i, y_j) = sum_{nu, mu} pi[nu, mu] p_row[nu, i] q_col[mu, j]``. Its fast annealed EM is in
:mod:`latentzoo.inference.product_space`.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from latentzoo.data import CoOccurrence
from latentzoo.data.checks import check_memory
from latentzoo.models._checks import (
    check_data_shape,
    check_integer,
    check_nonnegative,
    check_positive,
    check_table,
)
from latentzoo.models._kernels import NO_ROW_NORM, cell_dots, row_log_likelihoods
from latentzoo.models.base import CorpusFamily, LikelihoodHeldout, LikelihoodModel, TwoSidedLabels
from latentzoo.models.conjugate import (
    dirichlet_logpdf,
)
from latentzoo.models.cooccurrence import (
    CorpusSimulator,
    DyadPredictive,
    checked_grid_data,
    draw_counts,
    draw_profiles,
    grid_coords,
)

__all__ = ["ProductSpaceMixture"]


@dataclass(frozen=True)
class ProductSpaceMixture(DyadPredictive, CorpusFamily, LikelihoodHeldout, CorpusSimulator):
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
    >>> from latentzoo.models.product_space import ProductSpaceMixture
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
    data_type = CoOccurrence
    protocol = LikelihoodModel
    p_dyad_formula = (
        "sum_b w_b q_col[b, j] / sum_b w_b with w_b = sum_a p_row[a, i] pi[a, b]: the joint "
        "probability of (i, j) divided by that of row i"
    )
    """``p_dyad`` (the predictive ``P(y_j | x_i)`` of a tracked dyad) at one draw, in words."""
    param_names = ("pi", "p_row", "q_col")
    count_dims = ("row", "col")  # the posterior predictive's names of the counts' dims
    invariant_names = ("loglik", "p_dyad")

    def __post_init__(self):
        check_integer("n_row_clusters", self.n_row_clusters)
        if self.n_col_clusters is None:
            object.__setattr__(self, "n_col_clusters", self.n_row_clusters)
        check_integer("n_col_clusters", self.n_col_clusters)
        check_positive("alpha", self.alpha)
        check_positive("eta", self.eta)

    dims = {
        "pi": ["row_cluster", "col_cluster"],
        "p_row": ["row_cluster", "row"],
        "q_col": ["col_cluster", "col"],
        "p_dyad": ["dyad"],
    }
    """Dimensions of the parameters (``pi`` as the ``Kx x Ky`` matrix) and invariants."""

    def coords(self, data) -> dict:
        """ArviZ coordinates: rows, columns, both cluster sets and the compared dyads.

        Examples
        --------
        >>> from latentzoo.data import load
        >>> sorted(ProductSpaceMixture(2, 3).coords(load("toy")))
        ['col', 'col_cluster', 'dyad', 'row', 'row_cluster']
        """
        return grid_coords(data, self.n_row_clusters, self.n_col_clusters)

    @property
    def n_classes(self) -> int:
        """``K = Kx * Ky``, the number of aspects of the constrained SMM (eq. (15))."""
        return int(self.n_row_clusters) * int(self.n_col_clusters)

    def sizes_label(self) -> str:
        """The model's cluster numbers as reports print them (``K=...``): row and column classes, ``Kx x Ky``.

        Examples
        --------
        >>> ProductSpaceMixture(2, 3).sizes_label()
        '2x3'
        """
        return f"{self.n_row_clusters}x{self.n_col_clusters}"

    # ------------------------------------------------------------------ checks
    def check_data(self, data) -> CoOccurrence:
        """Validate ``data`` for this model and return it as a :class:`CoOccurrence`.

        Raises ``ValueError`` when a number of clusters exceeds what the data can identify: more
        row clusters than rows, more column clusters than columns, or more classes ``Kx*Ky`` than
        observations.

        Examples
        --------
        >>> ProductSpaceMixture(2, 2).check_data([[1, 0], [0, 2]])
        Traceback (most recent call last):
        ...
        ValueError: n_row_clusters * n_col_clusters = 4 classes is larger than the data supports: only 3 observations
        """
        data = checked_grid_data(data, self.n_row_clusters, self.n_col_clusters)
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
            check_nonnegative(name, arr)
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
            The counts, clustered on both sides.
        temperature : float

        Returns
        -------
        pymc.Model
            Free variables ``pi_flat`` (the cluster-pair weights) and the row and column profiles.

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
        check_memory(
            5 * 8 * n * m,
            "the PyMC reference declaration of the product-space mixture",
            detail=f"at least, for dense {n} x {m} arrays (counts, joint and conditional "
            "probabilities, their log and gradient)",
            hint="PyMC references are for small data; use annealed_em on large data",
        )
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
    simulation_sizes = {"n_docs": 30, "n_words": 60, "n_tokens": None}

    def _draw(self, rng, separated, separation, n_docs, n_words, n_tokens):
        """Draw co-occurrence data from the generative process of eq. (16) (seed section 2.4).

        ``pi ~ Dir(alpha)`` over the ``Kx*Ky`` pairs, ``p_row[nu] ~ Dir(eta)``,
        ``q_col[mu] ~ Dir(eta)``, then ``n_tokens`` pairs i.i.d. from ``p_ij``: draw a class pair
        ``(nu, mu)`` from ``pi``, a row from ``p_{.|nu}`` and a column from ``q_{.|mu}``, i.e.
        ``counts ~ Multinomial(n_tokens, p)``. Row totals are random (a row may get no pair).
        ``n_docs`` and ``n_words`` (``N`` and ``M``) must be at least ``Kx`` and ``Ky``;
        ``n_tokens`` (``L``) defaults to ``200 * n_docs``.

        With ``separated=True`` the clusters are instead well separated: row cluster ``nu`` puts
        mass ``separation`` uniformly on its block of ``n_docs // Kx`` rows and the rest uniformly
        on all rows, column clusters likewise on blocks of ``n_words // Ky`` columns, and ``pi``
        puts mass ``separation`` uniformly on the pairs with ``nu mod Ky == mu mod Kx`` (the
        diagonal when ``Kx == Ky``; every cluster takes part) and the rest uniformly; ``separation``
        must lie in (0, 1).

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
        else:
            pi = rng.dirichlet(np.full(kx * ky, self.alpha)).reshape(kx, ky)
        p_row = draw_profiles(rng, kx, n_docs, self.eta, separated, separation)
        q_col = draw_profiles(rng, ky, n_words, self.eta, separated, separation)
        joint = (p_row.T @ pi @ q_col).ravel()
        counts = draw_counts(rng, n_tokens, joint).reshape(n_docs, n_words)
        return CoOccurrence(counts), {"pi": pi, "p_row": p_row, "q_col": q_col}

    # ---------------------------------------------------------- likelihoods
    def _row_log_likelihoods(self, params, data, conditional: bool, name="data") -> np.ndarray:
        """Per-row ``sum_j n_ij log p_ij`` (joint) or ``log(p_ij / p_i)`` (conditional), fused.

        ``p_ij = sum_mu w[i, mu] q_col[mu, j]`` with ``w = p_row.T @ pi`` (``N x Ky``), summed by
        :func:`~latentzoo.models._kernels.row_log_likelihoods` on the non-zeros only: no
        ``nnz x Ky`` array is formed.
        """
        pi, p_row, q_col = self._unpack(params)
        if pi.ndim != 2:
            expected = (self.n_row_clusters, self.n_col_clusters)
            raise ValueError(f"pi has shape {pi.shape}, expected {expected}")
        kx, ky = pi.shape
        if name == "test" and p_row.ndim == 2 and q_col.ndim == 2:
            check_data_shape(
                name, data.shape, (p_row.shape[1], q_col.shape[1]), ("rows", "columns")
            )
        p_row = check_table("p_row", p_row, (kx, data.n_rows))
        q_col = check_table("q_col", q_col, (ky, data.n_cols))
        weights = np.ascontiguousarray(p_row.T @ pi)  # (N, Ky): sum_nu p_{i|nu} pi[nu, mu]
        p_i = weights @ q_col.sum(axis=1) if conditional else NO_ROW_NORM
        csr = data.counts
        return row_log_likelihoods(
            csr.indptr, csr.indices, csr.data, weights, np.ascontiguousarray(q_col.T), p_i
        )

    def log_likelihood(self, params, data) -> np.ndarray:
        """Conditional log-likelihood per row, ``sum_j n_ij log P(y_j | x_i)``, eq. (16).

        ``P(y_j | x_i) = p_ij / p_i``: the probability of the column given the row, as for
        :meth:`AspectModel.log_likelihood` (whose perplexities it is comparable with; the
        multinomial coefficient is left out). Rows without observations contribute 0; an observed
        row with ``p_i = 0``, or an observed cell with ``p_ij = 0``, gets ``-inf``; NaN parameters
        give NaN. Computed in one pass over the non-zeros, with no ``nnz x Ky`` array.

        Parameters
        ----------
        params : dict with ``pi`` (Kx x Ky), ``p_row`` (Kx x N) and ``q_col`` (Ky x M)
        data : CoOccurrence

        Returns
        -------
        numpy.ndarray of shape (N,)

        Raises
        ------
        ValueError
            If the shapes of the parameters do not fit each other or ``data``.

        Examples
        --------
        >>> data, truth = ProductSpaceMixture(2).simulate(0, n_docs=3, n_words=5, n_tokens=20)
        >>> ll = ProductSpaceMixture(2).log_likelihood(truth, data)
        >>> ll.shape, bool(np.all(ll <= 0))
        ((3,), True)
        """
        return self._row_log_likelihoods(params, data, conditional=True)

    def reference_log_likelihood(self, params, data) -> np.ndarray:
        """The log-likelihood as :meth:`pymc_model` (and EM) have it: the joint
        :meth:`joint_log_likelihood`, not the conditional :meth:`log_likelihood`."""
        return self.joint_log_likelihood(params, data)

    def joint_log_likelihood(self, params, data) -> np.ndarray:
        """Joint log-likelihood per row, ``sum_j n_ij log p_ij`` (eq. (2) with (16)).

        The objective of EM; equal to :meth:`log_likelihood` plus ``n_i log p_i``. An observed
        cell with ``p_ij = 0`` makes its row ``-inf``; no ``nnz x Ky`` array is formed.

        Examples
        --------
        >>> model = ProductSpaceMixture(2)
        >>> data, truth = model.simulate(0, n_docs=3, n_words=5, n_tokens=20)
        >>> gap = model.joint_log_likelihood(truth, data) - model.log_likelihood(truth, data)
        >>> p_i = (truth["p_row"].T @ truth["pi"]).sum(axis=1)
        >>> bool(np.allclose(gap, data.row_totals * np.log(p_i)))
        True
        """
        return self._row_log_likelihoods(params, data, conditional=False)

    def heldout_cell_probabilities(self, params, test, train=None) -> np.ndarray:
        """``P(y_j | x_i) = sum_{nu,mu} p_{i|nu} pi[nu, mu] q_{j|mu} / p_i`` of one draw on the
        non-zero cells of ``test`` (CSR order; 0 for a row of zero probability).

        Examples
        --------
        >>> from latentzoo.data import CoOccurrence
        >>> params = {"pi": [[1.0]], "p_row": [[0.5, 0.5]], "q_col": [[0.25, 0.75]]}
        >>> ProductSpaceMixture(1, 1).heldout_cell_probabilities(params, CoOccurrence([[1, 1], [0, 1]])).tolist()
        [0.25, 0.75, 0.75]
        """
        csr = test.counts
        indptr, indices = csr.indptr.astype(np.int64), csr.indices.astype(np.int64)
        pi, p_row, q_col = self._unpack(params)
        weights = np.ascontiguousarray(p_row.T @ pi)
        p_i = weights @ q_col.sum(axis=1)
        rows = test.cells()[0]
        mixed = cell_dots(indptr, indices, weights, np.ascontiguousarray(q_col.T))
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.where(p_i[rows] > 0, mixed / p_i[rows], 0.0)

    def fit_shape(self, params) -> tuple[int | None, int | None]:
        """``(rows, columns)`` a point estimate was fitted to, from ``p_row`` and ``q_col``.

        Examples
        --------
        >>> ProductSpaceMixture(2, 2).fit_shape({"p_row": np.ones((2, 5)), "q_col": np.ones((2, 7))})
        (5, 7)
        """
        return np.shape(params["p_row"])[-1], np.shape(params["q_col"])[-1]

    def labels(self, params, train=None) -> TwoSidedLabels:
        """The most probable row and column classes ``TwoSidedLabels(rows, cols)``:
        ``argmax_nu P(nu | x_i)`` with ``P(nu | x_i) ∝ p_{i|nu} sum_mu pi[nu, mu]``, likewise for
        the columns.

        Examples
        --------
        >>> params = {"pi": [[0.5, 0.0], [0.0, 0.5]], "p_row": [[0.9, 0.1], [0.1, 0.9]],
        ...           "q_col": [[0.8, 0.2], [0.2, 0.8]]}
        >>> ProductSpaceMixture(2, 2).labels(params).rows.tolist()
        [0, 1]
        """
        if not all(name in params for name in ("pi", "p_row", "q_col")):
            raise ValueError(
                "the sample holds no pi, p_row and q_col draws to label rows and columns"
            )
        pi, p_row, q_col = self._unpack(params)
        rows = (p_row * pi.sum(axis=1)[:, None]).argmax(axis=0)
        cols = (q_col * pi.sum(axis=0)[:, None]).argmax(axis=0)
        return TwoSidedLabels(rows.astype(np.int64), cols.astype(np.int64))

    def _log_likelihood(self, params, data, name: str) -> np.ndarray:
        return self._row_log_likelihoods(params, data, conditional=True, name=name)

    def aspect_params(self, params) -> dict[str, np.ndarray]:
        """The conditional model as aspect-model parameters with ``K = Ky`` aspects.

        ``P(y_j | x_i) = sum_mu theta[i, mu] q_{j|mu}`` with ``theta[i] ∝ p_row[:, i] @ pi`` and
        ``phi = q_col``; rows with ``p_i = 0`` get a uniform ``theta[i]``.

        Examples
        --------
        >>> model = ProductSpaceMixture(2, 3)
        >>> data, truth = model.simulate(0, n_docs=4, n_words=6, n_tokens=30)
        >>> aspect = model.aspect_params(truth)
        >>> from latentzoo.models import AspectModel
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
        """The dense ``N x M`` matrix ``P(y_j | x_i)`` (small data only).

        Raises
        ------
        ValueError
            If its three dense ``N x M`` float64 arrays would take more than half of this
            machine's memory.

        Examples
        --------
        >>> params = {"pi": np.full((1, 2), 0.5), "p_row": np.full((1, 2), 0.5),
        ...           "q_col": np.array([[1.0, 0.0], [0.0, 1.0]])}
        >>> ProductSpaceMixture(1, 2).conditional(params).tolist()
        [[0.5, 0.5], [0.5, 0.5]]
        """
        pi, p_row, q_col = self._unpack(params)
        n, m = p_row.shape[1], q_col.shape[1]
        check_memory(
            3 * 8 * n * m,
            "ProductSpaceMixture.conditional",
            detail=f"for dense {n} x {m} arrays",
            hint="score the observed cells with log_likelihood or the dyads with predictive",
        )
        joint = p_row.T @ pi @ q_col
        totals = joint.sum(axis=1, keepdims=True)
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.where(totals > 0, joint / totals, 1.0 / joint.shape[1])

    def log_prior(self, params) -> float:
        """Log density of the Dirichlet priors (with normalising constants).

        ``log Dir(pi | alpha)`` over the ``Kx*Ky`` pairs (``pi_flat`` of :meth:`pymc_model`) plus
        ``log Dir(eta)`` of every row of ``p_row`` and ``q_col``, written with ``gammaln``
        independently of the PyMC declaration.

        Examples
        --------
        >>> params = {"pi": np.full((2, 2), 0.25), "p_row": np.full((2, 3), 1 / 3),
        ...           "q_col": np.full((2, 3), 1 / 3)}
        >>> round(ProductSpaceMixture(2, 2, alpha=1.0, eta=1.0).log_prior(params), 6)  # log 3! 2!^4
        4.564348
        """
        pi, p_row, q_col = self._unpack(params)
        return (
            dirichlet_logpdf(pi.reshape(1, -1), self.alpha)
            + dirichlet_logpdf(p_row, self.eta)
            + dirichlet_logpdf(q_col, self.eta)
        )
