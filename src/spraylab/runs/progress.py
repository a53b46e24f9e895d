"""Progress of long runs: simulated time, events/s, flows done and an estimate of the rest.

On a terminal, a bar that appears only once a run has taken more than a couple of seconds, so
short runs and tests stay quiet. When stdout is not a terminal (a pipe, a log file, a batch job)
one-line records go to stderr instead, at most one per ``SPRAYLAB_PROGRESS_INTERVAL_S`` seconds
(default 10), each with the fraction done and an ETA, naming what the fraction is measured by
(:meth:`RunProgress.estimate`). The simulator calls it every 2^16 events."""

from __future__ import annotations

import os
import sys
import time
from types import TracebackType
from typing import TYPE_CHECKING, Any

from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn

from spraylab.units import format_time

if TYPE_CHECKING:
    from spraylab.engine.simulator import Simulator
    from spraylab.model.scenario import Scenario
    from spraylab.net.network import Network

SHOW_AFTER_S = 2.0
INTERVAL_ENV = "SPRAYLAB_PROGRESS_INTERVAL_S"
DEFAULT_INTERVAL_S = 10.0


def record_interval_s() -> float:
    """Seconds between plain progress records (environment ``SPRAYLAB_PROGRESS_INTERVAL_S``)."""
    try:
        value = float(os.environ.get(INTERVAL_ENV, DEFAULT_INTERVAL_S))
    except ValueError:
        return DEFAULT_INTERVAL_S
    return value if value > 0 else DEFAULT_INTERVAL_S


def _duration(seconds: float) -> str:
    """``42s``, ``3m20s``, ``2h05m``: wall-clock durations as a person reads them."""
    seconds = max(0, round(seconds))
    if seconds < 60:
        return f"{seconds}s"
    if seconds < 3600:
        return f"{seconds // 60}m{seconds % 60:02d}s"
    return f"{seconds // 3600}h{seconds % 3600 // 60:02d}m"


class LineRecords:
    """One-line progress records to a stream, at most one per ``interval_s`` of wall time."""

    def __init__(self, stream: Any = None, interval_s: float | None = None) -> None:
        self.stream = stream if stream is not None else sys.stderr
        self.interval_s = record_interval_s() if interval_s is None else interval_s
        self._last = time.monotonic()

    def due(self) -> bool:
        return time.monotonic() - self._last >= self.interval_s

    def emit(self, text: str) -> None:
        self._last = time.monotonic()
        print(f"progress: {text}", file=self.stream, flush=True)


class RunProgress:
    def __init__(
        self, scenario: Scenario, label: str, enabled: bool = True, plain: bool | None = None
    ) -> None:
        self.label = label
        self.enabled = enabled
        # plain records unless stdout is a terminal (where the bar lives)
        self._records = LineRecords() if (not sys.stdout.isatty() if plain is None else plain) else None
        self.time_limit_ps = scenario.run.time_limit
        self.stop_on_workload = scenario.run.stop == "workload"
        self.net: Network | None = None
        self._total_bytes = 0
        self._progress: Progress | None = None
        self._task: Any = None

    def bind(self, net: Network) -> None:
        self.net = net

    def __call__(self, sim: Simulator, elapsed_s: float) -> None:
        if not self.enabled:
            return
        if self._records is not None:
            if self._records.due():
                self._records.emit(self._record(sim, elapsed_s))
            return
        if elapsed_s < SHOW_AFTER_S:
            return
        if self._progress is None:
            self._progress = Progress(
                TextColumn("[bold]{task.fields[label]}"),
                BarColumn(),
                TextColumn("{task.percentage:>5.1f}%"),
                TextColumn("sim {task.fields[sim_time]}  {task.fields[rate]} ev/s  {task.fields[flows]}"),
                TimeElapsedColumn(),
                TimeRemainingColumn(),
                transient=True,
            )
            self._progress.start()
            self._task = self._progress.add_task(
                "run", total=1.0, label=self.label, sim_time="", rate="", flows=""
            )
        fraction = max(sim.now / self.time_limit_ps, self.estimate(sim)[0])
        net = self.net
        flows = f"flows {net.flows_received}/{len(net.qps)}" if net is not None and net.qps else ""
        self._progress.update(
            self._task,
            completed=min(1.0, fraction),
            sim_time=format_time(sim.now),
            rate=f"{sim.events / max(elapsed_s, 1e-9):,.0f}",
            flows=flows,
        )

    def estimate(self, sim: Simulator) -> tuple[float, str]:
        """The fraction of the run done, and what it is measured by. A run that stops when its
        workload is done: the bytes delivered of the workload's bytes (a flow's bytes do not
        arrive at a steady rate, so this is an estimate, not a promise); a run that stops at its
        time limit: simulated time of ``run.time_limit``, which is exact."""
        net = self.net
        if self.stop_on_workload and net is not None and net.qps:
            if self._total_bytes == 0:
                self._total_bytes = sum(qp.spec.size_bytes for qp in net.qps)
            delivered = sum(qp.rx.delivered_bytes for qp in net.qps)
            return min(1.0, delivered / max(1, self._total_bytes)), "bytes delivered of the workload"
        return min(1.0, sim.now / self.time_limit_ps), "simulated time of run.time_limit"

    def _record(self, sim: Simulator, elapsed_s: float) -> str:
        net = self.net
        flows = f"  flows {net.flows_received}/{len(net.qps)}" if net is not None and net.qps else ""
        fraction, basis = self.estimate(sim)
        # remaining = elapsed x (1 - f) / f: the average pace so far carried on
        eta = f"ETA {_duration(elapsed_s * (1 - fraction) / fraction)}" if fraction > 0 else "ETA unknown yet"
        return (
            f"{self.label}: sim {format_time(sim.now)} of at most {format_time(self.time_limit_ps)}{flows}  "
            f"{sim.events:,} events ({sim.events / max(elapsed_s, 1e-9):,.0f}/s)  wall {elapsed_s:.1f}s  "
            f"est. {100 * fraction:.1f}% done by {basis}, {eta} at the pace so far"
        )

    def __enter__(self) -> RunProgress:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        if self._progress is not None:
            self._progress.stop()
            self._progress = None
