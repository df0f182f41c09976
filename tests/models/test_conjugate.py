"""Tests of the conjugate components of ``latentzoo.models.conjugate`` and their numba kernels.

Every closed form is checked against something computed another way: the chain rule of its own
predictives, numerical integration over the parameters (``scipy.integrate``), scipy's Student-t and
multivariate-t densities with the posterior written out from the raw data, Murphy's (2007) eq. (266)
with ``slogdet`` and ``multigammaln``, or Monte Carlo moments with their standard errors.
"""

import math

import numpy as np
import pytest
from scipy import integrate, stats
from scipy.special import gammaln, multigammaln

from latentzoo.models import (
    BetaBernoulli,
    DirichletMultinomial,
    NormalGamma,
    NormalInverseWishart,
)
from latentzoo.models.conjugate import (
    dirichlet_multinomial_log,
    log_marginal_one,
    log_predictive_one,
    stats_size,
    stats_update,
)

PSI3 = np.array([[2.0, 0.6, -0.3], [0.6, 1.5, 0.2], [-0.3, 0.2, 0.8]])


def binary(rng, n, d):
    return (rng.random((n, d)) < 0.4).astype(float)


def counts(rng, n, d):
    x = rng.poisson(1.2, size=(n, d)).astype(float)
    x[0] = 0.0  # an item without tokens
    return x


def real(rng, n, d):
    return rng.normal(0.5, 1.5, size=(n, d))


CASES = {
    "bb-vector": (BetaBernoulli(a=[0.5, 1.0, 2.0], b=[1.5, 1.0, 0.7]), binary, 3),
    "bb-scalar": (BetaBernoulli(), binary, 5),
    "dm-vector": (DirichletMultinomial(eta=[0.5, 1.0, 2.0, 0.3]), counts, 4),
    "dm-scalar": (DirichletMultinomial(eta=0.7), counts, 6),
    "ng-vector": (
        NormalGamma(
            mu0=[0.0, 1.0, -1.0], kappa0=[0.5, 1.0, 2.0], a0=[1.0, 2.0, 3.0], b0=[1, 0.5, 2]
        ),
        real,
        3,
    ),
    "ng-scalar": (NormalGamma(), real, 2),
    "niw-full": (
        NormalInverseWishart(mu0=[0.5, -1.0, 0.0], kappa0=0.7, nu0=5.5, psi0=PSI3),
        real,
        3,
    ),
    "niw-default": (NormalInverseWishart(), real, 2),
    "niw-1d": (NormalInverseWishart(psi0=[0.5], nu0=0.5), real, 1),
}
IDS = list(CASES)


@pytest.fixture(params=IDS)
def case(request):
    return CASES[request.param]


def relclose(a, b, tol):
    return np.allclose(a, b, rtol=tol, atol=tol)


# ---------------------------------------------------------------------------- chain rule
@pytest.mark.parametrize("seed", [0, 1])
def test_log_marginal_is_the_chain_of_predictives(case, seed):
    comp, make, d = case
    rng = np.random.default_rng(seed)
    X = make(rng, 9, d)
    total = comp.log_marginal(comp.stats(X, np.zeros(9, dtype=int), 1))[0]
    chain = sum(
        comp.log_predictive(comp.stats(X[:t], np.zeros(t, dtype=int), 1), X[t : t + 1])[0, 0]
        for t in range(9)
    )
    assert abs(total - chain) < 1e-10
    # the same through the kernels, building the cluster item by item from the empty row
    hyper = comp.hyper(d)
    row = comp.empty_stats(1, d)[0]
    kernel_chain = 0.0
    for x in X:
        kernel_chain += log_predictive_one(comp.kind_code, hyper, row, x)
        stats_update(comp.kind_code, hyper, row, x, 1)
    assert abs(kernel_chain - total) < 1e-10
    assert abs(log_marginal_one(comp.kind_code, hyper, row) - total) < 1e-10


def test_empty_cluster_has_log_marginal_zero_and_the_prior_predictive(case):
    comp, make, d = case
    X = make(np.random.default_rng(3), 4, d)
    empty = comp.empty_stats(2, d)
    assert empty.shape == (2, stats_size(comp.kind_code, d)) == (2, comp.stats_size(d))
    assert np.array_equal(comp.log_marginal(empty), np.zeros(2))
    one = comp.stats(X, np.arange(4), 4)  # singletons: p(x) = exp(log_marginal) = prior predictive
    assert relclose(comp.log_marginal(one), comp.log_predictive(empty[:1], X)[:, 0], 1e-12)


def test_log_marginal_keeps_leading_axes(case):
    comp, make, d = case
    rng = np.random.default_rng(4)
    X = make(rng, 12, d)
    a = comp.stats(X, rng.integers(0, 3, 12), 3)
    b = comp.stats(X, rng.integers(0, 3, 12), 3)
    both = comp.log_marginal(np.stack([a, b]))
    assert both.shape == (2, 3)
    assert np.allclose(both, [comp.log_marginal(a), comp.log_marginal(b)], rtol=0, atol=1e-12)


# ------------------------------------------------------------------- against integration
@pytest.mark.parametrize("a, b, n, m", [(1.0, 1.0, 5, 2), (0.7, 2.5, 7, 6), (3.0, 0.8, 4, 0)])
def test_beta_bernoulli_marginal_against_quadrature(a, b, n, m):
    comp = BetaBernoulli(a=a, b=b)
    X = np.zeros((n, 1))
    X[:m] = 1.0
    value, _ = integrate.quad(
        lambda t: t**m * (1 - t) ** (n - m) * stats.beta.pdf(t, a, b), 0, 1, epsabs=0, epsrel=1e-12
    )
    assert (
        abs(comp.log_marginal(comp.stats(X, np.zeros(n, dtype=int), 1))[0] - math.log(value)) < 1e-8
    )


def test_beta_bernoulli_marginal_is_a_product_of_beta_functions_over_features():
    rng = np.random.default_rng(5)
    a, b = np.array([0.5, 2.0, 1.3]), np.array([1.0, 0.4, 3.0])
    X = binary(rng, 11, 3)
    m = X.sum(0)
    exact = np.sum(
        gammaln(a + m) + gammaln(b + 11 - m) - gammaln(a + b + 11)
        - gammaln(a) - gammaln(b) + gammaln(a + b)
    )  # fmt: skip
    stats_ = BetaBernoulli(a=a, b=b).stats(X, np.zeros(11, dtype=int), 1)
    assert abs(BetaBernoulli(a=a, b=b).log_marginal(stats_)[0] - exact) < 1e-10


def _dirichlet_density(theta, eta):
    return math.exp(
        gammaln(sum(eta)) - sum(gammaln(e) for e in eta)
        + sum((e - 1) * math.log(t) for e, t in zip(eta, theta, strict=True))
    )  # fmt: skip


def test_dirichlet_multinomial_marginal_against_quadrature():
    # two categories: one-dimensional integral over the simplex
    eta = [1.5, 2.5]
    X = np.array([[2.0, 1.0], [0.0, 3.0], [1.0, 0.0]])
    m = X.sum(0)
    value, _ = integrate.quad(
        lambda t: t ** m[0] * (1 - t) ** m[1] * _dirichlet_density([t, 1 - t], eta),
        0,
        1,
        epsabs=0,
        epsrel=1e-12,
    )
    comp = DirichletMultinomial(eta=eta)
    got = comp.log_marginal(comp.stats(X, np.zeros(3, dtype=int), 1))[0]
    assert abs(got - math.log(value)) < 1e-8
    # three categories: a double integral over the triangle
    eta = [1.2, 2.0, 1.5]
    X = np.array([[1.0, 0.0, 2.0], [0.0, 1.0, 1.0]])
    m = X.sum(0)

    def integrand(t2, t1):
        t = [t1, t2, 1.0 - t1 - t2]
        if t[2] <= 0:
            return 0.0
        return math.prod(ti**mi for ti, mi in zip(t, m, strict=True)) * _dirichlet_density(t, eta)

    value, _ = integrate.dblquad(integrand, 0, 1, 0, lambda t1: 1 - t1, epsabs=0, epsrel=1e-10)
    comp = DirichletMultinomial(eta=eta)
    got = comp.log_marginal(comp.stats(X, np.zeros(2, dtype=int), 1))[0]
    assert abs(got - math.log(value)) < 1e-7


def test_dirichlet_multinomial_agrees_with_the_existing_symmetric_closed_form():
    rng = np.random.default_rng(6)
    X = counts(rng, 10, 5)
    labels = rng.integers(0, 3, 10)
    comp = DirichletMultinomial(eta=0.4)
    st = comp.stats(X, labels, 3)
    assert np.allclose(
        comp.log_marginal(st),
        [dirichlet_multinomial_log(st[k : k + 1, 1:], 0.4) for k in range(3)],
        rtol=0,
        atol=1e-10,
    )


def test_normal_gamma_marginal_against_double_integral():
    mu0, kappa0, a0, b0 = 0.3, 0.8, 2.0, 1.5
    x = np.array([0.1, 0.9, -0.4])

    log_gamma_norm = a0 * math.log(b0) - math.lgamma(a0)

    def integrand(
        mu, tau
    ):  # Gamma(tau | a0, rate b0) N(mu | mu0, 1/(kappa0 tau)) prod N(x | mu, 1/tau)
        log_prior = log_gamma_norm + (a0 - 1) * math.log(tau) - b0 * tau
        log_prior += (
            0.5 * math.log(kappa0 * tau / (2 * math.pi)) - 0.5 * kappa0 * tau * (mu - mu0) ** 2
        )
        log_lik = sum(0.5 * math.log(tau / (2 * math.pi)) - 0.5 * tau * (xi - mu) ** 2 for xi in x)
        return math.exp(log_prior + log_lik)

    value, _ = integrate.dblquad(integrand, 1e-12, 40, -12, 12, epsabs=0, epsrel=1e-10)
    comp = NormalGamma(mu0=mu0, kappa0=kappa0, a0=a0, b0=b0)
    got = comp.log_marginal(comp.stats(x[:, None], np.zeros(3, dtype=int), 1))[0]
    assert abs(got - math.log(value)) < 1e-6


def test_normal_gamma_predictive_is_murphys_student_t():
    rng = np.random.default_rng(7)
    mu0, kappa0, a0, b0 = np.array([0.5, -1.0]), np.array([0.3, 2.0]), np.array([1.5, 4.0]), 2.0
    comp = NormalGamma(mu0=mu0, kappa0=kappa0, a0=a0, b0=b0)
    X = rng.normal(2.0, 0.7, size=(6, 2))
    new = rng.normal(1.0, 2.0, size=(5, 2))
    for n in (0, 1, 6):
        data = X[:n]
        xbar = data.mean(0) if n else np.zeros(2)
        kn, an = kappa0 + n, a0 + n / 2
        mun = (kappa0 * mu0 + n * xbar) / kn
        bn = b0 + 0.5 * ((data - xbar) ** 2).sum(0) + kappa0 * n * (xbar - mu0) ** 2 / (2 * kn)
        expected = stats.t.logpdf(new, df=2 * an, loc=mun, scale=np.sqrt(bn * (kn + 1) / (an * kn)))
        got = comp.log_predictive(comp.stats(data, np.zeros(n, dtype=int), 1), new)[:, 0]
        assert np.allclose(got, expected.sum(1), rtol=1e-12, atol=1e-12)


def _niw_posterior(data, mu0, kappa0, nu0, psi0):
    """Murphy (2007), eqs. (250)-(254), from the raw data."""
    n = data.shape[0]
    xbar = data.mean(0) if n else np.zeros_like(mu0)
    scatter = (data - xbar).T @ (data - xbar)
    kn, nun = kappa0 + n, nu0 + n
    mun = (kappa0 * mu0 + n * xbar) / kn
    psin = psi0 + scatter + kappa0 * n / kn * np.outer(xbar - mu0, xbar - mu0)
    return mun, kn, nun, psin


def test_normal_inverse_wishart_predictive_is_a_multivariate_t():
    rng = np.random.default_rng(8)
    mu0, kappa0, nu0 = np.array([0.5, -1.0, 0.0]), 0.7, 4.5
    comp = NormalInverseWishart(mu0=mu0, kappa0=kappa0, nu0=nu0, psi0=PSI3)
    X = rng.multivariate_normal([1.0, 0.0, -2.0], PSI3, size=7)
    new = rng.normal(0.0, 2.0, size=(4, 3))
    for n in (0, 1, 2, 7):
        mun, kn, nun, psin = _niw_posterior(X[:n], mu0, kappa0, nu0, PSI3)
        df = nun - 3 + 1
        dist = stats.multivariate_t(loc=mun, shape=psin * (kn + 1) / (kn * df), df=df)
        got = comp.log_predictive(comp.stats(X[:n], np.zeros(n, dtype=int), 1), new)[:, 0]
        assert np.allclose(got, dist.logpdf(new), rtol=1e-11, atol=1e-11)


def test_normal_inverse_wishart_marginal_is_murphy_eq_266_and_the_product_of_t_densities():
    rng = np.random.default_rng(9)
    mu0, kappa0, nu0, d = np.array([0.5, -1.0, 0.0]), 1.3, 6.0, 3
    comp = NormalInverseWishart(mu0=mu0, kappa0=kappa0, nu0=nu0, psi0=PSI3)
    X = rng.multivariate_normal([1.0, 0.0, -2.0], PSI3, size=5)
    for n in (1, 2, 5):
        mun, kn, nun, psin = _niw_posterior(X[:n], mu0, kappa0, nu0, PSI3)
        eq266 = (
            -n * d / 2 * math.log(math.pi)
            + multigammaln(nun / 2, d)
            - multigammaln(nu0 / 2, d)
            + nu0 / 2 * np.linalg.slogdet(PSI3)[1]
            - nun / 2 * np.linalg.slogdet(psin)[1]
            + d / 2 * math.log(kappa0 / kn)
        )
        product = 0.0
        for t in range(n):
            m_t, k_t, nu_t, psi_t = _niw_posterior(X[:t], mu0, kappa0, nu0, PSI3)
            df = nu_t - d + 1
            product += stats.multivariate_t(
                loc=m_t, shape=psi_t * (k_t + 1) / (k_t * df), df=df
            ).logpdf(X[t])
        got = comp.log_marginal(comp.stats(X[:n], np.zeros(n, dtype=int), 1))[0]
        assert abs(got - eq266) < 1e-10
        assert abs(got - product) < 1e-10


# ----------------------------------------------------------------------- kernels vs numpy
def test_kernels_agree_with_the_numpy_methods(case):
    comp, make, d = case
    rng = np.random.default_rng(10)
    X = make(rng, 15, d)
    labels = rng.integers(0, 3, 15)
    labels[labels == 2] = 0
    labels[-1] = 2  # cluster 2 has exactly one item, cluster 3 none
    st = comp.stats(X, labels, 4)
    hyper = comp.hyper(d)
    assert hyper.dtype == np.float64 and hyper.ndim == 1
    marg = comp.log_marginal(st)
    pred = comp.log_predictive(st, X)
    assert pred.shape == (15, 4)
    for k in range(4):
        assert relclose(log_marginal_one(comp.kind_code, hyper, st[k]), marg[k], 1e-12)
        for i in range(15):
            assert relclose(
                log_predictive_one(comp.kind_code, hyper, st[k], X[i]), pred[i, k], 1e-12
            )


def test_add_then_remove_restores_the_row_and_matches_fresh_stats(case):
    comp, make, d = case
    rng = np.random.default_rng(11)
    X = make(rng, 12, d)
    labels = np.array([0] * 5 + [1] * 6 + [2])
    st = comp.stats(X, labels, 4)
    hyper = comp.hyper(d)
    for k in range(4):  # a full cluster, another, a singleton, an empty one
        for x in (X[0], X[7], X[11], make(rng, 1, d)[0]):
            row = st[k].copy()
            stats_update(comp.kind_code, hyper, row, x, 1)
            fresh = comp.stats(
                np.vstack([X[labels == k], x]), np.zeros((labels == k).sum() + 1, int), 1
            )
            assert relclose(row, fresh[0], 1e-10)
            stats_update(comp.kind_code, hyper, row, x, -1)
            assert relclose(row, st[k], 1e-12)


def test_removing_items_down_to_empty(case):
    comp, make, d = case
    rng = np.random.default_rng(12)
    X = make(rng, 8, d)
    hyper = comp.hyper(d)
    row = comp.stats(X, np.zeros(8, dtype=int), 1)[0]
    order = rng.permutation(8)
    for t, i in enumerate(order[:-1]):
        stats_update(comp.kind_code, hyper, row, X[i], -1)
        rest = order[t + 1 :]
        assert relclose(row, comp.stats(X[rest], np.zeros(rest.size, dtype=int), 1)[0], 1e-10)
    stats_update(comp.kind_code, hyper, row, X[order[-1]], -1)  # the last item: exact reset
    assert np.array_equal(row, comp.empty_stats(1, d)[0])
    with pytest.raises(ValueError, match="empty cluster"):
        stats_update(comp.kind_code, hyper, row, X[0], -1)


CENTRE = np.array([1e4, -3e3, 1e4])


@pytest.mark.parametrize(
    "comp, tol, marginal_tol",
    [
        (NormalGamma(mu0=CENTRE + 0.1), 1e-9, 1e-10),
        (NormalInverseWishart(mu0=CENTRE + 0.1, psi0=0.01), 1e-9, 1e-9),
        # prior far from the data: Psi_n = 1e8 in one direction, 0.01 in the others (condition
        # 1e10), so any computation of its factor (the fresh one too) loses about ten digits in the
        # small directions: both log|Psi_n| are within 1e-6 of a 50-digit mpmath value
        (NormalGamma(), 1e-6, 1e-10),
        (NormalInverseWishart(psi0=0.01), 1e-5, 1e-7),
    ],
    ids=["ng", "niw", "ng-far-prior", "niw-far-prior"],
)
def test_many_moves_on_offset_data_do_not_drift(comp, tol, marginal_tol):
    """A Gibbs-like sequence of 2000 random moves on data far from the origin with a small spread."""
    rng = np.random.default_rng(13)
    X = CENTRE + rng.normal(0.0, 0.05, size=(40, 3))
    labels = rng.integers(0, 3, 40)
    st = comp.stats(X, labels, 3)
    hyper = comp.hyper(3)
    for _ in range(2000):
        i = rng.integers(40)
        new = rng.integers(3)
        stats_update(comp.kind_code, hyper, st[labels[i]], X[i], -1)
        stats_update(comp.kind_code, hyper, st[new], X[i], 1)
        labels[i] = new
    fresh = comp.stats(X, labels, 3)
    assert np.allclose(st, fresh, rtol=tol, atol=tol)
    assert np.allclose(comp.log_marginal(st), comp.log_marginal(fresh), rtol=marginal_tol, atol=0)
    if comp.kind_code == 3:  # whatever the conditioning, L L^T reproduces Psi_n
        L = st[:, 4:].reshape(3, 3, 3)
        Lf = fresh[:, 4:].reshape(3, 3, 3)
        assert np.allclose(
            L @ np.swapaxes(L, 1, 2), Lf @ np.swapaxes(Lf, 1, 2), rtol=1e-12, atol=1e-8
        )


def test_stats_of_empty_data_are_empty_rows(case):
    comp, _, d = case
    st = comp.stats(np.zeros((0, d)), np.zeros(0, dtype=int), 3)
    assert np.array_equal(st, comp.empty_stats(3, d))
    if comp.kind_code != 3:
        assert not st.any()
    else:  # the prior's mean and chol(psi0)
        h = comp.hyperparameters(d)
        assert np.array_equal(st[0, 1 : 1 + d], h["mu0"])
        assert np.allclose(st[0, 1 + d :].reshape(d, d) @ st[0, 1 + d :].reshape(d, d).T, h["psi0"])


# ------------------------------------------------------------------------------- sampling
def _within_5_se(draws, expected):
    mean = draws.mean(0)
    se = draws.std(0, ddof=1) / math.sqrt(draws.shape[0])
    return np.all(np.abs(mean - expected) <= 5 * se + 1e-12)


def test_prior_draws_have_the_prior_moments():
    rng = np.random.default_rng(14)
    n = 20000
    a, b = np.array([0.5, 2.0, 1.0]), np.array([1.5, 0.5, 1.0])
    theta = BetaBernoulli(a=a, b=b).sample_prior(rng, n, 3)["theta"]
    assert theta.shape == (n, 3) and _within_5_se(theta, a / (a + b))
    eta = np.array([0.05, 1.0, 3.0, 0.5])
    theta = DirichletMultinomial(eta=eta).sample_prior(rng, n, 4)["theta"]
    assert theta.shape == (n, 4) and np.allclose(theta.sum(1), 1.0)
    assert _within_5_se(theta, eta / eta.sum())
    ng = NormalGamma(mu0=[1.0, -2.0], kappa0=2.0, a0=[3.0, 5.0], b0=[2.0, 1.0])
    draw = ng.sample_prior(rng, n, 2)
    assert set(draw) == set(ng.param_names) and draw["mu"].shape == draw["tau"].shape == (n, 2)
    assert _within_5_se(draw["tau"], np.array([1.5, 5.0]))
    assert _within_5_se(draw["mu"], np.array([1.0, -2.0]))
    niw = NormalInverseWishart(mu0=[0.5, -1.0, 0.0], kappa0=0.5, nu0=9.0, psi0=PSI3)
    draw = niw.sample_prior(rng, n, 3)
    assert set(draw) == set(niw.param_names)
    assert draw["mu"].shape == (n, 3) and draw["cov"].shape == (n, 3, 3)
    assert np.array_equal(draw["cov"], np.swapaxes(draw["cov"], 1, 2))
    assert _within_5_se(draw["cov"].reshape(n, 9), (PSI3 / (9.0 - 3 - 1)).ravel())
    assert _within_5_se(draw["mu"], np.array([0.5, -1.0, 0.0]))


def test_niw_prior_covariances_match_scipy_invwishart():
    rng = np.random.default_rng(15)
    n = 20000
    cov = NormalInverseWishart(nu0=7.0, psi0=PSI3).sample_prior(rng, n, 3)["cov"]
    reference = stats.invwishart(df=7.0, scale=PSI3).rvs(size=n, random_state=rng)
    for stat in (lambda c: c[:, 0, 1], lambda c: np.log(np.linalg.det(c)), lambda c: c[:, 2, 2]):
        mine, theirs = stat(cov), stat(reference)
        se = math.sqrt(mine.var() / n + theirs.var() / n)
        assert abs(np.median(mine) - np.median(theirs)) < 0.05 * abs(np.median(theirs)) + 5 * se
        assert abs(mine.mean() - theirs.mean()) < 5 * se


def test_posterior_draws_have_the_posterior_moments():
    rng = np.random.default_rng(16)
    n = 20000
    X = binary(rng, 10, 3)
    comp = BetaBernoulli(a=0.5, b=2.0)
    st = comp.stats(X, np.array([0] * 6 + [1] * 4), 3)
    rep = np.tile(st, (n // 3 + 1, 1))  # many copies of the three clusters
    theta = comp.sample_posterior(rng, rep)["theta"]
    assert theta.shape == (rep.shape[0], 3)
    for k in range(3):
        expected = (0.5 + st[k, 1:]) / (2.5 + st[k, 0])
        assert _within_5_se(theta[k::3], expected)
    comp = DirichletMultinomial(eta=[0.5, 1.0, 0.2])
    Xc = counts(rng, 6, 3)
    st = comp.stats(Xc, np.zeros(6, dtype=int), 1)
    theta = comp.sample_posterior(rng, np.repeat(st, n, axis=0))["theta"]
    conc = np.array([0.5, 1.0, 0.2]) + st[0, 1:]
    assert _within_5_se(theta, conc / conc.sum())
    comp = NormalGamma(mu0=1.0, kappa0=0.5, a0=2.0, b0=1.0)
    Xr = real(rng, 7, 2)
    st = comp.stats(Xr, np.zeros(7, dtype=int), 1)
    draw = comp.sample_posterior(rng, np.repeat(st, n, axis=0))
    kn, an = 0.5 + 7, 2.0 + 3.5
    xbar = Xr.mean(0)
    bn = 1.0 + 0.5 * ((Xr - xbar) ** 2).sum(0) + 0.5 * 7 * (xbar - 1.0) ** 2 / (2 * kn)
    assert _within_5_se(draw["tau"], an / bn)
    assert _within_5_se(draw["mu"], (0.5 * 1.0 + 7 * xbar) / kn)
    mu0, kappa0, nu0 = np.array([0.5, -1.0, 0.0]), 0.7, 5.0
    comp = NormalInverseWishart(mu0=mu0, kappa0=kappa0, nu0=nu0, psi0=PSI3)
    Xr = rng.multivariate_normal([2.0, 0.0, -1.0], PSI3, size=6)
    st = comp.stats(Xr, np.zeros(6, dtype=int), 2)  # cluster 1 is empty: the prior
    draw = comp.sample_posterior(rng, np.tile(st, (n // 2, 1)))
    assert draw["cov"].shape == (n, 3, 3) and draw["mu"].shape == (n, 3)
    mun, kn, nun, psin = _niw_posterior(Xr, mu0, kappa0, nu0, PSI3)
    assert _within_5_se(draw["cov"][::2].reshape(-1, 9), (psin / (nun - 3 - 1)).ravel())
    assert _within_5_se(draw["mu"][::2], mun)
    assert _within_5_se(draw["cov"][1::2].reshape(-1, 9), (PSI3 / (nu0 - 3 - 1)).ravel())
    assert _within_5_se(draw["mu"][1::2], mu0)


# --------------------------------------------------------------- likelihoods, simulators
def test_log_likelihoods_against_scipy_and_simulators():
    rng = np.random.default_rng(17)
    labels = np.array([0, 1, 1, 2, 0])
    bb = BetaBernoulli(a=0.3, b=0.3)  # some theta near 0 and 1
    params = bb.sample_prior(rng, 3, 4)
    params["theta"][0, 0] = 0.0
    X = bb.simulate(rng, params, labels)
    assert X.shape == (5, 4) and set(np.unique(X)) <= {0.0, 1.0}
    ll = bb.log_likelihood(params, X)
    with np.errstate(divide="ignore"):
        expected = np.array(
            [[stats.bernoulli.logpmf(x, t).sum() for t in params["theta"]] for x in X]
        )
    assert np.array_equal(np.isinf(ll), np.isinf(expected))
    assert np.allclose(ll[np.isfinite(ll)], expected[np.isfinite(expected)], rtol=1e-12)

    dm = DirichletMultinomial(eta=2.0)
    params = dm.sample_prior(rng, 3, 4)
    X = dm.simulate(rng, params, labels, n_trials=np.array([0, 3, 5, 7, 9]))
    assert X.shape == (5, 4) and np.array_equal(X.sum(1), [0, 3, 5, 7, 9])
    ll = dm.log_likelihood(params, X)
    coef = gammaln(X.sum(1) + 1) - gammaln(X + 1).sum(1)
    expected = np.array(
        [[stats.multinomial.logpmf(x, x.sum(), t) for t in params["theta"]] for x in X]
    )
    assert np.allclose(ll + coef[:, None], expected, rtol=1e-12, atol=1e-12)

    ng = NormalGamma(mu0=[0.0, 5.0], a0=3.0)
    params = ng.sample_prior(rng, 3, 2)
    X = ng.simulate(rng, params, labels)
    expected = np.array(
        [
            [
                stats.norm.logpdf(x, m, 1 / np.sqrt(t)).sum()
                for m, t in zip(params["mu"], params["tau"], strict=True)
            ]
            for x in X
        ]
    )
    assert np.allclose(ng.log_likelihood(params, X), expected, rtol=1e-12)

    niw = NormalInverseWishart(psi0=PSI3)
    params = niw.sample_prior(rng, 3, 3)
    X = niw.simulate(rng, params, labels)
    assert X.shape == (5, 3)
    expected = np.array(
        [
            [
                stats.multivariate_normal.logpdf(x, m, c)
                for m, c in zip(params["mu"], params["cov"], strict=True)
            ]
            for x in X
        ]
    )
    assert np.allclose(niw.log_likelihood(params, X), expected, rtol=1e-10)


def test_simulators_reproduce_the_parameters():
    rng = np.random.default_rng(18)
    n = 20000
    labels = np.zeros(n, dtype=int)
    params = {"mu": np.array([[1.0, -2.0]]), "cov": np.array([[[2.0, 0.5], [0.5, 1.0]]])}
    X = NormalInverseWishart().simulate(rng, params, labels)
    assert _within_5_se(X, params["mu"][0])
    assert np.allclose(np.cov(X.T), params["cov"][0], atol=0.1)
    params = {"mu": np.array([[1.0, -2.0]]), "tau": np.array([[4.0, 0.25]])}
    X = NormalGamma().simulate(rng, params, labels)
    assert _within_5_se(X, params["mu"][0]) and np.allclose(X.var(0), [0.25, 4.0], rtol=0.05)


def test_components_are_hashable_and_compare_by_value():
    assert BetaBernoulli(a=[1, 2]) == BetaBernoulli(a=(1.0, 2.0))
    assert hash(NormalInverseWishart(psi0=PSI3)) == hash(NormalInverseWishart(psi0=PSI3.tolist()))
    assert BetaBernoulli().data_kinds == ("binary",)
    assert "counts" in DirichletMultinomial().data_kinds and "real" in NormalGamma().data_kinds
    codes = [
        c.kind_code
        for c in (BetaBernoulli(), DirichletMultinomial(), NormalGamma(), NormalInverseWishart())
    ]
    assert codes == [0, 1, 2, 3]
    assert NormalInverseWishart().hyperparameters(4)["nu0"] == 6.0


# ------------------------------------------------------------------------------ bad input
@pytest.mark.parametrize(
    "make, match",
    [
        (lambda: BetaBernoulli(a=-1.0), r"^a must be a positive finite number, got -1\.0$"),
        (lambda: BetaBernoulli(b=0.0), r"^b must be a positive finite number, got 0\.0$"),
        (
            lambda: BetaBernoulli(a=[1.0, -2.0]),
            r"^a\[1\] must be a positive finite number, got -2\.0$",
        ),
        (lambda: BetaBernoulli(a=float("nan")), r"^a must be a positive finite number, got nan$"),
        (lambda: BetaBernoulli(a="one"), r"^a must be a positive finite number, got 'one'$"),
        (lambda: BetaBernoulli(b=None), r"^b must be a positive finite number, got None$"),
        (lambda: BetaBernoulli(a=[[1.0]]), r"^a must be .* got shape \(1, 1\)$"),
        (lambda: DirichletMultinomial(eta=0), r"^eta must be a positive finite number, got 0\.0$"),
        (lambda: DirichletMultinomial(eta=[]), r"^eta must be .* got shape \(0,\)$"),
        (lambda: NormalGamma(mu0=float("inf")), r"^mu0 must be a finite number, got inf$"),
        (lambda: NormalGamma(kappa0=-1), r"^kappa0 must be a positive finite number, got -1\.0$"),
        (lambda: NormalGamma(a0=0.0), r"^a0 must be a positive finite number"),
        (lambda: NormalGamma(b0=[1.0, float("nan")]), r"^b0\[1\] must be a positive finite number"),
        (lambda: NormalInverseWishart(kappa0=0.0), r"^kappa0 must be a positive finite number"),
        (
            lambda: NormalInverseWishart(kappa0=[1.0, 2.0]),
            r"^kappa0 must be a positive finite number",
        ),
        (
            lambda: NormalInverseWishart(nu0=-3.0),
            r"^nu0 must be a positive finite number, got -3\.0$",
        ),
        (
            lambda: NormalInverseWishart(mu0=[0.0, float("nan")]),
            r"^mu0\[1\] must be a finite number",
        ),
        (lambda: NormalInverseWishart(psi0=-1.0), r"^psi0 must be a positive finite number"),
        (lambda: NormalInverseWishart(psi0=[[1.0, 0.5], [0.2, 1.0]]), r"^psi0 must be symmetric"),
        (
            lambda: NormalInverseWishart(psi0=[[1.0, 2.0], [2.0, 1.0]]),
            r"^psi0 must be positive definite$",
        ),
        (
            lambda: NormalInverseWishart(psi0=np.ones((2, 3))),
            r"^psi0 must be a scalar, .* \(2, 3\)$",
        ),
        (
            lambda: NormalInverseWishart(psi0=[[1.0, np.inf], [np.inf, 1.0]]),
            r"^psi0\[0, 1\] is inf$",
        ),
        (lambda: NormalInverseWishart(mu0=[0.0] * 3, psi0=np.eye(2)), r"^mu0 has 3 entries"),
    ],
)
def test_bad_hyperparameters_are_named(make, match):
    with pytest.raises(ValueError, match=match):
        make()


@pytest.mark.parametrize(
    "comp, X, match",
    [
        (BetaBernoulli(), [[0, 1], [1, 0], [0, 0.5]], r"^X\[2, 1\] = 0\.5 is not binary$"),
        (BetaBernoulli(), [[0, 2]], r"^X\[0, 1\] = 2\.0 is not binary$"),
        (
            DirichletMultinomial(),
            [[0, 1, -1.0]],
            r"^X\[0, 2\] = -1\.0 is not a non-negative integer count$",
        ),
        (
            DirichletMultinomial(),
            [[0, 1], [1.5, 2]],
            r"^X\[1, 0\] = 1\.5 is not a non-negative integer count$",
        ),
        (BetaBernoulli(), [[0, 1], [np.nan, 0]], r"^X\[1, 0\] is nan$"),
        (DirichletMultinomial(), [[0, np.inf]], r"^X\[0, 1\] is inf$"),
        (NormalGamma(), [[0.3, 1.0], [2.0, -np.inf]], r"^X\[1, 1\] is -inf$"),
        (NormalInverseWishart(), [[0.3, np.nan]], r"^X\[0, 1\] is nan$"),
        (NormalGamma(), [1.0, 2.0], r"^X must be a 2-D array"),
        (NormalGamma(), np.zeros((3, 0)), r"^X has no features"),
        (NormalGamma(), [["a", "b"]], r"^X must be a 2-D numeric array"),
        (
            BetaBernoulli(a=[1.0, 2.0]),
            np.zeros((2, 3)),
            r"^a has 2 entries but the data have 3 features$",
        ),
        (
            NormalInverseWishart(psi0=np.eye(2)),
            np.zeros((2, 3)),
            r"^psi0 is 2 x 2 but the data have 3",
        ),
        (
            NormalInverseWishart(nu0=1.5),
            np.zeros((2, 3)),
            r"^nu0 must be greater than D - 1 = 2 for 3 features, got 1\.5$",
        ),
    ],
)
def test_bad_data_is_named(comp, X, match):
    with pytest.raises(ValueError, match=match):
        comp.check_data(X)


def test_good_data_passes_and_other_bad_arguments_are_named():
    X = np.array([[0.0, 1.0], [1.0, 1.0]])
    comp = BetaBernoulli()
    out = comp.check_data(X.astype(int))
    assert out.dtype == np.float64 and np.array_equal(out, X)
    assert np.array_equal(DirichletMultinomial().check_data([[0, 3]]), [[0.0, 3.0]])
    with pytest.raises(ValueError, match=r"^labels\[1\] = 5 is outside 0\.\.2$"):
        comp.stats(X, np.array([0, 5]), 3)
    with pytest.raises(ValueError, match=r"^labels must have one entry per item"):
        comp.stats(X, np.array([0]), 3)
    with pytest.raises(ValueError, match=r"^labels must be integers"):
        comp.stats(X, np.array([0.0, 1.0]), 3)
    with pytest.raises(ValueError, match=r"^n_clusters must be an integer >= 1, got 0$"):
        comp.stats(X, np.array([0, 0]), 0)
    with pytest.raises(ValueError, match=r"^stats must have shape \(n_clusters, 3\)"):
        comp.log_predictive(np.zeros((2, 4)), X)
    with pytest.raises(ValueError, match=r"^params lacks 'theta'"):
        comp.log_likelihood({"mu": np.zeros((1, 2))}, X)
    with pytest.raises(ValueError, match=r"^n_trials must be"):
        DirichletMultinomial().simulate(0, {"theta": np.full((1, 2), 0.5)}, [0, 0], n_trials=2.5)
    with pytest.raises(ValueError, match=r"^D must be an integer >= 1"):
        NormalGamma().hyper(0)


@pytest.mark.parametrize(
    "comp",
    [
        NormalGamma(mu0=1e6),
        NormalInverseWishart(mu0=1e6),
        NormalInverseWishart(psi0=[[1e14, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0]]),
    ],
    ids=["ng-far-mean", "niw-far-mean", "niw-anisotropic"],
)
def test_range_check_accepts_data_within_the_limits_that_the_quick_bound_cannot_clear(comp):
    """Issue 24's range check: data near a far ``mu0``, or far only along a wide direction of
    ``psi0``, fail the cheap bound but pass the exact check, and score finitely."""
    X = np.random.default_rng(3).normal(size=(6, 3))
    if comp.mu0 == 0.0:
        X[:, 0] *= 1e6  # 1e12 along psi0's first axis: 1e-2 prior scales
    else:
        X += 1e6
    comp.check_data(X)
    stats = comp.stats(X, np.array([0, 0, 0, 1, 1, 1]), 2)
    assert np.all(np.isfinite(comp.log_marginal(stats)))
    assert np.all(np.isfinite(comp.log_predictive(stats, X)))


@pytest.mark.parametrize("comp", [NormalGamma(), NormalInverseWishart()], ids=["ng", "niw"])
def test_range_check_names_the_entry_and_the_limit(comp):
    X = np.zeros((4, 2))
    X[2, 1] = 3e6  # 4.5e12 (NormalGamma: over 2 b0) or 9e12 prior scales from mu0
    where = r"X\[2, 1\] = 3000000\.0" if comp.kind_code == 2 else r"X\[2, :\] \(item 2\)"
    with pytest.raises(ValueError, match=rf"^{where} is too far from mu0 .* exceeds 1e\+12"):
        comp.check_data(X)
    X[2, 1] = -1e101
    with pytest.raises(ValueError, match=r"^X\[2, 1\] = -1e\+101 is too far .* at most 1e\+100"):
        comp.log_predictive(comp.empty_stats(1, 2), X)
