"""`spraylab compare --lb`: scheme[params]/recovery variants."""

from __future__ import annotations

import pytest

from spraylab.cli import UsageError, parse_variants
from spraylab.model.library import load_scenario
from spraylab.model.variants import variant_scenario


def test_variants_carry_scheme_parameters_and_recovery() -> None:
    variants = dict(
        parse_variants(
            "ecmp,rps/ideal,dfs[reorder_bound_packets=128]/sr,tor_assist[mode=reorder,uplink=random]/gbn"
        )
    )
    assert variants["ecmp"] == {"lb": {"scheme": "ecmp"}}
    assert variants["rps/ideal"] == {"lb": {"scheme": "rps"}, "transport.recovery": "ideal"}
    base = load_scenario("demo", {})
    dfs = variant_scenario(base, variants["dfs[reorder_bound_packets=128]/sr"])
    assert (dfs.lb.scheme, dfs.lb.params, dfs.transport.recovery) == (
        "dfs",
        {"reorder_bound_packets": 128},
        "sr",
    )
    tor = variant_scenario(base, variants["tor_assist[mode=reorder,uplink=random]/gbn"])
    assert tor.lb.params == {"mode": "reorder", "uplink": "random"}


def test_base_parameters_carry_over_to_the_same_scheme_only() -> None:
    base = load_scenario("demo", {"lb.scheme": "dfs", "lb.max_paths": 4})
    same = variant_scenario(base, dict(parse_variants("dfs/sr"))["dfs/sr"])
    other = variant_scenario(base, dict(parse_variants("rps"))["rps"])
    assert same.lb.params == {"max_paths": 4}
    assert other.lb.params == {}


@pytest.mark.parametrize("spec", ["nope", "rps/tcp", "dfs[reorder_bound_packets=128/sr", ""])
def test_bad_variants_are_usage_errors(spec: str) -> None:
    with pytest.raises(UsageError):
        parse_variants(spec)


def test_variant_labels_print_verbatim_in_the_table() -> None:
    from rich.console import Console

    from spraylab.results.summary import summary_table
    from spraylab.results.tables import render

    console = Console(width=200, record=True)
    render("table", [summary_table("t", {"dfs[reorder_bound_packets=128]/sr": {}, "rps": {}})], console)
    assert "dfs[reorder_bound_packets=128]/sr" in console.export_text()
