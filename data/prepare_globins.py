"""Rebuild ``data/globins45.npz``: Smith-Waterman dissimilarities of 45 globin sequences.

Hofmann & Buhmann (1997, sec. 6.2, Fig. 3) cluster and embed protein sequences of the globin
family from their pairwise alignment scores. This script prepares the same kind of data from
the 45 globins of HMMER's tutorial (``tutorial/globins45.fa``), which Debian ships in the
package ``hmmer-examples``. A fresh machine running the README's commands has neither that
package nor Biopython, so the matrix is computed once here and shipped as a small ``.npz``;
``load("globins")`` reads that file and needs neither.

Derivation:

* the 45 sequences of ``globins45.fa`` in file order; the item names are the Swiss-Prot entry
  names of the FASTA headers (``MYG_HORSE``, ``HBA2_GALCR``, ...);
* the family label of a sequence is the first three letters of its name: ``MYG`` (myoglobins,
  7), ``HBA`` (haemoglobin alpha chains, 19, including the alpha-like ``HBAD``, ``HBAZ`` and
  ``HBA4``), ``HBB`` (beta chains, 18, including ``HBB1``, ``HBB2``, ``HBBL``) and ``HBE``
  (the one epsilon chain, ``HBE_PONPY``);
* every pair ``i <= j`` (self-pairs included) is scored by local alignment (Smith-Waterman)
  with Biopython's ``PairwiseAligner``: BLOSUM62, gap open -10, gap extend -0.5 (a gap of
  length ``L`` scores ``-10 - 0.5 (L - 1)``; EMBOSS water's defaults). All scores are
  multiples of 0.5, hence exact in float64;
* the similarity scores ``s_ij`` become dissimilarities
  ``D_ij = s_ii + s_jj - 2 s_ij``: if the scores were inner products of sequence
  representations this is their squared Euclidean distance, the case in which pairwise
  clustering (eq. (16)) and central clustering (eq. (9)) coincide. The diagonal is zero;
  ``D`` is symmetric and non-negative (checked; the self-score of a globin is well above its
  score against any other sequence). Units are BLOSUM62 half-bits.

The file holds (plain arrays: ``np.load(..., allow_pickle=False)`` reads it):

``D``
    ``float64 (45, 45)`` dissimilarities.
``S``
    ``float64 (45, 45)`` the raw local-alignment scores ``s_ij``, for other transforms.
``names``, ``labels``, ``sequences``
    Unicode ``(45,)``: entry names, family labels, the amino-acid sequences.
``source``, ``licence``, ``derivation``, ``source_sha256``
    Unicode scalars: provenance and a SHA-256 digest of ``globins45.fa``.

Run from the repository root, as root for ``apt-get`` (``make prepare-globins`` does the last
two steps)::

    apt-get install hmmer-examples
    pip install biopython
    python -m latentzoo.data.prepare_globins            # writes data/globins45.npz
    python -m latentzoo.data.prepare_globins --check    # rebuilds and compares only

``--fasta PATH`` reads another copy of ``globins45.fa``. The arrays are deterministic: a
rebuild stores identical arrays, which is what ``--check`` verifies.
"""

from __future__ import annotations

import hashlib
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np

from .rebuild import PrepareError, rebuild, rebuild_parser

__all__ = [
    "DEBIAN_PATH",
    "alignment_scores",
    "build",
    "family",
    "find_fasta",
    "main",
    "read_fasta",
    "write_npz",
]

OUTPUT = Path(__file__).with_name("globins45.npz")
#: Where Debian's ``hmmer-examples`` 3.3.2 puts the file.
DEBIAN_PATH = Path("/usr/share/doc/hmmer/examples/tutorial/globins45.fa")
APT = "apt-get install hmmer-examples"
GAP_OPEN, GAP_EXTEND = -10.0, -0.5

SOURCE = (
    "the 45 globin sequences of HMMER's tutorial file tutorial/globins45.fa (Swiss-Prot "
    "entries), as shipped by Debian's hmmer-examples 3.3.2+dfsg-1 "
    "(/usr/share/doc/hmmer/examples/tutorial/globins45.fa); scored by Smith-Waterman with "
    "Biopython's PairwiseAligner (BLOSUM62, gap open -10, extend -0.5)"
)
LICENCE = (
    "sequences: UniProtKB/Swiss-Prot, CC BY 4.0 (attribution: The UniProt Consortium); "
    "HMMER (S. R. Eddy and the HMMER team) is BSD-3-Clause upstream since 3.1, GPL-3 in "
    "Debian's copyright file; the derived score and dissimilarity matrices are redistributed "
    "under CC BY 4.0 with these attributions"
)
DERIVATION = (
    "45 sequences in file order; label = first three letters of the entry name (MYG, HBA, "
    "HBB, HBE); local alignment scores s_ij (BLOSUM62, gap open -10, extend -0.5, Biopython "
    "PairwiseAligner mode='local'); D_ij = s_ii + s_jj - 2 s_ij; built by python -m "
    "latentzoo.data.prepare_globins"
)


def find_fasta() -> Path:
    """Path of ``globins45.fa`` from Debian's ``hmmer-examples`` (``dpkg -L``, else its default).

    Raises
    ------
    PrepareError
        If the package is not installed.

    Examples
    --------
    >>> find_fasta().name  # doctest: +SKIP
    'globins45.fa'
    """
    if DEBIAN_PATH.is_file():
        return DEBIAN_PATH
    if shutil.which("dpkg"):
        listed = subprocess.run(
            ["dpkg", "-L", "hmmer-examples"], capture_output=True, text=True, check=False
        )
        for line in listed.stdout.splitlines():
            if line.endswith("/globins45.fa") and Path(line).is_file():
                return Path(line)
    raise PrepareError(
        f"globins45.fa not found: install Debian's hmmer-examples ({APT}) or pass --fasta PATH"
    )


def read_fasta(path: Path) -> tuple[list[str], list[str]]:
    """Names (first word of each header) and sequences (upper case) of a FASTA file.

    Examples
    --------
    >>> import tempfile
    >>> with tempfile.NamedTemporaryFile("w", suffix=".fa", delete=False) as f:
    ...     _ = f.write(">MYG_A first\\nVLS\\nDA\\n>HBB_B\\nvhl\\n")
    >>> read_fasta(Path(f.name))
    (['MYG_A', 'HBB_B'], ['VLSDA', 'VHL'])
    """
    names, sequences = [], []
    for line in Path(path).read_text().splitlines():
        line = line.strip()
        if line.startswith(">"):
            names.append(line[1:].split()[0])
            sequences.append("")
        elif line:
            if not names:
                raise ValueError(f"{path}: sequence data before the first '>' header")
            sequences[-1] += line.upper()
    if not names or not all(sequences):
        raise ValueError(f"{path}: no sequences, or a header without a sequence")
    return names, sequences


def family(name: str) -> str:
    """Globin family of a Swiss-Prot entry name: its first three letters.

    Examples
    --------
    >>> [family(n) for n in ("MYG_HORSE", "HBA2_GALCR", "HBAZ_HORSE", "HBBL_RANCA", "HBE_PONPY")]
    ['MYG', 'HBA', 'HBA', 'HBB', 'HBE']
    """
    return name[:3]


def alignment_scores(sequences: list[str]) -> np.ndarray:
    """Symmetric matrix of Smith-Waterman scores (BLOSUM62, gaps -10 / -0.5), diagonal included.

    Raises
    ------
    PrepareError
        If Biopython is not installed.

    Examples
    --------
    >>> alignment_scores(["HEAGAWGHEE", "PAWHEAE"])  # doctest: +SKIP
    array([[62., 18.],
           [18., 44.]])
    """
    try:
        from Bio.Align import PairwiseAligner, substitution_matrices
    except ImportError as error:
        raise PrepareError(
            "Biopython is not installed: install it with: pip install biopython"
        ) from error
    aligner = PairwiseAligner(
        mode="local",
        substitution_matrix=substitution_matrices.load("BLOSUM62"),
        open_gap_score=GAP_OPEN,
        extend_gap_score=GAP_EXTEND,
    )
    n = len(sequences)
    first, second = np.triu_indices(n)
    # ~1000 dynamic programs of ~150 x 150 cells in Biopython's C code: a few seconds, once.
    upper = np.array(
        [aligner.score(sequences[i], sequences[j]) for i, j in zip(first, second, strict=True)]
    )
    scores = np.zeros((n, n))
    scores[first, second] = upper
    scores[second, first] = upper
    return scores


def build(path: Path) -> dict[str, np.ndarray]:
    """The arrays of ``globins45.npz`` (see the module docstring) from a FASTA file."""
    names, sequences = read_fasta(path)
    S = alignment_scores(sequences)
    self_scores = np.diag(S)
    D = self_scores[:, None] + self_scores[None, :] - 2 * S
    if np.any(D < 0):
        i, j = np.argwhere(D < 0)[0]
        raise ValueError(f"D[{i}, {j}] = {D[i, j]} is negative: s_ij exceeds (s_ii + s_jj) / 2")
    return {
        "D": D,
        "S": S,
        "names": np.array(names),
        "labels": np.array([family(name) for name in names]),
        "sequences": np.array(sequences),
        "source": np.array(SOURCE),
        "licence": np.array(LICENCE),
        "derivation": np.array(DERIVATION),
        "source_sha256": np.array(hashlib.sha256(Path(path).read_bytes()).hexdigest()),
    }


def write_npz(arrays: dict[str, np.ndarray], out: Path) -> None:
    """Store the arrays of :func:`build` (compressed, loadable with ``allow_pickle=False``)."""
    np.savez_compressed(out, **arrays)


def main(argv=None) -> int:
    parser = rebuild_parser(__doc__, OUTPUT, "target .npz file")
    parser.add_argument("--fasta", type=Path, help="globins45.fa (default: hmmer-examples')")
    args = parser.parse_args(argv)

    def build_from_fasta():
        source = find_fasta() if args.fasta is None else args.fasta
        if not source.is_file():
            raise PrepareError(f"{source} does not exist")
        arrays = build(source)
        print(f"{arrays['D'].shape[0]} sequences from {source}")
        return arrays

    return rebuild("prepare_globins", build_from_fasta, args.out, args.check)


if __name__ == "__main__":
    sys.exit(main())
