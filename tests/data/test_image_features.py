"""Colour histogram, Gabor and Tamura features of thesis section 5.2.1, on synthetic images."""

import matplotlib.colors
import numpy as np
import pytest

from latentzoo.data import image_features as imf
from latentzoo.data.image_features import (
    colour_histogram,
    feature_names,
    gabor_features,
    image_features,
    rgb_to_hsv,
    tamura_features,
)

SEEDS = [0, 1, 2]


def grating(size=64, period=8.0, angle=0.0, square=False):
    """Sinusoidal (or square) grating in [0, 1]; ``angle`` 0: intensity varies along x."""
    y, x = np.mgrid[:size, :size].astype(np.float64)
    phase = 2 * np.pi * (x * np.cos(angle) + y * np.sin(angle)) / period
    wave = np.sign(np.sin(phase)) if square else np.sin(phase)
    return 0.5 + 0.4 * wave


def directionality(features):
    return features[..., 18:27]


def contrast(features):
    return features[..., 9:18]


def coarseness(features):
    return features[..., :9]


# ---------------------------------------------------------------- colour


@pytest.mark.parametrize("seed", SEEDS)
def test_colour_histograms_sum_to_one(seed):
    rng = np.random.default_rng(seed)
    images = rng.random((3, 20, 24, 3))
    histograms = colour_histogram(images)
    assert histograms.shape == (3, 165)
    np.testing.assert_allclose(histograms.sum(axis=1), 1.0)
    assert (histograms >= 0).all()
    # One image gives a vector; integer images are read on the 0..255 scale.
    np.testing.assert_array_equal(colour_histogram(images[1]), histograms[1])
    pixels = rng.integers(0, 256, (20, 24, 3))
    np.testing.assert_allclose(colour_histogram(pixels.astype(np.uint8)), colour_histogram(pixels))
    np.testing.assert_allclose(colour_histogram(pixels), colour_histogram(pixels / 255.0))


def test_colour_bins_of_pure_and_dark_colours():
    names = feature_names()[:165].tolist()

    def only_bin(rgb):
        histogram = colour_histogram(np.broadcast_to(np.asarray(rgb, float), (16, 16, 3)))
        assert histogram.max() == 1.0
        return names[int(histogram.argmax())]

    assert only_bin([1.0, 0.0, 0.0]) == "hsv_v4_h0_s4"  # red
    assert only_bin([0.0, 1.0, 0.0]) == "hsv_v4_h2_s4"  # green: hue 1/3
    assert only_bin([0.0, 0.0, 1.0]) == "hsv_v4_h5_s4"  # blue: hue 2/3
    assert only_bin([0.5, 0.5, 0.5]) == "hsv_v2_h0_s0"  # grey: hue 0, saturation 0
    # The lowest value bin is not split by hue (thesis sec. 5.2.1): dark red = dark blue.
    assert only_bin([0.1, 0.0, 0.0]) == only_bin([0.0, 0.0, 0.1]) == "hsv_v0_s4"
    assert only_bin([0.0, 0.0, 0.0]) == "hsv_v0_s0"
    assert only_bin([1.0, 1.0, 1.0]) == "hsv_v4_h0_s0"


@pytest.mark.parametrize("seed", SEEDS)
def test_rgb_to_hsv_matches_matplotlib(seed):
    rgb = np.random.default_rng(seed).random((500, 3))
    rgb[:50] = rgb[:50, :1]  # greys
    rgb[50:60, 1] = rgb[50:60, 0]  # two channels equal
    np.testing.assert_allclose(rgb_to_hsv(rgb), matplotlib.colors.rgb_to_hsv(rgb), atol=1e-12)


# ---------------------------------------------------------------- Gabor


@pytest.mark.parametrize("period", [2.5, 4.0, 6.0, 9.0, 13.0, 20.0])
def test_gabor_bank_responds_at_the_grating_frequency_and_orientation(period):
    vertical = grating(period=period)  # intensity varies along x: orientation 0
    means = gabor_features(vertical)[:24].reshape(6, 4)
    scale, orientation = np.unravel_index(means.argmax(), means.shape)
    assert orientation == 0
    centres = 0.4 / (0.4 / 0.05) ** (np.arange(6) / 5)
    assert scale == np.argmin(np.abs(np.log(centres * period)))
    # Rotating the image by 90 degrees moves the response to orientation 2 (pi / 2).
    rotated = gabor_features(vertical.T)[:24].reshape(6, 4)
    np.testing.assert_allclose(rotated[:, 2], means[:, 0], rtol=1e-9, atol=1e-12)


def test_gabor_of_a_constant_image_is_zero():
    np.testing.assert_allclose(gabor_features(np.full((32, 32), 0.3)), 0.0, atol=1e-12)


# ---------------------------------------------------------------- Tamura


@pytest.mark.parametrize("square", [False, True])
@pytest.mark.parametrize("angle", [np.pi / 2, 0.0, np.pi / 4])
def test_a_pure_grating_has_strong_directionality(angle, square):
    features = tamura_features(grating(size=96, period=8.0, angle=angle, square=square))
    assert directionality(features).min() > 0.9


@pytest.mark.parametrize("seed", SEEDS)
def test_noise_has_weak_directionality(seed):
    noise = np.random.default_rng(seed).random((96, 96))
    assert np.abs(directionality(tamura_features(noise))).max() < 0.35


def test_a_constant_image_has_zero_contrast_and_no_direction():
    features = tamura_features(np.full((48, 40, 3), 0.7))
    np.testing.assert_array_equal(contrast(features), 0.0)
    np.testing.assert_array_equal(directionality(features), 0.0)


@pytest.mark.parametrize("seed", SEEDS)
def test_contrast_is_proportional_to_the_grey_amplitude(seed):
    pattern = np.random.default_rng(seed).random((48, 48))
    low = contrast(tamura_features(0.5 + 0.2 * (pattern - 0.5)))
    high = contrast(tamura_features(0.5 + 0.4 * (pattern - 0.5)))
    np.testing.assert_allclose(high, 2 * low, rtol=1e-9)
    # sigma / kurtosis^(1/4) of a two-level image (kurtosis 1) is its standard deviation.
    two_level = np.tile(np.where(np.arange(48) % 2, 0.75, 0.25), (48, 1))
    np.testing.assert_allclose(contrast(tamura_features(two_level)), 0.25 * 255, rtol=1e-9)


@pytest.mark.parametrize("width", [1, 2, 4, 8, 16])
def test_coarseness_of_stripes_is_their_width(width):
    x = np.arange(96)
    stripes = np.tile(np.where((x // width) % 2 == 1, 0.9, 0.1), (96, 1))
    features = coarseness(tamura_features(stripes))
    assert features[4] == width  # the central tile, away from the image border
    # Near the border only smaller pairs of windows fit inside the image.
    assert (features <= width).all() and (features >= 0.8 * width).all()
    # Transposing the image transposes the 3 x 3 tiles.
    transposed = coarseness(tamura_features(stripes.T)).reshape(3, 3).T.ravel()
    np.testing.assert_array_equal(transposed, features)


@pytest.mark.parametrize("seed", SEEDS)
def test_noise_is_fine_and_a_constant_image_coarsest(seed):
    noise = np.random.default_rng(seed).random((64, 64))
    assert coarseness(tamura_features(noise)).max() < 2
    np.testing.assert_array_equal(coarseness(tamura_features(np.full((32, 32), 0.2))), 32.0)


def test_tiles_are_independent_regions():
    image = np.full((48, 48), 0.5)
    image[:16, :16] = grating(size=16, period=4.0)  # top-left tile only
    features = tamura_features(image)
    assert contrast(features)[0] > 0 and not contrast(features)[1:].any()


# ---------------------------------------------------------------- all features, input checks


def test_image_features_concatenate_the_three_groups_in_feature_name_order():
    images = np.random.default_rng(3).integers(0, 256, (2, 32, 40, 3), dtype=np.uint8)
    features = image_features(images)
    assert features.shape == (2, 240)
    np.testing.assert_array_equal(
        features,
        np.hstack([colour_histogram(images), gabor_features(images), tamura_features(images)]),
    )
    names = feature_names()
    assert names.size == np.unique(names).size == 240
    assert names[164] == "hsv_v4_h7_s4" and names[189] == "gabor_sd_s0_o0"
    assert names[213] == "tamura_coarseness_t0"


def test_grey_and_rgb_inputs_agree_and_chunks_do_not_change_results(monkeypatch):
    rng = np.random.default_rng(4)
    grey = rng.random((5, 24, 24, 1))
    whole = image_features(grey)
    np.testing.assert_array_equal(image_features(np.repeat(grey, 3, axis=-1)), whole)
    np.testing.assert_array_equal(image_features(grey[2, :, :, 0]), whole[2])
    monkeypatch.setattr(imf, "_CHUNK_PIXELS", 1)  # one image per chunk
    np.testing.assert_array_equal(image_features(grey), whole)


@pytest.mark.parametrize(
    ("images", "message"),
    [
        (np.full((16, 16), np.nan), r"images\[0, 0, 0, 0\] is nan: values must be finite"),
        (np.full((16, 16, 3), np.inf), r"images\[0, 0, 0, 0\] is inf"),
        (np.full((16, 16), 1.5), r"images\[0, 0, 0, 0\] = 1.5 is outside \[0.0, 1.0\]"),
        (np.full((16, 16), 300), r"images\[0, 0, 0, 0\] = 300 is outside \[0, 255\]"),
        (np.full((16, 16), -1), r"= -1 is outside \[0, 255\]"),
        (np.zeros((16, 16, 4)), r"images must have 1 \(grey\) or 3 \(RGB\) channels.*got 4"),
        (np.zeros((8, 16, 3)), r"images must be at least 16 x 16 pixels, got 8 x 16"),
        (np.zeros((0, 16, 16, 3)), r"images is an empty stack"),
        (np.zeros((1, 1, 16, 16, 3)), r"images must be one image .*got shape \(1, 1, 16, 16, 3\)"),
        (np.zeros(16), r"images must be one image"),
        (np.array([["a"] * 16] * 16), r"images must be a numeric array, got dtype <U1"),
    ],
)
@pytest.mark.parametrize(
    "function", [colour_histogram, gabor_features, tamura_features, image_features]
)
def test_bad_images_raise_value_error_naming_images(function, images, message):
    with pytest.raises(ValueError, match=message):
        function(images)


def test_rgb_to_hsv_needs_three_channels():
    with pytest.raises(ValueError, match=r"rgb must have 3 channels .*got shape \(2, 4\)"):
        rgb_to_hsv(np.zeros((2, 4)))
