"""The study file's schema: pydantic models, strict like a scenario's, whose problems come back
through the scenario's one-line formatter (:func:`spraylab.model.errors.parse_model`).

The models check what a table says by itself: its keys, their types, the names it picks from a
fixed list (statistics, comparisons, units, analyses, variant labels). What needs the study as a
whole (a claim's sweep and axis values, the metric names, the selected profile, the template
file) is checked when the study is built (:mod:`spraylab.study.definition`).
"""

from __future__ import annotations

from typing import Annotated, Any, Literal, get_args

from pydantic import (
    AfterValidator,
    BeforeValidator,
    Field,
    Strict,
    create_model,
    field_validator,
    model_validator,
)

from spraylab.model.sweep import SEED_AXIS, VARIANT_AXIS, Axes, check_scenario_axes, scenario_sections
from spraylab.model.types import Section

Statistic = Literal["mean", "median", "min", "max", "each"]
Comparison = Literal["<", "<=", ">", ">=", "==", "!="]
# the units spraylab.units formats a page number in
Unit = Literal["ps", "bps", "bytes", "pct", "change", "x", "count", "float"]
STATISTICS: tuple[str, ...] = get_args(Statistic)
COMPARISONS: tuple[str, ...] = get_args(Comparison)
UNITS: tuple[str, ...] = get_args(Unit)


def _one_of(names: tuple[str, ...]) -> BeforeValidator:
    """A value from ``names``, refused with the list as the file writes it (``allowed: <, <=``)."""

    def check(value: Any) -> Any:
        if value not in names:
            raise ValueError(f"allowed: {', '.join(names)}")
        return value

    return BeforeValidator(check)


def _non_empty(value: Any) -> Any:
    if not isinstance(value, str) or not value:
        raise ValueError("required, a non-empty string")
    return value


def _seeds(value: Any) -> Any:
    if (
        not isinstance(value, list)
        or not value
        or not all(isinstance(s, int) and not isinstance(s, bool) and s >= 0 for s in value)
        or len(set(value)) != len(value)
    ):
        raise ValueError("must be a non-empty list of distinct non-negative integers")
    return value


def _store_name(value: Any) -> Any:
    if not isinstance(value, str) or not value or not value.replace("_", "").replace("-", "").isalnum():
        raise ValueError("required: letters, digits, - and _ (it names the sweep's store directory)")
    return value


def _override_tables(value: Any) -> Any:
    if not isinstance(value, dict) or not all(isinstance(v, dict) for v in value.values()):
        raise ValueError("must be a table of named override tables")
    return value


NonEmptyStr = Annotated[str, BeforeValidator(_non_empty)]
# A number as written: an integer or a float, never a string or true/false (and finite: Section)
Number = Annotated[float, Strict()]
Seeds = Annotated[list[int], BeforeValidator(_seeds)]
# ``[profiles.NAME]``: dotted key = value, set in the base scenario ("axes.KEY" = [...]: an axis'
# values) when the study runs with --profile NAME
Profiles = Annotated[dict[str, dict[str, Any]], BeforeValidator(_override_tables)]


# --- sweeps ---------------------------------------------------------------------------------------


class Variant(Section):
    """One entry of ``variants``: a label (``"dfs[B=64]/sr"``) or ``{label, seeds}``."""

    label: str = Field(description="scheme[params]/recovery, as `spraylab compare --lb LABEL`")
    seeds: Seeds | None = Field(
        None, description="this variant's seeds (a bare label: the sweep's `seeds`; a table: default [1])"
    )

    @model_validator(mode="before")
    @classmethod
    def _label(cls, value: Any) -> Any:
        from spraylab.model.variants import VariantError, parse_variant

        bare = isinstance(value, str)
        if bare:
            value = {"label": value}
        if not isinstance(value, dict):
            raise ValueError('each entry is a label or {label = "...", seeds = [...]}')
        if not bare:
            value = {"seeds": [1], **value}  # a table names its seeds: [1] when it leaves them out
        label = value.get("label")
        if isinstance(label, str):
            try:
                parse_variant(label, "label =")
            except VariantError as exc:
                # a bare label is the entry's value already: the line names it once
                short = str(exc).removeprefix(f"label = {label!r}: ")
                raise ValueError(short if bare else str(exc)) from None
        return value


def _variants(value: Any) -> Any:
    if not isinstance(value, list) or not value:
        raise ValueError('must be a non-empty list of labels, e.g. ["ecmp/sr", "dfs[B=64]/sr"]')
    return value


def _distinct_labels(variants: list[Variant]) -> list[Variant]:
    labels = [v.label for v in variants]
    repeated = [label for i, label in enumerate(labels) if label in labels[:i]]
    if repeated:
        raise ValueError(f"repeated label {repeated[0]!r}")
    return variants


Variants = Annotated[list[Variant], BeforeValidator(_variants), AfterValidator(_distinct_labels)]


class StudySweepKeys(Section):
    """The keys of a ``[[sweep]]`` table besides the scenario's sections."""

    name: Annotated[str, BeforeValidator(_store_name)] = Field(
        description="the sweep's name: letters, digits, - and _ (its store directory)"
    )
    base: str | None = Field(
        None,
        description="a scenario file (relative to the study) or a preset; the inline sections go over it",
    )
    variants: Variants | None = Field(None, description="the variant axis: labels or {label, seeds} tables")
    seeds: Seeds = Field([1], description="the seeds of a variant that names none")
    axes: Axes = Field(
        {}, description="further axes, as in a sweep file (cartesian); of an analysis: its parameters"
    )
    profiles: Profiles = Field(
        {}, description="this sweep's own overrides per profile (win over the study's)"
    )
    analysis: str | None = Field(
        None, description="a registered computation (`spraylab.study.analyses`) instead of simulations"
    )
    baseline: str | None = Field(None, description="default baseline column of `compare`")
    only_with_profile: str | None = Field(
        None, description="run this sweep only under this profile (e.g. the full-scale runs)"
    )

    @field_validator("analysis")
    @classmethod
    def _known_analysis(cls, name: str | None) -> str | None:
        from spraylab.study.analyses import ANALYSES

        if name is not None and name not in ANALYSES:
            raise ValueError(f"unknown analysis; allowed: {', '.join(sorted(ANALYSES))}")
        return name

    @model_validator(mode="after")
    def _axes(self) -> StudySweepKeys:
        if self.analysis is not None:
            self._analysis_axes(self.analysis)
            return self
        check_scenario_axes(self.axes)
        own_seeds = "seeds" in self.model_fields_set or any(v.seeds for v in self.variants or ())
        for key, instead in ((VARIANT_AXIS, "variants"), (SEED_AXIS, "seeds")):
            if key in self.axes and (key == VARIANT_AXIS or own_seeds):
                raise ValueError(f"axes.{key} = {self.axes[key]!r}: give {instead} instead")
        return self

    def _analysis_axes(self, analysis: str) -> None:
        from spraylab.study.analyses import ANALYSES

        extra = sorted(self.model_fields_set - {"name", "analysis", "axes", "profiles"})
        if extra:
            raise ValueError(
                f"{extra[0]} = {getattr(self, extra[0])!r}: an analysis sweep takes only name, analysis, "
                "axes and profiles"
            )
        params = ANALYSES[analysis].params
        for key, values in self.axes.items():
            if key not in params:
                raise ValueError(
                    f"axes.{key} = {values!r}: not a parameter of {analysis}; allowed: {', '.join(params)}"
                )
        missing = [p for p in params if p not in self.axes]
        if missing:
            raise ValueError(f"axes.{missing[0]}: missing; {analysis} needs {', '.join(params)}")
        for name, over in self.profiles.items():
            if any(not k.startswith("axes.") for k in over):
                raise ValueError(
                    f'profiles.{name} = {over!r}: an analysis profile only replaces axes ("axes.KEY" = [...])'
                )


StudySweepTable = create_model(
    "StudySweepTable",
    __base__=StudySweepKeys,
    __doc__="One ``[[sweep]]``: a scenario (``base`` and inline sections) under variants and axes, or an analysis.",
    **scenario_sections("a scenario section, merged over the base's"),
)


# --- claims ---------------------------------------------------------------------------------------


def _sweep_names(value: Any) -> Any:
    if isinstance(value, str) or (
        isinstance(value, list) and value and all(isinstance(n, str) for n in value)
    ):
        return value
    raise ValueError('required: a sweep name, a list of them, or "*"')


def _selector(value: Any) -> Any:
    if not isinstance(value, (str, dict)):
        raise ValueError("must be a variant label or a table of axis = value")
    return value


def _for_each(value: Any) -> Any:
    entries = value if isinstance(value, list) else [value]
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
        raise ValueError("must be a table (or a list of tables) of name = string or list of strings")
    return value


# A variant label, or a table of axis = value (a list: any of them; ``*`` in a value: a wildcard)
Selection = Annotated[str | dict[str, Any], BeforeValidator(_selector)]
ForEachTable = dict[str, str | list[str]]


class ReferenceTable(Section):
    """What a claim compares with; a label alone is ``{of = LABEL}``."""

    sweep: str | None = Field(None, description="another sweep's points (default: the claim's sweep)")
    of: Selection | None = Field(None, description="the points (default: the claim's own, paired)")
    metric: str | None = Field(None, description="another metric of the points (a theory: `incast_bound_ps`)")

    @model_validator(mode="before")
    @classmethod
    def _label(cls, value: Any) -> Any:
        if isinstance(value, str):
            return {"of": value}
        if not isinstance(value, dict) or not value:
            raise ValueError("a variant label or a table {sweep, of, metric} (each optional)")
        return value


class ClaimTable(Section):
    """One ``[[claim]]``: a statistic of a metric over some points, compared with a reference or a
    threshold (:mod:`spraylab.study.claims` judges it)."""

    id: NonEmptyStr = Field(description="the claim's name on the page")
    text: str = Field("", description="what the claim says")
    sweep: Annotated[str | list[str], BeforeValidator(_sweep_names)] = Field(
        description='a sweep name, a list of them, or "*"'
    )
    metric: NonEmptyStr = Field(description="a summary key, a study metric, or names joined by + - * /")
    of: Selection = Field({}, description="the points: a variant label or a table of axis values")
    statistic: Annotated[Statistic, _one_of(STATISTICS)] = Field("mean", description="over the points")
    compare: Annotated[Comparison, _one_of(COMPARISONS)] = Field(description="statistic COMPARE reference")
    reference: ReferenceTable | None = Field(None, description="the other side: give it or `value`")
    factor: Number = Field(1.0, description="the reference is multiplied by this")
    value: Number | None = Field(None, description="an absolute threshold instead of a reference")
    tolerance: Number = Field(0.0, ge=0, description="slack of the comparison, in the metric's unit")
    if_not_met: str = Field("", description="what the page says when the claim is not met")
    for_each: Annotated[ForEachTable | list[ForEachTable], BeforeValidator(_for_each)] | None = Field(
        None, description="one claim per combination; `{name}` in its strings is replaced"
    )

    @model_validator(mode="after")
    def _one_side(self) -> ClaimTable:
        if (self.reference is None) == (self.value is None):
            raise ValueError(
                "reference / value: give exactly one (a reference to compare with, or a threshold value)"
            )
        return self


# --- references and the file ------------------------------------------------------------------


class ReferenceNumber(Section):
    """A number from the literature the page compares with: a value or a range, unit, source."""

    value: Number | None = Field(None, description="the number (or give low and high)")
    low: Number | None = Field(None, description="a range's low end")
    high: Number | None = Field(None, description="a range's high end")
    unit: Annotated[Unit, _one_of(UNITS)] = Field(description="how the page formats it")
    source: NonEmptyStr = Field(description="required: where the number comes from")

    @model_validator(mode="after")
    def _value_or_range(self) -> ReferenceNumber:
        if self.value is None and (self.low is None or self.high is None):
            raise ValueError("value: missing; give value, or low and high")
        return self

    @property
    def range(self) -> tuple[float, float]:
        if self.value is not None:
            return self.value, self.value
        assert self.low is not None and self.high is not None  # _value_or_range
        return self.low, self.high


class StudyFile(Section):
    """A study file: sweeps, claims as data, and the page template that reports them."""

    name: str | None = Field(None, description="the study's name (default: the file name)")
    title: str | None = Field(None, description="the page's title (default: the name)")
    template: str = Field(description="the page template (Jinja2), relative to this file")
    profiles: Profiles = Field(
        {}, description="size profiles (`--profile NAME`): overrides of every scenario sweep"
    )
    sweep: list[StudySweepTable] = Field([], description="required: `[[sweep]]` tables, at least one")  # type: ignore[valid-type]
    claim: list[ClaimTable] = Field([], description="`[[claim]]` tables")
    references: dict[str, ReferenceNumber] = Field(
        {}, description="`[references.NAME]`: numbers from the literature"
    )

    @model_validator(mode="after")
    def _has_sweeps(self) -> StudyFile:
        # checked once the keys are: a file of the wrong kind is named by its unknown keys first
        if not self.sweep:
            raise ValueError("[[sweep]]: missing; give at least one sweep table")
        return self
