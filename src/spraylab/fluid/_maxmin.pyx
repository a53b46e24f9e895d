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

The lowest link comes from a tournament tree over the links: each node holds its winner's level
and link (the lower level, the lower link on a tie), so a match reads its children, not their
links' levels, and a node has four children, one cache line (the binary tree's winners with
every other level stored: half the levels to replay). When a link's level changes, the matches
above it are replayed up to the first whose winner stays the same, to the bit. When flows cross
many links (``POOL_MIN_ENTRIES`` or more per flow: sprayed flows) a step touches hundreds of
links far above the next saturation, and replaying them cost half the solve; the tree then
ranks only a *pool*, the links at or below a bound (refilled with the ``POOL`` next-lowest,
selected by a heap from a list of the links outside, when its lowest link is above the bound),
and a touched link outside it costs nothing. Every link outside is above the bound, so the
pool's lowest link at or below the bound is the lowest of all, the lower link on a tie: the
same link the whole tree gives, step for step (1024-host spray_rr permutation: 0.61 -> 0.48 ms
per solve, the same rates to the bit). The numba kernel this replaces used a heap of (level,
link) when flows cross few links and a scan of all links when they cross many; the tree beats
the heap 2.7x on ECMP re-solves and the scan 1.7x on sprayed ones (1024-host permutations). All
three take the links in the same order (lowest level, then lowest link), and every
floating-point operation is the numba kernel's, in its order, compiled without contraction
(-ffp-contract=off: no fused multiply-add), so the rates are the numba kernel's to the bit.

The kernel is bound by memory latency (freezing a flow updates every link it crosses, at
scattered addresses), so its data is laid out for few cache lines: a link's state during a
solve is one 32-byte record (:class:`LinkState`: one line per entry where separate arrays took
four), the entries' links and the transpose's flows are 32-bit, and the scratch block is kept
from one call to the next (no fresh pages to fault in, the tree's padding played already).
The 4-ary tree with its early stop, the smaller pool with its list and heap, the records and
the kept block took the ACK loops of 1024-host runs (``solve_acks_compiled``, the calls
replayed) from 0.21 to 0.15 s (spray_rr, 173 calls) and 0.13 to 0.10 s (ECMP, 263 calls).

Links that cannot saturate. A flow's rate never exceeds ``cap / coef`` on any link it crosses
(that link would be over capacity from it alone), so a link whose flows, each at that most,
fill less than its capacity is never the lowest: at the level of the link that is, every
unfrozen flow on it is within its most and the link is not full. Such a link's entries change
nothing but its own state, so a solve leaves them out (``_unsaturable``); a link is left out
only if its flows fill less than its capacity by ``SATURATION_MARGIN`` (float error in the
levels is far smaller). The ACK loop's solves give data what the ACKs leave, which changes
from solve to solve. For sprayed flows (``POOL_MIN_ENTRIES`` entries or more on average) the
loop prunes once, against the capacity less the larger of the starting ACK load and the ACKs
of every flow at its most (a bound on every solve's ACK load): a 1024-host spray_rr
permutation's links past the first hop carry a sixteenth of a flow each and two thirds of its
entries go (its ACK loops: a quarter fewer instructions, 0.95 -> 0.71 G, and 10-20% less time,
0.15-0.21 -> 0.13-0.17 s alternating in one process). Where flows cross few links (ECMP) a
transpose costs little beside a solve, so the loop prunes before each solve on that solve's own
capacities, no bound needed: 47% of a 1024-host ECMP permutation's entries, where the bound
finds none (a whole flow at its host link's rate fills a fabric link before the ACKs are
counted), and its ACK loops take 18% less time. The rates are the same to the bit;
``tests/test_fluid_compiled_bookkeeping.py`` compares pruned and full solves bit for bit.
"""

from libc.math cimport INFINITY, fabs, isfinite
from libc.stdlib cimport free, malloc
from libc.string cimport memcpy, memset

import numpy as np

__all__ = ["solve_compiled", "solve_acks_compiled", "entries_kept", "sprayed"]

ctypedef long long i64

# The pool (module doc): refilled with the POOL + 1 lowest links outside it (16-1024 measured
# on the 1024-host spray_rr ACK loop: 48-64 the fastest, 128 5% and 256 10% slower; 256, the
# numpy solver's size, was the fastest with a tree replaying every touched link's matches and a
# partitioning selection), used when the flows average POOL_MIN_ENTRIES entries or more
# (spray_rr's 16 paths give about 44; ECMP's 1-6 run slower with the pool: every link saturates
# or empties within a few steps, so the refills' scans cost more than the replays they save).
cdef i64 POOL = 64
POOL_MIN_ENTRIES = 16
cdef i64 _POOL_MIN_ENTRIES = POOL_MIN_ENTRIES


cdef inline bint _sprayed(i64 nnz, i64 n) noexcept nogil:
    # flows crossing POOL_MIN_ENTRIES links or more on average: the pool ranks the links, and
    # the ACK loop prunes once (module doc)
    return nnz >= _POOL_MIN_ENTRIES * n


def sprayed(i64 n_entries, i64 n_flows):
    """Whether flows with ``n_entries`` entries among ``n_flows`` count as sprayed here (the
    pool, one pruning per ACK loop): the engine's choice of reading their rows in place."""
    return _sprayed(n_entries, n_flows)


ctypedef int i32

# A refill moving more than 1 / REBUILD_RATIO of the links into the pool replays the whole tree
# once rather than each link's matches (the last refill of a run, with every link left)
cdef i64 REBUILD_RATIO = 8

# A link is left out of a solve when its flows, each at the most any of its links lets it
# send, fill less than 1 - SATURATION_MARGIN of what the ACKs can leave of it (module doc):
# float error in the levels is ~1e-13 relative, far inside this
cdef double SATURATION_MARGIN = 1e-6


cdef struct LinkState:
    # a link's state during a solve, in one 32-byte record: freezing a flow updates load,
    # slope, users and stamp of each link it crosses, one cache line per entry (the kernel is
    # bound by the latency of these scattered accesses, not by arithmetic)
    double load  # the frozen flows' load
    double slope  # the unfrozen flows' sum of coefficient x weight
    double fill  # the level at which the link saturates (inf if it cannot)
    i32 users  # unfrozen flows (a flow crosses a link once)
    i32 stamp  # the step that last touched the link


cdef struct Node:
    # a tournament-tree node: its winner's level and link, so a match reads its children
    # (four, adjacent: one cache line) instead of looking their levels up by link
    double key
    i64 link


cdef struct Scratch:
    size_t size  # the block's bytes
    i64 n_links
    bint padded  # the block's tree holds _tree_pad's for n_links already
    i64 n_leaves  # the tree's leaves (a power of four): the links, then padding at inf
    bint sprayed  # the flows cross POOL_MIN_ENTRIES links or more on average: pool and pruning
    i64 n_entries  # the entries kept (module doc: those on links that cannot saturate are not)
    i64* flow_ptr  # where each flow's kept entries start
    i32* entry_link  # the link of every kept entry, as i32 (half the bytes to stream)
    double* entry_coef  # and its coefficient
    i64* link_ptr  # where each link's flows start in link_flows
    i32* link_flows  # the link -> flows transpose
    double* slope0  # every link's slope with every flow unfrozen
    double* rate  # solve_acks_compiled's: a solve's rates
    double* data_cap  # and its capacities
    double* ack_load[2]  # and the ACK load of its solves, alternately
    i32* users0  # every link's flows
    LinkState* links
    i32* touched  # links whose level this step moves, once each
    Node* tree  # the tournament tree: the root at tree[0], node i's children at 4 i + 1..4
    Node* leaves  # its leaves, in link order: where the tree's last level starts
    double* spare  # the levels a pool refill selects from
    char* frozen
    char* pooled
    i32* outside  # links outside the pool that may still saturate (see _pool_refill)


def solve_compiled(problem, capacity, bint prune=True):
    """Max-min fair rate of every flow of ``problem`` (``inf`` for a flow that crosses no link),
    as :func:`spraylab.fluid.solver.solve` with every flow active. ``prune = False`` keeps the
    entries on links that cannot saturate (the same rates to the bit, more work: for tests)."""
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
        prune,
    )
    return rate


def _fill(
    const i64[::1] ptr,
    const i64[::1] link,
    const double[::1] coef,
    const double[::1] weight,
    const double[::1] cap,
    double[::1] rate,
    bint prune,
):
    """Progressive filling into ``rate`` (one per flow)."""
    cdef i64 n = ptr.shape[0] - 1
    cdef i64 n_links = cap.shape[0]
    cdef i64 nnz = link.shape[0]
    cdef Scratch s
    cdef char* block = _scratch(&s, n, n_links, nnz)
    cdef const i64* p_link = _i(link)
    cdef const double* p_coef = _d(coef)
    cdef const double* p_weight = _d(weight)
    with nogil:
        _transpose(
            &ptr[0], NULL, p_link, p_coef, p_weight, n, n_links, nnz, &s, _d(cap), NULL, NULL, NULL, NULL, prune
        )
        _run(p_weight, _d(cap), _dw(rate), n, n_links, &s)
    _release(&s, block)


def solve_acks_compiled(
    problem, acks, capacity, ack_load, double atol, int max_iterations, int stall_iterations, bint prune=True,
    rows=None,
):
    """The ACK reservation's fixed-point iteration (:func:`spraylab.fluid.acks.solve_with_acks`)
    with this kernel, the problem transposed once for all its solves (sprayed flows) or before
    each on its own capacities (flows on few links; module doc, "Links that cannot saturate"):
    ``(rates, data capacity, ACK load, True)`` at the fixed point, ``(..., False)`` where that
    function falls back. ``rows``: solve these rows of ``problem`` and ``acks`` alone, in their
    order, as ``problem.restrict(rows)`` and ``acks.restrict(rows)`` would (the same doubles,
    without copying the rows: the engine solves its table's moving flows at every event).
    Every solve and ACK load is the same doubles as that function's loop: the data capacity is
    ``np.maximum(capacity - load, 0.0)``, the load is summed as ``_sparse.link_sums`` (entry
    order, ``np.bincount``'s), the change is ``max |new - load|``."""
    cdef const i64[::1] ptr = np.ascontiguousarray(problem.ptr, dtype=np.int64)
    cdef const i64[::1] link = np.ascontiguousarray(problem.link, dtype=np.int64)
    cdef const double[::1] coef = np.ascontiguousarray(problem.coef, dtype=np.float64)
    cdef const double[::1] weight = np.ascontiguousarray(
        problem.weight if rows is None else problem.weight[rows], dtype=np.float64
    )
    cdef const i64[::1] a_ptr = np.ascontiguousarray(acks.ptr, dtype=np.int64)
    cdef const i64[::1] a_link = np.ascontiguousarray(acks.link, dtype=np.int64)
    cdef const double[::1] a_coef = np.ascontiguousarray(acks.coef, dtype=np.float64)
    cdef const double[::1] cap = np.ascontiguousarray(capacity, dtype=np.float64)
    cdef const double[::1] ack_load0 = np.ascontiguousarray(ack_load, dtype=np.float64)
    cdef const i64[::1] row_of = np.ascontiguousarray(rows if rows is not None else ptr[:0], dtype=np.int64)
    cdef const i64* p_rows = &row_of[0] if rows is not None and row_of.shape[0] else NULL
    cdef i64 n = row_of.shape[0] if rows is not None else ptr.shape[0] - 1
    cdef i64 n_links = cap.shape[0]
    cdef i64 nnz = _row_entries(&ptr[0], p_rows, n, ptr.shape[0] - 1) if rows is not None else link.shape[0]
    cdef i64 lk, f, r, e, since_best = 0
    cdef int it, n_solved = 0
    cdef double v, d, change, best = INFINITY, sent
    cdef bint done = False, ok = False
    # flows on few links (ECMP): transposing again for every solve costs little, and the solve's
    # own capacities (no bound on the ACKs needed) leave out more links than the loop's bound
    cdef bint per_solve = prune and not _sprayed(nnz, n)
    cdef Scratch s
    cdef char* block = _scratch(&s, n, n_links, nnz)
    # the solves work in the scratch block (warm in cache: fresh arrays each solve cost their
    # first touch); the last one's rates, data capacity and ACK load are copied out
    cdef const double* load = _d(ack_load0)  # read only: the caller's
    cdef double* new = NULL
    cdef double* data_cap = s.data_cap
    cdef double* rate = s.rate
    cdef const i64* p_link = _i(link)
    cdef const double* p_coef = _d(coef)
    cdef const double* p_weight = _d(weight)
    try:
        with nogil:
            if not per_solve:  # once, leaving out the links no solve of the loop can fill
                _transpose(
                    &ptr[0], p_rows, p_link, p_coef, p_weight, n, n_links, nnz, &s,
                    _d(cap), &a_ptr[0], _i(a_link), _d(a_coef), load, prune,
                )
            for it in range(max_iterations):
                n_solved += 1
                new = s.ack_load[it % 2]  # never load's: that is the other or the caller's
                for lk in range(n_links):
                    v = cap[lk] - load[lk]
                    data_cap[lk] = v if (v >= 0.0 or v != v) else 0.0  # np.maximum(v, 0.0)
                if per_solve:  # on this solve's own capacities (module doc)
                    _transpose(
                        &ptr[0], p_rows, p_link, p_coef, p_weight, n, n_links, nnz, &s,
                        data_cap, NULL, NULL, NULL, NULL, prune,
                    )
                _run(p_weight, data_cap, rate, n, n_links, &s)
                memset(new, 0, n_links * sizeof(double))
                for f in range(n):  # the ACK load, as _sparse.link_sums
                    r = p_rows[f] if p_rows != NULL else f
                    sent = rate[f] if isfinite(rate[f]) else 0.0
                    for e in range(a_ptr[r], a_ptr[r + 1]):
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
                    break
                if change < best:
                    best, since_best = change, 0
                else:
                    since_best += 1
                if since_best >= stall_iterations:
                    break
                load = new
        if n_solved == 0:
            return None, None, None, ok
        rates_a, data_cap_a, new_a = np.empty(n), np.empty(n_links), np.empty(n_links)
        _copy(rates_a, rate, n)
        _copy(data_cap_a, data_cap, n_links)
        _copy(new_a, new, n_links)
    finally:
        _release(&s, block)
    return rates_a, data_cap_a, new_a, ok


def entries_kept(problem, capacity, acks=None, ack_load=None):
    """How many of ``problem``'s entries a solve on ``capacity`` keeps, the others being on links
    that cannot saturate (module doc): what the pruning saves, for tests and docs. With ``acks``
    and the starting ``ack_load``: against the bound on the ACK loop's solves, as the loop of
    sprayed flows prunes (a loop of flows on few links prunes each solve on its own capacities,
    ``entries_kept(problem, data_capacity)``)."""
    cdef const i64[::1] ptr = np.ascontiguousarray(problem.ptr, dtype=np.int64)
    cdef const i64[::1] link = np.ascontiguousarray(problem.link, dtype=np.int64)
    cdef const double[::1] coef = np.ascontiguousarray(problem.coef, dtype=np.float64)
    cdef const double[::1] weight = np.ascontiguousarray(problem.weight, dtype=np.float64)
    cdef const double[::1] cap = np.ascontiguousarray(capacity, dtype=np.float64)
    cdef const i64[::1] a_ptr = np.ascontiguousarray(acks.ptr if acks is not None else ptr, dtype=np.int64)
    cdef const i64[::1] a_link = np.ascontiguousarray(acks.link if acks is not None else link[:0], dtype=np.int64)
    cdef const double[::1] a_coef = np.ascontiguousarray(acks.coef if acks is not None else coef[:0], dtype=np.float64)
    cdef const double[::1] load = np.ascontiguousarray(ack_load if ack_load is not None else cap[:0], dtype=np.float64)
    cdef i64 n = ptr.shape[0] - 1
    cdef Scratch s
    cdef char* block = _scratch(&s, n, cap.shape[0], link.shape[0])
    _transpose(
        &ptr[0], NULL, _i(link), _d(coef), _d(weight), n, cap.shape[0], link.shape[0], &s, _d(cap),
        &a_ptr[0] if acks is not None else NULL, _i(a_link), _d(a_coef), _d(load), True,
    )
    kept = s.n_entries
    _release(&s, block)
    return kept


cdef void _copy(double[::1] to, const double* a, i64 m) noexcept:
    if m:
        memcpy(&to[0], a, m * sizeof(double))


cdef inline const i64* _i(const i64[::1] a) noexcept nogil:
    return &a[0] if a.shape[0] else NULL


cdef inline const double* _d(const double[::1] a) noexcept nogil:
    return &a[0] if a.shape[0] else NULL


cdef inline double* _dw(double[::1] a) noexcept nogil:
    return &a[0] if a.shape[0] else NULL


# The scratch block of the last solve, kept for the next (``_scratch``): the engine solves
# thousands of problems over the same links, and a fresh block costs its pages' first-touch
# faults (malloc maps one this size anew) and a replay of its tree's padding every call.
cdef char* _kept = NULL
cdef size_t _kept_size = 0
# a block larger than this (a solve of millions of entries) is freed, not kept for the
# process's life: its first touch costs little beside such a solve
cdef size_t KEEP_MAX_BYTES = 64 << 20
cdef i64 _kept_links = -1  # the links its tree's padding was played for


cdef char* _scratch(Scratch* s, i64 n, i64 n_links, i64 nnz) except NULL:
    """One block for a solve's scratch arrays (give it back with :func:`_release`), the tree
    first, then the widest records. Called with the GIL held, as ``_release``: the kept block
    is never shared."""
    global _kept
    if n >= 1 << 31 or n_links >= 1 << 31:
        raise OverflowError("flows and links are numbered in 32 bits")
    cdef i64 n_leaves = 1
    while n_leaves < n_links:
        n_leaves *= 4
    cdef i64 n_inner = (n_leaves - 1) // 3  # the nodes above the leaves
    cdef size_t size = (
        64 + (n_inner + n_leaves) * sizeof(Node) + n_links * sizeof(LinkState)
        + (n_links + n + 2) * sizeof(i64) + (5 * n_links + n + nnz) * sizeof(double)
        + (2 * nnz + 3 * n_links) * sizeof(i32) + n + n_links + 1
    )
    cdef char* block
    if _kept != NULL and _kept_size >= size:
        block, _kept = _kept, NULL
        s.size = _kept_size
        s.padded = _kept_links == n_links
    else:
        block = <char*> malloc(size)
        if block == NULL:
            raise MemoryError()
        s.size = size
        s.padded = False
    s.n_links = n_links
    s.n_leaves = n_leaves
    # every node's four children in one 64-byte line: tree[1] on a line's start (the tree
    # starts the block, so the padding a kept block's tree holds is where this solve looks)
    s.tree = <Node*> (block + (-(<size_t> block + sizeof(Node))) % 64)
    s.leaves = s.tree + n_inner
    s.links = <LinkState*> (s.leaves + n_leaves)
    s.link_ptr = <i64*> (s.links + n_links)
    s.flow_ptr = s.link_ptr + n_links + 1
    s.spare = <double*> (s.flow_ptr + n + 1)
    s.slope0 = s.spare + n_links
    s.data_cap = s.slope0 + n_links
    s.ack_load[0] = s.data_cap + n_links
    s.ack_load[1] = s.ack_load[0] + n_links
    s.rate = s.ack_load[1] + n_links
    s.entry_coef = s.rate + n
    s.link_flows = <i32*> (s.entry_coef + nnz)
    s.entry_link = s.link_flows + nnz
    s.touched = s.entry_link + nnz
    s.outside = s.touched + n_links
    s.users0 = s.outside + n_links
    s.frozen = <char*> (s.users0 + n_links)
    s.pooled = s.frozen + n
    return block


cdef void _release(Scratch* s, char* block) noexcept:
    """Keep ``block`` for the next solve (the larger of it and the one kept, up to
    ``KEEP_MAX_BYTES``), or free it."""
    global _kept, _kept_size, _kept_links
    if s.size <= KEEP_MAX_BYTES and (_kept == NULL or _kept_size < s.size):
        free(_kept)
        _kept, _kept_size, _kept_links = block, s.size, s.n_links
    else:
        free(block)


cdef inline void _tree_set(Node* tree, Node* leaves, i64 lk, double key) noexcept nogil:
    """Set link ``lk``'s key and replay the matches above it, up to the first whose winner
    (link and level, to the bit) does not change: every match above that one is unchanged too.
    The tree stays the function of its keys it was built as, whatever order the keys change in,
    so replaying each changed link alone gives the same tree as replaying them together."""
    cdef Node* leaf = &leaves[lk]
    cdef Node* win
    cdef i64 node
    if _same(leaf.key, key):
        return
    leaf.key = key
    node = leaf - tree
    while node:
        node = (node - 1) >> 2
        win = _winner4(&tree[4 * node + 1])
        if win.link == tree[node].link and _same(win.key, tree[node].key):
            return
        tree[node] = win[0]


cdef inline Node* _winner4(Node* c) noexcept nogil:
    """The winner of four adjacent nodes, as the two rounds of a binary tree over them: the
    lower level, the lower link on a tie (every link under a node is below its right
    neighbour's). A binary tree's winner is the same whichever levels of it are stored: every
    other one here, for half the levels to replay."""
    cdef Node* a = c + 1 if c[1].key < c[0].key else c
    cdef Node* b = c + 3 if c[3].key < c[2].key else c + 2
    return b if b.key < a.key else a


cdef union Bits:
    double d
    unsigned long long u


cdef inline bint _same(double a, double b) noexcept nogil:
    # the same bits (a nan key is one too): a tree node whose winner is unchanged stops a replay
    cdef Bits x, y
    x.d = a
    y.d = b
    return x.u == y.u


cdef void _tree_build(Node* tree, Node* leaves, i64 n_links) noexcept nogil:
    """Play every match above the links' leaves, their keys set (the matches above padding
    alone, played once by :func:`_tree_pad`, never change)."""
    cdef i64 node, first = leaves - tree, n_live = n_links  # a level's first node, live nodes
    while first:
        first = (first - 1) >> 2
        n_live = (n_live + 3) >> 2
        for node in range(first, first + n_live):
            tree[node] = _winner4(&tree[4 * node + 1])[0]


cdef void _tree_pad(Node* tree, Node* leaves, i64 n_leaves) noexcept nogil:
    """Every leaf its link, at inf, and every match played: what a solve's tree starts from."""
    cdef i64 lk
    for lk in range(n_leaves):
        leaves[lk].link = lk
        leaves[lk].key = INFINITY
    _tree_build(tree, leaves, n_leaves)


cdef double _pool_refill(
    LinkState* links, i64 n_links, Node* tree, Node* leaves, char* pooled, i32* outside,
    i64* n_outside, double* spare, i32* added,
) noexcept nogil:
    """Move the POOL + 1 lowest links outside the pool (and any tied with the last) into it,
    ranking them in the tree, and return the new bound: the highest level moved in (inf when
    that is every link left). Every link left outside is above it.

    ``outside`` lists (ascending) the links outside the pool that may still saturate: it
    drops those pooled since (their level fell to the bound) and those with no unfrozen flow
    left (their level is inf for good: pooling one would not change the tree)."""
    cdef i64 i, lk, m = 0, kept = 0
    for i in range(n_outside[0]):
        lk = outside[i]
        if pooled[lk] or links[lk].users == 0:
            continue
        outside[kept] = <i32> lk
        kept += 1
        if links[lk].fill < INFINITY:
            spare[m] = links[lk].fill
            m += 1
    cdef double bound = INFINITY
    if m > POOL:
        bound = _kth_lowest(spare, m, POOL)
    m = 0
    n_outside[0], kept = kept, 0
    for i in range(n_outside[0]):
        lk = outside[i]
        if not links[lk].fill > bound:  # a nan level goes in: never left behind
            pooled[lk] = 1
            added[m] = <i32> lk
            m += 1
        else:
            outside[kept] = <i32> lk
            kept += 1
    n_outside[0] = kept
    if m * REBUILD_RATIO > n_links:  # many links: set their keys, replay every match once
        for i in range(m):
            leaves[added[i]].key = links[added[i]].fill
        _tree_build(tree, leaves, n_links)
    else:
        for i in range(m):
            _tree_set(tree, leaves, added[i], links[added[i]].fill)
    return bound


cdef double _kth_lowest(double* a, i64 m, i64 k) noexcept nogil:
    """The ``k``-th lowest of ``a[:m]`` (from 0, ``k < m``; no nan; reorders ``a``): a
    max-heap of the ``k + 1`` lowest seen in ``a[:k + 1]``, which a later value enters only if
    below its top. One pass of mostly predictable compares (a partitioning selection's
    mispredicted its way through ``a`` two or three times)."""
    cdef i64 i
    for i in range((k + 1) // 2 - 1, -1, -1):
        _sift_down(a, k + 1, i, a[i])
    for i in range(k + 1, m):
        if a[i] < a[0]:
            _sift_down(a, k + 1, 0, a[i])
    return a[0]


cdef inline void _sift_down(double* heap, i64 size, i64 node, double v) noexcept nogil:
    """Put ``v`` at ``node`` of the max-heap ``heap[:size]`` and sift it down."""
    cdef i64 child
    while True:
        child = 2 * node + 1
        if child >= size:
            break
        if child + 1 < size and heap[child + 1] > heap[child]:
            child += 1
        if not heap[child] > v:
            break
        heap[node] = heap[child]
        node = child
    heap[node] = v


cdef inline i64 _row_entries(const i64* ptr, const i64* rows, i64 n, i64 n_rows) except -1:
    """The entries of rows ``rows[:n]`` of a table of ``n_rows`` rows (each checked in range)."""
    cdef i64 i, r, total = 0
    for i in range(n):
        r = rows[i]
        if r < 0 or r >= n_rows:
            raise IndexError(f"row {r} of a table of {n_rows}")
        total += ptr[r + 1] - ptr[r]
    return total


cdef void _transpose(
    const i64* ptr, const i64* rows, const i64* link, const double* coef, const double* weight,
    i64 n, i64 n_links, i64 nnz, Scratch* s,
    const double* cap, const i64* a_ptr, const i64* a_link, const double* a_coef,
    const double* ack_load, bint prune,
) noexcept nogil:
    """What a solve needs of the problem alone, whatever the capacities: the entries kept
    (``prune``: not those on links that cannot saturate, see :func:`_unsaturable`) with their
    links as i32, the link -> flows transpose, every link's flows and slope (sum of coefficient
    x weight) before any is frozen, and the tree's padding (unless the kept block has it).
    Flow ``f`` is row ``rows[f]`` of the table (``rows`` NULL: row ``f``), and ``weight`` is
    one per flow. ``cap``, the ACK entries (``a_ptr`` NULL: none) and ``ack_load`` (NULL: none)
    are those of the solves to come, for the pruning."""
    cdef i64* link_ptr = s.link_ptr
    cdef i32* entry_link = s.entry_link
    cdef double* entry_coef = s.entry_coef
    cdef double* slope0 = s.slope0
    cdef char* cut = s.pooled  # (free until a solve: the links not kept)
    cdef i64 e, f, r, lk, k = 0
    cdef i32 l
    cdef double w
    s.sprayed = _sprayed(nnz, n)
    if prune:
        _unsaturable(ptr, rows, link, coef, n, n_links, cap, a_ptr, a_link, a_coef, ack_load, s, cut)
    else:
        memset(cut, 0, n_links)
    for lk in range(n_links + 1):
        link_ptr[lk] = 0
    for lk in range(n_links):
        slope0[lk] = 0.0
    for f in range(n):
        r = rows[f] if rows != NULL else f
        w = weight[f]
        s.flow_ptr[f] = k
        for e in range(ptr[r], ptr[r + 1]):
            l = <i32> link[e]
            if cut[l]:
                continue
            entry_link[k] = l
            entry_coef[k] = coef[e]
            k += 1
            link_ptr[l + 1] += 1
            slope0[l] += coef[e] * w
    s.flow_ptr[n] = k
    s.n_entries = k
    for lk in range(n_links):
        s.users0[lk] = <i32> link_ptr[lk + 1]
        link_ptr[lk + 1] += link_ptr[lk]
    # the transpose by a counting sort (flows in entry order within a link), link_ptr[lk]
    # serving as link lk's cursor, then shifted back
    for f in range(n):
        for e in range(s.flow_ptr[f], s.flow_ptr[f + 1]):
            l = entry_link[e]
            s.link_flows[link_ptr[l]] = <i32> f
            link_ptr[l] += 1
    for lk in range(n_links, 0, -1):
        link_ptr[lk] = link_ptr[lk - 1]
    link_ptr[0] = 0
    if not s.padded:  # (a solve sets the links' leaves, never the padding's)
        _tree_pad(s.tree, s.leaves, s.n_leaves)
        s.padded = True


cdef void _unsaturable(
    const i64* ptr, const i64* rows, const i64* link, const double* coef, i64 n, i64 n_links,
    const double* cap, const i64* a_ptr, const i64* a_link, const double* a_coef,
    const double* ack_load, Scratch* s, char* cut,
) noexcept nogil:
    """Mark in ``cut`` the links that no solve on capacities up to ``cap`` (less ACK loads) can
    saturate (module doc, "Links that cannot saturate"): a flow's rate never exceeds its
    ``cap / coef`` on any link it crosses, so a link whose flows at those rates fill less than
    what the ACKs can leave of it, by ``SATURATION_MARGIN``, is never the lowest."""
    cdef double* most = s.rate  # (free until a solve) each flow's largest possible rate
    cdef double* demand = s.spare  # (free until a solve) each link's flows at those rates
    # the largest ACK load (free until the loop's second solve; without ACK entries, untouched:
    # the loop's per-solve pruning runs while a solve's load is in it)
    cdef double* acks = s.ack_load[1]
    cdef i64 e, f, row, lk
    cdef double v, r
    for lk in range(n_links):
        demand[lk] = 0.0
        if a_ptr != NULL:  # (else a solve of the ACK loop may be using it)
            acks[lk] = 0.0
    for f in range(n):
        row = rows[f] if rows != NULL else f
        r = INFINITY
        for e in range(ptr[row], ptr[row + 1]):
            v = cap[link[e]] / coef[e]
            if v < r or v != v:  # a nan bound sticks: its links are never cut
                r = v
        most[f] = r
        for e in range(ptr[row], ptr[row + 1]):  # (the flow's entries again, still in cache)
            demand[link[e]] += coef[e] * r
    if a_ptr != NULL:
        for f in range(n):
            row = rows[f] if rows != NULL else f
            for e in range(a_ptr[row], a_ptr[row + 1]):
                acks[a_link[e]] += a_coef[e] * most[f]
    for lk in range(n_links):
        v = acks[lk] if a_ptr != NULL else 0.0
        if ack_load != NULL and not ack_load[lk] <= v:  # the starting load may be larger
            v = ack_load[lk]
        # (nan anywhere: not cut)
        cut[lk] = demand[lk] < (cap[lk] - v) * (1.0 - SATURATION_MARGIN)


cdef void _run(
    const double* weight, const double* cap, double* rate, i64 n, i64 n_links, Scratch* s,
) noexcept nogil:
    """Progressive filling on capacities ``cap`` (after :func:`_transpose` of the problem)."""
    cdef const i64* ptr = s.flow_ptr
    cdef const double* coef = s.entry_coef
    cdef const i64* link_ptr = s.link_ptr
    cdef const i32* link_flows = s.link_flows
    cdef const i32* entry_link = s.entry_link
    cdef LinkState* links = s.links
    cdef i32* touched = s.touched
    cdef Node* tree = s.tree
    cdef Node* leaves = s.leaves
    cdef char* frozen = s.frozen
    cdef char* pooled = s.pooled
    cdef LinkState* o
    cdef i64 e, f, lk, j, t, other, n_touched, n_outside = 0
    cdef i32 step
    cdef double level, r, v, w, c, bound
    for f in range(n):
        frozen[f] = 0
        if ptr[f + 1] == ptr[f]:
            rate[f] = INFINITY  # crosses no link
            frozen[f] = 1
    # with the pool, it starts empty: every link is outside, above -inf, and it is refilled
    # first; without, every link is in it from the start: the tree ranks them all
    cdef bint pool = s.sprayed
    bound = -INFINITY if pool else INFINITY
    memset(pooled, not pool, n_links)
    for lk in range(n_links):  # (the padding leaves stay at inf: _tree_pad)
        o = &links[lk]
        o.load = 0.0
        o.slope = s.slope0[lk]
        o.users = s.users0[lk]
        o.stamp = -1
        o.fill = cap[lk] / o.slope if o.users > 0 else INFINITY
        if not pool:
            leaves[lk].key = o.fill
        else:
            leaves[lk].key = INFINITY
            if o.users > 0:
                s.outside[n_outside] = <i32> lk
                n_outside += 1
    _tree_build(tree, leaves, n_links)
    step = 0
    while True:
        lk = tree[0].link  # the lowest level in the pool, the lowest link on a tie
        level = tree[0].key
        if not level <= bound:  # a link outside the pool may be lower: refill it
            if bound == INFINITY:
                break  # every link is in the pool and none can saturate
            bound = _pool_refill(
                links, n_links, tree, leaves, pooled, s.outside, &n_outside, s.spare, touched
            )
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
            w = weight[f]
            r = w * level
            rate[f] = r
            for e in range(ptr[f], ptr[f + 1]):
                other = entry_link[e]
                o = &links[other]
                c = coef[e]
                o.load += c * r
                o.slope -= c * w
                o.users -= 1
                if o.stamp != step:
                    o.stamp = step
                    touched[n_touched] = <i32> other
                    n_touched += 1
        # lk is among them (the flows just frozen crossed it, and it was in the pool): no
        # unfrozen flow left, its level goes to inf
        for t in range(n_touched):
            other = touched[t]
            o = &links[other]
            if o.users == 0:
                o.fill = INFINITY
            else:
                # never below the level just frozen: float error must not reorder saturations
                # (max(v, level) as Python's: v unless level is larger)
                v = (cap[other] - o.load) / o.slope
                o.fill = level if level > v else v
            # a link outside the pool stays out while it is above the bound (levels only rise,
            # up to float error): ranking it would cost a replay for nothing
            if pooled[other] or not o.fill > bound:
                pooled[other] = 1
                _tree_set(tree, leaves, other, o.fill)
    # A flow still unfrozen crosses only links of infinite capacity (a finite one would have
    # saturated under it): unconstrained, as a flow that crosses no link. The engine never
    # solves one (a dead link has infinite capacity, but a flow only on dead links delivers
    # nothing and is not solved); the numba kernel left it at 0 when scanning and at inf (or 0,
    # through inf - inf) with its heap.
    for f in range(n):
        if not frozen[f]:
            rate[f] = INFINITY
