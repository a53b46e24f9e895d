"""The transport's pluggable parts (recovery modes, congestion controls) are picked by name from
:class:`spraylab.registry.Registry` instances (``RECOVERIES``, ``CONGESTION_CONTROLS``): a part is
one module of its package with a ``@register``ed class, and the registry imports every module of
the package once, so adding a part is adding a file. ``Registry`` is importable from here as
before; this module keeps the transport's own helpers."""

from __future__ import annotations

from typing import Any

from spraylab.registry import Registry

__all__ = [
    "Registry",
    "cc_modes",
    "cc_parameters",
    "optional_hook",
    "param_text",
    "recovery_keys",
    "recovery_modes",
]


def optional_hook(obj: object, name: str, base: type) -> Any:
    """``obj.name`` bound, or None when ``obj``'s class does not override ``base.name``: the
    requester binds each optional hook once at creation and skips one that is None, so a hook
    a part does not need costs nothing per packet."""
    if getattr(type(obj), name) is getattr(base, name):
        return None
    return getattr(obj, name)


def recovery_modes() -> dict[str, str]:
    """``transport.recovery`` names -> one-line summary (validation, error hints, ``list``)."""
    from spraylab.transport.recovery.base import RECOVERIES

    return {name: RECOVERIES.classes[name].summary for name in RECOVERIES.names()}


def cc_modes() -> dict[str, str]:
    """``transport.cc`` names -> one-line summary."""
    from spraylab.transport.cc.base import CONGESTION_CONTROLS

    return {name: CONGESTION_CONTROLS.classes[name].summary for name in CONGESTION_CONTROLS.names()}


# The unit each value parser stands for (spraylab.model.types), as ``spraylab list`` prints it.
_UNITS = {"parse_rate_bps": "bits/s", "parse_bytes": "bytes", "parse_time_ps": "ps"}


def cc_parameters(name: str) -> tuple[str, list[tuple[str, Any, str]]]:
    """Congestion control ``name``'s own scenario section (``"transport.X"``, or "" for a
    control without one) and its parameters as (key, default, unit), the unit "" for a
    dimensionless number (``spraylab list``)."""
    from spraylab.transport.cc.base import CONGESTION_CONTROLS

    cc = CONGESTION_CONTROLS.get(name)
    section = cc.params_section
    if not section or cc.section_model is None:
        return "", []
    rows = []
    for key, field in cc.section_model.model_fields.items():
        unit = ""
        for meta in field.metadata:
            func = getattr(meta, "func", None)
            unit = _UNITS.get(getattr(func, "__name__", ""), unit)
        rows.append((key, field.default, unit))
    return f"transport.{section}", rows


def param_text(key: str, default: Any, unit: str) -> str:
    """``key = default unit (as written with units)``, e.g. ``alpha_timer = 1000000 ps (1us)``;
    ``key = default`` for a dimensionless number."""
    from spraylab.units import format_bytes, format_rate, format_time

    if not unit:
        return f"{key} = {default!r}"
    readable = {"ps": format_time, "bits/s": format_rate, "bytes": format_bytes}[unit](default)
    return f"{key} = {default!r} {unit} ({readable})"


def recovery_keys(name: str) -> tuple[str, ...]:
    """The ``[transport]`` keys recovery mode ``name`` reads (``Recovery.reads``)."""
    from spraylab.transport.recovery.base import RECOVERIES

    return RECOVERIES.get(name).reads


def fluid_refused_cc(name: str) -> str:
    """Why the fluid engines cannot stand in for congestion control ``name`` (one line naming
    the key, the value and what is allowed), or "" when they can: they run every flow at its
    converged max-min rate (docs/fluid.md), which a control marked ``fluid_engine = False``
    does not converge to."""
    from spraylab.transport.cc.base import CONGESTION_CONTROLS

    if CONGESTION_CONTROLS.get(name).fluid_engine:
        return ""
    allowed = [n for n in CONGESTION_CONTROLS.names() if CONGESTION_CONTROLS.classes[n].fluid_engine]
    return (
        f"transport.cc = {name!r}: the fluid engines run every flow at its max-min rate, which "
        f"{name} does not converge to; allowed with run.engine other than 'packet': "
        f"{', '.join(allowed)}; or set run.engine = 'packet'"
    )
