"""Fingerprints of a fixed set of small runs: a hash of each run's summary and flows table.

They guard refactors (a change meant to be behaviour-preserving must leave every fingerprint
unchanged), they say nothing about whether the numbers are right. A deliberate model change
(a new hash, a framing fix, a scheme fix) changes them; regenerate after such a change, in
its own commit, with

    PYTHONPATH=src python tests/fingerprint.py --update

(``python tests/fingerprint.py`` alone lists the scenarios whose fingerprint changed).
"""

from __future__ import annotations

import hashlib
import json
import sys
from pathlib import Path
from typing import Any

from spraylab.results.provenance import VERSION_KEYS
from spraylab.results.store import TIMING_KEYS
from spraylab.runs.experiment import run

STORE = Path(__file__).with_name("fingerprints.json")

LEAF_SPINE = {"kind": "leaf_spine", "leaves": 4, "spines": 4, "hosts_per_leaf": 2, "host_rate": "100Gbps"}
FAT_TREE = {"kind": "fat_tree", "k": 4, "rate": "100Gbps"}
# agg0_0 <-> core0 dies at 20 us; routing reconverges 30 us later (drops, then a reroute)
FAILURE = {
    **FAT_TREE,
    "events": [{"at": "20us", "link": ["agg0_0", "core0"], "action": "down", "convergence": "30us"}],
}
DEGRADED = {
    **LEAF_SPINE,
    "events": [{"at": "10us", "link": ["leaf0", "spine0"], "action": "degrade", "rate_fraction": 0.25}],
}

# name -> (topology, lb section, recovery, cc)
RUNS: dict[str, tuple[dict[str, Any], dict[str, Any], str, str]] = {
    "ls_ecmp_gbn": (LEAF_SPINE, {"scheme": "ecmp"}, "gbn", "dcqcn"),
    "ls_rps_sr": (LEAF_SPINE, {"scheme": "rps"}, "sr", "dcqcn"),
    "ls_rps_ideal": (LEAF_SPINE, {"scheme": "rps"}, "ideal", "none"),
    "ls_spray_rr_sr": (LEAF_SPINE, {"scheme": "spray_rr"}, "sr", "dcqcn"),
    "ls_reps_ideal": (LEAF_SPINE, {"scheme": "reps"}, "ideal", "none"),
    "ls_dfs_sr": (LEAF_SPINE, {"scheme": "dfs"}, "sr", "dcqcn"),
    "ls_wcmp_degraded": (DEGRADED, {"scheme": "wcmp"}, "sr", "dcqcn"),
    "ls_flowlet_gbn": (LEAF_SPINE, {"scheme": "flowlet", "gap_us": 2.0}, "gbn", "dcqcn"),
    "ls_drill_sr": (LEAF_SPINE, {"scheme": "drill"}, "sr", "dcqcn"),
    "ls_adaptive_flow_sr": (LEAF_SPINE, {"scheme": "adaptive", "granularity": "flow"}, "sr", "dcqcn"),
    "ls_tor_assist_sr": (LEAF_SPINE, {"scheme": "tor_assist"}, "sr", "dcqcn"),
    # go-back-N: ToR-assist's reorder mode (its rings hold packets in the shared buffer)
    "ls_tor_assist_reorder_gbn": (LEAF_SPINE, {"scheme": "tor_assist"}, "gbn", "dcqcn"),
    "ft_ecmp_sr": (FAT_TREE, {"scheme": "ecmp"}, "sr", "dcqcn"),
    "ft_spray_rr_ideal": (FAT_TREE, {"scheme": "spray_rr"}, "ideal", "none"),
    "ft_reps_sr": (FAT_TREE, {"scheme": "reps"}, "sr", "dcqcn"),
    "ft_dfs_ideal": (FAT_TREE, {"scheme": "dfs"}, "ideal", "none"),
    "ft_wcmp_gbn": (FAT_TREE, {"scheme": "wcmp"}, "gbn", "dcqcn"),
    "ft_adaptive_ideal": (FAT_TREE, {"scheme": "adaptive"}, "ideal", "none"),
    "ft_tor_assist_sr": (FAT_TREE, {"scheme": "tor_assist"}, "sr", "dcqcn"),
    "fail_ecmp_ideal": (FAILURE, {"scheme": "ecmp"}, "ideal", "none"),
    "fail_dfs_sr": (FAILURE, {"scheme": "dfs"}, "sr", "dcqcn"),
    "fail_wcmp_sr": (FAILURE, {"scheme": "wcmp"}, "sr", "dcqcn"),
    "fail_drill_ideal": (FAILURE, {"scheme": "drill"}, "ideal", "none"),
    "fail_flowlet_sr": (FAILURE, {"scheme": "flowlet", "gap_us": 2.0}, "sr", "dcqcn"),
    "fail_adaptive_flow_gbn": (FAILURE, {"scheme": "adaptive", "granularity": "flow"}, "gbn", "dcqcn"),
    "fail_tor_assist_sr": (FAILURE, {"scheme": "tor_assist"}, "sr", "dcqcn"),
}


def scenario(name: str) -> dict[str, Any]:
    topology, lb, recovery, cc = RUNS[name]
    return {
        "output": {"name": name},
        "topology": topology,
        "transport": {"recovery": recovery, "cc": cc},
        "lb": lb,
        "workload": {"kind": "permutation", "size": "300KB"},
        "run": {"seed": 3, "time_limit": "20ms", "progress": False},
    }


def fingerprint(name: str) -> str:
    """sha256 (first 16 hex digits) of the run's summary (timing and version keys left out: they differ between identical runs) and flows table."""
    result = run(scenario(name))
    # the card names the version (and the commit) too; "engine" is always "packet" here
    skip = {*TIMING_KEYS, *VERSION_KEYS, "card", "engine"}
    summary = {k: v for k, v in result.summary.items() if k not in skip}
    digest = hashlib.sha256(json.dumps(summary, sort_keys=True, default=repr).encode())
    digest.update(result.flows.to_csv(index=False).encode())
    return digest.hexdigest()[:16]


def stored() -> dict[str, str]:
    return json.loads(STORE.read_text()) if STORE.exists() else {}


def main(argv: list[str]) -> int:
    update = "--update" in argv
    old = stored()
    new = {name: fingerprint(name) for name in RUNS}
    changed = sorted(name for name in new if old.get(name) != new[name])
    for name in changed:
        print(f"{name}: {old.get(name, '-')} -> {new[name]}")
    if update:
        STORE.write_text(json.dumps(new, indent=1, sort_keys=True) + "\n")
        print(f"wrote {len(new)} fingerprints to {STORE}")
        return 0
    return 1 if changed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
