"""The summary table of one or more runs (``spraylab run``, ``compare``, ``demo``), read from
the metric catalog (:mod:`spraylab.metrics.catalog`), and the lines that say a run is
incomplete."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from spraylab.model.scenario import Scenario
    from spraylab.results.tables import ResultTable


def summary_table(
    title: str, summaries: dict[str, dict[str, Any]], card: list[str] | None = None
) -> ResultTable:
    """The summary rows of one or more runs (one column per label) as a
    :class:`~spraylab.results.tables.ResultTable`: the catalog's summary rows
    (:data:`spraylab.metrics.catalog.SUMMARY_ROWS`), then per group of a collective or MoE
    workload its completion time and bus bandwidth. Write it with
    :func:`spraylab.results.tables.render` in any table format."""
    from spraylab.metrics.catalog import GROUP_FAMILIES, SUMMARY_ROWS, label_of, lookup, unit_of
    from spraylab.results.tables import ResultTable
    from spraylab.units import format_value

    def add(key: str) -> None:
        entry = lookup(key)
        unit = unit_of(key)
        show = entry.show if entry else None
        absent = entry.absent if entry else None
        values = [s.get(key) for s in summaries.values()]
        texts = [absent if v is None and absent is not None else format_value(v, unit, show) for v in values]
        table.add(label_of(key), key, unit, values, texts)

    table = ResultTable(title, list(summaries), card=list(card or []))
    for key in SUMMARY_ROWS:
        add(key)
    prefixes = tuple(f"{family}[" for family in GROUP_FAMILIES)
    group_keys = sorted({k for s in summaries.values() for k in s if k.startswith(prefixes)})
    if len(group_keys) == 1:  # one plain workload: its CCT is the completion row already
        group_keys = []
    for key in group_keys:
        add(key)
    table.extra["summaries"] = summaries
    return table


def run_label(scenario: Scenario) -> str:
    """The column label of one run: its scheme over its recovery mode (never the scheme alone)."""
    return f"{scenario.lb.scheme}/{scenario.transport.recovery}"


def incomplete_lines(summaries: dict[str, dict[str, Any]]) -> list[str]:
    """One line per run stopped before its workload finished (the commands exit with code 3)."""
    from spraylab.units import format_time

    return [
        f"incomplete: {label}: stopped by {s.get('stop_reason')} at {format_time(int(s.get('sim_time_ps') or 0))} "
        f"with {s.get('flows_completed')}/{s.get('flows')} flows done; completed = false, and the FCT statistics "
        f"count the {s.get('flows_censored')} unfinished flows as censored (FCT at least the run's end)"
        for label, s in summaries.items()
        if not s.get("completed", True)
    ]
