"""The validation page generator (``spraylab validate``): its closed-form check holds to the
picosecond, the page is rendered from the rows it computed, and a file the generator did not
write is never overwritten."""

from __future__ import annotations

from pathlib import Path

import pytest

from spraylab import validation
from spraylab.cli import main


def test_single_flow_check_matches_its_closed_form_and_renders() -> None:
    (check,) = validation.run_checks(["single_flow"], quick=True)
    assert check.rows and all(row.met for row in check.rows)
    page = validation.render([check], "test", quick=True)
    assert page.startswith(validation.GENERATED_MARK)
    for row in check.rows:
        assert row.simulated in page and row.truth in page


def test_validate_refuses_to_overwrite_a_file_it_did_not_write(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    page = tmp_path / "validation.md"
    page.write_text("my notes\n")
    monkeypatch.setattr("sys.argv", ["spraylab", "validate", "--only", "single_flow", "--out", str(page)])
    with pytest.raises(SystemExit) as exit_info:
        main()
    assert exit_info.value.code == 2
    err = capsys.readouterr().err
    assert err.startswith("error: --out") and err.count("\n") == 1
    assert page.read_text() == "my notes\n"
