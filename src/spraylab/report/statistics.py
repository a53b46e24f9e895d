"""The numbers a report shows: summary metrics, mean ± 95% CI over seeds and ratios to a baseline
(compare tables), and the data behind each plot, read from the stored runs."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from spraylab.metrics.catalog import CATALOG, REPORT_ROWS, lookup, unit_of
from spraylab.metrics.result import SIZE_BUCKETS
from spraylab.report.grouping import Group, ReportError, SweepData
from spraylab.results.stats import MIN_CI_N, Estimate, mean_ci, shown_interval
from spraylab.units import format_value

# The default rows of a compare table: the catalog's report rows (spraylab.metrics.catalog).
METRICS: tuple[str, ...] = REPORT_ROWS


def metric_value(summary: dict[str, Any], key: str) -> float | None:
    """A summary value, or one of the derived means over a run's groups (CCT, busbw)."""
    if key in ("cct_mean_ps", "busbw_mean_bps"):
        prefix = "cct_ps[" if key == "cct_mean_ps" else "busbw_bps["
        values = [
            float(v) for k, v in summary.items() if k.startswith(prefix) and v is not None and float(v) >= 0
        ]
        return sum(values) / len(values) if values else None
    value = summary.get(key)
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value)


# How a table states its intervals (the same rule as the plots'): CLI header and HTML page.
INTERVAL_RULE = f"95% CI (Student t) from n = {MIN_CI_N} on, cut at zero"


def format_estimate(est: Estimate, unit: str, nonnegative: bool = True, show: str | None = None) -> str:
    """``mean ± half-width``; ``mean [0, high]`` where the interval is cut at zero; the mean
    alone under ``MIN_CI_N`` values (see :func:`spraylab.results.stats.shown_interval`). A mean of
    counts is not a count: it is written as a plain number."""
    if est.mean is None:
        return "-"
    if unit == "count":
        unit = "float"

    def text_of(value: float) -> str:
        return format_value(value, unit, show)

    text = text_of(est.mean)
    interval = shown_interval(est, nonnegative)
    if interval is not None:
        low, high = interval
        if est.half_width is not None and low == est.mean - est.half_width:
            text += f" ± {text_of(est.half_width)}"
        else:
            text += f" [{text_of(low)}, {text_of(high)}]"
    return text


# --- compare tables -----------------------------------------------------------------------


@dataclass
class Cell:
    estimate: Estimate
    ratio: float | None  # mean / baseline mean
    nonnegative: bool = True  # the metric cannot be negative: its interval is cut at zero

    @property
    def interval(self) -> tuple[float, float] | None:
        """The (low, high) interval the tables show, None under ``MIN_CI_N`` values."""
        return shown_interval(self.estimate, self.nonnegative)


@dataclass
class CompareTable:
    group: Group
    columns: list[str]
    baseline: str
    n: dict[str, int]  # completed runs per column
    failed: dict[str, int]  # failed, missing or corrupt runs per column
    rows: list[tuple[str, str, list[Cell]]]  # (metric key, its unit, one cell per column)
    incomplete: dict[str, int] = field(default_factory=dict)  # runs stopped before their workload finished

    def note(self, column: str) -> str:
        """What a column's n leaves out: ``+1 incomplete +2 not done``."""
        parts = []
        if self.incomplete.get(column):
            parts.append(f"+{self.incomplete[column]} incomplete")
        if self.failed[column]:
            parts.append(f"+{self.failed[column]} not done")
        return " ".join(parts)


def resolve_baseline(data: SweepData, baseline: str | None) -> str:
    choice = baseline or data.default_baseline
    if choice is None or (baseline is None and choice not in data.columns):
        return data.columns[0]
    if choice not in data.columns:
        raise ReportError(
            f"--baseline {choice!r}: not a column of this comparison; columns: {', '.join(data.columns)}"
        )
    return choice


def compare_tables(
    data: SweepData, baseline: str | None = None, metrics: list[str] | None = None
) -> list[CompareTable]:
    base = resolve_baseline(data, baseline)
    summaries = {p.key: data.store.summary(p.key) for p in data.points if p.status == "done"}
    if metrics:
        known = set(CATALOG) | {k for s in summaries.values() for k in s}
        for key in metrics:
            if key not in known:
                raise ReportError(f"--metrics {key!r}: unknown metric; e.g. {', '.join(METRICS[:6])}")
        wanted = [(k, unit_of(k)) for k in metrics]
    else:
        wanted = [
            (k, unit_of(k))
            for k in METRICS
            if any(metric_value(s, k) is not None for s in summaries.values())
        ]
    tables = []
    for group in data.groups:
        done = {c: [p for p in group.cells[c] if p.status == "done"] for c in data.columns}
        rows = []
        for key, kind in wanted:
            values = {c: [metric_value(summaries[p.key], key) for p in done[c]] for c in data.columns}
            ests = {c: mean_ci(values[c]) for c in data.columns}
            # every metric of the catalog is a count, time, rate or ratio; another key is taken
            # as one that can be negative unless none of its values is
            nonnegative = lookup(key) is not None or all(
                v is None or v >= 0 for vs in values.values() for v in vs
            )
            ref = ests[base].mean
            cells = [
                Cell(ests[c], ests[c].mean / ref if ests[c].mean is not None and ref else None, nonnegative)
                for c in data.columns
            ]
            rows.append((key, kind, cells))
        unfinished = {c: sum(p.status == "incomplete" for p in group.cells[c]) for c in data.columns}
        tables.append(
            CompareTable(
                group,
                data.columns,
                base,
                {c: len(done[c]) for c in data.columns},
                {c: len(group.cells[c]) - len(done[c]) - unfinished[c] for c in data.columns},
                rows,
                unfinished,
            )
        )
    return tables


def estimate_text(table: CompareTable, column: str, cell: Cell, key: str) -> str:
    """``mean ± CI`` of metric ``key`` (:func:`format_estimate`), with the cell's own n when
    some of its column's runs lack the metric (the column header gives the column's n)."""
    entry = lookup(key)
    text = format_estimate(cell.estimate, unit_of(key), cell.nonnegative, entry.show if entry else None)
    if cell.estimate.mean is not None and cell.estimate.n != table.n[column]:
        text += f" (n={cell.estimate.n})"
    return text


def cell_text(table: CompareTable, column: str, cell: Cell, key: str, sep: str = " ") -> str:
    """``mean ± CI`` and, off the baseline column, ``(ratio×)`` after ``sep``."""
    text = estimate_text(table, column, cell, key)
    if column != table.baseline and cell.ratio is not None:
        text += f"{sep}({cell.ratio:.2f}×)"
    return text


# --- the data behind each plot ----------------------------------------------------------------


def slowdown_series(data: SweepData, group: Group) -> dict[str, np.ndarray]:
    """Per column: the slowdowns of all completed flows, pooled over seeds."""
    out = {}
    for c in data.columns:
        parts = [data.result(p.key).flows for p in group.cells[c] if p.status == "done"]
        values = [f.loc[f["completed"], "slowdown"].to_numpy(dtype=float) for f in parts]
        if values:
            out[c] = np.concatenate(values)
    return out


def reorder_series(data: SweepData, group: Group) -> dict[str, np.ndarray]:
    """Per column: every flow's reorder degree (max packets out of order), pooled over seeds."""
    out = {}
    for c in data.columns:
        parts = [
            data.result(p.key).flows["max_reorder"].to_numpy(dtype=float)
            for p in group.cells[c]
            if p.status == "done"
        ]
        if parts:
            out[c] = np.concatenate(parts)
    return out


def size_bucket_estimates(data: SweepData, group: Group) -> tuple[list[str], dict[str, list[Estimate]]]:
    """Buckets present, and per column the mean ± CI over seeds of each run's mean slowdown in a bucket."""
    per_run: dict[str, list[pd.Series]] = {}
    present: set[str] = set()
    for c in data.columns:
        for p in group.cells[c]:
            if p.status != "done":
                continue
            flows = data.result(p.key).flows
            means = flows[flows["completed"]].groupby("size_bucket")["slowdown"].mean()
            per_run.setdefault(c, []).append(means)
            present.update(means.index)
    buckets = [name for name, _ in SIZE_BUCKETS if name in present]
    return buckets, {c: [mean_ci(m.get(b) for m in runs) for b in buckets] for c, runs in per_run.items()}


def size_bucket_percentiles(
    data: SweepData, group: Group
) -> tuple[list[str], dict[str, list[tuple[float, float, int]]]]:
    """Buckets present, and per column (p50, p99, n) of the slowdowns of the completed flows in
    each bucket, pooled over seeds (a p99 needs the flows, not the runs' means)."""
    pooled: dict[str, pd.DataFrame] = {}
    for c in data.columns:
        parts = [data.result(p.key).flows for p in group.cells[c] if p.status == "done"]
        if parts:
            flows = pd.concat(parts)
            pooled[c] = flows[flows["completed"]]
    present = {b for f in pooled.values() for b in f["size_bucket"].unique()}
    buckets = [name for name, _ in SIZE_BUCKETS if name in present]
    out: dict[str, list[tuple[float, float, int]]] = {}
    for c, flows in pooled.items():
        rows = []
        for b in buckets:
            values = flows.loc[flows["size_bucket"] == b, "slowdown"].to_numpy(dtype=float)
            if len(values):
                rows.append((float(np.percentile(values, 50)), float(np.percentile(values, 99)), len(values)))
            else:
                rows.append((float("nan"), float("nan"), 0))
        out[c] = rows
    return buckets, out


def group_estimates(data: SweepData, group: Group, column: str) -> dict[str, Estimate]:
    """Per column: mean ± CI over seeds of each run's mean ``column`` (``cct_ps`` or ``busbw_bps``)
    over its completed groups; columns without such groups are left out."""
    out = {}
    for c in data.columns:
        per_run = []
        for p in group.cells[c]:
            if p.status != "done":
                continue
            groups = data.result(p.key).groups
            if groups.empty or column not in groups:
                continue
            values = groups[column].to_numpy(dtype=float)
            values = values[np.isfinite(values) & (values >= 0)]
            if len(values):
                per_run.append(float(values.mean()))
        estimate = mean_ci(per_run)
        if estimate.n:
            out[c] = estimate
    return out


def uplink_matrix(data: SweepData, group: Group) -> tuple[list[str], list[str], np.ndarray]:
    """Rows: columns of the comparison; cols: uplinks (fabric order); value: utilization, mean over seeds."""
    link_order: list[str] = []
    per_col: dict[str, list[pd.Series]] = {}
    for c in data.columns:
        for p in group.cells[c]:
            if p.status != "done":
                continue
            links = data.result(p.key).links
            up = links[links["role"] == "uplink"]
            for name in up["link"]:
                if name not in link_order:
                    link_order.append(name)
            per_col.setdefault(c, []).append(up.set_index("link")["utilization"].astype(float))
    rows = [c for c in data.columns if c in per_col]
    matrix = np.full((len(rows), len(link_order)), np.nan)
    for i, c in enumerate(rows):
        frame = pd.concat(per_col[c], axis=1)
        matrix[i] = frame.mean(axis=1).reindex(link_order).to_numpy(dtype=float)
    return rows, link_order, matrix
