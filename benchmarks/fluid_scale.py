"""Scale benchmarks of the fluid engine: wall time and peak memory of each case, each in its
own process (so peak memory is that case's alone).

    PYTHONPATH=src .venv/bin/python benchmarks/fluid_scale.py            # every case
    PYTHONPATH=src .venv/bin/python benchmarks/fluid_scale.py solver_65k # one of them
    PYTHONPATH=src .venv/bin/python benchmarks/fluid_scale.py --json out.json

Cases and the issue's targets:

* ``solver_65k``: one max-min solve (plus its certificate) of 65,536 ECMP flows on a 1024-host
  fat-tree (k = 16), random pairs: the rate problem at every event of a 64k-flow run (target:
  0.2 s for a batched numpy solver);
* ``perm_1024_<scheme>``: a whole 1024-host (k = 16 fat-tree, 400 Gb/s) permutation run,
  scenario to Result (target <= 0.5 s);
* ``l0_perm_8192``: the L0 bound of an 8192-host (k = 32) permutation;
* ``moe_<strategy>_<G>``: one Mixtral-8x7B dispatch + combine on a rail cluster of G GPUs
  (8 per server) under each rail strategy, fluid engine.

The 8192-GPU MoE layer (<= 30 s), 65,536 GPUs in L0 (<= 2 min) and the 8192-GPU training
iteration (<= 5 min) are not reached: the rail strategies build one message object per GPU pair
(or chunk), 67 M at 8192 GPUs; see docs/fluid.md, "Scale".
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

CASES = ["solver_65k", "perm_1024_ecmp", "perm_1024_rps", "perm_1024_spray_rr", "l0_perm_8192"]
CASES += [f"moe_{s}_256" for s in ("rail_local", "rail_matched", "rail_spray", "rails")]


def _solver_65k() -> dict[str, Any]:
    import numpy as np

    from spraylab.config import validate
    from spraylab.fluid.engine import _Routes, prepare
    from spraylab.fluid.solver import certify, solve

    sc = validate(
        {
            "topology": {"kind": "fat_tree", "k": 16, "rate": "400Gbps"},
            "workload": {"kind": "random_pairs", "flows": 65536, "size": "1MB"},
            "run": {"engine": "fluid"},
        }
    )
    run = prepare(sc)
    routes = _Routes(run, run.fabric.rate_bps.astype(float))
    t0, c0 = time.perf_counter(), time.process_time()
    rates = solve(routes.problem, routes.cap)
    solve_s, solve_cpu_s = time.perf_counter() - t0, time.process_time() - c0
    t0 = time.perf_counter()
    certify(routes.problem, routes.cap, rates)
    return {
        "flows": routes.problem.n_flows,
        "entries": len(routes.problem.link),
        "solve_s": round(solve_s, 3),
        "solve_cpu_s": round(solve_cpu_s, 3),
        "certify_s": round(time.perf_counter() - t0, 3),
        "distinct_rates": int(len(np.unique(np.round(rates, 9)))),
    }


def _run(scenario: dict[str, Any]) -> dict[str, Any]:
    from spraylab.experiment import run

    t0, c0 = time.perf_counter(), time.process_time()
    result = run(scenario)
    s = result.summary
    return {
        "wall_s": round(time.perf_counter() - t0, 3),
        "cpu_s": round(time.process_time() - c0, 3),
        "flows": s["flows"],
        "completion_ps": s["completion_ps"],
        "solves": s["fluid.solves"],
        "completed": s["completed"],
    }


def measure(case: str) -> dict[str, Any]:
    if case == "solver_65k":
        out = _solver_65k()
    elif case.startswith("perm_1024_"):
        scheme = case.removeprefix("perm_1024_")
        out = _run(
            {
                "topology": {"kind": "fat_tree", "k": 16, "rate": "400Gbps"},
                "lb": {"scheme": scheme},
                "workload": {"kind": "permutation", "size": "4MB"},
                "run": {"engine": "fluid", "progress": False},
            }
        )
    elif case == "l0_perm_8192":
        out = _run(
            {
                "topology": {"kind": "fat_tree", "k": 32, "rate": "400Gbps"},
                "lb": {"scheme": "rps"},
                "workload": {"kind": "permutation", "size": "4MB"},
                "run": {"engine": "l0", "progress": False},
            }
        )
    else:
        strategy, gpus_text = case.removeprefix("moe_").rsplit("_", 1)
        gpus = int(gpus_text)
        out = _run(
            {
                "topology": {"kind": "rail", "servers": gpus // 8, "gpus_per_server": 8, "spines": 8},
                "workload": {"kind": "moe", "model": "mixtral-8x7b", "phase": "both", "strategy": strategy},
                "run": {"engine": "fluid", "progress": False, "fluid_quantum": "1us"},
            }
        )
    out["peak_rss_mb"] = round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)
    return {"case": case, **out}


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("cases", nargs="*", default=CASES)
    parser.add_argument("--json", type=Path, default=None)
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        print(json.dumps(measure(args.cases[0])))
        return 0
    rows = []
    for case in args.cases:
        done = subprocess.run(
            [sys.executable, __file__, "--child", case], capture_output=True, text=True, check=False
        )
        if done.returncode != 0:
            print(f"{case}: failed\n{done.stderr}", file=sys.stderr)
            continue
        row = json.loads(done.stdout.strip().splitlines()[-1])
        print(json.dumps(row), flush=True)
        rows.append(row)
    if args.json is not None:
        args.json.write_text(json.dumps(rows, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
