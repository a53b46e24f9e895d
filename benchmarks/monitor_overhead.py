"""What ``[monitor]`` costs: the demo run (``spraylab run demo --set lb.scheme=rps``) with and
without ``--set monitor.interval=10us`` (every port, flow and switch, the default selection),
each in a fresh process, alternating, and the kernel's accounting of the whole process (user
CPU and peak RSS, from ``wait4``). Prints every run, the medians, the monitored/plain ratios
and the load average (the machine's other work inflates user CPU too, which alternating
spreads over both kinds).

    PYTHONPATH=src .venv/bin/python benchmarks/monitor_overhead.py              # 2 of each
    PYTHONPATH=src .venv/bin/python benchmarks/monitor_overhead.py --repeat 3 --interval 1us
    PYTHONPATH=src .venv/bin/python benchmarks/monitor_overhead.py --set run.time_limit=300us

The issue's bound (spraylab issue 16): at most 15% extra run time at a 10 us interval on the
demo; ``docs/performance.md`` records the measurements.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).parent
sys.path.insert(0, str(HERE))
from run import child_env, warm_bytecode  # noqa: E402  (benchmarks/run.py: same child setup)

SRC = HERE.parent / "src"
BASE_SETS = ("lb.scheme=rps",)


def command(sets: list[str]) -> list[str]:
    """``spraylab run demo`` with ``--set`` overrides, summary as JSON."""
    argv = ["spraylab", "run", "demo", "-f", "json"]
    for value in sets:
        argv += ["--set", value]
    return [sys.executable, "-c", f"import sys; sys.argv = {argv!r}; from spraylab.cli import main; main()"]


def run_once(sets: list[str], src: Path) -> dict[str, float]:
    """One run in a fresh process: user CPU s and peak RSS MB of the whole process."""
    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
        proc = subprocess.Popen(command(sets), stdout=out, stderr=err, env=child_env(src))
        _, status, usage = os.wait4(proc.pid, 0)
        proc.returncode = os.waitstatus_to_exitcode(status)  # reaped here, not by Popen
        if proc.returncode not in (0, 3):  # 3: stopped before the workload finished
            err.seek(0)
            sys.exit(f"run failed ({proc.returncode}): {err.read()}")
    return {"user_cpu_s": round(usage.ru_utime, 2), "peak_rss_mb": round(usage.ru_maxrss / 1024, 1)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=2, help="runs of each kind (default 2)")
    parser.add_argument("--interval", default="10us", help="monitor.interval (default 10us)")
    parser.add_argument("--set", action="append", default=[], help="extra override for both runs")
    parser.add_argument("--src", type=Path, default=SRC, help="the engine's src directory")
    parser.add_argument("--json", type=Path, help="also write the runs and ratios here")
    args = parser.parse_args()
    plain_sets = [*BASE_SETS, *args.set]
    kinds = {"plain": plain_sets, "monitored": [*plain_sets, f"monitor.interval={args.interval}"]}
    warm_bytecode(args.src)
    load_before = os.getloadavg()
    runs: dict[str, list[dict[str, float]]] = {kind: [] for kind in kinds}
    for i in range(args.repeat):
        for kind, sets in kinds.items():
            row = run_once(sets, args.src)
            runs[kind].append(row)
            print(
                f"{i + 1}. {kind:9} user {row['user_cpu_s']:7.2f} s   peak RSS {row['peak_rss_mb']:6.1f} MB"
            )
    load_after = os.getloadavg()
    medians = {
        kind: {m: statistics.median(r[m] for r in rows) for m in ("user_cpu_s", "peak_rss_mb")}
        for kind, rows in runs.items()
    }
    ratios = {m: medians["monitored"][m] / medians["plain"][m] for m in ("user_cpu_s", "peak_rss_mb")}
    print(
        f"median: plain {medians['plain']['user_cpu_s']:.2f} s, monitored "
        f"{medians['monitored']['user_cpu_s']:.2f} s: user CPU x{ratios['user_cpu_s']:.3f}, "
        f"peak RSS x{ratios['peak_rss_mb']:.3f} ({medians['plain']['peak_rss_mb']:.0f} -> "
        f"{medians['monitored']['peak_rss_mb']:.0f} MB)"
    )
    print(f"load average (1, 5, 15 min): before {load_before}, after {load_after}")
    print("command: spraylab run demo " + " ".join(f"--set {s}" for s in kinds["monitored"]))
    if args.json is not None:
        report = {"runs": runs, "medians": medians, "ratios": ratios, "load": [load_before, load_after]}
        args.json.write_text(json.dumps(report, indent=2) + "\n")


if __name__ == "__main__":
    main()
