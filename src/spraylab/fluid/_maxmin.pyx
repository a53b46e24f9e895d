# cython: boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
"""The compiled max-min kernel (``run.fluid_solver = "compiled"``): the textbook progressive
filling, one link at a time, in C, built by setup.py with the packet core.

The numpy solver (:func:`spraylab.fluid.solver.solve`) works in vectorised rounds: each round
costs a few dozen numpy calls whatever its size, so a problem of a few hundred flows, the
fluid engine's usual re-solve between two events, takes milliseconds of call overhead. This
kernel repeatedly takes the link with the lowest fill level, freezes its unfrozen flows at that
level and updates each link they cross once. It finds that link with a heap when flows cross
few links (ECMP: a handful each) and by a scan of the links when they cross many (sprayed
flows: a step moves most links' levels, which a heap would push again), and builds the link ->
flows transpose itself by a counting sort. Both kernels pass the same oracle tests and every
solve's certificate; they differ only in float rounding (the order in which frozen flows' loads
are summed), so the engine names the kernel it used in its summary.

It does every floating-point operation of the numba kernel it replaces in the same order, and
is compiled without contraction (-ffp-contract=off: no fused multiply-add), so its rates are
the numba kernel's to the bit. Unlike numba it costs nothing to load, so the engine can use it
for small runs too.
"""

from libc.stdlib cimport free, malloc
from libc.string cimport memset
from libc.math cimport INFINITY

import numpy as np

__all__ = ["solve_compiled", "HEAP_MAX_LINKS_PER_FLOW"]

# The heap picks the next link when flows cross at most this many links on average (measured
# on 1024-host permutations: ECMP flows cross 4-6, the heap is 2.3x faster than the scan; flows
# sprayed over 64 entropies cross ~44, the scan is 3.8x faster than the heap).
HEAP_MAX_LINKS_PER_FLOW = 12

ctypedef long long i64


def solve_compiled(problem, capacity):
    """Max-min fair rate of every flow of ``problem`` (``inf`` for a flow that crosses no link),
    as :func:`spraylab.fluid.solver.solve` with every flow active."""
    p = problem
    rate = np.zeros(p.n_flows)
    # the engine's arrays already have these types: no copies on its path
    _fill(
        np.ascontiguousarray(p.ptr, dtype=np.int64),
        np.ascontiguousarray(p.link, dtype=np.int64),
        np.ascontiguousarray(p.coef, dtype=np.float64),
        np.ascontiguousarray(p.weight, dtype=np.float64),
        np.ascontiguousarray(capacity, dtype=np.float64),
        len(p.link) <= HEAP_MAX_LINKS_PER_FLOW * p.n_flows,
        rate,
    )
    return rate


cdef inline bint _before(double level_a, i64 link_a, double level_b, i64 link_b) noexcept nogil:
    return level_a < level_b or (level_a == level_b and link_a < link_b)


cdef i64 _push(double* heap_level, i64* heap_link, i64 size, double level, i64 lk) noexcept nogil:
    cdef i64 i = size
    cdef i64 parent
    while i > 0:
        parent = (i - 1) // 2
        if not _before(level, lk, heap_level[parent], heap_link[parent]):
            break
        heap_level[i] = heap_level[parent]
        heap_link[i] = heap_link[parent]
        i = parent
    heap_level[i] = level
    heap_link[i] = lk
    return size + 1


cdef i64 _pop(double* heap_level, i64* heap_link, i64 size) noexcept nogil:
    size -= 1
    cdef double level = heap_level[size]
    cdef i64 lk = heap_link[size]
    cdef i64 i = 0
    cdef i64 child
    while True:
        child = 2 * i + 1
        if child >= size:
            break
        if child + 1 < size and _before(
            heap_level[child + 1], heap_link[child + 1], heap_level[child], heap_link[child]
        ):
            child += 1
        if not _before(heap_level[child], heap_link[child], level, lk):
            break
        heap_level[i] = heap_level[child]
        heap_link[i] = heap_link[child]
        i = child
    heap_level[i] = level
    heap_link[i] = lk
    return size


def _fill(
    const i64[::1] ptr,
    const i64[::1] link,
    const double[::1] coef,
    const double[::1] weight,
    const double[::1] cap,
    bint use_heap,
    double[::1] rate,
):
    """Progressive filling into ``rate`` (zeros on entry, one per flow)."""
    cdef i64 n = ptr.shape[0] - 1
    cdef i64 n_links = cap.shape[0]
    cdef i64 nnz = link.shape[0]
    cdef i64 n_heap = n_links + nnz + 1 if use_heap else 0
    # one block for the scratch arrays: int64 ones first, then doubles, then flags
    cdef size_t n_words = 4 * (n_links + 1) + n_links + nnz + 2 * n_heap + 3 * n_links
    cdef char* block = <char*> malloc(n_words * 8 + n + 1)
    if block == NULL:
        raise MemoryError()
    cdef i64* link_ptr = <i64*> block
    cdef i64* users = link_ptr + (n_links + 1)
    cdef i64* cursor = users + (n_links + 1)
    cdef i64* touched = cursor + (n_links + 1)  # links whose level this step moves, once each
    cdef i64* stamp = touched + (n_links + 1)
    cdef i64* link_flows = stamp + n_links
    cdef i64* heap_link = link_flows + nnz
    cdef double* heap_level = <double*> (heap_link + n_heap)
    cdef double* slope = heap_level + n_heap
    cdef double* load = slope + n_links
    cdef double* fill = load + n_links
    cdef char* frozen = <char*> (fill + n_links)
    with nogil:
        _run(&ptr[0], &link[0] if nnz else NULL, &coef[0] if nnz else NULL, &weight[0] if n else NULL,
             &cap[0] if n_links else NULL, use_heap, &rate[0] if n else NULL, n, n_links, nnz,
             link_ptr, users, cursor, touched, stamp, link_flows, heap_link, heap_level, slope, load,
             fill, frozen)
    free(block)


cdef void _run(
    const i64* ptr, const i64* link, const double* coef, const double* weight, const double* cap,
    bint use_heap, double* rate, i64 n, i64 n_links, i64 nnz,
    i64* link_ptr, i64* users, i64* cursor, i64* touched, i64* stamp, i64* link_flows,
    i64* heap_link, double* heap_level, double* slope, double* load, double* fill, char* frozen,
) noexcept nogil:
    cdef i64 e, f, lk, j, t, other, top_link, step, n_touched, size
    cdef double level, top, r, v
    # the link -> flows transpose, by a counting sort (flows in entry order within a link)
    memset(link_ptr, 0, (n_links + 1) * sizeof(i64))
    for e in range(nnz):
        link_ptr[link[e] + 1] += 1
    for lk in range(n_links):
        users[lk] = link_ptr[lk + 1]  # unfrozen flows per link (a flow crosses a link once)
    for lk in range(n_links):
        link_ptr[lk + 1] += link_ptr[lk]
    for lk in range(n_links):
        cursor[lk] = link_ptr[lk]
    for f in range(n):
        for e in range(ptr[f], ptr[f + 1]):
            link_flows[cursor[link[e]]] = f
            cursor[link[e]] += 1
    for f in range(n):
        frozen[f] = 0
    memset(slope, 0, n_links * sizeof(double))
    memset(load, 0, n_links * sizeof(double))
    for f in range(n):
        if ptr[f + 1] == ptr[f]:
            rate[f] = INFINITY  # crosses no link
            frozen[f] = 1
            continue
        for e in range(ptr[f], ptr[f + 1]):
            slope[link[e]] += coef[e] * weight[f]
    for lk in range(n_links):
        fill[lk] = cap[lk] / slope[lk] if users[lk] > 0 else INFINITY
        stamp[lk] = -1
    # The lowest fill level next: from a binary heap of (level, link) when flows cross few
    # links (every level a link takes is pushed; an entry whose level is no longer its link's
    # is skipped when it comes up), by a scan of the links when they cross many (a step then
    # moves most links' levels, and pushing them all costs more than the scan). Ordered by
    # level, then link, both take the links in the same order: the same rates to the bit.
    size = 0
    if use_heap:
        for lk in range(n_links):
            if users[lk] > 0:
                size = _push(heap_level, heap_link, size, fill[lk], lk)
    step = 0
    while True:
        lk = -1
        level = INFINITY
        if use_heap:
            while size:
                top = heap_level[0]
                top_link = heap_link[0]
                size = _pop(heap_level, heap_link, size)
                if fill[top_link] == top:  # else stale: a higher level since, or saturated
                    level = top
                    lk = top_link
                    break
        else:
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
            frozen[f] = 1
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
        fill[lk] = INFINITY
        for t in range(n_touched):
            other = touched[t]
            if users[other] == 0:
                fill[other] = INFINITY
            else:
                # never below the level just frozen: float error must not reorder saturations
                # (max(v, level) as Python's: v unless level is larger)
                v = (cap[other] - load[other]) / slope[other]
                fill[other] = level if level > v else v
                if use_heap:
                    size = _push(heap_level, heap_link, size, fill[other], other)
