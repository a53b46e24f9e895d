"""Run the command line in this process (no interpreter start-up per call) and run sweeps without
worker processes: the same code paths as ``python -m spraylab.cli``, minus the process pool."""

from __future__ import annotations

import contextlib
import io
import os
import sys
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from spraylab.sweeps.executors import Outcome, execute


@dataclass
class Invocation:
    returncode: int
    stdout: str
    stderr: str


@contextlib.contextmanager
def _cwd(path: Path) -> Iterator[None]:
    before = Path.cwd()
    os.chdir(path)
    try:
        yield
    finally:
        os.chdir(before)


def invoke(*args: str, cwd: Path) -> Invocation:
    """``spraylab ARGS`` through :func:`spraylab.cli.main`, with its exit code and both streams."""
    from spraylab.cli import main

    out, err = io.StringIO(), io.StringIO()
    code: Any = 0
    argv = sys.argv
    sys.argv = ["spraylab", *args]
    try:
        with _cwd(cwd), contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                main()
            except SystemExit as exc:
                code = exc.code
    finally:
        sys.argv = argv
    return Invocation(
        code if isinstance(code, int) else (0 if code is None else 1), out.getvalue(), err.getvalue()
    )


class InlineExecutor:
    """Runs each submitted scenario at once, in this process, through the workers' own ``execute``."""

    name = "inline"
    slots = 1

    def __init__(self, *_: Any) -> None:
        self._outcomes: dict[int, Outcome] = {}

    def submit(self, scenario: dict[str, Any]) -> int:
        handle = len(self._outcomes)
        self._outcomes[handle] = execute(scenario)
        return handle

    def wait(self, handles: Iterable[int], timeout: float) -> list[tuple[int, Outcome]]:
        return [(h, self._outcomes[h]) for h in handles]

    def shutdown(self, cancel: bool = False) -> None:
        self._outcomes.clear()


@pytest.fixture(autouse=True, scope="module")
def inline_sweeps() -> Iterator[None]:
    """CLI sweeps run their points in this process (no worker start-up); a module that imports
    this fixture gets it for all its tests."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr("spraylab.sweeps.sweep.make_executor", lambda *args: InlineExecutor())
        yield
