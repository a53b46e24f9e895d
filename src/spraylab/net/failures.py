"""Failure injection: link events scheduled on a network (``[[topology.events]]``).

* ``down``: from ``at`` the link's ports fail (the first delivery stage of each direction
  loses everything, ``spraylab.net.link``); routing removes them ``convergence`` later.
* ``degrade``: the ports' rate becomes a fraction of the link's base rate.
* ``loss``: each packet crossing the link is lost with a probability (the second delivery
  stage); a later ``loss`` event on the same link replaces the rate.

Every event bumps ``net.link_changes`` (and stamps ``net.link_changed_ps``), which schemes
with cached per-link state (WCMP) watch."""

from __future__ import annotations

import zlib
from typing import TYPE_CHECKING, Any

from spraylab.core._core import SharedBuffer

if TYPE_CHECKING:
    from spraylab.net.network import Network
    from spraylab.net.port import Port


ECN_OFF_BYTES = 1 << 62  # Port.kmin of a port that never marks (core/port.pxi)


def link_changed(net: Network) -> None:
    net.link_changes += 1
    net.link_changed_ps = net.sim.now


def ports_between(
    net: Network, a: str, b: str, parallel: int | None = None, direction: str = "both"
) -> list[Port]:
    """Both directions of the links between ``a`` and ``b`` (``direction = "forward"``: only
    the ports from ``a`` to ``b``): all parallel links, or only the ``parallel``-th (0-based,
    in the fabric's link order)."""
    forward, backward = net.link_ports.get((a, b), []), net.link_ports.get((b, a), [])
    if not forward:
        raise KeyError(f"no link between {a!r} and {b!r}")
    if direction == "forward":
        backward = []
    if parallel is None:
        return forward + backward
    if not 0 <= parallel < len(forward):
        raise IndexError(f"{a!r} and {b!r} have {len(forward)} parallel link(s): index 0..{len(forward) - 1}")
    return [forward[parallel], *backward[parallel : parallel + 1]]


def schedule_link_down(
    net: Network,
    at_ps: int,
    a: str,
    b: str,
    convergence_ps: int,
    parallel: int | None = None,
    direction: str = "both",
) -> None:
    ports = ports_between(net, a, b, parallel, direction)

    def down(_: Any) -> None:
        for p in ports:
            p.link.fail()
        link_changed(net)
        net.sim.after(convergence_ps, reroute)

    def reroute(_: Any) -> None:
        net.routing.remove(ports)
        link_changed(net)

    net.sim.at(at_ps, down)


def schedule_link_rate(
    net: Network,
    at_ps: int,
    a: str,
    b: str,
    fraction: float,
    parallel: int | None = None,
    direction: str = "both",
    scale_queue: bool = False,
) -> None:
    """From ``at_ps`` the ports' rate is ``fraction`` of the link's base rate; with
    ``scale_queue`` their ECN thresholds and queue cap shrink with it (``scale_port_queue``)."""
    ports = ports_between(net, a, b, parallel, direction)

    def degrade(_: Any) -> None:
        for p in ports:
            rate_bps = base_rate(net, p)
            if scale_queue:
                scale_port_queue(net, p, rate_bps, fraction)
            p.set_rate(max(1, int(rate_bps * fraction)))
        link_changed(net)

    net.sim.at(at_ps, degrade)


def scale_port_queue(net: Network, port: Port, base_rate_bps: int, fraction: float) -> None:
    """A degraded port whose queue shrinks with its rate, as uet-htsim builds a failed link
    (``fat_tree_topology.cpp`` ``alloc_queue`` with ``reduced_speed``: speed, queue size and
    ECN thresholds all times ``_failed_link_ratio``): the same queueing *delay* marks and
    trims as on a healthy port. The ECN thresholds become ``fraction`` of the port's base ones
    (``switch.ecn_kmin_per_100g`` at the base rate). The queue cap ``switch.port_buffer``
    becomes ``fraction`` of it: the port gets a fixed-size queue of its own
    (a one-port ``SharedBuffer`` with that cap and the switch's capacity), still counted in
    its switch's buffer for the other ports; without ``switch.port_buffer`` the ports share
    the switch's buffer under its dynamic threshold and only the ECN thresholds scale."""
    sp = net.switch_params
    if port.kmin < ECN_OFF_BYTES:  # a switch port with ECN marking (net.wiring._make_port)
        scale = base_rate_bps / 100e9 * fraction
        port.kmin = int(sp.ecn_kmin_bytes_per_100g * scale)
        port.kmax = int(sp.ecn_kmax_bytes_per_100g * scale)
        span = port.kmax - port.kmin
        port.mark_slope = port.pmax / span if span > 0 else 0.0
        # set_rate (called next by the degrade) recomputes kmin_ps from the new kmin
    shared = port.owner.buffer if hasattr(port.owner, "buffer") else None
    if port.buffer is None or shared is None or not sp.port_buffer_bytes:
        return
    if fraction >= 1.0:
        port.buffer = shared
        return
    own = SharedBuffer(shared.capacity_bytes, shared.alpha)
    own.set_port_limit(int(sp.port_buffer_bytes * fraction), shared.packet_bytes_max)
    own.add_port(port)
    port.buffer = own


def schedule_link_loss(
    net: Network,
    at_ps: int,
    a: str,
    b: str,
    loss_rate: float,
    parallel: int | None = None,
    direction: str = "both",
) -> None:
    """From ``at_ps`` on, each packet crossing the link is lost with ``loss_rate`` (bit
    errors, a flaky optic). Only that link pays for the extra random draw."""
    ports = ports_between(net, a, b, parallel, direction)
    # One stream per event, shared by its ports, derived now (the order of derivations is
    # part of a run's identity). A stable salt: hash() of strings changes between processes.
    random = net.sim.derive_rng(0x1055 ^ zlib.crc32(f"{a}|{b}".encode())).random

    def start(_: Any) -> None:
        for port in ports:
            port.link.set_loss(loss_rate, random)

    net.sim.at(at_ps, start)


def base_rate(net: Network, port: Port) -> int:
    """The rate of ``port``'s link in the fabric, before any ``degrade`` event."""
    for link in net.fabric.links:
        if {link.a, link.b} == {port.owner.name, port.peer_owner.name}:
            return link.rate_bps
    return port.rate_bps
