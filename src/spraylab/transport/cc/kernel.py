"""The compiled tier of congestion control (docs/core.md, "Congestion controls").

A built-in control's per-packet rules are a Cython kernel in the core (``core/cc_*.pxi``), a
subclass of :class:`CcKernel`; its registered class here (``Nscc``, ``Dcqcn``, ...) subclasses
that kernel and :class:`~spraylab.transport.cc.base.CongestionControl`, keeps the name, summary,
parameter section and the set-up that runs once per queue pair, and the queue pair calls the
kernel's C hooks directly (:func:`runs_compiled`). A control written in Python, or a Python
subclass that overrides a hook, is called through its Python methods as before.
"""

from __future__ import annotations

from spraylab.core._core import CC_HOOKS, CcKernel, runs_compiled

__all__ = ["CC_HOOKS", "CcKernel", "runs_compiled"]
