"""Progress when nobody watches (issue 12, item 8): with stdout not a terminal, a long run prints
one-line progress records to stderr, at most one per ``SPRAYLAB_PROGRESS_INTERVAL_S``; stdout
keeps only the result."""

from __future__ import annotations

import math
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

import spraylab
from spraylab.runs.progress import INTERVAL_ENV, RunProgress, _duration

# ~160k events (2.5 x 2^16): the simulator reports progress every 2^16 events, so at least two calls
# and, at a 0.05 s interval, at least one record whatever the event rate.
SCENARIO = """\
[topology]
kind = "leaf_spine"
leaves = 2
spines = 2
hosts_per_leaf = 4
host_rate = "100Gbps"

[workload]
kind = "random_pairs"
flows = 40
size = "8MB"  # long enough for several 65,536-event checkpoints on the compiled core

[run]
seed = 1
"""


def test_piped_run_prints_progress_records_on_stderr(tmp_path: Path) -> None:
    (tmp_path / "long.toml").write_text(SCENARIO)
    env = {**os.environ, INTERVAL_ENV: "0.02"}
    start = time.monotonic()
    proc = subprocess.run(
        [sys.executable, "-m", "spraylab.cli", "run", "long.toml"],
        capture_output=True,  # stdout and stderr are pipes, not a terminal
        text=True,
        cwd=tmp_path,
        env=env,
        timeout=300,
    )
    wall_s = time.monotonic() - start
    assert proc.returncode == 0, proc.stderr
    records = [line for line in proc.stderr.splitlines() if line.startswith("progress: ")]
    assert records, proc.stderr
    assert len(records) == len(proc.stderr.splitlines())  # one physical line each, nothing else
    for line in records:
        assert "leaf_spine-random_pairs-ecmp: sim " in line and " flows " in line and " events " in line
    # Bounded rate: no more than one record per interval of the run's wall time (plus the first).
    assert len(records) <= wall_s / 0.02 + 1
    assert "progress:" not in proc.stdout and "FCT mean" in proc.stdout


def test_records_are_rate_limited(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Called far more often than the interval, the records still come at most once per interval."""
    monkeypatch.setenv(INTERVAL_ENV, "0.02")
    scenario = spraylab.Scenario.from_dict(
        {"topology": {"leaves": 2, "spines": 2, "hosts_per_leaf": 2}, "workload": {"kind": "permutation"}}
    )
    simulation = spraylab.build(scenario)
    progress = RunProgress(scenario, "tight", plain=True)
    progress.bind(simulation.net)
    start = time.monotonic()
    calls = 0
    while time.monotonic() - start < 0.2:
        progress(simulation.sim, time.monotonic() - start)
        calls += 1
    elapsed = time.monotonic() - start
    records = capsys.readouterr().err.splitlines()
    assert calls > 10 * len(records)
    assert 1 <= len(records) <= math.floor(elapsed / 0.02) + 1
    assert all(line.startswith("progress: tight: sim 0ps") for line in records)


def _fraction(record: str) -> tuple[float, str]:
    match = re.search(r"est\. ([\d.]+)% done by (.+?), ETA (\S+) at the pace so far$", record)
    assert match, record
    return float(match.group(1)) / 100, match.group(2)


def test_record_estimates_the_rest_and_says_from_what(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A workload-stopped run measures its progress by the bytes delivered of the workload's
    bytes (recomputed here from the queue pairs); a time-stopped one by simulated time of its
    time limit. The ETA is the elapsed wall time scaled by what is left."""
    monkeypatch.setenv(INTERVAL_ENV, "0.0001")
    base = {
        "topology": {"leaves": 2, "spines": 2, "hosts_per_leaf": 2},
        "workload": {"kind": "permutation", "size": "1MB"},
        "run": {"time_limit": "1ms"},
    }
    for stop, basis in (
        ("workload", "bytes delivered of the workload"),
        ("time", "simulated time of run.time_limit"),
    ):
        scenario = spraylab.Scenario.from_dict({**base, "run": {**base["run"], "stop": stop}})
        simulation = spraylab.build(scenario)
        simulation.run(until_ps=40_000_000)  # 40 us of the 1 ms limit; the 1 MB flows are not done
        progress = RunProgress(scenario, "est", plain=True)
        progress.bind(simulation.net)
        time.sleep(0.001)
        progress(simulation.sim, 10.0)
        (record,) = capsys.readouterr().err.splitlines()
        fraction, said = _fraction(record)
        assert said == basis
        qps = simulation.net.qps
        expected = (
            sum(qp.rx.delivered_bytes for qp in qps) / sum(qp.spec.size_bytes for qp in qps)
            if stop == "workload"
            else 40_000_000 / 1_000_000_000
        )
        assert 0 < expected < 1 and fraction == pytest.approx(expected, abs=0.0005)
        remaining_s = 10.0 * (1 - expected) / expected
        assert record.endswith(f"ETA {_duration(remaining_s)} at the pace so far")
    assert _duration(42) == "42s" and _duration(200) == "3m20s" and _duration(7500) == "2h05m"
