"""Issue 27 items 5-7: peers' files read as their tools read them, exports their tools read,
and ACKs counted as htsim counts them.

The expectations come from the peers' own rules, restated here (not from what spraylab printed):

* htsim's UEC sink adds each data packet's size (payload + its 64 B header) to the bytes it has
  accepted and ACKs when they reach 16384 B (``UecSink::_bytes_unacked_threshold``);
* htsim's connection-matrix reader gives a connection without ``id`` flow id 0, after which
  its UEC driver keeps the dynamic id the sender took at construction: ids are handed out from
  10^9 in creation order, the static default flow first, then a sender and a sink per
  connection (so connection i gets 10^9 + 1 + 2i); an id of 0 or >= 10^9 in the file is refused;
* ns-3 (HPCC ``third.cc``) reads ``topology.txt`` and ``flow.txt`` as whitespace-separated
  number streams: the counts in the header, then exactly that many switch ids, links or flows,
  and nothing after them;
* HPCC's ``fct.txt`` line is ``sip dip sport dport size start_ns fct_ns standalone_fct_ns``
  (``%08x %08x %u %u %lu %lu %lu %lu``), printed when the sender's last ACK arrives; its
  standalone FCT is 2 x the one-way propagation delay + one payload-sized packet's
  serialization per hop + (size + per-packet headers) x 8 / the bottleneck rate, in integer ns;
  its ``fct_analysis.py`` keeps lines with ``$4 == 100`` and ``$6 + $7 < T``;
* htsim prints ``Flow ... finished at <us>`` when the sender has every byte acknowledged.
"""

from __future__ import annotations

import math
from pathlib import Path

import pytest
from simutil import make_net, run_flows, small_leaf_spine

from spraylab.config import ScenarioError, validate
from spraylab.net.framing import DATA_OVERHEAD_BYTES
from spraylab.workload.flows import FlowSpec

# --- item 7: ACK rules as htsim counts them ---------------------------------------------------

HTSIM_MTU = 4150  # main_uec's default packet size
HTSIM_HEADER = 64  # UecSrc::_hdr_size
HTSIM_MSS = HTSIM_MTU - HTSIM_HEADER  # 4086 B of payload per packet
HTSIM_ACK_BYTES = 16384  # UecSink::_bytes_unacked_threshold


def _acks(rule: str, packets: int = 40, mss: int = HTSIM_MSS, threshold: int = HTSIM_ACK_BYTES) -> int:
    fabric = small_leaf_spine(leaves=2, spines=2, hosts_per_leaf=1)
    sim, net = make_net(
        fabric, cc="none", mtu_bytes=mss, ack_every=0, ack_every_bytes=threshold, ack_bytes=rule
    )
    assert run_flows(sim, net, [FlowSpec(0, 0, 1, packets * mss)]) == "done"
    qp = net.qps[0]
    assert qp.n_packets == packets and qp.retx_packets == 0
    return qp.rx.acks_sent


def _htsim_acks(packets: int, mss: int, threshold: int) -> int:
    """htsim's sink, restated: count size() = mss + 64 per packet, ACK at >= threshold (and
    the last packet)."""
    acks = counted = 0
    for i in range(packets):
        counted += mss + HTSIM_HEADER
        if counted >= threshold or i == packets - 1:
            acks, counted = acks + 1, 0
    return acks


def test_payload_rule_is_the_default_and_acks_every_fifth_htsim_sized_packet() -> None:
    """The default counts payload: 4 x 4086 < 16384, so every 5th packet (htsim: every 4th)."""
    assert _acks("payload") == math.ceil(40 / 5)
    assert validate({"workload": {"kind": "permutation", "size": "1MB"}}).transport.ack_bytes == "payload"


@pytest.mark.parametrize(("mss", "threshold"), [(HTSIM_MSS, HTSIM_ACK_BYTES), (4096, 16600), (1000, 5000)])
def test_htsim_rule_gives_htsims_ack_count(mss: int, threshold: int) -> None:
    assert _acks("htsim", 40, mss, threshold) == _htsim_acks(40, mss, threshold)


def test_wire_rule_counts_the_packets_link_bytes() -> None:
    per_ack = math.ceil(HTSIM_ACK_BYTES / (HTSIM_MSS + DATA_OVERHEAD_BYTES))
    assert per_ack == 4 and _acks("wire") == 40 // per_ack


def test_ack_bytes_is_left_out_of_scenarios_at_its_default() -> None:
    """Scenarios written before the option (and their store keys) stay as they were."""
    plain = validate({"workload": {"kind": "permutation", "size": "1MB"}}).to_dict()
    assert "ack_bytes" not in plain["transport"]
    htsim = validate(
        {
            "workload": {"kind": "permutation", "size": "1MB"},
            "transport": {"ack_every": 0, "ack_every_bytes": 16384, "ack_bytes": "htsim"},
        }
    ).to_dict()
    assert htsim["transport"]["ack_bytes"] == "htsim"


def test_ack_bytes_without_a_byte_threshold_is_refused() -> None:
    with pytest.raises(ScenarioError) as info:
        validate({"workload": {"kind": "permutation", "size": "1MB"}, "transport": {"ack_bytes": "wire"}})
    assert "transport.ack_bytes = 'wire'" in str(info.value)
