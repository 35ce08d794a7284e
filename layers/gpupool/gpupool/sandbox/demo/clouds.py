"""The cloud under the demo's world, one small piece per cloud: moto's EC2, or the sandbox ECS.

Role: what `DemoWorld` needs of its cloud, and nothing else —
- `AwsCloud`: moto's EC2 mock in this process (no socket), seeded after the account is made so
  that instance ids and addresses repeat; the account gets the demo network (`create_demo_network`:
  a VPC, one subnet per zone and a security group tagged `gpupool-demo=true`, which the demo's
  GPUNodeClass selects); the caller's `AWS_*` settings are kept out while it runs;
- `AlibabaCloud`: the sandbox's ECS endpoint (`ecs_server.EcsEndpoint`, real HTTP in the SDK's
  wire format) on the world's clock, which seeds its own vSwitches, security group and images;
each with the environment a deployed function would get for it, its managed instances as the
simulated kubelet sees them (`sim_instances`, see `ec2_instances` and `ecs_instances`) and as the
story reports them (`managed_instances`, in EC2's words for both).

Must not: make any decision, call the service, or import the adapters.
"""

from __future__ import annotations

import os
from datetime import timedelta
from typing import Any, Protocol

from gpupool.core.model.constants import TAG_MANAGED_BY, TAG_MANAGED_BY_VALUE, TAG_NODE_NAME
from gpupool.sandbox.demo.events import RELAY_ROLE_ARN
from gpupool.sandbox.ecs_instances import ECS_TO_EC2_STATES, ecs_instances
from gpupool.sandbox.ecs_server import SANDBOX_ACCESS_KEY_ID, SANDBOX_ACCESS_KEY_SECRET, EcsEndpoint
from gpupool.sandbox.ecs_state import EcsState
from gpupool.service.ports import Clock
from gpupool.simulation.cluster.instance_nodes import SimInstance

__all__ = ["AlibabaCloud", "AwsCloud", "DemoCloud", "create_demo_network", "ec2_instances"]

AWS_ZONES = ("us-east-1a", "us-east-1b")
DEMO_TAG = {"Key": "gpupool-demo", "Value": "true"}
_MANAGED = {"Name": f"tag:{TAG_MANAGED_BY}", "Values": [TAG_MANAGED_BY_VALUE]}


class DemoCloud(Protocol):
    service: str  # how the story names the instance service: EC2, ECS
    region: str

    def start(self) -> None: ...
    def stop(self) -> None: ...
    def environ(self) -> dict[str, str]: ...
    def sim_instances(self) -> list[SimInstance]: ...
    def managed_instances(self) -> list[dict[str, Any]]: ...


def create_demo_network(ec2: Any) -> bool:
    """A VPC, one subnet per zone and a security group tagged `gpupool-demo=true` (what the demo
    GPUNodeClass selects) in the account `ec2` (a boto3 client) reaches; False when they exist."""
    existing = ec2.describe_security_groups(Filters=[{"Name": "tag:gpupool-demo", "Values": ["true"]}])
    if existing.get("SecurityGroups"):
        return False

    def tagged(kind: str) -> list[dict[str, Any]]:
        return [{"ResourceType": kind, "Tags": [DEMO_TAG]}]

    vpc = ec2.create_vpc(CidrBlock="10.0.0.0/16", TagSpecifications=tagged("vpc"))["Vpc"]["VpcId"]
    for index, zone in enumerate(AWS_ZONES):
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


def _ec2_managed(client: Any) -> list[dict[str, Any]]:
    pages = client.get_paginator("describe_instances").paginate(Filters=[_MANAGED])
    return [
        instance
        for page in pages
        for reservation in page.get("Reservations") or []
        for instance in reservation.get("Instances") or []
    ]


def ec2_instances(client: Any, *, region: str) -> list[SimInstance]:
    """Every instance tagged `managed-by=tensor-fusion.ai` that an EC2 client (boto3) reports."""
    found: list[SimInstance] = []
    for item in _ec2_managed(client):
        tags = {tag["Key"]: tag["Value"] for tag in item.get("Tags") or []}
        found.append(
            SimInstance(
                instance_id=item["InstanceId"],
                state=item["State"]["Name"],
                claim_name=tags.get(TAG_NODE_NAME),
                instance_type=item.get("InstanceType", ""),
                zone=(item.get("Placement") or {}).get("AvailabilityZone", ""),
                region=region,
                private_dns=item.get("PrivateDnsName") or item["InstanceId"],
            )
        )
    return sorted(found, key=lambda i: i.instance_id)


class AwsCloud:
    service = "EC2"
    region = "us-east-1"

    def __init__(self, *, seed: int) -> None:
        self._seed = seed
        self._moto: Any = None
        self._saved_aws: dict[str, str] | None = None
        self.ec2: Any = None

    def start(self) -> None:
        import boto3
        from moto import mock_aws
        from moto.moto_api import _internal as moto_internal

        # The world is its own AWS account: the caller's AWS_* settings (a profile, an endpoint
        # such as a sandbox's) must not leak into the clients built while it runs; restored on stop.
        self._saved_aws = {k: v for k, v in os.environ.items() if k.startswith("AWS_")}
        for key in self._saved_aws:
            del os.environ[key]
        # moto in this process: boto3 clients built while the mock runs (the functions' ones
        # included) reach a fresh, empty account without any socket.
        self._moto = mock_aws()
        self._moto.start()
        self.ec2 = boto3.client(
            "ec2", region_name=self.region, aws_access_key_id="testing", aws_secret_access_key="testing"
        )
        create_demo_network(self.ec2)
        # Seeded after moto built its backend and our network (how much randomness those use
        # depends on what this process did before), so instance ids and addresses repeat.
        moto_internal.mock_random.seed(self._seed)

    def stop(self) -> None:
        if self._moto is not None:
            self._moto.stop()
            self._moto = None
        if self._saved_aws is not None:
            for key in [k for k in os.environ if k.startswith("AWS_")]:
                del os.environ[key]
            os.environ.update(self._saved_aws)
            self._saved_aws = None

    def environ(self) -> dict[str, str]:
        return {
            "AWS_REGION": self.region,
            "AWS_DEFAULT_REGION": self.region,
            "AWS_ACCESS_KEY_ID": "testing",
            "AWS_SECRET_ACCESS_KEY": "testing",
            # The Function URLs' AuthType AWS_IAM, as template.yaml deploys them.
            "GPUPOOL_HTTP_AUTH": "aws-iam",
            "GPUPOOL_RELAY_PRINCIPAL": RELAY_ROLE_ARN,
        }

    def sim_instances(self) -> list[SimInstance]:
        return ec2_instances(self.ec2, region=self.region)

    def managed_instances(self) -> list[dict[str, Any]]:
        """Every instance in the account tagged `managed-by=tensor-fusion.ai` (any state)."""
        return _ec2_managed(self.ec2)


class AlibabaCloud:
    service = "ECS"
    region = "cn-hangzhou"

    def __init__(self, *, clock: Clock) -> None:
        self.state = EcsState(
            now=clock.now, pending_for=timedelta(seconds=10), starting_for=timedelta(seconds=20)
        )
        self._ecs = EcsEndpoint(self.state)

    def start(self) -> None:
        self._ecs.start()

    def stop(self) -> None:
        self._ecs.stop()

    def environ(self) -> dict[str, str]:
        return {
            "ALIBABA_CLOUD_REGION_ID": self.region,
            "GPUPOOL_ECS_ENDPOINT": self._ecs.url,
            "ALIBABA_CLOUD_ACCESS_KEY_ID": SANDBOX_ACCESS_KEY_ID,
            "ALIBABA_CLOUD_ACCESS_KEY_SECRET": SANDBOX_ACCESS_KEY_SECRET,
            # The HTTP triggers' authType function, as s.yaml deploys them.
            "GPUPOOL_HTTP_AUTH": "fc-signature",
        }

    def sim_instances(self) -> list[SimInstance]:
        return ecs_instances(self.state)

    def managed_instances(self) -> list[dict[str, Any]]:
        """Every managed instance in the EC2 shape the story reports; deleted ones as `terminated`
        (ECS's API forgets them, but EventBridge still announces the deletion)."""
        now = self.state.now()
        timing = (self.state.pending_for, self.state.starting_for)
        rows = [(i, ECS_TO_EC2_STATES[i.status(now, *timing)]) for i in self.state.live()]
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
