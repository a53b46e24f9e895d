"""The README's examples work as written: its Python blocks run (in order, in one namespace, as a
reader pastes them), its scenario block validates and passes the size guard, its sweep block
plans. An example that raises (the old ``sim.run(until_ps=...)``) fails here first."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import pytest

from spraylab import Scenario
from spraylab.runs.budget import check
from spraylab.sweeps.sweep import Sweep

README = Path(__file__).resolve().parents[1] / "README.md"


def blocks(language: str) -> list[str]:
    return re.findall(rf"^```{language}\n(.*?)^```", README.read_text(), flags=re.S | re.M)


def test_python_blocks_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Every Python block runs without error; the step-wise one really stops at until_ps (the
    simulated clock reads exactly that time) and then finishes the workload."""
    monkeypatch.chdir(tmp_path)  # the first block saves a result under out/
    code = blocks("python")
    assert len(code) >= 2
    namespace: dict[str, object] = {}
    for block in code:
        exec(compile(block, str(README), "exec"), namespace)
    sim = namespace["sim"]
    assert (tmp_path / "out" / "my-run").is_dir()
    summary = sim.result().summary  # type: ignore[attr-defined]
    assert summary["completed"] and summary["stop_reason"] == "done"


def test_stepwise_run_stops_at_until_ps() -> None:
    """Simulation.run(until_ps=T) leaves the clock at T with the workload unfinished, and a
    second run() continues to the same end as one uninterrupted run (determinism)."""
    from spraylab import build, run

    scenario = Scenario.from_dict(
        {
            "topology": {"leaves": 2, "spines": 2, "hosts_per_leaf": 2},
            "workload": {"kind": "permutation", "size": "1MB"},
            "run": {"progress": False},
        }
    )
    sim = build(scenario)
    assert sim.run(until_ps=5_000_000) == "time_limit"
    assert sim.sim.now == 5_000_000 and not sim.net.all_done
    sim.run()
    stepped = sim.result().summary
    whole = run(scenario).summary
    for key in ("events", "completion_ps", "fct_mean_ps"):
        assert stepped[key] == whole[key], key


def test_scenario_block_validates() -> None:
    toml = [b for b in blocks("toml") if "[topology]" in b and "[axes]" not in b]
    assert toml
    for block in toml:
        check(Scenario.from_dict(tomllib.loads(block)))


def test_sweep_block_plans() -> None:
    toml = [b for b in blocks("toml") if "[axes]" in b]
    assert toml
    for block in toml:
        sweep = Sweep.from_dict(tomllib.loads(block))
        assert len(sweep.points) == 2 * 2 * 3  # schemes x sizes x seeds


def test_with_overrides_switches_scheme_over_scheme_parameters() -> None:
    """The README derives variants with with_overrides({"lb.scheme": ...}); from a base that sets
    parameters of another scheme, the new scheme keeps only those it accepts (as sweep axes do)."""
    base = Scenario.from_dict(
        {
            "topology": {"leaves": 2, "spines": 2, "hosts_per_leaf": 2},
            "lb": {"scheme": "dfs", "reorder_bound_packets": 64, "max_paths": 4},
            "workload": {"kind": "permutation"},
        }
    )
    assert base.with_overrides({"lb.scheme": "ecmp"}).lb.params == {}
    assert base.with_overrides({"lb.scheme": "spray_rr"}).lb.params == {}
    kept = base.with_overrides({"lb.scheme": "dfs", "lb.max_paths": 2})
    assert kept.lb.params == {"reorder_bound_packets": 64, "max_paths": 2}
    whole = base.with_overrides({"lb": {"scheme": "rps"}})
    assert whole.lb.scheme == "rps" and whole.lb.params == {}
