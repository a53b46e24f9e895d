"""htsim's connection matrices (``.cm``) and fat-tree descriptions (``.topo``).

How spraylab reads them (docs/formats.md has the full table, and what is refused and why):

Connection matrix::

    Nodes 16
    Connections 3
    Triggers 1
    0->5 id 1 start 0 size 2000000 send_done_trigger 1
    1->6 id 2 start 10 size 2000000 send_done_trigger 1
    2->7 id 3 trigger 1 size 1000000
    trigger id 1 barrier 2

``start`` is in microseconds (decimals allowed), ``size`` in bytes. ``id`` is optional, as
in htsim: a connection without one keeps the flow id htsim's UEC driver gives it
(:func:`htsim_dynamic_id`); ids in the file must be 1..10^9-1, as htsim requires. A connection with
``trigger T`` starts when trigger T fires instead of at a time. ``send_done_trigger T`` and
``recv_done_trigger T`` make a connection's completion activate trigger T. A ``barrier N``
trigger fires after N activations; a ``oneshot`` trigger at the first. spraylab's flows wait
for *all* the flows they depend on, so a barrier must count exactly its activators and a
oneshot must have one; ``multishot`` (one start per activation) has no spraylab equivalent.
Each of these is refused with an error naming the line rather than approximated.

Fat-tree description: ``Nodes``, ``Tiers`` (2 or 3), ``Podsize`` (hosts per pod, 3 tiers),
then per ``Tier t`` (0 = ToR, 1 = aggregation, 2 = core): ``Downlink_speed_Gbps``,
``Uplink_speed_Gbps``, ``Radix_Down``, ``Radix_Up``, ``Oversubscribed``, ``Bundle``,
``Downlink_Latency_ns``, ``Uplink_Latency_ns``, ``Switch_Latency_ns``, ``Queue_Down``,
``Queue_Up``. Host numbering is htsim's: hosts 0..Radix_Down-1 under ToR 0, and so on."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from decimal import Decimal, InvalidOperation

from spraylab.formats.rows import FlowRow, FormatError, check_rows, field_error, parse_int
from spraylab.topology.fabric import Fabric
from spraylab.units import PS_PER_NS, PS_PER_US

_CONNECTION = re.compile(r"(\d+)\s*->\s*(\d+)$")
TRIGGER_KINDS = ("oneshot", "barrier", "multishot")
CONNECTION_KEYS = ("id", "start", "size", "trigger", "send_done_trigger", "recv_done_trigger")
# htsim hands out flow ids from 10^9 (FLOW_ID_DYNAMIC_BASE) and refuses ids from the file at
# or above it, and id 0 (its "no id").
DYNAMIC_ID_BASE = 10**9


def htsim_dynamic_id(index: int) -> int:
    """The flow id htsim's UEC driver (``main_uec``, without ``-conn_reuse``) gives the
    ``index``-th connection (0-based, file order) when the file has no ``id`` for it: every
    PacketFlow takes the next id from 10^9 when it is made, the static default flow first,
    then a sender and a sink per connection, and a connection without ``id`` keeps its
    sender's."""
    return DYNAMIC_ID_BASE + 1 + 2 * index


@dataclass
class ConnectionMatrix:
    nodes: int
    rows: list[FlowRow]
    # Completion signal each flow's dependencies were declared with ("send_done"/"recv_done"),
    # so an importer can say what the mapping onto spraylab's "received" means.
    signals: set[str] = field(default_factory=set)


def _lines(text: str) -> list[tuple[int, list[str]]]:
    out = []
    for number, line in enumerate(text.splitlines(), start=1):
        line = line.split("#", 1)[0].strip()
        if line:
            out.append((number, line.split()))
    return out


def _start_ps(where: str, value: str) -> int:
    try:
        us = Decimal(value)
        if not us.is_finite() or us < 0:
            raise InvalidOperation
    except InvalidOperation:
        raise field_error(where, "start", value, "must be a time >= 0 in microseconds") from None
    return int(us * PS_PER_US)


def parse_cm(text: str, name: str) -> ConnectionMatrix:
    """The flows of an htsim connection matrix; dependencies through triggers become ``after``."""
    header: dict[str, tuple[int, int]] = {}
    conns: list[tuple[str, dict[str, str], int, int]] = []
    triggers: dict[int, tuple[str, int | None, str]] = {}
    for number, tokens in _lines(text):
        where = f"{name} line {number}"
        head = tokens[0]
        if head in ("Nodes", "Connections", "Triggers"):
            if len(tokens) != 2:
                raise FormatError(f"{where}: {head} takes one number, e.g. '{head} 16'")
            if head in header:
                raise FormatError(f"{where}: {head} is given twice (first on line {header[head][1]})")
            header[head] = (parse_int(where, head, tokens[1]), number)
        elif head == "trigger":
            if len(tokens) < 4 or tokens[1] != "id":
                raise FormatError(f"{where}: a trigger line reads 'trigger id N oneshot|barrier COUNT'")
            tid = parse_int(where, "trigger id", tokens[2])
            kind = tokens[3]
            if kind not in TRIGGER_KINDS:
                raise field_error(where, "trigger kind", kind, f"allowed: {', '.join(TRIGGER_KINDS)}")
            count = None
            if kind == "barrier":
                if len(tokens) != 5:
                    raise FormatError(f"{where}: a barrier trigger reads 'trigger id N barrier COUNT'")
                count = parse_int(where, "barrier count", tokens[4], minimum=1)
            elif len(tokens) != 4:
                raise FormatError(f"{where}: unexpected {tokens[4]!r} after 'trigger id {tid} {kind}'")
            if tid in triggers:
                raise field_error(where, "trigger id", tid, f"already defined on {triggers[tid][2]}")
            triggers[tid] = (kind, count, where)
        elif _CONNECTION.match(head):
            pairs = tokens[1:]
            if len(pairs) % 2:
                raise FormatError(f"{where}: key {pairs[-1]!r} has no value; fields come as 'key value'")
            fields: dict[str, str] = {}
            for key, value in zip(pairs[::2], pairs[1::2]):
                if key not in CONNECTION_KEYS:
                    raise field_error(
                        where,
                        key,
                        value,
                        f"not a connection field spraylab reads; allowed: {', '.join(CONNECTION_KEYS)}",
                    )
                if key in fields:
                    raise FormatError(f"{where}: {key} is given twice")
                fields[key] = value
            m = _CONNECTION.match(head)
            assert m is not None
            conns.append((where, fields, int(m.group(1)), int(m.group(2))))
        else:
            raise FormatError(
                f"{where}: {head!r} is not a connection matrix line; expected Nodes, Connections, Triggers, "
                "'SRC->DST id ...' or 'trigger id ...'"
            )
    for key in ("Nodes", "Connections"):
        if key not in header:
            raise FormatError(f"{name}: no '{key} N' line")
    nodes = header["Nodes"][0]
    if header["Connections"][0] != len(conns):
        raise FormatError(
            f"{name} line {header['Connections'][1]}: Connections = {header['Connections'][0]}, but the file "
            f"has {len(conns)} connection lines"
        )
    declared = header.get("Triggers", (0, 0))[0]
    if declared != len(triggers):
        raise FormatError(f"{name}: Triggers = {declared}, but the file defines {len(triggers)} triggers")

    activators: dict[int, list[int]] = {tid: [] for tid in triggers}
    signals: set[str] = set()
    ids: list[int] = []
    for index, (where, fields, _src, _dst) in enumerate(conns):
        if "size" not in fields:
            raise FormatError(f"{where}: no size; every connection needs 'size BYTES'")
        if "id" in fields:
            cid = parse_int(where, "id", fields["id"])
            if not 0 < cid < DYNAMIC_ID_BASE:
                raise field_error(
                    where,
                    "id",
                    cid,
                    f"htsim takes flow ids 1..{DYNAMIC_ID_BASE - 1} (it numbers its own from 10^9)",
                )
        elif "trigger" in fields:
            # htsim asserts a triggered connection has an id (its trigger lists targets by id)
            raise FormatError(f"{where}: no id; htsim needs 'id N' on a connection started by a trigger")
        else:
            cid = htsim_dynamic_id(index)
        ids.append(cid)
        for key in ("send_done_trigger", "recv_done_trigger"):
            if key in fields:
                tid = parse_int(where, key, fields[key])
                if tid not in triggers:
                    raise field_error(where, key, tid, "no trigger line defines this id")
                activators[tid].append(cid)
                signals.add(key.removesuffix("_trigger"))
    rows = []
    for (where, fields, src, dst), cid in zip(conns, ids):
        after: tuple[int, ...] = ()
        start_ps = 0
        if "trigger" in fields:
            if "start" in fields:
                raise FormatError(
                    f"{where}: both start and trigger; a triggered connection starts when its trigger fires"
                )
            tid = parse_int(where, "trigger", fields["trigger"])
            if tid not in triggers:
                raise field_error(where, "trigger", tid, "no trigger line defines this id")
            after = _trigger_deps(tid, triggers[tid], activators[tid])
        elif "start" in fields:
            start_ps = _start_ps(where, fields["start"])
        size = parse_int(where, "size", fields["size"], minimum=1)
        rows.append(FlowRow(cid, src, dst, size, start_ps, after, where))
    check_rows(rows, nodes, name)
    return ConnectionMatrix(nodes, rows, signals)


def _trigger_deps(tid: int, trigger: tuple[str, int | None, str], sources: list[int]) -> tuple[int, ...]:
    kind, count, where = trigger
    if not sources:
        raise FormatError(
            f"{where}: trigger {tid} is never activated (no send_done_trigger/recv_done_trigger {tid})"
        )
    if kind == "multishot":
        raise FormatError(
            f"{where}: trigger {tid} is multishot (one start per activation); spraylab flows start after all "
            "of their dependencies, so it cannot be read exactly; use a barrier or oneshot trigger per flow"
        )
    if kind == "oneshot" and len(sources) > 1:
        raise FormatError(
            f"{where}: oneshot trigger {tid} has {len(sources)} activators (ids {', '.join(map(str, sources))}) and "
            "fires at the first; spraylab flows wait for all of their dependencies; use 'barrier "
            f"{len(sources)}' if the flows should wait for all"
        )
    if kind == "barrier" and count != len(sources):
        raise FormatError(
            f"{where}: barrier {tid} fires after {count} activations but has {len(sources)} activators; spraylab "
            f"can only wait for all of them (barrier {len(sources)})"
        )
    return tuple(sources)


# --- fat-tree description -------------------------------------------------------------------

GLOBAL_KEYS = ("Nodes", "Tiers", "Podsize")
TIER_KEYS = (
    "Downlink_speed_Gbps",
    "Uplink_speed_Gbps",
    "Radix_Down",
    "Radix_Up",
    "Oversubscribed",
    "Bundle",
    "Downlink_Latency_ns",
    "Uplink_Latency_ns",
    "Switch_Latency_ns",
    "Queue_Down",
    "Queue_Up",
)
# Read but not modelled: spraylab switches share one buffer ([switch] buffer), not a queue per port.
QUEUE_KEYS = ("Queue_Down", "Queue_Up")
TIER_NAMES = ("tor", "agg", "core")


@dataclass
class FatTreeDescription:
    nodes: int
    tiers: int
    podsize: int | None
    tier: list[dict[str, tuple[Decimal, str]]]  # per tier: key -> (value, where)
    ignored: list[str] = field(default_factory=list)


def parse_topo(text: str, name: str, ignore: tuple[str, ...] = ()) -> FatTreeDescription:
    """Read an htsim fat-tree description; keys in ``ignore`` are read and dropped (the queue
    sizes, which spraylab does not model per port, must be ignored explicitly)."""
    top: dict[str, tuple[int, str]] = {}
    tiers: list[dict[str, tuple[Decimal, str]]] = []
    current: dict[str, tuple[Decimal, str]] | None = None
    ignored: list[str] = []
    for number, tokens in _lines(text):
        where = f"{name} line {number}"
        key = tokens[0]
        if len(tokens) != 2:
            raise FormatError(f"{where}: {key} takes one value, e.g. '{key} 1'")
        value = tokens[1]
        if key == "Tier":
            t = parse_int(where, "Tier", value)
            if t != len(tiers):
                raise field_error(where, "Tier", t, f"tiers come in order; expected Tier {len(tiers)}")
            current = {}
            tiers.append(current)
        elif key in GLOBAL_KEYS:
            if current is not None:
                raise FormatError(f"{where}: {key} belongs before the first 'Tier' line")
            top[key] = (parse_int(where, key, value, minimum=1), where)
        elif key in TIER_KEYS:
            if current is None:
                raise FormatError(f"{where}: {key} is a per-tier key; put it after a 'Tier N' line")
            if key in current:
                raise FormatError(f"{where}: {key} is given twice in tier {len(tiers) - 1}")
            try:
                number_value = Decimal(value)
                if not number_value.is_finite() or number_value < 0:
                    raise InvalidOperation
            except InvalidOperation:
                raise field_error(where, key, value, "must be a number >= 0") from None
            if key in QUEUE_KEYS:
                if key not in ignore:
                    raise field_error(
                        where, key, value,
                        "per-port queue sizes are not modelled (spraylab switches share one buffer, "
                        f"[switch] buffer); add {key!r} to topology.ignore (spraylab import: --ignore) to drop it",
                    )  # fmt: skip
                ignored.append(key)
                continue
            current[key] = (number_value, where)
        else:
            raise FormatError(
                f"{where}: {key!r} is not an htsim fat-tree key spraylab reads; allowed: "
                f"{', '.join(GLOBAL_KEYS + ('Tier',) + TIER_KEYS)}"
            )
    for key in ("Nodes", "Tiers"):
        if key not in top:
            raise FormatError(f"{name}: no '{key} N' line")
    n_tiers = top["Tiers"][0]
    if n_tiers not in (2, 3):
        raise field_error(top["Tiers"][1], "Tiers", n_tiers, "spraylab builds 2- or 3-tier fat-trees")
    if len(tiers) != n_tiers:
        raise FormatError(f"{name}: Tiers = {n_tiers}, but the file describes {len(tiers)} 'Tier' sections")
    podsize = top.get("Podsize", (None, ""))[0]
    if n_tiers == 3 and podsize is None:
        raise FormatError(f"{name}: a 3-tier fat-tree needs 'Podsize N' (hosts per pod)")
    if n_tiers == 2 and podsize is not None and podsize != top["Nodes"][0]:
        raise field_error(top["Podsize"][1], "Podsize", podsize, "a 2-tier fat-tree is one pod of all Nodes")
    return FatTreeDescription(top["Nodes"][0], n_tiers, podsize, tiers, sorted(set(ignored)))


def _get(desc: FatTreeDescription, t: int, key: str) -> tuple[Decimal, str] | None:
    return desc.tier[t].get(key)


def _count(desc: FatTreeDescription, t: int, key: str) -> int | None:
    got = _get(desc, t, key)
    if got is None:
        return None
    value, where = got
    if value != int(value) or value < 1:
        raise field_error(where, key, str(value), "must be a whole number >= 1")
    return int(value)


def _link_value(
    desc: FatTreeDescription, t: int, up_key: str, down_key: str, what: str
) -> tuple[Decimal, str]:
    """A link between tier t and t+1 (or hosts and tier 0 when t = -1): tier t's uplink value
    and tier t+1's downlink value describe the same link and must agree."""
    up = _get(desc, t, up_key) if t >= 0 else None
    down = _get(desc, t + 1, down_key)
    if up and down and up[0] != down[0]:
        raise FormatError(
            f"{up[1]}: {up_key} = {up[0]} but {down[1]} gives {down_key} = {down[0]} for the same links; "
            f"spraylab links have one {what} both ways"
        )
    got = up or down
    if got is None:
        below = "hosts" if t < 0 else f"tier {t}"
        raise FormatError(
            f"{desc_name(desc)}: no {what} for the links between {below} and tier {t + 1} ({down_key} of tier {t + 1})"
        )
    return got


def desc_name(desc: FatTreeDescription) -> str:
    for tier in desc.tier:
        for _value, where in tier.values():
            return where.rsplit(" line ", 1)[0]
    return "topology"


@dataclass(frozen=True)
class FabricPlan:
    """An htsim fat-tree checked and counted but not built: its counts are what the size guard
    (spraylab.runs.budget) needs, so a description of 10^9 hosts is refused before any is built."""

    desc: FatTreeDescription
    rates: list[int]
    delays: list[int]
    hosts_per_tor: int
    tors: int
    pods: int
    tors_per_pod: int
    aggs_per_pod: int
    cores_per_group: int
    b01: int
    b12: int

    @property
    def n_hosts(self) -> int:
        return self.desc.nodes

    @property
    def n_switches(self) -> int:
        return self.tors + self.aggs_per_pod * self.pods + self.aggs_per_pod * self.cores_per_group

    @property
    def n_links(self) -> int:
        up = self.tors * self.aggs_per_pod * self.b01
        top = self.pods * self.aggs_per_pod * self.cores_per_group * self.b12
        return self.desc.nodes + up + top

    def build(self) -> Fabric:
        return _build(self)


def build_fabric(desc: FatTreeDescription) -> Fabric:
    """The fabric of an htsim fat-tree description (switch tiers 1 = ToR, 2 = aggregation,
    3 = core; names tor<i>, agg<i>, core<i>, hosts h<i> numbered as htsim does)."""
    return plan_fabric(desc).build()


def plan_fabric(desc: FatTreeDescription) -> FabricPlan:
    """Every check of :func:`build_fabric`, and the counts, without building anything."""
    for t in range(desc.tiers):
        latency = _get(desc, t, "Switch_Latency_ns")
        if latency is not None and latency[0] != 0:
            raise field_error(
                latency[1], "Switch_Latency_ns", str(latency[0]),
                "spraylab has no separate switch latency; fold it into the link latencies "
                "(Downlink_Latency_ns/Uplink_Latency_ns) or set it to 0",
            )  # fmt: skip
    rates: list[int] = []
    delays: list[int] = []
    for t in range(-1, desc.tiers - 1):  # link layer below tier t + 1
        gbps, where = _link_value(desc, t, "Uplink_speed_Gbps", "Downlink_speed_Gbps", "speed")
        rate_bps = int(gbps * 10**9)
        if rate_bps <= 0:
            raise field_error(where, "speed", str(gbps), "must be > 0 Gb/s")
        rates.append(rate_bps)
        ns, _ = _link_value(desc, t, "Uplink_Latency_ns", "Downlink_Latency_ns", "latency")
        delays.append(int(ns * PS_PER_NS))
    hosts_per_tor = _count(desc, 0, "Radix_Down")
    if hosts_per_tor is None:
        raise FormatError(f"{desc_name(desc)}: tier 0 needs Radix_Down (hosts per ToR)")
    if desc.nodes % hosts_per_tor:
        raise FormatError(
            f"{desc_name(desc)}: Nodes = {desc.nodes} is not a multiple of tier 0's Radix_Down = {hosts_per_tor}"
        )
    podsize = desc.podsize or desc.nodes
    if desc.nodes % podsize or podsize % hosts_per_tor:
        raise FormatError(
            f"{desc_name(desc)}: Podsize = {podsize} must divide Nodes = {desc.nodes} and be a multiple of Radix_Down = {hosts_per_tor}"
        )
    tors = desc.nodes // hosts_per_tor
    pods = desc.nodes // podsize
    tors_per_pod = podsize // hosts_per_tor

    # A tier's Bundle is the number of parallel links on each of its *down* links, as htsim reads
    # it: tier 1's bundles the ToR-aggregation pairs, tier 2's the aggregation-core pairs.
    bundles = [_count(desc, t, "Bundle") or 1 for t in range(desc.tiers)]
    if bundles[0] != 1:
        raise FormatError(
            f"{desc_name(desc)}: tier 0 Bundle = {bundles[0]}: a ToR's links down to hosts are single "
            "(htsim requires 1; the ToR-aggregation bundle is tier 1's Bundle)"
        )
    b01 = bundles[1]
    b12 = bundles[2] if desc.tiers == 3 else 1
    up0 = _radix_up(desc, 0, hosts_per_tor)
    if up0 % b01:
        raise FormatError(
            f"{desc_name(desc)}: tier 0 Radix_Up = {up0} is not a multiple of tier 1's Bundle = {b01}"
        )
    aggs_per_pod = up0 // b01  # every ToR reaches every switch above it in its pod
    _expect_down(desc, 1, tors_per_pod * b01, f"{tors_per_pod} ToRs per pod x Bundle {b01}")
    cores_per_group = 0
    if desc.tiers == 3:
        up1 = _radix_up(desc, 1, tors_per_pod * b01)
        if up1 % b12:
            raise FormatError(
                f"{desc_name(desc)}: tier 1 Radix_Up = {up1} is not a multiple of tier 2's Bundle = {b12}"
            )
        # aggregation switch i of every pod reaches core group i, as in a k-ary fat-tree
        cores_per_group = up1 // b12
        _expect_down(desc, 2, pods * b12, f"{pods} pods x Bundle {b12}")
    return FabricPlan(
        desc, rates, delays, hosts_per_tor, tors, pods, tors_per_pod, aggs_per_pod, cores_per_group, b01, b12
    )


def _build(plan: FabricPlan) -> Fabric:
    desc, rates, delays = plan.desc, plan.rates, plan.delays
    hosts_per_tor, tors, pods, tors_per_pod = plan.hosts_per_tor, plan.tors, plan.pods, plan.tors_per_pod
    aggs_per_pod, cores_per_group, b01, b12 = plan.aggs_per_pod, plan.cores_per_group, plan.b01, plan.b12
    fabric = Fabric(kind="imported", host_rate_bps=rates[0])
    for a in range(aggs_per_pod * pods):
        fabric.add_switch(f"agg{a}", 2)
    if desc.tiers == 3:
        for c in range(aggs_per_pod * cores_per_group):
            fabric.add_switch(f"core{c}", 3)
    for tor in range(tors):
        name = f"tor{tor}"
        fabric.add_switch(name, 1)
        for h in range(hosts_per_tor):
            host = fabric.add_host(f"h{tor * hosts_per_tor + h}", name)
            fabric.add_link(fabric.hosts[host], name, rates[0], delays[0])
        pod = tor // tors_per_pod
        for a in range(aggs_per_pod):
            for _ in range(b01):
                fabric.add_link(name, f"agg{pod * aggs_per_pod + a}", rates[1], delays[1])
    if desc.tiers == 3:
        for pod in range(pods):
            for a in range(aggs_per_pod):
                for c in range(cores_per_group):
                    for _ in range(b12):
                        fabric.add_link(
                            f"agg{pod * aggs_per_pod + a}",
                            f"core{a * cores_per_group + c}",
                            rates[2],
                            delays[2],
                        )
    fabric.info = {
        "format": "htsim",
        "tiers": desc.tiers,
        "hosts_per_tor": hosts_per_tor,
        "tors": tors,
        "pods": pods,
        "aggs": aggs_per_pod * pods,
        "cores": aggs_per_pod * cores_per_group,
        "ignored": desc.ignored,
    }
    return fabric


def _radix_up(desc: FatTreeDescription, t: int, down_ports: int) -> int:
    """Tier t's uplink count: Radix_Up, or Radix_Down / Oversubscribed; both must agree."""
    up = _count(desc, t, "Radix_Up")
    over = _get(desc, t, "Oversubscribed")
    if over is not None and over[0] <= 0:
        raise field_error(over[1], "Oversubscribed", str(over[0]), "must be > 0 (1 = non-blocking)")
    if up is None:
        if over is None:
            raise FormatError(f"{desc_name(desc)}: tier {t} needs Radix_Up or Oversubscribed")
        derived = Decimal(down_ports) / over[0]
        if derived != int(derived) or derived < 1:
            raise field_error(
                over[1],
                "Oversubscribed",
                str(over[0]),
                f"Radix_Down {down_ports} / it is not a whole number of uplinks",
            )
        return int(derived)
    if over is not None and Decimal(down_ports) / up != over[0]:
        raise field_error(
            over[1], "Oversubscribed", str(over[0]),
            f"contradicts Radix_Down {down_ports} / Radix_Up {up} = {Decimal(down_ports) / up:g} (ports down per port up)",
        )  # fmt: skip
    return up


def _expect_down(desc: FatTreeDescription, t: int, derived: int, why: str) -> None:
    got = _count(desc, t, "Radix_Down")
    if got is not None and got != derived:
        where = desc.tier[t]["Radix_Down"][1]
        raise field_error(where, "Radix_Down", got, f"the tiers below give {derived} ({why})")
