"""Sweeps: validation, the results store (keys, atomicity, corruption), a sweep killed with
SIGKILL and resumed, local vs Ray executors, and failed runs."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from spraylab.model.scenario import ScenarioError
from spraylab.results.stats import mean_ci, t95
from spraylab.results.store import Store, StoreError, StoreLocked, scenario_key
from spraylab.sweeps.executors import ExecutorError, make_executor
from spraylab.sweeps.sweep import Sweep, run_sweep

# A base scenario file, referenced from the sweep file by a relative path.
BASE = """
[topology]
kind = "leaf_spine"
leaves = 2
spines = 2
hosts_per_leaf = 4
host_rate = "100Gbps"

[workload]
kind = "random_pairs"
flows = 24
size = "400KB"
"""

SWEEP = """
name = "tiny"
base = "base.toml"
[axes]
"lb.scheme" = ["ecmp", "rps"]
"workload.size" = ["200KB", "400KB"]
"run.seed" = [1, 2, 3]
"""

# Result files that must be identical whatever ran them (manifest.json and timing.json hold times).
DETERMINISTIC = ("summary.json", "scenario.json", "flows.parquet", "links.parquet", "groups.parquet")


def cli(*args: str, timeout: float = 180) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "spraylab.cli", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        env=_env(),
    )


def _env() -> dict[str, str]:
    return {**os.environ, "COLUMNS": "200"}


@pytest.fixture(scope="module")
def sweep_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    d = tmp_path_factory.mktemp("sweepdef")
    (d / "base.toml").write_text(BASE)
    (d / "tiny.toml").write_text(SWEEP)
    return d / "tiny.toml"


@pytest.fixture(scope="module")
def reference(sweep_file: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The same sweep, uninterrupted, through the Python API."""
    out = tmp_path_factory.mktemp("reference")
    outcome = run_sweep(Sweep.load(sweep_file), out, jobs=2)
    assert outcome.line() == "12 runs: 12 done, 0 failed, 0 skipped"
    return out


def assert_same_results(a: Path, b: Path, keys: list[str]) -> None:
    for key in keys:
        for name in DETERMINISTIC:
            fa, fb = a / "runs" / key / name, b / "runs" / key / name
            assert fa.read_bytes() == fb.read_bytes(), f"{key}/{name} differs"


# --- sweep files ----------------------------------------------------------------------------


def test_sweep_file_points_and_keys(sweep_file: Path) -> None:
    sweep = Sweep.load(sweep_file)
    assert len(sweep.points) == 12
    assert sweep.points[0].values == {"lb.scheme": "ecmp", "workload.size": "200KB", "run.seed": 1}
    assert sweep.points[-1].label == "lb.scheme=rps workload.size=400KB run.seed=3"
    assert len({p.key for p in sweep.points}) == 12
    p = sweep.points[0]
    assert p.scenario.workload[0].size == 200_000 and p.scenario.workload[0].flows == 24  # base file + axis
    # The key is the hash of the full scenario: equal scenarios written differently share it,
    # and settings that cannot change a result (progress display, output dir) do not enter it.
    again = Sweep.from_dict(
        {
            "topology": {"leaves": 2, "spines": 2, "hosts_per_leaf": 4, "host_rate": 100_000_000_000},
            "workload": {"kind": "random_pairs", "flows": 24},
            "run": {"progress": True},
            "output": {"dir": "elsewhere"},
            "axes": {"lb": {"scheme": ["ecmp"]}, "workload.size": ["0.2MB"], "run.seed": [1]},
        }
    )
    assert again.points[0].key == p.key
    assert scenario_key(p.scenario.to_dict()) == p.key


def test_lb_scheme_axis_keeps_only_parameters_the_scheme_accepts() -> None:
    sweep = Sweep.from_dict(
        {
            "topology": {"leaves": 2, "spines": 2, "hosts_per_leaf": 2},
            "workload": {"kind": "permutation"},
            "lb": {"scheme": "dfs", "max_paths": 4},
            "axes": {"lb.scheme": ["ecmp", "dfs"]},
        }
    )
    ecmp, dfs = (p.scenario.lb for p in sweep.points)
    assert ecmp.scheme == "ecmp" and ecmp.params == {}
    assert dfs.scheme == "dfs" and dfs.params == {"max_paths": 4}


def test_table_valued_axis_and_preset_base() -> None:
    sweep = Sweep.from_dict(
        {
            "base": "demo",
            "topology": {"leaves": 2, "spines": 2, "hosts_per_leaf": 2},
            "axes": {"lb": [{"scheme": "ecmp"}, {"scheme": "dfs", "max_paths": 2}]},
        }
    )
    assert [p.label for p in sweep.points] == ["lb=ecmp", "lb=dfs(max_paths=2)"]
    assert sweep.points[1].scenario.workload[0].size == 4_000_000  # from the preset
    assert sweep.points[1].scenario.topology.leaves == 2  # inline section merged over it


@pytest.mark.parametrize(
    ("axes", "expected"),
    [
        ({"lb.scheme": ["ecmp", "nope"]}, "axes: lb.scheme = 'nope': unknown scheme; allowed: "),
        (
            {"workload.size": ["1MB", "3Gbps"]},
            "axes: workload.size = '3Gbps': '3Gbps' is not a size in bytes",
        ),
        ({"workload.flows": [3]}, "axes: workload.flows = 3: unknown key; allowed keys: kind, size"),
        ({"run.seed": [1, 1]}, "axes.run.seed = [1, 1]: repeated value"),
        ({"run.seed": 3}, "axes.run.seed = 3: must be a non-empty list of values"),
        ({"nope.x": [1]}, "axes.nope.x: unknown section 'nope'"),
        ({}, "[axes]: missing or empty"),
        ({"workload.senders": [4, 9]}, "axes: workload.senders = 9: at most 7 on a 8-host fabric"),
    ],
)
def test_sweep_validation_errors_are_one_line_naming_key_and_value(axes: dict, expected: str) -> None:
    data = {
        "topology": {"leaves": 2, "spines": 2, "hosts_per_leaf": 4},
        "workload": {"kind": "incast" if "workload.senders" in axes else "permutation"},
        "axes": axes,
    }
    with pytest.raises(ScenarioError) as err:
        Sweep.from_dict(data, source="s.toml")
    assert len(err.value.lines) == 1, err.value.lines
    assert err.value.lines[0].startswith("s.toml: ")
    assert expected in err.value.lines[0]


def test_point_level_error_and_unknown_top_level_key() -> None:
    base = {"topology": {"leaves": 2, "spines": 2, "hosts_per_leaf": 2}, "workload": {"kind": "permutation"}}
    with pytest.raises(ScenarioError) as err:
        Sweep.from_dict({**base, "bogus": 1, "axes": {"run.seed": [1]}}, source="s.toml")
    assert err.value.lines == [
        "s.toml: bogus = 1: unknown key; allowed keys: name, base, baseline, axes, topology, switch, transport, "
        "lb, workload, run, output, monitor"
    ]
    with pytest.raises(ScenarioError) as err:
        Sweep.from_dict({**base, "base": "nowhere.toml", "axes": {"run.seed": [1]}}, source="s.toml")
    assert "base = 'nowhere.toml': no such scenario file" in err.value.lines[0]


def test_cli_sweep_rejects_a_bad_sweep_with_exit_2(tmp_path: Path) -> None:
    f = tmp_path / "bad.toml"
    f.write_text('[workload]\nkind = "permutation"\n[axes]\n"lb.scheme" = ["ecmp", "nope"]\n')
    r = cli("sweep", str(f), "--out", str(tmp_path / "out"))
    assert r.returncode == 2
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"error: {f}: axes: lb.scheme = 'nope': unknown scheme")
    assert not (tmp_path / "out").exists()


def test_t_table_and_confidence_interval() -> None:
    assert t95(1) == 12.706 and t95(30) == 2.042 and t95(10**6) == 1.96
    assert t95(35) == pytest.approx(2.0301, abs=0.001) and t95(45) == pytest.approx(2.0141, abs=0.001)
    assert t95(200) == pytest.approx(1.9719, abs=0.001)
    est = mean_ci([1.0, 2.0, 3.0, None, float("nan")])
    assert est.n == 3 and est.mean == 2.0
    assert est.half_width == pytest.approx(4.303 * 1.0 / 3**0.5)
    assert mean_ci([5.0]).half_width is None and mean_ci([]).mean is None


# --- the store ------------------------------------------------------------------------------


def test_store_detects_corrupt_and_half_written_runs_and_reruns_them(
    sweep_file: Path, reference: Path, tmp_path: Path
) -> None:
    out = tmp_path / "store"
    shutil.copytree(reference, out)
    store = Store(out)
    keys = [p.key for p in Sweep.load(sweep_file).points]
    assert all(store.status(k) == "done" for k in keys)
    truncated, edited, unmanifested = keys[1], keys[5], keys[8]
    flows = store.run_dir(truncated) / "flows.parquet"
    flows.write_bytes(flows.read_bytes()[:-100])
    summary = store.run_dir(edited) / "summary.json"
    summary.write_text(summary.read_text().replace('"seed": ', '"seed":  '))  # same size + 1, same data
    (store.run_dir(unmanifested) / "manifest.json").unlink()
    (store.runs / f".staging-{keys[0]}-abc").mkdir()  # a writer killed mid-write
    (store.runs / f".staging-{keys[0]}-abc" / "summary.json").write_text("{")
    for key in (truncated, edited, unmanifested):
        assert store.status(key) == "corrupt"
        with pytest.raises(StoreError):
            store.load(key)
    outcome = run_sweep(Sweep.load(sweep_file), out, jobs=2)
    assert outcome.line() == "12 runs: 3 done, 0 failed, 9 skipped"
    assert sorted(outcome.executed) == sorted([truncated, edited, unmanifested])
    assert not [p for p in store.runs.iterdir() if p.name.startswith(".")]
    assert_same_results(out, reference, keys)
    result = store.load(keys[0])
    assert "wall_s" not in result.summary and "wall_s" in store.timing(keys[0])


def test_store_lock_excludes_a_second_writer(tmp_path: Path) -> None:
    store = Store(tmp_path)
    second = Store(tmp_path)
    with (
        store.lock(),
        pytest.raises(StoreLocked, match=f"another sweep \\(pid {os.getpid()}\\)"),
        second.lock(),
    ):
        pass
    with store.lock():
        pass


# --- interrupted sweeps -----------------------------------------------------------------------


@pytest.mark.slow
def test_sweep_killed_with_sigkill_resumes_with_only_the_missing_runs(
    sweep_file: Path, reference: Path, tmp_path: Path
) -> None:
    out = tmp_path / "store"
    keys = [p.key for p in Sweep.load(sweep_file).points]
    store = Store(out)
    args = ["sweep", str(sweep_file), "--out", str(out), "--jobs", "1", "--no-progress"]
    proc = subprocess.Popen(
        [sys.executable, "-m", "spraylab.cli", *args],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        env=_env(),
    )
    try:
        deadline = time.monotonic() + 120
        while sum((store.run_dir(k) / "manifest.json").exists() for k in keys) < 3:
            assert proc.poll() is None, (
                f"sweep ended before it could be killed: {proc.stderr.read() if proc.stderr else ''}"
            )
            assert time.monotonic() < deadline, "no run completed in time"
            time.sleep(0.005)
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == -signal.SIGKILL
    complete = {k for k in keys if store.status(k) == "done"}
    assert 3 <= len(complete) < len(keys), "the kill must land half-way"
    mtimes = {k: (store.run_dir(k) / "manifest.json").stat().st_mtime_ns for k in complete}

    r = cli(*args)
    assert r.returncode == 0, r.stderr
    missing = len(keys) - len(complete)
    assert f"12 runs: {missing} done, 0 failed, {len(complete)} skipped" in r.stdout
    log = store.read_log()
    last = [e for e in log if e["event"] == "sweep-start"][-1]["session"]
    executed = [e["key"] for e in log if e.get("session") == last and e["event"] == "run-done"]
    assert sorted(executed) == sorted(set(keys) - complete)  # each missing run once, nothing else
    assert {k: (store.run_dir(k) / "manifest.json").stat().st_mtime_ns for k in complete} == mtimes
    assert_same_results(out, reference, keys)
    assert not [p for p in store.runs.iterdir() if p.name.startswith(".")]
    index = json.loads((out / "sweep.json").read_text())
    assert [p["key"] for p in index["points"]] == keys
    assert [a["key"] for a in index["axes"]] == ["lb.scheme", "workload.size", "run.seed"]


# --- executors --------------------------------------------------------------------------------


@pytest.mark.slow
def test_ray_executor_gives_the_same_results_as_local(
    sweep_file: Path, reference: Path, tmp_path: Path
) -> None:
    try:
        import ray  # noqa: F401
    except ImportError:
        if os.environ.get("CI"):
            pytest.fail("Ray is not installed, but CI must run this test: pip install -e '.[test]'")
        pytest.skip("Ray is not installed (pip install 'spraylab[ray]')")
    out = tmp_path / "ray"
    r = cli(
        "sweep",
        str(sweep_file),
        "--out",
        str(out),
        "--executor",
        "ray",
        "--jobs",
        "2",
        "--no-progress",
        timeout=300,
    )
    assert r.returncode == 0, r.stderr
    assert "12 runs: 12 done, 0 failed, 0 skipped" in r.stdout
    keys = [p.key for p in Sweep.load(sweep_file).points]
    assert_same_results(out, reference, keys)
    store = Store(out)
    assert {store.timing(k)["executor"] for k in keys} == {"ray"}
    assert {Store(reference).timing(k)["executor"] for k in keys} == {"local"}


def test_ray_requested_but_not_installed_is_a_clear_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "ray", None)  # import ray → ImportError
    with pytest.raises(
        ExecutorError, match=r"Ray is not installed; install it with: pip install 'spraylab\[ray\]'"
    ):
        make_executor("ray", 2)
    with pytest.raises(ExecutorError, match="unknown executor; allowed: local, ray"):
        make_executor("dask", 2)


# --- failures ---------------------------------------------------------------------------------

FAILING = """
name = "failing"
[topology]
leaves = 2
spines = 2
hosts_per_leaf = 2
host_rate = "100Gbps"
[workload]
kind = "permutation"
size = "100KB"
[axes]
"lb.scheme" = ["ecmp", "rps"]
# the second value names a link that does not exist: the run raises when it is built
"topology.events" = [[], [{at = "5us", link = ["leaf0", "spine7"], action = "down"}]]
"""


@pytest.mark.slow
def test_a_run_that_raises_is_recorded_and_the_sweep_goes_on(tmp_path: Path) -> None:
    f = tmp_path / "failing.toml"
    f.write_text(FAILING)
    out = tmp_path / "store"
    r = cli("sweep", str(f), "--out", str(out), "--jobs", "2", "--no-progress")
    assert r.returncode == 1, r.stderr
    assert "4 runs: 2 done, 2 failed, 0 skipped" in r.stdout
    assert r.stderr.count("failed: lb.scheme=") == 2 and "no such link" in r.stderr
    store = Store(out)
    points = Sweep.load(f).points
    status = {p.label: store.status(p.key) for p in points}
    assert sorted(status.values()) == ["done", "done", "failed", "failed"]
    for p in points:
        if p.values["topology.events"]:
            error = store.error(p.key)
            assert error["type"] == "ScenarioError"
            assert error["message"].startswith("topology.events.link = ['leaf0', 'spine7']: no such link")
            assert error["traceback"].startswith("Traceback (most recent call last)")
            assert "experiment.py" in error["traceback"]
            with pytest.raises(StoreError):
                store.load(p.key)
        else:
            assert store.load(p.key).summary["flows_completed"] == 4
    # failed runs are retried by the next invocation; completed ones are not
    outcome = run_sweep(Sweep.load(f), out, jobs=1)
    assert outcome.line() == "4 runs: 0 done, 2 failed, 2 skipped"
    # compare and report show what completed and list the failures
    from spraylab.report import build_report

    report = build_report(out)
    page = report.html.read_text()
    assert "<h2>Failed runs</h2>" in page and page.count("no such link") == 2
    assert report.tables[1].n == {"ecmp": 0, "rps": 0} and report.tables[1].failed == {"ecmp": 1, "rps": 1}


@pytest.mark.parametrize(
    "path", sorted((Path(__file__).parents[1] / "scenarios" / "sweeps").glob("*.toml")), ids=lambda p: p.stem
)
def test_shipped_sweep_files_validate(path: Path) -> None:
    """Every sweep file in scenarios/sweeps/ loads and every point is a valid scenario (build_points
    validates each one), so the commands in their headers run."""
    sweep = Sweep.load(path)
    n = 1
    for values in sweep.axes.values():
        n *= len(values)
    assert len(sweep.points) == n > 1
