"""The scenario card: what a result was run on, in a few lines, on every output.

A number without its setting misleads: "rps" over go-back-N RNICs and "rps" over selective
repeat are different systems. The card names the fabric (hosts, rates, oversubscription per
tier, link delays), the switches (lossy or PFC, buffer), the transport (recovery mode and
congestion control), the load balancer with every parameter (defaults included), the
workload, the seed and the spraylab version. :func:`scenario_card` builds it from a scenario;
tables print it as a header, plots as a caption, ``summary.json`` stores it under ``card``."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from typing import Any

from spraylab.model.scenario import Scenario
from spraylab.results import provenance
from spraylab.topology.fabric import HOST_TIER, Fabric
from spraylab.units import format_bytes, format_rate, format_time_label

RECOVERY_NAMES = {
    "gbn": "go-back-N",
    "sr": "selective repeat",
    "ideal": "ideal (reorder-tolerant, oracle loss notice)",
    "uec": "UEC-style (SACK, NACK of trimmed headers)",
    "irn": "IRN (selective repeat, one-BDP window)",
}
TIER_NAMES = {0: "NVLink switch", 1: "ToR", 2: "tier-2", 3: "tier-3"}


@dataclass(frozen=True)
class Card:
    lines: list[str]
    data: dict[str, Any]

    @property
    def text(self) -> str:
        return "\n".join(self.lines)

    def as_dict(self) -> dict[str, Any]:
        return {**self.data, "text": self.text}


def _ratio(value: float) -> str:
    return f"{value:.3g}:1"


def fabric_facts(fabric: Fabric) -> dict[str, Any]:
    """Hosts, switches per tier, link rates and delays, and oversubscription per switch tier:
    the largest (capacity toward lower tiers) / (capacity toward higher tiers) over its switches."""
    tier_of = {**fabric.switch_tier, **{h: HOST_TIER for h in fabric.hosts}}
    down: dict[str, int] = defaultdict(int)
    up: dict[str, int] = defaultdict(int)
    rates: dict[str, set[int]] = defaultdict(set)
    delays: set[int] = set()
    for link in fabric.links:
        ta, tb = tier_of[link.a], tier_of[link.b]
        low, high = (link.a, link.b) if ta < tb else (link.b, link.a)
        if ta != tb:
            up[low] += link.rate_bps
            down[high] += link.rate_bps
        layer = "host" if HOST_TIER in (ta, tb) else f"tier{min(ta, tb)}-{max(ta, tb)}"
        rates[layer].add(link.rate_bps)
        delays.add(link.delay_ps)
    over: dict[int, float] = {}
    for switch, tier in fabric.switch_tier.items():
        if up.get(switch) and down.get(switch):
            over[tier] = max(over.get(tier, 0.0), down[switch] / up[switch])
    per_tier: dict[int, int] = defaultdict(int)
    for tier in fabric.switch_tier.values():
        per_tier[tier] += 1
    return {
        "hosts": fabric.n_hosts,
        "switches": {TIER_NAMES.get(t, f"tier-{t}"): n for t, n in sorted(per_tier.items())},
        "link_rates_bps": {layer: sorted(r) for layer, r in sorted(rates.items())},
        "link_delays_ps": sorted(delays),
        "oversubscription": {TIER_NAMES.get(t, f"tier-{t}"): round(v, 6) for t, v in sorted(over.items())},
    }


def lb_params(scenario: Scenario) -> dict[str, Any]:
    """The scheme's parameters with defaults filled in (what the run actually used)."""
    from spraylab.lb.base import REGISTRY

    params = REGISTRY[scenario.lb.scheme].Params(**scenario.lb.params)
    return params.model_dump(mode="json")


def lb_line(scenario: Scenario) -> str:
    """``rps over go-back-N (gbn), cc dcqcn``: the scheme never appears without its transport."""
    params = lb_params(scenario)
    shown = (
        f"{scenario.lb.scheme}[{', '.join(f'{k}={v}' for k, v in params.items())}]"
        if params
        else scenario.lb.scheme
    )
    t = scenario.transport
    return f"{shown} over {RECOVERY_NAMES.get(t.recovery, t.recovery)} ({t.recovery}), cc {t.cc}"


def _workload_text(scenario: Scenario) -> str:
    parts = []
    for w in scenario.workload:
        size = getattr(w, "size", None)
        extra = f" {getattr(w, 'collective', '')}".rstrip()
        if w.kind == "moe":
            extra = f" {w.model} {w.phase}"
        if w.kind == "cdf":
            extra = f" {w.cdf} load {w.load}"
        if w.kind == "flows":
            rows = w.flow_rows
            source = f" from {w.file.rsplit('/', 1)[-1]} ({w.format})" if w.file else " inline"
            extra = f" {len(rows)} flows{source}"
        parts.append(f"{w.kind}{extra}" + (f" {format_bytes(size)}" if isinstance(size, int) else ""))
    return "; ".join(parts)


def scenario_card(scenario: Scenario, fabric: Fabric | None = None) -> Card:
    if fabric is None:
        from spraylab.runs.experiment import build_fabric

        fabric = build_fabric(scenario.topology)
    facts = fabric_facts(fabric)
    s = scenario.switch
    t = scenario.transport
    version = provenance.describe(provenance.current())
    rates = ", ".join(
        f"{layer} {'/'.join(format_rate(r) for r in rs)}" for layer, rs in facts["link_rates_bps"].items()
    )
    over = (
        ", ".join(f"{tier} {_ratio(v)}" for tier, v in facts["oversubscription"].items()) or "none (one tier)"
    )
    switches = ", ".join(f"{n} {tier}" for tier, n in facts["switches"].items())
    delays = "/".join(format_time_label(d) for d in facts["link_delays_ps"])
    topo_name = scenario.topology.kind
    if topo_name == "imported":
        topo_name = f"imported {scenario.topology.format} {scenario.topology.file.rsplit('/', 1)[-1]}"
    lines = [
        f"fabric: {topo_name}, {facts['hosts']} hosts, {switches}; links {rates}; delay {delays}; "
        f"oversubscription {over}",
        f"switches: {'lossless (PFC)' if s.lossless else 'lossy'}, buffer {format_bytes(s.buffer)}, "
        f"ECN {'on' if s.ecn else 'off'}" + (", trimming" if s.trimming else ""),
        f"lb: {lb_line(scenario)}; MTU {format_bytes(t.mtu)}",
        f"workload: {_workload_text(scenario)}",
        f"seed {scenario.run.seed}; spraylab {version}",
    ]
    data = {
        "topology": scenario.topology.kind,
        "fabric": facts,
        # trimming only when on: cards of runs before the option stay the same
        "switch": {"lossless": s.lossless, "buffer_bytes": s.buffer, "ecn": s.ecn}
        | ({"trimming": True} if s.trimming else {}),
        "recovery": t.recovery,
        "cc": t.cc,
        "lb": {"scheme": scenario.lb.scheme, **lb_params(scenario)},
        "workload": [w.kind for w in scenario.workload],
        "seed": scenario.run.seed,
        "spraylab": version,
    }
    return Card(lines, data)


def compare_card(scenarios: dict[str, Scenario]) -> Card:
    """One card for several runs of one base scenario: the shared lines once, then one ``lb:``
    line per column (its scheme, parameters, recovery mode and congestion control)."""
    first = scenario_card(next(iter(scenarios.values())))
    per_column = {label: lb_line(sc) for label, sc in scenarios.items()}
    shared = [line for line in first.lines if not line.startswith("lb:")]
    lines = shared[:-1] + [f"lb {label}: {text}" for label, text in per_column.items()] + shared[-1:]
    return Card(
        lines,
        {**{k: v for k, v in first.data.items() if k not in ("lb", "recovery", "cc")}, "columns": per_column},
    )


def card_lines_from_summary(summary: dict[str, Any]) -> list[str]:
    """The card a stored run carries (runs made before cards existed carry none)."""
    card = summary.get("card")
    return str(card.get("text", "")).splitlines() if isinstance(card, dict) else []
