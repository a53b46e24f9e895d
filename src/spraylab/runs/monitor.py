"""Time series of a run (the ``[monitor]`` section): per port, per flow and per switch, sampled
every ``interval``. Nothing here runs unless a scenario has ``[monitor]``, and even then no
packet pays for it: every number is read at sample time, from counters and the event queue.

**Departures, not enqueues.** A lossy port (:class:`spraylab.net.port.Port`) counts ``tx_bytes``
when a packet is *enqueued*: it computes the packet's departure time then and has no dequeue
event, so sampling ``tx_bytes`` gives the arrival rate, which may exceed the link rate. What has
not left yet is on the calendar, though: every packet a port has counted and whose last bit has
not left is an arrival pending on the calendar, and the compiled core schedules every arrival
with the port it left through (``Simulator.pending_window`` reads them as ``(time, port, packet)``)
at its departure plus the link's propagation delay. A data frame departs at the port's
``busy_until`` after its send, a control frame after its own serialization (ahead of the data
backlog), a lossless port's frame when its transmission ends (it counts the frame when the
transmission starts). So a sample at ``t`` finds, among the pending events, each monitored port's
packets held at ``t`` (event time minus delay after ``t``), and the bytes and packets departed by
``t`` are ``tx_bytes`` and ``tx_packets`` less those: exact, per packet (a packet counts when its
last bit leaves), and summed over the intervals they are ``tx_bytes`` less what is still held at
the end. Only ports busy past ``t`` can hold anything (when none is, nothing is scanned), and only
the calendar buckets from ``t`` plus the delay to the latest ``busy_until`` plus it are read.

**Queue maximum.** The largest backlog a packet found on arrival during the interval (the
definition of the links table's ``max_queue_bytes``), or the queue at the interval's start or
end if larger (a standing queue that nothing joined). The port already keeps that maximum on
arrival; while monitored it holds the interval's (the sampler resets it to 0 at each sample and
keeps the run's maximum, which :meth:`Monitor.finish` writes back before the run's tables are
built), so this costs no packet anything either.

**Sampling never perturbs the run.** The sampler only reads state (the queue maximum aside, put
back as said); it is an ordinary event every ``interval``, and it stops rescheduling itself once
no other event is pending (checked again after the events left in the current bucket), so a run
that would go idle still does, at the same time. The run's ``events`` count includes the
sampler's events. A sample costs a pass over the monitored ports plus, when one is busy, over
the calendar buckets a held packet can be in: on the demo at a 10 us interval, +1.2% executed
instructions (``benchmarks/monitor_overhead.py``; ``docs/performance.md``).

Memory is the samples kept, in columnar arrays (rows: monitored ports and switches per sample,
plus the flows active in each interval); nothing grows with the packets.
"""

from __future__ import annotations

import fnmatch
from array import array
from collections.abc import Callable, Iterable
from itertools import repeat
from operator import sub
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from spraylab.engine.simulator import BUCKET_SHIFT
from spraylab.net.drops import DROP_CAUSES, N_CAUSES
from spraylab.net.host import Host
from spraylab.net.port import PfcPort, Port
from spraylab.units import PS_PER_BYTE_AT_1BPS

if TYPE_CHECKING:
    import pandas as pd

    from spraylab.model.scenario import MonitorSection
    from spraylab.net.network import Network

PORT_ROLES = ("uplink", "downlink", "host_up", "host_down")
PORT_DROP_COLUMNS = tuple(f"drops_{name}" for name in DROP_CAUSES)  # as the links table
PORT_COLUMNS = (
    "t_ps", "dt_ps", "link", "tx_bytes", "tx_packets", "queue_bytes", "queue_max_bytes", "ecn_marks",
    *PORT_DROP_COLUMNS, "paused_ps",
)  # fmt: skip
FLOW_COLUMNS = (
    "t_ps", "dt_ps", "flow_id", "delivered_bytes", "rate_bps", "window_bytes", "inflight_bytes", "cnps",
    "retx_packets",
)  # fmt: skip
SWITCH_COLUMNS = ("t_ps", "dt_ps", "switch", "buffer_bytes", "max_port_queue_bytes")
TIMESERIES_FILES = {
    "ports": "timeseries_ports.parquet",
    "flows": "timeseries_flows.parquet",
    "switches": "timeseries_switches.parquet",
}
_NEVER = 1 << 62


def port_role(port: Port) -> str:
    """``host_up``, ``host_down``, ``uplink`` or ``downlink`` (as in the links table)."""
    if isinstance(port.owner, Host):
        return "host_up"
    if isinstance(port.peer_owner, Host):
        return "host_down"
    return "uplink" if port.is_uplink else "downlink"


def with_utilization(ports: pd.DataFrame, links: pd.DataFrame) -> pd.DataFrame:
    """``ports`` (a monitored run's per-port series) with ``utilization``: departed bytes over the
    link's capacity in the interval (rates from the links table, by ``link``)."""
    rate = ports["link"].astype(str).map(links.set_index("link")["rate_bps"]).astype(float)
    return ports.assign(utilization=ports["tx_bytes"] * PS_PER_BYTE_AT_1BPS / (rate * ports["dt_ps"]))


# --- selection ---------------------------------------------------------------------------------


def _select(
    what: str,
    selectors: Iterable[int | str],
    items: list[Any],
    names: list[str],
    ids: list[int],
    errors: list[str],
    extra: Callable[[str], list[int]] | None = None,
) -> list[int]:
    """Indices of ``items`` matched by any selector (in item order); a selector matching nothing
    adds a line to ``errors``."""
    chosen: set[int] = set()
    for sel in selectors:
        if isinstance(sel, int):
            hit = [i for i, x in enumerate(ids) if x == sel]
        else:
            hit = extra(sel) if extra is not None else []
            if not hit:
                hit = [i for i, name in enumerate(names) if fnmatch.fnmatchcase(name, sel)]
        if not hit and items:
            example = names[0] if what != "flows" else f"{ids[0]} or a group name like {names[0]!r}"
            errors.append(f"monitor.{what} = {sel!r}: matches no {what[:-1]}; e.g. {example!r}")
        chosen.update(hit)
    return sorted(chosen)


# --- the monitor ---------------------------------------------------------------------------------


Columns = dict[str, np.ndarray[Any, Any]]


class TimeSeries:
    """A run's time series (``Result.timeseries``): the DataFrames ``ports``, ``flows`` and
    ``switches``. Each row covers the interval ending at ``t_ps`` and lasting ``dt_ps`` (the last
    one may be shorter: the run's end). A monitored run keeps them as numpy columns and builds
    each DataFrame on first access, so a caller that reads only the summary never imports
    pandas; they pickle either way."""

    def __init__(
        self,
        ports: pd.DataFrame | None = None,
        flows: pd.DataFrame | None = None,
        switches: pd.DataFrame | None = None,
        *,
        columns: dict[str, Columns] | None = None,
        names: dict[str, list[str]] | None = None,
    ) -> None:
        self._frames: dict[str, pd.DataFrame] = {}
        for name, frame in (("ports", ports), ("flows", flows), ("switches", switches)):
            if frame is not None:
                self._frames[name] = frame
        # not built yet: the table's columns, and the categories of its name column (codes)
        self._columns = columns or {}
        self._names = names or {}

    @property
    def ports(self) -> pd.DataFrame:
        return self._frame("ports", PORT_COLUMNS, "link")

    @property
    def flows(self) -> pd.DataFrame:
        return self._frame("flows", FLOW_COLUMNS, None)

    @property
    def switches(self) -> pd.DataFrame:
        return self._frame("switches", SWITCH_COLUMNS, "switch")

    def _frame(self, name: str, order: tuple[str, ...], category: str | None) -> pd.DataFrame:
        frame = self._frames.get(name)
        if frame is None:
            import pandas as pd

            cols: dict[str, Any] = dict(self._columns.pop(name))
            if category is not None:
                cols[category] = pd.Categorical.from_codes(cols[category], self._names.pop(name))
            frame = self._frames[name] = pd.DataFrame({c: cols[c] for c in order})
        return frame

    def write_files(self, directory: Path) -> None:
        for name, file in TIMESERIES_FILES.items():
            getattr(self, name).to_parquet(directory / file, index=False)

    @classmethod
    def load(cls, directory: Path) -> TimeSeries | None:
        paths = {name: directory / file for name, file in TIMESERIES_FILES.items()}
        if not all(p.is_file() for p in paths.values()):
            return None
        import pandas as pd

        return cls(**{name: pd.read_parquet(p) for name, p in paths.items()})


class Monitor:
    """Samples the selected ports, flows and switches of ``net`` every ``section.interval``."""

    def __init__(self, net: Network, section: MonitorSection) -> None:
        self.net = net
        self.sim = net.sim
        self.interval_ps = section.interval
        ports = net.ports
        roles = [port_role(p) for p in ports]

        def by_role(sel: str) -> list[int]:
            return [i for i, r in enumerate(roles) if r == sel] if sel in PORT_ROLES else []

        errors: list[str] = []
        port_ids = list(range(len(ports)))
        port_idx = _select("ports", section.ports, ports, [p.name for p in ports], port_ids, errors, by_role)
        qps = net.qps
        groups = [qp.spec.group for qp in qps]
        flow_idx = _select("flows", section.flows, qps, groups, [qp.flow_id for qp in qps], errors)
        switches = list(net.switches.values())
        names = [s.name for s in switches]
        switch_idx = _select(
            "switches", section.switches, switches, names, list(range(len(switches))), errors
        )
        if errors:
            from spraylab.model.scenario import ScenarioError

            raise ScenarioError(errors)
        self.ports: list[Port] = [ports[i] for i in port_idx]
        self.port_names = [p.name for p in self.ports]
        self._index = {id(p): i for i, p in enumerate(self.ports)}
        for port in self.ports:
            port.monitor = self
        self.qps = [qps[i] for i in flow_idx]
        self.switches = [switches[i] for i in switch_idx]
        # cumulative counters at the previous sample
        n = len(self.ports)
        self._lossless = [isinstance(p, PfcPort) for p in self.ports]
        self._prev_ecn = [0] * n
        self._prev_drops = [[0] * n for _ in range(N_CAUSES)]  # per cause, per port
        self._prev_paused = [0] * n
        self._prev_bytes = [0] * n  # departed
        self._prev_packets = [0] * n
        self._start_queue = [0] * n  # the queue at the previous sample
        self._run_max_queue = [p.max_queue_bytes for p in self.ports]  # see "Queue maximum"
        for port in self.ports:
            port.max_queue_bytes = 0
        self._prev_flow = [(0, 0, 0)] * len(self.qps)  # delivered bytes, CNPs, retransmissions
        self._port_cols: dict[str, array[int]] = {c: array("q") for c in PORT_COLUMNS if c != "link"}
        self._port_link = array("q")
        self._flow_cols: dict[str, array[Any]] = {
            c: array("d" if c == "rate_bps" else "q") for c in FLOW_COLUMNS
        }
        self._switch_cols: dict[str, array[int]] = {c: array("q") for c in SWITCH_COLUMNS if c != "switch"}
        self._switch_id = array("q")
        self.last_ps = 0
        self.next_ps = self.interval_ps
        self.stopped = False
        self.finished: TimeSeries | None = None
        self._tick_cb = self._tick
        self._recheck_cb = self._recheck
        self.sim.schedule(self.next_ps, self._tick_cb)

    # --- scheduling ---------------------------------------------------------------------------
    def _tick(self, _: Any) -> None:
        if self.finished is not None:
            return  # the run was continued after its result was taken: sampling has ended
        self.sample()
        self.next_ps = self.sim.now + self.interval_ps
        self._continue()

    def _recheck(self, _: Any) -> None:
        self._continue()

    def _continue(self) -> None:
        """Schedule the next sample while anything else is pending: events in later calendar
        buckets, else events left in the bucket being processed (its last event is this one when
        nothing follows). When events follow in the current bucket, look again after the last of
        them (at its time: ties run in scheduling order, so after it), since they may schedule
        more."""
        sim = self.sim
        if sim.has_later_buckets():
            sim.schedule(self.next_ps, self._tick_cb)
            return
        tail = sim.bucket_tail()
        if tail is not None and tail[1] not in (self._tick_cb, self._recheck_cb):
            sim.schedule(tail[0], self._recheck_cb)
            return
        self.stopped = True  # idle: the run ends here, as it would unmonitored

    # --- sampling -----------------------------------------------------------------------------
    def sample(self) -> None:
        """Close the interval ending now."""
        now = self.sim.now
        dt = now - self.last_ps
        if dt <= 0:
            return
        self._sample_ports(now, dt)
        self._sample_flows(now, dt)
        self._sample_switches(now, dt)
        self.last_ps = now

    def _held(self, now: int) -> tuple[list[int], list[int]] | None:
        """Per monitored port, the bytes and packets it has counted whose last bit has not left
        by ``now`` (module doc), or None when no port is busy past ``now``."""
        ports = self.ports
        # port i's packet is held when its event is after now + the port's delay, and it can be
        # no later than the port's busy_until + delay: only buckets in that window are read
        after = [now + p.delay_ps if p.busy_until > now else _NEVER for p in ports]
        first = min(after, default=_NEVER)
        if first == _NEVER:
            return None
        last = max(p.busy_until + p.delay_ps for p in ports)
        low_bucket = (first + 1) >> BUCKET_SHIFT  # every time in a bucket below is <= first
        high_bucket = last >> BUCKET_SHIFT
        held_bytes = [0] * len(ports)
        held_packets = [0] * len(ports)
        owner = self._index.get
        # an arrival's event names the port it left through; a lossless port's end of
        # transmission names it too, with no packet
        for t, fn, pkt in self.sim.pending_window(low_bucket, high_bucket):
            i = owner(id(fn))
            if i is not None and pkt is not None and t > after[i]:
                held_bytes[i] += pkt.size
                held_packets[i] += 1
        return held_bytes, held_packets

    def _sample_ports(self, now: int, dt: int) -> None:
        # column by column: a list per counter over the ports, differenced against the last
        # sample's (half the time of one loop over the ports doing everything per port)
        cols = self._port_cols
        ports = self.ports
        n = len(ports)
        cols["t_ps"].extend(repeat(now, n))
        cols["dt_ps"].extend(repeat(dt, n))
        self._port_link.extend(range(n))
        departed = [p.tx_bytes for p in ports]
        packets = [p.tx_packets for p in ports]
        held = self._held(now)
        if held is not None:
            departed = list(map(sub, departed, held[0]))
            packets = list(map(sub, packets, held[1]))
        cols["tx_bytes"].extend(map(sub, departed, self._prev_bytes))
        cols["tx_packets"].extend(map(sub, packets, self._prev_packets))
        self._prev_bytes, self._prev_packets = departed, packets
        queue = [p.queue_bytes() for p in ports]
        cols["queue_bytes"].extend(queue)
        # the largest backlog an arrival found since the last sample (module doc)
        arrivals_max = [p.max_queue_bytes for p in ports]
        for port in ports:
            port.max_queue_bytes = 0
        self._run_max_queue = list(map(max, self._run_max_queue, arrivals_max))
        cols["queue_max_bytes"].extend(map(max, arrivals_max, self._start_queue, queue))
        self._start_queue = queue
        ecn = [p.ecn_marks for p in ports]
        cols["ecn_marks"].extend(map(sub, ecn, self._prev_ecn))
        self._prev_ecn = ecn
        for j, column in enumerate(PORT_DROP_COLUMNS):
            drops = [p.drops_by_cause[j] for p in ports]
            cols[column].extend(map(sub, drops, self._prev_drops[j]))
            self._prev_drops[j] = drops
        paused = [
            p.paused_ps + (now - p.paused_since if p.paused else 0) if lossless else p.paused_ps
            for p, lossless in zip(ports, self._lossless)
        ]  # a pause in progress counts up to now
        cols["paused_ps"].extend(map(sub, paused, self._prev_paused))
        self._prev_paused = paused

    def _sample_flows(self, now: int, dt: int) -> None:
        cols = self._flow_cols
        start = self.last_ps
        for i, qp in enumerate(self.qps):
            started = getattr(qp, "start_ps", -1)
            acked = getattr(qp, "acked_ps", -1)
            if started < 0 or started > now or 0 <= acked <= start:
                continue  # not active during this interval
            rx = qp.rx
            delivered = rx.delivered_bytes
            cnps = rx.cnps_sent
            retx = getattr(qp, "retx_packets", 0)
            prev = self._prev_flow[i]
            cols["t_ps"].append(now)
            cols["dt_ps"].append(dt)
            cols["flow_id"].append(qp.flow_id)
            cols["delivered_bytes"].append(delivered - prev[0])
            cols["rate_bps"].append(float(_flow_rate_bps(qp)))
            cols["window_bytes"].append(_window_bytes(qp))
            cols["inflight_bytes"].append(_inflight_bytes(qp))
            cols["cnps"].append(cnps - prev[1])
            cols["retx_packets"].append(retx - prev[2])
            self._prev_flow[i] = (delivered, cnps, retx)

    def _sample_switches(self, now: int, dt: int) -> None:
        cols = self._switch_cols
        for i, switch in enumerate(self.switches):
            queues = [p.queue_bytes() for p in switch.ports]
            cols["t_ps"].append(now)
            cols["dt_ps"].append(dt)
            self._switch_id.append(i)
            # the packets a ToR program holds in the shared buffer (lossy fabrics) occupy it too
            held = switch.buffer.held_bytes if switch.buffer is not None else 0
            cols["buffer_bytes"].append(sum(queues) + held)
            cols["max_port_queue_bytes"].append(max(queues, default=0))

    # --- results ------------------------------------------------------------------------------
    def finish(self) -> TimeSeries:
        """Close the interval ending now (the run's end), give each port back its run's queue
        maximum, and return every sample. Monitoring ends here (a later call returns the same
        series; a continued run is no longer sampled), and it must come before the ports'
        counters are read for the run's tables."""
        if self.finished is not None:
            return self.finished
        self.sample()
        self.stopped = True
        # the links table's maximum is the run's
        for port, run_max in zip(self.ports, self._run_max_queue):
            if run_max > port.max_queue_bytes:
                port.max_queue_bytes = run_max
        ports = {c: _column(a) for c, a in self._port_cols.items()}
        ports["link"] = _column(self._port_link)
        flows = {c: _column(a) for c, a in self._flow_cols.items()}
        switches = {c: _column(a) for c, a in self._switch_cols.items()}
        switches["switch"] = _column(self._switch_id)
        columns = {"ports": ports, "flows": flows, "switches": switches}
        names = {"ports": list(self.port_names), "switches": [s.name for s in self.switches]}
        self.finished = TimeSeries(columns=columns, names=names)
        return self.finished


def _column(values: array[Any]) -> np.ndarray[Any, Any]:
    """One sampled column as numpy (int64, or float64 for rates), sharing the array's memory
    (no copy: sampling has ended, and the array can no longer grow)."""
    return np.frombuffer(values, dtype=np.float64 if values.typecode == "d" else np.int64)


def _flow_rate_bps(qp: Any) -> float:
    """The sender's current rate: DCQCN's Rc, or the line rate without congestion control."""
    rate = getattr(qp, "rate_bps", None)
    if rate is not None:
        return float(rate)
    cc = getattr(qp, "cc", None)
    return float(cc.rc if cc is not None else qp.line_rate_bps)


def _window_bytes(qp: Any) -> int:
    """The byte window capping the sender (``transport.window``), 0 when none."""
    packets = getattr(qp, "window_packets", 0)
    return packets * qp.full_wire_bytes if 0 < packets < 1 << 62 else 0


def _inflight_bytes(qp: Any) -> int:
    """Payload sent at least once and not yet cumulatively acknowledged."""
    if getattr(qp, "sender_done", False):
        return 0
    mtu = qp.mtu
    size = qp.spec.size_bytes
    return max(0, min(qp.max_sent * mtu, size) - min(qp.snd_una * mtu, size))
