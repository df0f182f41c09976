"""The Bayesian Partial Membership model (BPM): Heller (2007), chapter 8.

A continuous relaxation of a finite mixture (8.1)-(8.3): every item ``n`` has a *partial* membership
vector ``pi_n`` on the ``K``-simplex and is drawn from the exponential-family distribution whose
natural parameters are the convex combination of the clusters' natural parameters (8.5),

.. math::

    \\rho \\sim \\mathrm{Dir}(\\alpha), \\quad a \\sim \\mathrm{Exp}(b), \\quad
    \\pi_n \\sim \\mathrm{Dir}(a \\rho), \\quad \\theta_k \\sim \\mathrm{Conj}(\\lambda, \\nu),
    \\quad x_n \\sim \\mathrm{Expon}\\Big(\\sum_k \\pi_{nk} \\theta_k\\Big)

(8.7)-(8.10), with the log joint (8.12). Two components:

- ``"bernoulli"``: binary features; ``theta[k, d]`` is the natural parameter (the logit) of cluster
  ``k``'s feature ``d``, with the conjugate prior (8.6) ``sigmoid(theta) ~ Beta(beta_a, beta_b)``,
  i.e. ``p(theta) ∝ exp(beta_a theta - (beta_a + beta_b) log(1 + e^theta))``. Item ``n``'s feature
  ``d`` is Bernoulli with logit ``eta_nd = sum_k pi_nk theta_kd``.
- ``"gaussian"``: real features, independent across features; cluster ``k`` has mean ``mu[k, d]`` and
  precision ``tau[k, d]``, natural parameters ``(tau mu, -tau / 2)``, with the conjugate Normal-Gamma
  prior ``tau ~ Gamma(gamma_a, gamma_b)``, ``mu | tau ~ N(mu0, 1 / (kappa0 tau))``. The convex
  combination gives item ``n`` the precision ``B = sum_k pi_nk tau_k`` and the mean
  ``A / B`` with ``A = sum_k pi_nk tau_k mu_k``.

Missing entries (NaN) are integrated out exactly as the thesis does for the Senate roll calls: each
feature is independent given the natural parameters, so a missing one simply drops out of the
likelihood (section 8.7). A row with no observed entry carries no information and is refused.

Lemma 8.1: as ``a -> 0`` the memberships concentrate on the simplex's vertices (vertex ``k`` with
probability ``rho_k``), a standard mixture. Lemma 8.2: as ``a -> infinity`` every ``pi_n -> rho``,
one component with natural parameters ``sum_k rho_k theta_k``. The label-free summary the thesis
reports is ``U = Pi Pi^T`` (Fig. 8.5), the membership each pair of items shares.

Examples
--------
>>> model = BayesianPartialMembership(n_components=3)
>>> data, truth = model.simulate(0, n_items=6, n_features=4)
>>> data.shape, truth["pi"].shape, truth["theta"].shape
((6, 4), (6, 3), (3, 4))
>>> model.log_likelihood(truth, data).shape
(6,)
>>> model.invariants(truth, data)["U"].shape
(6, 6)
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.special import expit, gammaln, log_softmax, logit

from latentzoo.data import Features
from latentzoo.data.checks import as_rng
from latentzoo.models._checks import check_integer, check_positive
from latentzoo.models._pymc_normal_gamma import (
    DEFAULT_NORMAL_GAMMA,
    check_normal_gamma_prior,
    normal_gamma_clusters,
)
from latentzoo.models.base import LikelihoodModel

__all__ = ["DISTRIBUTIONS", "PYMC_MEMBERSHIPS", "BayesianPartialMembership", "log_dirichlet_rows"]

DISTRIBUTIONS = ("bernoulli", "gaussian")
"""The exponential-family components of the BPM."""

PYMC_MEMBERSHIPS = ("dirichlet", "split-gamma")
"""How :meth:`BayesianPartialMembership.pymc_model` declares the memberships ``pi_n ~ Dir(a rho)``
(8.9): as PyMC's ``Dirichlet``, or through ``Gamma(c) = Gamma(c + 1) U^(1/c)`` (the identity of
:func:`log_dirichlet_rows`), whose tail ``log(U) / c`` NUTS crosses without the funnel."""

_LOG_2PI = float(np.log(2.0 * np.pi))


def log_dirichlet_rows(rng: np.random.Generator, concentration, size: int) -> np.ndarray:
    """``log`` of ``size`` Dirichlet draws, accurate for tiny concentrations.

    ``Gamma(c) = Gamma(c + 1) U^(1/c)``, so ``log Gamma(c) = log Gamma(c + 1) + log(U) / c``: the
    logarithm stays finite where a plain Gamma draw underflows to 0 (``c`` of 1e-3 and below, the
    limit of lemma 8.1).

    Examples
    --------
    >>> logs = log_dirichlet_rows(np.random.default_rng(0), [1e-4, 1e-4], 3)
    >>> logs.shape, bool(np.allclose(np.exp(logs).sum(axis=1), 1.0))
    ((3, 2), True)
    """
    concentration = np.asarray(concentration, dtype=np.float64)
    shape = (size, concentration.size)
    log_gamma = (
        np.log(rng.gamma(concentration + 1.0, size=shape))
        + np.log(rng.random(shape)) / concentration
    )
    return log_softmax(log_gamma, axis=1)


@dataclass(frozen=True)
class BayesianPartialMembership:
    """The Bayesian Partial Membership model with ``K`` clusters (Heller 2007, ch. 8).

    Parameters
    ----------
    n_components : int, default 2
        ``K``, the number of clusters (at least 1).
    distribution : {"bernoulli", "gaussian"}, default "bernoulli"
        The exponential family of the clusters (binary or real features).
    alpha : float, default 1.0
        Symmetric Dirichlet concentration of ``rho`` (8.7).
    b : float, default 1.0
        Rate of the exponential prior of the membership scale ``a`` (8.8).
    beta_a, beta_b : float, default 1.0
        Bernoulli clusters: ``sigmoid(theta) ~ Beta(beta_a, beta_b)``, the conjugate prior (8.6).
    mu0, kappa0, gamma_a, gamma_b : float, default 0, 0.1, 2, 1
        Gaussian clusters: ``tau ~ Gamma(gamma_a, gamma_b)`` (shape, rate),
        ``mu | tau ~ N(mu0, 1 / (kappa0 tau))``.

    Raises
    ------
    ValueError
        If ``n_components`` is not an integer >= 1, ``component`` is unknown or a prior parameter
        is not a positive finite number (``mu0``: finite).

    Examples
    --------
    >>> BayesianPartialMembership(n_components=0)
    Traceback (most recent call last):
    ...
    ValueError: n_components must be an integer >= 1, got 0
    >>> BayesianPartialMembership(2, distribution="poisson")
    Traceback (most recent call last):
    ...
    ValueError: distribution must be one of 'bernoulli', 'gaussian', got 'poisson'
    """

    n_components: int = 2
    distribution: str = "bernoulli"
    alpha: float = 1.0
    b: float = 1.0
    beta_a: float = 1.0
    beta_b: float = 1.0
    mu0: float = DEFAULT_NORMAL_GAMMA.mu0
    kappa0: float = DEFAULT_NORMAL_GAMMA.kappa0
    gamma_a: float = DEFAULT_NORMAL_GAMMA.gamma_a
    gamma_b: float = DEFAULT_NORMAL_GAMMA.gamma_b

    name = "bpm"
    data_type = Features
    protocol = LikelihoodModel
    dims = {
        "rho": ("component",),
        "a": (),
        "pi": ("item", "component"),
        "theta": ("component", "feature"),
        "mu": ("component", "feature"),
        "tau": ("component", "feature"),
    }

    def __post_init__(self):
        check_integer("n_components", self.n_components)
        if self.distribution not in DISTRIBUTIONS:
            raise ValueError(
                f"distribution must be one of 'bernoulli', 'gaussian', got {self.distribution!r}"
            )
        for name in ("alpha", "b", "beta_a", "beta_b"):
            check_positive(name, getattr(self, name))
        check_normal_gamma_prior(self)

    # ----------------------------------------------------------------------- structure
    @property
    def cluster_names(self) -> tuple[str, ...]:
        """The cluster parameters: ``("theta",)`` (Bernoulli) or ``("mu", "tau")`` (Gaussian)."""
        return ("theta",) if self.distribution == "bernoulli" else ("mu", "tau")

    @property
    def param_names(self) -> tuple[str, ...]:
        """Every unknown of the model, named as in :meth:`pymc_model`."""
        return ("rho", "a", "pi", *self.cluster_names)

    invariant_names = ("U", "loglik")
    heldout_draws_advice = "keep the parameter draws (rho, a and the cluster parameters)"
    """What to do when :meth:`heldout_draws_usable` is False."""
    HELDOUT_SAMPLES = 512
    """Draws of a new item's memberships ``pi ~ Dir(a rho)`` in :meth:`heldout_log_likelihood`."""

    def coords(self, data) -> dict:
        """ArviZ / PyMC coordinates: items, features and components.

        Examples
        --------
        >>> BayesianPartialMembership(2).coords(Features([[0, 1]]))["component"]
        [0, 1]
        """
        data = self.check_data(data)
        return {**data.coords(), "component": list(range(self.n_components))}

    def sizes_label(self) -> str:
        """``K`` as reports print it."""
        return str(self.n_components)

    # ----------------------------------------------------------------------- data
    def check_data(self, data) -> Features:
        """Validate ``data`` and return it as :class:`Features`; NaN entries are missing values.

        Raises
        ------
        ValueError
            If the data are empty, hold inf, a row has no observed entry (``"row 3 of X has no
            observed entry"``) or, for Bernoulli clusters, an observed entry is not 0 or 1.

        Examples
        --------
        >>> model = BayesianPartialMembership(2)
        >>> model.check_data([[0, float("nan")], [1, 1]]).n_missing
        1
        >>> model.check_data([[0, 2], [1, 1]])
        Traceback (most recent call last):
        ...
        ValueError: X[0, 1] = 2 is not binary (0 or 1): the Bernoulli BPM takes binary data
        >>> model.check_data([[float("nan"), float("nan")], [1, 1]])
        Traceback (most recent call last):
        ...
        ValueError: row 0 of X has no observed entry: an all-missing row carries no information
        """
        data = Features.coerce(data, allow_missing=True)
        X = data.X
        observed = ~np.isnan(X)
        empty = np.flatnonzero(~observed.any(axis=1))
        if empty.size:
            raise ValueError(
                f"row {empty[0]} of X has no observed entry: an all-missing row carries no "
                "information"
            )
        if self.distribution == "bernoulli":
            bad = np.argwhere(observed & (X != 0) & (X != 1))
            if bad.size:
                i, j = bad[0]
                value = X[i, j]
                shown = int(value) if value == int(value) else value
                raise ValueError(
                    f"X[{i}, {j}] = {shown} is not binary (0 or 1): the Bernoulli BPM takes "
                    "binary data"
                )
        return data

    @staticmethod
    def filled_and_mask(data: Features) -> tuple[np.ndarray, np.ndarray]:
        """``(X with missing entries set to 0, 1.0 where observed else 0.0)``, both float64."""
        X = np.asarray(data.X, dtype=np.float64)
        observed = ~np.isnan(X)
        return np.where(observed, X, 0.0), observed.astype(np.float64)

    # ----------------------------------------------------------------------- parameters
    def _check_params(self, params: dict, n_items: int | None = None, n_features=None) -> dict:
        """``params`` as float arrays of the right shapes, or ``ValueError`` naming the entry."""
        K = self.n_components
        out = {}
        rho = np.asarray(params["rho"], dtype=np.float64)
        if rho.shape != (K,) or np.any(rho < 0) or not np.isclose(rho.sum(), 1.0):
            raise ValueError(f"rho must be a probability vector of length {K}, got {rho!r}")
        out["rho"] = rho
        a = float(np.asarray(params["a"], dtype=np.float64))
        check_positive("a", a)
        out["a"] = a
        pi = np.asarray(params["pi"], dtype=np.float64)
        if pi.ndim != 2 or pi.shape[1] != K or (n_items is not None and pi.shape[0] != n_items):
            raise ValueError(f"pi must have shape (N, {K}) with N = {n_items}, got {pi.shape}")
        if np.any(pi < 0) or not np.allclose(pi.sum(axis=1), 1.0):
            raise ValueError("every row of pi must be a probability vector (>= 0, summing to 1)")
        out["pi"] = pi
        for name in self.cluster_names:
            value = np.asarray(params[name], dtype=np.float64)
            if (
                value.ndim != 2
                or value.shape[0] != K
                or (n_features is not None and value.shape[1] != n_features)
            ):
                raise ValueError(
                    f"{name} must have shape ({K}, D) with D = {n_features}, got {value.shape}"
                )
            if not np.all(np.isfinite(value)) or (name == "tau" and np.any(value <= 0)):
                raise ValueError(f"{name} must be finite{' and positive' if name == 'tau' else ''}")
            out[name] = value
        return out

    def natural_parameters(self, params: dict) -> tuple[np.ndarray, ...]:
        """Each item's natural parameters (8.5): ``(eta,)`` (Bernoulli logits, ``N x D``) or
        ``(A, B)`` (Gaussian: ``A = Pi (tau mu)``, the precision ``B = Pi tau``).

        Examples
        --------
        >>> model = BayesianPartialMembership(2)
        >>> params = {"rho": [0.5, 0.5], "a": 1.0, "pi": [[0.25, 0.75]], "theta": [[4.0], [0.0]]}
        >>> model.natural_parameters(params)[0]
        array([[1.]])
        """
        params = self._check_params(params)
        pi = params["pi"]
        if self.distribution == "bernoulli":
            return (pi @ params["theta"],)
        tau = params["tau"]
        return pi @ (tau * params["mu"]), pi @ tau

    def log_likelihood(self, params: dict, data) -> np.ndarray:
        """``log p(x_n | pi_n, Theta)`` per item, summed over its observed features (8.5).

        Examples
        --------
        >>> model = BayesianPartialMembership(2)
        >>> params = {"rho": [0.5, 0.5], "a": 1.0, "pi": [[1, 0]], "theta": [[0.0, 0.0], [1, 1]]}
        >>> bool(np.isclose(model.log_likelihood(params, [[1, float("nan")]])[0], np.log(0.5)))
        True
        """
        data = self.check_data(data)
        X, observed = self.filled_and_mask(data)
        return (self._cell_log_likelihood(params, X) * observed).sum(axis=1)

    def _cell_log_likelihood(self, params: dict, X: np.ndarray) -> np.ndarray:
        natural = self.natural_parameters(params)
        if self.distribution == "bernoulli":
            (eta,) = natural
            return X * eta - np.logaddexp(0.0, eta)
        A, B = natural
        return 0.5 * (np.log(B) - _LOG_2PI - B * X**2) + A * X - 0.5 * A**2 / B

    def log_prior(self, params: dict) -> float:
        """``log p(rho) + log p(a) + sum_n log p(pi_n | a rho) + sum_k log p(theta_k)`` (8.12),
        densities of the constrained parameters (no Jacobians).

        Examples
        --------
        >>> model = BayesianPartialMembership(2)
        >>> params = {"rho": [0.5, 0.5], "a": 2.0, "pi": [[0.5, 0.5]], "theta": [[0.0], [0.0]]}
        >>> round(model.log_prior(params), 6)  # 0 + log(1) - 2 + log(1) + 2 log(1/4)
        -4.772589
        """
        params = self._check_params(params)
        rho, a, pi = params["rho"], params["a"], params["pi"]
        K = self.n_components
        alpha = np.full(K, self.alpha)
        lp = gammaln(alpha.sum()) - gammaln(alpha).sum() + np.sum((alpha - 1) * np.log(rho))
        lp += np.log(self.b) - self.b * a
        conc = a * rho
        lp += pi.shape[0] * (gammaln(a) - gammaln(conc).sum())
        lp += np.sum((conc - 1) * np.log(pi))
        if self.distribution == "bernoulli":
            theta = params["theta"]
            lp += np.sum(
                self.beta_a * theta
                - (self.beta_a + self.beta_b) * np.logaddexp(0.0, theta)
                - (gammaln(self.beta_a) + gammaln(self.beta_b) - gammaln(self.beta_a + self.beta_b))
            )
        else:
            mu, tau = params["mu"], params["tau"]
            ga, gb, k0 = self.gamma_a, self.gamma_b, self.kappa0
            lp += np.sum(ga * np.log(gb) - gammaln(ga) + (ga - 1) * np.log(tau) - gb * tau)
            lp += np.sum(
                0.5 * (np.log(k0 * tau) - _LOG_2PI) - 0.5 * k0 * tau * (mu - self.mu0) ** 2
            )
        return float(lp)

    def log_joint(self, params: dict, data) -> float:
        """``log p(X, Omega | Psi)`` (8.11)-(8.12): the log prior plus the observed log-likelihood.

        Examples
        --------
        >>> model = BayesianPartialMembership(2)
        >>> data, truth = model.simulate(1, n_items=5, n_features=3)
        >>> bool(np.isfinite(model.log_joint(truth, data)))
        True
        """
        return self.log_prior(params) + float(self.log_likelihood(params, data).sum())

    def invariants(self, params: dict, data=None) -> dict[str, np.ndarray]:
        """The label-free summaries: ``U = Pi Pi^T`` (shared membership of every pair, Fig. 8.5)
        and the total log-likelihood (when ``data`` is given).

        Examples
        --------
        >>> model = BayesianPartialMembership(2)
        >>> params = {"rho": [0.5, 0.5], "a": 1.0, "pi": [[1, 0], [0.5, 0.5]], "theta": [[0], [0]]}
        >>> model.invariants(params)["U"].tolist()
        [[1.0, 0.5], [0.5, 0.5]]
        """
        pi = self._check_params(params)["pi"]
        out = {"U": pi @ pi.T}
        if data is not None:
            out["loglik"] = np.float64(self.log_likelihood(params, data).sum())
        return out

    def reference_log_likelihood(self, params: dict, data) -> np.ndarray:
        """The log-likelihood per item as :meth:`pymc_model` declares it (:meth:`log_likelihood`)."""
        return self.log_likelihood(params, data)

    def pymc_values(self, params: dict) -> dict:
        """``params`` restricted to the free variables of :meth:`pymc_model` (they are the same)."""
        return {name: params[name] for name in self.param_names if name in params}

    def fit_shape(self, params: dict) -> tuple:
        """``(N, D)`` of the data a draw was fitted to (memberships and cluster parameters)."""
        pi = np.asarray(params["pi"]) if "pi" in params else None
        cluster = (
            np.asarray(params[self.cluster_names[0]]) if self.cluster_names[0] in params else None
        )
        return (
            None if pi is None else int(pi.shape[0]),
            None if cluster is None else int(cluster.shape[-1]),
        )

    def labels(self, params: dict, train=None) -> np.ndarray:
        """The cluster of largest membership of each item (``argmax_k pi_nk``).

        Examples
        --------
        >>> BayesianPartialMembership(2).labels({"pi": [[0.2, 0.8], [0.6, 0.4]]}).tolist()
        [1, 0]
        """
        return np.asarray(params["pi"]).argmax(axis=1)

    def heldout_log_likelihood(self, params: dict, test, random_state=0) -> np.ndarray:
        """``log p(x | rho, a, Theta)`` of *new* items: their memberships ``pi ~ Dir(a rho)`` are
        integrated out by Monte Carlo over :data:`HELDOUT_SAMPLES` prior draws (a fixed seed, so
        the score is deterministic).

        Examples
        --------
        >>> model = BayesianPartialMembership(2)
        >>> data, truth = model.simulate(0, n_items=3, n_features=4)
        >>> model.heldout_log_likelihood(truth, data).shape
        (3,)
        """
        test = self.check_data(test)
        rng = as_rng(random_state)
        checked = self._check_params(
            {**params, "pi": np.full((1, self.n_components), 1.0 / self.n_components)}
        )
        X, observed = self.filled_and_mask(test)
        pi = np.exp(log_dirichlet_rows(rng, checked["a"] * checked["rho"], self.HELDOUT_SAMPLES))
        per_draw = np.stack(
            [
                (
                    self._cell_log_likelihood(
                        {**checked, "pi": np.broadcast_to(row, (X.shape[0], row.size))}, X
                    )
                    * observed
                ).sum(axis=1)
                for row in pi
            ]
        )
        return np.logaddexp.reduce(per_draw, axis=0) - np.log(self.HELDOUT_SAMPLES)

    def heldout_log_density(self, params: dict, test, train=None) -> np.ndarray:
        """``log p(test_n | params)`` per new item (:meth:`heldout_log_likelihood`)."""
        return self.heldout_log_likelihood(params, test)

    def heldout_posterior_predictive(self, draws, test, train=None) -> np.ndarray:
        """Per-item log posterior predictive of new items over ``draws``: ``log mean_s
        p(x | rho_s, a_s, Theta_s)``."""
        scores = np.stack([self.heldout_log_likelihood(draw, test) for draw in draws])
        return np.logaddexp.reduce(scores, axis=0) - np.log(len(scores))

    def heldout_draws_usable(self, names, train=None) -> bool:
        """Whether draws holding ``names`` can score new items: they need ``rho``, ``a`` and the
        cluster parameters."""
        return {"rho", "a", *self.cluster_names} <= set(names)

    # ----------------------------------------------------------------------- generative
    def prior_draw(self, data, rng) -> dict:
        """Parameters drawn from the prior at the sizes of ``data`` (:meth:`draw_prior`).

        Examples
        --------
        >>> draw = BayesianPartialMembership(2).prior_draw(Features([[0, 1]]), 0)
        >>> draw["pi"].shape, draw["theta"].shape
        ((1, 2), (2, 2))
        """
        n_items, n_features = self.check_data(data).shape
        return self.draw_prior(n_items, n_features, rng)

    def draw_prior(self, n_items: int, n_features: int, random_state=None, a=None) -> dict:
        """Parameters drawn from the prior (8.7)-(8.10); ``a`` fixes the membership scale
        (lemmas 8.1-8.2 take it to 0 or infinity).

        Examples
        --------
        >>> draw = BayesianPartialMembership(3).draw_prior(4, 2, random_state=0)
        >>> draw["pi"].shape, draw["theta"].shape
        ((4, 3), (3, 2))
        """
        check_integer("n_items", n_items)
        check_integer("n_features", n_features)
        rng = as_rng(random_state)
        K = self.n_components
        rho = np.exp(log_dirichlet_rows(rng, np.full(K, self.alpha), 1)[0])
        if a is None:
            a = rng.exponential(1.0 / self.b)
        check_positive("a", a)
        pi = np.exp(log_dirichlet_rows(rng, a * rho, n_items))
        draw = {"rho": rho, "a": float(a), "pi": pi}
        if self.distribution == "bernoulli":
            draw["theta"] = logit(
                np.clip(rng.beta(self.beta_a, self.beta_b, size=(K, n_features)), 1e-12, 1 - 1e-12)
            )
        else:
            tau = rng.gamma(self.gamma_a, 1.0 / self.gamma_b, size=(K, n_features))
            draw["tau"] = tau
            draw["mu"] = rng.normal(self.mu0, 1.0 / np.sqrt(self.kappa0 * tau))
        return draw

    def sample_data(self, params: dict, random_state=None) -> np.ndarray:
        """Data drawn from (8.10) given the parameters: ``N x D``."""
        rng = as_rng(random_state)
        natural = self.natural_parameters(params)
        if self.distribution == "bernoulli":
            (eta,) = natural
            return (rng.random(eta.shape) < expit(eta)).astype(np.float64)
        A, B = natural
        return rng.normal(A / B, 1.0 / np.sqrt(B))

    def replicate_names(self, names) -> bool:
        """Whether a draw holding the variables ``names`` can make a replicate of the data: it
        needs the memberships ``pi`` and the cluster parameters."""
        return {"pi", *self.cluster_names} <= set(names)

    def predictive_summaries(self, x) -> dict:
        """The summary a posterior predictive check compares, of the observed ``Features`` or of
        a replicate: ``feature_mean``, each feature's mean over the items that have it.

        Examples
        --------
        >>> BayesianPartialMembership(2).predictive_summaries(np.array([[0.0, 1.0], [1.0, np.nan]]))
        {'feature_mean': (('feature',), array([0.5, 1. ]))}
        """
        values = x.X if hasattr(x, "X") else np.asarray(x, dtype=float)
        return {"feature_mean": (("feature",), np.nanmean(values, axis=0))}

    def replicate(self, params, data, rng) -> dict:
        """One replicate of ``data`` from one draw (8.10): every item drawn again from its
        memberships and the clusters; an entry missing in ``data`` stays missing (NaN), so the
        replicate is compared like with like.

        Returns
        -------
        dict
            ``{name: (dims, array)}``: ``x`` and :meth:`predictive_summaries` of it.

        Examples
        --------
        >>> model = BayesianPartialMembership(2)
        >>> data, truth = model.simulate(0, n_items=3, n_features=2)
        >>> model.replicate(truth, data, np.random.default_rng(0))["x"][1].shape
        (3, 2)
        """
        data = self.check_data(data)
        x = self.sample_data(params, rng)
        x = np.where(np.isnan(data.X), np.nan, x)
        return {"x": (("item", "feature"), x), **self.predictive_summaries(x)}

    def simulate(
        self, random_state=None, n_items: int = 50, n_features: int = 32, a=None
    ) -> tuple[Features, dict]:
        """Draw ``(data, truth)`` from the BPM (thesis section 8.7: 50 items, 32 binary
        features, 3 clusters); ``a`` fixes the membership scale instead of drawing it.

        Examples
        --------
        >>> data, truth = BayesianPartialMembership(3).simulate(0, n_items=4, n_features=2)
        >>> data.kind, sorted(truth)
        ('binary', ['a', 'pi', 'rho', 'theta'])
        """
        rng = as_rng(random_state)
        truth = self.draw_prior(n_items, n_features, rng, a=a)
        X = self.sample_data(truth, rng)
        kind = "binary" if self.distribution == "bernoulli" else "real"
        return Features(X, kind=kind), truth

    # ----------------------------------------------------------------------- PyMC reference
    def pymc_model(self, data, temperature: float = 1.0, memberships: str = "dirichlet"):
        """The PyMC reference declaration, sampled by NUTS (all unknowns are continuous).

        ``rho ~ Dirichlet(alpha)``, ``a ~ Exponential(b)``, ``pi ~ Dirichlet(a rho)`` (dims
        ``(item, component)``); Bernoulli clusters' natural parameters ``theta`` (flat) with
        their conjugate prior (8.6) as the potential ``"theta_prior"``, so the free variables are
        those of the fast sampler and the densities agree term for term; Gaussian
        clusters ``tau ~ Gamma``, ``mu ~ Normal(mu0, 1 / sqrt(kappa0 tau))``. The likelihood of the
        observed entries only (missing ones dropped, as the fast sampler does) is one
        ``pm.Potential`` named ``"loglik"``, divided by ``temperature`` (a power posterior).

        ``memberships="split-gamma"`` declares the same posterior with ``pi`` deterministic:
        ``pi_n = softmax(log G_n - E_n / c)``, ``c = a rho``, ``G_nk ~ Gamma(c_k + 1, 1)`` and
        ``E_nk ~ Exp(1)`` (``"pi_gamma"``, ``"pi_tail"``), which is ``Dir(c)`` exactly since
        ``Gamma(c) = Gamma(c + 1) U^(1/c)``. With the Dirichlet, ``a`` and the memberships near
        the simplex's vertices form a funnel (``log pi_nk`` scales as ``1 / a``) whose neck NUTS
        does not enter: on the prior alone (6 items, K=2, ``b = 0.5``, 4 x 10000 draws) it gave
        ``P(a < q_0.1) = 0.073`` (z -4.6) with 188 divergences. Split, the tail ``E / c`` moves
        with ``a`` by construction: 0.0995 (z -0.1), 20 divergences in 4 x 5000 draws, 4.5 times
        the ESS of ``a`` from half the draws. The density level checks the Dirichlet declaration
        point by point; the two share everything but ``pi``'s prior.

        Examples
        --------
        >>> m = BayesianPartialMembership(2).pymc_model([[0, 1], [1, float("nan")]])
        >>> sorted(m.named_vars)
        ['a', 'loglik', 'pi', 'rho', 'theta', 'theta_prior']
        >>> m = BayesianPartialMembership(2).pymc_model([[0, 1]], memberships="split-gamma")
        >>> sorted(m.free_RVs, key=str)
        [a, pi_gamma, pi_tail, rho, theta]
        """
        import pymc as pm
        import pytensor.tensor as pt

        data = self.check_data(data)
        check_positive("temperature", temperature)
        if memberships not in PYMC_MEMBERSHIPS:
            choices = ", ".join(repr(choice) for choice in PYMC_MEMBERSHIPS)
            raise ValueError(f"memberships must be one of {choices}, got {memberships!r}")
        X, observed = self.filled_and_mask(data)
        rows, cols = np.nonzero(observed)
        values = X[rows, cols]
        K = self.n_components
        coords = {
            "item": np.arange(data.n_items),
            "feature": np.arange(data.n_features),
            "component": np.arange(K),
        }
        with pm.Model(coords=coords) as model:
            rho = pm.Dirichlet("rho", a=np.full(K, self.alpha), dims="component")
            a = pm.Exponential("a", lam=self.b)
            concentration = pt.ones((data.n_items, 1)) * (a * rho)[None, :]
            if memberships == "dirichlet":
                pi = pm.Dirichlet("pi", a=concentration, dims=("item", "component"))
            else:
                boost = pm.Gamma(
                    "pi_gamma", alpha=concentration + 1.0, beta=1.0, dims=("item", "component")
                )
                tail = pm.Exponential("pi_tail", lam=1.0, dims=("item", "component"))
                log_gamma = pt.log(boost) - tail / concentration
                pi = pm.Deterministic(
                    "pi", pt.special.softmax(log_gamma, axis=-1), dims=("item", "component")
                )
            if self.distribution == "bernoulli":
                theta = pm.Flat("theta", dims=("component", "feature"))
                log_beta = float(
                    gammaln(self.beta_a) + gammaln(self.beta_b) - gammaln(self.beta_a + self.beta_b)
                )
                pm.Potential(
                    "theta_prior",
                    pt.sum(
                        self.beta_a * theta
                        - (self.beta_a + self.beta_b) * pt.softplus(theta)
                        - log_beta
                    ),
                )
                eta = pt.dot(pi, theta)[rows, cols]
                loglik = pt.sum(values * eta - pt.softplus(eta))
            else:
                tau, mu = normal_gamma_clusters(self, ("component", "feature"))
                A = pt.dot(pi, tau * mu)[rows, cols]
                B = pt.dot(pi, tau)[rows, cols]
                loglik = pt.sum(
                    0.5 * (pt.log(B) - _LOG_2PI - B * values**2) + A * values - 0.5 * A**2 / B
                )
            pm.Potential("loglik", loglik / temperature)
        return model
