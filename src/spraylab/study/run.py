"""Run a study into its store: each scenario sweep through :func:`spraylab.sweep.run_sweep`
(one executor shared by all of them), each analysis point in this process. Points already in
the store are kept (a scenario's key is its hash, so a rerun is free), as for a sweep."""

from __future__ import annotations

import json
import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from spraylab.executors import Executor, Outcome, make_executor
from spraylab.store import Store
from spraylab.study.data import analysis_path, read_analysis
from spraylab.study.definition import Study, StudySweep
from spraylab.sweep import SweepEvents, SweepOutcome, plan, run_sweep


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


class _Shared:
    """One executor for every sweep of the study: ``run_sweep`` shuts its executor down after
    each sweep, so this keeps it alive unless a sweep is cancelled."""

    def __init__(self, pool: Executor) -> None:
        self.pool = pool
        self.name = pool.name
        self.slots = pool.slots

    def submit(self, scenario: dict[str, Any]) -> Any:
        return self.pool.submit(scenario)

    def wait(self, handles: Any, timeout: float) -> list[tuple[Any, Outcome]]:
        return self.pool.wait(handles, timeout)

    def shutdown(self, cancel: bool = False) -> None:
        if cancel:
            self.pool.shutdown(cancel=True)


def prepare(study: Study, out: Path) -> None:
    """Claim ``out`` for the study (refusing a directory spraylab did not write) and record it."""
    from spraylab.output import check_target, write_marker

    check_target(out, "study")
    existing = out / "study.json"
    if existing.is_file():
        theirs = json.loads(existing.read_text()).get("name")
        if theirs != study.name:
            from spraylab.output import OutputError

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
    start = time.perf_counter()
    prepare(study, out)
    outcome = StudyOutcome()
    todo = {
        name: plan(s.sweep, Store(out / name), force, reuse_other_versions).todo
        for name, s in study.sweeps.items()
        if s.sweep is not None
    }
    pool: _Shared | None = None
    try:
        if any(todo.values()):
            pool = _Shared(make_executor(executor, jobs, address))
        for name, s in study.sweeps.items():
            if s.sweep is None:
                outcome.analyses[name] = run_analyses(s, out / name, force, reuse_other_versions, log)
                continue
            if log is not None:
                log(f"{name}: {len(s.sweep.points)} runs, {len(todo[name])} to run")
            result = run_sweep(
                s.sweep, out / name, executor=pool if todo[name] and pool else "local", force=force, events=events,
                reuse_other_versions=reuse_other_versions, jobs=jobs,
            )  # fmt: skip
            outcome.sweeps[name] = result
            if result.interrupted:
                break
    finally:
        if pool is not None:
            pool.pool.shutdown(cancel=outcome.interrupted)
        outcome.wall_s = time.perf_counter() - start
    return outcome


def run_analyses(
    sweep: StudySweep, root: Path, force: bool, reuse_other_versions: bool, log: Any = None
) -> tuple[int, int]:
    from spraylab import provenance
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
