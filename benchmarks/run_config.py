"""How a benchmark script declares the problem sizes of its full and ``--quick`` runs.

A script's ``Config`` is a dataclass deriving from :class:`QuickConfig`; a field whose quick run
differs is declared with :func:`sized`, both values side by side. ``Config()`` is the full run,
``Config.quick()`` the quick one.

Examples
--------
>>> from dataclasses import dataclass
>>> @dataclass
... class Config(QuickConfig):
...     rounds: int = sized(5, quick=1)
...     seed: int = 0
>>> Config(), Config.quick()
(Config(rounds=5, seed=0), Config(rounds=1, seed=0))
"""

from __future__ import annotations

import copy
from dataclasses import field, fields


def sized(full, quick):
    """A field of a benchmark's ``Config``: its value in a full run and in a ``--quick`` run (a
    dict is copied for each configuration, as a dataclass default must be)."""
    if isinstance(full, dict):
        return field(default_factory=lambda: dict(full), metadata={"quick": quick})
    return field(default=full, metadata={"quick": quick})


class QuickConfig:
    """Base of a benchmark's ``Config`` dataclass: ``Config()`` is a full run and
    ``Config.quick()`` a ``--quick`` one, with the quick values of the fields declared by
    :func:`sized`."""

    @classmethod
    def quick(cls):
        smaller = {
            f.name: copy.copy(f.metadata["quick"]) for f in fields(cls) if "quick" in f.metadata
        }
        return cls(**smaller)
