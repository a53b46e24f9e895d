"""Registries of section kinds: ``topology.kind`` and ``workload.kind`` (a
:class:`spraylab.registry.Registry` of section models).

A kind is one module that defines a :class:`~spraylab.model.types.Section` subclass with
``kind: Literal["name"] = "name"`` and decorates it with its registry's :meth:`KindRegistry.register`.
The scenario schema validates a section by looking its ``kind`` up here at validation time, so a
kind registered after :mod:`spraylab.model.scenario` was imported (a plug-in, a test) is usable at once;
error hints and ``spraylab list`` read the same registry.
"""

from __future__ import annotations

from typing import Annotated, Any, TypeVar

from pydantic import SerializeAsAny, ValidationError, ValidatorFunctionWrapHandler, WrapValidator
from pydantic_core import InitErrorDetails, PydanticCustomError

from spraylab.model.types import Section, one_of
from spraylab.registry import Registry

S = TypeVar("S", bound=Section)


def _kind_of(cls: type[Section]) -> str:
    field = cls.model_fields.get("kind")
    kind = field.default if field is not None else None
    if not isinstance(kind, str) or not kind:
        raise TypeError(f'{cls.__name__} needs kind: Literal["<name>"] = "<name>"')
    return kind


class KindRegistry(Registry[type[S]]):
    """The kinds of one section (``what``: "topology", "workload"), all subclasses of ``base``.

    ``package``'s modules are imported once, on first use, to register the built-in kinds;
    ``default_kind`` is the kind of a section given without ``kind`` (None: ``kind`` is required).
    """

    def __init__(self, what: str, base: type[S], package: str, default_kind: str | None = None) -> None:
        super().__init__(f"{what}.kind", package, what="kind", name_of=_kind_of, skip=())
        self.section = what
        self.base = base
        self.default_kind = default_kind

    def register(self, cls: Any, /) -> Any:
        """Class decorator: make ``cls`` the section of its ``kind``."""
        if not (isinstance(cls, type) and issubclass(cls, self.base)):
            raise TypeError(f"{cls!r} is not a {self.base.__name__}")
        return super().register(cls)

    @property
    def models(self) -> dict[str, type[S]]:
        return self.classes

    def kinds(self) -> list[str]:
        return self.names()

    def model_of(self, raw: object) -> type[S] | None:
        """The section model a raw table (dict) selects, or None if it names no known kind."""
        if not isinstance(raw, dict):
            return None
        return self.find(raw.get("kind", self.default_kind))

    def allowed(self) -> str:
        return one_of(self.kinds())

    # --- validation -------------------------------------------------------------------------
    def field_type(self) -> Any:
        """The annotation of a scenario field holding one section of this registry: validated by
        kind (errors are located at the section's own keys, without a union tag) and dumped with
        the fields of its own kind."""
        return Annotated[SerializeAsAny[self.base], WrapValidator(self._validate)]

    def _validate(self, value: Any, handler: ValidatorFunctionWrapHandler) -> Any:
        if isinstance(value, self.base) and self.models.get(value.kind) is type(value):
            return value
        if not isinstance(value, dict):
            raise _error("section_type", f"must be a table (a [{self.section}] section)", value, ())
        if "kind" not in value and self.default_kind is None:
            raise _error("missing_kind", f"missing 'kind'; allowed: {self.allowed()}", value, ())
        kind = value.get("kind", self.default_kind)
        model = self.find(kind)
        if model is None:
            raise _error("unknown_kind", f"unknown kind; allowed: {self.allowed()}", kind, ("kind",))
        return model.model_validate(value)


def _error(kind: str, message: str, value: object, loc: tuple[str, ...]) -> ValidationError:
    # A ValidationError raised inside a validator joins the outer report with ``loc`` appended to
    # the field's location, so the error line names ``topology.kind`` rather than ``topology``.
    detail: InitErrorDetails = {"type": PydanticCustomError(kind, message), "loc": loc, "input": value}
    return ValidationError.from_exception_data("section", [detail])
