"""How `EcsCompute` resolves a GPUNodeClass's selector terms on ECS: image, vSwitch, security groups.

Role: ids are used as given; otherwise DescribeImages (name, owner alias, tags; the newest
wins), DescribeVSwitches (by id, or `VSwitchName` over the region's vSwitches — ECS cannot
filter vSwitches by tags, so a tags-only term is refused with a clear message) and
DescribeSecurityGroups (name, tags). A zone with no vSwitch of the class is an unavailable
offering (`CapacityUnavailable`), so the service tries another zone.

Must not: launch or delete anything, retry (the caller's `call` does), or decide what to launch.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from gpupool.adapters.alibaba.request import ResolvedEcsNetwork
from gpupool.core.model.nodeclass import GPUNodeClass, SelectorTerm
from gpupool.core.planning.plan import OfferingRef
from gpupool.service.errors import CapacityUnavailable, PermanentError

__all__ = ["EcsSelectors", "items", "tag_params"]

PAGE_SIZE = 100
Call = Callable[..., dict[str, Any]]


def tag_params(tags: Mapping[str, str]) -> list[dict[str, str]]:
    return [{"Key": key, "Value": value} for key, value in tags.items()]


def items(body: Mapping[str, Any], outer: str, inner: str) -> list[dict[str, Any]]:
    """ECS wraps lists twice: `{"Instances": {"Instance": [...]}}`."""
    wrapper = body.get(outer) or {}
    found = wrapper.get(inner) if isinstance(wrapper, Mapping) else None
    return [item for item in found or [] if isinstance(item, dict)]


class EcsSelectors:
    """Selector-term resolution over `call(action, **params)` (the adapter's retrying call)."""

    def __init__(self, call: Call) -> None:
        self._call = call

    def resolve_network(self, node_class: GPUNodeClass, offering: OfferingRef) -> ResolvedEcsNetwork:
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
                params["Tag"] = tag_params(term.tags)
            if term.name:
                params["ImageName"] = term.name
            if term.owner:
                params["ImageOwnerAlias"] = term.owner
            images += items(self._call("DescribeImages", **params), "Images", "Image")
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
                found += items(
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
            page_items = items(body, "VSwitches", "VSwitch")
            found += page_items
            if not page_items or page * 50 >= int(body.get("TotalCount") or 0):
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
                params["Tag"] = tag_params(term.tags)
            groups = items(self._call("DescribeSecurityGroups", **params), "SecurityGroups", "SecurityGroup")
            ids += [str(group["SecurityGroupId"]) for group in groups]
        return tuple(dict.fromkeys(ids))
