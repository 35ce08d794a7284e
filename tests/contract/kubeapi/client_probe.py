"""Run by `test_client_versions.py` under each official client version: CRUD, a conflict, a
list-then-watch (the informer pattern) and a `Watch().stream` against the embedded API server;
prints what it observed as one JSON object (no assertions here — the test compares).

    python client_probe.py KUBECONFIG NAMESPACE
"""

from __future__ import annotations

import json
import sys
import threading
import time

import kubernetes
from kubernetes import client, config, watch
from kubernetes.client.exceptions import ApiException


def _pod(name: str) -> dict[str, object]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "labels": {"app": "probe"}},
        "spec": {"containers": [{"name": "main", "image": "busybox:1.36"}]},
    }


def main() -> None:
    kubeconfig, namespace = sys.argv[1], sys.argv[2]
    core = client.CoreV1Api(config.new_client_from_config(config_file=kubeconfig))
    seen: dict[str, object] = {"version": kubernetes.__version__}

    created = core.create_namespaced_pod(namespace, _pod("first"))
    seen["defaults"] = [
        created.spec.restart_policy,
        created.spec.scheduler_name,
        created.spec.containers[0].image_pull_policy,
    ]
    listed = core.list_namespaced_pod(namespace, label_selector="app=probe")
    seen["listed"] = [p.metadata.name for p in listed.items]

    stale = created.metadata.resource_version
    core.patch_namespaced_pod("first", namespace, {"metadata": {"labels": {"step": "1"}}})
    stale_body = _pod("first")
    stale_body["metadata"]["resourceVersion"] = stale  # type: ignore[index]
    try:
        core.replace_namespaced_pod("first", namespace, stale_body)
        seen["conflict"] = None
    except ApiException as error:
        seen["conflict"] = [error.status, json.loads(error.body)["reason"]]

    # The informer pattern: list, then watch from the list's resourceVersion.
    events: list[list[str]] = []
    stream = watch.Watch()

    def follow() -> None:
        for event in stream.stream(
            core.list_namespaced_pod,
            namespace,
            resource_version=listed.metadata.resource_version,
            timeout_seconds=5,
        ):
            events.append([event["type"], event["object"].metadata.name])
            if len(events) >= 3:
                stream.stop()

    follower = threading.Thread(target=follow)
    follower.start()
    time.sleep(0.5)
    core.create_namespaced_pod(namespace, _pod("second"))
    core.delete_namespaced_pod("second", namespace)
    follower.join(timeout=10)
    seen["informer_events"] = events

    initial = []
    for event in watch.Watch().stream(core.list_namespaced_pod, namespace, timeout_seconds=1):
        initial.append([event["type"], event["object"].metadata.name])
    seen["watch_from_now"] = initial
    core.delete_namespaced_pod("first", namespace)
    print(json.dumps(seen))


if __name__ == "__main__":
    main()
