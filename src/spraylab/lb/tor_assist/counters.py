"""What ToR-assisted spraying counts: the decisions of every ToR (one set for the scheme),
the flows each ToR tracks, and the ``stats()`` the run summary reports as ``lb.<name>``."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from spraylab.lb.tor_assist.params import NO_LIMIT, TorAssistParams

if TYPE_CHECKING:
    from spraylab.lb.tor_assist.scheme import TorAssist

_DECISIONS = (
    "nacks_held",
    "nacks_merged",
    "nacks_dropped_stale",
    "nacks_dropped_passed",
    "nacks_forwarded_loss",
    "nacks_released_loss",
    "nacks_timed_out",
    "nacks_forwarded_untracked",
    "nacks_retargeted",
    "cnps_dropped",
    "cnps_forwarded",
    "path_gaps",
    "path_lost_packets",
    "last_hop_drops",
    "nic_discards",
    "window_slides",
    "reseq_held_packets",
    "reseq_flush_loss",
    "reseq_flush_timeout",
    "reseq_flushed_packets",
    "reseq_overflow_drops",
    "reseq_duplicate_drops",
    "reseq_buffer_drops",
    "reseq_passed_ooo",
)


class TorCounters:
    """The decisions of every ToR program of one run, plus the packets held right now
    (``held``, for the conservation check) and the most paths a tracked flow had."""

    __slots__ = (*_DECISIONS, "held", "dst_paths_max")

    def __init__(self) -> None:
        for name in self.__slots__:
            setattr(self, name, 0)


class TorFlows:
    """Flows one ToR tracks now, as a source and as a destination, and the peak of both."""

    __slots__ = ("live_src", "live_dst", "peak")

    def __init__(self) -> None:
        self.live_src = 0
        self.live_dst = 0
        self.peak = 0

    def note(self) -> None:
        """A flow was added: update the peak."""
        live = self.live_src + self.live_dst
        if live > self.peak:
            self.peak = live


def tor_stats(lb: TorAssist) -> dict[str, Any]:
    params: TorAssistParams = lb.params  # type: ignore[assignment]
    c = lb.counters
    programs = lb.programs
    paths = c.dst_paths_max or max((len(p.switch.uplinks) for p in programs), default=0)
    window = lb.window_eff or params.window
    # per-flow table entry at the destination ToR: per path a 32-bit path_seq and a 32-bit
    # PSN, the passed-PSN bitmap (nack_filter), low / held PSN / forwarded PSN / deadline.
    dst_bytes = paths * 8 + 16 + ((window + 7) // 8 if lb.mode == "nack_filter" else 0)
    src_bytes = paths * 4 + 2
    out: dict[str, Any] = {
        "tor_mode": lb.mode,
        "tor_uplink": params.uplink,
        "tor_window": window,
        "tor_nic_bitmap": lb.nic_w if lb.nic_w != NO_LIMIT else 0,
        "tor_dst_flow_state_bytes": dst_bytes,
        "tor_src_flow_state_bytes": src_bytes,
        "tor_max_flows_tracked": max((p.flows.peak for p in programs), default=0),
        "tor_flows_tracked_now": sum(p.flows.live_src + p.flows.live_dst for p in programs),
        "tor_max_queue_delay_ps": max((p.tracker.maxq for p in programs), default=0),
        "tor_max_hold_timeout_ps": max((p.tracker.max_hold for p in programs), default=0),
        "tor_path_gaps": c.path_gaps,
        "tor_path_lost_packets": c.path_lost_packets,
        "tor_last_hop_drops": c.last_hop_drops,
        "tor_held_now": c.held,
    }
    if lb.mode == "nack_filter":
        out.update(
            {
                "nacks_held": c.nacks_held,
                "nacks_merged": c.nacks_merged,
                "nacks_dropped_stale": c.nacks_dropped_stale,
                "nacks_dropped_after_hold": c.nacks_dropped_passed,
                "nacks_dropped": c.nacks_dropped_stale + c.nacks_dropped_passed + c.nacks_merged,
                "nacks_forwarded_loss": c.nacks_forwarded_loss,
                "nacks_released_on_loss": c.nacks_released_loss,
                "nacks_timed_out": c.nacks_timed_out,
                "nacks_forwarded_untracked": c.nacks_forwarded_untracked,
                "nacks_retargeted": c.nacks_retargeted,
                "nacks_forwarded": c.nacks_forwarded_loss
                + c.nacks_released_loss
                + c.nacks_timed_out
                + c.nacks_forwarded_untracked
                + c.nacks_retargeted,
                "cnps_dropped": c.cnps_dropped,
                "cnps_forwarded": c.cnps_forwarded,
                "tor_window_slides": c.window_slides,
                "tor_nic_discards_mirrored": c.nic_discards,
            }
        )
    else:
        peaks = {p.switch.name: p.dst_role.peak_bytes for p in programs}
        out.update(
            {
                "reseq_peak_bytes": max(peaks.values(), default=0),
                "reseq_peak_bytes_per_tor": peaks,
                "reseq_held_packets": c.reseq_held_packets,
                "reseq_flush_loss": c.reseq_flush_loss,
                "reseq_flush_timeout": c.reseq_flush_timeout,
                "reseq_flushed_packets": c.reseq_flushed_packets,
                "reseq_overflow_drops": c.reseq_overflow_drops,
                "reseq_duplicate_drops": c.reseq_duplicate_drops,
                "reseq_buffer_drops": c.reseq_buffer_drops,
                "reseq_passed_ooo": c.reseq_passed_ooo,
            }
        )
    return out
