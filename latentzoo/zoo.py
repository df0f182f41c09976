"""The registry: the list of family modules, and the families they export.

Each family module (``inference/<family>.py``) ends with one
:class:`~latentzoo.inference.family.Family` object of real callables (``FAMILY``, or ``FAMILIES``
when one module serves two families): the model class, its fast methods with their declared
options, its validation recipe, its default dataset and its notebook. This module only lists those
modules, and imports one when a family of it is first asked for, so ``latentzoo list`` and
``--help`` import neither ArviZ nor PyMC. ``latentzoo list``, ``latentzoo fit``,
``latentzoo validate`` and the common tests all read this one table.

Adding a family (the checklist, also in the README): a model file ``models/<family>.py``, an
inference file ``inference/<family>.py`` ending with its ``FAMILY`` and ``validation_recipe``, its
module's line in :data:`FAMILY_MODULES` below, and a notebook.
"""

from __future__ import annotations

import importlib
from collections.abc import Iterator, MutableMapping

from latentzoo.inference.family import Family, Method, Option

__all__ = [
    "FAMILY_MODULES",
    "Family",
    "Method",
    "Option",
    "ZOO",
    "register",
    "unregister",
    "entry_for",
    "as_table",
    "options_markdown",
]

FAMILY_MODULES = (
    "latentzoo.inference.aspect",
    "latentzoo.inference.one_sided",
    "latentzoo.inference.two_sided",
    "latentzoo.inference.product_space",
    "latentzoo.inference.mixture",
    "latentzoo.inference.bhc",
    "latentzoo.inference.pairwise",
    "latentzoo.inference.cluster_abstraction",
    "latentzoo.inference.bayesian_sets",
    "latentzoo.inference.topic_tree",
    "latentzoo.inference.iomm",
    "latentzoo.inference.bpm",
)
"""The modules that export the zoo's families, in the order ``latentzoo list`` shows them."""


def _families_of(module) -> tuple[Family, ...]:
    """The ``FAMILY`` / ``FAMILIES`` a family module exports."""
    if hasattr(module, "FAMILIES"):
        return tuple(module.FAMILIES)
    return (module.FAMILY,)


class _Registry(MutableMapping):
    """Family name -> :class:`Family`, loading each family module on first need.

    A name is looked up first in the module named after it, so ``ZOO["bhc"]`` imports
    ``latentzoo.inference.bhc`` only; iterating imports every listed module. Families added
    with :func:`register` (a test's toy family) come after the listed ones.

    Examples
    --------
    >>> registry = _Registry(("latentzoo.inference.bhc",))
    >>> list(registry), registry["bhc"].model.__name__
    (['bhc'], 'BayesianHierarchicalClustering')
    """

    def __init__(self, modules: tuple[str, ...]):
        self._modules = tuple(modules)
        self._loaded: dict[str, tuple[Family, ...]] = {}
        self._added: dict[str, Family] = {}
        self._removed: set[str] = set()

    def _load(self, module: str) -> tuple[Family, ...]:
        if module not in self._loaded:
            self._loaded[module] = _families_of(importlib.import_module(module))
        return self._loaded[module]

    def _listed(self) -> dict[str, Family]:
        return {
            family.name: family
            for module in self._modules
            for family in self._load(module)
            if family.name not in self._removed
        }

    def __getitem__(self, name: str) -> Family:
        if name in self._added:
            return self._added[name]
        if name in self._removed:
            raise KeyError(name)
        guess = f"latentzoo.inference.{str(name).replace('-', '_')}"
        if guess in self._modules:
            for family in self._load(guess):
                if family.name == name:
                    return family
        return self._listed()[name]

    def __iter__(self) -> Iterator[str]:
        listed = self._listed()
        yield from listed
        yield from (name for name in self._added if name not in listed)

    def __len__(self) -> int:
        return len(list(iter(self)))

    def __contains__(self, name) -> bool:
        try:
            self[name]
        except KeyError:
            return False
        return True

    def __setitem__(self, name: str, family: Family) -> None:
        self._removed.discard(name)
        self._added[name] = family

    def __delitem__(self, name: str) -> None:
        if name not in self:
            raise KeyError(name)
        self._added.pop(name, None)
        if name in self._listed():
            self._removed.add(name)

    def __repr__(self) -> str:
        return f"<latentzoo registry of {len(self._modules)} family modules>"


ZOO = _Registry(FAMILY_MODULES)
"""Family name -> :class:`Family`: every family of the listed modules, and those registered."""


def register(family: Family) -> Family:
    """Add ``family`` to the registry (replacing a family of the same name) and return it.

    Examples
    --------
    >>> import dataclasses
    >>> entry = dataclasses.replace(ZOO["aspect"], name="aspect_copy")
    >>> register(entry).name in ZOO
    True
    >>> unregister("aspect_copy")
    >>> "aspect_copy" in ZOO
    False
    """
    ZOO[family.name] = family
    return family


def unregister(name: str) -> None:
    """Remove family ``name`` from the registry (a test's toy family, after the test)."""
    del ZOO[name]


def entry_for(model) -> Family:
    """The registry entry of a model instance, class or name.

    Examples
    --------
    >>> entry_for("aspect").model.__name__
    'AspectModel'
    """
    if isinstance(model, str):
        if model not in ZOO:
            raise ValueError(f"unknown model {model!r}; known models: {', '.join(ZOO)}")
        return ZOO[model]
    cls = model if isinstance(model, type) else type(model)
    for entry in ZOO.values():
        if entry.model is cls:
            return entry
    raise ValueError(f"{cls.__name__} is not registered in latentzoo.zoo")


def as_table():
    """The registry as a table (what ``latentzoo list`` prints).

    Examples
    --------
    >>> "dpm" in set(as_table()["model"])
    True
    """
    import pandas as pd

    return pd.DataFrame(
        [
            {
                "model": e.name,
                "class": e.model.__name__,
                "data": e.data.__name__,
                "fast methods": ", ".join(e.methods),
                "reference": e.reference,
                "dataset": e.dataset,
                "notebook": e.notebook,
                "description": e.description,
            }
            for e in ZOO.values()
        ]
    )


def options_markdown() -> str:
    """Every method's declared options as markdown, one table per method: ``docs/options.md``.

    Generated from the declarations (:class:`~latentzoo.inference.family.Option`), which the
    command line and the common checks read too; ``python -m latentzoo.zoo > docs/options.md``
    rewrites the file and a test keeps it current.

    Examples
    --------
    >>> print(options_markdown().splitlines()[0])
    # Options of every method
    """
    lines = [
        "# Options of every method",
        "",
        "Generated by `python -m latentzoo.zoo > docs/options.md` from the options each family",
        "declares once (`inference/family.py`); `latentzoo fit MODEL --option name=value` and the",
        "common checks (`latentzoo.testing`) read the same declarations.",
    ]
    for family in ZOO.values():
        for name, method in family.methods.items():
            lines += [
                "",
                f"## {family.name} {name}",
                "",
                f"`{method.__module__}.{method.__name__}`",
            ]
            lines += ["", "| option | default | constraint | |", "|---|---|---|---|"]
            for option in method.options.values():
                cell = option.constraint.replace("|", "\\|") or "-"
                lines.append(f"| `{option.name}` | `{option.default!r}` | {cell} | {option.doc} |")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    print(options_markdown(), end="")
