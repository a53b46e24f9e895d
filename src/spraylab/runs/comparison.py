"""Several load balancers on one scenario: the Python API behind ``spraylab compare`` and
``spraylab demo``.

:func:`compare` runs the scenario once per variant label (``ecmp``, ``rps/ideal``,
``dfs[B=64]/sr``: :mod:`spraylab.model.variants`), every variant validated before the first runs, and
returns a :class:`Comparison`: the results by label, one scenario card for all of them, and
whether Ctrl-C ended it early (then the finished runs are kept, the last one partial).
:meth:`Comparison.save` writes what the command writes: one result directory per label, the
index ``spraylab report`` reads, and the FCT-slowdown and uplink-utilization plots.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from spraylab.metrics.result import Result
    from spraylab.model.scenario import Scenario
    from spraylab.results.card import Card

# how one variant runs: its Result, and whether Ctrl-C ended it (the CLI's shows progress)
Runner = Callable[["Scenario", str], "tuple[Result, bool]"]


def _plain_run(scenario: Scenario, label: str) -> tuple[Result, bool]:
    from spraylab.runs.experiment import run

    return run(scenario), False


@dataclass
class Comparison:
    """The runs of one base scenario under several variants, in the order they were given."""

    name: str
    scenarios: dict[str, Scenario]  # label -> the variant's scenario, every one given
    results: dict[str, Result]  # label -> its result, for the variants that ran
    interrupted: bool = False  # Ctrl-C: the variants after the last result never started

    @property
    def card(self) -> Card:
        from spraylab.results.card import compare_card

        return compare_card(self.scenarios)

    @property
    def summaries(self) -> dict[str, dict[str, Any]]:
        return {label: result.summary for label, result in self.results.items()}

    def write(self, directory: Path) -> None:
        """Fill ``directory`` (existing, empty): a result directory per label (a directory
        name cannot hold ``/``), the index of columns ``spraylab report`` reads, the plots."""
        from spraylab.report.comparison_plots import slowdown_cdf, uplink_utilization
        from spraylab.report.grouping import COMPARE_INDEX

        dirs = {label: label.replace("/", "-") for label in self.results}
        for label, result in self.results.items():
            (directory / dirs[label]).mkdir()
            result.write_files(directory / dirs[label])
        index = {"name": self.name, "columns": dirs}
        (directory / COMPARE_INDEX).write_text(json.dumps(index, indent=2) + "\n")
        card = self.card.text
        slowdown_cdf(self.results, directory / "fct_slowdown_cdf.png", f"{self.name}: FCT slowdown", card)
        uplink_utilization(
            self.results, directory / "uplink_utilization.png", f"{self.name}: uplink utilization", card
        )

    def save(self, out: str | Path, option: str = "--out") -> Path:
        """Write the comparison to ``out`` (a new directory, or one spraylab wrote before:
        :func:`spraylab.results.output.write_dir` never overwrites anything else)."""
        from spraylab.results.output import write_dir

        return write_dir(out, "compare", self.write, option)


def variant_scenarios(
    scenario: Scenario, variants: str | Sequence[tuple[str, dict[str, Any]]]
) -> dict[str, Scenario]:
    """Each variant's scenario by label, all validated (a bad label or value raises before
    anything runs)."""
    from spraylab.model.variants import parse_variants, variant_scenario

    labelled = parse_variants(variants) if isinstance(variants, str) else variants
    return {label: variant_scenario(scenario, overrides) for label, overrides in labelled}


def compare(
    scenario: Scenario | dict[str, Any],
    variants: str | Sequence[tuple[str, dict[str, Any]]] = "ecmp,rps",
    runner: Runner = _plain_run,
) -> Comparison:
    """Run ``scenario`` under every variant (a label list like ``"ecmp,rps/ideal"`` or
    ``(label, overrides)`` pairs) with ``runner`` (default: plain runs, no progress)."""
    from spraylab.model.scenario import Scenario

    base = scenario if isinstance(scenario, Scenario) else Scenario.from_dict(scenario)
    comparison = Comparison(base.name, variant_scenarios(base, variants), {})
    try:
        for label, variant in comparison.scenarios.items():
            comparison.results[label], comparison.interrupted = runner(variant, label)
            if comparison.interrupted:  # the finished runs are kept, the last one partial
                break
    except KeyboardInterrupt:  # between two runs: nothing half-done, keep the finished ones
        comparison.interrupted = True
    if comparison.interrupted and not comparison.results:
        raise KeyboardInterrupt
    return comparison
