"""The self-checks every run ends with: packet conservation, per-cause drop consistency, byte
conservation per completed flow, no buffer drop on a lossless fabric, and the trim counts when
switches trim."""

from __future__ import annotations

from typing import TYPE_CHECKING

from spraylab.net.drops import BUFFER, DROP_CAUSES
from spraylab.net.port import PfcPort

if TYPE_CHECKING:
    from spraylab.net.network import Network


def packets_in_flight(net: Network) -> int:
    """Packets on wires (pending arrival events), in PFC queues and held by the scheme."""
    on_wires = net.sim.pending_packets()
    in_queues = sum(len(p.data_queue) + len(p.ctrl_queue) for p in net.ports if isinstance(p, PfcPort))
    return on_wires + in_queues + net.lb.held_packets()


def check_conservation(net: Network) -> dict[str, int]:
    """Packet conservation (sent = delivered + dropped + in flight, where dropped is the sum
    of the per-cause counters every drop goes through), per-cause consistency (the network's
    counters are the sums of the flows' and of the ports', every cause: the links table accounts
    for every drop), byte
    conservation per completed flow, and no buffer drop on a lossless fabric (random loss is
    allowed there: PFC does not stop corruption). Raises AssertionError on a violation: never
    a silent number."""
    in_flight = packets_in_flight(net)
    by_cause = net.drops_by_cause
    dropped = sum(by_cause)
    if net.injected_packets != net.consumed_packets + dropped + in_flight:
        raise AssertionError(
            f"packet conservation violated: injected {net.injected_packets} != consumed "
            f"{net.consumed_packets} + dropped {dropped} + in flight {in_flight}"
        )
    for cause, name in enumerate(DROP_CAUSES):
        per_flow = sum(qp.drops_by_cause[cause] for qp in net.qps)
        if per_flow != by_cause[cause]:
            raise AssertionError(f"{name} drops: network counted {by_cause[cause]}, flows {per_flow}")
    for cause, name in enumerate(DROP_CAUSES):
        at_ports = sum(p.drops_by_cause[cause] for p in net.ports)
        if at_ports != by_cause[cause]:
            raise AssertionError(f"{name} drops: network counted {by_cause[cause]}, ports {at_ports}")
    for qp in net.qps:
        rx = qp.rx
        if rx.finish_ps >= 0 and (rx.delivered_bytes != qp.spec.size_bytes or rx.epsn != qp.n_packets):
            raise AssertionError(
                f"byte conservation violated for flow {qp.flow_id}: delivered {rx.delivered_bytes} "
                f"of {qp.spec.size_bytes} bytes"
            )
    if net.switch_params.lossless and by_cause[BUFFER]:
        raise AssertionError(f"lossless fabric dropped {by_cause[BUFFER]} packets for lack of buffer")
    counts = {
        "injected": net.injected_packets,
        "consumed": net.consumed_packets,
        "dropped": dropped,
        "in_flight": in_flight,
    }
    if net.switch_params.trimming:
        counts["trimmed"] = check_trimmed(net)
    return counts


def check_trimmed(net: Network) -> int:
    """Trimming (``switch.trimming``) is not a drop: the trimmed packet goes on as its header,
    so packet conservation above holds with it as it is, and its payload, lost, reaches the
    receiver only in a resent copy (byte conservation above counts delivered payload). Here:
    the network's trim count is the flows' and the ports' sums, and no receiver saw more
    headers than were trimmed for its flow (the others are in flight or were lost after the
    trim, counted as drops). Returns the network's count."""
    trimmed = net.trimmed_packets
    per_flow = sum(qp.trimmed_packets for qp in net.qps)
    at_ports = sum(p.trimmed_packets for p in net.ports)
    if not trimmed == per_flow == at_ports:
        raise AssertionError(
            f"trimmed packets: network counted {trimmed}, flows {per_flow}, ports {at_ports}"
        )
    for qp in net.qps:
        if qp.rx.trimmed_headers > qp.trimmed_packets:
            raise AssertionError(
                f"flow {qp.flow_id}: its receiver got {qp.rx.trimmed_headers} trimmed headers, "
                f"but only {qp.trimmed_packets} of its packets were trimmed"
            )
    return trimmed
