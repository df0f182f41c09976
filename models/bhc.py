"""Bayesian hierarchical clustering (BHC): the DPM's tree, its evidence, its bound and its predictive.

Heller (2007, thesis), chapter 3 (Heller & Ghahramani 2005). A binary tree ``T`` over the items is
read as a mixture over its *tree-consistent partitions* (every block is the leaf set of a subtree).
For node ``k`` with children ``i, j`` and ``n_k`` items ``D_k``:

- the merge prior of Algorithm 3.3, ``d_k = alpha Gamma(n_k) + d_i d_j`` (leaves ``d = alpha``) and
  ``pi_k = alpha Gamma(n_k) / d_k``, kept in log space (``d_k`` grows like ``Gamma(n_k)`` and
  overflows float64 beyond about 170 items):
  ``log d_k = logaddexp(log alpha + gammaln(n_k), log d_i + log d_j)``;
- the evidence recursion eq. (3.2),
  ``p(D_k | T_k) = pi_k p(D_k | H_1^k) + (1 - pi_k) p(D_i | T_i) p(D_j | T_j)``,
  with ``p(D_k | H_1^k)`` the conjugate cluster marginal eq. (3.1) of a component of
  :mod:`latentzoo.models.conjugate`;
- the posterior of the merged hypothesis eq. (3.3), ``r_k = pi_k p(D_k | H_1^k) / p(D_k | T_k)``.

Theorem 3.1: ``p(D_k | T_k) = sum_{v in V_T} alpha^{m_v} prod_l Gamma(n_l) / d_k prod_l p(D_l)``,
the sum over all tree-consistent partitions ``v`` of the DPM weight of Lemma 3.1 / eq. (3.9) up to
the constant ``d_k Gamma(alpha) / Gamma(n_k + alpha)``; hence Corollary 3.1, the lower bound
``log d + log Gamma(alpha) - log Gamma(n + alpha) + log p(D | T) <= log p(D)`` on the DPM marginal
likelihood (:meth:`Tree.lower_bound`), whose exact value for small data is
:meth:`~latentzoo.models.mixture.DirichletProcessMixture.log_marginal_likelihood`.

This module holds the model (:class:`BayesianHierarchicalClustering`), the recursion evaluated on
any given tree (:meth:`BayesianHierarchicalClustering.evaluate`), the :class:`Tree` result with its
cut (Algorithm 3.2), its predictive distribution (eqs. (3.10)-(3.11)) and co-assignment
probabilities, and the exact dendrogram purity of footnote 3 (:func:`dendrogram_purity`). The greedy
construction of the tree (Algorithm 3.2), its randomised versions (Algorithms 3.4-3.6) and the
hyperparameter search (section 3.4.1) are in :mod:`latentzoo.inference.bhc`.

Statistics of a node. Kinds 0 and 1 (Beta-Bernoulli, Dirichlet-multinomial) keep the component's
own row ``[n, sum_i x_i]``, and the row of a merged node is the sum of its children's. Kind 2
(Normal-Gamma) keeps the component's row ``[n, mean, M2]``, and kind 3 (Normal-inverse-Wishart)
the moments ``[n, mean (D), scatter (D*D)]`` about the node's mean; both merge by the pairwise
update of Chan, Golub & LeVeque (1979), ``M2 = M2_i + M2_j + n_i n_j / n (mean_j - mean_i)^2``,
which is the sum of the children's raw moments without the cancellation of ``sum x^2 - n mean^2``.
Kind 3 is turned into the component's ``[n, mu_n, chol(Psi_n)]`` row (one Cholesky factorisation)
before :func:`~latentzoo.models.conjugate.log_marginal_one` scores it.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, field
from typing import NamedTuple

import numba as nb
import numpy as np
from scipy.cluster.hierarchy import fcluster
from scipy.special import gammaln, logsumexp

from latentzoo.data import Features
from latentzoo.models._checks import check_integer, check_positive
from latentzoo.models.base import TreeModel
from latentzoo.models.conjugate import COMPONENTS as _COMPONENT_NAMES
from latentzoo.models.conjugate import BetaBernoulli, log_marginal_one
from latentzoo.models.mixture import DirichletProcessMixture

__all__ = [
    "BayesianHierarchicalClustering",
    "Tree",
    "dendrogram_purity",
    "merge_quantities",
    "plot_dendrogram",
]

_LOG_HALF = math.log(0.5)


# ------------------------------------------------------------------------------ numba kernels
@nb.njit(cache=True)
def merge_quantities(log_alpha, n_k, log_h1, log_d_i, log_d_j, log_ev_i, log_ev_j):
    """The per-merge quantities of Algorithm 3.3 and eqs. (3.2)-(3.3), in log space.

    With ``A = log(alpha Gamma(n_k))`` and ``B = log(d_i d_j)``: ``log d_k = logaddexp(A, B)``
    (Algorithm 3.3), ``log pi_k = A - log d_k``, ``log(1 - pi_k) = B - log d_k``,
    ``log p(D_k | T_k) = logaddexp(A + log_h1, B + log_ev_i + log_ev_j) - log d_k`` (eq. (3.2)) and
    ``log r_k = A + log_h1 - logaddexp(...)`` (eq. (3.3)); ``log(1 - r_k)`` is computed from its own
    term, never as ``log(1 - exp(log r_k))``, so both stay accurate when ``r_k`` is near 0 or 1.

    Returns
    -------
    tuple of float
        ``(log_d, log_evidence, log_r, log_1mr, log_pi)``.

    Examples
    --------
    >>> # two items, alpha = 1: d = Gamma(2) + 1 = 2, pi = 1/2
    >>> q = merge_quantities(0.0, 2.0, np.log(0.2), 0.0, 0.0, np.log(0.5), np.log(0.5))
    >>> np.round(np.exp(q), 6).tolist()  # p(D|T) = 0.5*0.2 + 0.5*0.25
    [2.0, 0.225, 0.444444, 0.555556, 0.5]
    """
    a = log_alpha + math.lgamma(n_k)
    b = log_d_i + log_d_j
    log_d = max(a, b) + math.log1p(math.exp(-abs(a - b)))
    one = a + log_h1
    two = b + log_ev_i + log_ev_j
    if one == -math.inf and two == -math.inf:
        tot = -math.inf
    else:
        tot = max(one, two) + math.log1p(math.exp(-abs(one - two)))
    return log_d, tot - log_d, one - tot, two - tot, a - log_d


@nb.njit(cache=True)
def _merge_rows(kind, a, b, out):
    """Statistics of the union of two nodes into ``out`` (layouts of the module docstring)."""
    size = a.shape[0]
    if kind == 0 or kind == 1:
        for s in range(size):
            out[s] = a[s] + b[s]
        return
    na = a[0]
    nb_ = b[0]
    n = na + nb_
    if kind == 2:
        D = (size - 1) // 2
        for d in range(D):
            delta = b[1 + d] - a[1 + d]
            out[1 + d] = a[1 + d] + delta * nb_ / n
            out[1 + D + d] = a[1 + D + d] + b[1 + D + d] + delta * delta * na * nb_ / n
        out[0] = n
        return
    D = int((math.sqrt(4.0 * size - 3.0) - 1.0) / 2.0 + 0.5)
    w = na * nb_ / n
    for d in range(D):
        out[1 + d] = a[1 + d] + (b[1 + d] - a[1 + d]) * nb_ / n
    off = 1 + D
    for p in range(D):
        dp = b[1 + p] - a[1 + p]
        for q in range(D):
            dq = b[1 + q] - a[1 + q]
            out[off + p * D + q] = a[off + p * D + q] + b[off + p * D + q] + w * dp * dq
    out[0] = n


@nb.njit(cache=True)
def _niw_component_row(hyper, row, out):
    """``[n, mean, scatter]`` -> the component's ``[n, mu_n, chol(Psi_n)]`` (Murphy 2007 (250)-(254))."""
    size = row.shape[0]
    D = int((math.sqrt(4.0 * size - 3.0) - 1.0) / 2.0 + 0.5)
    n = row[0]
    k0 = hyper[0]
    kn = k0 + n
    off = 1 + D
    shrink = k0 * n / kn
    for d in range(D):
        out[1 + d] = (k0 * hyper[3 + d] + n * row[1 + d]) / kn
    # Psi_n = L0 L0^T + S + shrink dev dev^T, then an in-place Cholesky factorisation
    for p in range(D):
        dp = row[1 + p] - hyper[3 + p]
        for q in range(p + 1):
            dq = row[1 + q] - hyper[3 + q]
            s = row[off + p * D + q] + shrink * dp * dq
            for t in range(q + 1):
                s += hyper[3 + D + p * D + t] * hyper[3 + D + q * D + t]
            out[off + p * D + q] = s
    for j in range(D):
        s = out[off + j * D + j]
        for t in range(j):
            s -= out[off + j * D + t] * out[off + j * D + t]
        ljj = math.sqrt(s) if s > 0.0 else 1e-300
        out[off + j * D + j] = ljj
        for i in range(j + 1, D):
            s = out[off + i * D + j]
            for t in range(j):
                s -= out[off + i * D + t] * out[off + j * D + t]
            out[off + i * D + j] = s / ljj
        for i in range(j):
            out[off + i * D + j] = 0.0
    out[0] = n


@nb.njit(cache=True)
def _row_log_h1(kind, hyper, row, work):
    """``log p(D_k | H_1)`` (eq. (3.1)) of one node's statistics, by ``log_marginal_one``."""
    if kind == 3:
        _niw_component_row(hyper, row, work)
        return log_marginal_one(kind, hyper, work)
    return log_marginal_one(kind, hyper, row)


@nb.njit(cache=True)
def _pair_log_h1(kind, hyper, tables, const, rows, i, j, merged, work):
    """``log p(D_i u D_j | H_1)``; Beta-Bernoulli with ``tables`` reads the log-Gammas from them.

    ``tables[0, e, t] = lgamma(a_e + t)``, ``tables[1, e, t] = lgamma(b_e + t)``,
    ``tables[2, e, t] = lgamma(a_e + b_e + t)`` for integer ``t`` (the counts of binary data are
    integers) and ``e`` the feature (or 0 when ``a, b`` are shared); ``const`` is
    ``sum_d [lgamma(a_d + b_d) - lgamma(a_d) - lgamma(b_d)]``. The value equals
    ``log_marginal_one`` of the summed row (tested); the tables only avoid ``3 D`` ``lgamma``
    calls per candidate pair.
    """
    if kind == 0 and tables.shape[2] > 0:
        ri = rows[i]
        rj = rows[j]
        n = int(ri[0] + rj[0] + 0.5)
        D = ri.shape[0] - 1
        shared = tables.shape[1] == 1
        out = const
        for d in range(D):
            e = 0 if shared else d
            m = int(ri[1 + d] + rj[1 + d] + 0.5)
            out += tables[0, e, m] + tables[1, e, n - m] - tables[2, e, n]
        return out
    _merge_rows(kind, rows[i], rows[j], merged)
    return _row_log_h1(kind, hyper, merged, work)


@nb.njit(cache=True)
def _evaluate_tree(children, rows, log_d, log_ev, log_h1, kind, hyper, log_alpha):
    """Fill rows ``L..2L-2`` and the per-merge quantities for the merges ``children`` (in order)."""
    n_merges = children.shape[0]
    L = n_merges + 1
    work = np.empty(rows.shape[1])
    log_r = np.empty(n_merges)
    log_1mr = np.empty(n_merges)
    log_pi = np.empty(n_merges)
    for m in range(n_merges):
        i = children[m, 0]
        j = children[m, 1]
        k = L + m
        _merge_rows(kind, rows[i], rows[j], rows[k])
        log_h1[k] = _row_log_h1(kind, hyper, rows[k], work)
        q = merge_quantities(
            log_alpha, rows[k, 0], log_h1[k], log_d[i], log_d[j], log_ev[i], log_ev[j]
        )
        log_d[k], log_ev[k], log_r[m], log_1mr[m], log_pi[m] = q
    return log_r, log_1mr, log_pi


@nb.njit(cache=True)
def _alpha_gradient(children, log_r, log_1mr, log_pi, n_leaves, alpha):
    """``d log p(D_k | T_k) / d alpha`` of the root on a fixed tree (section 3.4.1), bottom-up.

    With ``delta_k = d log d_k / d alpha`` and ``g_k = d log p(D_k | T_k) / d alpha`` (leaves:
    ``delta = 1 / alpha``, ``g = 0``): ``delta_k = pi_k / alpha + (1 - pi_k)(delta_i + delta_j)``
    (from ``d d_k / d alpha = Gamma(n_k) + d'_i d_j + d_i d'_j``) and, since
    ``d pi_k / d alpha = pi_k (1 / alpha - delta_k)``,
    ``g_k = (1 / alpha - delta_k)(r_k - (1 - r_k) pi_k / (1 - pi_k)) + (1 - r_k)(g_i + g_j)``.
    """
    L = n_leaves
    delta = np.empty(2 * L - 1)
    g = np.zeros(2 * L - 1)
    delta[:L] = 1.0 / alpha
    for m in range(children.shape[0]):
        i = children[m, 0]
        j = children[m, 1]
        k = L + m
        pi = math.exp(log_pi[m])
        r = math.exp(log_r[m])
        one_minus_r = math.exp(log_1mr[m])
        delta[k] = pi / alpha + (1.0 - pi) * (delta[i] + delta[j])
        odds = math.exp(log_1mr[m] + log_pi[m] - math.log(-math.expm1(log_pi[m])))
        g[k] = (1.0 / alpha - delta[k]) * (r - odds) + one_minus_r * (g[i] + g[j])
    return g[2 * L - 2]


@nb.njit(cache=True)
def _component_rows(kind, hyper, rows):
    """The component-layout statistics of every node (a copy; kind 3 is converted)."""
    if kind != 3:
        return rows.copy()
    out = np.empty_like(rows)
    for k in range(rows.shape[0]):
        _niw_component_row(hyper, rows[k], out[k])
    return out


@nb.njit(cache=True)
def _top_down_log_reach(children, log_1mr, sizes, log_root):
    """``log prod_{i in N_k} (1 - r_i) n_{i+} / (n_{i+} + n_{i-})`` of eq. (3.11) for every node."""
    n_merges = children.shape[0]
    L = n_merges + 1
    out = np.empty(2 * L - 1)
    out[2 * L - 2] = log_root
    for m in range(n_merges - 1, -1, -1):
        k = L + m
        base = out[k] + log_1mr[m] - math.log(sizes[k])
        for c in range(2):
            child = children[m, c]
            out[child] = base + math.log(sizes[child])
    return out


@nb.njit(cache=True)
def _cut_owner(children, log_r, threshold):
    """Per leaf, the cluster node of the cut (Algorithm 3.2): the highest node with ``r >= 1/2``."""
    n_merges = children.shape[0]
    L = n_merges + 1
    owner = np.full(2 * L - 1, -1, dtype=np.int64)
    for m in range(n_merges - 1, -1, -1):
        k = L + m
        if owner[k] < 0 and log_r[m] >= threshold:
            owner[k] = k
        for c in range(2):
            owner[children[m, c]] = owner[k]
    for i in range(L):
        if owner[i] < 0:
            owner[i] = i
    return owner[:L]


@nb.njit(cache=True)
def _class_counts(children, leaf_counts):
    """Class counts ``(2L - 1, C)`` of every node, bottom-up (footnote 3's recursion)."""
    L = leaf_counts.shape[0]
    C = leaf_counts.shape[1]
    counts = np.zeros((2 * L - 1, C))
    counts[:L] = leaf_counts
    for m in range(children.shape[0]):
        for c in range(C):
            counts[L + m, c] = counts[children[m, 0], c] + counts[children[m, 1], c]
    return counts


@nb.njit(cache=True)
def _parents(children):
    L = children.shape[0] + 1
    parent = np.full(2 * L - 1, -1, dtype=np.int64)
    for m in range(children.shape[0]):
        parent[children[m, 0]] = L + m
        parent[children[m, 1]] = L + m
    return parent


@nb.njit(cache=True)
def _pair_coassignment(children, log_1mr, leaf_of, pairs):
    """``1 - prod_{a on the path root..LCA(i, j)} (1 - r_a)`` for each item pair (depth-synchronised walk)."""
    L = children.shape[0] + 1
    parent = _parents(children)
    depth = np.zeros(2 * L - 1, dtype=np.int64)
    # sum of log(1 - r_a) over the ancestors a of a node, the node itself included
    log_split = np.zeros(2 * L - 1)
    for m in range(children.shape[0] - 1, -1, -1):
        k = L + m
        log_split[k] += log_1mr[m]
        for c in range(2):
            child = children[m, c]
            depth[child] = depth[k] + 1
            log_split[child] = log_split[k]
    out = np.empty(pairs.shape[0])
    for p in range(pairs.shape[0]):
        u = leaf_of[pairs[p, 0]]
        v = leaf_of[pairs[p, 1]]
        while depth[u] > depth[v]:
            u = parent[u]
        while depth[v] > depth[u]:
            v = parent[v]
        while u != v:
            u = parent[u]
            v = parent[v]
        # a leaf always forms its own block: two items of one leaf cluster are co-assigned
        out[p] = 1.0 if u < L else -math.expm1(log_split[u])
    return out


# ------------------------------------------------------------------------------ helpers
def _feature_count(kind: int, row_size: int) -> int:
    """Number of features of a component-layout stats row of length ``row_size``."""
    if kind in (0, 1):
        return row_size - 1
    if kind == 2:
        return (row_size - 1) // 2
    return int(round((math.sqrt(4.0 * row_size - 3.0) - 1.0) / 2.0))


def _leaf_rows(component, X: np.ndarray, labels=None, n_leaves=None) -> np.ndarray:
    """Internal statistics rows of the leaves: one item each, or the clusters ``labels``."""
    if labels is None:
        labels = np.arange(X.shape[0])
        n_leaves = X.shape[0]
    if component.kind_code != 3:
        return np.ascontiguousarray(component.stats(X, labels, n_leaves), dtype=np.float64)
    counts = np.bincount(labels, minlength=n_leaves).astype(np.float64)
    sums = np.zeros((n_leaves, X.shape[1]))
    np.add.at(sums, labels, X)
    means = sums / np.maximum(counts, 1.0)[:, None]
    c = X - means[labels]
    D = X.shape[1]
    scatter = np.zeros((n_leaves, D * D))
    np.add.at(scatter, labels, (c[:, :, None] * c[:, None, :]).reshape(X.shape[0], D * D))
    return np.column_stack([counts, means, scatter])


def _bernoulli_tables(component, D: int, n_max: int):
    """The log-Gamma tables of :func:`_pair_log_h1` (an empty one for other components)."""
    if component.kind_code != 0:
        return np.zeros((3, 1, 0)), 0.0
    h = component.hyperparameters(D)
    a, b = h["a"], h["b"]
    if np.all(a == a[0]) and np.all(b == b[0]):
        a, b = a[:1], b[:1]
    t = np.arange(n_max + 1, dtype=np.float64)
    tables = np.stack(
        [gammaln(a[:, None] + t), gammaln(b[:, None] + t), gammaln((a + b)[:, None] + t)]
    )
    h_a, h_b = h["a"], h["b"]
    const = float(np.sum(gammaln(h_a + h_b) - gammaln(h_a) - gammaln(h_b)))
    return np.ascontiguousarray(tables), const


def _dense(X) -> np.ndarray:
    """A dense float array of a dense or scipy sparse matrix."""
    return np.asarray(X.toarray() if hasattr(X, "toarray") else X, dtype=np.float64)


def _check_children(children, n_leaves: int) -> np.ndarray:
    """``children`` as an ``(n_leaves - 1, 2)`` int64 array of a valid merge sequence, or ValueError."""
    arr = np.asarray(children)
    if arr.ndim == 2 and arr.shape[1] == 4:  # a scipy linkage matrix
        arr = arr[:, :2]
    if arr.shape != (n_leaves - 1, 2):
        raise ValueError(
            f"children must have shape ({n_leaves - 1}, 2) for {n_leaves} leaves, got {arr.shape}"
        )
    if arr.size and (not np.all(np.isfinite(arr)) or np.any(arr != np.round(arr))):
        raise ValueError("children must hold integer node ids")
    arr = arr.astype(np.int64)
    created = n_leaves + np.arange(n_leaves - 1)
    used = np.zeros(2 * n_leaves - 1, dtype=bool)
    for m, (i, j) in enumerate(arr.tolist()):  # O(n) validation of user input, not a hot path
        for node in (i, j):
            if not 0 <= node < created[m] or used[node]:
                raise ValueError(
                    f"children[{m}] = ({i}, {j}): node {node} is not an existing, unmerged node"
                )
            used[node] = True
        if i == j:
            raise ValueError(f"children[{m}] merges node {i} with itself")
    return arr


# ------------------------------------------------------------------------------ results
@dataclass(frozen=True, eq=False)
class Tree:
    """A BHC tree with its per-merge quantities (scipy linkage convention for node ids).

    Leaves are nodes ``0..L-1`` (items, or the initial clusters of EMBHC); merge ``m`` joins
    ``children[m]`` into node ``L + m``; the root is node ``2 L - 2``.

    Attributes
    ----------
    children : numpy.ndarray (L - 1, 2) int64
        The two nodes merged at each step.
    log_r, log_1mr : numpy.ndarray (L - 1,)
        ``log r_k`` and ``log(1 - r_k)``, eq. (3.3).
    log_evidence : numpy.ndarray (L - 1,)
        ``log p(D_k | T_k)``, eq. (3.2).
    log_d, log_pi : numpy.ndarray (L - 1,)
        ``log d_k`` and ``log pi_k`` of Algorithm 3.3.
    log_h1 : numpy.ndarray (L - 1,)
        ``log p(D_k | H_1^k)``, eq. (3.1).
    sizes : numpy.ndarray (L - 1,) int64
        ``n_k``, the number of items under each merge.
    leaf_sizes, leaf_log_evidence, leaf_log_d : numpy.ndarray (L,)
        Items per leaf (1 for plain BHC), ``log p(D_i)`` and ``log d_i`` (``log alpha`` for one item,
        ``log(alpha Gamma(n_i))`` for a leaf cluster, whose ``pi_i = 1``).
    node_stats : numpy.ndarray (2L - 1, S)
        The component's statistics rows of every node (for the predictive (3.10)).
    alpha : float
    component : conjugate component
    leaf_of : numpy.ndarray (N,) int64 or None
        The leaf of each item when the leaves are clusters (EMBHC), else ``None`` (item ``i`` is
        leaf ``i``).
    info : dict
        The method that built the tree, its settings and diagnostics (e.g. ``"rescans"``:
        best-partner recomputations of the greedy search).
    coords : dict
        ``{"item": names, "feature": names}`` of the clustered data (empty when built from a bare
        array by :meth:`BayesianHierarchicalClustering.evaluate`); used by
        :meth:`to_inference_data`.

    Examples
    --------
    >>> from latentzoo.inference.bhc import bhc
    >>> tree = bhc(BayesianHierarchicalClustering(), [[1, 1], [1, 1], [0, 0]])
    >>> tree.children.tolist(), tree.cut().tolist()
    ([[0, 1], [2, 3]], [0, 0, 1])
    """

    children: np.ndarray
    log_r: np.ndarray
    log_1mr: np.ndarray
    log_evidence: np.ndarray
    log_d: np.ndarray
    log_pi: np.ndarray
    log_h1: np.ndarray
    sizes: np.ndarray
    leaf_sizes: np.ndarray
    leaf_log_evidence: np.ndarray
    leaf_log_d: np.ndarray
    node_stats: np.ndarray
    alpha: float
    component: object
    leaf_of: np.ndarray | None = None
    info: dict = field(default_factory=dict)
    coords: dict = field(default_factory=dict)

    @property
    def n_leaves(self) -> int:
        """Number of leaves ``L``."""
        return int(self.leaf_sizes.shape[0])

    @property
    def n_items(self) -> int:
        """Number of items ``N`` (the sum of the leaf sizes)."""
        return int(self.leaf_sizes.sum())

    @property
    def log_marginal(self) -> float:
        """``log p(D | T)`` of the root, eq. (3.2): the BHC approximation of the DPM evidence."""
        return (
            float(self.log_evidence[-1])
            if self.log_evidence.size
            else float(self.leaf_log_evidence[0])
        )

    def _node_log_d(self) -> float:
        return float(self.log_d[-1]) if self.log_d.size else float(self.leaf_log_d[0])

    def lower_bound(self) -> float:
        """Corollary 3.1: ``log[d Gamma(alpha) / Gamma(n + alpha) p(D | T)] <= log p(D)``.

        Equal to the log of the sum, over the tree-consistent partitions, of the DPM joint
        ``p(v) p(D | v)`` (eq. (3.9) and Lemma 3.1), so it never exceeds the exact DPM marginal.

        Examples
        --------
        >>> from latentzoo.inference.bhc import bhc
        >>> model = BayesianHierarchicalClustering(alpha=1.0)
        >>> x = [[1, 0], [1, 0], [0, 1]]
        >>> tree = bhc(model, x)
        >>> bool(tree.lower_bound() <= model.dpm.log_marginal_likelihood(x) + 1e-12)
        True
        """
        n = self.n_items
        return float(
            self._node_log_d() + gammaln(self.alpha) - gammaln(n + self.alpha) + self.log_marginal
        )

    def to_arrays(self) -> dict:
        """The tree as plain numpy arrays, for ``numpy.savez`` (loadable with ``allow_pickle=False``).

        Every attribute array, ``alpha`` (0-d), ``leaf_of`` (``arange(N)`` for plain BHC), the
        component's name and hyperparameters broadcast to the features (``hyper_<name>``; rebuild
        it with :func:`latentzoo.models.conjugate.component_named`) and ``linkage``
        (:meth:`to_linkage`).

        Examples
        --------
        >>> import io
        >>> tree = BayesianHierarchicalClustering().evaluate([[0, 1]], [[1, 0], [1, 1]])
        >>> buffer = io.BytesIO()
        >>> np.savez(buffer, **tree.to_arrays())
        >>> _ = buffer.seek(0)
        >>> saved = np.load(buffer, allow_pickle=False)
        >>> str(saved["component"]), saved["children"].tolist(), saved["hyper_a"].tolist()
        ('beta_bernoulli', [[0, 1]], [1.0, 1.0])
        """
        names = {cls.__name__: name for name, cls in _COMPONENT_NAMES.items()}
        comp = self.component
        D = _feature_count(comp.kind_code, self.node_stats.shape[1])
        out = {
            name: np.asarray(getattr(self, name))
            for name in (
                "children",
                "log_r",
                "log_1mr",
                "log_evidence",
                "log_d",
                "log_pi",
                "log_h1",
                "sizes",
                "leaf_sizes",
                "leaf_log_evidence",
                "leaf_log_d",
                "node_stats",
            )
        }
        out["alpha"] = np.asarray(self.alpha)
        out["leaf_of"] = np.arange(self.n_items) if self.leaf_of is None else self.leaf_of
        out["component"] = np.asarray(names.get(type(comp).__name__, type(comp).__name__))
        for name, value in comp.hyperparameters(D).items():
            out[f"hyper_{name}"] = np.asarray(value, dtype=np.float64)
        out["linkage"] = self.to_linkage() if self.children.size else np.zeros((0, 4))
        return out

    def to_inference_data(self, data=None):
        """The tree as an ``InferenceData`` that ``to_netcdf`` saves and ``az.from_netcdf`` reads.

        The package's layout of a point estimate (as EM results; no ``posterior``): the
        ``point_estimate`` group holds ``cluster`` (item), the partition of :meth:`cut`, and
        ``log_marginal``, with the attribute ``point_estimate=1``; the ``bhc_tree`` group holds
        every array of :meth:`to_arrays` with named dimensions (``merge``, ``leaf``, ``node``,
        ``item``, ``feature``); ``observed_data`` holds ``x`` when ``data`` is given. The
        attributes of every group record the model (``model``, ``model_alpha``,
        ``model_component``), the method and its settings (``Tree.info``), ``log_marginal`` and
        ``lower_bound`` (Corollary 3.1).

        Parameters
        ----------
        data : Features or array_like, optional
            The clustered data: its item and feature names become coordinates.

        Examples
        --------
        >>> from latentzoo.inference.bhc import bhc
        >>> from latentzoo.data import Features
        >>> data = Features([[1, 1], [1, 1], [0, 0]], item_names=["a", "b", "c"])
        >>> idata = bhc(BayesianHierarchicalClustering(), data).to_inference_data(data)
        >>> idata.point_estimate["cluster"].sel(item="c").item(), idata.point_estimate.attrs["method"]
        (1, 'bhc')
        >>> idata.bhc_tree["children"].dims
        ('merge', 'side')
        """
        import arviz as az
        import xarray as xr

        from latentzoo.models.base import model_attrs, netcdf_attr

        model = BayesianHierarchicalClustering(alpha=self.alpha, component=self.component)
        coords = self.coords or {"item": np.arange(self.n_items).astype(str)}
        if data is not None:
            data = model.check_data(data)
            if data.X.shape[0] != self.n_items:
                raise ValueError(
                    f"data has {data.X.shape[0]} items, but the tree has {self.n_items}"
                )
            coords = data.coords()
        arrays = self.to_arrays()
        n_features = len(coords["feature"]) if "feature" in coords else None
        dims_of = {
            "children": ("merge", "side"),
            "linkage": ("merge", "linkage_column"),
            "node_stats": ("node", "statistic"),
            "leaf_of": ("item",),
        }
        variables = {}
        for name, value in arrays.items():
            value = np.asarray(value)
            if name in dims_of:
                dims = dims_of[name]
            elif name.startswith("leaf_"):
                dims = ("leaf",)
            elif name.startswith("hyper_"):
                dims = tuple(
                    "feature" if size == n_features and axis == 0 else f"{name}_axis{axis}"
                    for axis, size in enumerate(value.shape)
                )
            else:
                dims = ("merge",)[: value.ndim]
            variables[name] = (dims, value)
        item_coords = {"item": coords["item"]}
        if n_features is not None:
            item_coords["feature"] = coords["feature"]
        tree_group = xr.Dataset(variables, coords=item_coords)
        attrs = {
            **model_attrs(model),
            **{
                key: value
                for key, value in ((k, netcdf_attr(v)) for k, v in self.info.items())
                if value is not None
            },
            "point_estimate": 1,
            "log_marginal": self.log_marginal,
            "lower_bound": self.lower_bound(),
            "n_clusters": int(self.cut().max()) + 1,
        }
        attrs.setdefault("method", "evaluate")
        groups = {
            # The layout of latentzoo.inference.results.point_estimate_inference_data, which
            # this layer cannot import.
            "point_estimate": xr.Dataset(
                {
                    "cluster": (("item",), self.cut()),
                    "log_marginal": ((), np.asarray(self.log_marginal)),
                },
                coords={"item": coords["item"]},
            ),
            "bhc_tree": tree_group,
        }
        if data is not None:
            groups["observed_data"] = xr.Dataset(
                {"x": (("item", "feature"), _dense(data.X))},
                coords={"item": coords["item"], "feature": coords["feature"]},
            )
        for group in groups.values():
            group.attrs.update(attrs)
        idata = az.InferenceData(**groups, warn_on_custom_groups=False)
        return idata

    def summary_lines(self) -> list[str]:
        """What ``latentzoo fit`` prints: ``log p(D | T)``, the DPM lower bound (Corollary 3.1)
        and the number of clusters of the cut at ``r_k < 0.5``.

        Examples
        --------
        >>> from latentzoo.inference.bhc import bhc
        >>> bhc(BayesianHierarchicalClustering(), [[1, 1], [1, 1], [0, 0]]).summary_lines()
        ['log p(D | T) -4.2, DPM lower bound -4.7, 2 clusters where r_k < 0.5']
        """
        return [
            f"log p(D | T) {self.log_marginal:.1f}, DPM lower bound {self.lower_bound():.1f}, "
            f"{int(self.cut().max()) + 1} clusters where r_k < 0.5"
        ]

    def save(self, path, data=None, n_clusters: int | None = None, format: str | None = None):
        """Write the tree to ``path``: ``.npz`` (every array of :meth:`to_arrays`, the cut
        ``cluster``, the item names and the data's labels; ``numpy.load`` reads it with
        ``allow_pickle=False``) or netCDF (:meth:`to_inference_data`) for any other suffix.

        Parameters
        ----------
        path : str or Path
        data : Features, optional
            The clustered data (names, labels, the ``observed_data``).
        n_clusters : int, optional
            Also save the partition into ``n_clusters`` clusters (:meth:`cut_into`) as
            ``cluster_k``.
        format : {"npz", "netcdf"}, optional
            Default: from the suffix of ``path``.

        Examples
        --------
        >>> import tempfile, pathlib
        >>> from latentzoo.inference.bhc import bhc
        >>> tree = bhc(BayesianHierarchicalClustering(), [[1, 1], [1, 1], [0, 0]])
        >>> path = pathlib.Path(tempfile.mkdtemp()) / "tree.npz"
        >>> tree.save(path, n_clusters=1)
        >>> np.load(path, allow_pickle=False)["cluster_k"].tolist()
        [0, 0, 0]
        """
        from pathlib import Path

        path = Path(path)
        extra = {} if n_clusters is None else {"cluster_k": self.cut_into(n_clusters)}
        if (format or path.suffix.lstrip(".")) == "npz":
            arrays = {**self.to_arrays(), "cluster": self.cut(), **extra}
            if data is not None:
                arrays["item"] = np.asarray(data.item_names, dtype=str)
                if data.labels is not None:
                    arrays["labels"] = np.asarray(data.labels)
            with open(path, "wb") as handle:  # np.savez adds ".npz" to a path without it
                np.savez(handle, **arrays)
            return
        idata = self.to_inference_data(data)
        for name, labels in extra.items():
            idata.point_estimate[name] = (("item",), labels)
        idata.to_netcdf(str(path))

    def figure(self, data=None):
        """The dendrogram (:func:`plot_dendrogram`, leaves coloured by the data's labels) as a
        matplotlib ``Figure``."""
        labels = None if data is None else data.labels
        ax = plot_dendrogram(self, labels=labels)
        method = self.info.get("method", "evaluate")
        ax.set_title(f"{method} on {data}\n{ax.get_title()}", fontsize=9)
        return ax.figure

    def point_estimate(self) -> dict:
        """The partition of :meth:`cut` and ``log_marginal``, as saved in the ``point_estimate``
        group."""
        return {"cluster": self.cut(), "log_marginal": np.asarray(self.log_marginal)}

    def arrays(self) -> dict:
        """Every array of the tree (:meth:`to_arrays`) keyed ``"tree.<name>"``."""
        return {f"tree.{name}": np.asarray(value) for name, value in self.to_arrays().items()}

    def objective(self, data) -> tuple[str, float]:
        """``("log p(D | T)", value)``: the tree's marginal likelihood (of the data it was built
        on)."""
        return "log p(D | T)", self.log_marginal

    def alpha_gradient(self) -> float:
        """``d log p(D | T) / d alpha`` for this fixed tree, bottom-up (section 3.4.1).

        The thesis' recursion for ``dp(D_k | T_k) / d alpha`` with ``d d_k / d alpha`` propagated
        alongside, written for log quantities (see :func:`_alpha_gradient`).

        Examples
        --------
        >>> model = BayesianHierarchicalClustering(alpha=1.5)
        >>> x = [[1, 0], [1, 0], [0, 1]]
        >>> g = model.evaluate([[0, 1], [2, 3]], x).alpha_gradient()
        >>> up = BayesianHierarchicalClustering(alpha=1.5 + 1e-6).evaluate([[0, 1], [2, 3]], x)
        >>> down = BayesianHierarchicalClustering(alpha=1.5 - 1e-6).evaluate([[0, 1], [2, 3]], x)
        >>> bool(np.isclose(g, (up.log_marginal - down.log_marginal) / 2e-6, atol=1e-6))
        True
        """
        if self.children.shape[0] == 0:
            return 0.0
        return float(
            _alpha_gradient(
                self.children, self.log_r, self.log_1mr, self.log_pi, self.n_leaves, self.alpha
            )
        )

    def to_linkage(self, height: str = "order") -> np.ndarray:
        """A scipy linkage matrix ``[child, child, height, count]`` (for ``dendrogram``).

        Parameters
        ----------
        height : {"order", "neglog_r"}
            ``"order"`` (default): merge ``m`` at height ``m + 1``, the thesis' Fig. 3.3(b) ("higher
            values correspond to later merges, the exact numbers are irrelevant").
            ``"neglog_r"``: the running maximum of ``-log r_k`` over the merge order, which is
            monotone (a child merges before its parent) and zero while merges are certain.

        Examples
        --------
        >>> from scipy.cluster.hierarchy import is_valid_linkage
        >>> from latentzoo.inference.bhc import bhc
        >>> tree = bhc(BayesianHierarchicalClustering(), [[1, 0], [1, 0], [0, 1], [0, 1]])
        >>> Z = tree.to_linkage()
        >>> bool(is_valid_linkage(Z)), Z[:, 3].tolist()
        (True, [2.0, 2.0, 4.0])
        """
        m = self.children.shape[0]
        if height == "order":
            h = np.arange(1.0, m + 1.0)
        elif height == "neglog_r":
            h = np.maximum.accumulate(np.maximum(-self.log_r, 0.0)) if m else np.zeros(0)
        else:
            raise ValueError(f"height must be 'order' or 'neglog_r', got {height!r}")
        counts = self.sizes if self.leaf_of is None else self._leaf_counts_per_merge()
        return np.column_stack([self.children.astype(np.float64), h, counts.astype(np.float64)])

    def _leaf_counts_per_merge(self) -> np.ndarray:
        """Number of *leaves* under each merge (scipy's count column)."""
        ones = np.ones((self.n_leaves, 1))
        return _class_counts(self.children, ones)[self.n_leaves :, 0].astype(np.int64)

    def cut(self, threshold: float = 0.5) -> np.ndarray:
        """Flat clusters of the items: the tree cut where ``r_k < threshold`` (Algorithm 3.2).

        Top-down, a node with ``r_k >= threshold`` whose ancestors all have ``r < threshold`` is a
        cluster; leaves below no such node are clusters of their own. Labels are numbered in order
        of first appearance.

        Examples
        --------
        >>> from latentzoo.inference.bhc import bhc
        >>> tree = bhc(BayesianHierarchicalClustering(), [[1, 1, 1], [1, 1, 1], [0, 0, 0]])
        >>> tree.cut().tolist()
        [0, 0, 1]
        """
        if not 0.0 < threshold <= 1.0:
            raise ValueError(f"threshold must be a number in (0, 1], got {threshold!r}")
        owner = _cut_owner(self.children, self.log_r, math.log(threshold))
        return self._item_labels(owner)

    def cut_into(self, n_clusters: int) -> np.ndarray:
        """Flat clusters of the items: the partition left after the first ``L - n_clusters`` merges.

        The greedy merge order of Algorithm 3.2 (the most probable merges first); ``cut()`` is the
        model's own answer, this one fixes the number of clusters as other hierarchical methods do.

        Examples
        --------
        >>> from latentzoo.inference.bhc import bhc
        >>> tree = bhc(BayesianHierarchicalClustering(), [[1, 1, 1], [1, 1, 1], [0, 0, 0], [0, 0, 0]])
        >>> tree.cut_into(2).tolist(), tree.cut_into(4).tolist()
        ([0, 0, 1, 1], [0, 1, 2, 3])
        >>> tree.cut_into(5)
        Traceback (most recent call last):
        ...
        ValueError: n_clusters must be an integer in [1, 4] (the leaves of the tree), got 5
        """
        L = self.n_leaves
        if (
            isinstance(n_clusters, bool)
            or not isinstance(n_clusters, int | np.integer)
            or not 1 <= n_clusters <= L
        ):
            raise ValueError(
                f"n_clusters must be an integer in [1, {L}] (the leaves of the tree), "
                f"got {n_clusters!r}"
            )
        if L == 1:
            return self._item_labels(np.zeros(1, dtype=np.int64))
        # Heights are the merge order, so scipy's maxclust undoes exactly the last merges.
        owner = fcluster(self.to_linkage(), t=int(n_clusters), criterion="maxclust")
        return self._item_labels(owner)

    def _item_labels(self, owner: np.ndarray) -> np.ndarray:
        """Each item's cluster, numbered in order of first appearance, from each leaf's owner."""
        _, labels = np.unique(owner, return_inverse=True)
        first = np.full(labels.max() + 1, labels.size)
        np.minimum.at(first, labels, np.arange(labels.size))
        rank = np.argsort(np.argsort(first, kind="stable"), kind="stable")
        leaf_labels = rank[labels]
        return leaf_labels if self.leaf_of is None else leaf_labels[self.leaf_of]

    def predictive_weights(self) -> tuple[np.ndarray, float]:
        """The weights ``omega_k`` of eq. (3.11) over all ``2L - 1`` nodes and the new-cluster weight.

        ``omega_k = r_k prod_{i in N_k} (1 - r_i) n_{i+} / (n_{i+} + n_{i-})`` with the tree augmented
        as in section 3.4.2: a sibling of the root with ``alpha`` fictional items, so the root's
        path carries ``n / (n + alpha)`` and the new cluster (prior predictive ``p(x)``) gets
        ``alpha / (n + alpha)``. Leaves have ``r = 1``. The weights sum to one.

        Returns
        -------
        weights : numpy.ndarray (2L - 1,)
        new_cluster : float

        Examples
        --------
        >>> from latentzoo.inference.bhc import bhc
        >>> w, new = bhc(BayesianHierarchicalClustering(), [[1], [1], [0]]).predictive_weights()
        >>> round(float(w.sum() + new), 12)
        1.0
        """
        n = self.n_items
        log_root = math.log(n) - math.log(n + self.alpha)
        log_w = self._log_weights(log_root)
        return np.exp(log_w), self.alpha / (n + self.alpha)

    def _log_weights(self, log_root: float) -> np.ndarray:
        sizes = np.concatenate([self.leaf_sizes, self.sizes]).astype(np.float64)
        reach = _top_down_log_reach(self.children, self.log_1mr, sizes, log_root)
        log_r = np.concatenate([np.zeros(self.n_leaves), self.log_r])
        return reach + log_r

    def log_predictive(self, X) -> np.ndarray:
        """``log p(x | D)`` of new items, eq. (3.10): the ``omega``-mixture of node predictives.

        ``logsumexp_k [log omega_k + log p(x | D_k)]`` over all nodes plus the new-cluster term
        ``log(alpha / (n + alpha)) + log p(x)``; the node predictives are the component's
        closed forms (``component.log_predictive``).

        Parameters
        ----------
        X : array_like (M, D)

        Returns
        -------
        numpy.ndarray (M,)

        Examples
        --------
        >>> from latentzoo.inference.bhc import bhc
        >>> tree = bhc(BayesianHierarchicalClustering(), [[1, 1], [1, 1], [1, 1]])
        >>> lp = tree.log_predictive([[1, 1], [0, 0]])
        >>> bool(lp[0] > lp[1]), round(float(np.exp(tree.log_predictive(
        ...     [[0, 0], [0, 1], [1, 0], [1, 1]])).sum()), 12)
        (True, 1.0)
        """
        comp = self.component
        X = comp.check_data(Features.matrix_of(X))
        D = X.shape[1]
        expected = comp.stats_size(D)
        if expected != self.node_stats.shape[1]:
            raise ValueError(
                f"X has {D} features but the tree was built on data with a different number"
            )
        n = self.n_items
        log_w = self._log_weights(math.log(n) - math.log(n + self.alpha))
        terms = comp.log_predictive(self.node_stats, X) + log_w
        prior = comp.log_predictive(comp.empty_stats(1, D), X)[:, 0]
        new = math.log(self.alpha) - math.log(n + self.alpha) + prior
        return logsumexp(np.column_stack([terms, new]), axis=1)

    def coassignment(self, pairs) -> np.ndarray:
        """Posterior probability that two items share a block under the tree's partition posterior.

        The tree's posterior over its tree-consistent partitions (Theorem 3.1 normalised) makes
        node ``k`` a block with probability ``r_k prod_{a above k} (1 - r_a)``, so items ``i, j``
        share a block with probability ``1 - prod_{a in root..LCA(i, j)} (1 - r_a)``: what the DPM's
        co-assignment probabilities (exact enumeration, Gibbs sampler) are compared with.

        Parameters
        ----------
        pairs : int array (P, 2)

        Examples
        --------
        >>> from latentzoo.inference.bhc import bhc
        >>> tree = bhc(BayesianHierarchicalClustering(), [[1], [1]])
        >>> bool(np.isclose(tree.coassignment([[0, 1]])[0], np.exp(tree.log_r[0])))
        True
        """
        pairs = np.asarray(pairs)
        if pairs.ndim != 2 or pairs.shape[1] != 2 or not np.issubdtype(pairs.dtype, np.integer):
            raise ValueError(f"pairs must be an integer array of shape (P, 2), got {pairs.shape}")
        if pairs.size and (pairs.min() < 0 or pairs.max() >= self.n_items):
            raise ValueError(f"pairs must hold item indices in 0..{self.n_items - 1}")
        leaf_of = np.arange(self.n_items) if self.leaf_of is None else self.leaf_of
        if self.children.shape[0] == 0:
            return np.ones(pairs.shape[0])
        return _pair_coassignment(self.children, self.log_1mr, leaf_of, pairs.astype(np.int64))

    def purity(self, labels, weighting: str = "pairs") -> float:
        """Dendrogram purity of the tree against class labels of the items (footnote 3).

        See :func:`dendrogram_purity`; for EMBHC trees the items of one leaf cluster share their
        leaf (their smallest common subtree is the leaf).

        Examples
        --------
        >>> from latentzoo.inference.bhc import bhc
        >>> tree = bhc(BayesianHierarchicalClustering(), [[1, 1], [1, 1], [0, 0], [0, 0]])
        >>> tree.purity([0, 0, 1, 1])
        1.0
        """
        return dendrogram_purity(self, labels, weighting=weighting)


# ------------------------------------------------------------------------------ purity
def dendrogram_purity(tree, labels, weighting: str = "pairs") -> float:
    """Exact dendrogram purity (Heller 2007, section 3.5, footnote 3), bottom-up.

    For two distinct leaves ``l, j`` of one class ``c``, the purity of their smallest common
    subtree is the fraction of its leaves in class ``c``. Every internal node ``k`` with children
    ``a, b`` is the smallest common subtree of exactly ``cnt_a[c] cnt_b[c]`` unordered pairs of class
    ``c``, each of purity ``cnt_k[c] / n_k``, so the total is
    ``sum_k sum_c cnt_a[c] cnt_b[c] cnt_k[c] / n_k`` with class counts computed bottom-up in
    ``O(n C)`` (no loop over pairs).

    ``weighting="pairs"`` (default) averages over all unordered same-class pairs, the usual
    reading (Heller & Ghahramani 2005; Kobren et al. 2017). ``weighting="leaves"`` follows the
    footnote's sampling literally: a leaf ``l`` uniformly among the leaves whose class has another
    member, then ``j`` uniformly among the other leaves of its class, so class ``c`` has total
    weight proportional to ``n_c`` rather than to ``n_c (n_c - 1) / 2``. Both equal 1 iff the
    smallest common subtree of every same-class pair is pure.

    Parameters
    ----------
    tree : Tree or scipy linkage matrix (n - 1, 4)
        A :class:`Tree` (its items, with EMBHC leaf clusters) or any linkage over ``n`` items
        (e.g. ``scipy.cluster.hierarchy.average``).
    labels : array_like (n,)
        Class of each item (any hashable values).
    weighting : {"pairs", "leaves"}

    Returns
    -------
    float
        In ``(0, 1]``; ``nan`` when no class has two items.

    Examples
    --------
    >>> Z = np.array([[0, 1, 1, 2], [2, 3, 1, 2], [4, 5, 2, 4]], dtype=float)
    >>> dendrogram_purity(Z, [0, 0, 1, 1])
    1.0
    >>> # ((0, 2), (1, 3)): the class pairs meet at the root, purity 2/4
    >>> dendrogram_purity(np.array([[0, 2, 1, 2], [1, 3, 1, 2], [4, 5, 2, 4]], float), [0, 0, 1, 1])
    0.5
    """
    if weighting not in ("pairs", "leaves"):
        raise ValueError(f"weighting must be 'pairs' or 'leaves', got {weighting!r}")
    if isinstance(tree, Tree):
        children = tree.children
        n_leaves = tree.n_leaves
        n_items = tree.n_items
        leaf_of = np.arange(n_items) if tree.leaf_of is None else tree.leaf_of
    else:
        Z = np.asarray(tree, dtype=np.float64)
        if Z.ndim != 2 or Z.shape[1] != 4:
            raise ValueError(f"tree must be a Tree or a linkage matrix (n - 1, 4), got {Z.shape}")
        n_leaves = Z.shape[0] + 1
        n_items = n_leaves
        children = _check_children(Z[:, :2], n_leaves)
        leaf_of = np.arange(n_items)
    labels = np.asarray(labels)
    if labels.shape != (n_items,):
        raise ValueError(
            f"labels must have one entry per item ({n_items}), got shape {labels.shape}"
        )
    _, cls = np.unique(labels, return_inverse=True)
    C = int(cls.max()) + 1
    class_sizes = np.bincount(cls, minlength=C).astype(np.float64)
    leaf_counts = np.zeros((n_leaves, C))
    np.add.at(leaf_counts, (leaf_of, cls), 1.0)
    counts = _class_counts(children, leaf_counts)
    node_sizes = counts.sum(axis=1)
    # pairs inside one leaf cluster meet at the leaf
    within = 0.5 * leaf_counts * (leaf_counts - 1.0) * leaf_counts / node_sizes[:n_leaves, None]
    a, b = children[:, 0], children[:, 1]
    k = n_leaves + np.arange(children.shape[0])
    across = counts[a] * counts[b] * counts[k] / node_sizes[k, None]
    per_class = within.sum(axis=0) + across.sum(axis=0)  # sum of purities over the pairs of c
    pairs = 0.5 * class_sizes * (class_sizes - 1.0)
    if pairs.sum() == 0:
        return float("nan")
    if weighting == "pairs":
        return float(per_class.sum() / pairs.sum())
    ok = class_sizes >= 2
    # each unordered pair twice (either end first), weight 1 / (n' (n_c - 1))
    n_eligible = class_sizes[ok].sum()
    return float(np.sum(2.0 * per_class[ok] / (class_sizes[ok] - 1.0)) / n_eligible)


# ------------------------------------------------------------------------------ the model
class _Nodes(NamedTuple):
    """The node-capacity arrays (``2 n - 1`` nodes, leaves first) a tree is built or evaluated in:
    sufficient-statistic rows, ``log d_k``, ``log p(D_k | T_k)``, ``log p(D_k | H_1)``, and the
    component's hyperparameters."""

    rows: np.ndarray
    log_d: np.ndarray
    log_ev: np.ndarray
    log_h1: np.ndarray
    hyper: np.ndarray


@dataclass(frozen=True)
class BayesianHierarchicalClustering:
    """Bayesian hierarchical clustering of feature vectors (Heller 2007, chapter 3).

    A fast approximate inference method for the Dirichlet process mixture
    :class:`~latentzoo.models.mixture.DirichletProcessMixture` with the same ``alpha`` and
    ``component`` (:attr:`dpm`, the reference: exact enumeration for small data, collapsed Gibbs
    sampling and PyMC's truncated DPM for larger data). :meth:`evaluate` computes the recursion
    (3.2)-(3.3) with the merge prior of Algorithm 3.3 on a given tree; the greedy tree of
    Algorithm 3.2 is :func:`latentzoo.inference.bhc.bhc`.

    Parameters
    ----------
    alpha : float
        DP concentration, positive.
    component : conjugate component
        ``BetaBernoulli()`` (default), ``DirichletMultinomial()``, ``NormalGamma()`` or
        ``NormalInverseWishart()`` from :mod:`latentzoo.models.conjugate`.

    Examples
    --------
    >>> model = BayesianHierarchicalClustering(alpha=2.0)
    >>> tree = model.evaluate([[0, 1], [2, 3]], [[1, 0], [1, 0], [0, 1]])
    >>> tree.sizes.tolist(), bool(tree.lower_bound() <= model.dpm.log_marginal_likelihood(
    ...     [[1, 0], [1, 0], [0, 1]]))
    ([2, 3], True)
    >>> BayesianHierarchicalClustering(alpha=0)
    Traceback (most recent call last):
    ...
    ValueError: alpha must be a positive finite number, got 0
    """

    alpha: float = 1.0
    component: object = field(default_factory=BetaBernoulli)

    name = "bhc"
    data_type = Features
    reference_family = "dpm"  # its reference: the model it approximates
    protocol = TreeModel

    def __post_init__(self):
        check_positive("alpha", self.alpha)
        # the DPM validates the component (a readable error naming what is missing)
        DirichletProcessMixture(alpha=self.alpha, component=self.component)

    @property
    def dpm(self) -> DirichletProcessMixture:
        """The Dirichlet process mixture that BHC approximates (its reference)."""
        return DirichletProcessMixture(alpha=self.alpha, component=self.component)

    def replicate_names(self, names) -> bool:
        """Whether an estimate holding ``names`` can make a replicate: it needs the tree's cut
        ``cluster``."""
        return "cluster" in set(names)

    def predictive_summaries(self, x) -> dict:
        """``feature_mean`` of the data or a replicate, as the DPM's
        (:meth:`DirichletProcessMixture.predictive_summaries`)."""
        return self.dpm.predictive_summaries(x)

    def replicate(self, params, data, rng) -> dict:
        """One replicate of ``data`` from the tree's cut (``cluster``, the clusters where
        ``r_k < 0.5``), as the DPM it approximates makes one from an assignment
        (:meth:`DirichletProcessMixture.replicate`)."""
        return self.dpm.replicate({"z": params["cluster"]}, data, rng)

    def simulate(self, random_state=None, **sizes):
        """Draw ``(data, truth)`` from the DPM that BHC approximates (:attr:`dpm`).

        BHC has no generative process of its own: its tree is a fast approximate posterior of the
        DPM (Heller 2007, section 3.3), so data are drawn from that DPM. The keywords are those of
        :meth:`latentzoo.models.DirichletProcessMixture.simulate` (``n_items``, ``n_features``,
        ``separated``, ``n_clusters``).

        Examples
        --------
        >>> data, truth = BayesianHierarchicalClustering().simulate(0, n_items=5, n_features=3)
        >>> data.X.shape, truth["z"].shape
        ((5, 3), (5,))
        """
        return self.dpm.simulate(random_state, **sizes)

    def labels(self, params: dict, train=None) -> np.ndarray:
        """Hard cluster labels of a saved tree: its partition ``cluster`` (:meth:`Tree.cut`)."""
        return np.asarray(params["cluster"], dtype=np.int64)

    def check_data(self, data) -> Features:
        """Validate ``data`` for the component and return it as :class:`Features`.

        Same contract as the DPM's ``check_data``: errors name the offending entry.

        Examples
        --------
        >>> BayesianHierarchicalClustering().check_data([[0, 1], [1, 0.5]])
        Traceback (most recent call last):
        ...
        ValueError: data of kind 'real' do not fit the BetaBernoulli component (it takes binary data)
        """
        return self.dpm.check_data(data)

    # -- internals shared with latentzoo.inference.bhc
    def _setup(self, X: np.ndarray, leaf_labels=None, n_leaves=None) -> _Nodes:
        """Leaf rows, ``log d``, ``log p(D_i)`` and sizes of the leaves, in node-capacity arrays."""
        comp = self.component
        rows_leaf = _leaf_rows(comp, X, leaf_labels, n_leaves)
        L = rows_leaf.shape[0]
        rows = np.empty((2 * L - 1, rows_leaf.shape[1]))
        rows[:L] = rows_leaf
        sizes = rows_leaf[:, 0]
        log_d = np.empty(2 * L - 1)
        log_d[:L] = math.log(self.alpha) + gammaln(sizes)  # Algorithm 3.3: d = alpha Gamma(n_i)
        log_h1 = np.empty(2 * L - 1)
        hyper = comp.hyper(X.shape[1])
        if comp.kind_code == 3:
            work = _component_rows(3, hyper, rows_leaf)
            log_h1[:L] = comp.log_marginal(work)
        else:
            log_h1[:L] = comp.log_marginal(rows_leaf)
        log_ev = np.empty(2 * L - 1)
        log_ev[:L] = log_h1[:L]
        return _Nodes(rows, log_d, log_ev, log_h1, hyper)

    def _tree(self, children, nodes: _Nodes, merges, leaf_of=None, info=None) -> Tree:
        """The :class:`Tree` of the merges ``children`` over the filled ``nodes``; ``merges`` holds
        the per-merge ``(log_r, log_1mr, log_pi)``."""
        rows, log_d, log_ev, log_h1, hyper = nodes
        log_r, log_1mr, log_pi = merges
        L = children.shape[0] + 1
        comp_rows = _component_rows(self.component.kind_code, hyper, rows)
        return Tree(
            children=children,
            log_r=log_r,
            log_1mr=log_1mr,
            log_evidence=log_ev[L:].copy(),
            log_d=log_d[L:].copy(),
            log_pi=log_pi,
            log_h1=log_h1[L:].copy(),
            sizes=np.rint(rows[L:, 0]).astype(np.int64),
            leaf_sizes=np.rint(rows[:L, 0]).astype(np.int64),
            leaf_log_evidence=log_ev[:L].copy(),
            leaf_log_d=log_d[:L].copy(),
            node_stats=comp_rows,
            alpha=float(self.alpha),
            component=self.component,
            leaf_of=leaf_of,
            info={} if info is None else info,
        )

    def evaluate(self, children, data) -> Tree:
        """The BHC quantities on a *given* tree: eqs. (3.1)-(3.3) with Algorithm 3.3, bottom-up.

        Any binary tree over the items gives ``p(D | T)`` (Theorem 3.1) and the lower bound of
        Corollary 3.1 — not only the greedy one.

        Parameters
        ----------
        children : int array (n - 1, 2) or scipy linkage matrix (n - 1, 4)
            Merge ``m`` joins nodes ``children[m]`` into node ``n + m`` (leaves ``0..n-1``).
        data : Features or array_like (n, D)

        Returns
        -------
        Tree

        Examples
        --------
        >>> model = BayesianHierarchicalClustering()
        >>> tree = model.evaluate([[0, 1]], [[1.0], [1.0]])
        >>> # pi = 1/2, p(D|H1) = 1/3, p(x) = 1/2 each: p(D|T) = 1/6 + 1/8
        >>> bool(np.isclose(tree.log_marginal, np.log(1 / 6 + 1 / 8)))
        True
        """
        data = self.check_data(data)
        X = np.ascontiguousarray(data.X, dtype=np.float64)
        children = _check_children(children, X.shape[0])
        nodes = self._setup(X)
        merges = _evaluate_tree(
            children,
            nodes.rows,
            nodes.log_d,
            nodes.log_ev,
            nodes.log_h1,
            self.component.kind_code,
            nodes.hyper,
            math.log(self.alpha),
        )
        tree = self._tree(children, nodes, merges)
        return dataclasses.replace(tree, coords=data.coords())


# ------------------------------------------------------------------------------ plotting
def plot_dendrogram(
    tree,
    labels=None,
    ax=None,
    threshold: float = 0.5,
    title: str | None = None,
    max_leaves: int = 150,
):
    """Draw a BHC tree (or any scipy linkage) as a dendrogram, as in Heller (2007) Fig. 3.3-3.5.

    Merges with ``r_k < threshold`` (those the tree cut of Algorithm 3.2 keeps apart) are drawn
    dashed in red; leaves are coloured by class when ``labels`` are given. A tree with more than
    ``max_leaves`` leaves is drawn down to its last ``max_leaves - 1`` merges: each drawn leaf is
    then a subtree, coloured by its most frequent class (as is an EMBHC leaf, a cluster of items)
    and sized by its number of items. Heights are the merge order for a tree
    (:meth:`~latentzoo.models.bhc.Tree.to_linkage`), the linkage's own heights otherwise.

    Parameters
    ----------
    tree : Tree or numpy.ndarray
        A :class:`~latentzoo.models.bhc.Tree`, or a scipy linkage matrix (no merge is dashed).
    labels : array_like (n_items,), optional
        Class of each item.
    ax : matplotlib Axes, optional
        Where to draw (default: a new figure, wider with more leaves).
    threshold : float
        ``r_k`` below which a merge is dashed.
    title : str, optional
        Default: the number of dashed merges and of clusters of the cut, and the dendrogram
        purity when ``labels`` are given.
    max_leaves : int
        Most leaves drawn (at least 2).

    Returns
    -------
    matplotlib.axes.Axes

    Examples
    --------
    >>> import matplotlib
    >>> matplotlib.use("Agg")
    >>> X = np.repeat(np.eye(3), 4, axis=0)
    >>> from latentzoo.inference.bhc import bhc
    >>> tree = bhc(BayesianHierarchicalClustering(), X)
    >>> ax = plot_dendrogram(tree, labels=np.repeat([0, 1, 2], 4))
    >>> ax.get_title()
    'BHC: 2 merges with r_k < 0.5 (dashed), 3 clusters; purity 1.000'
    >>> ax = plot_dendrogram(tree, labels=np.repeat([0, 1, 2], 4), max_leaves=3)
    >>> len(ax.collections[0].get_segments())  # the last two merges
    2
    """
    import matplotlib.pyplot as plt
    from matplotlib.collections import LineCollection
    from matplotlib.lines import Line2D
    from scipy.cluster.hierarchy import dendrogram

    check_integer("max_leaves", max_leaves, low=2)
    is_tree = isinstance(tree, Tree)
    Z = tree.to_linkage() if is_tree else np.asarray(tree, dtype=np.float64)
    n_leaves = Z.shape[0] + 1
    shown = min(n_leaves, max_leaves)
    if ax is None:
        _, ax = plt.subplots(figsize=(4 + 0.12 * shown, 5))
    if n_leaves < 2:
        return ax
    options = {}
    if shown < n_leaves:
        options = {"truncate_mode": "lastp", "p": shown}
        if is_tree:  # the drawn merges at heights 1..shown-1, the hidden ones at 0
            Z = Z.copy()
            Z[:, 2] = np.maximum(Z[:, 2] - (n_leaves - shown), 0.0)
    # link_color_func receives each link's node id: the "colours" say which merge each link is.
    layout = dendrogram(Z, no_plot=True, link_color_func=str, **options)
    merge = np.asarray(layout["color_list"], dtype=np.int64) - n_leaves
    dashed = (
        tree.log_r[merge] < math.log(threshold) if is_tree else np.zeros(merge.size, dtype=bool)
    )
    segments = np.stack([np.asarray(layout["icoord"]), np.asarray(layout["dcoord"])], axis=-1)
    ax.add_collection(
        LineCollection(
            segments,
            colors=np.where(dashed[:, None], [[0.84, 0.15, 0.16, 1.0]], [[0.3, 0.3, 0.3, 1.0]]),
            linestyles=["--" if d else "-" for d in dashed],
            linewidths=0.8,
        )
    )
    drawn = np.asarray(layout["leaves"])  # leaves, or subtrees (node ids >= n_leaves) if truncated
    leaf_x = 5.0 + 10.0 * np.arange(drawn.size)
    children = Z[:, :2].astype(np.int64)
    parts = []
    if is_tree:
        parts.append(
            f"BHC: {int(dashed.sum())} merges with r_k < {threshold:g} (dashed), "
            f"{int(tree.cut(threshold).max()) + 1} clusters"
        )
    leaf_of = tree.leaf_of if is_tree and tree.leaf_of is not None else None
    if labels is not None:
        labels = np.asarray(labels)
        names, codes = np.unique(labels, return_inverse=True)
        leaf_counts = np.zeros((n_leaves, names.size))
        np.add.at(leaf_counts, (np.arange(codes.size) if leaf_of is None else leaf_of, codes), 1)
        counts = _class_counts(children, leaf_counts)[drawn]
        colours = plt.cm.tab10(counts.argmax(axis=1) % 10)
        sizes = counts.sum(axis=1)
        ax.scatter(leaf_x, np.zeros(drawn.size), c=colours, s=10 + 40 * sizes / sizes.max(),
                   zorder=3)  # fmt: skip
        handles = [
            Line2D([], [], marker="o", ls="", color=plt.cm.tab10(i % 10), label=str(name))
            for i, name in enumerate(names[:20])
        ]
        ax.legend(handles=handles, title="class", fontsize=8, loc="upper left",
                  bbox_to_anchor=(1.0, 1.0))  # fmt: skip
        purity = tree.purity(labels) if is_tree else dendrogram_purity(tree, labels)
        parts.append(f"purity {purity:.3f}")
    if shown < n_leaves:
        parts.append(f"last {shown - 1} of {n_leaves - 1} merges")
    top = float(np.max(np.asarray(layout["dcoord"])))
    ax.set_xlim(0, 10.0 * drawn.size)
    ax.set_ylim(-0.02 * top, top * 1.05)
    ax.set_xticks([])
    ax.set_ylabel("merge order" if is_tree else "height")
    ax.set_title(title if title is not None else "; ".join(parts))
    return ax
