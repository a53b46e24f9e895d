"""Report plots: plain data in, a matplotlib Figure out (returned, so that its data can be read
back); :func:`save_figure` writes PNG, PDF and SVG.

Paper-ready rules: a confidence interval is drawn only from ``MIN_CI_N`` = 3 values on (two
seeds give a Student-t interval 12.7 standard errors wide that says nothing), it never reaches
below zero for quantities that cannot, and every bar says its n; legends sit outside the axes,
never on the curves; layouts are constrained so that labels do not overlap."""

from __future__ import annotations

import textwrap
from pathlib import Path

import matplotlib.ticker
import numpy as np
from matplotlib.figure import Figure  # figures outside pyplot: no global state, Agg canvas on save

from spraylab.results.stats import MIN_CI_N, Estimate

DPI = 110
# Fonts as venues accept them: TrueType (Type 42) embedded in PDFs, never Type 3 bitmaps-as-glyphs
# (which most submission checkers reject), and SVG text kept as <text> elements, selectable and
# searchable, instead of paths. Applied at save time only, so a user's own rcParams are left alone.
PAPER_RC = {"pdf.fonttype": 42, "ps.fonttype": 42, "svg.fonttype": "none"}
LEGEND = {"loc": "upper left", "bbox_to_anchor": (1.01, 1.0), "frameon": False, "fontsize": 8}


# --- plots: plain data in, a Figure out -------------------------------------------------------


def plot_cdf(series: dict[str, np.ndarray], title: str, xlabel: str, xscale: str = "log") -> Figure:
    """One step CDF per label (values are sorted here); ``xscale``: log, symlog or linear. Each
    label says its n (flows)."""
    fig = Figure(figsize=(7.2, 4.2), layout="constrained")
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
        handles = ax.get_lines()
        ax.legend(handles, [f"{h.get_label()} (n={len(series[h.get_label()])})" for h in handles], **LEGEND)
    return fig


def category_labels(categories: list[str], axes_width_in: float) -> list[str]:
    """Category names wrapped onto lines that fit their share of the axis (8-point text is
    about 0.075 in per character), so that neighbouring tick labels never overlap."""
    per_category_in = axes_width_in / max(1, len(categories))
    width = max(5, int(0.85 * per_category_in / 0.075))
    return [textwrap.fill(c, width, break_on_hyphens=False) if len(c) > width else c for c in categories]


def ci_error(est: Estimate, scale: float = 1.0, nonnegative: bool = True) -> tuple[float, float]:
    """The (below, above) error-bar lengths of ``est``: none under ``MIN_CI_N`` values, and for a
    quantity that cannot be negative the interval is cut at zero."""
    if est.mean is None or est.half_width is None or est.n < MIN_CI_N:
        return 0.0, 0.0
    half = est.half_width / scale
    below = min(half, est.mean / scale) if nonnegative else half
    return below, half


def plot_bars(
    categories: list[str],
    series: dict[str, list[Estimate]],
    title: str,
    ylabel: str,
    scale: float = 1.0,
    nonnegative: bool = True,
) -> Figure:
    """Grouped bars: one group per category, one bar per label; height = mean, error bar = 95% CI
    (Student t, only from ``MIN_CI_N`` values on, cut at zero when ``nonnegative``); each bar
    is labelled with its n."""
    wide = 0.35 * len(categories) * len(series) + 3
    fig = Figure(figsize=(min(12.0, max(7.2, wide)), 4.4), layout="constrained")
    ax = fig.subplots()
    width = 0.8 / max(1, len(series))
    x = np.arange(len(categories))
    for i, (label, ests) in enumerate(series.items()):
        heights = [e.mean / scale if e.mean is not None else np.nan for e in ests]
        errs = np.array([ci_error(e, scale, nonnegative) for e in ests]).T.reshape(2, len(ests))
        xs = x + (i - (len(series) - 1) / 2) * width
        # no interval (n < MIN_CI_N): NaN draws no bar and no cap, which a zero-length one would
        drawn = np.where([e.n >= MIN_CI_N and e.half_width is not None for e in ests], errs, np.nan)
        ax.bar(xs, heights, width, yerr=drawn, capsize=3, label=label)
        for xi, h, up, e in zip(xs, heights, errs[1], ests):
            if e.n:  # above the error bar, not on it
                ax.annotate(f"n={e.n}", (xi, h + up), xytext=(0, 2), textcoords="offset points",
                            ha="center", va="bottom", fontsize=7)  # fmt: skip
    ax.set_xticks(x, category_labels(categories, fig.get_figwidth() - 2.5), fontsize=8)
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    ax.set_ylim(bottom=0)
    ax.margins(y=0.12)  # room for the n labels
    ax.grid(True, axis="y", alpha=0.3)
    if series:
        ax.legend(**LEGEND)
    if any(0 < e.n < MIN_CI_N for ests in series.values() for e in ests):
        fig.supxlabel(f"no error bar where n < {MIN_CI_N}", fontsize=7, color="#555")
    return fig


def plot_percentiles(
    categories: list[str], series: dict[str, list[tuple[float, float, int]]], title: str, ylabel: str
) -> Figure:
    """Two panels of grouped bars, p50 and p99, per category and label, from (p50, p99, n)
    triples; each bar is labelled with its n (values pooled)."""
    wide = 0.5 * len(categories) * len(series) + 4
    fig = Figure(figsize=(min(14.0, max(9.0, wide)), 4.4), layout="constrained")
    axes = fig.subplots(1, 2)  # own scales: a p99 is often far above the p50
    width = 0.8 / max(1, len(series))
    x = np.arange(len(categories))
    for k, (ax, name) in enumerate(zip(axes, ("p50", "p99"))):
        for i, (label, values) in enumerate(series.items()):
            heights = [v[k] for v in values]
            bars = ax.bar(x + (i - (len(series) - 1) / 2) * width, heights, width, label=label)
            ax.bar_label(bars, labels=[f"n={v[2]}" for v in values], fontsize=6, padding=2)
        ax.set_xticks(x, category_labels(categories, (fig.get_figwidth() - 2.5) / 2), fontsize=8)
        ax.set_title(f"{name}")
        ax.grid(True, axis="y", alpha=0.3)
        ax.set_ylim(bottom=0)
        ax.margins(y=0.12)
    axes[0].set_ylabel(ylabel)
    fig.suptitle(title)
    if series:
        axes[1].legend(**LEGEND)
    return fig


def plot_heatmap(rows: list[str], cols: list[str], matrix: np.ndarray, title: str, label: str) -> Figure:
    fig = Figure(
        figsize=(max(6.4, 0.45 * len(cols) + 2.5), max(2.5, 0.5 * len(rows) + 1.6)), layout="constrained"
    )
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
    return fig


def plot_timeseries(
    series: dict[str, tuple[np.ndarray, np.ndarray]],
    title: str,
    ylabel: str,
    xlabel: str = "time (µs)",
    step: bool = True,
) -> Figure:
    """One line per label from (x, y) arrays, e.g. a monitored port's utilization per interval
    (``step``: each value holds over the interval that ends at its x, as the samples do)."""
    fig = Figure(figsize=(7.6, 4.0), layout="constrained")
    ax = fig.subplots()
    for label, (xs, ys) in series.items():
        xs, ys = np.asarray(xs, dtype=float), np.asarray(ys, dtype=float)
        if step:
            ax.step(xs, ys, where="pre", label=label)
        else:
            ax.plot(xs, ys, label=label)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    ax.set_ylim(bottom=0)
    ax.grid(True, alpha=0.3)
    if series:
        ax.legend(**LEGEND)
    return fig


FORMATS = ("png", "pdf", "svg")  # a plot is written in each, beside one another


def save_figure(fig: Figure, path: Path) -> Path:
    """Write ``path`` (PNG) and the PDF and SVG beside it, without timestamps so that the same
    figure gives the same bytes. The constrained layout is solved once and then frozen, so that
    every format (and any later rendering) has the same positions."""
    if fig.get_layout_engine() is not None:
        fig.draw_without_rendering()
        fig.set_layout_engine("none")
    with matplotlib.rc_context(PAPER_RC):
        fig.savefig(path, dpi=DPI)
        fig.savefig(path.with_suffix(".pdf"), metadata={"CreationDate": None, "ModDate": None})
        with matplotlib.rc_context({"svg.hashsalt": "spraylab"}):  # element ids from content, not uuid4
            fig.savefig(path.with_suffix(".svg"), metadata={"Date": None})
    return path
