"""AutoSelect and a NodePool's `limits`: existing + in flight + new never above them.

Role: Karpenter checks a NodePool's `spec.limits` only for the NodeClaims its own provisioner
makes (`provisioning/provisioner.go`); a NodeClaim someone else creates in the NodePool is
launched whatever the limits say. So AutoSelect checks them itself before it asks for a node.
`NodePoolUsage.of(nodepools, nodeclaims, nodes)` counts, per NodePool, what its NodeClaims hold
— as Karpenter's NodePool status counts it: a launched NodeClaim's `status.capacity`, else its
node's capacity; one not launched yet (in flight: its type is not chosen) is counted like the
template node the next expansion is copied from, as is every new expansion. `exceeded_by` is the
limit one more such node would pass (a sentence naming the NodePool, the resource, the limit and
the count), None when it fits; `add` counts an admitted expansion in.

Must not: perform I/O, read the clock, or decide which pods expand (`decisions.autoselect`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Final

from gpupool.core.model.foreign import Node
from gpupool.core.model.karpenter import KarpenterNodeClaim, KarpenterNodePool
from gpupool.core.quantity import Quantity

__all__ = ["EVENT_NODEPOOL_LIMIT_REACHED", "NodePoolUsage"]

EVENT_NODEPOOL_LIMIT_REACHED: Final = "NodePoolLimitReached"  # gpupool's Warning on the GPUPool
_LABEL_NODEPOOL: Final = "karpenter.sh/nodepool"


def _capacity(node: Node) -> Mapping[str, Quantity]:
    return node.status.capacity or node.status.allocatable


@dataclass
class NodePoolUsage:
    """What each limited NodePool's NodeClaims hold: known capacity, plus a count of those whose
    capacity is not known yet (each counted like the template node)."""

    limits: dict[str, dict[str, Quantity]]
    known: dict[str, dict[str, Quantity]] = field(default_factory=dict)
    unknown: dict[str, int] = field(default_factory=dict)

    @classmethod
    def of(
        cls,
        nodepools: Sequence[KarpenterNodePool],
        nodeclaims: Sequence[KarpenterNodeClaim],
        nodes: Sequence[Node],
    ) -> NodePoolUsage:
        usage = cls(limits={p.name: dict(p.spec.limits) for p in nodepools if p.spec.limits})
        by_name = {n.name: n for n in nodes}
        for nodeclaim in nodeclaims:
            pool = nodeclaim.metadata.labels.get(_LABEL_NODEPOOL)
            if pool not in usage.limits or nodeclaim.metadata.deletion_timestamp is not None:
                continue
            node = by_name.get(nodeclaim.status.node_name or "")
            held = nodeclaim.status.capacity or (_capacity(node) if node is not None else {})
            if not held:
                usage.unknown[pool] = usage.unknown.get(pool, 0) + 1
                continue
            totals = usage.known.setdefault(pool, {})
            for resource, amount in held.items():
                totals[resource] = totals.get(resource, Quantity(0)) + amount
        return usage

    def _total(self, pool: str, resource: str, like: Node, extra: int) -> tuple[Quantity, Quantity]:
        each = _capacity(like).get(resource, Quantity(0))
        used = self.known.get(pool, {}).get(resource, Quantity(0)) + each * self.unknown.get(pool, 0)
        return used, used + each * extra

    def exceeded_by(self, pool: str, like: Node) -> str | None:
        """The limit of NodePool `pool` one more node like `like` would pass; None when it fits."""
        for resource, limit in sorted(self.limits.get(pool, {}).items()):
            used, after = self._total(pool, resource, like, 1)
            if limit < after:
                return (
                    f"NodePool {pool}'s limit {resource}: {limit} would be exceeded "
                    f"({used} held or in flight, a node like {like.name} adds "
                    f"{_capacity(like).get(resource, Quantity(0))})"
                )
        return None

    def add(self, pool: str) -> None:
        """Count one more expansion in `pool` (its capacity unknown until launched)."""
        if pool in self.limits:
            self.unknown[pool] = self.unknown.get(pool, 0) + 1
