"""Benchmark of the embedded Kubernetes API server (issue 3): prints figures, asserts nothing.

Creates 1,000 nodes and 10,000 pods over real HTTP (one keep-alive connection, as a
controller's client would), lists pods by label selector, patches pods while a watch
streams the changes, and prints ops/s and latencies. Run:

    .venv/bin/python benchmarks/kubeapi.py [--nodes 1000] [--pods 10000]

The server runs in this process (same GIL as the client), so figures are conservative.
"""

from __future__ import annotations

import argparse
import http.client
import json
import statistics
import threading
import time
from typing import Any
from urllib.parse import quote

from gpupool.sandbox.kubeapi import EmbeddedKubeAPI


class Http:
    def __init__(self, port: int) -> None:
        self.connection = http.client.HTTPConnection("127.0.0.1", port)

    def call(
        self, method: str, path: str, body: Any = None, content_type: str = "application/json"
    ) -> tuple[int, bytes]:
        data = json.dumps(body).encode() if body is not None else None
        headers = {"Content-Type": content_type, "Accept": "application/json"}
        self.connection.request(method, path, body=data, headers=headers)
        response = self.connection.getresponse()
        return response.status, response.read()


def _timed(label: str, count: int, action: Any) -> None:
    began = time.perf_counter()
    action()
    elapsed = time.perf_counter() - began
    print(f"{label:<46} {count:>6} in {elapsed:6.2f} s = {count / elapsed:8.0f} ops/s")


def _latency(conn: Http, path: str, repeats: int) -> tuple[float, float, int]:
    samples = []
    items = 0
    for _ in range(repeats):
        began = time.perf_counter()
        status, body = conn.call("GET", path)
        samples.append((time.perf_counter() - began) * 1000)
        assert status == 200, body[:200]
        items = len(json.loads(body)["items"])
    return statistics.median(samples), max(samples), items


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=1000)
    parser.add_argument("--pods", type=int, default=10_000)
    parser.add_argument("--patches", type=int, default=2000)
    args = parser.parse_args()

    with EmbeddedKubeAPI() as api:
        conn = Http(api.port)
        conn.call("POST", "/api/v1/namespaces", {"metadata": {"name": "bench"}})

        def create_nodes() -> None:
            for index in range(args.nodes):
                labels = {"pool": f"pool-{index % 10}", "nvidia.com/gpu.present": "true"}
                status, _ = conn.call(
                    "POST", "/api/v1/nodes", {"metadata": {"name": f"node-{index}", "labels": labels}}
                )
                assert status == 201

        def create_pods() -> None:
            for index in range(args.pods):
                pod = {
                    "metadata": {
                        "name": f"pod-{index}",
                        "labels": {"app": f"app-{index % 10}", "tier": "gpu" if index % 2 else "cpu"},
                    },
                    "spec": {
                        "nodeName": f"node-{index % args.nodes}",
                        "containers": [{"name": "main", "image": "busybox"}],
                    },
                }
                status, _ = conn.call("POST", "/api/v1/namespaces/bench/pods", pod)
                assert status == 201

        _timed("create nodes", args.nodes, create_nodes)
        _timed("create pods", args.pods, create_pods)

        cases = [
            (
                "list pods, label app=app-3 (1 in 10)",
                "/api/v1/namespaces/bench/pods?labelSelector=app%3Dapp-3",
            ),
            (
                "list pods, label app in (app-1,app-2),tier=gpu",
                "/api/v1/pods?labelSelector=" + quote("app in (app-1,app-2),tier=gpu"),
            ),
            ("list pods, label tier (matches all)", "/api/v1/namespaces/bench/pods?labelSelector=tier"),
            ("list pods, field spec.nodeName=node-7", "/api/v1/pods?fieldSelector=spec.nodeName%3Dnode-7"),
            ("list nodes, label pool=pool-1", "/api/v1/nodes?labelSelector=pool%3Dpool-1"),
        ]
        print(f"\nlist latency over {args.pods} pods / {args.nodes} nodes (median, max of 20; body read):")
        for label, path in cases:
            median, worst, items = _latency(conn, path, 20)
            print(f"  {label:<50} {items:>6} items  median {median:7.1f} ms  max {worst:7.1f} ms")

        from kubernetes import client, config  # the official client: what gpupool's adapters use

        core = client.CoreV1Api(config.new_client_from_config(config_file=str(api.kubeconfig_path)))
        samples = []
        for _ in range(5):
            began = time.perf_counter()
            found = core.list_namespaced_pod("bench", label_selector="app=app-3")
            samples.append((time.perf_counter() - began) * 1000)
        print(
            f"  {'official client, app=app-3, deserialized':<50} {len(found.items):>6} items  "
            f"median {statistics.median(samples):7.1f} ms  max {max(samples):7.1f} ms"
        )

        received: list[bytes] = []
        ready = threading.Event()
        rv = json.loads(conn.call("GET", "/api/v1/namespaces/bench/pods?limit=1")[1])["metadata"][
            "resourceVersion"
        ]

        def watch() -> None:
            connection = http.client.HTTPConnection("127.0.0.1", api.port)
            connection.request(
                "GET", f"/api/v1/namespaces/bench/pods?watch=true&resourceVersion={rv}&timeoutSeconds=120"
            )
            response = connection.getresponse()
            ready.set()
            while len(received) < args.patches:
                line = response.readline()
                if not line:
                    break
                received.append(line)
            connection.close()

        watcher = threading.Thread(target=watch)
        watcher.start()
        ready.wait(10)
        began = time.perf_counter()

        def patch_pods() -> None:
            for index in range(args.patches):
                body = {"metadata": {"labels": {"patched": str(index)}}}
                status, _ = conn.call(
                    "PATCH",
                    f"/api/v1/namespaces/bench/pods/pod-{index}",
                    body,
                    "application/strategic-merge-patch+json",
                )
                assert status == 200

        print()
        _timed("strategic-merge patch pods (watch open)", args.patches, patch_pods)
        watcher.join(timeout=60)
        elapsed = time.perf_counter() - began
        print(
            f"{'watch events received':<46} {len(received):>6} in {elapsed:6.2f} s = "
            f"{len(received) / elapsed:8.0f} events/s"
        )
        _timed(
            "delete pods",
            min(1000, args.pods),
            lambda: [
                conn.call("DELETE", f"/api/v1/namespaces/bench/pods/pod-{i}")
                for i in range(min(1000, args.pods))
            ],
        )


if __name__ == "__main__":
    main()
