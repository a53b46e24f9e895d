"""Runs as the command line makes them: with a progress display on stderr
(:mod:`spraylab.runs.progress`) and Ctrl-C ending the event loop between two events, the part
simulated kept as an incomplete result (:mod:`spraylab.runs.interrupt`)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from spraylab.metrics.result import Result
    from spraylab.model.scenario import Scenario
    from spraylab.runs.comparison import Comparison


def run_watched(scenario: Scenario, label: str = "") -> tuple[Result, bool]:
    """The run's Result, and whether Ctrl-C ended it (then the Result is the part simulated so
    far, incomplete: ``stop_reason = "interrupted"``)."""
    from spraylab.runs.experiment import run
    from spraylab.runs.interrupt import StopOnInterrupt
    from spraylab.runs.memory import resume_collector
    from spraylab.runs.progress import RunProgress

    resume_collector()  # the command's imports and loading are done (spraylab.cli.main)

    with (
        RunProgress(scenario, label or scenario.name, enabled=scenario.run.progress) as progress,
        StopOnInterrupt(progress) as guard,
    ):
        result = run(scenario, progress=guard)
    return result, guard.requested


def compare_watched(scenario: Scenario, variants: Sequence[tuple[str, dict[str, Any]]]) -> Comparison:
    """:func:`spraylab.runs.comparison.compare` with each run watched as :func:`run_watched`."""
    from spraylab.runs.comparison import compare

    return compare(scenario, variants, runner=lambda sc, label: run_watched(sc, label))
