"""The architecture of shared/DESIGN.md, checked on the source (an AST scan of every package file).

(a) A family owns its behaviour: no ``isinstance(x, C)``, ``isinstance(x, A | B)``,
    ``isinstance(x, (A, B))``, ``type(x) is C``, ``type(x).__name__ == "C"``, ``x is C`` or
    ``x.__name__ == "C"`` where ``C`` is a model, result or container class of the package, outside
    that class's own modules: ``models/<f>.py`` and ``inference/<f>.py`` for a class defined in
    either (a family's two files), ``data/<container>.py`` for a container. Shared code asks the
    object through a method instead (``model.labels``, ``data.n_heldout_units``, ...). Protocols
    (``isinstance(model, LikelihoodModel)``) are what a family declares itself to be and are
    allowed.
(b) No import loop among the package's modules, counting every import statement, deferred ones
    inside functions included (a deferred import hides a loop, it does not remove it).

Offenders are reported as ``file:line``.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
LAYERS = {"latentzoo": "latentzoo", "models": "latentzoo.models",
          "inference": "latentzoo.inference", "data": "latentzoo.data"}  # fmt: skip
"""Folder of the repository -> the package it is installed as."""


# ------------------------------------------------------------------------------ the files
def _module_name(path: Path) -> str:
    folder = path.parent.name
    package = LAYERS[folder]
    return package if path.stem == "__init__" else f"{package}.{path.stem}"


def _package_files() -> dict[str, Path]:
    """Module name -> file, for every .py file of the four package folders."""
    files = {}
    for folder in LAYERS:
        for path in sorted((ROOT / folder).glob("*.py")):
            files[_module_name(path)] = path
    return files


FILES = _package_files()

FACE_WORK = {"latentzoo.inference.recipes", "latentzoo.inference.validation"}
"""Modules being restructured with the face (the validation recipes, issue 22) besides
latentzoo/*.py: their offences are reported by the ``*_in_the_face`` tests, the other parts stay
strict."""
TREES = {name: ast.parse(path.read_text(), filename=str(path)) for name, path in FILES.items()}


def _where(module: str, node: ast.AST) -> str:
    return f"{FILES[module].relative_to(ROOT)}:{node.lineno}"


# ------------------------------------------------------------------- (a) the family switches
def _is_protocol(node: ast.ClassDef) -> bool:
    names = {b.id if isinstance(b, ast.Name) else getattr(b, "attr", "") for b in node.bases}
    return "Protocol" in names


def _classes_of(module: str) -> list[str]:
    """Public module-level classes of ``module`` that are not protocols."""
    return [
        node.name
        for node in TREES[module].body
        if isinstance(node, ast.ClassDef)
        and not node.name.startswith("_")
        and not _is_protocol(node)
    ]


def _guarded_classes() -> dict[str, set[str]]:
    """Class name -> the modules allowed to test for it.

    Model classes (and the components, trees and labels they define): every public class of
    ``models/*.py``; result classes: the classes of ``inference/*.py`` named ``*Result``;
    containers: the public classes of the ``data`` modules that ``latentzoo.data`` exports.
    """
    owners: dict[str, set[str]] = {}

    def own(name: str, modules: set[str]) -> None:
        owners.setdefault(name, set()).update(modules)

    for module in FILES:
        layer, _, stem = module.rpartition(".")
        if layer == "latentzoo.models" and stem not in ("base", "__init__"):
            family = {module, f"latentzoo.inference.{stem}"}
            for name in _classes_of(module):
                own(name, family)
        elif layer == "latentzoo.inference":
            family = {module, f"latentzoo.models.{stem}"}
            for name in _classes_of(module):
                if name.endswith("Result"):
                    own(name, family)
    exported = _exported("latentzoo.data")
    for module in FILES:
        if module.startswith("latentzoo.data."):
            for name in _classes_of(module):
                if name in exported:
                    own(name, {module})
    return owners


def _exported(package: str) -> set[str]:
    for node in TREES[package].body:
        if isinstance(node, ast.Assign) and any(
            isinstance(t, ast.Name) and t.id == "__all__" for t in node.targets
        ):
            return {elt.value for elt in node.value.elts}
    return set()


def _class_names(node: ast.AST) -> list[str]:
    """The class names an ``isinstance`` second argument or a comparison operand mentions:
    ``C``, ``mod.C``, ``A | B``, ``(A, B)``."""
    if isinstance(node, ast.Name):
        return [node.id]
    if isinstance(node, ast.Attribute):
        return [node.attr]
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitOr):
        return _class_names(node.left) + _class_names(node.right)
    if isinstance(node, ast.Tuple | ast.List | ast.Set):
        return [name for elt in node.elts for name in _class_names(elt)]
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return [node.value]
    return []


def _is_type_call(node: ast.AST) -> bool:
    return isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "type"


def _names_a_class(node: ast.AST) -> bool:
    """``type(x)``, ``type(x).__name__`` or ``anything.__name__``."""
    if _is_type_call(node):
        return True
    return isinstance(node, ast.Attribute) and node.attr == "__name__"


def _switches(module: str, guarded: dict[str, set[str]]) -> list[str]:
    """``file:line: text`` of every test of a guarded class outside its owners."""
    out = []

    def flag(node, names, what):
        for name in names:
            if name in guarded and module not in guarded[name]:
                out.append(f"{_where(module, node)}: {what} {name}")

    for node in ast.walk(TREES[module]):
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id in ("isinstance", "issubclass")
            and len(node.args) == 2
        ):
            flag(node, _class_names(node.args[1]), f"{node.func.id}(..., C) with C =")
        elif isinstance(node, ast.Compare):
            operands = [node.left, *node.comparators]
            pairs = zip(operands[:-1], operands[1:], strict=True)
            for (left, right), op in zip(pairs, node.ops, strict=True):
                if not isinstance(op, ast.Eq | ast.NotEq | ast.Is | ast.IsNot | ast.In | ast.NotIn):
                    continue
                for side, other in ((left, right), (right, left)):
                    if _names_a_class(side):
                        flag(node, _class_names(other), "a class test against")
                    elif isinstance(op, ast.Is | ast.IsNot) and isinstance(other, ast.Name):
                        flag(node, [other.id], "an identity test against")
    return out


def _part_of(module: str) -> str:
    """``"data"``, ``"models"``, ``"inference"`` or ``"face"`` (latentzoo/*.py)."""
    layer = module.split(".")[1] if module.count(".") >= 1 else ""
    if module.count(".") == 2 or (
        module.count(".") == 1 and layer in ("models", "inference", "data")
    ):
        return layer
    return "face"


def _in_face_work(module: str) -> bool:
    return _part_of(module) == "face" or module in FACE_WORK


def _family_switches(part: str) -> list[str]:
    """Offences in ``part`` (``"data"``, ``"models"``, ``"inference"``, or ``"face"``: latentzoo/*.py
    with :data:`FACE_WORK`)."""
    guarded = _guarded_classes()
    return sorted(
        offence
        for module in FILES
        if (
            _in_face_work(module)
            if part == "face"
            else _part_of(module) == part and not _in_face_work(module)
        )  # fmt: skip
        for offence in _switches(module, guarded)
    )


def test_the_guarded_classes_are_found():
    guarded = _guarded_classes()
    for name in ("AspectModel", "DirichletProcessMixture", "BetaBernoulli", "EMResult",
                 "CoOccurrence", "Features", "Dissimilarities"):  # fmt: skip
        assert name in guarded, name
    assert guarded["CoOccurrence"] == {"latentzoo.data.cooccurrence"}
    assert "LikelihoodModel" not in guarded  # a protocol: what a family declares itself to be


def test_the_scan_finds_every_form_of_a_switch():
    tree = ast.parse(
        "isinstance(m, AspectModel)\nisinstance(d, CoOccurrence | Features)\n"
        "type(m).__name__ == 'AspectModel'\ntype(m) is AspectModel\nm.__name__ == 'Features'\n"
        "kind is CoOccurrence\nisinstance(m, LikelihoodModel)\n"
    )
    TREES["latentzoo.probe"], FILES["latentzoo.probe"] = tree, ROOT / "latentzoo" / "probe.py"
    try:
        found = _switches("latentzoo.probe", _guarded_classes())
    finally:
        del TREES["latentzoo.probe"], FILES["latentzoo.probe"]
    assert [line.split(":")[1] for line in found] == ["1", "2", "2", "3", "4", "5", "6"], found


@pytest.mark.parametrize("part", ["data", "models", "inference"])
def test_no_family_switch_outside_the_family(part):
    offences = _family_switches(part)
    assert not offences, "family switches:\n" + "\n".join(offences)


def test_no_family_switch_in_the_face():
    offences = _family_switches("face")
    assert not offences, "family switches:\n" + "\n".join(offences)


# ----------------------------------------------------------------------- (b) import loops
def _resolve(module: str, node: ast.ImportFrom) -> str:
    if not node.level:
        return node.module or ""
    is_package = FILES[module].stem == "__init__"
    base = module.split(".")
    base = base if is_package else base[:-1]
    base = base[: len(base) - (node.level - 1)]
    return ".".join(base + ([node.module] if node.module else []))


def _import_graph() -> dict[str, dict[str, int]]:
    """Module -> {imported package module: line of the first import}, every import counted."""
    graph: dict[str, dict[str, int]] = {module: {} for module in FILES}
    for module, tree in TREES.items():
        for node in ast.walk(tree):
            targets = []
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                # "from latentzoo.inference import mcmc" imports the submodule; "from
                # latentzoo.models import AspectModel" the package (its __init__).
                source = _resolve(module, node)
                targets = [
                    f"{source}.{alias.name}" if f"{source}.{alias.name}" in FILES else source
                    for alias in node.names
                ]
            for target in targets:
                if target in FILES and target != module:
                    graph[module].setdefault(target, node.lineno)
    return graph


def _cycles(graph) -> list[list[str]]:
    """The strongly connected components with more than one module (Tarjan)."""
    index, low, stack, on_stack, out = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                out.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def _describe(graph, component) -> list[str]:
    members = set(component)
    return [
        f"{FILES[a].relative_to(ROOT)}:{line}: {a} imports {b}"
        for a in component
        for b, line in sorted(graph[a].items())
        if b in members
    ]


def _loops(face: bool) -> list[str]:
    graph = _import_graph()
    # A package __init__ that re-exports its modules is not a loop with them: drop the edges
    # from a package to its own submodules (importing latentzoo.models.x runs the __init__
    # first, but the __init__ importing x back is the ordinary re-export).
    for module in graph:
        if FILES[module].stem == "__init__":
            graph[module] = {
                b: line for b, line in graph[module].items() if not b.startswith(module + ".")
            }
    lines = []
    for component in _cycles(graph):
        if any(_in_face_work(m) for m in component) == face:
            lines += [f"loop {' <-> '.join(component)}:"] + _describe(graph, component)
    return lines


def test_the_import_graph_sees_deferred_imports():
    """An import inside a function is an edge like any other."""
    deferred = [
        (module, node)
        for module, tree in TREES.items()
        for function in ast.walk(tree)
        if isinstance(function, ast.FunctionDef)
        for node in ast.walk(function)
        if isinstance(node, ast.ImportFrom)
        and (node.module or "").startswith("latentzoo.")
        and node.module in FILES
        and node.module != module
    ]
    assert deferred
    graph = _import_graph()
    for module, node in deferred:
        names = {f"{node.module}.{alias.name}" for alias in node.names} | {node.module}
        assert names & set(graph[module]), _where(module, node)


def test_no_import_loop_below_the_face():
    loops = _loops(face=False)
    assert not loops, "import loops:\n" + "\n".join(loops)


def test_no_import_loop_in_the_face():
    loops = _loops(face=True)
    assert not loops, "import loops:\n" + "\n".join(loops)


# ------------------------------------------------------------------------- (c) the layers
RANK = {"data": 0, "models": 1, "inference": 2, "face": 3}
"""data <- models <- inference <- latentzoo: a module imports only its own layer or those below."""


def _upward_imports() -> list[str]:
    graph = _import_graph()
    return sorted(
        f"{FILES[a].relative_to(ROOT)}:{line}: {a} ({_part_of(a)}) imports {b} ({_part_of(b)})"
        for a, targets in graph.items()
        for b, line in targets.items()
        if a != "latentzoo" and RANK[_part_of(b)] > RANK[_part_of(a)]
    )


def test_layers_import_only_downward():
    upward = _upward_imports()
    assert not upward, "imports pointing up a layer:\n" + "\n".join(upward)
