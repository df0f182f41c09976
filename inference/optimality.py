"""Point estimators checked by optimality, and the PyMC declaration checked against the model.

Four checks, each independent of the code it checks:

* :func:`density_check` (level ``"density"``): at random points of the prior, the log density of
  the PyMC declaration (without the Jacobians of its transforms) equals the model's
  ``log_likelihood`` plus :meth:`log_prior`, each written with numpy/scipy independently of
  PyMC. The prior terms must agree exactly; the likelihood terms up to a constant common to all
  points (a multinomial coefficient that one side leaves out). A wrong prior in the declaration
  (theta's Dirichlet using ``eta``) or a wrong likelihood fails it.
* :func:`kkt_check` (level ``"optimality"``): at the estimate of an EM run at ``beta = 1`` (a MAP
  estimate), the gradient of PyMC's log density with respect to its unconstrained value variables
  vanishes. PyMC's simplex transform is a diffeomorphism onto the interior of the simplex, so this
  is the stationarity (KKT) condition of the MAP under the simplex constraints; the gradient comes
  from PyTensor's automatic differentiation of the declaration, not from the EM code, so an M-step
  with ``alpha`` in place of ``alpha - 1`` fails it. Where a prior concentration is ``<= 1`` and
  the MAP may sit on the boundary, the sign condition of the KKT conditions is checked as well.
* :func:`find_map_check` (level ``"optimality"``): ``pymc.find_MAP`` started at the estimate does
  not improve the log posterior by more than :data:`MAP_GAIN_TOL` nats, and the invariants at its
  optimum equal the estimate's.
* :func:`mean_field_check` (level ``"optimality"``): the two-sided model's mean-field estimate,
  a variational fixed point rather than a point of its PyMC posterior (whose ``I``, ``J`` are
  discrete), is a stationary point of the mean-field free energy, written here independently of
  the EM code and differentiated by central differences.

**Units of the KKT residual.** In PyMC's simplex coordinates ``u`` the partial derivative of the
log density is a difference of two *count residuals* ``x_k (G_k - lambda)`` (``G`` the gradient
in the natural coordinates, ``lambda = sum_k x_k G_k`` the Lagrange multiplier): expected counts
plus pseudo-counts minus the fitted share of their total. A pseudo-count that is off by ``delta``
shows as residuals of order ``delta`` (``|K x_k - 1|`` for ``delta = 1``), whatever the data size.
EM stopped at a relative free-energy change of ``1e-10`` leaves residuals of at most ``5e-3``
counts on the validation problems (measured: aspect 3e-4 to 8e-4, one-sided below 1e-5,
product-space 2e-3 to 4e-3, whose EM converges slowest). EM converges linearly at a rate ``r``, so
the remaining gap in the objective is about the last change times ``r / (1 - r)`` and the residual
about the square root of that gap times the curvature. :data:`KKT_TOL` = 0.05 counts lies a
factor of 10 or more above those residuals and 40 or more below the residuals of a pseudo-count
error of one (measured 2.3 to 4.6). Likewise :data:`MAP_GAIN_TOL`: ``find_MAP`` gained at most
3e-5 nats from converged EM estimates and 1.4 to 4.9 nats from those of the wrong M-step.
"""

from __future__ import annotations

import contextlib
import warnings

import numpy as np

from latentzoo.data.checks import as_rng
from latentzoo.inference.compare import Check, Comparison

__all__ = [
    "DENSITY_RTOL",
    "INVARIANT_ATOL",
    "KKT_TOL",
    "MAP_GAIN_TOL",
    "density_check",
    "find_map_check",
    "kkt_check",
    "mean_field_check",
    "prior_draw",
    "pymc_free_values",
]

DENSITY_RTOL = 1e-6
"""Relative tolerance of :func:`density_check` (of the largest absolute log density compared)."""

KKT_TOL = 0.05
"""Largest KKT residual (counts; see the module docstring) that passes :func:`kkt_check`."""

MAP_GAIN_TOL = 1e-3
"""Largest gain of the log posterior (nats) that ``find_MAP`` may find from a MAP estimate."""

INVARIANT_ATOL = 1e-3
"""Largest difference of an invariant between EM and ``find_MAP``, relative to ``max(1, |value|)``."""

OPTIMALITY = "optimality"
"""The level name of the optimality checks."""
DENSITY = "density"
"""The level name of the density spot check."""


# ----------------------------------------------------------------------------- PyMC points
@contextlib.contextmanager
def _compiling():
    """Compile PyTensor functions with few graph rewrites and PyMC's warnings silenced.

    Each function here is evaluated a handful of times (``find_MAP``: a few hundred), so compiling
    dominates: ``FAST_COMPILE`` measured 1.5 s against 3-5 s per log density and gradient pair.
    """
    import pytensor

    with warnings.catch_warnings(), pytensor.config.change_flags(mode="FAST_COMPILE"):
        warnings.simplefilter("ignore")
        yield


def pymc_free_values(model, params, pm_model) -> dict[str, np.ndarray]:
    """The natural (constrained) values of the free variables of ``pm_model`` at ``params``.

    A free variable named like a parameter takes its value; ``<name>_flat`` the flattened
    ``params[name]`` (the product-space mixture's ``pi_flat``); the model's ``pymc_values``
    supplies the others (the mixtures: stick fractions, Bartlett variables).

    Parameters
    ----------
    model : a registered model
    params : dict of parameter arrays, named as in ``model.param_names``
    pm_model : pymc.Model
        ``model.pymc_model(data)``.

    Returns
    -------
    dict mapping each free variable's name to a numpy array of its dtype

    Examples
    --------
    >>> from latentzoo.models import ProductSpaceMixture
    >>> model = ProductSpaceMixture(2, 2)
    >>> data, truth = model.simulate(0, n_docs=4, n_words=5, n_tokens=30)
    >>> sorted(pymc_free_values(model, truth, model.pymc_model(data)))
    ['p_row', 'pi_flat', 'q_col']
    """
    source = model.pymc_values(params)
    out = {}
    for rv in pm_model.free_RVs:
        name = rv.name
        if name in source:
            value = source[name]
        elif name.endswith("_flat") and name[: -len("_flat")] in source:
            value = np.ravel(source[name[: -len("_flat")]])
        else:
            raise ValueError(f"params give no value for the PyMC variable {name!r}")
        out[name] = np.asarray(value, dtype=rv.dtype).reshape(tuple(rv.shape.eval()))
    return out


def _value_point(pm_model, natural) -> dict[str, np.ndarray]:
    """The point of PyMC's value variables (transformed space) at the natural values."""
    from pymc.initial_point import make_initial_point_fn

    point = make_initial_point_fn(
        model=pm_model, overrides=natural, jitter_rvs=set(), return_transformed=True
    )(0)
    return {name: np.asarray(value) for name, value in point.items()}


def _is_discrete(rv) -> bool:
    return rv.dtype.startswith("int") or rv.dtype.startswith("uint") or rv.dtype == "bool"


def _prior_and_likelihood_terms(pm_model):
    """``(prior, likelihood)`` terms of the declaration: free variables and potentials named
    ``*prior*`` against observed variables and the other potentials."""
    prior = [*pm_model.free_RVs, *(p for p in pm_model.potentials if "prior" in p.name)]
    likelihood = [
        *pm_model.observed_RVs,
        *(p for p in pm_model.potentials if "prior" not in p.name),
    ]
    return prior, likelihood


def _model_log_likelihood(model, params, data, pm_model) -> float:
    """The model's own log-likelihood of ``data`` at ``params`` (summed), as the declaration has it.

    When every free variable of the declaration is discrete (the two-sided model, whose
    continuous parameters are integrated out), the likelihood of the declaration is the collapsed
    one: ``collapsed_log_joint`` minus :meth:`log_prior`. Otherwise the model's
    ``reference_log_likelihood``, the likelihood as its declaration has it (the product-space
    mixture's joint one, whose ``log_likelihood`` is the conditional ``P(y | x)``).
    """
    if all(_is_discrete(rv) for rv in pm_model.free_RVs):
        labels = [params[name] for name in model.param_names]
        joint = float(np.asarray(model.collapsed_log_joint(*labels, data)).ravel()[0])
        return joint - float(model.log_prior(params))
    return float(np.sum(model.reference_log_likelihood(params, data)))


def prior_draw(model, data, rng) -> dict[str, np.ndarray]:
    """Parameters drawn from the prior of ``model`` at the sizes of ``data``.

    The truth of ``model.simulate`` at the data's sizes (its data are discarded); for the
    Dirichlet process mixture, whose PyMC declaration is truncated, the ``n_components - 1`` stick
    fractions ``v ~ Beta(1, alpha)``, the weights they give and ``n_components`` component draws.

    Examples
    --------
    >>> from latentzoo.models import OneSidedClustering
    >>> from latentzoo.data import load
    >>> draw = prior_draw(OneSidedClustering(2), load("toy"), np.random.default_rng(0))
    >>> draw["rho"].shape, draw["q"].shape
    ((2,), (2, 8))
    """
    return model.prior_draw(data, np.random.default_rng(rng))


# ----------------------------------------------------------------------------- density
def density_check(model, data, rng, n_points: int = 5, rtol: float = DENSITY_RTOL) -> Comparison:
    """The PyMC declaration's log density equals the model's log-likelihood plus log prior.

    At ``n_points`` parameter draws from the prior (:func:`prior_draw`; a draw where either side
    is not finite is replaced, up to ten times per point) the declaration's log density without
    Jacobians is split into its prior terms (free variables and potentials named ``*prior*``) and
    its likelihood terms (observed variables and the other potentials). The prior terms must equal
    ``model.log_prior(params)``; the likelihood terms must equal the model's log-likelihood up to a
    constant common to all points (the mean difference is removed); so must the totals. Tolerance:
    ``rtol`` times the largest absolute log density compared (at least 1).

    Parameters
    ----------
    model : a registered model
    data : the model's data container
    rng : int or numpy.random.Generator
    n_points : int
        At least 2 (the likelihood is compared up to a constant).
    rtol : float

    Returns
    -------
    Comparison
        One check, level ``"density"``, named ``"pymc log density = log-likelihood + log
        prior"``, with the largest deviations in ``numbers``.

    Examples
    --------
    >>> from latentzoo.models import AspectModel
    >>> model = AspectModel(2)
    >>> data, _ = model.simulate(0, n_docs=4, n_words=6, doc_length=10)
    >>> density_check(model, data, 0, n_points=3).passed
    True
    """
    if int(n_points) != n_points or n_points < 2:
        raise ValueError(f"n_points must be an integer >= 2, got {n_points!r}")
    if not rtol > 0:
        raise ValueError(f"rtol must be positive, got {rtol!r}")
    rng = np.random.default_rng(rng)
    data = model.check_data(data)
    pm_model = model.pymc_model(data)
    prior_terms, likelihood_terms = _prior_and_likelihood_terms(pm_model)
    with _compiling():
        prior_fn = pm_model.compile_logp(vars=prior_terms, jacobian=False)
        likelihood_fn = pm_model.compile_logp(vars=likelihood_terms, jacobian=False)
    rows = []
    for _ in range(int(n_points)):
        for _attempt in range(10):
            params = prior_draw(model, data, rng)
            point = _value_point(pm_model, pymc_free_values(model, params, pm_model))
            with np.errstate(all="ignore"):
                row = (
                    float(prior_fn(point)),
                    float(likelihood_fn(point)),
                    float(model.log_prior(params)),
                    _model_log_likelihood(model, params, data, pm_model),
                )
            if np.all(np.isfinite(row)):
                break
        else:
            raise RuntimeError("ten prior draws in a row gave a non-finite log density")
        rows.append(row)
    pymc_prior, pymc_lik, own_prior, own_lik = np.array(rows).T
    scale = max(1.0, float(np.max(np.abs(rows))))
    tolerance = rtol * scale
    lik_gap = pymc_lik - own_lik
    total_gap = (pymc_prior + pymc_lik) - (own_prior + own_lik)
    numbers = {
        "prior_max_abs_diff": float(np.max(np.abs(pymc_prior - own_prior))),
        "likelihood_max_abs_diff": float(np.max(np.abs(lik_gap - lik_gap.mean()))),
        "total_max_abs_diff": float(np.max(np.abs(total_gap - total_gap.mean()))),
        "likelihood_offset": float(lik_gap.mean()),
        "tolerance": tolerance,
        "n_points": int(n_points),
    }
    parts = ("prior", "likelihood", "total")
    bad = [part for part in parts if numbers[f"{part}_max_abs_diff"] > tolerance]
    detail = (
        f"{int(n_points)} prior draws: max |difference| prior {numbers['prior_max_abs_diff']:.2g}, "
        f"likelihood {numbers['likelihood_max_abs_diff']:.2g} (after a common offset "
        f"{numbers['likelihood_offset']:.4g}), total {numbers['total_max_abs_diff']:.2g} "
        f"(tolerance {tolerance:.2g})"
    )
    if bad:
        detail += f"; the {' and '.join(bad)} terms disagree"
    check = Check(
        DENSITY, "pymc log density = log-likelihood + log prior", not bad, detail, numbers
    )
    return Comparison(checks=[check])


# ----------------------------------------------------------------------------- optimality
def _posterior_declaration(model, data, name, check_name):
    """``(data, pm_model, skipped)``: the checked ``data``, the model's PyMC declaration on them
    and, when the declaration has discrete free variables (no gradient, and a point estimate of
    the continuous parameters is not a point of its posterior), the skipped check (else None)."""
    data = model.check_data(data)
    pm_model = model.pymc_model(data)
    return data, pm_model, _not_a_posterior_point(pm_model, name, check_name)


def _not_a_posterior_point(pm_model, name, check_name) -> Comparison | None:
    """A skipped check when the declaration has discrete free variables."""
    discrete = [rv.name for rv in pm_model.free_RVs if _is_discrete(rv)]
    if not discrete:
        return None
    reason = (
        f"not applicable: the PyMC declaration's free variables {', '.join(discrete)} are "
        "discrete (the continuous parameters are integrated out), so the "
        f"{name} estimate of the continuous parameters (e.g. a variational mean-field fixed "
        "point) is no point of its posterior and there is no gradient to vanish"
    )
    return Comparison(skipped=[Check(OPTIMALITY, check_name, True, reason)])


_MAP_CHECK_SECTIONS = """    Returns
    -------
    Comparison
        One check, level ``"optimality"``, or a skipped one.

    Examples
    --------
    >>> from latentzoo.inference.aspect import annealed_em
    >>> from latentzoo.models import AspectModel
    >>> model = AspectModel(2)
    >>> data, _ = model.simulate(0, n_docs=5, n_words=6, doc_length=20)
    >>> fit = annealed_em(model, data, betas=[1.0], tol=1e-10, max_iter=5000, random_state=0)
    >>> {check}(model, data, fit.params).passed
    True
    """


def _map_check_sections(check):
    """End the docstring of a check of a MAP estimate with the Returns and Examples sections the
    two share (:func:`kkt_check`, :func:`find_map_check`: one report, the same annealed-EM fit)."""
    check.__doc__ = (
        f"{check.__doc__.rstrip()}\n\n{_MAP_CHECK_SECTIONS.format(check=check.__name__)}"
    )
    return check


def _concentrations(rv) -> np.ndarray | None:
    """The Dirichlet concentration of a simplex-valued free variable (None for others)."""
    node = rv.owner
    try:
        params = node.op.dist_params(node)
    except (AttributeError, TypeError):
        return None
    if not params:
        return None
    return np.asarray(params[-1].eval(), dtype=float)


def _simplex_rvs(pm_model):
    from pymc.logprob.transforms import SimplexTransform

    return [
        rv
        for rv in pm_model.free_RVs
        if isinstance(pm_model.rvs_to_transforms.get(rv), SimplexTransform)
    ]


def _dual_violation(pm_model, natural, tol) -> tuple[float, int]:
    """Largest sign violation of the KKT conditions at coordinates on the simplex boundary.

    In natural coordinates, with ``G`` the gradient of the log density and ``lambda = sum_k x_k
    G_k`` per simplex row: a coordinate whose expected count ``x_k lambda`` is below ``tol``
    (numerically on the boundary, where the residual in ``u`` vanishes whatever the gradient)
    must have ``(G_k - lambda) / lambda <= 0``, the gain in nats of moving one count's share of
    mass onto it. Returns the largest such gain (``-inf`` without boundary coordinates) and the
    number of boundary coordinates.
    """
    from pymc.model.transform.conditioning import remove_value_transforms

    plain = remove_value_transforms(pm_model)
    simplex = [rv.name for rv in _simplex_rvs(pm_model)]
    rvs = [plain[name] for name in simplex]
    with _compiling():
        dlogp = plain.compile_dlogp(vars=rvs, jacobian=False)
    point = {rv.name: natural[rv.name] for rv in plain.free_RVs}
    gradient = np.asarray(dlogp(point), dtype=float)
    worst, n_boundary, start = -np.inf, 0, 0
    for name in simplex:
        x = np.asarray(natural[name], dtype=float)
        g = gradient[start : start + x.size].reshape(x.shape)
        start += x.size
        lam = np.sum(x * g, axis=-1, keepdims=True)
        on_boundary = (x * lam < tol) & (lam > 1e-12)
        n_boundary += int(on_boundary.sum())
        if on_boundary.any():
            gain = (g - lam) / np.where(lam > 0, lam, 1.0)
            worst = max(worst, float(np.max(np.where(on_boundary, gain, -np.inf))))
    return worst, n_boundary


@_map_check_sections
def kkt_check(
    model, data, params, name: str = "annealed EM", tol: float = KKT_TOL, random_state=0
) -> Comparison:
    """The MAP estimate ``params`` is a stationary point of the PyMC posterior (KKT conditions).

    The gradient of ``pm_model.logp(jacobian=False)`` with respect to the value variables
    (PyMC's unconstrained coordinates) at ``params``: its largest absolute entry, in counts (see
    the module docstring), must not exceed ``tol``. It is reported with the same statistic at a
    draw from the prior (the scale of a gradient away from the optimum). When some simplex
    variable has a Dirichlet concentration ``<= 1`` (its MAP may lie on the boundary), the sign
    condition at the boundary coordinates is checked too (:func:`_dual_violation`, same ``tol``).
    Not applicable when the declaration's free variables are discrete (the two-sided model).

    Parameters
    ----------
    model : a registered model
    data : the data the estimate was fitted to
    params : dict
        The estimate (an EM run with ``betas=[1.0]``), named as in ``model.param_names``.
    name : str
        The estimator's name, for the report.
    tol : float
        Largest residual that passes, in counts.
    random_state : int or Generator
        For the prior draw that sets the reported scale.
    """
    if not tol > 0:
        raise ValueError(f"tol must be positive, got {tol!r}")
    check_name = f"{name} satisfies the MAP's KKT conditions"
    data, pm_model, skipped = _posterior_declaration(model, data, name, check_name)
    if skipped is not None:
        return skipped
    rvs = list(pm_model.free_RVs)
    with _compiling():
        dlogp = pm_model.compile_dlogp(vars=rvs, jacobian=False)
    natural = pymc_free_values(model, params, pm_model)
    gradient = np.asarray(dlogp(_value_point(pm_model, natural)), dtype=float)
    residual = float(np.max(np.abs(gradient)))
    draw = prior_draw(model, data, as_rng(random_state))
    with np.errstate(all="ignore"):
        away = np.asarray(
            dlogp(_value_point(pm_model, pymc_free_values(model, draw, pm_model))), dtype=float
        )
    scale = float(np.max(np.abs(away[np.isfinite(away)]))) if np.isfinite(away).any() else np.nan
    numbers = {
        "max_abs_gradient": residual,
        "gradient_at_prior_draw": scale,
        "relative": residual / scale if scale > 0 else np.nan,
        "tolerance": float(tol),
        "n_coordinates": int(gradient.size),
    }
    passed = bool(residual <= tol)
    detail = (
        f"max |d log p / d u| = {residual:.3g} counts over {gradient.size} unconstrained "
        f"coordinates (tolerance {tol:g}; {scale:.3g} at a prior draw)"
    )
    boundary = [
        rv.name
        for rv in _simplex_rvs(pm_model)
        if (c := _concentrations(rv)) is not None and np.any(c <= 1.0)
    ]
    if boundary:
        violation, n_boundary = _dual_violation(pm_model, natural, tol)
        numbers.update({"boundary_gain": violation, "n_boundary": n_boundary})
        passed = passed and violation <= tol
        detail += f"; prior concentration <= 1 on {', '.join(boundary)}: {n_boundary} coordinates"
        detail += " on the boundary"
        if n_boundary:
            detail += f", largest gain of moving mass onto one {violation:.3g} (tolerance {tol:g})"

    return Comparison(checks=[Check(OPTIMALITY, check_name, passed, detail, numbers)])


@_map_check_sections
def find_map_check(
    model,
    data,
    params,
    name: str = "annealed EM",
    gain_tol: float = MAP_GAIN_TOL,
    invariant_atol: float = INVARIANT_ATOL,
    maxeval: int = 20_000,
) -> Comparison:
    """``pymc.find_MAP`` started at the estimate finds no better posterior point.

    L-BFGS on PyMC's log density without Jacobians (the MAP objective in the natural
    parametrisation) from ``params``: the log posterior may rise by at most ``gain_tol`` nats, and
    every invariant at ``find_MAP``'s optimum must equal the estimate's within ``invariant_atol``
    times ``max(1, |value|)``. Not applicable when the declaration's free variables are discrete.

    Parameters
    ----------
    model : a registered model
    data : the data the estimate was fitted to
    params : dict
        The estimate (an EM run with ``betas=[1.0]``).
    name : str
    gain_tol, invariant_atol : float
    maxeval : int
        Largest number of log-density evaluations of ``find_MAP``.
    """
    import pymc as pm

    for option, value in (("gain_tol", gain_tol), ("invariant_atol", invariant_atol)):
        if not value > 0:
            raise ValueError(f"{option} must be positive, got {value!r}")
    if int(maxeval) != maxeval or maxeval < 1:
        raise ValueError(f"maxeval must be a positive integer, got {maxeval!r}")
    check_name = f"pymc find_MAP cannot improve {name}"
    data, pm_model, skipped = _posterior_declaration(model, data, name, check_name)
    if skipped is not None:
        return skipped
    natural = pymc_free_values(model, params, pm_model)
    start = _value_point(pm_model, natural)
    with _compiling():
        logp = pm_model.compile_logp(jacobian=False)
        found = pm.find_MAP(start=natural, model=pm_model, progressbar=False, maxeval=int(maxeval))
    gain = float(logp({k: found[k] for k in start})) - float(logp(start))
    estimate = model.invariants(params, data)
    optimum = model.invariants(
        {n: np.asarray(found[n]) for n in model.param_names if n in found}, data
    )
    worst_name, worst = "", 0.0
    for key, value in estimate.items():
        value = np.atleast_1d(np.asarray(value, dtype=float))
        other = np.atleast_1d(np.asarray(optimum[key], dtype=float))
        gap = float(np.max(np.abs(other - value) / np.maximum(1.0, np.abs(value))))
        if gap >= worst:
            worst_name, worst = key, gap
    passed = bool(gain <= gain_tol and worst <= invariant_atol)
    numbers = {
        "log_posterior_gain": gain,
        "gain_tolerance": float(gain_tol),
        "max_invariant_difference": worst,
        "invariant_tolerance": float(invariant_atol),
    }
    detail = (
        f"find_MAP from the estimate gains {gain:.3g} nats (tolerance {gain_tol:g}); largest "
        f"invariant difference {worst:.3g} ({worst_name}; tolerance {invariant_atol:g})"
    )
    return Comparison(checks=[Check(OPTIMALITY, check_name, passed, detail, numbers)])


# ----------------------------------------------------------------------------- mean field
def _softmax_rows(z):
    z = z - np.max(z, axis=-1, keepdims=True)
    e = np.exp(z)
    return e / e.sum(axis=-1, keepdims=True)


def _mean_field_objective(model, data):
    """``-F_1``, the negative mean-field free energy of the SCM at ``beta = 1``, as a function of
    a batch of logit vectors ``z`` (B, P): rows of ``<I>`` (N x Kx), of ``<J>`` (M x Ky), then the
    logits of ``rho^x`` and ``rho^y``.

    Written from the free energy of :mod:`latentzoo.inference.two_sided` (seed eq. (64)) with
    ``c`` at its minimiser ``c = W L / (R C^T)`` (``W = <I>^T n <J>``, ``R``, ``C`` the token
    masses of the clusters), where the Lagrange term vanishes:
    ``sum W log c + sum_i n_i log p_i + sum_j m_j log q_j - KL(<I> || rho^x) - KL(<J> || rho^y)
    + (alpha - 1) (sum log rho^x + sum log rho^y)``. Independent of the EM code.
    """
    counts = data.counts.astype(float).tocsr()
    n_i = data.row_totals.astype(float)
    m_j = data.col_totals.astype(float)
    total = float(data.total)
    with np.errstate(divide="ignore", invalid="ignore"):
        offset = float(np.sum(n_i * np.log(np.where(n_i > 0, n_i / total, 1.0))))
        offset += float(np.sum(m_j * np.log(np.where(m_j > 0, m_j / total, 1.0))))
    (n, m), (kx, ky) = data.shape, model.shape
    bounds = np.cumsum([0, n * kx, m * ky, kx, ky])

    def objective(z):
        batch = z.shape[0]
        soft_i = _softmax_rows(z[:, bounds[0] : bounds[1]].reshape(batch, n, kx))
        soft_j = _softmax_rows(z[:, bounds[1] : bounds[2]].reshape(batch, m, ky))
        rho_x = _softmax_rows(z[:, bounds[2] : bounds[3]])
        rho_y = _softmax_rows(z[:, bounds[3] : bounds[4]])
        # n <J> for every batch member in one sparse-dense product
        stacked = soft_j.transpose(1, 0, 2).reshape(m, batch * ky)
        row_mass = np.asarray(counts @ stacked).reshape(n, batch, ky)
        block = np.einsum("bnk,nbl->bkl", soft_i, row_mass)
        mass_x = np.einsum("n,bnk->bk", n_i, soft_i)
        mass_y = np.einsum("m,bml->bl", m_j, soft_j)
        with np.errstate(divide="ignore", invalid="ignore"):
            ratio = block * total / (mass_x[:, :, None] * mass_y[:, None, :])
            energy = np.sum(np.where(block > 0, block * np.log(ratio), 0.0), axis=(1, 2))
            entropy = np.sum(np.where(soft_i > 0, soft_i * np.log(soft_i), 0.0), axis=(1, 2))
            entropy += np.sum(np.where(soft_j > 0, soft_j * np.log(soft_j), 0.0), axis=(1, 2))
        log_rho_x, log_rho_y = np.log(rho_x), np.log(rho_y)
        cross = np.einsum("bk,bk->b", soft_i.sum(axis=1), log_rho_x)
        cross += np.einsum("bk,bk->b", soft_j.sum(axis=1), log_rho_y)
        prior = (model.alpha - 1.0) * (log_rho_x.sum(axis=1) + log_rho_y.sum(axis=1))
        return offset + energy - entropy + cross + prior

    return objective, bounds


def mean_field_check(
    model, data, params, name: str = "mean_field", tol: float = KKT_TOL, step: float = 1e-5
) -> Comparison:
    """The two-sided mean-field estimate is a stationary point of its free energy.

    The mean-field EM of :class:`~latentzoo.models.TwoSidedClustering` minimises the free energy
    ``F_1(<I>, <J>, rho)`` (``c`` eliminated at its minimiser), not a posterior of the PyMC
    declaration (whose ``I``, ``J`` are discrete), so :func:`kkt_check` does not apply. Instead
    ``-F_1``, written independently of the EM code (:func:`_mean_field_objective`), is
    differentiated by central differences of width ``step`` in the softmax logits of every row of
    ``<I>``, ``<J>`` and of ``rho^x``, ``rho^y``: those derivatives are count residuals as in
    :func:`kkt_check` (a pseudo-count off by one in the ``rho`` update shows as residuals of order
    one), and the largest must not exceed ``tol``. Posteriors that underflowed to 0 enter at logit
    -700 (their residual is 0, as at the boundary of the simplex).

    Parameters
    ----------
    model : TwoSidedClustering
    data : CoOccurrence
    params : dict
        The mean-field estimate: ``I`` (N x Kx) and ``J`` (M x Ky) posteriors, ``rho_x``, ``rho_y``.
    name : str
    tol : float
        Largest residual that passes, in counts.
    step : float
        Width of the central differences in logit units.

    Returns
    -------
    Comparison
        One check, level ``"optimality"``.

    Examples
    --------
    >>> from latentzoo.inference.two_sided import mean_field
    >>> from latentzoo.models import TwoSidedClustering
    >>> model = TwoSidedClustering(2, 2)
    >>> data, _ = model.simulate(0, n_rows=6, n_cols=7, n_tokens=60)
    >>> fit = mean_field(model, data, betas=[1.0], tol=1e-12, max_iter=5000, random_state=0)
    >>> mean_field_check(model, data, fit.params).passed
    True
    """
    for option, value in (("tol", tol), ("step", step)):
        if not value > 0:
            raise ValueError(f"{option} must be positive, got {value!r}")
    data = model.check_data(data)
    objective, bounds = _mean_field_objective(model, data)
    pieces = []
    for key in ("I", "J", "rho_x", "rho_y"):
        value = np.asarray(params[key], dtype=float)
        with np.errstate(divide="ignore"):
            pieces.append(np.maximum(np.log(value), -700.0).ravel())
    z = np.concatenate(pieces)
    if z.size != bounds[-1]:
        raise ValueError(
            f"params hold {z.size} posterior and weight entries, expected {bounds[-1]}: I must be "
            "(N x Kx) and J (M x Ky) posteriors, rho_x (Kx,) and rho_y (Ky,)"
        )
    shifts = step * np.eye(z.size)
    values = objective(np.concatenate([z + shifts, z - shifts]))
    gradient = (values[: z.size] - values[z.size :]) / (2.0 * step)
    residual = float(np.max(np.abs(gradient)))
    parts = {}
    for key, start, stop in zip(("I", "J", "rho_x", "rho_y"), bounds[:-1], bounds[1:], strict=True):
        parts[key] = float(np.max(np.abs(gradient[start:stop])))
    numbers = {"max_abs_gradient": residual, "tolerance": float(tol), **{
        f"max_abs_gradient_{key}": value for key, value in parts.items()}}  # fmt: skip
    worst = max(parts, key=parts.get)
    detail = (
        f"max |d(-F) / d logit| = {residual:.3g} counts over {z.size} softmax logits of the "
        f"posteriors and weights (largest on {worst}; tolerance {tol:g}); the mean field is a "
        "variational fixed point, not a point of the PyMC posterior, so find_MAP does not apply"
    )
    check = Check(
        OPTIMALITY,
        f"{name} is a stationary point of the mean-field free energy",
        residual <= tol,
        detail,
        numbers,
    )
    return Comparison(checks=[check])
