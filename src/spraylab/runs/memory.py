"""Handing a finished run's memory back before anything else is loaded.

What a process does after a run (print the summary, load pyarrow to save the tables: about 38 MB
of peak RSS) should reuse the run's freed memory, not add to it (1024-host htsim permutation:
saving used to be the peak of the process, 147 MB with ``--out`` against 125 MB without;
docs/performance.md, Memory). The network is garbage once the run returns
(``spraylab.runs.experiment.run`` drops the pending events that held it), but it is a graph of
reference cycles the collector reaches only at a full collection, and the C allocator keeps
freed pages resident until asked to return them.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import gc
from collections.abc import Callable


def _malloc_trim() -> Callable[[int], int] | None:
    """glibc's ``malloc_trim`` (man 3 malloc_trim: returns free heap pages to the system), or
    None where the C library has none (macOS, musl)."""
    name = ctypes.util.find_library("c")
    if name is None:
        return None
    try:
        return ctypes.CDLL(name).malloc_trim
    except (OSError, AttributeError):
        return None


def release_freed_memory() -> None:
    """Free the finished run's object graph (one full collection) and return the C heap's free
    pages to the system, so what is loaded next reuses them instead of adding to the peak."""
    gc.collect()
    trim = _malloc_trim()
    if trim is not None:
        trim(0)
