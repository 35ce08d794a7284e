"""The ports of the machines the service drives, and of time.

Role: `Compute` (the nodes launched for claims: cloud instances in Provisioned mode, Karpenter
NodeClaims in Karpenter mode — after Karpenter's `CloudProvider`: create, get, list, delete),
`CloudProvider` (a cloud behind that one interface, named: each cloud's package under
`gpupool.adapters` implements it, and the service speaks to a cloud through nothing else) and
`Clock` (time) as Protocols; each method's docstring is its contract.

Must not: contain logic, import an SDK, or know about dry-run.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Protocol

from gpupool.core.model.instance import LaunchTemplate, ManagedInstance
from gpupool.core.planning.plan import OfferingRef

if TYPE_CHECKING:
    from gpupool.core.model.nodeclaim import GPUNodeClaim

__all__ = ["Clock", "CloudProvider", "Compute"]


class Clock(Protocol):
    def now(self) -> datetime:
        """The current time, timezone-aware UTC. Never raises."""
        ...


class Compute(Protocol):
    """The nodes launched for claims, by one provisioning mode: cloud instances (Provisioned:
    only those tagged `managed-by=tensor-fusion.ai` and `tensor-fusion.ai/cluster=<cluster>` are
    ever reported or touched) or karpenter.sh NodeClaims (Karpenter: only those labelled
    `tensor-fusion.ai/node-provisioner`). Ids are the Compute's own: each reports and acts on
    the ids it gave out, and leaves any other id alone."""

    def launch(
        self,
        claim: GPUNodeClaim,
        template: LaunchTemplate,
        offering: OfferingRef,
        *,
        client_token: str,
    ) -> str:
        """Start the node of `claim` from `template` and return its id.

        Provisioned (`template` a GPUNodeClass): uses everything in it (image, subnets, security
        groups, profile, metadata options, disks, tags, userData with `__GPU_NODE_RESOURCE_NAME__`
        replaced by the claim name), places the instance per `offering` (type, zone,
        spot/on-demand), tags it (DESIGN §2), and sends `client_token` so a repeated call returns
        the same instance where the cloud honours it. Karpenter (`template` a NodeClaimTemplate):
        creates the claim's NodeClaim from it, owned by the claim, once the node class it names
        exists; a NodeClaim of that name the claim owns already is adopted. Does not look for an
        existing instance first: callers call `find_by_claim` before.

        Raises: CapacityUnavailable (no capacity for this offering), Throttled, Conflict (lost a
        race with another writer of the same name: re-decide), PermanentError (invalid
        parameters, unauthorized, a missing node class, a template of the other mode: the claim
        should fail with the message).
        """
        ...

    def launchable_zones(self, template: LaunchTemplate) -> frozenset[str] | None:
        """The zones `template` can place a node in (a GPUNodeClass: those of its subnets); None
        when any zone will do (no subnet selector: the account's default subnet of each zone;
        Karpenter: its node class picks the subnet).

        Raises: Throttled, PermanentError (unauthorized)."""
        ...

    def find_by_claim(self, claim: GPUNodeClaim) -> ManagedInstance | None:
        """The live (not terminated) node launched for `claim`: the managed instance tagged
        `tensor-fusion.ai/node-name=<claim name>`, or the NodeClaim of the claim's name.

        Returns None when there is none; when several exist (a cloud that ignored the client
        token), the oldest. Raises: Throttled, PermanentError (also when a NodeClaim of the
        claim's name is owned by another object: it is never adopted).
        """
        ...

    def describe(self, instance_ids: Sequence[str]) -> list[ManagedInstance]:
        """The managed instances among `instance_ids` (terminated ones included while the cloud
        still reports them; a NodeClaim that is gone reads as terminated); unknown, untagged or
        foreign ids are left out, never an error. Raises: Throttled, PermanentError."""
        ...

    def terminate(self, instance_id: str) -> None:
        """Terminate a managed instance (delete a NodeClaim). Idempotent: one already terminated
        or gone is success. Raises: PermanentError when the instance is not ours (never
        terminated), Throttled."""
        ...

    def list_managed(self) -> list[ManagedInstance]:
        """Every managed instance of this cluster (for the orphan sweep and bind); a cloud reports
        its live ones, Karpenter every NodeClaim of a claim (those being deleted included).
        Raises: Throttled, PermanentError."""
        ...

    def check_connection(self) -> None:
        """Prove the credentials reach the instance API with a call that changes nothing (AWS:
        DescribeInstances with DryRun; Alibaba: DescribeRegions; Karpenter: list NodeClaims).
        Returns None when it works. Raises: PermanentError (unauthorized, bad credentials,
        unknown region, no NodeClaim CRD), Throttled (unreachable, rate limited) — their message
        is what the cluster's condition shows."""
        ...


class CloudProvider(Compute, Protocol):
    """A cloud behind one interface, as Karpenter's `CloudProvider`: the `Compute` of
    Provisioned mode, and its name. `gpupool.adapters.<cloud>.compute` implements it; the
    service never names a cloud or its API (docs/CONTRIBUTING.md lists what a new one adds)."""

    @property
    def vendor(self) -> str:
        """The TensorFusionCluster `spec.computingVendor.type` this cloud serves (one of
        `gpupool.core.model.cloud.CLOUDS`)."""
        ...

    @property
    def connection_call(self) -> str:
        """The call `check_connection` makes, as the cluster's CloudVendorConnectionReady
        condition names it (e.g. "DescribeInstances")."""
        ...
