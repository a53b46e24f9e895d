"""The sweep file's schema: a pydantic model, strict like a scenario's, whose problems come back
through the scenario's one-line formatter (:func:`spraylab.model.errors.parse_model`).

A sweep file has the keys ``name``, ``base``, ``baseline`` and ``axes`` beside the scenario's
own sections, which are kept raw: they are merged over the base scenario and validated as a
scenario point by point (:func:`spraylab.sweeps.sweep.build_points`). The axes' values keep the types
the file gives them (``load_sweep`` shows them so). The study file reuses the axis types
(:mod:`spraylab.study.schema`).
"""

from __future__ import annotations

import json
from typing import Annotated, Any

from pydantic import AfterValidator, BeforeValidator, Field, create_model, model_validator

from spraylab.model.scenario import Scenario
from spraylab.model.types import Section

SEED_AXIS = "run.seed"
VARIANT_AXIS = "variant"  # labelled overrides, see spraylab.model.variants


def flatten_axes(axes: dict[str, Any], prefix: str = "") -> list[tuple[str, Any]]:
    """``"lb.scheme" = [...]`` and ``[axes.lb] scheme = [...]`` both give the key ``lb.scheme``."""
    items = []
    for key, value in axes.items():
        if isinstance(value, dict):
            items.extend(flatten_axes(value, f"{prefix}{key}."))
        else:
            items.append((f"{prefix}{key}", value))
    return items


def _flat(axes: Any) -> Any:
    return dict(flatten_axes(axes)) if isinstance(axes, dict) else axes


def _non_empty_list(values: Any) -> Any:
    if not isinstance(values, list) or not values:
        raise ValueError("must be a non-empty list of values")
    return values


def _distinct(values: list[Any]) -> list[Any]:
    # by content, as the points are keyed: 1 and 1.0 are one value, a table is compared whole
    if len({json.dumps(v, sort_keys=True) for v in values}) != len(values):
        raise ValueError("repeated value")
    return values


# One axis: the values a key takes, each a whole value of the key (a table replaces a section).
AxisValues = Annotated[list[Any], BeforeValidator(_non_empty_list), AfterValidator(_distinct)]
# The axes table, nested tables read as dotted keys.
Axes = Annotated[dict[str, AxisValues], BeforeValidator(_flat)]


def check_variant_axis(values: list[Any]) -> None:
    """The ``variant`` axis takes labels :func:`spraylab.model.variants.parse_variant` reads."""
    from spraylab.model.variants import VariantError, parse_variant

    if not all(isinstance(v, str) for v in values):
        raise ValueError(
            f'axes.{VARIANT_AXIS} = {values!r}: must be a non-empty list of labels, e.g. ["ecmp/sr", "dfs[B=64]/sr"]'
        )
    for value in values:
        try:
            parse_variant(value, f"axes.{VARIANT_AXIS} =")
        except VariantError as exc:
            raise ValueError(str(exc)) from None


def check_scenario_axes(axes: dict[str, list[Any]]) -> dict[str, list[Any]]:
    """Each key of a scenario sweep's axes is the variant axis or a key of a scenario section."""
    for key, values in axes.items():
        section = key.split(".")[0]
        if key == VARIANT_AXIS:
            check_variant_axis(values)
        elif section not in Scenario.model_fields:
            raise ValueError(
                f"axes.{key}: unknown section {section!r}; allowed: {', '.join(Scenario.model_fields)}"
            )
    return axes


def scenario_sections(doc: str) -> dict[str, Any]:
    """The scenario's sections as raw fields of a file model (merged over the base, validated as
    a scenario later): a new section is a key of sweep and study files with no change here."""
    return {name: (Any, Field(default=None, description=doc)) for name in Scenario.model_fields}


class SweepKeys(Section):
    """The keys a sweep file has besides the scenario's sections."""

    name: str | None = Field(None, description="the sweep's name (default: the file name)")
    base: str | None = Field(
        None,
        description="a scenario file (relative to this file) or a preset; the inline sections go over it",
    )
    baseline: str | None = Field(None, description="default baseline column of `compare` and `report`")
    axes: Axes | None = Field(
        None,
        description="required: dotted key = list of values; the runs are the cartesian product. "
        "`variant` takes labels (`dfs[B=64]/sr`), applied first",
    )

    @model_validator(mode="after")
    def _has_axes(self) -> SweepKeys:
        if not self.axes:
            raise ValueError(
                '[axes]: missing or empty; give at least one, e.g. "lb.scheme" = ["ecmp", "rps"]'
            )
        check_scenario_axes(self.axes)
        return self


SweepFile = create_model(
    "SweepFile",
    __base__=SweepKeys,
    __doc__="A sweep file: a base scenario (``base`` and inline sections) and axes.",
    **scenario_sections("a scenario section, merged over the base's"),
)
