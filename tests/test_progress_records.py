"""Progress when nobody watches (issue 12, item 8): with stdout not a terminal, a long run prints
one-line progress records to stderr, at most one per ``SPRAYLAB_PROGRESS_INTERVAL_S``; stdout
keeps only the result."""

from __future__ import annotations

import math
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

import spraylab
from spraylab.progress import INTERVAL_ENV, RunProgress

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
size = "2MB"

[run]
seed = 1
"""


def test_piped_run_prints_progress_records_on_stderr(tmp_path: Path) -> None:
    (tmp_path / "long.toml").write_text(SCENARIO)
    env = {**os.environ, INTERVAL_ENV: "0.05"}
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
    assert len(records) <= wall_s / 0.05 + 1
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
