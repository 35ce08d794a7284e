"""How pool-level actions and events are applied through the Cluster port (used by `dispatch`).

Role: create or update a GPUPool (`ApplyPool`), remember an offering as out of capacity in the
pool's annotation (`MarkOfferingUnavailable`), patch named status fields (`PatchPoolStatus`),
and record an event (best effort). Writes re-read the pool and carry its resourceVersion; a
Conflict re-reads and retries (`appliers.retry_conflicts`).

Must not: decide what to do, log, or check dry-run.
"""

from __future__ import annotations

from gpupool.core.model.pool import GPUPoolStatus
from gpupool.core.planning.plan import ApplyPool, MarkOfferingUnavailable, PatchPoolStatus, RecordEvent
from gpupool.core.planning.unavailable import (
    ANNOTATION_UNAVAILABLE_OFFERINGS,
    memory_text,
    remembering,
    unavailable_offerings,
)
from gpupool.service.appliers import Skip, read_version, retry_conflicts
from gpupool.service.deps import Deps
from gpupool.service.errors import AlreadyExists, DomainError
from gpupool.service.ports import Events, ObjectEvent, Pools

__all__ = ["apply_event", "apply_mark_offering_unavailable", "apply_patch_pool_status", "apply_pool"]


def apply_pool(pools: Pools, action: ApplyPool) -> str:
    if action.create:
        try:
            pools.create_pool(action.desired)
        except AlreadyExists as exists:
            raise Skip("pool already exists") from exists
        return "created"
    pools.replace_pool_spec(action.desired, resource_version=read_version(action.desired))
    return "spec updated"


def apply_mark_offering_unavailable(deps: Deps, action: MarkOfferingUnavailable) -> str:
    cluster = deps.cluster
    pool_name = action.pool

    def write() -> None:
        pool = cluster.get_pool(pool_name)
        memory = remembering(unavailable_offerings(pool, deps.clock.now()), action.offering_key, action.until)
        cluster.patch_pool_annotations(
            pool_name,
            {ANNOTATION_UNAVAILABLE_OFFERINGS: memory_text(memory)},
            resource_version=read_version(pool),
        )

    retry_conflicts(write)
    return f"{action.offering_key} unavailable until {action.until.isoformat()}"


def apply_patch_pool_status(pools: Pools, action: PatchPoolStatus) -> str:
    pool_name = action.pool

    def write() -> None:
        pool = pools.get_pool(pool_name)
        current = pool.status or GPUPoolStatus()
        changes = {f: getattr(action.status, f) for f in action.fields}
        pools.update_pool_status(
            pool_name,
            current.model_copy(update=changes),
            resource_version=read_version(pool),
        )

    retry_conflicts(write)
    return "status updated"


def apply_event(events: Events, action: RecordEvent) -> str:
    try:
        events.record_event(
            ObjectEvent(
                kind=action.object_kind,
                name=action.object_name,
                namespace=action.namespace,
                event_type=action.event_type,
                reason=action.reason,
                message=action.message,
            )
        )
    except DomainError as error:  # events are best effort: never fail the plan for one
        raise Skip(f"event not recorded: {error.message}") from error
    return f"{action.event_type} {action.reason}"
