"""The cloud side of the scale benchmark: the account's instances in memory, no network.

Role: `MemoryCompute(instances, cluster=…)` implements the service's `Compute` port over a
dict, so the functions' cloud calls cost next to nothing and the figures measure what they
read from Kubernetes. Launches get ids counting on from the world's last; terminations mark
the instance terminated.

Must not: decide anything, or report an instance that is not tagged for the cluster.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from gpupool.core.model.nodeclaim import GPUNodeClaim
from gpupool.core.model.nodeclass import GPUNodeClass
from gpupool.core.planning.plan import OfferingRef
from gpupool.core.planning.snapshot import ManagedInstance

__all__ = ["MemoryCompute"]


class MemoryCompute:
    def __init__(self, instances: Sequence[ManagedInstance], *, cluster: str, launch_time: datetime) -> None:
        self.cluster = cluster
        self.instances = {i.instance_id: i for i in instances}
        self._next = len(self.instances) + 1
        self._launch_time = launch_time
        self.launched: list[str] = []
        self.terminated: list[str] = []

    def launch(
        self, claim: GPUNodeClaim, node_class: GPUNodeClass, offering: OfferingRef, *, client_token: str
    ) -> str:
        instance_id = f"i-{self._next:017x}"
        self._next += 1
        self.instances[instance_id] = ManagedInstance(
            instance_id=instance_id,
            state="pending",
            claim_name=claim.name,
            node_class=node_class.name,
            cluster=self.cluster,
            instance_type=offering.instance_type,
            zone=offering.zone,
            capacity_type=offering.capacity_type,
            launch_time=self._launch_time,
        )
        self.launched.append(instance_id)
        return instance_id

    def changes(self) -> dict[str, ManagedInstance]:
        """Every instance launched or terminated here, as it stands (for the next function's cloud)."""
        return {i: self.instances[i] for i in (*self.launched, *self.terminated)}

    def apply(self, changes: dict[str, ManagedInstance]) -> None:
        """Take on another function's `changes()`: the account is one, the functions several."""
        self.instances.update(changes)
        self._next = max([self._next, *(int(i[2:], 16) + 1 for i in changes)])

    def launchable_zones(self, node_class: GPUNodeClass) -> frozenset[str] | None:
        return None

    def find_by_claim(self, claim_name: str) -> ManagedInstance | None:
        found = [i for i in self.instances.values() if i.claim_name == claim_name and not i.gone]
        return min(found, key=lambda i: i.instance_id) if found else None

    def describe(self, instance_ids: Sequence[str]) -> list[ManagedInstance]:
        return [self.instances[i] for i in instance_ids if i in self.instances]

    def terminate(self, instance_id: str) -> None:
        if instance_id in self.instances:
            self.instances[instance_id] = self.instances[instance_id].model_copy(
                update={"state": "terminated"}
            )
            self.terminated.append(instance_id)

    def list_managed(self) -> list[ManagedInstance]:
        return [i for i in self.instances.values() if not i.gone]

    def check_connection(self) -> None:
        return None
