"""A sweep's results store as :class:`~spraylab.results.tables.ResultTable` s, in any table format:
what ``spraylab compare DIR`` prints. One table per group of the other axes (metric x column,
mean ± 95% CI over seeds, ratio to a baseline), the first run's scenario card and a status line
on the first; for CSV and JSON (``raw``) the intervals and ratios as rows of their own."""

from __future__ import annotations

from pathlib import Path

from spraylab.results.tables import ResultTable


def sweep_result_tables(
    directory: Path,
    baseline: str | None,
    by: list[str] | None,
    metrics: list[str] | None,
    raw: bool = False,
) -> tuple[list[ResultTable], list[str]]:
    """The tables, and the notices to show beside them (a version warning, one line per
    incomplete run left out). Raises :class:`~spraylab.report.ReportError` or
    :class:`~spraylab.results.store.StoreError` for a directory that is not a readable sweep store."""
    from spraylab.metrics.catalog import label_of
    from spraylab.report import INTERVAL_RULE, cell_text, compare_tables, sweep_data
    from spraylab.results.card import card_lines_from_summary

    data = sweep_data(directory, by)
    tables = compare_tables(data, baseline, metrics)
    over = f"mean ± {INTERVAL_RULE}, over {data.over}" if data.over else "one run per cell"
    status = f"{data.name}: {data.status_line()}; {over}; ratios to {tables[0].baseline if tables else '-'}"
    done = [p for p in data.points if p.status == "done"]
    card = card_lines_from_summary(data.store.summary(done[0].key)) if done else []
    if card:  # the first run's card; the swept keys differ between runs
        card = [*card, f"varies across the runs: {', '.join(data.axes)}"]
    notices = []
    warning = data.version_warning()
    if warning:
        notices.append(f"warning: {warning}")
    for point, summary in data.incomplete():
        label = " ".join(f"{k}={v}" for k, v in point.labels.items())
        notices.append(
            f"incomplete (left out of the table): {label}: stopped by {summary.get('stop_reason')} with "
            f"{summary.get('flows_completed')}/{summary.get('flows')} flows done"
        )
    out = []
    for i, table in enumerate(tables):
        columns = []
        for c in table.columns:
            note = f" {table.note(c)}" if table.note(c) else ""
            columns.append(f"{c}{' (baseline)' if c == table.baseline else ''}\nn={table.n[c]}{note}")
        rt = ResultTable(
            table.group.title, columns, card=card if i == 0 else [], notes=[status] if i == 0 else []
        )
        if raw:
            rt.columns = list(table.columns)  # plain column names; n and ratios are in the values
        for key, kind, cells in table.rows:
            texts = [cell_text(table, c, cell, key, sep="\n") for c, cell in zip(table.columns, cells)]
            label = label_of(key)
            rt.add(label, key, kind, [cell.estimate.mean for cell in cells], texts)
            if raw:
                # as the table shows them: none under n = 3, the low end cut at zero
                intervals = [cell.interval for cell in cells]
                rt.add(f"{label} 95% CI half-width", f"{key}:ci95", kind,
                       [cell.estimate.half_width if iv else None for cell, iv in zip(cells, intervals)],
                       texts)  # fmt: skip
                rt.add(f"{label} 95% CI low", f"{key}:ci95_low", kind,
                       [iv[0] if iv else None for iv in intervals], texts)  # fmt: skip
                rt.add(f"{label} 95% CI high", f"{key}:ci95_high", kind,
                       [iv[1] if iv else None for iv in intervals], texts)  # fmt: skip
                rt.add(f"{label} / baseline", f"{key}:ratio", "x",
                       [cell.ratio for cell in cells], texts)  # fmt: skip
        if raw:
            rt.add(
                "runs",
                "n",
                "count",
                [table.n[c] for c in table.columns],
                [str(table.n[c]) for c in table.columns],
            )
            rt.extra["baseline"] = table.baseline
        out.append(rt)
    return out, notices
