"""non_gpu_blocker and the candidate narrowing of plan_autoselect: what makes a pod need more than
GPU capacity, and how required affinity narrows instance type and zone."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from gpupool.core.decisions.autoselect import non_gpu_blocker, plan_autoselect
from gpupool.core.model.foreign import Node, Pod
from gpupool.core.model.karpenter import KarpenterNodeClaim, KarpenterNodePool
from gpupool.core.planning.plan import CreateNodeClaim

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
