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
each at that link's level, and updates the links those flows cross. The lowest links come
from a pool of the ``POOL`` lowest (drawn by a partition of all links when it runs dry: levels
only rise, so no link outside the pool can overtake it), so a round costs a sort of the pool
plus the entries of the flows it freezes, in a few vectorised steps; 65,536 ECMP flows on a
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
POOL = 256  # links the candidates are drawn from (see solve)
# "auto" takes the compiled kernel (spraylab.fluid._maxmin) from this many messages on, the
# numpy rounds below. The kernel costs nothing to load, so the only question is which solves a
# run's re-solves faster (measured in-process, run CPU, fat-tree permutations of 16-1024 hosts,
# random pairs, all-to-all, 64-GPU MoE; docs/fluid.md, "Rates"). With the ACK reservation a run
# re-solves at nearly every completion, up to three solves each, and the compiled kernel was
# 1.5-4.4x faster on every case, 16 hosts included: it always runs. Without ACKs the numpy
# kernel's warm re-solves (fluid/warm.py; the compiled kernel solves whole) often cost no solve
# at all, and neither kernel wins by size: numpy 1.4-2x faster on ECMP random pairs and
# all-to-all of 4k-16k messages, compiled 1.3-2.5x faster on MoE dispatches (8k-18k
# messages), the two within a few ms below 500 messages. The threshold stays where numba's
# was, so those runs keep the kernel (and the rates) they had.
COMPILED_MIN_FLOWS = 2000
COMPILED_MIN_FLOWS_WITH_ACKS = 0
# run.fluid_solver values naming the compiled kernel: "numba" is what it was called when numba
# compiled it, kept so scenario files written then still validate (and run the same rates)
COMPILED_NAMES = ("compiled", "numba")


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
        entries, counts = _gather_counted(self.ptr, rows)
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


def _gather_counted(ptr: np.ndarray, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Indices of the CSR entries of ``rows`` (concatenated row ranges, no Python loop), and
    the number of entries of each row."""
    starts = ptr[rows]
    counts = ptr[rows + 1] - starts
    if not len(rows):
        return np.zeros(0, dtype=np.int64), counts
    ends = np.cumsum(counts)
    # entry j of row i is starts[i] + j, at position ends[i] - counts[i] + j of the output
    return np.repeat(starts - (ends - counts), counts) + np.arange(int(ends[-1]), dtype=np.int64), counts


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
    # Only the links a round touches are recomputed, so a round costs a sort of the candidate
    # pool plus work proportional to the flows it freezes.
    fill = np.full(p.n_links, np.inf)
    open_links = users > 0
    fill[open_links] = cap[open_links] / slope[open_links]
    link_flows = p.entry_flow[p.link_entries]
    link_ptr, ptr, links_of, coef, weight = p.link_ptr, p.ptr, p.link, p.coef, p.weight
    n_links = p.n_links
    cand_pos = np.full(n_links, n_links)  # position of a link among this round's candidates
    # The candidates come from a pool of the POOL lowest links: every link outside it has a
    # fill level of at least ``tau`` (levels only rise, and a touched link that falls below
    # ``tau`` joins the pool), so the pool's links at or below ``tau`` are the lowest of all.
    # A round then sorts the pool, not every link; the pool is drawn again when it runs dry.
    in_pool = np.zeros(n_links, dtype=bool)
    pool, tau = _draw_pool(fill, in_pool)
    left = int(unfrozen.sum())
    with np.errstate(divide="ignore", invalid="ignore"):
        while left:
            # Candidates: the links saturating first, in order. Freezing flows only raises
            # other links' fill levels, so a prefix of them can be frozen in one round as long
            # as no candidate's flows touch a link an earlier candidate's flows touch (module doc).
            levels = fill[pool]
            live = np.isfinite(levels)  # a closed link never opens again: it leaves the pool
            if not live.all():
                pool, levels = pool[live], levels[live]
            n_ready = int((levels <= tau).sum())
            if not n_ready:
                in_pool[pool] = False
                pool, tau = _draw_pool(fill, in_pool)
                continue
            cand = pool[np.argsort(levels, kind="stable")[: min(BATCH, n_ready)]]
            pos, per_cand = _gather_counted(link_ptr, cand)
            owner = np.repeat(np.arange(len(cand)), per_cand)
            flows = link_flows[pos]
            keep = unfrozen[flows]
            flows, owner = flows[keep], owner[keep]
            e, per_flow = _gather_counted(ptr, flows)
            e_owner = np.repeat(owner, per_flow)
            touched = links_of[e]
            # a flow crossing two candidates: the later one waits (its level may move)
            cand_pos[cand] = np.arange(len(cand))
            other = cand_pos[touched]
            clash = (other < len(cand)) & (other != e_owner)
            stop = int(np.maximum(other[clash], e_owner[clash]).min()) if clash.any() else len(cand)
            cand_pos[cand] = n_links
            if stop < len(cand):
                in_batch = e_owner < stop
                e, touched = e[in_batch], touched[in_batch]
                batch = owner < stop
                flows, owner = flows[batch], owner[batch]
            rate[flows] = weight[flows] * fill[cand[owner]]
            unfrozen[flows] = False
            left -= len(flows)
            # the touched links' totals, each summed over its entries in entry order
            hits = np.bincount(touched, minlength=n_links)
            link_ids = np.flatnonzero(hits)
            load[link_ids] += np.bincount(
                touched, weights=coef[e] * rate[p.entry_flow[e]], minlength=n_links
            )[link_ids]
            slope[link_ids] -= np.bincount(touched, weights=w_entry[e], minlength=n_links)[link_ids]
            users[link_ids] -= hits[link_ids]
            floor = fill[cand[stop - 1]]
            # never below the batch's level: float error must not reorder saturations
            fill[link_ids] = np.where(
                users[link_ids] > 0,
                np.maximum((cap[link_ids] - load[link_ids]) / slope[link_ids], floor),
                np.inf,
            )
            joining = link_ids[(fill[link_ids] <= tau) & ~in_pool[link_ids]]
            if len(joining):
                in_pool[joining] = True
                pool = np.concatenate([pool, joining])
    return rate


def _draw_pool(fill: np.ndarray, in_pool: np.ndarray) -> tuple[np.ndarray, float]:
    """The POOL open links of lowest fill level, and a level ``tau`` no link outside them is
    below (marks them in ``in_pool``)."""
    open_links = np.flatnonzero(np.isfinite(fill))
    if len(open_links) <= POOL:
        pool, tau = open_links, np.inf
    else:
        part = np.argpartition(fill[open_links], POOL)
        pool, tau = open_links[part[:POOL]], float(fill[open_links[part[POOL]]])
    in_pool[pool] = True
    return pool, tau


def certify(
    problem: Problem,
    capacity: np.ndarray,
    rate: np.ndarray,
    active: np.ndarray | None = None,
    rtol: float = 1e-7,
    rows: np.ndarray | None = None,
) -> None:
    """Raise :class:`CertificateError` unless ``rate`` is the max-min fair allocation: every
    link carries at most its capacity, and every active flow crossing a link has a saturated
    link on which its rate / weight is the largest (module docstring). ``rows``: of these rows
    of ``problem`` alone, one rate each (as of ``problem.restrict(rows)``)."""
    p = problem
    if rows is not None and active is not None:
        p, rows = p.restrict(rows), None
    if active is None:  # the engine's case, every flow active: the same checks, compiled
        from spraylab.fluid._sparse import certificate

        failed = certificate(
            np.ascontiguousarray(p.ptr, dtype=np.int64),
            np.ascontiguousarray(p.link, dtype=np.int64),
            np.ascontiguousarray(p.coef, dtype=float),
            np.ascontiguousarray(p.weight, dtype=float),
            np.ascontiguousarray(capacity, dtype=float),
            np.ascontiguousarray(rate, dtype=float),
            rtol,
            None if rows is None else np.ascontiguousarray(rows, dtype=np.int64),
        )
        if failed is not None:
            raise CertificateError(failed)
        return
    on = active.astype(bool)
    f_of, links, coef = p.entry_flow, p.link, p.coef
    # inactive flows and unconstrained ones (rate inf) put nothing on links; the engine's solves
    # have neither, so they skip copying every entry
    if active is not None or not np.isfinite(rate).all():
        on_entry = on[f_of] & np.isfinite(rate[f_of])
        f_of, links, coef = f_of[on_entry], links[on_entry], coef[on_entry]
    cap = np.asarray(capacity, dtype=float)
    load = np.bincount(links, weights=coef * rate[f_of], minlength=p.n_links)
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
    entry_norm = norm[f_of]
    link_max = np.zeros(p.n_links)
    np.maximum.at(link_max, links, entry_norm)
    good = saturated[links] & (entry_norm >= link_max[links] * (1 - rtol) - atol)
    has = np.zeros(p.n_flows, dtype=bool)
    has[f_of[good]] = True
    crossing = on & (np.diff(p.ptr) > 0)
    missing = crossing & ~has
    if missing.any():
        f = int(np.flatnonzero(missing)[0])
        raise CertificateError(f"flow {f} (rate {rate[f]:.6g}) has no bottleneck link")


def pick_solver(requested: str, n_flows: int, acks: bool = False) -> str:
    """The kernel ``run.fluid_solver = requested`` means for a run of ``n_flows`` messages
    (``acks``: with the ACK reservation): "numpy" or "compiled"."""
    if requested in COMPILED_NAMES:
        return "compiled"
    if requested == "auto":
        threshold = COMPILED_MIN_FLOWS_WITH_ACKS if acks else COMPILED_MIN_FLOWS
        return "compiled" if n_flows >= threshold else "numpy"
    return requested


def solver_named(name: str) -> Callable[[Problem, np.ndarray], np.ndarray]:
    """The solve function of kernel ``name`` (every flow of the problem active)."""
    if name in COMPILED_NAMES:
        from spraylab.fluid._maxmin import solve_compiled

        return solve_compiled
    return solve
