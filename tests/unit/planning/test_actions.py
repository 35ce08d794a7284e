"""Actions declare exactly their targets: each kind requires the targets it always has, takes
the ones a decision may not know as optional, and refuses any other; `targets()` and
`log_keys()` read the declared ones under the fixed log keys, and printed plans keep their keys
in order (targets first) and round-trip through the `Action` union."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest
from pydantic import TypeAdapter, ValidationError

from gpupool.core.model.base import Condition
from gpupool.core.planning.plan import (
    TARGET_KEYS,
    Action,
    CordonNode,
    DeleteClaim,
    DrainNode,
    LabelNode,
    LaunchInstance,
    MarkClaimInterrupted,
    MarkOfferingUnavailable,
    OfferingRef,
    PatchPoolStatus,
    Plan,
    ReleaseClaim,
    RememberExpansions,
    SetClaimPhase,
    SetClusterCondition,
    TerminateInstance,
)
from gpupool.core.quantity import Quantity

AT = datetime(2026, 1, 1, tzinfo=UTC)
OFFERING = OfferingRef(
    instance_type="g5.xlarge",
    tflops=Quantity(125),
    vram=Quantity.parse("24Gi"),
    gpu_count=1,
    hourly_price="1",
)


@pytest.mark.parametrize(
    ("kind", "fields", "missing"),
    [
        (TerminateInstance, {"reason": "Orphaned"}, "instance_id"),
        (DeleteClaim, {"reason": "Compaction"}, "claim"),
        (ReleaseClaim, {}, "claim"),
        (SetClaimPhase, {"phase": "Failed", "reason": "x"}, "claim"),
        (CordonNode, {}, "node"),
        (DrainNode, {}, "node"),
        (LabelNode, {"labels": {}}, "node"),
        (MarkClaimInterrupted, {"reason": "spot", "at": AT}, "claim"),
        (MarkOfferingUnavailable, {"offering_key": "k", "until": AT}, "pool"),
        (LaunchInstance, {"claim": "c", "node_class": "gpu-class", "offering": OFFERING}, "pool"),
        (LaunchInstance, {"pool": "p", "node_class": "gpu-class", "offering": OFFERING}, "claim"),
    ],
)
def test_a_target_an_action_always_has_is_required(kind: Any, fields: dict[str, Any], missing: str) -> None:
    with pytest.raises(ValidationError, match=missing):
        kind(**fields)


@pytest.mark.parametrize(
    ("kind", "fields", "undeclared"),
    [
        (RememberExpansions, {"pool": "p", "expansions": ""}, "node"),
        (
            SetClusterCondition,
            {"cluster_name": "c", "condition": Condition(type="Ready", status="True")},
            "pool",
        ),
        (MarkOfferingUnavailable, {"pool": "p", "offering_key": "k", "until": AT}, "claim"),
        (PatchPoolStatus, {"pool": "p", "status": {}, "fields": ()}, "instance_id"),
        (ReleaseClaim, {"claim": "c"}, "node"),
    ],
)
def test_a_target_an_action_never_has_is_refused(kind: Any, fields: dict[str, Any], undeclared: str) -> None:
    kind(**fields)
    with pytest.raises(ValidationError, match=undeclared):
        kind(**fields, **{undeclared: "x"})


def test_targets_and_log_keys_read_the_declared_targets_only() -> None:
    orphan = TerminateInstance(instance_id="i-1", reason="Orphaned")
    assert orphan.targets() == {"instance_id": "i-1"}
    assert orphan.log_keys() == {"action": "terminate-instance", "instance_id": "i-1"}
    cordon = CordonNode(pool="p", claim="c", node="n", instance_id="i-2")
    assert cordon.log_keys() == {
        "action": "cordon-node",
        "pool": "p",
        "claim": "c",
        "node": "n",
        "instance_id": "i-2",
    }
    assert set(cordon.targets()) == set(TARGET_KEYS)
    assert RememberExpansions(pool="p", expansions="").log_keys() == {
        "action": "remember-expansions",
        "pool": "p",
    }


def test_printed_plans_keep_their_keys_in_order_and_round_trip() -> None:
    plan = Plan(
        actions=(
            LaunchInstance(pool="p", claim="c", node_class="gpu-class", offering=OFFERING),
            DeleteClaim(claim="c", reason="FailedClaimExpired"),
        )
    )
    printed = [a.model_dump(mode="json", exclude_none=True) for a in plan.actions]
    assert list(printed[0]) == ["pool", "claim", "kind", "node_class", "offering"]
    assert list(printed[1]) == ["claim", "kind", "reason"]
    adapter: TypeAdapter[Action] = TypeAdapter(Action)
    assert tuple(adapter.validate_python(p) for p in printed) == plan.actions
