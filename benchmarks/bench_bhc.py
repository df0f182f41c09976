"""Benchmarks of Bayesian hierarchical clustering (BHC, RBHC, EMBHC), reported as ratios.

Run from the repository root (the package installed, e.g. ``make install-test``)::

    python benchmarks/bench_bhc.py            # full run, a few minutes on 2 cores
    python benchmarks/bench_bhc.py --quick    # well under a minute: smaller problems
    python benchmarks/bench_bhc.py --out other.md

The tables are printed and written as markdown to ``report/benchmarks_bhc.md`` (not tracked) and,
for a full run, to ``benchmarks/RESULTS_bhc.md`` (tracked), headed with the date, the machine, the
commit and the exact command. Sections (issue 11's benchmark acceptance point):

1. **BHC on all 1797 binarised digits** (Beta-Bernoulli with the data-mean prior
   ``Beta(2 m_d, 2 (1 - m_d))``, ``alpha = 1``): seconds against the target of 10 s, dendrogram
   purity, and scipy's average linkage (Euclidean) on the same data in time and purity.
2. **RBHC and EMBHC on 100,000 synthetic binary items** (a mixture of 10 Bernoulli clusters over 64
   features): seconds against the target of 60 s and purity; on a subset that exact BHC also runs
   (5000 items), the purity of RBHC, EMBHC, exact BHC and average linkage side by side.
3. **The installable Python BHC peers** on PyPI, ``bhc`` and ``bhclustering``, each installed with
   pip into a throwaway virtual environment (``BHC_PEERS_VENV``, default ``/tmp/bhcpeers``), which
   the benchmark uses but does not create::

       python3 -m venv /tmp/bhcpeers
       /tmp/bhcpeers/bin/pip install bhc bhclustering matplotlib numba seaborn pandas

   (BHClustering imports the last four without declaring them). The ones that install and run
   are timed on binarised digits at sizes they finish, with the same model (their
   Dirichlet-multinomial components, ``alpha`` shared with the Dirichlet) in latentzoo.

Timings are the best of a few rounds after a warm-up call (numba compilation excluded; the cold
first call is reported separately for BHC on digits). Every random draw is seeded.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import scipy
from scipy.cluster.hierarchy import linkage

sys.path.insert(0, str(Path(__file__).resolve().parent))
# The shared helpers of the aspect-model benchmark: run header, markdown tables, the summary row
# and the report writer.
from bench_aspect import (  # noqa: E402
    Ratio,
    Stopwatch,
    machine_rows,
    markdown_table,
    run_suite,
)
from run_config import QuickConfig, sized  # noqa: E402

from latentzoo.data import load, load_labels  # noqa: E402
from latentzoo.inference.bhc import bhc, embhc, rbhc  # noqa: E402
from latentzoo.models.bhc import BayesianHierarchicalClustering, dendrogram_purity  # noqa: E402
from latentzoo.models.conjugate import BetaBernoulli, DirichletMultinomial  # noqa: E402

RESULTS = Path(__file__).resolve().parent / "RESULTS_bhc.md"  # tracked copy (full run)
DIGITS_TARGET = 10.0  # seconds, BHC on all 1797 digits (issue 11)
LARGE_TARGET = 60.0  # seconds, RBHC / EMBHC on 100,000 items (issue 11)
PEERS_VENV = Path(os.environ.get("BHC_PEERS_VENV", "/tmp/bhcpeers"))
PEERS = ("bhc", "bhclustering")  # PyPI names


@dataclass
class Config(QuickConfig):
    """Problem sizes and repeats of one run (full or ``--quick``)."""

    digits_rounds: int = sized(3, quick=1)
    large_items: int = sized(100_000, quick=20_000)
    large_features: int = 64
    large_clusters: int = 10
    large_m: int = 100  # subsample size of RBHC / EMBHC
    large_rounds: int = sized(2, quick=1)
    # exact BHC, RBHC, EMBHC and average linkage on the same items
    subset_items: int = sized(5000, quick=1000)
    peer_sizes: tuple = sized((25, 50, 75), quick=(15, 25))
    # seconds per peer run; larger sizes are skipped after a timeout
    peer_timeout: float = sized(300.0, quick=60.0)
    seed: int = 0


# ----------------------------------------------------------------------------------- helpers
def machine_info() -> list[tuple[str, str]]:
    import sklearn

    return machine_rows(f"scipy {scipy.__version__}, scikit-learn {sklearn.__version__}")


def best_of(fn, rounds: int):
    """(result of the last call, best wall seconds, best CPU seconds) over ``rounds`` timed calls."""
    best_wall = best_cpu = np.inf
    out = None
    for _ in range(rounds):
        with Stopwatch() as sw:
            out = fn()
        best_wall, best_cpu = min(best_wall, sw.wall), min(best_cpu, sw.cpu)
    return out, best_wall, best_cpu


def data_mean_beta(X, kappa: float = 2.0) -> BetaBernoulli:
    """The thesis' data-mean Beta prior: ``a_d = kappa m_d``, ``b_d = kappa (1 - m_d)``."""
    m = (X.sum(axis=0) + 0.5) / (X.shape[0] + 1)
    return BetaBernoulli(a=kappa * m, b=kappa * (1 - m))


def status(seconds: float, target: float) -> str:
    return "met" if seconds <= target else "MISSED"


def bernoulli_mixture(n, d, k, seed):
    """``n`` binary items from ``k`` Bernoulli clusters (probabilities ~ Beta(0.5, 0.5)), labels."""
    rng = np.random.default_rng(seed)
    probs = rng.beta(0.5, 0.5, size=(k, d))
    labels = rng.integers(k, size=n)
    X = (rng.random((n, d)) < probs[labels]).astype(np.float64)
    return X, labels


# ------------------------------------------------------------------ section 1: digits
def bench_digits(cfg: Config):
    X = np.asarray(load("digits").X, dtype=np.float64)
    y = load_labels("digits")
    model = BayesianHierarchicalClustering(alpha=1.0, component=data_mean_beta(X))
    with Stopwatch() as cold:
        bhc(model, X)  # first call: includes numba compilation (or loading its cache)
    tree, wall, cpu = best_of(lambda: bhc(model, X), cfg.digits_rounds)
    Z, avg_wall, avg_cpu = best_of(lambda: linkage(X, "average"), cfg.digits_rounds)
    flat = BayesianHierarchicalClustering(alpha=1.0)  # Beta(1, 1)
    tree_flat, flat_wall, flat_cpu = best_of(lambda: bhc(flat, X), 1)
    purity = tree.purity(y)
    rows = [
        ["BHC, data-mean Beta(2 m, 2 (1 - m))", wall, cpu, purity, int(tree.cut().max() + 1)],
        [
            "BHC, Beta(1, 1)",
            flat_wall,
            flat_cpu,
            tree_flat.purity(y),
            int(tree_flat.cut().max() + 1),
        ],
        ["scipy average linkage (Euclidean)", avg_wall, avg_cpu, dendrogram_purity(Z, y), "n/a"],
    ]
    lines = [
        f"## 1. BHC on all {X.shape[0]} binarised digits ({X.shape[1]} pixels)",
        "",
        *markdown_table(["method", "wall s", "CPU s", "purity", "clusters (r < 0.5 cut)"], rows),
        "",
        f"Best of {cfg.digits_rounds} after a warm-up; the first (cold) call took {cold.wall:.2f} s "
        f"(numba compilation or cache loading included). Rescans of the best-partner heap: "
        f"{tree.info.get('rescans', 'n/a')}. Target: under {DIGITS_TARGET:g} s "
        f"({status(wall, DIGITS_TARGET)}).",
    ]
    ratios = [
        Ratio(
            "BHC, 1797 digits: seconds vs target",
            f"{wall:.2f} s",
            f"{DIGITS_TARGET:g} s",
            wall / DIGITS_TARGET,
            "<= 1",
            status(wall, DIGITS_TARGET),
        ),
        Ratio(
            "BHC vs scipy average linkage, 1797 digits: seconds",
            f"{wall:.2f} s",
            f"{avg_wall:.3f} s",
            wall / avg_wall,
        ),
        Ratio(
            "BHC vs scipy average linkage, 1797 digits: purity",
            f"{purity:.3f}",
            f"{dendrogram_purity(Z, y):.3f}",
            purity / dendrogram_purity(Z, y),
        ),
    ]
    return lines, ratios


# ------------------------------------------------------- section 2: randomised BHC, large n
def bench_large(cfg: Config):
    X, y = bernoulli_mixture(cfg.large_items, cfg.large_features, cfg.large_clusters, cfg.seed)
    model = BayesianHierarchicalClustering(alpha=1.0, component=data_mean_beta(X))
    m = cfg.large_m
    methods = {
        f"RBHC (m={m})": lambda data: rbhc(model, data, m=m, random_state=cfg.seed),
        f"EMBHC (m={m}, 3 EM steps)": lambda data: embhc(model, data, m=m, random_state=cfg.seed),
    }
    rbhc(model, X[:500], m=m, random_state=0)  # warm-up (compilation)
    embhc(model, X[:500], m=m, random_state=0)
    rows, ratios = [], []
    for name, run in methods.items():
        tree, wall, cpu = best_of(lambda run=run: run(X), cfg.large_rounds)
        purity = tree.purity(y)
        rows.append([name, wall, cpu, purity, tree.n_leaves])
        ratios.append(
            Ratio(
                f"{name}, {cfg.large_items:,} items: seconds vs target",
                f"{wall:.1f} s",
                f"{LARGE_TARGET:g} s",
                wall / LARGE_TARGET,
                "<= 1",
                status(wall, LARGE_TARGET),
            )
        )
    # the same methods, exact BHC and average linkage on a subset all of them run
    sub = np.sort(
        np.random.default_rng(cfg.seed + 1).choice(len(y), cfg.subset_items, replace=False)
    )
    Xs, ys = X[sub], y[sub]
    sub_model = BayesianHierarchicalClustering(alpha=1.0, component=data_mean_beta(Xs))
    exact, exact_wall, exact_cpu = best_of(lambda: bhc(sub_model, Xs), 1)
    sub_rows = [["exact BHC", exact_wall, exact_cpu, exact.purity(ys), 1.0]]
    for name, fn in (
        (f"RBHC (m={m})", lambda: rbhc(sub_model, Xs, m=m, random_state=cfg.seed)),
        (f"EMBHC (m={m}, 3 EM steps)", lambda: embhc(sub_model, Xs, m=m, random_state=cfg.seed)),
    ):
        tree, wall, cpu = best_of(fn, 1)
        p = tree.purity(ys)
        sub_rows.append([name, wall, cpu, p, p / exact.purity(ys)])
        ratios.append(
            Ratio(
                f"{name} vs exact BHC, {cfg.subset_items} items: purity",
                f"{p:.3f}",
                f"{exact.purity(ys):.3f}",
                p / exact.purity(ys),
            )
        )
    Z, avg_wall, avg_cpu = best_of(lambda: linkage(Xs, "average"), 1)
    avg_p = dendrogram_purity(Z, ys)
    sub_rows.append(["scipy average linkage", avg_wall, avg_cpu, avg_p, avg_p / exact.purity(ys)])
    lines = [
        f"## 2. RBHC and EMBHC on {cfg.large_items:,} synthetic binary items",
        "",
        f"A mixture of {cfg.large_clusters} Bernoulli clusters over {cfg.large_features} features "
        "(feature probabilities drawn from Beta(0.5, 0.5), cluster of each item uniform); "
        "data-mean Beta prior, alpha = 1. Purity against the generating clusters. Best of "
        f"{cfg.large_rounds} after a warm-up on 500 items.",
        "",
        *markdown_table(["method", "wall s", "CPU s", "purity", "leaves"], rows),
        "",
        f"The same methods on a random {cfg.subset_items} of these items, which exact BHC also runs "
        "(one timed call each):",
        "",
        *markdown_table(["method", "wall s", "CPU s", "purity", "purity / exact BHC"], sub_rows),
        "",
        "Exact BHC on all "
        f"{cfg.large_items:,} items is not run: it is O(n^2) pair scores (about "
        f"{cfg.large_items**2 / 2 / cfg.subset_items**2 * 2:.0f} times the {cfg.subset_items}-item "
        "run), and scipy's average linkage would need the "
        f"{cfg.large_items * (cfg.large_items - 1) / 2 * 8 / 2**30:.0f} GiB condensed distance matrix.",
    ]
    return lines, ratios


# ------------------------------------------------------------------- section 3: PyPI peers
PEER_DRIVER = textwrap.dedent(
    """
    import json, sys, time
    import numpy as np
    X = np.load(sys.argv[1], allow_pickle=False)
    alpha = float(sys.argv[2])
    from BHClustering import functions as F
    found = []  # r_k of each chosen merge; -10000 is the peer's "no pair had a finite r_k"
    search = F.find_max_rk
    def recording(*args):
        out = search(*args)
        found.append(float(out[2]))
        return out
    F.find_max_rk = recording
    t = time.perf_counter()
    root, _ = F.bhc(X, alpha=alpha)
    seconds = time.perf_counter() - t
    n = X.shape[0]
    children = [[-1, -1] for _ in range(n - 1)]
    stack = [root]
    while stack:
        node = stack.pop()
        if node.l is not None:
            children[node.index - n] = [int(node.l.index), int(node.r.index)]
            stack += [node.l, node.r]
    print(json.dumps({"seconds": seconds, "children": children, "r": found}))
    """
)


def pip_install_report(name: str) -> str:
    """What ``pip show`` / the installed files of ``name`` say in the peers' venv."""
    pip = PEERS_VENV / "bin" / "pip"
    out = subprocess.run([str(pip), "show", "-f", name], capture_output=True, text=True)
    if out.returncode != 0:
        return "not installed"
    files = [
        line.strip()
        for line in out.stdout.splitlines()
        if line.startswith("  ") and not line.strip().startswith(("..", "__pycache__"))
    ]
    modules = [f for f in files if f.endswith(".py") or f.endswith(".so")]
    version = next(
        (
            line.split(":", 1)[1].strip()
            for line in out.stdout.splitlines()
            if line.startswith("Version")
        ),
        "?",
    )
    return f"{version}; {len(modules)} Python modules installed" + (
        f" ({', '.join(modules[:4])})" if modules else ""
    )


def bench_peers(cfg: Config):
    python = PEERS_VENV / "bin" / "python"
    lines = ["## 3. Python BHC peers on PyPI", ""]
    ratios: list[Ratio] = []
    if not python.exists():
        lines += [
            f"No virtual environment at `{PEERS_VENV}`: create it with "
            f"`python3 -m venv {PEERS_VENV} && {PEERS_VENV}/bin/pip install bhc bhclustering "
            "matplotlib numba seaborn pandas` (BHClustering imports the last four without "
            "declaring them)."
        ]
        return lines, ratios
    lines += markdown_table(
        ["PyPI name", "pip install", "installed"],
        [
            [
                name,
                "ok" if pip_install_report(name) != "not installed" else "failed",
                pip_install_report(name),
            ]
            for name in PEERS
        ],  # fmt: skip
    )
    lines.append("")
    X = np.asarray(load("digits").X, dtype=np.float64)
    y = load_labels("digits")
    alpha = 0.5  # BHClustering's default; its Dirichlet prior is alpha on every pixel too
    model = BayesianHierarchicalClustering(alpha=alpha, component=DirichletMultinomial(eta=alpha))
    rng = np.random.default_rng(cfg.seed)
    order = rng.permutation(len(y))
    rows = []
    tmp = Path(os.environ.get("TMPDIR", "/tmp")) / f"bench_bhc_peer_{os.getpid()}.npy"
    driver = Path(os.environ.get("TMPDIR", "/tmp")) / f"bench_bhc_peer_{os.getpid()}.py"
    driver.write_text(PEER_DRIVER)
    timed_out = False
    try:
        for n in cfg.peer_sizes:
            idx = np.sort(order[:n])
            Xn, yn = X[idx], y[idx]
            ours, our_wall, _ = best_of(lambda Xn=Xn: bhc(model, Xn), 3)
            row = [n, our_wall, ours.purity(yn)]
            if timed_out:
                rows.append([*row, "skipped", "", "", "", "", "", ""])
                continue
            np.save(tmp, Xn)
            try:
                out = subprocess.run(
                    [str(python), str(driver), str(tmp), str(alpha)],
                    capture_output=True, text=True, timeout=cfg.peer_timeout,
                )  # fmt: skip
            except subprocess.TimeoutExpired:
                timed_out = True
                rows.append([*row, f"> {cfg.peer_timeout:.0f} (timeout)", "", "", "", "", "", ""])
                continue
            if out.returncode != 0:
                rows.append(
                    [
                        *row,
                        "error: " + out.stderr.strip().splitlines()[-1][:80],
                        "",
                        "",
                        "",
                        "",
                        "",
                        "",
                    ]
                )
                continue
            result = json.loads(out.stdout.strip().splitlines()[-1])
            children = np.array(result["children"], dtype=np.int64)
            peer_purity = dendrogram_purity(
                np.column_stack([children, np.arange(1.0, n), np.zeros(n - 1)]), yn
            )
            # merges equal to ours before the first difference, and the evidence of the peer's tree
            # under the same model (latentzoo's recursion): which tree the greedy search did better on
            agree = np.all(np.sort(children, axis=1) == np.sort(ours.children, axis=1), axis=1)
            first = int(np.argmin(agree)) if not agree.all() else n - 1
            peer_ev = model.evaluate(children, Xn).log_marginal
            invalid = int(sum(1 for r in result["r"] if not r > -10000.0))
            saturated = [k for k, r in enumerate(result["r"]) if r == 1.0]
            saturated = f"{len(saturated)}, first at merge {saturated[0]}" if saturated else "0"
            rows.append(
                [*row, result["seconds"], peer_purity, result["seconds"] / our_wall,
                 f"{first} of {n - 1}", saturated, invalid, peer_ev - ours.log_marginal]
            )  # fmt: skip
            ratios.append(
                Ratio(
                    f"BHClustering vs ours, {n} digits: seconds",
                    f"{our_wall * 1e3:.1f} ms",
                    f"{result['seconds']:.2f} s",
                    result["seconds"] / our_wall,
                )
            )
    finally:
        tmp.unlink(missing_ok=True)
        driver.unlink(missing_ok=True)
    lines += [
        "`bhclustering` (BHClustering 0.0.3) against latentzoo on random subsets of the binarised "
        f"digits, the same model: Dirichlet-multinomial clusters with a symmetric Dirichlet({alpha:g}) "
        f"and DP concentration alpha = {alpha:g} (BHClustering uses one alpha for both), so the "
        "two should build the same tree. Ours: best of 3 after a warm-up; the peer: one run in its "
        f"own process (timeout {cfg.peer_timeout:.0f} s; larger sizes skipped after a timeout).",
        "",
        *markdown_table(
            [
                "n",
                "ours s",
                "ours purity",
                "BHClustering s",
                "BHClustering purity",
                "time ratio",
                "equal merges before the first difference",
                "peer merges with r_k == 1.0 (count, first)",
                "peer merges without a finite r_k",
                "log p(D|T): peer tree - ours",
            ],
            rows,
        ),  # fmt: skip
        "",
        "Why the trees differ although the model is the same: BHClustering ranks pairs by ``r_k`` "
        "itself, computed from probabilities (``exp`` of the log marginals). With this model most "
        "merges have ``r_k`` within 1e-6 of 1, and the two trees agree merge for merge until "
        "the peer's chosen ``r_k`` first rounds to exactly 1.0 in float64 (the merge index in column "
        "*r_k == 1.0* equals the count of equal merges): there its candidate pairs tie at 1.0 and it "
        "takes the first in its list order. latentzoo ranks by the log-odds ``log pi_k p(D_k|H_1) - "
        "log (1 - pi_k) p(D_i|T_i) p(D_j|T_j)``, which does not saturate, so its tree is the exact "
        "greedy one (tested merge by merge in tests/inference/test_bhc.py). Near the root the "
        "peer's probabilities underflow to 0 (``r_k = 0/0``: column *without a finite r_k*) and it "
        "merges whatever pair its search starts with; ``special.gamma(n)`` in its merge prior "
        "overflows beyond n = 171. The evidence column scores the peer's tree with latentzoo's "
        "recursion: the greedy tree is not the tree of highest evidence, and a tree built with ties "
        "broken otherwise can score slightly higher. Its run time grows about like n^3 (each merge "
        "search scores all pairs in Python loops, and every candidate pair recomputes "
        "``p(D_k|T_k)`` recursively over its subtree), hence the growing time ratio. The purity of both is low: a Dirichlet-multinomial over 64 pixels with "
        "alpha = 0.5 merges nearly everything with certainty (the peer's only component; "
        "latentzoo's data-mean Beta-Bernoulli of section 1 is the model for these data).",
        "",
    ]
    return lines, ratios


def main(argv=None) -> int:
    return run_suite(
        argv, description=__doc__.splitlines()[0], out="report/benchmarks_bhc.md", results=RESULTS,
        quick_help="well under a minute, smaller problems",
        title="# latentzoo BHC benchmarks: BHC, RBHC, EMBHC",
        benches=(bench_digits, bench_large, bench_peers), config=Config,
        machine_rows=machine_info(),
    )  # fmt: skip


if __name__ == "__main__":
    raise SystemExit(main())
