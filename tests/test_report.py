"""Compare tables and the HTML report of a small sweep: every PNG is a real plot of the data
(checked by reading the plotted data back from the returned figures and recomputing it straight
from the stored Parquet tables), and the HTML references only files it ships."""

from __future__ import annotations

import io
import json
import math
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import urlparse

import matplotlib.image
import numpy as np
import pandas as pd
import pytest
from matplotlib.container import BarContainer, ErrorbarContainer
from typer.testing import CliRunner

from spraylab.cli import UsageError, app
from spraylab.metrics import catalog
from spraylab.report import build_report, compare_tables, format_estimate, html_table, sweep_data
from spraylab.results.stats import mean_ci, t95
from spraylab.sweeps.sweep import Sweep, run_sweep

SWEEP = """
name = "report-test"
baseline = "ecmp"

[topology]
leaves = 2
spines = 2
hosts_per_leaf = 2
host_rate = "100Gbps"

# two flow sizes (two size buckets) and a collective (CCT and busbw)
[[workload]]
kind = "random_pairs"
size = "50KB"
flows = 6

[[workload]]
kind = "random_pairs"
size = "300KB"
flows = 6

[[workload]]
kind = "collective"
collective = "allreduce"
size = "400KB"

[axes]
"lb.scheme" = ["ecmp", "rps"]
"transport.recovery" = ["gbn", "sr"]
"run.seed" = [1, 2]
"""

SCHEMES = ["ecmp", "rps"]


@pytest.fixture(scope="module")
def store_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    d = tmp_path_factory.mktemp("report")
    (d / "sweep.toml").write_text(SWEEP)
    outcome = run_sweep(Sweep.load(d / "sweep.toml"), d / "store", jobs=2)
    assert outcome.line() == "8 runs: 8 done, 0 failed, 0 skipped"
    return d / "store"


def runs_of(store: Path, scheme: str, recovery: str) -> list[Path]:
    """Run directories of one cell, found from the stored scenarios (not from the report code)."""
    out = []
    for d in sorted((store / "runs").iterdir()):
        sc = json.loads((d / "scenario.json").read_text())
        if sc["lb"]["scheme"] == scheme and sc["transport"]["recovery"] == recovery:
            out.append(d)
    assert len(out) == 2
    return out


def table(run_dir: Path, name: str) -> pd.DataFrame:
    return pd.read_parquet(run_dir / f"{name}.parquet")


def ci(values: list[float]) -> tuple[float, float]:
    mean = float(np.mean(values))
    return mean, t95(len(values) - 1) * float(np.std(values, ddof=1)) / math.sqrt(len(values))


def test_compare_tables_mean_ci_and_ratio(store_dir: Path) -> None:
    data = sweep_data(store_dir)
    assert data.by == ["lb.scheme"] and data.over == "run.seed" and data.columns == SCHEMES
    tables = compare_tables(data)  # baseline from the sweep file: ecmp
    assert [t.group.title for t in tables] == ["transport.recovery = gbn", "transport.recovery = sr"]
    for t in tables:
        recovery = t.group.values["transport.recovery"]
        assert t.baseline == "ecmp" and t.n == {"ecmp": 2, "rps": 2}
        rows = {key: cells for key, _, cells in t.rows}
        assert {"slowdown_mean", "fct_p99_ps", "cct_mean_ps", "busbw_mean_bps", "retx_ratio"} <= set(rows)
        means = {}
        for i, scheme in enumerate(SCHEMES):
            values = [
                json.loads((d / "summary.json").read_text())["fct_p99_ps"]
                for d in runs_of(store_dir, scheme, recovery)
            ]
            mean, half = ci(values)
            cell = rows["fct_p99_ps"][i]
            assert cell.estimate.mean == pytest.approx(mean) and cell.estimate.half_width == pytest.approx(
                half
            )
            means[scheme] = mean
        assert rows["fct_p99_ps"][0].ratio == pytest.approx(1.0)
        assert rows["fct_p99_ps"][1].ratio == pytest.approx(means["rps"] / means["ecmp"])
    by_both = sweep_data(store_dir, by=["lb.scheme", "transport.recovery"])
    assert by_both.columns == ["ecmp/gbn", "ecmp/sr", "rps/gbn", "rps/sr"] and len(by_both.groups) == 1


def test_table_intervals_follow_the_plot_rule(store_dir: Path) -> None:
    # Student t, df = n - 1: half-width t(0.975, 2) s / sqrt(3) = 4.303 / sqrt(3) = 2.484 for s = 1
    assert format_estimate(mean_ci([9.0, 10.0, 11.0]), "float") == "10.000 ± 2.484"
    # n = 2: t(0.975, 1) = 12.7 makes an interval that says nothing; the mean alone
    two = mean_ci([9.0, 11.0])
    assert two.half_width is not None and format_estimate(two, "float") == "10.000"
    # 2 - 2.484 < 0: a quantity that cannot be negative shows [0, high], never a negative end
    assert format_estimate(mean_ci([1.0, 2.0, 3.0]), "float") == "2.000 [0.000, 4.484]"
    assert format_estimate(mean_ci([1.0, 2.0, 3.0]), "float", nonnegative=False) == "2.000 ± 2.484"
    # the HTML tables of a two-seed sweep: n in every column header, no interval anywhere
    for table in compare_tables(sweep_data(store_dir)):
        page = html_table(table)
        assert page.count("n=2") == len(table.columns) and "±" not in page and "[" not in page
        assert all(cell.interval is None for _, _, cells in table.rows for cell in cells)


def test_cli_compare_on_a_results_directory(store_dir: Path) -> None:
    runner = CliRunner()
    r = runner.invoke(
        app, ["compare", str(store_dir), "--baseline", "rps", "--metrics", "slowdown_mean,fct_p99_ps"]
    )
    assert r.exit_code == 0, r.output
    assert "rps (baseline)" in r.output and "transport.recovery = sr" in r.output
    assert catalog.label_of("slowdown_mean") in r.output and "×)" in r.output
    # two seeds per cell: n shown, no interval (the plots' rule: Student t only from n = 3 on)
    body = r.output.split("ratios to rps")[-1]  # the tables, under the line stating the rule
    assert "n=2" in body and "±" not in body and "[" not in body
    r = runner.invoke(app, ["compare", str(store_dir), "--baseline", "nope"])
    assert isinstance(r.exception, UsageError) and "--baseline 'nope': not a column" in str(r.exception)
    r = runner.invoke(app, ["compare", str(store_dir), "--by", "lb.nope"])
    assert isinstance(r.exception, UsageError) and "not an axis of this sweep" in str(r.exception)


class Refs(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.refs: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.refs.extend(v for k, v in attrs if k in ("src", "href") and v is not None)


@pytest.mark.slow
def test_report_plots_are_the_data_and_html_is_self_contained(store_dir: Path, tmp_path: Path) -> None:
    report = build_report(store_dir, tmp_path / "report", keep_figures=True)
    kinds = ["slowdown_cdf", "slowdown_by_size", "cct", "busbw", "uplink_heatmap", "reorder_cdf"]
    groups = ["g1-recovery-gbn", "g2-recovery-sr"]
    assert sorted(p.file for p in report.plots) == sorted(f"{k}-{g}.png" for k in kinds for g in groups)

    for plot in report.plots:
        path = report.directory / plot.file
        fig = plot.figure
        assert fig is not None
        # The PNG is this figure: re-rendering it gives the same bytes; and it is not blank.
        buf = io.BytesIO()
        fig.savefig(buf, dpi=110)
        assert buf.getvalue() == path.read_bytes(), plot.file
        pixels = matplotlib.image.imread(path)
        assert pixels.shape[0] >= 250 and pixels.shape[1] >= 500 and float(pixels[..., :3].std()) > 0.05

        recovery = "gbn" if "-g1-" in plot.file else "sr"
        ax = fig.axes[0]
        kind = plot.file.split("-g")[0]
        runs = {s: runs_of(store_dir, s, recovery) for s in SCHEMES}
        if kind in ("slowdown_cdf", "reorder_cdf"):
            lines = {line.get_label(): line for line in ax.get_lines()}
            assert sorted(lines) == SCHEMES
            for s in SCHEMES:
                flows = pd.concat([table(d, "flows") for d in runs[s]])
                if kind == "slowdown_cdf":
                    expected = np.sort(flows.loc[flows["completed"], "slowdown"].to_numpy(dtype=float))
                else:
                    expected = np.sort(flows["max_reorder"].to_numpy(dtype=float))
                x, y = lines[s].get_xdata(), lines[s].get_ydata()
                np.testing.assert_allclose(x, expected)
                np.testing.assert_allclose(y, np.arange(1, len(expected) + 1) / len(expected))
                lo, hi = ax.get_xlim()
                assert lo <= expected.min() and hi >= expected.max()
        elif kind == "slowdown_by_size":
            # p50 and p99 of the completed flows per size bucket, pooled over seeds, n on each bar
            assert [a.get_title() for a in fig.axes] == ["p50", "p99"]
            for k, panel in enumerate(fig.axes):
                assert [t.get_text() for t in panel.get_xticklabels()] == ["10KB-100KB", "100KB-1MB"]
                bars = [c for c in panel.containers if isinstance(c, BarContainer)]
                assert [c.get_label() for c in bars] == SCHEMES
                labels: list[str] = []
                for container, s in zip(bars, SCHEMES):
                    f = pd.concat([table(d, "flows") for d in runs[s]])
                    f = f[f["completed"]]
                    parts = [
                        f.loc[f["size_bytes"] <= 100_000, "slowdown"],
                        f.loc[f["size_bytes"] > 100_000, "slowdown"],
                    ]
                    expected = [np.percentile(part, 99 if k else 50) for part in parts]
                    np.testing.assert_allclose([bar.get_height() for bar in container.patches], expected)
                    labels += [f"n={len(part)}" for part in parts]
                assert sorted(t.get_text() for t in panel.texts) == sorted(labels)  # n on every bar
        elif kind in ("cct", "busbw"):
            column, scale = ("cct_ps", 1e6) if kind == "cct" else ("busbw_bps", 8e9)  # us; GB/s
            assert [t.get_text() for t in ax.get_xticklabels()] == SCHEMES
            (bars,) = [c for c in ax.containers if isinstance(c, BarContainer)]
            heights = [bar.get_height() for bar in bars.patches]
            expected = []
            for s in SCHEMES:
                per_run = []
                for d in runs[s]:
                    g = table(d, "groups")
                    v = g[column].to_numpy(dtype=float)
                    per_run.append(v[np.isfinite(v) & (v >= 0)].mean())
                expected.append(np.mean(per_run) / scale)
            np.testing.assert_allclose(heights, expected)
            assert ax.get_ylim()[1] >= max(expected) and ax.get_ylim()[0] == 0
            assert ax.get_ylabel() == ("CCT (µs)" if kind == "cct" else "busbw (GB/s)")  # labels say µs
            # two seeds per cell: too few for a confidence interval, so no error bar is drawn
            (errors,) = [c for c in ax.containers if isinstance(c, ErrorbarContainer)]
            segments = [seg for collection in errors.lines[2] for seg in collection.get_segments()]
            assert not [seg for seg in segments if len(seg) and np.isfinite(seg).all()]
        elif kind == "uplink_heatmap":
            image = ax.images[0]
            assert [t.get_text() for t in ax.get_yticklabels()] == SCHEMES
            links = [t.get_text() for t in ax.get_xticklabels()]
            assert links == ["leaf0->spine0", "leaf0->spine1", "leaf1->spine0", "leaf1->spine1"]
            expected = []
            for s in SCHEMES:
                util = pd.concat(
                    [table(d, "links").set_index("link")["utilization"] for d in runs[s]], axis=1
                )
                expected.append(util.loc[links].mean(axis=1).to_numpy())
            np.testing.assert_allclose(np.asarray(image.get_array()), np.array(expected))
            assert image.get_clim() == (0.0, pytest.approx(np.max(expected)))
        else:
            raise AssertionError(f"unexpected plot {plot.file}")

    # The HTML page references only files it ships, and shows every plot and table.
    page = report.html.read_text()
    parser = Refs()
    parser.feed(page)
    assert parser.refs, "the page shows no images"
    for ref in parser.refs:
        parsed = urlparse(ref)
        assert not parsed.scheme and not parsed.netloc and not ref.startswith("/") and ".." not in ref, ref
        assert (report.directory / ref).is_file(), ref
    images = {ref for ref in parser.refs if ref.endswith(".png")}
    assert images == {p.name for p in report.directory.glob("*.png")}
    for png in images:  # the PDF and SVG beside each PNG, linked
        assert {png[:-3] + "pdf", png[:-3] + "svg"} <= set(parser.refs)
    views = sorted(ref for ref in parser.refs if ref.startswith("runs/"))
    assert len(views) == 8 and all((report.directory / v).read_text().count("spraylab view") for v in views)
    assert page.count("<table>") == 3  # the axes, then one compare table per group
    assert "ecmp (baseline)" in page and "transport.recovery = sr" in page


@pytest.mark.slow
def test_cli_report(store_dir: Path, tmp_path: Path) -> None:
    runner = CliRunner()
    r = runner.invoke(
        app, ["report", str(store_dir), "--out", str(tmp_path / "r"), "--by", "lb.scheme,transport.recovery"]
    )
    assert r.exit_code == 0, r.output
    assert "6 plots and" in r.output  # one group: columns are scheme/recovery
    assert (tmp_path / "r" / "report.html").is_file() and (tmp_path / "r" / "slowdown_cdf.png").is_file()
    r = runner.invoke(app, ["report", str(tmp_path / "nowhere")])
    assert isinstance(r.exception, UsageError)


@pytest.mark.slow
def test_report_of_a_comparison_with_its_card_in_headless_chromium(tmp_path: Path) -> None:
    """``spraylab report`` on a comparison's own output (what ``spraylab demo`` writes): the
    page has the scenario card (the shared lines once, one lb line per column, read back from
    each run's stored card), its tables and plots load in a real browser, offline, with no
    console message beyond info."""
    from cliutil import invoke
    from playwright.sync_api import sync_playwright
    from test_viewer import chromium

    (tmp_path / "small.toml").write_text(
        '[output]\nname = "small"\n[topology]\nleaves = 2\nspines = 2\nhosts_per_leaf = 2\n'
        'host_rate = "100Gbps"\n[workload]\nkind = "permutation"\nsize = "100KB"\n'
    )
    made = invoke("compare", "small.toml", "--lb", "ecmp,rps/sr", "--out", "cmp", cwd=tmp_path)
    assert made.returncode == 0, made.stderr
    reported = invoke("report", "cmp", cwd=tmp_path)
    assert reported.returncode == 0, reported.stderr
    page_path = tmp_path / "cmp" / "report" / "report.html"
    cards = {
        label: json.loads((tmp_path / "cmp" / d / "summary.json").read_text())["card"]["text"].splitlines()
        for label, d in (("ecmp", "ecmp"), ("rps/sr", "rps-sr"))
    }
    messages: list[str] = []
    requests: list[str] = []
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=chromium(), args=["--no-sandbox", "--disable-gpu"])
        try:
            page = browser.new_page()
            page.on("console", lambda m: messages.append(f"{m.type}: {m.text}") if m.type != "info" else None)
            page.on("pageerror", lambda exc: messages.append(str(exc)))
            page.on("request", lambda r: requests.append(r.url))
            page.goto(page_path.as_uri())
            page.wait_for_load_state("load")
            card = page.inner_text("#card pre.card")
            heading = page.inner_text("#card h2")
            images = page.evaluate("[...document.images].map(i => [i.getAttribute('src'), i.naturalWidth])")
            headers = page.evaluate("[...document.querySelectorAll('th')].map(t => t.innerText)")
        finally:
            browser.close()
    assert messages == []
    assert all(url.startswith("file:") for url in requests)
    assert heading == "Scenario card"
    lines = card.splitlines()
    shared = [x for x in cards["ecmp"] if not x.startswith("lb: ")]
    assert all(x in lines for x in shared)  # fabric, switches, workload, seed and version
    for label, stored in cards.items():
        (lb,) = [x for x in stored if x.startswith("lb: ")]
        assert f"lb {label}: {lb.removeprefix('lb: ')}" in lines
    assert "rps over selective repeat (sr), cc dcqcn" in card and lines[-1] == "varies across the runs: lb"
    assert images and all(width > 0 for _, width in images)  # every plot file is there and decodes
    assert any(h.startswith("ecmp (baseline)") for h in headers) and any(
        h.startswith("rps/sr") for h in headers
    )


@pytest.mark.slow
def test_sweep_report_has_the_card(store_dir: Path, tmp_path: Path) -> None:
    report = build_report(store_dir, tmp_path / "r", views=False)
    text = report.html.read_text()
    first = json.loads(next((store_dir / "runs").glob("*/summary.json")).read_text())
    fabric = first["card"]["text"].splitlines()[0]
    assert 'id="card"' in text and fabric in text and "delay 1µs" in fabric  # a label: µs
    assert "varies across the runs: lb.scheme, transport.recovery, run.seed" in text
