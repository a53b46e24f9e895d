"""RoCEv2 framing on the wire (``spraylab.net.framing``): each packet type's link bytes follow
from its header fields, and a single line-rate flow's goodput and FCT follow from those sizes.

Theory: a data packet is Ethernet 14 + IPv4 20 + UDP 8 + BTH 12 + payload + ICRC 4 + FCS 4,
plus preamble/SFD 8 and inter-frame gap 12 = payload + 82 B of link time; an ACK/NACK adds
AETH 4 to the headers (66 B frame, above the 64 B minimum: 86 B); a CNP carries 16 reserved
bytes after its BTH (78 B frame: 98 B). A flow alone on an idle path of equal-rate links
streams its packets back to back, so the last byte arrives after the first packet's
store-and-forward over every hop plus the rest at line rate, and the receiver's goodput is
line rate x payload / (payload + 82).
"""

from __future__ import annotations

import pytest
from simutil import US, make_net, run_flows, small_leaf_spine

from spraylab.engine.simulator import Simulator
from spraylab.net import framing
from spraylab.net.framing import (
    ACK_WIRE_BYTES,
    CNP_WIRE_BYTES,
    DATA_OVERHEAD_BYTES,
    NACK_WIRE_BYTES,
    data_wire_bytes,
)
from spraylab.net.packet import DATA, Packet
from spraylab.net.port import Port
from spraylab.workload.flows import FlowSpec

LINE_BPS = 400 * 10**9
PS_PER_BYTE = 20  # 400 Gb/s
HOPS = 4  # host - leaf - spine - leaf - host
MTU = 4096


def test_wire_sizes_from_the_header_fields() -> None:
    # Field sizes as the standards give them (802.3, RFC 791/768, IBTA Annex A17).
    assert (framing.ETHERNET_HEADER_BYTES, framing.IPV4_HEADER_BYTES, framing.UDP_HEADER_BYTES) == (14, 20, 8)
    assert (framing.BTH_BYTES, framing.AETH_BYTES, framing.ICRC_BYTES, framing.FCS_BYTES) == (12, 4, 4, 4)
    assert framing.PHY_OVERHEAD_BYTES == 8 + 12
    assert DATA_OVERHEAD_BYTES == 14 + 20 + 8 + 12 + 4 + 4 + 20 == 82
    assert data_wire_bytes(MTU) == MTU + 82
    assert ACK_WIRE_BYTES == NACK_WIRE_BYTES == (14 + 20 + 8 + 12 + 4 + 4 + 4) + 20 == 86
    assert CNP_WIRE_BYTES == (14 + 20 + 8 + 12 + 16 + 4 + 4) + 20 == 98


@pytest.mark.parametrize("payload", [0, 1, 2, 3, 100])
def test_short_frames_are_padded_to_the_ethernet_minimum(payload: int) -> None:
    # 62 B of headers and trailers: a frame below 64 B (payload < 2) is padded to 64.
    frame = 62 + payload
    assert data_wire_bytes(payload) == max(frame, 64) + 20


def one_flow(size: int, **transport: object):
    fabric = small_leaf_spine(leaves=2, spines=2, hosts_per_leaf=1)
    sim, net = make_net(fabric, cc="none", **transport)
    assert run_flows(sim, net, [FlowSpec(0, 0, 1, size)]) == "done"
    return net, net.qps[0]


def test_single_line_rate_flow_goodput_and_fct_follow_the_framing() -> None:
    """FCT = HOPS x (propagation + first packet's serialization) + the remaining wire bytes at
    line rate, exactly; the streaming part delivers line rate x 4096 / 4178 of payload."""
    n = 2000
    size = n * MTU
    net, qp = one_flow(size)
    wire = data_wire_bytes(MTU)
    fct = qp.rx.finish_ps - qp.start_ps
    expected = HOPS * (1 * US + wire * PS_PER_BYTE) + (n - 1) * wire * PS_PER_BYTE
    assert fct == expected
    # Goodput of the stream behind the first packet (the store-and-forward latency removed).
    streaming_ps = fct - HOPS * 1 * US - (HOPS - 1) * wire * PS_PER_BYTE
    goodput = size * 8 * 10**12 / streaming_ps
    assert goodput == pytest.approx(LINE_BPS * MTU / (MTU + 82), rel=1e-9)
    assert goodput < 0.999 * LINE_BPS * MTU / (MTU + 64)  # the old 64 B overhead is ruled out
    # The NIC's port carried exactly n data packets.
    port = net.hosts[0].route[1].port
    assert port.tx_bytes == n * wire and port.tx_packets == n


def test_ack_frames_are_their_computed_size_on_the_wire() -> None:
    """The reverse direction carries ACKs only (the destination sends no data): every port on
    it counts n_acks x 86 B, at every hop."""
    size = 300 * MTU + 1000
    net, qp = one_flow(size)
    acks = qp.rx.acks_sent
    assert acks == qp.n_packets and qp.rx.nacks_sent == qp.rx.cnps_sent == 0
    used = [p for p in net.ports if p.tx_packets]
    back = [p for p in used if p.tx_bytes < size]  # the ACK direction, not the data one
    assert len(back) == len(used) - len(back) == HOPS
    assert all(p.tx_bytes == acks * ACK_WIRE_BYTES and p.tx_packets == acks for p in back)
    # Data direction: 300 full packets and one of 1000 B payload.
    data_bytes = 300 * data_wire_bytes(MTU) + 1000 + 82
    assert all(p.tx_bytes == data_bytes for p in used if p not in back)


@pytest.mark.parametrize("rate_bps", [400 * 10**9, 7_200 * 10**9, 300 * 10**9, 12_000 * 10**9, 123_456_789])
def test_serialization_is_the_exact_floor_of_size_over_rate(rate_bps: int) -> None:
    """A frame of S bytes occupies a link of R bit/s for S x 8 / R seconds: floor(S x 8 x 10^12 /
    R) whole picoseconds, exactly, for every rate (NVLink's 7.2 Tb/s is 10/9 ps per byte), and
    still exactly when the link is busy far beyond 2^53 ps, where a double sum would lose the
    picosecond."""
    sim = Simulator(1)
    port = Port(sim, "p", None, rate_bps, 0, None, None)
    port.connect(None, lambda pkt: None)
    busy = 2**60 + 1  # queued behind a backlog ending at an odd time no double holds
    port.busy_until = busy
    for size in (1, 9, 86, 4178, 4177, 9000):
        port.send(Packet(DATA, None, 0, 1, 0, size, size, 0, 0, 0))
        busy += size * 8 * 10**12 // rate_bps
        assert port.busy_until == busy


def test_a_link_rate_is_whole_bits_per_second() -> None:
    with pytest.raises(ValueError, match="whole number of bits per second"):
        Port(Simulator(1), "p", None, 400e9 + 0.5, 0, None, None)
