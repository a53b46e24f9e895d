"""Everything a scenario can pick by name, as data (what ``spraylab list`` prints):
load-balancing schemes with their parameters, topology and workload kinds with their keys, rail
strategies, recovery modes, congestion controls with their parameter sections, flow-size
distributions, presets and the example scenarios and sweeps. Each list is read from its
registry, so a part registered from outside appears here at once."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any


@dataclass(frozen=True)
class Choice:
    """One name a scenario key accepts: ``name``, a one-line ``summary``, and ``keys``, the keys
    or parameters it reads with their defaults (None where the choice has no default to show)."""

    name: str
    summary: str
    keys: dict[str, Any] = field(default_factory=dict)
    where: str = ""  # schemes: where the scheme acts (host, switch, ...)
    section: str = ""  # congestion controls: the key of their own section (transport.X), or ""
    units: dict[str, str] = field(default_factory=dict)  # congestion controls: key -> raw unit ("" none)


@dataclass(frozen=True)
class Choices:
    schemes: list[Choice]  # lb.scheme: keys are the parameters with their defaults
    topologies: list[Choice]  # topology.kind: keys (no defaults shown)
    workloads: list[Choice]  # workload.kind
    rail_strategies: list[Choice]  # workload.strategy
    recoveries: list[Choice]  # transport.recovery: keys are the [transport] keys it reads
    congestion_controls: list[Choice]  # transport.cc: keys of its section with defaults and units
    flow_size_cdfs: list[str]  # workload.cdf
    presets: list[str]
    examples: list[Choice]  # example:NAME scenario files, summary from their first comment
    example_sweeps: list[str]  # example:sweeps/NAME
    examples_dir: Path


def choices() -> Choices:
    """What every registry holds now (built-in and registered parts)."""
    from spraylab.lb.base import REGISTRY, load_builtin_schemes
    from spraylab.model.library import (
        EXAMPLE_PREFIX,
        example_names,
        example_summary,
        examples_dir,
        preset_names,
    )
    from spraylab.topology.base import TOPOLOGIES
    from spraylab.transport.registry import cc_modes, cc_parameters, recovery_keys, recovery_modes
    from spraylab.workload.base import WORKLOADS
    from spraylab.workload.cdf import FlowSizeCdf
    from spraylab.workload.rail_strategies import STRATEGIES

    load_builtin_schemes()
    schemes = [
        Choice(
            name,
            REGISTRY[name].summary,
            {k: v.default for k, v in REGISTRY[name].Params.model_fields.items()},
            where=REGISTRY[name].where,
        )
        for name in sorted(REGISTRY)
    ]

    def kinds(registry: Any) -> list[Choice]:
        return [
            Choice(kind, registry.models[kind].summary, dict.fromkeys(k for k in registry.models[kind].model_fields if k != "kind"))
            for kind in registry.kinds()
        ]  # fmt: skip

    ccs = []
    for name, summary in cc_modes().items():
        section, params = cc_parameters(name)
        ccs.append(
            Choice(
                name,
                summary,
                {key: default for key, default, _ in params},
                section=section,
                units={key: unit for key, _, unit in params},
            )
        )
    return Choices(
        schemes=schemes,
        topologies=kinds(TOPOLOGIES),
        workloads=kinds(WORKLOADS),
        rail_strategies=[Choice(name, st.summary) for name, st in STRATEGIES.items()],
        recoveries=[
            Choice(name, summary, dict.fromkeys(recovery_keys(name)))
            for name, summary in recovery_modes().items()
        ],
        congestion_controls=ccs,
        flow_size_cdfs=FlowSizeCdf.names(),
        presets=preset_names(),
        examples=[Choice(EXAMPLE_PREFIX + name, example_summary(name)) for name in example_names()],
        example_sweeps=[EXAMPLE_PREFIX + name for name in example_names(sweeps=True)],
        examples_dir=examples_dir(),
    )
