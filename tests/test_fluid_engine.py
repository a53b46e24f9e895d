"""The fluid engine against closed forms, the packet engine's routes, and the Result contract.

Closed forms (fluid model: max-min fair rates, wire bytes, one base latency per message):
a flow of V wire bytes at rate R finishes V / R plus its route's latency after it starts, the
latency being propagation plus the first packet's store-and-forward at every hop but the
slowest (so a lone flow matches the packet engine's idle-fabric FCT). ACK frames (one of
ACK_WIRE_BYTES per data packet, strict priority) take ``ack_share(size)`` of every data byte's
rate on the links back to the sender, so where a host both sends and receives at the same rate
its uplink carries ``1 + ack_share`` bytes per data byte (fluid/acks.py).
"""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from conftest import FLUID_KERNELS
from hypothesis import given
from hypothesis import strategies as st

from spraylab.fluid.engine import _DueOrder, _right_of, prepare, wire_bytes
from spraylab.model.scenario import FLUID_QUANTUM_PS, ScenarioError, validate
from spraylab.net.framing import ACK_WIRE_BYTES, data_wire_bytes
from spraylab.net.routes import packet_hash, trace_route
from spraylab.rails.planner import plan_rails
from spraylab.runs.experiment import build, run
from spraylab.workload.build import rail_phase_matrices

GBPS = 10**9
DELAY_PS = 1_000_000  # the topologies' default link delay (1 us)
MTU = 4096


def leaf_spine(leaves: int, spines: int, hosts_per_leaf: int, **extra: Any) -> dict[str, Any]:
    return {
        "kind": "leaf_spine",
        "leaves": leaves,
        "spines": spines,
        "hosts_per_leaf": hosts_per_leaf,
        "host_rate": "100Gbps",
        **extra,
    }


def scenario(
    topology: dict[str, Any], workload: dict[str, Any], scheme: str = "rps", **run_: Any
) -> dict[str, Any]:
    return {
        "topology": topology,
        "lb": {"scheme": scheme},
        "transport": {"recovery": "ideal", "cc": "none"},
        "workload": workload,
        "run": {"seed": 3, "engine": "fluid", "progress": False, **run_},
    }


def ps_per_byte(rate_bps: float) -> float:
    return 8e12 / rate_bps


def ack_share(size: int) -> float:
    """ACK wire bytes per data wire byte of a message (one ACK per packet, the default)."""
    return -(-size // MTU) * ACK_WIRE_BYTES / wire_bytes(size, MTU)


def latency_ps(hops: int, rate_bps: float, size: int) -> float:
    """Base latency of a route of ``hops`` equal links (module docstring)."""
    first = data_wire_bytes(min(size, MTU))
    return hops * DELAY_PS + (hops - 1) * first * ps_per_byte(rate_bps)


def test_spraying_permutation_is_size_over_rate_plus_latency() -> None:
    size = 1_000_000
    result = run(scenario(leaf_spine(4, 4, 4), {"kind": "permutation", "size": size}))
    # every host sends one flow and ACKs the one it receives, on its uplink
    rate = 100 * GBPS / (1 + ack_share(size))
    expect = wire_bytes(size, MTU) * ps_per_byte(rate) + latency_ps(4, 100 * GBPS, size)
    np.testing.assert_allclose(result.flows["fct_ps"], expect, rtol=0.005)
    assert result.summary["engine"] == "fluid"
    # without the ACK reservation: line rate
    bare = run(scenario(leaf_spine(4, 4, 4), {"kind": "permutation", "size": size}, fluid_acks=False))
    line = wire_bytes(size, MTU) * ps_per_byte(100 * GBPS) + latency_ps(4, 100 * GBPS, size)
    np.testing.assert_allclose(bare.flows["fct_ps"], line, rtol=0.005)


def test_incast_shares_the_receiver_equally() -> None:
    senders, size = 6, 500_000
    result = run(
        scenario(leaf_spine(4, 4, 4), {"kind": "incast", "senders": senders, "receiver": 0, "size": size})
    )
    transfer = senders * wire_bytes(size, MTU) * ps_per_byte(100 * GBPS)
    for _, flow in result.flows.iterrows():
        hops = 2 if flow["src"] < 4 else 4  # host 0's leaf holds hosts 0-3
        assert flow["fct_ps"] == pytest.approx(transfer + latency_ps(hops, 100 * GBPS, size), rel=0.005)


@pytest.mark.parametrize("kernel", FLUID_KERNELS)
def test_ring_allreduce_closed_form(kernel: str) -> None:
    """Ring all-reduce on n ranks of one leaf: 2(n-1) steps of S/n, each one transfer plus one
    two-hop latency: 2(n-1)/n x S/B (in wire bytes, each host's uplink also carrying the ACKs of
    what it receives) + 2(n-1) x latency."""
    n, size = 8, 8_000_000
    result = run(
        scenario(
            leaf_spine(2, 2, 8),
            {"kind": "collective", "collective": "allreduce", "size": size, "hosts": n},
            fluid_solver=kernel,
        )
    )
    part = size // n
    rate = 100 * GBPS / (1 + ack_share(part))
    step = wire_bytes(part, MTU) * ps_per_byte(rate) + latency_ps(2, 100 * GBPS, part)
    assert result.groups["cct_ps"].iloc[0] == pytest.approx(2 * (n - 1) * step, rel=0.005)


@pytest.mark.parametrize("kernel", FLUID_KERNELS)
def test_all_to_all_meets_the_nic_bound(kernel: str) -> None:
    """A full-bisection fabric under spraying: every NIC sends (n-1) messages and the ACKs of
    the (n-1) it receives, at line rate."""
    size = 200_000
    result = run(scenario(leaf_spine(4, 4, 4), {"kind": "all_to_all", "size": size}, fluid_solver=kernel))
    n = 16
    rate = 100 * GBPS / (1 + ack_share(size))
    expect = (n - 1) * wire_bytes(size, MTU) * ps_per_byte(rate) + latency_ps(4, 100 * GBPS, size)
    assert result.summary["completion_ps"] == pytest.approx(expect, rel=0.005)


@pytest.mark.parametrize("kernel", FLUID_KERNELS)
def test_rails_uniform_all_to_all_reaches_t_star(kernel: str) -> None:
    """RailS on a uniform all-to-all: every NIC sends T* worth of bytes and receives as much,
    whose ACKs (one per full packet) share its uplink; the fluid CCT is T* x (1 + ACK share)
    plus one rail route's latency and the NVLink hops before and after it."""
    topo = {"kind": "rail", "servers": 4, "gpus_per_server": 4, "spines": 2}
    # exact re-solves (fluid_quantum = 0): the default quantum's error (0.8% here) is larger
    # than the tolerance of this closed form
    sc = scenario(
        topo,
        {"kind": "rail_alltoall", "size": 1_000_000, "strategy": "rails"},
        scheme="ecmp",
        fluid_quantum=0,
        fluid_solver=kernel,
    )
    result = run(sc)
    v = validate(sc)
    d1 = rail_phase_matrices(v.workload[0], 4, 4)[0][1]
    t_star = plan_rails(d1, 4).t_star_ps(v.topology.nic_rate)
    rail_latency = latency_ps(4, v.topology.nic_rate, MTU)  # NIC, rail leaf, spine, rail leaf
    nvlink_latency = 2 * (
        v.topology.nvlink_delay + data_wire_bytes(MTU) * ps_per_byte(v.topology.nvlink_rate)
    )
    cct = result.summary["completion_ps"]
    with_acks = t_star * (1 + ACK_WIRE_BYTES / data_wire_bytes(MTU))
    assert t_star <= cct
    assert cct == pytest.approx(with_acks + rail_latency + nvlink_latency, rel=0.005)


def test_ecmp_uses_the_packet_engines_paths() -> None:
    """Same salts, entropies and walk: every flow's links are the ports trace_route visits."""
    sc = validate(
        scenario(
            {"kind": "fat_tree", "k": 4, "rate": "100Gbps"}, {"kind": "permutation", "size": "10KB"}, "ecmp"
        )
    )
    net = build(sc).net
    fluid = prepare(sc)
    index = {id(p): i for i, p in enumerate(net.ports)}
    assert [qp.entropy for qp in net.qps] == fluid.entropy
    for qp, spec, ent in zip(net.qps, fluid.flows, fluid.entropy):
        assert (qp.src, qp.dst) == (spec.src, spec.dst)
        packet = [index[id(p)] for p in trace_route(net, qp.src, qp.dst, qp.flow_hash).ports]
        assert packet == fluid.fabric.hash_route(spec.src, spec.dst, packet_hash(spec.flow_id, ent))


def test_spray_rr_draws_the_packet_engines_entropies() -> None:
    """spray_rr's uneven shares come from its random entropies: the fluid engine draws the same
    ones (the packet engine draws them as each flow starts)."""
    sc = validate(scenario(leaf_spine(4, 4, 2), {"kind": "permutation", "size": "10KB"}, "spray_rr"))
    simulation = build(sc)
    simulation.run(until_ps=1)
    assert prepare(sc).spray_entropies == [qp.lb_state.entropies for qp in simulation.net.qps]


def test_ecmp_permutation_matches_packet_engine() -> None:
    """ECMP collisions are the packet engine's, so completion agrees within 5% (ideal transport,
    no congestion control: what the fluid model assumes)."""
    sc = scenario(leaf_spine(4, 4, 4), {"kind": "permutation", "size": "1MB"}, "ecmp")
    fluid = run(sc)
    packet = run({**sc, "run": {**sc["run"], "engine": "packet"}})
    assert packet.summary["engine"] == "packet"
    assert fluid.summary["completion_ps"] == pytest.approx(packet.summary["completion_ps"], rel=0.05)
    # conservation across engines: on the same hashes every link carries the same data and ACK
    # bytes in both (the ACKs back along the echoed hash, one per packet)
    bytes_of = {r.summary["engine"]: r.links.set_index("link")["tx_bytes"] for r in (fluid, packet)}
    np.testing.assert_allclose(bytes_of["fluid"], bytes_of["packet"].loc[bytes_of["fluid"].index], rtol=1e-9)


def test_degraded_link_caps_every_sprayed_flow() -> None:
    """Spraying puts 1/S of each of a leaf's H flows on every uplink, and 1/S of the ACKs of
    the H flows into the leaf: a link degraded to f caps them at S f B / (H (1 + ACK share))
    (here 4 x 0.25 x 100 / 4 = 25 Gb/s, less the ACKs)."""
    event = {"at": 0, "link": ["leaf0", "spine0"], "action": "degrade", "rate_fraction": 0.25}
    size = 500_000
    result = run(scenario(leaf_spine(2, 4, 4, events=[event]), {"kind": "permutation", "size": size}))
    rate = 25 * GBPS / (1 + ack_share(size))
    expect = wire_bytes(size, MTU) * ps_per_byte(rate) + latency_ps(4, 100 * GBPS, size)
    np.testing.assert_allclose(result.flows["fct_ps"], expect, rtol=0.005)
    degraded = result.links[result.links["link"] == "leaf0->spine0"].iloc[0]
    assert degraded["rate_bps"] == 25 * GBPS


@pytest.mark.parametrize("kernel", FLUID_KERNELS)
def test_failed_link_stalls_its_flows_until_routing_converges(kernel: str) -> None:
    """ECMP: a flow whose path crosses the dead link makes no progress until the reroute, then
    goes on the other spine; the others never notice. (ACKs left out: they would cost the
    flows that share a host link with ACKs 2% of their rate, which is not what this tests.)"""
    converge = 50_000_000
    event = {"at": 0, "link": ["leaf0", "spine0"], "action": "down", "convergence": converge}
    size = 300_000
    sc = scenario(
        leaf_spine(2, 2, 2, events=[event]),
        {"kind": "permutation", "size": size},
        "ecmp",
        fluid_solver=kernel,
        fluid_acks=False,
    )
    result = run(sc)
    fluid = prepare(validate(sc))
    dead = {
        lid
        for lid in range(fluid.fabric.n_links)
        if {fluid.fabric.node_index[n] for n in ("leaf0", "spine0")}
        == {int(fluid.fabric.link_src[lid]), int(fluid.fabric.link_dst[lid])}
    }
    base = wire_bytes(size, MTU) * ps_per_byte(100 * GBPS) + latency_ps(4, 100 * GBPS, size)
    stalled = 0
    for spec, ent, fct in zip(fluid.flows, fluid.entropy, result.flows["fct_ps"]):
        crosses = bool(
            dead & set(fluid.fabric.hash_route(spec.src, spec.dst, packet_hash(spec.flow_id, ent)))
        )
        stalled += crosses
        assert fct == pytest.approx(base + (converge if crosses else 0), rel=0.005)
    assert 0 < stalled < len(fluid.flows)  # the seed exercises both cases


def test_unknown_columns_are_nan_never_zero() -> None:
    result = run(scenario(leaf_spine(2, 2, 2), {"kind": "permutation", "size": "100KB"}))
    for column in ("retx_packets", "nacks", "cnps", "max_reorder", "drops", "timeouts"):
        assert result.flows[column].isna().all()
    for column in ("max_queue_bytes", "drops", "ecn_marks", "pfc_pauses"):
        assert result.links[column].isna().all()
    assert result.summary["drops"] is None and result.summary["ecn_marks"] is None
    # what it does know: every byte it moved, on the links it moved them over: each host's
    # uplink carries its flow and the ACKs of the flow it receives (one per packet)
    acks = -(-100_000 // MTU) * ACK_WIRE_BYTES
    assert result.links[result.links["role"] == "host_up"]["tx_bytes"].sum() == pytest.approx(
        4 * (wire_bytes(100_000, MTU) + acks), rel=1e-9
    )


def test_engine_key_leaves_packet_scenarios_unchanged() -> None:
    """A packet scenario dumps without ``engine`` (same store key as before the option)."""
    packet = validate(scenario(leaf_spine(2, 2, 2), {"kind": "permutation", "size": "1KB"}, engine="packet"))
    assert "engine" not in packet.to_dict()["run"]
    fluid = validate(scenario(leaf_spine(2, 2, 2), {"kind": "permutation", "size": "1KB"}))
    assert fluid.to_dict()["run"]["engine"] == "fluid"


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"lb": {"scheme": "wcmp"}}, "lb.scheme = 'wcmp': not modelled by the fluid engine"),
        (
            {
                "topology": leaf_spine(
                    2, 2, 2, events=[{"link": ["leaf0", "spine0"], "action": "loss", "loss_rate": 0.01}]
                )
            },
            "topology.events.action = 'loss': not modelled by the fluid engine",
        ),
    ],
)
def test_unmodelled_inputs_are_refused(change: dict[str, Any], message: str) -> None:
    sc = {**scenario(leaf_spine(2, 2, 2), {"kind": "permutation", "size": "1KB"}), **change}
    with pytest.raises(ScenarioError) as err:
        run(sc)
    assert len(err.value.lines) == 1 and err.value.lines[0].startswith(message)


def test_a_scheme_declares_its_own_fluid_model() -> None:
    """A scheme registered outside spraylab names its route model on its class
    (``LoadBalancer.fluid_model``) and the fluid engine routes it so, with no table to edit: a
    subclass of ECMP declaring ``split`` gets rps's fluid run (per-packet random choices even out
    to an equal split at every switch), and one declaring nothing is refused in one line."""
    from spraylab.lb.base import REGISTRY, LoadBalancer, register
    from spraylab.lb.ecmp import Ecmp

    class EvenSplit(Ecmp):
        name = "test_even_split"
        fluid_model = "split"

    class Opaque(LoadBalancer):
        name = "test_opaque"

    register(EvenSplit)
    register(Opaque)
    try:
        sc = scenario(leaf_spine(4, 4, 4), {"kind": "permutation", "size": "1MB"}, "rps")
        split = run({**sc, "lb": {"scheme": "test_even_split"}})
        assert split.summary["fluid.route_model"] == "split"
        assert split.summary["completion_ps"] == run(sc).summary["completion_ps"]
        with pytest.raises(ScenarioError) as err:
            run({**sc, "lb": {"scheme": "test_opaque"}})
        assert len(err.value.lines) == 1
        assert err.value.lines[0].startswith("lb.scheme = 'test_opaque': not modelled by the fluid engine")
        assert "test_even_split" in err.value.lines[0]  # the allowed list is read off the registry
    finally:
        REGISTRY.unregister("test_even_split")
        REGISTRY.unregister("test_opaque")


def test_quantum_bounds_the_error() -> None:
    """Re-solving at most every q delays using freed capacity by < q per event: a q of 1 us moves
    an ECMP permutation's completion by at most its solves x q."""
    sc = scenario(leaf_spine(4, 4, 4), {"kind": "permutation", "size": "1MB"}, "ecmp")
    exact = run(sc)
    coarse = run({**sc, "run": {**sc["run"], "fluid_quantum": "1us"}})
    assert coarse.summary["fluid.quantum_ps"] == 1_000_000
    gap = coarse.summary["completion_ps"] - exact.summary["completion_ps"]
    assert 0 <= gap <= exact.summary["fluid.solves"] * 1_000_000


def test_the_default_quantum_is_what_its_measurement_picks() -> None:
    """run.fluid_quantum's default is the quantum the criterion picks from the stored rows of
    benchmarks/fluid_quantum.py (rerun it after a model change; docs/fluid.md)."""
    path = Path(__file__).resolve().parents[1] / "benchmarks" / "fluid_quantum.py"
    spec = importlib.util.spec_from_file_location("fluid_quantum", path)
    assert spec is not None and spec.loader is not None
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    rows = json.loads(path.with_suffix(".json").read_text())
    assert bench.pick_quantum(rows) == FLUID_QUANTUM_PS


def test_default_quantum_is_exact_when_no_event_falls_inside_it() -> None:
    """Flows that all start at once take their first solve together (events due at an instant
    are taken in before it is solved), and a sprayed permutation's flows all finish at one
    instant: no event waits for a quantum, so the default quantum gives the exact run."""
    sc = scenario(leaf_spine(4, 4, 4), {"kind": "permutation", "size": "1MB"})
    default = run(sc)
    exact = run({**sc, "run": {**sc["run"], "fluid_quantum": 0}})
    assert default.summary["fluid.quantum_ps"] == FLUID_QUANTUM_PS and exact.summary["fluid.quantum_ps"] == 0
    assert default.summary["completion_ps"] == exact.summary["completion_ps"]
    assert list(default.flows["fct_ps"]) == list(exact.flows["fct_ps"])


def test_l0_equals_fluid_on_phases_that_start_together() -> None:
    """L0 (bytes per link / capacity) is exact where every flow of a phase starts at once and
    the busiest link stays busy: a sprayed permutation and all-to-all. L0 counts data bytes
    only (a lower bound), so the fluid run leaves ACKs out too."""
    for workload in ({"kind": "permutation", "size": "1MB"}, {"kind": "all_to_all", "size": "100KB"}):
        sc = scenario(leaf_spine(4, 4, 4), workload, fluid_acks=False)
        fluid = run(sc)
        l0 = run({**sc, "run": {**sc["run"], "engine": "l0"}})
        assert l0.summary["engine"] == "l0"
        assert l0.summary["completion_ps"] == pytest.approx(fluid.summary["completion_ps"], rel=1e-6)


def test_routes_after_reconvergence_are_the_packet_engines() -> None:
    """After a link's reroute, both engines recompute the same equal-cost groups, so ECMP
    re-hashes every flow onto the same new path."""
    from spraylab.fluid.engine import _event_links

    event = {"at": "1us", "link": ["leaf0", "spine0"], "action": "down", "convergence": "2us"}
    sc = validate(
        scenario(leaf_spine(4, 4, 2, events=[event]), {"kind": "permutation", "size": "10KB"}, "ecmp")
    )
    simulation = build(sc)
    simulation.run(until_ps=5_000_000)  # past the reroute
    fluid = prepare(sc)
    ff = fluid.fabric
    ff.table.remove(_event_links(ff, "leaf0", "spine0", None))
    assert ff.table.routed_down == simulation.net.routing.routed_down  # both by directed link id
    index = {id(p): i for i, p in enumerate(simulation.net.ports)}
    for qp, spec, ent in zip(simulation.net.qps, fluid.flows, fluid.entropy):
        packet = [index[id(p)] for p in trace_route(simulation.net, qp.src, qp.dst, qp.flow_hash).ports]
        assert packet == ff.hash_route(spec.src, spec.dst, packet_hash(spec.flow_id, ent))


@pytest.mark.parametrize("quantum", ["10s", "1ms", 0])
def test_a_quantum_beyond_the_run_still_ends_done(quantum: Any) -> None:
    """Issue 27: a quantum longer than the time limit (10 s) reported stop = time_limit although
    every flow had finished. With no flow left to solve for there is no solve to wait for: the run
    is done, and ends at its last completion, not at a pending solve time."""
    sc = scenario(leaf_spine(2, 2, 2), {"kind": "permutation", "size": "64KB"}, "ecmp", fluid_quantum=quantum)
    result = run(sc)
    assert result.summary["stop_reason"] == "done" and result.flows["completed"].all()
    assert result.summary["sim_time_ps"] == int(result.flows["finish_ps"].max())


def test_max_events_is_an_event_budget_in_the_fluid_engine() -> None:
    """Issue 27: run.max_events was ignored by the fluid engine. Its steps (arrivals, completions,
    capacity events, solve times) are the events: a budget of 1 stops after one, unfinished, as
    the packet engine stops; a budget above the run's steps changes nothing."""
    sc = scenario(leaf_spine(2, 2, 2), {"kind": "random_pairs", "size": "64KB", "flows": 6, "start": "1us"})
    full = run(sc)
    assert full.summary["stop_reason"] == "done" and full.summary["events"] > 1
    one = run({**sc, "run": {**sc["run"], "max_events": 1}})
    assert one.summary["stop_reason"] == "event_budget" and one.summary["events"] == 1
    assert not one.summary["completed"]
    enough = run({**sc, "run": {**sc["run"], "max_events": full.summary["events"]}})
    assert enough.summary["stop_reason"] == "done"
    assert list(enough.flows["fct_ps"]) == list(full.flows["fct_ps"])


@given(
    st.lists(st.sampled_from([0.0, 1.0, 1.5, 2.0, 2.0, 3.0, 1e12]), max_size=12),
    st.sampled_from([0.0, 0.5, 1.0, 1.5, 2.0, 2.5, 3.0, 1e12, 2e12]),
    st.integers(0, 12),
)
def test_the_step_s_search_is_searchsorted(values: list[float], value: float, start: int) -> None:
    """The event loop finds the flows due by ``now`` (and the window of the next run-outs) from
    where the finished ones end, reading the one-flow answers off the sorted due times: always
    ``searchsorted(value, side="right")`` when the first ``start`` are due (at most ``value``)."""
    a = np.sort(np.array(values, dtype=float))
    start = min(start, int(a.searchsorted(value, side="right")))  # the loop's precondition
    assert _right_of(a, start, value, len(a)) == int(a.searchsorted(value, side="right"))


@given(
    due=st.lists(st.sampled_from([0.0, 1.0, 1.5, 2.0, 2.0, 3.0, 7.5, 1e12]), max_size=600),
    queries=st.lists(st.sampled_from([0.0, 1.0, 2.0, 2.5, 7.5, 1e12, 2e12]), max_size=6),
    first_chunk=st.sampled_from([1, 4, 64]),
)
def test_the_lazy_due_order_is_the_full_stable_sort(
    due: list[float], queries: list[float], first_chunk: int
) -> None:
    """The event loop sorts the moving flows by due time a chunk at a time, as far as its
    steps read: the sorted part is always the prefix of the full stable argsort (ties in
    their order at the solve), and a search of it is ``searchsorted`` of the whole order."""
    times = np.array(due, dtype=float)
    full = np.argsort(times, kind="stable")
    small = type("SmallChunks", (_DueOrder,), {"FIRST_CHUNK": first_chunk})  # several chunks
    queue = small(np.arange(len(times)), times.copy(), times * 2)
    head = 0
    for value in queries:
        queue.cover_index(head)
        queue.cover_value(value)
        k = queue.n_sorted
        assert np.array_equal(queue.flow[:k], full[:k])
        assert np.array_equal(queue.run_out[:k], times[full[:k]] * 2)
        assert sorted(queue.flow[k:].tolist()) == sorted(full[k:].tolist())
        want = int(np.sort(times, kind="stable").searchsorted(value, side="right"))
        head = min(head, want)
        assert _right_of(queue.due, head, value, k) == want
        head = want
