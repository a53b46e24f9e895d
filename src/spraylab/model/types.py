"""Building blocks of every scenario section: the Section base, unit-aware field types, and
fields linked to the plain ``Params`` dataclasses the simulator reads.

Kept apart from :mod:`spraylab.model.scenario` so that the modules that define a topology or a
workload kind (``spraylab.topology.*``, ``spraylab.workload.kinds.*``) can declare their
sections without importing the scenario schema that collects them.
"""

from __future__ import annotations

import dataclasses
from typing import Annotated, Any, TypeVar

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field

from spraylab.units import parse_bytes, parse_rate_bps, parse_time_ps

RateBps = Annotated[int, BeforeValidator(parse_rate_bps), Field(gt=0)]
Bytes = Annotated[int, BeforeValidator(parse_bytes), Field(ge=0)]
PositiveBytes = Annotated[int, BeforeValidator(parse_bytes), Field(gt=0)]
TimePs = Annotated[int, BeforeValidator(parse_time_ps), Field(ge=0)]
PositiveTimePs = Annotated[int, BeforeValidator(parse_time_ps), Field(gt=0)]


def _bytes_or_bdp(value: Any) -> int | str:
    if value == "bdp":
        return value
    try:
        return parse_bytes(value)
    except ValueError as error:
        raise ValueError(f"{error}; or 'bdp' (one base round trip at line rate)") from None


BytesOrBdp = Annotated[int | str, BeforeValidator(_bytes_or_bdp)]

P = TypeVar("P")


class Section(BaseModel):
    # inf and nan are TOML floats, and no key means either (0 means "none" where a key has a
    # "none"): refused as one line rather than a traceback deep in the run (dt_alpha = inf).
    # defer_build: a model's validator is built when first used, not at import; a run validates
    # one Scenario, whose validator holds every section's schema, so building each section's own
    # at import was work for nothing (33 M of a 128-host run's 2.6 G instructions, callgrind)
    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False, defer_build=True)


def one_of(names: list[str] | tuple[str, ...]) -> str:
    """``'a', 'b' or 'c'``: the allowed values of an error line, worded as pydantic words a Literal."""
    quoted = [repr(n) for n in names]
    return quoted[0] if len(quoted) == 1 else f"{', '.join(quoted[:-1])} or {quoted[-1]}"


# --- sections that mirror a Params dataclass -----------------------------------------------------
# The simulator reads frozen dataclasses whose names carry units (``mtu_bytes``); scenario files
# use short keys (``mtu``). A linked field takes its default from the dataclass, so each default
# has one source, and :func:`to_params` builds the dataclass from the section by the links.


def param(defaults: object, name: str, **constraints: Any) -> Any:
    """A section field that fills ``name`` of ``defaults``' dataclass and defaults to its value."""
    if name not in {f.name for f in dataclasses.fields(defaults)}:  # type: ignore[arg-type]
        raise TypeError(f"{type(defaults).__name__} has no field {name!r}")
    return Field(default=getattr(defaults, name), json_schema_extra={"param": name}, **constraints)


def to_params(section: BaseModel, params_cls: type[P], gathered: tuple[str, ...] = (), **nested: Any) -> P:
    """``params_cls`` built from ``section``'s linked fields; ``nested`` gives the fields that are
    sections themselves (already converted), ``gathered`` the section fields the caller passed
    on in one ``nested`` value (the congestion controls' sections, in ``cc_params``). A field
    neither linked, nested nor gathered is an error, so a new key cannot be silently dropped on
    its way to the simulator."""
    kwargs: dict[str, Any] = {k: v for k, v in nested.items() if k not in type(section).model_fields}
    for key, info in type(section).model_fields.items():
        if key in gathered:
            continue
        if key in nested:
            kwargs[key] = nested[key]
            continue
        extra = info.json_schema_extra
        target = extra.get("param") if isinstance(extra, dict) else None
        if not isinstance(target, str):
            raise TypeError(f"{type(section).__name__}.{key} is not linked to a {params_cls.__name__} field")
        kwargs[target] = getattr(section, key)
    return params_cls(**kwargs)
