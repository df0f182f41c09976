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


_INVALID_D = {
    "nan": ([[0.0, np.nan], [1.0, 0.0]], {}, r"^D\[0, 1\] is nan$"),
    "inf": ([[0.0, 1.0], [np.inf, 0.0]], {}, r"^D\[1, 0\] is inf$"),
    "negative": (
        [[0.0, 1.0, -1.0], [1.0, 0.0, 1.0], [-1.0, 1.0, 0.0]],
        {},
        r"^D\[0, 2\] = -1.0 is negative$",
    ),
    "negative-int": ([[0, -3], [-3, 0]], {}, r"^D\[0, 1\] = -3 is negative$"),
    "diagonal": (
        [[0.0, 1.0], [1.0, 0.25]],
        {},
        r"^D\[1, 1\] = 0.25 is not zero \(the diagonal must be zero\)$",
    ),
    "not-square": (
        [[0.0, 1.0, 2.0], [1.0, 0.0, 3.0]],
        {},
        r"^D must be square, got shape \(2, 3\)$",
    ),
    "1-d": ([0.0, 1.0], {}, r"^D must be 2-D, got shape \(2,\)$"),
    "empty": (np.zeros((0, 0)), {}, r"^D is empty \(shape \(0, 0\)\)$"),
    "strings": ([["a", "b"], ["c", "d"]], {}, r"^D must be numeric \(bool, integer or float\)"),
    "complex-sparse": (sp.csr_matrix(np.array([[0j, 1j], [1j, 0j]])), {}, r"^D must be numeric"),
}


@pytest.mark.parametrize(("D", "kwargs", "message"), _INVALID_D.values(), ids=_INVALID_D.keys())
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


# ---------------------------------------------------------------- sparse neighbourhoods


def _known(entries, n):
    """COO matrix of ``{(i, k): value}`` (stored exactly as given, zeros included)."""
    rows, cols = zip(*entries, strict=True)
    return sp.coo_matrix((list(entries.values()), (rows, cols)), shape=(n, n))


def test_from_sparse_stores_observed_pairs_symmetric_without_diagonal():
    pairs = _known({(0, 1): 2.0, (2, 1): 0.0, (3, 2): 5.0, (2, 3): 4.0, (1, 1): 0.0}, 4)
    data = Dissimilarities.from_sparse(pairs, labels=list("xxyy"), item_names=list("abcd"))
    assert data.is_sparse and data.n_items == 4 and data.shape == (4, 4)
    assert data.n_pairs == 3 and data.degree.tolist() == [1, 2, 2, 1]
    matrix = data.pairs
    assert isinstance(matrix, sp.csr_matrix) and matrix.has_sorted_indices
    # The observed zero (1, 2) stays stored; (2, 3) is given both ways and averaged.
    assert matrix.nnz == 6
    assert matrix.indptr.tolist() == [0, 1, 3, 5, 6]
    assert matrix.indices.tolist() == [1, 0, 2, 1, 3, 2]
    assert matrix.data.tolist() == [2.0, 2.0, 0.0, 0.0, 4.5, 4.5]
    assert data.asymmetry == 1.0
    assert repr(data) == "Dissimilarities(4 items, sparse: 3 of 6 pairs, symmetrised, 2 classes)"
    for part in (matrix.data, matrix.indices, matrix.indptr, data.labels, data.item_names):
        with pytest.raises(ValueError, match="read-only"):
            part[0] = part[1]


def test_sparse_of_all_pairs_equals_dense_bit_for_bit():
    rng = np.random.default_rng()
    raw = rng.gamma(2.0, size=(9, 9))
    np.fill_diagonal(raw, 0.0)
    dense = Dissimilarities(raw)
    sparse = Dissimilarities.from_sparse(sp.csr_matrix(raw))
    assert np.array_equal(sparse.pairs.toarray(), dense.D)
    assert sparse.asymmetry == dense.asymmetry
    assert sparse.n_pairs == dense.n_pairs == 36
    assert np.array_equal(sparse.degree, dense.degree) and dense.degree.tolist() == [8] * 9
    full = dense.pairs
    for part in ("indptr", "indices", "data"):
        assert np.array_equal(getattr(full, part), getattr(sparse.pairs, part))
    assert not dense.is_sparse and sparse != dense


def test_dense_data_unchanged_by_the_sparse_extension():
    D = squareform(pdist(_points()))
    data = Dissimilarities(D)
    assert data.D is data._D and np.array_equal(data.D, D) and not data.is_sparse
    assert data.n_pairs == 66 and data.degree.tolist() == [11] * 12
    # A sparse matrix given to the constructor is still densified (missing = 0).
    densified = Dissimilarities(sp.csr_matrix([[0.0, 2.0, 0.0], [2.0, 0.0, 0.0], [0, 0, 0]]))
    assert not densified.is_sparse and densified.D[0, 2] == 0.0


@pytest.mark.parametrize(
    ("pairs", "kwargs", "message"),
    [
        (np.array([[0.0, 1.0], [1.0, 0.0]]), {}, r"^pairs must be a scipy.sparse matrix .*ndarray"),
        (sp.csr_matrix((2, 3)), {}, r"^pairs must be square, got shape \(2, 3\)$"),
        (sp.csr_matrix((0, 0)), {}, r"^pairs is empty \(shape \(0, 0\)\)$"),
        (sp.csr_matrix(np.array([[0j, 1j], [1j, 0j]])), {}, r"^pairs must be numeric"),
        ("nan", {}, r"^pairs\[2, 0\] is nan$"),
        ("inf", {}, r"^pairs\[1, 2\] is inf$"),
        ("negative", {}, r"^pairs\[0, 2\] = -1.5 is negative$"),
        ("diagonal", {}, r"^pairs\[1, 1\] = 0.5 is not zero \(the diagonal must be zero\)$"),
        ("duplicate", {}, r"^pairs\[0, 1\] is stored more than once"),
        ("diagonal-only", {}, r"^pairs has no off-diagonal entry: no pair is observed$"),
        (
            "isolated",
            {"item_names": list("abc")},
            r"^item 2 \('c'\) has no observed pair: row and column 2 of pairs are empty "
            r"\(pass allow_isolated=True to accept it\)$",
        ),
        ("isolated", {"labels": [1, 2]}, r"^labels has 2 entries but pairs has 3 items$"),
        ("isolated", {"item_names": list("ab")}, r"^item_names has 2 entries but pairs has 3"),
    ],
    ids=[
        "dense",
        "not-square",
        "empty",
        "complex",
        "nan",
        "inf",
        "negative",
        "diagonal",
        "duplicate",
        "no-pair",
        "isolated",
        "labels-length",
        "names-length",
    ],
)
def test_from_sparse_validation_messages(pairs, kwargs, message):
    cases = {
        "nan": {(0, 1): 1.0, (2, 0): np.nan},
        "inf": {(0, 1): 1.0, (1, 2): np.inf},
        "negative": {(0, 1): 1.0, (0, 2): -1.5, (2, 1): -2.0},
        "diagonal": {(0, 1): 1.0, (1, 1): 0.5, (1, 2): 1.0},
        "diagonal-only": {(0, 0): 0.0},
        "isolated": {(0, 1): 1.0},
    }
    if isinstance(pairs, str) and pairs == "duplicate":
        # (0, 1) stored twice: COO keeps duplicates until summed.
        pairs = sp.coo_matrix(([1.0, 1.0, 2.0], ([0, 0, 1], [1, 1, 2])), shape=(3, 3))
    elif isinstance(pairs, str):
        pairs = _known(cases[pairs], 3)
    with pytest.raises(ValueError, match=message):
        Dissimilarities.from_sparse(pairs, **kwargs)


def test_from_sparse_allows_isolated_items_on_request():
    data = Dissimilarities.from_sparse(_known({(0, 1): 1.0}, 3), allow_isolated=True)
    assert data.degree.tolist() == [1, 1, 0] and data.n_pairs == 1


def test_sparse_data_has_no_dense_matrix():
    data = Dissimilarities.from_sparse(_known({(0, 1): 1.0, (1, 2): 3.0}, 3))
    message = (
        r"^D is not available for sparse dissimilarities \(2 of 3 pairs observed\): use .pairs$"
    )
    with pytest.raises(ValueError, match=message):
        _ = data.D
    with pytest.raises(ValueError, match=message):
        data.condensed()


def test_neighbourhood_keeps_nearest_partners_with_the_dense_values():
    D = squareform(pdist(_points(15, seed=np.random.default_rng().integers(1000))))
    data = Dissimilarities(D, labels=np.arange(15) % 3, item_names=[f"i{k}" for k in range(15)])
    near = data.neighbourhood(3)
    assert near.is_sparse and near.degree.min() >= 3
    assert near.item_names.tolist() == data.item_names.tolist()
    assert np.array_equal(near.labels, data.labels)
    matrix = near.pairs.toarray()
    observed = np.zeros((15, 15), dtype=bool)
    rows = np.repeat(np.arange(15), near.degree)
    observed[rows, near.pairs.indices] = True
    assert np.array_equal(observed, observed.T) and not observed.diagonal().any()
    # Observed values are those of D, bit for bit; unobserved pairs are not stored.
    assert np.array_equal(matrix[observed], D[observed])
    masked = D + np.diag(np.full(15, np.inf))
    for i in range(15):
        nearest = np.argsort(masked[i], kind="stable")[:3]
        assert observed[i, nearest].all()
    # A pair is observed only if one of its items chose it.
    rank = np.argsort(np.argsort(masked, axis=1, kind="stable"), axis=1)
    assert ((rank < 3) | (rank.T < 3))[observed].all()


def test_neighbourhood_breaks_ties_by_index_and_adds_random_partners():
    ties = Dissimilarities(np.ones((5, 5)) - np.eye(5))
    near = ties.neighbourhood(1)
    # All distances tie: item 0 chooses 1, every other item chooses 0.
    assert near.degree.tolist() == [4, 1, 1, 1, 1]
    assert near.pairs.indices[:4].tolist() == [1, 2, 3, 4]
    seed = int(np.random.default_rng().integers(2**32))
    data = Dissimilarities(squareform(pdist(_points(20))))
    first = data.neighbourhood(2, n_random=3, random_state=seed)
    again = data.neighbourhood(2, n_random=3, random_state=np.random.default_rng(seed))
    assert first == again and first.degree.min() >= 5
    assert data.neighbourhood(0, n_random=19, random_state=seed).n_pairs == 190
    draws = {
        data.neighbourhood(0, n_random=1, random_state=s).pairs.indices.tobytes() for s in range(5)
    }
    assert len(draws) > 1


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ((-1,), r"^n_nearest must be an integer in \[0, 4\], got -1$"),
        ((5,), r"^n_nearest must be an integer in \[0, 4\], got 5$"),
        ((1.0,), r"^n_nearest must be an integer in \[0, 4\], got 1.0$"),
        ((True,), r"^n_nearest must be an integer in \[0, 4\], got True$"),
        ((1, -2), r"^n_random must be an integer in \[0, 4\], got -2$"),
        ((0,), r"^n_nearest \+ n_random must lie in \[1, 4\] \(the other items\), got 0 \+ 0$"),
        ((3, 2), r"^n_nearest \+ n_random must lie in \[1, 4\] \(the other items\), got 3 \+ 2$"),
        ((1, 1, "abc"), r"^random_state must be None, a non-negative integer"),
        ((1, 0, -1), r"^random_state must be None, a non-negative integer"),
    ],
)
def test_neighbourhood_validation(args, message):
    data = Dissimilarities(np.ones((5, 5)) - np.eye(5))
    with pytest.raises(ValueError, match=message):
        data.neighbourhood(*args)


def test_neighbourhood_of_sparse_data_is_refused():
    sparse = Dissimilarities(np.ones((4, 4)) - np.eye(4)).neighbourhood(1)
    with pytest.raises(ValueError, match=r"^neighbourhood needs dense dissimilarities"):
        sparse.neighbourhood(1)


def test_sparse_subset_split_copy_and_protocol():
    from latentzoo.data import Dataset

    data = _medium().neighbourhood(2, n_random=1, random_state=0)
    assert isinstance(data, Dataset)
    dense = _medium().D
    part = data.subset([5, 0, 7])
    assert part.is_sparse and part.item_names.tolist() == ["i5", "i0", "i7"]
    expected = data.pairs.toarray()[np.ix_([5, 0, 7], [5, 0, 7])]
    assert np.array_equal(part.pairs.toarray(), expected)
    assert part.pairs.has_sorted_indices
    assert data.subset(np.ones(12, dtype=bool)) == data
    train, test = data.split(0.25, random_state=1)
    assert train.is_sparse and isinstance(test, DissimilarityRows) and test.is_sparse
    train_pos = [int(name[1:]) for name in train.item_names]
    test_pos = [int(name[1:]) for name in test.item_names]
    held_out = test.D.toarray()
    assert held_out.shape == (3, 9)
    observed = data.pairs.toarray()[np.ix_(test_pos, train_pos)]
    assert np.array_equal(held_out, observed)
    assert np.array_equal(held_out[held_out > 0], dense[np.ix_(test_pos, train_pos)][held_out > 0])
    coords = test.coords()
    assert coords["pair"] == list(range(test.D.nnz))
    values = test.observed_data()
    assert values["D"][0] == ("pair",) and values["pair_item"][1].max() < 3
    assert test.subset([2, 0]).D.shape == (2, 9)
    copy = data.copy()
    assert copy == data and copy.pairs is not data.pairs
    coords, observed_data = data.coords(), data.observed_data()
    assert set(coords) == {"item", "pair"} and len(coords["pair"]) == data.n_pairs
    dims, values = observed_data["D"]
    i, k = observed_data["pair_item"][1], observed_data["pair_other_item"][1]
    assert dims == ("pair",) and (i < k).all() and np.array_equal(values, dense[i, k])
