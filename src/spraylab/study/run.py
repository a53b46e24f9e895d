"""Run a study into its store: the runs of every scenario sweep through one executor, in one
queue (:func:`spraylab.sweeps.sweep.drive`), each analysis point in this process. Points already in
the store are kept (a scenario's key is its hash, so a rerun is free), as for a sweep."""

from __future__ import annotations

import json
import os
import time
from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from spraylab.results.store import Store
from spraylab.study.data import analysis_path, read_analysis
from spraylab.study.definition import Study, StudySweep
from spraylab.sweeps.executors import make_executor
from spraylab.sweeps.sweep import OpenSweep, SweepEvents, SweepOutcome, drive, open_sweep


@dataclass
class StudyOutcome:
    sweeps: dict[str, SweepOutcome] = field(default_factory=dict)
    analyses: dict[str, tuple[int, int]] = field(default_factory=dict)  # name -> (run now, kept)
    wall_s: float = 0.0

    @property
    def failed(self) -> int:
        return sum(o.failed for o in self.sweeps.values())

    @property
    def interrupted(self) -> bool:
        return any(o.interrupted for o in self.sweeps.values())

    @property
    def any_incomplete(self) -> bool:
        return any(o.any_incomplete for o in self.sweeps.values())

    def lines(self) -> list[str]:
        out = [f"{name}: {o.line()}" for name, o in self.sweeps.items()]
        out += [f"{name}: {n + k} points: {n} computed, {k} kept" for name, (n, k) in self.analyses.items()]
        return out


def prepare(study: Study, out: Path) -> None:
    """Claim ``out`` for the study (refusing a directory spraylab did not write) and record it."""
    from spraylab.results.output import check_target, write_marker

    check_target(out, "study")
    existing = out / "study.json"
    if existing.is_file():
        theirs = json.loads(existing.read_text()).get("name")
        if theirs != study.name:
            from spraylab.results.output import OutputError

            raise OutputError(
                f"--out {out}: holds the results of study {theirs!r}, not of {study.name!r}; give another --out"
            )
    out.mkdir(parents=True, exist_ok=True)
    write_marker(out, "study", ["study.json", *study.sweeps])
    tmp = out / f".study.json.tmp-{os.getpid()}"
    tmp.write_text(json.dumps(study.definition(), indent=2, sort_keys=True) + "\n")
    os.replace(tmp, existing)


def run_study(
    study: Study,
    out: Path,
    jobs: int | None = None,
    executor: str = "local",
    address: str | None = None,
    force: bool = False,
    events: SweepEvents | None = None,
    reuse_other_versions: bool = False,
    log: Any = None,
) -> StudyOutcome:
    """Every analysis point, then every sweep's runs through one executor: the points of all
    sweeps in one queue, in the study's order, so no worker waits for a sweep's last runs."""
    start = time.perf_counter()
    prepare(study, out)
    outcome = StudyOutcome()
    events = events or SweepEvents()
    try:
        with ExitStack() as stack:
            opened: list[OpenSweep] = []
            for name, s in study.sweeps.items():
                if s.sweep is None:
                    outcome.analyses[name] = run_analyses(s, out / name, force, reuse_other_versions, log)
                    continue
                o = stack.enter_context(open_sweep(s.sweep, Store(out / name), force, reuse_other_versions))
                outcome.sweeps[name] = o.outcome
                if log is not None:
                    log(f"{name}: {len(s.sweep.points)} runs, {len(o.todo)} to run")
                if o.todo:
                    opened.append(o)
            if opened:
                to_run = sum(len(o.todo) for o in opened)
                skipped = sum(o.outcome.skipped for o in opened)
                events.start(_AllSweeps(study.name), to_run, skipped)
                drive(opened, make_executor(executor, jobs, address), events)
    finally:
        outcome.wall_s = time.perf_counter() - start
    return outcome


@dataclass(frozen=True)
class _AllSweeps:
    """What a progress display is told it is running: the study's sweeps as one."""

    name: str


def run_analyses(
    sweep: StudySweep, root: Path, force: bool, reuse_other_versions: bool, log: Any = None
) -> tuple[int, int]:
    from spraylab.results import provenance
    from spraylab.study.analyses import ANALYSES

    assert sweep.analysis is not None
    analysis = ANALYSES[sweep.analysis]
    now = provenance.current()
    ran = kept = 0
    for point in sweep.analysis_points:
        record = read_analysis(root, point.key)
        if (
            record is not None
            and not force
            and (reuse_other_versions or provenance.same_version(record, now))
        ):
            kept += 1
            continue
        started = time.perf_counter()
        metrics = analysis.compute(**point.values)
        record = {
            "key": point.key,
            "analysis": sweep.analysis,
            "params": point.values,
            "metrics": metrics,
            "wall_s": round(time.perf_counter() - started, 3),
            **now,
        }
        path = analysis_path(root, point.key)
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}")
        tmp.write_text(json.dumps(record, indent=2, sort_keys=True) + "\n")
        os.replace(tmp, path)
        ran += 1
        if log is not None:
            log(
                f"{sweep.name}: {' '.join(f'{k}={v}' for k, v in point.values.items())} ({record['wall_s']:.1f} s)"
            )
    return ran, kept
