"""The relay's watches skip an object they cannot read, with a Warning Event on it.

Role: `read_or_skip(model, raw, report)` reads a watched item into its model; an item that does
not fit is logged (naming the fields), reported and skipped (None), and the watch goes on with
the rest: without it one malformed GPUPool made the pools watch fail and relist forever. A
deleted item that does not fit is skipped quietly (the informer forgets what it last read).
`event_reporter(api)` records that Warning Event through the adapters' Event writer.

Must not: swallow anything but an unreadable item (other errors still make the watch relist).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from typing import Any, TypeVar

from pydantic import ValidationError

from gpupool.core.model.base import TopLevel
from gpupool.core.model.unreadable import UnreadableObject, unreadable_object

__all__ = ["Report", "event_reporter", "read_or_skip"]

log = logging.getLogger("gpupool.relay")
Report = Callable[[UnreadableObject], None]
ModelT = TypeVar("ModelT", bound=TopLevel)


def read_or_skip(
    model: type[ModelT], item: Mapping[str, Any], report: Report, *, deleted: bool = False
) -> ModelT | None:
    """`item` as `model`; None when it does not fit (logged and reported unless `deleted`)."""
    try:
        return model.model_validate(item)
    except ValidationError as error:
        if deleted:  # nothing to warn about on an object that is gone
            return None
        unreadable = unreadable_object(item, error, kind=model.KIND)
        log.warning(
            json.dumps({"action": "skip_unreadable", "kind": unreadable.kind, "message": unreadable.message})
        )
        try:
            report(unreadable)
        except Exception as exc:  # best effort: the skip matters, the Event is a courtesy
            log.warning(json.dumps({"action": "report_unreadable_failed", "error": str(exc)}))
        return None


def event_reporter(api: Any, *, namespace: str = "default") -> Report:
    """Records a Warning Event (reason UnreadableSpec) on the skipped object."""
    from gpupool.adapters.kube.coordination import Coordination, unreadable_warning

    events = Coordination(api, namespace=namespace, request_timeout_s=10.0)

    def report(unreadable: UnreadableObject) -> None:
        events.record_event(unreadable_warning(unreadable), now=datetime.now(UTC))

    return report
