"""build_karpenter_nodeclaim and nodeclaim_instance: the NodeClaim fields TensorFusion sets, and
how a NodeClaim's conditions read as the instance of its claim."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from gpupool.core.decisions.karpenter_launch import launch_action, launch_class
from gpupool.core.decisions.karpenter_nodeclaim import (
    KarpenterModeError,
    build_karpenter_nodeclaim,
    karpenter_capacity_type,
    nodeclaim_instance,
    nodeclaim_name_of,
)
from gpupool.core.model.karpenter import KarpenterNodeClaim
from gpupool.core.model.nodeclaim import GPUNodeClaim
from gpupool.core.model.pool import GPUPool
from gpupool.core.planning.plan import LaunchInstance, LaunchNodeClaim, OfferingRef
from gpupool.core.planning.snapshot import PoolSnapshot
from gpupool.core.quantity import Quantity

REF = {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass", "version": "v1", "name": "default"}


def pool(mode: str = "Karpenter", **provisioner: Any) -> GPUPool:
    spec = {
        "nodeManagerConfig": {
            "provisioningMode": mode,
            "nodeProvisioner": {
                "karpenterNodeClassRef": REF,
                "gpuRequirements": [
                    {"key": "kubernetes.io/arch", "operator": "In", "values": ["amd64"]},
                    {
                        "key": "node.kubernetes.io/instance-type",
                        "operator": "In",
                        "values": ["g5.xlarge", "g6.xlarge"],
                    },
                    {"key": "karpenter.sh/capacity-type", "operator": "In", "values": ["Spot"]},
                    {"key": "tensor-fusion.ai/gpu-instance-family", "operator": "Exists"},
                ],
                "gpuNodeLabels": {"team": "ml", "tensor-fusion.ai/node-provisioner": "spoofed"},
                "gpuNodeAnnotations": {"owner": "ml-platform", "karpenter.sh/do-not-disrupt": "false"},
                "gpuTaints": [{"key": "nvidia.com/gpu", "value": "true", "effect": "NoSchedule"}],
                **provisioner,
            },
        }
    }
    return GPUPool.model_validate({"metadata": {"name": "pool-a"}, "spec": spec})


def claim(
    uid: str | None = "uid-1", extra: dict[str, str] | None = None, capacity: str = "Spot"
) -> GPUNodeClaim:
    return GPUNodeClaim.model_validate(
        {
            "metadata": {"name": "pool-a-0001", **({"uid": uid} if uid else {})},
            "spec": {
                "instanceType": "g5.xlarge",
                "zone": "us-east-1a",
                "region": "us-east-1",
                "capacityType": capacity,
                "tflopsOffered": "125",
                "vramOffered": "24Gi",
                "gpuDeviceOffered": 4,
                "extraParams": extra or {},
            },
        }
    )


def test_nodeclaim_carries_every_field_tensorfusion_sets_in_order() -> None:
    built = build_karpenter_nodeclaim(pool(), claim())
    manifest = built.model_dump(by_alias=True, exclude_none=True, mode="json")
    meta = manifest["metadata"]
    assert meta["name"] == "pool-a-0001"
    assert meta["labels"] == {"team": "ml", "tensor-fusion.ai/node-provisioner": "pool-a-0001"}
    assert meta["annotations"] == {"owner": "ml-platform", "karpenter.sh/do-not-disrupt": "true"}
    assert meta["ownerReferences"] == [
        {
            "apiVersion": "tensor-fusion.ai/v1",
            "kind": "GPUNodeClaim",
            "name": "pool-a-0001",
            "uid": "uid-1",
            "controller": True,
            "blockOwnerDeletion": True,
        }
    ]
    spec = manifest["spec"]
    assert [(r["key"], r["operator"], r.get("values")) for r in spec["requirements"]] == [
        ("node.kubernetes.io/instance-type", "In", ["g5.xlarge"]),
        ("topology.kubernetes.io/zone", "In", ["us-east-1a"]),
        ("topology.kubernetes.io/region", "In", ["us-east-1"]),
        ("karpenter.sh/capacity-type", "In", ["spot"]),
        ("kubernetes.io/arch", "In", ["amd64"]),
        ("tensor-fusion.ai/gpu-instance-family", "Exists", []),
    ]
    assert spec["resources"] == {"requests": {"nvidia.com/gpu": "4"}}
    assert spec["taints"] == [{"key": "nvidia.com/gpu", "value": "true", "effect": "NoSchedule"}]
    assert spec["nodeClassRef"] == {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass", "name": "default"}
    assert "terminationGracePeriod" not in spec


def test_extra_params_name_the_gpu_resource_and_the_termination_grace_period() -> None:
    extra = {"karpenter.gpuResource": "amd.com/gpu", "karpenter.nodeClaim.terminationGracePeriod": "30m"}
    spec = build_karpenter_nodeclaim(pool(), claim(extra=extra)).spec
    assert spec.resources.requests == {"amd.com/gpu": Quantity(4)}
    assert spec.termination_grace_period == "30m"


@pytest.mark.parametrize(
    ("ours", "theirs"), [("OnDemand", "on-demand"), ("Spot", "spot"), ("Reserved", "reserved")]
)
def test_capacity_types_map_to_karpenter_spelling(ours: str, theirs: str) -> None:
    assert karpenter_capacity_type(ours) == theirs


def test_without_a_class_ref_or_a_uid_it_refuses_clearly() -> None:
    bare = pool(karpenterNodeClassRef=None)
    with pytest.raises(KarpenterModeError, match="karpenterNodeClassRef"):
        build_karpenter_nodeclaim(bare, claim())
    assert build_karpenter_nodeclaim(pool(), claim(uid=None)).metadata.owner_references == []
    snapshot = PoolSnapshot(cluster_name="demo", pool=bare)
    assert launch_class(snapshot) == (None, "Karpenter mode needs nodeProvisioner.karpenterNodeClassRef")


def test_the_launch_action_follows_the_mode() -> None:
    offering = OfferingRef(
        instance_type="g5.xlarge",
        zone="us-east-1a",
        tflops=Quantity(125),
        vram=Quantity(24),
        gpu_count=4,
        hourly_price="1",
    )
    karpenter = launch_action(PoolSnapshot(cluster_name="demo", pool=pool()), claim(), offering, "default")
    assert isinstance(karpenter, LaunchNodeClaim) and karpenter.manifest.name == "pool-a-0001"
    provisioned = pool("Provisioned", nodeClass="gpu-class")
    assert isinstance(
        launch_action(PoolSnapshot(cluster_name="demo", pool=provisioned), claim(), offering, "gpu-class"),
        LaunchInstance,
    )


def _nodeclaim(conditions: list[dict[str, str]], *, deleting: bool = False) -> KarpenterNodeClaim:
    meta: dict[str, Any] = {
        "name": "pool-a-0001",
        "labels": {"tensor-fusion.ai/node-provisioner": "pool-a-0001"},
    }
    if deleting:
        meta["deletionTimestamp"] = datetime(2026, 1, 1, tzinfo=UTC).isoformat()
    return KarpenterNodeClaim.model_validate(
        {
            "metadata": meta,
            "spec": build_karpenter_nodeclaim(pool(), claim()).spec.model_dump(by_alias=True, mode="json"),
            "status": {"conditions": conditions, "providerID": "aws:///us-east-1a/i-1"},
        }
    )


@pytest.mark.parametrize(
    ("conditions", "deleting", "state"),
    [
        ([], False, "pending"),
        ([{"type": "Launched", "status": "Unknown"}], False, "pending"),
        ([{"type": "Launched", "status": "True"}], False, "running"),
        ([{"type": "Launched", "status": "False", "reason": "InsufficientCapacity"}], False, "terminated"),
        ([{"type": "Launched", "status": "True"}], True, "shutting-down"),
    ],
)
def test_a_nodeclaim_reads_as_its_claims_instance(
    conditions: list[dict[str, str]], deleting: bool, state: str
) -> None:
    instance = nodeclaim_instance(_nodeclaim(conditions, deleting=deleting))
    assert instance.state == state
    assert instance.instance_id == "nodeclaim/pool-a-0001" and instance.claim_name == "pool-a-0001"
    assert (instance.instance_type, instance.zone, instance.capacity_type) == (
        "g5.xlarge",
        "us-east-1a",
        "spot",
    )
    assert instance.cluster is None, "never swept as a cloud orphan"


def test_only_nodeclaim_ids_name_a_nodeclaim() -> None:
    assert nodeclaim_name_of("nodeclaim/pool-a-0001") == "pool-a-0001"
    assert nodeclaim_name_of("i-0123") is None and nodeclaim_name_of("nodeclaim/") is None


def _failed(bound_before: bool, failed_at: datetime) -> GPUNodeClaim:
    conditions = [{"type": "Failed", "status": "True", "lastTransitionTime": failed_at.isoformat()}]
    if bound_before:
        conditions.insert(0, {"type": "Bound", "status": "True"})
    raw = claim().model_dump(by_alias=True, mode="json", exclude_none=True)
    raw["status"] = {"phase": "Failed", "reason": "InstanceTerminated", "conditions": conditions}
    return GPUNodeClaim.model_validate(raw)


@pytest.mark.parametrize(
    ("bound_before", "minutes_ago", "marked"),
    [(False, 1, True), (True, 1, False), (False, 5, False)],
    ids=["failed-before-joining", "failed-after-it-was-bound", "failed-long-ago"],
)
def test_an_offering_karpenter_could_not_launch_is_skipped_for_a_while(
    bound_before: bool, minutes_ago: int, marked: bool
) -> None:
    from datetime import timedelta

    from gpupool.core.decisions.karpenter_launch import plan_karpenter_unavailable

    now = datetime(2026, 1, 1, 12, 0, tzinfo=UTC)
    failed = _failed(bound_before, now - timedelta(minutes=minutes_ago))
    snap = PoolSnapshot(cluster_name="demo", pool=pool(), claims=(failed,))
    plan = plan_karpenter_unavailable(snap, now=now, unavailable_for=timedelta(minutes=3))
    keys = [a.offering_key for a in plan.actions]  # type: ignore[union-attr]
    assert keys == (["g5.xlarge/us-east-1a/Spot"] if marked else [])
