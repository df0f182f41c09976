"""The cases of ``python -m benchmarks``: each fast method, one timed call of it, and its peers.

A :class:`Case` builds its problem once (``setup(quick)``) and returns the calls to time: ours
and one call per peer (a peer that cannot be imported is reported, not timed). The problems and
the calls come from the benchmark scripts of this folder (``bench_*.py``), which document them;
the sizes here are chosen so that one call takes 10 ms to 1 s, and ``--quick`` sizes so that the
whole quick run stays under two minutes on two shared cores.
"""

from __future__ import annotations

import logging
import sys
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))


@dataclass(frozen=True)
class Case:
    """One fast method against its peers.

    Attributes
    ----------
    name : str
        ``--only`` name and key of the record.
    ours : str
        What is timed of ours (one call).
    setup : callable
        ``setup(quick) -> (ours_call, {peer name: peer_call or the reason it is missing})``.
    """

    name: str
    ours: str
    setup: Callable


def _missing(exc: Exception) -> str:
    return f"not importable: {type(exc).__name__}: {exc}"


# --------------------------------------------------------------------------- aspect model
def _aspect_em(quick):
    """Forty serial float64 E/M passes (``em_pass``) on Reuters, K = 20, against the vectorised
    numpy/scipy pass of ``bench_aspect.numpy_em_pass`` and the yardstick numba loop."""
    from bench_aspect import numpy_em_pass
    from em_yardstick import yardstick_pass

    from latentzoo.data import load
    from latentzoo.inference.aspect import em_pass

    data = load("reuters")
    rng = np.random.default_rng(0)
    theta = rng.dirichlet(np.ones(20), size=data.n_rows)
    phi_t = np.ascontiguousarray(rng.dirichlet(np.ones(data.n_cols), size=20).T)
    csr = data.counts
    n_theta, n_phi = np.empty_like(theta), np.empty_like(phi_t)
    ours = _times(partial(em_pass, data, theta, phi_t, 1.0, False, 1, np.float64, csr.data), 40)
    peers = {
        "numpy/scipy EM pass (x40)": _times(
            partial(numpy_em_pass, data, theta, phi_t, 1.0, np.float64), 40
        ),
        "yardstick numba loop (x40)": _times(
            partial(
                yardstick_pass, csr.indptr, csr.indices, csr.data, theta, phi_t, n_theta, n_phi
            ),
            40,
        ),
    }
    return ours, peers


def _gibbs_sweeps(quick):
    """Collapsed Gibbs on Reuters, K = 20, alpha 0.1, eta 0.01: ``AspectGibbs`` construction,
    init and 20 sweeps (10 quick), against tomotopy's ``train`` and the ``lda`` package's ``fit``
    for the same number of sweeps."""
    from bench_ad_lda import run_ad_lda
    from bench_aspect import ALPHA, ETA, tomotopy_model

    from latentzoo.data import load

    data = load("reuters")
    sweeps = 10 if quick else 20
    ours = partial(run_ad_lda, data, 20, sweeps, 1)
    peers = {}
    try:
        import tomotopy  # noqa: F401

        def tomotopy_train():
            tomotopy_model(data, 20, 1).train(sweeps, workers=1)

        peers["tomotopy train (workers=1, model built inside)"] = tomotopy_train
    except ImportError as exc:
        peers["tomotopy"] = _missing(exc)
    try:
        import lda

        logging.getLogger("lda").setLevel(logging.WARNING)  # it logs every 10 sweeps

        def lda_fit():
            lda.LDA(n_topics=20, n_iter=sweeps, alpha=ALPHA, eta=ETA, random_state=1).fit(
                data.counts
            )

        peers["lda LDA.fit"] = lda_fit
    except ImportError as exc:
        peers["lda"] = _missing(exc)
    return ours, peers


def _ad_lda(quick):
    """AD-LDA, 2 shards in process, 20 rounds (10 quick) on Reuters, K = 20, against the exact
    sampler's 20 sweeps (its peer: the price of sharding)."""
    from bench_ad_lda import run_ad_lda

    from latentzoo.data import load

    data = load("reuters")
    sweeps = 10 if quick else 20
    ours = partial(run_ad_lda, data, 20, sweeps, 1, 2)
    return ours, {"exact AspectGibbs": partial(run_ad_lda, data, 20, sweeps, 1)}


# --------------------------------------------------------------------- co-occurrence EM
def _acm_em(quick):
    """Forty ``OneSidedEM.step`` (ACM, 20 clusters, beta 1) on Reuters against
    ``AspectEM.step`` (K = 20) on the same data (``bench_clustering.em_cases``)."""
    from bench_clustering import Config, em_cases

    from latentzoo.data import load

    cases, _ = em_cases(Config(em_betas=(1.0,)), load("reuters"))
    peers = {"AspectEM.step (x40)": _times(cases[("step", "aspect", 1.0)], 40)}
    return _times(cases[("step", "ACM", 1.0)], 40), peers


def _hacm_em(quick):
    """Ten ``ClusterAbstractionEM.step`` (depth 4, learned level weights, beta 1) on Reuters
    against ``OneSidedEM.step`` with as many clusters (``bench_cluster_abstraction.em_cases``)."""
    from bench_cluster_abstraction import Config, em_cases

    from latentzoo.data import load
    from latentzoo.models.cluster_abstraction import TAU_FORMS

    cases, _ = em_cases(Config(betas=(1.0,)), load("reuters"))
    peers = {"OneSidedEM.step (x10)": _times(cases[("step", "ACM", 1.0)], 10)}
    return _times(cases[("step", TAU_FORMS[-1], 1.0)], 10), peers


# ------------------------------------------------------------------- clustering of items
def _central(quick):
    """Central clustering by deterministic annealing (``central_annealing``) on 2000 blobs
    (1000 quick) in 2-d, 5 clusters, against scikit-learn's ``KMeans(n_init=10)``."""
    from bench_central import blobs, fit_annealing, fit_kmeans

    X = blobs(1000 if quick else 2000, 5, 1.0, 2, 0)
    ours = partial(fit_annealing, X, 5)
    try:
        import sklearn  # noqa: F401

        return ours, {"scikit-learn KMeans(n_init=10)": partial(fit_kmeans, X, 5, 0)}
    except ImportError as exc:
        return ours, {"scikit-learn": _missing(exc)}


def _bhc(quick):
    """BHC (data-mean Beta prior) on the binarised digits (500 quick, all 1797 otherwise)
    against scipy's average linkage."""
    from bench_bhc import data_mean_beta, linkage

    from latentzoo.data import load
    from latentzoo.inference.bhc import bhc
    from latentzoo.models.bhc import BayesianHierarchicalClustering

    X = np.asarray(load("digits").X, dtype=np.float64)[: 500 if quick else None]
    model = BayesianHierarchicalClustering(alpha=1.0, component=data_mean_beta(X))
    return partial(bhc, model, X), {"scipy average linkage": partial(linkage, X, "average")}


def _dpm_gibbs(quick):
    """Twenty sweeps of the Dirichlet process mixture's ``MixtureGibbs`` (N = 2000, D = 64,
    binary, from the DPM prior) against one sweep of the plain numpy sampler of
    ``bench_mixture.numpy_sweep`` (Python loop over the items) scaled by 20."""
    from bench_mixture import ALPHA, PRIOR_A, PRIOR_B, model, numpy_sweep

    from latentzoo.inference.mixture import MixtureGibbs

    dpm = model()
    data, _ = dpm.simulate(0, n_items=1000 if quick else 2000, n_features=64)
    sampler = MixtureGibbs(dpm, data, split_merge=False)
    rng = np.random.default_rng(0)
    state = sampler.init(rng)
    for _ in range(5):
        state = sampler.step(state, rng)[0]

    def ours():
        chain = state
        for _ in range(20):
            chain = sampler.step(chain, rng)[0]

    X = np.asarray(data.X, dtype=np.float64)
    z = np.unique(state.z, return_inverse=True)[1].astype(np.int64).reshape(-1)
    k = int(z.max()) + 1
    sizes = np.bincount(z, minlength=2 * k).astype(np.int64)
    ones = np.zeros((2 * k, X.shape[1]))
    np.add.at(ones, z, X)

    def numpy_sweeps():
        # One sweep timed, counted as twenty: the numpy sweep is ~300x slower than ours.
        numpy_sweep(X, z.copy(), sizes.copy(), ones.copy(), ALPHA, PRIOR_A, PRIOR_B, rng)
        return None

    return ours, {"plain numpy sweep (x20)": _scaled(numpy_sweeps, 20)}


def _times(call, n):
    """``n`` calls of ``call`` as one timed call (a single one is too short to time)."""

    def repeated():
        for _ in range(n):
            call()

    return repeated


def _scaled(call, factor):
    """``call`` whose time counts ``factor`` times (see :func:`time_call`)."""
    call.scale = factor
    return call


def _bayesian_sets(quick):
    """Forty Bayesian Sets queries (``BayesianSetsIndex.log_scores``, 5 items) over the binarised
    20 Newsgroups matrix, against the scipy floor ``X @ q`` with ``q`` precomputed."""
    import scipy.sparse as sp

    from latentzoo.data import load
    from latentzoo.inference.bayesian_sets import BayesianSetsIndex
    from latentzoo.models.bayesian_sets import BayesianSets

    X = sp.csr_matrix(load("20newsgroups").counts, dtype=np.float64, copy=True)
    X.data[:] = 1.0
    index = BayesianSetsIndex(X, BayesianSets(scale=2.0))
    query = np.arange(0, 50, 10)
    _, q = index.weights(query)
    return _times(partial(index.log_scores, query), 40), {
        "scipy X @ q (x40)": _times(partial(X.dot, q), 40)
    }


CASES = {
    case.name: case
    for case in (
        Case("aspect_em_pass", "40 em_pass, Reuters, K=20, float64, 1 thread", _aspect_em),
        Case("aspect_gibbs", "AspectGibbs init + sweeps, Reuters, K=20", _gibbs_sweeps),
        Case("ad_lda", "ADLDAGibbs (2 shards) init + rounds, Reuters, K=20", _ad_lda),
        Case("acm_em_step", "40 OneSidedEM.step, Reuters, 20 clusters", _acm_em),
        Case("hacm_em_step", "10 ClusterAbstractionEM.step, Reuters, depth 4", _hacm_em),
        Case("central_annealing", "central_annealing, blobs, 5 clusters", _central),
        Case("bhc_digits", "bhc, binarised digits", _bhc),
        Case("dpm_gibbs", "MixtureGibbs, 20 sweeps, binary DPM data", _dpm_gibbs),
        Case(
            "bayesian_sets_query", "40 BayesianSetsIndex.log_scores, 20 Newsgroups", _bayesian_sets
        ),
    )
}
"""Every case of ``python -m benchmarks``, by name."""
