"""The fluid engine's compiled paths against what they replace, to the bit: the compiled
max-min kernel's pool (sprayed flows) against the progressive-filling oracle and the max-min
certificate (Bertsekas & Gallager, Data Networks, section 6.5.2), the compiled ACK
fixed-point loop against the Python loop of ``solve_with_acks``, ``link_sums`` against
``np.bincount``, ``first_use_rows`` against ``np.unique`` and ``np.bincount``, the compiled
certificate against the numpy one, and the spray_rr draws against ``random.Random.sample``."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from spraylab.fluid._sparse import first_use_rows, link_sums, restrict

from spraylab.fluid import _maxmin
from spraylab.fluid.acks import solve_with_acks
from spraylab.fluid.solver import CertificateError, Problem, certify, problem_from_lists
from spraylab.metrics.maxmin import max_min_rates


def _sprayed(rng: np.random.Generator, n_flows: int, n_links: int, per_flow: int) -> list[list[int]]:
    return [sorted(rng.choice(n_links, size=per_flow, replace=False).tolist()) for _ in range(n_flows)]


@pytest.mark.parametrize("seed", range(6))
def test_pooled_kernel_equals_progressive_filling_oracle(seed: int) -> None:
    """Flows crossing 16+ links (the kernel ranks a pool of the lowest links, refilled as it
    runs dry: 600 links, several refills) get the oracle's max-min rates, with ties (few
    distinct capacities) broken as the oracle breaks them, and pass the certificate."""
    rng = np.random.default_rng(seed)
    n_links = 600
    flows = _sprayed(rng, 120, n_links, int(rng.integers(16, 40)))
    caps = rng.choice([1.0, 2.0, 3.0, 5.0], size=n_links)
    problem = problem_from_lists(flows, n_links)
    assert len(problem.link) >= _maxmin.POOL_MIN_ENTRIES * problem.n_flows  # the pool is in use
    rates = _maxmin.solve_compiled(problem, caps)
    certify(problem, caps, rates)
    oracle = max_min_rates(flows, dict(enumerate(caps.tolist())))
    np.testing.assert_allclose(rates, oracle, rtol=1e-9)


def _ack_case(seed: int, size_scale: float) -> tuple[Problem, Problem, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    n_links, n_flows = 300, 80
    data = problem_from_lists(_sprayed(rng, n_flows, n_links, 18), n_links)
    back = problem_from_lists(_sprayed(rng, n_flows, n_links, 18), n_links)
    ratio = rng.uniform(0.01, 0.05, size=n_flows) * size_scale  # ACK bytes per data byte
    acks = Problem(back.ptr, back.link, back.coef * ratio[back.entry_flow], back.weight, n_links)
    caps = rng.choice([10.0, 20.0, 40.0], size=n_links)
    start = np.bincount(back.link, weights=back.coef * ratio[back.entry_flow], minlength=n_links)
    return data, acks, caps, start


@pytest.mark.parametrize("size_scale", [1.0, 60.0])
@pytest.mark.parametrize("seed", range(3))
def test_compiled_ack_loop_is_the_python_loop(seed: int, size_scale: float) -> None:
    """The fixed point r = maxmin(C - A r) of fluid/acks.py, iterated in C, is the Python
    loop's: the same rates, data capacity and ACK load to the bit, and the same fallback when
    ACKs cost more than data (size_scale 60: a > 1)."""
    data, acks, caps, start = _ack_case(seed, size_scale)
    compiled = solve_with_acks(_maxmin.solve_compiled, data, acks, caps, start)

    def python_loop(p: Problem, c: np.ndarray) -> np.ndarray:  # not the kernel object: the Python loop
        return _maxmin.solve_compiled(p, c)

    reference = solve_with_acks(python_loop, data, acks, caps, start)
    assert compiled.fell_back == reference.fell_back == (size_scale > 1)
    for got, want in zip(compiled[:3], reference[:3]):
        assert np.array_equal(got.view(np.int64), want.view(np.int64))


def test_link_sums_are_bincounts_sums() -> None:
    """Per-link sums of coefficient x row value, added in entry order as np.bincount adds its
    weights: the same doubles (the ACK load feeds the next solve)."""
    rng = np.random.default_rng(7)
    problem = problem_from_lists(
        _sprayed(rng, 200, 90, 12), 90, coefs=[list(rng.random(12)) for _ in range(200)]
    )
    value = rng.random(200) * 1e3
    value[3] = np.inf
    finite = np.where(np.isfinite(value), value, 0.0)
    want = np.bincount(problem.link, weights=problem.coef * finite[problem.entry_flow], minlength=90)
    got = link_sums(problem.ptr, problem.link, problem.coef, value, 90, True)
    assert np.array_equal(got.view(np.int64), want.view(np.int64))
    rows = np.array([5, 2, 150, 7])
    sub = Problem(*restrict(problem.ptr, problem.link, problem.coef, problem.weight, rows), 90)
    ref = problem.restrict(rows)
    for a, b in ((sub.ptr, ref.ptr), (sub.link, ref.link), (sub.coef, ref.coef), (sub.weight, ref.weight)):
        assert np.array_equal(a, b)


@settings(max_examples=60, deadline=None)
@given(
    walks=st.lists(
        st.tuples(st.integers(0, 7), st.lists(st.integers(0, 11), max_size=6)), min_size=0, max_size=30
    ),
    shares=st.sampled_from([0.5, 1 / 3, 1 / 16, 0.1]),
)
def test_first_use_rows_is_unique_and_bincount(walks: list[tuple[int, list[int]]], shares: float) -> None:
    """The walks' entries merged into one per (flow, link) at its first use, shares summed in
    entry order: _traced_problem's np.unique / np.bincount / stable argsort, to the bit (links
    repeat within a flow: several walks cross them; flows may have no entries)."""
    n_flows, n_links = 8, 12
    walks = sorted(walks, key=lambda w: w[0])  # entries come ordered by flow
    entry_flow = np.array([f for f, links in walks for _ in links], dtype=np.int64)
    entry_link = np.array([lk for _, links in walks for lk in links], dtype=np.int64)
    share = np.array([shares * (1 + f % 3) for f, links in walks for _ in links])
    ptr, link, coef = first_use_rows(entry_flow, entry_link, share, n_flows, n_links)
    _, first, inverse = np.unique(entry_flow * n_links + entry_link, return_index=True, return_inverse=True)
    want_coef = np.bincount(inverse, weights=share)
    order = np.argsort(first, kind="stable")
    want_ptr = np.zeros(n_flows + 1, dtype=np.int64)
    np.cumsum(np.bincount(entry_flow[first[order]], minlength=n_flows), out=want_ptr[1:])
    assert np.array_equal(ptr, want_ptr) and np.array_equal(link, entry_link[first[order]])
    assert coef.tobytes() == want_coef[order].tobytes()


def test_first_use_rows_refuses_entries_out_of_order() -> None:
    one = np.array([0.5, 0.5])
    with pytest.raises(ValueError, match="out of order or range"):
        first_use_rows(np.array([1, 0]), np.array([0, 1]), one, 2, 2)
    with pytest.raises(ValueError, match="out of order or range"):
        first_use_rows(np.array([0, 0]), np.array([0, 5]), one, 2, 2)


@pytest.mark.parametrize("seed", range(20))
def test_compiled_certificate_is_the_numpy_certificate(seed: int) -> None:
    """The compiled certificate (every flow active) accepts and rejects what the numpy one does
    (the active-mask path), naming the same link or flow: the max-min rates pass, and perturbed
    rates fail for want of a bottleneck or by overfilling a link."""
    rng = np.random.default_rng(seed)
    problem = problem_from_lists(_sprayed(rng, 40, 30, 4), 30)
    caps = rng.choice([1.0, 2.0, 4.0], size=30)
    rates = _maxmin.solve_compiled(problem, caps)
    trials = [rates, rates * (1 + rng.choice([-1e-3, 0.0, 1e-3], size=40)), rates * 0.5, rates * 2]
    for r in trials:
        outcomes = []
        for active in (None, np.ones(40, dtype=bool)):
            try:
                certify(problem, caps, r, active)
                outcomes.append("ok")
            except CertificateError as exc:
                outcomes.append(str(exc))
        assert outcomes[0] == outcomes[1]


@pytest.mark.parametrize("size_scale", [1.0, 60.0])
@pytest.mark.parametrize("seed", range(4))
def test_rows_read_in_place_are_the_restricted_problem_to_the_bit(seed: int, size_scale: float) -> None:
    """The engine solves, sums and certifies its table's moving rows in place (``rows``)
    instead of copying them out at every event: the ACK loop's rates, data capacity and ACK
    load, its fallback, the starting ACK load and the certificate's verdict (naming the same
    flow) are those of the restricted problem, to the bit. Rows in any order, some empty."""
    data, acks, caps, _ = _ack_case(seed, size_scale)
    rng = np.random.default_rng(seed)
    weight = rng.choice([1.0, 2.0, 0.5], size=data.n_flows)  # a row's weight is the row's, not the i-th
    data = Problem(data.ptr, data.link, data.coef, weight, data.n_links)
    rows = rng.permutation(data.n_flows)[: int(rng.integers(1, data.n_flows))]
    empty = Problem(
        np.zeros(data.n_flows + 1, dtype=np.int64), data.link[:0], data.coef[:0], data.weight, 300
    )
    for table, ack_table in ((data, acks), (empty, empty)):
        sub, ack_sub = table.restrict(rows), ack_table.restrict(rows)
        value = rng.random(len(rows)) * 1e3
        start = link_sums(ack_table.ptr, ack_table.link, ack_table.coef, value, 300, False, rows)
        want_start = link_sums(ack_sub.ptr, ack_sub.link, ack_sub.coef, value, 300)
        assert start.tobytes() == want_start.tobytes()
        in_place = solve_with_acks(_maxmin.solve_compiled, table, ack_table, caps, start, rows=rows)
        copied = solve_with_acks(_maxmin.solve_compiled, sub, ack_sub, caps, start)
        assert in_place.fell_back == copied.fell_back == (size_scale > 1 and table is data)
        for got, want in zip(in_place[:3], copied[:3]):
            assert got.tobytes() == want.tobytes()
        solved_on = in_place.problem if in_place.rows is None else in_place.problem.restrict(in_place.rows)
        assert np.array_equal(solved_on.link, copied.problem.link)
        for r in (copied.rates, copied.rates * 2, copied.rates * 0.5):
            verdicts = []
            for problem, in_rows in ((table, rows), (sub, None)):
                try:
                    certify(problem, copied.capacity, r, rows=in_rows)
                    verdicts.append("ok")
                except CertificateError as exc:
                    verdicts.append(str(exc))
            assert verdicts[0] == verdicts[1]
    with pytest.raises(IndexError):
        link_sums(data.ptr, data.link, data.coef, np.ones(1), 300, False, np.array([data.n_flows]))


def test_kept_scratch_block_gives_the_fresh_solve_s_bits() -> None:
    """The kernel keeps its scratch block from one solve to the next, its tree's padding played
    for the last solve's link count (fluid/_maxmin.pyx). A solve in a block kept from a larger
    problem (other links: the padding is played again) and from the same problem (the padding
    kept) gives the same rates, to the bit, as in a block of its own, on both the plain and the
    pooled (sprayed) paths and through the ACK loop."""
    rng = np.random.default_rng(11)
    small = problem_from_lists(_sprayed(rng, 60, 70, 3), 70)  # few entries per flow: no pool
    sprayed = problem_from_lists(_sprayed(rng, 60, 70, 20), 70)  # the pool
    large = problem_from_lists(_sprayed(rng, 900, 2000, 20), 2000)
    caps = rng.choice([1.0, 2.0, 3.0], size=70)
    data, acks, ack_caps, start = _ack_case(3, 1.0)

    def bits() -> list[np.ndarray]:
        out = [_maxmin.solve_compiled(p, caps) for p in (small, sprayed)]
        out += list(_maxmin.solve_acks_compiled(data, acks, ack_caps, start, 1e-9, 50, 4)[:3])
        return [a.view(np.int64).copy() for a in out]

    first = bits()  # each in a block of its own or one kept from the solve before
    _maxmin.solve_compiled(large, rng.choice([1.0, 2.0], size=2000))  # a larger block is kept
    after_large = bits()
    again = bits()
    for a, b, c in zip(first, after_large, again):
        assert np.array_equal(a, b) and np.array_equal(a, c)


def _bits(arrays: list[np.ndarray]) -> list[list[int]]:
    return [np.asarray(a, dtype=float).view(np.int64).tolist() for a in arrays]


@settings(max_examples=60, deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1),
    slack=st.sampled_from([1.0, 3.0, 30.0]),
    odd=st.booleans(),
    per_flow=st.sampled_from([3, 18]),
)
def test_links_that_cannot_saturate_are_left_out_without_changing_a_bit(
    seed: int, slack: float, odd: bool, per_flow: int
) -> None:
    """A solve leaves out the entries on links that no rate the flows can reach fills (module
    doc of fluid/_maxmin.pyx): the rates are the full solve's to the bit, with and without the
    ACK loop, whatever the capacities (some far above what their flows can send, ``slack``;
    ``odd``: an infinite, a zero and a nan capacity, a zero coefficient, weights other than 1),
    and a starting ACK load above anything the flows can send; for sprayed flows (18 links:
    pruned once per ACK loop) and flows on few links (3: pruned before each solve)."""
    rng = np.random.default_rng(seed)
    n_links, n_flows = 160, 50
    flows = _sprayed(rng, n_flows, n_links, per_flow)
    coefs = [list(rng.choice([1 / 16, 2 / 16, 3 / 16, 0.5, 1.0], size=per_flow)) for _ in range(n_flows)]
    weights = list(rng.choice([0.5, 1.0, 2.0], size=n_flows)) if odd else None
    if odd:
        coefs[0][1] = 0.0
    problem = problem_from_lists(flows, n_links, coefs, weights)
    caps = rng.choice([1.0, 2.0, 4.0], size=n_links) * rng.choice([1.0, slack], size=n_links)
    if odd:
        caps[[5, 6, 7]] = [np.inf, 0.0, np.nan]
    got = _maxmin.solve_compiled(problem, caps)
    want = _maxmin.solve_compiled(problem, caps, prune=False)
    assert _bits([got]) == _bits([want])
    back = problem_from_lists(_sprayed(rng, n_flows, n_links, per_flow), n_links)
    ratio = rng.uniform(0.01, 0.05, size=n_flows)
    acks = Problem(back.ptr, back.link, back.coef * ratio[back.entry_flow], back.weight, n_links)
    # a starting load far above anything these flows' ACKs put on half the links (the rates of
    # the solve before a capacity fell): its first solve has a tenth of their capacity for data
    start = rng.choice([0.0, 0.9], size=n_links) * np.where(np.isfinite(caps), caps, 1.0)
    got_acks = _maxmin.solve_acks_compiled(problem, acks, caps, start, 1e-9, 50, 4)
    want_acks = _maxmin.solve_acks_compiled(problem, acks, caps, start, 1e-9, 50, 4, prune=False)
    assert got_acks[3] == want_acks[3]
    assert _bits(list(got_acks[:3])) == _bits(list(want_acks[:3]))


def test_pruning_leaves_out_the_links_that_cannot_saturate() -> None:
    """Flows on 16+ links (sprayed) over capacities with room to spare: most entries are left
    out (so the test above compares solves that differ), and none where every link is the
    flows' only one (each flow's tightest link always stays)."""
    rng = np.random.default_rng(5)
    problem = problem_from_lists(_sprayed(rng, 50, 160, 18), 160)
    roomy = rng.choice([1.0, 30.0], size=160)
    assert _maxmin.entries_kept(problem, roomy) < 0.8 * len(problem.link)
    assert _maxmin.entries_kept(problem, np.ones(160)) == len(problem.link)  # every link can fill
    single = problem_from_lists([[i] for i in range(20)], 20)
    assert _maxmin.entries_kept(single, np.full(20, 5.0)) == 20


def test_a_link_the_acks_can_fill_is_kept() -> None:
    """Two flows of 0.97 (their own links) fill a shared link of 1.0 to 0.97: it cannot
    saturate by data alone, but their ACKs (5% of their rate each, on the same link) leave 0.903
    of it to data in the ACK loop's second solve, where it becomes their bottleneck. So it is
    kept when the ACKs are known, and the loop's rates are the unpruned loop's, at the fixed
    point r + 0.1 r = 1 (fluid/acks.py): 1 / 1.1. (Each flow
    also crosses 16 links of 100, which makes it a sprayed flow, the case pruning is for.)"""
    roomy = [list(range(3 + 16 * i, 19 + 16 * i)) for i in range(2)]
    problem = problem_from_lists(
        [[0, 1, *roomy[0]], [0, 2, *roomy[1]]], 35, coefs=[[0.5] + [1.0] * 17, [0.5] + [1.0] * 17]
    )
    acks = problem_from_lists([[0], [0]], 35, coefs=[[0.05], [0.05]])
    caps = np.array([1.0, 0.97, 0.97] + [100.0] * 32)
    start = np.zeros(35)
    assert _maxmin.entries_kept(problem, caps) == 2  # by data alone: the flows' own links
    assert _maxmin.entries_kept(problem, caps, acks, start) == 4  # and the shared one
    got = _maxmin.solve_acks_compiled(problem, acks, caps, start, 1e-12, 50, 4)
    want = _maxmin.solve_acks_compiled(problem, acks, caps, start, 1e-12, 50, 4, prune=False)
    assert got[3] and _bits(list(got[:3])) == _bits(list(want[:3]))
    np.testing.assert_allclose(got[0], [1 / 1.1, 1 / 1.1], rtol=1e-9)
