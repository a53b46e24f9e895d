"""The generated pages are current, and every column a run writes has an entry in the dictionary."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from spraylab import docgen
from spraylab.metrics import catalog
from spraylab.model.scenario import Scenario
from spraylab.runs.experiment import run

DOCS = Path(__file__).resolve().parents[1] / "docs"


@pytest.mark.parametrize(
    ("page", "make"),
    [("config-reference.md", docgen.config_reference), ("columns.md", docgen.column_dictionary)],
)
def test_checked_in_page_is_current(page: str, make) -> None:
    assert (DOCS / page).read_text() == make(), (
        f"docs/{page} is stale: spraylab docs {page.split('-')[0].removesuffix('.md')} > docs/{page}"
    )


def test_config_reference_lists_every_key_of_every_section() -> None:
    from spraylab.lb.base import REGISTRY, load_builtin_schemes
    from spraylab.model.scenario import SwitchSection, TransportSection
    from spraylab.topology.imported import ImportedTopology
    from spraylab.workload.kinds.flows import FlowsWorkload

    page = docgen.config_reference()
    for prefix, model in (
        ("switch.", SwitchSection),
        ("transport.", TransportSection),
        ("topology.", ImportedTopology),
        ("workload.", FlowsWorkload),
    ):
        for key in model.model_fields:
            assert f"`{prefix}{key}`" in page
    load_builtin_schemes()
    for name, cls in REGISTRY.items():
        assert f'scheme = "{name}"' in page
        for key in cls.Params.model_fields:
            assert f"`lb.{key}`" in page
    # units and defaults as a user writes them
    assert "| `switch.buffer` | bytes; takes units: `2MB` (10^6), `64KiB` (2^10) | `64MB` |" in page
    assert '| `transport.recovery` | one of `gbn`, `ideal`, `irn`, `sr`, `uec` | `"gbn"` |' in page


def test_every_column_and_summary_key_is_documented() -> None:
    result = run(
        Scenario.load(Path(__file__).resolve().parents[1] / "scenarios" / "imports" / "explicit_flows.toml")
    )
    assert set(result.flows.columns) == set(docgen.FLOW_COLUMN_DOCS)
    assert set(result.links.columns) == set(docgen.LINK_COLUMN_DOCS)
    assert set(result.groups.columns) == set(docgen.GROUP_COLUMN_DOCS)
    missing = [k for k in result.summary if catalog.lookup(k) is None]
    assert not missing
    page = docgen.column_dictionary()
    for entry in catalog.documented("summary"):
        assert f"| `{entry.key}` |" in page


@pytest.mark.parametrize("engine", [catalog.PACKET, catalog.FLUID])
def test_the_catalog_says_which_engines_compute_each_key(engine: str) -> None:
    """A run of an engine has a value for exactly the plain (not family) keys whose catalog
    entry names that engine, but those of a setting the run does not use; every key it writes,
    families included, names it."""
    scenario = Scenario.load(
        Path(__file__).resolve().parents[1] / "scenarios" / "imports" / "explicit_flows.toml"
    ).with_overrides({"run.engine": engine})
    summary = run(scenario).summary
    carried = {k for k, v in summary.items() if v is not None}
    wrong = [k for k in carried if engine not in catalog.lookup(k).engines]  # type: ignore[union-attr]
    assert not wrong, f"{engine} writes {wrong}, which the catalog says it does not compute"
    plain = {
        m.key
        for m in catalog.documented("summary")
        if engine in m.engines and not re.search(r"[A-Z]", m.key) and m.only_with is None
    }
    assert plain <= carried, f"the catalog says {engine} computes {sorted(plain - carried)}"


def test_every_key_says_what_it_is() -> None:
    missing = []
    for line in docgen.config_reference().splitlines():
        cells = [c.strip() for c in line.split("|")]
        if line.startswith("| `") and not cells[5]:
            missing.append(cells[1])
    assert not missing


def test_every_monitor_key_and_time_series_column_is_documented() -> None:
    """[monitor] keys are in the configuration reference, each saying what it is, and every
    column a monitored run writes (read back from its saved Parquet files) has an entry in the
    column dictionary, under its table's heading."""
    from spraylab.model.scenario import MonitorSection

    reference = docgen.config_reference()
    for key in MonitorSection.model_fields:
        (row,) = [line for line in reference.splitlines() if line.startswith(f"| `monitor.{key}` |")]
        assert row.split("|")[5].strip(), row  # a description, not an empty cell
    result = run(
        Scenario.from_dict(
            {
                "topology": {"leaves": 2, "spines": 2, "hosts_per_leaf": 2, "host_rate": "100Gbps"},
                "workload": {"kind": "permutation", "size": "20KB"},
                "monitor": {"interval": "2us"},
            }
        )
    )
    ts = result.timeseries
    assert ts is not None
    columns = docgen.column_dictionary()
    for name, docs in (
        ("ports", docgen.TIMESERIES_PORT_DOCS),
        ("flows", docgen.TIMESERIES_FLOW_DOCS),
        ("switches", docgen.TIMESERIES_SWITCH_DOCS),
    ):
        frame = getattr(ts, name)
        assert len(frame) and set(frame.columns) == set(docs)
        section = columns.split(f"### timeseries_{name}.parquet")[1].split("\n#")[0]
        for column in frame.columns:
            assert f"| `{column}` |" in section
