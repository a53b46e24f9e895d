"""``spraylab import``, ``export``, ``docs`` and ``view``: files in and out
(:func:`spraylab.formats.importer.import_file`, :func:`spraylab.formats.export.export_result`,
:data:`spraylab.docgen.PAGES`, :func:`spraylab.report.viewer.write_view`)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer

from spraylab.cli.common import SetOption, UsageError, console, parse_overrides, say, split


def import_command(
    tool: Annotated[str, typer.Argument(help="The simulator the files come from: htsim or ns3")],
    topology: Annotated[
        Path | None,
        typer.Option("--topology", "-t", help="htsim .topo fat-tree description, or ns-3 topology.txt"),
    ] = None,
    flows: Annotated[
        Path | None, typer.Option("--flows", "-w", help="htsim connection matrix (.cm), or ns-3 flow.txt")
    ] = None,
    out: Annotated[
        Path | None, typer.Option("--out", "-o", help="Scenario file to write (default: print it)")
    ] = None,
    base: Annotated[
        str | None,
        typer.Option(
            "--base", help="A scenario file or preset for the other sections (and a topology or flows)"
        ),
    ] = None,
    ignore: Annotated[
        str | None,
        typer.Option(
            "--ignore", help="htsim keys to read and drop, e.g. Queue_Up,Queue_Down (= topology.ignore)"
        ),
    ] = None,
    config: Annotated[
        Path | None,
        typer.Option(
            "--config",
            "-c",
            help="ns3: HPCC's config.txt; its payload size, buffer and stop time carry over, the rest is noted",
        ),
    ] = None,
    set_: SetOption = None,
) -> None:
    """Write a scenario that runs an htsim or ns-3 topology and flow file as they are. Every
    line is checked now; a field spraylab cannot model is an error naming its line, and each
    setting of the peer's run that does not carry over is a note."""
    from spraylab.formats.importer import import_file

    overrides = parse_overrides(set_)
    imported = import_file(tool, topology, flows, out, base, split(ignore), overrides, config)
    for note in imported.notes:
        say(f"note: {note}")
    if out is None:
        sys.stdout.write(imported.text)
        return
    imported.write(out)
    say(f"scenario written to {out}: spraylab run {out}")


def export_command(
    result: Annotated[Path, typer.Argument(help="A run's result directory (spraylab run --out DIR)")],
    layout: Annotated[
        str, typer.Option("--format", "-f", help="fct (HPCC ns-3 fct.txt) or htsim (per-flow finish lines)")
    ] = "fct",
    out: Annotated[Path | None, typer.Option("--out", "-o", help="File to write (default: print)")] = None,
) -> None:
    """Write a run's per-flow results as ns-3's fct.txt or htsim's finish lines."""
    from spraylab.formats.export import EXPORT_LAYOUTS, ExportError, export_result

    if layout not in EXPORT_LAYOUTS:
        raise UsageError(EXPORT_LAYOUTS.unknown(layout))
    if out is not None and out.exists():
        raise UsageError(f"--out {out}: exists; refusing to overwrite it")
    try:
        exported = export_result(result, layout)
    except ExportError as exc:
        raise UsageError(str(exc)) from None
    if exported.left_out:
        say(
            f"note: {exported.left_out} flows were not acknowledged to their senders (unfinished) and are not listed"
        )
    say(f"note: ids are {exported.ids}")
    if out is None:
        sys.stdout.write(exported.text)
    else:
        out.write_text(exported.text, encoding="utf-8")


def docs_command(
    page: Annotated[
        str, typer.Argument(help="config (configuration reference) or columns (column dictionary)")
    ],
) -> None:
    """Print a generated documentation page (docs/config-reference.md, docs/columns.md)."""
    from spraylab.docgen import PAGES

    if page not in PAGES:
        raise UsageError(f"docs {page!r}: unknown page; allowed: {', '.join(PAGES)}")
    sys.stdout.write(PAGES[page]())


def view_command(
    run: Annotated[
        Path, typer.Argument(help="A run's result directory (spraylab run --out, or a store run)")
    ],
    out: Annotated[Path | None, typer.Option("--out", "-o", help="The page (default RUN.html)")] = None,
) -> None:
    """Write one self-contained, interactive HTML page of a run (works offline): link x time
    utilization by tier, queue and rate traces, a flow timeline and the scenario card. The time
    series need a run made with a [monitor] section."""
    from spraylab.report.viewer import ViewError, write_view

    if not run.is_dir():
        raise UsageError(f"{run}: no such directory (give a run's result directory)")
    try:
        page = write_view(run, out)
    except ViewError as exc:
        raise UsageError(str(exc)) from None
    console.print(f"{page} written", highlight=False)
