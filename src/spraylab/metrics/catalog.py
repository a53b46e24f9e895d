"""The metric catalog: every number a run's summary, a report or a study analysis names, with its
unit, the label tables and pages print, what it means and which engines compute it.

Everything that shows a metric reads it here: the summary table of ``spraylab run|compare``
(:data:`SUMMARY_ROWS`), the compare tables and pages of sweep reports (:data:`REPORT_ROWS`),
study pages (headers and units), the run viewer's card and the column dictionary
(``spraylab docs columns``, docs/columns.md). How a unit is written is :mod:`spraylab.units`'.

A key in capitals stands for a family: ``cct_ps[GROUP]`` (a group name), ``slowdown_mean[BUCKET]``
(a flow-size bucket), ``drops_CAUSE`` (a drop cause), ``lb.NAME`` (a counter the load-balancing
scheme names). Scheme counters are the one open family: their unit comes from spraylab's naming
rule (:func:`unit_by_name`: ``_ps`` time, ``_bps`` rate, ``_bytes`` size, ``_ratio`` a share).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

from spraylab.units import UNITS

PACKET, FLUID, L0, L0_RAIL = "packet", "fluid", "l0", "l0_rail"
BOTH = frozenset({PACKET, FLUID})
PACKET_ONLY = frozenset({PACKET})
FLUID_ONLY = frozenset({FLUID})
NONE: frozenset[str] = frozenset()

Origin = Literal["summary", "report", "analysis"]


@dataclass(frozen=True)
class Metric:
    key: str  # the summary key, or a family (capitals) as above
    unit: str  # a key of spraylab.units.UNITS
    label: str  # the row label or column header
    description: str
    # the engines whose runs carry a value (the others leave it out or null); empty for keys
    # that are not a simulated quantity of one engine (an analysis' output)
    engines: frozenset[str] = BOTH
    origin: Origin = "summary"  # summary.json, derived by reports, or an analysis' output
    show: str | None = None  # another presentation of the unit (units.format_value)
    absent: str | None = None  # the text for a run without the key (older stores)
    only_with: str | None = None  # the setting without which an engine leaves the key out


def _m(
    key: str, unit: str, label: str, description: str, engines: frozenset[str] = BOTH, **kw: object
) -> Metric:
    return Metric(key, unit, label, description, engines, **kw)  # type: ignore[arg-type]


_ENTRIES = [
    # --- what ran ---------------------------------------------------------------------------
    _m("name", "text", "name", "scenario name"),
    _m("engine", "text", "engine", "the engine that made the result: packet, fluid, l0 or l0_rail (the flow-level ones "
       "leave what they cannot know as null)", absent="packet"),  # runs stored before the fluid engine
    _m("l0.binding", "text", "binding link role", "l0_rail: role of the busiest link (host_up, host_down, uplink, "
       "downlink)", frozenset({L0_RAIL})),
    _m("l0.binding_link", "text", "binding link", "l0_rail: the busiest link", frozenset({L0_RAIL})),
    _m("scheme", "text", "scheme", "load-balancing scheme"),
    _m("recovery", "text", "recovery", "loss recovery (transport.recovery): gbn, sr, uec or ideal"),
    _m("cc", "text", "cc", "congestion control (transport.cc)"),
    _m("topology", "text", "topology", "topology kind"),
    _m("hosts", "count", "hosts", "hosts of the fabric"),
    _m("seed", "count", "seed", "run seed"),
    _m("stop_reason", "text", "stop", "done, idle, time_limit, event_budget, wall_budget or interrupted (Ctrl-C)"),
    _m("completed", "count", "completed", "every flow finished: true or false (1 or 0 in claims and sums)"),
    _m("sim_time_ps", "ps", "simulated time", "simulated time at the end"),
    _m("events", "count", "events", "events the simulator processed"),
    _m("wall_s", "float", "wall s", "wall-clock seconds (not part of a stored run's identity)"),
    _m("conservation", "text", "conservation", "the packet-conservation self-check's counts", PACKET_ONLY),
    _m("spraylab", "text", "spraylab", "spraylab version (from git: README, Development)"),
    _m("git_commit", "text", "commit", "commit of the source tree, when run from a git checkout"),
    _m("card", "text", "card", "the scenario card (spraylab.results.card): fabric, switches, transport, lb with parameters, "
       "seed, version; `text` is the printed form", PACKET_ONLY),
    # --- flows ----------------------------------------------------------------------------------
    _m("flows", "count", "flows", "flows in the run"),
    _m("flows_completed", "count", "flows done", "flows that finished"),
    _m("flows_censored", "count", "flows censored", "flows unfinished at the end (counted with their lower bounds)"),
    _m("fct_mean_ps", "ps", "FCT mean", "mean FCT"),
    _m("fct_p50_ps", "ps", "FCT p50", "median FCT"),
    _m("fct_p99_ps", "ps", "FCT p99", "99th-percentile FCT"),
    _m("fct_max_ps", "ps", "FCT max", "largest FCT"),
    _m("slowdown_mean", "float", "slowdown mean", "mean slowdown (FCT / its lower bound)"),
    _m("slowdown_p50", "float", "slowdown p50", "median slowdown"),
    _m("slowdown_p99", "float", "slowdown p99", "99th-percentile slowdown"),
    _m("slowdown_mean[BUCKET]", "float", "slowdown mean", "mean slowdown of the flows in one size bucket"),
    _m("slowdown_p99[BUCKET]", "float", "slowdown p99", "99th-percentile slowdown in one size bucket"),
    _m("completion_ps", "ps", "completion time", "last finish - first start (a lower bound when flows are censored)"),
    _m("goodput_bps", "bps", "goodput per receiver", "payload rate of each receiver's active span, averaged over "
       "receivers"),
    _m("mean_flow_throughput_bps", "bps", "mean flow throughput", "mean of the flows' throughput_bps"),
    # --- packets (the packet engine's counters; the flow-level engines leave them null) ---------
    _m("packets_sent", "count", "packets sent", "data packets sent", PACKET_ONLY),
    _m("retx_packets", "count", "retransmissions", "retransmitted data packets", PACKET_ONLY),
    _m("retx_ratio", "pct", "retx ratio", "retx_packets / packets_sent", PACKET_ONLY),
    _m("spurious_retx", "count", "spurious retx", "spurious retransmissions", PACKET_ONLY),
    _m("spurious_retx_ratio", "pct", "spurious retx ratio", "spurious_retx / packets_sent", PACKET_ONLY),
    _m("nacks", "count", "NACKs", "NACKs sent", PACKET_ONLY),
    _m("cnps", "count", "CNPs", "CNPs sent", PACKET_ONLY),
    _m("ooo_arrivals", "count", "OOO arrivals", "out-of-order arrivals", PACKET_ONLY),
    _m("max_reorder", "count", "max reorder (pkts)", "largest reorder degree of any flow, packets", PACKET_ONLY),
    _m("discards", "count", "OOO discards", "out-of-order packets discarded by receivers", PACKET_ONLY),
    _m("timeouts", "count", "timeouts (RTO)", "retransmission timeouts", PACKET_ONLY),
    _m(
        "trimmed_packets",
        "count",
        "trimmed packets",
        "data packets trimmed to their header by a full switch queue (not drops)",
        PACKET_ONLY,
        only_with="switch.trimming",
    ),
    _m("drops_total", "count", "drops (all causes)", "packets lost, every cause", PACKET_ONLY),
    _m("drops", "count", "drops", "packets lost before the receiving RNIC (every cause but beyond_bitmap)",
       PACKET_ONLY),
    _m("drops_CAUSE", "count", "drops", "packets lost per cause (the flows table's drops_* columns)", PACKET_ONLY),
    _m("ecn_marks", "count", "ECN marks", "ECN marks", PACKET_ONLY),
    _m("pfc_pauses", "count", "PFC pauses", "PFC PAUSE frames", PACKET_ONLY),
    _m("max_queue_bytes", "bytes", "max queue", "largest port backlog", PACKET_ONLY),
    _m("uplink_imbalance_max", "float", "uplink imbalance max", "worst switch's max / mean bytes over its uplinks "
       "(1 = balanced)"),
    _m("uplink_imbalance_mean", "float", "uplink imbalance mean", "that ratio averaged over switches with two or "
       "more uplinks"),
    _m("packet_hops", "count", "packet hops", "packets sent over all links", PACKET_ONLY),
    _m("acks", "count", "ACKs", "ACKs sent", PACKET_ONLY),
    _m("data_overhead_bytes", "bytes", "data overhead", "wire bytes a data packet adds to its payload (RoCEv2 "
       "envelope)", PACKET_ONLY),
    _m("ack_wire_bytes", "bytes", "ACK wire bytes", "wire bytes of an ACK", PACKET_ONLY),
    _m("nack_wire_bytes", "bytes", "NACK wire bytes", "wire bytes of a NACK", PACKET_ONLY),
    _m("cnp_wire_bytes", "bytes", "CNP wire bytes", "wire bytes of a CNP", PACKET_ONLY),
    # --- groups (collectives, MoE phases, workload sections) ------------------------------------
    _m("cct_ps[GROUP]", "ps", "CCT", "completion time of one group"),
    _m("busbw_bps[GROUP]", "bps", "busbw", "bus bandwidth of one collective group"),
    # --- the engines' own counters ----------------------------------------------------------------
    _m("fluid.route_model", "text", "fluid route model", "how the flow-level engine routes the scheme's flows: hash, "
       "split, entropies, tor_split or pool (spraylab.fluid.routing)", frozenset({FLUID, L0, L0_RAIL})),
    _m("fluid.solves", "count", "fluid solves", "max-min rate solves the fluid engine made", frozenset({FLUID, L0,
       L0_RAIL})),
    _m("fluid.reused", "count", "fluid reuses", "rate changes that reused a remembered solve of the same "
       "set of active flows",
       frozenset({FLUID, L0, L0_RAIL})),
    _m("fluid.quantum_ps", "ps", "fluid quantum", "the re-solve quantum (`run.fluid_quantum`)", frozenset({FLUID, L0,
       L0_RAIL})),
    _m("fluid.solver", "text", "fluid solver", "the max-min solver that ran (`run.fluid_solver`)", FLUID_ONLY),
    _m("fluid.ack_fallbacks", "count", "fluid ACK fallbacks", "solves whose ACK reservation fell back to ACKs sharing "
       "the links with data (spraylab.fluid.acks)", FLUID_ONLY),
    _m("lb.NAME", "count", "lb counter", "a counter the load-balancing scheme reports (unit by its name's suffix)",
       PACKET_ONLY),
    # --- derived by reports: means over a run's groups ---------------------------------------------
    _m("cct_mean_ps", "ps", "CCT (mean over groups)", "mean of cct_ps[GROUP] over the run's groups", origin="report"),
    _m("busbw_mean_bps", "bps", "busbw (mean over groups)", "mean of busbw_bps[GROUP] over the run's collective "
       "groups", origin="report", show="GB/s"),
    # --- outputs of study analyses (spraylab.study.analyses) --------------------------------------
    _m("chi_square", "float", "chi-square", "Pearson's chi-square statistic", NONE, origin="analysis"),
    _m("p_value", "p", "p-value", "the chi-square's p-value", NONE, origin="analysis"),
    _m("cells", "count", "cells", "cells of the chi-square test", NONE, origin="analysis"),
    _m("t_star_ps", "ps", "T*", "RailS' lower bound: the busiest server's wire bytes over its rail NICs", NONE,
       origin="analysis"),
    _m("planned_ps", "ps", "plan", "the RailS plan's busiest NIC time", NONE, origin="analysis"),
    _m("base_rtt_ps", "ps", "base RTT", "round trip on the idle fabric", NONE, origin="analysis"),
    _m("cct_ps", "ps", "CCT", "completion time of the analysed collective", NONE, origin="analysis"),
]  # fmt: skip

CATALOG: dict[str, Metric] = {m.key: m for m in _ENTRIES}
assert len(CATALOG) == len(_ENTRIES), "a key is in the catalog twice"
assert all(m.unit in UNITS for m in _ENTRIES), "a metric's unit is not in spraylab.units.UNITS"

# The rows of `spraylab run|compare`'s summary table, in order (group rows follow: cct_ps[GROUP]).
SUMMARY_ROWS: tuple[str, ...] = (
    "flows_completed", "flows_censored", "completion_ps", "fct_mean_ps", "fct_p99_ps", "slowdown_mean",
    "slowdown_p99", "goodput_bps", "retx_ratio", "spurious_retx_ratio", "discards", "max_reorder", "drops",
    "timeouts", "cnps", "pfc_pauses", "uplink_imbalance_max", "stop_reason", "engine",
)  # fmt: skip
# The rows of a sweep report's compare tables, in order (those some run has a value for).
REPORT_ROWS: tuple[str, ...] = (
    "slowdown_mean", "slowdown_p50", "slowdown_p99", "fct_mean_ps", "fct_p99_ps", "completion_ps", "cct_mean_ps",
    "busbw_mean_bps", "goodput_bps", "retx_ratio", "spurious_retx_ratio", "max_reorder", "drops", "pfc_pauses",
    "uplink_imbalance_max",
)  # fmt: skip
# The outcome rows of the run viewer's card.
VIEWER_ROWS: tuple[str, ...] = ("slowdown_p50", "slowdown_p99", "goodput_bps", "drops", "pfc_pauses")
# The family a run's group rows belong to, in the summary table: CCT and bus bandwidth per group.
GROUP_FAMILIES: tuple[str, ...] = ("cct_ps", "busbw_bps")

# The drop causes (spraylab.net.drops) are a closed family; a summary key drops_<cause>.
_FAMILY = re.compile(r"^(?P<base>[^\[]+)\[(?P<arg>.*)\]$")


def lookup(key: str) -> Metric | None:
    """The catalog entry of a summary key: itself, or the family it belongs to."""
    if key in CATALOG:
        return CATALOG[key]
    match = _FAMILY.match(key)
    if match:
        for family in ("GROUP", "BUCKET"):
            entry = CATALOG.get(f"{match['base']}[{family}]")
            if entry is not None:
                return entry
    if key.startswith("drops_"):
        return CATALOG["drops_CAUSE"]
    if key.startswith("lb."):
        return CATALOG["lb.NAME"]
    return None


def family_of(key: str) -> str:
    """``cct_ps[0:moe:dispatch]`` -> ``cct_ps``: the name before any ``[arg]``."""
    return key.partition("[")[0]


def is_known(key: str) -> bool:
    return lookup(key) is not None


def unit_by_name(key: str) -> str:
    """spraylab's naming rule, for keys the catalog does not list (a scheme's counters)."""
    name = family_of(key)
    for suffix, unit in (("_ps", "ps"), ("_bps", "bps"), ("_bytes", "bytes"), ("_ratio", "pct")):
        if name.endswith(suffix):
            return unit
    return "count"


def unit_of(key: str) -> str:
    """The unit of a summary key: the catalog's, by the naming rule for a scheme's counters."""
    entry = lookup(key)
    if entry is None or entry.key == "lb.NAME":
        return unit_by_name(key)
    return entry.unit


def label_of(key: str) -> str:
    """The row label of a key: the catalog's; a family member adds its argument
    (``CCT[0:moe:dispatch]``); a scheme counter is its name (``lb.reseq_peak_bytes``)."""
    if key in CATALOG:
        return CATALOG[key].label
    entry = lookup(key)
    match = _FAMILY.match(key)
    if entry is not None and match and entry.key != "lb.NAME":
        return f"{entry.label}[{match['arg']}]"
    return key


def raw_unit(unit: str) -> str:
    """What a raw value of ``unit`` is in, as CSV and JSON tables state it."""
    return UNITS[unit].raw if unit in UNITS else ""


def documented(origin: Origin = "summary") -> list[Metric]:
    return [m for m in _ENTRIES if m.origin == origin]
