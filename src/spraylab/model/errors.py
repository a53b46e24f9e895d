"""Bad scenarios as one line per problem: :class:`ScenarioError`, reading TOML files, and
turning pydantic's report into lines that name the key, the value given and what is allowed."""

from __future__ import annotations

import re
import tomllib
import typing
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from spraylab.model.kinds import KindRegistry
from spraylab.topology.base import TOPOLOGIES
from spraylab.workload.base import WORKLOADS

# Sections whose model depends on their ``kind``: an unknown key there lists that kind's keys.
_KIND_REGISTRIES: tuple[KindRegistry[Any], ...] = (TOPOLOGIES, WORKLOADS)
M = TypeVar("M", bound=BaseModel)


@dataclass(frozen=True)
class Problem:
    """One problem of a scenario: the dotted key (``topology.host_rate``, ``workload[1].size``),
    the value given, what is allowed (a text, e.g. ``ecmp, rps, dfs`` or the rate syntax; None if
    the check says nothing more) and the one line the CLI prints."""

    line: str
    key: str | None = None
    value: Any = None
    allowed: str | None = None


class ScenarioError(ValueError):
    """A scenario that cannot be run. ``str(exc)`` and ``lines`` are the CLI's one line per
    problem; ``problems`` the same as :class:`Problem` records, and ``key``, ``value`` and
    ``allowed`` those of the first one (for the common case of a single problem)."""

    def __init__(self, lines: list[str], problems: list[Problem] | None = None) -> None:
        super().__init__("\n".join(lines))
        self.lines = lines
        self.problems = problems if problems is not None else [Problem(line) for line in lines]

    @property
    def key(self) -> str | None:
        return self.problems[0].key if self.problems else None

    @property
    def value(self) -> Any:
        return self.problems[0].value if self.problems else None

    @property
    def allowed(self) -> str | None:
        return self.problems[0].allowed if self.problems else None


def read_toml(path: str | Path, what: str) -> dict[str, Any]:
    """A TOML file as a dict; unreadable or malformed files raise a one-line ScenarioError."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ScenarioError([f"{path}: cannot read {what} file ({exc.strerror or exc})"]) from None
    except UnicodeDecodeError as exc:
        raise ScenarioError(
            [
                f"{path}: not a text file (byte {exc.object[exc.start]:#04x} at offset {exc.start} is not "
                f"UTF-8); a {what} file is TOML text"
            ]
        ) from None
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ScenarioError([f"{path}: not valid TOML: {exc}"]) from None


def format_errors(exc: ValidationError, data: dict[str, Any], root: type[BaseModel]) -> list[str]:
    """One line per error of validating ``data`` (the raw dict) against ``root``."""
    return [problem.line for problem in problems_of(exc, data, root)]


# What a message says is allowed: "...; allowed: a, b" or "...: use a number with bps, ...".
_ALLOWED_TEXT = re.compile(r"(?:allowed(?: keys)?: |: use |should be )(.+)$")


def _allowed_in(msg: str) -> str | None:
    found = _ALLOWED_TEXT.search(msg)
    return found.group(1) if found else None


def problems_of(exc: ValidationError, data: dict[str, Any], root: type[BaseModel]) -> list[Problem]:
    """One :class:`Problem` per error of validating ``data`` (the raw dict) against ``root``."""
    problems: list[Problem] = []
    for error in exc.errors():
        key, value = _loc(error, data)
        kind = error["type"]
        msg = str(error.get("msg", "")).removeprefix("Value error, ")
        allowed = _allowed_in(msg)
        if kind == "extra_forbidden":
            allowed = _allowed_keys(tuple(error["loc"]), data, root) or None
            line = f"{key} = {value!r}: unknown key" + (f"; allowed keys: {allowed}" if allowed else "")
        elif kind == "missing" and error["loc"] and isinstance(error["loc"][-1], int):
            # An item of a fixed-length list (a link's two ends): show the list as given.
            key = key.rpartition("[")[0]
            line = f"{key} = {value!r}: too few items (item {error['loc'][-1]} is missing)"
        elif kind == "missing":
            line = f"{key}: missing; this section or key is required"
        elif kind == "missing_kind":  # raised by spraylab.registry; the table itself is no help
            line = f"{key}: {msg}"
        elif msg.startswith(f"{key} ") or (key and msg.startswith(key.split(".")[0].split("[")[0] + ".")):
            line = msg  # the message names its key already (cross-field checks)
            named = re.match(r"([\w.\[\]]+) = ", msg)  # and, for one key, the value it names
            if named and named.group(1) != key:
                key = named.group(1)
                value = _lookup(data, key, value)
        elif (
            key and kind == "value_error" and isinstance(value, dict) and _model_at(error["loc"], data, root)
        ):
            # A check across the keys of one table (a claim's reference and value) names keys
            # relative to it; the table itself, printed whole, would bury them.
            line = f"{key}: {msg}"
        else:
            line = f"{key} = {value!r}: {msg}" if key else msg
        problems.append(Problem(line, key or None, value, allowed))
    return problems


def parse_model(root: type[M], data: Any, source: str = "") -> M:
    """``data`` (a TOML file's dict) validated against ``root``; a bad file raises
    :class:`ScenarioError`, one line per problem (prefixed with ``source``), as a scenario does."""
    try:
        return root.model_validate(data)
    except ValidationError as exc:
        prefix = f"{source}: " if source else ""
        raw = data if isinstance(data, dict) else {}
        problems = [Problem(prefix + p.line, p.key, p.value, p.allowed) for p in problems_of(exc, raw, root)]
        raise ScenarioError([p.line for p in problems], problems) from None


def _lookup(data: dict[str, Any], key: str, default: Any) -> Any:
    """The raw value at a dotted key (``workload[1].size``), or ``default`` if it is not there."""
    node: Any = data
    for part in re.findall(r"[^.\[\]]+|\[\d+\]", key):
        if part.startswith("[") and isinstance(node, list) and int(part[1:-1]) < len(node):
            node = node[int(part[1:-1])]
        elif isinstance(node, dict) and part in node:
            node = node[part]
        else:
            return default
    return node


def _loc(error: Any, data: dict[str, Any]) -> tuple[str, Any]:
    """Dotted key of an error (``workload[1].size``), and the offending input value."""
    parts: list[str] = []
    node: Any = data
    for item in error["loc"]:
        if isinstance(item, int):
            if parts and isinstance(node, list):
                parts[-1] = f"{parts[-1]}[{item}]"
            elif parts and isinstance(node, dict):
                continue  # a single table given for a list: no index to show
        else:
            parts.append(item)
        if (
            isinstance(node, dict)
            and item in node
            or isinstance(node, list)
            and isinstance(item, int)
            and item < len(node)
        ):
            node = node[item]
        else:
            node = None
    return ".".join(parts), error.get("input")


def _allowed_keys(raw_loc: tuple[Any, ...], data: dict[str, Any], root: type[BaseModel]) -> str:
    """The keys the section holding an unknown key accepts (for a section with a ``kind``, the
    keys of the kind given)."""
    model = _model_at(raw_loc[:-1], data, root)
    return ", ".join(model.model_fields) if model is not None else ""


def _model_at(raw_loc: tuple[Any, ...], data: Any, root: type[BaseModel]) -> type[BaseModel] | None:
    """The model of the table at ``raw_loc`` (for a section with a ``kind``, the kind's), or None
    if the location is not a table of the schema."""
    model: type[BaseModel] = root
    node: Any = data
    named = False  # the item is a name of a table of tables (``[references.NAME]``)
    for item in raw_loc:
        if isinstance(item, int) or named:
            if isinstance(node, list) and isinstance(item, int):
                node = node[item] if item < len(node) else None
            elif named:
                node = node.get(item) if isinstance(node, dict) else None
            named = False
            continue  # a single table given for a list stays that table
        field = _of_kind(model, node).model_fields.get(item)
        section = _section_model(field.annotation) if field is not None else None
        if section is None:
            return None
        node = node.get(item) if isinstance(node, dict) else None
        model = section
        named = typing.get_origin(_bare(field.annotation)) is dict  # type: ignore[union-attr]
    return _of_kind(model, node)


def _bare(annotation: Any) -> Any:
    """The annotation without ``Annotated`` and ``| None``."""
    while True:
        if typing.get_origin(annotation) is typing.Annotated:
            annotation = typing.get_args(annotation)[0]
            continue
        args = [a for a in typing.get_args(annotation) if a is not type(None)]
        if len(args) == 1 and type(None) in typing.get_args(annotation):
            annotation = args[0]
            continue
        return annotation


def _of_kind(model: type[BaseModel], node: Any) -> type[BaseModel]:
    for registry in _KIND_REGISTRIES:
        if model is registry.base:
            return registry.model_of(node) or model
    # A section with fields from a registry (transport: the congestion controls' own sections)
    registered = getattr(model, "registered_model", None)
    return registered() if registered is not None else model


def _section_model(annotation: Any) -> type[BaseModel] | None:
    """The section model of a field: itself, or the item of a list or optional of one
    (``topology.events`` is ``list[LinkEvent]``: an unknown key there lists LinkEvent's keys)."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    for arg in typing.get_args(annotation):
        found = _section_model(arg)
        if found is not None:
            return found
    return None
