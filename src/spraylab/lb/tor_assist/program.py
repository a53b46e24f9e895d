"""The program of one ToR (``switch.program``): it sees every packet first and hands it to
the role it plays for that packet (source stamping, the destination's NACK filter or
resequencer), or lets it pass (``True``: the switch forwards it as usual)."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from spraylab.lb.tor_assist.counters import TorCounters, TorFlows
from spraylab.lb.tor_assist.nack_filter import NackFilter
from spraylab.lb.tor_assist.resequencer import Resequencer
from spraylab.lb.tor_assist.stamping import SourceStamper
from spraylab.lb.tor_assist.tracker import DestinationTracker
from spraylab.net.packet import ACK, CNP, DATA, NACK

if TYPE_CHECKING:
    from spraylab.lb.tor_assist.params import TorAssistParams
    from spraylab.net.packet import Packet
    from spraylab.net.switch import SharedBuffer, Switch

Handler = Callable[["Switch", "Packet"], bool]


class TorProgram:
    """Both roles of one ToR: source for its hosts' data, destination for data to them."""

    __slots__ = (
        "switch",
        "attached",
        "flows",
        "stamper",
        "tracker",
        "dst_role",
        "_spray",
        "_arrive",
        "_filter",
    )

    def __init__(
        self,
        switch: Switch,
        params: TorAssistParams,
        mode: str,
        n_hosts: int,
        window: int,
        nic_w: int,
        paths_of_host: list[int],
        counters: TorCounters,
        rng: Callable[[], float],
        hold_buffer: SharedBuffer | None,
    ) -> None:
        sim = switch.sim
        self.switch = switch
        self.attached = bytearray(n_hosts)
        for h in switch.hosts:
            self.attached[h] = 1
        self.flows = TorFlows()
        self.stamper = SourceStamper(sim, params.uplink, rng, self.flows)
        self.tracker = DestinationTracker(
            sim, window, params.hold_timeout, paths_of_host, counters, self.flows
        )
        self.dst_role: NackFilter | Resequencer
        self._filter: Handler | None = None
        if mode == "nack_filter":
            nack_filter = NackFilter(switch, self.tracker, counters, window, nic_w, params.retarget)
            self.dst_role = nack_filter
            self._arrive: Handler = nack_filter.track
            self._filter = nack_filter.filter
        else:
            # propagation delay to the attached NICs (a flush's round trip crosses it twice)
            host_hop_ps = max((switch.table[h][0].delay_ps for h in switch.hosts), default=0)
            resequencer = Resequencer(switch, self.tracker, counters, window, host_hop_ps, hold_buffer)
            self.dst_role = resequencer
            self._arrive = resequencer.reseq
        self._spray: Handler = self.stamper.spray

    def on_packet(self, switch: Switch, pkt: Packet) -> bool:
        kind = pkt.kind
        attached = self.attached
        if kind == DATA:
            if attached[pkt.src]:
                if attached[pkt.dst]:
                    return True
                return self._spray(switch, pkt)
            if attached[pkt.dst] and pkt.path_id >= 0:
                return self._arrive(switch, pkt)
            return True
        if kind == ACK:
            if attached[pkt.dst] and pkt.psn >= pkt.msg_packets and not attached[pkt.src]:
                self.stamper.retire(pkt.flow_id)
            return True
        if (
            self._filter is not None
            and (kind == NACK or (kind == CNP and not pkt.ecn))
            and attached[pkt.src]
            and not attached[pkt.dst]
        ):
            return self._filter(switch, pkt)
        return True
