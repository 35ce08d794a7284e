"""The pool's memory of offerings out of capacity: read and written in one format, here.

Role: gpupool keeps the offerings that just failed for lack of capacity (a launch refused, a
Karpenter NodeClaim it could not launch, an interrupted Spot offering) in the pool's annotation
`ANNOTATION_UNAVAILABLE_OFFERINGS`, as JSON `{offering key: RFC3339 expiry}`, so no state lives in
memory. `unavailable_offerings(pool, now)` reads what is still in force; `remembering(memory,
key, until)` adds one offering (an expiry only ever moves later); `memory_text(memory)` is the
annotation's value for a memory. `annotation_object(pool, key)` reads a pool's JSON-object
annotation as this memory and AutoSelect's do (malformed: empty).

Must not: decide which offering is unavailable (decisions do) or read the clock.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from datetime import datetime
from typing import Any, Final

from gpupool.core.model.pool import GPUPool

__all__ = [
    "ANNOTATION_UNAVAILABLE_OFFERINGS",
    "annotation_object",
    "memory_text",
    "remembering",
    "unavailable_offerings",
]

# gpupool's own name (not TensorFusion's), on the pool.
ANNOTATION_UNAVAILABLE_OFFERINGS: Final = "gpupool.io/unavailable-offerings"


def annotation_object(pool: GPUPool, key: str) -> dict[str, Any]:
    """The pool's annotation `key` as a JSON object; absent, not JSON or not an object: empty (a
    memory the next write replaces, never a reason to refuse the pool)."""
    text = pool.metadata.annotations.get(key)
    if not text:
        return {}
    try:
        raw = json.loads(text)
    except ValueError:
        return {}
    return raw if isinstance(raw, dict) else {}


def unavailable_offerings(pool: GPUPool, now: datetime) -> dict[str, datetime]:
    """Offering keys the pool remembers as out of capacity, with their expiry, still in force at `now`.

    A malformed annotation is read as empty (it only ever delays a retry, never blocks one).
    """
    result: dict[str, datetime] = {}
    for key, value in annotation_object(pool, ANNOTATION_UNAVAILABLE_OFFERINGS).items():
        try:
            until = datetime.fromisoformat(str(value))
        except ValueError:
            continue
        if until.tzinfo is not None and until > now:
            result[str(key)] = until
    return result


def remembering(memory: Mapping[str, datetime], key: str, until: datetime) -> dict[str, datetime]:
    """`memory` with `key` unavailable until `until` (or later, when it already was)."""
    updated = dict(memory)
    updated[key] = max(until, updated.get(key, until))
    return updated


def memory_text(memory: Mapping[str, datetime]) -> str:
    """The annotation's value for `memory` (keys sorted, expiries RFC3339)."""
    return json.dumps({k: v.isoformat() for k, v in sorted(memory.items())}, sort_keys=True)
