"""Progress of sweeps: runs done, incomplete, failed and skipped, elapsed time and ETA. A bar on a
terminal; otherwise one-line records at a bounded rate (see :mod:`spraylab.runs.progress`)."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)

from spraylab.runs.progress import LineRecords
from spraylab.sweeps.sweep import SweepEvents

if TYPE_CHECKING:
    from spraylab.sweeps.executors import Outcome
    from spraylab.sweeps.sweep import Point, Sweep


class SweepProgress(SweepEvents):
    """Counts runs as they finish; prints one line per failed or incomplete run above the bar."""

    def __init__(self, console: Console, enabled: bool = True) -> None:
        self.console = console
        self.enabled = enabled
        self.done = 0
        self.failed = 0
        self.incomplete = 0
        self._progress: Progress | None = None
        self._task: Any = None
        self._records = LineRecords(console.file) if not console.is_terminal else None
        self._name = ""
        self._to_run = 0
        self._start = time.monotonic()

    def start(self, sweep: Sweep, to_run: int, skipped: int) -> None:
        if not self.enabled:
            return
        self._name, self._to_run, self._start = sweep.name, to_run, time.monotonic()
        if self._records is not None:
            return
        self._progress = Progress(
            TextColumn("[bold]{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn(
                "[green]{task.fields[done]} done[/] [red]{task.fields[failed]} failed[/] {task.fields[skipped]} skipped"
            ),
            TimeElapsedColumn(),
            TextColumn("ETA"),
            TimeRemainingColumn(),
            console=self.console,
        )
        self._progress.start()
        self._task = self._progress.add_task(sweep.name, total=to_run, done=0, failed=0, skipped=skipped)

    def finished(self, point: Point, outcome: Outcome) -> None:
        summary = outcome.result.summary if outcome.result is not None else {}
        if outcome.ok and not summary.get("completed", True):
            self.incomplete += 1
            self.console.print(
                f"incomplete: {point.label}: stopped by {summary.get('stop_reason')} with "
                f"{summary.get('flows_completed')}/{summary.get('flows')} flows done",
                markup=False,
                highlight=False,
            )
        elif outcome.ok:
            self.done += 1
        else:
            self.failed += 1
            message = (outcome.error or {}).get("message", "")
            kind = (outcome.error or {}).get("type", "error")
            self.console.print(f"failed: {point.label}: {kind}: {message}", markup=False, highlight=False)
        if self._progress is not None:
            self._progress.update(self._task, advance=1, done=self.done + self.incomplete, failed=self.failed)
        self.tick()

    def tick(self) -> None:
        """A plain record when one is due, also while long runs are still in flight."""
        if self.enabled and self._records is not None and self._records.due():
            finished = self.done + self.incomplete + self.failed
            self._records.emit(
                f"sweep {self._name}: {finished}/{self._to_run} runs ({self.done} done, {self.incomplete} incomplete, "
                f"{self.failed} failed)  wall {time.monotonic() - self._start:.0f}s"
            )

    def stop(self) -> None:
        if self._progress is not None:
            self._progress.stop()
            self._progress = None
