"""The yardstick of the EM benchmark: the obvious fused numba EM kernel of the aspect model.

What a numba user writes first for one EM pass of the aspect model (PLSA), with nothing tuned:
one loop over the non-zeros of the CSR counts that computes ``s_ij = sum_k theta[i,k] phi[k,j]``,
adds ``n_ij log s_ij`` to the log-likelihood and accumulates the expected counts of ``theta``
and ``phi`` (``r = n / s`` times the other table), ``phi`` held transposed (M x K) so that each
row is contiguous, ``fastmath=True``. ``bench_aspect.py`` (section 1) times the library's
``em_pass`` and ``latentzoo.fit`` against it, kernel against kernel and EM iteration against EM
iteration (:func:`yardstick_fit`: the same kernel inside a plain numpy EM loop that normalises the
expected counts and tracks the same MAP free energy as the library). :func:`loop_ceilings` times
the loops such a pass is made of alone, on rows resident in L1, for the section's diagnosis.

Run it alone for a quick check (``python benchmarks/em_yardstick.py``): it prints the seconds per
pass of the yardstick and of ``em_pass`` on Reuters stacked 16 times.
"""

from __future__ import annotations

import time

import numba as nb
import numpy as np


@nb.njit(fastmath=True)
def yardstick_pass(indptr, indices, counts, theta, phi_t, n_theta, n_phi):
    """One fused E/M pass: fills ``n_theta`` (N x K) and ``n_phi`` (M x K, zeroed here) with the
    expected counts; returns ``sum n log s`` (the log-likelihood at ``beta = 1``).

    The tables may be float64 or float32 (then the sums are float32 too, as a user would write
    it); the log-likelihood is accumulated in float64.

    Examples
    --------
    >>> import scipy.sparse as sp
    >>> csr = sp.csr_matrix(np.array([[2.0, 0.0], [1.0, 3.0]]))
    >>> theta = np.full((2, 2), 0.5); phi_t = np.full((2, 2), 0.5)
    >>> n_theta, n_phi = np.empty((2, 2)), np.empty((2, 2))
    >>> ll = yardstick_pass(csr.indptr, csr.indices, csr.data, theta, phi_t, n_theta, n_phi)
    >>> float(n_theta.sum()), round(ll, 4)
    (6.0, -4.1589)
    """
    n_topics = theta.shape[1]
    n_phi[:, :] = 0
    loglik = 0.0
    for i in range(indptr.shape[0] - 1):
        n_theta[i, :] = 0
        for p in range(indptr[i], indptr[i + 1]):
            j = indices[p]
            s = theta[i, 0] * 0
            for k in range(n_topics):
                s += theta[i, k] * phi_t[j, k]
            loglik += counts[p] * np.log(np.float64(s))
            r = counts[p] / s
            for k in range(n_topics):
                n_theta[i, k] += r * theta[i, k] * phi_t[j, k]
                n_phi[j, k] += r * theta[i, k] * phi_t[j, k]
    return loglik


def yardstick_fit(csr, theta, phi_t, iterations, alpha=1.0, eta=1.0, dtype=np.float64):
    """``iterations`` MAP EM iterations of the aspect model around :func:`yardstick_pass`.

    The plain loop a user writes around the kernel: the E/M pass, the free energy the library
    tracks (``-log-likelihood - log prior``, the prior's ``(alpha - 1) sum log theta + (eta - 1)
    sum log phi``), and the M-step ``(counts + pseudo) / row sum`` in numpy. Returns
    ``(theta, phi_t, free energies)``.

    Examples
    --------
    >>> import scipy.sparse as sp
    >>> csr = sp.csr_matrix(np.array([[2.0, 0.0], [1.0, 3.0]]))
    >>> rng = np.random.default_rng(0)
    >>> theta, phi_t = rng.dirichlet(np.ones(2), 2), rng.dirichlet(np.ones(2), 2).T.copy()
    >>> theta, phi_t, free = yardstick_fit(csr, theta, phi_t, 5)
    >>> bool(np.all(np.diff(free) <= 1e-12))
    True
    """
    counts = csr.data.astype(dtype)
    theta, phi_t = theta.astype(dtype), phi_t.astype(dtype)
    n_theta, n_phi = np.empty_like(theta), np.empty_like(phi_t)

    def fused_pass(theta, phi_t):
        loglik = yardstick_pass(csr.indptr, csr.indices, counts, theta, phi_t, n_theta, n_phi)
        return n_theta, n_phi, loglik

    return map_em_loop(fused_pass, theta, phi_t, iterations, alpha, eta)


def map_em_loop(em_pass, theta, phi_t, iterations, alpha, eta):
    """``iterations`` MAP EM iterations of the aspect model around ``em_pass``.

    ``em_pass(theta, phi_t) -> (n_theta, n_phi, loglik)`` gives the expected counts (N x K and
    M x K) and the log-likelihood; the loop records the free energy ``-loglik - log prior`` and
    takes the M-step ``(counts + pseudo) / row sum`` in numpy. Returns ``(theta, phi_t, free
    energies)``.
    """
    free = []
    for _ in range(iterations):
        n_theta, n_phi, loglik = em_pass(theta, phi_t)
        prior = (alpha - 1.0) * np.log(theta).sum() + (eta - 1.0) * np.log(phi_t).sum()
        free.append(-loglik - prior)
        theta = n_theta + (alpha - 1.0)
        theta /= theta.sum(axis=1, keepdims=True)
        phi_t = n_phi + (eta - 1.0)
        phi_t /= phi_t.sum(axis=0, keepdims=True)
    return theta, phi_t, np.array(free)


@nb.njit(fastmath=False)
def _latency_chain(steps, x):
    for _ in range(steps):
        x = x * 1.0000000001 + 1e-12
    return x


@nb.njit(fastmath=True)
def _dots(a, table, rows):
    # The kernel's ``s`` loop: sum_k a[k] table[j, k] for the rows j listed in ``rows``.
    total = 0.0
    for q in range(rows.shape[0]):
        j = rows[q]
        s = 0.0
        for k in range(a.shape[0]):
            s += a[k] * table[j, k]
        total += s
    return total


@nb.njit(fastmath=True)
def _axpys(a, table, rows, r):
    # The kernel's M-step loops: table[j, k] += r a[k] (a read-modify-write of a row).
    for q in range(rows.shape[0]):
        j = rows[q]
        for k in range(a.shape[0]):
            table[j, k] += r * a[k]


def _best_thread_time(fn, *args, repeats=5):
    fn(*args)
    best = np.inf
    for _ in range(repeats):
        start = time.thread_time()
        fn(*args)
        best = min(best, time.thread_time() - start)
    return best


def loop_ceilings(n_topics, calls=2_000_000, resident_rows=16):
    """The fused pass's ceiling on this CPU, from its own loops on rows resident in L1.

    The pass does, per non-zero, one dot product (``s``) and two row updates (``acc[k] += r
    t_phi[j, k]`` and ``acc_phi[j, k] += r t_theta[i, k]``) of length K. Timed alone on
    ``resident_rows`` rows that stay in L1 (no cache misses, no division, no logarithm), these
    loops give an upper bound for any kernel built from them: ``1 / (1 / dot + 2 / update)``
    updates per second. Returns ``{"GHz", "dot", "update", "ceiling"}`` (G per second; ``GHz``
    from a chain of dependent multiply-adds, taken as 4 cycles each as on AMD Zen 4 / Intel
    since Skylake).

    Examples
    --------
    >>> rates = loop_ceilings(8, calls=1000)
    >>> sorted(rates)
    ['GHz', 'ceiling', 'dot', 'update']
    """
    rng = np.random.default_rng(0)
    a = rng.random(n_topics)
    table = rng.random((resident_rows, n_topics))
    rows = rng.integers(0, resident_rows, calls).astype(np.int32)
    steps = 10_000_000
    seconds = _best_thread_time(_latency_chain, steps, 1.0, repeats=3)
    dot = n_topics * calls / _best_thread_time(_dots, a, table, rows) / 1e9
    update = n_topics * calls / _best_thread_time(_axpys, a, table, rows, 1e-9) / 1e9
    return {
        "GHz": 4 * steps / seconds / 1e9,
        "dot": dot,
        "update": update,
        "ceiling": 1.0 / (1.0 / dot + 2.0 / update),
    }


if __name__ == "__main__":
    import scipy.sparse as sp

    from latentzoo.data import CoOccurrence, load
    from latentzoo.inference.aspect import em_pass

    data = CoOccurrence(sp.vstack([load("reuters").counts] * 16, format="csr"))
    csr = data.counts
    counts = csr.data.astype(np.float64)
    for n_topics in (20, 64):
        rng = np.random.default_rng(n_topics)
        theta = rng.dirichlet(np.ones(n_topics), size=data.n_rows)
        phi_t = np.ascontiguousarray(rng.dirichlet(np.ones(data.n_cols), size=n_topics).T)
        n_theta, n_phi = np.empty_like(theta), np.empty_like(phi_t)
        best = {"yardstick": np.inf, "em_pass": np.inf}
        for _ in range(6):
            start = time.perf_counter()
            yardstick_pass(csr.indptr, csr.indices, counts, theta, phi_t, n_theta, n_phi)
            best["yardstick"] = min(best["yardstick"], time.perf_counter() - start)
            start = time.perf_counter()
            em_pass(data, theta, phi_t, counts=counts)
            best["em_pass"] = min(best["em_pass"], time.perf_counter() - start)
        rates = {name: csr.nnz * n_topics / t / 1e9 for name, t in best.items()}
        print(f"K={n_topics}: " + ", ".join(f"{n} {r:.2f} G/s" for n, r in rates.items()))
        print(f"      loop ceilings (L1-resident rows): {loop_ceilings(n_topics)}")
