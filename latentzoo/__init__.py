"""latentzoo: latent-class and Bayesian clustering models, PyMC references and fast inference.

>>> import latentzoo
>>> from latentzoo.data import load
>>> from latentzoo.models import AspectModel
>>> result = latentzoo.fit(AspectModel(2), load("toy"), method="annealed_em", random_state=0)
"""

from latentzoo import zoo
from latentzoo.api import fit
from latentzoo.inference.results import heldout_score, labels, perplexity
from latentzoo.validation import validate

__all__ = ["fit", "heldout_score", "labels", "perplexity", "validate", "zoo"]
__version__ = "0.1.0"
