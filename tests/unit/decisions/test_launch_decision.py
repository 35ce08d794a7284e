"""plan_launch and its gap / selection seam: table tests over pools, claims and offerings."""

from __future__ import annotations

from datetime import timedelta

import pytest

from gpupool.core.decisions.launch import plan_launch
from gpupool.core.decisions.launch_failure import plan_launch_failure
from gpupool.core.model.common import Requirement
from gpupool.core.planning.gap import capacity_gap
from gpupool.core.planning.offerings import offering_matches
from gpupool.core.planning.plan import (
    CreateClaim,
    LaunchInstance,
    MarkOfferingUnavailable,
    RecordEvent,
    SetClaimPhase,
)
from gpupool.core.planning.snapshot import pool_capacity
from gpupool.core.planning.unavailable import ANNOTATION_UNAVAILABLE_OFFERINGS
from tests.unit.decisions.builders import NOW, claim, gpu_node, node, offering, pool, q, snapshot

OFFERS = (
    offering(),
    offering("g6.xlarge", "121", "24Gi", "0.805"),
    offering("g5.xlarge", "125", "24Gi", "1.006"),
)
SUFFIXES = [f"{i:03d}" for i in range(100)]


def kinds(plan: object) -> list[str]:
    return [a.kind for a in plan.actions]  # type: ignore[attr-defined]


@pytest.mark.parametrize(
    ("pool_kwargs", "parts", "expected"),
    [
        ({"min_": ("130", "32Gi")}, {}, ("130", "32Gi")),
        # an in-flight claim counts with what it offers
        ({"min_": ("130", "32Gi")}, {"claims": [claim(phase="Creating")]}, ("65", "16Gi")),
        # a Failed, deleting or interrupted claim does not count
        ({"min_": ("130", "32Gi")}, {"claims": [claim(phase="Failed")]}, ("130", "32Gi")),
        ({"min_": ("130", "32Gi")}, {"claims": [claim(deleting=True)]}, ("130", "32Gi")),
        (
            {"min_": ("130", "32Gi")},
            {"claims": [claim(annotations={"gpupool.io/interrupted": "x"})]},
            ("130", "32Gi"),
        ),
        # warm applies once min is met: available 0 of 65 → need 65 more
        (
            {"min_": ("65", "16Gi"), "warm": ("65", "16Gi")},
            {
                "claims": [claim(phase="Bound")],
                "nodes": [node("n1", claim_name="pool-a-1")],
                "gpu_nodes": [gpu_node("n1", available=("0", "0"))],
            },
            ("65", "16Gi"),
        ),
        # both checks apply and the larger need wins (DESIGN §3)
        ({"min_": ("130", "32Gi"), "warm": ("500", "100Gi")}, {}, ("500", "100Gi")),
        # max clips the need
        ({"min_": ("130", "32Gi"), "max_": ("65", "64Gi")}, {}, ("65", "32Gi")),
    ],
)
def test_capacity_gap(pool_kwargs: dict, parts: dict, expected: tuple[str, str]) -> None:  # type: ignore[type-arg]
    snap = snapshot(pool(**pool_kwargs), **parts)
    gap = capacity_gap(snap.pool, pool_capacity(snap))
    assert (gap.tflops, gap.vram) == (q(expected[0]), q(expected[1]))


def test_offering_requirements() -> None:
    spot_only = [Requirement(key="karpenter.sh/capacity-type", operator="In", values=["spot"])]
    not_g4 = [Requirement(key="node.kubernetes.io/instance-type", operator="NotIn", values=["g4dn.xlarge"])]
    assert not offering_matches(offering(), spot_only)
    assert offering_matches(offering(capacity_type="Spot"), spot_only)
    assert not offering_matches(offering(), not_g4)
    assert offering_matches(offering("g6.xlarge"), not_g4)


def test_new_claims_record_intent_before_launch() -> None:
    plan = plan_launch(snapshot(), OFFERS, now=NOW, suffixes=SUFFIXES)
    assert kinds(plan) == ["create-claim", "launch-instance"] * 2
    creates = [a for a in plan.actions if isinstance(a, CreateClaim)]
    assert [c.manifest.name for c in creates] == ["pool-a-000", "pool-a-001"]
    assert all(c.manifest.spec.instance_type == "g4dn.xlarge" for c in creates)


def test_pending_claim_without_instance_is_resumed_not_duplicated() -> None:
    plan = plan_launch(
        snapshot(pool(min_=("65", "16Gi")), claims=[claim(phase="Pending", instance_id=None)]),
        OFFERS,
        now=NOW,
        suffixes=SUFFIXES,
    )
    assert kinds(plan) == ["launch-instance"]
    assert plan.actions[0].claim == "pool-a-1"


def test_unavailable_offerings_are_skipped_until_they_expire() -> None:
    memory = f'{{"g4dn.xlarge/us-east-1a/OnDemand": "{(NOW + timedelta(minutes=3)).isoformat()}"}}'
    snap = snapshot(pool(min_=("65", "16Gi"), annotations={ANNOTATION_UNAVAILABLE_OFFERINGS: memory}))
    plan = plan_launch(snap, OFFERS, now=NOW, suffixes=SUFFIXES)
    assert [a.offering.instance_type for a in plan.actions if isinstance(a, LaunchInstance)] == ["g6.xlarge"]
    later = plan_launch(snap, OFFERS, now=NOW + timedelta(minutes=4), suffixes=SUFFIXES)
    assert [a.offering.instance_type for a in later.actions if isinstance(a, LaunchInstance)] == [
        "g4dn.xlarge"
    ]


def test_all_offerings_unavailable_warns_node_launch_failed() -> None:
    until = (NOW + timedelta(minutes=3)).isoformat()
    memory = "{" + ", ".join(f'"{o.key}": "{until}"' for o in OFFERS) + "}"
    plan = plan_launch(
        snapshot(pool(annotations={ANNOTATION_UNAVAILABLE_OFFERINGS: memory})),
        OFFERS,
        now=NOW,
        suffixes=SUFFIXES,
    )
    (event,) = plan.actions
    assert (
        isinstance(event, RecordEvent)
        and event.reason == "NodeLaunchFailed"
        and event.event_type == "Warning"
    )


def test_max_leaves_no_room_warns_and_launches_nothing() -> None:
    snap = snapshot(pool(min_=("130", "32Gi"), max_=("65", "16Gi")), claims=[claim(phase="Creating")])
    plan = plan_launch(snap, OFFERS, now=NOW, suffixes=SUFFIXES)
    assert [a.reason for a in plan.actions if isinstance(a, RecordEvent)] == ["MaxResourceConstraintReached"]
    assert not [a for a in plan.actions if isinstance(a, CreateClaim)]


def test_autoselect_is_left_alone_with_a_reason() -> None:
    plan = plan_launch(snapshot(pool(mode="AutoSelect")), OFFERS, now=NOW, suffixes=SUFFIXES)
    assert plan.actions == () and "AutoSelect" in plan.reasons[0]


def test_karpenter_mode_without_a_node_class_ref_warns_and_launches_nothing() -> None:
    plan = plan_launch(snapshot(pool(mode="Karpenter")), OFFERS, now=NOW, suffixes=SUFFIXES)
    assert [a.kind for a in plan.actions] == ["record-event"]
    assert "karpenterNodeClassRef" in plan.reasons[0]


def test_missing_node_class_is_a_warning_not_a_launch() -> None:
    plan = plan_launch(snapshot(node_class=None), OFFERS, now=NOW, suffixes=SUFFIXES)
    assert kinds(plan) == ["record-event"]


@pytest.mark.parametrize("capacity", [True, False])
def test_launch_failure_fails_the_claim_and_marks_capacity_errors(capacity: bool) -> None:
    plan = plan_launch_failure(
        snapshot(),
        "pool-a-1",
        offering(),
        capacity=capacity,
        message="boom",
        now=NOW,
        unavailable_for=timedelta(minutes=3),
    )
    marks = [a for a in plan.actions if isinstance(a, MarkOfferingUnavailable)]
    assert [m.until for m in marks] == ([NOW + timedelta(minutes=3)] if capacity else [])
    (phase,) = [a for a in plan.actions if isinstance(a, SetClaimPhase)]
    assert phase.phase == "Failed" and phase.message == "boom"


def test_a_mix_of_types_is_chosen_when_cheaper_than_one_type() -> None:
    # 186 TFLOPS / 40Gi: g6 + g4dn ($1.331) beats 3 × g4dn ($1.578) and 2 × g6 ($1.610).
    plan = plan_launch(snapshot(pool(min_=("186", "40Gi"))), OFFERS, now=NOW, suffixes=SUFFIXES)
    chosen = sorted(a.offering.instance_type for a in plan.actions if isinstance(a, LaunchInstance))
    assert chosen == ["g4dn.xlarge", "g6.xlarge"]


def test_max_allows_part_of_the_gap_fills_what_fits_and_warns() -> None:
    plan = plan_launch(
        snapshot(pool(min_=("260", "64Gi"), max_=("130", "32Gi"))), OFFERS, now=NOW, suffixes=SUFFIXES
    )
    launched = [a for a in plan.actions if isinstance(a, LaunchInstance)]
    assert sum(a.offering.tflops.value for a in launched) <= 130
    assert launched
    assert [a.reason for a in plan.actions if isinstance(a, RecordEvent)] == ["MaxResourceConstraintReached"]


def test_catalog_labels_let_every_requirement_key_be_judged() -> None:
    gpu_model = [{"key": "tensor-fusion.ai/gpu-model", "operator": "In", "values": ["l4"]}]
    labelled = tuple(
        o.model_copy(update={"labels": {"tensor-fusion.ai/gpu-model": model}})
        for o, model in zip(OFFERS, ("T4", "L4", "A10G"), strict=True)
    )
    plan = plan_launch(
        snapshot(pool(min_=("65", "16Gi"), requirements=gpu_model)), labelled, now=NOW, suffixes=SUFFIXES
    )
    assert [a.offering.instance_type for a in plan.actions if isinstance(a, LaunchInstance)] == ["g6.xlarge"]


def test_a_requirement_that_cannot_be_evaluated_warns_and_launches_nothing() -> None:
    bad = [{"key": "karpenter.sh/capacity-type", "operator": "In", "values": ["cheap"]}]
    plan = plan_launch(snapshot(pool(requirements=bad)), OFFERS, now=NOW, suffixes=SUFFIXES)
    assert kinds(plan) == ["record-event"] and "cheap" in plan.actions[0].message  # type: ignore[union-attr]
