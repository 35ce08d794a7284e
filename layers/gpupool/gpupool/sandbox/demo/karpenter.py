"""A simulated Karpenter controller: NodeClaims in the sandbox become Nodes, as Karpenter would make them.

Role: `KarpenterSim.step()` walks every karpenter.sh/v1 NodeClaim: a new one is launched
(`status.providerID`, condition `Launched=True`) unless its instance type × zone was declared
out of capacity with `insufficient_capacity(...)` (then `Launched=False`, reason
`InsufficientCapacity`, and the NodeClaim is deleted on the next step, as Karpenter does); once
the boot delay has passed a launched one registers its Node — the NodeClaim's labels and taints,
the labels its requirements pin (instance type, zone, region, capacity type), `providerID`,
Ready, allocatable from the catalog — and gets `Registered=True` then `Initialized=True` and
`status.nodeName`, Karpenter's order. Beside the Node it publishes the GPUNode the node agent
would (phase Running, capacity from the catalog), since bind waits for the agent's word that a
node's GPUs are usable. A Node whose NodeClaim is gone is deleted, with its GPUNode.

Must not: decide anything about GPUNodeClaims or pools, read the wall clock (time comes from the
simulation's clock), or touch an object that is not a NodeClaim or a Node (and its GPUNode) it registered.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Literal

from gpupool.core.catalog import Catalog, load_catalog
from gpupool.core.model.constants import (
    API_GROUP,
    INITIAL_GPU_NODE_LABEL,
    KEY_CAPACITY_TYPE,
    KEY_INSTANCE_TYPE,
    KEY_REGION,
    KEY_ZONE,
)
from gpupool.sandbox.demo.objects import JsonObject, ObjectStore
from gpupool.sandbox.kubeapi import Clock

__all__ = ["ANNOTATION_SIM_NODECLAIM", "KarpenterChange", "KarpenterSim"]

GROUP = "karpenter.sh"
PLURAL = "nodeclaims"
LABEL_REGISTERED = "karpenter.sh/registered"  # Karpenter's label on the nodes it registered
ANNOTATION_SIM_NODECLAIM = "gpupool.sandbox/nodeclaim"  # which NodeClaim this simulated node belongs to
DEFAULT_BOOT_DELAY = timedelta(seconds=60)


@dataclass(frozen=True)
class KarpenterChange:
    """One thing the simulated Karpenter did to a NodeClaim or its node."""

    change: Literal["launched", "launch-failed", "deleted", "registered", "node-removed"]
    nodeclaim: str
    detail: str = ""


def _stamp(moment: datetime) -> str:
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


def _pinned(nodeclaim: JsonObject) -> dict[str, str]:
    requirements = (nodeclaim.get("spec") or {}).get("requirements") or []
    return {r["key"]: r["values"][0] for r in requirements if r.get("operator") == "In" and r.get("values")}


def _condition(nodeclaim: JsonObject, kind: str) -> str | None:
    conditions = (nodeclaim.get("status") or {}).get("conditions") or []
    return next((c.get("status") for c in conditions if c.get("type") == kind), None)


class KarpenterSim:
    """Plays Karpenter for the sandbox's NodeClaims; call `step()` after time moves."""

    def __init__(
        self,
        objects: ObjectStore,
        *,
        clock: Clock,
        region: str = "us-east-1",
        boot_delay: timedelta = DEFAULT_BOOT_DELAY,
        catalog: Catalog | None = None,
    ) -> None:
        self._objects = objects
        self._clock = clock
        self._region = region
        self._boot_delay = boot_delay
        self._catalog = catalog or load_catalog("aws")
        self._no_capacity: set[tuple[str, str]] = set()
        self._launched_at: dict[str, datetime] = {}

    def insufficient_capacity(self, instance_type: str, zone: str) -> None:
        """NodeClaims pinned to this instance type and zone fail to launch from now on."""
        self._no_capacity.add((instance_type, zone))

    def _conditions(self, nodeclaim: JsonObject, *added: tuple[str, str, str]) -> list[JsonObject]:
        kept = [
            c
            for c in (nodeclaim.get("status") or {}).get("conditions") or []
            if c.get("type") not in {a[0] for a in added}
        ]
        now = _stamp(self._clock.now())
        return [
            *kept,
            *({"type": t, "status": s, "reason": r, "lastTransitionTime": now} for t, s, r in added),
        ]

    def step(self) -> list[KarpenterChange]:
        changes: list[KarpenterChange] = []
        live: set[str] = set()
        for nodeclaim in self._objects.list(GROUP, PLURAL):
            name = nodeclaim["metadata"]["name"]
            live.add(name)
            change = self._advance(nodeclaim)
            if change is not None:
                changes.append(change)
                if change.change == "deleted":
                    live.discard(name)
        changes.extend(self._remove_departed(live))
        return changes

    def _advance(self, nodeclaim: JsonObject) -> KarpenterChange | None:
        name = nodeclaim["metadata"]["name"]
        pinned = _pinned(nodeclaim)
        placement = (pinned.get(KEY_INSTANCE_TYPE, ""), pinned.get(KEY_ZONE, ""))
        launched = _condition(nodeclaim, "Launched")
        if launched == "False":
            self._objects.delete(GROUP, PLURAL, name)
            return KarpenterChange("deleted", name, "after a failed launch")
        status: JsonObject
        if launched is None:
            if placement in self._no_capacity:
                status = {
                    "conditions": self._conditions(nodeclaim, ("Launched", "False", "InsufficientCapacity"))
                }
                self._objects.patch_status(GROUP, PLURAL, name, status)
                return KarpenterChange("launch-failed", name, "/".join(placement))
            instance = "i-" + hashlib.sha256(name.encode()).hexdigest()[:17]
            status = {
                "providerID": f"aws:///{placement[1]}/{instance}",
                "conditions": self._conditions(nodeclaim, ("Launched", "True", "Launched")),
            }
            self._objects.patch_status(GROUP, PLURAL, name, status)
            self._launched_at[name] = self._clock.now()
            return KarpenterChange("launched", name, "/".join(placement))
        if _condition(nodeclaim, "Registered") == "True":
            return None
        since = self._launched_at.setdefault(name, self._clock.now())
        if self._clock.now() - since < self._boot_delay:
            return None
        node = self._register(nodeclaim, pinned)
        status = {
            "nodeName": node,
            "conditions": self._conditions(
                nodeclaim, ("Registered", "True", "Registered"), ("Initialized", "True", "Initialized")
            ),
        }
        self._objects.patch_status(GROUP, PLURAL, name, status)
        return KarpenterChange("registered", name, node)

    def _register(self, nodeclaim: JsonObject, pinned: dict[str, str]) -> str:
        name = nodeclaim["metadata"]["name"]
        node_name = f"ip-{hashlib.sha256(name.encode()).hexdigest()[:8]}.ec2.internal"
        spec = self._catalog.instance_type(pinned.get(KEY_INSTANCE_TYPE, ""))
        labels = {
            **(nodeclaim["metadata"].get("labels") or {}),
            **{k: v for k, v in pinned.items() if k in (KEY_INSTANCE_TYPE, KEY_ZONE, KEY_CAPACITY_TYPE)},
            KEY_REGION: pinned.get(KEY_REGION, self._region),
            LABEL_REGISTERED: "true",
            INITIAL_GPU_NODE_LABEL: "true",
            "kubernetes.io/hostname": node_name,
        }
        capacity = {
            "cpu": str(spec.vcpu) if spec else "4",
            "memory": f"{spec.memory_gib}Gi" if spec else "16Gi",
            "pods": "110",
            "nvidia.com/gpu": str(spec.gpu_count) if spec else "1",
        }
        now = _stamp(self._clock.now())
        ready = {"type": "Ready", "status": "True", "reason": "KubeletReady", "lastTransitionTime": now}
        provider = (nodeclaim.get("status") or {}).get("providerID") or ""
        body: JsonObject = {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {
                "name": node_name,
                "labels": labels,
                "annotations": {ANNOTATION_SIM_NODECLAIM: name},
            },
            "spec": {"providerID": provider, "taints": (nodeclaim.get("spec") or {}).get("taints") or []},
            "status": {"conditions": [ready], "capacity": capacity, "allocatable": capacity},
        }
        if self._objects.get("", "nodes", node_name) is None:
            self._objects.create("", "nodes", body)
        if spec is not None and self._objects.get(API_GROUP, "gpunodes", node_name) is None:
            tflops = format((spec.tflops_per_gpu * spec.gpu_count).normalize(), "f")
            vram = f"{spec.vram_gib_per_gpu * spec.gpu_count}Gi"
            gpu_node: JsonObject = {
                "apiVersion": f"{API_GROUP}/v1",
                "kind": "GPUNode",
                "metadata": {"name": node_name, "annotations": {ANNOTATION_SIM_NODECLAIM: name}},
                "spec": {"manageMode": "Provisioned"},
                "status": {
                    "phase": "Running",
                    "totalTFlops": tflops,
                    "totalVRAM": vram,
                    "availableTFlops": tflops,
                    "availableVRAM": vram,
                    "totalGPUs": spec.gpu_count,
                    "managedGPUs": spec.gpu_count,
                },
            }
            self._objects.create(API_GROUP, "gpunodes", gpu_node)
        return node_name

    def _remove_departed(self, live: set[str]) -> list[KarpenterChange]:
        changes: list[KarpenterChange] = []
        for node in self._objects.list("", "nodes"):
            owner = (node["metadata"].get("annotations") or {}).get(ANNOTATION_SIM_NODECLAIM)
            if owner is None or owner in live:
                continue
            self._objects.delete("", "nodes", node["metadata"]["name"])
            if self._objects.get(API_GROUP, "gpunodes", node["metadata"]["name"]) is not None:
                self._objects.delete(API_GROUP, "gpunodes", node["metadata"]["name"])
            self._launched_at.pop(owner, None)
            changes.append(KarpenterChange("node-removed", owner, node["metadata"]["name"]))
        return changes
