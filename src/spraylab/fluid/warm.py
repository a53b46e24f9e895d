"""Warm re-solves: when flows leave, solve again only the flows their leaving can move.

Progressive filling raises a common level ``t`` and freezes a flow when one of its links
saturates. Take the last solve and a new problem with some of its flows gone and no capacity
lower (the fluid engine's re-solve after completions). Every link the change does not touch
has the same flows and capacity; a touched link (one a gone flow crossed, or one with more
capacity) carries no more than before at any level, so it saturates no earlier than it did.
The two fillings therefore agree level for level up to ``lam``, the lowest old saturation level
of a touched link (``inf`` where a touched link never saturated): every flow whose old
normalised rate is below ``lam`` froze before the fillings could diverge and keeps its rate
exactly. Only the rest are solved again, on the capacity the kept flows leave.

When the fastest flows of a permutation finish, ``lam`` is their own level and no other flow
moves: the re-solve costs no solve at all. A change that adds flows or lowers a capacity (an
arrival, a link event, the ACK reservation's next step) is solved whole: the bound that would
take needs the whole old filling, and measured it cost more than it saved.

The result is the same max-min allocation (the engine certifies every solve on the whole
problem), reached by a smaller solve or none.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from spraylab.fluid.solver import Problem

__all__ = ["WarmSolver"]

# A link counts as saturated from this fraction of its capacity on (for ``lam`` only: a link
# taken as saturated that is not only lowers ``lam``, so more flows are solved again)
SATURATED_RTOL = 1e-7
# Above this share of the flows to solve again the whole problem is solved: the sub-problem
# would save little and costs its construction
FULL_FRACTION = 0.5


class WarmSolver:
    """A max-min kernel with the memory of its last solve. Call it with the problem of flows
    ``rows`` (indices into one table of flows, ascending) and their capacities; ``reset``
    forgets the last solve (when the flows' routes change)."""

    def __init__(self, kernel: Callable[[Problem, np.ndarray], np.ndarray]) -> None:
        self.kernel = kernel
        self.flows_solved = 0  # rows passed to the kernel, over all solves
        self.reset()

    def reset(self) -> None:
        self._last: tuple[np.ndarray, Problem, np.ndarray, np.ndarray] | None = None

    def solver_for(self, rows: np.ndarray) -> Callable[[Problem, np.ndarray], np.ndarray]:
        """The solve function of the problems of flows ``rows``."""
        return lambda problem, capacity: self(problem, capacity, rows)

    def __call__(self, problem: Problem, capacity: np.ndarray, rows: np.ndarray) -> np.ndarray:
        cap = np.asarray(capacity, dtype=float)
        rates = self._warm(problem, cap, rows) if self._last is not None else None
        if rates is None:
            rates = self._solve(problem, cap)
        self._last = (rows, problem, cap, rates)
        return rates

    def _solve(self, problem: Problem, cap: np.ndarray) -> np.ndarray:
        self.flows_solved += problem.n_flows
        return self.kernel(problem, cap)

    def _warm(self, p: Problem, cap: np.ndarray, rows: np.ndarray) -> np.ndarray | None:
        """The rates by a warm re-solve, or None when the change is not one it covers."""
        old_rows, old_p, old_cap, old_rates = self._last  # type: ignore[misc]
        if p.n_links != old_p.n_links or len(rows) > len(old_rows) or (cap < old_cap).any():
            return None
        pos = np.searchsorted(old_rows, rows)
        if (pos >= len(old_rows)).any() or (old_rows[pos] != rows).any():
            return None  # a new flow
        gone = np.ones(len(old_rows), dtype=bool)
        gone[pos] = False
        touched = np.zeros(p.n_links, dtype=bool)
        touched[old_p.link[gone[old_p.entry_flow]]] = True
        touched |= cap > old_cap
        lam = _lowest_saturation(old_p, old_cap, old_rates, touched)
        rates = old_rates[pos]
        again = rates / p.weight >= lam
        n_again = int(again.sum())
        if not n_again:
            return rates
        if n_again > FULL_FRACTION * len(rows):
            return None
        kept = ~again[p.entry_flow]
        used = np.bincount(
            p.link[kept], weights=p.coef[kept] * rates[p.entry_flow[kept]], minlength=p.n_links
        )
        which = np.flatnonzero(again)
        rates[which] = self._solve(p.restrict(which), np.maximum(cap - used, 0.0))
        return rates


def _lowest_saturation(p: Problem, cap: np.ndarray, rates: np.ndarray, mine: np.ndarray) -> float:
    """The lowest saturation level among the links ``mine`` marks in the solve ``rates`` of
    ``p``: a saturated link's level is the largest normalised rate on it; ``inf`` if none is
    saturated."""
    on = mine[p.link]
    if not on.any():
        return np.inf
    link, flow = p.link[on], p.entry_flow[on]
    load = np.bincount(link, weights=p.coef[on] * rates[flow], minlength=p.n_links)
    top = np.full(p.n_links, -np.inf)
    np.maximum.at(top, link, rates[flow] / p.weight[flow])
    saturated = mine & (load >= cap * (1 - SATURATED_RTOL)) & (top > -np.inf)
    return float(top[saturated].min(initial=np.inf))
