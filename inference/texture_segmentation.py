"""Unsupervised texture segmentation: one-sided clustering (ACM) of Gabor histograms, single-level
or multiscale, and pairwise clustering of Kolmogorov-Smirnov distances on a sparse graph.

Both segmenters start from :class:`~latentzoo.data.texture_features.TextureFeatures` (a Gabor
bank of 4 orientations x 3 octave-spaced scales, every channel cut into 40 bins).

**One-sided clustering** (Hofmann and Puzicha 1998, sec. 6.3): every site of a grid with spacing
``stride`` is a row of a site x (channel, bin) :class:`~latentzoo.data.CoOccurrence` (the
histograms of its windows: the 12 Gabor channels of the seed and, by default, the grey level over
the largest window, which lowered the mean error on two sets of five 5-texture mosaics from 21
and 24 % to 18 and 20 %: textures here differ in brightness as much as in their Gabor energies), and the asymmetric clustering model groups the sites by their
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
sparse neighbourhood graph (adjacent blocks plus random partners), clustered by
:func:`~latentzoo.inference.pairwise.sparse_pairwise_annealing` (mean-field annealing of the
normalised sparse cost, each cluster's size times its mean dissimilarity over its neighbour pairs,
with the cavity (TAP) correction as an option). The seed's settings matter: 64 x 64 blocks
(:data:`PAIRWISE_BLOCK`; the KS distance of two 32 x 32 blocks of one texture is as large as
half that of two textures, because the coarse Gabor channels hold few independent samples in
them) and about :data:`PAIRWISE_RANDOM` random partners per block (with 2, the random pairs
are too few to tie a texture's distant blocks together).

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
from threadpoolctl import threadpool_limits

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
    "PAIRWISE_BLOCK",
    "PAIRWISE_RANDOM",
    "Segmentation",
    "coarse_groups",
    "matched_error",
    "segment_kmeans",
    "segment_normalized_cut",
    "segment_one_sided",
    "segment_pairwise",
    "segment_spectral",
    "tied_counts",
    "tied_sites",
]

#: The multiscale hierarchy stops coarsening before a side of the coarse grid falls below this
#: many groups (8 x 8 groups still leave a few per texture of a 5-texture mosaic).
COARSEST_SIDE = 8
# The annealing runs through beta * (mean row total) from _BETA_START to _BETA_HARD, then EM ends
# at beta = 1. The phase transitions of 5-texture mosaics were measured at beta * total of 13-16
# on every level; by _BETA_HARD the posteriors are one-hot, and the stages between it and
# beta = 1 (3 more decades) would change nothing.
_BETA_START = 1.0
_BETA_HARD = 1e3
#: Side of the blocks of the pairwise segmenter and its baselines, in pixels (Hofmann and
#: Buhmann 1997, sec. 6.3: "dissimilarities calculated from 64 x 64 blocks").
PAIRWISE_BLOCK = 64
#: Random partners per block besides the adjacent ones (the seed's "small random
#: neighbourhood"; Puzicha, Hofmann and Buhmann use about 20).
PAIRWISE_RANDOM = 20


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


def tied_counts(counts: CoOccurrence, parent) -> CoOccurrence:
    """The coarse co-occurrence of tied sites: each group's row is the sum of its sites' rows.

    Under the ACM a tied group's likelihood ``prod_{i in group} L_ik`` is the multinomial
    likelihood of the summed counts (the multinomial coefficients cancel in the posteriors), so
    the E-step on these rows is the posterior of the group's one assignment variable.

    Parameters
    ----------
    counts : CoOccurrence
        One row per site.
    parent : array_like of int
        The group of every site (:func:`tied_sites`), ``0..G-1``.

    Returns
    -------
    CoOccurrence
        ``G`` rows.

    Examples
    --------
    >>> import scipy.sparse as sp
    >>> sites = CoOccurrence(sp.csr_matrix(np.array([[1, 0], [2, 1], [0, 3]])))
    >>> tied_counts(sites, [0, 0, 1]).counts.toarray().tolist()
    [[3, 1], [0, 3]]
    """
    parent = np.asarray(parent, dtype=np.int64)
    tie = sp.csr_matrix(
        (np.ones(parent.size), (parent, np.arange(parent.size))),
        shape=(parent.max() + 1, parent.size),
    )
    return CoOccurrence((tie @ counts.counts).tocsr())


def coarse_groups(grid_shape, level: int) -> np.ndarray:
    """The group at ``level`` of every group at ``level - 1``: where the multiscale
    optimisation prolongates a level's posteriors to the next finer one.

    Examples
    --------
    >>> coarse_groups((4, 4), 1).tolist()
    [0, 0, 1, 1, 0, 0, 1, 1, 2, 2, 3, 3, 2, 2, 3, 3]
    """
    parent, _ = tied_sites(grid_shape, level)
    finer, _ = tied_sites(grid_shape, level - 1)
    # A finer group's first site decides (all its sites share one coarse group).
    first_site = np.unique(finer, return_index=True)[1]
    return parent[first_site]


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
    include_grey: bool = True,
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
    include_grey : bool, default True
        Also count the grey level's bins over each site's largest window
        (:meth:`~latentzoo.data.texture_features.TextureFeatures.site_counts`); False: the 12
        Gabor channels of the seed.
    decay : float, default 0.7
        Cooling factor of the annealing (``T <- decay T``), from ``beta`` one over the mean row
        total up to a thousand over it, then EM at ``beta = 1``.
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
    counts = features.site_counts(stride, include_grey)
    grid_shape = _grid_shape(features, stride)
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
            data = tied_counts(counts, parent) if level else counts
            problem = OneSidedEM(model, data)
            if params is None:
                mean_total = float(data.total) / data.shape[0]
                schedule = GeometricCooling(_BETA_START / mean_total, _BETA_HARD / mean_total,
                                            decay)  # fmt: skip
                run, stages, _ = cool(problem, problem.init(rng), schedule, max_iter, tol,
                                      progress=bar, components=[["q"]], rng=rng)  # fmt: skip
                iterations = int(stages["iterations"].sum())
                run = run_schedule(problem, run.params, [1.0], max_iter, tol, progress=bar)
                iterations += int(run.stages["iterations"].sum())
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
                coarse_of_child = coarse_groups(grid_shape, level)
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
                  "stride": stride, "include_grey": bool(include_grey), "decay": decay,
                  "max_iter": max_iter, "tol": tol},
    )  # fmt: skip


def segment_pairwise(
    image,
    n_textures: int,
    *,
    tap: bool = False,
    block: int = PAIRWISE_BLOCK,
    stride: int = 8,
    n_random: int = PAIRWISE_RANDOM,
    eta: float = 0.8,
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
    n_random : int, default :data:`PAIRWISE_RANDOM`
        Random partners per block besides the adjacent ones
        (:func:`~latentzoo.data.texture_features.neighbour_pairs`).
    eta, max_iter, tol
        Cooling factor, sweeps per temperature, tolerance of
        :func:`~latentzoo.inference.pairwise.sparse_pairwise_annealing`; ``eta = 0.8`` halves
        the time of 0.9 at the same error (18.6 and 20.7 % against 18.7 and 21.0 % on two sets of
        five 5-texture mosaics).
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
    grid_shape = _grid_shape(features, stride)
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


# ------------------------------------------------------------------------------ baselines
def _baseline_result(site_labels, stride, features, method, objective, start, feature_seconds,
                     optimisation, settings) -> Segmentation:  # fmt: skip
    end = time.perf_counter()
    return Segmentation(
        labels=_pixel_labels(site_labels, stride, features.shape),
        site_labels=site_labels,
        objective=float(objective),
        objective_name="baseline_objective",
        method=method,
        seconds={
            "features": feature_seconds,
            "optimisation": end - optimisation,
            "total": end - start,
        },  # fmt: skip
        levels=pd.DataFrame(),
        settings=settings,
    )


def _grid_shape(features, stride: int) -> tuple[int, int]:
    return (len(range(stride // 2, features.shape[0], stride)),
            len(range(stride // 2, features.shape[1], stride)))  # fmt: skip


def segment_kmeans(
    image, n_textures: int, *, stride: int = 4, include_grey: bool = True, n_init: int = 10,
    random_state=None, features: TextureFeatures | None = None,
) -> Segmentation:  # fmt: skip
    """Baseline: k-means of the sites' mean Gabor energies (after Jain and Farrokhnia 1991).

    Each site is described by the mean, over its window, of each Gabor channel's bin (the
    equal-frequency bins of :class:`TextureFeatures` make the bin a rank-transformed local
    energy, robust to the heavy tails of the moduli), the means standardised; scikit-learn's
    ``KMeans`` groups them. The same sites and windows as :func:`segment_one_sided`: the
    difference is the summary, a mean per channel instead of the whole histogram.

    Returns
    -------
    Segmentation
        ``objective`` is k-means' inertia.
    """
    from sklearn.cluster import KMeans

    start = time.perf_counter()
    check_integer("n_textures", n_textures)
    rng = as_rng(check_random_state(random_state))
    features, feature_seconds = _features(image, features)
    counts = features.site_counts(stride, include_grey)
    histograms = counts.counts.toarray().reshape(counts.shape[0], -1, features.n_bins)
    means = histograms @ np.arange(features.n_bins) / histograms.sum(axis=2)
    spread = means.std(axis=0)
    scaled = (means - means.mean(axis=0)) / np.where(spread > 0, spread, 1.0)
    optimisation = time.perf_counter()
    seed = int(rng.integers(2**31 - 1))
    # One thread: OpenMP's spinning threads on a shared, busy machine cost 10x (measured).
    with threadpool_limits(1):
        kmeans = KMeans(n_textures, n_init=n_init, random_state=seed).fit(scaled)
    site_labels = kmeans.labels_.astype(np.int64).reshape(_grid_shape(features, stride))
    return _baseline_result(site_labels, stride, features, "kmeans", kmeans.inertia_, start,
                            feature_seconds, optimisation, {"stride": stride})  # fmt: skip


def _block_affinities(features, block, stride, n_random, rng):
    """Affinities ``exp(-D / median D)`` of the KS distances on the sparse block graph."""
    data = features.block_dissimilarities(block, stride, n_random, rng)
    pairs = data.pairs.copy()
    pairs.data = np.exp(-pairs.data / np.median(pairs.data))
    return pairs


def segment_spectral(
    image, n_textures: int, *, block: int = PAIRWISE_BLOCK, stride: int = 8,
    n_random: int = PAIRWISE_RANDOM,
    random_state=None, features: TextureFeatures | None = None,
) -> Segmentation:  # fmt: skip
    """Baseline: scikit-learn's ``SpectralClustering`` of the block affinities.

    The blocks, KS distances and sparse graph of :func:`segment_pairwise`, turned into
    affinities ``exp(-D_ij / median D)``; spectral embedding and k-means (Ng, Jordan and Weiss).

    Returns
    -------
    Segmentation
        ``objective`` is NaN (spectral clustering reports none).
    """
    from sklearn.cluster import SpectralClustering

    start = time.perf_counter()
    check_integer("n_textures", n_textures)
    rng = as_rng(check_random_state(random_state))
    features, feature_seconds = _features(image, features)
    graph_seed, seed = rng.spawn(1)[0], int(rng.integers(2**31 - 1))
    affinity = _block_affinities(features, block, stride, n_random, graph_seed)
    optimisation = time.perf_counter()
    spectral = SpectralClustering(n_textures, affinity="precomputed", random_state=seed)
    with threadpool_limits(1):
        labels = spectral.fit_predict(affinity).astype(np.int64)
    site_labels = labels.reshape(_grid_shape(features, stride))
    return _baseline_result(site_labels, stride, features, "spectral", np.nan, start,
                            feature_seconds, optimisation, {"block": block, "stride": stride})  # fmt: skip


def _ncut_split(affinity: sp.csr_matrix, candidates: int = 32):
    """Shi and Malik's two-way normalized cut of a graph: the second generalised eigenvector of
    ``(D - W) y = lambda D y`` thresholded where the Ncut value is lowest. Returns the value and
    the boolean side of every node (None when the graph cannot be split)."""
    from scipy.sparse.linalg import eigsh

    n = affinity.shape[0]
    if n < 2:
        return np.inf, None
    degree = np.asarray(affinity.sum(axis=1)).ravel()
    degree = np.where(degree > 0, degree, 1e-12)
    scale = sp.diags(1.0 / np.sqrt(degree))
    normalised = scale @ affinity @ scale
    if n <= 3:
        values, vectors = np.linalg.eigh(normalised.toarray())
    else:
        # The two largest eigenvalues of D^-1/2 W D^-1/2 are the two smallest of the Laplacian.
        values, vectors = eigsh(normalised, k=2, which="LA", v0=np.ones(n) / np.sqrt(n))
    y = vectors[:, np.argsort(values)[-2]] / np.sqrt(degree)
    total = degree.sum()
    best, side = np.inf, None
    for threshold in np.unique(np.quantile(y, np.linspace(0.02, 0.98, candidates))):
        inside = y > threshold
        if inside.all() or not inside.any():
            continue
        assoc = degree[inside].sum()
        cut = assoc - affinity[inside][:, inside].sum()
        value = cut / assoc + cut / (total - assoc)
        if value < best:
            best, side = value, inside
    return best, side


def segment_normalized_cut(
    image, n_textures: int, *, block: int = PAIRWISE_BLOCK, stride: int = 8,
    n_random: int = PAIRWISE_RANDOM,
    random_state=None, features: TextureFeatures | None = None,
) -> Segmentation:  # fmt: skip
    """Baseline: Shi and Malik's normalized cut of the block affinities, two-way and recursive.

    The affinities of :func:`segment_spectral`. Each segment's best two-way cut is found from
    the second generalised eigenvector (scipy's sparse ``eigsh``), thresholded where the Ncut
    value is lowest; the segment whose cut is cheapest is split, until ``n_textures`` segments
    (scikit-image's ``cut_normalized``, not installed here, cuts a region adjacency graph the
    same way).

    Returns
    -------
    Segmentation
        ``objective`` is the sum of the Ncut values of the cuts made.
    """
    start = time.perf_counter()
    check_integer("n_textures", n_textures)
    rng = as_rng(check_random_state(random_state))
    features, feature_seconds = _features(image, features)
    affinity = _block_affinities(features, block, stride, n_random, rng).tocsr()
    optimisation = time.perf_counter()
    labels = np.zeros(affinity.shape[0], dtype=np.int64)
    splits = {0: _ncut_split(affinity)}
    total = 0.0
    # A loop over the K - 1 cuts, each a sparse eigenproblem.
    for new_label in range(1, n_textures):
        label, (value, side) = min(splits.items(), key=lambda item: item[1][0])
        if side is None:
            break
        members = np.flatnonzero(labels == label)
        labels[members[side]] = new_label
        total += value
        for part in (label, new_label):
            nodes = np.flatnonzero(labels == part)
            splits[part] = _ncut_split(affinity[nodes][:, nodes])
    site_labels = labels.reshape(_grid_shape(features, stride))
    return _baseline_result(site_labels, stride, features, "normalized_cut", total, start,
                            feature_seconds, optimisation, {"block": block, "stride": stride})  # fmt: skip


# ------------------------------------------------------------------------------ validation
def validation_recipe():
    """How :func:`latentzoo.validate` checks texture segmentation (a ``ValidationRecipe``)."""
    from latentzoo.inference.one_sided import OneSidedEM as one_sided_em
    from latentzoo.inference.pairwise import sparse_pairwise_cost
    from latentzoo.inference.recipes import texture

    return texture(
        tied_sites=tied_sites, tied_counts=tied_counts, coarse_groups=coarse_groups,
        one_sided_em=one_sided_em, one_sided_model=OneSidedClustering,
        sparse_cost=sparse_pairwise_cost, sparse_annealing=sparse_pairwise_annealing,
        pairwise_model=PairwiseClustering,
    )  # fmt: skip
