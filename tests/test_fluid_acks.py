"""ACK frames in the fluid engine (fluid/acks.py): a strict-priority reservation, not a max-min
share. Theory: a control frame leaves every port ahead of queued data (the packet engine's
``Port.send_control``), so a flow's ACKs take ``a x r`` of each link on their route and are never
held back; data flows share what is left max-min fairly."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import FLUID_KERNELS

from spraylab.fluid.acks import ACK_RTOL, ack_bytes_per_byte, packets_per_ack, solve_with_acks
from spraylab.fluid.solver import certify, problem_from_lists, solver_named
from spraylab.net.framing import ACK_WIRE_BYTES, data_wire_bytes


@pytest.mark.parametrize("kernel", FLUID_KERNELS)
def test_a_flow_whose_acks_cross_a_saturated_link_is_not_bottlenecked_there(kernel: str) -> None:
    """Link 0 carries the data of flows A and B and the ACKs of flow C, whose data has link 1
    to itself. C runs at link 1's capacity; A and B share what C's ACKs leave of link 0. (Had
    the ACK entries been max-min entries, C would be capped at link 0's level, 1 / (2 + a).)"""
    a = 0.05
    data = problem_from_lists([[0], [0], [1]], 3)
    acks = problem_from_lists([[2], [2], [0]], 3, coefs=[[a], [a], [a]])
    caps = np.array([1.0, 1.0, np.inf])
    rates, data_cap, load = solve_with_acks(solver_named(kernel), data, acks, caps, np.zeros(3))[:3]
    np.testing.assert_allclose(rates, [(1 - a) / 2, (1 - a) / 2, 1.0], rtol=1e-9)
    np.testing.assert_allclose(load[:2], [a * 1.0, 0.0], rtol=1e-9)
    certify(data, data_cap, rates)


@pytest.mark.parametrize("kernel", FLUID_KERNELS)
def test_the_reservation_is_the_fixed_point_of_the_acks_it_implies(kernel: str) -> None:
    """Two hosts exchanging one flow each (a permutation of two): each host link carries one
    flow's data and the other's ACKs, so r (1 + a) = C, whatever load the iteration starts from."""
    a = ACK_WIRE_BYTES / data_wire_bytes(4096)
    data = problem_from_lists([[0], [1]], 2)  # link 0: host 0's uplink, link 1: host 1's
    acks = problem_from_lists([[1], [0]], 2, coefs=[[a], [a]])
    caps = np.array([10.0, 10.0])
    for start in (np.zeros(2), np.full(2, 5.0)):
        rates, _, load = solve_with_acks(solver_named(kernel), data, acks, caps, start)[:3]
        # converged: the last step moved the ACK load by at most ACK_RTOL x capacity, and the
        # step contracts by a, so the rates are that close to the fixed point
        np.testing.assert_allclose(rates, 10.0 / (1 + a), rtol=0, atol=ACK_RTOL * 10.0)
        np.testing.assert_allclose(load, a * rates[::-1], rtol=0, atol=ACK_RTOL * 10.0)


def test_coalescing_thresholds_set_the_ack_count() -> None:
    """The receiver ACKs at whichever threshold comes first (transport.receiver)."""
    assert packets_per_ack(1, 0, 4096) == 1
    assert packets_per_ack(4, 0, 4096) == 4
    assert packets_per_ack(0, 16384, 4096) == 4  # htsim's one ACK per 16 KB
    assert packets_per_ack(8, 16384, 4096) == 4
    assert packets_per_ack(0, 10000, 4096) == 3  # the packet that reaches 10,000 bytes: the third
    assert packets_per_ack(0, 0, 4096) == 1  # time-coalesced alone: charged per packet (upper bound)
    # a 10-packet message at 4 per ACK: 3 ACKs (the last one completes the message)
    volume = 10 * data_wire_bytes(4096)
    assert ack_bytes_per_byte(10, volume, 4) == pytest.approx(3 * ACK_WIRE_BYTES / volume)


@pytest.mark.parametrize("kernel", FLUID_KERNELS)
def test_acks_larger_than_their_data_fall_back_to_the_shared_allocation(kernel: str) -> None:
    """1-byte messages: one ACK frame is more bytes than the data frame (a > 1), the reservation
    step expands instead of contracting. Two hosts exchanging such messages: the fallback is the
    max-min allocation with the ACKs as entries, r + a r = C on both host links: C / (1 + a)
    each, and data plus ACK bytes within every capacity."""
    a = ACK_WIRE_BYTES / data_wire_bytes(1)
    assert a > 1
    data = problem_from_lists([[0], [1]], 2)
    acks = problem_from_lists([[1], [0]], 2, coefs=[[a], [a]])
    caps = np.array([10.0, 10.0])
    for start in (np.zeros(2), np.array([0.0, 9.0])):
        out = solve_with_acks(solver_named(kernel), data, acks, caps, start)
        assert out.fell_back
        np.testing.assert_allclose(out.rates, 10.0 / (1 + a), rtol=1e-9)
        np.testing.assert_allclose(out.rates + out.ack_load, caps, rtol=1e-9)  # data + ACKs = C
        certify(out.problem, out.capacity, out.rates)


def test_a_link_in_both_a_flows_data_and_ack_rows_sums_its_coefficients() -> None:
    from spraylab.fluid.acks import shared_problem

    data = problem_from_lists([[0, 2], [1]], 3)
    acks = problem_from_lists([[2], [0]], 3, coefs=[[0.5], [0.25]])
    shared = shared_problem(data, acks)
    assert shared.ptr.tolist() == [0, 2, 4]
    assert shared.link.tolist() == [0, 2, 0, 1]
    assert shared.coef.tolist() == [1.0, 1.5, 0.25, 1.0]


def test_one_byte_all_to_all_runs_to_completion_under_the_fluid_engine() -> None:
    """The issue's crash (``ACK reservation did not converge``): every 1-byte message of an
    all-to-all finishes, no earlier than its FCT bound, with the fallback counted."""
    from spraylab import run
    from spraylab.model.scenario import validate

    scenario = validate(
        {
            "topology": {"kind": "leaf_spine", "leaves": 2, "spines": 2, "hosts_per_leaf": 2},
            "workload": {"kind": "all_to_all", "size": "1B"},
            "run": {"engine": "fluid", "progress": False, "fluid_solver": "numpy"},
        }
    )
    result = run(scenario)
    assert result.summary["stop_reason"] == "done"
    assert result.flows["completed"].all() and len(result.flows) == 12
    assert (result.flows["fct_ps"] >= result.flows["fct_bound_ps"]).all()
    assert result.summary["fluid.ack_fallbacks"] > 0
