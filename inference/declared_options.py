"""A function's keyword options through their declarations: the one place their defaults and
constraints are written (:class:`~latentzoo.inference.family.Option`), which a family's method
declares too.

Examples
--------
>>> from latentzoo.inference.family import integer
>>> options = {"m": 5, "other": 1}
>>> take_declared((integer("m", 100, "subsample"), integer("k", 2, "clusters")), options)
{'m': 5, 'k': 2}
>>> options
{'other': 1}
"""

from __future__ import annotations

from collections.abc import Iterable


def take_declared(declared: Iterable, options: dict) -> dict:
    """The ``declared`` options taken out of ``options`` (which keeps the rest): each given one
    checked against its declaration (``ValueError`` naming it), the others at their declared
    default.

    Parameters
    ----------
    declared : iterable of Option
    options : dict
        The keyword options given; the declared ones are removed from it.

    Returns
    -------
    dict
        Option name -> value, in the declared order.
    """
    return {
        option.name: option.validate(options.pop(option.name, option.default))
        for option in declared
    }


def refuse_unknown(function: str, options: dict) -> None:
    """``TypeError`` naming what is left in ``options`` after the declared ones were taken, as
    Python says of an unexpected keyword."""
    if options:
        raise TypeError(f"{function}() got unexpected keyword arguments {sorted(options)}")
