"""What the collapsed Gibbs samplers of the co-occurrence families share.

Each sampler (aspect model, one- and two-sided clustering, cluster-abstraction model) keeps count
tables that a numba sweep updates in place, drawing from the chain's own splitmix64 stream
``state.rng_state``; the stream is seeded from the chain's ``rng`` when the chain starts, so one
seed gives one chain whatever the number of chains or threads. The sampler contract of
:func:`~latentzoo.inference.mcmc.run_chains` (``step(state, rng) -> (state, info)``), the start of a
chain from its labels and the independent chains of the exact test are written here once; a family
supplies its sweep, its count tables and its many-chains kernel.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from latentzoo.data.checks import as_rng
from latentzoo.inference.mcmc import GibbsInfo, splitmix_seeds
from latentzoo.models._checks import check_integer

__all__ = ["CollapsedGibbs"]


class CollapsedGibbs:
    """Base of a collapsed Gibbs sampler over count tables, as ``init``/``step``/``draw``.

    ``step(state, rng) -> (state, info)`` with ``info`` an ``info_type`` (a :class:`GibbsInfo`
    unless the sampler reports more than the log joint): the sampler contract of
    :func:`~latentzoo.inference.mcmc.run_chains`. A subclass provides ``init``, ``draw`` and
    ``log_joint``, and the hooks

    - ``_sweep(state)``: one sweep, in place; returns the fields of ``info`` after the log joint
      (none for :class:`GibbsInfo`);
    - ``_tables_of(*labels)``: the count tables of a labelling (for :meth:`_start`);
    - ``_last_states(seeds, sweeps)``: the final labels of one chain per splitmix64 seed, each
      from uniform labels (for :meth:`exact_draws`).

    ``state_type`` is the chain's state: a NamedTuple of the labels, the count tables and the
    generator state ``rng_state``, in that order.

    Examples
    --------
    >>> from latentzoo.data import load
    >>> from latentzoo.inference.one_sided import OneSidedGibbs
    >>> from latentzoo.models.one_sided import OneSidedClustering
    >>> sampler = OneSidedGibbs(OneSidedClustering(2), load("toy"))
    >>> state, info = sampler.step(sampler.init(rng := np.random.default_rng(0)), rng)
    >>> int(state.sizes.sum()), bool(info.lp < 0)
    (6, True)
    """

    state_type: type[NamedTuple]
    info_type: type[NamedTuple] = GibbsInfo

    def _start(self, rng: np.random.Generator, *labels) -> NamedTuple:
        """The state of ``labels``: their count tables and a splitmix64 stream seeded from ``rng``
        (after the labels were drawn from it, which fixes the order of the draws)."""
        return self.state_type(*labels, *self._tables_of(*labels), splitmix_seeds(rng, 1))

    def step(self, state: NamedTuple, rng: np.random.Generator) -> tuple[NamedTuple, NamedTuple]:
        """One sweep (in place), and its ``info``: the collapsed log joint of the new state first.

        The sweep draws from the chain's splitmix64 stream ``state.rng_state`` (seeded from the
        chain's ``rng`` by :meth:`init`; see :func:`~latentzoo.inference.mcmc.run_chains`).
        """
        reported = self._sweep(state)
        return state, self.info_type(self.log_joint(state), *reported)

    def advance(self, state: NamedTuple, rng: np.random.Generator) -> NamedTuple:
        """One sweep (in place) without its ``info``: the transition of :meth:`step`, for the
        sweeps whose info :func:`~latentzoo.inference.mcmc.run_chains` would discard (tuning,
        thinning), which then skip the collapsed log joint (a pass over the count tables)."""
        self._sweep(state)
        return state

    def exact_draws(self, n_chains: int, sweeps: int, random_state=None):
        """Final labels of ``n_chains`` independent chains of ``sweeps`` sweeps each.

        Independent draws (not one autocorrelated chain), so a chi-square test against the
        enumerated posterior is valid; each chain starts from uniform labels. ``n_chains`` must be
        a positive integer and ``sweeps`` a non-negative one (``ValueError``).

        Examples
        --------
        >>> from latentzoo.data import load
        >>> from latentzoo.inference.one_sided import OneSidedGibbs
        >>> from latentzoo.models.one_sided import OneSidedClustering
        >>> OneSidedGibbs(OneSidedClustering(2), load("toy")).exact_draws(4, 10, 0).shape
        (4, 6)
        """
        check_integer("n_chains", n_chains)
        check_integer("sweeps", sweeps, low=0)
        seeds = splitmix_seeds(as_rng(random_state), n_chains)
        return self._last_states(seeds, sweeps)
