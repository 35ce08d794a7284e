"""Which function handles which cause, and what a bare schedule means to each function.

Role: the one table shared by every cloud's intake: a schedule tick means *reconcile* to
``launch``, *sweep* to ``bind`` and *compact* to ``compact``; a cause that reaches the wrong
function becomes ``Ignored`` with a reason (a misrouted webhook is a 4xx, never an action).
Also the small, total JSON helpers every envelope parser uses.

Must not: know any vendor's envelope, raise on bad input, read the clock, or log.
"""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Mapping
from typing import Literal

from gpupool.core.intake.causes import (
    Cause,
    ClaimDeleted,
    Compact,
    Ignored,
    InstanceInterruption,
    InstanceStateChanged,
    NodeChanged,
    Reconcile,
    Sweep,
)

__all__ = [
    "FUNCTIONS",
    "FunctionName",
    "as_json_object",
    "decode_body",
    "route",
    "schedule_cause",
]

FunctionName = Literal["launch", "bind", "compact"]
FUNCTIONS: tuple[FunctionName, ...] = ("launch", "bind", "compact")

# The causes each function acts on; anything else reaching it is ignored with a reason.
_HANDLES: dict[FunctionName, tuple[type[Cause], ...]] = {
    "launch": (Reconcile,),
    "bind": (InstanceStateChanged, InstanceInterruption, NodeChanged, ClaimDeleted, Sweep),
    "compact": (Compact,),
}


def schedule_cause(
    function: FunctionName | None, *, event_id: str, pool: str | None = None, trigger: str = "schedule"
) -> Cause:
    """The cause a schedule tick stands for in ``function`` (no function: launch's reconcile)."""
    if function == "bind":
        return Sweep(event_id=event_id)
    if function == "compact":
        return Compact(pool=pool, manual=False, event_id=event_id)
    return Reconcile(pool=pool, trigger=trigger, event_id=event_id)


def route(function: FunctionName, cause: Cause) -> Cause:
    """``cause`` if ``function`` acts on it, else ``Ignored`` naming the function that would."""
    if isinstance(cause, (Ignored, *_HANDLES[function])):
        return cause
    owner = next((name for name, kinds in _HANDLES.items() if isinstance(cause, kinds)), None)
    return Ignored(
        reason=f"{cause.kind} is handled by the {owner} function, not {function}",
        event_id=getattr(cause, "event_id", None),
    )


def decode_body(body: object, *, is_base64: object = False) -> str | None:
    """An HTTP body as text (base64 undone when flagged); None when it cannot be read."""
    if isinstance(body, bytes | bytearray):
        raw = bytes(body)
    elif isinstance(body, str):
        raw = body.encode("utf-8", errors="surrogatepass")
    else:
        return None
    if is_base64 is True:
        try:
            raw = base64.b64decode(raw, validate=True)
        except (binascii.Error, ValueError):
            return None
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        return None


def as_json_object(value: object) -> Mapping[str, object] | None:
    """A JSON object given as a mapping or as JSON text / bytes; None for anything else."""
    if isinstance(value, bytes | bytearray):
        value = decode_body(value)
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except (ValueError, RecursionError):
            return None
    if isinstance(value, Mapping) and all(isinstance(key, str) for key in value):
        return value
    return None
