"""ToR-assisted spraying's resequencing ring holds its packets in the ToR's shared buffer.

Theory each test checks: a switch has one packet memory (Choudhury-Hahne dynamic thresholds
share it among its queues), and a packet the ToR keeps back for reordering is a packet in that
memory. So on a lossy fabric

* occupancy = every port's queue + the bytes held, and it never exceeds the buffer (with
  alpha = 1 an admitted packet leaves at least its queue's backlog free: used + size <=
  capacity - backlog);
* every port's admission sees the held bytes: with the buffer near its limit, a port is refused
  a packet it would have taken were the held bytes not there (a ``buffer`` drop);
* the holds are one more queue under the same threshold: a hold the buffer cannot take is a
  ``buffer`` drop too, counted on the downlink the packet was waiting for;
* the buffer's count of held bytes is the rings' own (``Resequencer.bytes``), and is back at
  zero once every flow is complete.
"""

from __future__ import annotations

from typing import Any

import pytest

from spraylab import run
from spraylab.lb.tor_assist.resequencer import Resequencer
from spraylab.net import wiring
from spraylab.net.port import Port
from spraylab.net.switch import SharedBuffer

BUFFER_BYTES = 100_000


def reorder_scenario(buffer: str) -> dict[str, Any]:
    """Sprayed 8-host permutation over go-back-N; spine0's link to leaf1 at a quarter rate, so
    leaf1's rings hold every packet that overtakes the slow path."""
    return {
        "topology": {
            "kind": "leaf_spine",
            "leaves": 2,
            "spines": 4,
            "hosts_per_leaf": 4,
            "host_rate": "100Gbps",
            "link_delay": "1us",
            "events": [{"at": 0, "link": ["spine0", "leaf1"], "action": "degrade", "rate_fraction": 0.25}],
        },
        "workload": {"kind": "permutation", "size": "300KB"},
        "lb": {"scheme": "tor_assist", "mode": "reorder"},
        "transport": {"recovery": "gbn"},
        "switch": {"buffer": buffer},
        "run": {"progress": False, "time_limit": "20ms"},
    }


def test_held_bytes_count_against_the_shared_buffer(monkeypatch: pytest.MonkeyPatch) -> None:
    seen = {"decisions": 0, "refused_for_held": 0, "holds_refused": 0, "holds": 0}
    rings: dict[int, Resequencer] = {}
    reseq = Resequencer.reseq

    def occupancy_ok(buffer: SharedBuffer) -> None:
        assert buffer.used_bytes() <= buffer.capacity_bytes  # queued + held

    class CheckedBuffer(SharedBuffer):
        """The switches' buffer, observed: the compiled core calls a Python override of
        ``admits`` as it calls the built-in one."""

        def admits(self, port: Port | None, backlog: int, size: int) -> bool:
            occupancy_ok(self)
            ok = super().admits(port, backlog, size)
            seen["decisions"] += 1
            if not ok and port is None:
                seen["holds_refused"] += 1
            elif not ok and self.held_bytes:
                queued = self.used_bytes() - self.held_bytes
                if backlog + size <= self.alpha * (self.capacity_bytes - queued):
                    seen["refused_for_held"] += 1  # admitted, were the held bytes not counted
            return ok

        def hold(self, size: int) -> None:
            super().hold(size)
            seen["holds"] += 1
            occupancy_ok(self)

    def tracked_reseq(self: Resequencer, switch: Any, pkt: Any) -> bool:
        buffer = switch.buffer
        assert self.buffer is buffer
        rings[id(buffer)] = self
        assert buffer.held_bytes == self.bytes >= 0
        consumed = reseq(self, switch, pkt)
        assert buffer.held_bytes == self.bytes >= 0
        return consumed

    monkeypatch.setattr(wiring, "SharedBuffer", CheckedBuffer)
    monkeypatch.setattr(Resequencer, "reseq", tracked_reseq)
    result = run(reorder_scenario(f"{BUFFER_BYTES}B"))
    s = result.summary
    assert s["completed"]  # go-back-N recovers every buffer drop
    assert seen["holds"] > 0 and seen["refused_for_held"] > 0 and seen["holds_refused"] > 0
    # every refused hold is a buffer drop, on a ToR downlink (the port it was waiting for)
    assert s["lb.reseq_buffer_drops"] == seen["holds_refused"]
    assert s["drops_buffer"] >= s["lb.reseq_buffer_drops"] + seen["refused_for_held"]
    links = result.links
    assert int(links["drops_buffer"].sum()) == s["drops_buffer"]
    assert s["lb.reseq_peak_bytes"] <= BUFFER_BYTES
    assert rings and all(ring.buffer is not None and ring.buffer.held_bytes == 0 for ring in rings.values())


def test_a_large_buffer_never_refuses_a_hold() -> None:
    """The default 64 MB buffer dwarfs the rings' peak: holds and the ports' admissions are
    never refused, so counting the held bytes changes nothing there."""
    s = run(reorder_scenario("64MB")).summary
    assert s["completed"] and s["drops_buffer"] == 0 and s["lb.reseq_buffer_drops"] == 0
    assert 0 < s["lb.reseq_peak_bytes"] < 64 * 2**20
