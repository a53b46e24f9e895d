"""Issue 27 items 5-7: peers' files read as their tools read them, exports their tools read,
and ACKs counted as htsim counts them.

The expectations come from the peers' own rules, restated here (not from what spraylab printed):

* htsim's UEC sink adds each data packet's size (payload + its 64 B header) to the bytes it has
  accepted and ACKs when they reach 16384 B (``UecSink::_bytes_unacked_threshold``);
* htsim's connection-matrix reader gives a connection without ``id`` flow id 0, after which
  its UEC driver keeps the dynamic id the sender took at construction: ids are handed out from
  10^9 in creation order, the static default flow first, then a sender and a sink per
  connection (so connection i gets 10^9 + 1 + 2i); an id of 0 or >= 10^9 in the file is refused;
* ns-3 (HPCC ``third.cc``) reads ``topology.txt`` and ``flow.txt`` as whitespace-separated
  number streams: the counts in the header, then exactly that many switch ids, links or flows,
  and nothing after them;
* HPCC's ``fct.txt`` line is ``sip dip sport dport size start_ns fct_ns standalone_fct_ns``
  (``%08x %08x %u %u %lu %lu %lu %lu``), printed when the sender's last ACK arrives; its
  standalone FCT is 2 x the one-way propagation delay + one payload-sized packet's
  serialization per hop + (size + per-packet headers) x 8 / the bottleneck rate, in integer ns;
  its ``fct_analysis.py`` keeps lines with ``$4 == 100`` and ``$6 + $7 < T``;
* htsim prints ``Flow ... finished at <us>`` when the sender has every byte acknowledged.
"""

from __future__ import annotations

import math
import re
import shutil
from pathlib import Path

import pytest
from cliutil import invoke
from simutil import make_net, run_flows, small_leaf_spine

from spraylab.formats import htsim, ns3
from spraylab.metrics.result import Result
from spraylab.model.scenario import Scenario, ScenarioError, validate
from spraylab.net.framing import DATA_OVERHEAD_BYTES
from spraylab.workload.flows import FlowSpec

EXAMPLES = Path(__file__).resolve().parents[1] / "src" / "spraylab" / "scenarios" / "imports"

# --- item 7: ACK rules as htsim counts them ---------------------------------------------------

HTSIM_MTU = 4150  # main_uec's default packet size
HTSIM_HEADER = 64  # UecSrc::_hdr_size
HTSIM_MSS = HTSIM_MTU - HTSIM_HEADER  # 4086 B of payload per packet
HTSIM_ACK_BYTES = 16384  # UecSink::_bytes_unacked_threshold


def _acks(rule: str, packets: int = 40, mss: int = HTSIM_MSS, threshold: int = HTSIM_ACK_BYTES) -> int:
    fabric = small_leaf_spine(leaves=2, spines=2, hosts_per_leaf=1)
    sim, net = make_net(
        fabric, cc="none", mtu_bytes=mss, ack_every=0, ack_every_bytes=threshold, ack_bytes=rule
    )
    assert run_flows(sim, net, [FlowSpec(0, 0, 1, packets * mss)]) == "done"
    qp = net.qps[0]
    assert qp.n_packets == packets and qp.retx_packets == 0
    return qp.rx.acks_sent


def _htsim_acks(packets: int, mss: int, threshold: int) -> int:
    """htsim's sink, restated: count size() = mss + 64 per packet, ACK at >= threshold (and
    the last packet)."""
    acks = counted = 0
    for i in range(packets):
        counted += mss + HTSIM_HEADER
        if counted >= threshold or i == packets - 1:
            acks, counted = acks + 1, 0
    return acks


def test_payload_rule_is_the_default_and_acks_every_fifth_htsim_sized_packet() -> None:
    """The default counts payload: 4 x 4086 < 16384, so every 5th packet (htsim: every 4th)."""
    assert _acks("payload") == math.ceil(40 / 5)
    assert validate({"workload": {"kind": "permutation", "size": "1MB"}}).transport.ack_bytes == "payload"


@pytest.mark.parametrize(("mss", "threshold"), [(HTSIM_MSS, HTSIM_ACK_BYTES), (4096, 16600), (1000, 5000)])
def test_htsim_rule_gives_htsims_ack_count(mss: int, threshold: int) -> None:
    assert _acks("htsim", 40, mss, threshold) == _htsim_acks(40, mss, threshold)


def test_wire_rule_counts_the_packets_link_bytes() -> None:
    per_ack = math.ceil(HTSIM_ACK_BYTES / (HTSIM_MSS + DATA_OVERHEAD_BYTES))
    assert per_ack == 4 and _acks("wire") == 40 // per_ack


def test_ack_bytes_is_left_out_of_scenarios_at_its_default() -> None:
    """Scenarios written before the option (and their store keys) stay as they were."""
    plain = validate({"workload": {"kind": "permutation", "size": "1MB"}}).to_dict()
    assert "ack_bytes" not in plain["transport"]
    htsim = validate(
        {
            "workload": {"kind": "permutation", "size": "1MB"},
            "transport": {"ack_every": 0, "ack_every_bytes": 16384, "ack_bytes": "htsim"},
        }
    ).to_dict()
    assert htsim["transport"]["ack_bytes"] == "htsim"


def test_ack_bytes_without_a_byte_threshold_is_refused() -> None:
    with pytest.raises(ScenarioError) as info:
        validate({"workload": {"kind": "permutation", "size": "1MB"}, "transport": {"ack_bytes": "wire"}})
    assert "transport.ack_bytes = 'wire'" in str(info.value)


# --- item 5: peers' files as their tools read them -------------------------------------------


def hpcc_topology(hosts: int = 4, counted_links: int | None = None, tail: bool = True) -> str:
    """HPCC's shape: 'nodes switches links', the switch ids, one link per line, and (like HPCC's
    own mix/topology.txt) a description of the format after the counted links."""
    links = [f"0 {h} 100Gbps 0.001ms 0" for h in range(1, hosts + 1)]
    head = f"{hosts + 1} 1 {len(links) if counted_links is None else counted_links}"
    description = ["", "First line: total node #, switch node #, link #", "src0 dst0 rate delay error_rate"]
    return "\n".join([head, "0", *links, *(description if tail else [])]) + "\n"


def hpcc_flows(flows: list[tuple[int, int, int, str]], counted: int | None = None, extra: int = 0) -> str:
    """HPCC's flow.txt shape: the count, 'src dst pg dport size start_s' lines (``extra`` more
    than counted, as HPCC's own mix/flow.txt has), then its format description."""
    lines = [f"{a} {b} 3 100 {size} {start}" for a, b, size, start in flows]
    lines += [f"1 2 3 100 {size} 9" for _, _, size, _ in flows[:extra]]
    tail = ["", "First line: # of flows", "src0 dst0 3 dst_port0 size0 start_time0"]
    return "\n".join([str(len(flows) if counted is None else counted), *lines, *tail]) + "\n"


def test_ns3_files_stop_after_the_counts_of_their_first_line() -> None:
    topo = ns3.parse_topology(hpcc_topology(), "topology.txt")
    assert len(topo.links) == 4 and topo.hosts == [1, 2, 3, 4] and topo.unread_from == 8
    read = ns3.read_flows(hpcc_flows([(1, 2, 1000, "2"), (3, 4, 1000, "2.5")], extra=3), "flow.txt")
    assert [(r.src, r.dst, r.start_ps) for r in read.rows] == [(1, 2, 2 * 10**12), (3, 4, 25 * 10**11)]
    assert read.dports == [100, 100] and read.unread_from == 4  # the 3 extra flows are never read
    assert ns3.read_flows("1\n1 2 3 100 10 0\n", "f.txt").unread_from is None


def test_htsim_connections_without_id_get_htsims_ids() -> None:
    """htsim's one.cm / bidir.cm shape (no ids): connection i keeps 10^9 + 1 + 2i (the default
    flow takes 10^9, then a sender and a sink per connection)."""
    text = "Nodes 16\nConnections 3\n0->13 start 0 size 2000000\n13->0 id 7 start 0 size 2000000\n1->2 start 0 size 10\n"
    rows = htsim.parse_cm(text, "bidir.cm").rows
    assert [r.flow_id for r in rows] == [1_000_000_001, 7, 1_000_000_005]


def test_a_workload_that_cannot_start_within_the_time_limit_is_an_error() -> None:
    late = {"workload": {"kind": "flows", "rows": [{"src": 0, "dst": 1, "size": "1MB", "start": "2s"}]}}
    with pytest.raises(ScenarioError) as info:
        validate(late)
    assert "workload.rows[0], start = 2s: at or after run.time_limit = 100ms" in str(info.value)
    assert validate({**late, "run": {"time_limit": "3s"}}).run.time_limit == 3 * 10**12
    with pytest.raises(ScenarioError) as info:
        validate({"workload": {"kind": "permutation", "size": "1MB", "start": "1s"}})
    assert "workload.start = 1s: at or after run.time_limit = 100ms" in str(info.value)


def _ns3_case(tmp_path: Path, flows: str, config: str | None = None) -> list[str]:
    (tmp_path / "topology.txt").write_text(hpcc_topology())
    (tmp_path / "flow.txt").write_text(flows)
    args = ["import", "ns3", "-t", "topology.txt", "-w", "flow.txt", "-o", "s.toml"]
    if config is not None:
        (tmp_path / "config.txt").write_text(config)
        args += ["-c", "config.txt"]
    made = invoke(*args, cwd=tmp_path)
    assert made.returncode == 0, made.stderr
    return [line.removeprefix("note: ") for line in made.stderr.splitlines() if line.startswith("note: ")]


def test_import_of_flows_at_two_seconds_sets_the_limit_and_runs_them(tmp_path: Path) -> None:
    """The regression: flows starting at 2 s ran against the default 100 ms limit and reported
    none finished, with the limit as their 'FCT'. The import now gives 2 s + 100 ms."""
    notes = _ns3_case(tmp_path, hpcc_flows([(1, 2, 100_000, "2"), (3, 4, 100_000, "2")], extra=2))
    assert any(n.startswith("run.time_limit = 2.1s: the last flow starts at 2s") for n in notes)
    assert any(n.startswith("flow.txt: lines 4-8 come after the flows") for n in notes)
    assert any(n.startswith("topology.txt: lines 8-9 come after the links") for n in notes)
    assert Scenario.load(tmp_path / "s.toml").run.time_limit == 2_100_000_000_000
    ran = invoke("run", "s.toml", "--out", "r", cwd=tmp_path)
    assert ran.returncode == 0, ran.stderr
    flows = Result.load(tmp_path / "r").flows
    assert flows["completed"].all() and (flows["fct_ps"] < 100 * 10**6).all()  # under 100 us, not 100 ms


HPCC_CONFIG = """ENABLE_QCN 1
PACKET_PAYLOAD_SIZE 1000
TOPOLOGY_FILE mix/topology.txt
FCT_OUTPUT_FILE mix/fct.txt
SIMULATOR_STOP_TIME 4.00
CC_MODE 3
L2_ACK_INTERVAL 1
BUFFER_SIZE 32
ERROR_RATE_PER_LINK 0.0000
LINK_DOWN 0 0 0
KMAX_MAP 3 25000000000 400 50000000000 800 100000000000 1600
"""


def test_import_reads_hpcc_config_and_notes_each_setting_that_does_not_carry_over(tmp_path: Path) -> None:
    notes = _ns3_case(tmp_path, hpcc_flows([(1, 2, 100_000, "2")]), HPCC_CONFIG)
    scenario = Scenario.load(tmp_path / "s.toml")
    # payload per packet, the switch's shared buffer (N MB = N x 2^20 B in third.cc), the stop time
    assert scenario.transport.mtu == 1000 and scenario.switch.buffer == 32 * 2**20
    assert scenario.run.time_limit == 4 * 10**12 and scenario.transport.ack_every == 1
    not_carried = [n for n in notes if "is not carried over" in n]
    assert [n.split(": ", 1)[1].split(" ", 1)[0] for n in not_carried] == [
        "ENABLE_QCN",
        "CC_MODE",
        "KMAX_MAP",
    ]
    assert "HPCC; spraylab runs transport.cc = 'dcqcn'" in not_carried[1]
    assert sum("-> " in n for n in notes) == 4  # the four mapped settings, one line each
    assert not any("FILE" in n or "LINK_DOWN" in n or "ERROR_RATE" in n for n in notes)


def test_import_without_config_names_the_transport_it_falls_back_to(tmp_path: Path) -> None:
    notes = _ns3_case(tmp_path, hpcc_flows([(1, 2, 100_000, "0")]))
    for text in (
        "transport.recovery = 'gbn'",
        "transport.cc = 'dcqcn'",
        "transport.mtu = 4096 B",
        "an ACK per packet",
    ):
        assert sum(text in n for n in notes) == 1, text
    assert not any(n.startswith("run.time_limit") for n in notes)  # flows at 0: the default stands


def _htsim_import(tmp_path: Path, *extra: str) -> list[str]:
    shutil.copy(EXAMPLES / "htsim" / "leaf_spine_2to1.topo", tmp_path / "f.topo")
    (tmp_path / "m.cm").write_text("Nodes 16\nConnections 1\n0->13 start 0 size 2000000\n")
    made = invoke(
        "import",
        "htsim",
        "-t",
        "f.topo",
        "-w",
        "m.cm",
        "--ignore",
        "Queue_Up,Queue_Down",
        *extra,
        cwd=tmp_path,
    )
    assert made.returncode == 0, made.stderr
    return [line.removeprefix("note: ") for line in made.stderr.splitlines() if line.startswith("note: ")]


def test_htsim_import_notes_uec_transport_mtu_and_ack_rule(tmp_path: Path) -> None:
    notes = _htsim_import(tmp_path)
    assert any(n.startswith("htsim's UEC transport") for n in notes)
    assert any(
        n.startswith("MTU: htsim's default packet is 4150 B (4086 B payload + 64 B header)") for n in notes
    )
    assert any(n.startswith("ACKs: htsim ACKs when the accepted packets reach 16384 B") for n in notes)
    matched = _htsim_import(
        tmp_path,
        *("--set", "transport.mtu=4086", "--set", "transport.ack_every=0"),
        *("--set", "transport.ack_every_bytes=16384", "--set", "transport.ack_bytes=htsim"),
    )
    assert not any(n.startswith(("MTU:", "ACKs:")) for n in matched)


# --- item 6: exports the peers' tools read -----------------------------------------------------

FCT_TXT_LINE = re.compile(
    r"^([0-9a-f]{8}) ([0-9a-f]{8}) (\d+) (\d+) (\d+) (\d+) (\d+) (\d+)$"
)  # %08x %08x %u %u %lu x4


def hpcc_standalone_ns(hops_delay_ns: list[int], hop_rates_bps: list[int], size: int, payload: int) -> int:
    """HPCC's qp_finish formula restated, with spraylab's framing as the per-packet header."""
    packets = -(-size // payload)
    wire = size + packets * DATA_OVERHEAD_BYTES if size % payload == 0 or size % payload >= 2 else None
    assert wire is not None
    tx = sum(payload * 8 * 10**9 // r for r in hop_rates_bps)
    return 2 * sum(hops_delay_ns) + tx + wire * 8 * 10**9 // min(hop_rates_bps)


def test_fct_export_is_hpccs_fct_txt_and_fct_analysis_selects_every_flow(tmp_path: Path) -> None:
    _ns3_case(
        tmp_path,
        hpcc_flows([(1, 2, 100_000, "0.000001"), (3, 4, 10, "0.000001"), (1, 2, 5000, "0.00001")]),
        "PACKET_PAYLOAD_SIZE 1000\n",
    )
    assert invoke("run", "s.toml", "--out", "r", cwd=tmp_path).returncode == 0
    out = invoke("export", "r", "-f", "fct", cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    flows = Result.load(tmp_path / "r").flows.set_index("flow_id")
    parsed = [FCT_TXT_LINE.match(line) for line in out.stdout.splitlines()]
    assert len(parsed) == 3 and all(parsed)
    rows = [m.groups() for m in parsed if m]
    # fct_analysis.py, type 0: awk '$4==100 && $6+$7<T {print $7/$8, $5}'
    selected = [r for r in rows if int(r[3]) == 100 and int(r[5]) + int(r[6]) < 3_000_000_000]
    assert len(selected) == 3
    by_start_size = {(int(r[5]), int(r[4])): r for r in rows}
    for fid, (start_ns, size, sport) in enumerate(
        [(1000, 100_000, 10000), (1000, 10, 10000), (10_000, 5000, 10001)]
    ):
        r = by_start_size[(start_ns, size)]
        src, dst = (1, 2) if fid != 1 else (3, 4)
        assert int(r[0], 16) == 0x0B000001 + src * 0x100 and int(r[1], 16) == 0x0B000001 + dst * 0x100
        assert int(r[2]) == sport  # HPCC numbers each pair's flows from 10000 in start order
        assert int(r[5]) + int(r[6]) == round(
            flows.loc[fid, "acked_ps"] / 1000
        )  # ends at the sender's last ACK
        assert flows.loc[fid, "acked_ps"] > flows.loc[fid, "finish_ps"]
        # two 1 us hops at 100 Gb/s, 1000 B payload per packet
        assert int(r[7]) == hpcc_standalone_ns([1000, 1000], [10**11, 10**11], size, 1000)
    assert hpcc_standalone_ns([1000, 1000], [10**11] * 2, 100_000, 1000) == 4000 + 160 + 8656


def test_htsim_export_finishes_at_the_senders_last_ack_as_htsims_tools_parse_it(tmp_path: Path) -> None:
    _htsim_import(tmp_path, "-o", "s.toml")
    assert invoke("run", "s.toml", "--out", "r", cwd=tmp_path).returncode == 0
    out = invoke("export", "r", "-f", "htsim", cwd=tmp_path)
    flows = Result.load(tmp_path / "r").flows
    (line,) = out.stdout.splitlines()
    # uet-htsim's validation/analysis_and_plotting.py reads r"finished at (\d+)"
    match = re.search(r"finished at (\d+)", line)
    assert match and int(match.group(1)) == flows.loc[0, "acked_ps"] // 10**6
    assert "flowId 1000000001 " in line  # m.cm has no id: htsim's own


# --- malformed input through the command line: exit 2, one error line naming key and value ----

NS3_TOPO = (
    "5 1 4\n0\n0 1 100Gbps 1000ns 0\n0 2 100Gbps 1000ns 0\n0 3 100Gbps 1000ns 0\n0 4 100Gbps 1000ns 0\n"
)
NS3_FLOWS = "2\n1 2 3 100 1000 0\n3 4 3 100 1000 0\n"
CM_HEAD = "Nodes 16\nConnections 1\n"


def _topo(old: str, new: str) -> dict[str, str]:
    text = NS3_TOPO.replace(old, new, 1)
    assert text != NS3_TOPO
    return {"topology.txt": text}


def _flows(text: str) -> dict[str, str]:
    return {"flow.txt": text}


def _cm(body: str, head: str = CM_HEAD) -> dict[str, str]:
    return {"m.cm": head + body}


def _config(text: str) -> dict[str, str]:
    return {"config.txt": text}


NS3 = ("import", "ns3", "-t", "topology.txt", "-w", "flow.txt")
NS3_CONFIG = (*NS3, "-c", "config.txt")
HTSIM = ("import", "htsim", "-t", "f.topo", "-w", "m.cm", "--ignore", "Queue_Up,Queue_Down")

# name: (args, files replacing the valid ones, what the error line must contain)
MALFORMED: dict[str, tuple[tuple[str, ...], dict[str, str], tuple[str, ...]]] = {
    # htsim connection matrices, by htsim's reader's rules
    "cm_id_zero": (HTSIM, _cm("0->5 id 0 start 0 size 10\n"), ("m.cm line 3, id = 0", "1..999999999")),
    "cm_id_dynamic": (HTSIM, _cm("0->5 id 1000000000 start 0 size 10\n"), ("id = 1000000000", "from 10^9")),
    "cm_trigger_without_id": (
        HTSIM,
        _cm(
            "0->5 id 1 start 0 size 10 send_done_trigger 1\n1->6 trigger 1 size 10\ntrigger id 1 oneshot\n",
            "Nodes 16\nConnections 2\nTriggers 1\n",
        ),
        ("m.cm line 5: no id", "started by a trigger"),
    ),
    "cm_id_negative": (HTSIM, _cm("0->5 id -1 start 0 size 10\n"), ("id = '-1'", "whole number")),
    "cm_no_size": (HTSIM, _cm("0->5 id 1 start 0\n"), ("m.cm line 3: no size",)),
    "cm_size_zero": (HTSIM, _cm("0->5 id 1 start 0 size 0\n"), ("size = '0'", ">= 1")),
    "cm_start_negative": (HTSIM, _cm("0->5 id 1 start -5 size 10\n"), ("start = '-5'", "microseconds")),
    "cm_start_word": (HTSIM, _cm("0->5 id 1 start soon size 10\n"), ("start = 'soon'",)),
    "cm_unknown_key": (
        HTSIM,
        _cm("0->5 id 1 start 0 size 10 prio 3\n"),
        ("prio = '3'", "allowed: id, start"),
    ),
    "cm_key_without_value": (HTSIM, _cm("0->5 id 1 start 0 size\n"), ("key 'size' has no value",)),
    "cm_dst_off_fabric": (HTSIM, _cm("0->99 id 1 start 0 size 10\n"), ("dst = 99", "below 16")),
    "cm_src_is_dst": (HTSIM, _cm("3->3 id 1 start 0 size 10\n"), ("dst = 3", "equals src")),
    "cm_duplicate_id": (
        HTSIM,
        _cm("0->5 id 4 start 0 size 10\n1->6 id 4 start 0 size 10\n", "Nodes 16\nConnections 2\n"),
        ("m.cm line 4, id = 4", "repeats the id of m.cm line 3"),
    ),
    "cm_connections_count": (
        HTSIM,
        _cm("0->5 id 1 start 0 size 10\n", "Nodes 16\nConnections 2\n"),
        ("Connections = 2", "has 1"),
    ),
    "cm_no_nodes": (HTSIM, _cm("0->5 id 1 start 0 size 10\n", "Connections 1\n"), ("no 'Nodes N' line",)),
    "cm_nodes_twice": (
        HTSIM,
        _cm("0->5 id 1 start 0 size 10\n", "Nodes 16\nNodes 16\nConnections 1\n"),
        ("Nodes is given twice",),
    ),
    "cm_unknown_trigger": (
        HTSIM,
        _cm("0->5 id 1 trigger 9 size 10\n"),
        ("trigger = 9", "no trigger line defines"),
    ),
    "cm_not_a_line": (
        HTSIM,
        _cm("flows go here\n"),
        ("m.cm line 3: 'flows' is not a connection matrix line",),
    ),
    "cm_late_start": (
        (*HTSIM, "--set", "run.time_limit=1us"),
        _cm("0->5 id 1 start 5 size 10\n"),
        ("m.cm line 3, start = 5us", "at or after run.time_limit = 1us"),
    ),
    # HPCC topology.txt
    "topo_head_two_numbers": (NS3, _topo("5 1 4", "5 1"), ("topology.txt line 1", "'nodes switches links'")),
    "topo_switch_count": (
        NS3,
        _topo("5 1 4\n0\n", "5 2 4\n0\n"),
        ("topology.txt line 2: 1 switch ids", "says 2"),
    ),
    "topo_switch_id_beyond": (NS3, _topo("5 1 4\n0\n", "5 1 4\n7\n"), ("switch id = 7", "below 5")),
    "topo_link_four_fields": (
        NS3,
        _topo("0 1 100Gbps 1000ns 0", "0 1 100Gbps 1000ns"),
        ("topology.txt line 3", "five fields"),
    ),
    "topo_too_few_links": (NS3, _topo("5 1 4", "5 1 5"), ("says 5 links, the file has 4",)),
    "topo_bad_rate": (NS3, _topo("0 1 100Gbps", "0 1 fastGbps"), ("rate = 'fastGbps'", "such as 100Gbps")),
    "topo_bad_delay": (
        NS3,
        _topo("0 1 100Gbps 1000ns", "0 1 100Gbps soon"),
        ("delay = 'soon'", "such as 1000ns"),
    ),
    "topo_error_rate": (
        NS3,
        _topo("0 1 100Gbps 1000ns 0", "0 1 100Gbps 1000ns 0.01"),
        ("error_rate = '0.01'", "topology.events"),
    ),
    "topo_self_link": (NS3, _topo("0 1 100Gbps", "1 1 100Gbps"), ("b = 1", "equals a")),
    "topo_node_beyond": (NS3, _topo("0 4 100Gbps", "0 9 100Gbps"), ("b = 9", "below 5")),
    "topo_empty": (NS3, {"topology.txt": ""}, ("topology.txt: too short",)),
    "topo_host_two_links": (NS3, _topo("0 4 100Gbps", "3 4 100Gbps"), ("links two hosts (3 and 4)",)),
    # HPCC flow.txt
    "flows_head_two_numbers": (
        NS3,
        _flows("2 2\n1 2 3 100 1000 0\n3 4 3 100 1000 0\n"),
        ("flow.txt line 1", "one number"),
    ),
    "flows_fewer_than_counted": (
        NS3,
        _flows("3\n1 2 3 100 1000 0\n3 4 3 100 1000 0\n"),
        ("says 3 flows, the file has 2",),
    ),
    "flows_five_fields": (NS3, _flows("1\n1 2 3 100 1000\n"), ("flow.txt line 2", "six fields")),
    "flows_two_pgs": (
        NS3,
        _flows("2\n1 2 3 100 1000 0\n3 4 2 100 1000 0\n"),
        ("pg = 2", "one data priority class"),
    ),
    "flows_size_zero": (NS3, _flows("1\n1 2 3 100 0 0\n"), ("size = '0'", ">= 1")),
    "flows_negative_start": (NS3, _flows("1\n1 2 3 100 1000 -2\n"), ("start_s = '-2'", ">= 0 in seconds")),
    "flows_to_a_switch": (
        NS3,
        _flows("1\n1 0 3 100 1000 0\n"),
        ("dst = 0", "not a host of the topology file"),
    ),
    "flows_bad_dport": (NS3, _flows("1\n1 2 3 http 1000 0\n"), ("dport = 'http'", "whole number")),
    "flows_empty": (NS3, _flows(""), ("flow.txt: empty",)),
    "flows_late_with_set_limit": (
        (*NS3, "--set", "run.time_limit=1s"),
        _flows("1\n1 2 3 100 1000 2\n"),
        ("flow.txt line 2, start = 2s", "run.time_limit = 1s"),
    ),
    # HPCC config.txt
    "config_bad_payload": (
        NS3_CONFIG,
        _config("PACKET_PAYLOAD_SIZE big\n"),
        ("config.txt line 1, PACKET_PAYLOAD_SIZE = 'big'", "whole number"),
    ),
    "config_zero_buffer": (NS3_CONFIG, _config("BUFFER_SIZE 0\n"), ("BUFFER_SIZE = '0'", ">= 1")),
    "config_negative_stop": (
        NS3_CONFIG,
        _config("SIMULATOR_STOP_TIME -1\n"),
        ("SIMULATOR_STOP_TIME = '-1'", "number >= 0"),
    ),
    "config_zero_stop": (
        NS3_CONFIG,
        _config("SIMULATOR_STOP_TIME 0\n"),
        ("SIMULATOR_STOP_TIME = '0'", "> 0 seconds"),
    ),
    "config_key_without_value": (
        NS3_CONFIG,
        _config("CC_MODE\n"),
        ("config.txt line 1: CC_MODE has no value",),
    ),
    "config_key_twice": (
        NS3_CONFIG,
        _config("CC_MODE 1\nCC_MODE 3\n"),
        ("config.txt line 2: CC_MODE is given twice",),
    ),
    "config_not_a_key": (NS3_CONFIG, _config("hello world\n"), ("'hello' is not a config key",)),
    "config_stop_before_flows": (
        NS3_CONFIG,
        {**_config("SIMULATOR_STOP_TIME 0.5\n"), **_flows("1\n1 2 3 100 1000 1\n")},
        ("start = 1s", "run.time_limit = 500ms"),
    ),
    "config_missing": (
        ("import", "ns3", "-t", "topology.txt", "-w", "flow.txt", "-c", "nope.txt"),
        {},
        ("nope.txt", "cannot read"),
    ),
    "config_for_htsim": (
        (*HTSIM, "-c", "config.txt"),
        _config("CC_MODE 1\n"),
        ("--config config.txt", "import ns3"),
    ),
    # the ACK rule
    "ack_bytes_unknown": (
        (
            *NS3,
            "--set",
            "transport.ack_bytes=frames",
            "--set",
            "transport.ack_every=0",
            "--set",
            "transport.ack_every_bytes=16384",
        ),
        {},
        ("transport.ack_bytes", "frames"),
    ),
    "ack_bytes_without_threshold": (
        (*NS3, "--set", "transport.ack_bytes=htsim"),
        {},
        ("transport.ack_bytes = 'htsim'", "ack_every_bytes = 0"),
    ),
}


def test_the_malformed_table_has_at_least_forty_import_cases() -> None:
    assert len(MALFORMED) >= 40


@pytest.mark.parametrize("name", list(MALFORMED))
def test_malformed_import_input_is_one_error_line(name: str, tmp_path: Path) -> None:
    args, files, expect = MALFORMED[name]
    shutil.copy(EXAMPLES / "htsim" / "leaf_spine_2to1.topo", tmp_path / "f.topo")
    valid = {"topology.txt": NS3_TOPO, "flow.txt": NS3_FLOWS, "m.cm": CM_HEAD + "0->5 id 1 start 0 size 10\n"}
    for file, text in {**valid, **files}.items():
        (tmp_path / file).write_text(text)
    got = invoke(*args, cwd=tmp_path)
    assert "Traceback" not in got.stdout + got.stderr, got.stderr
    assert got.returncode == 2, (got.returncode, got.stderr)
    lines = [line for line in got.stderr.splitlines() if line.strip() and not line.startswith("note:")]
    assert len(lines) == 1 and lines[0].startswith("error:"), lines
    for text in expect:
        assert text in lines[0], (text, lines[0])


def test_fct_export_of_a_run_whose_inputs_changed_is_one_error_line(tmp_path: Path) -> None:
    """HPCC's standalone FCT needs the run's fabric: when the imported files changed since the
    run, the fct layout refuses (exit 2) rather than write another formula's numbers."""
    _ns3_case(tmp_path, hpcc_flows([(1, 2, 10_000, "0")]))
    assert invoke("run", "s.toml", "--out", "r", cwd=tmp_path).returncode == 0
    (tmp_path / "topology.txt").write_text(hpcc_topology(hosts=4).replace("100Gbps", "200Gbps"))
    got = invoke("export", "r", "-f", "fct", cwd=tmp_path)
    assert got.returncode == 2 and "Traceback" not in got.stderr
    assert (
        got.stderr.startswith("error: --format fct: needs the run's fabric")
        and len(got.stderr.splitlines()) == 1
    )
    assert invoke("export", "r", "-f", "htsim", cwd=tmp_path).returncode == 0  # names only: a note


def test_export_of_a_run_without_acks_is_one_error_line(tmp_path: Path) -> None:
    """The fluid engine models no ACKs (acked_ps is empty): neither peer's completion exists."""
    _ns3_case(tmp_path, hpcc_flows([(1, 2, 10_000, "0")]))
    ran = invoke("run", "s.toml", "--out", "r", "--set", "run.engine=fluid", cwd=tmp_path)
    assert ran.returncode == 0, ran.stderr
    for layout in ("fct", "htsim"):
        got = invoke("export", "r", "-f", layout, cwd=tmp_path)
        assert got.returncode == 2 and len(got.stderr.splitlines()) == 1
        assert got.stderr.startswith(f"error: --format {layout}: the run has no acked_ps")
