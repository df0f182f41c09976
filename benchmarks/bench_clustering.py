"""Benchmarks of the clustering models' fast inference (ACM and SCM), reported as ratios.

Run from the repository root (the package installed, e.g. ``make install-test``)::

    python benchmarks/bench_clustering.py            # full run, about 2-3 minutes on 2 cores
    python benchmarks/bench_clustering.py --quick    # about 1 minute: fewer repeats, no "auto"
    python benchmarks/bench_clustering.py --out other.md

The tables are printed and written as markdown to ``report/benchmarks_clustering.md`` (not
tracked) and, for a full run, to ``benchmarks/RESULTS_clustering.md`` (tracked), headed with the
date, the machine, the commit and the exact command. Sections:

1. **ACM EM vs aspect EM per iteration.** Reuters and Reuters stacked 4 times, K = 20, serial, at
   ``beta = 1`` and ``beta = 0.5``: one iteration of the shared driver (``OneSidedEM.step`` vs
   ``AspectEM.step``) and the fused kernels alone (``acm_em_pass`` vs ``em_pass``), in ns per
   non-zero. Target (issue): ACM EM per iteration within 1.5x of the aspect-model EM per non-zero
   on the same data.
2. **SCM on 20 Newsgroups.** ``mean_field`` with Kx = Ky = 20 on the training matrix, ``betas=[1.0]``
   (and the ``"auto"`` schedule in a full run): wall time to convergence including the ACM
   initialisation (reported separately), iterations, time per iteration, convergence flag and the
   mutual information of the hard (argmax) assignments. Target: converges in under 60 s. Also the
   hard SCM (``hard_scm``).
3. **Peers.** ``coclust``'s ``CoclustInfo`` (information-theoretic co-clustering, the same
   objective as the hard SCM) when the package is installed, and scikit-learn's
   ``SpectralCoclustering`` (a different objective, for context; full run only); both partitions
   scored with the model's own ``mutual_information``.

Every random draw is seeded. Timings of section 1 are the best of several rounds interleaved across
the compared methods; the fits of sections 2-3 run once each (they take seconds to minutes). The
load average is printed: on a shared machine the wall-clock figures are pessimistic.
"""

from __future__ import annotations

import sys
import time
from dataclasses import dataclass
from functools import partial
from pathlib import Path

import numpy as np
import scipy
import scipy.sparse as sp

sys.path.insert(0, str(Path(__file__).resolve().parent))
# The shared helpers of the aspect-model benchmark: machine and run headers, markdown tables,
# interleaved best-of timing, the summary row.
from bench_aspect import (  # noqa: E402
    Ratio,
    Stopwatch,
    Timed,
    blas_threads,
    emit,
    finish_report,
    interleaved_best,
    machine_rows,
    markdown_table,
    parse_run_arguments,
    report_header,
    version_of,
)
from run_config import QuickConfig, sized  # noqa: E402

from latentzoo.data import CoOccurrence, load  # noqa: E402
from latentzoo.inference import one_sided  # noqa: E402
from latentzoo.inference.aspect import AspectEM, em_pass  # noqa: E402
from latentzoo.inference.one_sided import OneSidedEM, acm_em_pass  # noqa: E402
from latentzoo.inference.two_sided import hard_scm, mean_field  # noqa: E402
from latentzoo.models.aspect import AspectModel  # noqa: E402
from latentzoo.models.one_sided import OneSidedClustering  # noqa: E402
from latentzoo.models.two_sided import TwoSidedClustering  # noqa: E402

ACM_TARGET = 1.5  # ACM EM time per non-zero / aspect EM time per non-zero, per iteration (issue)
SCM_TARGET = 60.0  # seconds to convergence of the mean-field SCM on 20 Newsgroups, 20 x 20
RESULTS = Path(__file__).resolve().parent / "RESULTS_clustering.md"  # tracked copy (full run)
COCLUST_PIP = "pip install coclust"


@dataclass
class Config(QuickConfig):
    """Problem sizes and repeats of one run (full or ``--quick``)."""

    copies: tuple = (1, 4)
    em_clusters: int = 20
    em_betas: tuple = (1.0, 0.5)
    em_passes: int = sized(20, quick=10)  # consecutive calls per timing
    em_rounds: int = sized(15, quick=5)  # timed rounds, interleaved
    scm_clusters: int = 20
    scm_max_iter: int = 200
    seed: int = 0
    auto: bool = sized(True, quick=False)  # also the "auto" (tempered) schedule
    # time the ACM initialisation on its own (same call, same seed)
    time_acm_init: bool = sized(True, quick=False)
    # scikit-learn's SpectralCoclustering as a context peer
    spectral: bool = sized(True, quick=False)
    coclust_max_iter: int = 100


# ----------------------------------------------------------------------------------- helpers
def machine_info() -> list[tuple[str, str]]:
    return machine_rows(
        f"scipy {scipy.__version__}, scikit-learn {version_of('sklearn')}, "
        f"coclust {version_of('coclust')}",
        blas=True,
    )


def run_calls(fn, times):
    for _ in range(times):
        fn()


def status(ok: bool) -> str:
    return "MET" if ok else "NOT MET"


# ------------------------------------------------------- section 1: ACM EM vs aspect EM
def em_cases(cfg: Config, data: CoOccurrence) -> tuple[dict, dict]:
    """name -> (callable, beta, level, method); realistic starting parameters of each model."""
    k = cfg.em_clusters
    acm_problem = OneSidedEM(OneSidedClustering(k), data, n_threads=1)
    aspect_problem = AspectEM(AspectModel(k), data, n_threads=1)
    acm_params = acm_problem.init(np.random.default_rng(cfg.seed))
    aspect_params = aspect_problem.init(np.random.default_rng(cfg.seed))
    rho, q = acm_params["rho"], acm_params["q"]
    theta = np.ascontiguousarray(aspect_params["theta"])
    phi_t = np.ascontiguousarray(aspect_params["phi"].T)
    # Counts converted once, as the EM problems hold them.
    counts = acm_problem.counts
    cases = {}
    for beta in cfg.em_betas:
        cases[("step", "ACM", beta)] = partial(acm_problem.step, acm_params, beta)
        cases[("step", "aspect", beta)] = partial(aspect_problem.step, aspect_params, beta)
        cases[("kernel", "ACM", beta)] = partial(acm_em_pass, data, rho, q, beta, 1, counts)
        # As AspectEM.step calls it: track_loglik=True (the untempered log-likelihood, which the
        # ACM kernel always returns; free at beta = 1).
        cases[("kernel", "aspect", beta)] = partial(
            em_pass, data, theta, phi_t, beta, True, 1, np.float64, counts
        )
        if beta != 1.0:
            cases[("kernel", "aspect, no loglik", beta)] = partial(
                em_pass, data, theta, phi_t, beta, False, 1, np.float64, counts
            )
    checks = {
        "ACM": acm_em_pass(data, rho, q, 1.0, 1, counts)[1].sum() / data.total,
        "aspect": em_pass(data, theta, phi_t, 1.0, False, 1)[0].sum() / data.total,
    }
    return cases, checks


LABELS = {
    ("step", "ACM"): "`OneSidedEM.step`",
    ("step", "aspect"): "`AspectEM.step`",
    ("kernel", "ACM"): "`acm_em_pass`",
    ("kernel", "aspect"): "`em_pass` (track_loglik=True)",
    ("kernel", "aspect, no loglik"): "`em_pass` (track_loglik=False)",
}


def bench_em(cfg: Config):
    reuters = load("reuters")
    k = cfg.em_clusters
    lines = [
        f"## 1. ACM EM vs aspect EM per iteration (Reuters, K={k}, serial)",
        "",
        "Time of one EM iteration on the same data, in ns per non-zero (= the ratio of the "
        "per-iteration times, the data being the same), at two levels: the shared driver's step "
        "(`OneSidedEM(OneSidedClustering(K), data).step(params, beta)` vs "
        "`AspectEM(AspectModel(K), data).step(params, beta)`: the fused pass plus the "
        "logarithms or powers of the tables and the M-step normalisation) and the fused kernels "
        "alone (`acm_em_pass(data, rho, q, beta)`, which takes `log q` itself, vs "
        "`em_pass(data, theta, phi_t, beta)`, which raises the tables to the power beta itself). "
        "Starting parameters: each problem's own `init` (seeded), the models' default priors "
        f"(alpha=1.1, eta=1.01). Each timing is {cfg.em_passes} consecutive calls, best of "
        f"{cfg.em_rounds} rounds interleaved across all cases of a data set, after a warm-up "
        "call; CPU time is the calling thread's. G/s = non-zero-cluster updates per second "
        "(nnz * K / s / 1e9). The aspect kernel is called as `AspectEM.step` calls it "
        "(`track_loglik=True`: at beta != 1 it also accumulates the untempered log-likelihood, "
        "one more K-term dot product and a log per non-zero, as the ACM kernel always returns "
        "it); the `track_loglik=False` row shows the cost of that.",
        "",
    ]
    header = ["data", "nnz", "beta", "level", "method", "ms / iteration", "ns / non-zero",
              "ns / non-zero (CPU time)", "G/s", "ACM / aspect (wall)",
              "ACM / aspect (CPU time)"]  # fmt: skip
    rows, ratios, checks = [], [], []
    verdicts = []
    for copies in cfg.copies:
        data = reuters if copies == 1 else CoOccurrence(
            sp.vstack([reuters.counts] * copies, format="csr")
        )  # fmt: skip
        name = "Reuters" if copies == 1 else f"Reuters x{copies}"
        nnz = data.counts.nnz
        cases, sums = em_cases(cfg, data)
        checks.append(
            f"{name}: expected counts of one pass sum to the data total (ACM "
            f"{sums['ACM']:.12f}, aspect {sums['aspect']:.12f} of it)"
        )
        timed = {key: Timed(partial(run_calls, fn, cfg.em_passes), cfg.em_rounds)
                 for key, fn in cases.items()}  # fmt: skip
        best = interleaved_best(timed)
        per = {
            key: (wall / cfg.em_passes, cpu / cfg.em_passes) for key, (wall, cpu) in best.items()
        }
        for beta in cfg.em_betas:
            for level in ("step", "kernel"):
                acm, aspect = per[(level, "ACM", beta)], per[(level, "aspect", beta)]
                ratio, cpu_ratio = acm[0] / aspect[0], acm[1] / aspect[1]
                methods = ["ACM", "aspect"] + (["aspect, no loglik"] if (
                    level, "aspect, no loglik", beta) in per else [])  # fmt: skip
                for method in methods:
                    wall, cpu = per[(level, method, beta)]
                    first = method == "ACM"
                    rows.append([
                        name, nnz, beta, level, LABELS[(level, method)], 1e3 * wall,
                        1e9 * wall / nnz, 1e9 * cpu / nnz, nnz * k / wall / 1e9,
                        ratio if first else "", cpu_ratio if first else "",
                    ])  # fmt: skip
                if level == "step":
                    verdicts.append((name, beta, ratio, cpu_ratio))
                target = f"<= {ACM_TARGET}" if level == "step" else ""
                ratios.append(
                    Ratio(
                        f"ACM / aspect EM time per non-zero, {LABELS[(level, 'ACM')]} vs "
                        f"{LABELS[(level, 'aspect')]}, {name}, K={k}, beta={beta}",
                        f"{1e9 * acm[0] / nnz:.3g} ns/nz (CPU ratio {cpu_ratio:.3g})",
                        f"{1e9 * aspect[0] / nnz:.3g} ns/nz",
                        ratio,
                        target,
                        status(ratio <= ACM_TARGET) if level == "step" else "",
                    )
                )
            no_loglik = per.get(("kernel", "aspect, no loglik", beta))
            if no_loglik is not None:
                acm = per[("kernel", "ACM", beta)]
                ratios.append(
                    Ratio(
                        f"ACM / aspect EM time per non-zero, `acm_em_pass` vs `em_pass` "
                        f"(track_loglik=False), {name}, K={k}, beta={beta}",
                        f"{1e9 * acm[0] / nnz:.3g} ns/nz",
                        f"{1e9 * no_loglik[0] / nnz:.3g} ns/nz",
                        acm[0] / no_loglik[0],
                    )
                )
    lines += markdown_table(header, rows)
    worst = max(verdicts, key=lambda v: v[2])
    met = all(ratio <= ACM_TARGET for _, _, ratio, _ in verdicts)
    lines += [
        "",
        "Checks: " + "; ".join(checks) + ".",
        "",
        f"**Target** (issue): ACM EM per iteration within {ACM_TARGET}x of the aspect-model EM "
        f"per non-zero on the same data (driver step, serial, every data set and beta above). "
        f"**Worst ratio: {worst[2]:.3g} ({worst[0]}, beta={worst[1]}; CPU time {worst[3]:.3g}) "
        f"-> {status(met)}.**",
    ]
    return lines, ratios


# ------------------------------------------------------------- section 2: SCM on 20 Newsgroups
@dataclass
class Fit:
    """One clustering fit: timings, iterations and the mutual information of its partition."""

    name: str
    wall: float
    cpu: float
    init: float  # initialisation and setup, before the driver's first iteration
    iterations: int  # iterations of the final run (for "auto": of the replayed schedule)
    converged: bool
    mi: float
    row_labels: np.ndarray
    col_labels: np.ndarray
    mi_soft: float = np.nan
    note: str = ""
    selection: float = 0.0  # "auto": the schedule's selection on the validation split

    @property
    def per_iteration(self) -> float:
        if not self.iterations:
            return np.nan
        return (self.wall - self.init - self.selection) / self.iterations


def score(model, data, name, result, clock, note="") -> Fit:
    """Fit of an ``EMResult``.

    The driver's trace time-stamps each iteration from the start of its run: the final run's
    EM time is the last stamp, and for a schedule chosen on a validation split (``"auto"``) the
    selection time is the sum of the last stamps of its temperature stages. Initialisation and
    setup are the rest of the fit's ``seconds``.
    """
    rows = np.argmax(result.params["I"], axis=1)
    cols = np.argmax(result.params["J"], axis=1)
    em_seconds = float(result.trace["seconds"].iloc[-1]) if len(result.trace) else 0.0
    selection = 0.0
    if result.selection_trace is not None and len(result.selection_trace):
        # Each stage has its own beta (the schedule only lowers it) and restarts the clock.
        selection = float(result.selection_trace.groupby("beta")["seconds"].max().sum())
    soft = model.mutual_information(result.params["I"], result.params["J"], data)
    return Fit(name, clock.wall, clock.cpu, result.seconds - em_seconds - selection,
               len(result.trace), bool(result.converged), model.mutual_information(rows, cols, data),
               rows, cols, soft, note, selection)  # fmt: skip


def used(labels, k) -> int:
    return int(np.count_nonzero(np.bincount(labels, minlength=k)))


def bench_scm(cfg: Config):
    data = load("20newsgroups")
    k = cfg.scm_clusters
    model = TwoSidedClustering(k, k)
    fits = []
    acm_seconds = None
    if cfg.time_acm_init:
        # The row initialisation of mean_field(init="acm") on its own: the call that
        # inference/two_sided.py's initial_partition makes, with a generator in the same state.
        acm = OneSidedClustering(k, alpha=max(model.alpha, 1.0), eta=max(model.eta, 1.0))
        with Stopwatch(time.process_time) as clock:
            acm_fit = one_sided.annealed_em(
                acm, data, betas=[1.0], max_iter=100, random_state=np.random.default_rng(cfg.seed)
            )
        acm_seconds = (clock.wall, len(acm_fit.trace), bool(acm_fit.converged))
    with Stopwatch(time.process_time) as clock:
        result = mean_field(model, data, betas=[1.0], max_iter=cfg.scm_max_iter,
                            random_state=cfg.seed)  # fmt: skip
    fits.append(score(model, data, "`mean_field`, betas=[1.0]", result, clock))
    if cfg.auto:
        with Stopwatch(time.process_time) as clock:
            result = mean_field(model, data, betas="auto", max_iter=cfg.scm_max_iter,
                                random_state=cfg.seed)  # fmt: skip
        selection = result.selection_trace
        chosen = ", ".join(f"{b:.3g}" for b in result.betas)
        note = (f"schedule chosen on a 10% validation split: {len(selection)} iterations over "
                f"{selection['beta'].nunique()} temperatures; replayed betas [{chosen}]")  # fmt: skip
        fits.append(score(model, data, '`mean_field`, betas="auto"', result, clock, note))
    with Stopwatch(time.process_time) as clock:
        result = hard_scm(model, data, max_iter=100, random_state=cfg.seed)
    fits.append(score(model, data, "`hard_scm`", result, clock, "init: hard ACM"))

    lines = [
        f"## 2. SCM on the 20 Newsgroups training matrix (Kx=Ky={k})",
        "",
        f'`load("20newsgroups")`: {data.n_rows} x {data.n_cols}, {data.counts.nnz} non-zeros, '
        f"{data.total} tokens. `TwoSidedClustering({k}, {k})` (alpha=1.1, eta=1.01), "
        f'`random_state={cfg.seed}`, `init="acm"` (rows from the one-sided ACM by annealed EM at '
        "beta=1, columns by distributional k-means of their profiles over the row clusters; the "
        f"hard SCM starts from the hard ACM), `max_iter={cfg.scm_max_iter}`, default `tol=1e-7`, "
        "`track_loglik=True` (default). Each fit runs once. Wall = the whole call; init = "
        "initialisation and setup, the part before the driver's first iteration (the fit's "
        '`seconds` minus the driver\'s time stamps); for `"auto"`, schedule selection = the '
        "tempered-EM stages on the validation split, and iterations = those of the schedule "
        "replayed on all the data; s / iteration = (wall - init - selection) / iterations. MI = "
        "`model.mutual_information` (nats) of the hard (argmax) assignments; soft = of the "
        "posteriors. CPU time is the process's, all threads (thread pools: "
        f"{blas_threads()}).",
        "",
    ]
    header = ["fit", "wall s", "CPU s", "init s", "schedule selection s", "iterations",
              "s / iteration", "converged", "MI (hard)", "MI (soft)",
              "row / col clusters used"]  # fmt: skip
    rows = [[f.name, f.wall, f.cpu, f.init, f.selection, f.iterations, f.per_iteration,
             f.converged, f.mi, f.mi_soft, f"{used(f.row_labels, k)} / {used(f.col_labels, k)}"]
            for f in fits]  # fmt: skip
    lines += markdown_table(header, rows)
    notes = [f"{f.name}: {f.note}" for f in fits if f.note]
    if acm_seconds is not None:
        notes.insert(0, f"the ACM initialisation alone (`one_sided.annealed_em(OneSidedClustering("
                        f"{k}), data, betas=[1.0], max_iter=100)`, same seed) takes "
                        f"{acm_seconds[0]:.3g} s ({acm_seconds[1]} iterations, converged "
                        f"{acm_seconds[2]}), of the {fits[0].init:.3g} s of mean field's init")  # fmt: skip
    if notes:
        lines += ["", "Notes: " + "; ".join(notes) + "."]
    main = fits[0]
    met = main.converged and main.wall < SCM_TARGET
    lines += [
        "",
        f"**Target**: the mean-field SCM (betas=[1.0]) converges in under {SCM_TARGET:.0f} s, "
        f"initialisation included. **Reached: {main.wall:.3g} s (init {main.init:.3g} s, "
        f"{main.iterations} iterations, {main.per_iteration:.3g} s each, converged "
        f"{main.converged}) -> {status(met)}.**",
    ]
    ratios = []
    for fit in fits:
        if fit.name.startswith("`mean_field`"):
            ok = fit.converged and fit.wall < SCM_TARGET
            ratios.append(
                Ratio(
                    f"SCM {fit.name} wall time to convergence, 20NG, {k}x{k}",
                    f"{fit.wall:.3g} s (init {fit.init:.3g} s, {fit.iterations} it., "
                    f"converged {fit.converged}, MI {fit.mi:.4f})",
                    f"{SCM_TARGET:.0f} s",
                    fit.wall / SCM_TARGET,
                    f"< {SCM_TARGET:.0f} s",
                    status(ok),
                )
            )
    hard = fits[-1]
    ratios += [
        Ratio(
            "SCM `hard_scm` vs `mean_field` betas=[1.0]: wall time",
            f"{hard.wall:.3g} s ({hard.iterations} it.)",
            f"{main.wall:.3g} s",
            hard.wall / main.wall,
        ),
        Ratio(
            "SCM `hard_scm` vs `mean_field` betas=[1.0]: MI of the hard partition",
            f"{hard.mi:.4f} nats (diff {hard.mi - main.mi:+.4f})",
            f"{main.mi:.4f} nats",
            hard.mi / main.mi,
        ),
    ]
    return lines, ratios, (data, model, fits)


# ----------------------------------------------------------------------- section 3: peers
def bench_peers(cfg: Config, context):
    data, model, fits = context
    k = cfg.scm_clusters
    ours, hard = fits[0], fits[-1]
    x = data.counts.astype(np.float64)  # conversion not timed
    peers, failures = [], []
    try:
        from coclust.coclustering import CoclustInfo

        estimator = CoclustInfo(n_row_clusters=k, n_col_clusters=k, n_init=1,
                                max_iter=cfg.coclust_max_iter, random_state=cfg.seed)  # fmt: skip
        with Stopwatch(time.process_time) as clock:
            estimator.fit(x)
        rows = np.asarray(estimator.row_labels_, dtype=np.int64)
        cols = np.asarray(estimator.column_labels_, dtype=np.int64)
        peers.append(
            Fit(f"coclust {version_of('coclust')} `CoclustInfo`", clock.wall, clock.cpu, np.nan,
                0, True, model.mutual_information(rows, cols, data), rows, cols,
                note=f"n_init=1, max_iter={cfg.coclust_max_iter}, random_state={cfg.seed}")
        )  # fmt: skip
    except Exception as error:  # any failure is reported; the run goes on
        failures.append(("coclust `CoclustInfo`", f"{type(error).__name__}: {error}"))
    if cfg.spectral:
        try:
            from sklearn.cluster import SpectralCoclustering

            estimator = SpectralCoclustering(n_clusters=k, random_state=cfg.seed)
            with Stopwatch(time.process_time) as clock:
                estimator.fit(x)
            rows = np.asarray(estimator.row_labels_, dtype=np.int64)
            cols = np.asarray(estimator.column_labels_, dtype=np.int64)
            peers.append(
                Fit(f"scikit-learn {version_of('sklearn')} `SpectralCoclustering`", clock.wall,
                    clock.cpu, np.nan, 0, True, model.mutual_information(rows, cols, data), rows,
                    cols, note=f"n_clusters={k} ({k} row and {k} column clusters paired 1:1), "
                    "normalised-cut objective, not the MI")
            )  # fmt: skip
        except Exception as error:
            failures.append(("scikit-learn `SpectralCoclustering`",
                             f"{type(error).__name__}: {error}"))  # fmt: skip

    lines = [
        f"## 3. Peer co-clusterings on the same 20 Newsgroups matrix ({k} x {k})",
        "",
        "Each peer fits the float64 CSR count matrix once (the conversion is not timed); its "
        "partition is scored with the same `TwoSidedClustering.mutual_information` as ours "
        "(nats). `CoclustInfo` maximises the same criterion as the hard SCM (the mutual "
        "information between row and column clusters); scikit-learn's `SpectralCoclustering` "
        "is shown for context only (a different, normalised-cut objective).",
        "",
    ]
    for peer, error in failures:
        hint = f" (install with `{COCLUST_PIP}`)" if peer.startswith("coclust") else ""
        lines += [f"**{peer} not run: {error}**{hint}.", ""]
    header = ["method", "wall s", "CPU s", "MI (hard)", "MI ours (mean field) - peer",
              "MI ours (hard SCM) - peer", "row / col clusters used", "settings"]  # fmt: skip
    table = [[p.name, p.wall, p.cpu, p.mi, f"{ours.mi - p.mi:+.4f}", f"{hard.mi - p.mi:+.4f}",
              f"{used(p.row_labels, k)} / {used(p.col_labels, k)}", p.note]
             for p in peers]  # fmt: skip
    table += [[f.name + " (ours, section 2)", f.wall, f.cpu, f.mi, "", "",
               f"{used(f.row_labels, k)} / {used(f.col_labels, k)}", ""]
              for f in fits]  # fmt: skip
    lines += markdown_table(header, table)
    ratios = []
    for peer in peers:
        for mine in (ours, hard):
            ratios += [
                Ratio(
                    f"{mine.name} vs {peer.name}: wall time, 20NG {k}x{k}",
                    f"{mine.wall:.3g} s",
                    f"{peer.wall:.3g} s",
                    mine.wall / peer.wall,
                ),
                Ratio(
                    f"{mine.name} vs {peer.name}: MI of the hard partition",
                    f"{mine.mi:.4f} nats (diff {mine.mi - peer.mi:+.4f})",
                    f"{peer.mi:.4f} nats",
                    mine.mi / peer.mi if peer.mi > 0 else np.nan,
                ),
            ]
    for peer, error in failures:
        ratios.append(Ratio(f"ours vs {peer}", "", f"not run: {error}", np.nan, "", "not run"))
    return lines, ratios


# ------------------------------------------------------------------------------------- driver
def main(argv=None) -> int:
    args, argv, results = parse_run_arguments(
        argv,
        __doc__.splitlines()[0],
        "report/benchmarks_clustering.md",
        RESULTS,
        "about one minute, fewer repeats",
    )
    cfg = Config.quick() if args.quick else Config()
    start = time.perf_counter()

    title = (
        f"# latentzoo clustering benchmarks: ACM and SCM ({'quick' if args.quick else 'full'} run)"
    )
    header = report_header(title, argv, machine_info())
    emit(header)
    sections, ratios = [], []
    lines, more = bench_em(cfg)
    emit(lines)
    sections.append(lines)
    ratios += more
    lines, more, context = bench_scm(cfg)
    emit(lines)
    sections.append(lines)
    ratios += more
    lines, more = bench_peers(cfg, context)
    emit(lines)
    sections.append(lines)
    ratios += more
    finish_report(header, sections, ratios, start, (args.out, results))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
