"""The simulated pool: its capacity config, the instance types it may use, the catalog it is priced by.

Role: `PoolSpec` — minResources / warmResources / maxResources (TFLOPS, VRAM GiB), the allowed
instance types and capacity types, an optional `budgetPerDay` — and `pool_offerings(cloud)`,
the bundled catalog's priced offerings of the simulated region. `gpupool_pool()` writes the
spec as the GPUPool gpupool's services read; the TensorFusion side reads the same spec.

Defaults: min 2 × T4 worth (130 TFLOPS, 32 GiB), warm 4 × T4 worth (260 TFLOPS, 64 GiB), max
10,000 TFLOPS / 2,000 GiB; on AWS (us-east-1) g4dn, g5 and g6 in their 1-, 4- and 8-GPU sizes,
on Alibaba Cloud (cn-hangzhou) gn6i / gn7i / gn6v in 1-, 4- and 8-GPU sizes; OnDemand and Spot.
`consolidation` sets `nodeCompaction.policy: WhenUnderutilized`; `spot_discount` reprices Spot
(`spot_pricing` says where Spot prices come from, and refuses Spot resting on an estimate).
`reserve_gpus` gives min and warm in GPUs; `cheapest_per_gpu` the pool's On-Demand offering with
the least price per GPU. `mode` is the pool's provisioningMode: "provisioned"
(a GPUNodeClass, direct launches) or
"karpenter" (a karpenterNodeClassRef: EC2NodeClass on AWS, ECSNodeClass on Alibaba Cloud).

Must not: decide capacity.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from decimal import Decimal
from fractions import Fraction
from typing import Any, Literal

from gpupool.core.catalog import Cloud, load_catalog
from gpupool.core.model.pool import GPUPool
from gpupool.core.planning.offerings import catalog_offerings
from gpupool.core.planning.plan import OfferingRef

__all__ = [
    "CLUSTER",
    "CONSOLIDATING",
    "KARPENTER_NODE_CLASSES",
    "MODES",
    "NODE_CLASS",
    "POOL",
    "REGIONS",
    "PoolSpec",
    "SpotPricing",
    "cheapest_per_gpu",
    "gpupool_pool",
    "pool_offerings",
    "reserve_gpus",
    "spot_pricing",
]

Mode = Literal["provisioned", "karpenter"]
CLUSTER = "sim"
POOL = "sim-pool"
CONSOLIDATING = "gpupool+consolidation"  # the policy name of gpupool with WhenUnderutilized
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
    # nodeCompaction.policy WhenUnderutilized (gpupool's opt-in consolidation) instead of WhenEmpty.
    consolidation: bool = False
    # Spot's discount off On-Demand given by the user (--spot-discount): replaces the catalog's
    # Spot prices of the pool's region, which are estimates (`PriceTable.estimate`).
    spot_discount: Decimal | None = None

    def __post_init__(self) -> None:
        if self.cloud not in REGIONS:
            raise ValueError(f"unknown cloud {self.cloud!r}: choose aws or alibaba")
        if self.budget_per_day is not None and self.budget_per_day < 0:
            raise ValueError(f"the budget per day must not be negative, got {self.budget_per_day}")
        if self.spot_discount is not None and not 0 <= self.spot_discount < 1:
            raise ValueError(f"--spot-discount must lie in 0..1 (exclusive of 1), got {self.spot_discount}")
        if self.mode not in MODES:
            raise ValueError(f"unknown mode {self.mode!r}: choose provisioned or karpenter")

    @property
    def region(self) -> str:
        return REGIONS[self.cloud]

    @property
    def instance_types(self) -> tuple[str, ...]:
        return _TYPES[self.cloud]


def reserve_gpus(spec: PoolSpec) -> tuple[int, int]:
    """minResources and warmResources in GPUs of the pool's smallest GPU (the least TFLOPS and the
    least memory of its types: T4 on AWS, T4 / V100 on Alibaba Cloud) — what min and warm require
    at the least, the yardstick of the idle GPU-hours a policy buys beyond them."""
    catalog = load_catalog(spec.cloud)
    types = [t for name in spec.instance_types if (t := catalog.instance_type(name)) is not None]
    tflops = min(Fraction(t.tflops_per_gpu) for t in types)
    vram = min(Fraction(t.vram_gib_per_gpu) for t in types)

    def gpus(t: Decimal, v: Decimal) -> int:
        return max(math.ceil(Fraction(t) / tflops), math.ceil(Fraction(v) / vram))

    return gpus(spec.min_tflops, spec.min_vram), gpus(spec.warm_tflops, spec.warm_vram)


def cheapest_per_gpu(spec: PoolSpec) -> tuple[str, Decimal]:
    """The instance type, among the pool's On-Demand offerings, with the least hourly price per
    GPU, and that price per GPU (the price of the simulation's cost floor)."""
    priced = [
        (Decimal(o.hourly_price) / o.gpu_count, o.instance_type or "")
        for o in pool_offerings(spec)
        if o.capacity_type == "OnDemand" and o.instance_type in spec.instance_types and o.gpu_count
    ]
    price, name = min(priced)
    return name, price


@dataclass(frozen=True)
class SpotPricing:
    """Where the simulation's Spot prices come from: the user's discount, a quoted catalog table,
    or nothing (then there is no Spot column and `--spot` is refused)."""

    discount: Decimal | None
    source: str

    def describe(self) -> str:
        return self.source


def spot_pricing(spec: PoolSpec) -> SpotPricing:
    """The Spot prices a run may rest on; ValueError when the pool allows Spot without any."""
    table = load_catalog(spec.cloud).region(spec.region)
    spot = table.spot if table is not None else None
    if spec.spot_discount is not None:
        return SpotPricing(
            spec.spot_discount, f"Spot at {spec.spot_discount:.0%} off On-Demand, as --spot-discount gives it"
        )
    if spot is not None and not spot.estimate and table is not None:
        ratios = sorted(
            1 - spot.prices[t] / table.on_demand.prices[t]
            for t in spec.instance_types
            if t in spot.prices and t in table.on_demand.prices
        )
        if ratios:
            median = ratios[len(ratios) // 2]
            return SpotPricing(median, f"Spot at a median {median:.0%} off On-Demand, quoted: {spot.source}")
    why = "no Spot prices" if spot is None else "Spot prices are an estimate, not a quote"
    if "Spot" in spec.capacity_types:
        raise ValueError(
            f"the catalog's {spec.cloud} {spec.region} {why}: give --spot-discount for a Spot run"
        )
    return SpotPricing(None, f"the catalog's {spec.cloud} {spec.region} {why}; give --spot-discount")


def pool_offerings(spec: PoolSpec) -> tuple[OfferingRef, ...]:
    """The catalog's priced offerings of the spec's region (all types: the pool's requirements
    narrow them for gpupool; the TensorFusion side narrows them itself), Spot repriced at
    `spot_discount` off On-Demand when the spec gives one."""
    offerings = catalog_offerings(spec.cloud, spec.region)
    if spec.spot_discount is None:
        return offerings
    on_demand = {
        (o.instance_type, o.zone): Decimal(o.hourly_price) for o in offerings if o.capacity_type == "OnDemand"
    }
    keep = Decimal(1) - spec.spot_discount
    repriced = []
    for offering in offerings:
        base = on_demand.get((offering.instance_type, offering.zone))
        if offering.capacity_type == "Spot" and base is not None:
            price = (base * keep).quantize(Decimal("0.000001"))
            offering = offering.model_copy(update={"hourly_price": str(price)})
        repriced.append(offering)
    return tuple(repriced)


def _amount(tflops: Decimal, vram: Decimal) -> dict[str, str]:
    return {"tflops": str(tflops), "vram": f"{vram}Gi"}


def _compaction(spec: PoolSpec) -> dict[str, Any]:
    """WhenEmpty as TensorFusion, or consolidation with the CRD's defaults: budgets 10 % of the
    nodes, a 1-hour window, a $0.10 threshold."""
    if not spec.consolidation:
        return {"period": spec.compaction_period}
    return {"period": spec.compaction_period, "policy": "WhenUnderutilized"}


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
                    "nodeCompaction": _compaction(spec),
                },
            },
        }
    )
