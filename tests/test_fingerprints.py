"""Fixed-seed results of the landed families stay bit-identical across refactors.

A few results go through BLAS matrix products, whose last bits depend on the kernel OpenBLAS
picks for the CPU at run time (SkylakeX, Haswell, ...), not on our code. ``fingerprints.json``
holds the digests under the kernel of the machine that wrote it; ``fingerprints_blas.json`` holds,
per other kernel, the digests of the same landed code under that kernel (with its provenance).
"""

import importlib.util
import json
from pathlib import Path

import threadpoolctl

HERE = Path(__file__).parent


def openblas_kernel() -> str:
    """The kernel OpenBLAS chose at run time (``""`` when numpy does not use OpenBLAS)."""
    for library in threadpoolctl.threadpool_info():
        if library.get("internal_api") == "openblas":
            return str(library.get("architecture") or "")
    return ""


def expected_fingerprints() -> dict:
    """``fingerprints.json`` with the digests of this machine's BLAS kernel where they differ."""
    stored = json.loads((HERE / "fingerprints.json").read_text())
    variants = json.loads((HERE / "fingerprints_blas.json").read_text())
    return stored | variants.get(openblas_kernel(), {})


def test_landed_families_are_bit_identical():
    spec = importlib.util.spec_from_file_location("fingerprints", HERE / "fingerprints.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    expected = expected_fingerprints()
    values = module.compute()
    changed = sorted(k for k in expected.keys() | values.keys() if expected.get(k) != values.get(k))
    assert not changed, (
        f"fixed-seed results changed: {changed} (OpenBLAS kernel {openblas_kernel() or 'none'!r};"
        " a kernel other than those recorded may alter BLAS-dependent digests: record its digests"
        " of the landed code in tests/fingerprints_blas.json)"
    )


def test_the_blas_variants_only_replace_recorded_digests():
    stored = json.loads((HERE / "fingerprints.json").read_text())
    variants = json.loads((HERE / "fingerprints_blas.json").read_text())
    for kernel, digests in variants.items():
        if kernel.startswith("_"):
            continue
        assert set(digests) <= set(stored), kernel
        assert all(digests[key] != stored[key] for key in digests), kernel
