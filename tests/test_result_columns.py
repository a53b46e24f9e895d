"""A result saved from its collected columns (pyarrow, no pandas) reads back exactly as the
DataFrames a caller gets, dtypes included, for every engine and table; and saving a run never
imports pandas. The reference is pandas' own ``DataFrame.to_parquet`` of the table a caller
reads: what spraylab wrote before tables were saved from columns."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from test_startup import modules_after

from spraylab.metrics.columns import ColumnTable
from spraylab.metrics.result import TABLES, Result
from spraylab.runs.experiment import run

SMALL = {"kind": "leaf_spine", "leaves": 2, "spines": 2, "hosts_per_leaf": 4}
RAIL = {"kind": "rail", "servers": 3, "gpus_per_server": 4, "spines": 2}
MOE = {"kind": "moe", "model": "mixtral-8x7b", "strategy": "rail_local", "tokens_per_gpu": 32}

CASES: dict[str, dict[str, Any]] = {
    "packet, collective groups": {
        "topology": SMALL,
        "workload": {"kind": "collective", "collective": "allreduce", "size": "64KB", "hosts": 8},
    },
    "packet, link down, censored flows": {
        "topology": {**SMALL, "events": [{"at": "2us", "link": ["leaf0", "spine0"], "action": "down"}]},
        "workload": {"kind": "permutation", "size": "2MB"},
        "run": {"time_limit": "20us"},
    },
    "fluid": {
        "topology": SMALL,
        "workload": {"kind": "permutation", "size": "1MB"},
        "run": {"engine": "fluid"},
    },
    "l0_rail": {"topology": RAIL, "workload": MOE, "run": {"engine": "l0_rail"}},
}


def _scenario(case: dict[str, Any]) -> dict[str, Any]:
    return {**case, "run": {"progress": False, **case.get("run", {})}}


@pytest.mark.parametrize("case", CASES.values(), ids=CASES.keys())
def test_saved_columns_read_back_as_the_dataframes(case: dict[str, Any], tmp_path: Path) -> None:
    result = run(_scenario(case))
    result.save(tmp_path / "from_columns")
    for name in TABLES:
        frame = getattr(result, name)
        frame.to_parquet(tmp_path / f"{name}.parquet", index=False)
        saved = pd.read_parquet(tmp_path / "from_columns" / f"{name}.parquet")
        pd.testing.assert_frame_equal(saved, pd.read_parquet(tmp_path / f"{name}.parquet"), check_exact=True)
        # the values too (pandas reads strings back as its string dtype, whoever wrote them)
        pd.testing.assert_frame_equal(saved, frame, check_exact=True, check_dtype=False)


def test_a_result_without_tables_saves_empty_ones(tmp_path: Path) -> None:
    Result(scenario={}, summary={}).save(tmp_path / "r")
    for name in TABLES:
        pd.DataFrame().to_parquet(tmp_path / f"{name}.parquet", index=False)
        saved = pd.read_parquet(tmp_path / "r" / f"{name}.parquet")
        pd.testing.assert_frame_equal(saved, pd.read_parquet(tmp_path / f"{name}.parquet"))


def test_a_compact_table_is_the_same_table(tmp_path: Path) -> None:
    """``ColumnTable.compact`` (a finished run's tables, held as arrays so the rows' objects do
    not outlive the network) changes neither the DataFrame nor the Parquet file: a column becomes
    the array the writer makes of it anyway, and one that does not convert stays a list."""
    table = ColumnTable(
        {
            "n": [1, 2, 3],
            "x": [0.5, float("nan"), 2],
            "ok": [True, False, True],
            "name": ["a", "bb", "ccc"],
            "mixed": [1, None, "c"],
            "big": [2**70, 1, 2],
        },
        {"n": "int64", "ok": "bool"},
    )
    compact = table.compact()
    assert [type(compact.columns[c]).__name__ for c in table.columns] == ["ndarray"] * 4 + ["list"] * 2
    pd.testing.assert_frame_equal(compact.frame(), table.frame(), check_exact=True)
    table = ColumnTable({c: v for c, v in table.columns.items() if c not in ("mixed", "big")}, table.dtypes)
    table.write_parquet(tmp_path / "lists.parquet")
    table.compact().write_parquet(tmp_path / "arrays.parquet")
    assert (tmp_path / "lists.parquet").read_bytes() == (tmp_path / "arrays.parquet").read_bytes()


SAVE_A_RUN = """\
from spraylab.runs.experiment import run

result = run({
    "topology": {"kind": "leaf_spine", "leaves": 2, "spines": 2, "hosts_per_leaf": 2},
    "workload": {"kind": "permutation", "size": "20KB"},
    "run": {"progress": False},
})
result.save(OUT)
"""


def test_saving_a_run_loads_no_pandas(tmp_path: Path) -> None:
    """``spraylab run --out`` and sweep points save results: pandas' import would be about a
    third of a small run's CPU (docs/performance.md)."""
    loaded = modules_after(f"OUT = {str(tmp_path / 'r')!r}\n{SAVE_A_RUN}")
    assert "pandas" not in {m.split(".")[0] for m in loaded}
    assert (tmp_path / "r" / "flows.parquet").is_file()
