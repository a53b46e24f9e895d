"""The fluid engine's max-min solver against the progressive-filling oracle
(``spraylab.metrics.maxmin``) and the max-min certificate (Bertsekas & Gallager, Data Networks,
section 6.5.2: a feasible allocation is max-min fair iff every flow has a bottleneck link)."""

from __future__ import annotations

import sys

import numpy as np
import pytest
from conftest import FLUID_KERNELS as KERNELS
from hypothesis import given, settings
from hypothesis import strategies as st

from spraylab.fluid import _maxmin
from spraylab.fluid import solver as solver_module
from spraylab.fluid.solver import (
    CertificateError,
    certify,
    pick_solver,
    problem_from_lists,
    solve,
    solver_named,
)
from spraylab.metrics.maxmin import max_min_rates

CAPACITIES = st.sampled_from([0.5, 1.0, 2.0, 3.0, 7.0, 10.0, 40.0])


@st.composite
def instances(draw: st.DrawFn) -> tuple[list[list[int]], list[float]]:
    n_links = draw(st.integers(1, 7))
    flows = draw(
        st.lists(
            st.lists(st.integers(0, n_links - 1), min_size=1, max_size=n_links, unique=True),
            min_size=1,
            max_size=14,
        )
    )
    caps = draw(st.lists(CAPACITIES, min_size=n_links, max_size=n_links))
    return flows, caps


@pytest.mark.parametrize("kernel", KERNELS)
@settings(max_examples=100, deadline=None)
@given(instances())
def test_solver_equals_progressive_filling_oracle(
    kernel: str, instance: tuple[list[list[int]], list[float]]
) -> None:
    flows, caps = instance
    problem = problem_from_lists(flows, len(caps))
    rates = solver_named(kernel)(problem, np.array(caps))
    certify(problem, np.array(caps), rates)
    oracle = max_min_rates(flows, dict(enumerate(caps)))
    np.testing.assert_allclose(rates, oracle, rtol=1e-9)


@pytest.mark.parametrize("kernel", KERNELS)
@settings(max_examples=50, deadline=None)
@given(instances(), st.lists(st.integers(1, 4), min_size=14, max_size=14))
def test_classes_equal_their_members(
    kernel: str, instance: tuple[list[list[int]], list[float]], multiplicity: list[int]
) -> None:
    """A class of m identical flows (coefficient m on each of its links) gets the rate each of
    m separate copies gets from the oracle: aggregation is exact."""
    flows, caps = instance
    m = multiplicity[: len(flows)]
    problem = problem_from_lists(flows, len(caps), coefs=[[float(k)] * len(f) for f, k in zip(flows, m)])
    rates = solver_named(kernel)(problem, np.array(caps))
    certify(problem, np.array(caps), rates)
    copies = [f for f, k in zip(flows, m) for _ in range(k)]
    oracle = max_min_rates(copies, dict(enumerate(caps)))
    first = np.cumsum([0, *m[:-1]])
    np.testing.assert_allclose(rates, [oracle[i] for i in first], rtol=1e-9)


@pytest.mark.parametrize("kernel", KERNELS)
@settings(max_examples=50, deadline=None)
@given(instances(), st.lists(st.integers(1, 4), min_size=14, max_size=14))
def test_weights_equal_unit_subflows(
    kernel: str, instance: tuple[list[list[int]], list[float]], weight: list[int]
) -> None:
    """Weighted max-min with integer weight w is max-min over w unit sub-flows on the same
    links: the flow's rate is the sum of theirs."""
    flows, caps = instance
    w = weight[: len(flows)]
    problem = problem_from_lists(flows, len(caps), weights=[float(k) for k in w])
    rates = solver_named(kernel)(problem, np.array(caps))
    certify(problem, np.array(caps), rates)
    copies = [f for f, k in zip(flows, w) for _ in range(k)]
    oracle = max_min_rates(copies, dict(enumerate(caps)))
    first = np.cumsum([0, *w[:-1]])
    np.testing.assert_allclose(rates, [oracle[i] * k for i, k in zip(first, w)], rtol=1e-9)


@pytest.mark.parametrize("kernel", KERNELS)
@settings(max_examples=50, deadline=None)
@given(
    instances(),
    st.lists(
        st.lists(st.sampled_from([0.25, 0.5, 1.0, 2.0]), min_size=7, max_size=7), min_size=14, max_size=14
    ),
)
def test_split_flows_pass_the_certificate(
    kernel: str, instance: tuple[list[list[int]], list[float]], coefs: list[list[float]]
) -> None:
    """Fractional coefficients (a sprayed flow's share of each link) have no oracle; the
    certificate alone proves the allocation max-min fair, since it holds for one allocation only."""
    flows, caps = instance
    problem = problem_from_lists(flows, len(caps), coefs=[c[: len(f)] for f, c in zip(flows, coefs)])
    rates = solver_named(kernel)(problem, np.array(caps))
    certify(problem, np.array(caps), rates)


def test_certificate_rejects_what_is_not_max_min() -> None:
    # two flows share link 0 (capacity 2); flow 1 also crosses link 1 (capacity 10)
    problem = problem_from_lists([[0], [0, 1]], 2)
    caps = np.array([2.0, 10.0])
    certify(problem, caps, np.array([1.0, 1.0]))
    with pytest.raises(CertificateError, match="no bottleneck"):
        certify(problem, caps, np.array([0.5, 1.0]))  # feasible but flow 0 could grow
    with pytest.raises(CertificateError, match="no bottleneck"):
        certify(problem, caps, np.array([1.5, 0.5]))  # saturated, but flow 1 is not the largest
    with pytest.raises(CertificateError, match="carries"):
        certify(problem, caps, np.array([1.5, 1.0]))  # over capacity


def test_inactive_flows_and_dead_links() -> None:
    """Inactive flows get 0 and take nothing; an infinite-capacity link never bottlenecks."""
    problem = problem_from_lists([[0], [0, 1], [1]], 2)
    caps = np.array([2.0, np.inf])
    rates = solve(problem, caps, np.array([True, True, False]))
    np.testing.assert_allclose(rates, [1.0, 1.0, 0.0])
    certify(problem, caps, rates, np.array([True, True, False]))


@pytest.mark.parametrize("kernel", KERNELS)
def test_a_restricted_problem_solves_as_the_active_mask(kernel: str) -> None:
    """The fluid engine solves only the active flows' rows (Problem.restrict): the rates are
    the masked solve's, the inactive flows taking nothing."""
    problem = problem_from_lists([[0], [0, 1], [1, 2], [2]], 3, coefs=[[1.0], [0.5, 0.5], [1.0, 2.0], [1.0]])
    caps = np.array([2.0, 3.0, 4.0])
    active = np.array([True, False, True, True])
    rows = np.flatnonzero(active)
    sub = problem.restrict(rows)
    rates = solver_named(kernel)(sub, caps)
    certify(sub, caps, rates)
    np.testing.assert_allclose(rates, solve(problem, caps, active)[rows], rtol=1e-12)


def test_auto_takes_the_compiled_kernel_where_it_is_faster() -> None:
    # with ACKs a run re-solves at nearly every completion: the compiled kernel from any size
    assert pick_solver("auto", solver_module.COMPILED_MIN_FLOWS_WITH_ACKS, acks=True) == "compiled"
    assert pick_solver("auto", 1, acks=True) == "compiled"
    # without them the numpy kernel's warm re-solves keep the small runs
    assert pick_solver("auto", solver_module.COMPILED_MIN_FLOWS - 1) == "numpy"
    assert pick_solver("auto", solver_module.COMPILED_MIN_FLOWS) == "compiled"
    assert pick_solver("numpy", 10**6) == "numpy"
    assert pick_solver("compiled", 1) == "compiled"


def test_numba_is_an_old_name_of_the_compiled_kernel() -> None:
    """Scenario files written when numba compiled the kernel still validate and run it, with
    numba not imported."""
    from spraylab.model.scenario import validate

    assert pick_solver("numba", 10) == "compiled"
    assert solver_named("numba") is _maxmin.solve_compiled
    scenario = validate(
        {
            "workload": {"kind": "permutation", "size": "4KB"},
            "run": {"engine": "fluid", "fluid_solver": "numba"},
        }
    )
    assert scenario.run.fluid_solver == "numba"  # kept as written: the same store key
    assert "numba" not in sys.modules
