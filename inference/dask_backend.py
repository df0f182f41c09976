"""Annealed EM on Dask: the corpus as row blocks, out of core from ``.npz`` shards or on a cluster.

The EM of the co-occurrence families is a sum over documents: one pass computes, per row block,
the block's new document-side parameters (the aspect model's ``theta``, a clustering's ``resp``)
and its share of the ``K x V`` sufficient statistics; the M-step of the word side needs only the
sum of those shares. So:

- **Owner computes.** Each block's document-side parameters are Dask futures kept on the worker
  that computed them; the pass of the next iteration is submitted with them as an argument, so
  the scheduler runs it where they (and, in memory, the block's scattered data) already live.
  Persisted futures were chosen over actors or ``workers=`` pins: the scheduler may still move a
  block when its worker dies (it recomputes the lost futures from their lineage), which a pin or
  an actor would forbid.
- **Word side on the workers.** The M-step of the word side is a task too, run where the root
  of the reduction lands; its output (a :class:`WordSide`: the parameters and what the passes
  read of them) is what the next passes take. Per iteration only the blocks' statistics travel
  between workers (none on one worker) and only the step's :class:`EMStats` (two floats) reach
  the client: the ``K x V`` tables never round-trip through it. The data are scattered once, the
  start's word side sent once.
- **Same kernels.** A block's pass calls the family's own in-memory pass (the aspect model's
  :func:`~latentzoo.inference.aspect.em_pass`, the mixture pass of :mod:`~latentzoo.inference.em`
  for the one-sided model, the cluster-abstraction and product-space passes, the mean-field
  row update of the two-sided model) on the block, with ``n_threads`` threads (1 per task by
  default); the numba kernels release the GIL (``nogil``).
- **Fixed reduction tree.** The statistics are summed pairwise in block order (``(0+1)+(2+3)``,
  ...), whatever the workers, so results are bit-identical with 1 or 10 workers. They differ
  from the in-memory fit only by the order of the floating-point sums (about 1e-15 relative
  on the word side; a mixture's posteriors, sums of hundreds of ``n log q``, within ~1e-13).
- **Driver unchanged.** :class:`DaskEM` is an :class:`~latentzoo.inference.annealing.EMProblem`:
  :func:`~latentzoo.inference.annealing.run_schedule` runs it like any other, beta a scalar.
  Knowing the schedule, each step submits the next iteration's tasks before it waits for its own
  :class:`EMStats`, so a worker goes from one M-step to the next passes without waiting for the
  client; a guess that a stage's early end (``tol``) makes wrong is cancelled, and the tasks are
  the same whenever they are submitted: the result does not change.
- **Out of core.** :func:`write_shards` stores the rows as ``.npz`` CSR shards (never pickles)
  with a manifest; a pass reads its shard from disk and drops it, so a worker holds one shard at
  a time plus the document-side parameters (``rows x K``, of two iterations while a step runs
  ahead of the driver). Shard blocks are also recomputable, so a worker killed mid-fit is
  survived: Dask recomputes the lost blocks and the result is the same. In-memory blocks are
  scattered and are lost with their worker.

A family takes part by declaring, on each method that has a Dask backend, a :class:`BlockEM`
class (its block pass and its M-step of the word side):
``Method(annealed_em, options, blocks=AspectBlocks)``; this module asks the method, never a
family name, and imports no family.
"""

from __future__ import annotations

import json
import os
import time
import uuid
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

import numpy as np

from latentzoo.data import CoOccurrence
from latentzoo.inference.annealing import (
    EMResult,
    EMStats,
    check_map_priors,
    check_schedule,
    run_schedule,
)
from latentzoo.inference.progress import progress_bar

__all__ = [
    "BlockEM",
    "DaskEM",
    "PassResult",
    "ShardSet",
    "WordSide",
    "annealed_em",
    "block_em_for",
    "local_cluster",
    "read_shard",
    "read_shards",
    "row_blocks",
    "tree_sum",
    "write_shards",
]

MANIFEST = "shards.json"
"""The file of a shard folder that lists its shards, their rows and the column labels' file."""
_FORMAT = "latentzoo-shards-1"


# ------------------------------------------------------------------------------ shards on disk
@dataclass(frozen=True)
class ShardSet:
    """A corpus stored as ``.npz`` CSR shards of consecutive rows (see :func:`write_shards`).

    Attributes
    ----------
    folder : pathlib.Path
    names : tuple of str
        The shard files, in row order.
    rows : tuple of int
        Rows per shard.
    n_cols : int
    """

    folder: Path
    names: tuple[str, ...]
    rows: tuple[int, ...]
    n_cols: int

    @property
    def n_rows(self) -> int:
        """Rows of the whole corpus."""
        return int(sum(self.rows))

    @property
    def paths(self) -> list[str]:
        """The shard files, in row order."""
        return [os.fspath(self.folder / name) for name in self.names]

    def col_labels(self) -> np.ndarray:
        """The column labels, read from the first shard."""
        return read_shard(self.paths[0], self.rows[0], self.n_cols).col_labels

    def skeleton(self) -> CoOccurrence:
        """The corpus's labels on an all-zero matrix: what a result's coordinates need, without
        holding the counts (each shard is read once, for its row labels)."""
        import scipy.sparse as sp

        row_labels = np.concatenate(
            [
                read_shard(path, n, self.n_cols).row_labels
                for path, n in zip(self.paths, self.rows, strict=True)
            ]
        )
        empty = sp.csr_matrix((self.n_rows, self.n_cols), dtype=np.int64)
        return CoOccurrence._trusted(empty, row_labels, self.col_labels())


def write_shards(data: CoOccurrence, folder, rows_per_shard: int) -> ShardSet:
    """Store ``data`` as ``.npz`` CSR shards of ``rows_per_shard`` consecutive rows.

    Each shard is written by :meth:`~latentzoo.data.CoOccurrence.to_npz` (no pickles), and
    ``shards.json`` lists them with their rows and the number of columns.

    Parameters
    ----------
    data : CoOccurrence
    folder : str or path-like
        Created if missing; existing shards of an earlier call are overwritten.
    rows_per_shard : int

    Returns
    -------
    ShardSet

    Examples
    --------
    >>> import tempfile
    >>> from latentzoo.data import load
    >>> shards = write_shards(load("toy"), tempfile.mkdtemp(), 4)
    >>> shards.names, shards.rows, shards.n_cols
    (('shard-00000.npz', 'shard-00001.npz'), (4, 2), 8)
    """
    if not isinstance(rows_per_shard, int | np.integer) or rows_per_shard < 1:
        raise ValueError(f"rows_per_shard must be a positive integer, got {rows_per_shard!r}")
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    names, rows = [], []
    for number, first in enumerate(range(0, data.n_rows, rows_per_shard)):
        last = min(first + rows_per_shard, data.n_rows)
        name = f"shard-{number:05d}.npz"
        data.subset(rows=np.arange(first, last)).to_npz(folder / name)
        names.append(name)
        rows.append(last - first)
    manifest = {"format": _FORMAT, "n_cols": data.n_cols, "shards": names, "rows": rows}
    (folder / MANIFEST).write_text(json.dumps(manifest, indent=1))
    return ShardSet(folder, tuple(names), tuple(rows), data.n_cols)


def read_shards(folder) -> ShardSet:
    """The :class:`ShardSet` of a folder written by :func:`write_shards` (its manifest checked;
    each shard is checked when a pass reads it, :func:`read_shard`).

    Raises
    ------
    ValueError
        If the folder has no readable manifest, or a listed shard is missing.

    Examples
    --------
    >>> import tempfile
    >>> from latentzoo.data import load
    >>> folder = tempfile.mkdtemp()
    >>> read_shards(write_shards(load("toy"), folder, 3).folder).rows
    (3, 3)
    """
    folder = Path(folder)
    try:
        manifest = json.loads((folder / MANIFEST).read_text())
        names = tuple(str(name) for name in manifest["shards"])
        rows = tuple(int(n) for n in manifest["rows"])
        n_cols = int(manifest["n_cols"])
        if manifest.get("format") != _FORMAT or len(names) != len(rows) or not names:
            raise ValueError("inconsistent manifest")
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise ValueError(
            f"{folder} is not a shard folder written by write_shards ({MANIFEST}: {exc})"
        ) from None
    missing = [name for name in names if not (folder / name).is_file()]
    if missing:
        raise ValueError(f"shard {folder / missing[0]} listed in {MANIFEST} is missing")
    return ShardSet(folder, names, rows, n_cols)


def read_shard(path, n_rows: int, n_cols: int) -> CoOccurrence:
    """One shard, refused with a ``ValueError`` naming it when it is corrupt or of another shape
    than its manifest says.

    Examples
    --------
    >>> import tempfile
    >>> from latentzoo.data import load
    >>> shards = write_shards(load("toy"), tempfile.mkdtemp(), 4)
    >>> read_shard(shards.paths[1], 3, 8)
    Traceback (most recent call last):
    ...
    ValueError: shard .../shard-00001.npz holds 2 x 8 counts; its manifest says 3 x 8
    """
    block = CoOccurrence.from_npz(path)  # its errors name the file
    if block.shape != (n_rows, n_cols):
        raise ValueError(
            f"shard {os.fspath(path)} holds {block.n_rows} x {block.n_cols} counts; its manifest "
            f"says {n_rows} x {n_cols}"
        )
    return block


def row_blocks(n_rows: int, blocks: int) -> list[tuple[int, int]]:
    """``blocks`` ranges of consecutive rows, as even as possible (the first ones one row longer).

    Examples
    --------
    >>> row_blocks(10, 3)
    [(0, 4), (4, 7), (7, 10)]
    """
    if not isinstance(blocks, int | np.integer) or not 1 <= blocks <= n_rows:
        raise ValueError(f"blocks must be an integer from 1 to the {n_rows} rows, got {blocks!r}")
    edges = np.linspace(0, n_rows, blocks + 1).round().astype(int)
    sizes = np.diff(edges)
    # Even sizes, longer blocks first: a deterministic function of (n_rows, blocks).
    sizes = np.sort(sizes)[::-1]
    edges = np.concatenate([[0], np.cumsum(sizes)])
    return [(int(a), int(b)) for a, b in zip(edges[:-1], edges[1:], strict=True)]


# ------------------------------------------------------------------------------ the reduction
def _add_stats(left: dict, right: dict) -> dict:
    """The elementwise sum of two blocks' statistics (arrays and scalars alike)."""
    return {name: left[name] + right[name] for name in left}


def tree_sum(items: list, add=_add_stats):
    """Sum ``items`` pairwise in order, ``((0+1)+(2+3))+4``: the same tree for any worker count.

    ``add`` may submit the sum as a task (the items being futures): the tree, hence every
    floating-point rounding, depends only on the number of blocks.

    Examples
    --------
    >>> tree_sum([1, 2, 3, 4, 5], add=lambda a, b: f"({a}+{b})")
    '(((1+2)+(3+4))+5)'
    """
    level = list(items)
    if not level:
        raise ValueError("nothing to sum")
    while len(level) > 1:
        paired = [add(level[i], level[i + 1]) for i in range(0, len(level) - 1, 2)]
        if len(level) % 2:
            paired.append(level[-1])
        level = paired
    return level[0]


# ------------------------------------------------------------------------------ family hooks
class BlockEM(Protocol):
    """What a family declares to run its annealed EM on Dask.

    ``row_names``: the document-side parameters (kept on the workers, one block each).
    ``start(data, rng)``: the family's own in-memory start on the whole data (same seed, same
    start). ``start_block(block, state)``: the document-side start of one shard from the random
    generator's state at its first row (None: the family needs the data in memory to start), and
    then ``advance(block, state)``, the generator's state after those draws, and
    ``start_globals(rng, col_totals)``, the word side.
    ``globals_of(params)``: what every block's pass reads of the word side (computed once per
    iteration, with the M-step, where it runs). Optionally ``prepare(block)``: what the passes
    read of a block that no iteration changes (e.g. its counts in the kernel's float type), built
    once per block in memory (at every pass for shards) and given to ``block_pass`` as its
    ``block``. ``block_pass(block, rows, shared, beta)``: ``(new_rows, stats)``, ``stats`` a
    dict of arrays and floats that add across blocks (``energy``, ``loglik``, ``prior`` and the
    family's tables). ``m_step(params, stats, beta)``: the new word side and the
    :class:`EMStats` of ``params``.
    """

    row_names: tuple[str, ...]

    def start(self, data: CoOccurrence, rng: np.random.Generator) -> dict: ...

    def globals_of(self, params: dict) -> dict: ...

    def block_pass(self, block: CoOccurrence, rows: dict, shared: dict, beta: float): ...

    def m_step(self, params: dict, stats: dict, beta: float) -> tuple[dict, EMStats]: ...


def block_em_for(family, method: str):
    """The :class:`BlockEM` class that ``family`` declares for ``method`` (its
    :attr:`~latentzoo.inference.family.Method.blocks`), or a one-line ``ValueError`` naming the
    method and the family's methods that have one.

    Parameters
    ----------
    family : latentzoo.inference.family.Family
    method : str

    Examples
    --------
    >>> from latentzoo.inference.aspect import FAMILY
    >>> block_em_for(FAMILY, "annealed_em").__name__
    'AspectBlocks'
    >>> block_em_for(FAMILY, "gibbs")
    Traceback (most recent call last):
    ...
    ValueError: aspect's method 'gibbs' has no Dask backend (use backend='memory'); aspect's methods with one: annealed_em
    """
    declared = family.methods.get(method)
    block_class = getattr(declared, "blocks", None)
    if block_class is None:
        with_blocks = [
            name for name, other in family.methods.items() if getattr(other, "blocks", None)
        ]
        which = (
            f"{family.name}'s methods with one: {', '.join(with_blocks)}"
            if with_blocks
            else f"{family.name} has no method with one"
        )
        raise ValueError(
            f"{family.name}'s method {method!r} has no Dask backend (use backend='memory'); {which}"
        )
    return block_class


# ------------------------------------------------------------------------------ worker tasks
def _load_block(source, n_rows: int, n_cols: int) -> CoOccurrence:
    """A block's data: the scattered block itself, or its shard read from disk."""
    if isinstance(source, str):
        return read_shard(source, n_rows, n_cols)
    return source


@dataclass(frozen=True)
class WordSide:
    """The word side of one iteration as a worker holds it: the family's parameters, what every
    block's pass reads of them (:meth:`BlockEM.globals_of`, computed once where they are) and the
    :class:`EMStats` of the previous iterate (the one thing the client fetches)."""

    params: dict
    shared: dict
    stats: EMStats | None = None


@dataclass(frozen=True)
class PassResult:
    """One block's pass: its new document side and its share of the statistics; or a node of
    the reduction tree, the statistics of several blocks summed (``rows`` None)."""

    rows: dict | None
    stats: dict


def _word_side_task(blocks: BlockEM, params: dict) -> WordSide:
    return WordSide(params, blocks.globals_of(params))


def _prepared(blocks: BlockEM, block):
    """What the family's pass reads of a block (its optional ``prepare``), or the block."""
    prepare = getattr(blocks, "prepare", None)
    return block if prepare is None else prepare(block)


def _block_task(blocks: BlockEM, source, n_rows, n_cols, rows, shared, beta):
    rows = rows.rows if isinstance(rows, Iterate) else rows
    if isinstance(shared, Iterate):
        shared = shared.word  # a single block's iteration (the final E-step reads it)
    if isinstance(shared, WordSide):
        shared = shared.shared  # on one worker the passes read the word side itself
    if isinstance(source, str):
        # A shard is read, and prepared, at every pass: a worker holds one at a time.
        block = _prepared(blocks, read_shard(source, n_rows, n_cols))
    else:
        block = source  # prepared once, when it was scattered
    return PassResult(*blocks.block_pass(block, rows, shared, float(beta)))


def _rows_of(result: PassResult) -> dict:
    return result.rows


def _add_partials(left: PassResult, right: PassResult) -> PassResult:
    return PassResult(None, _add_stats(left.stats, right.stats))


def _m_step_task(blocks: BlockEM, word: WordSide, total, beta) -> WordSide:
    """The M-step of the word side where the reduced statistics landed: the next passes read its
    output there, so the word side never travels through the client."""
    params, stats = blocks.m_step(word.params, total.stats, float(beta))
    return WordSide(params, blocks.globals_of(params), stats)


@dataclass(frozen=True)
class Iterate:
    """One iteration of a single block: its new rows and the word side made from its pass, the
    output of one task (:func:`_pass_and_m_step_task`)."""

    rows: dict
    word: WordSide


def _pass_and_m_step_task(blocks: BlockEM, source, n_rows, n_cols, rows, word, beta) -> Iterate:
    """A single block's pass and the M-step on its statistics in one task: with one block there
    is nothing to reduce, so the critical path is one task per iteration, not a pass, a hop
    through the scheduler and an M-step. The same calls in the same order as the two tasks:
    the same numbers."""
    rows = rows.rows if isinstance(rows, Iterate) else rows
    word = word.word if isinstance(word, Iterate) else word
    result = _block_task(blocks, source, n_rows, n_cols, rows, word.shared, beta)
    return Iterate(result.rows, _m_step_task(blocks, word, result, beta))


def _shared_of(word: WordSide) -> dict:
    return word.shared


def _em_stats_of(word: WordSide | Iterate) -> EMStats:
    return (word.word if isinstance(word, Iterate) else word).stats


def _params_of(word: WordSide | Iterate) -> dict:
    return (word.word if isinstance(word, Iterate) else word).params


def _rows_of_iterate(part: dict | Iterate) -> dict:
    return part.rows if isinstance(part, Iterate) else part


def _start_task(blocks, n_rows, state):
    return blocks.start_block(n_rows, state)


def _col_totals_task(source, n_rows, n_cols):
    return _load_block(source, n_rows, n_cols).col_totals.astype(np.float64)


def _sum_task(left, right):
    return left + right


# ------------------------------------------------------------------------------ the problem
@dataclass(frozen=True)
class _Submitted:
    """The futures of one iteration's tasks: the word side it ``reads`` and its ``beta`` (what
    it was submitted for), the new word side, what the passes read of it, the new rows and the
    :class:`EMStats`."""

    reads: object
    beta: float
    word: object
    shared: object
    rows: list
    stats: object


def _submitted_for(ahead: _Submitted | None, params: dict, beta: float) -> bool:
    """Whether the step submitted ahead is the step of ``params`` at ``beta``."""
    return ahead is not None and ahead.reads is params["word"] and ahead.beta == beta


class RowFutures:
    """The document-side parameters of every block: one future per block, on its worker."""

    def __init__(self, futures: list):
        self.futures = futures


class DaskEM:
    """A family's annealed EM over row blocks on a Dask cluster, as an
    :class:`~latentzoo.inference.annealing.EMProblem`.

    The parameters the driver carries are futures on the workers: ``"word"``, the
    :class:`WordSide` (the word-side parameters, what the passes read of them, and the
    :class:`EMStats` of the step that made them), ``"shared"``, its part that the passes read
    (on one worker the word side itself), and ``"rows"``, a :class:`RowFutures` of the document
    side. A step returns only its :class:`EMStats` to the client, and submits the next step
    before it waits for them (:meth:`plan`); :meth:`gather` brings the parameters back once, at
    the end.

    Parameters
    ----------
    blocks : BlockEM
    client : distributed.Client
    sources : list
        Per block, its scattered :class:`~latentzoo.data.CoOccurrence` (a future) or its shard's
        path.
    rows : list of int
        Rows per block.
    n_cols : int
    """

    monotone = True

    def __init__(self, blocks: BlockEM, client, sources: list, rows: list, n_cols: int):
        self.blocks = blocks
        self.client = client
        self.sources = sources
        self.rows = rows
        self.n_cols = n_cols
        self.run = uuid.uuid4().hex[:8]
        self.iteration = 0
        # Asked once: workers that join later fetch the whole word side (slower, same result).
        self._one_worker = len(client.scheduler_info()["workers"]) == 1
        # The schedule (see plan) and the step submitted ahead of the driver's next call.
        self._plan: list | None = None
        self._stage = self._done = 0
        self._ahead: _Submitted | None = None

    def _key(self, what: str, block: int | None = None) -> str:
        # Stable keys: the run, the iteration and the block name every task (dashboard, logs).
        where = "" if block is None else f"-b{block:05d}"
        return f"latentzoo-{what}-{self.run}-i{self.iteration:05d}{where}"

    def _start_word_side(self, params: dict):
        """The start's word side, sent once as a task (not scattered) so that the scheduler can
        recompute it, and everything after it, when every worker holding it dies."""
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", "Sending large graph", UserWarning)
            return self.client.submit(
                _word_side_task, self.blocks, params, key=self._key("word-start")
            )

    def scatter_start(self, params: dict) -> dict:
        """The in-memory start with its document side split into blocks on the workers."""
        edges = np.cumsum([0, *self.rows])
        futures = []
        for b, (first, last) in enumerate(zip(edges[:-1], edges[1:], strict=True)):
            part = {name: params[name][first:last] for name in self.blocks.row_names}
            futures.append(self.client.scatter([part], workers=self._owner(b), hash=False)[0])
        shared = {k: v for k, v in params.items() if k not in self.blocks.row_names}
        return {**self._word_futures(self._start_word_side(shared)), "rows": RowFutures(futures)}

    def shard_start(self, rng: np.random.Generator) -> dict:
        """The start of a sharded corpus: each block's document side drawn on its worker from the
        generator state at its first row (the client only advances the generator), then the word
        side from the column totals, summed in the fixed tree."""
        futures = []
        for b, n in enumerate(self.rows):
            state = rng.bit_generator.state
            futures.append(
                self.client.submit(_start_task, self.blocks, n, state, key=self._key("start", b))
            )
            # Advance the client's generator past the block's draws without keeping them.
            rng.bit_generator.state = self.blocks.advance(n, state)
        totals = [
            self.client.submit(_col_totals_task, source, n, self.n_cols, key=self._key("cols", b))
            for b, (source, n) in enumerate(zip(self.sources, self.rows, strict=True))
        ]
        col_totals = self.client.gather(self._tree(totals, "cols-sum"))
        shared = self.blocks.start_globals(rng, col_totals)
        return {**self._word_futures(self._start_word_side(shared)), "rows": RowFutures(futures)}

    def _word_futures(self, word) -> dict:
        """The :class:`WordSide` future and, as a future of its own, what the passes read of it:
        a worker without the word side fetches only that. On one worker nothing travels: the
        passes read the word side itself, a task and a scheduler round trip fewer per iteration
        on the path from one M-step to the next passes."""
        if self._one_worker:
            return {"word": word, "shared": word}
        return {
            "word": word,
            "shared": self.client.submit(_shared_of, word, key=word.key + "-shared"),
        }

    def _owner(self, block: int):
        workers = sorted(self.client.scheduler_info()["workers"])
        return [workers[block % len(workers)]]

    def _tree(self, futures: list, what: str, add=None):
        """The fixed pairwise tree of :func:`tree_sum` over ``futures``, each sum a task."""
        counter = iter(range(len(futures)))
        add = _sum_task if add is None else add

        def submit(left, right):
            return self.client.submit(add, left, right, key=self._key(what, next(counter)))

        return tree_sum(futures, submit)

    def plan(self, betas: list, budgets: list) -> None:
        """Tell the problem the schedule the driver runs, so that each :meth:`step` can submit
        the next one before it waits for its own :class:`EMStats` (without a plan, no step is
        submitted ahead)."""
        self._plan = [
            (float(beta), int(budget)) for beta, budget in zip(betas, budgets, strict=True)
        ]
        self._stage, self._done = 0, 0

    def _next_beta(self, beta: float) -> float | None:
        """Count a step at ``beta`` and say at which beta the driver will step next: the same
        while the stage's budget lasts, then the next stage's, and after the schedule (for a
        family whose final E-step refreshes rows) the last again; None when nothing follows.

        A stage that ends early (``tol``) makes the guess wrong once: :meth:`step` then drops
        the step it submitted ahead, so a wrong guess costs time, never a different result."""
        plan = self._plan
        if plan is None:
            return None
        while self._stage < len(plan) and (
            plan[self._stage][0] != beta or self._done >= plan[self._stage][1]
        ):
            self._stage, self._done = self._stage + 1, 0
        if self._stage == len(plan):
            self._plan = None  # the driver left the plan: no more steps ahead
            return None
        self._done += 1
        if self._done < plan[self._stage][1]:
            return beta
        following = [b for b, budget in plan[self._stage + 1 :] if budget > 0]
        if following:
            return following[0]
        return beta if getattr(self.blocks, "final_e_step", ()) else None

    def step(self, params: dict, beta: float):
        ahead, self._ahead = self._ahead, None
        if _submitted_for(ahead, params, beta):
            submitted = ahead
        else:
            self._drop(ahead)
            submitted = self._submit_step(params, beta)
        new_params = {"word": submitted.word, "shared": submitted.shared,
                      "rows": RowFutures(submitted.rows)}  # fmt: skip
        following = self._next_beta(beta)
        if following is not None:
            # Submitted before this step's statistics are waited for: the worker goes from this
            # step's M-step straight to the next passes instead of idling for a round trip to
            # the client. The tasks are the same whenever they are submitted, so is the result.
            self._ahead = self._submit_step(new_params, following)
        return new_params, submitted.stats.result()

    def _submit_step(self, params: dict, beta: float) -> _Submitted:
        """One iteration's tasks on ``params``: the passes, the fixed tree, the M-step where the
        sum lands (the next passes read its output there) and its :class:`EMStats`, submitted in
        that order so that a worker runs them before anything submitted later."""
        if len(self.rows) == 1:
            return self._submit_single_block_step(params, beta)
        new_rows, passes = self._passes(params, beta)
        total = self._tree(passes, "sum", _add_partials)
        word = self.client.submit(
            _m_step_task, self.blocks, params["word"], total, beta, key=self._key("m-step")
        )
        word_futures = self._word_futures(word)
        stats = self.client.submit(_em_stats_of, word, key=self._key("em-stats"))
        return _Submitted(params["word"], beta, word, word_futures["shared"], new_rows, stats)

    def _submit_single_block_step(self, params: dict, beta: float) -> _Submitted:
        """One block: the pass and the M-step as one task (:func:`_pass_and_m_step_task`)
        whose :class:`Iterate` is the next step's rows and word side alike, and its
        :class:`EMStats`."""
        self.iteration += 1
        (source,), (n,), (rows,) = self.sources, self.rows, params["rows"].futures
        iterate = self.client.submit(
            _pass_and_m_step_task, self.blocks, source, n, self.n_cols, rows, params["word"],
            beta, key=self._key("pass-m-step", 0),
        )  # fmt: skip
        stats = self.client.submit(_em_stats_of, iterate, key=self._key("em-stats"))
        return _Submitted(params["word"], beta, iterate, iterate, [iterate], stats)

    def _drop(self, ahead: _Submitted | None) -> None:
        """Cancel a step submitted ahead that the driver did not take."""
        if ahead is not None:
            self.client.cancel([ahead.word, ahead.shared, ahead.stats, *ahead.rows])

    def _passes(self, params: dict, beta: float) -> tuple[list, list]:
        """Every block's pass on ``params``: the futures of its new rows and of the whole pass."""
        self.iteration += 1
        new_rows, passes = [], []
        for b, (source, n, rows) in enumerate(
            zip(self.sources, self.rows, params["rows"].futures, strict=True)
        ):
            result = self.client.submit(
                _block_task, self.blocks, source, n, self.n_cols, rows, params["shared"], beta,
                key=self._key("pass", b),
            )  # fmt: skip
            # The rows on their own: the pass's statistics are freed once the tree has read them.
            new_rows.append(self.client.submit(_rows_of, result, key=self._key("rows", b)))
            passes.append(result)
        return new_rows, passes

    def gather(self, params: dict, beta: float | None = None) -> dict:
        """``params`` brought back: the word side, and the document side stacked in row order.

        With ``beta``, the rows the block class names in ``final_e_step`` (a mixture's posteriors
        ``resp``) come from one more E-step on the final parameters at ``beta``, as the
        in-memory fit's: those of the last pass belong to the previous iterate."""
        ahead, self._ahead = self._ahead, None
        refreshed = getattr(self.blocks, "final_e_step", ())
        refresh = bool(refreshed) and beta is not None
        if refresh and _submitted_for(ahead, params, beta):
            final_rows = ahead.rows  # the passes submitted ahead are that E-step
        else:
            self._drop(ahead)
            final_rows = self._passes(params, beta)[0] if refresh else None
        # The word side fetched as data, not by a task: a task would wait behind a pass submitted
        # ahead that was still running when the driver stopped.
        # One call: with one block the word side and the rows are the same Iterate, sent once.
        word, *parts = self.client.gather([params["word"], *params["rows"].futures])
        word_side = _params_of(word)
        parts = [_rows_of_iterate(part) for part in parts]
        if final_rows is not None:
            final = [_rows_of_iterate(part) for part in self.client.gather(final_rows)]
            parts = [
                {**part, **{name: new[name] for name in refreshed}}
                for part, new in zip(parts, final, strict=True)
            ]
        rows = {name: np.concatenate([part[name] for part in parts]) for name in parts[0]}
        params = {**word_side, **rows}
        finish = getattr(self.blocks, "finish", None)
        return params if finish is None else finish(params)


# ------------------------------------------------------------------------------ the entry point
def local_cluster(n_workers: int = 2, processes: bool = True, **worker):
    """A ``distributed.LocalCluster`` of ``n_workers`` of one thread each (one task at a time: the
    kernels run serially), without a dashboard on a fixed port and without its shutdown chatter.

    ``worker`` goes to the workers, e.g. ``memory_limit="500MB"``.
    """
    import logging

    from distributed import LocalCluster

    return LocalCluster(
        n_workers=n_workers, threads_per_worker=1, processes=processes, dashboard_address=":0",
        silence_logs=logging.ERROR, **worker,
    )  # fmt: skip


def annealed_em(
    model,
    data,
    *,
    block_em: type,
    client=None,
    blocks: int | None = None,
    betas=(1.0,),
    max_iter=100,
    tol: float = 1e-5,
    overrelax: float = 1.0,
    random_state=None,
    progressbar: bool = True,
    **options,
) -> EMResult:
    """Annealed EM of ``model`` on a Dask cluster (see the module docstring).

    Parameters
    ----------
    model : a model whose family declares a :class:`BlockEM`
    data : CoOccurrence or ShardSet or a shard folder
        In memory it is split into ``blocks`` row blocks, scattered to the workers; shards are
        read from disk at every pass.
    block_em : type
        The :class:`BlockEM` class the method declares
        (:attr:`~latentzoo.inference.family.Method.blocks`, :func:`block_em_for`).
    client : distributed.Client, optional
        None starts a ``LocalCluster`` (2 worker processes of 1 thread) for this fit.
    blocks : int, optional
        In-memory data: the number of row blocks (default: one per worker).
    betas : list of float
        An explicit schedule (the tempered ``"auto"`` schedules need a validation split of the
        whole corpus and are not supported).
    max_iter, tol, random_state, progressbar
        As for :func:`~latentzoo.inference.annealing.annealed_fit`.
    overrelax : float
        Only 1 (plain EM): the over-relaxed step would move the document side off its workers.
    **options
        The family's kernel options (``n_threads``, ``dtype`` for the aspect model).

    Returns
    -------
    EMResult
        The same parameters as the in-memory fit to about 1e-15 relative, identical whatever
        the number of workers.
    """
    if isinstance(betas, str) or not np.iterable(betas) and not np.isscalar(betas):
        raise ValueError(
            f"backend='dask' runs an explicit schedule: pass betas=[...] (got betas={betas!r})"
        )
    betas = check_schedule(betas)
    if overrelax != 1.0:
        raise ValueError(
            f"backend='dask' runs plain EM steps: overrelax must be 1, got {overrelax}"
        )
    if options.pop("predictive", False):
        raise ValueError("backend='dask' has no predictive E-step (predictive=True)")
    block_class = block_em
    kernel_options = set(block_class.__dataclass_fields__) - {"model", "row_names"}
    for name in sorted(set(options) - kernel_options):
        raise ValueError(
            f"backend='dask' takes no option {name!r} (it runs an explicit schedule); its "
            f"options are betas, blocks, client, max_iter, progressbar, random_state, tol, "
            f"{', '.join(sorted(kernel_options))}"
        )
    check_map_priors(model, method="annealed EM")
    blocks_em = block_class(model, **options)
    if client is None:
        from distributed import Client

        with local_cluster(2) as cluster, Client(cluster) as own_client:
            return annealed_em(
                model, data, block_em=block_em, client=own_client, blocks=blocks, betas=betas,
                max_iter=max_iter, tol=tol, random_state=random_state, progressbar=progressbar,
                **options,
            )  # fmt: skip
    from latentzoo.data.checks import as_rng

    rng = as_rng(random_state)
    start = time.perf_counter()
    if isinstance(data, str | os.PathLike):
        data = read_shards(data)
    sharded = isinstance(data, ShardSet)
    if sharded:
        if blocks is not None and blocks != len(data.names):
            raise ValueError(f"blocks={blocks}, but {data.folder} holds {len(data.names)} shards")
        if getattr(blocks_em, "start_block", None) is None:
            raise ValueError(
                f"the annealed EM of {type(model).__name__} needs the data in memory to start "
                "(no shards)"
            )
        rows, n_cols, sources = list(data.rows), data.n_cols, data.paths
        problem = DaskEM(blocks_em, client, sources, rows, n_cols)
        params = problem.shard_start(rng)
        coords_data = data.skeleton()
    else:
        data = model.check_data(data)
        n_workers = max(len(client.scheduler_info()["workers"]), 1)
        # One block per worker unless asked: the fewest tasks and statistics tables to sum.
        ranges = row_blocks(data.n_rows, n_workers if blocks is None else blocks)
        rows = [last - first for first, last in ranges]
        problem = DaskEM(blocks_em, client, [], rows, data.n_cols)
        sources = [
            client.scatter(data.subset(rows=np.arange(first, last)), workers=problem._owner(b),
                           hash=False)
            for b, (first, last) in enumerate(ranges)
        ]  # fmt: skip
        if getattr(blocks_em, "prepare", None) is not None:
            # Once per block, where it lives: what every pass would otherwise redo.
            sources = [
                client.submit(_prepared, blocks_em, source, key=problem._key("prepare", b))
                for b, source in enumerate(sources)
            ]
        problem.sources = sources
        params = problem.scatter_start(blocks_em.start(data, rng))
        coords_data = data
    budgets = max_iter if np.ndim(max_iter) else [int(max_iter)] * len(betas)
    with progress_bar(
        desc="annealed EM (dask)", progressbar=progressbar, total=int(np.sum(budgets))
    ) as bar:
        problem.plan(betas, budgets)
        run = run_schedule(problem, params, betas, max_iter, tol, 1.0, progress=bar)
    params = problem.gather(run.params, run.betas[-1])
    settings = {
        "schedule": repr(betas),
        "max_iter": max_iter,
        "tol": tol,
        "overrelax": 1.0,
        "random_state": random_state if isinstance(random_state, int) else None,
        "backend": "dask",
        "blocks": len(rows),
    }
    result = EMResult(
        coords=model.coords(coords_data),
        settings=settings,
        model=model,
        params=params,
        trace=run.trace,
        converged=run.converged,
        betas=run.betas,
        seconds=time.perf_counter() - start,
        method="annealed_em",
        stages=run.stages,
    )
    # What the in-memory fit's result carries besides its parameters (the HACM's tree plot).
    finish_result = getattr(blocks_em, "finish_result", None)
    return result if finish_result is None else finish_result(result)
