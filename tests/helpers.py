"""Helpers that several test files share: a fast sampler as ``sbc`` calls it, the layout every
Gibbs ``InferenceData`` of co-occurrence data has, and loading in a fresh interpreter without
optional sources, the small models many tests run."""

import math
import shutil
import subprocess
import sys

import numpy as np
import pytest

from latentzoo.models import (
    AspectModel,
    BayesianMixture,
    ClusterAbstractionModel,
    DirichletProcessMixture,
    OneSidedClustering,
    ProductSpaceMixture,
    TwoSidedClustering,
)

SMALL_MODELS = {
    "aspect": AspectModel(2),
    "one_sided": OneSidedClustering(2),
    "two_sided": TwoSidedClustering(2, 2),
    "product_space": ProductSpaceMixture(2, 2),
    "dpm": DirichletProcessMixture(),
    "finite_mixture": BayesianMixture(2),
    "cluster_abstraction": ClusterAbstractionModel(1),
}
"""The smallest model of each family the stability, validation and result tests run (two
clusters a side; the DPM and the finite mixture with their default components; the HACM on a
tree of depth 1, a root and two leaves)."""

EM_FAMILIES = ("aspect", "one_sided", "two_sided", "product_space")
"""The co-occurrence families fitted by annealed EM (keys of :data:`SMALL_MODELS`)."""


def sbc_gibbs(gibbs, model, tune: int = 50, thin: int = 5):
    """``sampler(data, generator, n_draws)`` for :func:`~latentzoo.inference.calibration.sbc`: one
    chain of ``gibbs(model, data, ...)`` per simulated data set."""

    def sampler(data, generator, n_draws):
        return gibbs(model, data, chains=1, draws=n_draws, tune=tune, thin=thin,
                     random_state=generator, progressbar=False)  # fmt: skip

    return sampler


def toy_gibbs(gibbs, model):
    """``gibbs(model, ...)`` on the toy corpus: 2 chains of 40 draws after 10 tuning sweeps, seed 3."""
    from latentzoo.data import load

    return gibbs(model, load("toy"), chains=2, draws=40, tune=10, random_state=3,
                 progressbar=False)  # fmt: skip


def assert_cooccurrence_idata(idata, data, simplices: dict, dims=None) -> None:
    """The coordinates, groups and attributes of a Gibbs fit of ``data`` (a CoOccurrence); every
    ``simplices`` entry ``name: dim`` is a posterior variable whose draws sum to one over ``dim``;
    every ``dims`` entry ``name: names`` a posterior variable with dimensions
    ``("chain", "draw", *names)``."""
    post = idata.posterior
    for name, names in (dims or {}).items():
        assert post[name].dims == ("chain", "draw", *names), name
    assert list(post["doc"].values) == list(data.row_labels)
    assert list(post["word"].values) == list(data.col_labels)
    assert idata.log_likelihood["counts"].dims == ("chain", "draw", "doc")
    assert idata.sample_stats["lp"].dims == ("chain", "draw")
    assert np.array_equal(idata.observed_data["counts"].values, data.toarray())
    assert post.attrs["method"] == "gibbs"
    for name, dim in simplices.items():
        np.testing.assert_allclose(post[name].sum(dim), 1.0, rtol=1e-12)


def load_without(module: str, expression: str, tmp_path, then: str = "") -> str:
    """What ``print(expression)`` prints (``load`` imported from ``latentzoo.data``) in a fresh
    interpreter where ``module`` cannot be imported, no program is on PATH (no Rscript, no dpkg)
    and HOME is empty; ``then`` is code run after it. Fails the test if the interpreter fails."""
    code = (
        f"import sys; sys.modules[{module!r}] = None\n"
        "from latentzoo.data import load\n"
        f"print({expression})\n{then}"
    )
    done = subprocess.run(
        [sys.executable, "-c", code],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        env={"PATH": str(tmp_path), "HOME": str(tmp_path)},
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def random_hacm_params(rng, model, n_rows: int, n_cols: int) -> dict:
    """Random parameters of a cluster-abstraction model for ``n_rows x n_cols`` data: ``tau`` of
    the model's form (positive on every path, zero below it), ``rho`` and ``q`` from flat
    Dirichlets."""
    tree = model.tree
    valid = tree.paths >= 0
    if model.tau == "constant":
        tau = model.default_tau()
    else:
        lead = (n_rows,) if model.tau == "object" else ()
        raw = np.where(valid, rng.random((*lead, *valid.shape)) + 0.05, 0.0)
        tau = raw / raw.sum(axis=-1, keepdims=True)
    return {
        "rho": rng.dirichlet(np.ones(tree.n_leaves)),
        "q": rng.dirichlet(np.ones(n_cols), size=tree.n_nodes),
        "tau": tau,
    }


def random_counts(rng, n_rows, n_cols, zero_rows=(), zero_cols=(), rate=1.5) -> np.ndarray:
    """Poisson(``rate``) counts with the given rows and columns emptied and ``[0, 0]`` raised by
    one, so the data are never all zero."""
    counts = rng.poisson(rate, size=(n_rows, n_cols))
    counts[list(zero_rows)] = 0
    counts[:, list(zero_cols)] = 0
    counts[0, 0] += 1
    return counts


def other_permutation(rng, k: int) -> np.ndarray:
    """A random permutation of ``range(k)`` that is not the identity (``k >= 2``)."""
    perm = rng.permutation(k)
    while np.array_equal(perm, np.arange(k)):
        perm = rng.permutation(k)
    return perm


REFERENCE_COUNTS = np.array([[3, 0, 1, 0, 2], [0, 0, 0, 0, 0], [1, 4, 0, 2, 0], [0, 1, 1, 1, 1]])
"""The small counts (an empty row included) on which the PyMC declarations are checked."""


def pymc_reference(model, variables=None):
    """The PyMC declaration of ``model`` on :data:`REFERENCE_COUNTS` (columns ``a``-``e``),
    evaluated on the constrained (simplex) values: value transforms dropped, no Jacobian.

    Returns ``(data, pm_model, fn, tempered, potential)``: ``fn`` gives the total log density, or
    with ``variables`` (names, and ``"potentials"`` for all potentials) each one's log density;
    ``tempered`` is the declaration at temperature 2 and ``potential`` its potentials' log density.
    """
    from pymc.model.transform.conditioning import remove_value_transforms

    from latentzoo.data import CoOccurrence

    data = CoOccurrence(REFERENCE_COUNTS, col_labels=list("abcde"))
    pm_model = model.pymc_model(data)
    plain = remove_value_transforms(pm_model)
    if variables is None:
        terms = plain.logp(jacobian=False)
    else:
        chosen = [plain[name] for name in variables if name != "potentials"]
        chosen += plain.potentials if "potentials" in variables else []
        terms = plain.logp(vars=chosen, jacobian=False, sum=False)
    fn = plain.compile_fn(terms, inputs=plain.value_vars, on_unused_input="ignore")
    tempered = remove_value_transforms(model.pymc_model(data, temperature=2.0))
    potential = tempered.compile_fn(
        tempered.logp(vars=tempered.potentials, jacobian=False),
        inputs=tempered.value_vars,
        on_unused_input="ignore",
    )
    return data, pm_model, fn, tempered, potential


BAD_SIZES = (0, -1, -2, 2.0, 2.5, "2", True, None)
"""Values an integer size argument (number of clusters) must reject."""

BAD_CONCENTRATIONS = (0.0, -0.5, -1.0, float("nan"), float("inf"))
"""Values a Dirichlet concentration (``alpha``, ``eta``) must reject."""


def bad_constructor_arguments(size: str = "n_components") -> list[tuple[dict, str]]:
    """``(kwargs, match)`` cases a co-occurrence model's constructor rejects with a ``ValueError``
    naming the argument: every :data:`BAD_SIZES` value of ``size`` and every
    :data:`BAD_CONCENTRATIONS` value of ``alpha`` and ``eta`` (with ``size`` 2)."""
    cases = [({size: value}, size) for value in BAD_SIZES]
    for prior in ("alpha", "eta"):
        cases += [({size: 2, prior: value}, prior) for value in BAD_CONCENTRATIONS]
    return cases


def exact_draws_check(log_probs, sampler, n_labels: int, seed: int = 0):
    """``(check, draws)``: 20,000 exact draws of ``sampler`` (30 sweeps apart, from ``seed``) and
    the exact test of their state frequencies against the enumerated ``log_probs`` at level 1e-5
    (a few such tests per family keep false alarms below 1e-4 per run of the suite)."""
    from latentzoo.inference.compare import exact_test

    draws = sampler.exact_draws(20_000, 30, seed)
    return exact_test(log_probs, draws, n_labels=n_labels, alpha=1e-5), draws


def assert_gibbs_scores_held_out_counts(gibbs, model, names, expected) -> None:
    """``gibbs(model, train, test=test)`` on the toy corpus records, per draw, the held-out log
    density ``expected(params, test, train)`` plus the multinomial coefficient of ``test`` (the
    draw's parameters ``names``), and refuses a ``test`` of another shape."""
    from latentzoo.data import CoOccurrence, load

    train, test = load("toy").split(0.3, random_state=0)
    idata = gibbs(model, train, chains=1, draws=10, tune=5, random_state=0, progressbar=False,
                  test=test)  # fmt: skip
    params = {n: idata.posterior[n].values[0, 4] for n in names}
    want = expected(params, test, train) + model.log_multinomial_coefficient(test)
    np.testing.assert_allclose(idata.log_likelihood["counts"].values[0, 4], want, rtol=1e-12)
    with pytest.raises(ValueError, match="shape"):
        gibbs(model, train, test=CoOccurrence([[1, 2]]), progressbar=False)


def assert_gibbs_can_drop_the_parameters(gibbs, model, names, invariants) -> None:
    """``gibbs(..., keep_params=False)`` keeps the ``invariants`` and none of the ``names``."""
    from latentzoo.data import load

    idata = gibbs(model, load("toy"), chains=1, draws=5, tune=0, random_state=0,
                  progressbar=False, keep_params=False)  # fmt: skip
    kept = set(idata.posterior.data_vars)
    assert not set(names) & kept
    assert set(invariants) <= kept


def peak_bytes(call, warm_up=None) -> int:
    """Peak memory traced by ``tracemalloc`` while ``call()`` runs, in bytes; ``warm_up()``
    (default: ``call``) runs first, untraced, so numba compilation and caches do not count."""
    import tracemalloc

    (warm_up or call)()
    tracemalloc.start()
    try:
        call()
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def increases(values, rel=1e-12) -> np.ndarray:
    """Indices where a sequence that should not increase (a free energy at a fixed temperature)
    goes up by more than rounding, ``rel`` relative; the values must be finite."""
    values = np.asarray(values)
    assert np.all(np.isfinite(values)), values
    return np.flatnonzero(np.diff(values) > rel * np.abs(values[1:]))


def assert_free_energy_falls(result, n_steps: int) -> None:
    """The annealing trace of ``result`` has ``n_steps`` free energies, none above its predecessor
    (beyond rounding), the last below the first."""
    fe = result.trace["free_energy"].to_numpy()
    assert len(fe) == n_steps
    assert increases(fe).size == 0, np.diff(fe).max()
    assert fe[-1] < fe[0]


def assert_invariants_label_free(model, seed, k: int, relabel, rtol, atol=0.0, **sizes):
    """``(data, truth, invariants)``: data and truth that ``model.simulate(rng, **sizes)`` draws
    from ``seed``, after checking that the invariants carry the declared names and agree, within
    ``rtol`` and ``atol``, with those of ``relabel(truth, perm)`` (the truth with its ``k`` labels
    permuted by a random non-identity ``perm``)."""
    rng = np.random.default_rng(seed)
    data, truth = model.simulate(rng, **sizes)
    permuted = relabel(truth, other_permutation(rng, k))
    invariants, relabelled = model.invariants(truth, data), model.invariants(permuted, data)
    assert set(invariants) == set(model.invariant_names)
    for name in model.invariant_names:
        np.testing.assert_allclose(invariants[name], relabelled[name], rtol=rtol, atol=atol)
    return data, truth, invariants


def assert_evidence_is_the_prior_average(log_joints, likelihoods, n: int = 200_000) -> None:
    """The evidence, ``exp(logsumexp(log_joints))`` over every assignment, equals the mean of
    ``likelihoods(rng, n)`` (the likelihood at ``n`` draws from the prior, generator seeded 2024)
    within 5 Monte Carlo standard errors."""
    from scipy.special import logsumexp

    evidence = math.exp(logsumexp(log_joints))
    values = likelihoods(np.random.default_rng(2024), n)
    mcse = values.std(ddof=1) / math.sqrt(n)
    assert abs(values.mean() - evidence) < 5 * mcse, (values.mean(), evidence, mcse)


def assert_simulate_is_reproducible(model, seed, names, differs: str, **sizes):
    """``(data, truth)`` that ``model.simulate(seed, **sizes)`` draws, after checking that a
    second call draws the same data and the same truth ``names``, and ``seed + 100`` another
    truth ``differs``."""
    data, truth = model.simulate(seed, **sizes)
    again, truth_again = model.simulate(seed, **sizes)
    other = model.simulate(seed + 100, **sizes)[1]
    assert data == again
    assert all(np.array_equal(truth[name], truth_again[name]) for name in names)
    assert not np.array_equal(truth[differs], other[differs])
    return data, truth


def assert_log_likelihood_is(model, seed, random_params, brute_force, atol) -> None:
    """On random 7 x 9 counts with row 3 empty and ``params = random_params(rng)`` (generator
    ``seed``), ``model.log_likelihood`` gives one value a row: ``brute_force(counts, params)`` to
    1e-12 relative and ``atol`` absolute, zero for the empty row."""
    from latentzoo.data import CoOccurrence

    rng = np.random.default_rng(seed)
    counts = random_counts(rng, 7, 9, zero_rows=[3])
    params = random_params(rng)
    got = model.log_likelihood(params, CoOccurrence(counts))
    assert got.shape == (7,)
    np.testing.assert_allclose(got, brute_force(counts, params), rtol=1e-12, atol=atol)
    assert got[3] == 0.0  # a row without observations


def em_step_beside_dense(em, model, names, problem, dense_em, beta):
    """``(new, stats, values, reference)``: one step of ``em(model, data)`` at temperature
    ``beta`` from ``problem = (data, counts, *values)`` (the parameter values, named ``names``),
    and ``reference = dense_em(counts, *values, beta)`` at the same values."""
    data, counts, *values = problem
    new, stats = em(model, data).step(dict(zip(names, values, strict=True)), beta)
    return new, stats, values, dense_em(counts, *values, beta)


def r_has_packages(*packages: str) -> bool:
    """Whether ``Rscript`` is installed with every R package named (a rebuild test's skip)."""
    if shutil.which("Rscript") is None:
        return False
    code = "quit(status = !all(sapply(commandArgs(TRUE), requireNamespace, quietly = TRUE)))"
    done = subprocess.run(["Rscript", "-e", code, *packages], capture_output=True, check=False)
    return done.returncode == 0
