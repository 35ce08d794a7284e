"""What a pool's launch would trip on, found before it runs: its spec against the priced offerings.

Role: `launch_problems(spec, offerings, where=...)` lists, as `FieldError`s whose paths are
relative to the pool's spec (`capacityConfig.maxResources`, `nodeManagerConfig...`), what the
launch function would otherwise meet only when it runs, each in one line saying the fix:
- minResources or warmResources above maxResources (TFLOPS or VRAM): the gap can never close
  (launch clips it at max and warns MaxResourceConstraintReached on every tick);
- a Provisioned pool without `nodeProvisioner.nodeClass`, a Karpenter pool without
  `nodeProvisioner.karpenterNodeClassRef` (launch: "GPUNodeClass (none set) not found");
- for the pools launch plans with the catalog (Provisioned, Karpenter) and offerings given: a
  gpuRequirements entry that cannot be evaluated, the first entry after which no priced
  offering is left (launch: "no priced offering matches"), and a maxResources below every
  offering left (launch would find no mix under max and say the offerings are out of capacity).
The requirements are judged as the planner judges them (`offerings.offering_matches`), so
validation and launch agree. `where` names the offerings' origin for the messages ("aws
us-east-1").

Must not: read files or choose the offerings (callers pass them), or decide what to launch.
"""

from __future__ import annotations

from collections.abc import Sequence

from gpupool.core.model.manifest_errors import FieldError
from gpupool.core.model.pool import GPUPoolSpec, ResourceAmount
from gpupool.core.planning.offerings import offering_matches
from gpupool.core.planning.plan import OfferingRef
from gpupool.core.planning.requirements import RequirementError
from gpupool.core.quantity import Quantity

__all__ = ["CATALOG_MODES", "launch_problems"]

# The provisioning modes whose launch plans from the catalog (AutoSelect expands per pod).
CATALOG_MODES = frozenset({"Provisioned", "Karpenter"})
_PROVISIONER = "nodeManagerConfig.nodeProvisioner"
_DIMENSIONS = (("tflops", "TFLOPS"), ("vram", "VRAM"))
_SHOWN_VALUES = 6


def _amount(resources: ResourceAmount | None, field: str) -> Quantity | None:
    found: Quantity | None = getattr(resources, field) if resources is not None else None
    return found


def _capacity_problems(spec: GPUPoolSpec) -> list[FieldError]:
    config = spec.capacity_config
    if config is None or config.max_resources is None:
        return []
    problems: list[FieldError] = []
    for name, resources in (("minResources", config.min_resources), ("warmResources", config.warm_resources)):
        for field, _unit in _DIMENSIONS:
            amount, maximum = _amount(resources, field), _amount(config.max_resources, field)
            if amount is not None and maximum is not None and amount.value > maximum.value:
                problems.append(
                    FieldError(
                        f"capacityConfig.{name}.{field}",
                        f"{amount} is above maxResources.{field} {maximum}: the pool can never hold it; "
                        f"lower {name}.{field} or raise maxResources.{field}",
                    )
                )
    return problems


def _node_class_problems(spec: GPUPoolSpec) -> list[FieldError]:
    config = spec.node_manager_config
    provisioner = config.node_provisioner
    if config.provisioning_mode == "Provisioned" and not (provisioner and provisioner.node_class):
        return [
            FieldError(
                f"{_PROVISIONER}.nodeClass",
                "a Provisioned pool launches its instances from a GPUNodeClass: set nodeClass to the "
                "name of one (kind GPUNodeClass, tensor-fusion.ai/v1)",
            )
        ]
    if config.provisioning_mode == "Karpenter" and not (provisioner and provisioner.karpenter_node_class_ref):
        return [
            FieldError(
                f"{_PROVISIONER}.karpenterNodeClassRef",
                "a Karpenter pool's NodeClaims need a Karpenter node class: set karpenterNodeClassRef "
                "{group, kind, version, name} (e.g. karpenter.k8s.aws, EC2NodeClass, v1, NAME)",
            )
        ]
    return []


def _label(offering: OfferingRef, key: str) -> str | None:
    basic = {
        "node.kubernetes.io/instance-type": offering.instance_type,
        "topology.kubernetes.io/zone": offering.zone,
        "topology.kubernetes.io/region": offering.region,
        "karpenter.sh/capacity-type": offering.capacity_type,
    }
    return offering.labels.get(key) or basic.get(key)


def _offered(offerings: Sequence[OfferingRef], key: str) -> str:
    values = sorted({v for o in offerings if (v := _label(o, key)) is not None})
    if not values:
        return ""
    shown = ", ".join(values[:_SHOWN_VALUES]) + (", …" if len(values) > _SHOWN_VALUES else "")
    return f" (offered: {shown})"


def _size(offering: OfferingRef) -> str:
    return f"{offering.instance_type}: {offering.tflops} TFLOPS, {offering.vram} VRAM"


def _fits(offering: OfferingRef, maximum: ResourceAmount) -> bool:
    return all(
        limit is None or getattr(offering, field).value <= limit.value
        for field, limit in (("tflops", maximum.tflops), ("vram", maximum.vram))
    )


def _offering_problems(spec: GPUPoolSpec, offerings: Sequence[OfferingRef], where: str) -> list[FieldError]:
    provisioner = spec.node_manager_config.node_provisioner
    requirements = provisioner.gpu_requirements if provisioner else []
    if not offerings:
        return [FieldError("", f"no priced offering in {where}: choose a region the catalog prices")]
    left = list(offerings)
    for index, requirement in enumerate(requirements):
        path = f"{_PROVISIONER}.gpuRequirements[{index}]"
        try:
            kept = [o for o in left if offering_matches(o, [requirement])]
        except RequirementError as error:
            return [FieldError(path, f"cannot be evaluated: {error}")]
        if not kept:
            values = f" {list(requirement.values)}" if requirement.values else ""
            earlier = " with the requirements before it" if index else ""
            return [
                FieldError(
                    path,
                    f"{requirement.key} {requirement.operator}{values} leaves no priced offering in "
                    f"{where}{earlier}{_offered(left, requirement.key)}: loosen it",
                )
            ]
        left = kept
    config = spec.capacity_config
    maximum = config.max_resources if config is not None else None
    if maximum is None or any(_fits(o, maximum) for o in left):
        return []
    smallest = min(left, key=lambda o: (o.tflops.value, o.vram.value))
    shown = ", ".join(
        f"{getattr(maximum, field)} {unit}"
        for field, unit in _DIMENSIONS
        if getattr(maximum, field) is not None
    )
    return [
        FieldError(
            "capacityConfig.maxResources",
            f"{shown} is below every instance gpuRequirements allow in {where} (the smallest: "
            f"{_size(smallest)}): raise maxResources to at least {smallest.tflops} TFLOPS and "
            f"{smallest.vram} VRAM, or allow smaller instances",
        )
    ]


def launch_problems(
    spec: GPUPoolSpec, offerings: Sequence[OfferingRef] | None, *, where: str
) -> list[FieldError]:
    """What launch would trip on for a pool with this spec (see the module docstring);
    `offerings` None skips the catalog checks (no catalog applies)."""
    problems = _capacity_problems(spec) + _node_class_problems(spec)
    if offerings is not None and spec.node_manager_config.provisioning_mode in CATALOG_MODES:
        problems += _offering_problems(spec, offerings, where)
    return problems
