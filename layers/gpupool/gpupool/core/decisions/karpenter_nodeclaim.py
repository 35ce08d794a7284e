"""The karpenter.sh/v1 NodeClaim a Karpenter-mode GPUNodeClaim asks Karpenter for, and back.

Role: `build_karpenter_nodeclaim(pool, claim)` — the fields TensorFusion sets (name = claim
name, controller owner = the GPUNodeClaim, label `tensor-fusion.ai/node-provisioner`,
requirements in the order instance-type, zone, region, capacity-type, then the pool's other
gpuRequirements, GPU request, termination grace period, `karpenter.sh/do-not-disrupt`, the
pool's gpuNodeLabels / gpuTaints / gpuNodeAnnotations). `nodeclaim_instance(nodeclaim)` — a
NodeClaim as the claim lifecycle sees an instance (so bind, timeouts, deletion and the
orphan-free guarantees are the Provisioned ones), and `nodeclaim_instance_id` / `nodeclaim_name_of`
for the `nodeclaim/<name>` ids recorded in `status.instanceID`.

Must not: perform I/O, read the clock, or decide when a NodeClaim is made (`plan_launch` does).
"""

from __future__ import annotations

from gpupool.core.model.base import ObjectMeta, OwnerReference
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
from gpupool.core.model.karpenter import (
    KarpenterNodeClaim,
    KarpenterNodeClaimSpec,
    KarpenterNodeClassRef,
    KarpenterRequirement,
)
from gpupool.core.model.nodeclaim import GPUNodeClaim
from gpupool.core.model.pool import GPUPool
from gpupool.core.planning.snapshot import InstanceLifecycle, ManagedInstance
from gpupool.core.quantity import Quantity

__all__ = [
    "CONDITION_INITIALIZED",
    "CONDITION_LAUNCHED",
    "CONDITION_REGISTERED",
    "NODECLAIM_ID_PREFIX",
    "KarpenterModeError",
    "build_karpenter_nodeclaim",
    "karpenter_capacity_type",
    "nodeclaim_instance",
    "nodeclaim_instance_id",
    "nodeclaim_name_of",
    "owned_by",
]

# Karpenter v1 NodeClaim status conditions, in the order Karpenter sets them
# (karpenter.sh/docs/concepts/nodeclaims: Launched → Registered → Initialized).
CONDITION_LAUNCHED = "Launched"
CONDITION_REGISTERED = "Registered"
CONDITION_INITIALIZED = "Initialized"
NODECLAIM_ID_PREFIX = "nodeclaim/"
_CAPACITY_TYPES = {"OnDemand": "on-demand", "Spot": "spot", "Reserved": "reserved"}
_PLACEMENT_KEYS = (KEY_INSTANCE_TYPE, KEY_ZONE, KEY_REGION, KEY_CAPACITY_TYPE)


class KarpenterModeError(ValueError):
    """A Karpenter-mode pool or claim lacks what a NodeClaim needs (the message says what)."""


def karpenter_capacity_type(capacity_type: str) -> str:
    """TensorFusion's OnDemand / Spot / Reserved as Karpenter's on-demand / spot / reserved."""
    try:
        return _CAPACITY_TYPES[capacity_type]
    except KeyError:
        raise KarpenterModeError(
            f"capacity type {capacity_type!r} is not OnDemand, Spot or Reserved"
        ) from None


def nodeclaim_instance_id(name: str) -> str:
    """The id a Karpenter-mode claim records in status.instanceID for its NodeClaim."""
    return f"{NODECLAIM_ID_PREFIX}{name}"


def nodeclaim_name_of(instance_id: str) -> str | None:
    """The NodeClaim name behind an id from `nodeclaim_instance_id`; None for a cloud instance id."""
    if instance_id.startswith(NODECLAIM_ID_PREFIX) and len(instance_id) > len(NODECLAIM_ID_PREFIX):
        return instance_id[len(NODECLAIM_ID_PREFIX) :]
    return None


def _requirements(pool: GPUPool, claim: GPUNodeClaim) -> list[KarpenterRequirement]:
    spec = claim.spec
    placement = [
        (KEY_INSTANCE_TYPE, spec.instance_type),
        (KEY_ZONE, spec.zone),
        (KEY_REGION, spec.region),
        (KEY_CAPACITY_TYPE, karpenter_capacity_type(spec.capacity_type) if spec.capacity_type else None),
    ]
    requirements = [
        KarpenterRequirement(key=key, operator="In", values=[value]) for key, value in placement if value
    ]
    provisioner = pool.spec.node_manager_config.node_provisioner
    for requirement in provisioner.gpu_requirements if provisioner else []:
        if requirement.key in _PLACEMENT_KEYS:
            continue  # the claim already narrowed it to the chosen offering
        requirements.append(
            KarpenterRequirement(
                key=requirement.key, operator=requirement.operator, values=requirement.values
            )
        )
    return requirements


def owned_by(nodeclaim: KarpenterNodeClaim, claim: GPUNodeClaim) -> KarpenterNodeClaim:
    """`nodeclaim` with the GPUNodeClaim as its controller owner (needs the stored claim's uid)."""
    if not claim.metadata.uid:
        raise KarpenterModeError(f"GPUNodeClaim {claim.name} has no uid yet: it must be stored first")
    owner = OwnerReference(
        api_version=claim.api_version,
        kind=claim.KIND,
        name=claim.name,
        uid=claim.metadata.uid,
        controller=True,
        block_owner_deletion=True,
    )
    meta = nodeclaim.metadata.model_copy(update={"owner_references": [owner]})
    return nodeclaim.model_copy(update={"metadata": meta})


def build_karpenter_nodeclaim(pool: GPUPool, claim: GPUNodeClaim) -> KarpenterNodeClaim:
    """The NodeClaim for `claim` of Karpenter-mode `pool` (see module docstring); the controller
    owner is added when the claim has a uid. Raises KarpenterModeError on a missing class ref."""
    provisioner = pool.spec.node_manager_config.node_provisioner
    ref = provisioner.karpenter_node_class_ref if provisioner else None
    if ref is None:
        raise KarpenterModeError(
            f"pool {pool.name}: Karpenter mode needs nodeProvisioner.karpenterNodeClassRef"
        )
    params = claim.spec.extra_params
    resource = params.get(EXTRA_PARAM_KARPENTER_GPU_RESOURCE) or KARPENTER_DEFAULT_GPU_RESOURCE
    labels = {**(provisioner.gpu_node_labels if provisioner else {}), LABEL_NODE_PROVISIONER: claim.name}
    annotations = {
        **(provisioner.gpu_node_annotations if provisioner else {}),
        ANNOTATION_KARPENTER_DO_NOT_DISRUPT: "true",
    }
    taints = [
        NodeTaint(key=t.key, value=t.value, effect=t.effect)
        for t in (provisioner.gpu_taints if provisioner else [])
    ]
    nodeclaim = KarpenterNodeClaim(
        metadata=ObjectMeta(name=claim.name, labels=labels, annotations=annotations),
        spec=KarpenterNodeClaimSpec(
            node_class_ref=KarpenterNodeClassRef(group=ref.group, kind=ref.kind, name=ref.name),
            requirements=_requirements(pool, claim),
            resources=ResourceRequirements(requests={resource: Quantity(claim.spec.gpu_device_offered)}),
            taints=taints,
            termination_grace_period=params.get(EXTRA_PARAM_KARPENTER_TERMINATION_GRACE) or None,
        ),
    )
    return owned_by(nodeclaim, claim) if claim.metadata.uid else nodeclaim


def _condition(nodeclaim: KarpenterNodeClaim, kind: str) -> str | None:
    return next((c.status for c in nodeclaim.status.conditions if c.type == kind), None)


def nodeclaim_instance(nodeclaim: KarpenterNodeClaim) -> ManagedInstance:
    """The NodeClaim as an instance of its GPUNodeClaim: pending until Launched, running once
    Launched, terminated when Karpenter gave up launching (Launched=False) or is deleting it.
    `cluster` stays unset, so the cloud orphan sweep never touches NodeClaims (their owner
    reference lets Kubernetes' garbage collector remove them with the claim)."""
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
    requirements = {
        r.key: r.values[0] for r in nodeclaim.spec.requirements if r.operator == "In" and r.values
    }
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
