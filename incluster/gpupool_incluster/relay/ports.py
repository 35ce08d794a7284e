"""What the relay's hub needs from outside: its settings and the cluster writes it makes.

Role: `ClusterWriter` (bind's reads and writes of pods), `NodeTainter` (progressive migration's
node taint), `NodeLabeller` (the usable-GPUs label), `BindFailed`, and `HubSettings`.
`KubeWriter` implements the three ports over the official client; tests use in-memory fakes.

Must not: implement anything.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from gpupool.core.allocator import PlacementPolicy

__all__ = ["BindFailed", "ClusterWriter", "HubSettings", "NodeLabeller", "NodeTainter"]


class ClusterWriter(Protocol):
    """The two writes bind makes; each raises on failure (conflict, not found, …)."""

    def annotate_pod(self, namespace: str, name: str, annotations: Mapping[str, str | None]) -> None:
        """Merge annotations onto the pod; a None value removes that annotation."""
        ...

    def bind_pod(self, namespace: str, name: str, uid: str, node: str) -> None: ...

    def read_pod(self, namespace: str, name: str) -> dict[str, Any]: ...


class NodeTainter(Protocol):
    def set_used_by_taint(self, node: str, present: bool) -> bool:
        """Add (present) or clear the `tensor-fusion.ai/used-by` taint; True when the Node changed.

        Raises on failure (node gone, repeated conflicts, no permission).
        """
        ...


class NodeLabeller(Protocol):
    def set_usable_gpus(self, node: str, value: str | None) -> None:
        """Set the `gpupool.io/usable-gpus` label to `value`, or remove it (None); no other label.

        Raises on failure (node gone, no permission, …).
        """
        ...


class BindFailed(Exception):
    """Bind did not happen; the message goes to ExtenderBindingResult.Error."""


@dataclass(frozen=True, slots=True)
class HubSettings:
    policy: PlacementPolicy = field(default_factory=PlacementPolicy)
    default_pool: str = ""
    progressive_migration: bool = False
    replica_settle: float = 2.0
    """Seconds an `enabled-replicas` admission waits for the watch to show the replicas the webhook
    just let move (`replicas`); well under the webhook's 10 s timeout."""

    def __post_init__(self) -> None:
        if not 0 < self.replica_settle < 8:
            raise ValueError("replica_settle must be between 0 and 8 seconds (the webhook times out at 10)")
