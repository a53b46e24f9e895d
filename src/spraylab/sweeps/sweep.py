"""Sweeps: a base scenario plus axes, run as independent processes into a results store.

A sweep file is TOML::

    name = "websearch-lb"            # optional (default: the file name)
    base = "../websearch.toml"       # optional: a scenario file (relative to this file) or a preset
    baseline = "ecmp"                # optional: default baseline column of `compare` and `report`

    [topology]                       # optional inline scenario sections, merged over the base
    leaves = 4

    [axes]                           # dotted key → list of values; the runs are the cartesian product
    "lb.scheme" = ["ecmp", "rps", "dfs"]
    "workload.load" = [0.3, 0.6]
    "run.seed" = [1, 2, 3]

The axis ``variant`` takes variant labels (:mod:`spraylab.model.variants`: ``"dfs[B=64]/sr"`` is DFS with
``reorder_bound_packets = 64`` over selective-repeat RNICs), applied before the other axes.

An axis value may be a table that replaces a whole section (``lb = [{scheme = "ecmp"},
{scheme = "dfs", max_paths = 4}]``) or a list (``"topology.events" = [[], [{...}]]``). When an
axis sets ``lb.scheme``, the base's other ``lb`` parameters carry over only where the new scheme
accepts them. The file is validated by its schema (:mod:`spraylab.model.sweep`) and every point
as a scenario before anything runs; problems come back as one line each, naming the key and value.

Each point's scenario is normalized (``run.progress = false``, ``output.dir = ""``: they do not
change results) and keyed by the hash of its full scenario (:func:`spraylab.results.store.scenario_key`).
"""

from __future__ import annotations

import copy
import itertools
import json
import math
import time
import tomllib
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any

from spraylab.model.errors import parse_model
from spraylab.model.scenario import Scenario, ScenarioError, apply_override, read_toml, validate
from spraylab.model.sweep import SEED_AXIS as SEED_AXIS  # the axis names, for the modules that read sweeps
from spraylab.model.sweep import VARIANT_AXIS, SweepFile
from spraylab.results import provenance
from spraylab.results.store import RESULT_STATUSES, Store, StoreError, scenario_key
from spraylab.runs.budget import check as check_budget
from spraylab.runs.budget import check_sweep_points
from spraylab.sweeps.executors import Executor, Outcome, make_executor

# --- definition ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Point:
    """One run of a sweep: its axis values (in axis order), its scenario and store key."""

    index: int
    values: dict[str, Any]
    scenario: Scenario
    key: str

    @property
    def labels(self) -> dict[str, str]:
        return {k: value_label(v) for k, v in self.values.items()}

    @property
    def label(self) -> str:
        return " ".join(f"{k}={v}" for k, v in self.labels.items())


@dataclass
class Sweep:
    name: str
    base: dict[str, Any]  # the raw base scenario (base file merged with inline sections)
    axes: dict[str, list[Any]]
    points: list[Point]
    source: str = ""
    baseline: str | None = None

    @classmethod
    def load(cls, path: str | Path, allow_large: bool = False, engine: str | None = None) -> Sweep:
        """``engine``: ``run.engine`` for every point (the command line's ``--engine``)."""
        path = Path(path)
        data = read_toml(path, "sweep")
        if engine is not None:
            data["run"] = {**(data.get("run") or {}), "engine": engine}
        return cls.from_dict(
            data, source=str(path), base_dir=path.parent, default_name=path.stem, allow_large=allow_large
        )

    @classmethod
    def from_dict(
        cls,
        data: dict[str, Any],
        source: str = "",
        base_dir: Path | None = None,
        default_name: str = "sweep",
        allow_large: bool = False,
    ) -> Sweep:
        """``allow_large``: skip the size guard (:mod:`spraylab.runs.budget`) on the number of points
        and on each point, as ``run.allow_large = true`` in the base does."""
        where = f"{source}: " if source else ""
        spec = parse_model(SweepFile, data, source)
        base = merged_base(data, base_dir or Path("."), where)
        axes: dict[str, list[Any]] = spec.axes
        run = base.get("run")
        allow_large = allow_large or (isinstance(run, dict) and run.get("allow_large") is True)
        # Before the product is expanded: a 10^7-point sweep would take minutes and gigabytes
        # just to validate.
        check_sweep_points(math.prod(len(v) for v in axes.values()), where, allow_large)
        points = build_points(base, axes, where, allow_large)
        return cls(
            name=spec.name or default_name,
            base=base,
            axes=axes,
            points=points,
            source=source,
            baseline=spec.baseline,
        )

    def index(self) -> dict[str, Any]:
        """The JSON index written as ``sweep.json`` in the store."""
        return {
            "format": 1,
            "name": self.name,
            "source": self.source,
            "baseline": self.baseline,
            "spraylab": provenance.version(),
            "axes": [
                {"key": k, "values": list(vs), "labels": [value_label(v) for v in vs]}
                for k, vs in self.axes.items()
            ],
            "base": self.base,
            "points": [{"key": p.key, "values": p.values, "labels": p.labels} for p in self.points],
        }


def value_label(value: Any) -> str:
    """A short text for an axis value: the scheme name for an ``lb`` table, compact JSON otherwise."""
    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, (int, float)):
        return repr(value)
    if isinstance(value, dict) and "scheme" in value:
        params = ",".join(f"{k}={value_label(v)}" for k, v in value.items() if k != "scheme")
        return f"{value['scheme']}({params})" if params else str(value["scheme"])
    return json.dumps(value, separators=(",", ":"), sort_keys=True)


def deep_merge(base: dict[str, Any], over: dict[str, Any]) -> dict[str, Any]:
    out = copy.deepcopy(base)
    for key, value in over.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = deep_merge(out[key], value)
        else:
            out[key] = copy.deepcopy(value)
    return out


def merged_base(data: dict[str, Any], base_dir: Path, where: str = "") -> dict[str, Any]:
    """The raw base scenario of a sweep definition: its ``base`` file or preset with the inline
    scenario sections merged over it."""
    from spraylab.model.files import absolutize

    base = _load_base(data.get("base"), base_dir, where)
    # files named in the sweep itself are relative to the sweep file
    return deep_merge(
        base, absolutize({k: v for k, v in data.items() if k in Scenario.model_fields}, base_dir)
    )


def _load_base(base: str | None, base_dir: Path, where: str) -> dict[str, Any]:
    if base is None:
        return {}
    path = base_dir / base
    if not path.is_file():
        from importlib import resources

        preset = resources.files("spraylab.presets") / f"{base}.toml"
        if preset.is_file():
            return tomllib.loads(preset.read_text())
        raise ScenarioError([f"{where}base = {base!r}: no such scenario file ({path}) or preset"])
    try:
        from spraylab.model.files import absolutize

        # files the base names are relative to the base file
        return absolutize(read_toml(path, "base scenario"), path.resolve().parent)
    except ScenarioError as exc:
        raise ScenarioError([f"{where}base = {base!r}: {line}" for line in exc.lines]) from None


def apply_axes(base: dict[str, Any], values: dict[str, Any]) -> dict[str, Any]:
    """The raw scenario of one point: the base with the axis values set."""
    data = copy.deepcopy(base)
    if VARIANT_AXIS in values:
        from spraylab.model.variants import apply_variant, parse_variant

        data = apply_variant(data, parse_variant(values[VARIANT_AXIS]))
    for key, value in values.items():
        if key != VARIANT_AXIS:
            apply_override(data, key, copy.deepcopy(value))
    return data


def normalize(scenario: Scenario) -> Scenario:
    """Settings that do not change a run's result are fixed, so they do not change its key.
    (``run.allow_large`` is honoured when the points are checked, before this.) A scenario the
    run itself rewrites is keyed as it runs: strategy ``rail_spray`` under ECMP runs as ``rps``
    (:func:`spraylab.workload.rail_strategies.lb_override`), and its result records that scenario."""
    from spraylab.workload.rail_strategies import lb_override

    data = lb_override(scenario).to_dict()
    data["run"]["progress"] = False
    data["run"].pop("allow_large", None)
    data["output"]["dir"] = ""
    return validate(data)


def build_points(
    base: dict[str, Any],
    axes: dict[str, list[Any]],
    where: str = "",
    allow_large: bool = False,
    combos: list[tuple[Any, ...]] | None = None,
) -> list[Point]:
    """Validate every point of the product (or of ``combos``, value tuples in axis order: a
    study's per-variant seeds are not a product); one error line per problem, attributed to the
    base scenario or to an axis value when that alone explains it, else to the point. Then the
    size guard on every point: one line for the first point beyond it, with the count of the others."""
    points: list[Point] = []
    failures: list[tuple[dict[str, Any], list[str]]] = []
    too_large: list[tuple[dict[str, Any], str]] = []
    keys = list(axes)
    for i, combo in enumerate(itertools.product(*axes.values()) if combos is None else combos):
        values = dict(zip(keys, combo))
        try:
            scenario = validate(apply_axes(base, values))
            try:
                check_budget(scenario, allow_large)
            except ScenarioError as exc:
                too_large.append((values, exc.lines[0]))
            scenario = normalize(scenario)
        except ScenarioError as exc:
            failures.append((values, exc.lines))
            continue
        points.append(Point(i, values, scenario, scenario_key(scenario.to_dict())))
    if failures:
        raise ScenarioError(_unique(_attribute(base, failures, where)))
    if too_large:
        values, line = too_large[0]
        label = ", ".join(f"{k}={value_label(v)}" for k, v in values.items())
        others = f" (and {len(too_large) - 1} more of the {len(points)} points)" if len(too_large) > 1 else ""
        raise ScenarioError([f"{where}point {label}{others}: {line}"])
    problems = []
    seen: dict[str, Point] = {}
    for p in points:
        if p.key in seen:
            problems.append(
                f"{where}point {p.label}: same scenario as point {seen[p.key].label} (an axis value has no effect)"
            )
        seen[p.key] = p
    if problems:
        raise ScenarioError(_unique(problems))
    return points


def _errors_of(data: dict[str, Any]) -> list[str]:
    try:
        validate(data)
    except ScenarioError as exc:
        return exc.lines
    return []


def _attribute(
    base: dict[str, Any], failures: list[tuple[dict[str, Any], list[str]]], where: str
) -> list[str]:
    base_errors = set(_errors_of(base))
    single: dict[tuple[str, str], set[str]] = {}
    problems: list[Any] = []  # a line, or (axis key, line with the value left out)
    by_axis: dict[tuple[str, str], list[Any]] = {}
    for values, lines in failures:
        for line in lines:
            if line in base_errors:
                problems.append(f"{where}base scenario: {line}")
                continue
            for key, value in values.items():
                cache_key = (key, json.dumps(value, sort_keys=True))
                if cache_key not in single:
                    single[cache_key] = set(_errors_of(apply_axes(base, {key: value})))
                if line in single[cache_key]:
                    text = line if line.startswith(f"{key} ") else f"{key} = {value!r}: {line}"
                    problem = (key, text.replace(f"{key} = {value!r}", f"{key} = \0", 1))
                    by_axis.setdefault(problem, []).append(value)
                    problems.append(problem)
                    break
            else:
                label = ", ".join(f"{k}={value_label(v)}" for k, v in values.items())
                problems.append(f"{where}point {label}: {line}")
    # One line per axis problem, not per value: an unknown axis key fails every value alike.
    out = []
    for problem in _unique(problems):
        if isinstance(problem, str):
            out.append(problem)
            continue
        values = _unique_values(by_axis[problem])
        shown = repr(values[0]) if len(values) == 1 else repr(values)
        out.append(f"{where}axes: {problem[1].replace(chr(0), shown, 1)}")
    return out


def _unique_values(values: list[Any]) -> list[Any]:
    seen: dict[str, Any] = {}
    for value in values:
        seen.setdefault(json.dumps(value, sort_keys=True), value)
    return list(seen.values())


def _unique(lines: list[str]) -> list[str]:
    return list(dict.fromkeys(lines))


# --- running ------------------------------------------------------------------------------


@dataclass
class SweepOutcome:
    total: int
    done: int = 0
    failed: int = 0
    skipped: int = 0
    incomplete: int = 0  # runs of this invocation whose workload did not finish
    incomplete_kept: int = 0  # skipped runs that are stored as incomplete
    interrupted: bool = False
    failures: list[tuple[Point, dict[str, Any]]] = field(default_factory=list)
    executed: list[str] = field(default_factory=list)  # keys run in this invocation
    wall_s: float = 0.0

    @property
    def not_run(self) -> int:
        return self.total - self.done - self.incomplete - self.failed - self.skipped

    @property
    def any_incomplete(self) -> bool:
        """Some point of the sweep (run now or kept from before) has no complete result."""
        return bool(self.incomplete or self.incomplete_kept)

    def line(self) -> str:
        unfinished = f"{self.incomplete} incomplete, " if self.incomplete else ""
        text = (
            f"{self.total} runs: {self.done} done, {unfinished}{self.failed} failed, {self.skipped} skipped"
        )
        if self.incomplete_kept:
            text += f" ({self.incomplete_kept} of them incomplete)"
        if self.interrupted:
            text = f"interrupted: {text}, {self.not_run} not run"
        return text

    @property
    def ok(self) -> bool:
        return not self.failed and not self.interrupted


class SweepEvents:
    """Hooks for a progress display (all optional)."""

    def start(self, sweep: Sweep, to_run: int, skipped: int) -> None: ...

    def finished(self, point: Point, outcome: Outcome) -> None: ...

    def tick(self) -> None:
        """Called after every poll of the executor (about every ``poll_s``), runs finished or not."""

    def stop(self) -> None: ...


def check_store(sweep: Sweep, store: Store) -> None:
    """Refuse a store that holds another sweep (another name or other axes): its index would be
    silently taken over. A malformed index is refused too (:class:`StoreError`, one line)."""
    if not store.exists():
        return
    index = store.read_index()
    theirs = (index.get("name"), [a["key"] for a in index["axes"]])
    ours = (sweep.name, list(sweep.axes))
    if theirs != ours:
        raise StoreError(
            f"{store.root}: holds the results of sweep {theirs[0]!r} (axes {', '.join(theirs[1])}), "
            f"not of sweep {ours[0]!r} (axes {', '.join(ours[1])}); give another --out"
        )


@dataclass
class Plan:
    """What a sweep invocation will do with each point."""

    todo: list[Point]
    have: list[Point]  # kept: a stored result (complete or incomplete) made by this version
    incomplete: list[Point] = field(default_factory=list)  # of ``have``: stored as incomplete
    other_version: list[Point] = field(default_factory=list)  # stored by another version (rerun or kept)

    def __iter__(self) -> Any:  # ``todo, have = plan(...)``
        return iter((self.todo, self.have))

    def state_of(self, point: Point) -> str:
        """``done``, ``incomplete`` (stored as such, kept) or ``to run`` (``--dry-run`` lists them)."""
        return self._states.get(point.key, "to run")

    @cached_property
    def _states(self) -> dict[str, str]:
        return {p.key: "done" for p in self.have} | {p.key: "incomplete" for p in self.incomplete}


def plan(sweep: Sweep, store: Store, force: bool = False, reuse_other_versions: bool = False) -> Plan:
    """Points to run and points kept from the store. A stored result is kept unless ``force``;
    one made by another spraylab version (or commit) is rerun unless ``reuse_other_versions``."""
    check_store(sweep, store)
    if force:
        return Plan(list(sweep.points), [])
    result = Plan([], [])
    now = provenance.current()
    for point in sweep.points:
        status = store.status(point.key)
        if status not in RESULT_STATUSES:
            result.todo.append(point)
            continue
        summary = store.summary(point.key)
        if not provenance.same_version(summary, now):
            result.other_version.append(point)
            if not reuse_other_versions:
                result.todo.append(point)
                continue
        result.have.append(point)
        if status == "incomplete":
            result.incomplete.append(point)
    return result


def run_sweep(
    sweep: Sweep,
    out: str | Path,
    jobs: int | None = None,
    executor: str | Executor = "local",
    address: str | None = None,
    force: bool = False,
    events: SweepEvents | None = None,
    poll_s: float = 0.5,
    reuse_other_versions: bool = False,
) -> SweepOutcome:
    """Run the points of ``sweep`` that have no result in the store at ``out`` (see :func:`plan`).
    Runs whose workload did not finish are stored as incomplete (``SweepOutcome.incomplete``).

    Failed runs are recorded in the store (``error.json``) and retried by the next invocation;
    the sweep goes on. Ctrl-C stops it: runs in flight are abandoned, finished ones are kept."""
    events = events or SweepEvents()
    with open_sweep(sweep, Store(out), force, reuse_other_versions) as opened:
        if opened.todo:
            pool = make_executor(executor, jobs, address) if isinstance(executor, str) else executor
            events.start(sweep, len(opened.todo), opened.outcome.skipped)
            drive([opened], pool, events, poll_s)
    return opened.outcome


class OpenSweep:
    """One sweep being run (see :func:`open_sweep`): its store, the points to run, and its
    outcome so far. :func:`drive` runs the points of one or several of them."""

    def __init__(self, sweep: Sweep, store: Store, planned: Plan) -> None:
        self.store = store
        self.todo = planned.todo
        self.left = len(planned.todo)  # points not recorded yet
        self.outcome = SweepOutcome(
            total=len(sweep.points), skipped=len(planned.have), incomplete_kept=len(planned.incomplete)
        )
        self.session = uuid.uuid4().hex[:12]
        self.start = time.perf_counter()
        self.closed = False
        store.log(
            "sweep-start",
            session=self.session,
            total=self.outcome.total,
            to_run=self.left,
            skipped=len(planned.have),
        )

    def record(self, point: Point, result: Outcome, executor_name: str) -> None:
        _record(self.store, point, result, self.outcome, self.session, executor_name)
        self.left -= 1
        if not self.left:
            self.close()

    def close(self, interrupted: bool = False) -> None:
        """Log the end of this invocation (once): every point recorded, or ``interrupted``."""
        if self.closed:
            return
        self.closed = True
        self.outcome.interrupted = interrupted
        self.outcome.wall_s = time.perf_counter() - self.start
        self.store.log("sweep-end", session=self.session, **_counts(self.outcome))


@contextmanager
def open_sweep(sweep: Sweep, store: Store, force: bool, reuse_other_versions: bool) -> Iterator[OpenSweep]:
    """Lock ``store`` for this process and plan ``sweep`` into it; a sweep with nothing to run
    is closed at once, one left with points not recorded is closed as interrupted."""
    from spraylab.results.output import check_target

    check_target(store.root, "sweep")
    check_store(sweep, store)
    with store.lock():
        store.remove_stale()
        store.write_index(sweep.index())
        opened = OpenSweep(sweep, store, plan(sweep, store, force, reuse_other_versions))
        if not opened.left:
            opened.close()
        try:
            yield opened
        finally:
            opened.close(interrupted=opened.left > 0)


def drive(opened: list[OpenSweep], pool: Executor, events: SweepEvents, poll_s: float = 0.5) -> None:
    """Run the points of every opened sweep through ``pool``, the first sweep's first: the next
    sweep's points fill the workers the last runs of the one before leave idle. Each sweep is
    closed as its last run is recorded. Ctrl-C stops it: runs in flight are abandoned, finished
    ones are kept, and the open sweeps are closed as interrupted."""
    queue = [(o, point) for o in opened for point in o.todo]
    queue.reverse()
    pending: dict[Any, tuple[OpenSweep, Point]] = {}
    cancel = False
    try:
        while queue or pending:
            while queue and len(pending) < pool.slots:
                o, point = queue.pop()
                pending[pool.submit(point.scenario.to_dict())] = (o, point)
            for handle, result in pool.wait(pending, timeout=poll_s):
                o, point = pending.pop(handle)
                o.record(point, result, pool.name)
                events.finished(point, result)
            events.tick()
    except KeyboardInterrupt:
        cancel = True
        for o in opened:
            o.close(interrupted=True)
    finally:
        pool.shutdown(cancel=cancel or bool(pending))
        events.stop()


def _record(
    store: Store, point: Point, result: Outcome, outcome: SweepOutcome, session: str, executor: str
) -> None:
    timing = {**result.timing, "executor": executor}
    if result.result is not None and scenario_key(result.result.scenario) != point.key:
        # e.g. a Ray worker with another spraylab version: its result is not this point's
        message = (
            "the worker ran a different scenario than submitted (another spraylab version on the worker?)"
        )
        result = Outcome(
            error={"type": "KeyMismatch", "message": message, "traceback": message + "\n"},
            timing=result.timing,
        )
    if result.result is not None:
        store.write_result(point.key, result.result, timing)
        summary = result.result.summary
        finished = bool(summary.get("completed", True))
        if finished:
            outcome.done += 1
        else:
            outcome.incomplete += 1
        store.log(
            "run-done" if finished else "run-incomplete",
            session=session,
            key=point.key,
            point=point.label,
            wall_s=summary.get("wall_s"),
            stop_reason=summary.get("stop_reason"),
        )
    else:
        error = {**(result.error or {}), "point": point.values, "timing": timing}
        store.write_failure(point.key, point.scenario.to_dict(), error)
        outcome.failed += 1
        outcome.failures.append((point, error))
        store.log("run-failed", session=session, key=point.key, point=point.label, error=error.get("message"))
    outcome.executed.append(point.key)


def _counts(outcome: SweepOutcome) -> dict[str, Any]:
    return {
        "total": outcome.total,
        "done": outcome.done,
        "incomplete": outcome.incomplete,
        "failed": outcome.failed,
        "skipped": outcome.skipped,
        "interrupted": outcome.interrupted,
        "wall_s": round(outcome.wall_s, 3),
    }


# --- reading a finished sweep ---------------------------------------------------------------


@dataclass(frozen=True)
class StoredPoint:
    key: str
    values: dict[str, Any]
    labels: dict[str, str]
    status: str


def stored_points(store: Store, check: Callable[[str], str] | None = None) -> list[StoredPoint]:
    """The points of the store's index with their current status (done, incomplete, failed, missing,
    corrupt)."""
    index = store.read_index()
    order = [axis["key"] for axis in index["axes"]]  # JSON objects come back sorted: restore axis order
    status = check or store.status
    return [
        StoredPoint(
            p["key"],
            {k: p["values"][k] for k in order},
            {k: p["labels"][k] for k in order},
            status(p["key"]),
        )
        for p in index["points"]
    ]
