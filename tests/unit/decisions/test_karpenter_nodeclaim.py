"""nodeclaim_template, build_karpenter_nodeclaim and nodeclaim_instance: the NodeClaim fields
TensorFusion sets, how a NodeClaim's conditions read as the instance of its claim; that both modes
plan the same launch action and the claim records its mode's class; and that an offering Karpenter
could not launch is skipped for a while (plan_lost_launches)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from gpupool.core.decisions.karpenter_nodeclaim import (
    KarpenterModeError,
    build_karpenter_nodeclaim,
    karpenter_capacity_type,
    karpenter_duration,
    nodeclaim_instance,
    nodeclaim_name_of,
    nodeclaim_template,
    template_problems,
)
from gpupool.core.decisions.launch import plan_launch
from gpupool.core.decisions.launch_failure import plan_lost_launches
from gpupool.core.model.base import ObjectMeta
from gpupool.core.model.claim_state import claim_mode
from gpupool.core.model.karpenter import KarpenterNodeClaim
from gpupool.core.model.nodeclaim import GPUNodeClaim
from gpupool.core.model.nodeclass import GPUNodeClass
from gpupool.core.model.pool import GPUPool
from gpupool.core.planning.plan import CreateClaim, LaunchInstance, MarkOfferingUnavailable, OfferingRef
from gpupool.core.planning.snapshot import PoolSnapshot
from gpupool.core.quantity import Quantity

NOW = datetime(2026, 1, 1, 12, 0, tzinfo=UTC)
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


def built(claim: GPUNodeClaim, the_pool: GPUPool | None = None) -> KarpenterNodeClaim:
    return build_karpenter_nodeclaim(nodeclaim_template(the_pool or pool()), claim)


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
    manifest = built(claim()).model_dump(by_alias=True, exclude_none=True, mode="json")
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
    assert spec["expireAfter"] == "Never", "not the CRD's 720h: Karpenter would delete the node after 30 days"


def test_the_pool_may_ask_for_an_expiry_and_a_grace_period_and_a_claim_for_its_own_grace() -> None:
    asked = pool()
    annotations = {
        "gpupool.io/karpenter-expire-after": "168h",
        "gpupool.io/karpenter-termination-grace-period": "2h",
    }
    asked = asked.model_copy(
        update={"metadata": asked.metadata.model_copy(update={"annotations": annotations})}
    )
    assert (built(claim(), asked).spec.expire_after, built(claim(), asked).spec.termination_grace_period) == (
        "168h",
        "2h",
    )
    own = built(claim(extra={"karpenter.nodeClaim.terminationGracePeriod": "45m"}), asked)
    assert own.spec.termination_grace_period == "45m", "the claim's extraParams win, as in TensorFusion"


def test_aws_gpu_names_go_to_karpenter_in_the_case_its_labels_use() -> None:
    names = pool(
        gpuRequirements=[
            {"key": "karpenter.k8s.aws/instance-gpu-name", "operator": "In", "values": ["T4", "A10G"]},
            {"key": "karpenter.k8s.aws/instance-gpu-manufacturer", "operator": "In", "values": ["NVIDIA"]},
        ]
    )
    requirements = {r.key: r.values for r in nodeclaim_template(names).spec.requirements}
    assert requirements == {
        "karpenter.k8s.aws/instance-gpu-name": ["t4", "a10g"],
        "karpenter.k8s.aws/instance-gpu-manufacturer": ["nvidia"],
    }


@pytest.mark.parametrize(
    ("annotations", "provisioner", "words"),
    [
        ({"gpupool.io/karpenter-termination-grace-period": "1d"}, {}, "terminationGracePeriod '1d'"),
        ({"gpupool.io/karpenter-expire-after": "30d"}, {}, "expireAfter '30d'"),
        (
            {},
            {
                "gpuRequirements": [
                    {"key": "karpenter.k8s.aws/instance-gpu-count", "operator": "Gt", "values": ["-1"]}
                ]
            },
            "non-negative integer",
        ),
        ({}, {"gpuNodeLabels": {"team": "m" * 64}}, "gpuNodeLabels team"),
    ],
)
def test_a_pool_whose_nodeclaims_karpenter_would_refuse_launches_nothing_and_says_why(
    annotations: dict[str, str], provisioner: dict[str, Any], words: str
) -> None:
    minimum = {"capacityConfig": {"minResources": {"tflops": "100", "vram": "20Gi"}}}
    bad = pool(**provisioner)
    bad = bad.model_copy(
        update={
            "metadata": bad.metadata.model_copy(update={"annotations": annotations}),
            "spec": bad.spec.model_copy(update=_capacity(minimum)),
        }
    )
    plan = plan_launch(PoolSnapshot(cluster_name="demo", pool=bad), [_offering()], now=NOW, suffixes=["1"])
    assert [a.kind for a in plan.actions] == ["record-event"], "nothing is written but the reason"
    (event,) = plan.actions
    assert event.object_kind == "GPUPool" and words in event.message  # type: ignore[union-attr]
    assert "Karpenter's API server would refuse this pool's NodeClaims" in plan.reasons[0]


def test_extra_params_name_the_gpu_resource_and_the_termination_grace_period() -> None:
    extra = {"karpenter.gpuResource": "amd.com/gpu", "karpenter.nodeClaim.terminationGracePeriod": "30m"}
    spec = built(claim(extra=extra)).spec
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
        nodeclaim_template(bare)
    no_ref = nodeclaim_template(pool()).model_copy(
        update={"spec": nodeclaim_template(pool()).spec.model_copy(update={"node_class_ref": None})}
    )
    with pytest.raises(KarpenterModeError, match="nodeClassRef"):
        build_karpenter_nodeclaim(no_ref, claim())
    assert built(claim(uid=None)).metadata.owner_references == []
    plan = plan_launch(PoolSnapshot(cluster_name="demo", pool=bare), [], now=NOW, suffixes=["1"])
    assert plan.reasons == ("pool pool-a: Karpenter mode needs nodeProvisioner.karpenterNodeClassRef",)


def _offering() -> OfferingRef:
    return OfferingRef(
        instance_type="g5.xlarge",
        zone="us-east-1a",
        capacity_type="Spot",
        tflops=Quantity(125),
        vram=Quantity.parse("24Gi"),
        gpu_count=4,
        hourly_price="1",
    )


def test_both_modes_plan_the_same_launch_and_the_claim_records_its_modes_class() -> None:
    minimum = {"capacityConfig": {"minResources": {"tflops": "100", "vram": "20Gi"}}}
    karpenter = pool().model_copy(update={"spec": pool().spec.model_copy(update=_capacity(minimum))})
    plain = pool("Provisioned", nodeClass="gpu-class", karpenterNodeClassRef=None)
    provisioned = plain.model_copy(update={"spec": plain.spec.model_copy(update=_capacity(minimum))})
    gpu_class = GPUNodeClass(metadata=ObjectMeta(name="gpu-class"))
    for the_pool, node_class, kind, mode in (
        (karpenter, None, "EC2NodeClass", "Karpenter"),
        (provisioned, gpu_class, "GPUNodeClass", "Provisioned"),
    ):
        snapshot = PoolSnapshot(cluster_name="demo", pool=the_pool, node_class=node_class)
        plan = plan_launch(snapshot, [_offering()], now=NOW, suffixes=["0001"])
        (created,) = [a.manifest for a in plan.actions if isinstance(a, CreateClaim)]
        (launch,) = [a for a in plan.actions if isinstance(a, LaunchInstance)]
        assert created.spec.node_class_ref is not None and created.spec.node_class_ref.kind == kind
        assert claim_mode(created) == mode
        assert (launch.claim, launch.offering.key) == ("pool-a-0001", "g5.xlarge/us-east-1a/Spot")
        assert launch.node_class == ("default" if mode == "Karpenter" else "gpu-class")


def _capacity(raw: dict[str, Any]) -> dict[str, Any]:
    from gpupool.core.model.pool import CapacityConfig

    return {"capacity_config": CapacityConfig.model_validate(raw["capacityConfig"])}


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
            "spec": built(claim()).spec.model_dump(by_alias=True, mode="json"),
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


def _failed(bound_before: bool, failed_at: datetime, reason: str = "InsufficientCapacity") -> GPUNodeClaim:
    conditions = [{"type": "Failed", "status": "True", "lastTransitionTime": failed_at.isoformat()}]
    if bound_before:
        conditions.insert(0, {"type": "Bound", "status": "True"})
    raw = claim().model_dump(by_alias=True, mode="json", exclude_none=True)
    raw["status"] = {"phase": "Failed", "reason": reason, "conditions": conditions}
    return GPUNodeClaim.model_validate(raw)


@pytest.mark.parametrize(
    ("bound_before", "minutes_ago", "marked"),
    [(False, 1, True), (True, 1, False), (False, 5, False)],
    ids=["failed-before-joining", "failed-after-it-was-bound", "failed-long-ago"],
)
def test_an_offering_karpenter_could_not_launch_is_skipped_for_a_while(
    bound_before: bool, minutes_ago: int, marked: bool
) -> None:
    now = NOW
    failed = _failed(bound_before, now - timedelta(minutes=minutes_ago))
    snap = PoolSnapshot(cluster_name="demo", pool=pool(), claims=(failed,))
    plan = plan_lost_launches(snap, now=now, unavailable_for=timedelta(minutes=3))
    keys = [a.offering_key for a in plan.actions if isinstance(a, MarkOfferingUnavailable)]
    assert keys == (["g5.xlarge/us-east-1a/Spot"] if marked else [])


def test_plan_launch_remembers_the_lost_offering_and_plans_past_it() -> None:
    now = NOW
    failed = _failed(False, now - timedelta(minutes=1))
    minimum = {"capacityConfig": {"minResources": {"tflops": "100", "vram": "20Gi"}}}
    the_pool = pool().model_copy(update={"spec": pool().spec.model_copy(update=_capacity(minimum))})
    other = _offering().model_copy(update={"zone": "us-east-1b", "hourly_price": "2"})
    snap = PoolSnapshot(cluster_name="demo", pool=the_pool, claims=(failed,))
    plan = plan_launch(snap, [_offering(), other], now=now, suffixes=["0002"])
    assert isinstance(plan.actions[0], MarkOfferingUnavailable)
    assert plan.actions[0].until == now + timedelta(minutes=2)
    assert plan.reasons[0].startswith("pool pool-a: Karpenter could not launch g5.xlarge/us-east-1a/Spot")
    (launch,) = [a for a in plan.actions if isinstance(a, LaunchInstance)]
    assert launch.offering.zone == "us-east-1b", "the refill takes the next cheapest"
    provisioned = the_pool.model_copy(
        update={
            "spec": the_pool.spec.model_copy(
                update={
                    "node_manager_config": the_pool.spec.node_manager_config.model_copy(
                        update={"provisioning_mode": "Provisioned"}
                    )
                }
            )
        }
    )
    assert (
        plan_lost_launches(
            snap.model_copy(update={"pool": provisioned}), now=now, unavailable_for=timedelta(minutes=3)
        ).actions
        == ()
    ), "a Provisioned instance lost before joining is not a failed launch"


@pytest.mark.parametrize(
    ("ref", "mode"),
    [
        (None, "Provisioned"),
        ({"group": "tensor-fusion.ai", "kind": "GPUNodeClass", "name": "gpu-class"}, "Provisioned"),
        (REF, "Karpenter"),
        ({"group": "karpenter.k8s.alibabacloud", "kind": "ECSNodeClass", "name": "default"}, "Karpenter"),
    ],
)
def test_the_claim_records_the_mode_that_makes_its_node(ref: dict[str, str] | None, mode: str) -> None:
    raw = claim().model_dump(by_alias=True, mode="json", exclude_none=True)
    if ref is not None:
        raw["spec"]["nodeClassRef"] = ref
    assert claim_mode(GPUNodeClaim.model_validate(raw)) == mode


@pytest.mark.parametrize("reason", ["LaunchTimeout", "RegistrationTimeout", "InstanceTerminated"])
def test_only_a_capacity_failure_marks_the_offering(reason: str) -> None:
    failed = _failed(False, NOW - timedelta(minutes=1), reason)
    snap = PoolSnapshot(cluster_name="demo", pool=pool(), claims=(failed,))
    assert plan_lost_launches(snap, now=NOW, unavailable_for=timedelta(minutes=3)).actions == ()


@pytest.mark.parametrize(
    ("given", "expected"),
    [
        ("1.5h", "1h30m"),
        ("90m", "1h30m"),
        ("1h30m0s", "1h30m"),
        ("45s", "45s"),
        ("0.5m", "30s"),
        ("Never", "Never"),
        (None, None),
        ("1d", "1d"),  # no Go duration: left for the CRD rules to refuse
        ("1.5s", "1.5s"),  # not whole seconds: refused likewise
    ],
)
def test_durations_are_normalised_to_karpenters_form(given: str | None, expected: str | None) -> None:
    assert karpenter_duration(given) == expected


def test_a_grace_period_of_one_and_a_half_hours_reaches_karpenter_as_1h30m() -> None:
    asked = pool().model_copy(
        update={
            "metadata": ObjectMeta(
                name="pool-a",
                annotations={
                    "gpupool.io/karpenter-termination-grace-period": "1.5h",
                    "gpupool.io/karpenter-expire-after": "168h0m0s",
                },
            )
        }
    )
    nodeclaim = built(claim(), asked)
    assert (nodeclaim.spec.termination_grace_period, nodeclaim.spec.expire_after) == ("1h30m", "168h")
    assert template_problems(nodeclaim_template(asked)) == []
    own = built(claim(extra={"karpenter.nodeClaim.terminationGracePeriod": "2.5h"}))
    assert own.spec.termination_grace_period == "2h30m"


def test_a_taint_without_value_reaches_karpenter_without_one() -> None:
    valueless = pool(gpuTaints=[{"key": "nvidia.com/gpu", "value": "", "effect": "NoSchedule"}])
    (taint,) = built(claim(), valueless).spec.taints
    dumped = taint.model_dump(by_alias=True, exclude_none=True)
    assert dumped == {"key": "nvidia.com/gpu", "effect": "NoSchedule"}
