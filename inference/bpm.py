"""Hybrid (Hamiltonian) Monte Carlo for the Bayesian Partial Membership model: Heller (2007) 8.5.

All unknowns of the BPM are continuous, so one HMC moves them all at once in an unconstrained
space (section 8.5): ``a = exp(eta)``, ``rho = softmax(r)``, ``pi_n = softmax(p_n)``, and for
Gaussian clusters ``tau = exp(s)``; Bernoulli clusters' natural parameters ``theta`` are
unconstrained already. The softmax maps are taken with their last logit pinned at 0 (the additive
log-ratio map), so each is a bijection from ``R^(K-1)`` onto the open simplex; the thesis's
``K``-logit softmax has a flat direction that no density pins down. The log-Jacobians are
``sum_k log rho_k``, ``log a``, ``sum_k log pi_nk`` and ``sum log tau``: with them the Dirichlet
terms become ``sum_k alpha_k log rho_k`` and ``sum_k a rho_k log pi_nk``.

The target and its gradient are one numba kernel (:func:`log_density_and_gradient`, analytic,
checked against finite differences in the tests); it touches each cell once per gradient with a
0/1 weight, so missing cells (NaN) drop out, which integrates them out (section 8.7), and it
allocates nothing (a work buffer per target). A transition is a
leapfrog trajectory of ``n_leapfrog`` steps (also one numba kernel) and a Metropolis accept,
followed by ``scale_moves`` Metropolis-Hastings moves of ``log a`` that carry the memberships the
prior rules along the funnel between ``a`` and the ``pi``'s (:func:`_scale_move`; without them the
HMC is not calibrated on small data, see the SBC test) and by ``membership_sweeps`` sweeps of
univariate slice sampling (Neal 2003) over every item's membership logits, which given ``a``,
``rho`` and the clusters are independent across items (:func:`_membership_slice_sweeps`, one
numba kernel; a membership whose posterior is wide or skewed in logit space, which a fixed step
size crosses slowly, is redrawn from its exact conditional at each transition). With the sweeps on,
the trajectory holds the memberships (:func:`_trajectory_inverse_mass`): it moves ``rho``, ``a``
and the clusters given them. During
the ``tune`` transitions the step size is adapted by dual averaging (Hoffman & Gelman 2014) towards
``target_accept`` and a diagonal inverse mass matrix is estimated from the positions in Stan's
doubling windows; after tuning the step size is jittered by +-10 % to break periodic trajectories.
A trajectory whose energy error exceeds 1000 (or is not finite) is *divergent*: rejected and
reported in ``sample_stats["diverging"]``.

The sampler follows the chain runner's contract (:func:`latentzoo.inference.mcmc.run_chains`):
:func:`init` / :func:`step` / :func:`draw` with :class:`HMCState` and :class:`HMCInfo`; :func:`hmc`
runs several chains and returns :class:`arviz.InferenceData` with named dims.

Examples
--------
>>> from latentzoo.models.bpm import BayesianPartialMembership
>>> model = BayesianPartialMembership(2)
>>> data, truth = model.simulate(0, n_items=10, n_features=6)
>>> idata = hmc(model, data, chains=1, draws=20, tune=30, random_state=0)
>>> idata.posterior["pi"].dims
('chain', 'draw', 'item', 'component')
>>> sorted(idata.sample_stats.data_vars)[:3]
['acceptance_rate', 'diverging', 'energy']
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numba as nb
import numpy as np

from latentzoo.data.checks import check_memory
from latentzoo.inference._lazy import lazy_import
from latentzoo.inference.mcmc import record_convergence, sample_to_inference_data
from latentzoo.models._checks import check_integer, check_interval
from latentzoo.models.base import model_attrs
from latentzoo.models.bpm import BayesianPartialMembership

# Imported at first use: listing the zoo imports this module and needs neither.
xr = lazy_import("xarray")

__all__ = [
    "HMCInfo",
    "HMCState",
    "Layout",
    "Sampler",
    "ScaledHMCInfo",
    "ScaledSlicedHMCInfo",
    "SlicedHMCInfo",
    "constrain",
    "draw",
    "hmc",
    "init",
    "log_density_and_gradient",
    "sampler",
    "scratch_size",
    "step",
    "target_of",
    "unconstrain",
]

MAX_ENERGY_ERROR = 1000.0
"""A trajectory whose energy error exceeds this is divergent (Stan's and PyMC's threshold)."""

_UNBOUNDED = 1e300
"""The energy error recorded for a trajectory that left the finite region (kept finite, so the
``sample_stats`` stay summable; ``diverging`` says what happened)."""

_LOG_2PI = math.log(2.0 * math.pi)
_BERNOULLI, _GAUSSIAN = 0, 1


# ------------------------------------------------------------------------- layout
class Layout(NamedTuple):
    """Where each unknown sits in the unconstrained vector.

    ``[r (K-1) | eta (1) | p (N (K-1)) | theta (K D)]`` for Bernoulli clusters and
    ``[r | eta | p | mu (K D) | s (K D)]`` for Gaussian ones.
    """

    n_items: int
    n_features: int
    n_components: int
    component: int

    @property
    def size(self) -> int:
        """Length of the unconstrained vector."""
        N, D, K = self.n_items, self.n_features, self.n_components
        clusters = K * D * (1 if self.component == _BERNOULLI else 2)
        return (K - 1) + 1 + N * (K - 1) + clusters


def _layout(model: BayesianPartialMembership, n_items: int, n_features: int) -> Layout:
    component = _BERNOULLI if model.distribution == "bernoulli" else _GAUSSIAN
    return Layout(n_items, n_features, model.n_components, component)


def _hyper(model: BayesianPartialMembership) -> np.ndarray:
    """The hyperparameters the kernel reads: ``alpha, b`` and the clusters' prior."""
    if model.distribution == "bernoulli":
        return np.array([model.alpha, model.b, model.beta_a, model.beta_b], dtype=np.float64)
    return np.array(
        [model.alpha, model.b, model.mu0, model.kappa0, model.gamma_a, model.gamma_b],
        dtype=np.float64,
    )


def _alr(probabilities: np.ndarray) -> np.ndarray:
    """The additive log-ratio (last component pinned at 0) of the rows of ``probabilities``."""
    logs = np.log(np.clip(probabilities, 1e-300, None))
    return logs[..., :-1] - logs[..., -1:]


def _log_softmax_pinned(free: np.ndarray) -> np.ndarray:
    """``log softmax([free, 0])`` along the last axis."""
    full = np.concatenate([free, np.zeros(free.shape[:-1] + (1,))], axis=-1)
    top = full.max(axis=-1, keepdims=True)
    return full - top - np.log(np.exp(full - top).sum(axis=-1, keepdims=True))


def unconstrain(model: BayesianPartialMembership, params: dict) -> np.ndarray:
    """The unconstrained vector of ``params`` (``rho``, ``a``, ``pi`` and the cluster parameters).

    Examples
    --------
    >>> model = BayesianPartialMembership(2)
    >>> data, truth = model.simulate(0, n_items=3, n_features=2)
    >>> back = constrain(model, unconstrain(model, truth), 3, 2)
    >>> bool(np.allclose(back["pi"], truth["pi"]) and np.isclose(back["a"], truth["a"]))
    True
    """
    parts = [
        _alr(np.asarray(params["rho"], dtype=np.float64)),
        [math.log(float(params["a"]))],
        _alr(np.asarray(params["pi"], dtype=np.float64)).ravel(),
    ]
    if model.distribution == "bernoulli":
        parts.append(np.asarray(params["theta"], dtype=np.float64).ravel())
    else:
        parts.append(np.asarray(params["mu"], dtype=np.float64).ravel())
        parts.append(np.log(np.asarray(params["tau"], dtype=np.float64)).ravel())
    return np.concatenate([np.ravel(part) for part in parts])


def constrain(model: BayesianPartialMembership, position, n_items: int, n_features: int) -> dict:
    """The parameters (``rho``, ``a``, ``pi``, clusters) at an unconstrained ``position``."""
    K, N, D = model.n_components, n_items, n_features
    position = np.asarray(position, dtype=np.float64)
    at = K - 1
    out = {"rho": np.exp(_log_softmax_pinned(position[:at])), "a": float(np.exp(position[at]))}
    at += 1
    out["pi"] = np.exp(_log_softmax_pinned(position[at : at + N * (K - 1)].reshape(N, K - 1)))
    at += N * (K - 1)
    if model.distribution == "bernoulli":
        out["theta"] = position[at : at + K * D].reshape(K, D).copy()
    else:
        out["mu"] = position[at : at + K * D].reshape(K, D).copy()
        out["tau"] = np.exp(position[at + K * D : at + 2 * K * D]).reshape(K, D)
    return out


# ------------------------------------------------------------------------- kernels
@nb.njit(cache=True, error_model="numpy")
def _digamma(x):
    """The digamma function for ``x > 0``: recurrence up to 6, then the asymptotic series."""
    result = 0.0
    while x < 6.0:
        result -= 1.0 / x
        x += 1.0
    f = 1.0 / (x * x)
    series = f * (1.0 / 12 - f * (1.0 / 120 - f * (1.0 / 252 - f * (1.0 / 240 - f / 132.0))))
    return result + math.log(x) - 0.5 / x - series


@nb.njit(cache=True, error_model="numpy")
def _log_softmax_into(free, start, K, out_log, out_prob):
    """``log softmax([free[start : start + K - 1], 0])`` into ``out_log``, its exp into ``out_prob``."""
    top = 0.0
    for k in range(K - 1):
        top = max(top, free[start + k])
    total = math.exp(-top)
    for k in range(K - 1):
        total += math.exp(free[start + k] - top)
    log_total = top + math.log(total)
    for k in range(K - 1):
        out_log[k] = free[start + k] - log_total
        out_prob[k] = math.exp(out_log[k])
    out_log[K - 1] = -log_total
    out_prob[K - 1] = math.exp(-log_total)


def scratch_size(layout: Layout) -> int:
    """Length of the work buffer :func:`_kernel` carves its arrays from (none allocated per call)."""
    N, D, K = layout.n_items, layout.n_features, layout.n_components
    return 3 * N * K + 4 * D + 3 * K * D + 4 * K


# Reassociation lets LLVM vectorise the sums over features; no flag that assumes finite values
# (``nnan``/``ninf``): a trajectory leaving the finite region must be seen as such.
_FAST = {"reassoc", "contract", "arcp", "nsz"}


@nb.njit(cache=True, error_model="numpy", fastmath=_FAST)
def _bernoulli_cells(theta, d_theta, pi, d_pi, X, observed, N, D, K, eta, residual, with_density):
    """The Bernoulli likelihood (8.10) of every cell, its gradient added into ``d_theta`` (flat
    ``K x D``) and written to ``d_pi``; missing cells (``observed`` 0) drop out. Returns the log
    likelihood (0 unless ``with_density``)."""
    lp = 0.0
    for n in range(N):
        # The natural parameters of item n, eta_d = sum_k pi_nk theta_kd, feature-contiguous.
        first = pi[n, 0]
        for d in range(D):
            eta[d] = first * theta[d]
        for k in range(1, K):
            weight = pi[n, k]
            base = k * D
            for d in range(D):
                eta[d] += weight * theta[base + d]
        # sigmoid and log(1 + e^v) from e = exp(-|v|) <= 1: neither overflows.
        if with_density:
            for d in range(D):
                value = eta[d]
                e = math.exp(-abs(value))
                inverse = 1.0 / (1.0 + e)
                sigmoid = inverse if value >= 0.0 else e * inverse
                x, seen = X[n, d], observed[n, d]
                residual[d] = seen * (x - sigmoid)
                lp += seen * (x * value - max(value, 0.0) - math.log1p(e))
        else:
            for d in range(D):
                value = eta[d]
                e = math.exp(-abs(value))
                inverse = 1.0 / (1.0 + e)
                sigmoid = inverse if value >= 0.0 else e * inverse
                residual[d] = observed[n, d] * (X[n, d] - sigmoid)
        for k in range(K):
            weight = pi[n, k]
            base = k * D
            total = 0.0
            for d in range(D):
                total += residual[d] * theta[base + d]
                d_theta[base + d] += weight * residual[d]
            d_pi[n, k] = total
    return lp


@nb.njit(cache=True, error_model="numpy", fastmath=_FAST)
def _gaussian_cells(
    mu, tau, d_mu, d_tau, pi, d_pi, X, observed, N, D, K, A, B, g_A, g_B, with_density
):
    """The Gaussian likelihood (8.10) of every cell with precision ``B = sum_k pi_nk tau_k`` and
    ``A = sum_k pi_nk tau_k mu_k``; gradients added into ``d_mu``, ``d_tau`` (flat ``K x D``,
    wrt ``tau`` itself) and written to ``d_pi``. Returns the log likelihood (0 unless
    ``with_density``)."""
    lp = 0.0
    for n in range(N):
        for d in range(D):
            A[d] = 0.0
            B[d] = 0.0
        for k in range(K):
            weight = pi[n, k]
            base = k * D
            for d in range(D):
                precision = weight * tau[base + d]
                A[d] += precision * mu[base + d]
                B[d] += precision
        for d in range(D):
            x, seen = X[n, d], observed[n, d]
            mean = A[d] / B[d]
            g_A[d] = seen * (x - mean)
            g_B[d] = seen * (0.5 / B[d] - 0.5 * x * x + 0.5 * mean * mean)
            if with_density:
                lp += seen * (
                    0.5 * (math.log(B[d]) - _LOG_2PI - B[d] * x * x) + A[d] * x - 0.5 * A[d] * mean
                )
        for k in range(K):
            weight = pi[n, k]
            base = k * D
            total = 0.0
            for d in range(D):
                t = tau[base + d]
                through = g_A[d] * mu[base + d] + g_B[d]
                total += t * through
                d_mu[base + d] += g_A[d] * weight * t
                d_tau[base + d] += weight * through
            d_pi[n, k] = total
    return lp


@nb.njit(cache=True, error_model="numpy")
def _kernel(q, X, observed, N, D, K, component, hyper, grad, scratch, with_density=True):
    """Log density of the unconstrained position ``q`` (Jacobians included) and its gradient.

    ``scratch`` (:func:`scratch_size` long) holds the work arrays, so a call allocates nothing.
    ``with_density=False`` skips the likelihood's log normalisers (the gradient needs only the
    mean parameters), for the leapfrog steps whose density nobody reads."""
    for i in range(grad.size):
        grad[i] = 0.0
    at = 0
    pi = scratch[at : at + N * K].reshape((N, K))
    at += N * K
    log_pi = scratch[at : at + N * K].reshape((N, K))
    at += N * K
    d_pi = scratch[at : at + N * K].reshape((N, K))
    at += N * K
    rows = scratch[at : at + 4 * D].reshape((4, D))
    at += 4 * D
    cluster_work = scratch[at : at + 3 * K * D].reshape((3, K * D))
    at += 3 * K * D
    log_rho = scratch[at : at + K]
    rho = scratch[at + K : at + 2 * K]
    d_rho = scratch[at + 2 * K : at + 3 * K]
    sum_log_pi = scratch[at + 3 * K : at + 4 * K]
    alpha, b = hyper[0], hyper[1]
    # --- rho, a (8.7)-(8.8) with the Jacobians of softmax and exp
    _log_softmax_into(q, 0, K, log_rho, rho)
    eta = q[K - 1]
    a = math.exp(eta)
    lp = math.lgamma(K * alpha) - K * math.lgamma(alpha)
    for k in range(K):
        lp += alpha * log_rho[k]
    lp += math.log(b) - b * a + eta
    # --- pi_n ~ Dir(a rho) (8.9), Jacobian sum_k log pi_nk folded into the exponents
    p0 = K
    for n in range(N):
        _log_softmax_into(q, p0 + n * (K - 1), K, log_pi[n], pi[n])
    lgamma_sum = 0.0
    for k in range(K):
        lgamma_sum += math.lgamma(a * rho[k])
        sum_log_pi[k] = 0.0
    lp += N * (math.lgamma(a) - lgamma_sum)
    for n in range(N):
        for k in range(K):
            sum_log_pi[k] += log_pi[n, k]
    for k in range(K):
        lp += a * rho[k] * sum_log_pi[k]
    # d/da and d/drho_k of the pi prior
    d_a = N * _digamma(a)
    for k in range(K):
        psi = _digamma(a * rho[k])
        d_a += rho[k] * (sum_log_pi[k] - N * psi)
        d_rho[k] = a * (sum_log_pi[k] - N * psi)
    # --- clusters and likelihood (8.10): the gradient of the likelihood wrt pi in d_pi
    c0 = p0 + N * (K - 1)
    if component == 0:
        beta_a, beta_b = hyper[2], hyper[3]
        log_beta = math.lgamma(beta_a) + math.lgamma(beta_b) - math.lgamma(beta_a + beta_b)
        for i in range(c0, c0 + K * D):
            value = q[i]
            e = math.exp(-abs(value))
            softplus = max(value, 0.0) + math.log1p(e)
            sigmoid = 1.0 / (1.0 + e) if value >= 0 else e / (1.0 + e)
            lp += beta_a * value - (beta_a + beta_b) * softplus - log_beta
            grad[i] = beta_a - (beta_a + beta_b) * sigmoid
        lp += _bernoulli_cells(
            q[c0 : c0 + K * D], grad[c0 : c0 + K * D], pi, d_pi, X, observed, N, D, K, rows[0],
            rows[1], with_density,
        )  # fmt: skip
    else:
        mu0, kappa0, gamma_a, gamma_b = hyper[2], hyper[3], hyper[4], hyper[5]
        s0 = c0 + K * D
        tau = cluster_work[0]
        d_tau = cluster_work[1]
        const = (
            gamma_a * math.log(gamma_b) - math.lgamma(gamma_a) + 0.5 * (math.log(kappa0) - _LOG_2PI)
        )
        for i in range(K * D):
            mu = q[c0 + i]
            s = q[s0 + i]
            tau[i] = math.exp(s)
            d_tau[i] = 0.0
            dev = mu - mu0
            # Gamma(tau) with the Jacobian of exp, then N(mu | mu0, 1 / (kappa0 tau))
            lp += const + (gamma_a + 0.5) * s - gamma_b * tau[i] - 0.5 * kappa0 * tau[i] * dev * dev
            grad[c0 + i] = -kappa0 * tau[i] * dev
            grad[s0 + i] = gamma_a + 0.5 - gamma_b * tau[i] - 0.5 * kappa0 * tau[i] * dev * dev
        lp += _gaussian_cells(
            q[c0 : c0 + K * D], tau, grad[c0 : c0 + K * D], d_tau, pi, d_pi, X, observed, N, D, K,
            rows[0], rows[1], rows[2], rows[3], with_density,
        )  # fmt: skip
        for i in range(K * D):
            grad[s0 + i] += tau[i] * d_tau[i]
    # --- chain rule through the pinned softmaxes
    for n in range(N):
        weighted = 0.0
        for k in range(K):
            weighted += pi[n, k] * d_pi[n, k]
        for k in range(K - 1):
            # prior (a rho_k - a pi_nk) and likelihood pi_nk (g_k - sum_j pi_nj g_j)
            grad[p0 + n * (K - 1) + k] = (
                a * rho[k] - a * pi[n, k] + pi[n, k] * (d_pi[n, k] - weighted)
            )
    weighted = 0.0
    for k in range(K):
        weighted += rho[k] * d_rho[k]
    for k in range(K - 1):
        grad[k] = alpha - K * alpha * rho[k] + rho[k] * (d_rho[k] - weighted)
    grad[K - 1] = a * d_a + 1.0 - b * a
    return lp


@nb.njit(cache=True, error_model="numpy")
def _trajectory(
    q, p, grad, step_size, n_steps, inverse_mass, X, observed, N, D, K, component, hyper, scratch
):
    """``n_steps`` leapfrog steps from ``(q, p)`` in place; returns the final log density (NaN
    when the trajectory left the finite region). Only the last step computes the density."""
    lp = 0.0
    for i in range(q.size):
        p[i] += 0.5 * step_size * grad[i]
    for step_index in range(n_steps):
        for i in range(q.size):
            q[i] += step_size * inverse_mass[i] * p[i]
        last = step_index == n_steps - 1
        lp = _kernel(q, X, observed, N, D, K, component, hyper, grad, scratch, last)
        if not math.isfinite(lp):
            return math.nan
        scale = step_size if step_index < n_steps - 1 else 0.5 * step_size
        for i in range(q.size):
            p[i] += scale * grad[i]
    return lp


# ------------------------------------------------------------------------- membership slices
SLICE_WIDTH = 2.0
"""Initial width of a membership logit's slice interval, in posterior standard deviations (the
diagonal inverse mass matrix's estimate): about the width of a Gaussian's slice at a typical
height (Neal 2003, section 4)."""

SLICE_MAX_STEPS = 16
"""Stepping-out limit per coordinate (Neal's ``m``): the interval grows to at most this many
widths, split at random between both sides (which keeps the move reversible)."""

_SLICE_MAX_SHRINKS = 200
"""Shrinkage proposals before a coordinate is left where it is: reached only when the density
is not finite at the current point, which the chain never accepts."""


@nb.njit(cache=True)
def _uniform():
    """A uniform draw on ``[0, 1)`` from numba's generator (seeded per call of the sweeps)."""
    return np.random.random()  # noqa: NPY002 (numba's generator, not NumPy's global one)


@nb.njit(cache=True)
def _standard_exponential():
    """A standard exponential draw from numba's generator (seeded per call of the sweeps)."""
    return np.random.exponential()  # noqa: NPY002 (numba's generator, not NumPy's global one)


@nb.njit(cache=True, error_model="numpy", fastmath=_FAST)
def _item_log_density(free, n, X, observed, D, K, component, weights, means, rho_a, log_pi, pi):
    """The log density of item ``n``'s membership logits ``free`` (``K - 1``) given everything
    else, up to a constant: ``sum_k a rho_k log pi_k`` (the Dirichlet prior with the softmax's
    Jacobian) plus the item's log likelihood. ``weights`` are the Bernoulli clusters' ``theta``
    or the Gaussian ones' ``tau`` (flat ``K x D``), ``means`` the Gaussian ``mu``;
    ``rho_a[k] = a rho_k``."""
    _log_softmax_into(free, 0, K, log_pi, pi)
    lp = 0.0
    for k in range(K):
        lp += rho_a[k] * log_pi[k]
    if component == 0:
        for d in range(D):
            value = 0.0
            for k in range(K):
                value += pi[k] * weights[k * D + d]
            x = X[n, d]
            lp += observed[n, d] * (x * value - max(value, 0.0) - math.log1p(math.exp(-abs(value))))
    else:
        for d in range(D):
            A = 0.0
            B = 0.0
            for k in range(K):
                precision = pi[k] * weights[k * D + d]
                A += precision * means[k * D + d]
                B += precision
            x = X[n, d]
            lp += observed[n, d] * (0.5 * (math.log(B) - B * x * x) + A * x - 0.5 * A * A / B)
    return lp


@nb.njit(cache=True, error_model="numpy")
def _step_out(
    free, j, edge, step, steps, level, n, X, observed, D, K, component, weights, means, rho_a,
    log_pi, pi,
):  # fmt: skip
    """Move a slice interval's ``edge`` (coordinate ``j`` of ``free``) by ``step`` while the
    density there is above ``level``, at most ``steps`` times; returns the edge and the density
    evaluations."""
    evaluations = 0
    while steps > 0:
        free[j] = edge
        evaluations += 1
        if not level < _item_log_density(
            free, n, X, observed, D, K, component, weights, means, rho_a, log_pi, pi
        ):
            break
        edge += step
        steps -= 1
    return edge, evaluations


@nb.njit(cache=True, error_model="numpy")
def _membership_slice_sweeps(q, widths, X, observed, N, D, K, component, sweeps, seed):
    """``sweeps`` sweeps of univariate slice sampling (stepping out and shrinkage, Neal 2003,
    figs. 3 and 5) over every item's membership logits in place; returns the number of density
    evaluations.

    Given ``a``, ``rho`` and the clusters the items' memberships are independent, so one sweep
    updates coordinate ``j`` of item ``n`` from its exact conditional, each evaluation costing
    ``O(K D)``: the whole sweep costs a few gradients. ``widths`` (``N (K - 1)``) are the initial
    interval widths; the random numbers come from numba's generator seeded with ``seed``.
    """
    np.random.seed(seed)  # noqa: NPY002 (numba's generator, seeded from the chain's Generator)
    a = math.exp(q[K - 1])
    log_rho = np.empty(K)
    rho = np.empty(K)
    _log_softmax_into(q, 0, K, log_rho, rho)
    rho_a = a * rho
    c0 = K + N * (K - 1)
    if component == 0:
        weights = q[c0 : c0 + K * D]
        means = weights
    else:
        means = q[c0 : c0 + K * D]
        weights = np.exp(q[c0 + K * D : c0 + 2 * K * D])
    free = np.empty(K - 1)
    log_pi = np.empty(K)
    pi = np.empty(K)
    evaluations = 0
    for _ in range(sweeps):
        for n in range(N):
            start = K + n * (K - 1)
            for j in range(K - 1):
                free[j] = q[start + j]
            for j in range(K - 1):
                origin = free[j]
                current = _item_log_density(
                    free, n, X, observed, D, K, component, weights, means, rho_a, log_pi, pi
                )
                evaluations += 1
                level = current - _standard_exponential()
                width = widths[start - K + j]
                left = origin - width * _uniform()
                right = left + width
                left_steps = int(SLICE_MAX_STEPS * _uniform())
                right_steps = SLICE_MAX_STEPS - 1 - left_steps
                left, left_evaluations = _step_out(
                    free, j, left, -width, left_steps, level, n, X, observed, D, K, component,
                    weights, means, rho_a, log_pi, pi,
                )  # fmt: skip
                right, right_evaluations = _step_out(
                    free, j, right, width, right_steps, level, n, X, observed, D, K, component,
                    weights, means, rho_a, log_pi, pi,
                )  # fmt: skip
                evaluations += left_evaluations + right_evaluations
                free[j] = origin
                for _ in range(_SLICE_MAX_SHRINKS):
                    candidate = left + (right - left) * _uniform()
                    free[j] = candidate
                    evaluations += 1
                    if level < _item_log_density(
                        free, n, X, observed, D, K, component, weights, means, rho_a, log_pi, pi
                    ):
                        break
                    if candidate < origin:
                        left = candidate
                    else:
                        right = candidate
                    free[j] = origin
            for j in range(K - 1):
                q[start + j] = free[j]
    return evaluations


class _Target(NamedTuple):
    """The data and constants the kernels read, and their work buffer (:func:`scratch_size`):
    the chains of one target run one after the other, never at once."""

    X: np.ndarray
    observed: np.ndarray
    layout: Layout
    hyper: np.ndarray
    scratch: np.ndarray


def target_of(model: BayesianPartialMembership, data, likelihood: bool = True) -> _Target:
    """The target the kernels read for ``data``; ``likelihood=False`` leaves every entry out, so
    the target is the prior (the exact check of the sampler: its draws must have the prior's
    moments).

    Examples
    --------
    >>> model = BayesianPartialMembership(2)
    >>> float(target_of(model, [[0, 1], [1, float("nan")]]).observed.sum())
    3.0
    """
    data = model.check_data(data)
    X, observed = model.filled_and_mask(data)
    if not likelihood:
        observed = np.zeros_like(observed)
    layout = _layout(model, *data.shape)
    return _Target(
        np.ascontiguousarray(X),
        np.ascontiguousarray(observed),
        layout,
        _hyper(model),
        np.empty(scratch_size(layout)),
    )


def _evaluate(target: _Target, position: np.ndarray, grad: np.ndarray) -> float:
    L = target.layout
    return _kernel(
        position, target.X, target.observed, L.n_items, L.n_features, L.n_components, L.component,
        target.hyper, grad, target.scratch,
    )  # fmt: skip


def log_density_and_gradient(
    model: BayesianPartialMembership, data, position
) -> tuple[float, np.ndarray]:
    """The log density of the unconstrained ``position`` (log joint (8.12) plus the log-Jacobians
    of section 8.5's transforms) and its gradient.

    Examples
    --------
    >>> model = BayesianPartialMembership(2)
    >>> data, truth = model.simulate(0, n_items=4, n_features=3)
    >>> lp, grad = log_density_and_gradient(model, data, unconstrain(model, truth))
    >>> jacobian = np.log(truth["rho"]).sum() + np.log(truth["a"]) + np.log(truth["pi"]).sum()
    >>> bool(np.isclose(lp, model.log_joint(truth, data) + jacobian)), grad.shape
    (True, (12,))
    """
    target = target_of(model, data)
    position = np.array(position, dtype=np.float64)
    if position.shape != (target.layout.size,):
        raise ValueError(f"position must have length {target.layout.size}, got {position.shape}")
    grad = np.empty_like(position)
    return _evaluate(target, position, grad), grad


# ------------------------------------------------------------------------- adaptation
def _adaptation_windows(tune: int) -> tuple[int, np.ndarray]:
    """When the mass matrix is estimated during ``tune`` transitions: ``(start, ends)``.

    Stan's schedule: an initial fast buffer of 75 transitions (only the step size adapts), slow
    windows of 25, 50, 100, ... whose positions' variance becomes the inverse mass matrix at each
    window's end, and a final fast buffer of 50; under 150 tuning transitions, one slow window
    from 15 % to 90 % of ``tune``; under 20, none.

    Examples
    --------
    >>> start, ends = _adaptation_windows(1000)
    >>> start, ends.tolist()
    (75, [100, 150, 250, 450, 950])
    >>> _adaptation_windows(100)[1].tolist()
    [90]
    """
    if tune < 20:
        return tune, np.zeros(0, dtype=np.int64)
    if tune < 150:
        return int(0.15 * tune), np.array([int(0.9 * tune)], dtype=np.int64)
    start, end, window = 75, tune - 50, 25
    ends, at = [], start
    while at + window < end:
        # The last window absorbs the remainder when the next one would not fit.
        if at + 3 * window > end:
            window = end - at
        at += window
        ends.append(at)
        window *= 2
    return start, np.array(ends, dtype=np.int64)


class _Adaptation(NamedTuple):
    """Dual averaging of the log step size and the running moments of the positions."""

    mu: float
    log_step: float
    log_step_bar: float
    h_bar: float
    count: int
    mean: np.ndarray
    m2: np.ndarray
    n_seen: int


class HMCState(NamedTuple):
    """The state of one chain.

    Attributes
    ----------
    position : numpy.ndarray
        Unconstrained position (layout :class:`Layout`).
    log_density : float
        Log density there (Jacobians included).
    gradient : numpy.ndarray
    step_size : float
    inverse_mass : numpy.ndarray
        Diagonal of the inverse mass matrix.
    iteration : int
        Transitions done (tuning ones included).
    adaptation : _Adaptation
    scale_log_sd : float
        Log standard deviation of the proposed shift of ``log a`` in :func:`_scale_move`
        (adapted while tuning).
    """

    position: np.ndarray
    log_density: float
    gradient: np.ndarray
    step_size: float
    inverse_mass: np.ndarray
    iteration: int
    adaptation: _Adaptation
    scale_log_sd: float = math.log(0.5)


class HMCInfo(NamedTuple):
    """What a transition reports (``sample_stats``, ArviZ's names).

    Attributes
    ----------
    lp : float
        Log density of the new position.
    acceptance_rate : float
        Metropolis acceptance probability of the trajectory.
    diverging : bool
        Energy error beyond :data:`MAX_ENERGY_ERROR` (or not finite): rejected.
    energy : float
        Hamiltonian at the new state.
    energy_error : float
        Change of the Hamiltonian over the trajectory.
    step_size : float
    n_steps : int
        Leapfrog steps (gradient evaluations of the trajectory).
    """

    lp: float
    acceptance_rate: float
    diverging: bool
    energy: float
    energy_error: float
    step_size: float
    n_steps: int


ScaledHMCInfo = NamedTuple(
    "ScaledHMCInfo", [*HMCInfo.__annotations__.items(), ("scale_accept", float)]
)
""":class:`HMCInfo` and ``scale_accept``, the mean acceptance probability of the transition's
:func:`_scale_move` proposals of ``a`` (when ``scale_moves`` > 0)."""

SlicedHMCInfo = NamedTuple(
    "SlicedHMCInfo", [*HMCInfo.__annotations__.items(), ("slice_evaluations", float)]
)
""":class:`HMCInfo` and ``slice_evaluations``, the density evaluations per membership coordinate
of the transition's :func:`_membership_slice_sweeps` (when ``membership_sweeps`` > 0)."""

ScaledSlicedHMCInfo = NamedTuple(
    "ScaledSlicedHMCInfo",
    [*ScaledHMCInfo.__annotations__.items(), ("slice_evaluations", float)],
)
""":class:`HMCInfo` with both ``scale_accept`` and ``slice_evaluations``."""

_INFO_TYPES = {
    (): HMCInfo,
    ("scale_accept",): ScaledHMCInfo,
    ("slice_evaluations",): SlicedHMCInfo,
    ("scale_accept", "slice_evaluations"): ScaledSlicedHMCInfo,
}
"""The info type of a transition by the optional moves it made."""


def _fresh_adaptation(step_size: float, size: int) -> _Adaptation:
    return _Adaptation(
        mu=math.log(10.0 * step_size), log_step=math.log(step_size), log_step_bar=0.0, h_bar=0.0,
        count=0, mean=np.zeros(size), m2=np.zeros(size), n_seen=0,
    )  # fmt: skip


def _dual_averaging(adaptation: _Adaptation, accept: float, target_accept: float) -> _Adaptation:
    """One update of Nesterov dual averaging (Hoffman & Gelman 2014, eq. (6); gamma 0.05, t0 10,
    kappa 0.75)."""
    count = adaptation.count + 1
    weight = 1.0 / (count + 10.0)
    h_bar = (1 - weight) * adaptation.h_bar + weight * (target_accept - accept)
    log_step = adaptation.mu - math.sqrt(count) / 0.05 * h_bar
    decay = count**-0.75
    log_step_bar = decay * log_step + (1 - decay) * adaptation.log_step_bar
    return adaptation._replace(
        count=count, h_bar=h_bar, log_step=log_step, log_step_bar=log_step_bar
    )


# ------------------------------------------------------------------------- the sampler
def init(model, target: _Target, rng, *, initial_params=None, step_size: float = 0.1) -> HMCState:
    """A chain's first state: ``initial_params`` (constrained), else uniform in ``(-2, 2)`` on the
    unconstrained scale as Stan starts, with a unit mass matrix."""
    size = target.layout.size
    if initial_params is None:
        position = rng.uniform(-2.0, 2.0, size=size)
    else:
        position = unconstrain(model, initial_params)
        if position.shape != (size,):
            raise ValueError(f"initial_params give {position.size} unknowns, the data need {size}")
    grad = np.empty(size)
    lp = _evaluate(target, position, grad)
    if not math.isfinite(lp):
        raise ValueError("the log density is not finite at the initial position")
    return HMCState(
        position, lp, grad, step_size, np.ones(size), 0, _fresh_adaptation(step_size, size)
    )


TAIL_LOGIT = 3.0
"""Membership logits beyond this magnitude (a membership under ``e^-3``, about 5 %) are taken as
ruled by the prior ``Dir(a rho)`` rather than by the data in :func:`_scale_move`."""

N_LEAPFROG = 64
"""Default leapfrog steps per trajectory (issue 26, ``benchmarks/RESULTS_bpm.md``). Minimum-ESS
per CPU second with the membership sweep, 2 chains x 300 + 300, by 16/32/64/96 steps: senate109
(101 x 520, K=2) 0.47/1.40/1.41/3.43, senate106 (102 x 540, K=2) 0.87/1.13/0.84/3.33, the
notebook's synthetic BPM (50 x 32, K=3; 2 x 1000 + 1000) 1.5/9.8/5.9/3.8. Sixteen steps barely
move the clusters at either size (loglik ESS 5-12); 64 is within 0.25-0.8x of the best at both
sizes, 96 within 0.4x (the small set wants 32, the Senate 96)."""

SCALE_TARGET_ACCEPT = 0.44
"""Acceptance the shift of ``log a`` adapts towards (the optimum of a one-dimensional random walk)."""


def _scaled(position: np.ndarray, shift: float, layout: Layout) -> tuple[np.ndarray, float]:
    """``log a`` moved by ``shift`` and every membership logit beyond :data:`TAIL_LOGIT` pulled
    towards it by ``e^-shift``; returns the new position and the log-Jacobian of the map.

    Under ``pi_n ~ Dir(a rho)`` a small membership has ``log pi_nk ~ log(U) / (a rho_k)``
    (``U`` uniform), so the logits of the memberships the data leave to the prior scale as
    ``1 / a``: moving them with ``a`` follows the funnel between ``a`` and the ``pi``'s instead of
    crossing it. The map with ``-shift`` is its inverse (a logit stays beyond the threshold), so
    with a symmetric ``shift`` this is a reversible Metropolis-Hastings proposal.
    """
    K, N = layout.n_components, layout.n_items
    moved = position.copy()
    moved[K - 1] += shift
    logits = moved[K : K + N * (K - 1)]
    magnitude = np.abs(logits)
    tail = magnitude > TAIL_LOGIT
    shrink = math.exp(-shift)
    logits[tail] = np.sign(logits[tail]) * (TAIL_LOGIT + (magnitude[tail] - TAIL_LOGIT) * shrink)
    return moved, -shift * np.count_nonzero(tail)


def _scale_move(
    state: HMCState, rng: np.random.Generator, target: _Target, tuning: bool
) -> tuple[HMCState, float]:
    """One Metropolis-Hastings update of ``log a`` with the tail memberships (:func:`_scaled`);
    returns the new state and the acceptance probability. While tuning, the proposal's scale
    follows a Robbins-Monro step towards :data:`SCALE_TARGET_ACCEPT`.

    The HMC alone crosses the funnel between ``a`` and the memberships near the simplex's
    vertices slowly: given those memberships, the terms of ``a`` in the joint density (8.12),
    ``log b - b a + N log Gamma(a) - N sum_k log Gamma(a rho_k) + sum_nk a rho_k log pi_nk``, pin
    ``a`` down narrowly, so neither the HMC nor a Gibbs update of ``a`` alone moves far. One
    density evaluation per proposal.
    """
    shift = rng.normal(0.0, math.exp(state.scale_log_sd))
    proposal, log_jacobian = _scaled(state.position, shift, target.layout)
    gradient = np.empty_like(proposal)
    lp = _evaluate(target, proposal, gradient)
    log_ratio = lp - state.log_density + log_jacobian
    accept = math.exp(min(log_ratio, 0.0)) if math.isfinite(log_ratio) else 0.0
    if rng.random() < accept:
        state = state._replace(position=proposal, log_density=lp, gradient=gradient)
    if tuning:
        rate = (state.iteration + 10.0) ** -0.6
        state = state._replace(
            scale_log_sd=state.scale_log_sd + rate * (accept - SCALE_TARGET_ACCEPT)
        )
    return state, accept


def _memberships(layout: Layout) -> slice:
    """Where the membership logits ``p`` sit in the unconstrained vector (:class:`Layout`)."""
    K = layout.n_components
    return slice(K, K + layout.n_items * (K - 1))


def _membership_sweeps(
    state: HMCState, rng: np.random.Generator, target: _Target, sweeps: int
) -> tuple[HMCState, float]:
    """``sweeps`` slice-sampling sweeps over the memberships (:func:`_membership_slice_sweeps`),
    the initial widths :data:`SLICE_WIDTH` posterior standard deviations as the mass matrix
    estimates them; returns the new state and the density evaluations per coordinate."""
    L = target.layout
    widths = SLICE_WIDTH * np.sqrt(state.inverse_mass[_memberships(L)])
    position = state.position.copy()
    evaluations = _membership_slice_sweeps(
        position, widths, target.X, target.observed, L.n_items, L.n_features, L.n_components,
        L.component, sweeps, int(rng.integers(2**32)),
    )  # fmt: skip
    gradient = np.empty_like(position)
    lp = _evaluate(target, position, gradient)
    state = state._replace(position=position, log_density=lp, gradient=gradient)
    return state, evaluations / max(sweeps * (widths.size), 1)


def _trajectory_inverse_mass(
    inverse_mass: np.ndarray, layout: Layout, membership_sweeps: int
) -> np.ndarray:
    """The inverse mass the leapfrog trajectory uses: the adapted one, with the membership logits
    held fixed (zero) when ``membership_sweeps`` slice sweeps redraw them after it.

    The memberships near the simplex's vertices have heavy-tailed logits (scaled as ``1 / a`` by
    the prior, moved far by the scale moves and the sweeps): on the notebook's synthetic BPM (50 x
    32, K=3) their estimated variances spanned 20 to 2e10 and forced step sizes of 2e-5 to 4e-2
    on the rest, which the trajectory then hardly moved (issue 26). Given the memberships the
    trajectory is HMC on ``rho``, ``a`` and the clusters alone, and the sweeps update every
    membership from its exact conditional, so the composition stays exact.
    """
    if not membership_sweeps:
        return inverse_mass
    held = inverse_mass.copy()
    held[_memberships(layout)] = 0.0
    return held


def step(
    state: HMCState,
    rng: np.random.Generator,
    target: _Target,
    *,
    tune: int,
    n_leapfrog: int,
    target_accept: float,
    windows: tuple[int, np.ndarray],
    scale_moves: int = 2,
    membership_sweeps: int = 1,
) -> tuple[HMCState, HMCInfo]:
    """One HMC transition (a leapfrog trajectory and its Metropolis accept), then ``scale_moves``
    Metropolis-Hastings updates of ``a`` with the tail memberships (:func:`_scale_move`), then
    ``membership_sweeps`` slice-sampling sweeps over the memberships
    (:func:`_membership_slice_sweeps`), with the step-size, mass-matrix and scale adaptation
    while ``state.iteration < tune``."""
    L = target.layout
    tuning = state.iteration < tune
    step_size = state.step_size
    if not tuning:
        step_size *= rng.uniform(0.9, 1.1)
    inverse_mass = _trajectory_inverse_mass(state.inverse_mass, L, membership_sweeps)
    moving = inverse_mass > 0.0
    # A coordinate held by the trajectory has zero inverse mass and zero momentum: it neither moves
    # nor enters the kinetic energy, so the trajectory is HMC on the others given it.
    momentum = np.zeros(state.position.size)
    momentum[moving] = rng.standard_normal(np.count_nonzero(moving)) / np.sqrt(inverse_mass[moving])
    kinetic = 0.5 * np.sum(inverse_mass * momentum**2)
    position, grad = state.position.copy(), state.gradient.copy()
    lp = _trajectory(
        position, momentum, grad, step_size, n_leapfrog, inverse_mass, target.X,
        target.observed, L.n_items, L.n_features, L.n_components, L.component, target.hyper,
        target.scratch,
    )  # fmt: skip
    new_kinetic = 0.5 * np.sum(inverse_mass * momentum**2)
    energy_error = (new_kinetic - lp) - (kinetic - state.log_density)
    diverging = not math.isfinite(energy_error) or energy_error > MAX_ENERGY_ERROR
    accept = 0.0 if diverging else min(1.0, math.exp(-energy_error))
    if rng.random() < accept:
        state = state._replace(position=position, log_density=lp, gradient=grad)
        energy = new_kinetic - lp
    else:
        energy = kinetic - state.log_density
    scale_accepts = []
    # Not before the first mass-matrix window: moving a far from the typical set, the moves left
    # chains with a step size adapted 5x too small (benchmarks/RESULTS_bpm.md).
    settled = not tuning or state.iteration >= windows[0]
    for _ in range(scale_moves if settled else 0):
        state, scale_accept = _scale_move(state, rng, target, tuning)
        scale_accepts.append(scale_accept)
    slice_evaluations = None
    if membership_sweeps:
        state, slice_evaluations = _membership_sweeps(state, rng, target, membership_sweeps)
    adaptation = state.adaptation
    inverse_mass = state.inverse_mass
    new_step = state.step_size
    if tuning:
        adaptation = _dual_averaging(adaptation, accept, target_accept)
        new_step = math.exp(adaptation.log_step)
        window_start, window_ends = windows
        if state.iteration >= window_start:
            n_seen = adaptation.n_seen + 1
            delta = state.position - adaptation.mean
            mean = adaptation.mean + delta / n_seen
            m2 = adaptation.m2 + delta * (state.position - mean)
            adaptation = adaptation._replace(mean=mean, m2=m2, n_seen=n_seen)
        iteration = state.iteration + 1
        if iteration in window_ends:
            # Stan's regularised variance, then a fresh dual averaging around the new scale.
            n_seen = adaptation.n_seen
            variance = adaptation.m2 / max(n_seen - 1, 1)
            inverse_mass = (n_seen / (n_seen + 5.0)) * variance + 1e-3 * (5.0 / (n_seen + 5.0))
            adaptation = _fresh_adaptation(new_step, state.position.size)
        if iteration == tune:
            new_step = math.exp(adaptation.log_step_bar) if adaptation.count else new_step
    fields = dict(
        lp=state.log_density,
        acceptance_rate=accept,
        diverging=diverging,
        energy=energy,
        energy_error=min(energy_error, _UNBOUNDED) if math.isfinite(energy_error) else _UNBOUNDED,
        step_size=step_size,
        n_steps=n_leapfrog,
    )
    if scale_accepts:
        fields["scale_accept"] = float(np.mean(scale_accepts))
    if slice_evaluations is not None:
        fields["slice_evaluations"] = slice_evaluations
    info = _INFO_TYPES[tuple(fields)[len(HMCInfo._fields) :]](**fields)
    return (
        state._replace(
            step_size=new_step,
            inverse_mass=inverse_mass,
            iteration=state.iteration + 1,
            adaptation=adaptation,
        ),
        info,
    )


def draw(model: BayesianPartialMembership, state: HMCState, layout: Layout) -> dict:
    """The constrained parameters of a kept draw, named as in :meth:`pymc_model`."""
    return constrain(model, state.position, layout.n_items, layout.n_features)


class Sampler(NamedTuple):
    """The chain runner's sampler (:func:`~latentzoo.inference.mcmc.run_chains`): ``init(rng)``,
    ``step(state, rng)`` and ``draw(state, rng)`` of one target; unpacks as that triple."""

    init: object
    step: object
    draw: object


def sampler(model: BayesianPartialMembership, target: _Target, *, tune: int, **options) -> Sampler:
    """The :class:`Sampler` of ``target`` (:func:`target_of`), adapting during the first ``tune``
    transitions; ``options`` are :func:`hmc`'s ``n_leapfrog``, ``target_accept``,
    ``scale_moves`` and ``initial_params``."""
    initial_params = options.pop("initial_params", None)
    options.setdefault("n_leapfrog", N_LEAPFROG)
    options.setdefault("target_accept", 0.8)
    options.setdefault("membership_sweeps", 1)
    windows = _adaptation_windows(tune)
    return Sampler(
        lambda rng: init(model, target, rng, initial_params=initial_params),
        lambda state, rng: step(state, rng, target, tune=tune, windows=windows, **options),
        lambda state, rng: draw(model, state, target.layout),
    )


def hmc(model: BayesianPartialMembership, data, **options):
    """Sample the BPM posterior with the hand-coded HMC (thesis section 8.5).

    Parameters
    ----------
    model : BayesianPartialMembership
    data : Features or array of shape (N, D)
        NaN entries are missing and integrated out.
    chains, draws, tune, thin : int, default 4, 1000, 1000, 1
        Independent chains, kept transitions per chain, tuning (discarded) transitions per chain,
        transitions per kept draw.
    n_leapfrog : int, default 64 (:data:`N_LEAPFROG`)
        Leapfrog steps per trajectory (gradient evaluations per transition). Measured with the
        membership sweep, minimum ESS per CPU second: on the Senate roll calls (K=2, about 1100
        unknowns) 64 steps gave 3x (short runs) to 20x (2000 draws, ``benchmarks/RESULTS_bpm.md``)
        what 16 gave, 96 about 2x more again; on a 50 x 32 BPM at K=3, 32 steps were best and 64
        gave 0.6x of it. Larger data want longer trajectories.
    target_accept : float, default 0.8
        Mean acceptance probability the step-size adaptation aims at, in (0, 1).
    scale_moves : int, default 2
        Metropolis-Hastings updates of ``a`` with the memberships the prior rules
        (:func:`_scale_move`) after each trajectory, one density evaluation each; they start
        after the first tuning window. Without them the HMC fails simulation-based calibration
        on a tiny BPM (it misses the funnel's neck: min p 1e-35 over 300 simulations; with them
        0.002); on the Senate (K=2) they raised the ESS of ``a`` per draw about 2.5x
        (``benchmarks/RESULTS_bpm.md``). 0 gives plain HMC.
    membership_sweeps : int, default 1
        Slice-sampling sweeps (:func:`_membership_slice_sweeps`) over every item's membership
        logits after each trajectory and its scale moves: given ``a``, ``rho`` and the clusters
        the items are independent, so each is updated from its exact conditional at a cost of a
        few ``O(K D)`` likelihood evaluations (``sample_stats["slice_evaluations"]``, per
        coordinate). On the Senate (K=2, 64 leapfrog steps) the slowest senator's ESS per CPU
        second rose about 30x (``benchmarks/RESULTS_bpm.md``). With sweeps the trajectory holds
        the memberships (their heavy-tailed logits otherwise shrink the step size); 0 leaves the
        sweeps out and lets the trajectory move the memberships.
    random_state : int, Generator or None
    progressbar : bool, default False
    initial_params : dict, optional
        Constrained starting values (``rho``, ``a``, ``pi`` and the cluster parameters) for every
        chain; default random.

    Returns
    -------
    arviz.InferenceData
        ``posterior`` (``rho`` (component), ``a``, ``pi`` (item, component), ``theta`` or ``mu``
        and ``tau`` (component, feature), ``loglik``), ``sample_stats`` (:class:`HMCInfo`'s
        fields: acceptance rates and divergences), ``log_likelihood`` (``x`` per item, missing
        entries left out) and ``observed_data`` (``x`` with NaN where missing).

    Raises
    ------
    ValueError
        Bad data (see :meth:`BayesianPartialMembership.check_data`) or options.
    """
    if not isinstance(model, BayesianPartialMembership):
        raise ValueError(f"hmc samples a BayesianPartialMembership, got {model!r}")
    data = model.check_data(data)
    settings = {option.name: option.default for option in _options()}
    unknown = sorted(set(options) - set(settings))
    if unknown:
        raise ValueError(
            f"hmc takes no option {unknown[0]!r}; its options are {', '.join(settings)}"
        )
    settings |= options
    runner = {name: settings.pop(name) for name in _RUNNER_OPTIONS}
    check_integer("n_leapfrog", settings["n_leapfrog"])
    check_integer("scale_moves", settings["scale_moves"], low=0)
    check_integer("membership_sweeps", settings["membership_sweeps"], low=0)
    check_interval("target_accept", settings["target_accept"], 0.0, 1.0)
    for name in ("chains", "draws"):
        check_integer(name, runner[name])
    layout = _layout(model, *data.shape)
    kept = runner["chains"] * runner["draws"] * (layout.size + model.n_components + data.n_items)
    check_memory(
        8 * kept + 10 * layout.size * 8, "the BPM HMC's draws", detail=f"K={model.n_components}"
    )
    target = target_of(model, data)
    chain_init, chain_step, params_of = sampler(model, target, tune=runner["tune"], **settings)

    def chain_draw(state, rng):
        params = params_of(state, rng)
        params["x"] = model.log_likelihood(params, data)
        # The label-free total the shared checks and convergence judge by.
        params["loglik"] = params["x"].sum()
        return params

    dims = {name: list(model.dims.get(name, ())) for name in (*model.param_names, "loglik")}
    idata = sample_to_inference_data(
        Sampler(chain_init, chain_step, chain_draw), chain_draw, **runner,
        coords=model.coords(data), dims={**dims, "x": ["item"]}, observed=data, desc="BPM HMC",
        method="hmc", log_likelihood_name="x",
    )  # fmt: skip
    attrs = {**model_attrs(model), "method": "hmc", "n_leapfrog": int(settings["n_leapfrog"])}
    for group in idata.groups():
        idata[group].attrs.update(attrs)
    # The components switch labels between chains: judge the label-free loglik (and a).
    record_convergence(
        idata,
        "run longer chains (draws=, tune=) or more leapfrog steps (n_leapfrog=)",
        label_dims=("component",),
        invariants=("loglik",),
    )
    return idata


_RUNNER_OPTIONS = ("chains", "draws", "tune", "thin", "random_state", "progressbar")
"""The options of :func:`hmc` that go to the chain runner."""


# ------------------------------------------------------------------------------ validation
def _label_free(idata) -> object:
    """The posterior's label-free quantities: ``U = Pi Pi^T`` (upper triangle) and ``a``."""
    import arviz as az

    pi = idata.posterior["pi"].to_numpy()
    U = np.einsum("cdik,cdjk->cdij", pi, pi)
    upper = np.triu_indices(pi.shape[2])
    return az.from_dict(
        posterior={"U": U[:, :, upper[0], upper[1]], "a": idata.posterior["a"].to_numpy()}
    )


REFERENCE_MIN_ESS = 100
"""Smallest bulk ESS of PyMC's ``U`` with which the reference level gives a verdict. PyMC's NUTS
on the level's problem (6 x 30, K=2, 4 x 1000 draws after 500 tuning) with the Dirichlet
declaration crossed the funnel between ``a`` and the memberships slowly: the smallest bulk ESS of
``U`` was 385, 29, 81, 106, 45 and 21 at seeds 0-5 (issue 26), below 100 at 60 of 100 seeds, and
it under-sampled small ``a`` (``tests/FALSE_ALARMS.md``, stops 44-45). With the split declaration
the level now samples (``memberships="split-gamma"``) it was 198-506 at seeds 6, 18, 29, 31 and
85. Below about 100 draws' worth, the MCSE that scales the agreement test is itself unreliable,
so the level says it is inconclusive instead of failing or passing."""

REFERENCE_RHAT_MAX = 1.146
"""Largest max R-hat (rank-normalised split R-hat over the 21 components of ``U``) with which
PyMC's chains count as converged once they reach :data:`REFERENCE_MIN_ESS`: the 99th percentile
of the max R-hat over 21 independent quantities of 4 AR(1) chains of 1000 draws at ESS 100
(``tests/false_alarms.py: max_rhat_quantile``, 1000 simulations; 1.072 at ESS 200, 1.294 at 50).
The former 1.01 exceeded at every ESS measured and was inconclusive at 9 of 11 seeds on correct
code (``tests/FALSE_ALARMS.md``)."""


def _reference_level(entry, recipe, model, data, settings, rng, progressbar=False):
    """Reference level: the hand HMC against PyMC's NUTS (the split declaration of the
    memberships, ``pymc_model(memberships="split-gamma")``) on a tiny simulated BPM; the
    label-free ``U = Pi Pi^T`` and ``a`` must agree within combined MCSE (Bonferroni over the
    components) and PyMC's own chains must have mixed (bulk ESS of ``U`` at least
    :data:`REFERENCE_MIN_ESS`, R-hat at most :data:`REFERENCE_RHAT_MAX`); when they have not,
    both checks are inconclusive, as the MCSE the agreement is scaled by cannot be trusted."""
    import arviz as az
    import pymc as pm

    from latentzoo.inference.checks import Check
    from latentzoo.inference.compare import Comparison, agreement

    sizes = recipe.problems["reference"]
    small = BayesianPartialMembership(2, distribution=model.distribution, alpha=model.alpha, b=0.5)
    simulated, _ = small.simulate(rng, **sizes)
    seed = int(rng.integers(2**31))
    draws, tune = settings.pymc_draws, settings.pymc_tune
    fast = hmc(small, simulated, chains=4, draws=2 * draws, tune=tune, random_state=seed)
    # NUTS on the Dirichlet declaration under-samples small ``a`` (the funnel;
    # BayesianPartialMembership.pymc_model), which made the correct hand HMC look biased.
    with small.pymc_model(simulated, memberships="split-gamma"):
        reference = pm.sample(
            draws, tune=tune, chains=4, cores=1, random_seed=seed, progressbar=progressbar,
            target_accept=0.9, compute_convergence_checks=False,
        )  # fmt: skip
    fast_free, reference_free = _label_free(fast), _label_free(reference)
    rhat = float(np.nanmax(az.rhat(reference_free)["U"].to_numpy()))
    ess = float(np.nanmin(az.ess(reference_free)["U"].to_numpy()))
    mixed = ess >= REFERENCE_MIN_ESS and rhat <= REFERENCE_RHAT_MAX
    table = agreement(fast_free, reference_free, ["U", "a"])
    worst = float(np.nanmax(table["z"]))
    agree = bool(table["agree"].all())
    checks = [
        Check(
            "reference", "PyMC chains mixed (bulk ESS and R-hat of U)", mixed,
            f"min bulk ESS {ess:.0f} (need >= {REFERENCE_MIN_ESS}), max R-hat {rhat:.3f} "
            f"(need <= {REFERENCE_RHAT_MAX}) over U", {"rhat_max": rhat, "ess_min": ess},
            inconclusive=not mixed,
        ),
        Check(
            "reference", "hand HMC = PyMC NUTS (U, a) within combined MCSE", agree,
            f"{len(table)} components, worst z {worst:.2f} (threshold "
            f"{float(table['threshold'].iloc[0]):.2f})"
            + ("" if mixed else "; not decisive: PyMC's chains did not mix"),
            {"z_max": worst}, inconclusive=not agree and not mixed,
        ),
    ]  # fmt: skip
    problem = (
        f"synthetic: {simulated} drawn from the BPM, K=2; hand HMC 4 x {2 * draws} draws, PyMC "
        f"NUTS 4 x {draws} draws"
    )
    return Comparison(checks=checks, problem=problem)


REVERSIBILITY_TOLERANCE = 1e-8
"""Largest error, relative to the scale of the start, with which a leapfrog trajectory run
forward and then back with its momentum negated must return to its start. Leapfrog is exactly
time-reversible (Neal 2011, section 5.2.3): what remains is round-off, about 1e-14 here, so a
correct integrator never fails the check and an irreversible one (a wrong first or last kick,
a drift with the wrong mass) misses by about the step size times the gradient."""

REVERSIBILITY_TRAJECTORIES = ((0.01, 1), (0.01, 8), (0.003, 32))
"""``(step size, leapfrog steps)`` of the exact level's trajectories: one step, where a wrong
kick is most of the move, and longer ones, as the sampler runs them."""


def _exact_level(entry, recipe, model, data, settings, rng, progressbar=False):
    """Exact level: the leapfrog integrator of :func:`_trajectory` is time-reversible, the
    property HMC's detailed balance rests on (Neal 2011, section 5.2.3). From a draw of a tiny BPM
    with a random momentum, the trajectory run forward and then back with the momentum negated
    must return to its start within :data:`REVERSIBILITY_TOLERANCE`, for every inverse mass
    (unit, and one with the memberships held as the sampler holds them). Deterministic: no false
    alarm short of round-off."""
    from latentzoo.inference.checks import Check
    from latentzoo.inference.compare import Comparison

    sizes = recipe.problems["exact"]
    small = BayesianPartialMembership(2, distribution=model.distribution, alpha=model.alpha, b=0.5)
    simulated, truth = small.simulate(rng, **sizes)
    target = target_of(small, simulated)
    L = target.layout
    start = unconstrain(small, truth)
    masses = {
        "unit": np.ones(L.size),
        "memberships held": _trajectory_inverse_mass(np.ones(L.size), L, 1),
    }
    worst, rows = 0.0, []
    for mass_name, inverse_mass in masses.items():
        for step_size, n_steps in REVERSIBILITY_TRAJECTORIES:
            momentum = np.zeros(L.size)
            moving = inverse_mass > 0.0
            momentum[moving] = rng.standard_normal(np.count_nonzero(moving))
            position, grad = start.copy(), np.empty(L.size)
            _evaluate(target, position, grad)
            p = momentum.copy()
            args = (step_size, n_steps, inverse_mass, target.X, target.observed, L.n_items,
                    L.n_features, L.n_components, L.component, target.hyper, target.scratch)  # fmt: skip
            _trajectory(position, p, grad, *args)
            p = -p
            _trajectory(position, p, grad, *args)
            scale = 1.0 + np.abs(start).max() + np.abs(momentum).max()
            error = max(np.abs(position - start).max(), np.abs(p + momentum).max()) / scale
            error = error if np.isfinite(error) else np.inf
            worst = max(worst, error)
            rows.append(f"{mass_name} mass, {n_steps} x {step_size}: {error:.1e}")
    check = Check(
        "exact", "leapfrog trajectory is time-reversible", bool(worst <= REVERSIBILITY_TOLERANCE),
        f"forward, momentum negated, back: largest relative error {worst:.1e} (need <= "
        f"{REVERSIBILITY_TOLERANCE:g}; " + "; ".join(rows) + ")", {"error_max": worst},
    )  # fmt: skip
    problem = f"synthetic: {simulated} drawn from the BPM, K=2, the start at the draw"
    return Comparison(checks=[check], problem=problem)


def validation_recipe():
    """How :func:`latentzoo.validate` checks the BPM's HMC (a ``ValidationRecipe``).

    density: PyMC's log density against :meth:`BayesianPartialMembership.log_prior` and the
    likelihood; reference: the hand HMC against PyMC's NUTS on the label-free ``U`` and ``a``;
    calibrated: simulation-based calibration of the hand HMC through the family's ``hmc`` method
    on tiny BPMs drawn from the prior (:func:`~latentzoo.inference.recipes.bpm_calibration`);
    exact: the leapfrog integrator is time-reversible (:func:`_exact_level`, deterministic). The
    sampler's invariance of the prior (``target_of(likelihood=False)``) is a test,
    ``tests/inference/test_bpm.py``.
    """
    from latentzoo.inference.recipes import bpm_calibration
    from latentzoo.inference.validation import ValidationRecipe, density_level

    return ValidationRecipe(
        checks={
            "density": density_level,
            "exact": _exact_level,
            "reference": _reference_level,
            "calibrated": bpm_calibration,
        },
        not_applicable={
            "optimality": "no EM (point estimator)",
            "mode-matched": "no EM modes to start PyMC and the sampler from",
        },
        small=lambda model, sizes: model,
        problems={
            "exact": {"n_items": 6, "n_features": 30},
            "reference": {"n_items": 6, "n_features": 30},
        },
    )


# ------------------------------------------------------------------------------ the family
def _options():
    from latentzoo.inference.family import anything, flag, integer, real, seed

    return (
        integer("chains", 4, "independent chains", quick=2),
        integer("draws", 1000, "kept draws per chain", quick=20),
        integer("tune", 1000, "tuning transitions per chain (step size, mass matrix)", low=0,
                quick=20),
        integer("thin", 1, "transitions per kept draw"),
        integer("n_leapfrog", N_LEAPFROG, "leapfrog steps per trajectory"),
        integer("scale_moves", 2, "Metropolis-Hastings moves of a with the prior-ruled memberships "
                "per transition", low=0),
        integer("membership_sweeps", 1, "slice-sampling sweeps over every item's memberships "
                "per transition", low=0),
        real("target_accept", 0.8, "mean acceptance the step size aims at", 0, 1, True, True),
        seed(),
        flag("progressbar", False, "show a progress bar"),
        anything("initial_params", None, "constrained start (rho, a, pi, clusters) of every chain"),
    )  # fmt: skip


def _family():
    from latentzoo.inference.family import Family, Method

    return Family(
        name="bpm",
        model=BayesianPartialMembership,
        methods={"hmc": Method(hmc, _options())},
        recipe=validation_recipe,
        sizes=("n_components",),
        dataset="senate109",
        notebook="notebooks/overlapping_partial.ipynb",
        description="Bayesian partial membership, hand-coded HMC (Heller 2007, ch. 8)",
        skipped_checks={
            "data:nan": "NaN is a missing entry, integrated out (thesis section 8.7); an "
            "all-missing row is refused",
            "hyperparameter[mu0]": "mu0 is the Gaussian clusters' prior mean, a location: any "
            "finite number (negative, zero) is valid; NaN, inf and text are refused",
            "data:k_too_large": "a BPM may have more clusters than items: memberships live on "
            "the K-simplex whatever N, as a finite mixture's weights do",
        },
    )


FAMILY = _family()
"""The BPM's family (listed in :mod:`latentzoo.zoo`)."""
