"""A claim's node as a `Compute` reports it, and what a `Compute` launches one with.

Role: `ManagedInstance` — one cloud instance (Provisioned mode) or one karpenter.sh NodeClaim
(Karpenter mode) as the service's `Compute` port reports it; only what gpupool launched for a
claim is ever reported. `LaunchTemplate` — what the pool's mode launches a claim's node with:
a `GPUNodeClass` (Provisioned: gpupool runs the instance from it) or a Karpenter
`NodeClaimTemplate` (Karpenter: the pool's karpenterNodeClassRef, node labels, annotations,
taints and further requirements, from which the NodeClaim is made — the shape of a Karpenter
NodePool's `spec.template`).

Must not: hold behaviour beyond reading a record (the `Compute` implementations fill them).
"""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from pydantic import ConfigDict, Field

from gpupool.core.deferred_model import DeferredModel
from gpupool.core.model.karpenter import NodeClaimTemplate
from gpupool.core.model.nodeclass import GPUNodeClass

__all__ = ["InstanceLifecycle", "LaunchTemplate", "ManagedInstance"]

InstanceLifecycle = Literal["pending", "running", "stopping", "stopped", "shutting-down", "terminated"]
LaunchTemplate = GPUNodeClass | NodeClaimTemplate


class ManagedInstance(DeferredModel):
    """A claim's instance as the `Compute` port reports it (only gpupool's are ever reported).

    `claim_name` comes from the `tensor-fusion.ai/node-name` tag (a NodeClaim: its
    `tensor-fusion.ai/node-provisioner` label), `cluster` from `tensor-fusion.ai/cluster` (unset
    for a NodeClaim, which its owner reference ties to its claim instead); `launch_time` is
    timezone-aware UTC.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    instance_id: str = Field(min_length=1)
    state: InstanceLifecycle
    claim_name: str | None = None
    node_class: str | None = None
    cluster: str | None = None
    instance_type: str | None = None
    zone: str | None = None
    capacity_type: str | None = None
    launch_time: datetime | None = None
    tags: dict[str, str] = Field(default_factory=dict)
    client_token: str | None = None
    """The idempotency token of the request that launched it, where the cloud reports it (EC2's
    `ClientToken`; ECS does not): `decisions.instance_owner` trusts tags only beside it."""

    @property
    def gone(self) -> bool:
        """True when the instance is terminated or on its way there."""
        return self.state in ("shutting-down", "terminated")
