"""``--format table`` (the default): rich tables for the terminal. A table never cuts a number:
when its columns do not fit the width, they are split into several tables that do (each
repeating the row labels), and a column narrower than its longest value folds onto a second line
rather than ending in an ellipsis."""

from __future__ import annotations

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from spraylab.results.tables import ResultTable
from spraylab.table_formats import TABLE_FORMATS


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


@TABLE_FORMATS.register("table")
def write_table(tables: list[ResultTable], console: Console) -> None:
    print_table(console, tables)


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
