"""Every drop counted, by cause; what validates runs; slowdown against a true lower bound.

Theory each test checks:

* conservation: every packet sent is delivered, dropped (with exactly one cause) or still in
  flight, so a cause's counter equals the packets that can only have been lost that way;
* PFC prevents buffer overflow, not corruption: a lossless fabric with a lossy link loses
  packets to random loss only, and still delivers everything;
* a lower bound on the FCT: no scheme completes a flow before its source NIC has serialized
  every byte and the last packet has crossed the fabric, so slowdown = FCT / bound >= 1 for
  every flow under every scheme, spraying included, where the one-path idle FCT is beaten.
"""

from __future__ import annotations

import math
import subprocess
import sys
from types import SimpleNamespace
from typing import Any

import pytest

from spraylab import run
from spraylab.metrics.result import Result
from spraylab.model.scenario import ScenarioError, validate
from spraylab.net.drops import DROP_CAUSES
from spraylab.net.framing import DATA_OVERHEAD_BYTES
from spraylab.study.metrics import METRICS

HEADER = DATA_OVERHEAD_BYTES  # RoCEv2 framing per data packet
MTU = 4096


def scenario(topology: dict[str, Any], workload: Any, **sections: Any) -> dict[str, Any]:
    data = {
        "topology": {"kind": "leaf_spine", "host_rate": "100Gbps", "link_delay": "1us", **topology},
        "workload": workload,
        "run": {"progress": False, "time_limit": "2ms"},
    }
    for key, value in sections.items():
        data[key] = {**data.get(key, {}), **value}
    return data


def drops(result: Result) -> dict[str, int]:
    return {name: result.summary[f"drops_{name}"] for name in DROP_CAUSES}


def test_partitioned_fabric_counts_no_route_drops() -> None:
    """leaf1's only uplink goes down at t = 0 and routing converges at once: h0's packets to h1
    reach leaf0, which has no route left. Nothing is delivered, so every packet sent is a
    no-route drop or still in flight (regression: these were missing from ``drops``)."""
    result = run(
        scenario(
            {
                "leaves": 2,
                "spines": 1,
                "hosts_per_leaf": 1,
                "events": [{"at": 0, "link": ["leaf1", "spine0"], "action": "down"}],
            },
            {"kind": "random_pairs", "flows": 1, "size": "64KB"},
            run={"time_limit": "200us"},
            transport={"rto": "20us"},
        )
    )
    s, c = result.summary, result.summary["conservation"]
    assert c["consumed"] == 0 and not s["completed"]
    assert s["drops_no_route"] > 0
    assert s["drops_no_route"] + c["in_flight"] == c["injected"] == s["packets_sent"]
    assert s["drops"] == s["drops_total"] == s["drops_no_route"]
    assert int(result.flows["drops_no_route"].sum()) == s["drops_no_route"]
    # no port dropped anything: the switch did, and the links table counts the drops on the
    # link they arrived over (h0's uplink into leaf0)
    links = result.links
    dropped = links[links["drops"] > 0]
    assert list(dropped["to"]) == ["leaf0"] and list(dropped["role"]) == ["host_up"]
    assert int(dropped["drops_no_route"].sum()) == int(dropped["drops"].sum()) == s["drops_no_route"]


def test_resequencer_and_tor_filter_drops_are_counted() -> None:
    """ToR-assisted spraying drops packets itself: the reorder mode's ring (a 2-packet window
    overflows at once under spraying) and the nack_filter mode's absorbed NACKs/CNPs. Each drop
    is counted under its cause and matches the scheme's own decision counters."""
    topo = {"leaves": 2, "spines": 4, "hosts_per_leaf": 4}
    work = {"kind": "permutation", "size": "1MB"}
    reorder = run(
        scenario(topo, work, lb={"scheme": "tor_assist", "window": 2}, transport={"recovery": "gbn"})
    )
    s = reorder.summary
    assert s["drops_resequencer"] == s["lb.reseq_overflow_drops"] + s["lb.reseq_duplicate_drops"] > 0
    assert s["drops"] >= s["drops_resequencer"]
    assert int(reorder.flows["drops_resequencer"].sum()) == s["drops_resequencer"]
    # counted on the links into the ToRs that hold the rings (no port's own drop)
    at = reorder.links[reorder.links["drops_resequencer"] > 0]
    assert int(at["drops_resequencer"].sum()) == s["drops_resequencer"]
    assert set(at["to"]) <= {"leaf0", "leaf1"} and set(at["role"]) == {"downlink"}

    nack_filter = run(scenario(topo, work, lb={"scheme": "tor_assist"}, transport={"recovery": "sr"}))
    s = nack_filter.summary
    assert s["drops_tor_filter"] == s["lb.nacks_dropped"] + s["lb.cnps_dropped"] > 0
    assert s["drops_total"] == sum(drops(nack_filter).values())


def test_lossless_fabric_with_a_lossy_link_counts_corruption_and_completes() -> None:
    """A ``loss`` event on a lossless fabric models bit errors: packets are lost (random loss),
    none for lack of buffer, and retransmission still delivers every flow (regression: this
    raised AssertionError after the whole run)."""
    result = run(
        scenario(
            {
                "leaves": 2,
                "spines": 2,
                "hosts_per_leaf": 2,
                "events": [{"at": 0, "link": ["leaf0", "spine0"], "action": "loss", "loss_rate": 0.05}],
            },
            {"kind": "permutation", "size": "200KB"},
            switch={"lossless": True},
            transport={"recovery": "sr", "rto": "100us"},
        )
    )
    s = drops(result)
    assert s["random_loss"] > 0 and s["buffer"] == 0
    assert result.summary["completed"] and result.summary["flows_completed"] == 4
    loss_links = result.links[result.links["drops_random_loss"] > 0]
    assert set(loss_links["from"]) | set(loss_links["to"]) <= {"leaf0", "spine0"}


def test_receiver_discards_are_drops_beyond_the_bitmap() -> None:
    """Spraying over go-back-N RNICs: every out-of-order arrival is discarded by the RNIC (a
    bitmap of one). Those packets reached the host but not the application: drops of cause
    ``beyond_bitmap`` (equal to the receivers' discards), not deliveries."""
    result = run(
        scenario({"leaves": 2, "spines": 4, "hosts_per_leaf": 2}, {"kind": "permutation", "size": "256KB"},
                 lb={"scheme": "rps"}, transport={"recovery": "gbn"})
    )  # fmt: skip
    s = result.summary
    assert s["drops_beyond_bitmap"] == s["discards"] > 0
    assert s["drops"] == s["drops_total"] - s["drops_beyond_bitmap"]
    c = s["conservation"]
    assert c["injected"] == c["consumed"] + c["dropped"] + c["in_flight"]


@pytest.mark.parametrize(
    ("workload", "line"),
    [
        ([], "workload = []: no workload"),
        ({"kind": "all_to_all", "hosts": 1}, "workload.hosts = 1: needs at least 2 hosts"),
        ({"kind": "collective", "hosts": 1}, "workload.hosts = 1: needs at least 2 hosts"),
    ],
)
def test_workloads_that_cannot_make_flows_are_validation_errors(workload: Any, line: str) -> None:
    """Regression: these failed while building the run (IndexError, ValueError) instead of
    as one error line at validation."""
    with pytest.raises(ScenarioError) as exc:
        validate(scenario({"leaves": 2, "spines": 1, "hosts_per_leaf": 2}, workload))
    assert len(exc.value.lines) == 1 and exc.value.lines[0].startswith(line), exc.value.lines


def test_one_host_fabric_is_a_validation_error(tmp_path) -> None:
    """The house style for bad input: one error line naming the key, exit code 2."""
    path = tmp_path / "one.toml"
    path.write_text('[topology]\nleaves = 1\nhosts_per_leaf = 1\n[workload]\nkind = "permutation"\n')
    r = subprocess.run(
        [sys.executable, "-m", "spraylab.cli", "run", str(path)], capture_output=True, text=True
    )
    assert r.returncode == 2
    assert r.stderr.strip().splitlines() == [
        f"error: {path}: workload.kind = 'permutation': needs at least 2 hosts to send between, got 1"
    ]


def test_a_poisson_draw_without_flows_is_an_empty_completed_result(tmp_path) -> None:
    """A cdf workload over 1 ns at 1% load almost surely draws no flow: a valid, empty run
    (regression: KeyError 'fct_ps'), complete, and it saves and loads back."""
    result = run(
        scenario(
            {"leaves": 2, "spines": 1, "hosts_per_leaf": 2}, {"kind": "cdf", "load": 0.01, "duration": "1ns"}
        )
    )
    s = result.summary
    assert s["flows"] == 0 and s["completed"] and s["stop_reason"] == "done"
    assert s["drops_total"] == s["packets_sent"] == 0 and s["fct_mean_ps"] is None
    loaded = Result.load(result.save(tmp_path / "empty"))
    assert list(loaded.flows.columns) == list(result.flows.columns) and loaded.flows.empty


def wire_ps(size: int, ps_per_byte: int) -> int:
    return (size + math.ceil(size / MTU) * HEADER) * ps_per_byte


def test_bound_is_the_idle_fct_on_one_uniform_path() -> None:
    """One flow of whole packets over host-leaf-spine-leaf-host at one rate: the lower bound
    is attained, it is the idle FCT (wire bytes at line rate + 4 link delays + the last
    packet's store-and-forward at the 3 switches), and the flow runs at it."""
    size = 64 * MTU
    result = run(
        scenario({"leaves": 2, "spines": 1, "hosts_per_leaf": 1}, {"kind": "random_pairs", "flows": 1, "size": size},
                 transport={"cc": "none"})
    )  # fmt: skip
    flow = result.flows.iloc[0]
    bound = wire_ps(size, 80) + 4 * 1_000_000 + 3 * (MTU + HEADER) * 80
    assert int(flow["fct_bound_ps"]) == bound == int(flow["ideal_fct_ps"])
    assert int(flow["fct_ps"]) == bound and flow["slowdown"] == 1.0


@pytest.mark.parametrize(
    ("scheme", "recovery"), [("rps", "sr"), ("rps", "ideal"), ("tor_assist", "sr"), ("dfs", "sr")]
)
def test_spraying_beats_the_idle_fct_but_not_the_bound(scheme: str, recovery: str) -> None:
    """400 Gb/s hosts, four 100 Gb/s uplinks: one path carries 100 Gb/s, but a sprayed flow
    uses all four. Its FCT is below the one-path idle FCT (which therefore is no bound: the
    old slowdown was clamped at 1 to hide it) and never below the lower bound."""
    size = 1_000_000
    result = run(
        scenario(
            {"leaves": 2, "spines": 4, "hosts_per_leaf": 1, "host_rate": "400Gbps", "uplink_rate": "100Gbps"},
            {"kind": "random_pairs", "flows": 1, "size": size},
            lb={"scheme": scheme},
            transport={"recovery": recovery, "cc": "none"},
        )
    )
    flow = result.flows.iloc[0]
    assert flow["completed"]
    assert flow["fct_ps"] < 0.5 * flow["ideal_fct_ps"]
    assert flow["slowdown"] >= 1.0
    assert int(flow["fct_bound_ps"]) >= wire_ps(size, 20)  # at least the NIC's serialization


@pytest.mark.parametrize(
    "scheme", ["ecmp", "rps", "flowlet", "drill", "reps", "wcmp", "adaptive", "spray_rr"]
)
def test_no_flow_beats_its_bound(scheme: str) -> None:
    """An oversubscribed fabric with a degraded link and mixed flow sizes (partial last
    packets): slowdown >= 1 for every flow under every scheme."""
    result = run(
        scenario(
            {
                "leaves": 2,
                "spines": 2,
                "hosts_per_leaf": 4,
                "host_rate": "400Gbps",
                "uplink_rate": "200Gbps",
                "events": [
                    {"at": "5us", "link": ["leaf0", "spine1"], "action": "degrade", "rate_fraction": 0.5}
                ],
            },
            [
                {"kind": "permutation", "size": "300KB"},
                {"kind": "random_pairs", "flows": 6, "size": "10001B"},
            ],
            lb={"scheme": scheme},
            transport={"recovery": "ideal"},
        )
    )
    done = result.flows[result.flows["completed"]]
    assert len(done) == len(result.flows) == 14
    assert (done["slowdown"] >= 1.0).all(), done[["fct_ps", "fct_bound_ps"]]


def test_bound_search_by_hops_equals_dijkstra_on_a_uniform_fabric(monkeypatch) -> None:
    """Every switch link of a fat-tree has one delay and rate, so the cheapest path by either
    cost is the fewest-hops one: the breadth-first shortcut and Dijkstra give the same bounds."""
    from spraylab.metrics import fct_bound
    from spraylab.runs.experiment import build

    sc = validate(
        scenario({}, {"kind": "permutation", "size": "10001B"}) | {"topology": {"kind": "fat_tree", "k": 4}}
    )
    sim = build(sc)
    by_hops = fct_bound.fct_lower_bounds_ps(sim.net, sim.net.qps)
    original = fct_bound._Distances.__init__

    def no_shortcut(self, net) -> None:
        original(self, net)
        assert self.uniform is not None
        self.uniform = None

    monkeypatch.setattr(fct_bound._Distances, "__init__", no_shortcut)
    assert fct_bound.fct_lower_bounds_ps(sim.net, sim.net.qps) == by_hops == sim.fct_bound
    assert min(by_hops) > 0


def _link_drops(result: Result) -> dict[str, int]:
    return {name: int(result.links[f"drops_{name}"].sum()) for name in DROP_CAUSES}


def test_links_table_conserves_drops_for_every_cause() -> None:
    """Invariant: the links table accounts for every drop. Each packet dies at one place, so
    summing a drop column over the links gives the summary's count of that cause, for all
    seven causes; a drop inside a node (no route, a ToR's ring or filter, the RNIC) is counted
    on the link it arrived over, whose ``to`` is that node. Three runs that together lose
    packets to every cause (regression: no_route, resequencer, tor_filter and beyond_bitmap
    were in the summary but in no per-port column)."""
    topo = {"leaves": 2, "spines": 4, "hosts_per_leaf": 4}
    work = {"kind": "permutation", "size": "1MB"}
    events = [
        {"at": "5us", "link": ["leaf0", "spine1"], "action": "loss", "loss_rate": 0.01},
        {"at": "20us", "link": ["leaf1", "spine2"], "action": "down", "convergence": "20us"},
    ]
    # reorder ring of 2 over go-back-N, a small shared buffer, a lossy and a failed link
    reorder = run(
        scenario({**topo, "events": events}, work, lb={"scheme": "tor_assist", "window": 2},
                 transport={"recovery": "gbn"}, switch={"buffer": "200KB"})
    )  # fmt: skip
    nack_filter = run(scenario(topo, work, lb={"scheme": "tor_assist"}, transport={"recovery": "sr"}))
    partitioned = run(
        scenario(
            {"leaves": 2, "spines": 1, "hosts_per_leaf": 1,
             "events": [{"at": 0, "link": ["leaf1", "spine0"], "action": "down"}]},
            {"kind": "random_pairs", "flows": 1, "size": "64KB"},
            run={"time_limit": "200us"}, transport={"rto": "20us"},
        )
    )  # fmt: skip
    seen = dict.fromkeys(DROP_CAUSES, 0)
    for result in (reorder, nack_filter, partitioned):
        assert _link_drops(result) == drops(result)
        links = result.links
        columns = [f"drops_{name}" for name in DROP_CAUSES]
        assert (links[columns].sum(axis=1) == links["drops"]).all()
        assert int(links["drops"].sum()) == result.summary["drops_total"]
        for name, count in drops(result).items():
            seen[name] += count
        # where each node cause was counted: the link into the node that dropped it
        for name, roles in (("resequencer", {"downlink"}), ("tor_filter", {"host_up"}),
                            ("beyond_bitmap", {"host_down"}), ("no_route", {"host_up"})):  # fmt: skip
            at = links[links[f"drops_{name}"] > 0]
            assert set(at["role"]) <= roles, name
    assert all(seen.values()), seen  # every cause was exercised


def test_event_link_drops_counts_the_link_s_own_losses_only() -> None:
    """The study metric ``event_link_drops`` (claim 3: completion less one hold timeout per
    link drop) counts what the event's link itself lost, at its ports. Resequencer drops of
    packets that crossed that link are counted on it in the links table (where they died is
    the ToR at its far end) but are not the link's losses."""
    data = scenario(
        {"leaves": 2, "spines": 4, "hosts_per_leaf": 4,
         "events": [{"at": 0, "link": ["spine0", "leaf1"], "action": "loss", "loss_rate": 0.01}]},
        {"kind": "permutation", "size": "1MB"},
        lb={"scheme": "tor_assist", "window": 2}, transport={"recovery": "gbn"},
    )  # fmt: skip
    result = run(data)
    point = SimpleNamespace(scenario=lambda: validate(data), result=lambda: result)
    links = result.links
    on_link = links[
        ((links["from"] == "spine0") & (links["to"] == "leaf1"))
        | ((links["from"] == "leaf1") & (links["to"] == "spine0"))
    ]
    own = int(on_link[["drops_buffer", "drops_link_down", "drops_random_loss"]].to_numpy().sum())
    assert own > 0 and int(on_link["drops_resequencer"].sum()) > 0  # both kinds are on this link
    assert METRICS["event_link_drops"].compute(point, None) == own < int(on_link["drops"].sum())
