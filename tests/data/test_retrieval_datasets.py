"""The retrieval datasets of issue 13: "images" (thesis ch. 5) and "movielens" (ch. 4).

Both ship as derived ``.npz`` files in ``data/``; loading them needs neither scikit-image nor
Debian's gimp-data nor R. The rebuild scripts are compared with the shipped files when their
sources are installed on this machine, and skipped otherwise.
"""

import importlib.util
import shutil
import struct
import subprocess
from collections import Counter
from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp

from latentzoo.data import (
    Dataset,
    Features,
    list_datasets,
    load,
    load_labels,
    prepare_images,
    prepare_movielens,
)
from latentzoo.data import datasets as ds
from latentzoo.data import image_features as imf
from latentzoo.data.datasets import DatasetUnavailableError
from tests.helpers import load_without

DATA = Path(ds.__file__).parent


def _has_skimage():
    try:
        return importlib.util.find_spec("skimage") is not None
    except ImportError:
        return False


def _shipped(filename, key):
    with np.load(DATA / filename, allow_pickle=False) as npz:
        return npz[key]


def _has_skimage_of_the_shipped_file():
    """scikit-image of the version the shipped images.npz was built with (resampling and
    decoding may change the pixels between versions)."""
    if not _has_skimage():
        return False
    from importlib.metadata import version

    return f"scikit-image {version('scikit-image')} wheel" in str(
        _shipped("images.npz", "class_sources")[0]
    )


def _has_dslabs():
    """R with the dslabs version the shipped movielens.npz was read from."""
    if shutil.which("Rscript") is None:
        return False
    code = "if (requireNamespace('dslabs', quietly = TRUE)) cat(format(packageVersion('dslabs')))"
    done = subprocess.run(["Rscript", "-e", code], capture_output=True, text=True)
    found = done.stdout.strip()
    return bool(found) and f"dslabs {found}" in str(_shipped("movielens.npz", "source"))


needs_skimage = pytest.mark.skipif(
    not _has_skimage_of_the_shipped_file(),
    reason="needs pip install scikit-image of the version images.npz was built with",
)
needs_gimp = pytest.mark.skipif(
    not any(prepare_images.GIMP_PATTERNS.glob("*/*.pat")), reason="needs apt-get install gimp-data"
)
needs_dslabs = pytest.mark.skipif(
    not _has_dslabs(),
    reason="needs apt-get install r-base-core r-cran-dslabs (the version movielens.npz used)",
)


# ---------------------------------------------------------------- images


def test_images_shape_kind_labels_and_names():
    data = load("images")
    assert isinstance(data, Features) and isinstance(data, Dataset)
    assert data.shape == (1136, 240) and data.kind == "real" and not data.is_sparse
    labels = load_labels("images")
    assert labels.tolist() == data.labels.astype(str).tolist()
    counts = Counter(labels.tolist())
    assert len(counts) == 71 and set(counts.values()) == {16}
    assert sum(label.startswith("skimage:") for label in counts) == 13
    assert {"skimage:astronaut", "skimage:brick", "gimp:Stone/brick", "gimp:Wood/pine"} <= set(
        counts
    )
    assert data.feature_names.tolist() == imf.feature_names().tolist()
    items = data.item_names.tolist()
    assert len(set(items)) == 1136 and items[0] == "skimage:astronaut#00"
    assert all(item.rsplit("#", 1)[0] == label for item, label in zip(items, labels, strict=True))


def test_images_features_are_valid_section_5_2_1_features():
    X = load("images").X
    np.testing.assert_allclose(X[:, :165].sum(axis=1), 1.0)  # colour histograms
    assert (X[:, :165] >= 0).all() and (X[:, 165:213] >= 0).all()  # Gabor energies
    coarse, contrast, direction = X[:, 213:222], X[:, 222:231], X[:, 231:240]
    assert coarse.min() >= 1 and coarse.max() <= 32
    assert (
        contrast.min() >= 0 and direction.max() <= 1 + 1e-12 and direction.min() >= 1 - 3 * 15 / 16
    )
    # Every feature varies across the collection (nothing constant to binarise).
    assert (X.std(axis=0) > 0).sum() >= 230


def test_images_npz_is_plain_arrays_with_provenance():
    with np.load(DATA / "images.npz", allow_pickle=False) as npz:
        arrays = {key: npz[key] for key in npz.files}
    assert (DATA / "images.npz").stat().st_size < 5e6
    n_classes = arrays["classes"].size
    assert arrays["class_sources"].shape == arrays["class_licences"].shape == (n_classes,)
    assert all("gimp-data" in s or "scikit-image" in s for s in arrays["class_sources"])
    assert "GPL" in str(arrays["licence"]) and "CC0" in str(arrays["licence"])
    assert "seed" in str(arrays["derivation"])
    assert arrays["crop_origin"].shape == (1136, 2)
    patterns = np.char.startswith(arrays["classes"][arrays["label_codes"]], "gimp:")
    np.testing.assert_array_equal(arrays["crop_scale"][patterns], 1.0)


def test_images_in_the_registry():
    row = list_datasets().set_index("name").loc["images"]
    assert (row["n_rows"], row["n_cols"], row["observations"]) == (1136, 240, load("images").nnz)
    assert row["description"].startswith("Features (real")
    assert "gimp-data" in row["source"] and "scikit-image" in row["source"]
    assert "make prepare-images" in row["source"]
    assert "GPL" in row["licence"] and "CC0" in row["licence"]


def test_gimp_pattern_reader_and_periodic_crops(tmp_path):
    # A 3 x 2 RGBA pattern: transparent pixels become white.
    pixels = np.array(
        [[[255, 0, 0, 255], [0, 0, 0, 0]], [[0, 255, 0, 255], [0, 0, 255, 128]]] * 3, np.uint8
    )[:3]
    header = struct.pack(">5I", 24 + 5, 1, 2, 3, 4) + b"GPAT" + b"test\0"
    path = tmp_path / "t.pat"
    path.write_bytes(header + pixels.tobytes())
    rgb = prepare_images.read_gimp_pattern(path)
    assert rgb.shape == (3, 2, 3) and rgb.dtype == np.uint8
    assert rgb[0, 0].tolist() == [255, 0, 0] and rgb[0, 1].tolist() == [255, 255, 255]
    assert rgb[1, 1].tolist() == [127, 127, 255]
    path.write_bytes(b"\0" * 20 + b"XXXX")
    with pytest.raises(ValueError, match="is not a GIMP pattern"):
        prepare_images.read_gimp_pattern(path)
    pattern = np.random.default_rng(0).integers(0, 256, (20, 30, 3), dtype=np.uint8)
    crops, origins = prepare_images.crop_pattern(pattern, np.random.default_rng(1))
    assert crops.shape == (16, 64, 64, 3)
    for crop, (row, col) in zip(crops, origins, strict=True):
        np.testing.assert_array_equal(crop[:20, :30], np.roll(pattern, (-row, -col), axis=(0, 1)))


@needs_gimp
def test_gimp_patterns_are_readable():
    paths = sorted(prepare_images.GIMP_PATTERNS.glob("*/*.pat"))
    assert len(paths) >= 50
    assert prepare_images.read_gimp_pattern(paths[0]).ndim == 3


@needs_skimage
def test_first_category_is_rebuilt_from_scikit_image():
    from skimage.io import imread

    folder = prepare_images._skimage_folder()
    rng = np.random.default_rng(prepare_images.SEED)
    crops, origins, scale = prepare_images.crop_photograph(imread(folder / "astronaut.png"), rng)
    with np.load(DATA / "images.npz", allow_pickle=False) as npz:
        np.testing.assert_allclose(imf.image_features(crops), npz["X"][:16], rtol=1e-9, atol=1e-12)
        np.testing.assert_array_equal(origins, npz["crop_origin"][:16])
    assert scale == 0.5


@pytest.mark.slow
@needs_skimage
@needs_gimp
def test_prepare_images_check_matches_the_shipped_file(capsys):
    assert prepare_images.main(["--check", "--out", str(DATA / "images.npz")]) == 0
    assert "identical" in capsys.readouterr().out


def test_prepare_images_says_what_is_missing(monkeypatch, tmp_path, capsys):
    monkeypatch.setattr(prepare_images, "GIMP_PATTERNS", tmp_path)
    monkeypatch.setattr(prepare_images, "_skimage_folder", lambda: DATA)
    monkeypatch.setattr(prepare_images, "SKIMAGE_IMAGES", {})
    assert prepare_images.main(["--out", str(tmp_path / "out.npz")]) == 1
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1
    assert "no GIMP patterns" in err and "apt-get install gimp-data" in err
    assert not (tmp_path / "out.npz").exists()


# ---------------------------------------------------------------- movielens


def test_movielens_shape_kind_and_names():
    data = load("movielens")
    assert isinstance(data, Features)
    assert data.shape == (1255, 653) and data.kind == "binary" and data.is_sparse
    assert data.nnz == 38979
    titles = data.item_names.tolist()
    assert len(set(titles)) == 1255
    assert titles[:2] == ["Toy Story (1995)", "Jumanji (1995)"]
    assert {"Star Wars: Episode IV - A New Hope (1977)", "Pulp Fiction (1994)"} <= set(titles)
    assert data.feature_names[0] == "user_2"
    genres = load_labels("movielens")
    assert genres[0] == "Adventure|Animation|Children|Comedy|Fantasy"
    assert genres.tolist() == data.labels.astype(str).tolist()
    # The pruning thresholds hold: >= 10 likes per movie, >= 5 per user.
    liked = data.sparse
    assert np.asarray(liked.sum(axis=1)).min() >= prepare_movielens.MIN_MOVIE_LIKES
    assert np.asarray(liked.sum(axis=0)).min() >= prepare_movielens.MIN_USER_LIKES


def test_movielens_in_the_registry():
    row = list_datasets().set_index("name").loc["movielens"]
    assert (row["n_rows"], row["n_cols"], row["observations"]) == (1255, 653, 38979)
    assert row["description"].startswith("Features (binary, sparse)")
    assert "dslabs" in row["source"] and "make prepare-movielens" in row["source"]
    assert "GroupLens" in row["licence"]


def test_movielens_npz_is_plain_arrays_with_provenance():
    with np.load(DATA / "movielens.npz", allow_pickle=False) as npz:
        assert "ml-latest-small" in str(npz["source"])
        assert "GroupLens" in str(npz["licence"]) and "rating >= 4" in str(npz["derivation"])
        assert np.all(np.diff(npz["movie_ids"]) > 0) and np.all(np.diff(npz["user_ids"]) > 0)


def test_keep_active_is_the_largest_submatrix_meeting_both_thresholds():
    rng = np.random.default_rng(5)
    liked = sp.csr_matrix(rng.random((40, 30)) < 0.15)
    rows, cols = prepare_movielens.keep_active(liked, 3, 2)
    kept = liked[rows][:, cols]
    assert np.asarray(kept.sum(axis=1)).min(initial=3) >= 3
    assert np.asarray(kept.sum(axis=0)).min(initial=2) >= 2
    # Maximal: no dropped row or column could come back without breaking a threshold.
    for row in np.setdiff1d(np.arange(40), rows):
        assert liked[row][:, cols].sum() < 3
    assert np.array_equal(prepare_movielens.keep_active(kept, 3, 2)[0], np.arange(rows.size))


@needs_dslabs
def test_prepare_movielens_rebuilds_the_shipped_file(capsys):
    assert prepare_movielens.main(["--check", "--out", str(DATA / "movielens.npz")]) == 0
    assert "identical" in capsys.readouterr().out


def test_prepare_movielens_says_what_is_missing(monkeypatch, tmp_path, capsys):
    monkeypatch.setattr(shutil, "which", lambda name: None)
    assert prepare_movielens.main(["--out", str(tmp_path / "out.npz")]) == 1
    err = capsys.readouterr().err.strip()
    assert err == (
        "prepare_movielens: Rscript not found: install R and dslabs with: "
        "apt-get install r-base-core r-cran-dslabs"
    )


# ---------------------------------------------------------------- loading without sources


def test_loading_needs_neither_scikit_image_nor_gimp_data_nor_r(tmp_path):
    # A fresh interpreter where skimage cannot be imported and no program (Rscript) is found.
    printed = load_without("skimage", "[load(n).shape for n in ('images', 'movielens')]", tmp_path)
    assert printed == "[(1136, 240), (1255, 653)]"


def test_missing_files_name_the_rebuild_command(monkeypatch, tmp_path):
    monkeypatch.setattr(ds, "__file__", str(tmp_path / "datasets.py"))
    with pytest.raises(DatasetUnavailableError, match=r"images.npz is missing: .*prepare_images"):
        ds._load_images()
    with pytest.raises(ValueError, match=r"movielens.npz is missing: .*make prepare-movielens"):
        ds._load_movielens()


def test_corrupt_files_are_reported(monkeypatch, tmp_path):
    monkeypatch.setattr(ds, "__file__", str(tmp_path / "datasets.py"))
    np.savez(tmp_path / "images.npz", X=np.zeros((2, 240)))
    with pytest.raises(ValueError, match=r"images.npz lacks the arrays \['feature_names'"):
        ds._load_images()
    with np.load(DATA / "movielens.npz", allow_pickle=False) as npz:
        arrays = {key: npz[key] for key in npz.files}
    arrays["indices"] = arrays["indices"] + 1000
    np.savez(tmp_path / "movielens.npz", **arrays)
    with pytest.raises(ValueError, match="movielens.npz: inconsistent CSR arrays"):
        ds._load_movielens()
