"""Ec2Compute against moto: what RunInstances carries, adoption by tag, and the terminate guard.

Covers issue 4 item 2: image, zone-matching subnet, security groups, instance profile, IMDS
options, disks in GiB, userData with the claim name, tags on instance and volumes, spot,
placement; find_by_claim / describe / list_managed scoped by tags; terminate refuses an
instance without our tags and is idempotent.
"""

from __future__ import annotations

import base64
from typing import Any

import pytest

from gpupool.adapters.aws.compute import SUBNETS_FRESH_FOR_S, Ec2Compute
from gpupool.service.errors import CapacityUnavailable, PermanentError

from .conftest import CLUSTER, Ec2World, make_claim, make_class, make_offering


def _instance(client: Any, instance_id: str) -> dict[str, Any]:
    reservations = client.describe_instances(InstanceIds=[instance_id])["Reservations"]
    instance: dict[str, Any] = reservations[0]["Instances"][0]
    return instance


def _tags(resource: dict[str, Any]) -> dict[str, str]:
    return {tag["Key"]: tag["Value"] for tag in resource.get("Tags") or []}


def test_launch_carries_the_whole_node_class(ec2_world: Ec2World) -> None:
    claim = make_claim("pool-a-abc12", zone="us-east-1b")
    instance_id = ec2_world.compute().launch(
        claim, ec2_world.full_class(), make_offering(zone="us-east-1b"), client_token="uid-pool-a-abc12"
    )

    client = ec2_world.client
    instance = _instance(client, instance_id)
    assert instance["ImageId"] == ec2_world.image_id
    assert instance["InstanceType"] == "g5.xlarge"
    assert instance["SubnetId"] == ec2_world.subnets["us-east-1b"]  # the zone's subnet of two
    assert instance["Placement"]["AvailabilityZone"] == "us-east-1b"
    assert [group["GroupId"] for group in instance["SecurityGroups"]] == [ec2_world.security_group_id]
    assert instance["IamInstanceProfile"]["Arn"].endswith("/gpu-node-profile")
    assert instance["MetadataOptions"]["HttpTokens"] == "required"
    assert instance["MetadataOptions"]["HttpPutResponseHopLimit"] == 2

    tags = _tags(instance)
    assert tags["managed-by"] == "tensor-fusion.ai"  # ours win over the class's "someone-else"
    assert tags["tensor-fusion.ai/node-name"] == "pool-a-abc12"
    assert tags["tensor-fusion.ai/node-class"] == "gpu-class"
    assert tags["tensor-fusion.ai/cluster"] == CLUSTER
    assert tags["team"] == "ml"

    user_data = client.describe_instance_attribute(InstanceId=instance_id, Attribute="userData")
    script = base64.b64decode(user_data["UserData"]["Value"]).decode()
    assert "echo pool-a-abc12 > /etc/node-name" in script
    assert "__GPU_NODE_RESOURCE_NAME__" not in script

    volume_ids = [mapping["Ebs"]["VolumeId"] for mapping in instance["BlockDeviceMappings"]]
    volumes = client.describe_volumes(VolumeIds=volume_ids)["Volumes"]
    sizes = {volume["Size"] for volume in volumes}
    assert 200 in sizes
    for volume in volumes:
        assert _tags(volume)["tensor-fusion.ai/node-name"] == "pool-a-abc12"


def test_spot_offering_launches_a_spot_instance(ec2_world: Ec2World) -> None:
    offering = make_offering(capacity_type="Spot", zone="us-east-1a")
    instance_id = ec2_world.compute().launch(
        make_claim(capacityType="Spot"), ec2_world.full_class(), offering, client_token="t-spot"
    )
    instance = _instance(ec2_world.client, instance_id)
    assert instance.get("InstanceLifecycle") == "spot"
    found = ec2_world.compute().find_by_claim(make_claim())
    assert found is not None and found.capacity_type == "Spot"


def test_subnet_selected_by_tags_in_the_offering_zone(ec2_world: Ec2World) -> None:
    client = ec2_world.client
    client.create_tags(Resources=[ec2_world.subnets["us-east-1a"]], Tags=[{"Key": "gpu", "Value": "yes"}])
    node_class = ec2_world.full_class(subnetSelectorTerms=[{"tags": {"gpu": "yes"}}])
    instance_id = ec2_world.compute().launch(make_claim(), node_class, make_offering(), client_token="t")
    assert _instance(client, instance_id)["SubnetId"] == ec2_world.subnets["us-east-1a"]


def test_zone_without_a_subnet_is_an_unavailable_offering_and_launches_nothing(ec2_world: Ec2World) -> None:
    with pytest.raises(CapacityUnavailable, match="us-east-1c"):
        ec2_world.compute().launch(
            make_claim(), ec2_world.full_class(), make_offering(zone="us-east-1c"), client_token="t"
        )
    assert ec2_world.compute().list_managed() == []


def test_launchable_zones_are_those_of_the_class_subnets(ec2_world: Ec2World) -> None:
    compute = ec2_world.compute()
    assert compute.launchable_zones(ec2_world.full_class()) == {"us-east-1a", "us-east-1b"}
    one = ec2_world.full_class(subnetSelectorTerms=[{"id": ec2_world.subnets["us-east-1b"]}])
    assert compute.launchable_zones(one) == {"us-east-1b"}
    ec2_world.client.create_tags(
        Resources=[ec2_world.subnets["us-east-1a"]], Tags=[{"Key": "gpu", "Value": "yes"}]
    )
    tagged = ec2_world.full_class(subnetSelectorTerms=[{"tags": {"gpu": "yes"}}])
    assert compute.launchable_zones(tagged) == {"us-east-1a"}
    assert compute.launchable_zones(ec2_world.full_class(subnetSelectorTerms=[])) is None


def test_unknown_subnet_is_permanent_with_the_code(ec2_world: Ec2World) -> None:
    node_class = ec2_world.full_class(subnetSelectorTerms=[{"id": "subnet-00000000deadbeef0"}])
    with pytest.raises(PermanentError) as caught:
        ec2_world.compute().launch(make_claim(), node_class, make_offering(), client_token="t")
    assert (caught.value.code or "").startswith("InvalidSubnetID")
    assert ec2_world.compute().list_managed() == []


def test_class_without_image_terms_is_permanent(ec2_world: Ec2World) -> None:
    node_class = ec2_world.full_class(osImageSelectorTerms=[{"name": "no-such-image-*"}])
    with pytest.raises(PermanentError, match="osImageSelectorTerms"):
        ec2_world.compute().launch(make_claim(), node_class, make_offering(), client_token="t")


def test_find_by_claim_adopts_the_claims_live_instance(ec2_world: Ec2World) -> None:
    compute = ec2_world.compute()
    assert compute.find_by_claim(make_claim()) is None
    node_class = ec2_world.full_class()
    launched = compute.launch(make_claim(), node_class, make_offering(), client_token="same")
    # moto ignores ClientToken: a second launch leaves two (which of them is oldest is
    # checked with a fake client in test_ec2_errors.py, moto's launch times are per second).
    second = compute.launch(make_claim(), node_class, make_offering(), client_token="same")
    found = compute.find_by_claim(make_claim())
    assert found is not None
    assert found.instance_id in {launched, second}
    assert found.state == "running"
    assert found.claim_name == "pool-a-x1" and found.cluster == CLUSTER and found.node_class == "gpu-class"
    assert compute.find_by_claim(make_claim("another-claim")) is None


def test_find_by_claim_ignores_other_clusters_and_terminated(ec2_world: Ec2World) -> None:
    other = ec2_world.compute(cluster="other")
    other.launch(make_claim(), ec2_world.full_class(), make_offering(), client_token="t")
    compute = ec2_world.compute()
    assert compute.find_by_claim(make_claim()) is None
    mine = compute.launch(make_claim(), ec2_world.full_class(), make_offering(), client_token="t")
    compute.terminate(mine)
    assert compute.find_by_claim(make_claim()) is None


def test_describe_leaves_out_unknown_and_untagged_ids(ec2_world: Ec2World) -> None:
    compute = ec2_world.compute()
    mine = compute.launch(make_claim(), ec2_world.full_class(), make_offering(), client_token="t")
    stranger = ec2_world.client.run_instances(
        ImageId=ec2_world.image_id, MinCount=1, MaxCount=1, InstanceType="t3.micro"
    )["Instances"][0]["InstanceId"]
    described = compute.describe([mine, stranger, "i-0123456789abcdef0"])
    assert [item.instance_id for item in described] == [mine]
    assert described[0].state == "running" and described[0].zone == "us-east-1a"
    assert described[0].launch_time is not None and described[0].launch_time.tzinfo is not None
    assert compute.describe([]) == []


def test_terminate_refuses_an_untagged_instance_and_leaves_it_running(ec2_world: Ec2World) -> None:
    client = ec2_world.client
    stranger = client.run_instances(ImageId=ec2_world.image_id, MinCount=1, MaxCount=1)["Instances"][0][
        "InstanceId"
    ]
    with pytest.raises(PermanentError, match="refusing"):
        ec2_world.compute().terminate(stranger)
    assert _instance(client, stranger)["State"]["Name"] == "running"


def test_terminate_refuses_another_clusters_instance(ec2_world: Ec2World) -> None:
    theirs = ec2_world.compute(cluster="other").launch(
        make_claim(), ec2_world.full_class(), make_offering(), client_token="t"
    )
    with pytest.raises(PermanentError, match="refusing"):
        ec2_world.compute().terminate(theirs)
    assert _instance(ec2_world.client, theirs)["State"]["Name"] == "running"


def test_terminate_is_idempotent(ec2_world: Ec2World) -> None:
    compute = ec2_world.compute()
    mine = compute.launch(make_claim(), ec2_world.full_class(), make_offering(), client_token="t")
    compute.terminate(mine)
    compute.terminate(mine)
    compute.terminate("i-0123456789abcdef0")  # never existed: gone is success
    assert _instance(ec2_world.client, mine)["State"]["Name"] == "terminated"
    assert [item.state for item in compute.describe([mine])] == ["terminated"]


def test_list_managed_reports_only_our_live_instances(ec2_world: Ec2World) -> None:
    compute = ec2_world.compute()
    node_class = ec2_world.full_class()
    kept = compute.launch(make_claim("c1"), node_class, make_offering(), client_token="a")
    gone = compute.launch(make_claim("c2"), node_class, make_offering(), client_token="b")
    ec2_world.compute(cluster="other").launch(make_claim("c3"), node_class, make_offering(), client_token="c")
    ec2_world.client.run_instances(ImageId=ec2_world.image_id, MinCount=1, MaxCount=1)
    compute.terminate(gone)
    assert [(item.instance_id, item.claim_name) for item in compute.list_managed()] == [(kept, "c1")]


def test_minimal_class_launches_with_defaults(ec2_world: Ec2World) -> None:
    node_class = make_class(osImageSelectorTerms=[{"id": ec2_world.image_id}])
    instance_id = ec2_world.compute().launch(
        make_claim(), node_class, make_offering(zone=None), client_token="t"
    )
    assert _instance(ec2_world.client, instance_id)["ImageId"] == ec2_world.image_id


def test_compute_needs_a_cluster_name(ec2_world: Ec2World) -> None:
    with pytest.raises(ValueError, match="cluster"):
        Ec2Compute(ec2_world.client, cluster="")


def test_a_round_of_launches_reads_the_class_subnets_once(ec2_world: Ec2World) -> None:
    calls: list[str] = []
    compute = ec2_world.compute(calls=calls)
    node_class = ec2_world.full_class()

    assert compute.launchable_zones(node_class) == {"us-east-1a", "us-east-1b"}
    for index, zone in enumerate(("us-east-1a", "us-east-1b", "us-east-1a")):
        claim = make_claim(f"pool-a-r{index}", zone=zone)
        compute.launch(claim, node_class, make_offering(zone=zone), client_token=f"t{index}")

    assert calls.count("DescribeSubnets") == 1
    assert calls.count("RunInstances") == 3


def test_the_class_subnets_are_read_again_once_stale(ec2_world: Ec2World) -> None:
    now = [1000.0]
    calls: list[str] = []
    compute = ec2_world.compute(calls=calls, monotonic=lambda: now[0])
    node_class = ec2_world.full_class()

    compute.launchable_zones(node_class)
    now[0] += SUBNETS_FRESH_FOR_S - 1
    compute.launchable_zones(node_class)
    assert calls.count("DescribeSubnets") == 1
    now[0] += 2
    compute.launchable_zones(node_class)
    assert calls.count("DescribeSubnets") == 2


def test_launches_spread_over_a_zones_subnets_as_fresh_reads_would(ec2_world: Ec2World) -> None:
    """Two subnets of one zone with the same free IPs: the second launch goes to the other one,
    as the first launch's IP is deducted from the reused answer."""
    client = ec2_world.client
    vpc = client.describe_subnets(SubnetIds=[ec2_world.subnets["us-east-1a"]])["Subnets"][0]["VpcId"]
    twins = [
        client.create_subnet(VpcId=vpc, CidrBlock=f"10.20.{10 + index}.0/28", AvailabilityZone="us-east-1c")[
            "Subnet"
        ]["SubnetId"]
        for index in range(2)
    ]
    node_class = ec2_world.full_class(subnetSelectorTerms=[{"id": subnet} for subnet in twins])
    compute = ec2_world.compute()

    placed = [
        _instance(
            client,
            compute.launch(
                make_claim(f"pool-a-s{index}", zone="us-east-1c"),
                node_class,
                make_offering(zone="us-east-1c"),
                client_token=f"s{index}",
            ),
        )["SubnetId"]
        for index in range(2)
    ]

    assert sorted(placed) == sorted(twins)
