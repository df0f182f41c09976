"""The Indian Buffet Process (IBP): a prior over binary matrices with unboundedly many columns.

The source thesis (Heller 2007, section 2.3.2 and chapter 7, section 7.3) uses the IBP of Griffiths
and Ghahramani (2005) as the prior over the binary cluster assignments ``Z`` (items x clusters) of
the Infinite Overlapping Mixture Model. It is the ``K -> infinity`` limit of the finite
Beta-Bernoulli model with ``K`` columns,

- (7.8) ``z_ik | pi_k ~ Bernoulli(pi_k)``,
- (7.9) ``pi_k | alpha ~ Beta(alpha / K, 1)``,

whose conditionals with ``pi`` integrated out are (7.11) ``P(z_ik = 1 | z_-i,k) = (m_-i,k + alpha /
K) / (N + alpha / K)`` and, in the limit, (7.12) ``m_-i,k / N`` for every column that another item
uses, while item ``i`` takes ``Poisson(alpha / N)`` new columns. The same limit is the culinary
process of section 7.3: customer ``i`` takes each dish ``k`` already served with probability
``m_k / i`` and then ``Poisson(alpha / i)`` new dishes.

Three distributions over binary matrices are involved, and each function says which it returns:

- the probability of the *equivalence class* ``[Z]`` of every matrix with the same left-ordered form
  (:meth:`IndianBuffetProcess.log_prob`): the distribution the IBP defines, with ``K_+`` nonzero
  columns, ``K_h`` of them with history ``h`` and ``m_k`` ones in column ``k``,

  .. math::

      P([Z]) = \\frac{\\alpha^{K_+}}{\\prod_{h > 0} K_h!} e^{-\\alpha H_N}
      \\prod_{k=1}^{K_+} \\frac{(N - m_k)! (m_k - 1)!}{N!};

  the seed states the model (7.8)-(7.9), its conditionals (7.11)-(7.12) and the culinary process
  but not this closed form, which is Griffiths and Ghahramani's (2005) limit of the finite class
  probability (:meth:`IndianBuffetProcess.finite_class_log_prob`);
- the probability of one matrix with ``K_+`` columns, none empty, in the order given
  (:meth:`IndianBuffetProcess.log_prob_matrix`): the same process with its nonzero columns put in a
  uniformly random order, ``P([Z]) prod_h K_h! / K_+!``. Its Gibbs conditionals are exactly (7.12),
  so it is the target of a sampler that keeps labelled columns, as Algorithm 7.1 does;
- the finite model's probability of one labelled ``N x K`` matrix
  (:meth:`IndianBuffetProcess.finite_log_prob`).

The *history* of a column is the binary number it spells with the first row as the most
significant bit; the left-ordered form (:meth:`IndianBuffetProcess.left_ordered`) sorts the
columns by decreasing history. Each class holds exactly one left-ordered matrix, so ``P([Z])`` is
also the probability that the left-ordered form of a draw is ``left_ordered(Z)``.

Every probability is computed in log space (``gammaln``), and all-zero columns of ``Z`` are ignored
by the IBP's functions: an unused cluster is not part of the infinite matrix's nonzero part.

Examples
--------
>>> ibp = IndianBuffetProcess(alpha=2.0)
>>> Z = ibp.draw(5, random_state=0)
>>> Z.dtype, Z.shape[0]
(dtype('int8'), 5)
>>> bool(np.isclose(ibp.log_prob(Z), ibp.log_prob(ibp.left_ordered(Z))))
True
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy.special import gammaln

from latentzoo.data.checks import as_rng, check_entries
from latentzoo.models._checks import check_integer, check_positive

__all__ = ["IndianBuffetProcess", "harmonic_number"]


def harmonic_number(n: int) -> float:
    """The harmonic number ``H_n = sum_{j=1}^n 1 / j`` (``H_0 = 0``).

    ``alpha H_N`` is the IBP's expected number of nonzero columns for ``N`` items (the Poisson rates
    ``alpha / i`` of new dishes summed over the customers).

    Parameters
    ----------
    n : int
        A non-negative integer.

    Returns
    -------
    float

    Examples
    --------
    >>> harmonic_number(3)
    1.8333333333333333
    >>> harmonic_number(0)
    0.0
    """
    check_integer("n", n, low=0)
    return float(np.sum(1.0 / np.arange(1, n + 1)))


def _as_binary_matrix(Z) -> np.ndarray:
    """``Z`` as a 2-D int64 array of zeros and ones with at least one row, or a ``ValueError``
    naming the offending entry."""
    if Z is None or isinstance(Z, str | bytes):
        raise ValueError(f"Z must be a 2-D binary array (items x columns), got {Z!r}")
    Z = np.asarray(Z)
    if Z.ndim != 2:
        raise ValueError(f"Z must be a 2-D binary array (items x columns), got shape {Z.shape}")
    if Z.shape[0] == 0:
        raise ValueError("Z must have at least one row (item), got shape (0, ...)")
    check_entries(Z, "Z", binary=True)
    return Z.astype(np.int64)


def _nonzero_columns(Z: np.ndarray) -> np.ndarray:
    """The columns of ``Z`` that hold at least one 1, in their order."""
    return Z[:, Z.any(axis=0)]


def _log_column_factor(column_sums: np.ndarray, n_items: int) -> float:
    """``sum_k log[(N - m_k)! (m_k - 1)! / N!]`` over nonzero column sums ``m_k``."""
    return float(
        np.sum(gammaln(n_items - column_sums + 1) + gammaln(column_sums) - gammaln(n_items + 1))
    )


def _log_history_multiplicities(nonzero: np.ndarray) -> float:
    """``sum_h log K_h!``: the log factorials of how many nonzero columns share each history."""
    if nonzero.shape[1] == 0:
        return 0.0
    _, multiplicities = np.unique(nonzero, axis=1, return_counts=True)
    return float(np.sum(gammaln(multiplicities + 1)))


@dataclass(frozen=True)
class IndianBuffetProcess:
    """The one-parameter Indian Buffet Process ``IBP(alpha)`` over binary matrices (thesis 7.3).

    Parameters
    ----------
    alpha : float
        Positive concentration: each item takes ``Poisson(alpha)`` columns (dishes), and ``N``
        items use ``Poisson(alpha H_N)`` columns in all.

    Raises
    ------
    ValueError
        ``"alpha must be a positive finite number, got -1.0"`` for a non-positive, infinite, NaN or
        non-numeric ``alpha``.

    Notes
    -----
    Matrices ``Z`` are ``(N items, K columns)`` arrays of 0/1 (any integer, float or bool dtype);
    an entry that is not 0 or 1 is refused by name (``"Z[1, 0] = 2 is not binary (0 or 1)"``).

    Examples
    --------
    >>> ibp = IndianBuffetProcess(1.5)
    >>> ibp.alpha
    1.5
    >>> IndianBuffetProcess(0.0)
    Traceback (most recent call last):
    ...
    ValueError: alpha must be a positive finite number, got 0.0
    """

    alpha: float

    def __post_init__(self):
        check_positive("alpha", self.alpha)
        object.__setattr__(self, "alpha", float(self.alpha))

    # ------------------------------------------------------------------------- prior draws
    def draw(self, n_items: int, random_state=None) -> np.ndarray:
        """One matrix from the culinary process of section 7.3, drawn without a loop.

        Customer ``i`` (1-based) takes each dish ``k`` already served with probability
        ``m_k / i``, ``m_k`` the number of earlier customers who took it, then ``Poisson(alpha /
        i)`` new dishes. The new-dish counts do not depend on the earlier choices, so they are
        drawn first for all customers. After its first taker ``j`` a dish's sequence of choices is
        a Polya urn: ``m_k / i`` is the Beta-Bernoulli predictive of a ``Beta(0, 1)`` prior updated
        by the ``j - 1`` customers who could not take it and the one who did, so the later
        customers take it independently with a probability ``pi_k ~ Beta(1, j)``. The matrix is
        therefore one comparison of ``N x K_+`` uniforms with the dishes' ``pi_k``, the same
        distribution as the customer-by-customer process (the tests check both against
        :meth:`log_prob`).

        Parameters
        ----------
        n_items : int
            Number of customers (rows), at least 1.
        random_state : None, int, numpy.random.Generator, SeedSequence or RandomState
            Source of randomness.

        Returns
        -------
        numpy.ndarray of int8, shape (n_items, K_+)
            Columns in the order the dishes were first taken (each customer's new dishes to the
            right of the earlier ones), so no column is all zeros; this is generally not the
            left-ordered form (see :meth:`left_ordered`).

        Examples
        --------
        >>> Z = IndianBuffetProcess(3.0).draw(4, random_state=1)
        >>> Z.shape[0], bool(Z.any(axis=0).all()), set(np.unique(Z).tolist()) <= {0, 1}
        (4, True, True)
        """
        check_integer("n_items", n_items, low=1)
        rng = as_rng(random_state)
        new_dishes = rng.poisson(self.alpha / np.arange(1, n_items + 1))
        first_taker = np.repeat(np.arange(n_items), new_dishes)
        popularity = rng.beta(1.0, first_taker + 1.0)
        rows = np.arange(n_items)[:, None]
        later = rows > first_taker
        Z = (later & (rng.random((n_items, first_taker.size)) < popularity)) | (rows == first_taker)
        return Z.astype(np.int8)

    # ------------------------------------------------------------------------ canonical form
    def left_ordered(self, Z) -> np.ndarray:
        """The left-ordered form of ``Z``: its nonzero columns sorted by decreasing history.

        The history of a column is the binary number it spells with the first row as the most
        significant bit, so decreasing history is decreasing lexicographic order of the columns read
        top to bottom (compared as sequences, which needs no integer of ``N`` bits). All-zero
        columns are dropped. ``Z`` and ``left_ordered(Z)`` are in the same equivalence class, and
        two matrices are in the same class exactly when their left-ordered forms are equal.

        Parameters
        ----------
        Z : array-like of shape (N, K)
            Binary matrix.

        Returns
        -------
        numpy.ndarray of int8, shape (N, K_+)

        Examples
        --------
        >>> IndianBuffetProcess(1.0).left_ordered([[0, 0, 1, 1], [1, 0, 0, 1], [1, 0, 1, 0]])
        array([[1, 1, 0],
               [1, 0, 1],
               [0, 1, 1]], dtype=int8)
        """
        nonzero = _nonzero_columns(_as_binary_matrix(Z))
        # lexsort takes its last key as the primary one: rows reversed put row 0 first.
        ascending = np.lexsort(nonzero[::-1])
        return nonzero[:, ascending[::-1]].astype(np.int8)

    # ------------------------------------------------------------------ IBP probabilities
    def log_prob(self, Z) -> float:
        """Log probability of the equivalence class ``[Z]`` under the IBP.

        With ``N`` rows, ``K_+`` nonzero columns, ``K_h`` columns of history ``h`` and ``m_k`` ones
        in column ``k``:

        .. math::

            \\log P([Z]) = K_+ \\log\\alpha - \\sum_{h>0} \\log K_h! - \\alpha H_N
            + \\sum_{k=1}^{K_+} \\log\\frac{(N - m_k)! (m_k - 1)!}{N!}

        (Griffiths and Ghahramani 2005; the limit ``K -> infinity`` of the finite model (7.8)-(7.9),
        see :meth:`finite_class_log_prob`). It sums to one over the classes of ``N``-row matrices
        and is the probability that the left-ordered form of a culinary-process draw equals
        ``left_ordered(Z)``. All-zero columns of ``Z`` are ignored; the value is invariant under
        permutations of the rows and of the columns (exchangeability).

        Parameters
        ----------
        Z : array-like of shape (N, K)
            Binary matrix (any representative of its class).

        Returns
        -------
        float

        Examples
        --------
        One item with no dish is the class of probability ``exp(-alpha)``:

        >>> ibp = IndianBuffetProcess(2.0)
        >>> bool(np.isclose(ibp.log_prob([[0]]), -2.0))
        True
        >>> Z = [[1, 0], [1, 1]]
        >>> bool(np.isclose(ibp.log_prob(Z), ibp.log_prob([[1, 1], [0, 1]])))
        True
        """
        nonzero = _nonzero_columns(_as_binary_matrix(Z))
        return self._log_prob_ordered(nonzero) + (
            float(gammaln(nonzero.shape[1] + 1)) - _log_history_multiplicities(nonzero)
        )

    def log_prob_matrix(self, Z) -> float:
        """Log probability of ``Z`` as one matrix with its nonzero columns in the order given.

        This is the IBP with its ``K_+`` nonzero columns put in a uniformly random order, a
        distribution over ``N x K_+`` matrices without empty columns (every width ``K_+``):

        .. math::

            \\log P(Z) = \\log P([Z]) - \\log\\frac{K_+!}{\\prod_{h>0} K_h!}
            = K_+ \\log\\alpha - \\log K_+! - \\alpha H_N
            + \\sum_{k=1}^{K_+} \\log\\frac{(N - m_k)! (m_k - 1)!}{N!},

        the class probability (:meth:`log_prob`) shared among the ``K_+! / prod_h K_h!`` distinct
        column orders. Flipping ``z_ik`` in a column that another item uses changes it by the odds
        ``m_-i,k / (N - m_-i,k)``, the conditional (7.12): this is the target of a Gibbs sampler
        over labelled columns (Algorithm 7.1). ``Z``'s all-zero columns are dropped first.

        Parameters
        ----------
        Z : array-like of shape (N, K)
            Binary matrix (its all-zero columns are dropped).

        Returns
        -------
        float
            At most :meth:`log_prob`, equal when the nonzero columns share one history.

        Examples
        --------
        >>> ibp = IndianBuffetProcess(1.0)
        >>> Z = np.array([[1, 0], [1, 1], [0, 1]])
        >>> bool(np.isclose(ibp.log_prob(Z) - ibp.log_prob_matrix(Z), np.log(2)))  # 2 orders
        True
        """
        return self._log_prob_ordered(_nonzero_columns(_as_binary_matrix(Z)))

    def _log_prob_ordered(self, nonzero: np.ndarray) -> float:
        """:meth:`log_prob_matrix` of a checked matrix without empty columns."""
        n_items, n_columns = nonzero.shape
        return (
            n_columns * math.log(self.alpha)
            - float(gammaln(n_columns + 1))
            - self.alpha * harmonic_number(n_items)
            + _log_column_factor(nonzero.sum(axis=0), n_items)
        )

    # ---------------------------------------------------------- the finite Beta-Bernoulli model
    def finite_log_prob(self, Z, K: int) -> float:
        """Log probability of one labelled ``N x K`` matrix under the finite model (7.8)-(7.9).

        With ``pi_k ~ Beta(alpha / K, 1)`` integrated out the ``K`` columns are independent and

        .. math::

            \\log P(Z) = \\sum_{k=1}^{K} \\log\\frac{\\alpha}{K}
            \\frac{\\Gamma(m_k + \\alpha/K)\\, \\Gamma(N - m_k + 1)}{\\Gamma(N + 1 + \\alpha/K)},

        whose conditionals are (7.11). ``Z`` holds the nonzero columns in any order; the remaining
        ``K - K_+`` columns are all zeros, each contributing ``-sum_{j=1}^N log(1 + alpha / (K
        j))`` (the same term, written so that it stays accurate for large ``K``; its ``K ->
        infinity`` sum is the ``-alpha H_N`` of :meth:`log_prob`).

        Parameters
        ----------
        Z : array-like of shape (N, K')
            Binary matrix; its all-zero columns are dropped, the rest are the nonzero columns of
            the ``N x K`` matrix.
        K : int
            Number of columns of the finite model, at least ``Z``'s number of nonzero columns.

        Returns
        -------
        float

        Examples
        --------
        A single item: each of the ``K`` columns is a one with probability ``E[pi_k] = (alpha / K)
        / (alpha / K + 1)``:

        >>> ibp = IndianBuffetProcess(1.0)
        >>> bool(np.isclose(ibp.finite_log_prob([[1]], 2), np.log(1 / 3) + np.log(2 / 3)))
        True
        """
        nonzero, K = self._finite_columns(Z, K)
        n_items = nonzero.shape[0]
        rate = self.alpha / K
        column_sums = nonzero.sum(axis=0)
        used = np.sum(
            math.log(rate)
            + gammaln(column_sums + rate)
            + gammaln(n_items - column_sums + 1)
            - gammaln(n_items + 1 + rate)
        )
        empty = -np.sum(np.log1p(rate / np.arange(1, n_items + 1)))
        return float(used + (K - nonzero.shape[1]) * empty)

    def finite_class_log_prob(self, Z, K: int) -> float:
        """Log probability of the class ``[Z]`` under the finite model with ``K`` columns.

        The class holds ``K! / (K_0! prod_{h>0} K_h!)`` labelled matrices of equal probability
        (:meth:`finite_log_prob`), ``K_0 = K - K_+`` of their columns empty. As ``K -> infinity``
        this tends to the IBP's :meth:`log_prob`, the limit that defines the IBP (section 7.3).

        Parameters
        ----------
        Z, K
            As for :meth:`finite_log_prob`.

        Returns
        -------
        float

        Examples
        --------
        >>> ibp = IndianBuffetProcess(1.0)
        >>> Z = [[1, 0], [1, 1], [0, 1]]
        >>> gaps = [abs(ibp.finite_class_log_prob(Z, K) - ibp.log_prob(Z)) for K in (10, 1000)]
        >>> gaps[1] < gaps[0] / 50
        True
        """
        nonzero, K = self._finite_columns(Z, K)
        # log K! / K_0! as a sum of K_+ logs, exact where two large gammaln values would cancel.
        log_placements = float(np.sum(np.log(K - np.arange(nonzero.shape[1]))))
        return (
            self.finite_log_prob(nonzero, K) + log_placements - _log_history_multiplicities(nonzero)
        )

    def _finite_columns(self, Z, K) -> tuple[np.ndarray, int]:
        check_integer("K", K, low=1)
        nonzero = _nonzero_columns(_as_binary_matrix(Z))
        if nonzero.shape[1] > K:
            raise ValueError(f"K={K} is smaller than the {nonzero.shape[1]} nonzero columns of Z")
        return nonzero, int(K)

    # ---------------------------------------------------------------------- for the samplers
    def existing_column_log_probs(self, counts_without_item, n_items: int):
        """Log prior probabilities of ``z_ik = 1`` and ``z_ik = 0`` for columns used by others.

        The IBP conditional (7.12): ``P(z_ik = 1 | z_-i,k) = m_-i,k / N`` for a column ``k`` that
        ``m_-i,k > 0`` other items use. A sampler that keeps the column sums updated passes them
        without item ``i``; columns with ``m_-i,k = 0`` get ``log P(z_ik = 1) = -inf`` (item ``i``'s
        own singletons are proposed again as new columns, :meth:`new_columns_rate`).

        Parameters
        ----------
        counts_without_item : array-like of int
            ``m_-i,k``, each in ``[0, N - 1]``.
        n_items : int
            ``N``.

        Returns
        -------
        (numpy.ndarray, numpy.ndarray)
            ``log P(z_ik = 1)`` and ``log P(z_ik = 0)``, each of the shape of the counts.

        Examples
        --------
        >>> log_one, log_zero = IndianBuffetProcess(1.0).existing_column_log_probs([1, 3], 4)
        >>> np.exp(log_one), np.exp(log_zero)
        (array([0.25, 0.75]), array([0.75, 0.25]))
        """
        check_integer("n_items", n_items, low=1)
        counts = np.asarray(counts_without_item, dtype=np.float64)
        bad = np.flatnonzero((counts < 0) | (counts > n_items - 1) | (counts != np.floor(counts)))
        if bad.size:
            raise ValueError(
                f"counts_without_item[{int(bad[0])}] = {counts.ravel()[bad[0]]:g} is not an "
                f"integer in [0, {n_items - 1}]"
            )
        with np.errstate(divide="ignore"):
            return np.log(counts) - math.log(n_items), np.log(n_items - counts) - math.log(n_items)

    def new_columns_rate(self, n_items: int) -> float:
        """The Poisson rate ``alpha / N`` of an item's new columns given the other ``N - 1``.

        Under (7.12) the columns that only item ``i`` uses number ``Poisson(alpha / N)`` (section
        7.3); Algorithm 7.1 proposes that many new clusters with parameters from their prior.

        Parameters
        ----------
        n_items : int
            ``N``.

        Returns
        -------
        float
            ``alpha / N``.

        Examples
        --------
        >>> IndianBuffetProcess(2.0).new_columns_rate(8)
        0.25
        """
        check_integer("n_items", n_items, low=1)
        return self.alpha / n_items

    # --------------------------------------------------------------------------- moments
    def expected_dishes(self, n_items: int) -> float:
        """Expected number of nonzero columns ``E[K_+] = alpha H_N`` for ``N`` items.

        ``K_+`` is the sum of the customers' independent ``Poisson(alpha / i)`` new dishes, so it is
        ``Poisson(alpha H_N)``; each item's own number of dishes (its row sum) is ``Poisson(alpha)``
        whatever ``N`` (:attr:`expected_dishes_per_item`).

        Parameters
        ----------
        n_items : int
            ``N``, at least 1.

        Returns
        -------
        float
            ``alpha H_N``.

        Examples
        --------
        >>> IndianBuffetProcess(2.0).expected_dishes(3)
        3.6666666666666665
        """
        check_integer("n_items", n_items, low=1)
        return self.alpha * harmonic_number(n_items)

    @property
    def expected_dishes_per_item(self) -> float:
        """Expected number of columns of one item (a row sum, ``Poisson(alpha)``): ``alpha``.

        Examples
        --------
        >>> IndianBuffetProcess(2.5).expected_dishes_per_item
        2.5
        """
        return self.alpha
