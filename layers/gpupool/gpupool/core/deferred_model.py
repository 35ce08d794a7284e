"""The base of gpupool's pydantic models: each model's validator is built on first use, once.

Role: `DeferredModel`. pydantic builds a model's schema and validator when its class is defined
unless `defer_build` is set. gpupool defines about 150 models and one function uses a fraction of
them, so building every one at import was most of a cold start's import time. With
`defer_build`, pydantic builds a model when it is first used; but a model that another model's
schema refers to first would be generated inline there, and generated again when it is used
itself. `DeferredModel` builds the model referred to first and hands out its built schema, so each
model is built once, the first time anything needs it. A schema error in a model therefore
surfaces at its first use, not at import: a test builds every model.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, GetCoreSchemaHandler
from pydantic_core import CoreSchema

__all__ = ["DeferredModel", "build_imported_models"]

# The models being built right now: asked for its own schema while being built, a model lets
# pydantic generate it (a model that refers to itself gets a reference, as pydantic does).
_building: set[type[BaseModel]] = set()


class DeferredModel(BaseModel):
    """A pydantic model built on first use, and referred to (not rebuilt) by models using it."""

    model_config = ConfigDict(defer_build=True)

    @classmethod
    def model_rebuild(
        cls,
        *,
        force: bool = False,
        raise_errors: bool = True,
        _parent_namespace_depth: int = 2,
        _types_namespace: Any = None,
    ) -> bool | None:
        _building.add(cls)
        try:
            return super().model_rebuild(
                force=force,
                raise_errors=raise_errors,
                # One frame deeper than pydantic counts: this one.
                _parent_namespace_depth=_parent_namespace_depth + 1 if _parent_namespace_depth > 0 else 0,
                _types_namespace=_types_namespace,
            )
        finally:
            _building.discard(cls)

    @classmethod
    def __get_pydantic_core_schema__(cls, source: Any, handler: GetCoreSchemaHandler) -> CoreSchema:
        if source is cls and not cls.__pydantic_complete__ and cls not in _building:
            cls.model_rebuild()  # referred to before it was built: build it now, once
        return handler(source)  # pydantic hands out a built model's own schema


def build_imported_models() -> int:
    """Build every DeferredModel imported so far (where an init phase is off the request path —
    SnapStart, provisioned concurrency — a function builds its models then, not at its first
    event); the number built."""
    built = 0
    pending: list[type[DeferredModel]] = [DeferredModel]
    while pending:
        for model in pending.pop().__subclasses__():
            pending.append(model)
            if not model.__pydantic_complete__ and model.model_rebuild() is not False:
                built += 1
    return built
