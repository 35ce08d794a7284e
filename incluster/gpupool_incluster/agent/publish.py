"""Publishing discovery: write GPU objects and the GPUNode status when they change, with Events.

Role: each discovery round, ask NVML for the devices and their health, remember every device ever
seen on this node (including GPU objects left from before a restart), and mark one that vanished
or turned unhealthy unusable — phase Unknown, `tensor-fusion.ai/gpu-missing-since` kept from the
first time it was seen missing — with a Warning Event `GPUUnusable` (and `GPURecovered` when it
comes back). Available capacity subtracts the requests of the workers holding each GPU. Only
objects that changed are written. Returns the usable GPUs' TFLOPS for the enforcement loop.

Must not: enforce anything, or create GPU objects for another node.
"""

from __future__ import annotations

import logging
import platform
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime
from decimal import Decimal
from typing import Any

from gpupool_incluster.agent.discovery import (
    ANNOTATION_GPU_MISSING_SINCE,
    GpuFacts,
    catalog_model,
    gpu_object,
    gpu_object_name,
    gpunode_status,
    model_tflops,
)
from gpupool_incluster.agent.nvml import DeviceInfo, Nvml
from gpupool_incluster.agent.ports import AgentCluster, JsonObject
from gpupool_incluster.agent.workers import Worker

__all__ = ["Publisher"]

log = logging.getLogger("gpupool.agent")


@dataclass(slots=True)
class Publisher:
    node: str
    nvml: Nvml
    cluster: AgentCluster
    pool: str | None = None
    _known: dict[str, DeviceInfo] = field(default_factory=dict)
    _missing_since: dict[str, datetime] = field(default_factory=dict)
    _written: dict[str, JsonObject] = field(default_factory=dict)
    _node_status: JsonObject | None = None
    _started: bool = False
    _unknown_models: set[str] = field(default_factory=set)

    def _adopt_existing(self) -> None:
        for body in self.cluster.node_gpus(self.node):
            status = body.get("status") or {}
            uuid = status.get("uuid")
            if not uuid:
                continue
            memory = str((status.get("capacity") or {}).get("vram") or "0")
            self._known.setdefault(
                uuid,
                DeviceInfo(
                    uuid=uuid,
                    index=int(status.get("index") or 0),
                    name=str(status.get("gpuModel") or ""),
                    memory_total=int(memory[:-2]) * 1024**3 if memory.endswith("Gi") else int(memory or 0),
                    numa_node=status.get("numaNode"),
                ),
            )
            since = ((body.get("metadata") or {}).get("annotations") or {}).get(ANNOTATION_GPU_MISSING_SINCE)
            if since:
                self._missing_since[uuid] = datetime.fromisoformat(since.replace("Z", "+00:00"))

    def device_states(self) -> dict[str, tuple[DeviceInfo, bool]]:
        """Every device ever seen on this node by UUID, and whether it is usable now."""
        return {u: (d, u not in self._missing_since) for u, d in self._known.items()}

    def usable_gpus(self) -> dict[str, str]:
        """GPU object name → NVML UUID for every device usable now (for the device plugin)."""
        return {gpu_object_name(u): u for u, d in self._known.items() if u not in self._missing_since}

    def publish(self, workers: Iterable[Worker], now: datetime) -> dict[str, Decimal | None]:
        if not self._started:
            self._adopt_existing()
            self._started = True
        if self.pool is None:
            self.pool = self.cluster.node_pool(self.node)
        listed = {device.uuid: device for device in self.nvml.devices()}
        self._known.update(listed)
        held_t: dict[str, Decimal] = {}
        held_v: dict[str, int] = {}
        for worker in workers:
            for name in worker.gpus:
                held_t[name] = held_t.get(name, Decimal(0)) + Decimal(worker.tflops_request) / 1000
                held_v[name] = held_v.get(name, 0) + worker.vram_request
        bodies: list[JsonObject] = []
        usable: dict[str, Decimal | None] = {}
        for uuid, device in sorted(self._known.items(), key=lambda item: item[1].index):
            problem = self.nvml.health(uuid) if uuid in listed else "no longer listed by the driver"
            facts = self._facts(device, problem, now)
            name = gpu_object_name(uuid)
            body = gpu_object(
                facts,
                node=self.node,
                pool=self.pool,
                held_tflops=held_t.get(name, Decimal(0)),
                held_vram=held_v.get(name, 0),
            )
            bodies.append(body)
            if problem is None:
                usable[uuid] = model_tflops(catalog_model(device.name))
                if usable[uuid] is None and device.name not in self._unknown_models:
                    self._unknown_models.add(device.name)
                    log.warning(
                        "the catalog has no TFLOPS for %s: its capacity is published as 0 TFLOPS and its "
                        "workers' compute limits are not enforced",
                        device.name,
                        extra={"action": "unknown-model", "gpu": uuid},
                    )
            self._write(name, body)
        status = gpunode_status(
            bodies, node=self.node, driver_version=self.nvml.driver_version(), host=_host_info(), now=now
        )
        if self._node_status is None or _without_times(status) != _without_times(self._node_status):
            self.cluster.write_gpunode_status(self.node, status)
            self._node_status = status
        return usable

    def _facts(self, device: DeviceInfo, problem: str | None, now: datetime) -> GpuFacts:
        if problem is None:
            if self._missing_since.pop(device.uuid, None) is not None:
                self._event(device, "GPURecovered", f"GPU {device.uuid} is usable again", "Normal")
            return GpuFacts(device)
        if device.uuid not in self._missing_since:
            self._missing_since[device.uuid] = now
            self._event(device, "GPUUnusable", f"GPU {device.uuid} is unusable: {problem}", "Warning")
        return GpuFacts(device, problem=problem, missing_since=self._missing_since[device.uuid])

    def _event(self, device: DeviceInfo, reason: str, message: str, kind: Any) -> None:
        log.warning(message, extra={"action": reason, "node": self.node, "gpu": device.uuid})
        involved = {"apiVersion": "tensor-fusion.ai/v1", "kind": "GPU", "name": gpu_object_name(device.uuid)}
        try:
            self.cluster.record_event(involved=involved, reason=reason, message=message, kind=kind)
        except Exception as exc:
            log.warning("could not record event %s: %s", reason, exc)

    def _write(self, name: str, body: JsonObject) -> None:
        if self._written.get(name) == body:
            return
        self.cluster.apply_gpu(body)
        self._written[name] = body


def _without_times(status: JsonObject) -> JsonObject:
    conditions = [{k: v for k, v in c.items() if k != "lastTransitionTime"} for c in status["conditions"]]
    return {**status, "conditions": conditions}


def _host_info() -> dict[str, str]:
    uname = platform.uname()
    return {
        "kernelVersion": uname.release,
        "architecture": uname.machine,
        "operatingSystem": uname.system.lower(),
    }
