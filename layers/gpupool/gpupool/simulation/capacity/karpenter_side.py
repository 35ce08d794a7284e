"""gpupool's side in Karpenter mode: the same services, with Karpenter launching the instances.

Role: `KarpenterDriver` is `GpupoolDriver` on a pool whose provisioningMode is Karpenter: the
launch service records GPUNodeClaims and creates karpenter.sh NodeClaims through the
`MemoryKarpenter` port (`Deps.karpenter`), and this module plays Karpenter's controller in the
same seeded world as the Provisioned run:
- a new NodeClaim whose offering (its instance-type / zone / capacity-type requirements) is out
  of capacity this hour gets Launched=False (InsufficientCapacity) and is deleted, as Karpenter
  does; otherwise Launched=True and the instance takes the world's n-th fate (n counting
  successful launches, as the cloud does in Provisioned mode);
- when the fate's boot and join times have passed, the node joins (`cluster_agents`), the
  NodeClaim is Registered / Initialized, and the relay's `node.joined` reaches bind;
- a Spot interruption notice is Karpenter's to handle (its interruption queue): it deletes the
  NodeClaim at the notice, so its node is drained and its instance ends then, not 2 min later;
- Karpenter's finalizer: a deleting NodeClaim's node leaves (its pods back to the queue) and
  its instance ends, then the NodeClaim goes (gpupool's bind then finds it gone).
EC2's own instance events are not delivered: gpupool records `nodeclaim/<name>`, not an EC2 id.

Must not: decide anything about claims or NodeClaims' placement (the services do).
"""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime

from gpupool.core.decisions.karpenter_nodeclaim import nodeclaim_instance, nodeclaim_instance_id
from gpupool.core.intake.causes import NodeChanged
from gpupool.simulation.capacity.gpupool_policy import GpupoolDriver, Tracked
from gpupool.simulation.capacity.ledger import InstanceRecord
from gpupool.simulation.capacity.pool_spec import KARPENTER_NODE_CLASSES, PoolSpec
from gpupool.simulation.capacity.sizes import OfferingSize
from gpupool.simulation.capacity.world import World
from gpupool.testing.memory_ports import START, MemoryKarpenter

__all__ = ["KarpenterDriver"]

# Karpenter's capacity types, as the catalog's offerings spell them.
_CAPACITY_TYPES = {"on-demand": "OnDemand", "spot": "Spot", "reserved": "Reserved"}


class KarpenterDriver(GpupoolDriver):
    name = "gpupool"

    def __init__(self, spec: PoolSpec, world: World, *, start: datetime = START) -> None:
        if spec.mode != "karpenter":
            raise ValueError(f"KarpenterDriver runs a Karpenter-mode pool, got mode {spec.mode!r}")
        super().__init__(spec, world, start=start)
        self.karpenter = MemoryKarpenter(self.clock)
        self.karpenter.keep_calls = False
        ref = KARPENTER_NODE_CLASSES[spec.cloud]
        self.karpenter.node_classes = {(ref["group"], ref["kind"], ref["name"])}
        self.deps = replace(self.deps, karpenter=self.karpenter)
        self._seen: set[str] = set()  # NodeClaims Karpenter has launched or failed
        self._failures = 0
        self._cloud_ids = 0

    # ---- Karpenter's launch ------------------------------------------------------------------
    def _see_launches(self, at: float) -> None:
        for name, nodeclaim in list(self.karpenter.nodeclaims.items()):
            if name in self._seen or nodeclaim.metadata.deletion_timestamp is not None:
                continue
            self._seen.add(name)
            asked = nodeclaim_instance(nodeclaim)
            capacity_type = _CAPACITY_TYPES.get(asked.capacity_type or "", "OnDemand")
            offering = self._by_key[(asked.instance_type or "", asked.zone or "", capacity_type)]
            if offering.key in self.compute.no_capacity:
                self._failures += 1
                self.karpenter.launch_failed(name)
                self.karpenter.delete_nodeclaim(name)
                continue
            self._cloud_ids += 1
            provider_id = f"aws:///{offering.zone}/i-{self._cloud_ids:017x}"
            self.karpenter.launched(name, provider_id)
            fate = self.world.fate(len(self.tracked), capacity_type)
            size = OfferingSize.of(offering)
            instance_id = nodeclaim_instance_id(name)
            claim = asked.claim_name or name
            self.tracked[instance_id] = Tracked(claim, offering, size, at, fate)
            self.ledger.launched(InstanceRecord(instance_id, offering.key, size.gpus, size.hourly_price, at))

    # ---- the world, through Karpenter --------------------------------------------------------
    def _gone(self) -> list[str]:
        """Karpenter's finalizer: deleting NodeClaims end their instance and go."""
        deleting = self.karpenter.deleting()
        self.karpenter.finish_deletion(deleting)
        return [i for i in (nodeclaim_instance_id(n) for n in deleting) if i in self.tracked]

    def _cloud(self, at: float) -> bool:
        """Joins and interruption notices (Karpenter deletes the NodeClaim); True when any."""
        changed = False
        for tracked in list(self.tracked.values()):
            if tracked.ended:
                continue
            name = tracked.claim
            if not tracked.booted and at >= tracked.boot_at:
                tracked.booted = True  # Launched already says "running"; nothing more to see
            if tracked.booted and not tracked.joined and at >= tracked.join_at and not tracked.warned:
                tracked.joined = True
                self.agents.join(name, tracked.size)
                self.karpenter.registered(name, name)
                self._bind(NodeChanged(node=name, change="joined", claim=name, event_id=self._id("node")))
                changed = True
            after = tracked.fate.interrupted_after
            if after is not None and not tracked.warned and at >= tracked.launched + after:
                tracked.warned = True  # Karpenter's interruption handling: drain, delete the NodeClaim
                if name in self.karpenter.nodeclaims:
                    self.karpenter.delete_nodeclaim(name)
                self.ledger.counters["interruptions_handled"] += 1
                changed = True
        return changed

    def finish(self) -> None:
        super().finish()
        self.ledger.counters["launch_failures"] = self._failures
