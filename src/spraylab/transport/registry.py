"""The names ``transport.recovery`` and ``transport.cc`` accept, with a one-line summary each.

One function per kind, read by the scenario schema (validation and its error hints) and by
``spraylab list``. The modes are fixed classes of :mod:`spraylab.transport` today; when they get
registries of their own, these functions read those and nothing that calls them changes."""

from __future__ import annotations


def recovery_modes() -> dict[str, str]:
    """``transport.recovery`` names -> summary, in listing order."""
    return {
        "gbn": "go-back-N (the ConnectX default): out-of-order packets are discarded and NACKed",
        "sr": "selective repeat (ConnectX-6 Dx/7 out-of-order placement, IRN-like): a bitmap of ooo_bitmap packets",
        "ideal": "reference, not an RNIC: accepts any order, SACKs every packet, an oracle reports each loss",
    }


def cc_modes() -> dict[str, str]:
    """``transport.cc`` names -> summary, in listing order."""
    return {
        "dcqcn": "DCQCN reaction point with ConnectX timing ([transport.dcqcn])",
        "none": "no congestion control: a QP sends at line rate (capped only by transport.window)",
    }
