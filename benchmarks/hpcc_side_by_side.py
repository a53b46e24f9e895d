"""HPCC side by side with its reference implementations: fairness of a 16:1 incast of 8 MB flows
into one 400 Gb/s host, with two base RTTs (8 senders on the receiver's leaf, 8 across the spine)
and with one (16 senders, each on its own leaf), as Jain's index over the 16 flows' throughputs
(size / FCT) on every side.

References (neither is fetched nor built by this script; each binary is an argument):

* ``--ns3``: the HPCC ns-3 model (``alibaba-edu/High-Precision-Congestion-Control``,
  ``simulation/``), its ``scratch/third`` built as its README says (``./waf configure``; with a
  newer gcc, ``CXXFLAGS="-std=c++11 -fpermissive -w"`` and only the modules ``third`` needs:
  ``--enable-modules=point-to-point,applications,internet,network,core``). Its shared libraries
  are looked up in the binary's ``build/`` directory (``--ns3-lib`` to override). It runs with
  the configuration its ``run.py`` writes for ``--cc hp --bw 400``: ``RATE_AI`` = 10 x 400 / 25
  = 160 Mb/s, ``MIN_RATE`` 1000 Mb/s, ``U_TARGET`` 0.95, ``GLOBAL_T 1``, ``HAS_WIN 1``,
  ``VAR_WIN 1``, ``FAST_REACT 1``, ``INT_MULTI`` = 400 / 25, ``BUFFER_SIZE`` = 16 x 400 / 50 MB,
  an ACK per packet, PFC on; ``MI_THRESH`` (maxStage) both at its ``run.py`` default 0 and at
  5 (the paper's and spraylab's default); ``PACKET_PAYLOAD_SIZE`` both at its ``run.py``
  default 1000 B and at spraylab's 4096 B.
* ``--htsim`` (optional): Broadcom ``csg-htsim``'s ``htsim_hpcc`` (``sim/datacenter/
  main_hpcc.cpp``, ``sim/hpcc.cpp``). Its driver builds only its default 3-tier fat-tree and fixes
  HPCC's ``T`` at 12 us, so the binary must have two options added to ``main_hpcc.cpp``: ``-topo
  FILE`` (load a ``.topo`` file with ``FatTreeTopology::load``, as its ``main_eqds.cpp`` does) and
  ``-hpcc_T US`` (set the static ``HPCCSrc::_T``); it is given spraylab's ``T``. Its other HPCC
  settings are its own (``hpcc.cpp``: eta 0.95, maxStage 5, ``W_AI`` one MSS, ``U`` starting at
  eta); lossless input queues with PFC thresholds far above the burst (``-q 4000
  -pfc_thresholds 3000 3500`` packets: its default 15-packet queue overflows at 400 Gb/s).

spraylab runs the same fabric (``spraylab import htsim`` of the ``.topo``/``.cm`` this script
writes: 400 Gb/s links of 1 us, 2 spines, ECMP, lossless) with ``transport.cc = "hpcc"`` and
``transport.hpcc.max_stage`` and ``transport.mtu`` as the reference run it is compared with.
FCT: ns-3's ``fct.txt`` (the sender's queue pair completes), htsim's ``finished at`` (every byte
acknowledged), spraylab's ``acked_ps - start_ps`` (every byte acknowledged).

Usage::

    python benchmarks/hpcc_side_by_side.py --ns3 /path/to/simulation/build/scratch/third \\
        [--htsim /path/to/htsim_hpcc] [--work /tmp/hpcc-side] [--out benchmarks/hpcc_side_by_side]

It writes ``<out>.json`` (every flow's FCT, every command) and ``<out>.md`` (the table).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import textwrap
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from nscc_side_by_side import _check  # this directory's script

from spraylab.metrics.maxmin import jain_index

FLOW_BYTES = 8_000_000
RATE_GBPS = 400
LINK_DELAY_NS = 1000
SPINES = 2
RECEIVER = 0
JAIN_TARGET = 0.95  # issue 28's bound, the validation claims hpcc-fair-incast-*


@dataclass(frozen=True)
class Case:
    """A leaf-spine of ``leaves`` x ``hosts_per_leaf`` hosts (host ``h`` on leaf
    ``h // hosts_per_leaf``, as htsim numbers them) and the incast's senders."""

    name: str
    leaves: int
    hosts_per_leaf: int
    senders: tuple[int, ...]
    what: str

    @property
    def hosts(self) -> int:
        return self.leaves * self.hosts_per_leaf

    def near(self, host: int) -> bool:
        """On the receiver's leaf (half the base RTT of a sender across the spine)."""
        return host // self.hosts_per_leaf == RECEIVER // self.hosts_per_leaf


CASES = [
    # spraylab's validation case incast_16 has this fabric (2 x 16 hosts, 2 spines) with 16
    # random senders; here exactly 8 near and 8 far
    Case(
        "two_rtt",
        2,
        16,
        tuple(range(1, 9)) + tuple(range(16, 24)),
        "8 senders on the receiver's leaf, 8 across",
    ),
    # every sender alone on its leaf (spraylab's incast_16_one_rtt has one host per leaf; htsim's
    # .topo needs a ToR radix of at least its 2 uplinks, so two, the second idle)
    Case("one_rtt", 17, 2, tuple(range(2, 34, 2)), "16 senders, each on its own leaf across the spine"),
]


# --- inputs ------------------------------------------------------------------------------------


def htsim_topo(case: Case) -> str:
    """The case's fabric as an htsim 2-tier ``.topo`` (spraylab's importer reads it too)."""
    return "\n".join(
        [
            f"Nodes {case.hosts}",
            "Tiers 2",
            f"Podsize {case.hosts}",
            "",
            "Tier 0",
            f"Downlink_speed_Gbps {RATE_GBPS}",
            f"Radix_Down {case.hosts_per_leaf}",
            f"Radix_Up {SPINES}",
            f"Downlink_Latency_ns {LINK_DELAY_NS}",
            "Switch_Latency_ns 0",
            # htsim's oversubscription is the ToR's down radix over its up radix (equal rates)
            f"Oversubscribed {max(1, case.hosts_per_leaf // SPINES)}",
            "",
            "Tier 1",
            f"Downlink_speed_Gbps {RATE_GBPS}",
            f"Radix_Down {case.leaves}",
            f"Downlink_Latency_ns {LINK_DELAY_NS}",
            "Switch_Latency_ns 0",
            "",
        ]
    )


def htsim_cm(case: Case) -> str:
    lines = [f"Nodes {case.hosts}", f"Connections {len(case.senders)}"]
    lines += [f"{s}->{RECEIVER} start 0 size {FLOW_BYTES}" for s in case.senders]
    return "\n".join(lines) + "\n"


def ns3_topology(case: Case) -> str:
    """``third.cc``'s topology file: node and switch counts, the switch ids, one link a line
    (hosts 0..N-1, then the leaves, then the spines)."""
    leaf0 = case.hosts
    spine0 = leaf0 + case.leaves
    links = [f"{h} {leaf0 + h // case.hosts_per_leaf}" for h in range(case.hosts)]
    links += [f"{leaf0 + leaf} {spine0 + s}" for leaf in range(case.leaves) for s in range(SPINES)]
    switches = " ".join(str(i) for i in range(leaf0, spine0 + SPINES))
    rows = [f"{link} {RATE_GBPS}Gbps {LINK_DELAY_NS / 1e6}ms 0" for link in links]
    return f"{spine0 + SPINES} {case.leaves + SPINES} {len(links)}\n{switches}\n" + "\n".join(rows) + "\n"


def ns3_flows(case: Case) -> str:
    # src dst priority-group dport bytes start(s); the model's examples start at 2 s
    return f"{len(case.senders)}\n" + "".join(
        f"{s} {RECEIVER} 3 100 {FLOW_BYTES} 2.0\n" for s in case.senders
    )


def ns3_config(case: Case, mtu: int, max_stage: int, tag: str) -> str:
    """The configuration ``run.py --cc hp --bw 400`` writes (its ``config_template`` and the
    ``hp`` branch), with this case's files, ``MI_THRESH`` and ``PACKET_PAYLOAD_SIZE``."""
    bw = RATE_GBPS
    ai = 10 * bw // 25
    kmax = f"2 {bw * 10**9} {400 * bw // 25} {bw * 4 * 10**9} {400 * bw * 4 // 25}"
    kmin = f"2 {bw * 10**9} {100 * bw // 25} {bw * 4 * 10**9} {100 * bw * 4 // 25}"
    pmax = f"2 {bw * 10**9} 0.20 {bw * 4 * 10**9} 0.20"
    values = {
        "ENABLE_QCN": 1,
        "USE_DYNAMIC_PFC_THRESHOLD": 1,
        "PACKET_PAYLOAD_SIZE": mtu,
        "TOPOLOGY_FILE": f"topo_{case.name}.txt",
        "FLOW_FILE": f"flow_{case.name}.txt",
        "TRACE_FILE": "trace.txt",
        "TRACE_OUTPUT_FILE": f"mix_{tag}.tr",
        "FCT_OUTPUT_FILE": f"fct_{tag}.txt",
        "PFC_OUTPUT_FILE": f"pfc_{tag}.txt",
        "SIMULATOR_STOP_TIME": "4.00",
        "CC_MODE": 3,
        "ALPHA_RESUME_INTERVAL": 1,
        "RATE_DECREASE_INTERVAL": 4,
        "CLAMP_TARGET_RATE": 0,
        "RP_TIMER": 300,
        "EWMA_GAIN": 0.00390625,
        "FAST_RECOVERY_TIMES": 1,
        "RATE_AI": f"{ai}Mb/s",
        "RATE_HAI": f"{ai}Mb/s",
        "MIN_RATE": "1000Mb/s",
        "DCTCP_RATE_AI": "1000Mb/s",
        "ERROR_RATE_PER_LINK": "0.0000",
        "L2_CHUNK_SIZE": 4000,
        "L2_ACK_INTERVAL": 1,
        "L2_BACK_TO_ZERO": 0,
        "HAS_WIN": 1,
        "GLOBAL_T": 1,
        "VAR_WIN": 1,
        "FAST_REACT": 1,
        "U_TARGET": 0.95,
        "MI_THRESH": max_stage,
        "INT_MULTI": bw // 25,
        "MULTI_RATE": 0,
        "SAMPLE_FEEDBACK": 0,
        "PINT_LOG_BASE": 1.01,
        "PINT_PROB": 1.0,
        "RATE_BOUND": 1,
        "ACK_HIGH_PRIO": 0,
        "LINK_DOWN": "0 0 0",
        "ENABLE_TRACE": 0,
        "KMAX_MAP": kmax,
        "KMIN_MAP": kmin,
        "PMAX_MAP": pmax,
        "BUFFER_SIZE": 16 * bw // 50,
        "QLEN_MON_FILE": f"qlen_{tag}.txt",
        # an empty window: no queue dump
        "QLEN_MON_START": 2000000000,
        "QLEN_MON_END": 2000000000,
    }
    return "".join(f"{k} {v}\n" for k, v in values.items())


# --- runs --------------------------------------------------------------------------------------


def outcome(case: Case, fct_us: dict[int, float]) -> dict[str, Any]:
    """Jain's index of the flows' throughputs (size / FCT), and the mean FCT of the near and
    the far senders (which of them the start-up left behind)."""
    if sorted(fct_us) != sorted(case.senders):
        raise SystemExit(f"{case.name}: flows finished from {sorted(fct_us)}, expected {list(case.senders)}")
    near = [fct_us[s] for s in case.senders if case.near(s)]
    far = [fct_us[s] for s in case.senders if not case.near(s)]
    return {
        "jain": jain_index(FLOW_BYTES / f for f in fct_us.values()),
        "fct_us": {str(s): round(fct_us[s], 3) for s in case.senders},
        "near_mean_fct_us": sum(near) / len(near) if near else None,
        "far_mean_fct_us": sum(far) / len(far),
        "min_fct_us": min(fct_us.values()),
        "max_fct_us": max(fct_us.values()),
    }


def run_ns3(binary: Path, lib: Path, case: Case, mtu: int, max_stage: int, work: Path) -> dict[str, Any]:
    tag = f"{case.name}_mtu{mtu}_mi{max_stage}"
    (work / f"topo_{case.name}.txt").write_text(ns3_topology(case))
    (work / f"flow_{case.name}.txt").write_text(ns3_flows(case))
    (work / "trace.txt").write_text("0\n\n")  # no node traced
    config = work / f"config_{tag}.txt"
    config.write_text(ns3_config(case, mtu, max_stage, tag))
    cmd = [str(binary.resolve()), config.name]
    env = {**os.environ, "LD_LIBRARY_PATH": str(lib.resolve())}
    out = subprocess.run(cmd, capture_output=True, text=True, check=True, cwd=work, env=env).stdout
    (work / f"ns3_{tag}.out").write_text(out)
    base_rtt = re.search(r"maxRtt=(\d+)", out)
    fct_us: dict[int, float] = {}
    for line in (work / f"fct_{tag}.txt").read_text().splitlines():
        # sip dip sport dport size start_ns fct_ns standalone_fct_ns; a host's address is
        # 11.0.(id / 256).(id % 256) << 8 | 1 (third.cc node_id_to_ip)
        sip, _, _, _, size, _, fct_ns, _ = line.split()
        ip = int(sip, 16) - 0x0B000001
        src = (ip >> 16) * 256 + ((ip >> 8) & 0xFF)
        assert int(size) == FLOW_BYTES
        fct_us[src] = int(fct_ns) / 1e3
    return {
        "command": f"cd {work} && LD_LIBRARY_PATH={lib} {' '.join(cmd)}",
        "base_rtt_us": int(base_rtt.group(1)) / 1e3 if base_rtt else None,
        **outcome(case, fct_us),
    }


def run_htsim(binary: Path, case: Case, mtu: int, t_us: float, work: Path) -> dict[str, Any]:
    topo, cm = work / f"{case.name}.topo", work / f"{case.name}.cm"
    cmd = [
        str(binary.resolve()),
        "-nodes",
        str(case.hosts),
        "-topo",
        topo.name,
        "-tm",
        cm.name,
        "-strat",
        "ecmp_host",
        "-paths",
        str(SPINES),
        "-mtu",
        str(mtu),
        "-linkspeed",
        str(RATE_GBPS * 1000),
        "-q",
        "4000",
        "-pfc_thresholds",
        "3000",
        "3500",
        "-hpcc_T",
        f"{t_us:.5f}",
        "-end",
        "20000",
        "-o",
        f"htsim_{case.name}.dat",
    ]
    # in the work directory: htsim writes its idmap.txt there
    out = subprocess.run(cmd, capture_output=True, text=True, check=True, cwd=work).stdout
    # htsim prints a line per ACK ("CWND..."): keep the rest
    (work / f"htsim_{case.name}_mtu{mtu}.out").write_text(
        "\n".join(x for x in out.splitlines() if not x.startswith("CWND"))
    )
    starts = {
        m.group(1): float(m.group(2)) for m in re.finditer(r"^startflow HPCC_(\d+)_\d+ at (\S+)", out, re.M)
    }
    fct_us = {
        int(m.group(1)): float(m.group(2)) - starts[m.group(1)]
        for m in re.finditer(r"^Flow HPCC_(\d+)_\d+ finished at (\S+)", out, re.M)
    }
    return {"command": f"cd {work} && {' '.join(cmd)}", "hpcc_T_us": t_us, **outcome(case, fct_us)}


def spraylab_scenario(case: Case, mtu: int, max_stage: int, work: Path) -> tuple[Path, list[str]]:
    scenario = work / f"spraylab_{case.name}_mtu{mtu}_mi{max_stage}.toml"
    cmd = [
        sys.executable,
        "-m",
        "spraylab.cli",
        "import",
        "htsim",
        "--topology",
        str(work / f"{case.name}.topo"),
        "--flows",
        str(work / f"{case.name}.cm"),
        "--out",
        str(scenario),
    ]
    for key, value in {
        "transport.cc": "hpcc",
        "transport.mtu": str(mtu),
        "transport.hpcc.max_stage": str(max_stage),
        "switch.lossless": "true",
        "lb.scheme": "ecmp",
        "run.progress": "false",
    }.items():
        cmd += ["--set", f"{key}={value}"]
    scenario.unlink(missing_ok=True)  # spraylab import refuses to overwrite
    _check(subprocess.run(cmd, capture_output=True, text=True))
    return scenario, cmd


def spraylab_base_rtt_us(scenario: Path) -> float:
    """spraylab's HPCC ``T`` on this fabric (``fabric_base_rtt_ps``: the largest base RTT)."""
    from spraylab.model.scenario import validate
    from spraylab.runs.experiment import build
    from spraylab.transport.cc.hpcc import fabric_base_rtt_ps

    data = tomllib.loads(scenario.read_text())
    for section in ("topology", "workload"):  # the imported files, relative to the scenario
        data[section]["file"] = str(scenario.parent / data[section]["file"])
    sim = build(validate(data))
    return fabric_base_rtt_ps(sim.net, sim.scenario.transport.mtu) / 1e6


def run_spraylab(case: Case, mtu: int, max_stage: int, work: Path) -> dict[str, Any]:
    scenario, cmd_import = spraylab_scenario(case, mtu, max_stage, work)
    result_dir = work / scenario.stem
    shutil.rmtree(result_dir, ignore_errors=True)
    cmd_run = [sys.executable, "-m", "spraylab.cli", "run", str(scenario), "--out", str(result_dir)]
    _check(subprocess.run(cmd_run + ["--format", "json"], capture_output=True, text=True))
    from spraylab.metrics.result import Result

    flows = Result.load(result_dir).flows
    fct_us = {int(r.src): (r.acked_ps - r.start_ps) / 1e6 for r in flows.itertuples() if r.acked_ps >= 0}
    return {
        "command": " ".join(cmd_import) + " && " + " ".join(cmd_run),
        "base_rtt_us": spraylab_base_rtt_us(scenario),
        **outcome(case, fct_us),
    }


# --- page --------------------------------------------------------------------------------------


def fmt_fct(r: dict[str, Any]) -> str:
    near = r["near_mean_fct_us"]
    return (f"{near:,.0f} / " if near is not None else "- / ") + f"{r['far_mean_fct_us']:,.0f}"


def page(results: dict[str, Any], command: str) -> str:
    lines = [
        "# HPCC side by side: incast fairness with one and two base RTTs",
        "",
        *textwrap.wrap(
            f"A 16:1 incast of {FLOW_BYTES // 10**6} MB flows into one {RATE_GBPS} Gb/s host of a leaf-spine "
            f"({SPINES} spines, {RATE_GBPS} Gb/s links of {LINK_DELAY_NS / 1000:g} us, ECMP, PFC), eta 0.95, "
            "W_AI = 160 Mb/s x T (the ns-3 run.py's RATE_AI at 400 Gb/s, spraylab's default), one global T "
            "(the fabric's largest base RTT). Jain's index over the 16 flows' throughputs (size / FCT); "
            f"issue 28 asks >= {JAIN_TARGET}. Near / far: the mean FCT of the senders on the receiver's leaf "
            "and of those across the spine. Generated by `benchmarks/hpcc_side_by_side.py` (its docstring "
            "has every setting and where it comes from).",
            96,
        ),
        "",
        f"Command: `{command}`",
        "",
        "| case | MTU | maxStage | spraylab Jain | ns-3 model Jain | spraylab FCT near / far (us) "
        "| ns-3 FCT near / far (us) | T spraylab / ns-3 (us) |",
        "|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for row in results["pairs"]:
        s, n = row["spraylab"], row["ns3"]
        lines.append(
            f"| {row['case']} | {row['mtu']} | {row['max_stage']} | {s['jain']:.3f} | {n['jain']:.3f} "
            f"| {fmt_fct(s)} | {fmt_fct(n)} | {s['base_rtt_us']:.3f} / {n['base_rtt_us']:.3f} |"
        )
    if results.get("htsim"):
        lines += [
            "",
            *textwrap.wrap(
                "csg-htsim's htsim_hpcc on the same fabrics (its own HPCC settings: maxStage 5, W_AI one "
                "MSS; T set to spraylab's). Its hpcc.cpp departs from the paper's Algorithm 1 in ways that "
                "change this result (docs/congestion-control.md, HPCC, side by side): reported, not "
                "compared against.",
                96,
            ),
            "",
            "| case | MTU | htsim Jain | htsim FCT near / far (us) |",
            "|---|---:|---:|---:|",
        ]
        for r in results["htsim"]:
            lines.append(f"| {r['case']} | {r['mtu']} | {r['jain']:.3f} | {fmt_fct(r)} |")
    return "\n".join(lines) + "\n"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--ns3", type=Path, required=True, help="the HPCC ns-3 model's built scratch/third")
    ap.add_argument(
        "--ns3-lib", type=Path, default=None, help="its shared libraries (default: the binary's build/)"
    )
    ap.add_argument("--htsim", type=Path, default=None, help="csg-htsim's htsim_hpcc with -topo and -hpcc_T")
    ap.add_argument("--mtus", default="1000,4096", help="payload sizes to run (comma-separated)")
    ap.add_argument("--max-stages", default="0,5", help="maxStage values to run (comma-separated)")
    ap.add_argument("--work", type=Path, default=Path("/tmp/hpcc-side"))
    ap.add_argument("--out", type=Path, default=Path("benchmarks/hpcc_side_by_side"))
    args = ap.parse_args()
    lib = args.ns3_lib or args.ns3.resolve().parent.parent
    args.work.mkdir(parents=True, exist_ok=True)
    mtus = [int(x) for x in args.mtus.split(",")]
    stages = [int(x) for x in args.max_stages.split(",")]
    pairs: list[dict[str, Any]] = []
    htsim: list[dict[str, Any]] = []
    for case in CASES:
        (args.work / f"{case.name}.topo").write_text(htsim_topo(case))
        (args.work / f"{case.name}.cm").write_text(htsim_cm(case))
        for mtu in mtus:
            for stage in stages:
                s = run_spraylab(case, mtu, stage, args.work)
                n = run_ns3(args.ns3, lib, case, mtu, stage, args.work)
                pairs.append(
                    {
                        "case": case.name,
                        "what": case.what,
                        "mtu": mtu,
                        "max_stage": stage,
                        "spraylab": s,
                        "ns3": n,
                    }
                )
                print(
                    f"{case.name} mtu={mtu} maxStage={stage}: Jain spraylab {s['jain']:.3f}, ns-3 {n['jain']:.3f}",
                    file=sys.stderr,
                )
            if args.htsim:
                t_us = pairs[-1]["spraylab"]["base_rtt_us"]
                h = run_htsim(args.htsim, case, mtu, t_us, args.work)
                htsim.append({"case": case.name, "mtu": mtu, **h})
                print(f"{case.name} mtu={mtu}: Jain htsim {h['jain']:.3f}", file=sys.stderr)
    command = "python benchmarks/hpcc_side_by_side.py " + " ".join(
        [f"--ns3 {args.ns3}"]
        + ([f"--htsim {args.htsim}"] if args.htsim else [])
        + [
            f"--mtus {args.mtus}",
            f"--max-stages {args.max_stages}",
            f"--work {args.work}",
            f"--out {args.out}",
        ]
    )
    results = {
        "command": command,
        "flow_bytes": FLOW_BYTES,
        "rate_gbps": RATE_GBPS,
        "pairs": pairs,
        "htsim": htsim,
    }
    args.out.with_suffix(".json").write_text(json.dumps(results, indent=1) + "\n")
    args.out.with_suffix(".md").write_text(page(results, command))


if __name__ == "__main__":
    main()
