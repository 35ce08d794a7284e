"""`Compute` on Alibaba Cloud ECS: launch, find, describe, delete and list tagged instances.

Role: implements `gpupool.service.ports.Compute` over an `EcsApi` (the SDK in the cloud, the
sandbox's ECS endpoint or an in-memory one in tests). Resolves GPUNodeClass selector terms
(ids as given; names and tags through DescribeImages / DescribeVSwitches /
DescribeSecurityGroups), builds RunInstances with `ecs_request.run_instances_params`, turns
DescribeInstances answers into `ManagedInstance` records, and translates every ECS error
through the one table in `ecs_errors`. Throttling is retried here with bounded exponential
backoff, then surfaces as `Throttled`. A RunInstances answered `IdempotentParameterMismatch`
(the claim's token was used before with other parameters) adopts the claim's tagged
instance when there is one. ECS forgets deleted instances: `describe` leaves them out.

Must not: decide what to launch, check dry-run, build its own client, log credentials, or
touch an instance that lacks the `managed-by=tensor-fusion.ai` and cluster tags.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

from gpupool.adapters.ec2 import RetryPolicy
from gpupool.adapters.ecs_api import EcsApi
from gpupool.adapters.ecs_errors import IDEMPOTENT_MISMATCH, EcsApiError, ErrorKind, classify, translate
from gpupool.adapters.ecs_request import ResolvedEcsNetwork, run_instances_params
from gpupool.core.model.constants import TAG_CLUSTER, TAG_MANAGED_BY, TAG_MANAGED_BY_VALUE, TAG_NODE_NAME
from gpupool.core.model.nodeclaim import GPUNodeClaim
from gpupool.core.model.nodeclass import GPUNodeClass, SelectorTerm
from gpupool.core.plan import OfferingRef
from gpupool.core.snapshot import InstanceLifecycle, ManagedInstance
from gpupool.service.errors import CapacityUnavailable, NotFound, PermanentError

__all__ = ["EcsCompute"]

PAGE_SIZE = 100  # DescribeInstances: at most 100 per page and 100 ids per request
_STATES: dict[str, InstanceLifecycle] = {
    "Pending": "pending",
    "Starting": "pending",
    "Running": "running",
    "Stopping": "stopping",
    "Stopped": "stopped",
}


def _tag_params(tags: Mapping[str, str]) -> list[dict[str, str]]:
    return [{"Key": key, "Value": value} for key, value in tags.items()]


def _items(body: Mapping[str, Any], outer: str, inner: str) -> list[dict[str, Any]]:
    """ECS wraps lists twice: `{"Instances": {"Instance": [...]}}`."""
    wrapper = body.get(outer) or {}
    found = wrapper.get(inner) if isinstance(wrapper, Mapping) else None
    return [item for item in found or [] if isinstance(item, dict)]


def _launch_time(text: object) -> datetime | None:
    if not isinstance(text, str) or not text:
        return None
    try:
        parsed = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return None
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)


def _to_managed(instance: Mapping[str, Any]) -> ManagedInstance:
    tags = {
        str(tag.get("TagKey") or tag.get("Key")): str(tag.get("TagValue") or tag.get("Value") or "")
        for tag in _items(instance, "Tags", "Tag")
    }
    spot = instance.get("SpotStrategy") in ("SpotAsPriceGo", "SpotWithPriceLimit")
    return ManagedInstance(
        instance_id=str(instance["InstanceId"]),
        state=_STATES.get(str(instance.get("Status")), "pending"),
        claim_name=tags.get(TAG_NODE_NAME),
        node_class=tags.get("tensor-fusion.ai/node-class"),
        cluster=tags.get(TAG_CLUSTER),
        instance_type=instance.get("InstanceType"),
        zone=instance.get("ZoneId"),
        capacity_type="Spot" if spot else "OnDemand",
        launch_time=_launch_time(instance.get("CreationTime")),
        tags=tags,
    )


class EcsCompute:
    """ECS instances of one Kubernetes cluster (`cluster` is the value of the cluster tag) in one region."""

    def __init__(
        self,
        api: EcsApi,
        *,
        cluster: str,
        region: str,
        default_params: Mapping[str, str] | None = None,
        retry: RetryPolicy | None = None,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        if not cluster or not region:
            raise ValueError("EcsCompute needs the cluster name (it scopes every tag filter) and the region")
        self._api = api
        self._cluster = cluster
        self._region = region
        self._default_params = dict(default_params or {})
        self._retry = retry or RetryPolicy()
        self._sleep = sleep

    # ---- calls -------------------------------------------------------------------------
    def _call(self, action: str, *, offering: str | None = None, **params: Any) -> dict[str, Any]:
        """One ECS call with RegionId, retrying throttling; errors leave as domain errors."""
        for attempt in range(self._retry.attempts):
            try:
                return self._api.call(action, {"RegionId": self._region, **params})
            except EcsApiError as error:
                last = attempt == self._retry.attempts - 1
                if classify(error.code, error.status) is not ErrorKind.THROTTLED or last:
                    raise translate(error, action=action, offering=offering) from None
            self._sleep(self._retry.delay(attempt))
        raise AssertionError("unreachable: the last attempt returns or raises")

    def _instances(self, **params: Any) -> Iterator[dict[str, Any]]:
        page = 1
        while True:
            body = self._call("DescribeInstances", PageNumber=page, PageSize=PAGE_SIZE, **params)
            found = _items(body, "Instances", "Instance")
            yield from found
            total = int(body.get("TotalCount") or 0)
            if not found or page * PAGE_SIZE >= total:
                return
            page += 1

    def _ours(self) -> dict[str, str]:
        return {TAG_MANAGED_BY: TAG_MANAGED_BY_VALUE, TAG_CLUSTER: self._cluster}

    # ---- Compute -----------------------------------------------------------------------
    def launch(
        self,
        claim: GPUNodeClaim,
        node_class: GPUNodeClass,
        offering: OfferingRef,
        *,
        client_token: str,
    ) -> str:
        network = self._resolve_network(node_class, offering)
        params = run_instances_params(
            claim,
            node_class,
            offering,
            network=network,
            cluster=self._cluster,
            region=self._region,
            client_token=client_token,
            default_params=self._default_params,
        )
        try:
            body = self._call("RunInstances", offering=offering.key, **params)
        except PermanentError as error:
            if error.code != IDEMPOTENT_MISMATCH:
                raise
            # The token launched something before with other parameters: that is this claim's.
            adopted = self.find_by_claim(claim.name)
            if adopted is None:
                raise
            return adopted.instance_id
        ids = (body.get("InstanceIdSets") or {}).get("InstanceIdSet") or []
        if not ids:
            raise PermanentError(f"ECS RunInstances for claim {claim.name} returned no instance")
        return str(ids[0])

    def find_by_claim(self, claim_name: str) -> ManagedInstance | None:
        tags = _tag_params({**self._ours(), TAG_NODE_NAME: claim_name})
        found = [_to_managed(instance) for instance in self._instances(Tag=tags)]
        if not found:
            return None
        return min(found, key=lambda item: (item.launch_time is None, item.launch_time, item.instance_id))

    def describe(self, instance_ids: Sequence[str]) -> list[ManagedInstance]:
        found: list[ManagedInstance] = []
        unique = list(dict.fromkeys(instance_ids))
        for start in range(0, len(unique), PAGE_SIZE):
            chunk = json.dumps(unique[start : start + PAGE_SIZE])
            found += [
                _to_managed(instance)
                for instance in self._instances(InstanceIds=chunk, Tag=_tag_params(self._ours()))
            ]
        return found

    def terminate(self, instance_id: str) -> None:
        found = list(self._instances(InstanceIds=json.dumps([instance_id])))
        if not found:
            return  # deleted already: ECS no longer reports it
        instance = _to_managed(found[0])
        ours = instance.tags.get(TAG_MANAGED_BY) == TAG_MANAGED_BY_VALUE
        if not ours or instance.cluster != self._cluster:
            raise PermanentError(
                f"refusing to delete {instance_id}: it is not tagged "
                f"{TAG_MANAGED_BY}={TAG_MANAGED_BY_VALUE} and {TAG_CLUSTER}={self._cluster}"
            )
        try:
            self._call("DeleteInstances", InstanceId=[instance_id], Force=True)
        except NotFound:
            return

    def list_managed(self) -> list[ManagedInstance]:
        return [_to_managed(instance) for instance in self._instances(Tag=_tag_params(self._ours()))]

    # ---- selector terms ----------------------------------------------------------------
    def _resolve_network(self, node_class: GPUNodeClass, offering: OfferingRef) -> ResolvedEcsNetwork:
        spec = node_class.spec
        return ResolvedEcsNetwork(
            image_id=self._resolve_image(node_class.name, spec.os_image_selector_terms),
            vswitch_id=self._resolve_vswitch(node_class.name, spec.subnet_selector_terms, offering),
            security_group_ids=self._resolve_security_groups(spec.security_group_selector_terms),
        )

    def _resolve_image(self, class_name: str, terms: Sequence[SelectorTerm]) -> str:
        for term in terms:
            if term.id:
                return term.id
        images: list[dict[str, Any]] = []
        for term in terms:
            params: dict[str, Any] = {"Status": "Available", "PageSize": PAGE_SIZE}
            if term.tags:
                params["Tag"] = _tag_params(term.tags)
            if term.name:
                params["ImageName"] = term.name
            if term.owner:
                params["ImageOwnerAlias"] = term.owner
            images += _items(self._call("DescribeImages", **params), "Images", "Image")
        if not images:
            raise PermanentError(f"GPUNodeClass {class_name}: no image matches osImageSelectorTerms")
        newest = max(images, key=lambda image: (str(image.get("CreationTime") or ""), str(image["ImageId"])))
        return str(newest["ImageId"])

    def _class_vswitches(self, class_name: str, terms: Sequence[SelectorTerm]) -> list[dict[str, Any]]:
        """The vSwitches a node class's subnet selector terms name, by id or by name.

        ECS's DescribeVSwitches filters by id only (no tags): a name is matched over the
        region's vSwitches, and a term with tags alone is refused with a clear message.
        """
        found: list[dict[str, Any]] = []
        by_name: list[dict[str, Any]] | None = None
        for term in terms:
            if term.id:
                found += _items(
                    self._call("DescribeVSwitches", VSwitchId=term.id, PageSize=50), "VSwitches", "VSwitch"
                )
            elif term.name:
                by_name = by_name if by_name is not None else self._all_vswitches()
                found += [v for v in by_name if v.get("VSwitchName") == term.name]
            else:
                raise PermanentError(
                    f"GPUNodeClass {class_name}: on Alibaba Cloud subnetSelectorTerms select vSwitches "
                    "by id or name (ECS DescribeVSwitches cannot filter by tags)"
                )
        return list({str(v["VSwitchId"]): v for v in found}.values())

    def _all_vswitches(self) -> list[dict[str, Any]]:
        found: list[dict[str, Any]] = []
        page = 1
        while True:
            body = self._call("DescribeVSwitches", PageNumber=page, PageSize=50)
            items = _items(body, "VSwitches", "VSwitch")
            found += items
            if not items or page * 50 >= int(body.get("TotalCount") or 0):
                return found
            page += 1

    def _resolve_vswitch(
        self, class_name: str, terms: Sequence[SelectorTerm], offering: OfferingRef
    ) -> str | None:
        if not terms:
            return None  # ECS then needs a classic network or a default vSwitch in the zone
        vswitches = self._class_vswitches(class_name, terms)
        if offering.zone is not None:
            vswitches = [v for v in vswitches if v.get("ZoneId") == offering.zone]
        if not vswitches:
            raise CapacityUnavailable(
                f"GPUNodeClass {class_name} has no vSwitch in zone {offering.zone} ({offering.key})",
                code="NoVSwitchInZone",
            )
        best = max(vswitches, key=lambda v: (int(v.get("AvailableIpAddressCount") or 0), str(v["VSwitchId"])))
        return str(best["VSwitchId"])

    def launchable_zones(self, node_class: GPUNodeClass) -> frozenset[str] | None:
        terms = node_class.spec.subnet_selector_terms
        if not terms:
            return None
        return frozenset(
            str(v["ZoneId"]) for v in self._class_vswitches(node_class.name, terms) if v.get("ZoneId")
        )

    def _resolve_security_groups(self, terms: Sequence[SelectorTerm]) -> tuple[str, ...]:
        ids = [term.id for term in terms if term.id]
        for term in terms:
            if term.id or not (term.name or term.tags):
                continue
            params: dict[str, Any] = {"PageSize": 50}
            if term.name:
                params["SecurityGroupName"] = term.name
            if term.tags:
                params["Tag"] = _tag_params(term.tags)
            groups = _items(self._call("DescribeSecurityGroups", **params), "SecurityGroups", "SecurityGroup")
            ids += [str(group["SecurityGroupId"]) for group in groups]
        return tuple(dict.fromkeys(ids))
