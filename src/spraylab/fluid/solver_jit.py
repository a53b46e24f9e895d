"""The max-min solver compiled with numba (the optional ``fast`` extra): the textbook
progressive filling, one link at a time, at compiled speed.

The numpy solver (:func:`spraylab.fluid.solver.solve`) works in vectorised rounds: each round
costs a few dozen numpy calls whatever its size, so a problem of a few hundred flows, the
fluid engine's usual re-solve between two events, takes milliseconds of call overhead. This
kernel repeatedly takes the link with the lowest fill level (by a scan of the links: a step
moves the level of most links of a dense problem, which a heap would push again), freezes its
unfrozen flows at that level and updates each link they cross once. O(entries + levels x
links): a fraction of a millisecond for a re-solve of 1,800 sprayed flows over 384 links, and
half the numpy rounds' time on 65k ECMP flows (``benchmarks/fluid_scale.py solver_65k``). Both
pass the same oracle tests and every solve's certificate; they differ only in float rounding
(the order in which frozen flows' loads are summed), so the engine names the kernel it used in
its summary.

numba is imported only here, and this module only when the kernel is asked for.
"""

from __future__ import annotations

import numba
import numpy as np

from spraylab.fluid.solver import Problem

__all__ = ["solve_jit"]


@numba.njit(cache=True)
def _fill(  # pragma: no cover - compiled; covered through solve_jit
    ptr: np.ndarray,
    link: np.ndarray,
    coef: np.ndarray,
    weight: np.ndarray,
    link_ptr: np.ndarray,
    link_flows: np.ndarray,
    cap: np.ndarray,
) -> np.ndarray:
    n = len(ptr) - 1
    n_links = len(cap)
    rate = np.zeros(n)
    frozen = np.zeros(n, dtype=np.bool_)
    slope = np.zeros(n_links)
    users = np.zeros(n_links, dtype=np.int64)
    load = np.zeros(n_links)
    for f in range(n):
        if ptr[f + 1] == ptr[f]:
            rate[f] = np.inf  # crosses no link
            frozen[f] = True
            continue
        for e in range(ptr[f], ptr[f + 1]):
            slope[link[e]] += coef[e] * weight[f]
            users[link[e]] += 1
    fill = np.full(n_links, np.inf)
    for lk in range(n_links):
        if users[lk] > 0:
            fill[lk] = cap[lk] / slope[lk]
    touched = np.empty(n_links, dtype=np.int64)  # links whose level this step moves, once each
    stamp = np.full(n_links, -1, dtype=np.int64)
    step = 0
    while True:
        # the lowest fill level: a scan, cheaper than a heap here (every link a step touches
        # would be pushed again, and a step touches most links of a dense problem)
        lk = -1
        level = np.inf
        for other in range(n_links):
            if fill[other] < level:
                level = fill[other]
                lk = other
        if lk < 0:
            break  # no link left that can saturate
        step += 1
        n_touched = 0
        for j in range(link_ptr[lk], link_ptr[lk + 1]):
            f = link_flows[j]
            if frozen[f]:
                continue
            frozen[f] = True
            r = weight[f] * level
            rate[f] = r
            for e in range(ptr[f], ptr[f + 1]):
                other = link[e]
                load[other] += coef[e] * r
                slope[other] -= coef[e] * weight[f]
                users[other] -= 1
                if stamp[other] != step:
                    stamp[other] = step
                    touched[n_touched] = other
                    n_touched += 1
        fill[lk] = np.inf
        for t in range(n_touched):
            other = touched[t]
            if users[other] == 0:
                fill[other] = np.inf
            else:
                # never below the level just frozen: float error must not reorder saturations
                fill[other] = max((cap[other] - load[other]) / slope[other], level)
    return rate


def solve_jit(problem: Problem, capacity: np.ndarray) -> np.ndarray:
    """Max-min fair rate of every flow of ``problem`` (``inf`` for a flow that crosses no link),
    as :func:`spraylab.fluid.solver.solve` with every flow active."""
    p = problem
    link_flows = p.entry_flow[p.link_entries]
    return _fill(
        p.ptr,
        p.link,
        p.coef.astype(np.float64),
        p.weight.astype(np.float64),
        p.link_ptr,
        link_flows,
        np.asarray(capacity, dtype=np.float64),
    )
