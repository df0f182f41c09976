"""Tests of the shared input checks of latentzoo.data.checks: the memory guard."""

import numpy as np
import pytest

from latentzoo.data import CoOccurrence, checks
from latentzoo.data.checks import check_memory, format_bytes, physical_memory

GIB = 2**30


@pytest.fixture
def sixteen_gib(monkeypatch):
    """A machine with 16 GiB of memory, whatever this one has."""
    monkeypatch.setattr(checks, "physical_memory", lambda: 16 * GIB)


def test_physical_memory_is_positive_here():
    memory = physical_memory()
    assert memory is None or memory > 2**20


def test_format_bytes():
    assert format_bytes(149 * GIB) == "149.0 GiB"
    assert format_bytes(1.5 * 2**20) == "1.5 MiB"


def test_check_memory_accepts_up_to_the_limit(sixteen_gib):
    check_memory(8 * GIB, "a table")
    check_memory(0, "nothing")
    check_memory(12 * GIB, "a table", fraction=0.75)


def test_check_memory_refuses_with_the_estimate_and_the_limit(sixteen_gib):
    with pytest.raises(ValueError) as info:
        check_memory(
            160e9,
            "collapsed Gibbs for the aspect model",
            detail="for 20,000,000,000 tokens",
            hint="use annealed EM",
        )
    assert str(info.value) == (
        "collapsed Gibbs for the aspect model would allocate 149.0 GiB for 20,000,000,000 tokens "
        "(limit 8.0 GiB, half of this machine's memory); use annealed EM"
    )
    with pytest.raises(
        ValueError, match=r"^a table would allocate 9\.0 GiB \(limit 4\.0 GiB, 25% "
    ):
        check_memory(9 * GIB, "a table", fraction=0.25)


def test_check_memory_takes_python_integers_beyond_int64(sixteen_gib):
    with pytest.raises(ValueError, match="would allocate"):
        check_memory(2**80, "a huge table")


@pytest.mark.parametrize("fraction", [0, -0.5, 1.5, float("nan"), "half", True])
def test_check_memory_rejects_a_bad_fraction(fraction):
    with pytest.raises(ValueError, match=r"fraction must be a number in \(0, 1\]"):
        check_memory(1, "a table", fraction=fraction)


def test_check_memory_refuses_nothing_when_memory_is_unknown(monkeypatch):
    monkeypatch.setattr(checks, "physical_memory", lambda: None)
    check_memory(2**80, "a huge table")


def test_dense_and_token_views_of_counts_are_guarded(monkeypatch):
    monkeypatch.setattr(checks, "physical_memory", lambda: 2**20)  # 1 MiB: half is 512 KiB
    data = CoOccurrence(np.full((2, 2), 10**5))
    with pytest.raises(ValueError, match=r"CoOccurrence\.to_tokens would allocate 6\.1 MiB for "):
        data.to_tokens()
    wide = CoOccurrence(np.ones((1, 10**5), dtype=np.int64))
    with pytest.raises(ValueError, match=r"CoOccurrence\.toarray would allocate 0\.8 MiB for a "):
        wide.toarray()
    assert CoOccurrence([[1, 2]]).toarray().tolist() == [[1, 2]]
