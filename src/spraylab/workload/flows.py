"""The unit of work every workload produces: one message between two hosts."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class FlowSpec:
    """One message (one RDMA queue pair's transfer) from host ``src`` to host ``dst``.

    ``start_ps`` is the earliest start time. When ``deps`` is non-empty the flow starts
    ``start_ps`` after the last of the flows it depends on has been fully received
    (collectives are DAGs of such messages). ``group`` names the collective/phase the
    flow belongs to ("" for background traffic); metrics aggregate by it.
    """

    flow_id: int
    src: int
    dst: int
    size_bytes: int
    start_ps: int = 0
    deps: tuple[int, ...] = ()
    group: str = ""

    def __post_init__(self) -> None:
        if self.size_bytes <= 0:
            raise ValueError(f"flow {self.flow_id}: size_bytes must be > 0, got {self.size_bytes}")
        if self.src == self.dst:
            raise ValueError(f"flow {self.flow_id}: src and dst are both host {self.src}")
        if self.start_ps < 0:
            raise ValueError(f"flow {self.flow_id}: start_ps must be >= 0, got {self.start_ps}")
