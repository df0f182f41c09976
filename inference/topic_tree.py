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

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp
from scipy.optimize import linprog

from latentzoo.models.topic_tree import check_topic_matrix

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
