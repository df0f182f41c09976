"""Colour and texture features of images for content-based retrieval (thesis section 5.2.1).

The Bayesian image retrieval system of chapter 5 (Algorithm 5.1) describes every image by 240
real features, binarised afterwards across the collection (section 5.2.2):

* 165 colour-histogram features (:func:`colour_histogram`): an HSV histogram with 8 hue,
  5 saturation and 5 value bins (Heesch et al. 2003), the lowest value bin not split by hue;
* 48 Gabor texture features (:func:`gabor_features`): mean and standard deviation of the
  response magnitude of a bank of 6 scales x 4 orientations (Manjunath and Ma 1996, as used by
  Howarth and Rüger 2004);
* 27 Tamura texture features (:func:`tamura_features`): coarseness, contrast and
  directionality (Tamura, Mori and Yamawaki 1978) in each of 3 x 3 tiles.

:func:`image_features` concatenates them in that order, with :func:`feature_names`.

Every function takes one image or a stack of equally sized images, RGB (channels last) or
grey, ``uint8`` (0-255) or float in [0, 1], and is vectorised over images and pixels; large
stacks are processed in chunks to bound memory. Only numpy and scipy are used.

References
----------
K. A. Heller (2007), *Efficient Bayesian methods for clustering*, PhD thesis, sec. 5.2.1.
H. Tamura, S. Mori, T. Yamawaki (1978), Textural features corresponding to visual perception,
IEEE Trans. SMC 8:460-472. B. S. Manjunath, W. Y. Ma (1996), Texture features for browsing
and retrieval of image data, IEEE Trans. PAMI 18:837-842. P. Howarth, S. Rüger (2004),
Evaluation of texture features for content-based image retrieval, CIVR 2004.
"""

from __future__ import annotations

import textwrap

import numpy as np
from scipy import ndimage

__all__ = [
    "GABOR_ORIENTATIONS",
    "GABOR_SCALES",
    "HSV_BINS",
    "MIN_SIZE",
    "TAMURA_TILES",
    "colour_histogram",
    "feature_names",
    "gabor_features",
    "image_features",
    "rgb_to_hsv",
    "tamura_features",
]

#: Hue, saturation and value bins of the colour histogram (thesis sec. 5.2.1).
HSV_BINS = (8, 5, 5)
#: Scales and orientations of the Gabor filter bank (thesis sec. 5.2.1).
GABOR_SCALES, GABOR_ORIENTATIONS = 6, 4
#: Lowest and highest centre frequency of the Gabor bank, in cycles per pixel (Manjunath and
#: Ma 1996 use 0.05 and 0.4).
GABOR_FREQUENCIES = (0.05, 0.4)
#: The Tamura features are computed in TAMURA_TILES x TAMURA_TILES tiles (thesis sec. 5.2.1).
TAMURA_TILES = 3
#: Window sizes 2**k, k = 0..TAMURA_COARSENESS_LEVELS, of Tamura's coarseness (1 to 32 px).
TAMURA_COARSENESS_LEVELS = 5
#: Tamura's directionality: number of angle bins and the edge-strength threshold |dG| >= t
#: on the 0-255 grey scale (Tamura et al. 1978 use 16 bins and t = 12).
TAMURA_ANGLE_BINS, TAMURA_EDGE_THRESHOLD = 16, 12.0
#: Smallest height and width accepted (3 x 3 tiles of at least 5 pixels).
MIN_SIZE = 16
# Pixels per chunk of images: bounds the (chunk, filters, height, width) complex arrays of
# the Gabor bank and the (chunk, levels, height, width) arrays of coarseness to ~100 MB.
_CHUNK_PIXELS = 1 << 19
# ITU-R BT.601 luma weights: the grey level on which the texture features are computed.
_LUMA = np.array([0.299, 0.587, 0.114])


# ---------------------------------------------------------------- input


def _as_images(images, name: str = "images") -> tuple[np.ndarray, bool]:
    """``(n, h, w, 3)`` float64 RGB in [0, 1] and whether a single image was given."""
    array = np.asarray(images)
    if array.dtype.kind not in "buif":
        raise ValueError(f"{name} must be a numeric array, got dtype {array.dtype}")
    if array.ndim == 2:
        array, single = array[None, :, :, None], True
    elif array.ndim == 3:
        array, single = array[None], True
    elif array.ndim == 4:
        single = False
    else:
        raise ValueError(
            f"{name} must be one image (height, width) or (height, width, channels), or a "
            f"stack (n, height, width, channels); got shape {array.shape}"
        )
    n, height, width, channels = array.shape
    if channels not in (1, 3):
        raise ValueError(
            f"{name} must have 1 (grey) or 3 (RGB) channels in the last axis, got {channels} "
            f"(shape {np.shape(images)}); composite an alpha channel first"
        )
    if n == 0:
        raise ValueError(f"{name} is an empty stack of images")
    if height < MIN_SIZE or width < MIN_SIZE:
        raise ValueError(
            f"{name} must be at least {MIN_SIZE} x {MIN_SIZE} pixels, got {height} x {width}"
        )
    if array.dtype.kind == "f":
        finite = np.isfinite(array)
        if not finite.all():
            where = tuple(int(i) for i in np.argwhere(~finite)[0])
            raise ValueError(f"{name}{list(where)} is {array[where]}: values must be finite")
        scale = 1.0
        low, high = 0.0, 1.0
    else:
        scale = 255.0
        low, high = 0, 255
    outside = (array < low) | (array > high)
    if outside.any():
        where = tuple(int(i) for i in np.argwhere(outside)[0])
        kind = "float images" if array.dtype.kind == "f" else "integer images"
        raise ValueError(
            f"{name}{list(where)} = {array[where]} is outside [{low}, {high}] (the range of {kind})"
        )
    rgb = array.astype(np.float64) / scale
    if channels == 1:
        rgb = np.repeat(rgb, 3, axis=-1)
    return rgb, single


def _grey(rgb: np.ndarray) -> np.ndarray:
    """Grey level in [0, 1] of ``(n, h, w, 3)`` RGB."""
    return rgb @ _LUMA


def _chunked(function, rgb: np.ndarray, single: bool, cost: int) -> np.ndarray:
    """Apply ``function`` to chunks of images whose ``cost`` x pixels fit in a chunk."""
    n, height, width, _ = rgb.shape
    size = max(1, _CHUNK_PIXELS // (cost * height * width))
    # A loop over chunks of images (memory bound), not over pixels or images.
    out = np.concatenate([function(rgb[start : start + size]) for start in range(0, n, size)])
    return out[0] if single else out


def _extract(images, *extractors) -> np.ndarray:
    """Validate ``images`` once, apply each extractor by chunks (:data:`_COSTS`) and put the
    features side by side."""
    rgb, single = _as_images(images)
    parts = [_chunked(extract, rgb, single, _COSTS[extract]) for extract in extractors]
    return np.concatenate(parts, axis=-1)


def _documented_like_colour_histogram(returns: str):
    """Complete the docstring of a public extractor with the sections it shares with
    :func:`colour_histogram`: its ``images`` and its errors are those of
    :func:`colour_histogram`; only the ``returns`` text (one paragraph) is its own. The sections
    go before the docstring's Examples, in numpydoc order, so ``help()`` and the docs show
    them."""
    indent = " " * 8
    returns = textwrap.fill(returns, width=92, initial_indent=indent, subsequent_indent=indent)
    examples = "    Examples\n    --------\n"
    sections = (
        f"Parameters\n    ----------\n    images : array_like\n{indent}As in :func:`colour_histogram`."
        f"\n\n    Returns\n    -------\n    numpy.ndarray\n{returns}\n\n"
        f"    Raises\n    ------\n    ValueError\n{indent}As :func:`colour_histogram`.\n\n"
    )

    def document(extractor):
        # Docstrings are None under python -OO: nothing to complete then.
        if extractor.__doc__ is not None:
            if examples not in extractor.__doc__:
                raise AssertionError(f"{extractor.__name__}'s docstring has no Examples section")
            extractor.__doc__ = extractor.__doc__.replace(examples, "    " + sections + examples, 1)
        return extractor

    return document


# ---------------------------------------------------------------- colour


def rgb_to_hsv(rgb) -> np.ndarray:
    """Hue, saturation and value of RGB colours in [0, 1] (hexcone model).

    Hue is in [0, 1) (a fraction of the colour circle, red at 0); the hue of a grey pixel
    (saturation 0) is 0 and its saturation is 0.

    Parameters
    ----------
    rgb : array_like, shape (..., 3)
        Red, green and blue in [0, 1].

    Returns
    -------
    numpy.ndarray, shape (..., 3)
        Hue, saturation and value in [0, 1].

    Examples
    --------
    >>> rgb_to_hsv([[1.0, 0.0, 0.0], [0.0, 0.5, 0.5], [0.2, 0.2, 0.2]]).round(3)
    array([[0. , 1. , 1. ],
           [0.5, 1. , 0.5],
           [0. , 0. , 0.2]])
    """
    rgb = np.asarray(rgb, dtype=np.float64)
    if rgb.shape[-1:] != (3,):
        raise ValueError(f"rgb must have 3 channels in the last axis, got shape {rgb.shape}")
    red, green, blue = np.moveaxis(rgb, -1, 0)
    value = rgb.max(axis=-1)
    chroma = value - rgb.min(axis=-1)
    safe = np.where(chroma > 0, chroma, 1.0)
    sector = np.select(
        [chroma == 0, value == red, value == green],
        [0.0, np.mod((green - blue) / safe, 6.0), (blue - red) / safe + 2.0],
        (red - green) / safe + 4.0,
    )
    hue = np.mod(sector / 6.0, 1.0)
    saturation = np.where(value > 0, chroma / np.where(value > 0, value, 1.0), 0.0)
    return np.stack([hue, saturation, value], axis=-1)


def _colour_histogram(rgb: np.ndarray) -> np.ndarray:
    n_hue, n_sat, n_val = HSV_BINS
    hue, sat, val = np.moveaxis(rgb_to_hsv(rgb), -1, 0)
    h = np.minimum((hue * n_hue).astype(np.int64), n_hue - 1)
    s = np.minimum((sat * n_sat).astype(np.int64), n_sat - 1)
    v = np.minimum((val * n_val).astype(np.int64), n_val - 1)
    # Dark colours (lowest value bin) are told apart by saturation only: people hardly
    # distinguish their hues (thesis sec. 5.2.1), hence 5 + 4 * 8 * 5 = 165 bins.
    index = np.where(v == 0, s, n_sat + ((v - 1) * n_hue + h) * n_sat + s)
    n_bins = n_sat + (n_val - 1) * n_hue * n_sat
    n, height, width = index.shape
    offsets = np.arange(n)[:, None, None] * n_bins
    counts = np.bincount((index + offsets).ravel(), minlength=n * n_bins)
    return counts.reshape(n, n_bins) / (height * width)


def colour_histogram(images) -> np.ndarray:
    """HSV colour histogram of images: 165 bin frequencies summing to one (thesis sec. 5.2.1).

    Hue (8 equal bins of the colour circle), saturation and value (5 equal bins each of
    [0, 1]) of every pixel are binned jointly (Heesch et al. 2003), except that the lowest
    value bin (``V < 0.2``) is split by saturation only: ``5 + 4 x 8 x 5 = 165`` bins. Grey
    pixels have hue 0 (the red hue bin) and saturation 0.

    Parameters
    ----------
    images : array_like
        One image, ``(h, w)`` grey or ``(h, w, 3)`` RGB, or a stack ``(n, h, w, 1 or 3)``;
        ``uint8``/integers in 0..255 or floats in [0, 1]; at least :data:`MIN_SIZE` pixels
        high and wide.

    Returns
    -------
    numpy.ndarray
        ``(165,)`` for one image, ``(n, 165)`` for a stack: the fraction of pixels in each
        bin, ordered as :func:`feature_names` (``hsv_v0_s0``... then ``hsv_v1_h0_s0``...).

    Raises
    ------
    ValueError
        If ``images`` has the wrong shape, too few pixels, NaN/inf or values out of range.

    Examples
    --------
    >>> import numpy as np
    >>> red = np.zeros((16, 16, 3)); red[..., 0] = 1.0
    >>> histogram = colour_histogram(red)
    >>> histogram.shape, float(histogram.sum()), str(feature_names()[histogram.argmax()])
    ((165,), 1.0, 'hsv_v4_h0_s4')
    """
    return _extract(images, _colour_histogram)


# ---------------------------------------------------------------- Gabor


def _gabor_bank(height: int, width: int) -> np.ndarray:
    """Frequency responses ``(scales * orientations, h, w)`` of the Gabor bank.

    Manjunath and Ma (1996), eq. (1)-(4): centre frequencies ``U_h / a**m`` spaced
    geometrically between ``U_l`` and ``U_h``, radial and angular widths chosen so that
    neighbouring filters touch at half their peak. Only the lobe on the positive side of each
    orientation is kept (a complex, quadrature filter), so the magnitude of the response is
    the local energy of the corresponding real Gabor filter.
    """
    low, high = GABOR_FREQUENCIES
    scales, orientations = GABOR_SCALES, GABOR_ORIENTATIONS
    ln2 = np.log(2.0)
    a = (high / low) ** (1.0 / (scales - 1))
    sigma_u = (a - 1.0) * high / ((a + 1.0) * np.sqrt(2.0 * ln2))
    sigma_v = (
        np.tan(np.pi / (2 * orientations))
        * (high - 2.0 * ln2 * sigma_u**2 / high)
        / np.sqrt(2.0 * ln2 - (2.0 * ln2) ** 2 * sigma_u**2 / high**2)
    )
    shrink = a ** -np.arange(scales, dtype=np.float64)[:, None, None, None]
    theta = np.pi * np.arange(orientations)[None, :, None, None] / orientations
    v = np.fft.fftfreq(height)[None, None, :, None]
    u = np.fft.fftfreq(width)[None, None, None, :]
    along = u * np.cos(theta) + v * np.sin(theta)
    across = -u * np.sin(theta) + v * np.cos(theta)
    bank = np.exp(
        -0.5
        * (((along - high * shrink) / (sigma_u * shrink)) ** 2 + (across / (sigma_v * shrink)) ** 2)
    )
    return bank.reshape(scales * orientations, height, width)


def _gabor_features(rgb: np.ndarray) -> np.ndarray:
    grey = _grey(rgb)
    # The mean grey level carries no texture; removing it keeps the coarsest filter's tail
    # from picking up the DC term.
    grey = grey - grey.mean(axis=(1, 2), keepdims=True)
    bank = _gabor_bank(*grey.shape[1:])
    spectrum = np.fft.fft2(grey)[:, None]
    magnitude = np.abs(np.fft.ifft2(spectrum * bank[None]))
    return np.concatenate([magnitude.mean(axis=(2, 3)), magnitude.std(axis=(2, 3))], axis=1)


@_documented_like_colour_histogram(
    returns="``(48,)`` or ``(n, 48)``: the 24 means (``gabor_mean_s{scale}_o{orientation}``, "
    "scale 0 the finest), then the 24 standard deviations, on the [0, 1] grey scale."
)
def gabor_features(images) -> np.ndarray:
    """Gabor texture features: mean and sd of 24 filter-response magnitudes (thesis 5.2.1).

    The grey level (BT.601 luma, mean removed) is filtered, by FFT (periodic boundaries), with
    a bank of :data:`GABOR_SCALES` = 6 scales x :data:`GABOR_ORIENTATIONS` = 4 orientations
    designed as in Manjunath and Ma (1996): centre frequencies from 0.4 down to 0.05 cycles
    per pixel in geometric steps, orientations ``k pi / 4``. Orientation ``k`` responds to
    intensity varying along the direction at angle ``k pi / 4`` from the image's x axis
    (``k = 0``: vertical stripes; ``k = 2``: horizontal stripes). For each filter the mean
    and the standard deviation of the magnitude of the complex response over the pixels are
    the features (Howarth and Rüger 2004): ``6 x 4 x 2 = 48``.

    Examples
    --------
    >>> import numpy as np
    >>> x = np.arange(64)
    >>> stripes = np.tile(0.5 + 0.5 * np.sin(2 * np.pi * 0.2 * x), (64, 1))  # vertical
    >>> means = gabor_features(stripes)[:24].reshape(6, 4)
    >>> [int(i) for i in np.unravel_index(means.argmax(), means.shape)]  # (scale, orientation)
    [2, 0]
    """
    return _extract(images, _gabor_features)


# ---------------------------------------------------------------- Tamura


def _tile_labels(n: int, height: int, width: int) -> np.ndarray:
    """Tile of every pixel, ``image * tiles**2 + row_tile * tiles + col_tile``."""
    tiles = TAMURA_TILES
    rows = np.arange(height) * tiles // height
    cols = np.arange(width) * tiles // width
    within = rows[:, None] * tiles + cols[None, :]
    return np.arange(n)[:, None, None] * tiles**2 + within[None]


def _window_difference(average: np.ndarray, size: int, axis: int) -> np.ndarray:
    """``|mean(g[x : x + size]) - mean(g[x - size : x])|`` along ``axis``, from box means.

    ``average`` is ``g`` averaged over ``size`` pixels centred as ``ndimage.uniform_filter``
    centres them (``[x - size // 2, x + size - size // 2 - 1]``), so the windows just after
    and just before ``x`` are ``average`` shifted by ``size // 2`` and ``-(size - size // 2)``.
    Where either window would leave the image the result is -1 (not available): padding
    would invent differences near the edges that win over the real ones.
    """
    ahead, behind = size // 2, size - size // 2
    n = average.shape[axis]
    after = np.take(average, np.clip(np.arange(n) + ahead, 0, n - 1), axis=axis)
    before = np.take(average, np.clip(np.arange(n) - behind, 0, n - 1), axis=axis)
    position = np.arange(n)
    inside = (position >= size) & (position + size <= n)
    shape = [1] * average.ndim
    shape[axis] = n
    return np.where(inside.reshape(shape), np.abs(after - before), -1.0)


def _best_window(grey: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Tamura et al. (1978) coarseness, steps 1-3: per-pixel best window size ``S_best``.

    Also returns whether any window size sees a difference at the pixel; where none does
    (flat surroundings, a grating whose period divides every window, or the image border
    where no pair of windows fits) ``S_best`` is meaningless and the pixel does not count.
    """
    levels = np.arange(TAMURA_COARSENESS_LEVELS + 1)
    energies = []
    # A loop over the 6 window sizes; each step is vectorised over images and pixels.
    for k in levels:
        # Step 1: A_k, the mean over a 2^k x 2^k window; step 2: E_k, the larger of the
        # horizontal and vertical differences between the two such windows on either side
        # (only pairs of windows inside the image; across the pair, edges are reflected).
        size = 2**k
        average = ndimage.uniform_filter(grey, size=(1, size, size), mode="reflect")
        energies.append(
            np.maximum(_window_difference(average, size, 1), _window_difference(average, size, 2))
        )
    # Step 3: S_best = 2^k for the k of largest E_k. Ties go to the largest window: across a
    # step edge every window narrower than the flat regions beside it differs equally.
    # Rounding-level differences (grey levels are 0..255) count as ties.
    energies = np.stack(energies)
    top = energies.max(axis=0)
    tied = energies >= top - 1e-9
    best = len(levels) - 1 - np.argmax(tied[::-1], axis=0)
    return 2.0 ** levels[best], top > 1e-9


def _prewitt(grey: np.ndarray, axis: int) -> np.ndarray:
    """Tamura's 3 x 3 difference operator along ``axis`` (1: rows, 2: columns) of a stack.

    Differences ``[-1, 0, 1]`` along ``axis`` summed over the 3 neighbours along the other
    image axis; unlike ``ndimage.prewitt``, nothing is summed across the images of the stack.
    """
    other = 3 - axis
    difference = ndimage.correlate1d(grey, [-1.0, 0.0, 1.0], axis=axis, mode="reflect")
    return ndimage.correlate1d(difference, [1.0, 1.0, 1.0], axis=other, mode="reflect")


def _tamura_features(rgb: np.ndarray) -> np.ndarray:
    grey = 255.0 * _grey(rgb)
    n, height, width = grey.shape
    tiles = TAMURA_TILES**2
    labels = _tile_labels(n, height, width).ravel()
    pixels = np.bincount(labels, minlength=n * tiles)

    def tile_mean(values):
        return np.bincount(labels, weights=values.ravel(), minlength=n * tiles) / pixels

    # Coarseness F_crs: the mean of S_best over the tile's pixels that see a difference; a
    # tile without any (constant) is as coarse as the largest window.
    best, textured = _best_window(grey)
    counted = np.bincount(labels, weights=textured.ravel(), minlength=n * tiles)
    total = np.bincount(labels, weights=(best * textured).ravel(), minlength=n * tiles)
    largest = 2.0**TAMURA_COARSENESS_LEVELS
    coarseness = np.where(counted > 0, total / np.where(counted > 0, counted, 1.0), largest)

    # Contrast F_con = sigma / alpha_4^(1/4) = sigma^2 / mu_4^(1/4), alpha_4 the kurtosis.
    centred = grey.ravel() - tile_mean(grey)[labels]
    variance = tile_mean(centred**2)
    fourth = tile_mean(centred**4)
    contrast = np.where(fourth > 0, variance / np.where(fourth > 0, fourth, 1.0) ** 0.25, 0.0)

    # Directionality: histogram of edge angles theta = arctan(dV / dH) + pi/2 (Prewitt-type
    # 3 x 3 differences) over pixels with |dG| = (|dH| + |dV|) / 2 >= t.
    d_h = _prewitt(grey, axis=2)
    d_v = _prewitt(grey, axis=1)
    strength = 0.5 * (np.abs(d_h) + np.abs(d_v))
    theta = np.mod(np.arctan2(d_v, d_h) + np.pi / 2, np.pi)
    n_bins = TAMURA_ANGLE_BINS
    # Bins centred on multiples of pi / n_bins, so that angles just below pi and just above
    # 0 (the same direction) share bin 0.
    bins = np.mod(np.floor(theta * n_bins / np.pi + 0.5).astype(np.int64), n_bins)
    edge = (strength >= TAMURA_EDGE_THRESHOLD).ravel()
    histogram = np.bincount(
        labels * n_bins + bins.ravel(), weights=edge, minlength=n * tiles * n_bins
    ).reshape(n * tiles, n_bins)
    edges = histogram.sum(axis=1)
    frequency = histogram / np.where(edges > 0, edges, 1.0)[:, None]
    # Sharpness of the highest peak: F_dir = 1 - r sum_phi (phi - phi_p)^2 H_D(phi) with the
    # single-peak form of Tamura et al. and the circular distance between angles; r = 12/pi^2
    # makes a uniform histogram score 0 and a single direction 1. No edges: 0.
    peak = frequency.argmax(axis=1)
    gap = np.abs(np.arange(n_bins)[None, :] - peak[:, None]) * (np.pi / n_bins)
    distance = np.minimum(gap, np.pi - gap)
    spread = (distance**2 * frequency).sum(axis=1)
    directionality = np.where(edges > 0, 1.0 - 12.0 / np.pi**2 * spread, 0.0)
    return np.concatenate(
        [part.reshape(n, tiles) for part in (coarseness, contrast, directionality)], axis=1
    )


@_documented_like_colour_histogram(
    returns="``(27,)`` or ``(n, 27)``: the 9 coarseness values (tiles in row-major order, "
    "``tamura_coarseness_t0``...), then the 9 contrasts, then the 9 directionalities."
)
def tamura_features(images) -> np.ndarray:
    """Tamura coarseness, contrast and directionality in 3 x 3 tiles (thesis sec. 5.2.1).

    On the grey level (BT.601 luma) scaled to 0..255, following Tamura, Mori and Yamawaki
    (1978), in each of :data:`TAMURA_TILES` x :data:`TAMURA_TILES` tiles (rows and columns
    split as evenly as possible):

    * coarseness ``F_crs``: the mean over the tile's pixels of ``S_best = 2**k``, the size
      (``k = 0..5``, 1 to 32 pixels) of the two adjacent square windows, on either side of
      the pixel horizontally or vertically, whose mean grey levels differ most (ties: the
      largest; only pairs of windows inside the image); pixels where no pair differs do not
      count, and a tile without any (a constant tile) has coarseness 32. A grating of
      stripes ``w`` pixels wide has coarseness about ``w``;
    * contrast ``F_con = sigma / alpha_4**(1/4)``: the tile's grey-level standard deviation
      damped by its kurtosis ``alpha_4 = mu_4 / sigma**4``; 0 for a constant tile;
    * directionality ``F_dir = 1 - r sum (phi - phi_p)**2 H_D(phi)``: ``H_D`` the histogram
      (16 bins) of edge angles of pixels with edge strength at least 12, ``phi_p`` its
      highest bin, angles compared on the circle of period pi, ``r = 12 / pi**2``. Tamura's
      form with one peak: 1 for a single direction, 0 for uniformly spread angles or a tile
      without edges, negative when much of the histogram lies far from its highest bin (two
      perpendicular directions give -1/2; the least possible value is ``1 - 3 * 15 / 16``).

    Examples
    --------
    >>> import numpy as np
    >>> y = np.arange(48)[:, None]
    >>> grating = np.tile(np.where(y % 8 < 4, 0.9, 0.1), (1, 48))  # horizontal stripes
    >>> features = tamura_features(grating)
    >>> features[18:].round(3)  # directionality of every tile
    array([1., 1., 1., 1., 1., 1., 1., 1., 1.])
    >>> tamura_features(np.full((48, 48), 0.5))[9:18]  # contrast of a constant image
    array([0., 0., 0., 0., 0., 0., 0., 0., 0.])
    """
    return _extract(images, _tamura_features)


# ---------------------------------------------------------------- all features

# Floats each extractor holds per pixel of a chunk of images (the Gabor bank's complex
# responses, coarseness's window averages), which sets how many images a chunk takes.
_COSTS = {
    _colour_histogram: 4,
    _gabor_features: 4 * GABOR_SCALES * GABOR_ORIENTATIONS,
    _tamura_features: 3 * (TAMURA_COARSENESS_LEVELS + 1),
}


def feature_names() -> np.ndarray:
    """Names of the 240 features of :func:`image_features`, in order.

    Returns
    -------
    numpy.ndarray of str
        ``hsv_v0_s{s}`` (5), ``hsv_v{v}_h{h}_s{s}`` (160, ``v`` = 1..4), ``gabor_mean_s{m}_o{k}``
        (24), ``gabor_sd_s{m}_o{k}`` (24), ``tamura_coarseness_t{t}``, ``tamura_contrast_t{t}``,
        ``tamura_directionality_t{t}`` (9 each, tiles in row-major order).

    Examples
    --------
    >>> names = feature_names()
    >>> names.size, str(names[0]), str(names[165]), str(names[-1])
    (240, 'hsv_v0_s0', 'gabor_mean_s0_o0', 'tamura_directionality_t8')
    """
    n_hue, n_sat, n_val = HSV_BINS
    colour = [f"hsv_v0_s{s}" for s in range(n_sat)] + [
        f"hsv_v{v}_h{h}_s{s}" for v in range(1, n_val) for h in range(n_hue) for s in range(n_sat)
    ]
    gabor = [
        f"gabor_{stat}_s{m}_o{k}"
        for stat in ("mean", "sd")
        for m in range(GABOR_SCALES)
        for k in range(GABOR_ORIENTATIONS)
    ]
    tamura = [
        f"tamura_{feature}_t{t}"
        for feature in ("coarseness", "contrast", "directionality")
        for t in range(TAMURA_TILES**2)
    ]
    return np.array(colour + gabor + tamura)


@_documented_like_colour_histogram(returns="``(240,)`` for one image, ``(n, 240)`` for a stack.")
def image_features(images) -> np.ndarray:
    """The 240 colour and texture features of thesis section 5.2.1.

    :func:`colour_histogram` (165), :func:`gabor_features` (48) and :func:`tamura_features`
    (27), concatenated in that order (names: :func:`feature_names`). These are the real
    features that section 5.2.2 binarises by skewness and percentiles before Bayesian Sets
    retrieval (Algorithm 5.1).

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> image_features(rng.random((2, 32, 32, 3))).shape
    (2, 240)
    """
    return _extract(images, _colour_histogram, _gabor_features, _tamura_features)
