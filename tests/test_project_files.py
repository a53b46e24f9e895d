"""Files users look for: the license matches pyproject.toml, the citation names this version,
the example scenarios ship inside the package, and dependencies are used."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _pyproject() -> dict:
    return tomllib.loads((ROOT / "pyproject.toml").read_text())


def test_license_file_is_the_license_pyproject_declares() -> None:
    declared = _pyproject()["project"]["license"]["text"]
    assert declared == "Apache-2.0"
    text = (ROOT / "LICENSE").read_text()
    assert "Apache License" in text and "Version 2.0, January 2004" in text
    assert "TERMS AND CONDITIONS FOR USE, REPRODUCTION, AND DISTRIBUTION" in text


def test_citation_matches_version_and_license() -> None:
    """The citation names the last release: the version setuptools-scm counts untagged commits
    from (fallback_version; a tag vX.Y.Z supersedes it, and both move with the tag)."""
    cff = (ROOT / "CITATION.cff").read_text()
    project = _pyproject()["project"]
    release = _pyproject()["tool"]["setuptools_scm"]["fallback_version"]
    assert re.search(rf"^version: {re.escape(release)}$", cff, re.M)
    assert re.search(rf"^license: {project['license']['text']}$", cff, re.M)
    assert cff.startswith("cff-version: 1.2.0")


def test_every_dependency_is_imported_by_the_package() -> None:
    """A runtime dependency nothing in src/ imports is dead weight (issue 17: tomli-w)."""
    source = "\n".join(p.read_text() for p in (ROOT / "src" / "spraylab").rglob("*.py"))
    for requirement in _pyproject()["project"]["dependencies"]:
        name = re.split(r"[<>=\[ ]", requirement)[0]
        module = {"tomli-w": "tomli_w", "pyarrow": "pyarrow"}.get(name, name)
        assert re.search(rf"^\s*(import|from) {module}\b", source, re.M), f"{name} is not used in src/"


def test_example_scenarios_are_package_data() -> None:
    """Every example file is inside the package and matched by pyproject's package-data, so
    ``pip install`` ships what ``spraylab list`` shows; scenarios/ at the top is a link to it."""
    import fnmatch

    patterns = _pyproject()["tool"]["setuptools"]["package-data"]["spraylab"]
    package = ROOT / "src" / "spraylab"
    examples = [p for p in (package / "scenarios").rglob("*") if p.is_file()]
    assert len(examples) > 20
    for path in examples:
        rel = path.relative_to(package).as_posix()
        assert any(fnmatch.fnmatch(rel, pat) and rel.count("/") == pat.count("/") for pat in patterns), rel
    assert (ROOT / "scenarios").resolve() == (package / "scenarios").resolve()


def test_websearch_sweep_states_its_oversubscription() -> None:
    """The file said non-blocking while 8 x 100G down over 4 x 100G up is 2:1."""
    from spraylab.model.scenario import validate
    from spraylab.results.card import fabric_facts
    from spraylab.runs.experiment import build_fabric

    path = ROOT / "scenarios" / "sweeps" / "websearch_schemes.toml"
    text = path.read_text()
    data = tomllib.loads(text)
    topology = validate({"topology": data["topology"], "workload": data["workload"]}).topology
    ratio = fabric_facts(build_fabric(topology))["oversubscription"]["ToR"]
    assert ratio == 2.0
    assert "non-blocking" not in text and "2:1" in text


def test_examples_that_say_non_blocking_are() -> None:
    """Every example scenario whose comments call its fabric non-blocking has oversubscription
    1:1 at every tier (the card's numbers: capacity down / capacity up per switch)."""
    from spraylab.model.scenario import Scenario
    from spraylab.results.card import scenario_card

    checked = 0
    for path in sorted((ROOT / "scenarios").rglob("*.toml")):
        if "sweeps" in path.parts or "non-blocking" not in path.read_text():
            continue
        over = scenario_card(Scenario.load(path)).data["fabric"]["oversubscription"]
        assert set(over.values()) == {1.0}, (path.name, over)
        checked += 1
    assert checked >= 3
