"""Texture mosaics for segmentation (issue 28): the shipped tiles, ``load("texture-mosaic")``
and the Gabor histogram features of :mod:`latentzoo.data.texture_features`."""

from pathlib import Path

import numpy as np
import pytest
from scipy import stats

from latentzoo.data import load, load_labels, prepare_textures
from latentzoo.data.texture_features import (
    GABOR_FREQUENCIES,
    GABOR_ORIENTATIONS,
    N_BINS,
    TextureFeatures,
    discretise,
    gabor_moduli,
    ks_distances,
    neighbour_pairs,
    window_histograms,
)
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


# ---------------------------------------------------------------- Gabor histogram features


@pytest.mark.parametrize("scale", range(len(GABOR_FREQUENCIES)))
@pytest.mark.parametrize("orientation", range(GABOR_ORIENTATIONS))
def test_gabor_bank_responds_most_to_stripes_of_its_scale_and_orientation(scale, orientation):
    frequency = GABOR_FREQUENCIES[scale]
    angle = np.pi * orientation / GABOR_ORIENTATIONS
    y, x = np.mgrid[:128, :128]
    stripes = np.sin(2 * np.pi * frequency * (x * np.cos(angle) + y * np.sin(angle)))
    energy = gabor_moduli(stripes).mean(axis=(1, 2)).reshape(len(GABOR_FREQUENCIES), -1)
    assert np.unravel_index(energy.argmax(), energy.shape) == (scale, orientation)


def test_window_histograms_equal_brute_force_counts_on_random_windows():
    rng = np.random.default_rng(0)
    bins = rng.integers(0, 7, (45, 60))
    height, width = rng.integers(1, 20, 200), rng.integers(1, 30, 200)
    top, left = rng.integers(0, 45 - height + 1), rng.integers(0, 60 - width + 1)
    fast = window_histograms(bins, 7, top, left, height, width)
    brute = np.array(
        [
            np.bincount(bins[t : t + h, c : c + w].ravel(), minlength=7)
            for t, c, h, w in zip(top, left, height, width, strict=True)
        ]
    )
    assert np.array_equal(fast, brute)
    with pytest.raises(ValueError, match="a window leaves the 45 x 60 image"):
        window_histograms(bins, 7, [40], [0], 10, 10)


def test_ks_distance_is_scipy_ks_2samp_statistic_and_the_max_over_channels():
    rng = np.random.default_rng(1)
    first = rng.integers(0, 6, (20, 3, 10))
    second = rng.integers(0, 6, (20, 3, 10))
    first[:, :, 0] += 1  # no empty histogram
    second[:, :, -1] += 1
    ours = ks_distances(first, second)
    levels = np.arange(10)
    scipy_per_channel = np.array(
        [
            [
                stats.ks_2samp(np.repeat(levels, a), np.repeat(levels, b)).statistic
                for a, b in zip(pair_first, pair_second, strict=True)
            ]
            for pair_first, pair_second in zip(first, second, strict=True)
        ]
    )
    assert np.allclose(ours, scipy_per_channel.max(axis=1), rtol=0, atol=1e-12)
    assert np.array_equal(ks_distances(first, first), np.zeros(20))


def test_neighbour_graph_holds_all_adjacent_blocks_and_under_one_percent_of_pairs():
    features = TextureFeatures(load("texture-mosaic", size=256, random_state=3).image)
    data = features.block_dissimilarities(random_state=0)  # 32 x 32 blocks of a 256 image
    n_rows = n_cols = 32
    assert data.n_items == n_rows * n_cols
    assert data.n_pairs < 0.01 * data.n_items * (data.n_items - 1) / 2
    index = np.arange(data.n_items).reshape(n_rows, n_cols)
    observed = data.pairs.tocsr()
    adjacent = np.concatenate([index[:, :-1].ravel(), index[:-1].ravel()])
    partner = np.concatenate([index[:, 1:].ravel(), index[1:].ravel()])
    pattern = observed.copy()
    pattern.data[:] = 1  # explicit zeros (identical blocks) are observed pairs too
    assert (pattern[adjacent, partner].A1 == 1).all()
    # More than the adjacent pairs: every block also has random partners.
    assert data.n_pairs > adjacent.size
    first, second = neighbour_pairs((n_rows, n_cols), n_random=2, random_state=0)
    assert (first < second).all() and np.unique(first * data.n_items + second).size == first.size


def test_block_distances_separate_textures():
    mosaic = load("texture-mosaic", n_textures=5, size=256, random_state=1)
    data = TextureFeatures(mosaic.image).block_dissimilarities(
        random_state=0, pixel_labels=mosaic.labels
    )
    pairs = data.pairs.tocoo()
    same = data.labels[pairs.row] == data.labels[pairs.col]
    assert pairs.data[same].mean() < 0.5 * pairs.data[~same].mean()


def test_site_counts_are_window_histograms_of_the_gabor_channels():
    features = TextureFeatures(load("texture-mosaic", size=128, random_state=2).image)
    counts = features.site_counts(stride=8)
    assert counts.shape == (16 * 16, 12 * N_BINS)
    assert list(features.windows) == [64] + [16] * 4 + [32] * 4 + [64] * 4
    # Every site sees a full window of every channel, shifted inwards at the borders.
    per_channel = counts.toarray().reshape(counts.shape[0], 12, N_BINS).sum(axis=2)
    assert (per_channel == features.windows[1:] ** 2).all()
    assert counts.row_labels[0] == "4,4" and counts.col_labels[-1] == f"s2o3b{N_BINS - 1}"
    with_grey = features.site_counts(stride=8, include_grey=True)
    assert with_grey.shape == (256, 13 * N_BINS) and with_grey.col_labels[0] == "greyb0"


def test_discretise_uses_equal_frequency_bins():
    values = np.random.default_rng(3).random((2, 40, 50))
    bins = discretise(values)
    assert bins.min() == 0 and bins.max() == N_BINS - 1
    assert (np.apply_along_axis(np.bincount, 1, bins.reshape(2, -1)) == 50).all()


@pytest.mark.parametrize(
    "image, message",
    [
        (np.full((80, 80), np.nan), r"image\[0, 0\] is nan: grey levels must be finite"),
        (np.zeros((80, 80), dtype=bool), "integer or float grey levels, got dtype bool"),
        (np.zeros((80, 80, 3)), "a colour image: texture features need one grey channel"),
        (np.zeros((40, 80)), r"smaller than the largest Gabor window \(64 x 64\)"),
        (np.zeros(80), "must be a 2-D grey image"),
    ],
)
def test_bad_images_are_refused_with_a_clear_error(image, message):
    with pytest.raises(ValueError, match=message):
        TextureFeatures(image)
