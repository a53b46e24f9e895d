"""A congestion control with parameters is one file: a control defined here (outside
``spraylab.transport.cc``) declares its section model and params type, and from then on its
``[transport.NAME]`` section is a scenario key (validated, with one-line errors naming the key,
the value and what is allowed), reaches its hooks as ``transport.cc_params[NAME]``, is left out of
a scenario's dump at its defaults, and shows in ``spraylab list`` and ``spraylab docs config``.

Theory for the run: a sender paced at rate r (``qp.set_rate``: the NIC spaces the starts of its
data packets by their wire size over r) puts n - 1 gaps of ``wire x 8 / r`` before its last
packet, which then crosses the idle path in at most the flow's idle-fabric FCT; so
``(n - 1) x wire x 8 / r <= FCT <= that + ideal_fct``."""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

import pytest
from cliutil import invoke

from spraylab.model.library import load_scenario
from spraylab.model.scenario import ScenarioError, Section, TransportSection
from spraylab.model.types import param, to_params
from spraylab.net.framing import data_wire_bytes
from spraylab.runs.experiment import run
from spraylab.transport.cc.base import CONGESTION_CONTROLS, CongestionControl, cc_sections


@dataclass(frozen=True, slots=True)
class FixedRateParams:
    # A test control: no public source; half the line rate makes the pacing visible.
    rate_fraction: float = 0.5


_FIXED = FixedRateParams()


class FixedRateSection(Section):
    """Defaults: ``FixedRateParams`` (a test control)."""

    rate_fraction: float = param(_FIXED, "rate_fraction", gt=0, le=1, description="share of line rate")

    def to_params(self) -> FixedRateParams:
        return to_params(self, FixedRateParams)


class FixedRate(CongestionControl):
    """Sends every flow at a fixed share of its line rate."""

    name = "fixed_rate"
    summary = "a fixed share of line rate (a test control)"
    params_section: ClassVar[str] = "fixed_rate"
    section_model = FixedRateSection
    params_type = FixedRateParams
    section_description = "fixed-rate test control parameters, read when cc = 'fixed_rate'"

    __slots__ = ()

    def __init__(self, qp, transport, line_rate_bps: int) -> None:  # type: ignore[no-untyped-def]
        qp.set_rate(line_rate_bps * transport.cc_params["fixed_rate"].rate_fraction)


@pytest.fixture
def fixed_rate() -> Iterator[None]:
    CONGESTION_CONTROLS.register(FixedRate)
    try:
        yield
    finally:
        CONGESTION_CONTROLS.unregister("fixed_rate")


SCENARIO = """\
[topology]
kind = "leaf_spine"
leaves = 2
spines = 1
hosts_per_leaf = 1
host_rate = "100Gbps"

[transport]
cc = "fixed_rate"

[transport.fixed_rate]
rate_fraction = 0.25

[workload]
kind = "flows"
rows = [{ src = 0, dst = 1, size = "1MB" }]

[run]
progress = false
"""


def test_an_outside_control_with_its_section_runs_from_a_scenario_file(
    fixed_rate: None, tmp_path: Path
) -> None:
    """``[transport.fixed_rate]`` reaches the control; the flow takes the paced time (module
    docstring), four times its line-rate serialization rather than once."""
    path = tmp_path / "paced.toml"
    path.write_text(SCENARIO)
    scenario = load_scenario(str(path))
    assert scenario.transport.fixed_rate.rate_fraction == 0.25  # type: ignore[attr-defined]
    assert scenario.transport.to_params().cc_params["fixed_rate"] == FixedRateParams(0.25)
    flow = run(scenario).flows.iloc[0]
    rate_bps = 100e9 * 0.25
    n = math.ceil(1_000_000 / 4096)
    gaps_ps = (n - 1) * data_wire_bytes(4096) * 8e12 / rate_bps
    assert gaps_ps <= flow["fct_ps"] <= gaps_ps + flow["ideal_fct_ps"]
    assert flow["fct_ps"] > 3 * flow["ideal_fct_ps"]  # paced at a quarter of line rate


def test_its_section_is_a_scenario_key_like_the_built_in_ones(fixed_rate: None, tmp_path: Path) -> None:
    """Bad values and unknown keys are one line naming the key; its defaults stay out of the dump
    (store keys of scenarios that never name it do not change); list and docs show it."""
    path = tmp_path / "paced.toml"
    path.write_text(SCENARIO.replace("rate_fraction = 0.25", "rate_fraction = 2"))
    with pytest.raises(ScenarioError) as err:
        load_scenario(str(path))
    assert err.value.lines == [
        f"{path}: transport.fixed_rate.rate_fraction = 2: Input should be less than or equal to 1"
    ]
    path.write_text(SCENARIO.replace("rate_fraction = 0.25", "share = 0.25"))
    with pytest.raises(
        ScenarioError, match=r"transport.fixed_rate.share = 0.25: unknown key; allowed keys: rate_fraction"
    ):
        load_scenario(str(path))
    path.write_text(SCENARIO.replace("rate_fraction = 0.25", "rate_fraction = 0.5"))
    assert "fixed_rate" not in load_scenario(str(path)).to_dict()["transport"]
    assert "fixed_rate" in cc_sections() and "fixed_rate" in TransportSection.registered_model().model_fields

    listed = invoke("list", cwd=tmp_path)
    assert listed.returncode == 0
    assert "[transport.fixed_rate] rate_fraction = 0.5" in " ".join(listed.stdout.split())
    docs = invoke("docs", "config", cwd=tmp_path)
    assert (
        "| `transport.fixed_rate.rate_fraction` | float | `0.5` | > 0, <= 1 | share of line rate |"
        in docs.stdout
    )


def test_unregistered_it_is_an_unknown_key_again(tmp_path: Path) -> None:
    """Without the registration, the same file is refused, naming the allowed controls."""
    path = tmp_path / "paced.toml"
    path.write_text(SCENARIO)
    with pytest.raises(ScenarioError, match=r"transport.cc = 'fixed_rate': unknown congestion control"):
        load_scenario(str(path))
