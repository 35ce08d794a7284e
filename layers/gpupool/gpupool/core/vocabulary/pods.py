"""What a TensorFusion pod is, which pool it belongs to, and when it waits for GPU capacity.

Role: the one definition the relay's translator, AutoSelect's pod reader and anything else that
sorts pods use, on the typed ``Pod`` model. Read from TensorFusion's public source (v2.17.x):

- **A TensorFusion pod** is labelled ``tensor-fusion.ai/enabled=true`` — what TensorFusion's
  webhook admits (``utils.IsTensorFusionPod``; its auto-migration adds the label to each native GPU
  pod it migrates) and what gpupool's webhook admits (``scheduler.admission.mutate``) — or
  ``tensor-fusion.ai/component=worker``: the worker pods TensorFusion's controller generates for
  a remote-vGPU workload (``internal/worker``) carry that label, TensorFusion's schedulerName
  and a pool annotation, but no ``enabled`` label; local-GPU pods get the worker label from the
  webhook too. The schedulerName does **not** make a pod a TensorFusion pod: in progressive
  migration both webhooks route native ``nvidia.com/gpu`` pods to tensor-fusion-scheduler while
  leaving them native, and a pod over its ``enabled-replicas`` keeps its labels but not the
  mutation.
- **Its pool** is the ``tensor-fusion.ai/gpupool`` annotation — the user's choice TensorFusion's
  webhook reads (``checkAndGetValidGPUPool``), which gpupool's webhook always writes (default
  pool filled in) and TensorFusion's worker generator sets — else the label of the same name,
  which TensorFusion's webhook writes on every pod it admits (``assignPodLabelsAndAnnotations``).
  When both are present they name the same pool (the label is written from the validated
  annotation).
- **Asks gpupool for GPUs** (``asks_gpupool_for_gpus``): labelled ``tensor-fusion.ai/enabled=true``,
  holding no native ``nvidia.com/gpu`` (a replica over ``enabled-replicas`` keeps the label but
  stays native), and carrying a GPU request — a TFLOPS, compute-percent or VRAM request or limit,
  or ``dedicated-gpu: "true"``. The webhook admits such pods, the extender places and binds only
  them (with an allocation record), and the device plugin and agent serve only them. The one other
  kind of pod allowed to name tensor-fusion-scheduler or ask for a ``tensor-fusion.ai/index_*``
  resource is a native GPU pod (``holds_native_gpus``) that progressive migration routes there to
  keep it apart from gpupool's workers (``may_use_the_gpu_scheduler``); the chart's pod guard
  evaluates the same rule in CEL (``incluster/chart/templates/pod-guard.yaml``, tested against
  these functions).
- **Unschedulable** (waiting for GPU capacity): a TensorFusion pod that is not a client (a
  remote-vGPU client, ``component=client``, asks for no GPU on its own node; TensorFusion's
  expander acts only on workers, ``expander.HandleRejectedPod``), not bound to a node, not being
  deleted, whose ``PodScheduled`` condition is False with reason ``Unschedulable``.

Must not: read the cluster, the clock or the pod's raw dictionary (parse it into ``Pod`` first).
"""

from __future__ import annotations

from collections.abc import Callable

from gpupool.core.model import constants as c
from gpupool.core.model.foreign import Pod

__all__ = [
    "GPU_REQUEST_ANNOTATIONS",
    "NATIVE_GPU_RESOURCE",
    "asks_for_index_resources",
    "asks_gpupool_for_gpus",
    "holds_native_gpus",
    "is_tensorfusion_pod",
    "is_unschedulable",
    "may_use_the_gpu_scheduler",
    "pool_of",
]

NATIVE_GPU_RESOURCE = "nvidia.com/gpu"
INDEX_RESOURCE_PREFIX = f"{c.DOMAIN}/index_"
# Any one of these (or dedicated-gpu "true") makes a labelled pod ask for GPUs.
GPU_REQUEST_ANNOTATIONS = (
    c.ANNOTATION_TFLOPS_REQUEST,
    c.ANNOTATION_TFLOPS_LIMIT,
    c.ANNOTATION_VRAM_REQUEST,
    c.ANNOTATION_VRAM_LIMIT,
    c.ANNOTATION_COMPUTE_PERCENT_REQUEST,
    c.ANNOTATION_COMPUTE_PERCENT_LIMIT,
)


def _asks(pod: Pod, wanted: Callable[[str], bool]) -> bool:
    return any(
        wanted(name)
        for container in (*pod.spec.containers, *pod.spec.init_containers)
        for name in (*container.resources.limits, *container.resources.requests)
    )


def holds_native_gpus(pod: Pod) -> bool:
    """A container (or init container) asks for ``nvidia.com/gpu``."""
    return _asks(pod, lambda name: name == NATIVE_GPU_RESOURCE)


def asks_for_index_resources(pod: Pod) -> bool:
    """A container (or init container) asks for a ``tensor-fusion.ai/index_*`` resource."""
    return _asks(pod, lambda name: name.startswith(INDEX_RESOURCE_PREFIX))


def asks_gpupool_for_gpus(pod: Pod) -> bool:
    """Labelled enabled, holding no native GPU, carrying a GPU request (module docstring)."""
    notes = pod.metadata.annotations
    if pod.metadata.labels.get(c.LABEL_ENABLED) != "true" or holds_native_gpus(pod):
        return False
    dedicated = notes.get(c.ANNOTATION_DEDICATED_GPU, "").strip().lower() == "true"
    return dedicated or any(key in notes for key in GPU_REQUEST_ANNOTATIONS)


def may_use_the_gpu_scheduler(pod: Pod) -> bool:
    """Allowed to name tensor-fusion-scheduler or ask for index resources: a pod asking gpupool
    for GPUs, or a native GPU pod (progressive migration routes those there)."""
    return asks_gpupool_for_gpus(pod) or holds_native_gpus(pod)


def is_tensorfusion_pod(pod: Pod) -> bool:
    """Labelled ``tensor-fusion.ai/enabled=true``, or a TensorFusion worker (``component=worker``)."""
    labels = pod.metadata.labels
    return labels.get(c.LABEL_ENABLED) == "true" or labels.get(c.LABEL_COMPONENT) == c.COMPONENT_WORKER


def pool_of(pod: Pod) -> str | None:
    """The pod's GPU pool: the ``tensor-fusion.ai/gpupool`` annotation, else that label; None: neither."""
    return (
        pod.metadata.annotations.get(c.ANNOTATION_GPU_POOL)
        or pod.metadata.labels.get(c.LABEL_GPU_POOL)
        or None
    )


def is_unschedulable(pod: Pod) -> bool:
    """A TensorFusion pod (not a client) the scheduler could not place: waiting for GPU capacity."""
    if not is_tensorfusion_pod(pod) or pod.metadata.labels.get(c.LABEL_COMPONENT) == c.COMPONENT_CLIENT:
        return False
    if pod.spec.node_name or pod.metadata.deletion_timestamp is not None:
        return False
    return any(
        condition.type == "PodScheduled"
        and condition.status == "False"
        and condition.reason == "Unschedulable"
        for condition in pod.status.conditions
    )
