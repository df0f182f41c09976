"""Building BHC trees: the greedy Algorithm 3.2, its randomised versions and a hyperparameter search.

Heller (2007, thesis), chapter 3. :func:`bhc` is Algorithm 3.2: starting from one tree per item,
merge the pair of trees with the highest posterior merge probability ``r_k`` (eq. (3.3), with the
merge prior of Algorithm 3.3 in log space, :func:`~latentzoo.models.bhc.merge_quantities`) until one
tree is left. :func:`rbhc` is Algorithms 3.4-3.5 (BHC on a subsample, filter the rest through the
top merge, recurse) and :func:`embhc` Algorithm 3.6 (filter into ``m`` subsample clusters, hard EM,
BHC on the clusters). :func:`learn_hyperparameters` is the line search of section 3.4.1.

The greedy search (numba, no Python loop over pairs). The score of a pair depends only on the
two trees, so it never changes while both are alive. Every live node keeps its best partner and
that pair's score; an indexed binary max-heap holds one entry per live node keyed by the score
(updated in place), not one entry per pair: ``O(n)`` memory instead of the ``n (n - 1) / 2`` pair
scores of a pair heap (about 100 million entries, over 1.5 GB, for 10,000 items). Deletion is lazy
in the sense that matters: when a node's partner is merged away its key is left as it is (an upper
bound of its true best), and only when it reaches the top of the heap is its best partner
recomputed, exactly, in one pass over the live nodes (a "rescan", counted in
``Tree.info["rescans"]``). A top node whose partner is alive holds the global best pair: every pair
is covered by the scan of its newer member (or a later rescan), so no key underestimates a live
pair. The initial ``n (n - 1) / 2`` leaf pairs are scored once (for single binary items and shared
Beta hyperparameters as one integer matrix product, :func:`_initial_best_bernoulli`); each merge
scores the new node against every live node in one pass, and a node whose key it beats takes it as
its partner. A run is ``O(n^2)`` pair scores plus the rescans (about ``n / 2`` of them on the
data tried, each ``O(n)``). A pair score is the component's ``log_marginal_one`` of the merged
statistics (see :mod:`latentzoo.models.bhc`); Beta-Bernoulli reads its log-Gammas from tables.

Ties are broken deterministically: the heap orders equal scores by the smaller node id and a
node's best partner is the smaller id among equal scores (the first merge of tied leaf pairs is
the lexicographically smallest pair); each pair's score is computed in one canonical order, so a
pair scored from either side gives the same bits. The same input always gives the same tree.
Pairs that tie mathematically but whose scores are sums of different terms may differ in the last
bit and are then ordered by that rounding.
"""

from __future__ import annotations

import dataclasses
import math
import os
from typing import NamedTuple

import numba as nb
import numpy as np

from latentzoo.data.checks import as_rng
from latentzoo.inference.family import Family, Method, choice, integer, real, seed, take_declared
from latentzoo.models._checks import check_integer
from latentzoo.models.bhc import (
    BayesianHierarchicalClustering,
    Tree,
    _bernoulli_tables,
    _merge_rows,
    _pair_log_h1,
    _row_log_h1,
    merge_quantities,
    plot_dendrogram,
)

__all__ = ["LineSearchResult", "bhc", "embhc", "learn_hyperparameters", "plot_dendrogram", "rbhc"]


# ------------------------------------------------------------------------------ the heap
@nb.njit(cache=True)
def _before(best, u, v):
    """Heap order of live nodes: higher best score first, then the smaller node id."""
    return best[u] > best[v] or (best[u] == best[v] and u < v)


@nb.njit(cache=True)
def _place(heap, pos, at, node):
    """Put ``node`` in heap slot ``at`` and record the slot in ``pos`` (kept in step for removal)."""
    heap[at] = node
    pos[node] = at


@nb.njit(cache=True)
def _sift(heap, pos, best, size, at):
    """Restore the heap order after the score of the node in slot ``at`` changed (or a node was
    put there): up while it comes before its parent, then down while a child comes before it.

    The order is strict (:func:`_before` breaks ties by node id), so the top of the heap, all that
    the greedy run reads, does not depend on the heap's layout.
    """
    node = heap[at]
    while at > 0 and _before(best, node, heap[(at - 1) // 2]):
        parent = (at - 1) // 2
        _place(heap, pos, at, heap[parent])
        at = parent
    while 2 * at + 1 < size:
        child = 2 * at + 1
        if child + 1 < size and _before(best, heap[child + 1], heap[child]):
            child += 1
        if not _before(best, heap[child], node):
            break
        _place(heap, pos, at, heap[child])
        at = child
    _place(heap, pos, at, node)


@nb.njit(cache=True)
def _heap_remove(heap, pos, best, size, node):
    """Remove ``node``; returns the new size."""
    at = pos[node]
    size -= 1
    pos[node] = -1
    if at == size:
        return size
    _place(heap, pos, at, heap[size])
    _sift(heap, pos, best, size, at)
    return size


# ------------------------------------------------------------------------------ the greedy run
@nb.njit(cache=True)
def _pair_score(
    kind, hyper, tables, const, lgn, rows, log_d, log_ev, log_alpha, i, j, merged, work
):
    """The merge score of nodes ``i`` and ``j``: ``log(pi_k p(D_k|H_1)) - log((1-pi_k) p(D_i|T_i) p(D_j|T_j))``.

    ``log r_k = -log1p(exp(-score))`` (eq. (3.3)) is increasing in the score, so ranking pairs by
    it ranks them by ``r_k`` without a logarithm per pair; ``d_k`` cancels, and ``lgn`` holds
    ``log(alpha) + lgamma(n)`` for the integer sizes.
    """
    if i > j:  # one order per pair: the score is the same bits whichever side asks
        i, j = j, i
    log_h1 = _pair_log_h1(kind, hyper, tables, const, rows, i, j, merged, work)
    n_k = int(rows[i, 0] + rows[j, 0] + 0.5)
    return lgn[n_k] + log_h1 - ((log_d[i] + log_ev[i]) + (log_d[j] + log_ev[j]))


@nb.njit(cache=True)
def _log_sizes(log_alpha, n_max):
    """``log(alpha Gamma(t))`` for ``t = 0..n_max`` (``-inf`` at 0): Algorithm 3.3's first term."""
    lgn = np.empty(n_max + 1)
    lgn[0] = -np.inf
    for t in range(1, n_max + 1):
        lgn[t] = log_alpha + math.lgamma(t)
    return lgn


@nb.njit(cache=True)
def _initial_best(rows, log_d, log_ev, n_leaves, kind, hyper, tables, const, log_alpha, n_max):
    """Every leaf's best partner and score over all ``L (L - 1) / 2`` leaf pairs (numba path)."""
    L = n_leaves
    S = rows.shape[1]
    merged = np.empty(S)
    work = np.empty(S)
    lgn = _log_sizes(log_alpha, n_max)
    best = np.full(L, -np.inf)
    partner = np.full(L, -1, dtype=np.int64)
    # equal scores keep the smaller partner id
    for i in range(L):
        for j in range(i + 1, L):
            s = _pair_score(
                kind, hyper, tables, const, lgn, rows, log_d, log_ev, log_alpha, i, j, merged, work
            )
            if partner[i] < 0 or s > best[i]:
                best[i] = s
                partner[i] = j
            if partner[j] < 0 or s > best[j]:
                best[j] = s
                partner[j] = i
    return best, partner


def _initial_best_bernoulli(X, log_d, log_ev, tables, const, log_alpha):
    """The same as :func:`_initial_best` for single binary items and shared ``a, b``, by one
    integer matrix product.

    For two items the count of feature ``d`` is ``m_d = x_id + x_jd`` in {0, 1, 2}, so with
    ``f(m) = lgamma(a + m) + lgamma(b + 2 - m) - lgamma(a + b + 2)`` the pair marginal is
    ``D f(0) + delta1 (s_i + s_j) + delta2 G_ij`` with ``s = X 1`` (ones per item),
    ``G = X X^T`` (shared ones, exact integers in float64 whatever the summation order),
    ``delta1 = f(1) - f(0)`` and ``delta2 = f(2) - 2 f(1) + f(0)`` (``x_id x_jd = [m_d = 2]``).
    Each score is then one fixed expression of integers, symmetric in ``i, j`` and independent of
    where the pair sits in the matrix, so exactly tied pairs (duplicate items) stay exactly tied
    and are broken by the smallest id, as in the numba path. Equal to it up to rounding (tested).
    """
    L, D = X.shape
    f = np.array([tables[0, 0, m] + tables[1, 0, 2 - m] - tables[2, 0, 2] for m in range(3)])
    delta1 = f[1] - f[0]
    delta2 = f[2] - 2.0 * f[1] + f[0]
    ones = X.sum(axis=1)
    # log(alpha Gamma(2)) + the pair marginal's constant part; minus the split hypothesis
    base = log_alpha + const + D * f[0]
    left = delta1 * ones - (log_d[:L] + log_ev[:L])
    best = np.empty(L)
    partner = np.empty(L, dtype=np.int64)
    block = max(1, 2**21 // max(L, 1))
    for start in range(0, L, block):
        stop = min(L, start + block)
        scores = left[start:stop, None] + left[None, :]
        scores += base
        scores += delta2 * (X[start:stop] @ X.T)
        scores[np.arange(stop - start), np.arange(start, stop)] = -np.inf
        partner[start:stop] = np.argmax(scores, axis=1)
        best[start:stop] = scores[np.arange(stop - start), partner[start:stop]]
    return best, partner


@nb.njit(cache=True)
def _greedy(
    rows,
    log_d,
    log_ev,
    log_h1,
    n_leaves,
    kind,
    hyper,
    tables,
    const,
    log_alpha,
    n_max,
    init_best,
    init_partner,
):
    """Algorithm 3.2 on the ``n_leaves`` leaf rows of ``rows``; fills the node arrays in place."""
    L = n_leaves
    total = 2 * L - 1
    S = rows.shape[1]
    merged = np.empty(S)
    work = np.empty(S)
    children = np.empty((L - 1, 2), dtype=np.int64)
    log_r = np.empty(L - 1)
    log_1mr = np.empty(L - 1)
    log_pi = np.empty(L - 1)
    alive = np.zeros(total, dtype=np.bool_)
    best = np.full(total, -np.inf)
    partner = np.full(total, -1, dtype=np.int64)
    best[:L] = init_best
    partner[:L] = init_partner
    lgn = _log_sizes(log_alpha, n_max)
    live = np.empty(total, dtype=np.int64)
    where = np.full(total, -1, dtype=np.int64)
    heap = np.empty(total, dtype=np.int64)
    pos = np.full(total, -1, dtype=np.int64)
    n_live = L
    for i in range(L):
        alive[i] = True
        live[i] = i
        where[i] = i
        _place(heap, pos, i, i)
        _sift(heap, pos, best, i + 1, i)
    size = L
    rescans = 0
    for m in range(L - 1):
        while True:
            i = heap[0]
            p = partner[i]
            if p >= 0 and alive[p]:
                break
            # the partner was merged away: recompute this node's best partner exactly
            rescans += 1
            best[i] = -np.inf
            partner[i] = -1
            for idx in range(n_live):
                j = live[idx]
                if j == i:
                    continue
                s = _pair_score(
                    kind,
                    hyper,
                    tables,
                    const,
                    lgn,
                    rows,
                    log_d,
                    log_ev,
                    log_alpha,
                    i,
                    j,
                    merged,
                    work,
                )
                if partner[i] < 0 or s > best[i] or (s == best[i] and j < partner[i]):
                    best[i] = s
                    partner[i] = j
            _sift(heap, pos, best, size, 0)  # a recomputed score never increases
        k = L + m
        a = min(i, p)
        b = max(i, p)
        children[m, 0] = a
        children[m, 1] = b
        _merge_rows(kind, rows[a], rows[b], rows[k])
        log_h1[k] = _row_log_h1(kind, hyper, rows[k], work)
        q = merge_quantities(
            log_alpha, rows[k, 0], log_h1[k], log_d[a], log_d[b], log_ev[a], log_ev[b]
        )
        log_d[k], log_ev[k], log_r[m], log_1mr[m], log_pi[m] = q
        for node in (a, b):
            alive[node] = False
            at = where[node]
            last = live[n_live - 1]
            live[at] = last
            where[last] = at
            n_live -= 1
            size = _heap_remove(heap, pos, best, size, node)
        # the new node against every live node, in one pass
        for idx in range(n_live):
            j = live[idx]
            s = _pair_score(
                kind, hyper, tables, const, lgn, rows, log_d, log_ev, log_alpha, k, j, merged, work
            )
            if partner[k] < 0 or s > best[k] or (s == best[k] and j < partner[k]):
                best[k] = s
                partner[k] = j
            if s > best[j]:  # strictly: on a tie the older (smaller) partner id is kept
                best[j] = s
                partner[j] = k
                _sift(heap, pos, best, size, pos[j])
        alive[k] = True
        live[n_live] = k
        where[k] = n_live
        n_live += 1
        _place(heap, pos, size, k)
        size += 1
        _sift(heap, pos, best, size, size - 1)
    return children, log_r, log_1mr, log_pi, rescans


def _available_memory() -> int:
    """Bytes of physical memory currently available (a generous fallback when unknown)."""
    try:
        return int(os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE"))
    except (ValueError, OSError, AttributeError):
        return 8 * 2**30


def _memory_estimate(n_leaves: int, row_size: int, n_features: int, kind: int, n_max: int) -> int:
    """Bytes a greedy run allocates: node rows (twice), per-node arrays, lgamma tables and the
    blocks of the initial pair scores; no ``n^2`` array is ever held."""
    nodes = 2 * n_leaves - 1
    rows = 2 * nodes * row_size * 8
    per_node = nodes * 8 * 14
    tables = 3 * n_features * (n_max + 1) * 8 if kind == 0 else 0
    blocks = 4 * 8 * max(min(2**21, n_leaves * n_leaves), n_leaves) if kind == 0 else 0
    return rows + per_node + tables + blocks


def _check_memory(estimate: int, memory_limit):
    if memory_limit is not None:
        check_integer("memory_limit", memory_limit)  # embhc's too, not only bhc's
    limit = _available_memory() // 2 if memory_limit is None else memory_limit
    if estimate > limit:
        raise ValueError(
            f"this BHC run would allocate about {estimate / 2**20:.1f} MiB, more than the "
            f"memory_limit of {limit / 2**20:.1f} MiB; use rbhc or embhc with a subsample size m"
        )


def _build(
    model: BayesianHierarchicalClustering,
    X,
    leaf_labels=None,
    n_leaves=None,
    leaf_of=None,
    memory_limit=None,
) -> Tree:
    comp = model.component
    L = X.shape[0] if leaf_labels is None else n_leaves
    D = X.shape[1]
    row_size = comp.stats_size(D) if comp.kind_code != 3 else 1 + D + D * D
    n_max = X.shape[0]
    _check_memory(_memory_estimate(L, row_size, D, comp.kind_code, n_max), memory_limit)
    nodes = model._setup(X, leaf_labels, n_leaves)
    if L == 1:
        empty = np.zeros(0)
        no_merges = np.zeros((0, 2), dtype=np.int64)
        return model._tree(no_merges, nodes, (empty, empty, empty), leaf_of=leaf_of)
    rows, log_d, log_ev, log_h1, hyper = nodes
    tables, const = _bernoulli_tables(comp, D, n_max)
    log_alpha = math.log(model.alpha)
    if comp.kind_code == 0 and leaf_labels is None and tables.shape[1] == 1:
        init = _initial_best_bernoulli(X, log_d, log_ev, tables, const, log_alpha)
    else:
        init = _initial_best(
            rows, log_d, log_ev, L, comp.kind_code, hyper, tables, const, log_alpha, n_max
        )
    children, log_r, log_1mr, log_pi, rescans = _greedy(
        rows,
        log_d,
        log_ev,
        log_h1,
        L,
        comp.kind_code,
        hyper,
        tables,
        const,
        log_alpha,
        n_max,
        *init,
    )
    return model._tree(
        children,
        nodes,
        (log_r, log_1mr, log_pi),
        leaf_of=leaf_of,
        info={"rescans": int(rescans)},
    )


def bhc(model: BayesianHierarchicalClustering, data, memory_limit: int | None = None) -> Tree:
    """Bayesian hierarchical clustering, Algorithm 3.2 (Heller 2007, section 3.2).

    Greedily merges the pair of trees with the highest ``r_k`` (eq. (3.3)) until one tree is left;
    the merge prior is Algorithm 3.3 in log space. See the module docstring for the search.

    Parameters
    ----------
    model : BayesianHierarchicalClustering
        ``alpha`` and the conjugate component.
    data : Features or array_like (n, D)
    memory_limit : int, optional
        Bytes the run may allocate; default half of the available physical memory. A run that
        would need more is refused up front with the estimate.

    Returns
    -------
    Tree

    Examples
    --------
    >>> model = BayesianHierarchicalClustering(alpha=1.0)
    >>> tree = bhc(model, [[1, 1, 0], [1, 1, 0], [0, 0, 1], [0, 0, 1]])
    >>> tree.children.tolist(), tree.cut().tolist()
    ([[0, 1], [2, 3], [4, 5]], [0, 0, 1, 1])
    >>> bhc(model, [[1, 0]] * 10, memory_limit=100)
    Traceback (most recent call last):
    ...
    ValueError: this BHC run would allocate about 0.0 MiB, more than the memory_limit of 0.0 MiB; use rbhc or embhc with a subsample size m
    """
    if not isinstance(model, BayesianHierarchicalClustering):
        raise ValueError(
            f"model must be a BayesianHierarchicalClustering, got {type(model).__name__}"
        )
    if memory_limit is not None:
        check_integer("memory_limit", memory_limit)
    data = model.check_data(data)
    X = np.ascontiguousarray(data.X, dtype=np.float64)
    tree = _build(model, X, memory_limit=memory_limit)
    tree.info.update(method="bhc")
    return dataclasses.replace(tree, coords=data.coords())


# ------------------------------------------------------------------------------ randomised BHC
def _check_model_data(model, data):
    if not isinstance(model, BayesianHierarchicalClustering):
        raise ValueError(
            f"model must be a BayesianHierarchicalClustering, got {type(model).__name__}"
        )
    data = model.check_data(data)
    return data, np.ascontiguousarray(data.X, dtype=np.float64)


def _argmax_predictive(comp, stats, X, log_prior=None, block: int = 8192) -> np.ndarray:
    """``argmax_c [log prior_c + log p(x_i | D_c)]`` per row of ``X``, in blocks of rows.

    Ties go to the smaller cluster index (``numpy.argmax``).
    """
    out = np.empty(X.shape[0], dtype=np.int64)
    for start in range(0, X.shape[0], block):
        scores = comp.log_predictive(stats, X[start : start + block])
        if log_prior is not None:
            scores = scores + log_prior
        out[start : start + block] = np.argmax(scores, axis=1)
    return out


def _local_merges(tree: Tree, items: np.ndarray, n_items: int, merges: list) -> int:
    """Append a tree over ``items`` (local leaf ``l`` = item ``items[l]``) to the global merges."""
    L = items.size
    if L == 1:
        return int(items[0])
    ids = np.empty(2 * L - 1, dtype=np.int64)
    ids[:L] = items
    first = n_items + len(merges)
    ids[L:] = first + np.arange(L - 1)
    merges.extend(ids[tree.children].tolist())
    return int(ids[-1])


RBHC_OPTIONS = (
    integer("m", 100, "items in each random subsample (Algorithm 3.4)", low=2, quick=10),
    seed(),
    choice("filter_prior", "size", "prior of the filtering step", ("pi", "size")),
    real("min_fraction", 0.1, "smallest share of a split that is recursed into", 0, 0.5),
)
"""The options of :func:`rbhc`, declared once: its defaults and checks, and the family's method.
The quick ``m``: a subsample smaller than the common checks' data, else they are exact BHC."""


def rbhc(model: BayesianHierarchicalClustering, data, **options) -> Tree:
    """Randomised BHC, Algorithms 3.4-3.5 (Heller 2007, section 3.6): ``O(n m log n)``.

    A set larger than ``m`` items is split by running :func:`bhc` on ``m`` of its items drawn at
    random and *filtering* the others through the top merge of that tree (Algorithm 3.5): item
    ``x`` goes to the side ``c`` of largest ``pi_c p(x | D_c)``, with ``D_c`` the subsample's items
    under that side and ``p(x | D)`` the component's posterior predictive. Each side is then split
    the same way; a set of at most ``m`` items gets its exact BHC tree. The resulting tree's
    quantities (``r_k``, ``p(D_k | T_k)``, ``d_k``) are computed on all the data by
    :meth:`~latentzoo.models.bhc.BayesianHierarchicalClustering.evaluate`.

    The running time rests on the thesis' second assumption, that the top split is roughly
    balanced. A greedy BHC tree often ends by attaching a few outlying items to everything else,
    and filtering through such a split peels off a handful of items per BHC run: ``O(n^2)`` work
    (over 5 minutes for 100,000 items in a trial). So, unless ``min_fraction=0`` (the thesis
    literally), the filter goes through the *top levels* of the subsample tree: from the root it
    descends into the larger child while the smaller one holds fewer than ``min_fraction`` of the
    subsample, and the items are filtered into all the subtrees met (the small ones peeled off on
    the way down and the two children of the first balanced merge). The top of the result keeps
    the subsample tree's nesting of these parts.

    Parameters
    ----------
    model : BayesianHierarchicalClustering
    data : Features or array_like (n, D)
    **options
        Those of :data:`RBHC_OPTIONS`, at their declared defaults when not given:
    m : int, default 100
        Subsample size (at least 2).
    random_state : int or numpy.random.Generator, optional
    filter_prior : {"size", "pi"}
        ``"size"`` (default): ``pi_c`` is the CRP weight ``n_c`` of the subsample, the factor
        ``n_{i+} / (n_{i+} + n_{i-})`` with which eq. (3.11) sends a new item down the tree.
        ``"pi"``: Algorithm 3.5 literally, with Algorithm 3.3's merge prior ``pi_c`` of the
        subtree (1 for a single item). That ``pi_c`` is the prior that the subtree's items form
        one cluster, and it shrinks like ``Gamma(n_c) / d_c`` with the subtree's size, so it pulls
        items towards small subtrees: splits are less balanced and the run is slower (about 5
        times on 20,000 synthetic binary items).
    min_fraction : float, default 0.1
        In ``[0, 0.5]``; see above.

    Returns
    -------
    Tree

    Examples
    --------
    >>> X = np.tile(np.repeat(np.eye(4), 50, axis=0), 2)  # four groups of identical items
    >>> tree = rbhc(BayesianHierarchicalClustering(), X, m=20, random_state=0)
    >>> tree.n_items, tree.purity(np.repeat(np.arange(4), 50)), tree.cut().max() + 1
    (200, 1.0, np.int64(4))
    """
    data, X = _check_model_data(model, data)
    chosen = take_declared(RBHC_OPTIONS, options, "rbhc")
    m, filter_prior, min_fraction = (chosen[n] for n in ("m", "filter_prior", "min_fraction"))
    rng = as_rng(chosen["random_state"])
    comp = model.component
    n = X.shape[0]
    merges: list = []
    # explicit stack instead of recursion: ("split", items) tasks and ("join", None) markers
    stack = [("split", np.arange(n))]
    roots: list = []
    while stack:
        task, items = stack.pop()
        if task == "join":
            right = roots.pop()
            left = roots.pop()
            merges.append([left, right])
            roots.append(n + len(merges) - 1)
            continue
        if items.size <= m:
            roots.append(_local_merges(_build(model, X[items]), items, n, merges))
            continue
        sub = np.sort(rng.choice(items, size=m, replace=False))
        tree = _build(model, X[sub])
        parts = _filter_parts(tree.children, m, min_fraction)
        part_of_leaf = _part_of_leaves(tree.children, m, parts)
        rest = np.setdiff1d(items, sub, assume_unique=True)
        stats = comp.stats(X[sub], part_of_leaf, len(parts))
        if filter_prior == "size":
            log_prior = np.log(stats[:, 0])
        else:
            log_prior = np.array([0.0 if p < m else float(tree.log_pi[p - m]) for p in parts])
        side = _argmax_predictive(comp, stats, X[rest], log_prior)
        # the parts nest as in the subsample tree: join(p1, join(p2, ... join(p_{K-1}, p_K)))
        stack.extend([("join", None)] * (len(parts) - 1))
        for c in range(len(parts) - 1, -1, -1):
            members = np.concatenate([sub[part_of_leaf == c], rest[side == c]])
            stack.append(("split", np.sort(members)))
    tree = model.evaluate(np.array(merges, dtype=np.int64).reshape(n - 1, 2), data)
    tree.info.update(method="rbhc", m=m, filter_prior=filter_prior, min_fraction=min_fraction)
    return tree


def _filter_parts(children: np.ndarray, n_leaves: int, min_fraction: float) -> list:
    """Subtrees of the subsample tree the items are filtered into (see :func:`rbhc`), in order."""
    sizes = np.ones(2 * n_leaves - 1)
    for k, (a, b) in enumerate(children):  # O(m) on the subsample tree
        sizes[n_leaves + k] = sizes[a] + sizes[b]
    parts = []
    node = 2 * n_leaves - 2
    while node >= n_leaves:
        a, b = children[node - n_leaves]
        small, big = (a, b) if sizes[a] <= sizes[b] else (b, a)
        if sizes[small] >= min_fraction * n_leaves:
            return [*parts, int(a), int(b)]
        parts.append(int(small))
        node = big
    return [*parts, int(node)]


def _part_of_leaves(children: np.ndarray, n_leaves: int, parts: list) -> np.ndarray:
    """Index in ``parts`` of the part above each leaf of the subsample tree."""
    owner = np.full(2 * n_leaves - 1, -1, dtype=np.int64)
    owner[parts] = np.arange(len(parts))
    for k in range(children.shape[0] - 1, -1, -1):  # top-down, O(m)
        if owner[n_leaves + k] >= 0:
            owner[children[k]] = np.where(
                owner[children[k]] >= 0, owner[children[k]], owner[n_leaves + k]
            )
    return owner[:n_leaves]


def embhc(
    model: BayesianHierarchicalClustering,
    data,
    m: int | None = None,
    n_em_steps: int = 3,
    random_state=None,
    memory_limit: int | None = None,
) -> Tree:
    """EM-based randomised BHC, Algorithm 3.6 (Heller 2007, section 3.6): ``O(k n m)``.

    ``m`` items drawn at random seed ``m`` clusters; every other item is filtered into the cluster
    of highest posterior predictive ``p(x | D_c)`` (Algorithm 3.5 with equal priors); ``n_em_steps``
    steps of hard EM then reassign every item to its most probable cluster given the current
    cluster statistics (clusters left empty are dropped); finally :func:`bhc` clusters the clusters:
    each is a leaf with ``pi = 1``, ``d = alpha Gamma(n_c)`` and evidence ``p(D_c | H_1)``
    (Algorithm 3.3 with clusters as atoms, so Theorem 3.1 and Corollary 3.1 still hold over the
    partitions that keep each cluster whole).

    Parameters
    ----------
    model : BayesianHierarchicalClustering
    data : Features or array_like (n, D)
    m : int, optional
        Number of subsample clusters (at least 1; at most ``n``); default ``min(100, n)``.
    n_em_steps : int
        Hard-EM steps ``k`` (0 allowed).
    random_state : int or numpy.random.Generator, optional
    memory_limit : int, optional
        Passed to the BHC step.

    Returns
    -------
    Tree
        Its leaves are the clusters of the last EM step; ``leaf_of`` maps each item to its leaf.

    Examples
    --------
    >>> X = np.repeat(np.eye(3), 30, axis=0)
    >>> tree = embhc(BayesianHierarchicalClustering(), X, m=6, random_state=1)
    >>> tree.n_items, tree.n_leaves <= 6, round(tree.purity(np.repeat([0, 1, 2], 30)), 6)
    (90, True, 1.0)
    """
    data, X = _check_model_data(model, data)
    n = X.shape[0]
    if m is None:
        m = min(100, n)
    check_integer("m", m, low=1)
    if m > n:
        raise ValueError(f"m must be at most the number of items ({n}), got {m}")
    check_integer("n_em_steps", n_em_steps, low=0)
    rng = as_rng(random_state)
    comp = model.component
    sub = np.sort(rng.choice(n, size=m, replace=False))
    labels = np.empty(n, dtype=np.int64)
    labels[sub] = np.arange(m)
    rest = np.setdiff1d(np.arange(n), sub, assume_unique=True)
    seed_stats = comp.stats(X[sub], np.arange(m), m)
    labels[rest] = _argmax_predictive(comp, seed_stats, X[rest])
    for _ in range(n_em_steps):
        _, labels = np.unique(labels, return_inverse=True)
        k = int(labels.max()) + 1
        stats = comp.stats(X, labels, k)
        new = _argmax_predictive(comp, stats, X)
        if np.array_equal(new, labels):
            break
        labels = new
    _, labels = np.unique(labels, return_inverse=True)
    labels = labels.astype(np.int64)
    k = int(labels.max()) + 1
    tree = _build(
        model, X, leaf_labels=labels, n_leaves=k, leaf_of=labels, memory_limit=memory_limit
    )
    tree.info.update(method="embhc", m=m, n_em_steps=n_em_steps)
    return dataclasses.replace(tree, coords=data.coords())


# ------------------------------------------------------------------------------ hyperparameters
class LineSearchResult(NamedTuple):
    """Result of :func:`learn_hyperparameters`.

    Attributes
    ----------
    model : BayesianHierarchicalClustering
        The best hyperparameters found.
    tree : Tree
        Its greedy tree.
    history : list of dict
        One entry per evaluated setting: ``round``, ``parameter``, ``value``, ``log_evidence``
        (``log p(D | T)`` of the rebuilt tree), ``best_log_evidence`` (running best) and ``params``.
    """

    model: BayesianHierarchicalClustering
    tree: Tree
    history: list


_GOLDEN = (math.sqrt(5.0) - 1.0) / 2.0


def _scaled(model, name, factor):
    if name == "alpha":
        return dataclasses.replace(model, alpha=float(model.alpha * factor))
    value = getattr(model.component, name)
    scaled = np.asarray(value, dtype=np.float64) * factor
    # The component's own types: a scalar, a vector or a matrix (psi0) as nested tuples.
    new = (
        float(scaled)
        if scaled.ndim == 0
        else tuple(map(tuple, scaled))
        if scaled.ndim == 2
        else (tuple(scaled.tolist()))
    )
    return dataclasses.replace(model, component=dataclasses.replace(model.component, **{name: new}))


def _params(model, names):
    return {
        name: (model.alpha if name == "alpha" else getattr(model.component, name)) for name in names
    }


def learn_hyperparameters(
    model: BayesianHierarchicalClustering,
    data,
    parameters=("alpha",),
    n_rounds: int = 2,
    n_evaluations: int = 8,
    max_factor: float = 10.0,
) -> LineSearchResult:
    """Hyperparameters by the evidence ``p(D | T)``: a coordinate-wise line search (section 3.4.1).

    The thesis optimises the root evidence for a fixed tree by gradients propagated bottom-up, in
    an EM-like loop that rebuilds the tree (the "Viterbi-like E step"), and in its experiments
    uses "a simple line search". Here every trial value rebuilds the greedy tree
    (:func:`bhc`) and scores its ``log p(D | T)``, so the search optimises the quantity that the
    thesis correlates with purity (Fig. 3.2); the greedy tree changes discontinuously with the
    hyperparameters, so a gradient of the fixed-tree evidence would not describe it. For each
    parameter in turn, a golden-section search over ``log`` of a multiplicative factor in
    ``[1 / max_factor, max_factor]`` of the current value (vectors are scaled as a whole), keeping
    the best setting seen (the current one included: the evidence never decreases). The fixed-tree
    gradient of section 3.4.1 with respect to ``alpha`` is :meth:`Tree.alpha_gradient
    <latentzoo.models.bhc.Tree.alpha_gradient>`.

    Parameters
    ----------
    model : BayesianHierarchicalClustering
        The starting point.
    data : Features or array_like
    parameters : sequence of str
        ``"alpha"`` and/or the component's positive scale hyperparameters: ``a``, ``b``
        (Beta-Bernoulli), ``eta`` (Dirichlet-multinomial), ``kappa0``, ``a0``, ``b0``
        (Normal-Gamma), ``kappa0`` and ``psi0`` (Normal-inverse-Wishart; the scale matrix as a
        whole, which sets the expected cluster covariance and matters most for purity: on the
        synthetic Gaussians of Table 3.1, 0.48 with ``psi0 = I`` against 0.64 with the data's
        covariance, ``notebooks/bhc.ipynb``).
    n_rounds : int
        Passes over ``parameters``.
    n_evaluations : int
        Trees built per line search (at least 3).
    max_factor : float
        The search bracket, greater than 1.

    Returns
    -------
    LineSearchResult

    Examples
    --------
    >>> X = np.repeat(np.eye(3), 5, axis=0)
    >>> result = learn_hyperparameters(BayesianHierarchicalClustering(), X, n_rounds=1)
    >>> steps = result.history
    >>> bool(steps[-1]["best_log_evidence"] >= steps[0]["log_evidence"])
    True
    """
    data, _ = _check_model_data(model, data)
    allowed = ("alpha", *model.component.searchable_hyperparameters)
    names = (parameters,) if isinstance(parameters, str) else tuple(parameters)
    bad = [p for p in names if p not in allowed]
    if not names or bad:
        raise ValueError(f"parameters must be a non-empty subset of {allowed}, got {parameters!r}")
    check_integer("n_rounds", n_rounds)
    check_integer("n_evaluations", n_evaluations, low=3)
    if not (isinstance(max_factor, int | float) and math.isfinite(max_factor) and max_factor > 1):
        raise ValueError(f"max_factor must be a finite number greater than 1, got {max_factor!r}")
    best_model = model
    best_tree = bhc(model, data)
    history = [
        {
            "round": 0,
            "parameter": None,
            "value": None,
            "log_evidence": best_tree.log_marginal,
            "best_log_evidence": best_tree.log_marginal,
            "params": _params(model, names),
        }
    ]
    for rnd in range(1, n_rounds + 1):
        for name in names:
            centre = best_model
            cache = {}

            def evaluate(log_factor, centre=centre, name=name, cache=cache, rnd=rnd):
                nonlocal best_model, best_tree
                if log_factor not in cache:
                    trial = _scaled(centre, name, math.exp(log_factor))
                    tree = bhc(trial, data)
                    cache[log_factor] = tree.log_marginal
                    if tree.log_marginal > best_tree.log_marginal:
                        best_model, best_tree = trial, tree
                    history.append(
                        {
                            "round": rnd,
                            "parameter": name,
                            "value": _params(trial, (name,))[name],
                            "log_evidence": tree.log_marginal,
                            "best_log_evidence": best_tree.log_marginal,
                            "params": _params(trial, names),
                        }
                    )
                return cache[log_factor]

            lo, hi = -math.log(max_factor), math.log(max_factor)
            x1 = hi - _GOLDEN * (hi - lo)
            x2 = lo + _GOLDEN * (hi - lo)
            f1, f2 = evaluate(x1), evaluate(x2)
            for _ in range(n_evaluations - 2):
                if f1 >= f2:  # maximise
                    hi, x2, f2 = x2, x1, f1
                    x1 = hi - _GOLDEN * (hi - lo)
                    f1 = evaluate(x1)
                else:
                    lo, x1, f1 = x1, x2, f2
                    x2 = lo + _GOLDEN * (hi - lo)
                    f2 = evaluate(x2)
    return LineSearchResult(best_model, best_tree, history)


# ------------------------------------------------------------------------------ the family
def validation_recipe():
    """How :func:`latentzoo.validate` checks BHC against the DPM (a ``ValidationRecipe``)."""
    from latentzoo.inference.mixture import gibbs as dpm_gibbs
    from latentzoo.inference.recipes import bhc as recipe

    return recipe(dpm_gibbs)


_MEMORY = integer(
    "memory_limit", None, "bytes the run may allocate (None: half the RAM)", none=True
)
# A tree model has no PyMC declaration of its own (it approximates the DPM, whose declaration is
# checked in the dpm family) and no parameters to set against a simulated truth: the common checks
# that need them do not apply (latentzoo.testing.CHECK_NEEDS); `latentzoo validate bhc` compares
# it with the DPM's exact marginal likelihood and posterior and with its Gibbs sampler.
FAMILY = Family(
    name="bhc",
    model=BayesianHierarchicalClustering,
    methods={
        "bhc": Method(
            bhc,
            (_MEMORY,),
            time_order=2,  # every pair of items is scored
            faster="--method rbhc or embhc (--option m=100), O(N m)",
        ),
        "rbhc": Method(rbhc, RBHC_OPTIONS),
        "embhc": Method(
            embhc,
            (
                integer("m", None, "subsample clusters (None: min(100, n))", none=True, quick=10),
                integer("n_em_steps", 3, "hard-EM steps after the filtering", 0),
                seed(),
                _MEMORY,
            ),
        ),
    },
    recipe=validation_recipe,
    sizes=(),
    dataset="digits",
    notebook="notebooks/bhc.ipynb",
    description="Bayesian hierarchical clustering, the DPM's fast tree (Heller 2007, ch. 3)",
    options=(
        real(
            "prior_scale",
            2.0,
            "empirical Beta-Bernoulli prior from the data's feature means (0: the default prior)",
            low=0,
            none=True,
        ),
    ),
)
"""Bayesian hierarchical clustering's family (listed in :mod:`latentzoo.zoo`)."""
