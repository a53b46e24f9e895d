"""Empirical flow-size distributions and Poisson background traffic drawn from them."""

from __future__ import annotations

import bisect
import random
from collections.abc import Sequence
from importlib import resources
from pathlib import Path

from spraylab.workload.flows import FlowSpec

__all__ = ["FlowSizeCdf", "poisson_flows"]

# Public name -> file shipped in spraylab/data/flow_size_cdfs/.
_SHIPPED = {
    "websearch": "WebSearch_distribution.txt",
    "fb_hadoop": "FbHdp_distribution.txt",
    "alistorage2019": "AliStorage2019.txt",
    "googlerpc2008": "GoogleRPC2008.txt",
    "solar2022": "Solar2022.txt",
}


class FlowSizeCdf:
    """Piecewise-linear CDF of flow sizes given by ``(bytes, cumulative fraction)`` points.

    Between consecutive points the size is uniformly distributed; a positive fraction at
    the first point is a point mass at that size.
    """

    def __init__(self, points: Sequence[tuple[float, float]], name: str = "") -> None:
        if len(points) < 2:
            raise ValueError(f"CDF {name!r}: need at least 2 points, got {len(points)}")
        sizes = [float(s) for s, _ in points]
        fracs = [float(f) for _, f in points]
        if sizes[0] < 0:
            raise ValueError(f"CDF {name!r}: sizes must be >= 0, got {sizes[0]}")
        for i in range(1, len(points)):
            if sizes[i] < sizes[i - 1] or fracs[i] < fracs[i - 1]:
                raise ValueError(
                    f"CDF {name!r}: point {i} {points[i]} is below point {i - 1} {points[i - 1]}"
                )
        if not (fracs[0] >= 0 and abs(fracs[-1] - 1) <= 1e-6):
            raise ValueError(
                f"CDF {name!r}: fractions must run from >= 0 up to 1, got {fracs[0]}..{fracs[-1]}"
            )
        if sizes[-1] <= 0:
            raise ValueError(f"CDF {name!r}: the largest size must be > 0")
        # Snap to exactly 1 so rng.random() < 1 always lands inside the table.
        fracs[-1] = 1.0
        self.name = name
        self.sizes: tuple[float, ...] = tuple(sizes)
        self.fractions: tuple[float, ...] = tuple(fracs)

    def __repr__(self) -> str:
        return (
            f"FlowSizeCdf(name={self.name!r}, points={len(self.sizes)}, mean_bytes={self.mean_bytes():.0f})"
        )

    @classmethod
    def names(cls) -> list[str]:
        """Names accepted by :meth:`load`."""
        return list(_SHIPPED)

    @classmethod
    def load(cls, name: str) -> FlowSizeCdf:
        """One of the shipped distributions, by case-insensitive name (see :meth:`names`)."""
        key = name.lower()
        if key not in _SHIPPED:
            raise ValueError(f"unknown flow-size CDF {name!r}: use one of {', '.join(_SHIPPED)}")
        text = (resources.files("spraylab") / "data" / "flow_size_cdfs" / _SHIPPED[key]).read_text()
        return cls(_parse_points(text, _SHIPPED[key]), name=key)

    @classmethod
    def from_file(cls, path: str | Path) -> FlowSizeCdf:
        """A CDF file with one ``bytes cumulative_percent`` pair per line (``#`` starts a comment)."""
        path = Path(path)
        return cls(_parse_points(path.read_text(), str(path)), name=path.stem)

    def sample(self, rng: random.Random) -> int:
        """One flow size in bytes (at least 1), by inverse transform."""
        u = rng.random()
        i = bisect.bisect_right(self.fractions, u)
        if i == 0:
            size = self.sizes[0]
        else:
            # fractions[i-1] <= u < fractions[i], so the segment has positive width.
            lo_f, hi_f = self.fractions[i - 1], self.fractions[i]
            lo_s, hi_s = self.sizes[i - 1], self.sizes[i]
            size = lo_s + (u - lo_f) / (hi_f - lo_f) * (hi_s - lo_s)
        return max(1, round(size))

    def mean_bytes(self) -> float:
        """Exact mean of the piecewise-linear distribution (before rounding to whole bytes)."""
        total = self.fractions[0] * self.sizes[0]
        for i in range(1, len(self.sizes)):
            total += (self.fractions[i] - self.fractions[i - 1]) * (self.sizes[i] + self.sizes[i - 1]) / 2
        return total


def _parse_points(text: str, source: str) -> list[tuple[float, float]]:
    points = []
    for lineno, raw in enumerate(text.splitlines(), start=1):
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        fields = line.split()
        try:
            if len(fields) != 2:
                raise ValueError
            size, percent = float(fields[0]), float(fields[1])
        except ValueError:
            raise ValueError(f"{source}:{lineno}: expected 'bytes cumulative_percent', got {raw!r}") from None
        points.append((size, percent / 100))
    return points


def poisson_flows(
    hosts: Sequence[int],
    cdf: FlowSizeCdf,
    load: float,
    host_rate_bps: int,
    duration_ps: int,
    rng: random.Random,
    first_flow_id: int = 0,
) -> list[FlowSpec]:
    """Open-loop Poisson traffic offering ``load`` of every host's link rate on average.

    Aggregate arrival rate is ``load * host_rate_bps * len(hosts) / (8 * mean_bytes)``
    flows/s; each flow picks a uniform source and a uniform different destination.
    Start times fall in ``[0, duration_ps)``.
    """
    if not 0 < load <= 1:
        raise ValueError(f"load must be in (0, 1], got {load}")
    if len(hosts) < 2 or len(set(hosts)) != len(hosts):
        raise ValueError(f"need at least 2 distinct hosts, got {list(hosts)}")
    if host_rate_bps <= 0:
        raise ValueError(f"host_rate_bps must be > 0, got {host_rate_bps}")
    if duration_ps < 0:
        raise ValueError(f"duration_ps must be >= 0, got {duration_ps}")
    flows_per_ps = load * host_rate_bps * len(hosts) / (8 * cdf.mean_bytes()) / 1e12
    flows: list[FlowSpec] = []
    t = rng.expovariate(flows_per_ps)
    while t < duration_ps:
        s = rng.randrange(len(hosts))
        # Draw from the other n-1 hosts directly instead of rejecting src == dst.
        d = rng.randrange(len(hosts) - 1)
        if d >= s:
            d += 1
        flows.append(
            FlowSpec(
                flow_id=first_flow_id + len(flows),
                src=hosts[s],
                dst=hosts[d],
                size_bytes=cdf.sample(rng),
                start_ps=int(t),
            )
        )
        t += rng.expovariate(flows_per_ps)
    return flows
