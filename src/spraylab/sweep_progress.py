"""A progress bar for sweeps: runs done, failed and skipped, elapsed time and ETA."""

from __future__ import annotations

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

from spraylab.sweep import SweepEvents

if TYPE_CHECKING:
    from spraylab.executors import Outcome
    from spraylab.sweep import Point, Sweep


class SweepProgress(SweepEvents):
    """Counts runs as they finish; prints one line per failed run above the bar."""

    def __init__(self, console: Console, enabled: bool = True) -> None:
        self.console = console
        self.enabled = enabled
        self.done = 0
        self.failed = 0
        self._progress: Progress | None = None
        self._task: Any = None

    def start(self, sweep: Sweep, to_run: int, skipped: int) -> None:
        if not self.enabled:
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
        if outcome.ok:
            self.done += 1
        else:
            self.failed += 1
            message = (outcome.error or {}).get("message", "")
            kind = (outcome.error or {}).get("type", "error")
            self.console.print(f"failed: {point.label}: {kind}: {message}", markup=False, highlight=False)
        if self._progress is not None:
            self._progress.update(self._task, advance=1, done=self.done, failed=self.failed)

    def stop(self) -> None:
        if self._progress is not None:
            self._progress.stop()
            self._progress = None
