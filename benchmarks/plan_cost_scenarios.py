"""Scenarios for `plan_cost.py`: pools and offerings, and the selection problem derived from them.

Role: seeded scenarios over the bundled catalogs (cloud, region, gpuRequirements, min, a
maxResources clip in some), over 100 distinct synthetic offerings, and small ones (≤ 4
offerings, ≤ 5 nodes). Each is a `GPUPool` with an empty `PoolSnapshot` plus the offerings the
launch function would read, so the benchmark plans through the one pipeline
(`plan_capacity`). `problem_of` restates a scenario for the reference solvers with its own
arithmetic (sizes rounded down to milli-TFLOPS and MiB, the need rounded up, max rounded down,
prices in micro-USD), independent of the planner's unit conversion.

Must not: plan or judge; `plan_cost.py` does both.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from decimal import Decimal
from fractions import Fraction
from typing import Any, Literal

from benchmarks.reference.problem import Problem
from gpupool.core.catalog import load_catalog
from gpupool.core.model.pool import GPUPool
from gpupool.core.planning.offerings import catalog_offerings, offering_matches
from gpupool.core.planning.plan import OfferingRef
from gpupool.core.quantity import Quantity

GI = 2**30
MIB = 2**20


@dataclass(frozen=True)
class Item:
    name: str
    tflops: int
    vram: int
    price: int


@dataclass(frozen=True)
class Scenario:
    label: str
    pool: GPUPool
    offerings: tuple[OfferingRef, ...]
    need: tuple[Fraction, Fraction]  # min, in TFLOPS and bytes (the pool has nothing yet)
    cap: tuple[Fraction, Fraction] | None  # maxResources, if any
    max_nodes: int = 100


def _text(value: Fraction) -> str:
    return str(Quantity(value))


def make_pool(
    need: tuple[Fraction, Fraction], cap: tuple[Fraction, Fraction] | None, requirements: Any
) -> GPUPool:
    capacity: dict[str, Any] = {"minResources": {"tflops": _text(need[0]), "vram": _text(need[1])}}
    if cap is not None:
        capacity["maxResources"] = {"tflops": _text(cap[0]), "vram": _text(cap[1])}
    return GPUPool.model_validate(
        {
            "metadata": {"name": "bench"},
            "spec": {
                "capacityConfig": capacity,
                "nodeManagerConfig": {
                    "provisioningMode": "Provisioned",
                    "nodeProvisioner": {"nodeClass": "bench", "gpuRequirements": requirements},
                },
            },
        }
    )


def _req(key: str, operator: str, *values: str) -> dict[str, Any]:
    return {"key": key, "operator": operator, "values": list(values)}


def _requirements(rng: random.Random, cloud: str, region: str) -> list[dict[str, Any]]:
    menu: list[list[dict[str, Any]]] = [
        [],
        [_req("karpenter.sh/capacity-type", "In", "OnDemand")],
        [_req("karpenter.sh/capacity-type", "In", "Spot")],
        [
            _req("kubernetes.io/arch", "In", "amd64"),
            _req("karpenter.sh/capacity-type", "In", "OnDemand", "Spot"),
        ],
        [_req("karpenter.k8s.aws/instance-gpu-count", "Lt", "5")],
    ]
    models = ["T4", "A10G", "L4", "L40S", "A100", "H100"] if cloud == "aws" else ["T4", "A10", "V100", "A100"]
    chosen = list(rng.choice(menu))
    if rng.random() < 0.4:
        chosen.append(_req("tensor-fusion.ai/gpu-model", "In", *rng.sample(models, rng.randint(1, 3))))
    if rng.random() < 0.2:
        zones = load_catalog(cloud).region(region).zones  # type: ignore[arg-type, union-attr]
        chosen.append(_req("topology.kubernetes.io/zone", "In", rng.choice(zones)))
    return chosen


def catalog_scenarios(rng: random.Random, count: int) -> list[Scenario]:
    found: list[Scenario] = []
    while len(found) < count:
        cloud: Literal["aws", "alibaba"] = "aws" if rng.random() < 0.75 else "alibaba"
        region = rng.choice(load_catalog(cloud).region_names)
        requirements = _requirements(rng, cloud, region)
        scale = rng.choice([1, 1, 1, 4, 16])
        need = (Fraction(rng.randint(65, 1200) * scale), Fraction(rng.randint(16, 240) * scale * GI))
        cap = None
        if rng.random() < 0.2:
            cap = (
                need[0] * Fraction(rng.randint(40, 110), 100),
                Fraction(need[1] * rng.randint(40, 110) // 100),
            )
        pool = make_pool(need, cap, requirements)
        offerings = catalog_offerings(cloud, region)
        spec = pool.spec.node_manager_config.node_provisioner
        if not any(offering_matches(o, spec.gpu_requirements if spec else []) for o in offerings):
            continue
        found.append(Scenario(f"{cloud}/{region}", pool, offerings, need, cap))
    return found


def synthetic_scenarios(rng: random.Random, count: int, *, clipped: bool = False) -> list[Scenario]:
    """100 distinct offerings shaped like GPU instances (1–8 GPUs, 16–141 GiB per GPU); with
    `clipped`, max sits at 50–100 % of the need in both dimensions ("fill what max allows")."""
    found = []
    for _ in range(count):
        offerings = []
        for i in range(100):
            gpus = rng.choice([1, 1, 1, 2, 4, 8])
            tflops = rng.choice([65, 121, 125, 312, 362, 989]) * gpus
            vram = rng.choice([16, 24, 32, 40, 48, 80, 141]) * gpus
            price = Decimal(int(tflops * rng.uniform(0.002, 0.012) * 10**6)) / 10**6
            offerings.append(
                OfferingRef(
                    instance_type=f"synthetic-{i:03d}",
                    tflops=Quantity(tflops),
                    vram=Quantity(vram * GI),
                    gpu_count=gpus,
                    hourly_price=str(price),
                )
            )
        need = (Fraction(rng.randint(65, 4000)), Fraction(rng.randint(16, 800) * GI))
        cap = None
        if clipped:
            cap = (
                need[0] * Fraction(rng.randint(50, 100), 100),
                Fraction(need[1] * rng.randint(50, 100) // 100),
            )
        label = "synthetic-100" + ("-clipped" if clipped else "")
        found.append(Scenario(label, make_pool(need, cap, []), tuple(offerings), need, cap))
    return found


def small_scenarios(rng: random.Random, count: int) -> list[Scenario]:
    """Up to 4 catalog offerings of distinct sizes and at most 5 nodes: small enough to enumerate."""
    by_size: dict[tuple[Any, Any], OfferingRef] = {}
    for offering in catalog_offerings("aws", "us-east-1"):
        by_size.setdefault((offering.tflops, offering.vram), offering)
    distinct = list(by_size.values())
    found = []
    for _ in range(count):
        offerings = tuple(rng.sample(distinct, rng.randint(1, 4)))
        need = (Fraction(rng.randint(1, 1500)), Fraction(rng.randint(1, 300) * GI))
        cap = None
        if rng.random() < 0.5:
            cap = (Fraction(rng.randint(100, 2000)), Fraction(rng.randint(16, 400) * GI))
        found.append(Scenario("small", make_pool(need, cap, []), offerings, need, cap, max_nodes=5))
    return found


def units(offering: OfferingRef) -> Item:
    """An offering in the reference's integer units: sizes rounded down, price in micro-USD."""
    tflops = offering.tflops.value * 1000
    vram = offering.vram.value / MIB
    price = Decimal(offering.hourly_price) * 10**6
    return Item(
        offering.key, tflops.numerator // tflops.denominator, vram.numerator // vram.denominator, int(price)
    )


def problem_of(scenario: Scenario, allowed: list[OfferingRef]) -> Problem:
    """The scenario as the reference solves it: need = min clipped at max (nothing exists yet),
    rounded up; caps rounded down; one item per size (the cheapest, for coverage and cost)."""
    need_t, need_v = scenario.need
    if scenario.cap is not None:
        need_t, need_v = min(need_t, scenario.cap[0]), min(need_v, scenario.cap[1])
    cheapest: dict[tuple[int, int], Item] = {}
    for item in (units(o) for o in allowed):
        kept = cheapest.get((item.tflops, item.vram))
        if item.tflops > 0 and item.vram > 0 and (kept is None or item.price < kept.price):
            cheapest[(item.tflops, item.vram)] = item
    ceil_t, ceil_v = need_t * 1000, need_v / MIB
    caps = (None, None)
    if scenario.cap is not None:
        cap_t, cap_v = scenario.cap[0] * 1000, scenario.cap[1] / MIB
        caps = (cap_t.numerator // cap_t.denominator, cap_v.numerator // cap_v.denominator)
    return Problem(
        list(cheapest.values()),
        -(-ceil_t.numerator // ceil_t.denominator),
        -(-ceil_v.numerator // ceil_v.denominator),
        caps[0],
        caps[1],
        scenario.max_nodes,
    )
