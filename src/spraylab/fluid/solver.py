"""Exact weighted max-min fair rates on flat arrays, and the certificate every solve passes.

A :class:`Problem` is a sparse flow x link matrix in CSR form: flow ``f`` crosses links
``link[ptr[f]:ptr[f+1]]`` and puts ``coef`` bytes on each per byte of its own rate (1 for a
flow on one path, ``1/k`` on each of ``k`` equal shares of a split flow, ``m`` for a class of
``m`` identical flows). ``weight[f]`` is its share weight: a fair allocation gives every flow
``weight x level`` until one of its links saturates.

The solver is progressive filling in batches. Each link has a *fill level*: the share level
at which it saturates given the flows already frozen. Freezing flows at a level no higher than
a link's fill level can only raise that link's level (what the frozen flows take is less than
they would at its level), so the lowest link is exact, and so is every next-lowest link none of
whose flows crosses an earlier one of the batch. A round takes the ``BATCH`` lowest links in
order, keeps the prefix in which no flow crosses two of them, freezes every unfrozen flow of
each at that link's level, and updates the links those flows cross. A round costs
O(links + entries of the flows it freezes) in a few vectorised steps; 65,536 ECMP flows on a
1024-host fat-tree reach about 3,000 distinct bottleneck levels, solved in about 330 rounds
(``spraylab.metrics.maxmin``, kept as the test oracle, is the one-link-at-a-time reference).

:func:`certify` checks the defining property of the result: the allocation is feasible and
every flow has a *bottleneck*, a saturated link on which no flow has a larger normalised rate
(rate / weight). For positive coefficients that property holds for exactly one allocation, so
a certified solve is the max-min fair one whatever algorithm produced it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import cached_property
from importlib.util import find_spec

import numpy as np

__all__ = [
    "Problem",
    "CertificateError",
    "solve",
    "certify",
    "problem_from_lists",
    "problem_from_rows",
    "solver_named",
    "pick_solver",
]

BATCH = 16  # candidate links examined per round (measured: 8-32 best on 65k ECMP flows)
# "auto" takes the numba kernel from this many messages on: below it a run re-solves too few
# times to repay numba's import and cache load (0.3-0.8 s; docs/fluid.md, "Rates").
JIT_MIN_FLOWS = 2000


class CertificateError(AssertionError):
    """A solve whose result is not max-min fair (a bug, never a property of the input)."""


@dataclass(frozen=True)
class Problem:
    """Flows x links in CSR form. ``ptr`` (F + 1), ``link`` and ``coef`` (nnz), ``weight`` (F),
    ``n_links``; the entry -> flow map and the link -> flows transpose are built on first use
    (the fluid engine's ACK rows only ever need the first)."""

    ptr: np.ndarray
    link: np.ndarray
    coef: np.ndarray
    weight: np.ndarray
    n_links: int

    @cached_property
    def entry_flow(self) -> np.ndarray:
        """The flow of every entry."""
        return np.repeat(np.arange(self.n_flows, dtype=np.int64), np.diff(self.ptr))

    @cached_property
    def link_entries(self) -> np.ndarray:
        """Entry indices grouped by link (in entry order within a link)."""
        # numpy sorts 16-bit keys by radix (4-9x faster than int64's timsort): the engine
        # builds a problem per re-solve
        key = self.link.astype(np.uint16) if self.n_links <= 1 << 16 else self.link
        return np.argsort(key, kind="stable")

    @cached_property
    def link_ptr(self) -> np.ndarray:
        """Where each link's entries start in :attr:`link_entries`."""
        link_ptr = np.zeros(self.n_links + 1, dtype=np.int64)
        np.cumsum(np.bincount(self.link, minlength=self.n_links), out=link_ptr[1:])
        return link_ptr

    @property
    def n_flows(self) -> int:
        return len(self.ptr) - 1

    def restrict(self, rows: np.ndarray) -> Problem:
        """The problem of flows ``rows`` alone (same links), in their order. A solve over it
        costs what those flows cost, not what the whole table does: the fluid engine solves the
        few hundred flows active at a time out of tens of thousands."""
        entries = _gather(self.ptr, rows)
        counts = self.ptr[rows + 1] - self.ptr[rows]
        ptr = np.zeros(len(rows) + 1, dtype=np.int64)
        np.cumsum(counts, out=ptr[1:])
        return Problem(ptr, self.link[entries], self.coef[entries], self.weight[rows], self.n_links)


def problem_from_rows(
    rows: list[dict[int, float]], n_links: int, weights: list[float] | None = None
) -> Problem:
    """A :class:`Problem` from one ``{link: coefficient}`` row per flow."""
    counts = np.array([len(r) for r in rows], dtype=np.int64)
    ptr = np.zeros(len(rows) + 1, dtype=np.int64)
    np.cumsum(counts, out=ptr[1:])
    link = np.fromiter((lid for r in rows for lid in r), dtype=np.int64, count=int(ptr[-1]))
    coef = np.fromiter((c for r in rows for c in r.values()), dtype=float, count=int(ptr[-1]))
    weight = np.ones(len(rows)) if weights is None else np.asarray(weights, dtype=float)
    return Problem(ptr, link, coef, weight, n_links)


def problem_from_lists(
    flow_links: list[list[int]],
    n_links: int,
    coefs: list[list[float]] | None = None,
    weights: list[float] | None = None,
) -> Problem:
    """A :class:`Problem` from per-flow lists of distinct links (tests, small cases)."""
    if coefs is None:
        coefs = [[1.0] * len(links) for links in flow_links]
    return problem_from_rows([dict(zip(links, c)) for links, c in zip(flow_links, coefs)], n_links, weights)


def _gather(ptr: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """Indices of the CSR entries of ``rows`` (concatenated row ranges, no Python loop)."""
    starts = ptr[rows]
    counts = ptr[rows + 1] - starts
    total = int(counts.sum())
    if total == 0:
        return np.zeros(0, dtype=np.int64)
    offsets = np.repeat(np.cumsum(counts) - counts, counts)
    return np.repeat(starts, counts) + (np.arange(total, dtype=np.int64) - offsets)


def solve(problem: Problem, capacity: np.ndarray, active: np.ndarray | None = None) -> np.ndarray:
    """Max-min fair rate of every flow (0 for inactive ones; ``inf`` for an active flow that
    crosses no link). ``capacity`` is per link, in the unit of the rates."""
    p = problem
    n = p.n_flows
    rate = np.zeros(n)
    unfrozen = np.ones(n, dtype=bool) if active is None else active.astype(bool).copy()
    no_links = unfrozen & (np.diff(p.ptr) == 0)
    rate[no_links] = np.inf
    unfrozen &= ~no_links
    if not unfrozen.any():
        return rate
    entry_on = unfrozen[p.entry_flow]
    w_entry = p.coef * p.weight[p.entry_flow]
    slope = np.bincount(p.link[entry_on], weights=w_entry[entry_on], minlength=p.n_links)
    users = np.bincount(p.link[entry_on], minlength=p.n_links)  # unfrozen flows per link
    load = np.zeros(p.n_links)  # bytes per second of frozen flows
    cap = np.asarray(capacity, dtype=float)
    # fill[l]: the level at which link l saturates (inf once no unfrozen flow crosses it).
    # Only the links a round touches are recomputed, so a round costs one O(links) minimum
    # plus work proportional to the flows it freezes; most rounds freeze one link's flows,
    # which are one slice of the link -> flows table.
    fill = np.full(p.n_links, np.inf)
    open_links = users > 0
    fill[open_links] = cap[open_links] / slope[open_links]
    link_flows = p.entry_flow[p.link_entries]
    link_ptr, ptr, links_of, coef, weight = p.link_ptr, p.ptr, p.link, p.coef, p.weight
    counts = np.diff(ptr)
    n_links = p.n_links
    cand_pos = np.full(n_links, n_links)  # position of a link among this round's candidates
    left = int(unfrozen.sum())
    while left:
        # Candidates: the links saturating first, in order. Freezing flows only raises other
        # links' fill levels, so a prefix of them can be frozen in one round as long as no
        # candidate's flows touch a link an earlier candidate's flows touch (module doc).
        k = min(BATCH, n_links)
        cand = np.argpartition(fill, k - 1)[:k] if k < n_links else np.arange(n_links)
        cand = cand[np.argsort(fill[cand], kind="stable")]
        cand = cand[np.isfinite(fill[cand])]
        pos = _gather(link_ptr, cand)
        owner = np.repeat(np.arange(len(cand)), link_ptr[cand + 1] - link_ptr[cand])
        flows = link_flows[pos]
        keep = unfrozen[flows]
        flows, owner = flows[keep], owner[keep]
        e = _gather(ptr, flows)
        e_owner = np.repeat(owner, counts[flows])
        touched = links_of[e]
        # a flow crossing two candidates: the later one waits (its level may move)
        cand_pos[cand] = np.arange(len(cand))
        other = cand_pos[touched]
        clash = (other < len(cand)) & (other != e_owner)
        stop = int(np.maximum(other[clash], e_owner[clash]).min()) if clash.any() else len(cand)
        cand_pos[cand] = n_links
        in_batch = e_owner < stop
        e, touched, e_owner = e[in_batch], touched[in_batch], e_owner[in_batch]
        batch = owner < stop
        flows = flows[batch]
        rate[flows] = weight[flows] * fill[cand[owner[batch]]]
        unfrozen[flows] = False
        left -= len(flows)
        np.add.at(load, touched, coef[e] * rate[p.entry_flow[e]])
        np.add.at(slope, touched, -w_entry[e])
        np.add.at(users, touched, -1)
        floor = fill[cand[stop - 1]]
        with np.errstate(divide="ignore", invalid="ignore"):
            # never below the batch's level: float error must not reorder saturations
            fill[touched] = np.where(
                users[touched] > 0, np.maximum((cap[touched] - load[touched]) / slope[touched], floor), np.inf
            )
    return rate


def certify(
    problem: Problem,
    capacity: np.ndarray,
    rate: np.ndarray,
    active: np.ndarray | None = None,
    rtol: float = 1e-7,
) -> None:
    """Raise :class:`CertificateError` unless ``rate`` is the max-min fair allocation: every
    link carries at most its capacity, and every active flow crossing a link has a saturated
    link on which its rate / weight is the largest (module docstring)."""
    p = problem
    on = np.ones(p.n_flows, dtype=bool) if active is None else active.astype(bool)
    on_entry = on[p.entry_flow] & np.isfinite(rate[p.entry_flow])
    cap = np.asarray(capacity, dtype=float)
    load = np.bincount(
        p.link[on_entry], weights=p.coef[on_entry] * rate[p.entry_flow[on_entry]], minlength=p.n_links
    )
    finite = cap[np.isfinite(cap)]
    scale = max(float(finite.max(initial=0.0)), 1.0)
    atol = rtol * scale
    over = load > cap * (1 + rtol) + atol
    if over.any():
        link = int(np.flatnonzero(over)[0])
        raise CertificateError(f"link {link} carries {load[link]:.6g} > capacity {cap[link]:.6g}")
    if (rate[on] < 0).any():
        raise CertificateError("negative rate")
    saturated = load >= cap * (1 - rtol) - atol
    norm = np.where(on, rate / p.weight, 0.0)
    link_max = np.zeros(p.n_links)
    np.maximum.at(link_max, p.link[on_entry], norm[p.entry_flow[on_entry]])
    f_of = p.entry_flow[on_entry]
    links = p.link[on_entry]
    good = saturated[links] & (norm[f_of] >= link_max[links] * (1 - rtol) - atol)
    has = np.zeros(p.n_flows, dtype=bool)
    has[f_of[good]] = True
    crossing = on & (np.diff(p.ptr) > 0)
    missing = crossing & ~has
    if missing.any():
        f = int(np.flatnonzero(missing)[0])
        raise CertificateError(f"flow {f} (rate {rate[f]:.6g}) has no bottleneck link")


def pick_solver(requested: str, n_flows: int) -> str:
    """The kernel ``run.fluid_solver = requested`` means for a run of ``n_flows`` messages:
    "numpy" or "numba" (ValueError naming the extra when numba is asked for and missing)."""
    have_numba = find_spec("numba") is not None
    if requested == "numba" and not have_numba:
        raise ValueError(
            "run.fluid_solver = 'numba': numba is not installed; pip install 'spraylab[fast]', or use auto or numpy"
        )
    if requested == "auto":
        return "numba" if have_numba and n_flows >= JIT_MIN_FLOWS else "numpy"
    return requested


def solver_named(name: str) -> Callable[[Problem, np.ndarray], np.ndarray]:
    """The solve function of kernel ``name`` (every flow of the problem active)."""
    if name == "numba":
        from spraylab.fluid.solver_jit import solve_jit

        return solve_jit
    return solve
