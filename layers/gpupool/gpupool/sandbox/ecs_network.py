"""The sandbox ECS account's fixed world: a region, its zones, a VPC with one vSwitch per zone, a
security group and GPU images — and the read-only Describe actions over them.

Role: `EcsFault` (an ECS error: code, message, HTTP status) and `EcsNetwork` (pre-seeded per
zone, answering DescribeVSwitches / DescribeSecurityGroups / DescribeImages / DescribeRegions
with ECS's own response shapes), plus the small parameter readers the instance actions share
(`tag_filter`, `as_list`, `json_list`). Parameters arrive either structured (in-memory
callers) or as the wire's strings, unflattened by `ecs_wire`; both read the same.

Must not: be imported by code that runs in the cloud, touch instances, or read the clock.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

__all__ = ["DEFAULT_REGION", "EcsFault", "EcsNetwork", "as_list", "json_list", "matches_tags", "tag_filter"]

DEFAULT_REGION = "cn-hangzhou"
# Zones of the sandbox region; cn-hangzhou's GPU zones as the ECS console lists them.
DEFAULT_ZONES = ("cn-hangzhou-h", "cn-hangzhou-i", "cn-hangzhou-j", "cn-hangzhou-k")


class EcsFault(Exception):
    """An ECS API error as the service answers it: `{"Code", "Message"}` with an HTTP status."""

    def __init__(self, code: str, message: str, status: int = 400) -> None:
        super().__init__(f"{code}: {message}")
        self.code = code
        self.message = message
        self.status = status


def as_list(value: object) -> list[Any]:
    """A repeated parameter (`X.1`, `X.2` unflattened, or a list given in memory) as a list."""
    if value is None:
        return []
    if isinstance(value, list | tuple):
        return list(value)
    return [value]


def json_list(name: str, value: object) -> list[str]:
    """A parameter ECS takes as a JSON array string (e.g. `InstanceIds`)."""
    if value is None or value == "":
        return []
    if isinstance(value, list):
        return [str(item) for item in value]
    try:
        parsed = json.loads(str(value))
    except json.JSONDecodeError:
        raise EcsFault(f"Invalid{name}.Malformed", f"{name} must be a JSON array of strings") from None
    if not isinstance(parsed, list) or not all(isinstance(item, str) for item in parsed):
        raise EcsFault(f"Invalid{name}.Malformed", f"{name} must be a JSON array of strings")
    return parsed


def tag_filter(params: Mapping[str, Any]) -> dict[str, str]:
    """`Tag.N.Key` / `Tag.N.Value` pairs (at most 20) as a dict."""
    tags = as_list(params.get("Tag"))
    if len(tags) > 20:
        raise EcsFault("InvalidTagCount", "at most 20 tags may be given")
    result: dict[str, str] = {}
    for tag in tags:
        if not isinstance(tag, Mapping) or not tag.get("Key"):
            raise EcsFault("InvalidTagKey.Malformed", "every Tag.N needs a Key")
        result[str(tag["Key"])] = str(tag.get("Value") or "")
    return result


def matches_tags(have: Mapping[str, str], want: Mapping[str, str]) -> bool:
    return all(have.get(key) == value for key, value in want.items())


def _tags_out(tags: Mapping[str, str]) -> dict[str, Any]:
    return {
        "Tag": [{"Key": key, "Value": value, "TagKey": key, "TagValue": value} for key, value in tags.items()]
    }


@dataclass
class EcsNetwork:
    """One region's VPC, vSwitches (one per zone), security group and images."""

    region: str = DEFAULT_REGION
    zones: tuple[str, ...] = DEFAULT_ZONES
    vpc_id: str = "vpc-sandbox0000000001"
    vswitches: dict[str, dict[str, Any]] = field(default_factory=dict)
    security_groups: dict[str, dict[str, Any]] = field(default_factory=dict)
    images: dict[str, dict[str, Any]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        for index, zone in enumerate(self.zones):
            vswitch_id = f"vsw-sandbox{zone.rsplit('-', 1)[-1]}{index:09d}"
            self.vswitches.setdefault(
                vswitch_id,
                {
                    "VSwitchId": vswitch_id,
                    "VSwitchName": f"gpu-nodes-{zone}",
                    "ZoneId": zone,
                    "VpcId": self.vpc_id,
                    "CidrBlock": f"10.30.{index}.0/24",
                    "AvailableIpAddressCount": 250 - index,
                    "Status": "Available",
                    "tags": {},
                },
            )
        self.security_groups.setdefault(
            "sg-sandbox0000000001",
            {
                "SecurityGroupId": "sg-sandbox0000000001",
                "SecurityGroupName": "gpu-nodes",
                "VpcId": self.vpc_id,
                "tags": {"tensor-fusion.ai/security-group": "gpu-nodes"},
            },
        )
        for image_id, name, created in (
            ("m-sandboxgpu2204a0001", "ubuntu_22_04_x64_gpu_20251001", "2025-10-01T00:00:00Z"),
            ("m-sandboxgpu2204b0002", "ubuntu_22_04_x64_gpu_20251101", "2025-11-01T00:00:00Z"),
        ):
            self.images.setdefault(
                image_id,
                {
                    "ImageId": image_id,
                    "ImageName": name,
                    "ImageOwnerAlias": "system",
                    "Status": "Available",
                    "CreationTime": created,
                    "OSType": "linux",
                    "Architecture": "x86_64",
                    "tags": {"tensor-fusion.ai/image": "gpu"},
                },
            )

    # ---- lookups the instance actions use ------------------------------------------------
    def vswitch(self, vswitch_id: str) -> dict[str, Any]:
        if vswitch_id not in self.vswitches:
            raise EcsFault("InvalidVSwitchId.NotFound", f"the vSwitch {vswitch_id} does not exist", 404)
        return self.vswitches[vswitch_id]

    def check_security_group(self, group_id: str) -> None:
        if group_id not in self.security_groups:
            raise EcsFault(
                "InvalidSecurityGroupId.NotFound", f"the security group {group_id} does not exist", 404
            )

    def check_image(self, image_id: str) -> None:
        if image_id not in self.images:
            raise EcsFault("InvalidImageId.NotFound", f"the image {image_id} does not exist", 404)

    # ---- Describe actions -----------------------------------------------------------------
    @staticmethod
    def _public(item: Mapping[str, Any]) -> dict[str, Any]:
        result = {key: value for key, value in item.items() if key != "tags"}
        result["Tags"] = _tags_out(item.get("tags") or {})
        return result

    def _page(
        self, outer: str, inner: str, items: list[dict[str, Any]], params: Mapping[str, Any]
    ) -> dict[str, Any]:
        size = max(1, min(int(str(params.get("PageSize") or 10)), 100))
        number = max(1, int(str(params.get("PageNumber") or 1)))
        chosen = items[(number - 1) * size : number * size]
        return {
            outer: {inner: [self._public(item) for item in chosen]},
            "TotalCount": len(items),
            "PageNumber": number,
            "PageSize": size,
        }

    def describe_vswitches(self, params: Mapping[str, Any]) -> dict[str, Any]:
        found = [  # ECS's DescribeVSwitches has no tag filter
            item
            for item in self.vswitches.values()
            if params.get("VSwitchId") in (None, "", item["VSwitchId"])
            and params.get("ZoneId") in (None, "", item["ZoneId"])
            and params.get("VpcId") in (None, "", item["VpcId"])
        ]
        return self._page("VSwitches", "VSwitch", found, params)

    def describe_security_groups(self, params: Mapping[str, Any]) -> dict[str, Any]:
        wanted = tag_filter(params)
        ids = json_list("SecurityGroupIds", params.get("SecurityGroupIds"))
        found = [
            item
            for item in self.security_groups.values()
            if (not ids or item["SecurityGroupId"] in ids)
            and params.get("SecurityGroupName") in (None, "", item["SecurityGroupName"])
            and matches_tags(item["tags"], wanted)
        ]
        return self._page("SecurityGroups", "SecurityGroup", found, params)

    def describe_images(self, params: Mapping[str, Any]) -> dict[str, Any]:
        wanted = tag_filter(params)
        ids = [part for part in str(params.get("ImageId") or "").split(",") if part]
        found = [
            item
            for item in self.images.values()
            if (not ids or item["ImageId"] in ids)
            and params.get("ImageName") in (None, "", item["ImageName"])
            and params.get("ImageOwnerAlias") in (None, "", item["ImageOwnerAlias"])
            and params.get("Status") in (None, "", item["Status"])
            and matches_tags(item["tags"], wanted)
        ]
        return self._page("Images", "Image", found, params)

    def describe_regions(self, _params: Mapping[str, Any]) -> dict[str, Any]:
        region = {
            "RegionId": self.region,
            "LocalName": self.region,
            "RegionEndpoint": f"ecs.{self.region}.aliyuncs.com",
        }
        return {"Regions": {"Region": [region]}}
