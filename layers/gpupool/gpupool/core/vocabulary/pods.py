"""What a TensorFusion pod is, which pool it belongs to, and when it waits for GPU capacity.

Role: the one definition the relay's translator, AutoSelect's pod reader and anything else that
sorts pods use, on the typed ``Pod`` model. Read from TensorFusion's public source (v2.17.x):

- **A TensorFusion pod** is labelled ``tensor-fusion.ai/enabled=true`` — what TensorFusion's
  webhook admits (``utils.IsTensorFusionPod``; its auto-migration adds the label to each native GPU
  pod it migrates) and what gpupool's webhook admits (``core.admission.mutate``) — or
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
- **Unschedulable** (waiting for GPU capacity): a TensorFusion pod that is not a client (a
  remote-vGPU client, ``component=client``, asks for no GPU on its own node; TensorFusion's
  expander acts only on workers, ``expander.HandleRejectedPod``), not bound to a node, not being
  deleted, whose ``PodScheduled`` condition is False with reason ``Unschedulable``.

Must not: read the cluster, the clock or the pod's raw dictionary (parse it into ``Pod`` first).
"""

from __future__ import annotations

from gpupool.core.model import constants as c
from gpupool.core.model.foreign import Pod

__all__ = ["is_tensorfusion_pod", "is_unschedulable", "pool_of"]


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
