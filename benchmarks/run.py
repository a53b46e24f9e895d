"""Run the reference benchmark scenarios and print wall time, events/s, packet-hops/s and
peak memory. Each scenario runs in its own process so peak memory is that run's alone.

    .venv/bin/python benchmarks/run.py                  # all scenarios in benchmarks/
    .venv/bin/python benchmarks/run.py fat_tree_k16_rps  # one of them
    .venv/bin/python benchmarks/run.py --json benchmarks/results.json
"""

from __future__ import annotations

import argparse
import json
import platform
import resource
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).parent


def measure(path: Path) -> dict[str, object]:
    """Runs inside the child process."""
    from spraylab.config import Scenario
    from spraylab.experiment import build

    scenario = Scenario.load(path)
    t0 = time.perf_counter()
    simulation = build(scenario)
    build_s = time.perf_counter() - t0
    cpu0, t1 = time.process_time(), time.perf_counter()
    simulation.run()
    wall_s = time.perf_counter() - t1
    cpu_s = time.process_time() - cpu0
    result = simulation.result()
    s = result.summary
    return {
        "scenario": path.stem,
        "hosts": s["hosts"],
        "scheme": s["scheme"],
        "stop": s["stop_reason"],
        "flows_completed": f"{s['flows_completed']}/{s['flows']}",
        "sim_time_us": round(s["sim_time_ps"] / 1e6, 1),
        "build_s": round(build_s, 2),
        "wall_s": round(wall_s, 2),
        "cpu_s": round(cpu_s, 2),
        "events": s["events"],
        "events_per_s": round(s["events"] / wall_s),
        "packet_hops": s["packet_hops"],
        "packet_hops_per_s": round(s["packet_hops"] / wall_s),
        "packet_hops_per_cpu_s": round(s["packet_hops"] / cpu_s),
        "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
    }


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("names", nargs="*", help="scenario names (files in benchmarks/ without .toml)")
    parser.add_argument("--json", type=Path, help="also write the measurements here")
    parser.add_argument("--child", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(measure(args.child)))
        return
    paths = [HERE / f"{n}.toml" for n in args.names] if args.names else sorted(HERE.glob("*.toml"))
    rows = []
    for path in paths:
        out = subprocess.run([sys.executable, __file__, "--child", str(path)], capture_output=True, text=True)
        if out.returncode:
            print(out.stderr, file=sys.stderr)
            sys.exit(out.returncode)
        row = json.loads(out.stdout.strip().splitlines()[-1])
        rows.append(row)
        print(
            f"{row['scenario']}: {row['hosts']} hosts, {row['scheme']}, stop={row['stop']} "
            f"({row['flows_completed']} flows, {row['sim_time_us']} us simulated)\n"
            f"  wall {row['wall_s']} s (cpu {row['cpu_s']} s, build {row['build_s']} s)  "
            f"events/s {row['events_per_s']:,}  packet-hops/s {row['packet_hops_per_s']:,} "
            f"(per cpu-s {row['packet_hops_per_cpu_s']:,})  peak memory {row['peak_rss_mb']} MB"
        )
    if args.json:
        meta = {
            "python": platform.python_version(),
            "machine": platform.machine(),
            "when": time.strftime("%Y-%m-%d"),
        }
        args.json.write_text(json.dumps({"meta": meta, "runs": rows}, indent=2) + "\n")


if __name__ == "__main__":
    main()
