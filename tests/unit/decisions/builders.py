"""Builders for decision table tests: pools, claims, nodes, GPUNodes and snapshots with overrides."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from gpupool.core.model.base import Condition, ObjectMeta
from gpupool.core.model.constants import ANNOTATION_HOURLY_PRICING, LABEL_MANAGED_BY, LABEL_NODE_PROVISIONER
from gpupool.core.model.foreign import Node, NodeSpec, NodeStatus, Pod, PodSpec
from gpupool.core.model.node import GPUNode, GPUNodeStatus
from gpupool.core.model.nodeclaim import GPUNodeClaim
from gpupool.core.model.nodeclass import GPUNodeClass
from gpupool.core.model.pool import GPUPool
from gpupool.core.planning.plan import OfferingRef
from gpupool.core.planning.snapshot import PoolSnapshot
from gpupool.core.quantity import Quantity

NOW = datetime(2026, 1, 1, 12, 0, tzinfo=UTC)


def q(text: str) -> Quantity:
    return Quantity.parse(text)


def offering(
    instance_type: str = "g4dn.xlarge",
    tflops: str = "65",
    vram: str = "16Gi",
    price: str = "0.526",
    zone: str = "us-east-1a",
    capacity_type: str = "OnDemand",
) -> OfferingRef:
    return OfferingRef(
        instance_type=instance_type,
        zone=zone,
        capacity_type=capacity_type,  # type: ignore[arg-type]
        tflops=q(tflops),
        vram=q(vram),
        gpu_count=1,
        hourly_price=price,
    )


def pool(
    *,
    min_: tuple[str, str] | None = ("130", "32Gi"),
    warm: tuple[str, str] | None = None,
    max_: tuple[str, str] | None = None,
    mode: str = "Provisioned",
    annotations: dict[str, str] | None = None,
    requirements: list[dict[str, Any]] | None = None,
    status: dict[str, Any] | None = None,
) -> GPUPool:
    capacity: dict[str, Any] = {}
    for key, value in (("minResources", min_), ("warmResources", warm), ("maxResources", max_)):
        if value is not None:
            capacity[key] = {"tflops": value[0], "vram": value[1]}
    data: dict[str, Any] = {
        "metadata": {"name": "pool-a", "annotations": annotations or {}},
        "spec": {
            "capacityConfig": capacity,
            "nodeManagerConfig": {
                "provisioningMode": mode,
                "nodeProvisioner": {"nodeClass": "gpu-class", "gpuRequirements": requirements or []},
            },
        },
    }
    if status is not None:
        data["status"] = status
    return GPUPool.model_validate(data)


def claim(
    name: str = "pool-a-1",
    *,
    phase: str | None = "Creating",
    instance_id: str | None = "i-1",
    age: timedelta = timedelta(minutes=1),
    deleting: bool = False,
    annotations: dict[str, str] | None = None,
    phase_age: timedelta | None = None,
    tflops: str = "65",
    vram: str = "16Gi",
) -> GPUNodeClaim:
    created = NOW - age
    status: dict[str, Any] | None = None
    if phase is not None:
        status = {"phase": phase}
        if instance_id:
            status["instanceID"] = instance_id
        if phase_age is not None:
            status["conditions"] = [
                Condition(type=phase, status="True", last_transition_time=NOW - phase_age).model_dump(
                    by_alias=True, mode="json", exclude_none=True
                )
            ]
    return GPUNodeClaim.model_validate(
        {
            "metadata": {
                "name": name,
                "labels": {LABEL_MANAGED_BY: "pool-a"},
                "annotations": {ANNOTATION_HOURLY_PRICING: "0.526", **(annotations or {})},
                "creationTimestamp": created.isoformat(),
                **({"deletionTimestamp": NOW.isoformat()} if deleting else {}),
            },
            "spec": {
                "instanceType": "g4dn.xlarge",
                "zone": "us-east-1a",
                "capacityType": "OnDemand",
                "tflopsOffered": tflops,
                "vramOffered": vram,
                "gpuDeviceOffered": 1,
            },
            **({"status": status} if status else {}),
        }
    )


def node(
    name: str,
    *,
    claim_name: str | None,
    ready: bool = True,
    age: timedelta = timedelta(hours=1),
    labels: dict[str, str] | None = None,
    unschedulable: bool = False,
) -> Node:
    node_labels = {**({LABEL_NODE_PROVISIONER: claim_name} if claim_name else {}), **(labels or {})}
    return Node(
        metadata=ObjectMeta(name=name, labels=node_labels, creation_timestamp=NOW - age),
        spec=NodeSpec(unschedulable=unschedulable),
        status=NodeStatus(conditions=[Condition(type="Ready", status="True" if ready else "False")]),
    )


def gpu_node(
    name: str,
    *,
    tflops: str = "65",
    vram: str = "16Gi",
    available: tuple[str, str] | None = None,
    labels: dict[str, str] | None = None,
) -> GPUNode:
    avail_t, avail_v = available or (tflops, vram)
    return GPUNode(
        metadata=ObjectMeta(name=name, labels=labels or {}),
        status=GPUNodeStatus(
            phase="Running",
            total_tflops=q(tflops),
            total_vram=q(vram),
            available_tflops=q(avail_t),
            available_vram=q(avail_v),
            total_gpus=1,
        ),
    )


def worker(name: str, node_name: str) -> Pod:
    return Pod(metadata=ObjectMeta(name=name, namespace="default"), spec=PodSpec(node_name=node_name))


def snapshot(the_pool: GPUPool | None = None, **parts: Any) -> PoolSnapshot:
    return PoolSnapshot(
        cluster_name="demo",
        pool=the_pool or pool(),
        node_class=parts.pop("node_class", GPUNodeClass(metadata=ObjectMeta(name="gpu-class"))),
        **{k: tuple(v) for k, v in parts.items()},
    )
