"""Tests for latentzoo.data.cooccurrence."""

import re

import numpy as np
import pandas as pd
import pytest
import scipy.sparse as sp
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from latentzoo.data import CoOccurrence

DENSE = np.array([[2, 0, 1, 0], [0, 3, 0, 0], [0, 0, 0, 0], [1, 0, 0, 5]])


def five_sigma(n, p):
    """Half-width of a 5-sigma band for a Binomial(n, p) count."""
    return 5 * np.sqrt(n * p * (1 - p))


def rebuild(rows, cols, shape):
    out = np.zeros(shape, dtype=np.int64)
    np.add.at(out, (rows, cols), 1)
    return out


@pytest.fixture(scope="module")
def medium():
    rng = np.random.default_rng(1)
    return CoOccurrence(rng.poisson(3.0, size=(40, 60)))


# ---------------------------------------------------------------- construction


@pytest.mark.parametrize(
    "counts",
    [
        DENSE.tolist(),
        DENSE,
        DENSE.astype(float),
        sp.csr_matrix(DENSE),
        sp.coo_array(DENSE),
        sp.csc_matrix(DENSE.astype(np.float32)),
        pd.DataFrame(DENSE),
    ],
    ids=["list", "ndarray", "float", "csr", "coo_array", "csc_float32", "dataframe"],
)
def test_accepts_array_likes(counts):
    X = CoOccurrence(counts)
    assert isinstance(X.counts, sp.csr_matrix)
    assert X.counts.dtype == np.int64
    assert X.counts.has_sorted_indices
    np.testing.assert_array_equal(X.toarray(), DENSE)
    assert X.toarray().dtype == np.int64


def test_sparse_canonicalised():
    # Duplicates summed, explicit zeros removed, indices sorted.
    coo = sp.coo_matrix(
        (np.array([1, 2, 0, 4]), (np.array([0, 0, 1, 1]), np.array([2, 2, 0, 1]))), shape=(2, 3)
    )
    X = CoOccurrence(coo)
    assert X.nnz == 2
    assert (X.counts.data != 0).all()
    np.testing.assert_array_equal(X.toarray(), [[0, 0, 3], [0, 4, 0]])
    csr = sp.csr_matrix((np.array([1, 0, 2]), np.array([2, 1, 0]), np.array([0, 3])), shape=(1, 3))
    X = CoOccurrence(csr)
    np.testing.assert_array_equal(X.counts.indices, [0, 2])
    assert X.nnz == 2


def test_bool_counts_as_zero_one():
    X = CoOccurrence(np.array([[True, False], [True, True]]))
    np.testing.assert_array_equal(X.toarray(), [[1, 0], [1, 1]])


def test_properties():
    X = CoOccurrence(DENSE)
    assert X.shape == (4, 4)
    assert (X.n_rows, X.n_cols) == (4, 4)
    assert X.nnz == 5
    assert X.total == 12 and isinstance(X.total, int)
    np.testing.assert_array_equal(X.row_totals, [3, 3, 0, 6])
    np.testing.assert_array_equal(X.col_totals, [3, 3, 1, 5])
    assert X.row_totals.dtype == np.int64 and X.col_totals.dtype == np.int64
    np.testing.assert_array_equal(X.row_labels, ["0", "1", "2", "3"])
    assert X.col_labels.dtype.kind == "U"
    assert repr(X) == "CoOccurrence(4 x 4, 12 observations, 5 non-zeros)"


def test_labels_given_and_from_dataframe():
    X = CoOccurrence([[1, 2]], row_labels=["doc"], col_labels=["a", "b"])
    np.testing.assert_array_equal(X.col_labels, ["a", "b"])
    frame = pd.DataFrame([[1, 0], [0, 2]], index=["r1", "r2"], columns=["c1", "c2"])
    Y = CoOccurrence(frame)
    np.testing.assert_array_equal(Y.row_labels, ["r1", "r2"])
    np.testing.assert_array_equal(Y.col_labels, ["c1", "c2"])
    Z = CoOccurrence(frame, col_labels=["x", "y"])
    np.testing.assert_array_equal(Z.col_labels, ["x", "y"])


def test_zero_rows_and_columns_allowed():
    X = CoOccurrence([[0, 0, 0], [0, 1, 0]])
    np.testing.assert_array_equal(X.row_totals, [0, 1])
    np.testing.assert_array_equal(X.col_totals, [0, 1, 0])


@pytest.mark.parametrize(
    ("counts", "message"),
    [
        (np.where(np.arange(40).reshape(4, 10) == 37, np.nan, 1.0), r"counts\[3, 7\] is NaN"),
        ([[1.0, 1.0, np.inf]], r"counts\[0, 2\] is inf"),
        ([[1, 1], [1, -2]], r"counts\[1, 1\] = -2 is negative"),
        ([[1.0], [1.0], [1.5]], r"counts\[2, 0\] = 1.5 is not an integer"),
        (np.zeros((0, 5)), r"counts is empty \(shape \(0, 5\)\)"),
        ([[0, 0], [0, 0]], r"counts has no observations \(all entries are zero\)"),
        ([1, 2, 3, 4], r"counts must be 2-D, got shape \(4,\)"),
        (np.ones((2, 2, 2)), r"counts must be 2-D, got shape \(2, 2, 2\)"),
        ([["a", "b"]], r"counts must be numeric"),
        (np.array([[1, None]], dtype=object), r"counts must be numeric"),
        ([[1, 2], [3]], r"counts could not be converted"),
        ([[1j]], r"counts must be numeric"),
        ([[2.0**64]], r"counts\[0, 0\] = .* exceeds the int64 range"),
    ],
    ids=[
        "nan",
        "inf",
        "negative",
        "non-integer",
        "empty",
        "all-zero",
        "1-d",
        "3-d",
        "strings",
        "object",
        "ragged",
        "complex",
        "overflow",
    ],
)
def test_validation_messages(counts, message):
    with pytest.raises(ValueError, match=message):
        CoOccurrence(counts)


def test_validation_on_sparse_data_reports_matrix_position():
    nan = sp.csr_matrix(
        (np.array([1.0, np.nan]), (np.array([0, 3]), np.array([1, 7]))), shape=(5, 9)
    )
    with pytest.raises(ValueError, match=r"counts\[3, 7\] is NaN"):
        CoOccurrence(nan)
    # Several offenders stored out of row-major order: the first in row-major order is named.
    coo = sp.coo_matrix(
        (np.array([-1.0, -3.0, 2.0]), (np.array([4, 1, 0]), np.array([0, 2, 0]))), shape=(5, 3)
    )
    with pytest.raises(ValueError, match=r"counts\[1, 2\] = -3 is negative"):
        CoOccurrence(coo)
    with pytest.raises(ValueError, match=r"counts\[0, 1\] = 0.5 is not an integer"):
        CoOccurrence(sp.csr_matrix(np.array([[1.0, 0.5]])))
    with pytest.raises(ValueError, match=r"counts\[0, 0\] is inf"):
        CoOccurrence(sp.csr_matrix(np.array([[np.inf, 1.0]])))


def test_nullable_dataframe_na_reported_as_nan():
    frame = pd.DataFrame({"a": pd.array([1, None], dtype="Int64"), "b": [1, 2]})
    with pytest.raises(ValueError, match=r"counts\[1, 0\] is NaN"):
        CoOccurrence(frame)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"row_labels": ["a", "b", "c"]}, r"row_labels has 3 entries but counts has 4 rows"),
        ({"col_labels": ["a"]}, r"col_labels has 1 entries but counts has 4 columns"),
        ({"row_labels": [["a"]] * 4}, r"row_labels must be 1-D"),
    ],
)
def test_label_validation(kwargs, message):
    with pytest.raises(ValueError, match=message):
        CoOccurrence(DENSE, **kwargs)


# ---------------------------------------------------------------- tokens


def test_to_tokens_round_trip(medium):
    rows, cols = medium.to_tokens()
    assert rows.dtype == np.int64 and cols.dtype == np.int64
    assert rows.shape == (medium.total,)
    assert (np.diff(rows) >= 0).all()
    np.testing.assert_array_equal(rebuild(rows, cols, medium.shape), medium.toarray())


# ---------------------------------------------------------------- resampling


def test_split_sums_back_and_keeps_metadata(medium):
    train, test = medium.split(0.25, random_state=0)
    np.testing.assert_array_equal(train.toarray() + test.toarray(), medium.toarray())
    for part in (train, test):
        assert part.shape == medium.shape
        np.testing.assert_array_equal(part.row_labels, medium.row_labels)
        np.testing.assert_array_equal(part.col_labels, medium.col_labels)
        assert part.counts.dtype == np.int64
        assert (part.counts.data > 0).all()


def test_split_fraction_within_binomial_band(medium):
    p = 0.2
    _, test = medium.split(p, random_state=123)
    assert abs(test.total - p * medium.total) < five_sigma(medium.total, p)


def test_split_determinism(medium):
    a = medium.split(0.3, random_state=7)
    b = medium.split(0.3, random_state=7)
    c = medium.split(0.3, random_state=8)
    assert a[0] == b[0] and a[1] == b[1]
    assert a[1] != c[1]
    g1, g2 = np.random.default_rng(5), np.random.default_rng(5)
    assert medium.split(0.3, random_state=g1)[1] == medium.split(0.3, random_state=g2)[1]


@pytest.mark.parametrize("fraction", [0, 1, -0.1, 1.5, np.nan, "0.5", True])
def test_split_validates_fraction(medium, fraction):
    with pytest.raises(ValueError, match=r"test_fraction must be a number in the open interval"):
        medium.split(fraction)


def test_kfold_partitions_exactly(medium):
    k = 4
    folds = medium.kfold(k, random_state=3)
    assert len(folds) == k
    tests = np.stack([test.toarray() for _, test in folds])
    np.testing.assert_array_equal(tests.sum(axis=0), medium.toarray())
    for train, test in folds:
        np.testing.assert_array_equal(train.toarray() + test.toarray(), medium.toarray())
        assert abs(test.total - medium.total / k) < five_sigma(medium.total, 1 / k)
        np.testing.assert_array_equal(test.row_labels, medium.row_labels)


def test_kfold_determinism(medium):
    a = medium.kfold(3, random_state=11)
    b = medium.kfold(3, random_state=11)
    c = medium.kfold(3, random_state=12)
    assert all(x[1] == y[1] for x, y in zip(a, b, strict=True))
    assert any(x[1] != y[1] for x, y in zip(a, c, strict=True))


@pytest.mark.parametrize("k", [1, 0, -3, 2.5, "3", True])
def test_kfold_validates_k(medium, k):
    with pytest.raises(ValueError, match=r"k must be an integer >= 2"):
        medium.kfold(k)


def test_kfold_accepts_numpy_integer(medium):
    assert len(medium.kfold(np.int64(2), random_state=0)) == 2


# ---------------------------------------------------------------- selection


def test_subset_keeps_labels():
    X = CoOccurrence(DENSE, row_labels=list("abcd"), col_labels=list("wxyz"))
    Y = X.subset(rows=[3, 0], cols=np.array([True, False, False, True]))
    np.testing.assert_array_equal(Y.row_labels, ["d", "a"])
    np.testing.assert_array_equal(Y.col_labels, ["w", "z"])
    np.testing.assert_array_equal(Y.toarray(), [[1, 5], [2, 0]])
    Z = X.subset(rows=[-1])
    np.testing.assert_array_equal(Z.row_labels, ["d"])
    assert Z.shape == (1, 4)
    assert X.subset() == X
    # A selection without observations is allowed (e.g. an empty document).
    assert X.subset(rows=[2]).total == 0


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"rows": [4]}, r"rows\[0\] = 4 is out of range for size 4"),
        ({"cols": [True, False]}, r"cols is a boolean mask of length 2, expected 4"),
        ({"rows": []}, r"subset is empty"),
        ({"cols": [0.5]}, r"cols must hold integer indices"),
    ],
)
def test_subset_validation(kwargs, message):
    with pytest.raises(ValueError, match=message):
        CoOccurrence(DENSE).subset(**kwargs)


def test_top_columns_stable_ties():
    X = CoOccurrence([[1, 5, 2, 5, 0], [0, 0, 1, 0, 0]])
    np.testing.assert_array_equal(X.top_columns(3), [1, 3, 2])
    np.testing.assert_array_equal(X.top_columns(10), [1, 3, 2, 0, 4])
    assert X.top_columns(0).size == 0
    with pytest.raises(ValueError, match=r"n must be a non-negative integer"):
        X.top_columns(-1)


# ---------------------------------------------------------------- constructors


def test_from_pairs_sums_duplicates():
    X = CoOccurrence.from_pairs([0, 1, 0, 0], [2, 0, 2, 1])
    np.testing.assert_array_equal(X.toarray(), [[0, 1, 2], [1, 0, 0]])
    Y = CoOccurrence.from_pairs([0, 0], [1, 1], shape=(3, 4), counts=[2, 5])
    assert Y.shape == (3, 4)
    assert Y.toarray()[0, 1] == 7


def test_from_pairs_labels():
    X = CoOccurrence.from_pairs(["red", "big", "red"], ["car", "car", "car"])
    np.testing.assert_array_equal(X.row_labels, ["big", "red"])
    np.testing.assert_array_equal(X.col_labels, ["car"])
    np.testing.assert_array_equal(X.toarray(), [[1], [2]])
    # Given labels fix the order; integer columns may be mixed with label rows.
    Y = CoOccurrence.from_pairs(["b", "a"], [0, 2], row_labels=["b", "a", "c"])
    np.testing.assert_array_equal(Y.row_labels, ["b", "a", "c"])
    np.testing.assert_array_equal(Y.toarray(), [[1, 0, 0], [0, 0, 1], [0, 0, 0]])


@pytest.mark.parametrize(
    ("args", "kwargs", "message"),
    [
        (([0, 1], [0]), {}, r"x and y must have the same length, got 2 and 1"),
        (([0, -1], [0, 0]), {}, r"x contains negative index -1 \(at position 1\)"),
        (([0, 1], [0, 3]), {"shape": (2, 3)}, r"y contains index 3 \(at position 1\)"),
        (([0, 1], [0, 1]), {"shape": (1, 3)}, r"x contains index 1 .* shape has 1 rows"),
        (
            (["a"], [0]),
            {"row_labels": ["b"]},
            r"x contains 'a' \(at position 0\) which is not among",
        ),
        (([0, 1], [0, 1]), {"counts": [1]}, r"counts has shape \(1,\)"),
        (([0, 1], [0, 1]), {"counts": [1, -1]}, r"counts\[1, 1\] = -1 is negative"),
        (([0.5], [0]), {}, r"x must hold integer indices or labels"),
    ],
)
def test_from_pairs_validation(args, kwargs, message):
    with pytest.raises(ValueError, match=message):
        CoOccurrence.from_pairs(*args, **kwargs)


def test_from_documents_counts_by_hand():
    docs = [["apple", "pear", "apple"], ["pear", "fig"], []]
    X = CoOccurrence.from_documents(docs)
    np.testing.assert_array_equal(X.col_labels, ["apple", "fig", "pear"])
    np.testing.assert_array_equal(X.row_labels, ["doc0", "doc1", "doc2"])
    np.testing.assert_array_equal(X.toarray(), [[2, 0, 1], [0, 1, 1], [0, 0, 0]])


def test_from_documents_vocabulary_and_dict():
    docs = {"first": ["apple", "kiwi", "apple"], "second": ["pear", "fig", "pear"]}
    X = CoOccurrence.from_documents(docs, vocabulary=["pear", "apple", "plum"])
    np.testing.assert_array_equal(X.row_labels, ["first", "second"])
    np.testing.assert_array_equal(X.col_labels, ["pear", "apple", "plum"])
    np.testing.assert_array_equal(X.toarray(), [[0, 2, 0], [2, 0, 0]])


@pytest.mark.parametrize(
    ("documents", "vocabulary", "message"),
    [
        (["just a string"], None, r"documents\[0\] is a string"),
        ([["a"]], ["a", "a"], r"vocabulary contains duplicate entries"),
        ([["a"]], ["b"], r"counts has no observations"),
        ([], None, r"documents is empty"),
    ],
)
def test_from_documents_validation(documents, vocabulary, message):
    with pytest.raises(ValueError, match=message):
        CoOccurrence.from_documents(documents, vocabulary=vocabulary)


# ---------------------------------------------------------------- equality and persistence


def test_equality():
    X = CoOccurrence(DENSE)
    assert X == CoOccurrence(sp.csr_matrix(DENSE))
    assert X != CoOccurrence(DENSE, col_labels=list("abcd"))
    assert X != CoOccurrence(DENSE + np.eye(4, dtype=int))
    assert X != CoOccurrence(DENSE[:, :3])
    assert X != "not a CoOccurrence"


def test_npz_round_trip(tmp_path, medium):
    X = CoOccurrence(DENSE, row_labels=["α", "b", "c", "d"], col_labels=list("wxyz"))
    path = tmp_path / "x.npz"
    X.to_npz(path)
    with np.load(path, allow_pickle=False) as archive:
        assert archive["row_labels"].dtype.kind == "U"
    Y = CoOccurrence.from_npz(path)
    assert Y == X
    assert Y.counts.dtype == np.int64
    medium.to_npz(tmp_path / "m.npz")
    assert CoOccurrence.from_npz(tmp_path / "m.npz") == medium


def test_from_npz_rejects_foreign_file(tmp_path):
    path = tmp_path / "other.npz"
    np.savez(path, a=np.arange(3))
    with pytest.raises(ValueError, match=r"is not a CoOccurrence file"):
        CoOccurrence.from_npz(path)


def _stored_arrays(tmp_path):
    CoOccurrence([[1, 2, 0], [0, 3, 4]]).to_npz(tmp_path / "good.npz")
    with np.load(tmp_path / "good.npz", allow_pickle=False) as archive:
        return dict(archive)


def _load_error(path):
    with pytest.raises(ValueError) as info:
        CoOccurrence.from_npz(path)
    message = str(info.value)
    assert str(path) in message
    assert "pickle" not in message.replace(str(path), "").lower()
    return message


@pytest.mark.parametrize("damage", ["text", "empty", "truncated", "zeroed"])
def test_from_npz_names_a_damaged_file_without_suggesting_pickles(tmp_path, damage):
    _stored_arrays(tmp_path)
    good = (tmp_path / "good.npz").read_bytes()
    content = {
        "text": b"counts,1,2\n",
        "empty": b"",
        "truncated": good[: len(good) // 2],
        "zeroed": good[:60] + bytes(200) + good[260:],
    }[damage]
    path = tmp_path / "damaged.npz"
    path.write_bytes(content)
    message = _load_error(path)
    assert "damaged" in message


def test_from_npz_names_a_single_array_file(tmp_path):
    path = tmp_path / "array.npz"
    with open(path, "wb") as handle:
        np.save(handle, np.arange(3))
    assert "single array (.npy)" in _load_error(path)


def test_from_npz_never_unpickles_an_object_array(tmp_path):
    arrays = _stored_arrays(tmp_path)
    arrays["row_labels"] = np.array([{"a": 1}, None], dtype=object)
    np.savez(tmp_path / "objects.npz", allow_pickle=True, **arrays)
    message = _load_error(tmp_path / "objects.npz")
    assert "'row_labels' cannot be read" in message and "Python objects" in message


@pytest.mark.parametrize(
    "key, value, words",
    [
        (
            "indices",
            [0, 7, 1, 2],
            "stored entry 1 (row 0) has column index 7, outside the 3 columns",
        ),
        ("indices", [0, -1, 1, 2], "column index -1, outside the 3 columns"),
        ("indices", [0, 1, 1], "indices has 3 entries but data has 4"),
        ("indices", [0.0, 1.0, 1.0, 2.0], "indices must hold integers"),
        ("indptr", [0, 2], "indptr has 2 entries, expected 3"),
        ("indptr", [0, 3, 2], "indptr decreases at row 1 (3 -> 2)"),
        ("indptr", [0, 2, 3], "indptr must run from 0 to the 4 stored entries, got 0 to 3"),
        ("shape", [2, -3], "shape must hold two non-negative integers, got [2, -3]"),
        ("shape", [2], "shape must hold two non-negative integers"),
        ("data", ["a", "b", "c", "d"], "data must hold numbers"),
        ("data", [1, -2, 3, 4], "counts[0, 1] = -2 is negative"),
        ("data", [[1, 2, 3, 4]], "data must be 1-D"),
        ("row_labels", ["a"], "row_labels has 1 entries but counts has 2 rows"),
        ("format", "latentzoo.Other/9", "unsupported CoOccurrence file format"),
    ],
)
def test_from_npz_explains_an_inconsistent_file_in_plain_words(tmp_path, key, value, words):
    arrays = _stored_arrays(tmp_path)
    arrays[key] = np.array(value)
    np.savez(tmp_path / "bad.npz", **arrays)
    assert words in _load_error(tmp_path / "bad.npz")


def test_from_npz_keeps_file_not_found(tmp_path):
    with pytest.raises(FileNotFoundError):
        CoOccurrence.from_npz(tmp_path / "missing.npz")


# ---------------------------------------------------------------- int64 range of the totals
BIG = 2**62
INT64_MAX = 2**63 - 1


@pytest.mark.parametrize(
    "counts, message",
    [
        (np.full((2, 2), BIG), f"counts row 0 sums to {2**63} observations, which exceeds the "),
        ([[BIG, 0], [BIG, 1]], f"counts column 0 sums to {2**63} observations"),
        (np.full((2, 2), float(BIG)), f"counts row 0 sums to {2**63} observations"),
        (
            [[BIG + 2**61, 0], [0, BIG + 2**61]],
            f"counts sum to {2**64 - 2**62} observations in total, which exceeds the int64 range",
        ),
        (np.full((3, 1), 2**62 - 1, dtype=np.uint64), "counts column 0 sums to"),
    ],
)
def test_totals_beyond_int64_are_refused_at_construction(counts, message):
    with pytest.raises(ValueError, match=re.escape(message)) as info:
        CoOccurrence(counts)
    assert str(info.value).endswith(f"exceeds the int64 range (at most {INT64_MAX})")


def test_duplicates_summing_beyond_int64_are_refused():
    pairs = sp.coo_matrix(
        (np.array([BIG, BIG]), (np.array([0, 0]), np.array([1, 1]))), shape=(1, 2)
    )
    with pytest.raises(ValueError, match="counts row 0 sums to 9223372036854775808"):
        CoOccurrence(pairs)
    with pytest.raises(ValueError, match="counts row 0 sums to 9223372036854775808"):
        CoOccurrence.from_pairs([0, 0], [1, 1], counts=[BIG, BIG])


def test_totals_up_to_int64_max_are_kept_exactly():
    X = CoOccurrence([[BIG, BIG - 1], [0, 0]])
    assert X.total == INT64_MAX
    assert X.row_totals.tolist() == [INT64_MAX, 0]
    assert X.col_totals.tolist() == [BIG, BIG - 1]
    single = CoOccurrence(sp.csr_matrix(np.array([[INT64_MAX]], dtype=np.int64)))
    assert single.total == INT64_MAX


# ---------------------------------------------------------------- properties


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.filter_too_much])
@given(
    counts=hnp.arrays(
        np.int64,
        st.tuples(st.integers(1, 6), st.integers(1, 6)),
        elements=st.integers(0, 7),
    ),
    seed=st.integers(0, 2**32 - 1),
)
def test_property_split_and_tokens(counts, seed):
    assume(counts.sum() > 0)
    X = CoOccurrence(counts)
    train, test = X.split(0.4, random_state=seed)
    np.testing.assert_array_equal(train.toarray() + test.toarray(), counts)
    rows, cols = X.to_tokens()
    assert rows.shape[0] == X.total == counts.sum()
    np.testing.assert_array_equal(rebuild(rows, cols, X.shape), counts)
