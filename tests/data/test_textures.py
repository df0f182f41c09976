"""Texture mosaics for segmentation (issue 28): the shipped tiles, ``load("texture-mosaic")``
and the Gabor histogram features of :mod:`latentzoo.data.texture_features`."""

from pathlib import Path

import numpy as np
import pytest

from latentzoo.data import load, load_labels, prepare_textures
from latentzoo.data.texture_mosaic import MIN_CELL_SHARE, TextureMosaic, compose_mosaic

DATA = Path(prepare_textures.__file__).parent


# ---------------------------------------------------------------- shipped tiles


def test_shipped_textures_are_grey_periodic_tiles_with_provenance():
    with np.load(DATA / "textures.npz", allow_pickle=False) as npz:
        textures, names = npz["textures"], npz["names"]
        licences, sources = npz["texture_licences"], npz["texture_sources"]
    tile = prepare_textures.TILE
    n_sources = len(prepare_textures.GIMP_TEXTURES) + len(prepare_textures.OPENARENA_TEXTURES)
    assert textures.shape == (n_sources, tile, tile) and textures.dtype == np.uint8
    assert len(set(names)) == n_sources == len(licences) == len(sources)
    assert all("GPL" in licence for licence in licences)
    # Textured, not flat: every tile spreads over many grey levels.
    assert (textures.reshape(n_sources, -1).std(axis=1) > 5).all()


@pytest.mark.skipif(
    not (prepare_textures.GIMP_PATTERNS.is_dir() and prepare_textures.OPENARENA_PK3.is_file()),
    reason="needs Debian's gimp-data and openarena-081-textures",
)
def test_rebuild_check_matches_the_shipped_file():
    assert prepare_textures.main(["--check"]) == 0


# ---------------------------------------------------------------- mosaics


def test_same_seed_same_mosaic_and_other_seed_other_mosaic():
    first = load("texture-mosaic", n_textures=5, size=128, random_state=7)
    again = load("texture-mosaic", n_textures=5, size=128, random_state=7)
    other = load("texture-mosaic", n_textures=5, size=128, random_state=8)
    assert isinstance(first, TextureMosaic)
    assert np.array_equal(first.image, again.image) and np.array_equal(first.labels, again.labels)
    assert np.array_equal(first.texture_names, again.texture_names)
    assert not np.array_equal(first.labels, other.labels)


@pytest.mark.parametrize("n_textures, size", [(2, 64), (5, 256), (8, 96)])
def test_label_map_covers_every_texture(n_textures, size):
    mosaic = load("texture-mosaic", n_textures=n_textures, size=size, random_state=1)
    assert mosaic.image.shape == mosaic.labels.shape == (size, size)
    assert mosaic.image.dtype == np.float64 and 0 <= mosaic.image.min() <= mosaic.image.max() <= 1
    areas = np.bincount(mosaic.labels.ravel(), minlength=n_textures)
    assert areas.size == n_textures == len(set(mosaic.texture_names))
    assert areas.min() >= MIN_CELL_SHARE * size * size / n_textures


def test_each_cell_shows_its_texture_repeated_periodically():
    tiles = np.arange(3 * 4 * 4, dtype=np.float64).reshape(3, 4, 4) / 47
    mosaic = compose_mosaic(tiles, ["a", "b", "c"], 3, size=32, random_state=2)
    for label, name in enumerate(mosaic.texture_names):
        tile = tiles["abc".index(name)]
        rows, cols = np.nonzero(mosaic.labels == label)
        # One offset per texture: the pixel value fixes (row + dr, col + dc) mod 4.
        values = mosaic.image[rows, cols]
        assert np.isin(values, tile).all()
        flat = np.searchsorted(np.sort(tile.ravel()), values)
        where = np.argsort(tile.ravel())[flat]
        assert len(set(zip((where // 4 - rows) % 4, (where % 4 - cols) % 4, strict=True))) == 1


def test_mosaic_copies_are_independent():
    mosaic = load("texture-mosaic", n_textures=2, size=32, random_state=0)
    copy = mosaic.copy()
    copy.image[:] = 0
    assert mosaic.image.max() > 0


def test_mosaic_options_are_checked():
    with pytest.raises(ValueError, match=r"n_textures must lie in \[2, 16\], got 17"):
        load("texture-mosaic", n_textures=17)
    with pytest.raises(ValueError, match="size must lie in"):
        load("texture-mosaic", size=8)
    with pytest.raises(TypeError):
        load("texture-mosaic", colour=True)
    with pytest.raises(TypeError, match="dataset 'toy' takes no options"):
        load("toy", size=3)
    with pytest.raises(ValueError, match="its labels come with it"):
        load_labels("texture-mosaic")
