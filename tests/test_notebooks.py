"""Execute every notebook in ``notebooks/`` in quick mode.

Each notebook reads ``LATENTZOO_NOTEBOOK_QUICK=1`` and shrinks its experiment so the whole run takes
seconds. Notebooks are executed in memory from the ``notebooks`` folder; their committed outputs (the
full run) are never overwritten. nbclient starts the ``python3`` kernel: the installed kernelspec if
there is one, otherwise ipykernel's built-in spec of the same name.
"""

from __future__ import annotations

import glob
import os
from pathlib import Path

import pytest

nbformat = pytest.importorskip("nbformat")
nbclient = pytest.importorskip("nbclient")
pytest.importorskip("ipykernel")

NOTEBOOK_DIR = str(Path(__file__).resolve().parents[1] / "notebooks")
NOTEBOOKS = sorted(glob.glob(os.path.join(NOTEBOOK_DIR, "*.ipynb")))


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[os.path.basename(p) for p in NOTEBOOKS])
def test_notebook_runs_in_quick_mode(path, monkeypatch):
    # The kernel is a child process and inherits os.environ at launch.
    monkeypatch.setenv("LATENTZOO_NOTEBOOK_QUICK", "1")
    with open(path, encoding="utf-8") as handle:
        notebook = nbformat.read(handle, as_version=4)
    client = nbclient.NotebookClient(
        notebook,
        timeout=600,
        kernel_name="python3",
        resources={"metadata": {"path": NOTEBOOK_DIR}},
    )
    client.execute()  # raises CellExecutionError, naming the cell, if any cell fails
    errors = [
        output
        for cell in notebook.cells
        if cell.cell_type == "code"
        for output in cell.get("outputs", [])
        if output.get("output_type") == "error"
    ]
    assert not errors


def test_notebooks_are_found():
    assert NOTEBOOKS, f"no notebooks in {NOTEBOOK_DIR}"
