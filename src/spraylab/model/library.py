"""The scenarios shipped with spraylab and how a name finds a file: presets
(``src/spraylab/presets/*.toml``: ``demo``, ``reps``, ...) and examples (``example:NAME``, the
files of the repository's ``scenarios/``, installed with the package).

:func:`load_scenario` is what every command's ``SCENARIO`` argument means: a TOML file, a
preset name, or ``example:NAME``, with dotted overrides applied. A name that finds nothing
raises :class:`~spraylab.model.errors.ScenarioError`, one line listing what exists.
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Any

from spraylab.model.errors import ScenarioError

if TYPE_CHECKING:
    from spraylab.model.scenario import Scenario

EXAMPLE_PREFIX = "example:"


def preset_names() -> list[str]:
    """The presets, usable in place of a scenario file (``spraylab run demo``)."""
    return sorted(
        p.name.removesuffix(".toml")
        for p in resources.files("spraylab.presets").iterdir()
        if p.name.endswith(".toml")
    )


def examples_dir() -> Path:
    """The example scenario files shipped in the package (the repository's scenarios/)."""
    return Path(str(resources.files("spraylab") / "scenarios"))


def example_names(sweeps: bool = False) -> list[str]:
    """``core/permutation_ecmp``, ...: scenario files (or, with ``sweeps``, sweep files)."""
    root = examples_dir()
    names = [p.relative_to(root).with_suffix("").as_posix() for p in root.rglob("*.toml")]
    return sorted(n for n in names if n.startswith("sweeps/") == sweeps)


def example_path(name: str, sweeps: bool = False) -> Path:
    """The file of example ``name`` (with or without ``example:`` and ``.toml``)."""
    stem = name.removeprefix(EXAMPLE_PREFIX).removesuffix(".toml")
    if stem not in example_names(sweeps):
        kind = "sweep" if sweeps else "scenario"
        raise ScenarioError(
            [
                f"{name!r}: no such example {kind}; examples: "
                + ", ".join(EXAMPLE_PREFIX + n for n in example_names(sweeps))
            ]
        )
    return examples_dir() / f"{stem}.toml"


def example_summary(name: str) -> str:
    """The first comment line of an example's file: what the example is."""
    path = example_path(name, sweeps=name.removeprefix(EXAMPLE_PREFIX).startswith("sweeps/"))
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.startswith("#") and line.strip("# ").strip():
            return line.strip("# ").strip()
        if line.strip() and not line.startswith("#"):
            break
    return ""


def scenario_path(source: str) -> Path:
    """The file ``source`` names: ``example:NAME``, a path, or a preset (a path that exists wins
    over a preset of the same name)."""
    if source.startswith(EXAMPLE_PREFIX):
        return example_path(source)
    path = Path(source)
    if not path.exists() and source in preset_names():
        path = Path(str(resources.files("spraylab.presets") / f"{source}.toml"))
    if not path.exists():
        raise ScenarioError(
            [f"scenario {source!r}: no such file or preset; presets: {', '.join(preset_names())}"]
        )
    return path


def sweep_path(source: str | Path) -> Path:
    """A sweep file: ``example:sweeps/NAME`` or a path (read as given)."""
    if str(source).startswith(EXAMPLE_PREFIX):
        return example_path(str(source), sweeps=True)
    return Path(source)


def load_scenario(source: str, overrides: dict[str, Any] | None = None) -> Scenario:
    """The scenario ``source`` names (a TOML file, a preset or ``example:NAME``) with dotted
    ``overrides`` applied (``{"lb.scheme": "rps", "run.seed": 2}``). ``run.allow_large = True``
    among them lets the files the scenario names be read beyond the size guard too."""
    from spraylab.model.scenario import Scenario

    overrides = overrides or {}
    allow_large = overrides.get("run.allow_large") is True  # before the files are read
    scenario = Scenario.load(scenario_path(source), allow_large)
    return scenario.with_overrides(overrides) if overrides else scenario
