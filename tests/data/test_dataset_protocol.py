"""Every data container implements the Dataset protocol; the shared input checks behave alike."""

import numpy as np
import pytest
import scipy.sparse as sp

from latentzoo.data import CoOccurrence, Dataset, Dissimilarities, Features, load
from latentzoo.data.checks import (
    as_matrix,
    check_entries,
    check_fraction,
    first_offender,
    format_value,
)
from latentzoo.data.dataset import holdout_items


def _cooccurrence():
    rng = np.random.default_rng(0)
    counts = rng.poisson(3.0, size=(10, 7))
    return CoOccurrence(
        counts, row_labels=[f"d{k}" for k in range(10)], col_labels=[f"w{k}" for k in range(7)]
    )


def _features():
    rng = np.random.default_rng(1)
    return Features(
        (rng.random((10, 4)) < 0.5).astype(int),
        labels=np.arange(10) % 2,
        item_names=[f"i{k}" for k in range(10)],
        feature_names=list("abcd"),
    )


def _dissimilarities():
    points = np.arange(10.0)
    return Dissimilarities(
        np.abs(points[:, None] - points[None, :]), item_names=[f"i{k}" for k in range(10)]
    )


CONTAINERS = {
    "cooccurrence": _cooccurrence,
    "features": _features,
    "dissimilarities": _dissimilarities,
}


@pytest.fixture(params=sorted(CONTAINERS))
def data(request):
    return CONTAINERS[request.param]()


@pytest.mark.parametrize(
    ("container", "matrix", "name"),
    [(Features, np.eye(4), "X"), (Dissimilarities, 1 - np.eye(4), "D")],
    ids=["features", "dissimilarities"],
)
def test_labels_and_item_names_must_match_the_items(container, matrix, name):
    # Both containers of items check labels and names with the same shared checks and words.
    with pytest.raises(ValueError, match=rf"^labels has 3 entries but {name} has 4 items$"):
        container(matrix, labels=[0, 1, 0])
    with pytest.raises(ValueError, match=rf"^item_names has 5 entries but {name} has 4 items$"):
        container(matrix, item_names=list("abcde"))


def test_isinstance_of_runtime_protocol(data):
    assert isinstance(data, Dataset)
    assert data.n_items == 10
    assert isinstance(data.item_dim, str)


def test_item_dims():
    assert _cooccurrence().item_dim == "doc"
    assert _features().item_dim == "item"
    assert _dissimilarities().item_dim == "item"
    assert CoOccurrence.item_dim == "doc"


def test_things_that_are_not_datasets():
    assert not isinstance(np.ones((2, 2)), Dataset)
    assert not isinstance(sp.csr_matrix((2, 2)), Dataset)
    _, held_out = _dissimilarities().split(0.2, random_state=0)
    assert not isinstance(held_out, Dataset)  # no split of its own: it is only a test part


def test_observed_data_dims_are_coordinates(data):
    coords = data.coords()
    assert all(isinstance(names, list) for names in coords.values())
    observed = data.observed_data()
    assert observed
    for dims, values in observed.values():
        assert isinstance(dims, tuple) and dims[0] == data.item_dim
        assert values.shape == tuple(len(coords[dim]) for dim in dims)
    assert len(coords[data.item_dim]) == data.n_items


def test_observed_data_contents():
    co = _cooccurrence()
    dims, counts = co.observed_data()["counts"]
    assert dims == ("doc", "word")
    np.testing.assert_array_equal(counts, co.toarray())
    assert co.coords() == {"doc": co.row_labels.tolist(), "word": co.col_labels.tolist()}
    feats = _features()
    assert feats.observed_data()["x"][0] == ("item", "feature")
    diss = _dissimilarities()
    assert diss.observed_data()["D"][0] == ("item", "other_item")


def test_subset_with_a_positional_item_argument(data):
    part = data.subset([7, 2])
    assert type(part) is type(data)
    assert part.n_items == 2
    assert data.coords()[data.item_dim][7] == part.coords()[part.item_dim][0]
    assert isinstance(part, Dataset)


def test_cooccurrence_subset_positional_is_rows():
    co = _cooccurrence()
    assert co.subset([3, 1]) == co.subset(rows=[3, 1])
    assert co.subset([3, 1]).n_cols == co.n_cols


def test_split_held_out_units(data):
    first = data.split(0.3, random_state=5)
    second = data.split(0.3, random_state=5)
    train, test = first
    if isinstance(data, CoOccurrence):
        # Observations are thinned: same documents on both sides, counts add up.
        assert train.n_items == test.n_items == data.n_items
        assert ((train.counts + test.counts) != data.counts).nnz == 0
        assert train == second[0] and test == second[1]
    else:
        # Whole items are held out.
        assert train.n_items + test.n_items == data.n_items
        assert (train.n_items, test.n_items) == (7, 3)
        names = train.coords()["item"] + test.coords()["item"]
        assert sorted(names) == sorted(data.coords()["item"])
        assert test.coords()["item"] == second[1].coords()["item"]
    assert isinstance(train, Dataset)


def test_loaded_dataset_is_a_dataset():
    assert isinstance(load("toy"), Dataset)


def test_protocol_split_validates_fraction(data):
    with pytest.raises(ValueError, match=r"^test_fraction must be a number in the open interval"):
        data.split(0.0)


# ---------------------------------------------------------------- the shared checks


def test_format_value():
    assert format_value(np.float64(-1.0)) == "-1.0"
    assert format_value(np.float64(-1.0), compact=True) == "-1"
    assert format_value(np.int64(3)) == "3"
    assert format_value(np.float64(np.nan), compact=True) == "nan"


def test_first_offender_sparse_is_row_major():
    mask = np.array([True, True, True])
    rows, cols = np.array([4, 1, 1]), np.array([0, 5, 2])
    assert first_offender(mask, rows, cols, (6, 6)) == (2, 1, 2)


@pytest.mark.parametrize(
    ("kwargs", "values", "message"),
    [
        ({}, [[1.0, np.nan]], r"^M\[0, 1\] is nan$"),
        ({"nan_word": "NaN"}, [[1.0, np.nan]], r"^M\[0, 1\] is NaN$"),
        ({}, [[-np.inf, 1.0]], r"^M\[0, 0\] is -inf$"),
        ({"nonnegative": True}, [[1.0, -2.0]], r"^M\[0, 1\] = -2.0 is negative$"),
        ({"nonnegative": True, "compact": True}, [[1.0, -2.0]], r"^M\[0, 1\] = -2 is negative$"),
        ({"integer": True}, [[1.5]], r"^M\[0, 0\] = 1.5 is not an integer$"),
        ({"binary": True}, [[0, 1], [1, 3]], r"^M\[1, 1\] = 3 is not binary \(0 or 1\)$"),
        ({"int64": True}, [[2.0**63]], r"^M\[0, 0\] = .* exceeds the int64 range$"),
        ({}, [["x"]], r"^M must be numeric \(bool, integer or float\), got dtype <U1$"),
    ],
)
def test_check_entries_messages(kwargs, values, message):
    with pytest.raises(ValueError, match=message):
        check_entries(np.array(values), "M", **kwargs)


def test_check_entries_accepts_clean_input():
    check_entries(np.array([[0, 1], [1, 0]]), "M", binary=True, nonnegative=True, integer=True)
    check_entries(np.array([[True, False]]), "M", binary=True)
    check_entries(np.array([[-1.5, 2.0]]), "M")


def test_as_matrix_keeps_sparse():
    matrix = sp.csr_matrix(np.eye(2))
    assert as_matrix(matrix, "M") is matrix
    with pytest.raises(ValueError, match=r"^M is empty \(shape \(2, 0\)\)$"):
        as_matrix(sp.csr_matrix((2, 0)), "M")


def test_check_fraction_and_holdout_items():
    assert check_fraction(np.float64(0.5)) == 0.5
    with pytest.raises(ValueError, match=r"got True$"):
        check_fraction(True)
    for n in (2, 3, 10, 101):
        for fraction in (0.01, 0.3, 0.99):
            train, test = holdout_items(n, fraction, random_state=n)
            assert 1 <= test.size <= n - 1
            assert np.array_equal(np.sort(np.concatenate([train, test])), np.arange(n))
    train, test = holdout_items(10, 0.3, random_state=0)
    assert test.size == 3
    again = holdout_items(10, 0.3, random_state=0)
    assert np.array_equal(train, again[0]) and np.array_equal(test, again[1])
