"""Changing a raw scenario dict by dotted keys: ``--set``, sweep axes, ``Scenario.with_overrides``."""

from __future__ import annotations

from typing import Any

from spraylab.model.errors import ScenarioError


def set_dotted(data: dict[str, Any], key: str, value: Any) -> None:
    """Set a dotted key (``run.seed``, ``workload.1.size``) in a raw scenario dict. A name applied
    to a list sets it in every entry (``workload.size`` on several ``[[workload]]`` tables); a
    number indexes it. A key that reaches into a plain value or past a list's end raises a
    one-line :class:`ScenarioError`."""
    _set_path(data, key.split("."), value, key, [])


def _set_path(node: Any, parts: list[str], value: Any, key: str, seen: list[str]) -> None:
    part, rest = parts[0], parts[1:]
    where = ".".join(seen)
    if isinstance(node, list):
        if not part.isdigit():
            if not node:
                raise ScenarioError([f"{key} = {value!r}: {where} is an empty list; nothing to set in it"])
            for item in node:
                _set_path(item, parts, value, key, seen)
            return
        index = int(part)
        if index >= len(node):
            allowed = f"index 0..{len(node) - 1}" if node else "it is empty"
            raise ScenarioError([f"{key} = {value!r}: {where} has {len(node)} entries; {allowed}"])
        if not rest:
            node[index] = value
        else:
            _set_path(node[index], rest, value, key, [*seen, part])
        return
    if not isinstance(node, dict):
        raise ScenarioError(
            [f"{key} = {value!r}: {where} is the value {node!r}, not a section; nothing inside it to set"]
        )
    if not rest:
        node[part] = value
        return
    _set_path(node.setdefault(part, {}), rest, value, key, [*seen, part])


def switch_scheme(lb: Any, scheme: Any) -> dict[str, Any]:
    """The ``lb`` section after ``lb.scheme`` is set to ``scheme``: the base's parameters that the
    new scheme accepts carry over, the others are dropped (they belong to the old scheme)."""
    from spraylab.lb.base import REGISTRY

    cls = REGISTRY.find(scheme)
    if cls is None or not isinstance(lb, dict):
        return {"scheme": scheme}  # validation reports the unknown scheme
    return {"scheme": scheme, **{k: v for k, v in lb.items() if k in cls.Params.model_fields}}


def apply_override(data: dict[str, Any], key: str, value: Any) -> None:
    """One override of :meth:`Scenario.with_overrides` and of sweep axes: ``set_dotted``, except
    that a new ``lb.scheme`` keeps only the parameters it accepts (:func:`switch_scheme`)."""
    if key == "lb.scheme":
        data["lb"] = switch_scheme(data.get("lb", {}), value)
    else:
        set_dotted(data, key, value)
