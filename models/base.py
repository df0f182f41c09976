"""What the models of the zoo provide: a protocol for each kind of model, and shared pieces.

Protocols by what a family is (``typing.Protocol``, ``runtime_checkable``): every model is a
:class:`Model` (name, container, kind); a :class:`LikelihoodModel` (the generative families with an
exact likelihood), a :class:`CostModel` (Gibbs distributions over assignments: pairwise and
central clustering), a :class:`TreeModel` (Bayesian hierarchical clustering) or a
:class:`RetrievalModel` (Bayesian Sets). A model class names its kind in the class attribute
``protocol`` and meets it in full. The face (``latentzoo.fit``, ``validate``, the CLI), the annealing
driver, the chain runner and the comparison talk to models only through these members, so a new
family that provides them works with all of them. A model is a frozen dataclass of hyperparameters;
its main size argument is called ``n_components`` where it has one size (the two-sided families name
both of theirs).

The mixins (:class:`CellHeldout`, :class:`RowMemberships`, :class:`PlainPyMCValues`,
:class:`CorpusPriorDraw`) write once a member that several families share.
"""

from __future__ import annotations

import dataclasses
import numbers
from typing import Any, NamedTuple, Protocol, runtime_checkable

import numpy as np

__all__ = [
    "REFIT_ADVICE",
    "CostModel",
    "LikelihoodModel",
    "RetrievalModel",
    "TreeModel",
    "CellHeldout",
    "CorpusFamily",
    "CorpusPriorDraw",
    "LikelihoodHeldout",
    "TrainConditionedHeldout",
    "PlainPyMCValues",
    "RowClustering",
    "RowMemberships",
    "Model",
    "TwoSidedLabels",
    "balanced_labels",
    "cell_posterior_predictive",
    "labels_from_memberships",
    "missing_draws_error",
    "model_attrs",
    "netcdf_attr",
]


@runtime_checkable
class Model(Protocol):
    """What every model of the zoo is: a frozen dataclass of hyperparameters that names its family,
    the data container it takes and the protocol of its kind.

    The kinds differ in what they answer, so each has its own protocol (``typing.Protocol``,
    checked by ``isinstance``) that its models meet in full: :class:`LikelihoodModel`,
    :class:`CostModel`, :class:`TreeModel`, :class:`RetrievalModel`. A model class declares its
    kind as the class attribute ``protocol``.

    Attributes
    ----------
    name : str
        The family's name (the registry's and the command line's).
    data_type : type
        The data container the model takes (a :class:`latentzoo.data.Dataset`).
    protocol : type
        The protocol of the model's kind, which the model meets.

    Examples
    --------
    >>> from latentzoo.models import AspectModel, BayesianSets, PairwiseClustering
    >>> all(isinstance(m, Model) for m in (AspectModel(2), PairwiseClustering(2), BayesianSets()))
    True
    """

    name: str
    data_type: type
    protocol: type

    def check_data(self, data) -> Any:
        """Validate ``data`` (or an array the container accepts) and return the container."""


@runtime_checkable
class LikelihoodModel(Model, Protocol):
    """A generative model with an exact likelihood: the aspect model, one- and two-sided
    clustering, the product-space mixture, the cluster abstraction model, the finite and
    Dirichlet process mixtures.

    Everything the shared code (annealing driver, chain runner, comparison, held-out scores,
    labels, the density level of validation) asks of it is a member here.

    Attributes
    ----------
    param_names : tuple of str
        The parameters of a posterior draw or point estimate, named as in :meth:`pymc_model`.
    invariant_names : tuple of str
        The label-invariant quantities returned by :meth:`invariants`.
    dims : dict
        ArviZ dimensions of every variable.
    heldout_draws_advice : str
        What to do when :meth:`heldout_draws_usable` is False.

    Examples
    --------
    >>> from latentzoo.models import AspectModel, DirichletProcessMixture, PairwiseClustering
    >>> isinstance(AspectModel(2), LikelihoodModel), isinstance(DirichletProcessMixture(), LikelihoodModel)
    (True, True)
    >>> isinstance(PairwiseClustering(2), LikelihoodModel)
    False
    """

    param_names: tuple
    invariant_names: tuple
    dims: dict
    heldout_draws_advice: str

    def coords(self, data) -> dict:
        """Coordinates of the ArviZ / PyMC dimensions for ``data``."""

    def simulate(self, random_state, **sizes) -> tuple[Any, dict]:
        """Draw ``(data, truth)`` from the generative process of the paper."""

    def prior_draw(self, data, rng) -> dict:
        """Parameters drawn from the prior at the sizes of ``data``."""

    def log_likelihood(self, params: dict, data) -> np.ndarray:
        """Exact log-likelihood per observation unit (row, item), in log space."""

    def log_prior(self, params: dict) -> float:
        """Log prior density at ``params`` (in the free variables of :meth:`pymc_model`)."""

    def heldout_log_likelihood(self, params: dict, test) -> np.ndarray:
        """The held-out score of a point estimate, per row (item) of ``test``."""

    def heldout_posterior_predictive(self, draws, test, train=None) -> np.ndarray:
        """The held-out score of a posterior sample: the posterior predictive over ``draws``."""

    def heldout_draws_usable(self, names, train=None) -> bool:
        """Whether draws holding the variables ``names`` can be scored on held-out data."""

    def heldout_log_density(self, params: dict, test, train=None) -> np.ndarray:
        """``log p(test_i | params)`` per row, given the training data where the family
        predicts held-out counts from them (the comparison's held-out predictive density)."""

    def fit_shape(self, params: dict) -> tuple:
        """``(rows or None, columns or None)`` a point estimate was fitted to."""

    def sizes_label(self) -> str:
        """The model's cluster numbers as reports print them (``3``, ``2x3``, ...)."""

    def labels(self, params: dict, train=None):
        """Hard cluster labels of a draw or point estimate."""

    def invariants(self, params: dict, data) -> dict:
        """Label-invariant quantities through which every method is compared."""

    def pymc_model(self, data, temperature: float = 1.0):
        """The PyMC reference declaration (likelihood tempered by ``temperature``)."""

    def pymc_values(self, params: dict) -> dict:
        """``params`` with the values of the other free variables of :meth:`pymc_model`."""

    def reference_log_likelihood(self, params: dict, data) -> np.ndarray:
        """The log-likelihood per row (item) as :meth:`pymc_model` declares it."""


@runtime_checkable
class CostModel(Model, Protocol):
    """A Gibbs distribution over assignments ``P(z) ∝ exp(-cost(z) / T)``: pairwise clustering
    and central clustering (Hofmann & Buhmann 1997). No likelihood: the cost and its Gibbs
    expectations are what the fast methods and the reference share.

    Examples
    --------
    >>> from latentzoo.models import CentralClustering, PairwiseClustering
    >>> isinstance(PairwiseClustering(2), CostModel), isinstance(CentralClustering(2), CostModel)
    (True, True)
    """

    param_names: tuple
    invariant_names: tuple

    def coords(self, data) -> dict:
        """Coordinates of the ArviZ / PyMC dimensions for ``data``."""

    def simulate(self, random_state, **sizes) -> tuple[Any, dict]:
        """Draw ``(data, truth)``: data with a planted clustering."""

    def cost(self, data, assignments):
        """The cost of each assignment vector (the energy of the Gibbs distribution)."""

    def sizes_label(self) -> str:
        """The number of clusters as reports print it."""

    def gibbs_expectations(self, data, temperature, **options) -> dict:
        """Exact expectations under the Gibbs distribution at ``temperature`` (enumeration)."""

    def invariants(self, params: dict, data) -> dict:
        """Label-invariant quantities of assignments (co-assignment, cost)."""

    def pymc_model(self, data, temperature=1.0):
        """The PyMC reference declaration of the Gibbs distribution over assignments."""


@runtime_checkable
class TreeModel(Model, Protocol):
    """A model whose fit is a tree: Bayesian hierarchical clustering (Heller & Ghahramani 2005),
    a fast approximation of the Dirichlet process mixture it names (:attr:`dpm`).

    Examples
    --------
    >>> from latentzoo.models import BayesianHierarchicalClustering
    >>> isinstance(BayesianHierarchicalClustering(), TreeModel)
    True
    """

    @property
    def dpm(self) -> Any:
        """The model the tree approximates (its reference)."""

    def simulate(self, random_state=None, **sizes) -> tuple[Any, dict]:
        """Draw ``(data, truth)`` from the model the tree approximates."""

    def evaluate(self, children, data) -> Any:
        """The tree's quantities (``p(D | T)``, merge posteriors) on a given tree."""


@runtime_checkable
class RetrievalModel(Model, Protocol):
    """A model that scores items against a query set: Bayesian Sets (Ghahramani & Heller 2005).

    Examples
    --------
    >>> from latentzoo.models import BayesianSets
    >>> isinstance(BayesianSets(), RetrievalModel)
    True
    """

    def coords(self, data) -> dict:
        """Coordinates of the ArviZ / PyMC dimensions for ``data``."""

    def prior(self, data) -> Any:
        """The prior (conjugate component) used for ``data``."""

    def simulate(self, random_state, **sizes) -> tuple[Any, dict]:
        """``(data, truth)``: items drawn from hidden sets (``truth["labels"]``)."""

    def log_score(self, data, query) -> np.ndarray:
        """``log p(x | query) / p(x)`` of every item (the Bayesian Sets score)."""

    def pymc_model(self, data, query, temperature: float = 1.0):
        """The PyMC reference declaration of the score."""


class TwoSidedLabels(NamedTuple):
    """Hard labels of a two-sided clustering: ``rows`` (N,) and ``cols`` (M,), int64."""

    rows: np.ndarray
    cols: np.ndarray


def cell_posterior_predictive(model, draws, test, train=None) -> np.ndarray:
    """``sum_j n_ij log mean_s P_s(y_j | x_i)`` per row of ``test``: the posterior predictive of
    held-out counts from a sequence of draws (or one point estimate).

    Each draw's ``model.heldout_cell_probabilities(params, test, train)`` (one value per non-zero
    cell of ``test``, CSR order) is averaged over draws: averaging probabilities, not parameters,
    makes the score invariant to label switching, and one draw gives the point rule.

    Examples
    --------
    >>> from latentzoo.data import CoOccurrence
    >>> from latentzoo.models import AspectModel
    >>> test = CoOccurrence([[1, 0], [0, 2]])
    >>> draw = {"theta": np.array([[1.0], [1.0]]), "phi": np.array([[0.5, 0.5]])}
    >>> cell_posterior_predictive(AspectModel(1), [draw, draw], test).round(3).tolist()
    [-0.693, -1.386]
    """
    total, n_draws = np.zeros(test.counts.nnz), 0
    for params in draws:
        total += model.heldout_cell_probabilities(params, test, train)
        n_draws += 1
    rows, _, counts = test.cells()
    with np.errstate(divide="ignore"):
        terms = counts * np.log(total / n_draws)
    return np.bincount(rows, weights=terms, minlength=test.n_rows)


def labels_from_memberships(model, params, train=None) -> np.ndarray:
    """Hard labels of the rows (items) of a one-sided model's draw or point estimate: the draw's
    assignments ``z``, else ``argmax`` of the memberships ``resp``, else ``argmax`` of
    ``model.responsibilities(params, train)`` computed from the parameters and the training data.

    Examples
    --------
    >>> from latentzoo.models import OneSidedClustering
    >>> labels_from_memberships(OneSidedClustering(2), {"resp": [[0.9, 0.1], [0.2, 0.8]]}).tolist()
    [0, 1]
    """
    if "z" in params:
        return np.asarray(params["z"]).astype(np.int64)
    if "resp" in params:
        return np.asarray(params["resp"]).argmax(axis=1).astype(np.int64)
    if train is not None and all(name in params for name in model.param_names):
        return np.asarray(model.responsibilities(params, train)).argmax(axis=1).astype(np.int64)
    raise ValueError(
        f"the result holds no assignments of {type(model).__name__} (z or resp): pass train=, the "
        "training data, to label the rows from the parameters"
    )


def balanced_labels(rng, n_items: int, n_clusters: int) -> np.ndarray:
    """Balanced labels for the simulators' well-separated data: the items dealt to the clusters in
    turn (each gets ``n_items // n_clusters`` or one more), then shuffled by ``rng``.

    Returns
    -------
    numpy.ndarray of shape (n_items,), int64

    Examples
    --------
    >>> np.bincount(balanced_labels(np.random.default_rng(0), 5, 2)).tolist()
    [3, 2]
    """
    return rng.permutation(np.arange(n_items) % n_clusters).astype(np.int64)


def missing_draws_error(model, why: str, advice: str) -> ValueError:
    """The one message for a posterior sample whose draws cannot score held-out data."""
    return ValueError(
        f"the sample holds no parameter draws of {type(model).__name__}{why}, so held-out "
        f"data cannot be scored from it; {advice}"
    )


REFIT_ADVICE = (
    "refit with keep_params=True, or pass test= to gibbs, whose log_likelihood group "
    "then scores the test set"
)
"""What to do when a sample of a co-occurrence model kept no parameter draws."""

REPLICATE_BYTES_PER_CELL = 72
"""Peak bytes per cell of :meth:`CellHeldout.replicate_probabilities`: the every-cell counts,
their scores and the normalised matrix (measured with tracemalloc: 40 for the aspect and
one-sided models, 69 for the two-sided and product-space ones)."""


class CellHeldout:
    """Held-out scoring shared by the co-occurrence families, whose held-out units are tokens of
    the training rows: the posterior predictive averages each draw's
    ``heldout_cell_probabilities(params, test, train)`` (which the family defines) over draws.

    A family mixes this in; the two-sided model overrides :meth:`heldout_draws_usable` (its
    partitions alone suffice).
    """

    count_dims: tuple[str, str] = ("doc", "word")
    """Names of the rows and columns of the counts in the ``observed_data`` and
    ``posterior_predictive`` groups (the model's own coordinates)."""

    def replicate_params(self, params, data, rng) -> dict:
        """The draw (or estimate) with which one replicate of ``data`` is made: ``params`` as
        they are. A family whose rows belong to one cluster each draws the memberships here
        (:meth:`RowMemberships.replicate_params`)."""
        return params

    def replicate_names(self, names) -> bool:
        """Whether a draw holding the variables ``names`` can make a replicate: the same
        variables as a held-out score needs (:meth:`heldout_draws_usable`)."""
        return self.heldout_draws_usable(names)

    def replicate_probabilities(self, params, data) -> np.ndarray:
        """``P(y_j | x_i)`` of one draw for every cell, ``(N, M)``, rows summing to one: the
        family's ``heldout_cell_probabilities`` on all cells, the training rows conditioning a
        clustering family's memberships where the draw has none.

        Dense by necessity: a replicate's tokens may fall on any cell, observed or not, so each
        row needs its whole predictive distribution. What would not fit in memory is refused up
        front (:data:`REPLICATE_BYTES_PER_CELL`).

        Raises
        ------
        ValueError
            If the ``N x M`` cells would take more than half of the machine's memory; the
            message names the shape and the estimate.
        """
        from latentzoo.data import CoOccurrence
        from latentzoo.data.checks import check_memory

        n_rows, n_cols = (int(size) for size in data.shape)
        check_memory(
            n_rows * n_cols * REPLICATE_BYTES_PER_CELL,
            f"the replicate probabilities of {type(self).__name__}",
            detail=f"for {n_rows} x {n_cols} = {n_rows * n_cols:,} cells",
            hint="replicate a subset of the rows (data.subset)",
        )
        every_cell = CoOccurrence(np.ones(data.shape, dtype=np.int64))
        cells = self.heldout_cell_probabilities(params, every_cell, data)
        probabilities = np.clip(np.asarray(cells, dtype=float).reshape(data.shape), 0.0, None)
        totals = probabilities.sum(axis=1, keepdims=True)
        # A row whose predictive is all zeros (an empty training row under a hard estimate)
        # has no tokens to replicate either: any valid distribution will do.
        return np.divide(
            probabilities,
            totals,
            out=np.full(data.shape, 1.0 / data.shape[1]),
            where=totals > 0,
        )

    def predictive_summaries(self, counts) -> dict:
        """The summaries a posterior predictive check compares, of the observed counts (a
        ``CoOccurrence``) or of a replicate (a dense ``(N, M)`` array): ``word_counts``, each
        column's total (the corpus term frequencies), and ``distinct_words``, the number of
        distinct columns of each row. Both are label-invariant.

        Examples
        --------
        >>> from latentzoo.data import CoOccurrence
        >>> from latentzoo.models import AspectModel
        >>> summaries = AspectModel(1).predictive_summaries(CoOccurrence([[2, 0], [1, 3]]))
        >>> summaries["word_counts"][1].tolist(), summaries["distinct_words"][1].tolist()
        ([3, 3], [1, 2])
        """
        rows, cols = self.count_dims
        matrix = counts.counts if hasattr(counts, "counts") else np.asarray(counts)
        column_totals = np.asarray(matrix.sum(axis=0)).ravel().astype(np.int64)
        distinct = np.asarray((matrix > 0).sum(axis=1)).ravel().astype(np.int64)
        return {"word_counts": ((cols,), column_totals), "distinct_words": ((rows,), distinct)}

    def replicate(self, params, data, rng) -> dict:
        """One replicate of ``data`` from one draw (or the point estimate) and its summaries:
        each row keeps its token count ``n_i`` and draws its tokens as
        ``Multinomial(n_i, P(. | x_i))`` (:meth:`replicate_probabilities`), so that
        ``E[word_counts_j] = sum_i n_i P(y_j | x_i)``.

        Returns
        -------
        dict
            ``{name: (dims, array)}``: ``counts`` (the replicated matrix, under the name of the
            ``observed_data`` variable) and :meth:`predictive_summaries` of it.

        Examples
        --------
        >>> from latentzoo.data import CoOccurrence
        >>> from latentzoo.models import AspectModel
        >>> draw = {"theta": [[1.0], [1.0]], "phi": [[0.5, 0.5]]}
        >>> out = AspectModel(1).replicate(draw, CoOccurrence([[2, 0], [1, 3]]), np.random.default_rng(0))
        >>> out["counts"][1].sum(axis=1).tolist(), out["word_counts"][0]
        ([2, 4], ('word',))
        """
        params = self.replicate_params(params, data, rng)
        probabilities = self.replicate_probabilities(params, data)
        counts = rng.multinomial(data.row_totals, probabilities)
        return {"counts": (self.count_dims, counts), **self.predictive_summaries(counts)}

    heldout_draws_advice = REFIT_ADVICE
    """What to do when :meth:`heldout_draws_usable` is False."""

    def heldout_posterior_predictive(self, draws, test, train=None) -> np.ndarray:
        """Per-row log posterior predictive of held-out counts over ``draws`` (parameter dicts):
        ``sum_j n_ij log mean_s P_s(y_j | x_i)`` (:func:`cell_posterior_predictive`).

        Examples
        --------
        >>> from latentzoo.data import CoOccurrence
        >>> from latentzoo.models import AspectModel
        >>> params = {"theta": [[1.0]], "phi": [[0.5, 0.5]]}
        >>> AspectModel(1).heldout_posterior_predictive([params], CoOccurrence([[1, 1]])).round(3)
        array([-1.386])
        """
        return cell_posterior_predictive(self, draws, test, train)

    def heldout_draws_usable(self, names, train=None) -> bool:
        """Whether draws holding the variables ``names`` can be scored on held-out data: they
        must hold every parameter (``param_names``).

        Examples
        --------
        >>> from latentzoo.models import AspectModel
        >>> AspectModel(2).heldout_draws_usable(["theta", "phi"]), AspectModel(2).heldout_draws_usable(["z"])
        (True, False)
        """
        return set(self.param_names) <= set(names)


class RowMemberships:
    """Labels and fit shape shared by the families whose point estimates hold row memberships
    ``resp`` (N, K) and column distributions ``q`` (K', M): one-sided clustering and the cluster
    abstraction model."""

    def replicate_params(self, params, data, rng) -> dict:
        """The draw with hard memberships for one replicate of ``data``, as the model generates
        a row: a draw's assignments ``z``, else one cluster per row drawn from the estimate's
        ``resp``, else from the rows' posterior given the parameters (a PyMC draw of ``rho`` and
        ``q``: ``responsibilities``), given to the family's cell probabilities as one-hot
        ``resp``.

        Examples
        --------
        >>> from latentzoo.models import OneSidedClustering
        >>> rng = np.random.default_rng(0)
        >>> draw = OneSidedClustering(2).replicate_params({"resp": [[0.0, 1.0]]}, None, rng)
        >>> draw["resp"].tolist()
        [[0.0, 1.0]]
        """
        params = dict(params)
        if "z" not in params and "resp" not in params and data is not None:
            params["resp"] = self.responsibilities(params, data)
        if "z" in params:
            labels = np.asarray(params.pop("z"), dtype=np.int64)
            n_clusters = int(labels.max(initial=0)) + 1
        elif "resp" in params:
            resp = np.asarray(params["resp"], dtype=float)
            cumulative = np.cumsum(resp / resp.sum(axis=1, keepdims=True), axis=1)
            uniforms = rng.random((resp.shape[0], 1))
            labels = np.minimum((cumulative < uniforms).sum(axis=1), resp.shape[1] - 1)
            n_clusters = resp.shape[1]
        else:
            return params
        n_clusters = max(n_clusters, self._replicate_clusters(params))
        hard = np.zeros((labels.size, n_clusters))
        hard[np.arange(labels.size), labels] = 1.0
        params["resp"] = hard
        return params

    def _replicate_clusters(self, params) -> int:
        """Number of row clusters of a draw: the length of its ``rho``."""
        return int(np.size(params["rho"])) if "rho" in params else 0

    def fit_shape(self, params) -> tuple[int | None, int | None]:
        """``(rows, columns)`` a point estimate was fitted to (rows None without ``resp``).

        Examples
        --------
        >>> from latentzoo.models import OneSidedClustering
        >>> OneSidedClustering(2).fit_shape({"q": np.ones((2, 7)), "resp": np.ones((5, 2))})
        (5, 7)
        """
        rows = np.shape(params["resp"])[0] if "resp" in params else None
        return rows, np.shape(params["q"])[-1]

    def labels(self, params, train=None) -> np.ndarray:
        """Hard cluster label of each row: ``z``, else ``argmax resp``, else from the parameters
        and ``train`` (:func:`labels_from_memberships`).

        Examples
        --------
        >>> from latentzoo.models import OneSidedClustering
        >>> OneSidedClustering(2).labels({"z": [1, 0]}).tolist()
        [1, 0]
        """
        return labels_from_memberships(self, params, train)


class PlainPyMCValues:
    """``pymc_values`` of a family whose PyMC free variables are its parameters themselves (or
    their flattenings ``<name>_flat``, which :func:`~latentzoo.inference.optimality.pymc_free_values`
    reads from the parameter)."""

    def pymc_values(self, params) -> dict:
        """``params`` as the values of the PyMC declaration's free variables: no variable
        besides the parameters.

        Examples
        --------
        >>> from latentzoo.models import AspectModel
        >>> AspectModel(2).pymc_values({"theta": [[1.0, 0.0]]})
        {'theta': [[1.0, 0.0]]}
        """
        return dict(params)

    def reference_log_likelihood(self, params, data) -> np.ndarray:
        """The log-likelihood per row as :meth:`pymc_model` declares it: :meth:`log_likelihood`."""
        return self.log_likelihood(params, data)


class CorpusPriorDraw:
    """``prior_draw`` of a family simulated as documents x words (``simulate(rng, n_docs=,
    n_words=)``)."""

    def prior_draw(self, data, rng) -> dict:
        """Parameters drawn from the prior at the sizes of ``data``: the truth of
        :meth:`simulate` with ``n_docs = data.n_rows``, ``n_words = data.n_cols``.

        Examples
        --------
        >>> from latentzoo.data import load
        >>> from latentzoo.models import OneSidedClustering
        >>> draw = OneSidedClustering(2).prior_draw(load("toy"), np.random.default_rng(0))
        >>> draw["rho"].shape, draw["q"].shape
        ((2,), (2, 8))
        """
        _, truth = self.simulate(rng, n_docs=data.n_rows, n_words=data.n_cols)
        return truth


class CorpusFamily(CellHeldout, CorpusPriorDraw, PlainPyMCValues):
    """What the families of documents x words (the aspect model, one-sided clustering, the
    product-space mixture, the cluster abstraction model) share: held-out tokens scored through
    cell probabilities, prior draws at a corpus's sizes, PyMC variables that are the parameters."""

    def sizes_label(self) -> str:
        """The model's cluster numbers as reports print them (``K=...``): ``n_components``.

        Examples
        --------
        >>> from latentzoo.models import AspectModel; AspectModel(3).sizes_label()
        '3'
        """
        return str(self.n_components)


class LikelihoodHeldout:
    """``heldout_log_density`` of a family whose held-out rows are scored by the likelihood of
    the parameters alone (the aspect model, the product-space mixture, the feature mixtures)."""

    def heldout_log_density(self, params, test, train=None) -> np.ndarray:
        """``log p(test_i | params)`` per row (item): :meth:`log_likelihood` on ``test``; the
        training data are not needed.

        Examples
        --------
        >>> from latentzoo.models import BayesianMixture
        >>> params = {"w": [1.0], "theta": [[0.5, 0.5]]}
        >>> BayesianMixture(1).heldout_log_density(params, [[1, 0]]).round(4).tolist()
        [-1.3863]
        """
        return self.log_likelihood(params, test)


class TrainConditionedHeldout:
    """``heldout_log_density`` of a clustering family, which predicts a row's held-out counts
    from its training counts (Hofmann & Puzicha 1998, eq. (32)): ``predictive_log_density``."""

    def heldout_log_density(self, params, test, train=None) -> np.ndarray:
        """``log p(test_i | params, train_i)`` per row when ``train`` is given (the row's cluster
        posterior from its training counts, :meth:`predictive_log_density`), else
        :meth:`log_likelihood` on ``test``.

        Examples
        --------
        >>> from latentzoo.models import OneSidedClustering
        >>> model = OneSidedClustering(2)
        >>> data, truth = model.simulate(0, n_docs=4, n_words=6)
        >>> train, test = data.split(0.5, random_state=0)
        >>> model.heldout_log_density(truth, test, train).shape
        (4,)
        """
        if train is None:
            return self.log_likelihood(params, test)
        return self.predictive_log_density(params, test, train)


class RowClustering(CorpusFamily, TrainConditionedHeldout, RowMemberships):
    """What the families that cluster the rows of a corpus (one-sided clustering, the cluster
    abstraction model) share besides :class:`CorpusFamily`: row memberships ``resp`` give the
    labels and the fit's shape, and held-out rows are predicted from their training counts."""

    # A replicate draws each row's cluster as the model generates it, ahead of CellHeldout's
    # draw-as-it-is in the method resolution order.
    replicate_params = RowMemberships.replicate_params


def netcdf_attr(value):
    """``value`` as a netCDF attribute: numbers and strings as they are, numeric vectors as arrays,
    classes and dtypes by name, anything else as its text (None: leave the attribute out).

    Examples
    --------
    >>> netcdf_attr(True), netcdf_attr(np.float32), netcdf_attr([1.0, 0.5]).tolist()
    (1, 'float32', [1.0, 0.5])
    """
    if value is None:
        return None
    if isinstance(value, bool | np.bool_):
        return int(value)
    if isinstance(value, numbers.Number | str):
        return value
    if isinstance(value, type):
        return value.__name__
    if isinstance(value, np.dtype):
        return value.name
    if isinstance(value, list | tuple | np.ndarray):
        array = np.asarray(value)
        if array.dtype.kind in "iuf" and array.ndim == 1:
            return array
    return str(value)


def model_attrs(model) -> dict:
    """The attributes that identify a fit's model in a saved file: the library and its version,
    the model class and each hyperparameter as ``model_<name>`` (components by their text).

    Examples
    --------
    >>> from latentzoo.models import AspectModel
    >>> attrs = model_attrs(AspectModel(3))
    >>> attrs["model"], attrs["model_n_components"], attrs["model_alpha"]
    ('AspectModel', 3, 1.1)
    """
    from importlib.metadata import PackageNotFoundError, version

    try:
        library_version = version("latentzoo")
    except PackageNotFoundError:  # pragma: no cover - running from a bare checkout
        library_version = "unknown"
    attrs = {
        "inference_library": "latentzoo",
        "inference_library_version": library_version,
        "model": type(model).__name__,
    }
    if dataclasses.is_dataclass(model):
        for item in dataclasses.fields(model):
            value = netcdf_attr(getattr(model, item.name))
            if value is not None:
                attrs[f"model_{item.name}"] = value
    return attrs
