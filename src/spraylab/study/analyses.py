"""Analyses: named computations a study sweeps like simulations (``analysis = "name"``).

Some truths are not a scenario run: the joint uplink choice of many random entropies traced
through a fabric, or RailS on traffic matrices no workload section describes. An analysis takes
its axis values as parameters and returns named metrics; the study stores each result as JSON
(keyed by analysis and parameters, with the spraylab version) and reads it like a run's summary.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from spraylab.registry import Registry


@dataclass(frozen=True)
class Analysis:
    name: str
    params: tuple[str, ...]
    compute: Callable[..., dict[str, float | int | bool]]
    doc: str


ANALYSES: Registry[Analysis] = Registry("analysis", what="analysis")


def analysis(name: str, *params: str) -> Callable[[Callable[..., Any]], Any]:
    def register(fn: Callable[..., Any]) -> Any:
        ANALYSES.register(Analysis(name, params, fn, (fn.__doc__ or "").strip().split("\n")[0]))
        return fn

    return register


@analysis("fat_tree_hash_uniformity", "k")
def _hash_uniformity(k: int) -> dict[str, float | int | bool]:
    """Pearson's chi-square over the joint (edge uplink, aggregation uplink) of random entropies
    from pod 0 to pod k - 1 of a k-ary fat-tree (p-value by Wilson-Hilferty)."""
    from spraylab.study.validation import uplink_uniformity

    x2, p, df = uplink_uniformity(int(k))
    return {"chi_square": x2, "p_value": p, "cells": df + 1}


@analysis("rails_family", "family", "servers", "gpus_per_server", "seed")
def _rails_family(
    family: str, servers: int, gpus_per_server: int, seed: int
) -> dict[str, float | int | bool]:
    """RailS on one matrix of ``spraylab.rails.families``, simulated at packet level on the rail
    fabric of ``scenarios/rails/``: its CCT, the bound T* and the plan's busiest NIC."""
    from spraylab.rails.families import family_matrix
    from spraylab.rails.simulate import rail_scenario, simulate_matrix

    d1 = family_matrix(family, int(servers), int(gpus_per_server), seed=int(seed))
    scenario = rail_scenario(int(servers), int(gpus_per_server))
    run = simulate_matrix(d1, scenario, "rails")
    assert run.plan is not None
    rate = scenario.topology.nic_rate
    return {
        "cct_ps": run.cct_ps,
        "t_star_ps": run.plan.t_star_ps(rate),
        "planned_ps": run.plan.planned_time_ps(rate),
        "base_rtt_ps": run.base_rtt_ps,
        "completed": int(run.completed),
    }


@analysis("ecmp_collisions", "leaves", "spines", "hosts_per_leaf", "seeds")
def _ecmp_collisions(
    leaves: int, spines: int, hosts_per_leaf: int, seeds: int
) -> dict[str, float | int | bool]:
    """ECMP as balls into bins: flows per leaf uplink over many permutations against the
    binomial expectation (chi-square), and the idle-uplink fraction against (1 - 1/S)^m."""
    from spraylab.study.validation import ecmp_collisions

    return ecmp_collisions(int(leaves), int(spines), int(hosts_per_leaf), int(seeds))


@analysis("ecmp_max_min", "leaves", "spines", "hosts_per_leaf", "seed")
def _ecmp_max_min(leaves: int, spines: int, hosts_per_leaf: int, seed: int) -> dict[str, float | int | bool]:
    """ECMP permutation without congestion control, lossless: flows' throughput over a window
    against the max-min fair shares of their hashed paths."""
    from spraylab.study.validation import ecmp_max_min

    return ecmp_max_min(int(leaves), int(spines), int(hosts_per_leaf), int(seed))


@analysis("cc_bottleneck", "cc", "case", "lossless")
def _cc_bottleneck(cc: str, case: str, lossless: bool) -> dict[str, float | int | bool]:
    """A congestion control at an incast's bottleneck (``spraylab.study.validation.BOTTLENECK_CASES``):
    steady-state utilization and queue, the start-up queue against (N - 1) BDPs, fairness."""
    from spraylab.study.validation import bottleneck_case

    return bottleneck_case(str(cc), str(case), bool(lossless))
