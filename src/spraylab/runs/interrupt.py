"""Ctrl-C during a run: stop the event loop cleanly and keep what was simulated.

A KeyboardInterrupt raised at an arbitrary bytecode would leave an event half-processed (a packet
dequeued but not forwarded) and the run's counters inconsistent, so nothing could be saved. While
the packet engine's event loop runs, :class:`StopOnInterrupt` instead only records the SIGINT;
the simulator calls it (as its progress function) every 2^16 events, between two events, and it
then ends the run there, as an event or wall budget does. The result is *incomplete*
(``completed = false``, ``stop_reason = "interrupted"``, unfinished flows censored) and the
command line saves it. A second Ctrl-C, or one outside the event loop (building the fabric,
writing files), interrupts at once as Python does."""

from __future__ import annotations

import signal
import sys
import threading
from types import FrameType, TracebackType
from typing import TYPE_CHECKING, Any

from spraylab.engine.simulator import StopSimulation

if TYPE_CHECKING:
    from spraylab.engine.simulator import Simulator
    from spraylab.net.network import Network

INTERRUPTED = "interrupted"  # the stop reason of a run ended by Ctrl-C


class StopOnInterrupt:
    """A progress function for :meth:`spraylab.runs.experiment.Simulation.run` that forwards to
    ``progress`` and ends the run at the first checkpoint after a SIGINT. Use as a context manager
    (it installs its SIGINT handler in the main thread and restores the previous one on exit)."""

    def __init__(self, progress: Any = None, notice: Any = None) -> None:
        self.progress = progress
        self.requested = False  # a SIGINT arrived while the event loop ran
        self._armed = False  # the event loop is running (bound to a network, not yet finished)
        self._notice = notice if notice is not None else sys.stderr
        self._previous: Any = None

    # --- the progress protocol (spraylab.runs.experiment.Simulation.run) ------------------------
    def bind(self, net: Network) -> None:
        self._armed = True
        bind = getattr(self.progress, "bind", None)
        if bind is not None:
            bind(net)

    def __call__(self, sim: Simulator, elapsed_s: float) -> None:
        if self.requested:
            self._armed = False
            raise StopSimulation(INTERRUPTED)
        if self.progress is not None:
            self.progress(sim, elapsed_s)

    # --- the SIGINT handler -------------------------------------------------------------
    def _on_sigint(self, signum: int, frame: FrameType | None) -> None:
        if not self._armed or self.requested:  # nothing to stop cleanly, or asked twice
            raise KeyboardInterrupt
        self.requested = True
        print(
            "interrupt: stopping the run at its next checkpoint to save what was simulated (Ctrl-C again to abort)",
            file=self._notice,
            flush=True,
        )

    def __enter__(self) -> StopOnInterrupt:
        if threading.current_thread() is threading.main_thread():
            self._previous = signal.signal(signal.SIGINT, self._on_sigint)
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self._armed = False
        if self._previous is not None:
            signal.signal(signal.SIGINT, self._previous)
            self._previous = None
