"""What a family of the zoo is: its model, its methods with their declared options, its recipe.

Each family module (``inference/<family>.py``) ends with one :class:`Family` object (``FAMILY``,
or ``FAMILIES`` when a module serves two) built from real callables; the registry
(:mod:`latentzoo.zoo`) only lists those modules. A method's options are declared once, as
:class:`Option` objects, the way scikit-learn declares ``_parameter_constraints``: the command line
(``latentzoo fit --option``), the docstrings and the common checks (:mod:`latentzoo.testing`) read
the same table.

This module is light on purpose (standard library only): ``latentzoo list`` imports every family
module, and none of them may pull in ArviZ or PyMC at import time.

Examples
--------
>>> m = integer("m", 100, "items in each subsample", quick=10)
>>> m.validate(5)
5
>>> m.validate(0)
Traceback (most recent call last):
...
ValueError: m must be an integer >= 1, got 0
>>> m.parse("7"), m.quick
(7, 10)
"""

from __future__ import annotations

import inspect
import numbers
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

__all__ = [
    "NOTSET",
    "Option",
    "Method",
    "Family",
    "integer",
    "real",
    "choice",
    "flag",
    "seed",
    "anything",
    "with_defaults",
    "take_declared",
    "THREADS",
    "DTYPE",
    "GIBBS_TEST",
    "KEEP_PARAMS",
    "SCHEDULE_OPTIONS",
    "GIBBS_OPTIONS",
]


class _NotSet:
    """The marker of an option without a quick value."""

    def __repr__(self) -> str:
        return "NOTSET"

    def __reduce__(self):
        return "NOTSET"


NOTSET = _NotSet()


def _parse_text(text: str):
    """A command-line value: ``none``, ``true``/``false``, an int, a float, a comma list of
    numbers, or the text itself."""
    low = text.strip().lower()
    if low in ("none", "null"):
        return None
    if low in ("true", "yes", "on"):
        return True
    if low in ("false", "no", "off"):
        return False
    for convert in (int, float):
        try:
            return convert(text)
        except ValueError:
            pass
    if "," in text:
        try:
            return [float(part) for part in text.split(",")]
        except ValueError:
            pass
    return text


@dataclass(frozen=True)
class Option:
    """One declared option of a method (or of building a family's model).

    Attributes
    ----------
    name : str
        Keyword of the method.
    type : type or tuple of type
        What a value is (documentation, and parsing of command-line text).
    default : object
        The method's default.
    doc : str
        One line.
    constraint : str
        The constraint in words (``"an integer >= 1"``), used in the error message.
    check : callable or None
        ``check(value) -> bool``: whether the value meets the constraint (None: any value); it
        may raise its own ``ValueError`` to name an offending entry of a list (``betas[2]``).
    bad_values : tuple
        Values the constraint refuses: the common checks pass each and expect a ``ValueError``
        naming the option.
    quick : object
        The value small, quick runs use (common checks, ``validate --quick``), when the default
        would not exercise the method's own path on small data; :data:`NOTSET` if none.

    Examples
    --------
    >>> tap = flag("tap", False, "TAP reaction-field correction")
    >>> tap.validate(True), tap.bad_values
    (True, ('yes',))
    """

    name: str
    type: Any
    default: Any
    doc: str
    constraint: str = ""
    check: Callable[[Any], bool] | None = None
    bad_values: tuple = ()
    quick: Any = NOTSET

    @property
    def has_quick(self) -> bool:
        """Whether quick runs pass a value of their own."""
        return self.quick is not NOTSET

    def validate(self, value):
        """``value`` if it meets the constraint, else ``ValueError`` naming the option.

        Examples
        --------
        >>> real("tol", 1e-5, "tolerance", low=0, low_open=True).validate(-1.0)
        Traceback (most recent call last):
        ...
        ValueError: tol must be a number > 0, got -1.0
        """
        if self.check is not None and not self.check(value):
            raise ValueError(f"{self.name} must be {self.constraint}, got {value!r}")
        return value

    def parse(self, text: str):
        """The value of command-line ``text`` (``none``, booleans, numbers, comma lists), checked.

        Examples
        --------
        >>> seed().parse("3")
        3
        """
        return self.validate(_parse_text(text))

    def describe(self) -> str:
        """One line for docs and ``--help``: name, default, constraint, doc.

        Examples
        --------
        >>> integer("chains", 4, "independent chains").describe()
        'chains (default 4; an integer >= 1): independent chains'
        """
        constraint = f"; {self.constraint}" if self.constraint else ""
        return f"{self.name} (default {self.default!r}{constraint}): {self.doc}"


def _is_int(value) -> bool:
    return isinstance(value, numbers.Integral) and not isinstance(value, bool)


def _is_real(value) -> bool:
    return isinstance(value, numbers.Real) and not isinstance(value, bool) and value == value


def integer(name, default, doc, low=1, high=None, none=False, quick=NOTSET) -> Option:
    """An integer option in ``[low, high]`` (``none``: None is allowed too).

    Examples
    --------
    >>> integer("thin", 1, "keep every thin-th draw").bad_values
    (0, 1.5, 'x')
    """
    parts = [f">= {low}" if low is not None else "", f"<= {high}" if high is not None else ""]
    constraint = "an integer " + " and ".join(p for p in parts if p) + (" or None" if none else "")

    def check(value):
        if value is None:
            return none
        return _is_int(value) and (low is None or value >= low) and (high is None or value <= high)

    bad = ((low - 1,) if low is not None else ()) + (1.5, "x")
    return Option(name, int, default, doc, constraint.strip(), check, bad, quick)


def real(
    name,
    default,
    doc,
    low=None,
    high=None,
    low_open=False,
    high_open=False,
    none=False,
    quick=NOTSET,
) -> Option:
    """A finite real option in an interval (``none``: None is allowed too).

    Examples
    --------
    >>> real("beta_decay", 0.9, "cooling factor", 0, 1, True, True).constraint
    'a number > 0 and < 1'
    """
    parts = []
    if low is not None:
        parts.append(f"{'>' if low_open else '>='} {low}")
    if high is not None:
        parts.append(f"{'<' if high_open else '<='} {high}")
    constraint = ("a number " + " and ".join(parts)).strip() + (" or None" if none else "")

    def check(value):
        if value is None:
            return none
        if not _is_real(value) or value in (float("inf"), float("-inf")):
            return False
        if low is not None and (value <= low if low_open else value < low):
            return False
        return not (high is not None and (value >= high if high_open else value > high))

    bad = [float("nan"), "x"]
    if low is not None:
        bad.insert(0, low if low_open else low - 1)
    elif high is not None:
        bad.insert(0, high if high_open else high + 1)
    return Option(name, float, default, doc, constraint, check, tuple(bad), quick)


def choice(name, default, doc, choices, quick=NOTSET) -> Option:
    """An option taking one of ``choices``.

    Examples
    --------
    >>> choice("init", "acm", "initial partition", ("acm", "random")).validate("kmeans")
    Traceback (most recent call last):
    ...
    ValueError: init must be one of 'acm', 'random', got 'kmeans'
    """
    choices = tuple(choices)
    constraint = "one of " + ", ".join(repr(c) for c in choices)
    return Option(
        name, str, default, doc, constraint, lambda v: v in choices, ("no-such-choice",), quick
    )


def flag(name, default, doc, quick=NOTSET) -> Option:
    """A boolean option (numpy booleans are accepted, text is not).

    Examples
    --------
    >>> flag("quench", True, "quench at the end").validate(1)
    Traceback (most recent call last):
    ...
    ValueError: quench must be True or False, got 1
    """

    def check(value):
        return isinstance(value, bool) or type(value).__name__ == "bool_"

    return Option(name, bool, default, doc, "True or False", check, ("yes",), quick)


def seed(doc: str = "seed or numpy Generator; the same seed gives the same result") -> Option:
    """The ``random_state`` option: None, a non-negative integer or a ``numpy.random.Generator``.

    Examples
    --------
    >>> seed().validate(-1)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ValueError: random_state must be None, an integer >= 0 or a numpy Generator or RandomState, ...
    """

    def check(value):
        if value is None or type(value).__name__ in ("Generator", "RandomState"):
            return True
        return _is_int(value) and value >= 0

    return Option(
        "random_state",
        (int, type(None)),
        None,
        doc,
        "None, an integer >= 0 or a numpy Generator or RandomState",
        check,
        (-1, "seed"),
    )


def anything(name, default, doc, constraint: str = "", quick=NOTSET) -> Option:
    """An option the method checks itself (arrays, dicts, test sets): declared, not checked here.

    Examples
    --------
    >>> anything("init", None, "initial parameters").validate({"theta": 1})
    {'theta': 1}
    """
    return Option(name, object, default, doc, constraint, None, (), quick)


def take_declared(declared, options: dict, function: str | None = None) -> dict:
    """The ``declared`` options taken out of ``options`` (which keeps the rest): each given one
    checked against its declaration (``ValueError`` naming it), the others at their declared
    default; a function that takes ``**options`` reads its keywords through the same
    declarations as its family's method.

    Parameters
    ----------
    declared : iterable of Option
    options : dict
        The keyword options given; the declared ones are removed from it.
    function : str, optional
        The caller's name: given, what is left in ``options`` is refused with the ``TypeError``
        Python raises for an unexpected keyword (the caller takes no other options).

    Returns
    -------
    dict
        Option name -> value, in the declared order.

    Examples
    --------
    >>> options = {"m": 5, "other": 1}
    >>> take_declared((integer("m", 100, "subsample"), integer("k", 2, "clusters")), options)
    {'m': 5, 'k': 2}
    >>> options
    {'other': 1}
    >>> take_declared((), options, "f")
    Traceback (most recent call last):
    ...
    TypeError: f() got unexpected keyword arguments ['other']
    """
    taken = {
        option.name: option.validate(options.pop(option.name, option.default))
        for option in declared
    }
    if function is not None and options:
        raise TypeError(f"{function}() got unexpected keyword arguments {sorted(options)}")
    return taken


# ---------------------------------------------------------------- options several families share
def with_defaults(options, defaults: Mapping) -> tuple[Option, ...]:
    """``options`` with the defaults a family gives some of them (e.g. a slower cooling).

    Examples
    --------
    >>> [o.default for o in with_defaults(SCHEDULE_OPTIONS, {"tol": 1e-7})][:3]
    ['auto', 200, 1e-07]
    """
    return tuple(
        replace(option, default=defaults[option.name]) if option.name in defaults else option
        for option in options
    )


def _betas_ok(value) -> bool:
    """What the annealing driver takes (``annealing.check_schedule``): ``'auto'``,
    ``'early_stopping'``, a schedule that lists its inverse temperatures (``betas()``, e.g. a
    ``GeometricCooling``), one positive finite inverse temperature or a non-empty list of them
    (above 1 too: the checks run at 50)."""
    if isinstance(value, str):
        return value in ("auto", "early_stopping")
    if callable(getattr(value, "betas", None)):
        return True
    if _is_real(value):
        return 0 < value < float("inf")
    try:
        values = list(value)
    except TypeError:
        return False
    for position, beta in enumerate(values):
        if not (_is_real(beta) and 0 < beta < float("inf")):
            # The offending entry named, as annealing.check_schedule does.
            raise ValueError(f"betas[{position}] = {beta!r} must be a positive finite number")
    check_cooling(values)
    return bool(values)


def check_cooling(betas) -> None:
    """Refuse a schedule that heats: annealing lowers the temperature, so the inverse temperatures
    of an explicit ``betas`` list never decrease (a decreasing list was accepted silently and ran
    EM hotter and hotter, ending at its smallest beta).

    Examples
    --------
    >>> check_cooling([0.5, 0.5, 1.0])
    >>> check_cooling([1.0, 0.5])
    Traceback (most recent call last):
    ...
    ValueError: betas[1] = 0.5 is below betas[0] = 1.0: an annealing schedule cools, its inverse temperatures never decrease
    """
    for position in range(1, len(betas)):
        if betas[position] < betas[position - 1]:
            raise ValueError(
                f"betas[{position}] = {betas[position]!r} is below betas[{position - 1}] = "
                f"{betas[position - 1]!r}: an annealing schedule cools, its inverse temperatures "
                "never decrease"
            )


SCHEDULE_OPTIONS = (
    Option(
        "betas",
        (str, list),
        "auto",
        "inverse temperatures, increasing to 1, or 'auto' (chosen on held-out data)",
        "'auto', 'early_stopping', a GeometricCooling or a non-empty, non-decreasing list of"
        " positive numbers",
        _betas_ok,
        ([], [0.0, 1.0], [1.0, 0.5], "hot"),
    ),
    integer("max_iter", 200, "EM iterations at most, per temperature"),
    real("tol", 1e-5, "relative change of the free energy that ends a temperature (0: never)", 0),
    real("overrelax", 1.0, "over-relaxation factor of the M-step", 1.0, 2.0, False, True),
    seed(),
    real("validation_fraction", 0.1, "held-out share of the data for 'auto'", 0, 1, True, True),
    real("beta_decay", 0.9, "factor between the inverse temperatures of 'auto'", 0, 1, True, True),
    real("min_beta", 0.05, "lowest inverse temperature of 'auto'", 0, 1, True),
    integer("patience", 10, "iterations without held-out improvement before stopping"),
    integer("beta_patience", 1, "temperatures without improvement before 'auto' stops"),
    integer("min_iter", 30, "iterations at least, per temperature", low=0),
    real("score_tol", 1e-3, "relative held-out improvement that counts", 0),
    flag("progressbar", False, "show a progress bar"),
)
"""The annealing schedule of every family's annealed EM (:func:`~latentzoo.inference.annealing.annealed_fit`)."""

GIBBS_OPTIONS = (
    integer("chains", 4, "independent chains"),
    integer("draws", 500, "kept draws per chain"),
    integer("tune", 200, "discarded burn-in sweeps per chain", low=0),
    integer("thin", 1, "keep every thin-th sweep"),
    seed(),
    flag("progressbar", True, "show a progress bar"),
    anything("initial_assignments", None, "starting labels per chain (None: random)"),
    flag("align_labels", True, "relabel each chain to match chain 0"),
)
"""The options every collapsed Gibbs sampler takes (:func:`~latentzoo.inference.mcmc.gibbs_entry`)."""


def _dtype_ok(value) -> bool:
    name = getattr(value, "__name__", None) or getattr(value, "name", None) or value
    return name in ("float32", "float64")


THREADS = integer("n_threads", 1, "threads of the numba kernel (1: serial)")
"""``n_threads`` of the EM kernels."""

DTYPE = Option(
    "dtype",
    object,
    "float64",
    "float type of the kernel (float32: faster, about 1e-7 relative)",
    "float32 or float64",
    _dtype_ok,
    ("float16", None),
)
"""``dtype`` of the EM kernels."""

GIBBS_TEST = anything("test", None, "held-out data scored in log_likelihood (same shape)")
KEEP_PARAMS = Option(
    "keep_params",
    (bool, str),
    "auto",
    "keep the parameter draws in the posterior ('auto': when they are small)",
    "True, False or 'auto'",
    lambda value: isinstance(value, bool) or (isinstance(value, str) and value == "auto"),
    ("always",),
)

GIBBS_METHOD_OPTIONS = (*GIBBS_OPTIONS, GIBBS_TEST, KEEP_PARAMS)
"""The options of a family's ``gibbs`` method (:func:`~latentzoo.inference.mcmc.gibbs_entry`)."""


def hard_options(*options: Option) -> tuple[Option, ...]:
    """The options of a hard-assignment method: ``max_iter``, ``random_state``, the family's own
    ``options``, ``progressbar``.

    Examples
    --------
    >>> [option.name for option in hard_options(integer("n_init", 1, "random starts"))]
    ['max_iter', 'random_state', 'n_init', 'progressbar']
    """
    return (
        integer("max_iter", 100, "iterations at most"),
        seed(),
        *options,
        flag("progressbar", False, "show a progress bar"),
    )


# ---------------------------------------------------------------------------------- methods
@dataclass(frozen=True)
class Method:
    """A fast method of a family: the real function and its declared options.

    Calling the method checks each given option against its declaration (``ValueError`` naming
    it, before any work) and calls the function with the options unchanged; an option the method
    does not declare is refused the same way (``ValueError``, saying so when
    it is ``random_state`` given to a deterministic method), not left to Python's ``TypeError``.
    How a result is saved, summarised and drawn is asked of the result itself
    (:mod:`latentzoo.inference.fitted`).

    Examples
    --------
    >>> def fit(model, data, n_init=1, random_state=None):
    ...     "Fit."
    ...     return n_init
    >>> method = Method(fit, (integer("n_init", 1, "restarts"), seed()))
    >>> method(None, None, n_init=3), method.__name__, method.takes_random_state
    (3, 'fit', True)
    >>> method.validate({"n_inits": 2})
    Traceback (most recent call last):
    ...
    ValueError: fit takes no option 'n_inits'; its options are n_init, random_state
    >>> def ward(model, data):
    ...     "Deterministic."
    >>> Method(ward)(None, None, random_state=0)
    Traceback (most recent call last):
    ...
    ValueError: ward takes no option 'random_state': it is deterministic (the same data give the same result); its options are none
    """

    function: Callable
    options: Mapping[str, Option] = field(default_factory=dict)
    time_order: int = 1
    """How the run time grows with the number of items (2: every pair is scored, as greedy BHC
    does); ``latentzoo fit`` estimates and says the time of a long run of an order above 1."""
    faster: str = ""
    """What to run instead when a run of this method would be long (said with the estimate)."""
    blocks: type | None = None
    """The class that runs this method's E-step and statistics over row blocks (a
    :class:`~latentzoo.inference.dask_backend.BlockEM`, built as ``blocks(model, **options)``), so
    that ``fit(..., backend="dask")`` can run it; None: the method has no Dask backend. Declared
    by the family, importable without Dask."""

    def __post_init__(self):
        options = self.options
        if not isinstance(options, Mapping):
            options = {option.name: option for option in options}
        object.__setattr__(self, "options", dict(options))
        for attribute in ("__name__", "__qualname__", "__doc__", "__module__"):
            object.__setattr__(self, attribute, getattr(self.function, attribute, None))
        object.__setattr__(self, "__wrapped__", self.function)

    def __call__(self, model, data, **options):
        for name, value in options.items():
            if name in self.options:
                self.options[name].validate(value)
            elif self.options or not self._function_takes(name):
                # A method that declares its options declares all of them; one that declares none
                # (a user's own) takes what its function takes.
                self._refuse(name)
        return self.function(model, data, **options)

    def _function_takes(self, name: str) -> bool:
        parameters = self._parameters
        return name in list(parameters)[2:] or any(
            p.kind is inspect.Parameter.VAR_KEYWORD for p in parameters.values()
        )

    def _refuse(self, name: str):
        known = list(self.options) or list(self._parameters)[2:]
        why = (
            ": it is deterministic (the same data give the same result)"
            if name == "random_state"
            else ""
        )
        raise ValueError(
            f"{self.__name__} takes no option {name!r}{why}; its options are {', '.join(known) or 'none'}"
        )

    def __getattr__(self, name: str):
        # What the function carries besides (a Gibbs entry's ``prepare``) is the method's too.
        function = self.__dict__.get("function")
        if function is None or name.startswith("__"):
            raise AttributeError(name)
        return getattr(function, name)

    @property
    def __signature__(self):
        return inspect.signature(self.function)

    @property
    def _parameters(self) -> Mapping[str, inspect.Parameter]:
        return inspect.signature(self.function).parameters

    def takes(self, name: str) -> bool:
        """Whether the method takes option ``name`` (declared, or a keyword of its function)."""
        return name in self.options or name in list(self._parameters)[2:]

    @property
    def takes_random_state(self) -> bool:
        """Whether the method is random (takes ``random_state``)."""
        return self.takes("random_state")

    @property
    def takes_progressbar(self) -> bool:
        """Whether the method can show progress (takes ``progressbar``)."""
        return self.takes("progressbar")

    def option(self, name: str) -> Option:
        """The declaration of option ``name``; ``ValueError`` naming it if there is none."""
        if name not in self.options:
            known = ", ".join(self.options) or "none"
            raise ValueError(f"{self.__name__} takes no option {name!r}; its options are {known}")
        return self.options[name]

    def validate(self, options: Mapping) -> dict:
        """``options``, each checked against its declaration (``ValueError`` naming it)."""
        return {name: self.option(name).validate(value) for name, value in options.items()}

    @property
    def kind(self) -> str:
        """``"sampler"`` (takes ``chains``), ``"em"`` (takes ``betas``) or ``"point"``.

        Examples
        --------
        >>> Method(lambda model, data, **o: o, GIBBS_OPTIONS).kind
        'sampler'
        """
        if "chains" in self.options:
            return "sampler"
        return "em" if "betas" in self.options else "point"

    def quick_options(self) -> dict:
        """The options quick runs pass (:attr:`Option.quick`), by name.

        Examples
        --------
        >>> Method(lambda model, data, m=100: m, (integer("m", 100, "size", quick=10),)).quick_options()
        {'m': 10}
        """
        return {name: o.quick for name, o in self.options.items() if o.has_quick}

    def describe(self) -> str:
        """The options table of the method, one line each (for docs and ``--help``)."""
        return "\n".join(option.describe() for option in self.options.values())


# ---------------------------------------------------------------------------------- families
@dataclass(frozen=True)
class Family:
    """One family of the zoo: its model class, its methods, its validation recipe.

    Attributes
    ----------
    name : str
        Name on the command line.
    model : type
        The model class. Its ``data_type`` is the container it takes; its ``protocol`` says what
        it is (a likelihood, cost, tree or retrieval model).
    methods : Mapping[str, Method]
        Fast method name -> :class:`Method` (callables are wrapped without declared options).
    recipe : callable or None
        ``recipe() -> ValidationRecipe``: how :func:`latentzoo.validate` checks the methods.
    sizes : tuple of str
        Constructor arguments set by ``--k`` and ``--k-cols`` on the command line, in that order.
    dataset : str
        Default dataset of ``latentzoo fit`` / ``validate``.
    notebook : str
        Path of the family's executed notebook.
    description : str
    options : tuple of Option
        How the command line builds the model, where a family's default differs from the
        command line's: ``k`` (the HACM's is a tree depth, 3), ``prior_scale`` (BHC's empirical
        Beta-Bernoulli prior, 2).
    skipped_checks : Mapping[str, str]
        Common checks that cannot apply, check name -> the reason.

    Examples
    --------
    >>> from latentzoo.zoo import ZOO
    >>> family = ZOO["aspect"]
    >>> family.data.__name__, family.reference, sorted(family.methods)
    ('CoOccurrence', 'pymc', ['ad_lda', 'annealed_em', 'gibbs'])
    """

    name: str
    model: type
    methods: Mapping[str, Method]
    recipe: Callable | None
    sizes: tuple[str, ...]
    dataset: str
    notebook: str
    description: str
    options: tuple[Option, ...] = ()
    skipped_checks: Mapping[str, str] = field(default_factory=dict)

    def __post_init__(self):
        methods = {
            name: method if isinstance(method, Method) else Method(method)
            for name, method in self.methods.items()
        }
        object.__setattr__(self, "methods", methods)
        object.__setattr__(self, "options", tuple(self.options))
        object.__setattr__(self, "skipped_checks", dict(self.skipped_checks))

    @property
    def data(self) -> type:
        """The data container the model takes (``model.data_type``)."""
        return self.model.data_type

    @property
    def reference(self) -> str:
        """``"pymc"`` when the model declares itself in PyMC, else the family it approximates
        (the model's ``reference_family``: BHC approximates the ``"dpm"``)."""
        if callable(getattr(self.model, "pymc_model", None)):
            return "pymc"
        return getattr(self.model, "reference_family", "none")

    @property
    def protocol(self):
        """What the model is (its ``protocol`` class attribute), or None if it declares none."""
        return getattr(self.model, "protocol", None)

    def option(self, name: str) -> Option | None:
        """The family's declaration of model-building option ``name`` (None: the CLI's own)."""
        return next((option for option in self.options if option.name == name), None)

    def labels_to_align(self, model) -> tuple:
        """The labels that switch between chains of a posterior of ``model`` (empty if none):
        those of its Gibbs sampler's module (``label_axes(model)``)."""
        gibbs = self.methods.get("gibbs")
        if gibbs is None:
            return ()
        module = inspect.getmodule(gibbs.function)
        label_axes = getattr(module, "label_axes", None)
        return () if label_axes is None else tuple(label_axes(model))
