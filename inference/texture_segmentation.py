"""Unsupervised texture segmentation: one-sided clustering (ACM) of Gabor histograms, single-level
or multiscale, and pairwise clustering of Kolmogorov-Smirnov distances on a sparse graph.

Both segmenters start from :class:`~latentzoo.data.texture_features.TextureFeatures` (a Gabor
bank of 4 orientations x 3 octave-spaced scales, every channel cut into 40 bins).

**One-sided clustering** (Hofmann and Puzicha 1998, sec. 6.3): every site of a grid with spacing
``stride`` is a row of a site x (channel, bin) :class:`~latentzoo.data.CoOccurrence` (the
histograms of its windows), and the asymmetric clustering model groups the sites by their
feature distributions; each site's label paints the ``stride x stride`` pixels around it. The
E/M passes are those of :class:`~latentzoo.inference.one_sided.OneSidedEM`; the annealing is
:func:`~latentzoo.inference.annealing.cool` (deterministic annealing with the clusters split at
the phase transitions).

**Multiscale optimisation** (Hofmann and Puzicha 1998, sec. 5.4): level ``l`` ties the sites of
each ``2^l x 2^l`` square of the grid to one assignment variable. A tied group's log-likelihood
under the ACM is ``log sum_k rho_k prod_{i in group} L_ik``, and ``prod_i L_ik`` is the
multinomial likelihood of the group's summed counts, so level ``l`` is the ACM on the
coarse CoOccurrence whose rows are those sums: every level optimises the original likelihood of
the counts with fewer hidden variables (the mixture weights enter once per group instead of
once per site, a term of ``log K`` per site against the tens of thousands of counts each site
holds). The whole annealing schedule runs at the coarsest level, where a pass costs a small
fraction of a fine one; then each finer level starts from the coarser level's parameters, its
posteriors prolongated to the children, and EM refines at ``beta = 1`` until converged.

**Pairwise clustering** (Hofmann and Buhmann 1997, sec. 6.3): blocks on a grid, the maximum over
the 13 channels of the Kolmogorov-Smirnov distances between their histograms, observed only on a
sparse neighbourhood graph (adjacent blocks plus a few random partners), clustered by
:func:`~latentzoo.inference.pairwise.sparse_pairwise_annealing` (mean-field annealing, with the
cavity (TAP) correction as an option).

References
----------
T. Hofmann, J. Puzicha (1998), Statistical models for co-occurrence data, MIT AI Memo 1625,
sec. 5.4 and 6.3. T. Hofmann, J. M. Buhmann (1997), Pairwise data clustering by deterministic
annealing, IEEE PAMI 19:1-14, sec. 6.3.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np
import pandas as pd
import scipy.sparse as sp
from scipy.optimize import linear_sum_assignment

from latentzoo.data import CoOccurrence
from latentzoo.data.checks import as_rng, check_random_state
from latentzoo.data.texture_features import TextureFeatures
from latentzoo.inference.annealing import GeometricCooling, cool, run_schedule
from latentzoo.inference.one_sided import OneSidedEM
from latentzoo.inference.pairwise import sparse_pairwise_annealing
from latentzoo.inference.progress import progress_bar
from latentzoo.models._checks import check_integer
from latentzoo.models.one_sided import OneSidedClustering
from latentzoo.models.pairwise import PairwiseClustering

__all__ = [
    "COARSEST_SIDE",
    "Segmentation",
    "matched_error",
    "segment_one_sided",
    "segment_pairwise",
    "tied_sites",
]

#: The multiscale hierarchy stops coarsening before a side of the coarse grid falls below this
#: many groups (8 x 8 groups still leave a few per texture of a 5-texture mosaic).
COARSEST_SIDE = 8
# Inverse temperature where the annealing starts, times the level's mean row total: far above
# the first phase transition (measured near 1e-2 / mean row total on 5-texture mosaics).
_BETA_START_PER_COUNT = 1e-3


@dataclass
class Segmentation:
    """A texture segmentation: the label map at pixel resolution, its objective and timings.

    Attributes
    ----------
    labels : numpy.ndarray
        ``int64 (height, width)``: the segment of every pixel, ``0..K-1``.
    site_labels : numpy.ndarray
        ``int64 (grid rows, grid cols)``: the segment of every site (one-sided) or block
        (pairwise); each paints the ``stride x stride`` pixels around its centre.
    objective : float
        One-sided: the log-likelihood of the site counts under the fitted ACM (higher is better).
        Pairwise: the sparse pairwise cost of the labels (lower is better).
    objective_name : str
        ``"log_likelihood"`` or ``"pairwise_cost"``.
    method : str
        ``"one_sided_multiscale"``, ``"one_sided"``, ``"pairwise"`` or ``"pairwise_tap"``.
    seconds : dict
        ``features``, ``optimisation`` and ``total`` wall-clock seconds.
    levels : pandas.DataFrame
        One-sided: one row per level of the hierarchy, coarsest first (``level``, ``sites``,
        ``iterations``, ``seconds``, ``log_likelihood``); pairwise: the temperatures.
    settings : dict
        The options of the run.
    """

    labels: np.ndarray
    site_labels: np.ndarray
    objective: float
    objective_name: str
    method: str
    seconds: dict
    levels: pd.DataFrame = field(repr=False)
    settings: dict = field(default_factory=dict)

    def error(self, truth) -> float:
        """Share of pixels mislabelled after the best one-to-one matching of the segments to
        the ``truth`` labels (:func:`matched_error`)."""
        return matched_error(self.labels, truth)


def matched_error(labels, truth) -> float:
    """Share of pixels whose label differs from ``truth`` after the best one-to-one matching
    of the labels to the true classes (the Hungarian algorithm on the confusion matrix).

    Examples
    --------
    >>> matched_error([[0, 0], [1, 1]], [[1, 1], [0, 2]])
    0.25
    """
    labels, truth = np.asarray(labels).ravel(), np.asarray(truth).ravel()
    if labels.shape != truth.shape:
        raise ValueError(f"labels has {labels.size} pixels, truth {truth.size}")
    confusion = np.zeros((labels.max() + 1, truth.max() + 1))
    np.add.at(confusion, (labels, truth), 1.0)
    rows, cols = linear_sum_assignment(-confusion)
    return float(1.0 - confusion[rows, cols].sum() / labels.size)


def tied_sites(grid_shape, level: int) -> tuple[np.ndarray, tuple[int, int]]:
    """The group of every site when the ``2^level x 2^level`` squares of a grid are tied.

    Parameters
    ----------
    grid_shape : (int, int)
        Sites per column and per row (sites row-major).
    level : int
        0 ties nothing.

    Returns
    -------
    parent : numpy.ndarray
        ``int64 (n_sites,)``: each site's group, groups numbered row-major on the coarse grid.
    coarse_shape : (int, int)

    Examples
    --------
    >>> parent, shape = tied_sites((3, 4), 1)
    >>> parent.reshape(3, 4).tolist(), shape
    ([[0, 0, 1, 1], [0, 0, 1, 1], [2, 2, 3, 3]], (2, 2))
    """
    n_rows, n_cols = grid_shape
    step = 1 << level
    coarse_shape = (-(-n_rows // step), -(-n_cols // step))
    rows, cols = np.divmod(np.arange(n_rows * n_cols, dtype=np.int64), n_cols)
    return (rows >> level) * coarse_shape[1] + (cols >> level), coarse_shape


def _pixel_labels(site_labels: np.ndarray, stride: int, shape) -> np.ndarray:
    """Each pixel takes the label of the site whose ``stride x stride`` cell holds it."""
    rows = np.minimum(np.arange(shape[0]) // stride, site_labels.shape[0] - 1)
    cols = np.minimum(np.arange(shape[1]) // stride, site_labels.shape[1] - 1)
    return site_labels[np.ix_(rows, cols)]


def _features(image, features):
    start = time.perf_counter()
    features = TextureFeatures(image) if features is None else features
    return features, time.perf_counter() - start


def _default_levels(grid_shape) -> int:
    levels = 0
    while min(grid_shape) >> (levels + 1) >= COARSEST_SIDE:
        levels += 1
    return levels


def segment_one_sided(
    image,
    n_textures: int,
    *,
    multiscale: bool = True,
    n_levels: int | None = None,
    stride: int = 4,
    decay: float = 0.7,
    max_iter: int = 200,
    tol: float = 1e-7,
    random_state=None,
    progressbar: bool = False,
    features: TextureFeatures | None = None,
) -> Segmentation:
    """Segment a grey image by one-sided clustering (ACM) of its sites' Gabor histograms.

    See the module docstring. The ACM is fitted by maximum likelihood (``alpha = eta = 1``).

    Parameters
    ----------
    image : array_like
        ``(height, width)`` grey levels, finite, at least 64 x 64 (the largest Gabor window);
        colour images are refused (convert them first).
    n_textures : int
        Number of segments ``K``.
    multiscale : bool, default True
        Anneal at the coarsest level of the tied-site hierarchy and refine level by level;
        False anneals on the sites themselves (single-level optimisation).
    n_levels : int, optional
        Coarsening levels above the sites; default: as many as keep both sides of the coarse
        grid at least :data:`COARSEST_SIDE` groups. Ignored without ``multiscale``.
    stride : int, default 4
        Spacing of the sites in pixels.
    decay : float, default 0.7
        Cooling factor of the annealing (``T <- decay T``), from ``1e-3`` over the mean row
        total up to ``beta = 1``.
    max_iter : int, default 200
        EM passes per temperature (and per refinement level) at most.
    tol : float, default 1e-7
        A temperature (a level) ends when the relative change of the free energy is below it.
    random_state : None, int or numpy.random.Generator
        Seeds the k-means++ start and the symmetry breaking; the same seed, the same result.
    progressbar : bool, default False
        One bar of EM passes.
    features : TextureFeatures, optional
        Features of ``image`` already computed (then ``image`` is not read again).

    Returns
    -------
    Segmentation
        ``objective`` is the log-likelihood of the site counts; ``levels`` one row per level.

    Raises
    ------
    ValueError
        For a bad image (NaN, wrong dtype, colour, smaller than the largest Gabor window) or
        bad options, naming the problem.

    Examples
    --------
    >>> from latentzoo.data import load
    >>> mosaic = load("texture-mosaic", n_textures=2, size=128, random_state=0)
    >>> result = segment_one_sided(mosaic.image, 2, random_state=0)
    >>> result.labels.shape, result.method, result.levels["level"].tolist()
    ((128, 128), 'one_sided_multiscale', [2, 1, 0])
    """
    start = time.perf_counter()
    check_integer("n_textures", n_textures)
    check_integer("stride", stride)
    check_integer("max_iter", max_iter)
    if not 0 < decay < 1:
        raise ValueError(f"decay must lie in (0, 1), got {decay!r}")
    rng = as_rng(check_random_state(random_state))
    features, feature_seconds = _features(image, features)
    counts = features.site_counts(stride)
    grid_shape = (len(range(stride // 2, features.shape[0], stride)),
                  len(range(stride // 2, features.shape[1], stride)))  # fmt: skip
    if n_levels is None:
        n_levels = _default_levels(grid_shape) if multiscale else 0
    check_integer("n_levels", n_levels, low=0)
    if not multiscale:
        n_levels = 0
    model = OneSidedClustering(n_textures, alpha=1.0, eta=1.0)
    model.check_data(counts)
    optimisation = time.perf_counter()
    rows = []
    params, coarse_of_child = None, None
    with progress_bar(progressbar=progressbar, desc="one-sided EM", total=None) as bar:
        for level in range(n_levels, -1, -1):
            level_start = time.perf_counter()
            parent, _ = tied_sites(grid_shape, level)
            if level:
                tie = sp.csr_matrix(
                    (np.ones(parent.size), (parent, np.arange(parent.size))),
                    shape=(parent.max() + 1, parent.size),
                )
                data = CoOccurrence((tie @ counts.counts).tocsr())
            else:
                data = counts
            problem = OneSidedEM(model, data)
            if params is None:
                mean_total = float(data.total) / data.shape[0]
                schedule = GeometricCooling(_BETA_START_PER_COUNT / mean_total, 1.0, decay)
                run, stages, _ = cool(problem, problem.init(rng), schedule, max_iter, tol, progress=bar,
                                      components=[["q"]], rng=rng)  # fmt: skip
                iterations = int(stages["iterations"].sum())
            else:
                # Prolongation: every child starts with its group's parameters and posteriors.
                params = {**params, "resp": params["resp"][coarse_of_child]}
                run = run_schedule(problem, params, [1.0], max_iter, tol, progress=bar)
                iterations = int(run.stages["iterations"].sum())
            params = run.params
            # The final E-step, so that the posteriors are those of the final parameters.
            posterior, stats = problem.step(params, 1.0)
            params = {**params, "resp": posterior["resp"]}
            rows.append({"level": level, "sites": data.shape[0], "iterations": iterations,
                         "seconds": time.perf_counter() - level_start,
                         "log_likelihood": stats.log_likelihood})  # fmt: skip
            if level:
                finer, _ = tied_sites(grid_shape, level - 1)
                # The coarse group of every finer group: a finer group's first site decides.
                first_site = np.unique(finer, return_index=True)[1]
                coarse_of_child = parent[first_site]
    site_labels = params["resp"].argmax(axis=1).astype(np.int64).reshape(grid_shape)
    end = time.perf_counter()
    return Segmentation(
        labels=_pixel_labels(site_labels, stride, features.shape),
        site_labels=site_labels,
        objective=float(rows[-1]["log_likelihood"]),
        objective_name="log_likelihood",
        method="one_sided_multiscale" if n_levels else "one_sided",
        seconds={"features": feature_seconds, "optimisation": end - optimisation,
                 "total": end - start},  # fmt: skip
        levels=pd.DataFrame(rows),
        settings={"n_textures": n_textures, "multiscale": bool(n_levels), "n_levels": n_levels,
                  "stride": stride, "decay": decay, "max_iter": max_iter, "tol": tol},
    )  # fmt: skip


def segment_pairwise(
    image,
    n_textures: int,
    *,
    tap: bool = False,
    block: int = 32,
    stride: int = 8,
    n_random: int = 2,
    eta: float = 0.9,
    max_iter: int = 100,
    tol: float = 1e-4,
    random_state=None,
    progressbar: bool = False,
    features: TextureFeatures | None = None,
) -> Segmentation:
    """Segment a grey image by pairwise clustering of Kolmogorov-Smirnov distances between
    blocks, on a sparse neighbourhood graph (Hofmann and Buhmann 1997, sec. 6.3).

    Parameters
    ----------
    image : array_like
        As :func:`segment_one_sided`.
    n_textures : int
        Number of segments ``K``.
    tap : bool, default False
        The cavity (TAP) correction of the mean-field equations.
    block, stride : int
        Side of the blocks and spacing of their grid, in pixels (blocks overlap when
        ``stride < block``); each block's label paints the ``stride x stride`` pixels around
        its centre.
    n_random : int, default 2
        Random partners per block besides the adjacent ones
        (:func:`~latentzoo.data.texture_features.neighbour_pairs`).
    eta, max_iter, tol
        Cooling factor, sweeps per temperature, tolerance of
        :func:`~latentzoo.inference.pairwise.sparse_pairwise_annealing`.
    random_state : None, int or numpy.random.Generator
        Seeds the random partners and the annealing; the same seed, the same result.
    progressbar : bool, default False
        One bar of mean-field sweeps.
    features : TextureFeatures, optional
        Features of ``image`` already computed.

    Returns
    -------
    Segmentation
        ``objective`` is the sparse pairwise cost; ``levels`` the temperatures.

    Examples
    --------
    >>> from latentzoo.data import load
    >>> mosaic = load("texture-mosaic", n_textures=2, size=128, random_state=0)
    >>> result = segment_pairwise(mosaic.image, 2, random_state=0)
    >>> result.labels.shape, result.method
    ((128, 128), 'pairwise')
    """
    start = time.perf_counter()
    model = PairwiseClustering(n_textures)
    rng = as_rng(check_random_state(random_state))
    features, feature_seconds = _features(image, features)
    graph_seed, annealing_seed = rng.spawn(2)
    data = features.block_dissimilarities(block, stride, n_random, graph_seed)
    grid_shape = (len(range(stride // 2, features.shape[0], stride)),
                  len(range(stride // 2, features.shape[1], stride)))  # fmt: skip
    optimisation = time.perf_counter()
    with progress_bar(progressbar=progressbar, desc="mean-field sweeps", total=None) as bar:
        fit = sparse_pairwise_annealing(model, data, tap=tap, eta=eta, max_iter=max_iter, tol=tol,
                                        random_state=annealing_seed, progress=bar)  # fmt: skip
    site_labels = fit.labels.reshape(grid_shape)
    end = time.perf_counter()
    return Segmentation(
        labels=_pixel_labels(site_labels, stride, features.shape),
        site_labels=site_labels,
        objective=fit.cost,
        objective_name="pairwise_cost",
        method="pairwise_tap" if tap else "pairwise",
        seconds={"features": feature_seconds, "optimisation": end - optimisation,
                 "total": end - start},  # fmt: skip
        levels=fit.trace,
        settings={"n_textures": n_textures, "tap": bool(tap), "block": block, "stride": stride,
                  "n_random": n_random, "eta": eta, "max_iter": max_iter, "tol": tol,
                  "pairs": data.n_pairs, "converged": fit.converged},
    )  # fmt: skip
