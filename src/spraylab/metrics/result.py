"""The outcome of one run: per-flow, per-link and per-group tables plus a summary.

Saved as Parquet tables and JSON (scenario, summary) in one directory, written atomically by
:func:`spraylab.results.output.write_dir`: everything goes to a temporary sibling directory that is renamed
into place, so a reader never sees a half-written result.

The tables are pandas DataFrames built on first access from the columns the engine collected
(``tables``, :class:`~spraylab.metrics.columns.ColumnTable`), and saved to Parquet from those
columns when no DataFrame was built: a run whose caller reads only the summary, or saves it, never
imports pandas (about 0.3 s and 50 MB of a small run's fixed cost).
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from spraylab.metrics.columns import ColumnTable

if TYPE_CHECKING:
    import pandas as pd

    from spraylab.runs.monitor import TimeSeries

RESULT_FILES = ("flows.parquet", "links.parquet", "groups.parquet", "summary.json", "scenario.json")
TABLES = ("flows", "links", "groups")

# Flow-size buckets for slowdown by size (bytes, upper bound inclusive).
SIZE_BUCKETS: tuple[tuple[str, float], ...] = (
    ("<=10KB", 10_000),
    ("10KB-100KB", 100_000),
    ("100KB-1MB", 1_000_000),
    ("1MB-10MB", 10_000_000),
    (">10MB", math.inf),
)

# Picoseconds per unit, for :meth:`Result.summary_in` ("µs" and "us" are the same unit).
TIME_UNITS_PS = {"ps": 1, "ns": 10**3, "us": 10**6, "µs": 10**6, "ms": 10**9, "s": 10**12}

# Stands for a table not built yet: the field is then absent from the instance, and
# ``__getattr__`` builds it.
_LATER: Any = object()


def _later() -> Any:
    return _LATER


@dataclass
class Result:
    scenario: dict[str, Any]
    summary: dict[str, Any]
    flows: pd.DataFrame = field(default_factory=_later)
    links: pd.DataFrame = field(default_factory=_later)
    groups: pd.DataFrame = field(default_factory=_later)
    # per-port, per-flow and per-switch time series ([monitor] runs only; see spraylab.runs.monitor)
    timeseries: TimeSeries | None = None
    # collects (flows, links, groups) as columns for the tables not given, called once when a
    # table is first read or saved; a table neither given nor collected is empty
    tables: Callable[[], tuple[ColumnTable, ColumnTable, ColumnTable]] | None = field(
        default=None, repr=False, compare=False
    )

    def __post_init__(self) -> None:
        for name in TABLES:
            if self.__dict__[name] is _LATER:
                del self.__dict__[name]

    def __getattr__(self, name: str) -> Any:
        # Only called when normal lookup fails: a table not built yet.
        if name not in TABLES:
            raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")
        frame = self._columns()[name].frame()
        self.__dict__[name] = frame
        return frame

    def _columns(self) -> dict[str, ColumnTable]:
        """The collected columns of every table, collecting them on the first call."""
        columns = self.__dict__.get("_collected")
        if columns is None:
            built = self.__dict__.get("tables")
            collected = built() if built is not None else ()
            columns = dict(zip(TABLES, collected)) or dict.fromkeys(TABLES, ColumnTable())
            self.__dict__["_collected"] = columns
            self.__dict__["tables"] = None
        return columns

    def __getstate__(self) -> dict[str, Any]:
        # pickled (sweep workers) with its columns collected: the collector is a closure
        self._columns()
        return {**self.__dict__, "tables": None}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)

    def summary_in(self, unit: str = "s") -> dict[str, Any]:
        """The summary with its times in ``unit`` (ps, ns, us or µs, ms, s) instead of integer
        picoseconds: every ``*_ps`` key (``fct_p99_ps``, ``cct_ps[allreduce]``) becomes a float
        under the same name with the unit's suffix (``fct_p99_s``, ``cct_s[allreduce]``; µs is
        spelt ``us`` in keys), None stays None; every other key is as in ``summary``."""
        factor = TIME_UNITS_PS.get(unit)
        if factor is None:
            raise ValueError(f"unit {unit!r}: not a time unit; allowed: {', '.join(TIME_UNITS_PS)}")
        suffix = "_us" if unit == "µs" else f"_{unit}"
        out: dict[str, Any] = {}
        for key, value in self.summary.items():
            name, bracket, rest = key.partition("[")
            if not name.endswith("_ps") or isinstance(value, bool):
                out[key] = value
                continue
            converted = value / factor if isinstance(value, (int, float)) else value
            out[name.removesuffix("_ps") + suffix + bracket + rest] = converted
        return out

    def save(self, directory: str | Path) -> Path:
        """Write the result to ``directory`` atomically, replacing an older spraylab result there;
        a directory holding anything else is refused (:class:`spraylab.results.output.OutputError`)."""
        from spraylab.results.output import write_dir

        return write_dir(directory, "run", self.write_files, option="directory")

    def write_files(self, directory: Path) -> None:
        """The result's files (:data:`RESULT_FILES`), written into an existing directory."""
        for name in TABLES:
            path = directory / f"{name}.parquet"
            if name in self.__dict__:  # a DataFrame given or already built
                self.__dict__[name].to_parquet(path, index=False)
            else:
                self._columns()[name].write_parquet(path)
        _write_json(directory / "summary.json", self.summary)
        _write_json(directory / "scenario.json", self.scenario)
        if self.timeseries is not None:
            self.timeseries.write_files(directory)

    @classmethod
    def load(cls, directory: str | Path) -> Result:
        import pandas as pd

        from spraylab.runs.monitor import TimeSeries

        d = Path(directory)
        missing = [name for name in RESULT_FILES if not (d / name).is_file()]
        if missing:
            raise FileNotFoundError(f"{d}: not a complete spraylab result (missing {', '.join(missing)})")

        def table(name: str) -> Any:
            try:
                return pd.read_parquet(d / name)
            except (ValueError, OSError) as exc:  # pyarrow's ArrowInvalid is a ValueError
                raise ResultFileError(
                    f"{d / name}: not a readable Parquet table ({_first_line(exc)})"
                ) from None

        try:
            timeseries = TimeSeries.load(d)
        except (ValueError, OSError) as exc:
            raise ResultFileError(
                f"{d}: a time-series table is not readable Parquet ({_first_line(exc)})"
            ) from None
        return cls(
            scenario=_read_object(d / "scenario.json"),
            summary=_read_object(d / "summary.json"),
            flows=table("flows.parquet"),
            links=table("links.parquet"),
            groups=table("groups.parquet"),
            timeseries=timeseries,
        )

    def __repr__(self) -> str:
        s = self.summary
        return (
            f"Result({s.get('scheme')}: {s.get('flows_completed')}/{s.get('flows')} flows, "
            f"stop={s.get('stop_reason')}, mean slowdown={s.get('slowdown_mean')})"
        )


class ResultFileError(ValueError):
    """A result file that exists but cannot be read (truncated, not JSON, not Parquet): one
    line naming the file."""


def _first_line(exc: BaseException) -> str:
    return (str(exc).strip().splitlines() or [type(exc).__name__])[0]


def _read_object(path: Path) -> dict[str, Any]:
    """A JSON object file of a result; :class:`ResultFileError` if it is anything else."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (ValueError, OSError) as exc:  # JSONDecodeError and UnicodeDecodeError are ValueErrors
        raise ResultFileError(f"{path}: not valid JSON ({_first_line(exc)})") from None
    if not isinstance(data, dict):
        raise ResultFileError(f"{path}: a JSON {type(data).__name__}, expected an object ({{...}})")
    return data


def _write_json(path: Path, data: dict[str, Any]) -> None:
    path.write_text(json.dumps(_jsonable(data), indent=2, sort_keys=True) + "\n")


def _jsonable(value: Any) -> Any:
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    if isinstance(value, (np.integer,)):
        return int(value)
    if isinstance(value, (np.floating, float)):
        f = float(value)
        return f if math.isfinite(f) else None
    return value


def percentile(values: np.ndarray, q: float) -> float | None:
    return float(np.percentile(values, q)) if len(values) else None


def size_bucket(size_bytes: int) -> str:
    for name, upper in SIZE_BUCKETS:
        if size_bytes <= upper:
            return name
    return SIZE_BUCKETS[-1][0]
