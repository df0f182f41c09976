"""latentzoo: latent-class and Bayesian clustering models, PyMC references and fast inference.

>>> import latentzoo
>>> from latentzoo.data import load
>>> from latentzoo.models import AspectModel
>>> result = latentzoo.fit(AspectModel(2), load("toy"), method="annealed_em", random_state=0)
"""

import importlib

__all__ = [
    "ConvergenceWarning",
    "fit",
    "fit_pymc",
    "heldout_score",
    "labels",
    "load_result",
    "perplexity",
    "posterior_predictive",
    "validate",
    "zoo",
]
__version__ = "0.1.0"

# The public names are imported on first use: ``latentzoo --help`` and ``latentzoo list`` must not
# pay for ArviZ, PyMC and numba (seconds, tens of seconds on a busy machine) just to print text.
_LAZY = {
    "ConvergenceWarning": ("latentzoo.inference.mcmc", "ConvergenceWarning"),
    "fit": ("latentzoo.api", "fit"),
    "fit_pymc": ("latentzoo.api", "fit_pymc"),
    "heldout_score": ("latentzoo.inference.results", "heldout_score"),
    "labels": ("latentzoo.inference.results", "labels"),
    "load_result": ("latentzoo.api", "load_result"),
    "perplexity": ("latentzoo.inference.results", "perplexity"),
    "posterior_predictive": ("latentzoo.api", "posterior_predictive"),
    "validate": ("latentzoo.validation", "validate"),
    "zoo": ("latentzoo.zoo", None),
}


def __getattr__(name):
    if name not in _LAZY:
        raise AttributeError(f"module 'latentzoo' has no attribute {name!r}")
    module, attribute = _LAZY[name]
    value = importlib.import_module(module)
    if attribute is not None:
        value = getattr(value, attribute)
    globals()[name] = value
    return value


def __dir__():
    return sorted([*globals(), *_LAZY])
