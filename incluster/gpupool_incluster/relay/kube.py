"""The relay's Kubernetes side: bind's writes and the watches that keep the hub current.

Role: `KubeWriter` reads a pod, merges the GPU annotation onto it and creates the pods/binding
subresource (a conflict — the pod already bound — surfaces as an exception, so the hub releases
its reservation). `start_watches` lists then watches GPUs, GPUPools, SchedulingConfigTemplates,
GPUResourceQuotas, WorkloadProfiles, Nodes and Pods (skipping an unreadable object) with the
official client, one daemon thread each, relisting after any error (a relist replaces what that
kind knew, so nothing deleted while disconnected lingers), and starts the hub's taint keeper
when progressive migration is on. `KubeWriter` also edits that one taint (`set_used_by_taint`).

Must not: decide placement or admission.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Mapping
from typing import Any

from kubernetes import client as _client
from kubernetes import watch as _watch

from gpupool.core.allocator.progressive import taints_after
from gpupool.core.model import constants as c
from gpupool_incluster.relay.hub import SchedulerHub
from gpupool_incluster.relay.unreadable import event_reporter, skipping_unreadable

__all__ = ["KubeWriter", "start_watches"]

log = logging.getLogger("gpupool.relay")
Apply = Callable[..., None]
# The client's own annotations are partial; it is used through Any at this boundary.
client: Any = _client
watch: Any = _watch


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


def _watch_forever(
    api: Any,
    kind: str,
    lister: Callable[..., Any],
    apply: Apply,
    stop: threading.Event,
    synced: threading.Event,
) -> None:
    known: dict[str, dict[str, Any]] = {}
    while not stop.is_set():
        try:
            listing = lister()
            listing = listing if isinstance(listing, dict) else api.sanitize_for_serialization(listing)
            items = {_key(i): i for i in listing.get("items") or []}
            for key, gone in list(known.items()):
                if key not in items:
                    apply(gone, deleted=True)
            for item in items.values():
                apply(item)
            known = items
            synced.set()
            version = (listing.get("metadata") or {}).get("resourceVersion")
            stream = watch.Watch().stream(lister, resource_version=version, timeout_seconds=300)
            for event in stream:
                if stop.is_set():
                    return
                raw = event["object"]
                item = raw if isinstance(raw, dict) else api.sanitize_for_serialization(raw)
                if event["type"] == "ERROR":
                    break
                deleted = event["type"] == "DELETED"
                apply(item, deleted=deleted)
                if deleted:
                    known.pop(_key(item), None)
                else:
                    known[_key(item)] = item
        except Exception as exc:
            log.warning("watch of %s failed, relisting: %s", kind, exc)
            stop.wait(1.0)


def _key(item: Mapping[str, Any]) -> str:
    meta = item.get("metadata") or {}
    return f"{meta.get('namespace') or ''}/{meta.get('name') or ''}"


def start_watches(api: Any, hub: SchedulerHub, stop: threading.Event) -> list[threading.Thread]:
    """One watch thread per kind; `hub.synced` is set once every kind has been listed. An object
    a watch cannot read is skipped with a Warning Event on it (`unreadable`)."""
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
    flags = [threading.Event() for _ in kinds]
    threads = []
    for (kind, lister, apply), flag in zip(kinds, flags, strict=True):
        thread = threading.Thread(
            target=_watch_forever,
            args=(api, kind, lister, apply, stop, flag),
            name=f"watch-{kind}",
            daemon=True,
        )
        thread.start()
        threads.append(thread)

    def mark_synced() -> None:
        for flag in flags:
            while not flag.wait(0.2):
                if stop.is_set():
                    return
        hub.synced.set()

    threading.Thread(target=mark_synced, name="watch-synced", daemon=True).start()
    if hub.taints is not None:
        threads.append(hub.taints.start(stop))
    time.sleep(0)
    return threads
