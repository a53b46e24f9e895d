"""Explicit flows as rows: source, destination, size, start and the flows each one waits for.

Every reader of flow files (CSV, Parquet, htsim ``.cm``, ns-3 ``flow.txt``) produces
:class:`FlowRow` values; :func:`to_specs` turns them into the simulator's ``FlowSpec``.
A bad value raises :class:`FormatError` naming the file, the row and the column."""

from __future__ import annotations

import contextlib
import csv
import hashlib
import io
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from spraylab.units import UnitError, parse_bytes, parse_time_ps
from spraylab.workload.flows import FlowSpec

CSV_COLUMNS = ("id", "src", "dst", "size", "start", "after")
_BASE_UNIT = {"size": "bytes", "start": "picoseconds"}
REQUIRED_COLUMNS = ("src", "dst", "size")


class FormatError(ValueError):
    """A file that cannot be read as the format it claims: one line naming where and what.

    A ValueError (not :class:`spraylab.model.scenario.ScenarioError`, which this module cannot import:
    the configuration imports the workloads that read files), so that inside scenario
    validation pydantic reports it under the key that named the file; the command line
    catches it like a ScenarioError. ``lines`` as in ScenarioError."""

    def __init__(self, line: str) -> None:
        super().__init__(line)
        self.lines = [line]


@dataclass(frozen=True, slots=True)
class FlowRow:
    """One flow as a file gives it. ``flow_id`` is the file's own name for the flow (what
    ``after`` refers to); ``where`` says where it was read ("flows.csv row 3"), for errors."""

    flow_id: int
    src: int
    dst: int
    size_bytes: int
    start_ps: int = 0
    after: tuple[int, ...] = ()
    where: str = ""


def read_bytes(path: Path) -> bytes:
    try:
        return path.read_bytes()
    except OSError as exc:
        raise FormatError(f"{path}: cannot read ({exc.strerror or exc})") from None


def digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def field_error(where: str, column: str, value: Any, allowed: str) -> FormatError:
    return FormatError(f"{where}, {column} = {value!r}: {allowed}")


def parse_int(where: str, column: str, value: Any, minimum: int = 0) -> int:
    text = value.strip() if isinstance(value, str) else value
    try:
        if isinstance(text, bool):
            raise ValueError
        number = int(text) if isinstance(text, str) else int(text) if float(text) == int(text) else None
        if number is None:
            raise ValueError
    except (TypeError, ValueError, OverflowError):
        raise field_error(where, column, value, f"must be a whole number >= {minimum}") from None
    if number < minimum:
        raise field_error(where, column, value, f"must be a whole number >= {minimum}")
    return number


def parse_quantity(where: str, column: str, value: Any, parse: Callable[[Any], int]) -> int:
    if isinstance(value, str):
        value = value.strip()
        # A bare number is in the base unit (bytes, picoseconds), as in a scenario file.
        if value.isdigit():
            value = int(value)
        else:
            with contextlib.suppress(ValueError):
                value = float(value)  # a bare decimal ("1.5"): checked as a Parquet float below
    # a fraction of the base unit (Parquet's float columns, "1.5" in a CSV) would be rounded
    # silently: refused (2000.0 is exact and read)
    if isinstance(value, float) and value == value and abs(value) != float("inf") and not value.is_integer():
        raise field_error(
            where, column, value, f"must be a whole number of {_BASE_UNIT.get(column, 'units')}"
        )
    try:
        return parse(value)
    except UnitError as exc:
        raise field_error(where, column, value, str(exc).split(": ", 1)[-1]) from None


def parse_after(where: str, value: Any) -> tuple[int, ...]:
    """``after``: the ids of the flows this one waits for, separated by spaces or semicolons
    (a comma would split the CSV cell); an empty cell means none."""
    if value is None or (isinstance(value, float) and value != value):  # NaN: an empty Parquet cell
        return ()
    if isinstance(value, (list, tuple)) or hasattr(value, "tolist"):
        items = list(value.tolist() if hasattr(value, "tolist") else value)
    else:
        items = str(value).replace(";", " ").split()
    return tuple(parse_int(where, "after", item) for item in items)


def row_from_mapping(record: dict[str, Any], index: int, where: str) -> FlowRow:
    for column in REQUIRED_COLUMNS:
        if record.get(column) in (None, ""):
            raise field_error(where, column, record.get(column), "missing; every row needs src, dst and size")
    raw_id = record.get("id")
    flow_id = index if raw_id in (None, "") else parse_int(where, "id", raw_id)
    start = record.get("start")
    return FlowRow(
        flow_id=flow_id,
        src=parse_int(where, "src", record["src"]),
        dst=parse_int(where, "dst", record["dst"]),
        size_bytes=parse_quantity(where, "size", record["size"], parse_bytes),
        start_ps=0 if start in (None, "") else parse_quantity(where, "start", start, parse_time_ps),
        after=parse_after(where, record.get("after")),
        where=where,
    )


def _check_columns(name: str, columns: Iterable[str]) -> None:
    columns = list(columns)
    repeated = [c for i, c in enumerate(columns) if c in columns[:i]]
    if repeated:  # a dict of the row would keep the last one silently
        raise FormatError(f"{name}: column {repeated[0]!r} appears more than once; give each column once")
    unknown = [c for c in columns if c not in CSV_COLUMNS]
    if unknown:
        raise FormatError(
            f"{name}: column {unknown[0]!r} is not a flow column; allowed: {', '.join(CSV_COLUMNS)}"
        )
    missing = [c for c in REQUIRED_COLUMNS if c not in columns]
    if missing:
        raise FormatError(f"{name}: no {missing[0]!r} column; a flow file needs src, dst and size")


def read_csv(data: bytes, name: str) -> list[FlowRow]:
    """Rows of a CSV file with a header naming columns among :data:`CSV_COLUMNS`. Rows are
    numbered from 1 (the header is row 0); ``#`` lines are comments."""
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise FormatError(
            f"{name}: not UTF-8 text (byte {data[exc.start]:#04x} at offset {exc.start})"
        ) from None
    lines = [line for line in text.splitlines() if not line.lstrip().startswith("#")]
    reader = csv.reader(io.StringIO("\n".join(lines)))
    header = next(reader, None)
    if header is None:
        raise FormatError(f"{name}: empty; a flow file starts with a header such as src,dst,size,start")
    header = [h.strip() for h in header]
    _check_columns(name, header)
    rows = []
    for number, cells in enumerate(reader, start=1):
        if not any(c.strip() for c in cells):
            continue
        where = f"{name} row {number}"
        if len(cells) != len(header):
            raise FormatError(
                f"{where}: {len(cells)} cells, the header has {len(header)} ({','.join(header)})"
            )
        rows.append(row_from_mapping(dict(zip(header, cells)), len(rows), where))
    return rows


def read_parquet(data: bytes, name: str) -> list[FlowRow]:
    import pyarrow as pa
    import pyarrow.parquet as pq

    def unreadable(exc: Exception) -> FormatError:
        return FormatError(f"{name}: not a Parquet file ({(str(exc).strip().splitlines() or ['?'])[0]})")

    try:
        file = pq.ParquetFile(pa.BufferReader(data))
    except (pa.ArrowInvalid, OSError) as exc:
        raise unreadable(exc) from None
    _check_columns(name, file.schema_arrow.names)  # before reading: a repeated name fails the read
    try:
        table = file.read()
    except (pa.ArrowInvalid, OSError) as exc:
        raise unreadable(exc) from None
    records = table.to_pylist()
    return [row_from_mapping(r, i, f"{name} row {i + 1}") for i, r in enumerate(records)]


def check_rows(rows: list[FlowRow], n_hosts: int, name: str, host_of: dict[int, int] | None = None) -> None:
    """Ids unique, dependencies known and acyclic, hosts on the fabric. ``host_of`` maps a file's
    node ids to host ids (ns-3 numbers switches and hosts together); None = the ids are host ids."""
    seen: dict[int, FlowRow] = {}
    for row in rows:
        if row.flow_id in seen:
            raise field_error(row.where, "id", row.flow_id, f"repeats the id of {seen[row.flow_id].where}")
        seen[row.flow_id] = row
        for column, node in (("src", row.src), ("dst", row.dst)):
            if host_of is not None and node not in host_of:
                raise field_error(row.where, column, node, "not a host of the topology file")
            host = node if host_of is None else host_of[node]
            if host >= n_hosts:
                raise field_error(row.where, column, node, f"must be a host id below {n_hosts}")
        if row.src == row.dst:
            raise field_error(row.where, "dst", row.dst, "equals src; a flow goes between two hosts")
        if row.size_bytes <= 0:
            raise field_error(row.where, "size", row.size_bytes, "must be > 0 bytes")
    for row in rows:
        for dep in row.after:
            if dep not in seen:
                raise field_error(row.where, "after", dep, "no flow has this id")
            if dep == row.flow_id:
                raise field_error(row.where, "after", dep, "a flow cannot wait for itself")
    cycle = _find_cycle(rows)
    if cycle:
        raise FormatError(
            f"{name}: the flows {' -> '.join(str(i) for i in cycle)} wait for each other in a cycle; none "
            "of them could ever start"
        )


def _find_cycle(rows: list[FlowRow]) -> list[int]:
    after = {row.flow_id: row.after for row in rows}
    state: dict[int, int] = {}  # 1 = on the current path, 2 = finished
    for root in after:
        if root in state:
            continue
        stack: list[tuple[int, int]] = [(root, 0)]
        path = [root]
        state[root] = 1
        while stack:
            node, i = stack[-1]
            deps = after[node]
            if i < len(deps):
                stack[-1] = (node, i + 1)
                nxt = deps[i]
                if state.get(nxt) == 1:
                    return path[path.index(nxt) :] + [nxt]
                if nxt not in state:
                    state[nxt] = 1
                    stack.append((nxt, 0))
                    path.append(nxt)
            else:
                state[node] = 2
                stack.pop()
                path.pop()
    return []


def to_specs(
    rows: list[FlowRow], first: int, group: str, host_of: dict[int, int] | None = None
) -> list[FlowSpec]:
    """FlowSpecs numbered from ``first`` in row order; ``after`` ids become those flow ids."""
    number = {row.flow_id: first + i for i, row in enumerate(rows)}
    hosts = host_of if host_of is not None else {}
    return [
        FlowSpec(
            first + i,
            hosts.get(row.src, row.src),
            hosts.get(row.dst, row.dst),
            row.size_bytes,
            row.start_ps,
            tuple(number[d] for d in row.after),
            group,
        )
        for i, row in enumerate(rows)
    ]
