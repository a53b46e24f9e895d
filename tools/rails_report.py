"""Regenerate docs/rails.md: RailS (planned rail spraying of MoE all-to-all) reproduced on spraylab.

    .venv/bin/python tools/rails_report.py                 # ~4 min on 2 idle cores, writes docs/rails.md
    .venv/bin/python tools/rails_report.py --quick         # small messages, ~2 minutes: checks the tool

Every number comes from ``spraylab.run`` on the scenario files in ``scenarios/rails/`` (with the
overrides listed per run) and from ``spraylab.rails.planner`` for the bounds. Runs are independent
and go through a process pool (``--workers``, default 2). ``--cache DIR`` keeps one JSON per run
(keyed by the scenario) so an interrupted report resumes; it never expires, so leave it out after
changing code.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import sys
import time
from concurrent.futures import ProcessPoolExecutor, as_completed
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from spraylab.units import parse_rate_bps

ROOT = Path(__file__).resolve().parents[1]
SCENARIOS = ROOT / "scenarios" / "rails"
STRATEGIES = ("rails", "rail_matched", "rail_local", "rail_spray")
BASELINES = STRATEGIES[1:]
PRESETS = {"mixtral-8x7b": "moe_mixtral_8x7b.toml", "mixtral-8x22b": "moe_mixtral_8x22b.toml"}
SKEWS = (0.0, 0.8, 1.2)
CHUNKS = (64_000, 128_000, 256_000, 512_000, 1_024_000, 2_048_000, 4_096_000)
OVERHEADS_PS = (0, 1_000_000, 4_000_000)
NVLINK_RATES = ("900Gbps", "1.8Tbps", "3.6Tbps")
SPINES = (8, 4, 2)

# Compute model (stated, not simulated): H100-class GPU at 400 TFLOP/s effective (~40% of the
# bf16 dense peak). Per (token, expert) pair an expert FFN costs 2 x 3 x hidden x ffn FLOP
# forward; the rest of a layer (attention projections + scores at 4096-token sequences) costs
# 2 x attention params + 4 x seq x hidden FLOP per token. Training = forward + backward: the
# backward pass repeats both all-to-alls (gradients travel the transposed way) and costs twice
# the forward compute, so a layer takes 2 x (dispatch + combine) + 3 x (expert + other compute).
GPU_FLOPS = 400e12
SEQ = 4096
MODEL = {
    "mixtral-8x7b": {"ffn": 14_336, "attn_params": 2 * 4096 * 4096 + 2 * 4096 * 1024},
    "mixtral-8x22b": {"ffn": 16_384, "attn_params": 2 * 6144 * 6144 + 2 * 6144 * 1024},
}
PAPER = {
    "busbw": "+20% to +78%",
    "completion": "-17% to -78%",
    "iteration": "-18% to -40% (Mixtral)",
}


# --- runs -------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Point:
    """One simulation: a scenario file plus dotted overrides."""

    file: str
    overrides: tuple[tuple[str, Any], ...] = ()

    def scenario_dict(self) -> dict[str, Any]:
        from spraylab.config import Scenario

        scenario = Scenario.load(SCENARIOS / self.file)
        if self.overrides:
            scenario = scenario.with_overrides(dict(self.overrides))
        data = scenario.to_dict()
        data["run"]["progress"] = False
        return data

    def key(self) -> str:
        blob = json.dumps(self.scenario_dict(), sort_keys=True)
        return hashlib.sha256(blob.encode()).hexdigest()[:16]

    def get(self, name: str, default: Any = None) -> Any:
        return dict(self.overrides).get(name, default)


def measure(point: Point) -> dict[str, Any]:
    """Run one point; return CCT, busbw, bounds and run statistics per phase."""
    import spraylab
    from spraylab.config import validate
    from spraylab.rails.planner import plan_rails, rail_loads_for_strategy, wire_bytes
    from spraylab.workload import moe
    from spraylab.workload.build import MOE_PRESETS, rail_phase_matrices

    data = point.scenario_dict()
    scenario = validate(data)
    topo = scenario.topology
    w = scenario.workload[0]
    started = time.perf_counter()
    result = spraylab.run(scenario)
    wall = time.perf_counter() - started
    groups = result.groups.set_index("group")
    n = topo.gpus_per_server
    flows = result.flows
    nvlink = flows[flows["src"] // n == flows["dst"] // n]  # same-server messages travel NVLink
    phases: dict[str, Any] = {}
    for phase, d1 in rail_phase_matrices(w, topo.servers, n, scenario.run.seed):
        name = f"0:{w.kind}:{phase}" if phase else f"0:{w.kind}"
        row = groups.loc[name]
        plan = plan_rails(d1, n, w.chunk)
        if w.strategy == "rails":
            planned = plan.planned_time_ps(topo.nic_rate)
        else:
            loads = rail_loads_for_strategy(d1, n, w.strategy)
            planned = -(-wire_bytes(loads.max_load_bytes) * 8 * 10**12 // topo.nic_rate)  # framed, as T*
        phases[phase or "alltoall"] = {
            "cct_ps": int(row["cct_ps"]),
            "busbw_bps": float(row["busbw_bps"]),
            "completed": bool(row["completed"]),
            "t_star_ps": plan.t_star_ps(topo.nic_rate),
            "nic_bound_ps": int(planned),
            "server_bytes": plan.busiest_server_bytes,
            "chunks_per_server": plan.max_chunks_per_server,
            # the busiest NVLink port: max over GPUs of the bytes it sends or receives over NVLink
            "nvlink_max_bytes": int(
                max(
                    nvlink[nvlink["group"] == name].groupby("src")["size_bytes"].sum().max(),
                    nvlink[nvlink["group"] == name].groupby("dst")["size_bytes"].sum().max(),
                )
            ),
        }
    out: dict[str, Any] = {
        "phases": phases,
        "wall_s": wall,
        "events": int(result.summary["events"]),
        "flows": int(result.summary["flows"]),
        "scheme": result.summary["scheme"],
        "completed": bool(result.summary["completed"]),
        "drops": int(result.summary["drops"]),
        "retx_ratio": float(result.summary["retx_ratio"]),
        "pfc_pauses": int(result.summary["pfc_pauses"]),
    }
    if w.kind == "moe":
        spec = moe.moe_spec_for(
            MOE_PRESETS[w.model],
            topo.servers,
            n,
            w.tokens_per_gpu,
            zipf_s=w.zipf_s,
            dirichlet_alpha=w.dirichlet_alpha,
            seed=scenario.run.seed + w.seed_offset,
            bytes_per_element=w.bytes_per_element,
        )
        pairs = moe.token_counts(spec).sum(axis=0)  # (token, expert) pairs each GPU computes
        out["pairs_max"] = int(pairs.max())
        out["pairs_mean"] = float(pairs.mean())
        out["tokens_per_gpu"] = w.tokens_per_gpu
    return out


def run_all(points: list[Point], workers: int, cache: Path | None) -> dict[Point, dict[str, Any]]:
    results: dict[Point, dict[str, Any]] = {}
    todo = []
    for p in dict.fromkeys(points):
        path = cache / f"{p.key()}.json" if cache else None
        if path is not None and path.exists():
            results[p] = json.loads(path.read_text())
        else:
            todo.append(p)
    print(f"{len(results)} cached, {len(todo)} to run on {workers} workers", file=sys.stderr)
    started = time.perf_counter()
    with ProcessPoolExecutor(max_workers=workers) as pool:
        futures = {pool.submit(measure, p): p for p in todo}
        for i, fut in enumerate(as_completed(futures), 1):
            p = futures[fut]
            res = fut.result()
            results[p] = res
            if cache:
                cache.mkdir(parents=True, exist_ok=True)
                tmp = cache / f"{p.key()}.tmp"
                tmp.write_text(json.dumps(res))
                os.replace(tmp, cache / f"{p.key()}.json")
            elapsed = time.perf_counter() - started
            print(
                f"[{i}/{len(todo)}] {elapsed:6.0f}s  {p.file} {dict(p.overrides)}  ({res['wall_s']:.1f}s)",
                file=sys.stderr,
            )
    return results


# --- the report's experiments -------------------------------------------------------------------------


@dataclass
class Plan:
    quick: bool
    main: list[Point] = field(default_factory=list)
    main_fine: list[Point] = field(default_factory=list)
    uniform: list[Point] = field(default_factory=list)
    chunks: list[Point] = field(default_factory=list)
    nvlink: list[Point] = field(default_factory=list)
    spines: list[Point] = field(default_factory=list)
    dcqcn: list[Point] = field(default_factory=list)

    def all(self) -> list[Point]:
        return (
            self.main + self.main_fine + self.uniform + self.chunks + self.nvlink + self.spines + self.dcqcn
        )


def make_plan(quick: bool) -> Plan:
    size = (("workload.tokens_per_gpu", 64),) if quick else ()
    usize = (("workload.size", "16KB"),) if quick else ()
    plan = Plan(quick)
    for file in PRESETS.values():
        for s in SKEWS:
            for st in STRATEGIES:
                plan.main.append(Point(file, (("workload.zipf_s", s), ("workload.strategy", st), *size)))
            plan.main_fine.append(
                Point(
                    file,
                    (
                        ("workload.zipf_s", s),
                        ("workload.strategy", "rails"),
                        ("workload.chunk", 128_000),
                        *size,
                    ),
                )
            )
    for st in STRATEGIES:
        plan.uniform.append(Point("uniform_alltoall.toml", (("workload.strategy", st), *usize)))
    chunk_base = (
        ("workload.zipf_s", 1.2),
        ("workload.phase", "dispatch"),
        ("workload.strategy", "rails"),
        *size,
    )
    for c in CHUNKS:
        for o in OVERHEADS_PS:
            plan.chunks.append(
                Point(
                    PRESETS["mixtral-8x7b"],
                    (*chunk_base, ("workload.chunk", c), ("workload.chunk_overhead", o)),
                )
            )
    for rate in NVLINK_RATES:
        for st in ("rails", "rail_matched"):
            plan.nvlink.append(
                Point(
                    PRESETS["mixtral-8x7b"],
                    (
                        ("workload.zipf_s", 1.2),
                        ("workload.strategy", st),
                        ("topology.nvlink_rate", rate),
                        *size,
                    ),
                )
            )
    for spines in SPINES:
        for s in (0.0, 1.2):
            for st in ("rails", "rail_local", "rail_spray"):
                plan.spines.append(
                    Point(
                        PRESETS["mixtral-8x7b"],
                        (
                            ("workload.zipf_s", s),
                            ("workload.strategy", st),
                            ("workload.phase", "dispatch"),
                            ("topology.spines", spines),
                            *size,
                        ),
                    )
                )
    for st in STRATEGIES:
        plan.dcqcn.append(Point("moe_mixtral_8x7b_dcqcn.toml", (("workload.strategy", st), *size)))
    return plan


# --- formatting ---------------------------------------------------------------------------------------


def us(ps: float) -> str:
    return f"{ps / 1e6:.1f}"


def gbps(bps: float) -> str:
    return f"{bps / 1e9:.0f}"


def pct(x: float) -> str:
    return f"{x * 100:+.0f}%"


def table(header: list[str], rows: list[list[str]], align: str | None = None) -> str:
    align = align or "l" + "r" * (len(header) - 1)
    marks = ["---:" if a == "r" else ":---" for a in align]
    lines = ["| " + " | ".join(header) + " |", "| " + " | ".join(marks) + " |"]
    lines += ["| " + " | ".join(r) + " |" for r in rows]
    return "\n".join(lines)


def compute_ps(model: str, res: dict[str, Any], hot: bool) -> tuple[float, float]:
    """(expert, other) forward compute per layer in ps: expert work of the busiest GPU (hot) or of
    an average GPU (balanced, as with a capacity factor)."""
    m = MODEL[model]
    hidden = 4096 if model == "mixtral-8x7b" else 6144
    pairs = res["pairs_max"] if hot else res["pairs_mean"]
    expert = pairs * 2 * 3 * hidden * m["ffn"] / GPU_FLOPS * 1e12
    other = res["tokens_per_gpu"] * (2 * m["attn_params"] + 4 * SEQ * hidden) / GPU_FLOPS * 1e12
    return expert, other


def iteration_ms(model: str, res: dict[str, Any], hot: bool) -> float:
    from spraylab.workload import moe

    preset = {"mixtral-8x7b": moe.MIXTRAL_8X7B, "mixtral-8x22b": moe.MIXTRAL_8X22B}[model]
    expert, other = compute_ps(model, res, hot)
    d = res["phases"]["dispatch"]["cct_ps"]
    c = res["phases"]["combine"]["cct_ps"]
    total = moe.iteration_time_ps(preset, 2 * d, 2 * c, int(3 * expert), int(3 * other))
    return total / 1e9


def a2a_share(model: str, res: dict[str, Any], hot: bool) -> float:
    """Fraction of the layer time spent in all-to-all under the iteration model."""
    expert, other = compute_ps(model, res, hot)
    comm = 2 * (res["phases"]["dispatch"]["cct_ps"] + res["phases"]["combine"]["cct_ps"])
    return comm / (comm + 3 * (expert + other))


def write_report(
    plan: Plan, res: dict[Point, dict[str, Any]], out: Path, minutes: float, workers: int
) -> None:
    def get(points: list[Point], **match: Any) -> dict[str, Any]:
        for p in points:
            if all(p.get(k) == v for k, v in match.items()):
                return res[p]
        raise KeyError(match)

    sample = res[plan.main[0]]
    tokens = sample["tokens_per_gpu"]
    doc: list[str] = []
    add = doc.append
    add("# RailS on spraylab: planned rail spraying for MoE all-to-all")
    add("")
    add(
        "Regenerate (about 4 minutes on 2 idle cores, up to 8 when they are shared; `--quick` for a two-minute smoke run with small messages):"
    )
    add("")
    add("```bash")
    add(".venv/bin/python tools/rails_report.py --workers 2 --out docs/rails.md")
    add("```")
    add("")
    add(
        f"Generated by `tools/rails_report.py` from {len(res)} packet-level runs "
        f"({sum(r['wall_s'] for r in res.values()) / 60:.1f} min of simulation, about "
        f"{sum(r['wall_s'] for r in res.values()) / 60 / workers:.0f} min on {workers} workers)"
        f"{' in QUICK mode (small messages; not the reference numbers)' if plan.quick else ''}. "
        "The tables are written by the tool; the closing notes (`tools/rails_report_notes.md`) were written "
        "against the reference numbers (runs are deterministic: seed 1)."
    )
    add("")
    add("## Setup")
    add("")
    add(
        "* **Fabric** (`scenarios/rails/*.toml`): 8 servers x 8 GPUs (64 GPUs); GPU n of every server has a "
        "400 Gb/s NIC on rail leaf n; 8 spines of 400 Gb/s per rail leaf (1:1, non-blocking); NVLink switch per "
        "server at 3.6 Tb/s per GPU; 1 us per link, 250 ns per NVLink hop."
    )
    add(
        "* **Transport**: lossless (PFC), line-rate senders (`cc = none`), reorder-tolerant NIC (`recovery = ideal`): "
        "the completion times measure balance, not congestion control. One check with DCQCN + selective repeat on a "
        "lossy fabric is at the end."
    )
    add(
        f"* **Workload**: one MoE layer, {tokens} tokens per GPU, top-2 of 8 experts, bf16 hidden vectors "
        "(8 KB per token-expert pair for 8x7B, 12 KB for 8x22B); expert e on GPU index e of every server (8 replicas, "
        "a token goes to a random replica); popularity ~ rank^-s (Zipf, seeded). Dispatch, then combine (its transpose). "
        "All four strategies send the same matrix."
    )
    add(
        "* **Strategies** (`src/spraylab/workload/rail_strategies.py`): `rail_matched` (NCCL PXN: NVLink to the GPU "
        "with the destination's index, then its NIC), `rail_local` (own NIC, cross-rail via spines, ECMP), "
        "`rail_spray` (same, per-packet random spraying at switches: the run's `lb.scheme` becomes `rps`), "
        "`rails` (RailS LPT plan, 512 KB chunks unless stated)."
    )
    add(
        "* **Metrics**: completion (CCT) = first byte to last byte of a phase, including the NVLink hops; "
        "busbw = mean bytes a GPU sends to other GPUs / CCT (NCCL's all-to-all busbw = algbw x (n-1)/n with the "
        "per-rank buffer, NVLink bytes included). T* = max(busiest server's send, receive bytes) / (8 x 400 Gb/s), "
        "the bound of `docs/schemes.md` (RailS); NIC bound = busiest NIC's bytes / 400 Gb/s under the strategy (for `rails`: the plan's)."
    )
    add("")

    # --- reproduction table
    add("## Reproduction: rails against the three other strategies")
    add("")
    add(
        "CCT in us (busbw in Gb/s). `rails@128KB` is the same planner with 128 KB chunks (see the chunk sweep: "
        "512 KB is coarse for these message sizes)."
    )
    add("")
    rows = []
    ratios: dict[str, list[float]] = {b: [] for b in BASELINES}
    bw_gain: dict[str, list[float]] = {b: [] for b in BASELINES}
    fine_ratios: dict[str, list[float]] = {b: [] for b in BASELINES}
    fine_gain: dict[str, list[float]] = {b: [] for b in BASELINES}
    for model in PRESETS:
        for s in SKEWS:
            pts = [p for p in plan.main if p.file == PRESETS[model] and p.get("workload.zipf_s") == s]
            fine = get([p for p in plan.main_fine if p.file == PRESETS[model]], **{"workload.zipf_s": s})
            for phase in ("dispatch", "combine"):
                cells = {st: get(pts, **{"workload.strategy": st})["phases"][phase] for st in STRATEGIES}
                t_star = cells["rails"]["t_star_ps"]
                row = [model, f"{s:g}", phase, us(t_star)]
                for st in STRATEGIES:
                    c = cells[st]
                    row.append(f"{us(c['cct_ps'])} ({gbps(c['busbw_bps'])})")
                f = fine["phases"][phase]
                row.append(f"{us(f['cct_ps'])} ({gbps(f['busbw_bps'])})")
                row.append(f"{cells['rails']['cct_ps'] / t_star:.2f}")
                rows.append(row)
                for b in BASELINES:
                    ratios[b].append(cells["rails"]["cct_ps"] / cells[b]["cct_ps"] - 1)
                    bw_gain[b].append(cells["rails"]["busbw_bps"] / cells[b]["busbw_bps"] - 1)
                    fine_ratios[b].append(f["cct_ps"] / cells[b]["cct_ps"] - 1)
                    fine_gain[b].append(f["busbw_bps"] / cells[b]["busbw_bps"] - 1)
    add(
        table(
            [
                "model",
                "zipf s",
                "phase",
                "T* (us)",
                "rails",
                "rail_matched",
                "rail_local",
                "rail_spray",
                "rails@128KB",
                "rails / T*",
            ],
            rows,
            "lllrrrrrrr",
        )
    )
    add("")
    add(
        "Headline ratios over the 12 (model, skew, phase) cases above (first value: the case least favourable to rails), next to the paper's reported ranges:"
    )
    add("")
    rows = []
    for b in BASELINES:
        r, g = ratios[b], bw_gain[b]
        rows.append([f"rails vs {b}", f"{pct(max(r))} to {pct(min(r))}", f"{pct(min(g))} to {pct(max(g))}"])
    skewed = [
        i
        for i, (_, s, _) in enumerate(
            (m, s, ph) for m in PRESETS for s in SKEWS for ph in ("dispatch", "combine")
        )
        if s > 0
    ]
    r_best = [max(ratios[b][i] for b in BASELINES) for i in range(len(ratios["rail_matched"]))]
    r_sk = [min(ratios[b][i] for b in BASELINES) for i in skewed]
    rows.append(
        [
            "rails vs the best other strategy, per case",
            f"{pct(max(r_best))} to {pct(min(r_best))}",
            f"{pct(min(1 / (1 + x) - 1 for x in r_best))} to {pct(max(1 / (1 + x) - 1 for x in r_best))}",
        ]
    )
    for b in BASELINES:
        r, g = fine_ratios[b], fine_gain[b]
        rows.append(
            [f"rails@128KB vs {b}", f"{pct(max(r))} to {pct(min(r))}", f"{pct(min(g))} to {pct(max(g))}"]
        )
    f_best = [max(fine_ratios[b][i] for b in BASELINES) for i in range(len(fine_ratios["rail_matched"]))]
    rows.append(
        [
            "rails@128KB vs the best other strategy, per case",
            f"{pct(max(f_best))} to {pct(min(f_best))}",
            f"{pct(min(1 / (1 + x) - 1 for x in f_best))} to {pct(max(1 / (1 + x) - 1 for x in f_best))}",
        ]
    )
    rows.append(["paper (RailS, ToN 2026)", PAPER["completion"], PAPER["busbw"]])
    add(table(["comparison", "completion time", "busbw"], rows, "lrr"))
    add("")
    add(
        f"(rails vs the *worst* other strategy on skewed cases only: {pct(max(r_sk))} to {pct(min(r_sk))} completion.)"
    )
    add("")
    add(
        "Where the time goes: the busiest NIC's bytes under each strategy (NIC bound, analytic, from "
        "`rail_loads_for_strategy` / the plan) against the measured CCT, both over T*. The packet-level "
        "CCT is the NIC bound plus 0.06-0.13 T* for rails and rail_spray (latency, headers, queueing); "
        "rail_matched adds up to 0.28 T* (the hot relay GPU's NVLink and rail incast) and rail_local up to "
        "0.54 T* (ECMP collisions on the spines add to the hot NICs)."
    )
    add("")
    rows = []
    for model in PRESETS:
        for s in SKEWS:
            pts = [p for p in plan.main if p.file == PRESETS[model] and p.get("workload.zipf_s") == s]
            fine = get([p for p in plan.main_fine if p.file == PRESETS[model]], **{"workload.zipf_s": s})
            for phase in ("dispatch", "combine"):
                row = [model, f"{s:g}", phase]
                for r in [get(pts, **{"workload.strategy": st}) for st in STRATEGIES] + [fine]:
                    c = r["phases"][phase]
                    row.append(
                        f"{c['nic_bound_ps'] / c['t_star_ps']:.2f} / {c['cct_ps'] / c['t_star_ps']:.2f}"
                    )
                rows.append(row)
    add(
        table(
            ["model", "zipf s", "phase", "rails", "rail_matched", "rail_local", "rail_spray", "rails@128KB"],
            rows,
            "lllrrrrr",
        )
    )
    add("")

    # --- uniform
    add("### Synthetic uniform all-to-all")
    add("")
    rows = []
    for st in STRATEGIES:
        r = get(plan.uniform, **{"workload.strategy": st})
        ph = r["phases"]["alltoall"]
        rows.append(
            [
                st,
                us(ph["cct_ps"]),
                gbps(ph["busbw_bps"]),
                f"{ph['cct_ps'] / ph['t_star_ps']:.2f}",
                f"{ph['nic_bound_ps'] / ph['t_star_ps']:.2f}",
                r["scheme"],
            ]
        )
    size = "16 KB" if plan.quick else "64 KB"
    add(f"{size} per GPU pair; T* = {us(ph['t_star_ps'])} us.")
    add("")
    add(table(["strategy", "CCT (us)", "busbw (Gb/s)", "CCT / T*", "NIC bound / T*", "lb.scheme used"], rows))
    add("")

    # --- iteration time
    add("## Mixtral iteration time")
    add("")
    add(
        "Per layer: 2 x (dispatch + combine) + 3 x (expert + other compute), times 32 (8x7B) or 56 (8x22B) layers "
        "(`spraylab.workload.moe.iteration_time_ps`; forward + backward, the backward repeats both all-to-alls "
        "and costs twice the forward compute). Compute is stated, not simulated: 400 TFLOP/s per GPU, expert FFN "
        "2 x 3 x hidden x ffn FLOP per token-expert pair (ffn 14336 / 16384), other = attention projections + "
        f"scores at 4096-token sequences. Per layer and GPU ({tokens} tokens):"
    )
    add("")
    rows = []
    for model in PRESETS:
        for s in SKEWS:
            r = get(
                [p for p in plan.main if p.file == PRESETS[model]],
                **{"workload.zipf_s": s, "workload.strategy": "rails"},
            )
            e_bal, other = compute_ps(model, r, hot=False)
            e_hot, _ = compute_ps(model, r, hot=True)
            rows.append([model, f"{s:g}", us(e_bal), us(e_hot), us(other)])
    add(
        table(
            [
                "model",
                "zipf s",
                "expert compute, balanced (us)",
                "expert compute, busiest GPU (us)",
                "other compute (us)",
            ],
            rows,
            "llrrr",
        )
    )
    add("")
    add(
        "*Balanced*: every GPU computes the average number of token-expert pairs (as a capacity factor enforces); "
        "*busiest GPU*: the layer waits for the GPU hosting the hottest expert, so skew slows compute for every "
        "strategy alike."
    )
    add("")
    rows = []
    gains: dict[str, list[float]] = {"balanced": [], "hot": []}
    for model in PRESETS:
        for s in SKEWS:
            pts = [p for p in plan.main if p.file == PRESETS[model] and p.get("workload.zipf_s") == s]
            for hot in (False, True):
                it = {
                    st: iteration_ms(model, get(pts, **{"workload.strategy": st}), hot) for st in STRATEGIES
                }
                row = [model, f"{s:g}", "busiest GPU" if hot else "balanced"]
                row += [f"{it[st]:.1f}" for st in STRATEGIES]
                red = [it["rails"] / it[b] - 1 for b in BASELINES]
                row.append(" / ".join(pct(x) for x in red))
                share = [
                    a2a_share(model, get(pts, **{"workload.strategy": st}), hot)
                    for st in ("rails", "rail_matched")
                ]
                row.append(" / ".join(f"{x * 100:.0f}%" for x in share))
                gains["hot" if hot else "balanced"].extend(red)
                rows.append(row)
    add(
        table(
            [
                "model",
                "zipf s",
                "expert compute",
                "rails (ms)",
                "rail_matched (ms)",
                "rail_local (ms)",
                "rail_spray (ms)",
                "rails vs matched / local / spray",
                "all-to-all share: rails / matched",
            ],
            rows,
            "lllrrrrrr",
        )
    )
    add("")
    add(
        f"Iteration-time change of rails, over all cases: balanced compute {pct(max(gains['balanced']))} to "
        f"{pct(min(gains['balanced']))}, compute following skew {pct(max(gains['hot']))} to {pct(min(gains['hot']))}; "
        f"paper: {PAPER['iteration']}."
    )
    add("")

    # --- chunk sweep
    add("## Chunk size: balance against per-chunk overhead")
    add("")
    add(
        "Mixtral-8x7B dispatch, zipf 1.2, rails. The engine charges nothing per message, so the cost of fine chunks "
        "is modelled by `chunk_overhead`: the sender of each rail posts at most one chunk per that time (WQE "
        "posting, doorbell, completion handling, proxy bookkeeping; 1 us and 4 us shown). A chunk takes "
        "chunk x 8 / 400 Gb/s on the wire (1.3 us at 64 KB): the overhead costs time once it exceeds that. CCT / T*:"
    )
    add("")
    rows = []
    for c in CHUNKS:
        base = get(plan.chunks, **{"workload.chunk": c, "workload.chunk_overhead": 0})
        ph = base["phases"]["dispatch"]
        row = [
            f"{c // 1000} KB",
            str(ph["chunks_per_server"]),
            str(base["flows"]),
            f"{ph['nic_bound_ps'] / ph['t_star_ps']:.2f}",
        ]
        for o in OVERHEADS_PS:
            r = get(plan.chunks, **{"workload.chunk": c, "workload.chunk_overhead": o})["phases"]["dispatch"]
            row.append(f"{r['cct_ps'] / r['t_star_ps']:.2f}")
        row.append(f"{base['wall_s']:.1f}")
        rows.append(row)
    t_star = ph["t_star_ps"]
    add(
        table(
            [
                "chunk",
                "chunks / server",
                "messages (all)",
                "plan NIC max / T*",
                "overhead 0",
                "1 us",
                "4 us",
                "sim wall (s)",
            ],
            rows,
        )
    )
    add("")
    add(f"T* = {us(t_star)} us.")
    add("")

    # --- sensitivity
    add("## Sensitivity: NVLink rate and spine oversubscription")
    add("")
    rows = []
    for rate in NVLINK_RATES:
        row = [rate]
        rate_bps = parse_rate_bps(rate)
        for st in ("rails", "rail_matched"):
            r = get(plan.nvlink, **{"topology.nvlink_rate": rate, "workload.strategy": st})
            for phase in ("dispatch", "combine"):
                ph = r["phases"][phase]
                port = ph["nvlink_max_bytes"] * 8e12 / rate_bps / ph["t_star_ps"]
                row.append(f"{us(ph['cct_ps'])} ({ph['cct_ps'] / ph['t_star_ps']:.2f}; {port:.2f})")
        rows.append(row)
    add(
        "Mixtral-8x7B, zipf 1.2: CCT in us (CCT / T*; busiest NVLink port's bytes / NVLink rate / T*). "
        "Both strategies relay over NVLink; rail_local/spray use it only for same-server pairs."
    )
    add("")
    add(
        table(
            [
                "NVLink per GPU",
                "rails dispatch",
                "rails combine",
                "rail_matched dispatch",
                "rail_matched combine",
            ],
            rows,
        )
    )
    add("")
    rows = []
    for spines in SPINES:
        for s in (0.0, 1.2):
            row = [f"{spines} ({8 // spines}:1)", f"{s:g}"]
            for st in ("rails", "rail_local", "rail_spray"):
                ph = get(
                    plan.spines, **{"topology.spines": spines, "workload.zipf_s": s, "workload.strategy": st}
                )["phases"]["dispatch"]
                row.append(f"{us(ph['cct_ps'])} ({ph['cct_ps'] / ph['t_star_ps']:.2f})")
            rows.append(row)
    add("Mixtral-8x7B dispatch: CCT in us (CCT / T*) with fewer spines (oversubscribed rail-leaf uplinks).")
    add("")
    add(table(["spines (oversub.)", "zipf s", "rails", "rail_local", "rail_spray"], rows, "llrrr"))
    add("")
    add("### Commodity transport check (lossy, DCQCN, selective repeat)")
    add("")
    rows = []
    for st in STRATEGIES:
        r = get(plan.dcqcn, **{"workload.strategy": st})
        ph = r["phases"]["dispatch"]
        rows.append(
            [
                st,
                us(ph["cct_ps"]),
                f"{ph['cct_ps'] / ph['t_star_ps']:.2f}",
                str(r["drops"]),
                f"{r['retx_ratio'] * 100:.2f}%",
            ]
        )
    add("Mixtral-8x7B dispatch, zipf 1.2, `scenarios/rails/moe_mixtral_8x7b_dcqcn.toml`.")
    add("")
    add(table(["strategy", "CCT (us)", "CCT / T*", "drops", "retx"], rows))
    add("")
    add("<!-- prose -->")
    out.parent.mkdir(parents=True, exist_ok=True)
    prose = PROSE.read_text() if PROSE.exists() else ""
    text = "\n".join(doc)
    text = text.replace("<!-- prose -->", prose.strip() + "\n" if prose else "")
    out.write_text(text)


PROSE = ROOT / "tools" / "rails_report_notes.md"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--out", type=Path, default=ROOT / "docs" / "rails.md")
    ap.add_argument("--cache", type=Path, default=None, help="directory of per-run JSON results (resume)")
    ap.add_argument(
        "--quick", action="store_true", help="small messages: checks the tool in about two minutes"
    )
    args = ap.parse_args()
    plan = make_plan(args.quick)
    started = time.perf_counter()
    results = run_all(plan.all(), args.workers, args.cache)
    minutes = (time.perf_counter() - started) / 60
    write_report(plan, results, args.out, minutes, args.workers)
    print(f"wrote {args.out} ({minutes:.1f} min)", file=sys.stderr)


if __name__ == "__main__":
    main()
