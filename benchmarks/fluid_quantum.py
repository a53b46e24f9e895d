"""How the fluid engine's re-solve quantum moves results: each case at q = 0 (exact) and at a
ladder of q, reporting the completion's error against the exact run and against q/2 (the
criterion the default ``run.fluid_quantum`` was chosen by: see docs/fluid.md), solves and CPU.

    PYTHONPATH=src .venv/bin/python benchmarks/fluid_quantum.py [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

QUANTA_PS = [0, 31_250, 62_500, 125_000, 250_000, 500_000, 1_000_000, 2_000_000]


def _rail(strategy: str) -> dict[str, Any]:
    return {
        "topology": {"kind": "rail", "servers": 4, "gpus_per_server": 8, "spines": 8},
        "transport": {"recovery": "ideal", "cc": "none"},
        "workload": {"kind": "moe", "model": "mixtral-8x7b", "tokens_per_gpu": 256, "strategy": strategy},
    }


def _leaf_spine(workload: dict[str, Any], scheme: str) -> dict[str, Any]:
    topo = {"kind": "leaf_spine", "leaves": 8, "spines": 8, "hosts_per_leaf": 8, "host_rate": "400Gbps"}
    return {"topology": topo, "lb": {"scheme": scheme}, "workload": workload}


CASES: dict[str, dict[str, Any]] = {
    "moe 32 GPUs rails": _rail("rails"),
    "moe 32 GPUs rail_local": _rail("rail_local"),
    "moe 32 GPUs rail_matched": _rail("rail_matched"),
    "permutation 64 hosts 4MB ecmp": _leaf_spine({"kind": "permutation", "size": "4MB"}, "ecmp"),
    "random pairs 64 hosts 256KB ecmp": _leaf_spine(
        {"kind": "random_pairs", "flows": 256, "size": "256KB"}, "ecmp"
    ),
}


def measure(name: str, quantum_ps: int) -> dict[str, Any]:
    from spraylab.experiment import run

    scenario = {**CASES[name], "run": {"engine": "fluid", "progress": False, "fluid_quantum": quantum_ps}}
    c0 = time.process_time()
    s = run(scenario).summary
    return {
        "case": name,
        "quantum_ps": quantum_ps,
        "completion_ps": s["completion_ps"],
        "solves": s["fluid.solves"],
        "cpu_s": round(time.process_time() - c0, 2),
    }


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args(argv)
    rows = []
    for name in CASES:
        by_q: dict[int, dict[str, Any]] = {}
        for q in QUANTA_PS:
            row = by_q[q] = measure(name, q)
            exact = by_q[0]["completion_ps"]
            row["err_vs_exact"] = round(row["completion_ps"] / exact - 1, 5)
            if q and q // 2 in by_q:
                row["err_vs_half"] = round(row["completion_ps"] / by_q[q // 2]["completion_ps"] - 1, 5)
            print(json.dumps(row), flush=True)
            rows.append(row)
    if args.json is not None:
        args.json.write_text(json.dumps(rows, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
