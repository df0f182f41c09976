"""Input checks shared by every data container (:class:`CoOccurrence`, :class:`Features`,
:class:`Dissimilarities`).

Each check raises ``ValueError`` with a message that names the offending argument or entry, as the
data contract of this package asks (``X[3, 5] is nan``, ``D[0, 2] = -1.0 is negative``). The
messages are part of the tested behaviour. Checks are vectorised: an entry check builds one
boolean mask per kind of problem and reports the first offender in row-major order.

Examples
--------
>>> import numpy as np
>>> from latentzoo.data.checks import as_matrix, check_entries
>>> X = as_matrix([[0.0, 1.0], [np.nan, 2.0]], "X")
>>> check_entries(X, "X")
Traceback (most recent call last):
...
ValueError: X[1, 0] is nan
"""

from __future__ import annotations

import numbers
import os

import numpy as np
import pandas as pd
import scipy.sparse as sp

__all__ = [
    "as_matrix",
    "as_rng",
    "check_random_state",
    "check_entries",
    "check_fraction",
    "check_memory",
    "check_square",
    "check_symmetric",
    "check_vector",
    "check_zero_diagonal",
    "first_offender",
    "format_bytes",
    "format_value",
    "frame_to_array",
    "normalise_index",
    "normalise_names",
    "physical_memory",
]


def format_value(value, compact: bool = False) -> str:
    """Render an offending entry for a message.

    Parameters
    ----------
    value : scalar
        The entry.
    compact : bool, default False
        Render integral floats as integers (``-2`` rather than ``-2.0``); used for count data,
        whose entries are integers by contract.

    Examples
    --------
    >>> format_value(-1.0), format_value(-1.0, compact=True), format_value(0.5, compact=True)
    ('-1.0', '-1', '0.5')
    """
    value = value.item() if isinstance(value, np.generic) else value
    if compact and isinstance(value, float) and np.isfinite(value) and value.is_integer():
        return str(int(value))
    return repr(value)


def first_offender(mask, rows, cols, shape):
    """Position ``(k, i, j)`` of the first offending entry in row-major order.

    ``mask`` flags the offending entries of a flat array of values. ``rows``/``cols`` are
    ``None`` for a dense C-ordered ravel of a matrix of ``shape``, otherwise the coordinates of
    the sparse entries (in arbitrary order, hence the lexsort). ``k`` indexes the flat values.

    Examples
    --------
    >>> import numpy as np
    >>> first_offender(np.array([False, False, True, True]), None, None, (2, 2))
    (2, 1, 0)
    >>> first_offender(np.array([True, True]), np.array([3, 1]), np.array([0, 4]), (5, 5))
    (1, 1, 4)
    """
    if rows is None:
        k = int(np.argmax(mask))
        i, j = np.unravel_index(k, shape)
        return k, int(i), int(j)
    candidates = np.flatnonzero(mask)
    k = int(candidates[np.lexsort((cols[candidates], rows[candidates]))[0]])
    return k, int(rows[k]), int(cols[k])


def frame_to_array(frame: pd.DataFrame):
    """Turn a DataFrame into a dense or sparse array without losing NA markers.

    Nullable extension dtypes come out of ``to_numpy`` as object arrays; their NA becomes NaN
    so that it is reported as such by :func:`check_entries`.

    Examples
    --------
    >>> import pandas as pd
    >>> frame_to_array(pd.DataFrame({"a": pd.array([1, None], dtype="Int64")}))
    array([[ 1.],
           [nan]])
    """
    dtypes = list(frame.dtypes)
    if dtypes and all(isinstance(d, pd.SparseDtype) for d in dtypes):
        return frame.sparse.to_coo()
    values = frame.to_numpy()
    numeric = all(pd.api.types.is_numeric_dtype(d) for d in dtypes)
    if values.dtype == object and numeric:
        values = frame.to_numpy(dtype=np.float64, na_value=np.nan)
    return values


def as_matrix(data, name: str):
    """Convert ``data`` to a 2-D numpy array (or keep a scipy sparse matrix) and check its shape.

    DataFrames become arrays (:func:`frame_to_array`); anything else goes through
    :func:`numpy.asarray`. The result is 2-D and has no zero-length axis.

    Parameters
    ----------
    data : array_like, scipy.sparse matrix/array or pandas.DataFrame
    name : str
        The argument's name, used in messages.

    Returns
    -------
    numpy.ndarray or scipy.sparse matrix/array

    Raises
    ------
    ValueError
        ``"{name} could not be converted to a 2-D array: ..."``, ``"{name} must be 2-D, got
        shape (4,)"`` or ``"{name} is empty (shape (0, 5))"``.

    Examples
    --------
    >>> as_matrix([[1, 2]], "X").shape
    (1, 2)
    >>> as_matrix([1, 2], "X")
    Traceback (most recent call last):
    ...
    ValueError: X must be 2-D, got shape (2,)
    >>> as_matrix([[]], "X")
    Traceback (most recent call last):
    ...
    ValueError: X is empty (shape (1, 0))
    """
    if isinstance(data, pd.DataFrame):
        data = frame_to_array(data)
    if sp.issparse(data):
        if len(data.shape) != 2:
            raise ValueError(f"{name} must be 2-D, got shape {tuple(data.shape)}")
    else:
        try:
            data = np.asarray(data)
        except (ValueError, TypeError) as exc:
            raise ValueError(f"{name} could not be converted to a 2-D array: {exc}") from exc
        if data.ndim != 2:
            raise ValueError(f"{name} must be 2-D, got shape {data.shape}")
    shape = tuple(int(s) for s in data.shape)
    if 0 in shape:
        raise ValueError(f"{name} is empty (shape {shape})")
    return data


def check_entries(
    values,
    name: str,
    shape=None,
    rows=None,
    cols=None,
    *,
    nonnegative: bool = False,
    integer: bool = False,
    binary: bool = False,
    int64: bool = False,
    compact: bool = False,
    nan_word: str = "nan",
) -> None:
    """Raise ``ValueError`` naming the first entry that breaks a requirement.

    Entries must be numeric (bool, integer or float) and finite; optionally also non-negative,
    integer-valued, binary (0 or 1) or within the int64 range. The problems are tested in that
    order, and within one problem the first offender in row-major order is named.

    Parameters
    ----------
    values : numpy.ndarray
        A dense matrix, or the flat stored values of a sparse one (then give ``rows``/``cols``).
    name : str
        Name of the matrix in messages, e.g. ``"X"`` gives ``"X[3, 5] is nan"``.
    shape : tuple of int, optional
        Shape of the matrix; defaults to ``values.shape`` (dense input).
    rows, cols : numpy.ndarray, optional
        Coordinates of the stored entries of a sparse matrix.
    nonnegative, integer, binary, int64 : bool, default False
        Which further requirements apply.
    compact : bool, default False
        Render integral floats as integers in messages (:func:`format_value`).
    nan_word : str, default "nan"
        Spelling of NaN in messages (:class:`CoOccurrence` keeps its historical ``"NaN"``).

    Raises
    ------
    ValueError
        ``"{name} must be numeric (bool, integer or float), got dtype <U1"``,
        ``"{name}[i, j] is nan"``, ``"{name}[i, j] is inf"`` (or ``-inf``), ``"{name}[i, j] = -1.0 is
        negative"``, ``"... is not an integer"``, ``"... is not binary (0 or 1)"`` or
        ``"... exceeds the int64 range"``.

    Examples
    --------
    >>> import numpy as np
    >>> check_entries(np.array([[0.0, 1.0], [1.0, -1.0]]), "D", nonnegative=True)
    Traceback (most recent call last):
    ...
    ValueError: D[1, 1] = -1.0 is negative
    >>> check_entries(np.array([[0, 1], [2, 1]]), "X", binary=True)
    Traceback (most recent call last):
    ...
    ValueError: X[1, 0] = 2 is not binary (0 or 1)
    """
    values = np.asarray(values)
    if shape is None:
        shape = values.shape
    kind = values.dtype.kind
    if kind == "b":
        return
    if kind not in "iuf":
        raise ValueError(
            f"{name} must be numeric (bool, integer or float), got dtype {values.dtype}"
        )
    flat = values.ravel() if rows is None else values
    # Masks are built lazily so that clean input pays only for the checks it needs.
    checks = []
    if kind == "f":
        checks += [
            (np.isnan, f"is {nan_word}", False),
            (np.isposinf, "is inf", False),
            (np.isneginf, "is -inf", False),
        ]
    if nonnegative and kind in "if":
        checks.append((lambda v: v < 0, "is negative", True))
    if integer and kind == "f":
        # NaN/inf have been ruled out above, so the floor() comparison is exact here.
        checks.append((lambda v: v != np.floor(v), "is not an integer", True))
    if binary:
        checks.append((lambda v: (v != 0) & (v != 1), "is not binary (0 or 1)", True))
    if int64 and kind in "uf":
        checks.append((lambda v: v >= 2**63, "exceeds the int64 range", True))
    for make_mask, problem, show_value in checks:
        mask = make_mask(flat)
        if mask.any():
            k, i, j = first_offender(mask, rows, cols, shape)
            value = f" = {format_value(flat[k], compact)}" if show_value else ""
            raise ValueError(f"{name}[{i}, {j}]{value} {problem}")


def check_square(shape, name: str) -> None:
    """Raise ``ValueError`` unless ``shape`` is that of a square matrix.

    Examples
    --------
    >>> check_square((3, 4), "D")
    Traceback (most recent call last):
    ...
    ValueError: D must be square, got shape (3, 4)
    """
    shape = tuple(int(s) for s in shape)
    if len(shape) != 2 or shape[0] != shape[1]:
        raise ValueError(f"{name} must be square, got shape {shape}")


def check_zero_diagonal(matrix: np.ndarray, name: str) -> None:
    """Raise ``ValueError`` naming the first non-zero diagonal entry of a square matrix.

    Examples
    --------
    >>> import numpy as np
    >>> check_zero_diagonal(np.array([[0.0, 1.0], [1.0, 0.5]]), "D")
    Traceback (most recent call last):
    ...
    ValueError: D[1, 1] = 0.5 is not zero (the diagonal must be zero)
    """
    diagonal = np.diagonal(matrix)
    bad = diagonal != 0
    if bad.any():
        i = int(np.argmax(bad))
        raise ValueError(
            f"{name}[{i}, {i}] = {format_value(diagonal[i])} is not zero "
            "(the diagonal must be zero)"
        )


def check_symmetric(matrix: np.ndarray, name: str, atol: float = 0.0) -> None:
    """Raise ``ValueError`` naming the first entry (row-major) with ``|M_ij - M_ji| > atol``.

    Examples
    --------
    >>> import numpy as np
    >>> check_symmetric(np.array([[0.0, 1.0], [1.0, 0.0]]), "D")
    >>> check_symmetric(np.array([[0.0, 1.0], [2.0, 0.0]]), "D")
    Traceback (most recent call last):
    ...
    ValueError: D[0, 1] = 1.0 differs from D[1, 0] = 2.0 (not symmetric)
    """
    matrix = np.asarray(matrix)
    check_square(matrix.shape, name)
    bad = np.abs(matrix - matrix.T) > atol
    if bad.any():
        _, i, j = first_offender(bad.ravel(), None, None, matrix.shape)
        raise ValueError(
            f"{name}[{i}, {j}] = {format_value(matrix[i, j])} differs from "
            f"{name}[{j}, {i}] = {format_value(matrix[j, i])} (not symmetric)"
        )


def check_vector(values, n: int, name: str, data_name: str, axis: str) -> np.ndarray:
    """Return ``values`` as a read-only 1-D array of length ``n`` (a copy; dtype kept).

    Examples
    --------
    >>> check_vector([0, 1, 1], 3, "labels", "X", "items")
    array([0, 1, 1])
    >>> check_vector([0, 1], 3, "labels", "X", "items")
    Traceback (most recent call last):
    ...
    ValueError: labels has 2 entries but X has 3 items
    """
    out = np.array(values)
    if out.ndim != 1:
        raise ValueError(f"{name} must be 1-D, got shape {out.shape}")
    if out.shape[0] != n:
        raise ValueError(f"{name} has {out.shape[0]} entries but {data_name} has {n} {axis}")
    out.setflags(write=False)
    return out


def normalise_names(names, n: int, name: str, data_name: str, axis: str) -> np.ndarray:
    """Names as a read-only unicode array of length ``n``; ``None`` gives ``"0", "1", ...``.

    Examples
    --------
    >>> normalise_names(None, 3, "item_names", "X", "items")
    array(['0', '1', '2'], dtype='<U21')
    >>> normalise_names(["a"], 2, "item_names", "X", "items")
    Traceback (most recent call last):
    ...
    ValueError: item_names has 1 entries but X has 2 items
    """
    if names is None:
        out = np.arange(n).astype(str)
    else:
        out = np.asarray(names)
        if out.ndim != 1:
            raise ValueError(f"{name} must be 1-D, got shape {out.shape}")
        out = out.astype(str)
        if out.shape[0] != n:
            raise ValueError(f"{name} has {out.shape[0]} entries but {data_name} has {n} {axis}")
    out.setflags(write=False)
    return out


def normalise_index(index, n: int, name: str) -> np.ndarray:
    """Turn an integer array (negative counts from the end) or boolean mask into positions.

    Examples
    --------
    >>> normalise_index([2, -1], 4, "items")
    array([2, 3])
    >>> normalise_index([True, False, True], 3, "items")
    array([0, 2])
    >>> normalise_index([4], 4, "items")
    Traceback (most recent call last):
    ...
    ValueError: items[0] = 4 is out of range for size 4
    """
    arr = np.asarray(index)
    if arr.ndim != 1:
        raise ValueError(f"{name} must be 1-D, got shape {arr.shape}")
    if arr.dtype.kind == "b":
        if arr.shape[0] != n:
            raise ValueError(f"{name} is a boolean mask of length {arr.shape[0]}, expected {n}")
        return np.flatnonzero(arr)
    if arr.size == 0:
        return np.zeros(0, dtype=np.int64)
    if arr.dtype.kind not in "iu":
        raise ValueError(f"{name} must hold integer indices or be a boolean mask")
    arr = arr.astype(np.int64)
    bad = (arr < -n) | (arr >= n)
    if bad.any():
        k = int(np.argmax(bad))
        raise ValueError(f"{name}[{k}] = {arr[k]} is out of range for size {n}")
    return np.where(arr < 0, arr + n, arr)


def check_fraction(value, name: str = "test_fraction") -> float:
    """Return ``value`` as a float after checking that it lies in the open interval (0, 1).

    Examples
    --------
    >>> check_fraction(0.25)
    0.25
    >>> check_fraction(1.0)
    Traceback (most recent call last):
    ...
    ValueError: test_fraction must be a number in the open interval (0, 1), got 1.0
    """
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or not 0 < value < 1:
        raise ValueError(f"{name} must be a number in the open interval (0, 1), got {value!r}")
    return float(value)


def physical_memory() -> int | None:
    """Total physical memory of this machine in bytes, or ``None`` where the system does not say.

    Read from ``os.sysconf`` (page size times number of physical pages); ``psutil`` is used when
    ``sysconf`` lacks the names (e.g. on Windows) and it is installed.

    Examples
    --------
    >>> memory = physical_memory()
    >>> memory is None or memory > 0
    True
    """
    try:
        pages, page_size = os.sysconf("SC_PHYS_PAGES"), os.sysconf("SC_PAGE_SIZE")
        if pages > 0 and page_size > 0:
            return int(pages) * int(page_size)
    except (AttributeError, ValueError, OSError):
        pass
    try:
        import psutil
    except ImportError:
        return None
    return int(psutil.virtual_memory().total)


def format_bytes(n_bytes) -> str:
    """A byte count for messages: GiB with one decimal from 1 GiB on, MiB below.

    Examples
    --------
    >>> format_bytes(160e9), format_bytes(3 * 2**20)
    ('149.0 GiB', '3.0 MiB')
    """
    n_bytes = float(n_bytes)
    if n_bytes >= 2**30:
        return f"{n_bytes / 2**30:.1f} GiB"
    return f"{n_bytes / 2**20:.1f} MiB"


def check_memory(n_bytes, what: str, fraction: float = 0.5, *, detail: str = "", hint: str = ""):
    """Refuse (``ValueError``) a computation that would allocate more than ``fraction`` of RAM.

    Large allocations are refused up front, with the estimate in the message, instead of failing
    halfway with numpy's ``MemoryError`` or, worse, being granted by an overcommitting kernel and
    then killed by the out-of-memory killer. The estimate is the caller's: it should count every
    array the computation holds at its peak. Nothing is refused when the machine's memory is
    unknown (:func:`physical_memory` is ``None``).

    Parameters
    ----------
    n_bytes : int or float
        Estimated peak allocation in bytes (compute it with Python integers or floats: a numpy
        integer product can overflow for the very inputs this guards against).
    what : str
        The computation, as the subject of the message (``"collapsed Gibbs for the aspect
        model"``).
    fraction : float, default 0.5
        Largest share of the machine's physical memory allowed, in ``(0, 1]``.
    detail : str, optional
        What the estimate is for (``"for 20,000,000,000 tokens"``), placed after the estimate.
    hint : str, optional
        What to do instead, appended to the message.

    Raises
    ------
    ValueError
        ``"{what} would allocate 149.0 GiB {detail} (limit 11.7 GiB, half of this machine's
        memory); {hint}"``.

    Examples
    --------
    >>> check_memory(1024, "a small table")
    >>> check_memory(2**80, "a huge table", detail="for 2**77 cells")
    Traceback (most recent call last):
    ...
    ValueError: a huge table would allocate ... GiB for 2**77 cells (limit ... GiB, half of this machine's memory)
    """
    if (
        isinstance(fraction, bool)
        or not isinstance(fraction, numbers.Real)
        or not 0 < fraction <= 1
    ):
        raise ValueError(f"fraction must be a number in (0, 1], got {fraction!r}")
    total = physical_memory()
    if total is None:
        return
    limit = fraction * total
    if float(n_bytes) <= limit:
        return
    share = "half" if fraction == 0.5 else f"{fraction:.0%}"
    message = (
        f"{what} would allocate {format_bytes(n_bytes)}{' ' + detail if detail else ''} "
        f"(limit {format_bytes(limit)}, {share} of this machine's memory)"
    )
    raise ValueError(f"{message}; {hint}" if hint else message)


def check_random_state(random_state):
    """Validate a ``random_state`` option; return it in a form :func:`numpy.random.default_rng`
    and :class:`numpy.random.SeedSequence` take.

    Accepted: ``None`` (fresh entropy), a non-negative integer, a :class:`numpy.random.Generator`,
    a :class:`numpy.random.SeedSequence`, or a legacy :class:`numpy.random.RandomState`, which
    seeds a new Generator from its stream (so it advances, as scikit-learn users expect).

    Examples
    --------
    >>> check_random_state(3)
    3
    >>> type(check_random_state(np.random.RandomState(0))).__name__
    'Generator'
    >>> check_random_state("abc")
    Traceback (most recent call last):
    ...
    ValueError: random_state must be None, a non-negative integer, a numpy Generator, SeedSequence or RandomState, got 'abc'
    """
    if random_state is None or isinstance(
        random_state, np.random.Generator | np.random.SeedSequence
    ):
        return random_state
    if isinstance(random_state, numbers.Integral) and not isinstance(random_state, bool):
        if random_state >= 0:
            return int(random_state)
    elif isinstance(random_state, np.random.RandomState):
        return np.random.default_rng(random_state.randint(0, 2**31 - 1, size=4))
    raise ValueError(
        "random_state must be None, a non-negative integer, a numpy Generator, SeedSequence or "
        f"RandomState, got {random_state!r}"
    )


def as_rng(random_state) -> np.random.Generator:
    """Normalise a ``random_state`` (see :func:`check_random_state`) into a
    :class:`numpy.random.Generator`.

    Examples
    --------
    >>> int(as_rng(0).integers(10)) == int(as_rng(0).integers(10))
    True
    """
    return np.random.default_rng(check_random_state(random_state))
