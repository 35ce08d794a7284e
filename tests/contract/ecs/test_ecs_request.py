"""The RunInstances parameters `EcsCompute` sends, checked where ECS stores them: the sandbox ECS
behind the real SDK (so each parameter survives the SDK's model and wire flattening) and the
pure builder for the refusals.

Covers: image / vSwitch per zone / security group resolved from ids, names and tags; system disk
from extraParams (category, size, performance level) or TensorFusion's defaults (cloud_essd,
40 GiB); data disks from blockDeviceMappings; tags with ours winning; base64 user data with the
claim name; PayByTraffic with InternetMaxBandwidthOut; spot strategies, price limit, duration
and interruption behaviour; key pair; ClientToken; cluster-wide extraParams under the claim's;
and a clear PermanentError for each bad extraParams value, a bad token, too many tags.
"""

from __future__ import annotations

import base64
from typing import Any

import pytest

from gpupool.adapters.alibaba.compute import EcsCompute
from gpupool.adapters.alibaba.request import ResolvedEcsNetwork, run_instances_params
from gpupool.sandbox.ecs_server import EcsEndpoint
from gpupool.service.errors import CapacityUnavailable, PermanentError

from .conftest import CLUSTER, REGION, ZONE, full_class, make_claim, make_class, make_offering, sdk_api

NETWORK = ResolvedEcsNetwork(image_id="m-1", vswitch_id="vsw-1", security_group_ids=("sg-1",))


def _sent(endpoint: EcsEndpoint, instance_id: str) -> dict[str, Any]:
    params: dict[str, Any] = endpoint.state.instances[instance_id].params
    return params


def test_every_parameter_reaches_ecs_through_the_sdk(endpoint: EcsEndpoint) -> None:
    compute = EcsCompute(
        sdk_api(endpoint), cluster=CLUSTER, region=REGION, default_params={"systemDiskSize": "60"}
    )
    claim = make_claim(
        capacityType="Spot",
        extraParams={
            "spotPriceLimit": "1.25",
            "spotDuration": "1",
            "spotInterruptionBehavior": "Terminate",
            "keyPairName": "ops",
            "systemDiskCategory": "cloud_essd",
            "systemDiskSize": "120",
            "systemDiskPerformanceLevel": "PL1",
            "dataDiskPerformanceLevel": "PL2",
            "internetMaxBandwidthOut": "50",
        },
    )
    node_class = full_class(
        endpoint.state,
        osImageSelectorTerms=[{"name": "ubuntu_22_04_x64_gpu_20251101"}],
        securityGroupSelectorTerms=[{"tags": {"tensor-fusion.ai/security-group": "gpu-nodes"}}],
    )
    instance_id = compute.launch(claim, node_class, make_offering(capacity_type="Spot"), client_token="uid-7")
    sent = _sent(endpoint, instance_id)
    vswitch = next(v for v, item in endpoint.state.network.vswitches.items() if item["ZoneId"] == ZONE)
    assert sent["ImageId"] == "m-sandboxgpu2204b0002" and sent["VSwitchId"] == vswitch
    assert sent["ZoneId"] == ZONE and sent["SecurityGroupId"] == "sg-sandbox0000000001"
    assert sent["SystemDisk"] == {"Category": "cloud_essd", "Size": "120", "PerformanceLevel": "PL1"}
    assert sent["DataDisk"] == [{"Size": "200", "Category": "cloud_essd", "PerformanceLevel": "PL2"}]
    assert (sent["SpotStrategy"], sent["SpotPriceLimit"], sent["SpotDuration"]) == (
        "SpotWithPriceLimit",
        "1.25",
        "1",
    )
    assert sent["SpotInterruptionBehavior"] == "Terminate" and sent["KeyPairName"] == "ops"
    assert (sent["InternetChargeType"], sent["InternetMaxBandwidthOut"]) == ("PayByTraffic", "50")
    assert (sent["ClientToken"], sent["InstanceName"], sent["Amount"]) == ("uid-7", "pool-a-x1", "1")
    assert base64.b64decode(sent["UserData"]).decode() == "#!/bin/bash\necho pool-a-x1 > /etc/node-name\n"
    tags = {tag["Key"]: tag["Value"] for tag in sent["Tag"]}
    assert tags["managed-by"] == "tensor-fusion.ai" and tags["team"] == "ml"
    assert tags["tensor-fusion.ai/node-name"] == "pool-a-x1" and tags["tensor-fusion.ai/cluster"] == CLUSTER


def test_defaults_are_tensorfusions_and_the_cluster_params_apply_under_the_claims(
    endpoint: EcsEndpoint,
) -> None:
    compute = EcsCompute(
        sdk_api(endpoint), cluster=CLUSTER, region=REGION, default_params={"systemDiskSize": "60"}
    )
    node_class = full_class(endpoint.state, blockDeviceMappings=[])
    instance_id = compute.launch(make_claim(), node_class, make_offering(), client_token="uid-1")
    sent = _sent(endpoint, instance_id)
    assert sent["SystemDisk"] == {"Category": "cloud_essd", "Size": "60"}
    assert (sent["SpotStrategy"], sent["InstanceChargeType"], sent["InternetMaxBandwidthOut"]) == (
        "NoSpot",
        "PostPaid",
        "100",
    )
    assert "DataDisk" not in sent and "KeyPairName" not in sent


def test_a_system_block_device_sizes_the_system_disk() -> None:
    node_class = make_class(
        blockDeviceMappings=[
            {"deviceName": "system", "ebs": {"volumeSize": "100Gi", "volumeType": "cloud_auto"}}
        ]
    )
    params = run_instances_params(
        make_claim(),
        node_class,
        make_offering(),
        network=NETWORK,
        cluster=CLUSTER,
        region=REGION,
        client_token="t",
    )
    assert params["SystemDisk"] == {"Category": "cloud_auto", "Size": "100"}
    assert "DataDisk" not in params


def test_a_zone_without_a_vswitch_of_the_class_is_an_unavailable_offering(endpoint: EcsEndpoint) -> None:
    compute = EcsCompute(sdk_api(endpoint), cluster=CLUSTER, region=REGION)
    only_h = [v for v, item in endpoint.state.network.vswitches.items() if item["ZoneId"] == "cn-hangzhou-h"]
    node_class = full_class(endpoint.state, subnetSelectorTerms=[{"id": only_h[0]}])
    assert compute.launchable_zones(node_class) == frozenset({"cn-hangzhou-h"})
    with pytest.raises(CapacityUnavailable, match="no vSwitch in zone cn-hangzhou-i"):
        compute.launch(make_claim(), node_class, make_offering(), client_token="t")
    tagged = full_class(endpoint.state, subnetSelectorTerms=[{"tags": {"any": "thing"}}])
    with pytest.raises(PermanentError, match="by id or name"):
        compute.launch(make_claim(), tagged, make_offering(), client_token="t")


BAD = [
    ({"systemDiskSize": "ten"}, "systemDiskSize"),
    ({"systemDiskSize": "5"}, "systemDiskSize"),
    ({"spotPriceLimit": "-1"}, "spotPriceLimit"),
    ({"spotPriceLimit": "nan"}, "spotPriceLimit"),
    ({"spotDuration": "9"}, "spotDuration"),
    ({"spotInterruptionBehavior": "Hibernate"}, "spotInterruptionBehavior"),
    ({"internetMaxBandwidthOut": "1000"}, "internetMaxBandwidthOut"),
]


@pytest.mark.parametrize(("extra", "named"), BAD, ids=[b[1] + "=" + next(iter(b[0].values())) for b in BAD])
def test_a_bad_extra_param_is_a_permanent_error_naming_it(extra: dict[str, str], named: str) -> None:
    with pytest.raises(PermanentError, match=named):
        run_instances_params(
            make_claim(capacityType="Spot", extraParams=extra),
            make_class(),
            make_offering(capacity_type="Spot"),
            network=NETWORK,
            cluster=CLUSTER,
            region=REGION,
            client_token="t",
        )


@pytest.mark.parametrize("token", ["", "x" * 65, "clé"])
def test_a_client_token_must_be_1_to_64_ascii_characters(token: str) -> None:
    with pytest.raises(PermanentError, match="client token"):
        run_instances_params(
            make_claim(),
            make_class(),
            make_offering(),
            network=NETWORK,
            cluster=CLUSTER,
            region=REGION,
            client_token=token,
        )


def test_more_than_twenty_tags_is_refused_before_calling_ecs() -> None:
    node_class = make_class(tags={f"k{index}": "v" for index in range(20)})
    with pytest.raises(PermanentError, match="20 tags"):
        run_instances_params(
            make_claim(),
            node_class,
            make_offering(),
            network=NETWORK,
            cluster=CLUSTER,
            region=REGION,
            client_token="t",
        )
