"""The BPM's hand-coded HMC against PyMC NUTS and nutpie on the Senate roll calls (issue 26).

Run from the repository root::

    python benchmarks/bench_bpm_hmc.py            # full run (PyMC NUTS dominates: long)
    python benchmarks/bench_bpm_hmc.py --quick    # fewer draws, a rough ratio in minutes

One run, side by side, on the Bayesian Partial Membership model with K = 2 (Heller 2007, ch. 8)
on the 109th Senate (``load("senate109", missing="keep")``: the votes not cast are integrated
out): the hand HMC of :mod:`latentzoo.inference.bpm`, PyMC's NUTS on
:meth:`BayesianPartialMembership.pymc_model` and nutpie (the same PyMC model compiled with numba,
Rust NUTS). Each peer runs once per declaration of the memberships ``--peer-memberships``
names, by default both of :data:`latentzoo.models.bpm.PYMC_MEMBERSHIPS`. ``dirichlet`` is what a
PyMC user would write; ``split-gamma`` is what the reference level samples, because NUTS on
``pi ~ Dirichlet(a rho)`` does not reach small ``a``. On the Senate it mixes more per draw but
spends several times the gradients. Every sampler runs its chains one after the other on one
core (the peers fewer and shorter chains: they spend several times more gradients per draw).
Reported per sampler:
wall time (tuning included, compilation excluded and shown apart), divergences, and the bulk ESS
of the label-free quantities: the total log-likelihood, the membership scale ``a`` and every
senator's ``U_nn = sum_k pi_nk^2`` (the diagonal of ``U = Pi Pi^T``: 1 at a vertex, 1/2 halfway);
ESS/s is the smallest of those ESS (and their median) per CPU second of the sampling process
(the machine is shared by several jobs: CPU seconds, unlike wall seconds, compare samplers run
under different loads; the wall seconds and the load average are shown beside them). The table is
printed and, for a full run, written to ``benchmarks/RESULTS_bpm.md``; ``--samplers`` and
``--rows`` run the samplers in separate processes (at once, on a shared machine) and collect
their rows in one JSON file, which a run with ``--samplers none`` renders. A full run replaces the
file's table and keeps its ``## `` sections below it (the runs' history, written by hand).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import time
from pathlib import Path

import numpy as np

from latentzoo.data import load
from latentzoo.inference import bpm
from latentzoo.models.bpm import PYMC_MEMBERSHIPS, BayesianPartialMembership

RESULTS = Path(__file__).resolve().parent / "RESULTS_bpm.md"


def _ess(values) -> float:
    import arviz as az

    return float(np.asarray(az.ess(np.asarray(values), method="bulk")).reshape(-1)[0])


def invariant_ess(pi, a, loglik) -> dict:
    """Bulk ESS of the label-free quantities of (chain, draw, ...) arrays."""
    u_diag = (pi**2).sum(axis=-1)
    per_senator = np.array([_ess(u_diag[:, :, n]) for n in range(u_diag.shape[2])])
    return {
        "ess_loglik": _ess(loglik),
        "ess_a": _ess(a),
        "ess_U_min": float(np.nanmin(per_senator)),
        "ess_U_median": float(np.nanmedian(per_senator)),
    }


def _loglik_draws(model, data, pi, params_of_draw) -> np.ndarray:
    chains, draws = pi.shape[:2]
    out = np.empty((chains, draws))
    for c in range(chains):
        for d in range(draws):
            out[c, d] = model.log_likelihood(params_of_draw(c, d), data).sum()
    return out


def run_hand(
    model, data, chains, draws, tune, seed, n_leapfrog=64, scale_moves=2, membership_sweeps=1
) -> dict:
    bpm.hmc(model, data, chains=1, draws=2, tune=2, random_state=0)  # numba compile, excluded
    start, cpu = time.perf_counter(), time.process_time()
    idata = bpm.hmc(
        model, data, chains=chains, draws=draws, tune=tune, random_state=seed,
        n_leapfrog=n_leapfrog, scale_moves=scale_moves, membership_sweeps=membership_sweeps,
    )  # fmt: skip
    seconds = time.perf_counter() - start
    post = idata.posterior
    return {
        "seconds": seconds,
        "cpu_seconds": time.process_time() - cpu,
        "compile": 0.0,
        "divergences": int(idata.sample_stats["diverging"].sum()),
        **invariant_ess(
            post["pi"].values, post["a"].values, idata.log_likelihood["x"].values.sum(axis=-1)
        ),
        "grads_per_draw": float(idata.sample_stats["n_steps"].mean()),
        **_slice_statistics(idata.sample_stats),
    }


def _slice_statistics(stats) -> dict:
    """The membership slice sweeps' density evaluations per item and draw (none without them)."""
    if "slice_evaluations" not in stats:
        return {}
    return {"slice_evaluations": float(stats["slice_evaluations"].mean())}


def _from_trace(model, data, trace, seconds, cpu_seconds, compile_seconds, divergences, steps):
    post = trace.posterior
    pi, theta = post["pi"].values, post["theta"].values
    loglik = _loglik_draws(
        model, data, pi,
        lambda c, d: {"rho": post["rho"].values[c, d], "a": float(post["a"].values[c, d]),
                      "pi": pi[c, d], "theta": theta[c, d]},
    )  # fmt: skip
    return {
        "seconds": seconds,
        "cpu_seconds": cpu_seconds,
        "compile": compile_seconds,
        "divergences": divergences,
        **invariant_ess(pi, post["a"].values, loglik),
        "grads_per_draw": steps,
    }


def run_pymc(model, data, chains, draws, tune, seed, memberships) -> dict:
    import pymc as pm

    with model.pymc_model(data, memberships=memberships):
        start, cpu = time.perf_counter(), time.process_time()
        trace = pm.sample(
            draws, tune=tune, chains=chains, cores=1, random_seed=seed, progressbar=False,
            compute_convergence_checks=False,
        )  # fmt: skip
        total, cpu = time.perf_counter() - start, time.process_time() - cpu
    sampling = float(trace.posterior.attrs.get("sampling_time", total))
    stats = trace.sample_stats
    # The compilation's share of the CPU time is taken as its share of the wall time.
    return _from_trace(
        model, data, trace, sampling, cpu * sampling / total, total - sampling,
        int(stats["diverging"].sum()), float(stats["n_steps"].mean()),
    )  # fmt: skip


def run_nutpie(model, data, chains, draws, tune, seed, memberships) -> dict:
    import nutpie

    start = time.perf_counter()
    compiled = nutpie.compile_pymc_model(model.pymc_model(data, memberships=memberships))
    compile_seconds = time.perf_counter() - start
    start, cpu = time.perf_counter(), time.process_time()
    trace = nutpie.sample(
        compiled, draws=draws, tune=tune, chains=chains, cores=1, seed=seed, progress_bar=False
    )
    seconds, cpu = time.perf_counter() - start, time.process_time() - cpu
    stats = trace.sample_stats
    steps = float(stats["n_steps"].mean()) if "n_steps" in stats else float("nan")
    return _from_trace(
        model, data, trace, seconds, cpu, compile_seconds, int(stats["diverging"].sum()), steps
    )


def _ess_of(row: dict, key: str) -> float:
    """The ESS ``key`` of a row; ``ess_min``: the smallest of the label-free invariants'."""
    if key == "ess_min":
        return min(row["ess_loglik"], row["ess_a"], row["ess_U_min"])
    return row[key]


def markdown(rows: dict, settings: str) -> str:
    lines = [
        "| sampler | wall s (tune+draws) | CPU s | compile s | divergences | gradients/draw "
        "| ESS loglik | ESS a | ESS U_nn min | ESS U_nn median | min ESS / CPU s "
        "| median U ESS / CPU s | load average at its end |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for name, r in rows.items():
        least = min(r["ess_loglik"], r["ess_a"], r["ess_U_min"])
        cpu = r["cpu_seconds"]
        load = r.get("load_average", [float("nan")])[0]
        lines.append(
            f"| {name} | {r['seconds']:.1f} | {cpu:.1f} | {r['compile']:.1f} | "
            f"{r['divergences']} | {r['grads_per_draw']:.1f} | {r['ess_loglik']:.0f} | "
            f"{r['ess_a']:.0f} | {r['ess_U_min']:.1f} | {r['ess_U_median']:.0f} | "
            f"{least / cpu:.3f} | {r['ess_U_median'] / cpu:.3f} | {load:.1f} |"
        )
    hand = rows.get("hand HMC")
    ratios = []
    if hand is not None:
        for name, r in rows.items():
            if name == "hand HMC":
                continue
            for key in ("ess_min", "ess_loglik", "ess_a", "ess_U_min", "ess_U_median"):
                mine = _ess_of(hand, key) / hand["cpu_seconds"]
                theirs = _ess_of(r, key) / r["cpu_seconds"]
                ratios.append(
                    f"- hand HMC / {name}, ESS per CPU second of {key[4:]}: {mine / theirs:.1f}x"
                )
    return "\n".join([settings, "", *lines, "", *ratios])


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="fewer draws: a rough ratio")
    parser.add_argument("--skip-pymc", action="store_true", help="leave PyMC NUTS out")
    parser.add_argument(
        "--samplers", default="hand,nutpie,pymc",
        help="comma-separated subset of hand, nutpie, pymc to run (default all three)",
    )  # fmt: skip
    parser.add_argument(
        "--rows", type=Path, default=None,
        help="JSON file the rows are added to (and read from: rows of an earlier run are shown)",
    )  # fmt: skip
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--n-leapfrog", type=int, default=64,
        help="hand HMC leapfrog steps (64: about nutpie's path on the Senate; the default 16 "
        "is a quarter of it and mixed a 3x slower per gradient)",
    )  # fmt: skip
    parser.add_argument(
        "--scale-moves", type=int, default=2, help="hand HMC moves of a per transition"
    )
    parser.add_argument(
        "--membership-sweeps", type=int, default=1,
        help="hand HMC slice-sampling sweeps over the memberships per transition",
    )  # fmt: skip
    parser.add_argument("--peer-chains", type=int, default=2, help="chains of nutpie and PyMC")
    parser.add_argument(
        "--peer-memberships", default=",".join(PYMC_MEMBERSHIPS),
        help="comma-separated declarations of pi the peers sample, each a row "
        f"(default all: {','.join(PYMC_MEMBERSHIPS)})",
    )  # fmt: skip
    parser.add_argument(
        "--peer-draws", type=int, default=None, help="tune and draws of nutpie and PyMC each"
    )
    args = parser.parse_args(argv)
    declarations = args.peer_memberships.split(",")
    unknown = sorted(set(declarations) - set(PYMC_MEMBERSHIPS))
    if unknown:
        parser.error(
            "--peer-memberships takes a comma-separated subset of "
            f"{', '.join(PYMC_MEMBERSHIPS)}, got {', '.join(unknown)}"
        )
    chains = 4
    draws, tune = (200, 200) if args.quick else (500, 500)
    # The peers spend 4-10x more gradients per draw: fewer draws keep the run in minutes; ESS/s
    # is a rate, so the comparison stands (with the wider noise of a shorter run).
    peer = args.peer_draws or (100 if args.quick else 250)
    model = BayesianPartialMembership(2)
    data = load("senate109", missing="keep")
    wanted = set(args.samplers.split(","))
    if args.skip_pymc:
        wanted.discard("pymc")
    rows = json.loads(args.rows.read_text()) if args.rows and args.rows.exists() else {}
    runs = [("hand", "hand HMC", lambda: run_hand(
        model, data, chains, draws, tune, args.seed, args.n_leapfrog, args.scale_moves,
        args.membership_sweeps))]  # fmt: skip
    for peer_key, peer_name, run_peer in (("nutpie", "nutpie", run_nutpie),
                                          ("pymc", "PyMC NUTS", run_pymc)):  # fmt: skip
        for declaration in declarations:
            runs.append((
                peer_key, f"{peer_name}, pi {declaration}",
                lambda run_peer=run_peer, declaration=declaration: run_peer(
                    model, data, args.peer_chains, peer, peer, args.seed, declaration),
            ))  # fmt: skip
    for key, name, run in runs:
        if key not in wanted:
            continue
        rows[name] = {**run(), "load_average": list(os.getloadavg())}
        print(name, rows[name], flush=True)
        if args.rows:
            args.rows.write_text(json.dumps(rows, indent=1))
    settings = (
        f"BPM K=2 on senate109 ({data.n_items} x {data.n_features}, {data.n_missing} votes not "
        f"cast, integrated out); chains one after the other on one core; hand HMC {chains} "
        f"chains x ({tune} tune + {draws} draws) of {args.n_leapfrog} leapfrog steps, nutpie "
        f"and PyMC NUTS {args.peer_chains} chains x ({peer} + {peer}); seed {args.seed}; "
        f"{platform.processor() or platform.machine()}, load average "
        f"{', '.join(f'{x:.1f}' for x in os.getloadavg())} at the end."
    )
    text = markdown(rows, settings)
    print(text)
    if not args.quick:
        # The sections below the table are the runs' history, written by hand: kept.
        history = RESULTS.read_text().partition("\n## ") if RESULTS.exists() else ("", "", "")
        RESULTS.write_text(
            "# BPM hand HMC vs PyMC NUTS vs nutpie (issue 26)\n\n" + text + "\n"
            + (history[1] + history[2] if history[1] else "")
        )  # fmt: skip


if __name__ == "__main__":
    main()
