"""Ctrl-C during a run (issue 29, item 3): the event loop stops between two events, the part
simulated is saved as an incomplete result (as an event or wall budget stop is) and the command
says where and exits 130. Run as a real process, interrupted by a real SIGINT."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from spraylab.metrics.result import Result
from spraylab.runs.progress import INTERVAL_ENV

# Far more than a test waits for: 40 x 8 MB flows on 8 hosts take minutes of wall time.
SCENARIO = """\
[output]
name = "long"

[topology]
kind = "leaf_spine"
leaves = 2
spines = 2
hosts_per_leaf = 4
host_rate = "100Gbps"

[workload]
kind = "random_pairs"
flows = 40
size = "8MB"

[run]
seed = 1
time_limit = "1s"
"""


@pytest.mark.parametrize("out", ["result", None])
def test_sigint_saves_the_partial_result_and_exits_130(tmp_path: Path, out: str | None) -> None:
    (tmp_path / "long.toml").write_text(SCENARIO)
    args = [sys.executable, "-m", "spraylab.cli", "run", "long.toml", *(["--out", out] if out else [])]
    proc = subprocess.Popen(
        args,
        cwd=tmp_path,
        env={**os.environ, INTERVAL_ENV: "0.05"},  # piped: progress records show the loop runs
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stderr is not None
        first = proc.stderr.readline()  # blocks until the event loop reports its first checkpoint
        assert first.startswith("progress: long: sim "), first
        proc.send_signal(signal.SIGINT)
        stdout, rest = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
    stderr = first + rest
    assert proc.returncode == 130, stderr
    saved = tmp_path / (out or "out/long-interrupted")
    assert f"saved in {out or 'out/long-interrupted'}/" in stderr and "Traceback" not in stderr
    result = Result.load(saved)
    summary = result.summary
    # marked as budget stops are: not completed, the reason, unfinished flows censored
    assert summary["completed"] is False and summary["stop_reason"] == "interrupted"
    assert 0 < summary["sim_time_ps"] < 1_000_000_000_000 and summary["events"] > 0
    assert summary["flows_completed"] < summary["flows"] == 40
    assert result.flows["censored"].sum() == summary["flows_censored"] > 0
    assert summary["conservation"]  # the end-of-run self-check passed (it raises on a violation)
    assert json.loads((saved / ".spraylab").read_text())["kind"] == "run"
    assert "interrupted" in stdout  # the table's stop row
