"""Reading a listed kind item by item: one unreadable object is skipped, never the whole list.

Role: `read_each(model, items, kind=…, report=…)` parses every listed item; an item that does
not fit its model (a field another version of TensorFusion writes differently, a hand-edited
typo) is logged with the fields that are wrong, reported (the caller records a Warning Event
on it) and left out, so every other pool is still planned and scheduled.

Must not: raise for a bad item, retry, or record events itself (the caller's `report` does).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Iterable, Mapping
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from gpupool.core.model.unreadable import UnreadableObject, unreadable_object

__all__ = ["read_each"]

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
