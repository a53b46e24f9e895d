"""Output safety (issue 12, items 1, 6 and 7): spraylab writes only where it owns the output.

Invariants checked: a directory spraylab did not write, a file, or another kind of spraylab output
is refused with one ``error:`` line and exit code 2 and is left byte-for-byte as it was (nothing
is destroyed); replacing an old result is atomic and removes only what spraylab wrote; a store
holding another sweep, or a malformed index, is refused; every run records the version and commit
that made it, and results of another version are flagged and not silently reused.
"""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from cliutil import InlineExecutor, Invocation, inline_sweeps, invoke  # noqa: F401 (inline_sweeps: an autouse fixture)

import spraylab
from spraylab.metrics.result import Result
from spraylab.report import sweep_data
from spraylab.results import provenance
from spraylab.results.output import MARKER, OutputError, write_dir
from spraylab.results.store import Store
from spraylab.runs.experiment import run
from spraylab.sweeps.sweep import Sweep, plan, run_sweep

SCENARIO = """\
[topology]
kind = "leaf_spine"
leaves = 2
spines = 2
hosts_per_leaf = 2

[workload]
kind = "permutation"
size = "64KB"

[run]
seed = 1
progress = false
"""

SWEEP = """\
name = "safe"
base = "base.toml"
[axes]
"lb.scheme" = ["ecmp", "rps"]
"""


def snapshot(path: Path) -> dict[str, bytes]:
    """Every file under ``path`` (or the file itself) with its bytes: 'left as it was' is equality."""
    if path.is_file():
        return {path.name: path.read_bytes()}
    return {str(p.relative_to(path)): p.read_bytes() for p in sorted(path.rglob("*")) if p.is_file()}


def assert_one_error_line(proc: Invocation | subprocess.CompletedProcess[str], *texts: str) -> None:
    assert "Traceback" not in proc.stderr + proc.stdout, proc.stderr
    assert proc.returncode == 2, (proc.returncode, proc.stderr)
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error:"), proc.stderr
    for text in texts:
        assert text in lines[0], (text, lines[0])


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A scenario, a sweep file, a finished sweep store and a user's directory with a precious file."""
    root = tmp_path_factory.mktemp("safety")
    (root / "base.toml").write_text(SCENARIO)
    (root / "tiny.toml").write_text(SCENARIO)
    (root / "safe.toml").write_text(SWEEP)
    outcome = run_sweep(Sweep.load(root / "safe.toml"), root / "store", executor=InlineExecutor())
    assert outcome.done == 2
    (root / "mine").mkdir()
    (root / "mine" / "thesis.tex").write_text("three years of work\n")
    return root


REFUSALS: dict[str, tuple[tuple[str, ...], str, tuple[str, ...]]] = {
    # name: (argv, path that must be untouched, texts the error line names)
    "run_into_a_users_directory": (("run", "tiny.toml", "--out", "mine"), "mine", ("--out mine", "did not write")),
    "run_onto_the_scenario_file": (("run", "tiny.toml", "--out", "tiny.toml"), "tiny.toml", ("--out tiny.toml", "is a file")),
    "run_into_the_current_directory": (("run", "tiny.toml", "--out", "."), ".", ("--out .", "current directory")),
    "run_into_a_sweep_store": (("run", "tiny.toml", "--out", "store"), "store", ("--out store", "sweep results store")),
    "compare_into_a_users_directory": (("compare", "tiny.toml", "--out", "mine"), "mine", ("--out mine", "did not write")),
    "compare_onto_a_file": (("compare", "tiny.toml", "--out", "tiny.toml"), "tiny.toml", ("is a file",)),
    "demo_into_a_users_directory": (("demo", "--out", "mine"), "mine", ("--out mine", "did not write")),
    "sweep_into_a_users_directory": (("sweep", "safe.toml", "--out", "mine"), "mine", ("--out mine", "did not write")),
    "sweep_onto_a_file": (("sweep", "safe.toml", "--out", "tiny.toml"), "tiny.toml", ("--out tiny.toml", "is a file")),
    "report_into_a_users_directory": (("report", "store", "--out", "mine"), "mine", ("--out mine", "did not write")),
    "report_onto_a_file": (("report", "store", "--out", "tiny.toml"), "tiny.toml", ("is a file",)),
}  # fmt: skip


@pytest.fixture(scope="module")
def refusals(
    world: Path,
) -> dict[str, tuple[Invocation, dict[str, bytes], dict[str, bytes]]]:
    """Every refusal case: (invocation, files before, files after)."""
    before = {name: snapshot(world / guard) for name, (_, guard, _) in REFUSALS.items()}
    store_before = snapshot(world / "store")
    procs = {name: invoke(*argv, cwd=world) for name, (argv, _, _) in REFUSALS.items()}
    assert snapshot(world / "store") == store_before  # nothing above wrote into the store either
    return {name: (procs[name], before[name], snapshot(world / REFUSALS[name][1])) for name in REFUSALS}


@pytest.mark.parametrize("name", list(REFUSALS))
def test_foreign_output_is_refused_and_left_as_it_was(name: str, refusals: dict) -> None:
    proc, before, after = refusals[name]
    assert_one_error_line(proc, *REFUSALS[name][2])
    assert after == before


def test_the_real_entry_point_refuses_and_keeps_the_scenario_file(world: Path) -> None:
    """The same refusal through ``python -m spraylab.cli`` (a new process, the real exit path)."""
    before = (world / "tiny.toml").read_bytes()
    env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES")}
    proc = subprocess.run(
        [sys.executable, "-m", "spraylab.cli", "run", "tiny.toml", "--out", "tiny.toml"],
        capture_output=True, text=True, cwd=world, env=env, timeout=180,
    )  # fmt: skip
    assert_one_error_line(proc, "--out tiny.toml", "is a file")
    assert (world / "tiny.toml").read_bytes() == before


def test_run_replaces_its_own_result_and_keeps_what_it_did_not_write(world: Path, tmp_path: Path) -> None:
    """Replacing is a swap of spraylab's files only: a user's note in the result directory survives,
    the result is the new one (seed 2), and no temporary sibling is left behind."""
    out = tmp_path / "result"
    first = invoke("run", str(world / "tiny.toml"), "--out", str(out), cwd=tmp_path)
    assert first.returncode == 0, first.stderr
    assert json.loads((out / MARKER).read_text())["kind"] == "run"
    (out / "notes.txt").write_text("my notes\n")
    second = invoke("run", str(world / "tiny.toml"), "--set", "run.seed=2", "--out", str(out), cwd=tmp_path)
    assert second.returncode == 0, second.stderr
    assert Result.load(out).summary["seed"] == 2
    assert (out / "notes.txt").read_text() == "my notes\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["result"]


@pytest.mark.slow
def test_compare_output_is_written_atomically_and_replaced(world: Path, tmp_path: Path) -> None:
    out = tmp_path / "cmp"
    for _ in range(2):  # the second run replaces the first one's (spraylab-owned) directory
        proc = invoke(
            "compare", str(world / "tiny.toml"), "--lb", "ecmp,rps", "--out", str(out), cwd=tmp_path
        )
        assert proc.returncode == 0, proc.stderr
    assert {p.name for p in out.iterdir()} == {
        MARKER,
        "compare.json",  # the columns' labels and directories, for spraylab report
        "ecmp",
        "rps",
        *(
            f"{plot}.{fmt}"
            for plot in ("fct_slowdown_cdf", "uplink_utilization")
            for fmt in ("png", "pdf", "svg")
        ),
    }
    assert Result.load(out / "rps").summary["scheme"] == "rps"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["cmp"]


def test_a_failed_write_leaves_the_old_result_untouched(tmp_path: Path) -> None:
    """Atomicity: an error while writing the new result changes nothing at the target."""
    result = run(spraylab.Scenario.from_dict(_scenario_dict()))
    out = result.save(tmp_path / "r")
    before = snapshot(out)

    def fail(directory: Path) -> None:
        result.write_files(directory)
        raise RuntimeError("disk full")

    with pytest.raises(RuntimeError):
        write_dir(out, "run", fail)
    assert snapshot(out) == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["r"]


def test_a_user_file_with_a_name_spraylab_writes_is_not_overwritten(tmp_path: Path) -> None:
    """A name clash with a file spraylab did not write is refused, not resolved by overwriting."""
    result = run(spraylab.Scenario.from_dict(_scenario_dict()))
    out = result.save(tmp_path / "r")
    marker = json.loads((out / MARKER).read_text())
    marker["files"] = [
        name for name in marker["files"] if name != "summary.json"
    ]  # summary.json: the user's now
    (out / MARKER).write_text(json.dumps(marker))
    before = snapshot(out)
    with pytest.raises(OutputError, match="summary.json"):
        result.save(out)
    assert snapshot(out) == before


def _scenario_dict() -> dict:
    import tomllib

    return tomllib.loads(SCENARIO)


# --- item 7: what made a store ---------------------------------------------------------------


def test_every_run_records_the_version_and_commit_that_made_it(tmp_path: Path) -> None:
    summary = run(spraylab.Scenario.from_dict(_scenario_dict())).summary
    assert summary["spraylab"] == spraylab.__version__
    source = Path(spraylab.__file__).resolve().parent
    top = subprocess.run(
        ["git", "-C", str(source), "rev-parse", "--show-toplevel"], capture_output=True, text=True
    )
    if top.returncode == 0 and (Path(top.stdout.strip()) / "src" / "spraylab").resolve() == source:
        head = subprocess.run(["git", "-C", str(source), "rev-parse", "HEAD"], capture_output=True, text=True)
        assert summary["git_commit"] == head.stdout.strip()
    else:
        assert summary["git_commit"] is None


def test_a_different_sweep_into_the_same_store_is_refused(world: Path, tmp_path: Path) -> None:
    index_before = (world / "store" / "sweep.json").read_bytes()
    (tmp_path / "base.toml").write_text(SCENARIO)
    (tmp_path / "other.toml").write_text(SWEEP.replace('name = "safe"', 'name = "other"'))
    proc = invoke("sweep", "other.toml", "--out", str(world / "store"), "--no-progress", cwd=tmp_path)
    assert_one_error_line(proc, "sweep 'safe'", "sweep 'other'")
    assert (world / "store" / "sweep.json").read_bytes() == index_before


@pytest.mark.parametrize(
    "index, text",
    [
        ("{ not json", "unreadable index"),
        ("[]", "expected a JSON object"),
        ('{"name": "safe", "axes": [{"key": "lb.scheme", "labels": ["ecmp"]}], "points": [{"key": "../../x"}]}', "point 0"),
    ],
)  # fmt: skip
def test_a_malformed_index_is_one_error_line_for_every_command(
    world: Path, tmp_path: Path, index: str, text: str
) -> None:
    store = tmp_path / "store"
    store.mkdir()
    (store / "sweep.json").write_text(index)
    (tmp_path / "base.toml").write_text(SCENARIO)
    (tmp_path / "safe.toml").write_text(SWEEP)
    argvs = [
        ("compare", "store"),
        ("report", "store"),
        ("sweep", "safe.toml", "--out", "store", "--no-progress"),
    ]
    for argv in argvs:
        assert_one_error_line(invoke(*argv, cwd=tmp_path), "sweep.json", text)
    assert (store / "sweep.json").read_text() == index


def test_runs_of_another_version_are_rerun_flagged_or_kept_on_request(world: Path, tmp_path: Path) -> None:
    """A run stored by another spraylab version is not reused silently: plan() reruns it unless
    asked to keep it, and compare/report name it."""
    sweep = Sweep.load(world / "safe.toml")
    root = tmp_path / "store"
    run_sweep(sweep, root, executor=InlineExecutor())
    store = Store(root)
    old_key = sweep.points[0].key
    old = store.load(old_key)
    old.summary.update({"spraylab": "0.0.1", "git_commit": "0" * 40})
    store.write_result(old_key, dataclasses.replace(old, summary=old.summary), {})
    assert provenance.describe(store.summary(old_key)) == "0.0.1 (0000000000)"

    assert [p.key for p in plan(sweep, store).todo] == [old_key]
    kept = plan(sweep, store, reuse_other_versions=True)
    assert kept.todo == [] and [p.key for p in kept.other_version] == [old_key]

    warning = sweep_data(root).version_warning()
    assert warning is not None and "1 of the runs" in warning and "0.0.1" in warning
    proc = invoke("compare", str(root), cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "warning: 1 of the runs were made by another spraylab version (0.0.1" in " ".join(
        proc.stderr.split()
    )
    report = invoke("report", str(root), cwd=tmp_path)
    assert report.returncode == 0, report.stderr
    assert "another spraylab version (0.0.1" in (root / "report" / "report.html").read_text()

    outcome = run_sweep(sweep, root, executor=InlineExecutor())  # the default: rerun it with this version
    assert (outcome.done, outcome.skipped) == (1, 1)
    assert provenance.same_version(store.summary(old_key))
    assert sweep_data(root).version_warning() is None


# Issue 27, item 3: a page is overwritten only when its first line is exactly one spraylab writes.
RENDER_FIRST_LINE = (
    "<!-- generated by `spraylab study render` from `studies/x.toml`; edit the study, not this page -->"
)
MENTIONS = {
    "quotes_the_mark_in_prose": "# My notes\n\nThe docs start with <!-- generated by `spraylab study render` -->.\n",
    "mark_prefix_alone": "<!-- generated by `spraylab study render` is how the pages begin -->\nmine\n",
    "mark_on_the_second_line": f"# Notes\n{RENDER_FIRST_LINE}\n",
    "old_validate_mark_in_prose": "see <!-- generated by `spraylab validate` in the old page\n",
    "old_lb_report_mark": "# LB\n\n<!-- Generated by tools/lb_report.py from scenarios/lb/*.toml. Do not edit by hand. -->\n",
    "old_rails_report_mark": "Generated by `tools/rails_report.py` from 83 packet-level runs\n",
    "render_line_with_more_after_it": RENDER_FIRST_LINE + " and my edits\n",
}


@pytest.mark.parametrize("text", list(MENTIONS.values()), ids=list(MENTIONS))
def test_a_file_that_mentions_a_marker_is_not_overwritten(tmp_path: Path, text: str) -> None:
    """``study render --page`` and ``validate --out`` refuse it (exit 2, one line) before anything
    runs, and leave it byte for byte."""
    page = tmp_path / "notes.md"
    page.write_text(text)
    (tmp_path / "store").mkdir()
    (tmp_path / "store" / "study.json").write_text(json.dumps({"source": str(page)}))
    for args in (
        ("study", "render", "store", "--page", str(page)),
        ("validate", "--only", "single_flow", "--out", str(page), "--store", str(tmp_path / "v")),
    ):
        got = invoke(*args, cwd=tmp_path)
        assert got.returncode == 2, got
        lines = got.stderr.strip().splitlines()
        assert len(lines) == 1 and "refusing to overwrite it" in lines[0], got.stderr
        assert page.read_text() == text
    assert not (tmp_path / "v").exists()  # refused before the validation study ran


@pytest.mark.parametrize(
    "first_line",
    [
        RENDER_FIRST_LINE,
        "<!-- generated by `spraylab validate`; edit src/spraylab/study/validation.py instead -->",
    ],
)
def test_a_page_spraylab_wrote_is_replaced(tmp_path: Path, first_line: str) -> None:
    from spraylab.study.render import write_page

    page = tmp_path / "page.md"
    page.write_text(first_line + "\n# Old\n")
    write_page(page, RENDER_FIRST_LINE + "\n# New\n")
    assert page.read_text() == RENDER_FIRST_LINE + "\n# New\n"
