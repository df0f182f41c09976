"""Relevance of a document to the topics of a path: the minimax generalized pseudo-inverse.

Algorithm 2.1 (step 1) and Algorithm 3.1 (step 2) of seed 003 compute a left inverse ``V`` of the
``n x k`` topic matrix ``W`` (``V W = I``) whose largest entry is as small as possible,

    minimise c  subject to  V W = I,  -c <= V_iu <= c,                                   (1)

and return the relevances ``r~ = V D~`` of a document with normalised word counts ``D~``. Since
``<V_i, D~> - <V_i, D>`` is a mean of ``t`` independent terms bounded by ``max |V_i|``, Lemma 2.2
bounds the error of each relevance by ``2 exp(-t eps^2 / (2 c^2))``: a small ``c`` is what makes
short documents enough, whatever the vocabulary size (Corollary 3.6 extends this to documents from
topics off the path, whose relevances go to the closest topic on the path).

Three ways of solving (1) are offered (:func:`minimax_pseudoinverse`):

- ``"full"``: (1) as one linear program over the ``k n + 1`` unknowns ``(V, c)``;
- ``"rows"``: (1) separates by rows: ``max_i`` of the row programs ``min ||v||_inf s.t. W^T v =
  e_i`` is the optimum of (1), and stacking the row optima gives an optimal ``V`` whose every row
  is as small as it can be. Each row program is solved as is (``n + 1`` unknowns);
- ``"dual"`` (the default): each row program is solved through its dual, which has only ``k``
  unknowns (derived in :func:`minimax_pseudoinverse`), by constraint generation.

The SVD pseudo-inverse ``np.linalg.pinv(W)`` (the least-squares ``(W^T W)^{-1} W^T``) is the
comparison the paper makes; it minimises ``||V||_F``, not the largest entry.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np
import scipy.sparse as sp
from scipy.optimize import linprog

from latentzoo.inference.checks import Check
from latentzoo.inference.family import Family, Method, choice, integer, real, take_declared
from latentzoo.models.topic_tree import TopicTreeMixture, check_topic_matrix

__all__ = [
    "METHODS",
    "Pseudoinverse",
    "minimax_pseudoinverse",
    "relevance",
    "svd_pseudoinverse",
]

METHODS = ("dual", "rows", "full")
"""Ways of solving the minimax program (1), see :func:`minimax_pseudoinverse`."""

_MAX_CUTTING_ROUNDS = 10_000
_FEASIBILITY = 1e-12


@dataclass(frozen=True)
class Pseudoinverse:
    """A left inverse ``V`` of a topic matrix and how it was found.

    Attributes
    ----------
    V : numpy.ndarray of shape (n_topics, n_words)
    bound : float
        The optimum ``c`` of program (1) as the solver reports it (for the SVD pseudo-inverse: its
        largest absolute entry).
    row_bounds : numpy.ndarray of shape (n_topics,)
        ``max_u |V_iu|`` of each row.
    method : str
    n_programs : int
        Linear programs solved (constraint-generation rounds included).
    row_lower_bounds : numpy.ndarray of shape (n_topics,) or None
        ``"dual"`` only: ``y_i / max(1, ||W y||_1)`` for the last dual point ``y`` of each row, a
        feasible value of (D_i) and so, by weak duality, a lower bound on every left inverse's
        ``max_u |V_iu|``. With ``row_bounds`` (reached by the returned, exactly feasible ``V``) it
        certifies each row's optimality to the gap between the two.
    """

    V: np.ndarray
    bound: float
    row_bounds: np.ndarray
    method: str
    n_programs: int
    row_lower_bounds: np.ndarray | None = None

    def relevance(self, documents) -> np.ndarray:
        """``r~ = V D~`` for each document (:func:`relevance`)."""
        return relevance(self.V, documents)


def svd_pseudoinverse(topics) -> Pseudoinverse:
    """The Moore-Penrose pseudo-inverse ``np.linalg.pinv(W)``, the comparison of section 2.2.

    Examples
    --------
    >>> P = svd_pseudoinverse([[0.9, 0.1], [0.1, 0.9]])
    >>> P.V.round(3).tolist()
    [[1.125, -0.125], [-0.125, 1.125]]
    """
    matrix = check_topic_matrix(topics)
    inverse = np.linalg.pinv(matrix)
    row_bounds = np.abs(inverse).max(axis=1)
    return Pseudoinverse(inverse, float(row_bounds.max()), row_bounds, "svd", 0)


def minimax_pseudoinverse(topics, method: str = "dual") -> Pseudoinverse:
    """The minimax generalized pseudo-inverse of ``W`` (seed 003, Algorithm 2.1 step 1, program
    (1); Algorithm 3.1 step 2), by linear programming with HiGHS.

    **Separation by rows.** In (1) the constraint ``V W = I`` reads ``W^T v_i = e_i`` row by row and
    the box couples the rows only through ``c``, so the optimum of (1) is ``max_i c_i`` with

        c_i = min ||v||_inf  subject to  W^T v = e_i.                                    (P_i)

    **The dual of (P_i) has k unknowns.** With a multiplier ``y in R^k`` for ``W^T v = e_i``, the
    Lagrangian is ``c - y^T (W^T v - e_i)``; minimising over ``||v||_inf <= c`` gives ``c (1 -
    ||W y||_1) + y_i`` (``v = c sign(W y)``), bounded below in ``c >= 0`` only if ``||W y||_1 <= 1``.
    So

        c_i = max y_i  subject to  ||W y||_1 <= 1,                                       (D_i)

    a program over ``y in R^k`` alone (strong duality holds: (P_i) is feasible when ``W`` has full
    column rank). Its feasible set is the polytope ``{y : s^T W y <= 1 for every s in {-1, 1}^n}``,
    whose facets are far too many to list, so (D_i) is solved by constraint generation: solve (D_i)
    over the cuts ``S`` found so far, add the cut ``s = sign(W y)`` of the point found when
    ``||W y||_1 > 1``, stop when the point is feasible (it is then optimal, since the relaxation's
    optimum is an upper bound). The cuts are the same for every row, so they are kept from row to
    row. The rows of the SVD pseudo-inverse seed ``S``, and a box ``|y_j| <= 2 / sigma_min(W)``
    (valid: ``||W y||_1 >= ||W y||_2 >= sigma_min ||y||_2``) keeps the first relaxations bounded.

    **Back to V.** The multipliers ``mu >= 0`` of the active cuts solve the dual of the cut program,
    ``(S W)^T mu = e_i`` with ``sum(mu) = c_i``, so ``v_i = S^T mu`` meets ``W^T v_i = e_i`` and
    ``|v_iu| <= sum(mu) = c_i``: an optimal row. ``mu`` is recomputed from its active set by least
    squares, which makes ``V W = I`` hold to rounding error rather than to the solver's tolerance.

    Parameters
    ----------
    topics : array-like of shape (n_words, n_topics)
        ``W``: non-negative, of full column rank (e.g. the topics of a root-to-leaf path).
    method : {"dual", "rows", "full"}
        ``"dual"``: (D_i) for every row (default, fastest); ``"rows"``: (P_i) for every row, ``n + 1``
        unknowns each; ``"full"``: (1) in one program with ``k n + 1`` unknowns (only ``max_i``
        rows reach the bound; the others are any feasible rows the solver returns). ``"rows"`` and
        ``"full"`` return HiGHS's primal solution, which meets ``V W = I`` only to the solver's
        feasibility tolerance: on topics with tiny entries (a ``Dirichlet(0.1)`` baseline) it was
        off by 1e-8 and the optimum by up to 5e-9 relative, where ``"dual"`` is exact to rounding
        and certified by ``row_lower_bounds``.

    Returns
    -------
    Pseudoinverse

    Raises
    ------
    ValueError
        If ``W`` is not a non-negative full-column-rank matrix or ``method`` is unknown.

    Examples
    --------
    >>> W = np.array([[0.6, 0.1], [0.3, 0.2], [0.1, 0.7]])
    >>> P = minimax_pseudoinverse(W)
    >>> np.allclose(P.V @ W, np.eye(2)), round(P.bound, 6)
    (True, 1.2)
    >>> round(minimax_pseudoinverse(W, method="full").bound, 6)
    1.2
    """
    matrix = check_topic_matrix(topics)
    if method not in METHODS:
        raise ValueError(f"method must be one of {METHODS}, got {method!r}")
    if method == "full":
        return _full_program(matrix)
    if method == "rows":
        solved = [_row_primal(matrix, row) for row in range(matrix.shape[1])]
        rows, bounds = [row for row, _ in solved], [bound for _, bound in solved]
        n_programs, lower_bounds = len(solved), None
    else:
        rows, bounds, n_programs, lower_bounds = _rows_by_dual(matrix)
    inverse = np.vstack(rows)
    bounds = np.asarray(bounds, dtype=float)
    row_bounds = np.abs(inverse).max(axis=1)
    return Pseudoinverse(inverse, float(bounds.max()), row_bounds, method, n_programs, lower_bounds)


def _check_solved(result, what: str) -> None:
    if result.status != 0:
        raise RuntimeError(f"{what}: HiGHS did not solve the program: {result.message}")


def _solve_bounded_lp(n_entries: int, equalities, equality_rhs, what: str):
    """``min c`` over ``(x, c)`` subject to ``|x_j| <= c`` for the ``n_entries`` entries of ``x``
    and ``equalities @ (x, c) = equality_rhs``: the shape of program (1) and of every (P_i)."""
    entries = sp.identity(n_entries, format="csr")
    minus_c = sp.csr_matrix(-np.ones((n_entries, 1)))
    inequalities = sp.vstack(
        [sp.hstack([entries, minus_c]), sp.hstack([-entries, minus_c])]
    ).tocsr()
    cost = np.zeros(n_entries + 1)
    cost[-1] = 1.0
    result = linprog(
        cost,
        A_ub=inequalities,
        b_ub=np.zeros(2 * n_entries),
        A_eq=equalities,
        b_eq=equality_rhs,
        bounds=[(None, None)] * n_entries + [(0, None)],
        method="highs",
    )
    _check_solved(result, what)
    return result


def _full_program(matrix: np.ndarray) -> Pseudoinverse:
    """Program (1) as one LP over ``x = (vec_row(V), c)``."""
    n_words, n_topics = matrix.shape
    n_entries = n_topics * n_words
    # (V W)_ij = sum_u V_iu W_uj: block-diagonal kron(I_k, W^T) acting on the rows of V.
    equalities = sp.hstack(
        [sp.kron(sp.identity(n_topics), sp.csr_matrix(matrix.T)), sp.csr_matrix((n_topics**2, 1))]
    )
    result = _solve_bounded_lp(
        n_entries,
        equalities.tocsr(),
        np.eye(n_topics).ravel(),
        "minimax pseudo-inverse (full program)",
    )
    inverse = result.x[:n_entries].reshape(n_topics, n_words)
    return Pseudoinverse(inverse, float(result.fun), np.abs(inverse).max(axis=1), "full", 1)


def _row_primal(matrix: np.ndarray, row: int):
    """(P_i) as an LP over ``(v, c)``: returns the row and ``c_i``."""
    n_words, n_topics = matrix.shape
    result = _solve_bounded_lp(
        n_words,
        np.hstack([matrix.T, np.zeros((n_topics, 1))]),
        np.eye(n_topics)[row],
        f"minimax pseudo-inverse (row {row})",
    )
    return result.x[:n_words], float(result.fun)


def _rows_by_dual(matrix: np.ndarray):
    """Every (D_i) by constraint generation over one shared pool of cuts (see
    :func:`minimax_pseudoinverse`); returns the rows, the ``c_i``, the programs solved and the
    certified lower bounds on the ``c_i``."""
    n_words, n_topics = matrix.shape
    singular_values = np.linalg.svd(matrix, compute_uv=False)
    box = 2.0 / singular_values[-1]
    seeds = np.sign(np.linalg.pinv(matrix)).astype(np.int8)
    # The sign vectors s are kept as a list (int8): only the k-vectors s^T W enter the programs, and
    # stacking n-long rows at every round would copy the whole pool each time.
    cuts = [*seeds, *(-seeds)]
    cut_rows = [cut @ matrix for cut in cuts]
    seen = {cut.tobytes() for cut in cuts}
    rows, bounds, lower_bounds, n_programs = [], [], [], 0
    for row in range(n_topics):
        objective = -np.eye(n_topics)[row]  # linprog minimises: max y_i = -min(-y_i)
        for _round in range(_MAX_CUTTING_ROUNDS):
            result = linprog(
                objective,
                A_ub=np.array(cut_rows),
                b_ub=np.ones(len(cut_rows)),
                bounds=[(-box, box)] * n_topics,
                method="highs",
            )
            n_programs += 1
            _check_solved(result, f"minimax pseudo-inverse (dual of row {row})")
            image = matrix @ result.x
            new_cut = np.sign(image).astype(np.int8)
            # Feasible for the full (D_i) (to rounding, or to the solver's tolerance when the most
            # violated cut is already in the pool): the relaxation's optimum is the optimum.
            if np.abs(image).sum() <= 1.0 + _FEASIBILITY or new_cut.tobytes() in seen:
                break
            seen.add(new_cut.tobytes())
            cuts.append(new_cut)
            cut_rows.append(new_cut @ matrix)
        else:
            raise RuntimeError(
                f"minimax pseudo-inverse: row {row} did not converge in {_MAX_CUTTING_ROUNDS} rounds"
            )
        multipliers = -result.ineqlin.marginals
        rows.append(_row_from_multipliers(cuts, np.array(cut_rows), multipliers, row))
        bounds.append(-result.fun)
        lower_bounds.append(result.x[row] / max(1.0, np.abs(image).sum()))
    return rows, bounds, n_programs, np.array(lower_bounds)


def _row_from_multipliers(cuts, cut_rows, multipliers, row: int) -> np.ndarray:
    """``v = S^T mu`` from the active cuts, with ``mu`` refitted so that ``W^T v = e_i`` exactly
    (the solver's ``mu`` meets it only to its feasibility tolerance)."""
    n_topics = cut_rows.shape[1]
    active = np.flatnonzero(multipliers > 1e-12 * max(multipliers.max(), 1e-300))
    active_cuts = np.array([cuts[index] for index in active], dtype=float)
    target = np.eye(n_topics)[row]
    refitted, *_ = np.linalg.lstsq(cut_rows[active].T, target, rcond=None)
    if not (
        np.all(refitted >= 0)
        and np.allclose(cut_rows[active].T @ refitted, target, rtol=0, atol=1e-9)
    ):
        refitted = np.clip(multipliers[active], 0.0, None)
    return active_cuts.T @ refitted


def relevance(inverse, documents) -> np.ndarray:
    """The approximate relevances ``r~ = V D~`` (Algorithm 2.1 step 2, Algorithm 3.1 step 3), with
    ``D~`` each document's word counts divided by its length.

    Parameters
    ----------
    inverse : array-like of shape (n_topics, n_words)
        A left inverse ``V`` of the topic matrix (:func:`minimax_pseudoinverse`).
    documents : CoOccurrence or array-like of shape (n_docs, n_words) or (n_words,)
        Word counts (non-negative; every document at least one word).

    Returns
    -------
    numpy.ndarray of shape (n_docs, n_topics), or (n_topics,) for one document

    Examples
    --------
    >>> relevance(np.eye(2), [[3, 1], [0, 2]]).tolist()
    [[0.75, 0.25], [0.0, 1.0]]
    >>> relevance(np.eye(2), [[0, 0]])
    Traceback (most recent call last):
    ...
    ValueError: documents[0] is empty: a relevance needs at least one word
    """
    inverse = np.asarray(inverse, dtype=float)
    single = False
    # A CoOccurrence carries validated integer counts already; anything else is checked here.
    counts = getattr(documents, "counts", None)
    if counts is None:
        array = np.asarray(documents, dtype=float) if not sp.issparse(documents) else documents
        single = array.ndim == 1
        counts = sp.csr_matrix(np.atleast_2d(array) if single else array, dtype=float)
        if not np.all(np.isfinite(counts.data)) or np.any(counts.data < 0):
            raise ValueError("documents must hold finite non-negative counts")
    if counts.shape[1] != inverse.shape[1]:
        raise ValueError(
            f"documents have {counts.shape[1]} words but V has {inverse.shape[1]} columns"
        )
    lengths = np.asarray(counts.sum(axis=1)).ravel()
    if np.any(lengths <= 0):
        raise ValueError(
            f"documents[{np.flatnonzero(lengths <= 0)[0]}] is empty: a relevance needs at least one word"
        )
    # Sparse counts times dense V^T: one pass over the non-zeros, then divide by the lengths.
    result = np.asarray(counts @ inverse.T) / lengths[:, None]
    return result[0] if single else result


# ------------------------------------------------------------------ Algorithm 3.2: the hierarchy
@dataclass(frozen=True)
class TopicHierarchy:
    """A tree over topics, as Algorithm 3.2 reconstructs it.

    Nodes ``0 .. n_leaves - 1`` are the input (leaf) topics in their input order; the internal
    nodes follow, the root first (node ``n_leaves``).

    Attributes
    ----------
    parent : numpy.ndarray of shape (n_nodes,)
        Each node's parent, ``-1`` for the root.
    topics : numpy.ndarray of shape (n_words, n_nodes)
        Each node's topic: the leaves' own, and for an internal node the average of its leaves
        (Algorithm 3.2 step 1, the estimate of the subtree's root).
    members : tuple of numpy.ndarray
        The leaves under each node.
    """

    parent: np.ndarray
    topics: np.ndarray
    members: tuple

    @property
    def n_leaves(self) -> int:
        """The number of input topics."""
        return int(sum(m.size == 1 and m[0] == node for node, m in enumerate(self.members)))

    def clusters(self) -> list[tuple[int, ...]]:
        """The leaf sets of the internal nodes, sorted: the topology up to node numbering.

        Examples
        --------
        >>> W = np.array([[0.5, 0.4, 0.05, 0.05], [0.4, 0.5, 0.05, 0.05], [0.05, 0.05, 0.5, 0.4],
        ...               [0.05, 0.05, 0.4, 0.5]])
        >>> hierarchy_from_topics(W, tau=0.3).clusters()
        [(0, 1), (0, 1, 2, 3), (2, 3)]
        """
        internal = self.members[self.n_leaves :]
        return sorted(tuple(int(leaf) for leaf in m) for m in internal)


def _check_topic_columns(topics, name: str = "topics") -> np.ndarray:
    """``topics`` as a float ``n x m`` array of non-negative, non-empty columns, each normalised
    to sum to one (a collection of topics need not be of full column rank)."""
    matrix = np.asarray(topics, dtype=float)
    if matrix.ndim != 2 or matrix.shape[0] < 2 or matrix.shape[1] == 0:
        raise ValueError(f"{name} must be a 2-D array (words x topics), got shape {matrix.shape}")
    if not np.all(np.isfinite(matrix)) or np.any(matrix < 0):
        raise ValueError(f"{name} must hold finite non-negative probabilities")
    totals = matrix.sum(axis=0)
    if np.any(totals <= 0):
        raise ValueError(f"{name}[:, {int(np.flatnonzero(totals <= 0)[0])}] is an empty topic")
    return matrix / totals


def related_topics(topics, tau: float, method: str = "dual") -> np.ndarray:
    """Steps 1-2a of Algorithm 3.2 (seed 003): which topics fall in the same subtree.

    The baseline ``T(0)`` is the average of the topics (step 1). For each topic ``T(c)``, ``V`` is
    the minimax pseudo-inverse of ``W = (T(c), T(0))`` (step 2) and every topic ``T(d)`` with
    ``(V T(d))_1 >= tau`` is put in ``T(c)``'s subtree (step 2a): by Lemma 3.5 a topic of another
    subtree projects onto ``T(0)`` (relevance about 0 to ``T(c)``, equation (24)), one of the same
    subtree onto the closest common ancestor, which lies between ``T(0)`` and ``T(c)``.

    Returns
    -------
    numpy.ndarray of shape (m, m), bool
        ``related[c, d]``: ``T(d)`` assigned to ``T(c)``'s subtree (the diagonal is True).
    """
    matrix = _check_topic_columns(topics)
    baseline = matrix.mean(axis=1)
    related = np.eye(matrix.shape[1], dtype=bool)
    for leaf in range(matrix.shape[1]):
        pair = np.column_stack([matrix[:, leaf], baseline])
        try:
            inverse = minimax_pseudoinverse(pair, method).V
        except (ValueError, RuntimeError):
            # T(c) equals the baseline (a set of one topic, or identical topics): no direction
            # to project on, so T(c) joins no one.
            continue
        related[leaf] |= (inverse[0] @ matrix) >= tau
    return related


def hierarchy_from_topics(topics, tau: float = 0.3, method: str = "dual") -> TopicHierarchy:
    """Algorithm 3.2 of seed 003 (topic hierarchy from the leaf topics), recursively.

    Steps 1-2a (:func:`related_topics`) relate each topic to those of its subtree; step 3 takes
    the connected components of that relation (made symmetric: ``c`` and ``d`` share a subtree if
    either was assigned to the other's) as the disjoint subtrees; step 4 applies steps 1-3 to each
    component of two or more topics, with the component's own average as its baseline. A set that
    does not split (one component) becomes one node whose children are its topics: the recursion
    always terminates and never invents an order among topics it cannot separate.

    Parameters
    ----------
    topics : array-like of shape (n_words, n_leaves)
        The leaf topics, one per column (normalised here).
    tau : float
        The threshold ``tau >= 0`` of step 2a; the paper uses 0.3 on 20 Newsgroups.
    method : str
        How the pseudo-inverses are solved (:func:`minimax_pseudoinverse`).

    Returns
    -------
    TopicHierarchy
    """
    if not (np.isfinite(tau) and tau >= 0):
        raise ValueError(f"tau must be a finite number >= 0, got {tau!r}")
    from scipy.sparse.csgraph import connected_components

    matrix = _check_topic_columns(topics)
    n_leaves = matrix.shape[1]
    parent = [-1] * n_leaves
    members = [np.array([leaf]) for leaf in range(n_leaves)]
    pending = [(np.arange(n_leaves), -1)]  # (leaf set, parent node) of internal nodes to build
    while pending:
        leaves, up = pending.pop(0)
        node = len(parent)
        parent.append(up)
        members.append(leaves)
        if leaves.size == 1:
            parent[leaves[0]] = node
            continue
        related = related_topics(matrix[:, leaves], tau, method)
        n_parts, part = connected_components(sp.csr_matrix(related | related.T), directed=False)
        for component in range(n_parts) if n_parts > 1 else ():
            inside = leaves[part == component]
            if inside.size == 1:
                parent[inside[0]] = node
            else:
                pending.append((inside, node))
        if n_parts == 1:
            for leaf in leaves:
                parent[leaf] = node
    node_topics = np.column_stack([matrix[:, m].mean(axis=1) for m in members])
    return TopicHierarchy(np.array(parent), node_topics, tuple(members))


# ------------------------------------------------------- Algorithm 3.3: topics from unlabeled data
def prune_vocabulary(
    data, min_documents: int = 5, max_document_share: float = 0.5, max_words: int = 4000
) -> np.ndarray:
    """The columns Algorithm 3.3 keeps: words in at least ``min_documents`` documents and in at
    most ``max_document_share`` of them (the datasets ship no stop-word list; the words in half the
    documents are its stand-in), the ``max_words`` most frequent by document frequency (ties by
    column order). The co-occurrence matrix is ``max_words**2`` dense numbers.

    Returns
    -------
    numpy.ndarray of int
        The kept column indices, in increasing order.

    Examples
    --------
    >>> prune_vocabulary(np.array([[1, 1, 0], [1, 0, 1], [1, 1, 0]]), 2, 0.9).tolist()
    [1]
    """
    counts = _as_counts(data)
    document_frequency = np.bincount(counts.indices, minlength=counts.shape[1])
    kept = np.flatnonzero(
        (document_frequency >= min_documents)
        & (document_frequency <= max_document_share * counts.shape[0])
    )
    order = np.argsort(-document_frequency[kept], kind="stable")[:max_words]
    return np.sort(kept[order])


def _as_counts(data) -> sp.csr_matrix:
    """Word counts as a CSR matrix of floats (a CoOccurrence's own counts, or checked here)."""
    counts = getattr(data, "counts", None)
    if counts is None:
        counts = sp.csr_matrix(data, dtype=float)
        if counts.ndim != 2 or not np.all(np.isfinite(counts.data)) or np.any(counts.data < 0):
            raise ValueError("data must be a 2-D array of finite non-negative word counts")
    counts = sp.csr_matrix(counts, dtype=float)
    counts.sum_duplicates()
    return counts


@dataclass(frozen=True)
class ReconstructedTree:
    """Topics, hierarchy and clustering found by Algorithm 3.3 (:func:`reconstruct_tree`).

    Node 0 is the root (its topic the corpus's term histogram, ``T(0)``); nodes are numbered in the
    order they were found, parents before children.

    Attributes
    ----------
    parent : numpy.ndarray of shape (n_nodes,)
        Each node's parent, ``-1`` for the root.
    topics : numpy.ndarray of shape (n_words, n_nodes)
        Each node's topic: the term histogram of its documents (step 4c's refinement).
    seed_words : numpy.ndarray of shape (n_nodes,)
        The column ``P_i`` each node started from (step 3), ``-1`` for the root.
    labels : numpy.ndarray of shape (n_docs,)
        The deepest node each document was assigned to (0: not clustered at the first level).
    depth : numpy.ndarray of shape (n_nodes,)
        Each node's level (root 0).
    rejected_words : numpy.ndarray
        The columns tried and rejected as poorly approximated (see :func:`reconstruct_tree`).
    """

    parent: np.ndarray
    topics: np.ndarray
    seed_words: np.ndarray
    labels: np.ndarray
    depth: np.ndarray
    rejected_words: np.ndarray
    words: np.ndarray | None = None
    """Names of the topics' words (the kept vocabulary), when known."""
    vocabulary: np.ndarray | None = None
    """The data's columns the topics are over (:func:`prune_vocabulary`), when pruned."""
    model: object = None
    """The :class:`~latentzoo.models.topic_tree.TopicTreeMixture` fitted, when known."""
    documents: np.ndarray | None = None
    """Names of the documents (the data's row labels), when known."""

    @property
    def n_nodes(self) -> int:
        """The number of nodes, the root included."""
        return int(self.parent.size)

    def summary_lines(self) -> list[str]:
        """What ``latentzoo fit`` prints: the tree's size and each first-level node's top words."""
        sizes = np.bincount(self.level_labels(1), minlength=self.n_nodes)
        names = _node_names(self)
        lines = [
            f"topic tree: {self.n_nodes - 1} nodes below the root, {int(self.depth.max(initial=0))} "
            f"levels, {int(sizes[0])} of {self.labels.size} documents left at the root"
        ]
        lines += [
            f"  node {node} ({int(sizes[node])} documents): {names[node]}"
            for node in np.flatnonzero(self.depth == 1)
        ]
        return lines

    def to_inference_data(self, data=None):
        """The tree as the ``InferenceData`` of a point estimate: ``parent``, ``depth``,
        ``seed_word`` per node, ``topic`` (node x kept word), ``label`` per document (``doc``) and,
        with ``data``, ``relevance`` (doc x [node, parent], :func:`node_relevance`)."""
        import xarray as xr

        from latentzoo.inference.results import point_estimate_inference_data
        from latentzoo.models.base import model_attrs

        words = self.words if self.words is not None else np.arange(self.topics.shape[0])
        variables = {
            "parent": (("node",), self.parent.astype(np.int64)),
            "depth": (("node",), self.depth.astype(np.int64)),
            "seed_word": (("node",), self.seed_words.astype(np.int64)),
            "topic": (("node", "kept_word"), self.topics.T),
            "label": (("doc",), self.labels.astype(np.int64)),
        }
        documents = self.documents if self.documents is not None else np.arange(self.labels.size)
        # "kept_word": the pruned vocabulary, not the data's "word" dimension.
        coords = {"node": np.arange(self.n_nodes), "kept_word": np.asarray(words).astype(str),
                  "doc": np.asarray(documents).astype(str)}  # fmt: skip
        if data is not None:
            counts = _as_counts(data)
            if self.vocabulary is not None:
                counts = counts[:, self.vocabulary]
            coords["relevance_to"] = ["node", "parent"]
            variables["relevance"] = (("doc", "relevance_to"), node_relevance(self, counts))
        attrs = {
            **(model_attrs(self.model) if self.model is not None else {}),
            "method": "reconstruct",
            "node_names": " | ".join(_node_names(self)),
        }
        return point_estimate_inference_data(xr.Dataset(variables, coords=coords), attrs)

    def save(self, path, data=None, format: str | None = None) -> None:
        """Write the tree: ``.npz`` (:meth:`arrays` and the word names; read with
        ``allow_pickle=False``) or netCDF (``to_inference_data(data)``, with the relevances)."""
        if format not in (None, "npz", "netcdf"):
            raise ValueError(f"format must be 'npz', 'netcdf' or None, got {format!r}")
        if (format or ("npz" if str(path).endswith(".npz") else "netcdf")) == "npz":
            arrays = self.arrays()
            if data is not None:
                counts = _as_counts(data)
                if self.vocabulary is not None:
                    counts = counts[:, self.vocabulary]
                arrays["result.relevance"] = node_relevance(self, counts)
            if self.words is not None:
                arrays["words"] = np.asarray(self.words).astype(str)
            with open(path, "wb") as handle:  # np.savez adds ".npz" to a path without it
                np.savez(handle, **arrays)
            return
        self.to_inference_data(data).to_netcdf(str(path))

    def figure(self, data=None):
        """The top of the hierarchy (two levels), each node named by its top words."""
        import matplotlib.pyplot as plt

        figure, ax = plt.subplots(figsize=(14, 6))
        names = [name.replace(" ", "\n") for name in _node_names(self)]
        draw_hierarchy(self.parent, names, ax=ax, max_depth=2)
        ax.set_title("Topic tree (Algorithm 3.3): the top two levels, 3 words per node")
        return figure

    def point_estimate(self) -> dict:
        """The tree's arrays, as saved in the ``point_estimate`` group."""
        return {
            "parent": self.parent.astype(np.int64),
            "depth": self.depth.astype(np.int64),
            "seed_word": self.seed_words.astype(np.int64),
            "topic": self.topics.T,
            "label": self.labels.astype(np.int64),
        }

    def arrays(self) -> dict:
        """Every array of the tree keyed ``"result.<name>"``."""
        out = {f"result.{name}": value for name, value in self.point_estimate().items()}
        out["result.rejected_words"] = self.rejected_words.astype(np.int64)
        if self.vocabulary is not None:
            out["result.vocabulary"] = self.vocabulary.astype(np.int64)
        return out

    def objective(self, data) -> tuple[str, float]:
        """``("documents clustered", share)``: the share of documents below the root."""
        return "documents clustered", float(np.mean(self.labels > 0))

    def level_labels(self, level: int = 1) -> np.ndarray:
        """Each document's ancestor at ``level`` (its own node if shallower; 0: unclustered)."""
        labels = self.labels.copy()
        # One step up per level for all documents at once.
        for _ in range(int(self.depth.max(initial=0))):
            deeper = self.depth[labels] > level
            labels[deeper] = self.parent[labels[deeper]]
        return labels


def _cooccurrence(counts: sp.csr_matrix) -> np.ndarray:
    """The co-occurrence matrix of step 1, unnormalised: ``P_ij = sum_d X_di X_dj / (L_d - 1)``
    over pairs of distinct tokens (the diagonal loses the ``X_dj`` pairs of a token with itself),
    so every document of length ``L_d >= 2`` weighs as ``L_d`` tokens and ``E P_ij / sum L_d =
    p_i p_j``: a long document does not dominate as its ``L_d**2`` pairs would."""
    lengths = np.asarray(counts.sum(axis=1)).ravel()
    weights = np.where(lengths >= 2, 1.0 / np.maximum(lengths - 1.0, 1.0), 0.0)
    weighted = sp.diags(weights) @ counts
    matrix = (counts.T @ weighted).toarray()
    matrix[np.diag_indices_from(matrix)] -= np.asarray(weighted.sum(axis=0)).ravel()
    return matrix


def _binary_relevance(topic, baseline, counts: sp.csr_matrix, lengths, method: str) -> np.ndarray:
    """Relevance to ``topic`` of each document against ``(topic, baseline)`` (Algorithm 3.1 with
    ``W = (P_i, T(0))``, steps 4a-4b); NaN if the two topics are not independent."""
    try:
        inverse = minimax_pseudoinverse(np.column_stack([topic, baseline]), method).V
    except (ValueError, RuntimeError):
        # Not independent (rank check), or so nearly collinear that HiGHS cannot solve (D_i).
        return np.full(counts.shape[0], np.nan)
    return np.asarray(counts @ inverse[0]) / lengths


def _histogram(counts: sp.csr_matrix) -> np.ndarray:
    totals = np.asarray(counts.sum(axis=0)).ravel()
    return totals / totals.sum()


MAX_DEPTH = integer("max_depth", 2, "levels of clusters below the root")

SPLIT_OPTIONS = (
    integer("max_clusters", 12, "clusters at most per node"),
    real("assign_threshold", 0.5, "relevance to a topic that joins its cluster"),
    real("coverage", 0.95, "share of a node's documents clustered", 0, 1, True),
    real("smoothing", 1000.0, "baseline pseudo-pairs added to every column", 0),
    integer("min_cluster_size", 20, "smallest cluster, in documents", quick=2),
    real("min_cluster_share", 0.01, "smallest cluster, share of the node", 0, 1),
    integer("n_refine", 2, "refinements of a topic by its cluster's histogram", low=0),
    integer("max_rejections", 50, "columns rejected per node before it stops", low=0),
)
"""How Algorithm 3.3 splits a node (steps 1-5), declared once: :func:`reconstruct_tree` takes its
defaults and checks from here, and the family's method declares the same options."""

SOLVER = choice("method", "dual", "how the pseudo-inverses are solved", METHODS)
"""The pseudo-inverses' solver of :func:`reconstruct_tree` (not an option of the family's method:
``latentzoo.fit`` takes ``method`` as the method's name)."""

PRUNING_OPTIONS = (
    integer("max_words", 4000, "vocabulary kept (most documents first)", low=2),
    integer("min_documents", 5, "documents a kept word is in at least", quick=1),
    real("max_document_share", 0.5, "share of documents a kept word is in at most", 0, 1, True,
         quick=1.0),
)  # fmt: skip
"""How :func:`reconstruct` prunes the vocabulary (:func:`prune_vocabulary`) before Algorithm 3.3."""


def _split_documents(counts, documents, split: dict) -> tuple[list, list]:
    """Steps 1-5 of Algorithm 3.3 on ``documents`` (rows of ``counts``) with the options of
    :data:`SPLIT_OPTIONS`: the clusters found, as ``(seed word, topic, member rows)``, and the
    rejected seed words."""
    rows = counts[documents]
    lengths = np.asarray(rows.sum(axis=1)).ravel()
    cooccurrence = _cooccurrence(rows)
    document_frequency = np.bincount(rows.indices, minlength=rows.shape[1])
    min_size = max(split["min_cluster_size"], int(split["min_cluster_share"] * len(documents)))
    remaining = np.ones(len(documents), dtype=bool)
    candidate = document_frequency >= min_size
    clusters, rejected = [], []
    # A rejected column changes neither P nor T(0): the distances are kept until a cluster is
    # accepted.
    distance = None
    while (
        len(clusters) < split["max_clusters"]
        and remaining.sum() > (1 - split["coverage"]) * len(documents)
        and candidate.any()
    ):
        # Step 2 again on the documents left ("iterate the entire algorithm on remaining data"):
        # a baseline kept at the node's histogram made the 20 Newsgroups clusters absorb more
        # documents of other groups.
        if distance is None:
            baseline = _histogram(rows[remaining])
            # Steps 1 and 3 with the smoothing of poorly approximated columns: column j holds
            # N_j = sum_i P_ij pairs; (P_j + m T(0)) / (N_j + m) keeps a column seen in few
            # pairs near the baseline, so a rare word's sampling noise does not win the L1
            # distance, which is sum_i |P_ij - N_j T(0)_i| / (N_j + m): one pass over P.
            mass = cooccurrence.sum(axis=0)
            denominator = mass + split["smoothing"]
            with np.errstate(invalid="ignore", divide="ignore"):
                distance = np.abs(cooccurrence - np.outer(baseline, mass)).sum(axis=0)
                distance /= denominator
            distance[~(denominator > 0)] = -np.inf
        scores = np.where(candidate, distance, -np.inf)
        word = int(np.argmax(scores))
        candidate[word] = False
        topic = (cooccurrence[:, word] + split["smoothing"] * baseline) / denominator[word]
        members = np.zeros(len(documents), dtype=bool)
        for _refinement in range(split["n_refine"] + 1):
            relevance_to_topic = _binary_relevance(topic, baseline, rows, lengths, split["method"])
            members = remaining & (relevance_to_topic > split["assign_threshold"])
            if members.sum() < min_size:
                break
            topic = _histogram(rows[members])  # step 4c
        if members.sum() < min_size:
            # A poorly approximated column: its documents are too few to be a topic. It is set
            # aside and the next column tried; the documents stay in the collection.
            rejected.append(word)
            if len(rejected) > split["max_rejections"]:
                break
            continue
        clusters.append((word, topic, documents[members]))
        distance = None  # the baseline and P change with the documents removed
        remaining &= ~members  # step 5
        cooccurrence -= _cooccurrence(rows[members])
        document_frequency -= np.bincount(rows[members].indices, minlength=rows.shape[1])
        candidate &= document_frequency >= min_size
    return clusters, rejected


def reconstruct_tree(data, **options) -> ReconstructedTree:
    """Algorithm 3.3 of seed 003: topics, their hierarchy and a clustering from unlabeled data.

    On the documents of a node (all of them at the root):

    1. the co-occurrence matrix ``P`` of the terms (:func:`_cooccurrence`), its columns normalised
       in L1;
    2. the baseline ``T(0)``: the term histogram of the node's documents not yet clustered;
    3. the column ``P_i`` farthest from ``T(0)`` in L1;
    4. relevances against ``W = (P_i, T(0))`` by the minimax pseudo-inverse (Algorithm 3.1, steps
       4a-4b); the documents with relevance to ``P_i`` above ``assign_threshold`` form a cluster,
       whose term histogram replaces ``P_i`` (step 4c) for ``n_refine`` more rounds;
    5. the cluster's documents leave the collection (their pairs leave ``P``) and steps 2-4 repeat
       until a share ``coverage`` of the documents is clustered, ``max_clusters`` are found or no
       column is left;
    7. the same on each cluster, down to ``max_depth`` levels.

    **Poorly approximated columns** (the details the paper's footnote 8 leaves to its code). A
    column is an estimate from the documents containing its word, and the L1 distance of step 3
    grows with its sampling noise, so the rarest words would win it. Three guards, in this order:
    only words in at least ``min_size`` documents are candidates (``min_size = max(min_cluster_size,
    min_cluster_share * documents)``); every column is shrunk towards the baseline by its number
    of pairs ``N_j``, ``(P_j + m T(0)) / (N_j + m)`` with ``m = smoothing`` (a Dirichlet prior of
    ``m`` pseudo-pairs), before the distance is taken; and a column whose cluster (after
    refinement) has fewer than ``min_size`` documents is rejected: it is set aside for this node,
    its documents stay, and the next column is tried (at most ``max_rejections`` times).

    Parameters
    ----------
    data : CoOccurrence or array-like of shape (n_docs, n_words)
        Word counts, vocabulary already pruned (:func:`prune_vocabulary`): ``P`` is dense.
    **options
        ``max_depth`` (:data:`MAX_DEPTH`), those of :data:`SPLIT_OPTIONS` and ``method``
        (:data:`SOLVER`), at their declared defaults when not given:
    max_depth : int, default 2
        Levels of clusters below the root (1: the first level only).
    max_clusters : int
        Clusters at most per node.
    assign_threshold : float
        Relevance to the found topic above which a document joins its cluster.
    coverage : float in (0, 1]
        The share of a node's documents clustered before step 5 stops.
    smoothing : float
        ``m``, pseudo-pairs of the baseline added to every column.
    min_cluster_size, min_cluster_share : int, float
        The smallest cluster, in documents and as a share of the node's documents.
    n_refine : int
        Refinements of a topic by its cluster's histogram (step 4c).
    max_rejections : int
        Columns rejected per node before it stops.
    method : str
        How the pseudo-inverses are solved (:func:`minimax_pseudoinverse`).

    Returns
    -------
    ReconstructedTree
        Documents not clustered at a node keep that node as their label.
    """
    counts = _as_counts(data)
    if counts.shape[0] < 2 or counts.shape[1] < 2:
        raise ValueError(f"data needs at least 2 documents and 2 words, got shape {counts.shape}")
    options = dict(options)
    max_depth = take_declared((MAX_DEPTH,), options)["max_depth"]
    split = take_declared((*SPLIT_OPTIONS, SOLVER), options, "reconstruct_tree")
    lengths = np.asarray(counts.sum(axis=1)).ravel()
    labels = np.zeros(counts.shape[0], dtype=int)
    parent, topics, seeds, depth, rejected = [-1], [_histogram(counts)], [-1], [0], []
    # Documents without a kept word stay at the root: they have no relevance.
    pending = [(0, np.flatnonzero(lengths > 0))]
    while pending:
        node, documents = pending.pop(0)
        if depth[node] >= max_depth or len(documents) < 2:
            continue
        clusters, node_rejected = _split_documents(counts, documents, split)
        rejected.extend(node_rejected)
        for word, topic, members in clusters:
            child = len(parent)
            parent.append(node)
            topics.append(topic)
            seeds.append(word)
            depth.append(depth[node] + 1)
            labels[members] = child
            pending.append((child, members))
    return ReconstructedTree(
        np.array(parent), np.column_stack(topics), np.array(seeds), labels, np.array(depth),
        np.array(rejected, dtype=int),
    )  # fmt: skip


# ------------------------------------------------------- clustering down the tree, Tables 2-4
def cluster_down(tree: ReconstructedTree, documents, threshold: float = 0.5, method="dual"):
    """Cluster documents down a reconstructed tree by relevances ``r = V d`` (Algorithm 3.1 step
    3a at every level).

    At each internal node, every child ``c`` gives ``W = (T(c), T(node))`` and its pseudo-inverse
    ``V`` (Algorithm 3.3 step 4a); a document at the node moves to the child of largest relevance
    ``(V d)_1`` if that relevance exceeds ``threshold``, else it stays at the node. Vectorised over
    the documents; one pseudo-inverse per child.

    Parameters
    ----------
    tree : ReconstructedTree
    documents : CoOccurrence or array-like of shape (n_docs, n_words)
        Word counts over the tree's vocabulary (documents without a word stay at the root).
    threshold : float

    Returns
    -------
    numpy.ndarray of shape (n_docs,)
        The node each document ends at.
    """
    counts = _as_counts(documents)
    if counts.shape[1] != tree.topics.shape[0]:
        raise ValueError(
            f"documents have {counts.shape[1]} words but the tree's topics {tree.topics.shape[0]}"
        )
    lengths = np.asarray(counts.sum(axis=1)).ravel()
    safe_lengths = np.where(lengths > 0, lengths, 1.0)
    labels = np.zeros(counts.shape[0], dtype=int)
    for node in np.argsort(tree.depth, kind="stable"):
        children = np.flatnonzero(tree.parent == node)
        here = np.flatnonzero((labels == node) & (lengths > 0))
        if children.size == 0 or here.size == 0:
            continue
        relevances = np.column_stack(
            [
                _binary_relevance(
                    tree.topics[:, child],
                    tree.topics[:, node],
                    counts[here],
                    safe_lengths[here],
                    method,
                )  # fmt: skip
                for child in children
            ]
        )
        best = np.argmax(np.nan_to_num(relevances, nan=-np.inf), axis=1)
        moves = relevances[np.arange(here.size), best] > threshold
        labels[here[moves]] = children[best[moves]]
    return labels


def _contingency(clusters, classes):
    """Cluster codes, class names and the clusters x classes count matrix."""
    clusters, classes = np.asarray(clusters), np.asarray(classes)
    if clusters.shape != classes.shape or clusters.ndim != 1:
        raise ValueError(
            f"clusters and classes must be 1-D of one length, got {clusters.shape} and {classes.shape}"
        )
    cluster_names, cluster_codes = np.unique(clusters, return_inverse=True)
    class_names, class_codes = np.unique(classes, return_inverse=True)
    table = np.zeros((cluster_names.size, class_names.size), dtype=np.int64)
    np.add.at(table, (cluster_codes, class_codes), 1)
    return cluster_names, class_names, table


def precision_recall_table(clusters, classes, unclustered=None):
    """Per-class recall and precision of a clustering as in Table 2 of seed 003.

    Each cluster is assigned to its most expressed class; a class's precision and recall are
    counted over the union of the clusters assigned to it ("all clusters", with ``NC`` their
    number), and again over only the clusters where that class is a strict majority ("majority").
    Documents in cluster ``unclustered`` (e.g. 0: left at the root) belong to no cluster.

    Returns
    -------
    pandas.DataFrame
        One row per class (``size``, ``recall``, ``precision``, ``n_clusters``,
        ``majority_recall``, ``majority_precision``, ``majority_n_clusters``) and a ``total`` row
        (over all documents and all clusters counted).

    Examples
    --------
    >>> table = precision_recall_table([1, 1, 1, 2, 2, 3], ["a", "a", "b", "b", "b", "a"])
    >>> table[["recall", "precision", "n_clusters"]].round(2).to_dict("index")["a"]
    {'recall': 1.0, 'precision': 0.75, 'n_clusters': 2}
    """
    import pandas as pd

    cluster_names, class_names, table = _contingency(clusters, classes)
    if unclustered is not None:
        table = table.copy()
        table[cluster_names == unclustered] = 0
    sizes = np.asarray(
        pd.Series(np.asarray(classes)).value_counts().reindex(class_names).to_numpy()
    )
    cluster_sizes = table.sum(axis=1)
    winner = np.argmax(table, axis=1)
    majority = table[np.arange(table.shape[0]), winner] * 2 > cluster_sizes
    columns, totals = {"size": sizes}, {"size": int(sizes.sum())}
    for prefix, kept in (("", cluster_sizes > 0), ("majority_", majority & (cluster_sizes > 0))):
        assigned = np.zeros((table.shape[0], class_names.size), dtype=bool)
        assigned[np.flatnonzero(kept), winner[kept]] = True
        correct = (table * assigned).sum(axis=0)
        claimed = (cluster_sizes[:, None] * assigned).sum(axis=0)
        columns[f"{prefix}recall"] = correct / sizes
        columns[f"{prefix}precision"] = np.divide(
            correct, claimed, out=np.zeros(class_names.size), where=claimed > 0
        )
        columns[f"{prefix}n_clusters"] = assigned.sum(axis=0)
        totals[f"{prefix}recall"] = correct.sum() / sizes.sum()
        totals[f"{prefix}precision"] = correct.sum() / max(claimed.sum(), 1)
        totals[f"{prefix}n_clusters"] = int(assigned.sum())
    frame = pd.DataFrame(columns, index=pd.Index(class_names, name="class"))
    frame.loc["total"] = totals
    return frame.astype({"size": int, "n_clusters": int, "majority_n_clusters": int})


def cluster_composition(clusters, classes, top: int = 3):
    """The major classes of each cluster with their recall in it, as in Tables 3-4 of seed 003.

    Returns
    -------
    pandas.DataFrame
        One row per cluster: ``size`` and ``major classes``, the ``top`` largest classes as
        ``"name P% (R%)"`` (P: the class's share of the cluster; R: the share of the class that is
        in the cluster).

    Examples
    --------
    >>> cluster_composition([1, 1, 2], ["a", "b", "b"], top=1)["major classes"].tolist()
    ['a 50% (100%)', 'b 100% (50%)']
    """
    import pandas as pd

    cluster_names, class_names, table = _contingency(clusters, classes)
    sizes, class_sizes = table.sum(axis=1), table.sum(axis=0)
    order = np.argsort(-table, axis=1, kind="stable")[:, :top]
    rows = []
    for cluster, best in enumerate(order):
        parts = [
            f"{class_names[c]} {table[cluster, c] / sizes[cluster]:.0%} "
            f"({table[cluster, c] / class_sizes[c]:.0%})"
            for c in best
            if table[cluster, c] > 0
        ]
        rows.append({"size": int(sizes[cluster]), "major classes": ", ".join(parts)})
    return pd.DataFrame(rows, index=pd.Index(cluster_names, name="cluster"))


def draw_hierarchy(parent, names, ax=None, max_depth: int | None = None):
    """Draw a tree given as a parent array (root ``-1``), one text box per node, top down.

    Leaves are spread evenly in depth-first order and every internal node sits above the middle of
    its children. Useful for :class:`ReconstructedTree` (``names``: each node's top words) and
    :class:`TopicHierarchy`.

    Parameters
    ----------
    parent : array-like of int
    names : sequence of str
        One label per node.
    ax : matplotlib.axes.Axes, optional
    max_depth : int, optional
        Draw only the nodes at most this deep (the top of a large hierarchy).

    Returns
    -------
    matplotlib.axes.Axes
    """
    import matplotlib.pyplot as plt

    parent = np.asarray(parent, dtype=int)
    if ax is None:
        _, ax = plt.subplots(figsize=(12, 5))
    children = {node: np.flatnonzero(parent == node).tolist() for node in range(parent.size)}
    depth = np.zeros(parent.size, dtype=int)
    position = np.zeros(parent.size)
    shown, next_leaf = [], [0.0]

    def place(node):
        shown.append(node)
        below = children[node] if max_depth is None or depth[node] < max_depth else []
        for child in below:
            depth[child] = depth[node] + 1
            place(child)
        if below:
            position[node] = np.mean(position[below])
        else:
            position[node] = next_leaf[0]
            next_leaf[0] += 1.0

    for root in np.flatnonzero(parent < 0):
        place(root)
    for node in shown:
        if parent[node] >= 0:
            ax.plot(
                [position[parent[node]], position[node]], [-depth[parent[node]], -depth[node]],
                color="0.6", zorder=1,
            )  # fmt: skip
    for node in shown:
        ax.text(
            position[node], -depth[node], str(names[node]), ha="center", va="center", fontsize=7,
            bbox={"boxstyle": "round", "facecolor": "white", "edgecolor": "0.5"}, zorder=2,
            rotation=90 if depth[node] > 1 else 0,
        )  # fmt: skip
    ax.set_xlim(-0.7, max(next_leaf[0] - 0.3, 0.7))
    ax.set_ylim(-depth[shown].max() - 0.7, 0.5)
    ax.axis("off")
    return ax


def top_words(topics, baseline, words, n: int = 4) -> list[str]:
    """Each topic's ``n`` most characteristic words: largest ``T_u - T(0)_u`` (the mutation of
    section 3.1), joined by spaces.

    Examples
    --------
    >>> top_words(np.array([[0.6, 0.1], [0.4, 0.9]]), np.array([0.5, 0.5]), ["a", "b"], n=1)
    ['a', 'b']
    """
    topics = np.asarray(topics, dtype=float)
    lift = topics - np.asarray(baseline, dtype=float)[:, None]
    best = np.argsort(-lift, axis=0, kind="stable")[:n]
    words = np.asarray(words)
    return [" ".join(words[best[:, column]]) for column in range(topics.shape[1])]


# ------------------------------------------------------------------ the family's face
def node_relevance(tree: ReconstructedTree, documents, method: str = "dual") -> np.ndarray:
    """Each document's relevances ``r = V d`` to its node's topic and to its parent's topic
    (``W = (T(node), T(parent))``, Algorithm 3.3 step 4a); NaN for documents at the root.

    Returns
    -------
    numpy.ndarray of shape (n_docs, 2)
    """
    counts = _as_counts(documents)
    lengths = np.asarray(counts.sum(axis=1)).ravel()
    out = np.full((counts.shape[0], 2), np.nan)
    for node in range(1, tree.n_nodes):
        here = np.flatnonzero((tree.labels == node) & (lengths > 0))
        if here.size == 0:
            continue
        pair = np.column_stack([tree.topics[:, node], tree.topics[:, tree.parent[node]]])
        try:
            inverse = minimax_pseudoinverse(pair, method).V
        except (ValueError, RuntimeError):
            continue
        out[here] = np.asarray(counts[here] @ inverse.T) / lengths[here, None]
    return out


def _node_names(tree: ReconstructedTree, n: int = 3) -> list[str]:
    words = tree.words if tree.words is not None else np.arange(tree.topics.shape[0]).astype(str)
    return ["root"] + top_words(tree.topics[:, 1:], tree.topics[:, 0], words, n=n)


def reconstruct(model, data, **options) -> ReconstructedTree:
    """The family's method: prune the vocabulary (:func:`prune_vocabulary`), then Algorithm 3.3
    (:func:`reconstruct_tree`). Deterministic.

    Parameters
    ----------
    model : TopicTreeMixture
    data : CoOccurrence or array-like of shape (n_docs, n_words)
    **options
        ``max_words``, ``min_documents`` and ``max_document_share`` (:data:`PRUNING_OPTIONS`, as
        :func:`prune_vocabulary`), the others those of :func:`reconstruct_tree`.

    Returns
    -------
    ReconstructedTree
        With the kept columns (``vocabulary``), their names (``words``) and ``model``.

    Examples
    --------
    >>> from latentzoo.models.topic_tree import TopicTreeMixture
    >>> data, _ = TopicTreeMixture().simulate(0, branching=3, depth=1, n_words=100, n_docs=200)
    >>> tree = reconstruct(TopicTreeMixture(), data, max_depth=1, max_document_share=1.0)
    >>> tree.parent[:4].tolist(), tree.vocabulary.size
    ([-1, 0, 0, 0], 100)
    """
    data = model.check_data(data)
    options = dict(options)
    pruning = take_declared(PRUNING_OPTIONS, options)
    vocabulary = prune_vocabulary(data, **pruning)
    if vocabulary.size < 2:
        raise ValueError(
            f"only {vocabulary.size} words are in at least min_documents="
            f"{pruning['min_documents']} and at most max_document_share="
            f"{pruning['max_document_share']} of the documents: a topic tree needs 2"
        )
    tree = reconstruct_tree(data.counts[:, vocabulary], **options)
    names = getattr(data, "col_labels", None)
    words = np.asarray(names)[vocabulary] if names is not None else vocabulary.astype(str)
    return replace(tree, words=words, vocabulary=vocabulary, model=model, documents=data.row_labels)


# ------------------------------------------------------------------ validation and the family
VALIDATION_LENGTHS = (100, 1000, 10_000)
"""Document lengths of the validation's reference level."""


def _reference_level(entry, recipe, model, data, settings, rng, progressbar=False):
    """LP relevances ``r~ = V d`` against the PyMC posterior of the relevance vector
    (:meth:`~latentzoo.models.topic_tree.TopicTreeMixture.pymc_model`, NUTS) on simulated documents of
    several lengths: ``r~`` must be near the posterior mean for the long documents, within the
    normal quantile of family-wise rate 1e-3 times ``r~``'s sampling sd (multinomial counts) and
    the mean's MCSE (:func:`~latentzoo.inference.checks.estimator_near_posterior_mean`; a point
    estimator is no posterior draw, and near the simplex's boundary ``r~`` leaves the posterior's
    support, so posterior quantiles state no rate for it), and the posterior sd and ``|r~ -
    posterior mean|`` must both shrink with the length."""
    import arviz as az
    import pymc as pm

    from latentzoo.inference.checks import estimator_near_posterior_mean
    from latentzoo.inference.compare import Comparison

    _, truth = model.simulate(rng, branching=2, depth=2, n_words=200, n_docs=1,
                              root_concentration=1.0)  # fmt: skip
    topics = truth["topics"][:, truth["path"][0]]
    inverse = minimax_pseudoinverse(topics)
    relevance_true = rng.dirichlet(np.ones(topics.shape[1]))
    checks, rows = [], []
    for length in VALIDATION_LENGTHS:
        counts = rng.multinomial(length, topics @ relevance_true)
        estimate = inverse.relevance(counts)
        with model.pymc_model(topics, counts):
            idata = pm.sample(draws=settings.pymc_draws, tune=settings.pymc_tune, chains=2,
                              cores=1, random_seed=int(rng.integers(2**31)),
                              progressbar=progressbar, compute_convergence_checks=False)  # fmt: skip
        draws = idata.posterior["relevance"].values.reshape(-1, topics.shape[1])
        mean = draws.mean(axis=0)
        words = topics @ mean  # the multinomial's word probabilities at the posterior mean
        estimator_sd = np.sqrt(
            np.maximum(inverse.V**2 @ words - (inverse.V @ words) ** 2, 0.0) / length
        )
        mcse = az.mcse(idata, var_names=["relevance"])["relevance"].values
        near = estimator_near_posterior_mean(estimate, estimator_sd, mean, mcse)
        rows.append((length, float(np.abs(estimate - mean).max()),
                     float(draws.std(axis=0).max()), near))  # fmt: skip
    gaps, spreads = np.array([r[1] for r in rows]), np.array([r[2] for r in rows])
    near = rows[-1][3]
    checks.append(Check("reference", f"LP relevance near the posterior mean at "
                        f"{VALIDATION_LENGTHS[-1]} words", near.passed,
                        f"{near.detail}; " + "; ".join(
                            f"t={t}: |r~ - E r| {g:.3f}, max sd {s:.3f}, z {n.numbers['z']:.2f}"
                            for t, g, s, n in rows),
                        {"gaps": gaps.tolist(), "sds": spreads.tolist(), **near.numbers}))  # fmt: skip
    shrinking = bool(np.all(np.diff(spreads) < 0) and gaps[-1] < gaps[0])
    checks.append(Check("reference", "posterior sd and |r~ - E r| shrink with the length",
                        shrinking, f"sd {spreads.round(4).tolist()}, gap {gaps.round(4).tolist()}",
                        {}))  # fmt: skip
    problem = (f"one simulated path of {topics.shape[1]} topics over 200 words; documents of "
               f"{', '.join(map(str, VALIDATION_LENGTHS))} words; PyMC NUTS 2 x "
               f"{settings.pymc_draws} draws each")  # fmt: skip
    return Comparison(checks=checks, problem=problem)


_NO_LIKELIHOOD = (
    "Algorithm 3.3 maximises no likelihood and samples nothing: the reference is the posterior "
    "of one document's relevances, checked at the reference level"
)


def validation_recipe():
    """Topic trees' one level: LP relevances against the PyMC posterior of the relevance vector.

    Examples
    --------
    >>> sorted(validation_recipe().checks)
    ['reference']
    """
    from latentzoo.inference.validation import ValidationRecipe

    return ValidationRecipe(
        checks={"reference": _reference_level},
        not_applicable={
            "exact": "the relevance posterior is continuous: no finite space to enumerate (the "
            "k = 2 posterior is integrated on a grid in the tests)",
            **dict.fromkeys(
                ("density", "optimality", "mode-matched", "calibrated"), _NO_LIKELIHOOD
            ),
        },
    )


FAMILY = Family(
    name="topic-tree",
    model=TopicTreeMixture,
    methods={
        "reconstruct": Method(reconstruct, (MAX_DEPTH, *SPLIT_OPTIONS, *PRUNING_OPTIONS)),
    },
    recipe=validation_recipe,
    sizes=(),
    dataset="20newsgroups",
    notebook="notebooks/topic_trees.ipynb",
    description="Sandler's topic trees (2008): Algorithm 3.3 by minimax pseudo-inverses (LP)",
)
"""Topic trees' family: Algorithm 3.3 on word counts; the result draws its hierarchy."""
