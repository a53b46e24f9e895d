"""The HPCC/ns-3 simulator's input files: ``flow.txt`` and ``topology.txt``.

``flow.txt``: the first line is the number of flows, then one flow per line::

    src dst pg dport size start_s

node ids of the two hosts, priority group, destination port, size in bytes, start time in
seconds. spraylab has one data class, so every flow must share one ``pg``; ``dport`` only names
the flow in ns-3 and has no effect here.

``topology.txt``: ``nodes switches links`` on the first line, the switch node ids on the
second, then one link per line::

    a b rate delay error_rate

with rates and delays in ns-3's notation (``100Gbps``, ``0.001ms``, ``1000ns``). Nodes not
listed as switches are hosts; spraylab numbers them 0.. in increasing node id, so
``flow.txt``'s node ids are translated through that map (:func:`host_map`). Each host must
have one link, to a switch; a switch with hosts is a ToR (tier 1), the others take their hop
distance from the nearest ToR plus one as their tier. A nonzero ``error_rate`` is refused
(give the loss as a ``topology.events`` entry with ``action = "loss"``).

Both files are read as ns-3 (HPCC's ``scratch/third.cc``) reads them: the counts on the first
line say how many switch ids, links or flows follow, and whatever comes after those is never
read (HPCC's own files end with a description of the format). spraylab keeps each of them on
its own line, as every HPCC file has them, and reports the first unread line
(``unread_from``) so ``spraylab import`` can say what it skipped."""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation

from spraylab.formats.rows import FlowRow, FormatError, check_rows, field_error, parse_int
from spraylab.topology.fabric import Fabric
from spraylab.units import PS_PER_S, UnitError, parse_rate_bps, parse_time_ps


def _lines(text: str) -> list[tuple[int, list[str]]]:
    return [(n, line.split()) for n, line in enumerate(text.splitlines(), start=1) if line.strip()]


def _ns3_rate(where: str, value: str) -> int:
    # ns-3 DataRate strings: 100Gbps, 25Gb/s, 10Mbps, 1000000bps
    try:
        rate = parse_rate_bps(value)
    except UnitError:
        raise field_error(where, "rate", value, "must be a rate such as 100Gbps") from None
    if rate <= 0:
        raise field_error(where, "rate", value, "must be > 0")
    return rate


def _ns3_time(where: str, value: str) -> int:
    try:
        return parse_time_ps(value)
    except UnitError:
        raise field_error(where, "delay", value, "must be a time such as 1000ns or 0.001ms") from None


@dataclass
class Ns3Topology:
    nodes: int
    switches: list[int]
    links: list[tuple[int, int, int, int, str]]  # a, b, rate_bps, delay_ps, where
    unread_from: int | None = None  # first line after the counted links (ns-3 never reads it)

    @property
    def hosts(self) -> list[int]:
        switches = set(self.switches)
        return [n for n in range(self.nodes) if n not in switches]


def host_map(topo: Ns3Topology) -> dict[int, int]:
    """ns-3 node id -> spraylab host id (hosts in increasing node id)."""
    return {node: i for i, node in enumerate(topo.hosts)}


def parse_topology(text: str, name: str) -> Ns3Topology:
    lines = _lines(text)
    if len(lines) < 2:
        raise FormatError(
            f"{name}: too short; expected 'nodes switches links', the switch ids, then the links"
        )
    n, head = lines[0]
    where = f"{name} line {n}"
    if len(head) != 3:
        raise FormatError(f"{where}: the first line reads 'nodes switches links' (three numbers)")
    nodes = parse_int(where, "nodes", head[0], 1)
    n_switches = parse_int(where, "switches", head[1], 1)
    n_links = parse_int(where, "links", head[2], 1)
    n, ids = lines[1]
    where = f"{name} line {n}"
    if len(ids) != n_switches:
        raise FormatError(f"{where}: {len(ids)} switch ids, the first line says {n_switches}")
    switches = []
    for value in ids:
        sid = parse_int(where, "switch id", value)
        if sid >= nodes:
            raise field_error(where, "switch id", sid, f"must be a node id below {nodes}")
        switches.append(sid)
    if len(set(switches)) != len(switches):
        raise FormatError(f"{where}: a switch id is listed twice")
    links = []
    for n, tokens in lines[2 : 2 + n_links]:
        where = f"{name} line {n}"
        if len(tokens) != 5:
            raise FormatError(f"{where}: a link line reads 'a b rate delay error_rate' (five fields)")
        a, b = parse_int(where, "a", tokens[0]), parse_int(where, "b", tokens[1])
        for column, node in (("a", a), ("b", b)):
            if node >= nodes:
                raise field_error(where, column, node, f"must be a node id below {nodes}")
        if a == b:
            raise field_error(where, "b", b, "equals a; a link joins two nodes")
        try:
            error_rate = Decimal(tokens[4])
        except InvalidOperation:
            raise field_error(where, "error_rate", tokens[4], "must be a number") from None
        if error_rate != 0:
            raise field_error(
                where, "error_rate", tokens[4],
                "per-link random loss is not read from the topology; use 0 here and give it as a "
                "topology.events entry (action = 'loss', loss_rate)",
            )  # fmt: skip
        links.append((a, b, _ns3_rate(where, tokens[2]), _ns3_time(where, tokens[3]), where))
    if len(links) != n_links:
        raise FormatError(f"{name}: the first line says {n_links} links, the file has {len(links)}")
    rest = lines[2 + n_links :]
    return Ns3Topology(nodes, switches, links, rest[0][0] if rest else None)


def build_fabric(topo: Ns3Topology) -> Fabric:
    """The fabric: hosts ``h<i>`` (spraylab ids, see :func:`host_map`), switches ``s<node id>``."""
    switches = set(topo.switches)
    hosts = host_map(topo)
    tor_of: dict[int, tuple[int, str]] = {}
    for a, b, _rate, _delay, where in topo.links:
        if a in hosts and b in hosts:
            raise FormatError(f"{where}: links two hosts ({a} and {b}); hosts attach to switches")
        for host, switch in ((a, b), (b, a)):
            if host in hosts:
                if host in tor_of:
                    raise FormatError(
                        f"{where}: host {host} has a second link (the first is on {tor_of[host][1]}); "
                        "spraylab hosts have one NIC port"
                    )
                tor_of[host] = (switch, where)
    lonely = [h for h in hosts if h not in tor_of]
    if lonely:
        raise FormatError(f"{topo_name(topo)}: node {lonely[0]} is neither a switch nor linked to one")
    host_rates = {rate for a, b, rate, _d, _w in topo.links if a in hosts or b in hosts}
    if len(host_rates) > 1:
        raise FormatError(
            f"{topo_name(topo)}: host links have different rates ({', '.join(str(r) for r in sorted(host_rates))} bps); "
            "spraylab needs one host rate"
        )
    tors = {tor_of[h][0] for h in hosts}
    # tier: ToRs 1, every other switch 1 + its hop distance to the nearest ToR
    adj: dict[int, list[int]] = {s: [] for s in switches}
    for a, b, _r, _d, _w in topo.links:
        if a in switches and b in switches:
            adj[a].append(b)
            adj[b].append(a)
    tier = {t: 1 for t in tors}
    frontier = deque(sorted(tors))
    while frontier:
        node = frontier.popleft()
        for nxt in adj[node]:
            if nxt not in tier:
                tier[nxt] = tier[node] + 1
                frontier.append(nxt)
    unreachable = sorted(s for s in switches if s not in tier)
    if unreachable:
        raise FormatError(
            f"{topo_name(topo)}: switch {unreachable[0]} is not connected to any switch with hosts"
        )
    fabric = Fabric(kind="imported", host_rate_bps=host_rates.pop())
    for s in sorted(switches):
        fabric.add_switch(f"s{s}", tier[s])
    for node in sorted(hosts):
        fabric.add_host(f"h{hosts[node]}", f"s{tor_of[node][0]}")
    for a, b, rate, delay, _w in topo.links:
        name_a = f"h{hosts[a]}" if a in hosts else f"s{a}"
        name_b = f"h{hosts[b]}" if b in hosts else f"s{b}"
        fabric.add_link(name_a, name_b, rate, delay)
    fabric.info = {"format": "ns3", "tiers": max(tier.values()), "switches": len(switches)}
    return fabric


def topo_name(topo: Ns3Topology) -> str:
    return topo.links[0][4].rsplit(" line ", 1)[0] if topo.links else "topology"


def parse_flows(text: str, name: str) -> list[FlowRow]:
    """The flows of a ``flow.txt``; ``src``/``dst`` stay ns-3 node ids (see :func:`host_map`)."""
    return read_flows(text, name).rows


@dataclass
class Ns3Flows:
    rows: list[FlowRow]
    dports: list[int]  # each flow's dport: HPCC's fct.txt prints it and fct_analysis.py selects on it
    unread_from: int | None  # first line after the counted flows (ns-3 never reads it)


def read_flows(text: str, name: str) -> Ns3Flows:
    """:func:`parse_flows` with the dports and the first unread line."""
    lines = _lines(text)
    if not lines:
        raise FormatError(f"{name}: empty; the first line is the number of flows")
    n, head = lines[0]
    if len(head) != 1:
        raise FormatError(f"{name} line {n}: the first line is the number of flows (one number)")
    count = parse_int(f"{name} line {n}", "flows", head[0])
    rows: list[FlowRow] = []
    dports: list[int] = []
    pgs: dict[int, str] = {}
    for n, tokens in lines[1 : 1 + count]:
        where = f"{name} line {n}"
        if len(tokens) != 6:
            raise FormatError(f"{where}: a flow line reads 'src dst pg dport size start_s' (six fields)")
        src, dst = parse_int(where, "src", tokens[0]), parse_int(where, "dst", tokens[1])
        pg = parse_int(where, "pg", tokens[2])
        dports.append(parse_int(where, "dport", tokens[3]))
        size = parse_int(where, "size", tokens[4], 1)
        try:
            start_s = Decimal(tokens[5])
            if not start_s.is_finite() or start_s < 0:
                raise InvalidOperation
        except InvalidOperation:
            raise field_error(where, "start_s", tokens[5], "must be a time >= 0 in seconds") from None
        pgs.setdefault(pg, where)
        if len(pgs) > 1:
            first_pg, first_where = next(iter(pgs.items()))
            raise field_error(
                where, "pg", pg,
                f"differs from pg {first_pg} on {first_where}; spraylab has one data priority class",
            )  # fmt: skip
        rows.append(FlowRow(len(rows), src, dst, size, int(start_s * PS_PER_S), (), where))
    if len(rows) != count:
        raise FormatError(f"{name}: the first line says {count} flows, the file has {len(rows)}")
    rest = lines[1 + count :]
    return Ns3Flows(rows, dports, rest[0][0] if rest else None)


def check_flows(rows: list[FlowRow], topo: Ns3Topology | None, n_hosts: int, name: str) -> None:
    check_rows(rows, n_hosts, name, host_map(topo) if topo is not None else None)
