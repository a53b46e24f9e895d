# cython: boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
"""The compiled max-min kernel (``run.fluid_solver = "compiled"``): the textbook progressive
filling, one link at a time, in C, built by setup.py with the packet core.

The numpy solver (:func:`spraylab.fluid.solver.solve`) works in vectorised rounds: each round
costs a few dozen numpy calls whatever its size, so a problem of a few hundred flows, the
fluid engine's usual re-solve between two events, takes milliseconds of call overhead. This
kernel repeatedly takes the link with the lowest fill level, freezes its unfrozen flows at that
level and updates each link they cross once; it builds the link -> flows transpose itself by a
counting sort. Both kernels pass the same oracle tests and every solve's certificate; they
differ only in float rounding (the order in which frozen flows' loads are summed), so the
engine names the kernel it used in its summary.

The lowest link comes from a tournament tree over the links (each node holds the lower of its
two children's links, the lower link on a tie): a step replays only the matches above the
links it touched, once each. When flows cross many links (``POOL_MIN_ENTRIES`` or more per
flow: sprayed flows) a step touches hundreds of links far above the next saturation, and
replaying them cost half the solve; the tree then ranks only a *pool*, the links at or below a
bound (refilled with the ``POOL`` next-lowest by a selection when its lowest link is above
the bound), and a touched link outside it costs nothing. Every link outside is above the
bound, so the pool's lowest link at or below the bound is the lowest of all, the lower link
on a tie: the same link the whole tree gives, step for step (1024-host spray_rr permutation:
0.61 -> 0.48 ms per solve, the same rates to the bit). The numba kernel this replaces used a heap of (level, link) when
flows cross few links and a scan of all links when they cross many; the tree beats the heap
2.7x on ECMP re-solves and the scan 1.7x on sprayed ones (1024-host permutations). All three
take the links in the same order (lowest level, then lowest link), and every floating-point
operation is the numba kernel's, in its order, compiled without contraction (-ffp-contract=off:
no fused multiply-add), so the rates are the numba kernel's to the bit.
"""

from libc.math cimport INFINITY, fabs, isfinite
from libc.stdlib cimport free, malloc

import numpy as np

__all__ = ["solve_compiled", "solve_acks_compiled"]

ctypedef long long i64

# The pool (module doc): refilled with the POOL + 1 lowest links outside it (the numpy solver's
# pool size, fluid/solver.py; 64-2048 measured on the 1024-host spray_rr permutation, 256 the
# fastest), used when the flows average POOL_MIN_ENTRIES entries or more (spray_rr's 16 paths
# give about 44; ECMP's 1-6 run 1.7x slower with the pool: every link saturates or empties
# within a few steps, so the refills' scans cost more than the replays they save).
cdef i64 POOL = 256
POOL_MIN_ENTRIES = 16
cdef i64 _POOL_MIN_ENTRIES = POOL_MIN_ENTRIES


cdef struct Scratch:
    i64 n_leaves
    i64* link_ptr  # where each link's flows start in link_flows
    i64* link_flows  # the link -> flows transpose
    i64* users  # unfrozen flows per link (a flow crosses a link once)
    i64* users0  # every flow unfrozen
    i64* cursor
    i64* touched  # links whose level this step moves, once each
    i64* stamp  # the step that last touched a link
    i64* tree  # the tournament tree: node i's winner; leaves at n_leaves + link
    i64* nodes  # the tree nodes a step replays
    i64* mark  # the step that last queued a tree node
    double* slope
    double* slope0  # every flow unfrozen
    double* load
    double* fill
    double* key  # what the tree ranks: a link's fill level in the pool, inf outside it
    double* spare  # the levels a pool refill selects from
    char* frozen
    char* pooled


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
        rate,
    )
    return rate


def _fill(
    const i64[::1] ptr,
    const i64[::1] link,
    const double[::1] coef,
    const double[::1] weight,
    const double[::1] cap,
    double[::1] rate,
):
    """Progressive filling into ``rate`` (one per flow)."""
    cdef i64 n = ptr.shape[0] - 1
    cdef i64 n_links = cap.shape[0]
    cdef i64 nnz = link.shape[0]
    cdef Scratch s
    cdef char* block = _scratch(&s, n, n_links, nnz)
    if block == NULL:
        raise MemoryError()
    cdef const i64* p_link = _i(link)
    cdef const double* p_coef = _d(coef)
    cdef const double* p_weight = _d(weight)
    with nogil:
        _transpose(&ptr[0], p_link, p_coef, p_weight, n, n_links, nnz, &s)
        _run(&ptr[0], p_link, p_coef, p_weight, _d(cap), _dw(rate), n, n_links, nnz, &s)
    free(block)


def solve_acks_compiled(problem, acks, capacity, ack_load, double atol, int max_iterations, int stall_iterations):
    """The ACK reservation's fixed-point iteration (:func:`spraylab.fluid.acks.solve_with_acks`)
    with this kernel, the problem transposed once for all its solves: ``(rates, data capacity,
    ACK load, True)`` at the fixed point, ``(..., False)`` where that function falls back.
    Every solve and ACK load is the same doubles as that function's loop: the data capacity is
    ``np.maximum(capacity - load, 0.0)``, the load is summed as ``_sparse.link_sums`` (entry
    order, ``np.bincount``'s), the change is ``max |new - load|``."""
    cdef const i64[::1] ptr = np.ascontiguousarray(problem.ptr, dtype=np.int64)
    cdef const i64[::1] link = np.ascontiguousarray(problem.link, dtype=np.int64)
    cdef const double[::1] coef = np.ascontiguousarray(problem.coef, dtype=np.float64)
    cdef const double[::1] weight = np.ascontiguousarray(problem.weight, dtype=np.float64)
    cdef const i64[::1] a_ptr = np.ascontiguousarray(acks.ptr, dtype=np.int64)
    cdef const i64[::1] a_link = np.ascontiguousarray(acks.link, dtype=np.int64)
    cdef const double[::1] a_coef = np.ascontiguousarray(acks.coef, dtype=np.float64)
    cdef const double[::1] cap = np.ascontiguousarray(capacity, dtype=np.float64)
    cdef i64 n = ptr.shape[0] - 1
    cdef i64 n_links = cap.shape[0]
    cdef i64 nnz = link.shape[0]
    cdef i64 lk, f, e, since_best = 0
    cdef int it
    cdef double v, d, change, best = INFINITY, sent
    cdef bint done = False, ok = False
    load_a = np.array(ack_load, dtype=np.float64)  # a copy: the starting load is the caller's
    cdef double[::1] load = load_a
    rates_a = data_cap_a = new_a = None
    cdef double[::1] rate, data_cap, new
    cdef Scratch s
    cdef char* block = _scratch(&s, n, n_links, nnz)
    if block == NULL:
        raise MemoryError()
    cdef const i64* p_link = _i(link)
    cdef const double* p_coef = _d(coef)
    cdef const double* p_weight = _d(weight)
    try:
        with nogil:
            _transpose(&ptr[0], p_link, p_coef, p_weight, n, n_links, nnz, &s)
        for it in range(max_iterations):
            rates_a, data_cap_a, new_a = np.empty(n), np.empty(n_links), np.zeros(n_links)
            rate, data_cap, new = rates_a, data_cap_a, new_a
            with nogil:
                for lk in range(n_links):
                    v = cap[lk] - load[lk]
                    data_cap[lk] = v if (v >= 0.0 or v != v) else 0.0  # np.maximum(v, 0.0)
                _run(&ptr[0], p_link, p_coef, p_weight, _dw(data_cap), _dw(rate), n, n_links, nnz, &s)
                for f in range(a_ptr.shape[0] - 1):  # the ACK load, as _sparse.link_sums
                    sent = rate[f] if isfinite(rate[f]) else 0.0
                    for e in range(a_ptr[f], a_ptr[f + 1]):
                        new[a_link[e]] += a_coef[e] * sent
                change = 0.0  # max |new - load|, nan if any is (np.max)
                for lk in range(n_links):
                    d = fabs(new[lk] - load[lk])
                    if change == change and (d > change or d != d):
                        change = d
                if change <= atol:
                    # a fixed point whose ACKs alone overfill a link falls back too (acks.py)
                    ok = True
                    for lk in range(n_links):
                        if not new[lk] <= cap[lk] + atol:
                            ok = False
                            break
                    done = True
            if done:
                break
            if change < best:
                best, since_best = change, 0
            else:
                since_best += 1
            if since_best >= stall_iterations:
                break
            load = new
    finally:
        free(block)
    return rates_a, data_cap_a, new_a, ok


cdef inline const i64* _i(const i64[::1] a) noexcept nogil:
    return &a[0] if a.shape[0] else NULL


cdef inline const double* _d(const double[::1] a) noexcept nogil:
    return &a[0] if a.shape[0] else NULL


cdef inline double* _dw(double[::1] a) noexcept nogil:
    return &a[0] if a.shape[0] else NULL


cdef char* _scratch(Scratch* s, i64 n, i64 n_links, i64 nnz) noexcept:
    """One block for a solve's scratch arrays (``free`` it), 8-byte words first, then the
    flags; NULL if out of memory."""
    cdef i64 n_leaves = 1  # the tree's leaves: the links, padded to a power of two
    while n_leaves < n_links:
        n_leaves *= 2
    cdef size_t n_words = 6 * (n_links + 1) + nnz + 4 * n_leaves + 4 * n_links + 2 * n_leaves
    cdef char* block = <char*> malloc(n_words * 8 + n + n_links + 1)
    if block == NULL:
        return NULL
    s.n_leaves = n_leaves
    s.link_ptr = <i64*> block
    s.users = s.link_ptr + (n_links + 1)
    s.users0 = s.users + (n_links + 1)
    s.cursor = s.users0 + (n_links + 1)
    s.touched = s.cursor + (n_links + 1)
    s.stamp = s.touched + (n_links + 1)
    s.link_flows = s.stamp + (n_links + 1)
    s.tree = s.link_flows + nnz
    s.nodes = s.tree + 2 * n_leaves
    s.mark = s.nodes + n_leaves
    s.slope = <double*> (s.mark + n_leaves)
    s.slope0 = s.slope + n_links
    s.load = s.slope0 + n_links
    s.fill = s.load + n_links  # n_leaves long: the padding leaves stay at inf
    s.key = s.fill + n_leaves  # n_leaves long, as fill
    s.spare = s.key + n_leaves
    s.frozen = <char*> (s.spare + n_links)
    s.pooled = s.frozen + n
    return block


cdef inline i64 _winner(const double* fill, i64 left, i64 right) noexcept nogil:
    # the lower level, the lower link on a tie (every link under ``left`` is below ``right``'s)
    return right if fill[right] < fill[left] else left


cdef void _tree_build(i64* tree, i64* mark, const double* fill, i64 n_leaves) noexcept nogil:
    cdef i64 node
    for node in range(n_leaves):
        tree[n_leaves + node] = node
        mark[node] = -1
    for node in range(n_leaves - 1, 0, -1):
        tree[node] = _winner(fill, tree[2 * node], tree[2 * node + 1])


cdef void _tree_replay(
    i64* tree, const double* fill, i64 n_leaves, const i64* changed, i64 n_changed,
    i64* nodes, i64* mark, i64 step,
) noexcept nogil:
    """Replay the matches above the ``changed`` leaves, level by level, each node once (the
    links a step touches share most of their ancestors)."""
    cdef i64 m = 0
    cdef i64 k, node, parent, m_next
    for k in range(n_changed):
        node = (n_leaves + changed[k]) >> 1
        if node and mark[node] != step:
            mark[node] = step
            nodes[m] = node
            m += 1
    while m:  # the nodes of one level, then their parents
        m_next = 0
        for k in range(m):  # nodes[m_next] is never ahead of nodes[k]: rewritten in place
            node = nodes[k]
            tree[node] = _winner(fill, tree[2 * node], tree[2 * node + 1])
            parent = node >> 1
            if parent and mark[parent] != step:
                mark[parent] = step
                nodes[m_next] = parent
                m_next += 1
        m = m_next


cdef double _pool_refill(
    const double* fill, double* key, char* pooled, double* spare, i64* added, i64* n_added,
    i64 n_links,
) noexcept nogil:
    """Move the POOL + 1 lowest links outside the pool (and any tied with the last) into it,
    listing them in ``added``, and return the new bound: the highest level moved in (inf when
    that is every link left). Every link left outside is above it."""
    cdef i64 lk, m = 0
    for lk in range(n_links):
        if not pooled[lk] and fill[lk] < INFINITY:
            spare[m] = fill[lk]
            m += 1
    cdef double bound = INFINITY
    if m > POOL:
        bound = _select(spare, m, POOL)
    m = 0
    for lk in range(n_links):
        if not pooled[lk] and not fill[lk] > bound:  # a nan level goes in: never left behind
            pooled[lk] = 1
            key[lk] = fill[lk]
            added[m] = lk
            m += 1
    n_added[0] = m
    return bound


cdef double _select(double* a, i64 m, i64 k) noexcept nogil:
    """The ``k``-th lowest of ``a[:m]`` (from 0; reorders ``a``): Hoare's selection."""
    cdef i64 lo = 0, hi = m - 1, i, j
    cdef double pivot, t
    while lo < hi:
        pivot = a[lo + (hi - lo) // 2]
        i, j = lo, hi
        while i <= j:
            while a[i] < pivot:
                i += 1
            while a[j] > pivot:
                j -= 1
            if i <= j:
                t = a[i]
                a[i] = a[j]
                a[j] = t
                i += 1
                j -= 1
        if k <= j:
            hi = j
        elif k >= i:
            lo = i
        else:
            break
    return a[k]


cdef void _transpose(
    const i64* ptr, const i64* link, const double* coef, const double* weight,
    i64 n, i64 n_links, i64 nnz, Scratch* s,
) noexcept nogil:
    """What a solve needs of the problem alone, whatever the capacities: the link -> flows
    transpose, and every link's flows and slope (sum of coefficient x weight) before any is
    frozen."""
    cdef i64* link_ptr = s.link_ptr
    cdef i64* cursor = s.cursor
    cdef i64 e, f, lk
    # by a counting sort (flows in entry order within a link)
    for lk in range(n_links + 1):
        link_ptr[lk] = 0
    for e in range(nnz):
        link_ptr[link[e] + 1] += 1
    for lk in range(n_links):
        s.users0[lk] = link_ptr[lk + 1]
    for lk in range(n_links):
        link_ptr[lk + 1] += link_ptr[lk]
    for lk in range(n_links):
        cursor[lk] = link_ptr[lk]
    for f in range(n):
        for e in range(ptr[f], ptr[f + 1]):
            s.link_flows[cursor[link[e]]] = f
            cursor[link[e]] += 1
    for lk in range(n_links):
        s.slope0[lk] = 0.0
    for f in range(n):
        for e in range(ptr[f], ptr[f + 1]):
            s.slope0[link[e]] += coef[e] * weight[f]


cdef void _run(
    const i64* ptr, const i64* link, const double* coef, const double* weight, const double* cap,
    double* rate, i64 n, i64 n_links, i64 nnz, Scratch* s,
) noexcept nogil:
    """Progressive filling on capacities ``cap`` (after :func:`_transpose` of the problem)."""
    cdef i64 n_leaves = s.n_leaves
    cdef i64* link_ptr = s.link_ptr
    cdef i64* link_flows = s.link_flows
    cdef i64* users = s.users
    cdef i64* touched = s.touched
    cdef i64* stamp = s.stamp
    cdef i64* tree = s.tree
    cdef double* slope = s.slope
    cdef double* load = s.load
    cdef double* fill = s.fill
    cdef char* frozen = s.frozen
    cdef double* key = s.key
    cdef char* pooled = s.pooled
    cdef i64 e, f, lk, j, t, other, step, n_touched, n_changed
    cdef double level, r, v, bound
    for f in range(n):
        frozen[f] = 0
        if ptr[f + 1] == ptr[f]:
            rate[f] = INFINITY  # crosses no link
            frozen[f] = 1
    for lk in range(n_links):
        users[lk] = s.users0[lk]
        slope[lk] = s.slope0[lk]
        load[lk] = 0.0
    for lk in range(n_links):
        fill[lk] = cap[lk] / slope[lk] if users[lk] > 0 else INFINITY
        stamp[lk] = -1
    for lk in range(n_links, n_leaves):
        fill[lk] = INFINITY
    for lk in range(n_leaves):
        key[lk] = INFINITY
    if nnz >= _POOL_MIN_ENTRIES * n:
        # the pool starts empty: every link is outside, above -inf, and it is refilled first
        bound = -INFINITY
        for lk in range(n_links):
            pooled[lk] = 0
    else:  # every link in the pool from the start: the tree ranks them all
        bound = INFINITY
        for lk in range(n_links):
            pooled[lk] = 1
            key[lk] = fill[lk]
    _tree_build(tree, s.mark, key, n_leaves)
    step = 0
    while True:
        lk = tree[1]  # the lowest level in the pool, the lowest link on a tie
        level = key[lk]
        if not level <= bound:  # a link outside the pool may be lower: refill it
            if bound == INFINITY:
                break  # every link is in the pool and none can saturate
            step += 1
            bound = _pool_refill(fill, key, pooled, s.spare, touched, &n_touched, n_links)
            _tree_replay(tree, key, n_leaves, touched, n_touched, s.nodes, s.mark, step)
            continue
        if not level < INFINITY:
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
        n_changed = 0
        for t in range(n_touched):
            other = touched[t]
            if users[other] == 0:
                fill[other] = INFINITY
            else:
                # never below the level just frozen: float error must not reorder saturations
                # (max(v, level) as Python's: v unless level is larger)
                v = (cap[other] - load[other]) / slope[other]
                fill[other] = level if level > v else v
            # a link outside the pool stays out while it is above the bound (levels only rise,
            # up to float error): ranking it would cost a replay for nothing
            if pooled[other] or not fill[other] > bound:
                pooled[other] = 1
                key[other] = fill[other]
                touched[n_changed] = other  # rewritten in place: n_changed <= t
                n_changed += 1
        # lk is among them (the flows just frozen crossed it, and it was in the pool)
        _tree_replay(tree, key, n_leaves, touched, n_changed, s.nodes, s.mark, step)
    # A flow still unfrozen crosses only links of infinite capacity (a finite one would have
    # saturated under it): unconstrained, as a flow that crosses no link. The engine never
    # solves one (a dead link has infinite capacity, but a flow only on dead links delivers
    # nothing and is not solved); the numba kernel left it at 0 when scanning and at inf (or 0,
    # through inf - inf) with its heap.
    for f in range(n):
        if not frozen[f]:
            rate[f] = INFINITY
