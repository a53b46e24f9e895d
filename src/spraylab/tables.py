"""Result tables in four formats: ``table`` (the terminal), ``csv``, ``markdown`` and ``json``.

A :class:`ResultTable` holds raw values (numbers in base units: ps, bps, bytes) and their
formatted text. ``csv`` and ``json`` carry the raw values, so they parse back to the numbers
the run produced; ``table`` and ``markdown`` show the text. Every format starts with the
scenario card (:mod:`spraylab.card`): ``#`` lines in CSV, a ``card`` list in JSON.

A terminal table never cuts a number: when its columns do not fit the width, they are split
into several tables that do (each repeating the row labels), and a column narrower than its
longest value folds onto a second line rather than ending in an ellipsis."""

from __future__ import annotations

import csv
import io
import json
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from spraylab.metrics.catalog import raw_unit

Format = Literal["table", "csv", "markdown", "json"]
FORMATS: tuple[str, ...] = ("table", "csv", "markdown", "json")


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


def to_json(tables: list[ResultTable]) -> str:
    out = []
    for t in tables:
        out.append(
            {
                "title": t.title,
                "card": t.card,
                "notes": t.notes,
                "columns": t.columns,
                "rows": [
                    {
                        "metric": r.label,
                        "key": r.key,
                        "unit": raw_unit(r.unit),
                        "values": {c: _plain(v) for c, v in zip(t.columns, r.values)},
                    }
                    for r in t.rows
                ],
                **t.extra,
            }
        )
    return json.dumps(out[0] if len(out) == 1 else out, indent=2, default=str)


def to_csv(tables: list[ResultTable]) -> str:
    """One header ``table,metric,key,unit,<columns>``; several tables share it when their
    columns agree, else each table starts with its own header."""
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    cards = [line for t in tables for line in t.card]
    for line in dict.fromkeys(cards):
        buf.write(f"# {line}\n")
    header: list[str] | None = None
    for t in tables:
        for note in t.notes:
            buf.write(f"# {note}\n")
        row_header = ["table", "metric", "key", "unit", *t.columns]
        if row_header != header:
            writer.writerow(row_header)
            header = row_header
        for r in t.rows:
            cells = ["" if _plain(v) is None else _plain(v) for v in r.values]
            writer.writerow([t.title, r.label, r.key, raw_unit(r.unit), *cells])
    return buf.getvalue()


def _md(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", "<br>")


def to_markdown(tables: list[ResultTable]) -> str:
    parts = []
    for t in tables:
        lines = [f"### {_md(t.title)}", ""]
        lines += [f"> {_md(line)}  " for line in t.card]
        if t.card:
            lines.append("")
        lines += [f"{_md(note)}  " for note in t.notes]
        if t.notes:
            lines.append("")
        lines.append("| metric | " + " | ".join(_md(c) for c in t.columns) + " |")
        lines.append("|---|" + "---:|" * len(t.columns))
        for r in t.rows:
            lines.append(f"| {_md(r.label)} | " + " | ".join(_md(x) for x in r.texts) + " |")
        parts.append("\n".join(lines))
    return "\n\n".join(parts) + "\n"


def _width(text: str) -> int:
    return max((len(line) for line in text.split("\n")), default=0)


def column_chunks(label_width: int, widths: list[int], total: int) -> list[list[int]]:
    """Column indices split into runs that fit ``total`` characters next to the label column
    (a rich table with borders takes 3 characters per column plus 4)."""
    chunks: list[list[int]] = [[]]
    used = label_width + 4
    for i, w in enumerate(widths):
        need = w + 3
        if chunks[-1] and used + need > total:
            chunks.append([])
            used = label_width + 4
        chunks[-1].append(i)
        used += need
    return chunks


def print_table(console: Console, tables: list[ResultTable]) -> None:
    for t in tables:
        for line in t.card:
            console.print(line, style="dim", markup=False, highlight=False, soft_wrap=True)
        for note in t.notes:
            console.print(note, markup=False, highlight=False, soft_wrap=True)
        label_width = max([_width("metric"), *(_width(r.label) for r in t.rows)])
        widths = [max([_width(c), *(_width(r.texts[i]) for r in t.rows)]) for i, c in enumerate(t.columns)]
        chunks = column_chunks(label_width, widths, console.width)
        for n, chunk in enumerate(chunks):
            title = t.title if len(chunks) == 1 else f"{t.title} ({n + 1}/{len(chunks)})"
            table = Table(title=escape(title), title_justify="left")
            table.add_column("metric", overflow="fold")
            for i in chunk:
                table.add_column(escape(t.columns[i]), justify="right", overflow="fold", min_width=1)
            for r in t.rows:
                table.add_row(escape(r.label), *(escape(r.texts[i]) for i in chunk))
            console.print(table)


def render(fmt: str, tables: list[ResultTable], console: Console) -> None:
    if fmt == "table":
        print_table(console, tables)
        return
    text = {"csv": to_csv, "markdown": to_markdown, "json": to_json}[fmt](tables)
    # straight to the stream: no wrapping, no markup, nothing rich would add
    console.file.write(text if text.endswith("\n") else text + "\n")
    console.file.flush()
