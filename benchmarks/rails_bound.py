"""RailS against its own bound: CCT / T* of Mixtral-sized dispatch matrices of every family of
``spraylab.rails.families`` on 8x8 and 16x8 GPUs, simulated at packet level (not a timing
benchmark: it prints completion times, not wall times).

    PYTHONPATH=src .venv/bin/python benchmarks/rails_bound.py                   # rails, defaults
    PYTHONPATH=src .venv/bin/python benchmarks/rails_bound.py --json out.json   # also save CCTs
    PYTHONPATH=src .venv/bin/python benchmarks/rails_bound.py --cct-from out.json  # re-print only
    PYTHONPATH=src .venv/bin/python benchmarks/rails_bound.py --strategies rails,rail_matched,\
rail_local,rail_spray --families zipf0,uniform --shapes 16x8 --seeds 1

A matrix *meets the bound* when CCT <= 1.1 T* + base RTT (T* with packet framing, RTT of a
relayed message; see ``RailPlan.t_star_ps`` and ``RailLinks.base_rtt_ps``).
"""

from __future__ import annotations

import argparse
import json
import sys
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

NIC_RATE_BPS = 400 * 10**9


def key(strategy: str, family: str, shape: str, seed: int, chunk: int | None) -> str:
    return f"{strategy}/{family}/{shape}/{seed}/{chunk or 'default'}"


def run_one(args: tuple[str, str, str, int, int | None]) -> tuple[str, dict[str, int]]:
    from spraylab.rails.families import family_matrix
    from spraylab.rails.simulate import rail_scenario, simulate_matrix

    strategy, family, shape, seed, chunk = args
    m, n = (int(x) for x in shape.split("x"))
    d1 = family_matrix(family, m, n, seed)
    options = {"chunk_bytes": chunk} if chunk else {}
    run = simulate_matrix(d1, rail_scenario(m, n), strategy, **options)
    return key(*args), {"cct_ps": run.cct_ps, "completed": int(run.completed)}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--strategies", default="rails")
    p.add_argument("--families", default="zipf0,zipf0.6,zipf1.2,uniform,lognormal,hot_server")
    p.add_argument("--shapes", default="8x8,16x8")
    p.add_argument("--seeds", default="1,2,3")
    p.add_argument("--chunk", type=int, default=0, help="rails chunk_bytes (0: the planner's default)")
    p.add_argument("--workers", type=int, default=1)
    p.add_argument("--json", type=Path, help="save the measured CCTs here")
    p.add_argument("--cct-from", type=Path, help="print CCTs saved by --json instead of simulating")
    a = p.parse_args(argv)
    chunk = a.chunk or None
    points = [
        (s, f, shape, int(seed), chunk)
        for s in a.strategies.split(",")
        for shape in a.shapes.split(",")
        for f in a.families.split(",")
        for seed in a.seeds.split(",")
    ]
    if a.cct_from:
        measured = json.loads(a.cct_from.read_text())
    else:
        with ProcessPoolExecutor(max_workers=a.workers) as pool:
            measured = dict(pool.map(run_one, points))
        if a.json:
            a.json.write_text(json.dumps(measured, indent=1, sort_keys=True))
    report(points, measured)
    return 0


def report(points: list[tuple[str, str, str, int, int | None]], measured: dict[str, dict[str, int]]) -> None:
    """One line per matrix: T*, planned max NIC load / T*, CCT / T*, whether it meets the bound."""
    from spraylab.rails.families import family_matrix
    from spraylab.rails.planner import plan_rails
    from spraylab.rails.simulate import rail_scenario
    from spraylab.topology.rail import rail_optimized
    from spraylab.workload.rail_strategies import RailLinks

    by_strategy: dict[str, list[tuple[float, str, bool]]] = {}
    print(f"{'strategy':12} {'matrix':24} {'T* us':>8} {'plan/T*':>8} {'CCT/T*':>8} {'bound/T*':>9}  meets")
    for point in points:
        strategy, family, shape, seed, chunk = point
        row = measured.get(key(*point))
        if row is None:
            continue
        m, n = (int(x) for x in shape.split("x"))
        d1 = family_matrix(family, m, n, seed)
        plan = plan_rails(d1, n) if chunk is None else plan_rails(d1, n, chunk)
        topo = rail_scenario(m, n).topology
        links = RailLinks.from_fabric(
            rail_optimized(m, n, topo.spines, topo.nic_rate, topo.nic_rate, topo.nvlink_rate,
                           topo.link_delay, topo.nvlink_delay)
        )  # fmt: skip
        t_star = plan.t_star_ps(NIC_RATE_BPS)
        allowed = 1.1 * t_star + links.base_rtt_ps()
        ratio = row["cct_ps"] / t_star if row["completed"] else float("inf")
        meets = bool(row["completed"]) and row["cct_ps"] <= allowed
        name = f"{family} {shape} s{seed}"
        planned = plan.planned_time_ps(NIC_RATE_BPS) / t_star if strategy == "rails" else float("nan")
        print(
            f"{strategy:12} {name:24} {t_star / 1e6:8.2f} {planned:8.3f} {ratio:8.3f} "
            f"{allowed / t_star:9.3f}  {'yes' if meets else 'NO'}"
        )
        by_strategy.setdefault(strategy, []).append((ratio, name, meets))
    for strategy, rows in by_strategy.items():
        worst = max(rows)
        ok = sum(m for _, _, m in rows)
        print(
            f"{strategy}: {ok}/{len(rows)} meet CCT <= 1.1 T* + RTT; CCT/T* {min(rows)[0]:.3f}..{worst[0]:.3f}, "
            f"worst {worst[1]}"
        )


if __name__ == "__main__":
    sys.exit(main())
