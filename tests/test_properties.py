"""Property test over random valid scenarios: whatever the topology, scheme, recovery mode, CC,
lossless setting, link events and workload, a scenario that validates runs, and its result
obeys the invariants theory fixes independently of the numbers:

* packet conservation: sent = delivered + dropped + in flight, with dropped the sum of the
  drops by cause, and the flows' and links' per-cause columns adding up to the summary's;
* a lossless (PFC) fabric never drops for lack of buffer;
* FCT slowdown is measured against a lower bound: no completed flow has a slowdown below 1;
* determinism: the same scenario and seed give the same summary and tables;
* a saved result loads back equal.

Scenarios are small (at most 32 hosts, flows of at most 64 KB, a 300 us time limit) so each
example runs in a fraction of a second; the search is derandomized so CI sees the same
examples every run.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from spraylab import run
from spraylab.lb.base import REGISTRY, load_builtin_schemes
from spraylab.metrics.result import Result, _jsonable
from spraylab.model.scenario import validate
from spraylab.net.drops import DROP_CAUSES
from spraylab.runs.experiment import build_fabric

load_builtin_schemes()
SCHEMES = sorted(REGISTRY)
SIZES = st.sampled_from(["4KB", "9KB", "30KB", "64KB"])
# a few non-default parameters per scheme (each scheme's own defaults are drawn too)
LB_PARAMS: dict[str, st.SearchStrategy[dict[str, Any]]] = {
    "adaptive": st.fixed_dictionaries({"granularity": st.sampled_from(["packet", "flow"])}),
    "dfs": st.fixed_dictionaries(
        {
            "reorder_bound_packets": st.sampled_from(["auto", 4]),
            "loss_detection": st.sampled_from(["rnic", "dfs"]),
            "path_aware": st.booleans(),
        }
    ),
    "drill": st.fixed_dictionaries({"d": st.integers(1, 3), "m": st.integers(0, 2)}),
    "flowlet": st.fixed_dictionaries({"gap_us": st.sampled_from([1.0, 50.0])}),
    "reps": st.fixed_dictionaries({"buffer": st.sampled_from([1, 8])}),
    "spray_rr": st.fixed_dictionaries({"paths": st.sampled_from([1, 16])}),
    "tor_assist": st.fixed_dictionaries(
        {
            "mode": st.sampled_from(["auto", "nack_filter", "reorder"]),
            "uplink": st.sampled_from(["random", "round_robin", "least_queued"]),
            "window": st.sampled_from([2, 256]),
        }
    ),
    "wcmp": st.fixed_dictionaries({"reaction_us": st.sampled_from([0.0, 5.0])}),
}
# summary keys that are measurements of the host, not of the simulation
NONDETERMINISTIC = {"wall_s"}


@st.composite
def topologies(draw: st.DrawFn) -> dict[str, Any]:
    kind = draw(st.sampled_from(["leaf_spine", "fat_tree", "rail"]))
    rate = draw(st.sampled_from(["100Gbps", "400Gbps"]))
    if kind == "leaf_spine":
        leaves = draw(st.integers(1, 3))
        per_leaf = draw(st.integers(2 if leaves == 1 else 1, 4))
        topo: dict[str, Any] = {
            "kind": kind,
            "leaves": leaves,
            "spines": draw(st.integers(1, 3)),
            "hosts_per_leaf": per_leaf,
            "host_rate": rate,
            "links_per_spine": draw(st.integers(1, 2)),
        }
        if draw(st.booleans()):
            topo["uplink_rate"] = draw(st.sampled_from(["100Gbps", "200Gbps", "400Gbps"]))
        return topo
    if kind == "fat_tree":
        return {"kind": kind, "k": draw(st.sampled_from([2, 4])), "rate": rate}
    return {
        "kind": kind,
        "servers": draw(st.integers(2, 3)),
        "gpus_per_server": draw(st.integers(1, 3)),
        "spines": draw(st.integers(1, 2)),
        "nic_rate": rate,
    }


def workloads(topology: dict[str, Any], n_hosts: int) -> st.SearchStrategy[dict[str, Any]]:
    start = st.sampled_from([0, "5us"])
    kinds = [
        st.fixed_dictionaries({"kind": st.just("permutation"), "size": SIZES, "start": start}),
        st.fixed_dictionaries(
            {
                "kind": st.just("incast"),
                "size": SIZES,
                "senders": st.integers(1, min(8, n_hosts - 1)),
                "receiver": st.integers(0, n_hosts - 1),
            }
        ),
        st.fixed_dictionaries(
            {
                "kind": st.just("all_to_all"),
                "size": st.sampled_from(["4KB", "16KB"]),
                "hosts": st.sampled_from([0, *range(2, min(n_hosts, 6) + 1)]),
            }
        ),
        st.fixed_dictionaries(
            {"kind": st.just("random_pairs"), "size": SIZES, "flows": st.integers(1, 12), "start": start}
        ),
        st.fixed_dictionaries(
            {
                "kind": st.just("cdf"),
                "cdf": st.sampled_from(["websearch", "alistorage2019"]),
                "load": st.sampled_from([0.05, 0.3]),
                "duration": st.sampled_from(["1us", "20us"]),  # 1 us: often no flow at all
            }
        ),
        st.fixed_dictionaries(
            {
                "kind": st.just("collective"),
                "collective": st.sampled_from(["allreduce", "allgather", "reducescatter", "alltoall"]),
                "size": st.sampled_from(["16KB", "64KB"]),
                "hosts": st.sampled_from([0, *range(2, min(n_hosts, 4) + 1)]),
            }
        ),
    ]
    if topology["kind"] == "rail":
        kinds.append(
            st.fixed_dictionaries(
                {
                    "kind": st.just("moe"),
                    "tokens_per_gpu": st.sampled_from([1, 4]),
                    "phase": st.sampled_from(["dispatch", "combine", "both"]),
                    "strategy": st.sampled_from(["rail_matched", "rail_local", "rail_spray", "rails"]),
                    "chunk": st.just("16KB"),
                }
            )
        )
        kinds.append(
            st.fixed_dictionaries(
                {
                    "kind": st.just("rail_alltoall"),
                    "size": st.sampled_from(["2KB", "20KB"]),
                    "strategy": st.sampled_from(["rail_matched", "rail_local", "rail_spray", "rails"]),
                    "chunk": st.just("8KB"),
                }
            )
        )
    return st.one_of(kinds)


@st.composite
def scenarios(draw: st.DrawFn) -> dict[str, Any]:
    topology = draw(topologies())
    fabric = build_fabric(validate({"topology": topology, "workload": {"kind": "random_pairs"}}).topology)
    n = fabric.n_hosts
    switch_links = sorted(
        {
            (link.a, link.b)
            for link in fabric.links
            if link.a in fabric.switch_tier and link.b in fabric.switch_tier
        }
    )
    events = []
    if switch_links:
        for _ in range(draw(st.sampled_from([0, 1, 1, 2]))):
            action = draw(st.sampled_from(["down", "degrade", "loss"]))
            event: dict[str, Any] = {
                "at": draw(st.sampled_from([0, "3us", "20us"])),
                "link": list(draw(st.sampled_from(switch_links))),
                "action": action,
            }
            if topology.get("links_per_spine", 1) > 1 and draw(st.booleans()):
                event["parallel"] = draw(st.integers(0, topology["links_per_spine"] - 1))
            if action == "down":
                event["convergence"] = draw(st.sampled_from([0, "10us", "50us"]))
            elif action == "degrade":
                event["rate_fraction"] = draw(st.sampled_from([0.1, 0.5]))
            else:
                event["loss_rate"] = draw(st.sampled_from([0.01, 0.2]))
            events.append(event)
    topology["events"] = events
    scheme = draw(st.sampled_from(SCHEMES))
    recovery = draw(st.sampled_from(["gbn", "sr", "ideal"]))
    lossless = draw(st.booleans())
    workload = draw(st.lists(workloads(topology, n), min_size=1, max_size=2))
    if scheme == "ecmp" and {"rail_spray", "rail_local"} <= {w.get("strategy") for w in workload}:
        workload = workload[:1]  # the one invalid combination (model/scenario.py says why)
    return {
        "topology": topology,
        "switch": {"lossless": lossless, "buffer": draw(st.sampled_from(["100KB", "64MB"]))},
        "transport": {
            "cc": draw(st.sampled_from(["dcqcn", "none"])),
            "recovery": recovery,
            "ooo_bitmap": draw(st.sampled_from([8, 128])),
            "rto": "50us",
            "mtu": draw(st.sampled_from([1024, 4096])),
            "ack_every": draw(st.sampled_from([1, 4])),
            "window": draw(st.sampled_from([0, "32KB"])),
        },
        "lb": {
            "scheme": scheme,
            **(draw(LB_PARAMS[scheme]) if scheme in LB_PARAMS and draw(st.booleans()) else {}),
        },
        "workload": workload,
        "run": {
            "seed": draw(st.integers(1, 3)),
            "time_limit": "300us",
            "stop": draw(st.sampled_from(["workload", "time"])),
            "progress": False,
        },
    }


def check_drops(result: Result, lossless: bool) -> None:
    """Conservation with drops by cause, from the summary, the flows and the links tables."""
    s, flows, links = result.summary, result.flows, result.links
    c = s["conservation"]
    by_cause = {name: s[f"drops_{name}"] for name in DROP_CAUSES}
    assert sum(by_cause.values()) == s["drops_total"] == c["dropped"]
    assert c["injected"] == c["consumed"] + c["dropped"] + c["in_flight"]
    assert min(c.values()) >= 0
    assert s["drops"] == s["drops_total"] - s["drops_beyond_bitmap"]
    assert int(flows["drops"].sum()) == s["drops_total"]
    for name in DROP_CAUSES:
        assert int(flows[f"drops_{name}"].sum()) == by_cause[name], name
    # every cause is in the links table, on the port where the packet died (or the link it
    # arrived over, for a drop inside a node): the table conserves drops cause by cause
    for name in DROP_CAUSES:
        assert int(links[f"drops_{name}"].sum()) == by_cause[name], name
    link_columns = [f"drops_{name}" for name in DROP_CAUSES]
    assert (links[link_columns].sum(axis=1) == links["drops"]).all()
    assert s["drops_beyond_bitmap"] == s["discards"]
    if lossless:
        assert by_cause["buffer"] == 0


def comparable(summary: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in _jsonable(summary).items() if k not in NONDETERMINISTIC}


@settings(
    max_examples=60,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@pytest.mark.slow
@given(scenarios())
def test_random_valid_scenarios_keep_the_invariants(tmp_path_factory, data: dict[str, Any]) -> None:
    scenario = validate(data)
    # coverage, shown by --hypothesis-show-statistics
    event(f"topology {scenario.topology.kind}")
    event(f"scheme {scenario.lb.scheme}")
    event(f"{scenario.transport.recovery}, cc {scenario.transport.cc}, lossless {scenario.switch.lossless}")
    for w in scenario.workload:
        event(f"workload {w.kind}")
    for e in scenario.topology.events:
        event(f"event {e.action}")
    result = run(scenario)
    for name in DROP_CAUSES:
        if result.summary[f"drops_{name}"]:
            event(f"drops {name}")
    check_drops(result, scenario.switch.lossless)
    done = result.flows[result.flows["completed"]]
    assert (done["slowdown"] >= 1.0).all(), done.loc[done["slowdown"] < 1.0, ["fct_ps", "fct_bound_ps"]]
    assert (done["fct_bound_ps"] > 0).all()

    again = run(scenario)
    assert comparable(again.summary) == comparable(result.summary)
    pd.testing.assert_frame_equal(again.flows, result.flows)
    pd.testing.assert_frame_equal(again.links, result.links)

    path: Path = tmp_path_factory.mktemp("result") / "run"
    loaded = Result.load(result.save(path))
    assert loaded.summary == json.loads(json.dumps(_jsonable(result.summary)))
    assert loaded.scenario == result.scenario
    for name in ("flows", "links", "groups"):
        pd.testing.assert_frame_equal(getattr(loaded, name), getattr(result, name), check_dtype=False)
