"""Discovery: from what NVML reports to the GPU objects and the GPUNode status (pure).

Role: name each GPU object after its NVML UUID (lower-cased, a valid object name), fill
TensorFusion's GPU status fields (uuid, gpuModel, index, numaNode, vendor, capacity — TFLOPS from
the catalog by model, VRAM from NVML —, available, phase, nodeSelector, usedBy, message) and the
GPUNode totals and nodeInfo. A GPU that is gone or unhealthy keeps its object with phase Unknown
and TensorFusion's `tensor-fusion.ai/gpu-missing-since` annotation (the allocator places nothing on
it); available capacity is the GPU's capacity minus the requests of the workers that hold it.

Must not: read NVML or the cluster, or read the clock (`now` is passed in).
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal
from functools import cache
from typing import Any

from gpupool.core.catalog import load_catalog
from gpupool.core.model import constants as c
from gpupool.core.model.cloud import CLOUDS
from gpupool_incluster.agent.nvml import DeviceInfo

__all__ = [
    "ANNOTATION_GPU_MISSING_SINCE",
    "GpuFacts",
    "catalog_model",
    "gpu_object",
    "gpu_object_name",
    "gpunode_status",
    "hostname_label",
    "model_tflops",
]

ANNOTATION_GPU_MISSING_SINCE = c.ANNOTATION_GPU_MISSING_SINCE
USED_BY = c.TAINT_USED_BY_VALUE  # "tensor-fusion": this GPU is managed by TensorFusion's stack
GIB = 1024**3
JsonObject = dict[str, Any]


@dataclass(frozen=True, slots=True)
class GpuFacts:
    """One GPU as discovery saw it: the device, and why it is unusable (None = usable)."""

    device: DeviceInfo
    problem: str | None = None
    missing_since: datetime | None = None


def hostname_label(node: str) -> str:
    """The `kubernetes.io/hostname` label value of `node`'s GPU objects: the name itself when it
    is a valid label value (at most 63 characters), else its first 54 characters, `-` and the
    first 8 hex digits of its SHA-256 — one node, one value, the agent's own selector."""
    if len(node) <= 63:
        return node
    return f"{node[:54].rstrip('-.')}-{hashlib.sha256(node.encode()).hexdigest()[:8]}"


def gpu_object_name(uuid: str) -> str:
    """`GPU-8b2c…` → `gpu-8b2c…` (object names are lower-case DNS labels)."""
    return re.sub(r"[^a-z0-9-]", "-", uuid.lower()).strip("-")


@cache
def _catalog_models() -> dict[str, Decimal]:
    models: dict[str, Decimal] = {}
    for cloud in CLOUDS:
        for spec in load_catalog(cloud).instance_types:
            models.setdefault(spec.gpu_model.upper(), spec.tflops_per_gpu)
    return models


def catalog_model(product_name: str) -> str:
    """NVML's product name → the catalog's model: "NVIDIA A100-SXM4-40GB" → "A100", "Tesla T4" → "T4"."""
    text = re.sub(r"^((NVIDIA|Tesla|GeForce|Quadro)\s+)+", "", product_name.strip(), flags=re.IGNORECASE)
    token = re.split(r"[\s-]+", text, maxsplit=1)[0].upper()
    return token if token in _catalog_models() else text.upper() or product_name


def model_tflops(model: str) -> Decimal | None:
    """FP16 dense TFLOPS per GPU of a catalog model, None when the catalog does not know it."""
    return _catalog_models().get(model.upper())


def _quantity(value: Decimal) -> str:
    text = format(value.normalize(), "f")
    return text.rstrip("0").rstrip(".") if "." in text else text


def _vram(total_bytes: int) -> str:
    return f"{total_bytes // GIB}Gi" if total_bytes % GIB == 0 else str(total_bytes)


def _stamp(moment: datetime) -> str:
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


def gpu_object(
    facts: GpuFacts,
    *,
    node: str,
    pool: str | None,
    held_tflops: Decimal = Decimal(0),
    held_vram: int = 0,
) -> JsonObject:
    """The whole GPU object (metadata and status) for one device on `node`."""
    device = facts.device
    model = catalog_model(device.name)
    tflops = model_tflops(model) or Decimal(0)
    labels = {"kubernetes.io/hostname": hostname_label(node), **({c.LABEL_GPU_POOL: pool} if pool else {})}
    annotations = (
        {ANNOTATION_GPU_MISSING_SINCE: _stamp(facts.missing_since)}
        if facts.problem is not None and facts.missing_since is not None
        else {}
    )
    status: JsonObject = {
        "phase": "Running" if facts.problem is None else "Unknown",
        "vendor": "NVIDIA",
        "uuid": device.uuid,
        "gpuModel": model,
        "index": device.index,
        "capacity": {"tflops": _quantity(tflops), "vram": _vram(device.memory_total)},
        "available": {
            "tflops": _quantity(max(Decimal(0), tflops - held_tflops)),
            "vram": _vram(max(0, device.memory_total - held_vram)),
        },
        "nodeSelector": {"kubernetes.io/hostname": node},
        "usedBy": USED_BY,
        "message": facts.problem or "",
    }
    if device.numa_node is not None:
        status["numaNode"] = device.numa_node
    return {
        "apiVersion": c.API_VERSION,
        "kind": "GPU",
        "metadata": {"name": gpu_object_name(device.uuid), "labels": labels, "annotations": annotations},
        "status": status,
    }


def gpunode_status(
    gpus: Sequence[JsonObject],
    *,
    node: str,
    driver_version: str,
    host: Mapping[str, str] | None = None,
    now: datetime,
) -> JsonObject:
    """GPUNode status totals and nodeInfo over the usable GPUs among `gpus` (GPU objects)."""
    usable = [g for g in gpus if g["status"]["phase"] == "Running"]
    total_t = sum((Decimal(g["status"]["capacity"]["tflops"]) for g in usable), Decimal(0))
    avail_t = sum((Decimal(g["status"]["available"]["tflops"]) for g in usable), Decimal(0))
    total_v = sum(_bytes(g["status"]["capacity"]["vram"]) for g in usable)
    avail_v = sum(_bytes(g["status"]["available"]["vram"]) for g in usable)
    models = sorted({str(g["status"]["gpuModel"]) for g in usable})
    ready = bool(usable)
    condition = {
        "type": c.CONDITION_READY,
        "status": "True" if ready else "False",
        "reason": "GPUsDiscovered" if ready else "NoUsableGPU",
        "message": f"{len(usable)} of {len(gpus)} GPUs usable (node agent)",
        "lastTransitionTime": _stamp(now),
    }
    return {
        "phase": "Running" if ready else "Pending",
        "conditions": [condition],
        "totalTFlops": _quantity(total_t),
        "totalVRAM": _vram(total_v),
        "availableTFlops": _quantity(avail_t),
        "availableVRAM": _vram(avail_v),
        "totalGPUs": len(gpus),
        "managedGPUs": len(usable),
        "managedGPUDeviceIDs": sorted(str(g["status"]["uuid"]) for g in usable),
        "nodeInfo": {
            "hostname": node,
            "gpuDriverVersion": driver_version,
            "gpuModel": ",".join(models),
            "gpuCount": len(usable),
            **dict(host or {}),
        },
    }


def _bytes(text: str) -> int:
    return int(text[:-2]) * GIB if text.endswith("Gi") else int(text)
