"""Benchmarks of the aspect model's fast inference against its peers, reported as ratios.

Run from the repository root (the package installed, e.g. ``make install-test``)::

    python benchmarks/bench_aspect.py            # full run, about 2-3 minutes on 2 cores
    python benchmarks/bench_aspect.py --quick    # about 1 minute: smaller problems, fewer repeats
    python benchmarks/bench_aspect.py --out other.md

The tables are printed and written as markdown to ``report/benchmarks.md`` (not tracked) and, for
a full run, to ``benchmarks/RESULTS.md`` (tracked, so that the measured numbers are kept), headed
with the date, the machine, the commit and the exact command. Sections:

1. **EM throughput.** Reuters stacked 16 times, K = 10, 20, 64, 128, float64 and float32, one
   thread: the library (``em_pass``; ``latentzoo.fit`` end to end, per iteration of a
   fixed-iteration fit) against the yardstick of ``em_yardstick.py`` (the obvious fused numba
   loop, kernel and EM loop) and a vectorised numpy EM written here, in G non-zero-topic updates
   per second per thread (``nnz * K * iterations / seconds / 1e9 / threads``), with the issue's
   target of 2.2 G/s/thread (float64, K = 20 and 64, through ``latentzoo.fit``). Diagnostics: a
   cache-resident pass (every row's columns remapped into a window that stays in cache), beta
   0.8 and 2 threads, the cost per non-zero ``a + b K`` fitted across K, and the pass's loops
   timed alone on L1-resident rows.
2. **Collapsed Gibbs tokens/s.** Reuters, K = 10, 20 and 50, 200 sweeps, one thread, alpha = 0.1,
   eta = 0.01: ``AspectGibbs`` against the ``lda`` package and tomotopy, plus held-out perplexity
   of each on a 10% binomial split with the posterior-mean point estimates of the final state.
3. **ESS/s against PyMC NUTS.** Minimum bulk ESS of the invariants ``loglik`` and ``p_dyad`` per
   second of sampling, collapsed Gibbs against ``fit_pymc`` on a small separated synthetic corpus,
   with where Gibbs's time goes (sweeps, per-draw work) and the bounds on the ratio that the
   sweep's cost and the chain's autocorrelation set.

Every random draw is seeded. Timings are the best of several repeats, interleaved across the
compared methods so that load from other processes hits them alike; the load average is printed.
"""

from __future__ import annotations

import argparse
import datetime
import logging
import os
import platform
import shlex
import subprocess
import sys
import time
import warnings
from dataclasses import dataclass
from functools import partial
from pathlib import Path

import numba as nb
import numpy as np
import scipy.sparse as sp

import latentzoo
from latentzoo.data import CoOccurrence, load
from latentzoo.inference.aspect import AspectGibbs, em_pass, gibbs
from latentzoo.models.aspect import AspectModel

sys.path.insert(0, str(Path(__file__).resolve().parent))
from em_yardstick import loop_ceilings, map_em_loop, yardstick_fit, yardstick_pass  # noqa: E402
from run_config import QuickConfig, sized  # noqa: E402

EM_TARGET = 2.2  # G non-zero-topic updates / s / thread, serial em_pass (issue)
GIBBS_TARGET = 1.0  # ours / tomotopy tokens per second
ESS_TARGET = 1000.0  # collapsed Gibbs ESS/s over PyMC NUTS ESS/s
RESULTS = Path(__file__).resolve().parent / "RESULTS.md"  # tracked copy of a full run's tables


@dataclass
class Config(QuickConfig):
    """Problem sizes and repeats of one run (full or ``--quick``)."""

    copies: int = 16
    em_topics: tuple = sized((10, 20, 64, 128), quick=(20, 64))
    em_diagnostic_topics: tuple = (20, 64)  # the target's K: diagnostics and verdict
    em_iterations: int = sized(3, quick=2)  # kernel passes per timing
    em_repeats: int = sized(8, quick=4)
    em_fit_iterations: int = sized(10, quick=4)  # iterations of each timed fixed-iteration fit
    em_fit_repeats: int = sized(3, quick=2)
    numpy_repeats: int = sized(4, quick=2)
    numpy_fit_iterations: int = sized(2, quick=1)
    gibbs_topics: tuple = (10, 20, 50)
    gibbs_sweeps: int = 200
    gibbs_repeats: int = sized(3, quick=1)
    perplexity_seeds: tuple = sized((1, 2, 3), quick=(1,))
    ess_topics: int = sized(3, quick=2)
    ess_docs: int = sized(30, quick=10)
    ess_words: int = sized(60, quick=12)
    ess_length: int = sized(200, quick=60)
    pymc_chains: int = sized(4, quick=2)
    pymc_draws: int = 400
    pymc_tune: int = 400
    gibbs_chains: int = 4
    gibbs_draws: int = 2000
    gibbs_tune: int = 200


@dataclass
class Ratio:
    """One line of the summary: a measured quantity of ours against a peer or a target."""

    comparison: str
    ours: str
    peer: str
    ratio: float
    target: str = ""
    status: str = ""


# ----------------------------------------------------------------------------------- helpers
def cpu_model() -> str:
    """Model name and the widest SIMD extensions, from /proc/cpuinfo."""
    try:
        info = Path("/proc/cpuinfo").read_text().splitlines()
    except OSError:
        return platform.processor() or "unknown"
    fields = dict(line.split(":", 1) for line in info if ":" in line)
    fields = {key.strip(): value.strip() for key, value in fields.items()}
    flags = set(fields.get("flags", "").split())
    simd = [name for name in ("avx2", "fma", "avx512f") if name in flags]
    return f"{fields.get('model name', 'unknown')}, SIMD: {' '.join(simd) or 'n/a'}"


def load_average() -> str:
    try:
        return " ".join(Path("/proc/loadavg").read_text().split()[:3])
    except OSError:
        return "n/a"


def version_of(module_name: str) -> str:
    """A peer's version, or "not installed" (any import failure means not available)."""
    try:
        module = __import__(module_name)
    except Exception:
        return "not installed"
    return getattr(module, "__version__", "?")


def blas_threads() -> str:
    """The BLAS libraries and their thread counts (threadpoolctl)."""
    try:
        import threadpoolctl

        info = threadpoolctl.threadpool_info()
    except ImportError:
        return "n/a (threadpoolctl not installed)"
    return ", ".join(f"{d['internal_api']} {d['num_threads']}" for d in info) or "n/a"


def machine_rows(peer_versions: str, blas: bool = False) -> list[tuple[str, str]]:
    """CPU, numba threads (and with ``blas`` the BLAS threads), load average and versions
    (python, numpy, numba, then the peers')."""
    rows = [
        ("CPU", f"{cpu_model()} ({os.cpu_count()} logical CPUs)"),
        ("numba threads", str(nb.config.NUMBA_NUM_THREADS)),
        ("load average (1, 5, 15 min) at start", load_average()),
        (
            "versions",
            f"python {platform.python_version()}, numpy {np.__version__}, numba {nb.__version__}, "
            + peer_versions,
        ),
    ]
    if blas:
        rows.insert(2, ("BLAS threads (threadpoolctl)", blas_threads()))
    return rows


def machine_info() -> list[tuple[str, str]]:
    import lda
    import pymc
    import tomotopy

    return machine_rows(
        f"lda {lda.__version__ if hasattr(lda, '__version__') else '?'}, tomotopy "
        f"{tomotopy.__version__} (isa {tomotopy.isa}), pymc {pymc.__version__}"
    )


def run_info(argv: list[str]) -> list[tuple[str, str]]:
    """Date, exact command and commit of this run."""
    try:
        commit = subprocess.run(
            ["git", "describe", "--always", "--dirty"], cwd=Path(__file__).resolve().parent,
            capture_output=True, text=True, check=True,
        ).stdout.strip()  # fmt: skip
    except (OSError, subprocess.CalledProcessError):
        commit = "n/a"
    if commit.endswith("-dirty"):
        commit += " (`-dirty`: the working tree had uncommitted changes)"
    now = datetime.datetime.now(datetime.UTC)
    return [
        ("date", now.strftime("%Y-%m-%d %H:%M UTC")),
        ("command", f"`{shlex.join(['python', sys.argv[0], *argv])}`"),
        ("commit", commit),
    ]


def _threading_layer() -> str:
    try:
        return nb.threading_layer()
    except ValueError:  # no parallel function has run yet
        return "not initialised"


def markdown_table(header: list[str], rows: list[list]) -> list[str]:
    def cell(value) -> str:
        if isinstance(value, float | np.floating):
            if not np.isfinite(value):
                return "n/a"
            return f"{value:.3g}" if abs(value) < 1e4 else f"{value:.3e}"
        return str(value)

    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(cell(v) for v in row) + " |" for row in rows]
    return lines


@dataclass
class Timed:
    """A callable to time: ``rounds`` timed calls after one warm-up call.

    CPU time is the calling thread's for serial code (immune to other processes sharing the
    cores) and the whole process's for multi-threaded code.
    """

    fn: object
    rounds: int
    threads: int = 1


def interleaved_best(cases: dict[str, Timed]) -> dict[str, tuple[float, float]]:
    """Best (wall, CPU) seconds of each case; rounds interleaved across the cases so that load
    from other processes hits them alike."""
    for case in cases.values():
        case.fn()
    best = {name: (np.inf, np.inf) for name in cases}
    for round_ in range(max(case.rounds for case in cases.values())):
        for name, case in cases.items():
            if round_ >= case.rounds:
                continue
            clock = time.thread_time if case.threads == 1 else time.process_time
            cpu, wall = clock(), time.perf_counter()
            case.fn()
            wall, cpu = time.perf_counter() - wall, clock() - cpu
            best[name] = (min(best[name][0], wall), min(best[name][1], cpu))
    return best


def interleaved_rounds(cases: dict, rounds: int) -> tuple[dict, dict]:
    """Wall and CPU (calling thread) seconds of every round of every case, as two dicts of
    arrays; one warm-up call each, then the rounds interleaved across the cases (all serial)."""
    for fn in cases.values():
        fn()
    wall = {key: np.empty(rounds) for key in cases}
    cpu = {key: np.empty(rounds) for key in cases}
    for round_ in range(rounds):
        for key, fn in cases.items():
            c0, w0 = time.thread_time(), time.perf_counter()
            fn()
            wall[key][round_] = time.perf_counter() - w0
            cpu[key][round_] = time.thread_time() - c0
    return wall, cpu


class Stopwatch:
    """``with Stopwatch() as sw: ...`` then ``sw.wall`` and ``sw.cpu`` seconds.

    ``cpu`` is by default the calling thread's CPU time: every sampler timed with it (ours, lda,
    tomotopy with ``workers=1``) runs in the calling thread, and idle numba worker threads are not
    counted. ``Stopwatch(time.process_time)`` counts all threads of the process instead (dense
    products on several BLAS threads, threaded kernels).
    """

    def __init__(self, cpu_clock=time.thread_time):
        self.cpu_clock = cpu_clock

    def __enter__(self):
        self._wall, self._cpu = time.perf_counter(), self.cpu_clock()
        return self

    def __exit__(self, *exc):
        self.wall = time.perf_counter() - self._wall
        self.cpu = self.cpu_clock() - self._cpu
        return False


def timed_sweeps(sampler, chains: int, sweeps: int) -> tuple[Stopwatch, object]:
    """Time ``sweeps`` calls of ``sampler.step`` on each of ``chains`` chains, and nothing else.

    Each chain starts from ``sampler.init`` with the generator seeded by its index, as the
    chain runner does; the draws are not stored, so the time is the sweeps' own.

    Returns
    -------
    Stopwatch, state
        The stopwatch of the whole loop and the last chain's final state.
    """
    with Stopwatch() as clock:
        for chain in range(chains):
            rng = np.random.default_rng(chain)
            state = sampler.init(rng)
            for _ in range(sweeps):
                state, _ = sampler.step(state, rng)
    return clock, state


def relative_error(a, b) -> float:
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    return float(np.max(np.abs(a - b)) / max(np.max(np.abs(b)), 1e-300))


# ----------------------------------------------------------------- section 1: EM and peers
def numpy_em_pass(data: CoOccurrence, theta, phi_t, beta=1.0, dtype=np.float64):
    """Plain vectorised EM pass: SDDMM by gathering (materialises nnz x K), M-step by scipy.

    Same outputs as :func:`latentzoo.inference.aspect.em_pass` (``n_theta``, ``n_phi`` (M x K),
    ``energy = sum n log sum_k (theta phi)**beta``), computed in ``dtype`` (the energy's sum in
    float64).
    """
    csr = data.counts
    rows = np.repeat(np.arange(csr.shape[0]), np.diff(csr.indptr))
    counts = csr.data.astype(dtype)
    theta, phi_t = theta.astype(dtype, copy=False), phi_t.astype(dtype, copy=False)
    t_theta, t_phi = (theta, phi_t) if beta == 1.0 else (theta**beta, phi_t**beta)
    s = np.einsum("ik,ik->i", t_theta[rows], t_phi[csr.indices])
    energy = float(counts.astype(np.float64) @ np.log(s))
    r = sp.csr_matrix((counts / s, csr.indices, csr.indptr), shape=csr.shape)
    n_theta = t_theta * (r @ t_phi)
    n_phi = t_phi * (r.T @ t_theta)
    return n_theta, n_phi, energy


def numpy_em_fit(data: CoOccurrence, theta, phi_t, iterations, alpha, eta, dtype=np.float64):
    """:func:`numpy_em_pass` in :func:`em_yardstick.map_em_loop`, the loop of ``yardstick_fit``
    (MAP M-step and the free energy with the log prior): the numpy EM, iteration for iteration.
    Returns ``(theta, phi_t, free energies)``."""
    theta, phi_t = theta.astype(dtype), phi_t.astype(dtype)
    em_pass = partial(numpy_em_pass, data, beta=1.0, dtype=dtype)
    return map_em_loop(em_pass, theta, phi_t, iterations, alpha, eta)


def cache_resident(data: CoOccurrence) -> CoOccurrence:
    """Same rows, counts and non-zeros per row, but row ``i``'s ``p``-th non-zero moved to column
    ``p``: every row reads the same few hundred ``phi`` rows, which stay in L1/L2."""
    csr = data.counts
    lengths = np.diff(csr.indptr)
    columns = np.arange(csr.nnz) - np.repeat(csr.indptr[:-1], lengths)
    resident = sp.csr_matrix((csr.data, columns, csr.indptr), shape=csr.shape)
    return CoOccurrence(resident)


def run_passes(fn, times):
    for _ in range(times):
        fn()


#: The dtypes of section 1, as labelled in its tables.
EM_DTYPES = {"float64": np.float64, "float32": np.float32}


def em_cases(cfg: Config, data, resident, theta, phi_t, model, diagnose) -> dict:
    """name -> (one call, iterations per call, calls per timing, timed rounds, threads).

    Kernel cases (``kernel ...``) are one E/M pass each; ``fit ...`` cases a whole fixed-iteration
    fit (``betas=[1.0], tol=0, max_iter=cfg.em_fit_iterations``), its start drawn inside the
    call for ``latentzoo.fit`` (timed, as a user meets it) and given to the two plain loops.
    The cache-resident pass runs at every K; with ``diagnose``, also beta=0.8 and 2 threads.
    """
    fast, slow, iters = cfg.em_repeats, cfg.numpy_repeats, cfg.em_iterations
    fit_iters, fit_rounds = cfg.em_fit_iterations, cfg.em_fit_repeats
    csr = data.counts
    lib = partial(em_pass, data, theta, phi_t, track_loglik=False)
    cases = {}
    for label, dtype in EM_DTYPES.items():
        counts = csr.data.astype(dtype)
        th, ph = theta.astype(dtype), phi_t.astype(dtype)
        n_theta, n_phi = np.empty_like(th), np.empty_like(ph)
        yard = partial(yardstick_pass, csr.indptr, csr.indices, counts, th, ph, n_theta, n_phi)
        cases |= {
            f"kernel em_pass {label}": (
                partial(lib, dtype=dtype, counts=counts if dtype is np.float64 else None),
                1, iters, fast, 1,
            ),
            f"kernel yardstick {label}": (yard, 1, iters, fast, 1),
            f"kernel numpy {label}": (
                partial(numpy_em_pass, data, theta, phi_t, 1.0, dtype), 1, 1, slow, 1,
            ),
            f"fit latentzoo.fit {label}": (
                partial(latentzoo.fit, model, data, "annealed_em", betas=[1.0], tol=0.0,
                        max_iter=fit_iters, n_threads=1, random_state=0, dtype=dtype),
                fit_iters, 1, fit_rounds, 1,
            ),
            f"fit yardstick {label}": (
                partial(yardstick_fit, csr, theta, phi_t, fit_iters, model.alpha, model.eta,
                        dtype),
                fit_iters, 1, fit_rounds, 1,
            ),
            f"fit numpy {label}": (
                partial(numpy_em_fit, data, theta, phi_t, cfg.numpy_fit_iterations,
                        model.alpha, model.eta, dtype),
                cfg.numpy_fit_iterations, 1, max(slow // 2, 1), 1,
            ),
        }  # fmt: skip
    cases["kernel em_pass float64, cache-resident columns"] = (
        partial(em_pass, resident, theta, phi_t, track_loglik=False), 1, iters, fast, 1,
    )  # fmt: skip
    if diagnose:
        cases |= {
            "kernel em_pass float64, beta=0.8": (partial(lib, beta=0.8), 1, iters, fast, 1),
            "kernel em_pass float64, 2 threads": (partial(lib, n_threads=2), 1, iters, fast, 2),
        }  # fmt: skip
    return cases


def cost_per_nonzero(topics, nanoseconds) -> tuple[float, float]:
    """Least-squares ``a + b K`` through the nanoseconds per non-zero of one pass at each K:
    ``a`` the cost of a non-zero whatever K (index, row fetch, normaliser, division, energy),
    ``b`` the cost of one non-zero-topic update. Returns ``(a, b)``."""
    b, a = np.polyfit(np.asarray(topics, dtype=float), np.asarray(nanoseconds), 1)
    return float(a), float(b)


def target_status(value: float) -> str:
    return "MET" if value >= EM_TARGET else "NOT MET"


def bench_em(cfg: Config):
    reuters = load("reuters")
    data = CoOccurrence(sp.vstack([reuters.counts] * cfg.copies, format="csr"))
    resident = cache_resident(data)
    nnz = data.counts.nnz
    lines = [
        "## 1. EM throughput (G non-zero-topic updates / s / thread)",
        "",
        f"Reuters stacked {cfg.copies} times: {data.n_rows} x {data.n_cols}, {nnz} non-zeros, "
        f"K = {', '.join(map(str, cfg.em_topics))}, one thread unless said. Three "
        "implementations, each in float64 and float32: the library (`em_pass`, and "
        "`latentzoo.fit(..., dtype=...)`), the yardstick (`benchmarks/em_yardstick.py`: the "
        "obvious fused numba loop, `fastmath=True`, per non-zero `s`, `log s` and both "
        "expected-count updates) and the vectorised numpy EM (`numpy_em_pass` here: gathers "
        "nnz x K, M-step through scipy). **Kernel**: one E/M pass, `track_loglik=False`; "
        f"each timing is {cfg.em_iterations} passes (numpy: 1). **End to end**: per-iteration "
        "cost of a fixed-iteration fit (total time / iterations): `latentzoo.fit(AspectModel(K), "
        f"data, betas=[1.0], tol=0, max_iter={cfg.em_fit_iterations}, n_threads=1, "
        "random_state=0)` with everything it does (validation, start, the free energy with the "
        "log prior it tracks, MAP M-step, result), against the same EM loop around the "
        "yardstick (`yardstick_fit`) and around the numpy pass "
        f"({cfg.numpy_fit_iterations} iterations), both given the start. Every timing is the "
        f"best of {cfg.em_repeats} rounds (end to end: {cfg.em_fit_repeats}; numpy: "
        f"{cfg.numpy_repeats}, end to end {max(cfg.numpy_repeats // 2, 1)}) interleaved across "
        "all cases of one K in one process, after a warm-up call (numba compilation). "
        "G/s = nnz * K * iterations / seconds / 1e9 (per thread: / threads); the CPU-time "
        "columns use the calling thread's CPU time (process CPU time for 2 threads), which "
        "other processes on the machine inflate less than wall time.",
        "",
    ]
    header = ["K", "what", "implementation", "dtype", "s / iteration", "G/s / thread",
              "G/s / thread (CPU time)", "library / this (wall)", "library / this (CPU)"]  # fmt: skip
    rows, ratios, checks, diagnostics = [], [], [], []
    rate, cpu_rate = {}, {}
    for n_topics in cfg.em_topics:
        rng = np.random.default_rng(n_topics)
        theta = rng.dirichlet(np.ones(n_topics), size=data.n_rows)
        phi_t = np.ascontiguousarray(rng.dirichlet(np.ones(data.n_cols), size=n_topics).T)
        model = AspectModel(n_topics)
        diagnose = n_topics in cfg.em_diagnostic_topics
        spec = em_cases(cfg, data, resident, theta, phi_t, model, diagnose)
        cases = {
            name: Timed(partial(run_passes, fn, times), rounds, threads)
            for name, (fn, _, times, rounds, threads) in spec.items()
        }
        best = interleaved_best(cases)
        for name, (_, iterations, times, _, threads) in spec.items():
            work = nnz * n_topics * iterations * times / 1e9
            rate[n_topics, name] = work / best[name][0] / threads
            cpu_rate[n_topics, name] = work / best[name][1] / threads
        for name, (*_, threads) in spec.items():
            what, impl = name.split(" ", 1)
            impl, _, label = impl.partition(" ")
            if "," in label:
                continue
            ours = f"{what} {'em_pass' if what == 'kernel' else 'latentzoo.fit'} {label}"
            seconds = nnz * n_topics / 1e9 / (rate[n_topics, name] * threads)
            rows.append([
                n_topics, what, impl, label, seconds, rate[n_topics, name],
                cpu_rate[n_topics, name], rate[n_topics, ours] / rate[n_topics, name],
                cpu_rate[n_topics, ours] / cpu_rate[n_topics, name],
            ])  # fmt: skip
        for name in spec:
            if "," in name:
                diagnostics.append([n_topics, name.removeprefix("kernel em_pass "),
                                    rate[n_topics, name], cpu_rate[n_topics, name]])  # fmt: skip

        # Correctness of the numpy EM, the yardstick and float32 against em_pass (float64).
        ref = em_pass(data, theta, phi_t, 1.0, False, 1)
        n_theta, n_phi = np.empty_like(theta), np.empty_like(phi_t)
        energy = yardstick_pass(data.counts.indptr, data.counts.indices,
                                data.counts.data.astype(np.float64), theta, phi_t, n_theta, n_phi)  # fmt: skip
        for label, out in (
            ("numpy", numpy_em_pass(data, theta, phi_t)),
            ("yardstick", (n_theta, n_phi, energy)),
            ("em_pass float32", em_pass(data, theta, phi_t, 1.0, False, 1, np.float32)),
        ):
            errors = [relative_error(out[0], ref[0]), relative_error(out[1], ref[1]),
                      abs(out[2] - ref[2]) / abs(ref[2])]  # fmt: skip
            checks.append(
                f"K={n_topics} {label}: n_theta {errors[0]:.1e}, n_phi {errors[1]:.1e}, "
                f"energy {errors[2]:.1e}"
            )

    lines += markdown_table(header, rows)
    lines += [
        "",
        "Max relative errors against `em_pass` (float64), beta=1: " + "; ".join(checks) + ".",
        "",
        "Diagnostics of the float64 kernel (serial beta=1 is the `kernel em_pass float64` row "
        "above): the **cache-resident** pass (the same rows, counts and non-zeros per row, each "
        "row's columns remapped to `0..nnz_i-1`, so the `phi` rows it reads stay in cache), and "
        "at the target's K beta=0.8 (tempered tables) and 2 threads (G/s per thread):",
        "",
    ]
    lines += markdown_table(["K", "variant", "G/s / thread", "G/s / thread (CPU time)"],
                            diagnostics)  # fmt: skip

    # Cost per non-zero a + b K, from the CPU time of one pass at each K (K >= 20: at K = 10
    # the loops run below their vector width and their fixed overhead dominates).
    fitted = [k for k in cfg.em_topics if k >= 20]
    models = {}
    for label, name in (("real", "kernel em_pass float64"),
                        ("cache-resident", "kernel em_pass float64, cache-resident columns")):  # fmt: skip
        models[label] = cost_per_nonzero(fitted, [k / cpu_rate[k, name] for k in fitted])
    budget = {k: k / EM_TARGET for k in cfg.em_diagnostic_topics}
    lines += [
        "",
        "**Cost per non-zero** of the float64 pass, least squares `a + b K` (ns, CPU time) over "
        f"K = {', '.join(map(str, fitted))}: `a` is paid per non-zero whatever K (column "
        "index, fetch of the random `phi` rows, normaliser, division, energy bookkeeping, loop "
        "set-up), `b` per non-zero-topic update. The target needs `a + b K <= K / 2.2` ns: "
        + ", ".join(f"{budget[k]:.1f} ns per non-zero at K={k}" for k in budget)
        + ".",
        "",
    ]
    lines += markdown_table(
        ["pass", "a (ns / non-zero)", "b (ns / update)", "1 / b (G/s, a = 0)"]
        + [f"K / (a + b K) at K={k} (G/s)" for k in cfg.em_diagnostic_topics],
        [[label, a, b, 1.0 / b] + [k / (a + b * k) for k in cfg.em_diagnostic_topics]
         for label, (a, b) in models.items()],
    )  # fmt: skip

    ceilings = {k: loop_ceilings(k) for k in cfg.em_diagnostic_topics}
    lines += [
        "",
        "**The pass's loops alone.** Per non-zero and topic the pass does one multiply-add of "
        "the dot product `s = sum_k t_theta[i,k] t_phi[j,k]` and two read-modify-write updates, "
        "`acc[k] += r t_phi[j,k]` (theta side) and `acc_phi[j,k] += r t_theta[i,k]` (phi "
        "side). The same numba loops, timed alone on 16 rows resident in L1 "
        "(`em_yardstick.loop_ceilings`: no cache miss, division or logarithm), run at:",
        "",
    ]
    lines += markdown_table(
        ["K", "clock (GHz, FMA latency chain)", "dot G/s", "row update G/s",
         "1 / (1/dot + 2/update) G/s"],
        [[k, c["GHz"], c["dot"], c["update"], c["ceiling"]] for k, c in ceilings.items()],
    )  # fmt: skip

    verdict = []
    for k in cfg.em_diagnostic_topics:
        for label in EM_DTYPES:
            name = f"fit latentzoo.fit {label}"
            verdict.append(
                f"K={k} {label} {rate[k, name]:.2f} (CPU time {cpu_rate[k, name]:.2f}) -> "
                f"{target_status(rate[k, name])}"
            )
    lines += [
        "",
        f"**Target** (issue): >= {EM_TARGET} G/s/thread in float64 at K=20 and K=64 through "
        "`latentzoo.fit` end to end. **Reached:** " + "; ".join(verdict) + ".",
    ]
    float64_met = all(
        rate[k, "fit latentzoo.fit float64"] >= EM_TARGET for k in cfg.em_diagnostic_topics
    )
    if not float64_met:
        (a_real, b_real), (a_res, b_res) = models["real"], models["cache-resident"]
        small, large = cfg.em_diagnostic_topics[0], cfg.em_diagnostic_topics[-1]
        lines.append(
            "Reason float64 falls short (measured, above): the pass costs "
            f"{a_real:.1f} ns per non-zero plus {b_real:.2f} ns per update ({a_res:.1f} + "
            f"{b_res:.2f} with the `phi` rows in cache). The target leaves "
            f"{budget[small]:.1f} ns per non-zero at K={small}, where the pass needs "
            f"{a_real + small * b_real:.1f}, and {budget[large]:.1f} ns at K={large}, where it "
            f"needs {a_real + large * b_real:.1f}; the per-update cost alone caps the rate at "
            f"1/b = {1 / b_real:.2f} G/s whatever K (in cache: 1/b = {1 / b_res:.2f}, "
            f"K / (a + b K) = {small / (a_res + small * b_res):.2f} at K={small} and "
            f"{large / (a_res + large * b_res):.2f} at K={large}). "
            "The per-update cost is that of the loops numba generates "
            "(the loop table: a read-modify-write row update runs at "
            f"{min(c['update'] for c in ceilings.values()):.1f}-"
            f"{max(c['update'] for c in ceilings.values()):.1f} G elements/s even on "
            "L1-resident rows, and every update needs two plus a multiply-add of the dot "
            "product); the per-non-zero part is loop "
            "set-up (runtime alias checks, vector remainders), the random row fetches and the "
            "normaliser's reduction and division. Removing both needs the `t_theta[i]` row "
            "and the theta-side accumulator held in registers across a row, i.e. code "
            "specialised to K with explicit SIMD. Measured and dropped (same machine, side by "
            "side, float64, K=10/20/64/128): that kernel written with llvmlite vector "
            "intrinsics (rows as tuples of 4-lane vectors, K padded to a multiple of 4): 1.6x "
            "at K=10, 1.1-1.3x at K=20 with software prefetch, 1.7-2.3x slower at K>=64 "
            "(register spills), still at most 1.5 G/s at K=20 with every row in cache; K as a "
            "compile-time constant in plain numba (LLVM unrolls into a serial scalar chain: "
            "0.5 G/s at K=20); explicit 4-lane blocks in numba source (LLVM vectorises across "
            "the blocks with a scalar tail: 25-45% slower); a CSR pass plus a CSC pass for "
            "`phi` (the CSC pass reads `r` in random order: 8% slower at K=20); the updates of "
            "one non-zero pipelined into the dot product of the next, two non-zeros per loop, "
            "alternating theta accumulators, software prefetch of the `phi` rows 4 non-zeros "
            "ahead: each within -8%..+9%. Kept: the two row updates in separate loops (16% at "
            "K=20, bit-identical), the energy's logarithms out of the loop (the counts 1-4 "
            "batched into a running product by selects, the rest queued and logged once per "
            "row: a libm call in the loop spilled its vector registers, and a branch on the "
            "count was mispredicted; 5-15%, energy closer to `math.fsum`), and `default_dyads` "
            "(called by every fit) no longer sorting all non-zeros (0.1 s per fit on Reuters "
            "x16). float32 mode halves the bytes and doubles the lanes per update."
        )
    lines.append("")

    for n_topics in cfg.em_topics:
        for label in EM_DTYPES:
            fit_ours = rate[n_topics, f"fit latentzoo.fit {label}"]
            kernel_ours = rate[n_topics, f"kernel em_pass {label}"]
            for what, ours, peer in (
                ("latentzoo.fit per iteration", fit_ours, "fit yardstick"),
                ("latentzoo.fit per iteration", fit_ours, "fit numpy"),
                ("em_pass", kernel_ours, "kernel yardstick"),
            ):
                theirs = rate[n_topics, f"{peer} {label}"]
                ratios.append(
                    Ratio(
                        f"EM {what}, K={n_topics}, {label}, vs {peer.split()[1]}",
                        f"{ours:.3g} G/s",
                        f"{theirs:.3g} G/s",
                        ours / theirs,
                    )
                )
            if n_topics in cfg.em_diagnostic_topics:
                binding = label == "float64"
                ratios.append(
                    Ratio(
                        f"EM latentzoo.fit per iteration, K={n_topics}, {label}, vs target",
                        f"{fit_ours:.3g} G/s/thread (CPU time "
                        f"{cpu_rate[n_topics, f'fit latentzoo.fit {label}']:.3g})",
                        f"{EM_TARGET} G/s/thread",
                        fit_ours / EM_TARGET,
                        f">= {EM_TARGET} G/s" if binding else "(target is for float64)",
                        target_status(fit_ours) if binding else "",
                    )
                )
    return lines, ratios


# ------------------------------------------------------- section 2: collapsed Gibbs vs lda, tomotopy
ALPHA, ETA = 0.1, 0.01


def point_estimates(n_doc_topic, n_topic_word, alpha, eta):
    """``theta = (n_dk + alpha) / (n_d + K alpha)``, ``phi = (n_kw + eta) / (n_k + M eta)``."""
    n_topics, n_words = n_topic_word.shape
    theta = (n_doc_topic + alpha) / (n_doc_topic.sum(axis=1, keepdims=True) + n_topics * alpha)
    phi = (n_topic_word + eta) / (n_topic_word.sum(axis=1, keepdims=True) + n_words * eta)
    return theta, phi


def heldout_perplexity(theta, phi, test: CoOccurrence) -> float:
    """``exp(-sum n_ij log (theta @ phi)_ij / sum n_ij)`` over the test counts."""
    coo = test.counts.tocoo()
    p = np.einsum("nk,kn->n", theta[coo.row], phi[:, coo.col])
    return float(np.exp(-(coo.data * np.log(p)).sum() / coo.data.sum()))


def run_ours(data: CoOccurrence, n_topics, sweeps, seed):
    """Sampler construction, initialisation and ``sweeps`` sweeps are timed."""
    with Stopwatch() as seconds:
        sampler = AspectGibbs(AspectModel(n_topics, alpha=ALPHA, eta=ETA), data)
        rng = np.random.default_rng(seed)
        state = sampler.init(rng)
        for _ in range(sweeps):
            state, _ = sampler.step(state, rng)
    theta, phi = point_estimates(state.n_doc_topic, state.n_word_topic.T, ALPHA, ETA)
    return seconds, theta, phi


def run_lda(data: CoOccurrence, n_topics, sweeps, seed):
    """``lda.LDA.fit`` is timed (it includes its token expansion and a log-likelihood every 10)."""
    import lda

    model = lda.LDA(n_topics=n_topics, n_iter=sweeps, alpha=ALPHA, eta=ETA, random_state=seed)
    with Stopwatch() as seconds:
        model.fit(data.counts)
    # lda's doc_topic_ and topic_word_ are (n_dk + alpha) and (n_kw + eta) row-normalised: the
    # same posterior-mean point estimates (checked in its source, lda/lda.py `_fit`).
    return seconds, model.doc_topic_, model.topic_word_


def tomotopy_model(data: CoOccurrence, n_topics, seed):
    import tomotopy as tp

    # A single float alpha is the symmetric per-topic concentration (help(tp.LDAModel)); the
    # default optim_interval=10 would re-estimate alpha, so it is switched off.
    model = tp.LDAModel(k=n_topics, alpha=ALPHA, eta=ETA, seed=seed)
    model.optim_interval = 0
    csr = data.counts
    labels = np.asarray(data.col_labels)
    for i in range(data.n_rows):
        lo, hi = csr.indptr[i], csr.indptr[i + 1]
        if hi > lo:
            model.add_doc(np.repeat(labels[csr.indices[lo:hi]], csr.data[lo:hi]).tolist())
    return model


def run_tomotopy(data: CoOccurrence, n_topics, sweeps, seed):
    """``train(sweeps, workers=1)`` is timed (its first call also initialises the assignments);
    building the model from word strings is not."""
    model = tomotopy_model(data, n_topics, seed)
    with Stopwatch() as seconds:
        model.train(sweeps, workers=1)
    if not (np.allclose(model.alpha, ALPHA) and np.isclose(model.eta, ETA)):
        raise RuntimeError(f"tomotopy changed its hyperparameters: {model.alpha}, {model.eta}")
    column = {word: j for j, word in enumerate(data.col_labels)}
    order = np.array([column[word] for word in model.used_vocabs])
    phi = np.zeros((n_topics, data.n_cols))
    for k in range(n_topics):
        phi[k, order] = model.get_topic_word_dist(k)
    if len(model.docs) != data.n_rows:
        raise RuntimeError("tomotopy dropped empty documents; rows no longer line up")
    theta = np.stack([doc.get_topic_dist() for doc in model.docs])
    # Check that tomotopy's distributions are the posterior means of its final state.
    n_doc_topic = np.stack([np.bincount(doc.topics, minlength=n_topics) for doc in model.docs])
    n_topic_word = np.zeros((n_topics, data.n_cols))
    for doc in model.docs:
        np.add.at(n_topic_word, (doc.topics, order[doc.words]), 1.0)
    check_theta, check_phi = point_estimates(n_doc_topic, n_topic_word, ALPHA, ETA)
    mismatch = max(relative_error(theta, check_theta), relative_error(phi, check_phi))
    return seconds, theta, phi, mismatch


def bench_gibbs(cfg: Config):
    logging.getLogger("lda").setLevel(logging.WARNING)
    data = load("reuters")
    sweeps = cfg.gibbs_sweeps
    tokens = data.total * sweeps
    # Compile (or load from cache) the numba sweep outside the timings.
    run_ours(load("toy"), 2, 2, 0)
    ours = "latentzoo AspectGibbs"
    runners = {
        ours: run_ours,
        "lda 3.0 (LDA.fit)": run_lda,
        "tomotopy (train, workers=1)": run_tomotopy,
    }
    train, test = data.split(0.1, random_state=0)
    header = ["K", "sampler", "seconds", "tokens/s", "tokens/s (CPU time)",
              "ours / peer (speed)", "ours / peer (CPU)", "held-out perplexity",
              "ours / peer (perplexity)"]  # fmt: skip
    rows, ratios, mismatch = [], [], 0.0
    for k in cfg.gibbs_topics:
        best = dict.fromkeys(runners, np.inf)
        best_cpu = dict.fromkeys(runners, np.inf)
        for _ in range(cfg.gibbs_repeats):  # interleaved, so load hits every sampler alike
            for name, fn in runners.items():
                seconds = fn(data, k, sweeps, 1)[0]
                best[name] = min(best[name], seconds.wall)
                best_cpu[name] = min(best_cpu[name], seconds.cpu)
        perplexities = {name: [] for name in runners}
        for seed in cfg.perplexity_seeds:
            for name, fn in runners.items():
                out = fn(train, k, sweeps, seed)
                perplexities[name].append(heldout_perplexity(out[1], out[2], test))
                if len(out) > 3:
                    mismatch = max(mismatch, out[3])
        rate = {name: tokens / seconds for name, seconds in best.items()}
        cpu_rate = {name: tokens / seconds for name, seconds in best_cpu.items()}
        mean_ppl = {name: float(np.mean(values)) for name, values in perplexities.items()}
        for name, values in perplexities.items():
            spread = f"{np.mean(values):.1f} ({min(values):.1f}-{max(values):.1f})"
            rows.append([k, name, best[name], f"{rate[name]:.3e}", f"{cpu_rate[name]:.3e}",
                         rate[ours] / rate[name], cpu_rate[ours] / cpu_rate[name], spread,
                         mean_ppl[ours] / mean_ppl[name]])  # fmt: skip
        for name in runners:
            if name == ours:
                continue
            is_tomotopy = name.startswith("tomotopy")
            target = f">= {GIBBS_TARGET}" if is_tomotopy else ""
            for what, by in (("", rate), (" (CPU time)", cpu_rate)):
                ratio = by[ours] / by[name]
                status = ("MET" if ratio >= GIBBS_TARGET else "NOT MET") if is_tomotopy else ""
                ratios.append(Ratio(f"Gibbs tokens/s{what}, K={k}, vs {name}", f"{by[ours]:.3e}",
                                    f"{by[name]:.3e}", ratio, target, status))  # fmt: skip
            ratios.append(
                Ratio(
                    f"Held-out perplexity, K={k}, vs {name} (lower is better)",
                    f"{mean_ppl[ours]:.1f}",
                    f"{mean_ppl[name]:.1f}",
                    mean_ppl[ours] / mean_ppl[name],
                )
            )
    topics = ", ".join(str(k) for k in cfg.gibbs_topics)
    lines = [
        f"## 2. Collapsed Gibbs tokens/s (Reuters, K = {topics}, {sweeps} sweeps, 1 thread)",
        "",
        f"Reuters: {data.n_rows} documents, {data.n_cols} words, {data.total} tokens; "
        f"alpha={ALPHA} (symmetric, per topic), eta={ETA}, no hyperparameter optimisation; best "
        f"of {cfg.gibbs_repeats} run(s) with seed 1, interleaved across the samplers. Held-out "
        f"perplexity: `data.split(0.1, random_state=0)` ({train.total} train / {test.total} test "
        f"tokens), trained on the train part, point estimates theta = (n_dk+alpha)/(n_d+K alpha), "
        f"phi = (n_kw+eta)/(n_k+M eta) of the final state; mean (min-max) over seeds "
        f"{list(cfg.perplexity_seeds)}.",
        "",
        *markdown_table(header, rows),
        "",
        f"Timed: ours = sampler construction + init + sweeps; lda = `fit` (token expansion, "
        f"init, sweeps, a log-likelihood every 10 sweeps); tomotopy = `train` (init + sweeps; "
        f"adding the documents as word strings is not timed). Check: tomotopy's "
        f"`get_topic_dist`/`get_topic_word_dist` equal the posterior means recomputed from its "
        f"assignments to relative error {mismatch:.1e}. Our sweep tests the uniform against "
        f"the token's current topic first: a token that keeps its topic (about 80% of them "
        f"once the chain has mixed in) costs one vectorised pass over the K weights and no "
        f"table update; only a move pays for the scan over the topics and the updates.",
    ]
    return lines, ratios


# --------------------------------------------------------------- section 3: ESS/s vs PyMC NUTS
def bench_ess(cfg: Config):
    from latentzoo.api import fit_pymc
    from latentzoo.inference.compare import summarize

    warnings.filterwarnings("ignore")
    logging.getLogger("pymc").setLevel(logging.ERROR)
    # The priors are explicit: the problem of earlier runs (the model's "map" defaults), the same
    # posterior for both samplers whatever defaults a method would otherwise take.
    model = AspectModel(cfg.ess_topics, alpha=1.1, eta=1.01)
    data, _ = model.simulate(
        0, n_docs=cfg.ess_docs, n_words=cfg.ess_words, doc_length=cfg.ess_length, separated=True
    )
    names = ["loglik", "p_dyad"]
    gibbs(model, data, chains=1, draws=2, tune=1, random_state=0, progressbar=False)  # compile
    runs = {
        "collapsed Gibbs": lambda: gibbs(
            model, data, chains=cfg.gibbs_chains, draws=cfg.gibbs_draws, tune=cfg.gibbs_tune,
            random_state=1, progressbar=False,
        ),
        "PyMC NUTS": lambda: fit_pymc(
            model, data, chains=cfg.pymc_chains, draws=cfg.pymc_draws, tune=cfg.pymc_tune,
            random_state=1, progressbar=False,
        ),
    }  # fmt: skip
    stats, worst, cpu = {}, {}, {}
    for name, run in runs.items():
        with Stopwatch() as watch:
            idata = run()
        cpu[name] = watch.cpu  # this thread's: all of Gibbs's work, none of NUTS's processes
        table = summarize(idata, names, name)
        seconds = float(idata.posterior.attrs["sampling_time"])
        ess = float(table["ess_bulk"].min())
        worst[name] = str(np.ravel(table["ess_bulk"].idxmin())[-1])  # (method, quantity)
        stats[name] = (ess, seconds, ess / seconds, float(table["r_hat"].max()))
    ratio = stats["collapsed Gibbs"][2] / stats["PyMC NUTS"][2]
    nuts_rate = stats["PyMC NUTS"][2]
    # Where Gibbs's time goes: the same sweeps alone, then the per-draw work alone (Dirichlet
    # draws of theta and phi, per-row log-likelihood, p_dyad, collapsed log joint), both timed
    # on the chains' own kind of state.
    setup = gibbs.prepare(model, data, chains=cfg.gibbs_chains, draws=cfg.gibbs_draws)
    sampler = setup.sampler
    n_sweeps = cfg.gibbs_chains * (cfg.gibbs_tune + cfg.gibbs_draws)
    n_draws = cfg.gibbs_chains * cfg.gibbs_draws
    sweeps_only, state = timed_sweeps(sampler, cfg.gibbs_chains, cfg.gibbs_tune + cfg.gibbs_draws)
    rng = np.random.default_rng(0)
    with Stopwatch() as draws_only:
        for _ in range(n_draws):
            setup.draw(state, rng)
            sampler.log_joint(state)
    gibbs_ess, gibbs_seconds = stats["collapsed Gibbs"][:2]
    per_sweep = sweeps_only.wall / n_sweeps
    # Bounds on Gibbs / NUTS for a chain of one sweep per kept draw at this sweep cost:
    # free per-draw work with the measured autocorrelation (ESS as measured), and free per-draw
    # work with independent draws (ESS = number of draws, what no positively correlated chain
    # exceeds).
    bound_free = gibbs_ess / sweeps_only.wall / nuts_rate
    bound_independent = n_draws / sweeps_only.wall / nuts_rate
    needed_sweep = gibbs_ess / (ESS_TARGET * nuts_rate) / n_sweeps
    where = [
        ["`gibbs` call (sampling and `InferenceData`)", f"{gibbs_seconds:.3g} s sampling",
         f"{cpu['collapsed Gibbs']:.3g} s"],
        [f"{n_sweeps} sweeps alone", f"{sweeps_only.wall:.3g} s "
         f"({1e6 * per_sweep:.3g} us per sweep, "
         f"{1e9 * per_sweep / data.total:.3g} ns per token)",
         f"{sweeps_only.cpu:.3g} s ({1e6 * sweeps_only.cpu / n_sweeps:.3g} us per sweep)"],
        [f"{n_draws} draws' work alone (theta, phi, scores, log joint)",
         f"{draws_only.wall:.3g} s ({1e6 * draws_only.wall / n_draws:.3g} us per draw)",
         f"{draws_only.cpu:.3g} s ({1e6 * draws_only.cpu / n_draws:.3g} us per draw)"],
        ["sweeps' share of Gibbs's time", f"{100 * sweeps_only.wall / gibbs_seconds:.0f}%",
         f"{100 * sweeps_only.cpu / cpu['collapsed Gibbs']:.0f}%"],
        ["Gibbs ESS per kept draw (min quantity)",
         f"{gibbs_ess / n_draws:.3g} (integrated autocorrelation time "
         f"{n_draws / gibbs_ess:.3g})", ""],
        ["bound 1: per-draw work free, measured autocorrelation", f"{bound_free:.3g}x", ""],
        ["bound 2: per-draw work free, independent draws (ESS = draws)",
         f"{bound_independent:.3g}x", ""],
        [f"sweep time {ESS_TARGET:.0f}x needs at the measured ESS per draw",
         f"{1e6 * needed_sweep:.3g} us ({1e9 * needed_sweep / data.total:.3g} ns per "
         "token), with free per-draw work", ""],
    ]  # fmt: skip
    lines = [
        "## 3. Fast sampler vs PyMC NUTS (ESS/s)",
        "",
        f"`AspectModel({cfg.ess_topics}, alpha=1.1, eta=1.01).simulate(0, "
        f"n_docs={cfg.ess_docs}, n_words={cfg.ess_words}, doc_length={cfg.ess_length}, "
        f"separated=True)` ({data.total} tokens, {data.nnz} non-zeros). Gibbs: "
        f"{cfg.gibbs_chains} chains x {cfg.gibbs_draws} draws (tune {cfg.gibbs_tune}); NUTS: "
        f"{cfg.pymc_chains} chains x {cfg.pymc_draws} draws (tune {cfg.pymc_tune}, "
        f"{min(cfg.pymc_chains, 2)} processes). ESS = minimum bulk ESS over `loglik` and the "
        "`p_dyad` components; seconds = `posterior.attrs['sampling_time']` (wall time, tuning "
        "included, compilation excluded).",
        "",
    ]
    header = ["sampler", "min bulk ESS", "(of)", "sampling seconds", "ESS/s", "max R-hat"]
    rows = [[name, v[0], worst[name], v[1], v[2], v[3]] for name, v in stats.items()]
    lines += markdown_table(header, rows)
    lines += [
        "",
        f"**Gibbs / NUTS ESS/s = {ratio:.3g}x; target >= {ESS_TARGET:.0f}x -> "
        f"{'MET' if ratio >= ESS_TARGET else 'NOT MET'}.**",
        "",
        "Where Gibbs's time goes and what bounds the ratio (bounds from wall seconds, as the "
        "ratio; this run):",
        "",
        *markdown_table(["quantity", "wall", "CPU (this thread)"], where),
        "",
        "Bound 2 is the most a chain of one sweep per kept draw can reach at this sweep cost "
        "against this NUTS run; the target is out of reach when it is below "
        f"{ESS_TARGET:.0f}x. Timings are wall time like `sampling_time`, so load from other "
        "processes lowers every Gibbs figure here (and NUTS's ESS/s) alike.",
    ]
    ratios = [
        Ratio(
            "ESS/s collapsed Gibbs vs PyMC NUTS",
            f"{stats['collapsed Gibbs'][2]:.3g}",
            f"{stats['PyMC NUTS'][2]:.3g}",
            ratio,
            f">= {ESS_TARGET:.0f}",
            "MET" if ratio >= ESS_TARGET else "NOT MET",
        ),
        Ratio(
            "  bound: per-draw work free (measured ESS)",
            f"{gibbs_ess / sweeps_only.wall:.3g}",
            f"{nuts_rate:.3g}",
            bound_free,
        ),
        Ratio(
            "  bound: per-draw work free, independent draws",
            f"{n_draws / sweeps_only.wall:.3g}",
            f"{nuts_rate:.3g}",
            bound_independent,
        ),
    ]
    return lines, ratios


# ------------------------------------------------------------------------------------- driver
def finish_report(header, sections, ratios, start, targets) -> None:
    """Print the summary of ratios and write the whole report to each target path (None: skip)."""
    elapsed = time.perf_counter() - start
    summary = [
        "## Summary: ratios against peers and targets",
        "",
        *markdown_table(
            ["comparison", "ours", "peer / target", "ratio", "target", "status"],
            [[r.comparison, r.ours, r.peer, r.ratio, r.target, r.status] for r in ratios],
        ),
        "",
        f"Total run time: {elapsed:.0f} s; load average at the end: {load_average()} "
        f"(numba threading layer: {_threading_layer()}).",
    ]
    print("\n".join(summary) + "\n", flush=True)
    write_report(header + summary + [""] + [line for lines in sections for line in [*lines, ""]],
                 targets)  # fmt: skip


def one_thread_machine_rows() -> list[tuple[str, str]]:
    """The machine table of a benchmark whose fits run on one numba thread."""
    import numba

    return [
        ("CPU", f"{cpu_model()} ({os.cpu_count()} logical CPUs)"),
        ("numba threads used", "1 (`n_threads=1`)"),
        ("load average (1, 5, 15 min) at start", load_average()),
        (
            "versions",
            f"python {platform.python_version()}, numpy {np.__version__}, numba "
            f"{numba.__version__}",
        ),
    ]


def finish_fit_report(header, body, start: float, targets) -> None:
    """End a per-fit report: the run time and load line, printed, then :func:`write_report`."""
    body = [
        *body,
        f"Total run time: {time.perf_counter() - start:.0f} s; load average at the end: "
        f"{load_average()}.",
    ]
    emit(body)
    write_report(header + body, targets)


def write_report(lines, targets) -> None:
    """Write the report's markdown ``lines`` to each target path that is not None."""
    for target in targets:
        if target is None:
            continue
        out = Path(target)
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text("\n".join(lines) + "\n")
        print(f"written {out}", file=sys.stderr)


def parse_run_arguments(argv, description: str, out: str, results: str, quick_help: str):
    """The command line of every benchmark script: ``--quick``, ``--out`` and ``--results``.

    Returns the parsed arguments, the argument list (recorded in the report's header) and the
    path of the repository copy of the report (None for ``--quick``, whose smaller problems must
    not replace the full run's numbers).
    """
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--quick", action="store_true", help=quick_help)
    parser.add_argument("--out", default=out, help="markdown output (default: %(default)s)")
    parser.add_argument(
        "--results",
        default=None,
        help=f"second markdown copy, kept in the repository (default: {results} for a full run, "
        "none for --quick)",
    )
    argv = sys.argv[1:] if argv is None else list(argv)
    args = parser.parse_args(argv)
    return args, argv, args.results or (None if args.quick else results)


def emit(lines) -> None:
    """Print a section of the report as it is produced."""
    print("\n".join(lines) + "\n", flush=True)


def report_header(title: str, argv, machine_rows, busy_note: str = "") -> list[str]:
    """The report's first lines: title, the run (date, command, commit), the machine, and a warning
    when the machine was busy before the run started (``busy_note`` says what that distorts)."""
    header = [
        title,
        "",
        *markdown_table(["run", ""], run_info(argv)),
        "",
        *markdown_table(["machine", ""], machine_rows),
        "",
    ]
    if hasattr(os, "getloadavg") and os.getloadavg()[0] > 0.5:
        header += [
            f"**Warning: the machine is busy (load average {load_average()} before this run "
            f"started).** Wall-clock figures are then pessimistic{busy_note}; the CPU-time columns "
            "are less affected.",
            "",
        ]
    return header


def run_suite(argv, *, description, out, results, quick_help, title, benches, config,
              machine_rows, busy_note="") -> int:  # fmt: skip
    """The one driver of every benchmark script: parse the command line, run ``benches`` (each
    ``bench(cfg) -> (lines, ratios)``) on ``config()`` or ``config.quick()``, print each section as
    it is produced, then the summary, and write the report (``title`` gets the run kind)."""
    args, argv, results = parse_run_arguments(argv, description, out, results, quick_help)
    cfg = config.quick() if args.quick else config()
    start = time.perf_counter()
    header = report_header(
        f"{title} ({'quick' if args.quick else 'full'} run)", argv, machine_rows, busy_note
    )
    emit(header)
    sections, ratios = [], []
    for bench in benches:
        lines, more = bench(cfg)
        emit(lines)
        sections.append(lines)
        ratios += more
    finish_report(header, sections, ratios, start, (args.out, results))
    return 0


def main(argv=None) -> int:
    return run_suite(
        argv, description=__doc__.splitlines()[0], out="report/benchmarks.md", results=RESULTS,
        quick_help="about one minute, smaller problems",
        title="# latentzoo aspect-model benchmarks", benches=(bench_em, bench_gibbs, bench_ess),
        config=Config, machine_rows=machine_info(),
        busy_note=", the 2-thread ones most (they need both cores)",
    )  # fmt: skip


if __name__ == "__main__":
    raise SystemExit(main())
