"""[monitor] time series: departures (not enqueues), queues, flow rates, and that sampling never
changes a run."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
import pytest

from spraylab.metrics.result import Result
from spraylab.model.scenario import ScenarioError, validate
from spraylab.net.framing import CNP_WIRE_BYTES, data_wire_bytes
from spraylab.runs.experiment import build, run

MTU_FRAME = data_wire_bytes(4096)


def incast(**extra: Any) -> dict[str, Any]:
    """4 senders into one 100G host port: the receiver's downlink is 4x oversubscribed."""
    base: dict[str, Any] = {
        "topology": {
            "kind": "leaf_spine",
            "leaves": 2,
            "spines": 2,
            "hosts_per_leaf": 4,
            "host_rate": "100Gbps",
        },
        "workload": {"kind": "incast", "senders": 4, "receiver": 0, "size": "200KB"},
        "run": {"seed": 3},
    }
    base.update(extra)
    return base


@pytest.fixture(scope="module")
def lossy() -> tuple[Result, Result]:
    return run(validate(incast())), run(validate(incast(monitor={"interval": "2us"})))


@pytest.fixture(scope="module")
def lossless() -> Result:
    # a small buffer (XOFF 64 KiB) and low ECN thresholds, so that PFC and ECN both act
    switch = {"lossless": True, "buffer": "1MB", "ecn_kmin_per_100g": "20KB", "ecn_kmax_per_100g": "200KB"}
    return run(validate(incast(switch=switch, monitor={"interval": "3us"})))


def departed_by_link(result: Result) -> pd.Series:
    assert result.timeseries is not None
    return result.timeseries.ports.groupby("link", observed=True)["tx_bytes"].sum()


@pytest.mark.parametrize("which", ["lossy", "lossless"])
def test_departures_integrate_exactly_to_transmitted_bytes(
    which: str, request: pytest.FixtureRequest
) -> None:
    """Every byte a port accepted leaves it once: summed over the intervals, departures equal
    the links table's tx_bytes (a completed run has drained every queue), bytes and packets."""
    result = request.getfixturevalue(which)
    result = result[1] if isinstance(result, tuple) else result
    assert result.summary["completed"]
    ports = result.timeseries.ports
    links = result.links.set_index("link")
    sums = ports.groupby("link", observed=True)[["tx_bytes", "tx_packets"]].sum()
    assert len(sums) == len(links)
    assert (sums["tx_bytes"].reindex(links.index) == links["tx_bytes"]).all()
    assert (sums["tx_packets"].reindex(links.index) == links["tx_packets"]).all()
    assert (links["tx_bytes"] > 0).sum() > 8  # not vacuous


def test_departures_never_exceed_the_link_rate_while_enqueues_do(lossy: tuple[Result, Result]) -> None:
    """A port serializes at most rate x dt per interval (a packet is counted when its last bit
    leaves, so one frame may straddle a boundary, and a control frame may leave during a data
    frame: the port model gives control strict priority and charges its time to the queue). The enqueue counter (tx_bytes) is the
    arrival rate: into the incast's downlink it is about 4x the link rate at the start."""
    result = lossy[1]
    ports = result.timeseries.ports
    rate = result.links.set_index("link")["rate_bps"]
    cap = ports["link"].map(rate).astype(float) * ports["dt_ps"] / 8e12
    assert (ports["tx_bytes"] <= cap + MTU_FRAME + CNP_WIRE_BYTES).all()
    down = ports[ports["link"] == "leaf0->h0"]
    busy = down[(down["queue_bytes"] > 0) & (down["queue_bytes"].shift(1) > 0)]  # queued all interval
    assert len(busy) >= 10 and (busy["tx_bytes"] >= 0.8 * cap[busy.index]).all()  # saturated while queued

    sim = build(validate(incast()))
    sim.run(until_ps=6_000_000)
    enqueued = next(p for p in sim.net.ports if p.name == "leaf0->h0").tx_bytes
    departed = int(down.loc[down["t_ps"] <= 6_000_000, "tx_bytes"].sum())
    assert departed <= 100e9 * 6e-6 / 8 and enqueued > 1.5 * departed  # the trap: arrivals, not throughput


def test_monitoring_does_not_change_the_run(lossy: tuple[Result, Result]) -> None:
    """Sampling only reads (the ports' queue maxima, which it borrows, are given back): every
    table and every summary number is the unmonitored run's, but for the sampler's own events."""
    plain, monitored = lossy
    pd.testing.assert_frame_equal(plain.flows, monitored.flows)
    pd.testing.assert_frame_equal(plain.links, monitored.links)
    pd.testing.assert_frame_equal(plain.groups, monitored.groups)
    same = {k: v for k, v in plain.summary.items() if k not in ("events", "wall_s")}
    assert same == {k: monitored.summary[k] for k in same}
    assert monitored.summary.keys() == plain.summary.keys()
    assert monitored.summary["events"] > plain.summary["events"]  # the sampler's own events
    assert plain.links["max_queue_bytes"].max() > 100_000  # the maxima were there to give back


def test_departures_across_a_link_change() -> None:
    """A link change recompiles the port's delivery callback while a queue of packets waits
    with the old one: they still count as that port's, leaving at the link rate (counted at the
    change, the whole standing queue would show as one interval's departures, far above it),
    and so do those sent with the new one. (Enqueue marking: a dequeue-marking port sends its
    queued packets through its own marking stage, which no link change replaces.)"""
    events = [{"at": "5us", "link": ["leaf0", "h0"], "action": "loss", "loss_rate": 0.001}]
    scenario = incast(switch={"ecn_mark_at": "enqueue"}, monitor={"interval": "2us"})
    scenario["topology"] = {**scenario["topology"], "events": events}
    result = run(validate(scenario))
    down = result.timeseries.ports[result.timeseries.ports["link"] == "leaf0->h0"]
    cap = 100e9 * 2e-6 / 8  # bytes per 2 us at 100 Gb/s
    before = down[down["t_ps"] == 6_000_000]
    assert int(before["queue_bytes"].iloc[0]) > 4 * cap  # a standing queue across the change
    assert (down["tx_bytes"] <= cap + MTU_FRAME + CNP_WIRE_BYTES).all()
    assert result.summary["completed"]
    links = result.links.set_index("link")
    sums = departed_by_link(result).reindex(links.index)
    assert (sums == links["tx_bytes"]).all()


@pytest.mark.parametrize("lossless", [False, True])
def test_a_run_stopped_with_queues_accounts_for_what_is_still_held(lossless: bool) -> None:
    """Stopped at a time limit off the sampling grid with queues standing: summed departures
    fall short of the bytes each port counted by what it still holds, the packets whose last
    bit has not left. Lossy ports count at enqueue: held is the queue (queue_bytes, rounded
    down) plus at most the rest of the frame on the wire. Lossless ports count when a
    transmission starts: held is at most that one frame."""
    switch = {"lossless": lossless}
    scenario = incast(switch=switch, monitor={"interval": "2us"}, run={"seed": 3, "time_limit": "7.3us"})
    result = run(validate(scenario))
    assert result.summary["stop_reason"] == "time_limit"
    ports = result.timeseries.ports
    links = result.links.set_index("link")
    held = links["tx_bytes"] - departed_by_link(result).reindex(links.index)
    end = ports[ports["t_ps"] == ports["t_ps"].max()].set_index("link")["queue_bytes"]
    end = end.reindex(links.index).to_numpy()
    assert ports["t_ps"].max() == 7_300_000
    if lossless:
        assert ((held >= 0) & (held <= MTU_FRAME)).all() and (held > 0).any()
    else:
        assert ((held >= end) & (held <= end + MTU_FRAME)).all()
        assert end.max() > 50_000  # not vacuous: a queue stands at the end


def test_the_sampler_stops_when_the_run_goes_idle() -> None:
    """With run.stop = 'time' the run goes on after the workload until no event is left (then
    jumps to the time limit); the sampler must not keep it busy: it stops with the last event,
    so a 10 ms run whose last event is the 1 ms RTO timer takes ~1,000 samples at 1 us, not 10,000."""
    scenario = incast(run={"seed": 3, "stop": "time", "time_limit": "10ms"})
    plain = run(validate(scenario))
    monitored = run(validate({**scenario, "monitor": {"interval": "1us"}}))
    pd.testing.assert_frame_equal(plain.flows, monitored.flows)
    assert plain.summary["sim_time_ps"] == monitored.summary["sim_time_ps"] == 10_000_000_000
    extra = monitored.summary["events"] - plain.summary["events"]
    times = np.unique(monitored.timeseries.ports["t_ps"])
    last_active = times[-2]  # the final row closes the idle tail at the time limit
    assert 1_000_000_000 <= last_active < 1_100_000_000 and extra <= 2 * last_active // 1_000_000 + 2
    assert times[-1] == 10_000_000_000


def test_counters_per_interval_add_up_to_the_links_table(lossless: Result) -> None:
    ts = lossless.timeseries
    links = lossless.links.set_index("link")
    sums = ts.ports.groupby("link", observed=True).sum(numeric_only=True).reindex(links.index)
    for column in ("ecn_marks", "paused_ps", "drops_buffer", "drops_link_down", "drops_random_loss"):
        assert (sums[column] == links[column]).all(), column
    assert links["paused_ps"].sum() > 0 and links["ecn_marks"].sum() > 0  # PFC and ECN did act
    # a lossless port's queue maximum is the largest queue after an arrival: the run's maximum
    qmax = ts.ports.groupby("link", observed=True)["queue_max_bytes"].max().reindex(links.index)
    assert (qmax == links["max_queue_bytes"]).all()


def test_lossy_queue_maximum_brackets_the_links_table(lossy: tuple[Result, Result]) -> None:
    """Lossy ports: the table's maximum is the backlog a packet found; an interval's maximum may
    also be a standing queue at its start, which holds at most one more frame than that."""
    result = lossy[1]
    links = result.links.set_index("link")
    qmax = (
        result.timeseries.ports.groupby("link", observed=True)["queue_max_bytes"].max().reindex(links.index)
    )
    assert (qmax >= links["max_queue_bytes"]).all()
    assert (qmax <= links["max_queue_bytes"] + MTU_FRAME).all()
    assert links["max_queue_bytes"].max() > 100_000


def test_flow_series(lossless: Result) -> None:
    result = lossless
    flows = result.timeseries.flows
    table = result.flows.set_index("flow_id")
    sums = flows.groupby("flow_id")[["delivered_bytes", "cnps", "retx_packets"]].sum()
    assert (sums["delivered_bytes"] == table["size_bytes"]).all()  # byte conservation per flow
    assert (sums["cnps"] == table["cnps"]).all() and (sums["retx_packets"] == table["retx_packets"]).all()
    assert (flows["rate_bps"] <= 100e9).all() and (flows["inflight_bytes"] >= 0).all()
    assert table["cnps"].sum() > 0 and flows["rate_bps"].min() < 100e9  # DCQCN cut the incast's rates
    # the four senders share the 100G bottleneck: their delivery rates add up to at most its rate
    per_t = flows.groupby("t_ps").agg(bytes=("delivered_bytes", "sum"), dt=("dt_ps", "first"))
    assert (per_t["bytes"] * 8e12 / per_t["dt"] <= 100e9 * 1.05 + MTU_FRAME * 8e12 / per_t["dt"]).all()


def test_switch_buffer_is_the_sum_of_its_port_queues(lossy: tuple[Result, Result]) -> None:
    ts = lossy[1].timeseries
    ports = ts.ports.copy()
    ports["switch"] = ports["link"].astype(str).str.split("->").str[0]
    per = ports.groupby(["t_ps", "switch"])["queue_bytes"].sum()
    sw = ts.switches.assign(switch=ts.switches["switch"].astype(str)).set_index(["t_ps", "switch"])
    assert (sw["buffer_bytes"] == per.reindex(sw.index)).all()
    assert sw["buffer_bytes"].max() > 100_000


def test_selectors_and_round_trip(tmp_path: Any) -> None:
    scenario = incast(
        monitor={"interval": "5us", "ports": ["uplink", "leaf0->h0"], "flows": [1, 2], "switches": ["leaf*"]}
    )
    result = run(validate(scenario))
    ts = result.timeseries
    assert set(ts.ports["link"].astype(str)) == {
        "leaf0->h0",
        "leaf0->spine0",
        "leaf0->spine1",
        "leaf1->spine0",
        "leaf1->spine1",
    }
    assert set(ts.flows["flow_id"]) == {1, 2}
    assert set(ts.switches["switch"].astype(str)) == {"leaf0", "leaf1"}
    assert np.all(np.diff(ts.ports[ts.ports["link"] == "leaf0->h0"]["t_ps"]) > 0)
    result.save(tmp_path / "r")
    back = Result.load(tmp_path / "r")
    pd.testing.assert_frame_equal(back.timeseries.ports, ts.ports)
    pd.testing.assert_frame_equal(back.timeseries.flows, ts.flows)
    assert run(validate(incast())).timeseries is None


def test_a_selector_matching_nothing_is_a_scenario_error() -> None:
    with pytest.raises(ScenarioError) as err:
        build(validate(incast(monitor={"ports": ["spine9*"], "flows": [99]})))
    lines = str(err.value).splitlines()
    assert any(line.startswith("monitor.ports = 'spine9*': matches no port") for line in lines)
    assert any(line.startswith("monitor.flows = 99: matches no flow") for line in lines)
