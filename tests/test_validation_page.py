"""The validation page (``spraylab validate``, the packaged study ``validation``): its closed-form
check holds to the picosecond, the page is rendered from the store, and a file the generator did
not write is never overwritten."""

from __future__ import annotations

from pathlib import Path

import pytest

from spraylab.cli import main
from spraylab.study.render import GENERATED_MARK


def test_single_flow_check_matches_its_closed_form_and_renders(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    page = tmp_path / "validation.md"
    argv = [
        "spraylab",
        "validate",
        "--only",
        "single_flow",
        "--store",
        str(tmp_path / "store"),
        "--out",
        str(page),
    ]
    monkeypatch.setattr("sys.argv", argv)
    with pytest.raises(SystemExit) as exit_info:
        main()
    assert exit_info.value.code == 0
    out = capsys.readouterr().out
    assert "single-flow: met: 2/2 points hold" in out
    text = page.read_text()
    assert text.startswith(GENERATED_MARK)
    assert "| `single-flow` |" in text and "**met**" in text
    # the simulated FCT and the closed form agree to the printed precision (to the picosecond)
    rows = [
        line for line in text.splitlines() if line.startswith("| 64000 |") or line.startswith("| 16000000 |")
    ]
    assert len(rows) == 2
    for row in rows:
        cells = [c.strip() for c in row.strip("|").split("|")]
        assert cells[1] == cells[2] and cells[3] == "1.000000x"


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
