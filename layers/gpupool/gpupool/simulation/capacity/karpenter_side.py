"""gpupool's side in Karpenter mode: the same services, with Karpenter launching the instances.

Role: `KarpenterDriver` is `GpupoolDriver` on a pool whose provisioningMode is Karpenter: the
launch service records GPUNodeClaims and creates karpenter.sh NodeClaims through the
`MemoryKarpenter` port, and the simulated cluster's `SimulatedKarpenter` plays Karpenter's
controller in the same `CloudFates` as the Provisioned run (see `gpupool.simulation.cluster.
karpenter`): right after each launch invocation new NodeClaims launch — or fail for capacity
(counted) and are deleted — the n-th launch taking the n-th fate, as the cloud's n-th instance
does in Provisioned mode; before the services run, due nodes register (each named after its
NodeClaim) and the relay's `node.joined` reaches bind, and a due Spot interruption notice
reaches both Karpenter's interruption controller (it marks the offering unavailable and deletes
the NodeClaim: its node drained, its instance ended then, not 2 min later) and, as EventBridge
delivers it to every rule, gpupool's launch (naming the EC2 instance of the NodeClaim's
providerID: it marks the offering and the claim and launches the replacement at once);
Karpenter's finalizer ends a deleting NodeClaim's instance and node (its pods back to the
queue), then the NodeClaim goes (gpupool's bind then finds it gone).
EC2's state-change events are not delivered (Karpenter's own termination follows the instance).
`_wire_karpenter` is the one place the Karpenter port meets the service's `Deps`.

Must not: decide anything about claims or NodeClaims' placement (the services do).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace
from datetime import datetime

from gpupool.core.decisions.karpenter_nodeclaim import nodeclaim_instance_id
from gpupool.core.intake.causes import NodeChanged
from gpupool.service.deps import Deps
from gpupool.simulation.capacity.gpupool_policy import GpupoolDriver, Tracked
from gpupool.simulation.capacity.ledger import InstanceRecord
from gpupool.simulation.capacity.pool_spec import KARPENTER_NODE_CLASSES, POOL, PoolSpec
from gpupool.simulation.capacity.sizes import OfferingSize
from gpupool.simulation.cluster.fates import CloudFates
from gpupool.simulation.cluster.karpenter import SimulatedKarpenter
from gpupool.testing.memory_ports import START, MemoryKarpenter

__all__ = ["KarpenterDriver"]


def _wire_karpenter(deps: Deps, karpenter: MemoryKarpenter) -> Deps:
    """The services reach Karpenter through `karpenter` (Karpenter mode's launches and ids)."""
    return replace(deps, karpenter=karpenter)


class KarpenterDriver(GpupoolDriver):
    name = "gpupool"

    def __init__(self, spec: PoolSpec, fates: CloudFates, *, start: datetime = START) -> None:
        if spec.mode != "karpenter":
            raise ValueError(f"KarpenterDriver runs a Karpenter-mode pool, got mode {spec.mode!r}")
        super().__init__(spec, fates, start=start)
        self.karpenter = MemoryKarpenter(self.clock)
        self.karpenter.keep_calls = False
        ref = KARPENTER_NODE_CLASSES[spec.cloud]
        self.karpenter.node_classes = {(ref["group"], ref["kind"], ref["name"])}
        self.deps = _wire_karpenter(self.deps, self.karpenter)
        self.store.karpenter = self.karpenter
        self.controller = SimulatedKarpenter(
            self.kubelet,
            fates,
            clock=self.clock,
            region=spec.region,
            offerings=self.offerings,
            node_name=lambda name: name,
            gpu_pool=POOL if spec.consolidation else None,
        )
        self._by_offering = {o.key: o for o in self.offerings}
        self._failures = 0

    # ---- Karpenter's launch ------------------------------------------------------------------
    def _see_launches(self, at: float) -> None:
        for change in self.controller.launch():
            if change.change in ("insufficient-capacity", "node-class-not-ready", "launch-error"):
                self._failures += 1
                continue
            if change.fate is None:
                continue
            offering = self._by_offering[change.offering]
            size = OfferingSize.of(offering)
            instance_id = nodeclaim_instance_id(change.nodeclaim)
            self.tracked[instance_id] = Tracked(change.nodeclaim, offering, size, at, change.fate)
            self.ledger.launched(InstanceRecord(instance_id, offering.key, size.gpus, size.hourly_price, at))

    # ---- the cloud and the cluster, through Karpenter ----------------------------------------
    def _gone(self) -> Iterator[tuple[str, bool]]:
        """Karpenter's finalizer: deleting NodeClaims end their instance (and node) and go."""
        for change in self.controller.finalize():
            instance_id = nodeclaim_instance_id(change.nodeclaim)
            if instance_id in self.tracked:
                yield instance_id, change.node is not None

    def _cloud(self, at: float) -> bool:
        """Joins and interruption notices (Karpenter deletes the NodeClaim, gpupool replaces it);
        True when any."""
        changed = False
        for change in self.controller.progress():
            tracked = self.tracked[nodeclaim_instance_id(change.nodeclaim)]
            if change.change == "registered":
                tracked.booted = tracked.joined = True
                name = tracked.claim
                self._bind(NodeChanged(node=name, change="joined", claim=name, event_id=self._id("node")))
            elif change.change == "interrupted":  # Karpenter's interruption controller deletes it
                tracked.warned = True
                nodeclaim = self.karpenter.nodeclaims.get(change.nodeclaim)
                provider_id = nodeclaim.status.provider_id if nodeclaim is not None else None
                # EventBridge delivers the same warning to gpupool's launch: it replaces at once.
                if provider_id and not self._warn(provider_id.rsplit("/", 1)[-1]).errors:
                    self.ledger.counters["interruptions_handled"] += 1
            else:  # expired: gpupool's NodeClaims say Never, so this counts what should not happen
                self.ledger.counters["expired"] += 1
            changed = True
        return changed

    def finish(self) -> None:
        super().finish()
        self.ledger.counters["launch_failures"] = self._failures
