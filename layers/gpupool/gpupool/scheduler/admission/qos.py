"""The QoS a namespace may ask for: a ceiling, so one tenant cannot out-rank every other.

Role: `qos_ceiling(quota)` is the highest `tensor-fusion.ai/qos` the pods of a namespace may carry:
the namespace's GPUResourceQuota annotation `gpupool.io/max-qos` (low | medium | high | critical),
else `high` — `critical` (the level the compute plan serves first when a GPU is oversubscribed)
must be granted to a namespace explicitly, by whoever may write its GPUResourceQuota.
`bound_qos` refuses an explicit ask above the ceiling and lowers a default to it.

Must not: read the cluster (the quota is passed in) or judge any other annotation.
"""

from __future__ import annotations

from typing import Final

from gpupool.core.model import constants as c
from gpupool.core.model.quota import GPUResourceQuota
from gpupool.scheduler.admission.errors import Denial

__all__ = ["ANNOTATION_MAX_QOS", "DEFAULT_QOS_CEILING", "bound_qos", "qos_ceiling"]

ANNOTATION_MAX_QOS: Final = "gpupool.io/max-qos"
DEFAULT_QOS_CEILING: Final = "high"
_RANK: Final = {name: rank for rank, name in enumerate(c.QOS_LEVELS)}


def qos_ceiling(quota: GPUResourceQuota | None) -> str:
    """The namespace's ceiling; a GPUResourceQuota with an unreadable one grants only `low`."""
    text = (quota.metadata.annotations.get(ANNOTATION_MAX_QOS) if quota is not None else None) or ""
    if not text:
        return DEFAULT_QOS_CEILING
    return text if text in _RANK else c.QOS_LEVELS[0]  # fail closed on a typo


def bound_qos(qos: str, ceiling: str, *, explicit: bool, namespace: str) -> str:
    """`qos` when within the ceiling; a default is lowered to it, an explicit ask is a Denial."""
    if qos not in _RANK or _RANK[qos] <= _RANK[ceiling]:
        return qos  # an unknown level is refused by the request reader, with the allowed values
    if not explicit:
        return ceiling
    raise Denial(
        f"annotation {c.ANNOTATION_QOS}={qos!r} is above what namespace {namespace!r} may ask for "
        f"({ceiling!r}; its GPUResourceQuota annotation {ANNOTATION_MAX_QOS} raises it)"
    )
