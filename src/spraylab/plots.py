"""Plots of results: FCT-slowdown CDFs and uplink utilization, one PNG each."""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from spraylab.metrics.result import Result  # noqa: E402


def _caption(fig: plt.Figure, card: str) -> None:
    """The scenario card (spraylab.card) under the plot, so a saved figure says what it shows."""
    if card:
        fig.text(0.01, 0.01, card, fontsize=5.5, va="bottom", ha="left", family="monospace", wrap=True)
        fig.subplots_adjust(bottom=0.1 + 0.03 * card.count("\n"))


def slowdown_cdf(results: dict[str, Result], path: Path, title: str = "", card: str = "") -> Path:
    fig, ax = plt.subplots(figsize=(6, 4 + 0.12 * card.count("\n")))
    for label, result in results.items():
        values = np.sort(result.flows.loc[result.flows["completed"], "slowdown"].to_numpy(dtype=float))
        if len(values):
            ax.step(values, np.arange(1, len(values) + 1) / len(values), where="post", label=label)
    ax.set_xscale("log")
    ax.set_xlabel("FCT slowdown (FCT / lower bound)")
    ax.set_ylabel("CDF of flows")
    ax.set_title(title or "FCT slowdown")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend()
    fig.tight_layout()
    _caption(fig, card)
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def uplink_utilization(results: dict[str, Result], path: Path, title: str = "", card: str = "") -> Path:
    """Per scheme, every fabric uplink's utilization sorted high to low: flat means balanced."""
    fig, ax = plt.subplots(figsize=(6, 4 + 0.12 * card.count("\n")))
    for label, result in results.items():
        links = result.links
        util = np.sort(links.loc[links["role"] == "uplink", "utilization"].to_numpy(dtype=float))[::-1]
        if len(util):
            ax.plot(np.arange(len(util)) / max(1, len(util) - 1), util, label=label)
    ax.set_xlabel("uplinks, sorted by utilization (fraction)")
    ax.set_ylabel("utilization over the run")
    ax.set_ylim(bottom=0)
    ax.set_title(title or "Fabric uplink utilization")
    ax.grid(True, alpha=0.3)
    ax.legend()
    fig.tight_layout()
    _caption(fig, card)
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path
