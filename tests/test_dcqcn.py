"""DCQCN's reaction point against its specification (ConnectX timing, ``transport/cc/dcqcn.py``):
alpha per 1 us period, at most one cut per 4 us, the cut ``rc * (1 - alpha / 2)``, the target
kept through one congestion episode, fast recovery on the 300 us timer and the byte counter."""

from __future__ import annotations

import pytest

from spraylab.engine.simulator import Simulator
from spraylab.transport.cc.dcqcn import Dcqcn
from spraylab.transport.params import DcqcnParams, TransportParams

G = 1_000_000_000
US = 1_000_000
LINE = 400 * G
P = DcqcnParams()


class FakeQp:
    """What the reaction point uses of a queue pair: the clock and the rate it sets."""

    def __init__(self) -> None:
        self.sim = Simulator()
        self.sender_done = False
        self.rates: list[tuple[int, float]] = []

    def set_rate(self, rate_bps: float) -> None:
        self.rates.append((self.sim.now, rate_bps))


def cnp_at(qp: FakeQp, cc: Dcqcn, *times_us: float) -> None:
    for t in times_us:
        qp.sim.at(int(t * US), lambda _: cc.on_cnp(qp.sim.now))


def make() -> tuple[FakeQp, Dcqcn]:
    qp = FakeQp()
    return qp, Dcqcn(qp, TransportParams(cc_params={"dcqcn": P}), LINE)  # type: ignore[arg-type]


def test_first_cnp_cuts_at_the_next_decrease_tick_by_half_alpha() -> None:
    qp, cc = make()
    cnp_at(qp, cc, 10)
    qp.sim.run(until_ps=20 * US)
    # alpha starts at 1 on the first CNP (not counted as a CNP of its period) and decays in
    # the four 1 us periods before the tick at 10 + 4 us.
    alpha = (1 - P.g) ** 4
    assert qp.rates == [(14 * US, pytest.approx(LINE * (1 - alpha / 2)))]
    assert cc.rt == LINE  # the target is the rate the episode started from


def test_cnps_within_one_decrease_period_cut_once_and_raise_alpha() -> None:
    qp, cc = make()
    cnp_at(qp, cc, 0, 1.5, 2.5, 6.5)
    qp.sim.run(until_ps=9 * US)
    (t1, r1), (t2, r2) = qp.rates
    assert (t1, t2) == (4 * US, 8 * US)  # one cut per 4 us tick that saw a CNP
    keep = 1 - P.g
    # periods 0..3 (CNPs at 1.5 and 2.5 us fall in periods 1 and 2), then 4..7 (CNP at 6.5: period 6)
    alpha = 1.0
    for has_cnp in (False, True, True, False):
        alpha = alpha * keep + (P.g if has_cnp else 0)
    assert r1 == pytest.approx(LINE * (1 - alpha / 2))
    for has_cnp in (False, False, True, False):
        alpha = alpha * keep + (P.g if has_cnp else 0)
    assert r2 == pytest.approx(r1 * (1 - alpha / 2))
    assert cc.rt == LINE  # back-to-back cuts of one episode keep the first target


def test_fast_recovery_then_additive_increase_on_the_timer() -> None:
    qp, cc = make()
    cnp_at(qp, cc, 0)
    qp.sim.run(until_ps=5 * US)
    cut = cc.rc
    first_timer = 4 * US + P.increase_timer_ps
    qp.sim.run(until_ps=first_timer + 1)
    # One fast-recovery event (rpg_threshold = 1): rc = (rt + rc) / 2, target unchanged.
    assert qp.rates[-1] == (first_timer, pytest.approx((LINE + cut) / 2))
    assert cc.rt == LINE
    # A cut after a timer increase takes the current rate as the new target.
    before = cc.rc
    cnp_at(qp, cc, qp.sim.now / US + 1)
    qp.sim.run(until_ps=qp.sim.now + 10 * US)
    assert cc.rt == pytest.approx(before)
    cut_at, cut = qp.rates[-1]
    # From there: fast recovery at the first timer event, additive increase (R_AI per 100G,
    # scaled to the line rate) at the second.
    qp.sim.run(until_ps=cut_at + 2 * P.increase_timer_ps + 1)
    (t1, r1), (t2, r2) = qp.rates[-2:]
    assert (t1, t2) == (cut_at + P.increase_timer_ps, cut_at + 2 * P.increase_timer_ps)
    assert r1 == pytest.approx((before + cut) / 2)
    ai = P.rate_ai_bps_per_100g * 4
    assert cc.rt == pytest.approx(before + ai)
    assert r2 == pytest.approx((before + ai + r1) / 2)


def test_byte_counter_triggers_increases_between_timer_events() -> None:
    qp, cc = make()
    cnp_at(qp, cc, 0)
    qp.sim.run(until_ps=5 * US)
    cut = cc.rc
    n = len(qp.rates)
    for _ in range(P.byte_counter_bytes // 4160 + 1):
        cc.on_sent(4160)
    assert len(qp.rates) == n + 1
    assert cc.rc == pytest.approx((LINE + cut) / 2)


def test_no_cut_after_the_sender_is_done() -> None:
    qp, cc = make()
    cnp_at(qp, cc, 0)
    qp.sender_done = True
    qp.sim.run(until_ps=1000 * US)
    assert qp.rates == []
