"""What `Allocate` answers: the GPUs the scheduler chose for the pod, and its limits, as environment.

Role: the kubelet calls Allocate with device IDs of one index resource but no pod identity. The
pod is resolved among this node's pods: gpupool workers (label `tensor-fusion.ai/enabled=true`,
annotation `tensor-fusion.ai/gpu-ids`), not finished, not allocated before, whose containers'
limits ask for that resource with that many devices; the oldest such pod first (the kubelet admits
pods one at a time, in order). Its GPU object names are turned into NVML UUIDs for
`NVIDIA_VISIBLE_DEVICES`, with the limits beside them — so a container sees exactly the GPUs it was
given. A pod that cannot be resolved, or that names a GPU this node does not have (or that is
unusable), is refused: the kubelet then fails the pod's admission rather than start it with the
wrong GPUs.

Must not: call the cluster or NVML (the server passes pods and the GPU directory in).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime

from gpupool.core.model import constants as c
from gpupool.core.model.foreign import Pod
from gpupool_incluster.agent.workers import worker_from_pod

__all__ = ["AllocationRefused", "ContainerGrant", "resolve_grant"]


class AllocationRefused(Exception):
    """No pod matches, or its GPUs are not this node's usable GPUs; the message says which."""


@dataclass(frozen=True, slots=True)
class ContainerGrant:
    pod_uid: str
    pod: str  # namespace/name
    envs: dict[str, str]


def _asks_for(pod: Pod, resource: str, count: int) -> bool:
    for container in pod.spec.containers:
        wanted = container.resources.limits.get(resource) or container.resources.requests.get(resource)
        if wanted is not None and int(wanted.value) == count:
            return True
    return False


def _created(pod: Pod) -> datetime:
    stamp = pod.metadata.creation_timestamp
    return stamp if stamp is not None else datetime.min.replace(tzinfo=UTC)


def resolve_grant(
    *,
    resource: str,
    device_count: int,
    pods: Sequence[Pod],
    already_allocated: set[str],
    uuid_by_gpu: Mapping[str, str],
) -> ContainerGrant:
    """The grant for one container asking `device_count` devices of `resource`."""
    candidates = []
    for pod in pods:
        worker, _ = worker_from_pod(pod)
        if worker is None or worker.uid in already_allocated or pod.status.phase not in (None, "Pending"):
            continue
        if _asks_for(pod, resource, device_count):
            candidates.append((_created(pod), pod.metadata.name or "", pod, worker))
    if not candidates:
        raise AllocationRefused(
            f"no pending gpupool worker on this node asks for {device_count} × {resource} "
            "with a tensor-fusion.ai/gpu-ids annotation"
        )
    _, _, pod, worker = min(candidates, key=lambda item: (item[0], item[1]))
    missing = [name for name in worker.gpus if name not in uuid_by_gpu]
    if missing:
        raise AllocationRefused(
            f"pod {worker.key} was given {', '.join(missing)}, not usable GPUs of this node"
        )
    uuids = [uuid_by_gpu[name] for name in worker.gpus]
    notes = pod.metadata.annotations
    envs = {
        "NVIDIA_VISIBLE_DEVICES": ",".join(uuids),
        "GPUPOOL_GPU_IDS": ",".join(worker.gpus),
        "GPUPOOL_QOS": worker.qos,
        "GPUPOOL_VRAM_LIMIT_BYTES": str(worker.vram_limit),
    }
    for key, annotation in (
        ("GPUPOOL_TFLOPS_REQUEST", c.ANNOTATION_TFLOPS_REQUEST),
        ("GPUPOOL_TFLOPS_LIMIT", c.ANNOTATION_TFLOPS_LIMIT),
        ("GPUPOOL_COMPUTE_PERCENT_REQUEST", c.ANNOTATION_COMPUTE_PERCENT_REQUEST),
        ("GPUPOOL_COMPUTE_PERCENT_LIMIT", c.ANNOTATION_COMPUTE_PERCENT_LIMIT),
    ):
        if annotation in notes:
            envs[key] = notes[annotation]
    return ContainerGrant(pod_uid=worker.uid, pod=worker.key, envs=envs)
