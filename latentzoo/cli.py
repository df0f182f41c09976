"""The ``latentzoo`` command: ``list``, ``fit``, ``validate``, ``query``, ``demo``.

Errors caused by the user's input are one line on stderr with exit code 2, never a traceback.

Exit status of ``latentzoo fit``: 0 when the result is saved, also for a sample that has not
converged (the result is saved, and a **NOT CONVERGED** line on stderr says what failed and what to
try); with ``--require-converged``, 3 for a sample that is not converged or whose convergence could
not be checked (one chain), after saving it; 2 for an error of the user's input; 130 on Ctrl-C.
"""

from __future__ import annotations

import argparse
import os
import re
import sys
import warnings
from contextlib import contextmanager
from pathlib import Path

from latentzoo.segment import add_segment_parser, cmd_segment

__all__ = ["main"]


class UserError(Exception):
    """A problem with what the user asked for: printed as one line."""


def _load_data(spec: str, entry):
    """The data named by ``--data``: a dataset name, or a file read into the family's container."""
    from latentzoo.data import list_datasets, load

    path = Path(spec)
    container = entry.data
    if path.suffix in (".npz", ".csv", ".txt", ".tsv") and not path.exists():
        raise UserError(f"data file {spec} does not exist")
    if path.suffix == ".npz":
        if "npz" not in container.file_formats:
            raise UserError(f"{entry.name} takes {container.__name__} data: give a .csv file")
        return container.from_npz(path)
    if path.suffix in (".csv", ".txt", ".tsv"):
        return container(read_table(path, delimiter="\t" if path.suffix == ".tsv" else ","))
    if spec in set(list_datasets()["name"]):
        return _of_container(load(spec), container, f"dataset {spec!r}", f"{entry.name} takes")
    raise UserError(
        f"unknown data {spec!r}: give a dataset name ({', '.join(list_datasets()['name'])}) "
        "or a .npz/.csv file"
    )


def _of_container(data, container, what: str, wanted: str):
    """``data`` if it is held in ``container`` (the class a family declares), else a one-line
    error: ``"<what> holds <kind> data, but <wanted> <container> data"``."""
    if not isinstance(data, container):
        raise UserError(
            f"{what} holds {type(data).__name__} data, but {wanted} {container.__name__} data"
        )
    return data


def read_table(path, delimiter=","):
    """A numeric table from a delimited text file, with an optional header row and label column.

    The first row is a header when none of its value cells is a number; the first column holds
    row labels when none of its cells below the header is a number. ``nan`` and ``inf`` count as
    numbers here, so that the data container rejects them with its own message.

    Parameters
    ----------
    path : str or Path
        The file (``--data`` on the command line).
    delimiter : str
        Field separator.

    Returns
    -------
    numpy.ndarray or pandas.DataFrame
        The values as floats; a DataFrame (labels in its index and columns) when the file names
        its rows or columns, which the data containers keep as coordinates.

    Raises
    ------
    UserError
        One line naming the file and the offending row and column (counted from 1, as a
        spreadsheet shows them), or the line with the wrong number of fields.

    Examples
    --------
    >>> import tempfile
    >>> path = Path(tempfile.mkdtemp()) / "counts.csv"
    >>> _ = path.write_text("doc,cat,dog\\nd1,1,0\\nd2,0,2\\n")
    >>> table = read_table(path)
    >>> table.index.tolist(), table.columns.tolist(), table.to_numpy().tolist()
    (['d1', 'd2'], ['cat', 'dog'], [[1.0, 0.0], [0.0, 2.0]])
    >>> _ = path.write_text("1,0\\n0,x\\n")
    >>> read_table(path)
    Traceback (most recent call last):
    ...
    latentzoo.cli.UserError: cannot read ...counts.csv: row 2, column 2 is 'x', not a number
    """
    import numpy as np
    import pandas as pd

    try:
        cells = pd.read_csv(
            path, sep=delimiter, header=None, dtype=str, keep_default_na=False, engine="c"
        )
    except pd.errors.EmptyDataError:
        raise UserError(f"cannot read {path}: the file is empty") from None
    except UnicodeDecodeError as error:
        raise UserError(
            f"cannot read {path}: not a UTF-8 text file (it holds byte "
            f"{error.object[error.start]:#04x})"
        ) from None
    except pd.errors.ParserError as error:
        match = re.search(r"Expected (\d+) fields in line (\d+), saw (\d+)", str(error))
        if match is None:
            raise UserError(f"cannot read {path}: {str(error).strip()}") from None
        expected, line, seen = match.groups()
        raise UserError(
            f"cannot read {path}: line {line} has {seen} fields, expected {expected}"
        ) from None
    # A short row is padded with NaN (not a string): it reads as an empty, non-numeric cell.
    text = cells.fillna("").apply(lambda column: column.str.strip())
    values = text.apply(pd.to_numeric, errors="coerce").to_numpy(dtype=float)
    spelled_nan = text.apply(lambda column: column.str.lower().isin(["nan", "+nan", "-nan"]))
    numeric = ~np.isnan(values) | spelled_nan.to_numpy()
    below_first = numeric[1:] if len(numeric) > 1 else numeric
    has_labels = not below_first[:, 0].any()
    first_value_column = 1 if has_labels else 0
    has_header = len(numeric) > 1 and not numeric[0, first_value_column:].any()
    first_row = 1 if has_header else 0
    block = numeric[first_row:, first_value_column:]
    if block.size == 0:
        raise UserError(f"cannot read {path}: no numeric values below the header")
    if not block.all():
        row, column = np.argwhere(~block)[0]
        row, column = row + first_row, column + first_value_column
        raise UserError(
            f"cannot read {path}: row {row + 1}, column {column + 1} is "
            f"{text.iat[row, column]!r}, not a number"
        )
    table = values[first_row:, first_value_column:]
    if not (has_header or has_labels):
        return table
    index = text.iloc[first_row:, 0].tolist() if has_labels else None
    columns = text.iloc[0, first_value_column:].tolist() if has_header else None
    return pd.DataFrame(table, index=index, columns=columns)


def _parse_betas(text: str):
    if text in ("auto", "early_stopping"):
        return text
    try:
        return [float(part) for part in text.split(",")]
    except ValueError:
        raise UserError(
            f"--betas must be 'auto' or comma-separated numbers, got {text!r}"
        ) from None


def _parse_value(text: str):
    if text.lower() in ("true", "false"):
        return text.lower() == "true"
    for kind in (int, float):
        try:
            return kind(text)
        except ValueError:
            pass
    return text


def _model(entry, args, default_k: int, data=None, fitting: bool = False):
    """The model of ``entry``: ``--k`` (and ``--k-cols``) set its sizes, ``--param`` the rest,
    ``--prior-scale`` the empirical Beta prior of binary ``data`` (:func:`_prior_scale`; ``fitting``
    for ``latentzoo fit``).

    A family without sizes (BHC: the tree decides the number of clusters) takes ``--k`` as the
    number of clusters to cut its tree into, checked here and used when the result is saved.
    """
    import dataclasses

    settings = {}
    k = args.k
    if not entry.sizes:
        if k is not None and k < 1:
            raise UserError(f"--k must be a positive number of clusters, got {k}")
    else:
        if k is None:
            declared = entry.option("k")
            k = default_k if declared is None else declared.default
        if k < 1:
            raise UserError(f"--k ({entry.sizes[0]}) must be a positive integer, got {k}")
        settings[entry.sizes[0]] = k
    k_cols = getattr(args, "k_cols", None)
    if k_cols is not None:
        if len(entry.sizes) < 2:
            raise UserError(f"{entry.name} takes at most one size (--k), not --k-cols")
        settings[entry.sizes[1]] = k_cols
    elif len(entry.sizes) > 1:
        settings[entry.sizes[1]] = k
    fields = {f.name for f in dataclasses.fields(entry.model)}
    for item in getattr(args, "param", None) or []:
        name, sep, value = item.partition("=")
        if not sep or name not in fields:
            raise UserError(
                f"--param takes NAME=VALUE with NAME one of {', '.join(sorted(fields))}; "
                f"got {item!r}"
            )
        settings[name] = _parse_value(value)
    if getattr(args, "component", None) is not None:
        from latentzoo.models.conjugate import component_named

        if "component" not in fields:
            raise UserError(f"{entry.name} has no --component")
        settings["component"] = component_named(args.component)
    scale = _prior_scale(entry, args, fitting)
    if scale is not None and scale != 0 and data is not None:
        component = settings.get("component")
        if component is None and "component" in fields:
            component = next(f for f in dataclasses.fields(entry.model) if f.name == "component")
            component = component.default_factory()
        if component is None or not component.takes_prior_from_data:
            if args.prior_scale is not None:
                raise UserError(
                    "--prior-scale sets a Beta-Bernoulli prior from the data: "
                    f"{entry.name} with {type(component).__name__ if component else 'no'} "
                    "component takes none"
                )
        elif args.prior_scale is not None or getattr(data, "kind", None) == "binary":
            # The family's default empirical prior is for binary data; on other data the
            # component's own check says what is wrong (counts or reals for BetaBernoulli).
            try:
                settings["component"] = type(component).from_data(data.X, scale=scale)
            except ValueError as error:
                raise UserError(f"--prior-scale: {error}") from None
    try:
        return entry.model(**settings)
    except TypeError as error:
        raise UserError(f"cannot build {entry.name}: {error}") from None


def _prior_scale(entry, args, fitting: bool = False):
    """``--prior-scale``, else the family's declared default (2 for bhc), else, for ``fit`` of
    a family that takes the option without a default (the DPM, the finite mixture), bhc's: so
    that ``fit dpm`` and ``fit bhc`` on the same data start from the same empirical prior.

    ``validate`` keeps the declared default only: the DPM's validation draws data of other
    sizes, which a prior set per feature of the user's data does not fit.
    """
    from latentzoo.zoo import ZOO

    scale = getattr(args, "prior_scale", None)
    declared = entry.option("prior_scale")
    if scale is None and declared is not None:
        scale = declared.default
        if scale is None and fitting:
            scale = ZOO["bhc"].option("prior_scale").default
    return scale


def prior_line(component, scale) -> str:
    """What ``latentzoo fit`` says of the prior it used: the empirical Beta-Bernoulli prior
    (``--prior-scale``) or the component's own, with its hyperparameters.

    Examples
    --------
    >>> from latentzoo.models.conjugate import BetaBernoulli, NormalGamma
    >>> prior_line(BetaBernoulli.from_data([[1, 0], [1, 1]]), 2.0)
    "prior: BetaBernoulli from the data's feature means m, a = 2 m, b = 2 (1 - m) (--prior-scale 2; 0 keeps the component's own prior)"
    >>> prior_line(NormalGamma(), None)
    'prior: NormalGamma(mu0=0.0, kappa0=1.0, a0=1.0, b0=1.0)'
    """
    if scale and component.takes_prior_from_data:
        return (
            f"prior: {type(component).__name__} from the data's feature means m, a = {scale:g} m, "
            f"b = {scale:g} (1 - m) (--prior-scale {scale:g}; 0 keeps the component's own prior)"
        )
    return f"prior: {_described(component)}"


SCALE_NOTE_LIMIT = 3.0
"""A real feature whose mean lies more than this far from 0, or whose sd is more than this
factor from 1, is off the unit scale that the normal components' default priors assume."""


def standardized(data):
    """``data`` with every feature centred at its mean and scaled to unit sd (``--standardize``).

    The default priors of the real-valued components (``NormalGamma``,
    ``NormalInverseWishart``) are centred at 0 with unit scale; on raw glass features (Si: mean
    72.65, sd 0.77) such a prior sits far from every cluster. A constant feature is only centred.

    Examples
    --------
    >>> from latentzoo.data import Features
    >>> standardized(Features([[70.0, 1.0], [74.0, 1.0]])).X.tolist()
    [[-1.0, 0.0], [1.0, 0.0]]
    """
    import numpy as np

    if getattr(data, "kind", None) is None:
        raise UserError(f"--standardize applies to feature data, not {type(data).__name__}")
    X = np.asarray(data.X, dtype=np.float64)
    spread = X.std(axis=0)
    # Dividing a constant feature by its zero sd would make it NaN; centred, it is all zeros.
    spread = np.where(spread > 0, spread, 1.0)
    return type(data).like(data, (X - X.mean(axis=0)) / spread, kind="real")


def scale_note(data) -> str:
    """A note for real features far off the unit scale (:data:`SCALE_NOTE_LIMIT`), naming the
    furthest and ``--standardize``; "" otherwise.

    Examples
    --------
    >>> from latentzoo.data import Features
    >>> scale_note(Features([[72.0, 0.1], [73.5, 0.3]], feature_names=["Si", "K"]))[:60]
    'note: feature Si has mean 72.75, sd 0.75, far from the unit '
    >>> scale_note(Features([[0.5, -1.0], [-0.5, 1.0]]))
    ''
    """
    import numpy as np

    if getattr(data, "kind", None) != "real":
        return ""
    X = np.asarray(data.X, dtype=np.float64)
    mean, sd = X.mean(axis=0), X.std(axis=0)
    # How far off each feature is, in units of the limit: above 1 is off the unit scale (a
    # constant feature by its mean only).
    log_sd = np.log(np.where(sd > 0, sd, 1.0))
    off = np.maximum(np.abs(mean) / SCALE_NOTE_LIMIT, np.abs(log_sd) / np.log(SCALE_NOTE_LIMIT))
    worst = int(np.argmax(off))
    if off[worst] <= 1.0:
        return ""
    name = data.feature_names[worst]
    return (
        f"note: feature {name} has mean {mean[worst]:.4g}, sd {sd[worst]:.2g}, far from the unit "
        "scale a normal component's default prior assumes (mean 0, sd 1); --standardize centres "
        "and scales every feature"
    )


def shows_progress(args) -> bool:
    """Whether the command draws progress bars: not with ``--quiet``, and not when stderr is
    not a terminal.

    A bar redraws itself with a carriage return; in a log file or a pipe every refresh stays as
    a line of its own (30 KB of bar updates for one fit), so there the command says only its
    result lines.

    Examples
    --------
    >>> import argparse
    >>> shows_progress(argparse.Namespace(quiet=True))
    False
    """
    if getattr(args, "quiet", False):
        return False
    isatty = getattr(sys.stderr, "isatty", None)
    return bool(isatty and isatty())


_FLAGS = ("betas", "max_iter", "tol", "overrelax", "predictive", "chains", "draws", "tune")
"""Options with a flag of their own (``--max-iter``); any other is given as ``--option``."""


def _method_options(entry, method: str, args) -> dict:
    """The options the user gave ``method``, checked against its declared options
    (:class:`~latentzoo.inference.family.Option`): only what the user set is passed, so each
    method keeps its own defaults; ``--seed`` and progress bars go to the methods that take
    them. An option the method does not declare, or a value its declaration refuses, is a
    one-line error naming the flag.
    """
    given = {name: getattr(args, name) for name in _FLAGS}
    given["betas"] = None if args.betas is None else _parse_betas(args.betas)
    given["predictive"] = True if args.predictive else None
    options = {name: value for name, value in given.items() if value is not None}
    texts = {}
    for item in args.option or []:
        name, sep, value = item.partition("=")
        if not sep or not name.isidentifier():
            raise UserError(f"--option takes NAME=VALUE, e.g. split_merge=true; got {item!r}")
        texts[name] = value
    if method == "pymc":  # the reference's options are checked by latentzoo.fit
        options.update({name: _parse_value(text) for name, text in texts.items()})
        return {**options, "random_state": args.seed, "progressbar": shows_progress(args)}
    declared = entry.methods[method]
    for name in [*options, *texts]:
        if name not in declared.options:
            flag = name.replace("_", "-") if name in _FLAGS else name
            raise UserError(f"{entry.name} {method} does not take --{flag}")
    options = declared.validate(options)
    options.update({name: declared.option(name).parse(text) for name, text in texts.items()})
    if declared.takes_random_state:
        options["random_state"] = args.seed
    if declared.takes_progressbar:
        options["progressbar"] = shows_progress(args)
    return options


def check_writable(out, folder=False) -> Path:
    """Fail fast, before any fitting, when ``--out`` cannot be written.

    Missing parent folders are created when the result is saved, so what must be writable is the
    nearest folder that exists; a probe file is created and removed there, because permission
    bits do not tell the whole story (root, read-only file systems, network mounts).

    Parameters
    ----------
    out : str or Path
        The ``--out`` argument.
    folder : bool
        Whether ``out`` names a folder (a report) rather than a file.

    Returns
    -------
    Path

    Raises
    ------
    UserError
        One line naming ``--out`` and the path.

    Examples
    --------
    >>> import tempfile
    >>> folder = Path(tempfile.mkdtemp())
    >>> check_writable(folder / "new" / "fit.nc") == folder / "new" / "fit.nc"
    True
    >>> check_writable(folder)
    Traceback (most recent call last):
    ...
    latentzoo.cli.UserError: --out ...: cannot write the result there: it is a folder
    """
    import tempfile

    out = Path(out)
    if out.is_dir() and not folder:
        raise UserError(f"--out {out}: cannot write the result there: it is a folder")
    if out.exists() and not out.is_dir() and folder:
        raise UserError(f"--out {out}: cannot write the report there: it is a file")
    parent = out if folder else out.parent
    existing = parent.absolute()
    while not existing.exists():
        existing = existing.parent
    if not existing.is_dir():
        raise UserError(f"--out {out}: cannot write there: {existing} is a file, not a folder")
    try:
        with tempfile.TemporaryFile(dir=existing, prefix=".latentzoo-probe-"):
            pass
    except OSError as error:
        reason = error.strerror or type(error).__name__
        raise UserError(
            f"--out {out}: cannot write there: folder {existing} is not writable ({reason})"
        ) from None
    return out


def terminal_width() -> int:
    """The width ``latentzoo list`` fits its tables to: the terminal's, 100 where there is none
    (a pipe, a log; ``COLUMNS`` overrides both)."""
    import shutil

    return max(shutil.get_terminal_size(fallback=(100, 24)).columns, 40)


def _cut(text: str, width: int) -> str:
    """``text`` cut to ``width`` characters, the cut marked by ``...``."""
    return text if len(text) <= width else text[: max(width - 3, 0)] + "..."


def table_lines(frame, width: int, last_cut: bool = True) -> list[str]:
    """The rows of ``frame`` as aligned text lines of at most ``width`` characters.

    Numbers are right-aligned, text left-aligned. The last column takes what room is left (cut
    with ``...`` when ``last_cut``); a line still wider than ``width`` (a very narrow terminal)
    is cut too, so that nothing wraps into the next row.

    Examples
    --------
    >>> import pandas as pd
    >>> frame = pd.DataFrame({"name": ["toy", "glass"], "n_rows": [6, 214],
    ...                       "description": ["six documents", "forensic glass fragments"]})
    >>> print("\\n".join(table_lines(frame, 30)))
    name   n_rows  description
    toy         6  six documents
    glass     214  forensic gla...
    """
    import pandas as pd

    columns = list(frame.columns)
    cells = {name: [str(value) for value in frame[name]] for name in columns}
    numeric = {name: pd.api.types.is_numeric_dtype(frame[name]) for name in columns}
    widths = {name: max([len(name), *map(len, cells[name])]) for name in columns}
    if last_cut and len(columns) > 1:
        room = width - sum(widths[name] + 2 for name in columns[:-1])
        widths[columns[-1]] = max(min(widths[columns[-1]], room), len(columns[-1]))

    def line(values, header=False):
        parts = []
        for name, value in zip(columns, values, strict=True):
            value = _cut(value, widths[name])
            right = numeric[name] and not header
            parts.append(value.rjust(widths[name]) if right else value.ljust(widths[name]))
        return _cut("  ".join(parts).rstrip(), width)

    lines = [line(columns, header=True)]
    lines += [line(row) for row in zip(*(cells[name] for name in columns), strict=True)]
    return lines


def _models_lines(table, width: int) -> list[str]:
    """The registry (``as_table()``) fitted to ``width``: one aligned row per model and its
    description below it, wrapped (the class and notebook are in ``--wide``)."""
    import textwrap

    shown = table[["model", "data", "fast methods", "reference", "dataset"]]
    header, *rows = table_lines(shown, width, last_cut=False)
    lines = [header]
    for row, description in zip(rows, table["description"], strict=True):
        lines.append(row)
        lines += textwrap.wrap(description, width, initial_indent="    ",
                               subsequent_indent="    ")  # fmt: skip
    return lines


def _cmd_list(args):
    import textwrap

    from latentzoo.data import list_datasets
    from latentzoo.zoo import ZOO, as_table

    if args.options is not None:
        # The declared options of each method (what `fit --option NAME=VALUE` takes), each
        # wrapped to the terminal's width under its name.
        names = [args.options] if args.options else list(ZOO)
        width = terminal_width()
        for name in names:
            entry = ZOO[name] if name in ZOO else _unknown_model(name)
            for method_name, method in entry.methods.items():
                print(f"{entry.name} {method_name}:")
                for line in method.describe().splitlines():
                    print(textwrap.fill(line, width, initial_indent="  ", subsequent_indent="      ",
                                        break_long_words=False, break_on_hyphens=False))  # fmt: skip
        return 0
    datasets = list_datasets()
    if args.dataset is not None:
        return _print_dataset(datasets, args.dataset)
    if args.wide:  # every column in full, for a wide window or a script
        import pandas as pd

        with pd.option_context("display.max_colwidth", None, "display.width", None):
            print("Models:")
            print(as_table().to_string(index=False))
            print("\nDatasets:")
            print(datasets.to_string(index=False))
        return 0
    width = terminal_width()
    print("Models:")
    print("\n".join(_models_lines(as_table(), width)))
    print("\nDatasets:")
    shown = datasets[["name", "n_rows", "n_cols", "observations", "description"]]
    print("\n".join(table_lines(shown, width)))
    print()
    print(
        textwrap.fill(
            "Descriptions are cut to the terminal's width: `latentzoo list --dataset NAME` shows "
            "one dataset's description, source and licence in full, `latentzoo list --wide` every "
            "column of both tables.",
            width,
        )
    )
    return 0


def _print_dataset(datasets, name: str) -> int:
    """Every field of dataset ``name`` (``latentzoo list --dataset NAME``), each wrapped to the
    terminal's width."""
    import textwrap

    rows = datasets[datasets["name"] == name]
    if rows.empty:
        raise UserError(f"unknown dataset {name!r}; known datasets: {', '.join(datasets['name'])}")
    width = terminal_width()
    for field, value in rows.iloc[0].items():
        label = f"{field}: "
        print(textwrap.fill(str(value), width, initial_indent=label,
                            subsequent_indent=" " * 4))  # fmt: skip
    return 0


def _unknown_model(name: str):
    from latentzoo.zoo import ZOO

    raise UserError(f"unknown model {name!r}; known models: {', '.join(ZOO)}")


RESULT_SUFFIXES = {".nc": "netCDF, ArviZ InferenceData", ".npz": "numpy arrays"}
"""What ``latentzoo fit --out`` writes, by the file's suffix, for every family."""


def check_result_suffix(out) -> str:
    """``out`` if its suffix names a format ``latentzoo fit`` writes (:data:`RESULT_SUFFIXES`),
    else a one-line error naming ``--out``: a result is never written under a suffix that says
    another format (``--out fit.txt`` holding netCDF).

    Examples
    --------
    >>> check_result_suffix("tree.npz")
    'tree.npz'
    >>> check_result_suffix("tree.txt")
    Traceback (most recent call last):
    ...
    latentzoo.cli.UserError: --out tree.txt: name the file .nc (netCDF, ArviZ InferenceData) or .npz (numpy arrays), not .txt
    """
    suffix = Path(out).suffix
    if suffix not in RESULT_SUFFIXES:
        formats = " or ".join(f"{s} ({what})" for s, what in RESULT_SUFFIXES.items())
        given = f"not {suffix}" if suffix else "it has no suffix"
        raise UserError(f"--out {out}: name the file {formats}, {given}")
    return out


def save_result(
    result, path: Path, data=None, *, predictive_seed=0, model=None, **options
) -> str | None:
    """Write ``result`` once, in the format its suffix names (:func:`check_result_suffix`).

    ``.nc``: the result's netCDF, as every result writes it, with the posterior predictive check
    of the fit on ``data`` (:func:`~latentzoo.inference.fitted.save`, replicates seeded by
    ``predictive_seed``); returns why there is none, if there is none. ``.npz``: the result's
    own ``.npz`` where its ``save`` writes one (its ``save`` takes ``format``: a tree, a
    ranking), else every array of the fit keyed ``"group.name"``
    (:func:`~latentzoo.inference.fitted.result_arrays`); read it with ``numpy.load(path,
    allow_pickle=False)``.

    Examples
    --------
    >>> import tempfile
    >>> import numpy as np
    >>> class NetCDFOnly:  # a result whose save writes netCDF whatever the suffix
    ...     def save(self, path, data=None):
    ...         raise AssertionError("not asked for an .npz")
    ...     def arrays(self):
    ...         return {"params.w": np.ones(2)}
    >>> path = Path(tempfile.mkdtemp()) / "fit.npz"
    >>> save_result(NetCDFOnly(), path)
    >>> sorted(np.load(path, allow_pickle=False))
    ['params.w']
    """
    import numpy as np

    from latentzoo.inference import fitted

    if path.suffix == ".npz" and not _saves_with(result, "format"):
        # A sample, or a result whose save writes netCDF only: its arrays, written once.
        with open(path, "wb") as handle:  # np.savez adds ".npz" to a path without it
            np.savez(handle, **fitted.result_arrays(result))
        return None
    return fitted.save(result, path, data, predictive_seed=predictive_seed, model=model, **options)


def _cmd_fit(args):
    from latentzoo.inference import fitted
    from latentzoo.zoo import entry_for

    out = check_result_suffix(check_writable(args.out))
    entry = entry_for(args.model)
    if args.scheduler and args.backend != "dask":
        raise UserError("--scheduler needs --backend dask")
    shard_folder = args.backend == "dask" and args.data and Path(args.data).is_dir()
    if args.data and Path(args.data).is_dir() and not shard_folder:
        raise UserError(f"--data {args.data} is a folder: shards are read with --backend dask")
    # A shard folder stays on disk: the workers read it (more data than memory).
    data = Path(args.data) if shard_folder else _load_data(args.data or entry.dataset, entry)
    if args.standardize:
        data = standardized(data)
    model = _model(entry, args, default_k=10, data=None if shard_folder else data, fitting=True)
    method = args.method or next(iter(entry.methods))
    if method != "pymc" and method not in entry.methods:
        known = ", ".join([*entry.methods, *(["pymc"] if entry.reference == "pymc" else [])])
        raise UserError(f"unknown method {method!r} for {entry.name}; known methods: {known}")
    if args.seed < 0:
        raise UserError(f"--seed must be a non-negative integer, got {args.seed}")
    options = _method_options(entry, method, args)
    import latentzoo
    from latentzoo.inference.mcmc import ConvergenceWarning

    if not args.quiet and not shard_folder:
        _say_expected_time(entry, method, model, data, options)

    with warnings.catch_warnings(), _dask_client(args) as client:
        # Said below in the command's own line, with its exit status, rather than as a warning
        # that names a line of this file.
        warnings.filterwarnings("ignore", category=ConvergenceWarning)
        backend = {} if args.backend == "memory" else {"backend": "dask", "client": client}
        result = latentzoo.fit(model, data, method=method, **backend, **options)
    if shard_folder:
        # The counts stay in the shards: the file gets no posterior predictive (it would need them).
        data = None
    save_options = {}
    if args.k is not None and not entry.sizes and _saves_with(result, "n_clusters"):
        # A family without sizes whose result is cut when saved (a tree): --k clusters.
        save_options["n_clusters"] = args.k
    no_predictive = []  # why the file has no posterior predictive, if it has none

    def write(path):
        no_predictive.append(save_result(result, path, data, predictive_seed=args.seed,
                                         model=model, **save_options))  # fmt: skip

    try:
        write_atomically(out, write)
    except ValueError as error:
        if not save_options:
            raise
        raise UserError(f"--k {args.k}: {error}") from None
    figure = _save_figure(result, data, out)
    if not args.quiet:
        also = f" and {figure}" if figure else ""
        on = f"the shards in {args.data}" if shard_folder else data
        print(f"fitted {_described(_as_run(model, method))} with {method} on {on}; saved to "
              f"{out}{also}")  # fmt: skip
        component = getattr(model, "component", None)
        if component is not None:
            print(prior_line(component, _prior_scale(entry, args, fitting=True)))
            if args.standardize:
                print("features standardised: each centred at its mean and scaled to unit sd")
            elif scale_note(data):
                print(scale_note(data))
        if not fitted.is_sample(result):  # latentzoo.fit printed a sample's diagnostic line
            for line in fitted.summary_lines(result):
                print(line)
        if no_predictive and no_predictive[-1]:
            print(f"no posterior predictive in {out}: {no_predictive[-1]}")
    if not fitted.is_sample(result):
        return 0
    # Said even with --quiet, once the result is saved (so that an error or Ctrl-C stays the only
    # line): the verdict recorded in the sample, the one latentzoo.fit warns from.
    from latentzoo.inference.mcmc import convergence

    verdict = convergence(result)
    line = _convergence_line(verdict, args.require_converged)
    if line:
        print(line, file=sys.stderr)
    return EXIT_NOT_CONVERGED if args.require_converged and not verdict.converged else 0


@contextmanager
def _dask_client(args):
    """The ``distributed.Client`` of ``--scheduler ADDRESS`` (closed after; the cluster stays),
    or None: ``latentzoo.fit`` then starts a local cluster for ``--backend dask``."""
    if not getattr(args, "scheduler", None):
        yield None
        return
    try:
        from distributed import Client
    except ImportError:
        raise UserError(
            "--backend dask needs dask[distributed]: pip install 'latentzoo[dask]'"
        ) from None
    try:
        client = Client(args.scheduler, timeout="10s")
    except (OSError, ValueError) as error:
        raise UserError(f"cannot reach the Dask scheduler {args.scheduler}: {error}") from None
    with client:
        yield client


def _say_expected_time(entry, method: str, model, data, options) -> None:
    """Before a fit whose time grows as ``N^2`` (greedy BHC) on many items, its expected time
    on stderr (:mod:`latentzoo.long_jobs`: timed on a subsample, extrapolated) when it exceeds
    a minute, with the faster method to use instead."""
    from latentzoo import long_jobs

    declared = entry.methods[method]
    n_items = getattr(data, "n_items", 0)
    if declared.time_order < 2 or n_items < long_jobs.CALIBRATE_FROM_ITEMS:
        return
    import latentzoo

    quiet = {**options, **({"progressbar": False} if "progressbar" in options else {})}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the subsample's own warnings are not the fit's
        estimate = long_jobs.expected_seconds(
            lambda sample: latentzoo.fit(model, sample, method=method, **quiet),
            data,
            order=declared.time_order,
        )
    if estimate.seconds > long_jobs.SAY_ABOVE_SECONDS:
        line = estimate.line(f"{entry.name} {method}", declared.faster)
        print(line, file=sys.stderr, flush=True)


EXIT_NOT_CONVERGED = 3
"""Exit status of ``latentzoo fit --require-converged`` for a sample that is not converged."""

ONE_CHAIN = "--chains 1: R-hat needs at least 2 chains"


def _convergence_line(verdict, required: bool) -> str:
    """The loud line of an unconverged (or unchecked) sample, or "" for a converged one.

    Examples
    --------
    >>> from latentzoo.inference.mcmc import Convergence
    >>> stuck = Convergence("not converged", 2, 200, 1.412, "coassign", 9.0, "coassign", 50.0,
    ...                     "loglik", "run longer chains")
    >>> _convergence_line(stuck, False)[:61]
    'latentzoo: NOT CONVERGED: max R-hat 1.412 > 1.01 (coassign), '
    >>> _convergence_line(stuck._replace(status="converged"), True)
    ''
    """
    if verdict.status == "converged":
        return ""
    status = EXIT_NOT_CONVERGED if required else 0
    if verdict.status == "not checked":
        why = (
            f"{ONE_CHAIN}, so convergence is not checked; use --chains 2 or more"
            if verdict.chains < 2
            else "too few draws to check convergence; use --draws 4 or more"
        )
        return f"latentzoo: warning: {why} (exit status {status})"
    one_chain = f"; {ONE_CHAIN}, use --chains 2 or more" if verdict.chains < 2 else ""
    text = (
        f"latentzoo: {verdict.headline()} (rule: R-hat <= 1.01, bulk and tail ESS >= 100 per "
        f"chain, on the label-invariant quantities){one_chain}; try: {verdict.advice}. The result is saved; exit status {status}"
        + ("" if required else " (--require-converged makes it 3)")
    )
    if sys.stderr.isatty():  # bold, as the report's **NOT CONVERGED**
        text = f"\033[1m{text}\033[0m"
    return text


def _as_run(model, method: str):
    """``model`` as ``method`` runs it: priors left unset at that method's defaults, as
    :func:`latentzoo.fit` resolves them (``model.for_method``), so that what is printed is what
    ran (an aspect model's Gibbs fit uses ``alpha = 0.1``, not the MAP default 1.1).

    Examples
    --------
    >>> from latentzoo.models import AspectModel
    >>> _as_run(AspectModel(5), "gibbs")
    AspectModel(n_components=5, alpha=0.1, eta=0.01)
    """
    return model.for_method(method) if hasattr(model, "for_method") else model


def _described(model, width: int = 100) -> str:
    """``repr(model)``, cut to ``width`` characters; a long component (a prior set from the
    data holds arrays) is shortened to ``Name(...)``, so the rest of the model stays in view
    (the ``prior:`` line says the component's prior).

    Examples
    --------
    >>> from latentzoo.models import DirichletProcessMixture
    >>> from latentzoo.models.conjugate import BetaBernoulli
    >>> _described(DirichletProcessMixture(component=BetaBernoulli.from_data([[1, 0, 1]] * 3)))
    'DirichletProcessMixture(alpha=1.0, component=BetaBernoulli(...), pymc_truncation=20)'
    """
    text = repr(model)
    component = getattr(model, "component", None)
    if component is not None and len(text) > width:
        text = text.replace(repr(component), f"{type(component).__name__}(...)")
    return text if len(text) <= width else text[: width - 3] + "..."


def _save_figure(result, data, out: Path):
    """The family's picture of the fit (its ``figure(data)``), as a PNG next to ``out``."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from latentzoo.inference import fitted

    drawing = fitted.figure(result, data)
    if drawing is None:
        return None
    figure = out.with_suffix(".png")
    try:
        write_atomically(figure, lambda path: drawing.savefig(path, format="png", dpi=110))
    finally:
        plt.close(drawing)
    return figure


def _cmd_validate(args):
    import latentzoo
    from latentzoo.report import write_validation_report
    from latentzoo.zoo import entry_for

    check_writable(args.out, folder=True)
    entry = entry_for(args.model)
    data = _load_data(args.data or entry.dataset, entry)
    model = _model(entry, args, default_k=2, data=data)
    comparison = latentzoo.validate(
        model, data, quick=args.quick, random_state=args.seed, progressbar=shows_progress(args),
        data_name=args.data or entry.dataset,
    )  # fmt: skip
    path = write_validation_report(comparison, args.out, title=f"Validation of {entry.name}")
    print(f"{comparison.verdict()} (report: {path})")
    return 0 if comparison.passed else 1


def _query_data(spec: str):
    """The ``--data`` of ``latentzoo query``: a dataset name or a file, in the container
    Bayesian Sets declare (``Features``)."""
    from latentzoo.data import list_datasets, load
    from latentzoo.models.bayesian_sets import BayesianSets

    path = Path(spec)
    if path.suffix in (".csv", ".txt", ".tsv"):
        if not path.exists():
            raise UserError(f"data file {spec} does not exist")
        table = read_table(path, delimiter="\t" if path.suffix == ".tsv" else ",")
        return BayesianSets.data_type(table)
    if spec not in set(list_datasets()["name"]):
        raise UserError(
            f"unknown data {spec!r}: give a dataset name ({', '.join(list_datasets()['name'])}) "
            "or a .csv file"
        )
    wanted = "Bayesian Sets (e.g. on movielens, newsgroups4, digits, images) query"
    return _of_container(load(spec), BayesianSets.data_type, f"dataset {spec!r}", wanted)


def _binarised(data, how: str):
    """``data`` as binary features for the Beta-Bernoulli score, and a note of what was done."""
    from latentzoo.data import Features
    from latentzoo.inference.bayesian_sets import binarize

    if how == "auto":
        how = {"binary": "none", "counts": "presence", "real": "skewness"}[data.kind]
    if how == "none":
        if data.kind != "binary":
            raise UserError(f"--binarize none: the data are {data.kind}, not binary")
        return data, ""
    if how == "presence":
        binary = Features((data.X > 0).astype(float), labels=data.labels, feature_names=data.feature_names,
                          item_names=data.item_names, kind="binary")  # fmt: skip
        return binary, "features binarised as presence (x > 0)"
    return binarize(data), "features binarised by skewness at the 80th percentile (thesis 5.2.2)"


def _saves_with(result, name: str) -> bool:
    """Whether the result's own ``save`` takes the option ``name`` (a sample's has none).

    Examples
    --------
    >>> class Cut:
    ...     def save(self, path, data=None, n_clusters=None): ...
    >>> _saves_with(Cut(), "n_clusters"), _saves_with(object(), "n_clusters")
    (True, False)
    """
    import inspect

    save = getattr(type(result), "save", None)
    return save is not None and name in inspect.signature(save).parameters


def _cmd_query(args):
    from latentzoo.inference.bayesian_sets import BayesianSetsIndex
    from latentzoo.models.bayesian_sets import BayesianSets

    if args.top < 1:
        raise UserError(f"--top must be a positive integer, got {args.top}")
    if args.features < 0:
        raise UserError(f"--features must be a non-negative integer, got {args.features}")
    out = None if args.out is None else check_result_suffix(check_writable(args.out))
    data, note = _binarised(_query_data(args.data), args.binarize)
    wanted = [part.strip() for part in (args.items or "").split(",") if part.strip()]
    wanted += list(args.item or [])
    if not wanted:
        raise UserError("give the query with --items a,b,c or --item NAME (repeatable)")
    names = {str(name): i for i, name in enumerate(data.item_names)}
    query = []
    for item in wanted:
        if item in names:
            query.append(names[item])
        elif item.isdigit() and int(item) < data.n_items:
            query.append(int(item))
        else:
            close = [n for n in names if item.lower() in n.lower()][:3]
            hint = f"; did you mean {', '.join(repr(c) for c in close)}?" if close else ""
            raise UserError(f"--items: no item named {item!r} in {args.data}{hint}")
    try:
        model = BayesianSets(scale=args.scale)
        result = BayesianSetsIndex(data, model).query(query)
    except ValueError as error:
        raise UserError(str(error).splitlines()[0]) from None
    top = result.top(args.top, n_features=args.features)
    shown = [str(data.item_names[i]) for i in query]
    print(f"Bayesian Sets on {args.data} ({data.n_items} items; kappa = {args.scale:g})" +
          (f"; {note}" if note else ""))  # fmt: skip
    print("query: " + "; ".join(shown))
    labels = None
    if data.labels is not None:
        labels = dict(zip(map(str, data.item_names), data.labels, strict=True))
    width = max(len(name) for name, _, _ in top) if top else 4
    for rank, (name, score, features) in enumerate(top, 1):
        label = f"  [{labels[name]}]" if labels is not None else ""
        strongest = f"  <- {', '.join(features)}" if features else ""
        print(f"{rank:>3}. {name:<{width}}  {score:8.3f}{label}{strongest}")
    if out is not None:
        # Every item's score, as `latentzoo fit bayesian_sets` saves it (RetrievalResult.load).
        write_atomically(out, lambda path: save_result(result, path))
        print(f"saved the scores of all {data.n_items} items to {out}")
    return 0


def _cmd_demo(args):
    check_writable(args.out, folder=True)
    from latentzoo.report import run_demo

    comparison = run_demo(args.out, quick=args.quick, progressbar=shows_progress(args))
    verdict = comparison.verdict()
    warning = getattr(comparison, "headline_warning", "")
    if warning:
        # One line, as the report's bold row: the headline perplexity is not the posterior's.
        verdict += f"; WARNING: headline Gibbs run {warning}"
    print(verdict)
    # The exit status is the validation's: an unconverged headline run is reported, not an error.
    return 0 if comparison.passed else 1


class OneLineErrorParser(argparse.ArgumentParser):
    """An ``ArgumentParser`` whose errors are one line, as every other error of the command.

    argparse prints its usage block (2-9 lines) before the message; the block is what ``--help``
    shows, so the line points there instead. Subcommands inherit the class (argparse builds
    them with the parent's type), so ``latentzoo fit --k abc`` says
    ``latentzoo fit: error: argument --k: invalid int value: 'abc' (see latentzoo fit --help)``.

    Examples
    --------
    >>> import contextlib, io
    >>> parser = OneLineErrorParser(prog="latentzoo demo")
    >>> _ = parser.add_argument("--top", type=int)
    >>> with contextlib.redirect_stderr(io.StringIO()) as err:
    ...     try:
    ...         parser.parse_args(["--top", "x"])
    ...     except SystemExit as stop:
    ...         print(stop.code)
    2
    >>> print(err.getvalue(), end="")
    latentzoo demo: error: argument --top: invalid int value: 'x' (see latentzoo demo --help)
    """

    def error(self, message):
        message = " ".join(message.split())  # argparse may wrap a long message
        self.exit(2, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


def build_parser() -> argparse.ArgumentParser:
    parser = OneLineErrorParser(
        prog="latentzoo",
        description="Latent-class and Bayesian clustering models: fast inference vs PyMC.",
    )
    sub = parser.add_subparsers(dest="command", required=True)
    listing = sub.add_parser("list", help="models, their methods and the datasets")
    listing.add_argument(
        "--options", nargs="?", const="", metavar="MODEL",
        help="the declared options of every method (of MODEL's methods), with their defaults",
    )  # fmt: skip
    listing.add_argument(
        "--dataset", metavar="NAME", help="one dataset in full: sizes, description, source, licence"
    )
    listing.add_argument(
        "--wide", action="store_true", help="every column of both tables, uncut (wider than a "
        "terminal; the default fits the terminal's width)",
    )  # fmt: skip

    fit = sub.add_parser(
        "fit", help="fit a model and save the result as netCDF",
        epilog="Exit status: 0 when the result is saved (a sampler's NOT CONVERGED line on stderr "
        "does not change it unless --require-converged: then 3); 2 for bad input; 130 on Ctrl-C.",
    )  # fmt: skip
    fit.add_argument("model")
    fit.add_argument("--data", help="dataset name or a .npz/.csv file (default: the model's)")
    fit.add_argument(
        "--k", type=int, help="number of components or row clusters (default 10; the family may "
        "declare another); a family without sizes (a tree): also save its cut into K clusters",
    )  # fmt: skip
    fit.add_argument("--k-cols", type=int, help="number of column clusters (two-sided models)")
    fit.add_argument(
        "--param",
        action="append",
        metavar="NAME=VALUE",
        help="a model hyperparameter, e.g. alpha=2",
    )
    fit.add_argument(
        "--component", help="mixture component: beta_bernoulli, dirichlet_multinomial, "
        "normal_gamma or normal_inverse_wishart",
    )  # fmt: skip
    fit.add_argument(
        "--prior-scale", type=float, metavar="KAPPA", help="Beta-Bernoulli prior from the data "
        "mean m: a = KAPPA m, b = KAPPA (1 - m) (Heller 2007, sec. 3.5; default 2 for bhc, "
        "0 keeps the component's own prior)",
    )  # fmt: skip
    fit.add_argument(
        "--standardize", action="store_true", help="centre every feature at its mean and scale it "
        "to unit sd before fitting (real-valued components: their default priors are centred at 0 "
        "with unit scale)",
    )  # fmt: skip
    fit.add_argument("--method", help="see `latentzoo list` (default: the first listed); or pymc")
    fit.add_argument("--betas", help="annealing schedule: 'auto' or e.g. 0.5,0.8,1")
    fit.add_argument("--max-iter", type=int)
    fit.add_argument("--tol", type=float)
    fit.add_argument("--overrelax", type=float)
    fit.add_argument("--predictive", action="store_true")
    fit.add_argument("--chains", type=int)
    fit.add_argument("--draws", type=int)
    fit.add_argument("--tune", type=int)
    fit.add_argument(
        "--option", action="append", metavar="NAME=VALUE",
        help="another option of the method, e.g. split_merge=true or sample_alpha=true "
        "(`latentzoo list --options MODEL` lists them)",
    )  # fmt: skip
    fit.add_argument("--seed", type=int, default=0)
    fit.add_argument(
        "--backend", choices=("memory", "dask"), default="memory", help="dask: annealed EM over "
        "row blocks on a Dask cluster (aspect, one_sided; an explicit --betas); --data may then "
        "be a folder of .npz shards, read from disk (more data than memory)",
    )  # fmt: skip
    fit.add_argument(
        "--scheduler", metavar="ADDRESS", help="with --backend dask: the scheduler of a running "
        "cluster, e.g. tcp://10.0.0.5:8786 (default: a local cluster of 2 worker processes)",
    )  # fmt: skip
    fit.add_argument(
        "--require-converged", action="store_true", help="exit with status 3 when a sampler's "
        "chains have not converged (R-hat > 1.01 or bulk/tail ESS < 100 per chain) or could not "
        "be checked (one chain); the result is saved either way. Without it an unconverged "
        "sample exits 0 after a NOT CONVERGED line on stderr",
    )  # fmt: skip
    fit.add_argument(
        "--out",
        required=True,
        help="output file: .nc (netCDF, ArviZ InferenceData) or .npz (numpy arrays: the "
        "result's own, or every array of the fit keyed group.name); any other suffix is refused. "
        "A .png next to it where the family draws its fit (a dendrogram, a topic tree)",
    )
    fit.add_argument("--quiet", action="store_true")

    val = sub.add_parser("validate", help="compare the fast sampler with the PyMC reference")
    val.add_argument("model")
    val.add_argument("--data")
    val.add_argument("--k", type=int, help="number of components (default 2)")
    val.add_argument("--k-cols", type=int)
    val.add_argument("--param", action="append", metavar="NAME=VALUE")
    val.add_argument("--component")
    val.add_argument(
        "--prior-scale", type=float, metavar="KAPPA", help="Beta-Bernoulli prior from the data "
        "mean, as for fit (default 2 for bhc)",
    )  # fmt: skip
    val.add_argument("--quick", action="store_true")
    val.add_argument("--seed", type=int, default=0)
    val.add_argument("--out", default="report/validate")
    val.add_argument("--quiet", action="store_true")

    query = sub.add_parser(
        "query", help="Bayesian Sets: the items that best complete a set (Heller 2007, ch. 4)"
    )
    query.add_argument("--data", required=True, help="a feature dataset name or a .csv file")
    query.add_argument("--items", help="the query: comma-separated item names or row numbers")
    query.add_argument(
        "--item", action="append", metavar="NAME", help="one query item (repeatable; for names "
        "with commas)",
    )  # fmt: skip
    query.add_argument("--top", type=int, default=10, help="items to print (default 10)")
    query.add_argument(
        "--features", type=int, default=3, help="strongest features shown per item (default 3)"
    )
    query.add_argument(
        "--scale", type=float, default=2.0, help="kappa of the empirical Beta prior (default 2)"
    )
    query.add_argument(
        "--binarize", choices=("auto", "none", "presence", "skewness"), default="auto",
        help="how non-binary data are made binary (auto: counts by presence, real values by "
        "skewness, thesis 5.2.2)",
    )  # fmt: skip
    query.add_argument(
        "--out", help="also save every item's score: .nc (netCDF, ArviZ InferenceData) or .npz "
        "(numpy arrays); RetrievalResult.load reads it back",
    )  # fmt: skip

    demo = sub.add_parser("demo", help="the main job: fit Reuters and validate against PyMC")
    demo.add_argument("--out", default="report")
    demo.add_argument("--quick", action="store_true")
    demo.add_argument("--quiet", action="store_true")
    add_segment_parser(sub)
    return parser


def write_atomically(out: Path, write) -> None:
    """``write(path)`` into a temporary file next to ``out``, then rename it to ``out``.

    An interrupted or failed write leaves ``out`` as it was (absent or the previous result) rather
    than a truncated netCDF that opens as an empty object.

    Examples
    --------
    >>> import tempfile
    >>> out = Path(tempfile.mkdtemp()) / "result.txt"
    >>> write_atomically(out, lambda path: path.write_text("done"))
    >>> out.read_text(), sorted(p.name for p in out.parent.iterdir())
    ('done', ['result.txt'])
    """
    out.parent.mkdir(parents=True, exist_ok=True)
    # The suffix stays last, so that a writer choosing its format by suffix (.npz) still can.
    partial = out.with_name(f".{out.stem}.partial{out.suffix}")
    try:
        write(partial)
        os.replace(partial, out)
    finally:
        if partial.exists():
            partial.unlink()


def main(argv=None) -> int:
    """Entry point of the ``latentzoo`` console script."""
    parser = build_parser()
    args, unknown = parser.parse_known_args(argv)
    if unknown:
        # Said by the subcommand whose arguments they are, so that its --help is the one named.
        (commands_action,) = (
            a for a in parser._actions if isinstance(a, argparse._SubParsersAction)
        )
        commands_action.choices[args.command].error(f"unrecognized arguments: {' '.join(unknown)}")
    if getattr(args, "quiet", False):
        os.environ.setdefault("TQDM_DISABLE", "1")
        warnings.simplefilter("ignore")
    commands = {
        "list": _cmd_list,
        "fit": _cmd_fit,
        "validate": _cmd_validate,
        "query": _cmd_query,
        "demo": _cmd_demo,
        "segment": cmd_segment,
    }
    try:
        return commands[args.command](args)
    except (UserError, ValueError, TypeError, OSError, FloatingPointError) as error:
        # TypeError: an option the method does not take; FloatingPointError: a fit that could
        # not stay finite. Both are the user's settings, not a crash.
        message = str(error).splitlines()[0] if str(error) else type(error).__name__
        print(f"latentzoo: error: {message}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("latentzoo: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    raise SystemExit(main())
