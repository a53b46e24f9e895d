"""``spraylab list``: :func:`spraylab.choices` as tables."""

from __future__ import annotations

from rich.markup import escape

from spraylab.cli.common import console


def list_command() -> None:
    """List schemes, topologies, workloads, rail strategies, transport modes and presets."""
    from rich.table import Table

    from spraylab.model.choices import choices
    from spraylab.transport.registry import param_text

    found = choices()

    def table(title: str, columns: tuple[str, ...], rows: list[tuple[str, ...]]) -> None:
        shown = Table(title=title, title_justify="left")
        for col in columns:
            shown.add_column(escape(col))
        for row in rows:
            shown.add_row(*row)
        console.print(shown)

    table(
        "load-balancing schemes (lb.scheme)",
        ("scheme", "acts at", "what it does", "parameters (defaults)"),
        [
            (
                c.name,
                c.where,
                escape(c.summary),
                escape(", ".join(f"{k}={v!r}" for k, v in c.keys.items()) or "-"),
            )
            for c in found.schemes
        ],
    )
    for title, kinds in (
        ("topologies (topology.kind)", found.topologies),
        ("workloads (workload.kind)", found.workloads),
    ):
        table(
            title,
            ("kind", "what it is", "keys"),
            [(c.name, escape(c.summary), escape(", ".join(c.keys))) for c in kinds],
        )
    table(
        "rail strategies (workload.strategy)",
        ("strategy", "what it does"),
        [(c.name, escape(c.summary)) for c in found.rail_strategies],
    )
    table(
        "loss recovery (transport.recovery)",
        ("mode", "what it does", "[transport] keys it reads"),
        [(c.name, escape(c.summary), ", ".join(c.keys)) for c in found.recoveries],
    )
    ccs = []
    for c in found.congestion_controls:
        params = ", ".join(param_text(key, default, c.units[key]) for key, default in c.keys.items())
        ccs.append((c.name, escape(c.summary), escape(f"[{c.section}] {params}" if c.section else "-")))
    table(
        "congestion control (transport.cc)",
        ("mode", "what it does", "parameters: name = default (unit)"),
        ccs,
    )
    console.print(f"flow-size distributions (workload.cdf): {', '.join(found.flow_size_cdfs)}")
    console.print(f"presets (use in place of a scenario file): {', '.join(found.presets)}")
    table(
        "example scenarios (spraylab run example:NAME)",
        ("name", "what it is"),
        [(c.name, escape(c.summary)) for c in found.examples],
    )
    console.print(
        f"example sweeps (spraylab sweep example:NAME): {', '.join(found.example_sweeps)}", highlight=False
    )
    console.print(f"(files in {found.examples_dir})", highlight=False)
