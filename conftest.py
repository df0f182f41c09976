"""Root pytest configuration.

Doctests are collected from the package folders (``data/``, ``models/``, ``inference/``), which are
installed as ``latentzoo.data`` etc. Without help pytest would import them a second time under bare
names (``inference.aspect``), and numba's on-disk cache would then record kernels against a module
that does not exist outside the test run. Mapping the bare names onto the installed modules first
makes pytest reuse them.
"""

import importlib
import pkgutil
import sys

for bare in ("data", "models", "inference"):
    package = importlib.import_module(f"latentzoo.{bare}")
    sys.modules.setdefault(bare, package)
    for info in pkgutil.iter_modules(package.__path__):
        full = importlib.import_module(f"latentzoo.{bare}.{info.name}")
        sys.modules.setdefault(f"{bare}.{info.name}", full)
