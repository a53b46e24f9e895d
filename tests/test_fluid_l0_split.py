"""L0 under rps without per-flow routes (spraylab.fluid.l0_split) against L0 over the summed
split-route rows (the per-flow path): the loads are linear in the ToR x ToR bytes and a flow's
busiest link is a maximum over the DAG below its source ToR, so both must agree to rounding."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from spraylab.fluid import l0 as l0_module
from spraylab.fluid.engine import prepare
from spraylab.fluid.l0 import simulate_l0
from spraylab.model.scenario import validate

CASES: dict[str, tuple[dict[str, Any], dict[str, Any]]] = {
    "leaf-spine permutation": (
        {"kind": "leaf_spine", "leaves": 4, "spines": 3, "hosts_per_leaf": 4},
        {"kind": "permutation", "size": "1MB"},
    ),
    "fat-tree all-to-all": ({"kind": "fat_tree", "k": 4}, {"kind": "all_to_all", "size": "64KB"}),
    "fat-tree ring all-reduce": (
        {"kind": "fat_tree", "k": 4},
        {"kind": "collective", "collective": "allreduce", "size": "1MB"},
    ),
    "rail MoE (NVLink and rails)": (
        {"kind": "rail", "servers": 4, "gpus_per_server": 4, "spines": 2},
        {"kind": "moe", "model": "mixtral-8x7b", "tokens_per_gpu": 64, "strategy": "rail_spray"},
    ),
}


@pytest.mark.parametrize("name", list(CASES))
def test_split_l0_equals_per_flow_routes(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    topology, workload = CASES[name]
    sc = validate(
        {
            "topology": topology,
            "lb": {"scheme": "rps"},
            "workload": workload,
            "run": {"engine": "l0", "seed": 2},
        }
    )
    run = prepare(sc)
    assert l0_module.SplitPaths.build(run.fabric, [f.src for f in run.flows], [f.dst for f in run.flows])
    fast = simulate_l0(run)
    monkeypatch.setattr(l0_module.SplitPaths, "build", staticmethod(lambda *args: None))
    slow = simulate_l0(prepare(sc))
    assert fast.stop_reason == slow.stop_reason == "done"
    np.testing.assert_allclose(fast.finish_ps, slow.finish_ps, rtol=1e-9)
    np.testing.assert_allclose(fast.start_ps, slow.start_ps, rtol=1e-9)
    np.testing.assert_allclose(fast.tx_bytes, slow.tx_bytes, rtol=1e-9, atol=1e-6)
    assert fast.end_ps == slow.end_ps
