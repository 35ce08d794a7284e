"""The hub's book of policy objects: GPUPools, SchedulingConfigTemplates, GPUResourceQuotas and
WorkloadProfiles, as last watched.

Role: `PolicyBook` keeps what the webhook's admission needs of these kinds — each pool's QoS
default, the pool TensorFusion marks as default, each namespace's quota and workload profiles —
and derives the placement mode of each pool from the template it names (`pool_modes`). The hub
owns one book, calls it under its lock, and pushes what the allocator needs (oversubscription,
pool modes, quota limits) into the allocator itself.

Must not: lock (its caller serialises access), touch the allocator, pods, GPUs or nodes, or call
the API server.
"""

from __future__ import annotations

from gpupool.core.allocator import PlacementMode
from gpupool.core.model import constants as c
from gpupool.core.model.pool import GPUPool
from gpupool.core.model.quota import GPUResourceQuota
from gpupool.core.model.scheduling import SchedulingConfigTemplate
from gpupool.core.model.workload import WorkloadProfile, WorkloadProfileSpec
from gpupool.scheduler.admission import PoolInfo

__all__ = ["DEFAULT_POOL_ANNOTATION", "PolicyBook"]

# TensorFusion marks its default pool with this annotation ("true").
DEFAULT_POOL_ANNOTATION = f"{c.DOMAIN}/is-default-pool"


class PolicyBook:
    """Pools, templates, quotas and profiles as last watched; callers serialise access."""

    def __init__(self) -> None:
        self.pools: dict[str, PoolInfo] = {}
        self.default_pool_marked: str | None = None
        self.quotas: dict[str, GPUResourceQuota] = {}
        self.template_modes: dict[str, PlacementMode] = {}
        self.pool_templates: dict[str, str] = {}
        # WorkloadProfiles by namespace, then name: the webhook resolves a pod's profile here.
        self.profiles: dict[str, dict[str, WorkloadProfileSpec]] = {}

    def apply_pool(self, pool: GPUPool, *, deleted: bool = False) -> None:
        name = pool.metadata.name or ""
        if deleted:
            self.pools.pop(name, None)
            return
        if pool.spec.scheduling_config_template:
            self.pool_templates[name] = pool.spec.scheduling_config_template
        else:
            self.pool_templates.pop(name, None)
        qos = pool.spec.qos_config.default_qos if pool.spec.qos_config else None
        self.pools[name] = PoolInfo(name, default_qos=qos)
        if pool.metadata.annotations.get(DEFAULT_POOL_ANNOTATION) == "true":
            self.default_pool_marked = name

    def apply_template(self, template: SchedulingConfigTemplate, *, deleted: bool = False) -> None:
        """A SchedulingConfigTemplate: its placement mode applies to the pools that name it."""
        name = template.metadata.name or ""
        if deleted:
            self.template_modes.pop(name, None)
        else:
            self.template_modes[name] = PlacementMode(template.spec.placement.mode)

    def pool_modes(self) -> dict[str, PlacementMode]:
        """The placement mode of each pool whose template is known."""
        return {
            pool: self.template_modes[template]
            for pool, template in self.pool_templates.items()
            if template in self.template_modes
        }

    def apply_profile(self, profile: WorkloadProfile, *, deleted: bool = False) -> None:
        """A WorkloadProfile: pods of its namespace may name it (tensor-fusion.ai/workload-profile)."""
        namespace, name = profile.metadata.namespace or "default", profile.name
        if deleted:
            self.profiles.get(namespace, {}).pop(name, None)
        else:
            self.profiles.setdefault(namespace, {})[name] = profile.spec

    def apply_quota(self, quota: GPUResourceQuota, *, deleted: bool = False) -> None:
        namespace = quota.metadata.namespace or "default"
        if deleted:
            self.quotas.pop(namespace, None)
        else:
            self.quotas[namespace] = quota

    def profiles_in(self, namespace: str) -> dict[str, WorkloadProfileSpec]:
        return dict(self.profiles.get(namespace, {}))
