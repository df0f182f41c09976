"""Numerical stability at the extremes users reach (issue 8): a document of a million tokens,
inverse temperatures from 1e-3 to 1e3, a billion counts per cell.

Every fast method either returns finite results (probabilities on the simplex, a finite final
free energy) or refuses with a ``ValueError`` that says why; never NaN, never another exception.
"""

import warnings

import numpy as np
import pytest

import latentzoo
from latentzoo.data import CoOccurrence, Features
from latentzoo.models import BayesianMixture, DirichletProcessMixture
from latentzoo.models.conjugate import DirichletMultinomial, NormalGamma, NormalInverseWishart
from tests.helpers import EM_FAMILIES, SMALL_MODELS

_BASE = np.random.default_rng(0).integers(0, 5, size=(6, 8)) + np.eye(6, 8, dtype=int)
DATA = {
    "million-token document": np.vstack([_BASE, [600_000, 300_000, 100_000, 0, 0, 0, 0, 0]]),
    "1e9 per cell": np.full((4, 5), 10**9),
    "small": _BASE,
}
MODELS = {name: SMALL_MODELS[name] for name in EM_FAMILIES}
SCHEDULES = [[1e-3], [1e3], [1e-3, 1.0, 1e3], "auto"]


def _check_finite(result):
    if hasattr(result, "params"):
        for name, value in result.params.items():
            assert np.isfinite(np.asarray(value, dtype=float)).all(), f"{name} is not finite"
        assert np.isfinite(result.trace["free_energy"].iloc[-1]), "the final free energy"
        assert not np.isnan(result.trace["free_energy"]).any(), "a NaN free energy"
    else:
        for group in (result.posterior, result.log_likelihood):
            for name in group.data_vars:
                assert np.isfinite(group[name].to_numpy()).all(), f"{name} is not finite"


def _fit_or_refuse(model, data, **options):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            result = latentzoo.fit(model, data, **options)
        except ValueError as error:
            assert str(error), "a refusal must say why"
            return None
    _check_finite(result)
    return result


@pytest.mark.parametrize("betas", SCHEDULES, ids=str)
@pytest.mark.parametrize("data", DATA, ids=str)
@pytest.mark.parametrize("family", [f for f in MODELS])
def test_annealed_em_stays_finite_or_refuses(family, data, betas):
    _fit_or_refuse(MODELS[family], CoOccurrence(DATA[data]), betas=betas, max_iter=50,
                   random_state=0)  # fmt: skip


@pytest.mark.parametrize("data", DATA, ids=str)
@pytest.mark.parametrize("family", ["one_sided", "two_sided"])
def test_hard_clustering_stays_finite_or_refuses(family, data):
    _fit_or_refuse(MODELS[family], CoOccurrence(DATA[data]), method="hard", random_state=0)


@pytest.mark.parametrize("data", DATA, ids=str)
@pytest.mark.parametrize("family", ["aspect", "one_sided", "two_sided"])
def test_gibbs_stays_finite_or_refuses(family, data):
    _fit_or_refuse(MODELS[family], CoOccurrence(DATA[data]), method="gibbs", chains=1, draws=3,
                   tune=2, progressbar=False, random_state=0)  # fmt: skip


def test_cold_temperatures_are_fitted_where_the_tables_allow_it():
    # Scaled tempered tables: beta = 1000 after a fit at beta = 1 keeps the mode (no underflow).
    data = CoOccurrence(_BASE)
    for model in (MODELS["product_space"], MODELS["aspect"]):
        result = _fit_or_refuse(model, data, betas=[1.0, 1e3], max_iter=50, random_state=0)
        assert result is not None, f"{type(model).__name__} refused beta = 1000 after beta = 1"


_RNG = np.random.default_rng(1)
FEATURES = {
    "counts 1e9": (DirichletMultinomial(), np.full((6, 4), 1e9)),
    "a million-count item": (
        DirichletMultinomial(),
        np.vstack([_RNG.integers(0, 5, (8, 4)), [[1e6, 0, 0, 0]]]).astype(float),
    ),
    "values near 1e9": (NormalGamma(), _RNG.normal(size=(10, 3)) * 1e9),
    "values near 1e-9": (NormalGamma(), _RNG.normal(size=(10, 3)) * 1e-9),
    "constant values": (NormalGamma(), np.ones((10, 3))),
    "NIW near 1e6": (NormalInverseWishart(), _RNG.normal(size=(10, 2)) * 1e6),
}


@pytest.mark.parametrize("split_merge", [False, True])
@pytest.mark.parametrize("case", FEATURES, ids=str)
@pytest.mark.parametrize("finite", [False, True], ids=["dpm", "finite"])
def test_mixture_gibbs_stays_finite_or_refuses(finite, case, split_merge):
    component, values = FEATURES[case]
    model = BayesianMixture(2, component=component) if finite else DirichletProcessMixture(
        component=component)  # fmt: skip
    _fit_or_refuse(model, Features(values), method="gibbs", chains=1, draws=5, tune=2,
                   progressbar=False, random_state=0, split_merge=split_merge)  # fmt: skip
