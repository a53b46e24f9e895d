"""A sweep as pandas DataFrames, for notebooks: :func:`load_sweep`.

Every table carries the run's ``key``, one column per sweep axis (named by the axis, e.g.
``lb.scheme``, holding the value as the sweep file gives it: ``run.seed`` an int, ``workload.load``
a float, ``lb.scheme`` a string; a table value, such as an ``lb`` variant, its label) and ``variant``: the labels of every axis but the seed,
joined by ``/`` (``ecmp/gbn``), which is what one compares across seeds. Only runs whose manifest
verifies are read (as in :mod:`spraylab.report`); failed, missing or corrupt runs appear in
``runs`` with their status and nowhere else.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pandas as pd

if TYPE_CHECKING:
    from spraylab.sweeps.sweep import StoredPoint

SEED_AXIS = "run.seed"  # spraylab.sweeps.sweep.SEED_AXIS (not imported: `import spraylab` stays light)


@dataclass
class SweepFrames:
    """The tables of a sweep (see the module doc for the shared columns)."""

    axes: list[str]
    runs: pd.DataFrame  # one row per point: status and the summary's scalar fields
    flows: pd.DataFrame
    links: pd.DataFrame
    groups: pd.DataFrame
    timeseries: dict[str, pd.DataFrame] = field(default_factory=dict)  # ports, flows, switches


def _variant(point: StoredPoint) -> str:
    labels = [v for k, v in point.labels.items() if k != SEED_AXIS]
    return "/".join(labels) if labels else "all"


def axis_value(point: StoredPoint, axis: str) -> Any:
    """The point's value on ``axis`` with its type (the store's index keeps the sweep file's JSON
    types): a number stays a number, so that columns sort and compare numerically; a table
    value (an ``lb`` variant) is shown by its label."""
    value = point.values.get(axis)
    return value if isinstance(value, (bool, int, float, str)) else point.labels[axis]


def _tag(frame: pd.DataFrame, point: StoredPoint, axes: list[str]) -> pd.DataFrame:
    """``frame`` with the point's key, axis values and variant as leading columns."""
    tags = {"key": point.key, **{a: axis_value(point, a) for a in axes}, "variant": _variant(point)}
    tagged = frame.copy()
    for i, (name, value) in enumerate(tags.items()):
        tagged.insert(i, name, value, allow_duplicates=name in frame.columns)
    return tagged


def load_sweep(directory: str | Path) -> SweepFrames:
    """Read a sweep's results directory (``spraylab sweep --out DIR``) into DataFrames."""
    from spraylab.results.store import Store
    from spraylab.sweeps.sweep import stored_points

    store = Store(directory)
    points = stored_points(store)
    axes = [axis["key"] for axis in store.read_index()["axes"]]
    runs: list[dict[str, Any]] = []
    parts: dict[str, list[pd.DataFrame]] = {"flows": [], "links": [], "groups": []}
    series: dict[str, list[pd.DataFrame]] = {}
    for p in points:
        row: dict[str, Any] = {
            "key": p.key,
            **{a: axis_value(p, a) for a in axes},
            "variant": _variant(p),
            "status": p.status,
        }
        if p.status in ("done", "incomplete"):
            result = store.load(p.key)
            row.update(
                {
                    k: v
                    for k, v in result.summary.items()
                    if isinstance(v, (int, float, str, bool)) or v is None
                }
            )
            for name in parts:
                parts[name].append(_tag(getattr(result, name), p, axes))
            if result.timeseries is not None:
                for name in ("ports", "flows", "switches"):
                    frame = getattr(result.timeseries, name)
                    if name in ("ports", "switches"):  # categories differ per run: plain strings pool
                        frame = frame.astype({"link" if name == "ports" else "switch": str})
                    series.setdefault(name, []).append(_tag(frame, p, axes))
        runs.append(row)

    def concat(frames: list[pd.DataFrame]) -> pd.DataFrame:
        frames = [f for f in frames if not f.empty]
        return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()

    return SweepFrames(
        axes,
        pd.DataFrame(runs),
        concat(parts["flows"]),
        concat(parts["links"]),
        concat(parts["groups"]),
        {name: concat(frames) for name, frames in series.items()},
    )
