"""AutoSelect against the NodeClaims real Karpenter makes: a template listing every compatible type
(price-ordered, with `minValues`) and no zone, its launched type and zone only in its labels, a
NodePool without a zone requirement. Expansions are pinned to the launched type and zone first,
at most 15 in flight, pass Karpenter's CRD rules, and the candidates after it come from the
NodePool's requirements over the region's zones; a NodeClaim that vanished before registering is
a failed candidate, remembered on the pool for its pod, its offering marked unavailable, and the
next candidate is made in the same round."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from gpupool.core.decisions.autoselect import plan_autoselect
from gpupool.core.decisions.autoselect_candidates import candidates, launched_placement
from gpupool.core.decisions.autoselect_memory import ANNOTATION_EXPANSIONS, read_expansions
from gpupool.core.model.foreign import Node, Pod
from gpupool.core.model.karpenter import KarpenterNodeClaim, KarpenterNodePool
from gpupool.core.model.karpenter_rules import nodeclaim_problems
from gpupool.core.model.pool import GPUPool
from gpupool.core.planning.offerings import catalog_offerings
from gpupool.core.planning.plan import (
    CreateNodeClaim,
    MarkOfferingUnavailable,
    RecordEvent,
    RememberExpansions,
)
from gpupool.core.planning.unavailable import ANNOTATION_UNAVAILABLE_OFFERINGS

NOW = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
OFFERINGS = catalog_offerings("aws", "us-east-1")
REGION_ZONES = sorted({o.zone for o in OFFERINGS if o.zone})
TYPES = ["g4dn.xlarge", "g5.xlarge", "g4dn.2xlarge", "g5.2xlarge", "g6.xlarge"]
REF = {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass", "name": "default"}
TAINT = {"key": "nvidia.com/gpu", "value": "true", "effect": "NoSchedule"}
LAUNCHED = {
    "node.kubernetes.io/instance-type": "g5.xlarge",
    "topology.kubernetes.io/zone": "us-east-1b",
    "karpenter.sh/capacity-type": "on-demand",
}
NODEPOOL = KarpenterNodePool.model_validate(
    {
        "metadata": {"name": "gpu"},
        "spec": {
            "template": {
                "spec": {
                    "nodeClassRef": REF,
                    "requirements": [
                        {
                            "key": "karpenter.k8s.aws/instance-family",
                            "operator": "In",
                            "values": ["g4dn", "g5", "g6"],
                        },
                        {"key": "karpenter.sh/capacity-type", "operator": "In", "values": ["on-demand"]},
                    ],
                }
            }
        },
    }
)


def template(labels: dict[str, str] | None = None, min_values: int | None = 3) -> KarpenterNodeClaim:
    """A NodeClaim as Karpenter's provisioner makes it, launched (its labels say what)."""
    return KarpenterNodeClaim.model_validate(
        {
            "metadata": {
                "name": "gpu-x7k2p",
                "labels": {"karpenter.sh/nodepool": "gpu", **(LAUNCHED if labels is None else labels)},
            },
            "spec": {
                "nodeClassRef": REF,
                "expireAfter": "720h",
                "requirements": [
                    {"key": "karpenter.sh/nodepool", "operator": "In", "values": ["gpu"]},
                    {
                        "key": "node.kubernetes.io/instance-type",
                        "operator": "In",
                        "values": TYPES,
                        **({"minValues": min_values} if min_values else {}),
                    },
                    {"key": "karpenter.sh/capacity-type", "operator": "In", "values": ["on-demand"]},
                    {
                        "key": "karpenter.k8s.aws/instance-family",
                        "operator": "In",
                        "values": ["g4dn", "g5", "g6"],
                    },
                ],
                "resources": {"requests": {"nvidia.com/gpu": "1"}},
                "taints": [TAINT],
            },
            "status": {
                "nodeName": "ip-10-0-1-1.ec2.internal",
                "conditions": [{"type": "Registered", "status": "True"}],
            },
        }
    )


NODE = Node.model_validate(
    {
        "metadata": {
            "name": "ip-10-0-1-1.ec2.internal",
            "labels": {"nvidia.com/gpu.present": "true", "karpenter.sh/nodepool": "gpu", **LAUNCHED},
        },
        "spec": {"taints": [TAINT]},
        "status": {"allocatable": {"cpu": "4", "memory": "16Gi"}},
    }
)


def pod(name: str, **spec: Any) -> Pod:
    return Pod.model_validate(
        {
            "metadata": {"name": name, "namespace": "ml"},
            "spec": {
                "containers": [{"name": "c", "resources": {"requests": {"cpu": "1"}}}],
                "tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists"}],
                **spec,
            },
        }
    )


def pool(annotations: dict[str, str] | None = None) -> GPUPool:
    return GPUPool.model_validate(
        {
            "metadata": {"name": "auto", "annotations": annotations or {}},
            "spec": {"nodeManagerConfig": {"provisioningMode": "AutoSelect"}},
        }
    )


def pinned(nodeclaim: KarpenterNodeClaim) -> tuple[str, str]:
    values = {r.key: r.values for r in nodeclaim.spec.requirements}
    (instance_type,) = values["node.kubernetes.io/instance-type"]
    (zone,) = values["topology.kubernetes.io/zone"]
    return instance_type, zone


def created(plan: Any) -> list[KarpenterNodeClaim]:
    return [a.manifest for a in plan.actions if isinstance(a, CreateNodeClaim)]


def test_thirty_pods_get_expansions_pinned_to_the_launched_type_first_at_most_fifteen() -> None:
    pods = [pod(f"w-{i:02d}") for i in range(30)]
    plan = plan_autoselect(
        pods,
        [NODE],
        [template()],
        [NODEPOOL],
        suffixes=[f"s{i:02d}" for i in range(30)],
        now=NOW,
        pool=pool(),
        offerings=OFFERINGS,
    )
    made = created(plan)
    assert len(made) == 15, "maxInFlightNodes"
    zones = {r.values[0] for n in made for r in n.spec.requirements if r.key == "topology.kubernetes.io/zone"}
    assert zones == {"us-east-1b"}, "the launched zone, from the labels"
    assert "15 pod(s) wait: maxInFlightNodes (15)" in plan.reasons[-1]
    for nodeclaim in made:
        assert nodeclaim_problems(nodeclaim) == [], "Karpenter's API server accepts it"
        (types,) = [r for r in nodeclaim.spec.requirements if r.key == "node.kubernetes.io/instance-type"]
        assert (types.values, types.min_values) == (TYPES, 3), (
            "minValues 3 on the instance type: never pinned to one (Karpenter would delete it)"
        )
        capacity = [r.values for r in nodeclaim.spec.requirements if r.key == "karpenter.sh/capacity-type"]
        assert capacity == [["on-demand"]], "the launched capacity type"
        assert nodeclaim.metadata.labels == {
            "karpenter.sh/nodepool": "gpu",
            "tensor-fusion.ai/expansion-source": NODE.name,
        }, "not the launched labels: Karpenter writes those"
        assert "karpenter.sh/do-not-disrupt" not in nodeclaim.metadata.annotations
    (remember,) = [a for a in plan.actions if isinstance(a, RememberExpansions)]
    assert len(json.loads(remember.expansions)) == 15


def test_the_template_requirements_are_read_only_without_launched_labels() -> None:
    unlabelled = template(labels={})
    bare = Node.model_validate({"metadata": {"name": NODE.name}})
    assert launched_placement(unlabelled, bare)["node.kubernetes.io/instance-type"] == "g4dn.xlarge"
    assert launched_placement(template(), bare)["node.kubernetes.io/instance-type"] == "g5.xlarge"


def test_after_the_launched_type_come_the_nodepools_types_over_the_regions_zones() -> None:
    found = candidates(pod("p"), template(), NODE, NODEPOOL, OFFERINGS)
    assert found[0] == ("g5.xlarge", "us-east-1b")
    assert {z for t, z in found if t == "g5.xlarge"} == set(REGION_ZONES), (
        "no zone named: every zone of the region"
    )
    assert {t.split(".")[0] for t, _ in found} <= {"g4dn", "g5", "g6"}, "the NodePool's families only"
    narrowed = candidates(
        pod("p", nodeSelector={"topology.kubernetes.io/zone": "us-east-1a"}),
        template(),
        NODE,
        NODEPOOL,
        OFFERINGS,
    )
    assert narrowed and {z for _, z in narrowed} == {"us-east-1a"}


@pytest.mark.parametrize(
    ("requirement", "kept"),
    [
        ({"key": "node.kubernetes.io/instance-type", "operator": "NotIn", "values": ["g5.xlarge"]}, False),
        ({"key": "karpenter.k8s.aws/instance-gpu-count", "operator": "Gte", "values": ["2"]}, False),
        ({"key": "karpenter.k8s.aws/instance-gpu-count", "operator": "Lte", "values": ["1"]}, True),
        ({"key": "topology.kubernetes.io/zone", "operator": "In", "values": ["us-east-1c"]}, True),
    ],
)
def test_every_nodepool_operator_narrows_the_candidates(requirement: dict[str, str], kept: bool) -> None:
    narrowed = NODEPOOL.model_copy(deep=True)
    narrowed.spec.template.spec.requirements.append(
        KarpenterNodePool.model_validate(
            {"metadata": {"name": "x"}, "spec": {"template": {"spec": {"requirements": [requirement]}}}}
        ).spec.template.spec.requirements[0]
    )
    found = candidates(pod("p"), template(), NODE, narrowed, OFFERINGS)
    assert any(t == "g5.xlarge" for t, _ in found) is kept
    if requirement["key"] == "topology.kubernetes.io/zone":
        assert {z for _, z in found} <= {"us-east-1b", "us-east-1c"}


def test_a_vanished_expansion_is_a_failed_candidate_and_the_next_is_made_in_the_same_round() -> None:
    """Without `minValues` an expansion is pinned to one candidate (type × zone)."""
    first = plan_autoselect(
        [pod("w-0")],
        [NODE],
        [template(min_values=None)],
        [NODEPOOL],
        suffixes=["a"],
        now=NOW,
        pool=pool(),
        offerings=OFFERINGS,
    )
    (made,) = created(first)
    (remember,) = [a for a in first.actions if isinstance(a, RememberExpansions)]
    remembered = pool({ANNOTATION_EXPANSIONS: remember.expansions})
    still = plan_autoselect(
        [pod("w-0")],
        [NODE],
        [template(min_values=None), made],
        [NODEPOOL],
        suffixes=["b"],
        now=NOW,
        pool=remembered,
        offerings=OFFERINGS,
    )
    assert created(still) == [], "in flight: nothing new"
    later = NOW + timedelta(seconds=30)
    gone = plan_autoselect(  # Karpenter deleted it for InsufficientCapacity
        [pod("w-0")],
        [NODE],
        [template(min_values=None)],
        [NODEPOOL],
        suffixes=["b"],
        now=later,
        pool=remembered,
        offerings=OFFERINGS,
    )
    (next_one,) = created(gone)
    assert pinned(next_one) != pinned(made) and pinned(next_one)[0] == "g5.xlarge", (
        "the launched type, another zone"
    )
    (mark,) = [a for a in gone.actions if isinstance(a, MarkOfferingUnavailable)]
    assert (mark.offering_key, mark.until) == ("g5.xlarge/us-east-1b/OnDemand", later + timedelta(minutes=3))
    failed = [a for a in gone.actions if isinstance(a, RecordEvent) and a.reason == "NodeExpansionFailed"]
    assert failed and "deleted before its node registered" in failed[0].message
    (remember,) = [a for a in gone.actions if isinstance(a, RememberExpansions)]
    memory = read_expansions(pool({ANNOTATION_EXPANSIONS: remember.expansions}))
    assert memory["ml/w-0"].tried == ("g5.xlarge/us-east-1b",) and memory["ml/w-0"].nodeclaim == next_one.name


def test_an_offering_the_pool_remembers_as_unavailable_is_skipped_for_every_pod() -> None:
    until = (NOW + timedelta(minutes=2)).isoformat()
    blocked = pool({ANNOTATION_UNAVAILABLE_OFFERINGS: json.dumps({"g5.xlarge/us-east-1b/OnDemand": until})})
    plan = plan_autoselect(
        [pod("w-0"), pod("w-1")],
        [NODE],
        [template(min_values=None)],
        [NODEPOOL],
        suffixes=["a", "b"],
        now=NOW,
        pool=blocked,
        offerings=OFFERINGS,
    )
    assert len(created(plan)) == 2
    assert all(pinned(n) != ("g5.xlarge", "us-east-1b") for n in created(plan))


def test_a_pod_no_longer_pending_is_forgotten() -> None:
    first = plan_autoselect(
        [pod("w-0")],
        [NODE],
        [template()],
        [NODEPOOL],
        suffixes=["a"],
        now=NOW,
        pool=pool(),
        offerings=OFFERINGS,
    )
    (remember,) = [a for a in first.actions if isinstance(a, RememberExpansions)]
    placed = plan_autoselect(
        [],
        [NODE],
        [template()],
        [NODEPOOL],
        suffixes=[],
        now=NOW,
        pool=pool({ANNOTATION_EXPANSIONS: remember.expansions}),
        offerings=OFFERINGS,
    )
    assert [a for a in placed.actions if isinstance(a, RememberExpansions)] == [
        RememberExpansions(pool="auto", expansions="")
    ]
