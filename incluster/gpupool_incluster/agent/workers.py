"""A TensorFusion worker as the agent enforces it: the pod's GPUs, limits and QoS, as the relay recorded them.

Role: read a pod on this node into a `Worker` — only pods asking gpupool for GPUs (the
vocabulary's `asks_gpupool_for_gpus`: labelled `tensor-fusion.ai/enabled=true` with GPU
annotations) that carry the allocation the relay recorded when it bound them
(`gpupool.io/allocation`: this pod's
UID, this node, the GPUs, the request annotations placed; see `gpupool.scheduler.pod_record`)
are workers; a pod that asks for an index resource and is not one holds GPUs no record gives it
(`holds_index_without_record`: the enforcer kills its GPU processes); every other process on a GPU
is left alone. A pod without a record for itself on this
node is not a worker (the reason is returned); a pod whose annotations were changed after the record
is enforced as recorded — never as its edited annotations say — and the disagreement is returned.
The recorded annotations are parsed by the allocator's own reader (`request_from_pod`), so the
agent enforces exactly what the scheduler placed. `shares` turns a worker's TFLOPS (or
compute-percent) request and limit into percentages of one GPU.

Must not: read the cluster or act on processes.
"""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal

from gpupool.core.allocator.pod_request import RequestError, request_from_pod
from gpupool.core.model import constants as c
from gpupool.core.model.foreign import Pod
from gpupool.core.vocabulary.pods import asks_for_index_resources, asks_gpupool_for_gpus
from gpupool.scheduler.pod_record import (
    ANNOTATION_ALLOCATION,
    RecordError,
    as_recorded,
    disagreement,
    read_record,
)

__all__ = ["QOS_RANK", "Worker", "holds_index_without_record", "shares", "worker_from_pod"]

QOS_RANK = {name: rank for rank, name in enumerate(c.QOS_LEVELS)}  # low 0 … critical 3


@dataclass(frozen=True, slots=True)
class Worker:
    """One pod's enforceable limits; TFLOPS in milli-TFLOPS, VRAM in bytes (0 = no limit)."""

    uid: str
    namespace: str
    name: str
    gpus: tuple[str, ...]
    qos: str = "medium"
    vram_limit: int = 0
    vram_request: int = 0
    tflops_request: int = 0
    tflops_limit: int = 0
    percent_request: float | None = None
    percent_limit: float | None = None
    dedicated: bool = False

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"

    @property
    def rank(self) -> int:
        return QOS_RANK.get(self.qos, QOS_RANK["medium"])


def worker_from_pod(pod: Pod, node: str) -> tuple[Worker | None, str | None]:
    """The worker a pod on `node` is, with a problem to log: (None, None) when it is not one,
    (None, why) when it claims GPUs without a record, (worker, why) when it disagrees with its record."""
    meta = pod.metadata
    notes = meta.annotations
    if meta.labels.get(c.LABEL_ENABLED) != "true" or not meta.uid:
        return None, None
    if pod.status.phase in ("Succeeded", "Failed"):
        return None, None
    if c.ANNOTATION_GPU_IDS not in notes and ANNOTATION_ALLOCATION not in notes:
        return None, None  # not bound yet
    try:
        record = read_record(pod, node)
    except RecordError as exc:
        return None, f"{exc}; not enforced"
    differs = disagreement(pod, record)
    if not asks_gpupool_for_gpus(as_recorded(pod, record)):
        return None, f"pod {meta.namespace}/{meta.name} does not ask gpupool for GPUs; not enforced"
    try:
        request = request_from_pod(as_recorded(pod, record))
    except RequestError as exc:
        return None, f"pod {meta.namespace}/{meta.name}: {exc}; not enforced"
    worker = Worker(
        uid=meta.uid,
        namespace=meta.namespace or "default",
        name=meta.name or "",
        gpus=record.gpus,
        qos=request.qos,
        vram_limit=max(request.vram_limit, request.vram_request),
        vram_request=request.vram_request,
        tflops_request=request.tflops_request,
        tflops_limit=max(request.tflops_limit, request.tflops_request),
        percent_request=request.compute_percent_request,
        percent_limit=request.compute_percent_limit,
        dedicated=request.dedicated,
    )
    return worker, (None if differs is None else f"{differs}; enforcing the recorded allocation")


def holds_index_without_record(pod: Pod) -> bool:
    """A pod (not a worker: `worker_from_pod` gave none) that is not finished and asks for a
    `tensor-fusion.ai/index_*` resource: whatever GPUs its containers got, no record gives them."""
    return (
        bool(pod.metadata.uid)
        and pod.status.phase not in ("Succeeded", "Failed")
        and asks_for_index_resources(pod)
    )


def shares(worker: Worker, gpu_tflops: Decimal | None) -> tuple[float, float]:
    """(request, limit) as percent of one GPU: tflops ÷ the GPU's TFLOPS, or compute-percent.

    No limit, a dedicated GPU, or a GPU of unknown TFLOPS → 100 (not throttled).
    """
    if worker.dedicated:
        return 100.0, 100.0
    if worker.percent_request is not None:
        request = worker.percent_request
        return min(request, 100.0), min(max(worker.percent_limit or request, request), 100.0)
    if not worker.tflops_limit or not gpu_tflops:
        return 100.0, 100.0
    total = float(gpu_tflops) * 1000.0
    return min(100.0, 100.0 * worker.tflops_request / total), min(100.0, 100.0 * worker.tflops_limit / total)
