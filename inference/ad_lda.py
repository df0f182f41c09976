"""Approximate distributed collapsed Gibbs sampling of the aspect model (AD-LDA).

.. warning::

   **AD-LDA is approximate: it is not a valid MCMC sampler of the posterior.** With more than
   one shard, the tokens of one shard are drawn against word-topic counts that miss the other
   shards' moves since the last merge, so the chain's stationary law (if it has one) is not
   ``p(z | w)``. Newman, Asuncion, Smyth & Welling (2009, "Distributed algorithms for topic
   models", JMLR 10) found its held-out perplexity indistinguishable from the exact sampler's;
   ``benchmarks/RESULTS_ad_lda.md`` measures the gap here. Use it for throughput on large
   corpora, not for calibrated posterior uncertainty (simulation-based calibration and the
   exact-enumeration tests of :func:`latentzoo.validate` apply to ``method="gibbs"`` only).

The documents are split into ``shards`` contiguous blocks of nearly equal token counts. One step
of the chain is one round: every shard runs ``merge_every`` sweeps of the exact sampler's numba
kernel (:func:`~latentzoo.inference.aspect.gibbs_sweep`, called, not copied) over its own
tokens, on its own document-topic rows and on a private copy of the global word-topic and topic
counts taken at the start of the round, drawing from its own splitmix64 stream; then the global
counts become ``global + sum_p (local_p - global)``. Since every token belongs to exactly one
shard, the merged counts are exactly the counts of the new assignments (integers held in
float64, so the sum is exact whatever the order).

The shards of a round are independent given the round's global counts and their streams, so
running them one after the other in this process (the default) or as Dask tasks (``client=``)
gives the same result bit for bit, and one ``random_state`` gives one result. With one shard the
private copy is the global table and the round is the exact sampler's sweep: ``shards=1`` equals
``method="gibbs"`` bit for bit (same seed; tested).
"""

from __future__ import annotations

import functools
from typing import Any

import numpy as np

from latentzoo.inference.annealing import balanced_row_chunks
from latentzoo.inference.aspect import (
    PARAM_DRAWS,
    AspectGibbs,
    GibbsState,
    _prepare_gibbs,
    gibbs_sweep,
)
from latentzoo.inference.family import GIBBS_METHOD_OPTIONS, anything, integer
from latentzoo.inference.mcmc import gibbs_entry, splitmix_seeds
from latentzoo.models.aspect import AspectModel

__all__ = ["ADLDAGibbs", "ad_lda", "AD_LDA_OPTIONS", "shard_round"]

SHARDS = integer("shards", 2, "document shards, each sweeping against its own copy of the counts")
MERGE_EVERY = integer("merge_every", 1, "sweeps of each shard between merges of the counts")
CLIENT = anything(
    "client",
    None,
    "a dask.distributed Client: run each shard's sweeps as a task (None: in this process)",
    "None or a dask.distributed Client",
)
AD_LDA_OPTIONS = (*GIBBS_METHOD_OPTIONS, PARAM_DRAWS, SHARDS, MERGE_EVERY, CLIENT)
"""The options of the aspect family's ``ad_lda`` method."""


def shard_round(doc_ptr, words, z, n_doc_topic, n_word_topic, n_topic, alpha, eta, rng_state,
                sweeps):  # fmt: skip
    """``sweeps`` exact collapsed Gibbs sweeps of one shard, in place on the arrays passed.

    ``doc_ptr`` is the shard's token pointer (starting at 0), ``words``, ``z`` and
    ``n_doc_topic`` its tokens' words, topics and its documents' rows; ``n_word_topic`` and
    ``n_topic`` the shard's private copies of the global counts; ``rng_state`` its one-element
    splitmix64 stream. Returns the arrays that changed, so that a Dask task sends them back.

    Examples
    --------
    >>> from latentzoo.data import load
    >>> sampler = AspectGibbs(AspectModel(2), load("toy"))
    >>> s = sampler.init(np.random.default_rng(0))
    >>> out = shard_round(sampler.doc_ptr, sampler.words, s.z, s.n_doc_topic, s.n_word_topic,
    ...                   s.n_topic, 1.1, 1.01, s.rng_state, 2)
    >>> bool(np.array_equal(out[3], np.bincount(s.z, minlength=2)))
    True
    """
    for _ in range(sweeps):
        gibbs_sweep(doc_ptr, words, z, n_doc_topic, n_word_topic, n_topic, alpha, eta, rng_state)
    return z, n_doc_topic, n_word_topic, n_topic, rng_state


class ADLDAGibbs(AspectGibbs):
    """AD-LDA: the aspect model's collapsed Gibbs sweep run per shard, counts merged per round.

    **Approximate** for ``shards > 1`` (see :mod:`latentzoo.inference.ad_lda`). The state is the
    exact sampler's :class:`~latentzoo.inference.aspect.GibbsState` with one splitmix64 stream
    per shard in ``rng_state``; :meth:`step` is one round (``merge_every`` sweeps per shard,
    then the merge). Draws, scoring and the log joint are the exact sampler's (the draws use the
    first shard's stream).

    Parameters
    ----------
    model : AspectModel
    data : CoOccurrence
    shards : int
        Document blocks of nearly equal token counts (fewer when documents are too few to give
        each shard a token).
    merge_every : int
        Sweeps of each shard between merges.
    client : dask.distributed.Client or None
        Run the shards as Dask tasks (same result as in-process).

    Examples
    --------
    >>> from latentzoo.data import load
    >>> sampler = ADLDAGibbs(AspectModel(2), load("toy"), shards=2)
    >>> state, info = sampler.step(sampler.init(rng := np.random.default_rng(0)), rng)
    >>> int(state.n_topic.sum()) == load("toy").total, state.rng_state.shape
    (True, (2,))
    """

    def __init__(self, model: AspectModel, data, shards: int = 2, merge_every: int = 1,
                 client: Any = None):  # fmt: skip
        super().__init__(model, data)
        self._configure(shards, merge_every, client)

    @classmethod
    def wrapping(cls, exact: AspectGibbs, shards: int, merge_every: int, client: Any = None):
        """An AD-LDA sampler sharing the token arrays of the exact sampler ``exact`` (no second
        expansion of the corpus into tokens)."""
        sampler = cls.__new__(cls)
        sampler.__dict__.update(exact.__dict__)
        sampler._configure(shards, merge_every, client)
        return sampler

    def _configure(self, shards, merge_every, client):
        SHARDS.validate(shards)
        MERGE_EVERY.validate(merge_every)
        if client is not None and not callable(getattr(client, "submit", None)):
            raise ValueError(f"client must be None or a dask.distributed Client, got {client!r}")
        self.shards = shards
        self.merge_every = merge_every
        self.client = client
        self.bounds = balanced_row_chunks(self.doc_ptr, shards)
        self._scattered = None

    def init(self, rng: np.random.Generator, z=None) -> GibbsState:
        """Uniform (or the given) topics, their count tables and one stream per shard.

        The topics and the streams are drawn from ``rng`` in the exact sampler's order, so with
        one shard the state is the exact sampler's.
        """
        k = self.model.n_components
        if z is None:
            z = rng.integers(0, k, size=self.words.shape[0])
        else:
            z = np.asarray(z, dtype=np.int64).copy()
        return GibbsState(z, *self._tables_of(z), splitmix_seeds(rng, self.shards))

    def _shard_arrays(self, state: GibbsState, p: int):
        """Shard ``p``'s token pointer, words (static) and its views of ``z`` and the
        document-topic rows (written in place)."""
        first, last = self.bounds[p], self.bounds[p + 1]
        start, stop = self.doc_ptr[first], self.doc_ptr[last]
        return (
            self.doc_ptr[first : last + 1] - start,
            self.words[start:stop],
            state.z[start:stop],
            state.n_doc_topic[first:last],
        )

    def _sweep(self, state: GibbsState) -> tuple:
        """One round: each shard's ``merge_every`` sweeps on private copies of the global
        counts, then the global counts plus the sum of the shards' changes."""
        alpha, eta = float(self.model.alpha), float(self.model.eta)
        word_topic, topic = state.n_word_topic.copy(), state.n_topic.copy()
        n_shards = len(self.bounds) - 1
        if self.client is None:
            for p in range(n_shards):
                doc_ptr, words, z, n_doc_topic = self._shard_arrays(state, p)
                local_word_topic, local_topic = word_topic.copy(), topic.copy()
                shard_round(
                    doc_ptr, words, z, n_doc_topic, local_word_topic, local_topic, alpha, eta,
                    state.rng_state[p : p + 1], self.merge_every,
                )  # fmt: skip
                self._merge(state, word_topic, topic, local_word_topic, local_topic)
            return ()
        futures = self._submit(state, word_topic, topic, alpha, eta)
        for p, result in enumerate(self.client.gather(futures)):
            _, _, z, n_doc_topic = self._shard_arrays(state, p)
            z[:], n_doc_topic[:], local_word_topic, local_topic, state.rng_state[p] = (
                result[0], result[1], result[2], result[3], result[4][0],
            )  # fmt: skip
            self._merge(state, word_topic, topic, local_word_topic, local_topic)
        return ()

    def _submit(self, state, word_topic, topic, alpha, eta):
        """One Dask task per shard; the static token arrays are scattered once per sampler and
        the round's global counts once per round."""
        client = self.client
        n_shards = len(self.bounds) - 1
        if self._scattered is None:
            static = [self._shard_arrays(state, p)[:2] for p in range(n_shards)]
            self._scattered = client.scatter(static)
        shared_word_topic, shared_topic = client.scatter([word_topic, topic], broadcast=True)
        futures = []
        for p in range(n_shards):
            _, _, z, n_doc_topic = self._shard_arrays(state, p)
            futures.append(
                client.submit(
                    _remote_round,
                    self._scattered[p],
                    z.copy(),
                    n_doc_topic.copy(),
                    shared_word_topic,
                    shared_topic,
                    alpha,
                    eta,
                    state.rng_state[p : p + 1].copy(),
                    self.merge_every,
                    pure=False,
                )  # fmt: skip
            )
        return futures

    @staticmethod
    def _merge(state, word_topic, topic, local_word_topic, local_topic):
        """Add one shard's change of the counts to the global tables (exact: integer counts)."""
        np.add(state.n_word_topic, local_word_topic - word_topic, out=state.n_word_topic)
        np.add(state.n_topic, local_topic - topic, out=state.n_topic)


def _remote_round(static, z, n_doc_topic, word_topic, topic, alpha, eta, rng_state, sweeps):
    """:func:`shard_round` on a Dask worker, on its own copies of the round's global counts."""
    doc_ptr, words = static
    return shard_round(doc_ptr, words, z, n_doc_topic, word_topic.copy(), topic.copy(), alpha,
                       eta, rng_state, sweeps)  # fmt: skip


def _prepare_ad_lda(model, data, *, shards=2, merge_every=1, client=None, **options):
    """The aspect family's Gibbs setup (:func:`latentzoo.inference.aspect.gibbs`) with the exact
    sampler replaced by :class:`ADLDAGibbs` on the same tokens."""
    setup = _prepare_gibbs(model, data, **options)
    sampler = ADLDAGibbs.wrapping(setup.sampler, shards, merge_every, client)
    return setup._replace(sampler=sampler, desc=f"AD-LDA ({len(sampler.bounds) - 1} shards)")


_ad_lda_entry = gibbs_entry(
    _prepare_ad_lda,
    """Approximate distributed collapsed Gibbs sampling of the aspect model (AD-LDA).

    **Approximate: not a valid MCMC sampler of the posterior when** ``shards > 1`` (see
    :mod:`latentzoo.inference.ad_lda`): its draws, R-hat and ESS describe the approximate chain,
    not ``p(theta, phi | data)``. ``shards=1`` is the exact sampler (``method="gibbs"``) bit for
    bit. Everything else (options, the ``InferenceData`` returned, ``param_draws``) is that of
    :func:`latentzoo.inference.aspect.gibbs`; a draw or a tuning step counts rounds (each
    ``merge_every`` sweeps per shard).

    Parameters
    ----------
    shards : int
        Contiguous document blocks of nearly equal token counts (default 2).
    merge_every : int
        Sweeps of each shard between merges of the word-topic counts (default 1: after every
        sweep, the most accurate).
    client : dask.distributed.Client or None
        Run each shard as a Dask task; the result is the in-process one bit for bit.

    Examples
    --------
    >>> from latentzoo.data import load
    >>> idata = ad_lda(AspectModel(2), load("toy"), chains=2, draws=20, tune=10, random_state=0,
    ...                progressbar=False, keep_params=False, shards=2)
    >>> idata.posterior["loglik"].shape
    (2, 20)
    >>> idata.posterior.attrs["sampler"]
    'ad_lda (approximate)'
    """,
)


@functools.wraps(_ad_lda_entry)
def ad_lda(model, data, **options):
    # The attributes keep method="gibbs" (what scoring code reads: the same InferenceData
    # layout) and say which sampler drew it, so a saved file cannot pass for exact draws.
    idata = _ad_lda_entry(model, data, **options)
    for group in idata.groups():
        idata[group].attrs["sampler"] = "ad_lda (approximate)"
    return idata


ad_lda.__name__ = ad_lda.__qualname__ = "ad_lda"
_ad_lda_entry.__doc__ = "The Gibbs entry point behind :func:`ad_lda` (documented there)."
