"""The exact and calibrated levels raise no more false alarms than their nominal rate (slow)."""

import math
import os

import pytest

from tests.false_alarms import FAMILIES, pass_counts


@pytest.mark.slow
@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_exact_and_sbc_pass_at_least_95_of_100_seeds(family):
    n_seeds = int(os.environ.get("LATENTZOO_FALSE_ALARM_SEEDS", "100"))
    counts = pass_counts(family, range(n_seeds))
    needed = math.ceil(0.95 * n_seeds)
    assert counts["exact"] >= needed, counts["failures"]
    assert counts["calibrated"] >= needed, counts["failures"]
