"""Rebuild ``data/images.npz``: colour and texture features of a labelled image collection.

The thesis (chapter 5) retrieved Corel images, which cannot be redistributed. This script
builds a small labelled collection available offline instead, one category per source image,
and ships only the 240 real features of section 5.2.1 (:mod:`latentzoo.data.image_features`)
per image; ``load("images")`` reads them without any of the sources.

Sources (read once, here):

* the photographs and textures shipped inside the scikit-image wheel (``skimage/data/``; only
  files bundled in the wheel, never the ones ``skimage.data`` downloads with pooch), listed in
  :data:`SKIMAGE_IMAGES` with their licences (public domain, CC0 or "no known copyright
  restrictions", as the scikit-image docstrings state);
* every pattern of Debian's ``gimp-data`` (``/usr/share/gimp/2.0/patterns/*/*.pat``, GIMP's
  own pattern format, read by :func:`read_gimp_pattern`; transparent pixels are composited
  over white).

Crops (:data:`CROP` = 64 x 64 pixels, :data:`CROPS_PER_CATEGORY` = 16 per source):

* a photograph is first resized (``skimage.transform.resize``, anti-aliased) so its shorter
  side is 256 pixels, cut into the grid of non-overlapping 64 x 64 tiles, tiles whose grey
  level is nearly flat (standard deviation below 0.02, e.g. the black corners of ``retina``)
  are dropped, and 16 of the rest are drawn without replacement;
* a GIMP pattern is a seamless tile: it is repeated periodically and 16 crops are taken at
  offsets drawn uniformly in the pattern (so crops of a small pattern are shifted copies).

Draws use ``numpy.random.default_rng(SEED)`` in the order of the sources, so the collection is
reproducible. Labels are ``"skimage:<name>"`` or ``"gimp:<Folder>/<pattern>"``; item names add
``#<crop>``.

The file holds plain arrays (``np.load(..., allow_pickle=False)`` reads it): ``X`` (``float64
(N, 240)``), ``feature_names``, ``item_names``, ``label_codes`` indexing ``classes``, per class
``class_sources`` and ``class_licences``, per item ``crop_origin`` (row, column of the crop in
the resized photograph or in the pattern) and ``crop_scale`` (resize factor; 1 for patterns),
and the unicode scalars ``source``, ``licence`` and ``derivation``.

Run from the repository root, as root for ``apt-get`` (``make prepare-images`` does the last
two steps)::

    apt-get install gimp-data
    pip install scikit-image
    python -m latentzoo.data.prepare_images            # writes data/images.npz
    python -m latentzoo.data.prepare_images --check    # rebuilds and compares only
"""

from __future__ import annotations

import importlib.util
import struct
import subprocess
import sys
from pathlib import Path

import numpy as np

from .image_features import feature_names, image_features
from .rebuild import PrepareError, rebuild_main

__all__ = [
    "CROP",
    "CROPS_PER_CATEGORY",
    "GIMP_PATTERNS",
    "SEED",
    "SKIMAGE_IMAGES",
    "build",
    "crop_pattern",
    "crop_photograph",
    "main",
    "read_gimp_pattern",
]

OUTPUT = Path(__file__).with_name("images.npz")
GIMP_PATTERNS = Path("/usr/share/gimp/2.0/patterns")
GIMP_APT = "apt-get install gimp-data"
SKIMAGE_PIP = "pip install scikit-image"
CROP = 64
CROPS_PER_CATEGORY = 16
PHOTO_SIDE = 256
FLAT_SD = 0.02
SEED = 20070501

#: file in skimage/data -> licence, as stated in scikit-image's docstrings of skimage.data.
SKIMAGE_IMAGES = {
    "astronaut.png": "public domain (NASA; no known copyright restrictions)",
    "brick.png": "CC0 (CC0Textures Bricks25)",
    "camera.png": "CC0 (photographer Lav Varshney)",
    "chelsea.png": "CC0 (photographer Stefan van der Walt)",
    "coffee.png": "CC0 (photographer Rachel Michetti)",
    "coins.png": "no known copyright restrictions (Brooklyn Museum Collection)",
    "grass.png": "CC0 (DeviantArt linolafett, Grass-01)",
    "gravel.png": "CC0 (CC0Textures Gravel04)",
    "hubble_deep_field.jpg": "public domain (NASA, Hubble eXtreme Deep Field)",
    "ihc.png": "no known copyright restrictions (CMMI immunohistochemistry)",
    "retina.jpg": "CC0 (Mikael Häggström, Wikimedia Commons)",
    "rocket.jpg": "public domain (SpaceX, DSCOVR launch)",
    "text.png": "public domain (Wikipedia, Corner.png)",
}
GIMP_LICENCE = (
    "GIMP's pattern data as packaged by Debian gimp-data; its copyright file lists 'Files: *' "
    "under GPL-3+ and GPL-2+ and LGPL-3+ and MIT and Expat and BSD-2-clause"
)


def read_gimp_pattern(path) -> np.ndarray:
    """Pixels of a GIMP ``.pat`` pattern as ``uint8 (h, w, 3)`` RGB.

    The format: a big-endian header of ``header_size, version, width, height, bytes per
    pixel`` (32-bit each), the magic ``b"GPAT"`` and the name, then the pixels row by row.
    Grey (1 byte per pixel) is repeated into RGB; an alpha channel (2 or 4 bytes) is
    composited over white.

    Examples
    --------
    >>> import struct, tempfile, pathlib
    >>> header = struct.pack(">5I", 26, 1, 2, 1, 2) + b"GPAT" + b"ab"
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "t.pat"
    >>> _ = path.write_bytes(header + bytes([0, 255, 0, 0]))  # opaque black, clear
    >>> read_gimp_pattern(path)[0].tolist()
    [[0, 0, 0], [255, 255, 255]]
    """
    raw = Path(path).read_bytes()
    header_size, version, width, height, depth = struct.unpack(">5I", raw[:20])
    if raw[20:24] != b"GPAT" or depth not in (1, 2, 3, 4):
        raise ValueError(f"{path} is not a GIMP pattern (magic {raw[20:24]!r}, depth {depth})")
    pixels = np.frombuffer(raw[header_size:], dtype=np.uint8)
    if pixels.size != width * height * depth:
        raise ValueError(
            f"{path}: {pixels.size} bytes of pixels, expected {width}x{height}x{depth}"
        )
    pixels = pixels.reshape(height, width, depth).astype(np.float64)
    colour = pixels[..., : 3 if depth >= 3 else 1]
    if depth in (2, 4):
        alpha = pixels[..., -1:] / 255.0
        colour = colour * alpha + 255.0 * (1.0 - alpha)
    rgb = np.broadcast_to(colour, (height, width, 3))
    return np.rint(rgb).astype(np.uint8)


def crop_pattern(pattern: np.ndarray, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """:data:`CROPS_PER_CATEGORY` crops of a periodically repeated pattern, and their origins.

    Examples
    --------
    >>> import numpy as np
    >>> crops, origins = crop_pattern(np.zeros((20, 30, 3), np.uint8), np.random.default_rng(0))
    >>> crops.shape, origins.shape
    ((16, 64, 64, 3), (16, 2))
    """
    height, width = pattern.shape[:2]
    origins = np.stack(
        [rng.integers(0, height, CROPS_PER_CATEGORY), rng.integers(0, width, CROPS_PER_CATEGORY)],
        axis=1,
    )
    rows = (origins[:, 0, None] + np.arange(CROP)[None]) % height
    cols = (origins[:, 1, None] + np.arange(CROP)[None]) % width
    return pattern[rows[:, :, None], cols[:, None, :]], origins


def crop_photograph(
    image: np.ndarray, rng: np.random.Generator
) -> tuple[np.ndarray, np.ndarray, float]:
    """Crops of a photograph resized to a shorter side of 256: 16 non-flat grid tiles.

    Returns the crops (``uint8 (16, 64, 64, 3)``), their origins in the resized image and the
    resize factor.

    Examples
    --------
    Needs scikit-image (``make prepare-images`` installs it), which the package does not:

    >>> import numpy as np
    >>> noise = np.random.default_rng(1).integers(0, 256, (300, 400, 3), dtype=np.uint8)
    >>> crops, origins, scale = crop_photograph(noise, np.random.default_rng(0))  # doctest: +SKIP
    >>> crops.shape, round(scale, 3)  # doctest: +SKIP
    ((16, 64, 64, 3), 0.853)
    """
    from skimage.transform import resize

    if image.ndim == 2:
        image = np.repeat(image[:, :, None], 3, axis=2)
    image = image[..., :3]
    scale = PHOTO_SIDE / min(image.shape[:2])
    shape = tuple(int(round(side * scale)) for side in image.shape[:2])
    resized = resize(image, shape, order=1, anti_aliasing=True, preserve_range=True)
    resized = np.clip(np.rint(resized), 0, 255).astype(np.uint8)
    n_rows, n_cols = shape[0] // CROP, shape[1] // CROP
    tiles = resized[: n_rows * CROP, : n_cols * CROP].reshape(n_rows, CROP, n_cols, CROP, 3)
    tiles = tiles.transpose(0, 2, 1, 3, 4).reshape(n_rows * n_cols, CROP, CROP, 3)
    grey_sd = (tiles.astype(np.float64) / 255.0 @ np.array([0.299, 0.587, 0.114])).std(axis=(1, 2))
    usable = np.flatnonzero(grey_sd >= FLAT_SD)
    if usable.size < CROPS_PER_CATEGORY:
        raise ValueError(
            f"only {usable.size} of {tiles.shape[0]} tiles are not flat, need {CROPS_PER_CATEGORY}"
        )
    chosen = np.sort(rng.choice(usable, CROPS_PER_CATEGORY, replace=False))
    origins = np.stack([chosen // n_cols, chosen % n_cols], axis=1) * CROP
    return tiles[chosen], origins, scale


def _skimage_folder() -> Path:
    spec = importlib.util.find_spec("skimage")
    if spec is None or not spec.submodule_search_locations:
        raise PrepareError(f"scikit-image is not installed; install it with: {SKIMAGE_PIP}")
    return Path(next(iter(spec.submodule_search_locations))) / "data"


def _version(command: list[str]) -> str:
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    return done.stdout.strip() or "unknown"


def build() -> dict[str, np.ndarray]:
    """The arrays of ``data/images.npz`` (see the module docstring)."""
    folder = _skimage_folder()
    missing = [name for name in SKIMAGE_IMAGES if not (folder / name).is_file()]
    if missing:
        raise PrepareError(
            f"scikit-image at {folder} lacks {missing}; reinstall it with: {SKIMAGE_PIP}"
        )
    patterns = sorted(GIMP_PATTERNS.glob("*/*.pat"))
    if not patterns:
        raise PrepareError(f"no GIMP patterns in {GIMP_PATTERNS}; install them with: {GIMP_APT}")
    import skimage
    from skimage.io import imread

    rng = np.random.default_rng(SEED)
    crops, origins, scales, labels, class_names, sources, licences = [], [], [], [], [], [], []
    # One source image per category: a loop over ~70 files, each vectorised inside.
    for name, licence in SKIMAGE_IMAGES.items():
        try:
            these, where, scale = crop_photograph(imread(folder / name), rng)
        except ValueError as error:
            raise ValueError(f"skimage/data/{name}: {error}") from error
        label = f"skimage:{Path(name).stem}"
        crops.append(these), origins.append(where), scales.append(np.full(len(these), scale))
        class_names.append(label)
        sources.append(f"scikit-image {skimage.__version__} wheel, skimage/data/{name}")
        licences.append(f"{licence}; scikit-image is BSD-3-Clause")
    gimp_version = _version(["dpkg-query", "-W", "-f=${Version}", "gimp-data"])
    for path in patterns:
        these, where = crop_pattern(read_gimp_pattern(path), rng)
        relative = path.relative_to(GIMP_PATTERNS)
        crops.append(these), origins.append(where), scales.append(np.ones(len(these)))
        class_names.append(f"gimp:{relative.with_suffix('')}")
        sources.append(f"Debian gimp-data {gimp_version}, {GIMP_PATTERNS / relative}")
        licences.append(GIMP_LICENCE)
    for label in class_names:
        labels.extend([label] * CROPS_PER_CATEGORY)
    images = np.concatenate(crops)
    X = image_features(images)
    classes = np.array(class_names)
    codes = np.repeat(np.arange(classes.size, dtype=np.int16), CROPS_PER_CATEGORY)
    items = np.array(
        [f"{label}#{j:02d}" for label in class_names for j in range(CROPS_PER_CATEGORY)]
    )
    return {
        "X": X,
        "feature_names": feature_names(),
        "item_names": items,
        "label_codes": codes,
        "classes": classes,
        "class_sources": np.array(sources),
        "class_licences": np.array(licences),
        "crop_origin": np.concatenate(origins).astype(np.int16),
        "crop_scale": np.concatenate(scales),
        "source": np.array(
            f"{len(SKIMAGE_IMAGES)} images bundled in the scikit-image {skimage.__version__} "
            f"wheel and the {len(patterns)} patterns of Debian gimp-data {gimp_version}"
        ),
        "licence": np.array(
            "derived features (numbers computed from the images, not the images); per class "
            "licences in class_licences: scikit-image images public domain / CC0 / no known "
            "restrictions, GIMP patterns under gimp-data's licences (GPL-3+ and others)"
        ),
        "derivation": np.array(
            f"{CROPS_PER_CATEGORY} crops of {CROP}x{CROP} pixels per source (photographs "
            f"resized to a shorter side of {PHOTO_SIDE} px, non-flat grid tiles; patterns "
            f"repeated periodically, random offsets; rng seed {SEED}); features of thesis sec. "
            "5.2.1 by latentzoo.data.image_features.image_features; built by python -m "
            "latentzoo.data.prepare_images"
        ),
    }


def _same(npz, arrays) -> bool:
    # JPEG decoders and resampling may differ in the last bits between versions.
    return np.allclose(npz["X"], arrays["X"], rtol=1e-6, atol=1e-9) and all(
        np.array_equal(npz[key], arrays[key])
        for key in ("item_names", "label_codes", "classes", "crop_origin")
    )


def _detail(arrays) -> str:
    return f", {len(arrays['X'])} images"


def main(argv=None) -> int:
    return rebuild_main("prepare_images", build, __doc__, OUTPUT, argv, _same, _detail)


if __name__ == "__main__":
    sys.exit(main())
