"""Tests for latentzoo.data.Features: validation, kinds, sparse storage, split and subset."""

import numpy as np
import pandas as pd
import pytest
import scipy.sparse as sp

from latentzoo.data import Features

BINARY = np.array([[0, 1, 1], [1, 0, 0], [1, 1, 0], [0, 0, 1]])


# ---------------------------------------------------------------- construction and kinds


def test_kind_inferred():
    assert Features(BINARY).kind == "binary"
    assert Features(BINARY.astype(bool)).kind == "binary"
    assert Features([[0, 2], [3, 0]]).kind == "counts"
    assert Features([[0.0, 2.0], [3.0, 0.0]]).kind == "counts"
    assert Features([[0.5, 2.0]]).kind == "real"
    assert Features([[-1, 2]]).kind == "real"
    assert Features(np.zeros((2, 2))).kind == "binary"


def test_kind_given_is_kept():
    assert Features(BINARY, kind="counts").kind == "counts"
    assert Features(BINARY, kind="real").kind == "real"
    assert Features([[0, 5]], kind="real").kind == "real"


def test_properties_and_defaults():
    data = Features(BINARY)
    assert data.shape == (4, 3)
    assert (data.n_items, data.n_features) == (4, 3)
    assert data.labels is None
    assert data.item_names.tolist() == ["0", "1", "2", "3"]
    assert data.feature_names.tolist() == ["0", "1", "2"]
    assert data.X.dtype == np.float64
    np.testing.assert_array_equal(data.X, BINARY)
    assert data.sparse is None and not data.is_sparse
    assert data.nnz == 6
    assert data.item_dim == "item"


def test_arrays_are_read_only_and_independent_of_input():
    source = BINARY.astype(float)
    data = Features(source, labels=[0, 1, 0, 1])
    source[0, 0] = 1.0
    assert data.X[0, 0] == 0.0
    for array in (data.X, data.labels, data.item_names, data.feature_names):
        with pytest.raises(ValueError, match="read-only"):
            array[0] = array[1]


def test_names_and_labels():
    data = Features(
        BINARY, labels=["a", "b", "a", "b"], feature_names=["x", "y", "z"], item_names=list("pqrs")
    )
    assert data.labels.tolist() == ["a", "b", "a", "b"]
    assert data.feature_names.tolist() == ["x", "y", "z"]
    assert data.item_names.tolist() == list("pqrs")
    assert repr(data) == "Features(4 x 3, binary, dense, 2 classes)"


def test_dataframe_gives_names():
    frame = pd.DataFrame(BINARY, index=list("abcd"), columns=["u", "v", "w"])
    data = Features(frame)
    assert data.item_names.tolist() == list("abcd")
    assert data.feature_names.tolist() == ["u", "v", "w"]
    assert Features(frame, item_names=list("pqrs")).item_names.tolist() == list("pqrs")


def test_nullable_dataframe_na_is_reported():
    frame = pd.DataFrame({"a": pd.array([1, None], dtype="Int64"), "b": [1, 2]})
    with pytest.raises(ValueError, match=r"^X\[1, 0\] is nan$"):
        Features(frame)


def test_from_features_keeps_names_and_labels():
    data = Features(BINARY, labels=[0, 1, 0, 1], item_names=list("abcd"))
    again = Features(data)
    assert again == data
    assert Features(data, kind="real").kind == "real"
    # The declared kind travels along unless another is given (and then it is checked).
    assert Features(Features(BINARY, kind="counts")).kind == "counts"
    with pytest.raises(ValueError, match=r"^X\[0, 0\] = 2.0 is not binary"):
        Features(Features([[2, 0]]), kind="binary")
    sparse = Features(sp.csr_matrix(BINARY))
    assert Features(sparse).is_sparse


# ---------------------------------------------------------------- sparse storage


def test_sparse_kept_sparse_and_densified_on_access():
    matrix = sp.coo_matrix(
        (np.array([1, 1, 0, 1]), (np.array([0, 2, 1, 0]), np.array([1, 0, 2, 1]))), shape=(3, 4)
    )
    data = Features(matrix)
    assert data.is_sparse
    assert isinstance(data.sparse, sp.csr_matrix)
    assert data.sparse.dtype == np.float64
    # Duplicates summed, explicit zeros dropped, indices sorted.
    assert data.sparse.nnz == 2 and data.sparse.has_sorted_indices
    assert data.kind == "counts"  # the duplicate (0, 1) sums to 2
    np.testing.assert_array_equal(data.X, [[0, 2, 0, 0], [0, 0, 0, 0], [1, 0, 0, 0]])
    assert data.X is data.X  # densified once
    assert repr(data) == "Features(3 x 4, counts, sparse)"


def test_sparse_array_input():
    data = Features(sp.csr_array(BINARY))
    assert data.is_sparse and data.kind == "binary"
    assert Features(BINARY) == data


def test_sparse_validation_names_matrix_position():
    values = np.array([1.0, np.nan, -2.0])
    matrix = sp.csr_matrix((values, (np.array([0, 3, 1]), np.array([1, 7, 2]))), shape=(5, 9))
    with pytest.raises(ValueError, match=r"^X\[3, 7\] is nan$"):
        Features(matrix)
    with pytest.raises(ValueError, match=r"^X\[1, 2\] = -2.0 is negative$"):
        Features(sp.csr_matrix(np.array([[0.0, 1.0, 0.0], [0.0, 0.0, -2.0]])), kind="counts")
    with pytest.raises(ValueError, match=r"^X\[0, 1\] = 0.5 is not binary \(0 or 1\)$"):
        Features(sp.csr_matrix(np.array([[0.0, 0.5]])), kind="binary")


# ---------------------------------------------------------------- validation


_INVALID_X = {
    "nan": (np.where(np.arange(40).reshape(4, 10) == 35, np.nan, 1.0), {}, r"^X\[3, 5\] is nan$"),
    "inf": ([[1.0, np.inf]], {}, r"^X\[0, 1\] is inf$"),
    "minus-inf-real": ([[1.0, -np.inf]], {"kind": "real"}, r"^X\[0, 1\] is -inf$"),
    "1-d": ([1, 0, 1], {}, r"^X must be 2-D, got shape \(3,\)$"),
    "3-d": (np.ones((2, 2, 2)), {}, r"^X must be 2-D, got shape \(2, 2, 2\)$"),
    "empty-rows": (np.zeros((0, 3)), {}, r"^X is empty \(shape \(0, 3\)\)$"),
    "empty-cols": ([[]], {}, r"^X is empty \(shape \(1, 0\)\)$"),
    "empty-sparse": (sp.csr_matrix((0, 4)), {}, r"^X is empty \(shape \(0, 4\)\)$"),
    "strings": ([["a", "b"]], {}, r"^X must be numeric \(bool, integer or float\), got dtype <U1$"),
    "complex": ([[1j]], {}, r"^X must be numeric"),
    "ragged": ([[1, 2], [3]], {}, r"^X could not be converted to a 2-D array"),
    "binary-half": (
        [[0.0, 1.0], [0.5, 1.0]],
        {"kind": "binary"},
        r"^X\[1, 0\] = 0.5 is not binary \(0 or 1\)$",
    ),
    "binary-two": ([[0, 2]], {"kind": "binary"}, r"^X\[0, 1\] = 2 is not binary \(0 or 1\)$"),
    "counts-negative-int": ([[0, 1], [3, -1]], {"kind": "counts"}, r"^X\[1, 1\] = -1 is negative$"),
    "counts-negative-float": ([[0.0, -2.0]], {"kind": "counts"}, r"^X\[0, 1\] = -2.0 is negative$"),
    "counts-fraction": ([[1.0, 2.5]], {"kind": "counts"}, r"^X\[0, 1\] = 2.5 is not an integer$"),
    "counts-nan": ([[np.nan, 2.0]], {"kind": "counts"}, r"^X\[0, 0\] is nan$"),
    "unknown-kind": (
        BINARY,
        {"kind": "bernoulli"},
        r"^kind must be one of 'binary', 'counts', 'real' or None, got 'bernoulli'$",
    ),
    "labels-2d": (BINARY, {"labels": [[0, 1, 0, 1]]}, r"^labels must be 1-D, got shape \(1, 4\)$"),
    "feature-names-length": (
        BINARY,
        {"feature_names": ["a", "b"]},
        r"^feature_names has 2 entries but X has 3 features$",
    ),
}


@pytest.mark.parametrize(("X", "kwargs", "message"), _INVALID_X.values(), ids=_INVALID_X.keys())
def test_validation_messages(X, kwargs, message):
    with pytest.raises(ValueError, match=message):
        Features(X, **kwargs)


_HUGE_COUNTS = np.array([[1, 0, 1], [1, 2**63, 0]], dtype=np.uint64)


@pytest.mark.parametrize(
    ("X", "kwargs"),
    [
        (_HUGE_COUNTS, {}),
        (sp.csr_matrix(_HUGE_COUNTS), {}),
        (_HUGE_COUNTS, {"kind": "counts"}),
        (_HUGE_COUNTS.astype(np.float64), {"kind": "counts"}),
    ],
    ids=["uint64", "uint64-sparse", "uint64-counts", "float-counts"],
)
def test_counts_beyond_int64_are_refused_as_cooccurrence_refuses_them(X, kwargs):
    """Issue 24: uint64 ``2**63`` was accepted as a count (CoOccurrence refuses it) and the DPM
    then returned ``lp = inf``; the same limit and a message naming the entry now."""
    from latentzoo.data import CoOccurrence

    with pytest.raises(
        ValueError, match=r"^X\[1, 1\] = 9\.?22\d*e?\+?\d* exceeds the int64 range$"
    ):
        Features(X, **kwargs)
    with pytest.raises(ValueError, match=r"exceeds the int64 range"):
        CoOccurrence(_HUGE_COUNTS)
    # One below the limit is a count; a float of 2**63 or more is a measurement, not a count.
    assert Features(np.array([[2**63 - 1, 0]], dtype=np.uint64)).kind == "counts"
    assert Features(_HUGE_COUNTS, kind="real").kind == "real"
    assert Features(np.array([[1e300, 2.0]])).kind == "real"


def test_first_offender_in_row_major_order():
    X = np.zeros((3, 3))
    X[2, 0] = np.nan
    X[1, 2] = np.nan
    with pytest.raises(ValueError, match=r"^X\[1, 2\] is nan$"):
        Features(X)
    # NaN is reported before a kind problem elsewhere.
    X = np.array([[0.5, np.nan]])
    with pytest.raises(ValueError, match=r"^X\[0, 1\] is nan$"):
        Features(X, kind="binary")


# ---------------------------------------------------------------- split


def _medium(sparse=False):
    rng = np.random.default_rng(3)
    X = (rng.random((50, 6)) < 0.3).astype(float)
    labels = np.arange(50) % 3
    if sparse:
        X = sp.csr_matrix(X)
    return Features(X, labels=labels, item_names=[f"i{k}" for k in range(50)])


@pytest.mark.parametrize("sparse", [False, True])
def test_split_holds_out_whole_items(sparse):
    data = _medium(sparse)
    train, test = data.split(0.2, random_state=0)
    assert (train.n_items, test.n_items) == (40, 10)
    assert train.is_sparse == sparse and test.is_sparse == sparse
    names = train.item_names.tolist() + test.item_names.tolist()
    assert sorted(names) == sorted(data.item_names.tolist())
    assert not set(train.item_names) & set(test.item_names)
    # Each part keeps the original order, and rows, labels and names travel together.
    positions = [int(name[1:]) for name in test.item_names]
    assert positions == sorted(positions)
    np.testing.assert_array_equal(test.X, data.X[positions])
    np.testing.assert_array_equal(test.labels, data.labels[positions])
    assert train.kind == test.kind == data.kind
    assert train.feature_names.tolist() == data.feature_names.tolist()


def test_split_reproducible():
    data = _medium()
    first = data.split(0.3, random_state=7)
    second = data.split(0.3, random_state=np.random.default_rng(7))
    assert first[0] == second[0] and first[1] == second[1]
    other = data.split(0.3, random_state=8)
    assert other[1].item_names.tolist() != first[1].item_names.tolist()


def test_split_parts_never_empty():
    data = Features([[0, 1], [1, 0]])
    for fraction in (0.01, 0.5, 0.99):
        train, test = data.split(fraction, random_state=0)
        assert (train.n_items, test.n_items) == (1, 1)


@pytest.mark.parametrize("fraction", [0, 1, 1.5, -0.1, True, "0.2", None])
def test_split_validates_fraction(fraction):
    with pytest.raises(
        ValueError, match=r"^test_fraction must be a number in the open interval \(0, 1\), got"
    ):
        _medium().split(fraction)


def test_split_needs_two_items():
    with pytest.raises(ValueError, match=r"^cannot split 1 item into two non-empty parts$"):
        Features([[0, 1]]).split(0.5)


# ---------------------------------------------------------------- subset


@pytest.mark.parametrize("sparse", [False, True])
def test_subset_keeps_labels_names_and_storage(sparse):
    data = _medium(sparse)
    part = data.subset([5, -1, 0])
    assert part.item_names.tolist() == ["i5", "i49", "i0"]
    np.testing.assert_array_equal(part.labels, [2, 1, 0])
    np.testing.assert_array_equal(part.X, data.X[[5, 49, 0]])
    assert part.is_sparse == sparse
    mask = np.zeros(50, dtype=bool)
    mask[[3, 4]] = True
    assert data.subset(mask).item_names.tolist() == ["i3", "i4"]
    assert data.subset(np.arange(50)) == data


@pytest.mark.parametrize(
    ("items", "message"),
    [
        ([], r"^subset is empty \(selects 0 items\)$"),
        ([50], r"^items\[0\] = 50 is out of range for size 50$"),
        ([True, False], r"^items is a boolean mask of length 2, expected 50$"),
        ([0.5], r"^items must hold integer indices or be a boolean mask$"),
        ([[0, 1]], r"^items must be 1-D, got shape \(1, 2\)$"),
    ],
)
def test_subset_validation(items, message):
    with pytest.raises(ValueError, match=message):
        _medium().subset(items)


# ---------------------------------------------------------------- helpers and dunder


def test_binarize_dense_and_sparse():
    pixels = Features([[0, 7, 8, 16], [3, 0, 9, 0]], labels=["a", "b"])
    half = pixels.binarize(8, inclusive=True)
    assert half.kind == "binary"
    np.testing.assert_array_equal(half.X, [[0, 0, 1, 1], [0, 0, 1, 0]])
    assert half.labels.tolist() == ["a", "b"]
    np.testing.assert_array_equal(pixels.binarize(8).X, [[0, 0, 0, 1], [0, 0, 1, 0]])
    sparse = Features(sp.csr_matrix(pixels.X)).binarize()
    assert sparse.is_sparse
    np.testing.assert_array_equal(sparse.X, [[0, 1, 1, 1], [1, 0, 1, 0]])
    # Zeros that become ones cannot stay sparse.
    dense = Features(sp.csr_matrix(pixels.X)).binarize(0, inclusive=True)
    assert not dense.is_sparse and dense.X.all()
    with pytest.raises(ValueError, match=r"^threshold must be a finite number, got nan$"):
        pixels.binarize(np.nan)


def test_equality_copy_and_hash():
    data = _medium()
    assert data == data.copy()
    assert data.copy() is not data
    assert data == _medium(sparse=True)  # same values, different storage
    assert data != Features(data, kind="real")
    assert data != Features(data.X, item_names=data.item_names)  # labels missing
    assert data != data.subset(np.arange(49))
    assert (data == "x") is False
    with pytest.raises(TypeError):
        hash(data)


def test_coords_and_observed_data():
    data = Features(BINARY, feature_names=["x", "y", "z"], item_names=list("abcd"))
    assert data.coords() == {"item": list("abcd"), "feature": ["x", "y", "z"]}
    dims, values = data.observed_data()["x"]
    assert dims == ("item", "feature")
    np.testing.assert_array_equal(values, BINARY)
    assert set(data.observed_data()) == {"x"}
