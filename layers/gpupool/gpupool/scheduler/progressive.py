"""Progressive migration's node taint: which nodes should carry `tensor-fusion.ai/used-by`.

Role: the production guide's step 5 — with progressive migration on, a node where gpupool has
placed at least one worker carries the taint `tensor-fusion.ai/used-by=tensor-fusion:
PreferNoSchedule` (TensorFusion's key, value and effect), so pods that keep native
`nvidia.com/gpu` prefer other nodes; the taint goes once the node's last worker is released.
`plan_used_by_taints` compares the nodes that run workers with the nodes that carry the taint
and says which to add and which to clear; `taints_after` edits one Node's taint list.

Must not: call the API server (the relay applies the plan) or read allocator state itself.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Set
from dataclasses import dataclass
from typing import Any, Final

from gpupool.core.model import constants as c

__all__ = ["USED_BY_TAINT", "TaintPlan", "has_used_by_taint", "plan_used_by_taints", "taints_after"]

USED_BY_TAINT: Final = {
    "key": c.TAINT_USED_BY,
    "value": c.TAINT_USED_BY_VALUE,
    "effect": c.TAINT_USED_BY_EFFECT,
}


@dataclass(frozen=True, slots=True)
class TaintPlan:
    """Nodes to taint and nodes to clear, each sorted by name."""

    add: tuple[str, ...] = ()
    remove: tuple[str, ...] = ()

    @property
    def empty(self) -> bool:
        return not self.add and not self.remove


def plan_used_by_taints(busy: Set[str], tainted: Set[str], known: Set[str]) -> TaintPlan:
    """Taint every known node that runs a worker and lacks the taint; clear idle tainted nodes.

    `busy`: nodes holding at least one gpupool allocation; `tainted`: nodes whose Node object
    carries the taint; `known`: nodes whose Node object exists (a node not seen yet is left
    alone, so nothing is written to a Node that may not exist).
    """
    return TaintPlan(add=tuple(sorted((busy & known) - tainted)), remove=tuple(sorted(tainted - busy)))


def _is_ours(taint: Mapping[str, Any]) -> bool:
    return taint.get("key") == c.TAINT_USED_BY and taint.get("effect") == c.TAINT_USED_BY_EFFECT


def has_used_by_taint(taints: Iterable[Mapping[str, Any]]) -> bool:
    return any(_is_ours(t) for t in taints)


def taints_after(taints: Iterable[Mapping[str, Any]], *, present: bool) -> list[dict[str, Any]] | None:
    """The Node's taint list with ours added (`present`) or removed; None when nothing changes.

    Other taints, including another effect under our key, are kept as they are.
    """
    current = [dict(t) for t in taints]
    if has_used_by_taint(current) == present:
        return None
    if present:
        return [*current, dict(USED_BY_TAINT)]
    return [t for t in current if not _is_ours(t)]
