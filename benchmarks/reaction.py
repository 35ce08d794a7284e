"""How fast the relay reacts: prints the figures, asserts nothing.

Against the sandbox (the embedded Kubernetes API server), the relay's forwarder — the real
list+watch, batching windows (1 s idle / 10 s max unless told otherwise), HMAC-signed HTTP
delivery — forwards to a local receiver that verifies every signature:

1. from a TensorFusion worker pod marked `PodScheduled=False/Unschedulable` to the delivery of
   `pod.unschedulable` at launch (p50 / p99 over --samples pods, one pool each, one at a time:
   the 1 s idle window is part of the figure, by design);
2. from a Node labelled `tensor-fusion.ai/node-provisioner` being created to the delivery of
   `node.joined` at bind (never batched);
3. how many deliveries reach launch for a burst of --burst unschedulable pods in one pool.

    .venv/bin/python benchmarks/reaction.py [--samples 20] [--burst 1000] [--idle 1.0] [--max-window 10]
"""

from __future__ import annotations

import argparse
import statistics
import time
from typing import Any

from kubernetes import config as _config

from gpupool.sandbox.kubeapi import EmbeddedKubeAPI
from gpupool.testing.relay_receiver import RelayReceiver
from gpupool_incluster.relay.forwarder import Forwarder, ForwardSettings
from gpupool_incluster.relay.informers import SharedInformers
from gpupool_incluster.relay.metrics import RelayMetrics
from gpupool_incluster.relay.signing import make_signer

config: Any = _config
SECRET = b"reaction-benchmark"
MERGE = "application/merge-patch+json"
UNSCHEDULABLE = {"conditions": [{"type": "PodScheduled", "status": "False", "reason": "Unschedulable"}]}


def _percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def _pod(name: str, pool: str) -> dict[str, Any]:
    return {
        "metadata": {
            "name": name,
            "labels": {"tensor-fusion.ai/component": "worker"},
            "annotations": {"tensor-fusion.ai/gpupool": pool},
        },
        "spec": {"schedulerName": "tensor-fusion-scheduler", "containers": [{"name": "c", "image": "w"}]},
    }


def _mark_unschedulable(cluster: Any, pods: Any, name: str) -> None:
    """What kube-scheduler writes when no node fits."""
    cluster.patch(pods, "default", name, {"status": UNSCHEDULABLE}, MERGE, subresource="status")


def _provisioned_node(name: str) -> dict[str, Any]:
    return {"metadata": {"name": name, "labels": {"tensor-fusion.ai/node-provisioner": f"claim-{name}"}}}


def _wait(condition: Any, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise SystemExit("timed out waiting for a delivery")
        time.sleep(0.002)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--samples", type=int, default=20)
    parser.add_argument("--burst", type=int, default=1000)
    parser.add_argument("--idle", type=float, default=1.0)
    parser.add_argument("--max-window", type=float, default=10.0)
    args = parser.parse_args()
    with EmbeddedKubeAPI() as api, RelayReceiver(auth="hmac", hmac_secret=SECRET) as receiver:
        client = config.new_client_from_config(config_file=str(api.kubeconfig_path))
        cluster = api.cluster
        pods, nodes = cluster.resolve("", "v1", "pods"), cluster.resolve("", "v1", "nodes")
        urls = {f: receiver.url(f"/{f}") for f in ("launch", "bind")}
        settings = ForwardSettings(urls=urls, idle=args.idle, max_window=args.max_window)
        metrics = RelayMetrics()
        informers = SharedInformers(client, metrics=metrics)
        forwarder = Forwarder(informers, make_signer("hmac", hmac_secret=SECRET), settings, metrics)
        forwarder.start()
        try:
            _wait(forwarder.synced)
            pod_latency, node_latency = [], []
            for i in range(args.samples):
                seen = len(receiver.events("/launch"))
                cluster.create(pods, "default", _pod(f"sample-{i}", f"pool-{i}"))
                began = time.monotonic()
                _mark_unschedulable(cluster, pods, f"sample-{i}")
                _wait(lambda seen=seen: len(receiver.events("/launch")) > seen)
                pod_latency.append(receiver.received[-1].at - began)
                seen = len(receiver.events("/bind"))
                began = time.monotonic()
                cluster.create(nodes, None, _provisioned_node(f"n-{i}"))
                _wait(lambda seen=seen: len(receiver.events("/bind")) > seen)
                node_latency.append(receiver.received[-1].at - began)
            before = len(receiver.events("/launch"))
            burst_began = time.monotonic()
            for i in range(args.burst):
                cluster.create(pods, "default", _pod(f"burst-{i}", "burst-pool"))
                _mark_unschedulable(cluster, pods, f"burst-{i}")
            created = time.monotonic() - burst_began
            forwarder.wait_delivered(args.max_window + 30)
            burst_deliveries = len(receiver.events("/launch")) - before
        finally:
            forwarder.stop()
            informers.stop()
            client.close()
        print(f"windows: {args.idle:g} s idle / {args.max_window:g} s max; {args.samples} samples")
        print(
            f"unschedulable pod -> launch delivery: p50 {statistics.median(pod_latency) * 1000:.0f} ms, "
            f"p99 {_percentile(pod_latency, 0.99) * 1000:.0f} ms"
        )
        print(
            f"node created -> bind delivery:        p50 {statistics.median(node_latency) * 1000:.0f} ms, "
            f"p99 {_percentile(node_latency, 0.99) * 1000:.0f} ms"
        )
        print(
            f"burst of {args.burst} pods in one pool (made in {created:.1f} s): {burst_deliveries} deliveries"
        )
        print(f"signatures verified: {len(receiver.received)} accepted, {len(receiver.refused)} refused")


if __name__ == "__main__":
    main()
