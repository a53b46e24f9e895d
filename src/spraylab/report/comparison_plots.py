"""Plots of one comparison (``spraylab compare``, ``spraylab demo``): the FCT-slowdown CDF and the
fabric uplinks' utilization, each written as PNG, PDF and SVG (:func:`spraylab.report.save_figure`:
TrueType fonts, SVG text as text), legends beside the axes, the scenario card as a caption."""

from __future__ import annotations

import textwrap
from pathlib import Path

import numpy as np
from matplotlib.figure import Figure  # figures outside pyplot: no global state

from spraylab.metrics.result import Result
from spraylab.report.plots import LEGEND, save_figure

CAPTION_PT = 5.5
# Width of one monospace character at CAPTION_PT, in inches (DejaVu Sans Mono: 0.6 em).
CAPTION_CHAR_IN = 0.6 * CAPTION_PT / 72


def _caption(fig: Figure, card: str) -> None:
    """The scenario card (spraylab.results.card) under the plot, so a saved figure says what it shows. As
    the figure's supxlabel, so the constrained layout makes room for it; wrapped to the width."""
    if not card:
        return
    width = max(40, int(0.95 * fig.get_figwidth() / CAPTION_CHAR_IN))
    text = "\n".join(textwrap.fill(line, width, subsequent_indent="  ") for line in card.splitlines())
    fig.supxlabel(text, x=0.01, ha="left", fontsize=CAPTION_PT, family="monospace")


def _figure(card: str, width_in: float = 7.6, panels: int = 1) -> tuple[Figure, list]:
    fig = Figure(figsize=(width_in, 4 + 0.12 * card.count("\n")), layout="constrained")
    axes = fig.subplots(1, panels, squeeze=False)[0]
    return fig, list(axes)


def slowdown_cdf(results: dict[str, Result], path: Path, title: str = "", card: str = "") -> Path:
    fig, (ax,) = _figure(card)
    for label, result in results.items():
        values = np.sort(result.flows.loc[result.flows["completed"], "slowdown"].to_numpy(dtype=float))
        if len(values):
            ax.step(values, np.arange(1, len(values) + 1) / len(values), where="post", label=label)
    ax.set_xscale("log")
    ax.set_xlabel("FCT slowdown (FCT / lower bound)")
    ax.set_ylabel("CDF of flows")
    ax.set_ylim(0, 1.02)
    ax.set_title(title or "FCT slowdown")
    ax.grid(True, which="both", alpha=0.3)
    if ax.get_lines():
        ax.legend(**LEGEND)  # beside the axes: never over the curves
    _caption(fig, card)
    save_figure(fig, path)
    return path


def host_rate_bps(result: Result) -> float:
    """The receivers' link rate: the fastest host-facing downlink (0 if there is none)."""
    links = result.links
    rates = links.loc[links["role"] == "host_down", "rate_bps"] if len(links) else []
    return float(max(rates, default=0.0))


def useful_fraction(result: Result) -> float:
    """Goodput per receiver (``goodput_bps``: payload delivered, retransmissions not counted) as a
    fraction of the receivers' link rate; NaN when nothing completed."""
    goodput, rate = result.summary.get("goodput_bps"), host_rate_bps(result)
    return goodput / rate if goodput is not None and rate > 0 else float("nan")


def uplink_utilization(results: dict[str, Result], path: Path, title: str = "", card: str = "") -> Path:
    save_figure(uplink_figure(results, title, card), path)
    return path


def uplink_figure(results: dict[str, Result], title: str = "", card: str = "") -> Figure:
    """Two panels. Left, raw: per scheme every fabric uplink's utilization (bytes sent over
    capacity, retransmissions included), sorted high to low: flat means balanced. Right, raw
    against useful: the uplinks' mean raw utilization beside goodput per receiver over its link
    rate, so a scheme whose links are busy resending (high raw, low useful) does not look best."""
    fig, (raw_ax, useful_ax) = _figure(card, width_in=10.5, panels=2)
    labels, raw_means, useful = [], [], []
    for label, result in results.items():
        links = result.links
        util = np.sort(links.loc[links["role"] == "uplink", "utilization"].to_numpy(dtype=float))[::-1]
        if len(util):
            raw_ax.plot(np.arange(len(util)) / max(1, len(util) - 1), util, label=label)
        labels.append(label)
        raw_means.append(float(util.mean()) if len(util) else float("nan"))
        useful.append(useful_fraction(result))
    raw_ax.set_xlabel("uplinks, sorted by utilization (fraction)")
    raw_ax.set_ylabel("raw utilization (incl. retransmissions)")
    raw_ax.set_ylim(bottom=0)
    raw_ax.set_title("raw: every uplink")
    raw_ax.grid(True, alpha=0.3)

    x = np.arange(len(labels))
    useful_ax.bar(x - 0.2, raw_means, 0.4, label="raw: uplinks' mean", color="#9ab")
    useful_ax.bar(x + 0.2, useful, 0.4, label="useful: goodput\nper receiver", color="#2a7")
    useful_ax.set_xticks(x, labels, rotation=30, ha="right", fontsize=8)
    useful_ax.set_ylabel("fraction of line rate (useful: of the host link)")
    useful_ax.set_ylim(bottom=0)
    useful_ax.set_title("raw against useful")
    useful_ax.grid(True, axis="y", alpha=0.3)
    if raw_ax.get_lines():
        raw_ax.legend(**LEGEND)  # beside the axes (the layout makes room): never over the data
    useful_ax.legend(**LEGEND)
    fig.suptitle(title or "Fabric uplink utilization")
    _caption(fig, card)
    return fig
