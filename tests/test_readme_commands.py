"""Every ``latentzoo`` command of the README's "Command line" block runs as written (issue 23).

The default tier runs the ``list``, ``fit`` and ``query`` commands at small settings (the slowest
two ``fit`` kinds, ``SLOW_IN_DEFAULT_TIER``, in the slow tier): the options of
``SHRINK`` are replaced (each replaced text must stand in the README as written, so an edit of the
README that the table does not follow fails here), everything else is the README's. The
``validate --quick`` commands run as written in the slow tier (the three of ``HEAVY_VALIDATE``
in the heavy tier); the full ``demo`` is the slow
``test_full_demo_passes`` of ``tests/test_report.py``. Each command runs in-process through
``latentzoo.cli.main`` in a fresh working directory holding the ``counts.csv`` that the README's
example reads, and must exit 0.
"""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import numpy as np
import pytest

from latentzoo.cli import main

README = Path(__file__).resolve().parents[1] / "README.md"

SHRINK = {
    "--draws 500": "--draws 30 --tune 30 --chains 2",
    "--draws 200": "--draws 30 --tune 30 --chains 2",
}
"""Option text of a README command -> what the default tier runs instead (same meaning, fewer
draws). Shrinks only; the data, models and methods are the README's."""

SLOW_IN_DEFAULT_TIER = ("fit two_sided", "fit dpm")
"""Commands that take 13-25 s even shrunk (mean-field on the PTB pairs; the DPM's data-set prior
and chains): they run in the slow tier, so that the default tier stays under its 8 minutes."""

HEAVY_VALIDATE = ("validate cluster-abstraction", "validate dpm", "validate one_sided")
"""``validate --quick`` commands that take 10 to 30 minutes on the 2.5 GHz Intel Xeon (PyMC's NUTS
references): heavy tier, so that ``.ci/run`` fits 90 minutes there. The slow tier runs the other
README validations (pairwise, bhc, aspect); the default tier runs every family's cheap levels."""

FULL_DEMO = "the full demo is tests/test_report.py::test_full_demo_passes (heavy tier, 10-100 min)"


def readme_commands() -> list[str]:
    """The ``latentzoo`` lines of the README's "Command line" block, comments removed."""
    text = README.read_text(encoding="utf-8").split("\n## Command line\n", 1)[1]
    block = re.search(r"```bash\n(.*?)```", text, flags=re.S).group(1)
    lines = [line.split("  #", 1)[0].strip() for line in block.splitlines()]
    return [line for line in lines if line.startswith("latentzoo ")]


def _kind(command: str) -> str:
    return shlex.split(command)[1]


def _cases():
    for command in readme_commands():
        marks = []
        if _kind(command) == "validate" or command[10:].startswith(SLOW_IN_DEFAULT_TIER):
            marks.append(pytest.mark.slow)
            if command[10:].startswith(HEAVY_VALIDATE):
                marks.append(pytest.mark.heavy)
        elif _kind(command) == "demo":
            marks.append(pytest.mark.skip(reason=FULL_DEMO))
        yield pytest.param(command, marks=marks, id=command.split(" --out")[0][10:60])


def _write_counts(directory: Path) -> None:
    """The ``counts.csv`` the README's Gibbs example reads: 12 documents x 8 words."""
    rng = np.random.default_rng(0)
    counts = rng.poisson(2.0, size=(12, 8))
    header = "doc," + ",".join(f"w{j}" for j in range(counts.shape[1]))
    rows = [f"d{i}," + ",".join(map(str, row)) for i, row in enumerate(counts)]
    (directory / "counts.csv").write_text("\n".join([header, *rows]) + "\n", encoding="utf-8")


def test_the_readme_has_its_commands():
    commands = readme_commands()
    assert len(commands) >= 10, commands
    kinds = {_kind(command) for command in commands}
    assert {"list", "fit", "validate", "query", "demo"} <= kinds, kinds
    for prefix in HEAVY_VALIDATE:
        assert any(command[10:].startswith(prefix) for command in commands), (
            f"the README no longer says latentzoo {prefix}: update HEAVY_VALIDATE"
        )
    for written in SHRINK:
        assert any(written in command for command in commands), (
            f"the README no longer says {written!r}: update SHRINK"
        )


@pytest.mark.parametrize("command", list(_cases()))
def test_readme_command_runs(command, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    _write_counts(tmp_path)
    if _kind(command) != "validate":
        for written, small in SHRINK.items():
            command = command.replace(written, small)
    args = shlex.split(command)[1:]
    quiet = ["--quiet"] if _kind(command) in ("fit", "validate") else []  # no progress bars
    assert main([*args, *quiet]) == 0, command
