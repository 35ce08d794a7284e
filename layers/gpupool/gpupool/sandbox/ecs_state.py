"""A stateful fake of one ECS region: instances with a lifecycle, ClientToken idempotency, tags,
and injectable faults — served over HTTP by `ecs_server`, or called in memory by tests.

Role: `EcsState.call(action, params)` answers RunInstances, DescribeInstances, DeleteInstances,
DescribeUserData and the network Describe actions (`ecs_network`) with ECS's response shapes, or
raises `EcsFault` with ECS's codes. Instances go Pending → Starting → Running on the clock it is
given (`pending_for`, `starting_for`); `stop` makes one Stopped; a deleted instance is gone from
every answer, as on ECS. A ClientToken seen before with the same parameters answers the same
instance ids; with other parameters, `IdempotentParameterMismatch` (ECS API reference,
"How to ensure idempotence"). `no_stock(...)` refuses RunInstances for types (and zones) with
`OperationDenied.NoStock`; `inject(action, code, times)` fails the next calls of an action.

Must not: be imported by code that runs in the cloud, or sleep.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import itertools
import json
import threading
from collections import defaultdict, deque
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from gpupool.sandbox.ecs_network import EcsFault, EcsNetwork, as_list, json_list, matches_tags, tag_filter

__all__ = ["EcsFault", "EcsInstance", "EcsState"]

_SPOT_STRATEGIES = ("NoSpot", "SpotAsPriceGo", "SpotWithPriceLimit")
_FAULT_STATUS = {"Throttling": 400, "Throttling.User": 400, "ServiceUnavailable": 503, "InternalError": 500}


def _flag(value: object) -> bool:
    return value is True or str(value).lower() == "true"


def _utc_now() -> datetime:
    return datetime.now(UTC)


@dataclass
class EcsInstance:
    instance_id: str
    params: dict[str, Any]
    tags: dict[str, str]
    zone: str
    created: datetime
    stopped: bool = False
    user_data: str = ""

    def status(self, now: datetime, pending_for: timedelta, starting_for: timedelta) -> str:
        if self.stopped:
            return "Stopped"
        if now < self.created + pending_for:
            return "Pending"
        return "Starting" if now < self.created + pending_for + starting_for else "Running"


@dataclass
class EcsState:
    """One ECS region; thread-safe (one lock)."""

    network: EcsNetwork = field(default_factory=EcsNetwork)
    now: Callable[[], datetime] = _utc_now
    pending_for: timedelta = timedelta(seconds=1)
    starting_for: timedelta = timedelta(seconds=2)
    instances: dict[str, EcsInstance] = field(default_factory=dict)
    deleted: dict[str, EcsInstance] = field(default_factory=dict)  # gone from the API; kept for simulations
    calls: list[tuple[str, dict[str, Any]]] = field(default_factory=list)

    def __post_init__(self) -> None:
        self._lock = threading.RLock()
        self._tokens: dict[str, tuple[str, list[str]]] = {}
        self._counter = itertools.count(1)
        self._faults: dict[str, deque[str]] = defaultdict(deque)
        self._no_stock: list[tuple[frozenset[str], frozenset[str] | None]] = []

    @property
    def region(self) -> str:
        return self.network.region

    # ---- test controls ----------------------------------------------------------------------
    def no_stock(self, instance_types: set[str] | frozenset[str], zones: set[str] | None = None) -> None:
        """RunInstances of these types (in these zones, or any) answers OperationDenied.NoStock."""
        with self._lock:
            self._no_stock.append((frozenset(instance_types), frozenset(zones) if zones else None))

    def inject(self, action: str, code: str = "Throttling.User", times: int = 1) -> None:
        """The next `times` calls of `action` fail with `code` and change nothing."""
        with self._lock:
            self._faults[action].extend([code] * times)

    def stop(self, instance_id: str) -> None:
        with self._lock:
            self._instance(instance_id).stopped = True

    def live(self) -> list[EcsInstance]:
        with self._lock:
            return list(self.instances.values())

    def count(self, action: str) -> int:
        with self._lock:
            return sum(1 for name, _ in self.calls if name == action)

    # ---- the API ----------------------------------------------------------------------------
    def call(self, action: str, params: Mapping[str, Any]) -> dict[str, Any]:
        handlers: dict[str, Callable[[Mapping[str, Any]], dict[str, Any]]] = {
            "RunInstances": self._run,
            "DescribeInstances": self._describe,
            "DeleteInstances": self._delete,
            "DescribeUserData": self._user_data,
            "DescribeVSwitches": self.network.describe_vswitches,
            "DescribeSecurityGroups": self.network.describe_security_groups,
            "DescribeImages": self.network.describe_images,
            "DescribeRegions": self.network.describe_regions,
        }
        with self._lock:
            self.calls.append((action, dict(params)))
            handler = handlers.get(action)
            if handler is None:
                raise EcsFault("InvalidAction.NotFound", f"the sandbox ECS does not implement {action}", 404)
            if self._faults[action]:
                code = self._faults[action].popleft()
                raise EcsFault(code, f"injected {code}", _FAULT_STATUS.get(code, 400))
            if action != "DescribeRegions":
                self._check_region(params)
            body = handler(params)
            body["RequestId"] = hashlib.md5(f"{action}{len(self.calls)}".encode()).hexdigest().upper()
            return body

    def _check_region(self, params: Mapping[str, Any]) -> None:
        region = params.get("RegionId")
        if not region:
            raise EcsFault("MissingRegionId", "RegionId is mandatory for this action")
        if region != self.region:
            raise EcsFault(
                "InvalidRegionId.NotFound", f"the sandbox ECS serves {self.region}, not {region}", 404
            )

    def _instance(self, instance_id: str) -> EcsInstance:
        if instance_id not in self.instances:
            raise EcsFault("InvalidInstanceId.NotFound", f"the instance {instance_id} does not exist", 404)
        return self.instances[instance_id]

    def _run(self, params: Mapping[str, Any]) -> dict[str, Any]:
        for required in ("ImageId", "InstanceType"):
            if not params.get(required):
                raise EcsFault("MissingParameter", f"{required} is mandatory for RunInstances")
        digest = json.dumps(
            {k: v for k, v in params.items() if k != "ClientToken"}, sort_keys=True, default=str
        )
        token = str(params.get("ClientToken") or "")
        if token and token in self._tokens:
            seen_digest, ids = self._tokens[token]
            if seen_digest != digest:
                raise EcsFault(
                    "IdempotentParameterMismatch", "the ClientToken was used with other parameters"
                )
            return {"InstanceIdSets": {"InstanceIdSet": list(ids)}}
        amount = int(str(params.get("Amount") or 1))
        if not 1 <= amount <= 100:
            raise EcsFault("InvalidParameter.Amount", "Amount must be 1–100")
        zone = self._zone(params)
        self.network.check_image(str(params["ImageId"]))
        for group in [params.get("SecurityGroupId"), *as_list(params.get("SecurityGroupIds"))]:
            if group:
                self.network.check_security_group(str(group))
        tags = tag_filter(params)
        spot = str(params.get("SpotStrategy") or "NoSpot")
        if spot not in _SPOT_STRATEGIES:
            raise EcsFault(
                "InvalidSpotStrategy", f"SpotStrategy {spot} is not one of {', '.join(_SPOT_STRATEGIES)}"
            )
        if spot == "SpotWithPriceLimit" and not params.get("SpotPriceLimit"):
            raise EcsFault("InvalidSpotPriceLimit.Missing", "SpotWithPriceLimit needs SpotPriceLimit")
        user_data = str(params.get("UserData") or "")
        try:
            base64.b64decode(user_data, validate=True)
        except binascii.Error:
            raise EcsFault("InvalidUserData.Base64FormatInvalid", "UserData must be base64") from None
        for types, zones in self._no_stock:
            if params["InstanceType"] in types and (zones is None or zone in zones):
                raise EcsFault(
                    "OperationDenied.NoStock",
                    f"{params['InstanceType']} is out of stock in {zone}; try another zone or type",
                    403,
                )
        ids = [self._launch(params, tags, zone, user_data) for _ in range(amount)]
        if token:
            self._tokens[token] = (digest, ids)
        return {"InstanceIdSets": {"InstanceIdSet": ids}, "OrderId": str(next(self._counter))}

    def _zone(self, params: Mapping[str, Any]) -> str:
        zone = str(params.get("ZoneId") or "")
        if params.get("VSwitchId"):
            vswitch_zone = str(self.network.vswitch(str(params["VSwitchId"]))["ZoneId"])
            if zone and zone != vswitch_zone:
                raise EcsFault("InvalidParameter.Mismatch", f"ZoneId {zone} is not the zone of the vSwitch")
            zone = vswitch_zone
        if not zone:
            zone = self.network.zones[0]
        if zone not in self.network.zones:
            raise EcsFault("InvalidZoneId.NotFound", f"the zone {zone} does not exist", 404)
        return zone

    def _launch(self, params: Mapping[str, Any], tags: dict[str, str], zone: str, user_data: str) -> str:
        number = next(self._counter)
        instance_id = "i-bp1" + hashlib.sha1(f"{self.region}/{number}".encode()).hexdigest()[:17]
        self.instances[instance_id] = EcsInstance(
            instance_id, dict(params), tags, zone, self.now(), user_data=user_data
        )
        return instance_id

    def _public(self, instance: EcsInstance) -> dict[str, Any]:
        params = instance.params
        groups = [params.get("SecurityGroupId"), *as_list(params.get("SecurityGroupIds"))]
        return {
            "InstanceId": instance.instance_id,
            "InstanceName": params.get("InstanceName") or instance.instance_id,
            "InstanceType": params["InstanceType"],
            "ImageId": params["ImageId"],
            "RegionId": self.region,
            "ZoneId": instance.zone,
            "Status": instance.status(self.now(), self.pending_for, self.starting_for),
            "CreationTime": instance.created.strftime("%Y-%m-%dT%H:%MZ"),
            "InstanceChargeType": params.get("InstanceChargeType") or "PostPaid",
            "SpotStrategy": params.get("SpotStrategy") or "NoSpot",
            "InternetChargeType": params.get("InternetChargeType") or "PayByTraffic",
            "InternetMaxBandwidthOut": int(str(params.get("InternetMaxBandwidthOut") or 0)),
            "KeyPairName": params.get("KeyPairName") or "",
            "SecurityGroupIds": {"SecurityGroupId": [str(g) for g in groups if g]},
            "VpcAttributes": {"VpcId": self.network.vpc_id, "VSwitchId": params.get("VSwitchId") or ""},
            "Tags": {"Tag": [{"TagKey": key, "TagValue": value} for key, value in instance.tags.items()]},
        }

    def _describe(self, params: Mapping[str, Any]) -> dict[str, Any]:
        ids = json_list("InstanceIds", params.get("InstanceIds"))
        if len(ids) > 100:
            raise EcsFault("InvalidInstanceIds.ValueNotSupported", "at most 100 InstanceIds")
        wanted = tag_filter(params)
        found = [
            self._public(instance)
            for instance in self.instances.values()
            if (not ids or instance.instance_id in ids) and matches_tags(instance.tags, wanted)
        ]
        for key in ("ZoneId", "Status", "InstanceType"):
            if params.get(key):
                found = [item for item in found if item[key] == params[key]]
        size = max(1, min(int(str(params.get("PageSize") or 10)), 100))
        number = max(1, int(str(params.get("PageNumber") or 1)))
        return {
            "Instances": {"Instance": found[(number - 1) * size : number * size]},
            "TotalCount": len(found),
            "PageNumber": number,
            "PageSize": size,
        }

    def _delete(self, params: Mapping[str, Any]) -> dict[str, Any]:
        ids = [str(item) for item in as_list(params.get("InstanceId"))]
        if not ids:
            raise EcsFault("MissingParameter", "InstanceId.N is mandatory for DeleteInstances")
        instances = [self._instance(instance_id) for instance_id in ids]
        now = self.now()
        for instance in instances:
            status = instance.status(now, self.pending_for, self.starting_for)
            if status != "Stopped" and not _flag(params.get("Force")):
                raise EcsFault(
                    "IncorrectInstanceStatus",
                    f"{instance.instance_id} is {status}; stop it or pass Force",
                    403,
                )
        for instance in instances:
            self.deleted[instance.instance_id] = self.instances.pop(instance.instance_id)
        return {}

    def _user_data(self, params: Mapping[str, Any]) -> dict[str, Any]:
        instance = self._instance(str(params.get("InstanceId") or ""))
        return {"InstanceId": instance.instance_id, "RegionId": self.region, "UserData": instance.user_data}
