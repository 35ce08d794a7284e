"""Karpenter mode against in-memory fakes: the Provisioned guarantees, with NodeClaims for instances.

The launch function records GPUNodeClaims first and then one karpenter.sh NodeClaim per claim;
bind follows the NodeClaim (Launched, the node joining, a launch failure, a deletion) and
deleting a claim deletes its NodeClaim. Each test asserts end state in the fakes.
"""

from __future__ import annotations

import threading
from dataclasses import replace
from datetime import timedelta
from typing import Any

import pytest

from gpupool.core.intake.causes import Compact, Reconcile, Sweep
from gpupool.core.model.constants import FINALIZER, LABEL_NODE_PROVISIONER
from gpupool.core.model.pool import GPUPool
from gpupool.core.planning.unavailable import ANNOTATION_UNAVAILABLE_OFFERINGS
from gpupool.core.quantity import Quantity
from gpupool.service.bind import handle_bind
from gpupool.service.compact import handle_compact
from gpupool.service.launch import handle_launch
from tests.service.fake_karpenter import FakeKarpenter
from tests.service.fakes import Crash, World, make_pool

CLASS_REF = {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass", "version": "v1", "name": "default"}


def karpenter_pool(**overrides: Any) -> GPUPool:
    manifest = make_pool(mode="Karpenter", **overrides).to_manifest()
    provisioner = manifest["spec"]["nodeManagerConfig"]["nodeProvisioner"]
    provisioner.pop("nodeClass", None)
    provisioner["karpenterNodeClassRef"] = CLASS_REF
    provisioner["gpuNodeLabels"] = {"team": "ml"}
    provisioner["gpuNodeAnnotations"] = {"owner": "ml-platform"}
    provisioner["gpuTaints"] = [{"key": "nvidia.com/gpu", "value": "true", "effect": "NoSchedule"}]
    return GPUPool.model_validate(manifest)


class KarpenterWorld(World):
    def __init__(self, pool: GPUPool, **settings: Any) -> None:
        super().__init__(pool, **settings)
        self.karpenter = FakeKarpenter(self.clock)
        self.deps = replace(self.deps, karpenter=self.karpenter)

    def with_holder(self, holder: str) -> Any:
        return replace(self.deps, holder=holder)


def reconcile(event_id: str = "evt-1") -> Reconcile:
    return Reconcile(pool=None, trigger="schedule", event_id=event_id)


def sweep(event_id: str = "sweep-1") -> Sweep:
    return Sweep(event_id=event_id)


def test_gap_becomes_claims_then_nodeclaims_owned_by_them() -> None:
    world = KarpenterWorld(karpenter_pool())
    outcome = handle_launch(reconcile(), world.deps)
    assert outcome.errors == []
    claims = {c.name: c for c in world.claims()}
    assert len(claims) == 2 and world.compute.instances == {}, "no cloud instance in Karpenter mode"
    assert sorted(world.karpenter.nodeclaims) == sorted(claims)
    for name, nodeclaim in world.karpenter.nodeclaims.items():
        claim = claims[name]
        assert claim.status is not None and claim.status.phase == "Creating"
        assert claim.status.instance_id == f"nodeclaim/{name}"
        assert claim.spec.node_class_ref is not None and claim.spec.node_class_ref.kind == "EC2NodeClass"
        (owner,) = nodeclaim.metadata.owner_references
        assert (owner.kind, owner.name, owner.uid, owner.controller) == (
            "GPUNodeClaim",
            name,
            claim.metadata.uid,
            True,
        )
        assert nodeclaim.metadata.labels[LABEL_NODE_PROVISIONER] == name
        assert nodeclaim.spec.requirements[0].values == ["g4dn.xlarge"]


def test_one_event_delivered_ten_times_makes_one_nodeclaim_per_needed_node() -> None:
    world = KarpenterWorld(karpenter_pool())
    for _ in range(10):
        assert handle_launch(reconcile("same-event"), world.deps).errors == []
    assert len(world.claims()) == 2
    assert len(world.karpenter.nodeclaims) == 2
    assert world.karpenter.count("create_nodeclaim") == 2


def test_eight_concurrent_invocations_never_pass_the_gap_or_max() -> None:
    world = KarpenterWorld(
        karpenter_pool(min_tflops="260", min_vram="64Gi", max_tflops="260", max_vram="64Gi")
    )
    world.cluster.read_delay = 0.02
    barrier = threading.Barrier(8)
    errors: list[BaseException] = []

    def invoke(index: int) -> None:
        try:
            barrier.wait()
            handle_launch(reconcile(f"evt-{index}"), world.with_holder(f"holder-{index}"))
        except BaseException as error:  # pragma: no cover - surfaced below
            errors.append(error)

    threads = [threading.Thread(target=invoke, args=(i,)) for i in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    for index in range(3):
        handle_launch(reconcile(f"after-{index}"), world.with_holder(f"late-{index}"))
    offered = sum((c.spec.tflops_offered for c in world.claims()), start=Quantity(0))
    assert len(world.claims()) == 4 and offered.value == 260
    assert len(world.karpenter.nodeclaims) == 4


@pytest.mark.parametrize("method", ["create_claim", "create_nodeclaim"])
def test_a_crash_after_a_step_is_finished_without_a_duplicate_nodeclaim(method: str) -> None:
    world = KarpenterWorld(karpenter_pool(min_tflops="65", min_vram="16Gi"))
    fake = world.karpenter if method == "create_nodeclaim" else world.cluster
    fake.crash_after(method)
    with pytest.raises(Crash):
        handle_launch(reconcile("first"), world.deps)
    world.clock.advance(timedelta(seconds=30))
    assert handle_launch(reconcile("second"), world.deps).errors == []
    (claim,) = world.claims()
    assert list(world.karpenter.nodeclaims) == [claim.name]
    assert claim.status is not None and claim.status.phase == "Creating"
    assert claim.status.instance_id == f"nodeclaim/{claim.name}"


def test_a_missing_node_class_fails_the_claim_with_its_name_and_creates_no_nodeclaim() -> None:
    world = KarpenterWorld(karpenter_pool(min_tflops="65", min_vram="16Gi"))
    world.karpenter.node_classes.clear()
    outcome = handle_launch(reconcile(), world.deps)
    assert outcome.errors == []
    (claim,) = world.claims()
    assert claim.status is not None and claim.status.phase == "Failed"
    assert "EC2NodeClass default (karpenter.k8s.aws) not found" in (claim.status.message or "")
    assert world.karpenter.nodeclaims == {}
    assert world.cluster.events_with("NodeLaunchFailed")


def test_bind_follows_the_nodeclaim_until_its_node_is_ready() -> None:
    world = KarpenterWorld(karpenter_pool(min_tflops="65", min_vram="16Gi"))
    handle_launch(reconcile(), world.deps)
    (claim,) = world.claims()
    world.karpenter.launched(claim.name)
    handle_bind(sweep("s1"), world.deps)
    assert world.claims()[0].status.phase == "Creating"  # type: ignore[union-attr]
    node = world.karpenter.register(world, claim.name)
    handle_bind(sweep("s2"), world.deps)
    (bound,) = world.claims()
    assert bound.status is not None and bound.status.phase == "Bound"
    assert world.cluster.get("Node", node).metadata.labels["team"] == "ml"
    assert world.cluster.events_with("ManagedNodeCreated")


@pytest.mark.parametrize("how", ["insufficient-capacity", "node-class-not-ready", "deleted by hand"])
def test_a_nodeclaim_deleted_before_launch_fails_the_claim_and_the_refill_takes_another_offering(
    how: str,
) -> None:
    """Karpenter deletes a NodeClaim it cannot launch (InsufficientCapacity, NodeClassNotReady);
    it never writes Launched=False."""
    world = KarpenterWorld(karpenter_pool(min_tflops="65", min_vram="16Gi"))
    handle_launch(reconcile(), world.deps)
    (first,) = world.claims()
    assert world.karpenter.nodeclaims[first.name].spec.expire_after == "Never"
    if how == "insufficient-capacity":
        world.karpenter.insufficient_capacity(first.name)
    elif how == "node-class-not-ready":
        world.karpenter.node_class_not_ready(first.name)
    else:
        del world.karpenter.nodeclaims[first.name]
    handle_bind(sweep(), world.deps)
    failed = world.cluster.get("GPUNodeClaim", first.name)
    assert failed.status.phase == "Failed" and failed.status.reason == "InsufficientCapacity"
    handle_launch(reconcile("refill"), world.deps)
    (replacement,) = world.claims(live_only=True)
    assert replacement.name != first.name and replacement.name in world.karpenter.nodeclaims
    assert (first.spec.instance_type, replacement.spec.instance_type) == ("g4dn.xlarge", "g6.xlarge")
    assert (
        "g4dn.xlarge/us-east-1a/OnDemand"
        in world.pool().metadata.annotations[ANNOTATION_UNAVAILABLE_OFFERINGS]
    )


def test_a_launch_karpenter_retries_keeps_the_claim_until_the_registration_timeout() -> None:
    world = KarpenterWorld(karpenter_pool(min_tflops="65", min_vram="16Gi"))
    handle_launch(reconcile(), world.deps)
    (claim,) = world.claims()
    world.karpenter.launch_error(claim.name, "UnauthorizedOperation")  # Launched=Unknown
    handle_bind(sweep("s1"), world.deps)
    assert world.claims()[0].status.phase == "Creating", "Karpenter retries it"  # type: ignore[union-attr]
    world.clock.advance(timedelta(minutes=16))
    handle_bind(sweep("s2"), world.deps)
    timed_out = world.cluster.get("GPUNodeClaim", claim.name)
    assert timed_out.status.phase == "Failed" and timed_out.status.reason == "RegistrationTimeout"


@pytest.mark.parametrize(
    ("minutes", "launched", "reason"),
    [(6, False, "LaunchTimeout"), (16, True, "RegistrationTimeout")],
)
def test_a_nodeclaim_karpenter_deletes_at_its_timeout_is_no_capacity_failure(
    minutes: int, launched: bool, reason: str
) -> None:
    """Karpenter deletes a NodeClaim not launched within 5 minutes and one whose node did not
    register within 15 (`liveness.go`): the claim fails with that reason and the refill may take
    the same offering — only an insufficient-capacity deletion marks it unavailable."""
    world = KarpenterWorld(karpenter_pool(min_tflops="65", min_vram="16Gi"))
    handle_launch(reconcile(), world.deps)
    (first,) = world.claims()
    if launched:
        world.karpenter.launched(first.name)
    world.clock.advance(timedelta(minutes=minutes))
    del world.karpenter.nodeclaims[first.name]
    handle_bind(sweep(), world.deps)
    failed = world.cluster.get("GPUNodeClaim", first.name)
    assert failed.status.phase == "Failed" and failed.status.reason == reason
    handle_launch(reconcile("refill"), world.deps)
    (replacement,) = world.claims(live_only=True)
    assert replacement.spec.instance_type == first.spec.instance_type, "the offering is not blamed"
    assert ANNOTATION_UNAVAILABLE_OFFERINGS not in world.pool().metadata.annotations


def test_deleting_a_claim_deletes_its_nodeclaim_then_releases_the_claim() -> None:
    world = KarpenterWorld(karpenter_pool(min_tflops="65", min_vram="16Gi"))
    handle_launch(reconcile(), world.deps)
    (claim,) = world.claims()
    world.karpenter.register(world, claim.name)
    handle_bind(sweep("bind"), world.deps)
    world.cluster.delete_claim(claim.name)
    handle_bind(sweep("delete"), world.deps)
    assert world.karpenter.live() == [], "its NodeClaim is being deleted"
    assert FINALIZER not in [f for c in world.claims() for f in c.metadata.finalizers]


def test_compaction_deletes_the_gpunodeclaim_of_an_idle_node_and_that_deletes_its_nodeclaim() -> None:
    world = KarpenterWorld(karpenter_pool(min_tflops="65", min_vram="16Gi"))
    handle_launch(reconcile(), world.deps)
    (claim,) = world.claims()
    world.karpenter.register(world, claim.name)
    handle_bind(sweep("bind"), world.deps)
    current = world.pool()
    relaxed = karpenter_pool(min_tflops=None, min_vram=None)
    world.cluster.objects["GPUPool"]["pool-a"] = relaxed.model_copy(
        update={"metadata": current.metadata, "status": current.status}
    )
    world.clock.advance(timedelta(minutes=6))
    outcome = handle_compact(Compact(pool="pool-a", manual=False, event_id="c1"), world.deps)
    assert outcome.errors == []
    assert world.claims()[0].metadata.deletion_timestamp is not None, "the GPUNodeClaim is deleted"
    assert [n.name for n in world.karpenter.live()] == [claim.name], "not yet: the drain runs first"
    handle_bind(sweep("after"), world.deps)
    assert world.karpenter.live() == []


def side_by_side() -> KarpenterWorld:
    """A Provisioned pool (pool-a, cloud instances) and a Karpenter pool (pool-k) in one cluster."""
    world = KarpenterWorld(karpenter_pool(name="pool-k", min_tflops="65", min_vram="16Gi"))
    world.cluster.add(make_pool(min_tflops="65", min_vram="16Gi"))
    return world


def test_a_provisioned_pool_and_a_karpenter_pool_each_launch_through_their_own_compute() -> None:
    world = side_by_side()
    assert handle_launch(reconcile(), world.deps).errors == []
    claims = {c.metadata.labels["tensor-fusion.ai/managed-by"]: c for c in world.claims()}
    provisioned, karpenter = claims["pool-a"], claims["pool-k"]
    assert [i.claim_name for i in world.compute.instances.values()] == [provisioned.name]
    assert list(world.karpenter.nodeclaims) == [karpenter.name]
    assert provisioned.status is not None and provisioned.status.instance_id in world.compute.instances
    assert karpenter.status is not None and karpenter.status.instance_id == f"nodeclaim/{karpenter.name}"
    world.cluster.delete_claim(provisioned.name)
    world.cluster.delete_claim(karpenter.name)
    assert handle_bind(sweep(), world.deps).errors == []
    assert world.compute.live() == [] and world.karpenter.live() == [], "each ended by its own Compute"
    assert world.claims() == [], "both finalizers released"


def test_a_karpenter_claim_whose_pool_is_gone_is_still_ended_by_deleting_its_nodeclaim() -> None:
    world = KarpenterWorld(karpenter_pool(min_tflops="65", min_vram="16Gi"))
    handle_launch(reconcile(), world.deps)
    (claim,) = world.claims()
    del world.cluster.objects["GPUPool"]["pool-a"]
    world.cluster.delete_claim(claim.name)
    assert handle_bind(sweep(), world.deps).errors == []
    assert world.karpenter.live() == [] and world.compute.count("terminate") == 0
    assert world.claims() == []


def test_without_karpenter_wired_a_karpenter_pool_fails_its_claims_with_the_reason() -> None:
    world = World(karpenter_pool(min_tflops="65", min_vram="16Gi"))
    assert handle_launch(reconcile(), world.deps).errors == []
    (claim,) = world.claims()
    assert claim.status is not None and claim.status.phase == "Failed"
    assert "this deployment has none wired" in (claim.status.message or "")
    assert world.compute.instances == {}, "never launched in the cloud instead"
