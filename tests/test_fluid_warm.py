"""Warm re-solves (fluid/warm.py) and the vectorised route walks the fluid engine builds its
problems from (FluidFabric.hash_walks).

Theory: in progressive filling a link that loses flows or gains capacity saturates no earlier
than before, so removing flows changes no rate below the lowest old saturation level of a link
they crossed (the fillings agree up to it). A warm re-solve must therefore give the cold
kernel's max-min allocation (unique, certified), and solve nothing when the removed flows were
the fastest ones.
"""

from __future__ import annotations

import dataclasses
import random

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from test_fluid_solver import instances

from spraylab.fluid.engine import prepare, simulate
from spraylab.fluid.routing import packet_hash_array
from spraylab.fluid.solver import certify, problem_from_lists, solve
from spraylab.fluid.warm import WarmSolver
from spraylab.model.scenario import validate
from spraylab.net.routes import packet_hash


@st.composite
def changes(draw: st.DrawFn) -> tuple[list[list[int]], list[float], list[bool], list[float]]:
    """A problem, which of its flows stay, and a capacity increase per link."""
    flows, caps = draw(instances())
    stay = draw(st.lists(st.booleans(), min_size=len(flows), max_size=len(flows)))
    more = draw(st.lists(st.sampled_from([0.0, 0.0, 0.5, 2.0]), min_size=len(caps), max_size=len(caps)))
    return flows, caps, stay, more


@settings(max_examples=200, deadline=None)
@given(changes())
def test_warm_resolve_is_the_cold_solve(
    instance: tuple[list[list[int]], list[float], list[bool], list[float]],
) -> None:
    flows, caps, stay, more = instance
    n_links = len(caps)
    whole = problem_from_lists(flows, n_links)
    warm = WarmSolver(solve)
    rows = np.arange(len(flows))
    warm(whole, np.array(caps), rows)
    kept = rows[np.array(stay)]
    after = whole.restrict(kept)
    cap = np.array(caps) + np.array(more)
    rates = warm(after, cap, kept)
    certify(after, cap, rates)
    np.testing.assert_allclose(rates, solve(after, cap), rtol=1e-9)


def test_the_fastest_flows_leaving_moves_no_one() -> None:
    """Link 0 (capacity 4) carries flow 0 alone; flows 1 and 2 share link 1 (capacity 1).
    Flow 0 (rate 4) leaving touches only link 0, saturated at level 4 > 0.5: no solve."""
    whole = problem_from_lists([[0], [1], [1]], 2)
    warm = WarmSolver(solve)
    cap = np.array([4.0, 1.0])
    assert list(warm(whole, cap, np.arange(3))) == [4.0, 0.5, 0.5]
    solved = warm.flows_solved
    rates = warm(whole.restrict(np.array([1, 2])), cap, np.array([1, 2]))
    assert list(rates) == [0.5, 0.5]
    assert warm.flows_solved == solved


def test_a_freed_bottleneck_solves_the_flows_above_it() -> None:
    """Flows 0 and 1 share link 0 (capacity 1, level 0.5); flow 1 and flow 2 share link 1
    (capacity 10), where flow 2 takes the rest, 9.5. Flow 0 leaving frees link 0: flow 1 rises
    to 1 and flow 2 falls to 9, the max-min allocation of what is left."""
    whole = problem_from_lists([[0], [0, 1], [1]], 2)
    warm = WarmSolver(solve)
    cap = np.array([1.0, 10.0])
    np.testing.assert_allclose(warm(whole, cap, np.arange(3)), [0.5, 0.5, 9.5])
    np.testing.assert_allclose(warm(whole.restrict(np.array([1, 2])), cap, np.array([1, 2])), [1.0, 9.0])


def _scenario(scheme: str, **run_: object) -> dict:
    return {
        "topology": {"kind": "fat_tree", "k": 4, "rate": "100Gbps"},
        "lb": {"scheme": scheme},
        "transport": {"recovery": "ideal", "cc": "none"},
        "workload": {"kind": "permutation", "size": "256KB"},
        "run": {"seed": 5, "engine": "fluid", "progress": False, **run_},
    }


@pytest.mark.parametrize("scheme", ["ecmp", "spray_rr", "rps"])
@pytest.mark.parametrize("acks", [True, False])
def test_warm_runs_finish_every_flow_when_cold_runs_do(scheme: str, acks: bool) -> None:
    """A whole run with warm re-solves gives every flow the cold run's finish time (the numpy
    kernel, where the engine uses them)."""
    sc = validate(_scenario(scheme, fluid_acks=acks, fluid_quantum=0))
    finish = {}
    for warm in (True, False):
        run = dataclasses.replace(prepare(sc), solver="numpy", warm=warm)
        finish[warm] = simulate(run, sc.run.time_limit).finish_ps
    np.testing.assert_allclose(finish[True], finish[False], rtol=1e-12)


@pytest.mark.parametrize(
    "topology",
    [
        {"kind": "fat_tree", "k": 8},
        {"kind": "leaf_spine", "leaves": 4, "spines": 4, "hosts_per_leaf": 4},
        {"kind": "rail", "servers": 4, "gpus_per_server": 8, "spines": 4},
    ],
)
def test_vectorised_walks_are_the_scalar_walks(topology: dict) -> None:
    """hash_walks traces many header hashes hop by hop at once: each walk is hash_route's
    (the packet engine's trace_route, tested in test_fluid_engine), and so is the
    representative route (no hash)."""
    sc = validate(
        {
            "topology": topology,
            "workload": {"kind": "permutation", "size": "64KB"},
            "run": {"engine": "fluid"},
        }
    )
    ff = prepare(sc).fabric
    rng = random.Random(7)
    hosts = ff.fabric.n_hosts
    pairs = [(a, b) for a, b in ((rng.randrange(hosts), rng.randrange(hosts)) for _ in range(600)) if a != b]
    src = np.array([a for a, _ in pairs])
    dst = np.array([b for _, b in pairs])
    flow_id = np.arange(len(pairs))
    entropy = np.array([rng.randrange(1 << 16) for _ in pairs])
    links, length = ff.hash_walks(src, dst, packet_hash_array(flow_id, entropy))
    first, first_length = ff.hash_walks(src, dst, None)
    for w, (a, b) in enumerate(pairs):
        assert list(links[w, : length[w]]) == ff.hash_route(
            a, b, packet_hash(int(flow_id[w]), int(entropy[w]))
        )
        assert list(first[w, : first_length[w]]) == ff.hash_route(a, b, None)


def test_walks_through_a_cut_pod_are_unreachable_as_in_the_scalar_walk() -> None:
    """With every link of a ToR routed down, walks to its hosts end without a route (length 0),
    as hash_route returns none."""
    sc = validate(_scenario("ecmp"))
    ff = prepare(sc).fabric
    tor = ff.tor_of_host[0]
    ff.table.remove(
        lid
        for lid in range(ff.n_links)
        if tor in (ff.link_src[lid], ff.link_dst[lid])
        and not ff.is_host(int(ff.link_dst[lid]))
        and not ff.is_host(int(ff.link_src[lid]))
    )
    src = np.array([5, 6, 7])
    dst = np.array([0, 0, 9])
    links, length = ff.hash_walks(src, dst, packet_hash_array(np.arange(3), np.array([1, 2, 3])))
    for w in range(3):
        want = ff.hash_route(int(src[w]), int(dst[w]), packet_hash(w, w + 1))
        assert list(links[w, : length[w]]) == want
    assert length[0] == length[1] == 0 and length[2] > 0
