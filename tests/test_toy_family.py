"""A family defined entirely in this file joins the zoo with no edit to any shared module.

The toy is the smallest model with a posterior: every feature ``j`` of binary data is a coin of
bias ``theta_j ~ Beta(a, b)``, flipped once per item. Its one method draws exact independent
posterior samples; its validation recipe has one level, ``exact``, that compares the draws with
the posterior mean obtained by enumerating a fine grid of ``theta``. Registered for the test
only, it runs the common checks (:mod:`latentzoo.testing`), ``latentzoo fit toy`` and
``latentzoo validate toy --quick``.
"""

from __future__ import annotations

import dataclasses
import math
from typing import ClassVar

import numpy as np
import pytest

from latentzoo import testing
from latentzoo.cli import main
from latentzoo.data import Features
from latentzoo.data.checks import as_rng, check_random_state
from latentzoo.inference.family import Family, Method, flag, integer, seed
from latentzoo.models._checks import check_positive
from latentzoo.zoo import ZOO, register, unregister

_NO_PYMC = "the toy declares no PyMC model: its recipe checks it against the exact posterior"


@dataclasses.dataclass(frozen=True)
class ToyCoins:
    """Binary features, each a coin of bias ``theta_j ~ Beta(a, b)``."""

    a: float = 1.0
    b: float = 1.0
    data_type: ClassVar[type] = Features

    def __post_init__(self):
        check_positive("a", self.a)
        check_positive("b", self.b)

    def check_data(self, data) -> Features:
        data = data if isinstance(data, Features) else Features(data)
        if data.kind != "binary":
            raise ValueError(f"ToyCoins takes binary data (entries in [0, 1]), got {data.kind}")
        return data

    def simulate(self, random_state, n_items: int = 12, n_features: int = 4):
        rng = as_rng(random_state)
        theta = rng.beta(self.a, self.b, size=n_features)
        X = (rng.random((n_items, n_features)) < theta).astype(np.int64)
        return Features(X), {"theta": theta}

    def log_likelihood(self, params, data) -> np.ndarray:
        X = np.asarray(self.check_data(data).X, float)
        theta = np.clip(params["theta"], 1e-300, 1 - 1e-16)
        return X @ np.log(theta) + (1 - X) @ np.log1p(-theta)

    def invariants(self, params, data) -> dict:
        """The label-invariant summary every method is compared through: the log-likelihood."""
        return {"loglik": np.asarray(self.log_likelihood(params, data).sum())}

    def posterior(self, data) -> tuple[np.ndarray, np.ndarray]:
        """Beta parameters of each coin's posterior."""
        X = np.asarray(self.check_data(data).X, float)
        ones = X.sum(axis=0)
        return self.a + ones, self.b + X.shape[0] - ones


def draw_posterior(
    model: ToyCoins, data, chains: int = 2, draws: int = 100, tune: int = 0,
    random_state=None, progressbar: bool = False,
):  # fmt: skip
    """Exact independent draws of every coin's bias from its Beta posterior (``tune``: none are
    needed; accepted as every sampler takes it)."""
    import arviz as az
    import xarray as xr

    for name, value, low in (("chains", chains, 1), ("draws", draws, 1), ("tune", tune, 0)):
        if isinstance(value, bool) or not isinstance(value, int) or value < low:
            raise ValueError(f"{name} must be an integer >= {low}, got {value!r}")
    check_random_state(random_state)
    data = model.check_data(data)
    a, b = model.posterior(data)
    rng = as_rng(random_state)
    theta = rng.beta(a, b, size=(chains, draws, a.size))
    X = np.asarray(data.X, float)
    loglik = np.einsum("nj,cdj->cdn", X, np.log(theta)) + np.einsum(
        "nj,cdj->cdn", 1 - X, np.log1p(-theta)
    )
    items = [str(name) for name in data.item_names]
    features = [str(name) for name in data.feature_names]
    idata = az.from_dict(
        posterior={"theta": theta, "loglik": loglik.sum(axis=2), "log_p": loglik},
        observed_data={"x": np.asarray(data.X)},
        coords={"item": items, "feature": features},
        dims={"theta": ["feature"], "log_p": ["item"], "x": ["item", "feature"]},
    )
    chain_draw = {"chain": np.arange(chains), "draw": np.arange(draws), "item": items}
    pointwise = xr.Dataset({"x": (("chain", "draw", "item"), loglik)}, coords=chain_draw)
    idata.add_groups(log_likelihood=pointwise)
    for group in idata.groups():
        idata[group].attrs.update(
            {"model": "ToyCoins", "model_a": model.a, "model_b": model.b, "method": "exact"}
        )
    return idata


def _exact_level(entry, recipe, model, data, settings, rng, progressbar=False):
    """The draws' mean against the posterior mean by enumeration of a grid of ``theta``."""
    from latentzoo.inference.compare import Check, Comparison

    small, _ = model.simulate(rng, n_items=8, n_features=3)
    grid = (np.arange(20_000) + 0.5) / 20_000
    X = np.asarray(small.X, float)
    ones, n = X.sum(axis=0), X.shape[0]
    log_post = (model.a - 1 + ones[:, None]) * np.log(grid) + (
        model.b - 1 + n - ones[:, None]
    ) * np.log1p(-grid)
    weights = np.exp(log_post - log_post.max(axis=1, keepdims=True))
    exact = (weights * grid).sum(axis=1) / weights.sum(axis=1)
    idata = entry.methods["exact"](model, small, chains=4, draws=2000, random_state=rng)
    theta = idata.posterior["theta"].values.reshape(-1, exact.size)
    z = np.abs(theta.mean(axis=0) - exact) / (theta.std(axis=0) / math.sqrt(len(theta)))
    check = Check("exact", "draw mean = enumerated posterior mean", bool(np.all(z < 5)),
                  f"max |z| {z.max():.2f} over {exact.size} coins (need < 5)")  # fmt: skip
    return Comparison(checks=[check], problem=f"synthetic {small}, grid of 20,000 values")


def toy_recipe():
    from latentzoo.inference.validation import ValidationRecipe

    return ValidationRecipe(
        checks={"exact": _exact_level},
        not_applicable={
            level: _NO_PYMC
            for level in ("density", "reference", "optimality", "mode-matched", "calibrated")
        },
    )


TOY = Family(
    name="toy",
    model=ToyCoins,
    methods={
        "exact": Method(
            draw_posterior,
            (
                integer("chains", 2, "independent chains"),
                integer("draws", 100, "draws per chain"),
                integer("tune", 0, "burn-in (none needed)", low=0),
                seed(),
                flag("progressbar", False, "show a progress bar"),
            ),
        )
    },
    recipe=toy_recipe,
    sizes=(),
    dataset="digits",
    notebook="",
    description="toy Beta-Bernoulli coins (tests/test_toy_family.py)",
    skipped_checks={
        "pymc:density": _NO_PYMC,
        "pymc:options": _NO_PYMC,
        "cli:interrupt": "the toy's draws take microseconds: there is nothing to interrupt",
    },
)


@pytest.fixture
def toy():
    register(TOY)
    yield TOY
    unregister("toy")
    assert "toy" not in ZOO


def test_the_toy_family_is_listed_and_removed(toy):
    assert ZOO["toy"] is toy and "toy" in list(ZOO)
    from latentzoo.zoo import as_table, entry_for

    assert entry_for(ToyCoins(1.0)) is toy
    assert "toy" in set(as_table()["model"])


def test_common_checks_run_on_the_toy(toy):
    outcome = testing.check_model(toy)
    assert outcome["data:nan"] == "passed"
    outcome = testing.check_method(toy, "exact")
    assert outcome["determinism"] == "passed"


def test_cli_fits_and_validates_the_toy(toy, tmp_path, capsys):
    X = np.random.default_rng(0).integers(0, 2, size=(10, 4))
    data_file = tmp_path / "coins.csv"
    np.savetxt(data_file, X, delimiter=",", fmt="%d")
    out = tmp_path / "toy.nc"
    assert main(["fit", "toy", "--data", str(data_file), "--draws", "50", "--out", str(out),
                 "--quiet"]) == 0  # fmt: skip
    import arviz as az

    assert az.from_netcdf(out).posterior["theta"].shape == (2, 50, 4)
    report = tmp_path / "report"
    code = main(["validate", "toy", "--quick", "--data", str(data_file), "--out", str(report)])
    assert code == 0, capsys.readouterr()
