# cython: boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
"""The fluid engine's bookkeeping around every solve, compiled: restricting the flow table to the
flows being solved, summing rates onto links, and the max-min certificate.

With the ACK reservation the engine solves at nearly every completion (about 170 times in a
1024-host spray_rr permutation, two solves each), and between solves it restricts the table,
sums the ACK load onto the links, and certifies the rates (and at the end it sums the bytes
each flow sent onto its links). In numpy each of
those is a dozen calls over arrays of tens of thousands of entries; together they cost as much
CPU as the solves themselves. These loops do the same arithmetic in the same order:

* :func:`link_sums` adds ``coef[e] * value[row of e]`` into each link in entry order, starting
  from 0.0, which is what ``np.bincount(link, weights=coef * value[entry_flow])`` does (its
  weights are the same products, summed one by one in index order), so the sums are the
  same doubles; the ACK load they compute feeds the next solve.
* :func:`restrict` copies rows, as ``Problem.restrict``.
* :func:`first_use_rows` merges the entries of a flow's walks into one per link, at its first
  use, the shares summed in entry order: what ``np.unique`` (first index and inverse),
  ``np.bincount`` of the shares and a stable argsort of the first indices give, with one pass
  instead of a sort (spray_rr: 16 walks of each flow, traced for its data and its ACKs).
* :func:`certificate` checks what :func:`spraylab.fluid.solver.certify` checks, with the same
  tolerances, and names the same link or flow when a check fails.

Built by setup.py without floating-point contraction, as the max-min kernel.
"""

from libc.math cimport INFINITY, isfinite
from libc.stdlib cimport free, malloc

import numpy as np

__all__ = ["restrict", "link_sums", "certificate", "first_use_rows"]

ctypedef long long i64


def restrict(
    const i64[::1] ptr,
    const i64[::1] link,
    const double[::1] coef,
    const double[::1] weight,
    const i64[::1] rows,
):
    """``ptr``, ``link``, ``coef``, ``weight`` of the rows ``rows`` alone, in their order."""
    cdef i64 n = rows.shape[0]
    cdef i64 i, r, e, k = 0
    out_ptr_a = np.empty(n + 1, dtype=np.int64)
    cdef i64[::1] out_ptr = out_ptr_a
    out_ptr[0] = 0
    for i in range(n):
        r = rows[i]
        out_ptr[i + 1] = out_ptr[i] + (ptr[r + 1] - ptr[r])
    cdef i64 nnz = out_ptr[n]
    out_link_a = np.empty(nnz, dtype=np.int64)
    out_coef_a = np.empty(nnz, dtype=np.float64)
    out_weight_a = np.empty(n, dtype=np.float64)
    cdef i64[::1] out_link = out_link_a
    cdef double[::1] out_coef = out_coef_a
    cdef double[::1] out_weight = out_weight_a
    for i in range(n):
        r = rows[i]
        out_weight[i] = weight[r]
        for e in range(ptr[r], ptr[r + 1]):
            out_link[k] = link[e]
            out_coef[k] = coef[e]
            k += 1
    return out_ptr_a, out_link_a, out_coef_a, out_weight_a


def first_use_rows(
    const i64[::1] entry_flow,
    const i64[::1] entry_link,
    const double[::1] share,
    i64 n_flows,
    i64 n_links,
):
    """``(ptr, link, coef)``: the entries ``(entry_flow, entry_link, share)``, ordered by flow
    (non-decreasing ``entry_flow``), as one entry per flow and link at its first use, its
    shares summed in entry order from 0.0 (``np.bincount``'s sums)."""
    cdef i64 m = entry_flow.shape[0]
    cdef i64 e, f, lk, k = 0, row = 0
    if entry_link.shape[0] != m or share.shape[0] != m:
        raise ValueError("entry_flow, entry_link and share differ in length")
    ptr_a = np.zeros(n_flows + 1, dtype=np.int64)
    link_a = np.empty(m, dtype=np.int64)
    coef_a = np.empty(m, dtype=np.float64)
    # where each link's entry of the current row is: an index below the row's first is stale
    at_a = np.full(max(n_links, 0), -1, dtype=np.int64)
    cdef i64[::1] ptr = ptr_a
    cdef i64[::1] link = link_a
    cdef double[::1] coef = coef_a
    cdef i64[::1] at = at_a
    for e in range(m):
        f = entry_flow[e]
        lk = entry_link[e]
        if f < row or f >= n_flows or lk < 0 or lk >= n_links:
            raise ValueError(f"entry {e}: flow {f} or link {lk} out of order or range")
        while row < f:  # rows up to f end here
            row += 1
            ptr[row] = k
        if at[lk] < ptr[row]:
            at[lk] = k
            link[k] = lk
            coef[k] = 0.0
            k += 1
        coef[at[lk]] += share[e]
    while row < n_flows:
        row += 1
        ptr[row] = k
    return ptr_a, link_a[:k].copy(), coef_a[:k].copy()


def link_sums(
    const i64[::1] ptr,
    const i64[::1] link,
    const double[::1] coef,
    const double[::1] value,
    i64 n_links,
    bint finite_only=False,
    const i64[::1] rows=None,
):
    """Per link, the sum of ``coef[e] * value[f]`` over the entries ``e`` of every row ``f``,
    in entry order from 0.0 (``np.bincount``'s sums, see the module doc). ``finite_only``: a
    row whose value is not finite counts as 0 (an unconstrained flow sends nothing).
    ``rows``: of rows ``rows`` alone, ``value[i]`` that of row ``rows[i]`` (the sums of the
    table restricted to them, without the copy)."""
    out_a = np.zeros(n_links, dtype=np.float64)
    cdef double[::1] out = out_a
    cdef i64 n_table = ptr.shape[0] - 1
    cdef i64 n = n_table if rows is None else rows.shape[0]
    cdef i64 i, f, e
    cdef double v
    if value.shape[0] < n:
        raise ValueError(f"{value.shape[0]} values for {n} rows")
    for i in range(n):
        f = i if rows is None else rows[i]
        if f < 0 or f >= n_table:
            raise IndexError(f"row {f} of a table of {n_table}")
        v = value[i]
        if finite_only and not isfinite(v):
            v = 0.0
        for e in range(ptr[f], ptr[f + 1]):
            out[link[e]] += coef[e] * v
    return out_a


def certificate(
    const i64[::1] ptr,
    const i64[::1] link,
    const double[::1] coef,
    const double[::1] weight,
    const double[::1] cap,
    const double[::1] rate,
    double rtol,
    const i64[::1] rows=None,
):
    """``None`` if ``rate`` (every flow active) is the max-min fair allocation of the problem on
    ``cap``, else what :func:`spraylab.fluid.solver.certify` would raise: the first link over
    capacity, a negative rate, or the first flow without a bottleneck. ``rows``: of the
    problem's rows ``rows`` alone (flow ``i`` is row ``rows[i]``, its rate ``rate[i]``), as of
    the problem restricted to them."""
    cdef i64 n_table = ptr.shape[0] - 1
    cdef i64 n = n_table if rows is None else rows.shape[0]
    cdef i64 n_links = cap.shape[0]
    cdef i64 i, f, e, lk
    cdef double scale = 1.0, atol, r, norm
    if rate.shape[0] < n or weight.shape[0] < n_table:
        raise ValueError(f"{rate.shape[0]} rates and {weight.shape[0]} weights for {n} flows")
    if rows is not None:
        for i in range(n):
            if rows[i] < 0 or rows[i] >= n_table:
                raise IndexError(f"row {rows[i]} of a table of {n_table}")
    cdef double* load = <double*> malloc((2 * n_links + 1) * sizeof(double))
    if load == NULL:
        raise MemoryError()
    cdef double* link_max = load + n_links
    cdef char* saturated = <char*> malloc(n_links + 1)
    if saturated == NULL:
        free(load)
        raise MemoryError()
    try:
        for lk in range(n_links):
            load[lk] = 0.0
            link_max[lk] = 0.0
            if isfinite(cap[lk]) and cap[lk] > scale:
                scale = cap[lk]
        atol = rtol * scale
        # a flow with no finite rate puts nothing on its links (and has no bottleneck); one pass
        # for the loads (summed in entry order, as np.bincount) and each link's largest rate / weight
        for i in range(n):
            f = i if rows is None else rows[i]
            r = rate[i]
            if not isfinite(r):
                continue
            norm = r / weight[f]
            for e in range(ptr[f], ptr[f + 1]):
                lk = link[e]
                load[lk] += coef[e] * r
                if norm > link_max[lk] or norm != norm:  # np.maximum: nan wins
                    link_max[lk] = norm
        for lk in range(n_links):
            if load[lk] > cap[lk] * (1 + rtol) + atol:
                return f"link {lk} carries {load[lk]:.6g} > capacity {cap[lk]:.6g}"
        for i in range(n):
            if rate[i] < 0:
                return "negative rate"
        for lk in range(n_links):
            saturated[lk] = load[lk] >= cap[lk] * (1 - rtol) - atol
        for i in range(n):
            f = i if rows is None else rows[i]
            if ptr[f + 1] == ptr[f]:
                continue  # crosses no link: nothing to certify
            if isfinite(rate[i]):
                norm = rate[i] / weight[f]
                for e in range(ptr[f], ptr[f + 1]):
                    lk = link[e]
                    if saturated[lk] and norm >= link_max[lk] * (1 - rtol) - atol:
                        break
                else:
                    return f"flow {i} (rate {rate[i]:.6g}) has no bottleneck link"
            else:
                return f"flow {i} (rate {rate[i]:.6g}) has no bottleneck link"
        return None
    finally:
        free(load)
        free(saturated)
