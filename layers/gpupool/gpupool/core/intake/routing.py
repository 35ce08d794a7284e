"""Which function handles which cause, and what a bare schedule means to each function.

Role: the one table shared by every cloud's intake and by the services: the causes each
function acts on (``LaunchCause``, ``BindCause``, ``CompactCause`` — each service narrows with
its own, ``route`` reads all three); a schedule tick means *reconcile* to ``launch``, *sweep* to
``bind`` and *compact* to ``compact``; a cause that reaches the wrong function becomes
``Ignored`` with a reason (a misrouted webhook is a 4xx, never an action).

Must not: know any vendor's envelope, raise on bad input, read the clock, or log.
"""

from __future__ import annotations

import types
from collections.abc import Mapping

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
from gpupool.core.vocabulary.functions import FUNCTIONS, FunctionName

__all__ = [
    "FUNCTIONS",
    "BindCause",
    "CompactCause",
    "FunctionName",
    "LaunchCause",
    "route",
    "schedule_cause",
]

# The causes each function acts on; anything else reaching it is ignored with a reason. An
# interruption warning goes to launch: it marks the claim and launches the replacement at once.
LaunchCause = Reconcile | InstanceInterruption
BindCause = InstanceStateChanged | NodeChanged | ClaimDeleted | Sweep
CompactCause = Compact
_HANDLES: Mapping[FunctionName, type | types.UnionType] = {
    "launch": LaunchCause,
    "bind": BindCause,
    "compact": CompactCause,
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
    if isinstance(cause, (Ignored, _HANDLES[function])):
        return cause
    owner = next((name for name, kinds in _HANDLES.items() if isinstance(cause, kinds)), None)
    return Ignored(
        reason=f"{cause.kind} is handled by the {owner} function, not {function}",
        event_id=getattr(cause, "event_id", None),
    )
