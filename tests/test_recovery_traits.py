"""Schemes size themselves from a recovery mode's traits, never from its name: a recovery
registered at run time gets the defaults its traits call for.

Theory each test checks:

* DFS's automatic reorder bound B must not exceed the receiver's out-of-order bitmap W over a
  selective recovery: the sender keeps every PSN below ``snd_una + B`` and the receiver's ePSN
  is at least ``snd_una``, so with B <= W no PSN reaches it at or beyond ePSN + W and nothing
  is discarded (the no-discard guarantee);
* ToR-assisted spraying's automatic mode filters NACKs over a selective recovery (the receiver
  kept what followed a late packet) and resequences over a go-back-N one (the receiver
  discarded it), and mirrors the RNIC's bitmap: W for a bitmap receiver, 1 for go-back-N,
  unbounded for the ideal receiver, which accepts any PSN.
"""

from __future__ import annotations

import math
from collections.abc import Iterator

import pytest
from simutil import G, make_net, run_flows, small_leaf_spine

from spraylab.lb.tor_assist.params import NO_LIMIT
from spraylab.net.framing import data_wire_bytes
from spraylab.transport.params import TransportParams
from spraylab.transport.recovery.base import RECOVERIES, Recovery
from spraylab.transport.recovery.gbn import GoBackNReceiver
from spraylab.transport.recovery.sr import SelectiveRepeat
from spraylab.workload.flows import FlowSpec


class BitmapRecovery(SelectiveRepeat):
    """A new bitmap-based selective recovery under its own name (it inherits the traits)."""

    name = "test_bitmap"
    __slots__ = ()


class RewindRecovery(Recovery):
    """A new in-order recovery: a NACK rewinds to the NACKed PSN (go-back-N's receiver)."""

    name = "test_rewind"
    receiver = GoBackNReceiver
    __slots__ = ()

    def on_nack(self, psn: int) -> None:
        qp = self.qp
        if qp.snd_nxt > psn:
            qp.snd_nxt = psn


@pytest.fixture(autouse=True)
def registered() -> Iterator[None]:
    RECOVERIES.register(BitmapRecovery)
    RECOVERIES.register(RewindRecovery)
    yield
    del RECOVERIES.classes[BitmapRecovery.name]
    del RECOVERIES.classes[RewindRecovery.name]


def test_builtin_receivers_state_their_out_of_order_window() -> None:
    params = TransportParams(ooo_bitmap_packets=200)
    windows = {name: RECOVERIES.get(name).ooo_window_packets(params) for name in ("gbn", "sr", "ideal")}
    assert windows == {"gbn": 1, "sr": 200, "ideal": None}


@pytest.mark.parametrize("recovery", ["sr", "test_bitmap"])
def test_dfs_auto_bound_stays_within_a_new_bitmap(recovery: str) -> None:
    # 400 Gb/s across a spine: 1.5 x BDP is about 150 packets, above a 32-packet bitmap
    bitmap = 32
    fabric = small_leaf_spine(leaves=2, spines=4, hosts_per_leaf=2, rate_gbps=400)
    sim, net = make_net(fabric, "dfs", recovery=recovery, ooo_bitmap_packets=bitmap, cc="none")
    flows = [FlowSpec(h, h, (h + 2) % 4, 1_000_000) for h in range(4)]
    qps = net.add_flows(flows)
    for qp in qps:
        _, rtt_ps = net.lb.route_info(qp)
        bdp_packets = math.ceil(400 * G * rtt_ps / 1e12 / (data_wire_bytes(qp.mtu) * 8))
        assert max(64, math.ceil(1.5 * bdp_packets)) > bitmap
        assert qp.psn_window == bitmap
    assert run_flows(sim, net, []) == "done"
    assert sum(qp.rx.discards for qp in qps) == 0  # B <= W: nothing beyond the bitmap


def test_dfs_auto_bound_is_not_capped_by_an_in_order_receiver() -> None:
    # go-back-N discards any reordering whatever B is: B = 1 would only make it stop-and-wait
    fabric = small_leaf_spine(leaves=2, spines=4, hosts_per_leaf=2, rate_gbps=100)
    for recovery in ("gbn", "test_rewind"):
        _, net = make_net(fabric, "dfs", recovery=recovery)
        (qp,) = net.add_flows([FlowSpec(0, 0, 2, 1_000_000)])
        assert qp.psn_window == 64, recovery


@pytest.mark.parametrize(
    ("recovery", "mode", "nic_w"),
    [
        ("gbn", "reorder", 1),
        ("test_rewind", "reorder", 1),
        ("sr", "nack_filter", 512),
        ("test_bitmap", "nack_filter", 512),
        ("ideal", "nack_filter", NO_LIMIT),
    ],
)
def test_tor_assist_auto_mode_and_mirror_follow_the_traits(recovery: str, mode: str, nic_w: int) -> None:
    _, net = make_net(small_leaf_spine(), "tor_assist", recovery=recovery, ooo_bitmap_packets=512)
    assert (net.lb.mode, net.lb.nic_w) == (mode, nic_w)
    # nack_filter's window must cover the mirrored bitmap (256 by default, widened to 512)
    assert net.lb.window_eff == (512 if mode == "nack_filter" and nic_w != NO_LIMIT else 256)
