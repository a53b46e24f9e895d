"""A finished run's memory is given back (docs/performance.md, Memory).

The calendar's pending events are C++ values holding references the cyclic collector cannot
see (``core/calendar.h``). By reference counting, an object stays alive while any reference to
it does; so a timer still pending when the run ends keeps its queue pair, and through it the
network and the simulator, alive for the rest of the process unless the simulator drops it
(``Simulator.discard_pending``)."""

from __future__ import annotations

import gc
import sys
import weakref
from pathlib import Path
from typing import Any

import pytest
from cliutil import invoke
from simutil import make_net, small_leaf_spine

import spraylab
from spraylab.engine.simulator import Simulator
from spraylab.model.scenario import validate
from spraylab.net.network import Network
from spraylab.net.packet import Packet
from spraylab.runs.experiment import build
from spraylab.runs.memory import release_freed_memory
from spraylab.workload.flows import FlowSpec

SCENARIO: dict[str, Any] = {
    "topology": {"kind": "leaf_spine", "leaves": 2, "spines": 2, "hosts_per_leaf": 2, "host_rate": "100Gbps"},
    "workload": {"kind": "permutation", "size": "20KB"},
}


def _live_networks() -> int:
    gc.collect()
    return sum(isinstance(o, Network) for o in gc.get_objects())


def test_discard_pending_releases_each_reference() -> None:
    """Each scheduled event holds one reference to its callable and one to its argument;
    discarding gives both back and leaves nothing pending."""
    sim = Simulator(1)
    fn, arg = (lambda _: None), object()
    before = sys.getrefcount(fn), sys.getrefcount(arg)
    sim.at(5, fn, arg)
    sim.at(1 << 40, fn, arg)  # a far-future bucket as well as a near one
    assert (sys.getrefcount(fn), sys.getrefcount(arg)) == (before[0] + 2, before[1] + 2)
    sim.discard_pending()
    assert (sys.getrefcount(fn), sys.getrefcount(arg)) == before
    assert sim.pending() == []
    assert sim.run() == "idle"  # an empty calendar runs to idle


def test_pending_timers_keep_the_network_until_discarded() -> None:
    """The premise: a finished run leaves timers pending, and they keep the network alive
    through a collection; once discarded, nothing else holds it."""
    simulation = build(validate(SCENARIO))
    simulation.run()
    simulation.result()
    assert simulation.sim.pending(), "the run should end with timers pending (else nothing is tested)"
    net = weakref.ref(simulation.net)
    sim = simulation.sim
    del simulation
    gc.collect()
    assert net() is not None
    sim.discard_pending()
    del sim
    gc.collect()
    assert net() is None


def test_run_leaves_no_network_behind() -> None:
    """``spraylab.run`` returns the result only: after a collection no network is left."""
    before = _live_networks()
    result = spraylab.run(SCENARIO)
    assert result.summary["flows"] > 0
    release_freed_memory()
    assert _live_networks() == before


def test_a_packet_is_128_bytes() -> None:
    """A deep-queued run holds about 100,000 packets at once (1024 hosts; 870,000 at 8192):
    with 32-bit fields where its values are, a packet is 128 bytes, 144 with the collector's
    header (176 and 192 with every field 64-bit; docs/performance.md, Memory)."""
    assert Packet.__basicsize__ == 128


@pytest.mark.parametrize("flow_id, size_bytes", [(0, 2**31 * 9000), (2**31, 1000)])
def test_a_flow_beyond_the_packet_fields_is_refused(flow_id: int, size_bytes: int) -> None:
    """A packet carries its PSN, message length and flow id in 32 bits, so a queue pair refuses
    a flow that would not fit instead of wrapping them."""
    _, net = make_net(small_leaf_spine(leaves=2, spines=1, hosts_per_leaf=1))
    with pytest.raises(ValueError, match=r"at most 2\*\*31 - 1"):
        net.add_flows([FlowSpec(flow_id, 0, 1, size_bytes)])


@pytest.mark.parametrize(("scenario", "returncode"), [("no_such_scenario", 2), ("demo", 0)])
def test_run_commands_leave_the_collector_on(scenario: str, returncode: int, tmp_path: Path) -> None:
    """``spraylab run`` keeps the collector off while it imports and loads, and must turn it back
    on when the run starts, or when the command ends before it (bad input)."""
    small = [
        "--set",
        "topology.leaves=2",
        "--set",
        "topology.hosts_per_leaf=2",
        "--set",
        "workload.size=20KB",
    ]
    assert gc.isenabled()
    assert invoke("run", scenario, *small, cwd=tmp_path).returncode == returncode
    assert gc.isenabled()
