"""gpupool's side: the real launch / bind / compact services on in-memory ports and the simulated clock.

Role: `GpupoolDriver` wires `Deps` to `MemoryCompute` / `MemoryCluster` / `MemoryClock` with the
simulated pool, and plays, each engine step, every outside party the functions meet:
- the cloud: the n-th instance the launch service starts gets the n-th fate of the simulated
  cloud's `CloudFates` (boots, is interrupted); offerings out of capacity this hour fail their
  launches;
- EventBridge (AWS's, or Alibaba's): an instance state change (`running`, `terminated`) and
  a Spot (preemptible) interruption notice become the causes the intake makes of them
  (`InstanceStateChanged` delivered to bind, `InstanceInterruption` to launch, which replaces
  the instance at once) — the envelopes themselves are not built (intake has its own tests;
  parsing them would only slow days down);
- the kubelet and node agent (the simulated cluster's `Kubelet`, writing into `MemoryCluster`):
  a node, named after its claim, joins with its GPUNode reporting the instance's GPUs, and
  leaves with its instance; the relay's `node.joined` / `node.deleted` / `claim.deleted` reach
  bind; the trace's pods are worker pods on those nodes (`worker_pods`);
- the schedule: launch (`Reconcile`), bind (`Sweep`) and compact (`Compact`) every minute;
  launch also right after anything changed (pods placed or gone, nodes lost or joined).

Must not: decide anything about claims, instances or the pool (the services do).
"""

from __future__ import annotations

import itertools
import re
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime, timedelta
from decimal import Decimal

from gpupool.core.catalog import load_catalog
from gpupool.core.intake.causes import (
    ClaimDeleted,
    Compact,
    InstanceInterruption,
    InstanceStateChanged,
    InterruptionReason,
    NodeChanged,
    Reconcile,
    Sweep,
)
from gpupool.core.model.base import ObjectMeta
from gpupool.core.model.constants import EVENT_BUDGET_EXCEEDED
from gpupool.core.model.nodeclass import GPUNodeClass
from gpupool.core.planning.plan import OfferingRef
from gpupool.service.bind import handle_bind
from gpupool.service.compact import handle_compact
from gpupool.service.deps import Deps, Settings
from gpupool.service.launch import handle_launch
from gpupool.service.outcome import Outcome
from gpupool.simulation.capacity.ledger import CONSOLIDATION_REFUSED, InstanceRecord, Ledger
from gpupool.simulation.capacity.placement import NodeShape, SimNode
from gpupool.simulation.capacity.pool_spec import (
    CLUSTER,
    CONSOLIDATING,
    NODE_CLASS,
    POOL,
    PoolSpec,
    gpupool_pool,
    pool_offerings,
)
from gpupool.simulation.capacity.sizes import OfferingSize
from gpupool.simulation.capacity.violations import StateSample
from gpupool.simulation.capacity.worker_pods import WorkerPods
from gpupool.simulation.cluster.fates import INTERRUPTION_NOTICE_SECONDS, CloudFates, LaunchFate
from gpupool.simulation.cluster.kubelet import Kubelet, NodeRegistration
from gpupool.simulation.cluster.store import MemoryStore
from gpupool.testing.memory_ports import START, MemoryClock, MemoryCluster, MemoryCompute

__all__ = ["GpupoolDriver", "Tracked", "consolidation_refusal"]

_FIGURES = re.compile(r"\d+(\.\d+)?[a-zA-Z]*")


def consolidation_refusal(reason: str) -> str | None:
    """Why consolidation drained nothing, as one of compact's reasons says it (`node N: not
    consolidated: why`, `pool P: why; consolidation waits`, `pool P: consolidation waits: why`),
    figures and names left out so that like reasons count together; None for other reasons."""
    _subject, _, said = reason.partition(": ")
    for before, after in (
        ("not consolidated: ", ""),
        ("consolidation waits: ", ""),
        ("", "; consolidation waits"),
    ):
        if before and said.startswith(before):
            return _FIGURES.sub("#", said.removeprefix(before))
        if after and said.endswith(after):
            return _FIGURES.sub("#", said.removesuffix(after))
    return None


@dataclass
class Tracked:
    """One instance the launch service started, and where it is in its fate."""

    claim: str
    offering: OfferingRef
    size: OfferingSize
    launched: float
    fate: LaunchFate
    booted: bool = False
    joined: bool = False
    warned: bool = False
    ended: bool = False

    @property
    def boot_at(self) -> float:
        return self.launched + self.fate.boot_seconds

    @property
    def join_at(self) -> float:
        return self.boot_at + self.fate.join_seconds


def _offering_key(
    instance_type: str | None, zone: str | None, capacity_type: str | None
) -> tuple[str, str, str]:
    return instance_type or "", zone or "", capacity_type or "OnDemand"


class GpupoolDriver:
    name = "gpupool"

    def __init__(self, spec: PoolSpec, fates: CloudFates, *, start: datetime = START) -> None:
        # Consolidation reads each GPU and what each worker holds, as the allocator does: the
        # node agent then publishes GPU objects and workers carry the extender's annotations.
        self.consolidation = spec.consolidation
        if spec.consolidation:
            self.name = CONSOLIDATING
        self.fates, self.start, self.region = fates, start, spec.region
        self.clock = MemoryClock(start)
        self.compute = MemoryCompute(self.clock, cluster=CLUSTER)
        self.cluster = MemoryCluster(self.clock)
        self.compute.keep_calls = self.cluster.keep_calls = False
        self.cluster.add(GPUNodeClass(metadata=ObjectMeta(name=NODE_CLASS)), gpupool_pool(spec))
        self.offerings = pool_offerings(spec)
        self._by_key = {_offering_key(o.instance_type, o.zone, o.capacity_type): o for o in self.offerings}
        names = itertools.count(1)
        self.deps = Deps(
            compute=self.compute,
            cluster=self.cluster,
            clock=self.clock,
            settings=Settings(cluster_name=CLUSTER, region=spec.region),
            offerings=self.offerings,
            new_suffix=lambda: f"{next(names):05d}",
            sleep=lambda _seconds: None,  # evictions are immediate here: a drain never waits
            holder="gpupool-simulation",
        )
        self.store = MemoryStore(self.cluster)
        self.kubelet = Kubelet(self.store, catalog=load_catalog(spec.cloud), clock=self.clock)
        self.workers = WorkerPods(self.cluster, self.kubelet, allocations=spec.consolidation)
        # What each cloud's intake makes of its notice: EC2's Spot warning, ECS's preemptible one.
        self._notice: InterruptionReason = (
            "spot-interruption" if spec.cloud == "aws" else "preemptible-interruption"
        )
        self.ledger = Ledger(self.name)
        self.tracked: dict[str, Tracked] = {}
        self._hour = -1
        self._deleting_seen: set[str] = set()
        self._events = itertools.count(1)

    # ---- the services, invoked as the handlers would ---------------------------------------
    def _id(self, what: str) -> str:
        return f"sim-{next(self._events)}-{what}"

    def _bind(self, cause: object) -> Outcome:
        self.ledger.counters["invocations:bind"] += 1
        return handle_bind(cause, self.deps)

    def _launch(self, trigger: str) -> None:
        self.ledger.counters["invocations:launch"] += 1
        handle_launch(Reconcile(trigger=trigger, event_id=self._id("launch")), self.deps)

    def _warn(self, instance_id: str) -> Outcome:
        """The cloud's interruption notice, delivered to launch as EventBridge does."""
        self.ledger.counters["invocations:launch"] += 1
        cause = InstanceInterruption(instance_id=instance_id, reason=self._notice, event_id=self._id("spot"))
        return handle_launch(cause, self.deps)

    def _compact(self) -> None:
        self.ledger.counters["invocations:compact"] += 1
        holding = Counter(self.workers.placed_on().values())
        outcome = handle_compact(Compact(event_id=self._id("compact")), self.deps)
        if self.consolidation:
            # Why it drained nothing, counted over the run (`consolidationRefusals` in --json).
            for reason in outcome.plan.reasons:
                if (why := consolidation_refusal(reason)) is not None:
                    self.ledger.counters[f"{CONSOLIDATION_REFUSED}{why}"] += 1
        applied = [row for row in outcome.applied if row.get("result") == "applied"]
        drained = [row.get("node", "") for row in applied if row.get("action") == "drain-node"]
        self.ledger.counters["drains"] += len(drained)
        self.ledger.counters["pods_moved"] += sum(holding[node] for node in drained)
        removed = sum(1 for row in applied if row.get("action") == "delete-claim")
        self.ledger.counters["compactions"] += removed

    # ---- the cloud and the cluster -----------------------------------------------------------
    def _see_launches(self, at: float) -> None:
        for instance_id, instance in self.compute.instances.items():
            if instance_id in self.tracked:
                continue
            offering = self._by_key[
                _offering_key(instance.instance_type, instance.zone, instance.capacity_type)
            ]
            fate = self.fates.fate(len(self.tracked), instance.capacity_type or "OnDemand")
            size = OfferingSize.of(offering)
            self.tracked[instance_id] = Tracked(instance.claim_name or "", offering, size, at, fate)
            self.ledger.launched(InstanceRecord(instance_id, offering.key, size.gpus, size.hourly_price, at))

    def _join(self, instance_id: str, tracked: Tracked) -> None:
        """The instance's node registers (named after its claim, as the placement keys nodes)."""
        offering = tracked.offering
        self.kubelet.register(
            NodeRegistration(
                name=tracked.claim,
                instance_type=offering.instance_type,
                zone=offering.zone or "",
                region=self.region,
                provider_id=f"aws:///{offering.zone or ''}/{instance_id}",
                instance_id=instance_id,
                claim=tracked.claim,
                pool=POOL if self.consolidation else None,
                gpu_devices=self.consolidation,
            )
        )

    def _gone(self) -> Iterator[tuple[str, bool]]:
        """Tracked instances the cloud has terminated since the last look, one by one, and
        whether a node left with each."""
        ended = [
            (i, t)
            for i, t in self.tracked.items()
            if not t.ended and self.compute.instances[i].state == "terminated"
        ]
        for instance_id, tracked in ended:
            yield instance_id, self.kubelet.deregister(tracked.claim)

    def _settle(self, at: float) -> None:
        """Instances that ended leave the cluster; deleting claims reach bind (the relay)."""
        for _ in range(4):
            quiet = True
            for instance_id, node_left in self._gone():
                tracked = self.tracked[instance_id]
                if not tracked.ended:
                    tracked.ended = True
                    self.ledger.ended(instance_id, at)
                    if node_left:
                        self._bind(
                            NodeChanged(node=tracked.claim, change="deleted", event_id=self._id("node"))
                        )
                    quiet = False
            for name, claim in list(self.cluster.objects["GPUNodeClaim"].items()):
                if claim.metadata.deletion_timestamp is not None and name not in self._deleting_seen:
                    self._deleting_seen.add(name)
                    self._bind(ClaimDeleted(claim=name, event_id=self._id("claim-deleted")))
                    quiet = False
            if quiet:
                return

    def _cloud(self, at: float) -> bool:
        """Boots, joins, interruption notices and terminations due by `at`; True when any."""
        changed = False
        for instance_id, tracked in list(self.tracked.items()):
            if tracked.ended:
                continue
            state = self.compute.instances[instance_id].state
            if not tracked.booted and at >= tracked.boot_at and state == "pending":
                tracked.booted = True
                self.compute.set_state(instance_id, "running")
                self._bind(
                    InstanceStateChanged(instance_id=instance_id, state="running", event_id=self._id("ec2"))
                )
                changed = True
            if tracked.booted and not tracked.joined and at >= tracked.join_at and state != "terminated":
                tracked.joined = True
                self._join(instance_id, tracked)
                self._bind(
                    NodeChanged(
                        node=tracked.claim, change="joined", claim=tracked.claim, event_id=self._id("node")
                    )
                )
                changed = True
            after = tracked.fate.interrupted_after
            if after is None or tracked.ended:
                continue
            if not tracked.warned and at >= tracked.launched + after:
                tracked.warned = True
                outcome = self._warn(instance_id)
                if not outcome.errors:
                    self.ledger.counters["interruptions_handled"] += 1
                changed = True
            if tracked.warned and at >= tracked.launched + after + INTERRUPTION_NOTICE_SECONDS:
                if self.compute.instances[instance_id].state != "terminated":
                    self.compute.set_state(instance_id, "terminated")
                    self._bind(
                        InstanceStateChanged(
                            instance_id=instance_id, state="terminated", event_id=self._id("ec2")
                        )
                    )
                changed = True
        return changed

    # ---- the engine's interface -------------------------------------------------------------
    def advance(self, at: float, *, tick: bool, changed: bool) -> None:
        self.clock.set(self.start + timedelta(seconds=at))
        if int(at // 3600) != self._hour:
            self._hour = int(at // 3600)
            self.compute.no_capacity = {
                o.key for o in self.offerings if self.fates.out_of_capacity(o.key, at)
            }
        changed = self._cloud(at) or changed
        self._settle(at)
        if tick or changed:
            self._launch("schedule" if tick else "simulation")
            self._see_launches(at)
        if tick:
            self._bind(Sweep(event_id=self._id("sweep")))
            self._compact()
        self._settle(at)

    def ready_nodes(self) -> dict[str, NodeShape]:
        return self.workers.ready_nodes(
            {t.claim: t.size.shape for t in self.tracked.values() if t.joined and not t.ended}
        )

    def evicted(self) -> list[str]:
        return self.workers.evicted_pods()

    def pod_placed(self, pod: str, node: SimNode) -> None:
        self.workers.place(pod, node)

    def pod_left(self, pod: str, node: SimNode | None) -> None:
        self.workers.remove(pod, node)

    def sample(self, at: float) -> StateSample:
        live = {i: t for i, t in self.tracked.items() if not t.ended and not t.warned}
        return StateSample(
            at=at,
            tflops=sum((t.size.tflops for t in live.values()), start=Decimal(0)),
            vram=sum((t.size.vram_gib for t in live.values()), start=Decimal(0)),
            instance_claims={i: t.claim for i, t in live.items()},
            claims=frozenset(self.cluster.objects["GPUNodeClaim"]),
        )

    def finish(self) -> None:
        """Launch failures and budget refusals, read from the cloud's and the cluster's records."""
        self.ledger.counters["launch_failures"] = self.compute.call_counts["launch"] - len(
            self.compute.instances
        )
        for event in self.cluster.events:
            if event["reason"] == EVENT_BUDGET_EXCEEDED:
                for _ in range(int(event["count"])):
                    self.ledger.refused(str(event["message"]))
