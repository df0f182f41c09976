"""Modules imported on first use, so that importing the inference layer stays cheap.

``latentzoo list`` imports every family module; ArviZ, xarray and PyMC take seconds to import and
none of them is needed to list the zoo. A module that uses one of them at run time binds it with
:func:`lazy_import` instead of ``import``: the name works as the module does (attributes,
``isinstance`` against its classes, doctests), and the import happens at the first attribute.

Examples
--------
>>> json = lazy_import("json")
>>> json.dumps([1])
'[1]'
"""

from __future__ import annotations

import importlib
import types

__all__ = ["lazy_import"]


class _LazyModule(types.ModuleType):
    """A stand-in for module ``name`` that imports it at the first attribute lookup."""

    def __init__(self, name: str):
        super().__init__(name)
        self.__dict__["_lazy_target"] = None

    def _load(self):
        module = self.__dict__["_lazy_target"]
        if module is None:
            module = importlib.import_module(self.__name__)
            self.__dict__["_lazy_target"] = module
        return module

    def __getattr__(self, attribute: str):
        return getattr(self._load(), attribute)

    def __dir__(self):
        return dir(self._load())

    def __repr__(self) -> str:
        return f"<lazy module {self.__name__!r}>"


def lazy_import(name: str) -> types.ModuleType:
    """Module ``name``, imported when one of its attributes is first used.

    Examples
    --------
    >>> import sys
    >>> lazy_import("xarray").__name__
    'xarray'
    """
    return _LazyModule(name)
