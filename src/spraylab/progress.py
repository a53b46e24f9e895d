"""A progress bar for long runs: simulated time, events/s, flows done and ETA.

It appears only once a run has taken more than a couple of seconds, so short runs and tests
stay quiet. The simulator calls it every 2^16 events."""

from __future__ import annotations

from types import TracebackType
from typing import TYPE_CHECKING, Any

from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn

from spraylab.units import format_time

if TYPE_CHECKING:
    from spraylab.config import Scenario
    from spraylab.engine.simulator import Simulator
    from spraylab.net.network import Network

SHOW_AFTER_S = 2.0


class RunProgress:
    def __init__(self, scenario: Scenario, label: str, enabled: bool = True) -> None:
        self.label = label
        self.enabled = enabled
        self.time_limit_ps = scenario.run.time_limit
        self.stop_on_workload = scenario.run.stop == "workload"
        self.net: Network | None = None
        self._total_bytes = 0
        self._progress: Progress | None = None
        self._task: Any = None

    def bind(self, net: Network) -> None:
        self.net = net

    def __call__(self, sim: Simulator, elapsed_s: float) -> None:
        if not self.enabled or elapsed_s < SHOW_AFTER_S:
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
            self._task = self._progress.add_task("run", total=1.0, label=self.label, sim_time="", rate="", flows="")
        fraction = sim.now / self.time_limit_ps
        flows = ""
        net = self.net
        if net is not None and net.qps:
            flows = f"flows {net.flows_received}/{len(net.qps)}"
            if self.stop_on_workload:
                if self._total_bytes == 0:
                    self._total_bytes = sum(qp.spec.size_bytes for qp in net.qps)
                delivered = sum(qp.rx.delivered_bytes for qp in net.qps)
                fraction = max(fraction, delivered / self._total_bytes)
        self._progress.update(
            self._task,
            completed=min(1.0, fraction),
            sim_time=format_time(sim.now),
            rate=f"{sim.events / max(elapsed_s, 1e-9):,.0f}",
            flows=flows,
        )

    def __enter__(self) -> RunProgress:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        if self._progress is not None:
            self._progress.stop()
            self._progress = None
