"""Rebuild ``data/senate109.npz`` and ``data/senate106.npz``: US Senate roll calls, senators x votes.

The thesis (chapter 8, Fig. 8.6 and Table 8.1) fits the Bayesian Partial Membership model to
the roll calls of the 107th Senate (2001-2002, Jakulin 2004). That matrix is not available
offline; two other Senates of Keith Poole's roll-call data are, in Debian's R packages:

* ``senate109``: the 109th Senate (2005-2006), ``pscl::s109`` (Debian ``r-cran-pscl``), a
  ``rollcall`` object: votes coded 1-3 yea, 4-6 nay, 7-9 not voting or missing, 0 not in the
  Senate (Poole and Rosenthal's codes, read from the object's ``codes``), with the party and
  state of each member and the result of each vote. Its first row is the President's position
  (``"BUSH (R USA)"``), not a senator: it is dropped.
* ``senate106``: the 106th Senate (1999-2000), ``MCMCpack::Senate`` (Debian
  ``r-cran-mcmcpack``): columns ``id``, ``statecode``, ``state``, ``party`` (1 Republican, 0
  Democrat), ``member``, then one column per roll call coded 1 yea, 0 nay, NA missing.

Both are read, once, from R (``Rscript``) as CSV text, as
:mod:`latentzoo.data.prepare_rdata` does, and shipped as small ``.npz`` files that
``load("senate109")``/``load("senate106")`` read without R.

Derivation, the same for both:

* ``X[i, j]`` is 1 for yea, 0 for nay and NaN for a vote that senator ``i`` did not cast
  (absent, abstained, or not yet or no longer in the Senate);
* votes whose minority side is under :data:`MIN_MINORITY_SHARE` = 2.5 % of the senators
  voting on them are dropped as (nearly) unanimous, as is usual in ideal-point work (e.g.
  W-NOMINATE's default): they carry almost no information on who sides with whom; the number
  dropped is recorded in ``derivation``;
* senators with no vote left are dropped (none, in both Senates, as it happens).

Result: 109th, 101 senators (55 R, 45 D with Corzine and his successor Menendez, 1 I:
Jeffords) x 520 votes (125 of 645 dropped), 3.3 % of entries NaN; 106th, 102 senators (56 R
with both Chafees and Coverdell, 46 D with Coverdell's successor Miller) x 540 votes (132 of
672 dropped), 4.2 % NaN.
* senators are named ``"NAME (P ST)"``, party and postal state code: the 109th's names are
  ``s109``'s own (``"JEFFORDS (Indep VT)"``); the 106th's are built in that style from
  ``member``, ``party`` and ``statecode`` (``"SMITH (R NH)"``; John and Lincoln Chafee stay
  ``CHAFFEE1`` and ``CHAFFEE2`` as MCMCpack spells them), its ICPSR state codes mapped to
  postal codes through ``s109``'s own table of both.

Each file holds (plain arrays: ``np.load(..., allow_pickle=False)`` reads it): ``X``
(``float64 (N, M)``), ``names``, ``party`` (``"R"``, ``"D"`` or ``"I"``) and ``states``
(unicode, per senator), ``vote_ids`` (unicode, per vote: ``"session-number"`` for the 109th,
``"rc<k>"`` for the 106th), for the 109th ``outcome`` (``float64`` per vote: 1 passed, agreed
to or confirmed, 0 rejected, NaN otherwise; the thesis adds the outcome as a pseudo-senator)
and the unicode scalars ``source``, ``licence`` and ``derivation`` (with the R and package
versions used).

Run from the repository root, as root for ``apt-get`` (``make prepare-senate`` does the last
step)::

    apt-get install r-base-core r-cran-pscl r-cran-mcmcpack
    python -m latentzoo.data.prepare_senate            # writes data/senate109.npz, data/senate106.npz
    python -m latentzoo.data.prepare_senate --check    # rebuilds and compares only
"""

from __future__ import annotations

import io
import sys
from pathlib import Path

import numpy as np
import pandas as pd

from .rebuild import PROVENANCE, rebuild_folder_main, rscript

__all__ = ["MIN_MINORITY_SHARE", "NAMES", "build", "drop_lopsided", "main", "same_votes"]

FOLDER = Path(__file__).parent
APT = "apt-get install r-base-core r-cran-pscl r-cran-mcmcpack"
_NEEDS = "R, pscl and MCMCpack"
#: Votes whose minority side (yea or nay) is below this share of those voting are dropped.
MIN_MINORITY_SHARE = 0.025
#: The datasets this script writes, ``data/{name}.npz``.
NAMES = ("senate109", "senate106")

_PARTY_LETTER = {"R": "R", "D": "D", "Indep": "I"}
_SOURCES = {
    "senate109": (
        "pscl",
        "the R package pscl (S. Jackman; s109: the 109th US Senate, 2005-2006, a rollcall "
        "object of Keith Poole's voteview data, scraped from the Senate's web site by Jeff "
        "Lewis)",
        "pscl is GPL-2; the roll-call votes are public record",
    ),
    "senate106": (
        "MCMCpack",
        "the R package MCMCpack (A. D. Martin, K. M. Quinn, J. H. Park; Senate: the 106th US "
        "Senate, 1999-2000, Keith Poole (2005), 106th Roll Call Vote Data)",
        "MCMCpack is GPL-3; the roll-call votes are public record",
    ),
}


def _read_csv(code: str) -> pd.DataFrame:
    """The CSV text that the R ``code`` writes to standard output, as a DataFrame."""
    text = rscript(code, _NEEDS, APT)
    return pd.read_csv(io.StringIO(text), keep_default_na=False, na_values=["NA"])


def _versions(package: str) -> str:
    return rscript(
        f"cat(R.version.string, '/ {package}', as.character(packageVersion('{package}')))",
        _NEEDS,
        APT,
    ).strip()


def drop_lopsided(X: np.ndarray, min_share: float = MIN_MINORITY_SHARE) -> np.ndarray:
    """Which votes (columns of ``X``: 1 yea, 0 nay, NaN not cast) to keep: those whose minority
    side is at least ``min_share`` of the senators who voted, and on which anyone voted.

    Examples
    --------
    >>> X = np.array([[1, 1, 0], [1, 0, np.nan], [1, 1, np.nan]] + [[1, 1, 1]] * 38)
    >>> drop_lopsided(X).tolist()  # 0/41 and 1/41 nays are under 2.5 %, 1/39 is not
    [False, False, True]
    """
    yeas = np.nansum(X, axis=0)
    voting = np.sum(~np.isnan(X), axis=0)
    minority = np.minimum(yeas, voting - yeas)
    return (voting > 0) & (minority >= min_share * voting)


def _read_s109() -> tuple[pd.DataFrame, np.ndarray, pd.DataFrame, dict]:
    """``s109``'s members (name, party, state, icpsrState), vote codes, votes (id, result)
    and its code table."""
    members = _read_csv(
        "data(s109, package = 'pscl'); "
        "write.csv(data.frame(name = rownames(s109$votes), party = s109$legis.data$party, "
        "state = s109$legis.data$state, icpsrState = s109$legis.data$icpsrState), stdout(), "
        "row.names = FALSE)"
    )
    codes = _read_csv(
        "data(s109, package = 'pscl'); write.csv(s109$votes, stdout(), row.names = FALSE)"
    ).to_numpy(dtype=np.float64)
    votes = _read_csv(
        "data(s109, package = 'pscl'); "
        "write.csv(data.frame(id = colnames(s109$votes), result = s109$vote.data$result), "
        "stdout(), row.names = FALSE)"
    )
    table = _read_csv(
        "data(s109, package = 'pscl'); "
        "write.csv(stack(lapply(s109$codes, as.numeric)), stdout(), row.names = FALSE)"
    )
    code_table = {
        kind: table.loc[table["ind"] == kind, "values"].to_numpy() for kind in table["ind"]
    }
    return members, codes, votes, code_table


def _senate109() -> tuple[np.ndarray, dict]:
    members, codes, votes, code_table = _read_s109()
    X = np.full(codes.shape, np.nan)
    X[np.isin(codes, code_table["yea"])] = 1.0
    X[np.isin(codes, code_table["nay"])] = 0.0
    known = np.concatenate([code_table[k] for k in ("yea", "nay", "missing", "notInLegis")])
    if not np.isin(codes, known).all():
        raise ValueError("senate109: s109 holds vote codes outside its own code table")
    senators = (members["state"] != "USA").to_numpy()  # the President's row is not a senator
    result = votes["result"].astype(str)
    outcome = np.where(
        result.isin(["Passed", "Agreed to", "Confirmed"]),
        1.0,
        np.where(result == "Rejected", 0.0, np.nan),
    )
    arrays = {
        "names": members["name"].to_numpy(dtype=str),
        "party": members["party"].map(_PARTY_LETTER).to_numpy(dtype=str),
        "states": members["state"].to_numpy(dtype=str),
        "vote_ids": votes["id"].to_numpy(dtype=str),
        "outcome": outcome,
    }
    note = (
        "s109$votes (codes 1-3 yea -> 1, 4-6 nay -> 0, 7-9 missing and 0 not in the Senate "
        "-> NaN, from s109$codes); the President's row (BUSH (R USA)) dropped; outcome from "
        "s109$vote.data$result (Passed/Agreed to/Confirmed -> 1, Rejected -> 0, other -> NaN)"
    )
    return _select(X, arrays, senators, note)


def _senate106() -> tuple[np.ndarray, dict]:
    frame = _read_csv(
        "data(Senate, package = 'MCMCpack'); write.csv(Senate, stdout(), row.names = TRUE)"
    )
    members, _, _, _ = _read_s109()
    postal = dict(zip(members["icpsrState"], members["state"], strict=False))
    postal.pop(99, None)  # ICPSR 99 is s109's "USA" of the President
    statecode = frame["statecode"].to_numpy()
    if not np.isin(statecode, list(postal)).all():
        raise ValueError("senate106: an ICPSR state code of Senate is not in s109's table")
    party = frame["party"].map({1: "R", 0: "D"})
    if party.isna().any():
        raise ValueError("senate106: Senate's party column holds a code other than 0 and 1")
    vote_columns = list(frame.columns[6:])
    X = frame[vote_columns].to_numpy(dtype=np.float64)
    if not np.isin(X[~np.isnan(X)], (0.0, 1.0)).all():
        raise ValueError("senate106: Senate holds a vote other than 0, 1 and NA")
    states = np.array([postal[code] for code in statecode], dtype=str)
    # MCMCpack tells the two Smiths apart as SMITH.NH and SMITH.OR; the state now does.
    member = frame["member"].astype(str).str.replace(r"\.[A-Z]{2}$", "", regex=True)
    names = member + " (" + party + " " + states + ")"
    arrays = {
        "names": names.to_numpy(dtype=str),
        "party": party.to_numpy(dtype=str),
        "states": states,
        "vote_ids": np.asarray(vote_columns, dtype=str),
    }
    note = (
        "MCMCpack's Senate vote columns (1 yea, 0 nay, NA -> NaN); party 1 -> R, 0 -> D; ICPSR "
        "state codes mapped to postal codes through pscl::s109's legis.data; names MEMBER (P "
        "ST), a state suffix of MEMBER (SMITH.NH) removed"
    )
    return _select(X, arrays, np.ones(len(frame), dtype=bool), note)


def _select(X: np.ndarray, arrays: dict, rows: np.ndarray, note: str) -> tuple[np.ndarray, dict]:
    """Drop the (nearly) unanimous votes, then the senators with no vote left; the derivation
    note says how many of each."""
    X = X[rows]
    arrays = {
        key: value[rows] if key in ("names", "party", "states") else value
        for key, value in arrays.items()
    }
    votes = drop_lopsided(X)
    X = X[:, votes]
    arrays = {
        key: value[votes] if key in ("vote_ids", "outcome") else value
        for key, value in arrays.items()
    }
    senators = ~np.isnan(X).all(axis=1)
    X = X[senators]
    arrays = {
        key: value[senators] if key in ("names", "party", "states") else value
        for key, value in arrays.items()
    }
    if len(set(arrays["names"].tolist())) != arrays["names"].size:
        raise ValueError("two senators have the same name")
    note += (
        f"; {int((~votes).sum())} of {votes.size} votes dropped as (nearly) unanimous (minority "
        f"side under {MIN_MINORITY_SHARE:.1%} of those voting), {int((~senators).sum())} "
        f"senators with no vote left dropped; {X.shape[0]} senators x {X.shape[1]} votes, "
        f"{np.isnan(X).mean():.1%} of entries NaN (not cast)"
    )
    return X, {**arrays, "note": note}


def build(name: str) -> dict[str, np.ndarray]:
    """The arrays of ``data/{name}.npz`` (see the module docstring), read from R."""
    package, source, licence = _SOURCES[name]
    X, arrays = _senate109() if name == "senate109" else _senate106()
    note = arrays.pop("note")
    return {
        "X": X,
        **arrays,
        "source": np.array(f"{source}; read with Rscript ({_versions(package)})"),
        "licence": np.array(licence),
        "derivation": np.array(f"{note}; built by python -m latentzoo.data.prepare_senate"),
    }


def same_votes(npz, arrays: dict) -> bool:
    """Whether the file ``npz`` holds the arrays of ``arrays``, the provenance strings aside
    (their R versions may differ between machines), NaN (a vote not cast) equal to NaN.

    Examples
    --------
    >>> import tempfile
    >>> out = Path(tempfile.mkdtemp()) / "x.npz"
    >>> np.savez(out, X=np.array([1.0, np.nan]), source=np.array("R 4.2.2"))
    >>> with np.load(out, allow_pickle=False) as npz:
    ...     same_votes(npz, {"X": np.array([1.0, np.nan]), "source": np.array("R 4.3.0")})
    True
    """
    return set(npz.files) == set(arrays) and all(
        np.array_equal(npz[key], value, equal_nan=value.dtype.kind == "f")
        for key, value in arrays.items()
        if key not in PROVENANCE
    )


def main(argv=None) -> int:
    return rebuild_folder_main("prepare_senate", NAMES, build, __doc__, FOLDER, argv, same_votes)


if __name__ == "__main__":
    sys.exit(main())
