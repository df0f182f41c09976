"""Issue 24: Bayesian Sets results save and load back (netCDF and .npz)."""

import numpy as np
import pytest

from latentzoo.data import Features
from latentzoo.inference.bayesian_sets import RetrievalResult, bayesian_sets
from latentzoo.models.bayesian_sets import BayesianSets


@pytest.mark.parametrize("suffix", [".nc", ".npz"])
@pytest.mark.parametrize("query", [["ant"], ["ant", "bee"]])
def test_a_saved_ranking_loads_back_with_its_scores_query_and_names(tmp_path, suffix, query):
    items = Features([[1, 1, 0], [1, 1, 0], [0, 0, 1], [1, 0, 1]], item_names=["ant", "bee",
                     "cat", "dog"], feature_names=["small", "legs6", "fur"])  # fmt: skip
    result = bayesian_sets(items, query, BayesianSets(scale=3.0))
    path = tmp_path / f"ranking{suffix}"
    result.save(path)
    back = RetrievalResult.load(path)
    np.testing.assert_array_equal(back.scores, result.scores)
    np.testing.assert_array_equal(back.query, result.query)
    np.testing.assert_array_equal(back.weights, result.weights)
    assert back.constant == result.constant
    assert back.item_names.tolist() == ["ant", "bee", "cat", "dog"]
    assert back.feature_names.tolist() == ["small", "legs6", "fur"]
    assert [name for name, _, _ in back.top(3)] == [name for name, _, _ in result.top(3)]
    if suffix == ".nc":
        assert back.model == BayesianSets(scale=3.0)


def test_save_refuses_an_unknown_format(tmp_path):
    result = bayesian_sets(np.array([[1, 0], [1, 1]]), [0])
    with pytest.raises(ValueError, match="format must be"):
        result.save(tmp_path / "x.nc", format="csv")


def test_a_file_of_the_one_draw_posterior_layout_still_loads(tmp_path):
    import arviz as az
    import xarray as xr

    posterior = xr.Dataset(
        {"score": (("chain", "draw", "item"), np.array([[[0.5, -1.0, 0.25]]]))},
        coords={"chain": [0], "draw": [0], "item": ["a", "b", "c"]},
        attrs={"method": "bayesian_sets", "query": np.int64(0), "point_estimate": 1},
    )
    path = tmp_path / "old.nc"
    az.InferenceData(posterior=posterior).to_netcdf(str(path))
    back = RetrievalResult.load(path)
    assert back.scores.tolist() == [0.5, -1.0, 0.25] and back.query.tolist() == [0]
    assert back.ranking.tolist() == [0, 2, 1] and back.weights is None
