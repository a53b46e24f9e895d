"""Schemes written in Python run on the compiled core (docs/core.md, "Three ways to plug a scheme
in"): the example block of docs/core.md runs as written, the core calls a Python switch selector
exactly once per hop that has a choice to make, and a Python sender-side scheme's entropy reaches
the wire (a flow it moves changes paths; on an idle fabric nothing moves it)."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from spraylab import Scenario, build
from spraylab.lb.base import REGISTRY, load_builtin_schemes

DOC = Path(__file__).resolve().parents[1] / "docs" / "core.md"
FABRIC = {"kind": "leaf_spine", "leaves": 4, "spines": 4, "hosts_per_leaf": 4, "host_rate": "100Gbps"}


@pytest.fixture(scope="module")
def example() -> Iterator[dict[str, Any]]:
    """The doc's block, executed once (it registers both schemes and runs them); the schemes
    are unregistered afterwards, so no other test sees them (the generated references list
    every registered scheme)."""
    (code,) = re.findall(r"^```python\n(.*?)^```", DOC.read_text(), flags=re.S | re.M)
    load_builtin_schemes()  # so the snapshot below holds every built-in scheme
    before = dict(REGISTRY)
    namespace: dict[str, Any] = {}
    exec(compile(code, str(DOC), "exec"), namespace)
    yield namespace
    REGISTRY.clear()
    REGISTRY.update(before)


def scenario(scheme: str, **workload: Any) -> Scenario:
    return Scenario.from_dict(
        {
            "topology": FABRIC,
            "transport": {"recovery": "sr"},
            "lb": {"scheme": scheme},
            "workload": {"kind": "permutation", "size": "1MB", **workload},
            "run": {"progress": False},
        }
    )


def test_the_example_runs_and_completes(example: dict[str, Any]) -> None:
    assert {"two_choices", "ecn_repath"} <= set(REGISTRY)
    assert example["result"].summary["completed"]


def test_python_selector_is_called_once_per_choice(example: dict[str, Any]) -> None:
    """On a leaf-spine a packet has a choice to make only at its source leaf (its uplinks; a
    spine has one port toward each leaf, a leaf one toward each host): the selector runs once
    per packet a leaf sends up, i.e. once per packet its uplinks queued or dropped, and the
    flows between leaves are the ones that need it."""
    sim = build(scenario("two_choices"))
    assert sim.run() == "done"
    net = sim.net
    uplinks = [p for s in net.switches.values() if s.tier == 1 for p in s.uplinks]
    assert net.lb.choices == sum(p.tx_packets + p.drops for p in uplinks) > 0
    # the less backlogged of two random candidates: every uplink is used
    assert all(p.tx_packets > 0 for p in uplinks)


def scenario_with(scheme: dict[str, Any], workload: dict[str, Any]) -> Scenario:
    return Scenario.from_dict(
        {
            "topology": FABRIC,
            "transport": {"recovery": "sr"},
            "lb": scheme,
            "workload": workload,
            "run": {"progress": False},
        }
    )


def test_python_sender_scheme_sees_every_echo_and_sets_the_entropy(example: dict[str, Any]) -> None:
    """With ``marked_acks = 1`` every ECN echo re-paths its flow: the hook sees every ACK (a
    marked data packet is ACKed at once, echoing its mark), so re-paths = ECN marks; a flow it
    moved sends on its new entropy. A single flow on an idle fabric is never marked, never moved."""
    alone = build(
        scenario_with(
            {"scheme": "ecn_repath"}, {"kind": "incast", "senders": 1, "receiver": 15, "size": "1MB"}
        )
    )
    assert alone.run() == "done"
    assert alone.net.lb.repaths == 0 and alone.result().summary["ecn_marks"] == 0
    busy = build(
        scenario_with({"scheme": "ecn_repath", "marked_acks": 1}, {"kind": "permutation", "size": "1MB"})
    )
    assert busy.run() == "done"
    marks = busy.result().summary["ecn_marks"]
    assert busy.net.lb.repaths == marks > 0
    assert any(qp.lb_state[0] != qp.entropy for qp in busy.net.qps)


def test_a_switch_reads_the_header_not_the_endpoints() -> None:
    """Switch-side code reads a packet's header fields: ``flow_id`` (the connection a switch
    keys on) and ``msg_packets`` (the message length an RDMA WRITE's first packet carries in its
    RETH, ceil(size / MTU) packets). A Python selector on every switch records them for each
    packet it sees, data and control alike; they name each packet's own flow."""
    sim = build(scenario("ecmp", size="300KB"))
    seen: list[tuple[int, int, int]] = []
    ecmp = next(iter(sim.net.switches.values())).select

    def recording(switch: Any, pkt: Any, cands: Any) -> Any:
        seen.append((pkt.flow_id, pkt.msg_packets, id(pkt.qp)))
        return ecmp(switch, pkt, cands)

    for switch in sim.net.switches.values():
        switch.select = recording
    assert sim.run() == "done"
    by_flow = {qp.flow_id: qp for qp in sim.net.qps}
    assert seen and {fid for fid, _, _ in seen} == set(by_flow)
    mtu = sim.net.qps[0].mtu
    for flow_id, msg_packets, qp_id in seen:
        qp = by_flow[flow_id]
        assert id(qp) == qp_id
        assert msg_packets == -(-qp.spec.size_bytes // mtu)
