"""The compiled core against the pure-Python engine it replaced, on scenarios nobody chose:
each of the random valid scenarios in ``differential.json`` (drawn from the property test's
strategy: every scheme, recovery mode, CC, lossless on and off, link events, every workload kind)
must give the summary, flows and links tables the Python engine gave, to the bit (their hash;
``tests/differential.py`` says how the reference was made)."""

from __future__ import annotations

import pytest
from differential import result_hash, stored

CASES = stored()


def test_reference_is_there_and_varied() -> None:
    """The reference covers what the core must reproduce (so the test below cannot pass empty)."""
    assert len(CASES) >= 100
    scenarios = [case["scenario"] for case in CASES]
    assert {s["lb"]["scheme"] for s in scenarios} >= {
        "ecmp",
        "wcmp",
        "rps",
        "spray_rr",
        "flowlet",
        "drill",
        "adaptive",
        "reps",
        "dfs",
        "tor_assist",
    }
    assert {s["transport"]["recovery"] for s in scenarios} == {"gbn", "sr", "ideal"}
    assert {s["switch"]["lossless"] for s in scenarios} == {True, False}
    assert {e["action"] for s in scenarios for e in s["topology"]["events"]} == {"down", "degrade", "loss"}


@pytest.mark.parametrize("index", range(len(CASES)))
def test_same_result_as_the_python_engine(index: int) -> None:
    case = CASES[index]
    assert result_hash(case["scenario"]) == case["hash"], case["scenario"]
