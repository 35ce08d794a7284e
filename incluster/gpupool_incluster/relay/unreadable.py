"""The relay's watches skip an object they cannot read, with a Warning Event on it.

Role: `skipping_unreadable(kind, apply, report)` wraps a hub `apply_*` so that an item that
does not fit its model is logged (naming the fields), reported and skipped, and the watch goes
on with the rest: without it one malformed GPUPool made the pools watch fail and relist
forever. `event_reporter(api)` records that Warning Event through the adapters' Event writer.

Must not: swallow anything but an unreadable item (other errors still make the watch relist).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from typing import Any

from pydantic import ValidationError

from gpupool.core.model.unreadable import REASON_UNREADABLE, UnreadableObject, unreadable_object

__all__ = ["event_reporter", "skipping_unreadable"]

log = logging.getLogger("gpupool.relay")
Report = Callable[[UnreadableObject], None]


def skipping_unreadable(kind: str, apply: Callable[..., None], report: Report) -> Callable[..., None]:
    """`apply`, except that an unreadable item is logged, reported and skipped."""

    def guarded(item: Mapping[str, Any], *, deleted: bool = False) -> None:
        try:
            apply(item, deleted=deleted)
        except ValidationError as error:
            if deleted:  # never applied, so there is nothing to forget
                return
            unreadable = unreadable_object(item, error, kind=kind)
            log.warning(
                json.dumps(
                    {"action": "skip_unreadable", "kind": unreadable.kind, "message": unreadable.message}
                )
            )
            try:
                report(unreadable)
            except Exception as exc:  # best effort: the skip matters, the Event is a courtesy
                log.warning(json.dumps({"action": "report_unreadable_failed", "error": str(exc)}))

    return guarded


def event_reporter(api: Any, *, namespace: str = "default") -> Report:
    """Records a Warning Event (reason UnreadableSpec) on the skipped object."""
    from gpupool.adapters.kube_coordination import Coordination

    events = Coordination(api, namespace=namespace, request_timeout_s=10.0)

    def report(unreadable: UnreadableObject) -> None:
        events.record_event(
            kind=unreadable.kind,
            name=unreadable.name,
            namespace=unreadable.namespace,
            event_type="Warning",
            reason=REASON_UNREADABLE,
            message=unreadable.message,
            now=datetime.now(UTC),
        )

    return report
