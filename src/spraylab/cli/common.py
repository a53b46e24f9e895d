"""What every command shares: the application, the two consoles (results to stdout, messages to
stderr), the options several commands take, parsing ``--set``, and the exits of incomplete
and interrupted runs."""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Annotated, Any, TypeVar

import typer
from rich.console import Console

if TYPE_CHECKING:
    from pathlib import Path

APP_SETTINGS: dict[str, Any] = {
    "add_completion": False,
    "no_args_is_help": True,
    "rich_markup_mode": None,
    "help": "spraylab: load balancing for AI-training networks.",
}
app = typer.Typer(**APP_SETTINGS)
console = Console()
if not console.is_terminal:  # piped or captured output: room for several scheme columns
    console.width = 160
err_console = Console(stderr=True, soft_wrap=True)  # one problem, one line, whatever the width

AllowLargeOption = Annotated[
    bool,
    typer.Option(
        "--allow-large",
        help="Run even beyond the size guard's memory/flow/packet limits (= run.allow_large = true)",
    ),
]
EngineOption = Annotated[
    str | None,
    typer.Option(
        "--engine",
        help="packet (packet-level), fluid (flow-level max-min rates), l0 (bytes per link bound) or l0_rail (l0 of a rail workload from its byte matrices) (= run.engine)",
    ),
]
SetOption = Annotated[
    list[str] | None,
    typer.Option(
        "--set", "-s", help="Override a scenario value: key=value, e.g. --set run.seed=2 --set lb.scheme=rps"
    ),
]
FormatOption = Annotated[
    str,
    typer.Option(
        "--format",
        "-f",
        help="Output: table (terminal), csv, markdown or json; csv and json carry raw numbers (ps, bps, bytes)",
    ),
]


class UsageError(Exception):
    """Bad command-line input: reported as one line, exit code 2."""


def check_format(fmt: str) -> str:
    from spraylab.table_formats import TABLE_FORMATS

    if fmt not in TABLE_FORMATS:
        raise UsageError(TABLE_FORMATS.unknown(fmt))
    return fmt


def parse_overrides(
    items: list[str] | None, allow_large: bool = False, engine: str | None = None
) -> dict[str, Any]:
    """``--set key=value`` (values read as TOML, a bare word as a string), ``--allow-large`` and
    ``--engine`` as the dotted overrides of :func:`spraylab.load_scenario`."""
    import tomllib

    overrides: dict[str, Any] = {"run.allow_large": True} if allow_large else {}
    if engine is not None:
        overrides["run.engine"] = engine
    for item in items or []:
        key, sep, raw = item.partition("=")
        if not sep or not key.strip():
            raise UsageError(f"--set {item!r}: expected key=value, e.g. --set run.seed=2")
        try:
            value: Any = tomllib.loads(f"v = {raw}")["v"]
        except tomllib.TOMLDecodeError:
            value = raw  # a bare word such as rps or 400Gbps
        overrides[key.strip()] = value
    return overrides


def parse_variants(spec: str) -> list[tuple[str, dict[str, Any]]]:
    """``ecmp,rps/ideal,dfs[B=128]/sr`` → labelled overrides (:mod:`spraylab.model.variants`)."""
    from spraylab.model import variants

    try:
        return variants.parse_variants(spec)
    except variants.VariantError as exc:
        raise UsageError(str(exc)) from None


def split(text: str | None) -> list[str] | None:
    """A comma-separated option as its items (None when it names none)."""
    items = [item.strip() for item in (text or "").split(",") if item.strip()]
    return items or None


def say(line: str) -> None:
    """One message line on stderr, printed as it is."""
    err_console.print(line, markup=False, highlight=False)


def error(message: str) -> None:
    say(f"error: {' '.join(message.split())}")


def exit_if_incomplete(summaries: dict[str, dict[str, Any]]) -> None:
    """One line per run stopped before its workload finished, then exit code 3."""
    from spraylab.results.summary import incomplete_lines

    lines = incomplete_lines(summaries)
    for line in lines:
        say(line)
    if lines:
        sys.exit(3)


def exit_interrupted(where: Path | None, what: str) -> None:
    """After Ctrl-C: say where the partial results are (or why none were saved); exit 130."""
    if where is not None:
        say(
            f"interrupted: {what} saved in {where}/ (marked incomplete: completed = false, stop_reason = interrupted)"
        )
    else:
        say("interrupted: nothing was saved")
    sys.exit(130)


T = TypeVar("T")


def run_with_progress(call: Callable[[Any], T], progress: bool) -> T:
    """``call(display)`` with a progress display on stderr, SIGTERM ending it as Ctrl-C does (the
    store keeps what finished), and executor or store problems reported as one usage error.
    Shared by ``sweep`` and ``study run``."""
    import signal

    from spraylab.results.store import StoreError, StoreLocked
    from spraylab.sweeps.executors import ExecutorError
    from spraylab.sweeps.progress import SweepProgress

    def terminate(signum: int, frame: Any) -> None:
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGTERM, terminate)
    try:
        return call(SweepProgress(err_console, enabled=progress))
    except (ExecutorError, StoreLocked, StoreError) as exc:
        raise UsageError(str(exc)) from None
    finally:
        signal.signal(signal.SIGTERM, previous)


def check_executor(executor: str, address: str | None) -> None:
    """``--executor`` and ``--address`` of ``sweep`` and ``study run``."""
    from spraylab.sweeps.executors import EXECUTORS

    if executor not in EXECUTORS:
        raise UsageError(EXECUTORS.unknown(executor))
    if address and executor != "ray":
        raise UsageError("--address: only meaningful with --executor ray")
