"""Karpenter's KWOK provider's instance types, generated from gpupool's catalog.

Role: the real Karpenter's KWOK cloud provider reads a JSON list of instance types from
`INSTANCE_TYPES_FILE_PATH` (`sigs.k8s.io/karpenter/kwok/cloudprovider`, `InstanceTypeOptions`: name,
architecture, operatingSystems, resources, and offerings each with `Price`, `Available` and
`Requirements` on capacity type and zone). This writes that list from the catalog gpupool itself
launches from, so Karpenter and gpupool choose among the same types, GPUs (`nvidia.com/gpu`), zones,
capacity types and prices.

Must not: invent a price — an offering exists only where the catalog prices it.
"""

from __future__ import annotations

from typing import Any

from gpupool.core.catalog import Catalog

CAPACITY_TYPE_LABEL = "karpenter.sh/capacity-type"
ZONE_LABEL = "topology.kubernetes.io/zone"
GPU_RESOURCE = "nvidia.com/gpu"
# What KWOK's nodes report beside CPU and memory: the kubelet's default pod limit.
PODS_PER_NODE = 110


def karpenter_instance_types(catalog: Catalog, region: str) -> list[dict[str, Any]]:
    """Every catalog type offered in `region`, as Karpenter's KWOK provider reads it."""
    offerings_by_type: dict[str, list[dict[str, Any]]] = {}
    for offering in catalog.offerings(region):
        offerings_by_type.setdefault(offering.instance_type.name, []).append(
            {
                "Price": float(offering.hourly_price),
                "Available": True,
                "Requirements": [
                    {"key": CAPACITY_TYPE_LABEL, "operator": "In", "values": [offering.capacity_type]},
                    {"key": ZONE_LABEL, "operator": "In", "values": [offering.zone]},
                ],
            }
        )
    found = []
    for instance_type in catalog.instance_types:
        offerings = offerings_by_type.get(instance_type.name)
        if not offerings:
            continue
        found.append(
            {
                "name": instance_type.name,
                "architecture": instance_type.arch,
                "operatingSystems": [instance_type.os],
                "resources": {
                    "cpu": str(instance_type.vcpu),
                    "memory": f"{instance_type.memory_gib}Gi",
                    "pods": str(PODS_PER_NODE),
                    GPU_RESOURCE: str(instance_type.gpu_count),
                },
                "offerings": offerings,
            }
        )
    return found
