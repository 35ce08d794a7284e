"""non_gpu_blocker and the candidate narrowing of plan_autoselect: what makes a pod need more than
GPU capacity, and how required affinity narrows instance type and zone; the expansion's metadata
(the template's and the NodePool's, no do-not-disrupt, the NodePool as owner), the NodePool's
limits, the Events' timing, the template taken from the pod's own pool, and a pod its joined expansion
did not take expanded for again once that node's GPUs have been reported for the grace."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from gpupool.core.decisions.autoselect import non_gpu_blocker, plan_autoselect
from gpupool.core.model.foreign import Node, Pod
from gpupool.core.model.karpenter import KarpenterNodeClaim, KarpenterNodePool
from gpupool.core.model.node import GPU
from gpupool.core.model.pool import GPUPool
from gpupool.core.planning.plan import CreateNodeClaim, RecordEvent
from gpupool.core.quantity import Quantity

NOW = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
NODE = Node.model_validate(
    {
        "metadata": {
            "name": "n0",
            "labels": {"nvidia.com/gpu.present": "true", "karpenter.sh/nodepool": "gpu", "disk": "ssd"},
        },
        "status": {"allocatable": {"cpu": "8", "memory": "32Gi"}},
    }
)
TEMPLATE = KarpenterNodeClaim.model_validate(
    {
        "metadata": {"name": "gpu-1", "labels": {"karpenter.sh/nodepool": "gpu"}},
        "spec": {
            "nodeClassRef": {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass", "name": "default"},
            "requirements": [
                {"key": "node.kubernetes.io/instance-type", "operator": "In", "values": ["g5.xlarge"]},
                {"key": "topology.kubernetes.io/zone", "operator": "In", "values": ["us-east-1a"]},
            ],
            "taints": [{"key": "gpu", "effect": "NoExecute"}, {"key": "soft", "effect": "PreferNoSchedule"}],
        },
        "status": {"nodeName": "n0"},
    }
)
NODEPOOL = KarpenterNodePool.model_validate(
    {
        "metadata": {"name": "gpu"},
        "spec": {
            "template": {
                "spec": {
                    "requirements": [
                        {
                            "key": "topology.kubernetes.io/zone",
                            "operator": "In",
                            "values": ["us-east-1a", "us-east-1c"],
                        }
                    ]
                }
            }
        },
    }
)


def pod(**spec: Any) -> Pod:
    base: dict[str, Any] = {
        "tolerations": [{"key": "gpu", "operator": "Exists"}],
        "containers": [{"name": "c"}],
    }
    base.update(spec)
    return Pod.model_validate({"metadata": {"name": "p", "namespace": "ml"}, "spec": base})


@pytest.mark.parametrize(
    ("spec", "reason"),
    [
        ({}, None),
        ({"nodeSelector": {"disk": "hdd"}}, "nodeSelector disk=hdd"),
        ({"nodeSelector": {"node.kubernetes.io/instance-type": "g6.xlarge"}}, None),  # narrows, not blocks
        ({"tolerations": []}, "does not tolerate the taint gpu="),
        ({"containers": [{"name": "c", "resources": {"requests": {"memory": "64Gi"}}}]}, "requests memory"),
    ],
)
def test_non_gpu_blocker(spec: dict[str, Any], reason: str | None) -> None:
    found = non_gpu_blocker(pod(**spec), NODE, TEMPLATE)
    assert (found is None) if reason is None else (reason in (found or ""))


def test_required_affinity_narrows_the_zone_within_the_nodepool() -> None:
    term = {
        "matchExpressions": [
            {"key": "topology.kubernetes.io/zone", "operator": "In", "values": ["us-east-1c"]}
        ]
    }
    affinity = {
        "nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [term]}}
    }
    plan = plan_autoselect([pod(affinity=affinity)], [NODE], [TEMPLATE], [NODEPOOL], suffixes=["a"], now=NOW)
    (create,) = [a for a in plan.actions if isinstance(a, CreateNodeClaim)]
    zone = [r.values for r in create.manifest.spec.requirements if r.key == "topology.kubernetes.io/zone"]
    assert zone == [["us-east-1c"]] and create.manifest.name == "gpu-a"


def test_the_in_flight_limit_holds_the_rest_back_with_a_reason() -> None:
    pods = [
        pod().model_copy(update={"metadata": pod().metadata.model_copy(update={"name": f"p{i}"})})
        for i in range(4)
    ]
    plan = plan_autoselect(
        pods, [NODE], [TEMPLATE], [NODEPOOL], suffixes=list("abcd"), now=NOW, max_in_flight=2
    )
    assert len([a for a in plan.actions if isinstance(a, CreateNodeClaim)]) == 2
    assert "2 pod(s) wait: maxInFlightNodes (2)" in plan.reasons[-1]


def _pods(count: int) -> list[Pod]:
    return [
        pod().model_copy(update={"metadata": pod().metadata.model_copy(update={"name": f"p{i}"})})
        for i in range(count)
    ]


def _documented_nodepool(limit: str) -> KarpenterNodePool:
    """TensorFusion's documented NodePool: template labels, a GPU limit."""
    return KarpenterNodePool.model_validate(
        {
            "metadata": {
                "name": "gpu",
                "uid": "np-uid",
                "annotations": {
                    "karpenter.sh/nodepool-hash": "123",
                    "karpenter.sh/nodepool-hash-version": "v3",
                },
            },
            "spec": {
                "limits": {"nvidia.com/gpu": limit},
                "template": {
                    "metadata": {"labels": {"nvidia.com/gpu.present": "true", "team": "ml"}},
                    "spec": {"requirements": []},
                },
            },
        }
    )


GPU_NODE = NODE.model_copy(
    update={
        "status": NODE.status.model_copy(
            update={"capacity": {**NODE.status.allocatable, "nvidia.com/gpu": Quantity(1)}}
        )
    }
)
KARPENTERS_TEMPLATE = TEMPLATE.model_copy(
    update={
        "metadata": TEMPLATE.metadata.model_copy(
            update={
                "labels": {
                    "karpenter.sh/nodepool": "gpu",
                    "nvidia.com/gpu.present": "true",
                    "team": "ml",
                    "node.kubernetes.io/instance-type": "g5.xlarge",  # resolved at its launch
                },
                "annotations": {"karpenter.sh/do-not-disrupt": "true", "example.com/owner": "ml-platform"},
            }
        )
    }
)


def test_an_expansion_carries_the_templates_metadata_and_the_nodepool_as_owner() -> None:
    plan = plan_autoselect(
        [pod()], [GPU_NODE], [KARPENTERS_TEMPLATE], [_documented_nodepool("8")], suffixes=["a"], now=NOW
    )
    (create,) = [a for a in plan.actions if isinstance(a, CreateNodeClaim)]
    meta = create.manifest.metadata
    assert meta.labels["nvidia.com/gpu.present"] == "true" and meta.labels["team"] == "ml"
    assert "node.kubernetes.io/instance-type" not in meta.labels, "Karpenter writes it at launch"
    assert "karpenter.sh/do-not-disrupt" not in meta.annotations, "Karpenter must be able to consolidate it"
    assert meta.annotations["example.com/owner"] == "ml-platform"
    assert meta.annotations["karpenter.sh/nodepool-hash"] == "123"
    (owner,) = meta.owner_references
    assert (owner.kind, owner.name, owner.uid, owner.controller) == ("NodePool", "gpu", "np-uid", True)
    completed = [
        a for a in plan.actions if isinstance(a, RecordEvent) and a.reason == "NodeExpansionCompleted"
    ]
    assert len(completed) == 1, "NodeExpansionCompleted when the NodeClaim is created, as TensorFusion"


def test_the_nodepools_limit_is_never_passed_and_an_event_names_it() -> None:
    launched = KARPENTERS_TEMPLATE.model_copy(
        update={
            "status": KARPENTERS_TEMPLATE.status.model_copy(
                update={"capacity": {"nvidia.com/gpu": Quantity(1)}}
            )
        }
    )
    plan = plan_autoselect(
        _pods(20),
        [GPU_NODE],
        [launched],
        [_documented_nodepool("8")],
        suffixes=[f"s{i}" for i in range(20)],
        now=NOW,
    )
    assert len([a for a in plan.actions if isinstance(a, CreateNodeClaim)]) == 7, (
        "1 held + 7 new = the 8 limit"
    )
    (stop,) = [a for a in plan.actions if isinstance(a, RecordEvent) and a.reason == "NodePoolLimitReached"]
    assert "NodePool gpu's limit nvidia.com/gpu: 8" in stop.message


def test_the_template_is_a_node_of_the_pods_pool() -> None:
    selector = {
        "nodeSelectorTerms": [{"matchExpressions": [{"key": "disk", "operator": "In", "values": ["nvme"]}]}]
    }
    other = GPUPool.model_validate(
        {
            "metadata": {"name": "nvme-pool"},
            "spec": {"nodeManagerConfig": {"provisioningMode": "AutoSelect", "nodeSelector": selector}},
        }
    )
    plan = plan_autoselect([pod()], [NODE], [TEMPLATE], [NODEPOOL], suffixes=["a"], now=NOW, pool=other)
    assert not [a for a in plan.actions if isinstance(a, CreateNodeClaim)], (
        "n0 (disk=ssd) serves another pool"
    )


def test_labels_karpenter_resolved_for_the_template_are_not_copied() -> None:
    resolved = KARPENTERS_TEMPLATE.model_copy(
        update={
            "metadata": KARPENTERS_TEMPLATE.metadata.model_copy(
                update={
                    "labels": {
                        **KARPENTERS_TEMPLATE.metadata.labels,
                        "kubernetes.io/arch": "amd64",
                        "karpenter.sh/registered": "true",
                        "karpenter.k8s.aws/instance-family": "g5",
                        "topology.kubernetes.io/zone": "us-east-1a",
                    }
                }
            )
        }
    )
    plan = plan_autoselect(
        [pod()], [GPU_NODE], [resolved], [_documented_nodepool("8")], suffixes=["a"], now=NOW
    )
    (create,) = [a for a in plan.actions if isinstance(a, CreateNodeClaim)]
    assert set(create.manifest.metadata.labels) == {
        "karpenter.sh/nodepool",
        "nvidia.com/gpu.present",
        "team",
        "tensor-fusion.ai/expansion-source",
    }


def _joined_expansion_for(pod_key: str) -> KarpenterNodeClaim:
    """An expansion made for `pod_key` whose node n1 registered."""
    return KarpenterNodeClaim.model_validate(
        {
            "metadata": {
                "name": "gpu-x",
                "labels": {"karpenter.sh/nodepool": "gpu", "tensor-fusion.ai/expansion-source": "n0"},
                "annotations": {"gpupool.io/expansion-for": pod_key},
            },
            "spec": TEMPLATE.spec.model_dump(by_alias=True, exclude_none=True),
            "status": {"nodeName": "n1", "conditions": [{"type": "Registered", "status": "True"}]},
        }
    )


def _gpu_on(node: str, *, reported: datetime) -> GPU:
    return GPU.model_validate(
        {
            "metadata": {"name": f"{node}-gpu-0", "creationTimestamp": reported.isoformat()},
            "status": {
                "capacity": {"tflops": "125", "vram": "24Gi"},
                "nodeSelector": {"kubernetes.io/hostname": node},
            },
        }
    )


@pytest.mark.parametrize(("reported_ago", "expands"), [(None, False), (5, False), (30, True), (120, True)])
def test_a_pod_its_joined_expansion_did_not_take_expands_again_after_the_grace(
    reported_ago: int | None, expands: bool
) -> None:
    """The node made for the pod joined; once its GPUs have been reported for PLACEMENT_GRACE
    (10 s) and the pod still waits — the scheduler gave the room to other pods — it is expanded
    for again; before that (or with no GPUs reported yet) the joined node still covers it."""
    gpus = [] if reported_ago is None else [_gpu_on("n1", reported=NOW - timedelta(seconds=reported_ago))]
    plan = plan_autoselect(
        [pod()],
        [NODE],
        [TEMPLATE, _joined_expansion_for("ml/p")],
        [NODEPOOL],
        suffixes=["a"],
        now=NOW,
        gpus=gpus,
    )
    made = [a for a in plan.actions if isinstance(a, CreateNodeClaim)]
    assert bool(made) is expands, plan.reasons
    if expands:
        assert any("no longer counts on it" in r for r in plan.reasons), plan.reasons
