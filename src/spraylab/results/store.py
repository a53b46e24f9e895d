"""A resumable results store: one directory per run, keyed by a hash of its full scenario.

Layout of a store directory::

    sweep.json          index: sweep name, axes, base scenario, points (key + axis values)
    log.jsonl           append-only journal: one line per sweep start/end and per run done/failed
    runs/<key>/         one run, complete or absent:
        manifest.json       written last: status ("done" | "incomplete" | "failed"), key, size + sha256 of every file
        scenario.json       the full scenario (its canonical JSON hashes to <key>)
        summary.json        the Result summary minus wall-clock fields: deterministic, byte for byte
        flows.parquet links.parquet groups.parquet      (done and incomplete runs)
        timing.json         wall-clock fields, host, pid (done and incomplete runs)
        error.json          error type, message and traceback text (failed runs)

A run is written into a staging directory under ``runs/`` (a dot name) and renamed onto
``runs/<key>`` in one step, so a reader never sees it half-written. A run counts as present only if
its manifest parses, names its key, and every file listed has the recorded size and sha256 and its
scenario hashes to the key; anything else (a torn write, a truncated or edited file, a directory
copied in by hand) is *corrupt*: never read, rerun on the next sweep. Staging leftovers of a killed
writer are removed when the next sweep takes the store's lock.

An *incomplete* run stopped (time limit, event or wall budget) before its workload finished: its
result is kept, marked apart, and not rerun unless its budget changes (a new key) or ``--force``.
"""

from __future__ import annotations

import contextlib
import dataclasses
import fcntl
import hashlib
import json
import os
import shutil
import tempfile
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Literal

from spraylab.metrics.result import RESULT_FILES, Result
from spraylab.results import provenance

FORMAT = 1
MANIFEST = "manifest.json"
TIMING_KEYS = ("wall_s",)  # summary fields that differ between identical runs
KEY_CHARS = 20  # hex digits of sha256 kept in a key (80 bits)

Status = Literal["done", "incomplete", "failed", "missing", "corrupt"]
RESULT_STATUSES = ("done", "incomplete")  # a stored Result, complete or not


class StoreError(Exception):
    """A run that is not (or not completely) in the store was asked for."""


class StoreLocked(StoreError):
    """Another process holds the store's write lock."""


# --- keys ---------------------------------------------------------------------------------


def canonical_json(data: Any) -> str:
    """Sorted keys, no whitespace, ASCII: the same data always gives the same text."""
    return json.dumps(data, sort_keys=True, separators=(",", ":"), ensure_ascii=True, allow_nan=False)


def scenario_key(scenario: dict[str, Any]) -> str:
    """The store key of a run: the hash of the canonical JSON of its full scenario dict."""
    return hashlib.sha256(canonical_json(scenario).encode()).hexdigest()[:KEY_CHARS]


def sha256_file(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def split_timing(summary: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """(deterministic summary, wall-clock fields)."""
    stable = {k: v for k, v in summary.items() if k not in TIMING_KEYS}
    timing = {k: summary[k] for k in TIMING_KEYS if k in summary}
    return stable, timing


# --- the store ----------------------------------------------------------------------------


class Store:
    """A directory of runs keyed by scenario hash, plus the index and journal of a sweep."""

    def __init__(self, root: str | Path) -> None:
        self.root = Path(root)
        self.runs = self.root / "runs"

    # paths
    def run_dir(self, key: str) -> Path:
        return self.runs / key

    @property
    def index_path(self) -> Path:
        return self.root / "sweep.json"

    @property
    def log_path(self) -> Path:
        return self.root / "log.jsonl"

    def exists(self) -> bool:
        return self.index_path.is_file()

    # --- status and verification ------------------------------------------------------
    def manifest(self, key: str) -> dict[str, Any] | None:
        """The run's manifest if the run is complete and intact, else ``None``."""
        d = self.run_dir(key)
        try:
            manifest = json.loads((d / MANIFEST).read_text())
        except (OSError, ValueError):
            return None
        if not isinstance(manifest, dict) or manifest.get("key") != key or manifest.get("format") != FORMAT:
            return None
        files = manifest.get("files")
        status = manifest.get("status")
        if not isinstance(files, dict) or status not in (*RESULT_STATUSES, "failed"):
            return None
        required = (
            RESULT_FILES + ("timing.json",) if status in RESULT_STATUSES else ("scenario.json", "error.json")
        )
        if any(name not in files for name in required):
            return None
        for name, meta in files.items():
            path = d / name
            try:
                if path.stat().st_size != meta["bytes"] or sha256_file(path) != meta["sha256"]:
                    return None
            except (OSError, KeyError, TypeError):
                return None
        try:
            if scenario_key(json.loads((d / "scenario.json").read_text())) != key:
                return None
        except (OSError, ValueError):
            return None
        return manifest

    def status(self, key: str) -> Status:
        if not self.run_dir(key).exists():
            return "missing"
        manifest = self.manifest(key)
        return "corrupt" if manifest is None else manifest["status"]

    # --- reading ----------------------------------------------------------------------
    def load(self, key: str) -> Result:
        """The Result of a stored run, complete or incomplete (its summary without wall-clock fields,
        see :meth:`timing`)."""
        manifest = self.manifest(key)
        if manifest is None or manifest["status"] not in RESULT_STATUSES:
            raise StoreError(f"{self.run_dir(key)}: no complete result (status: {self.status(key)})")
        return Result.load(self.run_dir(key))

    def summary(self, key: str) -> dict[str, Any]:
        """Only the summary of a stored run (cheaper than :meth:`load`)."""
        manifest = self.manifest(key)
        if manifest is None or manifest["status"] not in RESULT_STATUSES:
            raise StoreError(f"{self.run_dir(key)}: no complete result (status: {self.status(key)})")
        return json.loads((self.run_dir(key) / "summary.json").read_text())

    def timing(self, key: str) -> dict[str, Any]:
        return json.loads((self.run_dir(key) / "timing.json").read_text())

    def error(self, key: str) -> dict[str, Any]:
        manifest = self.manifest(key)
        if manifest is None or manifest["status"] != "failed":
            raise StoreError(f"{self.run_dir(key)}: no recorded failure (status: {self.status(key)})")
        return json.loads((self.run_dir(key) / "error.json").read_text())

    # --- writing ----------------------------------------------------------------------
    def write_result(self, key: str, result: Result, timing: dict[str, Any] | None = None) -> Path:
        """Store a run atomically, as ``done`` or, when its workload did not finish, ``incomplete``;
        its wall-clock summary fields go to ``timing.json``."""
        summary, wall = split_timing(result.summary)
        stable = dataclasses.replace(result, summary=summary)

        def fill(staging: Path) -> None:
            stable.write_files(staging)
            _write_json(staging / "timing.json", {**wall, **(timing or {})})

        return self._commit(key, "done" if result.summary.get("completed", True) else "incomplete", fill)

    def write_failure(self, key: str, scenario: dict[str, Any], error: dict[str, Any]) -> Path:
        """Record a run that raised: its scenario and ``error.json`` (type, message, traceback)."""

        def fill(staging: Path) -> None:
            _write_json(staging / "scenario.json", scenario)
            _write_json(staging / "error.json", error)

        return self._commit(key, "failed", fill)

    def _commit(self, key: str, status: str, fill: Any) -> Path:
        self.runs.mkdir(parents=True, exist_ok=True)
        staging = Path(tempfile.mkdtemp(prefix=f".staging-{key}-", dir=self.runs))
        try:
            fill(staging)
            files = {}
            for path in sorted(staging.iterdir()):
                _fsync_file(path)
                files[path.name] = {"bytes": path.stat().st_size, "sha256": sha256_file(path)}
            manifest = {
                "format": FORMAT,
                "key": key,
                "status": status,
                "spraylab": provenance.version(),
                "written_at": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
                "files": files,
            }
            _write_json(staging / MANIFEST, manifest)
            _fsync_file(staging / MANIFEST)
            target = self.run_dir(key)
            if target.exists():  # a corrupt run or an older failure: move it aside, then swap
                trash = self.runs / f".trash-{key}-{uuid.uuid4().hex[:8]}"
                os.replace(target, trash)
                os.replace(staging, target)
                shutil.rmtree(trash, ignore_errors=True)
            else:
                os.replace(staging, target)
            _fsync_dir(self.runs)
        except BaseException:
            shutil.rmtree(staging, ignore_errors=True)
            raise
        return target

    def remove_stale(self) -> int:
        """Delete staging and trash directories left by a killed writer (call under the lock)."""
        if not self.runs.is_dir():
            return 0
        n = 0
        for entry in self.runs.iterdir():
            if entry.name.startswith("."):
                shutil.rmtree(entry, ignore_errors=True) if entry.is_dir() else entry.unlink(missing_ok=True)
                n += 1
        return n

    # --- index and journal --------------------------------------------------------------
    def write_index(self, index: dict[str, Any]) -> None:
        self._mark()
        tmp = self.root / f".sweep.json.tmp-{os.getpid()}"
        _write_json(tmp, index)
        os.replace(tmp, self.index_path)

    def _mark(self) -> None:
        """Create the directory with its ownership marker first (see :mod:`spraylab.results.output`)."""
        from spraylab.results.output import write_marker

        self.root.mkdir(parents=True, exist_ok=True)
        write_marker(self.root, "sweep", ["sweep.json", "log.jsonl", "runs", ".lock", "report"])

    def read_index(self) -> dict[str, Any]:
        """The index, checked for the shape readers rely on (a bad one is one :class:`StoreError` line)."""
        try:
            index = json.loads(self.index_path.read_text())
        except FileNotFoundError:
            raise StoreError(f"{self.root}: not a sweep results directory (no sweep.json)") from None
        except (OSError, ValueError) as exc:
            raise StoreError(f"{self.index_path}: unreadable index ({_one_line(exc)})") from None
        problem = _index_problem(index)
        if problem:
            raise StoreError(f"{self.index_path}: malformed index: {problem}")
        return index

    def log(self, event: str, **fields: Any) -> None:
        """Append one JSON line to the journal (a line is written with one ``write`` call)."""
        self.root.mkdir(parents=True, exist_ok=True)
        line = json.dumps({"t": round(time.time(), 3), "event": event, **fields}, sort_keys=True) + "\n"
        fd = os.open(self.log_path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            os.write(fd, line.encode())
        finally:
            os.close(fd)

    def read_log(self) -> list[dict[str, Any]]:
        """Journal entries; a line torn by a kill is skipped."""
        entries = []
        try:
            text = self.log_path.read_text()
        except FileNotFoundError:
            return []
        for line in text.splitlines():
            try:
                entries.append(json.loads(line))
            except ValueError:
                continue
        return entries

    @contextlib.contextmanager
    def lock(self) -> Iterator[None]:
        """Exclusive write access for one sweep process (released by the kernel if it dies)."""
        self._mark()
        fd = os.open(self.root / ".lock", os.O_RDWR | os.O_CREAT, 0o644)
        try:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                holder = os.pread(fd, 64, 0).decode(errors="replace").strip() or "?"
                raise StoreLocked(
                    f"{self.root}: another sweep (pid {holder}) is writing to this store"
                ) from None
            os.ftruncate(fd, 0)
            os.pwrite(fd, str(os.getpid()).encode(), 0)
            yield
        finally:
            os.close(fd)


def _index_problem(index: Any) -> str | None:
    """What is wrong with a parsed ``sweep.json``, or None."""
    if not isinstance(index, dict):
        return f"expected a JSON object, got {type(index).__name__}"
    axes, points = index.get("axes"), index.get("points")
    if not isinstance(axes, list) or not all(
        isinstance(a, dict) and isinstance(a.get("key"), str) and isinstance(a.get("labels"), list)
        for a in axes
    ):
        return "'axes' must be a list of {key, values, labels}"
    keys = [a["key"] for a in axes]
    if not isinstance(points, list):
        return "'points' must be a list"
    for i, p in enumerate(points):
        if not (
            isinstance(p, dict)
            and isinstance(p.get("key"), str)
            and len(p["key"]) == KEY_CHARS
            and all(c in "0123456789abcdef" for c in p["key"])
            and all(isinstance(p.get(f), dict) and all(k in p[f] for k in keys) for f in ("values", "labels"))
        ):
            return f"point {i} must have a key ({KEY_CHARS} hex digits) and a value and label for every axis ({', '.join(keys)})"
    if not isinstance(index.get("name", ""), str):
        return "'name' must be a string"
    return None


def _one_line(exc: BaseException) -> str:
    return " ".join(str(exc).split())


def _write_json(path: Path, data: Any) -> None:
    path.write_text(json.dumps(data, indent=2, sort_keys=True, default=_plain) + "\n")


def _plain(value: Any) -> Any:
    """numpy scalars and other stragglers → JSON values."""
    if hasattr(value, "item"):
        return value.item()
    return str(value)


def _fsync_file(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _fsync_dir(path: Path) -> None:
    with contextlib.suppress(OSError):
        _fsync_file(path)
