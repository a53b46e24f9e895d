"""Run the reference benchmark scenarios, each in its own process, and print per benchmark:

* **data packet-hops/s** and **control hops/s** (ACK, NACK and CNP frames), separately: a
  packet-hop is one packet serialized onto one link (a data packet crossing a 3-tier fat-tree
  between pods makes 6), counted per second of the event loop's CPU time;
* the whole process's **user CPU** seconds and **peak RSS** (from ``wait4``: imports, build,
  event loop, result tables);
* **start-up** (process start to scenario loaded: interpreter, imports, validation), build, event
  loop and result times, and the **fixed cost**: the process's wall time outside the event loop.

Every child runs with the bytecode cache on (``child_env``), as an installed package does.

Then the start-up of ``import spraylab`` and ``spraylab --help`` (each the best of 3).

    .venv/bin/python benchmarks/run.py                  # (a) and (b); (c) only with --long
    .venv/bin/python benchmarks/run.py fat_tree_k16_rps  # one of them (a name also selects (c))
    .venv/bin/python benchmarks/run.py --long --json benchmarks/results.json
    .venv/bin/python benchmarks/run.py --base /tmp/base/src --repeat 3 fat_tree_k16_rps
    .venv/bin/python benchmarks/run.py --table benchmarks/results.json --readme README.md

``--readme`` rewrites the table between the ``<!-- benchmarks -->`` markers of a Markdown file from
the measurements (``--table`` takes them from a JSON file instead of running).

``--base SRC`` runs every benchmark alternately on this tree and on the engine in ``SRC`` (another
checkout's ``src`` directory, same scenario files) and prints the ratios of the medians.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).parent
SRC = HERE.parent / "src"
LONG = ("leaf_spine_8192_reps",)  # about 7 minutes: run only when named or with --long
STARTUP_COMMANDS = {
    "import spraylab": "import spraylab",
    "spraylab --help": (
        "import sys; sys.argv = ['spraylab', '--help']; from spraylab.cli import main; main()"
    ),
}


def route_hops(net: object, src: int, dst: int) -> int:
    """Links a packet from host ``src`` crosses to host ``dst`` along the first equal-cost
    candidate at every switch (every candidate is one hop closer, so all routes have this
    length). Written against the attributes every engine version has (``--base``)."""
    port = net.hosts[src].route[dst].port  # type: ignore[attr-defined]
    hops = 1
    while hasattr(port.peer_owner, "table"):
        port = port.peer_owner.table[dst][0]
        hops += 1
    return hops


def hop_counts(net: object, total_hops: int, drops: int) -> tuple[int, int, bool]:
    """(data hops, control hops, exact). Control hops: the receivers' ACK, NACK and CNP counts
    times the route length back; data hops: the rest of every port's packet count (which counts
    dropped data packets' hops up to their drop). Exact when no control frame was lost: when
    nothing was dropped, or when the data hops equal the data packets sent times their route
    length. Otherwise a lost control frame counted its whole route (at most 6 links each)."""
    control = data_check = 0
    for qp in net.qps:  # type: ignore[attr-defined]
        rx = qp.rx
        frames = rx.acks_sent + rx.nacks_sent + rx.cnps_sent
        control += frames * route_hops(net, qp.dst, qp.src)
        data_check += qp.sent_packets * route_hops(net, qp.src, qp.dst)
    data = total_hops - control
    return data, control, drops == 0 or data == data_check


def measure(path: Path, spawned: float) -> dict[str, object]:
    """Runs inside the child process; ``spawned`` is the parent's monotonic clock at spawn."""
    try:
        from spraylab.model.scenario import Scenario
        from spraylab.runs.experiment import build
    except ModuleNotFoundError:  # an engine from before the package was grouped (--base ef4c7ca)
        from spraylab.config import Scenario  # type: ignore[no-redef]
        from spraylab.experiment import build  # type: ignore[no-redef]

    scenario = Scenario.load(path)
    startup_s = time.monotonic() - spawned
    t0 = time.perf_counter()
    simulation = build(scenario)
    build_s = time.perf_counter() - t0
    cpu0, t1 = time.process_time(), time.perf_counter()
    simulation.run()
    loop_s = time.perf_counter() - t1
    loop_cpu_s = time.process_time() - cpu0
    t2 = time.perf_counter()
    s = simulation.result().summary
    result_s = time.perf_counter() - t2
    data, control, exact = hop_counts(simulation.net, s["packet_hops"], s["drops"])
    return {
        "scenario": path.stem,
        "hosts": s["hosts"],
        "scheme": s["scheme"],
        "stop": s["stop_reason"],
        "flows_completed": f"{s['flows_completed']}/{s['flows']}",
        "sim_time_us": round(s["sim_time_ps"] / 1e6, 1),
        "events": s["events"],
        "drops": s["drops"],
        "data_hops": data,
        "control_hops": control,
        "hop_split_exact": exact,
        "startup_s": round(startup_s, 3),
        "build_s": round(build_s, 3),
        "loop_s": round(loop_s, 2),
        "loop_cpu_s": round(loop_cpu_s, 2),
        "result_s": round(result_s, 3),
        "data_hops_per_s": round(data / loop_cpu_s),
        "control_hops_per_s": round(control / loop_cpu_s),
        "events_per_s": round(s["events"] / loop_cpu_s),
        "fixed_s": round(time.monotonic() - spawned - loop_s, 3),
    }


def child_env(src: Path) -> dict[str, str]:
    """The engine in ``src`` first on the path, with the bytecode cache on, as for an installed
    package (pip compiles it at install): an environment with PYTHONDONTWRITEBYTECODE would
    recompile every module at every start (about 0.2 s of a run's fixed cost). The cache lives
    in a temporary prefix, one per engine, so no source tree gains ``__pycache__`` files."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    tag = hashlib.sha1(str(src.resolve()).encode()).hexdigest()[:12]
    cache = Path(tempfile.gettempdir()) / "spraylab-bench-pycache" / tag
    return {**env, "PYTHONPATH": str(src), "PYTHONPYCACHEPREFIX": str(cache)}


def warm_bytecode(src: Path) -> None:
    """Compile the engine's modules into its cache before anything is timed."""
    subprocess.run(
        [sys.executable, "-m", "compileall", "-q", str(src)],
        env=child_env(src),
        check=True,
        capture_output=True,
    )


def run_child(path: Path, src: Path) -> dict[str, object]:
    """One benchmark in a fresh process: its own report plus the kernel's accounting of the
    whole process (user CPU, peak RSS)."""
    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
        spawned = time.monotonic()
        proc = subprocess.Popen(
            [sys.executable, __file__, "--child", str(path), "--spawned", repr(spawned)],
            stdout=out,
            stderr=err,
            env=child_env(src),
        )
        _, status, usage = os.wait4(proc.pid, 0)
        proc.returncode = os.waitstatus_to_exitcode(status)  # reaped here, not by Popen
        out.seek(0)
        err.seek(0)
        if proc.returncode:
            print(err.read(), file=sys.stderr)
            sys.exit(1)
        lines = out.read().strip().splitlines()
    row = json.loads(lines[-1])
    row["user_cpu_s"] = round(usage.ru_utime, 2)
    row["peak_rss_mb"] = round(usage.ru_maxrss / 1024, 1)  # Linux: KiB
    return row


def startup_times(src: Path, repeat: int = 3) -> dict[str, float]:
    times = {}
    for label, code in STARTUP_COMMANDS.items():
        best = float("inf")
        for _ in range(repeat):
            t0 = time.perf_counter()
            subprocess.run([sys.executable, "-c", code], env=child_env(src), check=True, capture_output=True)
            best = min(best, time.perf_counter() - t0)
        times[label] = round(best, 3)
    return times


def describe(row: dict[str, object]) -> str:
    exact = "" if row["hop_split_exact"] else f" (split approximate: {row['drops']:,} drops)"
    return (
        f"{row['scenario']}: {row['hosts']} hosts, {row['scheme']}, stop={row['stop']} "
        f"({row['flows_completed']} flows, {row['sim_time_us']} us simulated)\n"
        f"  data packet-hops/s {row['data_hops_per_s']:,}  control hops/s {row['control_hops_per_s']:,}"
        f"{exact}  ({row['data_hops']:,} + {row['control_hops']:,} hops, {row['events']:,} events,"
        f" per event-loop CPU second)\n"
        f"  process: user CPU {row['user_cpu_s']} s, peak RSS {row['peak_rss_mb']} MB;  start-up "
        f"{row['startup_s']} s, build {row['build_s']} s, event loop {row['loop_s']} s, result "
        f"{row['result_s']} s, fixed cost {row['fixed_s']} s"
    )


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("names", nargs="*", help="scenario names (files in benchmarks/ without .toml)")
    parser.add_argument("--long", action="store_true", help=f"also run {', '.join(LONG)}")
    parser.add_argument("--json", type=Path, help="also write the measurements here")
    parser.add_argument("--base", type=Path, help="src directory of an engine to compare against")
    parser.add_argument("--repeat", type=int, default=1, help="runs per benchmark (and per engine)")
    parser.add_argument("--readme", type=Path, help="rewrite the benchmark table of this Markdown file")
    parser.add_argument("--table", type=Path, help="take the measurements from this JSON file, run nothing")
    parser.add_argument("--child", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--spawned", type=float, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(measure(args.child, args.spawned)))
        return
    if args.table:
        report = json.loads(args.table.read_text())
        print(markdown_table(report))
        if args.readme:
            write_table(args.readme, markdown_table(report))
        return
    if args.names:
        paths = [HERE / f"{n}.toml" for n in args.names]
    else:
        paths = [p for p in sorted(HERE.glob("*.toml")) if args.long or p.stem not in LONG]
    engines = {"this": SRC} if args.base is None else {"this": SRC, "base": args.base}
    for src in engines.values():
        warm_bytecode(src)
    rows: dict[str, list[dict[str, object]]] = {}
    comparisons = []
    for path in paths:
        runs: dict[str, list[dict[str, object]]] = {name: [] for name in engines}
        for _ in range(args.repeat):
            for name, src in engines.items():  # alternating, so machine load hits both alike
                row = run_child(path, src)
                runs[name].append(row)
                print(f"[{name}] {describe(row)}", flush=True)
        rows[path.stem] = runs["this"]
        if args.base is not None:
            comparisons.append(compare(path.stem, runs["this"], runs["base"]))
            print(f"  {comparisons[-1]['text']}", flush=True)
    startup = {name: startup_times(src) for name, src in engines.items()}
    for name, times in startup.items():
        print(f"[{name}] start-up: " + ", ".join(f"{k} {v} s" for k, v in times.items()))
    if args.json:
        meta = {
            "python": platform.python_version(),
            "implementation": platform.python_implementation(),
            "machine": platform.machine(),
            "when": time.strftime("%Y-%m-%d"),
            "repeat": args.repeat,
        }
        report = {
            "meta": meta,
            "startup_s": startup["this"],
            "runs": [min(runs, key=lambda r: r["user_cpu_s"]) for runs in rows.values()],
        }
        if comparisons:
            report["base"] = {"src": str(args.base), "startup_s": startup["base"], "ratios": comparisons}
        args.json.write_text(json.dumps(report, indent=2) + "\n")
        if args.readme:
            write_table(args.readme, markdown_table(report))


MARK_BEGIN, MARK_END = "<!-- benchmarks -->", "<!-- /benchmarks -->"


LABELS = {
    "fat_tree_k16_rps": "(a) 1024-host fat-tree (k = 16), 100 Gb/s, 2 MB permutation, `rps`",
    "leaf_spine_128_ecmp": "(b) 128-host leaf-spine, 400 Gb/s, 8 MB permutation, `ecmp`",
    "leaf_spine_8192_reps": "(c) 8192-host leaf-spine, 400 Gb/s, 2 MB permutation, `reps`",
    "fat_tree_k8_rps": "(d) 128-host fat-tree (k = 8), 100 Gb/s, 2 MB permutation, `rps`",
}


def label(scenario: str) -> str:
    return LABELS.get(scenario, scenario)


def markdown_table(report: dict[str, object]) -> str:
    """The README's table: one row per benchmark, plus the ratios to the base engine if any."""
    ratios = {r["scenario"]: r for r in report.get("base", {}).get("ratios", [])}  # type: ignore[attr-defined]
    base_note = " | user CPU, peak RSS vs base" if ratios else ""
    lines = [
        "| benchmark | data hops/s | control hops/s | user CPU | peak RSS | start-up | fixed cost"
        + base_note
        + " |",
        "|---|---:|---:|---:|---:|---:|---:" + ("|---:" if ratios else "") + "|",
    ]
    for row in sorted(report["runs"], key=lambda r: label(r["scenario"])):  # type: ignore[union-attr]
        cells = [
            label(row["scenario"]),
            f"{row['data_hops_per_s']:,}",
            f"{row['control_hops_per_s']:,}",
            f"{row['user_cpu_s']} s",
            f"{row['peak_rss_mb']:.0f} MB",
            f"{row['startup_s']:.2f} s",
            f"{row['fixed_s']:.2f} s",
        ]
        r = ratios.get(row["scenario"])
        if ratios:
            cells.append(f"{r['user_cpu_s']:.2f}x, {r['peak_rss_mb']:.2f}x" if r else "-")
        lines.append("| " + " | ".join(cells) + " |")
    startup = report.get("startup_s", {})
    lines.append("")
    lines.append(
        "Start-up: "
        + "; ".join(f"`{k}` {v} s" for k, v in startup.items())  # type: ignore[union-attr]
        + f" (Python {report['meta']['python']}, {report['meta']['when']})."  # type: ignore[index]
    )
    return "\n".join(lines)


def write_table(path: Path, table: str) -> None:
    text = path.read_text()
    head, sep, rest = text.partition(MARK_BEGIN)
    _, sep2, tail = rest.partition(MARK_END)
    if not sep or not sep2:
        sys.exit(f"error: {path}: no {MARK_BEGIN} ... {MARK_END} markers")
    path.write_text(f"{head}{MARK_BEGIN}\n{table}\n{MARK_END}{tail}")


def compare(name: str, this: list[dict[str, object]], base: list[dict[str, object]]) -> dict[str, object]:
    """Ratios this / base of the medians over the alternating runs."""

    def median(rows: list[dict[str, object]], key: str) -> float:
        return statistics.median(float(r[key]) for r in rows)  # type: ignore[arg-type]

    ratios = {
        key: round(median(this, key) / median(base, key), 3)
        for key in ("user_cpu_s", "loop_cpu_s", "peak_rss_mb", "fixed_s")
    }
    text = f"{name} this/base: " + ", ".join(f"{k} {v}x" for k, v in ratios.items())
    return {"scenario": name, **ratios, "text": text}


if __name__ == "__main__":
    main()
