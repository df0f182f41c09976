"""Benchmark of unsupervised texture segmentation (issue 28).

Run from the repository root (the package installed)::

    python benchmarks/bench_texture.py            # full run, about 3-5 minutes on 2 busy cores
    python benchmarks/bench_texture.py --quick    # one mosaic per section, 256 x 256 only
    python benchmarks/bench_texture.py --out other.md

Sections:

1. **512 x 512, 5 textures, features included**: multiscale one-sided clustering (target under
   10 s) and pairwise clustering, naive and TAP (target under 30 s), wall-clock and CPU seconds,
   pixel error after optimal matching; and the share of pixels the TAP correction changes
   (the pairwise labels against the TAP labels, after matching; the seed reports 6-8 %).
2. **Multiscale against single-level optimisation on 256 x 256** (5 textures): seconds of the
   optimisation alone (features computed once, shared) and the log-likelihoods reached; the
   issue asks for a speed factor of at least 10 with likelihoods within 1%.

The table is printed and, for a full run, written to ``benchmarks/RESULTS_texture.md``, headed
with the date, the commit, the machine's load and the command. Every random draw is seeded. The
machine is shared: wall-clock figures are pessimistic, the CPU-time columns less so.
"""

from __future__ import annotations

import argparse
import os
import platform
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

from latentzoo.data import load
from latentzoo.data.texture_features import TextureFeatures
from latentzoo.inference.texture_segmentation import (
    matched_error,
    segment_one_sided,
    segment_pairwise,
)

RESULTS = Path(__file__).resolve().parent / "RESULTS_texture.md"


def timed(function, *args, **kwargs):
    """``function(*args, **kwargs)`` with its wall-clock and CPU seconds."""
    wall, cpu = time.perf_counter(), time.process_time()
    result = function(*args, **kwargs)
    return result, time.perf_counter() - wall, time.process_time() - cpu


def end_to_end(size: int, seed: int) -> list[str]:
    """Section 1: every segmenter on one mosaic, the features computed inside each run."""
    mosaic = load("texture-mosaic", n_textures=5, size=size, random_state=seed)
    rows, labels = [], {}
    runs = [
        ("one-sided, multiscale", segment_one_sided, {}, 10.0),
        ("pairwise", segment_pairwise, {}, 30.0),
        ("pairwise, TAP", segment_pairwise, {"tap": True}, 30.0),
    ]
    for name, segment, options, target in runs:
        result, wall, cpu = timed(segment, mosaic.image, 5, random_state=0, **options)
        verdict = "yes" if wall < target else "no"
        labels[name] = result.labels
        rows.append(
            f"| {size} | {seed} | {name} | {wall:.2f} | {cpu:.2f} | {target:.0f} | {verdict} | "
            f"{result.seconds['features']:.2f} | {result.error(mosaic.labels):.1%} |"
        )
        print(rows[-1], flush=True)
    changed = matched_error(labels["pairwise, TAP"], labels["pairwise"])
    return rows, changed


def speed_factor(size: int, seed: int) -> tuple[str, float]:
    """Section 2: multiscale against single-level on the same features."""
    mosaic = load("texture-mosaic", n_textures=5, size=size, random_state=seed)
    features = TextureFeatures(mosaic.image)
    multi, multi_wall, multi_cpu = timed(
        segment_one_sided, None, 5, random_state=0, features=features
    )
    single, single_wall, single_cpu = timed(
        segment_one_sided, None, 5, multiscale=False, random_state=0, features=features
    )
    gap = (multi.objective - single.objective) / abs(single.objective)
    factor = single_cpu / multi_cpu
    row = (
        f"| {size} | {seed} | {multi_wall:.2f} | {multi_cpu:.2f} | {single_wall:.2f} | "
        f"{single_cpu:.2f} | {factor:.1f} | {gap:+.4%} | {multi.error(mosaic.labels):.1%} | "
        f"{single.error(mosaic.labels):.1%} |"
    )
    print(row, flush=True)
    return row, factor


def header(command: str, title: str = "Texture segmentation benchmark (issue 28)") -> list[str]:
    """The markdown heading of a results file: title, date, commit, machine load, command."""
    commit = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, check=False
    ).stdout.strip()
    load_average = ", ".join(f"{x:.1f}" for x in os.getloadavg())
    return [
        f"# {title}",
        "",
        f"Run {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, commit {commit}, "
        f"{platform.processor() or platform.machine()}, {os.cpu_count()} cores, load average "
        f"{load_average} (shared machine: wall-clock seconds are pessimistic). Command: "
        f"`{command}`.",
        "",
    ]


def emit(lines: list[str], out: Path | None) -> None:
    """Print the markdown ``lines`` and write them to ``out`` (none for a quick run)."""
    text = "\n".join(lines)
    print(text)
    if out is not None:
        out.write_text(text)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="one 256 x 256 mosaic per section")
    parser.add_argument("--out", type=Path, help="markdown output (default: RESULTS_texture.md)")
    args = parser.parse_args(argv)
    seeds = [0] if args.quick else [0, 1, 2]
    size = 256 if args.quick else 512
    lines = header("python benchmarks/bench_texture.py" + (" --quick" if args.quick else ""))
    lines += [
        f"## 1. {size} x {size}, 5 textures, features included",
        "",
        "| size | mosaic | segmenter | wall s | CPU s | target s | met | features s | error |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    changes = []
    for seed in seeds[:1] if args.quick else seeds[:2]:
        rows, changed = end_to_end(size, seed)
        lines += rows
        changes.append(f"{changed:.1%} (mosaic {seed})")
    lines += ["", "Pixels the TAP correction changes: " + ", ".join(changes) + "."]
    lines += [
        "",
        "## 2. Multiscale against single-level optimisation, 256 x 256, 5 textures",
        "",
        "Optimisation only (features shared). Speed factor: single-level CPU seconds over "
        "multiscale CPU seconds; gap: relative log-likelihood difference, multiscale minus "
        "single-level.",
        "",
        "| size | mosaic | multi wall s | multi CPU s | single wall s | single CPU s | factor |"
        " gap | multi error | single error |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    factors = []
    for seed in seeds:
        row, factor = speed_factor(256, seed)
        lines.append(row)
        factors.append(factor)
    lines += ["", f"Median speed factor: {np.median(factors):.1f} (target: at least 10).", ""]
    emit(lines, args.out or (None if args.quick else RESULTS))
    return 0


if __name__ == "__main__":
    sys.exit(main())
