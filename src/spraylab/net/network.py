"""The network of one run: the hosts, switches and ports of a fabric plus the flows running
on it. This class holds the state the rest of the simulator reads (elements, counters,
flows) and composes the modules that act on it, one concept each:

* ``wiring``: builds switches, hosts, ports and their links from the fabric (``SwitchParams``);
* ``link``: what one direction of a link does to a packet (failure, loss, taps, PFC ingress
  accounting, the ToR bypass), a fixed-order pipeline;
* ``routing``: forwarding tables and route groups, installed from ``route_table`` (the one
  route computation, which the fluid engine reads too; the route model is in ``routes``);
* ``failures``: link events (down, degrade, loss);
* ``flow_schedule``: queue pairs, start times and dependencies;
* ``stop_rule``: when a workload run is done;
* ``conservation``: the self-checks of packets and bytes.

The data path itself lives in ``port.py``, ``switch.py``, ``host.py`` and
``spraylab.transport``."""

from __future__ import annotations

from typing import TYPE_CHECKING

from spraylab.engine.simulator import Simulator
from spraylab.net import conservation, failures
from spraylab.net.drops import no_drops
from spraylab.net.flow_schedule import FlowSchedule
from spraylab.net.host import Host
from spraylab.net.port import IngressCounter, Port
from spraylab.net.routing import Routing
from spraylab.net.stop_rule import check_done
from spraylab.net.switch import Switch
from spraylab.net.telemetry import enable_int
from spraylab.net.wiring import SwitchParams, build_elements, check_trimming, finish_links
from spraylab.topology.fabric import Fabric
from spraylab.transport.cc.base import CONGESTION_CONTROLS
from spraylab.transport.params import TransportParams
from spraylab.transport.qp import QueuePair
from spraylab.workload.flows import FlowSpec

if TYPE_CHECKING:
    from spraylab.lb.base import LoadBalancer

__all__ = ["Network", "SwitchParams"]


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
        check_trimming(switch_params, transport)
        self.sim = sim
        self.fabric = fabric
        self.switch_params = switch_params
        self.transport = transport
        self.lb = lb
        # The order of derivations is part of a run's identity: flows, ports, then switch salts.
        self.flow_rng = sim.derive_rng(0x5EED_F10)
        self.port_rng = sim.derive_rng(0xEC4)
        self.hosts: list[Host] = []
        self.switches: dict[str, Switch] = {}
        self.ports: list[Port] = []
        self.link_ports: dict[tuple[str, str], list[Port]] = {}  # (a, b) -> ports a->b
        self.ingress_counters: list[IngressCounter] = []
        self.link_changes = 0  # bumped by every link event (down, reroute, rate): caches key on it
        self.link_changed_ps = 0  # when it was last bumped
        self.routing = Routing(self)
        # the switches' ECMP hash seeds, in the route table both engines read (fluid/engine.py
        # network_streams draws them alike)
        self.routing.table.draw_salts(sim)
        self.qps: list[QueuePair] = []
        self.injected_packets = 0
        self.consumed_packets = 0
        self.drops_by_cause = no_drops()  # indexed by spraylab.net.drops cause
        self.trimmed_packets = 0  # data packets cut to their header (switch.trimming): not drops
        self.flows_received = 0
        self.senders_done = 0
        self.stop_when_done = True
        self.schedule = FlowSchedule(self)
        build_elements(self)
        if CONGESTION_CONTROLS.get(transport.cc).uses_int:
            enable_int(self)  # switch ports stamp in-band telemetry (HPCC)
        self.routing.compute()
        lb.setup(self)
        finish_links(self)  # after the scheme: the ToR bypass depends on its programs

    # --- failures and asymmetry (spraylab.net.failures) ---------------------------------
    def ports_between(
        self, a: str, b: str, parallel: int | None = None, direction: str = "both"
    ) -> list[Port]:
        """Both directions of the links between ``a`` and ``b`` (``direction = "forward"``:
        only from ``a`` to ``b``): all parallel links, or only the ``parallel``-th (0-based, in
        the fabric's link order)."""
        return failures.ports_between(self, a, b, parallel, direction)

    def schedule_link_down(
        self,
        at_ps: int,
        a: str,
        b: str,
        convergence_ps: int,
        parallel: int | None = None,
        direction: str = "both",
    ) -> None:
        failures.schedule_link_down(self, at_ps, a, b, convergence_ps, parallel, direction)

    def schedule_link_rate(
        self,
        at_ps: int,
        a: str,
        b: str,
        fraction: float,
        parallel: int | None = None,
        direction: str = "both",
        scale_queue: bool = False,
    ) -> None:
        failures.schedule_link_rate(self, at_ps, a, b, fraction, parallel, direction, scale_queue)

    def schedule_link_loss(
        self,
        at_ps: int,
        a: str,
        b: str,
        loss_rate: float,
        parallel: int | None = None,
        direction: str = "both",
    ) -> None:
        failures.schedule_link_loss(self, at_ps, a, b, loss_rate, parallel, direction)

    def base_rate(self, port: Port) -> int:
        return failures.base_rate(self, port)

    # --- workload (spraylab.net.flow_schedule, spraylab.net.stop_rule) -------------------
    def add_flows(self, specs: list[FlowSpec]) -> list[QueuePair]:
        return self.schedule.add(specs)

    def on_flow_received(self, qp: QueuePair) -> None:
        self.flows_received += 1
        self.schedule.on_received(qp)
        check_done(self)

    def on_sender_done(self, qp: QueuePair) -> None:
        self.senders_done += 1
        check_done(self)

    @property
    def dropped_packets(self) -> int:
        return sum(self.drops_by_cause)

    @property
    def all_done(self) -> bool:
        return self.flows_received == len(self.qps)

    # --- self-checks (spraylab.net.conservation) ------------------------------------------
    def packets_in_flight(self) -> int:
        return conservation.packets_in_flight(self)

    def check_conservation(self) -> dict[str, int]:
        """The end-of-run self-checks; raises AssertionError on a violation."""
        return conservation.check_conservation(self)
