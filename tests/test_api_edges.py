"""The Python API's edges: scenario errors as the CLI words them (ScenarioError with key, value and
allowed), summary times in a chosen unit, and sweep axis values with their types (load_sweep, in
tests/test_paper_plots.py)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import tomli_w
from cliutil import invoke

import spraylab
from spraylab import Scenario, ScenarioError

BASE: dict[str, Any] = {
    "topology": {"kind": "leaf_spine", "leaves": 2, "spines": 2, "hosts_per_leaf": 2, "host_rate": "100Gbps"},
    "workload": {"kind": "permutation", "size": "20KB"},
}

# (section, key, bad value, the key ScenarioError names, a word of what is allowed)
BAD = [
    ("topology", "host_rate", "400Gbs", "topology.host_rate", "Gbps"),
    ("lb", "scheme", "nope", "lb.scheme", "'ecmp'"),
    ("transport", "recovery", "xx", "transport.recovery", "'sr'"),
    ("topology", "leavs", 2, "topology.leavs", "leaves"),
    ("workload", "size", "big", "workload.size", "KiB"),
]


def _with(section: str, key: str, value: Any) -> dict[str, Any]:
    data = {name: dict(table) for name, table in BASE.items()}
    data.setdefault(section, {})[key] = value
    return data


@pytest.mark.parametrize(("section", "key", "value", "dotted", "allowed"), BAD)
def test_from_dict_raises_the_cli_line(
    section: str, key: str, value: Any, dotted: str, allowed: str, tmp_path: Path
) -> None:
    data = _with(section, key, value)
    with pytest.raises(ScenarioError) as caught:
        Scenario.from_dict(data)
    exc = caught.value
    assert isinstance(exc, ValueError) and not isinstance(exc.__cause__, Exception)
    assert (exc.key, exc.value) == (dotted, value)
    assert exc.allowed is not None and allowed in exc.allowed
    # the very line the CLI prints for the same scenario file (after its "error: FILE: ")
    (tmp_path / "bad.toml").write_text(tomli_w.dumps(data))
    proc = invoke("run", "bad.toml", cwd=tmp_path)
    assert proc.returncode == 2
    assert proc.stderr.strip() == f"error: bad.toml: {exc}"
    assert "\n" not in str(exc) and "validation error" not in str(exc)


def test_scenario_error_is_public_and_lists_every_problem() -> None:
    assert "ScenarioError" in spraylab.__all__ and spraylab.ScenarioError is ScenarioError
    data = _with("topology", "host_rate", "1Gbs")
    data["transport"] = {"recovery": "xx"}
    with pytest.raises(ScenarioError) as caught:
        Scenario.from_dict(data)
    keys = [p.key for p in caught.value.problems]
    assert keys == ["topology.host_rate", "transport.recovery"]
    assert caught.value.lines == str(caught.value).splitlines()


def test_summary_in_converts_every_picosecond_key_and_nothing_else() -> None:
    result = spraylab.run(Scenario.from_dict(BASE))
    summary = result.summary
    in_us = result.summary_in("µs")
    assert in_us == result.summary_in("us")
    in_s = result.summary_in("s")
    times = [k for k in summary if k.partition("[")[0].endswith("_ps")]
    assert "fct_p99_ps" in times and "completion_ps" in times
    for key in times:
        name, bracket, rest = key.partition("[")
        us_key = name.removesuffix("_ps") + "_us" + bracket + rest
        s_key = name.removesuffix("_ps") + "_s" + bracket + rest
        if summary[key] is None:
            assert in_us[us_key] is None
        else:
            assert in_us[us_key] == pytest.approx(summary[key] / 1e6)
            assert in_s[s_key] == pytest.approx(summary[key] / 1e12)
    others = {k: v for k, v in summary.items() if k not in times}
    assert {k: in_s[k] for k in others} == others
    assert len(in_s) == len(summary) and result.summary == summary  # the summary itself unchanged
    with pytest.raises(ValueError, match="allowed: ps, ns, us, µs, ms, s"):
        result.summary_in("minutes")


def test_compare_validates_every_variant_before_running_any() -> None:
    """spraylab.compare: a bad label anywhere in the list raises before the first run (the
    runner is never called); a good list runs each variant once, in order, under its label."""
    import spraylab
    from spraylab.model.variants import VariantError

    calls: list[str] = []

    def runner(scenario: Any, label: str) -> Any:
        calls.append(label)
        return spraylab.run(scenario), False

    base = {
        "topology": {
            "kind": "leaf_spine",
            "leaves": 2,
            "spines": 2,
            "hosts_per_leaf": 2,
            "host_rate": "100Gbps",
        },
        "workload": {"kind": "permutation", "size": "20KB"},
        "run": {"progress": False},
    }
    with pytest.raises(VariantError):
        spraylab.compare(base, "ecmp,no_such_scheme", runner=runner)
    assert calls == []
    comparison = spraylab.compare(base, "ecmp,rps/ideal", runner=runner)
    assert calls == ["ecmp", "rps/ideal"] and list(comparison.results) == calls
    assert comparison.summaries["rps/ideal"]["scheme"] == "rps"
    assert comparison.summaries["rps/ideal"]["recovery"] == "ideal"
    assert not comparison.interrupted
