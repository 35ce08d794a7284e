"""The simulated pool: its capacity config, the instance types it may use, the catalog it is priced by.

Role: `PoolSpec` — minResources / warmResources / maxResources (TFLOPS, VRAM GiB), the allowed
instance types and capacity types, an optional `budgetPerDay` — and `pool_offerings(cloud)`,
the bundled catalog's priced offerings of the simulated region. `gpupool_pool()` writes the
spec as the GPUPool gpupool's services read; the TensorFusion side reads the same spec.

Defaults: min 2 × T4 worth (130 TFLOPS, 32 GiB), warm 4 × T4 worth (260 TFLOPS, 64 GiB), max
10,000 TFLOPS / 2,000 GiB; on AWS (us-east-1) g4dn, g5 and g6 in their 1-, 4- and 8-GPU sizes,
on Alibaba Cloud (cn-hangzhou) gn6i / gn7i / gn6v in 1-, 4- and 8-GPU sizes; OnDemand and Spot.
`mode` is the pool's provisioningMode: "provisioned" (a GPUNodeClass, direct launches) or
"karpenter" (a karpenterNodeClassRef: EC2NodeClass on AWS, ECSNodeClass on Alibaba Cloud).

Must not: decide capacity.
"""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal
from typing import Any, Literal

from gpupool.core.catalog import Cloud
from gpupool.core.model.pool import GPUPool
from gpupool.core.planning.offerings import catalog_offerings
from gpupool.core.planning.plan import OfferingRef

__all__ = [
    "CLUSTER",
    "KARPENTER_NODE_CLASSES",
    "MODES",
    "NODE_CLASS",
    "POOL",
    "REGIONS",
    "PoolSpec",
    "gpupool_pool",
    "pool_offerings",
]

Mode = Literal["provisioned", "karpenter"]
CLUSTER = "sim"
POOL = "sim-pool"
NODE_CLASS = "sim-gpu-nodes"
REGIONS: dict[str, str] = {"aws": "us-east-1", "alibaba": "cn-hangzhou"}
MODES = ("provisioned", "karpenter")
# The Karpenter node class a Karpenter-mode pool references (Karpenter's AWS and Alibaba providers).
KARPENTER_NODE_CLASSES: dict[str, dict[str, str]] = {
    "aws": {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass", "version": "v1", "name": NODE_CLASS},
    "alibaba": {
        "group": "karpenter.k8s.alibabacloud", "kind": "ECSNodeClass", "version": "v1alpha1",
        "name": NODE_CLASS,
    },
}  # fmt: skip
_TYPES: dict[str, tuple[str, ...]] = {
    "aws": (
        "g4dn.xlarge", "g4dn.12xlarge", "g4dn.metal",
        "g5.xlarge", "g5.12xlarge", "g5.48xlarge",
        "g6.xlarge", "g6.12xlarge", "g6.48xlarge",
    ),
    "alibaba": (
        "ecs.gn6i-c4g1.xlarge", "ecs.gn6i-c24g1.24xlarge",
        "ecs.gn7i-c8g1.2xlarge", "ecs.gn7i-c32g1.32xlarge",
        "ecs.gn6v-c8g1.2xlarge", "ecs.gn6v-c8g1.8xlarge", "ecs.gn6v-c8g1.16xlarge",
    ),
}  # fmt: skip


@dataclass(frozen=True)
class PoolSpec:
    cloud: Cloud = "aws"
    min_tflops: Decimal = Decimal(130)
    min_vram: Decimal = Decimal(32)
    warm_tflops: Decimal = Decimal(260)
    warm_vram: Decimal = Decimal(64)
    max_tflops: Decimal = Decimal(10000)
    max_vram: Decimal = Decimal(2000)
    capacity_types: tuple[str, ...] = ("OnDemand", "Spot")
    budget_per_day: Decimal | None = None
    compaction_period: str = "5m"
    mode: Mode = "provisioned"

    def __post_init__(self) -> None:
        if self.cloud not in REGIONS:
            raise ValueError(f"unknown cloud {self.cloud!r}: choose aws or alibaba")
        if self.budget_per_day is not None and self.budget_per_day < 0:
            raise ValueError(f"the budget per day must not be negative, got {self.budget_per_day}")
        if self.mode not in MODES:
            raise ValueError(f"unknown mode {self.mode!r}: choose provisioned or karpenter")

    @property
    def region(self) -> str:
        return REGIONS[self.cloud]

    @property
    def instance_types(self) -> tuple[str, ...]:
        return _TYPES[self.cloud]


def pool_offerings(spec: PoolSpec) -> tuple[OfferingRef, ...]:
    """The catalog's priced offerings of the spec's region (all types: the pool's requirements
    narrow them for gpupool; the TensorFusion side narrows them itself)."""
    return catalog_offerings(spec.cloud, spec.region)


def _amount(tflops: Decimal, vram: Decimal) -> dict[str, str]:
    return {"tflops": str(tflops), "vram": f"{vram}Gi"}


def gpupool_pool(spec: PoolSpec) -> GPUPool:
    """The GPUPool gpupool's services run the simulated pool from."""
    provisioner: dict[str, Any] = {
        "gpuRequirements": [
            {
                "key": "node.kubernetes.io/instance-type",
                "operator": "In",
                "values": list(spec.instance_types),
            },
            {"key": "karpenter.sh/capacity-type", "operator": "In", "values": list(spec.capacity_types)},
        ],
    }
    if spec.mode == "karpenter":
        provisioner["karpenterNodeClassRef"] = dict(KARPENTER_NODE_CLASSES[spec.cloud])
    else:
        provisioner["nodeClass"] = NODE_CLASS
    if spec.budget_per_day is not None:
        provisioner["budget"] = {
            "budgetPerDay": str(spec.budget_per_day),
            "budgetPerMonth": str(spec.budget_per_day * 31),
            "budgetPerQuarter": str(spec.budget_per_day * 92),
            "budgetExceedStrategy": "AlertOnly",
        }
    return GPUPool.model_validate(
        {
            "metadata": {"name": POOL},
            "spec": {
                "capacityConfig": {
                    "minResources": _amount(spec.min_tflops, spec.min_vram),
                    "warmResources": _amount(spec.warm_tflops, spec.warm_vram),
                    "maxResources": _amount(spec.max_tflops, spec.max_vram),
                },
                "nodeManagerConfig": {
                    "provisioningMode": "Karpenter" if spec.mode == "karpenter" else "Provisioned",
                    "nodeProvisioner": provisioner,
                    "nodeCompaction": {"period": spec.compaction_period},
                },
            },
        }
    )
