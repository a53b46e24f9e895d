"""Claims as data, judged against the store.

A claim selects points (``sweep`` and ``of``), reads one ``metric`` of each, and compares:

* ``statistic = "mean" | "median" | "min" | "max"``: the statistic over the selected points
  against ``factor`` x the same statistic over the reference points (or the threshold ``value``);
* ``statistic = "each"``: every selected point against its own reference: the point of the
  reference selector that agrees with it on every other axis (the same seed, the same loss
  rate), or, when the reference names only a metric, the same point's value of that metric
  (a theory: ``{metric = "incast_bound_ps"}``).

``compare`` is one of ``< <= > >= == !=``; ``==`` and ``!=`` allow an absolute ``tolerance``. A
claim whose points have no result is *missing*, never met.
"""

from __future__ import annotations

import operator
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from spraylab.study.data import SWEEP_AXIS, Missing, PointData, StudyData, reduce
from spraylab.study.definition import Claim
from spraylab.study.metrics import Q, unit_of
from spraylab.units import format_page

OPS: dict[str, Callable[[float, float], bool]] = {
    "<": operator.lt,
    "<=": operator.le,
    ">": operator.gt,
    ">=": operator.ge,
}


@dataclass(frozen=True)
class Verdict:
    claim: Claim
    met: bool | None  # None: some selected point has no result
    measured: str
    value: Q
    bound: Q

    @property
    def word(self) -> str:
        return "missing" if self.met is None else ("met" if self.met else "not met")


def criterion(claim: Claim) -> str:
    """The claim's test in words, from its data."""
    stat = "every point's" if claim.statistic == "each" else claim.statistic
    lhs = f"{stat} {claim.metric}" + (f" of {claim.of.text()}" if claim.of.values else "")
    factor = "" if claim.factor == 1 else f"{claim.factor:g} x "
    if claim.value is not None:
        rhs = format_page(claim.factor * claim.value, unit_of(claim.metric))
    else:
        ref = claim.reference
        assert ref is not None
        metric = ref.metric or claim.metric
        where = ref.of.text() if ref.of is not None else "the same point"
        if ref.sweep:
            where = f"{where} ({ref.sweep})"
        rstat = "" if claim.statistic == "each" or ref.of is None else f"{claim.statistic} "
        rhs = f"{factor}{rstat}{metric} of {where}"
    unit = unit_of(claim.metric)
    tolerance = f"{claim.tolerance:g} ps" if unit == "ps" else format_page(claim.tolerance, unit)
    tol = f" (within {tolerance})" if claim.tolerance and claim.compare in ("==", "!=") else ""
    return f"{lhs} {claim.compare} {rhs}{tol}"


def _holds(claim: Claim, a: float, b: float) -> bool:
    if claim.compare == "==":
        return abs(a - b) <= claim.tolerance
    if claim.compare == "!=":
        return abs(a - b) > claim.tolerance
    return OPS[claim.compare](a, b)


def _margin(claim: Claim, a: float, b: float) -> float:
    """How far inside the claim a point is (negative: outside), scaled by the bound."""
    scale = abs(b) or 1.0
    if claim.compare in ("<", "<="):
        return (b - a) / scale
    if claim.compare in (">", ">="):
        return (a - b) / scale
    return (claim.tolerance - abs(a - b)) / scale


def evaluate(claim: Claim, data: StudyData) -> Verdict:
    unit = unit_of(claim.metric)
    points = data.points(claim.sweeps, claim.of)
    if not points:
        return Verdict(claim, None, "no point matches", Q(None, unit), Q(None, unit))
    try:
        if claim.statistic == "each":
            return _each(claim, data, points, unit)
        return _aggregate(claim, data, points, unit)
    except Missing:
        have = sum(p.ok for p in points)
        return Verdict(
            claim, None, f"{have}/{len(points)} selected runs in the store", Q(None, unit), Q(None, unit)
        )


def _values(points: list[PointData], metric: str) -> list[float]:
    values = [p.metric(metric) for p in points]
    return [v for v in values if v is not None]


def _aggregate(claim: Claim, data: StudyData, points: list[PointData], unit: str) -> Verdict:
    a = reduce(_values(points, claim.metric), claim.statistic)
    n = f" (n={len(points)})" if len(points) > 1 else ""
    if claim.value is not None:
        b: float | None = claim.factor * claim.value
        ref_text = ""
    else:
        ref = claim.reference
        assert ref is not None
        metric = ref.metric or claim.metric
        ref_points = points if ref.of is None else data.points(ref.sweep or claim.sweeps, ref.of)
        if not ref_points:
            return Verdict(claim, None, "the reference matches no point", Q(a, unit), Q(None, unit))
        r = reduce(_values(ref_points, metric), claim.statistic)
        b = None if r is None else claim.factor * r
        rn = f" (n={len(ref_points)})" if len(ref_points) > 1 else ""
        ratio = f"; ratio {a / r:.3f}" if a is not None and r else ""
        if claim.factor == 1 and ratio:
            ratio = f" (ratio {a / r:.3f})" if a is not None and r else ""
        if claim.factor == 1:
            ref_text = f"{rn}{ratio}"
        else:
            ref_text = f" ({claim.factor:g} x {format_page(r, unit_of(metric))}{rn}{ratio})"
    if a is None or b is None:
        return Verdict(claim, None, "no value", Q(a, unit), Q(b, unit))
    met = _holds(claim, a, b)
    measured = f"{format_page(a, unit)}{n} vs {format_page(b, unit)}{ref_text}"
    return Verdict(claim, met, measured, Q(a, unit), Q(b, unit))


def _pair_key(point: PointData, skip: set[str]) -> tuple[Any, ...]:
    return tuple((k, v) for k, v in sorted(point.labels.items()) if k not in skip)


def _each(claim: Claim, data: StudyData, points: list[PointData], unit: str) -> Verdict:
    ref = claim.reference
    bounds: list[tuple[PointData, float, float]] = []
    if claim.value is not None:
        bounds = [
            (p, v, claim.factor * claim.value) for p in points if (v := p.metric(claim.metric)) is not None
        ]
    elif ref is not None and ref.of is None:
        metric = ref.metric or claim.metric
        for p in points:
            v, r = p.metric(claim.metric), p.metric(metric)
            if v is not None and r is not None:
                bounds.append((p, v, claim.factor * r))
    else:
        assert ref is not None and ref.of is not None
        metric = ref.metric or claim.metric
        skip = set(claim.of.as_dict()) | set(ref.of.as_dict()) | {SWEEP_AXIS}
        pool = {}
        for q in data.points(ref.sweep or claim.sweeps, ref.of):
            pool[(q.sweep if ref.sweep is None else "", _pair_key(q, skip))] = q
        for p in points:
            q = pool.get((p.sweep if ref.sweep is None else "", _pair_key(p, skip)))
            if q is None:
                continue  # no reference run for this point (e.g. a seed only the claim's variant has)
            v, r = p.metric(claim.metric), q.metric(metric)
            if v is not None and r is not None:
                bounds.append((p, v, claim.factor * r))
    if not bounds:
        return Verdict(claim, None, "no point has both a value and a reference", Q(None, unit), Q(None, unit))
    passed = sum(_holds(claim, v, b) for _, v, b in bounds)
    worst, v, b = min(bounds, key=lambda t: _margin(claim, t[1], t[2]))
    fixed = {k for k, v in claim.of.as_dict().items() if not isinstance(v, tuple)}  # one value: implied
    axes = data.study.sweeps[worst.sweep].axes
    fixed |= {k for k, values in axes.items() if len(values) == 1}  # nothing to tell apart
    where = worst.label(skip=tuple(fixed)) or worst.sweep
    if len(data.study.sweeps) > 1 and len(claim.sweeps) > 1:
        where = f"{worst.sweep} {where}"
    measured = f"{passed}/{len(bounds)} points hold; closest: {where}: {format_page(v, unit)} vs {format_page(b, unit)}"
    return Verdict(claim, passed == len(bounds), measured, Q(v, unit), Q(b, unit))


def evaluate_all(data: StudyData) -> list[Verdict]:
    return [evaluate(c, data) for c in data.study.claims]
