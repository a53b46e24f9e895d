"""Name -> class registries for the transport's pluggable parts (recovery modes, congestion
controls), shaped like the load-balancer registry: a part is one module of its package with a
``@register``ed class, and the registry imports every module of the package once, so adding a
part is adding a file."""

from __future__ import annotations

import importlib
import pkgutil
from typing import Any, Generic, TypeVar

T = TypeVar("T")


class Registry(Generic[T]):
    """Classes by their ``name`` attribute. ``key`` is the scenario key that selects one (for
    error messages); ``package`` is the package whose modules register the built-in ones."""

    def __init__(self, key: str, package: str) -> None:
        self.key = key
        self.package = package
        self.classes: dict[str, type[T]] = {}
        self._loaded = False

    def register(self, cls: type[T]) -> type[T]:
        name = getattr(cls, "name", "")
        if not name:
            raise ValueError(f"{cls.__name__} has no name")
        self.classes[name] = cls
        return cls

    def load_builtins(self) -> None:
        """Import every module of the package but ``base`` (once: a part registered at run
        time from elsewhere is kept as well)."""
        if self._loaded:
            return
        self._loaded = True
        package: Any = importlib.import_module(self.package)
        for module in pkgutil.iter_modules(package.__path__):
            if module.name != "base":
                importlib.import_module(f"{self.package}.{module.name}")

    def names(self) -> list[str]:
        self.load_builtins()
        return sorted(self.classes)

    def get(self, name: str) -> type[T]:
        """The class registered as ``name``; ValueError naming the allowed ones otherwise."""
        self.load_builtins()
        cls = self.classes.get(name)
        if cls is None:
            raise ValueError(f"{self.key} = {name!r}: allowed {', '.join(self.names())}")
        return cls


def optional_hook(obj: object, name: str, base: type) -> Any:
    """``obj.name`` bound, or None when ``obj``'s class does not override ``base.name``: the
    requester binds each optional hook once at creation and skips one that is None, so a hook
    a part does not need costs nothing per packet."""
    if getattr(type(obj), name) is getattr(base, name):
        return None
    return getattr(obj, name)


def recovery_modes() -> dict[str, str]:
    """``transport.recovery`` names -> one-line summary (validation, error hints, ``list``)."""
    from spraylab.transport.recovery.base import RECOVERIES

    return {name: RECOVERIES.classes[name].summary for name in RECOVERIES.names()}


def cc_modes() -> dict[str, str]:
    """``transport.cc`` names -> one-line summary."""
    from spraylab.transport.cc.base import CONGESTION_CONTROLS

    return {name: CONGESTION_CONTROLS.classes[name].summary for name in CONGESTION_CONTROLS.names()}


def fluid_refused_cc(name: str) -> str:
    """Why the fluid engines cannot stand in for congestion control ``name`` (one line naming
    the key, the value and what is allowed), or "" when they can: they run every flow at its
    converged max-min rate (docs/fluid.md), which a control marked ``fluid_engine = False``
    does not converge to."""
    from spraylab.transport.cc.base import CONGESTION_CONTROLS

    if CONGESTION_CONTROLS.get(name).fluid_engine:
        return ""
    allowed = [n for n in CONGESTION_CONTROLS.names() if CONGESTION_CONTROLS.classes[n].fluid_engine]
    return (
        f"transport.cc = {name!r}: the fluid engines run every flow at its max-min rate, which "
        f"{name} does not converge to; allowed with run.engine other than 'packet': "
        f"{', '.join(allowed)}; or set run.engine = 'packet'"
    )
