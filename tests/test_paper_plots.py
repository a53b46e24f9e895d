"""Paper-ready plots (confidence intervals that respect the data, n shown, legends off the curves,
labels apart, PDF/SVG beside PNG) and load_sweep's DataFrames against the stored tables."""

from __future__ import annotations

import json
import re
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.container import ErrorbarContainer
from matplotlib.figure import Figure

import spraylab
from spraylab.report import ci_error, plot_bars, plot_cdf, plot_percentiles, save_figure
from spraylab.results.stats import Estimate, mean_ci
from spraylab.sweeps.sweep import Sweep, run_sweep


def test_confidence_intervals_need_three_values_and_stay_above_zero() -> None:
    two = mean_ci([1.0, 3.0])  # a Student-t interval exists (t = 12.7) but says nothing
    assert two.half_width is not None and ci_error(two) == (0.0, 0.0)
    three = mean_ci([0.1, 0.2, 3.0])
    below, above = ci_error(three)
    assert above == pytest.approx(three.half_width) and below == pytest.approx(three.mean)  # cut at 0
    assert ci_error(three, nonnegative=False) == (pytest.approx(three.half_width),) * 2
    fig = plot_bars(["a", "b"], {"x": [two, three]}, "t", "y")
    ax = fig.axes[0]
    (errors,) = [c for c in ax.containers if isinstance(c, ErrorbarContainer)]
    segments = [seg for collection in errors.lines[2] for seg in collection.get_segments()]
    drawn = [seg for seg in segments if len(seg) and np.isfinite(seg).all()]  # n = 2 draws none
    assert len(drawn) == 1
    assert drawn[0][:, 1].min() == pytest.approx(0.0) and drawn[0][:, 1].max() == pytest.approx(
        three.mean + three.half_width
    )
    assert sorted(t.get_text() for t in ax.texts) == ["n=2", "n=3"]
    assert ax.get_ylim()[0] == 0


def _boxes(fig: Figure, artists: list[Any]) -> list[Any]:
    canvas = FigureCanvasAgg(fig)
    canvas.draw()
    renderer = canvas.get_renderer()
    return [a.get_window_extent(renderer) for a in artists]


@pytest.mark.slow
def test_legends_sit_outside_the_axes_and_labels_do_not_overlap(tmp_path: Path) -> None:
    rng = np.random.default_rng(1)
    series = {f"scheme-{i}": rng.lognormal(0, 1, 200) + 1 for i in range(4)}
    cdf = plot_cdf(series, "slowdown", "slowdown")
    long_names = ["a rather long bucket name", "another long bucket name", "third long bucket", "fourth"]
    pct = plot_percentiles(long_names, {f"v{i}": [(1.0 + i, 5.0 + i, 10)] * 4 for i in range(3)}, "t", "y")
    est = Estimate(2.0, 0.5, 3)
    bars = plot_bars(long_names, {"ecmp": [est] * 4, "rps": [est] * 4}, "t", "y")
    for fig in (cdf, pct, bars):
        save_figure(fig, tmp_path / "f.png")  # solves and freezes the layout
        ax = fig.axes[-1]
        legend = ax.get_legend()
        (legend_box,) = _boxes(fig, [legend])
        for axes_box in _boxes(fig, fig.axes):
            assert legend_box.x0 >= axes_box.x1 - 1 or not legend_box.overlaps(axes_box)
        for panel in fig.axes:
            labels = _boxes(fig, [t for t in panel.get_xticklabels() if t.get_text()])
            assert not any(a.overlaps(b) for i, a in enumerate(labels) for b in labels[i + 1 :])
    assert "n=200" in [t.get_text() for t in cdf.axes[0].get_legend().get_texts()][0]


def test_pdf_and_svg_beside_png_and_reproducible(tmp_path: Path) -> None:
    fig = plot_bars(["a"], {"x": [Estimate(1.0, 0.1, 3)]}, "t", "y")
    save_figure(fig, tmp_path / "one.png")
    first = {s: (tmp_path / f"one.{s}").read_bytes() for s in ("png", "pdf", "svg")}
    assert first["pdf"].startswith(b"%PDF") and b"<svg" in first["svg"]
    save_figure(fig, tmp_path / "one.png")
    assert {s: (tmp_path / f"one.{s}").read_bytes() for s in ("png", "pdf", "svg")} == first


def pdf_fonts(pdf: bytes) -> list[dict[str, str]]:
    """Every font dictionary of a PDF, read from its objects (matplotlib writes them uncompressed,
    outside object streams): its ``/Subtype`` and, for a descriptor, which font file it embeds."""
    fonts = []
    for body in re.findall(rb"\d+ 0 obj\s*(<<.*?>>)\s*(?:endobj|stream)", pdf, re.S):
        subtype = re.search(rb"/Subtype\s*/(\w+)", body)
        if re.search(rb"/Type\s*/Font\b", body) and subtype:
            fonts.append({"subtype": subtype.group(1).decode()})
        if re.search(rb"/Type\s*/FontDescriptor\b", body):
            files = re.findall(rb"/(FontFile\d?)\s", body)
            fonts.append({"descriptor": ",".join(f.decode() for f in files)})
    return fonts


def check_paper_fonts(pdf_path: Path, svg_path: Path, words: list[str]) -> None:
    """The PDF embeds TrueType outlines only (Type 42: a Type0 font over a CIDFontType2, or a
    plain TrueType font; FontFile2 streams), no Type 3 font anywhere; the SVG keeps its text as
    <text> elements holding ``words``, not as glyph paths."""
    pdf = pdf_path.read_bytes()
    fonts = pdf_fonts(pdf)
    subtypes = {f["subtype"] for f in fonts if "subtype" in f}
    assert subtypes and subtypes <= {"Type0", "CIDFontType2", "TrueType"}, subtypes
    assert b"/Type3" not in pdf
    descriptors = [f["descriptor"] for f in fonts if "descriptor" in f]
    assert descriptors and all(d == "FontFile2" for d in descriptors), descriptors
    root = ET.parse(svg_path).getroot()
    texts = " ".join("".join(t.itertext()) for t in root.iter("{http://www.w3.org/2000/svg}text"))
    for word in words:
        assert word in texts
    assert not list(root.iter("{http://www.w3.org/2000/svg}defs")) or not any(
        (el.get("id") or "").startswith("DejaVu") for el in root.iter()
    )  # glyphs drawn as paths would be defined as DejaVu* path ids


def test_report_figures_embed_truetype_and_keep_svg_text(tmp_path: Path) -> None:
    fig = plot_cdf({"ecmp": np.array([1.0, 2.0, 4.0])}, "FCT slowdown µs", "slowdown")
    save_figure(fig, tmp_path / "cdf.png")
    check_paper_fonts(tmp_path / "cdf.pdf", tmp_path / "cdf.svg", ["FCT slowdown µs", "CDF of flows", "ecmp"])


@pytest.fixture(scope="module")
def compared(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    scenario = spraylab.Scenario.from_dict(
        {
            "topology": {"leaves": 2, "spines": 2, "hosts_per_leaf": 2, "host_rate": "100Gbps"},
            "workload": {"kind": "permutation", "size": "100KB"},
        }
    )
    return {s: spraylab.run(scenario.with_overrides({"lb.scheme": s})) for s in ("ecmp", "rps")}


def test_compare_plots_are_paper_ready(compared: dict[str, Any], tmp_path: Path) -> None:
    """The demo's plots (spraylab.report.comparison_plots): TrueType PDF, SVG text, legends beside the data, and
    utilization shown raw and useful apart: the useful bar is goodput per receiver over the
    host link rate, not the uplinks' bytes sent."""
    from matplotlib.container import BarContainer

    from spraylab.report import comparison_plots as plots

    card = "fabric: a card line\nseed 1"
    plots.slowdown_cdf(compared, tmp_path / "cdf.png", "t", card)
    plots.uplink_utilization(compared, tmp_path / "util.png", "t", card)
    check_paper_fonts(tmp_path / "cdf.pdf", tmp_path / "cdf.svg", ["CDF of flows", "rps", "seed 1"])
    check_paper_fonts(tmp_path / "util.pdf", tmp_path / "util.svg", ["raw", "useful", "fabric: a card line"])

    fig = plots.uplink_figure(compared, "t", card)
    raw_ax, useful_ax = fig.axes
    for ax in fig.axes:
        (legend_box,) = _boxes(fig, [ax.get_legend()])
        for axes_box in _boxes(fig, fig.axes):
            assert not legend_box.overlaps(axes_box)
    raw_bars, useful_bars = [c for c in useful_ax.containers if isinstance(c, BarContainer)]
    for i, result in enumerate(compared.values()):
        links = result.links
        uplinks = links.loc[links["role"] == "uplink", "utilization"]
        assert raw_bars[i].get_height() == pytest.approx(uplinks.mean())
        host_rate = links.loc[links["role"] == "host_down", "rate_bps"].max()
        assert useful_bars[i].get_height() == pytest.approx(result.summary["goodput_bps"] / host_rate)


@pytest.fixture(scope="module")
def sweep_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    d = tmp_path_factory.mktemp("frames") / "store"
    sweep = Sweep.from_dict(
        {
            "name": "frames",
            "topology": {"leaves": 2, "spines": 2, "hosts_per_leaf": 2, "host_rate": "100Gbps"},
            "workload": {"kind": "permutation", "size": "100KB"},
            "monitor": {"interval": "5us", "ports": ["uplink"]},
            "axes": {"lb.scheme": ["ecmp", "rps"], "run.seed": [1, 2]},
        }
    )
    assert run_sweep(sweep, d, jobs=1).line() == "4 runs: 4 done, 0 failed, 0 skipped"
    return d


def test_load_sweep_frames_are_the_stored_tables(sweep_dir: Path) -> None:
    frames = spraylab.load_sweep(sweep_dir)
    assert frames.axes == ["lb.scheme", "run.seed"]
    runs = frames.runs
    assert sorted(zip(runs["lb.scheme"], runs["run.seed"])) == [
        ("ecmp", 1),
        ("ecmp", 2),
        ("rps", 1),
        ("rps", 2),
    ]  # values with the sweep file's types: the seed an int, not its label "1"
    assert runs["run.seed"].dtype.kind == "i" and frames.flows["run.seed"].dtype.kind == "i"
    assert set(runs["variant"]) == {"ecmp", "rps"} and (runs["status"] == "done").all()
    for key in runs["key"]:
        d = sweep_dir / "runs" / key
        summary = json.loads((d / "summary.json").read_text())
        row = runs.set_index("key").loc[key]
        assert row["slowdown_p99"] == summary["slowdown_p99"] and row["variant"] == summary["scheme"]
        for name in ("flows", "links"):
            stored = pd.read_parquet(d / f"{name}.parquet")
            mine = getattr(frames, name)
            mine = mine[mine["key"] == key].drop(columns=["key", "lb.scheme", "run.seed", "variant"])
            pd.testing.assert_frame_equal(mine.reset_index(drop=True), stored)
        ports = frames.timeseries["ports"]
        ports = ports[ports["key"] == key]
        departed = ports.groupby("link")["tx_bytes"].sum()
        links = pd.read_parquet(d / "links.parquet").set_index("link")
        assert set(departed.index) == set(links.index[links["role"] == "uplink"])
        assert (departed == links.loc[departed.index, "tx_bytes"]).all()
