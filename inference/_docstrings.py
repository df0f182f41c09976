"""Docstring helpers: the doctest setup several Examples share, written once.

Several methods of one class often open their Examples with the same lines (the data, the model,
a fitted result). :func:`with_example_setup` keeps those lines in one place and puts them at the
head of each Examples section at import, so the rendered docstrings and the doctests read as if
the setup were written out in each.
"""

from __future__ import annotations

import re
import textwrap
from collections.abc import Callable

__all__ = ["TOY_POINT_FIT", "with_example_setup"]

TOY_POINT_FIT = """
>>> import latentzoo
>>> from latentzoo.data import load
>>> from latentzoo.models import AspectModel
>>> fit = latentzoo.fit(AspectModel(2), load("toy"), betas=[1.0], random_state=0)
"""
"""The setup of the Examples that read a point estimate: plain EM of the aspect model on ``toy``."""

_EXAMPLES = re.compile(r"^([ \t]*)Examples\n\1-{8}\n", re.MULTILINE)
"""A numpydoc Examples header; group 1 is the docstring's indentation."""


def with_example_setup(setup: str) -> Callable:
    """A decorator that opens the Examples section of a function's docstring with ``setup``.

    Parameters
    ----------
    setup : str
        Doctest lines (``>>> ...``), at any common indentation; each is indented as the
        docstring's Examples header.

    Returns
    -------
    Callable
        The decorator; it returns the function itself with its ``__doc__`` extended, and raises
        ``ValueError`` when the docstring has no Examples section.

    Examples
    --------
    >>> @with_example_setup(">>> x = 2")
    ... def square(x):
    ...     '''The square.
    ...
    ...     Examples
    ...     --------
    ...     >>> square(x)
    ...     4
    ...     '''
    ...     return x * x
    >>> [line.strip() for line in square.__doc__.splitlines() if ">>>" in line]
    ['>>> x = 2', '>>> square(x)']
    """
    lines = textwrap.dedent(setup).strip("\n").splitlines()

    def decorate(function: Callable) -> Callable:
        doc = function.__doc__ or ""
        header = _EXAMPLES.search(doc)
        if header is None:
            raise ValueError(f"{function.__qualname__} has no Examples section to set up")
        block = "".join(f"{header.group(1)}{line}\n" for line in lines)
        function.__doc__ = f"{doc[: header.end()]}{block}{doc[header.end() :]}"
        return function

    return decorate
