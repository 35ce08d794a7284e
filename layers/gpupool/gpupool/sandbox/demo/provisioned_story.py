"""The demo's Provisioned stories: a pool's life on a simulated clock (AWS or Alibaba Cloud).

Role: `ProvisionedStory(world, invoke, scenario).run()` moves the world's `ManualClock` in steps
and, at each step, plays every outside party the functions meet in production: the workload
(starts a spike, ends it), the simulated cluster's kubelet and node agent (`InstanceNodes`:
nodes join `join_delay` after their instance runs, leave when it is gone), the cloud's
scheduler (a schedule tick per function every minute) and instance events (a state change for
every instance state change seen in the account), and the in-cluster relay (`node.joined`,
`node.deleted`, `claim.deleted` CloudEvents on the bind function's HTTP front). Each delivery
goes through `invoke(function, event)` — the real handlers, wired by the caller to the real
service and adapters — and the result becomes a `TimelineEntry`. The `DemoWorld` supplies the
envelopes its cloud sends, its instances and catalog, and the manifests. Quiet schedule ticks
(nothing applied, no error, no compaction run) are counted, not listed. Ends with the final
state read from Kubernetes and the cloud. `STORIES` are the `--story` choices.

Must not: decide anything about claims, pools or instances (the functions do), or import the
adapters (ring rule: the caller passes `invoke`).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from gpupool.core.model.constants import API_GROUP, LABEL_NODE_PROVISIONER, TAG_NODE_NAME
from gpupool.core.vocabulary.events import CLAIM_DELETED, NODE_DELETED, NODE_JOINED
from gpupool.sandbox.demo.timeline import TimelineEntry
from gpupool.sandbox.demo.workload import Workload, end_workload, start_workload
from gpupool.sandbox.demo.world import DemoWorld
from gpupool.simulation.cluster.fates import CloudFates, FatesConfig
from gpupool.simulation.cluster.instance_nodes import InstanceNodes

__all__ = ["STORIES", "FinalState", "Invoke", "ProvisionedStory", "Scenario", "StoryResult"]

Invoke = Callable[[str, Mapping[str, Any]], Mapping[str, Any]]
_POOL = "tensor-fusion-elastic"
_QUIET_ACTIONS = ("patch-pool-status",)


@dataclass(frozen=True)
class Scenario:
    """When things happen, relative to the start. Defaults tell the README's story."""

    duration: timedelta = timedelta(minutes=12)
    step: timedelta = timedelta(seconds=30)
    tick_every: timedelta = timedelta(minutes=1)
    join_delay: timedelta = timedelta(seconds=90)  # from the instance running to its node joining
    spike_at: timedelta = timedelta(minutes=3)
    spike_ends_at: timedelta = timedelta(minutes=6)
    spike_nodes: int = 2
    never_join_first: int = 0  # the first N claims the functions create never get a node


STORIES: dict[str, tuple[str, Scenario]] = {
    "scale": (
        "launch to the minimum, nodes join and bind, a spike raises capacity, compaction trims it back",
        Scenario(),
    ),
    "never-join": (
        "one node never registers: its claim fails at the 15-minute registration timeout, "
        "its instance is terminated and the gap refilled",
        Scenario(
            duration=timedelta(minutes=20),
            spike_at=timedelta(hours=1),
            spike_ends_at=timedelta(hours=2),
            never_join_first=1,
        ),
    ),
}


@dataclass(frozen=True)
class FinalState:
    """What is left at the end: claims by phase, instances by state, nodes by claim."""

    claims: dict[str, str]
    instances: dict[str, dict[str, str]]
    nodes: dict[str, str]
    pool_phase: str | None

    def to_json(self) -> dict[str, Any]:
        return {
            "claims": self.claims,
            "instances": self.instances,
            "nodes": self.nodes,
            "pool_phase": self.pool_phase,
        }


@dataclass
class StoryResult:
    start: datetime
    timeline: list[TimelineEntry]
    final: FinalState
    claim_phases: dict[str, list[str]] = field(default_factory=dict)
    quiet_ticks: int = 0

    def to_json(self) -> dict[str, Any]:
        return {
            "start": self.start.isoformat(),
            "timeline": [entry.to_json() for entry in self.timeline],
            "claim_phases": self.claim_phases,
            "quiet_ticks": self.quiet_ticks,
            "final": self.final.to_json(),
        }


def _applied_counts(outcome: Mapping[str, Any]) -> Counter[str]:
    return Counter(
        str(row.get("action"))
        for row in outcome.get("applied") or []
        if row.get("result") == "applied" and row.get("action") not in _QUIET_ACTIONS
    )


def _summary(function: str, trigger: str, body: Mapping[str, Any]) -> str:
    status = str(body.get("status") or "failed")
    if status == "ignored":
        return f"{function} ← {trigger}: ignored ({body.get('reason') or body.get('error')})"
    counts = _applied_counts(body)
    did = ", ".join(f"{kind} ×{n}" if n > 1 else kind for kind, n in sorted(counts.items()))
    return f"{function} ← {trigger}: {did or 'nothing to change'}"


class ProvisionedStory:
    def __init__(self, world: DemoWorld, invoke: Invoke, scenario: Scenario | None = None) -> None:
        self.world = world
        self.scenario = scenario or Scenario()
        self._invoke = invoke
        self._events = world.events  # envelopes as the world's cloud delivers them (AWS or Alibaba)
        join = self.scenario.join_delay.total_seconds()
        self.kubelet = InstanceNodes(
            world.kubelet,
            instances=world.sim_instances,
            clock=world.clock,
            fates=CloudFates(FatesConfig.fixed(join_seconds=join)),
        )
        self.start = world.clock.now()
        self.timeline: list[TimelineEntry] = []
        self.claim_phases: dict[str, list[str]] = {}
        self.quiet_ticks = 0
        self._instance_states: dict[str, str] = {}
        self._deleting_claims: set[str] = set()
        self._workload: Workload | None = None

    # ---- the story -----------------------------------------------------------------------
    def run(self) -> StoryResult:
        installed = self.world.install(self.world.manifests())
        self._note(
            "setup", f"installed {', '.join(installed)}", ("pool min 2×T4 worth, warm 1×T4, max 8×T4",)
        )
        elapsed = timedelta(0)
        while elapsed <= self.scenario.duration:
            self.world.clock.set(self.start + elapsed)
            self._workload_step(elapsed)
            self._kubelet_step()
            if elapsed % self.scenario.tick_every == timedelta(0):
                for function in ("launch", "bind", "compact"):
                    self._deliver(
                        function, "schedule", self._events.scheduled(function, self._now()), tick=True
                    )
            self._drain_cloud_and_relay()
            self._record_phases()
            elapsed += self.scenario.step
        return StoryResult(
            start=self.start,
            timeline=self.timeline,
            final=self.final_state(),
            claim_phases=self.claim_phases,
            quiet_ticks=self.quiet_ticks,
        )

    def _workload_step(self, elapsed: timedelta) -> None:
        kubelet = self.world.kubelet
        if elapsed == self.scenario.spike_at and self._workload is None:
            nodes = sorted(n["metadata"]["name"] for n in self.world.objects.list("", "nodes"))[
                : self.scenario.spike_nodes
            ]
            self._workload = start_workload(kubelet, "training-spike", nodes, pool=_POOL)
            self._note(
                "workload",
                f"training-spike starts: {len(nodes)} worker pod(s), each using a whole node's GPUs",
                ("node agent: those GPUs' available TFLOPS/VRAM drop to 0",),
            )
        elif elapsed == self.scenario.spike_ends_at and self._workload is not None:
            end_workload(kubelet, self._workload)
            self._note(
                "workload",
                f"training-spike ends: {len(self._workload.pods)} pod(s) deleted",
                ("node agent: their GPUs are available again",),
            )

    def _kubelet_step(self) -> None:
        changes = self.kubelet.step()
        for change in changes:  # what happened in the cluster first, then what the relay sends
            if change.change == "joined":
                what = f"node {change.node} registered for claim {change.claim} (Ready; GPUNode, GPUs)"
                self._note("kubelet", what)
            else:
                self._note(
                    "cloud controller", f"node {change.node} removed: instance {change.instance_id} is gone"
                )
        for change in changes:
            data = {"node": change.node, **({"claim": change.claim} if change.claim else {})}
            kind = (NODE_JOINED if change.change == "joined" else NODE_DELETED).name
            self._deliver("bind", f"relay {kind}", self._events.relay(kind, data, self._now()))

    def _drain_cloud_and_relay(self) -> None:
        """Deliver what EventBridge and the relay would send, until nothing new happens."""
        for _ in range(20):
            events = self._instance_events() + self._claim_events()
            if not events:
                return
            for trigger, event in events:
                self._deliver("bind", trigger, event)

    def _instance_events(self) -> list[tuple[str, dict[str, Any]]]:
        events = []
        for instance in self.world.managed_instances():
            instance_id, state = instance["InstanceId"], instance["State"]["Name"]
            if self._instance_states.get(instance_id) != state:
                self._instance_states[instance_id] = state
                event = self._events.instance_state(instance_id, state, self._now())
                events.append((f"{self.world.instance_service} {instance_id} {state}", event))
        return events

    def _claim_events(self) -> list[tuple[str, dict[str, Any]]]:
        events = []
        for claim in self.world.objects.list(API_GROUP, "gpunodeclaims"):
            name = claim["metadata"]["name"]
            if claim["metadata"].get("deletionTimestamp") and name not in self._deleting_claims:
                self._deleting_claims.add(name)
                event = self._events.relay(CLAIM_DELETED.name, {"claim": name}, self._now())
                events.append((f"relay {CLAIM_DELETED.name}", event))
        return events

    # ---- deliveries and the record -------------------------------------------------------
    def _deliver(self, function: str, trigger: str, event: Mapping[str, Any], *, tick: bool = False) -> None:
        body = self._invoke(function, event)
        interesting = (
            bool(_applied_counts(body))
            or bool(body.get("errors"))
            or body.get("status") not in ("handled", "ignored")
            or any("compaction runs" in str(r) for r in (body.get("plan") or {}).get("reasons") or [])
        )
        if tick and not interesting:
            self.quiet_ticks += 1
            return
        actor = "EventBridge" if trigger.startswith(("schedule", self.world.instance_service)) else "relay"
        self.timeline.append(
            TimelineEntry(self._now(), actor, _summary(function, trigger, body), outcome=body)
        )

    def _note(self, actor: str, summary: str, details: tuple[str, ...] = ()) -> None:
        self.timeline.append(TimelineEntry(self._now(), actor, summary, details=details))

    def _now(self) -> datetime:
        return self.world.clock.now()

    def _record_phases(self) -> None:
        for claim in self.world.objects.list(API_GROUP, "gpunodeclaims"):
            phase = (claim.get("status") or {}).get("phase") or "Pending"
            if claim["metadata"].get("deletionTimestamp"):
                phase = "Deleting"
            name = claim["metadata"]["name"]
            if name not in self.claim_phases and len(self.claim_phases) < self.scenario.never_join_first:
                self.kubelet.never_join(name)
                self._note("kubelet", f"(scenario) the node of claim {name} will never register")
            history = self.claim_phases.setdefault(name, [])
            if not history or history[-1] != phase:
                history.append(phase)

    def final_state(self) -> FinalState:
        objects = self.world.objects
        claims = {
            c["metadata"]["name"]: (
                "Deleting"
                if c["metadata"].get("deletionTimestamp")
                else (c.get("status") or {}).get("phase", "Pending")
            )
            for c in objects.list(API_GROUP, "gpunodeclaims")
        }
        for name, history in self.claim_phases.items():
            if name not in claims and history[-1] != "Gone":
                history.append("Gone")
        instances = {}
        for instance in self.world.managed_instances():
            tags = {t["Key"]: t["Value"] for t in instance.get("Tags") or []}
            instances[instance["InstanceId"]] = {
                "state": instance["State"]["Name"],
                "claim": tags.get(TAG_NODE_NAME, ""),
                "type": instance.get("InstanceType", ""),
            }
        nodes = {
            n["metadata"]["name"]: (n["metadata"].get("labels") or {}).get(LABEL_NODE_PROVISIONER, "")
            for n in objects.list("", "nodes")
        }
        pool = objects.get(API_GROUP, "gpupools", _POOL)
        phase = ((pool or {}).get("status") or {}).get("phase")
        return FinalState(claims=claims, instances=instances, nodes=nodes, pool_phase=phase)
