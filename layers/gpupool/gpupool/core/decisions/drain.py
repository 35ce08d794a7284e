"""Drain policy: which pods a drain evicts, and which must be gone before the instance may go.

Role: `evictable(pod)` — a drain evicts every pod on the node except DaemonSet pods (their
controller would put them back), mirror pods (the kubelet owns them), finished pods and pods
already being deleted. `still_running(pods)` — the pods that keep a node from being drained:
every pod but DaemonSet, mirror and finished ones, including those already terminating (an
evicted pod is gone only when its object is). The service's drain evicts the first and waits,
up to a deadline, until the second is empty before the instance is terminated.

Must not: evict, wait or read the clock; the service does, through its ports.
"""

from __future__ import annotations

from collections.abc import Iterable

from gpupool.core.model.foreign import Pod

__all__ = ["evictable", "pod_key", "still_running"]

_MIRROR = "kubernetes.io/config.mirror"


def pod_key(pod: Pod) -> str:
    return f"{pod.metadata.namespace or 'default'}/{pod.name}"


def _left_alone(pod: Pod) -> bool:
    """DaemonSet and mirror pods stay with the node; finished pods hold nothing."""
    owners = {ref.kind for ref in pod.metadata.owner_references}
    return (
        "DaemonSet" in owners
        or _MIRROR in pod.metadata.annotations
        or pod.status.phase in ("Succeeded", "Failed")
    )


def evictable(pod: Pod) -> bool:
    return not _left_alone(pod) and pod.metadata.deletion_timestamp is None


def still_running(pods: Iterable[Pod]) -> list[str]:
    """The pods (namespace/name, sorted) that must be gone before the node counts as drained."""
    return sorted(pod_key(p) for p in pods if not _left_alone(p))
