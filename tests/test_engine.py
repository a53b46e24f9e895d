"""The event loop: ordering, resumption, budgets and early stops."""

from __future__ import annotations

import random

from hypothesis import given, settings
from hypothesis import strategies as st

from spraylab import run
from spraylab.engine.simulator import BUCKET_SHIFT, Simulator, StopSimulation


@settings(max_examples=50, deadline=None)
@given(st.lists(st.integers(min_value=0, max_value=1 << 40), min_size=1, max_size=300))
def test_events_run_in_time_order_and_fifo_on_ties(times: list[int]) -> None:
    sim = Simulator()
    seen: list[tuple[int, int]] = []
    for i, t in enumerate(times):
        sim.at(t, lambda i, t=t: seen.append((t, i)), i)
    sim.run()
    assert seen == sorted(seen)  # by time, then by scheduling order
    assert sim.events == len(times)


def test_events_scheduled_from_callbacks_into_the_current_bucket_keep_order() -> None:
    sim = Simulator()
    order: list[int] = []
    step = 1 << (BUCKET_SHIFT - 4)  # well inside one bucket

    def chain(k: int) -> None:
        order.append(k)
        if k < 50:
            sim.after(step if k % 2 else 0, chain, k + 1)

    sim.at(5, chain, 0)
    sim.at(5 + 30 * step, lambda _: order.append(-1))
    sim.run()
    assert order.index(-1) > order.index(30)  # time order across interleaved schedules
    assert [k for k in order if k >= 0] == list(range(51))


def test_run_until_is_resumable_and_time_advances_to_the_limit() -> None:
    sim = Simulator()
    hits: list[int] = []
    for t in (10, 20, 30, 1_000_000):
        sim.at(t, hits.append, t)
    assert sim.run(until_ps=25) == "time_limit"
    assert hits == [10, 20] and sim.now == 25
    assert sim.run(until_ps=10_000) == "time_limit"
    assert hits == [10, 20, 30]
    assert sim.run() == "idle"
    assert hits == [10, 20, 30, 1_000_000]


def test_events_scheduled_between_runs_run_before_later_pending_ones() -> None:
    """A run stopped at its limit has already looked at the next pending event (in a later
    time bucket); an event scheduled before resuming, earlier than that one, runs first."""
    sim = Simulator()
    hits: list[int] = []
    sim.at(1_000_000_000, hits.append, 2)
    assert sim.run(until_ps=1_000_000) == "time_limit"
    sim.at(2_000_000, hits.append, 1)
    assert sim.run(until_ps=5_000_000) == "time_limit"
    assert hits == [1] and sim.now == 5_000_000
    sim.run()
    assert hits == [1, 2]


def test_event_budget_and_stop_are_reported() -> None:
    sim = Simulator()

    def tick(_: object) -> None:
        sim.after(1, tick)

    sim.at(0, tick)
    assert sim.run(max_events=1 << 17) == "event_budget"
    assert sim.events == 1 << 17

    def stop(_: object) -> None:
        raise StopSimulation("done")

    sim.after(3, stop)
    assert sim.run() == "done"


def test_scheduling_in_the_past_is_refused() -> None:
    sim = Simulator()
    sim.at(100, lambda _: None)
    sim.run()
    try:
        sim.at(50, lambda _: None)
    except ValueError as exc:
        assert "before now" in str(exc)
    else:
        raise AssertionError("scheduling in the past must fail")


def test_early_stop_is_reported_in_the_result() -> None:
    """A run cut short by its event budget says so, with what completed."""
    result = run(
        {
            "topology": {"leaves": 2, "spines": 2, "hosts_per_leaf": 2},
            "workload": {"kind": "permutation", "size": "64MB"},
            "run": {"max_events": 1 << 16},  # checked every 2^16 events
        }
    )
    assert result.summary["stop_reason"] == "event_budget"
    assert result.summary["completed"] is False
    assert result.summary["flows_completed"] < result.summary["flows"]


def test_derived_rngs_are_reproducible_and_independent() -> None:
    a, b = Simulator(7), Simulator(7)
    assert [a.derive_rng(1).random() for _ in range(3)] == [b.derive_rng(1).random() for _ in range(3)]
    assert Simulator(7).derive_rng(1).random() != Simulator(8).derive_rng(1).random()
    assert isinstance(a.rng, random.Random)
