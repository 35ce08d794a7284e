"""The `Compute` of Karpenter mode: a claim's node is a karpenter.sh NodeClaim Karpenter launches.

Role: `KarpenterCompute(karpenter)` implements `ports.Compute` over the `KarpenterApi` port, the
way Karpenter's own `CloudProvider` does over a cloud (Create / Get / List / Delete on
NodeClaims): `launch` makes the claim's NodeClaim from the pool's template
(`karpenter_nodeclaim.build_karpenter_nodeclaim`), owned by the claim, once it is one
Karpenter's API server accepts (`karpenter_rules`) and the node class it names exists,
adopting one of that name the claim already owns; `find_by_claim`, `describe` and
`list_managed` read NodeClaims as instances (`nodeclaim_instance`: pending until Launched,
running once Launched, terminated when Karpenter gave up or the NodeClaim is gone); `terminate`
deletes one (Karpenter's finalizer then ends its node and instance). Its ids are
`nodeclaim/<name>`; any other id is not its own and is left out or refused. So the claim
lifecycle (bind when the node joins, fail on a launch failure or a vanished NodeClaim, timeouts,
delete with the claim) is the Provisioned one. `Deps.compute_for` picks it for Karpenter-mode
claims.

Must not: decide anything, touch a NodeClaim no GPUNodeClaim owns (AutoSelect's expansions are
`appliers_autoselect`'s), or import an SDK.
"""

from __future__ import annotations

from collections.abc import Sequence

from gpupool.core.decisions.karpenter_nodeclaim import (
    KarpenterModeError,
    build_karpenter_nodeclaim,
    nodeclaim_instance,
    nodeclaim_instance_id,
    nodeclaim_name_of,
    owned_by,
)
from gpupool.core.model.instance import LaunchTemplate, ManagedInstance
from gpupool.core.model.karpenter import KarpenterNodeClaim, NodeClaimTemplate
from gpupool.core.model.karpenter_rules import nodeclaim_problems
from gpupool.core.model.nodeclaim import GPUNodeClaim
from gpupool.core.planning.plan import OfferingRef
from gpupool.service.errors import AlreadyExists, Conflict, NotFound, PermanentError
from gpupool.service.karpenter_ports import KarpenterApi

__all__ = ["KarpenterCompute"]


def _owned(nodeclaim: KarpenterNodeClaim, claim: GPUNodeClaim) -> KarpenterNodeClaim:
    """`nodeclaim` when `claim` is its controller owner; PermanentError otherwise."""
    owners = {o.uid for o in nodeclaim.metadata.owner_references if o.controller}
    if claim.metadata.uid not in owners:
        raise PermanentError(f"NodeClaim {claim.name} exists but is not owned by GPUNodeClaim {claim.name}")
    return nodeclaim


class KarpenterCompute:
    """Karpenter's NodeClaims as the nodes of Karpenter-mode claims."""

    def __init__(self, karpenter: KarpenterApi) -> None:
        self.karpenter = karpenter

    def _existing(self, claim: GPUNodeClaim) -> KarpenterNodeClaim | None:
        try:
            return _owned(self.karpenter.get_nodeclaim(claim.name), claim)
        except NotFound:
            return None

    def launch(
        self, claim: GPUNodeClaim, template: LaunchTemplate, offering: OfferingRef, *, client_token: str
    ) -> str:
        # `offering` is in the claim's spec already (the NodeClaim's requirements pin it), and
        # Kubernetes names make a create idempotent without `client_token`.
        if not isinstance(template, NodeClaimTemplate):
            raise PermanentError(f"claim {claim.name}: Karpenter mode launches from a NodeClaim template")
        try:
            nodeclaim = owned_by(build_karpenter_nodeclaim(template, claim), claim)
        except KarpenterModeError as error:
            raise PermanentError(str(error)) from error
        problems = nodeclaim_problems(nodeclaim)
        if problems:  # e.g. a claim's own extraParams: refused here, not by the API server
            raise PermanentError(f"NodeClaim {claim.name} would be refused: {'; '.join(problems)}")
        ref = nodeclaim.spec.node_class_ref
        if ref is not None and not self.karpenter.node_class_exists(ref):
            raise PermanentError(f"{ref.kind} {ref.name} ({ref.group}) not found")
        for _ in range(2):  # a NodeClaim that came and went between create and get: once more
            try:
                self.karpenter.create_nodeclaim(nodeclaim)
                return nodeclaim_instance_id(claim.name)
            except AlreadyExists:
                if self._existing(claim) is not None:
                    return nodeclaim_instance_id(claim.name)
        raise Conflict(f"NodeClaim {claim.name} keeps coming and going; the next decision re-checks")

    def launchable_zones(self, template: LaunchTemplate) -> frozenset[str] | None:
        return None  # Karpenter's node class chooses the subnet; the claim pins the zone

    def find_by_claim(self, claim: GPUNodeClaim) -> ManagedInstance | None:
        existing = self._existing(claim)
        if existing is None:
            return None
        instance = nodeclaim_instance(existing)
        return None if instance.gone else instance

    def describe(self, instance_ids: Sequence[str]) -> list[ManagedInstance]:
        described: list[ManagedInstance] = []
        for instance_id in instance_ids:
            name = nodeclaim_name_of(instance_id)
            if name is None:
                continue  # not a NodeClaim id: not ours to describe
            try:
                described.append(nodeclaim_instance(self.karpenter.get_nodeclaim(name)))
            except NotFound:  # deleted (by Karpenter after a failed launch, or by hand)
                described.append(
                    ManagedInstance(instance_id=instance_id, state="terminated", claim_name=name)
                )
        return described

    def terminate(self, instance_id: str) -> None:
        name = nodeclaim_name_of(instance_id)
        if name is None:
            raise PermanentError(f"refusing to terminate {instance_id}: it is not a Karpenter NodeClaim id")
        try:
            self.karpenter.delete_nodeclaim(name)
        except NotFound:
            return

    def list_managed(self) -> list[ManagedInstance]:
        return [nodeclaim_instance(n) for n in self.karpenter.list_nodeclaims()]

    def check_connection(self) -> None:
        self.karpenter.check_access()
