"""Fields holding models validated when they were made: checked by type, not validated again.

Role: `Prevalidated(*types)`, an `Annotated` marker for a `tuple[Model, ...]` field of a container
the code assembles from models it already has (a plan's actions, a pool snapshot's objects). The
field takes any sequence of instances of `types` and keeps it as a tuple; anything else is
refused with the item and the type it has. pydantic then builds no schema for the item types: a
plan's actions are a union of every action kind, each with its own nested models, and building
all of that on a function's first plan only to learn that the items are what their types say
would cost every cold start. Each item serializes as its own model does.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from pydantic import GetCoreSchemaHandler
from pydantic_core import CoreSchema, core_schema

__all__ = ["Prevalidated"]


class Prevalidated:
    """`Annotated[tuple[X, ...], Prevalidated(X)]`: a tuple of X instances, checked by type.
    `what` names the items in errors (default: the types' names)."""

    def __init__(self, *types: type, what: str | None = None) -> None:
        if not types:
            raise TypeError("Prevalidated needs the item types")
        self.types = types
        self._names = what or " or ".join(kind.__name__ for kind in types)

    def __get_pydantic_core_schema__(self, source: Any, handler: GetCoreSchemaHandler) -> CoreSchema:
        return core_schema.no_info_plain_validator_function(self._validate)

    def _validate(self, value: object) -> tuple[Any, ...]:
        if isinstance(value, str | bytes | Mapping) or not isinstance(value, Sequence | set | frozenset):
            raise ValueError(f"expected a sequence of {self._names}, got {type(value).__name__}")
        items = tuple(value)
        for index, item in enumerate(items):
            if not isinstance(item, self.types):
                raise ValueError(f"item {index}: expected {self._names}, got {type(item).__name__}")
        return items
