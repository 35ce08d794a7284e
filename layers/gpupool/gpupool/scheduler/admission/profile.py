"""A pod's `tensor-fusion.ai/workload-profile`: the profile's wants become the pod's annotations.

Role: `apply_workload_profile(notes, profiles)` fills each GPU annotation the pod did not set
from the named WorkloadProfile of the pod's namespace — requests and limits (TFLOPS, compute
percent, VRAM), gpu-count, gpu-model, vendor, qos, pool, isolation, is-local-gpu, gpu-indices
and gangScheduling (as gang-min-members / gang-timeout). An annotation on the pod wins over the
profile (it is the more specific of the two, as in TensorFusion's webhook). A named profile
that does not exist is a Denial.

Must not: read the cluster (the relay passes the namespace's profiles in) or judge the values
(the webhook's checks run afterwards, on the merged annotations).
"""

from __future__ import annotations

from collections.abc import Mapping, MutableMapping

from gpupool.core.model import constants as c
from gpupool.core.model.base import Resource
from gpupool.core.model.workload import WorkloadProfileSpec
from gpupool.scheduler.admission.errors import Denial

__all__ = ["apply_workload_profile", "profile_annotations"]


def _resource_annotations(
    resource: Resource | None, *, tflops: str, compute: str, vram: str
) -> dict[str, str]:
    if resource is None:
        return {}
    out: dict[str, str] = {}
    if resource.tflops is not None:
        out[tflops] = str(resource.tflops)
    if resource.compute is not None:
        out[compute] = str(resource.compute)
    if resource.vram is not None:
        out[vram] = str(resource.vram)
    return out


def profile_annotations(spec: WorkloadProfileSpec) -> dict[str, str]:
    """The pod annotations a WorkloadProfile stands for."""
    out: dict[str, str] = {}
    resources = spec.resources
    if resources is not None:
        out |= _resource_annotations(
            resources.requests,
            tflops=c.ANNOTATION_TFLOPS_REQUEST,
            compute=c.ANNOTATION_COMPUTE_PERCENT_REQUEST,
            vram=c.ANNOTATION_VRAM_REQUEST,
        )
        out |= _resource_annotations(
            resources.limits,
            tflops=c.ANNOTATION_TFLOPS_LIMIT,
            compute=c.ANNOTATION_COMPUTE_PERCENT_LIMIT,
            vram=c.ANNOTATION_VRAM_LIMIT,
        )
    scalars = {
        c.ANNOTATION_GPU_COUNT: spec.gpu_count or None,
        c.ANNOTATION_GPU_MODEL: spec.gpu_model or None,
        c.ANNOTATION_VENDOR: spec.vendor or None,
        c.ANNOTATION_QOS: spec.qos,
        c.ANNOTATION_GPU_POOL: spec.pool_name or None,
        c.ANNOTATION_ISOLATION: spec.isolation if "isolation" in spec.model_fields_set else None,
    }
    out |= {key: str(value) for key, value in scalars.items() if value is not None}
    if spec.is_local_gpu is not None:
        out[c.ANNOTATION_IS_LOCAL_GPU] = "true" if spec.is_local_gpu else "false"
    if spec.gpu_indices:
        out[c.ANNOTATION_GPU_INDICES] = ",".join(str(index) for index in spec.gpu_indices)
    gang = spec.gang_scheduling
    if gang is not None and gang.min_members:
        out[c.ANNOTATION_GANG_MIN_MEMBERS] = str(gang.min_members)
        if gang.timeout:
            out[c.ANNOTATION_GANG_TIMEOUT] = gang.timeout
    return out


def apply_workload_profile(
    notes: MutableMapping[str, str], profiles: Mapping[str, WorkloadProfileSpec], *, namespace: str
) -> str | None:
    """Fill `notes` from the profile the pod names; returns the profile's name, or None."""
    name = notes.get(c.ANNOTATION_WORKLOAD_PROFILE, "").strip()
    if not name:
        return None
    spec = profiles.get(name)
    if spec is None:
        raise Denial(
            f"annotation {c.ANNOTATION_WORKLOAD_PROFILE}={name!r}: no WorkloadProfile {name!r} "
            f"in namespace {namespace!r}"
        )
    for key, value in profile_annotations(spec).items():
        notes.setdefault(key, value)
    return name
