"""Compare and report on a sweep's results store: tables (metric × scheme, ratio to a baseline,
mean ± 95% CI over seeds, grouped by the other axes), PNG plots and one self-contained HTML page.

Data flows one way: :func:`sweep_data` reads the store's index and groups its points;
:func:`compare_tables` turns summaries into tables; the ``plot_*`` functions turn plain arrays into
matplotlib figures (returned, so their data can be read back); :func:`build_report` writes the
PNGs and ``report.html``. Only runs whose manifest verifies are ever read. Runs stopped before
their workload finished (*incomplete*) are never pooled with complete ones: tables count them
apart and the page lists them; runs made by another spraylab version are flagged.
"""

from __future__ import annotations

import html
import itertools
import math
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import matplotlib.ticker
import numpy as np
import pandas as pd
from matplotlib.figure import Figure  # figures outside pyplot: no global state, Agg canvas on save

from spraylab import provenance
from spraylab.metrics.result import SIZE_BUCKETS, Result
from spraylab.stats import Estimate, mean_ci
from spraylab.store import Store
from spraylab.sweep import SEED_AXIS, StoredPoint, stored_points
from spraylab.units import format_rate, format_time

DPI = 110

# (summary key, row label, kind) — kind picks the formatting: time (ps), rate (bit/s), pct, float.
METRICS: list[tuple[str, str, str]] = [
    ("slowdown_mean", "FCT slowdown mean", "float"),
    ("slowdown_p50", "FCT slowdown p50", "float"),
    ("slowdown_p99", "FCT slowdown p99", "float"),
    ("fct_mean_ps", "FCT mean", "time"),
    ("fct_p99_ps", "FCT p99", "time"),
    ("completion_ps", "completion time", "time"),
    ("cct_mean_ps", "CCT (mean over groups)", "time"),
    ("busbw_mean_bps", "busbw (mean over groups)", "rate"),
    ("goodput_bps", "goodput per receiver", "rate"),
    ("retx_ratio", "retx ratio", "pct"),
    ("spurious_retx_ratio", "spurious retx ratio", "pct"),
    ("max_reorder", "max reorder (pkts)", "float"),
    ("drops", "drops", "float"),
    ("pfc_pauses", "PFC pauses", "float"),
    ("uplink_imbalance_max", "uplink imbalance max", "float"),
]
METRIC_KIND = {key: kind for key, _, kind in METRICS}
METRIC_LABEL = {key: label for key, label, _ in METRICS}


class ReportError(Exception):
    """Bad compare/report request (unknown axis, baseline or metric): one line, for the CLI."""


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


def format_value(value: float | None, kind: str) -> str:
    if value is None or (isinstance(value, float) and not math.isfinite(value)):
        return "-"
    if kind == "time":
        return format_time(int(round(value)))
    if kind == "rate":
        return format_rate(float(value))
    if kind == "pct":
        return f"{100 * value:.2f}%"
    if abs(value) >= 1000:
        return f"{value:,.0f}"
    return f"{value:.3f}"


def format_estimate(est: Estimate, kind: str) -> str:
    if est.mean is None:
        return "-"
    text = format_value(est.mean, kind)
    if est.half_width is not None:
        text += f" ± {format_value(est.half_width, kind)}"
    return text


# --- grouping the points of a sweep ---------------------------------------------------------


@dataclass
class Group:
    """The points sharing one combination of the axes that are neither columns nor seeds."""

    values: dict[str, str]
    cells: dict[str, list[StoredPoint]]  # column label → points (every status)

    @property
    def title(self) -> str:
        return ", ".join(f"{k} = {v}" for k, v in self.values.items()) or "all runs"

    def slug(self, index: int) -> str:
        text = "_".join(f"{k.split('.')[-1]}-{v}" for k, v in self.values.items())
        text = re.sub(r"[^A-Za-z0-9._-]+", "", text)[:48]
        return f"g{index + 1}" + (f"-{text}" if text else "")


@dataclass
class SweepData:
    store: Store
    name: str
    axes: dict[str, list[str]]  # axis → value labels, in sweep order
    by: list[str]
    over: str | None
    columns: list[str]
    groups: list[Group]
    points: list[StoredPoint]
    default_baseline: str | None = None
    _results: dict[str, Result] = field(default_factory=dict, repr=False)

    def result(self, key: str) -> Result:
        if key not in self._results:
            self._results[key] = self.store.load(key)
        return self._results[key]

    def counts(self) -> dict[str, int]:
        out = {"done": 0, "incomplete": 0, "failed": 0, "missing": 0, "corrupt": 0}
        for p in self.points:
            out[p.status] = out.get(p.status, 0) + 1
        return out

    def incomplete(self) -> list[tuple[StoredPoint, dict[str, Any]]]:
        """Stored runs whose workload did not finish, with their summaries."""
        return [(p, self.store.summary(p.key)) for p in self.points if p.status == "incomplete"]

    def other_versions(self) -> list[tuple[StoredPoint, str]]:
        """Stored runs made by another spraylab version or commit, with what made them."""
        now = provenance.current()
        out = []
        for p in self.points:
            if p.status in ("done", "incomplete"):
                summary = self.store.summary(p.key)
                if not provenance.same_version(summary, now):
                    out.append((p, provenance.describe(summary)))
        return out

    def status_line(self) -> str:
        """``12 runs: 10 done, 1 incomplete, 1 failed, 0 missing``."""
        c = self.counts()
        return (
            f"{len(self.points)} runs: {c['done']} done, {c['incomplete']} incomplete, {c['failed']} failed, "
            f"{c['missing'] + c['corrupt']} missing"
        )

    def version_warning(self) -> str | None:
        other = self.other_versions()
        if not other:
            return None
        made = sorted({text for _, text in other})
        return (
            f"{len(other)} of the runs were made by another spraylab version ({', '.join(made)}; "
            f"this is {provenance.describe(provenance.current())}): rerun them with spraylab sweep"
        )


def column_label(point: StoredPoint, by: list[str]) -> str:
    return "/".join(point.labels[k] for k in by) if by else "all"


def sweep_data(root: str | Path, by: Iterable[str] | None = None, over: str | None = SEED_AXIS) -> SweepData:
    """Read the store's index; columns are the values of the ``by`` axes (default: the ``lb`` /
    ``lb.scheme`` axis, else the first axis), runs are pooled over ``over`` (default: seeds), and
    every combination of the remaining axes is a group."""
    store = Store(root)
    index = store.read_index()
    axes: dict[str, list[str]] = {axis["key"]: axis["labels"] for axis in index["axes"]}
    by_list = list(by) if by else _default_by(list(axes), over)
    for key in by_list:
        if key not in axes:
            raise ReportError(f"--by {key!r}: not an axis of this sweep; axes: {', '.join(axes)}")
    over_key = over if over in axes and over not in by_list else None
    group_axes = [k for k in axes if k not in by_list and k != over_key]
    points = stored_points(store)
    columns = ["/".join(c) for c in itertools.product(*(axes[k] for k in by_list))] if by_list else ["all"]
    groups = []
    for combo in itertools.product(*(axes[k] for k in group_axes)):
        values = dict(zip(group_axes, combo))
        members = [p for p in points if all(p.labels[k] == v for k, v in values.items())]
        cells = {c: [p for p in members if column_label(p, by_list) == c] for c in columns}
        groups.append(Group(values, cells))
    return SweepData(
        store, index.get("name", ""), axes, by_list, over_key, columns, groups, points, index.get("baseline")
    )


def _default_by(axes: list[str], over: str | None) -> list[str]:
    for key in ("lb", "lb.scheme"):
        if key in axes:
            return [key]
    rest = [k for k in axes if k != over]
    return rest[:1]


# --- compare tables -----------------------------------------------------------------------


@dataclass
class Cell:
    estimate: Estimate
    ratio: float | None  # mean / baseline mean


@dataclass
class CompareTable:
    group: Group
    columns: list[str]
    baseline: str
    n: dict[str, int]  # completed runs per column
    failed: dict[str, int]  # failed, missing or corrupt runs per column
    rows: list[tuple[str, str, list[Cell]]]  # (metric key, kind, one cell per column)
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
        known = set(METRIC_KIND) | {k for s in summaries.values() for k in s}
        for key in metrics:
            if key not in known:
                raise ReportError(
                    f"--metrics {key!r}: unknown metric; e.g. {', '.join(k for k, _, _ in METRICS[:6])}"
                )
        wanted = [(k, METRIC_KIND.get(k, _guess_kind(k))) for k in metrics]
    else:
        wanted = [
            (k, kind)
            for k, _, kind in METRICS
            if any(metric_value(s, k) is not None for s in summaries.values())
        ]
    tables = []
    for group in data.groups:
        done = {c: [p for p in group.cells[c] if p.status == "done"] for c in data.columns}
        rows = []
        for key, kind in wanted:
            ests = {c: mean_ci(metric_value(summaries[p.key], key) for p in done[c]) for c in data.columns}
            ref = ests[base].mean
            cells = [
                Cell(ests[c], ests[c].mean / ref if ests[c].mean is not None and ref else None)
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


def _guess_kind(key: str) -> str:
    if key.endswith("_ps") or "_ps[" in key:
        return "time"
    if key.endswith("_bps") or "_bps[" in key:
        return "rate"
    return "pct" if key.endswith("_ratio") else "float"


def cell_text(table: CompareTable, column: str, cell: Cell, kind: str, sep: str = " ") -> str:
    """``mean ± CI`` and, off the baseline column, ``(ratio×)`` after ``sep``."""
    text = format_estimate(cell.estimate, kind)
    if column != table.baseline and cell.ratio is not None:
        text += f"{sep}({cell.ratio:.2f}×)"
    return text


# --- plots: plain data in, a Figure out -------------------------------------------------------


def plot_cdf(series: dict[str, np.ndarray], title: str, xlabel: str, xscale: str = "log") -> Figure:
    """One step CDF per label (values are sorted here); ``xscale``: log, symlog or linear."""
    fig = Figure(figsize=(6.4, 4.2))
    ax = fig.subplots()
    for label, values in series.items():
        xs = np.sort(np.asarray(values, dtype=float))
        if len(xs):
            ax.step(xs, np.arange(1, len(xs) + 1) / len(xs), where="post", label=label)
    top = max((float(np.max(v)) for v in series.values() if len(v)), default=1.0)
    if xscale == "symlog":  # integers from 0: linear up to 1, logarithmic beyond
        ax.set_xscale("symlog", linthresh=1.0, linscale=0.3)
        ticks = [
            t for t in (0, 1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000, 10_000) if t <= max(top, 2)
        ]
        ax.xaxis.set_major_locator(matplotlib.ticker.FixedLocator(ticks))
        ax.xaxis.set_major_formatter(matplotlib.ticker.FormatStrFormatter("%g"))
        ax.xaxis.set_minor_locator(matplotlib.ticker.NullLocator())
    elif xscale == "log":
        ax.set_xscale("log")
        ax.xaxis.set_major_formatter(matplotlib.ticker.LogFormatter())
        ax.xaxis.set_minor_formatter(
            matplotlib.ticker.LogFormatter(labelOnlyBase=False, minor_thresholds=(2, 0.5))
        )
    ax.set_xlabel(xlabel)
    ax.set_ylabel("CDF of flows")
    ax.set_ylim(0, 1.02)
    ax.set_title(title)
    ax.grid(True, which="both", alpha=0.3)
    if series:
        ax.legend()
    fig.tight_layout()
    return fig


def plot_bars(
    categories: list[str], series: dict[str, list[Estimate]], title: str, ylabel: str, scale: float = 1.0
) -> Figure:
    """Grouped bars: one group per category, one bar per label; height = mean, error bar = 95% CI."""
    fig = Figure(figsize=(min(12.0, max(6.4, 0.35 * len(categories) * len(series) + 2)), 4.2))
    ax = fig.subplots()
    width = 0.8 / max(1, len(series))
    x = np.arange(len(categories))
    for i, (label, ests) in enumerate(series.items()):
        heights = [e.mean / scale if e.mean is not None else np.nan for e in ests]
        errs = [e.half_width / scale if e.half_width is not None else 0.0 for e in ests]
        ax.bar(x + (i - (len(series) - 1) / 2) * width, heights, width, yerr=errs, capsize=3, label=label)
    ax.set_xticks(x, categories)
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    ax.grid(True, axis="y", alpha=0.3)
    if series:
        ax.legend()
    fig.tight_layout()
    return fig


def plot_heatmap(rows: list[str], cols: list[str], matrix: np.ndarray, title: str, label: str) -> Figure:
    fig = Figure(figsize=(max(6.4, 0.45 * len(cols) + 2.5), max(2.5, 0.5 * len(rows) + 1.6)))
    ax = fig.subplots()
    finite = matrix[np.isfinite(matrix)]
    vmax = float(finite.max()) if finite.size and finite.max() > 0 else 1.0
    image = ax.imshow(matrix, aspect="auto", cmap="viridis", vmin=0.0, vmax=vmax, interpolation="nearest")
    ax.set_yticks(range(len(rows)), rows)
    if len(cols) <= 48:
        ax.set_xticks(range(len(cols)), cols, rotation=90, fontsize=7)
    ax.set_xlabel("uplink")
    ax.set_title(title)
    if matrix.size <= 160:
        for (r, c), v in np.ndenumerate(matrix):
            if np.isfinite(v):
                ax.text(
                    c,
                    r,
                    f"{v:.2f}",
                    ha="center",
                    va="center",
                    fontsize=6,
                    color="w" if v < 0.6 * vmax else "k",
                )
    fig.colorbar(image, ax=ax, label=label)
    fig.tight_layout()
    return fig


def save_figure(fig: Figure, path: Path) -> Path:
    fig.savefig(path, dpi=DPI)
    return path


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


# --- the report ---------------------------------------------------------------------------


@dataclass
class Plot:
    file: str
    caption: str
    group: int
    figure: Figure | None = None


@dataclass
class Report:
    directory: Path
    html: Path
    plots: list[Plot]
    tables: list[CompareTable]
    data: SweepData


def build_report(
    root: str | Path,
    out: str | Path | None = None,
    by: Iterable[str] | None = None,
    baseline: str | None = None,
    keep_figures: bool = False,
) -> Report:
    """Write PNG plots and ``report.html`` (default directory: ``ROOT/report``)."""
    from spraylab.output import check_target, write_dir

    data = sweep_data(root, by)
    tables = compare_tables(data, baseline)
    directory = Path(out) if out is not None else Path(root) / "report"
    check_target(directory, "report")
    plots: list[Plot] = []
    figures_of: list[tuple[str, Figure]] = []
    for gi, group in enumerate(data.groups):
        suffix = "" if len(data.groups) == 1 else f"-{group.slug(gi)}"
        where = "" if len(data.groups) == 1 else f" ({group.title})"
        figures: list[tuple[str, str, Figure]] = []
        series = slowdown_series(data, group)
        if series:
            figures.append(
                (
                    "slowdown_cdf",
                    "FCT slowdown CDF (completed flows, all seeds)",
                    plot_cdf(series, f"FCT slowdown{where}", "FCT slowdown (FCT / lower bound)"),
                )
            )
            buckets, ests = size_bucket_estimates(data, group)
            figures.append(
                (
                    "slowdown_by_size",
                    "mean FCT slowdown by flow size (mean ± 95% CI over seeds)",
                    plot_bars(buckets, ests, f"FCT slowdown by flow size{where}", "mean slowdown"),
                )
            )
        cct = group_estimates(data, group, "cct_ps")
        if cct:
            figures.append(
                (
                    "cct",
                    "collective / workload completion time (mean ± 95% CI over seeds)",
                    plot_bars(list(cct), {"CCT": list(cct.values())}, f"CCT{where}", "CCT (us)", scale=1e6),
                )
            )
        busbw = group_estimates(data, group, "busbw_bps")
        if busbw:
            figures.append(
                (
                    "busbw",
                    "collective bus bandwidth (mean ± 95% CI over seeds)",
                    plot_bars(
                        list(busbw),
                        {"busbw": list(busbw.values())},
                        f"busbw{where}",
                        "busbw (Gb/s)",
                        scale=1e9,
                    ),
                )
            )
        rows, cols, matrix = uplink_matrix(data, group)
        if matrix.size:
            figures.append(
                (
                    "uplink_heatmap",
                    "fabric uplink utilization (mean over seeds)",
                    plot_heatmap(rows, cols, matrix, f"uplink utilization{where}", "utilization"),
                )
            )
        reorder = reorder_series(data, group)
        if reorder:
            figures.append(("reorder_cdf", "reorder degree per flow (max packets out of order, all seeds)",
                            plot_cdf(reorder, f"reorder degree{where}", "reorder degree (packets)", xscale="symlog")))  # fmt: skip
        for kind, caption, fig in figures:
            name = f"{kind}{suffix}.png"
            figures_of.append((name, fig))
            plots.append(Plot(name, caption, gi, fig if keep_figures else None))

    def fill(tmp: Path) -> None:
        for name, fig in figures_of:
            save_figure(fig, tmp / name)
        (tmp / "report.html").write_text(render_html(data, tables, plots))

    write_dir(directory, "report", fill)
    return Report(directory, directory / "report.html", plots, tables, data)


CSS = """
body{font-family:system-ui,-apple-system,Segoe UI,Helvetica,Arial,sans-serif;margin:2em auto;max-width:1200px;color:#222}
h1{font-size:1.6em}h2{font-size:1.25em;margin-top:2em;border-bottom:1px solid #ddd}
table{border-collapse:collapse;margin:1em 0;font-size:0.9em}
th,td{border:1px solid #ccc;padding:3px 8px;text-align:right}th:first-child,td:first-child{text-align:left}
th{background:#f3f3f3}td.base{background:#f7fbff}.ratio{color:#555}.meta{color:#555}.warn{color:#a30}
figure{display:inline-block;margin:0.5em;vertical-align:top}figure img{max-width:560px;border:1px solid #eee}
figcaption{font-size:0.85em;color:#555;max-width:560px}pre{background:#f6f6f6;padding:0.5em;overflow:auto}
"""


def render_html(data: SweepData, tables: list[CompareTable], plots: list[Plot]) -> str:
    e = html.escape
    warning = data.version_warning()
    parts = [
        "<!doctype html>",
        '<html lang="en"><head><meta charset="utf-8">',
        f"<title>spraylab report: {e(data.name)}</title>",
        f"<style>{CSS}</style></head><body>",
        f"<h1>spraylab sweep report: {e(data.name)}</h1>",
        f'<p class="meta">{e(data.status_line())}. Columns: ' + f"{e(', '.join(data.by) or '-')}; "
        f"{'mean ± 95% CI (Student t) over ' + e(data.over) if data.over else 'one run per cell'}; "
        f"ratios are to the baseline column <b>{e(tables[0].baseline) if tables else '-'}</b>.</p>",
        "<table><tr><th>axis</th><th>values</th></tr>",
        *(f"<tr><td>{e(k)}</td><td>{e(', '.join(v))}</td></tr>" for k, v in data.axes.items()),
        "</table>",
    ]
    if warning:
        parts.append(f'<p class="warn"><b>Warning:</b> {e(warning)}</p>')
    for gi, table in enumerate(tables):
        parts.append(f"<h2>{e(table.group.title)}</h2>")
        parts.append(html_table(table))
        for plot in (p for p in plots if p.group == gi):
            parts.append(
                f'<figure><img src="{e(plot.file)}" alt="{e(plot.caption)}">'
                f"<figcaption>{e(plot.caption)}</figcaption></figure>"
            )
    unfinished = data.incomplete()
    if unfinished:
        parts.append(
            "<h2>Incomplete runs</h2><p>Stopped before their workload finished (completed = false); "
            "left out of the tables and plots above.</p><ul>"
        )
        for p, summary in unfinished:
            label = " ".join(f"{k}={v}" for k, v in p.labels.items())
            parts.append(
                f"<li><code>{e(label)}</code> ({e(p.key)}): stopped by {e(str(summary.get('stop_reason')))} "
                f"with {summary.get('flows_completed')}/{summary.get('flows')} flows done</li>"
            )
        parts.append("</ul>")
    failed = [p for p in data.points if p.status == "failed"]
    if failed:
        parts.append("<h2>Failed runs</h2><ul>")
        for p in failed:
            err = data.store.error(p.key)
            label = " ".join(f"{k}={v}" for k, v in p.labels.items())
            parts.append(
                f"<li><code>{e(label)}</code> ({e(p.key)}): {e(err.get('type', ''))}: {e(err.get('message', ''))}</li>"
            )
        parts.append("</ul>")
    parts.append("</body></html>")
    return "\n".join(parts) + "\n"


def html_table(table: CompareTable) -> str:
    e = html.escape
    head = "".join(
        f"<th>{e(c)}{' (baseline)' if c == table.baseline else ''}<br><small>n={table.n[c]}"
        f"{' ' + e(table.note(c)) if table.note(c) else ''}</small></th>"
        for c in table.columns
    )
    rows = [f"<table><tr><th>metric</th>{head}</tr>"]
    for key, kind, cells in table.rows:
        tds = []
        for c, cell in zip(table.columns, cells):
            text = e(format_estimate(cell.estimate, kind))
            if c != table.baseline and cell.ratio is not None:
                text += f' <span class="ratio">({cell.ratio:.2f}×)</span>'
            tds.append(f"<td{' class=base' if c == table.baseline else ''}>{text}</td>")
        rows.append(f"<tr><td>{e(METRIC_LABEL.get(key, key))}</td>{''.join(tds)}</tr>")
    rows.append("</table>")
    return "\n".join(rows)
