"""Writes constraints.txt: the exact version of every package the test environment installs.

Run with the Python of an environment where ``pip install -e '.[test]'`` has been done (and the
tests pass): it walks the requirements of the project's dependencies and its ``test`` extra
through the installed packages' metadata and pins each one it reaches, so a later
``pip install -e '.[test]' -c constraints.txt`` (what .ci/run does) installs the same versions.

    .venv/bin/python .ci/constraints.py > constraints.txt
"""

from __future__ import annotations

import sys
import tomllib
from importlib import metadata
from pathlib import Path

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

ROOT = Path(__file__).resolve().parent.parent
EXTRAS = ("test",)


def declared() -> list[Requirement]:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    lines = list(project["dependencies"])
    for extra in EXTRAS:
        lines += project["optional-dependencies"][extra]
    return [Requirement(line) for line in lines]


def applies(req: Requirement, extras: set[str]) -> bool:
    if req.marker is None:
        return True
    # a requirement of an extra applies only when that extra was asked for
    return any(req.marker.evaluate({"extra": extra}) for extra in extras or {""})


def closure(roots: list[Requirement]) -> dict[str, str]:
    """Canonical name -> installed version of every package the roots need, transitively."""
    pinned: dict[str, str] = {}
    seen: set[tuple[str, frozenset[str]]] = set()
    todo = [(req, set()) for req in roots]
    while todo:
        req, parent_extras = todo.pop()
        if not applies(req, parent_extras):
            continue
        name = canonicalize_name(req.name)
        key = (name, frozenset(req.extras))
        if key in seen:
            continue
        seen.add(key)
        try:
            dist = metadata.distribution(req.name)
        except metadata.PackageNotFoundError:
            sys.exit(f"constraints: {req.name} is required ({req}) but not installed here")
        pinned[name] = dist.version
        todo += [(Requirement(line), set(req.extras)) for line in dist.requires or ()]
    return pinned


def main() -> None:
    pinned = closure(declared())
    print("# The test environment's exact versions: pip install -e '.[test]' -c constraints.txt")
    print("# Written by .ci/constraints.py from an environment where the tests pass; do not edit.")
    print(f"# Python {sys.version_info.major}.{sys.version_info.minor}")
    for name in sorted(pinned):
        print(f"{name}=={pinned[name]}")


if __name__ == "__main__":
    main()
