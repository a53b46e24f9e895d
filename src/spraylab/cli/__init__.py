"""Command line: a thin layer over the Python API. Each command parses its arguments, calls the
API (:func:`spraylab.load_scenario`, :mod:`spraylab.runs.watched`, :func:`spraylab.summary_table`,
:func:`spraylab.choices`, the sweep, report, import and export functions) and prints what it got.

One module per command group: :mod:`.runs` (``run``, ``compare``, ``demo``), :mod:`.sweeps`
(``sweep``, ``report``, ``validate``), :mod:`.files` (``import``, ``export``, ``docs``, ``view``),
:mod:`.listing` (``list``), :mod:`.study` (``study``); :mod:`.common` holds what
they share and :func:`main` turns every kind of bad input into one ``error:`` line, exit code 2.
"""

from __future__ import annotations

import gc
import sys
from typing import Any

import typer

from spraylab.cli import files, listing, runs, sweeps
from spraylab.cli.common import (
    APP_SETTINGS,
    UsageError,
    app,
    check_format,
    console,
    err_console,
    error,
    parse_overrides,
    parse_variants,
    run_with_progress,
)
from spraylab.results.output import OutputError
from spraylab.runs.memory import pause_collector_until_run, resume_collector

__all__ = [
    "UsageError",
    "app",
    "check_format",
    "console",
    "err_console",
    "main",
    "parse_overrides",
    "parse_variants",
    "run_with_progress",
]


# Every top-level command, in the order ``--help`` lists them (then the ``study`` group).
COMMANDS = {
    "run": runs.run_command,
    "compare": runs.compare_command,
    "demo": runs.demo_command,
    "validate": sweeps.validate_command,
    "list": listing.list_command,
    "sweep": sweeps.sweep_command,
    "report": sweeps.report_command,
    "import": files.import_command,
    "export": files.export_command,
    "docs": files.docs_command,
    "view": files.view_command,
}


def _add_commands() -> None:
    from spraylab.cli.study import study_app

    for name, command in COMMANDS.items():
        app.command(name)(command)
    app.add_typer(study_app, name="study")


_add_commands()


def _options() -> None:
    """No options of its own: the callback keeps a one-command application a group."""


def application(argv: list[str]) -> typer.Typer:
    """:data:`app`, or, for a command line that names one of :data:`COMMANDS`, an application
    holding that command alone. typer builds the parameters of every registered command each
    time it runs (15-25 ms for all of them, 1 ms for one); the rest of the line is parsed the
    same way (``tests/test_cli_application.py`` compares every command's help and errors)."""
    command = COMMANDS.get(argv[1]) if len(argv) > 1 else None
    if command is None:
        return app
    one = typer.Typer(**APP_SETTINGS)
    one.callback()(_options)
    one.command(argv[1])(command)
    return one


class _NotRaised(Exception):
    """Stands for ScenarioError while the schema module is not loaded (it cannot have raised)."""


def _scenario_error() -> tuple[type[Exception], ...]:
    """``spraylab.model.errors.ScenarioError`` and ``spraylab.formats.rows.FormatError`` without
    importing the schema or the readers just to catch them (unloaded, they cannot have raised)."""
    errors = sys.modules.get("spraylab.model.errors")
    rows = sys.modules.get("spraylab.formats.rows")
    return (
        errors.ScenarioError if errors is not None else _NotRaised,
        rows.FormatError if rows is not None else _NotRaised,
    )


def main() -> None:
    """The ``spraylab`` command. Bad input of any kind (scenario, sweep, options, files) ends
    with one ``error:`` line and exit code 2, never a traceback."""
    if sys.argv[1:2] in (["run"], ["compare"], ["demo"]):
        pause_collector_until_run()  # until the first run starts (runs.watched)
    try:
        # Non-standalone mode hands back a typer.Exit's code instead of exiting.
        code = application(sys.argv)(standalone_mode=False)
        # The interpreter's last garbage collection at exit walks every object the command
        # left (a run's network: ports, queue pairs, their per-packet lists), 8% of a 1024-host
        # run's CPU, to find nothing that needs it: everything is written. Frozen, they are
        # skipped (memory goes back to the system with the process).
        gc.freeze()
        sys.exit(code if isinstance(code, int) else 0)
    except _scenario_error() as exc:
        for line in exc.lines:
            err_console.print(f"error: {line}", markup=False, highlight=False)
        sys.exit(2)
    except (UsageError, OutputError) as exc:
        error(str(exc))
        sys.exit(2)
    except KeyboardInterrupt:
        err_console.print("interrupted")
        sys.exit(130)
    except typer.Abort:
        sys.exit(1)
    except UnicodeDecodeError as exc:
        error(f"input is not UTF-8 text (byte {exc.object[exc.start]:#04x} at offset {exc.start})")
        sys.exit(2)
    except OSError as exc:  # a path given on the command line that cannot be read or written
        where = f"{exc.filename}: " if exc.filename else ""
        error(f"{where}{exc.strerror or exc}")
        sys.exit(2)
    except Exception as exc:
        # Click's usage errors (unknown option, missing argument, bad --jobs), from whichever
        # click typer uses (recent typers vendor their own): one line instead of usage + box.
        message = getattr(exc, "format_message", None)
        if message is None or not hasattr(exc, "exit_code"):
            raise
        ctx = getattr(exc, "ctx", None)
        command = f"{ctx.command_path}: " if ctx is not None else ""
        error(command + message() + _usage_detail(exc, ctx))
        sys.exit(exc.exit_code or 2)
    finally:
        resume_collector()  # a command that ended before its run (bad input, a results directory)


def _usage_detail(exc: Exception, ctx: Any) -> str:
    """What click's message leaves out: the value given for a bad option, the commands allowed."""
    param = getattr(exc, "param", None)
    opts = getattr(param, "opts", None) or []
    args = sys.argv[1:]
    for i, arg in enumerate(args):
        for opt in opts:
            if arg == opt and i + 1 < len(args):
                return f" (got {args[i + 1]!r})"
            if arg.startswith(opt + "="):
                return f" (got {arg[len(opt) + 1 :]!r})"
    if "No such command" in str(getattr(exc, "message", "")) and ctx is not None:
        return f" Commands: {', '.join(ctx.command.list_commands(ctx))}"
    return ""
