"""The ``latentzoo`` command: ``list``, ``fit``, ``validate``, ``demo``.

Errors caused by the user's input are one line on stderr with exit code 2, never a traceback.
"""

from __future__ import annotations

import argparse
import os
import sys
import warnings
from pathlib import Path

__all__ = ["main"]


class UserError(Exception):
    """A problem with what the user asked for: printed as one line."""


def _load_data(spec: str):
    from latentzoo.data import CoOccurrence, list_datasets, load

    path = Path(spec)
    if path.suffix == ".npz":
        if not path.exists():
            raise UserError(f"data file {spec} does not exist")
        return CoOccurrence.from_npz(path)
    if path.suffix in (".csv", ".txt", ".tsv"):
        import numpy as np

        if not path.exists():
            raise UserError(f"data file {spec} does not exist")
        delimiter = "\t" if path.suffix == ".tsv" else ","
        try:
            counts = np.loadtxt(path, delimiter=delimiter, ndmin=2)
        except ValueError as error:
            raise UserError(f"cannot read counts from {spec}: {error}") from None
        return CoOccurrence(counts)
    if spec in set(list_datasets()["name"]):
        return load(spec)
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


def _model(entry, args):
    """The model of ``entry`` at the sizes given by ``--k`` (and ``--k-cols``)."""
    import inspect

    sizes = {entry.size_argument: args.k}
    two_sizes = "n_col_clusters" in inspect.signature(entry.model).parameters
    k_cols = getattr(args, "k_cols", None)
    if k_cols is not None and not two_sizes:
        raise UserError(f"{entry.name} takes one size (--k), not --k-cols")
    if two_sizes:
        sizes["n_col_clusters"] = args.k if k_cols is None else k_cols
    return entry.model(**sizes)


def _accepted(entry, method, options):
    """Keep the options that the method's function takes (the EM variants differ slightly)."""
    import inspect

    from latentzoo.api import _resolve

    if method not in entry.methods:
        return options
    parameters = inspect.signature(_resolve(entry.methods[method])).parameters
    unknown = [name for name in options if name not in parameters and name != "progressbar"]
    if "predictive" in unknown:
        raise UserError(f"--predictive is not available for {entry.name} {method}")
    return {name: value for name, value in options.items() if name in parameters}


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
    import latentzoo
    from latentzoo.zoo import entry_for

    entry = entry_for(args.model)
    data = _load_data(args.data or entry.dataset)
    model = _model(entry, args)
    progress = not args.quiet
    if args.method in ("gibbs", "pymc"):
        options = dict(chains=args.chains, draws=args.draws, tune=args.tune, progressbar=progress)
    else:
        options = dict(
            betas=_parse_betas(args.betas), max_iter=args.max_iter, tol=args.tol,
            overrelax=args.overrelax, predictive=args.predictive, progressbar=progress,
        )  # fmt: skip
        if not args.predictive:
            options.pop("predictive")
        options = _accepted(entry, args.method, options)
    result = latentzoo.fit(model, data, method=args.method, random_state=args.seed, **options)
    idata = result.to_inference_data() if hasattr(result, "to_inference_data") else result
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    idata.to_netcdf(str(out))
    if not args.quiet:
        print(f"fitted {entry.name} (K={args.k}) with {args.method} on {data}; saved to {out}")
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
    data = _load_data(args.data or entry.dataset)
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
    fit.add_argument("--data", help="dataset name or .npz/.csv counts file")
    fit.add_argument("--k", type=int, default=10, help="number of components or row clusters")
    fit.add_argument("--k-cols", type=int, help="number of column clusters (two-sided models)")
    fit.add_argument("--method", default="annealed_em", help="see `latentzoo list`; or pymc")
    fit.add_argument("--betas", default="auto", help="'auto' or e.g. 0.5,0.8,1")
    fit.add_argument("--max-iter", type=int, default=200)
    fit.add_argument("--tol", type=float, default=1e-5)
    fit.add_argument("--overrelax", type=float, default=1.0)
    fit.add_argument("--predictive", action="store_true")
    fit.add_argument("--chains", type=int, default=4)
    fit.add_argument("--draws", type=int, default=500)
    fit.add_argument("--tune", type=int, default=200)
    fit.add_argument("--seed", type=int, default=0)
    fit.add_argument("--out", required=True, help="output .nc file")
    fit.add_argument("--quiet", action="store_true")

    val = sub.add_parser("validate", help="compare the fast sampler with the PyMC reference")
    val.add_argument("model")
    val.add_argument("--data")
    val.add_argument("--k", type=int, default=2)
    val.add_argument("--k-cols", type=int)
    val.add_argument("--quick", action="store_true")
    val.add_argument("--seed", type=int, default=0)
    val.add_argument("--out", default="report/validate")
    val.add_argument("--quiet", action="store_true")

    demo = sub.add_parser("demo", help="the main job: fit Reuters and validate against PyMC")
    demo.add_argument("--out", default="report")
    demo.add_argument("--quick", action="store_true")
    demo.add_argument("--quiet", action="store_true")
    return parser


def main(argv=None) -> int:
    """Entry point of the ``latentzoo`` console script."""
    args = build_parser().parse_args(argv)
    if getattr(args, "quiet", False):
        os.environ.setdefault("TQDM_DISABLE", "1")
        warnings.simplefilter("ignore")
    commands = {"list": _cmd_list, "fit": _cmd_fit, "validate": _cmd_validate, "demo": _cmd_demo}
    try:
        return commands[args.command](args)
    except (UserError, ValueError, OSError) as error:
        message = str(error).splitlines()[0] if str(error) else type(error).__name__
        print(f"latentzoo: error: {message}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    raise SystemExit(main())
