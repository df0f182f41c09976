"""The log priors of the Dirichlet co-occurrence models against scipy's Dirichlet densities: one
check, parametrised by family, of every simplex a model's parameters hold."""

import numpy as np
import pytest
from scipy import stats

from latentzoo.models import AspectModel, OneSidedClustering


def aspect_params(rng):
    return {"theta": rng.dirichlet(np.ones(3), size=4), "phi": rng.dirichlet(np.ones(5), size=3)}


def one_sided_params(rng):
    return {"rho": rng.dirichlet(np.ones(3)), "q": rng.dirichlet(np.ones(5), size=3)}


@pytest.mark.parametrize(
    "model, random_params, concentrations",
    [
        (AspectModel(3, alpha=0.7, eta=1.6), aspect_params, {"theta": 0.7, "phi": 1.6}),
        (OneSidedClustering(3, alpha=0.7, eta=1.6), one_sided_params, {"rho": 0.7, "q": 1.6}),
    ],
    ids=["aspect", "one_sided"],
)
def test_log_prior_matches_scipy_dirichlet(model, random_params, concentrations):
    """The sum of the Dirichlet log densities of the simplices (along the last axis) of every
    parameter, each with its symmetric concentration."""
    params = random_params(np.random.default_rng(3))
    want = 0.0
    for name, concentration in concentrations.items():
        simplices = np.atleast_2d(params[name])
        want += sum(stats.dirichlet.logpdf(s, np.full(s.size, concentration)) for s in simplices)
    assert model.log_prior(params) == pytest.approx(want, rel=1e-12)
