"""Launch service against in-memory fakes: idempotent under duplicate and concurrent events,
crash-safe between steps, falls back on capacity errors, reports exhaustion and max.

Each test asserts end state in the fakes (claims, instances, events), not call sequences.
"""

from __future__ import annotations

import threading
from datetime import timedelta

import pytest

from gpupool.core.intake.causes import InstanceStateChanged, Reconcile
from gpupool.core.model.cluster import TensorFusionCluster
from gpupool.core.model.constants import (
    ANNOTATION_HOURLY_PRICING,
    FINALIZER,
    LABEL_CLUSTER,
    LABEL_MANAGED_BY,
    LABEL_NODE_CLASS,
    pool_label,
)
from gpupool.core.planning.unavailable import ANNOTATION_UNAVAILABLE_OFFERINGS
from gpupool.core.quantity import Quantity
from gpupool.service.bind import handle_bind
from gpupool.service.errors import PermanentError, Throttled
from gpupool.service.launch import handle_launch
from tests.service.fakes import OFFERINGS, Crash, World, make_pool


def reconcile(event_id: str = "evt-1", pool: str | None = None) -> Reconcile:
    return Reconcile(pool=pool, trigger="schedule", event_id=event_id)


def live_claim_types(world: World) -> list[str]:
    return sorted(c.spec.instance_type or "" for c in world.claims(live_only=True))


def test_gap_becomes_claims_then_instances_with_tensorfusion_labels() -> None:
    world = World(make_pool())
    outcome = handle_launch(reconcile(), world.deps)
    assert outcome.errors == []
    claims = world.claims()
    # min 130 TFLOPS / 32Gi: two g4dn.xlarge (65, 16Gi, $0.526) is the cheapest cover.
    assert live_claim_types(world) == ["g4dn.xlarge", "g4dn.xlarge"]
    for claim in claims:
        assert claim.status is not None and claim.status.phase == "Creating"
        assert claim.status.instance_id in world.compute.instances
        labels = claim.metadata.labels
        assert labels[LABEL_MANAGED_BY] == "pool-a" and labels[pool_label("pool-a")] == "true"
        assert labels[LABEL_CLUSTER] == "demo" and labels[LABEL_NODE_CLASS] == "gpu-class"
        assert claim.metadata.annotations[ANNOTATION_HOURLY_PRICING] == "0.526"
        assert FINALIZER in claim.metadata.finalizers
    tokens = {args[2] for name, args in world.compute.calls if name == "launch"}
    assert tokens == {c.metadata.uid for c in claims}, "ClientToken is the claim uid"
    assert len(world.compute.live()) == 2


def test_one_event_delivered_ten_times_launches_exactly_what_the_gap_needs() -> None:
    world = World(make_pool())
    for _ in range(10):
        outcome = handle_launch(reconcile("same-event"), world.deps)
        assert outcome.errors == []
    assert len(world.claims()) == 2
    assert len(world.compute.live()) == 2
    assert sorted(i.claim_name or "" for i in world.compute.live()) == sorted(c.name for c in world.claims())


@pytest.mark.parametrize("shared_deps", [False, True], ids=["own-deps", "one-shared-deps"])
def test_eight_concurrent_invocations_never_pass_the_gap_or_max(shared_deps: bool) -> None:
    world = World(make_pool(min_tflops="260", min_vram="64Gi", max_tflops="260", max_vram="64Gi"))
    world.cluster.read_delay = 0.02  # every invocation reads claims while the others do
    barrier = threading.Barrier(8)
    errors: list[BaseException] = []

    def invoke(index: int) -> None:
        try:
            barrier.wait()
            deps = world.deps if shared_deps else world.with_holder(f"holder-{index}")
            handle_launch(reconcile(f"evt-{index}"), deps)
        except BaseException as error:  # pragma: no cover - surfaced below
            errors.append(error)

    threads = [threading.Thread(target=invoke, args=(i,)) for i in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    # Whatever interleaving happened, later invocations see what earlier ones recorded.
    for index in range(3):
        handle_launch(reconcile(f"after-{index}"), world.with_holder(f"late-{index}"))
    offered = sum((c.spec.tflops_offered for c in world.claims()), start=Quantity(0))
    assert len(world.claims()) == 4  # 4 × g4dn.xlarge = 260 TFLOPS / 64Gi exactly
    assert offered.value == 260
    assert len(world.compute.live()) == 4


@pytest.mark.parametrize(
    ("method", "when"),
    [
        ("create_claim", "after"),  # claim recorded, function dies before launching
        ("launch", "after"),  # RunInstances done, function dies before recording the id
        ("update_claim_status", "before"),  # dies right before the status update
    ],
)
def test_a_crash_between_steps_is_finished_by_the_next_invocation(method: str, when: str) -> None:
    world = World(make_pool(min_tflops="65", min_vram="16Gi"))
    fake = world.compute if method == "launch" else world.cluster
    if when == "after":
        fake.crash_after(method)
    else:
        # the status update right after a launch: the first update_claim_status marks Pending,
        # the second records Creating — crash on the second.
        original = world.cluster.update_claim_status
        seen = {"count": 0}

        def crashing(name, status, *, resource_version):  # type: ignore[no-untyped-def]
            if status.phase == "Creating" and seen["count"] == 0:
                seen["count"] += 1
                raise Crash("crash before the Creating status update")
            return original(name, status, resource_version=resource_version)

        world.cluster.update_claim_status = crashing  # type: ignore[method-assign]
    with pytest.raises(Crash):
        handle_launch(reconcile("first"), world.deps)
    world.clock.advance(timedelta(seconds=30))
    outcome = handle_launch(reconcile("second"), world.deps)
    assert outcome.errors == []
    claims = world.claims()
    assert len(claims) == 1, "no duplicate claim"
    assert len(world.compute.instances) == 1, "no duplicate or orphaned instance"
    (instance,) = world.compute.instances.values()
    assert claims[0].status is not None and claims[0].status.phase == "Creating"
    assert claims[0].status.instance_id == instance.instance_id
    assert instance.claim_name == claims[0].name


def test_capacity_error_on_cheapest_falls_back_to_next_offering_and_is_remembered() -> None:
    world = World(make_pool(min_tflops="65", min_vram="16Gi"))
    world.compute.no_capacity.add("g4dn.xlarge/us-east-1a/OnDemand")
    outcome = handle_launch(reconcile(), world.deps)
    assert outcome.errors == []
    assert live_claim_types(world) == ["g6.xlarge"]
    assert len(world.compute.live()) == 1
    failed = [c for c in world.claims() if c.status and c.status.phase == "Failed"]
    assert [c.status.reason for c in failed if c.status] == ["InsufficientCapacity"]
    memory = world.pool().metadata.annotations[ANNOTATION_UNAVAILABLE_OFFERINGS]
    assert "g4dn.xlarge/us-east-1a/OnDemand" in memory
    # Kept in the pool, not in memory: a later invocation within 3 minutes does not retry it.
    world.compute.no_capacity.clear()
    lost = world.compute.live()[0].instance_id
    world.compute.set_state(lost, "terminated")
    handle_bind(InstanceStateChanged(instance_id=lost, state="terminated", event_id="ec2-1"), world.deps)
    handle_launch(reconcile("later"), world.deps)
    assert [k for _, k in world.compute.launched] == ["g6.xlarge/us-east-1a/OnDemand"] * 2


def test_every_offering_exhausted_fails_the_claim_and_warns() -> None:
    world = World(make_pool(min_tflops="65", min_vram="16Gi"))
    world.compute.no_capacity.update(
        {"g4dn.xlarge/us-east-1a/OnDemand", "g6.xlarge/us-east-1a/OnDemand", "g5.xlarge/us-east-1a/OnDemand"}
    )
    outcome = handle_launch(reconcile(), world.deps)
    assert outcome.errors == []
    assert world.compute.live() == []
    assert world.claims(live_only=True) == []
    assert {c.status.phase for c in world.claims() if c.status} == {"Failed"}
    warnings = world.cluster.events_with("NodeLaunchFailed")
    assert warnings and all(e["type"] == "Warning" for e in warnings)


def test_permanent_launch_error_fails_the_claim_with_the_message() -> None:
    world = World(make_pool(min_tflops="65", min_vram="16Gi"))
    world.compute.fail_next("launch", PermanentError("InvalidParameterValue: bad subnet"))
    handle_launch(reconcile(), world.deps)
    (claim,) = world.claims()
    assert claim.status is not None and claim.status.phase == "Failed"
    assert "bad subnet" in (claim.status.message or "")
    assert world.cluster.events_with("NodeLaunchFailed")


def test_throttling_is_retryable_and_leaves_the_claim_pending_for_the_next_invocation() -> None:
    world = World(make_pool(min_tflops="65", min_vram="16Gi"))
    world.compute.fail_next("launch", Throttled("RequestLimitExceeded"))
    outcome = handle_launch(reconcile(), world.deps)
    assert outcome.retryable and outcome.errors
    (claim,) = world.claims()
    assert claim.status is not None and claim.status.phase == "Pending"
    handle_launch(reconcile("retry"), world.deps)
    assert len(world.claims()) == 1 and len(world.compute.live()) == 1


def test_max_resources_clips_new_capacity_and_warns() -> None:
    world = World(make_pool(min_tflops="260", min_vram="64Gi", max_tflops="130", max_vram="32Gi"))
    handle_launch(reconcile(), world.deps)
    assert len(world.claims()) == 2
    assert world.cluster.events_with("MaxResourceConstraintReached")
    handle_launch(reconcile("again"), world.deps)
    assert len(world.claims()) == 2


def test_dry_run_plans_but_changes_nothing() -> None:
    world = World(make_pool())
    outcome = handle_launch(reconcile(), world.deps, dry_run=True)
    kinds = [a["kind"] for a in outcome.to_json()["plan"]["actions"]]
    assert kinds.count("create-claim") == 2 and kinds.count("launch-instance") == 2
    assert world.claims() == [] and world.compute.instances == {}


def test_pools_declared_in_the_cluster_are_created_and_launched() -> None:
    world = World()
    template = make_pool().spec.model_dump(by_alias=True, exclude_none=True, mode="json")
    world.cluster.add(
        TensorFusionCluster.model_validate(
            {
                "metadata": {"name": "demo"},
                "spec": {"gpuPools": [{"name": "shared", "specTemplate": template}]},
            }
        )
    )
    handle_launch(reconcile(), world.deps)
    pool = world.pool("demo-shared")
    assert pool is not None and pool.metadata.labels[LABEL_CLUSTER] == "demo"
    assert len(world.claims()) == 2
    assert pool.status is not None and pool.status.provisioning_phase == "Provisioning"


def test_plan_is_logged_once_and_each_action_once_with_the_fixed_keys(
    caplog: pytest.LogCaptureFixture,
) -> None:
    import json

    world = World(make_pool(min_tflops="65", min_vram="16Gi"))
    with caplog.at_level("INFO", logger="gpupool.service"):
        outcome = handle_launch(reconcile("evt-log"), world.deps)
    entries = [json.loads(r.getMessage()) for r in caplog.records if r.name == "gpupool.service"]
    assert all({"pool", "claim", "node", "instance_id", "action", "event_id"} <= e.keys() for e in entries)
    assert all(e["event_id"] == "evt-log" for e in entries)
    plans = [e for e in entries if e["message"] == "plan"]
    actions = [e for e in entries if e["message"] != "plan"]
    assert len(actions) == len(outcome.plan.actions)
    assert sum(1 for p in plans if any(a["kind"] == "launch-instance" for a in p["actions"])) == 1
    launch = next(e for e in actions if e["action"] == "launch-instance")
    assert launch["pool"] == "pool-a" and launch["claim"] == world.claims()[0].name


def test_pool_status_is_kept_true_as_nodes_join() -> None:
    world = World(make_pool())
    handle_launch(reconcile("e1"), world.deps)
    status = world.pool().status
    assert status is not None and status.phase == "Pending" and status.provisioning_phase == "Provisioning"
    for claim in world.claims():
        world.cluster.join_node(claim.name)
    handle_bind(InstanceStateChanged(instance_id="i-unrelated", state="running", event_id="b1"), world.deps)
    handle_launch(reconcile("e2"), world.deps)
    status = world.pool().status
    assert status is not None
    assert (status.phase, status.provisioning_phase, status.total_nodes, status.ready_nodes) == (
        "Running",
        "Completed",
        2,
        2,
    )
    assert status.total_tflops == Quantity.parse("130") and status.available_vram == Quantity.parse("32Gi")
    (condition,) = [c for c in status.conditions if c.type == "CapacitySatisfied"]
    assert condition.status == "True"
    version = world.pool().metadata.resource_version
    handle_launch(reconcile("e3"), world.deps)
    assert world.pool().metadata.resource_version == version, "nothing changed, nothing written"


def test_dry_run_plans_launches_for_pools_the_cluster_sync_would_create() -> None:
    world = World()
    template = make_pool().spec.model_dump(by_alias=True, exclude_none=True, mode="json")
    world.cluster.add(
        TensorFusionCluster.model_validate(
            {
                "metadata": {"name": "demo"},
                "spec": {"gpuPools": [{"name": "shared", "specTemplate": template}]},
            }
        )
    )
    outcome = handle_launch(reconcile(), world.deps, dry_run=True)
    kinds = [a["kind"] for a in outcome.to_json()["plan"]["actions"]]
    assert kinds.count("apply-pool") == 1
    assert kinds.count("create-claim") == 2 and kinds.count("launch-instance") == 2
    assert world.pool("demo-shared") is None
    assert world.claims() == [] and world.compute.instances == {}


def test_offerings_in_zones_without_a_subnet_of_the_class_are_never_tried() -> None:
    in_zone_b = [o.model_copy(update={"zone": "us-east-1b"}) for o in OFFERINGS]
    world = World(make_pool(), offerings=[*OFFERINGS, *in_zone_b])
    world.compute.zones = frozenset({"us-east-1b"})
    handle_launch(reconcile(), world.deps)
    assert {key.split("/")[1] for _, key in world.compute.launched} == {"us-east-1b"}
    assert len(world.claims()) == 2
    assert all(c.status is None or c.status.phase != "Failed" for c in world.claims())
