"""Builds the simulation objects of a fabric (hosts, switches, ports, routing) and runs a
workload of flows on it. This is the wiring layer: the data path itself lives in
``port.py``, ``switch.py``, ``host.py`` and ``spraylab.transport``."""

from __future__ import annotations

import zlib
from collections import Counter
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from spraylab.engine.simulator import Simulator, StopSimulation
from spraylab.net.drops import BUFFER, DROP_CAUSES, PORT_CAUSES, RANDOM_LOSS, no_drops
from spraylab.net.framing import data_wire_bytes
from spraylab.net.host import Host, Nic, UniformRoute
from spraylab.net.packet import Packet
from spraylab.net.port import EcnConfig, IngressCounter, PfcPort, Port, sim_drop
from spraylab.net.routes import RouteGroup
from spraylab.net.switch import SharedBuffer, Switch
from spraylab.topology.fabric import Fabric
from spraylab.transport.params import TransportParams
from spraylab.transport.qp import QueuePair
from spraylab.transport.receiver import RECEIVERS
from spraylab.workload.flows import FlowSpec

if TYPE_CHECKING:
    from spraylab.lb.base import LoadBalancer


@dataclass(frozen=True, slots=True)
class SwitchParams:
    buffer_bytes: int = 64_000_000
    dt_alpha: float = 1.0
    lossless: bool = False
    pfc_xoff_bytes: int = 0  # 0: derived from the buffer and port count
    pfc_xon_bytes: int = 0
    ecn: bool = True
    # RED profile per 100 Gb/s of port rate: the HPCC ns-3 model's KMIN_MAP / KMAX_MAP /
    # PMAX_MAP (400 KB, 1600 KB, 0.2 at 100 Gb/s). Sampled at dequeue, as that model and
    # htsim do (see ``EcnConfig``; docs/congestion-control.md has the measurements).
    ecn_kmin_bytes_per_100g: int = 400_000
    ecn_kmax_bytes_per_100g: int = 1_600_000
    ecn_pmax: float = 0.2
    ecn_mark_at: str = "dequeue"


class Network:
    """Hosts, switches and ports of one fabric, plus the flows running on it."""

    def __init__(
        self,
        sim: Simulator,
        fabric: Fabric,
        switch_params: SwitchParams,
        transport: TransportParams,
        lb: LoadBalancer,
    ) -> None:
        self.sim = sim
        self.fabric = fabric
        self.switch_params = switch_params
        self.transport = transport
        self.lb = lb
        self.flow_rng = sim.derive_rng(0x5EED_F10)
        self.port_rng = sim.derive_rng(0xEC4)
        self.hosts: list[Host] = []
        self.switches: dict[str, Switch] = {}
        self.ports: list[Port] = []
        self.link_ports: dict[tuple[str, str], list[Port]] = {}  # (a, b) -> ports a->b
        self.ingress_counters: list[IngressCounter] = []
        self.routed_down: set[int] = set()  # ids of ports that routing has removed (both directions)
        self.link_changes = 0  # bumped by every link event (down, reroute, rate): caches key on it
        self.link_changed_ps = 0  # when it was last bumped
        self.route_version = 0  # bumped by every routing recomputation (RouteGroup.version)
        self._groups: dict[tuple[str, str | int], RouteGroup] = {}  # (switch, dst ToR or host id)
        self.qps: list[QueuePair] = []
        self.injected_packets = 0
        self.consumed_packets = 0
        self.drops_by_cause = no_drops()  # indexed by spraylab.net.drops cause
        self.flows_received = 0
        self.senders_done = 0
        self.stop_when_done = True
        self._dependents: dict[int, list[QueuePair]] = {}
        self._pending_deps: dict[int, int] = {}
        self._build()
        lb.setup(self)
        self._skip_idle_programs()

    # --- construction ----------------------------------------------------------------
    def _build(self) -> None:
        sim, fabric, sp = self.sim, self.fabric, self.switch_params
        salt_rng = sim.derive_rng(0x5A17)
        for name, tier in fabric.switch_tier.items():
            switch = Switch(sim, name, len(self.switches), tier, salt_rng.getrandbits(64))
            switch.buffer = SharedBuffer(sp.buffer_bytes, sp.dt_alpha)
            self.switches[name] = switch
        for host_id, name in enumerate(fabric.hosts):
            self.hosts.append(Host(sim, self, host_id, name, fabric.host_server[host_id]))
        nodes: dict[str, Any] = {**self.switches, **{h.name: h for h in self.hosts}}
        self._degree = Counter(name for link in fabric.links for name in (link.a, link.b))
        port_cls = PfcPort if sp.lossless else Port
        for link in fabric.links:
            a, b = nodes[link.a], nodes[link.b]
            self._make_port(port_cls, a, b, link.rate_bps, link.delay_ps)
            self._make_port(port_cls, b, a, link.rate_bps, link.delay_ps)
        for host in self.hosts:
            host.nics = [Nic(sim, host, port) for port in host.ports]
        self._compute_routes()

    def _skip_idle_programs(self) -> None:
        """Deliver straight to ``Switch.forward`` where the switch runs no ToR program (the
        scheme has installed its programs by now): one call less per packet-hop."""
        for port in self.ports:
            peer = port.peer_owner
            if isinstance(peer, Switch) and peer.program is None and port.receive_at_peer == peer.receive:
                port.receive_at_peer = peer.forward

    def _make_port(self, cls: type[Port], owner: Any, peer: Any, rate_bps: int, delay_ps: int) -> Port:
        sp = self.switch_params
        is_switch = isinstance(owner, Switch)
        ecn = None
        if is_switch and sp.ecn:
            scale = rate_bps / 100e9
            ecn = EcnConfig(
                int(sp.ecn_kmin_bytes_per_100g * scale),
                int(sp.ecn_kmax_bytes_per_100g * scale),
                sp.ecn_pmax,
                mark_at=sp.ecn_mark_at,
            )
        port = cls(self.sim, f"{owner.name}->{peer.name}", owner, rate_bps, delay_ps, ecn, self.port_rng)
        owner.ports.append(port)
        if is_switch:
            owner.buffer.add_port(port)
            if not sp.lossless:
                port.buffer = owner.buffer
            if isinstance(peer, Switch) and peer.tier > owner.tier:
                port.is_uplink = True
                owner.uplinks.append(port)
        receive = peer.receive
        if sp.lossless and isinstance(peer, Switch):
            n_ports = max(1, self._degree[peer.name])
            xoff = sp.pfc_xoff_bytes or max(64 * 1024, sp.buffer_bytes // (4 * n_ports))
            xon = sp.pfc_xon_bytes or max(xoff - 4 * data_wire_bytes(4096), xoff // 2)
            counter = IngressCounter(self.sim, port, xoff, xon, peer.receive)
            self.ingress_counters.append(counter)
            receive = counter.receive
        port.connect(peer, receive)
        self.ports.append(port)
        self.link_ports.setdefault((owner.name, peer.name), []).append(port)
        return port

    def _compute_routes(self) -> None:
        """Equal-cost next hops per (switch, destination host), one route group per
        destination ToR (and per directly attached host), re-installed in place."""
        fabric = self.fabric
        routed_down = self.routed_down
        self.route_version += 1
        version = self.route_version
        # A switch pair is cut only when all of its parallel links are down.
        down_pairs = {
            pair for pair, ports in self.link_ports.items() if all(id(p) in routed_down for p in ports)
        }
        adj = fabric.switch_neighbours(down_pairs)
        n = len(self.hosts)
        unrouted = RouteGroup(version=version)  # never installed: no candidate
        tables: dict[str, list[RouteGroup]] = {name: [unrouted] * n for name in self.switches}
        hosts_by_tor: dict[str, list[int]] = {}
        for h in self.hosts:
            hosts_by_tor.setdefault(fabric.host_tor[h.id], []).append(h.id)
        # per switch: its routed ports towards other switches, with the peer's name
        fabric_ports = {
            name: [
                (p, p.peer_owner.name)
                for p in switch.ports
                if isinstance(p.peer_owner, Switch) and id(p) not in routed_down
            ]
            for name, switch in self.switches.items()
        }
        for tor, tor_hosts in hosts_by_tor.items():
            dist = fabric.distances_to(tor, adj)
            for name in self.switches:
                if name == tor:
                    continue
                want = dist[name] - 1 if name in dist else -2  # unreachable: no candidate
                cands = self._group(name, tor)
                cands.install([p for p, peer in fabric_ports[name] if dist.get(peer, -1) == want], version)
                table = tables[name]
                for h in tor_hosts:
                    table[h] = cands
        for name, switch in self.switches.items():
            for port in switch.ports:
                if isinstance(port.peer_owner, Host):
                    direct = self._group(name, port.peer_owner.id)
                    direct.install((port,), version)
                    tables[name][port.peer_owner.id] = direct
                    if fabric.host_tor[port.peer_owner.id] == name and port.peer_owner.id not in switch.hosts:
                        switch.hosts.append(port.peer_owner.id)
            switch.table = tables[name]
        for host in self.hosts:
            tor_nic = next(nic for nic in host.nics if nic.port.peer_owner.name == fabric.host_tor[host.id])
            if len(host.nics) == 1:
                host.route = UniformRoute(tor_nic, n)
                continue
            route = [tor_nic] * n
            for nic in host.nics:
                peer = nic.port.peer_owner
                if nic is not tor_nic:
                    for port in peer.ports:
                        if isinstance(port.peer_owner, Host):
                            route[port.peer_owner.id] = nic
            host.route = route

    def _group(self, switch: str, dst: str | int) -> RouteGroup:
        group = self._groups.get((switch, dst))
        if group is None:
            group = self._groups[(switch, dst)] = RouteGroup()
        return group

    # --- failures and asymmetry ------------------------------------------------------
    def _link_changed(self) -> None:
        self.link_changes += 1
        self.link_changed_ps = self.sim.now

    def ports_between(self, a: str, b: str, parallel: int | None = None) -> list[Port]:
        """Both directions of the links between ``a`` and ``b``: all parallel links, or only
        the ``parallel``-th (0-based, in the fabric's link order)."""
        forward, backward = self.link_ports.get((a, b), []), self.link_ports.get((b, a), [])
        if not forward:
            raise KeyError(f"no link between {a!r} and {b!r}")
        if parallel is None:
            return forward + backward
        if not 0 <= parallel < len(forward):
            raise IndexError(
                f"{a!r} and {b!r} have {len(forward)} parallel link(s): index 0..{len(forward) - 1}"
            )
        return [forward[parallel], backward[parallel]]

    def schedule_link_down(
        self, at_ps: int, a: str, b: str, convergence_ps: int, parallel: int | None = None
    ) -> None:
        ports = self.ports_between(a, b, parallel)

        def down(_: Any) -> None:
            for p in ports:
                p.fail()
            self._link_changed()
            self.sim.after(convergence_ps, reroute)

        def reroute(_: Any) -> None:
            self.routed_down.update(id(p) for p in ports)
            self._compute_routes()
            self._link_changed()

        self.sim.at(at_ps, down)

    def schedule_link_rate(
        self, at_ps: int, a: str, b: str, fraction: float, parallel: int | None = None
    ) -> None:
        ports = self.ports_between(a, b, parallel)

        def degrade(_: Any) -> None:
            for p in ports:
                p.set_rate(max(1, int(self.base_rate(p) * fraction)))
            self._link_changed()

        self.sim.at(at_ps, degrade)

    def schedule_link_loss(
        self, at_ps: int, a: str, b: str, loss_rate: float, parallel: int | None = None
    ) -> None:
        """From ``at_ps`` on, each packet crossing the link is lost with ``loss_rate`` (bit
        errors, a flaky optic). Only that link pays for the extra random draw."""
        ports = self.ports_between(a, b, parallel)
        # A stable salt: hash() of strings changes from process to process.
        rng = self.sim.derive_rng(0x1055 ^ zlib.crc32(f"{a}|{b}".encode()))

        def start(_: Any) -> None:
            for port in ports:
                port.receive_at_peer = _lossy(self.sim, port, port.receive_at_peer, loss_rate, rng.random)

        self.sim.at(at_ps, start)

    def base_rate(self, port: Port) -> int:
        for link in self.fabric.links:
            if {link.a, link.b} == {port.owner.name, port.peer_owner.name}:
                return link.rate_bps
        return port.rate_bps

    # --- workload --------------------------------------------------------------------
    def add_flows(self, specs: list[FlowSpec]) -> list[QueuePair]:
        params = self.transport
        receiver_cls = RECEIVERS[params.recovery]
        new = []
        for spec in specs:
            src, dst = self.hosts[spec.src], self.hosts[spec.dst]
            nic = src.route[spec.dst]
            qp = QueuePair(self, spec, nic, params, nic.port.rate_bps)
            qp.rx = receiver_cls(qp, dst.route[spec.src], params)
            self.lb.init_qp(qp)
            self.qps.append(qp)
            new.append(qp)
        known = {qp.flow_id for qp in self.qps}
        for qp in new:
            deps = qp.spec.deps
            if not deps:
                self.sim.at(qp.spec.start_ps, _start_qp, qp)
                continue
            missing = [d for d in deps if d not in known]
            if missing:
                raise ValueError(f"flow {qp.flow_id} depends on unknown flows {missing}")
            self._pending_deps[qp.flow_id] = len(deps)
            for d in deps:
                self._dependents.setdefault(d, []).append(qp)
        return new

    def on_flow_received(self, qp: QueuePair) -> None:
        self.flows_received += 1
        for child in self._dependents.get(qp.flow_id, ()):
            left = self._pending_deps[child.flow_id] - 1
            self._pending_deps[child.flow_id] = left
            if left == 0:
                self.sim.after(child.spec.start_ps, _start_qp, child)
        self._check_done()

    def on_sender_done(self, qp: QueuePair) -> None:
        self.senders_done += 1
        self._check_done()

    def _check_done(self) -> None:
        n = len(self.qps)
        if self.flows_received == n and self.senders_done == n and self.stop_when_done:
            # Stop after the current event has finished (e.g. the last ACK reaches the
            # load balancer's hooks too).
            self.sim.after(0, _stop_done)

    @property
    def dropped_packets(self) -> int:
        return sum(self.drops_by_cause)

    @property
    def all_done(self) -> bool:
        return self.flows_received == len(self.qps)

    # --- self-checks -----------------------------------------------------------------
    def packets_in_flight(self) -> int:
        on_wires = sum(1 for event in self.sim.pending() if isinstance(event[2], Packet))
        in_queues = sum(len(p.data_queue) + len(p.ctrl_queue) for p in self.ports if isinstance(p, PfcPort))
        return on_wires + in_queues + self.lb.held_packets()

    def check_conservation(self) -> dict[str, int]:
        """Packet conservation (sent = delivered + dropped + in flight, where dropped is the sum
        of the per-cause counters every drop goes through), per-cause consistency (the
        network's counters are the sums of the flows' and, for port causes, of the ports'),
        byte conservation per completed flow, and no buffer drop on a lossless fabric (random
        loss is allowed there: PFC does not stop corruption). Raises AssertionError on a
        violation: never a silent number."""
        in_flight = self.packets_in_flight()
        by_cause = self.drops_by_cause
        dropped = sum(by_cause)
        if self.injected_packets != self.consumed_packets + dropped + in_flight:
            raise AssertionError(
                f"packet conservation violated: injected {self.injected_packets} != consumed "
                f"{self.consumed_packets} + dropped {dropped} + in flight {in_flight}"
            )
        for cause, name in enumerate(DROP_CAUSES):
            per_flow = sum(qp.drops_by_cause[cause] for qp in self.qps)
            if per_flow != by_cause[cause]:
                raise AssertionError(f"{name} drops: network counted {by_cause[cause]}, flows {per_flow}")
        for cause, name in enumerate(DROP_CAUSES):
            at_ports = sum(p.drops_by_cause[cause] for p in self.ports)
            if at_ports != (by_cause[cause] if cause in PORT_CAUSES else 0):
                raise AssertionError(f"{name} drops: network counted {by_cause[cause]}, ports {at_ports}")
        for qp in self.qps:
            rx = qp.rx
            if rx.finish_ps >= 0 and (rx.delivered_bytes != qp.spec.size_bytes or rx.epsn != qp.n_packets):
                raise AssertionError(
                    f"byte conservation violated for flow {qp.flow_id}: delivered {rx.delivered_bytes} "
                    f"of {qp.spec.size_bytes} bytes"
                )
        if self.switch_params.lossless and by_cause[BUFFER]:
            raise AssertionError(f"lossless fabric dropped {by_cause[BUFFER]} packets for lack of buffer")
        return {
            "injected": self.injected_packets,
            "consumed": self.consumed_packets,
            "dropped": dropped,
            "in_flight": in_flight,
        }


def _lossy(sim: Simulator, port: Port, deliver: Any, loss_rate: float, random: Any) -> Any:
    def receive(pkt: Packet) -> None:
        if random() < loss_rate:
            if pkt.ingress is not None:  # lossless fabrics: free the PFC accounting too
                pkt.ingress.release(pkt.size)
                pkt.ingress = None
            sim_drop(sim, pkt, RANDOM_LOSS, port)
        else:
            deliver(pkt)

    return receive


def _stop_done(_: object) -> None:
    raise StopSimulation("done")


def _start_qp(qp: QueuePair) -> None:
    qp.start()
