"""Scenarios: validated, unit-aware descriptions of one simulation run.

A scenario has the sections ``topology``, ``switch``, ``transport``, ``lb``, ``workload``,
``run`` and ``output``. Values take units (``"400Gbps"``, ``"2MB"``, ``"1us"``). Validation
rejects unknown keys and impossible values; :func:`format_errors` turns pydantic's report into
one line per problem naming the key, the value and what is allowed.
"""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Annotated, Any, Literal, Union

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    SerializerFunctionWrapHandler,
    ValidationError,
    ValidationInfo,
    field_validator,
    model_serializer,
    model_validator,
)

from spraylab.net.network import SwitchParams
from spraylab.transport.params import DcqcnParams
from spraylab.units import parse_bytes, parse_rate_bps, parse_time_ps

RateBps = Annotated[int, BeforeValidator(parse_rate_bps), Field(gt=0)]
Bytes = Annotated[int, BeforeValidator(parse_bytes), Field(ge=0)]
PositiveBytes = Annotated[int, BeforeValidator(parse_bytes), Field(gt=0)]
TimePs = Annotated[int, BeforeValidator(parse_time_ps), Field(ge=0)]
PositiveTimePs = Annotated[int, BeforeValidator(parse_time_ps), Field(gt=0)]


class Section(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


# --- topology ------------------------------------------------------------------------


class LinkEvent(Section):
    """A link failure, rate change or random loss from a given time (both directions).

    ``loss`` models bit errors (a flaky optic): each packet crossing the link is lost with
    ``loss_rate``, on a lossless fabric too, where PFC prevents buffer overflow but not
    corruption. Such drops are counted as random loss (``spraylab.net.drops``)."""

    at: TimePs = 0
    link: tuple[str, str]
    action: Literal["down", "degrade", "loss"]
    rate_fraction: float = Field(default=1.0, gt=0, le=1)
    loss_rate: float = Field(default=0.0, ge=0, lt=1)
    convergence: TimePs = 0
    parallel: int | None = Field(
        default=None,
        ge=0,
        description="only the n-th (0-based) of parallel links between the two; default all",
    )

    @model_serializer(mode="wrap")
    def _dump(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        # Left out when None (all links): TOML has no null, and a dumped scenario identifies a
        # run, so scenarios written before the option existed stay the same runs.
        data = handler(self)
        if self.parallel is None:
            data.pop("parallel", None)
        return data


class LeafSpineTopology(Section):
    kind: Literal["leaf_spine"] = "leaf_spine"
    leaves: int = Field(default=8, ge=1)
    spines: int = Field(default=8, ge=1)
    hosts_per_leaf: int | None = Field(default=None, ge=1)
    hosts: int | None = Field(default=None, ge=2)
    host_rate: RateBps = 400_000_000_000
    uplink_rate: RateBps | None = None
    links_per_spine: int = Field(default=1, ge=1)
    link_delay: TimePs = 1_000_000
    events: list[LinkEvent] = []

    @model_validator(mode="after")
    def _hosts(self) -> LeafSpineTopology:
        if self.hosts is not None:
            if self.hosts % self.leaves:
                raise ValueError(
                    f"topology.hosts = {self.hosts}: must be divisible by topology.leaves = {self.leaves}"
                )
            if self.hosts_per_leaf is not None and self.hosts_per_leaf * self.leaves != self.hosts:
                raise ValueError(
                    f"topology.hosts = {self.hosts}: contradicts hosts_per_leaf x leaves = "
                    f"{self.hosts_per_leaf * self.leaves}; give only one of them"
                )
        return self

    @property
    def n_hosts_per_leaf(self) -> int:
        if self.hosts_per_leaf is not None:
            return self.hosts_per_leaf
        return self.hosts // self.leaves if self.hosts is not None else 8


class FatTreeTopology(Section):
    kind: Literal["fat_tree"]
    k: int = Field(default=8, ge=2)
    rate: RateBps = 100_000_000_000
    link_delay: TimePs = 1_000_000
    events: list[LinkEvent] = []

    @field_validator("k")
    @classmethod
    def _even(cls, k: int) -> int:
        if k % 2:
            raise ValueError(f"topology.k = {k}: a fat-tree needs an even k")
        return k


class RailTopology(Section):
    kind: Literal["rail"]
    servers: int = Field(default=8, ge=2)
    gpus_per_server: int = Field(default=8, ge=1)
    spines: int = Field(default=8, ge=1)
    nic_rate: RateBps = 400_000_000_000
    spine_rate: RateBps | None = None
    nvlink_rate: RateBps = 3_600_000_000_000
    link_delay: TimePs = 1_000_000
    nvlink_delay: TimePs = 250_000
    events: list[LinkEvent] = []


Topology = Annotated[
    Union[LeafSpineTopology, FatTreeTopology, RailTopology],  # noqa: UP007
    Field(discriminator="kind"),
]


def _default_topology_kind(value: Any) -> Any:
    if isinstance(value, dict) and "kind" not in value:
        return {**value, "kind": "leaf_spine"}
    return value


# --- switch, transport ------------------------------------------------------------------

_SWITCH = SwitchParams()
_DCQCN = DcqcnParams()


class SwitchSection(Section):
    buffer: PositiveBytes = 64_000_000
    dt_alpha: float = Field(default=1.0, gt=0)
    lossless: bool = False
    pfc_xoff: Bytes = 0
    pfc_xon: Bytes = 0
    ecn: bool = True
    ecn_kmin_per_100g: PositiveBytes = _SWITCH.ecn_kmin_bytes_per_100g
    ecn_kmax_per_100g: PositiveBytes = _SWITCH.ecn_kmax_bytes_per_100g
    ecn_pmax: float = Field(default=_SWITCH.ecn_pmax, ge=0, le=1)
    ecn_mark_at: Literal["dequeue", "enqueue"] = _SWITCH.ecn_mark_at

    @model_validator(mode="after")
    def _thresholds(self) -> SwitchSection:
        if self.ecn_kmin_per_100g > self.ecn_kmax_per_100g:
            raise ValueError(
                f"switch.ecn_kmin_per_100g = {self.ecn_kmin_per_100g}: must not exceed "
                f"ecn_kmax_per_100g = {self.ecn_kmax_per_100g}"
            )
        if self.pfc_xon and self.pfc_xoff and self.pfc_xon > self.pfc_xoff:
            raise ValueError(f"switch.pfc_xon = {self.pfc_xon}: must not exceed pfc_xoff = {self.pfc_xoff}")
        return self


class DcqcnSection(Section):
    """Defaults: ``spraylab.transport.params.DcqcnParams`` (ConnectX firmware, with sources)."""

    g: float = Field(default=_DCQCN.g, gt=0, le=1)
    alpha_timer: PositiveTimePs = _DCQCN.alpha_timer_ps
    rate_decrease_interval: PositiveTimePs = _DCQCN.rate_decrease_interval_ps
    increase_timer: PositiveTimePs = _DCQCN.increase_timer_ps
    byte_counter: PositiveBytes = _DCQCN.byte_counter_bytes
    fast_recovery_rounds: int = Field(default=_DCQCN.fast_recovery_rounds, ge=0)
    rate_ai_per_100g: RateBps = _DCQCN.rate_ai_bps_per_100g
    rate_hai_per_100g: RateBps = _DCQCN.rate_hai_bps_per_100g
    min_rate: RateBps = _DCQCN.min_rate_bps
    cnp_interval: TimePs = _DCQCN.cnp_interval_ps


class TransportSection(Section):
    cc: Literal["dcqcn", "none"] = "dcqcn"
    recovery: Literal["gbn", "sr", "ideal"] = "gbn"
    mtu: PositiveBytes = 4096
    ooo_bitmap: int = Field(default=128, ge=1)
    cnp_on_ooo: bool | None = None
    nack_timer: TimePs = 4_000_000
    rto: PositiveTimePs = 1_000_000_000
    # ACK coalescing (spraylab.transport.receiver): an ACK per ack_every accepted packets, per
    # ack_every_bytes payload bytes or ack_delay after the first unacknowledged packet,
    # whichever comes first; 0 turns one off.
    ack_every: int = Field(default=1, ge=0)
    ack_every_bytes: Bytes = 0
    ack_delay: TimePs = 0
    window: Bytes = 0
    dcqcn: DcqcnSection = DcqcnSection()

    @model_validator(mode="after")
    def _coalescing(self) -> TransportSection:
        for key, value in (("ack_every_bytes", self.ack_every_bytes), ("ack_delay", self.ack_delay)):
            if value and self.ack_every == 1:
                raise ValueError(
                    f"transport.{key} = {value}: no effect while ack_every = 1 (an ACK per packet); "
                    "set ack_every = 0 (off) or above 1"
                )
        if not (self.ack_every or self.ack_every_bytes or self.ack_delay):
            raise ValueError(
                "transport.ack_every = 0: with ack_every_bytes and ack_delay also 0 nothing would "
                "be acknowledged before the last packet; set ack_every >= 1, ack_every_bytes or ack_delay"
            )
        return self


# --- load balancer ------------------------------------------------------------------------


class LbSection(BaseModel):
    """``scheme`` names a registered scheme; every other key is one of its parameters,
    validated by the scheme's own parameter model when the run is built."""

    model_config = ConfigDict(extra="allow", frozen=True)
    scheme: str = "ecmp"

    @field_validator("scheme")
    @classmethod
    def _known(cls, name: str) -> str:
        from spraylab.lb.base import REGISTRY, load_builtin_schemes

        load_builtin_schemes()
        if name not in REGISTRY:
            raise ValueError(f"unknown scheme; allowed: {', '.join(sorted(REGISTRY))}")
        return name

    @model_validator(mode="after")
    def _params(self) -> LbSection:
        from spraylab.lb.base import REGISTRY, load_builtin_schemes

        load_builtin_schemes()
        params_model = REGISTRY[self.scheme].Params
        try:
            params_model(**self.params)
        except ValidationError as exc:
            # Parameters are flat: one entry per parameter, whose union members (an int or
            # "auto") each add an error, read as alternatives.
            problems: dict[str, tuple[Any, list[str]]] = {}
            for error in exc.errors():
                key = str(error["loc"][0]) if error["loc"] else ""
                msg = str(error["msg"]).removeprefix("Value error, ")
                if error["type"] == "extra_forbidden":
                    allowed = ", ".join(params_model.model_fields) or "none"
                    msg = f"unknown parameter of scheme {self.scheme!r}; allowed: {allowed}"
                value, msgs = problems.setdefault(key, (error.get("input"), []))
                msgs.append(msg if not msgs else msg.removeprefix("Input should be "))
            raise ValueError(
                "; ".join(
                    f"lb.{key} = {value!r}: {', or '.join(msgs)}" for key, (value, msgs) in problems.items()
                )
            ) from None
        return self

    @property
    def params(self) -> dict[str, Any]:
        return dict(self.model_extra or {})


# --- workload ---------------------------------------------------------------------------


class PermutationWorkload(Section):
    kind: Literal["permutation"]
    size: PositiveBytes = 2_000_000
    start: TimePs = 0
    cross_tor: bool = True  # never pair two hosts of the same ToR when avoidable


class IncastWorkload(Section):
    kind: Literal["incast"]
    size: PositiveBytes = 2_000_000
    start: TimePs = 0
    senders: int = Field(default=16, ge=1)
    receiver: int = Field(default=0, ge=0)


def _check_peers_in_flight(value: int) -> int:
    if value < 0:
        raise ValueError("must be >= 0: 0 = every peer at once, P >= 1 = at most P peers per rank")
    return value


# All-to-all: how many peers a rank sends to (and receives from) at once (0 = all of them, as before the option
# existed). Collective libraries bound it (MPI pairwise exchange: 1; NCCL: a few p2p channels),
# which changes what spraying does to go-back-N: see workload.collectives.all_to_all_collective.
PeersInFlight = Annotated[int, AfterValidator(_check_peers_in_flight)]


def _dump_without_default_window(model: BaseModel, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
    """The section's dump, without ``peers_in_flight`` when it is 0 (the default).

    A dumped scenario identifies a run (store keys), so leaving the
    default out keeps every scenario written before the option existed the same run as before."""
    data = handler(model)
    if not getattr(model, "peers_in_flight", 0):
        data.pop("peers_in_flight", None)
    return data


class AllToAllWorkload(Section):
    kind: Literal["all_to_all"]
    size: PositiveBytes = 1_000_000
    start: TimePs = 0
    hosts: int = Field(default=0, ge=0)  # 0 = every host
    peers_in_flight: PeersInFlight = 0  # 0 = all hosts - 1 peers at once; else 1 .. hosts - 1

    @model_serializer(mode="wrap")
    def _dump(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        return _dump_without_default_window(self, handler)


class RandomPairsWorkload(Section):
    kind: Literal["random_pairs"]
    size: PositiveBytes = 1_000_000
    start: TimePs = 0
    flows: int = Field(default=64, ge=1)


class CdfWorkload(Section):
    kind: Literal["cdf"]
    cdf: str = "websearch"
    load: float = Field(default=0.5, gt=0, le=1)
    duration: PositiveTimePs = 1_000_000_000
    start: TimePs = 0

    @field_validator("cdf")
    @classmethod
    def _known_cdf(cls, name: str) -> str:
        from spraylab.workload.cdf import FlowSizeCdf

        if name.lower() not in FlowSizeCdf.names():
            raise ValueError(f"unknown flow-size distribution; allowed: {', '.join(FlowSizeCdf.names())}")
        return name.lower()


class CollectiveWorkload(Section):
    kind: Literal["collective"]
    collective: Literal["allreduce", "allgather", "reducescatter", "alltoall"] = "allreduce"
    size: PositiveBytes = 8_000_000
    hosts: int = Field(default=0, ge=0)  # 0 = every host
    start: TimePs = 0
    peers_in_flight: PeersInFlight = 0  # collective = "alltoall" only, as in AllToAllWorkload

    @model_serializer(mode="wrap")
    def _dump(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        return _dump_without_default_window(self, handler)


RailStrategy = Literal["rail_matched", "rail_local", "rail_spray", "rails"]


class MoeWorkload(Section):
    """MoE all-to-all (dispatch and/or combine) on a rail-optimized cluster, sent with one of the
    rail strategies of ``spraylab.workload.rail_strategies`` (see docs/rails.md)."""

    kind: Literal["moe"]
    model: Literal["mixtral-8x7b", "mixtral-8x22b"] = "mixtral-8x7b"
    tokens_per_gpu: int = Field(default=256, ge=1)
    bytes_per_element: int = Field(default=2, ge=1)
    zipf_s: float = Field(default=0.0, ge=0)
    dirichlet_alpha: float | None = Field(default=None, gt=0)
    seed_offset: int = 0  # the routing seed is run.seed + seed_offset
    phase: Literal["dispatch", "combine", "both"] = "dispatch"
    expert_compute: TimePs = 0  # phase "both": combine starts this long after the dispatch ends
    strategy: RailStrategy = "rails"
    chunk: PositiveBytes = 512_000  # RailS largest chunk (strategy "rails"); sizes follow per-pair volume
    chunk_overhead: TimePs = 0  # RailS: each rail's sender posts at most one chunk per this time
    start: TimePs = 0

    @field_validator("dirichlet_alpha")
    @classmethod
    def _one_skew(cls, alpha: float | None, info: ValidationInfo) -> float | None:
        zipf_s = info.data.get("zipf_s")
        if alpha is not None and zipf_s:
            raise ValueError(f"give one skew: zipf_s = {zipf_s} is set too; use zipf_s or dirichlet_alpha")
        return alpha


class RailAllToAllWorkload(Section):
    """Uniform all-to-all among every GPU of a rail-optimized cluster, ``size`` bytes per ordered
    GPU pair, sent with one of the rail strategies."""

    kind: Literal["rail_alltoall"]
    size: PositiveBytes = 64_000
    strategy: RailStrategy = "rails"
    chunk: PositiveBytes = 512_000
    chunk_overhead: TimePs = 0
    start: TimePs = 0


Workload = Annotated[
    Union[  # noqa: UP007
        PermutationWorkload,
        IncastWorkload,
        AllToAllWorkload,
        RandomPairsWorkload,
        CdfWorkload,
        CollectiveWorkload,
        MoeWorkload,
        RailAllToAllWorkload,
    ],
    Field(discriminator="kind"),
]


# --- run, output ------------------------------------------------------------------------


class RunSection(Section):
    seed: int = 1
    time_limit: PositiveTimePs = 100_000_000_000
    max_events: int = Field(default=0, ge=0)  # 0 = no budget
    max_wall_s: float = Field(default=0, ge=0)  # 0 = no budget
    stop: Literal["workload", "time"] = "workload"
    progress: bool = True
    # Skip the size guard (spraylab.budget): run even when the estimate exceeds the memory limit
    # or the flow/packet caps.
    allow_large: bool = False

    @model_serializer(mode="wrap")
    def _dump(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        # Left out when false, so scenarios written before the option existed stay the same runs.
        data = handler(self)
        if not self.allow_large:
            data.pop("allow_large", None)
        return data


class OutputSection(Section):
    name: str = ""
    dir: str = ""


class Scenario(Section):
    """One simulation run, fully described. Build from a TOML file with :meth:`load`, from a
    dict with :meth:`from_dict`, or directly from the section models."""

    topology: Annotated[Topology, BeforeValidator(_default_topology_kind)] = LeafSpineTopology()
    switch: SwitchSection = SwitchSection()
    transport: TransportSection = TransportSection()
    lb: LbSection = Field(default_factory=LbSection)
    workload: list[Workload]
    run: RunSection = RunSection()
    output: OutputSection = OutputSection()

    @field_validator("workload", mode="before")
    @classmethod
    def _one_or_many(cls, value: Any) -> Any:
        return [value] if isinstance(value, dict) else value

    @model_validator(mode="after")
    def _fits_fabric(self) -> Scenario:
        n = n_hosts(self.topology)
        if not self.workload:
            # A run with nothing to send is a mistake, not an empty result. (A cdf workload whose
            # Poisson draw happens to be empty is valid: an empty, completed result.)
            raise ValueError("workload = []: no workload; give at least one [workload] table")
        for i, w in enumerate(self.workload):
            where = f"workload[{i}]" if len(self.workload) > 1 else "workload"
            ranks = getattr(w, "hosts", 0) or n
            if ranks < 2 and not isinstance(w, (MoeWorkload, RailAllToAllWorkload)):
                key = f"{where}.hosts = {w.hosts}" if getattr(w, "hosts", 0) else f"{where}.kind = {w.kind!r}"
                raise ValueError(f"{key}: needs at least 2 hosts to send between, got {ranks}")
            if isinstance(w, IncastWorkload):
                if w.receiver >= n:
                    raise ValueError(f"{where}.receiver = {w.receiver}: must be a host id below {n}")
                if w.senders > n - 1:
                    raise ValueError(f"{where}.senders = {w.senders}: at most {n - 1} on a {n}-host fabric")
            if isinstance(w, (AllToAllWorkload, CollectiveWorkload)) and w.hosts > n:
                raise ValueError(f"{where}.hosts = {w.hosts}: at most {n} on this fabric")
            if isinstance(w, CollectiveWorkload) and w.peers_in_flight and w.collective != "alltoall":
                # Checked here rather than on the field: the error line can then name the key as
                # written (the "collective" union tag doubles as a field name of this section).
                raise ValueError(
                    f"{where}.peers_in_flight = {w.peers_in_flight}: only for collective = 'alltoall' "
                    f"(a ring {w.collective} has one message per rank in flight anyway); use 0"
                )
            if isinstance(w, (AllToAllWorkload, CollectiveWorkload)) and w.peers_in_flight:
                ranks = w.hosts or n
                if w.peers_in_flight > ranks - 1:
                    raise ValueError(
                        f"{where}.peers_in_flight = {w.peers_in_flight}: at most {ranks - 1} (the other "
                        f"ranks of a {ranks}-rank all-to-all); 0 = all of them at once"
                    )
            if isinstance(w, (MoeWorkload, RailAllToAllWorkload)) and not isinstance(
                self.topology, RailTopology
            ):
                raise ValueError(
                    f"{where}.kind = {w.kind!r}: needs a rail-optimized cluster (topology.kind = 'rail'), "
                    f"got topology.kind = {self.topology.kind!r}"
                )
        strategies = {getattr(w, "strategy", None) for w in self.workload}
        if self.lb.scheme == "ecmp" and {"rail_spray", "rail_local"} <= strategies:
            raise ValueError(
                "workload.strategy = 'rail_spray': switches the whole run to per-packet spraying "
                "(lb.scheme = 'rps'), so it cannot share a run with strategy 'rail_local' under ecmp"
            )
        return self

    # --- construction helpers -----------------------------------------------------------
    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Scenario:
        return cls.model_validate(data)

    @classmethod
    def load(cls, path: str | Path) -> Scenario:
        return validate(read_toml(path, "scenario"), source=str(path))

    def to_dict(self) -> dict[str, Any]:
        return self.model_dump(mode="json")

    def with_overrides(self, overrides: dict[str, Any]) -> Scenario:
        """A copy with dotted keys replaced, e.g. ``{"lb.scheme": "rps", "run.seed": 2}``. A new
        ``lb.scheme`` keeps the base's scheme parameters it accepts and drops the others;
        ``{"lb": {...}}`` replaces the whole section."""
        data = self.to_dict()
        for key, value in overrides.items():
            apply_override(data, key, value)
        return validate(data)

    @property
    def name(self) -> str:
        return self.output.name or f"{self.topology.kind}-{self.workload[0].kind}-{self.lb.scheme}"


def n_hosts(topology: LeafSpineTopology | FatTreeTopology | RailTopology) -> int:
    if isinstance(topology, LeafSpineTopology):
        return topology.leaves * topology.n_hosts_per_leaf
    if isinstance(topology, FatTreeTopology):
        return topology.k**3 // 4
    return topology.servers * topology.gpus_per_server


# --- errors -------------------------------------------------------------------------------


class ScenarioError(ValueError):
    """A scenario that cannot be run; ``lines`` holds one message per problem."""

    def __init__(self, lines: list[str]) -> None:
        super().__init__("\n".join(lines))
        self.lines = lines


def read_toml(path: str | Path, what: str) -> dict[str, Any]:
    """A TOML file as a dict; unreadable or malformed files raise a one-line ScenarioError."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ScenarioError([f"{path}: cannot read {what} file ({exc.strerror or exc})"]) from None
    except UnicodeDecodeError as exc:
        raise ScenarioError(
            [
                f"{path}: not a text file (byte {exc.object[exc.start]:#04x} at offset {exc.start} is not "
                f"UTF-8); a {what} file is TOML text"
            ]
        ) from None
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ScenarioError([f"{path}: not valid TOML: {exc}"]) from None


def set_dotted(data: dict[str, Any], key: str, value: Any) -> None:
    """Set a dotted key (``run.seed``, ``workload.1.size``) in a raw scenario dict. A name applied
    to a list sets it in every entry (``workload.size`` on several ``[[workload]]`` tables); a
    number indexes it. A key that reaches into a plain value or past a list's end raises a
    one-line :class:`ScenarioError`."""
    _set_path(data, key.split("."), value, key, [])


def _set_path(node: Any, parts: list[str], value: Any, key: str, seen: list[str]) -> None:
    part, rest = parts[0], parts[1:]
    where = ".".join(seen)
    if isinstance(node, list):
        if not part.isdigit():
            if not node:
                raise ScenarioError([f"{key} = {value!r}: {where} is an empty list; nothing to set in it"])
            for item in node:
                _set_path(item, parts, value, key, seen)
            return
        index = int(part)
        if index >= len(node):
            allowed = f"index 0..{len(node) - 1}" if node else "it is empty"
            raise ScenarioError([f"{key} = {value!r}: {where} has {len(node)} entries; {allowed}"])
        if not rest:
            node[index] = value
        else:
            _set_path(node[index], rest, value, key, [*seen, part])
        return
    if not isinstance(node, dict):
        raise ScenarioError(
            [f"{key} = {value!r}: {where} is the value {node!r}, not a section; nothing inside it to set"]
        )
    if not rest:
        node[part] = value
        return
    _set_path(node.setdefault(part, {}), rest, value, key, [*seen, part])


def switch_scheme(lb: Any, scheme: Any) -> dict[str, Any]:
    """The ``lb`` section after ``lb.scheme`` is set to ``scheme``: the base's parameters that the
    new scheme accepts carry over, the others are dropped (they belong to the old scheme)."""
    from spraylab.lb.base import REGISTRY, load_builtin_schemes

    load_builtin_schemes()
    cls = REGISTRY.get(scheme) if isinstance(scheme, str) else None
    if cls is None or not isinstance(lb, dict):
        return {"scheme": scheme}  # validation reports the unknown scheme
    return {"scheme": scheme, **{k: v for k, v in lb.items() if k in cls.Params.model_fields}}


def apply_override(data: dict[str, Any], key: str, value: Any) -> None:
    """One override of :meth:`Scenario.with_overrides` and of sweep axes: ``set_dotted``, except
    that a new ``lb.scheme`` keeps only the parameters it accepts (:func:`switch_scheme`)."""
    if key == "lb.scheme":
        data["lb"] = switch_scheme(data.get("lb", {}), value)
    else:
        set_dotted(data, key, value)


def validate(data: dict[str, Any], source: str = "") -> Scenario:
    """Validate a scenario dict; raise :class:`ScenarioError` with one line per problem."""
    try:
        return Scenario.model_validate(data)
    except ValidationError as exc:
        prefix = f"{source}: " if source else ""
        raise ScenarioError([prefix + line for line in format_errors(exc, data)]) from None


_TAGS = {
    "leaf_spine",
    "fat_tree",
    "rail",
    "permutation",
    "incast",
    "all_to_all",
    "random_pairs",
    "cdf",
    "collective",
    "moe",
    "rail_alltoall",
}


def _loc(error: dict[str, Any], data: dict[str, Any]) -> tuple[str, Any]:
    """Dotted key without pydantic's union-tag components, and the offending input value."""
    parts: list[str] = []
    node: Any = data
    tag_seen = None  # the section whose union tag was skipped last
    for item in error["loc"]:
        # A union tag is the section's own kind; "collective" is both a tag and a field name,
        # so a tag that is also a key is the tag when it equals the section's kind, once.
        if (
            isinstance(item, str)
            and item in _TAGS
            and not (
                isinstance(node, dict) and item in node and (node.get("kind") != item or tag_seen is node)
            )
        ):
            tag_seen = node
            continue
        if isinstance(item, int):
            if parts and isinstance(node, list):
                parts[-1] = f"{parts[-1]}[{item}]"
            elif parts and isinstance(node, dict):
                continue  # a single table given for a list: no index to show
        else:
            parts.append(item)
        if (
            isinstance(node, dict)
            and item in node
            or isinstance(node, list)
            and isinstance(item, int)
            and item < len(node)
        ):
            node = node[item]
        else:
            node = None
    return ".".join(parts), error.get("input")


def _kinds(key: str) -> str:
    """The kinds a tagged section accepts (pydantic leaves them out when ``kind`` is missing)."""
    import typing

    union = Workload if key.startswith("workload") else Topology
    models = typing.get_args(typing.get_args(union)[0])
    return ", ".join(repr(typing.get_args(m.model_fields["kind"].annotation)[0]) for m in models)


def _allowed_keys(raw_loc: tuple[Any, ...]) -> str:
    """The keys the section holding an unknown key accepts."""
    tagged = {
        "leaf_spine": LeafSpineTopology,
        "fat_tree": FatTreeTopology,
        "rail": RailTopology,
        "permutation": PermutationWorkload,
        "incast": IncastWorkload,
        "all_to_all": AllToAllWorkload,
        "random_pairs": RandomPairsWorkload,
        "cdf": CdfWorkload,
        "collective": CollectiveWorkload,
        "moe": MoeWorkload,
        "rail_alltoall": RailAllToAllWorkload,
    }
    model: Any = Scenario
    for item in raw_loc[:-1]:
        if isinstance(item, int):
            continue
        if item in tagged:
            model = tagged[item]
            continue
        field = model.model_fields.get(item)
        if field is None:
            return ""
        section = _section_model(field.annotation)
        if section is not None:
            model = section
    return ", ".join(model.model_fields)


def _section_model(annotation: Any) -> type[BaseModel] | None:
    """The section model of a field: itself, or the item of a list or optional of one
    (``topology.events`` is ``list[LinkEvent]``: an unknown key there lists LinkEvent's keys)."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    import typing

    for arg in typing.get_args(annotation):
        found = _section_model(arg)
        if found is not None:
            return found
    return None


def format_errors(exc: ValidationError, data: dict[str, Any]) -> list[str]:
    lines: list[str] = []
    for error in exc.errors():
        key, value = _loc(error, data)
        kind = error["type"]
        msg = str(error.get("msg", "")).removeprefix("Value error, ")
        if kind == "extra_forbidden":
            allowed = _allowed_keys(tuple(error["loc"]))
            lines.append(
                f"{key} = {value!r}: unknown key" + (f"; allowed keys: {allowed}" if allowed else "")
            )
        elif kind == "missing" and error["loc"] and isinstance(error["loc"][-1], int):
            # An item of a fixed-length list (a link's two ends): show the list as given.
            parent = key.rpartition("[")[0]
            lines.append(f"{parent} = {value!r}: too few items (item {error['loc'][-1]} is missing)")
        elif kind == "missing":
            lines.append(f"{key}: missing; this section or key is required")
        elif kind == "union_tag_invalid":
            expected = error.get("ctx", {}).get("expected_tags", "")
            lines.append(
                f"{key}.kind = {error['input'].get('kind') if isinstance(error['input'], dict) else error['input']!r}: unknown kind; allowed: {expected}"
            )
        elif kind == "union_tag_not_found":
            lines.append(f"{key}: missing 'kind'; allowed: {_kinds(key)}")
        elif msg.startswith(f"{key} ") or (key and msg.startswith(key.split(".")[0] + ".")):
            lines.append(msg)
        else:
            lines.append(f"{key} = {value!r}: {msg}" if key else msg)
    return lines
