"""A `Compute` that also reports Karpenter NodeClaims as the instances of Karpenter-mode claims.

Role: `KarpenterAwareCompute(cloud, karpenter)` routes by id: `nodeclaim/<name>` ids (recorded
by Karpenter-mode claims) go to the Karpenter port — described from the NodeClaim's
conditions (`nodeclaim_instance`), reported `terminated` once the NodeClaim is gone, and
"terminated" by deleting the NodeClaim — and every other id goes to the cloud. So the claim
lifecycle (bind when the node joins, fail on a launch failure or a vanished NodeClaim,
timeouts, delete with the claim) is the Provisioned one. `with_karpenter(deps, karpenter)`
wires it. Launching a NodeClaim is not here: the `LaunchNodeClaim` applier does it.

Must not: decide anything, or let a NodeClaim id reach the cloud (or a cloud id reach Karpenter).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from gpupool.core.decisions.karpenter_nodeclaim import nodeclaim_instance, nodeclaim_name_of
from gpupool.core.model.nodeclaim import GPUNodeClaim
from gpupool.core.model.nodeclass import GPUNodeClass
from gpupool.core.planning.plan import OfferingRef
from gpupool.core.planning.snapshot import ManagedInstance
from gpupool.service.deps import Deps
from gpupool.service.errors import NotFound
from gpupool.service.karpenter_ports import KarpenterApi
from gpupool.service.ports import Compute

__all__ = ["KarpenterAwareCompute", "with_karpenter"]


class KarpenterAwareCompute:
    def __init__(self, cloud: Compute, karpenter: KarpenterApi) -> None:
        self.cloud = cloud
        self.karpenter = karpenter

    def launch(
        self, claim: GPUNodeClaim, node_class: GPUNodeClass, offering: OfferingRef, *, client_token: str
    ) -> str:
        return self.cloud.launch(claim, node_class, offering, client_token=client_token)

    def launchable_zones(self, node_class: GPUNodeClass) -> frozenset[str] | None:
        return self.cloud.launchable_zones(node_class)

    def find_by_claim(self, claim_name: str) -> ManagedInstance | None:
        return self.cloud.find_by_claim(claim_name)

    def describe(self, instance_ids: Sequence[str]) -> list[ManagedInstance]:
        cloud_ids = [i for i in instance_ids if nodeclaim_name_of(i) is None]
        described = self.cloud.describe(cloud_ids) if cloud_ids else []
        for instance_id in instance_ids:
            name = nodeclaim_name_of(instance_id)
            if name is None:
                continue
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
            self.cloud.terminate(instance_id)
            return
        try:
            self.karpenter.delete_nodeclaim(name)
        except NotFound:
            return

    def check_connection(self) -> None:
        self.cloud.check_connection()

    def list_managed(self) -> list[ManagedInstance]:
        return [
            *self.cloud.list_managed(),
            *(nodeclaim_instance(n) for n in self.karpenter.list_nodeclaims()),
        ]


def with_karpenter(deps: Deps, karpenter: KarpenterApi) -> Deps:
    """`deps` whose compute also answers for NodeClaims, with the Karpenter port set."""
    return replace(deps, compute=KarpenterAwareCompute(deps.compute, karpenter), karpenter=karpenter)
