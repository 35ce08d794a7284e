"""`Compute` on Alibaba Cloud ECS: launch, find, describe, delete and list tagged instances.

Role: implements `gpupool.service.ports.Compute` over an `EcsApi` (the SDK in the cloud, the
sandbox's ECS endpoint or an in-memory one in tests). Resolves GPUNodeClass selector terms
through `alibaba.selector_terms`, builds RunInstances with `alibaba.request.run_instances_params`, turns
DescribeInstances answers into `ManagedInstance` records, and translates every ECS error
through the one table in `alibaba.errors`. Throttling is retried here with bounded exponential
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

from gpupool.adapters.alibaba.api import EcsApi
from gpupool.adapters.alibaba.errors import IDEMPOTENT_MISMATCH, EcsApiError, classify, translate
from gpupool.adapters.alibaba.request import run_instances_params
from gpupool.adapters.alibaba.selector_terms import EcsSelectors, items, tag_params
from gpupool.adapters.cloud import ErrorKind, RetryPolicy
from gpupool.core.model.capacity_type import spellings
from gpupool.core.model.constants import TAG_CLUSTER, TAG_MANAGED_BY, TAG_MANAGED_BY_VALUE, TAG_NODE_NAME
from gpupool.core.model.instance import InstanceLifecycle, LaunchTemplate, ManagedInstance
from gpupool.core.model.nodeclaim import GPUNodeClaim
from gpupool.core.model.nodeclass import GPUNodeClass
from gpupool.core.planning.plan import OfferingRef
from gpupool.service.errors import NotFound, PermanentError

__all__ = ["EcsCompute"]

PAGE_SIZE = 100  # DescribeInstances: at most 100 per page and 100 ids per request
_STATES: dict[str, InstanceLifecycle] = {
    "Pending": "pending",
    "Starting": "pending",
    "Running": "running",
    "Stopping": "stopping",
    "Stopped": "stopped",
}


def _launch_time(text: object) -> datetime | None:
    if not isinstance(text, str) or not text:
        return None
    try:
        parsed = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return None
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)


def _node_class(template: LaunchTemplate) -> GPUNodeClass:
    """The GPUNodeClass to launch from; PermanentError for another mode's template."""
    if not isinstance(template, GPUNodeClass):
        raise PermanentError("ECS launches from a GPUNodeClass, not a Karpenter NodeClaim template")
    return template


def _to_managed(instance: Mapping[str, Any]) -> ManagedInstance:
    tags = {
        str(tag.get("TagKey") or tag.get("Key")): str(tag.get("TagValue") or tag.get("Value") or "")
        for tag in items(instance, "Tags", "Tag")
    }
    spot = instance.get("SpotStrategy") in spellings("Spot").ecs
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

    vendor = "alibaba"
    connection_call = "DescribeRegions"

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
        self._selectors = EcsSelectors(self._call)

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
            found = items(body, "Instances", "Instance")
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
        template: LaunchTemplate,
        offering: OfferingRef,
        *,
        client_token: str,
    ) -> str:
        node_class = _node_class(template)
        network = self._selectors.resolve_network(node_class, offering)
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
            adopted = self.find_by_claim(claim)
            if adopted is None:
                raise
            return adopted.instance_id
        ids = (body.get("InstanceIdSets") or {}).get("InstanceIdSet") or []
        if not ids:
            raise PermanentError(f"ECS RunInstances for claim {claim.name} returned no instance")
        return str(ids[0])

    def find_by_claim(self, claim: GPUNodeClaim) -> ManagedInstance | None:
        tags = tag_params({**self._ours(), TAG_NODE_NAME: claim.name})
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
                for instance in self._instances(InstanceIds=chunk, Tag=tag_params(self._ours()))
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

    def check_connection(self) -> None:
        """DescribeRegions: the credentials reach ECS, and the configured region is one it serves
        (TensorFusion's check; the cluster's CloudVendorConnection condition shows the message)."""
        regions = sorted(
            str(r.get("RegionId")) for r in items(self._call("DescribeRegions"), "Regions", "Region")
        )
        if self._region not in regions:
            served = ", ".join(regions) or "none"
            raise PermanentError(
                f"ECS does not serve region {self._region!r} to these credentials ({served})"
            )

    def list_managed(self) -> list[ManagedInstance]:
        return [_to_managed(instance) for instance in self._instances(Tag=tag_params(self._ours()))]

    def launchable_zones(self, template: LaunchTemplate) -> frozenset[str] | None:
        return self._selectors.launchable_zones(_node_class(template))
