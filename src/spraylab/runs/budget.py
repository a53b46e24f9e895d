"""Size guard: what a scenario will cost, estimated from its description before anything is built.

A scenario that validates can still be far beyond what the machine holds (10^9 hosts, a 1000 TB
flow, 1000 s of Poisson arrivals); building it would grow by gigabytes with no output. ``check``
estimates hosts, switches, ports, flows, packets, events and memory in O(number of sections), for
every engine (the flow-level ones hold no packets: memory and flows only), and refuses with one line naming the estimate and the limit unless ``run.allow_large = true`` (CLI:
``--allow-large``). Sweeps are checked the same way per point, and their point count before the
product of the axes is expanded (:func:`check_sweep_points`).

The estimates are upper bounds of the right order, not predictions: they decide "can this run at
all", so they err on the large side only by small factors.
"""

from __future__ import annotations

import contextlib
import math
import os
from dataclasses import dataclass

from spraylab.model.scenario import Scenario, ScenarioError
from spraylab.transport.recovery.base import RECOVERIES
from spraylab.units import format_bytes_rounded

OVERRIDE = "set run.allow_large = true (CLI: --allow-large) to run it anyway"

# Caps independent of memory: beyond them a run takes days at the engine's ~3-8 x 10^5 events/s
# (README, Performance), which is never what a scenario meant by accident.
MAX_FLOWS = 10_000_000
MAX_PACKETS = 1_000_000_000
MAX_SWEEP_POINTS = 100_000
MEMORY_FRACTION = 0.5  # of what the process may use: the rest for the interpreter, pandas, the OS

# Bytes per object, measured once with tracemalloc (peak of build() or run() on small leaf-spines,
# differences between two sizes so fixed costs cancel; Python 3.11):
#   per flow: run() of 2,000 vs 20,000 one-packet random_pairs flows, 7.3 -> 66.1 MB: 3.3 KB
#     (queue pair, receiver, DCQCN state, FlowSpec, start event, result row);
#   per port: build() of 8 leaves x 8 vs 64 spines, 256 -> 1,152 ports, 0.53 -> 1.34 MB: 0.9 KB;
#   per host: 128 vs 1,024 hosts, after the ports and the routing tables below: about 2 KB;
#   routing: one 8-byte list slot per (host or switch, destination host) pair
#     (Routing.compute: a table per switch and a route list per host, each n_hosts long);
#   per packet of a flow's size (Recovery.state_bytes_per_packet): go-back-N and SR receivers
#     1 B (a bytearray of PSNs), ideal recovery 25 B (two int lists on the sender, one on the
#     receiver): 16 x 4 MB vs 40 MB permutations, 0.16 -> 0.30 MB (gbn) and 0.54 -> 4.05 MB
#     (ideal) for 140,625 more packets; since then the receiver's list is 32-bit and the
#     sender's are made at a flow's first loss or resend: 21 B counts every flow as having one;
#   per queued packet: a 20-slot Packet object plus its event tuple, about 250 B.
FLOW_BYTES = 3_300
PORT_BYTES = 900
HOST_BYTES = 2_000
ROUTE_SLOT_BYTES = 8
QUEUED_PACKET_BYTES = 250
# Flow-level engines (run.engine = "fluid" or "l0") keep no packets, queues or events: per message
# its FlowSpec and a few array slots. Measured as above: fluid (numpy solver) and l0 runs of
# 2,000 vs 20,000 one-packet random_pairs messages, 3.1 -> 29.9 MB and 1.7 -> 16.1 MB: 1.5 KB
# and 0.8 KB per message; both charged 1.5 KB.
FLOW_LEVEL_FLOW_BYTES = 1_500
# [monitor] keeps one row per monitored port and switch per sample (PORT_COLUMNS: 16 values of
# 8 bytes, plus the array growth slack): 200 B per row, every port and switch monitored.
MONITOR_ROW_BYTES = 200
# Each topology and workload kind estimates its own size (estimate_size); the rail workloads' extra
# memory (byte matrices, token routing) is measured in spraylab.workload.rail_workload and kinds.moe.
# Measured events per data packet: 9.4 on a leaf-spine (4 hops each way), 13.1 on a fat-tree
# (6 hops): one event per hop of the packet and of its ACK, plus about 1.5 (starts, timers).
EVENTS_PER_PACKET_EXTRA = 1.5


@dataclass(frozen=True)
class Estimate:
    hosts: int
    switches: int
    ports: int
    flows: int
    packets: int
    events: int
    memory_bytes: int

    def text(self) -> str:
        return (
            f"{_count(self.hosts)} hosts, {_count(self.switches)} switches, {_count(self.ports)} ports, "
            f"{_count(self.flows)} flows, {_count(self.packets)} packets, {_count(self.events)} events, "
            f"{format_bytes_rounded(self.memory_bytes)} of memory"
        )


def _count(n: int) -> str:
    return f"{n:,}" if n < 10**12 else f"{n:.2e}"


def estimate(scenario: Scenario) -> Estimate:
    """Hosts, switches, ports, flows, packets, events and memory of a run of ``scenario``."""
    fabric = scenario.topology.estimate_size()
    hosts, switches, hops = fabric.hosts, fabric.switches, fabric.hops
    t = scenario.transport
    ports = 2 * fabric.links
    flows = total_bytes = extra = 0
    for w in scenario.workload:
        size = w.estimate_size(hosts, fabric.host_rate_bps)
        flows, total_bytes, extra = (
            flows + size.flows,
            total_bytes + size.total_bytes,
            extra + size.memory_bytes,
        )
    packets = flows + total_bytes // t.mtu  # >= the sum of ceil(size / MTU) over the flows
    routing = (hosts + switches) * hosts * ROUTE_SLOT_BYTES
    if scenario.run.engine != "packet":
        # no packets, events or queues; l0_rail builds no messages (its byte matrices are extra)
        per_flow = 0 if scenario.run.engine == "l0_rail" else FLOW_LEVEL_FLOW_BYTES
        memory = hosts * HOST_BYTES + ports * PORT_BYTES + routing + flows * per_flow + extra
        return Estimate(hosts, switches, ports, flows, packets, 0, memory)
    # ack_every = 0 coalesces by bytes or time only: at most one ACK per packet still bounds it.
    acks_per_packet = 1 / t.ack_every if t.ack_every else 1.0
    events = math.ceil(packets * (hops * (1 + acks_per_packet) + EVENTS_PER_PACKET_EXTRA))
    monitor_rows = 0
    if scenario.monitor is not None:  # a sample per interval until the time limit, at most
        samples = -(-scenario.run.time_limit // scenario.monitor.interval)
        events += samples
        monitor_rows = samples * (ports + switches)
    queued = min(packets, switches * (scenario.switch.buffer // t.mtu + 1))  # every buffer full
    memory = (
        hosts * HOST_BYTES
        + ports * PORT_BYTES
        + routing
        + flows * FLOW_BYTES
        + monitor_rows * MONITOR_ROW_BYTES
        + packets * RECOVERIES.get(t.recovery).state_bytes_per_packet
        + queued * QUEUED_PACKET_BYTES
        + extra
    )
    return Estimate(hosts, switches, ports, flows, packets, events, memory)


def memory_available() -> tuple[int, str]:
    """Bytes this process may use, and where that number comes from: the smallest of physical
    memory, the cgroup's memory.max and the address-space rlimit."""
    candidates: list[tuple[int, str]] = []
    with contextlib.suppress(ValueError, OSError, AttributeError):
        candidates.append((os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE"), "this machine's memory"))
    try:
        with open("/sys/fs/cgroup/memory.max") as f:
            text = f.read().strip()
        if text.isdigit():
            candidates.append((int(text), "the cgroup's memory.max"))
    except OSError:
        pass
    try:
        import resource

        soft, _ = resource.getrlimit(resource.RLIMIT_AS)
        if soft != resource.RLIM_INFINITY and soft > 0:
            candidates.append((soft, "the address-space limit (ulimit -v)"))
    except (ImportError, ValueError, OSError):
        pass
    if not candidates:
        return 8 * 10**9, "an assumed 8 GB (memory size unknown)"
    return min(candidates)


def check(scenario: Scenario, allow_large: bool = False) -> Estimate:
    """The estimate of ``scenario``; a one-line :class:`ScenarioError` when it exceeds the
    memory limit or the flow/packet caps, unless ``allow_large`` or ``run.allow_large``."""
    est = estimate(scenario)
    if allow_large or scenario.run.allow_large:
        return est
    packet_engine = scenario.run.engine == "packet"  # flow-level engines hold no packets
    available, source = memory_available()
    limit = int(available * MEMORY_FRACTION)
    if est.memory_bytes > limit:
        problem = (
            f"estimated memory {format_bytes_rounded(est.memory_bytes)} exceeds the limit {format_bytes_rounded(limit)} "
            f"({MEMORY_FRACTION:.0%} of {source}, {format_bytes_rounded(available)})"
        )
    elif scenario.run.engine != "l0_rail" and est.flows > MAX_FLOWS:  # l0_rail builds no messages
        problem = f"estimated {_count(est.flows)} flows exceed the limit of {MAX_FLOWS:,} flows"
    elif packet_engine and est.packets > MAX_PACKETS:
        problem = f"estimated {_count(est.packets)} packets exceed the limit of {MAX_PACKETS:,} packets"
    else:
        return est
    raise ScenarioError([f"scenario too large: {problem}; estimate: {est.text()}; {OVERRIDE}"])


def check_sweep_points(n_points: int, where: str = "", allow_large: bool = False) -> None:
    """Refuse a sweep whose axes multiply to more than MAX_SWEEP_POINTS points, before any of
    them is built (each validated point holds a scenario: tens of KB)."""
    if n_points > MAX_SWEEP_POINTS and not allow_large:
        raise ScenarioError(
            [
                f"{where}[axes]: {_count(n_points)} points (the product of the axis lengths) exceed the "
                f"limit of {MAX_SWEEP_POINTS:,} points per sweep; {OVERRIDE}"
            ]
        )
