"""Builders and a moto-backed EC2 world for the EC2 adapter's contract tests.

Every builder takes overrides so a test states only what it is about. `Ec2World.compute()` is
Ec2Compute on a client made as the functions make theirs (`aws.session`: the shipped cut of EC2's
model), so every test through it also checks the cut carries what each call needs.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import boto3
import pytest
from moto import mock_aws

from gpupool.adapters.aws.botocore_data import EC2_OPERATIONS
from gpupool.adapters.aws.compute import Ec2Compute
from gpupool.adapters.aws.session import aws_session
from gpupool.core.model.nodeclaim import GPUNodeClaim
from gpupool.core.model.nodeclass import GPUNodeClass
from gpupool.core.planning.plan import OfferingRef

REGION = "us-east-1"
CLUSTER = "demo"


def make_claim(name: str = "pool-a-x1", **spec: Any) -> GPUNodeClaim:
    body: dict[str, Any] = {
        "tflopsOffered": "125",
        "vramOffered": "24Gi",
        "gpuDeviceOffered": 1,
        "instanceType": "g5.xlarge",
        "zone": "us-east-1a",
        "capacityType": "OnDemand",
        "nodeClassRef": {"group": "tensor-fusion.ai", "kind": "GPUNodeClass", "name": "gpu-class"},
    }
    body.update(spec)
    return GPUNodeClaim.model_validate({"metadata": {"name": name, "uid": f"uid-{name}"}, "spec": body})


def make_class(name: str = "gpu-class", **spec: Any) -> GPUNodeClass:
    return GPUNodeClass.model_validate({"metadata": {"name": name}, "spec": spec})


def make_offering(**overrides: Any) -> OfferingRef:
    body: dict[str, Any] = {
        "instance_type": "g5.xlarge",
        "zone": "us-east-1a",
        "capacity_type": "OnDemand",
        "tflops": "125",
        "vram": "24Gi",
        "gpu_count": 1,
        "hourly_price": "1.006",
    }
    body.update(overrides)
    return OfferingRef.model_validate(body)


@dataclass
class Ec2World:
    """A moto account: a VPC with one subnet per zone, a security group, an AMI, a profile."""

    client: Any
    image_id: str
    subnets: dict[str, str]  # zone -> subnet id
    security_group_id: str
    profile_name: str

    def compute(
        self,
        cluster: str = CLUSTER,
        *,
        monotonic: Callable[[], float] = time.monotonic,
        calls: list[str] | None = None,
    ) -> Ec2Compute:
        """Ec2Compute on a client as the functions make it: through `aws.session`, so on the shipped
        cut of EC2's model (`client` is botocore's full one, for setting the account up). Each EC2
        operation it calls is appended to `calls` when given."""
        client = aws_session(region_name=REGION).client("ec2")
        assert sorted(client.meta.service_model.operation_names) == sorted(EC2_OPERATIONS)
        if calls is not None:
            client.meta.events.register(
                "before-call.ec2", lambda model, **_: calls.append(model.name), unique_id="count"
            )
        return Ec2Compute(client, cluster=cluster, sleep=lambda _seconds: None, monotonic=monotonic)

    def full_class(self, **overrides: Any) -> GPUNodeClass:
        spec: dict[str, Any] = {
            "osImageSelectorTerms": [{"id": self.image_id}],
            "subnetSelectorTerms": [{"id": subnet} for subnet in self.subnets.values()],
            "securityGroupSelectorTerms": [{"id": self.security_group_id}],
            "instanceProfile": self.profile_name,
            "metadataOptions": {"httpEndpoint": True, "httpTokens": "required", "httpPutResponseHopLimit": 2},
            "blockDeviceMappings": [
                {
                    "deviceName": "/dev/xvda",
                    "ebs": {"volumeSize": "200Gi", "volumeType": "gp3", "encrypted": True},
                }
            ],
            "tags": {"team": "ml", "managed-by": "someone-else"},
            "userData": "#!/bin/bash\necho __GPU_NODE_RESOURCE_NAME__ > /etc/node-name\n",
        }
        spec.update(overrides)
        return make_class(**spec)


@pytest.fixture
def aws_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for key in ("AWS_ENDPOINT_URL", "AWS_PROFILE"):
        monkeypatch.delenv(key, raising=False)
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    monkeypatch.setenv("AWS_DEFAULT_REGION", REGION)


@pytest.fixture
def ec2_world(aws_env: None) -> Iterator[Ec2World]:
    with mock_aws():
        client = boto3.client("ec2", region_name=REGION)
        vpc = client.create_vpc(CidrBlock="10.20.0.0/16")["Vpc"]["VpcId"]
        subnets = {}
        for index, zone in enumerate(("us-east-1a", "us-east-1b")):
            subnet = client.create_subnet(VpcId=vpc, CidrBlock=f"10.20.{index}.0/24", AvailabilityZone=zone)
            subnets[zone] = subnet["Subnet"]["SubnetId"]
        group = client.create_security_group(GroupName="gpu-nodes", Description="gpu", VpcId=vpc)["GroupId"]
        image = client.describe_images(Owners=["amazon"])["Images"][0]["ImageId"]
        iam = boto3.client("iam", region_name=REGION)
        iam.create_instance_profile(InstanceProfileName="gpu-node-profile")
        yield Ec2World(client, image, subnets, group, "gpu-node-profile")
