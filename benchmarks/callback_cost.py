"""What a scheme written in Python costs per packet over the compiled core (docs/core.md).

Benchmark (d) (128-host fat-tree, 2 MB permutation, ``rps`` over the ideal transport) runs
three ways, each in its own process, alternating, the best of ``--repeat``:

* **compiled**: ``rps`` as shipped, the core's ``UniformSelect`` at every switch;
* **python selector**: the same choice as a Python function ``(switch, pkt, cands) -> Port``
  installed on every switch (a researcher's own selector), drawing from the same random
  stream, so the run is the same to the bit (checked: same events, same completion time);
* **python sender hooks**: ``rps`` plus a sender-side Python scheme whose ``entropy`` and
  ``on_ack`` hooks run for every data packet and every ACK and change nothing.

and, for congestion control, the ``reps`` preset (the same 128-host fat-tree at 100 Gb/s, 2 MB
permutation, NSCC with trimming and the ``uec`` recovery) two ways:

* **nscc compiled**: NSCC as shipped, its per-ACK rule a kernel the queue pair calls in C;
* **nscc python on_ack**: a Python subclass of NSCC whose ``on_ack`` calls the kernel's rule
  (``super().on_ack``): the queue pair then calls every hook of the control through Python
  (the Python tier), so the run is the same to the bit and the difference is the Python call.

The cost of a callback is the event-loop CPU difference divided by the calls it made (the CC
rows against ``nscc compiled``, the others against ``compiled``).

    .venv/bin/python benchmarks/callback_cost.py [--repeat 3] [--json benchmarks/callback_cost.json]
    .venv/bin/python benchmarks/callback_cost.py --table benchmarks/callback_cost.json --doc docs/core.md

``--doc`` rewrites the table between the ``<!-- callback-cost -->`` markers of a Markdown file
(``--table`` takes the measurements from a JSON file instead of running).
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).parent
SCENARIO = HERE / "fat_tree_k8_rps.toml"
PRESET = "reps"
MODES = ("compiled", "python_selector", "python_sender_hooks", "nscc_compiled", "nscc_python_on_ack")
BASELINE = {
    "python_selector": "compiled",
    "python_sender_hooks": "compiled",
    "nscc_python_on_ack": "nscc_compiled",
}


def child(mode: str) -> dict[str, object]:
    """Runs in the child: build, install the Python parts, time the event loop."""
    from spraylab.lb.base import LoadBalancer
    from spraylab.model.library import load_scenario
    from spraylab.model.scenario import Scenario
    from spraylab.runs.experiment import build
    from spraylab.transport.cc.base import CONGESTION_CONTROLS
    from spraylab.transport.cc.nscc import Nscc

    calls = {"n": 0}

    class PythonOnAckNscc(Nscc):
        name = "nscc_python_on_ack"
        __slots__ = ()

        def on_ack(self, pkt: object) -> None:
            calls["n"] += 1
            super().on_ack(pkt)

    if mode.startswith("nscc"):
        CONGESTION_CONTROLS.register(PythonOnAckNscc)
        cc = "nscc" if mode == "nscc_compiled" else PythonOnAckNscc.name
        scenario = load_scenario(PRESET, {"transport.cc": cc, "run.progress": False})
    else:
        scenario = Scenario.load(SCENARIO)
    simulation = build(scenario)
    net = simulation.net
    if mode == "python_selector":
        random = net.switches[next(iter(net.switches))].select.random  # the stream rps draws

        def select(switch: object, pkt: object, cands: list) -> object:
            calls["n"] += 1
            return cands[int(random() * len(cands))]

        for switch in net.switches.values():
            switch.select = select
    elif mode == "python_sender_hooks":

        class Observer(LoadBalancer):
            def entropy(self, qp: object, psn: int) -> int:
                calls["n"] += 1
                return qp.entropy  # type: ignore[attr-defined]

            def on_ack(self, qp: object, pkt: object) -> None:
                calls["n"] += 1

        observer = Observer()
        for qp in net.qps:
            qp.lb = observer
    cpu0 = time.process_time()
    simulation.run()
    loop_cpu_s = time.process_time() - cpu0
    s = simulation.result().summary
    return {
        "mode": mode,
        "loop_cpu_s": loop_cpu_s,
        "events": s["events"],
        "completion_ps": s["completion_ps"],
        "python_calls": calls["n"],
    }


LABELS = {
    "compiled": "`rps` as shipped (compiled `UniformSelect`)",
    "python_selector": "the same choice as a Python selector on every switch",
    "python_sender_hooks": "`rps` + a Python sender scheme's `entropy` and `on_ack`",
    "nscc_compiled": "`reps` preset: NSCC as shipped (compiled kernel)",
    "nscc_python_on_ack": "the same NSCC with a Python `on_ack` (the Python tier)",
}


def table(runs: dict[str, dict[str, object]], when: str) -> str:
    rows = [
        "| run | event-loop CPU | Python calls | per call | same run as its compiled one |",
        "|---|---:|---:|---:|---|",
    ]
    for mode in MODES:
        row = runs[mode]
        per_call = f"{row['us_per_call']:.2f} µs" if row.get("us_per_call") is not None else "-"
        same = {True: "yes (same events, same completion)", False: "no"}.get(
            row.get("same_run_as_compiled"), "-"
        )  # type: ignore[arg-type]
        rows.append(
            f"| {LABELS[mode]} | {float(row['loop_cpu_s']):.3f} s | {int(row['python_calls']):,} | {per_call} | {same} |"  # type: ignore[arg-type]
        )
    return "\n".join(rows) + f"\n\nMeasured {when}.\n"


def write_doc(path: Path, text: str) -> None:
    doc = path.read_text()
    start, end = "<!-- callback-cost -->", "<!-- /callback-cost -->"
    new = re.sub(f"{start}.*?{end}", lambda _: f"{start}\n{text}{end}", doc, flags=re.S)
    if new == doc and start not in doc:
        raise SystemExit(f"{path}: no {start} markers")
    path.write_text(new)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--json", type=Path)
    parser.add_argument("--table", type=Path, help="take the measurements from this JSON file")
    parser.add_argument("--doc", type=Path, help="rewrite the table in this Markdown file")
    parser.add_argument("--child", choices=MODES, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(child(args.child)))
        return
    if args.table:
        stored = json.loads(args.table.read_text())
        text = table(stored["runs"], stored["when"])
        print(text)
        if args.doc:
            write_doc(args.doc, text)
        return
    best: dict[str, dict[str, object]] = {}
    for _ in range(args.repeat):
        for mode in MODES:
            out = subprocess.run(
                [sys.executable, __file__, "--child", mode], check=True, capture_output=True, text=True
            ).stdout
            row = json.loads(out.strip().splitlines()[-1])
            if mode not in best or row["loop_cpu_s"] < best[mode]["loop_cpu_s"]:
                best[mode] = row
    for mode, baseline in BASELINE.items():
        row, base = best[mode], best[baseline]
        if mode != "python_sender_hooks":  # the observer scheme adds no events but is not rps
            same = row["events"] == base["events"] and row["completion_ps"] == base["completion_ps"]
            row["same_run_as_compiled"] = same
        extra = float(row["loop_cpu_s"]) - float(base["loop_cpu_s"])
        row["us_per_call"] = round(extra / int(row["python_calls"]) * 1e6, 3) if row["python_calls"] else None
    for mode in MODES:
        print(json.dumps(best[mode]))
    when = time.strftime("%Y-%m-%d")
    if args.json:
        args.json.write_text(json.dumps({"when": when, "runs": best}, indent=1) + "\n")
    if args.doc:
        write_doc(args.doc, table(best, when))


if __name__ == "__main__":
    main()
