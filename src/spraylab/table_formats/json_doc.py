"""``--format json``: one object per table (title, card, notes, columns, rows with raw values
and their unit, plus the table's extras such as the full summaries); a list for several."""

from __future__ import annotations

import json

from spraylab.metrics.catalog import raw_unit
from spraylab.results.tables import ResultTable, _plain
from spraylab.table_formats import text_format


@text_format("json")
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
