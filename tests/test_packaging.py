"""Packaging and layering: the package imports from anywhere under its own name only, and the
layers data <- models <- inference <- face never import upwards."""

import ast
import os
import subprocess
import sys
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
