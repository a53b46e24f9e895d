"""The two tiers of a congestion control (docs/core.md, "Congestion controls"): a built-in
control runs as a compiled kernel (``CcKernel``) whose C hooks the queue pair calls, and a
control written in Python (a ``CongestionControl`` subclass with Python hooks) is called
through its Python methods, unchanged.

What the tests hold them to is the hook contract of ``spraylab.transport.cc.base``: ``on_sent``
once per data packet the queue pair puts on the wire, ``on_ack`` once per ACK it receives,
``on_cnp`` once per CNP while the sender is not done, ``on_nack`` once per NACK while it is not
done, ``on_timeout`` once per expiry of the retransmission timer with data outstanding. On a
lossless fabric every ACK, NACK and CNP a receiver sends arrives, so the counts are the
receivers' and the queue pairs' own counters once the run is idle.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import ClassVar

import pytest

from spraylab import build, validate
from spraylab.transport.cc.base import CONGESTION_CONTROLS, CongestionControl
from spraylab.transport.cc.kernel import CcKernel, runs_compiled
from spraylab.transport.cc.nscc import Nscc


class CountingCc(CongestionControl):
    """A user's control written in Python: line rate, and a count of every hook call."""

    name = "test_counting_cc"
    summary = "test: counts its hook calls"
    uses_cnp = True  # the receivers answer ECN marks with CNPs
    calls: ClassVar[dict[str, int]] = {}

    __slots__ = ("qp",)

    def __init__(self, qp, params, line_rate_bps) -> None:
        self.qp = qp

    def _count(self, hook: str) -> None:
        CountingCc.calls[hook] = CountingCc.calls.get(hook, 0) + 1

    def on_sent(self, size_bytes: int) -> None:
        self._count("on_sent")

    def on_ack(self, pkt) -> None:
        self._count("on_ack")

    def on_nack(self, pkt) -> None:
        assert not self.qp.sender_done
        self._count("on_nack")

    def on_cnp(self, now: int) -> None:
        assert not self.qp.sender_done
        self._count("on_cnp")

    def on_timeout(self) -> None:
        self._count("on_timeout")


@pytest.fixture
def counting() -> Iterator[dict[str, int]]:
    CONGESTION_CONTROLS.register(CountingCc)
    CountingCc.calls.clear()
    yield CountingCc.calls
    del CONGESTION_CONTROLS.classes[CountingCc.name]


def test_a_python_control_gets_every_hook_through_python(counting) -> None:
    """An 8:1 incast at line rate over go-back-N with per-packet spraying on a lossless fabric:
    the queue builds (ECN marks, so CNPs) and spraying reorders (go-back-N NACKs). Every
    hook is called as often as the contract says (module docstring)."""
    simulation = build(
        validate(
            {
                "topology": {"kind": "leaf_spine", "leaves": 3, "spines": 2, "hosts_per_leaf": 4},
                "switch": {"lossless": True},
                "transport": {"cc": CountingCc.name, "recovery": "gbn"},
                "lb": {"scheme": "rps"},
                "workload": {"kind": "incast", "senders": 8, "size": "256KB", "receiver": 0},
                "run": {"progress": False},
            }
        )
    )
    net = simulation.net
    net.stop_when_done = False  # run until idle: every ACK, NACK and CNP sent has arrived
    assert simulation.run() == "idle" and net.all_done
    assert all(qp.cc_kernel is None and not runs_compiled(qp.cc) for qp in net.qps)
    assert counting["on_sent"] == sum(qp.sent_packets for qp in net.qps)
    assert counting["on_ack"] == sum(qp.rx.acks_sent for qp in net.qps)
    assert counting.get("on_timeout", 0) == sum(qp.timeouts for qp in net.qps)
    assert 0 < counting["on_cnp"] <= sum(qp.rx.cnps_sent for qp in net.qps)
    assert 0 < counting["on_nack"] <= sum(qp.nacks_received for qp in net.qps)


def test_the_compiled_tier_is_taken_only_when_no_python_hook_replaces_a_kernel_hook() -> None:
    """``runs_compiled``: a kernel runs compiled; a Python subclass that overrides any hook
    runs on the Python tier (its override must be called); a Python control never does."""

    class Plain(CcKernel):
        pass

    class Overrides(CcKernel):
        def on_ack(self, pkt) -> None:
            pass

    class FakeQp:
        sim = None

    assert runs_compiled(Plain(FakeQp(), None, 0))
    assert not runs_compiled(Overrides(FakeQp(), None, 0))
    assert not runs_compiled(CountingCc(FakeQp(), None, 0))


class CountedNscc(Nscc):
    """A user's variation of a compiled control: NSCC with a Python ``on_ack`` that counts its
    calls and then runs the kernel's rule (``super().on_ack``)."""

    name = "test_counted_nscc"
    acks: ClassVar[list[int]] = [0]

    __slots__ = ()

    def on_ack(self, pkt) -> None:
        CountedNscc.acks[0] += 1
        super().on_ack(pkt)


def _reps_incast(cc: str) -> dict:
    """The reps preset (NSCC, trimming, uec recovery) on a 16-host fat-tree, an 8:1 incast of
    1 MB flows (the receiver's queue overflows: trimmed packets, their NACKs)."""
    incast = {"kind": "incast", "senders": 8, "size": "1MB", "receiver": 0}
    return {"transport.cc": cc, "topology.k": 4, "workload": incast, "run.progress": False}


def test_a_python_subclass_of_a_compiled_control_runs_its_override_and_the_same_model() -> None:
    """A subclass that overrides a hook runs on the Python tier (its ``on_ack`` is called per
    ACK), and since it calls the kernel's rule, the model is the same to the bit: every flow's
    window trajectory, hence every packet's send time, is the compiled run's (the hook
    contract, module docstring, for the count)."""
    from spraylab.model.library import load_scenario

    CONGESTION_CONTROLS.register(CountedNscc)
    CountedNscc.acks[0] = 0
    try:
        tables = {}
        for cc in ("nscc", CountedNscc.name):
            simulation = build(load_scenario("reps", {}).with_overrides(_reps_incast(cc)))
            net = simulation.net
            net.stop_when_done = False  # run until idle: every ACK sent has arrived
            assert simulation.run() == "idle" and net.all_done
            assert all((qp.cc_kernel is qp.cc) == (cc == "nscc") for qp in net.qps)
            if cc != "nscc":
                assert CountedNscc.acks[0] == sum(qp.rx.acks_sent for qp in net.qps) > 0
            tables[cc] = simulation.result().flows.to_dict("list")
            assert net.trimmed_packets > 0  # the NACK rule ran too
        assert tables["nscc"] == tables[CountedNscc.name]
    finally:
        del CONGESTION_CONTROLS.classes[CountedNscc.name]


CC_DOC = Path(__file__).resolve().parents[1] / "docs" / "congestion-control.md"


def test_the_documented_python_control_runs_as_written() -> None:
    """docs/congestion-control.md, "Writing a congestion control in Python", run as written: an
    8:1 incast of flows that start at one BDP each puts about 7 BDPs (~800 KB at 100 Gb/s) in the
    receiver's port queue within the first round trip, past the default ECN threshold (400 KB
    per 100 Gb/s), so marked echoes halve windows (RFC 3168: at most once per window of data);
    every window stays between one packet and its BDP start, every flow completes, and the
    control runs on the Python tier."""
    (code,) = re.findall(r"^```python\n(.*?)^```", CC_DOC.read_text(), flags=re.S | re.M)
    namespace: dict = {}
    try:
        exec(compile(code, str(CC_DOC), "exec"), namespace)
        assert namespace["result"].summary["completed"]
        simulation = build(namespace["scenario"])
        assert simulation.run() == "done"
        controls = [qp.cc for qp in simulation.net.qps]
        assert all(qp.cc_kernel is None for qp in simulation.net.qps)
        assert sum(cc.cuts for cc in controls) > 0
        assert all(1.0 <= cc.w <= cc.w_max for cc in controls)
    finally:
        CONGESTION_CONTROLS.classes.pop("ecn_aimd", None)
