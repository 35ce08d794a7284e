"""What the simulated kubelet sees of the sandbox ECS: its managed instances as `SimInstance`s.

Role: `ecs_instances(state)` lists the instances of an `EcsState` tagged
`managed-by=tensor-fusion.ai` in the terms `gpupool.simulation.cluster.instance_nodes` reads
(state in EC2's words, `ECS_TO_EC2_STATES`; claim tag, type, zone, a private DNS name), so the
same simulated kubelet joins nodes for ECS instances as for EC2 ones.

Must not: be imported by code that runs in the cloud, or change the ECS state.
"""

from __future__ import annotations

from gpupool.core.model.constants import TAG_MANAGED_BY, TAG_MANAGED_BY_VALUE, TAG_NODE_NAME
from gpupool.sandbox.ecs_state import EcsState
from gpupool.simulation.cluster.instance_nodes import SimInstance

__all__ = ["ECS_TO_EC2_STATES", "ecs_instances"]

ECS_TO_EC2_STATES = {"Pending": "pending", "Starting": "pending", "Running": "running", "Stopped": "stopped"}


def ecs_instances(state: EcsState) -> list[SimInstance]:
    """Every live managed instance of `state`, sorted by id (deleted ones are gone, as on ECS)."""
    now = state.now()
    found = [
        SimInstance(
            instance_id=instance.instance_id,
            state=ECS_TO_EC2_STATES[instance.status(now, state.pending_for, state.starting_for)],
            claim_name=instance.tags.get(TAG_NODE_NAME),
            instance_type=str(instance.params.get("InstanceType") or ""),
            zone=instance.zone,
            region=state.region,
            private_dns=f"{state.region}.{instance.instance_id}",
        )
        for instance in state.live()
        if instance.tags.get(TAG_MANAGED_BY) == TAG_MANAGED_BY_VALUE
    ]
    return sorted(found, key=lambda item: item.instance_id)
