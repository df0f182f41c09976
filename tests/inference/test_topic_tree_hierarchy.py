"""Tests of Algorithms 3.2 and 3.3 of seed 003 (the hierarchy from leaf topics; topics, hierarchy
and clustering from unlabeled data), clustering down a reconstructed tree and the precision /
recall tables of Tables 2-4, in ``latentzoo.inference.topic_tree``.

Statistical checks use fixed seeds and hold for any seed with probability above ``1 - 1e-4``.
"""

import numpy as np
import pytest

from latentzoo.data import CoOccurrence
from latentzoo.inference.topic_tree import (
    cluster_composition,
    cluster_down,
    hierarchy_from_topics,
    precision_recall_table,
    prune_vocabulary,
    reconstruct_tree,
    related_topics,
)
from latentzoo.models.topic_tree import TopicTreeMixture


def _leaf_topics(seed, branching=3, depth=2, n_words=1000):
    _, truth = TopicTreeMixture().simulate(
        seed, branching=branching, depth=depth, n_words=n_words, n_docs=1, root_concentration=1.0
    )
    parent = truth["parent"]
    leaves = np.setdiff1d(np.arange(parent.size), parent)
    return truth["topics"][:, leaves], parent, leaves


def _true_clusters(parent, leaves):
    """The leaf sets (as positions in ``leaves``) under every internal node of a simulated tree."""
    position = {int(leaf): index for index, leaf in enumerate(leaves)}
    sets = []
    for node in np.setdiff1d(np.arange(parent.size), leaves):
        under, frontier = [], [node]
        while frontier:
            current = frontier.pop()
            children = np.flatnonzero(parent == current)
            under += [position[int(c)] for c in children if int(c) in position]
            frontier += [int(c) for c in children if int(c) not in position]
        sets.append(tuple(sorted(under)))
    return sorted(sets)


@pytest.mark.parametrize("seed", range(2))
def test_algorithm_3_2_recovers_the_topology_exactly(seed):
    # The baseline is the average of the leaves, which carries a third of every level-1 mutation
    # (the bias of equations (25)-(26)): siblings then relate at about 0.3 and strangers at about
    # -0.27, so tau = 0.1 (not the paper's 0.3 for real data) sits in the gap.
    topics, parent, leaves = _leaf_topics(seed)
    hierarchy = hierarchy_from_topics(topics, tau=0.1)
    assert hierarchy.clusters() == _true_clusters(parent, leaves)
    assert hierarchy.parent[hierarchy.n_leaves] == -1
    np.testing.assert_allclose(hierarchy.topics[:, :9], topics)


def test_related_topics_are_the_siblings():
    topics, parent, leaves = _leaf_topics(1)
    related = related_topics(topics, tau=0.1)
    siblings = parent[leaves][:, None] == parent[leaves][None, :]
    np.testing.assert_array_equal(related, siblings)


def test_a_set_that_does_not_split_is_one_node():
    topics, _, _ = _leaf_topics(2)
    hierarchy = hierarchy_from_topics(topics, tau=0.0)
    # tau = 0 relates every leaf to half the others through noise: the whole set may stay one
    # node, and then all the leaves are its children (no order is invented).
    assert (0, 1, 2, 3, 4, 5, 6, 7, 8) in hierarchy.clusters()
    flat = hierarchy_from_topics(np.full((5, 3), 0.2) + np.eye(5, 3) * 0, tau=0.3)
    assert flat.clusters() == [(0, 1, 2)]
    assert np.all(flat.parent[:3] == 3)


def test_algorithm_3_2_refuses_bad_input():
    with pytest.raises(ValueError, match="tau must be"):
        hierarchy_from_topics(np.eye(3), tau=-1)
    with pytest.raises(ValueError, match="non-negative"):
        hierarchy_from_topics([[0.5, -0.1], [0.5, 1.1]])
    with pytest.raises(ValueError, match="empty topic"):
        hierarchy_from_topics([[0.5, 0.0], [0.5, 0.0]])


@pytest.fixture(scope="module")
def simulated_corpus():
    data, truth = TopicTreeMixture().simulate(
        3, branching=3, depth=1, n_words=300, n_docs=600, doc_length=300
    )
    return data, truth["path"][:, 1], truth["relevance"][:, 1]


def test_algorithm_3_3_finds_the_first_level_topics(simulated_corpus):
    data, children, _ = simulated_corpus
    tree = reconstruct_tree(data, max_depth=1, max_clusters=3)
    assert tree.parent.tolist() == [-1, 0, 0, 0]
    table = precision_recall_table(tree.labels, children, unclustered=0)
    # Each cluster is one topic's: three classes, one cluster each, nearly pure.
    assert table.loc[[1, 2, 3], "n_clusters"].tolist() == [1, 1, 1]
    assert table.loc[[1, 2, 3], "precision"].min() > 0.95
    assert table.loc[[1, 2, 3], "recall"].min() > 0.5
    np.testing.assert_allclose(tree.topics.sum(axis=0), 1.0)


def test_algorithm_3_3_poorly_approximated_columns(simulated_corpus):
    data, _, _ = simulated_corpus
    counts = data.counts.toarray()
    # 100 rare words, each 3 times in one random document: their columns are those documents'
    # histograms, far from the baseline by sampling noise alone.
    rng = np.random.default_rng(0)
    rare = np.zeros((counts.shape[0], 100), dtype=np.int64)
    rare[rng.integers(counts.shape[0], size=100), np.arange(100)] = 3
    spiked = np.hstack([counts, rare])
    unguarded = reconstruct_tree(
        spiked, max_depth=1, max_clusters=1, smoothing=0.0, min_cluster_size=1,
        min_cluster_share=0.0, n_refine=0,
    )  # fmt: skip
    assert unguarded.seed_words[1] >= counts.shape[1]  # without the guards the noise wins
    guarded = reconstruct_tree(spiked, max_depth=1, max_clusters=3, min_cluster_size=20)
    assert np.all(guarded.seed_words[1:] < counts.shape[1])
    sizes = np.bincount(guarded.labels, minlength=guarded.n_nodes)[1:]
    assert np.all(sizes >= 20)  # rejection: no cluster below the smallest size
    assert not set(guarded.rejected_words) & set(guarded.seed_words)


def test_algorithm_3_3_recurses_and_labels_levels():
    data, truth = TopicTreeMixture().simulate(
        4, branching=2, depth=2, n_words=400, n_docs=800, doc_length=400, root_concentration=1.0
    )
    tree = reconstruct_tree(data, max_depth=2, max_clusters=2)
    assert tree.depth.max() == 2
    assert np.all(tree.depth[1:] == tree.depth[tree.parent[1:]] + 1)
    top = tree.level_labels(1)
    assert np.all(tree.depth[top] <= 1)
    assert np.all((top == tree.labels) | (tree.parent[tree.labels] == top))
    table = precision_recall_table(top, truth["path"][:, 1], unclustered=0)
    assert table.loc["total", "precision"] > 0.9


def test_cluster_down_agrees_with_the_first_level(simulated_corpus):
    data, children, relevance_to_child = simulated_corpus
    tree = reconstruct_tree(data, max_depth=1, max_clusters=3)
    down = cluster_down(tree, data)
    clustered = tree.labels > 0
    # The documents the reconstruction clustered go down the same way.
    assert np.mean(down[clustered] == tree.labels[clustered]) > 0.85
    # Those that go down are mostly the ones mainly about their child topic (relevance r = V d).
    assert np.mean(relevance_to_child[down > 0]) > np.mean(relevance_to_child[down == 0])
    with pytest.raises(ValueError, match="documents have 2 words"):
        cluster_down(tree, [[1, 2]])


def test_reconstruct_tree_refuses_bad_input():
    with pytest.raises(ValueError, match="non-negative"):
        reconstruct_tree([[1, -1], [1, 1]])
    with pytest.raises(ValueError, match="at least 2 documents"):
        reconstruct_tree([[1, 2, 3]])
    with pytest.raises(ValueError, match="max_depth"):
        reconstruct_tree(np.ones((3, 3)), max_depth=0)
    with pytest.raises(ValueError, match="coverage"):
        reconstruct_tree(np.ones((3, 3)), coverage=0)


def test_prune_vocabulary():
    counts = CoOccurrence(np.array([[1, 1, 0, 2], [1, 0, 1, 1], [1, 1, 0, 0], [1, 1, 0, 0]]))
    assert prune_vocabulary(counts, min_documents=2, max_document_share=0.9).tolist() == [1, 3]
    assert prune_vocabulary(counts, 1, 0.9, max_words=1).tolist() == [1]


def test_precision_recall_table_as_table_2():
    clusters = np.array([1, 1, 1, 1, 2, 2, 2, 3, 3, 0])
    classes = np.array(["a", "a", "a", "b", "b", "b", "c", "c", "a", "c"])
    table = precision_recall_table(clusters, classes, unclustered=0)
    # Cluster 1 -> a (3 of 4), cluster 2 -> b (2 of 3), cluster 3 a tie -> a by order, no majority.
    assert table.loc["a", "n_clusters"] == 2
    assert table.loc["a", "recall"] == pytest.approx(4 / 4)
    assert table.loc["a", "precision"] == pytest.approx(4 / 6)
    assert table.loc["a", "majority_recall"] == pytest.approx(3 / 4)
    assert table.loc["a", "majority_precision"] == pytest.approx(3 / 4)
    assert table.loc["c", "recall"] == 0 and table.loc["c", "n_clusters"] == 0
    assert table.loc["total", "recall"] == pytest.approx(6 / 10)
    assert table.loc["total", "precision"] == pytest.approx(6 / 9)
    composition = cluster_composition(clusters, classes, top=2)
    assert composition.loc[1, "major classes"] == "a 75% (75%), b 25% (33%)"
    with pytest.raises(ValueError, match="one length"):
        precision_recall_table([1, 2], ["a"])


def test_the_familys_result_saves_the_tree_the_relevances_and_a_drawing(tmp_path):
    import arviz as az

    from latentzoo.inference.topic_tree import FAMILY

    data, truth = TopicTreeMixture().simulate(
        3, branching=3, depth=1, n_words=200, n_docs=300, doc_length=200
    )
    tree = FAMILY.methods["reconstruct"](
        TopicTreeMixture(), data, max_depth=1, max_clusters=3, max_document_share=1.0
    )
    assert tree.summary_lines()[0].startswith("topic tree: 3 nodes below the root")
    tree.save(tmp_path / "tree.nc", data)
    back = az.from_netcdf(str(tmp_path / "tree.nc")).point_estimate
    np.testing.assert_array_equal(back["parent"], tree.parent)
    relevance = back["relevance"].to_numpy()
    assert relevance.shape == (300, 2)
    clustered = tree.labels > 0
    assert np.all(np.isnan(relevance[~clustered]))
    assert np.median(relevance[clustered, 0]) > 0.5  # documents are relevant to their own node
    tree.save(tmp_path / "tree.npz", data)
    with np.load(tmp_path / "tree.npz", allow_pickle=False) as saved:
        np.testing.assert_array_equal(saved["result.label"], tree.labels)
    assert tree.figure().axes
    with pytest.raises(ValueError, match="only 0 words"):
        FAMILY.methods["reconstruct"](TopicTreeMixture(), np.ones((10, 5)))  # every word everywhere


@pytest.mark.slow  # NUTS on three documents: about 20 s
def test_validation_reference_level_passes():
    from latentzoo.inference.topic_tree import FAMILY
    from latentzoo.inference.validation import QUICK

    recipe = FAMILY.recipe()
    comparison = recipe.checks["reference"](
        FAMILY, recipe, TopicTreeMixture(), None, QUICK, np.random.default_rng(0)
    )
    assert [check.passed for check in comparison.checks] == [True, True]
    assert set(recipe.not_applicable) == {"exact", "density", "optimality", "mode-matched",
                                          "calibrated"}  # fmt: skip
