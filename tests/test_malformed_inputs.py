"""Malformed input of every kind, through every command: exit code 2, exactly one ``error:`` line
that names the key and the value given (and what is allowed), never a traceback.

The house rule for bad input (COMMON rules, config.format_errors): the user learns from one line
what is wrong and how to fix it. Each case runs the real CLI entry point (``spraylab.cli.main``) in
this process, with its own working directory, so the table stays fast; the size-guard cases that
need a memory-limited child process are in tests/test_size_guard.py.
"""

from __future__ import annotations

import copy
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import tomli_w

from spraylab import cli

BASE: dict[str, Any] = {
    "topology": {"kind": "leaf_spine", "leaves": 2, "spines": 2, "hosts_per_leaf": 2},
    "lb": {"scheme": "ecmp"},
    "workload": {"kind": "permutation", "size": "64KB"},
    "run": {"seed": 1, "progress": False},
}
RAIL = {"kind": "rail", "servers": 2, "gpus_per_server": 2, "spines": 2}
EVENT = {"at": "5us", "link": ["leaf0", "spine0"], "action": "down"}


def scenario(**sections: Any) -> dict[str, Any]:
    """BASE with sections changed: a table with ``kind`` (or the workload) replaces the
    section, any other table is merged into it."""
    data = copy.deepcopy(BASE)
    for name, value in sections.items():
        if isinstance(value, dict) and "kind" not in value and name != "workload":
            data[name] = {**data.get(name, {}), **value}
        else:
            data[name] = value
    return data


def sweep(**top: Any) -> dict[str, Any]:
    """A small valid sweep file, with top-level keys changed."""
    data: dict[str, Any] = {**copy.deepcopy(BASE), "axes": {"lb.scheme": ["ecmp", "rps"]}}
    data.update(top)
    return data


@dataclass(frozen=True)
class Case:
    args: tuple[str, ...]  # "{s}" is the scenario (or sweep) file written from `content`
    expect: tuple[str, ...]  # what the error line must contain: the key, the value, what is allowed
    content: dict[str, Any] | str | bytes | None = None
    files: dict[str, dict[str, Any] | str | bytes] = field(default_factory=dict)  # more files in the cwd


def bad(expect: tuple[str, ...], **sections: Any) -> Case:
    """``spraylab run`` on BASE with ``sections`` changed."""
    return Case(("run", "{s}"), expect, scenario(**sections))


CASES: dict[str, Case] = {
    # --- topology: leaf_spine, fat_tree, rail, kinds --------------------------------------
    "leaf_spine_zero_leaves": bad(
        ("topology.leaves", "0", "greater than or equal to 1"), topology={"leaves": 0}
    ),
    "leaf_spine_hosts_per_leaf_word": bad(
        ("topology.hosts_per_leaf", "eight", "integer"), topology={"hosts_per_leaf": "eight"}
    ),
    "leaf_spine_rate_typo": bad(("topology.host_rate", "400Gbs", "Gbps"), topology={"host_rate": "400Gbs"}),
    "leaf_spine_uplink_rate_word": bad(
        ("topology.uplink_rate", "fast", "bps"), topology={"uplink_rate": "fast"}
    ),
    "leaf_spine_negative_parallel_links": bad(
        ("topology.links_per_spine", "-1", "greater than or equal to 1"), topology={"links_per_spine": -1}
    ),
    "leaf_spine_hosts_contradict": bad(
        ("topology.hosts", "6", "hosts_per_leaf x leaves = 4"), topology={"hosts": 6, "hosts_per_leaf": 2}
    ),
    "leaf_spine_delay_unit": bad(("topology.link_delay", "1 hour", "us"), topology={"link_delay": "1 hour"}),
    "fat_tree_odd_k": bad(("topology.k", "7", "even"), topology={"kind": "fat_tree", "k": 7}),
    "fat_tree_k_too_small": bad(
        ("topology.k", "0", "greater than or equal to 2"), topology={"kind": "fat_tree", "k": 0}
    ),
    "fat_tree_leaf_spine_key": bad(
        ("topology.leaves", "4", "unknown key", "k, rate, link_delay, events"),
        topology={"kind": "fat_tree", "k": 4, "leaves": 4},
    ),
    "rail_one_server": bad(
        ("topology.servers", "1", "greater than or equal to 2"), topology={**RAIL, "servers": 1}
    ),
    "rail_zero_gpus": bad(
        ("topology.gpus_per_server", "0", "greater than or equal to 1"),
        topology={**RAIL, "gpus_per_server": 0},
    ),
    "rail_nvlink_bytes_not_bits": bad(
        ("topology.nvlink_rate", "3.6TB", "Tbps"), topology={**RAIL, "nvlink_rate": "3.6TB"}
    ),
    "unknown_topology_kind": bad(
        ("topology.kind", "torus", "leaf_spine", "fat_tree", "rail"), topology={"kind": "torus"}
    ),
    # --- link events ----------------------------------------------------------------------
    "event_unknown_key_lists_event_keys": bad(
        ("topology.events[0].when", "5us", "unknown key", "at, link, action, rate_fraction, loss_rate"),
        topology={"events": [{**EVENT, "when": "5us"}]},
    ),
    "event_unknown_action": bad(
        ("topology.events[0].action", "explode", "'degrade', 'down' or 'loss'"),
        topology={"events": [{**EVENT, "action": "explode"}]},
    ),
    "event_rate_fraction_above_one": bad(
        ("topology.events[0].rate_fraction", "1.5", "less than or equal to 1"),
        topology={"events": [{**EVENT, "action": "degrade", "rate_fraction": 1.5}]},
    ),
    "event_certain_loss": bad(
        ("topology.events[0].loss_rate", "1", "less than 1"),
        topology={"events": [{**EVENT, "action": "loss", "loss_rate": 1}]},
    ),
    "event_link_one_end": bad(
        ("topology.events[0].link", "['leaf0']", "too few items"),
        topology={"events": [{**EVENT, "link": ["leaf0"]}]},
    ),
    "event_no_such_link": bad(
        ("topology.events.link", "spine9", "no such link", "names look like"),
        topology={"events": [{**EVENT, "link": ["leaf0", "spine9"]}]},
    ),
    "event_missing_link": bad(
        ("topology.events[0].link", "missing"), topology={"events": [{"at": "1us", "action": "down"}]}
    ),
    "event_time_word": bad(
        ("topology.events[0].at", "soon", "us"), topology={"events": [{**EVENT, "at": "soon"}]}
    ),
    # --- switch ---------------------------------------------------------------------------
    "switch_zero_buffer": bad(("switch.buffer", "0", "greater than 0"), switch={"buffer": 0}),
    "switch_negative_alpha": bad(("switch.dt_alpha", "-1", "greater than 0"), switch={"dt_alpha": -1}),
    "switch_ecn_pmax_above_one": bad(
        ("switch.ecn_pmax", "2", "less than or equal to 1"), switch={"ecn_pmax": 2}
    ),
    "switch_kmin_above_kmax": bad(
        ("switch.ecn_kmin_per_100g", "500000", "ecn_kmax_per_100g = 400000"),
        switch={"ecn_kmin_per_100g": "500KB", "ecn_kmax_per_100g": "400KB"},
    ),
    "switch_xon_above_xoff": bad(
        ("switch.pfc_xon", "200000", "pfc_xoff = 100000"), switch={"pfc_xon": "200KB", "pfc_xoff": "100KB"}
    ),
    "switch_unknown_key": bad(
        ("switch.red", "True", "unknown key", "buffer, dt_alpha"), switch={"red": True}
    ),
    "switch_lossless_word": bad(("switch.lossless", "maybe", "boolean"), switch={"lossless": "maybe"}),
    # --- transport, dcqcn -----------------------------------------------------------------
    "transport_unknown_cc": bad(
        ("transport.cc", "bbr", "allowed: 'dcqcn'", "'hpcc'", "'none'"), transport={"cc": "bbr"}
    ),
    "transport_unknown_recovery": bad(
        ("transport.recovery", "tcp", "'gbn', 'ideal', 'irn', 'sr' or 'uec'"), transport={"recovery": "tcp"}
    ),
    "transport_zero_mtu": bad(("transport.mtu", "0", "greater than 0"), transport={"mtu": 0}),
    "transport_bad_window": bad(("transport.window", "lots", "'bdp'"), transport={"window": "lots"}),
    "transport_zero_ack_every": bad(
        ("transport.ack_every", "0", "ack_every_bytes"), transport={"ack_every": 0}
    ),
    "transport_zero_rto": bad(("transport.rto", "0us", "greater than 0"), transport={"rto": "0us"}),
    "transport_zero_bitmap": bad(
        ("transport.ooo_bitmap", "0", "greater than or equal to 1"), transport={"ooo_bitmap": 0}
    ),
    "dcqcn_g_above_one": bad(
        ("transport.dcqcn.g", "2", "less than or equal to 1"), transport={"dcqcn": {"g": 2}}
    ),
    "dcqcn_zero_timer": bad(
        ("transport.dcqcn.alpha_timer", "0us", "greater than 0"), transport={"dcqcn": {"alpha_timer": "0us"}}
    ),
    "dcqcn_zero_min_rate": bad(
        ("transport.dcqcn.min_rate", "0Gbps", "greater than 0"), transport={"dcqcn": {"min_rate": "0Gbps"}}
    ),
    "dcqcn_unknown_key": bad(
        ("transport.dcqcn.kmin", "100KB", "unknown key", "alpha_timer"),
        transport={"dcqcn": {"kmin": "100KB"}},
    ),
    "dcqcn_negative_rounds": bad(
        ("transport.dcqcn.fast_recovery_rounds", "-1", "greater than or equal to 0"),
        transport={"dcqcn": {"fast_recovery_rounds": -1}},
    ),
    # --- lb -------------------------------------------------------------------------------
    "lb_unknown_scheme": bad(("lb.scheme", "teleport", "ecmp", "rps"), lb={"scheme": "teleport"}),
    "lb_dfs_bound_word": bad(
        ("lb.reorder_bound_packets", "lots", "'auto'"), lb={"scheme": "dfs", "reorder_bound_packets": "lots"}
    ),
    "lb_param_of_another_scheme": bad(
        ("lb.max_paths", "4", "unknown parameter of scheme 'rps'"), lb={"scheme": "rps", "max_paths": 4}
    ),
    "lb_flowlet_negative_gap": bad(
        ("lb.gap_us", "-5", "greater than"), lb={"scheme": "flowlet", "gap_us": -5}
    ),
    "lb_tor_assist_mode": bad(
        ("lb.mode", "teleport", "auto"), lb={"scheme": "tor_assist", "mode": "teleport"}
    ),
    "lb_drill_zero_choices": bad(("lb.d", "0", "greater than"), lb={"scheme": "drill", "d": 0}),
    # --- workloads, every kind ------------------------------------------------------------
    "permutation_size_unit": bad(
        ("workload.size", "64 parsecs", "KB"), workload={"kind": "permutation", "size": "64 parsecs"}
    ),
    "permutation_cross_tor_word": bad(
        ("workload.cross_tor", "yes please", "boolean"),
        workload={"kind": "permutation", "cross_tor": "yes please"},
    ),
    "incast_receiver_beyond_hosts": bad(
        ("workload.receiver", "99", "below 4"), workload={"kind": "incast", "receiver": 99, "senders": 2}
    ),
    "incast_zero_senders": bad(
        ("workload.senders", "0", "greater than or equal to 1"), workload={"kind": "incast", "senders": 0}
    ),
    "all_to_all_hosts_beyond_fabric": bad(
        ("workload.hosts", "99", "at most 4"), workload={"kind": "all_to_all", "hosts": 99}
    ),
    "all_to_all_negative_window": bad(
        ("workload.peers_in_flight", "-1", ">= 0"), workload={"kind": "all_to_all", "peers_in_flight": -1}
    ),
    "random_pairs_zero_flows": bad(
        ("workload.flows", "0", "greater than or equal to 1"), workload={"kind": "random_pairs", "flows": 0}
    ),
    "cdf_unknown_distribution": bad(
        ("workload.cdf", "bogus", "websearch"), workload={"kind": "cdf", "cdf": "bogus"}
    ),
    "cdf_load_above_one": bad(
        ("workload.load", "1.5", "less than or equal to 1"), workload={"kind": "cdf", "load": 1.5}
    ),
    "cdf_zero_duration": bad(
        ("workload.duration", "0s", "greater than 0"), workload={"kind": "cdf", "duration": "0s"}
    ),
    "collective_unknown": bad(
        ("workload.collective", "broadcast", "allreduce"),
        workload={"kind": "collective", "collective": "broadcast"},
    ),
    "collective_window_on_ring": bad(
        ("workload.peers_in_flight", "2", "only for collective = 'alltoall'"),
        workload={"kind": "collective", "collective": "allreduce", "peers_in_flight": 2},
    ),
    "moe_on_leaf_spine": bad(("workload.kind", "moe", "topology.kind = 'rail'"), workload={"kind": "moe"}),
    "moe_unknown_model": bad(
        ("workload.model", "gpt-5", "mixtral-8x7b"), topology=RAIL, workload={"kind": "moe", "model": "gpt-5"}
    ),
    "moe_two_skews": bad(
        ("workload.dirichlet_alpha", "zipf_s = 1.2", "give one skew"),
        topology=RAIL,
        workload={"kind": "moe", "zipf_s": 1.2, "dirichlet_alpha": 0.5},
    ),
    "moe_unknown_phase": bad(
        ("workload.phase", "middle", "'dispatch', 'combine' or 'both'"),
        topology=RAIL,
        workload={"kind": "moe", "phase": "middle"},
    ),
    "rail_alltoall_zero_chunk": bad(
        ("workload.chunk", "0", "greater than 0"),
        topology=RAIL,
        workload={"kind": "rail_alltoall", "chunk": 0},
    ),
    "rail_alltoall_unknown_strategy": bad(
        ("workload.strategy", "carrier_pigeon", "rails"),
        topology=RAIL,
        workload={"kind": "rail_alltoall", "strategy": "carrier_pigeon"},
    ),
    "workload_unknown_kind": bad(
        ("workload.kind", "mystery", "permutation", "incast"), workload={"kind": "mystery"}
    ),
    "workload_missing_kind": bad(
        ("workload", "missing 'kind'", "'incast', 'moe', 'permutation'"), workload={"size": "1MB"}
    ),
    "second_workload_bad": bad(
        ("workload[1].size", "-3", "negative", "KB"),
        workload=[{"kind": "permutation"}, {"kind": "random_pairs", "size": -3}],
    ),
    # --- run, output ----------------------------------------------------------------------
    "run_seed_word": bad(("run.seed", "one", "integer"), run={"seed": "one"}),
    "run_unknown_stop": bad(("run.stop", "never", "'workload' or 'time'"), run={"stop": "never"}),
    "run_negative_event_budget": bad(
        ("run.max_events", "-5", "greater than or equal to 0"), run={"max_events": -5}
    ),
    "run_zero_time_limit": bad(("run.time_limit", "0ms", "greater than 0"), run={"time_limit": "0ms"}),
    "run_allow_large_word": bad(("run.allow_large", "please", "boolean"), run={"allow_large": "please"}),
    "output_name_number": bad(("output.name", "5", "string"), output={"name": 5}),
    "output_unknown_key": bad(("output.format", "csv", "unknown key", "name, dir"), output={"format": "csv"}),
    "unknown_section": bad(("network", "unknown key", "topology, switch, transport"), network={"mtu": 9000}),
    # --- files ----------------------------------------------------------------------------
    "scenario_not_utf8": Case(
        ("run", "{s}"), ("not a text file", "0xff", "UTF-8"), b"[run]\nseed = 1 # \xff\xfe\n"
    ),
    "scenario_binary": Case(
        ("run", "{s}"), ("not a text file", "0x89"), b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR"
    ),
    "scenario_is_a_directory": Case(
        ("run", "adir"), ("adir", "cannot read scenario file", "directory"), files={"adir/x": ""}
    ),
    "scenario_not_toml": Case(("run", "{s}"), ("not valid TOML", "line 2"), "[topology]\nleaves = = 2\n"),
    "scenario_missing": Case(("run", "nope.toml"), ("nope.toml", "no such file or preset", "demo")),
    # --- --set ----------------------------------------------------------------------------
    "set_into_a_scalar": Case(
        ("run", "{s}", "--set", "run.seed.x=1"),
        ("run.seed.x", "1", "run.seed is the value 1", "not a section"),
        BASE,
    ),
    "set_past_the_list_end": Case(
        ("run", "{s}", "--set", "workload.3.size=1KB"),
        ("workload.3.size", "1KB", "1 entries", "index 0..0"),
        BASE,
    ),
    "set_into_empty_list": Case(
        ("run", "{s}", "--set", "topology.events.at=1us"), ("topology.events.at", "1us", "empty list"), BASE
    ),
    "set_bad_value": Case(
        ("run", "{s}", "--set", "transport.mtu=0"), ("transport.mtu", "0", "greater than 0"), BASE
    ),
    "set_no_equals": Case(
        ("run", "{s}", "--set", "transport.mtu"), ("--set", "transport.mtu", "key=value"), BASE
    ),
    "set_unknown_key": Case(
        ("run", "{s}", "--set", "transport.mtuu=9000"), ("transport.mtuu", "9000", "unknown key", "mtu"), BASE
    ),
    # --- size guard (the estimate, before anything is built) --------------------------------
    "run_too_large": bad(
        ("scenario too large", "1,000,000,000", "flows", "run.allow_large = true", "--allow-large"),
        workload={"kind": "random_pairs", "flows": 10**9},
    ),
    # --- compare --------------------------------------------------------------------------
    "compare_unknown_scheme": Case(
        ("compare", "{s}", "--lb", "ecmp,teleport"), ("--lb", "teleport", "allowed", "rps"), BASE
    ),
    "compare_bad_scheme_param": Case(
        ("compare", "{s}", "--lb", "dfs[reorder_bound_packets=0]"),
        ("lb.reorder_bound_packets", "0", "'auto'"),
        BASE,
    ),
    "compare_unknown_recovery": Case(
        ("compare", "{s}", "--lb", "ecmp/tcp"), ("--lb", "tcp", "gbn, ideal, irn, sr"), BASE
    ),
    "compare_unclosed_params": Case(
        ("compare", "{s}", "--lb", "dfs[max_paths=4"), ("--lb", "dfs[max_paths=4", "brackets"), BASE
    ),
    "compare_bad_scenario": Case(("compare", "{s}"), ("switch.buffer", "0"), scenario(switch={"buffer": 0})),
    "compare_sweep_options_on_scenario": Case(
        ("compare", "{s}", "--baseline", "ecmp"), ("--baseline", "sweep results directory"), BASE
    ),
    "compare_scenario_options_on_directory": Case(
        ("compare", "adir", "--lb", "rps"), ("adir", "--lb", "sweep results directory"), files={"adir/x": ""}
    ),
    "compare_not_a_store": Case(("compare", "adir"), ("adir", "sweep.json"), files={"adir/x": ""}),
    # --- sweep ----------------------------------------------------------------------------
    "sweep_unknown_top_key": Case(
        ("sweep", "{s}", "--dry-run"),
        ("parallel", "unknown key", "name, base, baseline, axes"),
        sweep(parallel=4),
    ),
    "sweep_no_axes": Case(
        ("sweep", "{s}", "--dry-run"), ("[axes]", "missing or empty", "lb.scheme"), {**BASE}
    ),
    "sweep_axis_not_list": Case(
        ("sweep", "{s}", "--dry-run"), ("axes.run.seed", "3", "non-empty list"), sweep(axes={"run.seed": 3})
    ),
    "sweep_axis_repeated_value": Case(
        ("sweep", "{s}", "--dry-run"),
        ("axes.run.seed", "[1, 1]", "repeated value"),
        sweep(axes={"run.seed": [1, 1]}),
    ),
    "sweep_axis_unknown_section": Case(
        ("sweep", "{s}", "--dry-run"),
        ("axes.net.mtu", "'net'", "topology, switch"),
        sweep(axes={"net.mtu": [1, 2]}),
    ),
    "sweep_axis_error_once_not_per_value": Case(
        ("sweep", "{s}", "--dry-run"),
        ("run.sedd = [1, 2, 3]", "unknown key", "seed"),
        sweep(axes={"run.sedd": [1, 2, 3]}),
    ),
    "sweep_axis_bad_value": Case(
        ("sweep", "{s}", "--dry-run"),
        ("axes: transport.mtu = 0", "greater than 0"),
        sweep(axes={"transport.mtu": [4096, 0]}),
    ),
    "sweep_base_missing": Case(
        ("sweep", "{s}", "--dry-run"),
        ("base = 'gone.toml'", "no such scenario file"),
        sweep(base="gone.toml"),
    ),
    "sweep_base_unreadable": Case(
        ("sweep", "{s}", "--dry-run"),
        ("base = 'base.toml'", "not a text file", "0xff"),
        sweep(base="base.toml"),
        files={"base.toml": b"[run]\nseed = \xff\n"},
    ),
    "sweep_base_not_toml": Case(
        ("sweep", "{s}", "--dry-run"),
        ("base = 'base.toml'", "not valid TOML"),
        sweep(base="base.toml"),
        files={"base.toml": "[run\n"},
    ),
    "sweep_file_not_utf8": Case(
        ("sweep", "{s}", "--dry-run"), ("not a text file", "0xfe"), b'name = "\xfe"\n'
    ),
    "sweep_unknown_executor": Case(
        ("sweep", "{s}", "--executor", "slurm"), ("--executor", "slurm", "local, ray"), sweep()
    ),
    "sweep_address_without_ray": Case(
        ("sweep", "{s}", "--address", "head:6379"), ("--address", "--executor ray"), sweep()
    ),
    "sweep_zero_jobs": Case(
        ("sweep", "{s}", "--jobs", "0"), ("--jobs", "'0'", "greater than or equal to 1"), sweep()
    ),
    "sweep_too_many_points": Case(
        ("sweep", "{s}", "--dry-run"),
        ("[axes]", "1,000,000 points", "100,000", "--allow-large"),
        sweep(
            axes={
                "run.seed": list(range(1, 101)),
                "run.max_events": list(range(100)),
                "workload.start": list(range(100)),
            }
        ),
    ),
    "sweep_point_too_large": Case(
        ("sweep", "{s}", "--dry-run"),
        ("point workload.flows=1000000000", "scenario too large", "--allow-large"),
        sweep(workload={"kind": "random_pairs"}, axes={"workload.flows": [10, 10**9]}),
    ),
    # --- report, list, demo, the command line itself --------------------------------------
    "report_no_directory": Case(("report", "gone"), ("gone", "no such directory")),
    "report_not_a_store": Case(("report", "adir"), ("adir", "sweep.json"), files={"adir/x": ""}),
    "list_unknown_option": Case(("list", "--verbose"), ("list", "No such option", "--verbose")),
    "demo_unknown_scheme": Case(("demo", "--lb", "teleport"), ("--lb", "teleport", "allowed", "ecmp")),
    "demo_no_scheme": Case(("demo", "--lb", ","), ("--lb", "at least one scheme")),
    "unknown_command": Case(("simulate",), ("No such command", "simulate", "run, compare")),
    "run_missing_argument": Case(("run",), ("run", "Missing argument", "scenario")),
    "run_unknown_option": Case(("run", "{s}", "--seed", "3"), ("No such option", "--seed"), BASE),
}


# --- issue 27: fluid settings, [monitor], flow files, studies, view ------------------------------


def _parquet(columns: dict[str, list[Any]], names: list[str] | None = None) -> bytes:
    """A Parquet file of ``columns`` (``names``: the column names as written, repeats allowed)."""
    import io

    import pyarrow as pa
    import pyarrow.parquet as pq

    table = pa.Table.from_arrays([pa.array(v) for v in columns.values()], names=names or list(columns))
    buf = io.BytesIO()
    pq.write_table(table, buf)
    return buf.getvalue()


FLUID = {"engine": "fluid"}
FLOWS_PQ = _parquet({"src": [0, 1], "dst": [1, 2], "size": [1000, 2000]})


def flows(file: str, content: str | bytes, **workload: Any) -> Case:
    """``spraylab run`` on BASE with a flows workload read from ``file``."""
    return Case(
        ("run", "{s}"), (), scenario(workload={"kind": "flows", "file": file, **workload}), {file: content}
    )


def flows_case(expect: tuple[str, ...], file: str, content: str | bytes) -> Case:
    case = flows(file, content)
    return Case(case.args, (f"workload.file = {file!r}", *expect), case.content, case.files)


STUDY = (
    'name = "s"\ntemplate = "page.md.j2"\n\n[[sweep]]\nname = "perm"\nvariants = ["ecmp/sr"]\n'
    '[sweep.topology]\nkind = "leaf_spine"\nleaves = 2\nspines = 2\nhosts_per_leaf = 2\n'
    '[sweep.workload]\nkind = "permutation"\nsize = "64KB"\n'
)


def study_case(command: str, claim: str, expect: tuple[str, ...]) -> Case:
    """``spraylab study COMMAND`` of a one-sweep study with one claim (TOML lines)."""
    args = ("study", command, "{s}") + (("--out", "store") if command == "run" else ())
    text = STUDY + '\n[[claim]]\nid = "c1"\nsweep = "perm"\ncompare = "<="\n' + claim
    return Case(args, ("claim c1", *expect), text, {"page.md.j2": "# {{ study.title }}\n"})


def view_case(expect: tuple[str, ...], **files: str | bytes) -> Case:
    """``spraylab view run`` of a result directory whose files are valid except ``files``."""
    valid: dict[str, str | bytes] = {
        "scenario.json": "{}",
        "summary.json": "{}",
        "flows.parquet": FLOWS_PQ,
        "links.parquet": FLOWS_PQ,
        "groups.parquet": FLOWS_PQ,
    }
    valid.update({name.replace("__", "."): content for name, content in files.items()})
    return Case(("view", "run"), expect, None, {f"run/{name}": content for name, content in valid.items()})


ISSUE_27_CASES: dict[str, Case] = {
    # fluid settings and the sections an engine would ignore
    "fluid_monitor_refused": bad(("monitor", "run.engine = 'fluid'", "'packet'"), run=FLUID, monitor={}),
    "l0_monitor_refused": bad(
        ("monitor", "run.engine = 'l0'"), run={"engine": "l0"}, monitor={"interval": "1us"}
    ),
    "l0_max_events_refused": bad(
        ("run.max_events = 5", "run.engine = 'l0'", "use 0"), run={"engine": "l0", "max_events": 5}
    ),
    "fluid_quantum_word": bad(("run.fluid_quantum", "soon"), run={**FLUID, "fluid_quantum": "soon"}),
    "fluid_quantum_negative": bad(("run.fluid_quantum", "-1"), run={**FLUID, "fluid_quantum": -1}),
    "fluid_solver_unknown": bad(
        ("run.fluid_solver", "gpu", "'auto', 'numpy', 'compiled' or 'numba'"),
        run={**FLUID, "fluid_solver": "gpu"},
    ),
    "fluid_acks_word": bad(("run.fluid_acks", "maybe", "boolean"), run={**FLUID, "fluid_acks": "maybe"}),
    "engine_unknown": bad(("run.engine", "analytic", "'packet', 'fluid'"), run={"engine": "analytic"}),
    "fluid_loss_event_refused": bad(
        ("topology.events.action = 'loss'", "fluid engine", "degrade, down"),
        run=FLUID,
        topology={"events": [{**EVENT, "action": "loss", "loss_rate": 0.1}]},
    ),
    "fluid_1e9_hosts_too_large": bad(
        ("scenario too large", "1,000,000,000 hosts", "--allow-large"),
        run=FLUID,
        topology={"kind": "leaf_spine", "hosts": 10**9},
    ),
    "fluid_1e8_flows_too_large": bad(
        ("scenario too large", "100,000,000 flows", "--allow-large"),
        run=FLUID,
        workload={"kind": "random_pairs", "flows": 10**8, "size": "1KB"},
    ),
    "l0_1e9_hosts_too_large": bad(
        ("scenario too large", "--allow-large"),
        run={"engine": "l0"},
        topology={"kind": "leaf_spine", "hosts": 10**9},
    ),
    "dt_alpha_inf": bad(("switch.dt_alpha", "inf", "finite"), switch={"dt_alpha": float("inf")}),
    "dt_alpha_nan": bad(("switch.dt_alpha", "nan", "finite"), switch={"dt_alpha": float("nan")}),
    "max_wall_s_inf": bad(("run.max_wall_s", "inf", "finite"), run={"max_wall_s": float("inf")}),
    "moe_zipf_inf": bad(
        ("workload.zipf_s", "inf", "finite"),
        topology=RAIL,
        workload={"kind": "moe", "zipf_s": float("inf")},
    ),
    "allgather_2_bytes": bad(
        ("workload.size = 2", "allgather of 4 ranks", "at least 4 bytes"),
        workload={"kind": "collective", "collective": "allgather", "size": "2B"},
    ),
    "allreduce_3_bytes_fluid": bad(
        ("workload.size = 3", "allreduce of 4 ranks", "at least 4 bytes"),
        run=FLUID,
        workload={"kind": "collective", "collective": "allreduce", "size": 3},
    ),
    "reducescatter_below_ranks": bad(
        ("workload.size = 2", "reducescatter of 3 ranks"),
        workload={"kind": "collective", "collective": "reducescatter", "size": 2, "hosts": 3},
    ),
    # [monitor]
    "monitor_interval_zero": bad(("monitor.interval", "0", "greater than 0"), monitor={"interval": 0}),
    "monitor_interval_word": bad(("monitor.interval", "often"), monitor={"interval": "often"}),
    "monitor_unknown_key": bad(
        ("monitor.every", "unknown key", "interval, ports, flows, switches"), monitor={"every": "1us"}
    ),
    "monitor_1ps_too_large": bad(("scenario too large", "--allow-large"), monitor={"interval": "1ps"}),
    "monitor_selector_float": bad(("monitor.ports", "1.5", "not a selector"), monitor={"ports": [1.5]}),
    "monitor_selector_bool": bad(("monitor.flows", "True", "not a selector"), monitor={"flows": [True]}),
    # flow files
    "csv_repeated_column": flows_case(
        ("column 'size' appears more than once",), "f.csv", "src,dst,size,size\n0,1,10,20\n"
    ),
    "csv_repeated_src": flows_case(
        ("column 'src' appears more than once",), "f.csv", "src,src,dst,size\n0,1,2,10\n"
    ),
    "csv_header_only": flows_case(("no flows", "at least one row"), "f.csv", "src,dst,size\n"),
    "csv_comments_only": flows_case(("no flows",), "f.csv", "src,dst,size\n# none yet\n\n"),
    "csv_fractional_size": flows_case(
        ("size = 1.5", "whole number of bytes"), "f.csv", "src,dst,size\n0,1,1.5\n"
    ),
    "csv_fractional_start": flows_case(
        ("start = 2.5", "whole number of picoseconds"), "f.csv", "src,dst,size,start\n0,1,10,2.5\n"
    ),
    "csv_too_many_rows": flows_case(
        ("1,000,001 rows exceed", "1,000,000", "--allow-large"),
        "f.csv",
        "src,dst,size\n" + "0,1,1\n" * 1_000_001,
    ),
    "parquet_float_size": flows_case(
        ("size = 1000.5", "whole number of bytes"),
        "f.parquet",
        _parquet({"src": [0], "dst": [1], "size": [1000.5]}),
    ),
    "parquet_float_start": flows_case(
        ("start = 0.25", "whole number of picoseconds"),
        "f.parquet",
        _parquet({"src": [0], "dst": [1], "size": [1000], "start": [0.25]}),
    ),
    "parquet_no_rows": flows_case(
        ("no flows",),
        "f.parquet",
        _parquet({"src": [], "dst": [], "size": []}),
    ),
    "parquet_repeated_column": flows_case(
        ("column 'size' appears more than once",),
        "f.parquet",
        _parquet({"a": [0], "b": [1], "c": [10], "d": [20]}, names=["src", "dst", "size", "size"]),
    ),
    "htsim_no_connections": flows_case(("no flows",), "f.cm", "Nodes 4\nConnections 0\n"),
    "ns3_no_flows": Case(
        ("run", "{s}"),
        ("workload.file = 'flow.txt'", "no flows"),
        scenario(workload={"kind": "flows", "file": "flow.txt", "format": "ns3"}),
        {"flow.txt": "0\n"},
    ),
    # studies: claims are checked before anything runs
    "study_run_unknown_metric": study_case(
        "run", 'metric = "completion_pss"\nvalue = 1\n', ("completion_pss", "did you mean 'completion_ps'")
    ),
    "study_check_unknown_metric": study_case(
        "check", 'metric = "slowdown_men"\nvalue = 1\n', ("slowdown_men", "did you mean 'slowdown_mean'")
    ),
    "study_unknown_operand": study_case(
        "run", 'metric = "completion_ps - fct_p5_ps"\nvalue = 1\n', ("'fct_p5_ps' is not a metric",)
    ),
    "study_unknown_reference_metric": study_case(
        "run",
        'metric = "completion_ps"\nreference = {metric = "incast_bund_ps"}\n',
        ("reference.metric", "incast_bund_ps", "incast_bound_ps"),
    ),
    # view: a result directory whose files are damaged
    "view_truncated_summary": view_case(
        ("summary.json", "not valid JSON"), summary__json='{"flows": 4, "fct'
    ),
    "view_summary_not_an_object": view_case(("summary.json", "expected an object"), summary__json="[1, 2]"),
    "view_empty_scenario": view_case(("scenario.json", "not valid JSON"), scenario__json=""),
    "view_summary_not_utf8": view_case(("summary.json", "not valid JSON"), summary__json=b"\xff\xfe{}"),
    "view_truncated_flows": view_case(
        ("flows.parquet", "not a readable Parquet"), flows__parquet=FLOWS_PQ[:40]
    ),
    "view_truncated_links": view_case(
        ("links.parquet", "not a readable Parquet"), links__parquet=FLOWS_PQ[: len(FLOWS_PQ) // 2]
    ),
    "view_groups_not_parquet": view_case(
        ("groups.parquet", "not a readable Parquet"), groups__parquet="a,b\n1,2\n"
    ),
}
CASES.update(ISSUE_27_CASES)


def write(path: Path, content: dict[str, Any] | str | bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(content, bytes):
        path.write_bytes(content)
    elif isinstance(content, str):
        path.write_text(content)
    else:
        path.write_text(tomli_w.dumps(content))


def spraylab(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    """The CLI entry point as the ``spraylab`` script runs it, in this process."""
    argv = sys.argv
    sys.argv = ["spraylab", *args]
    try:
        with pytest.raises(SystemExit) as stop:
            cli.main()
    finally:
        sys.argv = argv
    out = capsys.readouterr()
    return stop.value.code, out.out, out.err


def test_the_table_covers_every_section_and_command() -> None:
    """The issue asks for at least 60 cases across every section and every command."""
    assert len(CASES) >= 60
    commands = {case.args[0] for case in CASES.values()}
    assert {"run", "compare", "sweep", "report", "list", "demo"} <= commands
    text = " ".join(" ".join(case.expect) for case in CASES.values())
    for section in (
        "topology.",
        "events",
        "switch.",
        "transport.",
        "dcqcn.",
        "lb.",
        "workload.",
        "run.",
        "output.",
    ):
        assert section in text, section
    kinds = {
        c.content["workload"]["kind"]
        for c in CASES.values()
        if isinstance(c.content, dict)
        and isinstance(c.content.get("workload"), dict)
        and "kind" in c.content["workload"]
    }
    assert {
        "permutation",
        "incast",
        "all_to_all",
        "random_pairs",
        "cdf",
        "collective",
        "moe",
        "rail_alltoall",
    } <= kinds


@pytest.mark.parametrize("name", list(CASES))
def test_malformed_input_is_one_error_line(
    name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    case = CASES[name]
    monkeypatch.chdir(tmp_path)
    for file, content in case.files.items():
        write(tmp_path / file, content)
    if case.content is not None:
        write(tmp_path / "input.toml", case.content)
    args = [arg.replace("{s}", "input.toml") for arg in case.args]
    code, out, err = spraylab(args, capsys)
    assert "Traceback" not in out + err, err
    assert code == 2, (code, out, err)
    lines = [line for line in (out + err).splitlines() if line.strip()]
    assert len(lines) == 1, lines
    assert lines[0].startswith("error:"), lines
    for text in case.expect:
        assert text in lines[0], (text, lines[0])


def test_ray_failing_to_start_is_one_error_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Whatever ray.init raises (here a TimeoutError, which the old code let through), the sweep
    ends with one line naming the executor and Ray's reason."""
    ray = pytest.importorskip("ray")

    def fail(*args: Any, **kwargs: Any) -> None:
        raise TimeoutError("timed out waiting for the GCS\nmore detail")

    monkeypatch.setattr(ray, "init", fail)
    monkeypatch.setattr(ray, "is_initialized", lambda: False)
    monkeypatch.chdir(tmp_path)
    write(tmp_path / "input.toml", sweep())
    code, out, err = spraylab(
        ["sweep", "input.toml", "--executor", "ray", "--no-progress", "--out", "store"], capsys
    )
    assert "Traceback" not in out + err
    assert code == 2, (code, out, err)
    errors = [line for line in err.splitlines() if line.strip()]
    assert errors == [
        "error: --executor ray: cannot start or reach a local Ray instance: timed out waiting for the GCS"
    ]


def test_unreadable_sweep_base_is_one_error_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A base scenario the process may not read (permission bits do not stop root, so the read
    itself is made to fail) is named with the reason, in one line."""
    monkeypatch.chdir(tmp_path)
    write(tmp_path / "base.toml", BASE)
    write(tmp_path / "input.toml", sweep(base="base.toml"))
    read_text = Path.read_text

    def guarded(self: Path, *args: Any, **kwargs: Any) -> str:
        if self.name == "base.toml":
            raise PermissionError(13, "Permission denied", str(self))
        return read_text(self, *args, **kwargs)

    monkeypatch.setattr(Path, "read_text", guarded)
    code, out, err = spraylab(["sweep", "input.toml", "--dry-run"], capsys)
    assert code == 2 and "Traceback" not in out + err
    lines = [line for line in (out + err).splitlines() if line.strip()]
    assert len(lines) == 1, lines
    assert "base = 'base.toml'" in lines[0] and "Permission denied" in lines[0], lines[0]
