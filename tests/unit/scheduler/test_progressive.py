"""Progressive migration's used-by taint: which nodes gain or lose it, and how a taint list is edited."""

from __future__ import annotations

import pytest

from gpupool.scheduler.progressive import (
    USED_BY_TAINT,
    TaintPlan,
    has_used_by_taint,
    plan_used_by_taints,
    taints_after,
)

OURS = {"key": "tensor-fusion.ai/used-by", "value": "tensor-fusion", "effect": "PreferNoSchedule"}
OTHER = {"key": "dedicated", "value": "gpu", "effect": "NoSchedule"}

PLANS = [
    # busy, tainted, known -> add, remove
    ({"a"}, set(), {"a", "b"}, ("a",), ()),  # first worker on a: taint it
    ({"a"}, {"a"}, {"a", "b"}, (), ()),  # already tainted: nothing
    (set(), {"a"}, {"a", "b"}, (), ("a",)),  # last worker gone: clear
    ({"a", "c"}, {"b"}, {"a", "b"}, ("a",), ("b",)),  # c has no Node object yet: left alone
    (set(), set(), set(), (), ()),
]


@pytest.mark.parametrize(("busy", "tainted", "known", "add", "remove"), PLANS)
def test_plan_taints_busy_nodes_and_clears_idle_ones(
    busy: set[str], tainted: set[str], known: set[str], add: tuple[str, ...], remove: tuple[str, ...]
) -> None:
    plan = plan_used_by_taints(busy, tainted, known)
    assert plan == TaintPlan(add=add, remove=remove)
    assert plan.empty is (not add and not remove)


def test_the_taint_is_tensorfusions() -> None:
    assert USED_BY_TAINT == OURS


def test_taints_after_adds_once_and_keeps_other_taints() -> None:
    added = taints_after([OTHER], present=True)
    assert added == [OTHER, OURS]
    assert taints_after(added, present=True) is None
    assert has_used_by_taint(added) and not has_used_by_taint([OTHER])


def test_taints_after_removes_only_ours() -> None:
    same_key_other_effect = {**OURS, "effect": "NoSchedule"}
    assert taints_after([OTHER, OURS, same_key_other_effect], present=False) == [OTHER, same_key_other_effect]
    assert taints_after([OTHER], present=False) is None
    assert taints_after([OURS], present=False) == []
