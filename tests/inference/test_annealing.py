"""Tests of the annealed-EM driver: simplex projection, Lyapunov property, over-relaxation,
schedule validation and Hofmann's tempered schedule."""

import itertools
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from latentzoo.data import CoOccurrence, load
from latentzoo.inference.annealing import (
    SCHEDULE_DEFAULTS,
    EMStats,
    check_schedule,
    perplexity,
    project_simplex,
    run_schedule,
    tempered_schedule,
)
from latentzoo.inference.aspect import AspectEM, annealed_em
from latentzoo.models import AspectModel

SEEDS = [0, 1, 2]
TRACE_COLUMNS = ["beta", "iteration", "log_likelihood", "free_energy", "seconds"]


def simulated(seed, k=3, n_docs=20, n_words=30, doc_length=50, alpha=1.1, eta=1.01):
    model = AspectModel(k, alpha=alpha, eta=eta)
    data, _ = model.simulate(seed, n_docs=n_docs, n_words=n_words, doc_length=doc_length)
    return model, data


def increases(free_energy, rel=1e-9):
    """Steps at which the free energy rose by more than ``rel`` relative (rounding allowance)."""
    fe = np.asarray(free_energy)
    return np.flatnonzero(np.diff(fe) > rel * np.abs(fe[1:]))


# ----------------------------------------------------------------------------- projection
def brute_force_projection(x):
    """Exact Euclidean projection onto the simplex by trying every support set."""
    best, best_dist = None, np.inf
    n = len(x)
    for size in range(1, n + 1):
        for support in itertools.combinations(range(n), size):
            idx = list(support)
            y = np.zeros(n)
            y[idx] = x[idx] - (x[idx].sum() - 1.0) / size
            if np.all(y >= -1e-12):
                dist = np.sum((x - y) ** 2)
                if dist < best_dist:
                    best, best_dist = y, dist
    return best


rows_strategy = hnp.arrays(
    np.float64,
    st.tuples(st.integers(1, 4), st.integers(1, 6)),
    elements=st.floats(-5, 5, allow_nan=False, allow_infinity=False),
)


@settings(max_examples=150, deadline=None)
@given(rows_strategy)
def test_project_simplex_satisfies_kkt_and_matches_brute_force(x):
    y = project_simplex(x)
    assert y.shape == x.shape
    assert np.all(y >= 0)
    np.testing.assert_allclose(y.sum(axis=1), 1.0, atol=1e-12)
    for row_x, row_y in zip(x, y, strict=True):
        # KKT: y = max(x - tau, 0) for one tau; x_i <= tau wherever y_i = 0
        positive = row_y > 0
        tau = (row_x - row_y)[positive]
        np.testing.assert_allclose(tau, tau[0], atol=1e-10)
        assert np.all(row_x[~positive] <= tau[0] + 1e-10)
        np.testing.assert_allclose(row_y, brute_force_projection(row_x), atol=1e-10)


@settings(max_examples=50, deadline=None)
@given(rows_strategy, st.floats(-10, 10))
def test_project_simplex_is_shift_invariant_and_idempotent(x, shift):
    y = project_simplex(x)
    np.testing.assert_allclose(project_simplex(x + shift), y, atol=1e-9)
    np.testing.assert_allclose(project_simplex(y), y, atol=1e-12)


def test_project_simplex_keeps_leading_axes():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(2, 3, 4))
    y = project_simplex(x)
    assert y.shape == x.shape
    np.testing.assert_allclose(y.reshape(-1, 4), project_simplex(x.reshape(-1, 4)))
    simplex = rng.dirichlet(np.ones(5), size=3)
    np.testing.assert_allclose(project_simplex(simplex), simplex, atol=1e-15)


# ----------------------------------------------------------------------------- Lyapunov property
@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("beta", [1.0, 0.7, 0.3])
@pytest.mark.parametrize("prior", [(1.1, 1.01), (2.0, 1.5)])
def test_free_energy_never_increases(seed, beta, prior):
    model, data = simulated(seed, alpha=prior[0], eta=prior[1])
    result = annealed_em(model, data, betas=[beta], max_iter=60, tol=0, random_state=seed)
    fe = result.trace["free_energy"].to_numpy()
    assert len(fe) == 60
    assert np.all(np.isfinite(fe))
    assert increases(fe).size == 0, np.diff(fe).max()
    assert fe[-1] < fe[0]  # and it actually moved


@pytest.mark.parametrize("seed", SEEDS)
def test_maximum_likelihood_em_never_decreases_the_likelihood(seed):
    model, data = simulated(seed, alpha=1.0, eta=1.0)
    result = annealed_em(model, data, betas=[1.0], max_iter=60, tol=0, random_state=seed)
    ll = result.trace["log_likelihood"].to_numpy()
    assert np.all(np.diff(ll) >= -1e-9 * np.abs(ll[1:]))
    assert ll[-1] > ll[0]
    # at beta = 1 without a prior the free energy is exactly minus the log-likelihood
    np.testing.assert_allclose(result.trace["free_energy"], -ll, rtol=1e-12)
    # and the final log-likelihood is the exact one of the returned parameters, one step on
    final = model.log_likelihood(result.params, data).sum()
    assert final >= ll[-1] - 1e-9 * abs(ll[-1])


@pytest.mark.parametrize("beta", [1.0, 0.6])
def test_free_energy_is_the_generalised_free_energy(beta):
    """Trace value = -(1/beta) sum n log sum_k (theta phi)^beta - log prior (up to constants)."""
    model, data = simulated(4, alpha=1.3, eta=1.2)
    rng = np.random.default_rng(4)
    params = {
        "theta": rng.dirichlet(np.ones(3), data.n_rows),
        "phi": rng.dirichlet(np.ones(data.n_cols), 3),
    }
    run = run_schedule(AspectEM(model, data), params, [beta], max_iter=1, tol=0)
    counts = data.toarray()
    s = np.einsum("ik,kj->ij", params["theta"] ** beta, params["phi"] ** beta)
    want = -(counts * np.log(s)).sum() / beta
    want -= 0.3 * np.log(params["theta"]).sum() + 0.2 * np.log(params["phi"]).sum()
    assert run.trace["free_energy"].iloc[0] == pytest.approx(want, rel=1e-10)
    ll = model.log_likelihood(params, data).sum()
    assert run.trace["log_likelihood"].iloc[0] == pytest.approx(ll, rel=1e-10)


# ----------------------------------------------------------------------------- over-relaxation
@pytest.mark.parametrize("overrelax", [1.5, 1.8, 1.99])
@pytest.mark.parametrize("seed", SEEDS)
def test_overrelaxed_em_keeps_the_free_energy_non_increasing(seed, overrelax):
    model, data = simulated(seed, alpha=1.0, eta=1.0)
    result = annealed_em(
        model, data, betas=[1.0], max_iter=60, tol=0, overrelax=overrelax, random_state=seed
    )
    fe = result.trace["free_energy"].to_numpy()
    assert len(fe) == 60
    assert increases(fe).size == 0, np.diff(fe).max()
    for name in ("theta", "phi"):
        assert np.all(result.params[name] >= 0)
        np.testing.assert_allclose(result.params[name].sum(1), 1.0, rtol=1e-12)


def test_without_the_safeguard_overrelaxation_would_raise_the_free_energy():
    """Negative control for the test above: the safeguard is what keeps EM(1.99) monotone."""
    raised = 0
    for seed in range(10):
        model, data = simulated(seed, alpha=1.0, eta=1.0)
        problem = AspectEM(model, data)
        problem.monotone = False  # disables the fall-back to the plain M-step
        params = problem.init(np.random.default_rng(seed))
        run = run_schedule(problem, params, [1.0], max_iter=60, tol=0, overrelax=1.99)
        raised += increases(run.trace["free_energy"]).size > 0
    # measured: about 70% of these problems overshoot; P(none of 10) < 1e-5
    assert raised >= 1


def test_overrelaxation_reaches_a_lower_free_energy_in_the_same_iterations():
    """Over 10 problems EM(1.8) beats plain EM after 60 iterations on at least 8.

    Measured on 200 problems: strictly lower on 99%, so P(fewer than 8 of 10) ~ 1e-4. Plain EM
    masquerading as EM(eta) would tie everywhere and fail.
    """
    better = 0
    for seed in range(10):
        model, data = simulated(100 + seed, alpha=1.0, eta=1.0)
        runs = [
            annealed_em(
                model, data, betas=[1.0], max_iter=60, tol=0, overrelax=w, random_state=seed
            )
            for w in (1.0, 1.8)
        ]
        plain, fast = (r.trace["free_energy"].iloc[-1] for r in runs)
        better += fast < plain - 1e-9 * abs(plain)
    assert better >= 8


class Overshooting:
    """Toy problem: the plain step overshoots the optimum t (contraction -0.2), free energy |x-t|^2."""

    monotone = True
    target = np.array([[0.8, 0.2]])

    def init(self, rng):
        return {"x": np.array([[0.5, 0.5]])}

    def step(self, params, beta):
        x = params["x"]
        free = float(((x - self.target) ** 2).sum())
        return {"x": x + 1.2 * (self.target - x)}, EMStats(free, -free)


def test_safeguard_falls_back_to_the_plain_step():
    problem = Overshooting()
    run = run_schedule(problem, problem.init(None), [1.0], max_iter=30, tol=0, overrelax=1.9)
    fe = run.trace["free_energy"].to_numpy()
    assert len(fe) == 30 and increases(fe).size == 0
    assert fe[-1] < 1e-30  # plain steps converge geometrically after the fall-back
    problem.monotone = False
    run = run_schedule(problem, problem.init(None), [1.0], max_iter=30, tol=0, overrelax=1.9)
    assert increases(run.trace["free_energy"]).size > 0


# ----------------------------------------------------------------------------- validation
@pytest.mark.parametrize(
    "options, match",
    [
        ({"betas": []}, "non-empty"),
        ({"betas": [0.5, -1.0]}, r"betas\[1\]"),
        ({"betas": [0.0]}, "positive"),
        ({"betas": [float("nan")]}, "positive"),
        ({"betas": "foo"}, "auto"),
        ({"max_iter": 0}, "max_iter"),
        ({"max_iter": 2.5}, "max_iter"),
        ({"tol": -1e-3}, "tol"),
        ({"tol": float("nan")}, "tol"),
        ({"overrelax": 2.5}, "overrelax"),
        ({"overrelax": 2.0}, "overrelax"),
        ({"overrelax": 0.0}, "overrelax"),
    ],
)
def test_annealed_em_rejects_bad_schedules(options, match):
    options = {"betas": [1.0], **options}
    with pytest.raises(ValueError, match=match):
        annealed_em(AspectModel(2), load("toy"), random_state=0, **options)


def test_check_schedule_and_budget_lists():
    assert check_schedule(0.5) == [0.5]
    assert check_schedule(np.array([0.2, 1])) == [0.2, 1.0]
    model = AspectModel(2)
    data = load("toy")
    problem = AspectEM(model, data)
    params = problem.init(np.random.default_rng(0))
    with pytest.raises(ValueError, match="one entry per beta"):
        run_schedule(problem, params, [0.5, 1.0], max_iter=[3])
    run = run_schedule(problem, params, [0.5, 1.0], max_iter=[3, 5], tol=0)
    assert run.trace.groupby("beta").size().to_dict() == {0.5: 3, 1.0: 5}
    assert run.trace["iteration"].tolist() == [0, 1, 2, 0, 1, 2, 3, 4]
    assert not run.converged  # budgets exhausted, tolerance disabled
    run = run_schedule(problem, params, [1.0], max_iter=1000, tol=1e-6)
    assert run.converged and len(run.trace) < 1000
    fe = run.trace["free_energy"].to_numpy()
    assert abs(fe[-1] - fe[-2]) / abs(fe[-1]) < 1e-6


# ----------------------------------------------------------------------------- tempered EM
@pytest.mark.parametrize("seed", SEEDS)
def test_auto_schedule(seed):
    model, data = simulated(seed)
    result = annealed_em(model, data, betas="auto", max_iter=100, random_state=seed)
    assert list(result.trace.columns) == TRACE_COLUMNS
    betas = result.betas
    assert betas[0] == 1.0 and 0 < betas[-1] <= 1.0
    assert np.all(np.diff(betas) < 0)
    assert set(result.trace["beta"]) == set(betas)
    selection = result.selection_trace
    assert "validation_perplexity" in selection
    assert np.all(np.isfinite(selection["validation_perplexity"]))
    # the chosen final beta is where the validation perplexity was best (up to the score_tol
    # rule; at beta = 1 the iterates of fewer than min_iter steps do not count)
    early = (selection["beta"] == 1.0) & (
        selection["iteration"] < SCHEDULE_DEFAULTS["min_iter"] - 1
    )
    best_overall = selection.loc[~early, "validation_perplexity"].min()
    at_final = result.stages["validation_perplexity"].iloc[-1]
    assert at_final <= best_overall * (1 + SCHEDULE_DEFAULTS["score_tol"])
    assert math.isfinite(result.perplexity(data))
    fe = result.trace["free_energy"].to_numpy()
    for beta in betas:  # monotone within every stage of the replay
        assert increases(fe[result.trace["beta"].to_numpy() == beta]).size == 0


def test_early_stopping_schedule_stays_at_beta_one():
    model, data = simulated(7)
    result = annealed_em(model, data, betas="early_stopping", random_state=7)
    assert result.betas == [1.0]
    assert set(result.selection_trace["beta"]) == {1.0}


class Walk:
    """Toy problem: every step moves x[0] up by 1/16 (exact in binary); score |x[0] - 6/16|."""

    monotone = True

    def step(self, params, beta):
        a = params["x"][0, 0]
        return {"x": np.array([[a + 1 / 16, 1 - a - 1 / 16]])}, EMStats(-a, -a)


def walk_schedule(max_iter=50, patience=3):
    start = {"x": np.array([[1 / 16, 15 / 16]])}

    def score(params, _):
        return abs(params["x"][0, 0] - 6 / 16)

    out = tempered_schedule(
        lambda part: Walk(), None, None, score, start, max_iter=max_iter, patience=patience,
        beta_decay=0.9, min_beta=0.05, early_stopping_only=True, min_iter=0, score_tol=0.0,
        tol=0.0,
    )  # fmt: skip
    return start, score, out


def test_tempered_schedule_replay_ends_at_the_best_parameters():
    """Replaying the schedule reproduces the selected (best-scoring) parameters exactly."""
    start, score, (schedule, trace, stages) = walk_schedule()
    assert stages["stopped"].tolist() == ["early_stopping"]
    assert stages["selected"].tolist() == [True]
    assert trace["validation_perplexity"].min() == 0.0
    assert schedule == [(1.0, 5)]  # 5 steps take x[0] from 1/16 to 6/16
    # the stage ran `patience` iterations past the best one
    assert len(trace) == 5 + 3
    betas = [beta for beta, _ in schedule]
    budgets = [n for _, n in schedule]
    replay = run_schedule(Walk(), start, betas, budgets, tol=0)
    assert score(replay.params, None) == 0.0


def test_tempered_schedule_reports_a_stage_that_ran_out_of_budget():
    _, _, (schedule, trace, stages) = walk_schedule(max_iter=3)
    assert stages["stopped"].tolist() == ["max_iter"]
    assert schedule == [(1.0, 3)] and len(trace) == 3


@pytest.mark.parametrize("seed", SEEDS)
def test_early_stopped_fit_reports_convergence(seed):
    model, data = simulated(seed)
    result = annealed_em(model, data, betas="early_stopping", max_iter=300, random_state=seed)
    stage_lengths = result.selection_trace.groupby("beta").size()
    assert result.converged == bool(np.all(stage_lengths < 300))
    short = annealed_em(model, data, betas="early_stopping", max_iter=2, random_state=seed)
    assert not short.converged  # two iterations cannot both improve and exhaust the patience


# ----------------------------------------------------------------------------- perplexity
def test_perplexity_definition():
    data = CoOccurrence([[3, 1, 0], [0, 2, 2]])
    uniform = {"theta": np.ones((2, 1)), "phi": np.full((1, 3), 1 / 3)}
    assert perplexity(AspectModel(1), uniform, data) == pytest.approx(3.0, rel=1e-14)
    rng = np.random.default_rng(0)
    params = {"theta": rng.dirichlet(np.ones(2), 2), "phi": rng.dirichlet(np.ones(3), 2)}
    p = params["theta"] @ params["phi"]
    counts = data.toarray()
    want = math.exp(-(counts * np.log(p)).sum() / counts.sum())
    assert perplexity(AspectModel(2), params, data) == pytest.approx(want, rel=1e-12)
    empty = data.subset(rows=[0], cols=[2])
    assert empty.total == 0
    with pytest.raises(ValueError, match="no observations"):
        perplexity(AspectModel(1), {"theta": np.ones((1, 1)), "phi": np.ones((1, 1))}, empty)


# ------------------------------------------------------------ geometric cooling (deterministic annealing)
def test_geometric_cooling_schedule_and_its_checks():
    from latentzoo.inference.annealing import GeometricCooling

    betas = GeometricCooling(0.1, 1.0, decay=0.5).betas()
    assert betas[0] == 0.1 and betas[-1] == 1.0
    assert np.all(np.diff(betas) > 0) and np.allclose(betas[1:-1], [0.2, 0.4, 0.8])
    for kwargs, message in [
        ({"beta_start": 0.0}, "beta_start must be a positive finite number"),
        ({"beta_start": 2.0, "beta_end": 1.0}, "must not exceed beta_end"),
        ({"decay": 1.0}, "decay must lie in"),
        ({"decay": float("nan")}, "decay must lie in"),
    ]:
        with pytest.raises(ValueError, match=message):
            GeometricCooling(**kwargs)


def test_geometric_cooling_finds_the_split_of_the_clusters():
    """At high temperature every ACM cluster sits on one centroid; cooling splits them (a phase
    transition, seed sec. 5.1). The free energy still never rises within a temperature."""
    import latentzoo
    from latentzoo.data import load
    from latentzoo.inference.annealing import GeometricCooling
    from latentzoo.models import OneSidedClustering

    data = load("reuters")
    data = data.subset(rows=np.arange(60), cols=data.top_columns(200))
    schedule = GeometricCooling(0.002, 1.0, decay=0.6)
    result = latentzoo.fit(OneSidedClustering(4), data, "annealed_em", betas=schedule,
                           random_state=1)  # fmt: skip
    order = result.stages["order_parameter"].to_numpy()
    assert order[0] == 1 and order[-1] > 1
    assert result.transitions and all(b in schedule.betas() for b in result.transitions)
    first = result.stages["beta"][np.argmax(order > 1)]
    assert result.transitions[0] == first
    for _, stage in result.trace.groupby("beta"):
        assert np.all(
            np.diff(stage["free_energy"].to_numpy()) <= 1e-9 * np.abs(stage["free_energy"]).max()
        )


def test_a_heating_schedule_is_refused_naming_the_entry():
    # issue 24: a decreasing list was accepted by all six annealed EMs and ran EM hotter and hotter
    import latentzoo
    from latentzoo.data import load
    from latentzoo.models import AspectModel

    with pytest.raises(ValueError, match=r"betas\[1\] = 0.5 is below betas\[0\] = 1.0"):
        latentzoo.fit(AspectModel(2), load("toy"), method="annealed_em", betas=[1.0, 0.5])


def test_auto_on_data_too_small_for_a_validation_split_fits_plain_em_and_says_so():
    # A binomial split of a few tokens can leave the validation side empty (it made a default
    # AspectEstimator's sparse check fail on about one CI run in four): plain EM, with a warning.
    from latentzoo.data import load
    from latentzoo.inference.aspect import annealed_em
    from latentzoo.models import AspectModel

    with pytest.warns(UserWarning, match="too small for a validation split"):
        result = annealed_em(
            AspectModel(2), load("toy"), betas="auto", validation_fraction=1e-9, random_state=0
        )
    assert result.betas == [1.0]
