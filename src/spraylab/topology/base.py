"""What every topology kind provides, and their registry.

A topology kind is one module of this package: a :class:`TopologySection` subclass (its
``[topology]`` keys, validated) that knows its host count, builds its :class:`Fabric` and
estimates its size for the size guard, decorated with :func:`register`. Nothing else changes to
add one: the scenario schema, its error hints and ``spraylab list`` read :data:`TOPOLOGIES`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar, Literal

from pydantic import Field, SerializerFunctionWrapHandler, model_serializer, model_validator

from spraylab.model.kinds import KindRegistry
from spraylab.model.types import Section, TimePs
from spraylab.net.link_events import action_names
from spraylab.topology.fabric import Fabric


class LinkEvent(Section):
    """A link failure, rate change or random loss from a given time (both directions).

    ``loss`` models bit errors (a flaky optic): each packet crossing the link is lost with
    ``loss_rate``, on a lossless fabric too, where PFC prevents buffer overflow but not
    corruption. Such drops are counted as random loss (``spraylab.net.drops``)."""

    at: TimePs = 0
    link: tuple[str, str]
    action: Literal[action_names()]  # type: ignore[valid-type]  # the registered link-event actions
    rate_fraction: float = Field(default=1.0, gt=0, le=1)
    loss_rate: float = Field(default=0.0, ge=0, lt=1)
    convergence: TimePs = 0
    parallel: int | None = Field(
        default=None,
        ge=0,
        description="only the n-th (0-based) of parallel links between the two; default all",
    )
    direction: Literal["both", "forward"] = Field(
        default="both",
        description="both directions, or forward: only from link[0] to link[1]",
    )
    scale_queue: bool = Field(
        default=False,
        description=(
            "action degrade: the port's ECN thresholds and its queue cap (switch.port_buffer) "
            "scale with rate_fraction too, as uet-htsim's failed links"
        ),
    )

    @model_validator(mode="after")
    def _scale_queue_degrades(self) -> LinkEvent:
        if self.scale_queue and self.action != "degrade":
            raise ValueError(
                f"topology.events[].scale_queue = true: only with action = 'degrade', not {self.action!r}"
            )
        return self

    @model_serializer(mode="wrap")
    def _dump(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        # Left out at their defaults (None: all links; both directions; rate only): TOML has
        # no null, and a dumped scenario identifies a run, so scenarios written before the
        # options existed stay the same runs.
        data = handler(self)
        if self.parallel is None:
            data.pop("parallel", None)
        if self.direction == "both":
            data.pop("direction", None)
        if not self.scale_queue:
            data.pop("scale_queue", None)
        return data


@dataclass(frozen=True, slots=True)
class FabricSize:
    """A fabric's size from its description alone (the size guard, ``spraylab.runs.budget``)."""

    hosts: int
    switches: int
    links: int
    host_rate_bps: int
    hops: int  # link hops of a path between two ToRs


class TopologySection(Section):
    """Base of the ``[topology]`` sections. Subclasses declare ``kind: Literal["x"] = "x"``
    first and ``events: list[LinkEvent] = []`` last (field order is the order of keys in
    listings and error hints)."""

    summary: ClassVar[str] = ""
    kind: str

    if TYPE_CHECKING:  # a field of every kind, declared there to keep it the last key
        events: list[LinkEvent]

    def n_hosts(self) -> int:
        raise NotImplementedError

    def build_fabric(self) -> Fabric:
        raise NotImplementedError

    def estimate_size(self) -> FabricSize:
        raise NotImplementedError


TOPOLOGIES: KindRegistry[TopologySection] = KindRegistry(
    "topology", TopologySection, "spraylab.topology", default_kind="leaf_spine"
)
register = TOPOLOGIES.register
