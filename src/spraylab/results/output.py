"""Output directories spraylab owns: never write into, nor remove, what spraylab did not write.

Every directory spraylab writes (a run's result, a compare/demo directory, a report, a sweep
store) carries a marker file ``.spraylab`` (JSON: kind, version, the names it wrote). A target
directory is accepted if it does not exist, is empty, or holds a spraylab output of the same
kind; anything else (a user's directory, a file, another kind of output) is refused with one
line. A result is replaced atomically: the new one is written into a temporary sibling that is
renamed into place; entries of the old directory that spraylab did not write are carried over,
so only files spraylab wrote are ever removed.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any, Literal

MARKER = ".spraylab"
Kind = Literal["run", "compare", "report", "sweep", "study"]
KIND_TEXT = {
    "run": "run result",
    "compare": "comparison",
    "report": "report",
    "sweep": "sweep results store",
    "study": "study results store",
}


class OutputError(Exception):
    """An output location spraylab must not write to: one line, for the CLI (exit code 2)."""


def read_marker(path: Path) -> dict[str, Any] | None:
    try:
        data = json.loads((path / MARKER).read_text())
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) and data.get("kind") in KIND_TEXT else None


def _is_run_dir(path: Path) -> bool:
    from spraylab.metrics.result import RESULT_FILES

    return all((path / name).is_file() for name in RESULT_FILES)


def kind_of(path: Path) -> str | None:
    """The kind of spraylab output in ``path``: its marker's, or recognised by the files an older
    spraylab wrote without a marker; None if it is not spraylab's."""
    marker = read_marker(path)
    if marker is not None:
        return str(marker["kind"])
    if (path / "sweep.json").is_file():
        return "sweep"
    if _is_run_dir(path):
        return "run"
    if (path / "report.html").is_file():
        return "report"
    if (path / "fct_slowdown_cdf.png").is_file():
        return "compare"
    return None


def owned_names(path: Path) -> set[str]:
    """The entries of an existing spraylab output directory that spraylab wrote."""
    marker = read_marker(path)
    if marker is not None:
        return {str(name) for name in marker.get("files", [])} | {MARKER}
    from spraylab.metrics.result import RESULT_FILES

    names = set(RESULT_FILES)
    for entry in path.iterdir():
        if entry.suffix == ".png" or entry.name == "report.html" or (entry.is_dir() and _is_run_dir(entry)):
            names.add(entry.name)
    return names


def check_target(path: Path, kind: Kind, option: str = "--out") -> None:
    """Raise :class:`OutputError` unless spraylab may write a ``kind`` output at ``path``."""
    if path.exists() and not path.is_dir():
        raise OutputError(
            f"{option} {path}: is a file, not a directory; give a directory for the {KIND_TEXT[kind]}"
        )
    if (
        kind not in ("sweep", "study")
        and path.is_dir()
        and Path.cwd().resolve().is_relative_to(path.resolve())
    ):
        # a result replaces its directory, which would pull it from under the shell standing in it
        raise OutputError(f"{option} {path}: is the current directory (or holds it); give a subdirectory")
    if not path.is_dir() or not any(path.iterdir()):
        return
    found = kind_of(path)
    if found is None:
        raise OutputError(
            f"{option} {path}: a non-empty directory that spraylab did not write; refusing to write into it "
            "(give a new or empty directory)"
        )
    if found != kind:
        raise OutputError(
            f"{option} {path}: holds a spraylab {KIND_TEXT[found]}, not a {KIND_TEXT[kind]}; give another directory"
        )


def marker_record(kind: Kind, files: list[str]) -> dict[str, Any]:
    from spraylab.results import provenance

    return {"kind": kind, **provenance.current(), "files": sorted(files)}


def write_marker(path: Path, kind: Kind, files: list[str]) -> None:
    tmp = path / f".{MARKER}.tmp-{os.getpid()}"
    tmp.write_text(json.dumps(marker_record(kind, files), indent=2, sort_keys=True) + "\n")
    os.replace(tmp, path / MARKER)


def write_dir(path: str | Path, kind: Kind, fill: Callable[[Path], None], option: str = "--out") -> Path:
    """Write a ``kind`` output at ``path`` atomically: ``fill(tmp)`` writes its files into a fresh
    temporary sibling, which then replaces the old output (if any) in one rename."""
    shown = Path(path)
    check_target(shown, kind, option)
    target = shown.resolve()  # "." or a symlink: operate on the real directory, name it as given
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{target.name}.tmp-", dir=target.parent))
    carried: list[str] = []
    try:
        fill(tmp)
        written = [entry.name for entry in tmp.iterdir()]
        write_marker(tmp, kind, written)
        if not target.exists():
            os.replace(tmp, target)
            return shown
        owned = owned_names(target)
        foreign = [entry for entry in target.iterdir() if entry.name not in owned]
        clash = [entry.name for entry in foreign if (tmp / entry.name).exists()]
        if clash:
            raise OutputError(
                f"{option} {shown}: {clash[0]!r} there was not written by spraylab and would be overwritten; "
                "move it away or give another directory"
            )
        for entry in foreign:  # not ours: it moves with the directory, never removed
            os.replace(entry, tmp / entry.name)
            carried.append(entry.name)
        old = target.with_name(f".{target.name}.old-{uuid.uuid4().hex[:8]}")
        os.replace(target, old)
        os.replace(tmp, target)
        shutil.rmtree(old, ignore_errors=True)  # holds only what spraylab wrote
    except BaseException:
        for name in carried:  # put a user's entries back before dropping the temporary directory
            if (tmp / name).exists() and target.is_dir():
                os.replace(tmp / name, target / name)
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return shown
