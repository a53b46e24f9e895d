"""No congestion control: every flow sends at line rate (within transport.window, if set)."""

from __future__ import annotations

from spraylab.transport.cc.base import CongestionControl, register_cc


@register_cc
class NoCongestionControl(CongestionControl):
    name = "none"
    summary = "none: line rate, paced only by the NIC port"

    __slots__ = ()
