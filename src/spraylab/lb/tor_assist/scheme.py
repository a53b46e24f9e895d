"""The registered scheme: resolves the mode and the mirrored RNIC bitmap from the transport,
installs one :class:`~spraylab.lb.tor_assist.program.TorProgram` per ToR, and reports."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from spraylab.lb.base import LbParams, LoadBalancer, register
from spraylab.lb.tor_assist.counters import TorCounters, tor_stats
from spraylab.lb.tor_assist.params import NO_LIMIT, TorAssistParams
from spraylab.lb.tor_assist.program import TorProgram
from spraylab.transport.recovery.base import RECOVERIES

if TYPE_CHECKING:
    from spraylab.net.network import Network


@register
class TorAssist(LoadBalancer):
    name = "tor_assist"
    where = "tor"
    summary = "source ToR sprays and stamps (path, seq); destination ToR filters NACKs or resequences"
    fluid_model = "tor_split"
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
        recovery = RECOVERIES.get(transport.recovery)
        self.mode = params.mode
        if self.mode == "auto":  # the mode that fits the RNICs the scenario has
            # A selective NACK asks for one PSN, the receiver kept what followed it: a NACK
            # for a merely late packet can be filtered. A go-back-N receiver discarded what
            # followed: the ToR must hand the NIC packets in order.
            self.mode = "nack_filter" if recovery.selective else "reorder"
        if params.nic_bitmap:
            nic_w = params.nic_bitmap
        else:
            window = recovery.ooo_window_packets(transport)
            nic_w = NO_LIMIT if window is None else window
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
                    # held packets are charged to the shared buffer on a lossy fabric; on a
                    # lossless one to their ingress links' PFC counters
                    None if net.switch_params.lossless else switch.buffer,
                )
                switch.program = program
                self.programs.append(program)
                for h in switch.hosts:
                    self.paths_of_host[h] = len(switch.uplinks)

    def held_packets(self) -> int:
        return self.counters.held

    def stats(self) -> dict[str, Any]:
        return tor_stats(self)
