"""Which stored runs a report compares: a sweep's points grouped into columns (the ``by`` axes),
pooled over seeds (``over``), one group per combination of the other axes."""

from __future__ import annotations

import itertools
import json
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from spraylab.metrics.result import Result
from spraylab.results import provenance
from spraylab.results.store import Store
from spraylab.sweeps.sweep import SEED_AXIS, StoredPoint, stored_points


class ReportError(Exception):
    """Bad compare/report request (unknown axis, baseline or metric): one line, for the CLI."""


# --- grouping the points of a sweep ---------------------------------------------------------


@dataclass
class Group:
    """The points sharing one combination of the axes that are neither columns nor seeds."""

    values: dict[str, str]
    cells: dict[str, list[StoredPoint]]  # column label → points (every status)

    @property
    def title(self) -> str:
        return ", ".join(f"{k} = {v}" for k, v in self.values.items()) or "all runs"

    def slug(self, index: int) -> str:
        text = "_".join(f"{k.split('.')[-1]}-{v}" for k, v in self.values.items())
        text = re.sub(r"[^A-Za-z0-9._-]+", "", text)[:48]
        return f"g{index + 1}" + (f"-{text}" if text else "")


COMPARE_INDEX = "compare.json"  # a comparison's columns: label → run directory, in order
COMPARE_AXIS = "lb"  # the one axis of a comparison (its variants: scheme[params]/recovery)


class CompareStore:
    """A comparison's directory (``spraylab compare --out``, ``spraylab demo``) read as a store:
    one run per column, in the subdirectory ``compare.json`` names (a comparison written before
    that index existed: every run subdirectory, labelled by its name). Only what a report reads:
    ``load``, ``summary``, ``error``."""

    def __init__(self, root: str | Path) -> None:
        self.root = Path(root)
        index = self.root / COMPARE_INDEX
        if index.is_file():
            data = json.loads(index.read_text())
            self.name = str(data.get("name", self.root.name))
            self.columns: dict[str, str] = {str(k): str(v) for k, v in data["columns"].items()}
        else:
            self.name = self.root.name
            self.columns = {d.name: d.name for d in sorted(self.root.iterdir()) if _is_result(d)}

    def load(self, key: str) -> Result:
        return Result.load(self.root / key)

    def summary(self, key: str) -> dict[str, Any]:
        return json.loads((self.root / key / "summary.json").read_text())

    def error(self, key: str) -> dict[str, Any]:
        return {}  # a comparison stores no failed runs: the command stops at the first error

    def status(self, key: str) -> str:
        if not _is_result(self.root / key):
            return "missing"
        return "done" if self.summary(key).get("completed", True) else "incomplete"


def _is_result(path: Path) -> bool:
    from spraylab.metrics.result import RESULT_FILES

    return path.is_dir() and all((path / name).is_file() for name in RESULT_FILES)


def is_comparison(root: str | Path) -> bool:
    """``root`` holds a comparison (not a sweep store)."""
    from spraylab.results.output import kind_of

    root = Path(root)
    return not (root / "sweep.json").is_file() and kind_of(root) == "compare"


def compare_data(root: str | Path, by: Iterable[str] | None = None) -> SweepData:
    """A comparison as :class:`SweepData`: one column per run, on the axis ``lb``, one group, no
    pooling; the baseline is its first column (``ecmp`` in the demo)."""
    store = CompareStore(root)
    for key in by or []:
        if key != COMPARE_AXIS:
            raise ReportError(f"--by {key!r}: a comparison has one axis, {COMPARE_AXIS!r} (its schemes)")
    labels = list(store.columns)
    if not labels:
        raise ReportError(f"{root}: a comparison directory holding no run results")
    points = [
        StoredPoint(d, {COMPARE_AXIS: label}, {COMPARE_AXIS: label}, store.status(d))
        for label, d in store.columns.items()
    ]
    group = Group({}, {p.labels[COMPARE_AXIS]: [p] for p in points})
    return SweepData(
        store,  # type: ignore[arg-type]  # duck-typed: the reads a report makes
        store.name,
        {COMPARE_AXIS: labels},
        [COMPARE_AXIS],
        None,
        labels,
        [group],
        points,
        labels[0],
    )


@dataclass
class SweepData:
    store: Store
    name: str
    axes: dict[str, list[str]]  # axis → value labels, in sweep order
    by: list[str]
    over: str | None
    columns: list[str]
    groups: list[Group]
    points: list[StoredPoint]
    default_baseline: str | None = None
    _results: dict[str, Result] = field(default_factory=dict, repr=False)

    def result(self, key: str) -> Result:
        if key not in self._results:
            self._results[key] = self.store.load(key)
        return self._results[key]

    def counts(self) -> dict[str, int]:
        out = {"done": 0, "incomplete": 0, "failed": 0, "missing": 0, "corrupt": 0}
        for p in self.points:
            out[p.status] = out.get(p.status, 0) + 1
        return out

    def incomplete(self) -> list[tuple[StoredPoint, dict[str, Any]]]:
        """Stored runs whose workload did not finish, with their summaries."""
        return [(p, self.store.summary(p.key)) for p in self.points if p.status == "incomplete"]

    def other_versions(self) -> list[tuple[StoredPoint, str]]:
        """Stored runs made by another spraylab version or commit, with what made them."""
        now = provenance.current()
        out = []
        for p in self.points:
            if p.status in ("done", "incomplete"):
                summary = self.store.summary(p.key)
                if not provenance.same_version(summary, now):
                    out.append((p, provenance.describe(summary)))
        return out

    def status_line(self) -> str:
        """``12 runs: 10 done, 1 incomplete, 1 failed, 0 missing``."""
        c = self.counts()
        return (
            f"{len(self.points)} runs: {c['done']} done, {c['incomplete']} incomplete, {c['failed']} failed, "
            f"{c['missing'] + c['corrupt']} missing"
        )

    def version_warning(self) -> str | None:
        other = self.other_versions()
        if not other:
            return None
        made = sorted({text for _, text in other})
        return (
            f"{len(other)} of the runs were made by another spraylab version ({', '.join(made)}; "
            f"this is {provenance.describe(provenance.current())}): rerun them with spraylab sweep"
        )


def column_label(point: StoredPoint, by: list[str]) -> str:
    return "/".join(point.labels[k] for k in by) if by else "all"


def sweep_data(root: str | Path, by: Iterable[str] | None = None, over: str | None = SEED_AXIS) -> SweepData:
    """Read the store's index; columns are the values of the ``by`` axes (default: the ``lb`` /
    ``lb.scheme`` axis, else the first axis), runs are pooled over ``over`` (default: seeds), and
    every combination of the remaining axes is a group. A comparison's directory (``spraylab
    compare``, ``spraylab demo``) is read by :func:`compare_data`."""
    if is_comparison(root):
        return compare_data(root, by)
    store = Store(root)
    index = store.read_index()
    axes: dict[str, list[str]] = {axis["key"]: axis["labels"] for axis in index["axes"]}
    by_list = list(by) if by else _default_by(list(axes), over)
    for key in by_list:
        if key not in axes:
            raise ReportError(f"--by {key!r}: not an axis of this sweep; axes: {', '.join(axes)}")
    over_key = over if over in axes and over not in by_list else None
    group_axes = [k for k in axes if k not in by_list and k != over_key]
    points = stored_points(store)
    columns = ["/".join(c) for c in itertools.product(*(axes[k] for k in by_list))] if by_list else ["all"]
    groups = []
    for combo in itertools.product(*(axes[k] for k in group_axes)):
        values = dict(zip(group_axes, combo))
        members = [p for p in points if all(p.labels[k] == v for k, v in values.items())]
        cells = {c: [p for p in members if column_label(p, by_list) == c] for c in columns}
        groups.append(Group(values, cells))
    return SweepData(
        store, index.get("name", ""), axes, by_list, over_key, columns, groups, points, index.get("baseline")
    )


def _default_by(axes: list[str], over: str | None) -> list[str]:
    for key in ("lb", "lb.scheme"):
        if key in axes:
            return [key]
    rest = [k for k in axes if k != over]
    return rest[:1]
