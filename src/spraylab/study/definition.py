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

A scenario sweep runs through :mod:`spraylab.sweep` (its points are keyed by scenario hash, so a
rerun reuses every stored run); the variants axis is :mod:`spraylab.variants`. Every problem is
one :class:`ScenarioError` line naming the key and the value.
"""

from __future__ import annotations

import difflib
import itertools
import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from spraylab.config import ScenarioError, read_toml
from spraylab.sweep import SEED_AXIS, VARIANT_AXIS, Point, Sweep, build_points, merged_base

STUDY_KEYS = ("name", "title", "template", "profiles", "sweep", "claim", "references")
UNITS = ("ps", "bps", "bytes", "pct", "change", "x", "count", "float")
SWEEP_KEYS = (
    "name",
    "base",
    "variants",
    "seeds",
    "axes",
    "profiles",
    "analysis",
    "baseline",
    "only_with_profile",
)
STATISTICS = ("mean", "median", "min", "max", "each")
COMPARISONS = ("<", "<=", ">", ">=", "==", "!=")
CLAIM_KEYS = (
    "id", "text", "sweep", "metric", "of", "statistic", "compare", "reference", "factor", "value",
    "tolerance", "if_not_met", "for_each",
)  # fmt: skip


@dataclass(frozen=True)
class AnalysisPoint:
    """One evaluation of a named analysis: its parameters are its axis values."""

    index: int
    values: dict[str, Any]
    key: str

    @property
    def labels(self) -> dict[str, str]:
        from spraylab.sweep import value_label

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
    unknown = [k for k in data if k not in STUDY_KEYS]
    if unknown:
        raise _err(where, unknown[0], data[unknown[0]], f"unknown key; allowed keys: {', '.join(STUDY_KEYS)}")
    for key in ("name", "title", "template"):
        if key in data and not isinstance(data[key], str):
            raise _err(where, key, data[key], "must be a string")
    if "template" not in data:
        raise ScenarioError(
            [f'{where}template: missing; give the page template, e.g. template = "page.md.j2"']
        )
    template = source.parent / data["template"]
    if not template.is_file():
        raise _err(where, "template", data["template"], f"no such file ({template})")
    profiles = data.get("profiles", {})
    if not isinstance(profiles, dict) or not all(isinstance(v, dict) for v in profiles.values()):
        raise _err(where, "profiles", profiles, "must be a table of named override tables")
    if profile is not None and profile not in profiles and not _sweep_profile_exists(data, profile):
        allowed = sorted(set(profiles) | _sweep_profile_names(data)) or ["none defined"]
        raise _err(where, "--profile", profile, f"not a profile of this study; allowed: {', '.join(allowed)}")
    raw_sweeps = data.get("sweep")
    if not isinstance(raw_sweeps, list) or not raw_sweeps or not all(isinstance(s, dict) for s in raw_sweeps):
        raise ScenarioError([f"{where}[[sweep]]: missing; give at least one sweep table"])
    sweeps: dict[str, StudySweep] = {}
    common = dict(profiles.get(profile, {})) if profile else {}
    for i, raw in enumerate(raw_sweeps):
        only = raw.get("only_with_profile")
        if only is not None and not isinstance(only, str):
            raise _err(f"{where}sweep[{i}].", "only_with_profile", only, "must be a profile name")
        if only is not None and only != profile:
            continue  # e.g. the full-scale runs, only with --profile full
        item = _sweep(
            {k: v for k, v in raw.items() if k != "only_with_profile"}, i, source, where, common, profile
        )
        if item.name in sweeps:
            raise _err(where, f"sweep[{i}].name", item.name, "repeated; every sweep needs its own name")
        sweeps[item.name] = item
    raw_claims = data.get("claim", [])
    if not isinstance(raw_claims, list) or not all(isinstance(c, dict) for c in raw_claims):
        raise _err(where, "claim", raw_claims, "must be an array of tables ([[claim]])")
    claims: list[Claim] = []
    expanded = [(i, c) for i, raw in enumerate(raw_claims) for c in _expand(raw, f"{where}claim[{i}].")]
    skipped = {s.get("name") for s in raw_sweeps if s.get("only_with_profile") not in (None, profile)}
    for i, raw in expanded:
        wanted = raw.get("sweep")
        if isinstance(wanted, str) and wanted in skipped:
            continue  # a claim on a sweep this profile leaves out
        try:
            claim = _claim(raw, i, sweeps, where, profile)
        except _NotInProfile:
            continue
        if any(c.id == claim.id for c in claims):
            raise _err(where, f"claim[{i}].id", claim.id, "repeated; every claim needs its own id")
        claims.append(claim)
    references = _references(data.get("references", {}), where)
    study = Study(
        references=references,
        name=data.get("name") or source.stem,
        title=data.get("title") or data.get("name") or source.stem,
        source=source,
        template=template,
        sweeps=sweeps,
        claims=claims,
        profile=profile,
    )
    from spraylab.study.numbers import check_study

    check_study(study)
    return study


def _references(raw: Any, where: str) -> dict[str, Reference_]:
    if not isinstance(raw, dict):
        raise _err(where, "references", raw, "must be a table of name = {value or low/high, unit, source}")
    out = {}
    for name, item in raw.items():
        here = f"{where}references.{name}."
        if not isinstance(item, dict) or not set(item) <= {"value", "low", "high", "unit", "source"}:
            raise _err(where, f"references.{name}", item, "give value (or low and high), unit and source")
        if not isinstance(item.get("source"), str) or not item["source"]:
            raise _err(here, "source", item.get("source"), "required: where the number comes from")
        if item.get("unit") not in UNITS:
            raise _err(here, "unit", item.get("unit"), f"allowed: {', '.join(UNITS)}")
        if "value" in item:
            low = high = _number(item, "value", here, None)
        else:
            low, high = _number(item, "low", here, None), _number(item, "high", here, None)
        if low is None or high is None:
            raise ScenarioError([f"{here}value: missing; give value, or low and high"])
        out[name] = Reference_(low, high, item["unit"], item["source"])
    return out


def _sweep_profile_names(data: dict[str, Any]) -> set[str]:
    names: set[str] = set()
    for raw in data.get("sweep", []) if isinstance(data.get("sweep"), list) else []:
        if isinstance(raw, dict) and isinstance(raw.get("profiles"), dict):
            names |= set(raw["profiles"])
        if isinstance(raw, dict) and isinstance(raw.get("only_with_profile"), str):
            names.add(raw["only_with_profile"])
    return names


def _expand(raw: dict[str, Any], here: str) -> list[dict[str, Any]]:
    """``for_each = {sweep = ["a", "b"], v = "x"}``: one claim per combination of the lists, with
    ``{sweep}`` and ``{v}`` replaced in every string of the claim; a list of such tables gives
    the union (values that go together: ``[{v = "x", w = "y"}, {v = "z", w = "t"}]``)."""
    spec = raw.get("for_each")
    if spec is None:
        return [raw]
    entries = spec if isinstance(spec, list) else [spec]
    ok = bool(entries) and all(
        isinstance(e, dict)
        and e
        and all(
            isinstance(v, str) or (isinstance(v, list) and v and all(isinstance(x, str) for x in v))
            for v in e.values()
        )
        for e in entries
    )
    if not ok:
        raise _err(
            here,
            "for_each",
            spec,
            "must be a table (or a list of tables) of name = string or list of strings",
        )
    body = {k: v for k, v in raw.items() if k != "for_each"}
    out = []
    for entry in entries:
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


def _sweep_profile_exists(data: dict[str, Any], profile: str) -> bool:
    return profile in _sweep_profile_names(data)


def _sweep(
    raw: dict[str, Any], i: int, source: Path, where: str, common: dict[str, Any], profile: str | None
) -> StudySweep:
    here = f"{where}sweep[{i}]."
    unknown = [k for k in raw if k not in SWEEP_KEYS and k not in _scenario_sections()]
    if unknown:
        allowed = ", ".join((*SWEEP_KEYS, *_scenario_sections()))
        raise _err(here, unknown[0], raw[unknown[0]], f"unknown key; allowed keys: {allowed}")
    name = raw.get("name")
    if not isinstance(name, str) or not name or not name.replace("_", "").replace("-", "").isalnum():
        raise _err(
            here, "name", name, "required: letters, digits, - and _ (it names the sweep's store directory)"
        )
    here = f"{where}sweep {name}: "
    axes_raw = raw.get("axes", {})
    if not isinstance(axes_raw, dict):
        raise _err(here, "axes", axes_raw, "must be a table of axis key = list of values")
    if "analysis" in raw:
        return _analysis_sweep(raw, name, here, profile)
    variants = _variants(raw.get("variants"), here)
    seeds = _seeds(raw.get("seeds", [1]), here, "seeds")
    from spraylab.sweep import _flatten_axes

    other = dict(_flatten_axes(axes_raw))
    for key in (VARIANT_AXIS, SEED_AXIS):
        if key in other and (key != SEED_AXIS or "seeds" in raw or any(s for _, s in variants)):
            raise _err(
                here,
                f"axes.{key}",
                other[key],
                f"give {'variants' if key == VARIANT_AXIS else 'seeds'} instead",
            )
    overrides = dict(common)
    own_profiles = raw.get("profiles", {})
    if not isinstance(own_profiles, dict) or not all(isinstance(v, dict) for v in own_profiles.values()):
        raise _err(here, "profiles", own_profiles, "must be a table of named override tables")
    if profile:
        overrides.update(own_profiles.get(profile, {}))
    axes: dict[str, list[Any]] = {}
    if variants:
        axes[VARIANT_AXIS] = [label for label, _ in variants]
    axes.update({k: v for k, v in other.items() if k != SEED_AXIS})
    seed_axis = other.get(SEED_AXIS)
    all_seeds = sorted({s for _, vs in variants for s in (vs or seeds)}) if variants else (seed_axis or seeds)
    axes[SEED_AXIS] = list(all_seeds)
    if "base" in raw and not isinstance(raw["base"], str):
        raise _err(
            here, "base", raw["base"], "must be a scenario file (relative to the study) or a preset name"
        )
    base = merged_base(raw, source.parent, here)
    # Profile overrides go into the base (they change the scenario, so they change the key).
    from spraylab.config import apply_override

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
            for seed in own or (seed_axis or seeds):
                combos.append(((label,) if label is not None else ()) + tuple(rest) + (seed,))
    from spraylab.budget import check_sweep_points

    run = base.get("run")
    allow_large = isinstance(run, dict) and run.get("allow_large") is True
    check_sweep_points(len(combos), here, allow_large)
    points: list[Point] = build_points(base, axes, here, allow_large, combos)
    sweep = Sweep(
        name=name, base=base, axes=axes, points=points, source=str(source), baseline=raw.get("baseline")
    )
    base_file = source.parent / raw["base"] if isinstance(raw.get("base"), str) else None
    if base_file is not None and not base_file.is_file():
        base_file = None  # a preset
    return StudySweep(
        name=name, axes=axes, sweep=sweep, variants=[label for label, _ in variants], base_file=base_file
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


def _scenario_sections() -> tuple[str, ...]:
    from spraylab.config import Scenario

    return tuple(Scenario.model_fields)


def _variants(raw: Any, here: str) -> list[tuple[str, list[int] | None]]:
    if raw is None:
        return []
    if not isinstance(raw, list) or not raw:
        raise _err(
            here, "variants", raw, 'must be a non-empty list of labels, e.g. ["ecmp/sr", "dfs[B=64]/sr"]'
        )
    from spraylab.variants import VariantError, parse_variant

    out: list[tuple[str, list[int] | None]] = []
    for item in raw:
        if isinstance(item, str):
            label, seeds = item, None
        elif (
            isinstance(item, dict) and isinstance(item.get("label"), str) and set(item) <= {"label", "seeds"}
        ):
            label, seeds = (
                item["label"],
                _seeds(item.get("seeds", [1]), here, f"variants.{item['label']}.seeds"),
            )
        else:
            raise _err(here, "variants", item, 'each entry is a label or {label = "...", seeds = [...]}')
        try:
            parse_variant(label, f"{here}variants =")
        except VariantError as exc:
            raise ScenarioError([str(exc)]) from None
        if any(label == seen for seen, _ in out):
            raise _err(here, "variants", label, "repeated label")
        out.append((label, seeds))
    return out


def _seeds(raw: Any, here: str, key: str) -> list[int]:
    if (
        not isinstance(raw, list)
        or not raw
        or not all(isinstance(s, int) and not isinstance(s, bool) and s >= 0 for s in raw)
        or len(set(raw)) != len(raw)
    ):
        raise _err(here, key, raw, "must be a non-empty list of distinct non-negative integers")
    return list(raw)


def _analysis_sweep(raw: dict[str, Any], name: str, here: str, profile: str | None) -> StudySweep:
    from spraylab.store import canonical_json
    from spraylab.study.analyses import ANALYSES

    analysis = raw["analysis"]
    extra = [k for k in raw if k not in ("name", "analysis", "axes", "profiles")]
    if extra:
        raise _err(
            here, extra[0], raw[extra[0]], "an analysis sweep takes only name, analysis, axes and profiles"
        )
    if analysis not in ANALYSES:
        raise _err(here, "analysis", analysis, f"unknown analysis; allowed: {', '.join(sorted(ANALYSES))}")
    params = ANALYSES[analysis].params
    axes = raw.get("axes", {})
    for key, values in axes.items():
        if key not in params:
            raise _err(
                here, f"axes.{key}", values, f"not a parameter of {analysis}; allowed: {', '.join(params)}"
            )
        if not isinstance(values, list) or not values:
            raise _err(here, f"axes.{key}", values, "must be a non-empty list of values")
    missing = [p for p in params if p not in axes]
    if missing:
        raise ScenarioError([f"{here}axes.{missing[0]}: missing; {analysis} needs {', '.join(params)}"])
    axes = {k: list(axes[k]) for k in params}
    own = raw.get("profiles", {})
    if not isinstance(own, dict) or not all(isinstance(v, dict) for v in own.values()):
        raise _err(here, "profiles", own, "must be a table of named override tables")
    over = own.get(profile, {}) if profile else {}
    if any(not k.startswith("axes.") for k in over):
        raise _err(
            here, f"profiles.{profile}", over, 'an analysis profile only replaces axes ("axes.KEY" = [...])'
        )
    _profile_axes(axes, over, here, profile)
    import hashlib

    points = []
    for i, combo in enumerate(itertools.product(*axes.values())):
        values = dict(zip(axes, combo))
        key = hashlib.sha256(canonical_json({"analysis": analysis, **values}).encode()).hexdigest()[:20]
        points.append(AnalysisPoint(i, values, key))
    return StudySweep(name=name, axes=axes, analysis=analysis, analysis_points=points)


# --- claims -------------------------------------------------------------------------------------


class _NotInProfile(Exception):
    """A claim on points the selected profile leaves out: it is not judged under that profile."""


def _selector(
    raw: Any, axes: dict[str, list[Any]], here: str, key: str, profile: str | None = None
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
    if not isinstance(raw, dict):
        raise _err(here, key, raw, "must be a variant label or a table of axis = value")
    from spraylab.sweep import value_label

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


def _number(raw: dict[str, Any], key: str, here: str, default: float | None) -> float | None:
    value = raw.get(key, default)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise _err(here, key, value, "must be a finite number")
    return float(value)


def _claim(
    raw: dict[str, Any], i: int, sweeps: dict[str, StudySweep], where: str, profile: str | None = None
) -> Claim:
    here = f"{where}claim[{i}]."
    unknown = [k for k in raw if k not in CLAIM_KEYS]
    if unknown:
        raise _err(here, unknown[0], raw[unknown[0]], f"unknown key; allowed keys: {', '.join(CLAIM_KEYS)}")
    for key in ("id", "metric", "compare"):
        if not isinstance(raw.get(key), str) or not raw[key]:
            raise _err(here, key, raw.get(key), "required, a non-empty string")
    here = f"{where}claim {raw['id']}: "
    names = raw.get("sweep")
    if names == "*":
        names = list(sweeps)
    names = [names] if isinstance(names, str) else names
    if not isinstance(names, list) or not names or not all(isinstance(n, str) for n in names):
        raise _err(here, "sweep", raw.get("sweep"), 'required: a sweep name, a list of them, or "*"')
    for n in names:
        if n not in sweeps:
            raise _err(here, "sweep", n, f"no such sweep; sweeps: {', '.join(sweeps)}")
    axes = _common_axes([sweeps[n] for n in names])
    of = _selector(raw.get("of", {}), axes, here, "of", profile)
    statistic = raw.get("statistic", "mean")
    if statistic not in STATISTICS:
        raise _err(here, "statistic", statistic, f"allowed: {', '.join(STATISTICS)}")
    if raw["compare"] not in COMPARISONS:
        raise _err(here, "compare", raw["compare"], f"allowed: {', '.join(COMPARISONS)}")
    if ("reference" in raw) == ("value" in raw):
        raise ScenarioError(
            [f"{here}reference / value: give exactly one (a reference to compare with, or a threshold value)"]
        )
    reference = None
    if "reference" in raw:
        reference = _reference(raw["reference"], sweeps, names, axes, here, profile)
    # known before anything runs: a claim on a misspelt metric would otherwise be found missing
    # only after every run of the study
    _check_metric(here, "metric", raw["metric"], [sweeps[n] for n in names])
    if reference is not None and reference.metric is not None:
        ref_sweeps = [sweeps[reference.sweep]] if reference.sweep else [sweeps[n] for n in names]
        _check_metric(here, "reference.metric", reference.metric, ref_sweeps)
    factor = _number(raw, "factor", here, 1.0)
    tolerance = _number(raw, "tolerance", here, 0.0)
    if tolerance is not None and tolerance < 0:
        raise _err(here, "tolerance", tolerance, "must be >= 0")
    for key in ("text", "if_not_met"):
        if key in raw and not isinstance(raw[key], str):
            raise _err(here, key, raw[key], "must be a string")
    return Claim(
        id=raw["id"],
        text=raw.get("text", ""),
        sweeps=tuple(names),
        metric=raw["metric"],
        of=of,
        statistic=statistic,
        compare=raw["compare"],
        factor=factor if factor is not None else 1.0,
        reference=reference,
        value=_number(raw, "value", here, None),
        tolerance=tolerance or 0.0,
        if_not_met=raw.get("if_not_met", ""),
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
    raw: Any,
    sweeps: dict[str, StudySweep],
    names: list[str],
    axes: dict[str, list[Any]],
    here: str,
    profile: str | None = None,
) -> Reference:
    if isinstance(raw, str):
        return Reference(None, _selector(raw, axes, here, "reference", profile), None)
    if not isinstance(raw, dict) or not set(raw) <= {"sweep", "of", "metric"} or not raw:
        raise _err(here, "reference", raw, "a variant label or a table {sweep, of, metric} (each optional)")
    sweep = raw.get("sweep")
    if sweep is not None and sweep not in sweeps:
        raise _err(here, "reference.sweep", sweep, f"no such sweep; sweeps: {', '.join(sweeps)}")
    ref_axes = sweeps[sweep].axes if sweep else axes
    of = _selector(raw["of"], ref_axes, here, "reference.of", profile) if "of" in raw else None
    if sweep is not None and of is None:
        raise ScenarioError([f"{here}reference.of: missing; points of another sweep need a selector"])
    metric = raw.get("metric")
    if metric is not None and not isinstance(metric, str):
        raise _err(here, "reference.metric", metric, "must be a metric name")
    return Reference(sweep, of, metric)
