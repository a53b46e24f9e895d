"""Variant labels: ``scheme[key=value,...]/recovery`` as labelled scenario overrides.

``ecmp``, ``rps/ideal``, ``dfs[B=64]/sr``, ``tor_assist[mode=reorder]/gbn``: the scheme (any
registered name), its parameters in brackets (comma-separated ``key=value``, values read as TOML
or as bare words) and, after ``/``, the RNIC's loss recovery. A scheme may declare short names for
its parameters (``LoadBalancer.param_aliases``: DFS's ``B`` is ``reorder_bound_packets``).

One parser serves ``spraylab compare --lb``, ``spraylab demo`` and the ``variant`` axis of sweeps
and studies, so a label means the same run everywhere."""

from __future__ import annotations

import copy
import tomllib
from typing import Any

from spraylab.model.scenario import Scenario, set_dotted, validate


class VariantError(ValueError):
    """A label that names no scheme, a bad parameter list or an unknown recovery (one line)."""


def split_variants(spec: str) -> list[str]:
    """Split on commas that are not inside ``[...]`` parameter lists."""
    items, depth, current = [], 0, ""
    for char in spec:
        depth += {"[": 1, "]": -1}.get(char, 0)
        if char == "," and depth == 0:
            items.append(current.strip())
            current = ""
        else:
            current += char
    items.append(current.strip())
    return [item for item in items if item]


def _value(raw: str) -> Any:
    try:
        return tomllib.loads(f"v = {raw}")["v"]
    except tomllib.TOMLDecodeError:
        return raw  # a bare word such as rps or 400Gbps


def parse_variant(item: str, where: str = "--lb") -> dict[str, Any]:
    """One label → its overrides: ``{"lb": {"scheme": ..., params}, "transport.recovery": ...}``."""
    from spraylab.lb.base import REGISTRY, load_builtin_schemes

    load_builtin_schemes()
    close = item.find("]") + 1  # 0 when there are no parameters
    head, _, recovery = item[close:].partition("/")
    scheme, _, param_text = (item[:close] + head).partition("[")
    if scheme not in REGISTRY:
        raise VariantError(
            f"{where} {item!r}: unknown scheme {scheme!r}; allowed: {', '.join(sorted(REGISTRY))}"
        )
    aliases: dict[str, str] = getattr(REGISTRY[scheme], "param_aliases", {})
    params: dict[str, Any] = {}
    if param_text:
        if not param_text.endswith("]"):
            raise VariantError(
                f"{where} {item!r}: parameters go in brackets, e.g. dfs[reorder_bound_packets=128]"
            )
        for part in (p for p in param_text[:-1].split(",") if p.strip()):
            key, sep, raw = part.partition("=")
            if not sep or not key.strip():
                raise VariantError(f"{where} {item!r}: parameter {part!r}: expected key=value")
            params[aliases.get(key.strip(), key.strip())] = _value(raw)
    overrides: dict[str, Any] = {"lb": {"scheme": scheme, **params}}
    if recovery:
        from spraylab.transport import recovery_names

        if recovery not in recovery_names():
            raise VariantError(
                f"{where} {item!r}: unknown recovery {recovery!r}; allowed: {', '.join(recovery_names())}"
            )
        overrides["transport.recovery"] = recovery
    return overrides


def parse_variants(spec: str, where: str = "--lb") -> list[tuple[str, dict[str, Any]]]:
    """``ecmp,rps/ideal,dfs[reorder_bound_packets=128]/sr`` → [(label, overrides)]."""
    variants = [(item, parse_variant(item, where)) for item in split_variants(spec)]
    if not variants:
        raise VariantError(f"{where}: give at least one scheme, e.g. {where} ecmp,rps")
    return variants


def apply_variant(data: dict[str, Any], overrides: dict[str, Any]) -> dict[str, Any]:
    """A raw scenario dict with a variant's overrides set (a copy). The base's scheme parameters
    carry over only to the same scheme; another scheme starts from its defaults."""
    out = copy.deepcopy(data)
    lb = overrides.get("lb")
    if lb is not None:
        base_lb = out.get("lb") or {}
        kept = base_lb if base_lb.get("scheme", "ecmp") == lb["scheme"] else {}
        out["lb"] = {**kept, **copy.deepcopy(lb)}
    for key, value in overrides.items():
        if key != "lb":
            set_dotted(out, key, copy.deepcopy(value))
    return out


def variant_scenario(base: Scenario, overrides: dict[str, Any]) -> Scenario:
    """The base scenario with a variant's scheme, parameters and recovery mode."""
    return validate(apply_variant(base.to_dict(), overrides))
