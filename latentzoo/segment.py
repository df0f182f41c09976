"""``latentzoo segment``: unsupervised texture segmentation of a grey image (issue 28).

``latentzoo segment IMAGE --model one-sided|pairwise --textures K --out seg.png`` reads
``IMAGE`` (a ``.png`` or ``.npy`` file, or ``mosaic:K:SIZE:SEED`` for a generated texture mosaic
with its ground truth), segments it by one-sided clustering of Gabor histograms (multiscale by
default) or pairwise clustering of Kolmogorov-Smirnov distances, and writes the segmentation
drawn over the image: every segment tinted in its own colour, the boundaries in black. The
command prints one line per result (time, objective and, for a mosaic, the pixel error after
the best matching of segments to textures). Errors of the user's input are ``ValueError``s that
the ``latentzoo`` command prints as one line.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np

__all__ = ["add_segment_parser", "cmd_segment", "overlay", "read_image"]

# BT.601 luma weights, the usual conversion of RGB to grey.
_LUMA = np.array([0.299, 0.587, 0.114])
# Share of the segment colour in the drawn overlay (the rest is the grey image).
_TINT = 0.45


def add_segment_parser(subparsers) -> argparse.ArgumentParser:
    """Add the ``segment`` subcommand to ``subparsers`` (of :func:`argparse.ArgumentParser.\
add_subparsers`) and return its parser.

    Examples
    --------
    >>> parser = argparse.ArgumentParser()
    >>> segment = add_segment_parser(parser.add_subparsers(dest="command"))
    >>> parser.parse_args(["segment", "in.png", "--textures", "3"]).model
    'one-sided'
    """
    parser = subparsers.add_parser(
        "segment",
        help="unsupervised texture segmentation of a grey image (Gabor histograms)",
        description="Segment a grey image into textures by one-sided clustering of Gabor "
        "histograms (multiscale) or pairwise clustering of Kolmogorov-Smirnov distances.",
    )
    parser.add_argument(
        "image", help="a .png or .npy grey image, or mosaic:K:SIZE:SEED for a generated mosaic"
    )
    parser.add_argument(
        "--model", choices=("one-sided", "pairwise"), default="one-sided",
        help="one-sided clustering (ACM, default) or pairwise clustering",
    )  # fmt: skip
    parser.add_argument("--textures", type=int, required=True, help="number of segments K")
    parser.add_argument("--out", default="segmentation.png", help="the drawn segmentation (.png)")
    parser.add_argument(
        "--single-level", action="store_true", help="one-sided: no multiscale optimisation"
    )
    parser.add_argument("--tap", action="store_true", help="pairwise: the cavity (TAP) correction")
    parser.add_argument(
        "--grey", action="store_true", help="convert a colour image to grey (BT.601 luma)"
    )
    parser.add_argument("--seed", type=int, default=0, help="random seed (default 0)")
    parser.add_argument("--quiet", action="store_true", help="no progress bar")
    return parser


def read_image(source: str, grey: bool = False):
    """The image named on the command line, and its ground truth when it is a mosaic.

    Parameters
    ----------
    source : str
        A ``.png`` or ``.npy`` path, or ``mosaic:K:SIZE:SEED``.
    grey : bool
        Convert a colour image to grey (otherwise the segmenters refuse it).

    Returns
    -------
    image : numpy.ndarray
    truth : numpy.ndarray or None
        The label map of a generated mosaic.

    Examples
    --------
    >>> image, truth = read_image("mosaic:2:64:0")
    >>> image.shape, truth.shape
    ((64, 64), (64, 64))
    """
    if source.startswith("mosaic:"):
        from latentzoo.data import load

        parts = source.split(":")[1:]
        if len(parts) != 3 or not all(part.isdigit() for part in parts):
            raise ValueError(f"{source!r}: a generated mosaic is named mosaic:K:SIZE:SEED")
        n_textures, size, seed = map(int, parts)
        mosaic = load("texture-mosaic", n_textures=n_textures, size=size, random_state=seed)
        return mosaic.image, mosaic.labels
    path = Path(source)
    if not path.exists():
        raise ValueError(f"{source}: no such file")
    if path.suffix == ".npy":
        image = np.load(path, allow_pickle=False)
    elif path.suffix == ".png":
        import matplotlib.image

        image = matplotlib.image.imread(path)
    else:
        raise ValueError(f"{source}: give a .png or .npy image, or mosaic:K:SIZE:SEED")
    if grey and image.ndim == 3 and image.shape[2] in (3, 4):
        image = image[..., :3] @ _LUMA
    return image, None


def overlay(image, labels) -> np.ndarray:
    """The segmentation drawn over the image: ``(h, w, 3)`` RGB in [0, 1], each segment tinted
    in a colour of matplotlib's ``tab10``, the pixels on a boundary between segments black.

    Examples
    --------
    >>> rgb = overlay(np.zeros((4, 4)), np.array([[0, 0, 1, 1]] * 4))
    >>> rgb.shape, bool((rgb[:, 1:3] == 0).all())
    ((4, 4, 3), True)
    """
    from matplotlib import colormaps

    grey = np.asarray(image, dtype=np.float64)
    span = np.ptp(grey)
    grey = (grey - grey.min()) / span if span > 0 else np.zeros_like(grey)
    colours = np.asarray(colormaps["tab10"].colors)[np.asarray(labels) % 10]
    rgb = (1 - _TINT) * grey[..., None] + _TINT * colours
    edge = np.zeros(labels.shape, dtype=bool)
    edge[:, 1:] |= labels[:, 1:] != labels[:, :-1]
    edge[:, :-1] |= labels[:, 1:] != labels[:, :-1]
    edge[1:] |= labels[1:] != labels[:-1]
    edge[:-1] |= labels[1:] != labels[:-1]
    rgb[edge] = 0.0
    return rgb


def cmd_segment(args) -> int:
    """Run ``latentzoo segment`` with the parsed ``args``; returns the exit status (0)."""
    import matplotlib.image

    from latentzoo.inference.texture_segmentation import segment_one_sided, segment_pairwise

    out = Path(args.out)
    if out.suffix != ".png":
        raise ValueError(f"--out {args.out}: the segmentation is written as a .png image")
    image, truth = read_image(args.image, grey=args.grey)
    if np.ndim(image) == 3 and not args.grey:
        raise ValueError(f"{args.image} is a colour image: pass --grey to convert it to grey")
    options = {"random_state": args.seed, "progressbar": not args.quiet}
    start = time.perf_counter()
    if args.model == "one-sided":
        result = segment_one_sided(image, args.textures, multiscale=not args.single_level,
                                   **options)  # fmt: skip
    else:
        result = segment_pairwise(image, args.textures, tap=args.tap, **options)
    seconds = time.perf_counter() - start
    out.parent.mkdir(parents=True, exist_ok=True)
    matplotlib.image.imsave(out, overlay(image, result.labels))
    line = (
        f"{result.method}: {args.textures} segments of a {image.shape[0]} x {image.shape[1]} "
        f"image in {seconds:.2f} s ({result.objective_name} {result.objective:.6g})"
    )
    if truth is not None:
        line += f", pixel error {result.error(truth):.1%} after matching"
    print(f"{line}; wrote {out}")
    return 0
