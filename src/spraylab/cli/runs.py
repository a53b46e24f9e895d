"""``spraylab run``, ``compare`` and ``demo``: one scenario, once or under several schemes
(:func:`spraylab.load_scenario`, :mod:`spraylab.runs.watched`, :func:`spraylab.summary_table`)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.markup import escape  # rich.console imports it anyway

from spraylab.cli.common import (
    AllowLargeOption,
    EngineOption,
    FormatOption,
    SetOption,
    UsageError,
    check_format,
    console,
    error,
    exit_if_incomplete,
    exit_interrupted,
    parse_overrides,
    parse_variants,
    say,
    split,
)
from spraylab.results.output import OutputError

if TYPE_CHECKING:
    from spraylab.model.scenario import Scenario

# DFS twice: with the RNIC's loss recovery (the spec's rule 6) and with its own (docs/results.md section 4).
DEMO_VARIANTS = "ecmp,rps,rps/ideal,dfs/sr,dfs[loss_detection=dfs]/sr,tor_assist/sr,tor_assist/gbn"


def run_command(
    scenario: Annotated[str, typer.Argument(help="Scenario TOML file or preset name")],
    set_: SetOption = None,
    out: Annotated[
        Path | None, typer.Option("--out", "-o", help="Save the result (Parquet + JSON) here")
    ] = None,
    allow_large: AllowLargeOption = False,
    output_format: FormatOption = "table",
    engine: EngineOption = None,
) -> None:
    """Run one scenario and print its summary (with its scenario card). Exit code 3 if the run
    stopped (time limit, event or wall budget) before its workload finished."""
    from spraylab.model.library import load_scenario
    from spraylab.results.card import card_lines_from_summary
    from spraylab.results.output import check_target, write_dir
    from spraylab.results.summary import run_label, summary_table
    from spraylab.results.tables import render
    from spraylab.runs import watched
    from spraylab.runs.memory import release_freed_memory

    check_format(output_format)
    sc = load_scenario(scenario, parse_overrides(set_, allow_large, engine))
    target = out or (Path(sc.output.dir) if sc.output.dir else None)
    option = "--out" if out is not None else "output.dir ="
    if target is not None:
        check_target(target, "run", option)  # before the run, not after
    result, interrupted = watched.run_watched(sc)
    if target is not None or interrupted:
        # saving loads pyarrow: on the run's freed pages, not new ones (and so does printing,
        # first: what it makes now would keep the run's pages resident; docs/performance.md)
        release_freed_memory()
    summaries = {run_label(sc): result.summary}
    render(
        output_format, [summary_table(sc.name, summaries, card_lines_from_summary(result.summary))], console
    )
    if interrupted:  # Ctrl-C: the part simulated is saved, with --out or under out/
        target = target or Path("out") / f"{sc.name}-interrupted"
        try:
            write_dir(target, "run", result.write_files, option)
        except OutputError as exc:
            error(str(exc))
            exit_interrupted(None, "")
        exit_interrupted(target, "the partial result")
    if target is not None:
        write_dir(target, "run", result.write_files, option)
        say(f"result saved in {target}/")
    exit_if_incomplete({sc.name: result.summary})


def compare_scenario(
    scenario: Scenario, variants: list[tuple[str, dict[str, Any]]], out: Path, output_format: str = "table"
) -> None:
    """``spraylab compare`` of a scenario (:func:`spraylab.runs.watched.compare_watched`): the
    table, then the results and plots in ``out``; exit 130 after Ctrl-C, 3 if a run is incomplete."""
    from spraylab.results.output import check_target
    from spraylab.results.summary import summary_table
    from spraylab.results.tables import render
    from spraylab.runs import watched
    from spraylab.runs.comparison import variant_scenarios

    variant_scenarios(scenario, variants)  # every variant validated before anything else
    check_target(out, "compare")  # before the runs, not after
    comparison = watched.compare_watched(scenario, variants)
    title = f"{scenario.name}: {len(variants)} schemes"
    render(output_format, [summary_table(title, comparison.summaries, comparison.card.lines)], console)
    comparison.save(out)
    if comparison.interrupted:
        done = ", ".join(comparison.results)
        exit_interrupted(
            out, f"{len(comparison.results)} of {len(variants)} runs ({done}; the last one partial) and plots"
        )
    say(f"results and plots in {out}/ (fct_slowdown_cdf, uplink_utilization: PNG, PDF, SVG)")
    exit_if_incomplete(comparison.summaries)


def compare_command(
    scenario: Annotated[
        str, typer.Argument(help="Scenario TOML file or preset name, or a sweep results directory")
    ],
    lb: Annotated[
        str | None,
        typer.Option(
            "--lb",
            help="Schemes to compare, e.g. ecmp,rps/ideal,dfs[reorder_bound_packets=64]/sr (scheme[params]/recovery)",
        ),
    ] = None,
    set_: SetOption = None,
    out: Annotated[
        Path | None, typer.Option("--out", "-o", help="Directory for results and PNG plots")
    ] = None,
    baseline: Annotated[
        str | None,
        typer.Option("--baseline", help="Sweep results: the column ratios are taken to, e.g. ecmp"),
    ] = None,
    by: Annotated[
        str | None,
        typer.Option(
            "--by",
            help="Sweep results: axes whose values are the columns (default lb.scheme), e.g. lb.scheme,transport.recovery",
        ),
    ] = None,
    metrics: Annotated[
        str | None,
        typer.Option("--metrics", help="Sweep results: summary keys to show, e.g. slowdown_p99,fct_mean_ps"),
    ] = None,
    allow_large: AllowLargeOption = False,
    output_format: FormatOption = "table",
    engine: EngineOption = None,
) -> None:
    """Run one scenario under several schemes (table + plots), or tabulate a sweep's results
    directory: metric x scheme, mean ± 95% CI over seeds, ratio to a baseline, grouped by the other axes."""
    from spraylab.model.library import load_scenario

    check_format(output_format)
    if Path(scenario).is_dir():
        if lb is not None or set_ or out is not None or engine is not None:
            raise UsageError(
                f"{scenario}: --lb, --set, --out and --engine apply to a scenario, not to a sweep results directory"
            )
        compare_sweep(Path(scenario), baseline, split(by), split(metrics), output_format)
        return
    if baseline is not None or by is not None or metrics is not None:
        raise UsageError(
            "--baseline, --by and --metrics apply to a sweep results directory (see spraylab sweep)"
        )
    sc = load_scenario(scenario, parse_overrides(set_, allow_large, engine))
    compare_scenario(
        sc, parse_variants(lb or "ecmp,rps"), out or Path("out") / f"compare-{sc.name}", output_format
    )


def compare_sweep(
    directory: Path,
    baseline: str | None,
    by: list[str] | None,
    metrics: list[str] | None,
    output_format: str = "table",
) -> None:
    """The metric x scheme tables of a sweep's results (:func:`spraylab.report.result_tables.sweep_result_tables`)."""
    from spraylab.report import ReportError
    from spraylab.report.result_tables import sweep_result_tables
    from spraylab.results.store import StoreError
    from spraylab.results.tables import render

    try:
        tables, notices = sweep_result_tables(
            directory, baseline, by, metrics, output_format in ("csv", "json")
        )
    except (ReportError, StoreError) as exc:
        raise UsageError(str(exc)) from None
    for line in notices:
        say(line)
    render(output_format, tables, console)


def demo_command(
    out: Annotated[Path, typer.Option("--out", "-o", help="Directory for results and PNG plots")] = Path(
        "out/demo"
    ),
    lb: Annotated[str, typer.Option("--lb", help="Schemes to compare")] = DEMO_VARIANTS,
) -> None:
    """Compare the load balancers on the default scenario (preset 'demo'): table + plots."""
    from spraylab.model.library import load_scenario

    sc = load_scenario("demo")
    variants = parse_variants(lb)  # bad --lb: one error line, before the banner
    console.print(f"[bold]spraylab demo[/]: {sc.name}, {sc.topology.kind}; schemes {escape(lb)}")
    compare_scenario(sc, variants, out)
