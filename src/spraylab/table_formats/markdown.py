"""``--format markdown``: one pipe table per result table, the card as a quote above it."""

from __future__ import annotations

from spraylab.results.tables import ResultTable
from spraylab.table_formats import text_format


def _md(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", "<br>")


@text_format("markdown")
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
