"""The catalog of realistic bugs that :func:`latentzoo.validate` must catch.

Each :class:`Mutation` replaces one snippet ``old`` (which must occur exactly once in ``path``,
relative to the repository root) by ``new``. The bugs are the kinds a programmer writes while
implementing a collapsed Gibbs sampler, an EM M-step, a PyMC reference or a simulator: a dropped
prior term, an off-by-one in one branch of a kernel, a count not removed before the conditional, a
stale cache, a wrong Dirichlet draw, a transition that does nothing, a missing term of a
Metropolis-Hastings ratio, a wrong prior in the reference. Every one changes behaviour at the
model the family is validated with (``FAMILIES``, or the mutation's own ``model``): a bug that is
invisible there (e.g. ``Beta(1, alpha)`` against ``Beta(alpha, 1)`` at ``alpha = 1``) is run at a
model where it is not.

``kind`` is one of ``KINDS``: ``"gibbs"`` (a sampler's kernel, ``step`` or ``draw``), ``"em"``
(an EM M-step), ``"pymc"`` (the PyMC reference declaration), ``"model"`` (the model's own exact
quantities or simulator, which the levels use as their truth), ``"tree"`` (BHC's tree builders),
``"score"`` (Bayesian Sets' scores), ``"annealing"`` (deterministic annealing of pairwise and
central clustering), ``"lp"`` (the topic trees' linear programs and Algorithm 3.2).
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = [
    "FAMILIES",
    "KINDS",
    "KNOWN_REACH",
    "LEVELS_KEPT",
    "MUTATIONS",
    "RELEVANT_LEVELS",
    "UNREACHED_METHODS",
    "Mutation",
    "by_id",
    "fast_method",
    "model_for",
    "relevant_levels",
]

FAMILIES = {
    "aspect": "AspectModel(2)",
    "one_sided": "OneSidedClustering(2)",
    "two_sided": "TwoSidedClustering(2, 2)",
    "product_space": "ProductSpaceMixture(2, 2)",
    "dpm": "DirichletProcessMixture()",
    "finite_mixture": "BayesianMixture(2)",
    # The CLI's default for bhc, the empirical prior of its digits (the flat Beta(1, 1) fails the
    # reference level on digits: co-assignment correlation 0.03 with the DPM's at seed 0).
    "bhc": "BayesianHierarchicalClustering(component=BetaBernoulli.from_data("
    "__import__('latentzoo.data').data.load('digits').X, scale=2.0))",
    "bayesian_sets": "BayesianSets()",
    "pairwise": "PairwiseClustering(2)",
    "central": "CentralClustering(2)",
    "cluster_abstraction": "ClusterAbstractionModel(1)",
    "topic_tree": "TopicTreeMixture()",
    "iomm": "OverlappingMixture()",
    "bpm": "BayesianPartialMembership(2)",
}
"""Family -> the model ``validate`` is run with (evaluated with ``latentzoo.models``' names)."""

KINDS = ("gibbs", "em", "pymc", "model", "tree", "score", "annealing", "lp", "baseline")

RELEVANT_LEVELS = {
    "gibbs": ("exact", "reference", "mode-matched", "calibrated"),
    "em": ("reference", "optimality", "mode-matched"),
    "pymc": ("density", "reference", "optimality", "mode-matched"),
    "model": None,
    "tree": ("exact", "reference"),
    "score": ("exact", "reference"),
    "annealing": ("exact", "reference", "optimality"),
    "lp": ("reference",),
    "baseline": ("optimality",),
}
"""Kind -> the levels that execute the mutated code (None: every level), for ``--relevant``: a
sampler bug cannot change the density or optimality levels, which never run the sampler, nor a
PyMC bug the exact or calibrated levels, which never run PyMC. ``tree`` (a BHC tree builder),
``score`` (Bayesian Sets' closed-form scores), ``annealing`` (pairwise or central deterministic
annealing) and ``lp`` (the topic trees' minimax pseudo-inverse and Algorithm 3.2, whose one level
is the reference) are the point estimators of the families without a sampler; ``baseline`` a
deterministic baseline (pairwise clustering's linkage), which only an optimality level could
compare. A mutation's own
``levels`` overrides its kind's when the family's levels differ (the HACM's reference level runs
PyMC and Gibbs, never its EM)."""


@dataclass(frozen=True)
class Mutation:
    """One bug: replace ``old`` (exactly once in ``path``) by ``new``.

    Attributes
    ----------
    id : str
        Unique, ``<family>-<what>``.
    family : str
        A key of :data:`FAMILIES`.
    path : str
        File relative to the repository root, e.g. ``"inference/one_sided.py"``.
    old, new : str
        The snippet and its replacement.
    description : str
        One line: the bug as a programmer would have written it.
    kind : str
        One of :data:`KINDS`.
    model : str
        Constructor expression overriding the family's (empty: the family's), for bugs that are
        invisible at the family's default priors.
    levels : tuple of str
        The levels that run the mutated code, for ``--relevant`` (empty: its kind's,
        :data:`RELEVANT_LEVELS`).
    method : str
        The registered fast method (``latentzoo list``) whose code it mutates (empty: the one
        its family and kind give, :func:`fast_method`).

    Examples
    --------
    >>> m = by_id("aspect-step-noop")
    >>> m.family, m.kind, model_for(m)
    ('aspect', 'gibbs', 'AspectModel(2)')
    """

    id: str
    family: str
    path: str
    old: str
    new: str
    description: str
    kind: str
    model: str = ""
    levels: tuple[str, ...] = ()
    method: str = ""


def relevant_levels(mutation: Mutation):
    """The levels that run the code ``mutation`` changes (None: every level).

    Examples
    --------
    >>> relevant_levels(by_id("hacm-em-tau-pseudo-count"))
    ('optimality',)
    >>> relevant_levels(by_id("aspect-em-theta-alpha"))
    ('reference', 'optimality', 'mode-matched')
    """
    return mutation.levels or RELEVANT_LEVELS[mutation.kind]


_KIND_METHODS = {
    ("aspect", "gibbs"): "gibbs",
    ("aspect", "em"): "annealed_em",
    ("one_sided", "gibbs"): "gibbs",
    ("one_sided", "em"): "annealed_em",
    ("two_sided", "gibbs"): "gibbs",
    ("two_sided", "em"): "annealed_em",
    ("product_space", "em"): "annealed_em",
    ("dpm", "gibbs"): "gibbs",
    ("finite_mixture", "gibbs"): "gibbs",
    ("bayesian_sets", "score"): "query",
    ("pairwise", "annealing"): "annealing",
    ("central", "annealing"): "annealing",
    ("cluster_abstraction", "gibbs"): "gibbs",
    ("cluster_abstraction", "em"): "annealed_em",
    ("topic_tree", "lp"): "reconstruct",
    ("iomm", "gibbs"): "mcmc",
    ("bpm", "gibbs"): "hmc",
}
"""(family, kind) -> the fast method a mutation of that kind mutates, unless it names its own;
the ``pymc`` and ``model`` kinds mutate the reference or the model, no fast method."""


def fast_method(mutation: Mutation) -> str:
    """The registered fast method whose code ``mutation`` changes ("" for the PyMC reference and
    the model's own quantities). BHC's builders are told apart by the id's prefix.

    Examples
    --------
    >>> fast_method(by_id("aspect-em-phi-eta")), fast_method(by_id("rbhc-filter-drops-prior"))
    ('annealed_em', 'rbhc')
    >>> fast_method(by_id("pairwise-ward-cut-off-by-one")), fast_method(by_id("dpm-pymc-stick-log-v"))
    ('ward', '')
    """
    if mutation.method:
        return mutation.method
    if mutation.family == "bhc":
        return mutation.id.split("-")[0]
    return _KIND_METHODS.get((mutation.family, mutation.kind), "")


def model_for(mutation: Mutation) -> str:
    """The constructor expression ``validate`` is run with for ``mutation``.

    Examples
    --------
    >>> model_for(by_id("dpm-rest-measure-beta-swapped"))
    'DirichletProcessMixture(alpha=2.0)'
    """
    return mutation.model or FAMILIES[mutation.family]


def by_id(mutation_id: str) -> Mutation:
    """The catalog entry with this id (``KeyError`` naming the known ids otherwise).

    Examples
    --------
    >>> by_id("one-sided-log-rising-lgamma-off-by-one").path
    'inference/one_sided.py'
    """
    for mutation in MUTATIONS:
        if mutation.id == mutation_id:
            return mutation
    known = ", ".join(m.id for m in MUTATIONS)
    raise KeyError(f"unknown mutation {mutation_id!r}; known: {known}")


_ASPECT = "inference/aspect.py"
_ONE = "inference/one_sided.py"
_TWO = "inference/two_sided.py"
_PMM = "inference/product_space.py"
_MIX = "inference/mixture.py"
_DPM_ALPHA2 = "DirichletProcessMixture(alpha=2.0)"
_BHC = "inference/bhc.py"
_SETS = "inference/bayesian_sets.py"
_PAIR = "inference/pairwise.py"
_HACM = "inference/cluster_abstraction.py"
_TREE = "inference/topic_tree.py"
_IOMM = "inference/iomm.py"
_BPM = "inference/bpm.py"
_ADLDA = "inference/ad_lda.py"

MUTATIONS: tuple[Mutation, ...] = (
    # ------------------------------------------------------------------ aspect model (LDA)
    Mutation(
        "aspect-gibbs-drop-alpha",
        "aspect",
        _ASPECT,
        "p = (n_doc_topic[d, k] + alpha) * (n_word_topic[w, k] + eta) * inv_total[k]",
        "p = n_doc_topic[d, k] * (n_word_topic[w, k] + eta) * inv_total[k]",
        "Gibbs conditional uses n_dk instead of n_dk + alpha",
        "gibbs",
    ),
    Mutation(
        "aspect-gibbs-eta-normaliser",
        "aspect",
        _ASPECT,
        "m_eta = eta * n_word_topic.shape[0]",
        "m_eta = eta",
        "topic normaliser n_k + eta instead of n_k + M eta",
        "gibbs",
    ),
    Mutation(
        "aspect-gibbs-stale-normaliser",
        "aspect",
        _ASPECT,
        "            n_topic[old] -= 1.0\n"
        "            inv_total[old] = 1.0 / max(n_topic[old] + m_eta, m_eta)\n",
        "            n_topic[old] -= 1.0\n",
        "cached 1 / (n_k + M eta) not refreshed after a moved token leaves its topic",
        "gibbs",
    ),
    Mutation(
        "aspect-gibbs-doc-count-not-removed",
        "aspect",
        _ASPECT,
        "p_old = max(n_doc_topic[d, old] - 1.0 + alpha, alpha)",
        "p_old = max(n_doc_topic[d, old] + alpha, alpha)",
        "the token's own doc-topic count not removed from its current topic's weight",
        "gibbs",
    ),
    Mutation(
        "aspect-draw-theta-minus-one",
        "aspect",
        _ASPECT,
        "out[i * n_topics + k] = n_doc_topic[i, k] + alpha\n",
        "out[i * n_topics + k] = n_doc_topic[i, k] + alpha - 1.0\n",
        "draw(): theta ~ Dir(n_d + alpha - 1) (the MAP pseudo-count) instead of Dir(n_d + alpha)",
        "gibbs",
    ),
    Mutation(
        "aspect-step-noop",
        "aspect",
        _ASPECT,
        "        gibbs_sweep(\n            self.doc_ptr, self.words, state.z, state.n_doc_topic,",
        "        return state, GibbsInfo(self.log_joint(state))  # sweep disabled while debugging\n"
        "        gibbs_sweep(\n            self.doc_ptr, self.words, state.z, state.n_doc_topic,",
        "step() returns the state without sweeping (the kernel itself is intact)",
        "gibbs",
    ),
    Mutation(
        "aspect-em-theta-alpha",
        "aspect",
        _ASPECT,
        "new_theta = normalise_rows(n_theta, self.model.alpha - 1.0, theta.shape[1])\n"
        "        new_phi = normalise_rows(n_phi.T",
        "new_theta = normalise_rows(n_theta, self.model.alpha, theta.shape[1])\n"
        "        new_phi = normalise_rows(n_phi.T",
        "MAP M-step of theta with pseudo-count alpha instead of alpha - 1",
        "em",
    ),
    Mutation(
        "aspect-em-phi-eta",
        "aspect",
        _ASPECT,
        "new_phi = normalise_rows(n_phi.T, self.model.eta - 1.0, phi_t.shape[0])",
        "new_phi = normalise_rows(n_phi.T, self.model.eta, phi_t.shape[0])",
        "MAP M-step of phi with pseudo-count eta instead of eta - 1",
        "em",
    ),
    Mutation(
        "aspect-em-theta-counts-drop-theta",
        "aspect",
        _ASPECT,
        "                acc_phi[j, k] += r * t_theta[i, k]\n"
        "        for k in range(n_topics):\n            n_theta[i, k] = t_theta[i, k] * acc[k]\n",
        "                acc_phi[j, k] += r * t_theta[i, k]\n"
        "        for k in range(n_topics):\n            n_theta[i, k] = acc[k]\n",
        "float64 E/M kernel: a document's expected topic counts miss the factor theta_dk of the "
        "posterior (only the word side's sum)",
        "em",
    ),
    Mutation(
        "aspect-em-phi-counts-wrong-table",
        "aspect",
        _ASPECT,
        "            for k in range(n_topics):\n                acc_phi[j, k] += r * t_theta[i, k]\n"
        "        for k in range(n_topics):\n            n_theta[i, k] = t_theta[i, k] * acc[k]\n",
        "            for k in range(n_topics):\n                acc_phi[j, k] += r * t_phi[j, k]\n"
        "        for k in range(n_topics):\n            n_theta[i, k] = t_theta[i, k] * acc[k]\n",
        "float64 E/M kernel: the word side's expected counts multiply by phi (the loop above's "
        "table), not theta",
        "em",
    ),
    Mutation(
        "aspect-pymc-theta-eta",
        "aspect",
        "models/aspect.py",
        'theta = pm.Dirichlet("theta", a=np.full((n, k), self.alpha)',
        'theta = pm.Dirichlet("theta", a=np.full((n, k), self.eta)',
        "PyMC reference: theta's Dirichlet prior uses eta instead of alpha",
        "pymc",
    ),
    Mutation(
        "aspect-model-enumeration-vocabulary",
        "aspect",
        "models/aspect.py",
        "n_words = int(words.max()) + 1 if n_words is None else int(n_words)",
        "n_words = int(words.max()) + 1",
        "enumerated collapsed joint ignores n_words: M eta normaliser wrong when columns are unobserved",
        "model",
    ),
    # ---------------------------------------------------- one-sided clustering (DM mixture)
    Mutation(
        "one-sided-gibbs-drop-alpha",
        "one_sided",
        _ONE,
        "logp[k] = math.log(sizes[k] + alpha)",
        "logp[k] = math.log(sizes[k])",
        "cluster-size weight m_k instead of m_k + alpha",
        "gibbs",
    ),
    Mutation(
        "one-sided-log-rising-lgamma-off-by-one",
        "one_sided",
        _ONE,
        "return math.lgamma(x + n) - math.lgamma(x)",
        "return math.lgamma(x + n + 1.0) - math.lgamma(x + 1.0)",
        "_log_rising's lgamma branch (counts above 8) computes rising(x + 1, n)",
        "gibbs",
    ),
    Mutation(
        "one-sided-log-rising-lgamma-drops-last",
        "one_sided",
        _ONE,
        "return math.lgamma(x + n) - math.lgamma(x)",
        "return math.lgamma(x + n - 1.0) - math.lgamma(x)",
        "_log_rising's lgamma branch (counts above 8) computes rising(x, n - 1)",
        "gibbs",
    ),
    Mutation(
        "one-sided-single-token-normaliser",
        "one_sided",
        _ONE,
        "            if n_i > 0:\n",
        "            if n_i > 1:\n",
        "cluster normaliser rising(c_k + M eta, n_i) skipped for rows of a single token",
        "gibbs",
    ),
    Mutation(
        "one-sided-log-rising-loop-off-by-one",
        "one_sided",
        _ONE,
        "for t in range(int(n)):",
        "for t in range(1, int(n)):",
        "_log_rising's loop branch (counts 2..8) skips the first factor x",
        "gibbs",
    ),
    Mutation(
        "one-sided-gibbs-eta-normaliser",
        "one_sided",
        _ONE,
        "m_eta = eta * c_t.shape[0]",
        "m_eta = eta",
        "cluster normaliser rising(c_k + eta, n_i) instead of rising(c_k + M eta, n_i)",
        "gibbs",
    ),
    Mutation(
        "one-sided-gibbs-words-not-removed",
        "one_sided",
        _ONE,
        "        for p in range(indptr[i], indptr[i + 1]):\n"
        "            c_t[indices[p], old] -= counts[p]\n"
        "        for k in range(n_clusters):\n",
        "        for k in range(n_clusters):\n",
        "row's word counts never removed from its cluster (c_t drifts; c_tot and sizes are removed)",
        "gibbs",
    ),
    Mutation(
        "one-sided-draw-rho-minus-one",
        "one_sided",
        _ONE,
        "rho = dirichlet_rows(rng, (state.sizes + self.model.alpha)[None, :])[0]",
        "rho = dirichlet_rows(rng, (state.sizes + self.model.alpha - 1.0)[None, :])[0]",
        "draw(): rho ~ Dir(m + alpha - 1) instead of Dir(m + alpha)",
        "gibbs",
    ),
    Mutation(
        "one-sided-step-noop",
        "one_sided",
        _ONE,
        "        gibbs_sweep(\n            self.indptr, self.indices, self.counts, self.row_totals,",
        "        return state, GibbsInfo(self.log_joint(state))  # sweep disabled while debugging\n"
        "        gibbs_sweep(\n            self.indptr, self.indices, self.counts, self.row_totals,",
        "step() returns the state without sweeping",
        "gibbs",
    ),
    Mutation(
        "one-sided-em-rho-alpha",
        "one_sided",
        _ONE,
        "new_rho = normalise_rows(resp_sum[None, :], model.alpha - 1.0, len(resp_sum))[0]",
        "new_rho = normalise_rows(resp_sum[None, :], model.alpha, len(resp_sum))[0]",
        "MAP M-step of rho with pseudo-count alpha instead of alpha - 1",
        "em",
    ),
    Mutation(
        "one-sided-em-counts-drop-n",
        "one_sided",
        "inference/em.py",
        "acc[j, k] += n * resp[i, k]",
        "acc[j, k] += resp[i, k]",
        "E/M kernel of the multinomial mixture: expected word counts add resp per cell, not "
        "n_ij resp (a cell of count 3 counts once)",
        "em",
    ),
    Mutation(
        "one-sided-em-loglik-distinct-words",
        "one_sided",
        "inference/em.py",
        "s[k] += n * log_q_t[j, k]",
        "s[k] += log_q_t[j, k]",
        "E-step: a row's log-likelihood sums log q over its distinct words, not its tokens",
        "em",
    ),
    Mutation(
        "one-sided-pymc-rho-eta",
        "one_sided",
        "models/one_sided.py",
        'rho = pm.Dirichlet("rho", a=np.full(k, self.alpha)',
        'rho = pm.Dirichlet("rho", a=np.full(k, self.eta)',
        "PyMC reference: rho's Dirichlet prior uses eta instead of alpha",
        "pymc",
    ),
    Mutation(
        "one-sided-simulate-ignores-rho",
        "one_sided",
        "models/cooccurrence.py",
        "z = rng.choice(n_clusters, size=n_docs, p=rho).astype(np.int64)",
        "z = rng.choice(n_clusters, size=n_docs).astype(np.int64)",
        "simulator draws memberships uniformly instead of from rho (prior draws not from the prior)",
        "model",
    ),
    # -------------------------------------------------------- two-sided clustering (SCM)
    Mutation(
        "two-sided-gibbs-drop-alpha",
        "two_sided",
        _TWO,
        "lw = math.log(s + alpha)",
        "lw = math.log(s)",
        "cluster-size weight s_nu instead of s_nu + alpha",
        "gibbs",
    ),
    Mutation(
        "two-sided-block-term-power",
        "two_sided",
        _TWO,
        "lw += math.lgamma(w + r[b] + eta) - math.lgamma(w + eta)",
        "lw += r[b] * math.log(w + eta)",
        "block term (W + eta)^r instead of the rising factorial Gamma(W + r + eta) / Gamma(W + eta)",
        "gibbs",
    ),
    Mutation(
        "two-sided-member-term-sign",
        "two_sided",
        _TWO,
        "lw -= math.lgamma(s * eta) - math.lgamma(mass[a] + s * eta)",
        "lw += math.lgamma(s * eta) - math.lgamma(mass[a] + s * eta)",
        "sign of the removed members' Dirichlet-multinomial term flipped",
        "gibbs",
    ),
    Mutation(
        "two-sided-new-cluster-blocks",
        "two_sided",
        _TWO,
        "n_blocks = (occupied + 1) * occupied_other",
        "n_blocks = occupied * occupied_other",
        "joining an empty cluster does not add its blocks to the occupied-block count",
        "gibbs",
    ),
    Mutation(
        "two-sided-occupied-not-decremented",
        "two_sided",
        _TWO,
        "        if sizes[old] == 0:\n            occupied -= 1\n",
        "",
        "occupied-cluster count not decremented when a label leaves a cluster empty",
        "gibbs",
    ),
    Mutation(
        "two-sided-column-sweep-missing",
        "two_sided",
        _TWO,
        "    _half_sweep(col_ptr, col_idx, col_val, m_j, labels_j, labels_i, block, True, sizes_y, mass_y,\n"
        "                sizes_x, alpha, eta, grand, state)  # fmt: skip\n",
        "    pass  # column half-sweep: TODO\n",
        "the column labels J are never resampled (only the row half-sweep runs)",
        "gibbs",
    ),
    Mutation(
        "two-sided-draw-pi-minus-one",
        "two_sided",
        _TWO,
        "pi[occupied] = dirichlet_rows(rng, state.block[occupied] + model.eta)",
        "pi[occupied] = dirichlet_rows(rng, state.block[occupied] + model.eta - 1.0)",
        "draw(): pi ~ Dir(W + eta - 1) instead of Dir(W + eta)",
        "gibbs",
    ),
    Mutation(
        "two-sided-step-noop",
        "two_sided",
        _TWO,
        "        _sweep(\n            *self.rows, *self.cols,",
        "        return state, GibbsInfo(self.log_joint(state))  # sweep disabled while debugging\n"
        "        _sweep(\n            *self.rows, *self.cols,",
        "step() returns the state without sweeping",
        "gibbs",
    ),
    Mutation(
        "two-sided-em-rho-alpha",
        "two_sided",
        "models/two_sided.py",
        "weights = np.maximum(np.asarray(sizes, dtype=float) + (self.alpha - 1.0), 0.0)",
        "weights = np.maximum(np.asarray(sizes, dtype=float) + self.alpha, 0.0)",
        "mean-field EM: MAP cluster weights with pseudo-count alpha instead of alpha - 1",
        "em",
    ),
    Mutation(
        "two-sided-em-column-scores-untransposed",
        "two_sided",
        _TWO,
        "beta * _scores(col_mass, c.T))",
        "beta * _scores(col_mass, c))",
        "mean-field EM: column scores use c, not its transpose (right shape at Kx = Ky)",
        "em",
    ),
    Mutation(
        "two-sided-em-column-weights-rho-x",
        "two_sided",
        _TWO,
        "soft_j = _column_posteriors(rho_y, col_mass, c, beta)",
        "soft_j = _column_posteriors(rho_x, col_mass, c, beta)",
        "mean-field EM: column posteriors weighted by the row clusters' weights rho_x",
        "em",
    ),
    # ------------------------------------------------------------ product-space mixture
    Mutation(
        "product-space-em-pi-alpha",
        "product_space",
        _PMM,
        '"pi": normalise_rows(n_pi.reshape(1, -1), model.alpha - 1.0, kx * ky)[0]',
        '"pi": normalise_rows(n_pi.reshape(1, -1), model.alpha, kx * ky)[0]',
        "MAP M-step of pi with pseudo-count alpha instead of alpha - 1",
        "em",
    ),
    Mutation(
        "product-space-em-q-eta",
        "product_space",
        _PMM,
        '"q_col": normalise_rows(n_b.T, model.eta - 1.0, q_col.shape[1])',
        '"q_col": normalise_rows(n_b.T, model.eta, q_col.shape[1])',
        "MAP M-step of q_col with pseudo-count eta instead of eta - 1",
        "em",
    ),
    Mutation(
        "product-space-em-p-row-eta",
        "product_space",
        _PMM,
        'new["p_row"] = normalise_rows(n_a.T, self.model.eta - 1.0, self.data.n_rows)',
        'new["p_row"] = normalise_rows(n_a.T, self.model.eta, self.data.n_rows)',
        "MAP M-step of p_row with pseudo-count eta instead of eta - 1",
        "em",
    ),
    Mutation(
        "product-space-pymc-pi-eta",
        "product_space",
        "models/product_space.py",
        'pi_flat = pm.Dirichlet("pi_flat", a=np.full(kx * ky, self.alpha)',
        'pi_flat = pm.Dirichlet("pi_flat", a=np.full(kx * ky, self.eta)',
        "PyMC reference: pi's Dirichlet prior uses eta instead of alpha",
        "pymc",
    ),
    # ------------------------------------------------------- Dirichlet process mixture
    Mutation(
        "dpm-occupied-weight-plus-alpha",
        "dpm",
        _MIX,
        "logw[a] = math.log(sizes[k]) + _log_pred(",
        "logw[a] = math.log(sizes[k] + alpha) + _log_pred(",
        "CRP weight of an occupied cluster n_k + alpha (the finite mixture's form) instead of n_k",
        "gibbs",
    ),
    Mutation(
        "dpm-split-missing-proposal",
        "dpm",
        _MIX,
        "            - log_marginal_one(kind, hyper, stats[ci])\n            - log_q\n",
        "            - log_marginal_one(kind, hyper, stats[ci])\n",
        "split-merge: the split's acceptance ratio misses the proposal term -log q",
        "gibbs",
    ),
    Mutation(
        "dpm-prior-predictive-denominator",
        "dpm",
        "models/conjugate.py",
        "out -= math.log(a + b + n)",
        "out -= math.log(a + b + n + 1.0)",
        "Beta-Bernoulli numba predictive divides by a + b + n + 1 (the new-cluster weight p(x))",
        "gibbs",
    ),
    Mutation(
        "dpm-rest-measure-beta-swapped",
        "dpm",
        _MIX,
        "piece = left * rng.beta(1.0, alpha)",
        "piece = left * rng.beta(alpha, 1.0)",
        "draw(): unoccupied rest of the measure broken with Beta(alpha, 1) sticks",
        "gibbs",
        _DPM_ALPHA2,
    ),
    Mutation(
        "dpm-escobar-west-rate",
        "dpm",
        _MIX,
        "odds = (a + n_clusters - 1.0) / (n_items * rate)",
        "odds = (a + n_clusters - 1.0) / (n_items * b)",
        "Escobar-West mixture odds use the prior rate b instead of b - log eta (sample_alpha only)",
        "gibbs",
    ),
    Mutation(
        "dpm-new-cluster-drops-log-alpha",
        "dpm",
        _MIX,
        "logw[n_active] = log_alpha + prior_pred[i]",
        "logw[n_active] = prior_pred[i]",
        "Gibbs sweep: new-cluster weight p(x) instead of alpha p(x) (invisible at alpha = 1)",
        "gibbs",
    ),
    Mutation(
        "dpm-step-noop",
        "dpm",
        _MIX,
        "        a0, b0 = self.alpha_prior\n        sizes, stats, alpha, accepted = _run(",
        "        a0, b0 = self.alpha_prior\n"
        "        return state, GibbsInfo(self.log_joint(state))  # transition disabled for debugging\n"
        "        sizes, stats, alpha, accepted = _run(",
        "MixtureGibbs.step() returns the state without a transition",
        "gibbs",
    ),
    Mutation(
        "dpm-pymc-stick-log-v",
        "dpm",
        "models/mixture.py",
        "pt.cumsum(pt.log1p(-v))",
        "pt.cumsum(pt.log(v))",
        "PyMC reference: stick-breaking rest prod (1 - v_j) computed as prod v_j",
        "pymc",
    ),
    Mutation(
        "dpm-pymc-stick-beta-swapped",
        "dpm",
        "models/mixture.py",
        'pm.Beta("v", alpha=1.0, beta=self.alpha, dims="stick")',
        'pm.Beta("v", alpha=self.alpha, beta=1.0, dims="stick")',
        "PyMC reference: sticks v ~ Beta(alpha, 1) instead of Beta(1, alpha)",
        "pymc",
        _DPM_ALPHA2,
    ),
    # ------------------------------------------------------------- finite mixture
    Mutation(
        "finite-new-cluster-alpha",
        "finite_mixture",
        _MIX,
        "offset = alpha / n_labels",
        "offset = alpha",
        "Gibbs sweep: cluster weight n_k + alpha instead of n_k + alpha/K",
        "gibbs",
    ),
    Mutation(
        "finite-bernoulli-table-index",
        "finite_mixture",
        _MIX,
        "log_zero = tables[1, n_int - m]",
        "log_zero = tables[1, m]",
        "cached Beta-Bernoulli predictive reads log(b + m) instead of log(b + n - m)",
        "gibbs",
    ),
    Mutation(
        "finite-draw-weights-alpha",
        "finite_mixture",
        _MIX,
        "+ state.alpha / self.n_labels)",
        "+ state.alpha)",
        "draw(): w ~ Dir(n_k + alpha) instead of Dir(n_k + alpha/K)",
        "gibbs",
    ),
    Mutation(
        "finite-split-size-prior-term",
        "finite_mixture",
        _MIX,
        "            - math.lgamma(n_a + n_b + offset)\n            - math.lgamma(offset)\n",
        "            - math.lgamma(n_a + n_b + offset)\n",
        "split-merge: the finite prior ratio misses -log Gamma(alpha/K)",
        "gibbs",
    ),
    Mutation(
        "finite-pymc-weights-alpha",
        "finite_mixture",
        "models/mixture.py",
        'pm.Dirichlet("w", a=np.full(k, self.alpha / k)',
        'pm.Dirichlet("w", a=np.full(k, self.alpha)',
        "PyMC reference: w ~ Dir(alpha) instead of Dir(alpha/K)",
        "pymc",
    ),
    # ------------------------------------------------ Bayesian hierarchical clustering (BHC)
    Mutation(
        "bhc-leaf-pairs-beta-normaliser",
        "bhc",
        _BHC,
        "f = np.array([tables[0, 0, m] + tables[1, 0, 2 - m] - tables[2, 0, 2] for m in range(3)])",
        "f = np.array([tables[0, 0, m] + tables[1, 0, 2 - m] for m in range(3)])",
        "leaf-pair ranking (one matrix product) drops the Beta normaliser lgamma(a + b + 2): leaf "
        "pairs outrank merged nodes",
        "tree",
    ),
    Mutation(
        "bhc-log-pi-is-log-1-minus-pi",
        "bhc",
        "models/bhc.py",
        "return log_d, tot - log_d, one - tot, two - tot, a - log_d",
        "return log_d, tot - log_d, one - tot, two - tot, b - log_d",
        "merge quantities return log(1 - pi_k) as log pi_k (the tree and its r_k are unchanged)",
        "tree",
    ),
    Mutation(
        "bhc-rescan-heap-not-restored",
        "bhc",
        _BHC,
        "            _sift(heap, pos, best, size, 0)  # a recomputed score never increases\n",
        "",
        "after a rescan lowers the top node's score the heap is not sifted: a stale top is merged",
        "tree",
    ),
    Mutation(
        "bhc-new-node-scan-off-by-one",
        "bhc",
        _BHC,
        "        for idx in range(n_live):\n            j = live[idx]\n            s = _pair_score(\n"
        "                kind, hyper, tables, const, lgn, rows, log_d, log_ev, log_alpha, k, j",
        "        for idx in range(n_live - 1):\n            j = live[idx]\n            s = _pair_score(\n"
        "                kind, hyper, tables, const, lgn, rows, log_d, log_ev, log_alpha, k, j",
        "a new node is scored against every live node but the last",
        "tree",
    ),
    Mutation(
        "embhc-leaf-d-drops-gamma",
        "bhc",
        "models/bhc.py",
        "log_d[:L] = math.log(self.alpha) + gammaln(sizes)  # Algorithm 3.3: d = alpha Gamma(n_i)",
        "log_d[:L] = math.log(self.alpha)  # Algorithm 3.3: d = alpha Gamma(n_i)",
        "leaf d = alpha instead of alpha Gamma(n_c): wrong only for EMBHC's cluster leaves",
        "tree",
    ),
    Mutation(
        "rbhc-size-prior-pseudo-count",
        "bhc",
        _BHC,
        "log_prior = np.log(stats[:, 0])",
        "log_prior = np.log(stats[:, 0] + 1.0)",
        "RBHC filter: CRP weight n_c + 1 instead of n_c",
        "tree",
    ),
    Mutation(
        "rbhc-pi-prior-first-merge",
        "bhc",
        _BHC,
        "0.0 if p < m else float(tree.log_pi[p - m])",
        "0.0 if p <= m else float(tree.log_pi[p - m])",
        "RBHC filter_prior='pi': the subsample tree's first merge (node m) gets a single item's pi = 1",
        "tree",
    ),
    Mutation(
        "rbhc-filter-drops-prior",
        "bhc",
        _BHC,
        "side = _argmax_predictive(comp, stats, X[rest], log_prior)",
        "side = _argmax_predictive(comp, stats, X[rest])",
        "RBHC filter ignores the side's prior pi_c (equal priors, as EMBHC's)",
        "tree",
    ),
    Mutation(
        "embhc-stale-seed-statistics",
        "bhc",
        _BHC,
        "new = _argmax_predictive(comp, stats, X)",
        "new = _argmax_predictive(comp, seed_stats, X)",
        "EMBHC: hard-EM steps reassign against the seed items' statistics, not the clusters'",
        "tree",
    ),
    Mutation(
        "embhc-em-steps-off-by-one",
        "bhc",
        _BHC,
        "    for _ in range(n_em_steps):\n",
        "    for _ in range(n_em_steps - 1):\n",
        "EMBHC runs one hard-EM step fewer than asked",
        "tree",
    ),
    # ------------------------------------------------------------------------ Bayesian Sets
    Mutation(
        "bsets-c-drops-normaliser",
        "bayesian_sets",
        _SETS,
        "c = log_ab - float(np.sum(np.log(a + b + n))) + float(np.sum(shift))",
        "c = log_ab + float(np.sum(shift))",
        "constant c of (4.13) drops sum log(a + b + N) (the ranking is unchanged, the scores not)",
        "score",
    ),
    Mutation(
        "bsets-query-weight-pseudo-count",
        "bayesian_sets",
        _SETS,
        "weights[cols] = np.log1p(sums / a[cols]) - shift",
        "weights[cols] = np.log1p(sums / (a[cols] + 1.0)) - shift",
        "q_j of (4.16) with pseudo-count a_j + 1 instead of a_j",
        "score",
    ),
    Mutation(
        "bsets-shift-off-by-one",
        "bayesian_sets",
        _SETS,
        "shift = np.log1p((n - sums) / b[cols])",
        "shift = np.log1p((n - sums - 1.0) / b[cols])",
        "query features' shift log(1 + (N - m_j) / b_j) with N - m_j - 1",
        "score",
    ),
    Mutation(
        "bsets-base-stale-cache",
        "bayesian_sets",
        _SETS,
        "        if n not in self._bases:\n",
        "        if not self._bases:\n",
        "the per-query-size cache of the absent features' weights is filled once: a later query "
        "of another size reuses the first size's",
        "score",
    ),
    # ----------------------------------------------------------- pairwise clustering annealing
    Mutation(
        "pairwise-potential-self-share",
        "pairwise",
        _PAIR,
        "    n_rest = sizes[v] - r\n",
        "    n_rest = sizes[v]\n",
        "mean-field potential (26): the item's own share not removed from the cluster size",
        "annealing",
    ),
    Mutation(
        "pairwise-centre-factor",
        "pairwise",
        _PAIR,
        "centre = w_rest / (2.0 * n_rest) if n_rest > 1e-12 else 0.0",
        "centre = w_rest / n_rest if n_rest > 1e-12 else 0.0",
        "mean-field potential (26): the centre term misses its factor 1/2",
        "annealing",
    ),
    Mutation(
        "pairwise-logit-sign",
        "pairwise",
        _PAIR,
        "logits[v] = -(potential - fields[i, v]) / temperature",
        "logits[v] = (potential - fields[i, v]) / temperature",
        "mean-field update with the sign of the potential inverted (favours the worst cluster)",
        "annealing",
    ),
    Mutation(
        "pairwise-start-below-critical",
        "pairwise",
        _PAIR,
        "T0 = 1.5 * T_c if T_c > 0 else max(float(D.max()), 1e-12)",
        "T0 = 0.5 * T_c if T_c > 0 else max(float(D.max()), 1e-12)",
        "schedule starts at 0.5 T_c instead of 1.5 T_c (below the first phase transition)",
        "annealing",
    ),
    # ------------------------------------------------------------ central clustering annealing
    Mutation(
        "central-critical-temperature-factor",
        "central",
        _PAIR,
        "temperatures[v], axes[v], spreads[v] = 2.0 * top, vectors[:, -1], np.sqrt(top)",
        "temperatures[v], axes[v], spreads[v] = top, vectors[:, -1], np.sqrt(top)",
        "cluster critical temperature lambda_max instead of 2 lambda_max",
        "annealing",
    ),
    Mutation(
        "central-em-unnormalised-sizes",
        "central",
        _PAIR,
        "                share = weights[v] / total\n                sizes[v] += share\n",
        "                share = weights[v] / total\n                sizes[v] += weights[v]\n",
        "EM kernel: cluster mass sums the unnormalised weights (centroids (14) off)",
        "annealing",
    ),
    Mutation(
        "central-unstable-inverted",
        "central",
        _PAIR,
        "unstable = order[temperatures[order] > T * (1 + _UNSTABLE_MARGIN)][:1]",
        "unstable = order[temperatures[order] < T * (1 + _UNSTABLE_MARGIN)][:1]",
        "a cluster is split when it is stable (its critical temperature below T), not unstable",
        "annealing",
    ),
    Mutation(
        "central-log-partition-drops-largest",
        "central",
        _PAIR,
        "log_partition += np.log(total) + largest",
        "log_partition += np.log(total)",
        "EM kernel: log Z_i misses the shift it was computed with (free energy (10) wrong)",
        "annealing",
    ),
    Mutation(
        "pairwise-move-within-factor",
        "pairwise",
        _PAIR,
        "within[v] += 2.0 * delta[v] * a_t[v, i]",
        "within[v] += delta[v] * a_t[v, i]",
        "_move_item: the within-cluster sum W_v gains the item's pairs once instead of twice "
        "(D is symmetric)",
        "annealing",
    ),
    Mutation(
        "central-join-cost-lloyd",
        "central",
        _PAIR,
        "return _squared_distance(X, i, centroids, b) * sizes[b] / (sizes[b] + 1.0)",
        "return _squared_distance(X, i, centroids, b)",
        "Hartigan's join cost ||x_i - y_b||^2 (Lloyd's) without the factor n_b / (n_b + 1) of "
        "the moving centroid",
        "annealing",
    ),
    Mutation(
        "central-leave-cost-factor",
        "central",
        _PAIR,
        "return _squared_distance(X, i, centroids, a) * sizes[a] / (sizes[a] - 1.0)",
        "return _squared_distance(X, i, centroids, a) * sizes[a] / (sizes[a] + 1.0)",
        "Hartigan's leave cost with the join factor n_a / (n_a + 1) instead of n_a / (n_a - 1)",
        "annealing",
    ),
    Mutation(
        "central-move-stale-source",
        "central",
        _PAIR,
        "        if sizes[a] > 0.0:\n            centroids[a, j] = sums[a, j] / sizes[a]\n",
        "",
        "_move_point: the centroid of the cluster an item leaves is not updated (stale centroid)",
        "annealing",
    ),
    # ------------------------------------------------------------------- topic trees (seed 003)
    Mutation(
        "topic-tree-dual-marginal-sign",
        "topic_tree",
        _TREE,
        "multipliers = -result.ineqlin.marginals",
        "multipliers = result.ineqlin.marginals",
        "minimax pseudo-inverse by the dual: HiGHS' marginals taken as the multipliers without "
        "their sign (scipy reports them <= 0 for <= constraints)",
        "lp",
    ),
    Mutation(
        "topic-tree-relevance-distinct-words",
        "topic_tree",
        _TREE,
        "result = np.asarray(counts @ inverse.T) / lengths[:, None]",
        "result = np.asarray(counts @ inverse.T) / counts.getnnz(axis=1)[:, None]",
        "relevance r~ = V D~ with the counts divided by the number of distinct words, not the length",
        "lp",
    ),
    Mutation(
        "topic-tree-dual-feasibility-max-norm",
        "topic_tree",
        _TREE,
        "if np.abs(image).sum() <= 1.0 + _FEASIBILITY or new_cut.tobytes() in seen:",
        "if np.abs(image).max() <= 1.0 + _FEASIBILITY or new_cut.tobytes() in seen:",
        "constraint generation stops when ||W y||_inf <= 1 (not ||W y||_1): an infeasible dual "
        "point, so a left inverse that is not the minimax one",
        "lp",
    ),
    Mutation(
        "topic-tree-related-baseline-row",
        "topic_tree",
        _TREE,
        "related[leaf] |= (inverse[0] @ matrix) >= tau",
        "related[leaf] |= (inverse[1] @ matrix) >= tau",
        "Algorithm 3.2 step 2a thresholds the topics' relevance to the baseline T(0), not to T(c)",
        "lp",
    ),
    # ------------------------------------- IOMM and BPM (anchored on their code at 15:20, issue 25)
    Mutation(
        "iomm-ibp-odds-self-count",
        "iomm",
        _IOMM,
        "    return math.log(others) - math.log(n_items - others)",
        "    return math.log(others + 1) - math.log(n_items - others)",
        "IBP prior odds (7.12) of joining cluster k with m_-i,k + 1 (the item counted itself)",
        "gibbs",
        levels=("exact", "calibrated"),
    ),
    Mutation(
        "iomm-flip-stale-probabilities",
        "iomm",
        _IOMM,
        "                    eta_i[d] += sign * logits[k, d]\n                _set_probabilities(eta_i, p, q)\n",
        "                    eta_i[d] += sign * logits[k, d]\n",
        "after a membership flip the item's p = sigmoid(eta) is not refreshed (stale in the next flips)",
        "gibbs",
        levels=("exact", "calibrated"),
    ),
    Mutation(
        "iomm-theta-hastings-missing",
        "iomm",
        _IOMM,
        "            ratio -= _log_beta_density(new, omega * old, omega * (1.0 - old))\n",
        "",
        "theta's MH step misses the forward Beta proposal density T(new | old) (Hastings ratio)",
        "gibbs",
        levels=("exact", "calibrated"),
    ),
    Mutation(
        "bpm-scale-move-drops-jacobian",
        "bpm",
        _BPM,
        "log_ratio = lp - state.log_density + log_jacobian",
        "log_ratio = lp - state.log_density",
        "the scale move of log a and the tail memberships misses its log-Jacobian",
        "gibbs",
        levels=("reference", "calibrated"),
    ),
    Mutation(
        "bpm-leapfrog-full-first-kick",
        "bpm",
        _BPM,
        "    for i in range(q.size):\n        p[i] += 0.5 * step_size * grad[i]\n",
        "    for i in range(q.size):\n        p[i] += step_size * grad[i]\n",
        "leapfrog starts with a full momentum kick instead of a half one (not reversible)",
        "gibbs",
        levels=("exact", "reference", "calibrated"),
    ),
    Mutation(
        "bpm-energy-error-sign",
        "bpm",
        _BPM,
        "energy_error = (new_kinetic - lp) - (kinetic - state.log_density)",
        "energy_error = (new_kinetic + lp) - (kinetic + state.log_density)",
        "HMC accept: the potential energy taken as +log density (inverted acceptance ratio)",
        "gibbs",
        levels=("reference", "calibrated"),
    ),
    # ---------------------------------------------- hierarchical cluster-abstraction model (HACM)
    Mutation(
        "hacm-draw-tau-eta",
        "cluster_abstraction",
        _HACM,
        "tau = dirichlet_rows(rng, np.where(self.valid, state.c_lev + model.gamma, 0.0))",
        "tau = dirichlet_rows(rng, np.where(self.valid, state.c_lev + model.eta, 0.0))",
        "draw(): tau ~ Dir(c + eta) instead of Dir(c + gamma)",
        "gibbs",
    ),
    Mutation(
        "hacm-draw-rho-minus-one",
        "cluster_abstraction",
        _HACM,
        "rho = dirichlet_rows(rng, (state.sizes + model.alpha)[None, :])[0]",
        "rho = dirichlet_rows(rng, (state.sizes + model.alpha - 1.0)[None, :])[0]",
        "draw(): rho ~ Dir(m + alpha - 1) instead of Dir(m + alpha)",
        "gibbs",
    ),
    Mutation(
        "hacm-gibbs-drop-alpha",
        "cluster_abstraction",
        _HACM,
        "            lp = math.log(sizes[a] + alpha)\n            for t in range(first, last):\n",
        "            lp = math.log(sizes[a] + 1e-300)\n            for t in range(first, last):\n",
        "leaf weight m_a instead of m_a + alpha in the leaf conditional",
        "gibbs",
    ),
    Mutation(
        "hacm-gibbs-level-normaliser",
        "cluster_abstraction",
        _HACM,
        "lp -= math.log(c_lev_tot[a] + lengths[a] * gamma)",
        "lp -= math.log(c_lev_tot[a] + gamma)",
        "leaf conditional: level normaliser c_a + gamma instead of c_a + L_a gamma",
        "gibbs",
    ),
    Mutation(
        "hacm-em-tau-pseudo-count",
        "cluster_abstraction",
        _HACM,
        "return _normalise_tau(n_tau, model.gamma - 1.0, model.tree.paths >= 0)",
        "return _normalise_tau(n_tau, model.gamma, model.tree.paths >= 0)",
        "MAP M-step of tau with pseudo-count gamma instead of gamma - 1",
        "em",
        levels=("optimality",),
    ),
    Mutation(
        "hacm-em-q-pseudo-count",
        "cluster_abstraction",
        _ONE,  # the row mixtures' M-step, shared by the ACM and the HACM
        "new_q = normalise_rows(n_q, model.eta - 1.0, n_q.shape[1])",
        "new_q = normalise_rows(n_q, model.eta, n_q.shape[1])",
        "MAP M-step of q with pseudo-count eta instead of eta - 1",
        "em",
        levels=("optimality",),
    ),
    Mutation(
        "hacm-em-rho-pseudo-count",
        "cluster_abstraction",
        _ONE,  # the row mixtures' M-step, shared by the ACM and the HACM
        "new_rho = normalise_rows(resp_sum[None, :], model.alpha - 1.0, len(resp_sum))[0]",
        "new_rho = normalise_rows(resp_sum[None, :], model.alpha, len(resp_sum))[0]",
        "MAP M-step of rho with pseudo-count alpha instead of alpha - 1",
        "em",
        levels=("optimality",),
    ),
    # ---------------- fast methods that no level ran until stops 38-39 (issue 25: 3 per method)
    # ``levels`` names the level that runs each: the exact level's AD-LDA checks
    # (``ad_lda.validation_checks``), the optimality level's certificates of the point estimators.
    Mutation(
        "ad-lda-merge-drops-topic-totals",
        "aspect",
        _ADLDA,
        "        np.add(state.n_topic, local_topic - topic, out=state.n_topic)\n",
        "",
        "AD-LDA merge: the shards' changes of the topic totals n_k are not added (a stale cache "
        "of n_word_topic's column sums)",
        "gibbs",
        levels=("exact",),
        method="ad_lda",
    ),
    Mutation(
        "ad-lda-shards-share-counts",
        "aspect",
        _ADLDA,
        "local_word_topic, local_topic = word_topic.copy(), topic.copy()",
        "local_word_topic, local_topic = word_topic, topic",
        "AD-LDA: every shard sweeps the round's one copy of the global counts, so each merge "
        "adds that copy's difference from itself (zero): the global counts never change",
        "gibbs",
        levels=("exact",),
        method="ad_lda",
    ),
    Mutation(
        "ad-lda-shard-last-document",
        "aspect",
        _ADLDA,
        "doc_ptr[first : last + 1] - start,",
        "doc_ptr[first:last] - start,",
        "AD-LDA: a shard's token pointer stops one document early (the shard's last document is "
        "never swept)",
        "gibbs",
        levels=("exact",),
        method="ad_lda",
    ),
    Mutation(
        "one-sided-hard-centroid-pseudo-count",
        "one_sided",
        _ONE,
        "q = normalise_rows((indicator @ counts).toarray().astype(float), eta1, data.n_cols)",
        "q = normalise_rows((indicator @ counts).toarray().astype(float), model.eta, data.n_cols)",
        "hard ACM: centroid update (24) with pseudo-count eta instead of eta - 1",
        "em",
        levels=("optimality",),
        method="hard",
    ),
    Mutation(
        "one-sided-hard-rho-pseudo-count",
        "one_sided",
        _ONE,
        "rho = normalise_rows(np.bincount(z, minlength=k)[None, :].astype(float), alpha1, k)[0]",
        "rho = normalise_rows(np.bincount(z, minlength=k)[None, :].astype(float), model.alpha, "
        "k)[0]",
        "hard ACM: MAP weights of the final partition with pseudo-count alpha instead of alpha - 1",
        "em",
        levels=("optimality",),
        method="hard",
    ),
    Mutation(
        "one-sided-hard-objective-drops-prior",
        "one_sided",
        _ONE,
        "penalty = eta1 * log_q.sum() if eta1 else 0.0",
        "penalty = 0.0",
        "hard ACM: the objective misses the prior term (eta - 1) sum log q, so n_init keeps the "
        "start of best likelihood, not of best objective",
        "em",
        levels=("optimality",),
        method="hard",
    ),
    Mutation(
        "two-sided-hard-stale-block",
        "two_sided",
        _TWO,
        "        block = _indicator(labels_i, kx).T @ row_mass\n        col_mass",
        "        col_mass",
        "hard SCM: the block counts are not recomputed after the I-step (the J-step's c mixes the "
        "old row partition's blocks with the new one's margins)",
        "em",
        levels=("optimality",),
        method="hard",
    ),
    Mutation(
        "two-sided-hard-column-scores-untransposed",
        "two_sided",
        _TWO,
        "labels_j = self._assign(_scores(col_mass, c.T), labels_j)",
        "labels_j = self._assign(_scores(col_mass, c), labels_j)",
        "hard SCM: J-step scores use c, not its transpose (right shape at Kx = Ky)",
        "em",
        levels=("optimality",),
        method="hard",
    ),
    Mutation(
        "two-sided-hard-ties-move",
        "two_sided",
        _TWO,
        "keep = h[np.arange(h.shape[0]), current] >= best",
        "keep = h[np.arange(h.shape[0]), current] > best",
        "hard SCM: a tie moves the item to the lowest label instead of keeping its cluster (the "
        "objective can stall while the partition cycles)",
        "em",
        levels=("optimality",),
        method="hard",
    ),
    Mutation(
        "pairwise-greedy-keeps-worst-start",
        "pairwise",
        _PAIR,
        "        if costs[run] < best_cost:\n            best, best_cost = labels, costs[run]\n",
        "        if best is None or costs[run] > best_cost:\n"
        "            best, best_cost = labels, costs[run]\n",
        "greedy: of n_init starts the one of highest cost is returned (comparison inverted)",
        "annealing",
        levels=("optimality",),
        method="greedy",
    ),
    Mutation(
        "pairwise-greedy-own-pairs-kept",
        "pairwise",
        _PAIR,
        "w_rest = within[v] - (2.0 * a_t[v, i] if v == u else 0.0)",
        "w_rest = within[v]",
        "greedy local search (also the annealing's final quench): the item's own pairs not removed "
        "from its cluster's within sum before the increment (24)",
        "annealing",
        levels=("optimality",),
        method="greedy",
    ),
    Mutation(
        "pairwise-greedy-rest-size-off-by-one",
        "pairwise",
        _PAIR,
        "n_rest = sizes[v] - (1.0 if v == u else 0.0)",
        "n_rest = sizes[v] - (1.0 if v != u else 0.0)",
        "greedy local search (also the annealing's final quench): the item removed from the sizes "
        "of the other clusters instead of its own",
        "annealing",
        levels=("optimality",),
        method="greedy",
    ),
    Mutation(
        "pairwise-ward-square-matrix",
        "pairwise",
        _PAIR,
        "tree = hierarchy.linkage(data.condensed(), method=linkage)",
        "tree = hierarchy.linkage(data.D, method=linkage)",
        "ward: scipy's linkage given the square matrix D, which it reads as N observations of N "
        "features (Euclidean distances between rows of D), not the condensed dissimilarities",
        "baseline",
        method="ward",
    ),
    Mutation(
        "pairwise-ward-cut-off-by-one",
        "pairwise",
        _PAIR,
        'raw = hierarchy.fcluster(tree, t=k, criterion="maxclust")',
        'raw = hierarchy.fcluster(tree, t=k - 1, criterion="maxclust")',
        "ward: the tree cut at K - 1 clusters",
        "baseline",
        method="ward",
    ),
    Mutation(
        "pairwise-ward-cut-by-distance",
        "pairwise",
        _PAIR,
        'raw = hierarchy.fcluster(tree, t=k, criterion="maxclust")',
        'raw = hierarchy.fcluster(tree, t=k, criterion="distance")',
        "ward: the tree cut at height K (criterion 'distance') instead of at K clusters",
        "baseline",
        method="ward",
    ),
    Mutation(
        "pairwise-mds-centring-sign",
        "pairwise",
        _PAIR,
        "B = -0.5 * (D - D.mean(axis=0)[None, :] - D.mean(axis=1)[:, None] + D.mean())",
        "B = 0.5 * (D - D.mean(axis=0)[None, :] - D.mean(axis=1)[:, None] + D.mean())",
        "MDS: classical scaling's double-centred Gram matrix with the wrong sign (the start "
        "embedding from the smallest eigenvalues of the true one)",
        "annealing",
        levels=("optimality",),
        method="mds",
    ),
    Mutation(
        "pairwise-mds-smallest-eigenvalues",
        "pairwise",
        _PAIR,
        "top = np.argsort(values)[::-1][:n_dims]",
        "top = np.argsort(values)[:n_dims]",
        "MDS: classical scaling keeps the eigenvectors of the smallest eigenvalues",
        "annealing",
        levels=("optimality",),
        method="mds",
    ),
    Mutation(
        "pairwise-mds-embedding-half",
        "pairwise",
        _PAIR,
        'b = 0.5 * np.einsum("iv,iv,ivp->ip", q, g, diffs',
        'b = np.einsum("iv,iv,ivp->ip", q, g, diffs',
        "MDS: the right-hand side of eq. (34) misses its factor 1/2 (the embedding solves the "
        "wrong fixed point)",
        "annealing",
        levels=("optimality",),
        method="mds",
    ),
    Mutation(
        "hacm-three-stage-skips-last",
        "cluster_abstraction",
        _HACM,
        '("constant", "leaf", "object").index(model.tau) + 1]',
        '("constant", "leaf", "object").index(model.tau)]',
        "three-stage EM: the stages stop one early (the model's own tau form is never fitted)",
        "em",
        levels=("optimality",),
        method="three_stage",
    ),
    Mutation(
        "hacm-three-stage-later-beta-one",
        "cluster_abstraction",
        _HACM,
        "result = annealed_em(stage_model, data, init=start, betas=[result.betas[-1]], **later)",
        "result = annealed_em(stage_model, data, init=start, betas=[1.0], **later)",
        "three-stage EM: the later stages run at beta = 1, not at stage 1's final inverse "
        "temperature (a wrong schedule constant)",
        "em",
        levels=("optimality",),
        method="three_stage",
    ),
    Mutation(
        "hacm-three-stage-drops-tol",
        "cluster_abstraction",
        _HACM,
        'for name in ("max_iter", "tol", "overrelax", "n_threads",',
        'for name in ("max_iter", "overrelax", "n_threads",',
        "three-stage EM: the later stages ignore the user's tol (they stop at the default)",
        "em",
        levels=("optimality",),
        method="three_stage",
    ),
)


KNOWN_REACH = {
    "central-log-partition-drops-largest": (
        "log Z_i only feeds the over-relaxation's overshoot test in `_central_em` (the trace "
        "recomputes the free energy): it changes how fast EM converges, not its fixed points"
    ),
    "topic-tree-dual-feasibility-max-norm": (
        "a left inverse that is not the minimax one is unbiased all the same, so the reference "
        "level (relevances inside the posterior) cannot see it; the unit tests' certificate "
        "(`row_lower_bounds` against `row_bounds`) checks minimality"
    ),
    "topic-tree-related-baseline-row": (
        "Algorithm 3.2 (`hierarchy_from_topics`) is run by no level: the family's recipe has the "
        "reference level only; a level comparing the hierarchy with the simulated tree would reach it"
    ),
}
"""Mutation id -> why no level catches it (printed for the ones a run does not catch)."""

LEVELS_KEPT = {
    "mode-matched": (
        "it compares the sampler with PyMC mode by mode on real data, the only level that sees "
        "multimodal posteriors; every mutation it catches here is also caught at a synthetic level"
    ),
    "density": (
        "the only level that reads the PyMC declaration's log density point by point against the "
        "model's; a wrong prior there also moves the reference and optimality levels (in the "
        "previous round it alone caught one-sided-pymc-rho-eta)"
    ),
    "calibrated": (
        "SBC runs the sampler over the prior (hyperparameters alternated), where the exact level's "
        "tiny problems do not reach"
    ),
    "reference": ("the only level that runs every family on data of realistic size against PyMC"),
}
"""Level -> why it is kept although no mutation of the run is caught by it alone."""

UNREACHED_METHODS: dict = {}
"""Registered fast methods (``latentzoo list``) that no ``validate`` level runs, so that no
mutation of their own code can be caught: (family, method) -> why. A level for each needs its
family's recipe (``inference/recipes.py``) to run it. Empty since stop 39: AD-LDA's exact
properties run at the aspect model's exact level, the HACM's ``three_stage`` is certified by its
optimality level."""

KNOWN_REACH.update(
    {
        m.id: f"{m.family} `{fast_method(m)}`: {UNREACHED_METHODS[m.family, fast_method(m)]}"
        for m in MUTATIONS
        if (m.family, fast_method(m)) in UNREACHED_METHODS and m.id not in KNOWN_REACH
    }
)
