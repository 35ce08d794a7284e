"""What to say about a stored object gpupool cannot read, so readers skip it instead of failing.

Role: `unreadable_message(raw, error)` names the object and each invalid field with its
reason (e.g. `GPUPool/bad: spec.nodeManagerConfig.provisioningMode: Input should be ...`),
the text a reader logs and puts in the Warning Event it records on the object;
`REASON_UNREADABLE` is that Event's reason.

Must not: log, record events or decide whether to skip (the adapters and the relay do).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from pydantic import ValidationError

from gpupool.core.model.manifest_errors import describe, field_errors

__all__ = ["REASON_UNREADABLE", "UnreadableObject", "unreadable_message", "unreadable_object"]

REASON_UNREADABLE: Final = "UnreadableSpec"
_MAX_FIELDS = 5


class UnreadableObject(Exception):
    """A stored object that does not fit its model: who it is and why, in one line."""

    def __init__(self, *, kind: str, name: str, namespace: str | None, message: str) -> None:
        super().__init__(message)
        self.kind = kind
        self.name = name
        self.namespace = namespace
        self.message = message


def unreadable_message(raw: Mapping[str, Any], error: ValidationError) -> str:
    """`Kind/name: path: reason; …` (at most five fields, then how many more)."""
    problems = [str(problem) for problem in field_errors(error)]
    shown = "; ".join(problems[:_MAX_FIELDS])
    more = f" (and {len(problems) - _MAX_FIELDS} more)" if len(problems) > _MAX_FIELDS else ""
    return f"{describe(raw)} cannot be read, skipped: {shown}{more}"


def unreadable_object(raw: Mapping[str, Any], error: ValidationError, *, kind: str) -> UnreadableObject:
    """The UnreadableObject for `raw` (its kind defaults to `kind` when the item carries none)."""
    metadata = raw.get("metadata")
    metadata = metadata if isinstance(metadata, Mapping) else {}
    name = metadata.get("name")
    namespace = metadata.get("namespace")
    item_kind = raw.get("kind")
    return UnreadableObject(
        kind=item_kind if isinstance(item_kind, str) and item_kind else kind,
        name=name if isinstance(name, str) else "",
        namespace=namespace if isinstance(namespace, str) and namespace else None,
        message=unreadable_message(raw, error),
    )
