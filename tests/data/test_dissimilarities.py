"""Tests for latentzoo.data.Dissimilarities and the held-out DissimilarityRows."""

import numpy as np
import pandas as pd
import pytest
import scipy.sparse as sp
from scipy.spatial.distance import pdist, squareform

from latentzoo.data import Dissimilarities, DissimilarityRows, Features
from latentzoo.data.checks import check_symmetric


def _points(n=12, seed=0):
    rng = np.random.default_rng(seed)
    return rng.normal(size=(n, 2))


def _medium(n=12):
    D = squareform(pdist(_points(n)))
    return Dissimilarities(D, labels=np.arange(n) % 3, item_names=[f"i{k}" for k in range(n)])


# ---------------------------------------------------------------- construction


def test_symmetric_input_stored_unchanged():
    D = squareform(pdist(_points()))
    data = Dissimilarities(D)
    assert data.asymmetry == 0.0
    assert np.array_equal(data.D, D)
    assert data.D.dtype == np.float64
    assert data.shape == (12, 12) and data.n_items == 12
    assert data.item_names.tolist() == [str(k) for k in range(12)]
    assert data.labels is None
    assert repr(data) == "Dissimilarities(12 items)"


def test_asymmetric_input_is_symmetrised():
    D = np.array([[0.0, 1.0, 4.0], [3.0, 0.0, 2.0], [4.0, 2.5, 0.0]])
    data = Dissimilarities(D)
    np.testing.assert_array_equal(data.D, (D + D.T) / 2)
    assert np.array_equal(data.D, data.D.T)
    assert data.asymmetry == 2.0
    assert repr(data) == "Dissimilarities(3 items, symmetrised)"


def test_read_only_and_independent_of_input():
    D = np.array([[0.0, 1.0], [1.0, 0.0]])
    data = Dissimilarities(D, labels=["a", "b"])
    D[0, 1] = 5.0
    assert data.D[0, 1] == 1.0
    for array in (data.D, data.labels, data.item_names):
        with pytest.raises(ValueError, match="read-only"):
            array[0] = array[1]


def test_integer_bool_sparse_and_dataframe_input():
    assert Dissimilarities([[0, 2], [2, 0]]).D.tolist() == [[0.0, 2.0], [2.0, 0.0]]
    assert Dissimilarities(np.array([[False, True], [True, False]])).D[0, 1] == 1.0
    assert Dissimilarities(sp.csr_matrix([[0, 2], [2, 0]])).D[1, 0] == 2.0
    frame = pd.DataFrame([[0, 1], [1, 0]], index=["x", "y"], columns=["x", "y"])
    assert Dissimilarities(frame).item_names.tolist() == ["x", "y"]
    assert Dissimilarities([[0.0]]).n_items == 1


@pytest.mark.parametrize(
    ("D", "kwargs", "message"),
    [
        ([[0.0, np.nan], [1.0, 0.0]], {}, r"^D\[0, 1\] is nan$"),
        ([[0.0, 1.0], [np.inf, 0.0]], {}, r"^D\[1, 0\] is inf$"),
        (
            [[0.0, 1.0, -1.0], [1.0, 0.0, 1.0], [-1.0, 1.0, 0.0]],
            {},
            r"^D\[0, 2\] = -1.0 is negative$",
        ),
        ([[0, -3], [-3, 0]], {}, r"^D\[0, 1\] = -3 is negative$"),
        (
            [[0.0, 1.0], [1.0, 0.25]],
            {},
            r"^D\[1, 1\] = 0.25 is not zero \(the diagonal must be zero\)$",
        ),
        ([[0.0, 1.0, 2.0], [1.0, 0.0, 3.0]], {}, r"^D must be square, got shape \(2, 3\)$"),
        ([0.0, 1.0], {}, r"^D must be 2-D, got shape \(2,\)$"),
        (np.zeros((0, 0)), {}, r"^D is empty \(shape \(0, 0\)\)$"),
        ([["a", "b"], ["c", "d"]], {}, r"^D must be numeric \(bool, integer or float\)"),
        (sp.csr_matrix(np.array([[0j, 1j], [1j, 0j]])), {}, r"^D must be numeric"),
        (
            [[0.0, 1.0], [1.0, 0.0]],
            {"labels": [1, 2, 3]},
            r"^labels has 3 entries but D has 2 items$",
        ),
        (
            [[0.0, 1.0], [1.0, 0.0]],
            {"item_names": ["a"]},
            r"^item_names has 1 entries but D has 2 items$",
        ),
    ],
    ids=[
        "nan",
        "inf",
        "negative",
        "negative-int",
        "diagonal",
        "not-square",
        "1-d",
        "empty",
        "strings",
        "complex-sparse",
        "labels-length",
        "names-length",
    ],
)
def test_validation_messages(D, kwargs, message):
    with pytest.raises(ValueError, match=message):
        Dissimilarities(D, **kwargs)


def test_negative_reported_before_symmetrisation():
    # (D + D^T) / 2 would be non-negative here, but the input entry is named.
    with pytest.raises(ValueError, match=r"^D\[1, 0\] = -1.0 is negative$"):
        Dissimilarities([[0.0, 3.0], [-1.0, 0.0]])


def test_check_symmetric():
    check_symmetric(np.array([[0.0, 1.0], [1.0, 0.0]]), "D")
    with pytest.raises(ValueError, match=r"^D\[0, 1\] = 1.0 differs from D\[1, 0\] = 1.5"):
        check_symmetric(np.array([[0.0, 1.0], [1.5, 0.0]]), "D")
    check_symmetric(np.array([[0.0, 1.0], [1.0 + 1e-12, 0.0]]), "D", atol=1e-9)
    with pytest.raises(ValueError, match=r"^D must be square"):
        check_symmetric(np.zeros((2, 3)), "D")


def test_from_features_and_condensed():
    points = _points(5)
    data = Dissimilarities.from_features(points, metric="sqeuclidean")
    np.testing.assert_allclose(data.condensed(), pdist(points, "sqeuclidean"))
    labelled = Features((points > 0).astype(int), labels=list("aabbc"), item_names=list("vwxyz"))
    hamming = Dissimilarities.from_features(labelled, metric="hamming")
    assert hamming.labels.tolist() == list("aabbc")
    assert hamming.item_names.tolist() == list("vwxyz")
    with pytest.raises(ValueError, match=r"^X\[0, 0\] is nan$"):
        Dissimilarities.from_features([[np.nan, 0.0], [1.0, 1.0]])


# ---------------------------------------------------------------- subset and split


def test_subset_takes_rows_and_columns():
    data = _medium()
    part = data.subset([4, -1, 0])
    assert part.item_names.tolist() == ["i4", "i11", "i0"]
    np.testing.assert_array_equal(part.labels, [1, 2, 0])
    np.testing.assert_array_equal(part.D, data.D[np.ix_([4, 11, 0], [4, 11, 0])])
    assert data.subset(np.ones(12, dtype=bool)) == data
    with pytest.raises(ValueError, match=r"^subset is empty \(selects 0 items\)$"):
        data.subset([])
    with pytest.raises(ValueError, match=r"^items\[1\] = 12 is out of range for size 12$"):
        data.subset([0, 12])


def test_split_train_is_submatrix_and_test_rows_face_all_training_items():
    data = _medium()
    train, test = data.split(0.25, random_state=0)
    assert isinstance(train, Dissimilarities) and isinstance(test, DissimilarityRows)
    assert (train.n_items, test.n_items, test.n_reference) == (9, 3, 9)
    train_pos = [int(name[1:]) for name in train.item_names]
    test_pos = [int(name[1:]) for name in test.item_names]
    assert sorted(train_pos + test_pos) == list(range(12))
    assert train_pos == sorted(train_pos) and test_pos == sorted(test_pos)
    np.testing.assert_array_equal(train.D, data.D[np.ix_(train_pos, train_pos)])
    np.testing.assert_array_equal(test.D, data.D[np.ix_(test_pos, train_pos)])
    assert test.reference_names.tolist() == train.item_names.tolist()
    np.testing.assert_array_equal(test.labels, data.labels[test_pos])
    assert test.coords() == {
        "item": test.item_names.tolist(),
        "reference": train.item_names.tolist(),
    }
    dims, values = test.observed_data()["D"]
    assert dims == ("item", "reference") and values.shape == (3, 9)


def test_split_reproducible_and_validated():
    data = _medium()
    first = data.split(0.5, random_state=3)
    second = data.split(0.5, random_state=np.random.default_rng(3))
    assert first[0] == second[0]
    assert np.array_equal(first[1].D, second[1].D)
    with pytest.raises(ValueError, match=r"^test_fraction must be a number in the open interval"):
        data.split(1.0)
    with pytest.raises(ValueError, match=r"^cannot split 1 item into two non-empty parts$"):
        Dissimilarities([[0.0]]).split(0.5)


def test_dissimilarity_rows_subset_and_independence():
    _, test = _medium().split(0.5, random_state=1)
    part = test.subset([1, 0])
    assert part.item_names.tolist() == test.item_names[[1, 0]].tolist()
    np.testing.assert_array_equal(part.D, test.D[[1, 0]])
    assert part.reference_names.tolist() == test.reference_names.tolist()
    with pytest.raises(ValueError, match="read-only"):
        test.D[0, 0] = 1.0
    source = np.ones((1, 2))
    rows = DissimilarityRows(
        D=source, item_names=np.array(["a"]), reference_names=np.array(["b", "c"])
    )
    source[0, 0] = 7.0
    assert rows.D[0, 0] == 1.0 and source.flags.writeable
    assert repr(rows) == "DissimilarityRows(1 held-out items x 2 reference items)"


def test_equality_copy_coords_observed_data():
    data = _medium()
    assert data == data.copy() and data.copy() is not data
    assert data != Dissimilarities(data.D, item_names=data.item_names)
    assert (data == 3) is False
    with pytest.raises(TypeError):
        hash(data)
    small = Dissimilarities([[0, 1], [1, 0]], item_names=["a", "b"])
    assert small.coords() == {"item": ["a", "b"], "other_item": ["a", "b"]}
    dims, values = small.observed_data()["D"]
    assert dims == ("item", "other_item")
    np.testing.assert_array_equal(values, [[0, 1], [1, 0]])
