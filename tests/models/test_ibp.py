"""Tests of the Indian Buffet Process prior of ``latentzoo.models.ibp``.

Each probability is checked against something computed another way: exact enumeration of the
equivalence classes (whose numbers of columns must follow the ``Poisson(alpha H_N)`` law of the
culinary process), the culinary process's own frequencies (a chi-square test), the conditionals
(7.11)-(7.12) of the source thesis, the finite Beta-Bernoulli model in its ``K -> infinity``
limit, and Monte Carlo moments within their standard errors. The statistical tests use fixed seeds
so that they are reproducible; each passes for any seed with probability at least ``1 - 1e-3``.
"""

import itertools
import math

import numpy as np
import pytest
from scipy import stats

from latentzoo.models.ibp import IndianBuffetProcess, harmonic_number

P_VALUE_FLOOR = 1e-3
N_SMALL = 3
HISTORIES = np.arange(1, 2**N_SMALL)
"""The nonzero column histories of an ``N_SMALL``-row matrix (first row most significant)."""


def _column(history: int, n_items: int = N_SMALL) -> np.ndarray:
    return (history >> np.arange(n_items - 1, -1, -1)) & 1


def _matrix(histories, n_items: int = N_SMALL) -> np.ndarray:
    """The ``n_items x len(histories)`` matrix whose columns spell ``histories``."""
    if len(histories) == 0:
        return np.zeros((n_items, 0), dtype=np.int8)
    return np.stack([_column(h, n_items) for h in histories], axis=1).astype(np.int8)


def _class_key(Z: np.ndarray) -> tuple[int, ...]:
    """The multiset of nonzero column histories of ``Z``: the same for every member of ``[Z]``."""
    histories = (Z.T.astype(np.int64) @ (1 << np.arange(Z.shape[0] - 1, -1, -1))).tolist()
    return tuple(sorted((h for h in histories if h), reverse=True))


def _classes(max_columns: int):
    """Every class of ``N_SMALL``-row matrices with at most ``max_columns`` nonzero columns, as
    ``(key, number of columns)``: multisets of histories."""
    for n_columns in range(max_columns + 1):
        for key in itertools.combinations_with_replacement(HISTORIES[::-1].tolist(), n_columns):
            yield key, n_columns


# ------------------------------------------------------------------------ (1) exactness
@pytest.mark.parametrize("alpha", [pytest.param(0.6, marks=pytest.mark.slow), 1.5])
def test_class_probabilities_by_width_are_the_poisson_law_of_the_number_of_dishes(alpha):
    """Summed over the classes with ``k`` nonzero columns, ``P([Z])`` is ``Poisson(k; alpha
    H_N)`` (the culinary process's total of independent ``Poisson(alpha / i)`` new dishes), so the
    truncated sum misses exactly the Poisson tail beyond the cap."""
    ibp = IndianBuffetProcess(alpha)
    max_columns = 8
    by_width = np.zeros(max_columns + 1)
    for key, n_columns in _classes(max_columns):
        by_width[n_columns] += math.exp(ibp.log_prob(_matrix(key)))
    rate = alpha * harmonic_number(N_SMALL)
    expected = stats.poisson.pmf(np.arange(max_columns + 1), rate)
    np.testing.assert_allclose(by_width, expected, rtol=1e-10)
    tail = stats.poisson.sf(max_columns, rate)
    assert 1.0 - tail - 1e-12 <= by_width.sum() <= 1.0 + 1e-12


def test_labelled_matrix_probabilities_sum_over_every_matrix_of_each_width():
    """``exp(log_prob_matrix)`` over all ``N x k`` matrices without empty columns (each class
    counted in all its column orders) is again ``Poisson(k; alpha H_N)``."""
    ibp = IndianBuffetProcess(1.2)
    rate = ibp.alpha * harmonic_number(N_SMALL)
    for n_columns in range(5):
        total = sum(
            math.exp(ibp.log_prob_matrix(_matrix(histories)))
            for histories in itertools.product(HISTORIES.tolist(), repeat=n_columns)
        )
        assert total == pytest.approx(stats.poisson.pmf(n_columns, rate), rel=1e-10)


def test_the_finite_model_sums_to_one_over_labelled_matrices_and_over_classes():
    ibp = IndianBuffetProcess(0.8)
    n_items, n_columns = 2, 3
    labelled = classes = 0.0
    seen = set()
    for bits in itertools.product([0, 1], repeat=n_items * n_columns):
        Z = np.array(bits).reshape(n_items, n_columns)
        labelled += math.exp(ibp.finite_log_prob(Z, n_columns))
        key = _class_key(Z)
        if key not in seen:
            seen.add(key)
            classes += math.exp(ibp.finite_class_log_prob(Z, n_columns))
    assert labelled == pytest.approx(1.0, abs=1e-12)
    assert classes == pytest.approx(1.0, abs=1e-12)


# ------------------------------------------------------------------ (2) culinary frequencies
def _culinary_customer_by_customer(alpha: float, n_items: int, rng) -> np.ndarray:
    """The culinary process as section 7.3 tells it: customer ``i`` takes each dish with
    probability ``m_k / i``, then ``Poisson(alpha / i)`` new dishes (the reference that
    :meth:`IndianBuffetProcess.draw`'s loop-free construction must agree with)."""
    columns: list[list[int]] = []
    for i in range(1, n_items + 1):
        for column in columns:
            column.append(int(rng.random() < sum(column) / i))
        columns += [[0] * (i - 1) + [1] for _ in range(rng.poisson(alpha / i))]
    return np.array(columns, dtype=np.int8).reshape(-1, n_items).T


@pytest.mark.parametrize(
    "alpha, seed, sampler",
    [
        # The culinary draw at alpha = 1 is also the IOMM recipe's exact check (default tier).
        pytest.param(1.0, 20261127, "draw", marks=pytest.mark.slow),
        pytest.param(2.0, 7, "draw", marks=pytest.mark.slow),
        pytest.param(1.0, 99, "customer_by_customer", marks=pytest.mark.slow),
    ],
)
def test_culinary_frequencies_of_the_classes_match_the_class_probabilities(alpha, seed, sampler):
    """A chi-square test of 20,000 culinary-process draws' classes against ``exp(log_prob)``; the
    cells expecting fewer than 5 draws, and every class beyond the enumeration cap, are pooled."""
    ibp = IndianBuffetProcess(alpha)
    n_draws = 20_000
    rng = np.random.default_rng(seed)
    observed: dict = {}
    for _ in range(n_draws):
        if sampler == "draw":
            Z = ibp.draw(N_SMALL, rng)
        else:
            Z = _culinary_customer_by_customer(alpha, N_SMALL, rng)
        key = _class_key(Z)
        observed[key] = observed.get(key, 0) + 1
    cells, expected = [], []
    for key, _ in _classes(9):
        expected_count = n_draws * math.exp(ibp.log_prob(_matrix(key)))
        if expected_count >= 5:
            cells.append(key)
            expected.append(expected_count)
    kept = set(cells)
    counts = [observed.get(key, 0) for key in cells]
    counts.append(n_draws - sum(counts))
    expected.append(n_draws - sum(expected))
    assert expected[-1] >= 5 and len(cells) > 20
    assert sum(n for key, n in observed.items() if key not in kept) == counts[-1]
    result = stats.chisquare(counts, expected)
    assert result.pvalue > P_VALUE_FLOOR, (result, len(cells))


def test_draws_are_binary_int8_without_empty_columns_and_reproducible():
    ibp = IndianBuffetProcess(3.0)
    Z = ibp.draw(12, random_state=5)
    assert Z.dtype == np.int8 and Z.shape[0] == 12
    assert Z.any(axis=0).all()
    np.testing.assert_array_equal(Z, ibp.draw(12, random_state=5))
    # The first customer's dishes are the leftmost columns, all taken by that customer.
    first = int(Z[0].sum())
    assert (Z[0, :first] == 1).all() and (Z[0, first:] == 0).all()


# ---------------------------------------------------------------------- (3) exchangeability
def _draws_with_rng(ibp: IndianBuffetProcess, n_items: int, seed: int, n_draws: int = 20):
    """``n_draws`` prior draws, each with the generator that drew it (for the test's shuffles)."""
    rng = np.random.default_rng(seed)
    for _ in range(n_draws):
        yield ibp.draw(n_items, rng), rng


def test_log_prob_is_invariant_under_row_and_column_permutations_and_empty_columns():
    ibp = IndianBuffetProcess(2.0)
    for Z, rng in _draws_with_rng(ibp, n_items=7, seed=3):
        reference = ibp.log_prob(Z)
        permuted = Z[rng.permutation(Z.shape[0])][:, rng.permutation(Z.shape[1])]
        padded = np.insert(permuted, rng.integers(0, Z.shape[1] + 1, size=3), 0, axis=1)
        assert ibp.log_prob(permuted) == pytest.approx(reference, abs=1e-10)
        assert ibp.log_prob(padded) == pytest.approx(reference, abs=1e-10)
        assert ibp.log_prob_matrix(permuted) == pytest.approx(ibp.log_prob_matrix(Z), abs=1e-10)


def test_left_ordered_form_is_canonical_idempotent_and_sorted_by_decreasing_history():
    ibp = IndianBuffetProcess(2.0)
    for Z, rng in _draws_with_rng(ibp, n_items=6, seed=11):
        lof = ibp.left_ordered(Z)
        shuffled = np.insert(Z[:, rng.permutation(Z.shape[1])], 0, 0, axis=1)
        np.testing.assert_array_equal(ibp.left_ordered(shuffled), lof)
        np.testing.assert_array_equal(ibp.left_ordered(lof), lof)
        histories = lof.T.astype(np.int64) @ (1 << np.arange(5, -1, -1))
        assert (np.diff(histories) <= 0).all() and (histories > 0).all()
        assert ibp.log_prob(lof) == pytest.approx(ibp.log_prob(Z), abs=1e-12)


# ------------------------------------------------------------------------ (4) moments
def test_mean_number_of_dishes_is_alpha_times_the_harmonic_number():
    ibp = IndianBuffetProcess(2.5)
    n_items, n_draws = 10, 4000
    rng = np.random.default_rng(2026)
    draws = [ibp.draw(n_items, rng) for _ in range(n_draws)]
    widths = np.array([Z.shape[1] for Z in draws])
    row_sums = np.concatenate([Z.sum(axis=1) for Z in draws])
    expected = ibp.expected_dishes(n_items)
    assert expected == pytest.approx(2.5 * sum(1 / i for i in range(1, n_items + 1)))
    assert abs(widths.mean() - expected) < 4 * widths.std(ddof=1) / math.sqrt(n_draws)
    # Rows of one draw are dependent: the standard error is taken over draws of the per-draw mean.
    per_draw = row_sums.reshape(n_draws, n_items).mean(axis=1)
    assert abs(per_draw.mean() - ibp.expected_dishes_per_item) < 4 * per_draw.std(
        ddof=1
    ) / math.sqrt(n_draws)


# ------------------------------------------------------------- (5) the finite model's limit
def test_finite_class_probability_tends_to_the_ibp_as_the_columns_grow():
    ibp = IndianBuffetProcess(1.7)
    rng = np.random.default_rng(8)
    for Z in [ibp.draw(5, rng) for _ in range(5)] + [np.zeros((4, 2), dtype=np.int8)]:
        target = ibp.log_prob(Z)
        columns = [10, 100, 1_000, 10_000, 100_000, 1_000_000]
        gaps = np.array(
            [abs(ibp.finite_class_log_prob(Z, K) - target) for K in columns if K >= Z.shape[1]]
        )
        assert (np.diff(gaps) < 0).all() or gaps[-1] < 1e-12
        assert gaps[-1] < 1e-4
        # The approach is O(1/K): ten times the columns, about a tenth of the gap.
        if gaps[-2] > 1e-9:
            assert gaps[-1] / gaps[-2] == pytest.approx(0.1, rel=0.05)


def test_finite_conditionals_are_7_11_and_the_ibp_conditionals_are_7_12():
    """Flipping ``z_ik`` changes the finite model by the odds of (7.11) and the labelled IBP by the
    odds of (7.12), which :meth:`existing_column_log_probs` returns."""
    ibp = IndianBuffetProcess(1.3)
    Z = ibp.draw(6, random_state=4)
    n_items, n_used = Z.shape
    K = n_used + 4
    rate = ibp.alpha / K
    counts = Z.sum(axis=0)
    for i, k in itertools.product(range(n_items), range(n_used)):
        with_one, with_zero = Z.copy(), Z.copy()
        with_one[i, k], with_zero[i, k] = 1, 0
        m_other = int(counts[k] - Z[i, k])
        finite_odds = ibp.finite_log_prob(with_one, K) - ibp.finite_log_prob(with_zero, K)
        p_one = (m_other + rate) / (n_items + rate)
        assert finite_odds == pytest.approx(math.log(p_one / (1 - p_one)), abs=1e-10)
        if m_other > 0:
            log_one, log_zero = ibp.existing_column_log_probs([m_other], n_items)
            odds = ibp.log_prob_matrix(with_one) - ibp.log_prob_matrix(with_zero)
            assert odds == pytest.approx(float(log_one[0] - log_zero[0]), abs=1e-10)
            assert math.exp(log_one[0]) == pytest.approx(m_other / n_items)


def test_an_items_new_columns_are_poisson_with_the_rate_alpha_over_n():
    """Given the other items, the probability that item ``i`` alone uses ``j`` columns, summed over
    the ``C(K + j, j)`` places of those columns among the others' ``K``, is ``C(K + j, j) P(Z_j)``;
    its ratio to ``j = 0`` is ``(alpha / N)^j / j!``: ``Poisson(new_columns_rate)``, as Algorithm
    7.1 proposes new clusters."""
    ibp = IndianBuffetProcess(2.2)
    base = np.array([[1, 0, 1], [0, 1, 1], [1, 1, 0], [0, 0, 0]], dtype=np.int8)
    item, (n_items, n_used) = 3, base.shape
    rate = ibp.new_columns_rate(n_items)
    weights = []
    for new in range(6):
        singletons = np.zeros((n_items, new), dtype=np.int8)
        singletons[item] = 1
        Z = np.hstack([base, singletons])
        weights.append(math.comb(n_used + new, new) * math.exp(ibp.log_prob_matrix(Z)))
    weights = np.array(weights)
    np.testing.assert_allclose(
        weights / weights[0], rate ** np.arange(6) / [math.factorial(j) for j in range(6)]
    )


# ------------------------------------------------------------------------ (6) validation
@pytest.mark.parametrize("alpha", [-1.0, 0.0, float("nan"), float("inf"), "1", None, True])
def test_alpha_must_be_positive_and_is_named(alpha):
    with pytest.raises(ValueError, match=r"^alpha must be a positive finite number, got "):
        IndianBuffetProcess(alpha)


@pytest.mark.parametrize(
    "Z, message",
    [
        ([[0, 1], [2, 1]], r"Z\[1, 0\] = 2 is not binary \(0 or 1\)"),
        ([[0.0, 1.0], [1.0, 0.5]], r"Z\[1, 1\] = 0.5 is not binary \(0 or 1\)"),
        ([[0, -1]], r"Z\[0, 1\] = -1 is not binary \(0 or 1\)"),
        ([[0.0, float("nan")]], r"Z\[0, 1\] is nan"),
        ([1, 0, 1], r"Z must be a 2-D binary array \(items x columns\), got shape \(3,\)"),
        (np.zeros((0, 2)), r"Z must have at least one row"),
        ("01", r"Z must be a 2-D binary array"),
    ],
)
def test_every_function_of_z_names_the_offending_entry(Z, message):
    ibp = IndianBuffetProcess(1.0)
    for function in (
        ibp.log_prob,
        ibp.log_prob_matrix,
        ibp.left_ordered,
        lambda Z: ibp.finite_log_prob(Z, 5),
        lambda Z: ibp.finite_class_log_prob(Z, 5),
    ):
        with pytest.raises(ValueError, match=message):
            function(Z)


def test_other_arguments_are_checked_by_name():
    ibp = IndianBuffetProcess(1.0)
    with pytest.raises(ValueError, match=r"n_items must be an integer >= 1, got 0"):
        ibp.draw(0)
    with pytest.raises(ValueError, match=r"n_items must be an integer >= 1, got 2.0"):
        ibp.expected_dishes(2.0)
    with pytest.raises(ValueError, match=r"K=1 is smaller than the 2 nonzero columns of Z"):
        ibp.finite_log_prob([[1, 1, 0]], 1)
    with pytest.raises(ValueError, match=r"K must be an integer >= 1, got 0"):
        ibp.finite_class_log_prob([[0]], 0)
    with pytest.raises(ValueError, match=r"counts_without_item\[1\] = 4 is not an integer in"):
        ibp.existing_column_log_probs([1, 4], 4)
    with pytest.raises(ValueError, match=r"random_state must be None"):
        ibp.draw(3, random_state="seed")
