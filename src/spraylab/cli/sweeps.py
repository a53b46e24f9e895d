"""``spraylab sweep``, ``report`` and ``validate``: many runs into a resumable store
(:mod:`spraylab.sweeps.sweep`), their report (:func:`spraylab.report.build_report`) and the
packaged validation study (:mod:`spraylab.study`)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer

from spraylab.cli.common import (
    AllowLargeOption,
    EngineOption,
    UsageError,
    check_executor,
    console,
    run_with_progress,
    say,
    split,
)


def sweep_command(
    sweep: Annotated[
        Path,
        typer.Argument(help="Sweep TOML file: a base scenario plus [axes]; or a study file (spraylab study)"),
    ],
    out: Annotated[
        Path | None, typer.Option("--out", "-o", help="Results store directory (default out/sweep-NAME)")
    ] = None,
    jobs: Annotated[
        int | None, typer.Option("--jobs", "-j", min=1, help="Runs at a time (default: CPU count)")
    ] = None,
    executor: Annotated[str, typer.Option("--executor", "-e", help="local (process pool) or ray")] = "local",
    address: Annotated[
        str | None,
        typer.Option(
            "--address", help="Ray cluster address (auto, ray://head:10001); default: start a local Ray"
        ),
    ] = None,
    force: Annotated[
        bool, typer.Option("--force", help="Rerun every point, even those complete in the store")
    ] = False,
    dry_run: Annotated[
        bool, typer.Option("--dry-run", help="Validate and list the points; run nothing")
    ] = False,
    progress: Annotated[bool, typer.Option("--progress/--no-progress", help="Show a progress bar")] = True,
    allow_large: AllowLargeOption = False,
    engine: EngineOption = None,
    reuse_other_versions: Annotated[
        bool,
        typer.Option(
            "--reuse-other-versions",
            help="Keep stored runs made by another spraylab version (default: rerun them)",
        ),
    ] = False,
) -> None:
    """Run a sweep (the cartesian product of its axes) into a resumable results store; an
    interrupted sweep reruns only the missing runs. Exit code 1 if a run failed, 3 if a run
    stopped before its workload finished (it is stored as incomplete)."""
    from spraylab.cli.study import run as run_study
    from spraylab.model.library import sweep_path
    from spraylab.results.output import check_target
    from spraylab.results.store import Store, StoreError
    from spraylab.study.files import is_study_file
    from spraylab.sweeps.sweep import Sweep, plan, run_sweep

    if is_study_file(sweep):  # a study: its sweeps into one store (spraylab study run)
        run_study(sweep, out, jobs, executor, address, force, dry_run, progress, reuse_other_versions, None)
        return
    check_executor(executor, address)
    definition = Sweep.load(sweep_path(sweep), allow_large=allow_large, engine=engine)
    target = out or Path("out") / f"sweep-{definition.name}"
    check_target(target, "sweep")
    try:
        planned = plan(definition, Store(target), force, reuse_other_versions)
    except StoreError as exc:
        raise UsageError(str(exc)) from None
    console.print(
        f"[bold]sweep {definition.name}[/]: {len(definition.points)} runs over "
        + ", ".join(f"{k} ({len(v)})" for k, v in definition.axes.items())
        + f"; {len(planned.have)} already in {target}/"
    )
    if planned.other_version:
        verb = (
            "kept (--reuse-other-versions)"
            if reuse_other_versions
            else "rerun (keep them with --reuse-other-versions)"
        )
        console.print(
            f"{len(planned.other_version)} stored runs were made by another spraylab version: {verb}",
            highlight=False,
        )
    if dry_run:
        for point in definition.points:
            state = planned.state_of(point)
            console.print(f"  {point.key}  {state:<10}  {point.label}", markup=False, highlight=False)
        return

    outcome = run_with_progress(
        lambda display: run_sweep(
            definition, target, jobs=jobs, executor=executor, address=address, force=force, events=display,
            reuse_other_versions=reuse_other_versions,
        ),
        progress,
    )  # fmt: skip
    console.print(outcome.line(), markup=False, highlight=False)
    if outcome.failed:
        console.print(
            f"failed runs are recorded in {target}/runs/<key>/error.json and rerun by the next sweep",
            highlight=False,
        )
    console.print(
        f"results in {target}/: spraylab compare {target}; spraylab report {target}", highlight=False
    )
    if outcome.interrupted:
        sys.exit(130)
    if outcome.failed:
        sys.exit(1)  # (typer.Exit would only become app()'s return value in main())
    if outcome.any_incomplete:
        say(
            "incomplete runs (stopped before their workload finished) are stored apart; they rerun when their "
            "budget changes or with --force"
        )
        sys.exit(3)


def report_command(
    directory: Annotated[Path, typer.Argument(help="A sweep results directory")],
    out: Annotated[
        Path | None, typer.Option("--out", "-o", help="Report directory (default DIR/report)")
    ] = None,
    baseline: Annotated[
        str | None, typer.Option("--baseline", help="The column ratios are taken to, e.g. ecmp")
    ] = None,
    by: Annotated[
        str | None, typer.Option("--by", help="Axes whose values are the columns (default lb.scheme)")
    ] = None,
) -> None:
    """Write PNG plots (FCT-slowdown CDF, slowdown by size, CCT/busbw, uplink heatmap, reorder CDF)
    and a self-contained report.html for a sweep's results."""
    from spraylab.report import ReportError, build_report
    from spraylab.results.store import StoreError

    if not directory.is_dir():
        raise UsageError(f"{directory}: no such directory (give a sweep results directory)")
    try:
        report = build_report(directory, out, split(by), baseline)
    except (ReportError, StoreError) as exc:
        raise UsageError(str(exc)) from None
    console.print(f"{len(report.plots)} plots and {report.html} written", highlight=False)


def validate_command(
    out: Annotated[
        Path | None,
        typer.Option(
            "--out", "-o", help="Write the page here (e.g. docs/validation.md); default: print the verdicts"
        ),
    ] = None,
    only: Annotated[
        str | None,
        typer.Option(
            "--only",
            help="Comma-separated checks: sweeps of the validation study, e.g. incast,nscc_bottleneck (each section of docs/validation.md names its own; an unknown name lists them all)",
        ),
    ] = None,
    quick: Annotated[
        bool, typer.Option("--quick", help="Fewer and smaller cases (the study's profile quick)")
    ] = False,
    store: Annotated[
        Path | None,
        typer.Option("--store", help="Study store to run into (default out/study-validation[-quick])"),
    ] = None,
) -> None:
    """Run the packaged validation study (the simulator against closed-form truths and its
    targets: DCQCN, hash, RailS) and render the validation page. Exit code 1 if a claim is not met."""
    from spraylab.cli.study import validate

    validate(out, split(only), quick, store)
