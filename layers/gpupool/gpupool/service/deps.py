"""What every service entry point is given: the ports, and the settings that shape decisions.

Role: `Settings` (cluster name, timeouts, limits — all with the DESIGN defaults) and `Deps`
(the cloud's compute, cluster, clock, settings, the offering catalog, Karpenter's API where the
deployment has one, and how fresh ids are made). `Deps.compute_for(mode)` is the `Compute` of a
provisioning mode — the cloud's for Provisioned, `KarpenterCompute` on Karpenter's API for
Karpenter — so a Provisioned pool and a Karpenter pool live side by side in one cluster.
Handlers build one `Deps` per cold start (`gpupool.adapters.aws.wiring.build_aws_deps`); tests
build one from fakes.

Must not: build clients or read the environment (wiring does), or hold state between calls.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import timedelta

from gpupool.core.decisions.launch_failure import OFFERING_UNAVAILABLE_FOR
from gpupool.core.model.claim_state import LAUNCHED_MODES, LaunchedMode
from gpupool.core.model.pool import CLAIM_SUFFIX_LENGTH
from gpupool.core.planning.plan import OfferingRef
from gpupool.service.deliveries import DeliveryLedger
from gpupool.service.errors import PermanentError
from gpupool.service.karpenter_compute import KarpenterCompute
from gpupool.service.karpenter_ports import KarpenterApi
from gpupool.service.ports import Clock, CloudProvider, Cluster, Compute

__all__ = ["Deps", "Settings", "random_suffix"]


def random_suffix() -> str:
    """Eight lowercase hex characters: enough to keep claim names unique within a pool (the
    pool name's limit, `model.pool.MAX_POOL_NAME`, leaves room for them)."""
    return uuid.uuid4().hex[:CLAIM_SUFFIX_LENGTH]


@dataclass(frozen=True, kw_only=True)
class Settings:
    """Policy knobs; defaults are DESIGN §6 (launch / registration timeouts as Karpenter's)."""

    cluster_name: str
    region: str | None = None
    launch_timeout: timedelta = timedelta(minutes=5)
    registration_timeout: timedelta = timedelta(minutes=15)
    offering_unavailable_for: timedelta = OFFERING_UNAVAILABLE_FOR
    orphan_grace: timedelta = timedelta(minutes=10)
    failed_claim_retention: timedelta = timedelta(minutes=10)
    new_node_protection: timedelta = timedelta(minutes=5)
    lease_duration: timedelta = timedelta(minutes=2)
    # How long an interruption's replacement waits for the pool's Lease another invocation holds.
    interruption_lease_wait: timedelta = timedelta(seconds=20)
    # How long one drain waits for its evicted pods to be gone before giving up for this run.
    drain_timeout: timedelta = timedelta(seconds=60)
    max_nodes_per_plan: int = 100
    max_launch_rounds: int = 8

    def __post_init__(self) -> None:
        if not self.cluster_name:
            raise ValueError("Settings.cluster_name must not be empty")
        if self.max_nodes_per_plan < 1 or self.max_launch_rounds < 1:
            raise ValueError("Settings.max_nodes_per_plan and max_launch_rounds must be at least 1")


@dataclass(frozen=True, kw_only=True)
class Deps:
    """The ports and settings one invocation works with.

    `compute` is the cloud's (Provisioned mode; `gpupool.adapters.<cloud>`); `karpenter` is
    Karpenter's API (Karpenter mode and AutoSelect), None where the deployment has no
    Kubernetes API for it. `offerings` are the priced offerings of the cluster's region
    (instance type × zone × capacity type): the catalog's, or live over it
    (`service.live_offerings.LiveOfferings`, read once per invocation by `handle_launch`);
    `new_suffix` makes claim-name suffixes (tests pass a deterministic one).
    `holder` names this invocation in pool Leases; `sleep` waits between polls (a drain waiting
    for its pods; tests pass one that advances their clock). `deliveries` records the relay
    deliveries acted on (`gpupool.service.deliveries`); the handlers refuse relay calls on deps
    without one, since a replay could not be told.
    """

    compute: CloudProvider
    cluster: Cluster
    clock: Clock
    settings: Settings
    offerings: Sequence[OfferingRef] = ()
    new_suffix: Callable[[], str] = random_suffix
    sleep: Callable[[float], None] = time.sleep
    holder: str = field(default_factory=lambda: f"gpupool-{uuid.uuid4().hex[:12]}")
    karpenter: KarpenterApi | None = None
    deliveries: DeliveryLedger | None = None

    def require_karpenter(self) -> KarpenterApi:
        """Karpenter's API, or PermanentError saying that this deployment has none."""
        if self.karpenter is None:
            raise PermanentError(
                "Karpenter mode needs Karpenter's API in the cluster; this deployment has none wired"
            )
        return self.karpenter

    def compute_for(self, mode: LaunchedMode) -> Compute:
        """The Compute that launches and follows the nodes of `mode`'s claims (the cloud's for
        Provisioned, Karpenter's NodeClaims for Karpenter). Raises PermanentError when the
        deployment has no Karpenter API and `mode` is Karpenter."""
        if mode == "Provisioned":
            return self.compute
        return KarpenterCompute(self.require_karpenter())

    def computes(self) -> dict[LaunchedMode, Compute]:
        """Every Compute this deployment has, by mode, Provisioned first (Karpenter's only where
        its API is wired)."""
        wired = [m for m in LAUNCHED_MODES if m == "Provisioned" or self.karpenter is not None]
        return {m: self.compute_for(m) for m in wired}
