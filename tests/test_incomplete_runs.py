"""An unfinished run is never a result (issue 12, item 2).

Theory: a run stopped at a time limit T is a prefix of the same scenario run to completion (same
seed, same event order up to T). So a flow that finished before T has exactly its full-run FCT,
and a flow still running at T is *right-censored*: its FCT is at least T - start, which is what
the flows table records for it; the summary's statistics include those lower bounds and never
drop the unfinished flows. Such a run is marked ``completed = false`` with its stop reason, exits
3 from ``run``/``compare``/``sweep``, is stored as incomplete (kept, not rerun, until its budget
changes or ``--force``) and is shown apart from the complete runs in ``compare`` and ``report``.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path

import numpy as np
import pytest
from cliutil import InlineExecutor, inline_sweeps, invoke  # noqa: F401 (inline_sweeps: an autouse fixture)

import spraylab
from spraylab.metrics.result import Result
from spraylab.report import compare_tables, sweep_data
from spraylab.results.store import Store
from spraylab.sweeps.sweep import Sweep, run_sweep

BASE = {
    "topology": {"kind": "leaf_spine", "leaves": 2, "spines": 2, "hosts_per_leaf": 4},
    "workload": {"kind": "random_pairs", "flows": 16, "size": "64KB"},
    "run": {"seed": 1, "progress": False},
}
BASE_TOML = """\
[topology]
kind = "leaf_spine"
leaves = 2
spines = 2
hosts_per_leaf = 4

[workload]
kind = "random_pairs"
flows = 16
size = "64KB"

[run]
seed = 1
progress = false
"""
T_PS = 8_000_000  # 8 us: about half of the 16 flows have finished (the full run takes ~15 us)


def with_time_limit(time_limit: str | int) -> dict:
    data = copy.deepcopy(BASE)
    data["run"]["time_limit"] = time_limit
    return data


@pytest.fixture(scope="module")
def runs() -> tuple[Result, Result]:
    """(stopped at T, run to completion) of the same scenario."""
    return spraylab.run(with_time_limit(T_PS)), spraylab.run(BASE)


def test_a_stopped_run_is_marked_incomplete_with_its_stop_reason(runs: tuple[Result, Result]) -> None:
    short, full = runs
    s = short.summary
    assert (s["completed"], s["stop_reason"], s["sim_time_ps"]) == (False, "time_limit", T_PS)
    assert 0 < s["flows_completed"] < s["flows"] == 16
    assert s["flows_censored"] == s["flows"] - s["flows_completed"] == int(short.flows["censored"].sum())
    assert full.summary["completed"] and full.summary["flows_censored"] == 0


def test_unfinished_flows_are_censored_at_the_runs_end_never_dropped(runs: tuple[Result, Result]) -> None:
    short, full = runs
    a = short.flows.set_index("flow_id")
    b = full.flows.set_index("flow_id").loc[a.index]
    finished = a["completed"].to_numpy()
    # Finished before T: the prefix of the full run, so exactly the full run's FCT.
    assert (a["fct_ps"][finished] == b["fct_ps"][finished]).all()
    # Censored: FCT recorded as T - start, a lower bound of (here strictly below) the true FCT.
    assert (a["fct_ps"][~finished] == T_PS - a["start_ps"][~finished]).all()
    assert (a["fct_ps"][~finished] < b["fct_ps"][~finished]).all()
    assert (a["finish_ps"][~finished] == -1).all()
    # Statistics over all 16 flows (lower bounds included), not over the finished ones only.
    s = short.summary
    fct = a["fct_ps"].to_numpy(dtype=float)
    assert s["fct_mean_ps"] == pytest.approx(fct.mean())
    assert s["fct_p99_ps"] == pytest.approx(np.percentile(fct, 99))
    assert s["fct_mean_ps"] > a["fct_ps"][finished].mean()  # what dropping them would have reported
    assert s["fct_mean_ps"] <= full.summary["fct_mean_ps"]  # a lower bound of the true mean
    assert s["completion_ps"] == T_PS - int(a["start_ps"].min())
    assert s["completion_ps"] <= full.summary["completion_ps"]
    # The workload's group is censored the same way: CCT at least T minus its first start.
    group = short.groups.iloc[0]
    assert (bool(group["completed"]), bool(group["censored"])) == (False, True)
    assert group["cct_ps"] == T_PS - int(a["start_ps"].min()) <= full.groups.iloc[0]["cct_ps"]
    bound = a["fct_bound_ps"].to_numpy(dtype=float)
    assert s["slowdown_mean"] == pytest.approx((fct / bound).mean())


def test_cli_run_of_an_unfinished_workload_exits_3_and_saves_it_marked(tmp_path: Path) -> None:
    (tmp_path / "s.toml").write_text(BASE_TOML)
    proc = invoke("run", "s.toml", "--set", 'run.time_limit="8us"', "--out", "r", cwd=tmp_path)
    assert "Traceback" not in proc.stderr
    assert proc.returncode == 3, (proc.returncode, proc.stderr)
    # messages (the saved-result note, then the incomplete line) on stderr, the table on stdout
    message = " ".join(proc.stderr.split())
    assert message.startswith("result saved in r/ incomplete:") and "stopped by time_limit" in message
    assert "flows censored" in proc.stdout and "incomplete:" not in proc.stdout
    saved = json.loads((tmp_path / "r" / "summary.json").read_text())
    assert saved["completed"] is False and saved["stop_reason"] == "time_limit"
    assert saved["flows_censored"] == 16 - saved["flows_completed"] > 0


def test_cli_compare_with_an_unfinished_scheme_exits_3(tmp_path: Path) -> None:
    (tmp_path / "s.toml").write_text(BASE_TOML)
    proc = invoke(
        "compare", "s.toml", "--lb", "ecmp,rps", "--set", 'run.time_limit="8us"', "--out", "c", cwd=tmp_path
    )
    assert proc.returncode == 3, (proc.returncode, proc.stderr)
    assert [
        line.split(":")[1].strip() for line in proc.stderr.splitlines() if line.startswith("incomplete:")
    ] == [
        "ecmp",
        "rps",
    ]
    assert json.loads((tmp_path / "c" / "rps" / "summary.json").read_text())["completed"] is False


SWEEP = """\
name = "budget"
base = "base.toml"
[axes]
"lb.scheme" = ["ecmp", "rps"]
"run.time_limit" = ["8us", "100ms"]
"""


def test_sweep_stores_incomplete_runs_apart_and_exits_3(tmp_path: Path) -> None:
    (tmp_path / "base.toml").write_text(BASE_TOML)
    (tmp_path / "budget.toml").write_text(SWEEP)
    sweep = Sweep.load(tmp_path / "budget.toml")
    short = {p.key for p in sweep.points if p.values["run.time_limit"] == "8us"}

    proc = invoke("sweep", "budget.toml", "--out", "store", "--jobs", "2", "--no-progress", cwd=tmp_path)
    assert proc.returncode == 3, (proc.returncode, proc.stderr)
    assert "4 runs: 2 done, 2 incomplete, 0 failed, 0 skipped" in proc.stdout
    store = Store(tmp_path / "store")
    assert {p.key: store.status(p.key) for p in sweep.points} == {
        p.key: "incomplete" if p.key in short else "done" for p in sweep.points
    }
    assert all(store.load(k).summary["stop_reason"] == "time_limit" for k in short)

    # Kept, not rerun, while its budget is unchanged; still an incomplete sweep (exit 3).
    again = run_sweep(sweep, store.root, executor=InlineExecutor())
    assert (again.done, again.incomplete, again.skipped, again.incomplete_kept) == (0, 0, 4, 2)
    assert again.any_incomplete
    # --force reruns it ...
    forced = run_sweep(sweep, store.root, executor=InlineExecutor(), force=True)
    assert (forced.done, forced.incomplete, forced.skipped) == (2, 2, 0)
    # ... and so does a changed budget (a new scenario, so a new key), which here completes it.
    (tmp_path / "budget.toml").write_text(SWEEP.replace('"8us"', '"50us"'))
    longer = run_sweep(Sweep.load(tmp_path / "budget.toml"), store.root, executor=InlineExecutor())
    assert (longer.done, longer.incomplete, longer.skipped, longer.incomplete_kept) == (2, 0, 2, 0)
    assert not longer.any_incomplete


@pytest.mark.slow
def test_compare_and_report_show_incomplete_runs_apart(tmp_path: Path) -> None:
    (tmp_path / "base.toml").write_text(BASE_TOML)
    (tmp_path / "budget.toml").write_text(SWEEP)
    root = tmp_path / "store"
    run_sweep(Sweep.load(tmp_path / "budget.toml"), root, executor=InlineExecutor())
    data = sweep_data(root)
    assert data.counts()["incomplete"] == 2 and data.counts()["done"] == 2
    tables = {t.group.values["run.time_limit"]: t for t in compare_tables(data)}
    short, long = tables["8us"], tables["100ms"]
    # Never pooled with complete runs: n counts only complete ones, the incomplete are noted apart.
    assert short.n == {"ecmp": 0, "rps": 0} and short.incomplete == {"ecmp": 1, "rps": 1}
    assert short.note("rps") == "+1 incomplete"
    assert all(cell.estimate.mean is None for _, _, cells in short.rows for cell in cells)
    assert long.n == {"ecmp": 1, "rps": 1} and long.note("ecmp") == ""

    proc = invoke("compare", str(root), cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "4 runs: 2 done, 2 incomplete, 0 failed, 0 missing" in " ".join(proc.stdout.split())
    assert (
        sum(line.startswith("incomplete (left out of the table):") for line in proc.stderr.splitlines()) == 2
    )
    page = invoke("report", str(root), cwd=tmp_path)
    assert page.returncode == 0, page.stderr
    html = (root / "report" / "report.html").read_text()
    assert "<h2>Incomplete runs</h2>" in html and html.count("stopped by time_limit") == 2
