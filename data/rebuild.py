"""What the scripts that rebuild the shipped ``.npz`` files share: the error for a missing source,
R through ``Rscript``, the ``--out``/``--check`` command line, and building, then checking or
writing, a file of arrays.

Each ``prepare_*`` module keeps its own sources and derivation; this module holds the plumbing
around them, so that every script fails, checks and reports the same way.
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import numpy as np

__all__ = [
    "PROVENANCE",
    "PrepareError",
    "check_or_write",
    "rebuild",
    "rebuild_folder_main",
    "rebuild_main",
    "rebuild_parser",
    "rscript",
    "same_data",
]

#: The provenance strings of a derived file; they name versions that may differ between machines.
PROVENANCE = ("source", "licence", "derivation")


class PrepareError(RuntimeError):
    """A source of a derived dataset is missing or failed; the message says how to install it."""


def rscript(code: str, needs: str, install: str) -> str:
    """The standard output of ``Rscript -e code``. ``needs`` names R and the packages the code
    uses and ``install`` the command that installs them, both said in the
    :class:`PrepareError` raised when R is missing or the code fails.

    Examples
    --------
    >>> if shutil.which("Rscript") is None:
    ...     print("1")
    ... else:
    ...     print(rscript("cat(1)", "R", "apt-get install r-base-core"))
    1
    """
    if shutil.which("Rscript") is None:
        raise PrepareError(f"Rscript not found: install {needs} with: {install}")
    done = subprocess.run(
        ["Rscript", "-e", code], capture_output=True, encoding="utf-8", check=False
    )
    if done.returncode != 0:
        last = (done.stderr.strip().splitlines() or ["(no message)"])[-1]
        raise PrepareError(f"Rscript failed ({last}); install {needs} with: {install}")
    return done.stdout


def rebuild_parser(doc: str, out: Path, out_help: str = "the .npz file") -> argparse.ArgumentParser:
    """The command line of a rebuild script: ``--out`` (default ``out``) and ``--check``.

    Examples
    --------
    >>> args = rebuild_parser("Rebuild x.\\n", Path("x.npz")).parse_args(["--check"])
    >>> args.out.name, args.check
    ('x.npz', True)
    """
    parser = argparse.ArgumentParser(description=doc.split("\n")[0])
    parser.add_argument("--out", type=Path, default=out, help=out_help)
    parser.add_argument(
        "--check", action="store_true", help="rebuild and compare with --out, write nothing"
    )
    return parser


def _all_equal(npz, arrays: dict) -> bool:
    return set(npz.files) == set(arrays) and all(
        np.array_equal(npz[key], value) for key, value in arrays.items()
    )


def same_data(npz, arrays: dict) -> bool:
    """Whether the file ``npz`` holds the arrays of ``arrays``, the :data:`PROVENANCE` strings
    aside (a ``same`` of :func:`check_or_write` for sources whose versions may differ).

    Examples
    --------
    >>> import tempfile
    >>> out = Path(tempfile.mkdtemp()) / "x.npz"
    >>> np.savez(out, a=np.arange(3), source=np.array("R 4.2.2"))
    >>> with np.load(out, allow_pickle=False) as npz:
    ...     same_data(npz, {"a": np.arange(3), "source": np.array("R 4.3.0")})
    True
    """
    return all(np.array_equal(npz[key], arrays[key]) for key in arrays if key not in PROVENANCE)


def check_or_write(out: Path, arrays: dict, check: bool, same=None, detail: str = "") -> int:
    """With ``check``, compare ``arrays`` with the file ``out`` and say whether they are the same
    (``same(npz, arrays)``; default: the same names and equal arrays); otherwise write them
    (compressed, loadable with ``allow_pickle=False``). Returns the exit code: 1 for a file that
    differs.

    Examples
    --------
    >>> import tempfile
    >>> out = Path(tempfile.mkdtemp()) / "x.npz"
    >>> check_or_write(out, {"a": np.arange(3)}, check=False)  # doctest: +ELLIPSIS
    wrote ...x.npz (... kB)
    0
    >>> check_or_write(out, {"a": np.arange(3)}, check=True)  # doctest: +ELLIPSIS
    /...x.npz: identical
    0
    """
    if check:
        with np.load(out, allow_pickle=False) as npz:
            identical = (same or _all_equal)(npz, arrays)
        print(f"{out}: {'identical' if identical else 'DIFFERENT'}")
        return 0 if identical else 1
    np.savez_compressed(out, **arrays)
    print(f"wrote {out} ({out.stat().st_size / 1e3:.1f} kB{detail})")
    return 0


def rebuild(script: str, build: Callable[[], dict], out: Path, check: bool, same=None,
            detail: Callable[[dict], str] | None = None) -> int:  # fmt: skip
    """Build the arrays and check or write them (:func:`check_or_write`); a missing source is one
    line on stderr, ``script: message``, and exit code 1.

    Examples
    --------
    >>> def missing():
    ...     raise PrepareError("no source: install it with: apt-get install x")
    >>> rebuild("prepare_x", missing, Path("x.npz"), check=False)
    1
    """
    try:
        arrays = build()
    except (PrepareError, ValueError) as error:
        print(f"{script}: {error}", file=sys.stderr)
        return 1
    return check_or_write(out, arrays, check, same, "" if detail is None else detail(arrays))


def rebuild_main(script: str, build: Callable[[], dict], doc: str, out: Path, argv=None, same=None,
                 detail: Callable[[dict], str] | None = None) -> int:  # fmt: skip
    """The whole command line of a script that builds one file: :func:`rebuild_parser`'s
    ``--out``/``--check`` parsed from ``argv``, then :func:`rebuild`.

    Examples
    --------
    >>> def missing():
    ...     raise PrepareError("no source: install it with: apt-get install x")
    >>> rebuild_main("prepare_x", missing, "Rebuild x.\\n", Path("x.npz"), ["--check"])
    1
    """
    args = rebuild_parser(doc, out).parse_args(argv)
    return rebuild(script, build, args.out, args.check, same, detail)


def rebuild_folder_main(script: str, names, build: Callable[[str], dict], doc: str, folder: Path,
                        argv=None, same=None) -> int:  # fmt: skip
    """The whole command line of a script that builds several files, ``folder/<name>.npz`` from
    ``build(name)`` for each of ``names``: ``--out`` (the folder) and ``--check`` parsed from
    ``argv``, then :func:`rebuild` of each; the exit code is the worst of them, and a missing
    source stops the run at once (one line on stderr, exit code 1).

    Examples
    --------
    >>> def missing(name):
    ...     raise PrepareError(f"no source for {name}: install it with: apt-get install x")
    >>> rebuild_folder_main("prepare_x", ["a", "b"], missing, "Rebuild x.\\n", Path("."), ["--check"])
    1
    """
    args = rebuild_parser(doc, folder, "folder of the .npz files").parse_args(argv)
    status = 0
    for name in names:
        code = rebuild(
            script, lambda name=name: build(name), args.out / f"{name}.npz", args.check, same
        )
        if code and not args.check:
            return code
        status = max(status, code)
    return status
