"""The scenario files of the studies, and a scaled-down check of the results page's claim 2.

* Every scenario file under ``scenarios/`` validates (sweep definitions under
  ``scenarios/sweeps/`` are another format and are skipped).
* Every file under ``scenarios/lb/`` names, in its header comment, the exact ``spraylab``
  command that runs it.
* Claim 2 of docs/results.md on a 64-host fabric (8 leaves x 8 hosts, 8 spines, 400G, the
  permutation file with 2 MB flows): ToR-assisted spraying in ``nack_filter`` mode over
  selective-repeat RNICs retransmits at most 1% of its packets spuriously and completes within
  10% of random packet spraying over the ideal (reorder-tolerant) transport.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from spraylab.model.scenario import Scenario
from spraylab.model.variants import variant_scenario
from spraylab.runs.experiment import run

ROOT = Path(__file__).resolve().parents[1]
SCENARIOS = ROOT / "scenarios"
SKIP_DIRS = {"sweeps"}

FILES = sorted(
    p for p in SCENARIOS.rglob("*.toml") if not SKIP_DIRS & set(p.relative_to(SCENARIOS).parts[:-1])
)


def test_there_are_scenario_files() -> None:
    assert any(p.parent.name == "lb" for p in FILES)


@pytest.mark.parametrize("path", FILES, ids=lambda p: str(p.relative_to(SCENARIOS)))
def test_scenario_file_validates(path: Path) -> None:
    scenario = Scenario.load(path)
    assert scenario.workload


@pytest.mark.parametrize("path", [p for p in FILES if p.parent.name == "lb"], ids=lambda p: p.name)
def test_lb_scenario_names_its_command(path: Path) -> None:
    header = [line for line in path.read_text().splitlines() if line.startswith("#")]
    assert any(f"spraylab compare scenarios/lb/{path.name} --lb " in line for line in header)


def small_permutation(scheme: str, recovery: str, **params: object) -> dict:
    base = Scenario.load(SCENARIOS / "lb" / "permutation_128.toml")
    scenario = variant_scenario(
        base,
        {
            "lb": {"scheme": scheme, **params},
            "transport.recovery": recovery,
            "topology.leaves": 8,
            "workload.0.size": "2MB",
            "run.progress": False,
        },
    )
    assert scenario.topology.leaves * scenario.topology.n_hosts_per_leaf == 64
    result = run(scenario)
    summary = result.summary
    assert summary["stop_reason"] == "done" and summary["flows_completed"] == summary["flows"] == 64
    return summary


def test_claim2_nack_filter_over_selective_repeat_small_fabric() -> None:
    tor = small_permutation("tor_assist", "sr", mode="nack_filter")
    ideal = small_permutation("rps", "ideal")
    assert tor["spurious_retx_ratio"] <= 0.01
    assert tor["completion_ps"] <= 1.10 * ideal["completion_ps"], (
        tor["completion_ps"],
        ideal["completion_ps"],
    )
    assert tor["lb.nacks_dropped"] > 0  # the RNICs did NACK the reordering; the ToR hid it
