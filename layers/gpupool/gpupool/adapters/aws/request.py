"""The RunInstances request for one claim: GPUNodeClass + claim + offering → boto3 keyword arguments.

Role: pure translation of the TensorFusion-shaped node class into EC2's parameters (image,
subnet, security groups, instance profile, IMDS options, disks in GiB, userData with the
claim name, tags on the instance and its volumes, spot or reserved market options, zone,
client token). A Reserved offering launches only into a capacity reservation
(`CapacityReservationPreference: capacity-reservations-only`): with no reservation room EC2
refuses the launch with a capacity error, the offering is marked unavailable and the next plan
picks the next offering — so a claim never says Reserved for an instance that runs On-Demand
(`open` would silently do that). Selector terms that name ids are used as they are; terms with tags or names
are resolved by the caller (`Ec2Compute`) and passed in as `ResolvedNetwork`.

Must not: call AWS, retry, or decide which offering to launch.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from gpupool.adapters.cloud import instance_tags
from gpupool.core.model.capacity_type import spellings
from gpupool.core.model.constants import (
    USER_DATA_NODE_NAME_PLACEHOLDER,
)
from gpupool.core.model.nodeclaim import GPUNodeClaim
from gpupool.core.model.nodeclass import BlockDeviceMapping, GPUNodeClass, MetadataOptions
from gpupool.core.planning.plan import OfferingRef
from gpupool.service.errors import PermanentError

__all__ = [
    "SPOT_PRICE_LIMIT_PARAM",
    "ResolvedNetwork",
    "run_instances_request",
]

GIB = 1024**3
# Claim extraParams key that caps the spot price (USD/hour), as TensorFusion names it.
SPOT_PRICE_LIMIT_PARAM = "spotPriceLimit"


@dataclass(frozen=True)
class ResolvedNetwork:
    """What the selector terms resolved to for one launch."""

    image_id: str
    subnet_id: str | None
    security_group_ids: tuple[str, ...]


def _on_off(value: bool | str | None) -> str | None:
    if value is None:
        return None
    if isinstance(value, bool):
        return "enabled" if value else "disabled"
    return value


def _metadata_options(options: MetadataOptions | None) -> dict[str, Any] | None:
    if options is None:
        return None
    result: dict[str, Any] = {}
    if (endpoint := _on_off(options.http_endpoint)) is not None:
        result["HttpEndpoint"] = endpoint
    if (ipv6 := _on_off(options.http_protocol_ipv6)) is not None:
        result["HttpProtocolIpv6"] = ipv6
    if options.http_put_response_hop_limit is not None:
        result["HttpPutResponseHopLimit"] = options.http_put_response_hop_limit
    if options.http_tokens is not None:
        result["HttpTokens"] = options.http_tokens
    return result or None


def _block_device(mapping: BlockDeviceMapping, index: int, class_name: str) -> dict[str, Any]:
    if not mapping.device_name:
        raise PermanentError(f"GPUNodeClass {class_name}: blockDeviceMappings[{index}] has no deviceName")
    device: dict[str, Any] = {"DeviceName": mapping.device_name}
    ebs = mapping.ebs
    if ebs is None:
        return device
    volume: dict[str, Any] = {}
    if ebs.volume_size is not None:
        # EBS sizes are whole GiB; round up so a "100G" request never gets a smaller disk.
        volume["VolumeSize"] = max(1, math.ceil(ebs.volume_size.value / GIB))
    optional = {
        "VolumeType": ebs.volume_type,
        "Iops": ebs.iops,
        "Throughput": ebs.throughput,
        "Encrypted": ebs.encrypted,
        "DeleteOnTermination": ebs.delete_on_termination,
        "KmsKeyId": ebs.kms_key_id,
        "SnapshotId": ebs.snapshot_id,
    }
    volume.update({key: value for key, value in optional.items() if value is not None})
    if volume:
        device["Ebs"] = volume
    return device


def _market_options(offering: OfferingRef, claim: GPUNodeClaim) -> dict[str, Any]:
    if offering.capacity_type == "Spot":
        spot: dict[str, Any] = {"SpotInstanceType": "one-time", "InstanceInterruptionBehavior": "terminate"}
        limit = claim.spec.extra_params.get(SPOT_PRICE_LIMIT_PARAM)
        if limit:
            spot["MaxPrice"] = limit
        return {"InstanceMarketOptions": {"MarketType": spellings("Spot").ec2, "SpotOptions": spot}}
    if offering.capacity_type == "Reserved":
        return {
            "CapacityReservationSpecification": {
                "CapacityReservationPreference": "capacity-reservations-only"
            }
        }
    return {}


def run_instances_request(
    claim: GPUNodeClaim,
    node_class: GPUNodeClass,
    offering: OfferingRef,
    *,
    network: ResolvedNetwork,
    cluster: str,
    client_token: str,
) -> dict[str, Any]:
    """Keyword arguments for `ec2.run_instances` (boto3 base64-encodes UserData itself).

    Raises PermanentError for a class EC2 would reject anyway (a disk without a device name,
    a client token longer than EC2's 64 characters).
    """
    if not client_token or len(client_token) > 64 or not client_token.isascii():
        raise PermanentError(f"claim {claim.name}: client token must be 1–64 ASCII characters")
    spec = node_class.spec
    tags = instance_tags(
        claim_name=claim.name, class_name=node_class.name, cluster=cluster, class_tags=spec.tags
    )
    tag_list = [{"Key": key, "Value": value} for key, value in tags.items()]
    request: dict[str, Any] = {
        "ImageId": network.image_id,
        "InstanceType": offering.instance_type,
        "MinCount": 1,
        "MaxCount": 1,
        "ClientToken": client_token,
        "TagSpecifications": [
            {"ResourceType": "instance", "Tags": tag_list},
            {"ResourceType": "volume", "Tags": tag_list},
        ],
    }
    if network.subnet_id:
        request["SubnetId"] = network.subnet_id
    if network.security_group_ids:
        request["SecurityGroupIds"] = list(network.security_group_ids)
    if offering.zone:
        request["Placement"] = {"AvailabilityZone": offering.zone}
    if spec.instance_profile:
        key = "Arn" if spec.instance_profile.startswith("arn:") else "Name"
        request["IamInstanceProfile"] = {key: spec.instance_profile}
    if (metadata := _metadata_options(spec.metadata_options)) is not None:
        request["MetadataOptions"] = metadata
    if spec.block_device_mappings:
        request["BlockDeviceMappings"] = [
            _block_device(mapping, index, node_class.name)
            for index, mapping in enumerate(spec.block_device_mappings)
        ]
    if spec.user_data:
        request["UserData"] = spec.user_data.replace(USER_DATA_NODE_NAME_PLACEHOLDER, claim.name)
    request.update(_market_options(offering, claim))
    return request
