"""HPCC (transport.cc = "hpcc") and the in-band telemetry it reads, against theory.

* INT on an idle path is store-and-forward arithmetic: packet k of a line-rate flow starts at
  the j-th switch egress at (k + j) frame times plus j propagation delays after it left the
  NIC, finds no queue, and the port has sent k frames before it.
* A lossy port and a lossless one are the same FIFO while nothing pauses or drops, so the INT
  the lossy port computes at arrival (the queue behind the packet at its start, from its send
  log) equals what the lossless port stamps at its real dequeue.
* HPCC's equilibrium (Li et al., SIGCOMM'19, section 3): every link at U = eta with an empty
  queue, i.e. the bottleneck carries eta x C (eta = 0.95) and its standing queue is near zero;
  flows start at line rate with one BDP, so the first round trip of N senders can queue at most
  (N - 1) BDPs (the link itself carries one); flows with one base RTT converge to equal shares.
"""

from __future__ import annotations

from typing import ClassVar

import pytest

from spraylab.model.scenario import ScenarioError, validate
from spraylab.net.packet import Packet
from spraylab.net.routes import trace_route
from spraylab.runs.experiment import build
from spraylab.study.validation import bottleneck_case
from spraylab.transport.cc.base import CONGESTION_CONTROLS, CongestionControl
from spraylab.transport.cc.hpcc import HpccParams

ETA = HpccParams().eta


class IntProbe(CongestionControl):
    """No control (line rate), but the switches stamp INT: every ACK's record is kept."""

    name = "test_int_probe"
    summary = "test: records the INT every ACK echoes"
    uses_int = True
    records: ClassVar[dict[tuple[int, int, bool], list[tuple]]] = {}

    __slots__ = ("qp",)

    def __init__(self, qp, params, line_rate_bps) -> None:
        self.qp = qp

    def on_ack(self, pkt: Packet) -> None:
        lossless = self.qp.net.switch_params.lossless
        IntProbe.records[(self.qp.src, pkt.sack_psn, lossless)] = pkt.int_record.hops()


@pytest.fixture
def probe():
    """IntProbe registered for one test only (the registry is global; listing tests see it)."""
    CONGESTION_CONTROLS.register(IntProbe)
    IntProbe.records.clear()
    yield IntProbe.records
    del CONGESTION_CONTROLS.classes[IntProbe.name]


def _run(topology: dict, workload: dict, lossless: bool, cc: str = "test_int_probe"):
    simulation = build(
        validate(
            {
                "topology": topology,
                "switch": {"lossless": lossless},
                "transport": {"cc": cc},
                "lb": {"scheme": "ecmp"},
                "workload": workload,
                "run": {"progress": False},
            }
        )
    )
    simulation.run()
    return simulation.net


def test_int_on_an_idle_path_is_store_and_forward(probe: dict) -> None:
    n_packets = 20
    net = _run(
        {"kind": "leaf_spine", "leaves": 2, "spines": 1, "hosts_per_leaf": 1, "host_rate": "400Gbps"},
        {"kind": "random_pairs", "flows": 1, "size": n_packets * 4096},
        lossless=False,
    )
    (qp,) = net.qps
    route = trace_route(net, qp.src, qp.dst)
    nic, *switch_ports = route.ports
    frame = qp.full_wire_bytes
    assert len(switch_ports) == 3  # leaf, spine, leaf
    for k in range(n_packets):
        hops = probe[(qp.src, k, False)]
        assert [h[0] for h in hops] == [net.ports.index(p) for p in switch_ports]
        start = qp.start_ps + (k + 1) * frame * nic.ps_per_byte + nic.delay_ps
        for port, (_, qlen, tx, ts, rate) in zip(switch_ports, hops, strict=True):
            assert (qlen, tx, ts, rate) == (0, k * frame, start, port.rate_bps)
            start += frame * port.ps_per_byte + port.delay_ps


def test_lossy_port_int_equals_the_lossless_dequeue(probe: dict) -> None:
    topology = {"kind": "leaf_spine", "leaves": 2, "spines": 2, "hosts_per_leaf": 4, "host_rate": "400Gbps"}
    workload = {"kind": "incast", "size": 300_000, "senders": 6, "receiver": 0}
    lossy = _run(topology, workload, lossless=False)
    lossless = _run(topology, workload, lossless=True)
    assert sum(p.pauses_received for p in lossless.ports) == 0  # the same FIFO only without pauses
    assert lossy.drops_by_cause == lossless.drops_by_cause and sum(lossy.drops_by_cause) == 0
    by_model = {flag: {k[:2]: v for k, v in probe.items() if k[2] is flag} for flag in (False, True)}
    assert by_model[False] == by_model[True]
    assert len(by_model[False]) == 6 * -(-300_000 // 4096)
    # the incast queues: the records carry real queues, not only zeros
    assert max(h[1] for hops in by_model[False].values() for h in hops) > 500_000


def test_int_is_off_unless_the_congestion_control_reads_it() -> None:
    topology = {"kind": "leaf_spine", "leaves": 2, "spines": 1, "hosts_per_leaf": 2, "host_rate": "400Gbps"}
    workload = {"kind": "random_pairs", "flows": 1, "size": 4096}
    off = _run(topology, workload, lossless=False, cc="dcqcn")
    assert {p.int_port_id for p in off.ports} == {-1}
    on = _run(topology, workload, lossless=False, cc="hpcc")
    stamping = [p for p in on.ports if p.int_port_id >= 0]
    assert {type(p.owner).__name__ for p in stamping} == {"Switch"}
    assert len(stamping) == sum(len(s.ports) for s in on.switches.values())


def _summary(out: dict[str, float]) -> str:
    return ", ".join(f"{k} {v:.4g}" for k, v in out.items())


@pytest.mark.parametrize("lossless", [True, False], ids=["lossless", "lossy"])
def test_hpcc_16_to_1_incast_holds_the_queue_near_zero_at_eta(lossless: bool) -> None:
    """Steady state: the link at eta x C within the additive step and packet granularity (one
    point), its queue a few packets (at most 5% of a BDP on average); the start-up burst stays
    within (N - 1) BDPs; nothing is dropped, lossy fabric included."""
    out = bottleneck_case("hpcc", "incast_16", lossless)
    assert out["steady_utilization_ratio"] >= ETA - 0.01, _summary(out)
    assert out["steady_mean_queue_bytes"] <= 0.05 * out["bdp_bytes"], _summary(out)
    assert out["max_queue_bytes"] <= out["burst_bound_bytes"], _summary(out)
    assert out["drops"] == 0
    assert out["completion_ps"] <= out["bound_ps"] / (ETA - 0.1), _summary(out)


@pytest.mark.parametrize("lossless", [True, False], ids=["lossless", "lossy"])
def test_hpcc_two_long_flows_share_the_link_fairly_at_eta(lossless: bool) -> None:
    out = bottleneck_case("hpcc", "long_flows", lossless)
    assert out["steady_utilization_ratio"] >= ETA - 0.01, _summary(out)
    assert out["steady_mean_queue_bytes"] <= 0.05 * out["bdp_bytes"], _summary(out)
    assert out["max_queue_bytes"] <= out["burst_bound_bytes"], _summary(out)
    assert out["jain"] >= 0.95, _summary(out)
    assert out["drops"] == 0


def test_hpcc_16_to_1_incast_with_one_base_rtt_converges_to_equal_shares() -> None:
    out = bottleneck_case("hpcc", "incast_16_one_rtt", True)
    assert out["jain"] >= 0.95, _summary(out)
    assert out["steady_utilization_ratio"] >= ETA - 0.01, _summary(out)


def test_hpcc_section_is_validated_and_left_out_of_the_scenario_at_its_defaults() -> None:
    base = {"topology": {"kind": "leaf_spine"}, "workload": {"kind": "incast"}}
    with pytest.raises(ScenarioError) as err:
        validate({**base, "transport": {"cc": "hpcc", "hpcc": {"eta": 1.5}}})
    assert str(err.value).startswith("transport.hpcc.eta = 1.5")
    # a scenario written before [transport.hpcc] existed keeps its dump, hence its store key
    assert "hpcc" not in validate(base).to_dict()["transport"]
    tuned = validate({**base, "transport": {"cc": "hpcc", "hpcc": {"max_stage": 3}}})
    assert tuned.to_dict()["transport"]["hpcc"]["max_stage"] == 3
    assert tuned.transport.to_params().cc_params["hpcc"].max_stage == 3


def test_hpcc_short_flows_wait_far_less_than_under_dcqcn_on_websearch() -> None:
    """The HPCC paper's headline direction (section 5): short flows wait behind the queues
    DCQCN lets build (its ECN thresholds are hundreds of KB), HPCC keeps those queues near empty,
    so the tail slowdown of short WebSearch flows is far lower. A short version of the validation
    study's ``hpcc_websearch`` sweep (5 ms of arrivals at 50% load)."""
    from spraylab.runs.experiment import run

    p99 = {}
    for cc in ("hpcc", "dcqcn"):
        result = run(
            validate(
                {
                    "topology": {
                        "kind": "leaf_spine",
                        "leaves": 4,
                        "spines": 2,
                        "hosts_per_leaf": 8,
                        "host_rate": "100Gbps",
                        "uplink_rate": "400Gbps",
                    },
                    "switch": {"lossless": True},
                    "transport": {"cc": cc},
                    "lb": {"scheme": "ecmp"},
                    "workload": {"kind": "cdf", "cdf": "websearch", "load": 0.5, "duration": "5ms"},
                    "run": {"time_limit": "100ms", "progress": False},
                }
            )
        )
        flows = result.flows
        assert flows["completed"].all()
        p99[cc] = float(flows[flows.size_bytes <= 100_000].slowdown.quantile(0.99))
    assert p99["hpcc"] <= 0.5 * p99["dcqcn"], p99
