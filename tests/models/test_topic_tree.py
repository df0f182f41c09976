"""Tests of Sandler's topic-tree model, ``latentzoo.models.topic_tree`` (seed 003, section 3.1).

The simulated mutations are checked against the four conditions of section 3.1 ((i) no negative
entry, (ii) zero mean, (iii) ``E||E'||_1 >= Delta``, (iv) the slope ratio), the tree and the
documents against the process's definition, and ``Gamma(W)`` against its definition
``min ||W x||_1 / ||x||_1`` evaluated by brute force. Statistical checks use fixed seeds and hold
for any seed with probability above ``1 - 1e-4``.
"""

import numpy as np
import pytest

from latentzoo.models.topic_tree import (
    Mutation,
    TopicTreeMixture,
    check_topic_matrix,
    gamma,
    slope,
    tree_paths,
)

SIM = dict(branching=3, depth=2, n_words=4000, n_docs=50, doc_length=100)


@pytest.fixture(scope="module", params=["sign", "uniform"])
def simulated(request):
    delta = 0.8 if request.param == "sign" else 0.4
    data, truth = TopicTreeMixture().simulate(
        7, delta=delta, mutation=request.param, root_concentration=1.0, **SIM
    )
    return request.param, delta, data, truth


def test_tree_shape_and_paths(simulated):
    _, _, data, truth = simulated
    parent = truth["parent"]
    assert parent.tolist() == [-1, 0, 0, 0] + [1] * 3 + [2] * 3 + [3] * 3
    assert truth["topics"].shape == (SIM["n_words"], 13)
    np.testing.assert_allclose(truth["topics"].sum(axis=0), 1.0, rtol=0, atol=1e-12)
    assert np.all(truth["topics"] >= 0)
    path = truth["path"]
    assert path.shape == (SIM["n_docs"], 3)
    assert np.all(path[:, 0] == 0)
    assert np.all(parent[path[:, 1:]] == path[:, :-1])  # each step goes to a child
    np.testing.assert_allclose(truth["relevance"].sum(axis=1), 1.0)
    assert data.shape == (SIM["n_docs"], SIM["n_words"])
    np.testing.assert_array_equal(data.row_totals, SIM["doc_length"])


def test_children_are_renormalised_mutations_of_their_parents(simulated):
    _, _, _, truth = simulated
    topics, parent, changes = truth["topics"], truth["parent"], truth["mutations"]
    children = np.arange(1, topics.shape[1])
    grown = topics[:, parent[children]] + changes[:, children]
    np.testing.assert_allclose(
        topics[:, children], grown * truth["normalisers"][children], rtol=1e-12
    )
    # (i): E'_i >= -T_i for every term of every child.
    assert np.all(changes[:, children] >= -topics[:, parent[children]] - 1e-15)


def test_mutations_have_zero_mean(simulated):
    # (ii): E'_i / T_i are independent with mean 0 across terms and children.
    _, _, _, truth = simulated
    topics, parent, changes = truth["topics"], truth["parent"], truth["mutations"]
    children = np.arange(1, topics.shape[1])
    scaled = (changes[:, children] / topics[:, parent[children]]).ravel()
    z = scaled.mean() / (scaled.std(ddof=1) / np.sqrt(scaled.size))
    assert abs(z) < 4.0


def test_mutations_have_expected_l1_delta_and_a_high_slope(simulated):
    kind, delta, _, truth = simulated
    topics, parent, changes = truth["topics"], truth["parent"], truth["mutations"]
    for child in range(1, topics.shape[1]):
        mutation = Mutation(topics[:, parent[child]], delta, kind)
        # (iii) with Delta = delta, exactly, and the draw close to its expectation.
        assert mutation.expected_l1 == pytest.approx(delta, rel=1e-12)
        assert np.abs(changes[:, child]).sum() == pytest.approx(delta, rel=0.05)
        # (iv): slope = delta / (2 w delta ||T||_2) with w the largest |U_i| (1 or 2).
        width = 1.0 if kind == "sign" else 2.0
        expected = 1.0 / (2 * width * np.linalg.norm(topics[:, parent[child]]))
        assert slope(mutation) == pytest.approx(expected, rel=1e-12)
        assert slope(mutation) > 10  # a spread-out change: eps_2 < 0.1


def test_slope_of_the_papers_example():
    # Section 3.1: +-1/n from the uniform parent gives E||E||_1 = 1 and ||B - A||_2 = 2 / sqrt(n).
    n_words = 400
    mutation = Mutation(np.full(n_words, 1 / n_words), delta=1.0)
    assert mutation.expected_l1 == pytest.approx(1.0)
    assert slope(mutation) == pytest.approx(np.sqrt(n_words) / 2)


def test_same_seed_same_tree():
    first = TopicTreeMixture().simulate(3, n_words=50, n_docs=5)
    second = TopicTreeMixture().simulate(3, n_words=50, n_docs=5)
    np.testing.assert_array_equal(first[1]["topics"], second[1]["topics"])
    assert (first[0].counts != second[0].counts).nnz == 0


def test_gamma_against_brute_force():
    rng = np.random.default_rng(0)
    topics = rng.dirichlet(np.ones(6), size=3).T  # 6 words, 3 topics
    exact = gamma(topics)
    # Every x gives an upper bound; dense sampling of the L1 sphere gets close from above.
    x = rng.standard_normal((200_000, 3))
    ratios = np.abs(x @ topics.T).sum(axis=1) / np.abs(x).sum(axis=1)
    assert exact <= ratios.min() + 1e-12
    assert ratios.min() - exact < 1e-2
    assert 0 < exact <= 1


def test_gamma_known_values():
    assert gamma(np.eye(3)) == pytest.approx(1.0)
    # x = (1, -1): ||W x||_1 = 1.6, ||x||_1 = 2.
    assert gamma([[0.9, 0.1], [0.1, 0.9]]) == pytest.approx(0.8)


def test_tree_paths():
    assert tree_paths([-1, 0, 0, 1, 1, 2, 2]).tolist() == [
        [0, 1, 3],
        [0, 1, 4],
        [0, 2, 5],
        [0, 2, 6],
    ]
    assert tree_paths([-1]).tolist() == [[0]]


@pytest.mark.parametrize(
    ("options", "message"),
    [
        (dict(branching=0), "branching must be an integer >= 1"),
        (dict(depth=-1), "depth must be an integer >= 0"),
        (dict(n_words=2, depth=2), "n_words=2 must be at least depth"),
        (dict(delta=1.5), r"delta must be a number in \(0, 1\]"),
        (dict(delta=0.8, mutation="uniform"), r"delta must be a number in \(0, 0.5\]"),
        (dict(mutation="gaussian"), "mutation must be one of"),
        (dict(root_concentration=-1.0), "root_concentration must be a positive"),
        (dict(doc_length=0), "doc_length must be an integer >= 1"),
    ],
)
def test_simulate_refuses_bad_options(options, message):
    with pytest.raises(ValueError, match=message):
        TopicTreeMixture().simulate(0, **{**dict(n_words=20, n_docs=2), **options})


def test_refuses_bad_topic_matrices_and_concentration():
    with pytest.raises(ValueError, match="relevance_concentration must be a positive"):
        TopicTreeMixture(relevance_concentration=0.0)
    with pytest.raises(ValueError, match="full column rank"):
        check_topic_matrix([[0.5, 0.5], [0.5, 0.5]])
    with pytest.raises(ValueError, match=r"W\[1, 0\] = -0.1 is negative"):
        check_topic_matrix([[1.1, 0.5], [-0.1, 0.5]])
    with pytest.raises(ValueError, match="3 topics over only 2 words"):
        check_topic_matrix(np.ones((2, 3)))
    with pytest.raises(ValueError, match="must be finite"):
        gamma([[np.nan, 1.0], [1.0, 0.0]])


def _long_document(seed, depth, n_words=200, doc_length=20_000):
    data, truth = TopicTreeMixture().simulate(
        seed, branching=2, depth=depth, n_words=n_words, n_docs=1, doc_length=doc_length,
        root_concentration=1.0,
    )  # fmt: skip
    return truth["topics"][:, truth["path"][0]], data.counts.toarray()[0], truth["relevance"][0]


def test_lp_relevance_inside_the_exact_posterior_interval():
    # The small default version of the PyMC check: for k = 2 the posterior of the relevance
    # r_1 ~ Uniform(0, 1) (Dirichlet(1)) given the words is a 1-D density, integrated on a grid.
    from latentzoo.inference.topic_tree import minimax_pseudoinverse

    for seed in range(3):
        topics, counts, truth = _long_document(seed, depth=1)
        estimate = minimax_pseudoinverse(topics).relevance(counts)
        grid = np.linspace(1e-6, 1 - 1e-6, 20_001)
        mixture = np.outer(topics[:, 0], grid) + np.outer(topics[:, 1], 1 - grid)
        log_density = counts @ np.log(mixture)
        density = np.exp(log_density - log_density.max())
        cdf = np.cumsum(density) / density.sum()
        low, high = grid[np.searchsorted(cdf, 0.005)], grid[np.searchsorted(cdf, 0.995)]
        assert low <= estimate[0] <= high, (seed, low, estimate[0], high, truth[0])


@pytest.mark.slow
def test_lp_relevance_inside_the_pymc_posterior_interval():
    import pymc as pm

    from latentzoo.inference.topic_tree import minimax_pseudoinverse

    for seed in range(2):
        topics, counts, _ = _long_document(seed, depth=2)
        estimate = minimax_pseudoinverse(topics).relevance(counts)
        with TopicTreeMixture().pymc_model(topics, counts):
            idata = pm.sample(
                draws=1000, tune=500, chains=2, cores=1, random_seed=seed, progressbar=False,
                compute_convergence_checks=False,
            )  # fmt: skip
        draws = idata.posterior["relevance"].values.reshape(-1, topics.shape[1])
        low, high = np.quantile(draws, [0.005, 0.995], axis=0)
        assert np.all((low <= estimate) & (estimate <= high)), (seed, low, estimate, high)


@pytest.mark.slow  # compiling the graph takes 6 s; the doctest checks the declaration's names
def test_pymc_model_declares_the_relevance_posterior():
    import pymc as pm

    topics, counts, _ = _long_document(0, depth=1, n_words=20, doc_length=50)
    model = TopicTreeMixture(relevance_concentration=2.0).pymc_model(topics, counts)
    relevance = np.array([0.3, 0.7])
    logp = model["words_loglik"].eval({model["relevance"]: relevance})
    assert logp == pytest.approx(counts @ np.log(topics @ relevance))
    assert isinstance(model, pm.Model)


@pytest.mark.parametrize(
    "topics, document, message",
    [
        ([[0.5, 0.5], [0.5, 0.5]], [1, 1], "full column rank"),
        ([[1.1, 0.2], [-0.1, 0.8]], [1, 1], "is negative"),
        ([[0.6, 0.2], [0.2, 0.6]], [1, 1], "sum to one"),
        ([[0.9, 0.1], [0.1, 0.9]], [0, 0], "document is empty"),
        ([[0.9, 0.1], [0.1, 0.9]], [1, -1], "non-negative integer"),
        ([[0.9, 0.1], [0.1, 0.9]], [1, 2, 3], "one count per word"),
    ],
)
def test_pymc_model_refuses_bad_input(topics, document, message):
    with pytest.raises(ValueError, match=message):
        TopicTreeMixture().pymc_model(topics, document)
