"""Pieces the co-occurrence families share (aspect model, one-sided and two-sided clustering, the
product-space mixture, the cluster abstraction model), written once.

- :func:`checked_grid_data`, :func:`grid_coords`: the data check and coordinates of the families
  that cluster rows and columns.
- The simulators' draws: :func:`separated_profiles`, the well-separated block profiles of the
  ``separated=True`` simulators (the data on which PyMC's chains agree, ``shared/DESIGN.md``
  section 5); :func:`draw_profiles`, those or draws from the Dirichlet prior; :func:`draw_counts`,
  multinomial counts from unnormalised weights; :func:`draw_row_mixture`, the weights, profiles
  and labels of a mixture over whole rows; :func:`simulated_corpus`, the counts as data.
- :class:`CorpusSimulator`: the ``simulate`` interface of the co-occurrence families (sizes with
  per-family defaults, ``separated``, ``separation``), declared once; a family draws in ``_draw``.
- :class:`RowMixture`: the members of a mixture over whole rows, ``P(S_i) = sum_k rho_k P(S_i | k)``
  (one-sided clustering, Hofmann & Puzicha 1998, eq. (29); the cluster abstraction model, eq. (55)),
  built on the family's own ``log P(S_i | k)``.
- :class:`DyadPredictive`: the held-out score and invariants of a family whose predictive
  ``P(y_j | x_i)`` needs no data (aspect model, product-space mixture); both bases are
  :class:`CountRows` (the multinomial coefficient of a row of counts).
"""

from __future__ import annotations

import inspect
import textwrap
from typing import ClassVar

import numpy as np

from latentzoo.data import CoOccurrence
from latentzoo.data.checks import as_rng
from latentzoo.models._checks import (
    check_data_shape,
    check_fits_data,
    check_integer,
    check_positive,
)
from latentzoo.models.base import balanced_labels
from latentzoo.models.conjugate import dirichlet_logpdf, log_multinomial_coefficient, row_logsumexp
from latentzoo.models.invariants import coassignment_pairs, default_dyads

__all__ = [
    "CorpusSimulator",
    "CountRows",
    "DyadPredictive",
    "RowMixture",
    "checked_grid_data",
    "draw_counts",
    "draw_profiles",
    "draw_row_mixture",
    "grid_coords",
    "separated_profiles",
    "simulated_corpus",
]


def separated_profiles(n_clusters: int, size: int, separation: float) -> np.ndarray:
    """Well-separated profiles: row ``k`` puts mass ``separation`` uniformly on its own block of
    ``size // n_clusters`` entries and the rest uniformly on all ``size`` entries.

    Parameters
    ----------
    n_clusters : int
        Number of profiles (rows); at most ``size``.
    size : int
        Number of entries of each profile (words, documents).
    separation : float
        Mass of a profile's own block, in [0, 1].

    Returns
    -------
    numpy.ndarray of shape (n_clusters, size); rows sum to one

    Examples
    --------
    >>> separated_profiles(2, 4, 0.8)
    array([[0.45, 0.45, 0.05, 0.05],
           [0.05, 0.05, 0.45, 0.45]])
    """
    block = size // n_clusters
    table = np.full((n_clusters, size), (1.0 - separation) / size)
    for cluster in range(n_clusters):
        table[cluster, cluster * block : (cluster + 1) * block] += separation / block
    return table / table.sum(axis=1, keepdims=True)


def draw_profiles(
    rng, n_profiles: int, size: int, eta: float, separated: bool, separation: float
) -> np.ndarray:
    """The ``n_profiles`` distributions over ``size`` entries (words, documents) of a simulator.

    ``separated=False``: i.i.d. draws from the symmetric prior ``Dir(eta)`` (one call to
    ``rng.dirichlet``). ``separated=True``: the fixed :func:`separated_profiles`, drawing nothing
    from ``rng``.

    Returns
    -------
    numpy.ndarray of shape (n_profiles, size); rows sum to one

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> draw_profiles(rng, 2, 5, 1.0, separated=False, separation=0.9).sum(axis=1).round(12)
    array([1., 1.])
    >>> draw_profiles(rng, 2, 4, 1.0, separated=True, separation=0.8)[0]
    array([0.45, 0.45, 0.05, 0.05])
    """
    if separated:
        return separated_profiles(n_profiles, size, separation)
    return rng.dirichlet(np.full(size, eta), size=n_profiles)


def draw_counts(rng, n_tokens, weights) -> np.ndarray:
    """Multinomial counts of ``n_tokens`` draws from each row of non-negative ``weights``.

    The weights (products of simulated parameters, such as ``theta @ phi``) are clipped at 0, as
    rounding may leave a ``-0.0`` or a tiny negative, and normalised along the last axis, so a
    row need not sum to one exactly.

    Parameters
    ----------
    rng : numpy.random.Generator
    n_tokens : int or array-like of int
        Draws per row (broadcast against the rows of ``weights``).
    weights : array-like of shape (..., M)

    Returns
    -------
    numpy.ndarray of int64, the shape of ``weights``

    Examples
    --------
    >>> draw_counts(np.random.default_rng(0), 10, [[2.0, 0.0, 2.0], [0.0, 1.0, -1e-18]])
    array([[ 6,  0,  4],
           [ 0, 10,  0]])
    """
    probabilities = np.clip(weights, 0.0, None)
    probabilities /= probabilities.sum(axis=-1, keepdims=True)
    return rng.multinomial(n_tokens, probabilities)


def draw_row_mixture(
    rng,
    n_clusters: int,
    n_profiles: int,
    n_docs: int,
    n_words: int,
    doc_length: int,
    alpha: float,
    eta: float,
    separated: bool,
    separation: float,
    profiles_name: str = "n_components",
):
    """The weights, word profiles and row labels of a simulated mixture over whole rows.

    The part of the generative process the ACM (one profile per cluster) and the cluster
    abstraction model (one profile per node of the tree, a cluster per leaf) share:
    ``rho ~ Dir(alpha)``, ``q[p] ~ Dir(eta)`` over the ``n_words`` words and ``z_i ~ Cat(rho)``,
    drawn in that order. With ``separated=True``, profile ``p`` puts mass ``separation`` on its
    own block of words (:func:`separated_profiles`), ``rho`` is
    uniform and the rows are dealt to the clusters in turn, then shuffled.

    Parameters
    ----------
    rng : numpy.random.Generator
    n_clusters : int
        ``K``, the number of values of ``z``.
    n_profiles : int
        Rows of ``q``; ``profiles_name`` names it in the error of a separated draw with fewer
        words than profiles.
    n_docs, n_words, doc_length : int
        The simulator's sizes, checked here (``doc_length`` only checked: the caller draws the
        tokens).
    alpha, eta : float
        Concentrations of the Dirichlet priors of ``rho`` and ``q``.
    separated : bool
    separation : float
    profiles_name : str

    Returns
    -------
    rho : numpy.ndarray (K,)
    q : numpy.ndarray (n_profiles, n_words)
    z : numpy.ndarray (n_docs,) int64

    Raises
    ------
    ValueError
        If a size is not an integer (``n_docs``, ``n_words`` at least 1, ``doc_length`` at least
        0), or a separated draw has fewer words than profiles.

    Examples
    --------
    >>> rho, q, z = draw_row_mixture(np.random.default_rng(0), 2, 2, 5, 4, 10, 1.0, 1.0,
    ...                              separated=True, separation=0.8)
    >>> rho.tolist(), q.shape, sorted(np.bincount(z).tolist())
    ([0.5, 0.5], (2, 4), [2, 3])
    """
    check_integer("n_docs", n_docs)
    check_integer("n_words", n_words)
    check_integer("doc_length", doc_length, low=0)
    if separated and n_words < n_profiles:
        raise ValueError(
            f"separated profiles need n_words={n_words} >= {profiles_name}={n_profiles}"
        )
    # rho, q, z in this order: the order of the random draws is part of the simulator.
    rho = (
        np.full(n_clusters, 1.0 / n_clusters)
        if separated
        else rng.dirichlet(np.full(n_clusters, alpha))
    )
    q = draw_profiles(rng, n_profiles, n_words, eta, separated, separation)
    if separated:
        z = balanced_labels(rng, n_docs, n_clusters)
    else:
        z = rng.choice(n_clusters, size=n_docs, p=rho).astype(np.int64)
    return rho, q, z


def simulated_corpus(counts) -> CoOccurrence:
    """The simulated ``counts`` as a :class:`~latentzoo.data.CoOccurrence`; ``ValueError`` when
    they hold no observations (``doc_length = 0``), which no fit can use.

    Examples
    --------
    >>> simulated_corpus(np.zeros((2, 3), dtype=int))
    Traceback (most recent call last):
    ...
    ValueError: the simulated data hold no observations (doc_length = 0)
    """
    if counts.sum() == 0:
        raise ValueError("the simulated data hold no observations (doc_length = 0)")
    return CoOccurrence(counts)


SIMULATION_SIZE_DOCS = {
    "n_docs": "Documents (rows).",
    "n_words": "Vocabulary size (columns).",
    "doc_length": "Tokens drawn for every document.",
    "n_rows": "Row objects.",
    "n_cols": "Column objects.",
    "n_tokens": "Tokens (co-occurring pairs) drawn in all.",
}
"""What each size a co-occurrence simulator may take means (the ``Parameters`` of its docstring)."""

_SIMULATION_OPTIONS_DOC = """\
separated : bool, default False
    Draw a well-identified problem instead of a draw from the prior: clusters that each put mass
    ``separation`` on their own block (as described above), the data on which PyMC's chains agree
    (``shared/DESIGN.md`` section 5); not for SBC.
separation : float, default 0.9
    With ``separated=True``, the mass of a cluster's own block."""


class CorpusSimulator:
    """The ``simulate`` of the co-occurrence families, declared once.

    ``simulate(random_state=None, <sizes>, separated=False, separation=0.9)`` draws
    ``(data, truth)``: ``data`` a :class:`~latentzoo.data.CoOccurrence`, ``truth`` the family's
    parameters (and latent labels). A family declares

    - ``simulation_sizes``: its size parameters in order with their defaults (names from
      :data:`SIMULATION_SIZE_DOCS`);
    - ``_draw(rng, separated, separation, **sizes)``: the draw, whose docstring (the generative
      process, ``Returns``, ``Examples``) becomes that of ``simulate``.

    Each subclass that declares ``simulation_sizes`` gets its own ``simulate`` whose signature
    (``inspect.signature``, ``help()``) and docstring show its sizes and their defaults.
    """

    simulation_sizes: ClassVar[dict[str, int | None]] = {}

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        if "simulation_sizes" not in vars(cls):
            return
        signature = _simulation_signature(cls.simulation_sizes)

        def simulate(self, *args, **kwargs):
            arguments = signature.bind(self, *args, **kwargs)
            arguments.apply_defaults()
            options = dict(arguments.arguments)
            del options["self"]
            rng = as_rng(options.pop("random_state"))
            return self._draw(rng, **options)

        simulate.__signature__ = signature
        simulate.__doc__ = _simulation_doc(cls._draw.__doc__, cls.simulation_sizes)
        simulate.__qualname__ = f"{cls.__qualname__}.simulate"
        simulate.__module__ = cls.__module__
        cls.simulate = simulate


def _simulation_signature(sizes: dict) -> inspect.Signature:
    """``(self, random_state=None, <sizes with their defaults>, separated=False,
    separation=0.9)``, every parameter positional-or-keyword, in that order."""
    keyword = inspect.Parameter.POSITIONAL_OR_KEYWORD
    parameters = [
        inspect.Parameter("self", keyword),
        inspect.Parameter("random_state", keyword, default=None),
        *(
            inspect.Parameter(name, keyword, default=default, annotation=_size_type(default))
            for name, default in sizes.items()
        ),
        inspect.Parameter("separated", keyword, default=False, annotation="bool"),
        inspect.Parameter("separation", keyword, default=0.9, annotation="float"),
    ]
    return inspect.Signature(parameters)


def _size_type(default) -> str:
    """``"int"``, or ``"int | None"`` for a size whose default ``None`` the family derives."""
    return "int" if default is not None else "int | None"


def _simulation_doc(draw_doc: str, sizes: dict) -> str:
    """The docstring of a family's ``simulate``: its ``_draw`` docstring with the ``Parameters``
    section (shared descriptions, the family's defaults) before ``Returns``."""
    size_lines = [
        f"{name} : {_size_type(default)}, default {default}\n    {SIMULATION_SIZE_DOCS[name]}"
        for name, default in sizes.items()
    ]
    parameters = "\n".join(
        [
            "Parameters",
            "----------",
            "random_state : int, numpy.random.Generator or None\n    Seed or generator of the draws.",
            *size_lines,
            _SIMULATION_OPTIONS_DOC,
        ]
    )
    first, _, rest = draw_doc.partition("\n")
    body = textwrap.dedent(rest)
    head, returns, tail = body.partition("Returns\n-------")
    if not returns:
        return f"{first}\n{body.rstrip()}\n\n{parameters}\n"
    return f"{first}\n{head}{parameters}\n\n{returns}{tail}"


def checked_grid_data(data, n_row_clusters: int, n_col_clusters: int) -> CoOccurrence:
    """``data`` as a :class:`~latentzoo.data.CoOccurrence` for a family that clusters both rows
    and columns (two-sided clustering, the product-space mixture): ``ValueError`` when there are
    more row clusters than rows or more column clusters than columns.

    Parameters
    ----------
    data : CoOccurrence or array-like of counts
    n_row_clusters, n_col_clusters : int

    Returns
    -------
    CoOccurrence

    Examples
    --------
    >>> from latentzoo.data import load
    >>> checked_grid_data(load("toy"), 2, 3).shape
    (6, 8)
    >>> checked_grid_data(load("toy"), 7, 2)
    Traceback (most recent call last):
    ...
    ValueError: n_row_clusters=7 is larger than the data supports: only 6 rows
    """
    data = CoOccurrence.coerce(data)
    check_fits_data("n_row_clusters", n_row_clusters, data.n_rows, "rows")
    check_fits_data("n_col_clusters", n_col_clusters, data.n_cols, "columns")
    return data


def grid_coords(data, n_row_clusters: int, n_col_clusters: int) -> dict:
    """ArviZ/PyMC coordinates of a family that clusters both rows and columns: rows, columns, both
    cluster sets and the compared dyads (:func:`~latentzoo.models.invariants.default_dyads`).

    Examples
    --------
    >>> from latentzoo.data import load
    >>> sorted(grid_coords(load("toy"), 2, 3))
    ['col', 'col_cluster', 'dyad', 'row', 'row_cluster']
    """
    return {
        "row": list(data.row_labels),
        "col": list(data.col_labels),
        "row_cluster": np.arange(n_row_clusters),
        "col_cluster": np.arange(n_col_clusters),
        "dyad": np.arange(len(default_dyads(data))),
    }


def _row_mixture_log_likelihood(joint: np.ndarray, data) -> np.ndarray:
    """Row ``logsumexp`` of ``log rho_k + log P(S_i | k)``; exactly 0 for rows without observations."""
    per_row = row_logsumexp(joint)
    per_row[data.row_totals == 0] = 0.0
    return per_row


class CountRows:
    """``log_multinomial_coefficient`` of a family whose rows are multinomial counts."""

    def log_multinomial_coefficient(self, data) -> np.ndarray:
        """``log(n_i! / prod_j n_ij!)`` per row: added to :meth:`log_likelihood` it gives the
        multinomial log-pmf of the counts of row ``i`` that PyMC's ``counts`` variable reports
        (the factor is the same for every latent class).

        Examples
        --------
        >>> from latentzoo.data import CoOccurrence
        >>> from latentzoo.models import OneSidedClustering
        >>> OneSidedClustering(1).log_multinomial_coefficient(CoOccurrence([[1, 1], [2, 0]]))
        array([0.69314718, 0.        ])
        """
        return log_multinomial_coefficient(data)


class RowMixture(CountRows):
    """A mixture over whole rows of co-occurrence counts: ``P(S_i) = sum_k rho_k P(S_i | k)``.

    One-sided clustering (Hofmann & Puzicha 1998, eq. (29)) and the cluster abstraction model
    (eq. (55)) differ only in ``log P(S_i | k)``; the members below are written once on top of two
    methods a family provides:

    - ``_per_cluster(params, data)``: ``log P(S_i | k)`` of every row and cluster (N x K), the
      multinomial coefficient left out;
    - ``_check_fit_shape(params, data, name="data")``: ``ValueError`` naming ``name`` when ``data``
      does not have the shape the parameters were fitted to;
    - ``_dyad_predictive(params, resp_rows, rows, cols)``: ``P(y_j | x_i)`` of the cells
      ``(rows, cols)`` given the memberships ``resp_rows`` of their rows.
    """

    def _joint(self, params, data, beta=1.0):
        """``log rho_k + beta log P(S_i | k)`` (N x K): eq. (29) or (55) tempered as eq. (60)."""
        with np.errstate(divide="ignore"):
            log_rho = np.log(np.asarray(params["rho"], dtype=float))
        per_cluster = self._per_cluster(params, data)
        return log_rho[None, :] + (beta * per_cluster if beta != 1.0 else per_cluster)

    def log_likelihood(self, params, data) -> np.ndarray:
        """Exact log-likelihood per row, ``log sum_k rho_k P(S_i | k)`` (eq. (29); eq. (55)).

        Computed as a row ``logsumexp`` of ``log rho_k + log P(S_i | k)`` (the product over a row's
        observations underflows otherwise); in the cluster abstraction model the level of each
        observation is summed out inside ``P(S_i | k)``. The multinomial coefficient and the row
        marginals ``p_i`` are left out; rows without observations contribute 0. ``params`` are the
        family's parameters (``rho`` (K,), ``q`` and, for the HACM, ``tau``), ``data`` a
        :class:`~latentzoo.data.CoOccurrence` of N rows; the result has shape (N,).

        Examples
        --------
        >>> from latentzoo.models import OneSidedClustering
        >>> model = OneSidedClustering(2)
        >>> data, truth = model.simulate(0, n_docs=3, n_words=5, doc_length=8)
        >>> model.log_likelihood(truth, data).shape
        (3,)
        """
        self._check_fit_shape(params, data)
        return _row_mixture_log_likelihood(self._joint(params, data), data)

    def responsibilities(self, params, data, beta: float = 1.0) -> np.ndarray:
        """Posterior memberships ``<I_ik>`` at inverse temperature ``beta``, eq. (60).

        ``<I_ik> ∝ rho_k P(S_i | k)**beta``: only the likelihood is tempered, the prior ``rho`` is
        not (seed eq. (60), (65)); ``beta = 1`` is Bayes' rule, eq. (29)-(30), and ``beta -> inf``
        the nearest-centroid rule of hard clustering, eq. (23). Computed in log space; an N x K
        array whose rows sum to one.

        Examples
        --------
        >>> from latentzoo.data import load
        >>> from latentzoo.models import OneSidedClustering
        >>> params = {"rho": np.array([0.5, 0.5]),
        ...           "q": np.array([[0.2] * 4 + [0.05] * 4, [0.05] * 4 + [0.2] * 4])}
        >>> OneSidedClustering(2).responsibilities(params, load("toy")).round(3)[[0, 3]]
        array([[1., 0.],
               [0., 1.]])
        """
        check_positive("beta", beta)
        self._check_fit_shape(params, data)
        joint = self._joint(params, data, beta)
        with np.errstate(invalid="ignore"):
            return np.exp(joint - row_logsumexp(joint)[:, None])

    def predictive_log_density(self, params, test, train) -> np.ndarray:
        """``log p(test_i | params, S_i)`` per row: held-out counts given the training observations.

        ``log sum_k <I_ik> P(test_i | k)`` with ``<I_ik>`` the posterior memberships of the
        training row (eq. (29), (55)); the joint form of eq. (32) for all held-out observations of
        a row at once (they share the row's cluster). Its average over posterior draws is the
        predictive density ``p(test_i | train)``. Multinomial coefficient left out. ``test`` and
        ``train`` hold counts of the same rows and columns; the result has one entry per row.

        Examples
        --------
        >>> from latentzoo.models import ClusterAbstractionModel
        >>> model = ClusterAbstractionModel(1)
        >>> data, truth = model.simulate(0, n_docs=3, n_words=5, doc_length=8)
        >>> train, test = data.split(0.5, random_state=0)
        >>> model.predictive_log_density(truth, test, train).shape
        (3,)
        """
        if test.shape != train.shape:
            raise ValueError(f"test has shape {test.shape}, expected {train.shape}")
        joint = self._joint(params, train)
        log_resp = joint - row_logsumexp(joint)[:, None]
        return row_logsumexp(log_resp + self._per_cluster(params, test))

    def log_prior(self, params) -> float:
        """Log density of the Dirichlet priors ``rho ~ Dir(alpha)`` and ``q[p] ~ Dir(eta)``
        (normalising constants included): the ACM's whole prior, the cluster abstraction model's
        without ``tau``.

        Examples
        --------
        >>> from latentzoo.models import OneSidedClustering
        >>> round(OneSidedClustering(2, alpha=1.0, eta=1.0).log_prior(
        ...     {"rho": [0.5, 0.5], "q": np.full((2, 3), 1 / 3)}), 6)  # log(1! * 2! * 2!)
        1.386294
        """
        rho = np.asarray(params["rho"], dtype=float)[None, :]
        q = np.asarray(params["q"], dtype=float)
        return dirichlet_logpdf(rho, self.alpha) + dirichlet_logpdf(q, self.eta)

    def _training_memberships(self, params, test) -> np.ndarray:
        """The memberships that predict the held-out rows of ``test`` (N x K): ``params["resp"]``,
        the posteriors of the *training* rows stored by the EM algorithms, else the prior ``rho``
        for every row (a row whose training tokens are unknown). ``ValueError`` when ``test`` or
        ``resp`` do not have the rows and columns of the fit."""
        q = np.asarray(params["q"], dtype=float)
        resp = params.get("resp")
        fit_rows = np.shape(resp)[0] if resp is not None and np.ndim(resp) == 2 else None
        detail = f"resp has shape {np.shape(resp)}" if fit_rows is not None else None
        check_data_shape("test", test.shape, (fit_rows, q.shape[-1]), detail=detail)
        rho = np.asarray(params["rho"], dtype=float)
        if resp is None:
            resp = np.broadcast_to(rho, (test.n_rows, rho.shape[-1]))
        resp = np.asarray(resp, dtype=float)
        if resp.shape != (test.n_rows, rho.shape[-1]):
            raise ValueError(
                f"resp has shape {resp.shape}, expected {(test.n_rows, rho.shape[-1])} "
                "(posteriors of the training rows)"
            )
        return resp

    def _heldout_cells(self, params, test):
        """Rows, counts and predictive ``P(y_j | x_i)`` of the non-zero cells of ``test`` (CSR
        order), each row predicted from :meth:`_training_memberships`."""
        resp = self._training_memberships(params, test)
        rows, cols, counts = test.cells()
        return rows, counts, self._dyad_predictive(params, resp[rows], rows, cols)

    def heldout_log_likelihood(self, params, test) -> np.ndarray:
        """Per-row log predictive probability of held-out observations, eq. (32) (eq. (59)).

        ``sum_j n_ij log P(y_j | x_i)`` with ``P(y_j | x_i) = sum_k <I_ik> P(y_j | k)`` (for the
        HACM, ``sum_nu p_{nu|i} q_{j|nu}``, ``p_{nu|i} = sum_a <I_ia> tau_{nu|a,i}``), where
        ``<I_ik>`` are the posterior memberships of the *training* rows, ``params["resp"]`` (N x K,
        stored by the EM algorithms). Each held-out observation of a row is predicted from the
        training posterior of that row, as in the seed's perplexity experiments. Without ``resp``
        the prior ``rho`` is used for every row (a row whose training tokens are unknown). The row
        marginal ``p_i`` is left out, so ``exp(-sum / test.total)`` is the perplexity. ``params``
        are the family's parameters and optionally ``resp``, ``test`` a
        :class:`~latentzoo.data.CoOccurrence` of the training data's shape; the result has shape
        (N,).

        Examples
        --------
        >>> from latentzoo.data import load
        >>> from latentzoo.models import OneSidedClustering
        >>> q = np.array([[0.2] * 4 + [0.05] * 4, [0.05] * 4 + [0.2] * 4])
        >>> resp = np.repeat([[1.0, 0.0], [0.0, 1.0]], 3, axis=0)
        >>> ll = OneSidedClustering(2).heldout_log_likelihood(
        ...     {"rho": [0.5, 0.5], "q": q, "resp": resp}, load("toy"))
        >>> bool(np.allclose(ll, load("toy").row_totals * np.log(0.2)))
        True
        """
        rows, counts, p = self._heldout_cells(params, test)
        with np.errstate(divide="ignore"):
            terms = counts * np.log(p)
        return np.bincount(rows, weights=terms, minlength=test.n_rows)

    def predictive(self, params, data, dyads, resp=None) -> np.ndarray:
        """``P(y_j | x_i, S_i) = sum_k <I_ik> P(y_j | k)`` for the given dyads (eq. (32), (59)
        without ``p_i``).

        ``resp`` defaults to the posterior memberships :meth:`responsibilities` of ``data``.

        Examples
        --------
        >>> from latentzoo.data import load
        >>> from latentzoo.models import ClusterAbstractionModel, OneSidedClustering
        >>> params = {"rho": [0.5, 0.5], "q": np.full((2, 8), 1 / 8)}
        >>> OneSidedClustering(2).predictive(params, load("toy"), [[0, 0], [5, 7]])
        array([0.125, 0.125])
        >>> model = ClusterAbstractionModel(1, tau="constant")
        >>> params = {"rho": [0.5, 0.5], "q": np.full((3, 8), 1 / 8), "tau": model.default_tau()}
        >>> model.predictive(params, load("toy"), [[0, 0], [5, 7]])
        array([0.125, 0.125])
        """
        dyads = np.asarray(dyads, dtype=np.int64).reshape(-1, 2)
        if resp is None:
            resp = self.responsibilities(params, data)
        return self._dyad_predictive(params, resp[dyads[:, 0]], dyads[:, 0], dyads[:, 1])

    def _more_invariants(self, params, data, resp) -> dict:
        """Invariants of the family beyond ``loglik``, ``p_dyad`` and ``coassign`` (none here)."""
        return {}

    def evaluate(self, params, data, dyads=None, pairs=None):
        """Per-row log-likelihood and the invariants together, from one E-step (for samplers).

        ``per_row`` is :meth:`log_likelihood`; the invariants (those of the family's
        ``invariants``) are ``loglik``, ``p_dyad`` on ``dyads`` (default
        :func:`~latentzoo.models.invariants.default_dyads`), ``coassign`` on the row ``pairs``
        (default :func:`~latentzoo.models.invariants.coassignment_pairs` of the row totals),
        computed from the posterior memberships, and any the family adds.

        Examples
        --------
        >>> from latentzoo.models import ClusterAbstractionModel, OneSidedClustering
        >>> for model in (OneSidedClustering(2), ClusterAbstractionModel(1)):
        ...     data, truth = model.simulate(0, n_docs=3, n_words=5, doc_length=8)
        ...     per_row, inv = model.evaluate(truth, data)
        ...     print(bool(np.isclose(per_row.sum(), inv["loglik"])), len(inv))
        True 3
        True 4
        """
        if dyads is None:
            dyads = default_dyads(data)
        if pairs is None:
            pairs = coassignment_pairs(data.row_totals)
        self._check_fit_shape(params, data)
        joint = self._joint(params, data)
        norm = row_logsumexp(joint)
        with np.errstate(invalid="ignore"):
            resp = np.exp(joint - norm[:, None])
        per_row = np.where(data.row_totals == 0, 0.0, norm)
        return per_row, {
            "loglik": np.asarray(per_row.sum()),
            "p_dyad": self.predictive(params, data, dyads, resp=resp),
            "coassign": np.einsum("nk,nk->n", resp[pairs[:, 0]], resp[pairs[:, 1]]),
            **self._more_invariants(params, data, resp),
        }


class DyadPredictive(CountRows):
    """Members of a family whose predictive ``P(y_j | x_i)`` of every dyad is a function of the
    parameters alone (aspect model, Hofmann 1999, eq. (2); product-space mixture, Hofmann &
    Puzicha 1998, eq. (16)): held-out counts thinned from the training rows are scored by the plain
    likelihood, and the invariants are the log-likelihood and ``P(y_j | x_i)`` on chosen dyads.
    The family provides ``_log_likelihood(params, data, name)`` (:meth:`log_likelihood` whose shape
    errors name ``name``) and ``predictive(params, dyads)``."""

    def heldout_log_likelihood(self, params, test) -> np.ndarray:
        """The held-out score of tempered schedules: :meth:`log_likelihood` of the test counts.

        Both factors of every observation are estimated from the training part (the test counts
        are thinned from the same rows), so the held-out likelihood is the plain one. ``test``
        must be the rows and columns of the training data (``ValueError`` naming both shapes
        otherwise).

        Examples
        --------
        >>> from latentzoo.models import AspectModel
        >>> data, truth = AspectModel(2).simulate(0, n_docs=3, n_words=5, doc_length=8)
        >>> AspectModel(2).heldout_log_likelihood(truth, data.subset([0, 1]))
        Traceback (most recent call last):
        ...
        ValueError: test has 2 rows, the fit has 3 (documents); held-out data must be the same rows and columns as the training data
        """
        return self._log_likelihood(params, test, "test")

    def invariants(self, params, data, dyads=None) -> dict[str, np.ndarray]:
        """Label-invariant quantities through which every method is compared.

        ``loglik``: total log-likelihood of ``data`` (scalar; the conditional one of the
        product-space mixture); ``p_dyad``: ``P(y_j | x_i)`` on the dyads of
        :func:`~latentzoo.models.invariants.default_dyads` (or the given ones). Both are unchanged
        by permuting the latent classes (aspects, or row and column clusters).

        Examples
        --------
        >>> from latentzoo.models import AspectModel
        >>> data, truth = AspectModel(2).simulate(0, n_docs=3, n_words=5, doc_length=8)
        >>> inv = AspectModel(2).invariants(truth, data)
        >>> sorted(inv)
        ['loglik', 'p_dyad']
        """
        if dyads is None:
            dyads = default_dyads(data)
        return {
            "loglik": np.asarray(self.log_likelihood(params, data).sum()),
            "p_dyad": self.predictive(params, dyads),
        }
