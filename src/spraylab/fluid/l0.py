"""The L0 bound: each phase takes as long as its most loaded link needs for its bytes.

A *phase* is the flows of one group at one dependency depth (a flow without dependencies has
depth 0, a flow waiting for others one more than the deepest of them): the whole of a
permutation or an all-to-all, one step of a ring. A phase starts when the last of the flows it
waits for is received (plus the flow's own ``start_ps``: the latest such time over its flows),
each link ``l`` must carry ``B_l`` wire bytes of it at capacity ``C_l``, and the phase cannot
end before ``max_l B_l / C_l`` after its start (no schedule moves bytes faster than its
busiest link), plus one base latency. That is a lower bound on the phase's duration, and it is
what the fluid engine computes for phases whose flows all start together and whose busiest
link stays busy throughout (uniform permutations, all-to-alls, ring steps). A flow finishes
``max over its links of B_l / C_l`` after the phase start plus its own latency.

No event loop and no solver: one pass over the routes, so it runs at scales where even the
fluid engine's rate solves are too many. Scenarios with link events are refused (L0 is a
bound of the healthy fabric).
"""

from __future__ import annotations

import numpy as np

from spraylab.fluid.engine import PS_PER_S, FluidOutcome, FluidRun, _Routes, flow_times
from spraylab.fluid.l0_split import SplitPaths
from spraylab.fluid.routing import FluidFabric

__all__ = ["simulate_l0", "phases"]


def phases(run: FluidRun) -> np.ndarray:
    """The phase index of every flow (module docstring), in an order where a phase comes
    after every phase it depends on."""
    flows = run.flows
    index = {f.flow_id: i for i, f in enumerate(flows)}
    depth = np.zeros(len(flows), dtype=np.int64)
    for i, f in enumerate(flows):  # workloads list dependencies before their dependents
        if f.deps:
            depth[i] = 1 + max(int(depth[index[d]]) for d in f.deps)
    keys: dict[tuple[int, str], int] = {}
    order = sorted({(int(depth[i]), f.group) for i, f in enumerate(flows)})
    for key in order:
        keys[key] = len(keys)
    return np.array([keys[(int(depth[i]), f.group)] for i, f in enumerate(flows)], dtype=np.int64)


def _ready(run: FluidRun, members: np.ndarray, finish: np.ndarray, index: dict[int, int]) -> np.ndarray:
    flows = run.flows
    return np.array(
        [max((finish[index[d]] for d in flows[i].deps), default=0.0) + flows[i].start_ps for i in members]
    )


def _simulate_split(run: FluidRun, split: SplitPaths) -> FluidOutcome:
    """:func:`simulate_l0` under the ``split`` model, every flow reachable, without per-flow
    routes (:mod:`spraylab.fluid.l0_split`)."""
    ff = run.fabric
    n = len(run.flows)
    index = {f.flow_id: i for i, f in enumerate(run.flows)}
    volume, lat, ideal, bound = flow_times(run)
    cap = ff.rate_bps.astype(float) / 8 / PS_PER_S
    phase = phases(run)
    n_phases = int(phase.max(initial=-1)) + 1
    start = np.full(n, -1.0)
    finish = np.full(n, -1.0)
    tx = np.zeros(ff.n_links)
    for ph in range(n_phases):
        members = np.flatnonzero(phase == ph)
        ready = _ready(run, members, finish, index)
        if (ready < 0).any():
            continue  # waits on a flow that never finishes
        t0 = float(ready.max())
        load = split.loads(members, volume, ff.n_links)
        tx += load
        busy = load / cap
        start[members] = t0
        finish[members] = t0 + split.busiest(members, busy) + lat[members]
    return _outcome(start, finish, ideal, bound, tx, ff, n_phases)


def simulate_l0(run: FluidRun) -> FluidOutcome:
    if run.events:
        from spraylab.model.scenario import ScenarioError

        raise ScenarioError(["topology.events: not modelled by run.engine = 'l0'; use 'fluid' or 'packet'"])
    ff = run.fabric
    flows = run.flows
    n = len(flows)
    index = {f.flow_id: i for i, f in enumerate(flows)}
    if any(index[d] >= i for i, f in enumerate(flows) for d in f.deps):
        raise ValueError("L0: a flow depends on a later flow; phases need dependencies listed first")
    split = (
        SplitPaths.build(ff, [f.src for f in flows], [f.dst for f in flows]) if run.model == "split" else None
    )
    if split is not None:
        return _simulate_split(run, split)
    routes = _Routes(run, ff.rate_bps.astype(float))
    p = routes.problem
    cap = routes.cap  # bytes per ps; pooled constraints after the real links
    volume, lat, ideal, bound = flow_times(run)
    phase = phases(run)
    n_phases = int(phase.max(initial=-1)) + 1
    start = np.full(n, -1.0)
    finish = np.full(n, -1.0)
    tx = np.zeros(p.n_links)
    entry_phase = phase[p.entry_flow]
    for ph in range(n_phases):
        members = np.flatnonzero(phase == ph)
        ready = _ready(run, members, finish, index)
        if (ready < 0).any() or not routes.reachable[members].all():
            continue  # waits on a flow that never finishes, or cannot reach its destination
        t0 = float(ready.max())
        on = entry_phase == ph
        load = np.bincount(p.link[on], weights=p.coef[on] * volume[p.entry_flow[on]], minlength=p.n_links)
        tx += load
        busy = np.where(load > 0, load / cap, 0.0)  # ps each link needs for the phase
        flow_busy = np.zeros(n)
        np.maximum.at(flow_busy, p.entry_flow[on], busy[p.link[on]])
        start[members] = t0
        finish[members] = t0 + flow_busy[members] + lat[members]
    real = routes.n_real
    tx_real = tx[:real].copy()
    for j, stage in enumerate(routes.pools):
        caps = ff.rate_bps[list(stage)].astype(float)
        tx_real[list(stage)] += tx[real + j] * caps / caps.sum()
    return _outcome(start, finish, ideal, bound, tx_real, ff, n_phases)


def _outcome(
    start: np.ndarray,
    finish: np.ndarray,
    ideal: np.ndarray,
    bound: np.ndarray,
    tx: np.ndarray,
    ff: FluidFabric,
    n_phases: int,
) -> FluidOutcome:
    """An L0 result: every link up at its full rate, no rate solves, one step per phase."""
    return FluidOutcome(
        start,
        finish,
        ideal,
        bound,
        tx,
        ff.rate_bps.astype(float),
        np.ones(ff.n_links, dtype=bool),
        int(round(float(finish.max(initial=0.0)))),
        0,
        0,
        n_phases,
        "done" if (finish >= 0).all() else "idle",
    )
