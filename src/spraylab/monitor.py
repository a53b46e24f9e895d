"""Time series of a run (the ``[monitor]`` section): per port, per flow and per switch, sampled
every ``interval``. Nothing here runs unless a scenario has ``[monitor]``.

**Departures, not enqueues.** A lossy port (:class:`spraylab.net.port.Port`) counts ``tx_bytes``
when a packet is *enqueued*: it computes the packet's departure time then and has no dequeue
event, so sampling ``tx_bytes`` gives the arrival rate, which may exceed the link rate. A monitored
port is switched to a subclass (:class:`MonitoredPort`, :class:`MonitoredPfcPort`) that logs each
packet's departure, the instant its last bit leaves the port, and its size: appended in FIFO order
for data (departures on a lossy port never decrease, busy_until only grows), on a heap for control
frames (they leave after their own serialization, ahead of the data backlog, so not in order). A
sample pops every entry departed by then. Summed over all intervals the departures are exactly
the port's ``tx_bytes`` less what is still queued at the end. Unmonitored ports keep the base
classes and pay nothing; monitored ones pay one extra call per packet.

**Queue maximum.** The largest backlog a packet found on arrival during the interval (the
definition of the links table's ``max_queue_bytes``), or the queue at the interval's start if
larger (a standing queue that nothing joined).

**Sampling never perturbs the run.** The sampler only reads state; it is an ordinary event
every ``interval``, and it stops rescheduling itself once no other event is pending (checked
again after the events left in the current bucket), so a run that would go idle still does, at
the same time. The run's ``events`` count includes the sampler's events.

Memory is proportional to the samples kept (rows: monitored ports and switches per sample, plus
the flows active in each interval) plus the departure log of packets still queued.
"""

from __future__ import annotations

import fnmatch
from array import array
from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from heapq import heappop, heappush
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from spraylab.net.drops import DROP_CAUSES, N_CAUSES
from spraylab.net.host import Host
from spraylab.net.packet import Packet
from spraylab.net.port import PfcPort, Port

if TYPE_CHECKING:
    import pandas as pd

    from spraylab.config import MonitorSection
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
    return ports.assign(utilization=ports["tx_bytes"] * 8e12 / (rate * ports["dt_ps"]))


# --- the departure log: ports switched to these classes while monitored ------------------------


class DepartureLog:
    """One monitored port's departures not yet sampled, and its queue maximum this interval."""

    __slots__ = ("data", "control", "max_queue_ps", "max_queue_bytes")

    def __init__(self) -> None:
        self.data: deque[tuple[int, int]] = deque()  # (departure ps, bytes), in departure order
        self.control: list[tuple[int, int]] = []  # heap of (departure ps, bytes)
        self.max_queue_ps = 0  # lossy ports: backlog in time (the port's own measure)
        self.max_queue_bytes = 0  # lossless ports


class MonitoredPort(Port):
    """A lossy port that logs departures (same layout as :class:`Port`, so a port can switch)."""

    __slots__ = ()

    def send(self, pkt: Packet) -> None:
        log = self.monitor
        backlog_ps = self.busy_until - self.sim.now
        if backlog_ps > log.max_queue_ps:
            log.max_queue_ps = backlog_ps
        sent = self.tx_bytes
        Port.send(self, pkt)
        size = self.tx_bytes - sent
        if size:  # not dropped: it leaves when the port's new busy_until is reached
            log.data.append((self.busy_until, size))

    def send_control(self, pkt: Packet) -> None:
        now = self.sim.now
        sent = self.tx_bytes
        Port.send_control(self, pkt)
        size = self.tx_bytes - sent
        # Port.send_control: the frame leaves after its own serialization
        heappush(self.monitor.control, (now + int(size * self.ps_per_byte), size))


class MonitoredPfcPort(PfcPort):
    """A lossless port that logs departures: its transmissions are sequential, so in order."""

    __slots__ = ()

    def send(self, pkt: Packet) -> None:
        log = self.monitor
        backlog = self.queued_bytes + pkt.size  # PfcPort.send's measure, before it may start sending
        if backlog > log.max_queue_bytes:
            log.max_queue_bytes = backlog
        PfcPort.send(self, pkt)

    def _start_next(self) -> None:
        sent = self.tx_bytes
        PfcPort._start_next(self)
        size = self.tx_bytes - sent
        if size:
            self.monitor.data.append((self.busy_until, size))


def _attach(port: Port) -> DepartureLog:
    log = DepartureLog()
    port.monitor = log
    # Same slots, so the instance can change class; callers look ``send`` up on every packet.
    port.__class__ = MonitoredPfcPort if isinstance(port, PfcPort) else MonitoredPort
    return log


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


@dataclass
class TimeSeries:
    """A run's time series (``Result.timeseries``). Each row covers the interval ending at
    ``t_ps`` and lasting ``dt_ps`` (the last one may be shorter: the run's end)."""

    ports: pd.DataFrame
    flows: pd.DataFrame
    switches: pd.DataFrame

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
            from spraylab.config import ScenarioError

            raise ScenarioError(errors)
        self.ports: list[Port] = [ports[i] for i in port_idx]
        self.logs = [_attach(p) for p in self.ports]
        self.port_names = [p.name for p in self.ports]
        self.qps = [qps[i] for i in flow_idx]
        self.switches = [switches[i] for i in switch_idx]
        # cumulative counters at the previous sample
        n = len(self.ports)
        self._prev_ecn = [0] * n
        self._prev_drops = [[0] * N_CAUSES for _ in range(n)]
        self._prev_paused = [0] * n
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
        self._tick_cb = self._tick
        self._recheck_cb = self._recheck
        self.sim.schedule(self.next_ps, self._tick_cb)

    # --- scheduling ---------------------------------------------------------------------------
    def _tick(self, _: Any) -> None:
        self.sample()
        self.next_ps = self.sim.now + self.interval_ps
        self._continue()

    def _recheck(self, _: Any) -> None:
        self._continue()

    def _continue(self) -> None:
        """Schedule the next sample while anything else is pending. The engine's calendar queue
        is read directly: future buckets, else the events left in the bucket being processed
        (its last event is this one when nothing follows). When events follow in the current
        bucket, look again after the last of them (at its time: ties run in scheduling order,
        so after it), since they may schedule more."""
        sim = self.sim
        if sim._bucket_heap:
            sim.schedule(self.next_ps, self._tick_cb)
            return
        current = sim._current
        if current and current[-1][1] not in (self._tick_cb, self._recheck_cb):
            sim.schedule(current[-1][0], self._recheck_cb)
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

    def _sample_ports(self, now: int, dt: int) -> None:
        cols = self._port_cols
        t_col, dt_col = cols["t_ps"], cols["dt_ps"]
        bytes_col, pkts_col = cols["tx_bytes"], cols["tx_packets"]
        q_col, qmax_col, ecn_col = cols["queue_bytes"], cols["queue_max_bytes"], cols["ecn_marks"]
        drop_cols = [cols[c] for c in PORT_DROP_COLUMNS]
        paused_col = cols["paused_ps"]
        link = self._port_link
        for i, (port, log) in enumerate(zip(self.ports, self.logs)):
            departed = packets = 0
            data = log.data
            while data and data[0][0] <= now:
                departed += data.popleft()[1]
                packets += 1
            control = log.control
            while control and control[0][0] <= now:
                departed += heappop(control)[1]
                packets += 1
            queue = port.queue_bytes()
            if isinstance(port, PfcPort):
                qmax = log.max_queue_bytes
                log.max_queue_bytes = queue
                paused = port.paused_ps + (now - port.paused_since if port.paused else 0)
            else:
                qmax = int(log.max_queue_ps / port.ps_per_byte)
                backlog_ps = port.busy_until - now
                log.max_queue_ps = backlog_ps if backlog_ps > 0 else 0
                paused = port.paused_ps
            t_col.append(now)
            dt_col.append(dt)
            link.append(i)
            bytes_col.append(departed)
            pkts_col.append(packets)
            q_col.append(queue)
            qmax_col.append(max(qmax, queue))
            ecn = port.ecn_marks
            ecn_col.append(ecn - self._prev_ecn[i])
            self._prev_ecn[i] = ecn
            prev = self._prev_drops[i]
            by_cause = port.drops_by_cause
            for j in range(N_CAUSES):
                value = by_cause[j]
                drop_cols[j].append(value - prev[j])
                prev[j] = value
            paused_col.append(paused - self._prev_paused[i])
            self._prev_paused[i] = paused

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
        """Close the interval ending now (the run's end) and return every sample as tables."""
        import pandas as pd

        self.sample()
        ports = {c: np.frombuffer(a, dtype=np.int64) for c, a in self._port_cols.items()}
        ports["link"] = pd.Categorical.from_codes(
            np.frombuffer(self._port_link, dtype=np.int64), self.port_names
        )  # type: ignore[assignment]
        flows = {
            c: np.frombuffer(a, dtype=np.float64 if c == "rate_bps" else np.int64)
            for c, a in self._flow_cols.items()
        }
        switches = {c: np.frombuffer(a, dtype=np.int64) for c, a in self._switch_cols.items()}
        names = [s.name for s in self.switches]
        switches["switch"] = pd.Categorical.from_codes(np.frombuffer(self._switch_id, dtype=np.int64), names)  # type: ignore[assignment]
        return TimeSeries(
            pd.DataFrame({c: ports[c] for c in PORT_COLUMNS}).copy(),
            pd.DataFrame({c: flows[c] for c in FLOW_COLUMNS}).copy(),
            pd.DataFrame({c: switches[c] for c in SWITCH_COLUMNS}).copy(),
        )


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
