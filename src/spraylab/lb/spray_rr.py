"""Oblivious spraying at the sender: every flow draws ``paths`` distinct random entropies
when it starts and cycles over them, one per packet (retransmissions included). Switches
run plain ECMP on the entropy, so the share of a flow's packets on each path is the share of
its entropies that hash onto it: oblivious, not necessarily even."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pydantic import Field

from spraylab.core._core import SprayFlow, SprayRoundRobinKernel  # compiled: core/sender_kernels.pxi
from spraylab.lb.base import LbParams, LoadBalancer, is_builtin_hook, register

if TYPE_CHECKING:
    from spraylab.net.network import Network
    from spraylab.transport.view import SenderView


class SprayRrParams(LbParams):
    paths: int = Field(default=16, ge=1, le=1 << 16, description="entropies per flow, used round-robin")


@register
class SprayRoundRobin(LoadBalancer):
    name = "spray_rr"
    where = "sender"
    summary = "the sender cycles each packet's entropy over `paths` random values per flow"
    fluid_model = "entropies"
    Params = SprayRrParams

    def setup(self, net: Network) -> None:
        super().setup(net)
        self.rng = net.sim.derive_rng(0x5B2A7)

    kernel = SprayRoundRobinKernel()

    def init_qp(self, qp: SenderView) -> None:
        qp.lb = self
        if is_builtin_hook(self.entropy, SprayRoundRobin.entropy):
            qp.lb_kernel = self.kernel

    def on_flow_start(self, qp: SenderView) -> None:
        paths: int = self.params.paths  # type: ignore[attr-defined]
        entropies = self.rng.sample(range(1 << 16), paths)
        qp.lb_state = SprayFlow(entropies)

    def entropy(self, qp: SenderView, psn: int) -> int:
        return self.kernel.entropy_for(qp.lb_state)

    def stats(self) -> dict[str, Any]:
        return {"spray_rr_paths": self.params.paths}  # type: ignore[attr-defined]
