"""The congestion controls and recovery modes as the user sees them: ``spraylab list`` names each
control with its parameters (name, default, unit) and each recovery mode with the transport keys
it reads; the fluid engines stand in for the controls that converge to max-min fair shares
(DCQCN, DCTCP, Swift: equal flows on one bottleneck converge to equal shares, the theory the
packet tests check) and refuse the others (HPCC, NSCC, TIMELY) with one line."""

from __future__ import annotations

import sys

import pytest

from spraylab import cli
from spraylab.fluid.engine import wire_bytes
from spraylab.model.scenario import ScenarioError, TransportSection, validate
from spraylab.net.routes import trace_route
from spraylab.runs.experiment import build, run
from spraylab.transport.cc.base import CONGESTION_CONTROLS
from spraylab.transport.recovery.base import RECOVERIES
from spraylab.transport.registry import cc_parameters, param_text, recovery_keys


def _list_output(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> list[str]:
    monkeypatch.setattr(sys, "argv", ["spraylab", "list"])
    monkeypatch.setattr(cli.console, "width", 1000)
    with pytest.raises(SystemExit) as stop:
        cli.main()
    assert stop.value.code == 0
    return capsys.readouterr().out.splitlines()


def test_list_shows_every_congestion_control_with_its_parameters(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    lines = _list_output(monkeypatch, capsys)
    for name in ("dcqcn", "hpcc", "dctcp", "swift", "timely"):
        (line,) = [line for line in lines if f" {name} " in line and f"[transport.{name}]" in line]
        section, params = cc_parameters(name)
        assert params, name
        for key, default, unit in params:
            assert param_text(key, default, unit) in line, (name, key)
    assert "alpha_timer = 1000000 ps (1us)" in param_text("alpha_timer", 1_000_000, "ps")
    assert param_text("min_rate", 10**9, "bits/s") == "min_rate = 1000000000 bits/s (1Gbps)"
    # units come from the value parsers: a time in ps, a rate in bits/s, a size in bytes
    assert ("base_target", 20_000_000, "ps") in cc_parameters("swift")[1]
    assert ("min_rate", 1_000_000_000, "bits/s") in cc_parameters("hpcc")[1]
    assert ("byte_counter", 32767, "bytes") in cc_parameters("dcqcn")[1]
    assert ("g", 1 / 16, "") in cc_parameters("dctcp")[1]
    assert ("t_low", 50_000_000, "ps") in cc_parameters("timely")[1]
    assert cc_parameters("none") == ("", [])


def test_list_shows_every_recovery_mode_with_the_keys_it_reads(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    lines = _list_output(monkeypatch, capsys)
    assert any("[transport] keys it reads" in line for line in lines)
    for name in RECOVERIES.names():
        keys = recovery_keys(name)
        # every key named is a [transport] key
        assert set(keys) <= set(TransportSection.model_fields), (name, keys)
        (line,) = [
            line for line in lines if f" {name} " in line and RECOVERIES.get(name).summary[:30] in line
        ]
        assert ", ".join(keys) in line
    # what differs between the modes: the bitmap and NACK timer of selective repeat, IRN's window
    assert "ooo_bitmap" in recovery_keys("sr") and "ooo_bitmap" not in recovery_keys("gbn")
    assert "window" in recovery_keys("irn") and "nack_timer" not in recovery_keys("ideal")


def _fluid_incast(cc: str):
    return run(
        validate(
            {
                "topology": {"kind": "leaf_spine", "leaves": 2, "spines": 2, "hosts_per_leaf": 4},
                "transport": {"cc": cc},
                "workload": {"kind": "incast", "senders": 5, "receiver": 0, "size": 400_000},
                "run": {"engine": "fluid", "progress": False},
            }
        )
    )


@pytest.mark.parametrize("cc", ["dctcp", "swift"])
def test_the_fluid_engine_maps_dctcp_and_swift_to_max_min_shares(cc: str) -> None:
    """Five senders into one link: max-min gives each a fifth, so the flows finish together
    after the five flows' wire bytes at the link rate (plus their routes' latencies), exactly as
    under DCQCN."""
    assert CONGESTION_CONTROLS.get(cc).fluid_engine
    result, reference = _fluid_incast(cc), _fluid_incast("dcqcn")
    assert list(result.flows["fct_ps"]) == list(reference.flows["fct_ps"])
    transfer_ps = 5 * wire_bytes(400_000, 4096) * 8e12 / 400e9  # the default 400 Gb/s hosts
    assert min(result.flows["fct_ps"]) >= transfer_ps
    assert max(result.flows["fct_ps"]) <= 1.01 * transfer_ps + 10e6  # + at most 10 us of latency


@pytest.mark.parametrize("cc", ["hpcc", "nscc", "timely"])
def test_the_fluid_engines_refuse_what_they_cannot_map_and_list_what_they_map(cc: str) -> None:
    """HPCC (its rate follows in-band telemetry), NSCC (its window follows queueing delay and
    trims) and TIMELY (its gradient rule has no unique fixed point, Zhu et al. CoNEXT'16) have no
    max-min stand-in: the fluid engines refuse them in one line naming the ones they map."""
    with pytest.raises(ScenarioError) as err:
        validate(
            {
                "topology": {"kind": "leaf_spine"},
                "transport": {"cc": cc},
                "workload": {"kind": "incast"},
                "run": {"engine": "fluid"},
            }
        )
    (line,) = str(err.value).splitlines()
    assert line.startswith(f"transport.cc = '{cc}'") and "allowed" in line
    for mapped in ("dcqcn", "dctcp", "swift", "none"):
        assert mapped in line


def test_the_irn_preset_is_selective_repeat_with_a_bdp_window_on_a_lossy_fabric() -> None:
    """IRN (Mittal et al. SIGCOMM'18) as a named preset: the irn recovery mode (selective repeat;
    BDP-FC, since transport.window is left at 0) on a fabric without PFC."""
    from spraylab.model.library import load_scenario, preset_names

    assert "irn" in preset_names()
    scenario = load_scenario("irn", {})
    assert scenario.transport.recovery == "irn" and scenario.transport.window == 0
    assert not scenario.switch.lossless
    qp = build(scenario).net.qps[0]
    rtt_ps = trace_route(qp.net, qp.src, qp.dst).base_rtt_ps(qp.mtu)
    assert qp.window_cap_packets == -(-int(qp.line_rate_bps * rtt_ps / 8e12) // qp.full_wire_bytes)
    assert RECOVERIES.get("irn").selective
