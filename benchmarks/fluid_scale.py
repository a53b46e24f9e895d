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
  scenario to Result (target <= 0.5 s); ``perm_1024_<scheme>_noacks`` the same with
  ``run.fluid_acks = false`` (the fluid model without its ACK reservation), and
  ``perm_1024_<scheme>_numpy`` with ``run.fluid_solver = "numpy"`` (not the compiled kernel);
* ``l0_perm_8192``: the L0 bound of an 8192-host (k = 32) permutation;
* ``moe_<strategy>_<G>``: one Mixtral-8x7B dispatch + combine on a rail cluster of G GPUs
  (8 per server) under each rail strategy, fluid engine;
* ``floor``: a process that starts the interpreter and imports numpy and pydantic, nothing
  else (with one BLAS thread, as ``import spraylab`` sets before numpy loads: OpenBLAS's pool
  otherwise spins for tens of milliseconds of CPU): what every case pays before spraylab does
  anything, and a speedometer of the machine's hour for these Python-heavy processes (the
  shared machine's speed swings 1.5x and more).

The issue's whole-process figure (the 1024-host permutations with ACKs, <= 0.6 s of user CPU,
interpreter and imports included) depends on that hour, so it is measured in interleaved rounds
beside the floor:

    PYTHONPATH=src .venv/bin/python benchmarks/fluid_scale.py --rounds 20 floor perm_1024_ecmp \
        perm_1024_rps perm_1024_spray_rr --json benchmarks/fluid_perm_1024_rounds.json

The issue's four scale targets, each run in its own process under a memory cap (``RLIMIT_AS``
9 GB: the 8 GB target plus slack for the interpreter's mappings) and a wall timeout of twice the
target, so a case that cannot make it fails fast instead of swapping the shared machine:

* ``target_moe_layer_8192_<strategy>``: 8192 GPUs (1024 servers x 8, 400 Gb/s NICs), one
  Mixtral-8x7B MoE layer (dispatch + combine), ``run.engine = "l0_rail"`` (the matrix L0 of
  the rail strategies; its error against the fluid and packet engines is measured by
  ``benchmarks/fluid_l0_rail.py``): <= 30 s and <= 8 GB each;
* ``target_l0_65536_<scheme>``: an L0 permutation of 65,536 hosts (k = 64 fat-tree): <= 2 min;
* ``target_iteration_8192``: the 32 layers of one Mixtral-8x7B training iteration at 8192 GPUs
  (``rails``, each layer its own routing seed, so no layer's work is reused), ``l0_rail``,
  the layers spread over ``ITERATION_WORKERS`` processes (layers are independent runs; the
  row adds up the workers' CPU and gives the largest worker's peak RSS, ``workers`` x that
  bounding their sum): <= 5 min.

Every row has wall, user CPU, peak RSS and the load average when it started and ended (the
machine is shared: a wall time under load overstates the case's own cost).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

CASES = ["solver_65k", "perm_1024_ecmp", "perm_1024_rps", "perm_1024_spray_rr", "l0_perm_8192"]
CASES += [f"perm_1024_{s}_{v}" for v in ("noacks", "numpy") for s in ("ecmp", "rps", "spray_rr")]
CASES += [f"moe_{s}_256" for s in ("rail_local", "rail_matched", "rail_spray", "rails")]
STRATEGIES = ("rail_local", "rail_matched", "rail_spray", "rails")
# target case -> (wall target s, memory target MB)
TARGETS: dict[str, tuple[float, float]] = {f"target_moe_layer_8192_{s}": (30.0, 8192.0) for s in STRATEGIES}
TARGETS |= {"target_l0_65536_ecmp": (120.0, 8192.0), "target_l0_65536_rps": (120.0, 8192.0)}
TARGETS["target_iteration_8192"] = (300.0, 8192.0)
CASES += list(TARGETS)
CASES.append("floor")
# the whole-process user CPU target of the 1024-host permutations with ACKs
WHOLE_PROCESS_TARGET_S = 0.6
MEMORY_CAP_BYTES = 9 * 1024**3
ITERATION_WORKERS = min(2, os.cpu_count() or 1)


def _solver_65k() -> dict[str, Any]:
    import numpy as np

    from spraylab.fluid.engine import _Routes, prepare
    from spraylab.fluid.solver import certify, solve
    from spraylab.model.scenario import validate

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
    row = {
        "flows": routes.problem.n_flows,
        "entries": len(routes.problem.link),
        "solve_s": round(solve_s, 3),
        "solve_cpu_s": round(solve_cpu_s, 3),
        "certify_s": round(time.perf_counter() - t0, 3),
        "distinct_rates": int(len(np.unique(np.round(rates, 9)))),
    }
    # the compiled kernel on the same problem: no load to time (it is built with the package)
    from spraylab.fluid._maxmin import solve_compiled

    t0, c0 = time.perf_counter(), time.process_time()
    compiled_rates = solve_compiled(routes.problem, routes.cap)
    row["compiled_solve_s"] = round(time.perf_counter() - t0, 3)
    row["compiled_solve_cpu_s"] = round(time.process_time() - c0, 3)
    row["compiled_max_rel_diff"] = float(np.max(np.abs(compiled_rates - rates) / rates))
    return row


def _run(scenario: dict[str, Any]) -> dict[str, Any]:
    from spraylab.runs.experiment import run

    t0, c0 = time.perf_counter(), time.process_time()
    result = run(scenario)
    s = result.summary
    return {
        "wall_s": round(time.perf_counter() - t0, 3),
        "cpu_s": round(time.process_time() - c0, 3),
        "flows": s["flows"],
        "completion_ps": s["completion_ps"],
        "solves": s["fluid.solves"],
        "solver": s["fluid.solver"],
        "completed": s["completed"],
    }


def _moe_8192(strategy: str, layer: int) -> dict[str, Any]:
    """One Mixtral-8x7B layer (dispatch + combine) on 1024 servers x 8 GPUs, 400 Gb/s NICs."""
    return {
        "topology": {
            "kind": "rail",
            "servers": 1024,
            "gpus_per_server": 8,
            "spines": 8,
            "nic_rate": "400Gbps",
        },
        "workload": {
            "kind": "moe",
            "model": "mixtral-8x7b",
            "phase": "both",
            "strategy": strategy,
            "seed_offset": layer,
        },
        "run": {"engine": "l0_rail", "progress": False, "allow_large": True},
    }


def measure(case: str) -> dict[str, Any]:
    if case == "floor":
        import spraylab  # noqa: F401  (its environment alone: one BLAS thread, as every case has)

        # isort: split
        import numpy  # noqa: F401
        import pydantic  # noqa: F401

        out: dict[str, Any] = {}
    elif case == "solver_65k":
        out = _solver_65k()
    elif case.startswith("perm_1024_"):
        scheme = case.removeprefix("perm_1024_").removesuffix("_noacks").removesuffix("_numpy")
        solver = "numpy" if case.endswith("_numpy") else "auto"
        out = _run(
            {
                "topology": {"kind": "fat_tree", "k": 16, "rate": "400Gbps"},
                "lb": {"scheme": scheme},
                "workload": {"kind": "permutation", "size": "4MB"},
                "run": {
                    "engine": "fluid",
                    "progress": False,
                    "fluid_acks": not case.endswith("_noacks"),
                    "fluid_solver": solver,
                },
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
    elif case.startswith("target_l0_65536_"):
        out = _run(
            {
                "topology": {"kind": "fat_tree", "k": 64, "rate": "400Gbps"},
                "lb": {"scheme": case.removeprefix("target_l0_65536_")},
                "workload": {"kind": "permutation", "size": "4MB"},
                "run": {"engine": "l0", "progress": False, "allow_large": True},
            }
        )
    elif case.startswith("target_moe_layer_8192_"):
        out = _run(_moe_8192(case.removeprefix("target_moe_layer_8192_"), 0))
    elif case == "target_iteration_8192":
        from concurrent.futures import ProcessPoolExecutor

        from spraylab.workload.moe import MIXTRAL_8X7B

        t0 = time.perf_counter()
        scenarios = [_moe_8192("rails", layer) for layer in range(MIXTRAL_8X7B.n_layers)]
        layers = []
        with ProcessPoolExecutor(ITERATION_WORKERS) as pool:
            for row in pool.map(_run, scenarios):  # in layer order, as they finish
                layers.append(row)
                done_s, cpu_s = time.perf_counter() - t0, sum(r["cpu_s"] for r in layers)
                print(
                    f"progress: {len(layers)} of {len(scenarios)} layers in {done_s:.0f} s, {cpu_s:.0f} s CPU",
                    file=sys.stderr,
                    flush=True,
                )
        children = resource.getrusage(resource.RUSAGE_CHILDREN)
        out = {
            "wall_s": round(time.perf_counter() - t0, 3),
            "cpu_s": round(sum(r["cpu_s"] for r in layers), 3),
            "layers": len(layers),
            "workers": ITERATION_WORKERS,
            "layer_wall_s_max": max(r["wall_s"] for r in layers),
            "completion_ps": sum(r["completion_ps"] for r in layers),
            "children_user_cpu_s": round(children.ru_utime, 2),
            "children_peak_rss_mb": round(children.ru_maxrss / 1024, 1),
        }
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
    usage = resource.getrusage(resource.RUSAGE_SELF)
    out["user_cpu_s"] = round(usage.ru_utime + out.pop("children_user_cpu_s", 0.0), 2)
    out["peak_rss_mb"] = round(max(usage.ru_maxrss / 1024, out.pop("children_peak_rss_mb", 0.0)), 1)
    return {"case": case, **out}


def _cap_memory() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_CAP_BYTES, MEMORY_CAP_BYTES))


def _child(case: str) -> dict[str, Any]:
    """``case`` in its own process; a target case under the memory cap and a timeout of twice
    its wall target, judged against both."""
    target = TARGETS.get(case)
    load0 = os.getloadavg()[0]
    t0 = time.perf_counter()
    # its own session, so that a timeout also stops the iteration's worker processes
    child = subprocess.Popen(
        [sys.executable, __file__, "--child", case],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
        preexec_fn=_cap_memory if target else None,
    )
    try:
        stdout, stderr = child.communicate(timeout=2 * target[0] if target else None)
    except subprocess.TimeoutExpired:
        os.killpg(child.pid, signal.SIGKILL)
        stdout, stderr = child.communicate()
        progress = [line for line in stderr.splitlines() if line.startswith("progress:")]
        row: dict[str, Any] = {"case": case, "failed": f"timeout after {2 * target[0]:.0f} s"}  # type: ignore[index]
        if progress:
            row["failed"] += f" ({progress[-1].removeprefix('progress: ')})"
    else:
        if child.returncode == 0:
            row = json.loads(stdout.strip().splitlines()[-1])
        else:
            last = (stderr.strip().splitlines() or [f"exit {child.returncode}"])[-1]
            row = {"case": case, "failed": last[:200]}
    row.setdefault("wall_s", round(time.perf_counter() - t0, 3))
    row["load_avg"] = [round(load0, 2), round(os.getloadavg()[0], 2)]
    if target:
        wall_target, memory_target = target
        row["target"] = f"<= {wall_target:.0f} s, <= {memory_target / 1024:.0f} GB"
        row["met"] = (
            "failed" not in row and row["wall_s"] <= wall_target and row["peak_rss_mb"] <= memory_target
        )
    return row


def markdown(rows: list[dict[str, Any]]) -> str:
    """docs/fluid.md's tables from the rows of ``--json``: the 1024-host permutations and the
    targets, each if the rows have cases of it; the rows of ``--rounds`` as one table of their
    spread."""
    if any("round" in r for r in rows):
        return _rounds_table(rows)
    perm = {r["case"]: r for r in rows if r["case"].startswith("perm_1024_")}
    out = _perm_table(perm) if perm else ""
    if any(r["case"] in TARGETS for r in rows):
        out += ("\n" if out else "") + _target_table(rows)
    return out


def _rounds_table(rows: list[dict[str, Any]]) -> str:
    """Whole-process user CPU of each case over the rounds (min / median / max), the run's own
    CPU, and against the whole-process target: the permutations with ACKs only."""
    import statistics  # (here: a measured child process imports nothing it does not need)

    lines = [
        "| case | rounds | user CPU, whole process: min / median / max | the run's own CPU, median "
        f"| rounds within {WHOLE_PROCESS_TARGET_S} s |",
        "|---|---:|---:|---:|---:|",
    ]
    for case in dict.fromkeys(r["case"] for r in rows):
        mine = [r for r in rows if r["case"] == case and "failed" not in r]
        user = sorted(r["user_cpu_s"] for r in mine)
        run = [r["cpu_s"] for r in mine if "cpu_s" in r]
        spread = f"{user[0]:.2f} / {statistics.median(user):.2f} / {user[-1]:.2f} s" if user else "failed"
        within = ""
        if case in ("perm_1024_ecmp", "perm_1024_rps", "perm_1024_spray_rr"):
            within = f"{sum(u <= WHOLE_PROCESS_TARGET_S for u in user)} of {len(user)}"
        run_cell = f"{statistics.median(run):.2f} s" if run else ""
        lines.append(f"| `{case}` | {len(mine)} | {spread} | {run_cell} | {within} |")
    return "\n".join(lines) + "\n"


def _perm_table(perm: dict[str, dict[str, Any]]) -> str:
    lines = [
        "| scheme | with ACKs (default) | without ACKs | numpy kernel, with ACKs | solves (with / without ACKs) |",
        "|---|---:|---:|---:|---:|",
    ]

    def cell(case: str) -> str:
        r = perm.get(case)
        return f"{r['wall_s']:.2f} / {r['cpu_s']:.2f} s ({r['solver']})" if r else ""

    for scheme in ("ecmp", "rps", "spray_rr"):
        base, noacks = perm.get(f"perm_1024_{scheme}"), perm.get(f"perm_1024_{scheme}_noacks")
        solves = f"{base['solves'] if base else ''} / {noacks['solves'] if noacks else ''}"
        row = [
            cell(f"perm_1024_{scheme}"),
            cell(f"perm_1024_{scheme}_noacks"),
            cell(f"perm_1024_{scheme}_numpy"),
        ]
        lines.append(f"| `{scheme}` | {' | '.join(row)} | {solves} |")
    return "\n".join(lines) + "\n"


def _target_table(rows: list[dict[str, Any]]) -> str:
    lines = [
        "| case | target | wall | user CPU | CPU (user + sys) | peak RSS | load (start, end) | met |",
        "|---|---|---:|---:|---:|---:|---|---|",
    ]
    for r in rows:
        if r["case"] not in TARGETS:
            continue
        if "failed" in r:
            measured = [f"failed: {r['failed']}", "", "", ""]
        else:
            measured = [
                f"{r['wall_s']:.1f} s",
                f"{r['user_cpu_s']:.1f} s",
                f"{r['cpu_s']:.1f} s" if "cpu_s" in r else "",
                f"{r['peak_rss_mb'] / 1024:.2f} GB",
            ]
        extra = f" ({r['workers']} workers)" if "workers" in r else ""
        extra += f", run {r['run']}" if "run" in r else ""
        load = ", ".join(f"{x:.1f}" for x in r["load_avg"])
        lines.append(
            f"| `{r['case']}`{extra} | {r['target']} | {' | '.join(measured)} | {load} | {'yes' if r['met'] else 'no'} |"
        )
    return "\n".join(lines) + "\n"


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("cases", nargs="*", default=CASES)
    parser.add_argument("--json", type=Path, default=None)
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--rounds", type=int, default=1, help="run the cases this many times, interleaved")
    parser.add_argument(
        "--markdown", type=Path, default=None, help="print the target rows of this JSON file as a table"
    )
    args = parser.parse_args(argv)
    if args.markdown is not None:
        print(markdown(json.loads(args.markdown.read_text())), end="")
        return 0
    if args.child:
        print(json.dumps(measure(args.cases[0])))
        return 0
    rows = []
    for round_ in range(args.rounds):
        for case in args.cases:
            row = _child(case) | ({"round": round_} if args.rounds > 1 else {})
            print(json.dumps(row), flush=True)
            rows.append(row)
    if args.json is not None:
        args.json.write_text(json.dumps(rows, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
