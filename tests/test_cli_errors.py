"""The command line on bad input: exit code 2, one ``error:`` line naming the key and the
value, never a traceback. Plus the happy paths of ``spraylab list`` and ``spraylab run --out``.

Every case runs the real CLI in a subprocess (``python -m spraylab.cli``); the cases run in
parallel once per module to keep the file fast.
"""

from __future__ import annotations

import os
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from spraylab.metrics.result import Result
from spraylab.runs.experiment import run

VALID = """\
[topology]
kind = "leaf_spine"
leaves = 2
spines = 2
hosts_per_leaf = 2

[transport]
cc = "dcqcn"

[lb]
scheme = "ecmp"

[workload]
kind = "permutation"
size = "64KB"

[run]
seed = 1
progress = false
"""


def edit(old: str, new: str, text: str = VALID) -> str:
    assert old in text, old
    return text.replace(old, new, 1)


@dataclass(frozen=True)
class Case:
    toml: str | None  # None: the scenario path does not exist
    expect: tuple[str, ...]  # the key and the value (and what else the line must name)
    args: tuple[str, ...] = field(default=())


CASES: dict[str, Case] = {
    "unknown_key": Case(
        edit("spines = 2\n", 'spines = 2\nflavour = "spicy"\n'), ("topology.flavour", "spicy", "unknown key")
    ),
    "bad_unit": Case(edit('size = "64KB"', 'size = "64 parsecs"'), ("workload.size", "64 parsecs")),
    "bad_time_unit": Case(
        edit("seed = 1\n", 'seed = 1\ntime_limit = "3 fortnights"\n'), ("run.time_limit", "3 fortnights")
    ),
    "hosts_not_divisible_by_leaves": Case(
        edit("hosts_per_leaf = 2\n", "hosts = 13\n"), ("topology.hosts", "13", "divisible")
    ),
    "negative_load": Case(
        edit('kind = "permutation"\nsize = "64KB"', 'kind = "cdf"\nload = -0.25'), ("workload.load", "-0.25")
    ),
    "unknown_scheme": Case(edit('scheme = "ecmp"', 'scheme = "teleport"'), ("lb.scheme", "teleport", "ecmp")),
    "missing_workload_section": Case(
        edit('[workload]\nkind = "permutation"\nsize = "64KB"\n', ""), ("workload", "missing")
    ),
    "unknown_topology_kind": Case(edit('kind = "leaf_spine"', 'kind = "torus"'), ("topology.kind", "torus")),
    "bad_lb_parameter": Case(edit('scheme = "ecmp"', 'scheme = "flowlet"\ngap_us = -5'), ("lb.gap_us", "-5")),
    "lb_parameter_int_or_auto": Case(
        edit('scheme = "ecmp"', 'scheme = "dfs"\nreorder_bound_packets = 0'),
        ("lb.reorder_bound_packets = 0: Input should be greater than or equal to 1, or 'auto'",),
    ),
    "unknown_lb_parameter": Case(
        edit('scheme = "ecmp"', 'scheme = "ecmp"\nbucket_count = 4321'), ("lb.bucket_count", "4321")
    ),
    "incast_senders_exceed_hosts": Case(
        edit('kind = "permutation"\nsize = "64KB"', 'kind = "incast"\nsenders = 40'),
        ("workload.senders", "40"),
    ),
    "collective_field_error_names_the_field": Case(
        edit(
            'kind = "permutation"\nsize = "64KB"',
            'kind = "collective"\ncollective = "alltoall"\nsize = "abc"',
        ),
        ("workload.size = 'abc'",),
    ),
    "collective_kind_error_names_collective": Case(
        edit('kind = "permutation"\nsize = "64KB"', 'kind = "collective"\ncollective = "foo"'),
        ("workload.collective = 'foo'", "alltoall"),
    ),
    "alltoall_peers_in_flight_exceed_peers": Case(
        edit('kind = "permutation"\nsize = "64KB"', 'kind = "all_to_all"\npeers_in_flight = 4'),
        ("workload.peers_in_flight", "4", "at most 3"),
    ),
    "link_event_parallel_index_out_of_range": Case(
        edit(
            "hosts_per_leaf = 2\n",
            'hosts_per_leaf = 2\n[[topology.events]]\nlink = ["leaf0", "spine1"]\naction = "down"\nparallel = 2\n',
        ),
        ("topology.events.parallel", "2", "index 0..0"),
    ),
    "invalid_toml_syntax": Case(edit("[transport]", "[transport"), ("not valid TOML", "line 7")),
    "unknown_file": Case(None, ("no such file", "no_such_scenario.toml")),
    "set_without_equals": Case(VALID, ("--set", "run.seed", "key=value"), ("--set", "run.seed")),
    "set_unknown_key": Case(VALID, ("run.sedd", "7", "unknown key"), ("--set", "run.sedd=7")),
    "set_bad_value": Case(VALID, ("topology.leaves", "0"), ("--set", "topology.leaves=0")),
}


def cli_env() -> dict[str, str]:
    env = dict(os.environ)
    # Rich sizes its output from COLUMNS; without it a non-terminal stderr is 80 columns.
    env.pop("COLUMNS", None)
    env.pop("LINES", None)
    return env


def spraylab(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "spraylab.cli", *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        env=cli_env(),
        timeout=120,
    )


def scenario_path(name: str, case: Case, directory: Path) -> Path:
    path = directory / ("no_such_scenario.toml" if case.toml is None else f"{name}.toml")
    if case.toml is not None:
        path.write_text(case.toml)
    return path


@pytest.fixture(scope="module")
def outcomes(tmp_path_factory: pytest.TempPathFactory) -> dict[str, subprocess.CompletedProcess[str]]:
    directory = tmp_path_factory.mktemp("scenarios")
    jobs = {
        name: ("run", str(scenario_path(name, case, directory)), *case.args) for name, case in CASES.items()
    }
    with ThreadPoolExecutor(max_workers=4) as pool:
        futures = {name: pool.submit(spraylab, *args, cwd=directory) for name, args in jobs.items()}
        return {name: future.result() for name, future in futures.items()}


@pytest.mark.parametrize("name", list(CASES))
def test_malformed_scenario_is_one_error_line(
    name: str, outcomes: dict[str, subprocess.CompletedProcess[str]]
) -> None:
    proc = outcomes[name]
    assert "Traceback" not in proc.stderr + proc.stdout, proc.stderr
    assert proc.returncode == 2, (proc.returncode, proc.stderr)
    error_lines = [line for line in proc.stderr.splitlines() if line.startswith("error:")]
    assert len(error_lines) == 1, proc.stderr
    # One problem, one message (a single physical line is checked separately).
    message = " ".join(proc.stderr.split())
    assert message.startswith("error:")
    for text in CASES[name].expect:
        assert text in message, (text, message)


def test_error_message_is_a_single_physical_line(
    outcomes: dict[str, subprocess.CompletedProcess[str]],
) -> None:
    # The unknown-key message lists the allowed keys: always longer than 80 characters.
    proc = outcomes["unknown_key"]
    assert proc.returncode == 2
    assert len(proc.stderr.strip().splitlines()) == 1, proc.stderr


def test_unknown_option_is_a_usage_error(tmp_path: Path) -> None:
    path = tmp_path / "valid.toml"
    path.write_text(VALID)
    proc = spraylab("run", str(path), "--no-such-option", cwd=tmp_path)
    assert "Traceback" not in proc.stderr
    assert proc.returncode == 2


def test_list_names_the_schemes(tmp_path: Path) -> None:
    proc = spraylab("list", cwd=tmp_path)
    assert "Traceback" not in proc.stderr
    assert proc.returncode == 0, proc.stderr
    assert "ecmp" in proc.stdout
    assert "rps" in proc.stdout


def test_run_saves_a_loadable_result(tmp_path: Path) -> None:
    path = tmp_path / "tiny.toml"
    path.write_text(VALID)
    out = tmp_path / "result"
    proc = spraylab("run", str(path), "--set", "run.seed=3", "--out", str(out), cwd=tmp_path)
    assert "Traceback" not in proc.stderr
    assert proc.returncode == 0, proc.stderr
    assert "error:" not in proc.stderr

    result = Result.load(out)
    s = result.summary
    assert s["seed"] == 3
    assert s["hosts"] == 4
    assert s["flows"] == s["flows_completed"] == len(result.flows) == 4
    assert result.flows["completed"].all()
    c = s["conservation"]
    assert c["injected"] == c["consumed"] + c["dropped"] + c["in_flight"]
    assert result.scenario["workload"][0]["size"] == 64_000
    # The same scenario and seed in this process give the same numbers as the CLI's process.
    scenario = Result.load(out).scenario
    again = run(scenario).summary
    for key in ("events", "packet_hops", "fct_mean_ps", "completion_ps", "conservation", "sim_time_ps"):
        assert again[key] == s[key], key
