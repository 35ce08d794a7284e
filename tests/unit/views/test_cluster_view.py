"""The status view's facts, computed from typed objects and a fixed `now` (table tests): claims
stuck past the lifecycle timeouts, NodeClaim phases from Karpenter's conditions, capacity / gap /
cost equal to the launch function's gauges, the budget and its overrun, node flags and GPU bars,
prices, the Events that belong to a pool, AutoSelect pools owning their expansions, an unknown
pool, GPU nodes in no pool, and the JSON form."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest

from gpupool.core.decisions.lifecycle.facts import LifecyclePolicy
from gpupool.core.model.constants import (
    ANNOTATION_GPU_MISSING_SINCE,
    ANNOTATION_HOURLY_PRICING,
    ANNOTATION_KARPENTER_DO_NOT_DISRUPT,
    LABEL_DO_NOT_DISRUPT,
    LABEL_ORPHAN,
    LABEL_SHOULD_DELETE,
)
from gpupool.core.model.event import Event
from gpupool.core.model.foreign import Node, NodeTaint, Pod
from gpupool.core.model.karpenter import KarpenterNodeClaim
from gpupool.core.model.node import GPU
from gpupool.core.model.pool import GPUPool
from gpupool.core.planning.membership import ClusterObjects, pool_snapshot
from gpupool.core.planning.pool_gauges import measure_pool
from gpupool.core.views.claims import claim_view, nodeclaim_phase, nodeclaim_view
from gpupool.core.views.cluster import ClusterRead, UnknownPool, cluster_view
from gpupool.core.views.facts import duration_text
from tests.unit.decisions.builders import NOW, claim, gpu_node, node, pool

POLICY = LifecyclePolicy()


def _with(obj: Any, **metadata: Any) -> Any:
    return obj.model_copy(update={"metadata": obj.metadata.model_copy(update=metadata)})


def _budget_pool(budget: dict[str, str] | None, **kwargs: Any) -> GPUPool:
    data = pool(**kwargs).model_dump(by_alias=True, mode="json")
    if budget is not None:
        data["spec"]["nodeManagerConfig"]["nodeProvisioner"]["budget"] = budget
    return GPUPool.model_validate(data)


@pytest.mark.parametrize(
    ("phase", "age", "phase_age", "stuck"),
    [
        ("Pending", timedelta(minutes=4), None, None),
        ("Pending", timedelta(minutes=6), None, "Pending for 6m: past the 5m launch timeout"),
        ("Creating", timedelta(minutes=14), None, None),
        ("Creating", timedelta(minutes=16), None, "Creating for 16m: past the 15m registration timeout"),
        ("Bound", timedelta(days=3), None, None),
        ("Failed", timedelta(hours=1), timedelta(minutes=9), None),
        ("Failed", timedelta(hours=1), timedelta(minutes=11), "Failed for 11m: kept past the 10m retention"),
    ],
)
def test_a_claim_is_stuck_once_past_the_time_its_lifecycle_gives_it(
    phase: str, age: timedelta, phase_age: timedelta | None, stuck: str | None
) -> None:
    shown = claim_view(claim(phase=phase, age=age, phase_age=phase_age), node=None, now=NOW, policy=POLICY)
    assert shown.phase == phase and shown.stuck == stuck
    assert shown.age_seconds == int(age.total_seconds())


def test_a_deletion_is_stuck_after_fifteen_minutes_and_an_interruption_is_the_reason() -> None:
    going = _with(claim(phase="Bound"), deletion_timestamp=NOW - timedelta(minutes=20))
    shown = claim_view(going, node="n1", now=NOW, policy=POLICY)
    assert shown.phase == "Deleting" and shown.node == "n1"
    assert shown.stuck == "deleting for 20m: a finalizer holds it past 15m"
    recent = claim_view(_with(going, deletion_timestamp=NOW), node=None, now=NOW, policy=POLICY)
    assert recent.stuck is None
    hit = claim(phase="Bound", annotations={"gpupool.io/interrupted": "spot 2026-01-01T11:59:00Z"})
    assert (
        claim_view(hit, node=None, now=NOW, policy=POLICY).reason == "interrupted: spot 2026-01-01T11:59:00Z"
    )


def nodeclaim(
    name: str = "gpu-1",
    *,
    conditions: dict[str, str] | None = None,
    age: timedelta = timedelta(minutes=2),
    pool_name: str = "auto",
    node_name: str | None = None,
    price: str | None = "0.526",
) -> KarpenterNodeClaim:
    annotations = {"gpupool.io/expansion-pool": pool_name, "gpupool.io/expansion-for": "default/w"}
    if price is not None:
        annotations[ANNOTATION_HOURLY_PRICING] = price
    return KarpenterNodeClaim.model_validate(
        {
            "metadata": {
                "name": name,
                "labels": {"karpenter.sh/nodepool": "gpu", "tensor-fusion.ai/expansion-source": "seed"},
                "annotations": annotations,
                "creationTimestamp": (NOW - age).isoformat(),
            },
            "spec": {
                "requirements": [
                    {"key": "node.kubernetes.io/instance-type", "operator": "In", "values": ["g4dn.xlarge"]},
                    {"key": "topology.kubernetes.io/zone", "operator": "In", "values": ["us-east-1a"]},
                ]
            },
            "status": {
                "conditions": [
                    {"type": k, "status": v, "reason": "Why"} for k, v in (conditions or {}).items()
                ],
                **({"nodeName": node_name} if node_name else {}),
            },
        }
    )


@pytest.mark.parametrize(
    ("conditions", "phase"),
    [
        ({}, "Pending"),
        ({"Launched": "True"}, "Launched"),
        ({"Launched": "True", "Registered": "True"}, "Registered"),
        ({"Launched": "True", "Registered": "True", "Initialized": "True"}, "Initialized"),
        ({"Launched": "False"}, "Failed"),
        ({"Launched": "Unknown"}, "Pending"),
    ],
)
def test_a_nodeclaims_phase_is_the_furthest_karpenter_condition(
    conditions: dict[str, str], phase: str
) -> None:
    assert nodeclaim_phase(nodeclaim(conditions=conditions)) == phase


def test_an_expansion_not_registered_in_fifteen_minutes_is_stuck() -> None:
    late = nodeclaim_view(
        nodeclaim(conditions={"Launched": "True"}, age=timedelta(minutes=16)), now=NOW, policy=POLICY
    )
    assert late.stuck == "not registered after 16m: past the 15m timeout"
    assert (late.instance_type, late.zone, late.hourly_price) == ("g4dn.xlarge", "us-east-1a", 0.526)
    joined = nodeclaim(conditions={"Launched": "True", "Registered": "True"}, age=timedelta(minutes=16))
    assert nodeclaim_view(joined, now=NOW, policy=POLICY).stuck is None


def _read(the_pool: GPUPool, **parts: Any) -> ClusterRead:
    return ClusterRead(pools=[the_pool], **parts)


def test_capacity_gap_and_cost_are_the_numbers_the_launch_function_emits() -> None:
    the_pool = _budget_pool(
        {"budgetPerDay": "24"}, min_=("130", "32Gi"), warm=("20", "4Gi"), max_=("520", "128Gi")
    )
    claims = [claim("pool-a-1", phase="Bound"), claim("pool-a-2", phase="Creating")]
    nodes = [node("n1", claim_name="pool-a-1")]
    gpu_nodes = [gpu_node("n1", available=("13", "8Gi"))]
    view = cluster_view(_read(the_pool, claims=claims, nodes=nodes, gpu_nodes=gpu_nodes), now=NOW)
    [shown] = view.pools
    gauges = measure_pool(pool_snapshot("", the_pool, ClusterObjects(claims, nodes, gpu_nodes)))
    assert (shown.tflops.gap, shown.vram.gap) == (gauges.gap_tflops, gauges.gap_vram_bytes)
    assert shown.hourly_cost == gauges.hourly_cost == 1.052
    assert shown.budget is not None and shown.budget.use_percent == gauges.budget_use_percent == 105.2
    assert (shown.tflops.total, shown.tflops.available, shown.tflops.in_flight) == (65.0, 13.0, 65.0)
    assert (shown.tflops.minimum, shown.tflops.warm, shown.tflops.maximum) == (130.0, 20.0, 520.0)
    assert shown.vram.minimum == 32 * 2**30
    assert shown.claims_by_phase == {"Bound": 1, "Creating": 1}
    assert (shown.nodes, shown.ready_nodes, shown.gpus, shown.node_names) == (1, 1, 1, ("n1",))
    assert "hourly cost $1.052 passes the budgetPerDay ceiling $1.000/h (AlertOnly)" in shown.warnings


def test_an_unreadable_budget_and_max_reached_are_warnings() -> None:
    the_pool = _budget_pool({"budgetPerDay": "lots"}, min_=("130", "32Gi"), max_=("65", "16Gi"))
    [shown] = cluster_view(_read(the_pool, claims=[claim("pool-a-1", phase="Bound")]), now=NOW).pools
    assert shown.budget is None and shown.max_reached
    assert any(
        w.startswith("nodeProvisioner.budget cannot be read: budgetPerDay 'lots'") for w in shown.warnings
    )
    assert any(w.startswith("MaxResourceConstraintReached") for w in shown.warnings)


def test_status_conditions_budget_exceeded_waiting_pods_and_bad_nodes_are_warnings() -> None:
    status = {
        "phase": "Pending",
        "budgetExceeded": "budgetPerDay",
        "conditions": [{"type": "CapacitySatisfied", "status": "False", "message": "below min"}],
    }
    the_pool = pool(status=status)
    waiting = Pod.model_validate(
        {
            "metadata": {
                "name": "w",
                "namespace": "ml",
                "labels": {"tensor-fusion.ai/enabled": "true"},
                "annotations": {"tensor-fusion.ai/gpupool": "pool-a"},
            },
            "status": {
                "conditions": [{"type": "PodScheduled", "status": "False", "reason": "Unschedulable"}]
            },
        }
    )
    not_running = gpu_node("n2").model_copy(
        update={"status": gpu_node("n2").status.model_copy(update={"phase": "Unknown"})}  # type: ignore[union-attr]
    )
    read = _read(
        the_pool,
        claims=[claim("pool-a-1", phase="Bound"), claim("pool-a-2", phase="Bound")],
        nodes=[node("n1", claim_name="pool-a-1", ready=False), node("n2", claim_name="pool-a-2")],
        gpu_nodes=[gpu_node("n1"), not_running],
        pods=[waiting],
    )
    [shown] = cluster_view(read, now=NOW).pools
    assert shown.warnings[:5] == (
        "CapacitySatisfied: below min",
        "budget exceeded: budgetPerDay",
        "node n1 is not Ready",
        "node n2: GPUNode is Unknown, its GPUs are no capacity",
        "1 pod(s) wait for GPU capacity",
    )


def event(kind: str, name: str, reason: str, minutes_ago: int, *, namespace: str | None = None) -> Event:
    return Event.model_validate(
        {
            "metadata": {"name": f"{name}.{reason}", "namespace": namespace or "default"},
            "involvedObject": {"kind": kind, "name": name, **({"namespace": namespace} if namespace else {})},
            "reason": reason,
            "message": f"{reason} happened",
            "type": "Warning" if reason.endswith("Failed") else "Normal",
            "count": 2,
            "lastTimestamp": (NOW - timedelta(minutes=minutes_ago)).isoformat(),
        }
    )


def test_decisions_are_the_newest_events_about_the_pool_its_claims_nodes_and_pods() -> None:
    pod = Pod.model_validate(
        {"metadata": {"name": "w", "namespace": "ml", "annotations": {"tensor-fusion.ai/gpupool": "pool-a"}}}
    )
    events = [
        event("GPUPool", "pool-a", "Compaction", 5),
        event("GPUNodeClaim", "pool-a-1", "ManagedNodeCreated", 9),
        event("GPUNodeClaim", "pool-a-0ld", "NodeLaunchFailed", 1),  # a claim since deleted, by its name
        event("Node", "n1", "NodeInterrupted", 3),
        event("Pod", "w", "NodeExpansionCheck", 7, namespace="ml"),
        event("GPUPool", "pool-b", "Compaction", 0),
        event("Node", "elsewhere", "NodeInterrupted", 0),
        event("Pod", "w", "NodeExpansionCheck", 0, namespace="other"),
    ]
    read = _read(
        pool(),
        claims=[claim("pool-a-1", phase="Bound")],
        nodes=[node("n1", claim_name="pool-a-1")],
        pods=[pod],
        events=events,
    )
    [shown] = cluster_view(read, now=NOW).pools
    assert [(d.object, d.reason) for d in shown.decisions] == [
        ("GPUNodeClaim/pool-a-0ld", "NodeLaunchFailed"),
        ("Node/n1", "NodeInterrupted"),
        ("GPUPool/pool-a", "Compaction"),
        ("Pod/ml/w", "NodeExpansionCheck"),
        ("GPUNodeClaim/pool-a-1", "ManagedNodeCreated"),
    ]
    assert shown.decisions[0].count == 2 and shown.decisions[0].at == NOW - timedelta(minutes=1)
    assert "NodeLaunchFailed (GPUNodeClaim/pool-a-0ld): NodeLaunchFailed happened" in shown.warnings


def _gpu(name: str, host: str, *, available: str = "65", missing: bool = False, index: int = 0) -> GPU:
    return GPU.model_validate(
        {
            "metadata": {
                "name": name,
                "labels": {"tensor-fusion.ai/gpupool": "pool-a"},
                "annotations": {ANNOTATION_GPU_MISSING_SINCE: "2026-01-01T11:00:00Z"} if missing else {},
            },
            "status": {
                "phase": "Running",
                "capacity": {"tflops": "65", "vram": "16Gi"},
                "available": {"tflops": available, "vram": "16Gi"},
                "index": index,
                "gpuModel": "T4",
                "nodeSelector": {"kubernetes.io/hostname": host},
            },
        }
    )


def test_a_nodes_gpus_come_from_its_gpu_objects_else_from_its_gpunode() -> None:
    read = _read(
        pool(),
        claims=[claim("pool-a-1", phase="Bound"), claim("pool-a-2", phase="Bound")],
        nodes=[node("n1", claim_name="pool-a-1"), node("n2", claim_name="pool-a-2")],
        gpu_nodes=[gpu_node("n1"), gpu_node("n2", available=("32.5", "16Gi"))],
        gpus=[_gpu("g1", "n1", available="16.25", index=1), _gpu("g0", "n1", missing=True)],
    )
    n1, n2 = cluster_view(read, now=NOW).nodes
    assert [g.name for g in n1.gpus] == ["g0", "g1"] and [g.usable for g in n1.gpus] == [False, True]
    assert n1.gpus[1].allocated_share == 0.75 and "gpu-unusable" in n1.flags
    assert len(n2.gpus) == 1 and n2.gpus[0].allocated_share == 0.5 and n2.flags == ()
    assert (n1.instance_type, n1.capacity_type, n1.hourly_price, n1.age_seconds) == (
        None,
        "OnDemand",
        0.526,
        3600,
    )
    assert n1.gpu_model == "T4" and n1.claim == "pool-a-1" and n1.pool == "pool-a"


def _flagged(n: Node, **parts: Any) -> tuple[str, ...]:
    read = _read(pool(), nodes=[n], gpu_nodes=parts.pop("gpu_nodes", [gpu_node(n.name)]), **parts)
    [shown] = cluster_view(read, now=NOW).nodes
    return shown.flags


def test_node_flags() -> None:
    base = node("n1", claim_name="pool-a-1")
    bound = claim("pool-a-1", phase="Bound")
    assert _flagged(base, claims=[bound]) == ()
    cordoned = base.model_copy(update={"spec": base.spec.model_copy(update={"unschedulable": True})})
    assert _flagged(cordoned, claims=[bound]) == ("cordoned",)
    going = _with(bound, deletion_timestamp=NOW)
    assert _flagged(cordoned, claims=[going]) == ("cordoned", "draining")
    hit = claim("pool-a-1", phase="Bound", annotations={"gpupool.io/interrupted": "spot"})
    assert _flagged(cordoned, claims=[hit]) == ("cordoned", "draining", "interrupted")
    disrupted = base.model_copy(
        update={
            "spec": base.spec.model_copy(
                update={"taints": [NodeTaint(key="karpenter.sh/disrupted", effect="NoSchedule")]}
            )
        }
    )
    assert _flagged(disrupted, claims=[bound]) == ("draining",)
    labelled = _with(base, labels={**base.metadata.labels, LABEL_SHOULD_DELETE: "true", LABEL_ORPHAN: "true"})
    assert _flagged(labelled, claims=[bound]) == ("should-delete", "orphan")
    protected = _with(base, annotations={LABEL_DO_NOT_DISRUPT: "true"})
    assert _flagged(protected, claims=[bound]) == ("do-not-disrupt",)
    karpenter = _with(base, annotations={ANNOTATION_KARPENTER_DO_NOT_DISRUPT: "true"})
    assert _flagged(karpenter, claims=[bound]) == ("do-not-disrupt",)
    assert _flagged(node("n1", claim_name="pool-a-1", ready=False), claims=[bound]) == ("not-ready",)


def test_price_falls_back_to_the_gpunodes_cost_per_hour() -> None:
    seed = node("seed", claim_name=None, labels={"nvidia.com/gpu.present": "true"})
    priced = gpu_node("seed").model_copy(
        update={"spec": gpu_node("seed").spec.model_copy(update={"cost_per_hour": "$1.25"})}
    )
    [shown] = cluster_view(ClusterRead(nodes=[seed], gpu_nodes=[priced]), now=NOW).nodes
    assert shown.hourly_price == 1.25 and shown.pool is None


def test_an_autoselect_pool_owns_its_expansions_their_nodes_and_their_cost() -> None:
    auto = GPUPool.model_validate(
        {"metadata": {"name": "auto"}, "spec": {"nodeManagerConfig": {"provisioningMode": "AutoSelect"}}}
    )
    joined = nodeclaim("gpu-1", conditions={"Launched": "True", "Registered": "True"}, node_name="n1")
    failed = nodeclaim("gpu-2", conditions={"Launched": "False"}, price="9")
    other = nodeclaim("gpu-3", pool_name="someone-else", price="5")
    n1 = node("n1", claim_name=None, labels={"node.kubernetes.io/instance-type": "g4dn.xlarge"})
    read = ClusterRead(
        pools=[auto], nodes=[n1], gpu_nodes=[gpu_node("n1")], nodeclaims=[joined, failed, other]
    )
    view = cluster_view(read, now=NOW)
    [shown] = view.pools
    assert [c.name for c in shown.claims] == ["gpu-1", "gpu-2"] and shown.claims_by_phase == {
        "Failed": 1,
        "Registered": 1,
    }
    assert shown.hourly_cost == 0.526  # the failed one has no instance; the other pool's is not ours
    assert shown.node_names == ("n1",) and shown.tflops.total == 65.0
    [node_shown] = view.nodes
    assert (
        node_shown.claim == "gpu-1"
        and node_shown.hourly_price == 0.526
        and node_shown.instance_type == "g4dn.xlarge"
    )


def test_an_unknown_pool_names_the_pools_there_are() -> None:
    read = ClusterRead(pools=[pool()])
    with pytest.raises(UnknownPool, match=r"no GPUPool named 'nope' in this cluster \(pools: pool-a\)"):
        cluster_view(read, now=NOW, pool="nope")
    with pytest.raises(UnknownPool, match=r"\(pools: none\)"):
        cluster_view(ClusterRead(), now=NOW, pool="nope")


def test_gpu_nodes_in_no_pool_are_listed_unless_one_pool_is_asked_for() -> None:
    seed = node("seed", claim_name=None, labels={"nvidia.com/gpu.present": "true"})
    cpu = node("cpu", claim_name=None)
    read = _read(
        pool(),
        claims=[claim("pool-a-1", phase="Bound")],
        nodes=[node("n1", claim_name="pool-a-1"), seed, cpu],
    )
    assert [(n.name, n.pool) for n in cluster_view(read, now=NOW).nodes] == [("n1", "pool-a"), ("seed", None)]
    assert [n.name for n in cluster_view(read, now=NOW, pool="pool-a").nodes] == ["n1"]


def test_the_json_form_names_every_fact() -> None:
    read = _read(
        pool(),
        claims=[claim("pool-a-1", phase="Bound")],
        nodes=[node("n1", claim_name="pool-a-1")],
        gpu_nodes=[gpu_node("n1")],
        unreadable=["GPU/x cannot be read"],
    )
    body = cluster_view(read, now=NOW).to_json()
    assert body["generated_at"] == "2026-01-01T12:00:00Z" and body["unreadable"] == ["GPU/x cannot be read"]
    [the_pool] = body["pools"]
    assert the_pool["tflops"] == {
        "total": 65.0,
        "available": 65.0,
        "in_flight": 0.0,
        "min": 130.0,
        "warm": None,
        "max": None,
        "gap": 65.0,
    }
    assert the_pool["claims"][0]["created"] == "2026-01-01T11:59:00Z" and the_pool["claims_by_phase"] == {
        "Bound": 1
    }
    assert set(the_pool) >= {"mode", "phase", "vram_bytes", "hourly_cost", "budget", "warnings", "decisions"}
    [the_node] = body["nodes"]
    assert the_node["gpus"][0]["vram_bytes"] == {"total": 16 * 2**30, "available": 16 * 2**30}


@pytest.mark.parametrize(
    ("seconds", "text"),
    [
        (None, "—"),
        (0, "0s"),
        (119, "119s"),
        (120, "2m"),
        (3599, "59m"),
        (3600, "1h0m"),
        (10799, "2h59m"),
        (10800, "3h"),
        (172800, "2d0h"),
    ],
)
def test_durations_read_like_kubectl_ages(seconds: int | None, text: str) -> None:
    assert duration_text(seconds) == text


def test_conditions_from_karpenter_carry_their_failure_reason() -> None:
    failed = nodeclaim(conditions={"Launched": "False"})
    assert nodeclaim_view(failed, now=NOW, policy=POLICY).reason == "Why"
