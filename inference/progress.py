"""The one progress bar of every long loop: shown on a terminal or in a notebook, silent in a log.

tqdm's ``disable=None`` turns the bar off when its stream is not a terminal (a pipe, a CI log), where
each refresh would otherwise write a line; its notebook bar (``tqdm.auto`` in Jupyter) treats
``None`` as "show". ``progressbar=False`` always hides it.
"""

from __future__ import annotations

from latentzoo.inference._lazy import lazy_import

# tqdm.auto imports asyncio and ssl: imported when a bar is first made, so that listing the zoo
# stays cheap.
_tqdm = lazy_import("tqdm.auto")


def progress_bar(iterable=None, *, progressbar: bool, desc: str, total=None, leave: bool = False):
    """A ``tqdm`` bar over ``iterable`` (or of ``total`` steps), shown only where it can refresh.

    Parameters
    ----------
    iterable : iterable, optional
    progressbar : bool
        False hides the bar; True shows it on a terminal or in a notebook, not in a log.
    desc : str
        The bar's label.
    total : int, optional
        Steps of a bar updated by hand (``bar.update(n)``).
    leave : bool
        Keep the finished bar on screen.

    Examples
    --------
    >>> sum(progress_bar(range(3), progressbar=True, desc="adding"))  # not a terminal: no bar
    3
    """
    return _tqdm.tqdm(
        iterable, total=total, desc=desc, disable=None if progressbar else True, leave=leave
    )
