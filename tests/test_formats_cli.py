"""The command line around other simulators' files and result formats: spraylab import, export,
--format on run and compare, the scenario card on every table, and the shipped examples."""

from __future__ import annotations

import csv
import io
import json
import shutil
from pathlib import Path

import pytest
from cliutil import inline_sweeps, invoke  # noqa: F401 (inline_sweeps: an autouse fixture)
from rich.console import Console

from spraylab.metrics.result import Result
from spraylab.model.scenario import Scenario
from spraylab.results import provenance
from spraylab.results.tables import ResultTable, column_chunks, print_table

EXAMPLES = Path(__file__).resolve().parents[1] / "src" / "spraylab" / "scenarios" / "imports"


def _copy(tmp_path: Path, sub: str) -> Path:
    target = tmp_path / sub
    shutil.copytree(EXAMPLES / sub, target)
    return target


def test_import_htsim_writes_a_scenario_that_runs_the_files_as_they_are(tmp_path: Path) -> None:
    files = _copy(tmp_path, "htsim")
    args = ("import", "htsim", "-t", "htsim/leaf_spine_2to1.topo", "-w", "htsim/two_phase.cm")
    refused = invoke(*args, "--out", "s.toml", cwd=tmp_path)
    assert refused.returncode == 2 and "Traceback" not in refused.stderr
    assert (
        refused.stderr.startswith("error: topology.file = ")
        and "line 14, Queue_Down = '1000000'" in refused.stderr
    )
    assert not (tmp_path / "s.toml").exists()
    done = invoke(*args, "--ignore", "Queue_Up,Queue_Down", "--out", "s.toml", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    scenario = Scenario.load(tmp_path / "s.toml")  # paths in it are relative to it
    assert scenario.topology.file == str((files / "leaf_spine_2to1.topo").resolve())
    assert len(scenario.workload[0].flow_rows) == 8
    text = (tmp_path / "s.toml").read_text()
    assert text.startswith("# Imported from htsim") and "oversubscription ToR 2:1" in text
    again = invoke(*args, "--ignore", "Queue_Up,Queue_Down", "--out", "s.toml", cwd=tmp_path)
    assert again.returncode == 2 and "refusing to overwrite" in again.stderr


def test_import_ns3_and_export_fct_with_ns3_node_ids(tmp_path: Path) -> None:
    """A run of an ns-3 import exports HPCC's fct.txt in ns-3 node ids: flow.txt's first flow is
    node 4 -> node 8 (hosts 0 -> 4 inside spraylab), addressed as HPCC addresses nodes, and its
    FCT ends at the sender's last ACK, in whole ns."""
    _copy(tmp_path, "ns3")
    made = invoke(
        "import", "ns3", "-t", "ns3/topology.txt", "-w", "ns3/flow.txt", "--out", "s.toml", cwd=tmp_path
    )
    assert made.returncode == 0, made.stderr
    assert "node 4 is host 0" in made.stderr
    ran = invoke("run", "s.toml", "--out", "r", cwd=tmp_path)
    assert ran.returncode == 0, ran.stderr
    assert "result saved in r/" in ran.stderr and "result saved" not in ran.stdout
    exported = invoke("export", "r", "--format", "fct", cwd=tmp_path)
    assert exported.returncode == 0, exported.stderr
    flows = Result.load(tmp_path / "r").flows.set_index("flow_id")
    lines = [line.split() for line in exported.stdout.splitlines()]
    assert len(lines) == 6 and all(len(f) == 8 for f in lines)
    # node n's address: 0x0b000001 + (n // 256) * 0x10000 + (n % 256) * 0x100
    by_pair = {(f[0], f[1], int(f[5])): f for f in lines}
    first = by_pair[("0b000401", "0b000801", 1000)]  # start 0.000001 s = 1000 ns
    assert int(first[4]) == 300_000 and first[2:4] == ["10000", "100"]
    end_ns = round(flows.loc[0, "acked_ps"] / 1000)
    assert int(first[5]) + int(first[6]) == end_ns
    assert {int(f[1], 16) for f in lines} <= {0x0B000001 + n * 0x100 for n in range(4, 12)}


def test_export_htsim_lines_keep_the_connection_matrix_ids(tmp_path: Path) -> None:
    ran = invoke("run", str(EXAMPLES.parent / "imports" / "htsim_two_phase.toml"), "--out", "r", cwd=tmp_path)
    assert ran.returncode == 0, ran.stderr
    out = invoke("export", "r", "-f", "htsim", cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    flows = Result.load(tmp_path / "r").flows
    seen = {}
    for line in out.stdout.splitlines():
        tokens = line.split()
        assert tokens[0] == "Flow" and tokens[2] == "flowId" and tokens[8:10] == ["finished", "at"]
        seen[int(tokens[3])] = (float(tokens[10]), float(tokens[12]))
    assert sorted(seen) == list(range(1, 9))  # two_phase.cm's ids, not spraylab's 0..7
    for i, row in flows.iterrows():  # htsim's "finished at" is the sender's last ACK
        finish_us, fct_us = seen[i + 1]
        assert round(finish_us * 10**6) == row["acked_ps"]
        assert round(fct_us * 10**6) == row["acked_ps"] - row["start_ps"]
    assert invoke("export", "r", "-f", "pcap", cwd=tmp_path).returncode == 2


def _csv_rows(text: str) -> list[dict[str, str]]:
    body = "\n".join(line for line in text.splitlines() if not line.startswith("#"))
    return list(csv.DictReader(io.StringIO(body)))


def test_run_formats_parse_back_to_the_runs_numbers(tmp_path: Path) -> None:
    scenario = str(EXAMPLES / "explicit_flows.toml")
    saved = invoke("run", scenario, "--out", "r", "--set", "lb.scheme=rps", cwd=tmp_path)
    summary = Result.load(tmp_path / "r").summary
    label = "rps/gbn"  # the scheme never alone: its recovery mode is in the label
    as_json = json.loads(
        invoke("run", scenario, "--set", "lb.scheme=rps", "--format", "json", cwd=tmp_path).stdout
    )
    assert as_json["columns"] == [label]
    values = {r["key"]: r["values"][label] for r in as_json["rows"]}
    assert (
        values["fct_mean_ps"] == summary["fct_mean_ps"]
        and values["completion_ps"] == summary["completion_ps"]
    )
    assert any("rps over go-back-N (gbn)" in line for line in as_json["card"])
    as_csv = invoke("run", scenario, "--set", "lb.scheme=rps", "-f", "csv", cwd=tmp_path).stdout
    assert as_csv.startswith("# fabric: leaf_spine, 8 hosts")
    rows = {r["key"]: r for r in _csv_rows(as_csv)}
    assert float(rows["fct_p99_ps"][label]) == summary["fct_p99_ps"] and rows["fct_p99_ps"]["unit"] == "ps"
    assert (
        float(rows["retx_ratio"][label]) == summary["retx_ratio"] and rows["retx_ratio"]["unit"] == "fraction"
    )
    md = invoke("run", scenario, "--set", "lb.scheme=rps", "-f", "markdown", cwd=tmp_path).stdout
    table = [line for line in md.splitlines() if line.startswith("| ")]
    assert table[0] == f"| metric | {label} |" and len(table) == len(rows) + 1
    assert "> lb: rps over go-back-N (gbn), cc dcqcn" in md
    assert saved.returncode == 0
    bad = invoke("run", scenario, "--format", "xml", cwd=tmp_path)
    assert bad.returncode == 2 and bad.stderr.startswith("error: --format 'xml': unknown format")


def test_compare_json_has_a_card_line_per_column(tmp_path: Path) -> None:
    out = invoke(
        "compare",
        str(EXAMPLES / "explicit_flows.toml"),
        "--lb",
        "ecmp,rps,rps/sr",
        "-f",
        "json",
        "--out",
        "c",
        cwd=tmp_path,
    )
    assert out.returncode == 0, out.stderr
    data = json.loads(out.stdout)
    assert data["columns"] == ["ecmp", "rps", "rps/sr"]
    card = "\n".join(data["card"])
    assert "lb rps: rps over go-back-N (gbn)" in card and "lb rps/sr: rps over selective repeat (sr)" in card
    assert "results and plots in c/" in out.stderr
    assert set(data["summaries"]) == {"ecmp", "rps", "rps/sr"}


def test_sweep_compare_csv_has_means_cis_and_ratios(tmp_path: Path) -> None:
    (tmp_path / "s.toml").write_text(
        f'base = "{EXAMPLES / "explicit_flows.toml"}"\n[axes]\n"lb.scheme" = ["ecmp", "rps"]\n"run.seed" = [1, 2]\n'
    )
    assert invoke("sweep", "s.toml", "--out", "st", "--no-progress", cwd=tmp_path).returncode == 0
    text = invoke("compare", "st", "-f", "csv", "--baseline", "ecmp", cwd=tmp_path).stdout
    rows = {r["key"]: r for r in _csv_rows(text)}
    assert rows["n"]["ecmp"] == "2" and rows["fct_mean_ps:ratio"]["ecmp"] in ("1.0", "")
    assert float(rows["fct_mean_ps"]["rps"]) > 0 and "fct_mean_ps:ci95" in rows
    # two seeds: no interval (as the tables and plots show it), the column is empty
    assert {rows[f"fct_mean_ps:{end}"]["rps"] for end in ("ci95", "ci95_low", "ci95_high")} == {""}
    assert "# varies across the runs: lb.scheme, run.seed" in text


def test_narrow_tables_split_columns_and_never_cut_numbers() -> None:
    table = ResultTable("t", [f"scheme{i}[param=123]/sr" for i in range(5)], card=["fabric: x"])
    for r in range(3):
        texts = [f"{123456.789 + r + i:.3f}us" for i in range(5)]
        table.add(f"metric {r}", f"k{r}", "str", texts, texts)
    console = Console(width=60, record=True)
    print_table(console, [table])
    out = console.export_text()
    assert "…" not in out
    for row in table.rows:
        for text in row.texts:
            assert text in out
    assert "(1/" in out  # split into several tables
    assert column_chunks(10, [20, 20, 20], 200) == [[0, 1, 2]]
    assert column_chunks(10, [20, 20, 20], 40) == [[0], [1], [2]]


def test_list_shows_examples_and_run_takes_their_names(tmp_path: Path) -> None:
    listed = invoke("list", cwd=tmp_path)
    assert (
        "example:imports/htsim_two_phase" in listed.stdout
        and "example:sweeps/websearch_schemes" in listed.stdout
    )
    ran = invoke("run", "example:imports/explicit_flows", "-f", "json", cwd=tmp_path)
    assert ran.returncode == 0 and json.loads(ran.stdout)["columns"] == ["ecmp/gbn"]
    missing = invoke("run", "example:nope", cwd=tmp_path)
    assert missing.returncode == 2 and "no such example scenario" in missing.stderr


@pytest.mark.parametrize("page", ["config", "columns"])
def test_docs_command_prints_the_generated_page(tmp_path: Path, page: str) -> None:
    out = invoke("docs", page, cwd=tmp_path)
    assert out.returncode == 0 and out.stdout.startswith("# ")


def test_summary_json_carries_the_card(tmp_path: Path) -> None:
    """The card names what a bare "rps" hides: the recovery mode and the congestion control,
    with every parameter of the scheme (defaults included), the fabric's oversubscription, the seed and the version."""
    invoke(
        "run",
        str(EXAMPLES / "htsim_two_phase.toml"),
        "--set",
        "lb.scheme=dfs",
        "--set",
        "run.seed=5",
        "--out",
        "r",
        cwd=tmp_path,
    )
    card = json.loads((tmp_path / "r" / "summary.json").read_text())["card"]
    assert card["recovery"] == "gbn" and card["cc"] == "dcqcn" and card["seed"] == 5
    assert card["lb"]["scheme"] == "dfs" and card["lb"]["reorder_bound_packets"] == "auto"
    assert card["fabric"]["oversubscription"] == {"ToR": 2.0}
    assert card["fabric"]["link_rates_bps"] == {"host": [100 * 10**9], "tier1-2": [100 * 10**9]}
    assert card["spraylab"].startswith(provenance.version())
    assert "dfs[reorder_bound_packets=auto" in card["text"] and "over go-back-N (gbn)" in card["text"]
