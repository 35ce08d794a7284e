"""The ECS RunInstances request for one claim: GPUNodeClass + claim + offering → API parameters.

Role: pure translation into the parameter map of the ECS API (2014-05-26), by the API's own
names, nested as the SDK's `RunInstancesRequest.from_map` reads them: image, vSwitch, zone,
security groups, system disk (category / size / performance level from extraParams or a
`system` block device), data disks (the other block devices), tags (ours win), base64 user
data with the claim name, `InternetChargeType=PayByTraffic` and `InternetMaxBandwidthOut`,
pay-as-you-go or spot (`SpotAsPriceGo`, or `SpotWithPriceLimit` + `SpotPriceLimit`, with
`SpotDuration` and `SpotInterruptionBehavior`), `KeyPairName`, `ClientToken`. extraParams use
TensorFusion's names (`spotPriceLimit`, `spotDuration`, `spotInterruptionBehavior`,
`keyPairName`, `systemDiskCategory`, `systemDiskSize`, `dataDiskPerformanceLevel`) plus
`systemDiskPerformanceLevel` and `internetMaxBandwidthOut`; the claim's own values win over
the cluster-wide defaults the wiring passes.

Must not: call Alibaba Cloud, retry, or decide which offering to launch.
"""

from __future__ import annotations

import base64
import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from gpupool.adapters.cloud import instance_tags
from gpupool.core.model.capacity_type import spellings
from gpupool.core.model.constants import USER_DATA_NODE_NAME_PLACEHOLDER
from gpupool.core.model.nodeclaim import GPUNodeClaim
from gpupool.core.model.nodeclass import BlockDeviceMapping, GPUNodeClass
from gpupool.core.planning.plan import OfferingRef
from gpupool.core.quantity import Quantity
from gpupool.service.errors import PermanentError

__all__ = ["EXTRA_PARAMS", "SYSTEM_DEVICE_NAMES", "ResolvedEcsNetwork", "run_instances_params"]

GIB = 1024**3
# A volumeSize below one MiB is a number of GiB, as TensorFusion writes it ("200"); above, bytes.
_PLAIN_GIB_BELOW = 1024**2
SYSTEM_DEVICE_NAMES = frozenset({"system", "/dev/xvda", "/dev/vda", "/dev/sda"})
DEFAULT_SYSTEM_DISK_CATEGORY = "cloud_essd"  # as TensorFusion's provider
DEFAULT_SYSTEM_DISK_GIB = 40
DEFAULT_BANDWIDTH_OUT_MBPS = 100
USER_DATA_LIMIT = 32 * 1024  # ECS: base64-encoded user data up to 32 KB
TAG_LIMIT = 20
EXTRA_PARAMS = (
    "spotPriceLimit",
    "spotDuration",
    "spotInterruptionBehavior",
    "keyPairName",
    "systemDiskCategory",
    "systemDiskSize",
    "systemDiskPerformanceLevel",
    "dataDiskPerformanceLevel",
    "internetMaxBandwidthOut",
)


@dataclass(frozen=True)
class ResolvedEcsNetwork:
    """What the selector terms resolved to for one launch."""

    image_id: str
    vswitch_id: str | None
    security_group_ids: tuple[str, ...]


def _int_param(params: Mapping[str, str], name: str, *, low: int, high: int, claim: str) -> int | None:
    text = params.get(name)
    if text is None or text == "":
        return None
    if not text.strip().isdigit() or not low <= int(text) <= high:
        raise PermanentError(
            f"claim {claim}: extraParams {name}={text!r} must be a whole number {low}–{high}"
        )
    return int(text)


def _gib(size: Quantity) -> int:
    value = size.value
    if value < _PLAIN_GIB_BELOW:
        return max(1, math.ceil(value))
    return max(1, math.ceil(value / GIB))


def _system_disk(params: Mapping[str, str], mapping: BlockDeviceMapping | None, claim: str) -> dict[str, Any]:
    ebs = mapping.ebs if mapping else None
    size = _int_param(params, "systemDiskSize", low=20, high=2048, claim=claim)
    if size is None and ebs is not None and ebs.volume_size is not None:
        size = _gib(ebs.volume_size)
    category = params.get("systemDiskCategory") or (ebs.volume_type if ebs else None)
    disk: dict[str, Any] = {
        "Category": category or DEFAULT_SYSTEM_DISK_CATEGORY,
        "Size": str(size or DEFAULT_SYSTEM_DISK_GIB),
    }
    if level := params.get("systemDiskPerformanceLevel"):
        disk["PerformanceLevel"] = level
    if ebs is not None and ebs.encrypted is not None:
        disk["Encrypted"] = "true" if ebs.encrypted else "false"
    if ebs is not None and ebs.kms_key_id:
        disk["KMSKeyId"] = ebs.kms_key_id
    return disk


def _data_disk(
    mapping: BlockDeviceMapping, params: Mapping[str, str], index: int, class_name: str
) -> dict[str, Any]:
    ebs = mapping.ebs
    if ebs is None or ebs.volume_size is None:
        raise PermanentError(
            f"GPUNodeClass {class_name}: blockDeviceMappings[{index}] needs ebs.volumeSize "
            "for an ECS data disk"
        )
    disk: dict[str, Any] = {"Size": _gib(ebs.volume_size), "Category": ebs.volume_type or "cloud_essd"}
    if (level := params.get("dataDiskPerformanceLevel")) and disk["Category"] == "cloud_essd":
        disk["PerformanceLevel"] = level
    if ebs.encrypted is not None:
        disk["Encrypted"] = "true" if ebs.encrypted else "false"
    optional = {
        "DeleteWithInstance": ebs.delete_on_termination,
        "KMSKeyId": ebs.kms_key_id,
        "SnapshotId": ebs.snapshot_id,
    }
    disk.update({key: value for key, value in optional.items() if value is not None})
    return disk


def _market(offering: OfferingRef, params: Mapping[str, str], claim: str) -> dict[str, Any]:
    if offering.capacity_type != "Spot":
        market: dict[str, Any] = {
            "InstanceChargeType": "PostPaid",
            "SpotStrategy": spellings("OnDemand").ecs[0],
        }
        if offering.capacity_type == "Reserved":
            market["PrivatePoolOptions"] = {"MatchCriteria": "Open"}
        return market
    spot: dict[str, Any] = {"InstanceChargeType": "PostPaid", "SpotStrategy": spellings("Spot").ecs[0]}
    if limit := params.get("spotPriceLimit"):
        try:
            price = float(limit)
        except ValueError:
            price = -1.0
        if not math.isfinite(price) or price <= 0:
            raise PermanentError(
                f"claim {claim}: extraParams spotPriceLimit={limit!r} must be a positive price"
            )
        spot.update({"SpotStrategy": spellings("Spot").ecs[1], "SpotPriceLimit": price})
    duration = _int_param(params, "spotDuration", low=0, high=6, claim=claim)
    if duration is not None:
        spot["SpotDuration"] = duration
    if behaviour := params.get("spotInterruptionBehavior"):
        if behaviour not in ("Terminate", "Stop"):
            raise PermanentError(
                f"claim {claim}: extraParams spotInterruptionBehavior={behaviour!r} must be Terminate or Stop"
            )
        spot["SpotInterruptionBehavior"] = behaviour
    return spot


def run_instances_params(
    claim: GPUNodeClaim,
    node_class: GPUNodeClass,
    offering: OfferingRef,
    *,
    network: ResolvedEcsNetwork,
    cluster: str,
    region: str,
    client_token: str,
    default_params: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """The RunInstances parameter map (ECS API names). Raises PermanentError for a request ECS
    would reject anyway: a bad extraParams value, a token that is not 1–64 ASCII characters,
    more than 20 tags, user data over 32 KB, a data disk without a size."""
    if not client_token or len(client_token) > 64 or not client_token.isascii():
        raise PermanentError(f"claim {claim.name}: client token must be 1–64 ASCII characters")
    params = {**(default_params or {}), **claim.spec.extra_params}
    spec = node_class.spec
    tags = instance_tags(
        claim_name=claim.name, class_name=node_class.name, cluster=cluster, class_tags=spec.tags
    )
    if len(tags) > TAG_LIMIT:
        raise PermanentError(
            f"GPUNodeClass {node_class.name}: ECS allows {TAG_LIMIT} tags, this needs {len(tags)}"
        )
    system = next((m for m in spec.block_device_mappings if m.device_name in SYSTEM_DEVICE_NAMES), None)
    request: dict[str, Any] = {
        "RegionId": region,
        "ImageId": network.image_id,
        "InstanceType": offering.instance_type,
        "InstanceName": claim.name,
        "Amount": 1,
        "MinAmount": 1,
        "ClientToken": client_token,
        "InternetChargeType": "PayByTraffic",
        "InternetMaxBandwidthOut": _int_param(
            params, "internetMaxBandwidthOut", low=0, high=100, claim=claim.name
        )
        if params.get("internetMaxBandwidthOut")
        else DEFAULT_BANDWIDTH_OUT_MBPS,
        "SystemDisk": _system_disk(params, system, claim.name),
        "Tag": [{"Key": key, "Value": value} for key, value in tags.items()],
    }
    data_disks = [
        _data_disk(mapping, params, index, node_class.name)
        for index, mapping in enumerate(spec.block_device_mappings)
        if mapping is not system
    ]
    if data_disks:
        request["DataDisk"] = data_disks
    if offering.zone:
        request["ZoneId"] = offering.zone
    if network.vswitch_id:
        request["VSwitchId"] = network.vswitch_id
    if len(network.security_group_ids) == 1:
        request["SecurityGroupId"] = network.security_group_ids[0]
    elif network.security_group_ids:
        request["SecurityGroupIds"] = list(network.security_group_ids)
    if key_pair := params.get("keyPairName"):
        request["KeyPairName"] = key_pair
    if spec.instance_profile:
        request["RamRoleName"] = spec.instance_profile
    if spec.user_data:
        text = spec.user_data.replace(USER_DATA_NODE_NAME_PLACEHOLDER, claim.name)
        encoded = base64.b64encode(text.encode("utf-8")).decode("ascii")
        if len(encoded) > USER_DATA_LIMIT:
            raise PermanentError(
                f"GPUNodeClass {node_class.name}: userData is {len(encoded)} bytes base64; ECS allows 32 KB"
            )
        request["UserData"] = encoded
    request.update(_market(offering, params, claim.name))
    return request
