"""One metric catalog: a metric has one label and one unit wherever it is shown (the run summary
table, sweep reports, the run viewer), and a table's raw values state the unit the catalog gives."""

from __future__ import annotations

import csv
import io
from pathlib import Path

import pytest

from spraylab.metrics import catalog
from spraylab.model.scenario import Scenario
from spraylab.report import format_estimate
from spraylab.report.viewer import scenario_card
from spraylab.results.stats import mean_ci
from spraylab.results.summary import summary_table
from spraylab.results.tables import to_csv
from spraylab.runs.experiment import run
from spraylab.units import UNITS, format_value

SCENARIO = Path(__file__).resolve().parents[1] / "scenarios" / "imports" / "explicit_flows.toml"


@pytest.fixture(scope="module")
def summary() -> dict:
    return run(Scenario.load(SCENARIO)).summary


def test_every_metric_has_a_known_unit_and_a_label() -> None:
    for m in catalog.CATALOG.values():
        assert m.unit in UNITS and m.label and m.description, m.key


def test_a_metric_reads_the_same_in_the_summary_table_the_report_and_the_viewer(summary: dict) -> None:
    table = {row.key: row for row in summary_table("t", {"run": summary}).rows}
    card = dict(scenario_card(Scenario.load(SCENARIO).to_dict(), summary))
    for key in set(catalog.SUMMARY_ROWS) & set(catalog.REPORT_ROWS):
        unit = catalog.unit_of(key)
        assert table[key].label == catalog.label_of(key)
        if unit != "count":  # a report shows means over seeds: a mean of counts is a plain number
            # one run: the report's estimate is the mean alone (no interval under 3 values)
            assert format_estimate(mean_ci([summary[key]]), unit) == table[key].texts[0], key
    for key in catalog.VIEWER_ROWS:
        label = catalog.label_of(key)
        assert card[label] == format_value(summary[key], catalog.unit_of(key))
        if key in table:
            assert table[key].texts[0] == card[label]


def test_csv_rows_state_the_catalogs_raw_unit(summary: dict) -> None:
    text = to_csv([summary_table("t", {"run": summary})])
    rows = [r for r in csv.reader(io.StringIO(text)) if r and not r[0].startswith("#")]
    header, body = rows[0], rows[1:]
    assert header[:4] == ["table", "metric", "key", "unit"]
    for row in body:
        assert row[3] == UNITS[catalog.unit_of(row[2])].raw, row


def test_a_family_member_and_a_scheme_counter_get_their_unit_and_label() -> None:
    # families: the group's CCT is a time, its label the family's with the group; a scheme's own
    # counter has no entry, so its unit follows spraylab's naming rule (_bytes: a size)
    assert catalog.unit_of("cct_ps[0:moe:dispatch]") == "ps"
    assert (
        catalog.label_of("cct_ps[0:moe:dispatch]")
        == f"{catalog.CATALOG['cct_ps[GROUP]'].label}[0:moe:dispatch]"
    )
    assert catalog.unit_of("drops_buffer") == "count"
    assert catalog.unit_of("lb.reseq_peak_bytes") == "bytes"
    assert catalog.unit_of("lb.flows_sprayed") == "count"
    assert catalog.lookup("no_such_metric") is None
