"""A result table as named columns, the form every engine's collector produces.

A run's tables are read far less often than they are saved: ``spraylab run --out`` and every sweep
point write them, a caller reads them as DataFrames now and then. So a table stays columns until
a caller reads it (:meth:`ColumnTable.frame`, pandas) and is written to Parquet straight from the
columns (:meth:`ColumnTable.write_parquet`, pyarrow): saving a run never imports pandas, whose
import costs a small run about a third of its CPU and 50 MB of memory (docs/performance.md).

Both paths type a column alike, so a saved table reads back (``pandas.read_parquet``) equal to
the DataFrame, dtypes included (``tests/test_result_columns.py``): a column with a declared
dtype (``int64``, ``float64``, ``bool``) gets it; any other is inferred from its values the way
pandas infers it (ints as int64, floats or ints mixed with floats as float64, strings as
strings, NaN as a missing value).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    import pandas as pd
    import pyarrow as pa

# the declared dtypes a column is converted to; any other is inferred from the values
_ARROW_TYPES = ("int64", "float64", "bool")


@dataclass(frozen=True)
class ColumnTable:
    """Columns in table order (lists or numpy arrays of equal length) and the pandas dtypes of
    those not inferred from their values."""

    columns: Mapping[str, Sequence[Any]] = field(default_factory=dict)
    dtypes: Mapping[str, str] = field(default_factory=dict)

    @classmethod
    def from_records(cls, rows: Sequence[Mapping[str, Any]], columns: Sequence[str]) -> ColumnTable:
        """The table of ``rows`` (one mapping per row, every key of ``columns``)."""
        return cls({name: [row[name] for row in rows] for name in columns})

    def compact(self) -> ColumnTable:
        """The same table with each column of numbers, bools or strings held as one numpy
        array (the array ``write_parquet`` makes of it anyway) instead of a list of objects: a
        finished run's tables outlive its network, and the objects of a list made while the
        network was alive would keep the allocator's arenas it freed resident. A column that
        does not convert (mixed values) stays as it is."""
        columns: dict[str, Sequence[Any]] = {}
        for name, values in self.columns.items():
            dtype = self.dtypes.get(name)
            try:
                array = np.asarray(values, dtype=dtype if dtype in _ARROW_TYPES else None)
            except (TypeError, ValueError, OverflowError):
                array = None
            columns[name] = values if array is None or array.dtype.kind == "O" else array
        return ColumnTable(columns, self.dtypes)

    def frame(self) -> pd.DataFrame:
        import pandas as pd

        # an array column as the list it was made from: pandas infers a list's dtype as before
        columns = {k: v.tolist() if isinstance(v, np.ndarray) else v for k, v in self.columns.items()}
        frame = pd.DataFrame(columns)
        return frame.astype(dict(self.dtypes)) if self.dtypes else frame

    def write_parquet(self, path: Path) -> None:
        import pyarrow as pa
        import pyarrow.parquet as pq

        arrays = {
            name: _arrow_array(name, values, self.dtypes.get(name)) for name, values in self.columns.items()
        }
        pq.write_table(pa.table(arrays), path)


def _arrow_array(name: str, values: Sequence[Any], dtype: str | None) -> pa.Array:
    """``values`` as an Arrow array typed as the module doc says, built from its buffers:
    ``pyarrow.array`` imports pandas on its first call (to ask whether the values are a pandas
    object), which is the cost this module exists to avoid."""
    import pyarrow as pa

    column = np.asarray(values, dtype=dtype if dtype in _ARROW_TYPES else None)
    n = len(column)
    kind = column.dtype.kind
    if n == 0 and dtype not in _ARROW_TYPES:
        return pa.nulls(0)  # what pandas writes for an empty column of unknown type
    if kind in "iu":
        return pa.Array.from_buffers(pa.int64(), n, [None, pa.py_buffer(column.astype(np.int64))])
    if kind == "f":
        data = column.astype(np.float64)
        return pa.Array.from_buffers(pa.float64(), n, [_validity(~np.isnan(data)), pa.py_buffer(data)])
    if kind == "b":
        return pa.Array.from_buffers(pa.bool_(), n, [None, pa.py_buffer(_bits(column))])
    items = column.tolist()
    if not all(item is None or isinstance(item, str) for item in items):
        raise TypeError(
            f"table column {name!r}: values of type {column.dtype}, not numbers, bools or strings"
        )
    present = np.array([item is not None for item in items], dtype=bool)
    if not present.any():
        return pa.nulls(n)
    encoded = [item.encode() if item is not None else b"" for item in items]
    offsets = np.zeros(n + 1, dtype=np.int32)
    np.cumsum([len(e) for e in encoded], out=offsets[1:])
    return pa.Array.from_buffers(
        pa.string(), n, [_validity(present), pa.py_buffer(offsets), pa.py_buffer(b"".join(encoded))]
    )


def _bits(flags: np.ndarray) -> bytes:
    return np.packbits(flags.astype(bool), bitorder="little").tobytes()


def _validity(present: np.ndarray) -> pa.Buffer | None:
    import pyarrow as pa

    return None if present.all() else pa.py_buffer(_bits(present))
