"""Issue 25: checks of the validation levels that must fail on realistic bugs, and their power."""

import numpy as np
import pytest

from latentzoo.inference import recipes
from latentzoo.inference.bhc import bhc, rbhc
from latentzoo.inference.enumeration import detectable_shift, frequency_test
from latentzoo.models import BayesianHierarchicalClustering
from latentzoo.models.conjugate import BetaBernoulli

BINARY = BayesianHierarchicalClustering(component=BetaBernoulli(a=(0.5, 1.0, 2.0), b=1.5))


@pytest.mark.slow  # the BHC exact level (default tier) already runs the filter check on RBHC
def test_rbhc_filter_check_passes_rbhc_and_fails_a_dropped_filter_option():
    """The RBHC filter check recomputes Algorithm 3.5 on the replayed subsample: RBHC passes it,
    and a wrapper that drops ``filter_prior`` (always the size prior) fails it on the ``pi`` runs."""
    rng = np.random.default_rng(0)
    items, _ = BINARY.simulate(rng, n_items=9, n_features=3)
    assert recipes._rbhc_filter(rbhc, bhc, BINARY, items, 4, np.random.default_rng(1)) == 0

    def option_dropped(model, data, filter_prior="size", **options):
        return rbhc(model, data, **options)

    broken = recipes._rbhc_filter(option_dropped, bhc, BINARY, items, 4, np.random.default_rng(1))
    assert broken > 0


def test_stated_power_of_the_exact_test_holds_for_the_least_detectable_shift():
    """A shift of the stated total variation, moving mass between two halves of the posterior in
    proportion to it (the direction the statement is derived for), is detected about 80% of the
    time (Monte Carlo, 200 replicates: at least 65%), and the unshifted sampler passes."""
    rng = np.random.default_rng(0)
    p = rng.dirichlet(np.ones(16))
    n = 4000
    delta = detectable_shift(15, n)
    order = np.argsort(p)
    low = order[np.cumsum(p[order]) <= 0.5]
    high = np.setdiff1d(order, low)
    q = p.copy()
    q[low] *= 1 + delta / p[low].sum()
    q[high] *= 1 - delta / p[high].sum()
    assert abs(0.5 * np.abs(q - p).sum() - delta) < 1e-12
    detected = [not frequency_test(np.log(p), rng.choice(16, n, p=q)).passed for _ in range(200)]
    assert np.mean(detected) >= 0.65
    assert frequency_test(np.log(p), rng.choice(16, n, p=p)).passed


def test_alternating_sbc_runs_the_second_concentration():
    """The mixtures' calibrated level alternates the user's alpha with SBC_ALPHA_FACTOR times it."""
    from latentzoo.inference.calibration import alternating

    seen = []

    class Model:
        def __init__(self, alpha):
            self.alpha = alpha

        def simulate(self, rng, **sizes):
            seen.append(self.alpha)
            return None, {}

    model, _ = alternating([Model(1.0), Model(3.0)], [None, None])
    for _ in range(4):
        model.simulate(None)
    assert seen == [1.0, 3.0, 1.0, 3.0]
    assert recipes.SBC_ALPHA_FACTOR != 1
