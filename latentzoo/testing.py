"""The common checks every registered family keeps: ``check_model`` and ``check_method``.

Like scikit-learn's ``check_estimator``: a family joins the checks just by being registered in
:mod:`latentzoo.zoo`. :func:`model_checks` lists the named checks of a family's model, data
container, PyMC reference and command line; :func:`method_checks` those of one fast method
(option validation, memory guard, determinism, round trips). Each check is a callable that raises
``AssertionError`` saying which promise broke and on what input. A family skips a check only with
a reason recorded in the registry (:attr:`latentzoo.zoo.Family.skipped_checks`, check name ->
reason); :func:`skip_reason` reads it.

The checks run on small data drawn from the model's own simulator (:func:`small_problem`), so the
whole set takes seconds per family. ``tests/test_common.py`` runs every check of every registered
family and method as its own test.

Examples
--------
>>> from latentzoo.zoo import ZOO
>>> names = [name for name, _ in model_checks(ZOO["aspect"])]
>>> "data:nan" in names and "pymc:density" in names
True
>>> "determinism" in [name for name, _ in method_checks(ZOO["aspect"], "gibbs")]
True
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import inspect
import io
import itertools
import math
import os
import re
import tempfile
import typing
import warnings
from collections.abc import Callable, Iterator
from pathlib import Path
from unittest import mock

import numpy as np
import scipy.sparse as sp

__all__ = [
    "check_method",
    "bad_option_values",
    "check_model",
    "method_checks",
    "method_kind",
    "method_options",
    "model_checks",
    "quick_options",
    "result_arrays",
    "run_method",
    "skip_reason",
    "small_model",
    "small_problem",
]

Check = Callable[[], None]

SMALL_SIZES = {
    "n_docs": 6,
    "n_words": 8,
    "doc_length": 25,
    "n_tokens": 150,
    "n_rows": 6,
    "n_cols": 8,
    "n_items": 10,
    "n_features": 4,
}
"""Sizes given to a model's ``simulate`` (those it takes) for the quick checks."""

ROUND_TRIP_SIZES = {
    "n_docs": 20,
    "n_words": 15,
    "doc_length": 100,
    "n_tokens": 2000,
    "n_rows": 20,
    "n_cols": 15,
    "n_items": 100,
    "n_features": 8,
}
"""Sizes of the ``simulate`` round trip: enough observations that the log-likelihood per
observation of a fit is within a fraction of a percent of the truth's (measured: 0.0-1.8%)."""

ROUND_TRIP_RTOL = 0.05
"""Largest relative gap between the fitted and the true log-likelihood of simulated data."""

PYMC_BAD_OPTIONS = [
    ("draws", 0),
    ("chains", 0),
    ("tune", -1),
    ("target_accept", 2),
    ("target_accept", 0),
    ("random_state", "abc"),
]
"""Invalid options of ``latentzoo.fit(..., method="pymc")``: refused before PyMC samples."""

SPARSE_FORMATS = ("csr", "csc", "coo", "lil", "dok", "bsr", "dia")

_ESTIMATE = re.compile(r"\d[\d.,]*\s*(?:[KMGTPE]i?B|bytes)\b")
"""A memory estimate in a message ("149 GiB", "3.2 GB", "1200000 bytes")."""

_PICKLE_SOURCE = re.compile(
    r"allow_pickle\s*=\s*True|pickle\.loads?\(|read_pickle\(|joblib\.load\(|dill\.loads?\("
)


# ------------------------------------------------------------------------------ registry access
def skip_reason(entry, name: str, method: str | None = None) -> str | None:
    """The reason recorded in the registry for skipping check ``name`` (None: run it).

    A method check is looked up as ``"<method>:<name>"`` first, then as ``name`` (all methods).

    Examples
    --------
    >>> from latentzoo.zoo import ZOO
    >>> skip_reason(ZOO["aspect"], "determinism", "gibbs") is None
    True
    """
    skipped = getattr(entry, "skipped_checks", None) or {}
    if method is not None and f"{method}:{name}" in skipped:
        return skipped[f"{method}:{name}"]
    return skipped.get(name)


def small_model(entry, k: int = 2, **hyperparameters):
    """The family's model with every size argument (``entry.sizes``) set to ``k``.

    Examples
    --------
    >>> from latentzoo.zoo import ZOO
    >>> small_model(ZOO["two_sided"], 1)
    TwoSidedClustering(n_row_clusters=1, n_col_clusters=1, alpha=1.1, eta=1.01)
    """
    return entry.model(**{size: k for size in entry.sizes}, **hyperparameters)


def small_problem(entry, random_state=0, k: int = 2, sizes: dict | None = None, **simulate):
    """``(model, data, truth)``: :func:`small_model` and data drawn from its ``simulate``.

    ``sizes`` (default :data:`SMALL_SIZES`) are passed where ``simulate`` takes them, so any
    family's simulator works; ``simulate`` adds further keywords (e.g. ``separated=True``).

    Examples
    --------
    >>> from latentzoo.zoo import ZOO
    >>> model, data, truth = small_problem(ZOO["aspect"])
    >>> data.shape
    (6, 8)
    """
    model = small_model(entry, k)
    taken = inspect.signature(model.simulate).parameters
    chosen = {name: value for name, value in (sizes or SMALL_SIZES).items() if name in taken}
    chosen.update({name: value for name, value in simulate.items() if name in taken})
    data, truth = model.simulate(random_state, **chosen)
    return model, data, truth


def method_kind(entry, method: str) -> str:
    """``"sampler"``, ``"em"`` (an annealing schedule) or ``"point"``: what the method's declared
    options make it (:attr:`latentzoo.inference.family.Method.kind`).

    Examples
    --------
    >>> from latentzoo.zoo import ZOO
    >>> [method_kind(ZOO["one_sided"], m) for m in ("hard", "annealed_em", "gibbs")]
    ['point', 'em', 'sampler']
    """
    return entry.methods[method].kind


def method_options(entry, method: str) -> set[str]:
    """The options ``method`` declares (:attr:`latentzoo.inference.family.Method.options`).

    Examples
    --------
    >>> from latentzoo.zoo import ZOO
    >>> sorted({"betas", "n_threads", "dtype"} & method_options(ZOO["aspect"], "annealed_em"))
    ['betas', 'dtype', 'n_threads']
    >>> "chains" in method_options(ZOO["aspect"], "gibbs")
    True
    """
    return set(entry.methods[method].options)


def bad_option_values(entry, method: str) -> dict[str, tuple]:
    """Option name -> the values its declaration refuses (:attr:`Option.bad_values
    <latentzoo.inference.family.Option.bad_values>`), for the options that have some: each must
    raise ``ValueError`` naming the option, before any work is done.

    Examples
    --------
    >>> from latentzoo.zoo import ZOO
    >>> bad_option_values(ZOO["aspect"], "gibbs")["chains"]
    (0, 1.5, 'x')
    """
    declared = entry.methods[method].options
    return {name: option.bad_values for name, option in declared.items() if option.bad_values}


def quick_options(entry, method: str) -> dict:
    """Options that make ``method`` fast on small data (one short chain, one temperature), and
    the quick values its options declare (:attr:`Option.quick
    <latentzoo.inference.family.Option.quick>`, e.g. a subsample smaller than the data).

    Examples
    --------
    >>> from latentzoo.zoo import ZOO
    >>> quick_options(ZOO["aspect"], "gibbs")["chains"]
    1
    """
    declared = entry.methods[method]
    own = declared.quick_options()
    kind = declared.kind
    if kind == "sampler":
        return {"chains": 1, "draws": 3, "tune": 1, "progressbar": False, "random_state": 0, **own}
    if kind == "em":
        return {"betas": [1.0], "max_iter": 20, "random_state": 0, **own}
    seed = {"random_state": 0} if declared.takes_random_state else {}
    return {**seed, **own}


def run_method(entry, method: str, model, data, /, **options):
    """``entry.methods[method](model, data)`` with :func:`quick_options` under ``options``, as
    ``latentzoo.fit`` calls it (the data checked by the model first).

    The entry's own callable is run, not the registry's, so a family checked before (or without)
    being registered is the one tested.

    Examples
    --------
    >>> from latentzoo.zoo import ZOO
    >>> entry = ZOO["aspect"]
    >>> model, data, _ = small_problem(entry)
    >>> run_method(entry, "annealed_em", model, data).params["theta"].shape
    (6, 2)
    """
    return entry.methods[method](
        model, model.check_data(data), **{**quick_options(entry, method), **options}
    )


def result_arrays(result) -> dict[str, np.ndarray]:
    """Every array of a fit keyed ``"group.name"``, timings left out: what the result's own
    ``arrays()`` gives (``params`` and ``trace`` of a point estimate, the arrays of a tree), the
    groups of an ``InferenceData`` but its ``observed_data``
    (:func:`latentzoo.inference.fitted.result_arrays`).

    Examples
    --------
    >>> from latentzoo.zoo import ZOO
    >>> entry = ZOO["aspect"]
    >>> model, data, _ = small_problem(entry)
    >>> sorted(result_arrays(run_method(entry, "annealed_em", model, data)))[:2]
    ['params.phi', 'params.theta']
    """
    from latentzoo.inference import fitted

    return fitted.result_arrays(result)


# ------------------------------------------------------------------------------ helpers
def _fail(failures: list[str], promise: str) -> None:
    if failures:
        raise AssertionError(f"{promise}:\n  " + "\n  ".join(failures))


def _short(error: BaseException) -> str:
    text = str(error).strip().splitlines()
    return f"{type(error).__name__}: {text[0] if text else ''}"[:300]


def _expect_refusal(call: Callable, name: str, what: str, errors=(ValueError,)) -> str | None:
    """None if ``call()`` raises one of ``errors`` naming ``name``; otherwise what went wrong."""
    try:
        call()
    except errors as error:
        if name not in str(error):
            return f"{what}: {type(error).__name__} does not name {name!r}: {_short(error)}"
        return None
    except Exception as error:
        return f"{what}: raised {_short(error)} instead of ValueError naming {name!r}"
    return f"{what}: accepted (expected ValueError naming {name!r})"


def _same(a: np.ndarray, b: np.ndarray) -> bool:
    if a.shape != b.shape or a.dtype != b.dtype:
        return False
    if a.dtype.kind in "fc":
        return bool(np.array_equal(a, b, equal_nan=True))
    return bool(np.array_equal(a, b))


def _differences(a: dict, b: dict) -> list[str]:
    names = sorted(set(a) | set(b))
    return [name for name in names if name not in a or name not in b or not _same(a[name], b[name])]


def _non_finite(result) -> list[str]:
    """Arrays of a fit holding NaN or inf (the trace's free energy must be finite; its other
    columns only free of NaN where tracked, so they are not inspected)."""
    bad = []
    for name, value in result_arrays(result).items():
        if name.startswith("trace.") and name != "trace.free_energy":
            continue
        if value.dtype.kind in "fc" and not np.all(np.isfinite(value)):
            bad.append(name)
    return bad


def _finite_or_refused(call: Callable, what: str, model=None, data=None) -> str | None:
    """None if ``call()`` raises ValueError or returns a fit without NaN or inf (and, when
    ``model`` and ``data`` are given, a finite objective of ``data``: the fit's own
    ``objective(data)``, e.g. the log-likelihood of a point estimate or a clustering's cost)."""
    try:
        result = call()
    except ValueError:
        return None
    except Exception as error:
        return f"{what}: raised {_short(error)} (expected a finite fit or a ValueError)"
    from latentzoo.inference import fitted

    bad = _non_finite(result)
    if bad:
        return f"{what}: non-finite values in {', '.join(bad)}"
    # What the fit optimised (the log-likelihood of a point estimate, a clustering's cost).
    score = None if model is None else fitted.objective(result, data)
    if score is not None and not np.isfinite(score[1]):
        return f"{what}: the fit's {score[0]} is {score[1]}"
    return None


def _dense(data) -> np.ndarray:
    return np.asarray(data.toarray())


def _sparse_variants(dense: np.ndarray):
    for fmt in SPARSE_FORMATS:
        for kind in ("matrix", "array"):
            cls = getattr(sp, f"{fmt}_{kind}", None)
            if cls is not None:
                yield f"{fmt}_{kind}", cls(dense)


@contextlib.contextmanager
def _address_space_limit(headroom: int = 2 * 2**30):
    """Cap the process's address space at its current size plus ``headroom`` (Linux).

    A method without a memory guard then fails with ``MemoryError`` instead of swapping a shared
    machine to death; the limit is restored on exit.
    """
    try:
        import resource

        soft, hard = resource.getrlimit(resource.RLIMIT_AS)
        status = Path("/proc/self/status").read_text()
        current = int(re.search(r"VmSize:\s+(\d+) kB", status).group(1)) * 1024
        limit = current + headroom
        if hard != resource.RLIM_INFINITY:
            limit = min(limit, hard)
        resource.setrlimit(resource.RLIMIT_AS, (limit, hard))
    except (ImportError, OSError, ValueError, AttributeError):
        yield
        return
    try:
        yield
    finally:
        resource.setrlimit(resource.RLIMIT_AS, (soft, hard))


def _run_cli(argv: list[str]) -> tuple[object, str]:
    """``latentzoo.cli.main(argv)`` -> (exit code, or the exception that escaped; stderr)."""
    from latentzoo.cli import main

    err, out = io.StringIO(), io.StringIO()
    tqdm_disable = os.environ.get("TQDM_DISABLE")
    try:
        with warnings.catch_warnings(), contextlib.redirect_stderr(err):
            with contextlib.redirect_stdout(out):
                try:
                    code = main(argv)
                except SystemExit as exit_:
                    code = exit_.code
                except BaseException as error:  # noqa: BLE001 - the check reports it
                    code = error
    finally:
        if tqdm_disable is None:
            os.environ.pop("TQDM_DISABLE", None)
        else:
            os.environ["TQDM_DISABLE"] = tqdm_disable
    return code, err.getvalue()


def _cli_error(
    argv: list[str], what: str, out: Path | None = None, names: str | None = None
) -> str | None:
    """None if the CLI turns ``argv`` into exit code 2 and one line on stderr (naming ``names``,
    e.g. the bad file), no traceback."""
    code, stderr = _run_cli(argv)
    lines = [line for line in stderr.splitlines() if line.strip()]
    if isinstance(code, BaseException):
        return f"{what}: {_short(code)} escaped main (a traceback)"
    problems = []
    if code != 2:
        problems.append(f"exit code {code!r} instead of 2")
    if len(lines) != 1:
        problems.append(f"{len(lines)} lines on stderr instead of 1: {stderr.strip()[:300]!r}")
    if "Traceback" in stderr:
        problems.append("a traceback on stderr")
    if names is not None and lines and names not in lines[0]:
        problems.append(f"the message does not name {names}: {lines[0][:200]!r}")
    if "pickle" in stderr.lower():
        problems.append(f"the message mentions pickles: {stderr.strip()[:200]!r}")
    if out is not None and out.exists():
        problems.append(f"{out.name} was written")
        out.unlink()
    return f"{what}: {'; '.join(problems)}" if problems else None


def _write_data_file(data, folder: Path) -> Path:
    """The data as a file the CLI reads: ``.npz`` where the container reads one, else ``.csv``."""
    if "npz" in data.file_formats:
        path = folder / "data.npz"
        data.to_npz(path)
        return path
    path = folder / "data.csv"
    np.savetxt(path, _dense(data), delimiter=",")
    return path


def _cli_quick_flags(entry, method: str) -> list[str]:
    """Quick flags of the method's kind, and ``--option NAME=VALUE`` for each option declared
    with a quick value (a subsample size, a retrieval method's query)."""
    declared = entry.methods[method]
    flags = []
    for name, value in declared.quick_options().items():
        text = ",".join(map(str, value)) if isinstance(value, list | tuple) else str(value)
        flags += ["--option", f"{name}={text}"]
    kind = declared.kind
    if kind == "sampler":
        return ["--chains", "1", "--draws", "2", "--tune", "1", *flags]
    if kind == "em":
        return ["--betas", "1", "--max-iter", "5", *flags]
    return flags


def _cli_fit(entry, method: str, data_file: Path, out: Path, *flags: str) -> list[str]:
    """``latentzoo fit`` of ``entry`` with ``method`` on small data, quickly, then ``flags``.

    ``--k 2`` because the command's default (10) is more than the small data support.
    """
    return ["fit", entry.name, "--data", str(data_file), "--method", method, "--k", "2",
            "--out", str(out), "--quiet", *_cli_quick_flags(entry, method), *flags]  # fmt: skip


def _cli_control(entry, method: str, data_file: Path, out: Path) -> str | None:
    """None if the valid command runs (exit code 0, ``out`` written), so that the bad inputs
    fail for their own reason; removes ``out`` and the files written next to it."""
    code, stderr = _run_cli(_cli_fit(entry, method, data_file, out))
    written = out.exists()
    # The result and what is written next to it (a BHC tree's dendrogram PNG).
    for path in out.parent.glob(f"{out.stem}.*") if out.parent.exists() else ():
        path.unlink()
    if isinstance(code, BaseException) or code != 0 or not written:
        shown = _short(code) if isinstance(code, BaseException) else f"exit code {code!r}"
        return f"the valid command failed ({shown}): {stderr.strip()[:200]!r}"
    return None


def _numeric_fields(cls) -> list[tuple[dataclasses.Field, type]]:
    """Dataclass fields annotated as numbers (int or float, possibly optional), with the type."""
    hints = typing.get_type_hints(cls)
    out = []
    for item in dataclasses.fields(cls):
        hint = hints.get(item.name)
        args = typing.get_args(hint) or (hint,)
        numeric = [t for t in args if t in (int, float)]
        if numeric:
            out.append((item, float if float in numeric else int))
    return out


def _hyperparameter_failures(
    build: Callable, item, kind: type, name: str, skipped
) -> Iterator[str | None]:
    """Failures of ``build(value)`` to refuse each bad value of a numeric field, naming it."""
    bad = [-1, 1.5, math.nan, math.inf, "a"] if kind is int else [-1.0, math.nan, math.inf, "a"]
    if f"hyperparameter[{name}]=0" not in skipped:
        bad.append(0)
    if item.default is not None:
        bad.append(None)
    for value in bad:
        yield _expect_refusal(lambda value=value: build(value), item.name, f"{name}={value!r}")


def _promise(promise: str):
    """Make a check factory of a generator of failure messages.

    ``@_promise(text)`` on ``def _check_x(entry, ...)``, whose body yields a message for each
    case that broke the promise (None for a case that kept it): ``_check_x(entry, ...)`` returns
    the :data:`Check` that runs the body and raises ``AssertionError`` stating ``text``
    (formatted with the factory's arguments by name, e.g. ``{method}``) over the messages.
    Building a check runs nothing: the body runs when the check is called.
    """

    def decorate(failures_of):
        signature = inspect.signature(failures_of)

        @functools.wraps(failures_of)
        def factory(*arguments):
            named = signature.bind(*arguments).arguments

            def check():
                failures = [failure for failure in failures_of(*arguments) if failure]
                _fail(failures, promise.format(**named))

            return check

        return factory

    return decorate


def _fit_failure(entry, method: str, model, data, what: str, **options) -> str | None:
    """:func:`_finite_or_refused` of ``method`` fitting ``model`` to ``data`` with ``options``."""
    return _finite_or_refused(
        lambda: run_method(entry, method, model, data, **options), what, model, data
    )


@contextlib.contextmanager
def _cli_files(entry, method: str, data, out_name: str = "out.nc"):
    """``(folder, data file, --out path, control)`` in a temporary folder: ``data`` written as
    the CLI reads it, and the failure of the valid command (:func:`_cli_control`; None: it
    works), so that the bad inputs fail for their own reason."""
    with tempfile.TemporaryDirectory() as folder:
        folder = Path(folder)
        data_file = _write_data_file(data, folder)
        out = folder / out_name
        yield folder, data_file, out, _cli_control(entry, method, data_file, out)


# ------------------------------------------------------------------------------ model checks
CHECK_NEEDS = {
    "pymc:density": ("pymc_model", "log_prior", "prior_draw"),
    "pymc:options": ("pymc_model",),
    "simulate_round_trip": ("simulate", "log_likelihood", "invariants"),
}
"""The members of a model's protocol (:mod:`latentzoo.models.base`) that a check needs: a check
applies to the families whose declared protocol has them (a tree or a cost model has no prior
density; only a likelihood model can be set against its truth's log-likelihood)."""


def _if_declared(entry, name: str, check: Check) -> list[tuple[str, Check]]:
    """``[(name, check)]`` when the family's declared protocol has what the check needs, else
    ``[]`` (a family without a declared protocol gets every check).

    Examples
    --------
    >>> from latentzoo.zoo import ZOO
    >>> [len(_if_declared(ZOO[f], "pymc:density", print)) for f in ("aspect", "bhc", "pairwise")]
    [1, 0, 0]
    """
    protocol = entry.protocol
    if protocol is None or all(hasattr(protocol, member) for member in CHECK_NEEDS[name]):
        return [(name, check)]
    return []


@_promise("{entry.model.__name__} must refuse a bad {item.name} naming it")
def _check_hyperparameter(entry, item, kind):
    base = {size: 1 for size in entry.sizes}
    yield from _hyperparameter_failures(
        lambda value: entry.model(**{**base, item.name: value}),
        item,
        kind,
        item.name,
        entry.skipped_checks if hasattr(entry, "skipped_checks") else {},
    )


@_promise("{entry.model.__name__} must refuse a bad {item.name} naming it")
def _check_component(entry, item):
    """A non-numeric field holding a dataclass (a mixture's component): a wrong object, and bad
    values of the default component's own numeric hyperparameters."""
    base = {size: 1 for size in entry.sizes}
    for value in ("abc", 1.0, None):
        yield _expect_refusal(
            lambda value=value: entry.model(**{**base, item.name: value}),
            item.name,
            f"{item.name}={value!r}",
        )
    default = getattr(entry.model(**base), item.name)
    for sub, kind in _numeric_fields(type(default)):
        yield from _hyperparameter_failures(
            lambda value, sub=sub: dataclasses.replace(default, **{sub.name: value}),
            sub,
            kind,
            f"{type(default).__name__}.{sub.name}",
            {},
        )


def _base_matrix(entry) -> np.ndarray:
    _, data, _ = small_problem(entry, k=1)
    return _dense(data).astype(float)


def _data_refusals(model, cases: dict) -> Iterator[str | None]:
    """Failures of ``model.check_data`` to refuse each case (label -> data) with ValueError."""
    for label, data in cases.items():
        yield _expect_refusal(lambda data=data: model.check_data(data), "", label)


@_promise("{entry.model.__name__}.check_data must refuse {label} naming the entry")
def _check_bad_entry(entry, value, words: tuple[str, ...], label: str):
    """Entry ``[0, 1]`` of valid data set to ``value``: ValueError naming the entry (or, for a
    container that infers the kind of its data, the kind that the model refuses)."""
    model = small_model(entry, 1)
    matrix = _base_matrix(entry)
    matrix[0, 1] = value
    if entry.data.symmetric:  # both halves: the input is symmetrised
        matrix[1, 0] = value
    for form, data in (("dense", matrix), ("csr", sp.csr_matrix(matrix))):
        try:
            model.check_data(data)
        except ValueError as error:
            text = str(error)
            if not any(word in text.lower() for word in words):
                yield f"{form} {label}: message does not say what is wrong: {text}"
        except Exception as error:
            yield f"{form} {label}: raised {_short(error)} instead of ValueError"
        else:
            yield f"{form} {label} at [0, 1] accepted"


@_promise("empty data must be refused with ValueError")
def _check_empty(entry):
    model = small_model(entry, 1)
    matrix = _base_matrix(entry)
    yield from _data_refusals(
        model,
        {
            "an empty list": [],
            "zero rows": np.zeros((0, matrix.shape[1])),
            "zero columns": np.zeros((matrix.shape[0], 0)),
        },
    )
    # All zeros: counts hold no observation (refused), binary features are valid data.
    try:
        model.check_data(np.zeros_like(matrix))
    except ValueError:
        pass
    except Exception as error:
        yield f"all-zero data: raised {_short(error)} instead of ValueError"


@_promise("data of the wrong dimensionality or type must be refused with ValueError")
def _check_dimensionality(entry):
    matrix = _base_matrix(entry)
    yield from _data_refusals(
        small_model(entry, 1),
        {
            "1-D": matrix[0],
            "3-D": matrix[None],
            "a scalar": 3.0,
            "strings": np.full(matrix.shape, "a"),
        },
    )


@_promise("a size larger than the data allow must be refused naming it")
def _check_k_too_large(entry):
    _, data, _ = small_problem(entry, k=1)
    for size in entry.sizes:
        settings = {**{s: 1 for s in entry.sizes}, size: 10**6}
        # Refused by the model itself (a tree too deep to build) or by check_data.
        yield _expect_refusal(
            lambda settings=settings: entry.model(**settings).check_data(data),
            size,
            f"{size}=10**6 on {data}",
        )


@_promise("overflowing data must be refused or fitted without overflow")
def _check_overflow(entry):
    model = small_model(entry, 1)
    big = np.array([[2**62, 2**62], [2**62, 1]], dtype=np.int64)
    huge = np.full((2, 2), 1e308)
    cases = (
        ("int64 counts summing past 2**63", big),
        ("the same counts as CSR", sp.csr_matrix(big)),
        ("1e308 entries", huge),
    )
    for label, data in cases:
        try:
            checked = model.check_data(data)
        except ValueError as error:
            text = str(error)
            if re.search(r"-\d{15,}", text):
                yield f"{label}: refused with an overflowed number: {text}"
            continue
        except Exception as error:
            yield f"{label}: raised {_short(error)} instead of ValueError"
            continue
        totals = [getattr(checked, name, None) for name in ("total", "row_totals")]
        for total in totals:
            if total is not None and np.any(np.asarray(total) < 0):
                yield f"{label}: accepted with negative totals {total!r}"
                break
        else:
            first = next(iter(entry.methods))
            yield _fit_failure(entry, first, model, checked, f"{label}: {first}")


@_promise("every scipy sparse format must give the same {entry.data.__name__}")
def _check_sparse_containers(entry):
    _, data, _ = small_problem(entry)
    dense = _dense(data)
    reference = entry.data(dense)
    for label, matrix in _sparse_variants(dense):
        try:
            converted = entry.data(matrix)
        except Exception as error:
            yield f"{label}: raised {_short(error)}"
            continue
        if not converted == reference:
            yield f"{label}: the container differs from the dense one"
        elif not _same(_dense(converted), _dense(reference)):
            yield f"{label}: the values differ from the dense ones"


@_promise(
    "pymc_model's log density of {entry.model.__name__} must equal log_likelihood + log_prior"
)
def _check_density(entry):
    from latentzoo.inference.optimality import density_check

    model, data, _ = small_problem(entry)
    comparison = density_check(model, data, 0, n_points=3)
    for compared in comparison.checks:
        if not compared.passed:
            yield f"{compared.name}: {compared.detail}"


class _PyMCRan(AssertionError):
    pass


@_promise("PyMC options must be refused up front, naming the option")
def _check_pymc_options(entry):
    import pymc

    import latentzoo

    model, data, _ = small_problem(entry)
    with mock.patch.object(pymc, "sample", side_effect=_PyMCRan("pm.sample was called")):
        for name, value in [*PYMC_BAD_OPTIONS, ("bogus_option", 1)]:
            # Only the unknown option may be refused by the signature (TypeError); PyMC having
            # run (_PyMCRan) is a failure like any other exception.
            yield _expect_refusal(
                lambda name=name, value=value: latentzoo.fit(
                    model, data, method="pymc", **{"progressbar": False, name: value}
                ),
                name,
                f'fit(method="pymc", {name}={value!r})',
                errors=(ValueError, TypeError) if name == "bogus_option" else (ValueError,),
            )


@_promise("no file may be unpickled")
def _check_no_unpickling(entry):
    import arviz as az

    from latentzoo.data import load
    from latentzoo.inference import fitted

    sources = {inspect.getsourcefile(entry.model), inspect.getsourcefile(entry.data)}
    sources |= {inspect.getsourcefile(inspect.unwrap(fn)) for fn in entry.methods.values()}
    for source in sorted(s for s in sources if s):
        text = Path(source).read_text()
        for match in _PICKLE_SOURCE.finditer(text):
            line = text[: match.start()].count("\n") + 1
            yield f"{source}:{line} unpickles ({match.group(0)})"

    def refuse(*args, **kwargs):
        raise AssertionError("a file was unpickled")

    model, data, _ = small_problem(entry)
    method = next(iter(entry.methods))
    result = run_method(entry, method, model, data)
    idata = fitted.as_inference_data(result)
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "fit.nc"
        idata.to_netcdf(str(path))
        saved = None
        if "npz" in data.file_formats:
            saved = Path(folder) / "data.npz"
            data.to_npz(saved)
        with (
            mock.patch("pickle.load", refuse),
            mock.patch("pickle.loads", refuse),
            mock.patch("pickle.Unpickler", refuse),
        ):
            steps = [("reading the saved fit", lambda: az.from_netcdf(str(path)).load())]
            if saved is not None:
                steps.append(("reading the saved data", lambda: type(data).from_npz(saved)))
            steps.append((f"load({entry.dataset!r})", lambda: load(entry.dataset)))
            for label, step in steps:
                try:
                    step()
                except AssertionError as error:
                    yield f"{label}: {error}"
                except Exception as error:
                    yield f"{label}: raised {_short(error)}"


@_promise("the CLI must turn bad input into one line on stderr and exit code 2")
def _check_cli_bad_input(entry):
    _, data, _ = small_problem(entry)
    method = next(iter(entry.methods))
    with _cli_files(entry, method, data) as (folder, good, out, control):
        yield control
        corrupt = folder / f"corrupt{good.suffix}"
        corrupt.write_bytes(b"PK\x03\x04 this is not an archive\x00\xff")
        cases = [
            ("an unknown model", [*_cli_fit(entry, method, good, out)[:1], "no_such_model",
                                  *_cli_fit(entry, method, good, out)[2:]]),
            ("an unknown method", [*_cli_fit(entry, method, good, out), "--method", "nope"]),
            ("a missing file", _cli_fit(entry, method, folder / f"no{good.suffix}", out),
             f"no{good.suffix}"),
            ("an unknown dataset", _cli_fit(entry, method, Path("no_such_dataset"), out)),
            ("a corrupt file", _cli_fit(entry, method, corrupt, out), corrupt.name),
            ("--k 0", [*_cli_fit(entry, method, good, out), "--k", "0"]),
        ]  # fmt: skip
        floats = [item.name for item, kind in _numeric_fields(entry.model) if kind is float]
        for name in floats[:1]:
            for value in ("abc", "nan", "-1"):
                flags = ["--param", f"{name}={value}"]
                cases.append((" ".join(flags), _cli_fit(entry, method, good, out, *flags)))
        if good.suffix == ".npz":
            with np.load(good, allow_pickle=False) as archive:
                arrays = {key: archive[key] for key in archive.files}
            if "indices" in arrays:
                arrays["indices"] = arrays["indices"] + 10**6
                broken = folder / "out_of_range.npz"
                np.savez(broken, **arrays)
                cases.append(
                    ("out-of-range indices", _cli_fit(entry, method, broken, out), broken.name)
                )
        for label, argv, *names in cases:
            yield _cli_error(argv, label, out, *names)


@_promise("Ctrl-C must end the CLI with one line and no partial output")
def _check_cli_interrupt(entry):
    import arviz as az

    import latentzoo

    _, data, _ = small_problem(entry)
    method = next(iter(entry.methods))

    def interrupt(*args, **kwargs):
        raise KeyboardInterrupt

    def partial_write(self, path, *args, **kwargs):
        Path(path).write_bytes(b"CDF\x01 partial")
        raise KeyboardInterrupt

    with _cli_files(entry, method, data, "result/out.nc") as (_, good, out, control):
        yield control
        argv = _cli_fit(entry, method, good, out)
        for label, patch in (
            ("Ctrl-C during the fit", mock.patch.object(latentzoo, "fit", interrupt)),
            (
                "Ctrl-C while writing --out",
                mock.patch.object(az.InferenceData, "to_netcdf", partial_write),
            ),
        ):
            with patch:
                code, stderr = _run_cli(argv)
            lines = [line for line in stderr.splitlines() if line.strip()]
            if isinstance(code, BaseException):
                yield f"{label}: {_short(code)} escaped main (a traceback)"
            elif code in (0, None) or "Traceback" in stderr or len(lines) > 1:
                yield f"{label}: exit code {code!r}, stderr {stderr.strip()[:200]!r}"
            left = sorted(p.name for p in out.parent.iterdir()) if out.parent.exists() else []
            if left:
                yield f"{label}: left {left} behind"


def model_checks(entry) -> list[tuple[str, Check]]:
    """The named checks of a family's model, data container, PyMC reference and CLI.

    * ``hyperparameter[<name>]``: negative, zero, NaN, inf, a string and None (for a numeric
      field; a component field: a wrong object and bad values of its own hyperparameters) raise
      ``ValueError`` naming the field;
    * ``data:nan``, ``data:inf``, ``data:negative``, ``data:fractional``: a bad entry of
      otherwise valid data is refused by ``model.check_data`` saying what is wrong;
      ``data:empty``, ``data:dimensionality``: refused with ``ValueError``;
      ``data:k_too_large``: a size beyond the data refused naming the size; ``data:overflow``:
      counts whose total overflows int64 refused (or fitted without overflow);
      ``data:sparse_formats``: every scipy sparse format gives the container of the dense data;
    * ``pymc:density``: the PyMC log density is ``log_likelihood + log_prior``
      (:func:`~latentzoo.inference.optimality.density_check`); ``pymc:options``: bad PyMC
      options refused before PyMC samples;
    * ``no_unpickling``: the family's modules never unpickle, and reading a saved fit, saved
      data or the default dataset unpickles nothing;
    * ``cli:bad_input``, ``cli:interrupt``: one line on stderr, exit code 2 (130 or another
      non-zero code for Ctrl-C), no traceback, no partial ``--out`` file.

    Examples
    --------
    >>> from latentzoo.zoo import ZOO
    >>> [name for name, _ in model_checks(ZOO["aspect"])][:3]
    ['hyperparameter[n_components]', 'hyperparameter[alpha]', 'hyperparameter[eta]']
    """
    checks = []
    numeric = {item.name: kind for item, kind in _numeric_fields(entry.model)}
    for item in dataclasses.fields(entry.model):
        if item.name in numeric:
            checks.append(
                (
                    f"hyperparameter[{item.name}]",
                    _check_hyperparameter(entry, item, numeric[item.name]),
                )
            )
        elif item.default_factory is not dataclasses.MISSING and dataclasses.is_dataclass(
            item.default_factory()
        ):
            checks.append((f"hyperparameter[{item.name}]", _check_component(entry, item)))
    checks += [
        ("data:nan", _check_bad_entry(entry, math.nan, ("nan",), "NaN")),
        ("data:inf", _check_bad_entry(entry, math.inf, ("inf",), "inf")),
        ("data:negative", _check_bad_entry(entry, -1.0, ("[0, 1]", "kind"), "a negative entry")),
        ("data:fractional", _check_bad_entry(entry, 0.5, ("[0, 1]", "kind"), "a fractional entry")),
        ("data:empty", _check_empty(entry)),
        ("data:dimensionality", _check_dimensionality(entry)),
        ("data:k_too_large", _check_k_too_large(entry)),
        ("data:overflow", _check_overflow(entry)),
        ("data:sparse_formats", _check_sparse_containers(entry)),
        *_if_declared(entry, "pymc:density", _check_density(entry)),
        *_if_declared(entry, "pymc:options", _check_pymc_options(entry)),
        ("no_unpickling", _check_no_unpickling(entry)),
        ("cli:bad_input", _check_cli_bad_input(entry)),
        ("cli:interrupt", _check_cli_interrupt(entry)),
    ]
    return checks


# ------------------------------------------------------------------------------ method checks
def _option_refusals(entry, method: str, model, data, name: str, values) -> Iterator[str | None]:
    """Failures of ``method`` to refuse each bad value of option ``name``, naming it."""
    for value in values:
        yield _expect_refusal(
            lambda value=value: run_method(entry, method, model, data, **{name: value}),
            name,
            f"{name}={value!r}",
        )


@_promise(
    "{method} must refuse a bad random_state naming it and take an int, "
    "a RandomState, a Generator and None"
)
def _check_random_state(entry, method):
    model, data, _ = small_problem(entry)
    bad = bad_option_values(entry, method).get("random_state", ("abc", 1.5, -1))
    yield from _option_refusals(entry, method, model, data, "random_state", bad)
    for value in (3, np.int64(3), np.random.RandomState(3), np.random.default_rng(3), None):
        try:
            run_method(entry, method, model, data, random_state=value)
        except Exception as error:
            yield f"random_state={value!r}: raised {_short(error)}"


@_promise("{method} must refuse a bad {name} naming it")
def _check_option(entry, method, name):
    model, data, _ = small_problem(entry)
    yield from _option_refusals(
        entry, method, model, data, name, bad_option_values(entry, method)[name]
    )


@_promise("{method} must refuse an unknown option naming it")
def _check_unknown_option(entry, method):
    model, data, _ = small_problem(entry)
    yield _expect_refusal(
        lambda: run_method(entry, method, model, data, bogus_option=1),
        "bogus_option",
        "bogus_option=1",
        errors=(ValueError,),
    )


def _memory_failure(entry, method, model, data, label) -> str | None:
    try:
        model.check_data(data)
    except ValueError:
        return None  # not data of this family: nothing to allocate
    try:
        with _address_space_limit():
            result = run_method(entry, method, model, data)
    except MemoryError as error:
        return f"{label}: MemoryError ({_short(error)}) instead of an up-front refusal"
    except ValueError as error:
        if not _ESTIMATE.search(str(error)):
            return f"{label}: refused without a memory estimate in the message: {_short(error)}"
        return None
    except Exception as error:
        return f"{label}: raised {_short(error)}"
    bad = _non_finite(result)
    return f"{label}: ran but gave non-finite {', '.join(bad)}" if bad else None


@_promise("{method} must run in memory or refuse up front with the estimate")
def _check_memory_counts(entry, method):
    model = small_model(entry, 2)
    data = entry.data(np.full((4, 5), 10**9, dtype=np.int64))
    yield _memory_failure(entry, method, model, data, "4 x 5 counts of 1e9 per cell")


@_promise("{method} must refuse a huge K up front with the estimate")
def _check_memory_k(entry, method):
    # Data on which 200,000 components are not too many, so that only memory can refuse the
    # request; a container that sets no bound on the sizes: small data and 1e9 components.
    k = 200_000
    data = entry.data.supporting(k)
    if data is None:
        _, data, _ = small_problem(entry, k=1)
        k = 10**9
    try:
        model = small_model(entry, k)
    except ValueError:
        return
    yield _memory_failure(entry, method, model, data, f"sizes {k} on {data}")


def _check_determinism(entry, method):
    def check():
        model, data, _ = small_problem(entry)
        if not entry.methods[method].takes_random_state:  # deterministic: the same bits twice
            first = result_arrays(run_method(entry, method, model, data))
            changed = _differences(first, result_arrays(run_method(entry, method, model, data)))
            _fail([f"{', '.join(changed)} differ"] if changed else [], f"{method}: two runs")
            return
        first = result_arrays(run_method(entry, method, model, data, random_state=0))
        again = result_arrays(run_method(entry, method, model, data, random_state=0))
        failures = []
        changed = _differences(first, again)
        if changed:
            failures.append(f"random_state=0 twice: {', '.join(changed)} differ")
        generator = [
            result_arrays(
                run_method(entry, method, model, data, random_state=np.random.default_rng(5))
            )
            for _ in range(2)
        ]
        changed = _differences(*generator)
        if changed:
            failures.append(f"default_rng(5) twice: {', '.join(changed)} differ")
        others = [
            result_arrays(run_method(entry, method, model, data, random_state=seed))
            for seed in (1, 2, 3, 4)
        ]
        if all(not _differences(first, other) for other in others):
            failures.append("random_state 0, 1, 2, 3 and 4 all give the same bits")
        _fail(failures, f"{method}: the same seed must give the same bits, different seeds differ")

    return check


@_promise("{method}: every sparse format must give the dense fit bit for bit")
def _check_sparse_fits(entry, method):
    model, data, _ = small_problem(entry)
    dense = _dense(data)
    reference = result_arrays(run_method(entry, method, model, dense))
    for label, matrix in _sparse_variants(dense):
        try:
            arrays = result_arrays(run_method(entry, method, model, matrix))
        except Exception as error:
            yield f"{label}: raised {_short(error)}"
            continue
        changed = _differences(reference, arrays)
        if changed:
            yield f"{label}: {', '.join(changed)} differ from the dense fit"


def _fitted_loglik(entry, method, model, data, result) -> float:
    from latentzoo.inference import fitted

    if not fitted.is_sample(result):
        return float(result.invariants(data)["loglik"])
    if "loglik" not in result.posterior:
        raise AssertionError(f"{method}: the posterior has no 'loglik' invariant to compare")
    return float(result.posterior["loglik"].to_numpy().mean())


def _check_round_trip(entry, method):
    def check():
        model, data, truth = small_problem(entry, 0, sizes=ROUND_TRIP_SIZES, separated=True)
        truth_ll = float(model.invariants(truth, data)["loglik"])
        # A full budget: from a random start the product-space mixture crosses a plateau that
        # 20 iterations do not (measured: 10% below the truth after 20, 0.5% above after 200).
        options = {"em": {"max_iter": 200}, "sampler": {"draws": 20, "tune": 20}}.get(
            method_kind(entry, method), {}
        )
        result = run_method(entry, method, model, data, **options)
        fitted = _fitted_loglik(entry, method, model, data, result)
        gap = abs(fitted - truth_ll) / abs(truth_ll)
        if not gap <= ROUND_TRIP_RTOL:
            raise AssertionError(
                f"{method} on data simulated by {model} ({data}): log-likelihood {fitted:.6g} vs "
                f"the truth's {truth_ll:.6g}, a relative gap of {gap:.3g} > {ROUND_TRIP_RTOL}"
            )

    return check


def _labelled_data(entry, data):
    """``data`` with distinctive row/column (item/feature) names, and its coordinates."""
    n, m = data.shape
    renamed = data.with_names([f"r{i}x" for i in range(n)], [f"c{j}y" for j in range(m)])
    return renamed, {dim: list(map(str, names)) for dim, names in renamed.coords().items()}


def _check_netcdf(entry, method):
    def check():
        import arviz as az

        from latentzoo.inference import fitted
        from latentzoo.inference.results import parameter_dataset

        model, data, _ = small_problem(entry)
        data, names = _labelled_data(entry, data)
        result = run_method(entry, method, model, data)
        idata = fitted.as_inference_data(result)
        failures = []
        with tempfile.TemporaryDirectory() as folder:
            path = Path(folder) / "fit.nc"
            idata.to_netcdf(str(path))
            back = az.from_netcdf(str(path))
            for group in idata.groups():
                if group not in back.groups():
                    failures.append(f"group {group} lost")
                    continue
                for name, variable in idata[group].data_vars.items():
                    if name not in back[group]:
                        failures.append(f"{group}.{name} lost")
                    elif not _same(variable.to_numpy(), back[group][name].to_numpy()):
                        failures.append(f"{group}.{name} differs after reading back")
            # One reader for a sample's posterior and a point estimate's own group (issue 24).
            posterior = parameter_dataset(back)
            estimate = fitted.point_estimate(result)
            if estimate and "posterior" in back.groups():
                failures.append("a point estimate saved as a one-draw posterior")
            for name, value in estimate.items():
                if name not in posterior:
                    failures.append(f"parameter {name} not among the saved parameters")
                elif not _same(np.asarray(value), posterior[name].to_numpy()):
                    failures.append(f"parameter {name} differs from the saved one")
            generic = sorted(
                {
                    d
                    for v in posterior.data_vars.values()
                    for d in v.dims
                    if re.search(r"_dim_\d+$", d)
                }
            )
            if generic:
                failures.append(f"unnamed dimensions {generic} in the posterior")
            coordinates = [list(map(str, posterior[d].to_numpy())) for d in posterior.dims]
            # The item names always; the column names where the posterior has their dimension.
            wanted = [names[data.item_dim]]
            wanted += [
                labels
                for dim, labels in names.items()
                if dim != data.item_dim and dim in posterior.dims
            ]
            for labels in wanted:
                if labels not in coordinates:
                    failures.append(f"labels {labels[:2]}... are not a coordinate of the posterior")
            attrs = posterior.attrs
            text = " ".join(f"{key}={value}" for key, value in attrs.items())
            if "method" not in attrs:
                failures.append("no 'method' attribute")
            if type(model).__name__ not in text:
                failures.append(f"the model class {type(model).__name__} is not in the attributes")
            for item in dataclasses.fields(model):
                named = any(re.search(rf"(^|_){item.name}$", key) for key in attrs)
                if not named and f"{item.name}=" not in text:
                    failures.append(f"hyperparameter {item.name} is not in the attributes")
            if method_kind(entry, method) == "em":
                if "betas" not in attrs:
                    failures.append("no 'betas' attribute")
                if not any("free_energy" in back[g] for g in back.groups()):
                    failures.append("the annealing trace (free_energy) is not saved")
        _fail(
            failures,
            f"{method}: a fit saved to netCDF must read back with its arrays, labels "
            f"and metadata ({data})",
        )

    return check


@_promise("{method}: empty rows and columns must be fitted (finite) or refused")
def _check_empty_rows_cols(entry, method):
    for matrix, k in itertools.product(entry.data.edge_cases()["empty_rows_and_columns"], (1, 2)):
        try:
            model = small_model(entry, k)
        except ValueError:
            continue
        yield _fit_failure(entry, method, model, matrix, f"sizes {k} on {matrix.tolist()}")


@_promise("{method}: a single row, column or item must be fitted (finite) or refused")
def _check_single_item(entry, method):
    cases = entry.data.edge_cases()["single_item"]
    model = small_model(entry, 1)
    for matrix in cases:
        yield _fit_failure(entry, method, model, matrix, f"{matrix.tolist()}")


@_promise("{method}: extreme counts and temperatures must stay finite or be refused")
def _check_extremes(entry, method):
    model = small_model(entry, 2)
    long_row = np.array([[10**6 - 3, 1, 1, 1], [1, 2, 0, 1], [0, 1, 3, 1]])
    cases = [("a row of 1e6 tokens", long_row, {})]
    if method_kind(entry, method) == "em":
        small = np.array([[5, 1, 0, 2], [0, 3, 4, 1], [2, 0, 1, 6]])
        for betas in ([1e-3], [1e3], [1e-3, 1.0, 1e3]):
            cases.append((f"betas={betas}", small, {"betas": betas}))
    for label, matrix, options in cases:
        yield _fit_failure(entry, method, model, matrix, label, **options)


EDGE_COUNTS = (
    [[7, 0, 0], [0, 1, 0]],
    [[10000], [1], [1], [1]],
    [[1, 0, 0]],
    [[50, 1, 1, 1]],
    [[3, 0], [0, 0], [0, 5]],
    [[1, 1], [1, 1]],
)
"""Tiny count matrices on which over-relaxed and predictive EM went wrong (issue 8: NaN
responsibilities, a ZeroDivisionError inside numba, a log-likelihood of -inf)."""


def _check_overrelaxation(entry, method):
    def check():
        predictive = [False, True] if "predictive" in method_options(entry, method) else [False]
        flat = {n: 1.0 for n in ("alpha", "eta") if n in entry.model.__dataclass_fields__}
        size_sets = [(1,) * len(entry.sizes), (2,) * len(entry.sizes)]
        if len(entry.sizes) == 2:
            size_sets += [(2, 1), (1, 2)]
        failures = []
        for counts in EDGE_COUNTS:
            matrix = np.array(counts)
            for sizes in size_sets:
                try:
                    model = entry.model(**dict(zip(entry.sizes, sizes, strict=True)), **flat)
                    model.check_data(matrix)
                except ValueError:
                    continue
                for max_iter, omega, pred in itertools.product((1, 2, 5), (1.5, 1.9), predictive):
                    options = {"betas": [1.0], "max_iter": max_iter, "tol": 0.0}
                    options.update(overrelax=omega, **({"predictive": True} if pred else {}))
                    what = f"{counts}, sizes {sizes}, {options}"
                    failure = _fit_failure(entry, method, model, matrix, what, **options)
                    if failure:
                        failures.append(failure)
        # Only the first ten cases are shown; the promise counts them all.
        _fail(
            failures[:10],
            f"{method}: over-relaxed (and predictive) EM on tiny counts must "
            f"stay finite or be refused ({len(failures)} cases)",
        )

    return check


@_promise("{method} in float32 must agree with float64 or refuse the settings")
def _check_float32(entry, method):
    flat = small_model(entry, 1, **{n: 1.0 for n in ("alpha", "eta")})
    options = {"betas": [1.0], "tol": 0.0, "max_iter": 50}
    try:
        result = run_method(entry, method, flat, [[10_000_000, 1]], dtype=np.float32, **options)
    except ValueError:
        result = None
    except Exception as error:
        yield f"[[1e7, 1]] in float32: raised {_short(error)}"
        result = None
    if result is not None:
        free = result.trace["free_energy"].to_numpy()
        rise = np.max(np.diff(free) / np.maximum(np.abs(free[:-1]), 1e-300), initial=0.0)
        if not rise <= 1e-5:
            yield f"[[1e7, 1]] in float32: the free energy rises by {rise:.3g} (relative) at beta=1"
    for betas, matrix in (([50.0], [[7, 1]]), ([1.0], [[7, 1]])):
        options = {"betas": betas, "tol": 0.0, "max_iter": 30}
        exact = run_method(entry, method, flat, matrix, dtype=np.float64, **options)
        try:
            single = run_method(entry, method, flat, matrix, dtype=np.float32, **options)
        except ValueError:
            continue
        except Exception as error:
            yield f"betas={betas} on {matrix}: raised {_short(error)}"
            continue
        for name, value in exact.params.items():
            gap = np.max(np.abs(np.asarray(single.params[name], float) - value), initial=0.0)
            if not gap <= 1e-3:
                yield f"betas={betas} on {matrix}: {name} differs from float64 by {gap:.3g}"


@_promise(
    "latentzoo fit {entry.name} --method {method}: a bad option must give "
    "one line on stderr and exit code 2"
)
def _check_cli_options(entry, method):
    _, data, _ = small_problem(entry)
    cases = [
        ["--overrelax", "nan"],
        ["--overrelax", "2"],
        ["--max-iter", "0"],
        ["--tol", "-1"],
        ["--betas", "x"],
        ["--betas", "-1"],
        ["--draws", "0"],
        ["--chains", "0"],
        ["--tune", "-1"],
        ["--seed", "-1"],
        ["--option", "bogus_option=1"],
    ]
    with _cli_files(entry, method, data) as (_, good, out, control):
        yield control
        for flags in cases:
            yield _cli_error(_cli_fit(entry, method, good, out, *flags), " ".join(flags), out)


def method_checks(entry, method: str) -> list[tuple[str, Check]]:
    """The named checks of one fast method of a family.

    * ``random_state`` (methods taking one): ``'abc'``, 1.5 and -1 refused naming it; an int, a
      ``RandomState``, a ``Generator`` and None taken;
    * ``option[<name>]`` for every option the method declares with values its constraint
      refuses (:func:`bad_option_values`), and ``option[unknown]``;
    * ``memory:huge_counts`` (4 x 5 counts of 1e9), ``memory:huge_k`` (sizes of 200,000 on
      200,000 x 200,000 counts, or 1e9 components): run, or refused up front with the estimate;
    * ``determinism``: the same seed gives the same bits, different seeds differ (a method
      without ``random_state``: two runs give the same bits);
    * ``data:sparse_formats``: every scipy sparse format gives the dense fit bit for bit;
      ``data:empty_rows_and_columns``, ``data:single_item``, ``data:extremes`` (a row of 1e6
      tokens; temperatures from 1e-3 to 1e3): a finite fit or a ``ValueError``;
    * ``simulate_round_trip``: a fit on the model's simulated data is within
      :data:`ROUND_TRIP_RTOL` of the truth's log-likelihood;
    * ``netcdf_round_trip``: the fit saved to netCDF reads back with the same arrays, the data's
      labels as coordinates and the model, hyperparameters, method (and betas) as attributes;
    * ``overrelaxation`` (methods taking ``overrelax``): over-relaxed (and predictive) EM on the
      tiny :data:`EDGE_COUNTS` gives a finite fit or a ``ValueError``;
    * ``float32`` (methods documenting ``dtype``): agrees with float64 or refuses;
    * ``cli:options``: bad options on the command line give one line and exit code 2.

    Examples
    --------
    >>> from latentzoo.zoo import ZOO
    >>> names = [name for name, _ in method_checks(ZOO["aspect"], "annealed_em")]
    >>> "option[overrelax]" in names and "float32" in names
    True
    """
    options = method_options(entry, method)
    checks = []
    if entry.methods[method].takes_random_state:  # a deterministic method takes no seed
        checks.append(("random_state", _check_random_state(entry, method)))
    for name in bad_option_values(entry, method):
        if name != "random_state":
            checks.append((f"option[{name}]", _check_option(entry, method, name)))
    checks += [
        ("option[unknown]", _check_unknown_option(entry, method)),
        ("memory:huge_counts", _check_memory_counts(entry, method)),
        ("memory:huge_k", _check_memory_k(entry, method)),
        ("determinism", _check_determinism(entry, method)),
        ("data:sparse_formats", _check_sparse_fits(entry, method)),
        ("data:empty_rows_and_columns", _check_empty_rows_cols(entry, method)),
        ("data:single_item", _check_single_item(entry, method)),
        ("data:extremes", _check_extremes(entry, method)),
        *_if_declared(entry, "simulate_round_trip", _check_round_trip(entry, method)),
        ("netcdf_round_trip", _check_netcdf(entry, method)),
    ]
    if "overrelax" in options:
        checks.append(("overrelaxation", _check_overrelaxation(entry, method)))
    if "dtype" in options:
        checks.append(("float32", _check_float32(entry, method)))
    checks.append(("cli:options", _check_cli_options(entry, method)))
    return checks


# ------------------------------------------------------------------------------ runners
def _run_all(checks, reason_of, label: str) -> dict[str, str]:
    outcome, failures = {}, []
    for name, check in checks:
        reason = reason_of(name)
        if reason is not None:
            outcome[name] = f"skipped: {reason}"
            continue
        try:
            check()
        except AssertionError as error:
            outcome[name] = "failed"
            failures.append(f"[{name}] {error}")
        else:
            outcome[name] = "passed"
    if failures:
        raise AssertionError(f"{label} broke {len(failures)} promise(s):\n" + "\n".join(failures))
    return outcome


def check_model(entry) -> dict[str, str]:
    """Run every :func:`model_checks` check of ``entry`` (a :class:`latentzoo.zoo.Family`).

    Checks recorded in ``entry.skipped_checks`` are skipped with their reason.

    Returns
    -------
    dict
        Check name -> ``"passed"`` or ``"skipped: <reason>"``.

    Raises
    ------
    AssertionError
        Listing every failed check and what broke.

    Examples
    --------
    >>> from latentzoo.zoo import ZOO
    >>> outcome = check_model(ZOO["aspect"])  # doctest: +SKIP
    """
    return _run_all(model_checks(entry), lambda name: skip_reason(entry, name), entry.name)


def check_method(entry, method: str) -> dict[str, str]:
    """Run every :func:`method_checks` check of ``method`` of ``entry``; skips, returns and
    raises as :func:`check_model`.

    Examples
    --------
    >>> from latentzoo.zoo import ZOO
    >>> outcome = check_method(ZOO["aspect"], "gibbs")  # doctest: +SKIP
    """
    return _run_all(
        method_checks(entry, method),
        lambda name: skip_reason(entry, name, method),
        f"{entry.name} {method}",
    )
