"""Prevalidated: a container's tuple of models is checked by type, kept as a tuple, and refuses
anything else with the item and its type; the item types' schemas are never built for it."""

from __future__ import annotations

import subprocess
import sys
from typing import Annotated

import pytest
from pydantic import ValidationError

from gpupool.core.deferred_model import DeferredModel
from gpupool.core.planning.plan import ACTION_TYPES, Plan, RecordEvent
from gpupool.core.prevalidated import Prevalidated


class Leaf(DeferredModel):
    size: int


class Other(DeferredModel):
    size: int


class Box(DeferredModel):
    leaves: Annotated[tuple[Leaf, ...], Prevalidated(Leaf)] = ()


def test_instances_are_kept_as_a_tuple() -> None:
    leaves = [Leaf(size=1), Leaf(size=2)]
    box = Box(leaves=leaves)
    assert box.leaves == tuple(leaves)
    assert box.leaves[0] is leaves[0]  # not copied, not validated again


@pytest.mark.parametrize(
    ("value", "error"),
    [
        ([Leaf(size=1), Other(size=2)], "item 1: expected Leaf, got Other"),
        ([{"size": 1}], "item 0: expected Leaf, got dict"),
        ("leaves", "expected a sequence of Leaf, got str"),
        ({"size": 1}, "expected a sequence of Leaf, got dict"),
        (7, "expected a sequence of Leaf, got int"),
    ],
)
def test_anything_else_is_refused_naming_the_item(value: object, error: str) -> None:
    with pytest.raises(ValidationError, match=error):
        Box.model_validate({"leaves": value})


def test_a_plan_refuses_what_is_not_an_action() -> None:
    with pytest.raises(ValidationError, match="item 0: expected actions, got str"):
        Plan(actions=["launch"])


def test_a_plan_serializes_each_action_as_its_model() -> None:
    event = RecordEvent(object_kind="GPUPool", object_name="a", reason="r", message="m")
    assert Plan(actions=[event]).model_dump(mode="json")["actions"] == [event.model_dump(mode="json")]
    assert len(ACTION_TYPES) == 17


def test_a_plan_builds_no_action_kinds_payload() -> None:
    """A plan of one RecordEvent does not build the schema of CreateNodeClaim's Karpenter NodeClaim."""
    code = (
        "from gpupool.core.planning.plan import Plan, RecordEvent; "
        "from gpupool.core.model.karpenter import KarpenterNodeClaim; "
        "Plan(actions=[RecordEvent(object_kind='GPUPool', object_name='a', reason='r', message='m')]); "
        "print(KarpenterNodeClaim.__pydantic_complete__)"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "False"


def test_it_needs_the_item_types() -> None:
    with pytest.raises(TypeError, match="item types"):
        Prevalidated()
