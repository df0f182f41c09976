"""The registry: which model has which fast methods, which reference, which data and notebook."""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from latentzoo.models import (
    AspectModel,
    OneSidedClustering,
    ProductSpaceMixture,
    TwoSidedClustering,
)

__all__ = ["Entry", "ZOO", "entry_for", "as_table"]


@dataclass(frozen=True)
class Entry:
    """One model family of the zoo.

    Attributes
    ----------
    name : str
        Name used on the command line.
    model : type
        The model dataclass.
    size_argument : str
        Constructor argument set by ``--k`` on the command line.
    methods : dict[str, str]
        Fast method name -> function path in ``latentzoo.inference``.
    reference : str
        The reference method (always "pymc").
    dataset : str
        Default dataset for ``latentzoo fit`` / ``validate``.
    notebook : str
        Path of the family's executed notebook.
    """

    name: str
    model: type
    size_argument: str
    methods: dict
    reference: str
    dataset: str
    notebook: str
    description: str


ZOO: dict[str, Entry] = {
    "aspect": Entry(
        name="aspect",
        model=AspectModel,
        size_argument="n_components",
        methods={
            "annealed_em": "latentzoo.inference.aspect.annealed_em",
            "gibbs": "latentzoo.inference.aspect.gibbs",
        },
        reference="pymc",
        dataset="reuters",
        notebook="notebooks/aspect_model.ipynb",
        description="aspect model / PLSA / SMM (Hofmann & Puzicha 1998, sec. 2)",
    ),
    "one_sided": Entry(
        name="one_sided",
        model=OneSidedClustering,
        size_argument="n_clusters",
        methods={
            "hard": "latentzoo.inference.one_sided.hard_acm",
            "annealed_em": "latentzoo.inference.one_sided.annealed_em",
            "gibbs": "latentzoo.inference.one_sided.gibbs",
        },
        reference="pymc",
        dataset="reuters",
        notebook="notebooks/clustering_models.ipynb",
        description="one-sided clustering / ACM, a Dirichlet-multinomial mixture (sec. 3.1-3.2)",
    ),
    "two_sided": Entry(
        name="two_sided",
        model=TwoSidedClustering,
        size_argument="n_row_clusters",
        methods={
            "hard": "latentzoo.inference.two_sided.hard_scm",
            "mean_field": "latentzoo.inference.two_sided.mean_field",
            "annealed_em": "latentzoo.inference.two_sided.mean_field",
            "gibbs": "latentzoo.inference.two_sided.gibbs",
        },
        reference="pymc",
        dataset="reuters",
        notebook="notebooks/clustering_models.ipynb",
        description="two-sided clustering / symmetric clustering model, SCM (sec. 3.3-3.4)",
    ),
    "product_space": Entry(
        name="product_space",
        model=ProductSpaceMixture,
        size_argument="n_row_clusters",
        methods={"annealed_em": "latentzoo.inference.aspect.product_space_em"},
        reference="pymc",
        dataset="reuters",
        notebook="notebooks/clustering_models.ipynb",
        description="product-space mixture / PMM (Hofmann & Puzicha 1998, sec. 2.4)",
    ),
}


def entry_for(model) -> Entry:
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
    """The registry as a table (what ``latentzoo list`` prints)."""
    return pd.DataFrame(
        [
            {
                "model": e.name,
                "class": e.model.__name__,
                "fast methods": ", ".join(e.methods),
                "reference": e.reference,
                "dataset": e.dataset,
                "notebook": e.notebook,
                "description": e.description,
            }
            for e in ZOO.values()
        ]
    )
