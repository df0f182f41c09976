"""Enumeration of the finite latent spaces that the exact level checks samplers against.

A family's exact check enumerates every state of its latent space on a tiny problem, scores each by
the unnormalised log posterior, and compares the frequencies of independent sampled states with it
(:func:`frequency_test`). The spaces the zoo's families declare:

- label vectors, ``K ** N`` (:func:`label_vectors`): topic and cluster assignments;
- set partitions in canonical labels, ``Bell(N)`` (:func:`set_partitions`): the mixtures;
- binary matrices in left-ordered form up to a number of columns (:func:`lof_matrices`), with the
  number of binary matrices each class stands for, so that probabilities of exchangeable column
  orders sum over the equivalence class (:func:`ibp_log_prior`, Griffiths & Ghahramani 2005): an
  Indian buffet process's ``Z``;
- rooted binary trees with labelled leaves, ``(2N - 3)!!`` (:func:`binary_trees`).

A state is one row of a 2-D integer array (a matrix of varying width is written as its width then
its padded entries, :meth:`LofMatrices.keys`), so one lookup (:func:`state_index`) maps sampled
states onto the enumerated ones whatever the space.
"""

from __future__ import annotations

import hashlib
import itertools
import math
from typing import NamedTuple

import numpy as np
from scipy import stats
from scipy.special import gammaln

from latentzoo.inference.checks import Check
from latentzoo.models._checks import check_integer, check_positive
from latentzoo.models.mixture import set_partitions

__all__ = [
    "NULL_DRAWS",
    "LofMatrices",
    "binary_trees",
    "frequency_test",
    "ibp_log_prior",
    "label_vectors",
    "left_ordered",
    "lof_matrices",
    "null_draws_for",
    "sequential_stop",
    "set_partitions",
    "state_index",
]

MAX_STATES = 2_000_000
"""The enumerators refuse spaces of more states than this."""

NULL_DRAWS = 20_000
"""Multinomial samples of the chi-square's null distribution behind a Monte Carlo p-value
(:func:`frequency_test`) at the exact levels' ``alpha = 1e-3``: the asymptotic tail's false-alarm
rate on the IBP's classes of three items, many of which expect 5-10 of 2000 draws, is 1.85e-3 at
a nominal 1e-3 (20000 simulated tests). 20 of them fall in the rejection region of a test at
1e-3, so the Monte Carlo test loses little power against the exact one."""

NULL_TAIL_SAMPLES = 20
"""Null samples a Monte Carlo test keeps in its rejection region: :func:`null_draws_for` takes at
least ``NULL_TAIL_SAMPLES / alpha`` draws for a test at level ``alpha``."""

SEQUENTIAL_STOP = 100
"""Null statistics at least ``T`` after which a sequential Monte Carlo test stops
(:func:`sequential_stop`): its p-value ``100 / L`` then has a relative standard error of about
10%."""

MAX_NULL_DRAWS = 200_000
"""Above this many null samples (tests at levels below ``NULL_TAIL_SAMPLES / MAX_NULL_DRAWS =
1e-4``, which only unit tests use) :func:`null_draws_for` answers 0: the asymptotic tail."""


def _check_size(count: int, what: str) -> None:
    if count > MAX_STATES:
        raise ValueError(
            f"{what} has {count:,} states, too many to enumerate (at most {MAX_STATES:,})"
        )


def label_vectors(n_items: int, n_labels: int) -> np.ndarray:
    """All ``n_labels ** n_items`` label vectors, one per row, in lexicographic order.

    Row ``s`` is ``s`` written in base ``n_labels`` (item 0 the most significant digit), so a label
    vector's row is ``z @ n_labels ** arange(N - 1, -1, -1)``.

    Examples
    --------
    >>> label_vectors(2, 3).tolist()
    [[0, 0], [0, 1], [0, 2], [1, 0], [1, 1], [1, 2], [2, 0], [2, 1], [2, 2]]
    """
    check_integer("n_items", n_items, low=0)
    check_integer("n_labels", n_labels)
    _check_size(n_labels**n_items, f"{n_labels} labels of {n_items} items")
    codes = np.arange(n_labels**n_items, dtype=np.int64)
    powers = n_labels ** np.arange(n_items - 1, -1, -1, dtype=np.int64)
    return (codes[:, None] // powers[None, :]) % n_labels


# ------------------------------------------------------------------- binary matrices (IBP)
def _histories(n_rows: int, zero_columns: bool) -> np.ndarray:
    """The column histories of ``n_rows`` rows as bits (row 0 the most significant), largest
    first: the order of the left-ordered form. The zero history is last, when allowed."""
    codes = np.arange(2**n_rows - 1, -1 if zero_columns else 0, -1, dtype=np.int64)
    return ((codes[:, None] >> np.arange(n_rows - 1, -1, -1)) & 1).astype(np.int8)


class LofMatrices(NamedTuple):
    """Binary matrices in left-ordered form (:func:`lof_matrices`), one class per index.

    Attributes
    ----------
    Z : ndarray (S, n_rows, max_columns) of int8
        Each class's left-ordered matrix, padded with zero columns past its width.
    width : ndarray (S,) of int64
        Its number of columns ``K``.
    multiplicity : ndarray (S,) of int64
        The number of binary matrices of its class (column orders): ``K! / prod_h K_h!`` over the
        distinct histories ``h`` of multiplicity ``K_h``.
    """

    Z: np.ndarray
    width: np.ndarray
    multiplicity: np.ndarray

    def keys(self) -> np.ndarray:
        """One row per class: its width, then its padded entries (for :func:`state_index`)."""
        return np.hstack([self.width[:, None], self.Z.reshape(len(self.width), -1)])


def lof_matrices(n_rows: int, max_columns: int, zero_columns: bool = False) -> LofMatrices:
    """Every binary matrix of ``n_rows`` rows and at most ``max_columns`` columns, up to the order
    of its columns: one per left-ordered form.

    A class of ``K`` columns is a multiset of ``K`` column histories; the left-ordered form sorts
    them by their history read as a binary number, row 0 the most significant bit, largest first
    (Griffiths & Ghahramani 2005, section 2.2). Without ``zero_columns`` the columns are non-zero
    (an IBP's ``K+`` active features); there are ``C(H + K - 1, K)`` classes of ``K`` columns with
    ``H = 2**n_rows - 1`` histories (``2**n_rows`` with zero columns), and their multiplicities sum
    to ``H**K``, the number of binary matrices.

    Examples
    --------
    >>> space = lof_matrices(2, 2)
    >>> space.width.tolist(), space.multiplicity.tolist()
    ([0, 1, 1, 1, 2, 2, 2, 2, 2, 2], [1, 1, 1, 1, 1, 2, 2, 1, 2, 1])
    >>> space.Z[5].tolist()  # histories 11 and 10
    [[1, 1], [1, 0]]
    """
    check_integer("n_rows", n_rows, low=0)
    check_integer("max_columns", max_columns, low=0)
    histories = _histories(n_rows, zero_columns)
    n_hist = len(histories)
    _check_size(
        sum(math.comb(n_hist + k - 1, k) for k in range(max_columns + 1)),
        f"binary matrices of {n_rows} rows and up to {max_columns} columns",
    )
    blocks, widths, multiplicities = [], [], []
    for k in range(max_columns + 1):
        combos = list(itertools.combinations_with_replacement(range(n_hist), k))
        chosen = np.array(combos, dtype=np.int64).reshape(len(combos), k)
        Z = np.zeros((len(chosen), n_rows, max_columns), dtype=np.int8)
        Z[:, :, :k] = histories[chosen].transpose(0, 2, 1)
        counts = np.stack([np.count_nonzero(chosen == h, axis=1) for h in range(n_hist)], axis=1)
        log_mult = gammaln(k + 1) - gammaln(counts + 1).sum(axis=1)
        blocks.append(Z)
        widths.append(np.full(len(chosen), k, dtype=np.int64))
        multiplicities.append(np.rint(np.exp(log_mult)).astype(np.int64))
    return LofMatrices(
        np.concatenate(blocks), np.concatenate(widths), np.concatenate(multiplicities)
    )


def left_ordered(Z, zero_columns: bool = False) -> np.ndarray:
    """The left-ordered form of a binary matrix: its columns sorted by history, largest first
    (zero columns dropped unless ``zero_columns``).

    Examples
    --------
    >>> left_ordered(np.array([[0, 1, 0, 1], [1, 0, 0, 1]])).tolist()
    [[1, 1, 0], [1, 0, 1]]
    """
    Z = np.asarray(Z).astype(np.int8)
    weights = 2 ** np.arange(Z.shape[0] - 1, -1, -1, dtype=np.int64)
    codes = weights @ Z.astype(np.int64)
    order = np.argsort(-codes, kind="stable")
    if not zero_columns:
        order = order[codes[order] > 0]
    return Z[:, order]


def ibp_log_prior(space: LofMatrices, alpha: float) -> np.ndarray:
    """``log P([Z])`` of every left-ordered class under the Indian buffet process.

    Griffiths & Ghahramani (2005), eq. (14): ``alpha**K / prod_h K_h! exp(-alpha H_N)
    prod_k (N - m_k)! (m_k - 1)! / N!`` with ``m_k`` the ones of column ``k``; the probability of
    the class, i.e. ``multiplicity / K!`` times that of each of its matrices. Needs the classes
    without zero columns.

    Examples
    --------
    >>> space = lof_matrices(2, 12)
    >>> round(float(np.exp(ibp_log_prior(space, 1.0)).sum()), 6)  # K+ ~ Poisson(1.5)
    1.0
    """
    n = space.Z.shape[1]
    ones = space.Z.sum(axis=1, dtype=np.int64)  # (S, max_columns), 0 on padding
    active = np.arange(space.Z.shape[2])[None, :] < space.width[:, None]
    if np.any(active & (ones == 0)):
        raise ValueError("the IBP prior needs classes without zero columns (zero_columns=False)")
    harmonic = float(np.sum(1.0 / np.arange(1, n + 1)))
    per_column = np.where(active, gammaln(n - ones + 1) + gammaln(np.maximum(ones, 1)), 0.0)
    log_mult_over_k = np.log(space.multiplicity) - gammaln(space.width + 1)
    return (
        space.width * math.log(alpha)
        + log_mult_over_k
        - alpha * harmonic
        + per_column.sum(axis=1)
        - space.width * gammaln(n + 1)
    )


# ------------------------------------------------------------------------ binary trees
def binary_trees(n_leaves: int) -> list:
    """Every rooted binary tree with leaves ``0..n_leaves-1``, as nested pairs.

    Built by inserting leaf ``n - 1`` above every node of every tree of ``n - 1`` leaves (each tree
    once); there are ``(2n - 3)!!`` of them (1, 1, 3, 15, 105 ...).

    Examples
    --------
    >>> binary_trees(3)
    [((0, 1), 2), ((0, 2), 1), (0, (1, 2))]
    """
    check_integer("n_leaves", n_leaves)
    _check_size(math.prod(range(1, 2 * n_leaves - 2, 2)), f"binary trees of {n_leaves} leaves")

    def insert(tree, leaf):
        yield (tree, leaf)
        if isinstance(tree, tuple):
            left, right = tree
            for new in insert(left, leaf):
                yield (new, right)
            for new in insert(right, leaf):
                yield (left, new)

    trees: list = [0]
    for leaf in range(1, n_leaves):
        trees = [new for tree in trees for new in insert(tree, leaf)]
    return sorted(trees, key=repr)


# -------------------------------------------------------------------------- the test
def _row_keys(states: np.ndarray) -> np.ndarray:
    states = np.ascontiguousarray(np.asarray(states, dtype=np.int64).reshape(len(states), -1))
    return states.view(np.dtype((np.void, 8 * states.shape[1]))).ravel()


def state_index(enumerated, sampled) -> np.ndarray:
    """The row of ``enumerated`` equal to each row of ``sampled``, -1 for a state not in it.

    Both are 2-D integer arrays, one state per row (a label vector, a canonical partition,
    :meth:`LofMatrices.keys`); vectorised (a sort and a binary search).

    Examples
    --------
    >>> state_index(label_vectors(2, 2), np.array([[1, 0], [0, 0], [2, 0]])).tolist()
    [2, 0, -1]
    """
    keys = _row_keys(enumerated)
    wanted = _row_keys(sampled)
    order = np.argsort(keys)
    position = np.minimum(np.searchsorted(keys[order], wanted), len(keys) - 1)
    found = order[position]
    return np.where(keys[found] == wanted, found, -1)


def frequency_test(
    log_probs,
    index,
    alpha: float = 1e-3,
    name: str = "exact",
    null_draws: int = 0,
    random_state=None,
    stop_after: int = 0,
) -> Check:
    """Chi-square test of independent sampled states against an enumerated posterior.

    Parameters
    ----------
    log_probs : (S,) array
        Unnormalised log posterior of every enumerated state.
    index : (D,) int array
        The enumerated state of each of ``D`` independent draws (:func:`state_index`); -1 for a
        state outside the enumeration, which fails the test.
    alpha : float
        Level of the test. Cells with expected count below 5 are pooled.
    name : str
    null_draws : int
        With 0, the p-value is the asymptotic chi-square tail. Above 0, it is the Monte Carlo
        p-value ``(1 + #{T* >= T}) / (1 + null_draws)`` of Pearson's statistic ``T`` among
        ``null_draws`` multinomial samples ``T*`` of the same size drawn from the enumerated
        posterior (same pooled cells): its false-alarm rate is at most ``alpha`` exactly, where
        the chi-square tail is anti-conservative when many cells expect only 5-10 draws (1.85e-3
        at a nominal 1e-3 on the IBP's 67 classes of 3 items with 2000 draws).
        :data:`NULL_DRAWS` at ``alpha = 1e-3``; :func:`null_draws_for` in general.
    random_state : None, int or numpy.random.Generator
        Generator of the null samples (``null_draws > 0``). With None it is seeded from the test's
        inputs (``log_probs``, ``index``, ``null_draws``): the null samples are then as good as
        independent of ``T`` and the same inputs give the same p-value, without taking numbers
        from a caller's stream (whose later draws would all move).
    stop_after : int
        With 0, all ``null_draws`` samples are drawn. Above 0, the sequential Monte Carlo
        p-value of Besag & Clifford (1991): the null samples are drawn in blocks and stop once
        ``stop_after`` of them reach ``T``, at the ``L``-th, with p-value ``stop_after / L``
        (else ``(1 + #{T* >= T}) / (1 + null_draws)`` as above), which is as valid. With
        ``stop_after`` above ``alpha (1 + null_draws)`` every verdict is that of the full test
        (it stops only where that passes), at a fraction of its cost where ``T`` is typical:
        about ``stop_after / p`` samples for a p-value ``p``.

    Returns
    -------
    Check
        With ``chi2``, ``dof``, ``p_value`` and ``total_variation`` in its values.

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> frequency_test(np.log([1.0, 3.0]), rng.choice(2, 4000, p=[0.25, 0.75])).passed
    True
    """
    check_integer("null_draws", null_draws, low=0)
    check_integer("stop_after", stop_after, low=0)
    log_probs = np.asarray(log_probs, dtype=float)
    index = np.asarray(index, dtype=np.int64)
    outside = index < 0
    if outside.any():
        return Check(
            "exact", name, False,
            f"{int(outside.sum())} sampled states are not among the {len(log_probs)} enumerated",
            {"chi2": np.inf, "dof": 0, "p_value": 0.0, "total_variation": 1.0},
        )  # fmt: skip
    observed = np.bincount(index, minlength=len(log_probs)).astype(float)
    probs = np.exp(log_probs - log_probs.max())
    probs /= probs.sum()
    expected = probs * len(index)
    impossible = (expected == 0) & (observed > 0)
    if impossible.any():
        state = int(np.flatnonzero(impossible)[0])
        return Check(
            "exact", name, False,
            f"sampled state {state} has posterior probability 0 ({int(observed[state])} draws)",
            {"chi2": np.inf, "dof": 0, "p_value": 0.0, "total_variation": 1.0},
        )  # fmt: skip
    # States of probability zero that were never drawn carry no information.
    keep = expected > 0
    observed, expected = observed[keep], expected[keep]
    order = np.argsort(expected)
    small = expected[order] < 5
    pooled_obs = list(observed[order][~small])
    pooled_exp = list(expected[order][~small])
    if small.any():
        pooled_obs.append(observed[order][small].sum())
        pooled_exp.append(expected[order][small].sum())
    pooled_exp = np.array(pooled_exp)
    chi2 = float(np.sum((np.array(pooled_obs) - pooled_exp) ** 2 / pooled_exp))
    dof = len(pooled_obs) - 1
    if null_draws > 0:
        if random_state is None:
            random_state = _input_seed(log_probs, index, null_draws)
        p_value, drawn = _monte_carlo_p_value(
            chi2,
            len(index),
            pooled_exp,
            null_draws,
            stop_after,
            np.random.default_rng(random_state),
        )
    else:
        p_value = float(stats.chi2.sf(chi2, dof))
    tv = 0.5 * float(np.abs(observed / len(index) - probs[keep]).sum())
    return Check(
        "exact",
        name,
        p_value > alpha,
        f"chi-square {chi2:.1f} on {dof} dof, p = {p_value:.3g}"
        + (
            f" (Monte Carlo, {drawn} of at most {null_draws} null samples)"
            if null_draws > 0
            else ""
        )
        + f" (need > {alpha}); "
        f"total variation {tv:.4f} over {len(log_probs)} states, {len(index)} draws",
        {"chi2": chi2, "dof": dof, "p_value": p_value, "total_variation": tv},
    )


def _monte_carlo_p_value(chi2, n_draws, expected, null_draws, stop_after, rng):
    """Pearson's statistics of multinomial null samples in blocks of growing size (which bound
    the memory, ``block x cells`` integers, and let a sequential test stop after a small one);
    returns ``(p_value, samples drawn)`` as :func:`frequency_test` states."""
    probs = expected / expected.sum()
    drawn = exceed = 0
    block = min(1000, null_draws) if stop_after else min(NULL_DRAWS, null_draws)
    while drawn < null_draws:
        size = min(block, null_draws - drawn)
        counts = rng.multinomial(n_draws, probs, size=size)
        reached = np.sum((counts - expected) ** 2 / expected, axis=1) >= chi2
        if stop_after and exceed + np.count_nonzero(reached) >= stop_after:
            # The stop_after-th null statistic at least T: Besag & Clifford's h / L.
            at = int(np.flatnonzero(reached)[stop_after - exceed - 1]) + 1
            return stop_after / (drawn + at), drawn + at
        exceed += int(np.count_nonzero(reached))
        drawn += size
        block = min(2 * block, NULL_DRAWS)
    return (1 + exceed) / (1 + null_draws), null_draws


def _input_seed(
    log_probs: np.ndarray, index: np.ndarray, null_draws: int
) -> np.random.SeedSequence:
    """A seed that is a function of a test's inputs (SHA-256 of their bytes)."""
    digest = hashlib.sha256()
    for part in (log_probs, index, np.array([null_draws], dtype=np.int64)):
        digest.update(np.ascontiguousarray(part).tobytes())
    return np.random.SeedSequence(np.frombuffer(digest.digest(), dtype=np.uint32))


def null_draws_for(alpha: float) -> int:
    """Null samples of a Monte Carlo chi-square at level ``alpha`` (:func:`frequency_test`):
    :data:`NULL_DRAWS`, or ``NULL_TAIL_SAMPLES / alpha`` if that is more, so that the rejection
    region holds :data:`NULL_TAIL_SAMPLES` of them (a test with fewer than ``1 / alpha`` could
    never reject); 0 (the asymptotic tail) when that exceeds :data:`MAX_NULL_DRAWS`.

    Examples
    --------
    >>> null_draws_for(1e-3), null_draws_for(1e-3 / 6), null_draws_for(1e-5)
    (20000, 120000, 0)
    """
    check_positive("alpha", alpha)
    wanted = max(NULL_DRAWS, math.ceil(round(NULL_TAIL_SAMPLES / alpha, 6)))
    return wanted if wanted <= MAX_NULL_DRAWS else 0


def sequential_stop(alpha: float, null_draws: int) -> int:
    """``stop_after`` of a sequential Monte Carlo test (:func:`frequency_test`) whose verdicts
    are those of the full test of ``null_draws`` samples at level ``alpha``: at least
    :data:`SEQUENTIAL_STOP`, and more than the ``alpha (1 + null_draws) - 1`` exceedances below
    which the full test rejects, so that it stops only where the full test passes.

    Examples
    --------
    >>> sequential_stop(1e-3, 20_000), sequential_stop(0.1, 20_000)
    (100, 2001)
    """
    check_positive("alpha", alpha)
    return max(SEQUENTIAL_STOP, math.floor(alpha * (1 + null_draws)) + 1)


DETECTION_POWER = 0.8
"""Probability at which :func:`detectable_shift` states the smallest shift a test detects."""


def detectable_shift(dof: int, n_draws: int, alpha: float = 1e-3, power: float = DETECTION_POWER):
    """The stated power of :func:`frequency_test`: the total variation ``delta`` such that any
    sampler whose state distribution is ``delta`` away from the enumerated posterior (over the
    cells the test keeps after pooling) fails it with probability at least ``power``.

    Under a shift ``d`` of the cell probabilities ``p``, Pearson's statistic of ``n`` draws is
    asymptotically noncentral chi-square with noncentrality ``n sum d_c^2 / p_c``, and by
    Cauchy-Schwarz ``sum d_c^2 / p_c >= (sum |d_c|)^2 = 4 delta^2``: the least detectable shift
    of a given total variation moves mass between two halves of the posterior in proportion to
    it. So ``delta`` solves ``P(chi2'(dof, 4 n delta^2) > chi2 quantile(1 - alpha, dof)) =
    power``; a shift concentrated on a few states is detected at smaller ``delta``.

    This is the power of the asymptotic test. The exact levels take Monte Carlo p-values
    (:data:`NULL_DRAWS`), which reject above the null's own ``1 - alpha`` quantile: the higher
    of the two where the chi-square tail is anti-conservative, so the Monte Carlo test's stated
    shift is a little larger. Measured (400000 null samples, Dirichlet posteriors of the exact
    levels' sizes): quantile 57.5 against 55.5 on 27 dof with 10000 draws, a shift 2.7% larger
    (0.033 against 0.032); 0.6-0.8% on 47 and 60 dof.

    Examples
    --------
    >>> round(detectable_shift(31, 10_000), 3)
    0.033
    >>> detectable_shift(31, 40_000) < detectable_shift(31, 10_000)
    True
    """
    from scipy.optimize import brentq

    if dof < 1:
        return math.inf
    critical = stats.chi2.isf(alpha, dof)
    noncentrality = brentq(lambda lam: stats.ncx2.sf(critical, dof, lam) - power, 1e-9, 1e6)
    return math.sqrt(noncentrality / (4.0 * n_draws))
