"""The relay's Kubernetes side: bind's writes and the watches that keep the hub current.

Role: `KubeWriter` reads a pod, merges the GPU annotation onto it and creates the pods/binding
subresource (a conflict — the pod already bound — surfaces as an exception, so the hub releases
its reservation). `subscribe_hub` subscribes the hub to the process's shared streams
(`informers`: one list+watch per resource, resumed from the last resourceVersion, re-listed on
410 Gone or an error with what vanished meanwhile reported deleted, an unreadable object skipped
with a Warning Event on it) of GPUs, GPUPools, SchedulingConfigTemplates, GPUResourceQuotas,
WorkloadProfiles, Nodes, Pods and Karpenter NodeClaims (AutoSelect's expansion reservations; a
cluster without Karpenter's CRD lists none and stays synced), sets `hub.synced` once each has
listed, and starts the hub's taint keeper when progressive migration is on; `start_watches` does
the same over streams of the hub's own (a process with no forwarder). `KubeWriter` also edits that one taint
(`set_used_by_taint`) and the usable-GPUs label (`set_usable_gpus`), and `subscribe_hub` starts
the hub's label keeper.

Must not: decide placement or admission.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Mapping
from typing import Any

from kubernetes import client as _client

from gpupool.core.allocator.usable_gpus import LABEL_USABLE_GPUS
from gpupool.core.model.foreign import Node, Pod
from gpupool.core.model.karpenter import KarpenterNodeClaim
from gpupool.core.model.node import GPU
from gpupool.core.model.pool import GPUPool
from gpupool.core.model.quota import GPUResourceQuota
from gpupool.core.model.scheduling import SchedulingConfigTemplate
from gpupool.core.model.workload import WorkloadProfile
from gpupool.scheduler.progressive import taints_after
from gpupool_incluster.relay.hub import SchedulerHub
from gpupool_incluster.relay.informers import SharedInformers
from gpupool_incluster.relay.metrics import RelayMetrics

__all__ = ["KubeWriter", "start_watches", "subscribe_hub"]

log = logging.getLogger("gpupool.relay")
# The client's own annotations are partial; it is used through Any at this boundary.
client: Any = _client


class KubeWriter:
    """ClusterWriter over the official client."""

    def __init__(self, api: Any) -> None:
        self.api = api
        self.core = client.CoreV1Api(api)

    def read_pod(self, namespace: str, name: str) -> dict[str, Any]:
        pod = self.core.read_namespaced_pod(name, namespace)
        result: dict[str, Any] = self.api.sanitize_for_serialization(pod)
        return result

    def annotate_pod(self, namespace: str, name: str, annotations: Mapping[str, str | None]) -> None:
        self.core.patch_namespaced_pod(name, namespace, {"metadata": {"annotations": dict(annotations)}})

    def bind_pod(self, namespace: str, name: str, uid: str, node: str) -> None:
        body = {
            "apiVersion": "v1",
            "kind": "Binding",
            "metadata": {"name": name, "namespace": namespace, **({"uid": uid} if uid else {})},
            "target": {"apiVersion": "v1", "kind": "Node", "name": node},
        }
        # _preload_content=False: the client cannot deserialise the Status the server returns.
        self.core.create_namespaced_pod_binding(name, namespace, body, _preload_content=False)

    def set_used_by_taint(self, node: str, present: bool, *, attempts: int = 5) -> bool:
        """Add or clear the progressive-migration taint, keeping every other taint.

        The patch carries the resourceVersion it was computed from, so a concurrent change to
        the Node's taints is a 409 and the edit is recomputed from a fresh read.
        """
        for _ in range(attempts):
            current = self.api.sanitize_for_serialization(self.core.read_node(node))
            wanted = taints_after((current.get("spec") or {}).get("taints") or [], present=present)
            if wanted is None:
                return False
            version = (current.get("metadata") or {}).get("resourceVersion")
            body = {"metadata": {"resourceVersion": version}, "spec": {"taints": wanted}}
            try:
                self.core.patch_node(node, body)
            except client.exceptions.ApiException as exc:
                if exc.status == 409:
                    continue
                raise
            return True
        raise RuntimeError(f"node {node}: its taints kept changing under {attempts} attempts to update them")

    def set_usable_gpus(self, node: str, value: str | None) -> None:
        """A merge patch of that one label (None removes it): other labels are left as they are."""
        self.core.patch_node(node, {"metadata": {"labels": {LABEL_USABLE_GPUS: value}}})


def subscribe_hub(
    hub: SchedulerHub, informers: SharedInformers, stop: threading.Event
) -> list[threading.Thread]:
    """Feed the hub from the shared streams of its kinds; `hub.synced` is set once every one has
    listed. Returns the threads this starts (the sync marker, and the taint keeper when on)."""
    subscriptions = [
        informers.subscribe(GPUPool, hub.apply_pool),
        informers.subscribe(SchedulingConfigTemplate, hub.apply_template),
        informers.subscribe(GPUResourceQuota, hub.apply_quota),
        informers.subscribe(WorkloadProfile, hub.apply_profile),
        informers.subscribe(Node, hub.apply_node),
        informers.subscribe(GPU, hub.apply_gpu),
        informers.subscribe(Pod, hub.apply_pod),
        informers.subscribe(KarpenterNodeClaim, hub.apply_nodeclaim),
    ]
    streams = [subscription.informer for subscription in subscriptions]

    def mark_synced() -> None:
        for stream in streams:
            while not stream.synced.wait(0.2):
                if stop.is_set():
                    return
        hub.synced.set()

    threads = [threading.Thread(target=mark_synced, name="watch-synced", daemon=True)]
    threads[0].start()
    if hub.taints is not None:
        threads.append(hub.taints.start(stop))
    if hub.gpu_labels is not None:
        threads.append(hub.gpu_labels.start(stop))
    return threads


def start_watches(
    api: Any, hub: SchedulerHub, stop: threading.Event, metrics: RelayMetrics | None = None
) -> list[threading.Thread]:
    """`subscribe_hub` over streams of the hub's own, ended by `stop` (a relay without a forwarder)."""
    informers = SharedInformers(api, metrics=metrics or RelayMetrics(), stop=stop)
    return subscribe_hub(hub, informers, stop)
