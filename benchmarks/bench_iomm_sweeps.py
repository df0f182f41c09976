"""IOMM sampler (Algorithm 7.1) sweeps per second, and the Table 7.1 statistics at small size.

Run from the repository root::

    python benchmarks/bench_iomm_sweeps.py            # about a minute on 2 busy cores
    python benchmarks/bench_iomm_sweeps.py --quick    # a few seconds

Two measurements (issue 26):

- sweeps/s of one chain on N = 500, D = 426 binary data (the size of the thesis's MovieLens
  matrix) simulated from the IOMM with alpha = 3, a = b = 0.5, started at the truth so that the
  sweeps carry the data's clusters (from a random prior start in 426 dimensions the chain first
  loses every cluster, see ``inference.iomm.init``); the warm-up run compiles/loads the kernels;
- Table 7.1 in miniature: N = 100, D = 32 synthetic data (alpha = 2, a = b = 0.5), a chain from
  the prior, the posterior mean of U = Z Z^T rounded and compared with the truth's U over the
  pairs i <= j (the thesis reports 69.96 / 99.12 / 100 % for 4000 iterations on its K = 11 data).
"""

from __future__ import annotations

import sys
import time

import numpy as np

from latentzoo.inference import iomm
from latentzoo.models.iomm import OverlappingMixture


def sweeps_per_second(n_sweeps: int) -> dict:
    model = OverlappingMixture(alpha=3.0, a=0.5, b=0.5)
    data, truth = model.simulate(0, n_items=500, n_features=426)
    X = model.data_matrix(data)
    rng = np.random.default_rng(0)
    state = iomm.init(model, X, rng, initial=truth)
    state = iomm.advance(state, rng, model, X)[0]  # kernels compiled or loaded from the cache
    start = time.perf_counter()
    for _ in range(n_sweeps):
        state = iomm.advance(state, rng, model, X)[0]
    seconds = time.perf_counter() - start
    return {
        "true K": truth["Z"].shape[1],
        "K at the end": int(state.n_columns[0]),
        "sweeps/s": n_sweeps / seconds,
    }


def table_7_1(draws: int, tune: int, seed: int) -> dict:
    model = OverlappingMixture(alpha=2.0, a=0.5, b=0.5)
    data, truth = model.simulate(seed, n_items=100, n_features=32)
    idata = iomm.mcmc(
        model, data, chains=1, draws=draws, tune=tune, random_state=seed, progressbar=False
    )
    gap = np.abs(np.rint(iomm.shared_clusters(idata)) - truth["U"])[np.triu_indices(100)]
    stats = idata.sample_stats
    return {
        "seed": seed,
        "true K": truth["Z"].shape[1],
        "mean K": float(stats["n_clusters"].mean()),
        "= truth %": 100 * float(np.mean(gap == 0)),
        "within 1 %": 100 * float(np.mean(gap <= 1)),
        "within 2 %": 100 * float(np.mean(gap <= 2)),
        "theta accept": float(stats["theta_accept"].mean()),
    }


def main(argv: list[str]) -> None:
    quick = "--quick" in argv
    print("N=500, D=426:", sweeps_per_second(5 if quick else 30))
    for seed in (0, 1):
        print("Table 7.1:", table_7_1(200 if quick else 3000, 100 if quick else 1000, seed))


if __name__ == "__main__":
    main(sys.argv[1:])
