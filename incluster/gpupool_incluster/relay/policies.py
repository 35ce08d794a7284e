"""The hub's policy objects: GPUPools, SchedulingConfigTemplates and GPUResourceQuotas.

Role: a base of `SchedulerHub` that applies these watched kinds — pool QoS defaults and the
default pool (for the webhook), oversubscription and placement modes (for the allocator),
namespace quotas (both) — under the hub's lock.

Must not: touch pods, GPUs or nodes (the hub does), or call the API server.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from typing import Any

from gpupool.core.admission import PoolInfo
from gpupool.core.allocator import Allocator, PlacementMode
from gpupool.core.allocator.build import oversubscription_of, quota_limits
from gpupool.core.model import constants as c
from gpupool.core.model.pool import GPUPool
from gpupool.core.model.quota import GPUResourceQuota
from gpupool.core.model.scheduling import SchedulingConfigTemplate
from gpupool.core.model.workload import WorkloadProfile, WorkloadProfileSpec

__all__ = ["DEFAULT_POOL_ANNOTATION", "PolicyObjects"]

# TensorFusion marks its default pool with this annotation ("true").
DEFAULT_POOL_ANNOTATION = f"{c.DOMAIN}/is-default-pool"


class PolicyObjects:
    """Pools, templates and quotas as the hub knows them; subclasses provide `lock` and `allocator`."""

    lock: threading.RLock
    allocator: Allocator

    def __init__(self) -> None:
        self.pools: dict[str, PoolInfo] = {}
        self.default_pool_marked: str | None = None
        self.quotas: dict[str, GPUResourceQuota] = {}
        self.template_modes: dict[str, PlacementMode] = {}
        self.pool_templates: dict[str, str] = {}
        # WorkloadProfiles by namespace, then name: the webhook resolves a pod's profile here.
        self.profiles: dict[str, dict[str, WorkloadProfileSpec]] = {}

    def apply_pool(self, raw: Mapping[str, Any], *, deleted: bool = False) -> None:
        pool = GPUPool.model_validate(raw)
        name = pool.metadata.name or ""
        with self.lock:
            if deleted:
                self.pools.pop(name, None)
                self.allocator.state.set_oversubscription(name, None)
                return
            if pool.spec.scheduling_config_template:
                self.pool_templates[name] = pool.spec.scheduling_config_template
            else:
                self.pool_templates.pop(name, None)
            self._refresh_pool_modes()
            qos = pool.spec.qos_config.default_qos if pool.spec.qos_config else None
            self.pools[name] = PoolInfo(name, default_qos=qos)
            if pool.metadata.annotations.get(DEFAULT_POOL_ANNOTATION) == "true":
                self.default_pool_marked = name
            self.allocator.state.set_oversubscription(name, oversubscription_of(pool))

    def apply_template(self, raw: Mapping[str, Any], *, deleted: bool = False) -> None:
        """A SchedulingConfigTemplate: its placement mode applies to the pools that name it."""
        template = SchedulingConfigTemplate.model_validate(raw)
        name = template.metadata.name or ""
        with self.lock:
            if deleted:
                self.template_modes.pop(name, None)
            else:
                self.template_modes[name] = PlacementMode(template.spec.placement.mode)
            self._refresh_pool_modes()

    def _refresh_pool_modes(self) -> None:
        self.allocator.pool_modes = {
            pool: self.template_modes[template]
            for pool, template in self.pool_templates.items()
            if template in self.template_modes
        }

    def apply_profile(self, raw: Mapping[str, Any], *, deleted: bool = False) -> None:
        """A WorkloadProfile: pods of its namespace may name it (tensor-fusion.ai/workload-profile)."""
        profile = WorkloadProfile.model_validate(raw)
        namespace, name = profile.metadata.namespace or "default", profile.name
        with self.lock:
            if deleted:
                self.profiles.get(namespace, {}).pop(name, None)
            else:
                self.profiles.setdefault(namespace, {})[name] = profile.spec

    def apply_quota(self, raw: Mapping[str, Any], *, deleted: bool = False) -> None:
        quota = GPUResourceQuota.model_validate(raw)
        namespace = quota.metadata.namespace or "default"
        with self.lock:
            if deleted:
                self.quotas.pop(namespace, None)
                self.allocator.set_quota(namespace, None)
            else:
                self.quotas[namespace] = quota
                self.allocator.set_quota(namespace, quota_limits(quota))
