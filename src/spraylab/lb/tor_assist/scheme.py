"""The registered scheme: resolves the mode and the mirrored RNIC bitmap from the transport,
installs one :class:`~spraylab.lb.tor_assist.program.TorProgram` per ToR, and reports."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from spraylab.lb.base import LbParams, LoadBalancer, register
from spraylab.lb.tor_assist.counters import TorCounters, tor_stats
from spraylab.lb.tor_assist.params import NO_LIMIT, TorAssistParams
from spraylab.lb.tor_assist.program import TorProgram

if TYPE_CHECKING:
    from spraylab.net.network import Network


@register
class TorAssist(LoadBalancer):
    name = "tor_assist"
    where = "tor"
    summary = "source ToR sprays and stamps (path, seq); destination ToR filters NACKs or resequences"
    Params = TorAssistParams

    def __init__(self, params: LbParams | None = None) -> None:
        super().__init__(params)
        self.programs: list[TorProgram] = []
        self.counters = TorCounters()
        self.paths_of_host: list[int] = []
        self.window_eff = 0
        self.nic_w = 0
        self.mode = self.params.mode  # "auto" is resolved in setup()
        self.rng: Any = None

    def setup(self, net: Network) -> None:
        super().setup(net)
        params: TorAssistParams = self.params  # type: ignore[assignment]
        self.rng = net.sim.derive_rng(0x70A55).random
        transport = net.transport
        self.mode = params.mode
        if self.mode == "auto":  # the mode that fits the RNICs the scenario has
            self.mode = "reorder" if transport.recovery == "gbn" else "nack_filter"
        if params.nic_bitmap:
            nic_w = params.nic_bitmap
        elif transport.recovery == "sr":
            nic_w = transport.ooo_bitmap_packets
        elif transport.recovery == "gbn":
            nic_w = 1
        else:
            nic_w = NO_LIMIT
        window = params.window
        if self.mode == "nack_filter" and nic_w != NO_LIMIT and window < nic_w:
            window = nic_w  # a narrower window could not mirror the NIC's ePSN (nack_filter.py)
        self.window_eff = window
        self.nic_w = nic_w
        n_hosts = len(net.hosts)
        self.paths_of_host = [0] * n_hosts
        for switch in net.switches.values():
            if switch.tier == 1 and switch.hosts:
                program = TorProgram(
                    switch,
                    params,
                    self.mode,
                    n_hosts,
                    window,
                    nic_w,
                    self.paths_of_host,
                    self.counters,
                    self.rng,
                )
                switch.program = program
                self.programs.append(program)
                for h in switch.hosts:
                    self.paths_of_host[h] = len(switch.uplinks)

    def held_packets(self) -> int:
        return self.counters.held

    def stats(self) -> dict[str, Any]:
        return tor_stats(self)
