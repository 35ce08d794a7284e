"""The service tests' Karpenter fake: `MemoryKarpenter` plus `register`, which also joins the node.

`MemoryKarpenter` (gpupool.testing.memory_ports.karpenter) records calls, takes injected errors,
stores NodeClaims and plays Karpenter's controller (`launched`, `insufficient_capacity`, `launch_error`,
`registered`, `finish_deletion`); `register(world, name)` joins the node in the test world's
cluster with the NodeClaim's labels (Karpenter copies them) and marks it Registered.
"""

from __future__ import annotations

from gpupool.testing.memory_ports.karpenter import MemoryKarpenter
from tests.service.fakes import World

__all__ = ["FakeKarpenter"]


class FakeKarpenter(MemoryKarpenter):
    def register(self, world: World, name: str) -> str:
        """The node joins with the NodeClaim's labels (Karpenter copies them) and is Ready."""
        self.launched(name)
        labels = self.nodeclaims[name].metadata.labels
        node = world.cluster.join_node(name, labels=labels)
        self.registered(name, node)
        return node
