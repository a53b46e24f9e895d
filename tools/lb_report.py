"""Regenerate docs/results.md: the evidence for "Spraying over commodity RNICs".

    .venv/bin/python tools/lb_report.py            # the report (~15 min on 2 cores), writes docs/results.md
    .venv/bin/python tools/lb_report.py --full     # also the full-scale all-to-all (128 hosts x 8 MB per
                                                   # pair, ~10 min per run per core: about 30 min more on 2 cores)
    .venv/bin/python tools/lb_report.py --quick    # every study on a 16-host fabric with small flows: checks the tool

Every number in the page comes from ``spraylab.run`` on the scenario files in ``scenarios/lb/``,
each derived into variants exactly as ``spraylab compare FILE --lb scheme/recovery`` does
(``spraylab.cli.variant_scenario``), plus scheme parameters where a variant names some
(``tor_assist[mode=reorder]/gbn``, ``dfs[B=64]/sr``). Runs are independent and go through a
process pool (``--workers``, default 2). Each run's record (summary, wall time, the scenario it
ran) is written to ``out/lb_report/``; ``--reuse`` takes a record from there instead of running
again when its stored scenario equals the variant's (an interrupted report resumes; leave it out
after changing simulator code). ``--adopt DIR`` turns a result saved by ``Result.save`` into a
record if its scenario is one of the report's variants (how a long full-scale run made outside
the report is included).

The verdicts (met / not met) and the numbers quoted in the prose are computed here from the same
records as the tables; nothing in docs/results.md is typed by hand.
"""

from __future__ import annotations

import argparse
import json
import math
import multiprocessing as mp
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
SCENARIOS = ROOT / "scenarios" / "lb"
CACHE = ROOT / "out" / "lb_report"
PAGE = ROOT / "docs" / "results.md"
US = 1_000_000  # ps

ALIASES = {"B": "reorder_bound_packets", "loss": "loss_detection"}
# "dfs/sr" is DFS's defaults: B = "auto", the RNIC bitmap W = 128 on the 400G leaf-spine.
DFS_SPEC = "dfs[B=64]/sr"  # the spec's B = 64 for every flow, below one BDP here
DFS_HOLD = "dfs[loss=dfs]/sr"  # DFS's own loss detection instead of the RNIC's
DFS_BLIND = "dfs[path_aware=false]/sr"  # k random entropies, as a hash-oblivious NIC draws them
# The window B against one BDP (~100 packets on the 400G leaf-spine), with either loss detection.
DFS_B_SWEEP = [(b, f"dfs[B={b}]/sr", f"dfs[B={b},loss=dfs]/sr") for b in (32, 64, 96, 128)]


def _dcqcn_defaults() -> Any:
    from spraylab.config import DcqcnSection

    return DcqcnSection()


DCQCN = _dcqcn_defaults()

# --- variants and studies -----------------------------------------------------------------------


@dataclass(frozen=True)
class Variant:
    """``scheme[key=value,...]/recovery``: the scheme, its non-default parameters, the RNIC mode."""

    label: str

    @property
    def scheme(self) -> str:
        return self.label.split("/")[0].split("[")[0]

    @property
    def params(self) -> dict[str, Any]:
        head = self.label.split("/")[0]
        if "[" not in head:
            return {}
        out: dict[str, Any] = {}
        for item in head[head.index("[") + 1 : head.rindex("]")].split(","):
            key, _, raw = item.partition("=")
            value: Any = int(raw) if raw.lstrip("-").isdigit() else raw
            out[ALIASES.get(key.strip(), key.strip())] = value
        return out

    @property
    def recovery(self) -> str | None:
        _, _, rec = self.label.partition("/")
        return rec or None

    def overrides(self) -> dict[str, Any]:
        out: dict[str, Any] = {"lb": {"scheme": self.scheme, **self.params}}
        if self.recovery:
            out["transport.recovery"] = self.recovery
        return out

    def command(self, file: str) -> str:
        """The spraylab command that runs this variant alone."""
        if not self.params:
            return f"spraylab compare {file} --lb {self.label}"
        params = ",".join(f"{k}={v}" for k, v in self.params.items())
        recovery = f"/{self.recovery}" if self.recovery else ""
        return f'spraylab compare {file} --lb "{self.scheme}[{params}]{recovery}"'


@dataclass
class Study:
    file: str  # under scenarios/lb/
    variants: list[str]
    seeds: tuple[int, ...] = (1,)
    multi_seed: tuple[str, ...] = ()  # variants run for every seed in ``seeds``; the others for seeds[0] only
    tier: str = "report"  # "report" | "full" (only with --full)
    cost: float = 1.0  # relative run cost, to start the long runs first
    quick: dict[str, Any] = field(default_factory=dict)  # overrides for --quick

    @property
    def stem(self) -> str:
        return self.file.removesuffix(".toml")

    def seeds_of(self, label: str) -> tuple[int, ...]:
        return self.seeds if not self.multi_seed or label in self.multi_seed else self.seeds[:1]


SPRAYERS = ["rps", "spray_rr", "reps", "adaptive", "dfs", "dfs[B=64]"]
WCMP_SLOW = "wcmp[reaction_us=1000]/sr"  # a WCMP controller that reweights 1 ms after a link change
ASYM = [
    "ecmp/sr",
    "wcmp/sr",
    WCMP_SLOW,
    "flowlet/sr",
    *(f"{s}/sr" for s in SPRAYERS),
    DFS_HOLD,
    "reps[recycle_overtaken=false]/sr",
    "tor_assist/sr",
    "tor_assist[uplink=least_queued]/sr",
    *(f"{s}/ideal" for s in SPRAYERS),
]
# Claim 5 is judged on five-seed means of these (one seed is one draw of hash collisions).
ASYM_SEEDED = (
    "ecmp/sr",
    "wcmp/sr",
    "rps/sr",
    "spray_rr/sr",
    "reps/sr",
    "adaptive/sr",
    "dfs/sr",
    DFS_HOLD,
    # REPS and adaptive routing assume a transport that tolerates reordering: judged there too.
    "rps/ideal",
    "spray_rr/ideal",
    "reps/ideal",
    "adaptive/ideal",
)
# The asymmetry/failure studies, with their section titles.
ASYM_STUDIES = {
    "degraded_spine": "leaf0 <-> spine0 degraded to 25% of its rate from t = 0",
    "spine_link_failure": "leaf0 <-> spine0 fails at 50 us, routing reconverges 50 us later",
    "spine_link_failure_slow": "leaf0 <-> spine0 fails at 50 us, routing reconverges only after 10 ms",
}
ESSENTIAL = ["ecmp/gbn", "rps/gbn", "rps/sr", "rps/ideal", "tor_assist/sr", "tor_assist[mode=reorder]/gbn"]
LOSSY = ["rps/sr", "tor_assist/sr", "rps/gbn", "tor_assist[mode=reorder]/gbn", "rps/ideal"]
# The permutation variants run on three seeds (the last, flowlet/sr, is listed apart below).
PERMUTATION_SEEDED = (*ESSENTIAL[:1], "ecmp/sr", *ESSENTIAL[1:], "dfs/sr", DFS_SPEC, DFS_HOLD, "flowlet/sr")
QUICK_FABRIC = {"topology.leaves": 4, "topology.spines": 4, "topology.hosts_per_leaf": 4}

STUDIES = [
    Study(
        "permutation_128.toml",
        [
            *PERMUTATION_SEEDED[:-1],
            DFS_BLIND,
            *(lab for _, rnic, own in DFS_B_SWEEP for lab in (rnic, own) if lab not in PERMUTATION_SEEDED),
            "dfs/ideal",
            "dfs[B=64]/ideal",
            "spray_rr/sr",
            "reps/sr",
            "adaptive/sr",
            "wcmp/sr",
            "flowlet/sr",
            "flowlet/gbn",
        ],
        seeds=(1, 2, 3),
        multi_seed=PERMUTATION_SEEDED,
        cost=1.0,
        quick={**QUICK_FABRIC, "workload.0.size": "2MB"},
    ),
    Study(
        "alltoall_128x1MB.toml",
        ESSENTIAL,
        cost=100.0,
        quick={**QUICK_FABRIC, "workload.0.size": "256KB"},
    ),
    Study(
        "alltoall_128x8MB.toml",
        ESSENTIAL,
        tier="full",
        cost=300.0,
        quick={**QUICK_FABRIC, "workload.0.size": "1MB"},
    ),
    *(
        Study(
            f"{name}.toml",
            LOSSY,
            seeds=(1, 2, 3),
            multi_seed=("rps/sr", "tor_assist/sr", "rps/gbn", "tor_assist[mode=reorder]/gbn"),
            cost=2.0,
            quick={**QUICK_FABRIC, "workload.0.size": "4MB"},
        )
        for name in ("lossy_spine_0p1", "lossy_spine_1p")
    ),
    *(
        Study(
            f"{name}.toml",
            ASYM,
            seeds=(1, 2, 3, 4, 5),
            multi_seed=ASYM_SEEDED,
            cost=1.5,
            quick={**QUICK_FABRIC, "workload.0.size": "2MB"},
        )
        for name in ASYM_STUDIES
    ),
    Study(
        "wcmp_asymmetry.toml",
        ["ecmp/sr", "wcmp/sr"],
        seeds=(1, 2, 3, 4, 5),
        cost=1.0,
        quick={**QUICK_FABRIC, "workload.0.size": "64KB"},
    ),
    Study(
        "fat_tree_failure_unseen.toml",
        ["ecmp/sr", "rps/sr", "reps/sr", "dfs/sr", DFS_HOLD, "rps/ideal"],
        cost=1.5,
        quick={"topology.k": 4, "workload.0.size": "1MB"},
    ),
    Study(
        "allreduce_128.toml",
        ["ecmp/sr", "rps/ideal", "dfs/sr", DFS_SPEC, DFS_HOLD],
        cost=40.0,
        quick={**QUICK_FABRIC, "workload.0.size": "8MB"},
    ),
]


def study(stem: str) -> Study:
    return next(s for s in STUDIES if s.stem == stem)


# --- running --------------------------------------------------------------------------------------


def normalized(scenario_dict: dict[str, Any]) -> dict[str, Any]:
    """What identifies a run: the scenario without its output section and progress/budget knobs."""
    data = json.loads(json.dumps(scenario_dict))
    data.pop("output", None)
    for key in ("progress", "max_wall_s", "max_events"):
        data.get("run", {}).pop(key, None)
    return data


def job_scenario(file: str, label: str, seed: int, quick: dict[str, Any] | None) -> Any:
    from spraylab.cli import variant_scenario
    from spraylab.config import Scenario

    base = Scenario.load(SCENARIOS / file)
    overrides = dict(Variant(label).overrides())
    overrides["run.seed"] = seed
    overrides["run.progress"] = False
    if quick:
        overrides.update(quick)
    return variant_scenario(base, overrides)


def jsonable(value: Any) -> Any:
    if isinstance(value, dict):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [jsonable(v) for v in value]
    if hasattr(value, "item") and not isinstance(value, (str, bytes)):
        value = value.item()
    if isinstance(value, float) and (math.isnan(value) or math.isinf(value)):
        return None
    return value


def make_record(
    file: str, label: str, seed: int, scenario: Any, result: Any, wall_s: float
) -> dict[str, Any]:
    flows, links = result.flows, result.links
    summary = jsonable(dict(result.summary))
    summary.pop("scenario", None)
    event_links: dict[str, dict[str, int]] = {}
    for event in scenario.topology.events:
        a, b = event.link
        part = links[
            ((links["from"] == a) & (links["to"] == b)) | ((links["from"] == b) & (links["to"] == a))
        ]
        event_links[f"{a}-{b}"] = {
            "action": event.action,
            "drops": int(part["drops"].sum()),
            "tx_packets": int(part["tx_packets"].sum()),
        }
    done = flows[flows["completed"]]
    # Each flow against its own PSN window (DFS's B, per flow with B = "auto"); 0 = unbounded.
    bounded = flows[flows["psn_window"] > 0]
    bounds = sorted(int(b) for b in bounded["psn_window"].unique())
    return {
        "file": file,
        "label": label,
        "seed": seed,
        "scenario": normalized(scenario.to_dict()),
        "summary": summary,
        "wall_s": round(wall_s, 2),
        "flows": int(len(flows)),
        "flows_done": int(len(done)),
        "flows_with_timeouts": int((flows["timeouts"] > 0).sum()),
        "max_flow_retx": int(flows["retx_packets"].max()) if len(flows) else 0,
        "event_links": event_links,
        "psn_windows": bounds,
        # max over bounded flows of (max reorder - B): negative when every flow stayed within its bound
        "reorder_over_bound": int((bounded["max_reorder"] - bounded["psn_window"]).max()) if bounds else None,
    }


def run_job(job: tuple[str, str, int, dict[str, Any] | None]) -> dict[str, Any]:
    from spraylab.experiment import run

    file, label, seed, quick = job
    scenario = job_scenario(file, label, seed, quick)
    start = time.perf_counter()
    result = run(scenario)
    return make_record(file, label, seed, scenario, result, time.perf_counter() - start)


def record_path(cache: Path, file: str, label: str, seed: int) -> Path:
    safe = label.replace("/", "-").replace("[", "(").replace("]", ")").replace("=", "").replace(",", "_")
    return cache / file.removesuffix(".toml") / f"{safe}__s{seed}.json"


def run_all(
    jobs: list[tuple[str, str, int, dict[str, Any] | None]], workers: int, cache: Path, reuse: bool
) -> dict[tuple[str, str, int], dict[str, Any]]:
    records: dict[tuple[str, str, int], dict[str, Any]] = {}
    todo = []
    for job in jobs:
        file, label, seed, quick = job
        path = record_path(cache, file, label, seed)
        if reuse and path.exists():
            rec = json.loads(path.read_text())
            want = normalized(job_scenario(file, label, seed, quick).to_dict())
            if rec.get("scenario") == want:
                rec["reused"] = True
                records[(file, label, seed)] = rec
                continue
        todo.append(job)
    costs = {s.file: s.cost for s in STUDIES}
    todo.sort(key=lambda j: -costs[j[0]])
    print(
        f"{len(records)} records reused, {len(todo)} runs on {workers} workers", file=sys.stderr, flush=True
    )
    start = time.perf_counter()
    ctx = mp.get_context("fork")
    with ctx.Pool(workers, maxtasksperchild=1) as pool:
        for i, rec in enumerate(pool.imap_unordered(run_job, todo), 1):
            key = (rec["file"], rec["label"], rec["seed"])
            records[key] = rec
            path = record_path(cache, *key)
            path.parent.mkdir(parents=True, exist_ok=True)
            tmp = path.with_suffix(".tmp")
            tmp.write_text(json.dumps(rec, indent=1))
            tmp.replace(path)
            s = rec["summary"]
            print(
                f"[{i}/{len(todo)} {time.perf_counter() - start:6.0f}s] {rec['file']} {rec['label']} s{rec['seed']}: "
                f"{rec['wall_s']:.0f}s wall, completion {fmt_us(s.get('completion_ps'))} us, {s.get('stop_reason')}",
                file=sys.stderr,
                flush=True,
            )
    return records


def adopt(result_dir: Path, cache: Path) -> None:
    """Record a saved Result (e.g. a long full-scale run) if its scenario is one of the variants."""
    from spraylab.config import validate
    from spraylab.metrics.result import Result

    result = Result.load(result_dir)
    have = normalized(result.scenario)
    for st in STUDIES:
        for label in st.variants:
            for seed in st.seeds_of(label):
                sc = job_scenario(st.file, label, seed, None)
                if normalized(sc.to_dict()) == have:
                    wall = float(result.summary.get("wall_s", 0.0))
                    rec = make_record(st.file, label, seed, validate(result.scenario), result, wall)
                    path = record_path(cache, st.file, label, seed)
                    path.parent.mkdir(parents=True, exist_ok=True)
                    path.write_text(json.dumps(rec, indent=1))
                    print(f"adopted {result_dir} as {st.file} {label} seed {seed} -> {path}")
                    return
    raise SystemExit(f"{result_dir}: its scenario matches no variant of the report")


# --- reading records ------------------------------------------------------------------------------


class Records:
    def __init__(self, records: dict[tuple[str, str, int], dict[str, Any]]) -> None:
        self.records = records

    def get(self, stem: str, label: str, seed: int = 1) -> dict[str, Any] | None:
        return self.records.get((f"{stem}.toml", label, seed))

    def s(self, stem: str, label: str, key: str, seed: int = 1) -> Any:
        rec = self.get(stem, label, seed)
        if rec is None:
            return None
        return rec["summary"].get(key)

    def seeds(self, stem: str, label: str) -> list[dict[str, Any]]:
        return [r for (f, lab, _), r in sorted(self.records.items()) if f == f"{stem}.toml" and lab == label]

    def mean(self, stem: str, label: str, key: str) -> float | None:
        vals = [r["summary"].get(key) for r in self.seeds(stem, label)]
        vals = [v for v in vals if v is not None]
        return sum(vals) / len(vals) if vals else None

    def has(self, stem: str) -> bool:
        return any(f == f"{stem}.toml" for f, _, _ in self.records)


def fmt_us(ps: Any) -> str:
    if ps is None:
        return "-"
    us = ps / US
    return f"{us:,.0f}" if us >= 1000 else f"{us:.1f}"


def fmt_pct(x: Any, digits: int = 1) -> str:
    return "-" if x is None else f"{100 * x:.{digits}f}%"


def fmt_gbps(bps: Any) -> str:
    return "-" if bps is None else f"{bps / 1e9:.0f}"


def fmt_x(x: Any) -> str:
    return "-" if x is None else f"{x:.2f}x"


def fmt_int(x: Any) -> str:
    return "-" if x is None else f"{int(x):,}"


def fmt_bounds(record: dict[str, Any]) -> str:
    """The PSN windows (DFS's B) the run's flows had: one value, or the range with "auto"."""
    bounds = record.get("psn_windows") or []
    if not bounds:
        return "-"
    return str(bounds[0]) if len(bounds) == 1 else f"{bounds[0]}-{bounds[-1]}"


def fmt_bytes(x: Any) -> str:
    if x is None:
        return "-"
    x = float(x)
    for unit, div in (("MB", 1e6), ("KB", 1e3)):
        if x >= div:
            return f"{x / div:.2f} {unit}"
    return f"{x:.0f} B"


def ratio(a: Any, b: Any) -> float | None:
    if a is None or b is None or b == 0:
        return None
    return a / b


def verdict(ok: bool | None) -> str:
    return "n/a" if ok is None else ("**met**" if ok else "**not met**")


def table(header: list[str], rows: list[list[str]]) -> str:
    out = [
        "| " + " | ".join(header) + " |",
        "|" + "|".join("---" if i == 0 else "---:" for i in range(len(header))) + "|",
    ]
    out += ["| " + " | ".join(r) + " |" for r in rows]
    return "\n".join(out)


# --- the page ----------------------------------------------------------------------------------------

MAIN_COLS = [
    ("completion (us)", lambda r: fmt_us(r["summary"].get("completion_ps"))),
    ("FCT p50 (us)", lambda r: fmt_us(r["summary"].get("fct_p50_ps"))),
    ("goodput/rx (Gb/s)", lambda r: fmt_gbps(r["summary"].get("goodput_bps"))),
    ("retx ratio", lambda r: fmt_pct(r["summary"].get("retx_ratio"))),
    ("spurious retx", lambda r: fmt_pct(r["summary"].get("spurious_retx_ratio"), 2)),
    ("OOO discards", lambda r: fmt_int(r["summary"].get("discards"))),
    ("max reorder", lambda r: fmt_int(r["summary"].get("max_reorder"))),
    ("drops", lambda r: fmt_int(r["summary"].get("drops"))),
    ("timeouts", lambda r: fmt_int(r["summary"].get("timeouts"))),
    ("CNPs", lambda r: fmt_int(r["summary"].get("cnps"))),
    ("flows done", lambda r: f"{r['flows_done']}/{r['flows']}"),
    ("wall (s)", lambda r: f"{r['wall_s']:.0f}"),
]


def main_table(
    rec: Records, stem: str, labels: list[str], seed: int = 1, ref: str | None = "rps/ideal"
) -> str:
    header = ["variant", *(c for c, _ in MAIN_COLS)]
    if ref:
        header.insert(2, f"vs {ref}")
    rows = []
    ref_c = rec.s(stem, ref, "completion_ps", seed) if ref else None
    for label in labels:
        r = rec.get(stem, label, seed)
        if r is None:
            rows.append([f"`{label}`", *(["not run"] + ["-"] * (len(header) - 2))])
            continue
        cells = [f(r) for _, f in MAIN_COLS]
        if ref:
            cells.insert(1, fmt_x(ratio(r["summary"].get("completion_ps"), ref_c)))
        rows.append([f"`{label}`", *cells])
    return table(header, rows)


def seeds_table(rec: Records, stem: str, labels: list[str], ref: str = "rps/ideal") -> str:
    seeds = sorted({k[2] for k in rec.records if k[0] == f"{stem}.toml"})
    header = ["variant", *(f"seed {s} (us)" for s in seeds), "mean (us)", f"mean vs {ref}"]
    ref_mean = rec.mean(stem, ref, "completion_ps")
    rows = []
    for label in labels:
        vals = [rec.s(stem, label, "completion_ps", s) for s in seeds]
        m = rec.mean(stem, label, "completion_ps")
        rows.append([f"`{label}`", *(fmt_us(v) for v in vals), fmt_us(m), fmt_x(ratio(m, ref_mean))])
    return table(header, rows)


# Why a claim fails, for the verdicts that can (each is measured in the section it names).
_IDEAL_TAIL = (
    "over the ideal transport a loss costs one RTT, so avoiding the dead link is worth little; completion "
    "is set by the flow DCQCN cuts deepest, which then waits for the 300 us increase timer. REPS and adaptive "
    "routing, concentrating flows on recycled entropies or on locally short queues, have such a flow on "
    "nearly every seed, rps escapes it on some (per-seed table and CNP counts in section 5)"
)
WHY_NOT_MET = {
    "1 (all-to-all 8 MB/pair)": (
        "at 8 MB per pair the all-to-all is DCQCN-bound (even rps/ideal collects tens of CNPs per flow, a few "
        "at 1 MB per pair): flows cut to a fraction of line rate space their packets apart and spraying "
        "reorders less, so go-back-N loses less than half of the goodput; at 1 MB per pair and on the "
        "permutation it loses most (section 1)"
    ),
    "5 (degraded_spine, reps/sr)": (
        "a selective-repeat RNIC ACKs only hole fillers, the packets on the slowest path, so REPS recycles "
        "the slow entropies; without that rule it behaves like rps (section 5)"
    ),
    "5 (spine_link_failure, reps/sr)": "as with the degraded link: REPS recycles the slowest paths on sr (section 5)",
    "5 (degraded_spine, adaptive/sr)": (
        "switch-local queues cannot see the remote spine0 -> leaf0 downlink; DCQCN cuts the flows crossing it "
        "under every oblivious scheme (section 5)"
    ),
    "5 (degraded_spine, adaptive/ideal)": (
        "a tie with spray_rr: switch-local queues cannot see the remote spine0 -> leaf0 downlink (section 5)"
    ),
    "5 (spine_link_failure, adaptive/sr)": (
        "completion is set by RTOs of flows that lost packets on the dead link before reconvergence, which "
        "local queues do not predict (section 5)"
    ),
    "5 (spine_link_failure, reps/ideal)": _IDEAL_TAIL,
    "5 (spine_link_failure_slow, reps/ideal)": _IDEAL_TAIL,
    "5 (spine_link_failure, adaptive/ideal)": _IDEAL_TAIL,
    "5 (spine_link_failure_slow, adaptive/ideal)": _IDEAL_TAIL,
    "5 (spine_link_failure_slow, adaptive/sr)": (
        "leaf0 avoids its own dead uplink, but the other leaves, choosing by their own queues, keep sending "
        "leaf0-bound packets to spine0, whose only way to leaf0 is the dead link (section 5)"
    ),
    "5 (spine_link_failure, wcmp)": (
        "after reconvergence (50 us) the fabric is symmetric again and WCMP makes ECMP's choices; it drops "
        "fewer packets but completion is set by hash collisions (section 5)"
    ),
}


def claim_summary(verdicts: list[tuple[str, str, str, str]], prefix: str, all_met: str) -> str:
    """One sentence on the verdicts gathered so far whose claim starts with ``prefix``."""
    mine = [v for v in verdicts if v[0].startswith(prefix)]
    failed = [f"{v[0]}: {v[1]}" for v in mine if "not met" in v[3]]
    if not failed:
        return f"{all_met} ({len(mine)} checks)."
    return f"Not every check is met: {'; '.join(failed)}."


def claim5_prose(rec: Records, stem: str) -> str:
    """Interpretation of one asymmetry/failure table, numbers from the records."""

    def c(label: str) -> str:
        return fmt_us(rec.s(stem, label, "completion_ps"))

    def v(label: str, key: str) -> Any:
        return rec.s(stem, label, key)

    def m(label: str) -> str:
        return fmt_us(rec.mean(stem, label, "completion_ps"))

    oblivious = ["rps/sr", "spray_rr/sr", "reps/sr", "adaptive/sr", "tor_assist/sr"]
    worst_reorder = max(v(lab, "max_reorder") or 0 for lab in oblivious)
    timeouts = [v(lab, "timeouts") or 0 for lab in oblivious]
    reps_note = (
        f"REPS is held back on selective-repeat RNICs (`reps/sr` {c('reps/sr')} us, "
        f"{fmt_int(v('reps/sr', 'timeouts'))} timeouts): such an RNIC ACKs only packets that advance its expected "
        f"PSN, so the one ACK a reordered burst gets is for the hole filler, the packet every later one overtook, "
        f"i.e. the packet on the *slowest* path, and REPS recycles exactly that entropy (the paper assumes a "
        f"transport that ACKs every packet). `reps[recycle_overtaken=false]/sr`, which skips ACKs whose packet was "
        f"overtaken, takes {c('reps[recycle_overtaken=false]/sr')} us: it stops steering onto slow paths but, "
        f"with roughly one usable echo per several packets, mostly draws fresh random entropies like `rps`."
    )
    if stem == "spine_link_failure_slow":
        return (
            f"**Reading.** Routing does not reconverge during the run, so every switch keeps hashing onto the "
            f"dead link: oblivious spraying loses 1/8 of the packets to and from leaf0 for the whole run and each "
            f"lost tail costs an RTO ({min(timeouts)}-{max(timeouts)} timeouts per run): `rps/sr` {m('rps/sr')} us "
            f"and `spray_rr/sr` {m('spray_rr/sr')} us (five-seed means). REPS reads its own feedback: an entropy "
            f"whose packet died never comes back in an ACK, so it is not recycled, and after a timeout the flow "
            f"freezes on entropies known to work: `reps/sr` {m('reps/sr')} us. Here losses, not reordering, decide, "
            f"so its weakness on selective-repeat RNICs (recycling the hole fillers' slow paths) matters less. "
            f"Adaptive routing avoids leaf0's own dead uplink (a down port has no queue to compare), but the other "
            f"leaves keep sending leaf0-bound packets to spine0, whose only way to leaf0 is the dead link: "
            f"`adaptive/sr` {m('adaptive/sr')} us. DFS charges each hole to the path that carried it and retires a "
            f"path after three charges, and new paths avoid the links of dead ones ("
            f"{fmt_int(v('dfs/sr', 'lb.retired_dead'))} retired as dead on seed 1): `dfs/sr` {m('dfs/sr')} us; "
            f"with its own loss detection, which also probes a window that a lost NACK stalled, `{DFS_HOLD}` "
            f"{m(DFS_HOLD)} us. WCMP's weights follow link state within `refresh_us` (1 us: the model's WCMP "
            f"controller sees every link at once, an idealisation), so remote leaves stop sending leaf0-bound "
            f"traffic to spine0 while ECMP waits the 10 ms for routing: `wcmp/sr` {m('wcmp/sr')} us vs `ecmp/sr` "
            f"{m('ecmp/sr')} us; a controller that reweights only 1 ms after the failure (`{WCMP_SLOW}`) takes "
            f"{c(WCMP_SLOW)} us on seed 1 (`ecmp/sr` {c('ecmp/sr')} us). Over the ideal transport, which repairs each loss one RTT after sending it, the "
            f"dead link costs little: `rps/ideal` {c('rps/ideal')} us, `reps/ideal` {c('reps/ideal')} us, "
            f"`adaptive/ideal` {c('adaptive/ideal')} us. There, avoiding the dead link is worth less than "
            f"spreading: REPS's few recycled entropies and adaptive routing's local choices concentrate flows and "
            f"draw more ECN marks ({fmt_int(v('reps/ideal', 'cnps'))} and {fmt_int(v('adaptive/ideal', 'cnps'))} "
            f"CNPs against {fmt_int(v('rps/ideal', 'cnps'))} for `rps/ideal`), which DCQCN turns into cuts.\n"
        )
    if stem == "degraded_spine":
        return (
            f"**Reading.** On selective-repeat RNICs: `dfs/sr` {c('dfs/sr')} us (five-seed mean {m('dfs/sr')} us; "
            f"the spec's B = 64: {c(DFS_SPEC)} us), against {c('spray_rr/sr')} us for `spray_rr/sr`, {c('rps/sr')} us "
            f"for `rps/sr`, {c('reps/sr')} us for `reps/sr` and {c('adaptive/sr')} us for `adaptive/sr` (seed 1). "
            f"Every scheme that keeps sending a share of the traffic to and from leaf0 over the 100 Gb/s link builds "
            f"a standing queue there: packets on that path arrive hundreds of positions late (max reorder up to "
            f"{fmt_int(worst_reorder)} packets, {worst_reorder / 128:.0f}x the 128-packet bitmap), the RNIC discards "
            f"what lands beyond its bitmap and the flows stall for the 1 ms RTO ({min(timeouts)}-{max(timeouts)} "
            f"timeouts per run); the queue also marks ECN and DCQCN cuts every flow that sprays over it "
            f"({fmt_int(v('rps/ideal', 'cnps'))} CNPs under `rps/ideal`, which is as slow: "
            f"{c('rps/ideal')} us). The link keeps the ECN thresholds configured for its nominal 400 Gb/s (switch "
            f"profiles are set in bytes; they do not follow a lane failure), so the first mark needs a 400 KB queue, "
            f"~32 us at 100 Gb/s, more than the bitmap's worth of reordering. Schemes that steer away on echoed "
            f"feedback escape when every packet is acknowledged: `reps/ideal` {c('reps/ideal')} us, `dfs/ideal` "
            f"{c('dfs/ideal')} us. {reps_note} Adaptive routing sees only local queues: leaf0's own uplink to spine0 "
            f"is visible to leaf0, but the congested spine0 -> leaf0 downlink is chosen by the other leaves, which "
            f"cannot see it (`adaptive/ideal` {c('adaptive/ideal')} us). ToR-assisted spraying is not "
            f"asymmetry-aware: round-robin stamping puts 1/8 of every flow on the slow path (`tor_assist/sr` "
            f"{c('tor_assist/sr')} us), and `least_queued` stamping, which sees only the source ToR's queues, does "
            f"not help ({c('tor_assist[uplink=least_queued]/sr')} us). WCMP weights each uplink by the capacity it "
            f"can deliver to the destination, so remote leaves send 1/29 instead of 1/8 of their leaf0-bound flows "
            f"via spine0: five-seed mean {m('wcmp/sr')} us vs {m('ecmp/sr')} us for `ecmp/sr`; on a given seed the "
            f"two tie when the slowest flow is a hash collision that never touches leaf0 (seed 1: {c('wcmp/sr')} vs "
            f"{c('ecmp/sr')} us).\n"
        )
    return (
        f"**Reading.** On selective-repeat RNICs: `dfs/sr` {c('dfs/sr')} us (five-seed mean {m('dfs/sr')} us; "
        f"{fmt_int(v('dfs/sr', 'timeouts'))} timeouts; the spec's B = 64: {c(DFS_SPEC)} us); it charges each "
        f"hole to the path that carried it and retires dead paths before routing reconverges "
        f"({fmt_int(v('dfs/sr', 'lb.retired_dead'))} retired as dead on seed 1). What is left are the RNIC's RTOs "
        f"when a NACK dies (its ACK path crosses the dead link) while the window is full: nothing new arrives "
        f"to trigger another. DFS's own loss detection probes such a stalled window: `{DFS_HOLD}` {m(DFS_HOLD)} us "
        f"(five-seed mean, {fmt_int(v(DFS_HOLD, 'timeouts'))} timeouts on seed 1). `adaptive/sr` {c('adaptive/sr')} us (mean {m('adaptive/sr')}), `tor_assist/sr` "
        f"{c('tor_assist/sr')} us, `rps/sr` {c('rps/sr')} us (mean {m('rps/sr')}), `spray_rr/sr` "
        f"{c('spray_rr/sr')} us (mean {m('spray_rr/sr')}) and `reps/sr` {c('reps/sr')} us (mean {m('reps/sr')}) "
        f"keep losing packets on the dead link until routing reconverges, and each lost tail costs an RTO "
        f"({min(timeouts)}-{max(timeouts)} timeouts per run). {reps_note} With the `ideal` transport, which "
        f"repairs every loss about one RTT after sending it, the same schemes take {c('rps/ideal')} us "
        f"(`rps/ideal`), {c('reps/ideal')} us (`reps/ideal`), {c('adaptive/ideal')} us (`adaptive/ideal`) and "
        f"{c('dfs/ideal')} us (`dfs/ideal`): the failure itself costs little; RTOs on the RNICs cost the rest "
        f"(CNPs: {fmt_int(v('rps/ideal', 'cnps'))} `rps/ideal`, {fmt_int(v('reps/ideal', 'cnps'))} `reps/ideal`, "
        f"{fmt_int(v('adaptive/ideal', 'cnps'))} `adaptive/ideal`). "
        f"`ecmp/sr` and `wcmp/sr` (five-seed means {m('ecmp/sr')} and {m('wcmp/sr')} us) are bound by hash "
        f"collisions and DCQCN: 50 us after the failure routing removes spine0 for leaf0 and the fabric is "
        f"symmetric again, so WCMP's equal weights make the same choices as ECMP; it only avoids the dead link "
        f"during the 50 us before reconvergence, which shows as fewer drops (mean "
        f"{fmt_int(rec.mean(stem, 'wcmp/sr', 'drops'))} vs {fmt_int(rec.mean(stem, 'ecmp/sr', 'drops'))}), not as "
        f"faster completion.\n"
    )


def build_page(rec: Records, meta: dict[str, Any]) -> str:
    from spraylab.net.framing import data_wire_bytes

    WIRE_4K = data_wire_bytes(4096)  # a full 4 KB data packet on the wire
    P = "permutation_128"
    A = "alltoall_128x1MB"
    F = "alltoall_128x8MB"
    out: list[str] = []
    w = out.append
    verdicts: list[tuple[str, str, str, str]] = []

    w("# Results: spraying over commodity RNICs\n")
    w(
        "<!-- Generated by tools/lb_report.py from scenarios/lb/*.toml. Do not edit by hand. -->\n"
        "Regenerate (every table, verdict and number on this page):\n\n"
        "```bash\n.venv/bin/python tools/lb_report.py            # the report below\n"
        ".venv/bin/python tools/lb_report.py --full     # + full-scale all-to-all (128 hosts x 8 MB per pair), ~30 min more on 2 cores\n```\n"
    )
    total_min = sum(r["wall_s"] for r in rec.records.values()) / 60
    w(
        f"Rendered {meta['date']} at code `{meta['commit']}`{' + uncommitted changes' if meta['dirty'] else ''} from "
        f"{len(rec.records)} run records (`out/lb_report/`; this invocation ran {meta['runs'] - meta['reused']} of "
        f"them). The records' run times add up to {total_min:.0f} min on one core each; without `--reuse` the tool "
        f"reruns every record, on `--workers` processes (default 2)"
        f"{'. QUICK MODE (16-host fabric, small flows): not the evidence' if meta['quick'] else ''}.\n"
    )
    w("## Setup\n")
    w(
        "Unless a section says otherwise: a **non-blocking two-tier leaf-spine of 128 hosts** (16 leaves x 8 hosts, "
        "8 spines, every link 400 Gb/s, 1 us per hop), shared-buffer lossy switches (64 MB, ECN 100-400 KB per "
        "100 Gb/s), RoCEv2 RNICs with DCQCN (ConnectX's firmware defaults, also the HPCC/ConWeave simulators' timing), 4096 B MTU, "
        "an ACK per packet, RTO 1 ms, out-of-order bitmap 128 packets for selective repeat. Recovery modes: `gbn` = "
        "go-back-N (ConnectX default: discard anything ahead of the expected PSN, NACK), `sr` = selective repeat "
        "(accept into the bitmap, NACK the gap at once), `ideal` = reorder-tolerant SACK transport (the reference "
        "that spraying 'should' reach). A variant `scheme[param=value]/recovery` is the scenario file with "
        "`lb.scheme`, its parameters and `transport.recovery` replaced (`dfs[B=64]` = DFS with "
        '`reorder_bound_packets = 64` instead of its default `"auto"`, `loss=dfs` = `loss_detection = "dfs"`, DFS\'s own loss detection instead of '
        "the RNIC's; `tor_assist` alone = mode `nack_filter`). `completion` = first byte to the "
        "last flow's last byte; `goodput/rx` = payload bits per second of each receiver's active span, averaged "
        "over receivers; `retx ratio` and `spurious retx` are per data packet sent (spurious = a retransmission "
        "of a packet the receiver already had). One seed per run unless a table shows seeds.\n"
    )
    w("Scenario files (each runs alone with the command in its header comment):\n")
    rows = []
    for st in STUDIES:
        status = "report" if st.tier == "report" else "`--full` only"
        rows.append(
            [
                f"`scenarios/lb/{st.file}`",
                status,
                ", ".join(f"`{v}`" for v in st.variants),
                ", ".join(map(str, st.seeds))
                + (
                    f" ({', '.join(f'`{v}`' for v in st.multi_seed)}; others seed {st.seeds[0]})"
                    if st.multi_seed
                    else ""
                ),
            ]
        )
    w(table(["file", "runs in", "variants", "seeds"], rows) + "\n")

    # ---------------------------------------------------------------- claim 1
    w("## 1. The problem, measured: packet spraying over commodity RNICs\n")
    c1 = [
        "ecmp/gbn",
        "ecmp/sr",
        "rps/gbn",
        "rps/sr",
        "rps/ideal",
        "tor_assist/sr",
        "tor_assist[mode=reorder]/gbn",
    ]
    w(
        f"### Permutation, 128 hosts x 8 MB (seed 1)\n\n`{Variant('rps/gbn').command('scenarios/lb/permutation_128.toml')}`\n"
    )
    w(main_table(rec, P, c1) + "\n")
    w("Completion time over three seeds (a new random permutation per seed):\n")
    w(seeds_table(rec, P, c1) + "\n")
    a2a_note = (
        "**Scale note.** The issue asks for all-to-all of >= 8 MB per pair on >= 128 hosts: 130 GB per run, "
        "~32 M data packets, ~3e8 events with the ACKs. "
    )
    small = [rec.get(A, lab) for lab in ESSENTIAL]
    if all(small):
        walls = ", ".join(f"`{lab}` {r['wall_s'] / 60:.0f} min" for lab, r in zip(ESSENTIAL, small))
        a2a_note += (
            f"At 1 MB per pair the six essential variants took {walls} of run time in this report run; 8 MB per "
            f"pair is 8x the packets, more than the report's budget on 2 "
            f"cores. "
        )
    full_runs = [(lab, rec.get(F, lab)) for lab in ESSENTIAL if rec.get(F, lab) is not None]
    a2a_note += (
        "So the report runs the all-to-all on the same 128 hosts with **1 MB per pair** (16,256 flows, 16 GB, "
        "~4 M data packets), and the 8 MB file (`scenarios/lb/alltoall_128x8MB.toml`) runs only with `--full`. "
    )
    if full_runs:
        a2a_note += (
            f"{len(full_runs)} of the {len(ESSENTIAL)} essential variants have been run at full scale, taking "
            + ", ".join(f"`{lab}` {r['wall_s'] / 60:.0f} min" for lab, r in full_runs)
            + ": their table follows the 1 MB one.\n"
        )
    else:
        a2a_note += "None has been run at full scale with the current code and scenario.\n"
    w("### All-to-all, 128 hosts x 1 MB per pair (reduced: see the scale note)\n")
    w(a2a_note)
    w(main_table(rec, A, ESSENTIAL) + "\n")
    w("### All-to-all, 128 hosts x 8 MB per pair (full scale, `--full`)\n")
    w(main_table(rec, F, ESSENTIAL) + "\n")
    bound_full = 127 * 8e6 * 8 / 400e9 * 1e12  # ps: each host sends (and receives) 127 x 8 MB at 400 Gb/s
    done_full = [lab for lab in ESSENTIAL if rec.get(F, lab) is not None]
    if done_full:
        w(
            "Line-rate bound for this workload: 127 x 8 MB per host at 400 Gb/s = "
            f"{fmt_us(bound_full)} us. "
            + "; ".join(
                f"`{lab}`: {fmt_us(rec.s(F, lab, 'completion_ps'))} us = "
                f"{fmt_x(rec.s(F, lab, 'completion_ps') / bound_full)} of the bound"
                for lab in done_full
            )
            + f". Variants not run at full scale: {', '.join(f'`{lab}`' for lab in ESSENTIAL if lab not in done_full) or 'none'}.\n"
        )

    # claim-1 verdicts and prose
    for stem, name in ((P, "permutation"), (A, "all-to-all 1 MB/pair"), (F, "all-to-all 8 MB/pair")):
        g_gbn, g_ideal, g_ecmp = (rec.s(stem, v, "goodput_bps") for v in ("rps/gbn", "rps/ideal", "ecmp/gbn"))
        c_gbn, c_ideal, c_ecmp = (
            rec.s(stem, v, "completion_ps") for v in ("rps/gbn", "rps/ideal", "ecmp/gbn")
        )
        if g_gbn is None or g_ideal is None:
            continue
        loses = 1 - g_gbn / g_ideal
        ok = c_ideal is not None and c_gbn is not None and loses > 0.5
        spur = rec.s(stem, "rps/sr", "spurious_retx_ratio")
        retx = rec.s(stem, "rps/gbn", "retx_ratio")
        verdicts.append(
            (
                f"1 ({name})",
                "rps + go-back-N loses most goodput vs the ideal transport; retx and spurious ratios reported",
                f"rps/gbn goodput {fmt_gbps(g_gbn)} Gb/s vs rps/ideal {fmt_gbps(g_ideal)} ({fmt_pct(loses)} lost), "
                f"vs ecmp/gbn {fmt_gbps(g_ecmp)}; completion {fmt_us(c_gbn)} us vs {fmt_us(c_ideal)} (ideal), "
                f"{fmt_us(c_ecmp)} (ecmp/gbn); retx {fmt_pct(retx)}; rps/sr spurious {fmt_pct(spur, 2)}",
                verdict(ok),
            )
        )
    g = {v: rec.s(P, v, "goodput_bps") for v in c1}
    c = {v: rec.s(P, v, "completion_ps") for v in c1}
    if all(x is not None for x in (*g.values(), *c.values())):
        w(
            f"**Reading.** On the permutation, random packet spraying over go-back-N RNICs (`rps/gbn`) delivers "
            f"{fmt_gbps(g['rps/gbn'])} Gb/s per receiver where the same spraying over a reorder-tolerant transport "
            f"delivers {fmt_gbps(g['rps/ideal'])} Gb/s: {fmt_pct(1 - g['rps/gbn'] / g['rps/ideal'])} of the goodput "
            f"is lost; {fmt_pct(rec.s(P, 'rps/gbn', 'retx_ratio'))} of the packets sent are retransmissions and "
            f"{fmt_int(rec.s(P, 'rps/gbn', 'discards'))} sprayed packets were discarded by the RNICs for arriving "
            f"ahead of the expected PSN, with {fmt_int(rec.s(P, 'rps/gbn', 'drops'))} packets lost in the network. "
            f"Completion is {fmt_x(ratio(c['rps/gbn'], c['rps/ideal']))} that of `rps/ideal`. Selective repeat "
            f"does not rescue it: `rps/sr` retransmits {fmt_pct(rec.s(P, 'rps/sr', 'spurious_retx_ratio'), 2)} of "
            f"its packets spuriously (NACKs for reordering, not loss)"
            + (
                f", and reordering beyond the 128-packet bitmap (max reorder "
                f"{fmt_int(rec.s(P, 'rps/sr', 'max_reorder'))}) makes the RNIC discard "
                f"{fmt_int(rec.s(P, 'rps/sr', 'discards'))} packets silently, recovered only by the 1 ms RTO "
                f"({fmt_int(rec.s(P, 'rps/sr', 'timeouts'))} timeouts)"
                if (rec.s(P, "rps/sr", "timeouts") or 0) > 0
                else ""
            )
            + f"; `rps/sr` completes in {fmt_us(c['rps/sr'])} us, {fmt_x(ratio(c['rps/sr'], c['rps/ideal']))} "
            f"of ideal.\n\n"
            f"ECMP is not a good alternative here either: `ecmp/gbn` completes in {fmt_us(c['ecmp/gbn'])} us "
            f"({fmt_x(ratio(c['ecmp/gbn'], c['rps/ideal']))} of `rps/ideal`; three-seed mean "
            f"{fmt_x(ratio(rec.mean(P, 'ecmp/gbn', 'completion_ps'), rec.mean(P, 'rps/ideal', 'completion_ps')))}). "
            f"Hash collisions put two or more 8 MB flows on one uplink (uplink imbalance, max/mean bytes over a "
            f"switch's uplinks: {rec.s(P, 'ecmp/gbn', 'uplink_imbalance_max'):.2f} vs "
            f"{rec.s(P, 'rps/ideal', 'uplink_imbalance_max'):.2f} for `rps/ideal`), the queue crosses the ECN threshold, and "
            f"DCQCN cuts the colliding flows' rates: the queue keeps marking while it drains, so its flows are cut "
            f"every few us until it is empty and climb back only on the {DCQCN.increase_timer / US:.0f} us increase "
            f"timer and the {fmt_bytes(DCQCN.byte_counter)} byte counter (see Caveats on DCQCN). Its median FCT ({fmt_us(rec.s(P, 'ecmp/gbn', 'fct_p50_ps'))} us) and per-receiver goodput "
            f"({fmt_gbps(g['ecmp/gbn'])} Gb/s) are better than its completion time suggests: ECMP's cost is the "
            f"tail of unlucky flows, spraying-over-GBN's cost is spread over every flow.\n"
        )
    ga = {v: rec.s(A, v, "goodput_bps") for v in ESSENTIAL}
    ca = {v: rec.s(A, v, "completion_ps") for v in ESSENTIAL}
    if all(x is not None for x in (*ga.values(), *ca.values())):
        lost = 1 - ga["rps/gbn"] / ga["rps/ideal"]
        w(
            f"On the all-to-all (1 MB per pair, at most 8 sends and 8 receives in flight per host, in shift order, as NCCL and "
            f"MPI schedule it) spraying over go-back-N {'collapses too' if lost > 0.5 else 'loses less'}: "
            f"`rps/gbn` delivers {fmt_gbps(ga['rps/gbn'])} Gb/s per receiver against {fmt_gbps(ga['rps/ideal'])} "
            f"for `rps/ideal` ({fmt_pct(lost)} lost), completes in {fmt_us(ca['rps/gbn'])} us "
            f"({fmt_x(ratio(ca['rps/gbn'], ca['rps/ideal']))} of `rps/ideal`), retransmits "
            f"{fmt_pct(rec.s(A, 'rps/gbn', 'retx_ratio'))} of its packets ({fmt_int(rec.s(A, 'rps/gbn', 'discards'))} "
            f"discards, {fmt_int(rec.s(A, 'rps/gbn', 'drops'))} packets dropped by full switch buffers, "
            f"{fmt_int(rec.s(A, 'rps/gbn', 'timeouts'))} timeouts): every host's go-back-N rewinds resend whole "
            f"windows into a fabric that all hosts load at once. `rps/sr` retransmits "
            f"{fmt_pct(rec.s(A, 'rps/sr', 'spurious_retx_ratio'), 2)} spuriously and completes in "
            f"{fmt_us(ca['rps/sr'])} us. The line-rate completion is 127 MB / 400 Gb/s = "
            f"{127e6 * 8 / 400e9 * 1e6:,.0f} us per host. `ecmp/gbn` takes {fmt_us(ca['ecmp/gbn'])} us "
            f"({fmt_x(ratio(ca['ecmp/gbn'], ca['rps/ideal']))}; {fmt_int(rec.s(A, 'ecmp/gbn', 'cnps'))} CNPs).\n\n"
            "Why the schedule matters: with all 127 peers at once (`peers_in_flight = 0`), the NIC's round robin "
            "over 127 active queue pairs spaces one flow's packets ~127 packet times (~10 us) apart, longer than "
            "the queueing-delay differences between spines, so a flow's packets never overtake each other and "
            "`rps/gbn` stayed within 1% of `rps/ideal` (measured in the previous version of this page). Collective "
            "libraries do not post 127 peers at once; with 8 in flight one flow's packets are ~8 packet times "
            "apart and spraying reorders them as on the permutation.\n"
        )
        if all(rec.get(F, v) for v in ("rps/gbn", "rps/ideal", "ecmp/gbn", "rps/sr")):
            w(
                f"At full scale (8 MB per pair): `rps/gbn` {fmt_us(rec.s(F, 'rps/gbn', 'completion_ps'))} us = "
                f"{fmt_x(ratio(rec.s(F, 'rps/gbn', 'completion_ps'), rec.s(F, 'rps/ideal', 'completion_ps')))} of "
                f"`rps/ideal`, retransmission ratio {fmt_pct(rec.s(F, 'rps/gbn', 'retx_ratio'), 3)}, `rps/sr` "
                f"spurious ratio {fmt_pct(rec.s(F, 'rps/sr', 'spurious_retx_ratio'), 3)}, `ecmp/gbn` "
                f"{fmt_us(rec.s(F, 'ecmp/gbn', 'completion_ps'))} us. Even `rps/ideal` is "
                f"{fmt_x(rec.s(F, 'rps/ideal', 'completion_ps') / (127 * 8e6 * 8 / 400e9 * 1e12))} of the line-rate "
                f"bound at this size ({fmt_int(rec.s(F, 'rps/ideal', 'cnps'))} CNPs, "
                f"{fmt_int(rec.s(F, 'rps/ideal', 'drops'))} drops, against "
                f"{fmt_int(rec.s(A, 'rps/ideal', 'cnps'))} at 1 MB per pair): a host whose lanes wait on busy "
                f"receivers sends its remaining flows faster, a receiver can then get more than line rate, and "
                f"DCQCN cuts the flows it marks (see Caveats on DCQCN). Flows at a fraction of line rate space "
                f"their packets further apart than the spines' queueing-delay differences, so spraying reorders "
                f"less: go-back-N loses {fmt_pct(1 - rec.s(F, 'rps/gbn', 'goodput_bps') / rec.s(F, 'rps/ideal', 'goodput_bps'))} "
                f"of `rps/ideal`'s goodput here, "
                f"{fmt_pct(1 - rec.s(A, 'rps/gbn', 'goodput_bps') / rec.s(A, 'rps/ideal', 'goodput_bps'))} at "
                f"1 MB per pair.\n"
            )

    # ---------------------------------------------------------------- claim 2
    w("## 2. ToR-assisted spraying fixes it\n")
    rows = []
    for stem, name in (
        (P, "permutation 128 x 8 MB"),
        (A, "all-to-all 128 x 1 MB/pair"),
        (F, "all-to-all 128 x 8 MB/pair"),
    ):
        ideal = rec.s(stem, "rps/ideal", "completion_ps")
        for label in ("tor_assist/sr", "tor_assist[mode=reorder]/gbn"):
            r = rec.get(stem, label)
            if r is None:
                continue
            s = r["summary"]
            per_tor = s.get("lb.reseq_peak_bytes_per_tor") or {}
            nonzero = [v for v in per_tor.values() if v]
            rows.append(
                [
                    name,
                    f"`{label}`",
                    fmt_us(s.get("completion_ps")),
                    fmt_x(ratio(s.get("completion_ps"), ideal)),
                    fmt_pct(s.get("spurious_retx_ratio"), 3),
                    fmt_int(s.get("discards")),
                    fmt_int(s.get("lb.nacks_dropped")),
                    fmt_int(s.get("lb.nacks_forwarded")),
                    fmt_int(s.get("lb.cnps_dropped")),
                    fmt_bytes(s.get("lb.reseq_peak_bytes")),
                    f"{fmt_bytes(min(nonzero))} - {fmt_bytes(max(nonzero))}" if nonzero else "-",
                    f"{s.get('lb.tor_dst_flow_state_bytes')} B + {s.get('lb.tor_src_flow_state_bytes')} B",
                    fmt_int(s.get("lb.tor_max_flows_tracked")),
                    fmt_us(s.get("lb.tor_max_hold_timeout_ps")),
                ]
            )
            limit = 1.10 if label == "tor_assist/sr" else 1.15
            rel = ratio(s.get("completion_ps"), ideal)
            if label == "tor_assist/sr":
                ok = rel is not None and rel <= limit and (s.get("spurious_retx_ratio") or 0) <= 0.01
                crit = "nack_filter + sr: spurious <= 1% and completion <= 1.10 x rps/ideal"
                got = f"spurious {fmt_pct(s.get('spurious_retx_ratio'), 3)}, completion {fmt_x(rel)} of rps/ideal"
            else:
                ok = rel is not None and rel <= limit
                crit = "reorder + gbn: completion <= 1.15 x rps/ideal; peak reseq bytes per ToR reported"
                got = f"completion {fmt_x(rel)} of rps/ideal, peak reseq buffer {fmt_bytes(s.get('lb.reseq_peak_bytes'))}/ToR"
            verdicts.append((f"2 ({name})", crit, got, verdict(ok)))
    w(
        table(
            [
                "workload",
                "variant",
                "completion (us)",
                "vs rps/ideal",
                "spurious retx",
                "OOO discards",
                "NACKs dropped at ToR",
                "NACKs forwarded",
                "CNPs dropped",
                "peak reseq buffer (max ToR)",
                "peak reseq range over ToRs",
                "state per flow (dst + src ToR)",
                "max flows per ToR",
                "max hold_timeout (us)",
            ],
            rows,
        )
        + "\n"
    )
    s = rec.get(P, "tor_assist/sr")
    if s is not None:
        ss = s["summary"]
        w(
            f"State: the destination ToR keeps, per active flow, a 32-bit `path_seq` and a 32-bit PSN per uplink "
            f"path (8 here), the `window`-bit map of passed PSNs ({ss.get('lb.tor_window')} bits, nack_filter only) "
            f"and 16 B of pointers/timer: {ss.get('lb.tor_dst_flow_state_bytes')} B per flow; the source ToR "
            f"{ss.get('lb.tor_src_flow_state_bytes')} B per flow. With at most "
            f"{fmt_int(ss.get('lb.tor_max_flows_tracked'))} flows tracked per ToR on the permutation that is "
            f"{fmt_bytes((ss.get('lb.tor_max_flows_tracked') or 0) * ((ss.get('lb.tor_dst_flow_state_bytes') or 0) + (ss.get('lb.tor_src_flow_state_bytes') or 0)))}"
            f" of SRAM per ToR. In `reorder` mode the held packets are the real cost: the resequencing buffer "
            f"peaks at {fmt_bytes(rec.s(P, 'tor_assist[mode=reorder]/gbn', 'lb.reseq_peak_bytes'))} on the busiest "
            f"ToR (permutation) and {fmt_bytes(rec.s(A, 'tor_assist[mode=reorder]/gbn', 'lb.reseq_peak_bytes'))} "
            f"(all-to-all), packet buffer that `nack_filter` does not need.\n"
        )

    # ---------------------------------------------------------------- claim 3
    t, i_ = rec.get(P, "tor_assist/sr"), rec.get(P, "rps/ideal")
    if t is not None and i_ is not None:
        ts = t["summary"]
        w(
            f"**Reading.** {claim_summary(verdicts, '2 (', 'On the symmetric fabric both modes meet the targets on every workload')} In `nack_filter` "
            f"mode the selective-repeat RNICs still NACK every reordering, but the destination ToR drops those "
            f"NACKs ({fmt_int(ts.get('lb.nacks_dropped'))} dropped as stale on the permutation, "
            f"{fmt_int(ts.get('lb.nacks_held'))} held, {fmt_int(ts.get('lb.nacks_forwarded'))} forwarded): no "
            f"spurious retransmission reaches the sender. `tor_assist/sr` is even "
            f"{fmt_pct(1 - ts['completion_ps'] / i_['summary']['completion_ps'])} faster than `rps/ideal`: "
            f"round-robin stamping gives every flow an exact 1/8 share of each uplink, random spraying only on "
            f"average (CNPs {fmt_int(ts.get('cnps'))} vs {fmt_int(i_['summary'].get('cnps'))}; three-seed means "
            f"{fmt_us(rec.mean(P, 'tor_assist/sr', 'completion_ps'))} vs "
            f"{fmt_us(rec.mean(P, 'rps/ideal', 'completion_ps'))} us). In `reorder` mode the go-back-N RNICs see "
            f"no reordering at all (0 discards), at the price of a resequencing buffer of up to "
            f"{fmt_bytes(rec.s(P, 'tor_assist[mode=reorder]/gbn', 'lb.reseq_peak_bytes'))} on one ToR. "
            f"**Limit:** the fix assumes symmetric paths. With one slow or failed spine link (section 5) "
            f"round-robin stamping keeps sending 1/8 of each flow over it, reordering exceeds the RNIC bitmap and "
            f"`tor_assist/sr` is as slow as plain spraying ({fmt_us(rec.s('degraded_spine', 'tor_assist/sr', 'completion_ps'))} "
            f"us with the degraded link).\n"
        )

    w("## 3. Real loss is still recovered\n")
    w(
        "Each packet crossing `leaf1 <-> spine0` (both directions, data and control) is dropped with the given "
        "probability during a permutation of 16 MB flows; `transport.window = 400KB` (about one BDP, see the "
        "scenario files). `link drops` = packets lost on that link (data, ACKs, NACKs, CNPs); `ToR-detected "
        "losses` = data packets the destination ToR inferred lost from `path_seq` gaps. 'Every dropped packet "
        "retransmitted' is checked two ways: every flow completes (a receiver completes only when it holds every "
        "PSN, so every data packet that was dropped was sent again; the simulator's packet-conservation check "
        "passes for every run) and retransmissions >= ToR-detected losses. Bound = completion of the same "
        "recovery mode without the ToR program (`rps/sr` for nack_filter, `rps/gbn` for reorder) + link drops x "
        "the largest `hold_timeout` the ToRs used.\n"
    )
    rows = []
    for stem, pct in (("lossy_spine_0p1", "0.1%"), ("lossy_spine_1p", "1%")):
        for label, base in (
            ("tor_assist/sr", "rps/sr"),
            ("tor_assist[mode=reorder]/gbn", "rps/gbn"),
            ("rps/sr", None),
            ("rps/gbn", None),
            ("rps/ideal", None),
        ):
            checks = []  # (seed, ok, bound) per seed with a no-filter run to compare with
            for seed in study(stem).seeds_of(label):
                r = rec.get(stem, label, seed)
                if r is None:
                    continue
                s = r["summary"]
                link = next(iter(r["event_links"].values()), {"drops": None})
                hold = s.get("lb.tor_max_hold_timeout_ps")
                bound = None
                ok = None
                bc = rec.s(stem, base, "completion_ps", seed) if base is not None else None
                if bc is not None and hold is not None and link["drops"] is not None:
                    bound = bc + link["drops"] * hold
                    ok = (
                        r["flows_done"] == r["flows"]
                        and s.get("retx_packets", 0) >= (s.get("lb.tor_path_lost_packets") or 0)
                        and s.get("completion_ps") is not None
                        and s["completion_ps"] <= bound
                    )
                    checks.append((seed, ok, bound, bc, hold, link["drops"], r))
                rows.append(
                    [
                        pct,
                        f"`{label}`",
                        str(seed),
                        f"{r['flows_done']}/{r['flows']}",
                        fmt_int(link["drops"]),
                        fmt_int(s.get("lb.tor_path_lost_packets")),
                        fmt_int(s.get("retx_packets")),
                        fmt_pct(s.get("spurious_retx_ratio"), 3),
                        fmt_int(s.get("timeouts")),
                        fmt_us(s.get("completion_ps")),
                        fmt_us(hold),
                        fmt_us(bound),
                        "yes" if ok else ("no" if ok is False else "-"),
                    ]
                )
            if checks:
                passed = sum(1 for c in checks if c[1])
                worst = max(checks, key=lambda c: c[6]["summary"]["completion_ps"] / c[2])
                seed, _, bound, bc, hold, drops, r = worst
                s = r["summary"]
                verdicts.append(
                    (
                        f"3 ({pct} loss, {label})",
                        "every flow completes, every dropped data packet retransmitted, "
                        "completion <= no-filter run + drops x hold_timeout (every seed)",
                        f"{passed}/{len(checks)} seeds within the bound; closest (seed {seed}): "
                        f"{r['flows_done']}/{r['flows']} flows, {fmt_int(drops)} link drops "
                        f"({fmt_int(s.get('lb.tor_path_lost_packets'))} data packets seen lost by the ToR), "
                        f"{fmt_int(s.get('retx_packets'))} retransmissions, completion "
                        f"{fmt_us(s.get('completion_ps'))} us vs bound {fmt_us(bound)} us ({base} {fmt_us(bc)} us "
                        f"+ drops x {fmt_us(hold)} us)",
                        verdict(passed == len(checks)),
                    )
                )
    w(
        table(
            [
                "loss",
                "variant",
                "seed",
                "flows done",
                "link drops",
                "ToR-detected losses",
                "retransmissions",
                "spurious retx",
                "timeouts",
                "completion (us)",
                "max hold_timeout (us)",
                "bound (us)",
                "within bound",
            ],
            rows,
        )
        + "\n"
    )

    # ---------------------------------------------------------------- claim 4
    L0, L1 = "lossy_spine_0p1", "lossy_spine_1p"
    if all(
        rec.get(x, lab)
        for x in (L0, L1)
        for lab in ("tor_assist/sr", "rps/sr", "rps/ideal", "tor_assist[mode=reorder]/gbn")
    ):
        w(
            f"**Reading.** {claim_summary(verdicts, '3 (', 'Every flow completes and every run stays within the bound, on every seed')} With `nack_filter` the ToR "
            f"saw {fmt_int(rec.s(L0, 'tor_assist/sr', 'lb.tor_path_lost_packets'))} and "
            f"{fmt_int(rec.s(L1, 'tor_assist/sr', 'lb.tor_path_lost_packets'))} data packets lost (seed 1, 0.1% / 1%) "
            f"as `path_seq` gaps and forwarded their NACKs at once "
            f"({fmt_int(rec.s(L1, 'tor_assist/sr', 'lb.nacks_forwarded'))} NACKs forwarded at 1%); the senders "
            f"retransmitted {fmt_int(rec.s(L0, 'tor_assist/sr', 'retx_packets'))} and "
            f"{fmt_int(rec.s(L1, 'tor_assist/sr', 'retx_packets'))} packets, and completion "
            f"({fmt_us(rec.s(L0, 'tor_assist/sr', 'completion_ps'))} / {fmt_us(rec.s(L1, 'tor_assist/sr', 'completion_ps'))} us) "
            f"compares with the unfiltered `rps/sr` ({fmt_us(rec.s(L0, 'rps/sr', 'completion_ps'))} / "
            f"{fmt_us(rec.s(L1, 'rps/sr', 'completion_ps'))} us), which wastes "
            f"{fmt_pct(rec.s(L1, 'rps/sr', 'spurious_retx_ratio'))} of its packets on spurious retransmissions. "
            f"The adaptive `hold_timeout` (2 x the largest queueing delay seen) stays near "
            f"{fmt_us(rec.s(L1, 'tor_assist/sr', 'lb.tor_max_hold_timeout_ps'))} us here because the 400 KB window "
            f"keeps queues short. In `reorder` mode a known loss releases the held packets and the go-back-N NIC "
            f"NACKs once; the sender then rewinds its whole window, so go-back-N is expensive under loss by itself "
            f"({fmt_int(rec.s(L1, 'tor_assist[mode=reorder]/gbn', 'retx_packets'))} retransmissions for "
            f"{fmt_int(rec.s(L1, 'tor_assist[mode=reorder]/gbn', 'lb.tor_path_lost_packets'))} lost data packets at "
            f"1%, seed 1), and each out-of-order arrival that follows a loss makes the NIC send a CNP (ConnectX "
            f"behaviour, kept: the ToR lets the NIC react to real losses normally), so a flow that loses several "
            f"packets is cut by DCQCN again and again. Which flow is unlucky changes with the seed, so the bound "
            f"is checked on three seeds. The `ideal` transport repairs each loss one base RTT after the lost "
            f"packet was sent (an idealised trimming NACK, see Caveats): "
            f"{fmt_us(rec.s(L0, 'rps/ideal', 'completion_ps'))} / {fmt_us(rec.s(L1, 'rps/ideal', 'completion_ps'))} us "
            f"with {fmt_int(rec.s(L1, 'rps/ideal', 'timeouts'))} timeouts at 1%.\n"
        )

    w("## 4. DFS: bounded reordering, and whether it reaches ideal spraying\n")
    bdp = meta.get("dfs_route")
    if bdp:
        auto_ideal = math.ceil(1.5 * math.ceil(bdp["bdp_pkts"]))  # DFS's "auto" B without a bitmap cap
        w(
            f"DFS reads the fabric: {bdp['paths']} equal-cost paths between two leaves, base RTT "
            f"{bdp['rtt_us']:.2f} us (propagation + serialization of one data packet out and one ACK back), so one "
            f"BDP at 400 Gb/s is **{bdp['bdp_pkts']:.0f} packets** ({fmt_bytes(bdp['bdp_bytes'])}, also DFS's spray "
            f"threshold T). The hard bound is a PSN window: a flow's rate is at most B packets per RTT, i.e. "
            f"the spec's B = 64 caps a sprayed flow at {fmt_pct(min(1.0, 64 / bdp['bdp_pkts']), 0)} of line rate "
            f"before any queueing, B = 128 at {fmt_pct(min(1.0, 128 / bdp['bdp_pkts']), 0)}. So DFS's default is "
            f'`B = "auto"`: per flow max(64, (1 + gamma) x BDP) = max(64, {auto_ideal}) '
            f"packets, at most the selective-repeat bitmap W = 128, which B must not exceed for the no-discard "
            f"guarantee: **B = 128 for cross-leaf flows here** (`dfs/sr`), and {auto_ideal} "
            f"over the ideal transport, which has no bitmap (`dfs/ideal`). `{DFS_SPEC}` fixes the spec's 64.\n"
        )
    rows = []
    dfs_labels = ["dfs/sr", DFS_SPEC, DFS_BLIND, DFS_HOLD, "dfs/ideal", "dfs[B=64]/ideal"]
    for stem, name in (
        (P, "permutation (symmetric)"),
        ("allreduce_128", "ring all-reduce 64 MB (symmetric)"),
        ("degraded_spine", "permutation, leaf0-spine0 at 25%"),
        ("spine_link_failure", "permutation, leaf0-spine0 fails"),
        ("spine_link_failure_slow", "permutation, leaf0-spine0 fails, 10 ms reroute"),
        (A, "all-to-all 1 MB/pair"),
    ):
        ecmp = rec.s(stem, "ecmp/sr", "completion_ps")
        ideal = rec.s(stem, "rps/ideal", "completion_ps")
        spray = rec.s(stem, "spray_rr/sr", "completion_ps")
        for label in dfs_labels:
            r = rec.get(stem, label)
            if r is None:
                continue
            s = r["summary"]
            rows.append(
                [
                    name,
                    f"`{label}`",
                    fmt_bounds(r),
                    fmt_us(s.get("completion_ps")),
                    fmt_x(ratio(s.get("completion_ps"), ecmp)),
                    fmt_x(ratio(s.get("completion_ps"), ideal)),
                    fmt_x(ratio(s.get("completion_ps"), spray)),
                    fmt_int(s.get("max_reorder")),
                    fmt_int(s.get("discards")),
                    fmt_pct(s.get("spurious_retx_ratio"), 1),
                    fmt_int(s.get("cnps")),
                    fmt_int(s.get("timeouts")),
                    f"{fmt_int(s.get('lb.flows_sprayed'))}/{fmt_int(s.get('lb.flows'))}",
                    fmt_int(s.get("lb.paths_retired")),
                ]
            )
    w(
        table(
            [
                "workload",
                "variant",
                "B",
                "completion (us)",
                "vs ecmp/sr",
                "vs rps/ideal",
                "vs spray_rr/sr",
                "max reorder",
                "OOO discards",
                "spurious retx",
                "CNPs",
                "timeouts",
                "flows sprayed",
                "paths retired",
            ],
            rows,
        )
        + "\n"
    )
    w(main_table(rec, "allreduce_128", study("allreduce_128").variants) + "\n")
    # The bound: in every DFS run (every scenario and option) every flow's max reorder < its B,
    # and no discards in every DFS run over selective-repeat RNICs.
    runs = [r for (_, lab, _), r in rec.records.items() if Variant(lab).scheme == "dfs"]
    if runs:
        sr_runs = [r for r in runs if r["label"].endswith("/sr")]
        over = [r["reorder_over_bound"] for r in runs if r.get("reorder_over_bound") is not None]
        disc = sum(r["summary"].get("discards", 0) for r in sr_runs)
        bounds = sorted({b for r in runs for b in r.get("psn_windows", [])})
        verdicts.append(
            (
                "4 (bound)",
                "every flow's max reorder < its B (every DFS run) and no discards beyond the SR bitmap "
                "(every DFS/sr run)",
                f"B in {{{', '.join(map(str, bounds))}}}; closest approach max reorder - B = {max(over)} over "
                f"{len(runs)} runs (all scenarios and options, sr and ideal); {disc} discards over {len(sr_runs)} "
                "sr runs",
                verdict(len(over) == len(runs) and max(over) < 0 and disc == 0),
            )
        )
    for label in ("dfs/sr", DFS_HOLD):
        tag = label
        for stem, name in ((P, "permutation"), ("allreduce_128", "ring all-reduce")):
            # Judged on the mean over the seeds all three ran (one seed is one draw of the
            # permutation and the hashes), as claim 5 is.
            n_seeds = min(len(rec.seeds(stem, lab)) for lab in (label, "ecmp/sr", "rps/ideal"))
            d, e, i = (rec.mean(stem, lab, "completion_ps") for lab in (label, "ecmp/sr", "rps/ideal"))
            if not n_seeds or None in (d, e, i):
                continue
            if any(len(rec.seeds(stem, lab)) != n_seeds for lab in (label, "ecmp/sr", "rps/ideal")):
                d, e, i = (rec.s(stem, lab, "completion_ps") for lab in (label, "ecmp/sr", "rps/ideal"))
                n_seeds = 1
            over = f" ({n_seeds}-seed mean)" if n_seeds > 1 else " (seed 1)"
            verdicts.append(
                (
                    f"4 ({name}, {tag})",
                    f"symmetric: DFS no slower than ecmp/sr (a difference under 0.1% counts as a tie){over}",
                    f"{fmt_us(d)} us vs ecmp/sr {fmt_us(e)} us ({(d - e) / US:+.2f} us, {100 * (d / e - 1):+.3f}%)",
                    verdict(d <= e * 1.001),
                )
            )
            verdicts.append(
                (
                    f"4 ({name}, {tag})",
                    f"symmetric: DFS within 15% of ideal spraying (rps/ideal){over}",
                    f"{fmt_us(d)} us = {fmt_x(d / i)} of rps/ideal ({fmt_us(i)} us)",
                    verdict(d <= 1.15 * i),
                )
            )
        d = rec.s("degraded_spine", label, "completion_ps")
        sp = rec.s("degraded_spine", "spray_rr/sr", "completion_ps")
        if d is not None and sp is not None:
            verdicts.append(
                (
                    f"4 (degraded, {tag})",
                    "one spine link at 25%: DFS beats spray_rr",
                    f"{fmt_us(d)} us vs spray_rr/sr {fmt_us(sp)} us ({fmt_x(d / sp)})",
                    verdict(d < sp),
                )
            )
    # explanation with numbers
    d64, dauto, dhold = rec.get(P, DFS_SPEC), rec.get(P, "dfs/sr"), rec.get(P, DFS_HOLD)
    i64, iauto = rec.get(P, "dfs[B=64]/ideal"), rec.get(P, "dfs/ideal")
    blind = rec.get(P, DFS_BLIND)
    ideal = rec.s(P, "rps/ideal", "completion_ps")
    if bdp and all(x is not None for x in (d64, dauto, dhold, i64, iauto, blind, ideal)):

        def c(r: dict[str, Any]) -> float:
            return r["summary"]["completion_ps"]

        def s(r: dict[str, Any], key: str) -> Any:
            return r["summary"].get(key)

        def mean_x(label: str) -> str:
            return fmt_x(
                ratio(rec.mean(P, label, "completion_ps"), rec.mean(P, "rps/ideal", "completion_ps"))
            )

        w(
            f"**What separates DFS from ideal spraying (permutation).** Three effects, each measured:\n\n"
            f"1. *Window cap.* With the spec's B = 64 < BDP = {bdp['bdp_pkts']:.0f} packets, a DFS flow cannot "
            f"exceed ~{fmt_pct(min(1.0, 64 / bdp['bdp_pkts']), 0)} of line rate even on an idle fabric: over the "
            f"ideal transport `dfs[B=64]/ideal` completes in {fmt_us(c(i64))} us = {fmt_x(c(i64) / ideal)} of "
            f'`rps/ideal`. With the default B = "auto" ({fmt_bounds(iauto)} there, 1.5 BDP) the cap is gone: '
            f"`dfs/ideal` takes {fmt_us(c(iauto))} us = {fmt_x(c(iauto) / ideal)}.\n"
            f"2. *Paths, not entropies.* k = min(K, paths) = 8 random entropies hash onto only ~5.3 of the 8 spines "
            f"on average, so some spines carry two or three shares of a flow and queue: with random entropies "
            f"(`{DFS_BLIND}`) the busiest uplink carries {s(blind, 'uplink_imbalance_max') or 0:.2f}x the mean and "
            f"the run takes {fmt_us(c(blind))} us ({fmt_int(s(blind, 'cnps'))} CNPs, "
            f"{fmt_int(s(blind, 'lb.paths_retired'))} paths retired). DFS's default (`path_aware`) draws each "
            f"entropy so that the flow's paths share no link: {s(dauto, 'uplink_imbalance_max') or 0:.2f}x, "
            f"{fmt_us(c(dauto))} us ({fmt_int(s(dauto, 'cnps'))} CNPs).\n"
            f"3. *The RNIC's loss recovery.* Bounded reordering is still reordering, and the selective-repeat RNIC "
            f"NACKs every packet that a later one overtook (the expected PSN walks through each late packet in "
            f"turn, one NACK each, `tests/test_receivers.py`); under the spec's rule 6 (recovery follows the RNIC) "
            f"each NACK is a retransmission: {fmt_pct(s(dauto, 'spurious_retx_ratio'))} of `dfs/sr`'s packets and "
            f"{fmt_pct(s(d64, 'spurious_retx_ratio'))} of `{DFS_SPEC}`'s are spurious, each taking line time "
            f"and a window slot. A DFS sender knows which path carried each PSN and how long that path takes: with "
            f'`loss_detection = "dfs"` a NACKed PSN is resent only once overdue, (1 + gamma) x its path\'s RTT '
            f"after it was sent, and a window stalled by a lost NACK is probed ({fmt_int(s(dhold, 'lb.nacks_held'))} "
            f"NACKs held): `{DFS_HOLD}` retransmits {fmt_pct(s(dhold, 'spurious_retx_ratio'))} spuriously and "
            f"completes in {fmt_us(c(dhold))} us = {fmt_x(c(dhold) / ideal)} of `rps/ideal`.\n\n"
            f"So DFS over selective-repeat RNICs reaches {fmt_x(c(dauto) / ideal)} of ideal spraying with its "
            f"defaults (B = \"auto\" = 128, the RNIC's recovery, the spec's rule 6; three-seed mean "
            f"{mean_x('dfs/sr')}) and {fmt_x(c(dhold) / ideal)} with its own loss detection (mean "
            f"{mean_x(DFS_HOLD)}); with the spec's B = 64 it reaches only {fmt_x(c(d64) / ideal)} (mean "
            f"{mean_x(DFS_SPEC)}): a window below one BDP ({bdp['bdp_pkts']:.0f} packets here) cannot reach line "
            f"rate. All of them are far ahead of ECMP ({fmt_x(c(d64) / rec.s(P, 'ecmp/sr', 'completion_ps'))} of "
            f"`ecmp/sr` at B = 64), whose collisions cost more.\n"
        )
    sweep = [(b, rec.get(P, rnic), rec.get(P, own)) for b, rnic, own in DFS_B_SWEEP]
    if bdp and ideal and all(r is not None and o is not None for _, r, o in sweep):
        rows = [
            [
                str(b),
                fmt_pct(min(1.0, b / bdp["bdp_pkts"]), 0),
                fmt_us(r["summary"]["completion_ps"]),
                fmt_x(r["summary"]["completion_ps"] / ideal),
                fmt_us(o["summary"]["completion_ps"]),
                fmt_x(o["summary"]["completion_ps"] / ideal),
            ]
            for b, r, o in sweep
        ]
        w(
            "**The window B against one BDP** (permutation, seed 1; the cap is B packets per base RTT as a "
            f"share of line rate, BDP = {bdp['bdp_pkts']:.0f} packets):\n"
        )
        w(
            table(
                [
                    "B",
                    "window cap",
                    "RNIC's loss recovery (us)",
                    "vs rps/ideal",
                    "DFS's own loss detection (us)",
                    "vs rps/ideal",
                ],
                rows,
            )
            + "\n"
        )
    ar = {v: rec.get("allreduce_128", v) for v in study("allreduce_128").variants}
    if all(ar.values()):
        bb = {v: r["summary"].get("busbw_bps[0:collective]") for v, r in ar.items()}
        w(
            f"**Ring all-reduce.** Ranks follow host order, so 112 of the 128 ring edges stay inside a leaf and "
            f"the 16 cross-leaf edges are one per leaf: no two ring flows ever share an uplink or a spine "
            f"downlink, so ECMP is already collision-free and spraying has nothing to fix (`ecmp/sr` "
            f"{fmt_us(ar['ecmp/sr']['summary']['completion_ps'])} us, `rps/ideal` "
            f"{fmt_us(ar['rps/ideal']['summary']['completion_ps'])} us, busbw {fmt_gbps(bb['ecmp/sr'])} Gb/s). "
            f"Each of the 254 steps moves a 500 KB message (122 packets, above DFS's threshold T, so DFS sprays "
            f"the {fmt_int(ar['dfs/sr']['summary'].get('lb.flows_sprayed'))} cross-leaf messages), and every "
            f"step waits for its slowest edge, a cross-leaf one. With the spec's B = 64 the window caps those "
            f"messages below line rate: `{DFS_SPEC}` {fmt_us(ar[DFS_SPEC]['summary']['completion_ps'])} us "
            f"({fmt_x(ar[DFS_SPEC]['summary']['completion_ps'] / ar['ecmp/sr']['summary']['completion_ps'])} of "
            f"ECMP, busbw {fmt_gbps(bb[DFS_SPEC])} Gb/s). With the default B (128 across leaves) the window does "
            f"not bind: `dfs/sr` {fmt_us(ar['dfs/sr']['summary']['completion_ps'])} us "
            f"({fmt_x(ar['dfs/sr']['summary']['completion_ps'] / ar['ecmp/sr']['summary']['completion_ps'])} of "
            f"ECMP, busbw {fmt_gbps(bb['dfs/sr'])} Gb/s).\n"
        )

    F = "fat_tree_failure_unseen"
    ft = {v: rec.get(F, v) for v in study(F).variants}
    if all(ft.values()):

        def fc(label: str) -> str:
            return fmt_us(ft[label]["summary"]["completion_ps"])

        def fs(label: str, key: str) -> str:
            return fmt_int(ft[label]["summary"].get(key))

        w("**A 3-tier fabric and a failure routing does not see.**\n")
        w(main_table(rec, F, study(F).variants) + "\n")
        w(
            f"`scenarios/lb/{F}.toml`: a k = 8 fat-tree (128 hosts, 400 Gb/s, 16 equal-cost paths between pods, "
            f"6 hops, so one BDP is ~150 packets and the bitmap-capped B = 128 caps a flow a little), a 4 MB permutation; the "
            f"agg0_0 <-> core0 link dies at 30 us and routing does not reconverge within the run. Oblivious "
            f"spraying keeps sending into core0 toward pod 0 and out of it: `rps/sr` {fc('rps/sr')} us "
            f"({fs('rps/sr', 'timeouts')} timeouts); ECMP loses every flow hashed there until its RTOs: "
            f"{fc('ecmp/sr')} us. DFS charges each hole to its path and retires dead ones "
            f"({fs('dfs/sr', 'lb.retired_dead')} as dead): `dfs/sr` {fc('dfs/sr')} us. With its own loss detection it "
            f"also resends a dead path's outstanding packets at once ({fs(DFS_HOLD, 'lb.presumed_lost')} packets) "
            f"instead of waiting for the RNIC to report them one hole, one round trip, at a time: `{DFS_HOLD}` "
            f"{fc(DFS_HOLD)} us, against {fc('rps/ideal')} us for random spraying over the ideal transport.\n"
        )

    # ---------------------------------------------------------------- claim 5
    w("## 5. Asymmetry and failures\n")
    order = ASYM
    for stem, name in ASYM_STUDIES.items():
        w(f"### {name}\n")
        w(main_table(rec, stem, order) + "\n")
        comp = {lab: rec.s(stem, lab, "completion_ps") for lab in order}
        if all(v is not None for v in comp.values()):
            w(claim5_prose(rec, stem))
        if all(v is not None for v in comp.values()):
            w("Completion over five seeds (a new permutation and new hash draws per seed):\n")
            w(seeds_table(rec, stem, list(ASYM_SEEDED), ref="rps/sr") + "\n")
            mean = {lab: rec.mean(stem, lab, "completion_ps") for lab in ASYM_SEEDED}
            n_seeds = len(rec.seeds(stem, "rps/sr"))
            for lab in ("reps", "adaptive", "dfs", DFS_HOLD.removesuffix("/sr")):
                v = mean[f"{lab}/sr"]
                ok = v < mean["spray_rr/sr"] and v < mean["rps/sr"]
                verdicts.append(
                    (
                        f"5 ({stem}, {lab}/sr)",
                        f"beats spray_rr/sr and rps/sr on completion ({n_seeds}-seed mean)",
                        f"{fmt_us(v)} us vs spray_rr {fmt_us(mean['spray_rr/sr'])} us "
                        f"({fmt_x(v / mean['spray_rr/sr'])}), rps {fmt_us(mean['rps/sr'])} us ({fmt_x(v / mean['rps/sr'])})",
                        verdict(ok),
                    )
                )
            for lab in ("reps", "adaptive"):
                v = mean[f"{lab}/ideal"]
                sp, rp = mean["spray_rr/ideal"], mean["rps/ideal"]
                verdicts.append(
                    (
                        f"5 ({stem}, {lab}/ideal)",
                        f"over the reorder-tolerant transport it assumes: beats spray_rr/ideal and rps/ideal "
                        f"({n_seeds}-seed mean)",
                        f"{fmt_us(v)} us vs spray_rr {fmt_us(sp)} us ({fmt_x(v / sp)}), rps {fmt_us(rp)} us "
                        f"({fmt_x(v / rp)})",
                        verdict(v < sp and v < rp),
                    )
                )
            wv, ev = mean["wcmp/sr"], mean["ecmp/sr"]
            verdicts.append(
                (
                    f"5 ({stem}, wcmp)",
                    f"wcmp/sr beats ecmp/sr on completion ({n_seeds}-seed mean)",
                    f"{fmt_us(wv)} us vs {fmt_us(ev)} us ({fmt_x(wv / ev)}); drops {fmt_int(rec.mean(stem, 'wcmp/sr', 'drops'))} "
                    f"vs {fmt_int(rec.mean(stem, 'ecmp/sr', 'drops'))}; a controller reweighting 1 ms after the "
                    f"change (`{WCMP_SLOW}`, seed 1): {fmt_us(rec.s(stem, WCMP_SLOW, 'completion_ps'))} us vs "
                    f"{fmt_us(rec.s(stem, 'ecmp/sr', 'completion_ps'))} us",
                    verdict(wv < ev),
                )
            )
            verdicts.append(
                (
                    f"5 ({stem}, flowlet)",
                    "flowlet vs ecmp, measured and explained (section 5, Flowlets)",
                    f"seed 1: flowlet/sr {fmt_us(comp['flowlet/sr'])} us vs ecmp/sr "
                    f"{fmt_us(comp['ecmp/sr'])} us; {fmt_int(rec.s(stem, 'flowlet/sr', 'lb.flowlets'))} flowlets for "
                    f"{fmt_int(rec.get(stem, 'flowlet/sr')['flows'])} flows",
                    "reported",
                )
            )
    W = "wcmp_asymmetry"
    if rec.get(W, "wcmp/sr") and rec.get(W, "ecmp/sr"):
        w("### WCMP where the asymmetry decides completion\n")
        w(
            "`scenarios/lb/wcmp_asymmetry.toml`: 32 hosts (4 leaves x 8, 8 spines, 400 Gb/s), all-to-all of 256 KB "
            "per pair, spine0 <-> leaf0 at 25%. Many small flows average the hash collisions out, so what is left "
            "is how much traffic each scheme sends over the slow link. WCMP weights each candidate by the capacity "
            "it can deliver to the destination (a remote leaf gives spine0 a weight of 1/4 toward leaf0 and a full "
            "weight toward the other leaves); ECMP hashes 1/8 of the leaf0-bound flows onto the 100 Gb/s link.\n"
        )
        w(seeds_table(rec, W, ["ecmp/sr", "wcmp/sr"], ref="ecmp/sr") + "\n")
        wv, ev = rec.mean(W, "wcmp/sr", "completion_ps"), rec.mean(W, "ecmp/sr", "completion_ps")
        verdicts.append(
            (
                f"5 ({W}, wcmp)",
                "wcmp/sr beats ecmp/sr on completion (5-seed mean)",
                f"{fmt_us(wv)} us vs {fmt_us(ev)} us ({fmt_x(wv / ev)})",
                verdict(wv < ev),
            )
        )
    # flowlet explanation
    fl = [(stem, rec.get(stem, "flowlet/sr")) for stem in (P, *ASYM_STUDIES)]
    if all(r is not None for _, r in fl):
        w("### Flowlets on RDMA traffic\n")
        rows = []
        for stem, r in fl:
            s = r["summary"]
            rows.append(
                [
                    stem,
                    fmt_int(s.get("lb.flowlets")),
                    fmt_int(r["flows"]),
                    f"{(s.get('lb.flowlets') or 0) / max(2 * r['flows'], 1):.2f}",
                    fmt_int(s.get("timeouts")),
                    fmt_us(s.get("completion_ps")),
                    fmt_us(rec.s(stem, "ecmp/sr", "completion_ps")),
                    f"{s.get('uplink_imbalance_max', 0):.2f}",
                    f"{rec.s(stem, 'ecmp/sr', 'uplink_imbalance_max') or 0:.2f}",
                ]
            )
        w(
            table(
                [
                    "scenario",
                    "flowlets",
                    "flows",
                    "flowlets per flow and direction",
                    "timeouts",
                    "flowlet/sr (us)",
                    "ecmp/sr (us)",
                    "uplink imbalance flowlet",
                    "uplink imbalance ecmp",
                ],
                rows,
            )
            + "\n"
        )
        w(
            "LetFlow starts a new flowlet (and picks a new random uplink) only after a gap of more than 50 us "
            "in a flow's packets. spraylab's LetFlow keys the two directions of a flow apart (data at the "
            "sender's ToR, ACK/NACK/CNP at the receiver's ToR), so one flowlet per flow and direction is the "
            "minimum. An RDMA NIC paces a queue pair's packets back to back at its DCQCN rate: at 400 Gb/s a "
            f"4 KB packet ({WIRE_4K:,} B on the wire) leaves every ~84 ns, and a 50 us gap needs a rate below "
            f"{WIRE_4K * 8 / 50e-6 / 1e9:.2f} Gb/s, or a stall. DCQCN provides the first: a collided queue keeps "
            "marking while it drains and its flows are cut every few us, down to a fraction of a Gb/s, and at "
            "that rate the next packet opens a new flowlet on a random uplink. So flowlets appear where "
            f"collisions are: {fmt_int(fl[0][1]['summary'].get('lb.flowlets'))} flowlets for "
            f"{fmt_int(fl[0][1]['flows'])} flows on the symmetric permutation "
            f"({(fl[0][1]['summary'].get('lb.flowlets') or 0) / (2 * fl[0][1]['flows']):.2f} per flow and "
            "direction), and they move collided flows: uplink imbalance "
            f"{fl[0][1]['summary'].get('uplink_imbalance_max', 0):.2f} against "
            f"{rec.s(P, 'ecmp/sr', 'uplink_imbalance_max') or 0:.2f} for ECMP, three-seed mean completion "
            f"{fmt_us(rec.mean(P, 'flowlet/sr', 'completion_ps'))} us against "
            f"{fmt_us(rec.mean(P, 'ecmp/sr', 'completion_ps'))} us. It is a slow cure: a flow moves only after "
            "DCQCN has cut it nearly to nothing, and it moves to a random uplink, not one known to be idle, so "
            f"`flowlet/sr` stays at {fmt_x(ratio(rec.mean(P, 'flowlet/sr', 'completion_ps'), rec.mean(P, 'rps/ideal', 'completion_ps')))} "
            "of `rps/ideal`. With the failing link flows also stall for the RTO (1 ms > 50 us; "
            f"{fmt_int(fl[2][1]['summary'].get('timeouts'))} timeouts) or are rerouted at convergence, and each "
            f"stall starts a new flowlet ({fmt_int(fl[2][1]['summary'].get('lb.flowlets'))} flowlets).\n"
        )
    w("Three-seed completion on the symmetric permutation (the variants run with three seeds):\n")
    w(
        seeds_table(
            rec,
            P,
            ["ecmp/sr", "flowlet/sr", "rps/sr", "dfs/sr", DFS_SPEC, "tor_assist/sr", "rps/ideal"],
        )
        + "\n"
    )

    # ---------------------------------------------------------------- caveats
    w("## Caveats and simulator issues found\n")
    cav = []
    if rec.get("lossy_spine_1p", "rps/ideal") and rec.get("lossy_spine_1p", "rps/sr"):
        cav.append(
            "**How the `ideal` transport repairs losses.** Its receiver SACKs every packet and never NACKs. A lost "
            "data packet is reported to the sender at max(sent + base RTT, drop + return trip), when a trimmed "
            "header's NACK (NDP / Ultra Ethernet style) would arrive, and resent selectively; a lost ACK never "
            "causes a resend (SACK state is cumulative). This is an oracle, an upper bound and not an RNIC "
            "(`src/spraylab/transport/qp.py`). With 1% loss on one link `rps/ideal` takes "
            f"{fmt_us(rec.s('lossy_spine_1p', 'rps/ideal', 'completion_ps'))} us "
            f"({fmt_int(rec.s('lossy_spine_1p', 'rps/ideal', 'timeouts'))} timeouts, "
            f"{fmt_int(rec.s('lossy_spine_1p', 'rps/ideal', 'retx_packets'))} retransmissions) where `rps/sr` takes "
            f"{fmt_us(rec.s('lossy_spine_1p', 'rps/sr', 'completion_ps'))} us."
        )
    if rec.get(P, "ecmp/gbn"):
        cav.append(
            "**DCQCN decides ECMP's numbers.** DCQCN runs with ConnectX's firmware defaults (alpha updated every "
            f"{DCQCN.alpha_timer / US:.0f} us with g = {DCQCN.g * 1024:.0f}/1024, at most one cut per "
            f"{DCQCN.rate_decrease_interval / US:.0f} us, the target rate kept through one congestion episode, "
            f"{DCQCN.fast_recovery_rounds} fast-recovery step, increase timer {DCQCN.increase_timer / US:.0f} us, "
            f"byte counter {fmt_bytes(DCQCN.byte_counter)}; CNPs at most every {DCQCN.cnp_interval / US:.0f} us per "
            "flow; `tests/test_dcqcn.py`). A collided uplink's queue keeps marking while it drains, so each of its "
            "flows is cut every few us until the queue is empty, and climbs back only on the increase timer and "
            "the byte counter. `ecmp/gbn` on the permutation loses no packet and retransmits nothing yet takes "
            f"{fmt_us(rec.s(P, 'ecmp/gbn', 'completion_ps'))} us "
            f"({fmt_int(rec.s(P, 'ecmp/gbn', 'cnps'))} CNPs; {fmt_us(min(r['summary']['completion_ps'] for r in rec.seeds(P, 'ecmp/gbn')))}"
            f"-{fmt_us(max(r['summary']['completion_ps'] for r in rec.seeds(P, 'ecmp/gbn')))} us over three seeds). "
            "Absolute ECMP numbers (and the spraying schemes' numbers with the degraded link) depend on these DCQCN "
            "parameters (`[transport.dcqcn]` in a scenario changes them; `scenarios/sweeps/dcqcn_sensitivity.toml` "
            "varies the increase timer and the ECN threshold under ECMP and DFS); the ordering of schemes on the symmetric "
            "permutation is the same under this DCQCN model and the older one below. Pages rendered before the ConnectX timing (commit 877af18 and earlier: alpha "
            "per 55 us, five fast-recovery rounds, 10 MB byte counter, the target reset at every cut, CNPs 50 us "
            "apart) kept cut flows slow for milliseconds and are not comparable."
        )
    if rec.get(A, "rps/gbn"):
        cav.append(
            "**All-to-all reordering depends on the schedule.** spraylab's NIC interleaves its active queue "
            "pairs packet by packet, so how many peers a host sends to at once decides how far apart one flow's "
            "packets are, and so whether spraying reorders them. The all-to-all scenarios use 8 peers in flight "
            "(`workload.peers_in_flight`); with all 127 at once spraying does not hurt go-back-N there."
        )
    cav.append(
        "**What DFS and WCMP are assumed to know.** DFS's default `path_aware` resolves the path an entropy "
        "hashes to, as a sender can with deterministic ECMP and known seeds; a hash-oblivious NIC is "
        f"`path_aware = false` (`{DFS_BLIND}` in section 4). WCMP's weights follow every link's state within "
        "`refresh_us` (1 us), remote links included: a controller far faster than real ones; `reaction_us` "
        f"delays it (`{WCMP_SLOW}` in section 5)."
    )
    spread = []
    for lab in study(P).multi_seed:
        vals = [r["summary"]["completion_ps"] for r in rec.seeds(P, lab)]
        if len(vals) > 1:
            spread.append(f"`{lab}` {max(vals) / min(vals):.2f}x")
    cav.append(
        "**Seeds.** One seed per run except where the Setup table lists more (three for the permutation and "
        "loss studies, five for the asymmetry studies). Max/min completion over the permutation's three seeds: "
        + ", ".join(spread)
        + "."
    )
    w("\n".join(f"* {c}" for c in cav) + "\n")

    # ---------------------------------------------------------------- verdict table (placed at top)
    head = [
        "## Verdicts\n",
        table(["claim", "criterion", "measured", "verdict"], [list(v) for v in verdicts]) + "\n",
    ]
    unmet = [v[0] for v in verdicts if "not met" in v[3]]
    if unmet:
        reasons = []
        for claim in unmet:
            why = next(
                (text for key, text in WHY_NOT_MET.items() if claim.startswith(key)), "see its section"
            )
            reasons.append(f"* **{claim}**: {why}")
        head.append("Where a claim is not met, why (measured in the section named):\n")
        head.append("\n".join(reasons) + "\n")
    # commands
    tail = [
        "## Commands for every run\n",
        "Each run of this page alone (seed 1; `--set run.seed=N` for the others):\n",
        "```bash",
    ]
    for st in STUDIES:
        for label in st.variants:
            tail.append(Variant(label).command(f"scenarios/lb/{st.file}"))
    tail.append("```\n")
    setup_end = next(i for i, line in enumerate(out) if line.startswith("## 1."))
    page = out[:setup_end] + head + out[setup_end:] + tail
    return "\n".join(page)


def dfs_route(quick: dict[str, Any] | None) -> dict[str, Any] | None:
    """Paths and base RTT as DFS reads them from the fabric (one cross-leaf flow of the permutation)."""
    from spraylab.experiment import build
    from spraylab.net.framing import data_wire_bytes

    sc = job_scenario("permutation_128.toml", "dfs/sr", 1, quick)
    simulation = build(sc)
    qp = simulation.net.qps[0]
    paths, rtt_ps = simulation.net.lb.route_info(qp)
    rate = qp.line_rate_bps
    pkt = data_wire_bytes(qp.mtu)  # a data packet on the wire
    bdp_bytes = rate * rtt_ps / 8e12
    return {"paths": paths, "rtt_us": rtt_ps / US, "bdp_bytes": bdp_bytes, "bdp_pkts": bdp_bytes / pkt}


def git_info() -> tuple[str, bool]:
    try:
        commit = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True, check=True
        ).stdout.strip()
        dirty = bool(
            subprocess.run(
                ["git", "status", "--porcelain", "--untracked-files=no"],
                cwd=ROOT,
                capture_output=True,
                text=True,
                check=True,
            ).stdout.strip()
        )
        return commit, dirty
    except (OSError, subprocess.CalledProcessError):
        return "unknown", False


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument(
        "--full", action="store_true", help="also run the full-scale all-to-all (128 x 8 MB per pair)"
    )
    ap.add_argument(
        "--quick", action="store_true", help="16-host fabric, small flows: checks the tool in a few minutes"
    )
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument(
        "--reuse", action="store_true", help="take matching records from the cache instead of running"
    )
    ap.add_argument(
        "--cache", type=Path, default=None, help=f"record directory (default {CACHE.relative_to(ROOT)})"
    )
    ap.add_argument(
        "--out", type=Path, default=None, help=f"page to write (default {PAGE.relative_to(ROOT)})"
    )
    ap.add_argument(
        "--only", default="", help="comma-separated scenario stems to run (others reused if cached)"
    )
    ap.add_argument("--adopt", type=Path, default=None, help="record a saved Result directory, then exit")
    args = ap.parse_args(argv)
    cache = args.cache or (CACHE / "quick" if args.quick else CACHE)
    if args.adopt:
        adopt(args.adopt, cache)
        return
    start = time.perf_counter()
    only = {s.strip() for s in args.only.split(",") if s.strip()}
    jobs = []
    for st in STUDIES:
        if st.tier == "full" and not args.full:
            continue
        if only and st.stem not in only:
            continue
        quick = st.quick if args.quick else None
        for label in st.variants:
            for seed in st.seeds_of(label):
                jobs.append((st.file, label, seed, quick))
    records = run_all(jobs, args.workers, cache, args.reuse)
    # Records not run now but present in the cache (e.g. --full results, or --only): include them if they
    # match the current scenario files.
    for st in STUDIES:
        quick = st.quick if args.quick else None
        for label in st.variants:
            for seed in st.seeds_of(label):
                key = (st.file, label, seed)
                path = record_path(cache, *key)
                if key in records or not path.exists():
                    continue
                rec = json.loads(path.read_text())
                if rec.get("scenario") == normalized(job_scenario(st.file, label, seed, quick).to_dict()):
                    rec["reused"] = True
                    records[key] = rec
    wall = time.perf_counter() - start
    commit, dirty = git_info()
    fresh = sum(1 for r in records.values() if not r.get("reused"))
    meta = {
        "runs": len(records),
        "reused": len(records) - fresh,
        "date": time.strftime("%Y-%m-%d %H:%M %Z"),
        "commit": commit,
        "dirty": dirty,
        "quick": args.quick,
    }
    meta["dfs_route"] = dfs_route(study("permutation_128").quick if args.quick else None)
    page = build_page(Records(records), meta)
    out = args.out or (CACHE / "quick" / "results.md" if args.quick else PAGE)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(page)
    print(f"wrote {out} ({wall / 60:.1f} min)", file=sys.stderr)


if __name__ == "__main__":
    main()
