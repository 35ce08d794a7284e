"""Reading a listed kind item by item: one unreadable object is skipped, never the whole list.

Role: `read_each(model, items, kind=…, report=…)` parses every listed item; an item that does
not fit its model (a field another version of TensorFusion writes differently, a hand-edited
typo) is logged with the fields that are wrong, reported (the caller records a Warning Event
on it) and left out, so every other pool is still planned and scheduled. `read_page(model,
raw, …)` reads one page of a list straight from the response bytes (pydantic's JSON parser:
no intermediate dicts of the fields the model ignores) and falls back to `read_each` only for
a page with an unreadable item; it also returns the page's list metadata (`ListMeta`: the
`continue` token and the list's resourceVersion).

Must not: raise for a bad item, retry, or record events itself (the caller's `report` does).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Iterable, Mapping
from functools import cache
from typing import Any, TypeVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError, create_model

from gpupool.core.model.unreadable import UnreadableObject, unreadable_object

__all__ = ["ListMeta", "list_meta", "read_each", "read_page"]

log = logging.getLogger(__name__)

Model = TypeVar("Model", bound=BaseModel)


def read_each(
    model: type[Model],
    items: Iterable[Mapping[str, Any]],
    *,
    kind: str,
    report: Callable[[UnreadableObject], None],
) -> list[Model]:
    """The items that fit `model`; each other one is logged, reported and skipped."""
    readable: list[Model] = []
    for item in items:
        try:
            readable.append(model.model_validate(item))
        except ValidationError as error:
            unreadable = unreadable_object(item, error, kind=kind)
            log.warning(
                json.dumps(
                    {
                        "action": "skip_unreadable",
                        "kind": unreadable.kind,
                        "name": unreadable.name,
                        "namespace": unreadable.namespace,
                        "message": unreadable.message,
                    }
                )
            )
            try:
                report(unreadable)
            except Exception as exc:  # best effort: the Event is a courtesy, the skip is the point
                log.warning(json.dumps({"action": "report_unreadable_failed", "error": str(exc)}))
    return readable


class ListMeta(BaseModel):
    """A list's metadata: the `continue` token (None or empty on the last page) and the
    resourceVersion the list was served at."""

    model_config = ConfigDict(extra="ignore", populate_by_name=True)

    continue_: str | None = Field(default=None, alias="continue")
    resource_version: str = Field(default="", alias="resourceVersion")


@cache
def _page_model(model: type[BaseModel]) -> type[BaseModel]:
    """`{metadata: {continue}, items: [model]}`, everything else in the list envelope ignored."""
    return create_model(
        f"{model.__name__}Page",
        __config__=ConfigDict(extra="ignore"),
        metadata=(ListMeta, Field(default_factory=ListMeta)),
        items=(list[model] | None, None),  # type: ignore[valid-type, arg-type]
    )


def list_meta(payload: Mapping[str, Any]) -> ListMeta:
    """The list metadata of a decoded list."""
    return ListMeta.model_validate(payload.get("metadata") or {})


def read_page(
    model: type[Model],
    raw: bytes,
    *,
    kind: str,
    report: Callable[[UnreadableObject], None],
) -> tuple[list[Model], ListMeta]:
    """The readable items of one list page and its list metadata (`continue`, resourceVersion)."""
    try:
        page = _page_model(model).model_validate_json(raw)
    except ValidationError:
        payload = json.loads(raw)
        return read_each(model, payload.get("items") or [], kind=kind, report=report), list_meta(payload)
    items: list[Model] = page.items or []  # type: ignore[attr-defined]
    meta: ListMeta = page.metadata  # type: ignore[attr-defined]
    return items, meta
