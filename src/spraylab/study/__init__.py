"""Studies as data: sweeps with labelled variants, claims judged against the store, and a page
rendered from a template whose every number comes from the store (``spraylab study``)."""

from importlib import import_module
from typing import Any

# Loaded on first use: ``spraylab --help`` builds the ``study`` sub-command from this package and
# must not pay for the schema or pandas.
_HOMES = {
    "Claim": "spraylab.study.definition",
    "Study": "spraylab.study.definition",
    "StudyData": "spraylab.study.data",
    "Verdict": "spraylab.study.claims",
    "evaluate": "spraylab.study.claims",
    "evaluate_all": "spraylab.study.claims",
}
__all__ = sorted(_HOMES)


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module 'spraylab.study' has no attribute {name!r}")
    return getattr(import_module(home), name)
