"""A study's results as the page and the claims read them: points, their status and metrics.

Layout of a study store (``spraylab study run STUDY --out DIR``)::

    DIR/study.json              the study's name, source file, profile and sweeps
    DIR/<sweep>/                one results store per scenario sweep (spraylab.results.store)
    DIR/<sweep>/analysis/<key>.json     one result per point of an analysis sweep

Points come from the *current* study definition, looked up in the store by key, so a page never
shows a run the study no longer asks for, and a point the store lacks shows as missing.
"""

from __future__ import annotations

import contextlib
import json
import re
import statistics
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from spraylab.study.definition import Selector, Study, StudySweep
from spraylab.study.metrics import METRICS, Q, unit_of
from spraylab.units import PS_PER_BYTE_AT_1BPS

SWEEP_AXIS = "sweep"  # every point's values also name its sweep


class MetricError(ValueError):
    """A metric the points do not have (one line)."""


class Missing(Exception):
    """A point without a stored result."""


@dataclass
class PointData:
    sweep: str
    values: dict[str, Any]
    labels: dict[str, str]
    key: str
    status: str  # done | incomplete | failed | missing | corrupt (analyses: done | missing)
    root: Path  # the sweep's store directory
    scenario_dict: dict[str, Any] | None = None
    analysis: dict[str, Any] | None = None
    _cache: dict[str, Any] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return self.status in ("done", "incomplete")

    def label(self, skip: tuple[str, ...] = ()) -> str:
        return " ".join(f"{k}={v}" for k, v in self.labels.items() if k not in skip)

    # lazy views of the stored run
    def summary(self) -> dict[str, Any]:
        if not self.ok:
            raise Missing(self.key)
        if "summary" not in self._cache:
            if self.analysis is not None:
                self._cache["summary"] = self.analysis["metrics"]
            else:
                self._cache["summary"] = json.loads(
                    (self.root / "runs" / self.key / "summary.json").read_text()
                )
        return self._cache["summary"]

    def timing(self) -> dict[str, Any]:
        if not self.ok:
            raise Missing(self.key)
        if self.analysis is not None:
            return {"wall_s": self.analysis.get("wall_s", 0.0)}
        return json.loads((self.root / "runs" / self.key / "timing.json").read_text())

    def result(self) -> Any:
        if not self.ok or self.analysis is not None:
            raise Missing(self.key)
        if "result" not in self._cache:
            from spraylab.results.store import Store

            self._cache["result"] = Store(self.root).load(self.key)
        return self._cache["result"]

    def scenario(self) -> Any:
        if self.scenario_dict is None:
            raise MetricError(f"{self.sweep}: an analysis point has no scenario")
        if "scenario" not in self._cache:
            from spraylab.model.scenario import validate

            self._cache["scenario"] = validate(self.scenario_dict)
        return self._cache["scenario"]

    def build_info(self) -> dict[str, Any]:
        """What building the fabric tells: host count, and for a sender scheme with routes
        (DFS) the paths, base RTT and BDP of the first flow."""
        if "build" not in self._cache:
            from spraylab.net.framing import data_wire_bytes
            from spraylab.runs.experiment import build

            simulation = build(self.scenario())
            net = simulation.net
            info: dict[str, Any] = {"hosts": len(net.hosts)}
            route_info = getattr(net.lb, "route_info", None)
            if route_info is not None and net.qps:
                qp = net.qps[0]
                paths, rtt_ps = route_info(qp)
                bdp_bytes = qp.line_rate_bps * rtt_ps / PS_PER_BYTE_AT_1BPS
                info.update(paths=paths, rtt_ps=rtt_ps, bdp_packets=bdp_bytes / data_wire_bytes(qp.mtu))
            self._cache["build"] = info
        return self._cache["build"]

    def metric(self, name: str) -> float | None:
        """The value of ``name`` for this point (:mod:`spraylab.study.metrics`); raises
        :class:`Missing` when the point has no result and :class:`MetricError` for an unknown name."""
        if name in self._cache:
            return self._cache[name]
        value = evaluate_expression(name, self.metric) if " " in name.strip() else self._metric(name)
        self._cache[name] = value
        return value

    def _metric(self, name: str) -> float | None:
        summary = self.summary()
        if name in summary:
            value = summary[name]
            if value is None or isinstance(value, bool):
                return None if value is None else float(value)
            if not isinstance(value, (int, float)):
                raise MetricError(
                    f"metric {name!r}: not a number in the runs' summaries ({type(value).__name__})"
                )
            return float(value)
        if name.startswith("lb."):
            return None  # a counter of another scheme than this point's
        base, _, arg = name.partition("[")
        if base in METRICS and self.analysis is None:
            return METRICS[base].compute(self, arg.removesuffix("]") or None)
        known = sorted(k for k, v in summary.items() if isinstance(v, (int, float)))
        hint = ", ".join(known[:12]) + (", ..." if len(known) > 12 else "")
        extra = "" if self.analysis is not None else f"; or a registered metric: {', '.join(sorted(METRICS))}"
        raise MetricError(f"metric {name!r}: not in the summaries of sweep {self.sweep} ({hint}){extra}")


_OPS = {"+": 1, "-": 1, "*": 2, "/": 2}


def evaluate_expression(text: str, lookup: Any) -> float | None:
    """``a - b * c``: metrics of one point joined by ``+ - * /`` (spaces around each operator;
    ``*`` and ``/`` bind first). None if an operand is None or a divisor is 0."""
    tokens = text.split()
    if len(tokens) % 2 == 0 or any((tok in _OPS) != (i % 2 == 1) for i, tok in enumerate(tokens)):
        raise MetricError(
            f"metric {text!r}: expected metrics joined by + - * / with spaces around each operator"
        )
    values: list[float | None] = [lookup(tokens[0])]
    ops: list[str] = []
    for op, name in zip(tokens[1::2], tokens[2::2]):
        v = lookup(name)
        if _OPS[op] == 2:
            a = values.pop()
            values.append(
                None if a is None or v is None or (op == "/" and v == 0) else (a * v if op == "*" else a / v)
            )
        else:
            ops.append(op)
            values.append(v)
    if any(v is None for v in values):
        return None
    total = float(values[0])  # type: ignore[arg-type]
    for op, v in zip(ops, values[1:]):
        total = total + v if op == "+" else total - v  # type: ignore[operator]
    return total


def matches(point: PointData, selector: Selector | dict[str, Any] | None) -> bool:
    from spraylab.sweeps.sweep import value_label

    items = selector.as_dict() if isinstance(selector, Selector) else dict(selector or {})
    for axis, wanted in items.items():
        have = point.labels.get(axis) if axis != SWEEP_AXIS else point.sweep
        if have is None:
            return False
        options = wanted if isinstance(wanted, (list, tuple)) else [wanted]
        if not any(_label_match(have, value_label(w)) for w in options):
            return False
    return True


def _label_match(have: str, want: str) -> bool:
    if "*" not in want:
        return have == want
    pattern = "^" + ".*".join(re.escape(part) for part in want.split("*")) + "$"
    return re.match(pattern, have) is not None


def reduce(values: list[float], statistic: str) -> float | None:
    if not values:
        return None
    if statistic == "mean":
        return statistics.fmean(values)
    if statistic == "median":
        return statistics.median(values)
    if statistic == "min":
        return min(values)
    if statistic == "max":
        return max(values)
    if statistic == "sum":
        return sum(values)
    if statistic == "first":
        return values[0]
    raise MetricError(f"statistic {statistic!r}: allowed: mean, median, min, max, sum, first")


class StudyData:
    """The points of every sweep of ``study`` with their stored results under ``root``."""

    def __init__(self, study: Study, root: Path) -> None:
        self.study = study
        self.root = Path(root)
        self.sweeps: dict[str, list[PointData]] = {name: self._points(s) for name, s in study.sweeps.items()}

    def _points(self, sweep: StudySweep) -> list[PointData]:
        root = self.root / sweep.name
        out = []
        if sweep.sweep is not None:
            from spraylab.results.store import Store

            store = Store(root)
            for p in sweep.sweep.points:
                out.append(
                    PointData(
                        sweep.name,
                        dict(p.values),
                        dict(p.labels),
                        p.key,
                        store.status(p.key),
                        root,
                        p.scenario.to_dict(),
                    )
                )
        else:
            for p in sweep.analysis_points:
                record = read_analysis(root, p.key)
                out.append(
                    PointData(
                        sweep.name,
                        dict(p.values),
                        dict(p.labels),
                        p.key,
                        "done" if record else "missing",
                        root,
                        None,
                        record,
                    )
                )
        return out

    def points(self, sweeps: str | list[str] | tuple[str, ...], selector: Any = None) -> list[PointData]:
        names = [sweeps] if isinstance(sweeps, str) else list(sweeps)
        for n in names:
            if n not in self.sweeps:
                raise MetricError(f"sweep {n!r}: not a sweep of this study; sweeps: {', '.join(self.sweeps)}")
        return [p for n in names for p in self.sweeps[n] if matches(p, selector)]

    def counts(self) -> dict[str, int]:
        out: dict[str, int] = {}
        for points in self.sweeps.values():
            for p in points:
                out[p.status] = out.get(p.status, 0) + 1
        return out

    def value(self, sweeps: Any, metric: str, selector: Any = None, statistic: str = "mean") -> Q:
        """``statistic`` of ``metric`` over the selected points (missing points are left out;
        the value is None when none has a result)."""
        values = []
        for p in self.points(sweeps, selector):
            try:
                v = p.metric(metric)
            except Missing:
                continue
            if v is not None:
                values.append(v)
        return Q(reduce(values, statistic), unit_of(metric))

    def wall_s(self) -> float:
        total = 0.0
        for points in self.sweeps.values():
            for p in points:
                if p.ok and p.analysis is None:
                    with contextlib.suppress(OSError, ValueError):
                        total += float(
                            json.loads((p.root / "runs" / p.key / "timing.json").read_text()).get("wall_s", 0)
                        )
                elif p.analysis is not None:
                    total += float(p.analysis.get("wall_s", 0))
        return total

    def versions(self) -> list[str]:
        from spraylab.results import provenance

        seen: dict[str, None] = {}
        for points in self.sweeps.values():
            for p in points:
                if p.ok:
                    record = p.analysis if p.analysis is not None else p.summary()
                    seen.setdefault(provenance.describe(record), None)
        return list(seen)


def analysis_path(root: Path, key: str) -> Path:
    return root / "analysis" / f"{key}.json"


def read_analysis(root: Path, key: str) -> dict[str, Any] | None:
    try:
        record = json.loads(analysis_path(root, key).read_text())
    except (OSError, ValueError):
        return None
    if (
        not isinstance(record, dict)
        or record.get("key") != key
        or not isinstance(record.get("metrics"), dict)
    ):
        return None
    return record
