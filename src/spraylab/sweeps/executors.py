"""Where the runs of a sweep execute: a local process pool, or a Ray cluster.

Both take a scenario dict and give back an :class:`Outcome` (the Result, or the error with its
traceback text); the sweep driver writes outcomes to the store, so workers need no shared
filesystem. Each executor keeps at most ``slots`` runs in flight.
"""

from __future__ import annotations

import os
import signal
import socket
import threading
import time
import traceback
from collections.abc import Iterable
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass, field
from typing import Any, Protocol

from spraylab.metrics.result import Result
from spraylab.registry import Registry

# Executors by name (their ``name``), each built from the command line's jobs and address.
EXECUTORS: Registry[Any] = Registry("--executor", what="executor")


class ExecutorError(Exception):
    """An executor that cannot be started (e.g. Ray requested but not installed)."""


@dataclass
class Outcome:
    """What one run gave: ``result`` or ``error`` (type, message, traceback), plus timing."""

    result: Result | None = None
    error: dict[str, Any] | None = None
    timing: dict[str, Any] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return self.result is not None


def execute(scenario: dict[str, Any]) -> Outcome:
    """Run one scenario dict; never raises: an exception becomes ``Outcome.error``."""
    start = time.perf_counter()
    timing = {"host": socket.gethostname(), "pid": os.getpid()}
    try:
        from spraylab.model.scenario import validate
        from spraylab.runs.experiment import run

        # The sweep checked every point's size when it was planned (with its --allow-large).
        result = run(validate(scenario), check_size=False)
        timing["worker_s"] = round(time.perf_counter() - start, 3)
        return Outcome(result=result, timing=timing)
    except Exception as exc:
        timing["worker_s"] = round(time.perf_counter() - start, 3)
        return Outcome(error=error_record(exc), timing=timing)


def error_record(exc: BaseException, tb: str | None = None) -> dict[str, Any]:
    lines = str(exc).strip().splitlines()
    return {
        "type": type(exc).__name__,
        "message": lines[0] if lines else type(exc).__name__,
        "traceback": tb if tb is not None else "".join(traceback.format_exception(exc)),
    }


class Executor(Protocol):
    name: str
    slots: int

    def submit(self, scenario: dict[str, Any]) -> Any: ...

    def wait(self, handles: Iterable[Any], timeout: float) -> list[tuple[Any, Outcome]]: ...

    def shutdown(self, cancel: bool = False) -> None: ...


# --- local process pool -----------------------------------------------------------------


def _worker_init(parent: int) -> None:
    """In each pool worker: leave Ctrl-C to the parent, and exit if the parent dies (e.g. SIGKILL)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(0.2)
        os._exit(1)

    threading.Thread(target=watch, name="spraylab-parent-watch", daemon=True).start()


@EXECUTORS.register
class LocalExecutor:
    """``jobs`` worker processes (spawned: no state leaks from the parent into a run)."""

    name = "local"

    @classmethod
    def from_options(cls, jobs: int | None, address: str | None) -> LocalExecutor:
        if address:
            raise ExecutorError("--address: only meaningful with --executor ray")
        return cls(jobs or os.cpu_count() or 1)

    def __init__(self, jobs: int) -> None:
        self.slots = max(1, jobs)
        self._pool: ProcessPoolExecutor | None = None

    def _ensure_pool(self) -> ProcessPoolExecutor:
        if self._pool is None:
            import multiprocessing

            self._pool = ProcessPoolExecutor(
                max_workers=self.slots,
                mp_context=multiprocessing.get_context("spawn"),
                initializer=_worker_init,
                initargs=(os.getpid(),),
            )
        return self._pool

    def submit(self, scenario: dict[str, Any]) -> Future[Outcome]:
        try:
            return self._ensure_pool().submit(execute, scenario)
        except BrokenProcessPool:
            self._discard_pool()
            return self._ensure_pool().submit(execute, scenario)

    def wait(
        self, handles: Iterable[Future[Outcome]], timeout: float
    ) -> list[tuple[Future[Outcome], Outcome]]:
        done, _ = wait(list(handles), timeout=timeout, return_when=FIRST_COMPLETED)
        out = []
        for future in done:
            try:
                outcome = future.result()
            except BrokenProcessPool as exc:  # a worker died (killed, out of memory, crashed)
                self._discard_pool()
                outcome = Outcome(error=error_record(exc, tb=f"worker process died: {exc}\n"))
            except Exception as exc:
                outcome = Outcome(error=error_record(exc))
            out.append((future, outcome))
        return out

    def _discard_pool(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=False, cancel_futures=True)
            self._pool = None

    def shutdown(self, cancel: bool = False) -> None:
        pool, self._pool = self._pool, None
        if pool is None:
            return
        if cancel:
            processes = list(getattr(pool, "_processes", {}).values())  # stop runs in flight now
            pool.shutdown(wait=False, cancel_futures=True)
            for process in processes:
                process.terminate()
            for process in processes:
                process.join(timeout=5)
        else:
            pool.shutdown(wait=True)


# --- Ray --------------------------------------------------------------------------------


def _ray_execute(scenario: dict[str, Any]) -> Outcome:
    return execute(scenario)


@EXECUTORS.register
class RayExecutor:
    """Runs as Ray tasks (one CPU each). Without ``address`` a local Ray instance with ``jobs``
    CPUs is started (and stopped at the end); with one (``auto``, ``head:6379``,
    ``ray://head:10001``) that cluster is used, and its nodes need the same spraylab installed
    (a result whose scenario does not hash to the submitted key is recorded as a failure)."""

    name = "ray"

    @classmethod
    def from_options(cls, jobs: int | None, address: str | None) -> RayExecutor:
        return cls(jobs, address)

    def __init__(self, jobs: int | None, address: str | None = None) -> None:
        try:
            import ray
        except ImportError:
            raise ExecutorError(
                "--executor ray: Ray is not installed; install it with: pip install 'spraylab[ray]'"
            ) from None
        import logging

        self._ray = ray
        self._started = False
        if not ray.is_initialized():
            kwargs: dict[str, Any] = {
                "include_dashboard": False,
                "logging_level": logging.ERROR,
                "log_to_driver": False,
            }
            if address:
                _check_reachable(address)
                kwargs["address"] = address
            else:
                kwargs["num_cpus"] = max(1, jobs or os.cpu_count() or 1)
            where = f"the Ray cluster at {address!r}" if address else "a local Ray instance"
            try:
                ray.init(**kwargs)
            except (
                Exception
            ) as exc:  # Ray raises many kinds (ConnectionError, RuntimeError, TimeoutError, ...)
                raise ExecutorError(
                    f"--executor ray: cannot start or reach {where}: {_first_line(exc)}"
                ) from None
            self._started = True
        try:
            cpus = int(ray.cluster_resources().get("CPU", 1))
        except Exception as exc:
            self.shutdown()
            raise ExecutorError(
                f"--executor ray: the Ray instance started but does not answer: {_first_line(exc)}"
            ) from None
        self.slots = max(1, jobs or cpus)
        self._task = ray.remote(num_cpus=1)(_ray_execute)

    def submit(self, scenario: dict[str, Any]) -> Any:
        return self._task.remote(scenario)

    def wait(self, handles: Iterable[Any], timeout: float) -> list[tuple[Any, Outcome]]:
        ray = self._ray
        pending = list(handles)
        if not pending:
            return []
        done, _ = ray.wait(pending, num_returns=1, timeout=timeout)
        out = []
        for ref in done:
            try:
                outcome = ray.get(ref)
            except Exception as exc:  # the task's worker died, or Ray itself failed
                outcome = Outcome(error=error_record(exc))
            out.append((ref, outcome))
        return out

    def shutdown(self, cancel: bool = False) -> None:
        if self._started:
            self._ray.shutdown()
            self._started = False


def _first_line(exc: BaseException) -> str:
    lines = str(exc).strip().splitlines()
    return lines[0] if lines else type(exc).__name__


def _check_reachable(address: str) -> None:
    """Fail fast on a ``host:port`` nobody listens on (Ray itself retries for minutes)."""
    target = address.removeprefix("ray://")
    host, sep, port = target.rpartition(":")
    if not sep or not port.isdigit() or address in ("auto", "local"):
        return
    try:
        socket.create_connection((host, int(port)), timeout=5).close()
    except OSError as exc:
        raise ExecutorError(
            f"--address {address!r}: cannot reach a Ray cluster there ({exc.strerror or exc})"
        ) from None


def make_executor(name: str, jobs: int | None, address: str | None = None) -> Executor:
    cls = EXECUTORS.find(name)
    if cls is None:
        raise ExecutorError(EXECUTORS.unknown(name))
    return cls.from_options(jobs, address)
