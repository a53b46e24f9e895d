"""How the fluid engine's re-solve quantum moves results: each case at q = 0 (exact) and at a
ladder of q, reporting the completion's error against the exact run and against q/2 (the
criterion the default ``run.fluid_quantum`` was chosen by: see docs/fluid.md), solves and CPU.

    PYTHONPATH=src .venv/bin/python benchmarks/fluid_quantum.py --json benchmarks/fluid_quantum.json
    PYTHONPATH=src .venv/bin/python benchmarks/fluid_quantum.py --markdown benchmarks/fluid_quantum.json

The second prints the table of docs/fluid.md ("Re-solve quantum") from the stored rows and the
quantum the criterion picks (:func:`pick_quantum`), which tests/test_fluid_engine.py checks is
the shipped default.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

QUANTA_PS = [0, 31_250, 62_500, 125_000, 250_000, 500_000, 1_000_000, 2_000_000]
# The criterion: halving the quantum moves no case's completion by more than this.
HALVING_TOLERANCE = 0.005
TABLE_QUANTA_PS = (125_000, 250_000, 500_000)


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
    from spraylab.runs.experiment import run

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


def pick_quantum(rows: list[dict[str, Any]]) -> int:
    """The largest quantum of the ladder at which, and at every smaller one, halving the
    quantum moves no case by more than HALVING_TOLERANCE (the smallest one against exact)."""
    picked = 0
    for q in QUANTA_PS[1:]:
        moves = [abs(r.get("err_vs_half", r["err_vs_exact"])) for r in rows if r["quantum_ps"] == q]
        if not moves or max(moves) > HALVING_TOLERANCE:
            break
        picked = q
    return picked


def markdown(rows: list[dict[str, Any]]) -> str:
    def pct(x: float) -> str:
        return f"{100 * abs(x):.2f}%"

    by = {(r["case"], r["quantum_ps"]): r for r in rows}
    head = ["case", "solves (q = 0)"]
    for q in TABLE_QUANTA_PS:
        head += [f"q = {q / 1000:g} ns: vs q/2", "vs 0", "solves"]
    lines = ["| " + " | ".join(head) + " |", "|---|" + "---:|" * (len(head) - 1)]
    for name in dict.fromkeys(r["case"] for r in rows):
        cells = [name, f"{by[(name, 0)]['solves']:,}"]
        for q in TABLE_QUANTA_PS:
            r = by[(name, q)]
            cells += [pct(r["err_vs_half"]), pct(r["err_vs_exact"]), f"{r['solves']:,}"]
        lines.append("| " + " | ".join(cells) + " |")
    q = pick_quantum(rows)
    lines += [
        "",
        f"Picked by the criterion (halving moves no case by more than {HALVING_TOLERANCE:.1%}): {q / 1000:g} ns.",
    ]
    return "\n".join(lines)


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", type=Path, default=None, help="write the rows here")
    parser.add_argument("--markdown", type=Path, default=None, help="print the table of these stored rows")
    args = parser.parse_args(argv)
    if args.markdown is not None:
        print(markdown(json.loads(args.markdown.read_text())))
        return 0
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
