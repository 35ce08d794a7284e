"""The Alibaba Cloud demo's simulated world: the embedded API server and the sandbox ECS on one manual clock.

Role: `AlibabaSimWorld` starts, in this process, the embedded Kubernetes API server (127.0.0.1)
with a `ManualClock` and the sandbox's ECS endpoint (`ecs_server.EcsEndpoint`, real HTTP in the
SDK's wire format, its instances' lifecycle on the same clock; ids repeat on every run), and
offers what `simulation.Simulation` reads of a world: the environment a deployed FC function
would get (`environ`), raw object access (`objects`), the demo manifests (`manifests()`: a
TensorFusionCluster with `computingVendor.type: alibaba` and its GPUNodeClass), the instances
as the simulated kubelet sees them (`sim_instances()`) and as the story reports them
(`managed_instances()`, in EC2's words like the AWS world), the envelopes FC receives
(`events`), and the Alibaba catalog.

Must not: make any decision or call the service; the demo wires the real FC handlers to
`environ` (the sandbox may not import the adapters).
"""

from __future__ import annotations

import random
from collections.abc import Iterable
from datetime import datetime, timedelta
from importlib import resources
from types import TracebackType
from typing import Any, Self

import yaml

from gpupool.core.catalog import Catalog, load_catalog
from gpupool.core.model.constants import TAG_MANAGED_BY, TAG_MANAGED_BY_VALUE
from gpupool.sandbox.demo.events_alibaba import AlibabaEventFactory
from gpupool.sandbox.demo.kubelet import SimInstance
from gpupool.sandbox.demo.objects import JsonObject, KubeObjects
from gpupool.sandbox.demo.world_aws import CLUSTER_NAME, DEMO_KINDS, DEMO_START
from gpupool.sandbox.ecs_instances import ecs_instances
from gpupool.sandbox.ecs_server import SANDBOX_ACCESS_KEY_ID, SANDBOX_ACCESS_KEY_SECRET, EcsEndpoint
from gpupool.sandbox.ecs_state import EcsState
from gpupool.sandbox.kubeapi import EmbeddedKubeAPI, ManualClock

__all__ = ["AlibabaSimWorld", "alibaba_demo_manifests"]

REGION = "cn-hangzhou"
_EC2_WORDS = {"Pending": "pending", "Starting": "pending", "Running": "running", "Stopped": "stopped"}


def alibaba_demo_manifests() -> list[JsonObject]:
    """The bundled Alibaba demo manifests (gpupool/examples/demo-alibaba/*.yaml), in file-name order."""
    folder = resources.files("gpupool").joinpath("examples", "demo-alibaba")
    documents: list[JsonObject] = []
    for entry in sorted(folder.iterdir(), key=lambda e: e.name):
        if entry.name.endswith(".yaml"):
            documents.extend(d for d in yaml.safe_load_all(entry.read_text("utf-8")) if d)
    return documents


class AlibabaSimWorld:
    instance_service = "ECS"

    def __init__(self, *, start: datetime = DEMO_START, seed: int = 7) -> None:
        self.clock = ManualClock(start)
        self.region = REGION
        self.cluster_name = CLUSTER_NAME
        self._api = EmbeddedKubeAPI(clock=self.clock)
        self.state = EcsState(
            now=self.clock.now, pending_for=timedelta(seconds=10), starting_for=timedelta(seconds=20)
        )
        self._ecs = EcsEndpoint(self.state)
        self.objects = KubeObjects(self._api.cluster)
        self.events = AlibabaEventFactory(region=REGION, cluster=CLUSTER_NAME)
        self.catalog: Catalog = load_catalog("alibaba")
        self._suffixes = random.Random(seed)

    def __enter__(self) -> Self:
        try:
            self._api.start()
            self._ecs.start()
        except BaseException:
            self.close()
            raise
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    def close(self) -> None:
        self._ecs.stop()
        self._api.stop()

    @property
    def environ(self) -> dict[str, str]:
        """The environment a deployed FC function would have, pointing at this world."""
        return {
            "GPUPOOL_CLUSTER_NAME": self.cluster_name,
            "ALIBABA_CLOUD_REGION_ID": self.region,
            "GPUPOOL_ECS_ENDPOINT": self._ecs.url,
            "ALIBABA_CLOUD_ACCESS_KEY_ID": SANDBOX_ACCESS_KEY_ID,
            "ALIBABA_CLOUD_ACCESS_KEY_SECRET": SANDBOX_ACCESS_KEY_SECRET,
            "KUBECONFIG": str(self._api.kubeconfig_path),
            "GPUPOOL_KUBE_ACCESS": "kubeconfig",
        }

    def new_suffix(self) -> str:
        """Claim-name suffixes that are the same on every run (8 hex characters)."""
        return f"{self._suffixes.getrandbits(32):08x}"

    def manifests(self) -> list[JsonObject]:
        return alibaba_demo_manifests()

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
        return ecs_instances(self.state)

    def managed_instances(self) -> list[dict[str, Any]]:
        """Every managed instance in the EC2 shape the story reports; deleted ones as `terminated`
        (ECS's API forgets them, but EventBridge still announces the deletion)."""
        now = self.state.now()
        timing = (self.state.pending_for, self.state.starting_for)
        rows = [(i, _EC2_WORDS[i.status(now, *timing)]) for i in self.state.live()]
        rows += [(i, "terminated") for i in self.state.deleted.values()]
        return [
            {
                "InstanceId": instance.instance_id,
                "State": {"Name": state},
                "InstanceType": instance.params.get("InstanceType", ""),
                "Tags": [{"Key": key, "Value": value} for key, value in instance.tags.items()],
            }
            for instance, state in sorted(rows, key=lambda row: row[0].instance_id)
            if instance.tags.get(TAG_MANAGED_BY) == TAG_MANAGED_BY_VALUE
        ]
