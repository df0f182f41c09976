"""The symmetric clustering model (SCM, two-sided clustering) of co-occurrence data.

Hofmann & Puzicha (1998), sections 3.3-3.4, eq. (33)-(49), footnotes 6-7; Hofmann, Puzicha & Jordan
(1999), section 2.3, eq. (8)-(10). Row objects ``x_i`` are partitioned into ``Kx`` clusters
(``I_i``), column objects ``y_j`` into ``Ky`` clusters (``J_j``), and a pair is observed with

.. math::

    p_{ij} = p_i \\, q_j \\, c_{I_i J_j}, \\qquad
    c_{\\nu\\mu} = \\frac{\\pi_{\\nu\\mu}}{\\pi^x_\\nu \\pi^y_\\mu}                     \\tag{34, 42}

(eq. (34) with Boolean indicators). The scale invariance of eq. (41) is broken by the seed's constraints
``sum_i p_i I_{i nu} = pi^x_nu``, ``sum_j q_j J_{j mu} = pi^y_mu``, which give ``p_i = n_i / L``,
``q_j = m_j / L`` and the cluster association ``c`` of eq. (42)-(43), with
``pi_{nu mu} = sum_ij n_ij I_{i nu} J_{j mu} / L`` the joint cluster frequency and ``pi^x``, ``pi^y``
its marginals.

**Mutual information (eq. (36) + (42)).** Inserting the estimates into the log-likelihood,

.. math::

    \\sum_{ij} n_{ij} \\log p_{ij}
      = L \\, \\mathrm{MI}(I; J) + \\underbrace{\\sum_i n_i \\log\\frac{n_i}{L}
        + \\sum_j m_j \\log\\frac{m_j}{L}}_{= -L\\,(H(X) + H(Y)),\\ \\text{independent of } I, J},
    \\qquad \\mathrm{MI}(I;J) = \\sum_{\\nu\\mu} \\pi_{\\nu\\mu}
        \\log \\frac{\\pi_{\\nu\\mu}}{\\pi^x_\\nu \\pi^y_\\mu},

so maximising the likelihood over the partitions maximises the mutual information between the row and
the column cluster of a random observation (:meth:`TwoSidedClustering.mutual_information`,
:meth:`TwoSidedClustering.log_likelihood_offset`).

**J-consistency (eq. (45), footnote 6).** If ``c`` is computed by eq. (42) from the column partition
``J`` (hard or the mean-field posteriors ``<J>``) and ``pi^x`` is the row marginal of the same ``pi``,
then ``sum_j q_j sum_mu <J_{j mu}> c_{nu mu} = sum_mu pi_{nu mu} / pi^x_nu = 1`` for every ``nu`` with
``pi^x_nu > 0``: the predictive ``P(y_j | x_i) = q_j sum_{nu mu} <I_{i nu}> <J_{j mu}> c_{nu mu}`` of
eq. (47) sums to one over ``j`` whatever ``<I_i>`` is (on the clusters holding observations), and
``sum_j p_ij = p_i``. This is also why the penalty term of eq. (44)
is the constant ``n_i`` of eq. (45).

**The Bayesian model (for the samplers and PyMC).** The seed's text of eq. (46) is garbled, and eq. (34)
with ``p_i = n_i / L`` is no generative model by itself, so the zoo declares the following one, whose
maximum-likelihood estimate is exactly eq. (34) + (42)-(43):

1. ``rho^x ~ Dir(alpha 1_Kx)``, ``rho^y ~ Dir(alpha 1_Ky)``; ``I_i ~ Cat(rho^x)``, ``J_j ~ Cat(rho^y)``.
2. ``pi ~ Dir(eta)`` over the *occupied* blocks ``(nu, mu)`` (both clusters non-empty; ``pi = 0`` on
   the others, which no pair can reach); for every non-empty row cluster ``nu`` a within-cluster
   distribution ``psi^x_nu ~ Dir(eta)`` over its member rows, likewise ``psi^y_mu`` over the columns of
   ``mu``.
3. Each of the ``L`` tokens picks a block ``(nu, mu) ~ pi``, then a row ``i ~ psi^x_nu`` and a column
   ``j ~ psi^y_mu``. Hence ``p_ij = pi[I_i, J_j] psi^x(i) psi^y(j)``.

*Derivation of eq. (34).* Write ``pi^x_nu = sum_mu pi_{nu mu}``, ``pi^y_mu = sum_nu pi_{nu mu}`` and
``p_i = pi^x_{I_i} psi^x(i)``, ``q_j = pi^y_{J_j} psi^y(j)`` (the row and column marginals of
``p_ij``: ``sum_j p_ij = pi[I_i, .] psi^x(i) = p_i`` because ``psi^y_mu`` sums to one over the
columns of ``mu``). Then ``p_ij = p_i q_j pi[I_i, J_j] / (pi^x_{I_i} pi^y_{J_j}) = p_i q_j c_{I_i J_j}``,
eq. (34) with ``c`` of eq. (42), and the scale constraints hold by construction:
``sum_i p_i I_{i nu} = pi^x_nu sum_{i in nu} psi^x(i) = pi^x_nu``. The maximum-likelihood estimates
given ``(I, J)`` are ``pi = W / L`` (``W`` the block counts) and ``psi^x(i) = n_i / N_{I_i}``
(``N_nu`` the tokens of cluster ``nu``), so ``p_i = n_i / L``: the seed's estimators.

*Collapsed marginal.* With ``pi``, ``psi`` and ``rho`` integrated out, the token sequence has
(sequence form, no multinomial coefficient)

.. math::

    p(S \\mid I, J) = \\mathrm{DM}(W \\mid \\eta; B)
        \\prod_{\\nu:\\,s_\\nu > 0} \\frac{\\Gamma(s_\\nu\\eta)}{\\Gamma(N_\\nu + s_\\nu\\eta)}
        \\prod_i \\frac{\\Gamma(n_i + \\eta)}{\\Gamma(\\eta)}
        \\prod_{\\mu:\\,t_\\mu > 0} \\frac{\\Gamma(t_\\mu\\eta)}{\\Gamma(M_\\mu + t_\\mu\\eta)}
        \\prod_j \\frac{\\Gamma(m_j + \\eta)}{\\Gamma(\\eta)},

with ``DM(W | eta; B) = Gamma(B eta) / Gamma(L + B eta) prod_blocks Gamma(W + eta) / Gamma(eta)`` over the
``B = Kx+ Ky+`` occupied blocks, ``s_nu``, ``t_mu`` the cluster sizes; and
``p(I) = Gamma(Kx alpha) / Gamma(N + Kx alpha) prod_nu Gamma(s_nu + alpha) / Gamma(alpha)`` (likewise
``J``). See :meth:`TwoSidedClustering.collapsed_log_joint`.

**Three kinds of parameter dictionaries** are accepted by the likelihood functions:

- *point estimates* (hard SCM, mean field): ``I`` (N x Kx, one-hot or the posteriors ``<I>``), ``J``
  (M x Ky), ``c`` (eq. (42)), ``pi`` (eq. (43)), ``p``, ``q``, ``rho_x``, ``rho_y`` and ``n_obs``
  (``L``). Recognised by the key ``c``;
- *Bayesian draws* (the simulator's truth, the Gibbs sampler): ``I`` (N,), ``J`` (M,) integer labels,
  ``pi`` (Kx x Ky), ``psi_x`` (N,) with ``psi_x[i] = psi^x_{I_i}(i)``, ``psi_y`` (M,), ``rho_x``,
  ``rho_y``. Recognised by the key ``pi`` without ``c``;
- *labels only* (the PyMC posterior, where every continuous parameter is integrated out): ``I``, ``J``.
  The invariants are then the Rao-Blackwellised ones, the conditional expectations given
  ``(I, J, data)`` of the draw-kind invariants, so the posterior means agree with a sampler that draws
  the parameters.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.special import digamma, gammaln, xlogy

from latentzoo.data import CoOccurrence
from latentzoo.models._checks import (
    check_data_shape,
    check_integer,
    check_label_range,
    check_positive,
    check_simplex_rows,
)
from latentzoo.models._kernels import cell_dots, one_hot
from latentzoo.models.base import (
    CellHeldout,
    LikelihoodModel,
    PlainPyMCValues,
    TrainConditionedHeldout,
    TwoSidedLabels,
    balanced_labels,
)
from latentzoo.models.cooccurrence import (
    CorpusSimulator,
    checked_grid_data,
    draw_counts,
    grid_coords,
)
from latentzoo.models.invariants import coassignment_pairs as default_pairs
from latentzoo.models.invariants import default_dyads

__all__ = [
    "TwoSidedClustering",
    "association",
    "collapsed_from_tables",
    "default_pairs",
    "soft_assignments",
    "within_cluster",
]


def _labels(values, n, k, name) -> np.ndarray:
    labels = np.asarray(values)
    if labels.shape != (n,):
        raise ValueError(f"{name} has shape {labels.shape}, expected ({n},)")
    if labels.dtype.kind not in "iu":
        if labels.dtype.kind != "f" or not np.all(labels == np.round(labels)):
            raise ValueError(f"{name} must hold integer cluster labels")
    labels = labels.astype(np.int64)
    check_label_range(f"{name} labels", labels, k)
    return labels


def soft_assignments(values, n, k, name) -> np.ndarray:
    """Checked assignments as an ``(n, k)`` matrix: integer labels become one-hot rows.

    ``values`` are ``(n,)`` labels in ``0..k-1`` or ``(n, k)`` posteriors (finite, non-negative,
    rows summing to one); ``name`` is used in the ``ValueError`` messages.

    Examples
    --------
    >>> soft_assignments([1, 0], 2, 2, "I").tolist()
    [[0.0, 1.0], [1.0, 0.0]]
    >>> soft_assignments([[0.5, 0.6]], 1, 2, "I")
    Traceback (most recent call last):
    ...
    ValueError: rows of I must sum to one
    """
    arr = np.asarray(values)
    if arr.ndim == 1:
        return one_hot(_labels(arr, n, k, name), k)
    arr = np.asarray(arr, dtype=float)
    if arr.shape != (n, k):
        raise ValueError(f"{name} has shape {arr.shape}, expected {(n, k)} or ({n},) labels")
    check_simplex_rows(name, arr)
    return arr


def _kind(params) -> str:
    if "c" in params:
        return "point"
    if "pi" in params:
        return "draw"
    return "labels"


def _safe_ratio(num, den):
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(num > 0, num / np.where(den > 0, den, 1.0), 0.0)


def association(block_counts, row_mass, col_mass) -> np.ndarray:
    """Eq. (42): ``c = pi / (pi^x pi^y)`` from block counts ``W`` and the cluster masses.

    ``row_mass[nu] = sum_i n_i <I_{i nu}>``, ``col_mass[mu] = sum_j m_j <J_{j mu}>`` (token counts);
    ``c = W L / (row_mass col_mass)``, and 0 on blocks without observations.

    Examples
    --------
    >>> association(np.array([[3.0, 1.0], [0.0, 4.0]]), np.array([4.0, 4.0]), np.array([3.0, 5.0]))
    array([[2. , 0.4],
           [0. , 1.6]])
    """
    total = block_counts.sum()
    return _safe_ratio(block_counts * total, np.outer(row_mass, col_mass))


@dataclass(frozen=True)
class TwoSidedClustering(CellHeldout, TrainConditionedHeldout, PlainPyMCValues, CorpusSimulator):
    """Symmetric clustering model (SCM) with Dirichlet priors (Hofmann & Puzicha 1998, eq. (34)).

    Parameters
    ----------
    n_row_clusters : int
        ``Kx``, clusters of the row objects.
    n_col_clusters : int
        ``Ky``, clusters of the column objects.
    alpha : float
        Symmetric Dirichlet concentration of the cluster weights ``rho^x`` (over ``Kx``) and ``rho^y``
        (over ``Ky``), the priors of the indicators ``I_i ~ Cat(rho^x)``, ``J_j ~ Cat(rho^y)`` (eq. (48)).
        Mean-field EM uses the MAP estimate ``rho ∝ sum <I> + alpha - 1`` (``alpha = 1`` is eq. (48)).
    eta : float
        Symmetric Dirichlet concentration of the block distribution ``pi`` (over the occupied
        ``(nu, mu)`` blocks) and of the within-cluster distributions ``psi^x_nu`` (over the rows of
        cluster ``nu``) and ``psi^y_mu``. The point estimators fit the seed's maximum-likelihood ``c``
        (eq. (42)); ``eta`` enters their held-out predictions as the pseudo-count ``eta - 1`` (so a
        column unseen in training keeps a non-zero probability; ``eta = 1`` is exactly eq. (47)).

    Examples
    --------
    >>> from latentzoo.models.two_sided import TwoSidedClustering
    >>> model = TwoSidedClustering(2, 3)
    >>> data, truth = model.simulate(0, n_rows=6, n_cols=7, n_tokens=50)
    >>> model.log_likelihood(truth, data).shape
    (6,)
    """

    n_row_clusters: int
    n_col_clusters: int
    alpha: float = 1.1
    eta: float = 1.01

    name = "two_sided"
    data_type = CoOccurrence
    protocol = LikelihoodModel
    p_dyad_formula = (
        "pi[I_i, J_j] / sum_mu pi[I_i, mu] x psi_y[j] at a draw of (pi, psi_y, I, J); for "
        "draws of the labels only, its conditional expectation given (I, J) and the data"
    )
    """``p_dyad`` (the predictive ``P(y_j | x_i)`` of a tracked dyad) at one draw, in words."""
    param_names = ("I", "J")
    count_dims = ("row", "col")  # the posterior predictive's names of the counts' dims
    invariant_names = ("loglik", "p_dyad", "coassign_rows", "coassign_cols")
    invariant_dims = {
        "p_dyad": ["dyad"],
        "coassign_rows": ["row_pair"],
        "coassign_cols": ["col_pair"],
    }
    dims = {
        "I": ["row"],
        "J": ["col"],
        "pi": ["row_cluster", "col_cluster"],
        "psi_x": ["row"],
        "psi_y": ["col"],
        "rho_x": ["row_cluster"],
        "rho_y": ["col_cluster"],
        "p_dyad": ["dyad"],
        "coassign_rows": ["row_pair"],
        "coassign_cols": ["col_pair"],
        "counts": ["row"],
    }
    """Dimensions of the variables, shared by the PyMC declaration and the fast samplers."""

    estimate_dims = {
        "I": ["row", "row_cluster"],
        "J": ["col", "col_cluster"],
        "c": ["row_cluster", "col_cluster"],
        "p": ["row"],
        "q": ["col"],
    }
    """Dimensions of the point estimates' parameters where they differ from ``dims`` (soft
    assignments instead of labels), used when an :class:`~latentzoo.inference.EMResult` is saved."""

    def coords(self, data) -> dict:
        """ArviZ/PyMC coordinates: rows, columns, both cluster sets, the compared dyads and pairs.

        Examples
        --------
        >>> from latentzoo.data import load
        >>> sorted(TwoSidedClustering(2, 2).coords(load("toy")))[:3]
        ['col', 'col_cluster', 'col_pair']
        """
        return {
            **grid_coords(data, self.n_row_clusters, self.n_col_clusters),
            "row_pair": np.arange(len(default_pairs(data.row_totals))),
            "col_pair": np.arange(len(default_pairs(data.col_totals))),
        }

    def __post_init__(self):
        check_integer("n_row_clusters", self.n_row_clusters)
        check_integer("n_col_clusters", self.n_col_clusters)
        check_positive("alpha", self.alpha)
        check_positive("eta", self.eta)

    @property
    def shape(self) -> tuple[int, int]:
        """``(Kx, Ky)``."""
        return int(self.n_row_clusters), int(self.n_col_clusters)

    def sizes_label(self) -> str:
        """The model's cluster numbers as reports print them (``K=...``): row and column clusters, ``Kx x Ky``.

        Examples
        --------
        >>> TwoSidedClustering(2, 3).sizes_label()
        '2x3'
        """
        return "x".join(str(k) for k in self.shape)

    # ------------------------------------------------------------------ checks
    def check_data(self, data) -> CoOccurrence:
        """Validate ``data`` for this model and return it as a :class:`CoOccurrence`.

        Examples
        --------
        >>> from latentzoo.data import load
        >>> TwoSidedClustering(2, 2).check_data(load("toy")).shape
        (6, 8)
        >>> TwoSidedClustering(7, 2).check_data(load("toy"))
        Traceback (most recent call last):
        ...
        ValueError: n_row_clusters=7 is larger than the data supports: only 6 rows
        """
        kx, ky = self.shape
        data = checked_grid_data(data, kx, ky)
        if data.total == 0:
            raise ValueError("the data hold no observations")
        if max(kx, ky) > data.total:
            raise ValueError(
                f"{max(kx, ky)} clusters are larger than the data supports: only {data.total} "
                "observations"
            )
        return data

    # ---------------------------------------------------------- point estimates
    def estimate(self, I, J, data) -> dict:  # noqa: E741 - the seed's names
        """Point parameters of eq. (42)-(43), (48) for given (hard or soft) assignments.

        ``I`` (N,) labels or (N, Kx) posteriors, ``J`` likewise; ``p = n_i / L``, ``q = m_j / L``,
        ``pi = <I>^T n <J> / L``, ``c`` by eq. (42) (0 on empty blocks) and the MAP cluster weights
        ``rho ∝ max(sum <I> + alpha - 1, 0)``.

        Examples
        --------
        >>> from latentzoo.data import load
        >>> params = TwoSidedClustering(2, 2).estimate([0, 0, 0, 1, 1, 1], [0] * 4 + [1] * 4,
        ...                                           load("toy"))
        >>> sorted(params)
        ['I', 'J', 'c', 'n_obs', 'p', 'pi', 'q', 'rho_x', 'rho_y']
        """
        data = self.check_data(data)
        kx, ky = self.shape
        soft_i = soft_assignments(I, data.n_rows, kx, "I")
        soft_j = soft_assignments(J, data.n_cols, ky, "J")
        n_i = data.row_totals.astype(float)
        m_j = data.col_totals.astype(float)
        block = soft_i.T @ np.asarray(data.counts @ soft_j)
        return self.point_params(soft_i, soft_j, block, n_i, m_j, float(data.total))

    def point_params(self, soft_i, soft_j, block, n_i, m_j, total) -> dict:
        """The point-estimate dictionary of eq. (42)-(43), (48) from assignments and block counts.

        ``soft_i`` (N x Kx) and ``soft_j`` (M x Ky) posteriors (or one-hot rows), ``block`` the
        block counts ``<I>^T n <J>``, ``n_i``, ``m_j`` the row and column totals and ``total`` their
        sum ``L``: :meth:`estimate` after the counting, shared with the EM algorithms, which keep
        the block counts up to date themselves.

        Examples
        --------
        >>> model = TwoSidedClustering(1, 1)
        >>> params = model.point_params(np.ones((2, 1)), np.ones((2, 1)), np.array([[4.0]]),
        ...                             np.array([1.0, 3.0]), np.array([2.0, 2.0]), 4.0)
        >>> params["c"].tolist(), params["p"].tolist()
        ([[1.0]], [0.25, 0.75])
        """
        return {
            "I": soft_i,
            "J": soft_j,
            "c": association(block, n_i @ soft_i, m_j @ soft_j),
            "pi": block / total,
            "p": n_i / total,
            "q": m_j / total,
            "rho_x": self.map_weights(soft_i.sum(axis=0)),
            "rho_y": self.map_weights(soft_j.sum(axis=0)),
            "n_obs": np.asarray(total),
        }

    def map_weights(self, sizes) -> np.ndarray:
        """MAP cluster weights ``rho ∝ max(sizes + alpha - 1, 0)`` (eq. (48) for ``alpha = 1``)."""
        weights = np.maximum(np.asarray(sizes, dtype=float) + (self.alpha - 1.0), 0.0)
        total = weights.sum()
        return weights / total if total > 0 else np.full(weights.shape, 1.0 / weights.shape[0])

    def mutual_information(self, I, J, data) -> float:  # noqa: E741
        """Mutual information (nats) between the row and column cluster of a random observation.

        ``MI = sum_{nu mu} pi_{nu mu} log(pi_{nu mu} / (pi^x_nu pi^y_mu))`` with ``pi`` of eq. (43)
        (``0 log 0 = 0``); soft assignments give the plug-in value with the posteriors replacing the
        indicators. ``L * MI + log_likelihood_offset(data)`` is the log-likelihood of the point
        estimate (the SCM criterion, eq. (36) + (42)).

        Examples
        --------
        >>> from latentzoo.data import CoOccurrence
        >>> data = CoOccurrence([[2, 0], [0, 2]])
        >>> round(TwoSidedClustering(2, 2).mutual_information([0, 1], [0, 1], data), 6)  # log 2
        0.693147
        """
        data = self.check_data(data)
        kx, ky = self.shape
        soft_i = soft_assignments(I, data.n_rows, kx, "I")
        soft_j = soft_assignments(J, data.n_cols, ky, "J")
        pi = soft_i.T @ np.asarray(data.counts @ soft_j) / data.total
        ratio = _safe_ratio(pi, np.outer(pi.sum(axis=1), pi.sum(axis=0)))
        return float(np.sum(xlogy(pi, np.where(pi > 0, ratio, 1.0))))

    def log_likelihood_offset(self, data) -> float:
        """The constant ``sum_i n_i log(n_i/L) + sum_j m_j log(m_j/L) = -L (H(X) + H(Y))``.

        The log-likelihood of the point estimate of any partition is ``L * MI + offset``.
        """
        n_i = data.row_totals.astype(float)
        m_j = data.col_totals.astype(float)
        total = float(data.total)
        return float(xlogy(n_i, n_i / total).sum() + xlogy(m_j, m_j / total).sum())

    # --------------------------------------------------------------- likelihoods
    def _point_tables(self, params, n_rows, n_cols, smoothing=0.0):
        """(I, J, c, q) of a point estimate; with ``smoothing > 0`` the pseudo-count predictive.

        Smoothed: ``q~_j = (m_j + e) / (L + M e)``, ``pi~ = (W + e) / (L + B e)`` on the blocks of
        clusters with positive mass, ``c~ = pi~ / (pi~^x P~^y)`` with ``pi~^x`` the row marginal of
        ``pi~`` and ``P~^y_mu = sum_j q~_j <J_{j mu}>``: still J-consistent, so the conditional sums
        to one over ``j``; with ``e = eta`` and hard assignments it is the posterior predictive of the
        Bayesian model given ``(I, J)``.
        """
        kx, ky = self.shape
        soft_i = soft_assignments(params["I"], n_rows, kx, "I")
        soft_j = soft_assignments(params["J"], n_cols, ky, "J")
        q = np.asarray(params["q"], dtype=float)
        if q.shape != (n_cols,):
            raise ValueError(f"q has shape {q.shape}, expected ({n_cols},)")
        if smoothing <= 0:
            return soft_i, soft_j, np.asarray(params["c"], dtype=float), q
        total = float(params["n_obs"])
        q_s = (total * q + smoothing) / (total + n_cols * smoothing)
        occupied = np.outer(soft_i.sum(axis=0) > 0, soft_j.sum(axis=0) > 0)
        pi_s = np.where(occupied, total * np.asarray(params["pi"], dtype=float) + smoothing, 0.0)
        pi_s /= pi_s.sum()
        c_s = _safe_ratio(pi_s, np.outer(pi_s.sum(axis=1), q_s @ soft_j))
        return soft_i, soft_j, c_s, q_s

    def _draw_tables(self, params, n_rows, n_cols):
        kx, ky = self.shape
        labels_i = _labels(params["I"], n_rows, kx, "I")
        labels_j = _labels(params["J"], n_cols, ky, "J")
        pi = np.asarray(params["pi"], dtype=float)
        if pi.shape != (kx, ky):
            raise ValueError(f"pi has shape {pi.shape}, expected {(kx, ky)}")
        psi_x = np.asarray(params["psi_x"], dtype=float)
        psi_y = np.asarray(params["psi_y"], dtype=float)
        if psi_x.shape != (n_rows,) or psi_y.shape != (n_cols,):
            raise ValueError(
                f"psi_x, psi_y have shapes {psi_x.shape}, {psi_y.shape}, "
                f"expected ({n_rows},), ({n_cols},)"
            )
        return labels_i, labels_j, pi, psi_x, psi_y

    @staticmethod
    def _check_shape(params, test) -> None:
        """``test`` has the rows of ``I`` and the columns of ``J`` (ValueError naming ``test``)."""
        fit = tuple(np.shape(params[key])[0] if np.ndim(params[key]) else None for key in "IJ")
        check_data_shape("test", test.shape, fit, ("rows", "columns"))

    def _cell_probabilities(self, params, data, conditional, smoothing=0.0):
        """``p_ij`` (or ``P(y_j | x_i)``) on the non-zero cells of ``data``, CSR order."""
        kind = _kind(params)
        rows, cols, _ = data.cells()
        if kind == "point":
            soft_i, soft_j, c, q = self._point_tables(params, *data.shape, smoothing)
            csr = data.counts
            mixed = cell_dots(csr.indptr, csr.indices, np.ascontiguousarray(soft_i @ c), soft_j)
            out = q[cols] * mixed
            if not conditional:
                out = out * np.asarray(params["p"], dtype=float)[rows]
            return out
        if kind == "draw":
            labels_i, labels_j, pi, psi_x, psi_y = self._draw_tables(params, *data.shape)
            block = pi[labels_i[rows], labels_j[cols]]
            if conditional:
                return _safe_ratio(block, pi.sum(axis=1)[labels_i[rows]]) * psi_y[cols]
            return block * psi_x[rows] * psi_y[cols]
        raise ValueError(
            "the assignments I, J alone define no likelihood (the parameters are integrated out): "
            "pass a point estimate (with c) or a draw (with pi, psi_x, psi_y); the invariants of "
            "labels-only parameters are Rao-Blackwellised (see TwoSidedClustering.invariants)"
        )

    def log_likelihood(self, params, data) -> np.ndarray:
        """Exact log-likelihood per row, ``sum_j n_ij log p_ij`` (eq. (34), (36), (47)).

        Point estimates: ``p_ij = p_i q_j sum_{nu mu} <I_{i nu}> <J_{j mu}> c_{nu mu}``, eq. (34) for
        hard (one-hot or label) assignments and the mean-field plug-in of eq. (47) for soft ones.
        Bayesian draws: ``p_ij = pi[I_i, J_j] psi_x[i] psi_y[j]``. The joint probability of the pair
        (token-sequence form, no multinomial coefficient), so for a hard point estimate the sum over
        rows is ``L * MI + log_likelihood_offset(data)``. It differs from the conditional
        ``sum n_ij log P(y_j | x_i)`` of the aspect model by ``sum_i n_i log p_i``. Rows without
        observations contribute 0.

        Examples
        --------
        >>> from latentzoo.data import load
        >>> model, data = TwoSidedClustering(2, 2), load("toy")
        >>> params = model.estimate([0, 0, 0, 1, 1, 1], [0] * 4 + [1] * 4, data)
        >>> mi = model.mutual_information(params["I"], params["J"], data)
        >>> bool(np.isclose(model.log_likelihood(params, data).sum(),
        ...                 data.total * mi + model.log_likelihood_offset(data)))
        True
        """
        rows, _, counts = data.cells()
        probs = self._cell_probabilities(params, data, conditional=False)
        with np.errstate(divide="ignore"):
            terms = counts * np.log(probs)
        return np.bincount(rows, weights=terms, minlength=data.n_rows)

    def prior_draw(self, data, rng) -> dict:
        """Parameters drawn from the prior at the sizes of ``data``: the truth of
        :meth:`simulate` with ``n_rows = data.n_rows``, ``n_cols = data.n_cols``.

        Examples
        --------
        >>> from latentzoo.data import load
        >>> draw = TwoSidedClustering(2, 2).prior_draw(load("toy"), np.random.default_rng(0))
        >>> draw["I"].shape, draw["J"].shape
        ((6,), (8,))
        """
        _, truth = self.simulate(rng, n_rows=data.n_rows, n_cols=data.n_cols)
        return truth

    def heldout_cell_probabilities(self, params, test, train=None) -> np.ndarray:
        """``P(y_j | x_i)`` of one draw on the non-zero cells of ``test`` (CSR order; Hofmann &
        Puzicha 1998, eq. (47)).

        A draw with parameters (``c`` or ``pi``) is scored conditionally on its tables, smoothed by
        ``max(eta - 1, 0)``; a draw of the partitions ``I``, ``J`` only has its parameters
        integrated out given the partitions and ``train`` (:meth:`estimate`, smoothed by ``eta``).

        Examples
        --------
        >>> from latentzoo.data import CoOccurrence
        >>> data = CoOccurrence([[2, 0], [0, 2]])
        >>> params = {"I": [0, 1], "J": [0, 1]}
        >>> p = TwoSidedClustering(2, 2).heldout_cell_probabilities(params, data, train=data)
        >>> p.shape
        (2,)
        """
        if "c" in params or "pi" in params:
            return self._cell_probabilities(
                params, test, conditional=True, smoothing=max(self.eta - 1.0, 0.0)
            )
        if train is None:
            raise ValueError(
                "the sample holds the assignments I, J but no parameters: pass train=, the "
                "training data, to score it by the posterior predictive given the partitions"
            )
        # Parameters integrated out given the partitions (TwoSidedClustering.conditional).
        csr = test.counts
        indptr, indices = csr.indptr.astype(np.int64), csr.indices.astype(np.int64)
        point = self.estimate(params["I"], params["J"], train)
        soft_i, soft_j, c, q = self._point_tables(point, *train.shape, smoothing=self.eta)
        cols = test.cells()[1]
        left = np.ascontiguousarray(soft_i @ c)
        return q[cols] * cell_dots(indptr, indices, left, np.ascontiguousarray(soft_j))

    def heldout_draws_usable(self, names, train=None) -> bool:
        """Whether draws holding the variables ``names`` can be scored: the partitions ``I`` and
        ``J`` suffice (parameters integrated out given them and the training data).

        Examples
        --------
        >>> TwoSidedClustering(2, 2).heldout_draws_usable(["I", "J"])
        True
        """
        return {"I", "J"} <= set(names)

    def fit_shape(self, params) -> tuple[int | None, int | None]:
        """``(rows, columns)`` a point estimate was fitted to, from ``I`` and ``J``.

        Examples
        --------
        >>> TwoSidedClustering(2, 2).fit_shape({"I": np.ones((5, 2)), "J": np.ones((7, 2))})
        (5, 7)
        """
        return np.shape(params["I"])[0], np.shape(params["J"])[0]

    def labels(self, params, train=None) -> TwoSidedLabels:
        """Hard row and column clusters ``TwoSidedLabels(rows, cols)``: the assignments, or the
        ``argmax`` of soft memberships ``I`` (N, Kx) and ``J`` (M, Ky).

        Examples
        --------
        >>> TwoSidedClustering(2, 2).labels({"I": [0, 1], "J": [[0.2, 0.8]]})
        TwoSidedLabels(rows=array([0, 1]), cols=array([1]))
        """
        sides = []
        for name in ("I", "J"):
            value = np.asarray(params[name])
            sides.append((value.argmax(axis=1) if value.ndim == 2 else value).astype(np.int64))
        return TwoSidedLabels(*sides)

    def heldout_log_likelihood(self, params, test) -> np.ndarray:
        """Per-row log predictive probability of held-out observations, eq. (47), conditional form.

        ``sum_j n_ij log P(y_j | x_i)`` with ``P(y_j | x_i) = q_j sum_{nu mu} <I_{i nu}> <J_{j mu}>
        c_{nu mu}``: the training posteriors (``params["I"]``, ``params["J"]``) predict the held-out
        pairs. It sums to one over ``j`` because ``c`` is J-consistent (module docstring). For point
        estimates the pseudo-count ``eta - 1`` smooths ``q`` and ``pi`` (J-consistency kept, see
        ``_point_tables``); ``eta = 1`` is eq. (47) exactly. For Bayesian draws
        ``P(y_j | x_i) = pi[I_i, J_j] / pi^x[I_i] psi_y[j]``. ``exp(-sum / test.total)`` is the
        perplexity.

        Examples
        --------
        >>> from latentzoo.data import load
        >>> model, data = TwoSidedClustering(2, 2, eta=1.0), load("toy")
        >>> params = model.estimate([0, 0, 0, 1, 1, 1], [0] * 4 + [1] * 4, data)
        >>> model.heldout_log_likelihood(params, data).shape
        (6,)
        """
        self._check_shape(params, test)
        rows, _, counts = test.cells()
        probs = self._cell_probabilities(
            params, test, conditional=True, smoothing=max(self.eta - 1.0, 0.0)
        )
        with np.errstate(divide="ignore"):
            terms = counts * np.log(probs)
        return np.bincount(rows, weights=terms, minlength=test.n_rows)

    def predictive_log_density(self, params, test, train) -> np.ndarray:
        """``log p(test_i | params, train)`` per row: held-out counts given the training data.

        Draws and point estimates: :meth:`log_likelihood` of ``test`` (the held-out pairs are
        independent given the parameters; the training data enter through them). Labels only:
        the exact collapsed predictive ``p(S_train + test_i | I, J) / p(S_train | I, J)`` (parameters
        integrated over their posterior given ``I``, ``J`` and the training data), whose value is the
        conditional expectation of the draw value: so :func:`~latentzoo.inference.compare.heldout_lppd`
        estimates the same predictive density from PyMC's ``(I, J)`` and from a sampler's draws.
        Token-sequence form (no multinomial coefficient), like :meth:`log_likelihood`.

        Examples
        --------
        >>> model = TwoSidedClustering(2, 2)
        >>> data, truth = model.simulate(0, n_rows=4, n_cols=5, n_tokens=40)
        >>> train, test = data.split(0.5, random_state=0)
        >>> labels = {"I": truth["I"], "J": truth["J"]}
        >>> model.predictive_log_density(labels, test, train).shape
        (4,)
        """
        if test.shape != train.shape:
            raise ValueError(f"test has shape {test.shape}, expected {train.shape}")
        if _kind(params) != "labels":
            return self.log_likelihood(params, test)
        kx, ky = self.shape
        eta = self.eta
        labels_i = _labels(params["I"], train.n_rows, kx, "I")
        labels_j = _labels(params["J"], train.n_cols, ky, "J")
        onehot_j = one_hot(labels_j, ky)
        n_i = train.row_totals.astype(float)
        m_j = train.col_totals.astype(float)
        train_mass = np.asarray(train.counts @ onehot_j)  # (N, Ky)
        block = one_hot(labels_i, kx).T @ train_mass
        sizes_x = np.bincount(labels_i, minlength=kx).astype(float)
        sizes_y = np.bincount(labels_j, minlength=ky).astype(float)
        mass_x = np.bincount(labels_i, weights=n_i, minlength=kx)
        mass_y = np.bincount(labels_j, weights=m_j, minlength=ky)
        n_blocks = np.count_nonzero(sizes_x) * np.count_nonzero(sizes_y)
        total = float(train.total)
        added = np.asarray(test.counts @ onehot_j)  # (N, Ky): test tokens of row i per col cluster
        t_i = added.sum(axis=1)
        own = block[labels_i]  # (N, Ky): the block counts row i's tokens join
        # block Dirichlet-multinomial: L grows by t_i, row I_i of W by added
        out = gammaln(total + n_blocks * eta) - gammaln(total + t_i + n_blocks * eta)
        out += np.sum(gammaln(own + added + eta) - gammaln(own + eta), axis=1)
        # within-cluster terms of the row cluster and of the column clusters reached
        s_x, m_x = sizes_x[labels_i], mass_x[labels_i]
        out += gammaln(m_x + s_x * eta) - gammaln(m_x + t_i + s_x * eta)
        base_y = (
            mass_y + sizes_y * eta
        )  # 0 only for an empty column cluster, which no token reaches
        base_y = np.where(base_y > 0, base_y, 1.0)
        out += np.sum(gammaln(base_y) - gammaln(base_y + added), axis=1)
        # the objects' own terms Gamma(n + eta): row i and the columns of its test tokens
        out += gammaln(n_i + t_i + eta) - gammaln(n_i + eta)
        rows, cols, counts = test.cells()
        out += np.bincount(
            rows,
            weights=gammaln(m_j[cols] + counts + eta) - gammaln(m_j[cols] + eta),
            minlength=test.n_rows,
        )
        return out

    def conditional(self, params, dyads, data=None) -> np.ndarray:
        """``P(y_j | x_i)`` for the given dyads (rows of ``(i, j)``).

        Point estimates and draws as in :meth:`heldout_log_likelihood`. Labels only (needs the
        training ``data``): the posterior predictive given the partitions,
        ``E[P(y_j|x_i) | I, J, S] = (W_{nu mu} + eta) / (N_nu + Ky+ eta) * (m_j + eta) /
        (M_mu + t_mu eta)`` with ``nu = I_i``, ``mu = J_j`` (Dirichlet aggregation: ``pi[nu, .] /
        pi^x_nu`` and ``psi^y_mu`` are independent Dirichlet posteriors).
        """
        dyads = np.asarray(dyads, dtype=np.int64).reshape(-1, 2)
        kind = _kind(params)
        if kind == "labels":
            if data is None:
                raise ValueError("labels-only parameters need the training data")
            point = self.estimate(params["I"], params["J"], data)
            soft_i, soft_j, c, q = self._point_tables(point, *data.shape, smoothing=self.eta)
        elif kind == "point":
            n_rows = np.shape(params["I"])[0]
            soft_i, soft_j, c, q = self._point_tables(
                params, n_rows, np.shape(params["q"])[0], max(self.eta - 1.0, 0.0)
            )
        else:
            pi = np.asarray(params["pi"], dtype=float)
            labels_i = np.asarray(params["I"], dtype=np.int64)[dyads[:, 0]]
            labels_j = np.asarray(params["J"], dtype=np.int64)[dyads[:, 1]]
            block = _safe_ratio(pi[labels_i, labels_j], pi.sum(axis=1)[labels_i])
            return block * np.asarray(params["psi_y"], dtype=float)[dyads[:, 1]]
        mixed = np.einsum("nk,nk->n", (soft_i @ c)[dyads[:, 0]], soft_j[dyads[:, 1]])
        return q[dyads[:, 1]] * mixed

    def expected_log_likelihood(self, I, J, data) -> float:  # noqa: E741
        """Rao-Blackwellised log-likelihood ``E[log p(S | theta, I, J) | I, J, S]``.

        The parameters' conditional posteriors are Dirichlet: ``pi ~ Dir(W + eta)`` over the ``B``
        occupied blocks, ``psi^x_nu ~ Dir(n_i + eta, i in nu)``, ``psi^y_mu`` likewise, so with
        ``E[log pi_b] = digamma(W_b + eta) - digamma(L + B eta)`` etc.

        .. math::

            \\sum_b W_b [\\psi(W_b + \\eta) - \\psi(L + B\\eta)]
            + \\sum_i n_i [\\psi(n_i + \\eta) - \\psi(N_{I_i} + s_{I_i}\\eta)]
            + \\sum_j m_j [\\psi(m_j + \\eta) - \\psi(M_{J_j} + t_{J_j}\\eta)].
        """
        kx, ky = self.shape
        labels_i = _labels(I, data.n_rows, kx, "I")
        labels_j = _labels(J, data.n_cols, ky, "J")
        n_i = data.row_totals.astype(float)
        m_j = data.col_totals.astype(float)
        total = float(data.total)
        eta = self.eta
        block = one_hot(labels_i, kx).T @ np.asarray(data.counts @ one_hot(labels_j, ky))
        sizes_x = np.bincount(labels_i, minlength=kx)
        sizes_y = np.bincount(labels_j, minlength=ky)
        mass_x = np.bincount(labels_i, weights=n_i, minlength=kx)
        mass_y = np.bincount(labels_j, weights=m_j, minlength=ky)
        n_blocks = np.count_nonzero(sizes_x) * np.count_nonzero(sizes_y)
        value = np.sum(block * (digamma(block + eta) - digamma(total + n_blocks * eta)))
        value += np.sum(n_i * (digamma(n_i + eta) - digamma(mass_x + sizes_x * eta)[labels_i]))
        value += np.sum(m_j * (digamma(m_j + eta) - digamma(mass_y + sizes_y * eta)[labels_j]))
        return float(value)

    # ------------------------------------------------------------------ invariants
    def invariants(
        self, params, data, dyads=None, row_pairs=None, col_pairs=None
    ) -> dict[str, np.ndarray]:
        """Label-invariant quantities through which every method is compared.

        ``loglik`` (scalar): :meth:`log_likelihood` summed for point estimates and draws; for labels
        only its conditional expectation :meth:`expected_log_likelihood`. ``p_dyad``: ``P(y_j|x_i)``
        (:meth:`conditional`) on :func:`~latentzoo.models.aspect.default_dyads`. ``coassign_rows``:
        ``sum_nu <I_{a nu}> <I_{b nu}>`` (0/1 for hard assignments) on the row pairs of
        :func:`default_pairs`, ``coassign_cols`` likewise for columns. All are unchanged by permuting
        either set of cluster labels. Labels-only values are the conditional expectations of the
        draw values given ``(I, J, data)``, so their posterior means are equal (Rao-Blackwell).

        Examples
        --------
        >>> model = TwoSidedClustering(2, 2)
        >>> data, truth = model.simulate(0, n_rows=4, n_cols=5, n_tokens=30)
        >>> inv = model.invariants(truth, data)
        >>> sorted(inv), inv["coassign_rows"].shape
        (['coassign_cols', 'coassign_rows', 'loglik', 'p_dyad'], (6,))
        """
        if dyads is None:
            dyads = default_dyads(data)
        if row_pairs is None:
            row_pairs = default_pairs(data.row_totals)
        if col_pairs is None:
            col_pairs = default_pairs(data.col_totals)
        kx, ky = self.shape
        kind = _kind(params)
        if kind == "labels":
            loglik = self.expected_log_likelihood(params["I"], params["J"], data)
        else:
            loglik = float(self.log_likelihood(params, data).sum())
        soft_i = soft_assignments(params["I"], data.n_rows, kx, "I")
        soft_j = soft_assignments(params["J"], data.n_cols, ky, "J")
        return {
            "loglik": np.asarray(loglik),
            "p_dyad": self.conditional(params, dyads, data),
            "coassign_rows": np.einsum(
                "nk,nk->n", soft_i[row_pairs[:, 0]], soft_i[row_pairs[:, 1]]
            ),
            "coassign_cols": np.einsum(
                "nk,nk->n", soft_j[col_pairs[:, 0]], soft_j[col_pairs[:, 1]]
            ),
        }

    # --------------------------------------------------------------- simulator
    simulation_sizes = {"n_rows": 12, "n_cols": 15, "n_tokens": 200}

    def _draw(self, rng, separated, separation, n_rows, n_cols, n_tokens):
        """Draw data from the Bayesian SCM (module docstring, steps 1-3).

        ``rho ~ Dir(alpha)``, ``I_i ~ Cat(rho^x)``, ``J_j ~ Cat(rho^y)``, ``pi ~ Dir(eta)`` over the
        occupied blocks, ``psi ~ Dir(eta)`` within each cluster, then ``n_tokens`` pairs from
        ``p_ij = pi[I_i, J_j] psi_x[i] psi_y[j]`` (a dense N x M table: for small sizes). With
        ``separated=True`` the partitions are instead balanced (objects dealt to clusters in turn,
        then shuffled), ``psi`` uniform within clusters, and ``pi`` puts mass ``separation`` on the
        blocks ``nu % Ky == mu`` or ``mu % Kx == nu`` and the rest uniformly on all blocks.

        Returns
        -------
        data : CoOccurrence
        truth : dict with ``I`` (N,), ``J`` (M,) int64 labels, ``pi`` (Kx x Ky), ``psi_x`` (N,),
            ``psi_y`` (M,), ``rho_x`` (Kx,), ``rho_y`` (Ky,): a draw-kind parameter dictionary.

        Examples
        --------
        >>> data, truth = TwoSidedClustering(2, 2).simulate(1, n_rows=4, n_cols=6, n_tokens=40)
        >>> data.total, truth["I"].shape, truth["pi"].shape
        (40, (4,), (2, 2))
        """
        kx, ky = self.shape
        check_integer("n_rows", n_rows)
        check_integer("n_cols", n_cols)
        check_integer("n_tokens", n_tokens)
        if separated:
            if n_rows < kx or n_cols < ky:
                raise ValueError(
                    f"separated clusters need n_rows >= {kx} and n_cols >= {ky}, "
                    f"got {n_rows} and {n_cols}"
                )
            if not 0 <= separation <= 1:
                raise ValueError(f"separation must lie in [0, 1], got {separation!r}")
            labels_i = balanced_labels(rng, n_rows, kx)
            labels_j = balanced_labels(rng, n_cols, ky)
            nu, mu = np.meshgrid(np.arange(kx), np.arange(ky), indexing="ij")
            on = (nu % ky == mu) | (mu % kx == nu)
            pi = separation * on / on.sum() + (1.0 - separation) / (kx * ky)
            rho_x, rho_y = np.full(kx, 1.0 / kx), np.full(ky, 1.0 / ky)
            psi_x = 1.0 / np.bincount(labels_i, minlength=kx)[labels_i]
            psi_y = 1.0 / np.bincount(labels_j, minlength=ky)[labels_j]
        else:
            rho_x = rng.dirichlet(np.full(kx, self.alpha))
            rho_y = rng.dirichlet(np.full(ky, self.alpha))
            labels_i = rng.choice(kx, size=n_rows, p=rho_x).astype(np.int64)
            labels_j = rng.choice(ky, size=n_cols, p=rho_y).astype(np.int64)
            occupied = np.outer(
                np.bincount(labels_i, minlength=kx) > 0, np.bincount(labels_j, minlength=ky) > 0
            )
            pi = np.zeros((kx, ky))
            pi[occupied] = rng.dirichlet(np.full(int(occupied.sum()), self.eta))
            psi_x = within_cluster(rng.standard_gamma(self.eta, n_rows), labels_i, kx)
            psi_y = within_cluster(rng.standard_gamma(self.eta, n_cols), labels_j, ky)
        p = pi[labels_i][:, labels_j] * psi_x[:, None] * psi_y[None, :]
        counts = draw_counts(rng, n_tokens, p.ravel()).reshape(n_rows, n_cols)
        truth = {
            "I": labels_i,
            "J": labels_j,
            "pi": pi,
            "psi_x": psi_x,
            "psi_y": psi_y,
            "rho_x": rho_x,
            "rho_y": rho_y,
        }
        return CoOccurrence(counts), truth

    # ---------------------------------------------------------- collapsed
    def collapsed_log_joint(self, I, J, data) -> np.ndarray:  # noqa: E741
        """Exact ``log p(I, J, S)`` with ``rho``, ``pi`` and ``psi`` integrated out, for many states.

        The product of the Dirichlet-collapsed priors of ``I`` and ``J`` and the collapsed marginal
        of the module docstring (sequence form). Vectorised over states: ``I`` (S, N) and ``J``
        (S, M) label arrays (or (N,), (M,); one of them may have a single row, broadcast), for the
        enumeration of tiny problems (memory ``S (N Kx + M Ky)``).

        Returns
        -------
        numpy.ndarray of shape (S,)

        Examples
        --------
        >>> from latentzoo.data import CoOccurrence
        >>> data = CoOccurrence([[2, 0], [0, 1]])
        >>> lp = TwoSidedClustering(2, 2).collapsed_log_joint([[0, 1], [1, 0]], [[0, 1], [1, 0]],
        ...                                                   data)
        >>> bool(np.isclose(lp[0], lp[1]))  # relabelling both partitions leaves it unchanged
        True
        """
        data = self.check_data(data)
        kx, ky = self.shape
        labels_i = np.atleast_2d(np.asarray(I))
        labels_j = np.atleast_2d(np.asarray(J))
        if labels_i.shape[0] != labels_j.shape[0]:
            if labels_i.shape[0] == 1:
                labels_i = np.repeat(labels_i, labels_j.shape[0], axis=0)
            elif labels_j.shape[0] == 1:
                labels_j = np.repeat(labels_j, labels_i.shape[0], axis=0)
            else:
                raise ValueError(
                    f"I has {labels_i.shape[0]} states and J {labels_j.shape[0]}: they must match"
                )
        n_states = labels_i.shape[0]
        n_rows, n_cols = data.shape
        for name, labels, n, k in (("I", labels_i, n_rows, kx), ("J", labels_j, n_cols, ky)):
            if labels.shape[1] != n:
                raise ValueError(f"{name} has {labels.shape[1]} columns, expected {n}")
            check_label_range(f"{name} labels", labels, k)
        states = np.arange(n_states)[:, None]
        onehot_i = np.zeros((n_states, n_rows, kx))
        onehot_i[states, np.arange(n_rows)[None, :], labels_i] = 1.0
        onehot_j = np.zeros((n_cols, n_states, ky))
        onehot_j[np.arange(n_cols)[None, :], states, labels_j] = 1.0
        row_by_col_cluster = np.asarray(data.counts @ onehot_j.reshape(n_cols, n_states * ky))
        row_by_col_cluster = row_by_col_cluster.reshape(n_rows, n_states, ky)
        block = np.einsum("snk,nsl->skl", onehot_i, row_by_col_cluster)
        n_i = data.row_totals.astype(float)
        m_j = data.col_totals.astype(float)
        sizes_x = onehot_i.sum(axis=1)
        sizes_y = onehot_j.sum(axis=0)
        mass_x = np.einsum("snk,n->sk", onehot_i, n_i)
        mass_y = np.einsum("nsk,n->sk", onehot_j, m_j)
        return collapsed_from_tables(
            sizes_x, sizes_y, mass_x, mass_y, block, n_i, m_j, self.alpha, self.eta
        )

    def log_prior(self, params) -> float:
        """Log prior mass of the partitions ``I`` and ``J``, the cluster weights integrated out.

        ``I_i ~ Cat(rho^x)`` with ``rho^x ~ Dir(alpha)`` collapsed: the symmetric
        Dirichlet-multinomial probability of the labelled assignment,
        ``Gamma(Kx alpha) / Gamma(N + Kx alpha) prod_nu Gamma(s_nu + alpha) / Gamma(alpha)`` with
        ``s_nu`` the cluster sizes, and likewise for ``J``. These are the only free variables of
        :meth:`pymc_model` (its ``Categorical`` declarations plus the ``assignment_prior``
        potential); ``pi`` and ``psi`` are integrated out of the likelihood there, so other keys of
        ``params`` are ignored. Written with ``gammaln`` independently of the PyMC declaration.

        Parameters
        ----------
        params : dict with ``I`` (N,) and ``J`` (M,) integer labels

        Returns
        -------
        float

        Examples
        --------
        >>> model = TwoSidedClustering(2, 2, alpha=1.0)
        >>> bool(np.isclose(model.log_prior({"I": [0, 0, 1], "J": [0, 1]}), np.log(1 / 72)))
        True
        """
        kx, ky = self.shape
        alpha = float(self.alpha)
        total = 0.0
        for name, k in (("I", kx), ("J", ky)):
            labels = np.asarray(params[name])
            labels = _labels(labels, labels.shape[0] if labels.ndim else -1, k, name)
            sizes = np.bincount(labels, minlength=k)
            total += float(
                gammaln(k * alpha)
                - gammaln(labels.shape[0] + k * alpha)
                + np.sum(gammaln(sizes + alpha) - gammaln(alpha))
            )
        return total

    # --------------------------------------------------------------- reference
    def pymc_model(self, data, temperature: float = 1.0):
        """The PyMC reference: ``I`` and ``J`` as ``pm.Categorical``, everything else collapsed.

        Two coupled assignment vectors cannot both be summed out, so ``I`` (dims ``row``) and ``J``
        (``col``) stay discrete with a uniform ``Categorical`` declaration, and two potentials add
        the rest: ``assignment_prior`` (the Dirichlet-collapsed prior of ``I`` and ``J`` minus the
        uniform declaration) and ``marginal_loglik`` (the collapsed ``log p(S | I, J)`` in pytensor:
        ``gammaln`` of the block, cluster and object counts, divided by ``temperature``). At
        ``temperature = 1`` the model's log density equals :meth:`collapsed_log_joint`. ``pm.sample``
        assigns ``CategoricalGibbsMetropolis`` to ``I`` and ``J``; each update recomputes the dense
        ``N x M`` block counts, so this reference is for **tiny problems only** (a few dozen
        objects).

        Examples
        --------
        >>> from latentzoo.data import load
        >>> m = TwoSidedClustering(2, 2).pymc_model(load("toy"))
        >>> sorted(m.named_vars)
        ['I', 'J', 'assignment_prior', 'marginal_loglik']
        """
        import pymc as pm
        import pytensor.tensor as pt

        data = self.check_data(data)
        check_positive("temperature", temperature)
        kx, ky = self.shape
        n_rows, n_cols = data.shape
        counts = data.toarray().astype(float)
        n_i = data.row_totals.astype(float)
        m_j = data.col_totals.astype(float)
        total = float(data.total)
        alpha, eta = float(self.alpha), float(self.eta)
        constant = float(
            np.sum(gammaln(n_i + eta) - gammaln(eta)) + np.sum(gammaln(m_j + eta) - gammaln(eta))
        )

        def dm_sizes(sizes, k, n):
            return (
                gammaln(k * alpha)
                - gammaln(n + k * alpha)
                + pt.sum(pt.gammaln(sizes + alpha))
                - k * gammaln(alpha)
            )

        def within(sizes, mass):
            safe = pt.maximum(sizes, 1.0)
            terms = pt.gammaln(safe * eta) - pt.gammaln(mass + safe * eta)
            return pt.sum(pt.switch(sizes > 0, terms, 0.0))

        with pm.Model(coords=self.coords(data)) as model:
            labels_i = pm.Categorical("I", p=np.full(kx, 1.0 / kx), dims="row")
            labels_j = pm.Categorical("J", p=np.full(ky, 1.0 / ky), dims="col")
            onehot_i = pt.eq(labels_i[:, None], np.arange(kx)[None, :]).astype("float64")
            onehot_j = pt.eq(labels_j[:, None], np.arange(ky)[None, :]).astype("float64")
            sizes_x = onehot_i.sum(axis=0)
            sizes_y = onehot_j.sum(axis=0)
            block = pt.dot(pt.dot(onehot_i.T, counts), onehot_j)
            prior = dm_sizes(sizes_x, kx, n_rows) + dm_sizes(sizes_y, ky, n_cols)
            uniform = n_rows * np.log(1.0 / kx) + n_cols * np.log(1.0 / ky)
            pm.Potential("assignment_prior", prior - uniform)
            n_blocks = pt.sum(sizes_x > 0) * pt.sum(sizes_y > 0)
            n_blocks = n_blocks.astype("float64")
            loglik = (
                pt.gammaln(n_blocks * eta)
                - pt.gammaln(total + n_blocks * eta)
                + pt.sum(pt.gammaln(block + eta) - gammaln(eta))
                + within(sizes_x, pt.dot(n_i, onehot_i))
                + within(sizes_y, pt.dot(m_j, onehot_j))
                + constant
            )
            pm.Potential("marginal_loglik", loglik / temperature)
        return model


def within_cluster(weights, labels, k) -> np.ndarray:
    """Normalise positive ``weights`` within each cluster: Gamma(eta) weights give Dir(eta) draws.

    A cluster whose weights all underflow to 0 gets the uniform distribution over its members.

    Examples
    --------
    >>> within_cluster(np.array([1.0, 3.0, 2.0]), np.array([0, 0, 1]), 2).tolist()
    [0.25, 0.75, 1.0]
    """
    totals = np.bincount(labels, weights=weights, minlength=k)
    sizes = np.bincount(labels, minlength=k)
    uniform = 1.0 / np.maximum(sizes, 1)
    ok = totals[labels] > 0
    return np.where(ok, weights / np.where(ok, totals[labels], 1.0), uniform[labels])


def collapsed_from_tables(sizes_x, sizes_y, mass_x, mass_y, block, n_i, m_j, alpha, eta):
    """The collapsed ``log p(I, J, S)`` from count tables, vectorised over a leading state axis.

    ``sizes_*`` (S, K) cluster sizes, ``mass_*`` (S, K) token counts of the clusters, ``block``
    (S, Kx, Ky) block counts, ``n_i``, ``m_j`` the object totals (see the module docstring).
    """
    sizes_x = np.asarray(sizes_x, dtype=float)
    sizes_y = np.asarray(sizes_y, dtype=float)
    kx, ky = sizes_x.shape[-1], sizes_y.shape[-1]
    n_rows, n_cols = float(len(n_i)), float(len(m_j))
    total = float(np.sum(n_i))

    def dm_sizes(sizes, k, n):
        return (
            gammaln(k * alpha)
            - gammaln(n + k * alpha)
            + np.sum(gammaln(sizes + alpha), axis=-1)
            - k * gammaln(alpha)
        )

    def within(sizes, mass):
        safe = np.maximum(sizes, 1.0)
        terms = gammaln(safe * eta) - gammaln(mass + safe * eta)
        return np.sum(np.where(sizes > 0, terms, 0.0), axis=-1)

    n_blocks = np.count_nonzero(sizes_x, axis=-1) * np.count_nonzero(sizes_y, axis=-1)
    blocks = (
        gammaln(n_blocks * eta)
        - gammaln(total + n_blocks * eta)
        + np.sum(gammaln(block + eta) - gammaln(eta), axis=(-2, -1))
    )
    constant = np.sum(gammaln(n_i + eta) - gammaln(eta)) + np.sum(gammaln(m_j + eta) - gammaln(eta))
    return (
        dm_sizes(sizes_x, kx, n_rows)
        + dm_sizes(sizes_y, ky, n_cols)
        + blocks
        + within(sizes_x, mass_x)
        + within(sizes_y, mass_y)
        + constant
    )
