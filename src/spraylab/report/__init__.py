"""Compare and report on a sweep's results store: tables (metric × scheme, ratio to a baseline,
mean ± 95% CI over seeds from n = 3 on, grouped by the other axes), PNG plots and one self-contained HTML page.

Data flows one way: :func:`sweep_data` reads the store's index and groups its points;
:func:`compare_tables` turns summaries into tables; the ``plot_*`` functions turn plain arrays into
matplotlib figures (returned, so their data can be read back); :func:`build_report` writes the
PNGs and ``report.html``. Only runs whose manifest verifies are ever read. Runs stopped before
their workload finished (*incomplete*) are never pooled with complete ones: tables count them
apart and the page lists them; runs made by another spraylab version are flagged.
"""

from spraylab.report.grouping import Group, ReportError, SweepData, column_label, sweep_data
from spraylab.report.page import (
    CSS,
    VIEWS_DIR,
    Plot,
    Report,
    build_report,
    html_table,
    render_html,
    run_links,
)
from spraylab.report.plots import (
    DPI,
    FORMATS,
    MIN_CI_N,
    ci_error,
    plot_bars,
    plot_cdf,
    plot_heatmap,
    plot_percentiles,
    plot_timeseries,
    save_figure,
)
from spraylab.report.statistics import (
    INTERVAL_RULE,
    METRICS,
    Cell,
    CompareTable,
    cell_text,
    compare_tables,
    estimate_text,
    format_estimate,
    group_estimates,
    metric_value,
    reorder_series,
    resolve_baseline,
    size_bucket_estimates,
    size_bucket_percentiles,
    slowdown_series,
    uplink_matrix,
)

__all__ = [
    "CSS", "DPI", "METRICS", "Cell", "CompareTable", "Group", "Plot", "Report",
    "ReportError", "SweepData", "build_report", "cell_text", "column_label", "compare_tables", "format_estimate",
    "group_estimates", "html_table", "metric_value", "plot_bars", "plot_cdf", "plot_heatmap",
    "reorder_series", "render_html", "resolve_baseline", "save_figure", "size_bucket_estimates",
    "slowdown_series", "sweep_data", "uplink_matrix", "FORMATS", "MIN_CI_N", "ci_error", "plot_percentiles", "plot_timeseries",
    "size_bucket_percentiles", "run_links", "VIEWS_DIR", "INTERVAL_RULE", "estimate_text",
]  # fmt: skip
