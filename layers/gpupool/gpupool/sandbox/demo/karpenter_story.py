"""The demo's Karpenter and AutoSelect stories: the real functions beside a simulated Karpenter.

Role: `KarpenterStory(world, invoke, mode).run()` plays one story on an AWS `DemoWorld` (embedded
API server with Karpenter's CRD rules, on a manual clock, moto EC2) with the simulated cluster's
`SimulatedKarpenter` as Karpenter (nodes register 60 s after launch; a NodeClaim it cannot
launch for capacity is deleted, as Karpenter does), delivering schedule ticks to the launch and
bind functions through `invoke` and returning the timeline.
- `karpenter`: a Karpenter-mode pool with a minimum; the launch function records GPUNodeClaims
  and their NodeClaims (`expireAfter: Never`); the first NodeClaim's instance type × zone is out
  of capacity, so Karpenter deletes those NodeClaims, their claims fail, and the refill takes the
  next offering; the others launch, register and bind.
- `autoselect`: a NodePool without a zone requirement, a GPU node Karpenter made from it (the
  template: its NodeClaim lists every compatible type, its labels say what was launched), an
  AutoSelect pool and pending TensorFusion pods (one asks for more CPU than such a node has);
  the launch function makes expansion NodeClaims pinned to the launched type and zone (≤ 15 in
  flight); that type × zone then runs out of capacity, Karpenter deletes them, and at the next
  tick each pod gets one on the next candidate; Karpenter registers them and the stand-in
  scheduler places each pod on the node made for it.

Must not: decide anything (the functions do) or import the adapters (the CLI wires `invoke`).
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import timedelta
from typing import Any, Literal

from gpupool.core.model.constants import SCHEDULER_NAME
from gpupool.core.model.karpenter import KarpenterNodePool
from gpupool.sandbox.demo.provisioned_story import Invoke
from gpupool.sandbox.demo.timeline import TimelineEntry
from gpupool.sandbox.demo.world import DemoWorld
from gpupool.simulation.cluster.fates import CloudFates, FatesConfig
from gpupool.simulation.cluster.json_store import JsonObject
from gpupool.simulation.cluster.karpenter import KarpenterChange, SimulatedKarpenter

__all__ = ["MODES", "KarpenterStory"]

Mode = Literal["karpenter", "autoselect"]
MODES: dict[str, str] = {
    "karpenter": "GPUNodeClaims become Karpenter NodeClaims; a capacity failure moves to the next offering",
    "autoselect": "pods short of GPU capacity only get NodeClaims copied from a Karpenter-made GPU node",
}
STEP = timedelta(seconds=30)
BOOT = timedelta(seconds=60)  # from a NodeClaim's launch to its node registering
CLASS_REF = {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass", "version": "v1", "name": "default"}
GPU_TAINT = {"key": "nvidia.com/gpu", "value": "true", "effect": "NoSchedule"}
PODS = 20


class KarpenterStory:
    def __init__(self, world: DemoWorld, invoke: Invoke, mode: Mode) -> None:
        if world.cloud_name != "aws":
            raise ValueError(
                f"the {mode} story plays on AWS (an EC2NodeClass, g4dn / g5), not {world.cloud_name}"
            )
        self.world = world
        self.mode = mode
        self._invoke = invoke
        self._events = world.events
        self.sim = SimulatedKarpenter(
            world.kubelet,
            CloudFates(FatesConfig.fixed(boot_seconds=BOOT.total_seconds())),
            clock=world.clock,
            region=world.region,
        )
        self.start = world.clock.now()
        self.timeline: list[TimelineEntry] = []
        self._ice_declared = False
        self._template = ""

    def _note(self, actor: str, summary: str, details: tuple[str, ...] = ()) -> None:
        self.timeline.append(TimelineEntry(self.world.clock.now(), actor, summary, details=details))

    def _tick(self, function: str) -> None:
        body: Mapping[str, Any] = self._invoke(
            function, self._events.scheduled(function, self.world.clock.now())
        )
        applied = [row for row in body.get("applied") or [] if row.get("action") != "patch-pool-status"]
        if applied or body.get("errors"):
            errors = len(body.get("errors") or [])
            summary = f"{function} (schedule tick): {len(applied)} action(s) applied, {errors} error(s)"
            self.timeline.append(TimelineEntry(self.world.clock.now(), "EventBridge", summary, outcome=body))

    def _karpenter(self) -> None:
        changes: list[KarpenterChange] = self.sim.step()
        for change in changes:
            self._note(
                "Karpenter (sim)", f"NodeClaim {change.nodeclaim}: {change.change} {change.detail}".rstrip()
            )

    # ---- setup ---------------------------------------------------------------------------
    def _setup_karpenter(self) -> None:
        objects = self.world.objects
        objects.create(
            "karpenter.k8s.aws",
            "ec2nodeclasses",
            {"apiVersion": "karpenter.k8s.aws/v1", "kind": "EC2NodeClass", "metadata": {"name": "default"}},
        )
        pool: JsonObject = {
            "apiVersion": "tensor-fusion.ai/v1",
            "kind": "GPUPool",
            "metadata": {"name": "karpenter-gpu"},
            "spec": {
                "capacityConfig": {"minResources": {"tflops": "130", "vram": "32Gi"}},
                "nodeManagerConfig": {
                    "provisioningMode": "Karpenter",
                    "nodeProvisioner": {
                        "karpenterNodeClassRef": CLASS_REF,
                        "gpuRequirements": [
                            {
                                "key": "node.kubernetes.io/instance-type",
                                "operator": "In",
                                "values": ["g4dn.xlarge", "g4dn.2xlarge", "g5.xlarge"],
                            }
                        ],
                        "gpuNodeLabels": {"team": "ml"},
                        "gpuTaints": [GPU_TAINT],
                    },
                },
            },
        }
        objects.create("tensor-fusion.ai", "gpupools", pool)
        self._note(
            "setup",
            "installed EC2NodeClass/default, GPUPool/karpenter-gpu (Karpenter mode, min 130 TFLOPS / 32Gi)",
        )

    def _setup_autoselect(self) -> None:
        objects = self.world.objects
        nodepool = {
            "apiVersion": "karpenter.sh/v1",
            "kind": "NodePool",
            "metadata": {"name": "gpu"},
            "spec": {
                "template": {
                    "spec": {
                        "requirements": [  # no zone: Karpenter may use every zone of the region
                            {
                                "key": "karpenter.k8s.aws/instance-family",
                                "operator": "In",
                                "values": ["g4dn", "g5"],
                            },
                            {"key": "karpenter.sh/capacity-type", "operator": "In", "values": ["on-demand"]},
                        ],
                        "nodeClassRef": {k: v for k, v in CLASS_REF.items() if k != "version"},
                        "taints": [GPU_TAINT],
                    }
                }
            },
        }
        stored = objects.create("karpenter.sh", "nodepools", nodepool)
        seed = self.sim.provision(KarpenterNodePool.model_validate(stored))
        self._template = seed.nodeclaim
        pool = {
            "apiVersion": "tensor-fusion.ai/v1",
            "kind": "GPUPool",
            "metadata": {"name": "auto-gpu"},
            "spec": {"nodeManagerConfig": {"provisioningMode": "AutoSelect"}},
        }
        objects.create("tensor-fusion.ai", "gpupools", pool)
        self._note(
            "setup",
            f"installed NodePool/gpu (no zone requirement), GPUPool/auto-gpu (AutoSelect); Karpenter made "
            f"NodeClaim {self._template} from the NodePool (every compatible type, price-ordered, no zone)",
        )

    def _add_pods(self) -> None:
        for index in range(PODS + 1):
            cpu = "64" if index == PODS else "1"
            name = "too-big" if index == PODS else f"worker-{index:02d}"
            body: JsonObject = {
                "apiVersion": "v1",
                "kind": "Pod",
                "metadata": {
                    "name": name,
                    "namespace": "default",
                    "labels": {"tensor-fusion.ai/enabled": "true"},
                    "annotations": {"tensor-fusion.ai/gpupool": "auto-gpu"},
                },
                "spec": {
                    "schedulerName": SCHEDULER_NAME,
                    "containers": [
                        {"name": "main", "image": "worker", "resources": {"requests": {"cpu": cpu}}}
                    ],
                    "tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}],
                },
            }
            self.world.objects.create("", "pods", body, namespace="default")
            unschedulable = {
                "conditions": [{"type": "PodScheduled", "status": "False", "reason": "Unschedulable"}]
            }
            self.world.objects.patch_status("", "pods", name, unschedulable, namespace="default")
        self._note(
            "scheduler",
            f"{PODS + 1} TensorFusion pods are Unschedulable: no GPU capacity left",
            ("one of them, too-big, requests 64 CPUs",),
        )

    # ---- the stand-in scheduler and the capacity failure -----------------------------------
    def _place_pods(self) -> None:
        placed = []
        for nodeclaim in self.world.objects.list("karpenter.sh", "nodeclaims"):
            target = (nodeclaim["metadata"].get("annotations") or {}).get("gpupool.io/expansion-for")
            node = (nodeclaim.get("status") or {}).get("nodeName")
            if not target or not node:
                continue
            pod = self.world.objects.get("", "pods", target.split("/")[1], namespace="default")
            if pod is not None and not pod["spec"].get("nodeName"):
                # A bound pod's spec cannot be patched: the stand-in scheduler re-creates it bound.
                name = pod["metadata"]["name"]
                bound = {k: pod[k] for k in ("apiVersion", "kind")}
                bound["metadata"] = {
                    k: pod["metadata"][k] for k in ("name", "namespace", "labels", "annotations")
                }
                bound["spec"] = {**pod["spec"], "nodeName": node}
                self.world.objects.delete("", "pods", name, namespace="default")
                self.world.objects.create("", "pods", bound, namespace="default")
                scheduled = {"conditions": [{"type": "PodScheduled", "status": "True"}]}
                self.world.objects.patch_status("", "pods", name, scheduled, namespace="default")
                placed.append(pod["metadata"]["name"])
        if placed:
            self._note("scheduler", f"placed {len(placed)} pod(s) on the nodes made for them")

    def _declare_capacity_failure(self) -> None:
        """Karpenter mode: the first NodeClaim's pinned type × zone runs out of capacity.
        AutoSelect: once expansions are in flight, the template's launched type × zone does."""
        if self._ice_declared:
            return
        nodeclaims = self.world.objects.list("karpenter.sh", "nodeclaims")
        if self.mode == "karpenter":
            if not nodeclaims:
                return
            source = {
                r["key"]: r["values"][0] for r in nodeclaims[0]["spec"]["requirements"] if r.get("values")
            }
        else:
            if not any(
                "tensor-fusion.ai/expansion-source" in n["metadata"].get("labels", {}) for n in nodeclaims
            ):
                return
            template = next(n for n in nodeclaims if n["metadata"]["name"] == self._template)
            source = template["metadata"].get("labels") or {}
        placement = (
            source.get("node.kubernetes.io/instance-type", ""),
            source.get("topology.kubernetes.io/zone", ""),
        )
        self.sim.insufficient_capacity(*placement)
        self._ice_declared = True
        self._note("EC2 (sim)", f"no capacity for {placement[0]} in {placement[1]}")

    # ---- the story -------------------------------------------------------------------------
    def run(self, duration: timedelta = timedelta(minutes=12)) -> list[TimelineEntry]:
        if self.mode == "karpenter":
            self._setup_karpenter()
        else:
            self._setup_autoselect()
        elapsed = timedelta(0)
        while elapsed <= duration:
            self.world.clock.set(self.start + elapsed)
            if self.mode == "autoselect" and elapsed == timedelta(minutes=2):
                self._add_pods()
            if elapsed % timedelta(minutes=1) == timedelta(0):
                self._tick("launch")
            self._declare_capacity_failure()
            self._karpenter()
            if self.mode == "autoselect":
                self._place_pods()
            if elapsed % timedelta(minutes=1) == timedelta(0):
                self._tick("bind")
            elapsed += STEP
        return self.timeline
