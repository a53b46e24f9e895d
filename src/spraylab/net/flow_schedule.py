"""Flow scheduling: turns flow specs into queue pairs and starts each at its time, or
``start_ps`` after the last of the flows it depends on is received."""

from __future__ import annotations

from typing import TYPE_CHECKING

from spraylab.transport.qp import QueuePair
from spraylab.workload.flows import FlowSpec

if TYPE_CHECKING:
    from spraylab.net.network import Network


class FlowSchedule:
    """The dependency bookkeeping of one network's flows."""

    __slots__ = ("net", "_dependents", "_pending_deps")

    def __init__(self, net: Network) -> None:
        self.net = net
        self._dependents: dict[int, list[QueuePair]] = {}  # flow id -> flows waiting on it
        self._pending_deps: dict[int, int] = {}  # flow id -> dependencies not yet received

    def add(self, specs: list[FlowSpec]) -> list[QueuePair]:
        """A queue pair (sender and receiver) per spec, appended to ``net.qps``; flows without
        dependencies are scheduled at their start time. A dependency must be a flow added
        before or in this call."""
        net = self.net
        params = net.transport
        new = []
        for spec in specs:
            nic = net.hosts[spec.src].route[spec.dst]
            qp = QueuePair(net, spec, nic, params, nic.port.rate_bps)  # builds its receiver at dst
            net.lb.init_qp(qp)
            net.qps.append(qp)
            new.append(qp)
        known = {qp.flow_id for qp in net.qps}
        for qp in new:
            deps = qp.spec.deps
            if not deps:
                net.sim.at(qp.spec.start_ps, _start_qp, qp)
                continue
            missing = [d for d in deps if d not in known]
            if missing:
                raise ValueError(f"flow {qp.flow_id} depends on unknown flows {missing}")
            self._pending_deps[qp.flow_id] = len(deps)
            for d in deps:
                self._dependents.setdefault(d, []).append(qp)
        return new

    def on_received(self, qp: QueuePair) -> None:
        """``qp``'s message is complete at its receiver: start the flows it was the last
        dependency of."""
        pending = self._pending_deps
        for child in self._dependents.get(qp.flow_id, ()):
            left = pending[child.flow_id] - 1
            pending[child.flow_id] = left
            if left == 0:
                self.net.sim.after(child.spec.start_ps, _start_qp, child)


def _start_qp(qp: QueuePair) -> None:
    qp.start()
