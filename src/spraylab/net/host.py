"""Hosts (GPUs with their RDMA NICs) and the NIC's queue-pair scheduler (compiled:
``spraylab.core``). ``Host.route[dst]`` is the NIC that reaches ``dst``: a list, or for a host
with one NIC a :class:`UniformRoute`."""

from __future__ import annotations

from spraylab.core._core import Host, Nic

__all__ = ["Host", "Nic", "UniformRoute"]


class UniformRoute:
    """``Host.route`` of a host whose every destination is reached through one NIC: reads like
    the list of ``n`` equal entries, without its ``n`` slots (8 bytes per host and destination:
    0.5 GB on an 8192-host fabric). Only set-up code and the path tracer read it."""

    __slots__ = ("nic", "n")

    def __init__(self, nic: Nic, n: int) -> None:
        self.nic = nic
        self.n = n

    def __getitem__(self, dst: int) -> Nic:
        if not -self.n <= dst < self.n:
            raise IndexError(f"host {dst} out of range ({self.n} hosts)")
        return self.nic

    def __len__(self) -> int:
        return self.n
