"""Result tables, written in any registered format (:data:`spraylab.table_formats.TABLE_FORMATS`:
``table`` for the terminal, ``csv``, ``markdown``, ``json``; one module each).

A :class:`ResultTable` holds raw values (numbers in base units: ps, bps, bytes) and their
formatted text. ``csv`` and ``json`` carry the raw values, so they parse back to the numbers
the run produced; ``table`` and ``markdown`` show the text. Every format starts with the
scenario card (:mod:`spraylab.results.card`): ``#`` lines in CSV, a ``card`` list in JSON."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from rich.console import Console


@dataclass
class Row:
    label: str
    key: str
    unit: str  # the raw values' unit (spraylab.units.UNITS), from the metric catalog
    values: list[Any]  # raw, one per column (None: no value)
    texts: list[str]


@dataclass
class ResultTable:
    title: str
    columns: list[str]
    rows: list[Row] = field(default_factory=list)
    card: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)  # lines under the title (the sweep's status)
    extra: dict[str, Any] = field(default_factory=dict)  # more JSON (the full summaries)

    def add(self, label: str, key: str, unit: str, values: Sequence[Any], texts: Sequence[str]) -> None:
        self.rows.append(Row(label, key, unit, list(values), list(texts)))


def _plain(value: Any) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if hasattr(value, "item"):  # numpy scalars
        return value.item()
    return value


def render(fmt: str, tables: list[ResultTable], console: Console) -> None:
    """Write ``tables`` in the registered format ``fmt``."""
    from spraylab.table_formats import TABLE_FORMATS

    TABLE_FORMATS.get(fmt)(tables, console)


# The formats' own functions, importable from here as before the formats became modules.
_MOVED = {
    "to_csv": "csv_rows",
    "to_json": "json_doc",
    "to_markdown": "markdown",
    "print_table": "terminal",
    "column_chunks": "terminal",
}


def __getattr__(name: str) -> Any:
    if name == "FORMATS":
        from spraylab.table_formats import TABLE_FORMATS

        return TABLE_FORMATS
    if name in _MOVED:
        from importlib import import_module

        return getattr(import_module(f"spraylab.table_formats.{_MOVED[name]}"), name)
    raise AttributeError(f"module 'spraylab.results.tables' has no attribute {name!r}")
