"""The formats of result tables (``--format``): one module each, registering a writer
``(tables, console) -> None`` under its name. Text formats write their text to the console's
stream untouched (no wrapping, no markup); see :func:`text_format`."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from spraylab.registry import Registry

if TYPE_CHECKING:
    from rich.console import Console

    from spraylab.results.tables import ResultTable

Writer = Callable[["list[ResultTable]", "Console"], None]
TABLE_FORMATS: Registry[Writer] = Registry("--format", "spraylab.table_formats", what="format")


def text_format(
    name: str,
) -> Callable[[Callable[[list[ResultTable]], str]], Callable[[list[ResultTable]], str]]:
    """Register a function ``tables -> text`` as the format ``name``."""

    def register(to_text: Callable[[list[ResultTable]], str]) -> Callable[[list[ResultTable]], str]:
        def write(tables: list[ResultTable], console: Console) -> None:
            text = to_text(tables)
            # straight to the stream: no wrapping, no markup, nothing rich would add
            console.file.write(text if text.endswith("\n") else text + "\n")
            console.file.flush()

        TABLE_FORMATS.register(name)(write)
        return to_text

    return register
