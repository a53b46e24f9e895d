"""The analytic truths of the validation page, held in the unit tests too.

* ECMP as balls into bins (Pearson's chi-square over flows per uplink against the binomial).
* Ring all-reduce without congestion control against its closed form (2(n - 1) store-and-forward
  steps of S/n, plus the ACK frames sharing each host's uplink)."""

from __future__ import annotations

from typing import Any

import pytest

from spraylab.model.scenario import Scenario, validate
from spraylab.runs.experiment import run
from spraylab.study.metrics import METRICS
from spraylab.study.validation import ecmp_collisions


@pytest.mark.parametrize("spines", [4, 8])
def test_ecmp_uplink_loads_follow_balls_into_bins(spines: int) -> None:
    out = ecmp_collisions(16, spines, 8, 10)
    assert out["p_value"] > 0.001
    assert out["idle_fraction"] == pytest.approx(out["idle_fraction_expected"], abs=0.03)


class _Point:
    def __init__(self, data: dict[str, Any]) -> None:
        self._scenario = validate(data)

    def scenario(self) -> Scenario:  # what the closed-form metric reads
        return self._scenario


@pytest.mark.parametrize("hosts", [4, 8])
def test_ring_allreduce_matches_its_closed_form(hosts: int) -> None:
    data = {
        "topology": {
            "kind": "leaf_spine",
            "leaves": 2,
            "spines": 2,
            "hosts_per_leaf": 16,
            "host_rate": "400Gbps",
        },
        "transport": {"cc": "none"},
        "workload": {"kind": "collective", "collective": "allreduce", "size": 8_000_000, "hosts": hosts},
        "run": {"progress": False},
    }
    closed_form = METRICS["ring_allreduce_ps"].compute(_Point(data), None)
    completion = run(validate(data)).summary["completion_ps"]
    assert completion == pytest.approx(closed_form, rel=0.01)
