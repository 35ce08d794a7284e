"""Builders for the forwarder tests: a sandbox with a signing receiver, pods, nodes, and waiting.

A `Rig` stands for one relay process unless told otherwise: its forwarders share one set of
streams (`informers`, as the hub and the forwarder do in `serve`); `new_process()` makes another
set, for a second relay or a restarted one. Every set is stopped when the rig closes."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from kubernetes import config

from gpupool.sandbox.kubeapi import EmbeddedKubeAPI
from gpupool.testing.relay_receiver import RelayReceiver
from gpupool_incluster.relay.delivery import DeliverySettings
from gpupool_incluster.relay.forwarder import Forwarder, ForwardSettings
from gpupool_incluster.relay.informers import SharedInformers
from gpupool_incluster.relay.metrics import RelayMetrics
from gpupool_incluster.relay.signing import make_signer
from gpupool_incluster.relay.watching import WatchTimings

SECRET = b"relay-test-secret"
# Back-off shortened so tests wait for outages, not for back-off; the attempt cap raised to match
# (20 attempts of at most 0.5 s would not outlast the 30-second outage the delivery test plays).
FAST_DELIVERY = DeliverySettings(
    first_backoff=0.05, max_backoff=0.5, max_attempts=1_000, source="/gpupool/relay/test"
)
FAST_WATCH = WatchTimings(watch_seconds=30, first_backoff=0.05, max_backoff=0.5)


def wait_for(condition: Callable[[], Any], what: str, timeout: float = 15.0) -> float:
    """Seconds it took; AssertionError naming `what` on timeout."""
    start = time.monotonic()
    while time.monotonic() - start < timeout:
        if condition():
            return time.monotonic() - start
        time.sleep(0.02)
    raise AssertionError(f"timed out after {timeout} s waiting for {what}")


@dataclass
class Rig:
    api: EmbeddedKubeAPI
    client: Any
    receiver: RelayReceiver
    metrics: RelayMetrics
    processes: list[SharedInformers] = field(default_factory=list)

    def new_process(self, timings: WatchTimings = FAST_WATCH) -> SharedInformers:
        """The shared streams of another relay process (counted in the rig's current metrics)."""
        self.processes.append(SharedInformers(self.client, metrics=self.metrics, timings=timings))
        return self.processes[-1]

    def forwarder(self, informers: SharedInformers | None = None, **settings: Any) -> Forwarder:
        """A forwarder on `informers`, by default on this rig's first process's streams."""
        options: dict[str, Any] = {
            "urls": {f: self.receiver.url(f"/{f}") for f in ("launch", "bind", "compact")},
            "delivery": FAST_DELIVERY,
        } | settings
        streams = informers or (self.processes[0] if self.processes else self.new_process())
        return Forwarder(
            streams, make_signer("hmac", hmac_secret=SECRET), ForwardSettings(**options), self.metrics
        )

    def create(
        self, plural: str, body: dict[str, Any], namespace: str | None = None, group: str = ""
    ) -> None:
        cluster = self.api.cluster
        version = "v1"
        cluster.create(cluster.resolve(group, version, plural), namespace, body)

    def patch(
        self,
        plural: str,
        name: str,
        body: dict[str, Any],
        *,
        namespace: str = "",
        status: bool = False,
        group: str = "",
    ) -> None:
        cluster = self.api.cluster
        cluster.patch(
            cluster.resolve(group, "v1", plural),
            namespace,
            name,
            body,
            "application/merge-patch+json",
            subresource="status" if status else None,
        )

    def delete(self, plural: str, name: str, *, namespace: str = "", group: str = "") -> None:
        cluster = self.api.cluster
        cluster.delete(cluster.resolve(group, "v1", plural), namespace, name, {})


@contextmanager
def rig(**receiver: Any) -> Iterator[Rig]:
    with EmbeddedKubeAPI() as api, RelayReceiver(auth="hmac", hmac_secret=SECRET, **receiver) as sink:
        api_client = config.new_client_from_config(config_file=str(api.kubeconfig_path))
        made = Rig(api, api_client, sink, RelayMetrics())
        try:
            yield made
        finally:
            for informers in made.processes:
                informers.stop()
            api_client.close()


def worker_pod(name: str, pool: str = "pool-a") -> dict[str, Any]:
    return {
        "metadata": {
            "name": name,
            "labels": {"tensor-fusion.ai/component": "worker"},
            "annotations": {"tensor-fusion.ai/gpupool": pool},
        },
        "spec": {"schedulerName": "tensor-fusion-scheduler", "containers": [{"name": "c", "image": "w"}]},
    }


UNSCHEDULABLE = {
    "status": {"conditions": [{"type": "PodScheduled", "status": "False", "reason": "Unschedulable"}]}
}


def provisioned_node(name: str, claim: str, *, ready: bool = False) -> dict[str, Any]:
    return {
        "metadata": {"name": name, "labels": {"tensor-fusion.ai/node-provisioner": claim}},
        "status": {"conditions": [{"type": "Ready", "status": "True" if ready else "False"}]},
    }


def sample(metrics: RelayMetrics, name: str, **labels: str) -> float:
    value = metrics.registry.get_sample_value(name, labels)
    return float(value or 0.0)
