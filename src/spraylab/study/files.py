"""Study files: the studies packaged with spraylab (``src/spraylab/studies/*.toml``:
``validation``), how a name finds its file, and where a study's store goes by default."""

from __future__ import annotations

from importlib import resources
from pathlib import Path
from typing import Any


def is_study_file(path: Path) -> bool:
    """A TOML file with ``[[sweep]]`` tables is a study (a sweep file has ``[axes]``)."""
    import tomllib

    try:
        data = tomllib.loads(path.read_text())
    except (OSError, ValueError):
        return False
    return isinstance(data.get("sweep"), list)


def packaged_studies() -> list[str]:
    return sorted(
        p.name.removesuffix(".toml")
        for p in resources.files("spraylab.studies").iterdir()
        if p.name.endswith(".toml")
    )


def resolve_study(name: str | Path) -> Path:
    """A study file, or the name of a study packaged with spraylab (``validation``)."""
    from spraylab.model.errors import ScenarioError

    path = Path(name)
    if path.is_file():
        return path
    packaged = resources.files("spraylab.studies") / f"{name}.toml"
    if packaged.is_file():
        return Path(str(packaged))
    raise ScenarioError(
        [f"study {str(name)!r}: no such file or packaged study; packaged: {', '.join(packaged_studies())}"]
    )


def default_store(study: Any) -> Path:
    """``out/study-NAME`` (``-PROFILE`` appended for a profile's runs)."""
    suffix = f"-{study.profile}" if study.profile else ""
    return Path("out") / f"study-{study.name}{suffix}"
