"""The benchmark tables in the docs are the benchmarks' own output, never typed: each table of
docs/fluid.md's scale section is what ``benchmarks/fluid_scale.py --markdown`` prints for the
committed result file it names."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.parametrize("results", ["fluid_perm_1024.json", "fluid_perm_1024_rounds.json"])
def test_fluid_scale_tables_in_the_docs_are_the_result_files(results: str) -> None:
    table = subprocess.run(
        [
            sys.executable,
            str(ROOT / "benchmarks" / "fluid_scale.py"),
            "--markdown",
            str(ROOT / "benchmarks" / results),
        ],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert table.count("\n") >= 4, table
    indented = "".join(f"  {line}" for line in table.splitlines(keepends=True))
    assert indented in (ROOT / "docs" / "fluid.md").read_text()
