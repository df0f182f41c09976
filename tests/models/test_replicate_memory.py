"""A posterior predictive replicate of co-occurrence data needs every cell's probability (its
tokens may fall on any cell): data too large for that are refused up front, naming the size,
before anything of their size is allocated."""

import numpy as np
import pytest
import scipy.sparse as sp

from latentzoo.data import CoOccurrence
from latentzoo.data.checks import physical_memory
from latentzoo.models import AspectModel, TwoSidedClustering

needs_known_memory = pytest.mark.skipif(
    physical_memory() is None, reason="the machine's memory is unknown: nothing is refused"
)


@needs_known_memory
@pytest.mark.parametrize("model", [AspectModel(2), TwoSidedClustering(2, 2)], ids=repr)
def test_a_replicate_of_too_many_cells_is_refused_naming_the_size(model):
    side = 1_000_000  # 10**12 cells: terabytes, whatever the machine
    one_token = sp.csr_matrix(([1], ([0], [0])), shape=(side, side))
    data = CoOccurrence(one_token)
    with pytest.raises(ValueError, match=r"would allocate .* for 1000000 x 1000000 = 1,000,000,"):
        model.replicate_probabilities({}, data)


def test_a_small_replicate_still_has_rows_summing_to_one():
    data = CoOccurrence([[2, 0, 1], [0, 3, 0]])
    params = {"theta": [[0.5, 0.5], [1.0, 0.0]], "phi": [[0.2, 0.3, 0.5], [0.6, 0.2, 0.2]]}
    probabilities = AspectModel(2).replicate_probabilities(params, data)
    np.testing.assert_allclose(probabilities.sum(axis=1), 1.0)
    np.testing.assert_allclose(probabilities[1], [0.2, 0.3, 0.5])
