"""The ``latentzoo`` command: ``list``, ``fit``, ``validate``, ``demo``.

Errors caused by the user's input are one line on stderr with exit code 2, never a traceback.
"""

from __future__ import annotations

import argparse
import os
import re
import sys
import warnings
from pathlib import Path

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
        if not hasattr(container, "from_npz"):
            raise UserError(f"{entry.name} takes {container.__name__} data: give a .csv file")
        return container.from_npz(path)
    if path.suffix in (".csv", ".txt", ".tsv"):
        import numpy as np

        delimiter = "\t" if path.suffix == ".tsv" else ","
        try:
            values = np.loadtxt(path, delimiter=delimiter, ndmin=2)
        except ValueError as error:
            raise UserError(f"cannot read numbers from {spec}: {error}") from None
        return container(values)
    if spec in set(list_datasets()["name"]):
        data = load(spec)
        if not isinstance(data, container):
            raise UserError(
                f"dataset {spec!r} holds {type(data).__name__} data, but {entry.name} takes "
                f"{container.__name__} data"
            )
        return data
    raise UserError(
        f"unknown data {spec!r}: give a dataset name ({', '.join(list_datasets()['name'])}) "
        "or a .npz/.csv file"
    )


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


def _model(entry, args):
    """The model of ``entry``: ``--k`` (and ``--k-cols``) set its sizes, ``--param`` the rest."""
    import dataclasses

    settings = {}
    if args.k is not None:
        settings[entry.sizes[0]] = args.k
    k_cols = getattr(args, "k_cols", None)
    if k_cols is not None:
        if len(entry.sizes) < 2:
            raise UserError(f"{entry.name} takes one size (--k), not --k-cols")
        settings[entry.sizes[1]] = k_cols
    elif len(entry.sizes) > 1 and args.k is not None:
        settings[entry.sizes[1]] = args.k
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
    try:
        return entry.model(**settings)
    except TypeError as error:
        raise UserError(f"cannot build {entry.name}: {error}") from None


def _call(entry, method, model, data, options):
    """Run a fast method with the options the user gave; an option it does not take is an error."""
    import latentzoo

    try:
        return latentzoo.fit(model, data, method=method, **options)
    except TypeError as error:
        match = re.search(r"unexpected keyword argument '(\w+)'", str(error))
        if match is None:
            raise
        name = match.group(1)
        raise UserError(f"{entry.name} {method} does not take --{name.replace('_', '-')}") from None


def _cmd_list(args):
    from latentzoo.data import list_datasets
    from latentzoo.zoo import as_table

    print("Models:")
    print(as_table().to_string(index=False))
    print("\nDatasets:")
    print(
        list_datasets()[["name", "n_rows", "n_cols", "observations", "source"]].to_string(
            index=False
        )
    )
    return 0


def _cmd_fit(args):
    from latentzoo.zoo import entry_for

    entry = entry_for(args.model)
    data = _load_data(args.data or entry.dataset, entry)
    model = _model(entry, args)
    method = args.method or next(iter(entry.methods))
    # Only what the user set is passed: each method keeps its own defaults.
    given = {
        "betas": None if args.betas is None else _parse_betas(args.betas),
        "max_iter": args.max_iter,
        "tol": args.tol,
        "overrelax": args.overrelax,
        "predictive": True if args.predictive else None,
        "chains": args.chains,
        "draws": args.draws,
        "tune": args.tune,
    }
    options = {name: value for name, value in given.items() if value is not None}
    for item in args.option or []:
        name, sep, value = item.partition("=")
        if not sep or not name.isidentifier():
            raise UserError(f"--option takes NAME=VALUE, e.g. split_merge=true; got {item!r}")
        options[name] = _parse_value(value)
    options.update(random_state=args.seed, progressbar=not args.quiet)
    result = _call(entry, method, model, data, options)
    idata = result.to_inference_data() if hasattr(result, "to_inference_data") else result
    out = Path(args.out)
    write_atomically(out, lambda path: idata.to_netcdf(str(path)))
    if not args.quiet:
        print(f"fitted {model} with {method} on {data}; saved to {out}")
        if hasattr(result, "trace"):
            last = result.trace.iloc[-1]
            print(
                f"final beta {last['beta']:.3g}, log-likelihood {last['log_likelihood']:.1f}, "
                f"converged: {result.converged}"
            )
    return 0


def _cmd_validate(args):
    import latentzoo
    from latentzoo.report import write_validation_report
    from latentzoo.zoo import entry_for

    entry = entry_for(args.model)
    data = _load_data(args.data or entry.dataset, entry)
    model = _model(entry, args)
    comparison = latentzoo.validate(
        model, data, quick=args.quick, random_state=args.seed, progressbar=not args.quiet
    )
    path = write_validation_report(comparison, args.out, title=f"Validation of {entry.name}")
    print(f"{comparison.verdict()} (report: {path})")
    return 0 if comparison.passed else 1


def _cmd_demo(args):
    from latentzoo.report import run_demo

    comparison = run_demo(args.out, quick=args.quick, progressbar=not args.quiet)
    print(comparison.verdict())
    return 0 if comparison.passed else 1


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="latentzoo",
        description="Latent-class and Bayesian clustering models: fast inference vs PyMC.",
    )
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("list", help="models, their methods and the datasets")

    fit = sub.add_parser("fit", help="fit a model and save the result as netCDF")
    fit.add_argument("model")
    fit.add_argument("--data", help="dataset name or a .npz/.csv file (default: the model's)")
    fit.add_argument("--k", type=int, default=10, help="number of components or row clusters")
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
        help="another option of the method, e.g. split_merge=true or sample_alpha=true",
    )  # fmt: skip
    fit.add_argument("--seed", type=int, default=0)
    fit.add_argument("--out", required=True, help="output .nc file")
    fit.add_argument("--quiet", action="store_true")

    val = sub.add_parser("validate", help="compare the fast sampler with the PyMC reference")
    val.add_argument("model")
    val.add_argument("--data")
    val.add_argument("--k", type=int, default=2)
    val.add_argument("--k-cols", type=int)
    val.add_argument("--param", action="append", metavar="NAME=VALUE")
    val.add_argument("--component")
    val.add_argument("--quick", action="store_true")
    val.add_argument("--seed", type=int, default=0)
    val.add_argument("--out", default="report/validate")
    val.add_argument("--quiet", action="store_true")

    demo = sub.add_parser("demo", help="the main job: fit Reuters and validate against PyMC")
    demo.add_argument("--out", default="report")
    demo.add_argument("--quick", action="store_true")
    demo.add_argument("--quiet", action="store_true")
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
    partial = out.with_name(f".{out.name}.partial")
    try:
        write(partial)
        os.replace(partial, out)
    finally:
        if partial.exists():
            partial.unlink()


def main(argv=None) -> int:
    """Entry point of the ``latentzoo`` console script."""
    args = build_parser().parse_args(argv)
    if getattr(args, "quiet", False):
        os.environ.setdefault("TQDM_DISABLE", "1")
        warnings.simplefilter("ignore")
    commands = {"list": _cmd_list, "fit": _cmd_fit, "validate": _cmd_validate, "demo": _cmd_demo}
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
