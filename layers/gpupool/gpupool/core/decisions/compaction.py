"""plan_compaction: remove idle nodes the pool does not need, never below warm or min.

Role: DESIGN §3. A node is a candidate when its GPUNode reports capacity and none of it allocated
(`gpus_in_use`), it runs no TensorFusion pods, it is older than the protection window (5 min), and
neither the node nor its GPUNode says `tensor-fusion.ai/do-not-disrupt=true`. A node whose pods the
snapshot does not hold (`PoolSnapshot.pods_known`) is taken as running none: the service reads the
pods of each node this plans to remove and plans again until every removal is on a node whose pods
it read (`unconfirmed_removals`); a candidate kept for warm/min takes nothing away, so the removals
are those a snapshot holding every node's pods gives. Candidates are removed one at a time while,
after removal, available ≥ warm and total ≥ min in TFLOPS and VRAM (subtracting as it goes).
Provisioned/Karpenter: delete the claim (its finalizer terminates the instance); AutoSelect: label
the node `tensor-fusion.ai/should-delete=true` and leave it to Karpenter's consolidation. So that
Karpenter never removes an AutoSelect node gpupool still needs and always may remove one it does
not, an idle node Karpenter owns (label `karpenter.sh/nodepool`) that warm/min or the protection
window keeps gets `karpenter.sh/do-not-disrupt: "true"` (with gpupool's marker
`gpupool.io/do-not-disrupt-for`, saying why), and a node marked should-delete loses the
do-not-disrupt gpupool set (never one a person set: no marker, left alone — and such a node is no
candidate anyway). Skipped while claims are in flight. Also
`compaction_due`: the pool's nodeCompaction.period and manual-compaction annotation.

Must not: perform I/O or read the clock; the service re-validates right before deleting by
calling this again on a fresh snapshot.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from gpupool.core.model.base import duration_seconds
from gpupool.core.model.claim_state import claim_counts, claim_phase, do_not_disrupt, node_claim
from gpupool.core.model.constants import (
    ANNOTATION_KARPENTER_DO_NOT_DISRUPT,
    ANNOTATION_MANUAL_COMPACTION,
    EVENT_COMPACTION,
    LABEL_SHOULD_DELETE,
)
from gpupool.core.model.foreign import Node
from gpupool.core.model.pool import ResourceAmount
from gpupool.core.planning.plan import Action, DeleteClaim, LabelNode, Plan, RecordEvent
from gpupool.core.planning.snapshot import PoolSnapshot, gpus_in_use
from gpupool.core.quantity import Quantity, sum_quantities

__all__ = [
    "compaction_due",
    "compaction_period",
    "consolidation_enabled",
    "plan_compaction",
    "released_guard",
    "unconfirmed_removals",
]

ZERO = Quantity(0)
LABEL_NODEPOOL = "karpenter.sh/nodepool"  # Karpenter's label on the nodes it owns
# gpupool's marker beside the karpenter.sh/do-not-disrupt it sets: why ("protection", "warm-min").
ANNOTATION_GUARDED_FOR = "gpupool.io/do-not-disrupt-for"


def consolidation_enabled(snapshot: PoolSnapshot) -> bool:
    """Whether the pool opted into consolidation (`nodeCompaction.policy: WhenUnderutilized`,
    `core.decisions.consolidation`); answered here so a WhenEmpty run never imports the allocator."""
    config = snapshot.pool.spec.node_manager_config.node_compaction
    return config is not None and config.policy == "WhenUnderutilized"


def compaction_period(snapshot: PoolSnapshot) -> timedelta:
    """nodeCompaction.period (default 5m; a zero period means 1m, like TensorFusion). An unreadable
    period never gets here: the pool model rejects it (`Duration`), and so does this parse."""
    config = snapshot.pool.spec.node_manager_config.node_compaction
    seconds = duration_seconds(config.period if config else "5m")
    return timedelta(seconds=seconds) if seconds > 0 else timedelta(minutes=1)


def _parse_time(text: str | None) -> datetime | None:
    if not text:
        return None
    try:
        value = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return None
    return value if value.tzinfo else None


def compaction_due(snapshot: PoolSnapshot, *, now: datetime, manual: bool) -> tuple[bool, str]:
    """Whether compaction should run now, and why (period elapsed, manual request, or not yet)."""
    status = snapshot.pool.status
    last = status.last_compaction_time if status else None
    requested = _parse_time(snapshot.pool.metadata.annotations.get(ANNOTATION_MANUAL_COMPACTION))
    if manual:
        return True, "manual compaction requested"
    if requested is not None and (last is None or requested > last):
        return True, f"manual-compaction annotation {requested.isoformat()} is newer than the last run"
    period = compaction_period(snapshot)
    if last is None or now - last >= period:
        return True, f"nodeCompaction.period {period} elapsed"
    return False, f"last compaction {last.isoformat()} is within nodeCompaction.period {period}"


def _need(resource: ResourceAmount | None, dim: str) -> Quantity:
    value = getattr(resource, dim, None) if resource else None
    return value if isinstance(value, Quantity) else ZERO


def _guard(pool: str, node: Node, why: str) -> LabelNode | None:
    """`karpenter.sh/do-not-disrupt` on a Karpenter node gpupool needs (None: Karpenter does not
    own it, or it has it — set by someone else, or by gpupool for this same reason; gpupool's
    marker is brought up to date when the reason changed, e.g. protection → warm-min)."""
    notes = node.metadata.annotations
    if LABEL_NODEPOOL not in node.metadata.labels:
        return None
    if (
        notes.get(ANNOTATION_KARPENTER_DO_NOT_DISRUPT) == "true"
        and notes.get(ANNOTATION_GUARDED_FOR, why) == why
    ):
        return None
    wanted: dict[str, str | None] = {ANNOTATION_KARPENTER_DO_NOT_DISRUPT: "true", ANNOTATION_GUARDED_FOR: why}
    return LabelNode(pool=pool, node=node.name, labels={}, annotations=wanted)


def released_guard(node: Node) -> dict[str, str | None]:
    """The annotations to drop from a node gpupool no longer needs: only the do-not-disrupt it set."""
    if ANNOTATION_GUARDED_FOR not in node.metadata.annotations:
        return {}
    return {ANNOTATION_KARPENTER_DO_NOT_DISRUPT: None, ANNOTATION_GUARDED_FOR: None}


def _guarded_by_someone(node: Node) -> bool:
    notes = node.metadata.annotations
    return notes.get(ANNOTATION_KARPENTER_DO_NOT_DISRUPT) == "true" and ANNOTATION_GUARDED_FOR not in notes


def _candidates(
    snapshot: PoolSnapshot, live_claims: set[str], now: datetime, protection: timedelta, guards: list[Action]
) -> tuple[list[Node], list[str]]:
    chosen: list[Node] = []
    skipped: list[str] = []
    autoselect = snapshot.pool.spec.node_manager_config.provisioning_mode == "AutoSelect"
    gpu_nodes = snapshot.gpu_nodes_by_name()
    for node in sorted(snapshot.nodes, key=lambda n: n.name):
        name = node.name
        named = gpu_nodes.get(name)
        gpu_node = named[0] if named else None
        owner = node_claim(node)
        created = node.metadata.creation_timestamp
        status = gpu_node.status if gpu_node is not None else None
        if status is None or status.total_tflops is None:
            skipped.append(f"node {name}: GPU capacity not reported yet")
        elif owner is not None and owner not in live_claims:
            skipped.append(f"node {name}: its claim is already going away")
        elif node.metadata.labels.get(LABEL_SHOULD_DELETE) == "true":
            skipped.append(f"node {name}: already marked should-delete")
        elif gpus_in_use(gpu_node):
            skipped.append(f"node {name}: its GPUNode reports GPU capacity allocated")
        elif snapshot.workers_on(name):
            skipped.append(f"node {name}: runs TensorFusion pods")
        elif created is None or now - created < protection:
            skipped.append(f"node {name}: younger than the {protection} protection window")
            guard = _guard(snapshot.name, node, "protection") if autoselect else None
            if guard is not None and not do_not_disrupt(node, gpu_node):
                guards.append(guard)
        elif do_not_disrupt(node, gpu_node):
            skipped.append(f"node {name}: do-not-disrupt")
        elif autoselect and _guarded_by_someone(node):
            skipped.append(
                f"node {name}: karpenter.sh/do-not-disrupt, not set by gpupool: Karpenter keeps it"
            )
        else:
            chosen.append(node)
    return chosen, skipped


def plan_compaction(snapshot: PoolSnapshot, *, now: datetime, protection: timedelta) -> Plan:
    """Which idle nodes to remove (see module docstring)."""
    pool = snapshot.pool
    # Whether each claim counts, asked once per claim (a pool's thousands, three uses below):
    # `live` names a claim that counts; `first_counts` answers for the first claim of a name, as
    # `PoolSnapshot.claim` does.
    live: set[str] = set()
    first_counts: dict[str, bool] = {}
    in_flight = []
    for claim in snapshot.claims:
        name, counting = claim.name, claim_counts(claim)
        first_counts.setdefault(name, counting)
        if counting:
            live.add(name)
            if claim_phase(claim) in ("Pending", "Creating"):
                in_flight.append(name)
    if in_flight:
        return Plan(reasons=(f"pool {pool.name}: {len(in_flight)} claim(s) in flight; compaction waits",))
    config = pool.spec.capacity_config
    warm = config.warm_resources if config else None
    minimum = config.min_resources if config else None
    mode = pool.spec.node_manager_config.provisioning_mode
    actions: list[Action] = []
    candidates, reasons = _candidates(snapshot, live, now, protection, actions)
    gpu_nodes = snapshot.gpu_nodes_by_name()
    counted = []
    for node in snapshot.nodes:
        named = gpu_nodes.get(node.name)
        status = named[0].status if named else None
        if status is None:
            continue
        owner = node_claim(node)
        if owner is not None and first_counts.get(owner) is False:
            continue
        counted.append(status)
    totals = {
        "tflops": sum_quantities(s.total_tflops or ZERO for s in counted),
        "vram": sum_quantities(s.total_vram or ZERO for s in counted),
    }
    available = {
        "tflops": sum_quantities(s.available_tflops or ZERO for s in counted),
        "vram": sum_quantities(s.available_vram or ZERO for s in counted),
    }
    for node in candidates:
        status = snapshot.gpu_node(node.name).status  # type: ignore[union-attr]
        assert status is not None
        after_total = {d: totals[d] - (getattr(status, f"total_{d}") or ZERO) for d in totals}
        after_avail = {d: available[d] - (getattr(status, f"available_{d}") or ZERO) for d in totals}
        short = [
            f"{what} {d} would drop to {after[d]} < {need}"
            for what, after, res in (("available", after_avail, warm), ("total", after_total, minimum))
            for d in totals
            if after[d] < (need := _need(res, d))
        ]
        if short:
            reasons.append(f"node {node.name}: kept, {'; '.join(short)}")
            guard = _guard(pool.name, node, "warm-min") if mode == "AutoSelect" else None
            if guard is not None:
                actions.append(guard)
            continue
        totals, available = after_total, after_avail
        owner = node_claim(node)
        message = f"node {node.name} is idle and not needed for warm/min capacity"
        if mode == "AutoSelect" or owner is None:
            actions.append(
                LabelNode(
                    pool=pool.name,
                    node=node.name,
                    labels={LABEL_SHOULD_DELETE: "true"},
                    annotations=released_guard(node),
                )
            )
        else:
            actions.append(DeleteClaim(pool=pool.name, claim=owner, node=node.name, reason="Compaction"))
        actions.append(
            RecordEvent(
                pool=pool.name,
                node=node.name,
                claim=owner,
                object_kind="GPUPool",
                object_name=pool.name,
                reason=EVENT_COMPACTION,
                message=message,
            )
        )
        reasons.append(f"node {node.name}: {message}: remove")
    return Plan(actions=tuple(actions), reasons=tuple(reasons))


def unconfirmed_removals(snapshot: PoolSnapshot, plan: Plan) -> tuple[str, ...]:
    """The nodes `plan` removes whose pods `snapshot` does not hold: read them, then plan again."""
    nodes = (a.targets().get("node") for a in plan.actions if isinstance(a, DeleteClaim | LabelNode))
    return tuple(n for n in nodes if n is not None and not snapshot.pods_known(n))
