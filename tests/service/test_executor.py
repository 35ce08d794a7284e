"""The executor and its appliers against the in-memory fakes: which actions an earlier failure
skips, read from the targets each action declares, and a write that refuses an object read
without a resourceVersion instead of writing it unconditionally.

Each test applies a hand-made plan and asserts end state in the fakes.
"""

from __future__ import annotations

from datetime import timedelta

from gpupool.core.model.constants import FINALIZER
from gpupool.core.planning.plan import (
    ApplyPool,
    CordonNode,
    LabelNode,
    MarkOfferingUnavailable,
    Plan,
    ReleaseClaim,
    TerminateInstance,
)
from gpupool.core.planning.unavailable import unavailable_offerings
from gpupool.core.quantity import Quantity
from gpupool.service.errors import PermanentError
from gpupool.service.executor import Executor
from gpupool.service.launch import handle_launch
from tests.service.fakes import START, World, make_pool
from tests.service.test_launch import reconcile


def launched_world() -> World:
    world = World(make_pool(min_tflops="130", min_vram="32Gi"))
    handle_launch(reconcile(), world.deps)
    for claim in world.claims():
        world.cluster.delete_claim(claim.name)
    return world


def test_a_failed_action_skips_the_later_actions_on_its_claim_and_only_those() -> None:
    world = launched_world()
    first, second = sorted(world.claims(), key=lambda c: c.name)
    assert first.status is not None and first.status.instance_id
    world.compute.fail_next("terminate", PermanentError("refused"))
    until = START + timedelta(hours=1)
    plan = Plan(
        actions=(
            TerminateInstance(claim=first.name, instance_id=first.status.instance_id, reason="ClaimDeleted"),
            ReleaseClaim(claim=first.name),
            ReleaseClaim(claim=second.name),
            MarkOfferingUnavailable(
                pool="pool-a", offering_key="g4dn.xlarge/us-east-1a/OnDemand", until=until
            ),
        )
    )
    results = Executor(world.deps, event_id="e1").apply(plan)
    assert [r.outcome for r in results] == ["failed", "skipped", "applied", "applied"]
    assert results[1].detail == "an earlier action on this claim failed"
    assert FINALIZER in world.claim(first.name).metadata.finalizers, "never released before its instance"
    assert second.name not in {c.name for c in world.claims()}
    assert "g4dn.xlarge/us-east-1a/OnDemand" in unavailable_offerings(world.pool(), START)


def test_a_write_of_an_object_read_without_a_resource_version_is_refused() -> None:
    world = World(make_pool())
    unversioned = make_pool(min_tflops="999")
    assert unversioned.metadata.resource_version is None
    (result,) = Executor(world.deps, event_id="e1").apply(
        Plan(actions=(ApplyPool(pool="pool-a", desired=unversioned, create=False),))
    )
    assert result.outcome == "failed" and isinstance(result.error, PermanentError)
    assert "without a resourceVersion" in result.detail
    minimum = world.pool().spec.capacity_config.min_resources
    assert minimum is not None and minimum.tflops == Quantity.parse("130"), "the pool is unchanged"


def test_labelling_or_cordoning_a_node_that_is_gone_is_skipped_not_failed() -> None:
    # bind's sweep labels a node whose claim is gone `orphan`; Karpenter may delete the node
    # between the read and the write (seen on the real Karpenter in the benchmark).
    world = launched_world()
    plan = Plan(
        actions=(
            LabelNode(node="gone-node", labels={"tensor-fusion.ai/orphan": "true"}),
            CordonNode(node="gone-node"),
        )
    )
    results = Executor(world.deps, event_id="e3").apply(plan)
    assert [(r.outcome, r.detail) for r in results] == [
        ("skipped", "node already gone"),
        ("skipped", "node already gone"),
    ]
