"""Collapsed Gibbs sampling of Bayesian and Dirichlet process mixtures of conjugate components.

The component parameters and the mixing weights are integrated out; the chain moves over the
assignments ``z`` only. With ``n_k^{-i}`` items in cluster ``k`` once item ``i`` is removed and
``p(x_i | D_k^{-i})`` the component's posterior predictive (closed form, from the kernels of
:mod:`latentzoo.models.conjugate`):

**Dirichlet process mixture** (Neal 2000, algorithm 3; thesis eq. (2.19)-(2.20), the Chinese
restaurant process)

    p(z_i = k     | z_-i, X) ∝ n_k^{-i} p(x_i | D_k^{-i})        for an occupied cluster k,
    p(z_i = new   | z_-i, X) ∝ alpha    p(x_i)                   for a new cluster,

clusters being created and freed as the sweep goes (a freed slot is recycled; the capacity of the
statistics table doubles when it is full).

**Finite Bayesian mixture** with ``w ~ Dirichlet(alpha/K, ..., alpha/K)`` (thesis section 2.3):

    p(z_i = k | z_-i, X) ∝ (n_k^{-i} + alpha/K) p(x_i | D_k^{-i}),   k = 1..K.

Both targets are the collapsed joint ``p(z) prod_k p(D_k)`` of
:meth:`~latentzoo.models.mixture.DirichletProcessMixture.collapsed_log_joint` (Lemma 3.1, eq. (3.8)
and (3.9) for the DPM partition prior), whose normalised form over all set partitions is the exact
posterior that the tests compare the sampler's frequencies with.

Options (all inside the one numba call per sweep, no Python loop over items):

- ``split_merge``: restricted Gibbs split-merge moves (Jain & Neal 2004, section 3) before each
  sweep. Two distinct items ``i, j`` are drawn; the other members ``S`` of their clusters are
  placed at random in two launch clusters (seeded with ``x_i`` and ``x_j``) and refined by
  ``intermediate_scans`` restricted Gibbs scans. If ``z_i = z_j`` a final restricted scan proposes
  the split, with proposal probability ``q`` the product of its transition probabilities; otherwise
  the merge of the two clusters is proposed and ``q`` is the probability that a restricted scan from
  the launch state reproduces the current split. The Metropolis-Hastings ratio
  ``[p(z') p(X | z') / p(z) p(X | z)] q^{-1}`` (split) or ``... q`` (merge) is evaluated in log space.
  For the finite mixture the new cluster of a split takes one of the ``E`` empty labels uniformly
  (``E = 0``: no split), which adds ``log E`` to the split ratio; a merge, which keeps ``j``'s
  label, subtracts the log of the number of empty labels after it.
- ``sample_alpha``: the Escobar & West (1995, section 6) auxiliary-variable update of the DPM
  concentration under a ``Gamma(a, b)`` prior (shape ``a``, rate ``b``): ``eta ~ Beta(alpha + 1, n)``,
  then ``alpha ~ pi Gamma(a + k, b - log eta) + (1 - pi) Gamma(a + k - 1, b - log eta)`` with
  ``pi / (1 - pi) = (a + k - 1) / (n (b - log eta))``.

Every random number of a transition comes from the chain's own splitmix64 generator
(:func:`~latentzoo.inference.mcmc.next_uniform`; Gamma variates by Marsaglia & Tsang 2000), and the
parameter draws of kept draws from the chain's numpy generator, so the same ``random_state`` gives
bit-identical chains.

Speed: the Beta-Bernoulli predictive is regrouped as ``base_k + x . coef_k`` per cluster
(:func:`_bernoulli_coefficients`), refreshed only for the clusters an item leaves and joins, with
the logarithms from tables when ``a`` and ``b`` are scalars; the other components call
``log_predictive_one``. On this machine (N = 10,000 binary items, D = 64, 12 clusters) a DPM sweep
runs at about 75 per second, 43 with ``split_merge=True``.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numba as nb
import numpy as np
from scipy.special import gammaln, logsumexp

from latentzoo.data import Features
from latentzoo.data.checks import as_rng
from latentzoo.inference._docstrings import with_example_setup
from latentzoo.inference.family import (
    GIBBS_OPTIONS,
    GIBBS_TEST,
    Family,
    Method,
    anything,
    flag,
    integer,
    real,
)
from latentzoo.inference.mcmc import (
    GibbsInfo,
    GibbsSetup,
    LabelAxis,
    dirichlet_rows,
    draw_log_weights,
    gibbs_entry,
    next_uniform,
    splitmix_seeds,
    uniform_labels,
)
from latentzoo.models._checks import check_integer, check_positive
from latentzoo.models.conjugate import (
    log_marginal_one,
    log_predictive_one,
    stats_update,
)
from latentzoo.models.mixture import BayesianMixture, DirichletProcessMixture, default_pairs

__all__ = [
    "MAX_DENSE_BYTES",
    "MixtureGibbs",
    "MixtureGibbsState",
    "SplitMergeInfo",
    "escobar_west",
    "gibbs",
]

MAX_DENSE_BYTES = 2 * 2**30
"""The sampler holds the data as a dense float64 ``(N, D)`` array; larger inputs are refused."""


# ------------------------------------------------------------------------ random variates
@nb.njit(cache=True)
def _normal(state):
    """A standard normal variate (Box-Muller) from the chain's generator."""
    u1 = 1.0 - next_uniform(state)
    u2 = next_uniform(state)
    return math.sqrt(-2.0 * math.log(u1)) * math.cos(2.0 * math.pi * u2)


@nb.njit(cache=True)
def _gamma(state, shape):
    """A ``Gamma(shape, 1)`` variate (Marsaglia & Tsang 2000; shape < 1 boosted by ``u**(1/shape)``)."""
    log_boost = 0.0
    if shape < 1.0:
        log_boost = math.log(1.0 - next_uniform(state)) / shape
        shape += 1.0
    d = shape - 1.0 / 3.0
    c = 1.0 / math.sqrt(9.0 * d)
    while True:
        x = _normal(state)
        v = 1.0 + c * x
        if v <= 0.0:
            continue
        v = v * v * v
        u = 1.0 - next_uniform(state)
        if math.log(u) < 0.5 * x * x + d - d * v + d * math.log(v):
            return d * v * math.exp(log_boost)


@nb.njit(cache=True)
def escobar_west(alpha, n_clusters, n_items, a, b, state):
    """One Escobar & West (1995) update of the DPM concentration under a ``Gamma(a, b)`` prior.

    ``eta ~ Beta(alpha + 1, n)``; ``alpha ~ Gamma(a + k - s, rate = b - log eta)`` with ``s = 0``
    with probability ``pi``, ``pi / (1 - pi) = (a + k - 1) / (n (b - log eta))``, else ``s = 1``.
    ``state`` is the chain's splitmix64 state, advanced in place.

    Examples
    --------
    A chain of updates for one item (one cluster), whose posterior is the ``Gamma(2, 1)`` prior:

    >>> state, alpha, draws = np.array([3], dtype=np.uint64), 1.0, []
    >>> for _ in range(4000):
    ...     alpha = escobar_west(alpha, 1, 1, 2.0, 1.0, state)
    ...     draws.append(alpha)
    >>> bool(abs(np.mean(draws) - 2.0) < 0.15)
    True
    """
    g1 = _gamma(state, alpha + 1.0)
    g2 = _gamma(state, float(n_items))
    eta = g1 / (g1 + g2)
    rate = b - math.log(eta)
    odds = (a + n_clusters - 1.0) / (n_items * rate)
    shape = a + n_clusters - 1.0
    if next_uniform(state) * (1.0 + odds) < odds:
        shape += 1.0
    return _gamma(state, shape) / rate


# ------------------------------------------------------------------------- bookkeeping
@nb.njit(cache=True)
def _build_tables(X, z, capacity, prior, kind, hyper):
    """Cluster sizes and statistics ``(capacity, S)`` of the assignments ``z`` (empty rows = prior)."""
    sizes = np.zeros(capacity, dtype=np.int64)
    stats = np.empty((capacity, prior.shape[0]))
    for k in range(capacity):
        stats[k, :] = prior
    for i in range(X.shape[0]):
        sizes[z[i]] += 1
        stats_update(kind, hyper, stats[z[i]], X[i], 1.0)
    return sizes, stats


@nb.njit(cache=True)
def _grow(sizes, stats, prior):
    """The tables with their capacity doubled (new rows empty)."""
    capacity = sizes.shape[0]
    new_sizes = np.zeros(2 * capacity, dtype=np.int64)
    new_sizes[:capacity] = sizes
    new_stats = np.empty((2 * capacity, stats.shape[1]))
    new_stats[:capacity] = stats
    for k in range(capacity, 2 * capacity):
        new_stats[k, :] = prior
    return new_sizes, new_stats


@nb.njit(cache=True)
def _free_slot(sizes, stats, prior):
    """An empty slot (the first), growing the tables when there is none."""
    for k in range(sizes.shape[0]):
        if sizes[k] == 0:
            return k, sizes, stats
    k = sizes.shape[0]
    sizes, stats = _grow(sizes, stats, prior)
    return k, sizes, stats


@nb.njit(cache=True)
def _occupied(sizes):
    n = 0
    for k in range(sizes.shape[0]):
        if sizes[k] > 0:
            n += 1
    return n


@nb.njit(cache=True)
def _canonical(z):
    """Relabel ``z`` in restricted-growth form: labels in order of first appearance."""
    top = 0
    for i in range(z.shape[0]):
        top = max(top, z[i])
    mapping = np.full(top + 1, -1, dtype=np.int64)
    out = np.empty_like(z)
    following = 0
    for i in range(z.shape[0]):
        if mapping[z[i]] < 0:
            mapping[z[i]] = following
            following += 1
        out[i] = mapping[z[i]]
    return out


@nb.njit(cache=True)
def _crp_labels(state, n, alpha):
    """A draw from the Chinese restaurant process prior (eq. (2.19)-(2.20)): a random start."""
    z = np.empty(n, dtype=np.int64)
    tables = 0
    for i in range(n):
        u = next_uniform(state) * (i + alpha)
        if u >= i:
            z[i] = tables
            tables += 1
        else:  # join the table of a uniformly chosen earlier customer: probability n_k / i
            z[i] = z[min(int(u), i - 1)]
    return z


# ------------------------------------------------------------------------------ sweeps
@nb.njit(cache=True)
def _bernoulli_coefficients(hyper, tables, row, coef_row):
    """Beta-Bernoulli predictive as ``log p(x | D_k) = base + x . coef`` for binary ``x``.

    Writes ``coef_d = log(a_d + m_d) - log(b_d + n - m_d)`` and returns
    ``base = sum_d [log(b_d + n - m_d) - log(a_d + b_d + n)]`` (the closed form of
    ``log_predictive_one`` regrouped), so scoring an item against a cluster costs ``D``
    multiply-adds instead of ``2 D`` logarithms; only the clusters an item leaves and joins are
    refreshed. With scalar ``a, b`` the logarithms come from ``tables`` (rows ``log(a + t)``,
    ``log(b + t)``, ``log(a + b + t)`` for ``t = 0..N``; counts are integers); ``tables`` with no
    columns means per-feature hyperparameters, computed directly.
    """
    d_count = coef_row.shape[0]
    n = row[0]
    base = 0.0
    if tables.shape[1] > 0:
        n_int = int(n)
        log_total = tables[2, n_int]
        for d in range(d_count):
            m = int(row[1 + d])
            log_zero = tables[1, n_int - m]
            coef_row[d] = tables[0, m] - log_zero
            base += log_zero
        return base - d_count * log_total
    for d in range(d_count):
        a = hyper[d]
        b = hyper[d_count + d]
        m = row[1 + d]
        log_zero = math.log(b + n - m)
        coef_row[d] = math.log(a + m) - log_zero
        base += log_zero - math.log(a + b + n)
    return base


@nb.njit(cache=True)
def _cache(kind, hyper, tables, stats, n_features):
    """Per-slot ``(coef, base)`` of :func:`_bernoulli_coefficients` (empty arrays for other kinds)."""
    capacity = stats.shape[0]
    width = n_features if kind == 0 else 0
    coef = np.empty((capacity, width))
    base = np.zeros(capacity)
    if kind == 0:
        for k in range(capacity):
            base[k] = _bernoulli_coefficients(hyper, tables, stats[k], coef[k])
    return coef, base


@nb.njit(cache=True)
def _refresh(kind, hyper, tables, stats, coef, base, k):
    if kind == 0:
        base[k] = _bernoulli_coefficients(hyper, tables, stats[k], coef[k])


@nb.njit(cache=True)
def _take_out(x, k, sizes, stats, prior, kind, hyper, tables, coef, base):
    """Remove item ``x`` from slot ``k`` (size, statistics, cached predictive); True when ``k``
    empties, its statistics then reset to ``prior`` exactly (no round-off left behind)."""
    sizes[k] -= 1
    emptied = sizes[k] == 0
    if emptied:
        stats[k, :] = prior
    else:
        stats_update(kind, hyper, stats[k], x, -1.0)
    _refresh(kind, hyper, tables, stats, coef, base, k)
    return emptied


@nb.njit(cache=True)
def _put_in(x, k, sizes, stats, kind, hyper, tables, coef, base):
    """Add item ``x`` to slot ``k`` (size, statistics, cached predictive)."""
    sizes[k] += 1
    stats_update(kind, hyper, stats[k], x, 1.0)
    _refresh(kind, hyper, tables, stats, coef, base, k)


@nb.njit(cache=True)
def _log_pred(kind, hyper, stats, coef, base, k, x):
    """``log p(x | D_k)`` of slot ``k``: the cached form for Beta-Bernoulli, else the kernel."""
    if kind == 0:
        out = base[k]
        for d in range(x.shape[0]):
            out += x[d] * coef[k, d]
        return out
    return log_predictive_one(kind, hyper, stats[k], x)


@nb.njit(cache=True)
def _dpm_sweep(X, z, sizes, stats, prior, prior_pred, kind, hyper, tables, alpha, state):
    """One sweep of Neal's algorithm 3 over all items; returns the (possibly grown) tables.

    Occupied slots are kept at the front of ``order`` (``where`` is its inverse) so each item
    visits only the occupied clusters plus one new one.
    """
    capacity = sizes.shape[0]
    coef, base = _cache(kind, hyper, tables, stats, X.shape[1])
    order = np.empty(capacity, dtype=np.int64)
    where = np.empty(capacity, dtype=np.int64)
    n_active = 0
    for k in range(capacity):
        if sizes[k] > 0:
            order[n_active] = k
            where[k] = n_active
            n_active += 1
    m = n_active
    for k in range(capacity):
        if sizes[k] == 0:
            order[m] = k
            where[k] = m
            m += 1
    logw = np.empty(capacity + 1)
    log_alpha = math.log(alpha)
    for i in range(X.shape[0]):
        x = X[i]
        old = z[i]
        if _take_out(x, old, sizes, stats, prior, kind, hyper, tables, coef, base):
            p = where[old]
            last = order[n_active - 1]
            order[p] = last
            where[last] = p
            order[n_active - 1] = old
            where[old] = n_active - 1
            n_active -= 1
        for a in range(n_active):
            k = order[a]
            logw[a] = math.log(sizes[k]) + _log_pred(kind, hyper, stats, coef, base, k, x)
        logw[n_active] = log_alpha + prior_pred[i]
        a = draw_log_weights(logw, n_active + 1, state)
        if a == n_active:
            if n_active == capacity:
                sizes, stats = _grow(sizes, stats, prior)
                coef, base = _cache(kind, hyper, tables, stats, X.shape[1])
                new_order = np.empty(2 * capacity, dtype=np.int64)
                new_where = np.empty(2 * capacity, dtype=np.int64)
                new_order[:capacity] = order
                new_where[:capacity] = where
                for k in range(capacity, 2 * capacity):
                    new_order[k] = k
                    new_where[k] = k
                order, where = new_order, new_where
                capacity *= 2
                logw = np.empty(capacity + 1)
            k = order[n_active]
            n_active += 1
        else:
            k = order[a]
        z[i] = k
        _put_in(x, k, sizes, stats, kind, hyper, tables, coef, base)
    return sizes, stats


@nb.njit(cache=True)
def _finite_sweep(X, z, sizes, stats, prior, prior_pred, kind, hyper, tables, alpha, state):
    """One collapsed sweep of the finite mixture: ``p(z_i = k) ∝ (n_k + alpha/K) p(x_i | D_k)``."""
    n_labels = sizes.shape[0]
    offset = alpha / n_labels
    coef, base = _cache(kind, hyper, tables, stats, X.shape[1])
    logw = np.empty(n_labels)
    for i in range(X.shape[0]):
        x = X[i]
        _take_out(x, z[i], sizes, stats, prior, kind, hyper, tables, coef, base)
        for k in range(n_labels):
            if sizes[k] == 0:
                logw[k] = math.log(offset) + prior_pred[i]
            else:
                logw[k] = math.log(sizes[k] + offset) + _log_pred(
                    kind, hyper, stats, coef, base, k, x
                )
        k = draw_log_weights(logw, n_labels, state)
        z[i] = k
        _put_in(x, k, sizes, stats, kind, hyper, tables, coef, base)


# --------------------------------------------------------------------------- split-merge
@nb.njit(cache=True)
def _restricted_scan(X, members, side, pair, coef, base, counts, offset, kind, hyper, tables,
                     target, forced, state):  # fmt: skip
    """One restricted Gibbs scan of ``members`` between the two launch clusters.

    ``pair`` (2, S) holds the statistics of cluster 0 (with item ``i``) and 1 (with ``j``),
    ``counts`` their sizes, ``side[m]`` the cluster of member ``m``; ``coef``/``base`` the cached
    Beta-Bernoulli predictive of each (kind 0). With ``forced`` each member is moved to
    ``target[m]`` instead of a sampled side. Returns the log probability of the transitions made
    (Jain & Neal 2004, eq. (3.6)).
    """
    log_q = 0.0
    d_count = coef.shape[1]
    saved = np.empty(d_count)
    for m in range(members.shape[0]):
        x = X[members[m]]
        old = side[m]
        if kind == 0:
            saved[:] = coef[old]
            saved_base = base[old]
        stats_update(kind, hyper, pair[old], x, -1.0)
        counts[old] -= 1.0
        _refresh(kind, hyper, tables, pair, coef, base, old)
        la = math.log(counts[0] + offset) + _log_pred(kind, hyper, pair, coef, base, 0, x)
        lb = math.log(counts[1] + offset) + _log_pred(kind, hyper, pair, coef, base, 1, x)
        top = max(la, lb)
        log_norm = top + math.log(math.exp(la - top) + math.exp(lb - top))
        if forced:
            new = target[m]
        else:
            new = 0 if next_uniform(state) < math.exp(la - log_norm) else 1
        log_q += (la if new == 0 else lb) - log_norm
        side[m] = new
        stats_update(kind, hyper, pair[new], x, 1.0)
        counts[new] += 1.0
        if kind == 0 and new == old:  # integer counts: back to the row before the removal
            coef[old] = saved
            base[old] = saved_base
        else:
            _refresh(kind, hyper, tables, pair, coef, base, new)
    return log_q


@nb.njit(cache=True)
def _log_size_prior(n_a, n_b, alpha, finite, offset):
    """``log p(split) - log p(merge)`` of the partition prior (CRP or Dirichlet-multinomial)."""
    if finite:
        return (
            math.lgamma(n_a + offset)
            + math.lgamma(n_b + offset)
            - math.lgamma(n_a + n_b + offset)
            - math.lgamma(offset)
        )
    return math.log(alpha) + math.lgamma(n_a) + math.lgamma(n_b) - math.lgamma(n_a + n_b)


@nb.njit(cache=True)
def _split_merge(X, z, sizes, stats, prior, kind, hyper, tables, alpha, finite, n_scans,
                 state):  # fmt: skip
    """One restricted Gibbs split-merge move (Jain & Neal 2004).

    Returns the (possibly grown) tables and 1 when the move was accepted, else 0.
    """
    n = X.shape[0]
    if n < 2:
        return sizes, stats, 0
    i = min(int(next_uniform(state) * n), n - 1)
    j = min(int(next_uniform(state) * (n - 1)), n - 2)
    if j >= i:
        j += 1
    ci = z[i]
    cj = z[j]
    count = 0
    for s in range(n):
        if s != i and s != j and (z[s] == ci or z[s] == cj):
            count += 1
    members = np.empty(count, dtype=np.int64)
    target = np.empty(count, dtype=np.int64)
    m = 0
    for s in range(n):
        if s != i and s != j and (z[s] == ci or z[s] == cj):
            members[m] = s
            target[m] = 0 if z[s] == ci and ci != cj else 1
            m += 1
    offset = alpha / sizes.shape[0] if finite else 0.0
    # Launch state: i and j seed the two clusters, the others placed at random, then refined.
    pair = np.empty((2, prior.shape[0]))
    pair[0] = prior
    pair[1] = prior
    stats_update(kind, hyper, pair[0], X[i], 1.0)
    stats_update(kind, hyper, pair[1], X[j], 1.0)
    counts = np.ones(2)
    side = np.empty(count, dtype=np.int64)
    for m in range(count):
        side[m] = 0 if next_uniform(state) < 0.5 else 1
        stats_update(kind, hyper, pair[side[m]], X[members[m]], 1.0)
        counts[side[m]] += 1.0
    coef, base = _cache(kind, hyper, tables, pair, X.shape[1])
    for _ in range(n_scans):
        _restricted_scan(X, members, side, pair, coef, base, counts, offset, kind, hyper, tables,
                         target, False, state)  # fmt: skip
    n_empty = sizes.shape[0] - _occupied(sizes)
    if ci == cj:
        new = -1
        if finite:
            if n_empty == 0:
                return sizes, stats, 0
            r = min(int(next_uniform(state) * n_empty), n_empty - 1)
            for k in range(sizes.shape[0]):
                if sizes[k] == 0:
                    if r == 0:
                        new = k
                        break
                    r -= 1
        log_q = _restricted_scan(X, members, side, pair, coef, base, counts, offset, kind, hyper,
                                 tables, target, False, state)  # fmt: skip
        log_ratio = (
            _log_size_prior(counts[0], counts[1], alpha, finite, offset)
            + log_marginal_one(kind, hyper, pair[0])
            + log_marginal_one(kind, hyper, pair[1])
            - log_marginal_one(kind, hyper, stats[ci])
            - log_q
        )
        if finite:
            log_ratio += math.log(n_empty)
        if math.log(1.0 - next_uniform(state)) < log_ratio:
            if not finite:
                new, sizes, stats = _free_slot(sizes, stats, prior)
            stats[new, :] = pair[0]
            stats[ci, :] = pair[1]
            sizes[new] = int(counts[0])
            sizes[ci] = int(counts[1])
            z[i] = new
            for m in range(count):
                if side[m] == 0:
                    z[members[m]] = new
            return sizes, stats, 1
    else:
        log_q = _restricted_scan(X, members, side, pair, coef, base, counts, offset, kind, hyper,
                                 tables, target, True, state)  # fmt: skip
        merged = prior.copy()
        stats_update(kind, hyper, merged, X[i], 1.0)
        stats_update(kind, hyper, merged, X[j], 1.0)
        for m in range(count):
            stats_update(kind, hyper, merged, X[members[m]], 1.0)
        log_ratio = (
            log_marginal_one(kind, hyper, merged)
            - log_marginal_one(kind, hyper, stats[ci])
            - log_marginal_one(kind, hyper, stats[cj])
            - _log_size_prior(float(sizes[ci]), float(sizes[cj]), alpha, finite, offset)
            + log_q
        )
        if finite:
            log_ratio -= math.log(n_empty + 1.0)
        if math.log(1.0 - next_uniform(state)) < log_ratio:
            stats[cj, :] = merged
            sizes[cj] += sizes[ci]
            sizes[ci] = 0
            stats[ci, :] = prior
            z[i] = cj
            for m in range(count):
                z[members[m]] = cj
            return sizes, stats, 1
    return sizes, stats, 0


# ------------------------------------------------------------------------------ one step
@nb.njit(cache=True)
def _run(X, z, sizes, stats, prior, prior_pred, kind, hyper, tables, alpha, finite, n_moves,
         n_scans, gibbs_sweep, sample_alpha, a0, b0, sweeps, state):  # fmt: skip
    """``sweeps`` transitions: split-merge moves, one Gibbs sweep, then the alpha update.

    Returns the (possibly grown) tables, the last ``alpha`` and the number of accepted split-merge
    moves.
    """
    accepted = 0
    for _ in range(sweeps):
        for _ in range(n_moves):
            sizes, stats, done = _split_merge(X, z, sizes, stats, prior, kind, hyper, tables,
                                              alpha, finite, n_scans, state)  # fmt: skip
            accepted += done
        if not gibbs_sweep:
            pass
        elif finite:
            _finite_sweep(X, z, sizes, stats, prior, prior_pred, kind, hyper, tables, alpha,
                          state)  # fmt: skip
        else:
            sizes, stats = _dpm_sweep(X, z, sizes, stats, prior, prior_pred, kind, hyper, tables,
                                      alpha, state)  # fmt: skip
        if sample_alpha:
            alpha = escobar_west(alpha, _occupied(sizes), X.shape[0], a0, b0, state)
    return sizes, stats, alpha, accepted


@nb.njit(cache=True)
def _prior_predictive(X, prior, kind, hyper):
    out = np.empty(X.shape[0])
    for i in range(X.shape[0]):
        out[i] = log_predictive_one(kind, hyper, prior, X[i])
    return out


@nb.njit(cache=True)
def _start(X, prior, kind, hyper, alpha, finite, n_labels, state):
    """Random start: uniform labels (finite) or a CRP prior draw (DPM), with its tables."""
    if finite:
        z = uniform_labels(state, X.shape[0], n_labels)
        capacity = n_labels
    else:
        z = _crp_labels(state, X.shape[0], alpha)
        capacity = max(4, 2 * (z.max() + 1))
    sizes, stats = _build_tables(X, z, capacity, prior, kind, hyper)
    return z, sizes, stats


@nb.njit(cache=True)
def _many_chains(X, prior, prior_pred, kind, hyper, tables, alpha, finite, n_labels, n_moves,
                 n_scans, gibbs_sweep, sample_alpha, a0, b0, seeds, sweeps):  # fmt: skip
    """Independent chains, one per seed, of ``sweeps`` transitions from random starts.

    Returns the final canonical labels ``(chains, N)`` and the final ``alpha`` of each chain.
    """
    out = np.empty((seeds.shape[0], X.shape[0]), dtype=np.int64)
    alphas = np.empty(seeds.shape[0])
    state = np.empty(1, dtype=np.uint64)
    for c in range(seeds.shape[0]):
        state[0] = seeds[c]
        z, sizes, stats = _start(X, prior, kind, hyper, alpha, finite, n_labels, state)
        sizes, stats, last, _ = _run(X, z, sizes, stats, prior, prior_pred, kind, hyper, tables,
                                     alpha, finite, n_moves, n_scans, gibbs_sweep, sample_alpha,
                                     a0, b0, sweeps, state)  # fmt: skip
        out[c] = _canonical(z)
        alphas[c] = last
    return out, alphas


@nb.njit(cache=True)
def _sum_log_marginals(sizes, stats, kind, hyper):
    total = 0.0
    for k in range(sizes.shape[0]):
        if sizes[k] > 0:
            total += log_marginal_one(kind, hyper, stats[k])
    return total


# ------------------------------------------------------------------------------ sampler
REST_TOLERANCE = 1e-8
"""Stick-breaking of the unoccupied part of a drawn DPM measure stops below this mass."""


def _rest_weights(rng: np.random.Generator, alpha: float, mass: float) -> np.ndarray:
    """Stick-breaking weights of a ``DP(alpha)`` scaled to ``mass``, truncated at
    ``REST_TOLERANCE`` (at most 200 atoms; the last takes what is left)."""
    weights, left = [], float(mass)
    while left > REST_TOLERANCE and len(weights) < 199:
        piece = left * rng.beta(1.0, alpha)
        weights.append(piece)
        left -= piece
    weights.append(left)
    return np.asarray(weights)


class MixtureGibbsState(NamedTuple):
    """State of one collapsed Gibbs chain of a mixture.

    ``z`` (N,) holds slot indices into ``sizes`` (capacity,) and ``stats`` (capacity, S), the
    cluster sizes and sufficient statistics (empty slots hold the prior's row). ``z`` and the table
    rows are updated in place by the numba sweep; a DPM sweep that needs more slots than the capacity
    returns doubled tables, so :meth:`MixtureGibbs.step` returns a new tuple. ``n_clusters`` counts
    the occupied slots, ``alpha`` is the current concentration (sampled or fixed), ``rng_state`` the
    chain's splitmix64 state.
    """

    z: np.ndarray
    sizes: np.ndarray
    stats: np.ndarray
    n_clusters: int
    alpha: float
    rng_state: np.ndarray


class SplitMergeInfo(NamedTuple):
    """What a transition of :class:`MixtureGibbs` with split-merge moves reports: ``lp``, the
    collapsed log joint at the new state (:meth:`MixtureGibbs.log_joint`), and
    ``split_merge_accept``, the fraction of the step's split-merge proposals that were accepted (a
    split impossible for want of an empty label of a finite mixture counts as rejected)."""

    lp: float
    split_merge_accept: float


def _as_moves(split_merge) -> int:
    if isinstance(split_merge, bool | np.bool_):
        return int(split_merge)
    if isinstance(split_merge, int | np.integer) and split_merge >= 0:
        return int(split_merge)
    raise ValueError(
        "split_merge must be a bool or a non-negative integer (moves per sweep), "
        f"got {split_merge!r}"
    )


def _log_tables(kind: int, hyper: np.ndarray, n: int, d: int) -> np.ndarray:
    """``log(a + t)``, ``log(b + t)``, ``log(a + b + t)`` for ``t = 0..n`` (Beta-Bernoulli with
    scalar ``a, b``); a ``(3, 0)`` array otherwise (see :func:`_bernoulli_coefficients`)."""
    if kind != 0 or np.ptp(hyper[:d]) != 0 or np.ptp(hyper[d:]) != 0:
        return np.empty((3, 0))
    t = np.arange(n + 1, dtype=np.float64)
    a, b = float(hyper[0]), float(hyper[d])
    return np.log(np.stack([a + t, b + t, a + b + t]))


def _check_dense_size(data, name: str) -> None:
    """Refuse data whose dense float64 copy would exceed ``MAX_DENSE_BYTES`` (before densifying)."""
    n, d = data.n_items, data.n_features
    needed = 8 * n * d
    if needed > MAX_DENSE_BYTES:
        raise ValueError(
            f"{name} is too large for collapsed Gibbs: its dense float64 copy ({n} x {d}) needs "
            f"{needed / 2**30:.1f} GiB, more than the {MAX_DENSE_BYTES / 2**30:.0f} GiB limit"
        )


def _dense(model, data, name: str):
    """``(Features, dense float64 (N, D) array)``, the size checked before anything densifies."""
    data = Features.coerce(data)
    _check_dense_size(data, name)
    data = model.check_data(data)
    _check_dense_size(data, name)
    return data, np.ascontiguousarray(data.X, dtype=np.float64)


_DRAW_EXAMPLE_SETUP = """
>>> from latentzoo.models.mixture import DirichletProcessMixture
>>> sampler = MixtureGibbs(DirichletProcessMixture(), np.eye(3))
>>> rng = np.random.default_rng(0)
"""
"""The start of the Examples of :meth:`MixtureGibbs.draw_params` and :meth:`MixtureGibbs.draw`: a
DPM sampler of three items and its generator."""


class MixtureGibbs:
    """Collapsed Gibbs sampler of a DPM (Neal's algorithm 3) or a finite Bayesian mixture.

    ``init``/``step``/``draw`` in the style of the zoo's other samplers (see the module docstring
    for the updates); ``step(state, rng) -> (state, info)`` with ``info`` a :class:`SplitMergeInfo`
    (split-merge moves on) or a :class:`~latentzoo.inference.mcmc.GibbsInfo`, the sampler contract
    of :func:`~latentzoo.inference.mcmc.run_chains`.

    Parameters
    ----------
    model : DirichletProcessMixture or BayesianMixture
    data : Features or array-like (N, D)
    split_merge : bool or int
        Restricted Gibbs split-merge moves per sweep (Jain & Neal 2004); ``True`` is one.
    intermediate_scans : int
        Restricted Gibbs scans that refine each split-merge launch state (Jain & Neal's ``t``).
    sample_alpha : bool
        Escobar-West updates of the DPM concentration, starting from ``model.alpha``.
    alpha_prior : (float, float)
        Shape and rate of the Gamma prior of ``alpha`` when it is sampled.
    test : Features, optional
        Held-out items: :meth:`draw` then scores them (``"x"``) by the posterior predictive given
        the partition instead of scoring ``data``.
    gibbs_sweep : bool
        ``False`` leaves only the split-merge moves (irreducible on their own: any partition is
        reached by merges then splits), to test their Metropolis-Hastings ratio in isolation.

    Examples
    --------
    >>> from latentzoo.models.mixture import DirichletProcessMixture
    >>> model = DirichletProcessMixture(alpha=1.0)
    >>> X = np.array([[1, 1, 0], [1, 1, 0], [0, 0, 1], [0, 1, 1]])
    >>> sampler = MixtureGibbs(model, X, split_merge=True)
    >>> state = sampler.step(sampler.init(rng := np.random.default_rng(0)), rng)[0]
    >>> int(state.sizes.sum()), state.n_clusters == len(set(state.z.tolist()))
    (4, True)
    """

    def __init__(
        self,
        model,
        data,
        *,
        split_merge=False,
        intermediate_scans: int = 5,
        sample_alpha: bool = False,
        alpha_prior=(1.0, 1.0),
        test=None,
        gibbs_sweep: bool = True,
    ):
        if not isinstance(model, DirichletProcessMixture | BayesianMixture):
            raise ValueError(
                "model must be a DirichletProcessMixture or a BayesianMixture, "
                f"got {type(model).__name__}"
            )
        self.model = model
        self.finite = isinstance(model, BayesianMixture)
        self.n_moves = _as_moves(split_merge)
        check_integer("intermediate_scans", intermediate_scans, low=0)
        self.n_scans = int(intermediate_scans)
        if not isinstance(gibbs_sweep, bool | np.bool_):
            raise ValueError(f"gibbs_sweep must be True or False, got {gibbs_sweep!r}")
        if not gibbs_sweep and not self.n_moves:
            raise ValueError("gibbs_sweep=False needs split_merge moves, or nothing would move")
        self.gibbs_sweep = bool(gibbs_sweep)
        if not isinstance(sample_alpha, bool | np.bool_):
            raise ValueError(f"sample_alpha must be True or False, got {sample_alpha!r}")
        if sample_alpha and self.finite:
            raise ValueError(
                "sample_alpha=True needs a DirichletProcessMixture (the Escobar-West update is for "
                "the DPM concentration), got a BayesianMixture"
            )
        self.sample_alpha = bool(sample_alpha)
        try:
            a0, b0 = (float(v) for v in alpha_prior)
        except (TypeError, ValueError):
            raise ValueError(
                f"alpha_prior must be a pair (shape, rate) of positive numbers, got {alpha_prior!r}"
            ) from None
        check_positive("alpha_prior shape", a0)
        check_positive("alpha_prior rate", b0)
        self.alpha_prior = (a0, b0)
        self.data, self.X = _dense(model, data, "data")
        n, d = self.X.shape
        self.component = model.component
        self.kind = int(self.component.kind_code)
        self.hyper = np.ascontiguousarray(self.component.hyper(d), dtype=np.float64)
        # The row of an empty cluster (zeros; the prior's [0, mu0, chol(psi0)] for NIW).
        self.prior = np.ascontiguousarray(self.component.empty_stats(1, d)[0], dtype=np.float64)
        self.prior_pred = _prior_predictive(self.X, self.prior, self.kind, self.hyper)
        self.tables = _log_tables(self.kind, self.hyper, n, d)
        self.n_labels = int(model.n_components) if self.finite else 0
        self.pairs = default_pairs(self.data)
        self.test = None
        if test is not None:
            self.test, self.test_X = _dense(model, test, "test")
            if self.test.n_features != d:
                raise ValueError(
                    f"test has {self.test.n_features} features, expected {d} like the data"
                )

    # -------------------------------------------------------------------- state
    def init(self, rng: np.random.Generator, z=None) -> MixtureGibbsState:
        """A chain's start: ``z`` given, or a random one (CRP prior draw; uniform labels if finite).

        Examples
        --------
        >>> from latentzoo.models.mixture import BayesianMixture
        >>> sampler = MixtureGibbs(BayesianMixture(3), np.eye(4))
        >>> state = sampler.init(np.random.default_rng(0), z=[0, 0, 2, 2])
        >>> state.sizes.tolist(), state.n_clusters
        ([2, 0, 2], 2)
        """
        seed = splitmix_seeds(rng, 1)
        alpha = float(self.model.alpha)
        n = self.X.shape[0]
        if z is None:
            z, sizes, stats = _start(self.X, self.prior, self.kind, self.hyper, alpha, self.finite,
                                     self.n_labels, seed)  # fmt: skip
        else:
            z = np.asarray(z)
            if z.shape != (n,) or not np.issubdtype(z.dtype, np.integer) or (n and z.min() < 0):
                raise ValueError(
                    f"initial assignments must be {n} non-negative integer labels, got shape "
                    f"{z.shape} and dtype {z.dtype}"
                )
            if self.finite:
                if z.max() >= self.n_labels:
                    raise ValueError(
                        f"initial assignments must be labels in 0..{self.n_labels - 1}, "
                        f"got {int(z.max())}"
                    )
                z = z.astype(np.int64)
                capacity = self.n_labels
            else:
                z = np.unique(z, return_inverse=True)[1].astype(np.int64).reshape(n)
                capacity = max(4, 2 * (int(z.max()) + 1))
            sizes, stats = _build_tables(self.X, z, capacity, self.prior, self.kind, self.hyper)
        return MixtureGibbsState(z, sizes, stats, int(np.count_nonzero(sizes)), alpha, seed)

    def step(self, state: MixtureGibbsState, rng: np.random.Generator) -> tuple:
        """One transition: split-merge moves, a Gibbs sweep, the alpha update (one numba call).

        Returns the new state and its info: a :class:`SplitMergeInfo` (the log joint and the
        fraction of this step's split-merge moves that were accepted) with split-merge moves,
        else a :class:`~latentzoo.inference.mcmc.GibbsInfo`. The moves draw from the chain's
        splitmix64 stream ``state.rng_state`` (seeded from the chain's ``rng`` by :meth:`init`;
        see :func:`~latentzoo.inference.mcmc.run_chains`).

        Examples
        --------
        >>> from latentzoo.models.mixture import DirichletProcessMixture
        >>> sampler = MixtureGibbs(DirichletProcessMixture(), np.eye(4), split_merge=4)
        >>> rng = np.random.default_rng(0)
        >>> state, info = sampler.step(sampler.init(rng), rng)
        >>> info._fields, info.split_merge_accept in (0.0, 0.25, 0.5, 0.75, 1.0)
        (('lp', 'split_merge_accept'), True)
        """
        state, accepted = self._transition(state)
        if not self.n_moves:
            return state, GibbsInfo(self.log_joint(state))
        return state, SplitMergeInfo(self.log_joint(state), accepted / self.n_moves)

    def advance(self, state: MixtureGibbsState, rng: np.random.Generator) -> MixtureGibbsState:
        """The transition of :meth:`step` without its ``info``, for the sweeps whose info
        :func:`~latentzoo.inference.mcmc.run_chains` would discard (tuning, thinning): they skip
        the log joint, which costs as much as a sweep on small data."""
        return self._transition(state)[0]

    def _transition(self, state: MixtureGibbsState) -> tuple[MixtureGibbsState, int]:
        """Split-merge moves, a Gibbs sweep and the alpha update; the number of accepted moves."""
        a0, b0 = self.alpha_prior
        sizes, stats, alpha, accepted = _run(
            self.X, state.z, state.sizes, state.stats, self.prior, self.prior_pred, self.kind,
            self.hyper, self.tables, float(state.alpha), self.finite, self.n_moves, self.n_scans,
            self.gibbs_sweep, self.sample_alpha, a0, b0, 1, state.rng_state,
        )  # fmt: skip
        state = MixtureGibbsState(
            state.z, sizes, stats, int(np.count_nonzero(sizes)), float(alpha), state.rng_state
        )
        return state, accepted

    # -------------------------------------------------------------------- draws
    def clusters(self, state) -> tuple[np.ndarray, np.ndarray]:
        """Canonical labels of the items (restricted-growth form) and the table slot of each
        canonical cluster, in order.

        Examples
        --------
        >>> from latentzoo.models.mixture import BayesianMixture
        >>> sampler = MixtureGibbs(BayesianMixture(3), np.eye(3))
        >>> labels, slots = sampler.clusters(sampler.init(np.random.default_rng(0), z=[2, 0, 2]))
        >>> labels.tolist(), slots.tolist()
        ([0, 1, 0], [2, 0])
        """
        labels = _canonical(state.z)
        slots = np.empty(int(labels.max()) + 1, dtype=np.int64)
        slots[labels] = state.z
        return labels, slots

    @with_example_setup(_DRAW_EXAMPLE_SETUP)
    def draw_params(self, state: MixtureGibbsState, rng: np.random.Generator) -> dict:
        """A posterior draw of the mixing measure given the partition, with canonical ``z``.

        DPM: ``w ~ Dirichlet(n_1, ..., n_K, alpha)`` over the occupied clusters (canonical order)
        and the rest, itself a ``DP(alpha)`` (Ishwaran & James 2001), laid out by stick-breaking
        over atoms drawn from the prior until less than ``REST_TOLERANCE`` of the mass is left
        (the last stick takes it); finite
        mixture: ``w ~ Dirichlet(n_k + alpha/K)`` over the ``K`` labels, the canonical clusters first
        and then the empty labels. Component parameters are
        drawn from each cluster's posterior (``component.sample_posterior``).

        Examples
        --------
        >>> params = sampler.draw_params(sampler.init(rng, z=[0, 0, 1]), rng)
        >>> len(params["w"]) > 2, round(float(params["w"].sum()), 12), params["z"].tolist()
        (True, 1.0, [0, 0, 1])
        """
        labels, slots = self.clusters(state)
        comp = self.component
        if self.finite:
            # Canonical clusters first, then the empty labels: component k of the draw is the
            # cluster of canonical label k, as for the DPM (the posterior is exchangeable in labels).
            empty = np.setdiff1d(np.arange(self.n_labels), slots)
            slots = np.concatenate([slots, empty])
            w = dirichlet_rows(rng, state.sizes[slots] + state.alpha / self.n_labels)
            params = dict(comp.sample_posterior(rng, state.stats[slots]))
        else:
            w = dirichlet_rows(rng, np.append(state.sizes[slots].astype(float), state.alpha))
            params = dict(comp.sample_posterior(rng, state.stats[slots]))
            # The rest of the measure is a DP(alpha) of its own (Ishwaran & James 2001): drawn by
            # stick-breaking until the mass left is below REST_TOLERANCE of the whole.
            rest = _rest_weights(rng, state.alpha, w[-1])
            w = np.concatenate([w[:-1], rest])
            extra = comp.sample_prior(rng, len(rest), self.X.shape[1])
            params = {
                name: np.concatenate([np.asarray(params[name]), np.asarray(extra[name])], axis=0)
                for name in params
            }
        params["w"] = w
        params["z"] = labels
        return params

    def heldout_log_density(self, state: MixtureGibbsState) -> np.ndarray:
        """``log p(x | z, X)`` of each test item: the predictive given the partition.

        DPM: ``log[sum_k n_k/(n + alpha) p(x | D_k) + alpha/(n + alpha) p(x)]`` (eq. (2.19)-(2.20));
        finite: ``log sum_k (n_k + alpha/K)/(n + alpha) p(x | D_k)``.
        """
        n = self.X.shape[0]
        if self.finite:
            rows = state.stats
            weights = state.sizes + state.alpha / self.n_labels
        else:
            occupied = np.flatnonzero(state.sizes)
            rows = np.concatenate([state.stats[occupied], self.prior[None, :]])
            weights = np.append(state.sizes[occupied].astype(float), state.alpha)
        log_pred = self.component.log_predictive(rows, self.test_X)
        return logsumexp(log_pred + np.log(weights)[None, :], axis=1) - math.log(n + state.alpha)

    @with_example_setup(_DRAW_EXAMPLE_SETUP)
    def draw(self, state: MixtureGibbsState, rng: np.random.Generator) -> dict:
        """The kept variables of one draw.

        ``z`` (canonical labels), ``n_clusters``, the model's invariants at the mixing measure
        drawn by :meth:`draw_params` (``loglik``, ``coassign``, ``n_occupied``), ``alpha`` when it
        is sampled, and ``x``: the per-item log-likelihood ``log sum_k w_k f(x_i | theta_k)`` of the
        data under the drawn mixing measure (for ``az.loo``), or with ``test`` the held-out
        predictive of :meth:`heldout_log_density`.

        Examples
        --------
        >>> out = sampler.draw(sampler.init(rng, z=[0, 0, 1]), rng)
        >>> out["n_clusters"], out["x"].shape, sorted(out)
        (2, (3,), ['coassign', 'loglik', 'n_clusters', 'n_occupied', 'x', 'z'])
        """
        params = self.draw_params(state, rng)
        out = {"z": params["z"], "n_clusters": int(params["z"].max()) + 1}
        # The invariants are taken at the drawn mixing measure without z (co-assignment
        # probabilities from the responsibilities), the same function of the parameters as for
        # PyMC's draws: a pair that is always together then still varies a little on both sides,
        # where 0/1 indicators would give a zero Monte Carlo error on one side only. Their
        # posterior means are the same; the partition's own statistics come from z.
        measure = {name: value for name, value in params.items() if name != "z"}
        per_item, invariants = self.model.checked_summaries(measure, self.data, self.pairs)
        out.update(invariants)
        if self.sample_alpha:
            out["alpha"] = float(state.alpha)
        if self.test is None:
            out["x"] = per_item
        else:
            out["x"] = self.heldout_log_density(state)
        return out

    def log_joint(self, state: MixtureGibbsState) -> float:
        """Collapsed ``log p(z | alpha) + sum_k log p(D_k)`` (plus ``log Gamma(alpha | a, b)`` when
        alpha is sampled): the sampler's target, as ``model.collapsed_log_joint`` for fixed alpha.

        Examples
        --------
        >>> from latentzoo.models.mixture import DirichletProcessMixture
        >>> model, X = DirichletProcessMixture(alpha=0.5), np.eye(3)
        >>> sampler = MixtureGibbs(model, X)
        >>> state = sampler.init(np.random.default_rng(0), z=[0, 0, 1])
        >>> expected = model.collapsed_log_joint(np.array([[0, 0, 1]]), X)[0]
        >>> bool(np.isclose(sampler.log_joint(state), expected))
        True
        """
        sizes = state.sizes[state.sizes > 0].astype(float)
        n, alpha = float(sizes.sum()), float(state.alpha)
        if self.finite:
            offset = alpha / self.n_labels
            log_prior = float(np.sum(gammaln(sizes + offset) - gammaln(offset)))
        else:
            log_prior = len(sizes) * math.log(alpha) + float(np.sum(gammaln(sizes)))
        log_prior += math.lgamma(alpha) - math.lgamma(n + alpha)
        total = log_prior + _sum_log_marginals(state.sizes, state.stats, self.kind, self.hyper)
        if self.sample_alpha:
            a0, b0 = self.alpha_prior
            total += a0 * math.log(b0) - math.lgamma(a0) + (a0 - 1) * math.log(alpha) - b0 * alpha
        return float(total)

    def exact_draws(self, n_chains: int, sweeps: int, random_state=None, return_alpha=False):
        """Final canonical labels ``(n_chains, N)`` of independent chains of ``sweeps`` transitions.

        One numba call runs all chains, each from its own random start (CRP prior draw, or uniform
        labels for the finite mixture) with its own seed; independent draws, so a chi-square test
        against the enumerated partition posterior is valid. ``return_alpha`` also returns each
        chain's final ``alpha`` ``(n_chains,)``.

        Examples
        --------
        >>> from latentzoo.models.mixture import DirichletProcessMixture
        >>> MixtureGibbs(DirichletProcessMixture(), np.eye(3)).exact_draws(5, 3, 0).shape
        (5, 3)
        """
        check_integer("n_chains", n_chains)
        check_integer("sweeps", sweeps, low=0)
        rng = as_rng(random_state)
        seeds = splitmix_seeds(rng, n_chains)
        a0, b0 = self.alpha_prior
        labels, alphas = _many_chains(
            self.X, self.prior, self.prior_pred, self.kind, self.hyper, self.tables,
            float(self.model.alpha), self.finite, self.n_labels, self.n_moves, self.n_scans, self.gibbs_sweep,
            self.sample_alpha, a0, b0, seeds, sweeps,
        )  # fmt: skip
        return (labels, alphas) if return_alpha else labels


def _prepare_gibbs(
    model, data, *, chains, draws, test=None, split_merge=False, sample_alpha=False,
    alpha_prior=(1.0, 1.0), intermediate_scans: int = 5,
):  # fmt: skip
    """The family side of :func:`gibbs`: checks, sampler, draw, coordinates."""
    sampler = MixtureGibbs(
        model,
        data,
        split_merge=split_merge,
        intermediate_scans=intermediate_scans,
        sample_alpha=sample_alpha,
        alpha_prior=alpha_prior,
        test=test,
    )
    data = sampler.data
    scored = sampler.test if test is not None else data

    def draw(state, rng):
        out = sampler.draw(state, rng)
        del out["n_clusters"]  # the same as the invariant n_occupied
        return out

    coords = model.coords(data)
    dims = {name: model.dims[name] for name in ("z", "coassign")}
    if test is not None:
        coords["test_item"] = list(scored.item_names)
        dims["x"] = ["test_item"]
    else:
        dims["x"] = ["item"]
    desc = "mixture Gibbs" if sampler.finite else "DPM Gibbs"
    # With test, x is each draw's log p(x_i | z, X): the held-out rule of the model itself
    # (partition_predictive_log_density), so heldout_score can average it without the training data.
    return GibbsSetup(
        sampler, draw, coords, dims, scored, desc=desc, log_likelihood_name="x",
        label_axes=label_axes(model), heldout_rule_scored=True,
    )  # fmt: skip


def label_axes(model) -> tuple[LabelAxis, ...]:
    """The labels that switch between chains of a Gibbs or PyMC mixture posterior.

    A finite mixture's clusters are exchangeable: they are matched across chains on their
    parameters ``theta`` (PyMC) or on how often each item takes each label ``z`` (Gibbs), and
    ``w`` and ``z`` follow. A Dirichlet process mixture has none to align: its stick-breaking
    order carries prior meaning (``v``, ``w``) and its Gibbs labels are arbitrary table names;
    summarise it through the invariants (``coassign``, ``n_occupied``, ``loglik``).

    Examples
    --------
    >>> label_axes(BayesianMixture(3))[0].values, label_axes(DirichletProcessMixture())
    (('z',), ())
    """
    if not isinstance(model, BayesianMixture):
        return ()
    size = int(model.n_components)
    return (LabelAxis("cluster", match=("theta", "z"), values=("z",), size=size),)


gibbs = gibbs_entry(
    _prepare_gibbs,
    """Collapsed Gibbs sampling of a DPM or a finite Bayesian mixture, as ``InferenceData``.

    Parameters
    ----------
    model : DirichletProcessMixture or BayesianMixture
    data : Features or array-like (N, D)
    chains, draws, tune, thin, random_state, progressbar
        As for :func:`latentzoo.inference.mcmc.run_chains`.
    test : Features, optional
        Held-out items scored in the ``log_likelihood`` group instead of ``data``.
    split_merge : bool or int
        Jain-Neal split-merge moves per sweep.
    sample_alpha : bool
        Escobar-West updates of the DPM concentration under ``Gamma(*alpha_prior)``.
    initial_assignments : sequence of (N,) label arrays, optional
        One start per chain (overrides ``chains``).
    alpha_prior : (float, float)
    intermediate_scans : int

    Returns
    -------
    arviz.InferenceData
        ``posterior``: ``z`` (item; canonical labels), the invariants ``loglik``, ``coassign``
        (pair) and ``n_occupied`` of ``model.invariants`` (hard co-assignments of the default
        pairs), and ``alpha`` when sampled. ``sample_stats``: ``lp``, the collapsed log joint.
        ``log_likelihood``: ``x`` (item), the log-likelihood of each item under a posterior draw
        of the mixing measure (see :meth:`MixtureGibbs.draw_params`), or with ``test``, ``x``
        (test_item), the held-out predictive given the partition (its average over draws estimates
        ``p(x_test | X)``). ``observed_data``: the scored items.

    Examples
    --------
    >>> from latentzoo.models.mixture import DirichletProcessMixture
    >>> X = np.array([[1, 1, 0], [1, 1, 0], [0, 0, 1], [0, 1, 1]])
    >>> idata = gibbs(DirichletProcessMixture(), X, chains=2, draws=10, tune=5, random_state=0,
    ...               progressbar=False, split_merge=True)
    >>> idata.posterior["z"].shape, idata.log_likelihood["x"].shape
    ((2, 10, 4), (2, 10, 4))
    """,
)


# ------------------------------------------------------------------------------ the families
def validation_recipe():
    """How :func:`latentzoo.validate` checks the DPM's Gibbs sampler (a ``ValidationRecipe``)."""
    from latentzoo.inference.recipes import dpm

    return dpm(MixtureGibbs)


def finite_validation_recipe():
    """How :func:`latentzoo.validate` checks the finite mixture's Gibbs sampler."""
    from latentzoo.inference.recipes import finite_mixture

    return finite_mixture(MixtureGibbs)


_GIBBS = Method(
    gibbs,
    (
        *GIBBS_OPTIONS,
        GIBBS_TEST,
        flag("split_merge", False, "add Jain-Neal split-merge moves (DPM only)"),
        flag("sample_alpha", False, "sample the concentration alpha (DPM only)"),
        anything("alpha_prior", (1.0, 1.0), "Gamma(shape, rate) prior of alpha"),
        integer("intermediate_scans", 5, "restricted Gibbs scans of a split-merge proposal", 0),
    ),
)
_PRIOR_SCALE = real(
    "prior_scale",
    None,
    "empirical Beta-Bernoulli prior from the data's feature means (0 or None: the default prior)",
    low=0,
    none=True,
)


def _family(name, model, recipe, description, why_any_k) -> Family:
    """A mixture family: the DPM or the finite mixture (same sampler, container and prior)."""
    return Family(
        name=name,
        model=model,
        methods={"gibbs": _GIBBS},
        recipe=recipe,
        sizes=("n_components",),
        dataset="digits",
        notebook="notebooks/mixtures.ipynb",
        description=f"{description} of conjugate components (Heller 2007, ch. 2)",
        options=(_PRIOR_SCALE,),
        skipped_checks={"data:k_too_large": why_any_k},
    )


FAMILIES = (
    _family(
        "dpm",
        DirichletProcessMixture,
        validation_recipe,
        "Dirichlet process mixture",
        "n_components only truncates the PyMC reference's stick-breaking; the collapsed DP"
        " sampler is unbounded, so no size can exceed the data",
    ),
    _family(
        "mixture",
        BayesianMixture,
        finite_validation_recipe,
        "finite Bayesian mixture",
        "a finite Bayesian mixture may have more components than items: the empty components"
        " are part of the model (their weights follow the Dirichlet)",
    ),
)
"""The DPM's and the finite mixture's families (listed in :mod:`latentzoo.zoo`)."""
