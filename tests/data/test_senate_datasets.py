"""The bundled Senate roll calls ("senate109", "senate106") and their rebuild script (issue 26).

The vote matrices ship as derived ``.npz`` files in ``data/``; loading them needs no R. The
rebuild script is checked against the shipped files when R, pscl and MCMCpack are installed on
this machine, and skipped otherwise.
"""

import shutil
from collections import Counter
from pathlib import Path

import numpy as np
import pytest

from latentzoo.data import Features, list_datasets, load, load_labels, prepare_senate
from latentzoo.data import datasets as ds
from latentzoo.data.datasets import DatasetUnavailableError
from tests.helpers import load_without, r_has_packages

DATA = Path(ds.__file__).parent
#: name -> (senators, votes kept, votes in the source, party counts)
EXPECTED = {
    "senate109": (101, 520, 645, {"R": 55, "D": 45, "I": 1}),
    "senate106": (102, 540, 672, {"R": 56, "D": 46}),
}


def _shipped(name: str) -> dict:
    with np.load(DATA / f"{name}.npz", allow_pickle=False) as npz:
        return {key: npz[key] for key in npz.files}


@pytest.mark.parametrize("name", list(EXPECTED))
def test_shipped_files_hold_plain_arrays_shapes_and_provenance(name):
    senators, votes, source_votes, _ = EXPECTED[name]
    arrays = _shipped(name)
    X = arrays["X"]
    assert X.dtype == np.float64 and X.shape == (senators, votes)
    assert np.isin(X[~np.isnan(X)], (0.0, 1.0)).all()
    for key in ("names", "party", "states"):
        assert arrays[key].dtype.kind == "U" and arrays[key].shape == (senators,)
    assert arrays["vote_ids"].shape == (votes,) and len(set(arrays["vote_ids"].tolist())) == votes
    assert len(set(arrays["names"].tolist())) == senators
    # No senator without a vote, no vote without voters.
    assert (~np.isnan(X)).any(axis=1).all() and (~np.isnan(X)).any(axis=0).all()
    package = "pscl" if name == "senate109" else "MCMCpack"
    assert package in str(arrays["source"]) and "R version" in str(arrays["source"])
    assert "GPL" in str(arrays["licence"]) and "public record" in str(arrays["licence"])
    derivation = str(arrays["derivation"])
    assert f"{source_votes - votes} of {source_votes} votes dropped" in derivation
    assert "prepare_senate" in derivation


@pytest.mark.parametrize("name", list(EXPECTED))
def test_no_kept_vote_is_nearly_unanimous(name):
    X = _shipped(name)["X"]
    assert prepare_senate.drop_lopsided(X).all()
    yeas, cast = np.nansum(X, axis=0), (~np.isnan(X)).sum(axis=0)
    assert (np.minimum(yeas, cast - yeas) >= prepare_senate.MIN_MINORITY_SHARE * cast).all()


@pytest.mark.parametrize("name", list(EXPECTED))
def test_load_gives_binary_features_with_party_labels(name):
    senators, votes, _, parties = EXPECTED[name]
    data = load(name)
    assert isinstance(data, Features) and data.kind == "binary"
    assert data.shape == (senators, votes)
    labels = load_labels(name)
    assert Counter(labels.tolist()) == parties
    assert np.array_equal(labels, data.labels.astype(str))
    arrays = _shipped(name)
    assert np.array_equal(data.item_names, arrays["names"])
    assert np.array_equal(labels, arrays["party"])
    # Cast votes are as shipped; a vote not cast is the roll call's majority side.
    X, cast = arrays["X"], ~np.isnan(arrays["X"])
    assert np.array_equal(data.X[cast], X[cast])
    majority = (2 * np.nansum(X, axis=0) >= cast.sum(axis=0)).astype(float)
    rows, cols = np.nonzero(~cast)
    assert rows.size and np.array_equal(data.X[rows, cols], majority[cols])


def test_senate109_members_and_outcome():
    arrays = _shipped("senate109")
    names = arrays["names"].tolist()
    assert names[0] == "SESSIONS (R AL)" and not any("USA" in n for n in names)
    assert "JEFFORDS (Indep VT)" in names and "OBAMA (D IL)" in names
    # Corzine left for the governorship of New Jersey; Menendez took his seat.
    X = arrays["X"]
    corzine, menendez = names.index("CORZINE (D NJ)"), names.index("MENENDEZ (D NJ)")
    assert not (~np.isnan(X[corzine]) & ~np.isnan(X[menendez])).any()
    outcome = arrays["outcome"]
    assert outcome.shape == (X.shape[1],) and np.isin(outcome[~np.isnan(outcome)], (0, 1)).all()
    assert np.isnan(outcome).sum() <= 2


def test_senate106_members():
    names = load("senate106").item_names.tolist()
    assert {"SMITH (R NH)", "SMITH (R OR)", "KENNEDY (D MA)", "JEFFORDS (R VT)"} <= set(names)
    assert {"COVERDELL (R GA)", "MILLER (D GA)", "CHAFFEE1 (R RI)", "CHAFFEE2 (R RI)"} <= set(names)


def test_parties_separate_on_the_votes():
    # A sanity check of the coding: senators agree far more often within a party than across.
    for name in EXPECTED:
        data, labels = load(name), load_labels(name)
        X = data.X
        agreement = (X @ X.T + (1 - X) @ (1 - X).T) / X.shape[1]
        same = labels[:, None] == labels[None, :]
        off = ~np.eye(len(labels), dtype=bool)
        assert agreement[same & off].mean() > agreement[~same].mean() + 0.3, name


def test_list_datasets_rows():
    table = list_datasets().set_index("name")
    for name, (senators, votes, _, _) in EXPECTED.items():
        row = table.loc[name]
        assert (row["n_rows"], row["n_cols"]) == (senators, votes)
        assert row["description"].startswith("Features (binary)")
        assert (
            "107th Senate" in row["description"] and "not available offline" in row["description"]
        )
        assert "shipped in the package" in row["source"] and "make prepare-senate" in row["source"]
        assert "public record" in row["licence"]
    assert "GPL-2" in table.loc["senate109", "licence"]
    assert "GPL-3" in table.loc["senate106", "licence"]


def test_loading_needs_no_r(tmp_path):
    printed = load_without("rpy2", "[load(n).shape for n in ('senate109', 'senate106')]", tmp_path)
    assert printed == "[(101, 520), (102, 540)]"


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_missing_file_names_the_rebuild_command(name, monkeypatch, tmp_path):
    monkeypatch.setattr(ds, "__file__", str(tmp_path / "datasets.py"))
    with pytest.raises(DatasetUnavailableError, match=rf"{name}.npz is missing: .*prepare-senate"):
        ds._load_senate(f"{name}.npz")


# ---------------------------------------------------------------- the rebuild script


def test_prepare_senate_fails_in_one_line_without_r(monkeypatch, tmp_path, capsys):
    monkeypatch.setattr(shutil, "which", lambda name: None)
    assert prepare_senate.main(["--out", str(tmp_path)]) == 1
    error = capsys.readouterr().err
    assert error.count("\n") == 1 and "r-cran-pscl r-cran-mcmcpack" in error
    assert not list(tmp_path.iterdir())


def test_same_votes_treats_nan_as_equal_and_ignores_provenance(tmp_path):
    out = tmp_path / "x.npz"
    np.savez(out, X=np.array([1.0, np.nan]), source=np.array("R 4.2.2"))
    with np.load(out, allow_pickle=False) as npz:
        assert prepare_senate.same_votes(
            npz, {"X": np.array([1.0, np.nan]), "source": np.array("R 4.5")}
        )
        assert not prepare_senate.same_votes(
            npz, {"X": np.array([1.0, 0.0]), "source": np.array("")}
        )
        assert not prepare_senate.same_votes(npz, {"X": np.array([1.0, np.nan])})


@pytest.mark.skipif(
    not r_has_packages("pscl", "MCMCpack"), reason="R with pscl and MCMCpack is not installed"
)
def test_prepare_senate_rebuilds_the_shipped_files():
    assert prepare_senate.main(["--check"]) == 0
