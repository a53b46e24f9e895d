"""Builds the elements of a fabric: switches with their shared buffers, hosts with their
NICs, and for every link two ports (one per direction), each with its delivery stages
(``spraylab.net.link``) and, on a lossless fabric, the PFC ingress accounting of the switch it
feeds."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from spraylab.net.framing import TRIMMED_WIRE_BYTES, data_wire_bytes
from spraylab.net.host import Host, Nic
from spraylab.net.link import Link
from spraylab.net.port import EcnConfig, IngressCounter, PfcPort, Port
from spraylab.net.switch import SharedBuffer, Switch

if TYPE_CHECKING:
    from spraylab.net.network import Network
    from spraylab.transport.params import TransportParams

# With switch.trimming, the chance that a full queue trims the data packet queued last instead of
# the arriving one: uet-htsim's CompositeQueue::receivePacket (htsim/sim/compositequeue.cpp,
# ``drand() < 0.5`` boots the queued tail to a header). Packets of several flows that reach a
# full queue at the same instants are then trimmed evenly (benchmarks/nscc_incast_fairness.md).
TRIM_TAIL_FRACTION = 0.5


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
    # Packet trimming (uet-htsim's switches, NDP): a data packet the buffer refuses is cut to
    # its header (framing.TRIMMED_WIRE_BYTES) and forwarded at control priority instead of
    # dropped; the receiver NACKs it (transport.recovery = "uec"). Lossy fabrics only.
    trimming: bool = False
    # A fixed cap on each switch port's queue besides the shared buffer's dynamic threshold
    # (uet-htsim's switch queues have a fixed size: 1 BDP with trimming by default); 0 = none.
    port_buffer_bytes: int = 0


def check_trimming(sp: SwitchParams, transport: TransportParams) -> None:
    """Trimming needs a lossy fabric (a lossless one never drops for buffer: nothing to trim)
    and a recovery mode whose receiver answers trimmed headers. ValueError, one line, otherwise."""
    if not sp.trimming:
        return
    from spraylab.transport.recovery.base import RECOVERIES

    if sp.lossless:
        raise ValueError(
            "switch.trimming = true: a lossless fabric (switch.lossless = true) never drops for "
            "buffer, so nothing is trimmed; set one of them false"
        )
    if not RECOVERIES.get(transport.recovery).nacks_trimmed:
        allowed = [name for name in RECOVERIES.names() if RECOVERIES.get(name).nacks_trimmed]
        raise ValueError(
            f"switch.trimming = true: transport.recovery = {transport.recovery!r} has no answer to a "
            f"trimmed header; allowed with trimming: {', '.join(allowed)}"
        )


def build_elements(net: Network) -> None:
    """Fill ``net.switches``, ``net.hosts``, ``net.ports``, ``net.link_ports`` and
    ``net.ingress_counters`` from ``net.fabric``, in the fabric's order (the order decides the
    switches' indices and the order ports are listed in: directed link ids). A switch's salt
    and routes come from the route table when routing installs them."""
    sim, fabric, sp = net.sim, net.fabric, net.switch_params
    for name, tier in fabric.switch_tier.items():
        switch = Switch(sim, name, len(net.switches), tier)
        switch.buffer = SharedBuffer(sp.buffer_bytes, sp.dt_alpha)
        if sp.port_buffer_bytes:
            switch.buffer.set_port_limit(sp.port_buffer_bytes, data_wire_bytes(net.transport.mtu_bytes))
        net.switches[name] = switch
    for host_id, name in enumerate(fabric.hosts):
        net.hosts.append(Host(sim, net, host_id, name, fabric.host_server[host_id]))
    nodes: dict[str, Any] = {**net.switches, **{h.name: h for h in net.hosts}}
    degree = Counter(name for link in fabric.links for name in (link.a, link.b))
    port_cls = PfcPort if sp.lossless else Port
    for link in fabric.links:
        a, b = nodes[link.a], nodes[link.b]
        _make_port(net, port_cls, a, b, link.rate_bps, link.delay_ps, degree)
        _make_port(net, port_cls, b, a, link.rate_bps, link.delay_ps, degree)
    for host in net.hosts:
        host.nics = [Nic(sim, host, port) for port in host.ports]


def finish_links(net: Network) -> None:
    """Recompile every link's delivery once the scheme has installed its ToR programs: the
    ToR bypass (``Link.peer_receive``) depends on them."""
    for port in net.ports:
        port.link.rebuild()


def _make_port(
    net: Network,
    cls: type[Port],
    owner: Any,
    peer: Any,
    rate_bps: int,
    delay_ps: int,
    degree: Counter[str],
) -> Port:
    sp = net.switch_params
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
    port = cls(net.sim, f"{owner.name}->{peer.name}", owner, rate_bps, delay_ps, ecn, net.port_rng)
    owner.ports.append(port)
    if is_switch:
        owner.buffer.add_port(port)
        if not sp.lossless:
            port.buffer = owner.buffer
            if sp.trimming:
                port.trim_bytes = TRIMMED_WIRE_BYTES
                port.trim_tail_fraction = TRIM_TAIL_FRACTION
        if isinstance(peer, Switch) and peer.tier > owner.tier:
            port.is_uplink = True
            owner.uplinks.append(port)
    counter = None
    if sp.lossless and isinstance(peer, Switch):
        n_ports = max(1, degree[peer.name])
        xoff = sp.pfc_xoff_bytes or max(64 * 1024, sp.buffer_bytes // (4 * n_ports))
        xon = sp.pfc_xon_bytes or max(xoff - 4 * data_wire_bytes(4096), xoff // 2)
        counter = IngressCounter(net.sim, port, xoff, xon, peer.receive)
        net.ingress_counters.append(counter)
    port.connect(peer, peer.receive)
    Link(port, peer, counter)
    net.ports.append(port)
    net.link_ports.setdefault((owner.name, peer.name), []).append(port)
    return port
