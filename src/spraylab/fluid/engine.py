"""The fluid engine: flows as rates, re-solved to exact max-min fairness at every arrival,
completion and capacity event.

A run builds the fabric and the flows through the packet engine's own code
(``experiment.build_fabric``, ``workload.build.build_flows``), with the random streams drawn in
the packet engine's order, so both engines see the same permutation, the same flow entropies and
the same switch salts (and therefore the same ECMP collisions). Each flow is a volume of wire
bytes (RoCEv2 framing, :mod:`spraylab.net.framing`) moved at its max-min fair rate over its
route model (:mod:`spraylab.fluid.routing`). A flow is *received* one base latency after its
last byte left: the representative route's propagation plus one store-and-forward of its first
packet at every hop but the slowest (whose serialization the fluid transfer already counts), so
a flow alone on the fabric finishes exactly at the packet engine's idle-fabric FCT.

What is not modelled, and so never reported: queues, drops, ECN, PFC, retransmissions,
reordering, congestion control dynamics (the rates are the fair allocation ideal congestion
control would reach at once). Link events: ``degrade`` changes a capacity; ``down`` gives the
link no capacity until routing reconverges (a flow whose single path crosses it stalls, a
sprayed flow loses the share it sends into it, which it must send again), then routes are
recomputed and every unfinished flow re-traced; ``loss`` is refused.

``quantum_ps`` (``run.fluid_quantum``) bounds how often rates are re-solved: after a solve, the
next one happens no sooner than ``quantum_ps`` later (completions are still exact: a flow
finishes when its bytes are done; the capacity it frees and a flow that arrives in between
wait for the next solve). 0 re-solves at every event.
"""

from __future__ import annotations

import heapq
import itertools
import math
import random
import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from spraylab.engine.simulator import Simulator
from spraylab.fluid._maxmin import sprayed
from spraylab.fluid._sparse import first_use_rows, link_sums, restrict
from spraylab.fluid.acks import ack_bytes_per_byte, packets_per_ack, solve_with_acks
from spraylab.fluid.routing import FluidFabric, packet_hash_array, random_samples, random_words, route_model
from spraylab.fluid.solver import Problem, certify, pick_solver, problem_from_rows, solver_named
from spraylab.fluid.warm import WarmSolver
from spraylab.net.framing import data_wire_bytes
from spraylab.net.link_events import LINK_ACTIONS
from spraylab.net.route_table import RouteTable
from spraylab.transport.params import ACK_COUNTED_HEADER_BYTES
from spraylab.workload.build import GroupInfo, build_flows
from spraylab.workload.flows import FlowSpec

__all__ = ["FluidRun", "prepare", "simulate", "wire_bytes"]

PS_PER_S = 1e12
DONE_RTOL = 1e-9  # a flow whose remaining bytes fell below this share of its volume is done


def wire_bytes(size_bytes: int, mtu_bytes: int) -> int:
    """Bytes a message of ``size_bytes`` puts on every link it crosses (full packets plus the
    last one, each with the RoCEv2 envelope)."""
    n_packets = max(1, -(-size_bytes // mtu_bytes))
    last = size_bytes - (n_packets - 1) * mtu_bytes
    return (n_packets - 1) * data_wire_bytes(mtu_bytes) + data_wire_bytes(last)


def lb_setup_draws(scheme: str, params: dict[str, Any]) -> int:
    """How many child generators the scheme's ``setup`` derives from the run's generator: the
    fluid engine skips as many draws, so the workload stream after it is the packet engine's.
    Counted by setting the scheme up on a two-leaf fabric (the count does not depend on the
    fabric)."""
    from spraylab.lb.base import make_lb
    from spraylab.net.network import Network
    from spraylab.runs.experiment import switch_params
    from spraylab.topology.leaf_spine import leaf_spine
    from spraylab.transport.params import TransportParams

    class Counting(Simulator):
        draws = 0

        def derive_rng(self, salt: int) -> Any:
            Counting.draws += 1
            return super().derive_rng(salt)

    from spraylab.model.scenario import Scenario

    scenario = Scenario.from_dict({"workload": {"kind": "permutation", "size": "1KB"}})
    sim = Counting(0)
    fabric = leaf_spine(2, 2, 1, 100_000_000_000, 100_000_000_000, 1_000_000, 1)
    Network(sim, fabric, switch_params(scenario), TransportParams(), make_lb(scheme, params))
    return Counting.draws - 3  # the network's own: flows, ports, switch salts


def network_streams(seed: int, fabric: Any) -> tuple[Simulator, random.Random, RouteTable]:
    """The run's generator, the flows' entropy stream and the fabric's route table with every
    switch's salt (``RouteTable.salt``), drawn as ``Network`` draws them (flows, ECN marking,
    salts, in that order), so both engines hash alike; the table's first routing version is
    computed."""
    sim = Simulator(seed)
    flow_rng = sim.derive_rng(0x5EED_F10)
    sim.derive_rng(0xEC4)  # the packet engine's ECN marking stream
    table = RouteTable(fabric)
    table.draw_salts(sim)
    table.compute()
    return sim, flow_rng, table


@dataclass
class FluidRun:
    """Everything a fluid run needs, built from a scenario (see :func:`prepare`)."""

    fabric: FluidFabric
    flows: list[FlowSpec]
    groups: dict[str, GroupInfo]
    entropy: list[int]
    model: str
    mtu_bytes: int
    events: list[Any] = field(default_factory=list)
    quantum_ps: int = 0
    certify: bool = True
    solver: str = "numpy"  # the max-min kernel (spraylab.fluid.solver.pick_solver)
    warm: bool = True  # re-solve only the flows a change can move (fluid/warm.py)
    # per flow: ACK wire bytes per data wire byte (fluid/acks.py); empty: ACKs not modelled
    ack_ratio: list[float] = field(default_factory=list)
    spray_entropies: list[list[int]] = field(default_factory=list)  # spray_rr: per flow


def prepare(scenario: Any) -> FluidRun:
    """Fabric, flows and random streams of ``scenario``, in the packet engine's order."""
    from spraylab.lb.base import make_lb
    from spraylab.model.scenario import ScenarioError
    from spraylab.net.link_events import fluid_actions
    from spraylab.runs.experiment import build_fabric

    for event in scenario.topology.events:
        if event.action not in fluid_actions():
            raise ScenarioError(
                [
                    f"topology.events.action = {event.action!r}: not modelled by the fluid engine; "
                    f"allowed {', '.join(fluid_actions())}"
                ]
            )
    try:
        model = route_model(scenario.lb.scheme)
    except ValueError as exc:
        raise ScenarioError([str(exc)]) from None
    fabric = build_fabric(scenario.topology)
    sim, flow_rng, table = network_streams(scenario.run.seed, fabric)
    draws = lb_setup_draws(scenario.lb.scheme, scenario.lb.params)
    spray_rng = None
    if model == "entropies":  # spray_rr's setup derives its one stream here (lb/spray_rr.py)
        spray_rng = sim.derive_rng(0x5B2A7)
        draws -= 1
    for _ in range(draws):
        sim.rng.getrandbits(64)
    ff = FluidFabric(table)
    for event in scenario.topology.events:
        a, b = event.link
        if not any({link.a, link.b} == {a, b} for link in fabric.links):
            raise ScenarioError(
                [
                    f"topology.events.link = {[a, b]!r}: no such link; names look like {fabric.links[-1].a!r}, {fabric.links[-1].b!r}"
                ]
            )
    flows, groups = build_flows(scenario.workload, fabric, sim.derive_rng(0xF10A), scenario.run.seed)
    entropy = random_words(flow_rng, len(flows), 16).tolist()  # one getrandbits(16) per flow
    spray: list[list[int]] = []
    if spray_rng is not None:  # drawn at each flow's start, in start order: here, list order
        paths = make_lb(scenario.lb.scheme, scenario.lb.params).params.paths  # type: ignore[attr-defined]
        spray = random_samples(spray_rng, 1 << 16, paths, len(flows))
    ack_ratio: list[float] = []
    if scenario.run.fluid_acks:
        t = scenario.transport
        mtu = t.mtu
        # the receiver counts each packet's payload plus the header transport.ack_bytes names
        per_ack = packets_per_ack(t.ack_every, t.ack_every_bytes, mtu + ACK_COUNTED_HEADER_BYTES[t.ack_bytes])
        by_size = {  # one computation per distinct size (a permutation has one)
            size: ack_bytes_per_byte(max(1, -(-size // mtu)), wire_bytes(size, mtu), per_ack)
            for size in {f.size_bytes for f in flows}
        }
        ack_ratio = [by_size[f.size_bytes] for f in flows]
    try:
        solver = pick_solver(scenario.run.fluid_solver, len(flows), scenario.run.fluid_acks)
    except ValueError as exc:
        raise ScenarioError([str(exc)]) from None
    return FluidRun(
        ff,
        flows,
        groups,
        entropy,
        model,
        scenario.transport.mtu,
        list(scenario.topology.events),
        getattr(scenario.run, "fluid_quantum", 0),
        solver=solver,
        ack_ratio=ack_ratio,
        spray_entropies=spray,
    )


class _Routes:
    """Every flow's entries (link, bytes per byte of its rate) as one CSR problem, plus the
    pooled constraints of the ``pool`` model as extra links after the real ones."""

    def __init__(self, run: FluidRun, capacity_bps: np.ndarray) -> None:
        ff = run.fabric
        self.n_real = ff.n_links
        self._pools: dict[tuple[int, ...], int] = {}
        self._cache: dict[tuple[int, int], dict[int, float]] = {}
        src = np.array([spec.src for spec in run.flows], dtype=np.int64)
        dst = np.array([spec.dst for spec in run.flows], dtype=np.int64)
        # ACKs go back from the receiver with the data packet's hash (the receiver echoes it),
        # so they take the same route model in the other direction
        ack_ratio = np.asarray(run.ack_ratio, dtype=float)
        if run.model in ("hash", "entropies", "split"):
            self.pools = []
            data = self.problem = _traced_problem(run, src, dst, ff.n_links)
            acks = _traced_problem(run, dst, src, ff.n_links) if run.ack_ratio else None
        else:
            rows = [self._row(run, i, spec.src, spec.dst) for i, spec in enumerate(run.flows)]
            ack_rows = (
                [self._row(run, i, spec.dst, spec.src) for i, spec in enumerate(run.flows)]
                if run.ack_ratio
                else []
            )
            self.pools = list(self._pools)
            n_links = self.n_real + len(self.pools)
            data = self.problem = problem_from_rows(rows, n_links)
            acks = problem_from_rows(ack_rows, n_links) if run.ack_ratio else None
        # per flow: ACK bytes per byte of its rate, per link
        if acks is None:
            self.acks = _csr(len(src), data.n_links, data.link[:0], data.link[:0], data.coef[:0])
        else:
            self.acks = Problem(
                acks.ptr, acks.link, acks.coef * ack_ratio[acks.entry_flow], acks.weight, data.n_links
            )
        self.reachable = np.diff(self.problem.ptr) > 0
        # flows on many links each (spraying): the compiled ACK loop transposes them once per
        # loop, not before every solve, and the engine hands it their rows in place (simulate)
        self.sprayed = bool(sprayed(len(self.problem.link), self.problem.n_flows))
        self.capacity(capacity_bps, np.ones(self.n_real, dtype=bool))

    def _row(self, run: FluidRun, i: int, src: int, dst: int) -> dict[int, float]:
        """Flow ``i``'s bytes per byte of its rate on every link, from ``src`` to ``dst``
        under the run's route model (``src``/``dst`` swapped: its ACKs' route), for the
        models :func:`_traced_problem` does not build."""
        from spraylab.net.routes import packet_hash

        ff = run.fabric
        spec = run.flows[i]
        if run.model == "tor_split":
            return ff.tor_split_route(src, dst, packet_hash(spec.flow_id, run.entropy[i]))
        key = (src, dst)
        got = self._cache.get(key)
        if got is None:
            got = {}
            for stage in ff.stage_sets(src, dst):
                if len(stage) == 1:
                    got[stage[0]] = 1.0
                else:
                    got[self._pools.setdefault(stage, self.n_real + len(self._pools))] = 1.0
            self._cache[key] = got
        return got

    def capacity(self, capacity_bps: np.ndarray, up: np.ndarray) -> np.ndarray:
        """Solver capacities in bytes per ps (a dead link never constrains: what enters it is
        lost, see :meth:`goodput`), and the per-flow share of sent bytes that arrives."""
        real = np.where(up, capacity_bps / 8 / PS_PER_S, np.inf)
        pooled = [sum(real[lid] for lid in stage if up[lid]) for stage in self.pools]
        self.cap = np.concatenate([real, np.array(pooled, dtype=float)])
        p = self.problem
        dead = np.zeros(p.n_links, dtype=bool)
        dead[: self.n_real] = ~up
        lost = np.bincount(p.entry_flow, weights=np.where(dead[p.link], p.coef, 0.0), minlength=p.n_flows)
        self.goodput = np.clip(1.0 - lost, 0.0, 1.0)
        return self.cap


def _traced_problem(run: FluidRun, src: np.ndarray, dst: np.ndarray, n_links: int) -> Problem:
    """The flows' rows from ``src`` to ``dst``, every flow traced at once: under ``split`` the
    equal split down the equal-cost DAG; under ``hash`` one ECMP walk of each flow's header
    hash; under ``entropies`` an equal share on the ECMP walk of each of its entropies (a link
    several walks cross adds their shares). Entries keep the order of first use along the
    walks; a flow with an unreachable walk has no entries (it cannot be delivered)."""
    n = len(src)
    if run.model == "split":
        entry_flow, entry_link, share = run.fabric.split_shares(src, dst)
        return _csr(n, n_links, entry_flow, entry_link, share)
    flow_ids = np.array([spec.flow_id for spec in run.flows], dtype=np.int64)
    if run.model == "hash":
        per_flow = np.ones(n, dtype=np.int64)
        entropy = np.asarray(run.entropy, dtype=np.int64)
    else:
        per_flow = np.array([len(e) for e in run.spray_entropies], dtype=np.int64)
        entropy = np.fromiter(
            itertools.chain.from_iterable(run.spray_entropies), dtype=np.int64, count=int(per_flow.sum())
        )
    walk_flow = np.repeat(np.arange(n), per_flow)
    links, length = run.fabric.hash_walks(
        src[walk_flow], dst[walk_flow], packet_hash_array(flow_ids[walk_flow], entropy)
    )
    dead = np.zeros(n, dtype=bool)
    dead[walk_flow[length == 0]] = True
    used = (links >= 0) & ~dead[walk_flow][:, None]
    entry_flow = np.broadcast_to(walk_flow[:, None], links.shape)[used]
    entry_link = links[used]
    share = (1.0 / per_flow)[entry_flow]
    # one entry per (flow, link), at its first use, with the walks' shares summed in walk order
    ptr, link, coef = first_use_rows(entry_flow, entry_link, share, n, n_links)
    return Problem(ptr, link, coef, np.ones(n), n_links)


def _csr(n_flows: int, n_links: int, entry_flow: np.ndarray, link: np.ndarray, coef: np.ndarray) -> Problem:
    """A unit-weight :class:`Problem` from entries already ordered by flow."""
    ptr = np.zeros(n_flows + 1, dtype=np.int64)
    np.cumsum(np.bincount(entry_flow, minlength=n_flows), out=ptr[1:])
    return Problem(ptr, link, coef, np.ones(n_flows), n_links)


def flow_times(run: FluidRun) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Every flow's wire bytes, and in ps its base latency, idle-fabric FCT and FCT bound on
    its representative route (0s if unreachable). Latency: propagation plus the first packet's
    store-and-forward at every hop but the slowest. Idle FCT: ``collect.ideal_fct_ps``'s
    formula. Bound: the same with only the host links' rates (no scheme beats the NIC and the
    receiver's port). Summed hop by hop in route order, as the scalar formula would."""
    ff = run.fabric
    mtu = run.mtu_bytes
    size = np.array([f.size_bytes for f in run.flows], dtype=np.int64)
    sizes, at = np.unique(size, return_inverse=True)
    volume = np.array([wire_bytes(int(x), mtu) for x in sizes], dtype=float)[at]
    first = np.array([data_wire_bytes(min(int(x), mtu)) for x in sizes], dtype=float)[at]
    src = np.array([f.src for f in run.flows], dtype=np.int64)
    dst = np.array([f.dst for f in run.flows], dtype=np.int64)
    links, length = ff.hash_walks(src, dst, None)
    ppb = 8 * PS_PER_S / ff.rate_bps.astype(float)  # ps per byte of every link
    delay = ff.delay_ps.astype(float)
    hops = np.zeros(len(size))
    slowest = np.zeros(len(size))
    for column in links.T:
        on = column >= 0
        lid = column[on]
        hops[on] = hops[on] + (delay[lid] + first[on] * ppb[lid])
        slowest[on] = np.maximum(slowest[on], ppb[lid])
    reached = length > 0
    last = links[np.arange(len(size)), np.maximum(length - 1, 0)]
    host_slowest = np.where(reached, np.maximum(ppb[links[:, 0]], ppb[last]), 0.0)
    latency = hops - first * slowest
    ideal = hops + (volume - first) * slowest
    bound = hops - first * (slowest - host_slowest) + (volume - first) * host_slowest
    zero = np.zeros(len(size), dtype=np.int64)
    return (
        volume,
        np.where(reached, latency.astype(np.int64), zero).astype(float),
        np.where(reached, ideal.astype(np.int64), zero),
        np.where(reached, np.minimum(bound, ideal).astype(np.int64), zero),
    )


@dataclass
class FluidOutcome:
    """Per-flow times (ps; -1 = not finished), per-link bytes, and run counters."""

    start_ps: np.ndarray
    finish_ps: np.ndarray
    ideal_ps: np.ndarray
    bound_ps: np.ndarray
    tx_bytes: np.ndarray
    rate_bps: np.ndarray
    up: np.ndarray
    end_ps: int
    solves: int
    reused: int
    steps: int
    stop_reason: str
    ack_fallbacks: int = 0  # solves whose ACK reservation fell back to shared rows (fluid/acks.py)


def simulate(run: FluidRun, time_limit_ps: int, max_wall_s: float = 0.0, max_events: int = 0) -> FluidOutcome:
    """Run the fluid model to completion (or the time limit / wall budget / ``max_events``
    steps, each an arrival, completion, capacity event or solve time)."""
    ff = run.fabric
    flows = run.flows
    n = len(flows)
    volume, lat, ideal, bound = flow_times(run)
    remaining = volume.copy()
    base_rate = ff.rate_bps.astype(float)
    rate_bps = base_rate.copy()
    up = np.ones(ff.n_links, dtype=bool)
    routes = _Routes(run, rate_bps)
    index = {f.flow_id: i for i, f in enumerate(flows)}
    children: dict[int, list[int]] = {}
    waiting = np.zeros(n, dtype=np.int64)
    arrivals: list[tuple[float, int]] = []
    for i, spec in enumerate(flows):
        if spec.deps:
            waiting[i] = len(spec.deps)
            for d in spec.deps:
                children.setdefault(index[d], []).append(i)
        else:
            arrivals.append((float(spec.start_ps), i))
    heapq.heapify(arrivals)
    # capacity events: (time, order, kind, link ids, value)
    cap_events: list[tuple[float, int, str, list[int], float]] = []
    for order, event in enumerate(run.events):
        a, b = event.link
        lids = _event_links(ff, a, b, event.parallel, event.direction)
        cap_events.extend(LINK_ACTIONS.get(event.action).fluid_events(event, order, lids) or ())
    heapq.heapify(cap_events)

    start = np.full(n, -1.0)
    finish = np.full(n, -1.0)
    active = np.zeros(n, dtype=bool)
    n_active = 0  # active.sum(), kept as flows start and finish (a step never scans all flows)
    tx = np.zeros(routes.problem.n_links)
    sent = np.zeros(n)  # bytes each flow sent since its entries last went into tx

    def flush_tx() -> None:
        """Put the bytes every flow sent onto its links: at a reroute (the new routes are not
        the ones they took) and at the end. A flow's entries do not change in between, so one
        sum over the table replaces one per solve (a step costs the moving flows alone)."""
        tx[:] += _link_sums(routes.problem, sent, len(tx))
        if run.ack_ratio:
            tx[:] += _link_sums(routes.acks, sent, len(tx))
        sent[:] = 0.0

    progress = np.zeros(n)  # bytes per ps that count towards completion
    send = np.zeros(n)  # bytes per ps sent
    # Between two solves rates are constant, so a step touches no flow but the ones it
    # finishes: ``remaining`` and ``sent`` are exact at ``t_base`` for the moving flows, and
    # the moving flows are kept in the order they become due (their bytes run out, within
    # DONE_RTOL), so the flows a step finishes are the next ones of that order.
    t_base = 0.0
    queue = _DueOrder(np.zeros(0, dtype=np.int64), np.zeros(0), np.zeros(0))  # the moving flows
    head = 0  # queue.flow[:head] have finished
    max_slack = 0.0  # the largest run-out time less due time

    def catch_up() -> None:
        """Bring ``remaining`` and ``sent`` of the flows still moving to ``now``."""
        nonlocal t_base
        live = queue.flow[head:]
        dt = now - t_base
        if dt > 0 and len(live):
            remaining[live] -= progress[live] * dt
            sent[live] += send[live] * dt
        t_base = now

    now = 0.0
    last_solve = -np.inf
    dirty = True
    solves = reused = steps = ack_fallbacks = 0
    memo: dict[tuple[int, bytes], np.ndarray] = {}  # rates of the solvable rows, by state
    cap_version = 0
    wall0 = time.perf_counter()
    stop = "done"
    p = routes.problem
    kernel = solver_named(run.solver)
    warm = WarmSolver(kernel)
    # Warm re-solves pay where a solve costs the numpy rounds' call overhead: a 1024-host
    # spray_rr permutation 1.5-1.8 -> 0.6 s, ECMP with ACKs 4.8 -> 2.9 s. The compiled kernel
    # solves a few hundred flows faster than the warm start's bookkeeping (MoE dispatches 1.6x
    # slower with it), so it solves every time.
    use_warm = run.warm and run.solver == "numpy"

    while True:
        # events due now are taken in first: a solve before them would be wasted, and with a
        # quantum it would hold back what they change by a whole quantum
        due_now = (arrivals and arrivals[0][0] <= now) or (cap_events and cap_events[0][0] <= now)
        if dirty and not due_now and now >= last_solve + run.quantum_ps:
            catch_up()
            rows = np.flatnonzero(active & (routes.goodput > 0) & routes.reachable)
            key = (cap_version, rows.tobytes())
            rates = memo.get(key)
            if rates is None:
                solve = warm.solver_for(rows) if use_warm else kernel
                if run.ack_ratio:
                    # Sprayed flows' rows are read in place in the table (the compiled loop, its
                    # starting load and the certificate); others are copied out first: their
                    # loop transposes before every solve, and scattered rows cost it more than
                    # one copy (an MoE layer of 113,000 messages: 0.45 s against 0.39 s).
                    table, ack_table, in_rows = (
                        (p, routes.acks, rows)
                        if routes.sprayed
                        else (_restrict(p, rows), _restrict(routes.acks, rows), None)
                    )
                    # from the ACKs the flows still sending put on the links at their last
                    # rates (finished flows send none): one solve fewer than from the last load
                    ack_start = _link_sums(ack_table, send[rows], p.n_links, in_rows)
                    solved = solve_with_acks(solve, table, ack_table, routes.cap, ack_start, kernel, in_rows)
                    rates, solved_on, solved_cap = solved.rates, solved.problem, solved.capacity
                    solved_rows = solved.rows
                    ack_fallbacks += solved.fell_back
                else:
                    sub = _restrict(p, rows)
                    rates, solved_on, solved_cap, solved_rows = solve(sub, routes.cap), sub, routes.cap, None
                if run.certify:
                    certify(solved_on, solved_cap, rates, rows=solved_rows)
                if len(memo) < 4096:
                    memo[key] = rates
                solves += 1
            else:
                reused += 1
            send = np.zeros(n)
            send[rows] = rates
            progress = send * routes.goodput
            moving = rows[progress[rows] > 0]
            run_out = now + remaining[moving] / progress[moving]
            due_at = run_out - (volume[moving] * DONE_RTOL + 1e-9) / progress[moving]
            queue, head = _DueOrder(moving, due_at, run_out), 0
            max_slack = float((run_out - due_at).max(initial=0.0))
            last_solve = now
            dirty = False
        # the next thing that happens: the earliest exact run-out among the flows due first
        t_next = np.inf
        if head < len(queue.flow):
            if head >= queue.n_sorted:
                queue.cover_index(head)
            limit = queue.due[head] + max_slack
            if limit > queue.threshold:  # (the usual step asks no more of the queue)
                queue.cover_value(limit)
            window = _right_of(queue.due, head, limit, queue.n_sorted)
            proj = queue.run_out
            t_next = float(proj[head]) if window == head + 1 else float(np.minimum.reduce(proj[head:window]))
        if arrivals:
            t_next = min(t_next, arrivals[0][0])
        if cap_events:
            t_next = min(t_next, cap_events[0][0])
        if dirty and n_active:  # nothing left to solve for: no solve to wait for either
            t_next = min(t_next, max(now, last_solve + run.quantum_ps))
        if not math.isfinite(t_next):
            stop = "done" if not n_active and not arrivals else "idle"
            break
        if t_next > time_limit_ps:
            t_next = float(time_limit_ps)
            stop = "time_limit"
        if max_events and steps >= max_events:  # run.max_events, as the packet engine's budget
            stop = "event_budget"
            break
        now = t_next
        steps += 1
        if stop == "time_limit":
            break
        if max_wall_s and time.perf_counter() - wall0 > max_wall_s:
            stop = "wall_budget"
            break
        # completions (exact: the flow whose bytes ran out, and any within rounding)
        if now > queue.threshold:
            queue.cover_value(now)
        end = _right_of(queue.due, head, now, queue.n_sorted)
        if end > head:
            dt = now - t_base
            if end == head + 1:  # one flow, the usual step: scalars, not index arrays
                i = int(queue.flow[head])
                sent[i] += send[i] * dt
                remaining[i] = progress[i] = send[i] = 0.0
                active[i] = False
                done: Any = (i,)
            else:
                done = queue.flow[head:end]
                sent[done] += send[done] * dt
                remaining[done] = progress[done] = send[done] = 0.0
                active[done] = False
            head = end
            n_active -= len(done)
            for i in done:
                finish[i] = now + lat[i]
                for c in children.get(int(i), ()):
                    waiting[c] -= 1
                    if waiting[c] == 0:
                        heapq.heappush(arrivals, (finish[i] + flows[c].start_ps, c))
            dirty = True
        while arrivals and arrivals[0][0] <= now:
            _, i = heapq.heappop(arrivals)
            start[i] = now
            active[i] = True
            n_active += 1
            dirty = True
        while cap_events and cap_events[0][0] <= now:
            _, _, kind, lids, value = heapq.heappop(cap_events)
            if kind == "degrade":
                for lid in lids:
                    rate_bps[lid] = max(1, int(base_rate[lid] * value))
            elif kind == "down":
                up[lids] = False
            else:  # reroute: routing drops the dead links, every flow is traced again
                ff.table.remove(lids)
                catch_up()
                flush_tx()
                real_tx = _real_tx(routes, tx, rate_bps, up)
                routes = _Routes(run, rate_bps)
                p = routes.problem
                tx = np.zeros(p.n_links)
                tx[: routes.n_real] = real_tx
                memo.clear()
                warm.reset()
            routes.capacity(rate_bps, up)
            cap_version += 1
            dirty = True
    catch_up()
    flush_tx()
    return FluidOutcome(
        start,
        finish,
        ideal,
        bound,
        _real_tx(routes, tx, rate_bps, up),
        rate_bps,
        up,
        int(round(max(now, float(finish.max(initial=0.0))))),
        solves,
        reused,
        steps,
        stop,
        ack_fallbacks,
    )


class _DueOrder:
    """The moving flows in the order they become due (ties in their order at the solve),
    sorted lazily: the steps until the next solve read the first few, and a solve replaces
    them all, so a full sort at every solve mostly ordered flows the next solve reorders (an
    MoE layer of 113,000 messages: 0.9 s of 5). ``flow[:n_sorted]``, with their ``due`` and
    ``run_out`` times, are in that order and hold every flow due by ``threshold``; the rest
    are due later and keep their order at the solve."""

    # flows sorted at first (all of them, at once, when there are no more: the chunks'
    # bookkeeping costs more than sorting a few thousand); each further chunk is twice as large
    FIRST_CHUNK = 4096

    def __init__(self, flow: np.ndarray, due: np.ndarray, run_out: np.ndarray) -> None:
        if len(flow) <= self.FIRST_CHUNK:
            order = np.argsort(due, kind="stable")
            flow, due, run_out = flow[order], due[order], run_out[order]
        self.flow, self.due, self.run_out = flow, due, run_out
        self.n_sorted = len(flow) if len(flow) <= self.FIRST_CHUNK else 0
        self.threshold = math.inf if self.n_sorted == len(flow) else -math.inf
        self._chunk = self.FIRST_CHUNK

    def cover_index(self, index: int) -> None:
        """Sort on until flow ``index`` of the order is known."""
        while self.n_sorted <= index < len(self.flow):
            self._extend()

    def cover_value(self, value: float) -> None:
        """Sort on until the sorted part holds every flow due by ``value`` (a search in it is
        then a search of the whole order)."""
        while self.threshold < value:
            self._extend()

    def _extend(self) -> None:
        # the next chunk: every later flow due by the chunk's largest due time (ties included,
        # so the sorted part stays the prefix of the full stable order), sorted stably
        s = self.n_sorted
        rest = self.due[s:]
        k = min(self._chunk, len(rest))
        self._chunk *= 2
        limit = float(np.partition(rest, k - 1)[k - 1])
        take = rest <= limit
        order = np.argsort(rest[take], kind="stable")
        for a in (self.flow, self.due, self.run_out):
            tail = a[s:]
            a[s:] = np.concatenate([tail[take][order], tail[~take]])
        self.n_sorted = s + int(np.count_nonzero(take))
        self.threshold = limit if self.n_sorted < len(self.flow) else math.inf


def _right_of(a: np.ndarray, start: int, value: float, stop: int) -> int:
    """``a[:stop].searchsorted(value, side="right")`` for a sorted ``a[:stop]`` whose first
    ``start`` elements are at most ``value``, with the usual answers (``start``, ``start + 1``:
    a step finishes one flow at most) read off the array instead of searched: the call costs
    more than the step (an MoE layer takes 190,000 steps)."""
    if start >= stop or a[start] > value:
        return start
    if start + 1 == stop or a[start + 1] > value:
        return start + 1
    return int(a[:stop].searchsorted(value, side="right"))


def _restrict(p: Problem, rows: np.ndarray) -> Problem:
    """The problem of flows ``rows`` (``Problem.restrict``, compiled)."""
    return Problem(*restrict(p.ptr, p.link, p.coef, p.weight, rows), p.n_links)


def _link_sums(p: Problem, value: np.ndarray, n_links: int, rows: np.ndarray | None = None) -> np.ndarray:
    """Per link, ``p``'s coefficients times its rows' ``value`` (one per row; ``rows``: of
    those rows alone), summed as ``np.bincount(p.link, weights=p.coef * value[p.entry_flow])``
    sums them (fluid/_sparse.pyx)."""
    return link_sums(p.ptr, p.link, p.coef, value, n_links, False, rows)


def _event_links(ff: FluidFabric, a: str, b: str, parallel: int | None, direction: str = "both") -> list[int]:
    """Directed links of a link event, both directions (or ``forward``: from ``a`` to ``b``
    only), as ``Network.ports_between``."""
    ia, ib = ff.node_index[a], ff.node_index[b]
    forward = [lid for lid in range(ff.n_links) if ff.link_src[lid] == ia and ff.link_dst[lid] == ib]
    backward = [lid for lid in range(ff.n_links) if ff.link_src[lid] == ib and ff.link_dst[lid] == ia]
    if direction == "forward":
        backward = []
    if parallel is None:
        return forward + backward
    if not 0 <= parallel < len(forward):
        from spraylab.model.scenario import ScenarioError

        raise ScenarioError(
            [
                f"topology.events.parallel = {parallel}: index 0..{len(forward) - 1} ({a!r} and {b!r} have {len(forward)} parallel link(s))"
            ]
        )
    return [forward[parallel], *backward[parallel : parallel + 1]]


def _real_tx(routes: _Routes, tx: np.ndarray, rate_bps: np.ndarray, up: np.ndarray) -> np.ndarray:
    """Bytes per real link; a pooled constraint's bytes go to its live members in proportion
    to their capacity (the ideal adaptive split fills them evenly)."""
    real = routes.n_real
    out = tx[:real].copy()
    for j, stage in enumerate(routes.pools):
        members = [lid for lid in stage if up[lid]] or list(stage)
        caps = rate_bps[members]
        out[members] += tx[real + j] * caps / caps.sum()
    return out
