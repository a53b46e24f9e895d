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

if TYPE_CHECKING:
    from spraylab.net.network import Network
    from spraylab.net.port import Port


def link_changed(net: Network) -> None:
    net.link_changes += 1
    net.link_changed_ps = net.sim.now


def ports_between(net: Network, a: str, b: str, parallel: int | None = None) -> list[Port]:
    """Both directions of the links between ``a`` and ``b``: all parallel links, or only the
    ``parallel``-th (0-based, in the fabric's link order)."""
    forward, backward = net.link_ports.get((a, b), []), net.link_ports.get((b, a), [])
    if not forward:
        raise KeyError(f"no link between {a!r} and {b!r}")
    if parallel is None:
        return forward + backward
    if not 0 <= parallel < len(forward):
        raise IndexError(f"{a!r} and {b!r} have {len(forward)} parallel link(s): index 0..{len(forward) - 1}")
    return [forward[parallel], backward[parallel]]


def schedule_link_down(
    net: Network, at_ps: int, a: str, b: str, convergence_ps: int, parallel: int | None = None
) -> None:
    ports = ports_between(net, a, b, parallel)

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
    net: Network, at_ps: int, a: str, b: str, fraction: float, parallel: int | None = None
) -> None:
    ports = ports_between(net, a, b, parallel)

    def degrade(_: Any) -> None:
        for p in ports:
            p.set_rate(max(1, int(base_rate(net, p) * fraction)))
        link_changed(net)

    net.sim.at(at_ps, degrade)


def schedule_link_loss(
    net: Network, at_ps: int, a: str, b: str, loss_rate: float, parallel: int | None = None
) -> None:
    """From ``at_ps`` on, each packet crossing the link is lost with ``loss_rate`` (bit
    errors, a flaky optic). Only that link pays for the extra random draw."""
    ports = ports_between(net, a, b, parallel)
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
