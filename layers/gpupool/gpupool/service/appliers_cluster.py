"""How a `SetClusterCondition` action is applied (used only by the executor, through `dispatch`).

Role: re-read the TensorFusionCluster, replace the condition of the action's type in its status,
write it through the status subresource with the read resourceVersion, retrying conflicts.

Must not: decide the condition (`core.decisions.connection` does), log, or check dry-run.
"""

from __future__ import annotations

from gpupool.core.model.cluster import TensorFusionClusterStatus
from gpupool.core.planning.plan import SetClusterCondition
from gpupool.service.appliers import Skip, read_version, retry_conflicts
from gpupool.service.ports import TensorFusionClusters

__all__ = ["apply_set_cluster_condition"]


def apply_set_cluster_condition(clusters: TensorFusionClusters, action: SetClusterCondition) -> str:

    def write() -> None:
        current = next((c for c in clusters.list_clusters() if c.name == action.cluster_name), None)
        if current is None:
            raise Skip(f"TensorFusionCluster {action.cluster_name} is gone")
        status = current.status or TensorFusionClusterStatus()
        kept = [c for c in status.conditions if c.type != action.condition.type]
        updated = status.model_copy(update={"conditions": [*kept, action.condition]})
        clusters.update_cluster_status(current.name, updated, resource_version=read_version(current))

    retry_conflicts(write)
    return f"{action.condition.type}={action.condition.status}"
