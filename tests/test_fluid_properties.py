"""Property test of the fluid engine over random valid scenarios (issue 27, item 1: 12% of
them crashed in the ACK reservation, nearly all with 1-byte messages). Whatever the fabric,
scheme, message sizes (1 byte to 64 KB), ACK thresholds, solver, quantum and capacity events,
a scenario that validates runs to completion, and theory fixes its result independently of
the numbers:

* byte conservation: every host's uplink carries exactly the wire bytes of the messages it sent
  plus the ACK frames of the messages it received, and its downlink the reverse;
* rates are finite and non-negative, and no link carries more than its capacity over the run;
* no message finishes faster than its FCT bound (the NIC's rate on its shortest route);
* determinism: the same scenario gives the same tables, in this process and in two others.

Fabrics are small (at most 12 hosts) and the search derandomized, so the test takes seconds.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from spraylab import run
from spraylab.fluid.acks import packets_per_ack
from spraylab.model.scenario import validate
from spraylab.net.framing import ACK_WIRE_BYTES, data_wire_bytes
from spraylab.runs.experiment import build_fabric

SIZES = st.sampled_from(["1B", "2B", "63B", "100B", "4KB", "9KB", "64KB"])
TIME_LIMIT = "1s"  # far beyond any of these workloads: every message finishes


@st.composite
def fluid_scenarios(draw: st.DrawFn) -> dict[str, Any]:
    kind = draw(st.sampled_from(["leaf_spine", "fat_tree", "rail"]))
    if kind == "leaf_spine":
        leaves = draw(st.integers(1, 3))
        topology: dict[str, Any] = {
            "kind": kind,
            "leaves": leaves,
            "spines": draw(st.integers(1, 2)),
            "hosts_per_leaf": draw(st.integers(2 if leaves == 1 else 1, 4)),
            "uplink_rate": draw(st.sampled_from(["100Gbps", "400Gbps"])),
        }
    elif kind == "fat_tree":
        topology = {"kind": kind, "k": 2}
    else:
        topology = {"kind": kind, "servers": 2, "gpus_per_server": draw(st.integers(1, 2)), "spines": 1}
    fabric = build_fabric(validate({"topology": topology, "workload": {"kind": "random_pairs"}}).topology)
    n = fabric.n_hosts
    switch_links = sorted(
        {(x.a, x.b) for x in fabric.links if x.a in fabric.switch_tier and x.b in fabric.switch_tier}
    )
    if switch_links and draw(st.booleans()):  # degrade only: a down link makes sprayed bytes resend
        topology["events"] = [
            {
                "at": draw(st.sampled_from([0, "1us"])),
                "link": list(draw(st.sampled_from(switch_links))),
                "action": "degrade",
                "rate_fraction": draw(st.sampled_from([0.1, 0.5])),
            }
        ]
    size = SIZES
    workload = draw(
        st.one_of(
            st.fixed_dictionaries({"kind": st.just("permutation"), "size": size}),
            st.fixed_dictionaries(
                {"kind": st.just("incast"), "size": size, "senders": st.integers(1, n - 1)}
            ),
            st.fixed_dictionaries({"kind": st.just("all_to_all"), "size": size}),
            st.fixed_dictionaries(
                {
                    "kind": st.just("random_pairs"),
                    "size": size,
                    "flows": st.integers(1, 12),
                    "start": st.sampled_from([0, "2us"]),
                }
            ),
            st.fixed_dictionaries(
                {
                    "kind": st.just("collective"),
                    "collective": st.sampled_from(["allreduce", "allgather", "alltoall"]),
                    "size": st.sampled_from(["64B", "16KB"]),
                }
            ),
        )
    )
    # ACK thresholds: one per packet, one per 4 packets, one per 16 KB (htsim's)
    ack_every, ack_every_bytes = draw(st.sampled_from([(1, 0), (4, 0), (0, "16KB")]))
    return {
        "topology": topology,
        "transport": {
            "mtu": draw(st.sampled_from([1024, 4096])),
            "ack_every": ack_every,
            "ack_every_bytes": ack_every_bytes,
        },
        "lb": {"scheme": draw(st.sampled_from(["ecmp", "rps", "spray_rr", "adaptive"]))},
        "workload": workload,
        "run": {
            "engine": "fluid",
            "seed": draw(st.integers(1, 3)),
            "time_limit": TIME_LIMIT,
            "progress": False,
            "fluid_acks": draw(st.sampled_from([True, True, False])),
            "fluid_solver": draw(st.sampled_from(["numpy", "auto"])),
            "fluid_quantum": draw(st.sampled_from([0, "1us", "10ms"])),
        },
    }


def expected_host_bytes(scenario: Any, flows: pd.DataFrame) -> tuple[dict[int, float], dict[int, float]]:
    """Wire bytes every host sends (data of its messages, ACKs of the ones it receives) and
    receives, from the framing alone."""
    t = scenario.transport
    per_ack = packets_per_ack(t.ack_every, t.ack_every_bytes, t.mtu)
    up: dict[int, float] = {}
    down: dict[int, float] = {}
    for src, dst, size in zip(flows["src"], flows["dst"], flows["size_bytes"], strict=True):
        packets = max(1, -(-int(size) // t.mtu))
        data = (packets - 1) * data_wire_bytes(t.mtu) + data_wire_bytes(int(size) - (packets - 1) * t.mtu)
        acks = -(-packets // per_ack) * ACK_WIRE_BYTES if scenario.run.fluid_acks else 0
        up[src] = up.get(src, 0.0) + data
        down[dst] = down.get(dst, 0.0) + data
        up[dst] = up.get(dst, 0.0) + acks
        down[src] = down.get(src, 0.0) + acks
    return up, down


@settings(
    max_examples=80,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(fluid_scenarios())
def test_random_fluid_scenarios_keep_the_invariants(data: dict[str, Any]) -> None:
    scenario = validate(data)
    result = run(scenario)
    flows, links, s = result.flows, result.links, result.summary
    assert s["stop_reason"] == "done" and flows["completed"].all()
    # rates: finite, non-negative, never above the NIC, never faster than the bound
    assert np.isfinite(flows["throughput_bps"]).all() and (flows["throughput_bps"] >= 0).all()
    # start and finish are rounded to whole picoseconds separately (a dependent message starts
    # at a fractional time): an FCT may read 1 ps short of the exact one
    assert (flows["fct_ps"] >= flows["fct_bound_ps"] - 1).all(), flows[["fct_ps", "fct_bound_ps"]]
    assert (flows["fct_bound_ps"] > 0).all()
    # no link beyond its capacity over the run (tx_bytes is rounded to whole bytes)
    capacity_bytes = links["rate_bps"] / 8 * s["sim_time_ps"] / 1e12
    assert (links["tx_bytes"] <= capacity_bytes * (1 + 1e-9) + 1).all()
    # conservation on the host links
    hosts = build_fabric(scenario.topology).hosts
    up, down = expected_host_bytes(scenario, flows)
    for role, expected in (("host_up", up), ("host_down", down)):
        side = "from" if role == "host_up" else "to"
        got = links[links["role"] == role].groupby(side)["tx_bytes"].sum()
        for h, name in enumerate(hosts):
            want = expected.get(h, 0.0)
            assert abs(float(got.get(name, 0)) - want) <= 1 + 1e-9 * want, (role, name)
    again = run(scenario)
    pd.testing.assert_frame_equal(again.flows, flows)
    pd.testing.assert_frame_equal(again.links, links)


DIGEST = """
import json, sys
from spraylab import run
from spraylab.model.scenario import validate
r = run(validate(json.loads(sys.stdin.read())))
print(json.dumps({"finish": r.flows["finish_ps"].tolist(), "tx": r.links["tx_bytes"].tolist(),
                  "solves": r.summary["fluid.solves"], "fallbacks": r.summary["fluid.ack_fallbacks"]}))
"""


def test_a_fluid_run_is_the_same_in_two_separate_processes() -> None:
    """Two interpreters with different hash seeds (set and dict orders differ) give the same
    completions and link bytes for an all-to-all of 1-byte messages (the ACK fallback) plus
    sprayed 64 KB messages."""
    data = {
        "topology": {"kind": "leaf_spine", "leaves": 2, "spines": 2, "hosts_per_leaf": 3},
        "lb": {"scheme": "spray_rr"},
        "workload": [
            {"kind": "all_to_all", "size": "1B"},
            {"kind": "random_pairs", "size": "64KB", "flows": 8},
        ],
        "run": {"engine": "fluid", "progress": False, "seed": 2},
    }
    src = str(Path(__file__).resolve().parents[1] / "src")
    outputs = []
    for hash_seed in ("1", "2"):
        env = {**os.environ, "PYTHONHASHSEED": hash_seed, "PYTHONPATH": src}
        proc = subprocess.run(
            [sys.executable, "-c", DIGEST], input=json.dumps(data), capture_output=True, text=True, env=env
        )
        assert proc.returncode == 0, proc.stderr
        outputs.append(json.loads(proc.stdout))
    assert outputs[0] == outputs[1]
    assert outputs[0]["fallbacks"] > 0 and all(f > 0 for f in outputs[0]["finish"])
