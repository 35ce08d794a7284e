"""plan_claim_lifecycle: one table row per claim situation, asserting the actions it yields (every
node in the table has a GPUNode the agent reports Running); and a Ready node whose GPUs no agent
has reported usable is not bound."""

from __future__ import annotations

from datetime import timedelta

import pytest

from gpupool.core.decisions.claim_lifecycle import LifecyclePolicy, phase_move_refusal, plan_claim_lifecycle
from gpupool.core.model.instance import ManagedInstance
from tests.unit.decisions.builders import NOW, claim, gpu_node, node

POLICY = LifecyclePolicy()


def inst(state: str = "running", claim_name: str = "pool-a-1", instance_id: str = "i-1") -> ManagedInstance:
    return ManagedInstance(
        instance_id=instance_id,
        state=state,
        claim_name=claim_name,
        cluster="demo",  # type: ignore[arg-type]
        launch_time=NOW - timedelta(minutes=1),
    )


CASES = [
    (
        "ready node binds",
        claim(),
        [node("n1", claim_name="pool-a-1")],
        [inst()],
        [("set-claim-phase", "Bound"), ("record-event", None)],
    ),
    ("not ready node waits", claim(), [node("n1", claim_name="pool-a-1", ready=False)], [inst()], []),
    (
        "registration timeout terminates and fails",
        claim(age=timedelta(minutes=16)),
        [],
        [inst()],
        [("terminate-instance", None), ("set-claim-phase", "Failed"), ("record-event", None)],
    ),
    ("within registration timeout waits", claim(age=timedelta(minutes=14)), [], [inst()], []),
    (
        "launch timeout fails a Pending claim",
        claim(phase="Pending", instance_id=None, age=timedelta(minutes=6)),
        [],
        [],
        [("set-claim-phase", "Failed"), ("record-event", None)],
    ),
    (
        "Pending claim adopts its tagged instance",
        claim(phase="Pending", instance_id=None),
        [],
        [inst()],
        [("set-claim-phase", "Creating")],
    ),
    (
        "instance gone fails a Bound claim",
        claim(phase="Bound"),
        [],
        [inst("terminated")],
        [("set-claim-phase", "Failed"), ("record-event", None)],
    ),
    (
        "deleting claim terminates then releases",
        claim(deleting=True),
        [],
        [inst()],
        [("terminate-instance", None), ("release-claim", None)],
    ),
    ("deleting claim without instance releases", claim(deleting=True), [], [], [("release-claim", None)]),
    (
        "Failed claim with live instance terminates it",
        claim(phase="Failed"),
        [],
        [inst()],
        [("terminate-instance", None)],
    ),
    (
        "old Failed claim is deleted",
        claim(phase="Failed", phase_age=timedelta(minutes=11)),
        [],
        [],
        [("delete-claim", None)],
    ),
    ("recent Failed claim stays", claim(phase="Failed", phase_age=timedelta(minutes=1)), [], [], []),
]


@pytest.mark.parametrize(
    ("title", "the_claim", "nodes", "instances", "expected"), CASES, ids=[c[0] for c in CASES]
)
def test_lifecycle(title: str, the_claim, nodes, instances, expected) -> None:  # type: ignore[no-untyped-def]
    gpus = [gpu_node(n.name) for n in nodes]
    plan = plan_claim_lifecycle([the_claim], nodes, instances, gpu_nodes=gpus, now=NOW, policy=POLICY)
    assert [(a.kind, getattr(a, "phase", None)) for a in plan.actions] == expected


@pytest.mark.parametrize("agent_report", ["none", "Pending", "Unknown"])
def test_a_ready_node_waits_until_the_agent_reports_its_gpus_usable(agent_report: str) -> None:
    ready = node("n1", claim_name="pool-a-1")
    gpus = [] if agent_report == "none" else [gpu_node("n1")]
    if gpus:
        assert gpus[0].status is not None
        gpus = [
            gpus[0].model_copy(update={"status": gpus[0].status.model_copy(update={"phase": agent_report})})
        ]
    waiting = plan_claim_lifecycle([claim()], [ready], [inst()], gpu_nodes=gpus, now=NOW, policy=POLICY)
    assert waiting.actions == ()
    late = plan_claim_lifecycle(
        [claim(age=timedelta(minutes=16))], [ready], [inst()], gpu_nodes=gpus, now=NOW, policy=POLICY
    )
    assert [a.kind for a in late.actions] == ["terminate-instance", "set-claim-phase", "record-event"]
    assert any("usable GPUs" in reason for reason in late.reasons)


@pytest.mark.parametrize(
    ("current", "target", "allowed"),
    [
        ("Pending", "Creating", True),
        ("Creating", "Bound", True),
        ("Pending", "Bound", True),
        ("Bound", "Failed", True),
        ("Pending", "Failed", True),
        ("Creating", "Pending", False),
        ("Bound", "Creating", False),
        ("Failed", "Bound", False),
        ("Failed", "Pending", False),
    ],
)
def test_claim_phases_move_only_forward_or_to_failed_and_failed_is_final(
    current: str, target: str, allowed: bool
) -> None:
    refusal = phase_move_refusal(current, target)
    assert (refusal is None) is allowed
    if refusal is not None:
        assert current in refusal and target in refusal
