"""The run viewer (``spraylab view RUN``): one interactive HTML page per run, with plotly.js
embedded so that it works offline and from a plain file.

The page holds: the scenario card; a link x time utilization heatmap, one panel per tier and
direction (host uplinks, ToR → spine, spine → ToR, ToR → host, ...), sized to stay readable
with 64 and more links per panel; queue traces of the ports that queued most and the switches'
buffer occupancy; the flows' sending rates (DCQCN's current rate) and delivery rates; and a
flow timeline (one bar per flow from start to finish, coloured by slowdown). The time-series
panels need a run made with ``[monitor]``; without one the page says how to get them and shows
the end-of-run link utilization instead.

Utilization is *departed* bytes over capacity (see :mod:`spraylab.runs.monitor`): never above 1
beyond one frame per interval.
"""

from __future__ import annotations

import html
import json
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from spraylab.metrics.catalog import VIEWER_ROWS, label_of, unit_of
from spraylab.metrics.result import Result, ResultFileError
from spraylab.units import PS_PER_BYTE_AT_1BPS, PS_PER_US, format_bytes, format_time_label, format_value

GENERATOR = "spraylab view"  # the page's <meta name="generator">: marks a file spraylab may replace
MAX_HEATMAP_COLUMNS = 400  # time bins per heatmap; longer runs are merged into wider bins
MAX_TRACES = 12  # ports or flows drawn as lines
MAX_TIMELINE_FLOWS = 2000
PALETTE = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f",
           "#bcbd22", "#17becf", "#393b79", "#ad494a")  # fmt: skip


class ViewError(Exception):
    """The run cannot be viewed (not a result directory, or a file that is not ours)."""


# --- the scenario card ---------------------------------------------------------------------------


def scenario_card(scenario: dict[str, Any], summary: dict[str, Any]) -> list[tuple[str, str]]:
    """The run's identity as (label, text) rows: the scenario card every output carries
    (``summary["card"]``, made by :mod:`spraylab.results.card`), then the run's outcome."""
    rows = [("run", str(summary.get("name", scenario.get("output", {}).get("name", ""))))]
    for line in str(summary.get("card", {}).get("text", "")).splitlines():
        label, _, text = line.partition(": ")
        rows.append((label, text) if text else ("", label))
    rows += [
        (
            "outcome",
            f"{summary.get('stop_reason')}: {summary.get('flows_completed')}/{summary.get('flows')} flows",
        ),
        ("simulated time", format_time_label(int(summary.get("sim_time_ps", 0)))),
    ]
    monitor = scenario.get("monitor")
    if monitor:
        rows.append(("monitor interval", format_time_label(int(monitor["interval"]))))
    for key in VIEWER_ROWS:
        value = summary.get(key)
        if value is not None:
            rows.append((label_of(key), format_value(value, unit_of(key))))
    return rows


# --- the data behind each figure (plain frames, tested against the stored tables) --------------


def link_groups(links: pd.DataFrame) -> list[tuple[str, list[str]]]:
    """Links grouped by direction and tier, in path order (host up, up the tiers, down the
    tiers, to the hosts), each group in fabric order."""
    tier_name = {0: "NVLink", 1: "ToR", 2: "spine/agg", 3: "core"}
    keyed: dict[tuple[int, str], list[str]] = {}
    for row in links.itertuples(index=False):
        role, tier = row.role, int(row.tier)
        if role == "host_up":
            key, label = (0, 0), "host → ToR"
        elif role == "uplink":
            key, label = (
                (1, tier),
                f"{tier_name.get(tier, tier)} → {tier_name.get(tier + 1, tier + 1)} (uplinks)",
            )
        elif role == "downlink":
            key, label = (
                (2, -tier),
                f"{tier_name.get(tier, tier)} → {tier_name.get(tier - 1, tier - 1)} (downlinks)",
            )
        else:
            key, label = (3, 0), "ToR → host"
        keyed.setdefault((key, label), []).append(row.link)  # type: ignore[arg-type]
    return [(label, names) for (_, label), names in sorted(keyed.items(), key=lambda kv: kv[0][0])]


def utilization_matrix(
    ports: pd.DataFrame, links: pd.DataFrame, names: list[str], max_columns: int = MAX_HEATMAP_COLUMNS
) -> tuple[np.ndarray, np.ndarray]:
    """(bin end times in ps, utilization [link, bin]) of the links ``names``: departed bytes
    over rate x duration. Intervals are merged into at most ``max_columns`` bins (bytes and
    durations summed, so a merged bin is the exact mean)."""
    part = ports[ports["link"].isin(names)]
    times = np.sort(part["t_ps"].unique())
    if not len(times):
        return times, np.zeros((len(names), 0))
    group = max(1, -(-len(times) // max_columns))
    bin_of = {t: i // group for i, t in enumerate(times)}
    bins = part["t_ps"].map(bin_of).to_numpy()
    n_bins = bins.max() + 1
    row_of = {name: i for i, name in enumerate(names)}
    rows = part["link"].astype(str).map(row_of).to_numpy()
    sent = np.zeros((len(names), n_bins))
    np.add.at(sent, (rows, bins), part["tx_bytes"].to_numpy(dtype=float))
    span = np.zeros((len(names), n_bins))
    np.add.at(span, (rows, bins), part["dt_ps"].to_numpy(dtype=float))
    rate = links.set_index("link")["rate_bps"].reindex(names).to_numpy(dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        util = sent * 8e12 / (rate[:, None] * span)
    ends = np.array([times[min(len(times) - 1, (b + 1) * group - 1)] for b in range(n_bins)])
    return ends, np.where(span > 0, util, np.nan)


def top_queues(ports: pd.DataFrame, n: int = MAX_TRACES) -> list[str]:
    """The ``n`` ports with the largest queue maximum (those that queued at all)."""
    peak = ports.groupby("link", observed=True)["queue_max_bytes"].max()
    peak = peak[peak > 0].sort_values(ascending=False, kind="stable")
    return [str(x) for x in peak.index[:n]]


def rate_flows(flows: pd.DataFrame, n: int = MAX_TRACES) -> list[int]:
    """The flows whose sending rate fell lowest (the ones congestion control acted on), then by id."""
    low = flows.groupby("flow_id")["rate_bps"].min().sort_values(kind="stable")
    return [int(x) for x in low.index[:n]]


# --- the page ------------------------------------------------------------------------------------


def _figures(result: Result) -> list[tuple[str, str, Any]]:
    """(section title, caption, plotly figure) in page order."""
    import plotly.graph_objects as go
    from plotly.subplots import make_subplots

    out: list[tuple[str, str, Any]] = []
    links = result.links
    ts = result.timeseries
    if ts is not None and not ts.ports.empty:
        groups = [
            (label, [x for x in names if x in set(ts.ports["link"].astype(str))])
            for label, names in link_groups(links)
        ]
        groups = [(label, names) for label, names in groups if names]
        for label, names in groups:
            ends, util = utilization_matrix(ts.ports, links, names)
            height = int(min(1600, max(220, 14 * len(names) + 120)))
            fig = go.Figure(
                go.Heatmap(
                    z=util,
                    x=ends / PS_PER_US,
                    y=names,
                    zmin=0,
                    zmax=1,
                    colorscale="Viridis",
                    colorbar={"title": {"text": "utilization"}},
                    hovertemplate="%{y}<br>t = %{x:.2f} µs<br>utilization %{z:.2f}<extra></extra>",
                )
            )
            fig.update_layout(
                title=f"utilization: {label} ({len(names)} links)",
                height=height,
                margin={"l": 130, "r": 20, "t": 50, "b": 45},
                xaxis_title="time (µs)",
                yaxis={"autorange": "reversed", "showticklabels": len(names) <= 96, "tickfont": {"size": 9}},
            )
            out.append(("Link utilization", "departed bytes over capacity per interval", fig))
        queues = top_queues(ts.ports)
        if queues:
            fig = make_subplots(rows=2, cols=1, shared_xaxes=True, vertical_spacing=0.08,
                                subplot_titles=("port queues (max within each interval)", "switch buffer occupancy"))  # fmt: skip
            for name in queues:
                part = ts.ports[ts.ports["link"] == name]
                fig.add_trace(go.Scatter(x=part["t_ps"] / PS_PER_US, y=part["queue_max_bytes"] / 1e3, name=name,
                                         mode="lines", line={"shape": "hv"}, legendgroup="q"), row=1, col=1)  # fmt: skip
            sw = ts.switches
            busiest = sw.groupby("switch", observed=True)["buffer_bytes"].max().sort_values(ascending=False)
            for name in [str(x) for x in busiest.index[:MAX_TRACES] if busiest[x] > 0]:
                part = sw[sw["switch"] == name]
                fig.add_trace(go.Scatter(x=part["t_ps"] / PS_PER_US, y=part["buffer_bytes"] / 1e3, name=name,
                                         mode="lines", line={"dash": "dot"}, legendgroup="b"), row=2, col=1)  # fmt: skip
            fig.update_yaxes(title_text="KB", rangemode="tozero")
            fig.update_xaxes(title_text="time (µs)", row=2, col=1)
            fig.update_layout(height=620, legend={"orientation": "v", "x": 1.02, "y": 1}, margin={"r": 180})
            out.append(("Queues", f"the {len(queues)} ports that queued most, and the busiest switches", fig))
        flows = ts.flows
        if not flows.empty:
            chosen = rate_flows(flows)
            fig = make_subplots(rows=2, cols=1, shared_xaxes=True, vertical_spacing=0.08,
                                subplot_titles=("sending rate (DCQCN's current rate)", "delivery rate at the receiver"))  # fmt: skip
            for k, fid in enumerate(chosen):
                part = flows[flows["flow_id"] == fid]
                t = part["t_ps"] / PS_PER_US
                line = {"shape": "hv", "color": PALETTE[k % len(PALETTE)]}  # one colour per flow, both panels
                fig.add_trace(go.Scatter(x=t, y=part["rate_bps"] / 1e9, name=f"flow {fid}", mode="lines",
                                         line=line, legendgroup=str(fid)), row=1, col=1)  # fmt: skip
                delivered = part["delivered_bytes"] * PS_PER_BYTE_AT_1BPS / part["dt_ps"] / 1e9
                fig.add_trace(go.Scatter(x=t, y=delivered, name=f"flow {fid}", mode="lines", line=line,
                                         legendgroup=str(fid), showlegend=False), row=2, col=1)  # fmt: skip
            fig.update_yaxes(title_text="Gb/s", rangemode="tozero")
            fig.update_xaxes(title_text="time (µs)", row=2, col=1)
            fig.update_layout(height=620, legend={"x": 1.02, "y": 1}, margin={"r": 140})
            out.append(("Flow rates", f"{len(chosen)} flows whose rate fell lowest", fig))
    else:
        up = links[links["role"].isin(["uplink", "downlink"])]
        if not up.empty:
            fig = go.Figure(go.Bar(x=up["link"], y=up["utilization"], marker_color="#3b6ea8"))
            fig.update_layout(title="end-of-run utilization of the fabric links (enqueued bytes over run time)",
                              yaxis={"title": "utilization", "rangemode": "tozero"}, height=380,
                              xaxis={"showticklabels": len(up) <= 96, "tickfont": {"size": 8}})  # fmt: skip
            out.append(
                ("Link utilization", "no [monitor] section in this run: end-of-run counters only", fig)
            )
    fl = result.flows
    if not fl.empty:
        shown = fl.sort_values("start_ps", kind="stable").head(MAX_TIMELINE_FLOWS)
        end = float(result.summary.get("sim_time_ps", 0))
        finish = np.where(shown["finish_ps"] >= 0, shown["finish_ps"], end)
        labels = [f"f{r.flow_id} h{r.src}→h{r.dst}" for r in shown.itertuples(index=False)]
        slow = shown["slowdown"].to_numpy(dtype=float)
        colors, low, high = scale_colors(slow, TIMELINE_COLORSCALE)
        fig = go.Figure(
            go.Bar(
                base=shown["start_ps"] / PS_PER_US,
                x=(finish - shown["start_ps"]) / PS_PER_US,
                y=labels,
                orientation="h",
                marker={"color": colors},
                showlegend=False,
                customdata=np.stack([slow, shown["size_bytes"], shown["completed"]], axis=1),
                hovertemplate="%{y}<br>start %{base:.2f} µs, FCT %{x:.2f} µs<br>slowdown %{customdata[0]:.2f}"
                "<br>%{customdata[1]} B, completed %{customdata[2]}<extra></extra>",
            )
        )
        # the colour bar, from a trace with no points: the bars carry their colours as CSS strings
        fig.add_trace(go.Scatter(x=[None], y=[None], mode="markers", showlegend=False, hoverinfo="skip",
                                 marker={"color": [low, high], "colorscale": TIMELINE_COLORSCALE, "cmin": low,
                                         "cmax": high, "showscale": True,
                                         "colorbar": {"title": {"text": "slowdown"}}}))  # fmt: skip
        fig.update_layout(
            title=f"flow timeline ({len(shown)} of {len(fl)} flows, by start time)",
            height=int(min(1600, max(260, 10 * len(shown) + 120))),
            xaxis_title="time (µs)",
            yaxis={"autorange": "reversed", "showticklabels": len(shown) <= 96, "tickfont": {"size": 8}},
            margin={"l": 120},
        )
        out.append(
            (
                "Flow timeline",
                "each flow from its start to its finish (censored flows: to the run's end)",
                fig,
            )
        )
    return out


TIMELINE_COLORSCALE = "Plasma"
NO_VALUE_COLOR = "#bbbbbb"  # a flow without a slowdown (none started)


def scale_colors(values: np.ndarray, colorscale: str) -> tuple[list[str], float, float]:
    """Each value's colour on ``colorscale`` over [min, max] of the finite values (NaN grey),
    with that range. Bars get their colours as strings: plotly.js (3.x) warns once per bar,
    "Invalid color specifier: number", when a bar trace's ``marker.color`` holds numbers to map
    through a colorscale (64 console warnings on the demo's viewer page)."""
    from plotly.colors import sample_colorscale

    finite = values[np.isfinite(values)]
    low, high = (float(finite.min()), float(finite.max())) if finite.size else (0.0, 1.0)
    span = high - low or 1.0
    at = [min(1.0, max(0.0, (v - low) / span)) if np.isfinite(v) else 0.0 for v in values]
    colors = sample_colorscale(colorscale, at) if len(at) else []
    return [c if np.isfinite(v) else NO_VALUE_COLOR for c, v in zip(colors, values)], low, high


CSS = """
body{font-family:system-ui,-apple-system,Segoe UI,Helvetica,Arial,sans-serif;margin:1.5em auto;max-width:1300px;color:#222}
h1{font-size:1.5em}h2{font-size:1.2em;margin-top:1.6em;border-bottom:1px solid #ddd}
table{border-collapse:collapse;font-size:0.9em}td{border:1px solid #ddd;padding:2px 8px}td:first-child{color:#555}
.note{color:#555;font-size:0.9em}.plot{margin:0.5em 0}
"""


# the first lines of every page (what :func:`_is_ours` recognises)
_PAGE_START = f'<!doctype html>\n<html lang="en"><head><meta charset="utf-8">\n<meta name="generator" content="{GENERATOR}">\n'


def render_view(result: Result, plotly_js: str = "inline") -> str:
    """The page as text. ``plotly_js``: ``"inline"`` embeds plotly.js (a self-contained page),
    anything else is the relative URL of a shared copy (``plotly.min.js`` written beside)."""
    import plotly.io as pio
    from plotly.offline import get_plotlyjs

    e = html.escape
    card = scenario_card(result.scenario, result.summary)
    title = card[0][1] or "run"
    script = (
        f"<script>{get_plotlyjs()}</script>"
        if plotly_js == "inline"
        else f'<script src="{e(plotly_js)}"></script>'
    )
    parts = [
        _PAGE_START.removesuffix("\n"),
        f"<title>spraylab run: {e(title)}</title>",
        f"<style>{CSS}</style>",
        script,
        "</head><body>",
        f"<h1>spraylab run: {e(title)}</h1>",
        "<h2>Scenario</h2><table>",
        *(f"<tr><td>{e(k)}</td><td>{e(v)}</td></tr>" for k, v in card),
        "</table>",
    ]
    if result.timeseries is None:
        parts.append(
            '<p class="note">This run has no time series: add a <code>[monitor]</code> section '
            '(e.g. <code>interval = "10us"</code>) to the scenario for utilization, queue and rate traces.</p>'
        )
    section = None
    figures = _figures(result)
    for i, (heading, caption, fig) in enumerate(figures):
        if heading != section:
            parts.append(f"<h2>{e(heading)}</h2>")
            section = heading
        div = pio.to_html(fig, include_plotlyjs=False, full_html=False, div_id=f"plot{i}",
                          config={"displaylogo": False, "responsive": True})  # fmt: skip
        parts.append(f'<div class="plot">{div}<p class="note">{e(caption)}</p></div>')
    parts.append(f"<script>window.spraylabView = {json.dumps({'plots': len(figures)})};</script>")
    parts.append("</body></html>")
    return "\n".join(parts) + "\n"


def _is_ours(path: Path) -> bool:
    """Whether ``path`` starts exactly as every page :func:`render_view` writes (a file that
    merely mentions the generator tag is the user's)."""
    try:
        with path.open(errors="replace") as f:
            head = f.read(len(_PAGE_START))
    except OSError:
        return False
    return head == _PAGE_START


def write_view(run_dir: str | Path, out: str | Path | None = None) -> Path:
    """Write the self-contained viewer page of the result in ``run_dir`` (default: ``RUN.html``
    beside the run directory). An existing file there is replaced only if it is a viewer page."""
    run = Path(run_dir)
    try:
        result = Result.load(run)
    except (FileNotFoundError, ResultFileError) as exc:
        raise ViewError(str(exc)) from None
    target = Path(out) if out is not None else run.with_name(run.name + ".html")
    if target.exists() and (target.is_dir() or not _is_ours(target)):
        raise ViewError(f"{target}: exists and is not a spraylab view page; give another --out")
    try:
        text = render_view(result)
    except (KeyError, TypeError, ValueError, AttributeError, IndexError) as exc:
        # valid JSON and Parquet, but not the keys and columns spraylab writes (edited by hand)
        raise ViewError(
            f"{run}: the result's files do not hold what spraylab writes ({type(exc).__name__}: {exc})"
        ) from None
    tmp = target.with_name(f".{target.name}.tmp")
    tmp.write_text(text)
    tmp.replace(target)
    return target


def describe(result: Result) -> str:
    """One line for the CLI: what the page shows."""
    ts = result.timeseries
    if ts is None:
        return "no time series (run without [monitor])"
    n = ts.ports["t_ps"].nunique()
    return f"{n} samples of {ts.ports['link'].nunique()} ports, {ts.flows['flow_id'].nunique()} flows; " + (
        f"peak queue {format_bytes(int(ts.ports['queue_max_bytes'].max()))}" if len(ts.ports) else ""
    )
