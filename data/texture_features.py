"""Gabor histogram features of a grey image for unsupervised texture segmentation.

The two segmenters of issue 28 share one feature pipeline (Hofmann, Puzicha and Jordan 1998,
sec. 6.3; Hofmann and Buhmann 1997, sec. 6.3):

1. the modulus of a Gabor filter bank, :data:`GABOR_ORIENTATIONS` = 4 orientations x 3
   scales an octave apart (:data:`GABOR_FREQUENCIES`), computed once per image by FFT
   (:func:`gabor_bank`, :func:`gabor_moduli`); with the grey level itself these are the
   ``L + 1 = 13`` channels of the pairwise segmenter (channel 0 the grey level);
2. every channel discretised separately into :data:`N_BINS` = 40 bins (:func:`discretise`;
   equal-frequency bins over the image, so every bin is used about equally often);
3. histograms of the bins over windows, each window's histogram in O(1) from an integral
   image per bin (:func:`window_histograms`), for

   * one-sided clustering (ACM): a site x (channel, bin) :class:`~latentzoo.data.CoOccurrence`
     (:meth:`TextureFeatures.site_counts`), the window of a Gabor channel
     :data:`WINDOW_PERIODS` periods of its centre frequency wide ("the size of the window is
     chosen proportional to the filter scale");
   * pairwise clustering: Kolmogorov-Smirnov distances between the histograms of image
     blocks on a regular grid, the maximum over the channels (:func:`ks_distances`), on a
     sparse neighbourhood graph of adjacent blocks plus random partners
     (:func:`neighbour_pairs`), as sparse :class:`~latentzoo.data.Dissimilarities`
     (:meth:`TextureFeatures.block_dissimilarities`).

A window near the border is shifted inwards so that it stays inside the image (every window
holds the same number of pixels). The FFT makes the filtering periodic at the image borders.

References
----------
T. Hofmann, J. Puzicha, M. I. Jordan (1998), Learning from dyadic data, NIPS 11, sec. 6.3.
T. Hofmann, J. M. Buhmann (1997), Pairwise data clustering by deterministic annealing, IEEE
PAMI 19:1-14, sec. 6.3. A. K. Jain, F. Farrokhnia (1991), Unsupervised texture segmentation
using Gabor filters, Pattern Recognition 24:1167-1186.
"""

from __future__ import annotations

import numbers

import numpy as np
import scipy.sparse as sp

from .checks import as_rng, check_random_state
from .cooccurrence import CoOccurrence
from .dissimilarities import Dissimilarities

__all__ = [
    "GABOR_FREQUENCIES",
    "GABOR_ORIENTATIONS",
    "N_BINS",
    "WINDOW_PERIODS",
    "TextureFeatures",
    "discretise",
    "gabor_bank",
    "gabor_moduli",
    "ks_distances",
    "neighbour_pairs",
    "window_histograms",
]

#: Centre frequencies of the 3 Gabor scales, in cycles per pixel, a full octave apart
#: (periods of 4, 8 and 16 pixels).
GABOR_FREQUENCIES = (0.25, 0.125, 0.0625)
#: Orientations of the Gabor bank, ``k pi / 4`` for ``k = 0..3``.
GABOR_ORIENTATIONS = 4
#: Bins per channel (Hofmann, Puzicha and Jordan 1998, sec. 6.3).
N_BINS = 40
#: Side of a Gabor channel's window, in periods of its centre frequency (16, 32 and 64 pixels).
WINDOW_PERIODS = 4
# One octave of radial bandwidth: the filters of neighbouring scales meet at half their peak.
_OCTAVE_BANDWIDTH = 1.0


def gabor_bank(
    height: int,
    width: int,
    frequencies=GABOR_FREQUENCIES,
    orientations: int = GABOR_ORIENTATIONS,
) -> np.ndarray:
    """Frequency responses of a bank of complex (quadrature) Gabor filters, for an FFT.

    Each filter is a Gaussian in the frequency plane centred on ``f (cos t, sin t)``, ``f``
    one of ``frequencies`` and ``t = k pi / orientations``; its radial width gives a
    bandwidth of one octave and its angular width makes neighbouring orientations meet at
    half their peak. Only the lobe at positive frequency is kept, so the modulus of the
    filtered image is the local energy of the real Gabor filter. Orientation ``k``
    responds to intensity varying along the direction at angle ``t`` from the x axis
    (``k = 0``: vertical stripes).

    Parameters
    ----------
    height, width : int
        Image size.
    frequencies : sequence of float, default :data:`GABOR_FREQUENCIES`
        Centre frequencies in cycles per pixel, in (0, 0.5).
    orientations : int, default :data:`GABOR_ORIENTATIONS`

    Returns
    -------
    numpy.ndarray
        ``float64 (len(frequencies) * orientations, height, width)``, scale-major, in
        :func:`numpy.fft.fft2`'s frequency layout.

    Examples
    --------
    >>> bank = gabor_bank(32, 32)
    >>> bank.shape, float(bank.max()) <= 1.0
    ((12, 32, 32), True)
    >>> float(bank[0, 0, 8])  # filter s0o0 peaks at u = 0.25 cycles per pixel, v = 0
    1.0
    """
    centres = np.asarray(frequencies, dtype=np.float64)[:, None, None, None]
    angles = np.pi * np.arange(orientations) / orientations
    # Unit vector along each orientation and its normal, as (x, y) components.
    along_axis = np.stack([np.cos(angles), np.sin(angles)])
    normal_axis = np.stack([-np.sin(angles), np.cos(angles)])
    plane = np.stack(np.meshgrid(np.fft.fftfreq(width), np.fft.fftfreq(height)))
    along = np.einsum("co,chw->ohw", along_axis, plane)[None]
    across = np.einsum("co,chw->ohw", normal_axis, plane)[None]
    half_peak = np.sqrt(2.0 * np.log(2.0))
    spread = 2.0**_OCTAVE_BANDWIDTH
    radial_sd = centres * (spread - 1.0) / ((spread + 1.0) * half_peak)
    angular_sd = centres * np.tan(np.pi / (2 * orientations)) / half_peak
    exponent = ((along - centres) / radial_sd) ** 2 + (across / angular_sd) ** 2
    return np.exp(-0.5 * exponent).reshape(-1, height, width)


def _as_grey_image(image, smallest: int) -> np.ndarray:
    """``image`` as float64 ``(h, w)``, or a ValueError that says what is wrong with it."""
    array = np.asarray(image)
    if array.ndim == 3 and array.shape[2] in (3, 4):
        raise ValueError(
            f"image has shape {array.shape}, a colour image: texture features need one grey "
            "channel; convert it first, e.g. image[..., :3] @ [0.299, 0.587, 0.114] (BT.601 luma)"
        )
    if array.ndim != 2:
        raise ValueError(f"image must be a 2-D grey image (height, width), got shape {array.shape}")
    if array.dtype.kind not in "uif":
        raise ValueError(f"image must hold integer or float grey levels, got dtype {array.dtype}")
    grey = array.astype(np.float64)
    if not np.isfinite(grey).all():
        row, col = np.argwhere(~np.isfinite(grey))[0]
        raise ValueError(f"image[{row}, {col}] is {grey[row, col]}: grey levels must be finite")
    if min(grey.shape) < smallest:
        raise ValueError(
            f"image is {grey.shape[0]} x {grey.shape[1]} pixels, smaller than the largest Gabor "
            f"window ({smallest} x {smallest})"
        )
    return grey


def gabor_moduli(
    image, frequencies=GABOR_FREQUENCIES, orientations: int = GABOR_ORIENTATIONS
) -> np.ndarray:
    """Modulus of the Gabor bank's response at every pixel, filtered by one FFT of the image.

    Parameters
    ----------
    image : array_like
        ``(height, width)`` grey levels (integer or float, finite).
    frequencies, orientations
        As :func:`gabor_bank`.

    Returns
    -------
    numpy.ndarray
        ``float64 (len(frequencies) * orientations, height, width)``, scale-major.

    Examples
    --------
    >>> import numpy as np
    >>> y = np.arange(64)[:, None]
    >>> stripes = np.tile(np.sin(2 * np.pi * 0.125 * y), (1, 64))  # horizontal stripes
    >>> int(gabor_moduli(stripes).mean(axis=(1, 2)).argmax())  # scale 1, orientation 2
    6
    """
    grey = _as_grey_image(image, 1)
    # The mean carries no texture; removed, it cannot leak through the filters' tails.
    spectrum = np.fft.fft2(grey - grey.mean())
    bank = gabor_bank(*grey.shape, frequencies, orientations)
    return np.abs(np.fft.ifft2(spectrum[None] * bank))


def discretise(channels, n_bins: int = N_BINS) -> np.ndarray:
    """Each channel's values replaced by their bin among ``n_bins`` equal-frequency bins.

    The bin edges of a channel are its quantiles at ``1/n_bins, ..., (n_bins-1)/n_bins`` over
    all its pixels; a value equal to an edge goes to the upper bin, so equal values share a
    bin (ties can leave bins empty).

    Parameters
    ----------
    channels : array_like
        ``(n_channels, height, width)`` real values.
    n_bins : int, default :data:`N_BINS`

    Returns
    -------
    numpy.ndarray
        ``int16 (n_channels, height, width)`` bins in ``0..n_bins-1``.

    Examples
    --------
    >>> import numpy as np
    >>> discretise(np.arange(8.0).reshape(1, 2, 4), n_bins=4)
    array([[[0, 0, 1, 1],
            [2, 2, 3, 3]]], dtype=int16)
    """
    values = np.asarray(channels, dtype=np.float64)
    levels = np.linspace(0.0, 1.0, n_bins + 1)[1:-1]
    edges = np.quantile(values.reshape(len(values), -1), levels, axis=1).T
    bins = np.empty(values.shape, dtype=np.int16)
    # A loop over the channels (13 at most); each is vectorised over the pixels.
    for channel, channel_edges in enumerate(edges):
        bins[channel] = np.searchsorted(channel_edges, values[channel], side="right")
    return bins


def window_histograms(bins, n_bins: int, top, left, height, width) -> np.ndarray:
    """Histograms of one discretised channel over many windows, each in O(1).

    Builds the integral image ``S[b, r, c]`` (the pixels of bin ``b`` above row ``r`` and
    left of column ``c``) once; the histogram of window ``[top, top + height) x [left, left
    + width)`` is then ``S[:, bottom, right] - S[:, top, right] - S[:, bottom, left] + S[:,
    top, left]``. ``S`` is only needed on the rows and columns where windows start or end, so
    it is built on that lattice: the pixels are counted into the lattice's cells (one
    ``bincount``) and the counts summed cumulatively, which costs ``O(pixels + cells)``
    instead of ``O(pixels * n_bins)`` for the full integral image.

    Parameters
    ----------
    bins : array_like
        ``(H, W)`` integer bins in ``0..n_bins-1`` (:func:`discretise`).
    n_bins : int
    top, left : array_like of int
        Upper-left corners of the windows, ``(n_windows,)``.
    height, width : int or array_like of int
        Window sizes (broadcast against ``top``); windows must lie inside the image.

    Returns
    -------
    numpy.ndarray
        ``int64 (n_windows, n_bins)`` counts.

    Examples
    --------
    >>> import numpy as np
    >>> bins = np.array([[0, 1, 1], [2, 0, 1]])
    >>> window_histograms(bins, 3, [0, 0], [0, 1], 2, 2)
    array([[2, 1, 1],
           [1, 3, 0]])
    """
    bins = np.asarray(bins)
    n_rows, n_cols = bins.shape
    top, left = np.asarray(top, dtype=np.int64), np.asarray(left, dtype=np.int64)
    bottom, right = top + height, left + width
    if (
        top.min(initial=0) < 0
        or left.min(initial=0) < 0
        or (bottom.max(initial=0) > n_rows or right.max(initial=0) > n_cols)
    ):
        raise ValueError(f"a window leaves the {n_rows} x {n_cols} image")
    # Lattice lines: 0 and every window's edges. Cell i of an axis spans lines i to i + 1
    # (the last cell runs to the image's end).
    row_lines = np.unique(np.concatenate([[0], top.ravel(), np.ravel(bottom)]))
    col_lines = np.unique(np.concatenate([[0], left.ravel(), np.ravel(right)]))
    row_cell = np.searchsorted(row_lines, np.arange(n_rows), side="right") - 1
    col_cell = np.searchsorted(col_lines, np.arange(n_cols), side="right") - 1
    shape = (n_bins, row_lines.size, col_lines.size)
    cell = (bins * shape[1] + row_cell[:, None]) * shape[2] + col_cell[None, :]
    counts = np.bincount(cell.ravel(), minlength=np.prod(shape)).reshape(shape)
    # integral[:, i, j]: pixels above row line i and left of column line j.
    integral = np.zeros((n_bins, shape[1] + 1, shape[2] + 1), dtype=np.int64)
    np.cumsum(np.cumsum(counts, axis=1), axis=2, out=integral[:, 1:, 1:])
    upper, lower = np.searchsorted(row_lines, top), np.searchsorted(row_lines, bottom)
    before, after = np.searchsorted(col_lines, left), np.searchsorted(col_lines, right)
    histograms = (
        integral[:, lower, after]
        - integral[:, upper, after]
        - integral[:, lower, before]
        + integral[:, upper, before]
    )
    return histograms.T


def ks_distances(first, second) -> np.ndarray:
    """Kolmogorov-Smirnov distances between histograms, the maximum over channels.

    ``D = max_l max_x |F_l(x) - G_l(x)|`` with ``F_l``, ``G_l`` the empirical distribution
    functions of channel ``l`` (cumulative histograms over the total count): Hofmann and
    Buhmann (1997), eq. (36) and the maximum rule after it.

    Parameters
    ----------
    first, second : array_like
        ``(..., n_channels, n_bins)`` counts, broadcast against each other; every histogram
        must hold at least one count.

    Returns
    -------
    numpy.ndarray
        ``(...)`` distances in [0, 1].

    Examples
    --------
    >>> ks_distances([[[2, 2, 0]]], [[[0, 2, 2]]])
    array([0.5])
    """

    def distribution(counts):
        counts = np.asarray(counts, dtype=np.float64)
        cumulative = np.cumsum(counts, axis=-1)
        return cumulative / cumulative[..., -1:]

    gap = np.abs(distribution(first) - distribution(second))
    return gap.max(axis=(-2, -1))


def neighbour_pairs(grid_shape, n_random: int = 2, random_state=None):
    """Sparse neighbourhood graph of blocks on a grid: adjacent blocks plus random partners.

    Hofmann and Buhmann (1997, sec. 6.3) process "all pairs of adjoined blocks and a small
    random neighborhood". Blocks are numbered row-major; each block is paired with its right
    and lower neighbours and with ``n_random`` partners drawn uniformly among the other
    blocks (with replacement; a pair drawn twice, or already adjacent, is kept once).

    Parameters
    ----------
    grid_shape : (int, int)
        Blocks per column and per row.
    n_random : int, default 2
        Random partners drawn per block.
    random_state : None, int or numpy.random.Generator, optional

    Returns
    -------
    first, second : numpy.ndarray
        ``int64`` block indices of the pairs, ``first < second``, sorted, without repeats.

    Examples
    --------
    >>> first, second = neighbour_pairs((2, 2), n_random=0)
    >>> first.tolist(), second.tolist()
    ([0, 0, 1, 2], [1, 2, 3, 3])
    """
    n_rows, n_cols = grid_shape
    n_blocks = n_rows * n_cols
    if n_blocks < 2:
        raise ValueError(f"a grid of {n_rows} x {n_cols} blocks has no pair of blocks")
    if isinstance(n_random, bool) or not isinstance(n_random, numbers.Integral) or n_random < 0:
        raise ValueError(f"n_random must be a non-negative integer, got {n_random!r}")
    rng = as_rng(check_random_state(random_state))
    index = np.arange(n_blocks).reshape(n_rows, n_cols)
    horizontal = (index[:, :-1].ravel(), index[:, 1:].ravel())
    vertical = (index[:-1].ravel(), index[1:].ravel())
    # A partner drawn among the n_blocks - 1 others: skip the block itself.
    draws = rng.integers(0, n_blocks - 1, (n_blocks, n_random))
    partners = draws + (draws >= np.arange(n_blocks)[:, None])
    chosen = (np.repeat(np.arange(n_blocks), n_random), partners.ravel())
    first = np.concatenate([horizontal[0], vertical[0], chosen[0]])
    second = np.concatenate([horizontal[1], vertical[1], chosen[1]])
    codes = np.unique(np.minimum(first, second) * n_blocks + np.maximum(first, second))
    return codes // n_blocks, codes % n_blocks


def _grid(size: int, window: int, stride: int) -> tuple[np.ndarray, np.ndarray]:
    """Centres of a regular grid along one axis and the starts of ``window``-wide windows
    around them, shifted inwards at the borders."""
    centres = np.arange(stride // 2, size, stride)
    starts = np.clip(centres - window // 2, 0, size - window)
    return centres, starts


def _positive(value, name: str) -> int:
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < 1:
        raise ValueError(f"{name} must be a positive integer, got {value!r}")
    return int(value)


class TextureFeatures:
    """The discretised Gabor channels of one grey image, from which both segmenters' data are
    cut (see the module docstring).

    Parameters
    ----------
    image : array_like
        ``(height, width)`` grey levels, integer or float, finite, at least as large as the
        largest window (64 x 64 pixels by default). Colour images are refused: convert them
        to grey first.
    n_bins : int, default :data:`N_BINS`
    frequencies : sequence of float, default :data:`GABOR_FREQUENCIES`
    orientations : int, default :data:`GABOR_ORIENTATIONS`
    window_periods : int, default :data:`WINDOW_PERIODS`
        Side of a Gabor channel's window in periods of its centre frequency.

    Attributes
    ----------
    bins : numpy.ndarray
        ``int16 (1 + scales * orientations, height, width)``: channel 0 the grey level, then
        the Gabor moduli, scale-major.
    channel_names : numpy.ndarray
        ``"grey"``, ``"s0o0"``, ``"s0o1"``... (``s`` the scale, 0 the finest).
    windows : numpy.ndarray
        Window side of each channel for :meth:`site_counts` (the grey level: the largest, as
        its histogram varies over the widest range, e.g. the shading of stones).

    Examples
    --------
    >>> from latentzoo.data import load
    >>> mosaic = load("texture-mosaic", n_textures=2, size=64, random_state=0)
    >>> features = TextureFeatures(mosaic.image)
    >>> features.site_counts(stride=16)  # doctest: +ELLIPSIS
    CoOccurrence(16 x 480, 344064 observations, ... non-zeros)
    >>> features.block_dissimilarities(block=16, stride=16, n_random=1, random_state=0)
    ... # doctest: +ELLIPSIS
    Dissimilarities(16 items, sparse: ... of 120 pairs)
    """

    def __init__(
        self,
        image,
        n_bins: int = N_BINS,
        frequencies=GABOR_FREQUENCIES,
        orientations: int = GABOR_ORIENTATIONS,
        window_periods: int = WINDOW_PERIODS,
    ):
        self.n_bins = _positive(n_bins, "n_bins")
        frequencies = np.asarray(frequencies, dtype=np.float64)
        if frequencies.ndim != 1 or not ((frequencies > 0) & (frequencies < 0.5)).all():
            raise ValueError(
                f"frequencies must lie in (0, 0.5) cycles per pixel, got {frequencies}"
            )
        orientations = _positive(orientations, "orientations")
        scale_windows = np.rint(_positive(window_periods, "window_periods") / frequencies)
        grey = _as_grey_image(image, int(scale_windows.max()))
        moduli = gabor_moduli(grey, frequencies, orientations)
        self.bins = discretise(np.concatenate([grey[None], moduli]), self.n_bins)
        self.channel_names = np.array(
            ["grey"] + [f"s{s}o{o}" for s in range(len(frequencies)) for o in range(orientations)]
        )
        self.windows = np.concatenate(
            [scale_windows.max(keepdims=True), np.repeat(scale_windows, orientations)]
        ).astype(np.int64)

    @property
    def shape(self) -> tuple[int, int]:
        """``(height, width)`` of the image."""
        return self.bins.shape[1:]

    def site_centres(self, stride: int) -> tuple[np.ndarray, np.ndarray]:
        """Row and column of the centre of every site of a grid with spacing ``stride``,
        row-major: ``(n_sites,)`` each."""
        rows = np.arange(_positive(stride, "stride") // 2, self.shape[0], stride)
        cols = np.arange(stride // 2, self.shape[1], stride)
        grid_rows, grid_cols = np.meshgrid(rows, cols, indexing="ij")
        return grid_rows.ravel(), grid_cols.ravel()

    def _histograms(self, channels, windows, stride: int) -> tuple[np.ndarray, np.ndarray]:
        """``(n_sites, len(channels), n_bins)`` histograms of the windows of side ``windows``
        (one per channel) centred on the grid of spacing ``stride``, and the grid's shape."""
        height, width = self.shape
        histograms = []
        # A loop over the channels; every window of a channel comes from one integral image.
        for channel, window in zip(channels, windows, strict=True):
            row_centres, tops = _grid(height, int(window), stride)
            col_centres, lefts = _grid(width, int(window), stride)
            top, left = np.meshgrid(tops, lefts, indexing="ij")
            histograms.append(
                window_histograms(
                    self.bins[channel], self.n_bins, top.ravel(), left.ravel(), window, window
                )
            )
        return np.stack(histograms, axis=1), (len(row_centres), len(col_centres))

    def site_counts(self, stride: int = 4, include_grey: bool = False) -> CoOccurrence:
        """Sites x (channel, bin) counts for one-sided clustering (Hofmann, Puzicha and Jordan
        1998, sec. 6.3): the histogram of each Gabor channel over a window around the site,
        :attr:`windows` pixels wide (proportional to the channel's scale).

        Parameters
        ----------
        stride : int, default 4
            Spacing of the grid of sites (:meth:`site_centres`).
        include_grey : bool, default False
            Also count the grey level's bins (the seed uses the 12 Gabor channels).

        Returns
        -------
        CoOccurrence
            Rows ``"row,col"`` (the site's centre), columns ``"<channel>b<bin>"``.
        """
        channels = np.arange(0 if include_grey else 1, len(self.channel_names))
        histograms, _ = self._histograms(
            channels, self.windows[channels], _positive(stride, "stride")
        )
        rows, cols = self.site_centres(stride)
        columns = [
            f"{name}b{b}" for name in self.channel_names[channels] for b in range(self.n_bins)
        ]
        return CoOccurrence(
            histograms.reshape(len(rows), -1),
            row_labels=[f"{row},{col}" for row, col in zip(rows, cols, strict=True)],
            col_labels=columns,
        )

    def block_histograms(self, block: int = 32, stride: int = 8) -> tuple[np.ndarray, tuple]:
        """Histograms of every channel over ``block`` x ``block`` blocks centred on the grid of
        spacing ``stride`` (overlapping when ``stride < block``).

        Returns
        -------
        histograms : numpy.ndarray
            ``int64 (n_blocks, n_channels, n_bins)``, blocks row-major.
        grid_shape : (int, int)
            Blocks per column and per row.
        """
        block = _positive(block, "block")
        if block > min(self.shape):
            raise ValueError(f"block {block} is larger than the {self.shape} image")
        channels = np.arange(len(self.channel_names))
        return self._histograms(
            channels, np.full(channels.size, block), _positive(stride, "stride")
        )

    def block_dissimilarities(
        self,
        block: int = 32,
        stride: int = 8,
        n_random: int = 2,
        random_state=None,
        pixel_labels=None,
    ) -> Dissimilarities:
        """Kolmogorov-Smirnov distances (maximum over the 13 channels) between block
        histograms on the sparse neighbourhood graph, for pairwise clustering (Hofmann and
        Buhmann 1997, sec. 6.3).

        Parameters
        ----------
        block, stride : int
            As :meth:`block_histograms`.
        n_random, random_state
            Random partners per block, as :func:`neighbour_pairs`.
        pixel_labels : array_like, optional
            ``(height, width)`` ground truth; a block's label is that of its centre pixel.

        Returns
        -------
        Dissimilarities
            Sparse (only the graph's pairs observed); items ``"row,col"``, the block centres
            (:meth:`site_centres` of ``stride``).
        """
        histograms, grid_shape = self.block_histograms(block, stride)
        first, second = neighbour_pairs(grid_shape, n_random, random_state)
        distances = ks_distances(histograms[first], histograms[second])
        n_blocks = len(histograms)
        pairs = sp.coo_matrix((distances, (first, second)), shape=(n_blocks, n_blocks))
        rows, cols = self.site_centres(stride)
        labels = None if pixel_labels is None else np.asarray(pixel_labels)[rows, cols]
        return Dissimilarities.from_sparse(
            pairs,
            labels=labels,
            item_names=[f"{row},{col}" for row, col in zip(rows, cols, strict=True)],
        )
