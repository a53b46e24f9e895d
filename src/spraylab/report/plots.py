"""Report plots: plain data in, a matplotlib Figure out (returned, so that its data can be read
back); :func:`save_figure` writes PNG, PDF and SVG."""

from __future__ import annotations

from pathlib import Path

import matplotlib.ticker
import numpy as np
from matplotlib.figure import Figure  # figures outside pyplot: no global state, Agg canvas on save

from spraylab.stats import Estimate

DPI = 110


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
