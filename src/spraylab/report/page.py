"""The report page: every group's compare table and plots in one self-contained ``report.html``,
written with its PNG/PDF/SVG plots by :func:`build_report`."""

from __future__ import annotations

import html
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from matplotlib.figure import Figure

from spraylab.metrics.catalog import label_of
from spraylab.report.grouping import SweepData, sweep_data
from spraylab.report.plots import plot_bars, plot_cdf, plot_heatmap, plot_percentiles, save_figure
from spraylab.report.statistics import (
    INTERVAL_RULE,
    CompareTable,
    compare_tables,
    estimate_text,
    group_estimates,
    reorder_series,
    size_bucket_percentiles,
    slowdown_series,
    uplink_matrix,
)
from spraylab.units import BITS_PER_BYTE, PS_PER_US

# --- the report ---------------------------------------------------------------------------


VIEWS_DIR = "runs"  # the runs' viewer pages, inside the report directory


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
    views: bool = True,
) -> Report:
    """Write the plots (PNG, PDF, SVG) and ``report.html`` (default directory: ``ROOT/report``);
    with ``views``, also every stored run's viewer page (``runs/KEY.html``, see
    :mod:`spraylab.report.viewer`), linked from the page."""
    from spraylab.results.output import check_target, write_dir

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
            buckets, pcts = size_bucket_percentiles(data, group)
            figures.append(
                (
                    "slowdown_by_size",
                    "FCT slowdown by flow size: p50 and p99 of the completed flows (all seeds; n = flows)",
                    plot_percentiles(buckets, pcts, f"FCT slowdown by flow size{where}", "slowdown"),
                )
            )
        cct = group_estimates(data, group, "cct_ps")
        if cct:
            figures.append(
                (
                    "cct",
                    "collective / workload completion time (mean ± 95% CI over seeds)",
                    plot_bars(
                        list(cct), {"CCT": list(cct.values())}, f"CCT{where}", "CCT (µs)", scale=PS_PER_US
                    ),
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
                        "busbw (GB/s)",
                        scale=BITS_PER_BYTE * 1e9,  # bit/s to GB/s, as nccl-tests prints it
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

    stored = [p for p in data.points if p.status in ("done", "incomplete")] if views else []
    pages = {p.key: f"{VIEWS_DIR}/{p.key}.html" for p in stored}

    def fill(tmp: Path) -> None:
        for name, fig in figures_of:
            save_figure(fig, tmp / name)
        if stored:
            from plotly.offline import get_plotlyjs

            from spraylab.report.viewer import render_view

            (tmp / VIEWS_DIR).mkdir()
            (tmp / VIEWS_DIR / "plotly.min.js").write_text(get_plotlyjs())  # one copy for every run page
            for p in stored:
                (tmp / pages[p.key]).write_text(render_view(data.result(p.key), plotly_js="plotly.min.js"))
        (tmp / "report.html").write_text(render_html(data, tables, plots, pages))

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
pre.card{font-size:0.8em;white-space:pre-wrap}
"""


def render_html(
    data: SweepData, tables: list[CompareTable], plots: list[Plot], views: dict[str, str] | None = None
) -> str:
    """The page; ``views`` maps run keys to their viewer pages (relative links)."""
    e = html.escape
    warning = data.version_warning()
    parts = [
        "<!doctype html>",
        '<html lang="en"><head><meta charset="utf-8">',
        f"<title>spraylab report: {e(data.name)}</title>",
        f"<style>{CSS}</style></head><body>",
        f"<h1>spraylab sweep report: {e(data.name)}</h1>",
        f'<p class="meta">{e(data.status_line())}. Columns: ' + f"{e(', '.join(data.by) or '-')}; "
        f"{'mean ± ' + INTERVAL_RULE + ', over ' + e(data.over) if data.over else 'one run per cell'}; "
        f"ratios are to the baseline column <b>{e(tables[0].baseline) if tables else '-'}</b>.</p>",
        "<table><tr><th>axis</th><th>values</th></tr>",
        *(f"<tr><td>{e(k)}</td><td>{e(', '.join(v))}</td></tr>" for k, v in data.axes.items()),
        "</table>",
    ]
    if warning:
        parts.append(f'<p class="warn"><b>Warning:</b> {e(warning)}</p>')
    card = report_card(data)
    if card:
        parts.append(
            '<section id="card"><h2>Scenario card</h2><pre class="card">'
            + e("\n".join(card))
            + "</pre></section>"
        )
    for gi, table in enumerate(tables):
        parts.append(f"<h2>{e(table.group.title)}</h2>")
        parts.append(html_table(table))
        if views:
            parts.append(run_links(data, table, views))
        for plot in (p for p in plots if p.group == gi):
            parts.append(
                f'<figure><img src="{e(plot.file)}" alt="{e(plot.caption)}">'
                f"<figcaption>{e(plot.caption)} "
                + " ".join(
                    f'<a href="{e(str(Path(plot.file).with_suffix("." + x)))}">{x.upper()}</a>'
                    for x in ("pdf", "svg")
                )
                + "</figcaption></figure>"
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


def report_card(data: SweepData) -> list[str]:
    """The scenario card of the page (spraylab.results.card): the first stored run's, with one ``lb``
    line per column when the columns' schemes differ, and the axes that vary across the runs
    (their values are in the table above it); empty if no run carries a card."""
    from spraylab.results.card import card_lines_from_summary

    stored = [p for p in data.points if p.status in ("done", "incomplete")]
    if not stored:
        return []
    lines = card_lines_from_summary(data.store.summary(stored[0].key))
    lb_of: dict[str, str] = {}
    for p in stored:
        column = "/".join(p.labels[k] for k in data.by) if data.by else "all"
        if column not in lb_of:
            lb_line = [x for x in card_lines_from_summary(data.store.summary(p.key)) if x.startswith("lb: ")]
            lb_of[column] = lb_line[0].removeprefix("lb: ") if lb_line else ""
    if len(set(lb_of.values())) > 1:
        at = next((i for i, x in enumerate(lines) if x.startswith("lb: ")), len(lines))
        lines = [*lines[:at], *(f"lb {c}: {text}" for c, text in lb_of.items()), *lines[at + 1 :]]
    varying = [k for k, values in data.axes.items() if len(values) > 1]
    if lines and varying:
        lines.append(f"varies across the runs: {', '.join(varying)}")
    return lines


def run_links(data: SweepData, table: CompareTable, views: dict[str, str]) -> str:
    """One line per column: a link to each of its runs' viewer pages, named by the pooled axis."""
    e = html.escape
    lines = []
    for c in table.columns:
        links = [
            f'<a href="{e(views[p.key])}">{e(p.labels.get(data.over, p.key) if data.over else p.key[:8])}</a>'
            for p in table.group.cells[c]
            if p.key in views
        ]
        if links:
            lines.append(f"<b>{e(c)}</b>: {', '.join(links)}")
    who = f" (by {e(data.over)})" if data.over else ""
    return f'<p class="meta">run pages{who}: ' + "; ".join(lines) + "</p>" if lines else ""


def html_table(table: CompareTable) -> str:
    e = html.escape
    head = "".join(
        f"<th>{e(c)}{' (baseline)' if c == table.baseline else ''}<br><small>n={table.n[c]}"
        f"{' ' + e(table.note(c)) if table.note(c) else ''}</small></th>"
        for c in table.columns
    )
    rows = [f"<table><tr><th>metric</th>{head}</tr>"]
    for key, _unit, cells in table.rows:
        tds = []
        for c, cell in zip(table.columns, cells):
            text = e(estimate_text(table, c, cell, key))
            if c != table.baseline and cell.ratio is not None:
                text += f' <span class="ratio">({cell.ratio:.2f}×)</span>'
            tds.append(f"<td{' class=base' if c == table.baseline else ''}>{text}</td>")
        rows.append(f"<tr><td>{e(label_of(key))}</td>{''.join(tds)}</tr>")
    rows.append("</table>")
    return "\n".join(rows)
