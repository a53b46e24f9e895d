"""Workload ``flows``: explicit flows, as rows in the scenario or in a file.

Rows have ``src``, ``dst``, ``size``, optional ``start`` (default 0), ``id`` (default the row's
index) and ``after`` (ids of flows this one starts after: it starts ``start`` after the last of
them is received). A file may be CSV (a header naming these columns), Parquet (columns of
those names), an htsim connection matrix (``.cm``) or an HPCC/ns-3 ``flow.txt``
(``format = "ns3"``); :mod:`spraylab.formats` reads them, and every error names the file, the
row and the column.

Validation reads the file, stores its absolute path and SHA-256 (:mod:`spraylab.model.files`) and
keeps the parsed rows, so a bad file is reported before anything runs."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from pydantic import (
    Field,
    PrivateAttr,
    SerializerFunctionWrapHandler,
    model_serializer,
    model_validator,
)

from spraylab.formats.rows import FlowRow, FormatError, check_rows, read_csv, read_parquet, to_specs
from spraylab.model.files import check_row_count, read_checked
from spraylab.model.types import PositiveBytes, Section, TimePs
from spraylab.units import format_time
from spraylab.workload.base import FlowContext, Flows, GroupInfo, WorkloadSection, WorkloadSize, register

if TYPE_CHECKING:
    from spraylab.topology.base import TopologySection

FileFormat = Literal["csv", "parquet", "htsim", "ns3"]
SUFFIX_FORMAT: dict[str, FileFormat] = {
    ".csv": "csv",
    ".parquet": "parquet",
    ".pq": "parquet",
    ".cm": "htsim",
}

# Parsed files, by (path, sha256, format): a sweep validates the same file at every point.
_PARSED: dict[tuple[str, str, str], tuple[list[FlowRow], int | None]] = {}


class FlowRowSection(Section):
    """One row given inline (``rows = [{src = 0, dst = 1, size = "1MB"}, ...]``)."""

    id: int | None = Field(
        default=None, ge=0, description="the flow's name for `after`; default its row index"
    )
    src: int = Field(ge=0, description="sending host id")
    dst: int = Field(ge=0, description="receiving host id")
    size: PositiveBytes = Field(description="message size")
    start: TimePs = Field(default=0, description="start time, or the delay after the flows in `after`")
    after: list[int] = Field(
        default=[], description="ids of flows that must be received before this one starts"
    )

    @model_serializer(mode="wrap")
    def _dump(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        data = handler(self)  # TOML has no null: an id left to its default is left out
        if self.id is None:
            data.pop("id", None)
        return data


def parse_file(path: Path, data: bytes, fmt: str) -> tuple[list[FlowRow], int | None]:
    """The rows of a flow file and, for a connection matrix, its ``Nodes`` count; a file of
    no flows is refused (it would run as an empty, "done" run)."""
    rows, nodes = _parse_file(path, data, fmt)
    if not rows:
        raise FormatError(f"{path.name}: no flows; a flow file needs at least one row")
    return rows, nodes


def row_count(data: bytes, fmt: str) -> int:
    """An upper bound of a flow file's rows, without parsing it (the size guard's)."""
    if fmt == "parquet":
        import pyarrow as pa
        import pyarrow.parquet as pq

        try:
            return int(pq.ParquetFile(pa.BufferReader(data)).metadata.num_rows)
        except (pa.ArrowInvalid, OSError):
            return 0  # not Parquet: the reader says so
    lines = data.count(b"\n") + (not data.endswith(b"\n"))
    return lines - 1 if fmt == "csv" else lines  # a CSV's header is no row


def _parse_file(path: Path, data: bytes, fmt: str) -> tuple[list[FlowRow], int | None]:
    name = path.name
    if fmt == "csv":
        return read_csv(data, name), None
    if fmt == "parquet":
        return read_parquet(data, name), None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise FormatError(
            f"{name}: not UTF-8 text (byte {data[exc.start]:#04x} at offset {exc.start})"
        ) from None
    if fmt == "htsim":
        from spraylab.formats.htsim import parse_cm

        cm = parse_cm(text, name)
        return cm.rows, cm.nodes
    from spraylab.formats.ns3 import parse_flows

    return parse_flows(text, name), None


@register
class FlowsWorkload(WorkloadSection):
    summary = (
        "explicit flows (src, dst, size, start, after), inline or from CSV, Parquet, htsim .cm, ns-3 flow.txt"
    )

    kind: Literal["flows"] = "flows"
    rows: list[FlowRowSection] = Field(default=[], description="the flows, inline (or give `file`)")
    file: str = Field(
        default="", description="a CSV, Parquet, htsim .cm or ns-3 flow.txt file (or give `rows`)"
    )
    format: Literal["auto", "csv", "parquet", "htsim", "ns3"] = Field(
        default="auto", description="the file's format; auto = by suffix (.csv, .parquet, .cm)"
    )
    sha256: str = Field(
        default="", description="the file's SHA-256; filled in by validation, checked when given"
    )
    _rows: list[FlowRow] = PrivateAttr(default_factory=list)
    _nodes: int | None = PrivateAttr(default=None)

    @model_validator(mode="before")
    @classmethod
    def _read_file(cls, data: Any) -> Any:
        if not isinstance(data, dict) or not data.get("file") or not isinstance(data["file"], str):
            return data
        try:
            return cls._resolve(data)
        except ValueError as exc:  # FormatError included: name the key, then the row and column
            raise ValueError(f"workload.file = {data['file']!r}: {exc}") from None

    @classmethod
    def _resolve(cls, data: dict[str, Any]) -> dict[str, Any]:
        fmt = data.get("format", "auto")
        path, content, digest = read_checked(data["file"], data.get("sha256") or "")
        if fmt == "auto":
            fmt = SUFFIX_FORMAT.get(path.suffix.lower())
            if fmt is None:
                raise ValueError(
                    f"cannot tell the format of {path.name} from its suffix (format = 'auto'); "
                    "set format to one of csv, parquet, htsim, ns3"
                )
        if fmt in ("csv", "parquet", "htsim", "ns3"):
            key = (str(path), digest, fmt)
            if key not in _PARSED:
                check_row_count(path.name, row_count(content, fmt))
                _PARSED[key] = parse_file(path, content, fmt)
        return {**data, "file": str(path), "format": fmt, "sha256": digest}

    @model_validator(mode="after")
    def _one_source(self) -> FlowsWorkload:
        if bool(self.rows) == bool(self.file):
            raise ValueError(
                "workload.kind = 'flows': give the flows either inline (rows = [...]) or in a file (file = ...), "
                + ("not both" if self.rows else "got neither")
            )
        if self.file:
            rows, nodes = _PARSED[(self.file, self.sha256, self.format)]
            self._rows, self._nodes = rows, nodes
        else:
            self._rows = [
                FlowRow(
                    i if r.id is None else r.id,
                    r.src,
                    r.dst,
                    r.size,
                    r.start,
                    tuple(r.after),
                    f"workload.rows[{i}]",
                )
                for i, r in enumerate(self.rows)
            ]
        return self

    @model_serializer(mode="wrap")
    def _dump(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        # Only the keys of the source used: inline rows, or the file with its format and digest.
        data = handler(self)
        for key in ("file", "format", "sha256") if not self.file else ("rows",):
            data.pop(key, None)
        return data

    @property
    def flow_rows(self) -> list[FlowRow]:
        return self._rows

    def check_fabric(self, topology: TopologySection, n_hosts: int, where: str) -> None:
        """Hosts on the fabric, ids unique, dependencies acyclic; an imported ns-3 topology's
        ``host_of`` translates node ids (otherwise the ids are host ids). Raises ValueError
        naming the row and column."""
        host_of = getattr(topology, "host_of", None)
        name = Path(self.file).name if self.file else where
        if self._nodes is not None and self._nodes != n_hosts:
            raise ValueError(
                f"{name}: Nodes {self._nodes}, but the topology has {n_hosts} hosts; htsim numbers hosts as "
                "spraylab does, so the connection matrix and the fabric must have the same host count"
            )
        check_rows(self._rows, n_hosts, name, host_of if self.format == "ns3" and self.file else None)

    def late_start(self, time_limit_ps: int, where: str) -> str | None:
        """Every row with an explicit start at or after the time limit could never start (a
        row with ``after`` starts ``start`` after its dependencies, later still): the first
        such row, named."""
        late = next((r for r in self._rows if r.start_ps >= time_limit_ps), None)
        if late is None:
            return None
        count = sum(r.start_ps >= time_limit_ps for r in self._rows)
        name = Path(self.file).name if self.file else where
        key = f"{where}.file = {name!r}: " if self.file else ""
        return (
            f"{key}{late.where}, start = {format_time(late.start_ps)}: at or after run.time_limit = "
            f"{format_time(time_limit_ps)} ({count} of the {len(self._rows)} flows of {name} start that late), "
            "so they could never start; raise run.time_limit"
        )

    def build_flows(self, ctx: FlowContext) -> Flows:
        host_of = ctx.fabric.info.get("host_of")
        new = to_specs(
            self._rows, ctx.first_flow_id, ctx.group, host_of if self.format == "ns3" and self.file else None
        )
        ranks = len({f.src for f in new} | {f.dst for f in new})
        return new, {ctx.group: GroupInfo(ctx.group, "flows", sum(f.size_bytes for f in new), ranks)}

    def estimate_size(self, n_hosts: int, host_rate_bps: int) -> WorkloadSize:
        return WorkloadSize(len(self._rows), sum(r.size_bytes for r in self._rows))
