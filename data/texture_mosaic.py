"""Texture mosaics with ground truth: random Voronoi compositions of periodic texture tiles.

The benchmark images of unsupervised texture segmentation (Hofmann and Buhmann 1997, sec. 6.3;
Hofmann, Puzicha and Jordan 1998, sec. 6.3) are "randomly composed texture images" of five
textures. :func:`compose_mosaic` draws such a composition: ``n_textures`` distinct textures,
each filling the Voronoi cell of a uniformly drawn seed point, repeated periodically from a
random offset. ``load("texture-mosaic", ...)`` composes the tiles shipped in
``data/textures.npz`` (:mod:`latentzoo.data.prepare_textures`).

An image with its label map is not one of the clustering containers (``CoOccurrence``,
``Features``, ``Dissimilarities``); :mod:`latentzoo.data.texture_features` turns it into them.
"""

from __future__ import annotations

import numbers
from dataclasses import dataclass

import numpy as np

from .checks import as_rng, check_random_state

__all__ = ["MIN_CELL_SHARE", "TextureMosaic", "compose_mosaic"]

#: Each texture covers at least this share of an even split of the image (a Voronoi cell
#: of a few pixels would make a texture impossible to find and the error meaningless).
MIN_CELL_SHARE = 0.25
# Seed layouts drawn at most before giving up on MIN_CELL_SHARE (one in a few succeeds).
_MAX_LAYOUTS = 1000


@dataclass(frozen=True, eq=False)
class TextureMosaic:
    """A grey texture mosaic and its ground truth.

    Attributes
    ----------
    image : numpy.ndarray
        ``float64 (size, size)`` grey levels in [0, 1].
    labels : numpy.ndarray
        ``int64 (size, size)``: the texture of every pixel, indexing :attr:`texture_names`.
    texture_names : numpy.ndarray
        Names of the textures (``"gimp:Stone/granite1"``, ``"openarena:rock01"``...).
    """

    image: np.ndarray
    labels: np.ndarray
    texture_names: np.ndarray

    @property
    def n_textures(self) -> int:
        """Number of textures ``K`` (the labels are ``0..K-1``)."""
        return len(self.texture_names)

    @property
    def shape(self) -> tuple[int, int]:
        """``(height, width)`` of the image."""
        return self.image.shape

    def copy(self) -> TextureMosaic:
        """A copy whose arrays are independent of this mosaic's."""
        return TextureMosaic(self.image.copy(), self.labels.copy(), self.texture_names.copy())

    def __repr__(self) -> str:
        height, width = self.shape
        return f"TextureMosaic({height} x {width}, {self.n_textures} textures)"


def _count(value, name: str, low: int, high: int) -> int:
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise ValueError(f"{name} must be an integer, got {value!r}")
    if not low <= value <= high:
        raise ValueError(f"{name} must lie in [{low}, {high}], got {value}")
    return int(value)


def _voronoi_labels(n_textures: int, size: int, rng: np.random.Generator) -> np.ndarray:
    """Label map of the Voronoi cells of uniform seeds, every cell at least MIN_CELL_SHARE of
    ``size**2 / n_textures`` pixels (seeds redrawn until so)."""
    centres = np.arange(size) + 0.5
    least = MIN_CELL_SHARE * size * size / n_textures
    # A loop over candidate layouts (a handful), each vectorised over the pixels.
    for _ in range(_MAX_LAYOUTS):
        seeds = rng.random((n_textures, 2)) * size
        distance = (centres[:, None, None] - seeds[None, None, :, 0]) ** 2 + (
            centres[None, :, None] - seeds[None, None, :, 1]
        ) ** 2
        labels = distance.argmin(axis=2)
        if np.bincount(labels.ravel(), minlength=n_textures).min() >= least:
            return labels
    raise ValueError(
        f"no Voronoi layout of {n_textures} cells with every cell at least "
        f"{MIN_CELL_SHARE:g} of an even share of a {size} x {size} image in {_MAX_LAYOUTS} draws"
    )


def compose_mosaic(
    textures, texture_names, n_textures: int = 5, size: int = 256, random_state=None
) -> TextureMosaic:
    """A random Voronoi mosaic of ``n_textures`` distinct periodic textures.

    Draws, in this order from ``random_state``: which textures (without replacement), the
    Voronoi seeds (uniform in the image, redrawn until every cell has at least
    :data:`MIN_CELL_SHARE` of an even share of the pixels), and for each texture a uniform
    offset into its tile. Each cell shows its texture repeated periodically from that offset,
    so the same seed gives the same mosaic.

    Parameters
    ----------
    textures : array_like
        ``(n, tile_height, tile_width)`` periodic grey tiles, ``uint8`` (0-255) or float in
        [0, 1].
    texture_names : sequence of str
        Name of each tile.
    n_textures : int, default 5
        Textures in the mosaic, ``2 <= n_textures <= n``.
    size : int, default 256
        Side of the square image, at least 16 pixels.
    random_state : None, int or numpy.random.Generator, optional
        Seeds the composition.

    Returns
    -------
    TextureMosaic
        The image, the label map (``0..n_textures-1`` in the order the textures were drawn)
        and the names of the drawn textures.

    Raises
    ------
    ValueError
        If the counts are out of range, the tiles are not a stack of grey images or
        ``random_state`` is invalid.

    Examples
    --------
    >>> import numpy as np
    >>> tiles = np.stack([np.zeros((4, 4)), np.ones((4, 4))])
    >>> mosaic = compose_mosaic(tiles, ["black", "white"], 2, size=16, random_state=0)
    >>> mosaic
    TextureMosaic(16 x 16, 2 textures)
    >>> bool(np.array_equal(mosaic.image, mosaic.labels == list(mosaic.texture_names).index("white")))
    True
    """
    tiles = np.asarray(textures)
    if tiles.ndim != 3 or tiles.dtype.kind not in "uif" or tiles.shape[0] == 0:
        raise ValueError(
            f"textures must be a non-empty (n, height, width) stack of grey tiles, got shape "
            f"{tiles.shape} and dtype {tiles.dtype}"
        )
    names = np.asarray(texture_names, dtype=str)
    if names.shape != tiles.shape[:1]:
        raise ValueError(f"{len(names)} texture_names for {tiles.shape[0]} textures")
    n_textures = _count(n_textures, "n_textures", 2, tiles.shape[0])
    size = _count(size, "size", 16, 1 << 14)
    rng = as_rng(check_random_state(random_state))
    scale = 255.0 if tiles.dtype.kind in "ui" else 1.0
    chosen = rng.choice(tiles.shape[0], n_textures, replace=False)
    labels = _voronoi_labels(n_textures, size, rng)
    tile_height, tile_width = tiles.shape[1:]
    offsets = np.stack(
        [rng.integers(0, tile_height, n_textures), rng.integers(0, tile_width, n_textures)], axis=1
    )
    rows = (np.arange(size)[:, None] + offsets[labels, 0]) % tile_height
    cols = (np.arange(size)[None, :] + offsets[labels, 1]) % tile_width
    image = tiles[chosen][labels, rows, cols].astype(np.float64) / scale
    return TextureMosaic(image, labels.astype(np.int64), names[chosen])
