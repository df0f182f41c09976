"""Rebuild ``data/textures.npz``: grey, tileable textures for texture-segmentation mosaics.

``load("texture-mosaic", ...)`` composes random mosaics of these textures (Hofmann and
Buhmann 1997, sec. 6.3; Hofmann, Puzicha and Jordan 1998, sec. 6.3); the file holds only the
small grey tiles, so loading needs none of the sources.

Sources (read once, here), all seamless tiles:

* patterns of Debian's ``gimp-data`` (``/usr/share/gimp/2.0/patterns``, GIMP's ``.pat``
  format, read by :func:`latentzoo.data.prepare_images.read_gimp_pattern`), listed in
  :data:`GIMP_TEXTURES`: stone, fabric and wood patterns of 82 to 156 pixels;
* natural textures of Debian's ``openarena-081-textures`` (rock, sand, ground, grass, wood;
  JPEG and TGA files inside ``pak4-textures.pk3``, a zip), listed in
  :data:`OPENARENA_TEXTURES`, 512 x 512 pixels each.

scikit-image's ``brick``, ``grass`` and ``gravel`` would fit too, but they are not tileable
and scikit-image is not a dependency of latentzoo; the two Debian packages give rock, sand,
grass and wood already.

Derivation: the grey level is PIL's ``convert("L")`` (ITU-R BT.601 luma, as
:mod:`latentzoo.data.image_features`); an OpenArena texture is averaged over 4 x 4 pixel
blocks (512 -> 128, which keeps it periodic); a GIMP pattern is resampled to 128 x 128 by
cubic spline with periodic boundaries (``scipy.ndimage.zoom``, ``mode="grid-wrap"``), which
keeps it tileable. Every texture is a periodic :data:`TILE` x :data:`TILE` ``uint8`` tile, so
a mosaic of any size repeats it without seams.

The file holds plain arrays (``np.load(..., allow_pickle=False)`` reads it): ``textures``
(``uint8 (n, 128, 128)``), ``names`` (``"gimp:Stone/granite1"``, ``"openarena:rock01"``...),
per texture ``texture_sources`` and ``texture_licences``, and the unicode scalars ``source``,
``licence`` and ``derivation``.

Run from the repository root, as root for ``apt-get`` (``make prepare-textures`` runs the
last two steps)::

    apt-get install gimp-data openarena-081-textures
    python -m latentzoo.data.prepare_textures            # writes data/textures.npz
    python -m latentzoo.data.prepare_textures --check    # rebuilds and compares only
"""

from __future__ import annotations

import io
import subprocess
import sys
import zipfile
from pathlib import Path

import numpy as np

from .prepare_images import GIMP_APT, GIMP_LICENCE, GIMP_PATTERNS, read_gimp_pattern
from .rebuild import PrepareError, rebuild_main

__all__ = ["GIMP_TEXTURES", "OPENARENA_TEXTURES", "TILE", "build", "main"]

OUTPUT = Path(__file__).with_name("textures.npz")
OPENARENA_PK3 = Path("/usr/share/games/openarena/baseoa/pak4-textures.pk3")
OPENARENA_APT = "apt-get install openarena-081-textures"
#: Side of every texture tile, in pixels.
TILE = 128
#: GIMP patterns used, relative to /usr/share/gimp/2.0/patterns (textured, not flat).
GIMP_TEXTURES = (
    "Fabric/burlap",
    "Stone/Moonfoot",
    "Stone/brick",
    "Stone/cracked",
    "Stone/granite1",
    "Stone/ground1",
    "Stone/stone33",
    "Wood/wood1",
)
#: OpenArena textures used, paths inside pak4-textures.pk3.
OPENARENA_TEXTURES = (
    "textures/acc_dm3/sp_ground.jpg",
    "textures/acc_dm5/sand.jpg",
    "textures/acc_dm5/wood01.jpg",
    "textures/cosmo_block/rock01.jpg",
    "textures/czest3ctf/grass_lush.tga",
    "textures/nki/nki_sand2.tga",
    "textures/stone/pjrock16.jpg",
    "textures/stone/pjrock21.jpg",
)
OPENARENA_LICENCE = (
    "OpenArena textures as packaged by Debian openarena-081-textures; its copyright file "
    "lists 'Files: *' under GPL-2+ (OpenArena Team, id Software and contributors)"
)
# Grey levels a rebuild may differ by: JPEG decoders and spline code differ in the last bits.
_GREY_TOLERANCE = 2


def _luma(rgb: np.ndarray) -> np.ndarray:
    from PIL import Image

    return np.asarray(Image.fromarray(np.ascontiguousarray(rgb)).convert("L"), dtype=np.float64)


def _gimp_tile(path: Path) -> np.ndarray:
    """A GIMP pattern as a periodic TILE x TILE grey tile (float, 0-255)."""
    from scipy import ndimage

    grey = _luma(read_gimp_pattern(path))
    zoom = (TILE / grey.shape[0], TILE / grey.shape[1])
    tile = ndimage.zoom(grey, zoom, order=3, mode="grid-wrap", grid_mode=True)
    return tile[:TILE, :TILE]


def _openarena_tile(pk3: zipfile.ZipFile, member: str) -> np.ndarray:
    """A 512 x 512 OpenArena texture averaged over 4 x 4 blocks (float, 0-255)."""
    from PIL import Image

    with Image.open(io.BytesIO(pk3.read(member))) as image:
        grey = _luma(np.asarray(image.convert("RGB")))
    block = grey.shape[0] // TILE
    if grey.shape != (TILE * block, TILE * block):
        raise ValueError(f"{member} is {grey.shape}, expected a square multiple of {TILE}")
    return grey.reshape(TILE, block, TILE, block).mean(axis=(1, 3))


def _version(package: str) -> str:
    done = subprocess.run(
        ["dpkg-query", "-W", "-f=${Version}", package], capture_output=True, text=True
    )
    return done.stdout.strip() or "unknown"


def build() -> dict[str, np.ndarray]:
    """The arrays of ``data/textures.npz`` (see the module docstring)."""
    missing = [name for name in GIMP_TEXTURES if not (GIMP_PATTERNS / f"{name}.pat").is_file()]
    if missing:
        raise PrepareError(f"GIMP patterns {missing} not found; install them with: {GIMP_APT}")
    if not OPENARENA_PK3.is_file():
        raise PrepareError(f"{OPENARENA_PK3} not found; install it with: {OPENARENA_APT}")
    gimp_version, openarena_version = _version("gimp-data"), _version("openarena-081-textures")
    tiles, names, sources, licences = [], [], [], []
    for name in GIMP_TEXTURES:
        tiles.append(_gimp_tile(GIMP_PATTERNS / f"{name}.pat"))
        names.append(f"gimp:{name}")
        sources.append(f"Debian gimp-data {gimp_version}, {GIMP_PATTERNS / name}.pat")
        licences.append(GIMP_LICENCE)
    with zipfile.ZipFile(OPENARENA_PK3) as pk3:
        for member in OPENARENA_TEXTURES:
            tiles.append(_openarena_tile(pk3, member))
            names.append(f"openarena:{Path(member).stem}")
            sources.append(
                f"Debian openarena-081-textures {openarena_version}, {OPENARENA_PK3}:{member}"
            )
            licences.append(OPENARENA_LICENCE)
    textures = np.clip(np.rint(np.stack(tiles)), 0, 255).astype(np.uint8)
    return {
        "textures": textures,
        "names": np.array(names),
        "texture_sources": np.array(sources),
        "texture_licences": np.array(licences),
        "source": np.array(
            f"{len(GIMP_TEXTURES)} patterns of Debian gimp-data {gimp_version} and "
            f"{len(OPENARENA_TEXTURES)} textures of Debian openarena-081-textures "
            f"{openarena_version}"
        ),
        "licence": np.array(
            "grey, resampled versions of the source images: GIMP patterns under gimp-data's "
            "licences (GPL-3+ and others), OpenArena textures GPL-2+; per texture in "
            "texture_licences"
        ),
        "derivation": np.array(
            f"BT.601 grey level (PIL convert('L')); OpenArena 512 x 512 averaged over 4 x 4 "
            f"blocks, GIMP patterns resampled to {TILE} x {TILE} by periodic cubic spline "
            "(scipy.ndimage.zoom, grid-wrap); periodic uint8 tiles; built by python -m "
            "latentzoo.data.prepare_textures"
        ),
    }


def _same(npz, arrays) -> bool:
    stored, rebuilt = npz["textures"].astype(np.int16), arrays["textures"].astype(np.int16)
    if stored.shape != rebuilt.shape or not np.array_equal(npz["names"], arrays["names"]):
        return False
    return bool(np.abs(stored - rebuilt).max(initial=0) <= _GREY_TOLERANCE)


def main(argv=None) -> int:
    def detail(arrays):
        return f", {len(arrays['textures'])} textures"

    return rebuild_main("prepare_textures", build, __doc__, OUTPUT, argv, _same, detail)


if __name__ == "__main__":
    sys.exit(main())
