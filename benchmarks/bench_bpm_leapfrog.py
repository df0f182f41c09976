"""Trajectory length of the BPM hand HMC (issue 26): minimum-ESS per CPU second at several
``n_leapfrog`` on data sets of different sizes, with the default membership sweep and scale moves.

    python benchmarks/bench_bpm_leapfrog.py senate109 --steps 16,32,64 --chains 2 --draws 300

Data: a dataset name for :func:`latentzoo.data.load` (K=2) or ``synthetic`` (the notebook's
BPM at K=3, 50 x 32, seed 0). One JSON line per setting on stdout; ESS as in
``bench_bpm_hmc.py`` (bulk ESS of loglik, ``a`` and each item's ``U_nn``; "min" the smallest).
"""

import argparse
import json
import os

from bench_bpm_hmc import run_hand

from latentzoo.data import load
from latentzoo.models.bpm import BayesianPartialMembership


def data_of(name):
    """The model and data a run uses: the notebook's synthetic K=3 set, or a dataset at K=2."""
    if name == "synthetic":
        model = BayesianPartialMembership(n_components=3)
        return model, model.simulate(0, n_items=50, n_features=32)[0]
    return BayesianPartialMembership(n_components=2), load(name)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("data")
    parser.add_argument("--steps", default="16,32,64")
    parser.add_argument("--chains", type=int, default=2)
    parser.add_argument("--draws", type=int, default=300)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    model, data = data_of(args.data)
    for steps in (int(s) for s in args.steps.split(",")):
        row = run_hand(
            model, data, args.chains, args.draws, args.draws, args.seed, n_leapfrog=steps
        )
        least = min(row["ess_loglik"], row["ess_a"], row["ess_U_min"])
        row |= {"data": args.data, "shape": list(data.shape), "n_leapfrog": steps,
                "ess_min": least, "min_ess_per_cpu_s": least / row["cpu_seconds"],
                "load": os.getloadavg()[0]}  # fmt: skip
        print(json.dumps(row), flush=True)


if __name__ == "__main__":
    main()
