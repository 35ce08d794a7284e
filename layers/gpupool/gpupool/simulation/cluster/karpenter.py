"""The simulated Karpenter controller: karpenter.sh/v1 NodeClaims become instances and nodes.

Role: `SimulatedKarpenter` plays Karpenter's NodeClaim lifecycle as its controllers do
(kubernetes-sigs/karpenter `pkg/controllers/nodeclaim/lifecycle/`, `expiration/`,
`provisioning/`; aws/karpenter-provider-aws `pkg/controllers/interruption/`), on a
`ClusterStore`, the simulated cloud's `CloudFates` and the region's priced offerings:
- `provision(nodepool)`: the provisioner's NodeClaim for a NodePool — every compatible instance
  type price-ordered (≤ 600), the capacity types allowed, a zone only when the NodePool (or the
  caller, for a pod's zone) names one, label `karpenter.sh/nodepool`, the template's labels and
  annotations, the NodePool as controller owner (when it has a uid), taints, node class and
  `expireAfter` (the CRD's 720h when the NodePool sets none); none ("limited") once the
  NodePool's NodeClaims hold as much as one of its `limits` — limits gate only this, Karpenter's
  own provisioning: a NodeClaim someone else creates is launched whatever they say, and gets none
  of the NodePool's template metadata;
- `launch()`: each new NodeClaim launches on the first offering its requirements allow
  (`karpenter_choice.compatible`: reserved, spot, on-demand, cheapest first) that is neither out
  of capacity in the cloud's fates nor in Karpenter's own unavailable-offerings cache (3 min,
  `UnavailableOfferingsTTL`). None left → `InsufficientCapacity`: the offerings tried are cached
  and the NodeClaim is **deleted** (no `Launched=False` is ever written); a node class that does
  not exist or is not ready (`node_class_ready`) → the NodeClaim is deleted; any other launch
  error a story declares (`launch_error`) → `Launched=Unknown` with its reason, retried at the
  next pass. A launch merges what was launched into the NodeClaim's labels
  (`node.kubernetes.io/instance-type`, `topology.kubernetes.io/zone`,
  `karpenter.sh/capacity-type`, `topology.kubernetes.io/region`), fills `status.providerID`
  (`aws:///<zone>/i-…`, from its name), `imageID`, `capacity`, `allocatable`, then
  `Launched=True`; the NodeClaim takes the fates' n-th launch fate (n counting launches);
- `progress()`: once its fate's boot and join times have passed, a launched NodeClaim's node
  registers through the `Kubelet` (the NodeClaim's labels — what was launched among them — its
  annotations, `karpenter.sh/do-not-disrupt` among them, and taints, `karpenter.sh/registered`,
  its providerID, the node agent's GPUNode) and the NodeClaim
  gets `Registered`, `Initialized`, `Ready` and `status.nodeName`; a Spot interruption due in its
  fate reaches Karpenter's interruption controller (`interrupt`); a NodeClaim older than its
  `expireAfter` is deleted by the expiration controller whatever `karpenter.sh/do-not-disrupt`
  says (`Never` never expires);
- `interrupt(name)`: a Spot interruption warning for its instance — the offering is marked
  unavailable for 3 minutes, then the NodeClaim is deleted (cordon and drain are the
  termination controller's: here, its node leaves when the NodeClaim goes);
- `finalize()`: Karpenter's finalizer — the nodes of NodeClaims being deleted leave, and the
  NodeClaims go; `remove_orphaned_nodes()`: a node whose NodeClaim is gone without one (the
  sandbox's NodeClaims carry no finalizer) leaves too;
- `consolidate(nodepools)`: emptiness consolidation (`pkg/controllers/disruption/`) — a
  registered NodeClaim of one of these NodePools whose node runs no pod and whose Node has no
  `karpenter.sh/do-not-disrupt: "true"` is deleted once it has been so for the NodePool's
  `consolidateAfter` (the CRD's 0s by default; `Never` never);
- `step(nodepools)`: all of it at once, NodeClaim by NodeClaim in name order (the demo's cadence).
`gpupool simulate capacity --mode karpenter` calls the passes at its own moments (launch right
after the launch function, progress before it), and names each node after its NodeClaim.
Simpler than Karpenter: no scheduling simulation of pending pods (a caller asks `provision`,
and limits are checked against what is held, not against the node the pods would need);
consolidation removes empty nodes only (no replacement or multi-node consolidation of
underutilized ones, no disruption budgets, no `WhenEmpty` / `WhenEmptyOrUnderutilized`
difference — emptiness is the only candidate), no drift; the time a node became empty is kept in
this object (Karpenter derives it from the node's pods); launch errors are declared by the
story, not drawn; the instance
behind a NodeClaim exists only as its fate; the termination controller's drain is the node
leaving with its pods.

Must not: decide anything about GPUNodeClaims or pools, read the wall clock (time is the given
clock's), or touch an object that is not a NodeClaim or a node (and its GPUNode) it registered.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from datetime import timedelta
from typing import Literal

from gpupool.core.decisions.karpenter_nodeclaim import (
    CONDITION_INITIALIZED,
    CONDITION_LAUNCHED,
    CONDITION_REGISTERED,
)
from gpupool.core.model.base import Condition, ObjectMeta, OwnerReference
from gpupool.core.model.capacity_type import capacity_type as read_capacity_type
from gpupool.core.model.capacity_type import karpenter_capacity_type
from gpupool.core.model.constants import (
    ANNOTATION_KARPENTER_DO_NOT_DISRUPT,
    KEY_CAPACITY_TYPE,
    KEY_INSTANCE_TYPE,
    KEY_REGION,
    KEY_ZONE,
)
from gpupool.core.model.foreign import Node, Pod
from gpupool.core.model.karpenter import (
    KarpenterNodeClaim,
    KarpenterNodeClaimSpec,
    KarpenterNodePool,
    NodeClassReference,
)
from gpupool.core.planning.offerings import catalog_offerings
from gpupool.core.planning.plan import OfferingRef
from gpupool.core.quantity import Quantity
from gpupool.service.ports import Clock
from gpupool.simulation.cluster.fates import CloudFates, LaunchFate
from gpupool.simulation.cluster.karpenter_choice import (
    LABEL_NODEPOOL,
    compatible,
    nodepool_requirements,
)
from gpupool.simulation.cluster.kubelet import Kubelet, NodeRegistration

__all__ = [
    "ANNOTATION_SIM_NODECLAIM",
    "UNAVAILABLE_OFFERINGS_TTL",
    "KarpenterChange",
    "SimulatedKarpenter",
    "ec2_node_name",
]

LABEL_REGISTERED = "karpenter.sh/registered"  # Karpenter's label on the nodes it registered
ANNOTATION_SIM_NODECLAIM = "gpupool.sandbox/nodeclaim"  # which NodeClaim this simulated node belongs to
UNAVAILABLE_OFFERINGS_TTL = timedelta(minutes=3)  # karpenter-provider-aws pkg/cache UnavailableOfferingsTTL
CONDITION_READY = "Ready"
DEFAULT_EXPIRE_AFTER = "720h"  # the NodeClaim CRD's default
_DURATION_PART = re.compile(r"([0-9]+)(s|m|h)")
_SECONDS = {"s": 1, "m": 60, "h": 3600}

Change = Literal[
    "provisioned",
    "launched",
    "insufficient-capacity",
    "node-class-not-ready",
    "launch-error",
    "registered",
    "interrupted",
    "expired",
    "finalized",
    "node-removed",
    "limited",
    "consolidated",
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
    offering: str
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


def _consolidate_after(nodepool: KarpenterNodePool) -> float | None:
    """The NodePool's `disruption.consolidateAfter` in seconds (CRD default 0s); None: `Never`."""
    disruption = nodepool.spec.disruption or {}
    text = disruption.get("consolidateAfter", "0s")
    return expire_seconds(text if isinstance(text, str) else "0s")


def expire_seconds(expire_after: str | None) -> float | None:
    """Seconds after creation a NodeClaim expires (None: `Never`); the CRD's default when unset."""
    text = expire_after or DEFAULT_EXPIRE_AFTER
    if text == "Never":
        return None
    return float(sum(int(n) * _SECONDS[unit] for n, unit in _DURATION_PART.findall(text)))


class SimulatedKarpenter:
    """Plays Karpenter for the NodeClaims of one store; see the module docstring for the passes."""

    def __init__(
        self,
        kubelet: Kubelet,
        fates: CloudFates,
        *,
        clock: Clock,
        region: str,
        offerings: Sequence[OfferingRef] | None = None,
        node_name: Callable[[str], str] = ec2_node_name,
        node_class_ready: Callable[[NodeClassReference], bool] = lambda ref: True,
        gpu_pool: str | None = None,
    ) -> None:
        # gpu_pool: the node agent publishes one GPU object per device, labelled for that pool
        # (what consolidation's allocator reads); None: the GPUNode only, as before.
        self._gpu_pool = gpu_pool
        self._kubelet = kubelet
        self._store = kubelet.store
        self._fates = fates
        self._clock = clock
        self._region = region
        self._offerings = (
            tuple(offerings) if offerings is not None else catalog_offerings(kubelet.cloud, region)
        )
        self._node_name = node_name
        self._node_class_ready = node_class_ready
        self._start = clock.now()
        self._launches: dict[str, _Launch] = {}  # by NodeClaim, in launch order
        self._launched = 0
        self._provisioned = 0
        self._unavailable: dict[str, float] = {}  # offering key → until (seconds after start)
        self._launch_errors: dict[str, str] = {}  # "type/zone" → reason
        self._empty_since: dict[str, float] = {}  # NodeClaim → when its node was first seen empty

    # ---- a story's knobs -----------------------------------------------------------------
    def insufficient_capacity(self, instance_type: str, zone: str) -> None:
        """This instance type in this zone has no capacity from now on, whatever the capacity type."""
        self._fates.declare_out_of_capacity(instance_type, zone)

    def launch_error(self, instance_type: str, zone: str, reason: str | None) -> None:
        """Launches of this type in this zone fail with `reason` (not a capacity error; None clears)."""
        key = f"{instance_type}/{zone}"
        if reason is None:
            self._launch_errors.pop(key, None)
        else:
            self._launch_errors[key] = reason

    def unavailable(self) -> dict[str, float]:
        """Karpenter's unavailable-offerings cache: offering key → seconds left."""
        elapsed = self._elapsed()
        return {k: until - elapsed for k, until in sorted(self._unavailable.items()) if until > elapsed}

    def _elapsed(self) -> float:
        return (self._clock.now() - self._start).total_seconds()

    def _mark_unavailable(self, offering_key: str) -> None:
        self._unavailable[offering_key] = self._elapsed() + UNAVAILABLE_OFFERINGS_TTL.total_seconds()

    def _write(self, nodeclaim: KarpenterNodeClaim, *added: tuple[str, str, str], **status: object) -> None:
        kept = [c for c in nodeclaim.status.conditions if c.type not in {t for t, _, _ in added}]
        now = self._clock.now()
        conditions = [
            *kept,
            *(Condition(type=t, status=s, reason=r, last_transition_time=now) for t, s, r in added),
        ]
        new_status = nodeclaim.status.model_copy(update={"conditions": conditions, **status})
        self._store.write_status(nodeclaim.model_copy(update={"status": new_status}))

    # ---- the provisioner -----------------------------------------------------------------
    def held(self, nodepool: str) -> dict[str, Quantity]:
        """What the NodePool's NodeClaims hold (their launched capacity), as its status counts it."""
        totals: dict[str, Quantity] = {}
        for nodeclaim in self._store.list(KarpenterNodeClaim):
            if nodeclaim.metadata.labels.get(LABEL_NODEPOOL) != nodepool:
                continue
            for resource, amount in nodeclaim.status.capacity.items():
                totals[resource] = totals.get(resource, Quantity(0)) + amount
        return totals

    def provision(self, nodepool: KarpenterNodePool, *, zone: str | None = None) -> KarpenterChange:
        """The NodeClaim Karpenter's provisioner makes from `nodepool` (module docstring); none
        once the NodePool holds as much as one of its `limits` (Karpenter's provisioner then
        refuses the NodePool)."""
        held = self.held(nodepool.name)
        for resource, limit in sorted(nodepool.spec.limits.items()):
            if not held.get(resource, Quantity(0)) < limit:
                return KarpenterChange(
                    "limited", "", f"NodePool {nodepool.name} is at its limit {resource}: {limit}"
                )
        self._provisioned += 1
        digest = hashlib.sha256(f"{nodepool.name}/{self._provisioned}".encode()).hexdigest()
        name = f"{nodepool.name}-{digest[:5]}"  # as Karpenter's generateName: <nodepool>-<5 characters>
        template = nodepool.spec.template
        spec = KarpenterNodeClaimSpec(
            node_class_ref=template.spec.node_class_ref,
            requirements=nodepool_requirements(nodepool, self._offerings, zone=zone),
            taints=template.spec.taints,
            startup_taints=template.spec.startup_taints,
            expire_after=template.spec.expire_after or DEFAULT_EXPIRE_AFTER,
            termination_grace_period=template.spec.termination_grace_period,
        )
        labels = {**template.metadata.labels, LABEL_NODEPOOL: nodepool.name}
        owner = [
            OwnerReference.controlled_by(
                api_version=nodepool.api_version, kind=nodepool.kind, name=nodepool.name, uid=uid
            )
            for uid in [nodepool.metadata.uid]
            if uid
        ]
        meta = ObjectMeta(
            name=name, labels=labels, annotations=dict(template.metadata.annotations), owner_references=owner
        )
        self._store.create(KarpenterNodeClaim(metadata=meta, spec=spec))
        return KarpenterChange("provisioned", name, f"from NodePool {nodepool.name}")

    # ---- launch --------------------------------------------------------------------------
    def launch(self) -> list[KarpenterChange]:
        """Every new NodeClaim (and every one whose launch failed for another reason) launches,
        or is deleted for capacity or its node class."""
        return [
            self._launch(nodeclaim)
            for nodeclaim in self._store.list(KarpenterNodeClaim)
            if nodeclaim.metadata.deletion_timestamp is None
            and _condition(nodeclaim, CONDITION_LAUNCHED) in (None, "Unknown")
        ]

    def _launch(self, nodeclaim: KarpenterNodeClaim) -> KarpenterChange:
        name = nodeclaim.name
        ref = nodeclaim.spec.node_class_ref
        if ref is None or not self._node_class_ready(ref):
            self._store.delete(KarpenterNodeClaim, name)
            what = f"{ref.kind} {ref.name}" if ref else "no node class"
            return KarpenterChange("node-class-not-ready", name, f"{what}: NodeClassNotReady, deleted")
        candidates = compatible(nodeclaim.spec.requirements, self._offerings)
        elapsed = self._elapsed()
        tried: list[str] = []
        for offering in candidates:
            error = self._launch_errors.get(f"{offering.instance_type}/{offering.zone}")
            if error is not None:
                self._write(nodeclaim, (CONDITION_LAUNCHED, "Unknown", error))
                return KarpenterChange("launch-error", name, f"{offering.key}: {error}, retried")
            if self._unavailable.get(offering.key, 0.0) > elapsed or self._fates.out_of_capacity(
                offering.key, elapsed
            ):
                tried.append(offering.key)
                continue
            return self._launched_on(nodeclaim, offering)
        for key in tried:
            self._mark_unavailable(key)
        self._store.delete(KarpenterNodeClaim, name)
        what = ", ".join(tried) if tried else "no offering its requirements allow"
        return KarpenterChange("insufficient-capacity", name, f"InsufficientCapacity ({what}): deleted")

    def _launched_on(self, nodeclaim: KarpenterNodeClaim, offering: OfferingRef) -> KarpenterChange:
        name = nodeclaim.name
        capacity_type = karpenter_capacity_type(offering.capacity_type)
        labels = {
            KEY_INSTANCE_TYPE: offering.instance_type,
            KEY_ZONE: offering.zone or "",
            KEY_CAPACITY_TYPE: capacity_type,
            KEY_REGION: offering.region or self._region,
        }
        self._store.merge_labels(KarpenterNodeClaim, name, labels)
        fate = self._fates.fate(self._launched, offering.capacity_type)
        self._launched += 1
        self._launches[name] = _Launch(self._elapsed(), fate, offering.key)
        resources = self._resources(offering)
        self._write(
            self._store.get(KarpenterNodeClaim, name) or nodeclaim,
            (CONDITION_LAUNCHED, "True", "Launched"),
            provider_id=f"aws:///{offering.zone or ''}/{_instance_id(name)}",
            image_id="ami-simulated",
            capacity=resources,
            allocatable=resources,
        )
        detail = f"{offering.instance_type}/{offering.zone}"
        return KarpenterChange("launched", name, detail, offering=offering.key, fate=fate)

    def _resources(self, offering: OfferingRef) -> dict[str, Quantity]:
        spec = self._kubelet.catalog.instance_type(offering.instance_type)
        resources = {"nvidia.com/gpu": Quantity(offering.gpu_count), "pods": Quantity(110)}
        if spec is not None:
            resources["cpu"] = Quantity(spec.vcpu)
            resources["memory"] = Quantity.parse(f"{spec.memory_gib}Gi")
        return resources

    # ---- registration, interruption, expiry ----------------------------------------------
    def progress(self) -> Iterator[KarpenterChange]:
        """Due registrations, interruptions and expiries, NodeClaim by NodeClaim in launch order;
        each change is yielded as it happens (the caller may deliver it before the next)."""
        for name, launch in list(self._launches.items()):
            yield from self._progress(name, launch)
        yield from self._expire()

    def _progress(self, name: str, launch: _Launch) -> list[KarpenterChange]:
        changes: list[KarpenterChange] = []
        elapsed = self._elapsed()
        if launch.node is None and not launch.interrupted and elapsed >= launch.registers_at:
            nodeclaim = self._store.get(KarpenterNodeClaim, name)
            if nodeclaim is not None and nodeclaim.metadata.deletion_timestamp is None:
                launch.node = self._register(nodeclaim)
                changes.append(KarpenterChange("registered", name, launch.node, node=launch.node))
        after = launch.fate.interrupted_after
        if after is not None and not launch.interrupted and elapsed >= launch.at + after:
            change = self.interrupt(name)
            if change is not None:
                changes.append(change)
        return changes

    def interrupt(self, name: str) -> KarpenterChange | None:
        """Karpenter's interruption controller on a Spot interruption warning for `name`'s
        instance: its offering unavailable for 3 minutes, then the NodeClaim deleted."""
        launch = self._launches.get(name)
        if launch is None or launch.interrupted:
            return None
        launch.interrupted = True
        self._mark_unavailable(launch.offering)
        self._store.delete(KarpenterNodeClaim, name)
        return KarpenterChange(
            "interrupted", name, f"Spot interruption warning: {launch.offering} unavailable"
        )

    def _expire(self) -> Iterator[KarpenterChange]:
        now = self._clock.now()
        for nodeclaim in self._store.list(KarpenterNodeClaim):
            created = nodeclaim.metadata.creation_timestamp
            limit = expire_seconds(nodeclaim.spec.expire_after)
            if nodeclaim.metadata.deletion_timestamp is not None or created is None or limit is None:
                continue
            if now - created >= timedelta(seconds=limit):
                self._store.delete(KarpenterNodeClaim, nodeclaim.name)
                yield KarpenterChange(
                    "expired", nodeclaim.name, f"older than expireAfter {nodeclaim.spec.expire_after}"
                )

    def _register(self, nodeclaim: KarpenterNodeClaim) -> str:
        name = nodeclaim.name
        node = self._node_name(name)
        labels = nodeclaim.metadata.labels
        provider_id = nodeclaim.status.provider_id or ""
        self._kubelet.register(
            NodeRegistration(
                name=node,
                instance_type=labels.get(KEY_INSTANCE_TYPE, ""),
                zone=labels.get(KEY_ZONE, ""),
                region=labels.get(KEY_REGION, self._region),
                provider_id=provider_id,
                instance_id=provider_id.rsplit("/", 1)[-1],
                labels={**labels, KEY_REGION: labels.get(KEY_REGION, self._region), LABEL_REGISTERED: "true"},
                # Karpenter copies the NodeClaim's annotations (do-not-disrupt among them) to the Node
                annotations={**nodeclaim.metadata.annotations, ANNOTATION_SIM_NODECLAIM: name},
                taints=nodeclaim.spec.taints,
                pool=self._gpu_pool,
                gpu_devices=self._gpu_pool is not None,
            )
        )
        self._write(
            nodeclaim,
            (CONDITION_REGISTERED, "True", "Registered"),
            (CONDITION_INITIALIZED, "True", "Initialized"),
            (CONDITION_READY, "True", "Ready"),
            node_name=node,
        )
        return node

    # ---- disruption ----------------------------------------------------------------------
    def consolidate(self, nodepools: Sequence[KarpenterNodePool]) -> list[KarpenterChange]:
        """Karpenter's emptiness consolidation for these NodePools: a registered NodeClaim whose
        node runs no pod and has no `karpenter.sh/do-not-disrupt: "true"` is deleted once it has
        been so for the NodePool's `consolidateAfter` (the CRD's default 0s; `Never`: never)."""
        by_pool = {p.name: p for p in nodepools}
        busy = {p.spec.node_name for p in self._store.list(Pod) if p.spec.node_name}
        elapsed = self._elapsed()
        changes: list[KarpenterChange] = []
        for nodeclaim in self._store.list(KarpenterNodeClaim):
            nodepool = by_pool.get(nodeclaim.metadata.labels.get(LABEL_NODEPOOL, ""))
            after = _consolidate_after(nodepool) if nodepool is not None else None
            node_name = nodeclaim.status.node_name
            node = self._store.get(Node, node_name) if node_name else None
            if (
                after is None
                or node is None
                or nodeclaim.metadata.deletion_timestamp is not None
                or node_name in busy
                or node.metadata.annotations.get(ANNOTATION_KARPENTER_DO_NOT_DISRUPT) == "true"
            ):
                self._empty_since.pop(nodeclaim.name, None)
                continue
            since = self._empty_since.setdefault(nodeclaim.name, elapsed)
            if elapsed - since >= after:
                self._empty_since.pop(nodeclaim.name, None)
                self._store.delete(KarpenterNodeClaim, nodeclaim.name)
                detail = f"empty for its NodePool's consolidateAfter ({after:g}s)"
                changes.append(KarpenterChange("consolidated", nodeclaim.name, detail, node=node_name))
        return changes

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
    def step(self, nodepools: Sequence[KarpenterNodePool] = ()) -> list[KarpenterChange]:
        """Every pass, NodeClaim by NodeClaim in name order: a new one launched (or deleted for
        capacity), a launched one registered, interrupted or expired when due; then emptiness
        consolidation for `nodepools`, deletions and orphaned nodes."""
        changes: list[KarpenterChange] = []
        for nodeclaim in self._store.list(KarpenterNodeClaim):
            name = nodeclaim.name
            if nodeclaim.metadata.deletion_timestamp is not None:
                continue
            if _condition(nodeclaim, CONDITION_LAUNCHED) in (None, "Unknown"):
                changes.append(self._launch(nodeclaim))
            else:
                launch = self._launches.get(name) or self._adopt(nodeclaim)
                changes.extend(self._progress(name, launch))
        changes.extend(self._expire())
        changes.extend(self.consolidate(nodepools))
        changes.extend(self.finalize())
        changes.extend(self.remove_orphaned_nodes())
        return changes

    def _adopt(self, nodeclaim: KarpenterNodeClaim) -> _Launch:
        """A NodeClaim found launched by someone else: its fate from now (counted as a launch)."""
        labels = nodeclaim.metadata.labels
        capacity_type = read_capacity_type(labels.get(KEY_CAPACITY_TYPE, "")) or "OnDemand"
        offering = f"{labels.get(KEY_INSTANCE_TYPE, '')}/{labels.get(KEY_ZONE, '*')}/{capacity_type}"
        launch = _Launch(self._elapsed(), self._fates.fate(self._launched, capacity_type), offering)
        self._launched += 1
        if _condition(nodeclaim, CONDITION_REGISTERED) == "True":
            launch.node = nodeclaim.status.node_name
        self._launches[nodeclaim.name] = launch
        return launch
