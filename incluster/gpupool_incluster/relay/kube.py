"""The relay's Kubernetes side: bind's writes and the watches that keep the hub current.

Role: `KubeWriter` reads a pod, merges the GPU annotation onto it and creates the pods/binding
subresource (a conflict — the pod already bound — surfaces as an exception, so the hub releases
its reservation). `start_watches` lists then watches GPUs, GPUPools, SchedulingConfigTemplates,
GPUResourceQuotas, WorkloadProfiles, Nodes and Pods with the official client, one daemon thread
each (`watching.ListWatch`: resumes from the last resourceVersion, re-lists on 410 Gone or an
error, and a re-list reports what vanished meanwhile as deleted, so nothing lingers; an object a
watch cannot read is skipped with a Warning Event on it), and starts the hub's taint keeper when
progressive migration is on. `KubeWriter` also edits that one taint (`set_used_by_taint`).

Must not: decide placement or admission.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Mapping
from typing import Any

from kubernetes import client as _client

from gpupool.core.allocator.progressive import taints_after
from gpupool.core.model import constants as c
from gpupool_incluster.relay.hub import SchedulerHub
from gpupool_incluster.relay.metrics import RelayMetrics
from gpupool_incluster.relay.unreadable import event_reporter, skipping_unreadable
from gpupool_incluster.relay.watching import ListWatch

__all__ = ["KubeWriter", "start_watches"]

log = logging.getLogger("gpupool.relay")
Apply = Callable[..., None]
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


def _custom_lister(api: Any, plural: str) -> Callable[..., Any]:
    custom = client.CustomObjectsApi(api)

    def lister(**kwargs: Any) -> Any:
        return custom.list_cluster_custom_object(c.API_GROUP, "v1", plural, **kwargs)

    return lister


def _applier(apply: Apply) -> Callable[[Mapping[str, Any], bool], None]:
    def on_change(obj: Mapping[str, Any], deleted: bool) -> None:
        apply(obj, deleted=deleted)

    return on_change


def start_watches(
    api: Any, hub: SchedulerHub, stop: threading.Event, metrics: RelayMetrics | None = None
) -> list[threading.Thread]:
    """One list+watch thread per kind (`watching.ListWatch`: bookmarks, re-list on 410 Gone, back-off
    on errors, restarts counted in `metrics`); `hub.synced` is set once every kind has been listed.
    An object a watch cannot read is skipped with a Warning Event on it (`unreadable`)."""
    core = client.CoreV1Api(api)
    report = event_reporter(api)
    kinds: list[tuple[str, Callable[..., Any], Apply]] = [
        (kind, lister, skipping_unreadable(model_kind, apply, report))
        for kind, model_kind, lister, apply in (
            ("gpupools", "GPUPool", _custom_lister(api, "gpupools"), hub.apply_pool),
            (
                "schedulingconfigtemplates",
                "SchedulingConfigTemplate",
                _custom_lister(api, "schedulingconfigtemplates"),
                hub.apply_template,
            ),
            (
                "gpuresourcequotas",
                "GPUResourceQuota",
                _custom_lister(api, "gpuresourcequotas"),
                hub.apply_quota,
            ),
            (
                "workloadprofiles",
                "WorkloadProfile",
                _custom_lister(api, "workloadprofiles"),
                hub.apply_profile,
            ),
            ("nodes", "Node", core.list_node, hub.apply_node),
            ("gpus", "GPU", _custom_lister(api, "gpus"), hub.apply_gpu),
            ("pods", "Pod", core.list_pod_for_all_namespaces, hub.apply_pod),
        )
    ]
    counters = metrics or RelayMetrics()
    watches = [
        ListWatch(kind, lister, _applier(apply), stop=stop, metrics=counters) for kind, lister, apply in kinds
    ]
    threads = [watch.start() for watch in watches]

    def mark_synced() -> None:
        for watch in watches:
            while not watch.synced.wait(0.2):
                if stop.is_set():
                    return
        hub.synced.set()

    threading.Thread(target=mark_synced, name="watch-synced", daemon=True).start()
    if hub.taints is not None:
        threads.append(hub.taints.start(stop))
    time.sleep(0)
    return threads
