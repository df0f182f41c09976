"""The exact level's AD-LDA checks (:func:`latentzoo.inference.ad_lda.validation_checks`, declared
by the aspect recipe as ``exact_fast_checks``): they pass the real method and fail hand-broken
ones (counts off by one, a merge that drops the topic totals, a shard that skips its last
document), and the exact level folds them into each problem's frequency check without moving its
random stream."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from latentzoo.data import CoOccurrence
from latentzoo.inference.ad_lda import (
    ADLDAGibbs,
    count_violation,
    rounds_to_move_every_token,
    validation_checks,
)
from latentzoo.inference.aspect import AspectGibbs
from latentzoo.inference.checks import Check
from latentzoo.inference.mcmc import chain_seeds
from latentzoo.inference.validation import QUICK, ExactProblem, _with_fast_checks, exact_level
from latentzoo.models.aspect import AspectModel
from latentzoo.zoo import ZOO

DATA = CoOccurrence([[2, 1, 0], [0, 1, 2], [0, 0, 1]])
MODEL = AspectModel(2)
ENTRY = ZOO["aspect"]
ONE_SHARD = "ad_lda with one shard is the gibbs chain bit for bit"
COUNTS = "ad_lda with 2 shards: merged counts = counts of its assignments after every round"
MOVES = "ad_lda with 2 shards: every token changes topic"


def verdicts(seed=0):
    checks = validation_checks(
        ENTRY.methods["gibbs"], ENTRY.methods["ad_lda"], MODEL, DATA, np.random.default_rng(seed)
    )
    return {check.name: check for check in checks}


def test_the_checks_pass_the_real_method():
    # Checks 1 and 2 are deterministic; 3 fails correct code with probability <= 1e-4.
    got = verdicts()
    assert list(got) == [ONE_SHARD, COUNTS, MOVES]
    assert all(check.passed for check in got.values()), [c.detail for c in got.values()]
    assert got[MOVES].numbers["rounds"] == rounds_to_move_every_token(AspectGibbs(MODEL, DATA))


def test_count_violation_sees_counts_off_by_one_and_labels_out_of_range():
    sampler = AspectGibbs(MODEL, DATA)
    state = sampler.init(np.random.default_rng(1))
    assert count_violation(sampler, state) == 0
    for name in ("n_doc_topic", "n_word_topic", "n_topic"):
        broken = state._replace(**{name: getattr(state, name).copy()})
        getattr(broken, name).flat[0] += 1
        assert count_violation(sampler, broken) == 1, name
    z = state.z.copy()
    z[-1] = MODEL.n_components
    assert count_violation(sampler, state._replace(z=z)) == np.inf


def test_the_move_bound_grows_as_the_priors_sparsen():
    sparse = rounds_to_move_every_token(AspectGibbs(AspectModel(2, alpha=0.3, eta=0.2), DATA))
    assert rounds_to_move_every_token(AspectGibbs(MODEL, DATA)) < sparse
    assert rounds_to_move_every_token(AspectGibbs(AspectModel(1), DATA)) is None


SHARD_ARRAYS = ADLDAGibbs._shard_arrays


def _skip_last_document(self, state, p):
    """A shard's token pointer one document short (its last document never swept)."""
    doc_ptr, words, z, n_doc_topic = SHARD_ARRAYS(self, state, p)
    return doc_ptr[:-1], words, z, n_doc_topic


def _merge_without_topic_totals(state, word_topic, topic, local_word_topic, local_topic):
    np.add(state.n_word_topic, local_word_topic - word_topic, out=state.n_word_topic)


@pytest.fixture
def broken(monkeypatch):
    return lambda name, replacement: monkeypatch.setattr(ADLDAGibbs, name, replacement)


def test_a_shard_skipping_its_last_document_fails_the_one_shard_and_move_checks(broken):
    broken("_shard_arrays", _skip_last_document)
    got = verdicts()
    assert not got[ONE_SHARD].passed
    assert got[COUNTS].passed  # the skipped tokens keep consistent counts
    assert not got[MOVES].passed and got[MOVES].numbers["stuck"] >= 1


def test_a_merge_dropping_the_topic_totals_fails_the_count_check(broken):
    broken("_merge", staticmethod(_merge_without_topic_totals))
    got = verdicts()
    assert not got[ONE_SHARD].passed
    assert not got[COUNTS].passed and got[COUNTS].numbers["violation"] >= 1


def test_the_exact_level_folds_the_checks_into_the_frequency_check_and_keeps_its_stream():
    problem = ExactProblem("tiny", MODEL, DATA)
    fails = Check("exact", "broken", False, "off by one")

    def frequency():
        return Check("exact", "tiny: state frequencies", True, "chi2 1", {"chi2": 1.0})

    for fast, passed in (([], True), ([Check("exact", "fine", True, "")], True), ([fails], False)):
        check, rng = frequency(), np.random.default_rng(3)
        _with_fast_checks(check, lambda *args, fast=fast: fast, ENTRY, problem, QUICK, rng)
        assert check.passed is passed and check.numbers["chi2"] == 1.0
        assert ("FAIL broken: off by one" in check.detail) is not passed
        # The level's streams unmoved: its draws and the chains' generators spawned from it.
        fresh = np.random.default_rng(3)
        assert chain_seeds(rng, 2)[1].random() == chain_seeds(fresh, 2)[1].random()
        assert rng.random() == fresh.random()

    def raises(*args):
        raise ValueError("no")

    check = frequency()
    _with_fast_checks(check, raises, ENTRY, problem, QUICK, np.random.default_rng(0))
    assert not check.passed and "ValueError: no" in check.detail


def test_the_aspect_exact_level_runs_the_ad_lda_checks(broken):
    """Two problems at 50 chains: the AD-LDA checks run on each (a merge that drops the topic
    totals fails both, whatever the chi-square says)."""
    full = ENTRY.recipe()
    recipe = dataclasses.replace(
        full, exact_problems=lambda model, rng: full.exact_problems(model, rng)[::3]
    )
    settings = dataclasses.replace(QUICK, exact_chains=50)
    level = exact_level(ENTRY, recipe, MODEL, None, settings, np.random.default_rng(0))
    frequencies = [c for c in level.checks if "fast_checks" in c.numbers]
    assert len(frequencies) == 2
    assert [c.numbers["fast_checks"] for c in frequencies] == [3, 3]
    assert [c.numbers["fast_failures"] for c in frequencies] == [0, 0]
    broken("_merge", staticmethod(_merge_without_topic_totals))
    level = exact_level(ENTRY, recipe, MODEL, None, settings, np.random.default_rng(0))
    frequencies = [c for c in level.checks if "fast_checks" in c.numbers]
    assert all(not c.passed and f"FAIL {COUNTS}" in c.detail for c in frequencies)
