"""Files a scenario refers to (flow files, topology files): where relative paths start, and a
digest of the content so that a run is identified by what it read, not only by a name.

A relative path is relative to the scenario (or sweep) file that names it; elsewhere (a dict
in a notebook, an inline sweep) to the working directory. Validation stores the absolute path
and the content's SHA-256, so a dumped scenario names the exact input; when a scenario carries
a digest and the file has changed since, validation refuses it instead of running other input
under the old identity."""

from __future__ import annotations

import contextlib
import contextvars
import hashlib
from collections.abc import Iterator
from pathlib import Path

_BASE_DIR: contextvars.ContextVar[Path | None] = contextvars.ContextVar("spraylab_base_dir", default=None)


@contextlib.contextmanager
def relative_to(directory: Path | str) -> Iterator[None]:
    """Resolve relative file paths against ``directory`` while validating inside this block."""
    token = _BASE_DIR.set(Path(directory))
    try:
        yield
    finally:
        _BASE_DIR.reset(token)


def resolve(path: str) -> Path:
    p = Path(path).expanduser()
    if not p.is_absolute():
        p = (_BASE_DIR.get() or Path.cwd()) / p
    return p.resolve()


def read_checked(path: str, sha256: str = "") -> tuple[Path, bytes, str]:
    """The resolved path, the content and its SHA-256 (hex); ValueError (one line) if the file
    cannot be read or its content no longer matches ``sha256``."""
    resolved = resolve(path)
    try:
        data = resolved.read_bytes()
    except OSError as exc:
        raise ValueError(f"cannot read {resolved} ({exc.strerror or exc})") from None
    digest = hashlib.sha256(data).hexdigest()
    if sha256 and sha256 != digest:
        raise ValueError(
            f"{resolved} has changed since this scenario was written (sha256 {digest[:12]}..., the scenario "
            f"says {sha256[:12]}...); remove the sha256 key to run the file as it is now"
        )
    return resolved, data, digest


def absolutize(data: dict[str, object], directory: Path) -> dict[str, object]:
    """A raw scenario dict whose file keys (``topology.file``, ``workload.file``) are made
    absolute against ``directory``: for a sweep's base scenario, whose files are relative to
    the base file, not to the sweep that names it."""

    def fix(section: object) -> object:
        if isinstance(section, dict) and isinstance(section.get("file"), str):
            p = Path(section["file"]).expanduser()
            return {**section, "file": str(p if p.is_absolute() else (directory / p).resolve())}
        return section

    out = dict(data)
    if "topology" in out:
        out["topology"] = fix(out["topology"])
    workload = out.get("workload")
    if isinstance(workload, list):
        out["workload"] = [fix(w) for w in workload]
    elif workload is not None:
        out["workload"] = fix(workload)
    return out


# Whether validation may read files beyond the size guard's row limit (run.allow_large, or the
# CLI's --allow-large): set by spraylab.model.scenario.validate, read by the file readers it calls.
_ALLOW_LARGE: contextvars.ContextVar[bool] = contextvars.ContextVar("spraylab_allow_large", default=False)
# Rows a flow file may have unless allowed: reading one costs about 9 us a row (CSV, measured on
# 10^5 rows: 0.9 s), so the limit keeps validation within about 10 s; 2 M rows took 54 s.
MAX_FILE_ROWS = 1_000_000


@contextlib.contextmanager
def allowing_large(allow: bool) -> Iterator[None]:
    """Let the readers called inside this block read files beyond :data:`MAX_FILE_ROWS`."""
    token = _ALLOW_LARGE.set(allow)
    try:
        yield
    finally:
        _ALLOW_LARGE.reset(token)


def check_row_count(name: str, rows: int) -> None:
    """ValueError (one line) when a file has more rows than validation reads unless allowed."""
    if rows > MAX_FILE_ROWS and not _ALLOW_LARGE.get():
        raise ValueError(
            f"{rows:,} rows exceed the limit of {MAX_FILE_ROWS:,} rows read from a flow file "
            "(reading takes about 10 s per million rows); "
            "set run.allow_large = true (CLI: --allow-large) to read it anyway"
        )
