"""examples/spraylab_tour.ipynb runs from top to bottom in a real Jupyter kernel (nbclient), in
well under a minute: a run with a monitor, a two-scheme sweep read back with load_sweep, plots."""

from __future__ import annotations

import os
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOK = ROOT / "examples" / "spraylab_tour.ipynb"


@pytest.mark.slow
def test_example_notebook_runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # the kernel (a subprocess) imports this checkout's spraylab, installed or not
    monkeypatch.setenv(
        "PYTHONPATH", os.pathsep.join(filter(None, [str(ROOT / "src"), os.environ.get("PYTHONPATH")]))
    )
    nb = nbformat.read(NOTEBOOK, as_version=4)
    NotebookClient(
        nb, timeout=120, kernel_name="python3", resources={"metadata": {"path": str(tmp_path)}}
    ).execute()
    outputs = [o for cell in nb.cells if cell.cell_type == "code" for o in cell.outputs]
    assert not [o for o in outputs if o.output_type == "error"]
    text = "".join(o.get("text", "") for o in outputs if o.output_type == "stream")
    assert "4 runs: 4 done" in text and text.rstrip().endswith(".html")
    images = [o for o in outputs if "image/png" in o.get("data", {})]
    assert len(images) == 4  # the CDF, the percentiles and both time-series plots


def test_the_committed_notebook_carries_its_outputs_and_stays_small() -> None:
    """The notebook is committed executed, so it reads on GitHub without a kernel: every code cell
    ran in order and the plots are there; kept small (PNG figures of a small run)."""
    nb = nbformat.read(NOTEBOOK, as_version=4)
    code = [cell for cell in nb.cells if cell.cell_type == "code"]
    assert [cell.execution_count for cell in code] == list(range(1, len(code) + 1))
    images = [o for cell in code for o in cell.outputs if "image/png" in o.get("data", {})]
    assert len(images) == 4
    assert NOTEBOOK.stat().st_size < 300_000
