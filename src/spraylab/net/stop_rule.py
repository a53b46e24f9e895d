"""When a workload run ends: once every flow is received and every sender is done (its last
ACK arrived), the run stops with reason ``"done"``, unless the scenario runs to its time
limit (``net.stop_when_done = False``, ``run.stop = "time"``)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from spraylab.engine.simulator import StopSimulation

if TYPE_CHECKING:
    from spraylab.net.network import Network


def check_done(net: Network) -> None:
    n = len(net.qps)
    if net.flows_received == n and net.senders_done == n and net.stop_when_done:
        # Stop after the current event has finished (e.g. the last ACK reaches the load
        # balancer's hooks too).
        net.sim.after(0, _stop_done)


def _stop_done(_: object) -> None:
    raise StopSimulation("done")
