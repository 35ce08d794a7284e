"""The demo's world: an embedded API server on a manual clock, over a cloud (AWS or Alibaba Cloud).

Role: `DemoWorld(cloud)` starts, in this process, the embedded Kubernetes API server (127.0.0.1)
with a `ManualClock` and the cloud's piece (`clouds`: moto's EC2, or the sandbox ECS on the same
clock); installs the demo manifests (`demo_manifests(cloud)`: gpupool/examples/demo, or
demo-alibaba with `computingVendor.type: alibaba`); and offers what the stories read of a world:
the environment a deployed function would get (`environ`: KUBECONFIG, the cloud's region and
credentials, GPUPOOL_CLUSTER_NAME), the clock, repeatable claim-name suffixes, raw object access
(`objects`) and the simulated cluster's store and kubelet on it (`store`, `kubelet`), the
cloud's instances (`sim_instances`, `managed_instances`), its envelopes (`events`) and catalog.

Must not: make any decision or call the service; the CLI wires the real handlers to `environ`
(the sandbox may not import the adapters).
"""

from __future__ import annotations

import random
from collections.abc import Iterable
from datetime import UTC, datetime
from importlib import resources
from types import TracebackType
from typing import Any, Self

import yaml

from gpupool.core.catalog import Catalog, load_catalog
from gpupool.sandbox.demo.clouds import AlibabaCloud, AwsCloud, DemoCloud
from gpupool.sandbox.demo.events import Cloud, EventFactory
from gpupool.sandbox.demo.objects import KubeObjects
from gpupool.sandbox.kubeapi import EmbeddedKubeAPI, ManualClock
from gpupool.simulation.cluster.instance_nodes import SimInstance
from gpupool.simulation.cluster.json_store import JsonObject, JsonStore
from gpupool.simulation.cluster.kubelet import Kubelet

__all__ = ["CLUSTER_NAME", "DEMO_KINDS", "DEMO_START", "DemoWorld", "demo_manifests"]

DEMO_START = datetime(2026, 1, 5, 9, 0, 0, tzinfo=UTC)
CLUSTER_NAME = "tensor-fusion"
DEMO_KINDS = {
    "TensorFusionCluster": "tensorfusionclusters",
    "GPUPool": "gpupools",
    "GPUNodeClass": "gpunodeclasses",
}
_MANIFESTS = {"aws": "demo", "alibaba": "demo-alibaba"}


def demo_manifests(cloud: Cloud) -> list[JsonObject]:
    """The bundled demo manifests of `cloud` (gpupool/examples/<folder>/*.yaml), in file-name order."""
    folder = resources.files("gpupool").joinpath("examples", _MANIFESTS[cloud])
    documents: list[JsonObject] = []
    for entry in sorted(folder.iterdir(), key=lambda e: e.name):
        if entry.name.endswith(".yaml"):
            documents.extend(d for d in yaml.safe_load_all(entry.read_text("utf-8")) if d)
    return documents


class DemoWorld:
    """`with DemoWorld(cloud) as world:` — everything runs until the block ends."""

    def __init__(self, cloud: Cloud = "aws", *, start: datetime = DEMO_START, seed: int = 7) -> None:
        self.cloud_name: Cloud = cloud
        self.clock = ManualClock(start)
        self.cloud: DemoCloud = AwsCloud(seed=seed) if cloud == "aws" else AlibabaCloud(clock=self.clock)
        self.region = self.cloud.region
        self.instance_service = self.cloud.service
        self.cluster_name = CLUSTER_NAME
        self._api = EmbeddedKubeAPI(clock=self.clock)
        self.objects = KubeObjects(self._api.cluster)
        self.store = JsonStore(self.objects)
        self.catalog: Catalog = load_catalog(cloud)
        self.kubelet = Kubelet(self.store, catalog=self.catalog, clock=self.clock)
        self.events = EventFactory(cloud, region=self.region, cluster=CLUSTER_NAME)
        self._suffixes = random.Random(seed)

    # ---- lifecycle -----------------------------------------------------------------------
    def __enter__(self) -> Self:
        try:
            self._api.start()
            self.cloud.start()
        except BaseException:
            self.close()
            raise
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    def close(self) -> None:
        self.cloud.stop()
        self._api.stop()

    # ---- what the functions and the simulated members use --------------------------------
    @property
    def environ(self) -> dict[str, str]:
        """The environment a deployed function would have, pointing at this world."""
        return {
            "GPUPOOL_CLUSTER_NAME": self.cluster_name,
            **self.cloud.environ(),
            "KUBECONFIG": str(self._api.kubeconfig_path),
            "GPUPOOL_KUBE_ACCESS": "kubeconfig",
        }

    def new_suffix(self) -> str:
        """Claim-name suffixes that are the same on every run (8 hex characters)."""
        return f"{self._suffixes.getrandbits(32):08x}"

    def manifests(self) -> list[JsonObject]:
        return demo_manifests(self.cloud_name)

    def install(self, manifests: Iterable[JsonObject]) -> list[str]:
        """Create cluster-scoped tensor-fusion.ai objects; returns `Kind/name` for each."""
        done: list[str] = []
        for manifest in manifests:
            kind = str(manifest.get("kind"))
            plural = DEMO_KINDS.get(kind)
            if plural is None:
                raise ValueError(f"the demo installs only {', '.join(DEMO_KINDS)}, not {kind}")
            self.objects.create("tensor-fusion.ai", plural, manifest)
            done.append(f"{kind}/{manifest['metadata']['name']}")
        return done

    def sim_instances(self) -> list[SimInstance]:
        return self.cloud.sim_instances()

    def managed_instances(self) -> list[dict[str, Any]]:
        return self.cloud.managed_instances()
