"""The size guard (spraylab.runs.budget): scenarios beyond what the machine holds are refused from
their description, in seconds and bounded memory, with one line naming the estimate, the limit
and the override; normal scenarios pass; the override lets a large one through.

The estimates are checked against closed forms (fat-tree: k^3/4 hosts, 5k^2/4 switches, 3k^3/4
links; Poisson arrivals: load x capacity x duration / mean size) and against what a small run
actually builds and allocates.
"""

from __future__ import annotations

import glob
import json
import math
import os
import subprocess
import sys
import tracemalloc
from pathlib import Path
from typing import Any

import pytest
import tomli_w

from spraylab import Scenario, build, run
from spraylab.model.scenario import ScenarioError
from spraylab.runs.budget import MAX_SWEEP_POINTS, check, check_sweep_points, estimate
from spraylab.sweeps.sweep import Sweep
from spraylab.workload.cdf import FlowSizeCdf

ROOT = Path(__file__).resolve().parents[1]
SMALL = {"leaves": 2, "spines": 2, "hosts_per_leaf": 2}
# A child process may map at most this much: far below any of the refused runs, enough for the
# interpreter with numpy, pandas and pydantic loaded.
CHILD_ADDRESS_SPACE = 2 * 2**30

# The issue's examples: each validates, and would grow by gigabytes if built.
HUGE: dict[str, dict[str, Any]] = {
    "1e9_hosts": {"topology": {"hosts": 10**9}, "workload": {"kind": "permutation"}},
    "fat_tree_k1000": {"topology": {"kind": "fat_tree", "k": 1000}, "workload": {"kind": "permutation"}},
    "1e8_flows": {"topology": SMALL, "workload": {"kind": "random_pairs", "flows": 10**8, "size": "1KB"}},
    "poisson_1000s": {"topology": SMALL, "workload": {"kind": "cdf", "duration": "1000s"}},
    "1000TB_flow": {"topology": SMALL, "workload": {"kind": "permutation", "size": "1000TB"}},
}
# Issue 27: the same guard on the flow-level engines, on [monitor] and on files a scenario names.
HUGE_ELSEWHERE: dict[str, dict[str, Any]] = {
    "1e9_hosts_fluid": {**HUGE["1e9_hosts"], "run": {"engine": "fluid"}},
    "1e8_flows_fluid": {**HUGE["1e8_flows"], "run": {"engine": "fluid"}},
    "1e9_hosts_l0": {**HUGE["1e9_hosts"], "run": {"engine": "l0"}},
    "monitor_1ps": {"topology": SMALL, "workload": {"kind": "permutation"}, "monitor": {"interval": "1ps"}},
    "topo_1e9_nodes": {
        "topology": {"kind": "imported", "file": "big.topo"},
        "workload": {"kind": "permutation"},
    },
    "csv_2e6_rows": {"topology": SMALL, "workload": {"kind": "flows", "file": "big.csv"}},
}
# a two-tier htsim fat-tree of 10^9 hosts: 10^6 ToRs of 1,000 hosts under 2 spines
BIG_TOPO = """Nodes 1000000000
Tiers 2
Tier 0
Downlink_speed_Gbps 100
Uplink_speed_Gbps 100
Radix_Down 1000
Radix_Up 2
Downlink_Latency_ns 1000
Uplink_Latency_ns 1000
Tier 1
Radix_Down 1000000
"""
CSV_ROWS = 2_000_000
SWEEP_1E7 = {
    "topology": SMALL,
    "workload": {"kind": "permutation"},
    "axes": {
        "run.seed": list(range(1, 1001)),
        "workload.size": list(range(1000, 1100)),
        "run.max_events": list(range(100)),
    },
}

# One child process runs every case through the CLI entry point, under an address-space cap
# (one interpreter start instead of six: imports take seconds on a shared machine).
LIMITED_CLI = """
import contextlib, io, json, resource, sys, time
resource.setrlimit(resource.RLIMIT_AS, ({limit}, {limit}))
from spraylab.cli import main
results = {{}}
for name, args in json.loads(sys.argv[1]).items():
    out, err = io.StringIO(), io.StringIO()
    start = time.perf_counter()
    sys.argv = ["spraylab", *args]
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            main()
            code = 0
        except SystemExit as stop:
            code = stop.code
    results[name] = {{"code": code, "out": out.getvalue(), "err": err.getvalue(),
                      "elapsed_s": time.perf_counter() - start}}
print(json.dumps(results))
"""


@pytest.fixture(scope="module")
def refused(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict[str, Any]]:
    directory = tmp_path_factory.mktemp("huge")
    jobs = {}
    (directory / "big.topo").write_text(BIG_TOPO)
    (directory / "big.csv").write_text("src,dst,size\n" + "0,1,1000\n" * CSV_ROWS)
    for name, data in {**HUGE, **HUGE_ELSEWHERE}.items():
        (directory / f"{name}.toml").write_text(tomli_w.dumps(data))
        jobs[name] = ["run", f"{name}.toml"]
    (directory / "sweep_1e7.toml").write_text(tomli_w.dumps(SWEEP_1E7))
    jobs["sweep_1e7_points"] = ["sweep", "sweep_1e7.toml", "--dry-run"]
    # this checkout's code, whatever PYTHONPATH (relative to another directory) or install says
    env = {**os.environ, "OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1", "PYTHONPATH": str(ROOT / "src")}
    proc = subprocess.run(
        [sys.executable, "-c", LIMITED_CLI.format(limit=CHILD_ADDRESS_SPACE), json.dumps(jobs)],
        capture_output=True,
        text=True,
        cwd=directory,
        env=env,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


@pytest.mark.parametrize("name", [*HUGE, *HUGE_ELSEWHERE, "sweep_1e7_points"])
def test_huge_input_is_refused_in_one_line(name: str, refused: dict[str, dict[str, Any]]) -> None:
    """Refused before anything is built: exit 2 with one error line, within seconds, in a child
    whose address space is capped at 2 GB (building any of these would hit MemoryError)."""
    result = refused[name]
    assert "Traceback" not in result["err"] + result["out"], result["err"]
    assert result["code"] == 2, result
    lines = result["err"].strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error:"), lines
    assert not result["out"].strip(), result["out"]
    assert "run.allow_large = true" in lines[0] and "--allow-large" in lines[0], lines[0]
    if name == "sweep_1e7_points":
        assert "10,000,000 points" in lines[0] and f"{MAX_SWEEP_POINTS:,}" in lines[0], lines[0]
    elif name == "csv_2e6_rows":  # refused before a row is parsed (reading it took 54 s)
        assert "workload.file = 'big.csv'" in lines[0] and f"{CSV_ROWS:,} rows exceed" in lines[0], lines[0]
    else:
        assert "scenario too large" in lines[0] and "exceeds the limit" in lines[0], lines[0]
        assert "address-space limit" in lines[0], lines[0]  # the child's 2 GB cap is the limit
    # The estimate is O(sections); building would take minutes (and more than 2 GB).
    assert result["elapsed_s"] < 5, result["elapsed_s"]


def test_estimates_follow_the_closed_forms() -> None:
    """Fat-tree counts (Al-Fares): k^3/4 hosts, k pods of k/2 edge + k/2 aggregation switches plus
    (k/2)^2 cores = 5k^2/4, 3k^3/4 links (two ports each). Poisson arrivals: the expected count is
    load x (hosts x rate) x duration / (8 x mean flow size). A flow of S bytes is ceil(S / MTU) packets."""
    ft = estimate(Scenario.from_dict(HUGE["fat_tree_k1000"]))
    k = 1000
    assert (ft.hosts, ft.switches, ft.ports) == (k**3 // 4, 5 * k * k // 4, 2 * 3 * k**3 // 4)
    assert ft.flows == k**3 // 4

    poisson = estimate(Scenario.from_dict(HUGE["poisson_1000s"]))
    expected = 0.5 * 4 * 400e9 * 1000 / (8 * FlowSizeCdf.load("websearch").mean_bytes())
    assert poisson.flows == math.ceil(expected)

    tb = estimate(Scenario.from_dict(HUGE["1000TB_flow"]))
    assert tb.flows == 4
    assert tb.packets >= 4 * math.ceil(10**15 / 4096)
    assert tb.memory_bytes >= tb.packets  # at least a byte of receiver state per packet

    flows = estimate(Scenario.from_dict(HUGE["1e8_flows"]))
    assert flows.flows == 10**8


@pytest.mark.parametrize(
    "topology, workload",
    [
        (
            {"leaves": 3, "spines": 2, "hosts_per_leaf": 3, "links_per_spine": 2},
            {"kind": "permutation", "size": "10KB"},
        ),
        ({"kind": "fat_tree", "k": 4}, {"kind": "collective", "collective": "allreduce", "size": "64KB"}),
        ({"kind": "fat_tree", "k": 4}, {"kind": "all_to_all", "size": "5000B"}),
        ({"leaves": 2, "spines": 2, "hosts_per_leaf": 4}, {"kind": "incast", "senders": 5, "size": "9000B"}),
        (
            {"kind": "rail", "servers": 2, "gpus_per_server": 2, "spines": 2},
            {"kind": "rail_alltoall", "size": "64KB"},
        ),
    ],
)
def test_estimate_matches_what_build_creates(topology: dict[str, Any], workload: dict[str, Any]) -> None:
    """Hosts, switches and ports are exact; flows exact for fixed patterns (n for a permutation,
    2(n-1)n for a ring all-reduce, n(n-1) for an all-to-all) and an upper bound for rail
    strategies; packets bound the sum of ceil(size / MTU) from above by at most one per flow."""
    sc = Scenario.from_dict({"topology": topology, "workload": workload, "run": {"progress": False}})
    est = estimate(sc)
    sim = build(sc)
    fabric = sim.net.fabric
    assert est.hosts == fabric.n_hosts
    assert est.switches == len(fabric.switch_tier)
    assert est.ports == len(sim.net.ports) == 2 * len(fabric.links)
    qps = sim.net.qps
    packets = sum(qp.n_packets for qp in qps)
    if workload["kind"] == "rail_alltoall":
        assert len(qps) <= est.flows and packets <= est.packets
    else:
        assert est.flows == len(qps)
        assert packets <= est.packets <= packets + len(qps)


def test_poisson_estimate_is_the_expected_count() -> None:
    """The generated count of a Poisson process is within 5 standard deviations (sqrt of the
    mean) of the estimate."""
    sc = Scenario.from_dict(
        {
            "topology": SMALL,
            "workload": {"kind": "cdf", "duration": "2ms", "load": 0.3},
            "run": {"progress": False},
        }
    )
    est = estimate(sc)
    generated = len(build(sc).net.qps)
    assert abs(generated - est.flows) <= 5 * math.sqrt(est.flows), (generated, est.flows)


@pytest.mark.parametrize(
    "data",
    [
        {"topology": {"kind": "fat_tree", "k": 4}, "workload": {"kind": "permutation", "size": "256KB"}},
        {
            "topology": {"leaves": 2, "spines": 2, "hosts_per_leaf": 4},
            "workload": {"kind": "random_pairs", "flows": 1000, "size": "1KB"},
        },
    ],
)
def test_memory_estimate_is_the_measured_order(data: dict[str, Any]) -> None:
    """The per-object costs in spraylab.runs.budget were measured once with tracemalloc; the estimate
    of another small run stays within a factor 2 of the peak tracemalloc sees while it runs."""
    sc = Scenario.from_dict({**data, "run": {"progress": False}})
    tracemalloc.start()
    try:
        run(sc)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak / 2 <= estimate(sc).memory_bytes <= 2 * peak, (estimate(sc).memory_bytes, peak)


def test_shipped_scenarios_and_sweeps_pass_the_guard() -> None:
    """Every scenario, sweep, benchmark and preset the project ships runs here without an override."""
    files = sorted(
        glob.glob(str(ROOT / "scenarios" / "**" / "*.toml"), recursive=True)
        + glob.glob(str(ROOT / "benchmarks" / "*.toml"))
        + glob.glob(str(ROOT / "src" / "spraylab" / "presets" / "*.toml"))
    )
    assert len(files) > 10
    for path in files:
        if f"{os.sep}sweeps{os.sep}" in path:
            assert Sweep.load(path).points, path  # each point is checked while planning
        else:
            check(Scenario.load(path))


def test_the_override_passes_the_guard(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """run.allow_large in the scenario, allow_large in the API and --allow-large on the CLI all
    let a scenario beyond the limit through the guard (nothing huge is run here)."""
    huge = Scenario.from_dict(HUGE["1000TB_flow"])
    with pytest.raises(ScenarioError):
        check(huge)
    assert check(huge, allow_large=True).packets > 10**11
    allowed = huge.with_overrides({"run.allow_large": True})
    assert check(allowed) == estimate(huge)
    assert "allow_large" not in huge.to_dict()["run"]  # default left out: store keys stay as they were

    from spraylab import cli
    from spraylab.runs import watched

    seen: list[Scenario] = []
    monkeypatch.setattr(
        watched, "run_watched", lambda scenario, label="": seen.append(scenario) or _Stop.fire()
    )
    path = tmp_path / "huge.toml"
    path.write_text(tomli_w.dumps(HUGE["1000TB_flow"]))
    monkeypatch.setattr(sys, "argv", ["spraylab", "run", str(path), "--allow-large"])
    with pytest.raises(_Stop):
        cli.main()
    assert seen and seen[0].run.allow_large
    check(seen[0])

    with pytest.raises(ScenarioError, match="points"):
        check_sweep_points(MAX_SWEEP_POINTS + 1)
    check_sweep_points(MAX_SWEEP_POINTS + 1, allow_large=True)


def test_sweep_override_keeps_store_keys(tmp_path: Path) -> None:
    """--allow-large lets a sweep point beyond the guard through planning, and does not change the
    points' store keys (it does not change results)."""
    data = {
        "topology": SMALL,
        "workload": {"kind": "random_pairs", "size": "1KB"},
        "axes": {"workload.flows": [10, 10**9]},
    }
    with pytest.raises(ScenarioError, match="workload.flows=1000000000"):
        Sweep.from_dict(data)
    allowed = Sweep.from_dict(data, allow_large=True)
    small = Sweep.from_dict({**data, "axes": {"workload.flows": [10]}})
    assert allowed.points[0].key == small.points[0].key
    assert "allow_large" not in allowed.points[1].scenario.to_dict()["run"]


class _Stop(Exception):
    @staticmethod
    def fire() -> None:
        raise _Stop


def test_an_htsim_topology_is_counted_before_it_is_built() -> None:
    """The plan of an htsim fat-tree has the counts of the fabric it builds (k = 4 three-tier:
    16 hosts, 20 switches, 48 links), and the 10^9-host one the closed form: N hosts, N / 1000
    ToRs plus 2 spines, N host links plus 2 uplinks per ToR."""
    from test_formats import K4_TOPO

    from spraylab.formats import htsim

    plan = htsim.plan_fabric(htsim.parse_topo(K4_TOPO, "k4.topo"))
    built = plan.build()
    assert (
        (plan.n_hosts, plan.n_switches, plan.n_links)
        == (
            built.n_hosts,
            len(built.switch_tier),
            len(built.links),
        )
        == (16, 20, 48)
    )
    big = htsim.plan_fabric(htsim.parse_topo(BIG_TOPO, "big.topo"))
    n = 10**9
    assert (big.n_hosts, big.n_switches, big.n_links) == (n, n // 1000 + 2, n + 2 * (n // 1000))


def test_flow_file_row_limit_and_its_override(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A flow file beyond the row limit is refused unless run.allow_large (in the scenario, the
    API or --allow-large) lets it be read; within the limit it is read."""
    from spraylab import cli
    from spraylab.model import files
    from spraylab.model.scenario import validate
    from spraylab.runs import watched

    monkeypatch.setattr(files, "MAX_FILE_ROWS", 2)
    path = tmp_path / "three.csv"
    path.write_text("src,dst,size\n0,1,1KB\n1,2,1KB\n2,3,1KB\n")
    data = {"topology": SMALL, "workload": {"kind": "flows", "file": str(path)}}
    with pytest.raises(ScenarioError, match="3 rows exceed the limit of 2 rows"):
        validate(data)
    assert len(validate(data, allow_large=True).workload[0].flow_rows) == 3
    assert validate({**data, "run": {"allow_large": True}}).run.allow_large
    (tmp_path / "s.toml").write_text(tomli_w.dumps(data))
    seen: list[Scenario] = []
    monkeypatch.setattr(
        watched, "run_watched", lambda scenario, label="": seen.append(scenario) or _Stop.fire()
    )
    monkeypatch.setattr(sys, "argv", ["spraylab", "run", str(tmp_path / "s.toml"), "--allow-large"])
    with pytest.raises(_Stop):
        cli.main()
    assert len(seen[0].workload[0].flow_rows) == 3
    monkeypatch.setattr(files, "MAX_FILE_ROWS", 3)
    assert len(validate(data).workload[0].flow_rows) == 3


@pytest.mark.parametrize("engine", ["fluid", "l0"])
def test_flow_level_engines_are_estimated_without_packets(engine: str) -> None:
    """A flow-level run's estimate has the fabric's counts and the flows, no events, and its
    memory grows with the flows alone (1.5 KB each, measured): 10^8 flows are refused by memory,
    a 1000 TB flow (refused by packets under the packet engine) is not refused."""
    huge_flows = Scenario.from_dict({**HUGE["1e8_flows"], "run": {"engine": engine}})
    est = estimate(huge_flows)
    assert est.flows == 10**8 and est.events == 0
    with pytest.raises(ScenarioError, match="scenario too large"):
        check(huge_flows)
    big_flow = Scenario.from_dict({**HUGE["1000TB_flow"], "run": {"engine": engine}})
    assert check(big_flow).memory_bytes < 10**8
