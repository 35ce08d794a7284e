"""In-memory `Compute` port: cloud instances in a dict, on the simulated clock.

Role: `MemoryCompute` is the cloud's Compute (Provisioned mode): it keeps `ManagedInstance`s,
launches them `pending` at the clock's time from a GPUNodeClass (another mode's template is a
PermanentError, as on EC2 and ECS), fails a launch with CapacityUnavailable for the offering keys
in `no_capacity`, refuses to terminate an untagged instance (`untagged`), and records every call
(`CallRecorder`). Service
tests and `gpupool simulate capacity` use it; the contract tests hold the real adapters to the
same behaviour. `set_state` is how a test or a simulated cloud moves an instance on.

Must not: decide anything (the service does); talk to a cloud.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence

from gpupool.core.model.constants import (
    TAG_CLUSTER,
    TAG_MANAGED_BY,
    TAG_MANAGED_BY_VALUE,
    TAG_NODE_CLASS,
    TAG_NODE_NAME,
)
from gpupool.core.model.instance import LaunchTemplate, ManagedInstance
from gpupool.core.model.nodeclaim import GPUNodeClaim
from gpupool.core.model.nodeclass import GPUNodeClass
from gpupool.core.planning.plan import OfferingRef
from gpupool.service.errors import CapacityUnavailable, PermanentError
from gpupool.testing.memory_ports.recorder import CallRecorder, MemoryClock

__all__ = ["MemoryCompute"]


def _node_class(template: LaunchTemplate) -> GPUNodeClass:
    if not isinstance(template, GPUNodeClass):
        raise PermanentError("the cloud launches from a GPUNodeClass, not a Karpenter NodeClaim template")
    return template


class MemoryCompute(CallRecorder):
    """Instances in memory; `no_capacity` holds offering keys (type/zone/capacity) that fail.

    As a `CloudProvider` it answers for the cloud `vendor` names, its connection check named as
    that cloud's adapter names it (`connection_call`; AWS's by default, as the sandbox's EC2)."""

    def __init__(
        self,
        clock: MemoryClock,
        *,
        cluster: str = "demo",
        vendor: str = "aws",
        connection_call: str = "DescribeInstances",
    ) -> None:
        super().__init__()
        self.vendor = vendor
        self.connection_call = connection_call
        self.clock = clock
        self.cluster = cluster
        self.instances: dict[str, ManagedInstance] = {}
        self.untagged: dict[str, ManagedInstance] = {}
        self.no_capacity: set[str] = set()
        self.zones: frozenset[str] | None = None  # launchable zones of every node class; None = any
        self.launched: list[tuple[str, str]] = []  # (claim, offering key)
        self._ids = itertools.count(1)

    def launch(
        self, claim: GPUNodeClaim, template: LaunchTemplate, offering: OfferingRef, *, client_token: str
    ) -> str:
        def work() -> str:
            node_class = _node_class(template)
            if offering.key in self.no_capacity:
                raise CapacityUnavailable(f"InsufficientInstanceCapacity for {offering.key}")
            instance_id = f"i-{next(self._ids):017x}"
            tags = {
                TAG_MANAGED_BY: TAG_MANAGED_BY_VALUE,
                TAG_NODE_NAME: claim.name,
                TAG_NODE_CLASS: node_class.name,
                TAG_CLUSTER: self.cluster,
                **node_class.spec.tags,
            }
            self.instances[instance_id] = ManagedInstance(
                instance_id=instance_id,
                state="pending",
                claim_name=claim.name,
                node_class=node_class.name,
                cluster=self.cluster,
                instance_type=offering.instance_type,
                zone=offering.zone,
                capacity_type=offering.capacity_type,
                launch_time=self.clock.now(),
                tags=tags,
                client_token=client_token,  # as EC2's DescribeInstances reports it
            )
            self.launched.append((claim.name, offering.key))
            return instance_id

        return self._call("launch", (claim.name, offering.key, client_token), work)

    def launchable_zones(self, template: LaunchTemplate) -> frozenset[str] | None:
        return self._call("launchable_zones", (_node_class(template).name,), lambda: self.zones)

    def find_by_claim(self, claim: GPUNodeClaim) -> ManagedInstance | None:
        def work() -> ManagedInstance | None:
            found = [i for i in self.instances.values() if i.claim_name == claim.name and not i.gone]
            return min(found, key=lambda i: i.instance_id) if found else None

        return self._call("find_by_claim", (claim.name,), work)

    def describe(self, instance_ids: Sequence[str]) -> list[ManagedInstance]:
        return self._call(
            "describe",
            (tuple(instance_ids),),
            lambda: [self.instances[i] for i in instance_ids if i in self.instances],
        )

    def terminate(self, instance_id: str) -> None:
        def work() -> None:
            if instance_id in self.untagged:
                raise PermanentError(f"{instance_id} is not tagged managed-by={TAG_MANAGED_BY_VALUE}")
            if instance_id in self.instances:
                self.set_state(instance_id, "terminated")

        self._call("terminate", (instance_id,), work)

    def list_managed(self) -> list[ManagedInstance]:
        return self._call("list_managed", (), lambda: [i for i in self.instances.values() if not i.gone])

    # ---- test helpers --------------------------------------------------------------------
    def check_connection(self) -> None:
        self._call("check_connection", (), lambda: None)

    def set_state(self, instance_id: str, state: str) -> None:
        with self.lock:
            self.instances[instance_id] = self.instances[instance_id].model_copy(update={"state": state})

    def live(self) -> list[ManagedInstance]:
        return [i for i in self.instances.values() if not i.gone]
