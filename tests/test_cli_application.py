"""``spraylab <command>`` builds an application holding that command alone (typer builds the
parameters of every registered command on each call); it must parse every command line as the
full application does: the same help, the same usage errors, the same exit codes (parsing only:
both applications call the same command functions)."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from spraylab.cli import COMMANDS, app, application

RUNNER = CliRunner()


@pytest.mark.parametrize("name", sorted(COMMANDS))
@pytest.mark.parametrize("args", [["--help"], ["--no-such-option"]], ids=["help", "bad-option"])
def test_a_one_command_application_parses_as_the_full_one(
    name: str, args: list[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)  # nothing a command could read from the working directory
    one = application(["spraylab", name])
    assert one is not app
    full = RUNNER.invoke(app, [name, *args], prog_name="spraylab")
    alone = RUNNER.invoke(one, [name, *args], prog_name="spraylab")
    assert (alone.exit_code, alone.output) == (full.exit_code, full.output)
    if args == ["--help"]:
        assert full.exit_code == 0 and f"Usage: spraylab {name}" in full.output


@pytest.mark.parametrize(
    "argv", [["spraylab"], ["spraylab", "--help"], ["spraylab", "study"], ["spraylab", "rnu"]]
)
def test_anything_else_gets_the_full_application(argv: list[str]) -> None:
    assert application(argv) is app
