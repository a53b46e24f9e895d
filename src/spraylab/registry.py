"""One registry mechanism for everything spraylab picks by name.

A :class:`Registry` maps names to entries (classes or functions). Its built-in entries are the
modules of one package, each registering itself on import: looking a name up imports the
package's module of that name (a built-in lives in the module it names), and listing the
names, or a name no module is called by, imports them all once, so adding a load-balancing
scheme, a congestion control, a recovery mode, a topology or workload kind, a table format, an
export layout, an import tool or a link-event action is adding one file to its package. A name
nobody registered is refused in one line that names the allowed ones.

The registries: ``lb.scheme`` (:data:`spraylab.lb.base.REGISTRY`), ``transport.cc``
(:data:`spraylab.transport.cc.base.CONGESTION_CONTROLS`), ``transport.recovery``
(:data:`spraylab.transport.recovery.base.RECOVERIES`), ``topology.kind`` and ``workload.kind``
(:class:`spraylab.model.kinds.KindRegistry`: section models, validated by kind), ``--format`` of
result tables (:data:`spraylab.table_formats.TABLE_FORMATS`), ``spraylab export --format``
(:data:`spraylab.formats.exports.EXPORT_LAYOUTS`), ``spraylab import`` tools
(:data:`spraylab.formats.importers.IMPORT_TOOLS`), ``topology.events[].action``
(:data:`spraylab.net.link_events.LINK_ACTIONS`), study metrics and analyses.
"""

from __future__ import annotations

import importlib
import importlib.util
import pkgutil
import sys
from collections.abc import Callable, Iterator, MutableMapping
from typing import Any, Generic, TypeVar, overload

T = TypeVar("T")

_MISSING: Any = object()


class RegistryError(ValueError):
    """An unknown name: one line naming the key, the value and the allowed names."""


class Registry(MutableMapping[str, T], Generic[T]):
    """Entries by name.

    ``key`` is what selects an entry (a scenario key or a command-line option: ``lb.scheme``,
    ``--format``), ``what`` what an entry is (``scheme``), both for the error line;
    ``package``'s modules (but ``skip``) register the built-in entries: a lookup imports the
    module of the name it looks up, anything else all of them, once; ``name_of`` reads an
    entry's own name (default: its ``name`` attribute), for ``@registry.register`` without a
    name. A mapping: ``name in registry``, ``registry[name]``, iteration in name order, and
    (for tests that add entries and put the registry back) ``registry[name] = entry``, ``del``,
    ``clear``, ``update``; ``get`` refuses an unknown name, ``find`` returns None for it."""

    def __init__(
        self,
        key: str,
        package: str | None = None,
        *,
        what: str = "",
        name_of: Callable[[T], str] | None = None,
        skip: tuple[str, ...] = ("base",),
    ) -> None:
        self.key = key
        self.what = what or key.rsplit(".", 1)[-1].lstrip("-")
        self.package = package
        self.skip = skip
        self.name_of = name_of or (lambda entry: getattr(entry, "name", ""))
        self.classes: dict[str, T] = {}  # the entries (their historical name: most are classes)
        self._loaded = package is None

    # --- registering --------------------------------------------------------------------------
    @overload
    def register(self, entry: T, /) -> T: ...
    @overload
    def register(self, name: str, /) -> Callable[[T], T]: ...
    def register(self, entry: Any, /) -> Any:
        """``@registry.register`` (the entry names itself) or ``@registry.register("name")``."""
        if isinstance(entry, str):
            name = entry

            def decorate(obj: T) -> T:
                self._add(name, obj)
                return obj

            return decorate
        self._add(self.name_of(entry), entry)
        return entry

    def _add(self, name: str, entry: T) -> None:
        if not isinstance(name, str) or not name:
            raise ValueError(
                f"{getattr(entry, '__name__', entry)!r} has no name to register as a {self.what}"
            )
        self.classes[name] = entry

    def unregister(self, name: str) -> None:
        del self.classes[name]

    def load_builtins(self) -> None:
        """Import every module of the package (once; entries registered from elsewhere stay)."""
        if self._loaded:
            return
        self._loaded = True
        package: Any = importlib.import_module(str(self.package))
        for module in pkgutil.iter_modules(package.__path__):
            if module.name not in self.skip:
                importlib.import_module(f"{self.package}.{module.name}")

    def _load_own_module(self, name: str) -> None:
        """Import the package's module named ``name``, if it has one: a built-in entry lives in
        the module of its name, so a run looking up one scheme or kind does not import the
        others (all of ``lb``'s took 12 ms of every process)."""
        if not name.isidentifier() or name in self.skip:
            return
        module = f"{self.package}.{name}"
        if module not in sys.modules and importlib.util.find_spec(module) is None:
            return
        importlib.import_module(module)

    # --- looking up ---------------------------------------------------------------------------
    def names(self) -> list[str]:
        self.load_builtins()
        return sorted(self.classes)

    def find(self, name: object) -> T | None:
        """The entry registered as ``name``, or None: from its own module when one has that
        name, else after importing them all."""
        if not isinstance(name, str):
            return None
        if not self._loaded:
            self._load_own_module(name)
            if name not in self.classes:
                self.load_builtins()
        return self.classes.get(name)

    def get(self, name: str, default: Any = _MISSING) -> T:  # type: ignore[override]
        """The entry registered as ``name``; :class:`RegistryError` naming the allowed ones
        otherwise (or ``default``, when given, as ``dict.get`` would)."""
        entry = self.find(name)
        if entry is None:
            if default is not _MISSING:
                return default
            raise RegistryError(self.unknown(name))
        return entry

    def unknown(self, name: object) -> str:
        """The one-line error for ``name``."""
        # a scenario key reads `lb.scheme = 'x'`, a command-line option `--format 'x'`
        given = f"{self.key} {name!r}" if self.key.startswith("-") else f"{self.key} = {name!r}"
        return f"{given}: unknown {self.what}; allowed: {', '.join(self.names())}"

    def __getitem__(self, name: str) -> T:
        entry = self.find(name)
        if entry is None:
            raise KeyError(name)
        return entry

    def __setitem__(self, name: str, entry: T) -> None:
        self._add(name, entry)

    def __delitem__(self, name: str) -> None:
        del self.classes[name]

    def __contains__(self, name: object) -> bool:
        return self.find(name) is not None

    def __iter__(self) -> Iterator[str]:
        return iter(self.names())

    def __len__(self) -> int:
        self.load_builtins()
        return len(self.classes)

    def __repr__(self) -> str:
        return f"Registry({self.key!r}: {', '.join(self.classes)})"


def __getattr__(name: str) -> Any:
    # The section-kind registry lives with the scenario schema's validation machinery (pydantic);
    # importing it from here keeps working for code written before the split.
    if name == "KindRegistry":
        from spraylab.model.kinds import KindRegistry

        return KindRegistry
    raise AttributeError(f"module 'spraylab.registry' has no attribute {name!r}")
