"""Metrics of a study point, and the quantities a page prints.

A metric name is one of:

* a key of the run's stored summary (``completion_ps``, ``goodput_bps``, ``lb.reseq_peak_bytes``,
  ``cct_ps[0:moe:dispatch]``);
* a registered function of the point (:data:`METRICS`): derived from the stored tables
  (``reorder_over_bound``, ``busy_fraction``) or a closed form of the scenario, a *theory*
  (``incast_bound_ps``, ``rails_t_star_ps[dispatch]``); ``name[arg]`` passes ``arg``;
* ``A / B``: the ratio of two metrics of the same point.

A summary key's unit and label are the metric catalog's (:mod:`spraylab.metrics.catalog`); a
registered metric states its own. A :class:`Q` carries the value with its unit and prints it as
pages do (:func:`spraylab.units.format_page`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from spraylab.metrics import catalog
from spraylab.net.drops import DROP_CAUSES, PORT_CAUSES
from spraylab.registry import Registry
from spraylab.units import PS_PER_BYTE_AT_1BPS, PS_PER_S, format_page

# --- quantities ---------------------------------------------------------------------------------


def unit_of(metric: str) -> str:
    """The unit of a metric: a registered metric's own, else the catalog's (a summary key or an
    analysis output, :mod:`spraylab.metrics.catalog`); ``A / B`` of one unit is a ratio (x)."""
    tokens = metric.split()
    if len(tokens) > 1:
        return (
            "x"
            if tokens[1:] == ["/", tokens[2]] and unit_of(tokens[0]) == unit_of(tokens[2])
            else unit_of(tokens[0])
        )
    name = metric.split("[")[0]
    if name in METRICS:
        return METRICS[name].unit
    return catalog.unit_of(metric)


@dataclass(frozen=True)
class Q:
    """A number with its unit; ``str`` gives the page's text (``"123.4 us"``, ``"12.3%"``)."""

    value: float | None
    unit: str = "count"
    digits: int | None = None  # override the unit's default precision

    def __str__(self) -> str:
        return format_page(self.value, self.unit, self.digits)

    def __format__(self, spec: str) -> str:
        return format(str(self), spec)

    def __bool__(self) -> bool:
        return self.value is not None

    def __float__(self) -> float:
        if self.value is None:
            raise ValueError("no value")
        return float(self.value)

    def _pair(self, other: Any) -> float | None:
        if isinstance(other, Q):
            return other.value
        return float(other)

    def __truediv__(self, other: Any) -> Q:
        b = self._pair(other)
        if self.value is None or b is None or b == 0:
            return Q(None, "x")
        return Q(self.value / b, "x" if isinstance(other, Q) and other.unit == self.unit else self.unit)

    def __sub__(self, other: Any) -> Q:
        b = self._pair(other)
        return Q(None if self.value is None or b is None else self.value - b, self.unit)

    def __rsub__(self, other: Any) -> Q:
        return Q(None if self.value is None else float(other) - self.value, self.unit)

    def __neg__(self) -> Q:
        return Q(None if self.value is None else -self.value, self.unit)

    def _cmp(self, other: Any, op: Callable[[float, float], bool]) -> bool:
        b = self._pair(other)
        return self.value is not None and b is not None and op(self.value, b)

    def __lt__(self, other: Any) -> bool:
        return self._cmp(other, lambda a, b: a < b)

    def __le__(self, other: Any) -> bool:
        return self._cmp(other, lambda a, b: a <= b)

    def __gt__(self, other: Any) -> bool:
        return self._cmp(other, lambda a, b: a > b)

    def __ge__(self, other: Any) -> bool:
        return self._cmp(other, lambda a, b: a >= b)

    def as_(self, unit: str, digits: int | None = None) -> Q:
        return Q(self.value, unit, digits)


# --- registered metrics -----------------------------------------------------------------------


@dataclass(frozen=True)
class Metric:
    name: str
    unit: str  # a key of spraylab.units.UNITS
    compute: Callable[[Any, str | None], float | None]  # (point, arg) -> value
    doc: str
    label: str | None = None  # a page's column header (None: the name)


# Registered metrics by name (this module's functions below).
METRICS: Registry[Metric] = Registry("metric", what="metric")


def metric(
    name: str, unit: str, label: str | None = None
) -> Callable[[Callable[[Any, str | None], float | None]], Any]:
    def register(fn: Callable[[Any, str | None], float | None]) -> Any:
        METRICS.register(Metric(name, unit, fn, (fn.__doc__ or "").strip().split("\n")[0], label))
        return fn

    return register


# Derived from the stored tables ---------------------------------------------------------------


@metric("reorder_over_bound", "count", "max reorder - B")
def _reorder_over_bound(point: Any, arg: str | None) -> float | None:
    """Max over flows with a PSN window (DFS's B) of max reorder - B: < 0 when every flow kept its bound."""
    flows = point.result().flows
    bounded = flows[flows["psn_window"] > 0]
    return None if bounded.empty else float((bounded["max_reorder"] - bounded["psn_window"]).max())


@metric("wall_s", "float")
def _wall(point: Any, arg: str | None) -> float | None:
    """Wall-clock seconds the run took (its timing record, not its deterministic summary)."""
    return float(point.timing().get("wall_s", 0.0))


@metric("psn_window_min", "count", "B (min)")
def _psn_min(point: Any, arg: str | None) -> float | None:
    """Smallest PSN window (DFS's B) of a bounded flow."""
    flows = point.result().flows
    bounded = flows[flows["psn_window"] > 0]
    return None if bounded.empty else float(bounded["psn_window"].min())


@metric("psn_window_max", "count", "B (max)")
def _psn_max(point: Any, arg: str | None) -> float | None:
    """Largest PSN window (DFS's B) of a bounded flow."""
    flows = point.result().flows
    bounded = flows[flows["psn_window"] > 0]
    return None if bounded.empty else float(bounded["psn_window"].max())


@metric("event_link_drops", "count", "link drops")
def _event_link_drops(point: Any, arg: str | None) -> float | None:
    """Packets dropped on the link of the scenario's first topology event (both directions).

    At its ports (buffer, link down, random loss); not the drops the links table counts on it
    for packets that died later inside the node at its far end (no route, a ToR program)."""
    events = point.scenario().topology.events
    if not events:
        return None
    a, b = events[0].link
    links = point.result().links
    part = links[((links["from"] == a) & (links["to"] == b)) | ((links["from"] == b) & (links["to"] == a))]
    return float(part[[f"drops_{DROP_CAUSES[c]}" for c in PORT_CAUSES]].sum().sum())


@metric("flows_with_timeouts", "count")
def _flows_with_timeouts(point: Any, arg: str | None) -> float | None:
    """Flows that waited for at least one RTO."""
    return float((point.result().flows["timeouts"] > 0).sum())


def _wire_bytes(size_bytes: int, mtu: int) -> int:
    from spraylab.net.framing import data_wire_bytes

    n_packets = max(1, -(-size_bytes // mtu))
    return (n_packets - 1) * data_wire_bytes(mtu) + data_wire_bytes(size_bytes - (n_packets - 1) * mtu)


@metric("busy_fraction", "pct")
def _busy_fraction(point: Any, arg: str | None) -> float | None:
    """Wire bytes the flows needed (full packets, RoCEv2 framing) over the receiver link's capacity
    during the run's completion: retransmissions keep a link busy without doing work."""
    sc = point.scenario()
    flows = point.result().flows
    completion = point.summary().get("completion_ps")
    if not completion:
        return None
    wire = sum(_wire_bytes(int(z), sc.transport.mtu) for z in flows["size_bytes"])
    return wire * PS_PER_BYTE_AT_1BPS / sc.topology.host_rate / completion


@metric("uncounted_drops", "count")
def _uncounted_drops(point: Any, arg: str | None) -> float | None:
    """Packets lost without a counted cause: injected - consumed - dropped - in flight (the
    run's conservation counts), plus any difference between the drops the summary counts and
    those the links table holds by cause. 0 when every drop is counted."""
    summary = point.summary()
    c = summary.get("conservation")
    if not c:
        return None
    vanished = c["injected"] - c["consumed"] - c["dropped"] - c.get("in_flight", 0)
    links = point.result().links
    by_cause = int(links[[f"drops_{name}" for name in DROP_CAUSES]].sum().sum())
    return float(
        abs(vanished) + abs(by_cause - c["dropped"]) + abs(by_cause - (summary.get("drops_total") or 0))
    )


@metric("jain", "float")
def _jain(point: Any, arg: str | None) -> float | None:
    """Jain's index over the flows' throughputs (size / FCT)."""
    from spraylab.metrics.maxmin import jain_index

    flows = point.result().flows
    return float(jain_index((flows["size_bytes"] / flows["fct_ps"]).tolist()))


@metric("receiver_max_queue_bytes", "bytes", "bottleneck queue, max")
def _receiver_queue(point: Any, arg: str | None) -> float | None:
    """The largest queue on a link into the workload's receiver host (an incast's bottleneck)."""
    sc = point.scenario()
    receiver = getattr(sc.workload[0], "receiver", None)
    if receiver is None:
        return None
    links = point.result().links
    into = links[(links["role"] == "host_down") & (links["to"] == f"h{receiver}")]
    return float(into["max_queue_bytes"].max()) if len(into) else None


# Theory: closed forms of the scenario ---------------------------------------------------------


@metric("incast_bound_ps", "ps")
def _incast_bound(point: Any, arg: str | None) -> float | None:
    """No schedule moves N flows of S bytes through one link of capacity C before N x S / C."""
    sc = point.scenario()
    w = sc.workload[0]
    return w.senders * w.size * PS_PER_BYTE_AT_1BPS / sc.topology.host_rate


@metric("single_flow_fct_ps", "ps")
def _single_flow_fct(point: Any, arg: str | None) -> float | None:
    """One flow on an idle path: the first packet stored and forwarded at every hop, the rest
    streamed behind it at the bottleneck rate, every packet with RoCEv2's envelope."""
    sc = point.scenario()
    w = sc.workload[0]
    from spraylab.net.framing import data_wire_bytes

    hops = 4 if sc.topology.kind == "leaf_spine" else None
    if hops is None:
        return None
    delay = sc.topology.link_delay
    ps_per_byte = PS_PER_BYTE_AT_1BPS / sc.topology.host_rate
    wire = _wire_bytes(w.size, sc.transport.mtu)
    first = data_wire_bytes(min(w.size, sc.transport.mtu))
    return hops * (delay + first * ps_per_byte) + (wire - first) * ps_per_byte


@metric("ring_allreduce_ps", "ps")
def _ring_allreduce(point: Any, arg: str | None) -> float | None:
    """Ring all-reduce of S bytes on n hosts of one leaf, no congestion control: 2(n - 1) steps,
    each a flow of S/n to the next host (its first packet stored and forwarded over two links,
    the rest streaming behind it) while the host's uplink also carries the ACK frames of the
    S/n it receives from the previous host (strict priority, each delaying the data by its
    serialization)."""
    from spraylab.net.framing import ACK_WIRE_BYTES, data_wire_bytes

    sc = point.scenario()
    w = sc.workload[0]
    if sc.topology.kind != "leaf_spine" or w.kind != "collective" or w.collective != "allreduce":
        return None
    n, mtu = w.hosts, sc.transport.mtu
    part = w.size // n
    packets = max(1, -(-part // mtu))
    ps_per_byte = PS_PER_BYTE_AT_1BPS / sc.topology.host_rate
    first = data_wire_bytes(min(part, mtu))
    step = (
        2 * (sc.topology.link_delay + first * ps_per_byte)
        + (_wire_bytes(part, mtu) - first) * ps_per_byte
        + packets * ACK_WIRE_BYTES * ps_per_byte
    )
    return 2 * (n - 1) * step


@metric("alltoall_line_rate_ps", "ps")
def _alltoall_line_rate(point: Any, arg: str | None) -> float | None:
    """Each host sends (and receives) (n - 1) messages at its line rate: payload only."""
    sc = point.scenario()
    w = sc.workload[0]
    n = point.build_info()["hosts"]
    return (n - 1) * w.size * PS_PER_BYTE_AT_1BPS / sc.topology.host_rate


@metric("dfs_bdp_packets", "count")
def _dfs_bdp(point: Any, arg: str | None) -> float | None:
    """One BDP in data packets as DFS reads it: line rate x base RTT of a cross-leaf flow."""
    return point.build_info()["bdp_packets"]


@metric("dfs_paths", "count")
def _dfs_paths(point: Any, arg: str | None) -> float | None:
    """Equal-cost paths between the ends of the workload's first flow."""
    return point.build_info()["paths"]


@metric("dfs_rtt_ps", "ps")
def _dfs_rtt(point: Any, arg: str | None) -> float | None:
    """Base RTT of the workload's first flow (one data packet out, one ACK back)."""
    return point.build_info()["rtt_ps"]


@metric("host_rate_bps", "bps")
def _host_rate(point: Any, arg: str | None) -> float | None:
    """The scenario's host link rate."""
    return float(point.scenario().topology.host_rate)


@metric("scenario", "count")
def _scenario_value(point: Any, arg: str | None) -> float | None:
    """A number of the scenario, by dotted key: ``scenario[transport.rto]``."""
    node: Any = point.scenario().to_dict()
    for part in (arg or "").split("."):
        node = node[int(part)] if isinstance(node, list) else node[part]
    return float(node)


# RailS -------------------------------------------------------------------------------------------


def _phase_matrix(point: Any, phase: str | None) -> Any:
    from spraylab.workload.build import rail_phase_matrices

    sc = point.scenario()
    w = sc.workload[0]
    topo = sc.topology
    for name, d1 in rail_phase_matrices(w, topo.servers, topo.gpus_per_server, sc.run.seed):
        if (name or "alltoall") == (phase or "alltoall"):
            return d1
    raise ValueError(f"no phase {phase!r} in this workload")


@metric("rails_t_star_ps", "ps", "T*")
def _t_star(point: Any, arg: str | None) -> float | None:
    """T*: max(busiest server's send, receive wire bytes) over its N rail NICs (``[phase]``)."""
    from spraylab.rails.planner import plan_rails

    sc = point.scenario()
    plan = plan_rails(_phase_matrix(point, arg), sc.topology.gpus_per_server, sc.workload[0].chunk)
    return float(plan.t_star_ps(sc.topology.nic_rate))


@metric("rails_nic_bound_ps", "ps", "NIC bound")
def _nic_bound(point: Any, arg: str | None) -> float | None:
    """The busiest NIC's wire bytes / NIC rate under the point's strategy (for rails: its plan)."""
    from spraylab.rails.planner import plan_rails, rail_loads_for_strategy, wire_bytes

    sc = point.scenario()
    w = sc.workload[0]
    d1 = _phase_matrix(point, arg)
    n = sc.topology.gpus_per_server
    if w.strategy == "rails":
        return float(plan_rails(d1, n, w.chunk).planned_time_ps(sc.topology.nic_rate))
    loads = rail_loads_for_strategy(d1, n, w.strategy)
    return float(-(-wire_bytes(loads.max_load_bytes) * 8 * 10**12 // sc.topology.nic_rate))


@metric("rails_chunks_per_server", "count", "chunks per server")
def _chunks(point: Any, arg: str | None) -> float | None:
    """Chunks the RailS plan sends from the busiest server (``[phase]``)."""
    from spraylab.rails.planner import plan_rails

    sc = point.scenario()
    return float(
        plan_rails(
            _phase_matrix(point, arg), sc.topology.gpus_per_server, sc.workload[0].chunk
        ).max_chunks_per_server
    )


@metric("nvlink_port_time_ps", "ps", "busiest NVLink port")
def _nvlink_port(point: Any, arg: str | None) -> float | None:
    """The busiest NVLink port's bytes (sent or received by one GPU) / NVLink rate, in ``[phase]``."""
    sc = point.scenario()
    n = sc.topology.gpus_per_server
    flows = point.result().flows
    group = f"0:{sc.workload[0].kind}:{arg}" if arg else f"0:{sc.workload[0].kind}"
    part = flows[(flows["src"] // n == flows["dst"] // n) & (flows["group"] == group)]
    if part.empty:
        return 0.0
    top = max(part.groupby("src")["size_bytes"].sum().max(), part.groupby("dst")["size_bytes"].sum().max())
    return float(top) * PS_PER_BYTE_AT_1BPS / sc.topology.nvlink_rate


# Compute model of the Mixtral iteration (stated, not simulated): an H100-class GPU at an
# effective 400 TFLOP/s; an expert FFN costs 2 x 3 x hidden x ffn FLOP per (token, expert) pair,
# the rest of a layer 2 x attention parameters + 4 x sequence x hidden FLOP per token. Training is
# forward + backward: the backward repeats both all-to-alls and costs twice the forward compute.
COMPUTE = {
    "gpu_flops": 400e12,
    "sequence": 4096,
    "mixtral-8x7b": {"ffn": 14_336, "attn_params": 2 * 4096 * 4096 + 2 * 4096 * 1024},
    "mixtral-8x22b": {"ffn": 16_384, "attn_params": 2 * 6144 * 6144 + 2 * 6144 * 1024},
}


def _pairs(point: Any) -> Any:
    from spraylab.workload import moe
    from spraylab.workload.build import MOE_PRESETS

    sc = point.scenario()
    w = sc.workload[0]
    topo = sc.topology
    spec = moe.moe_spec_for(
        MOE_PRESETS[w.model], topo.servers, topo.gpus_per_server, w.tokens_per_gpu, zipf_s=w.zipf_s,
        dirichlet_alpha=w.dirichlet_alpha, seed=sc.run.seed + w.seed_offset, bytes_per_element=w.bytes_per_element,
    )  # fmt: skip
    return moe.token_counts(spec).sum(axis=0)


def _compute_ps(point: Any, hot: bool) -> tuple[float, float]:
    from spraylab.workload.build import MOE_PRESETS

    w = point.scenario().workload[0]
    model: Any = COMPUTE[w.model]
    hidden = MOE_PRESETS[w.model].hidden
    pairs = _pairs(point)
    n_pairs = float(pairs.max() if hot else pairs.mean())
    expert = n_pairs * 2 * 3 * hidden * model["ffn"] / COMPUTE["gpu_flops"] * PS_PER_S
    other = (
        w.tokens_per_gpu
        * (2 * model["attn_params"] + 4 * COMPUTE["sequence"] * hidden)
        / COMPUTE["gpu_flops"]
        * PS_PER_S
    )
    return expert, other


def _hot(arg: str | None) -> bool:
    if arg not in ("balanced", "hot"):
        raise ValueError(f"[{arg}]: give [balanced] or [hot]")
    return arg == "hot"


@metric("expert_compute_ps", "ps", "expert compute")
def _expert(point: Any, arg: str | None) -> float | None:
    """Forward expert compute per layer: ``[balanced]`` (mean GPU) or ``[hot]`` (busiest GPU)."""
    return _compute_ps(point, _hot(arg))[0]


@metric("other_compute_ps", "ps", "other compute")
def _other(point: Any, arg: str | None) -> float | None:
    """Forward non-expert compute per layer and GPU (attention projections and scores)."""
    return _compute_ps(point, False)[1]


@metric("iteration_ps", "ps", "iteration")
def _iteration(point: Any, arg: str | None) -> float | None:
    """Training iteration: layers x (2 x (dispatch + combine) + 3 x (expert + other compute))."""
    from spraylab.workload import moe
    from spraylab.workload.build import MOE_PRESETS

    w = point.scenario().workload[0]
    s = point.summary()
    expert, other = _compute_ps(point, _hot(arg))
    d, c = s[f"cct_ps[0:{w.kind}:dispatch]"], s[f"cct_ps[0:{w.kind}:combine]"]
    return float(moe.iteration_time_ps(MOE_PRESETS[w.model], 2 * d, 2 * c, int(3 * expert), int(3 * other)))


@metric("alltoall_share", "pct", "all-to-all share")
def _a2a_share(point: Any, arg: str | None) -> float | None:
    """Share of the layer time spent in all-to-all under the iteration model."""
    w = point.scenario().workload[0]
    s = point.summary()
    expert, other = _compute_ps(point, _hot(arg))
    comm = 2 * (s[f"cct_ps[0:{w.kind}:dispatch]"] + s[f"cct_ps[0:{w.kind}:combine]"])
    return comm / (comm + 3 * (expert + other))
