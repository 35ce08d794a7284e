"""The karpenter.sh/v1 NodeClaim a Karpenter-mode GPUNodeClaim asks Karpenter for, and back.

Role: `nodeclaim_template(pool)` — what a Karpenter-mode pool launches with (the `LaunchTemplate`
of its mode, in the shape of a Karpenter NodePool's template): the pool's karpenterNodeClassRef,
gpuNodeLabels, gpuNodeAnnotations with `karpenter.sh/do-not-disrupt`, gpuTaints (an empty
value omitted, as Karpenter's CRD wants) and its
gpuRequirements other than the placement keys (the values of AWS's GPU name and manufacturer
keys in lower kebab case, as Karpenter's AWS provider labels them: `T4` → `t4`), and
`expireAfter: Never` — the CRD defaults it to 720h and Karpenter deletes an expired NodeClaim
whatever `do-not-disrupt` says — unless the pool's annotation `gpupool.io/karpenter-expire-after`
asks for a duration; `terminationGracePeriod` from `gpupool.io/karpenter-termination-grace-period`
(durations normalised to Karpenter's form by `karpenter_duration`, `1.5h` → `1h30m`).
`template_problems(template)` is what Karpenter's API server would refuse in the NodeClaims made
from it (`model.karpenter_rules`), so the launch decision refuses the pool before it writes
anything. `build_karpenter_nodeclaim(template, claim)` — the NodeClaim TensorFusion makes for a
claim from it (name = claim name, controller owner = the GPUNodeClaim, label
`tensor-fusion.ai/node-provisioner`, requirements in the order instance-type, zone, region,
capacity-type, then the template's, GPU request, termination grace period: the claim's
extraParams `karpenter.nodeClaim.terminationGracePeriod`, else the template's).
`nodeclaim_instance(nodeclaim)` — a NodeClaim as the claim lifecycle sees an instance (so bind,
timeouts, deletion and the orphan-free guarantees are the Provisioned ones; what was launched is
read from the labels Karpenter sets at launch, the requirements only before), and
`nodeclaim_instance_id` / `nodeclaim_name_of` for the `nodeclaim/<name>` ids the Karpenter
Compute gives out (recorded in `status.instanceID`).

Must not: perform I/O, read the clock, or decide when a NodeClaim is made (`plan_launch` does).
"""

from __future__ import annotations

import re
from decimal import Decimal, InvalidOperation

from gpupool.core.model.base import ObjectMeta, OwnerReference
from gpupool.core.model.capacity_type import CAPACITY_TYPES
from gpupool.core.model.capacity_type import karpenter_capacity_type as karpenter_spelling
from gpupool.core.model.constants import (
    ANNOTATION_KARPENTER_DO_NOT_DISRUPT,
    EXTRA_PARAM_KARPENTER_GPU_RESOURCE,
    EXTRA_PARAM_KARPENTER_TERMINATION_GRACE,
    KARPENTER_DEFAULT_GPU_RESOURCE,
    KEY_CAPACITY_TYPE,
    KEY_INSTANCE_TYPE,
    KEY_REGION,
    KEY_ZONE,
    LABEL_NODE_PROVISIONER,
)
from gpupool.core.model.foreign import NodeTaint, ResourceRequirements
from gpupool.core.model.instance import InstanceLifecycle, ManagedInstance
from gpupool.core.model.karpenter import (
    KarpenterNodeClaim,
    KarpenterNodeClaimSpec,
    KarpenterRequirement,
    NodeClaimTemplate,
    NodeClaimTemplateMetadata,
)
from gpupool.core.model.karpenter_rules import label_problems, spec_problems
from gpupool.core.model.nodeclaim import GPUNodeClaim
from gpupool.core.model.pool import GPUPool
from gpupool.core.quantity import Quantity

__all__ = [
    "ANNOTATION_KARPENTER_EXPIRE_AFTER",
    "ANNOTATION_KARPENTER_TERMINATION_GRACE_PERIOD",
    "CONDITION_INITIALIZED",
    "CONDITION_LAUNCHED",
    "CONDITION_REGISTERED",
    "NODECLAIM_ID_PREFIX",
    "KarpenterModeError",
    "build_karpenter_nodeclaim",
    "karpenter_capacity_type",
    "karpenter_duration",
    "nodeclaim_instance",
    "nodeclaim_instance_id",
    "nodeclaim_name_of",
    "nodeclaim_template",
    "owned_by",
    "placement_of",
    "template_problems",
]

# Karpenter v1 NodeClaim status conditions, in the order Karpenter sets them
# (karpenter.sh/docs/concepts/nodeclaims: Launched → Registered → Initialized).
CONDITION_LAUNCHED = "Launched"
CONDITION_REGISTERED = "Registered"
CONDITION_INITIALIZED = "Initialized"
NODECLAIM_ID_PREFIX = "nodeclaim/"
# gpupool's own pool annotations (TensorFusion's GPUPool has no field for them).
ANNOTATION_KARPENTER_EXPIRE_AFTER = "gpupool.io/karpenter-expire-after"
ANNOTATION_KARPENTER_TERMINATION_GRACE_PERIOD = "gpupool.io/karpenter-termination-grace-period"
EXPIRE_NEVER = "Never"
_PLACEMENT_KEYS = (KEY_INSTANCE_TYPE, KEY_ZONE, KEY_REGION, KEY_CAPACITY_TYPE)
# Karpenter's AWS provider labels these in lower kebab case (`lowerKabobCase`: "A10G" → "a10g").
_LOWER_KEBAB_KEYS = frozenset(
    f"karpenter.k8s.aws/{name}"
    for name in (
        "instance-gpu-name",
        "instance-gpu-manufacturer",
        "instance-accelerator-name",
        "instance-accelerator-manufacturer",
    )
)


class KarpenterModeError(ValueError):
    """A Karpenter-mode pool or claim lacks what a NodeClaim needs (the message says what)."""


_GO_DURATION_PART = re.compile(r"([0-9]*\.?[0-9]+)(ns|us|µs|ms|s|m|h)")
_UNIT_SECONDS = {
    "ns": Decimal("1e-9"),
    "us": Decimal("1e-6"),
    "µs": Decimal("1e-6"),
    "ms": Decimal("0.001"),
    "s": Decimal(1),
    "m": Decimal(60),
    "h": Decimal(3600),
}


def karpenter_duration(text: str | None) -> str | None:
    """A Go duration (`1.5h`, `90m`, `1h30m0s`) as Karpenter's CRD pattern
    `^(([0-9]+(s|m|h))+|Never)$` wants it (`1h30m`), as TensorFusion normalises it; `Never` and
    None pass; whole seconds only. A text that is no Go duration is returned unchanged, for the
    CRD rules (`model.karpenter_rules`) to refuse with their message."""
    if text is None or text == "Never":
        return text
    stripped = text.strip()
    parts = _GO_DURATION_PART.findall(stripped)
    if not stripped or "".join(n + u for n, u in parts) != stripped:
        return text
    try:
        seconds = sum((Decimal(n) * _UNIT_SECONDS[u] for n, u in parts), Decimal(0))
    except InvalidOperation:
        return text
    if seconds != seconds.to_integral_value():
        return text
    whole = int(seconds)
    hours, rest = divmod(whole, 3600)
    minutes, secs = divmod(rest, 60)
    spelled = "".join(f"{v}{u}" for v, u in ((hours, "h"), (minutes, "m"), (secs, "s")) if v)
    return spelled or "0s"


def karpenter_capacity_type(capacity_type: str) -> str:
    """TensorFusion's OnDemand / Spot / Reserved as Karpenter's on-demand / spot / reserved."""
    if capacity_type not in CAPACITY_TYPES:
        raise KarpenterModeError(f"capacity type {capacity_type!r} is not OnDemand, Spot or Reserved")
    return karpenter_spelling(capacity_type)


def nodeclaim_instance_id(name: str) -> str:
    """The id a Karpenter-mode claim records in status.instanceID for its NodeClaim."""
    return f"{NODECLAIM_ID_PREFIX}{name}"


def nodeclaim_name_of(instance_id: str) -> str | None:
    """The NodeClaim name behind an id from `nodeclaim_instance_id`; None for a cloud instance id."""
    if instance_id.startswith(NODECLAIM_ID_PREFIX) and len(instance_id) > len(NODECLAIM_ID_PREFIX):
        return instance_id[len(NODECLAIM_ID_PREFIX) :]
    return None


def _placement(claim: GPUNodeClaim) -> list[KarpenterRequirement]:
    spec = claim.spec
    placement = [
        (KEY_INSTANCE_TYPE, spec.instance_type),
        (KEY_ZONE, spec.zone),
        (KEY_REGION, spec.region),
        (KEY_CAPACITY_TYPE, karpenter_capacity_type(spec.capacity_type) if spec.capacity_type else None),
    ]
    return [KarpenterRequirement(key=key, operator="In", values=[value]) for key, value in placement if value]


def nodeclaim_template(pool: GPUPool) -> NodeClaimTemplate:
    """What Karpenter-mode `pool` launches its nodes with (see module docstring).
    Raises KarpenterModeError when the pool names no karpenterNodeClassRef."""
    provisioner = pool.spec.node_manager_config.node_provisioner
    ref = provisioner.karpenter_node_class_ref if provisioner else None
    if provisioner is None or ref is None:
        raise KarpenterModeError(
            f"pool {pool.name}: Karpenter mode needs nodeProvisioner.karpenterNodeClassRef"
        )
    requirements = [
        KarpenterRequirement(key=r.key, operator=r.operator, values=_karpenter_values(r.key, r.values))
        for r in provisioner.gpu_requirements
        if r.key not in _PLACEMENT_KEYS  # each claim narrows these to its chosen offering
    ]
    annotations = pool.metadata.annotations
    return NodeClaimTemplate(
        metadata=NodeClaimTemplateMetadata(
            labels=dict(provisioner.gpu_node_labels),
            annotations={**provisioner.gpu_node_annotations, ANNOTATION_KARPENTER_DO_NOT_DISRUPT: "true"},
        ),
        spec=KarpenterNodeClaimSpec(
            node_class_ref=ref.reference(),
            requirements=requirements,
            # an empty value is no value: Karpenter's CRD refuses `value: ""` (TensorFusion omits it)
            taints=[
                NodeTaint(key=t.key, value=t.value or None, effect=t.effect) for t in provisioner.gpu_taints
            ],
            expire_after=karpenter_duration(annotations.get(ANNOTATION_KARPENTER_EXPIRE_AFTER, EXPIRE_NEVER)),
            termination_grace_period=karpenter_duration(
                annotations.get(ANNOTATION_KARPENTER_TERMINATION_GRACE_PERIOD) or None
            ),
        ),
    )


def _karpenter_values(key: str, values: list[str]) -> list[str]:
    """`values` as Karpenter's labels spell them for `key` (AWS GPU names in lower kebab case)."""
    if key in _LOWER_KEBAB_KEYS:
        return [v.replace(" ", "-").lower() for v in values]
    return list(values)


def template_problems(template: NodeClaimTemplate) -> list[str]:
    """What Karpenter's API server would refuse in every NodeClaim made from `template`."""
    return label_problems(template.metadata.labels, "gpuNodeLabels") + spec_problems(template.spec)


def owned_by(nodeclaim: KarpenterNodeClaim, claim: GPUNodeClaim) -> KarpenterNodeClaim:
    """`nodeclaim` with the GPUNodeClaim as its controller owner (needs the stored claim's uid)."""
    if not claim.metadata.uid:
        raise KarpenterModeError(f"GPUNodeClaim {claim.name} has no uid yet: it must be stored first")
    owner = OwnerReference.controlled_by(
        api_version=claim.api_version, kind=claim.KIND, name=claim.name, uid=claim.metadata.uid
    )
    meta = nodeclaim.metadata.model_copy(update={"owner_references": [owner]})
    return nodeclaim.model_copy(update={"metadata": meta})


def build_karpenter_nodeclaim(template: NodeClaimTemplate, claim: GPUNodeClaim) -> KarpenterNodeClaim:
    """The NodeClaim for `claim` made from its pool's `template` (see module docstring); the
    controller owner is added when the claim has a uid. Raises KarpenterModeError when the template
    names no node class or the claim's capacity type has no Karpenter spelling."""
    if template.spec.node_class_ref is None:
        raise KarpenterModeError(f"claim {claim.name}: its NodeClaim template names no nodeClassRef")
    params = claim.spec.extra_params
    resource = params.get(EXTRA_PARAM_KARPENTER_GPU_RESOURCE) or KARPENTER_DEFAULT_GPU_RESOURCE
    spec = template.spec.model_copy(
        update={
            "requirements": [*_placement(claim), *template.spec.requirements],
            "resources": ResourceRequirements(requests={resource: Quantity(claim.spec.gpu_device_offered)}),
            "termination_grace_period": karpenter_duration(
                params.get(EXTRA_PARAM_KARPENTER_TERMINATION_GRACE) or template.spec.termination_grace_period
            ),
        }
    )
    labels = {**template.metadata.labels, LABEL_NODE_PROVISIONER: claim.name}
    meta = ObjectMeta(name=claim.name, labels=labels, annotations=dict(template.metadata.annotations))
    nodeclaim = KarpenterNodeClaim(metadata=meta, spec=spec)
    return owned_by(nodeclaim, claim) if claim.metadata.uid else nodeclaim


def _condition(nodeclaim: KarpenterNodeClaim, kind: str) -> str | None:
    return next((c.status for c in nodeclaim.status.conditions if c.type == kind), None)


def placement_of(nodeclaim: KarpenterNodeClaim) -> dict[str, str]:
    """What a NodeClaim launched (or will): instance type, zone, region and capacity type from the
    labels Karpenter sets at launch (`PopulateNodeClaimDetails`), else each key's first `In`
    value (a claim's NodeClaim pins one; a NodeClaim Karpenter made lists every compatible type)."""
    pinned = {r.key: r.values[0] for r in nodeclaim.spec.requirements if r.operator == "In" and r.values}
    labels = nodeclaim.metadata.labels
    return {k: v for k in _PLACEMENT_KEYS if (v := labels.get(k) or pinned.get(k))}


def nodeclaim_instance(nodeclaim: KarpenterNodeClaim) -> ManagedInstance:
    """The NodeClaim as an instance of its GPUNodeClaim: pending until Launched, running once
    Launched, shutting down while it is being deleted (Karpenter v1 deletes a NodeClaim it cannot
    launch for capacity or a node class not ready, and one it was told is interrupted), terminated
    on Launched=False (v1 never writes it; read as a failure all the same). `cluster` stays
    unset, so the cloud orphan sweep never touches NodeClaims (their owner reference lets
    Kubernetes' garbage collector remove them with the claim)."""
    launched = _condition(nodeclaim, CONDITION_LAUNCHED)
    state: InstanceLifecycle
    if nodeclaim.metadata.deletion_timestamp is not None:
        state = "shutting-down"
    elif launched == "False":
        state = "terminated"
    elif launched == "True":
        state = "running"
    else:
        state = "pending"
    requirements = placement_of(nodeclaim)
    return ManagedInstance(
        instance_id=nodeclaim_instance_id(nodeclaim.name),
        state=state,
        claim_name=nodeclaim.metadata.labels.get(LABEL_NODE_PROVISIONER),
        instance_type=requirements.get(KEY_INSTANCE_TYPE),
        zone=requirements.get(KEY_ZONE),
        capacity_type=requirements.get(KEY_CAPACITY_TYPE),
        launch_time=nodeclaim.metadata.creation_timestamp,
        tags={"providerID": nodeclaim.status.provider_id or "", "nodeName": nodeclaim.status.node_name or ""},
    )
