"""One result builder for every engine.

An engine reads its run into a flows table's columns (``FLOW_COLUMNS``, as lists) and the
summary keys only it knows (the packet engine's packet counters, the fluid engine's solver
counters and its ``None`` for what it has no notion of); everything a result has whatever made
it is computed here, from those columns, by the same code: the flow statistics, the groups'
CCTs and bus bandwidths, the per-size-bucket slowdowns, the uplink imbalance and the
:class:`~spraylab.metrics.result.Result` with its tables built on first read.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING, Any

from spraylab.metrics.collect import bucket_and_group_statistics, flow_statistics, group_rows, group_table
from spraylab.metrics.result import Result

if TYPE_CHECKING:
    from spraylab.metrics.columns import ColumnTable
    from spraylab.workload.build import GroupInfo


def uplink_imbalance(uplink_bytes: Iterable[Sequence[float]]) -> tuple[float, float]:
    """Bytes sent on each switch's uplinks, one sequence per switch: for every switch with two
    or more uplinks that sent anything, its busiest uplink's bytes over their mean; the max and
    the mean of that ratio over those switches (1.0 and 1.0 when there is none)."""
    ratios = [
        max(sent) / (sum(sent) / len(sent)) for sent in uplink_bytes if len(sent) >= 2 and sum(sent) > 0
    ]
    if not ratios:
        return 1.0, 1.0
    return max(ratios), sum(ratios) / len(ratios)


def build_result(
    scenario: dict[str, Any],
    run_info: dict[str, Any],
    flows: dict[str, list[Any]],
    end_ps: int,
    groups: dict[str, GroupInfo],
    engine_summary: dict[str, Any],
    tables: Callable[[], tuple[ColumnTable, ColumnTable]],
    tail: dict[str, Any] | None = None,
) -> Result:
    """The result of a run: ``flows`` (the columns the summary reads, as lists), the run's end
    ``end_ps`` (for censored flows' bound), ``engine_summary`` (the engine's own keys, after the
    flow statistics), ``tail`` (keys after the group statistics: the scheme's counters) and
    ``tables`` (the flows and links tables' columns, collected when first read or saved)."""
    group_list = group_rows(flows, groups)
    summary: dict[str, Any] = {
        **run_info,
        **flow_statistics(flows, end_ps),
        **engine_summary,
        **bucket_and_group_statistics(flows, group_list),
        **(tail or {}),
    }

    def all_tables() -> tuple[ColumnTable, ColumnTable, ColumnTable]:
        return (*tables(), group_table(group_list))

    return Result(scenario=scenario, summary=summary, tables=all_tables)
