"""Registries: a topology and a workload defined in one place (here, this test module) become
usable by name in a scenario, appear in ``spraylab list`` and in the error hints, with nothing
else changed; and the switch/transport sections take every default from the simulator's
Params dataclasses.

Theory for the run: a lone flow on an idle star (one switch) is the store-and-forward pipeline
of two equal-rate links: FCT = 2 x (link delay + first packet's serialization) + the
serialization of every later packet (docs/design.md, "Metrics and results").
"""

from __future__ import annotations

import dataclasses
import sys
from collections.abc import Iterator
from typing import Literal

import pytest
from pydantic import Field

import spraylab
from spraylab import cli
from spraylab.model.scenario import DcqcnSection, ScenarioError, SwitchSection, TransportSection, validate
from spraylab.model.types import PositiveBytes, RateBps, TimePs
from spraylab.net.framing import data_wire_bytes
from spraylab.net.network import SwitchParams
from spraylab.runs.budget import estimate
from spraylab.topology.base import TOPOLOGIES, FabricSize, LinkEvent, TopologySection
from spraylab.topology.base import register as register_topology
from spraylab.topology.fabric import Fabric
from spraylab.transport.cc.base import cc_sections
from spraylab.transport.params import DcqcnParams, TransportParams
from spraylab.workload.base import WORKLOADS, FlowContext, Flows, WorkloadSection, WorkloadSize, one_group
from spraylab.workload.base import register as register_workload
from spraylab.workload.flows import FlowSpec

# --- one new topology and one new workload, each complete in one class ---------------------------


class StarTopology(TopologySection):
    summary = "one switch with every host on it (a test kind)"

    kind: Literal["star"] = "star"
    hosts: int = Field(default=4, ge=2)
    rate: RateBps = 100_000_000_000
    link_delay: TimePs = 1_000_000
    events: list[LinkEvent] = []

    def n_hosts(self) -> int:
        return self.hosts

    def build_fabric(self) -> Fabric:
        fabric = Fabric(kind="star", host_rate_bps=self.rate)
        fabric.add_switch("sw0", 1)
        for h in range(self.hosts):
            fabric.add_host(f"h{h}", "sw0")
            fabric.add_link(f"h{h}", "sw0", self.rate, self.link_delay)
        return fabric

    def estimate_size(self) -> FabricSize:
        return FabricSize(self.hosts, 1, self.hosts, self.rate, 2)


class PingWorkload(WorkloadSection):
    summary = "one message from host `src` to host `dst` (a test kind)"

    kind: Literal["ping"] = "ping"
    src: int = Field(default=0, ge=0)
    dst: int = Field(default=1, ge=0)
    size: PositiveBytes = 40_960
    start: TimePs = 0

    def check_fabric(self, topology: TopologySection, n_hosts: int, where: str) -> None:
        if self.dst >= n_hosts:
            raise ValueError(f"{where}.dst = {self.dst}: must be a host id below {n_hosts}")
        if self.dst == self.src:
            raise ValueError(f"{where}.dst = {self.dst}: must differ from src")

    def build_flows(self, ctx: FlowContext) -> Flows:
        flow = FlowSpec(ctx.first_flow_id, self.src, self.dst, self.size, self.start)
        return one_group(ctx, [flow], "ping", self.size, 2)

    def estimate_size(self, n_hosts: int, host_rate_bps: int) -> WorkloadSize:
        return WorkloadSize(1, self.size)


@pytest.fixture
def registered() -> Iterator[None]:
    """Register the two kinds as their modules would on import, and remove them afterwards."""
    register_topology(StarTopology)
    register_workload(PingWorkload)
    try:
        yield
    finally:
        del TOPOLOGIES.models["star"]
        del WORKLOADS.models["ping"]


def star_scenario(**ping: object) -> dict[str, object]:
    return {
        "topology": {"kind": "star", "hosts": 4},
        "workload": {"kind": "ping", **ping},
        "run": {"progress": False},
    }


def test_a_registered_topology_and_workload_run_by_name(registered: None) -> None:
    scenario = validate(star_scenario(src=2, dst=3, size="40960B"))
    assert isinstance(scenario.topology, StarTopology)
    assert isinstance(scenario.workload[0], PingWorkload)
    assert scenario.to_dict()["topology"] == {
        "kind": "star",
        "hosts": 4,
        "rate": 100_000_000_000,
        "link_delay": 1_000_000,
        "events": [],
    }
    # The dumped scenario is a valid scenario again (the store and sweeps rely on it).
    assert validate(scenario.to_dict()) == scenario
    result = spraylab.run(scenario)
    flows = result.flows
    assert len(flows) == 1 and bool(flows["completed"].all())
    assert (int(flows["src"][0]), int(flows["dst"][0])) == (2, 3)
    # Store-and-forward over two 100 Gb/s links (80 ps per byte), ten full packets.
    packet_ps = data_wire_bytes(4096) * 80
    assert int(flows["fct_ps"][0]) == 2 * (1_000_000 + packet_ps) + 9 * packet_ps
    # The size guard reads the kinds' own estimates.
    est = estimate(scenario)
    assert (est.hosts, est.switches, est.ports, est.flows) == (4, 1, 8, 1)


def test_registered_kinds_appear_in_spraylab_list(
    registered: None, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(sys, "argv", ["spraylab", "list"])
    monkeypatch.setattr(cli.console, "width", 200)
    with pytest.raises(SystemExit) as stop:
        cli.main()
    assert stop.value.code == 0
    out = capsys.readouterr().out
    lines = out.splitlines()
    star = next(line for line in lines if " star " in line)
    assert StarTopology.summary in star and "hosts, rate, link_delay, events" in star
    ping = next(line for line in lines if " ping " in line)
    assert PingWorkload.summary in ping and "src, dst, size, start" in ping
    # Every other registry is listed with a summary line too.
    for name in ("rail_matched", "rails", "gbn", "sr", "ideal", "dcqcn", "ecmp"):
        assert any(f" {name} " in line for line in lines), name


def error_line(data: dict[str, object]) -> str:
    with pytest.raises(ScenarioError) as exc:
        validate(data)
    assert len(exc.value.lines) == 1, exc.value.lines
    return exc.value.lines[0]


def test_registered_kinds_in_error_hints(registered: None) -> None:
    line = error_line({**star_scenario(), "topology": {"kind": "torus"}})
    assert line.startswith("topology.kind = 'torus': unknown kind; allowed: ")
    assert "'star'" in line and "'leaf_spine'" in line
    line = error_line({**star_scenario(), "workload": {"kind": "pong"}})
    assert line.startswith("workload.kind = 'pong': unknown kind; allowed: ") and "'ping'" in line
    line = error_line({**star_scenario(), "workload": {"size": "1MB"}})
    assert line.startswith("workload: missing 'kind'; allowed: ") and "'ping'" in line
    # An unknown key lists the keys of the kind given, not of another kind.
    line = error_line({**star_scenario(), "topology": {"kind": "star", "leaves": 2}})
    assert line == "topology.leaves = 2: unknown key; allowed keys: kind, hosts, rate, link_delay, events"
    line = error_line(star_scenario(ttl=3))
    assert line == "workload.ttl = 3: unknown key; allowed keys: kind, src, dst, size, start"
    # A field of the new kind and its own fabric check, located at their keys.
    assert error_line(star_scenario(size="lots")).startswith("workload.size = 'lots': ")
    assert error_line(star_scenario(dst=9)) == "workload.dst = 9: must be a host id below 4"
    # A topology kind the workload's check does not know about still runs the built-in checks.
    line = error_line({**star_scenario(), "workload": {"kind": "moe"}})
    assert "topology.kind = 'rail'" in line and "got topology.kind = 'star'" in line


def test_kinds_are_gone_after_unregistering() -> None:
    """The fixture's cleanup works, so no other test sees the test kinds."""
    assert "star" not in TOPOLOGIES.kinds() and "ping" not in WORKLOADS.kinds()
    assert "'star'" not in error_line({"topology": {"kind": "torus"}, "workload": {"kind": "permutation"}})


def test_register_rejects_a_class_without_a_kind() -> None:
    class Nameless(TopologySection):
        leaves: int = 2

    with pytest.raises(TypeError, match="needs kind"):
        register_topology(Nameless)
    with pytest.raises(TypeError, match="is not a WorkloadSection"):
        register_workload(StarTopology)  # type: ignore[arg-type]


# --- one source per default ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("section", "params"),
    [
        (SwitchSection, SwitchParams),
        (TransportSection.registered_model(), TransportParams),
        (DcqcnSection, DcqcnParams),
    ],
)
def test_default_sections_are_the_default_params(section: type, params: type) -> None:
    """A default section converts to the default Params, and every Params field is filled by
    exactly one key, so no default is written twice and no key is dropped on the way."""
    assert section().to_params() == params()
    linked = [
        info.json_schema_extra["param"] for info in section.model_fields.values() if info.json_schema_extra
    ]
    nested = [key for key, info in section.model_fields.items() if not info.json_schema_extra]
    if params is TransportParams:  # the congestion controls' own sections, gathered in cc_params
        assert nested == list(cc_sections())
        nested = ["cc_params"]
    assert sorted(linked + nested) == sorted(f.name for f in dataclasses.fields(params))


def test_every_key_reaches_its_params_field() -> None:
    """A non-default value of every key arrives in the Params (name and unit conversion)."""
    scenario = validate(
        {
            "switch": {"buffer": "32MB", "ecn_mark_at": "enqueue", "pfc_xoff": "100KB", "pfc_xon": "50KB"},
            "transport": {
                "recovery": "sr",
                "cc": "none",
                "mtu": "1KB",
                "ooo_bitmap": 64,
                "rto": "2ms",
                "ack_every": 2,
                "ack_delay": "3us",
                "dcqcn": {"alpha_timer": "2us", "min_rate": "1Gbps", "g": 0.25},
            },
            "workload": {"kind": "permutation"},
        }
    )
    switch = scenario.switch.to_params()
    assert (switch.buffer_bytes, switch.ecn_mark_at) == (32_000_000, "enqueue")
    assert (switch.pfc_xoff_bytes, switch.pfc_xon_bytes) == (100_000, 50_000)
    t = scenario.transport.to_params()
    assert (t.recovery, t.cc, t.mtu_bytes, t.ooo_bitmap_packets) == ("sr", "none", 1000, 64)
    assert (t.rto_ps, t.ack_every, t.ack_delay_ps) == (2_000_000_000, 2, 3_000_000)
    assert (t.dcqcn.alpha_timer_ps, t.dcqcn.min_rate_bps, t.dcqcn.g) == (2_000_000, 1_000_000_000, 0.25)
    assert t.dcqcn.byte_counter_bytes == DcqcnParams().byte_counter_bytes
