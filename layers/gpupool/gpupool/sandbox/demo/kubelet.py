"""A simulated kubelet and node agent: instances that boot become Nodes, GPUNodes and GPUs.

Role: for each managed instance that is running (read from the cloud, e.g. moto) and whose
claim tag names a GPUNodeClaim, once a simulated boot delay has passed since the simulator
first saw it running, register what a real node would: a Ready core v1 Node (labels
`tensor-fusion.ai/node-provisioner=<claim>`, `nvidia.com/gpu.present=true`, instance-type,
zone, region, arch, os; `spec.providerID aws:///<zone>/<instance id>`), and what the node
agent would create: a GPUNode (capacity from the catalog) and one GPU object per device.
When the instance is gone (shutting-down, terminated, no longer reported), the node and its
GPU objects are removed, as the cloud controller manager does. `never_join(claim)` makes a
claim's instance boot without its node ever registering (to show the registration timeout).

Must not: decide anything about claims, pools or instances (that is the service's job), read
the wall clock (time comes from the simulation's clock), or write a claim.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, Literal

from gpupool.core.catalog import Catalog, InstanceType, load_catalog
from gpupool.core.model.constants import (
    API_GROUP,
    INITIAL_GPU_NODE_LABEL,
    LABEL_GPU_POOL,
    LABEL_MANAGED_BY,
    LABEL_NODE_PROVISIONER,
    TAG_MANAGED_BY,
    TAG_MANAGED_BY_VALUE,
    TAG_NODE_NAME,
    pool_label,
)
from gpupool.sandbox.demo.objects import JsonObject, ObjectStore
from gpupool.sandbox.kubeapi import Clock

__all__ = ["KubeletChange", "KubeletSim", "SimInstance", "ec2_instances"]

DEFAULT_BOOT_DELAY = timedelta(seconds=90)
_GONE = ("shutting-down", "terminated")
_NAMESPACE_UUID = uuid.UUID("6f1d7c1e-3a52-4c43-9a26-7a0b1f6d2e11")


@dataclass(frozen=True)
class SimInstance:
    """What the simulator needs to know about one cloud instance."""

    instance_id: str
    state: str
    claim_name: str | None
    instance_type: str
    zone: str
    region: str
    private_dns: str


@dataclass(frozen=True)
class KubeletChange:
    """One thing the simulated members did: a node joined, or a node left with its instance."""

    change: Literal["joined", "left"]
    node: str
    claim: str | None
    instance_id: str


def ec2_instances(client: Any, *, region: str) -> list[SimInstance]:
    """Every instance tagged `managed-by=tensor-fusion.ai` that an EC2 client (boto3) reports."""
    found: list[SimInstance] = []
    filters = [{"Name": f"tag:{TAG_MANAGED_BY}", "Values": [TAG_MANAGED_BY_VALUE]}]
    for page in client.get_paginator("describe_instances").paginate(Filters=filters):
        for reservation in page.get("Reservations") or []:
            for item in reservation.get("Instances") or []:
                tags = {tag["Key"]: tag["Value"] for tag in item.get("Tags") or []}
                found.append(
                    SimInstance(
                        instance_id=item["InstanceId"],
                        state=item["State"]["Name"],
                        claim_name=tags.get(TAG_NODE_NAME),
                        instance_type=item.get("InstanceType", ""),
                        zone=(item.get("Placement") or {}).get("AvailabilityZone", ""),
                        region=region,
                        private_dns=item.get("PrivateDnsName") or item["InstanceId"],
                    )
                )
    return sorted(found, key=lambda i: i.instance_id)


class KubeletSim:
    """Registers and removes nodes for managed instances; call `step()` after time moves."""

    def __init__(
        self,
        objects: ObjectStore,
        *,
        instances: Callable[[], Sequence[SimInstance]],
        clock: Clock,
        boot_delay: timedelta = DEFAULT_BOOT_DELAY,
        catalog: Catalog | None = None,
    ) -> None:
        self._objects = objects
        self._instances = instances
        self._clock = clock
        self._boot_delay = boot_delay
        self._catalog = catalog or load_catalog("aws")
        self._first_running: dict[str, datetime] = {}
        self._never_join: set[str] = set()

    def never_join(self, claim_name: str) -> None:
        """The instance launched for `claim_name` boots, but its node never registers."""
        self._never_join.add(claim_name)

    def step(self) -> list[KubeletChange]:
        """Join the nodes whose boot delay has passed; remove those whose instance is gone."""
        now = self._clock.now()
        instances = list(self._instances())
        changes: list[KubeletChange] = []
        live: set[str] = set()
        for instance in instances:
            if instance.state in _GONE:
                continue
            live.add(instance.instance_id)
            if instance.state != "running" or not instance.claim_name:
                continue
            first = self._first_running.setdefault(instance.instance_id, now)
            if now - first < self._boot_delay or instance.claim_name in self._never_join:
                continue
            if self._join(instance):
                changes.append(
                    KubeletChange("joined", instance.private_dns, instance.claim_name, instance.instance_id)
                )
        changes.extend(self._remove_departed(live))
        return changes

    # ---- joining -------------------------------------------------------------------------
    def _join(self, instance: SimInstance) -> bool:
        name = instance.private_dns
        if self._objects.get("", "nodes", name) is not None:
            return False
        claim = instance.claim_name or ""
        claim_object = self._objects.get(API_GROUP, "gpunodeclaims", claim)
        pool = ((claim_object or {}).get("metadata", {}).get("labels") or {}).get(LABEL_MANAGED_BY)
        spec = self._catalog.instance_type(instance.instance_type)
        self._objects.create("", "nodes", self._node(instance, spec))
        if spec is not None:
            self._objects.create(API_GROUP, "gpunodes", self._gpu_node(instance, spec, pool))
            for index in range(spec.gpu_count):
                self._objects.create(API_GROUP, "gpus", self._gpu(instance, spec, pool, index))
        return True

    def _node(self, instance: SimInstance, spec: InstanceType | None) -> JsonObject:
        now = _stamp(self._clock.now())
        gpus = str(spec.gpu_count) if spec else "0"
        capacity = {
            "cpu": str(spec.vcpu) if spec else "2",
            "memory": f"{spec.memory_gib}Gi" if spec else "4Gi",
            "pods": "110",
            "nvidia.com/gpu": gpus,
        }
        ready = {
            "type": "Ready",
            "status": "True",
            "reason": "KubeletReady",
            "message": "kubelet is posting ready status (simulated)",
            "lastHeartbeatTime": now,
            "lastTransitionTime": now,
        }
        return {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {
                "name": instance.private_dns,
                "labels": {
                    LABEL_NODE_PROVISIONER: instance.claim_name or "",
                    INITIAL_GPU_NODE_LABEL: "true",
                    "node.kubernetes.io/instance-type": instance.instance_type,
                    "topology.kubernetes.io/zone": instance.zone,
                    "topology.kubernetes.io/region": instance.region,
                    "kubernetes.io/arch": spec.arch if spec else "amd64",
                    "kubernetes.io/os": "linux",
                    "kubernetes.io/hostname": instance.private_dns,
                },
            },
            "spec": {"providerID": f"aws:///{instance.zone}/{instance.instance_id}"},
            "status": {"conditions": [ready], "capacity": capacity, "allocatable": capacity},
        }

    def _gpu_node(self, instance: SimInstance, spec: InstanceType, pool: str | None) -> JsonObject:
        tflops = _number(spec.tflops_per_gpu * spec.gpu_count)
        vram = f"{spec.vram_gib_per_gpu * spec.gpu_count}Gi"
        labels = {pool_label(pool): "true"} if pool else {}
        return {
            "apiVersion": f"{API_GROUP}/v1",
            "kind": "GPUNode",
            "metadata": {"name": instance.private_dns, "labels": labels},
            "spec": {"manageMode": "Provisioned"},
            "status": {
                "phase": "Running",
                "totalTFlops": tflops,
                "totalVRAM": vram,
                "availableTFlops": tflops,
                "availableVRAM": vram,
                "totalGPUs": spec.gpu_count,
                "managedGPUs": spec.gpu_count,
                "managedGPUDeviceIDs": [_gpu_name(instance, i) for i in range(spec.gpu_count)],
                "nodeInfo": {
                    "instanceID": instance.instance_id,
                    "region": instance.region,
                    "hostname": instance.private_dns,
                    "gpuModel": spec.gpu_model,
                    "gpuCount": spec.gpu_count,
                    "architecture": spec.arch,
                    "operatingSystem": "linux",
                },
            },
        }

    def _gpu(self, instance: SimInstance, spec: InstanceType, pool: str | None, index: int) -> JsonObject:
        name = _gpu_name(instance, index)
        one = {"tflops": _number(spec.tflops_per_gpu), "vram": f"{spec.vram_gib_per_gpu}Gi"}
        labels = {LABEL_GPU_POOL: pool} if pool else {}
        return {
            "apiVersion": f"{API_GROUP}/v1",
            "kind": "GPU",
            "metadata": {"name": name, "labels": {**labels, "kubernetes.io/hostname": instance.private_dns}},
            "status": {
                "phase": "Running",
                "vendor": "NVIDIA",
                "gpuModel": spec.gpu_model,
                "uuid": name.upper(),
                "index": index,
                "capacity": one,
                "available": dict(one),
                "nodeSelector": {"kubernetes.io/hostname": instance.private_dns},
            },
        }

    # ---- leaving -------------------------------------------------------------------------
    def _remove_departed(self, live: set[str]) -> list[KubeletChange]:
        changes: list[KubeletChange] = []
        for node in self._objects.list("", "nodes"):
            provider = str(node.get("spec", {}).get("providerID") or "")
            labels = node["metadata"].get("labels") or {}
            if not provider.startswith("aws:///") or LABEL_NODE_PROVISIONER not in labels:
                continue  # only nodes provisioned for claims are ours to remove
            instance_id = provider.rsplit("/", 1)[-1]
            if instance_id in live:
                continue
            name = node["metadata"]["name"]
            claim = labels.get(LABEL_NODE_PROVISIONER)
            for gpu in self._objects.list(API_GROUP, "gpus"):
                if (gpu["metadata"].get("labels") or {}).get("kubernetes.io/hostname") == name:
                    self._objects.delete(API_GROUP, "gpus", gpu["metadata"]["name"])
            self._objects.delete(API_GROUP, "gpunodes", name)
            self._objects.delete("", "nodes", name)
            self._first_running.pop(instance_id, None)
            changes.append(KubeletChange("left", name, claim, instance_id))
        return changes


def _gpu_name(instance: SimInstance, index: int) -> str:
    return f"gpu-{uuid.uuid5(_NAMESPACE_UUID, f'{instance.instance_id}/{index}')}"


def _number(value: Any) -> str:
    """A decimal as a Kubernetes quantity string without a trailing `.0`."""
    text = format(value.normalize() if hasattr(value, "normalize") else value, "f")
    return text.rstrip("0").rstrip(".") if "." in text else text


def _stamp(moment: datetime) -> str:
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")
