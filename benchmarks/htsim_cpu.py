"""CPU and memory side by side with uet-htsim: the same htsim connection matrix and fat-tree
``.topo`` run by ``htsim_uec`` and by spraylab, both on NSCC with packet trimming (the scenario
``benchmarks/nscc_side_by_side.py`` builds from htsim's own derived settings), alternating
fresh processes, whole-process user CPU and peak RSS from ``wait4`` (each forked by a small
interpreter, not by this process: see ``_FORK_AND_WAIT``).

The htsim binary is an argument: this script neither fetches nor builds htsim. Usage:

    python benchmarks/htsim_cpu.py --htsim /path/to/htsim_uec \\
        --case fat_tree_128_1os.topo:perm_128.cm --case fat_tree_1024_1os.topo:perm_1024.cm \\
        [--scheme oblivious] [--repeat 3] [--work /tmp/htsim-cpu] [--json benchmarks/htsim_cpu.json]

``--json`` replaces the rows of the cases run and keeps the file's other rows (the 8192-host case
takes htsim four minutes a run: it is run on its own, ``--repeat 1``). ``--base SRC`` also times
the spraylab in ``SRC`` (another checkout's ``src``, its extension built) in the same rotation.

The row also gives spraylab's ``packet_hops`` (every frame serialized onto a link, data and
control) for the work done.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from nscc_side_by_side import (  # noqa: E402  (a sibling script, not a package)
    htsim_end_us,
    htsim_run,
    spraylab_scenario,
    topo_rate_gbps,
)

# The measured command runs under this small interpreter, which forks it and reports its rusage:
# a command started straight from this process would report at least this process's own peak RSS
# (about 120 MB once a run's tables are loaded), because Linux carries the high-water mark of the
# memory a child starts from into its ``ru_maxrss`` at exec, and subprocess starts it from ours.
_FORK_AND_WAIT = """
import json, os, sys
pid = os.fork()
if pid == 0:
    os.dup2(os.open(os.devnull, os.O_WRONLY), 1)
    os.execvp(sys.argv[1], sys.argv[1:])
_, status, usage = os.wait4(pid, 0)
print(json.dumps([os.waitstatus_to_exitcode(status), usage.ru_utime, usage.ru_maxrss]))
"""


def timed(cmd: list[str], env: dict[str, str] | None = None, cwd: Path | None = None) -> dict[str, float]:
    """Run ``cmd`` to completion: its user CPU and peak RSS (the kernel's accounting)."""
    t0 = time.monotonic()
    proc = subprocess.run(
        [sys.executable, "-S", "-c", _FORK_AND_WAIT, *cmd], capture_output=True, text=True, env=env, cwd=cwd
    )
    wall = time.monotonic() - t0
    if proc.returncode != 0 or json.loads(proc.stdout)[0] != 0:
        raise SystemExit(f"{' '.join(cmd)} failed: {proc.stderr}")
    _, user_cpu_s, maxrss_kb = json.loads(proc.stdout)
    return {
        "user_cpu_s": round(user_cpu_s, 3),
        "peak_rss_mb": round(maxrss_kb / 1024, 1),
        "wall_s": round(wall, 3),
    }


def packet_hops(result_dir: Path) -> int:
    """Frames serialized onto links in a saved spraylab run (data and control)."""
    from spraylab.metrics.result import Result

    return int(Result.load(result_dir).summary.get("packet_hops") or 0)


def median(rows: list[dict[str, float]], key: str) -> float:
    values = sorted(r[key] for r in rows)
    return values[len(values) // 2]


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--htsim", type=Path, required=True, help="the htsim_uec binary")
    parser.add_argument("--case", action="append", required=True, help="TOPO:CM, htsim's own files")
    parser.add_argument("--scheme", default="oblivious", help="htsim load balancing: oblivious or reps")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--work", type=Path, default=Path("/tmp/htsim-cpu"))
    parser.add_argument("--json", type=Path)
    parser.add_argument("--base", type=Path, help="src directory of another spraylab, timed alternately too")
    args = parser.parse_args()
    args.work.mkdir(parents=True, exist_ok=True)
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    base_env = {**env, "PYTHONPATH": str(args.base.resolve())} if args.base is not None else env
    rows = []
    for case in args.case:
        topo, cm = (Path(part) for part in case.split(":"))
        probe = htsim_run(args.htsim, cm, topo, args.scheme, args.work)  # its settings, and a warm cache
        rate = topo_rate_gbps(topo)
        scenario, _ = spraylab_scenario(cm, topo, args.scheme, probe["settings"], rate, args.work)
        htsim_cmd = [
            str(args.htsim.resolve()), "-tm", str(cm.resolve()), "-topo", str(topo.resolve()),
            "-load_balancing_algo", args.scheme, "-end", str(htsim_end_us(cm, rate)),
            "-o", str((args.work / "htsim.dat").resolve()),
        ]  # fmt: skip
        out = args.work / f"spraylab_{cm.stem}_timed"
        spraylab_cmd = [sys.executable, "-m", "spraylab.cli", "run", str(scenario), "--out", str(out)]
        # this tree last in every round, so the saved run read for its hops is this tree's
        sides = {"spraylab": env} if args.base is None else {"base": base_env, "spraylab": env}
        runs: dict[str, list[dict[str, float]]] = {"htsim": [], **{side: [] for side in sides}}
        for _ in range(args.repeat):  # alternating, so machine load hits every side alike
            runs["htsim"].append(timed(htsim_cmd, cwd=args.work))  # its idmap.txt goes there
            for side, side_env in sides.items():
                subprocess.run(["rm", "-rf", str(out)], check=True)
                runs[side].append(timed(spraylab_cmd, side_env))
        hops = packet_hops(out)

        row: dict[str, Any] = {
            "case": f"{topo.name} + {cm.name}",
            "scheme": args.scheme,
            "flows": probe["flows"],
            "runs": runs,
            "spraylab_packet_hops": hops,
            "repeat": args.repeat,
            "when": time.strftime("%Y-%m-%d"),
        }
        for side in runs:
            row[f"{side}_user_cpu_s"] = median(runs[side], "user_cpu_s")
            row[f"{side}_peak_rss_mb"] = median(runs[side], "peak_rss_mb")
        row["cpu_ratio"] = round(row["spraylab_user_cpu_s"] / row["htsim_user_cpu_s"], 3)
        row["rss_ratio"] = round(row["spraylab_peak_rss_mb"] / row["htsim_peak_rss_mb"], 3)
        print(
            f"{row['case']}: htsim {row['htsim_user_cpu_s']} s {row['htsim_peak_rss_mb']} MB, "
            f"spraylab {row['spraylab_user_cpu_s']} s {row['spraylab_peak_rss_mb']} MB: "
            f"CPU {row['cpu_ratio']}x, RSS {row['rss_ratio']}x",
            flush=True,
        )
        if args.base is not None:
            row["base_src"] = str(args.base)
            for key in ("user_cpu_s", "peak_rss_mb"):
                row[f"spraylab_over_base_{key}"] = round(row[f"spraylab_{key}"] / row[f"base_{key}"], 3)
            print(
                f"  against {args.base}: user CPU {row['spraylab_over_base_user_cpu_s']}x, "
                f"peak RSS {row['spraylab_over_base_peak_rss_mb']}x",
                flush=True,
            )
        rows.append(row)
    if args.json:  # the rows of other cases (or schemes) already in the file are kept
        kept = json.loads(args.json.read_text())["rows"] if args.json.exists() else []
        done = {(row["case"], row["scheme"]) for row in rows}
        rows = [row for row in kept if (row["case"], row["scheme"]) not in done] + rows
        rows.sort(key=lambda row: (row["flows"], row["scheme"]))
        meta = {"python": platform.python_version(), "when": time.strftime("%Y-%m-%d")}
        args.json.write_text(json.dumps({"meta": meta, "rows": rows}, indent=1) + "\n")


if __name__ == "__main__":
    main()
