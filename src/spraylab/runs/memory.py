"""A run command's memory and collector: the collector paused while the command imports and
loads (:func:`pause_collector_until_run`), a finished run's memory handed back before anything
else is loaded (:func:`release_freed_memory`).

What a process does after a run (print the summary, load pyarrow to save the tables: about 38 MB
of peak RSS) should reuse the run's freed memory, not add to it (1024-host htsim permutation:
saving used to be the peak of the process, 147 MB with ``--out`` against 125 MB without;
docs/performance.md, Memory). The network is garbage once the run returns
(``spraylab.runs.experiment.run`` drops the pending events that held it), but it is a graph of
reference cycles the collector reaches only at a full collection, and the C allocator keeps
freed pages resident until asked to return them.
"""

from __future__ import annotations

import gc
from collections.abc import Callable


def _malloc_trim() -> Callable[[int], int] | None:
    """glibc's ``malloc_trim`` (man 3 malloc_trim: returns free heap pages to the system), or
    None where the C library has none (macOS, musl). Looked up among the symbols the process
    has loaded (``dlopen(NULL)``): ``ctypes.util.find_library`` runs ``ldconfig``, 20 ms."""
    import ctypes  # here: the CLI imports this module to start every run command

    try:
        return ctypes.CDLL(None).malloc_trim
    except (OSError, AttributeError):
        return None


def release_freed_memory() -> None:
    """Free the finished run's object graph (one full collection) and return the C heap's free
    pages to the system, so what is loaded next reuses them instead of adding to the peak."""
    gc.collect()
    trim = _malloc_trim()
    if trim is not None:
        trim(0)


_collector_paused = False


def pause_collector_until_run() -> None:
    """For a process that starts by importing and loading, then runs (``spraylab run``,
    ``compare``, ``demo``): no garbage collection until the run starts (:func:`resume_collector`).
    Imports and a scenario make next to no garbage, but their hundreds of thousands of objects
    set off collections that walk them: 10% of a 128-host run's CPU (docs/performance.md)."""
    global _collector_paused
    if gc.isenabled():
        gc.disable()
        _collector_paused = True


def resume_collector() -> None:
    """Undo :func:`pause_collector_until_run`, once (a no-op unless paused): what is loaded by
    now lives as long as the process, so it is frozen (``gc.freeze``) for the collections of the
    run not to walk it again, and the collector is back on for the run's reference cycles."""
    global _collector_paused
    if _collector_paused:
        _collector_paused = False
        gc.freeze()
        gc.enable()
