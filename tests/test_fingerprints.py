"""Fixed-seed results of the landed families stay bit-identical across refactors."""

import importlib.util
import json
from pathlib import Path

HERE = Path(__file__).parent


def test_landed_families_are_bit_identical():
    spec = importlib.util.spec_from_file_location("fingerprints", HERE / "fingerprints.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    stored = json.loads((HERE / "fingerprints.json").read_text())
    values = module.compute()
    changed = sorted(k for k in stored.keys() | values.keys() if stored.get(k) != values.get(k))
    assert not changed, f"fixed-seed results changed: {changed}"
