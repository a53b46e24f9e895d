"""Start-up stays light: ``import spraylab`` and ``spraylab --help`` load neither the data stack
(pandas, pyarrow, matplotlib, numpy) nor the scenario schema (pydantic), and the lazily loaded
public names are the real objects. Checked in a fresh interpreter through ``sys.modules``, not by
timing (which the test machine's load would make flaky)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

SRC = str(Path(__file__).resolve().parents[1] / "src")
HEAVY = ("pandas", "pyarrow", "matplotlib", "numpy", "pydantic", "ray")


def modules_after(code: str) -> set[str]:
    """Top-level and dotted module names loaded by ``code`` in a fresh interpreter."""
    probe = f"{code}\nimport json, sys\nprint(json.dumps(sorted(sys.modules)))"
    env = {**os.environ, "PYTHONPATH": SRC}
    out = subprocess.run([sys.executable, "-c", probe], env=env, capture_output=True, text=True, check=True)
    return set(json.loads(out.stdout.strip().splitlines()[-1]))


@pytest.mark.parametrize(
    "code",
    [
        "import spraylab",
        "import sys; sys.argv = ['spraylab', '--help']\nfrom spraylab.cli import main\ntry:\n    main()\n"
        "except SystemExit as exit:\n    assert exit.code == 0, exit.code",
    ],
    ids=["import", "help"],
)
def test_start_up_loads_no_heavy_module(code: str) -> None:
    loaded = modules_after(code)
    assert not {m for m in loaded if m.split(".")[0] in HEAVY}


def test_lazy_public_names_are_the_real_objects() -> None:
    import spraylab
    from spraylab.model.scenario import Scenario
    from spraylab.runs.experiment import run

    assert spraylab.Scenario is Scenario and spraylab.run is run
    assert set(spraylab.__all__) <= set(dir(spraylab))
    for name in spraylab.__all__:
        assert getattr(spraylab, name) is not None
    with pytest.raises(AttributeError, match="no attribute 'nonexistent'"):
        _ = spraylab.nonexistent  # type: ignore[attr-defined]


RUN_SUMMARY_ONLY = """\
from spraylab.model.scenario import Scenario
from spraylab.runs.experiment import build

scenario = Scenario.from_dict({
    "topology": {"kind": "leaf_spine", "leaves": 2, "spines": 2, "hosts_per_leaf": 2},
    "workload": {"kind": "permutation", "size": "20KB"},
    "run": {"progress": False},
})
simulation = build(scenario)
simulation.run()
result = simulation.result()
assert result.summary["flows_completed"] == result.summary["flows"] == 4
"""


def test_a_run_read_for_its_summary_loads_no_pandas() -> None:
    """The tables are built on first access, so the summary alone never needs pandas."""
    loaded = modules_after(RUN_SUMMARY_ONLY)
    assert not {m for m in loaded if m.split(".")[0] in ("pandas", "pyarrow")}


def test_the_tables_are_built_on_first_access_and_pickle() -> None:
    import pickle

    from spraylab.runs.experiment import run

    result = run(
        {
            "topology": {"kind": "leaf_spine", "leaves": 2, "spines": 2, "hosts_per_leaf": 2},
            "workload": {"kind": "permutation", "size": "20KB"},
            "run": {"progress": False},
        }
    )
    assert "flows" not in vars(result)
    assert len(result.flows) == result.summary["flows"] == 4
    assert int(result.links["tx_packets"].sum()) == result.summary["packet_hops"]
    copy = pickle.loads(pickle.dumps(result))
    assert copy.flows.equals(result.flows) and copy.summary == result.summary
