"""``--format csv``: the scenario card as ``#`` lines, then one row per metric with its raw
values (pandas: ``read_csv(path, comment='#')``)."""

from __future__ import annotations

import csv
import io

from spraylab.metrics.catalog import raw_unit
from spraylab.results.tables import ResultTable, _plain
from spraylab.table_formats import text_format


@text_format("csv")
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
