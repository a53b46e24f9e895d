"""PFC across a failed link.

Theory each test checks: nothing crosses a link that is down, PFC PAUSE/RESUME frames
included (IEEE 802.1Qbb frames are MAC control frames on that very link); and a port whose
link goes down flushes its queue and has no PFC state left (its peer is gone: no PAUSE is in
force, no RESUME can come). So after a failure

* the failed ports receive no PAUSE and spend no more time paused;
* nothing stays buffered for them: the ingress bytes of every switch equal what it really
  still buffers, and no port upstream is held paused by a queue that can never drain;
* no deadlock: every flow that still has a path (here every flow: the other spine survives)
  finishes, and packet conservation holds (``check_conservation``, run by ``run_flows``).
"""

from __future__ import annotations

from simutil import US, G, run_flows
from test_pfc_release import assert_accounting_exact

from spraylab.engine.simulator import Simulator
from spraylab.lb.base import make_lb
from spraylab.net.drops import LINK_DOWN
from spraylab.net.network import Network, SwitchParams
from spraylab.net.port import IngressCounter, PfcPort
from spraylab.topology.leaf_spine import leaf_spine
from spraylab.transport.params import TransportParams
from spraylab.workload.flows import FlowSpec

XOFF_BYTES = 60_000
XON_BYTES = 30_000


def incast_net(link_delay_us: int) -> tuple[Simulator, Network, list[FlowSpec]]:
    """2 leaves x 2 spines x 4 hosts, lossless, sprayed: seven hosts send 2 MB to h4 (on leaf1),
    so leaf1 pauses the spines' downlinks and the pauses spread back to leaf0."""
    fabric = leaf_spine(2, 2, 4, 100 * G, 100 * G, link_delay_us * US)
    sim = Simulator(1)
    switch = SwitchParams(lossless=True, pfc_xoff_bytes=XOFF_BYTES, pfc_xon_bytes=XON_BYTES)
    net = Network(sim, fabric, switch, TransportParams(recovery="sr"), make_lb("rps", None))
    flows = [FlowSpec(i, h, 4, 2_000_000) for i, h in enumerate([0, 1, 2, 3, 5, 6, 7])]
    return sim, net, flows


def failed_port_and_counter(net: Network) -> tuple[PfcPort, IngressCounter]:
    port = net.link_ports[("spine0", "leaf1")][0]
    assert isinstance(port, PfcPort)
    counter = next(c for c in net.ingress_counters if c.upstream is port)
    return port, counter


def test_a_pause_sent_toward_a_down_link_never_arrives() -> None:
    # 10 us links: when spine0-leaf1 dies at 30 us, 125 KB are still on its wire; they reach
    # leaf1 and push its ingress counter past XOFF, so leaf1 sends a PAUSE into the dead link.
    sim, net, flows = incast_net(link_delay_us=10)
    port, counter = failed_port_and_counter(net)
    net.schedule_link_down(30 * US, "leaf1", "spine0", convergence_ps=10 * US)
    net.add_flows(flows)
    sim.run(until_ps=30 * US + 1)
    assert not port.up and counter.pauses_sent == 0 and port.pauses_received == 0
    assert sim.run(until_ps=100_000 * US) == "done"
    net.check_conservation()
    assert counter.pauses_sent == 1  # sent after the failure ...
    assert port.pauses_received == 0 and port.paused_ps == 0  # ... and lost with the link
    assert all(qp.rx.finish_ps >= 0 for qp in net.qps)


def test_a_paused_port_whose_link_fails_flushes_and_nothing_deadlocks() -> None:
    # 1 us links: at 20 us spine0's downlink to leaf1 is paused with a queue, and leaf0's uplink
    # to spine0 is paused behind it. Then spine0-leaf1 dies (routing converges 10 us later).
    sim, net, flows = incast_net(link_delay_us=1)
    port, counter = failed_port_and_counter(net)
    upstream = net.link_ports[("leaf0", "spine0")][0]
    fail_ps = 20 * US
    net.schedule_link_down(fail_ps, "leaf1", "spine0", convergence_ps=10 * US)
    net.add_flows(flows)
    sim.run(until_ps=fail_ps - 1)
    # the case that matters: a paused queue behind the link, and PFC pressure upstream of it
    queued_packets = len(port.data_queue)
    assert port.paused and queued_packets > 0 and counter.pausing
    assert isinstance(upstream, PfcPort) and upstream.paused
    sim.run(until_ps=fail_ps + 1)
    # flushed at once, each packet a link-down drop, and no PFC state left on the dead port
    assert not port.paused and port.queued_bytes == 0 and not port.data_queue
    assert port.drops_by_cause[LINK_DOWN] >= queued_packets
    pauses, paused_ps = port.pauses_received, port.paused_ps
    assert_accounting_exact(net)  # the flushed packets left their ingress counters
    assert run_flows(sim, net, [], until_ps=100_000 * US) == "done"
    # no deadlock: every flow has a path through spine1 and finishes
    assert all(qp.rx.finish_ps >= 0 for qp in net.qps)
    # nothing reached the dead port after the failure (its counter's RESUME was lost too)
    assert (port.pauses_received, port.paused_ps) == (pauses, paused_ps) and not counter.pausing
    assert_accounting_exact(net)
    assert all(c.bytes == 0 for c in net.ingress_counters)
    assert not any(p.paused for p in net.ports if isinstance(p, PfcPort))
