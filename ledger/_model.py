"""The generic event mechanism: a frozen pydantic base class and a versioned registry.

The ledger knows nothing of what events mean. An application declares one frozen model
per event type with a literal ``type`` tag and a ``schema_version``, registers it, and
the ledger stores ``(type, version, payload JSON)``. Old versions are upcast on read by
registered functions, never rewritten on disk.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from typing import Any, ClassVar, TypeVar

from pydantic import BaseModel, ConfigDict

from aka_ledger._errors import SchemaError


class EventModel(BaseModel):
    """Base of every event payload.

    Subclasses declare ``type: Literal["Name"] = "Name"`` and may raise
    ``schema_version`` when their fields change (registering an upcaster from the old
    version). Instances are frozen: an event is a fact, and facts do not change.

    A subclass sets ``durable = True`` when an append of it must be on stable storage
    before :meth:`Ledger.append` returns (an application's intents and results): the
    type decides once, so no appending call site has to remember it.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    schema_version: ClassVar[int] = 1
    durable: ClassVar[bool] = False
    type: str

    def digests(self) -> tuple[str, ...]:
        """Content digests this event references (``b3:...`` values of its fields).

        Found by walking the payload, so a new event type needs no registration for
        ``verify`` to check that every blob it points at exists.
        """
        found: list[str] = []
        _collect_digests(self.model_dump(mode="json"), found)
        return tuple(dict.fromkeys(found))


def _collect_digests(value: Any, out: list[str]) -> None:
    if isinstance(value, str):
        if value.startswith("b3:") and len(value) == 67:
            out.append(value)
    elif isinstance(value, dict):
        for v in value.values():
            _collect_digests(v, out)
    elif isinstance(value, list | tuple):
        for v in value:
            _collect_digests(v, out)


E = TypeVar("E", bound=type[EventModel])
Upcaster = Callable[[dict[str, Any]], dict[str, Any]]


class EventRegistry:
    """Maps ``type`` tags to models, and ``(type, old version)`` to upcasters."""

    def __init__(self, models: Iterable[type[EventModel]] = ()) -> None:
        self._models: dict[str, type[EventModel]] = {}
        self._upcasters: dict[tuple[str, int], Upcaster] = {}
        for model in models:
            self.register(model)

    def register(self, model: E) -> E:
        """Register an event model (usable as a class decorator)."""
        cls: type[EventModel] = model
        tag = cls.model_fields["type"].default
        if not isinstance(tag, str) or not tag:
            raise TypeError(f"{model.__name__} needs a literal default for its `type` field")
        existing = self._models.get(tag)
        if existing is not None and existing is not model:
            raise TypeError(f"event type {tag!r} registered twice ({existing.__name__})")
        self._models[tag] = model
        return model

    def upcaster(self, tag: str, from_version: int) -> Callable[[Upcaster], Upcaster]:
        """Register a function turning a ``from_version`` payload into the next version."""

        def deco(fn: Upcaster) -> Upcaster:
            self._upcasters[(tag, from_version)] = fn
            return fn

        return deco

    def __contains__(self, tag: str) -> bool:
        return tag in self._models

    def types(self) -> dict[str, type[EventModel]]:
        """All registered models by tag."""
        return dict(self._models)

    def model(self, tag: str) -> type[EventModel]:
        """The model for ``tag``; raises :class:`SchemaError` for an unknown tag."""
        try:
            return self._models[tag]
        except KeyError:
            raise SchemaError(
                f"unknown event type {tag!r}",
                fix="upgrade aka, or register the event type before reading",
            ) from None

    def parse(self, tag: str, version: int, payload: str | dict[str, Any]) -> EventModel:
        """Decode a stored payload, upcasting old versions step by step.

        Raises:
            SchemaError: the tag is unknown, or the stored version is newer than this
                code knows (written by a newer aka), or an upcaster is missing.
        """
        model = self.model(tag)
        data: dict[str, Any] = json.loads(payload) if isinstance(payload, str) else dict(payload)
        current = model.schema_version
        if version > current:
            raise SchemaError(
                f"event type {tag!r} has schema version {version}, newer than this code's "
                f"{current}",
                fix="upgrade aka to read this ledger",
            )
        while version < current:
            step = self._upcasters.get((tag, version))
            if step is None:
                raise SchemaError(
                    f"no upcaster for {tag!r} from version {version}",
                    fix="register one with EventRegistry.upcaster",
                )
            data = step(data)
            version += 1
        data.setdefault("type", tag)
        return model.model_validate(data)
