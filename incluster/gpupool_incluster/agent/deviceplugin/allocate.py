"""What `Allocate` answers: the GPUs the scheduler chose for the pod, and its limits, as environment.

Role: the kubelet calls Allocate with device IDs of one index resource but no pod identity. The
pod is resolved among this node's pods that are not finished and whose containers' limits ask for
that resource with that many devices — the claimants. Only a claimant that carries the allocation
the relay recorded when it bound it (`gpupool.io/allocation`: this pod's UID, this node, the GPUs,
the request annotations placed) and agrees with it is a candidate; the oldest candidate not
allocated before first (the kubelet admits pods one at a time, in order). A claimant without a valid
record — a pod placed around the scheduler, or one whose annotations were changed — is never a
candidate and never stands in another's way (issue 33): with no candidate left it is refused, so it
fails closed itself; while a recorded pod is pending beside it the grant is that pod's. Because the
kubelet does not say which pod it admits, that grant may be started in the unrecorded pod's
container: the agent kills every GPU process of a pod that asks for an index resource without a
valid record (`enforce.Enforcer`), so it never keeps the GPUs, and a recorded pod whose grant it
may have taken is granted again (it is still pending and an unrecorded claimant is beside it) rather
than refused. Its GPU object names are turned into NVML UUIDs for `NVIDIA_VISIBLE_DEVICES`, with the
recorded limits beside them — so a container sees exactly the GPUs it was given. A refused Allocate
fails the pod's admission in the kubelet rather than start it with the wrong GPUs.

Must not: call the cluster or NVML (the server passes pods and the GPU directory in).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime

from gpupool.core.model import constants as c
from gpupool.core.model.foreign import Pod
from gpupool.core.vocabulary.pods import asks_gpupool_for_gpus
from gpupool.scheduler.pod_record import RecordError, as_recorded, recorded_allocation
from gpupool_incluster.agent.workers import Worker, worker_from_pod

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


def _candidate(pod: Pod, node: str) -> tuple[Worker, Pod]:
    """The worker a claimant is, read from its record; RecordError when it has none or disagrees."""
    key = f"{pod.metadata.namespace or 'default'}/{pod.metadata.name}"
    if not asks_gpupool_for_gpus(pod):
        raise RecordError(
            f"pod {key} is not a TensorFusion worker asking gpupool for GPUs (a {c.LABEL_ENABLED}=true "
            "label with GPU annotations)"
        )
    record = recorded_allocation(pod, node)
    worker, problem = worker_from_pod(pod, node)
    if worker is None:
        raise RecordError(problem or f"pod {key} is not a worker")
    return worker, as_recorded(pod, record)


def resolve_grant(
    *,
    resource: str,
    device_count: int,
    pods: Sequence[Pod],
    already_allocated: set[str],
    uuid_by_gpu: Mapping[str, str],
    node: str,
) -> ContainerGrant:
    """The grant for one container asking `device_count` devices of `resource` on `node`."""
    fresh: list[tuple[datetime, str, Pod, Worker]] = []
    granted: list[tuple[datetime, str, Pod, Worker]] = []
    unrecorded: list[str] = []
    for pod in pods:
        if pod.status.phase not in (None, "Pending") or not _asks_for(pod, resource, device_count):
            continue
        try:
            worker, placed = _candidate(pod, node)
        except RecordError as exc:
            unrecorded.append(str(exc))
            continue
        entry = (_created(pod), pod.metadata.name or "", placed, worker)
        (granted if (pod.metadata.uid or "") in already_allocated else fresh).append(entry)
    # A recorded pod granted before and still pending, beside an unrecorded claimant: that grant
    # may have gone to the unrecorded pod's container (whose GPU processes the agent kills).
    candidates = fresh or (granted if unrecorded else [])
    if not candidates:
        if unrecorded:
            raise AllocationRefused(f"{unrecorded[0]}; no recorded pod asks for {device_count} × {resource}")
        raise AllocationRefused(
            f"no pending gpupool worker on this node asks for {device_count} × {resource} "
            f"with an allocation recorded by {c.SCHEDULER_NAME}"
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
