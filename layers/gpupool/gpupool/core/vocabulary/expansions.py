"""What an AutoSelect expansion NodeClaim is, whom it was made for, and how long its node is theirs.

Role: the one definition AutoSelect (which writes and reviews expansions) and the scheduler
extender's reservation (`gpupool.scheduler.extender.reservation`) share. An expansion is a
Karpenter NodeClaim labelled `tensor-fusion.ai/expansion-source`, annotated
`gpupool.io/expansion-for=<namespace>/<pod>`, not being deleted; the pod counts on its node for
`PLACEMENT_GRACE` after the node's GPUs were reported (`gpus_reported`).

Must not: read the clock, do I/O, or decide anything beyond these definitions.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import Final

from gpupool.core.model.constants import LABEL_EXPANSION_SOURCE
from gpupool.core.model.karpenter import KarpenterNodeClaim
from gpupool.core.model.node import GPU

__all__ = [
    "ANNOTATION_EXPANSION_FOR",
    "PLACEMENT_GRACE",
    "expansion_made_for",
    "gpus_reported",
    "pod_key_of",
    "reported_at",
]

ANNOTATION_EXPANSION_FOR: Final = "gpupool.io/expansion-for"  # <namespace>/<pod>: whom it was made for
# How long the pod an expansion was made for has its node once the node's GPUs are reported:
# tensor-fusion-scheduler retries on the usable-GPUs label's change after a backoff of at most 2 s
# (the chart's), so a pod not placed 10 s after its node's GPUs came will not be.
PLACEMENT_GRACE: Final = timedelta(seconds=10)

# A namespace (DNS-1123 label) and a pod name (DNS-1123 subdomain).
_POD_KEY = re.compile(r"[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?/[a-z0-9]([-.a-z0-9]{0,251}[a-z0-9])?")


def pod_key_of(namespace: str | None, name: str) -> str:
    """`<namespace>/<pod>`, the key the annotation holds (namespace `default` when none)."""
    return f"{namespace or 'default'}/{name}"


def expansion_made_for(nodeclaim: KarpenterNodeClaim) -> str | None:
    """The `<namespace>/<pod>` an expansion NodeClaim was made for; None for any other NodeClaim
    (no expansion-source label, no or malformed annotation) and for one being deleted."""
    pod = nodeclaim.metadata.annotations.get(ANNOTATION_EXPANSION_FOR, "")
    if (
        LABEL_EXPANSION_SOURCE not in nodeclaim.metadata.labels
        or nodeclaim.metadata.deletion_timestamp is not None
        or _POD_KEY.fullmatch(pod) is None
    ):
        return None
    return pod


def reported_at(gpu: GPU) -> tuple[str, datetime] | None:
    """The node a GPU object reports a GPU of, and when it was created; None when either is unknown."""
    node = gpu.status.node_selector.get("kubernetes.io/hostname") if gpu.status else None
    created = gpu.metadata.creation_timestamp
    return (node, created) if node and created is not None else None


def gpus_reported(gpus: Sequence[GPU]) -> dict[str, datetime]:
    """Each node's first GPU object's creation time: since when the node agent has reported it."""
    reported: dict[str, datetime] = {}
    for gpu in gpus:
        found = reported_at(gpu)
        if found is not None and (found[0] not in reported or found[1] < reported[found[0]]):
            reported[found[0]] = found[1]
    return reported
