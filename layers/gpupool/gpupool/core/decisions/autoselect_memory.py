"""AutoSelect's memory of each pod's expansions, read and written in one format, here.

Role: Karpenter deletes a NodeClaim it cannot launch (InsufficientCapacity, NodeClassNotReady):
the expansion made for a pod then vanishes with everything written on it. So the pool keeps, per
pending pod (`<namespace>/<name>`), the expansion NodeClaim made for it, the candidate it was
pinned to, whether its node registered, and the candidates that failed, in its annotation
`ANNOTATION_EXPANSIONS` as JSON — no state lives in memory, and the functions need no write
access to pods. `read_expansions(pool)` reads it (a malformed annotation, or a malformed entry,
reads as none: it only costs a retry of a candidate), `expansions_text(memory)` is the
annotation's value (keys sorted; empty when nothing is remembered).

Must not: decide anything (`decisions.autoselect` does) or read the clock.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Final

from gpupool.core.model.pool import GPUPool
from gpupool.core.planning.unavailable import annotation_object

__all__ = ["ANNOTATION_EXPANSIONS", "ExpansionRecord", "expansions_text", "read_expansions"]

# gpupool's own name (not TensorFusion's), on the pool.
ANNOTATION_EXPANSIONS: Final = "gpupool.io/autoselect-expansions"


@dataclass(frozen=True)
class ExpansionRecord:
    """One pod's expansions: the NodeClaim in flight (if any), its candidate, whether its node
    registered, and the candidates (`type/zone`) that failed."""

    nodeclaim: str | None = None
    candidate: str | None = None
    registered: bool = False
    tried: tuple[str, ...] = field(default_factory=tuple)


def _record(raw: object) -> ExpansionRecord | None:
    if not isinstance(raw, Mapping):
        return None
    nodeclaim, candidate, tried = raw.get("nodeClaim"), raw.get("candidate"), raw.get("tried", [])
    if not (nodeclaim is None or isinstance(nodeclaim, str)) or not (
        candidate is None or isinstance(candidate, str)
    ):
        return None
    if not isinstance(tried, list) or not all(isinstance(t, str) for t in tried):
        return None
    return ExpansionRecord(nodeclaim, candidate, raw.get("registered") is True, tuple(tried))


def read_expansions(pool: GPUPool) -> dict[str, ExpansionRecord]:
    """The pool's remembered expansions by pod key (see the module docstring)."""
    raw = annotation_object(pool, ANNOTATION_EXPANSIONS)
    return {str(pod): record for pod, entry in raw.items() if (record := _record(entry)) is not None}


def expansions_text(memory: Mapping[str, ExpansionRecord]) -> str:
    """The annotation's value for `memory` ("" when it holds nothing)."""
    if not memory:
        return ""
    entries = {
        pod: {
            **({"nodeClaim": r.nodeclaim} if r.nodeclaim else {}),
            **({"candidate": r.candidate} if r.candidate else {}),
            **({"registered": True} if r.registered else {}),
            **({"tried": list(r.tried)} if r.tried else {}),
        }
        for pod, r in sorted(memory.items())
    }
    return json.dumps(entries, sort_keys=True, separators=(",", ":"))
