"""A study file: sweeps, claims as data, and the page template that reports them.

A study is TOML (see ``studies/*.toml``)::

    name = "results"                        # optional (default: the file name)
    title = "Results: spraying over commodity RNICs"
    template = "results.md.j2"              # the page, relative to this file (Jinja2)

    [profiles.quick]                        # optional size profiles (--profile quick): overrides of
    "topology.leaves" = 4                   # every scenario sweep; a sweep's own profile wins

    [[sweep]]
    name = "permutation"
    base = "../scenarios/lb/permutation_128.toml"   # a scenario file or preset (or inline sections)
    variants = ["ecmp/gbn", "rps/ideal", {label = "dfs[B=64]/sr", seeds = [1, 2, 3]}]
    seeds = [1]                             # the seeds of a variant that names none (default [1])
    [sweep.axes]                            # further axes, as in a sweep file (cartesian)
    "workload.0.size" = ["1MB", "8MB"]
    [sweep.profiles.quick]
    "workload.0.size" = "2MB"

    [[sweep]]                               # a computation instead of simulations (spraylab.study.analyses)
    name = "hash"
    analysis = "fat_tree_hash_uniformity"
    [sweep.axes]
    k = [4, 8]

    [[claim]]                               # see spraylab.study.claims
    id = "dfs-vs-ideal"
    text = "symmetric: DFS within reach of ideal spraying"
    sweep = "permutation"
    metric = "completion_ps"
    of = "dfs/sr"                           # a variant label, or a table of axis values
    statistic = "mean"                      # mean | median | min | max | each
    compare = "<="
    reference = "rps/ideal"                 # same forms as `of`, or {metric = "...", of = ...}
    factor = 1.15                           # (or `value = 0` for an absolute threshold)
A scenario sweep runs through :mod:`spraylab.sweeps.sweep` (its points are keyed by scenario hash, so a
rerun reuses every stored run); the variants axis is :mod:`spraylab.model.variants`. The file's keys and
types are its schema's (:mod:`spraylab.study.schema`); what needs the whole study (a claim's sweep,
axis values and metric, the profile, the template file) is checked here. Every problem is one
:class:`ScenarioError` line naming the key and the value.
"""

from __future__ import annotations

import difflib
import hashlib
import itertools
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from spraylab.model.errors import parse_model
from spraylab.model.scenario import ScenarioError, apply_override, read_toml
from spraylab.study.schema import ClaimTable, ReferenceTable, StudyFile, StudySweepKeys
from spraylab.sweeps.sweep import (
    SEED_AXIS,
    VARIANT_AXIS,
    Point,
    Sweep,
    build_points,
    merged_base,
    value_label,
)


@dataclass(frozen=True)
class AnalysisPoint:
    """One evaluation of a named analysis: its parameters are its axis values."""

    index: int
    values: dict[str, Any]
    key: str

    @property
    def labels(self) -> dict[str, str]:
        from spraylab.sweeps.sweep import value_label

        return {k: value_label(v) for k, v in self.values.items()}


@dataclass
class StudySweep:
    name: str
    axes: dict[str, list[Any]]
    sweep: Sweep | None = None  # scenario sweeps
    analysis: str | None = None  # analysis sweeps
    analysis_points: list[AnalysisPoint] = field(default_factory=list)
    variants: list[str] = field(default_factory=list)
    base_file: Path | None = None  # the base scenario file, if the sweep names one

    @property
    def points(self) -> list[Any]:
        return list(self.sweep.points) if self.sweep is not None else list(self.analysis_points)


@dataclass(frozen=True)
class Selector:
    """Axis values a claim or table picks (label strings; ``*`` in a value is a wildcard)."""

    values: tuple[tuple[str, Any], ...] = ()

    def as_dict(self) -> dict[str, Any]:
        return dict(self.values)

    def text(self) -> str:
        d = self.as_dict()
        if list(d) == [VARIANT_AXIS]:
            return str(d[VARIANT_AXIS])
        return ", ".join(f"{k}={v}" for k, v in d.items()) or "every point"


@dataclass(frozen=True)
class Reference:
    """What a claim compares with: other points of a sweep, or the same points' other metric
    (a theory function registered in :mod:`spraylab.study.metrics`)."""

    sweep: str | None  # None: the claim's sweep
    of: Selector | None  # None: the claim's own points (paired)
    metric: str | None  # None: the claim's metric


@dataclass(frozen=True)
class Claim:
    id: str
    text: str
    sweeps: tuple[str, ...]
    metric: str
    of: Selector
    statistic: str
    compare: str
    factor: float = 1.0
    reference: Reference | None = None
    value: float | None = None
    tolerance: float = 0.0
    if_not_met: str = ""


@dataclass(frozen=True)
class Reference_:
    """A number from the literature the page compares with (``[references.NAME]``): a value or
    a range, its unit and its source. It is data of the study, shown as such, never a result."""

    low: float
    high: float
    unit: str
    source: str

    def __str__(self) -> str:
        from spraylab.units import format_page

        if self.low == self.high:
            return f"{format_page(self.low, self.unit)} ({self.source})"
        return f"{format_page(self.low, self.unit)} to {format_page(self.high, self.unit)} ({self.source})"


@dataclass
class Study:
    name: str
    title: str
    source: Path
    template: Path
    sweeps: dict[str, StudySweep]
    claims: list[Claim]
    profile: str | None = None
    references: dict[str, Reference_] = field(default_factory=dict)

    @classmethod
    def load(cls, path: str | Path, profile: str | None = None) -> Study:
        path = Path(path)
        data = read_toml(path, "study")
        return from_dict(data, path, profile)

    def only(self, names: list[str]) -> Study:
        """The study restricted to some sweeps (and the claims on them alone)."""
        import dataclasses

        keep = {n: s for n, s in self.sweeps.items() if n in names}
        claims = [c for c in self.claims if all(n in keep for n in c.sweeps)]
        return dataclasses.replace(self, sweeps=keep, claims=claims)

    def definition(self) -> dict[str, Any]:
        """What ``study.json`` in the store records."""
        return {
            "format": 1,
            "name": self.name,
            "source": str(self.source.resolve()),
            "profile": self.profile,
            "sweeps": list(self.sweeps),
        }


def _err(where: str, key: str, value: Any, what: str) -> ScenarioError:
    return ScenarioError([f"{where}{key} = {value!r}: {what}"])


def from_dict(data: dict[str, Any], source: Path, profile: str | None = None) -> Study:
    where = f"{source}: "
    spec = parse_model(StudyFile, data, str(source))
    template = source.parent / spec.template
    if not template.is_file():
        raise _err(where, "template", spec.template, f"no such file ({template})")
    profiles = set(spec.profiles)
    for item in spec.sweep:
        profiles |= set(item.profiles) | ({item.only_with_profile} if item.only_with_profile else set())
    if profile is not None and profile not in profiles:
        allowed = sorted(profiles) or ["none defined"]
        raise _err(where, "--profile", profile, f"not a profile of this study; allowed: {', '.join(allowed)}")
    common = dict(spec.profiles.get(profile, {})) if profile else {}
    sweeps: dict[str, StudySweep] = {}
    skipped: set[str] = set()
    for i, (item, raw) in enumerate(zip(spec.sweep, data["sweep"], strict=True)):
        if item.only_with_profile not in (None, profile):
            skipped.add(item.name)  # e.g. the full-scale runs, only with --profile full
            continue
        built = _sweep(item, raw, source, where, common, profile)
        if built.name in sweeps:
            raise _err(where, f"sweep[{i}].name", built.name, "repeated; every sweep needs its own name")
        sweeps[built.name] = built
    claims: list[Claim] = []
    for i, raw in enumerate(data.get("claim", [])):
        for expanded in _expand(raw):
            table = parse_model(ClaimTable, expanded, f"{source}: claim[{i}]")
            if isinstance(table.sweep, str) and table.sweep in skipped:
                continue  # a claim on a sweep this profile leaves out
            try:
                claim = _claim(table, sweeps, where, profile)
            except _NotInProfile:
                continue
            if any(c.id == claim.id for c in claims):
                raise _err(where, f"claim[{i}].id", claim.id, "repeated; every claim needs its own id")
            claims.append(claim)
    study = Study(
        references={
            name: Reference_(*ref.range, ref.unit, ref.source) for name, ref in spec.references.items()
        },
        name=spec.name or source.stem,
        title=spec.title or spec.name or source.stem,
        source=source,
        template=template,
        sweeps=sweeps,
        claims=claims,
        profile=profile,
    )
    from spraylab.study.numbers import check_study

    check_study(study)
    return study


def _expand(raw: dict[str, Any]) -> list[dict[str, Any]]:
    """``for_each = {sweep = ["a", "b"], v = "x"}``: one claim per combination of the lists, with
    ``{sweep}`` and ``{v}`` replaced in every string of the claim; a list of such tables gives
    the union (values that go together: ``[{v = "x", w = "y"}, {v = "z", w = "t"}]``). Its
    shape is the schema's (``ClaimTable.for_each``)."""
    spec = raw.get("for_each")
    if spec is None:
        return [raw]
    body = {k: v for k, v in raw.items() if k != "for_each"}
    out = []
    for entry in spec if isinstance(spec, list) else [spec]:
        lists = {k: v if isinstance(v, list) else [v] for k, v in entry.items()}
        for combo in itertools.product(*lists.values()):
            out.append(_substitute(body, dict(zip(lists, combo))))
    return out


def _substitute(value: Any, names: dict[str, str]) -> Any:
    if isinstance(value, str):
        for k, v in names.items():
            value = value.replace("{" + k + "}", v)
        return value
    if isinstance(value, list):
        return [_substitute(v, names) for v in value]
    if isinstance(value, dict):
        return {k: _substitute(v, names) for k, v in value.items()}
    return value


def _sweep(
    item: StudySweepKeys,
    raw: dict[str, Any],
    source: Path,
    where: str,
    common: dict[str, Any],
    profile: str | None,
) -> StudySweep:
    """``raw``: the table as written, whose scenario sections go over the base."""
    here = f"{where}sweep {item.name}: "
    if item.analysis is not None:
        return _analysis_sweep(item, here, profile)
    variants = [(v.label, v.seeds) for v in item.variants or ()]
    overrides = dict(common)
    if profile:
        overrides.update(item.profiles.get(profile, {}))
    axes: dict[str, list[Any]] = {}
    if variants:
        axes[VARIANT_AXIS] = [label for label, _ in variants]
    axes.update({k: v for k, v in item.axes.items() if k != SEED_AXIS})
    seed_axis = item.axes.get(SEED_AXIS)
    default_seeds = seed_axis or item.seeds
    all_seeds = sorted({s for _, vs in variants for s in (vs or item.seeds)}) if variants else default_seeds
    axes[SEED_AXIS] = list(all_seeds)
    base = merged_base(raw, source.parent, here)
    # Profile overrides go into the base (they change the scenario, so they change the key).
    for key, value in overrides.items():
        if key.startswith("axes."):
            continue  # replaces an axis' values, below
        try:
            apply_override(base, key, value)
        except ScenarioError as exc:
            raise ScenarioError([f"{here}profile {profile}: {line}" for line in exc.lines]) from None
    _profile_axes(axes, overrides, here, profile)
    free = [k for k in axes if k not in (VARIANT_AXIS, SEED_AXIS)]
    combos: list[tuple[Any, ...]] = []
    for label, own in variants or [(None, None)]:
        for rest in itertools.product(*(axes[k] for k in free)):
            for seed in own or default_seeds:
                combos.append(((label,) if label is not None else ()) + tuple(rest) + (seed,))
    from spraylab.runs.budget import check_sweep_points

    run = base.get("run")
    allow_large = isinstance(run, dict) and run.get("allow_large") is True
    check_sweep_points(len(combos), here, allow_large)
    points: list[Point] = build_points(base, axes, here, allow_large, combos)
    sweep = Sweep(
        name=item.name, base=base, axes=axes, points=points, source=str(source), baseline=item.baseline
    )
    base_file = source.parent / item.base if item.base is not None else None
    if base_file is not None and not base_file.is_file():
        base_file = None  # a preset
    return StudySweep(
        name=item.name, axes=axes, sweep=sweep, variants=[label for label, _ in variants], base_file=base_file
    )


def _profile_axes(
    axes: dict[str, list[Any]], overrides: dict[str, Any], here: str, profile: str | None
) -> None:
    """``"axes.KEY" = [...]`` in a profile replaces that axis' values (fewer cases)."""
    for key, value in overrides.items():
        if not key.startswith("axes."):
            continue
        axis = key.removeprefix("axes.")
        if axis not in axes or axis in (VARIANT_AXIS, SEED_AXIS):
            raise _err(
                here, f"profile {profile}: {key}", value, f"not an axis of the sweep; axes: {', '.join(axes)}"
            )
        if not isinstance(value, list) or not value:
            raise _err(here, f"profile {profile}: {key}", value, "must be a non-empty list of values")
        axes[axis] = list(value)


def _analysis_sweep(item: StudySweepKeys, here: str, profile: str | None) -> StudySweep:
    """Its parameters are its axes, in the analysis' order (the schema checked they match)."""
    from spraylab.results.store import canonical_json
    from spraylab.study.analyses import ANALYSES

    analysis = item.analysis
    assert analysis is not None
    axes = {k: list(item.axes[k]) for k in ANALYSES[analysis].params}
    _profile_axes(axes, item.profiles.get(profile, {}) if profile else {}, here, profile)
    points = []
    for i, combo in enumerate(itertools.product(*axes.values())):
        values = dict(zip(axes, combo))
        key = hashlib.sha256(canonical_json({"analysis": analysis, **values}).encode()).hexdigest()[:20]
        points.append(AnalysisPoint(i, values, key))
    return StudySweep(name=item.name, axes=axes, analysis=analysis, analysis_points=points)


# --- claims -------------------------------------------------------------------------------------


class _NotInProfile(Exception):
    """A claim on points the selected profile leaves out: it is not judged under that profile."""


def _selector(
    raw: str | dict[str, Any], axes: dict[str, list[Any]], here: str, key: str, profile: str | None = None
) -> Selector:
    if isinstance(raw, str):
        if VARIANT_AXIS not in axes:
            raise _err(
                here,
                key,
                raw,
                "a label selects a variant, and this sweep has no variants; give a table of axis values",
            )
        raw = {VARIANT_AXIS: raw}
    for axis, value in raw.items():
        if axis not in axes:
            raise _err(here, f"{key}.{axis}", value, f"not an axis of the sweep; axes: {', '.join(axes)}")
        wanted = value if isinstance(value, list) else [value]
        labels = {value_label(v) for v in axes[axis]}
        for v in wanted:
            text = value_label(v)
            if "*" not in text and text not in labels:
                if profile is not None and len(wanted) == 1:
                    raise _NotInProfile
                raise _err(
                    here, f"{key}.{axis}", v, f"not a value of the axis; values: {', '.join(sorted(labels))}"
                )
    return Selector(tuple((k, tuple(v) if isinstance(v, list) else v) for k, v in raw.items()))


def _claim(table: ClaimTable, sweeps: dict[str, StudySweep], where: str, profile: str | None = None) -> Claim:
    here = f"{where}claim {table.id}: "
    names = (
        list(sweeps) if table.sweep == "*" else [table.sweep] if isinstance(table.sweep, str) else table.sweep
    )
    for n in names:
        if n not in sweeps:
            raise _err(here, "sweep", n, f"no such sweep; sweeps: {', '.join(sweeps)}")
    axes = _common_axes([sweeps[n] for n in names])
    of = _selector(table.of, axes, here, "of", profile)
    reference = _reference(table.reference, sweeps, axes, here, profile) if table.reference else None
    # known before anything runs: a claim on a misspelt metric would otherwise be found missing
    # only after every run of the study
    _check_metric(here, "metric", table.metric, [sweeps[n] for n in names])
    if reference is not None and reference.metric is not None:
        ref_sweeps = [sweeps[reference.sweep]] if reference.sweep else [sweeps[n] for n in names]
        _check_metric(here, "reference.metric", reference.metric, ref_sweeps)
    return Claim(
        id=table.id,
        text=table.text,
        sweeps=tuple(names),
        metric=table.metric,
        of=of,
        statistic=table.statistic,
        compare=table.compare,
        factor=table.factor,
        reference=reference,
        value=table.value,
        tolerance=table.tolerance,
        if_not_met=table.if_not_met,
    )


# Summary keys of engine or scheme counters, named by what reports them (lb.NAME, fluid.solves,
# l0.binding): open families, as the scheme or engine decides their names.
_OPEN_FAMILIES = ("lb.", "fluid.", "l0.", "drops_")


def _check_metric(here: str, key: str, text: str, items: list[StudySweep]) -> None:
    """Every operand of a claim's metric (a name, or names joined by + - * /) is a summary key
    (:mod:`spraylab.metrics.catalog`) or a registered metric (``study.metrics``). Claims
    on analysis sweeps read the analysis' own keys, known only when it has run: not checked."""
    if any(s.sweep is None for s in items):
        return
    from spraylab.metrics.catalog import CATALOG
    from spraylab.study.metrics import METRICS

    known = {k.partition("[")[0] for k in CATALOG} | set(METRICS)
    for name in text.split()[::2]:  # the operands; the operators are checked when evaluated
        base = name.partition("[")[0]
        if base in known or name.startswith(_OPEN_FAMILIES):
            continue
        close = difflib.get_close_matches(base, sorted(known), n=1)
        hint = f"did you mean {close[0]!r}? " if close else ""
        raise _err(
            here,
            key,
            text,
            f"{name!r} is not a metric; {hint}a metric is a summary key (docs/columns.md) or one of "
            f"{', '.join(sorted(METRICS))}",
        )


def _common_axes(items: list[StudySweep]) -> dict[str, list[Any]]:
    """The axes every listed sweep has, with the union of their values."""
    keys = [k for k in items[0].axes if all(k in s.axes for s in items)]
    out: dict[str, list[Any]] = {}
    for k in keys:
        seen: dict[str, Any] = {}
        for s in items:
            for v in s.axes[k]:
                seen.setdefault(json.dumps(v, sort_keys=True), v)
        out[k] = list(seen.values())
    return out


def _reference(
    table: ReferenceTable,
    sweeps: dict[str, StudySweep],
    axes: dict[str, list[Any]],
    here: str,
    profile: str | None = None,
) -> Reference:
    if table.sweep is not None and table.sweep not in sweeps:
        raise _err(here, "reference.sweep", table.sweep, f"no such sweep; sweeps: {', '.join(sweeps)}")
    ref_axes = sweeps[table.sweep].axes if table.sweep else axes
    of = _selector(table.of, ref_axes, here, "reference.of", profile) if table.of is not None else None
    if table.sweep is not None and of is None:
        raise ScenarioError([f"{here}reference.of: missing; points of another sweep need a selector"])
    return Reference(table.sweep, of, table.metric)
