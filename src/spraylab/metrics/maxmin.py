"""Ideal max-min fair rates (the fluid reference a load balancer is judged against) and Jain's index."""

from __future__ import annotations

import math
from collections.abc import Hashable, Iterable, Mapping, Sequence

__all__ = ["jain_index", "max_min_rates"]


def max_min_rates(
    flow_links: Sequence[Sequence[Hashable]], capacity: Mapping[Hashable, float]
) -> list[float]:
    """Max-min fair rate of every flow, by progressive filling.

    ``flow_links[f]`` lists the links flow ``f`` crosses (a link listed twice counts once);
    ``capacity`` maps each link to its capacity. Repeatedly the link offering the smallest
    equal share to its not-yet-fixed flows is the bottleneck: its flows are fixed at that
    share and their rate is taken off every link they cross. Flows with no links get ``inf``.
    """
    rates = [math.inf] * len(flow_links)
    remaining: dict[Hashable, float] = {}
    users: dict[Hashable, set[int]] = {}  # link -> flows on it whose rate is still open
    for f, links in enumerate(flow_links):
        for link in links:
            if link not in capacity:
                raise ValueError(f"flow {f} crosses link {link!r}, which has no capacity")
            if capacity[link] < 0:
                raise ValueError(f"link {link!r} has negative capacity {capacity[link]}")
            remaining[link] = float(capacity[link])
            users.setdefault(link, set()).add(f)
    link_sets = [set(links) for links in flow_links]

    while users:
        bottleneck = min(users, key=lambda link: remaining[link] / len(users[link]))
        share = remaining[bottleneck] / len(users[bottleneck])
        if math.isinf(share):
            # Only infinite links are left; subtracting inf would just make NaNs.
            break
        for f in users[bottleneck].copy():
            rates[f] = share
            for link in link_sets[f]:
                # Clamp: float error can push a just-saturated link a hair below zero.
                remaining[link] = max(0.0, remaining[link] - share)
                users[link].discard(f)
                if not users[link]:
                    del users[link]
    return rates


def jain_index(values: Iterable[float]) -> float:
    """Jain's fairness index ``(sum x)^2 / (n * sum x^2)``: 1 when all equal, 1/n at worst.

    All-zero input counts as perfectly fair (1.0).
    """
    xs = [float(v) for v in values]
    if not xs:
        raise ValueError("jain_index needs at least one value")
    if any(x < 0 or not math.isfinite(x) for x in xs):
        raise ValueError("jain_index needs finite values >= 0")
    top = max(xs)
    if top == 0:
        return 1.0
    xs = [x / top for x in xs]  # scale to [0, 1]: tiny values must not underflow when squared
    index = sum(xs) ** 2 / (len(xs) * sum(x * x for x in xs))
    return min(1.0, max(1.0 / len(xs), index))
