"""The fluid engine through the command line and sweeps: ``--engine`` on run, compare and sweep,
a sweep that mixes engines, and compare lining them up."""

from __future__ import annotations

from pathlib import Path

from cliutil import inline_sweeps, invoke  # noqa: F401 (inline_sweeps: an autouse fixture)

from spraylab.metrics.result import Result
from spraylab.results.store import Store
from spraylab.sweeps.sweep import Sweep

SCENARIO = """
[topology]
kind = "leaf_spine"
leaves = 2
spines = 2
hosts_per_leaf = 2
host_rate = "100Gbps"
[transport]
recovery = "ideal"
cc = "none"
[workload]
kind = "permutation"
size = "200KB"
[run]
progress = false
"""

SWEEP = """
name = "engines"
base = "base.toml"
[axes]
"lb.scheme" = ["ecmp", "rps"]
"run.engine" = ["packet", "fluid"]
"""


def test_run_with_engine_option_says_which_engine(tmp_path: Path) -> None:
    (tmp_path / "base.toml").write_text(SCENARIO)
    proc = invoke("run", "base.toml", "--engine", "fluid", "--out", "res", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "engine" in proc.stdout and "fluid" in proc.stdout
    assert Result.load(tmp_path / "res").summary["engine"] == "fluid"
    bad = invoke("run", "base.toml", "--engine", "steam", cwd=tmp_path)
    assert bad.returncode == 2 and bad.stderr.count("\n") == 1 and "run.engine" in bad.stderr


def test_sweep_mixes_engines_and_compare_lines_them_up(tmp_path: Path) -> None:
    (tmp_path / "base.toml").write_text(SCENARIO)
    (tmp_path / "engines.toml").write_text(SWEEP)
    proc = invoke("sweep", "engines.toml", "--out", "store", "--no-progress", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    store = Store(tmp_path / "store")
    points = Sweep.load(tmp_path / "engines.toml").points
    engines = {p.values["run.engine"]: store.summary(p.key)["engine"] for p in points}
    assert engines == {"packet": "packet", "fluid": "fluid"}
    proc = invoke("compare", "store", "--by", "run.engine", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "packet" in proc.stdout and "fluid" in proc.stdout


def test_sweep_engine_option_sets_every_point(tmp_path: Path) -> None:
    (tmp_path / "base.toml").write_text(SCENARIO)
    (tmp_path / "schemes.toml").write_text(
        'name = "s"\nbase = "base.toml"\n[axes]\n"lb.scheme" = ["ecmp", "rps"]\n'
    )
    proc = invoke(
        "sweep", "schemes.toml", "--out", "store", "--engine", "fluid", "--no-progress", cwd=tmp_path
    )
    assert proc.returncode == 0, proc.stderr
    store = Store(tmp_path / "store")
    for point in Sweep.load(tmp_path / "schemes.toml", engine="fluid").points:
        assert store.summary(point.key)["engine"] == "fluid"
