"""What the agent needs from the cluster: its node's pods and GPU objects, status writes, Events.

Role: the `AgentCluster` port. `kube.KubeAgentCluster` implements it over the official client;
tests pass in-memory fakes or run the real one against the embedded API server.

Must not: implement anything.
"""

from __future__ import annotations

from typing import Any, Literal, Protocol

from gpupool.core.model.foreign import Pod

__all__ = ["AgentCluster", "JsonObject"]

JsonObject = dict[str, Any]


class AgentCluster(Protocol):
    """Every method raises on failure (the runner logs and retries on its next tick)."""

    def node_pods(self, node: str) -> list[Pod]:
        """Pods bound to `node` (any phase)."""
        ...

    def node_gpus(self, node: str) -> list[JsonObject]:
        """GPU objects on `node` (label `kubernetes.io/hostname`: `discovery.hostname_label(node)`)."""
        ...

    def apply_gpu(self, body: JsonObject) -> None:
        """Create the GPU object, or replace its labels, annotations and status."""
        ...

    def node_pool(self, node: str) -> str | None:
        """The pool of the node's GPUNode (label `tensor-fusion.ai/pool-<pool>=true`), if any."""
        ...

    def write_gpunode_status(self, node: str, status: JsonObject) -> None:
        """Replace the GPUNode's status (creating the GPUNode when it does not exist)."""
        ...

    def record_event(
        self,
        *,
        involved: JsonObject,
        reason: str,
        message: str,
        kind: Literal["Normal", "Warning"] = "Normal",
    ) -> None:
        """A core v1 Event about `involved` ({apiVersion, kind, name, namespace?, uid?})."""
        ...

    def evict_pod(self, namespace: str, name: str, *, uid: str = "") -> None:
        """Evict through the pods/eviction subresource (honours PodDisruptionBudgets); with `uid`,
        only that pod (a precondition: never a same-named pod that replaced it, on another node)."""
        ...
