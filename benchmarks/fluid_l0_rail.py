"""Error of ``run.engine = "l0_rail"`` (and of the message-level ``"l0"``) against the fluid
engine and the packet engine, on Mixtral-8x7B layers (dispatch + combine) small enough for
them, per rail strategy.

    PYTHONPATH=src .venv/bin/python benchmarks/fluid_l0_rail.py --json out.json --markdown out.md
    PYTHONPATH=src .venv/bin/python benchmarks/fluid_l0_rail.py --cases 8x8 --engines l0_rail fluid

Cases are ``<servers>x<gpus per server>[z<zipf_s>]``; the fabric is the shipped
``scenarios/rails/moe_mixtral_8x7b.toml``'s (400 Gb/s NICs, 8 spines, NVLink 3.6 Tb/s,
lossless, ``cc = none``, ideal transport: the packet runs the fluid engine models best), 256
tokens per GPU. The error is ``(engine - fluid) / fluid`` of each phase's CCT and of the
layer's completion. The fluid engine runs at ``fluid_quantum = 0`` (exact re-solves) up to 32
GPUs and at its default quantum beyond (exact re-solves take many minutes there; the default's
own error is at most 0.62% on these workloads, docs/fluid.md "Re-solve quantum"), and without
its ACK reservation (``fluid_acks = false``): L0 counts data bytes only, so this measures what
L0's matrix shortcuts cost, not the ACKs' 2% (as the rows measured before the fluid engine
reserved ACKs did).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

STRATEGIES = ("rail_local", "rail_matched", "rail_spray", "rails")
DEFAULT_CASES = ("4x8", "8x8", "8x8z1.2", "32x8")
DEFAULT_ENGINES = ("l0_rail", "l0", "fluid", "packet")
PACKET_MAX_GPUS = 32  # the packet engine takes minutes per layer beyond this
EXACT_FLUID_MAX_GPUS = 32  # fluid_quantum = 0 up to here, the default beyond


def scenario(case: str, strategy: str, engine: str) -> dict[str, Any]:
    shape, _, zipf = case.partition("z")
    servers, gpus = (int(x) for x in shape.split("x"))
    return {
        "topology": {
            "kind": "rail",
            "servers": servers,
            "gpus_per_server": gpus,
            "spines": 8,
            "nic_rate": "400Gbps",
            "nvlink_rate": "3.6Tbps",
            "link_delay": "1us",
            "nvlink_delay": "250ns",
        },
        "switch": {"lossless": True},
        "transport": {"cc": "none", "recovery": "ideal"},
        "workload": {
            "kind": "moe",
            "model": "mixtral-8x7b",
            "tokens_per_gpu": 256,
            "zipf_s": float(zipf or 0.0),
            "phase": "both",
            "strategy": strategy,
        },
        "run": {
            "engine": engine,
            "progress": False,
            "allow_large": True,
            "seed": 1,
            **({"fluid_quantum": 0} if servers * gpus <= EXACT_FLUID_MAX_GPUS else {}),
            **({"fluid_acks": False} if engine == "fluid" else {}),
        },
    }


def measure(case: str, strategy: str, engine: str) -> dict[str, Any]:
    from spraylab.runs.experiment import run

    t0, c0 = time.perf_counter(), time.process_time()
    s = run(scenario(case, strategy, engine)).summary
    return {
        "case": case,
        "strategy": strategy,
        "engine": engine,
        "completion_ps": s["completion_ps"],
        "dispatch_ps": s["cct_ps[0:moe:dispatch]"],
        "combine_ps": s["cct_ps[0:moe:combine]"],
        "binding": s.get("l0.binding"),
        "wall_s": round(time.perf_counter() - t0, 2),
        "cpu_s": round(time.process_time() - c0, 2),
    }


def errors(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Each non-fluid row's relative error against the fluid row of its case and strategy."""
    fluid = {(r["case"], r["strategy"]): r for r in rows if r["engine"] == "fluid"}
    out = []
    for r in rows:
        ref = fluid.get((r["case"], r["strategy"]))
        if r["engine"] == "fluid" or ref is None:
            continue
        out.append(
            {
                "case": r["case"],
                "strategy": r["strategy"],
                "engine": r["engine"],
                **{k: (r[k] - ref[k]) / ref[k] for k in ("dispatch_ps", "combine_ps", "completion_ps")},
            }
        )
    return out


def markdown(rows: list[dict[str, Any]]) -> str:
    lines = [
        "| case (servers x GPUs, zipf) | strategy | engine | dispatch | combine | layer"
        " | vs fluid: dispatch | combine | layer | l0_rail vs l0: layer | binding |",
        "|---|---|---|---:|---:|---:|---:|---:|---:|---:|---|",
    ]
    err = {(e["case"], e["strategy"], e["engine"]): e for e in errors(rows)}
    l0 = {(r["case"], r["strategy"]): r for r in rows if r["engine"] == "l0"}
    for r in rows:
        e = err.get((r["case"], r["strategy"], r["engine"]))
        keys = ("dispatch_ps", "combine_ps", "completion_ps")
        pct = [f"{100 * e[k]:+.1f}%" for k in keys] if e else ["", "", ""]
        ref = l0.get((r["case"], r["strategy"]))
        vs_l0 = ""
        if r["engine"] == "l0_rail" and ref is not None:
            vs_l0 = f"{100 * (r['completion_ps'] - ref['completion_ps']) / ref['completion_ps']:+.1f}%"
        us = [f"{r[k] / 1e6:.1f} us" for k in keys]
        cells = [r["case"], r["strategy"], r["engine"], *us, *pct, vs_l0, r["binding"] or ""]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", nargs="*", default=list(DEFAULT_CASES))
    parser.add_argument("--strategies", nargs="*", default=list(STRATEGIES))
    parser.add_argument("--engines", nargs="*", default=list(DEFAULT_ENGINES))
    parser.add_argument("--packet-max-gpus", type=int, default=PACKET_MAX_GPUS)
    parser.add_argument("--json", type=Path, default=None)
    parser.add_argument(
        "--merge",
        type=Path,
        nargs="*",
        default=[],
        help="--json files whose rows join these (rows measured now win)",
    )
    parser.add_argument("--markdown", type=Path, default=None)
    args = parser.parse_args(argv)
    rows = []
    for case in args.cases:
        servers, gpus = (int(x) for x in case.partition("z")[0].split("x"))
        for strategy in args.strategies:
            for engine in args.engines:
                if engine == "packet" and servers * gpus > args.packet_max_gpus:
                    continue
                row = measure(case, strategy, engine)
                print(json.dumps(row), flush=True)
                rows.append(row)
    fresh = {(r["case"], r["strategy"], r["engine"]) for r in rows}
    for path in args.merge:  # a row measured now replaces the merged file's row of the same key
        rows += [
            r
            for r in json.loads(path.read_text())["rows"]
            if (r["case"], r["strategy"], r["engine"]) not in fresh
        ]
    order = {
        (c, s, e): i
        for i, (c, s, e) in enumerate(
            (c, s, e) for c in args.cases for s in STRATEGIES for e in DEFAULT_ENGINES
        )
    }
    rows.sort(key=lambda r: order.get((r["case"], r["strategy"], r["engine"]), len(order)))
    for e in errors(rows):
        print(json.dumps(e))
    if args.json is not None:
        args.json.write_text(json.dumps({"rows": rows, "errors": errors(rows)}, indent=1) + "\n")
    if args.markdown is not None:
        args.markdown.write_text(markdown(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
