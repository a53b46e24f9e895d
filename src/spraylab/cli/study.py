"""``spraylab study run|render|check`` and ``spraylab validate``: the command line of studies
(:mod:`spraylab.study`: parse, call, print)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer

from spraylab.cli.common import UsageError, check_executor, console, err_console, run_with_progress
from spraylab.study.files import default_store, resolve_study

study_app = typer.Typer(
    add_completion=False,
    no_args_is_help=True,
    help="Studies: sweeps, claims as data and a page rendered from the store (see studies/).",
)

ProfileOption = Annotated[
    str | None,
    typer.Option("--profile", help="A size profile of the study (e.g. quick): overrides every sweep"),
]


def run(
    study_file: Path,
    out: Path | None,
    jobs: int | None,
    executor: str,
    address: str | None,
    force: bool,
    dry_run: bool,
    progress: bool,
    reuse_other_versions: bool,
    profile: str | None,
) -> None:
    from spraylab.results.store import Store, StoreError
    from spraylab.study.definition import Study
    from spraylab.study.run import run_study
    from spraylab.sweeps.sweep import plan

    check_executor(executor, address)
    study = Study.load(resolve_study(study_file), profile)
    target = out or default_store(study)
    from spraylab.results.output import check_target

    check_target(target, "study")
    total = sum(len(s.points) for s in study.sweeps.values())
    console.print(
        f"[bold]study {study.name}[/]{f' (profile {profile})' if profile else ''}: {len(study.sweeps)} sweeps, "
        f"{total} points, {len(study.claims)} claims; store {target}/",
        highlight=False,
    )
    if dry_run:
        for name, s in study.sweeps.items():
            if s.sweep is None:
                console.print(f"  {name}: analysis {s.analysis}, {len(s.points)} points", markup=False)
                continue
            try:
                todo = plan(s.sweep, Store(target / name), force, reuse_other_versions).todo
            except StoreError as exc:
                raise UsageError(str(exc)) from None
            console.print(
                f"  {name}: {len(s.points)} runs, {len(todo)} to run", markup=False, highlight=False
            )
        return

    outcome = run_with_progress(
        lambda display: run_study(
            study, target, jobs=jobs, executor=executor, address=address, force=force, events=display,
            reuse_other_versions=reuse_other_versions,
            log=lambda line: err_console.print(line, markup=False, highlight=False),
        ),
        progress,
    )  # fmt: skip
    for line in outcome.lines():
        console.print(line, markup=False, highlight=False)
    console.print(
        f"{outcome.wall_s / 60:.1f} min; render the page: spraylab study render {target} --page PAGE.md",
        highlight=False,
    )
    if outcome.interrupted:
        sys.exit(130)
    if outcome.failed:
        sys.exit(1)
    if outcome.any_incomplete:
        sys.exit(3)


@study_app.command("run")
def run_command(
    study_file: Annotated[
        str, typer.Argument(help="Study TOML file (studies/*.toml) or a packaged study (validation)")
    ],
    out: Annotated[
        Path | None, typer.Option("--out", "-o", help="Study store (default out/study-NAME)")
    ] = None,
    jobs: Annotated[
        int | None, typer.Option("--jobs", "-j", min=1, help="Runs at a time (default: CPU count)")
    ] = None,
    executor: Annotated[str, typer.Option("--executor", "-e", help="local (process pool) or ray")] = "local",
    address: Annotated[str | None, typer.Option("--address", help="Ray cluster address")] = None,
    force: Annotated[bool, typer.Option("--force", help="Rerun every point")] = False,
    dry_run: Annotated[
        bool, typer.Option("--dry-run", help="Validate and count the points; run nothing")
    ] = False,
    progress: Annotated[bool, typer.Option("--progress/--no-progress", help="Show a progress bar")] = True,
    reuse_other_versions: Annotated[
        bool, typer.Option("--reuse-other-versions", help="Keep stored runs made by another spraylab version")
    ] = False,
    profile: ProfileOption = None,
) -> None:
    """Run every sweep of a study into its store (reruns keep what is stored). Same as
    ``spraylab sweep STUDY.toml``."""
    run(
        Path(study_file),
        out,
        jobs,
        executor,
        address,
        force,
        dry_run,
        progress,
        reuse_other_versions,
        profile,
    )


@study_app.command("render")
def render_command(
    store: Annotated[Path, typer.Argument(help="A study store (spraylab study run --out DIR)")],
    page: Annotated[
        Path | None, typer.Option("--page", "-p", help="Write the page here (default: print it)")
    ] = None,
    study_file: Annotated[
        str | None, typer.Option("--study", help="The study file (default: the one the store was run from)")
    ] = None,
    strict: Annotated[
        bool, typer.Option("--strict", help="Exit code 1 if a claim is not met or missing")
    ] = False,
) -> None:
    """Render a study's page from its store: tables, numbers and claim verdicts all come from the
    stored runs. Points the store lacks show as "not run" and their claims as missing."""
    import json

    from spraylab.study.definition import Study
    from spraylab.study.render import RenderError, check_page_target, render, write_page

    record_path = store / "study.json"
    if not record_path.is_file():
        raise UsageError(
            f"{store}: not a study store (no study.json); run: spraylab study run STUDY.toml --out {store}"
        )
    record = json.loads(record_path.read_text())
    source = resolve_study(study_file) if study_file is not None else Path(record.get("source", ""))
    if not source.is_file():
        raise UsageError(f"{store}: its study file {source} is gone; give --study STUDY.toml")
    if page is not None:
        check_page_target(page)
    study = Study.load(source, record.get("profile"))
    try:
        note = f"`{_rel(source)}` and the store `{store}`"
        text, verdicts = render(study, store, note)
    except RenderError as exc:
        raise UsageError(str(exc)) from None
    for v in verdicts:
        err_console.print(f"claim {v.claim.id}: {v.word}: {v.measured}", markup=False, highlight=False)
    if page is None:
        sys.stdout.write(text)
    else:
        write_page(page, text)
        met = sum(v.met is True for v in verdicts)
        console.print(f"{page} written: {met} of {len(verdicts)} claims met", highlight=False)
    if strict and any(v.met is not True for v in verdicts):
        sys.exit(1)


def _rel(path: Path) -> str:
    import os

    rel = os.path.relpath(path.resolve(), Path.cwd())
    return path.name if rel.startswith("..") else rel


@study_app.command("check")
def check_command(
    study_file: Annotated[str, typer.Argument(help="Study TOML file or a packaged study")],
    profile: ProfileOption = None,
) -> None:
    """Validate a study (its sweeps, claims and template) without running anything."""
    from spraylab.study.definition import Study

    study = Study.load(resolve_study(study_file), profile)
    total = sum(len(s.points) for s in study.sweeps.values())
    console.print(
        f"{study_file}: {len(study.sweeps)} sweeps, {total} points, {len(study.claims)} claims, template "
        f"{study.template.name}: ok",
        highlight=False,
    )


def validate(page: Path | None, only: list[str] | None, quick: bool, store: Path | None = None) -> None:
    """``spraylab validate``: run the packaged validation study (``--quick``: its profile quick),
    print the verdicts, and render ``docs/validation.md`` when asked. Exit code 1 if a claim is
    not met."""
    from spraylab.study.definition import Study
    from spraylab.study.render import check_page_target, render, write_page
    from spraylab.study.run import run_study
    from spraylab.sweeps.progress import SweepProgress

    study = Study.load(resolve_study("validation"), "quick" if quick else None)
    for name in only or []:
        if name not in study.sweeps:
            raise UsageError(f"--only {name!r}: unknown check; allowed: {', '.join(study.sweeps)}")
    if only:
        study = study.only(only)
    if page is not None:
        check_page_target(page, "--out")
    target = store or default_store(study)
    outcome = run_study(
        study, target, events=SweepProgress(err_console, enabled=True),
        log=lambda line: err_console.print(line, markup=False, highlight=False),
    )  # fmt: skip
    if outcome.interrupted:
        sys.exit(130)
    text, verdicts = render(study, target, "the packaged study `validation`")
    for v in verdicts:
        console.print(f"{v.claim.id}: {v.word}: {v.measured}", markup=False, highlight=False)
    if page is not None:
        write_page(page, text, "--out")
        console.print(f"validation page written to {page}", highlight=False)
    if outcome.failed or any(v.met is not True for v in verdicts):
        sys.exit(1)
