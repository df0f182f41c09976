"""Approximate distributed collapsed Gibbs sampling of the aspect model (AD-LDA).

.. warning::

   **AD-LDA is approximate: it is not a valid MCMC sampler of the posterior.** With more than
   one shard, the tokens of one shard are drawn against word-topic counts that miss the other
   shards' moves since the last merge, so the chain's stationary law (if it has one) is not
   ``p(z | w)``. Newman, Asuncion, Smyth & Welling (2009, "Distributed algorithms for topic
   models", JMLR 10) found its held-out perplexity indistinguishable from the exact sampler's;
   ``benchmarks/RESULTS_ad_lda.md`` measures the gap here. Use it for throughput on large
   corpora, not for calibrated posterior uncertainty (simulation-based calibration and the
   exact-enumeration tests of :func:`latentzoo.validate` apply to ``method="gibbs"`` only; its
   exact level checks what is exact about AD-LDA: :func:`validation_checks`).

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

The family hands its exact Gibbs set-up and sweep kernel to :func:`ad_lda_entry` (the aspect
model: ``ad_lda = ad_lda_entry(_prepare_gibbs, gibbs_sweep)`` in
:mod:`latentzoo.inference.aspect`), so this module imports nothing of the family and the family
module can register the method without an import loop. The sweep holds the GIL: give a Dask
cluster process workers with one thread each. On Dask each round ships every shard's
assignments and document-topic rows to its task and back (the word-topic table is broadcast
once per round), which pays only when a shard's sweep takes far longer than that round trip
(``benchmarks/RESULTS_ad_lda.md``).
"""

from __future__ import annotations

import functools
from typing import Any

import numpy as np

from latentzoo.inference.annealing import balanced_row_chunks
from latentzoo.inference.checks import Check
from latentzoo.inference.family import anything, integer
from latentzoo.inference.mcmc import gibbs_entry, splitmix_seeds

__all__ = [
    "ADLDAGibbs",
    "AD_LDA_DOC",
    "AD_LDA_OPTIONS",
    "ad_lda_entry",
    "count_violation",
    "rounds_to_move_every_token",
    "shard_round",
    "validation_checks",
]

SHARDS = integer("shards", 2, "document shards, each sweeping against its own copy of the counts")
MERGE_EVERY = integer("merge_every", 1, "sweeps of each shard between merges of the counts")
CLIENT = anything(
    "client",
    None,
    "a dask.distributed Client: run each shard's sweeps as a task (None: in this process)",
    "None or a dask.distributed Client",
)
AD_LDA_OPTIONS = (SHARDS, MERGE_EVERY, CLIENT)
"""The options AD-LDA adds to those of the family's exact Gibbs method."""


def shard_round(sweep, doc_ptr, words, z, n_doc_topic, n_word_topic, n_topic, alpha, eta,
                rng_state, sweeps):  # fmt: skip
    """``sweeps`` calls of the exact sweep kernel ``sweep`` on one shard, in place on the arrays.

    ``doc_ptr`` is the shard's token pointer (starting at 0), ``words``, ``z`` and
    ``n_doc_topic`` its tokens' words, topics and its documents' rows; ``n_word_topic`` and
    ``n_topic`` the shard's private copies of the global counts; ``rng_state`` its one-element
    splitmix64 stream. Returns the arrays that changed, so that a Dask task sends them back.

    Examples
    --------
    >>> from latentzoo.data import load
    >>> from latentzoo.inference.aspect import AspectGibbs, gibbs_sweep
    >>> from latentzoo.models.aspect import AspectModel
    >>> sampler = AspectGibbs(AspectModel(2), load("toy"))
    >>> s = sampler.init(np.random.default_rng(0))
    >>> out = shard_round(gibbs_sweep, sampler.doc_ptr, sampler.words, s.z, s.n_doc_topic,
    ...                   s.n_word_topic, s.n_topic, 1.1, 1.01, s.rng_state, 2)
    >>> bool(np.array_equal(out[3], np.bincount(s.z, minlength=2)))
    True
    """
    for _ in range(sweeps):
        sweep(doc_ptr, words, z, n_doc_topic, n_word_topic, n_topic, alpha, eta, rng_state)
    return z, n_doc_topic, n_word_topic, n_topic, rng_state


class ADLDAGibbs:
    """AD-LDA around a family's exact collapsed sampler: its sweep run per shard, the counts
    merged per round.

    **Approximate** for ``shards > 1`` (see :mod:`latentzoo.inference.ad_lda`). The state is the
    exact sampler's (labels ``z``, ``n_doc_topic``, ``n_word_topic``, ``n_topic``, ``rng_state``)
    with one splitmix64 stream per shard in ``rng_state``; :meth:`step` is one round
    (``merge_every`` sweeps per shard, then the merge). Everything else (draws, scoring, the log
    joint) is the exact sampler's, looked up on it (the draws use the first shard's stream).

    Parameters
    ----------
    exact : CollapsedGibbs
        The exact sampler, e.g. :class:`~latentzoo.inference.aspect.AspectGibbs`: its tokens
        (``doc_ptr``, ``words``), ``model`` (``alpha``, ``eta``, ``n_components``), count tables
        (``_tables_of``) and log joint are used as they are.
    sweep : numba function
        Its sweep kernel, ``sweep(doc_ptr, words, z, n_doc_topic, n_word_topic, n_topic, alpha,
        eta, rng_state)`` (:func:`~latentzoo.inference.aspect.gibbs_sweep`).
    shards : int
        Document blocks of nearly equal token counts (fewer when documents are too few to give
        each shard a token).
    merge_every : int
        Sweeps of each shard between merges.
    client : dask.distributed.Client or None
        Run the shards as Dask tasks (same result as in process).

    Examples
    --------
    >>> from latentzoo.data import load
    >>> from latentzoo.inference.aspect import AspectGibbs, gibbs_sweep
    >>> from latentzoo.models.aspect import AspectModel
    >>> sampler = ADLDAGibbs(AspectGibbs(AspectModel(2), load("toy")), gibbs_sweep, shards=2)
    >>> state, info = sampler.step(sampler.init(rng := np.random.default_rng(0)), rng)
    >>> int(state.n_topic.sum()) == load("toy").total, state.rng_state.shape
    (True, (2,))
    """

    def __init__(self, exact, sweep, shards: int = 2, merge_every: int = 1, client: Any = None):
        SHARDS.validate(shards)
        MERGE_EVERY.validate(merge_every)
        if client is not None and not callable(getattr(client, "submit", None)):
            raise ValueError(f"client must be None or a dask.distributed Client, got {client!r}")
        self.exact = exact
        self.sweep = sweep
        self.shards = shards
        self.merge_every = merge_every
        self.client = client
        self.bounds = balanced_row_chunks(exact.doc_ptr, shards)
        self._scattered = None

    def __getattr__(self, name: str):
        # What AD-LDA does not change (draw, scored_draw, log_joint, model, data, ...) is the
        # exact sampler's.
        if name.startswith("__") or name == "exact":
            raise AttributeError(name)
        return getattr(self.exact, name)

    def init(self, rng: np.random.Generator, z=None):
        """Uniform (or the given) topics, their count tables and one stream per shard.

        The topics and the streams are drawn from ``rng`` in the exact sampler's order, so with
        one shard the state is the exact sampler's.
        """
        exact = self.exact
        if z is None:
            z = rng.integers(0, exact.model.n_components, size=exact.words.shape[0])
        else:
            z = np.asarray(z, dtype=np.int64).copy()
        return exact.state_type(z, *exact._tables_of(z), splitmix_seeds(rng, self.shards))

    def step(self, state, rng: np.random.Generator):
        """One round (in place) and the exact sampler's ``info`` of the new state."""
        self._round(state)
        return state, self.exact.info_type(self.exact.log_joint(state))

    def advance(self, state, rng: np.random.Generator):
        """One round (in place) without its ``info``."""
        self._round(state)
        return state

    def _shard_arrays(self, state, p: int):
        """Shard ``p``'s token pointer, words (static) and its views of ``z`` and the
        document-topic rows (written in place)."""
        first, last = self.bounds[p], self.bounds[p + 1]
        doc_ptr = self.exact.doc_ptr
        start, stop = doc_ptr[first], doc_ptr[last]
        return (
            doc_ptr[first : last + 1] - start,
            self.exact.words[start:stop],
            state.z[start:stop],
            state.n_doc_topic[first:last],
        )

    def _round(self, state) -> None:
        """Each shard's ``merge_every`` sweeps on private copies of the global counts, then the
        global counts plus the sum of the shards' changes."""
        model = self.exact.model
        alpha, eta = float(model.alpha), float(model.eta)
        word_topic, topic = state.n_word_topic.copy(), state.n_topic.copy()
        if self.client is not None:
            futures = self._submit(state, word_topic, topic, alpha, eta)
            for p, result in enumerate(self.client.gather(futures)):
                _, _, z, n_doc_topic = self._shard_arrays(state, p)
                z[:], n_doc_topic[:], state.rng_state[p] = result[0], result[1], result[4][0]
                self._merge(state, word_topic, topic, result[2], result[3])
            return
        for p in range(len(self.bounds) - 1):
            doc_ptr, words, z, n_doc_topic = self._shard_arrays(state, p)
            local_word_topic, local_topic = word_topic.copy(), topic.copy()
            shard_round(
                self.sweep, doc_ptr, words, z, n_doc_topic, local_word_topic, local_topic, alpha,
                eta, state.rng_state[p : p + 1], self.merge_every,
            )  # fmt: skip
            self._merge(state, word_topic, topic, local_word_topic, local_topic)

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
                    self.sweep,
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


def _remote_round(sweep, static, z, n_doc_topic, word_topic, topic, alpha, eta, rng_state,
                  sweeps):  # fmt: skip
    """:func:`shard_round` on a Dask worker, on its own copies of the round's global counts."""
    doc_ptr, words = static
    return shard_round(sweep, doc_ptr, words, z, n_doc_topic, word_topic.copy(), topic.copy(),
                       alpha, eta, rng_state, sweeps)  # fmt: skip


AD_LDA_DOC = """Approximate distributed collapsed Gibbs sampling of the aspect model (AD-LDA).

    **Approximate: not a valid MCMC sampler of the posterior when** ``shards > 1`` (see
    :mod:`latentzoo.inference.ad_lda`): its draws, R-hat and ESS describe the approximate chain,
    not ``p(theta, phi | data)``. ``shards=1`` is the exact sampler (``method="gibbs"``) bit for
    bit. Everything else (options, the ``InferenceData`` returned, ``param_draws``) is that of
    the family's ``gibbs``; a draw or a tuning step counts rounds (each ``merge_every`` sweeps
    per shard). The attributes keep ``method="gibbs"`` (the same layout for scoring) and add
    ``sampler="ad_lda (approximate)"``.

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
    >>> from latentzoo.models.aspect import AspectModel
    >>> idata = ad_lda(AspectModel(2), load("toy"), chains=2, draws=20, tune=10, random_state=0,
    ...                progressbar=False, keep_params=False, shards=2)
    >>> idata.posterior["loglik"].shape, idata.posterior.attrs["sampler"]
    ((2, 20), 'ad_lda (approximate)')
    """
"""The docstring of a family's ``ad_lda`` method (:func:`ad_lda_entry`)."""


def ad_lda_entry(prepare, sweep, doc: str = AD_LDA_DOC):
    """A family's ``ad_lda`` method from its exact Gibbs ``prepare`` and its sweep kernel.

    ``prepare`` is the family's side of its ``gibbs`` (:func:`~latentzoo.inference.mcmc.gibbs_entry`);
    the exact sampler it builds is wrapped in :class:`ADLDAGibbs` and everything else (checks,
    draws, coordinates, the ``InferenceData``) is the exact method's. The function reports the
    module of ``prepare`` as its own.

    Examples
    --------
    >>> from latentzoo.inference.aspect import _prepare_gibbs, gibbs_sweep
    >>> ad_lda_entry(_prepare_gibbs, gibbs_sweep).__name__
    'ad_lda'
    """

    def prepare_ad_lda(model, data, *, shards=2, merge_every=1, client=None, **options):
        setup = prepare(model, data, **options)
        sampler = ADLDAGibbs(setup.sampler, sweep, shards, merge_every, client)
        return setup._replace(sampler=sampler, desc=f"AD-LDA ({len(sampler.bounds) - 1} shards)")

    prepare_ad_lda.__module__ = prepare.__module__
    entry = gibbs_entry(prepare_ad_lda, doc)

    @functools.wraps(entry)
    def ad_lda(model, data, **options):
        # The attributes keep method="gibbs" (what scoring code reads: the same InferenceData
        # layout) and say which sampler drew it, so a saved file cannot pass for exact draws.
        idata = entry(model, data, **options)
        for group in idata.groups():
            idata[group].attrs["sampler"] = "ad_lda (approximate)"
        return idata

    ad_lda.__name__ = ad_lda.__qualname__ = "ad_lda"
    # The docstring's examples run once, on the method (not again on the inner entry).
    entry.__doc__ = "The Gibbs entry point behind ``ad_lda``."
    return ad_lda


# ------------------------------------------------------------------------------ validation
MOVE_FALSE_ALARM = 1e-4
"""Bound on the probability that correct code fails the token-move check of one problem
(:func:`rounds_to_move_every_token`)."""

MOVE_MAX_ROUNDS = 10_000
"""The token-move check is not run where its bound needs more rounds (sparse priors)."""


def count_violation(sampler, state) -> float:
    """How far ``state``'s count tables are from the counts of its assignments ``z``.

    The tables are recomputed from the tokens (vectorised ``np.bincount`` over ``doc * K + z``,
    ``word * K + z`` and ``z``); the result is the largest absolute difference over
    ``n_doc_topic``, ``n_word_topic``, ``n_topic`` and ``n_topic`` minus the column sums of
    ``n_word_topic``, or ``inf`` when an assignment is outside ``0 .. K - 1`` or a table has the
    wrong shape. 0 for every state of a correct sampler (integer counts held in float64).

    Examples
    --------
    >>> from latentzoo.data import load
    >>> from latentzoo.inference.aspect import AspectGibbs
    >>> from latentzoo.models.aspect import AspectModel
    >>> sampler = AspectGibbs(AspectModel(2), load("toy"))
    >>> state = sampler.init(np.random.default_rng(0))
    >>> count_violation(sampler, state)
    0.0
    >>> state.n_topic[0] += 1
    >>> count_violation(sampler, state)
    1.0
    """
    k = sampler.model.n_components
    n_docs, n_words = sampler.data.n_rows, sampler.data.n_cols
    z = np.asarray(state.z)
    if z.shape != sampler.words.shape or np.any((z < 0) | (z >= k)):
        return np.inf
    docs = np.repeat(np.arange(n_docs), np.diff(sampler.doc_ptr))
    words = sampler.words
    tables = {
        "n_doc_topic": np.bincount(docs * k + z, minlength=n_docs * k).reshape(n_docs, k),
        "n_word_topic": np.bincount(words * k + z, minlength=n_words * k).reshape(n_words, k),
        "n_topic": np.bincount(z, minlength=k),
    }
    worst = 0.0
    for name, want in tables.items():
        got = np.asarray(getattr(state, name))
        if got.shape != want.shape:
            return np.inf
        worst = max(worst, float(np.abs(got - want).max(initial=0.0)))
    column_sums = np.asarray(state.n_word_topic).sum(axis=0)
    return max(worst, float(np.abs(np.asarray(state.n_topic) - column_sums).max(initial=0.0)))


def rounds_to_move_every_token(sampler, false_alarm: float = MOVE_FALSE_ALARM):
    """Rounds after which every token has changed its topic at least once, except with
    probability at most ``false_alarm`` (None when ``K = 1``: no token can move).

    When the sweep visits token ``t`` (document ``d`` of length ``L_d``, word ``w`` with ``c_w``
    tokens in the corpus), it draws ``P(z_t = k | rest) ∝ (n_dk + alpha) (n_wk + eta) / (n_k + M
    eta)`` with ``t`` removed (:func:`~latentzoo.inference.aspect.gibbs_sweep`). On any count
    tables of ``N`` tokens -- AD-LDA's private copies included: they are the counts of the
    shard's current topics and the other shards' topics at the start of the round -- each other
    topic's weight is at least ``w_min = alpha eta / (N - 1 + M eta)`` and the current topic's at
    most ``w_max_t = (L_d - 1 + alpha) (c_w - 1 + eta) / (M eta)``, so the token moves with
    probability at least ``q_t = (K - 1) w_min / ((K - 1) w_min + w_max_t)`` whatever happened
    before. With one sweep per round it stays put for ``R`` rounds with probability at most
    ``(1 - q_t)^R``, and by the union bound some token never moves with probability at most
    ``N (1 - min_t q_t)^R``; the result is the smallest ``R`` that makes this ``false_alarm``.

    Examples
    --------
    >>> from latentzoo.data import CoOccurrence
    >>> from latentzoo.inference.aspect import AspectGibbs
    >>> from latentzoo.models.aspect import AspectModel
    >>> data = CoOccurrence([[2, 1, 0], [0, 1, 2], [0, 0, 1]])
    >>> rounds_to_move_every_token(AspectGibbs(AspectModel(2), data))
    285
    """
    model = sampler.model
    k, alpha, eta = model.n_components, float(model.alpha), float(model.eta)
    if k < 2:
        return None
    words, n = sampler.words, len(sampler.words)
    m = sampler.data.n_cols
    lengths = np.diff(sampler.doc_ptr)
    length = np.repeat(lengths, lengths)
    count = np.bincount(words, minlength=m)[words]
    w_min = alpha * eta / (n - 1 + m * eta)
    w_max = (length - 1 + alpha) * (count - 1 + eta) / (m * eta)
    q = (k - 1) * w_min / ((k - 1) * w_min + w_max)
    return int(np.ceil(np.log(n / false_alarm) / -np.log1p(-q.min())))


def _one_shard_mismatch(exact, one, seed: int, sweeps: int) -> str:
    """The first field in which ``one`` (AD-LDA, one shard) leaves the exact sampler's chain from
    ``seed`` within ``sweeps`` steps ("" when none: the same chain bit for bit)."""
    runs = []
    for sampler in (exact, one):
        rng = np.random.default_rng(seed)
        state = sampler.init(rng)
        path = []
        for _ in range(sweeps):
            state, info = sampler.step(state, rng)
            path.append(np.concatenate([state.z, np.ravel(info)]))
        runs.append((np.stack(path), state._asdict()))
    (path, want), (got_path, got) = runs
    if not np.array_equal(path, got_path):
        first = int(np.argmax(np.any(path != got_path, axis=1))) + 1
        return f"z or the step's info (from sweep {first})"
    return next((name for name in want if not np.array_equal(want[name], got[name])), "")


def validation_checks(gibbs, ad_lda, model, data, rng, sweeps: int = 30, chains: int = 4,
                      shards: int = 2, level: str = "exact") -> list:  # fmt: skip
    """What is exact about AD-LDA, checked on one problem: three :class:`Check` s.

    ``gibbs`` and ``ad_lda`` are the family's registered methods (their ``prepare``: the
    production samplers); ``rng`` seeds the chains.

    1. *One shard is the exact sampler*: from ``chains`` seeds, ``ad_lda`` with ``shards=1``
       makes the exact sampler's chain bit for bit over ``sweeps`` steps (every ``z``, every
       step's ``info``, the final tables and streams). Deterministic; a chain that equals
       ``gibbs``'s has its law, which the exact level tests against enumeration.
    2. *Counts after every round*: ``ad_lda`` with ``shards`` shards, run for the rounds of 3
       (at least ``sweeps``; ``10 sweeps`` when 3 is not run), holds count tables equal to the counts of its assignments after
       every round (:func:`count_violation` = 0). Deterministic: the merge is exact.
    3. *Every token moves*: in that run every token changes its topic at least once, the rounds
       being :func:`rounds_to_move_every_token` (false alarm at most :data:`MOVE_FALSE_ALARM`);
       a shard that skips a document never moves its tokens. Not run when ``K = 1`` or the bound
       needs more than :data:`MOVE_MAX_ROUNDS` rounds (said in check 2's detail).
    """
    options = {"chains": 1, "draws": 1}
    exact = gibbs.prepare(model, data, **options).sampler
    one = ad_lda.prepare(model, data, shards=1, **options).sampler
    seeds = rng.integers(2**63, size=chains)
    found = (_one_shard_mismatch(exact, one, int(seed), sweeps) for seed in seeds)
    mismatch = next((where for where in found if where), "")
    checks = [Check(
        level, "ad_lda with one shard is the gibbs chain bit for bit", not mismatch,
        (f"differs in {mismatch}" if mismatch else "identical")
        + f" ({chains} chains x {sweeps} sweeps from the same seeds; deterministic)",
        {"chains": chains, "sweeps": sweeps},
    )]  # fmt: skip

    sampler = ad_lda.prepare(model, data, shards=shards, **options).sampler
    n_shards = len(sampler.bounds) - 1
    needed = rounds_to_move_every_token(sampler)
    moves = needed is not None and needed <= MOVE_MAX_ROUNDS
    rounds = max(needed, sweeps) if moves else 10 * sweeps
    generator = np.random.default_rng(rng.integers(2**63))
    state = sampler.init(generator)
    worst, moved = count_violation(sampler, state), np.zeros(len(state.z), dtype=bool)
    for _ in range(rounds):
        before = state.z.copy()
        state = sampler.advance(state, generator)
        worst = max(worst, count_violation(sampler, state))
        moved |= state.z != before
    what = f"ad_lda with {n_shards} shards"
    checks.append(Check(
        level, f"{what}: merged counts = counts of its assignments after every round",
        worst == 0,
        f"largest count difference {worst:g} over {rounds} rounds (0 when exact; deterministic)"
        + ("" if moves else "; token-move check not run: "
           + ("K = 1" if needed is None else f"its bound needs {needed} rounds at these priors")),
        {"violation": worst, "rounds": rounds},
    ))  # fmt: skip
    if moves:
        stuck = int((~moved).sum())
        checks.append(Check(
            level, f"{what}: every token changes topic", stuck == 0,
            f"{stuck} of {len(moved)} tokens never moved in {rounds} rounds (correct code: "
            f"probability at most {MOVE_FALSE_ALARM:g})",
            {"stuck": stuck, "rounds": rounds, "false_alarm": MOVE_FALSE_ALARM},
        ))  # fmt: skip
    return checks
