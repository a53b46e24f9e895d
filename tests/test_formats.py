"""Flow and topology files of other simulators (htsim, HPCC/ns-3) and explicit flow files.

Each reader is checked on its shipped example (the flows and the fabric built from it, against
what the file says by construction), and every refusal names the file, the line or row, and
the column or key."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pandas as pd
import pytest

from spraylab.formats import htsim, ns3
from spraylab.formats.rows import FormatError, check_rows, read_csv
from spraylab.model.scenario import Scenario, ScenarioError, validate
from spraylab.net.route_table import RouteTable
from spraylab.runs.experiment import build_fabric, run
from spraylab.topology.fat_tree import fat_tree

EXAMPLES = Path(__file__).resolve().parents[1] / "src" / "spraylab" / "scenarios" / "imports"
FAST = {"run": {"progress": False}}


def _leaf_spine(hosts_per_leaf: int = 4) -> dict:
    return {
        "kind": "leaf_spine",
        "leaves": 2,
        "spines": 2,
        "hosts_per_leaf": hosts_per_leaf,
        "host_rate": "100Gbps",
    }


def _tiers(fabric) -> Counter:
    return Counter(fabric.switch_tier.values())


# --- htsim -----------------------------------------------------------------------------------


def test_htsim_topo_example_builds_the_described_fabric() -> None:
    """leaf_spine_2to1.topo: 16 hosts, 4 hosts per ToR (Radix_Down 4), 2 uplinks per ToR
    (Radix_Up 2, hence 2 tier-1 switches), 100 Gb/s and 1 us everywhere: 4 ToRs, 16 host links,
    4 x 2 uplinks, oversubscription 4 x 100 / (2 x 100) = 2."""
    scenario = Scenario.load(EXAMPLES / "htsim_two_phase.toml")
    fabric = build_fabric(scenario.topology)
    assert fabric.n_hosts == 16
    assert _tiers(fabric) == {1: 4, 2: 2}
    assert fabric.host_tor[:5] == ["tor0"] * 4 + ["tor1"]  # htsim's numbering: hosts 0-3 under ToR 0
    uplinks = [link for link in fabric.links if link.a.startswith("tor")]
    assert len(fabric.links) == 16 + 8 and len(uplinks) == 8
    assert {link.rate_bps for link in fabric.links} == {100 * 10**9}
    assert {link.delay_ps for link in fabric.links} == {1_000_000}
    assert fabric.info["ignored"] == ["Queue_Down", "Queue_Up"]
    down = 4 * 100
    up = sum(link.rate_bps for link in uplinks if link.a == "tor0") / 10**9
    assert down / up == 2


def test_htsim_cm_example_flows_and_barrier() -> None:
    """two_phase.cm: four 200 KB flows at t = 0, then four 100 KB flows behind barrier 1 (four
    activations): each of them starts when the last of the first four is received."""
    scenario = Scenario.load(EXAMPLES / "htsim_two_phase.toml")
    rows = scenario.workload[0].flow_rows
    assert [(r.flow_id, r.src, r.dst, r.size_bytes) for r in rows[:2]] == [
        (1, 0, 4, 200_000),
        (2, 1, 5, 200_000),
    ]
    assert all(r.after == () and r.start_ps == 0 for r in rows[:4])
    assert all(r.after == (1, 2, 3, 4) for r in rows[4:])
    flows = run(scenario).flows.set_index("flow_id")
    last_first_phase = flows.loc[0:3, "finish_ps"].max()
    assert (flows.loc[4:7, "start_ps"] == last_first_phase).all()
    assert flows["completed"].all()


def test_htsim_start_is_microseconds() -> None:
    cm = htsim.parse_cm("Nodes 4\nConnections 1\n0->3 id 7 start 2.5 size 1000\n", "x.cm")
    assert cm.rows[0].start_ps == 2_500_000 and cm.rows[0].flow_id == 7


K4_TOPO = """Nodes 16
Tiers 3
Podsize 4
Tier 0
Downlink_speed_Gbps 100
Uplink_speed_Gbps 100
Radix_Down 2
Radix_Up 2
Downlink_Latency_ns 1000
Uplink_Latency_ns 1000
Tier 1
Radix_Down 2
Radix_Up 2
Uplink_speed_Gbps 100
Uplink_Latency_ns 1000
Tier 2
Radix_Down 4
"""


def test_htsim_three_tiers_equal_a_k_ary_fat_tree() -> None:
    """The k = 4 fat-tree written as an htsim description (2 hosts per edge, 2 pods' worth of
    uplinks, 4 pods) has the same shape as spraylab's fat_tree(4): (k/2)^2 = 4 cores, k^2/2 = 8
    edges and 8 aggregations, 3k^3/4 = 48 links, every switch of degree k = 4."""
    mine = htsim.build_fabric(htsim.parse_topo(K4_TOPO, "k4.topo"))
    ref = fat_tree(4, 100 * 10**9, 1_000_000)
    assert _tiers(mine) == _tiers(ref) == {1: 8, 2: 8, 3: 4}
    assert len(mine.links) == len(ref.links) == 48

    def degrees(f) -> Counter:
        deg: Counter = Counter()
        for link in f.links:
            deg[link.a] += 1
            deg[link.b] += 1
        return Counter(deg[s] for s in f.switch_tier)

    assert degrees(mine) == degrees(ref) == {4: 20}
    # a host in pod 0 reaches a host in pod 3 over (k/2)^2 = 4 equal-cost core paths
    table = RouteTable(mine)
    table.compute()
    src_tor, dst_tor = (table.node_index[mine.host_tor[h]] for h in (0, 15))
    assert table.distances(table.tor_row[[dst_tor]])[0, src_tor] == 4
    paths = {src_tor: 1}
    for _ in range(4):
        nxt: Counter = Counter()
        for node, count in paths.items():
            for lid in table.candidates(node, 15):
                nxt[int(table.link_dst[lid])] += count
        paths = dict(nxt)
    assert paths == {dst_tor: 4}


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            "Nodes 4\nConnections 1\n0->1 id 1 start 0 size 10 prio 3\n",
            "x.cm line 3, prio = '3': not a connection field",
        ),
        (
            "Nodes 4\nConnections 1\n0->1 id 1 start 0 size ten\n",
            "x.cm line 3, size = 'ten': must be a whole number",
        ),
        ("Nodes 4\nConnections 2\n0->1 id 1 size 10\n", "Connections = 2, but the file has 1"),
        ("Nodes 4\nConnections 1\n0->9 id 1 size 10\n", "x.cm line 3, dst = 9: must be a host id below 4"),
        (
            "Nodes 4\nConnections 3\nTriggers 1\n0->1 id 1 size 10 send_done_trigger 1\n"
            "2->1 id 2 size 10 send_done_trigger 1\n1->3 id 3 trigger 1 size 10\ntrigger id 1 oneshot\n",
            "x.cm line 7: oneshot trigger 1 has 2 activators",
        ),
        (
            "Nodes 4\nConnections 2\nTriggers 1\n0->1 id 1 size 10 send_done_trigger 1\n"
            "1->3 id 3 trigger 1 size 10\ntrigger id 1 barrier 2\n",
            "barrier 1 fires after 2 activations but has 1 activators",
        ),
        (
            "Nodes 4\nConnections 2\nTriggers 1\n0->1 id 1 size 10 send_done_trigger 1\n"
            "1->3 id 3 trigger 1 size 10\ntrigger id 1 multishot\n",
            "trigger 1 is multishot",
        ),
        (
            "Nodes 4\nConnections 1\nFailures 1\n0->1 id 1 size 10\n",
            "x.cm line 3: 'Failures' is not a connection matrix line",
        ),
        ("Nodes 4\nConnections 1\n0->1 id 1 start 1 trigger 2 size 10\n", "both start and trigger"),
    ],
)
def test_htsim_cm_errors_name_the_line_and_field(text: str, message: str) -> None:
    with pytest.raises(FormatError, match=None) as info:
        htsim.parse_cm(text, "x.cm")
    assert message in str(info.value)


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (
            ("Radix_Up 2\nDownlink_Latency", "Radix_Up 2\nFoo 1\nDownlink_Latency"),
            "k4.topo line 9: 'Foo' is not an htsim fat-tree key",
        ),
        (
            ("Radix_Down 4\n", "Radix_Down 4\nQueue_Down 100\n"),
            "k4.topo line 18, Queue_Down = '100': per-port queue sizes",
        ),
        (("Tiers 3", "Tiers 4"), "spraylab builds 2- or 3-tier fat-trees"),
        (
            ("Tier 2\nRadix_Down 4", "Tier 2\nRadix_Down 8"),
            "k4.topo line 17, Radix_Down = 8: the tiers below give 4",
        ),
        (
            ("Uplink_Latency_ns 1000\nTier 1", "Uplink_Latency_ns 1000\nSwitch_Latency_ns 300\nTier 1"),
            "Switch_Latency_ns",
        ),
        (
            ("Radix_Up 2\nDownlink_Latency", "Radix_Up 2\nOversubscribed 2\nDownlink_Latency"),
            "contradicts Radix_Down 2 / Radix_Up 2",
        ),
    ],
)
def test_htsim_topo_errors_name_the_line_and_key(edit: tuple[str, str], message: str) -> None:
    text = K4_TOPO.replace(*edit, 1)
    assert text != K4_TOPO
    with pytest.raises(FormatError) as info:
        htsim.build_fabric(htsim.parse_topo(text, "k4.topo"))
    assert message in str(info.value)


def test_htsim_nodes_must_match_the_fabric(tmp_path: Path) -> None:
    (tmp_path / "m.cm").write_text("Nodes 16\nConnections 1\n0->1 id 1 size 10\n")
    with pytest.raises(ScenarioError) as info:
        validate({"topology": _leaf_spine(), "workload": {"kind": "flows", "file": str(tmp_path / "m.cm")}})
    assert "m.cm: Nodes 16, but the topology has 8 hosts" in str(info.value)


# --- ns-3 ------------------------------------------------------------------------------------


def test_ns3_example_fabric_and_host_numbering() -> None:
    """topology.txt: nodes 0-3 are switches (0, 1 carry hosts: ToRs; 2, 3 only link ToRs:
    tier 2), hosts are nodes 4-11 and become hosts 0-7; 100 Gb/s, 0.001 ms = 1 us links."""
    scenario = Scenario.load(EXAMPLES / "ns3_leaf_spine.toml")
    fabric = build_fabric(scenario.topology)
    assert fabric.n_hosts == 8
    assert fabric.switch_tier == {"s0": 1, "s1": 1, "s2": 2, "s3": 2}
    assert fabric.host_tor == ["s0"] * 4 + ["s1"] * 4
    assert scenario.topology.host_of == {4 + i: i for i in range(8)}
    assert {link.delay_ps for link in fabric.links} == {1_000_000}
    rows = scenario.workload[0].flow_rows
    assert (rows[0].src, rows[0].dst, rows[0].size_bytes, rows[0].start_ps) == (4, 8, 300_000, 1_000_000)
    flows = run(scenario).flows
    # node 4 -> node 8 is host 0 -> host 4; the 10 us incast goes to node 4 = host 0
    assert list(flows["src"]) == [0, 1, 2, 3, 4, 5] and list(flows["dst"]) == [4, 5, 6, 7, 0, 0]
    assert list(flows["start_ps"]) == [1_000_000, 1_000_000, 2_000_000, 2_000_000, 10_000_000, 10_000_000]
    assert flows["completed"].all()


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("4 8 3 100 300000 0.000001\n", None),
        ("4 8 2 100 300000 0.000001\n", "f.txt line 3, pg = 2: differs from pg 3 on f.txt line 2"),
        ("4 8 3 100 big 0.000001\n", "f.txt line 3, size = 'big': must be a whole number"),
        ("4 8 3 100 300000\n", "f.txt line 3: a flow line reads 'src dst pg dport size start_s'"),
        ("4 8 3 100 300000 -1\n", "f.txt line 3, start_s = '-1'"),
    ],
)
def test_ns3_flow_errors_name_the_line_and_column(line: str, message: str | None) -> None:
    text = "2\n4 8 3 100 300000 0.000001\n" + line
    if message is None:
        assert len(ns3.parse_flows(text, "f.txt")) == 2
        return
    with pytest.raises(FormatError) as info:
        ns3.parse_flows(text, "f.txt")
    assert message in str(info.value)


def test_ns3_flow_to_a_switch_is_refused(tmp_path: Path) -> None:
    (tmp_path / "flow.txt").write_text("1\n4 1 3 100 1000 0\n")
    data = {
        "topology": {"kind": "imported", "format": "ns3", "file": str(EXAMPLES / "ns3" / "topology.txt")},
        "workload": {"kind": "flows", "format": "ns3", "file": str(tmp_path / "flow.txt")},
    }
    with pytest.raises(ScenarioError) as info:
        validate(data)
    assert "flow.txt line 2, dst = 1: not a host of the topology file" in str(info.value)


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (
            ("0 4 100Gbps 0.001ms 0", "0 4 100Gbps 0.001ms 0.01"),
            "t.txt line 3, error_rate = '0.01': per-link random loss",
        ),
        (("0 4 100Gbps", "0 4 fastGbps"), "t.txt line 3, rate = 'fastGbps'"),
        (("12 4 12", "12 4 13"), "the first line says 13 links, the file has 12"),
        (("1 11 100Gbps", "0 11 100Gbps"), None),  # a host on two ToRs? no: 11 moves to ToR 0, fine
        (("0 5 100Gbps", "4 5 100Gbps"), "t.txt line 4: links two hosts (4 and 5)"),
    ],
)
def test_ns3_topology_errors_name_the_line(edit: tuple[str, str], message: str | None) -> None:
    text = (EXAMPLES / "ns3" / "topology.txt").read_text().replace(*edit, 1)
    topo = ns3.parse_topology(text, "t.txt") if message is None else None
    if message is None:
        assert topo is not None and ns3.build_fabric(topo).host_tor.count("s0") == 5
        return
    with pytest.raises(FormatError) as info:
        ns3.build_fabric(ns3.parse_topology(text, "t.txt"))
    assert message in str(info.value)


# --- explicit flows --------------------------------------------------------------------------


def test_csv_example_waits_for_all_dependencies() -> None:
    """incast_then_reply.csv: flow 10 starts 2 us after the last of flows 0-3 is received."""
    flows = run(Scenario.load(EXAMPLES / "explicit_flows.toml")).flows.set_index("flow_id")
    assert flows.loc[4, "start_ps"] == flows.loc[0:3, "finish_ps"].max() + 2_000_000
    assert flows.loc[3, "start_ps"] == 1_000_000
    assert list(flows["size_bytes"]) == [256_000] * 4 + [1_000_000]


def test_inline_rows_and_parquet_give_the_same_flows(tmp_path: Path) -> None:
    rows = [
        {"src": 0, "dst": 5, "size": "100KB"},
        {"src": 1, "dst": 5, "size": 100_000, "start": "3us"},
        {"id": 7, "src": 5, "dst": 0, "size": "10KB", "after": [0, 1]},
    ]
    inline = validate({"topology": _leaf_spine(), "workload": {"kind": "flows", "rows": rows}})
    frame = pd.DataFrame(
        {"id": [0, 1, 7], "src": [0, 1, 5], "dst": [5, 5, 0], "size": ["100KB", "100000", "10KB"],
         "start": ["0", "3us", "0"], "after": ["", "", "0 1"]}
    )  # fmt: skip
    frame.to_parquet(tmp_path / "f.parquet", index=False)
    from_file = validate(
        {"topology": _leaf_spine(), "workload": {"kind": "flows", "file": str(tmp_path / "f.parquet")}}
    )
    key = [(r.flow_id, r.src, r.dst, r.size_bytes, r.start_ps, r.after) for r in inline.workload[0].flow_rows]
    assert key == [
        (r.flow_id, r.src, r.dst, r.size_bytes, r.start_ps, r.after) for r in from_file.workload[0].flow_rows
    ]
    assert key[2] == (7, 5, 0, 10_000, 0, (0, 1))


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ("src,dst,size\n0,1,10KB\n0,1,lots\n", "f.csv row 2, size = 'lots'"),
        ("src,dst,size\n0,99,10KB\n", "f.csv row 1, dst = 99: must be a host id below 8"),
        ("src,dst,size,weight\n0,1,1\n", "f.csv: column 'weight' is not a flow column"),
        ("src,size\n0,1\n", "f.csv: no 'dst' column"),
        (
            "id,src,dst,size,after\n0,0,1,1KB,1\n1,1,2,1KB,0\n",
            "the flows 0 -> 1 -> 0 wait for each other in a cycle",
        ),
        ("id,src,dst,size,after\n0,0,1,1KB,5\n", "f.csv row 1, after = 5: no flow has this id"),
        ("id,src,dst,size\n3,0,1,1KB\n3,1,2,1KB\n", "f.csv row 2, id = 3: repeats the id of f.csv row 1"),
        ("src,dst,size,start\n0,1,1KB,soon\n", "f.csv row 1, start = 'soon'"),
        ("src,dst,size\n0,0,1KB\n", "f.csv row 1, dst = 0: equals src"),
    ],
)
def test_csv_errors_name_the_row_and_column(tmp_path: Path, body: str, message: str) -> None:
    (tmp_path / "f.csv").write_text(body)
    with pytest.raises(ScenarioError) as info:
        Scenario.load(_scenario_file(tmp_path, "f.csv"))
    assert message in str(info.value)
    assert len(info.value.lines) == 1


def _scenario_file(tmp_path: Path, flow_file: str) -> Path:
    path = tmp_path / "s.toml"
    path.write_text(
        "[topology]\nkind = 'leaf_spine'\nleaves = 2\nspines = 2\nhosts_per_leaf = 4\n"
        f"[workload]\nkind = 'flows'\nfile = '{flow_file}'\n"
    )
    return path


def test_inline_row_errors_name_the_row_and_key() -> None:
    with pytest.raises(ScenarioError) as info:
        validate(
            {
                "topology": _leaf_spine(),
                "workload": {"kind": "flows", "rows": [{"src": 0, "dst": 1, "size": "1XB"}]},
            }
        )
    assert info.value.lines[0].startswith("workload.rows[0].size = '1XB':")


def test_file_path_is_relative_to_the_scenario_and_pinned_by_its_digest(tmp_path: Path) -> None:
    """The dumped scenario names the file absolutely with its SHA-256; a changed file is refused."""
    (tmp_path / "f.csv").write_text("src,dst,size\n0,1,10KB\n")
    scenario = Scenario.load(_scenario_file(tmp_path, "f.csv"))
    dumped = scenario.to_dict()["workload"][0]
    assert dumped["file"] == str((tmp_path / "f.csv").resolve()) and len(dumped["sha256"]) == 64
    assert "rows" not in dumped
    assert validate(scenario.to_dict()).workload[0].flow_rows == scenario.workload[0].flow_rows
    (tmp_path / "f.csv").write_text("src,dst,size\n0,1,20KB\n")
    with pytest.raises(ScenarioError) as info:
        validate(scenario.to_dict())
    assert "has changed since this scenario was written" in str(info.value)


def test_rows_and_file_are_exclusive(tmp_path: Path) -> None:
    (tmp_path / "f.csv").write_text("src,dst,size\n0,1,10KB\n")
    for workload in (
        {"kind": "flows"},
        {"kind": "flows", "file": str(tmp_path / "f.csv"), "rows": [{"src": 0, "dst": 1, "size": 1}]},
    ):
        with pytest.raises(ScenarioError) as info:
            validate({"topology": _leaf_spine(), "workload": workload})
        assert "give the flows either inline" in str(info.value)


def test_check_rows_accepts_a_dag() -> None:
    rows = read_csv(b"id,src,dst,size,after\n0,0,1,1,\n1,1,2,1,0\n2,2,3,1,0 1\n", "d.csv")
    check_rows(rows, 4, "d.csv")
    assert rows[2].after == (0, 1)


THREE_TIER_BUNDLED = """Nodes 16
Tiers 3
Podsize 8

Tier 0
Downlink_speed_Gbps 100
Radix_Down 4
Radix_Up 4
Downlink_Latency_ns 500

Tier 1
Downlink_speed_Gbps 100
Radix_Down 4
Radix_Up 4
Downlink_Latency_ns 500
Bundle 2

Tier 2
Downlink_speed_Gbps 100
Radix_Down 4
Downlink_Latency_ns 500
Bundle 2
"""


def test_htsim_bundle_belongs_to_the_tier_above(tmp_path: Path) -> None:
    """htsim reads a tier's Bundle as the parallel links on each of its down links. Here: 4 ToRs
    of 4 hosts, 2 pods; each ToR's 4 uplinks reach 2 aggregation switches of its pod twice (tier
    1's Bundle 2); each aggregation switch's 4 uplinks reach 2 cores twice (tier 2's Bundle 2);
    each core's 4 down ports reach one aggregation switch per pod twice."""
    path = tmp_path / "bundled.topo"
    path.write_text(THREE_TIER_BUNDLED)
    fabric = build_fabric(
        validate(
            {"topology": {"kind": "imported", "file": str(path)}, "workload": {"kind": "permutation"}}
        ).topology
    )
    tiers = Counter(fabric.switch_tier.values())
    assert (fabric.n_hosts, tiers[1], tiers[2], tiers[3]) == (16, 4, 4, 4)
    pairs = Counter(
        frozenset((link.a, link.b))
        for link in fabric.links
        if link.a in fabric.switch_tier and link.b in fabric.switch_tier
    )
    assert set(pairs.values()) == {2}  # every switch pair is a bundle of two
    assert len(fabric.links) == 16 + 4 * 4 + 4 * 4  # host links, ToR uplinks, aggregation uplinks
    path.write_text(
        THREE_TIER_BUNDLED.replace(
            "Radix_Up 4\nDownlink_Latency_ns 500\n\nTier 1",
            "Radix_Up 4\nDownlink_Latency_ns 500\nBundle 2\n\nTier 1",
        )
    )
    with pytest.raises(ScenarioError, match="tier 0 Bundle = 2"):
        validate({"topology": {"kind": "imported", "file": str(path)}, "workload": {"kind": "permutation"}})
