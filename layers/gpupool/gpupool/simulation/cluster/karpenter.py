"""The simulated Karpenter controller: karpenter.sh/v1 NodeClaims become instances and nodes.

Role: `SimulatedKarpenter` plays Karpenter's NodeClaim lifecycle, in its order (Launched →
Registered → Initialized), on a `ClusterStore` and the simulated cloud's `CloudFates`:
- `launch()`: a new NodeClaim whose offering (its instance-type / zone / capacity-type
  requirements, the first value of each `In`) is out of capacity gets `Launched=False`
  (`InsufficientCapacity`) and is deleted — at once, as Karpenter's launch controller does, or
  (`failed_linger=True`, the demo's stories) at its next `step()`, so that the functions read
  the failure from it first; any other gets `status.providerID` (`aws:///<zone>/i-…`, from its
  name) and `Launched=True`, and takes the fates' n-th launch fate (n counting launches);
- `progress()`: once its fate's boot and join times have passed, a launched NodeClaim's node
  registers through the `Kubelet` — the NodeClaim's labels and taints, the labels its
  requirements pin (instance type, zone, capacity type; region), `karpenter.sh/registered`,
  its providerID, and the node agent's GPUNode (no GPU objects) — and the NodeClaim gets
  `Registered=True`, `Initialized=True` and `status.nodeName`; a Spot interruption notice is
  Karpenter's to handle (its interruption queue): it deletes the NodeClaim at the notice;
- `finalize()`: Karpenter's finalizer — the nodes of NodeClaims being deleted leave, and the
  NodeClaims go; `remove_orphaned_nodes()`: a node whose NodeClaim is gone without one (the
  sandbox's NodeClaims carry no finalizer) leaves too;
- `step()`: all of it at once, NodeClaim by NodeClaim in name order (the demo's cadence).
`gpupool simulate capacity --mode karpenter` calls the passes at its own moments (launch right
after the launch function, progress before it), and names each node after its NodeClaim.
Simpler than Karpenter: no scheduling simulation, consolidation, drift or expiry; the instance
behind a NodeClaim exists only as its fate.

Must not: decide anything about GPUNodeClaims or pools, read the wall clock (time is the given
clock's), or touch an object that is not a NodeClaim or a node (and its GPUNode) it registered.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Literal

from gpupool.core.decisions.karpenter_nodeclaim import (
    CONDITION_INITIALIZED,
    CONDITION_LAUNCHED,
    CONDITION_REGISTERED,
    nodeclaim_instance,
)
from gpupool.core.model.base import Condition
from gpupool.core.model.constants import KEY_CAPACITY_TYPE, KEY_INSTANCE_TYPE, KEY_REGION, KEY_ZONE
from gpupool.core.model.karpenter import KarpenterNodeClaim
from gpupool.service.ports import Clock
from gpupool.simulation.cluster.fates import CloudFates, LaunchFate
from gpupool.simulation.cluster.kubelet import Kubelet, NodeRegistration

__all__ = ["ANNOTATION_SIM_NODECLAIM", "KarpenterChange", "SimulatedKarpenter", "ec2_node_name"]

LABEL_REGISTERED = "karpenter.sh/registered"  # Karpenter's label on the nodes it registered
ANNOTATION_SIM_NODECLAIM = "gpupool.sandbox/nodeclaim"  # which NodeClaim this simulated node belongs to
# Karpenter's capacity types, as the catalog's offerings spell them.
_CAPACITY_TYPES = {"on-demand": "OnDemand", "spot": "Spot", "reserved": "Reserved"}
_PINNED_LABELS = (KEY_INSTANCE_TYPE, KEY_ZONE, KEY_CAPACITY_TYPE)

Change = Literal[
    "launched", "launch-failed", "deleted", "registered", "interrupted", "finalized", "node-removed"
]


@dataclass(frozen=True)
class KarpenterChange:
    """One thing the simulated Karpenter did to a NodeClaim or its node."""

    change: Change
    nodeclaim: str
    detail: str = ""
    offering: str = ""  # launched: the offering key (type/zone/capacity type) it launched
    fate: LaunchFate | None = None  # launched: what will happen to its instance
    node: str | None = None  # registered: the node; finalized / node-removed: the node that left


@dataclass
class _Launch:
    at: float  # seconds after the controller started
    fate: LaunchFate
    node: str | None = None
    interrupted: bool = False

    @property
    def registers_at(self) -> float:
        return self.at + self.fate.boot_seconds + self.fate.join_seconds


def ec2_node_name(nodeclaim: str) -> str:
    """A private DNS name as EC2 gives one, the same for a NodeClaim name on every run."""
    return f"ip-{hashlib.sha256(nodeclaim.encode()).hexdigest()[:8]}.ec2.internal"


def _instance_id(nodeclaim: str) -> str:
    return "i-" + hashlib.sha256(nodeclaim.encode()).hexdigest()[:17]


def _condition(nodeclaim: KarpenterNodeClaim, kind: str) -> str | None:
    return next((c.status for c in nodeclaim.status.conditions if c.type == kind), None)


def _pinned(nodeclaim: KarpenterNodeClaim) -> dict[str, str]:
    return {r.key: r.values[0] for r in nodeclaim.spec.requirements if r.operator == "In" and r.values}


class SimulatedKarpenter:
    """Plays Karpenter for the NodeClaims of one store; see the module docstring for the passes."""

    def __init__(
        self,
        kubelet: Kubelet,
        fates: CloudFates,
        *,
        clock: Clock,
        region: str,
        node_name: Callable[[str], str] = ec2_node_name,
        failed_linger: bool = False,
    ) -> None:
        self._kubelet = kubelet
        self._store = kubelet.store
        self._fates = fates
        self._clock = clock
        self._region = region
        self._node_name = node_name
        self._failed_linger = failed_linger
        self._start = clock.now()
        self._launches: dict[str, _Launch] = {}  # by NodeClaim, in launch order
        self._launched = 0

    def insufficient_capacity(self, instance_type: str, zone: str) -> None:
        """NodeClaims pinned to this instance type and zone fail to launch from now on."""
        self._fates.declare_out_of_capacity(instance_type, zone)

    def _elapsed(self) -> float:
        return (self._clock.now() - self._start).total_seconds()

    def _write(self, nodeclaim: KarpenterNodeClaim, *added: tuple[str, str, str], **status: str) -> None:
        kept = [c for c in nodeclaim.status.conditions if c.type not in {t for t, _, _ in added}]
        now = self._clock.now()
        conditions = [
            *kept,
            *(Condition(type=t, status=s, reason=r, last_transition_time=now) for t, s, r in added),
        ]
        new_status = nodeclaim.status.model_copy(update={"conditions": conditions, **status})
        self._store.write_status(nodeclaim.model_copy(update={"status": new_status}))

    # ---- launch --------------------------------------------------------------------------
    def launch(self) -> list[KarpenterChange]:
        """Every new NodeClaim launches, or fails for capacity."""
        return [
            self._launch(nodeclaim)
            for nodeclaim in self._store.list(KarpenterNodeClaim)
            if nodeclaim.metadata.deletion_timestamp is None
            and _condition(nodeclaim, CONDITION_LAUNCHED) is None
        ]

    def _launch(self, nodeclaim: KarpenterNodeClaim) -> KarpenterChange:
        name = nodeclaim.name
        asked = nodeclaim_instance(nodeclaim)
        capacity_type = _CAPACITY_TYPES.get(asked.capacity_type or "", "OnDemand")
        placement = f"{asked.instance_type or ''}/{asked.zone or ''}"
        offering = f"{asked.instance_type or ''}/{asked.zone or '*'}/{capacity_type}"
        if self._fates.out_of_capacity(offering, self._elapsed()):
            self._write(nodeclaim, (CONDITION_LAUNCHED, "False", "InsufficientCapacity"))
            if not self._failed_linger:
                self._store.delete(KarpenterNodeClaim, name)
            return KarpenterChange("launch-failed", name, placement, offering=offering)
        fate = self._fates.fate(self._launched, capacity_type)
        self._launched += 1
        self._launches[name] = _Launch(self._elapsed(), fate)
        self._write(
            nodeclaim,
            (CONDITION_LAUNCHED, "True", "Launched"),
            provider_id=f"aws:///{asked.zone or ''}/{_instance_id(name)}",
        )
        return KarpenterChange("launched", name, placement, offering=offering, fate=fate)

    # ---- registration and interruption -----------------------------------------------------
    def progress(self) -> Iterator[KarpenterChange]:
        """Due registrations and interruption notices, NodeClaim by NodeClaim in launch order;
        each change is yielded as it happens (the caller may deliver it before the next)."""
        for name, launch in list(self._launches.items()):
            yield from self._progress(name, launch)

    def _progress(self, name: str, launch: _Launch) -> list[KarpenterChange]:
        changes: list[KarpenterChange] = []
        elapsed = self._elapsed()
        if launch.node is None and not launch.interrupted and elapsed >= launch.registers_at:
            nodeclaim = self._store.get(KarpenterNodeClaim, name)
            if nodeclaim is not None:
                launch.node = self._register(nodeclaim)
                changes.append(KarpenterChange("registered", name, launch.node, node=launch.node))
        after = launch.fate.interrupted_after
        if after is not None and not launch.interrupted and elapsed >= launch.at + after:
            launch.interrupted = True  # Karpenter's interruption handling: drain, delete the NodeClaim
            self._store.delete(KarpenterNodeClaim, name)
            changes.append(KarpenterChange("interrupted", name, "Spot interruption notice"))
        return changes

    def _register(self, nodeclaim: KarpenterNodeClaim) -> str:
        name = nodeclaim.name
        node = self._node_name(name)
        pinned = _pinned(nodeclaim)
        provider_id = nodeclaim.status.provider_id or ""
        self._kubelet.register(
            NodeRegistration(
                name=node,
                instance_type=pinned.get(KEY_INSTANCE_TYPE, ""),
                zone=pinned.get(KEY_ZONE, ""),
                region=pinned.get(KEY_REGION, self._region),
                provider_id=provider_id,
                instance_id=provider_id.rsplit("/", 1)[-1],
                labels={
                    **nodeclaim.metadata.labels,
                    **{k: v for k, v in pinned.items() if k in _PINNED_LABELS},
                    KEY_REGION: pinned.get(KEY_REGION, self._region),
                    LABEL_REGISTERED: "true",
                },
                annotations={ANNOTATION_SIM_NODECLAIM: name},
                taints=nodeclaim.spec.taints,
                gpu_devices=False,
            )
        )
        self._write(
            nodeclaim,
            (CONDITION_REGISTERED, "True", "Registered"),
            (CONDITION_INITIALIZED, "True", "Initialized"),
            node_name=node,
        )
        return node

    # ---- deletion ------------------------------------------------------------------------
    def finalize(self) -> Iterator[KarpenterChange]:
        """Karpenter's finalizer: the NodeClaims being deleted go, then their nodes leave, one
        by one (each change yielded as it happens)."""
        deleting = [
            n.name for n in self._store.list(KarpenterNodeClaim) if n.metadata.deletion_timestamp is not None
        ]
        for name in deleting:
            self._store.finish_deletion(KarpenterNodeClaim, name)
        for name in deleting:
            launch = self._launches.pop(name, None)
            node = None if launch is None else launch.node
            left = node is not None and self._kubelet.deregister(node)
            yield KarpenterChange("finalized", name, node=node if left else None)

    def remove_orphaned_nodes(self) -> list[KarpenterChange]:
        """Nodes registered for NodeClaims that are gone leave."""
        changes: list[KarpenterChange] = []
        for name, launch in list(self._launches.items()):
            if self._store.get(KarpenterNodeClaim, name) is not None:
                continue
            del self._launches[name]
            if launch.node is not None and self._kubelet.deregister(launch.node):
                changes.append(KarpenterChange("node-removed", name, launch.node, node=launch.node))
        return changes

    # ---- the demo's cadence --------------------------------------------------------------
    def step(self) -> list[KarpenterChange]:
        """Every pass, NodeClaim by NodeClaim in name order: a failed one is deleted, a new one
        launched, a launched one registered when due; then deletions and orphaned nodes."""
        changes: list[KarpenterChange] = []
        for nodeclaim in self._store.list(KarpenterNodeClaim):
            name = nodeclaim.name
            if nodeclaim.metadata.deletion_timestamp is not None:
                continue
            launched = _condition(nodeclaim, CONDITION_LAUNCHED)
            if launched == "False":
                self._store.delete(KarpenterNodeClaim, name)
                changes.append(KarpenterChange("deleted", name, "after a failed launch"))
            elif launched is None:
                changes.append(self._launch(nodeclaim))
            else:
                launch = self._launches.get(name) or self._adopt(nodeclaim)
                changes.extend(self._progress(name, launch))
        changes.extend(self.finalize())
        changes.extend(self.remove_orphaned_nodes())
        return changes

    def _adopt(self, nodeclaim: KarpenterNodeClaim) -> _Launch:
        """A NodeClaim found launched by someone else: its fate from now (counted as a launch)."""
        capacity_type = _CAPACITY_TYPES.get(_pinned(nodeclaim).get(KEY_CAPACITY_TYPE, ""), "OnDemand")
        launch = _Launch(self._elapsed(), self._fates.fate(self._launched, capacity_type))
        self._launched += 1
        if _condition(nodeclaim, CONDITION_REGISTERED) == "True":
            launch.node = nodeclaim.status.node_name
        self._launches[nodeclaim.name] = launch
        return launch
