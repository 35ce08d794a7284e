"""Whether a pending pod would fit a new node like an AutoSelect template, GPU checks off.

Role: `non_gpu_blocker(pod, template node, template NodeClaim)` — the reason a pod needs more
than GPU capacity (a nodeSelector the template lacks, an untolerated hard taint, more CPU or
memory than such a node has), or None; the nodeSelector is read by the one requirement algebra
(`core.model.requirements`), on every label but the instance type and zone a candidate narrows.

Must not: perform I/O or decide expansions (`decisions.autoselect`).
"""

from __future__ import annotations

from gpupool.core.model.constants import KEY_INSTANCE_TYPE, KEY_ZONE
from gpupool.core.model.foreign import Node, Pod
from gpupool.core.model.karpenter import KarpenterNodeClaim
from gpupool.core.model.requirements import holds
from gpupool.core.quantity import Quantity

__all__ = ["non_gpu_blocker"]

_NARROWED = (KEY_INSTANCE_TYPE, KEY_ZONE)
_HARD_EFFECTS = ("NoSchedule", "NoExecute")


def _requests(pod: Pod, resource: str) -> Quantity:
    total = Quantity(0)
    for container in pod.spec.containers:
        total = total + container.resources.requests.get(resource, Quantity(0))
    return total


def _tolerated(pod: Pod, key: str, value: str | None, effect: str) -> bool:
    for toleration in pod.spec.tolerations:
        if toleration.effect not in (None, "", effect):
            continue
        if toleration.operator == "Exists" and toleration.key in (None, "", key):
            return True
        if toleration.key == key and (toleration.value or None) == (value or None):
            return True
    return False


def non_gpu_blocker(pod: Pod, template: Node, nodeclaim: KarpenterNodeClaim) -> str | None:
    """Why `pod` would not fit a new node like `template` even with GPU checks off (None: it fits)."""
    for key, wanted in pod.spec.node_selector.items():
        if key not in _NARROWED and not holds("In", (wanted,), template.metadata.labels.get(key)):
            return f"nodeSelector {key}={wanted} does not match the template node {template.name}"
    for taint in nodeclaim.spec.taints:
        if taint.effect in _HARD_EFFECTS and not _tolerated(pod, taint.key, taint.value, taint.effect):
            return f"it does not tolerate the taint {taint.key}={taint.value or ''}:{taint.effect}"
    for resource in ("cpu", "memory"):
        need, has = _requests(pod, resource), template.status.allocatable.get(resource)
        if has is not None and need > has:
            return f"it requests {resource} {need}, more than the {has} a {template.name}-like node has"
    return None
