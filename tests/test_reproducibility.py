"""What pins a result down: the version comes from git (PEP 440, via setuptools-scm), and
constraints.txt pins every package the test environment installs, each within what pyproject.toml
declares (PEP 508 requirements, PEP 440 versions)."""

from __future__ import annotations

import tomllib
from pathlib import Path

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from packaging.version import Version

import spraylab
from spraylab.results import provenance

ROOT = Path(__file__).resolve().parent.parent


def _pins() -> dict[str, Version]:
    pins = {}
    for line in (ROOT / "constraints.txt").read_text().splitlines():
        line = line.split("#", 1)[0].strip()
        if line:
            name, _, version = line.partition("==")
            assert version, f"constraints.txt: {line!r} is not an exact pin (name==version)"
            pins[canonicalize_name(name)] = Version(version)
    return pins


def test_the_version_is_a_pep440_version_and_every_result_records_it() -> None:
    # Version() raises InvalidVersion on anything PEP 440 does not allow (e.g. a hand-made tag
    # that setuptools-scm passed through), and sorting / comparing results needs a real version
    Version(spraylab.__version__)
    assert provenance.current()["spraylab"] == spraylab.__version__


def test_the_version_is_not_typed_into_pyproject() -> None:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert "version" not in config["project"] and "version" in config["project"]["dynamic"]
    assert any(r.startswith("setuptools-scm") for r in config["build-system"]["requires"])
    Version(config["tool"]["setuptools_scm"]["fallback_version"])


def test_constraints_pin_every_declared_dependency_within_its_range() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    pins = _pins()
    for line in [*project["dependencies"], *project["optional-dependencies"]["test"]]:
        req = Requirement(line)
        name = canonicalize_name(req.name)
        assert name in pins, f"constraints.txt has no pin for {req.name} (pyproject: {line})"
        assert req.specifier.contains(pins[name], prereleases=True), (
            f"constraints.txt pins {req.name}=={pins[name]}, outside pyproject's {line}"
        )
