"""What made a result: the spraylab version and, in a git checkout, the commit of the source tree.

The version is derived from git when the package is built (setuptools-scm: ``0.2.0`` on a tag
``v0.2.0``, ``0.2.1.dev3+g1a2b3c4`` three commits later, ``0+unknown`` in a source tree that was
never built); in an editable install it is the one of the last install, while the commit is read
now, so the pair names the exact source. Every run records both (summary keys ``spraylab`` and ``git_commit``) so that a store, a compare
table or a report can tell results of another version apart from this one's."""

from __future__ import annotations

import functools
import subprocess
from pathlib import Path
from typing import Any

VERSION_KEYS = ("spraylab", "git_commit")


def version() -> str:
    from spraylab import __version__

    return __version__


@functools.lru_cache(maxsize=1)
def git_commit() -> str | None:
    """HEAD of the git checkout holding this package's source, or None (an installed wheel, no git,
    a broken repository). Asked once per process; never raises."""
    source = Path(__file__).resolve().parents[1]  # the spraylab package (this is spraylab/results/)
    try:
        done = subprocess.run(
            ["git", "-C", str(source), "rev-parse", "--show-toplevel", "HEAD"],
            capture_output=True,
            text=True,
            timeout=5,
            check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    lines = done.stdout.split()
    if done.returncode != 0 or len(lines) != 2:
        return None
    # Only a repository that holds this source tree counts (not one that merely contains a venv).
    if (Path(lines[0]) / "src" / "spraylab").resolve() != source:
        return None
    return lines[1]


def current() -> dict[str, Any]:
    return {"spraylab": version(), "git_commit": git_commit()}


def describe(record: dict[str, Any]) -> str:
    """``0.2.0 (abc1234def)``, ``0.2.0`` or ``unknown``."""
    name = record.get("spraylab") or "unknown"
    commit = record.get("git_commit")
    return f"{name} ({commit[:10]})" if commit else str(name)


def same_version(record: dict[str, Any], now: dict[str, Any] | None = None) -> bool:
    """Made by this version: the same spraylab version and, when both know one, the same commit."""
    now = now or current()
    if record.get("spraylab") != now["spraylab"]:
        return False
    theirs, ours = record.get("git_commit"), now["git_commit"]
    return theirs is None or ours is None or theirs == ours
