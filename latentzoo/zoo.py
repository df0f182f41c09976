"""The registry: one entry per model family, with everything the face needs to know about it.

A family is registered once, here: its model class, the data container it takes, its fast methods
(``"module:function"`` paths, imported on first use so that ``latentzoo list`` and ``--help`` do
not load ArviZ), its validation recipe (:mod:`latentzoo.recipes`), its default dataset
and its notebook. ``latentzoo list``, ``latentzoo fit``, ``latentzoo validate`` and the common tests
all read this one table.

Adding a family (the checklist, also in the README):

1. a data container in ``data/`` if none fits (it implements :class:`latentzoo.data.Dataset`);
2. the model in ``models/<family>.py`` (implements :class:`latentzoo.models.Model`);
3. its fast methods in ``inference/<family>.py`` (samplers as ``init``/``step``/``draw`` through
   :func:`latentzoo.inference.mcmc.run_chains`);
4. a validation recipe in :mod:`latentzoo.recipes` (which levels it reaches, and how);
5. one :class:`Family` entry below, and a notebook in ``notebooks/``.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

import pandas as pd

from latentzoo.data import CoOccurrence, Dissimilarities, Features
from latentzoo.models import (
    AspectModel,
    BayesianHierarchicalClustering,
    BayesianMixture,
    CentralClustering,
    ClusterAbstractionModel,
    DirichletProcessMixture,
    OneSidedClustering,
    PairwiseClustering,
    ProductSpaceMixture,
    TwoSidedClustering,
)

__all__ = ["Family", "ZOO", "register", "entry_for", "as_table"]


class _Methods(Mapping):
    """Method name -> the callable, imported from ``"module:function"`` on first lookup.

    The inference modules pull in ArviZ and numba kernels; ``latentzoo list`` and ``--help`` only
    need the names, so the registry holds the paths and imports a method when it is used.

    Examples
    --------
    >>> methods = _Methods({"gibbs": "latentzoo.inference.aspect:gibbs"})
    >>> list(methods), methods["gibbs"].__name__
    (['gibbs'], 'gibbs')
    """

    def __init__(self, paths: dict[str, str]):
        self._paths = dict(paths)

    def __getitem__(self, name: str) -> Callable:
        module, _, function = self._paths[name].partition(":")
        return getattr(importlib.import_module(module), function)

    def __iter__(self):
        return iter(self._paths)

    def __len__(self) -> int:
        return len(self._paths)

    def __repr__(self) -> str:
        return f"_Methods({self._paths!r})"


def _recipe(name: str) -> Callable:
    """``latentzoo.recipes.<name>``, imported when the recipe is built (it needs ArviZ).

    Examples
    --------
    >>> _recipe("aspect")().sampler
    'gibbs'
    """

    def recipe():
        return getattr(importlib.import_module("latentzoo.recipes"), name)()

    recipe.__name__ = recipe.__qualname__ = name
    return recipe


@dataclass(frozen=True)
class Family:
    """One model family of the zoo.

    Attributes
    ----------
    name : str
        Name used on the command line.
    model : type
        The model dataclass.
    data : type
        The data container the model takes (a :class:`latentzoo.data.Dataset`).
    methods : Mapping[str, callable]
        Fast method name -> ``method(model, data, **options)`` (imported on first lookup).
    recipe : callable or None
        ``recipe() -> ValidationRecipe``: how :func:`latentzoo.validate` checks the fast methods.
    sizes : tuple of str
        Constructor arguments set by ``--k`` and ``--k-cols`` on the command line, in that order.
    dataset : str
        Default dataset for ``latentzoo fit`` / ``validate``.
    notebook : str
        Path of the family's executed notebook.
    description : str
    reference : str
        The reference: ``"pymc"`` (``latentzoo.fit(..., method="pymc")``), or the family whose
        model this one approximates (BHC: ``"dpm"``).
    skipped_checks : dict[str, str]
        Common checks of :mod:`latentzoo.testing` that do not apply to the family: check name
        (``"<method>:<check>"`` for one method only) -> the reason, reported when it is skipped.
    figure : str
        ``"module:function"`` of ``function(model, result, data) -> Axes``: the picture that
        ``latentzoo fit`` saves as a PNG next to ``--out`` for a point estimate (empty: none).
    kind : str
        ``"generative"``: a model of the data (:class:`latentzoo.models.Model`, with a
        likelihood); ``"cost"``: a Gibbs distribution over cluster assignments given the data,
        ``exp(-H(M) / T)`` (pairwise and central clustering), which has a cost, exact expectations
        by enumeration and a PyMC reference, but no likelihood of the data.
    check_options : dict[str, dict]
        Method name -> options that the common checks of :mod:`latentzoo.testing` pass to it, so
        that it runs its own path on their small data (RBHC and EMBHC: a subsample smaller than
        the data, else they are exact BHC).
    fit_defaults : dict
        Command-line defaults that serve the family: ``prior_scale`` (the empirical
        Beta-Bernoulli prior, :meth:`latentzoo.models.conjugate.BetaBernoulli.from_data`), ``k``
        (the size ``--k`` gives when omitted; the HACM's is a tree depth, 3).
    label_axes : str
        ``"module:function"`` of ``label_axes(model)``, the labels that switch between chains
        (:class:`latentzoo.inference.mcmc.LabelAxis`), used to align the chains of the Gibbs and
        PyMC posteriors; empty when the family has none to align.
    """

    name: str
    model: type
    data: type
    methods: Mapping[str, Callable]
    recipe: Callable | None
    sizes: tuple[str, ...]
    dataset: str
    notebook: str
    description: str
    reference: str = "pymc"
    skipped_checks: dict[str, str] = field(default_factory=dict)
    figure: str = ""
    kind: str = "generative"
    check_options: dict = field(default_factory=dict)
    fit_defaults: dict = field(default_factory=dict)
    label_axes: str = ""

    def labels_to_align(self, model) -> tuple:
        """The :class:`~latentzoo.inference.mcmc.LabelAxis` tuple of ``model`` (empty if none).

        Examples
        --------
        >>> from latentzoo.models import AspectModel
        >>> [axis.dim for axis in ZOO["aspect"].labels_to_align(AspectModel(2))]
        ['topic']
        """
        if not self.label_axes:
            return ()
        module, _, function = self.label_axes.partition(":")
        return tuple(getattr(importlib.import_module(module), function)(model))


ZOO: dict[str, Family] = {}


def register(family: Family) -> Family:
    """Add ``family`` to the registry (replacing an entry of the same name) and return it.

    Examples
    --------
    >>> import dataclasses
    >>> entry = dataclasses.replace(ZOO["aspect"], name="aspect_copy")
    >>> register(entry).name in ZOO
    True
    >>> del ZOO["aspect_copy"]
    """
    ZOO[family.name] = family
    return family


register(
    Family(
        name="aspect",
        model=AspectModel,
        data=CoOccurrence,
        methods=_Methods(
            {
                "annealed_em": "latentzoo.inference.aspect:annealed_em",
                "gibbs": "latentzoo.inference.aspect:gibbs",
            }
        ),
        recipe=_recipe("aspect"),
        sizes=("n_components",),
        dataset="reuters",
        notebook="notebooks/aspect_model.ipynb",
        label_axes="latentzoo.inference.aspect:label_axes",
        description="aspect model / PLSA / SMM (Hofmann & Puzicha 1998, sec. 2)",
    )
)
register(
    Family(
        name="one_sided",
        model=OneSidedClustering,
        data=CoOccurrence,
        methods=_Methods(
            {
                "hard": "latentzoo.inference.one_sided:hard_acm",
                "annealed_em": "latentzoo.inference.one_sided:annealed_em",
                "gibbs": "latentzoo.inference.one_sided:gibbs",
            }
        ),
        recipe=_recipe("one_sided"),
        sizes=("n_components",),
        dataset="reuters",
        notebook="notebooks/clustering_models.ipynb",
        label_axes="latentzoo.inference.one_sided:label_axes",
        description="one-sided clustering / ACM, a Dirichlet-multinomial mixture (sec. 3.1-3.2)",
    )
)
register(
    Family(
        name="two_sided",
        model=TwoSidedClustering,
        data=CoOccurrence,
        methods=_Methods(
            {
                "hard": "latentzoo.inference.two_sided:hard_scm",
                "mean_field": "latentzoo.inference.two_sided:mean_field",
                "annealed_em": "latentzoo.inference.two_sided:mean_field",
                "gibbs": "latentzoo.inference.two_sided:gibbs",
            }
        ),
        recipe=_recipe("two_sided"),
        sizes=("n_row_clusters", "n_col_clusters"),
        dataset="reuters",
        notebook="notebooks/clustering_models.ipynb",
        label_axes="latentzoo.inference.two_sided:label_axes",
        description="two-sided clustering / symmetric clustering model, SCM (sec. 3.3-3.4)",
    )
)
register(
    Family(
        name="product_space",
        model=ProductSpaceMixture,
        data=CoOccurrence,
        methods=_Methods({"annealed_em": "latentzoo.inference.product_space:product_space_em"}),
        recipe=_recipe("product_space"),
        sizes=("n_row_clusters", "n_col_clusters"),
        dataset="reuters",
        notebook="notebooks/clustering_models.ipynb",
        description="product-space mixture / PMM (Hofmann & Puzicha 1998, sec. 2.4)",
    )
)
register(
    Family(
        name="dpm",
        model=DirichletProcessMixture,
        data=Features,
        methods=_Methods({"gibbs": "latentzoo.inference.mixture:gibbs"}),
        recipe=_recipe("dpm"),
        sizes=("n_components",),
        dataset="digits",
        notebook="notebooks/mixtures.ipynb",
        label_axes="latentzoo.inference.mixture:label_axes",
        description="Dirichlet process mixture of conjugate components (Heller 2007, ch. 2)",
        skipped_checks={
            "data:k_too_large": "n_components only truncates the PyMC reference's stick-breaking;"
            " the collapsed DP sampler is unbounded, so no size can exceed the data",
        },
    )
)
register(
    Family(
        name="mixture",
        model=BayesianMixture,
        data=Features,
        methods=_Methods({"gibbs": "latentzoo.inference.mixture:gibbs"}),
        recipe=_recipe("finite_mixture"),
        sizes=("n_components",),
        dataset="digits",
        notebook="notebooks/mixtures.ipynb",
        label_axes="latentzoo.inference.mixture:label_axes",
        description="finite Bayesian mixture of conjugate components (Heller 2007, ch. 2)",
        skipped_checks={
            "data:k_too_large": "a finite Bayesian mixture may have more components than items:"
            " the empty components are part of the model (their weights follow the Dirichlet)",
        },
    )
)

_NO_PYMC = (
    "BHC has no PyMC declaration of its own: it approximates the DPM, whose declaration is"
    " checked in the dpm family; `latentzoo validate bhc` compares it with the DPM's exact"
    " marginal likelihood and posterior and with its Gibbs sampler"
)
_DETERMINISTIC = (
    "bhc is deterministic and takes no random_state: the same data give the same tree, ties"
    " broken by the smallest pair (tests/inference/test_bhc.py)"
)
register(
    Family(
        name="bhc",
        model=BayesianHierarchicalClustering,
        data=Features,
        methods=_Methods(
            {
                "bhc": "latentzoo.inference.bhc:bhc",
                "rbhc": "latentzoo.inference.bhc:rbhc",
                "embhc": "latentzoo.inference.bhc:embhc",
            }
        ),
        recipe=_recipe("bhc"),
        sizes=(),
        dataset="digits",
        notebook="notebooks/bhc.ipynb",
        reference="dpm",
        description="Bayesian hierarchical clustering, the DPM's fast tree (Heller 2007, ch. 3)",
        fit_defaults={"prior_scale": 2.0},
        check_options={"rbhc": {"m": 10}, "embhc": {"m": 10}},
        skipped_checks={
            "pymc:density": _NO_PYMC,
            "pymc:options": _NO_PYMC,
            "bhc:random_state": _DETERMINISTIC,
            "bhc:determinism": _DETERMINISTIC,
            "simulate_round_trip": "a tree has no parameters whose log-likelihood could be set"
            " against the truth's; recovering simulated clusters is checked through the exact DPM"
            " posterior by `latentzoo validate bhc` and by purity in tests/inference/test_bhc.py",
        },
    )
)

_COST_CHECKS = {
    "pymc:density": "a Gibbs distribution over assignments has no parameter prior to draw from;"
    " its PyMC potential is checked to equal -(H(z') - H(z)) / T exactly in"
    " tests/models/test_pairwise.py, and its samples against enumeration by `validate`",
    "simulate_round_trip": "a cost model has no likelihood to compare with the truth's; recovery"
    " of simulated clusters is tested in tests/inference/test_pairwise.py",
    "data:sparse_formats": "a sparse matrix of dissimilarities means the observed pairs"
    " (Dissimilarities.from_sparse, section 6.3), not the dense matrix without its zeros",
    "memory:huge_counts": "the models take dissimilarities or real vectors, not counts; the"
    " memory of large inputs is checked by memory:huge_k",
}
_REAL_VALUED = "the model takes real values: negative and fractional entries are valid data"
_WARD = "ward is deterministic (scipy linkage) and takes no random_state"
register(
    Family(
        name="pairwise",
        model=PairwiseClustering,
        data=Dissimilarities,
        methods=_Methods(
            {
                "annealing": "latentzoo.inference.pairwise:pairwise_annealing",
                "greedy": "latentzoo.inference.pairwise:greedy",
                "ward": "latentzoo.inference.pairwise:ward",
                "mds": "latentzoo.inference.pairwise:structure_preserving_mds",
            }
        ),
        recipe=_recipe("pairwise"),
        sizes=("n_components",),
        dataset="globins",
        notebook="notebooks/pairwise_clustering.ipynb",
        kind="cost",
        description="pairwise clustering by deterministic annealing (Hofmann & Buhmann 1997)",
        skipped_checks={
            **_COST_CHECKS,
            "data:fractional": "dissimilarities are real numbers: fractional entries are valid",
            "ward:random_state": _WARD,
            "ward:determinism": _WARD,
        },
    )
)
register(
    Family(
        name="central",
        model=CentralClustering,
        data=Features,
        methods=_Methods({"annealing": "latentzoo.inference.pairwise:central_annealing"}),
        recipe=_recipe("central"),
        sizes=("n_components",),
        dataset="glass",
        notebook="notebooks/pairwise_clustering.ipynb",
        kind="cost",
        description="central clustering (K-means) by deterministic annealing (Rose et al.; H&B 1997)",
        skipped_checks={
            **{key: value for key, value in _COST_CHECKS.items() if key != "data:sparse_formats"},
            "data:negative": _REAL_VALUED,
            "data:fractional": _REAL_VALUED,
        },
    )
)

register(
    Family(
        name="cluster-abstraction",
        model=ClusterAbstractionModel,
        data=CoOccurrence,
        methods=_Methods(
            {
                "annealed_em": "latentzoo.inference.cluster_abstraction:annealed_em",
                "three_stage": "latentzoo.inference.cluster_abstraction:three_stage_em",
                "gibbs": "latentzoo.inference.cluster_abstraction:gibbs",
            }
        ),
        recipe=_recipe("cluster_abstraction"),
        sizes=("tree",),
        dataset="reuters",
        notebook="notebooks/cluster_abstraction.ipynb",
        figure="latentzoo.inference.cluster_abstraction:plot_tree",
        fit_defaults={"k": 3},
        description="hierarchical cluster-abstraction model, HACM (Hofmann 1999, sec. 4); --k is"
        " the depth of a complete binary tree",
    )
)


def entry_for(model) -> Family:
    """The registry entry of a model instance, class or name.

    Examples
    --------
    >>> entry_for("aspect").model.__name__
    'AspectModel'
    """
    if isinstance(model, str):
        if model not in ZOO:
            raise ValueError(f"unknown model {model!r}; known models: {', '.join(ZOO)}")
        return ZOO[model]
    cls = model if isinstance(model, type) else type(model)
    for entry in ZOO.values():
        if entry.model is cls:
            return entry
    raise ValueError(f"{cls.__name__} is not registered in latentzoo.zoo")


def as_table() -> pd.DataFrame:
    """The registry as a table (what ``latentzoo list`` prints).

    Examples
    --------
    >>> "dpm" in set(as_table()["model"])
    True
    """
    return pd.DataFrame(
        [
            {
                "model": e.name,
                "class": e.model.__name__,
                "data": e.data.__name__,
                "fast methods": ", ".join(e.methods),
                "reference": e.reference,
                "dataset": e.dataset,
                "notebook": e.notebook,
                "description": e.description,
            }
            for e in ZOO.values()
        ]
    )
