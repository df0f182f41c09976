"""Fixed-seed fingerprints of every landed family's fast methods and validation checks.

A refactor must leave these bit-identical ("same seeds, same numbers"): ``tests/test_fingerprints.py``
recomputes them and compares with ``tests/fingerprints.json``. Regenerate the file only when a change
is *meant* to alter results, and say so in the commit message::

    python tests/fingerprints.py --write
"""

from __future__ import annotations

import hashlib
import json
import sys
from pathlib import Path

import numpy as np

PATH = Path(__file__).with_name("fingerprints.json")


def _digest(value) -> str:
    array = np.ascontiguousarray(np.asarray(value))
    return hashlib.sha256(
        array.tobytes() + str(array.dtype).encode() + str(array.shape).encode()
    ).hexdigest()[:16]


def _params(prefix: str, params: dict) -> dict[str, str]:
    return {f"{prefix}.{key}": _digest(value) for key, value in sorted(params.items())}


def _posterior(prefix: str, idata) -> dict[str, str]:
    out = {
        f"{prefix}.posterior.{name}": _digest(idata.posterior[name].to_numpy())
        for name in sorted(idata.posterior.data_vars)
    }
    out.update(
        {
            f"{prefix}.log_likelihood.{name}": _digest(idata.log_likelihood[name].to_numpy())
            for name in sorted(idata.log_likelihood.data_vars)
        }
    )
    return out


def compute() -> dict[str, str]:
    """Every fingerprint, keyed by family.method.variable."""
    import latentzoo
    from latentzoo.data import load
    from latentzoo.models import (
        AspectModel,
        OneSidedClustering,
        ProductSpaceMixture,
        TwoSidedClustering,
    )

    toy = load("toy")
    reuters = load("reuters")
    small = reuters.subset(rows=np.arange(40), cols=reuters.top_columns(60))
    small = small.subset(rows=np.flatnonzero(small.row_totals > 0))
    out: dict[str, str] = {}
    fit = latentzoo.fit
    gibbs = {"chains": 2, "draws": 15, "tune": 5, "random_state": 3, "progressbar": False}

    aspect, one = AspectModel(3), OneSidedClustering(3)
    two, pmm = TwoSidedClustering(2, 3), ProductSpaceMixture(2, 3)
    auto = {"betas": "auto", "max_iter": 40}
    # (key, model, data, method, options) in the order they run; of a Gibbs fit the posterior
    # and the log likelihood are digested, of the others the parameters
    fits = [
        ("aspect.em_auto", aspect, small, "annealed_em", auto | {"random_state": 1}),
        ("aspect.em_overrelax", aspect, small, "annealed_em",
         {"betas": [0.8, 1.0], "overrelax": 1.5, "max_iter": 30, "random_state": 2}),
        ("aspect.em_early", aspect, small, "annealed_em",
         {"betas": "early_stopping", "max_iter": 30, "random_state": 2}),
        ("aspect.gibbs", aspect, toy, "gibbs", gibbs),
        ("one_sided.hard", one, small, "hard", {"random_state": 4}),
        ("one_sided.em", one, small, "annealed_em", auto | {"random_state": 4}),
        ("one_sided.gibbs", one, toy, "gibbs", gibbs),
        ("two_sided.hard", two, small, "hard", {"random_state": 5}),
        ("two_sided.mean_field", two, small, "mean_field", auto | {"random_state": 5}),
        ("two_sided.gibbs", two, toy, "gibbs", gibbs),
        ("product_space.em", pmm, small, "annealed_em", auto | {"random_state": 6}),
    ]  # fmt: skip
    for key, model, data, method, options in fits:
        result = fit(model, data, method, **options)
        out |= _posterior(key, result) if method == "gibbs" else _params(key, result.params)

    comparison = latentzoo.validate(
        OneSidedClustering(2), quick=True, levels=["exact"], random_state=7
    )
    out["one_sided.validate.exact"] = _digest(
        np.array([c.numbers.get("chi2", np.nan) for c in comparison.checks])
    )
    comparison = latentzoo.validate(AspectModel(2), quick=True, levels=["exact"], random_state=7)
    out["aspect.validate.exact"] = _digest(
        np.array([c.numbers.get("chi2", np.nan) for c in comparison.checks])
    )
    return out


if __name__ == "__main__":
    values = compute()
    if "--write" in sys.argv:
        PATH.write_text(json.dumps(values, indent=1, sort_keys=True) + "\n")
        print(f"wrote {len(values)} fingerprints to {PATH}")
    else:
        stored = json.loads(PATH.read_text())
        changed = sorted(k for k in stored.keys() | values.keys() if stored.get(k) != values.get(k))
        print("changed:", changed or "none")
