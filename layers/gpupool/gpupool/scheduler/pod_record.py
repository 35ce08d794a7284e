"""The allocation the relay recorded on a pod when it bound it, and the check that a pod still agrees.

Role: at bind, the relay writes two scheduler-owned annotations on the pod: `tensor-fusion.ai/gpu-ids`
(TensorFusion's name for the GPUs chosen) and `gpupool.io/allocation`, a compact JSON record of
what was placed — the pod's UID, the node, the GPUs, and the value of every GPU-request annotation
the allocator read (`REQUEST_ANNOTATIONS`). The device plugin and the node agent honour only a pod
that carries a record for itself (its UID), on their node, whose GPUs and request annotations
agree with the pod's (`recorded_allocation`); anything else is refused with the reason.

The record is as trustworthy as the annotation is hard to write: the chart's pod guard
(a ValidatingAdmissionPolicy, `incluster/chart/templates/pod-guard.yaml`) lets only the relay's
service account set or change the keys in `SCHEDULER_OWNED`, and nobody change a
`REQUEST_ANNOTATIONS` key or the `tensor-fusion.ai/enabled` label once the pod exists (see
docs/security.md, "Tenant isolation").

Must not: read the cluster, sign anything or decide placement.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

from gpupool.core.model import constants as c
from gpupool.core.model.foreign import Pod
from gpupool.core.vocabulary.pods import GPU_REQUEST_ANNOTATIONS

__all__ = [
    "ANNOTATION_ALLOCATION",
    "FROZEN_LABELS",
    "REQUEST_ANNOTATIONS",
    "SCHEDULER_OWNED",
    "AllocationRecord",
    "RecordError",
    "as_recorded",
    "disagreement",
    "read_record",
    "record_annotations",
    "recorded_allocation",
]

ANNOTATION_ALLOCATION: Final = "gpupool.io/allocation"
# Written by the relay at bind, by nobody else: refused at CREATE, changed only by the relay.
SCHEDULER_OWNED: Final = (c.ANNOTATION_GPU_IDS, ANNOTATION_ALLOCATION)
# What the allocator reads from a pod to place it (see `pod_request.request_from_pod`): fixed at
# admission, so what the scheduler placed is what the agent enforces.
REQUEST_ANNOTATIONS: Final = (
    *GPU_REQUEST_ANNOTATIONS,
    c.ANNOTATION_GPU_COUNT,
    c.ANNOTATION_GPU_MODEL,
    c.ANNOTATION_VENDOR,
    c.ANNOTATION_QOS,
    c.ANNOTATION_GPU_POOL,
    c.ANNOTATION_ISOLATION,
    c.ANNOTATION_DEDICATED_GPU,
    c.ANNOTATION_GPU_INDICES,
)
FROZEN_LABELS: Final = (c.LABEL_ENABLED,)
_VERSION: Final = 1


class RecordError(ValueError):
    """No record for this pod on this node, or one the pod disagrees with; the message says which."""


@dataclass(frozen=True, slots=True)
class AllocationRecord:
    """What the relay placed: pod UID, node, GPUs (object names) and the request annotations read."""

    uid: str
    node: str
    gpus: tuple[str, ...]
    request: Mapping[str, str] = field(default_factory=dict)

    def encode(self) -> str:
        body = {"v": _VERSION, "uid": self.uid, "node": self.node, "gpus": list(self.gpus)}
        body["request"] = dict(sorted(self.request.items()))
        return json.dumps(body, separators=(",", ":"), sort_keys=True)


def _request_of(annotations: Mapping[str, str]) -> dict[str, str]:
    return {key: annotations[key] for key in REQUEST_ANNOTATIONS if key in annotations}


def record_annotations(pod: Pod, node: str, gpus: Sequence[str]) -> dict[str, str]:
    """The annotations the relay writes at bind: `gpu-ids` and the record of this placement."""
    record = AllocationRecord(
        uid=pod.metadata.uid or "",
        node=node,
        gpus=tuple(gpus),
        request=_request_of(pod.metadata.annotations),
    )
    return {c.ANNOTATION_GPU_IDS: ",".join(gpus), ANNOTATION_ALLOCATION: record.encode()}


def _decode(text: str) -> AllocationRecord:
    try:
        body: Any = json.loads(text)
    except ValueError:
        raise RecordError(f"annotation {ANNOTATION_ALLOCATION} is not JSON") from None
    if not isinstance(body, dict) or body.get("v") != _VERSION:
        raise RecordError(f"annotation {ANNOTATION_ALLOCATION} is not a version {_VERSION} record")
    uid, node, gpus, request = body.get("uid"), body.get("node"), body.get("gpus"), body.get("request")
    if not (isinstance(uid, str) and isinstance(node, str) and isinstance(gpus, list) and gpus):
        raise RecordError(f"annotation {ANNOTATION_ALLOCATION} lacks uid, node or gpus")
    if not all(isinstance(g, str) and g for g in gpus) or not isinstance(request, dict):
        raise RecordError(f"annotation {ANNOTATION_ALLOCATION} has malformed gpus or request")
    if not all(isinstance(k, str) and isinstance(v, str) for k, v in request.items()):
        raise RecordError(f"annotation {ANNOTATION_ALLOCATION} has a non-text request value")
    return AllocationRecord(uid=uid, node=node, gpus=tuple(gpus), request=request)


def read_record(pod: Pod, node: str) -> AllocationRecord:
    """The record written for this pod (its UID) on `node`; RecordError when there is none."""
    meta = pod.metadata
    key = f"{meta.namespace or 'default'}/{meta.name}"
    text = meta.annotations.get(ANNOTATION_ALLOCATION)
    if text is None:
        raise RecordError(f"pod {key} has no allocation recorded by {c.SCHEDULER_NAME}")
    record = _decode(text)
    if not meta.uid or record.uid != meta.uid:
        raise RecordError(f"pod {key}: the recorded allocation is for pod UID {record.uid!r}, not this pod")
    if record.node != node or (pod.spec.node_name or node) != node:
        raise RecordError(f"pod {key}: the allocation was recorded for node {record.node!r}, not {node!r}")
    return record


def disagreement(pod: Pod, record: AllocationRecord) -> str | None:
    """How the pod's annotations differ from its record (GPUs first, then the request), or None."""
    meta = pod.metadata
    key = f"{meta.namespace or 'default'}/{meta.name}"
    named = tuple(g.strip() for g in meta.annotations.get(c.ANNOTATION_GPU_IDS, "").split(",") if g.strip())
    if named != record.gpus:
        return (
            f"pod {key}: {c.ANNOTATION_GPU_IDS} names {','.join(named) or 'nothing'}, "
            f"the scheduler recorded {','.join(record.gpus)}"
        )
    current = _request_of(meta.annotations)
    changed = sorted(k for k in set(current) | set(record.request) if current.get(k) != record.request.get(k))
    if changed:
        return (
            f"pod {key}: annotation {changed[0]} is {current.get(changed[0])!r}, "
            f"the scheduler placed it with {record.request.get(changed[0])!r}"
        )
    return None


def as_recorded(pod: Pod, record: AllocationRecord) -> Pod:
    """The pod with its GPU annotations replaced by the recorded ones (what the scheduler placed)."""
    notes = {k: v for k, v in pod.metadata.annotations.items() if k not in REQUEST_ANNOTATIONS}
    notes |= dict(record.request)
    notes[c.ANNOTATION_GPU_IDS] = ",".join(record.gpus)
    return pod.model_copy(update={"metadata": pod.metadata.model_copy(update={"annotations": notes})})


def recorded_allocation(pod: Pod, node: str) -> AllocationRecord:
    """The record of `pod` on `node` when the pod agrees with it; RecordError naming the disagreement."""
    record = read_record(pod, node)
    problem = disagreement(pod, record)
    if problem is not None:
        raise RecordError(problem)
    return record
