"""Scenarios: validated, unit-aware descriptions of one simulation run.

A scenario has the sections ``topology``, ``switch``, ``transport``, ``lb``, ``workload``,
``run`` and ``output``. Values take units (``"400Gbps"``, ``"2MB"``, ``"1us"``). Validation
rejects unknown keys and impossible values, with one line per problem naming the key, the value
and what is allowed (:mod:`spraylab.model.errors`).

Sections with a kind are registered, one module per kind: topologies in ``spraylab.topology``
(:data:`~spraylab.topology.base.TOPOLOGIES`), workloads in ``spraylab.workload.kinds``
(:data:`~spraylab.workload.base.WORKLOADS`), load balancers in ``spraylab.lb``, congestion
controls (with their own ``[transport.NAME]`` sections) in ``spraylab.transport.cc``. The switch
and transport sections mirror the dataclasses the simulator reads (``SwitchParams``,
``TransportParams``, each congestion control's ``params_type``) and take their defaults from them.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    SerializeAsAny,
    SerializerFunctionWrapHandler,
    ValidationError,
    ValidatorFunctionWrapHandler,
    WrapValidator,
    create_model,
    field_validator,
    model_serializer,
    model_validator,
)

from spraylab.model.errors import Problem, ScenarioError, format_errors, problems_of, read_toml
from spraylab.model.files import allowing_large
from spraylab.model.overrides import apply_override, set_dotted, switch_scheme
from spraylab.model.types import (
    Bytes,
    BytesOrBdp,
    PositiveBytes,
    PositiveTimePs,
    RateBps,
    Section,
    TimePs,
    one_of,
    param,
    to_params,
)
from spraylab.net.network import SwitchParams
from spraylab.topology.base import TOPOLOGIES, LinkEvent, TopologySection
from spraylab.topology.fat_tree import FatTreeTopology
from spraylab.topology.leaf_spine import LeafSpineTopology
from spraylab.topology.rail import RailTopology
from spraylab.transport.cc.base import cc_sections
from spraylab.transport.params import DcqcnSection, TransportParams
from spraylab.transport.registry import cc_modes, fluid_refused_cc, recovery_modes
from spraylab.workload.base import WORKLOADS, WorkloadSection
from spraylab.workload.kinds.all_to_all import AllToAllWorkload
from spraylab.workload.kinds.cdf import CdfWorkload
from spraylab.workload.kinds.collective import CollectiveWorkload
from spraylab.workload.kinds.incast import IncastWorkload
from spraylab.workload.kinds.moe import MoeWorkload
from spraylab.workload.kinds.permutation import PermutationWorkload
from spraylab.workload.kinds.rail_alltoall import RailAllToAllWorkload
from spraylab.workload.kinds.random_pairs import RandomPairsWorkload
from spraylab.workload.rail_strategies import RailStrategyName

__all__ = [
    # the schema
    "Scenario",
    "SwitchSection",
    "TransportSection",
    "DcqcnSection",
    "LbSection",
    "RunSection",
    "OutputSection",
    "Section",
    "Topology",
    "Workload",
    "LinkEvent",
    "TopologySection",
    "WorkloadSection",
    "validate",
    "n_hosts",
    # re-exported from the modules that define them
    "AllToAllWorkload",
    "Bytes",
    "CdfWorkload",
    "CollectiveWorkload",
    "FatTreeTopology",
    "IncastWorkload",
    "LeafSpineTopology",
    "MoeWorkload",
    "PermutationWorkload",
    "PositiveBytes",
    "PositiveTimePs",
    "RailAllToAllWorkload",
    "RailStrategyName",
    "RailTopology",
    "RandomPairsWorkload",
    "Problem",
    "RateBps",
    "ScenarioError",
    "TimePs",
    "apply_override",
    "format_errors",
    "problems_of",
    "read_toml",
    "set_dotted",
    "switch_scheme",
]

# A ``[topology]`` or ``[[workload]]`` table, validated by the model its ``kind`` registers.
Topology = TOPOLOGIES.field_type()
Workload = WORKLOADS.field_type()

# --- switch, transport ------------------------------------------------------------------

_SWITCH = SwitchParams()
_TRANSPORT = TransportParams()


class SwitchSection(Section):
    """Defaults and meaning: ``spraylab.net.network.SwitchParams``."""

    buffer: PositiveBytes = param(_SWITCH, "buffer_bytes")
    dt_alpha: float = param(_SWITCH, "dt_alpha", gt=0)
    lossless: bool = param(_SWITCH, "lossless")
    pfc_xoff: Bytes = param(_SWITCH, "pfc_xoff_bytes")
    pfc_xon: Bytes = param(_SWITCH, "pfc_xon_bytes")
    ecn: bool = param(_SWITCH, "ecn")
    ecn_kmin_per_100g: PositiveBytes = param(_SWITCH, "ecn_kmin_bytes_per_100g")
    ecn_kmax_per_100g: PositiveBytes = param(_SWITCH, "ecn_kmax_bytes_per_100g")
    ecn_pmax: float = param(_SWITCH, "ecn_pmax", ge=0, le=1)
    ecn_mark_at: Literal["dequeue", "enqueue"] = param(_SWITCH, "ecn_mark_at")
    trimming: bool = param(_SWITCH, "trimming")
    port_buffer: Bytes = param(_SWITCH, "port_buffer_bytes")

    @model_validator(mode="after")
    def _thresholds(self) -> SwitchSection:
        if self.trimming and self.lossless:
            raise ValueError(
                "switch.trimming = true: a lossless fabric (switch.lossless = true) never drops for "
                "buffer, so nothing is trimmed; set one of them false"
            )
        if self.ecn_kmin_per_100g > self.ecn_kmax_per_100g:
            raise ValueError(
                f"switch.ecn_kmin_per_100g = {self.ecn_kmin_per_100g}: must not exceed "
                f"ecn_kmax_per_100g = {self.ecn_kmax_per_100g}"
            )
        if self.pfc_xon and self.pfc_xoff and self.pfc_xon > self.pfc_xoff:
            raise ValueError(f"switch.pfc_xon = {self.pfc_xon}: must not exceed pfc_xoff = {self.pfc_xoff}")
        return self

    @model_serializer(mode="wrap")
    def _dump(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        # Left out at its default, so scenarios written before the option stay the same runs.
        data = handler(self)
        if not self.trimming:
            data.pop("trimming", None)
        if not self.port_buffer:
            data.pop("port_buffer", None)
        return data

    def to_params(self) -> SwitchParams:
        return to_params(self, SwitchParams)


# The congestion controls' own sections of [transport] are left out of a scenario's dump at their
# defaults, so scenarios written before a control existed keep their store keys; DCQCN's was
# there from the start, and is always written.
_ALWAYS_DUMPED = frozenset({"dcqcn"})


# The congestion controls' own sections (``[transport.dcqcn]``, ``[transport.nscc]``, ...) are
# fields of TransportSection.registered_model(): this model with one field per registered control
# that declares a ``params_section`` (its ``section_model``). Scenarios are validated against it
# at validation time, so a control registered after this module was imported is usable at once.
class TransportSection(Section):
    """Defaults and meaning: ``spraylab.transport.params.TransportParams``; ``cc`` and
    ``recovery`` name modes of ``spraylab.transport.registry``."""

    cc: str = param(_TRANSPORT, "cc")
    recovery: str = param(_TRANSPORT, "recovery")
    mtu: PositiveBytes = param(_TRANSPORT, "mtu_bytes")
    ooo_bitmap: int = param(_TRANSPORT, "ooo_bitmap_packets", ge=1)
    cnp_on_ooo: bool | None = param(_TRANSPORT, "cnp_on_ooo")
    nack_timer: TimePs = param(_TRANSPORT, "nack_timer_ps")
    rto: PositiveTimePs = param(_TRANSPORT, "rto_ps")
    # ACK coalescing (spraylab.transport.receiver): an ACK per ack_every accepted packets, per
    # ack_every_bytes payload bytes or ack_delay after the first unacknowledged packet,
    # whichever comes first; 0 turns one off.
    ack_every: int = param(_TRANSPORT, "ack_every", ge=0)
    ack_every_bytes: Bytes = param(_TRANSPORT, "ack_every_bytes")
    ack_delay: TimePs = param(_TRANSPORT, "ack_delay_ps")
    ack_bytes: Literal["payload", "wire", "htsim"] = param(_TRANSPORT, "ack_bytes")
    window: BytesOrBdp = param(_TRANSPORT, "window_bytes")

    @field_validator("cc")
    @classmethod
    def _known_cc(cls, name: str) -> str:
        if name not in cc_modes():
            raise ValueError(f"unknown congestion control; allowed: {one_of(list(cc_modes()))}")
        return name

    @field_validator("recovery")
    @classmethod
    def _known_recovery(cls, name: str) -> str:
        if name not in recovery_modes():
            raise ValueError(f"unknown recovery mode; allowed: {one_of(list(recovery_modes()))}")
        return name

    @model_validator(mode="after")
    def _coalescing(self) -> TransportSection:
        if self.ack_bytes != "payload" and not self.ack_every_bytes:
            raise ValueError(
                f"transport.ack_bytes = {self.ack_bytes!r}: says which bytes ack_every_bytes counts, "
                "but ack_every_bytes = 0 (off); set ack_every_bytes or leave ack_bytes = 'payload'"
            )
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

    @model_serializer(mode="wrap")
    def _dump(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        # Left out at its default, so scenarios written before the option stay the same runs.
        data = handler(self)
        if self.ack_bytes == "payload":
            data.pop("ack_bytes", None)
        for key in cc_sections():
            section = getattr(self, key, None)
            if key not in _ALWAYS_DUMPED and section is not None and section == type(section)():
                data.pop(key, None)
        return data

    def to_params(self) -> TransportParams:
        sections = cc_sections()
        cc_params = {
            key: to_params(getattr(self, key), cc.params_type)  # type: ignore[arg-type]
            for key, cc in sections.items()
            if key in type(self).model_fields
        }
        return to_params(self, TransportParams, tuple(sections), cc_params=cc_params)

    @classmethod
    def registered_model(cls) -> type[TransportSection]:
        """This section with a field per registered congestion control's own section (its
        ``section_model``, default its defaults), built once per set of registered sections."""
        fields = tuple((key, cc.section_model, cc.section_description) for key, cc in cc_sections().items())
        model = _REGISTERED.get(fields)
        if model is None:
            model = create_model(  # type: ignore[call-overload]
                "TransportSection",
                __base__=TransportSection,
                __module__=__name__,
                **{
                    key: (section, Field(default=section(), description=doc or None))
                    for key, section, doc in fields
                },
            )
            model.__qualname__ = "TransportSection"
            model.__doc__ = TransportSection.__doc__
            _REGISTERED[fields] = model
        return model

    def __reduce__(self) -> Any:
        # pickled (results sent back by sweep workers) as its dump, rebuilt on the registered model
        return (_registered_transport, (self.model_dump(),))


_REGISTERED: dict[tuple[Any, ...], type[TransportSection]] = {}


def _registered_transport(data: dict[str, Any]) -> TransportSection:
    return TransportSection.registered_model().model_validate(data)


def _validate_transport(value: Any, handler: ValidatorFunctionWrapHandler) -> TransportSection:
    """A ``[transport]`` table, validated against :meth:`TransportSection.registered_model` (a
    ValidationError raised here joins the scenario's report, located under ``transport``)."""
    model = TransportSection.registered_model()
    if type(value) is model:
        return value
    if isinstance(value, TransportSection):  # built from the bare model, or before a registration
        value = value.model_dump()
    return model.model_validate(value)


# The scenario's [transport] field: validated by the registered model, dumped with its fields.
Transport = Annotated[SerializeAsAny[TransportSection], WrapValidator(_validate_transport)]


# --- load balancer ------------------------------------------------------------------------


class LbSection(BaseModel):
    """``scheme`` names a registered scheme; every other key is one of its parameters,
    validated by the scheme's own parameter model when the run is built."""

    model_config = ConfigDict(extra="allow", frozen=True, defer_build=True)  # as Section (model/types.py)
    scheme: str = "ecmp"

    @field_validator("scheme")
    @classmethod
    def _known(cls, name: str) -> str:
        from spraylab.lb.base import REGISTRY

        if name not in REGISTRY:
            raise ValueError(f"unknown scheme; allowed: {one_of(sorted(REGISTRY))}")
        return name

    @model_validator(mode="after")
    def _params(self) -> LbSection:
        from spraylab.lb.base import REGISTRY

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


# --- run, output ------------------------------------------------------------------------


# The largest quantum whose halving moves no case of benchmarks/fluid_quantum.py by more than
# 0.5% (its stored rows, benchmarks/fluid_quantum.json; tests/test_fluid_engine.py checks it).
FLUID_QUANTUM_PS = 125_000


class RunSection(Section):
    seed: int = 1
    time_limit: PositiveTimePs = 100_000_000_000
    max_events: int = Field(default=0, ge=0)  # 0 = no budget
    max_wall_s: float = Field(default=0, ge=0)  # 0 = no budget
    stop: Literal["workload", "time"] = "workload"
    progress: bool = True
    # Skip the size guard (spraylab.runs.budget): run even when the estimate exceeds the memory limit
    # or the flow/packet caps.
    allow_large: bool = False
    # Which engine runs the scenario (spraylab.fluid): "packet" (the packet-level simulator),
    # "fluid" (flow-level max-min fair rates), "l0" (bytes per link / capacity per phase) or
    # "l0_rail" (L0 of a rail workload from its byte matrices, for 8k+ GPUs: docs/fluid.md).
    engine: Literal["packet", "fluid", "l0", "l0_rail"] = "packet"
    # fluid: re-solve rates at most once per this much simulated time (0: at every event).
    # The default is the largest q of a doubling ladder whose completions stay within 0.5% of
    # q/2's on the cases of benchmarks/fluid_quantum.py (docs/fluid.md, "Re-solve quantum").
    fluid_quantum: TimePs = FLUID_QUANTUM_PS
    # fluid: the max-min solver. "compiled" (spraylab.fluid._maxmin) solves a few hundred flows
    # in microseconds where numpy's vectorised rounds take milliseconds; "auto" picks by the
    # run's size (docs/fluid.md). "numba" is the compiled kernel's old name, kept so scenario
    # files that name it still validate; it is not normalised, so their store keys stay.
    fluid_solver: Literal["auto", "numpy", "compiled", "numba"] = "auto"
    # fluid: reserve the ACK frames' bytes on every reverse link, ahead of data, as the packet
    # engine's receivers and strict-priority control queues take them (fluid/acks.py)
    fluid_acks: bool = True

    @model_serializer(mode="wrap")
    def _dump(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        # Left out when false / default, so scenarios written before the options existed stay
        # the same runs (the same store keys).
        data = handler(self)
        if not self.allow_large:
            data.pop("allow_large", None)
        if self.engine == "packet":
            data.pop("engine", None)
        if self.fluid_quantum == FLUID_QUANTUM_PS:
            data.pop("fluid_quantum", None)
        if self.fluid_solver == "auto":
            data.pop("fluid_solver", None)
        if self.fluid_acks:
            data.pop("fluid_acks", None)
        return data


class OutputSection(Section):
    name: str = ""
    dir: str = ""


# A selector names ports, flows or switches: a glob on names (``"leaf0->spine*"``; for flows, on
# the group name), an integer id (a flow id; an index into the network's ports or switches), or
# for ports a role (``uplink``, ``downlink``, ``host_up``, ``host_down``). Matched against the
# built network by spraylab.runs.monitor, which rejects a selector matching nothing.
MonitorSelector = int | str


class MonitorSection(Section):
    """Time series sampled every ``interval`` (spraylab.runs.monitor). Absent: nothing is sampled."""

    interval: PositiveTimePs = 10_000_000
    ports: list[MonitorSelector] = ["*"]
    flows: list[MonitorSelector] = ["*"]
    switches: list[MonitorSelector] = ["*"]

    @field_validator("ports", "flows", "switches", mode="before")
    @classmethod
    def _selectors(cls, value: Any) -> Any:
        # checked here so that a bad item is one line, not one per member of the int | str union
        items = value if isinstance(value, list) else [value]
        for item in items:
            if isinstance(item, bool) or not isinstance(item, (int, str)):
                raise ValueError(
                    f"item {item!r} is not a selector; give names or globs (strings) or ids (integers)"
                )
        return value


class Scenario(Section):
    """One simulation run, fully described. Build from a TOML file with :meth:`load`, from a
    dict with :meth:`from_dict`, or directly from the section models."""

    topology: Topology = Field(default_factory=LeafSpineTopology)
    switch: SwitchSection = SwitchSection()
    transport: Transport = Field(default_factory=lambda: TransportSection.registered_model()())
    lb: LbSection = Field(default_factory=LbSection)
    workload: list[Workload]
    run: RunSection = RunSection()
    output: OutputSection = OutputSection()
    monitor: MonitorSection | None = None

    @model_serializer(mode="wrap")
    def _dump(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        # Left out when absent, so scenarios written before monitors existed stay the same runs.
        data = handler(self)
        if self.monitor is None:
            data.pop("monitor", None)
        return data

    @field_validator("workload", mode="before")
    @classmethod
    def _one_or_many(cls, value: Any) -> Any:
        return [value] if isinstance(value, dict) else value

    @model_validator(mode="after")
    def _fits_fabric(self) -> Scenario:
        n = self.topology.n_hosts()
        if not self.workload:
            # A run with nothing to send is a mistake, not an empty result. (A cdf workload whose
            # Poisson draw happens to be empty is valid: an empty, completed result.)
            raise ValueError("workload = []: no workload; give at least one [workload] table")
        for i, w in enumerate(self.workload):
            w.check_fabric(self.topology, n, f"workload[{i}]" if len(self.workload) > 1 else "workload")
            late = w.late_start(
                self.run.time_limit, f"workload[{i}]" if len(self.workload) > 1 else "workload"
            )
            if late:
                raise ValueError(late)
        self._engine_reads_every_section()
        self._trimming_has_an_answer()
        self._port_buffer_holds_a_packet()
        strategies = {getattr(w, "strategy", None) for w in self.workload}
        if self.lb.scheme == "ecmp" and {"rail_spray", "rail_local"} <= strategies:
            raise ValueError(
                "workload.strategy = 'rail_spray': switches the whole run to per-packet spraying "
                "(lb.scheme = 'rps'), so it cannot share a run with strategy 'rail_local' under ecmp"
            )
        return self

    def _port_buffer_holds_a_packet(self) -> None:
        cap = self.switch.port_buffer
        if not cap:
            return
        from spraylab.net.framing import data_wire_bytes

        packet = data_wire_bytes(self.transport.mtu)
        if cap < packet:
            raise ValueError(
                f"switch.port_buffer = {cap}: smaller than one data packet ({packet} B on the wire at "
                f"transport.mtu = {self.transport.mtu}); use 0 (no cap) or at least {packet}"
            )
        if self.switch.lossless:
            raise ValueError(
                f"switch.port_buffer = {cap}: caps lossy queues; a lossless fabric (switch.lossless = "
                "true) pauses instead of dropping; use 0 or switch.lossless = false"
            )

    def _trimming_has_an_answer(self) -> None:
        """A trimmed header needs a receiver that NACKs it (``Recovery.nacks_trimmed``)."""
        if not self.switch.trimming:
            return
        from spraylab.transport.recovery.base import RECOVERIES

        if not RECOVERIES.get(self.transport.recovery).nacks_trimmed:
            allowed = [name for name in RECOVERIES.names() if RECOVERIES.get(name).nacks_trimmed]
            raise ValueError(
                f"switch.trimming = true: transport.recovery = {self.transport.recovery!r} has no answer "
                f"to a trimmed header; use transport.recovery = {one_of(allowed)}"
            )
        if self.run.engine != "packet":
            raise ValueError(
                f"switch.trimming = true: run.engine = {self.run.engine!r} has no packets to trim; "
                "set run.engine = 'packet' or trimming = false"
            )

    def _engine_reads_every_section(self) -> None:
        """Sections the chosen engine would ignore are refused, not silently dropped."""
        engine = self.run.engine
        if engine != "packet" and self.monitor is not None:
            raise ValueError(
                f"monitor: [monitor] samples queues, packets and counters of the packet engine; "
                f"run.engine = {engine!r} has none; remove [monitor] or set run.engine = 'packet'"
            )
        if engine in ("l0", "l0_rail") and self.run.max_events:
            raise ValueError(
                f"run.max_events = {self.run.max_events}: run.engine = {engine!r} computes its bound "
                "without events; use 0 (no budget) or run.engine = 'fluid' or 'packet'"
            )
        if engine != "packet":
            refused = fluid_refused_cc(self.transport.cc)
            if refused:
                raise ValueError(refused)

    # --- construction helpers -----------------------------------------------------------
    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Scenario:
        """Validate ``data``; a bad scenario raises :class:`ScenarioError` (the CLI's one line per
        problem, with ``key``, ``value`` and ``allowed``), never pydantic's raw report."""
        return validate(data)

    @classmethod
    def load(cls, path: str | Path, allow_large: bool = False) -> Scenario:
        from spraylab.model.files import relative_to

        with relative_to(Path(path).resolve().parent):  # files it names are relative to it
            return validate(read_toml(path, "scenario"), source=str(path), allow_large=allow_large)

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


def n_hosts(topology: TopologySection) -> int:
    return topology.n_hosts()


def validate(data: dict[str, Any], source: str = "", allow_large: bool = False) -> Scenario:
    """Validate a scenario dict; raise :class:`ScenarioError` with one line per problem.
    ``allow_large`` (or ``run.allow_large = true`` in ``data``) lets the files it names be
    read beyond the size guard's row limit (:data:`spraylab.model.files.MAX_FILE_ROWS`)."""
    run = data.get("run") if isinstance(data, dict) else None
    allow_large = allow_large or (isinstance(run, dict) and run.get("allow_large") is True)
    try:
        with allowing_large(allow_large):
            return Scenario.model_validate(data)
    except ValidationError as exc:
        prefix = f"{source}: " if source else ""
        problems = [replace(p, line=prefix + p.line) for p in problems_of(exc, data, Scenario)]
        raise ScenarioError([p.line for p in problems], problems) from None
