"""Builders and ECS worlds for the ECS adapter's contract tests.

Two ways to reach the sandbox's ECS (`gpupool.sandbox.ecs_state.EcsState`): in memory
(`InMemoryEcsApi`, parameters passed as they are) and over HTTP through the real
`alibabacloud-ecs20140526` SDK (`sdk_api`), so the fake is exercised in the SDK's wire format.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

import pytest

from gpupool.adapters.alibaba.api import EcsCredentials, SdkEcsApi, sdk_client
from gpupool.adapters.alibaba.compute import EcsCompute
from gpupool.adapters.alibaba.errors import EcsApiError
from gpupool.core.model.nodeclaim import GPUNodeClaim
from gpupool.core.model.nodeclass import GPUNodeClass
from gpupool.core.planning.plan import OfferingRef
from gpupool.sandbox.ecs_network import EcsFault
from gpupool.sandbox.ecs_server import SANDBOX_ACCESS_KEY_ID, SANDBOX_ACCESS_KEY_SECRET, EcsEndpoint
from gpupool.sandbox.ecs_state import EcsState

REGION = "cn-hangzhou"
ZONE = "cn-hangzhou-i"
CLUSTER = "demo"
GN7I = "ecs.gn7i-c8g1.2xlarge"


def make_claim(name: str = "pool-a-x1", **spec: Any) -> GPUNodeClaim:
    body: dict[str, Any] = {
        "tflopsOffered": "125",
        "vramOffered": "24Gi",
        "gpuDeviceOffered": 1,
        "instanceType": GN7I,
        "zone": ZONE,
        "capacityType": "OnDemand",
        "nodeClassRef": {"group": "tensor-fusion.ai", "kind": "GPUNodeClass", "name": "gpu-class"},
    }
    body.update(spec)
    return GPUNodeClaim.model_validate({"metadata": {"name": name, "uid": f"uid-{name}"}, "spec": body})


def make_class(name: str = "gpu-class", **spec: Any) -> GPUNodeClass:
    return GPUNodeClass.model_validate({"metadata": {"name": name}, "spec": spec})


def make_offering(**overrides: Any) -> OfferingRef:
    body: dict[str, Any] = {
        "instance_type": GN7I,
        "region": REGION,
        "zone": ZONE,
        "capacity_type": "OnDemand",
        "tflops": "125",
        "vram": "24Gi",
        "gpu_count": 1,
        "hourly_price": "1.2",
    }
    body.update(overrides)
    return OfferingRef.model_validate(body)


def full_class(state: EcsState, **overrides: Any) -> GPUNodeClass:
    """A class naming every resource of the sandbox account by id, with disks, tags and user data."""
    network = state.network
    spec: dict[str, Any] = {
        "osImageSelectorTerms": [{"id": next(iter(network.images))}],
        "subnetSelectorTerms": [{"id": vswitch} for vswitch in network.vswitches],
        "securityGroupSelectorTerms": [{"id": next(iter(network.security_groups))}],
        "blockDeviceMappings": [
            {"deviceName": "data", "ebs": {"volumeSize": "200", "volumeType": "cloud_essd"}}
        ],
        "tags": {"team": "ml", "managed-by": "someone-else"},
        "userData": "#!/bin/bash\necho __GPU_NODE_RESOURCE_NAME__ > /etc/node-name\n",
    }
    spec.update(overrides)
    return make_class(**spec)


class InMemoryEcsApi:
    """`EcsApi` straight on an `EcsState` (no HTTP, no SDK): the in-memory fake."""

    def __init__(self, state: EcsState) -> None:
        self.state = state

    def call(self, action: str, params: Mapping[str, Any]) -> dict[str, Any]:
        try:
            return self.state.call(action, params)
        except EcsFault as fault:
            raise EcsApiError(fault.code, fault.message, status=fault.status) from None


def sdk_api(endpoint: EcsEndpoint, *, access_key_id: str = SANDBOX_ACCESS_KEY_ID) -> SdkEcsApi:
    credentials = EcsCredentials(access_key_id, SANDBOX_ACCESS_KEY_SECRET)
    return SdkEcsApi.on(
        sdk_client(region=REGION, endpoint=endpoint.url, credentials=credentials, timeout_s=10)
    )


def compute_on(api: Any) -> EcsCompute:
    return EcsCompute(api, cluster=CLUSTER, region=REGION, sleep=lambda _seconds: None)


@pytest.fixture
def endpoint() -> Iterator[EcsEndpoint]:
    with EcsEndpoint() as served:
        yield served
