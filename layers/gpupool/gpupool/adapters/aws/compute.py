"""`Compute` on AWS EC2 with boto3: launch, find, describe, terminate and list tagged instances.

Role: implements `gpupool.service.ports.Compute`. Resolves GPUNodeClass selector terms (ids
as given; tags and names through Describe* calls), builds RunInstances with
`aws.request.run_instances_request`, turns reservations into `ManagedInstance` records, and
translates every EC2 error through the one table in `aws.errors`. Throttling is retried here
with bounded exponential backoff (the wiring turns botocore's own retries off so there is one
policy), then surfaces as `Throttled`.

Must not: decide what to launch, check dry-run, build its own client (the wiring passes one
in), or touch an instance that lacks the `managed-by=tensor-fusion.ai` and cluster tags.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Sequence
from typing import Any

from botocore.exceptions import BotoCoreError, ClientError, ParamValidationError

from gpupool.adapters.aws.errors import classify, error_code, translate
from gpupool.adapters.aws.request import ResolvedNetwork, run_instances_request
from gpupool.adapters.cloud import ErrorKind, RetryPolicy
from gpupool.core.model.constants import (
    TAG_CLUSTER,
    TAG_MANAGED_BY,
    TAG_MANAGED_BY_VALUE,
    TAG_NODE_CLASS,
    TAG_NODE_NAME,
)
from gpupool.core.model.instance import LaunchTemplate, ManagedInstance
from gpupool.core.model.nodeclaim import GPUNodeClaim
from gpupool.core.model.nodeclass import GPUNodeClass, SelectorTerm
from gpupool.core.planning.plan import OfferingRef
from gpupool.service.errors import CapacityUnavailable, NotFound, PermanentError, Throttled

__all__ = ["Ec2Compute", "RetryPolicy"]

LIVE_STATES = ("pending", "running", "stopping", "stopped")
FILTER_VALUES_LIMIT = 100
# How long a node class's DescribeSubnets answer is reused: the launches of one invocation (a
# zone check, then one subnet choice per instance) read the subnets once, and so does a warm
# invocation soon after. Meanwhile the free IPs of a subnet are its answer's less one per
# instance launched into it since (`Ec2Compute._launched_into`), so the choice spreads as a fresh
# read would. Karpenter's subnet provider likewise caches
# DescribeSubnets and deducts its in-flight launches' IPs (karpenter-provider-aws,
# pkg/providers/subnet); it deducts the instance type's pods, as the VPC CNI gives each pod an
# IP, where gpupool deducts the one IP an instance surely takes.
SUBNETS_FRESH_FOR_S = 30.0


def _tag_filters(tags: dict[str, str]) -> list[dict[str, Any]]:
    return [{"Name": f"tag:{key}", "Values": [value]} for key, value in tags.items()]


def _node_class(template: LaunchTemplate) -> GPUNodeClass:
    """The GPUNodeClass to launch from; PermanentError for another mode's template."""
    if not isinstance(template, GPUNodeClass):
        raise PermanentError("EC2 launches from a GPUNodeClass, not a Karpenter NodeClaim template")
    return template


def _capacity_type(instance: dict[str, Any]) -> str:
    if instance.get("InstanceLifecycle") == "spot":
        return "Spot"
    if instance.get("CapacityReservationId"):
        return "Reserved"
    return "OnDemand"


def _to_managed(instance: dict[str, Any]) -> ManagedInstance:
    tags = {tag["Key"]: tag["Value"] for tag in instance.get("Tags") or []}
    return ManagedInstance(
        instance_id=instance["InstanceId"],
        state=instance["State"]["Name"],
        claim_name=tags.get(TAG_NODE_NAME),
        node_class=tags.get(TAG_NODE_CLASS),
        cluster=tags.get(TAG_CLUSTER),
        instance_type=instance.get("InstanceType"),
        zone=(instance.get("Placement") or {}).get("AvailabilityZone"),
        capacity_type=_capacity_type(instance),
        launch_time=instance.get("LaunchTime"),
        tags=tags,
        client_token=instance.get("ClientToken") or None,
    )


class Ec2Compute:
    """EC2 instances for one Kubernetes cluster (`cluster` is the value of the cluster tag)."""

    vendor = "aws"
    connection_call = "DescribeInstances"  # with DryRun

    def __init__(
        self,
        client: Any,
        *,
        cluster: str,
        retry: RetryPolicy | None = None,
        sleep: Callable[[float], None] = time.sleep,
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        if not cluster:
            raise ValueError("Ec2Compute needs the cluster name (it scopes every tag filter)")
        self._client = client
        self._cluster = cluster
        self._retry = retry or RetryPolicy()
        self._sleep = sleep
        self._monotonic = monotonic
        # Subnet selector terms → (when read, the subnets they select); see SUBNETS_FRESH_FOR_S.
        self._subnets_read: dict[tuple[object, ...], tuple[float, list[dict[str, Any]]]] = {}
        # Subnet id → instances launched into it since its DescribeSubnets answer.
        self._launched_into: dict[str, int] = {}

    # ---- calls -------------------------------------------------------------------------
    def _call(self, operation: str, *, offering: str | None = None, **kwargs: Any) -> dict[str, Any]:
        """Call `client.<operation>(**kwargs)`, retrying throttling; errors leave as domain errors."""
        method = getattr(self._client, operation)
        for attempt in range(self._retry.attempts):
            last = attempt == self._retry.attempts - 1
            try:
                response: dict[str, Any] = method(**kwargs)
                return response
            except ClientError as error:
                kind = classify(error_code(error), _status(error))
                if kind is not ErrorKind.THROTTLED or last:
                    raise translate(error, operation=operation, offering=offering) from error
            except ParamValidationError as error:  # the request itself is malformed: never retry
                raise PermanentError(f"EC2 {operation} request is invalid: {error}") from error
            except BotoCoreError as error:  # connection errors and timeouts: transient
                if last:
                    raise Throttled(f"EC2 {operation} failed: {error}") from error
            self._sleep(self._retry.delay(attempt))
        raise AssertionError("unreachable: the last attempt returns or raises")

    def _instances(self, **kwargs: Any) -> Iterator[dict[str, Any]]:
        token: str | None = None
        while True:
            page = self._call("describe_instances", **kwargs, **({"NextToken": token} if token else {}))
            for reservation in page.get("Reservations") or []:
                yield from reservation.get("Instances") or []
            token = page.get("NextToken")
            if not token:
                return

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
        network = self._resolve_network(node_class, offering)
        request = run_instances_request(
            claim, node_class, offering, network=network, cluster=self._cluster, client_token=client_token
        )
        response = self._call("run_instances", offering=offering.key, **request)
        instances = response.get("Instances") or []
        if not instances:
            raise PermanentError(f"EC2 RunInstances for claim {claim.name} returned no instance")
        if network.subnet_id is not None:
            self._launched_into[network.subnet_id] = self._launched_into.get(network.subnet_id, 0) + 1
        instance_id: str = instances[0]["InstanceId"]
        return instance_id

    def find_by_claim(self, claim: GPUNodeClaim) -> ManagedInstance | None:
        filters = [
            *_tag_filters({**self._ours(), TAG_NODE_NAME: claim.name}),
            {"Name": "instance-state-name", "Values": list(LIVE_STATES)},
        ]
        found = [_to_managed(instance) for instance in self._instances(Filters=filters)]
        if not found:
            return None
        return min(found, key=lambda item: (item.launch_time is None, item.launch_time, item.instance_id))

    def describe(self, instance_ids: Sequence[str]) -> list[ManagedInstance]:
        found: list[ManagedInstance] = []
        unique = list(dict.fromkeys(instance_ids))
        # A filter (not InstanceIds) so unknown ids are simply absent instead of an error;
        # in chunks, as EC2 caps the values of one filter.
        for start in range(0, len(unique), FILTER_VALUES_LIMIT):
            chunk = unique[start : start + FILTER_VALUES_LIMIT]
            filters = [{"Name": "instance-id", "Values": chunk}, *_tag_filters(self._ours())]
            found += [_to_managed(instance) for instance in self._instances(Filters=filters)]
        return found

    def terminate(self, instance_id: str) -> None:
        try:
            found = list(self._instances(InstanceIds=[instance_id]))
        except NotFound:
            return  # gone already
        if not found:
            return
        instance = _to_managed(found[0])
        ours = instance.tags.get(TAG_MANAGED_BY) == TAG_MANAGED_BY_VALUE
        if not ours or instance.cluster != self._cluster:
            raise PermanentError(
                f"refusing to terminate {instance_id}: it is not tagged "
                f"{TAG_MANAGED_BY}={TAG_MANAGED_BY_VALUE} and {TAG_CLUSTER}={self._cluster}"
            )
        if instance.state == "terminated":
            return
        try:
            self._call("terminate_instances", InstanceIds=[instance_id])
        except NotFound:
            return

    def check_connection(self) -> None:
        """DescribeInstances with DryRun: AWS answers DryRunOperation when the call would succeed."""
        try:
            self._client.describe_instances(DryRun=True, MaxResults=5)
        except ClientError as error:
            if error_code(error) == "DryRunOperation":
                return
            raise translate(error, operation="describe_instances") from error
        except BotoCoreError as error:
            raise Throttled(f"EC2 DescribeInstances failed: {error}") from error

    def list_managed(self) -> list[ManagedInstance]:
        filters = [*_tag_filters(self._ours()), {"Name": "instance-state-name", "Values": list(LIVE_STATES)}]
        return [_to_managed(instance) for instance in self._instances(Filters=filters)]

    # ---- selector terms ----------------------------------------------------------------
    def _resolve_network(self, node_class: GPUNodeClass, offering: OfferingRef) -> ResolvedNetwork:
        spec = node_class.spec
        return ResolvedNetwork(
            image_id=self._resolve_image(node_class.name, spec.os_image_selector_terms),
            subnet_id=self._resolve_subnet(node_class.name, spec.subnet_selector_terms, offering),
            security_group_ids=self._resolve_security_groups(spec.security_group_selector_terms),
        )

    def _resolve_image(self, class_name: str, terms: Sequence[SelectorTerm]) -> str:
        for term in terms:
            if term.id:
                return term.id
        images: list[dict[str, Any]] = []
        for term in terms:
            filters = [{"Name": "state", "Values": ["available"]}, *_tag_filters(term.tags)]
            if term.name:
                filters.append({"Name": "name", "Values": [term.name]})
            owners: dict[str, Any] = {"Owners": [term.owner]} if term.owner else {}
            images += self._call("describe_images", Filters=filters, **owners).get("Images") or []
        if not images:
            raise PermanentError(f"GPUNodeClass {class_name}: no image matches osImageSelectorTerms")
        newest = max(images, key=lambda image: (image.get("CreationDate") or "", image["ImageId"]))
        image_id: str = newest["ImageId"]
        return image_id

    def _resolve_subnet(
        self, class_name: str, terms: Sequence[SelectorTerm], offering: OfferingRef
    ) -> str | None:
        if not terms:
            return None  # the account's default subnet for the zone
        ids = [term.id for term in terms if term.id]
        if len(ids) == len(terms) == 1 and offering.zone is None:
            return ids[0]
        subnets = self._class_subnets(terms)
        if offering.zone is not None:
            subnets = [subnet for subnet in subnets if subnet.get("AvailabilityZone") == offering.zone]
        if not subnets:
            # The offering's zone has no subnet of this class: another zone may, so it is the
            # offering that is unavailable, not the claim that is broken.
            raise CapacityUnavailable(
                f"GPUNodeClass {class_name} has no subnet in zone {offering.zone} ({offering.key})",
                code="NoSubnetInZone",
            )
        best = max(subnets, key=lambda subnet: (self._free_ips(subnet), subnet["SubnetId"]))
        subnet_id: str = best["SubnetId"]
        return subnet_id

    def _free_ips(self, subnet: dict[str, Any]) -> int:
        free: int = subnet.get("AvailableIpAddressCount") or 0
        return free - self._launched_into.get(subnet["SubnetId"], 0)

    def _class_subnets(self, terms: Sequence[SelectorTerm]) -> list[dict[str, Any]]:
        """The subnets a node class's selector terms name, by id or by tags: read once per
        SUBNETS_FRESH_FOR_S."""
        key = tuple((term.id, tuple(sorted(term.tags.items()))) for term in terms)
        now = self._monotonic()
        read = self._subnets_read.get(key)
        if read is not None and now - read[0] < SUBNETS_FRESH_FOR_S:
            return read[1]
        ids = [term.id for term in terms if term.id]
        subnets: list[dict[str, Any]] = []
        if ids:
            subnets += self._call("describe_subnets", SubnetIds=ids).get("Subnets") or []
        for term in terms:
            if not term.id and term.tags:
                subnets += (
                    self._call("describe_subnets", Filters=_tag_filters(term.tags)).get("Subnets") or []
                )
        self._subnets_read[key] = (now, subnets)
        for subnet in subnets:  # a fresh answer counts every launch made before it
            self._launched_into.pop(subnet["SubnetId"], None)
        return subnets

    def launchable_zones(self, template: LaunchTemplate) -> frozenset[str] | None:
        terms = _node_class(template).spec.subnet_selector_terms
        if not terms:
            return None  # default subnets: any zone of the region
        subnets = self._class_subnets(terms)
        return frozenset(subnet["AvailabilityZone"] for subnet in subnets if subnet.get("AvailabilityZone"))

    def _resolve_security_groups(self, terms: Sequence[SelectorTerm]) -> tuple[str, ...]:
        ids = [term.id for term in terms if term.id]
        for term in terms:
            if term.id:
                continue
            filters = _tag_filters(term.tags)
            if term.name:
                filters.append({"Name": "group-name", "Values": [term.name]})
            if not filters:
                continue
            groups = self._call("describe_security_groups", Filters=filters).get("SecurityGroups") or []
            ids += [group["GroupId"] for group in groups]
        return tuple(dict.fromkeys(ids))


def _status(error: ClientError) -> int:
    status = (error.response.get("ResponseMetadata") or {}).get("HTTPStatusCode")
    return int(status) if isinstance(status, int) else 0
