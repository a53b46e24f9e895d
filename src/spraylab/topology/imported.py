"""Topology ``imported``: a fabric read from another simulator's file.

``format = "htsim"`` reads an htsim fat-tree description (``.topo``: tiers, radix,
oversubscription, speeds, latencies), ``format = "ns3"`` an HPCC/ns-3 ``topology.txt`` (any
graph of hosts and switches); ``auto`` picks htsim for ``.topo`` files. The readers are in
:mod:`spraylab.formats`; fields spraylab cannot model are refused with the line that holds them,
unless named in ``ignore`` (htsim's per-port queue sizes, say, which spraylab's shared switch
buffer replaces)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from pydantic import Field, PrivateAttr, model_validator

from spraylab.model.files import read_checked
from spraylab.topology.base import FabricSize, LinkEvent, TopologySection, register
from spraylab.topology.fabric import Fabric

if TYPE_CHECKING:
    from spraylab.formats.htsim import FabricPlan

# Parsed fabrics, by (path, sha256, format, ignore): sweeps validate every point. An htsim
# fat-tree is kept as its plan (checked and counted) until a run needs it built: the size guard
# refuses one of 10^9 hosts from its counts, before any host exists.
_BUILT: dict[tuple[str, str, str, tuple[str, ...]], tuple[Fabric | FabricPlan, dict[int, int] | None]] = {}


def read_fabric(
    path: Path, data: bytes, fmt: str, ignore: tuple[str, ...]
) -> tuple[Fabric | FabricPlan, dict[int, int] | None]:
    """The fabric of a topology file (an htsim one as its plan) and, for ns-3, the map from
    node ids to host ids."""
    from spraylab.formats.rows import FormatError

    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise FormatError(
            f"{path.name}: not UTF-8 text (byte {data[exc.start]:#04x} at offset {exc.start})"
        ) from None
    if fmt == "htsim":
        from spraylab.formats import htsim

        return htsim.plan_fabric(htsim.parse_topo(text, path.name, ignore)), None
    from spraylab.formats import ns3

    if ignore:
        raise FormatError(
            f"{path.name}: topology.ignore = {list(ignore)!r}: an ns-3 topology has no keys to ignore"
        )
    topo = ns3.parse_topology(text, path.name)
    return ns3.build_fabric(topo), ns3.host_map(topo)


@register
class ImportedTopology(TopologySection):
    summary = "a fabric read from an htsim .topo or ns-3 topology.txt file (spraylab import)"

    kind: Literal["imported"] = "imported"
    file: str = Field(description="the topology file (htsim .topo or ns-3 topology.txt)")
    format: Literal["auto", "htsim", "ns3"] = Field(
        default="auto", description="auto = htsim for .topo files"
    )
    ignore: list[str] = Field(
        default=[], description="keys of the file to read and drop (htsim: Queue_Up, Queue_Down)"
    )
    sha256: str = Field(
        default="", description="the file's SHA-256; filled in by validation, checked when given"
    )
    events: list[LinkEvent] = []
    _fabric: Fabric | FabricPlan | None = PrivateAttr(default=None)
    _host_of: dict[int, int] | None = PrivateAttr(default=None)

    @model_validator(mode="before")
    @classmethod
    def _read_file(cls, data: Any) -> Any:
        if not isinstance(data, dict) or not isinstance(data.get("file"), str):
            return data
        try:
            path, content, digest = read_checked(data["file"], data.get("sha256") or "")
            fmt = data.get("format", "auto")
            if fmt == "auto":
                if path.suffix.lower() != ".topo":
                    raise ValueError(
                        f"cannot tell the format of {path.name} from its suffix (format = 'auto'); set "
                        "format = 'htsim' or 'ns3'"
                    )
                fmt = "htsim"
            ignore = tuple(data.get("ignore") or ())
            key = (str(path), digest, fmt, ignore)
            if fmt in ("htsim", "ns3") and all(isinstance(i, str) for i in ignore) and key not in _BUILT:
                _BUILT[key] = read_fabric(path, content, fmt, ignore)
        except ValueError as exc:
            raise ValueError(f"topology.file = {data['file']!r}: {exc}") from None
        return {**data, "file": str(path), "format": fmt, "sha256": digest}

    @model_validator(mode="after")
    def _built(self) -> ImportedTopology:
        self._fabric, self._host_of = _BUILT[self._key]
        return self

    @property
    def _key(self) -> tuple[str, str, str, tuple[str, ...]]:
        return (self.file, self.sha256, self.format, tuple(self.ignore))

    def _built_fabric(self) -> Fabric:
        """The fabric, built on first use (and kept for every scenario of the same file)."""
        if not isinstance(self._fabric, Fabric):
            assert self._fabric is not None
            self._fabric = self._fabric.build()
            _BUILT[self._key] = (self._fabric, self._host_of)
        return self._fabric

    def fabric(self) -> Fabric:
        """A fresh copy each time: the network adds nothing to it, but callers may."""
        import copy

        fabric = copy.deepcopy(self._built_fabric())
        if self._host_of is not None:  # an ns-3 flow file's node ids are translated through it
            fabric.info["host_of"] = dict(self._host_of)
        return fabric

    def n_hosts(self) -> int:
        assert self._fabric is not None
        return self._fabric.n_hosts

    def build_fabric(self) -> Fabric:
        return self.fabric()

    def estimate_size(self) -> FabricSize:
        assert self._fabric is not None
        fabric = self._fabric
        if not isinstance(fabric, Fabric):  # an htsim plan: 2 tiers or 3, every ToR pair via the top
            hops = 2 * fabric.desc.tiers if fabric.tors > 1 else 2
            return FabricSize(fabric.n_hosts, fabric.n_switches, fabric.n_links, fabric.rates[0], hops)
        # an inter-ToR path climbs to the top tier and back down: 2 host links + 2 per tier above 1
        top = max(fabric.switch_tier.values(), default=1)
        hops = 2 * top if len(set(fabric.host_tor)) > 1 else 2
        return FabricSize(
            fabric.n_hosts, len(fabric.switch_tier), len(fabric.links), fabric.host_rate_bps, hops
        )

    @property
    def host_of(self) -> dict[int, int] | None:
        """ns-3 node id -> host id (None for htsim, whose host ids are spraylab's)."""
        return self._host_of

    @property
    def host_rate_bps(self) -> int:
        assert self._fabric is not None
        fabric = self._fabric
        return fabric.host_rate_bps if isinstance(fabric, Fabric) else fabric.rates[0]
