"""The pod mutating webhook's decision: which pods move to TensorFusion, with which defaults.

Role: for a pod labelled `tensor-fusion.ai/enabled=true` (and within `enabled-replicas`), take
what the pod did not set from its `workload-profile`, fill in the GPU annotations' defaults
(request = limit when only the limit is set; GPUResourceQuota
single defaults; qos high when request == limit, else the pool's defaultQoS, else medium; the
default pool; isolation soft; gpu-count from nvidia.com/gpu), validate every value, enforce the
namespace's GPUResourceQuota, bound the qos (`qos`), set schedulerName, drop native nvidia.com/gpu and add the
`tensor-fusion.ai/index_0` extended resource the scheduler extender is registered for. In the
production guide's progressive-migration mode, pods that keep native nvidia.com/gpu are routed to
tensor-fusion-scheduler too, so the extender keeps them off nodes TensorFusion already uses, and
migrated pods tolerate the `tensor-fusion.ai/used-by` taint the relay puts on those nodes.

GPUs are chosen by the scheduler only: a pod that arrives with a scheduler-owned annotation
(`tensor-fusion.ai/gpu-ids`, `gpupool.io/allocation`), or a TensorFusion pod with a preset
`spec.nodeName`, is refused with the reason rather than stripped — stripping would admit a pod
that runs somewhere other than its author asked, and a refusal shows in the owning controller's
events. A worker that is not dedicated must carry a VRAM request or limit (from its annotations,
its WorkloadProfile or the GPUResourceQuota's `single.defaultRequests|defaultLimits`): the agent
holds a worker to its VRAM limit, and one without any would be held to nothing. Native
nvidia.com/gpu pods become dedicated workers of whole GPUs.

Must not: read the cluster (the relay passes pools, quota, usage and replica counts in), or
create anything: a denial changes nothing.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from pydantic import ValidationError

from gpupool.core.allocator.pod_request import RequestError, request_from_pod
from gpupool.core.allocator.quota import QuotaUsage
from gpupool.core.model import constants as c
from gpupool.core.model.foreign import Pod
from gpupool.core.model.quota import GPUResourceQuota
from gpupool.core.model.workload import WorkloadProfileSpec
from gpupool.core.vocabulary.pods import (
    NATIVE_GPU_RESOURCE,
    asks_for_index_resources,
    may_use_the_gpu_scheduler,
)
from gpupool.scheduler.admission.errors import Denial
from gpupool.scheduler.admission.profile import apply_workload_profile
from gpupool.scheduler.admission.qos import bound_qos, qos_ceiling
from gpupool.scheduler.admission.quota import check_quota
from gpupool.scheduler.admission.review import pointer
from gpupool.scheduler.pod_record import SCHEDULER_OWNED

__all__ = ["NATIVE_GPU_RESOURCE", "AdmissionContext", "Denial", "Mutation", "PoolInfo", "mutate_pod"]

SCHEDULER_RESOURCE = c.index_resource(0)
DEFAULT_SCHEDULERS = (None, "", "default-scheduler")


@dataclass(frozen=True, slots=True)
class PoolInfo:
    name: str
    default_qos: str | None = None


@dataclass(frozen=True, slots=True)
class AdmissionContext:
    """What the relay knows about the cluster when the pod arrives."""

    pools: Mapping[str, PoolInfo] = field(default_factory=dict)
    default_pool: str | None = None
    quota: GPUResourceQuota | None = None
    quota_usage: QuotaUsage = field(default_factory=QuotaUsage)
    largest_gpu: tuple[int, int] = (0, 0)
    """(milli-TFLOPS, VRAM bytes) of the largest GPU known: converts compute-percent and
    dedicated requests for the quota; (0, 0) when none is (the scheduler judges them then)."""
    progressive_migration: bool = False
    migrated_replicas: int = 0
    workload_profiles: Mapping[str, WorkloadProfileSpec] = field(default_factory=dict)
    """The WorkloadProfiles of the pod's namespace, by name."""


@dataclass(frozen=True, slots=True)
class Mutation:
    patch: list[dict[str, Any]]
    notes: list[str]
    migrated: bool = False
    """True when the pod now runs as a TensorFusion worker (counts toward enabled-replicas)."""


def _native_gpus(pod: Pod) -> int:
    total = 0
    for container in pod.spec.containers:
        amount = container.resources.limits.get(NATIVE_GPU_RESOURCE) or container.resources.requests.get(
            NATIVE_GPU_RESOURCE
        )
        if amount is not None:
            total += int(amount.value)
    return total


def _route_native(raw: Mapping[str, Any], pod: Pod, ctx: AdmissionContext, notes: list[str]) -> Mutation:
    """Pods that keep nvidia.com/gpu: untouched, or (progressive migration) sent to our scheduler."""
    if (
        not ctx.progressive_migration
        or _native_gpus(pod) == 0
        or pod.spec.scheduler_name not in DEFAULT_SCHEDULERS
    ):
        return Mutation([], notes)
    patch = [{"op": "add", "path": "/spec/schedulerName", "value": c.SCHEDULER_NAME}]
    patch += _index_resource_ops(raw)
    notes.append(f"native nvidia.com/gpu pod routed to {c.SCHEDULER_NAME} (progressive migration)")
    return Mutation(patch, notes)


def _index_resource_ops(raw: Mapping[str, Any]) -> list[dict[str, Any]]:
    containers = (raw.get("spec") or {}).get("containers") or []
    if not containers:
        return []
    resources = containers[0].get("resources")
    if not isinstance(resources, Mapping):
        return [
            {
                "op": "add",
                "path": pointer("spec", "containers", 0, "resources"),
                "value": {"limits": {SCHEDULER_RESOURCE: "1"}},
            }
        ]
    if not isinstance(resources.get("limits"), Mapping):
        return [
            {
                "op": "add",
                "path": pointer("spec", "containers", 0, "resources", "limits"),
                "value": {SCHEDULER_RESOURCE: "1"},
            }
        ]
    return [
        {
            "op": "add",
            "path": pointer("spec", "containers", 0, "resources", "limits", SCHEDULER_RESOURCE),
            "value": "1",
        }
    ]


def _drop_native_ops(raw: Mapping[str, Any]) -> list[dict[str, Any]]:
    ops: list[dict[str, Any]] = []
    for index, container in enumerate((raw.get("spec") or {}).get("containers") or []):
        for section in ("limits", "requests"):
            amounts = (container.get("resources") or {}).get(section) or {}
            if NATIVE_GPU_RESOURCE in amounts:
                ops.append(
                    {
                        "op": "remove",
                        "path": pointer(
                            "spec", "containers", index, "resources", section, NATIVE_GPU_RESOURCE
                        ),
                    }
                )
    return ops


def _apply_quota_defaults(notes: dict[str, str], quota: GPUResourceQuota | None) -> None:
    if quota is None:
        return
    single = quota.spec.single
    for resource, request_key, limit_key in (
        ("tflops", c.ANNOTATION_TFLOPS_REQUEST, c.ANNOTATION_TFLOPS_LIMIT),
        ("vram", c.ANNOTATION_VRAM_REQUEST, c.ANNOTATION_VRAM_LIMIT),
    ):
        if request_key in notes or limit_key in notes:
            continue
        if resource == "tflops" and (
            c.ANNOTATION_COMPUTE_PERCENT_REQUEST in notes or c.ANNOTATION_COMPUTE_PERCENT_LIMIT in notes
        ):
            continue
        for source, key in ((single.default_requests, request_key), (single.default_limits, limit_key)):
            value = getattr(source, resource) if source is not None else None
            if value is not None:
                notes[key] = str(value)


def _default_request_to_limit(notes: dict[str, str]) -> None:
    for request_key, limit_key in (
        (c.ANNOTATION_TFLOPS_REQUEST, c.ANNOTATION_TFLOPS_LIMIT),
        (c.ANNOTATION_VRAM_REQUEST, c.ANNOTATION_VRAM_LIMIT),
        (c.ANNOTATION_COMPUTE_PERCENT_REQUEST, c.ANNOTATION_COMPUTE_PERCENT_LIMIT),
    ):
        if request_key not in notes and limit_key in notes:
            notes[request_key] = notes[limit_key]
        if limit_key not in notes and request_key in notes:
            notes[limit_key] = notes[request_key]


def _refuse_scheduler_owned(pod: Pod) -> None:
    """GPUs are chosen by the scheduler: a pod may not arrive naming its own."""
    for key in SCHEDULER_OWNED:
        if key in pod.metadata.annotations:
            raise Denial(
                f"annotation {key} is written by {c.SCHEDULER_NAME} when it binds the pod, never by "
                "its author: remove it (the scheduler chooses the GPUs; gpu-indices or gpu-model "
                "constrain its choice)"
            )


def _refuse_borrowed_scheduling(pod: Pod) -> None:
    """A pod the webhook does not move may not ask for index resources or name the scheduler
    unless it is a native GPU pod (progressive migration routes those): anything else would be
    placed by tensor-fusion-scheduler with no GPUs and no record, and sit as a claimant the device
    plugin cannot tell from a real worker."""
    if may_use_the_gpu_scheduler(pod):
        return
    if asks_for_index_resources(pod):
        raise Denial(
            "the pod asks for a tensor-fusion.ai/index_* resource but not for GPUs: those resources "
            "are added by gpupool's webhook to pods labelled tensor-fusion.ai/enabled=true that set "
            "GPU annotations (tflops, compute-percent or vram, or dedicated-gpu); remove them, or "
            "label the pod and ask for GPUs"
        )
    if pod.spec.scheduler_name == c.SCHEDULER_NAME:
        raise Denial(
            f"the pod names {c.SCHEDULER_NAME} but does not ask gpupool for GPUs: label it "
            "tensor-fusion.ai/enabled=true with GPU annotations, or leave schedulerName unset"
        )


def _enabled_here(pod: Pod, ctx: AdmissionContext, notes: list[str]) -> bool:
    if pod.metadata.labels.get(c.LABEL_ENABLED) != "true":
        return False
    text = pod.metadata.annotations.get(c.ANNOTATION_ENABLED_REPLICAS)
    if text is None:
        return True
    try:
        wanted = int(text.strip())
    except ValueError:
        raise Denial(f"annotation {c.ANNOTATION_ENABLED_REPLICAS}={text!r} is not a whole number") from None
    if wanted < 0:
        raise Denial(f"annotation {c.ANNOTATION_ENABLED_REPLICAS}={text!r} must not be negative")
    if ctx.migrated_replicas >= wanted:
        notes.append(
            f"{ctx.migrated_replicas} of {wanted} enabled replicas already use TensorFusion; "
            "this one keeps nvidia.com/gpu"
        )
        return False
    return True


def mutate_pod(raw: Mapping[str, Any], namespace: str, ctx: AdmissionContext) -> Mutation:
    """The JSONPatch for one pod CREATE, or Denial with the reason."""
    try:
        pod = Pod.model_validate(raw)
    except ValidationError as exc:
        raise Denial(f"pod object is not readable: {exc.errors()[0].get('msg', exc)}") from None
    _refuse_scheduler_owned(pod)
    notes_out: list[str] = []
    if not _enabled_here(pod, ctx, notes_out):
        _refuse_borrowed_scheduling(pod)
        return _route_native(raw, pod, ctx, notes_out)
    if pod.spec.node_name:
        raise Denial(
            f"spec.nodeName is preset to {pod.spec.node_name!r}: a TensorFusion pod is placed by "
            f"{c.SCHEDULER_NAME}, which chooses its node and GPUs; remove spec.nodeName "
            "(use nodeSelector or node affinity to constrain it)"
        )
    notes = dict(pod.metadata.annotations)
    profile = apply_workload_profile(notes, ctx.workload_profiles, namespace=namespace)
    if profile is not None:
        notes_out.append(f"GPU wants from WorkloadProfile {profile!r}")
    _apply_quota_defaults(notes, ctx.quota)
    _default_request_to_limit(notes)
    native = _native_gpus(pod)
    has_compute = any(k in notes for k in (c.ANNOTATION_TFLOPS_REQUEST, c.ANNOTATION_COMPUTE_PERCENT_REQUEST))
    dedicated = notes.get(c.ANNOTATION_DEDICATED_GPU, "").strip().lower() == "true"
    if not has_compute and c.ANNOTATION_VRAM_REQUEST not in notes and not dedicated:
        if native == 0:
            raise Denial(
                "pod is labelled tensor-fusion.ai/enabled=true but asks for no GPU: set "
                "tensor-fusion.ai/tflops-request|limit (or compute-percent-request|limit) "
                "and vram-request|limit"
            )
        notes[c.ANNOTATION_COMPUTE_PERCENT_REQUEST] = notes[c.ANNOTATION_COMPUTE_PERCENT_LIMIT] = "100"
        notes[c.ANNOTATION_DEDICATED_GPU] = "true"
        dedicated = True
        notes_out.append(f"no GPU annotations: {native} whole GPU(s) from nvidia.com/gpu")
    if not dedicated and c.ANNOTATION_VRAM_REQUEST not in notes:
        raise Denial(
            "pod asks for no VRAM: set tensor-fusion.ai/vram-request|limit (or give the namespace's "
            "GPUResourceQuota single.defaultRequests.vram); a worker sharing a GPU is held to its "
            "VRAM limit, and one without any would be held to nothing"
        )
    if native and c.ANNOTATION_GPU_COUNT not in notes:
        notes[c.ANNOTATION_GPU_COUNT] = str(native)
    pool = notes.get(c.ANNOTATION_GPU_POOL) or ctx.default_pool
    if not pool:
        raise Denial(f"no {c.ANNOTATION_GPU_POOL} annotation and no default GPU pool in the cluster")
    if ctx.pools and pool not in ctx.pools:
        raise Denial(f"GPU pool {pool!r} does not exist (known pools: {', '.join(sorted(ctx.pools))})")
    notes[c.ANNOTATION_GPU_POOL] = pool
    notes.setdefault(c.ANNOTATION_ISOLATION, c.DEFAULT_ISOLATION)
    explicit_qos = c.ANNOTATION_QOS in notes
    if not explicit_qos:
        balanced = all(
            notes.get(request_key) == notes.get(limit_key)
            for request_key, limit_key in (
                (c.ANNOTATION_TFLOPS_REQUEST, c.ANNOTATION_TFLOPS_LIMIT),
                (c.ANNOTATION_VRAM_REQUEST, c.ANNOTATION_VRAM_LIMIT),
                (c.ANNOTATION_COMPUTE_PERCENT_REQUEST, c.ANNOTATION_COMPUTE_PERCENT_LIMIT),
            )
        )
        pool_info = ctx.pools.get(pool)
        notes[c.ANNOTATION_QOS] = "high" if balanced else (pool_info and pool_info.default_qos) or "medium"
    ceiling = qos_ceiling(ctx.quota)
    bounded = bound_qos(notes[c.ANNOTATION_QOS], ceiling, explicit=explicit_qos, namespace=namespace)
    if bounded != notes[c.ANNOTATION_QOS]:
        notes_out.append(f"qos {notes[c.ANNOTATION_QOS]} lowered to {bounded}, the namespace's ceiling")
        notes[c.ANNOTATION_QOS] = bounded
    candidate = pod.model_copy(
        update={"metadata": pod.metadata.model_copy(update={"annotations": notes, "namespace": namespace})}
    )
    try:
        request = request_from_pod(candidate, default_pool=pool)
    except RequestError as exc:
        raise Denial(str(exc)) from None
    check_quota(request, ctx.quota, ctx.quota_usage, largest_gpu=ctx.largest_gpu)
    return Mutation(_patch(raw, pod, notes, ctx), notes_out, migrated=True)


def _patch(
    raw: Mapping[str, Any], pod: Pod, notes: dict[str, str], ctx: AdmissionContext
) -> list[dict[str, Any]]:
    ops: list[dict[str, Any]] = []
    existing = (raw.get("metadata") or {}).get("annotations")
    if not isinstance(existing, Mapping):
        ops.append({"op": "add", "path": "/metadata/annotations", "value": notes})
    else:
        for key, value in sorted(notes.items()):
            if existing.get(key) != value:
                ops.append({"op": "add", "path": pointer("metadata", "annotations", key), "value": value})
    ops.append({"op": "add", "path": "/spec/schedulerName", "value": c.SCHEDULER_NAME})
    ops += _drop_native_ops(raw)
    ops += _index_resource_ops(raw)
    if ctx.progressive_migration:
        ops += _tolerate_used_by(raw)
    return ops


def _tolerate_used_by(raw: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Workers tolerate the used-by taint: it repels native GPU pods, not gpupool's own packing."""
    toleration = {"key": c.TAINT_USED_BY, "operator": "Exists", "effect": c.TAINT_USED_BY_EFFECT}
    existing = (raw.get("spec") or {}).get("tolerations")
    if not isinstance(existing, list):
        return [{"op": "add", "path": "/spec/tolerations", "value": [toleration]}]
    if toleration in existing:
        return []
    return [{"op": "add", "path": "/spec/tolerations/-", "value": toleration}]
