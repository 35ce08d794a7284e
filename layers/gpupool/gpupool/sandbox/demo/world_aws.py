"""The demo's simulated world: an embedded API server on a manual clock, and an EC2 account in moto.

Role: `SimWorld` starts, in this process, the embedded Kubernetes API server (127.0.0.1) with
a `ManualClock`, and moto's EC2 mock (no socket), seeded so that instance ids and addresses
are the same on every run; gives the account a VPC, one subnet per zone and a security group tagged
`gpupool-demo=true` (the demo's GPUNodeClass selects them by tag); installs the demo
manifests; and exposes the environment a function would get (`environ`: KUBECONFIG,
region, dummy credentials, GPUPOOL_CLUSTER_NAME), the clock, raw object
access (`objects`) and an EC2 client for the simulated members.

Must not: make any decision or call the service; the demo wires the real handlers to
`environ` (the sandbox may not import the adapters).
"""

from __future__ import annotations

import os
import random
from collections.abc import Callable, Iterable
from datetime import UTC, datetime
from importlib import resources
from types import TracebackType
from typing import Any, Self

import yaml

from gpupool.core.catalog import Catalog, load_catalog
from gpupool.sandbox.demo.events_aws import EventFactory
from gpupool.sandbox.demo.kubelet import SimInstance, ec2_instances
from gpupool.sandbox.demo.objects import JsonObject, KubeObjects
from gpupool.sandbox.kubeapi import EmbeddedKubeAPI, ManualClock

__all__ = ["CLUSTER_NAME", "DEMO_KINDS", "DEMO_START", "SimWorld", "create_demo_network", "demo_manifests"]

DEMO_START = datetime(2026, 1, 5, 9, 0, 0, tzinfo=UTC)
REGION = "us-east-1"
ZONES = ("us-east-1a", "us-east-1b")
CLUSTER_NAME = "tensor-fusion"
DEMO_TAG = {"Key": "gpupool-demo", "Value": "true"}
DEMO_KINDS = {
    "TensorFusionCluster": "tensorfusionclusters",
    "GPUPool": "gpupools",
    "GPUNodeClass": "gpunodeclasses",
}


def demo_manifests() -> list[JsonObject]:
    """The bundled demo manifests (gpupool/examples/demo/*.yaml), in file-name order."""
    folder = resources.files("gpupool").joinpath("examples", "demo")
    documents: list[JsonObject] = []
    for entry in sorted(folder.iterdir(), key=lambda e: e.name):
        if entry.name.endswith(".yaml"):
            documents.extend(d for d in yaml.safe_load_all(entry.read_text("utf-8")) if d)
    return documents


def create_demo_network(ec2: Any) -> bool:
    """A VPC, one subnet per zone and a security group tagged `gpupool-demo=true` (what the demo
    GPUNodeClass selects) in the account `ec2` (a boto3 client) reaches; False when they exist."""
    existing = ec2.describe_security_groups(Filters=[{"Name": "tag:gpupool-demo", "Values": ["true"]}])
    if existing.get("SecurityGroups"):
        return False

    def tagged(kind: str) -> list[dict[str, Any]]:
        return [{"ResourceType": kind, "Tags": [DEMO_TAG]}]

    vpc = ec2.create_vpc(CidrBlock="10.0.0.0/16", TagSpecifications=tagged("vpc"))["Vpc"]["VpcId"]
    for index, zone in enumerate(ZONES):
        ec2.create_subnet(
            VpcId=vpc,
            CidrBlock=f"10.0.{index}.0/24",
            AvailabilityZone=zone,
            TagSpecifications=tagged("subnet"),
        )
    ec2.create_security_group(
        GroupName="gpupool-demo-nodes",
        Description="gpupool demo GPU nodes",
        VpcId=vpc,
        TagSpecifications=tagged("security-group"),
    )
    return True


class SimWorld:
    """`with SimWorld() as world:` — everything runs until the block ends."""

    def __init__(self, *, start: datetime = DEMO_START, seed: int = 7) -> None:
        self.clock = ManualClock(start)
        self.region = REGION
        self.cluster_name = CLUSTER_NAME
        self._seed = seed
        self._api = EmbeddedKubeAPI(clock=self.clock)
        self._moto: Any = None
        self._saved_aws: dict[str, str] | None = None
        self.ec2: Any = None
        self.objects = KubeObjects(self._api.cluster)
        self._suffixes = random.Random(seed)
        self.events = EventFactory(region=self.region, cluster=self.cluster_name)
        self.catalog: Catalog = load_catalog("aws")
        self.instance_service = "EC2"

    # ---- lifecycle -----------------------------------------------------------------------
    def __enter__(self) -> Self:
        try:
            self._start()
        except BaseException:
            self.close()
            raise
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    def _start(self) -> None:
        import boto3
        from moto import mock_aws
        from moto.moto_api import _internal as moto_internal

        # The world is its own AWS account: the caller's AWS_* settings (a profile, an endpoint
        # such as a sandbox's) must not leak into the clients built while it runs; restored on close.
        self._saved_aws = {k: v for k, v in os.environ.items() if k.startswith("AWS_")}
        for key in self._saved_aws:
            del os.environ[key]
        self._api.start()
        # moto in this process: boto3 clients built while the mock runs (the functions' ones
        # included) reach a fresh, empty account without any socket.
        self._moto = mock_aws()
        self._moto.start()
        self.ec2 = boto3.client(
            "ec2",
            region_name=self.region,
            aws_access_key_id="testing",
            aws_secret_access_key="testing",
        )
        create_demo_network(self.ec2)
        # Seeded after moto built its backend and our network (how much randomness those use
        # depends on what this process did before), so instance ids and addresses repeat.
        moto_internal.mock_random.seed(self._seed)

    def close(self) -> None:
        if self._moto is not None:
            self._moto.stop()
            self._moto = None
        self._api.stop()
        if self._saved_aws is not None:
            for key in [k for k in os.environ if k.startswith("AWS_")]:
                del os.environ[key]
            os.environ.update(self._saved_aws)
            self._saved_aws = None

    # ---- what the functions and the simulated members use --------------------------------
    @property
    def environ(self) -> dict[str, str]:
        """The environment a deployed function would have, pointing at this world."""
        return {
            "GPUPOOL_CLUSTER_NAME": self.cluster_name,
            "AWS_REGION": self.region,
            "AWS_DEFAULT_REGION": self.region,
            "AWS_ACCESS_KEY_ID": "testing",
            "AWS_SECRET_ACCESS_KEY": "testing",
            "KUBECONFIG": str(self._api.kubeconfig_path),
            "GPUPOOL_KUBE_ACCESS": "kubeconfig",
        }

    def new_suffix(self) -> str:
        """Claim-name suffixes that are the same on every run (8 hex characters)."""
        return f"{self._suffixes.getrandbits(32):08x}"

    def manifests(self) -> list[JsonObject]:
        return demo_manifests()

    def sim_instances(self) -> list[SimInstance]:
        return ec2_instances(self.ec2, region=self.region)

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

    def managed_instances(self) -> list[dict[str, Any]]:
        """Every instance in the account tagged `managed-by=tensor-fusion.ai` (any state)."""
        filters = [{"Name": "tag:managed-by", "Values": ["tensor-fusion.ai"]}]
        pages: Callable[..., Any] = self.ec2.get_paginator("describe_instances").paginate
        return [
            instance
            for page in pages(Filters=filters)
            for reservation in page.get("Reservations") or []
            for instance in reservation.get("Instances") or []
        ]
