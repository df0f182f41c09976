"""Packaging and layering: the package imports from anywhere under its own name only, the
layers data <- models <- inference <- face never import upwards, and the Makefile builds the
documented environment (a project virtual environment) from a clean clone."""

import ast
import os
import shutil
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest

import latentzoo

ROOT = Path(latentzoo.__file__).resolve().parent.parent
FACE = {
    "latentzoo",
    "latentzoo.api",
    "latentzoo.zoo",
    "latentzoo.cli",
    "latentzoo.validation",
    "latentzoo.report",
}
LAYERS = {
    # directory: (package name, forbidden import prefixes)
    "data": ("latentzoo.data", ("latentzoo.models", "latentzoo.inference", *FACE)),
    "models": ("latentzoo.models", ("latentzoo.inference", *FACE)),
    "inference": ("latentzoo.inference", FACE),
}
BARE = ("models", "inference", "data")


def run_outside(code, tmp_path):
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    return subprocess.run(
        [sys.executable, "-c", code], cwd=tmp_path, env=env, capture_output=True, text=True,
        timeout=120,
    )  # fmt: skip


def test_package_imports_outside_the_repository(tmp_path):
    code = (
        "import latentzoo, latentzoo.models, latentzoo.inference, latentzoo.data\n"
        "print(latentzoo.data.__file__)\n"
        "print(latentzoo.models.AspectModel.__module__)\n"
    )
    out = run_outside(code, tmp_path)
    assert out.returncode == 0, out.stderr
    data_file, module = out.stdout.split()
    assert Path(data_file).resolve() == ROOT / "data" / "__init__.py"
    assert module == "latentzoo.models.aspect"


def test_no_bare_top_level_packages(tmp_path):
    code = (
        "import importlib.util\n"
        f"print([n for n in {BARE!r} if importlib.util.find_spec(n) is not None])\n"
    )
    out = run_outside(code, tmp_path)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"


def imported_modules(path: Path, package: str):
    """``(line, module)`` for every module a source file imports, relative imports resolved.

    ``from a import b`` counts as importing ``a`` and ``a.b`` (``b`` may be a submodule), except
    that ``from latentzoo import data`` is not an import of the face ``latentzoo`` itself.
    """
    tree = ast.parse(path.read_text(), filename=str(path))
    parts = package.split(".")
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield node.lineno, alias.name
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = parts[: len(parts) - (node.level - 1)]
                name = ".".join(base + ([node.module] if node.module else []))
            else:
                name = node.module
            if name != "latentzoo":
                yield node.lineno, name
            for alias in node.names:
                yield node.lineno, f"{name}.{alias.name}"


def violations(directory: str, root: Path = ROOT):
    package, forbidden = LAYERS[directory]
    found = set()
    for path in sorted((root / directory).rglob("*.py")):
        sub = path.relative_to(root / directory).parent.parts
        for line, name in imported_modules(path, ".".join([package, *sub])):
            for bad in forbidden:
                inside = bad != "latentzoo" and name.startswith(bad + ".")
                if name == bad or inside:
                    found.add(f"{path.relative_to(root)}:{line} imports {name}")
    return sorted(found)


@pytest.mark.parametrize("directory", list(LAYERS))
def test_layers_never_import_upwards(directory):
    files = list((ROOT / directory).rglob("*.py"))
    assert files, f"no sources under {directory}"
    assert violations(directory) == []


def test_layering_check_has_power(tmp_path):
    """The checker flags upward imports, absolute or relative, at module or function level, and
    lets the allowed downward ones through."""
    fake = tmp_path / "models"
    fake.mkdir()
    (fake / "bad.py").write_text(
        "from latentzoo.data import CoOccurrence\n"
        "from ..data import load\n"
        "from latentzoo import data\n"
        "def f():\n"
        "    from latentzoo.inference.aspect import gibbs\n"
        "from .. import api\n"
        "import latentzoo.validation\n"
        "import latentzoo\n"
        "from ..inference import aspect\n"
    )
    lines = {int(v.split(":")[1].split()[0]) for v in violations("models", tmp_path)}
    assert lines == {5, 6, 7, 8, 9}


# ---------------------------------------------------------------- the documented environment

needs_make = pytest.mark.skipif(shutil.which("make") is None, reason="needs GNU make")
# Settings that would leak into make from the caller (`make test PYTHON=x` passes PYTHON to
# sub-makes through MAKEFLAGS) or into the new environment from an active one.
_LEAKS = (
    "PYTHON", "VENV", "PIP", "BASE_PYTHON", "MAKEFLAGS", "MFLAGS", "MAKELEVEL", "MAKEOVERRIDES",
    "VIRTUAL_ENV", "PYTHONPATH", "PYTHONHOME", "CONDA_PREFIX",
)  # fmt: skip


def _make(*args, cwd=ROOT, timeout=60):
    env = {k: v for k, v in os.environ.items() if k not in _LEAKS}
    return subprocess.run(
        ["make", "--no-print-directory", *args], cwd=cwd, env=env, capture_output=True,
        text=True, timeout=timeout,
    )  # fmt: skip


@needs_make
def test_make_uses_the_project_venv_by_default(tmp_path):
    venv = tmp_path / "venv"
    out = _make("-n", "test", f"VENV={venv}")
    assert out.returncode == 0, out.stderr
    assert f"python3 -m venv {venv}" in out.stdout
    assert (
        f'{venv}/bin/python -m pip --disable-pip-version-check install -q -e ".[test,bench,dask]"'
        in (out.stdout)
    )
    assert f"{venv}/bin/python -m pytest" in out.stdout
    default = _make("-n", "demo")
    assert default.returncode == 0, default.stderr
    assert ".venv/bin/python -m latentzoo demo" in default.stdout
    assert not venv.exists()
    assert ".venv/" in (ROOT / ".gitignore").read_text().split()


@needs_make
def test_make_with_python_uses_it_and_creates_nothing(tmp_path):
    python = "/opt/some/python"
    out = _make("-n", "test", f"PYTHON={python}", f"VENV={tmp_path / 'venv'}")
    assert out.returncode == 0, out.stderr
    commands = [line for line in out.stdout.splitlines() if line.strip()]
    assert commands and all(line.startswith(f"{python} -m ") for line in commands), commands
    assert "venv" not in out.stdout
    # Really run, not just printed: the venv target has nothing to do.
    ran = _make("venv", f"PYTHON={python}", f"VENV={tmp_path / 'venv'}")
    assert ran.returncode == 0, ran.stderr
    assert not (tmp_path / "venv").exists()


@needs_make
def test_failed_venv_names_the_debian_package_and_leaves_nothing(tmp_path):
    # What Debian's python3 does without python3-venv: a half-made folder and a failure.
    fake = tmp_path / "python3"
    fake.write_text(
        "#!/bin/sh\n"
        'if [ "$2" = venv ]; then mkdir -p "$3/bin"; touch "$3/bin/python"; '
        "echo 'ensurepip is not available' >&2; exit 1; fi\n"
        f'exec {sys.executable} "$@"\n'
    )
    fake.chmod(fake.stat().st_mode | stat.S_IXUSR)
    venv = tmp_path / "venv"
    out = _make("venv", f"BASE_PYTHON={fake}", f"VENV={venv}")
    assert out.returncode != 0
    hint = [line for line in out.stderr.splitlines() if "apt install" in line]
    version = f"python{sys.version_info.major}.{sys.version_info.minor}-venv"
    assert len(hint) == 1 and "sudo apt install python3-venv" in hint[0] and version in hint[0]
    assert not venv.exists()


def _listed(output: str, section: str) -> set[str]:
    """First column of a table printed by `latentzoo list` under ``section:`` (an indented line
    continues the row above it: a wrapped description)."""
    lines = output.split(f"{section}:\n", 1)[1].split("\n\n", 1)[0].splitlines()[1:]
    return {line.split()[0] for line in lines if line.strip() and not line[0].isspace()}


def test_list_names_every_model_and_dataset_in_its_first_column(capsys):
    """The default-tier half of the clean-clone test: the table it reads is parseable."""
    from latentzoo.cli import main
    from latentzoo.data import list_datasets
    from latentzoo.zoo import as_table

    main(["list"])
    printed = capsys.readouterr().out
    assert _listed(printed, "Models") == set(as_table()["model"])
    assert _listed(printed, "Datasets") == set(list_datasets()["name"])


@pytest.mark.slow
@needs_make
@pytest.mark.skipif(shutil.which("git") is None, reason="needs git")
def test_documented_install_from_a_clean_clone(tmp_path):
    """`make install` in a fresh clone builds .venv with a stock `python3 -m venv`, installs
    from PyPI (minutes), and `latentzoo list` runs from it; `pip check` is clean.

    Clones the committed state of this repository (or of ``$LATENTZOO_PACKAGING_REPO``).
    """
    from latentzoo.data import list_datasets
    from latentzoo.zoo import as_table

    source = os.environ.get("LATENTZOO_PACKAGING_REPO", str(ROOT))
    if not (Path(source) / ".git").exists():
        pytest.skip(f"{source} is not a git checkout")
    clone = tmp_path / "clone"
    cloned = subprocess.run(
        ["git", "clone", "--quiet", source, str(clone)], capture_output=True, text=True
    )
    assert cloned.returncode == 0, cloned.stderr
    # A Makefile without the venv logic would pip-install into the interpreter running this
    # test (and repoint its editable latentzoo at the clone): look before running it.
    planned = _make("-n", "install", cwd=clone)
    pips = [line for line in planned.stdout.splitlines() if " pip " in line]
    assert pips and all(line.startswith(".venv/bin/python -m pip") for line in pips), planned.stdout
    start = time.perf_counter()
    installed = _make("install", cwd=clone, timeout=3000)
    seconds = time.perf_counter() - start
    assert installed.returncode == 0, installed.stdout + installed.stderr
    assert "creating the virtual environment .venv with python3 -m venv" in installed.stdout
    venv = clone / ".venv"
    listed = subprocess.run(
        [str(venv / "bin" / "latentzoo"), "list"], cwd=tmp_path, capture_output=True, text=True,
        timeout=300,
    )  # fmt: skip
    assert listed.returncode == 0, listed.stderr
    assert _listed(listed.stdout, "Models") == set(as_table()["model"])
    assert _listed(listed.stdout, "Datasets") == set(list_datasets()["name"])
    where = subprocess.run(
        [str(venv / "bin" / "python"), "-c", "import latentzoo; print(latentzoo.__file__)"],
        cwd=tmp_path, capture_output=True, text=True,
    )  # fmt: skip
    assert Path(where.stdout.strip()).is_relative_to(clone)
    check = subprocess.run(
        [str(venv / "bin" / "python"), "-m", "pip", "check"], capture_output=True, text=True
    )
    assert check.returncode == 0, check.stdout
    print(f"make install in a clean clone: {seconds:.0f} s; pip check: {check.stdout.strip()}")
